/* workqueue.c: a FIFO of small task values run by a fixed set of threads.
 *
 * Tasks live in a ring buffer that doubles when full and never shrinks, so
 * steady-state scheduling copies 48 bytes under a mutex and signals one
 * sleeping thread (only when one is asleep: waking costs tens of µs). */
#include "lib/core/base/workqueue.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

struct tf_workq {
  int n_threads;
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tf_task *ring;
  size_t cap, head, len; /* cap is a power of two */
  int sleeping;
  bool stop;
};

static _Thread_local const tf_workq *current_q;

static void ring_grow(tf_workq *q) {
  size_t cap = q->cap ? q->cap * 2 : 256;
  tf_task *r = tf__xcalloc(cap, sizeof *r);
  for (size_t i = 0; i < q->len; i++) r[i] = q->ring[(q->head + i) & (q->cap - 1)];
  free(q->ring);
  q->ring = r;
  q->cap = cap;
  q->head = 0;
}

static void *worker_main(void *arg) {
  tf_workq *q = arg;
  current_q = q;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (q->len == 0 && !q->stop) {
      q->sleeping++;
      pthread_cond_wait(&q->cv, &q->mu);
      q->sleeping--;
    }
    if (q->len == 0) break; /* stop, and drained */
    tf_task t = q->ring[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->len--;
    pthread_mutex_unlock(&q->mu);
    t.fn(&t);
    pthread_mutex_lock(&q->mu);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

tf_workq *tf_workq_new(int n_threads, const char *name) {
  TF_ASSERT(n_threads >= 1);
  tf_workq *q = tf__xcalloc(1, sizeof *q);
  q->n_threads = n_threads;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  ring_grow(q);
  q->threads = tf__xcalloc((size_t)n_threads, sizeof *q->threads);
  for (int i = 0; i < n_threads; i++) {
    if (pthread_create(&q->threads[i], NULL, worker_main, q) != 0) {
      TF_PANIC("cannot create %s thread %d", name ? name : "work queue", i);
    }
  }
  return q;
}

void tf_workq_free(tf_workq *q) {
  if (q == NULL) return;
  TF_ASSERT(current_q != q);
  pthread_mutex_lock(&q->mu);
  q->stop = true;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  for (int i = 0; i < q->n_threads; i++) pthread_join(q->threads[i], NULL);
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  free(q->threads);
  free(q->ring);
  free(q);
}

int tf_workq_size(const tf_workq *q) { return q ? q->n_threads : 0; }

void tf_workq_schedule(tf_workq *q, const tf_task *t) {
  pthread_mutex_lock(&q->mu);
  if (q->len == q->cap) ring_grow(q);
  q->ring[(q->head + q->len) & (q->cap - 1)] = *t;
  q->len++;
  if (q->sleeping > 0) pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

int tf_workq_is_worker(const tf_workq *q) { return q != NULL && current_q == q; }

static _Thread_local bool responsive;

bool tf_thread_set_responsive(bool on) {
  bool was = responsive;
  responsive = on;
  return was;
}

bool tf_thread_is_responsive(void) { return responsive; }
