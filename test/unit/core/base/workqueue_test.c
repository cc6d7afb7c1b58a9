/* workqueue_test.c: the inter-op work queue (lib/core/base/workqueue.h). One
 * thread runs tasks in exactly the order they were scheduled, also while
 * the ring grows past its first size with its head in the middle; 100,000
 * tasks over 4 threads each run exactly once (a counter per task id);
 * tasks schedule tasks (a binary tree of them); tf_workq_free runs what
 * was queued before it returns; tf_workq_is_worker is true only inside a
 * task of that queue. Every wait has a deadline. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/core/base/workqueue.h"
#include "test/unit/testutil.h"

#define DEADLINE_MS 10000

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Polls *c until it reaches want or DEADLINE_MS pass; returns its value. */
static long wait_count(_Atomic long *c, long want) {
  int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
  while (atomic_load(c) < want && tf__now_ns() < end) sleep_ms(1);
  return atomic_load(c);
}

/* ---- a gate: a task that blocks until the test opens it ------------------ */

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool open;
  bool entered;
  bool timed_out;
} gate;

static void gate_init(gate *g) {
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
}

static void gate_fini(gate *g) {
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
}

static void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->open = true;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* Waits (with a deadline) until the gate task has started. */
static bool gate_wait_entered(gate *g) {
  int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
  pthread_mutex_lock(&g->mu);
  while (!g->entered && tf__now_ns() < end) {
    pthread_mutex_unlock(&g->mu);
    sleep_ms(1);
    pthread_mutex_lock(&g->mu);
  }
  bool ok = g->entered;
  pthread_mutex_unlock(&g->mu);
  return ok;
}

static void gate_task(tf_task *t) {
  gate *g = t->p[0];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += DEADLINE_MS / 1000;
  pthread_mutex_lock(&g->mu);
  g->entered = true;
  while (!g->open && !g->timed_out) {
    if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) != 0 && !g->open) {
      g->timed_out = true;
    }
  }
  pthread_mutex_unlock(&g->mu);
}

static void schedule_gate(tf_workq *q, gate *g) {
  tf_task t = {.fn = gate_task, .p = {g}};
  tf_workq_schedule(q, &t);
}

/* ---- tasks that log their id in run order --------------------------------- */

typedef struct order_log {
  int64_t *ids;
  _Atomic long n;
} order_log;

/* Only ever run by a single worker thread: the log needs no lock. */
static void log_task(tf_task *t) {
  order_log *log = t->p[0];
  long k = atomic_load(&log->n);
  log->ids[k] = t->i[0];
  atomic_store(&log->n, k + 1);
}

static void schedule_log(tf_workq *q, order_log *log, int64_t id) {
  tf_task t = {.fn = log_task, .p = {log}, .i = {id, 0}};
  tf_workq_schedule(q, &t);
}

/* One thread: tasks run in the order they were scheduled, whether they
 * arrive while the worker is busy (held by a gate) or one by one. */
START_TEST(test_fifo_one_thread) {
  tf_workq *q = tf_workq_new(1, "fifo");
  ck_assert_int_eq(tf_workq_size(q), 1);
  order_log log = {.ids = tf__xcalloc(3000, sizeof(int64_t))};
  gate g;
  gate_init(&g);
  schedule_gate(q, &g);
  ck_assert(gate_wait_entered(&g));
  for (int i = 0; i < 2000; i++) schedule_log(q, &log, i);
  ck_assert_int_eq(atomic_load(&log.n), 0); /* the gate holds the only thread */
  gate_open(&g);
  ck_assert_int_eq(wait_count(&log.n, 2000), 2000);
  /* Then trickled in while the worker is mostly idle. */
  for (int i = 2000; i < 3000; i++) {
    schedule_log(q, &log, i);
    if (i % 100 == 0) sleep_ms(1);
  }
  ck_assert_int_eq(wait_count(&log.n, 3000), 3000);
  tf_workq_free(q);
  ck_assert(!g.timed_out);
  for (int i = 0; i < 3000; i++) {
    if (log.ids[i] != i) ck_abort_msg("position %d ran task %lld", i, (long long)log.ids[i]);
  }
  gate_fini(&g);
  free(log.ids);
}
END_TEST

/* The ring starts small: 10,000 tasks queued behind a blocked worker,
 * with the ring's head moved off 0 first so the copy must unwrap it. */
