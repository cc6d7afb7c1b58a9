/* cluster_spec_confine.c: the cluster spec's data_dirs and ops keys, and
 * the file-access policy built from data_dirs and checkpoint_dir
 * (cluster_spec_confine.h). */
#include "lib/runtime/cluster_spec_confine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"

#define DATA_DIRS_MAX 64
#define OPS_ALLOW_MAX 4096
#define DIR_LEN_MAX 4095
#define OP_NAME_MAX 255

tf_code tf__cluster_parse_data_dirs(tf__spec *y, yaml_node_t *v, tf_cluster_spec *s) {
  int n;
  if (tf__spec_is_null(v)) {
    return TF_OK; /* nothing is the same as unset */
  }
  TF_TRY(tf__spec_seq(y, v, "data_dirs", 1, DATA_DIRS_MAX, true, &n));
  char **dirs = tf__xcalloc((size_t)n + 1, sizeof *dirs);
  for (int i = 0; i < n; i++) {
    const char *t;
    tf_code c = tf__spec_text(y, tf__spec_item(y, v, i), "data_dirs", "a directory",
                              DIR_LEN_MAX, &t);
    if (c != TF_OK) {
      for (int k = 0; k < i; k++) free(dirs[k]);
      free(dirs);
      return c;
    }
    dirs[i] = tf__xstrdup(t);
  }
  s->data_dirs = dirs;
  s->n_data_dirs = n;
  return TF_OK;
}

tf_code tf__cluster_parse_ops(tf__spec *y, yaml_node_t *v, tf_cluster_spec *s) {
  static const char *const keys[] = {"allow"};
  yaml_node_t *f[1];
  TF_TRY(tf__spec_fields(y, v, "ops", keys, 1, f));
  if (f[0] == NULL || tf__spec_is_null(f[0])) {
    return TF_OK;
  }
  int n;
  TF_TRY(tf__spec_seq(y, f[0], "ops.allow", 0, OPS_ALLOW_MAX, false, &n));
  char **names = tf__xcalloc((size_t)n + 1, sizeof *names);
  tf_code c = TF_OK;
  for (int i = 0; i < n && c == TF_OK; i++) {
    yaml_node_t *item = tf__spec_item(y, f[0], i);
    const char *t;
    c = tf__spec_text(y, item, "ops.allow", "an op name", OP_NAME_MAX, &t);
    if (c == TF_OK && tf_op_lookup(t) == NULL) {
      c = tf__spec_err(y, item, "ops.allow", "unknown op '%.80s' (no op of that name is "
                       "registered in this program)", t);
    }
    if (c == TF_OK) {
      names[i] = tf__xstrdup(t);
    }
  }
  if (c != TF_OK) {
    for (int k = 0; k < n; k++) free(names[k]);
    free(names);
    return c;
  }
  s->ops_allow = names;
  s->n_ops_allow = n;
  return TF_OK;
}

void tf__cluster_confine_free(tf_cluster_spec *s) {
  for (int i = 0; i < s->n_data_dirs; i++) free(s->data_dirs[i]);
  free(s->data_dirs);
  for (int i = 0; i < s->n_ops_allow; i++) free(s->ops_allow[i]);
  free(s->ops_allow);
  s->data_dirs = s->ops_allow = NULL;
  s->n_data_dirs = s->n_ops_allow = 0;
}

/* mkdir -p dir (0755); errors name checkpoint_dir. */
static tf_code make_dirs(const char *dir, tf_status *st) {
  char *p = tf__xstrdup(dir);
  tf_code c = TF_OK;
  for (char *s = p + 1;; s++) {
    bool end = *s == '\0';
    if (end || *s == '/') {
      *s = '\0';
      if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        c = tf_status_set(st, TF_FAILED_PRECONDITION, "checkpoint_dir '%s': cannot make "
                          "directory '%s' (%s)", dir, p, strerror(errno));
        break;
      }
      if (end) break;
      *s = '/';
    }
  }
  free(p);
  return c;
}

tf_code tf_cluster_fs_policy(const tf_cluster_spec *s, tf_fs_policy **out, tf_status *st) {
  *out = NULL;
  tf_fs_policy *p = tf__fs_policy_new("the cluster spec sets neither data_dirs nor "
                                      "checkpoint_dir, so requests may open no file");
  tf_code c = TF_OK;
  for (int i = 0; i < s->n_data_dirs && c == TF_OK; i++) {
    c = tf__fs_policy_add(p, s->data_dirs[i], "data_dirs", false, st);
  }
  if (c == TF_OK && s->checkpoint_dir != NULL) {
    c = make_dirs(s->checkpoint_dir, st);
    if (c == TF_OK) {
      c = tf__fs_policy_add(p, s->checkpoint_dir, "checkpoint_dir", true, st);
    }
  }
  if (c != TF_OK) {
    tf__fs_policy_free(p);
    tf_status_prefix(st, "%s", s->path);
    return c;
  }
  *out = p;
  return TF_OK;
}
