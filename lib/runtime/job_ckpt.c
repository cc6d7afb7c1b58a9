/* job_ckpt.c: a job's checkpoints (job_run.h, docs/checkpoint.md): saving
 * the variables through the graph's SaveV2 nodes (each task writes the
 * shard of the variables it holds) and committing the manifest and the
 * pointer; restoring through RestoreV2; the policy (every N steps or S
 * seconds, on request, at the end, on suspension). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/ckpt_dir.h"
#include "lib/runtime/job_run_impl.h"

#define CKPT_TIMEOUT_MS (10 * 60 * 1000)

static tf_code read_step(tf_job *j, tf_session *s, int64_t *step, tf_status *st) {
  tf_run_options ro = {.timeout_ms = j->rpc_timeout_ms};
  const char *fetch = j->jg->global_step;
  tf_tensor *out = NULL;
  TF_TRY(tf_session_run(s, &ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, NULL, st));
  *step = *(const int64_t *)out->data;
  tf_tensor_unref(out);
  return TF_OK;
}

/* Runs target feeding every shard's path under ckpt. */
static tf_code run_shards(tf_job *j, tf_session *s, const char *ckpt,
                          const char *target, tf_status *st) {
  const tf_job_graph *jg = j->jg;
  int n = jg->n_shards;
  tf_tensor **paths = tf__xcalloc((size_t)n + 1, sizeof *paths);
  tf_code code = TF_OK;
  for (int k = 0; k < n && code == TF_OK; k++) {
    char *p = tf__xasprintf("%s/%s", ckpt, jg->shard_files[k]);
    tf_shape sc = tf_shape_scalar();
    if ((code = tf_tensor_new(TF_STRING, &sc, &paths[k], st)) == TF_OK) {
      code = tf_tensor_set_string(paths[k], 0, p, strlen(p), st);
    }
    free(p);
  }
  tf_run_options ro = {.timeout_ms = CKPT_TIMEOUT_MS};
  if (code == TF_OK) {
    code = tf_session_run(s, &ro, (const char *const *)jg->shard_feeds, paths, n,
                          NULL, NULL, 0, &target, 1, NULL, st);
  }
  for (int k = 0; k < n; k++) {
    tf_tensor_unref(paths[k]);
  }
  free(paths);
  return code;
}

tf_code tf__job_save(tf_job *j, tf_session *s, char **path, tf_status *st) {
  const tf_job_spec *sp = j->spec;
  *path = NULL;
  if (!sp->checkpoint) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "job %s has no checkpoint "
                         "section (checkpoint.dir) in its spec", j->id);
  }
  int64_t step, t0 = tf__job_now_ns();
  TF_TRY(read_step(j, s, &step, st));
  pthread_mutex_lock(&j->mu);
  char *last = step == j->ckpt_step && j->ckpt_path ? tf__xstrdup(j->ckpt_path) : NULL;
  pthread_mutex_unlock(&j->mu);
  if (last != NULL) { /* nothing changed since (sync) */
    *path = last;
    return TF_OK;
  }
  char *ck = NULL;
  tf_code began = tf_ckpt_begin(sp->checkpoint_dir, step, &ck, st);
  if (began == TF_ALREADY_EXISTS) { /* a whole one of this step is there */
    free(ck);
    *path = tf__xasprintf("%s/ckpt-%lld", sp->checkpoint_dir, (long long)step);
    tf_status_init(st);
    return TF_OK;
  }
  TF_TRY(began);
  tf_ckpt_shard_ref *refs = tf__xcalloc((size_t)j->jg->n_shards + 1, sizeof *refs);
  for (int k = 0; k < j->jg->n_shards; k++) {
    refs[k].file = j->jg->shard_files[k];
  }
  tf_ckpt_manifest m = {.job = sp->name, .step = step, .spec_hash = (char *)sp->hash,
                        .mode = j->jg->sync ? "sync" : "async",
                        .n_shards = j->jg->n_shards, .shards = refs};
  tf_code code = run_shards(j, s, ck, j->jg->save, st);
  if (code == TF_OK) {
    code = tf_ckpt_commit(sp->checkpoint_dir, &m, sp->checkpoint_keep, st);
  }
  int64_t bytes = code == TF_OK ? tf_ckpt_bytes(&m) : 0;
  free(m.path); /* set by tf_ckpt_commit */
  free(refs);
  if (code != TF_OK) {
    free(ck);
    return tf_status_prefix(st, "checkpoint at step %lld", (long long)step);
  }
  tf__job_log(j, "checkpoint %s: step %lld, %lld bytes in %d shard(s), %.0f ms",
              ck, (long long)step, (long long)bytes, j->jg->n_shards,
              (double)(tf__job_now_ns() - t0) / 1e6);
  pthread_mutex_lock(&j->mu);
  free(j->ckpt_path);
  j->ckpt_path = tf__xstrdup(ck);
  j->ckpt_step = step;
  j->ckpt_ns = tf__job_now_ns();
  pthread_mutex_unlock(&j->mu);
  *path = ck;
  return TF_OK;
}

/* The manifest of ckpt ("": the latest good one, with a note when one
 * was skipped; a name without '/': one in the job's directory). */
