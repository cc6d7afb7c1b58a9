/* threadpool.c: a fork-join pool for intra-op parallelism.
 *
 * One job at a time per pool (a mutex serialises callers); the caller
 * and the helpers claim balanced chunks through an atomic counter tagged
 * with the job's generation, so a helper that wakes late for a finished
 * job can never claim chunks of the next one. A thread-local flag makes
 * nested parallel_for calls run inline. */
#include "lib/core/base/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/core/base/util.h"

struct tf_threadpool {
  int n_threads;
  pthread_t *threads;
  pthread_mutex_t job_lock; /* one job at a time */
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  uint32_t generation; /* bumped per job */
  bool stop;
  /* current job, under mu */
  tf_range_fn fn;
  void *arg;
  int64_t n;
  int n_chunks;
  int remaining; /* chunks not finished */
  /* generation << 32 | next unclaimed chunk */
  _Atomic uint64_t claim;
};

/* A job as one thread saw it when it joined. */
typedef struct {
  tf_range_fn fn;
  void *arg;
  int64_t n;
  int n_chunks;
  uint32_t gen;
} job;

static _Thread_local const tf_threadpool *inside_pool;

/* Claims the next chunk of job j; -1 when none is left or the pool has
 * moved on to another job. */
static int claim_chunk(tf_threadpool *p, const job *j) {
  uint64_t v = atomic_load(&p->claim);
  do {
    if ((uint32_t)(v >> 32) != j->gen || (uint32_t)v >= (uint32_t)j->n_chunks) {
      return -1;
    }
  } while (!atomic_compare_exchange_weak(&p->claim, &v, v + 1));
  return (int)(uint32_t)v;
}

/* Runs chunks of j until none is left; records them under mu. Chunk c of k
 * covers [c*q + min(c, r), ...) with q = n / k, r = n % k: q or q + 1. */
static void run_chunks(tf_threadpool *p, const job *j) {
  int done = 0, c;
  int64_t q = j->n / j->n_chunks, r = j->n % j->n_chunks;
  while ((c = claim_chunk(p, j)) >= 0) {
    int64_t b = c * q + TF_MIN((int64_t)c, r);
    j->fn(j->arg, b, b + q + (c < r));
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
  uint32_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    job j = {p->fn, p->arg, p->n, p->n_chunks, seen};
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, &j);
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
  /* n > min_chunk, so 1 <= chunks and every chunk has >= min_chunk. */
  int64_t chunks = TF_MIN((int64_t)p->n_threads, n / min_chunk);
  pthread_mutex_lock(&p->job_lock);
  pthread_mutex_lock(&p->mu);
  job j = {fn, arg, n, (int)chunks, ++p->generation};
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->n_chunks = j.n_chunks;
  p->remaining = j.n_chunks;
  atomic_store(&p->claim, (uint64_t)j.gen << 32);
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  const tf_threadpool *saved = inside_pool;
  inside_pool = p;
  run_chunks(p, &j);
  inside_pool = saved;
  pthread_mutex_lock(&p->mu);
  while (p->remaining > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->job_lock);
}
