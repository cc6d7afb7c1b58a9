/* job_recover.c: a job's recovery between two attempts (job_run.h):
 * tear the attempt down, count it, wait (bounded) for every task to be
 * up, and drop the job's container so that the next attempt starts from
 * fresh state and the latest checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_run_impl.h"

#define PIPELINE_STOP_MS 10000
#define POLL_MS 100
#define DROP_WHEN_ENDING_MS 2000

void tf__job_drop_container(tf_job *j) {
  tf_status st;
  tf_status_init(&st);
  /* A job that was cancelled or suspended (the master may be stopping,
   * its tasks with it) does not wait the whole RPC deadline for a task
   * that has just gone: the drop is best effort then. */
  pthread_mutex_lock(&j->mu);
  bool ending = j->cancel || j->suspend, stopping = j->master_stopping;
  pthread_mutex_unlock(&j->mu);
  if (stopping) {
    tf__job_log(j, "container %s left on the tasks: the master is stopping", j->id);
    return;
  }
  int64_t ms = j->rpc_timeout_ms;
  if (ending && (ms <= 0 || ms > DROP_WHEN_ENDING_MS)) ms = DROP_WHEN_ENDING_MS;
  tf_session_options so = {.target = j->master_url, .rpc_timeout_ms = ms};
  tf_graph *g = tf_graph_new();
  tf_session *s = tf_session_new(g, &so, &st);
  const char *c = j->id;
  if (s == NULL || tf_session_reset(s, &c, 1, &st) != TF_OK) {
    tf__job_log(j, "dropping container %s on the tasks failed: %s", c, st.msg);
  }
  tf_session_free(s);
  tf_graph_free(g);
}

void tf__job_teardown(tf_job *j, bool drop) {
  for (int i = 0; j->jg != NULL && i < j->n_workers; i++) {
    tf_status ps;
    if (j->jg->inputs[i] != NULL) {
      tf_input_pipeline_stop(j->jg->inputs[i], PIPELINE_STOP_MS, &ps);
    }
  }
  pthread_mutex_lock(&j->sess_mu);
  tf_session *s = j->sess;
  j->sess = NULL;
  j->aborted = true;
  pthread_mutex_unlock(&j->sess_mu);
  if (s != NULL) {
    tf_status st;
    tf_session_close(s, &st);
  }
  if (s != NULL && drop) {
    tf__job_drop_container(j);
  }
  tf_session_free(s);
  tf_job_graph_free(j->jg);
  j->jg = NULL;
}

static bool ended(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  bool e = j->cancel || j->suspend;
  pthread_mutex_unlock(&j->mu);
  return e;
}

static uint64_t incarnation(tf_job *j, const char *dev) {
  return j->health.incarnation ? j->health.incarnation(j->health.arg, dev) : 1;
}

/* OK when every task of the job is up, else UNAVAILABLE naming those
 * that are not. */
static tf_code tasks_up(tf_job *j, tf_status *st) {
  char down[512] = "";
  size_t len = 0;
  int n = 0;
  for (int i = 0; i < j->n_workers + j->n_ps; i++) {
    const char *dev = i < j->n_workers ? j->workers[i] : j->ps[i - j->n_workers];
    if (incarnation(j, dev) == 0 && len < sizeof down - 1) {
      len += (size_t)snprintf(down + len, sizeof down - len, "%s%s", n++ ? ", " : "", dev);
    }
  }
  return n == 0 ? TF_OK
                : tf_status_set(st, TF_UNAVAILABLE, "%s %s down", down,
                                n == 1 ? "is" : "are");
}

/* Waits until every task is up, at most recovery.wait_seconds. */
static tf_code wait_tasks(tf_job *j, tf_status *st) {
  int64_t start = tf__job_now_ns();
  int64_t end = start + j->spec->recovery_wait_seconds * 1000000000LL;
  bool said = false;
  for (;;) {
    if (ended(j)) {
      return tf_status_set(st, TF_CANCELLED, "cancelled while recovering");
    }
    tf_status hs;
    tf_status_init(&hs);
    if (tasks_up(j, &hs) == TF_OK) {
      if (said) {
        tf__job_log(j, "every task is up again after %.1f s",
                    (double)(tf__job_now_ns() - start) / 1e9);
      }
      return TF_OK;
    }
    if (tf__job_now_ns() >= end) {
      return tf_status_set(st, TF_UNAVAILABLE, "%s for more than %lld s "
                           "(recovery.wait_seconds)", hs.msg,
                           (long long)j->spec->recovery_wait_seconds);
    }
    if (!said) {
      tf__job_log(j, "waiting for the tasks: %s", hs.msg);
      said = true;
    }
    struct timespec ts = {0, POLL_MS * 1000000};
    nanosleep(&ts, NULL);
  }
}

