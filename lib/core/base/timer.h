/* timer.h: callbacks at deadlines, run by one process-wide timer thread.
 *
 * The executor arms one timer per step that has a deadline, so that a step
 * whose threads are all waiting (on a queue, a _Recv, an asynchronous
 * kernel) or that no thread is waiting for (tf_executor_run_async) is still
 * cancelled at its deadline. Entries are caller-allocated and kept in a
 * binary heap ordered by deadline, so arming and disarming are O(log n)
 * under one mutex and allocate nothing once the heap has grown. The thread
 * starts on first use (pthread_once) and lives as long as the process.
 *
 * Callbacks run one at a time on the timer thread, without the timer's
 * lock: they may arm and disarm timers (their own included) but should be
 * short, since a slow callback delays the next deadline. */
#ifndef TF_CORE_BASE_TIMER_H
#define TF_CORE_BASE_TIMER_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*tf_timer_fn)(void *arg);

/* One armed deadline. Its fields belong to the timer while armed. */
typedef struct tf_timer_entry {
  int64_t when_ns;   /* CLOCK_MONOTONIC (tf__now_ns) */
  tf_timer_fn fn;
  void *arg;
  int32_t heap_pos;  /* index in the heap; -1 when not armed */
} tf_timer_entry;

/* Arms e: fn(arg) runs once on the timer thread at when_ns or soon after
 * (at once when when_ns has passed). e must not be armed already, and it
 * must stay valid until fn has been called or tf__timer_stop(e) returned
 * true. Aborts if the timer thread cannot be created (process setup). */
void tf__timer_start(tf_timer_entry *e, int64_t when_ns, tf_timer_fn fn,
                     void *arg);

/* Disarms e without waiting. True: fn will never run, and e may be reused
 * or freed. False: fn has been called or is being called (on the timer
 * thread; the caller coordinates with it, e.g. with a reference that fn
 * drops). Never started (heap_pos -1 from tf__timer_entry_init) is false. */
bool tf__timer_stop(tf_timer_entry *e);

/* Marks e as not armed; call once before its first start. */
static inline void tf__timer_entry_init(tf_timer_entry *e) {
  e->when_ns = 0;
  e->fn = 0;
  e->arg = 0;
  e->heap_pos = -1;
}

/* Entries armed now, for tests. */
int tf__timer_pending(void);

#endif
