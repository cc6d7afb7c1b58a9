/* job_access.c: a submitted job's data files, graph file and checkpoint
 * directory checked against the daemon's file-access policy, and its graph
 * file's ops against the op allowlist (job_access.h). The files are opened
 * later through the policy anyway; this refuses the job at submission with
 * the key that names the path, instead of failing it when it runs. */
#include "lib/runtime/job_access.h"

#include <stdio.h>

#include "tf/serialize.h"
#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"
#include "lib/runtime/op_allow.h"

static tf_code check_files(const tf_job_spec *s, const tf_job_files *f, const char *key,
                           tf_status *st) {
  for (int i = 0; i < f->n; i++) {
    char what[320];
    snprintf(what, sizeof what, "%s: %s[%d]", s->path, key, i);
    TF_TRY(tf__fs_check(f->paths[i], false, what, st));
  }
  return TF_OK;
}

/* The graph file's nodes against the op allowlist. */
static tf_code check_graph_ops(const tf_cluster_spec *cluster, const tf_job_spec *s,
                               tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_code c = tf_graph_load(g, s->graph.file, st);
  if (c != TF_OK) {
    tf_status_prefix(st, "%s: graph.file", s->path);
  } else {
    tf_op_allow a = {.spec = cluster, .partition = false};
    c = tf_op_allow_check_graph(&a, g, 0, st);
    if (c != TF_OK) tf_status_prefix(st, "%s: graph.file '%s'", s->path, s->graph.file);
  }
  tf_graph_free(g);
  return c;
}

tf_code tf__job_access_check(const tf_cluster_spec *cluster, const tf_job_spec *s,
                             tf_status *st) {
  const tf_job_input *in = &s->input;
  TF_TRY(check_files(s, &in->train_images, "input.train.images", st));
  TF_TRY(check_files(s, &in->train_labels, "input.train.labels", st));
  TF_TRY(check_files(s, &in->test_images, "input.test.images", st));
  TF_TRY(check_files(s, &in->test_labels, "input.test.labels", st));
  char what[320];
  if (!s->has_model && s->graph.file != NULL) {
    snprintf(what, sizeof what, "%s: graph.file", s->path);
    TF_TRY(tf__fs_check(s->graph.file, false, what, st));
    TF_TRY(check_graph_ops(cluster, s, st));
  }
  if (s->checkpoint && s->checkpoint_dir != NULL) {
    snprintf(what, sizeof what, "%s: checkpoint.dir", s->path);
    TF_TRY(tf__fs_check(s->checkpoint_dir, true, what, st));
  }
  return TF_OK;
}
