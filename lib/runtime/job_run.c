/* job_run.c: a job's state, its log and its thread (job_run.h); the step
 * loops are in job_loop.c. */
#include "lib/runtime/job_run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/runtime/ckpt_dir.h"
#include "lib/runtime/job_run_impl.h"
#include "lib/runtime/log.h"

const char *tf_job_state_name(tf_job_state s) {
  static const char *names[] = {"queued", "running", "paused", "recovering",
                                "done", "failed", "cancelled"};
  return s >= TF_JOB_QUEUED && s <= TF_JOB_CANCELLED ? names[s] : "unknown";
}

bool tf_job_state_final(tf_job_state s) {
  return s == TF_JOB_DONE || s == TF_JOB_FAILED || s == TF_JOB_CANCELLED;
}

int64_t tf__job_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- log ------------------------------------------------------------------ */

void tf__job_log(tf_job *j, const char *fmt, ...) {
  char line[TF_JOB_LOG_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  tf_log(LOG_INFO, "job %s: %s", j->id, line);
  pthread_mutex_lock(&j->mu);
  int64_t slot = j->log_next % TF_JOB_LOG_LINES;
  free(j->log[slot]);
  j->log[slot] = tf__xstrdup(line);
  j->log_next++;
  pthread_mutex_unlock(&j->mu);
}

int tf_job_logs(tf_job *j, int64_t from, int max, char ***lines, int64_t *first,
                int64_t *next) {
  pthread_mutex_lock(&j->mu);
  int64_t oldest = j->log_next > TF_JOB_LOG_LINES ? j->log_next - TF_JOB_LOG_LINES : 0;
  int64_t a = from > oldest ? from : oldest;
  int64_t b = j->log_next;
  if (a > b) {
    a = b;
  }
  if (b - a > max) {
    b = a + max;
  }
  int n = (int)(b - a);
  *lines = tf__xcalloc((size_t)n + 1, sizeof(char *));
  for (int i = 0; i < n; i++) {
    (*lines)[i] = tf__xstrdup(j->log[(a + i) % TF_JOB_LOG_LINES]);
  }
  *first = a;
  *next = b;
  pthread_mutex_unlock(&j->mu);
  return n;
}

/* ---- state ----------------------------------------------------------------- */

void tf__job_set_state(tf_job *j, tf_job_state s) {
  pthread_mutex_lock(&j->mu);
  tf_job_state old = j->state;
  if (!tf_job_state_final(old)) {
    j->state = s;
  }
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  if (old != s && !tf_job_state_final(old)) {
    tf__job_log(j, "state: %s", tf_job_state_name(s));
  }
}

void tf_job_info_get(tf_job *j, tf_job_info *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&j->mu);
  snprintf(out->id, sizeof out->id, "%s", j->id);
  snprintf(out->name, sizeof out->name, "%s", j->spec->name);
  out->state = j->state;
  out->sync = j->spec->replication.mode == TF_JOB_MODE_SYNC;
  out->workers = j->spec->replication.workers;
  out->step = j->step;
  out->steps = j->steps;
  out->loss = j->loss;
  out->steps_per_s = j->rate;
  int64_t end = j->ended_ns ? j->ended_ns : tf__job_now_ns();
  out->elapsed_ms = j->started_ns ? (end - j->started_ns) / 1000000 : 0;
  out->submitted_ms = j->submitted_ms;
  snprintf(out->error, sizeof out->error, "%s", j->error ? j->error : "");
  out->n_metrics = j->n_metrics;
  for (int i = 0; i < j->n_metrics; i++) {
    snprintf(out->metric_names[i], sizeof out->metric_names[i], "%s",
             j->metric_names[i]);
    out->metric_values[i] = j->metric_values[i];
  }
  out->recoveries = j->recoveries;
  snprintf(out->checkpoint, sizeof out->checkpoint, "%s",
           j->ckpt_path ? j->ckpt_path : "");
  out->checkpoint_step = j->ckpt_path ? j->ckpt_step : 0;
  out->n_replicas = j->sent != NULL ? j->n_workers : 0;
  for (int i = 0; i < out->n_replicas; i++) {
    out->replica_steps[i] = j->sent[i];
  }
  pthread_mutex_unlock(&j->mu);
}

