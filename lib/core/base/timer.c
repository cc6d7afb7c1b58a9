/* timer.c: the process-wide timer thread and its heap of deadlines.
 *
 * The heap is an array of entry pointers ordered by when_ns (the earliest
 * at index 0); each entry records its index so that stop removes it in
 * O(log n). The thread sleeps on a CLOCK_MONOTONIC condition variable
 * until the earliest deadline, pops every entry that is due and calls it
 * with the lock released; an entry is out of the heap (heap_pos -1) before
 * its callback starts, which is what tf__timer_stop's false means. */
#include "lib/core/base/timer.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"

typedef struct timer_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tf_timer_entry **heap;
  int n, cap;
} timer_state;

static timer_state timers = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t timers_once = PTHREAD_ONCE_INIT;

static bool earlier(const tf_timer_entry *a, const tf_timer_entry *b) {
  return a->when_ns < b->when_ns;
}

static void place(int i, tf_timer_entry *e) {
  timers.heap[i] = e;
  e->heap_pos = i;
}

static void sift_up(int i) {
  tf_timer_entry *e = timers.heap[i];
  while (i > 0) {
    int parent = (i - 1) / 2;
    if (!earlier(e, timers.heap[parent])) break;
    place(i, timers.heap[parent]);
    i = parent;
  }
  place(i, e);
}

static void sift_down(int i) {
  tf_timer_entry *e = timers.heap[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= timers.n) break;
    if (c + 1 < timers.n && earlier(timers.heap[c + 1], timers.heap[c])) c++;
    if (!earlier(timers.heap[c], e)) break;
    place(i, timers.heap[c]);
    i = c;
  }
  place(i, e);
}

/* Takes the entry at index i out of the heap (lock held). */
static void heap_remove(int i) {
  TF_ASSERT(i >= 0 && i < timers.n);
  tf_timer_entry *gone = timers.heap[i];
  tf_timer_entry *last = timers.heap[--timers.n];
  gone->heap_pos = -1;
  if (i == timers.n) return;
  place(i, last);
  sift_up(i);
  sift_down(last->heap_pos);
}

static void *timer_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&timers.mu);
  for (;;) {
    if (timers.n == 0) {
      pthread_cond_wait(&timers.cv, &timers.mu);
      continue;
    }
    tf_timer_entry *e = timers.heap[0];
    if (e->when_ns > tf__now_ns()) {
      struct timespec ts = {(time_t)(e->when_ns / 1000000000),
                            (long)(e->when_ns % 1000000000)};
      pthread_cond_timedwait(&timers.cv, &timers.mu, &ts);
      continue; /* the earliest entry may have changed */
    }
    heap_remove(0);
    tf_timer_fn fn = e->fn;
    void *arg = e->arg;
    pthread_mutex_unlock(&timers.mu);
    fn(arg); /* e may be gone from here on */
    pthread_mutex_lock(&timers.mu);
  }
  return NULL;
}

static void start_thread(void) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&timers.cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&th, &at, timer_main, NULL);
  pthread_attr_destroy(&at);
  if (rc != 0) TF_PANIC("cannot start the timer thread: %s", strerror(rc));
}

void tf__timer_start(tf_timer_entry *e, int64_t when_ns, tf_timer_fn fn,
                     void *arg) {
  TF_ASSERT(fn != NULL);
  pthread_once(&timers_once, start_thread);
  pthread_mutex_lock(&timers.mu);
  TF_ASSERT(e->heap_pos == -1);
  e->when_ns = when_ns;
  e->fn = fn;
  e->arg = arg;
  if (timers.n == timers.cap) {
    timers.cap = timers.cap ? timers.cap * 2 : 64;
    timers.heap = tf__xrealloc(timers.heap, (size_t)timers.cap * sizeof *timers.heap);
  }
  timers.heap[timers.n] = e;
  e->heap_pos = timers.n++;
  sift_up(e->heap_pos);
  /* Only a new earliest deadline shortens the thread's sleep. */
  if (e->heap_pos == 0) pthread_cond_signal(&timers.cv);
  pthread_mutex_unlock(&timers.mu);
}

bool tf__timer_stop(tf_timer_entry *e) {
  pthread_mutex_lock(&timers.mu);
  bool armed = e->heap_pos >= 0;
  if (armed) {
    TF_ASSERT(e->heap_pos < timers.n && timers.heap[e->heap_pos] == e);
    heap_remove(e->heap_pos);
  }
  pthread_mutex_unlock(&timers.mu);
  return armed;
}

int tf__timer_pending(void) {
  pthread_mutex_lock(&timers.mu);
  int n = timers.n;
  pthread_mutex_unlock(&timers.mu);
  return n;
}