START_TEST(test_ring_growth) {
  tf_workq *q = tf_workq_new(1, "grow");
  enum { PRE = 100, N = 10000 };
  order_log log = {.ids = tf__xcalloc(PRE + N, sizeof(int64_t))};
  for (int i = 0; i < PRE; i++) schedule_log(q, &log, i);
  ck_assert_int_eq(wait_count(&log.n, PRE), PRE);
  gate g;
  gate_init(&g);
  schedule_gate(q, &g);
  ck_assert(gate_wait_entered(&g));
  for (int i = PRE; i < PRE + N; i++) schedule_log(q, &log, i);
  ck_assert_int_eq(atomic_load(&log.n), PRE);
  gate_open(&g);
  ck_assert_int_eq(wait_count(&log.n, PRE + N), PRE + N);
  tf_workq_free(q);
  ck_assert(!g.timed_out);
  for (int i = 0; i < PRE + N; i++) {
    if (log.ids[i] != i) ck_abort_msg("position %d ran task %lld", i, (long long)log.ids[i]);
  }
  gate_fini(&g);
  free(log.ids);
}
END_TEST

/* ---- many tasks, many threads -------------------------------------------- */

typedef struct counts {
  _Atomic int *per_id;
  _Atomic long total;
  _Atomic long not_worker;
  tf_workq *q;
} counts;

static void count_task(tf_task *t) {
  counts *c = t->p[0];
  atomic_fetch_add(&c->per_id[t->i[0]], 1);
  if (!tf_workq_is_worker(c->q)) atomic_fetch_add(&c->not_worker, 1);
  atomic_fetch_add(&c->total, 1);
}

/* 100,000 tasks over 4 threads (scheduled from two threads at once): each
 * runs exactly once, on one of the queue's threads. */
typedef struct sched_arg {
  tf_workq *q;
  counts *c;
  int from, to;
} sched_arg;

static void *sched_main(void *p) {
  sched_arg *a = p;
  for (int i = a->from; i < a->to; i++) {
    tf_task t = {.fn = count_task, .p = {a->c}, .i = {i, 0}};
    tf_workq_schedule(a->q, &t);
  }
  return NULL;
}

START_TEST(test_many_tasks_exactly_once) {
  enum { N = 100000 };
  tf_workq *q = tf_workq_new(4, "many");
  ck_assert_int_eq(tf_workq_size(q), 4);
  counts c = {.per_id = tf__xcalloc(N, sizeof(_Atomic int)), .q = q};
  pthread_t th;
  sched_arg half = {q, &c, N / 2, N};
  pthread_create(&th, NULL, sched_main, &half);
  sched_arg mine = {q, &c, 0, N / 2};
  sched_main(&mine);
  pthread_join(th, NULL);
  ck_assert_int_eq(wait_count(&c.total, N), N);
  tf_workq_free(q);
  ck_assert_int_eq(atomic_load(&c.total), N);
  ck_assert_int_eq(atomic_load(&c.not_worker), 0);
  for (int i = 0; i < N; i++) {
    int k = atomic_load(&c.per_id[i]);
    if (k != 1) ck_abort_msg("task %d ran %d times", i, k);
  }
  free(c.per_id);
}
END_TEST

/* ---- tasks scheduling tasks ---------------------------------------------- */

typedef struct tree {
  tf_workq *q;
  int depth;
  _Atomic long ran;
  _Atomic int *per_node; /* heap numbering: node k has children 2k+1, 2k+2 */
} tree;

static void tree_task(tf_task *t) {
  tree *tr = t->p[0];
  int64_t node = t->i[0], depth = t->i[1];
  atomic_fetch_add(&tr->per_node[node], 1);
  if (depth < tr->depth) {
    for (int k = 1; k <= 2; k++) {
      tf_task c = {.fn = tree_task, .p = {tr}, .i = {2 * node + k, depth + 1}};
      tf_workq_schedule(tr->q, &c);
    }
  }
  atomic_fetch_add(&tr->ran, 1);
}

START_TEST(test_tasks_schedule_tasks) {
  enum { DEPTH = 13, NODES = (1 << (DEPTH + 1)) - 1 };
  for (int threads = 1; threads <= 4; threads *= 2) {
    tree tr = {.depth = DEPTH, .per_node = tf__xcalloc(NODES, sizeof(_Atomic int))};
    tr.q = tf_workq_new(threads, "tree");
    tf_task root = {.fn = tree_task, .p = {&tr}, .i = {0, 0}};
    tf_workq_schedule(tr.q, &root);
    ck_assert_int_eq(wait_count(&tr.ran, NODES), NODES);
    tf_workq_free(tr.q);
    for (int i = 0; i < NODES; i++) {
      int k = atomic_load(&tr.per_node[i]);
      if (k != 1) ck_abort_msg("%d threads: tree node %d ran %d times", threads, i, k);
    }
    free(tr.per_node);
  }
}
END_TEST