const char *tf_job_id(const tf_job *j) { return j->id; }

tf_code tf_job_control(tf_job *j, const char *action, int64_t steps,
                       tf_status *st) {
  bool pause = strcmp(action, "pause") == 0, resume = strcmp(action, "resume") == 0;
  bool cancel = strcmp(action, "cancel") == 0, step = strcmp(action, "step") == 0;
  if (!pause && !resume && !cancel && !step) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "unknown job action '%s' "
                         "(expected pause, resume, cancel or step)", action);
  }
  if (step && steps < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "step needs a count >= 1, "
                         "got %lld", (long long)steps);
  }
  pthread_mutex_lock(&j->mu);
  tf_job_state s = j->state;
  tf_code code = TF_OK;
  if (tf_job_state_final(s)) {
    code = tf_status_set(st, TF_FAILED_PRECONDITION, "job %s is %s", j->id,
                         tf_job_state_name(s));
  } else if (step && s != TF_JOB_PAUSED) {
    code = tf_status_set(st, TF_FAILED_PRECONDITION, "job %s is %s; step "
                         "runs a paused job (pause it first)", j->id,
                         tf_job_state_name(s));
  } else if (cancel) {
    j->cancel = true;
  } else if (pause) {
    j->paused = true;
    j->budget = 0;
  } else if (resume) {
    j->paused = false;
  } else {
    j->budget += steps;
  }
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  TF_TRY(code);
  if (cancel) {
    tf__job_log(j, "cancel requested");
    tf__job_abort(j);
  } else if (pause && s == TF_JOB_RUNNING) {
    tf__job_set_state(j, TF_JOB_PAUSED);
  } else if (resume && s == TF_JOB_PAUSED) {
    tf__job_set_state(j, TF_JOB_RUNNING);
  } else if (step) {
    tf__job_log(j, "step: %lld more updates", (long long)steps);
  }
  return TF_OK;
}

/* ---- checkpoints ------------------------------------------------------------- */

bool tf_job_uses(const tf_job *j, const char *dev) {
  for (int i = 0; i < j->n_workers + j->n_ps; i++) {
    if (strcmp(i < j->n_workers ? j->workers[i] : j->ps[i - j->n_workers], dev) == 0) {
      return true;
    }
  }
  return false;
}

const char *tf_job_checkpoint_dir(const tf_job *j) {
  return j->spec->checkpoint ? j->spec->checkpoint_dir : NULL;
}

static tf_code can_checkpoint(tf_job *j, tf_status *st) {
  if (!j->spec->checkpoint) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "job %s has no "
                         "checkpoint section (checkpoint.dir) in its spec", j->id);
  }
  if (tf_job_state_final(j->state)) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "job %s is %s", j->id,
                         tf_job_state_name(j->state));
  }
  return TF_OK;
}

tf_code tf_job_checkpoint(tf_job *j, int64_t timeout_ms, char **path,
                          tf_status *st) {
  *path = NULL;
  pthread_mutex_lock(&j->mu);
  tf_code code = can_checkpoint(j, st);
  if (code == TF_OK && j->state != TF_JOB_RUNNING && j->state != TF_JOB_PAUSED) {
    code = tf_status_set(st, TF_FAILED_PRECONDITION, "job %s is %s; a checkpoint "
                         "is taken between steps of a running or paused job",
                         j->id, tf_job_state_name(j->state));
  }
  int64_t seq = ++j->ckpt_asked;
  pthread_cond_broadcast(&j->cv);
  int64_t end = tf__job_now_ns() + timeout_ms * 1000000;
  while (code == TF_OK && j->ckpt_done < seq && !j->thread_done &&
         tf__job_now_ns() < end) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
  }
  if (code == TF_OK && j->ckpt_done < seq) {
    code = tf_status_set(st, j->thread_done ? TF_FAILED_PRECONDITION
                                            : TF_DEADLINE_EXCEEDED,
                         "job %s took no checkpoint in %lld ms%s", j->id,
                         (long long)timeout_ms, j->thread_done ? " (it ended)" : "");
  } else if (code == TF_OK && j->ckpt_answer_code != TF_OK) {
    code = tf_status_set(st, j->ckpt_answer_code, "%s", j->ckpt_answer + 1);
  } else if (code == TF_OK) {
    *path = tf__xstrdup(j->ckpt_answer);
  }
  pthread_mutex_unlock(&j->mu);
  return code;
}

