/* threadpool.h: the intra-op thread pool.
 *
 * Kernels split large loops across the pool with tf_parallel_for; the
 * calling thread works too, so a pool of n threads has n - 1 helpers. Small
 * loops (below the grain) run inline with no synchronisation: waking a
 * thread on another core costs tens of microseconds here. */
#ifndef TF_CORE_THREADPOOL_H
#define TF_CORE_THREADPOOL_H

#include <stdint.h>

typedef struct tf_threadpool tf_threadpool;

/* n_threads >= 1 counts the caller. Aborts on OOM or thread creation
 * failure (process setup, not user input). */
tf_threadpool *tf_threadpool_new(int n_threads);
/* Joins the helpers. NULL-safe. Must not be called from a pool thread. */
void tf_threadpool_free(tf_threadpool *p);
int tf_threadpool_size(const tf_threadpool *p);

/* The process-wide pool, made on first use with TF_NUM_INTRAOP_THREADS
 * threads or the number of online CPUs. */
tf_threadpool *tf_threadpool_default(void);

typedef void (*tf_range_fn)(void *arg, int64_t begin, int64_t end);

/* Calls fn over [0, n) in disjoint chunks, at most one chunk per thread,
 * each of at least min_chunk units, and returns when all are done. Runs
 * inline when pool is NULL, has one thread, n <= min_chunk, or the caller
 * is already inside a parallel_for of this pool (nested calls never
 * deadlock). */
void tf_parallel_for(tf_threadpool *pool, int64_t n, int64_t min_chunk,
                     tf_range_fn fn, void *arg);

/* Grain for element-wise loops: below this many elements, stay inline. */
#define TF_PARALLEL_GRAIN 32768

#endif
