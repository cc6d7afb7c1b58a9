/* workqueue.h: the inter-op thread pool that runs ready graph nodes.
 *
 * Unlike the intra-op pool (threadpool.h), which forks and joins one loop
 * at a time, a work queue runs independent tasks in FIFO order on its
 * threads. A task is a small value (a function and a few words) copied into
 * a ring buffer, so scheduling does not allocate once the ring has grown to
 * the steady-state size. */
#ifndef TF_CORE_WORKQUEUE_H
#define TF_CORE_WORKQUEUE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tf_task {
  void (*fn)(struct tf_task *t);
  void *p[3];
  int64_t i[2];
} tf_task;

typedef struct tf_workq tf_workq;

/* A queue with n_threads >= 1 threads of its own. Aborts if a thread cannot
 * be created (process setup, not user input). */
tf_workq *tf_workq_new(int n_threads, const char *name);
/* Runs the tasks already queued, then joins the threads. NULL-safe. Must
 * not be called from one of the queue's threads. */
void tf_workq_free(tf_workq *q);
int tf_workq_size(const tf_workq *q);
/* Queues a copy of *t; one idle thread is woken. Thread-safe. */
void tf_workq_schedule(tf_workq *q, const tf_task *t);
/* Whether the calling thread is one of q's threads. */
int tf_workq_is_worker(const tf_workq *q);

/* Marks the calling thread as one that must stay responsive while on is
 * true (a transport's callback thread, or a completion running inside
 * another kernel): a graph's ready loop on it runs cheap nodes only and
 * hands every expensive one to its work queue. Returns the previous
 * mark, for restoring it. */
bool tf_thread_set_responsive(bool on);
bool tf_thread_is_responsive(void);

#endif