tf_code tf_job_restore(tf_job *j, const char *ckpt, char **note, tf_status *st) {
  *note = NULL;
  pthread_mutex_lock(&j->mu);
  tf_code code = can_checkpoint(j, st);
  pthread_mutex_unlock(&j->mu);
  TF_TRY(code);
  tf_ckpt_manifest m = {0};
  if (ckpt == NULL || ckpt[0] == '\0') {
    TF_TRY(tf_ckpt_latest(j->spec->checkpoint_dir, &m, note, st));
  } else {
    char *p = strchr(ckpt, '/') ? tf__xstrdup(ckpt)
                                : tf__xasprintf("%s/%s", j->spec->checkpoint_dir, ckpt);
    code = tf_ckpt_verify(p, &m, st);
    free(p);
    TF_TRY(code);
  }
  char *msg = tf__xasprintf("restoring %s (step %lld)%s%s", m.path,
                            (long long)m.step, *note ? "; " : "", *note ? *note : "");
  free(*note);
  *note = msg;
  pthread_mutex_lock(&j->mu);
  code = can_checkpoint(j, st);
  if (code == TF_OK) {
    free(j->restore_req);
    j->restore_req = tf__xstrdup(m.path);
    j->stop = true;
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
  tf_ckpt_manifest_fini(&m);
  TF_TRY(code);
  tf__job_log(j, "%s", msg);
  tf__job_abort(j);
  return TF_OK;
}

void tf_job_master_stopping(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  j->master_stopping = true;
  pthread_mutex_unlock(&j->mu);
}

void tf_job_suspend(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  bool final = tf_job_state_final(j->state);
  if (!final) {
    j->suspend = true;
    j->stop = true;
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
  if (!final) {
    tf__job_log(j, "suspending: the master is shutting down");
  }
}

/* ---- start and stop ----------------------------------------------------------- */

static tf_code check_cluster(const tf_job_spec *s, const tf_job_cluster *c,
                             tf_status *st) {
  const tf_job_replication *r = &s->replication;
  if (!s->input.present) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the master runs jobs "
                         "with an input section (the batches it feeds)", s->path);
  }
  if (!s->has_model && r->mode == TF_JOB_MODE_SYNC && r->workers > 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: replication.mode sync with %d "
                         "workers needs a model section: a graph file's train target "
                         "applies its own updates, so its replicas run async (mode: "
                         "async)", s->path, r->workers);
  }
  if (r->workers > c->n_workers) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: replication.workers is "
                         "%d but the cluster has %d worker task(s)", s->path,
                         r->workers, c->n_workers);
  }
  if (c->n_ps < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the cluster has no ps "
                         "task to hold the variables", s->path);
  }
  if (r->ps_tasks > c->n_ps) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: replication.ps_tasks is "
                         "%d but the cluster has %d ps task(s)", s->path,
                         r->ps_tasks, c->n_ps);
  }
  return TF_OK;
}

static char **dup_strs(const char *const *v, int n) {
  char **out = tf__xcalloc((size_t)n + 1, sizeof *out);
  for (int i = 0; i < n; i++) {
    out[i] = tf__xstrdup(v[i]);
  }
  return out;
}

static void free_strs(char **v, int n) {
  for (int i = 0; v != NULL && i < n; i++) {
    free(v[i]);
  }
  free(v);
}

