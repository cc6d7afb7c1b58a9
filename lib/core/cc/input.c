/* input.c: queue runners (TensorFlow 1's QueueRunner without a separate
 * Coordinator): threads that run enqueue targets of a session until their
 * queues close, the run count is used up, an error happens or a stop is
 * requested. The last thread to end runs the close target, so consumers
 * learn that no more data comes (OUT_OF_RANGE) instead of waiting forever.
 * A stop runs the cancel target, which closes the queue cancelling pending
 * enqueues: that is what releases a thread blocked on a full queue. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "tf/input.h"

#define STOP_RUN_TIMEOUT_MS 10000 /* deadline of the close/cancel runs */

typedef struct runner_thread {
  struct tf_queue_runner *r;
  const char *target;
  pthread_t tid;
} runner_thread;

struct tf_queue_runner {
  char **targets;
  int n_targets;
  int threads;
  char *close_target, *cancel_target;
  int64_t max_runs;
  tf_session *s;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  runner_thread *th;
  int live;           /* threads not ended yet */
  bool started, finished, joined;
  _Atomic bool stop;
  _Atomic int64_t claimed, runs;
  tf_status first_err;
};

static char *dup_or_null(const char *s) { return s ? tf__xstrdup(s) : NULL; }

tf_queue_runner *tf_queue_runner_new(const tf_queue_runner_options *o,
                                     tf_status *st) {
  if (o == NULL || o->n_enqueue_targets < 1 || o->enqueue_targets == NULL ||
      o->threads < 0 || o->max_runs < 0) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "queue runner: needs at least one "
                  "enqueue target, threads >= 0 and max_runs >= 0");
    return NULL;
  }
  for (int i = 0; i < o->n_enqueue_targets; i++) {
    if (o->enqueue_targets[i] == NULL || *o->enqueue_targets[i] == '\0') {
      tf_status_set(st, TF_INVALID_ARGUMENT, "queue runner: enqueue target "
                    "%d is empty", i);
      return NULL;
    }
  }
  tf_queue_runner *r = tf__xcalloc(1, sizeof *r);
  r->n_targets = o->n_enqueue_targets;
  r->targets = tf__xcalloc((size_t)r->n_targets, sizeof *r->targets);
  for (int i = 0; i < r->n_targets; i++) {
    r->targets[i] = tf__xstrdup(o->enqueue_targets[i]);
  }
  r->threads = o->threads > 0 ? o->threads : r->n_targets;
  r->close_target = dup_or_null(o->close_target);
  r->cancel_target = dup_or_null(o->cancel_target);
  r->max_runs = o->max_runs;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  tf_status_init(&r->first_err);
  return r;
}

/* Runs one target with a deadline, ignoring its outcome. */
static void run_quietly(tf_session *s, const char *target) {
  if (target == NULL) {
    return;
  }
  tf_run_options o = {.timeout_ms = STOP_RUN_TIMEOUT_MS};
  tf_status st;
  tf_session_run(s, &o, NULL, NULL, 0, NULL, NULL, 0, &target, 1, NULL, &st);
}

static void keep_error(tf_queue_runner *r, const tf_status *st) {
  pthread_mutex_lock(&r->mu);
  if (r->first_err.code == TF_OK) {
    r->first_err = *st;
  }
  pthread_mutex_unlock(&r->mu);
}

static void *thread_main(void *arg) {
  runner_thread *t = arg;
  tf_queue_runner *r = t->r;
  while (!atomic_load(&r->stop)) {
    if (r->max_runs > 0 && atomic_fetch_add(&r->claimed, 1) >= r->max_runs) {
      break; /* the runs are used up: as if the input ended */
    }
    tf_status st;
    tf_code rc = tf_session_run(r->s, NULL, NULL, NULL, 0, NULL, NULL, 0,
                                &t->target, 1, NULL, &st);
    if (rc == TF_OK) {
      atomic_fetch_add(&r->runs, 1);
      continue;
    }
    if (atomic_load(&r->stop) || rc == TF_OUT_OF_RANGE || rc == TF_CANCELLED) {
      break; /* stopped, or a queue was closed */
    }
    keep_error(r, &st);
    tf_queue_runner_request_stop(r);
    break;
  }
  pthread_mutex_lock(&r->mu);
  bool last = --r->live == 0;
  pthread_mutex_unlock(&r->mu);
  if (last) {
    run_quietly(r->s, r->close_target);
    pthread_mutex_lock(&r->mu);
    r->finished = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
  }
  return NULL;
}

