/* cpu_accumulator.h: the conditional accumulator resource (OSDI §4.4,
 * synchronous replication with backup workers), TensorFlow's
 * ConditionalAccumulator: it sums the gradients applied for its current
 * global step and hands their mean (or sum) to one taker.
 *
 * A gradient applied with a local step below the accumulator's global step
 * is stale: it is dropped silently (and counted), never added to a newer
 * round. A take waits asynchronously, as a waiter record holding the
 * caller's callback, until num_required gradients are in; the apply that
 * brings the count there completes it. A take then returns the mean (or
 * sum) of every gradient counted, resets the accumulator to empty and
 * increments the global step. Takes are served in the order they came.
 * One mutex guards the state, so many workers may apply at once; callbacks
 * always run after it is released. A waiting take registers with its
 * step's tf_cancel: cancelling the step fails it with the step's reason
 * and leaves the gradients in place. */
#ifndef TF_DEVICES_CPU_ACCUMULATOR_H
#define TF_DEVICES_CPU_ACCUMULATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/cancel.h"
#include "lib/core/framework/resource.h"
#include "tf/status.h"
#include "tf/tensor.h"

typedef struct tf__accumulator tf__accumulator;

/* Resource type "ConditionalAccumulator". read gives no value
 * (FAILED_PRECONDITION); shutdown (container reset, session close) fails
 * every waiting take with CANCELLED, and later takes fail at once. */
extern const tf_resource_type tf__accumulator_type;

/* What a ConditionalAccumulator node's attrs say. */
typedef struct tf__accumulator_config {
  tf_dtype dtype; /* a numeric dtype (tf__accumulator_dtype_ok) */
  tf_shape shape; /* the gradients' shape; may be partial or unknown */
  bool mean;      /* reduction_type MEAN (else SUM) */
} tf__accumulator_config;

/* Whether gradients of dt can be accumulated (every numeric dtype). */
bool tf__accumulator_dtype_ok(tf_dtype dt);

/* A new empty accumulator at global step 0 (one reference) for a config
 * with a dtype_ok dtype. Aborts on OOM (metadata only). */
tf__accumulator *tf__accumulator_new(const char *container, const char *name,
                                     const tf__accumulator_config *cfg);
/* r as an accumulator, or NULL when r is NULL or another resource type. */
tf__accumulator *tf__accumulator_cast(tf_resource *r);
tf_resource *tf__accumulator_resource(tf__accumulator *a);
tf_dtype tf__accumulator_dtype(const tf__accumulator *a);
/* Whether an op with config cfg may share a: same dtype, reduction and a
 * declared shape that merges with a's; INVALID_ARGUMENT naming the
 * difference. */
tf_code tf__accumulator_matches(const tf__accumulator *a,
                                const tf__accumulator_config *cfg,
                                tf_status *st);

/* Applies gradient g (only read; its contents are copied or added) made at
 * local_step. A stale g (local_step below the global step) is dropped
 * unchecked, as TF does: OK with *applied (may be NULL) false. Otherwise
 * INVALID_ARGUMENT naming both shapes when g's shape does not fit the
 * declared shape or differs from the gradients already in this round, or
 * when its dtype is not the accumulator's; RESOURCE_EXHAUSTED when the sum
 * cannot be allocated; or OK with *applied true. May complete a waiting
 * take, on this thread, before it returns. */
tf_code tf__accumulator_apply(tf__accumulator *a, int64_t local_step,
                              const tf_tensor *g, bool *applied,
                              tf_status *st);

/* Completion of a take: st is OK and result a new reference to the mean
 * (or sum), which the callback takes over; or st is the error and result
 * NULL. Called exactly once, from any thread, never with the
 * accumulator's lock held; maybe before the starting call returns. */
typedef void (*tf__accumulator_done_fn)(void *arg, const tf_status *st,
                                        tf_tensor *result);

/* Takes the mean (or sum) once num_required gradients are in. Returns
 * INVALID_ARGUMENT (num_required < 1) or CANCELLED (the accumulator was
 * shut down) without calling done; otherwise OK, and done reports the
 * result, or cancel's reason (cancel may be NULL: no cancellation). */
tf_code tf__accumulator_take(tf__accumulator *a, int64_t num_required,
                             tf_cancel *cancel, tf__accumulator_done_fn done,
                             void *arg, tf_status *st);

/* Sets the global step (TF allows lowering it). Gradients already in stay. */
void tf__accumulator_set_global_step(tf__accumulator *a, int64_t step);

/* A snapshot of the counters, for the NumAccumulated op and for tests. */
typedef struct tf__accumulator_stats {
  int64_t global_step;
  int64_t num_accumulated; /* gradients in the current round */
  int64_t num_applied;     /* gradients ever counted */
  int64_t num_dropped;     /* stale gradients ever dropped */
  int64_t num_taken;       /* takes completed */
} tf__accumulator_stats;
tf__accumulator_stats tf__accumulator_get_stats(tf__accumulator *a);

#endif
