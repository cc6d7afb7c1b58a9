/* master_registry.c: the master's record of its jobs that have
 * checkpoints, so that a master started again resumes them (job_run.h):
 * <checkpoint_dir>/jobs/<id>.yaml holds the job's spec as submitted,
 * written atomically at submission and removed when the job ends for good
 * (done, failed, cancelled; not when suspended by a shutdown). Without a
 * cluster checkpoint_dir nothing is recorded. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/runtime/job_run.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"

#define REGISTRY_FILES_MAX 1024

static char *registry_dir(const tf_master *m) {
  const char *d = m->spec->checkpoint_dir;
  return d != NULL && d[0] ? tf__xasprintf("%s/jobs", d) : NULL;
}

static tf_code make_dirs(const char *path, tf_status *st) {
  char *p = tf__xstrdup(path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        tf_status_set(st, TF_UNAVAILABLE, "cannot make directory %s: %s", p,
                      strerror(errno));
        free(p);
        return st->code;
      }
      *s = c;
      if (c == '\0') {
        break;
      }
    }
  }
  free(p);
  return TF_OK;
}

void tf__ms_registry_add(tf_master *m, const char *id, const tf_job_spec *spec) {
  char *dir = registry_dir(m);
  if (dir == NULL || !spec->checkpoint) {
    free(dir);
    return;
  }
  tf_status st;
  tf_status_init(&st);
  char *path = tf__xasprintf("%s/%s.yaml", dir, id);
  if (make_dirs(dir, &st) != TF_OK ||
      tf_fs_write_atomic(path, spec->text, spec->text_len, &st) != TF_OK) {
    tf_log(LOG_WARNING, "job %s: not recorded for a restart of the master: %s",
           id, st.msg);
  }
  free(path);
  free(dir);
}

void tf__ms_registry_remove(tf_master *m, const char *id) {
  char *dir = registry_dir(m);
  if (dir == NULL) {
    return;
  }
  char *path = tf__xasprintf("%s/%s.yaml", dir, id);
  if (unlink(path) != 0 && errno != ENOENT) {
    tf_log(LOG_WARNING, "job %s: cannot remove %s: %s", id, path, strerror(errno));
  }
  free(path);
  free(dir);
}

/* "<name>-<seq>.yaml" -> id and seq; false for other names. */
static bool parse_name(const char *file, char *id, size_t n, uint64_t *seq) {
  size_t len = strlen(file);
  if (len < 6 || len - 5 >= n || strcmp(file + len - 5, ".yaml") != 0) {
    return false;
  }
  memcpy(id, file, len - 5);
  id[len - 5] = '\0';
  const char *dash = strrchr(id, '-');
  char *end = NULL;
  if (dash == NULL || dash[1] < '0' || dash[1] > '9') {
    return false;
  }
  *seq = strtoull(dash + 1, &end, 10);
  return *end == '\0';
}

void tf__ms_registry_reload(tf_master *m) {
  char *dir = registry_dir(m);
  DIR *d = dir ? opendir(dir) : NULL;
  if (d == NULL) {
    free(dir);
    return;
  }
  struct dirent *e;
  int seen = 0;
  while ((e = readdir(d)) != NULL && seen < REGISTRY_FILES_MAX) {
    char id[TF_JOB_ID_MAX + 1];
    uint64_t seq = 0;
    if (!parse_name(e->d_name, id, sizeof id, &seq)) {
      continue;
    }
    seen++;
    char *path = tf__xasprintf("%s/%s", dir, e->d_name);
    char *text = NULL;
    size_t len = 0;
    tf_status st;
    tf_status_init(&st);
    tf_job_spec *spec = NULL;
    if (tf__read_file(path, &text, &len, &st) == TF_OK &&
        tf_job_spec_parse(text, len, path, &spec, &st) == TF_OK &&
        tf__ms_start_job(m, spec, id, seq, id, sizeof id, &st) == TF_OK) {
      tf_log(LOG_NOTICE, "job %s: resumed from %s", id, path);
    } else {
      tf_log(LOG_ERR, "job %s: not resumed: %s", id, st.msg);
    }
    free(text);
    free(path);
  }
  closedir(d);
  free(dir);
}