tf_code tf__job_recover(tf_job *j, tf_status *st) {
  pthread_mutex_lock(&j->mu);
  bool asked = j->restore_req != NULL;
  char *why = tf__xstrdup(asked ? "a restore was asked for"
                                : j->error ? j->error : "a step failed");
  tf_code why_code = j->error_code;
  free(j->error);
  j->error = NULL;
  j->error_code = TF_OK;
  j->stop = false;
  int n = asked ? j->recoveries : ++j->recoveries;
  int max = j->spec->recovery_max_attempts;
  free(j->last_recovery);
  j->last_recovery = tf__xstrdup(why);
  j->recover_ns = 0;
  pthread_mutex_unlock(&j->mu);
  tf__job_teardown(j, false);
  tf_code code = TF_OK;
  if (!asked && n > max) {
    code = tf_status_set(st, why_code, "gave up after %d recoveries "
                         "(recovery.max_attempts); the last failure: %s", max, why);
  } else {
    if (!asked) {
      tf__job_log(j, "recovering (%d of %d): %s", n, max, why);
    }
    tf__job_set_state(j, TF_JOB_RECOVERING);
    code = wait_tasks(j, st);
  }
  free(why);
  TF_TRY(code);
  tf__job_drop_container(j);
  pthread_mutex_lock(&j->sess_mu);
  j->aborted = false;
  pthread_mutex_unlock(&j->sess_mu);
  pthread_mutex_lock(&j->mu);
  j->recover_ns = tf__job_now_ns();
  bool cancel = j->cancel || j->suspend;
  pthread_mutex_unlock(&j->mu);
  return cancel ? tf_status_set(st, TF_CANCELLED, "cancelled while recovering")
                : TF_OK;
}

void tf__job_note_incarnations(tf_job *j) {
  for (int i = 0; i < j->n_workers; i++) {
    j->inc_workers[i] = incarnation(j, j->workers[i]);
  }
  for (int k = 0; k < j->n_ps; k++) {
    j->inc_ps[k] = incarnation(j, j->ps[k]);
  }
}

/* Whether every ps task is still up with the attempt's incarnation. */
static bool ps_intact(tf_job *j) {
  for (int k = 0; k < j->n_ps; k++) {
    if (incarnation(j, j->ps[k]) != j->inc_ps[k]) {
      return false;
    }
  }
  return true;
}

bool tf__job_replica_wait(tf_job *j, int i, const tf_status *err) {
  bool alone = j->n_workers > 1 && (!j->jg->sync || j->jg->required < j->n_workers);
  if (!alone || err->code == TF_INVALID_ARGUMENT || err->code == TF_DATA_LOSS ||
      err->code == TF_OUT_OF_RANGE) {
    return false;
  }
  int64_t wait_ns = j->spec->recovery_wait_seconds * 1000000000LL;
  int64_t end = tf__job_now_ns() + wait_ns;
  pthread_mutex_lock(&j->mu);
  int64_t step0 = j->step;
  pthread_mutex_unlock(&j->mu);
  bool said = false;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    bool stop = j->stop || j->cancel;
    int64_t step = j->step;
    pthread_mutex_unlock(&j->mu);
    if (tf__job_now_ns() >= end) {
      if (step == step0) {
        return false; /* nobody goes on: the job recovers as a whole */
      }
      step0 = step; /* the others go on: wait another period */
      end = tf__job_now_ns() + wait_ns;
    }
    uint64_t inc = incarnation(j, j->workers[i]);
    if (stop || !ps_intact(j) || (inc != 0 && inc != j->inc_workers[i])) {
      return false; /* stopping, or a restart: the job recovers as a whole */
    }
    if (inc != 0 && said) {
      tf__job_log(j, "replica %d: its worker answers again; going on", i);
      return true;
    }
    if (inc != 0 && !said) { /* a failure of this step alone: the next */
      struct timespec ts = {0, POLL_MS * 1000000};
      nanosleep(&ts, NULL);
      return true;
    }
    if (!said) {
      tf__job_log(j, "%s; the other replicas go on without it", err->msg);
      said = true;
    }
    struct timespec ts = {0, POLL_MS * 1000000};
    nanosleep(&ts, NULL);
  }
}
