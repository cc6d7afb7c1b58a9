/* cancel.h: cancellation of a step.
 *
 * A step (a session Run or a worker's RunGraph) owns one tf_cancel.
 * Whatever may block on the step's behalf (an asynchronous kernel waiting
 * on a queue, a Recv waiting on a rendezvous, the executor itself)
 * registers a callback; tf_cancel_start records why the step is cancelled
 * (CANCELLED, DEADLINE_EXCEEDED, or the step's first error) and runs every
 * callback once, outside the lock. The first start wins. */
#ifndef TF_CORE_CANCEL_H
#define TF_CORE_CANCEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"

typedef void (*tf_cancel_fn)(void *arg);

typedef struct tf_cancel_cb {
  uint64_t token;
  tf_cancel_fn fn;
  void *arg;
} tf_cancel_cb;

typedef struct tf_cancel {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  _Atomic int state; /* 0 live, 1 running callbacks, 2 cancelled */
  pthread_t cb_thread; /* the thread running callbacks (state 1) */
  tf_status why;
  uint64_t next_token;
  tf_cancel_cb *cbs;
  int n_cbs, cap_cbs;
} tf_cancel;

void tf_cancel_init(tf_cancel *c);
void tf_cancel_fini(tf_cancel *c);

/* Registers fn(arg) to run on cancellation and returns a token > 0. When
 * the step is already cancelled (or being cancelled) nothing is registered
 * and 0 is returned: the caller must act as cancelled at once. */
uint64_t tf_cancel_register(tf_cancel *c, tf_cancel_fn fn, void *arg);

/* Removes a registration. Returns true when fn will never run. Returns
 * false when cancellation has started; it then waits until every callback
 * has returned, so the caller may free what arg points to. Never call it
 * while holding a lock that a callback takes. token 0 is a no-op (false).
 * Called from a callback itself, it returns false without waiting. */
bool tf_cancel_deregister(tf_cancel *c, uint64_t token);

/* Cancels with code (not OK) and message; runs the callbacks in the calling
 * thread. Returns true for the first call, false (doing nothing) after. */
bool tf_cancel_start(tf_cancel *c, tf_code code, const char *msg);

/* Lock-free: cheap enough to poll before every node. */
bool tf_cancel_is_cancelled(tf_cancel *c);
/* Copies the reason into st (OK when not cancelled); returns its code. */
tf_code tf_cancel_reason(tf_cancel *c, tf_status *st);

#endif
