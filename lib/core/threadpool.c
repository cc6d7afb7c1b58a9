/* threadpool.c: a fork-join pool for intra-op parallelism.
 *
 * One job at a time per pool (a mutex serialises callers); the caller
 * runs chunk 0 and helpers claim the rest through an atomic counter. A
 * thread-local flag makes nested parallel_for calls run inline. */
#include "lib/core/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/core/util.h"

struct tf_threadpool {
  int n_threads;
  pthread_t *threads;
  pthread_mutex_t job_lock; /* one job at a time */
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  uint64_t generation; /* bumped per job */
  bool stop;
  /* current job */
  tf_range_fn fn;
  void *arg;
  int64_t n, chunk;
  int n_chunks;
  atomic_int next_chunk;
  int remaining; /* chunks not finished, under mu */
};

static _Thread_local const tf_threadpool *inside_pool;

static void run_chunks(tf_threadpool *p) {
  int done = 0;
  for (;;) {
    int c = atomic_fetch_add(&p->next_chunk, 1);
    if (c >= p->n_chunks) break;
    int64_t b = (int64_t)c * p->chunk;
    int64_t e = TF_MIN(p->n, b + p->chunk);
    p->fn(p->arg, b, e);
    done++;
  }
  if (done > 0) {
    pthread_mutex_lock(&p->mu);
    p->remaining -= done;
    if (p->remaining == 0) pthread_cond_broadcast(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

static void *worker_main(void *arg) {
  tf_threadpool *p = arg;
  inside_pool = p;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

tf_threadpool *tf_threadpool_new(int n_threads) {
  TF_ASSERT(n_threads >= 1);
  tf_threadpool *p = tf__xcalloc(1, sizeof *p);
  p->n_threads = n_threads;
  pthread_mutex_init(&p->job_lock, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->threads = tf__xcalloc((size_t)n_threads, sizeof *p->threads);
  for (int i = 1; i < n_threads; i++) {
    if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
      TF_PANIC("cannot create intra-op thread %d", i);
    }
  }
  return p;
}

void tf_threadpool_free(tf_threadpool *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->job_lock);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  free(p->threads);
  free(p);
}

int tf_threadpool_size(const tf_threadpool *p) { return p ? p->n_threads : 1; }

static tf_threadpool *default_pool;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void make_default(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("TF_NUM_INTRAOP_THREADS");
  if (env != NULL && atoi(env) > 0) n = atoi(env);
  if (n < 1) n = 1;
  if (n > 256) n = 256;
  default_pool = tf_threadpool_new((int)n);
}

tf_threadpool *tf_threadpool_default(void) {
  pthread_once(&default_once, make_default);
  return default_pool;
}

void tf_parallel_for(tf_threadpool *p, int64_t n, int64_t min_chunk,
                     tf_range_fn fn, void *arg) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  if (p == NULL || p->n_threads == 1 || n <= min_chunk || inside_pool == p) {
    fn(arg, 0, n);
    return;
  }
  int64_t chunks = TF_MIN((int64_t)p->n_threads, (n + min_chunk - 1) / min_chunk);
  int64_t chunk = (n + chunks - 1) / chunks;
  pthread_mutex_lock(&p->job_lock);
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->chunk = chunk;
  p->n_chunks = (int)((n + chunk - 1) / chunk);
  p->remaining = p->n_chunks;
  atomic_store(&p->next_chunk, 0);
  p->generation++;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  const tf_threadpool *saved = inside_pool;
  inside_pool = p;
  run_chunks(p);
  inside_pool = saved;
  pthread_mutex_lock(&p->mu);
  while (p->remaining > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->job_lock);
}