tf_code tf_queue_runner_start(tf_queue_runner *r, tf_session *s,
                              tf_status *st) {
  pthread_mutex_lock(&r->mu);
  if (r->started) {
    pthread_mutex_unlock(&r->mu);
    return tf_status_set(st, TF_FAILED_PRECONDITION, "queue runner of '%s' "
                         "was started already (a runner starts once)",
                         r->targets[0]);
  }
  r->started = true;
  r->s = s;
  r->th = tf__xcalloc((size_t)r->threads, sizeof *r->th);
  r->live = r->threads;
  int made = 0;
  for (; made < r->threads; made++) {
    runner_thread *t = &r->th[made];
    *t = (runner_thread){r, r->targets[made % r->n_targets], 0};
    if (pthread_create(&t->tid, NULL, thread_main, t) != 0) {
      break;
    }
  }
  /* threads that could not be made count as ended */
  r->live -= r->threads - made;
  bool none = made == 0;
  r->threads = made;
  if (none) {
    r->finished = true;
  }
  pthread_mutex_unlock(&r->mu);
  if (made == 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "queue runner of '%s': "
                         "cannot create a thread", r->targets[0]);
  }
  return TF_OK;
}

void tf_queue_runner_request_stop(tf_queue_runner *r) {
  atomic_store(&r->stop, true);
  pthread_mutex_lock(&r->mu);
  bool running = r->started && !r->finished;
  pthread_mutex_unlock(&r->mu);
  if (running) {
    run_quietly(r->s, r->cancel_target);
  }
}

/* Joins the threads once all have ended (r->mu held). */
static void join_threads(tf_queue_runner *r) {
  if (!r->joined) {
    for (int i = 0; i < r->threads; i++) {
      pthread_join(r->th[i].tid, NULL);
    }
    r->joined = true;
  }
}

tf_code tf_queue_runner_join(tf_queue_runner *r, int64_t timeout_ms,
                             tf_status *st) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  int64_t ns = dl.tv_nsec + (timeout_ms % 1000) * 1000000;
  dl.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
  dl.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_lock(&r->mu);
  int rc = 0;
  while (r->started && !r->finished && rc != ETIMEDOUT) {
    rc = timeout_ms < 0 ? pthread_cond_wait(&r->cv, &r->mu)
                        : pthread_cond_timedwait(&r->cv, &r->mu, &dl);
  }
  if (r->started && !r->finished) {
    int live = r->live;
    pthread_mutex_unlock(&r->mu);
    return tf_status_set(st, TF_DEADLINE_EXCEEDED, "queue runner of '%s': "
                         "%d of %d threads still running after %lld ms",
                         r->targets[0], live, r->threads,
                         (long long)timeout_ms);
  }
  if (r->started) {
    join_threads(r);
  }
  tf_status err = r->first_err;
  pthread_mutex_unlock(&r->mu);
  if (st != NULL) {
    *st = err;
  }
  return err.code;
}

tf_code tf_queue_runner_status(tf_queue_runner *r, tf_status *st) {
  pthread_mutex_lock(&r->mu);
  tf_status err = r->first_err;
  pthread_mutex_unlock(&r->mu);
  if (st != NULL) {
    *st = err;
  }
  return err.code;
}

bool tf_queue_runner_done(tf_queue_runner *r) {
  pthread_mutex_lock(&r->mu);
  bool done = r->started && r->finished;
  pthread_mutex_unlock(&r->mu);
  return done;
}

int64_t tf_queue_runner_runs(tf_queue_runner *r) { return atomic_load(&r->runs); }

void tf_queue_runner_free(tf_queue_runner *r) {
  if (r == NULL) {
    return;
  }
  tf_queue_runner_request_stop(r);
  tf_queue_runner_join(r, -1, NULL);
  for (int i = 0; i < r->n_targets; i++) {
    free(r->targets[i]);
  }
  free(r->targets);
  free(r->close_target);
  free(r->cancel_target);
  free(r->th);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}