static tf_code find(tf_job *j, const char *ckpt, tf_ckpt_manifest *m,
                    tf_status *st) {
  const char *dir = j->spec->checkpoint_dir;
  if (ckpt == NULL || ckpt[0] == '\0') {
    char *note = NULL;
    TF_TRY(tf_ckpt_latest(dir, m, &note, st));
    if (note != NULL) {
      tf__job_log(j, "%s", note);
      free(note);
    }
    return TF_OK;
  }
  char *p = strchr(ckpt, '/') ? tf__xstrdup(ckpt) : tf__xasprintf("%s/%s", dir, ckpt);
  tf_code code = tf_ckpt_verify(p, m, st);
  free(p);
  return code;
}

/* Whether m can be restored into this job's graph. */
static tf_code fits(tf_job *j, const tf_ckpt_manifest *m, tf_status *st) {
  if (strcmp(m->job, j->spec->name) != 0) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "checkpoint %s belongs to "
                         "job '%s', not '%s'", m->path, m->job, j->spec->name);
  }
  for (int k = 0; k < j->jg->n_shards; k++) {
    bool found = false;
    for (int i = 0; i < m->n_shards && !found; i++) {
      found = strcmp(m->shards[i].file, j->jg->shard_files[k]) == 0;
    }
    if (!found) {
      return tf_status_set(st, TF_FAILED_PRECONDITION, "checkpoint %s has no "
                           "shard %s (it was written by a job on other tasks)",
                           m->path, j->jg->shard_files[k]);
    }
  }
  if (strcmp(m->spec_hash, j->spec->hash) != 0) {
    tf__job_log(j, "checkpoint %s was written under another version of the "
                "spec (hash %s, now %s)", m->path, m->spec_hash, j->spec->hash);
  }
  return TF_OK;
}

tf_code tf__job_restore(tf_job *j, tf_session *s, const char *ckpt,
                        int64_t *step, tf_status *st) {
  if (!j->spec->checkpoint) {
    return tf_status_set(st, TF_NOT_FOUND, "job %s has no checkpoint section",
                         j->id);
  }
  tf_ckpt_manifest m = {0};
  TF_TRY(find(j, ckpt, &m, st));
  int64_t t0 = tf__job_now_ns();
  tf_code code = fits(j, &m, st);
  if (code == TF_OK) {
    code = run_shards(j, s, m.path, j->jg->restore, st);
  }
  tf_run_options ro = {.timeout_ms = j->rpc_timeout_ms};
  const char *resync = j->jg->resync;
  if (code == TF_OK && resync != NULL) {
    code = tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, &resync, 1,
                          NULL, st);
  }
  if (code == TF_OK) {
    code = read_step(j, s, step, st);
  }
  int removed = 0;
  if (code == TF_OK && ckpt != NULL && ckpt[0] != '\0' &&
      tf_ckpt_truncate(j->spec->checkpoint_dir, m.step, &removed, st) == TF_OK &&
      removed > 0) {
    tf__job_log(j, "dropped %d checkpoint(s) after step %lld: training goes on "
                "from %s", removed, (long long)m.step, m.path);
  }
  if (code == TF_OK) {
    tf_status_init(st); /* a failed truncation leaves them; restore goes on */
    tf__job_log(j, "restored %s: step %lld in %.0f ms", m.path, (long long)*step,
                (double)(tf__job_now_ns() - t0) / 1e6);
    pthread_mutex_lock(&j->mu);
    free(j->ckpt_path);
    j->ckpt_path = tf__xstrdup(m.path);
    j->ckpt_step = *step;
    pthread_mutex_unlock(&j->mu);
  } else {
    tf_status_prefix(st, "restoring %s", m.path ? m.path : "a checkpoint");
  }
  tf_ckpt_manifest_fini(&m);
  return code;
}

/* Records the outcome of the request with number seq. */
static void answer(tf_job *j, int64_t seq, const char *path, const tf_status *st) {
  pthread_mutex_lock(&j->mu);
  free(j->ckpt_answer);
  j->ckpt_answer = path ? tf__xstrdup(path) : tf__xasprintf("!%s", st->msg);
  j->ckpt_answer_code = path ? TF_OK : st->code;
  j->ckpt_done = seq;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

tf_code tf__job_maybe_save(tf_job *j, tf_session *s, bool force, tf_status *st) {
  const tf_job_spec *sp = j->spec;
  pthread_mutex_lock(&j->mu);
  int64_t seq = j->ckpt_asked;
  bool asked = seq > j->ckpt_done;
  int64_t now = tf__job_now_ns();
  bool due = sp->checkpoint &&
             (force ||
              (sp->checkpoint_every_steps > 0 &&
               j->step >= j->ckpt_step + sp->checkpoint_every_steps) ||
              (sp->checkpoint_every_seconds > 0 &&
               now - j->ckpt_ns >= sp->checkpoint_every_seconds * 1000000000LL));
  pthread_mutex_unlock(&j->mu);
  if (!asked && !due) {
    return TF_OK;
  }
  char *path = NULL;
  tf_status ss;
  tf_status_init(&ss);
  tf_code code = tf__job_save(j, s, &path, &ss);
  if (asked) {
    answer(j, seq, path, &ss);
  }
  free(path);
  if (code != TF_OK) {
    pthread_mutex_lock(&j->mu);
    j->ckpt_ns = now; /* retried at the next period, not at once */
    j->ckpt_failures++;
    pthread_mutex_unlock(&j->mu);
    tf__job_log(j, "%s", ss.msg);
    if (force) {
      *st = ss;
      return code;
    }
  }
  return TF_OK;
}