tf_code tf_job_start(tf_job_spec *spec, const char *id, const tf_job_cluster *c,
                     tf_job **out, tf_status *st) {
  *out = NULL;
  if (check_cluster(spec, c, st) != TF_OK) {
    tf_job_spec_free(spec);
    return st->code;
  }
  tf_job *j = tf__xcalloc(1, sizeof *j);
  pthread_mutex_init(&j->mu, NULL);
  pthread_mutex_init(&j->sess_mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->spec = spec;
  j->id = tf__xstrdup(id);
  j->master_url = tf__xstrdup(c->master_url);
  j->n_workers = spec->replication.workers;
  j->workers = dup_strs(c->worker_devices, j->n_workers);
  j->sent = tf__xcalloc((size_t)j->n_workers, sizeof *j->sent);
  j->n_ps = spec->replication.ps_tasks ? spec->replication.ps_tasks : c->n_ps;
  j->ps = dup_strs(c->ps_devices, j->n_ps);
  j->inc_workers = tf__xcalloc((size_t)j->n_workers + 1, sizeof *j->inc_workers);
  j->inc_ps = tf__xcalloc((size_t)j->n_ps + 1, sizeof *j->inc_ps);
  j->rpc_timeout_ms = c->rpc_timeout_ms;
  j->health = c->health;
  j->on_end = c->on_end;
  j->cb_arg = c->cb_arg;
  j->loss = NAN;
  j->submitted_ms = (int64_t)time(NULL) * 1000;
  j->created_ns = tf__job_now_ns();
  tf__job_log(j, "submitted: %s, %s, %d worker(s), %d ps task(s)", spec->path,
              spec->replication.mode == TF_JOB_MODE_SYNC ? "sync" : "async",
              j->n_workers, j->n_ps);
  if (pthread_create(&j->thread, NULL, tf__job_main, j) != 0) {
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "job %s: cannot start its thread",
                  id);
    tf_job_free(j);
    return st->code;
  }
  j->thread_on = true;
  *out = j;
  return TF_OK;
}

bool tf_job_stop(tf_job *j, int64_t timeout_ms) {
  pthread_mutex_lock(&j->mu);
  bool final = tf_job_state_final(j->state);
  if (!final) {
    j->cancel = true;
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
  if (!final) {
    tf__job_abort(j);
  }
  return tf_job_wait(j, timeout_ms);
}

bool tf_job_wait(tf_job *j, int64_t timeout_ms) {
  int64_t end = tf__job_now_ns() + timeout_ms * 1000000;
  pthread_mutex_lock(&j->mu);
  while (!j->thread_done && (timeout_ms < 0 || tf__job_now_ns() < end)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
  }
  bool done = j->thread_done;
  pthread_mutex_unlock(&j->mu);
  return done;
}

void tf_job_hold(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  j->holds++;
  pthread_mutex_unlock(&j->mu);
}

void tf_job_release(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  TF_ASSERT(j->holds > 0);
  j->holds--;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

bool tf_job_held(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  bool held = j->holds > 0;
  pthread_mutex_unlock(&j->mu);
  return held;
}

/* Waits for the holds on j to be released. A holder's wait on the job is
 * bounded (tf_job_checkpoint's timeout, and the thread has ended by
 * now), so this ends; it logs once should it take long. */
static void wait_holds(tf_job *j) {
  int64_t t0 = tf__job_now_ns();
  bool logged = false;
  pthread_mutex_lock(&j->mu);
  while (j->holds > 0) {
    tf__cond_wait_ms(&j->cv, &j->mu, 50);
    if (!logged && tf__job_now_ns() - t0 > 5000000000LL) {
      tf_log(LOG_WARNING, "job %s: freeing it waits for %d request(s) using it", j->id,
             j->holds);
      logged = true;
    }
  }
  pthread_mutex_unlock(&j->mu);
}

void tf_job_free(tf_job *j) {
  if (j == NULL) {
    return;
  }
  if (j->thread_on) {
    tf_job_stop(j, -1);
    pthread_join(j->thread, NULL);
  }
  wait_holds(j);
  for (int i = 0; i < TF_JOB_LOG_LINES; i++) {
    free(j->log[i]);
  }
  for (int i = 0; i < j->n_metrics; i++) {
    free(j->metric_names[i]);
  }
  free_strs(j->workers, j->n_workers);
  free(j->sent);
  free_strs(j->ps, j->n_ps);
  free(j->error);
  free(j->ckpt_path);
  free(j->ckpt_answer);
  free(j->restore_req);
  free(j->last_recovery);
  free(j->inc_workers);
  free(j->inc_ps);
  free(j->id);
  free(j->master_url);
  tf_job_spec_free(j->spec);
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->mu);
  pthread_mutex_destroy(&j->sess_mu);
  free(j);
}
