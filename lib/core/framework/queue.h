/* queue.h: queue resources (whitepaper §4.6, OSDI §3.1): FIFO and
 * RandomShuffle queues of tuples of tensors, shared by steps through a
 * container of the session's resource manager.
 *
 * Blocking is asynchronous. An enqueue that finds the queue full, or a
 * dequeue that finds too few elements, becomes a waiter record holding the
 * caller's callback; whoever later makes room or data (another step's
 * enqueue or dequeue, a close, a cancellation) completes it. No thread ever
 * sleeps inside a queue. Waiters are served in FIFO order of their requests,
 * one list for enqueues and one for dequeues, and only the head of each list
 * makes progress: an EnqueueMany moves its elements in as room appears, a
 * DequeueMany takes elements out as they arrive and completes with all n
 * stacked (partial results are never returned). Callbacks always run after
 * the queue's lock is released.
 *
 * A waiter registers with its step's tf_cancel; cancelling the step fails
 * the waiter with the step's reason (elements a DequeueMany had taken go
 * back to the front of the queue). */
#ifndef TF_CORE_QUEUE_H
#define TF_CORE_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/cancel.h"
#include "lib/core/framework/resource.h"
#include "tf/status.h"
#include "tf/tensor.h"

#define TF_QUEUE_MAX_COMPONENTS 64

typedef enum tf_queue_kind {
  TF_QUEUE_FIFO = 0,
  TF_QUEUE_RANDOM_SHUFFLE,
} tf_queue_kind;

/* What a queue op's attrs say. */
typedef struct tf_queue_config {
  tf_queue_kind kind;
  int n_components;        /* 1 .. TF_QUEUE_MAX_COMPONENTS */
  const tf_dtype *dtypes;  /* n_components */
  const tf_shape *shapes;  /* NULL (unconstrained) or n_components, fully defined */
  int64_t capacity;        /* -1: unbounded; else >= 1 */
  int64_t min_after_dequeue; /* RandomShuffle: dequeues wait while size <= it */
  int64_t seed, seed2;     /* RandomShuffle; both 0: a nondeterministic seed */
} tf_queue_config;

typedef struct tf_queue tf_queue;

/* Resource types: "FIFOQueue" and "RandomShuffleQueue". read gives no value
 * (FAILED_PRECONDITION: a queue is not a tensor); shutdown closes the queue
 * cancelling pending enqueues, which fails every waiter. */
extern const tf_resource_type tf_fifo_queue_type;
extern const tf_resource_type tf_random_shuffle_queue_type;

/* Checks cfg: INVALID_ARGUMENT naming the bad field (component count,
 * shapes count or a shape not fully defined, capacity, min_after_dequeue). */
tf_code tf_queue_config_check(const tf_queue_config *cfg, tf_status *st);
/* A new open, empty queue (one reference) of a checked config. Aborts on
 * OOM (metadata only). */
tf_queue *tf_queue_new(const char *container, const char *name,
                       const tf_queue_config *cfg);
/* r as a queue, or NULL when r is NULL or another resource type. */
tf_queue *tf_queue_cast(tf_resource *r);
tf_resource *tf_queue_resource(tf_queue *q);
/* Whether a queue op with config cfg may share q: same kind, component
 * types, shapes and capacity; INVALID_ARGUMENT naming the difference. */
tf_code tf_queue_matches(tf_queue *q, const tf_queue_config *cfg,
                         tf_status *st);
int tf_queue_num_components(const tf_queue *q);
const tf_dtype *tf_queue_dtypes(const tf_queue *q);
/* Whether the queue has per-component shapes (DequeueMany needs them). */
bool tf_queue_has_shapes(const tf_queue *q);

/* Completion of an enqueue or dequeue: st is OK or the error (the queue's
 * message names it: "FIFOQueue 'q' is closed"); for a successful dequeue
 * tuple holds n_components new references that the callback takes over
 * (NULL otherwise). Called exactly once, from any thread, never with the
 * queue's lock held; maybe before the starting call returns. */
typedef void (*tf_queue_done_fn)(void *arg, const tf_status *st,
                                 tf_tensor **tuple);

/* Enqueues the tuple comps[0..n) (only read: the queue keeps references,
 * or copies rows when many). many: EnqueueMany, each component is split
 * along dim 0 into that many elements (all components with the same dim-0
 * size). Waits while the queue is full. cancel (may be NULL) is the step's.
 * Returns INVALID_ARGUMENT naming the component (count, dtype, shape or
 * dim-0 mismatch) or RESOURCE_EXHAUSTED, and then done is never called;
 * otherwise returns OK and done reports the outcome: CANCELLED when the
 * queue is or gets closed with cancel_pending_enqueues, or when cancel
 * fires (its reason's code). */
tf_code tf_queue_enqueue(tf_queue *q, tf_tensor *const *comps, int n,
                         bool many, tf_cancel *cancel, tf_queue_done_fn done,
                         void *arg, tf_status *st);

/* Dequeues one element (n < 0: Dequeue, components as enqueued) or exactly
 * n (DequeueMany: components stacked along a new dim 0; needs shapes).
 * RandomShuffle picks uniformly among the elements. Returns
 * INVALID_ARGUMENT (DequeueMany without shapes) without calling done;
 * otherwise done reports OUT_OF_RANGE "FIFOQueue 'q' is closed and has
 * insufficient elements (requested 3, current size 1)" once the queue is
 * closed and cannot supply the request, or cancel's reason. */
tf_code tf_queue_dequeue(tf_queue *q, int64_t n, tf_cancel *cancel,
                         tf_queue_done_fn done, void *arg, tf_status *st);

/* Closes q: later enqueues fail with CANCELLED; pending enqueues go on
 * (and are cancelled when cancel_pending_enqueues); pending dequeues that
 * can no longer be satisfied fail with OUT_OF_RANGE. Closing again is a
 * no-op (except that it may cancel pending enqueues). */
void tf_queue_close(tf_queue *q, bool cancel_pending_enqueues);
bool tf_queue_is_closed(tf_queue *q);
/* Elements in the queue now (not counting pending enqueues). */
int64_t tf_queue_size(tf_queue *q);

#endif