/* ---- free ----------------------------------------------------------------- */

/* Tasks queued behind a slow one (it sleeps 30 ms) still run before
 * tf_workq_free returns: free drains, it does not drop. */
static void slow_task(tf_task *t) {
  sleep_ms(30);
  atomic_fetch_add((_Atomic long *)t->p[0], 1);
}

static void add_task(tf_task *t) { atomic_fetch_add((_Atomic long *)t->p[0], 1); }

START_TEST(test_free_runs_queued) {
  int threads[] = {1, 3};
  for (int k = 0; k < 2; k++) {
    _Atomic long n = 0;
    tf_workq *q = tf_workq_new(threads[k], "drain");
    for (int i = 0; i < threads[k]; i++) {
      tf_task s = {.fn = slow_task, .p = {(void *)&n}};
      tf_workq_schedule(q, &s);
    }
    for (int i = 0; i < 5000; i++) {
      tf_task t = {.fn = add_task, .p = {(void *)&n}};
      tf_workq_schedule(q, &t);
    }
    ck_assert_int_lt(atomic_load(&n), 5000 + threads[k]);
    tf_workq_free(q);
    ck_assert_int_eq(atomic_load(&n), 5000 + threads[k]);
  }
  /* A tree scheduled just before free: the children its tasks add while
   * free waits are run too, since a worker stops only on an empty ring. */
  enum { DEPTH = 9, NODES = (1 << (DEPTH + 1)) - 1 };
  tree tr = {.depth = DEPTH, .per_node = tf__xcalloc(NODES, sizeof(_Atomic int))};
  tr.q = tf_workq_new(2, "tree");
  tf_task root = {.fn = tree_task, .p = {&tr}, .i = {0, 0}};
  tf_workq_schedule(tr.q, &root);
  tf_workq_free(tr.q);
  ck_assert_int_eq(atomic_load(&tr.ran), NODES);
  free(tr.per_node);
  tf_workq_free(NULL); /* NULL-safe */
  ck_assert_int_eq(tf_workq_size(NULL), 0);
}
END_TEST

/* ---- is_worker ------------------------------------------------------------ */

typedef struct who {
  tf_workq *self, *other;
  _Atomic int in_self, in_other, done;
} who;

static void who_task(tf_task *t) {
  who *w = t->p[0];
  atomic_store(&w->in_self, tf_workq_is_worker(w->self) ? 1 : 0);
  atomic_store(&w->in_other, tf_workq_is_worker(w->other) ? 1 : 0);
  atomic_store(&w->done, 1);
}

START_TEST(test_is_worker) {
  tf_workq *a = tf_workq_new(2, "a"), *b = tf_workq_new(1, "b");
  ck_assert(!tf_workq_is_worker(a));
  ck_assert(!tf_workq_is_worker(b));
  ck_assert(!tf_workq_is_worker(NULL));
  for (int rep = 0; rep < 4; rep++) {
    who w = {.self = a, .other = b, .in_self = -1, .in_other = -1};
    tf_task t = {.fn = who_task, .p = {&w}};
    tf_workq_schedule(a, &t);
    int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
    while (!atomic_load(&w.done) && tf__now_ns() < end) sleep_ms(1);
    ck_assert_int_eq(atomic_load(&w.done), 1);
    ck_assert_int_eq(atomic_load(&w.in_self), 1);
    ck_assert_int_eq(atomic_load(&w.in_other), 0);
  }
  ck_assert(!tf_workq_is_worker(a));
  tf_workq_free(a);
  tf_workq_free(b);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("workqueue");
  TCase *tc = tcase_create("workqueue");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fifo_one_thread);
  tcase_add_test(tc, test_ring_growth);
  tcase_add_test(tc, test_many_tasks_exactly_once);
  tcase_add_test(tc, test_tasks_schedule_tasks);
  tcase_add_test(tc, test_free_runs_queued);
  tcase_add_test(tc, test_is_worker);
  suite_add_tcase(s, tc);
  return s;
}
