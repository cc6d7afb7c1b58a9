/* timer_test.c: the process-wide timer (lib/core/base/timer.h). A timer
 * fires once, never before its deadline and soon after it; timers armed in
 * random order fire in deadline order; a stopped timer never fires (stop is
 * true) and stopping a fired one is false; a deadline already passed fires
 * at once; a callback may arm another timer and stop its own (false); and
 * a stress run of threads arming and stopping random timers checks that
 * stop returning true means "never fires" and false means "fired once". */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "lib/core/base/timer.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

#define MS 1000000LL

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- a recording callback ------------------------------------------------- */

typedef struct rec {
  tf_timer_entry e;
  _Atomic int calls;
  _Atomic int64_t at_ns;
  _Atomic int order;       /* 1 + the number of callbacks before this one */
} rec;

static _Atomic int fired_total;

static void rec_cb(void *arg) {
  rec *r = arg;
  atomic_store(&r->at_ns, tf__now_ns());
  atomic_store(&r->order, atomic_fetch_add(&fired_total, 1) + 1);
  atomic_fetch_add(&r->calls, 1);
}

static void rec_init(rec *r) {
  tf__timer_entry_init(&r->e);
  atomic_init(&r->calls, 0);
  atomic_init(&r->at_ns, 0);
  atomic_init(&r->order, 0);
}

/* Waits (10 s at most) until r has fired. */
static void wait_fired(rec *r) {
  int64_t end = tf__now_ns() + 10000 * MS;
  while (atomic_load(&r->calls) == 0 && tf__now_ns() < end) sleep_ms(1);
  ck_assert_int_eq(atomic_load(&r->calls), 1);
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_fires_once_on_time) {
  rec r;
  rec_init(&r);
  int64_t t0 = tf__now_ns(), when = t0 + 50 * MS;
  tf__timer_start(&r.e, when, rec_cb, &r);
  ck_assert_int_eq(tf__timer_pending(), 1);
  wait_fired(&r);
  int64_t late_ms = (atomic_load(&r.at_ns) - when) / MS;
  ck_assert_msg(atomic_load(&r.at_ns) >= when, "fired %lld ns early",
                (long long)(when - atomic_load(&r.at_ns)));
  ck_assert_msg(late_ms < 100, "fired %lld ms late", (long long)late_ms);
  sleep_ms(30);
  ck_assert_int_eq(atomic_load(&r.calls), 1);
  ck_assert_int_eq(r.e.heap_pos, -1);
  ck_assert(!tf__timer_stop(&r.e)); /* fired: false */
  ck_assert_int_eq(tf__timer_pending(), 0);
}
END_TEST

START_TEST(test_fires_in_order) {
  enum { N = 200 };
  rec *r = tf__xcalloc(N, sizeof *r);
  int64_t base = tf__now_ns() + 30 * MS;
  atomic_store(&fired_total, 0);
  /* Deadlines 0.5 ms apart, armed in a random order. */
  int perm[N];
  for (int i = 0; i < N; i++) perm[i] = i;
  for (int i = N - 1; i > 0; i--) {
    int j = (int)(tt_rand_u64() % (uint64_t)(i + 1));
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int k = 0; k < N; k++) {
    int i = perm[k];
    rec_init(&r[i]);
    tf__timer_start(&r[i].e, base + i * (MS / 2), rec_cb, &r[i]);
  }
  for (int i = 0; i < N; i++) wait_fired(&r[i]);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(atomic_load(&r[i].order), i + 1);
    ck_assert(atomic_load(&r[i].at_ns) >= base + i * (MS / 2));
  }
  ck_assert_int_eq(tf__timer_pending(), 0);
  free(r);
}
END_TEST

START_TEST(test_stop_before_firing) {
  rec a, b, c;
  rec_init(&a);
  rec_init(&b);
  rec_init(&c);
  int64_t now = tf__now_ns();
  tf__timer_start(&a.e, now + 40 * MS, rec_cb, &a);
  tf__timer_start(&b.e, now + 20 * MS, rec_cb, &b); /* the earliest */
  tf__timer_start(&c.e, now + 60 * MS, rec_cb, &c);
  ck_assert_int_eq(tf__timer_pending(), 3);
  ck_assert(tf__timer_stop(&b.e)); /* the head of the heap */
  ck_assert(tf__timer_stop(&c.e)); /* the tail */
  ck_assert(!tf__timer_stop(&c.e)); /* twice: no longer armed */
  ck_assert_int_eq(tf__timer_pending(), 1);
  wait_fired(&a);
  sleep_ms(80);
  ck_assert_int_eq(atomic_load(&b.calls), 0);
  ck_assert_int_eq(atomic_load(&c.calls), 0);
  /* A stopped entry may be armed again. */
  tf__timer_start(&b.e, tf__now_ns() + MS, rec_cb, &b);
  wait_fired(&b);
}
END_TEST

START_TEST(test_past_deadline_fires_at_once) {
  rec r;
  rec_init(&r);
  int64_t t0 = tf__now_ns();
  tf__timer_start(&r.e, t0 - 1000 * MS, rec_cb, &r);
  wait_fired(&r);
  ck_assert_msg((atomic_load(&r.at_ns) - t0) / MS < 100, "took %lld ms",
                (long long)((atomic_load(&r.at_ns) - t0) / MS));
}
END_TEST

/* A callback that stops itself (false: it is running) and arms another. */
typedef struct chain {
  tf_timer_entry self, next;
  _Atomic int stop_result; /* 0 unset, 1 true, 2 false */
  rec after;
} chain;

static void chain_cb(void *arg) {
  chain *c = arg;
  atomic_store(&c->stop_result, tf__timer_stop(&c->self) ? 1 : 2);
  tf__timer_start(&c->after.e, tf__now_ns() + 5 * MS, rec_cb, &c->after);
}

START_TEST(test_callback_rearms) {
  chain c;
  tf__timer_entry_init(&c.self);
  atomic_init(&c.stop_result, 0);
  rec_init(&c.after);
  tf__timer_start(&c.self, tf__now_ns() + 5 * MS, chain_cb, &c);
  wait_fired(&c.after);
  ck_assert_int_eq(atomic_load(&c.stop_result), 2);
}
END_TEST

/* ---- stress ---------------------------------------------------------------- */

#define STRESS_THREADS 4
#define STRESS_ROUNDS 3000

/* splitmix64 on a thread's own state (tt_rand_u64 is not thread-safe). */
static uint64_t next_rand(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef struct stress_arg {
  uint64_t seed;
  rec *recs;        /* STRESS_ROUNDS */
  bool *stopped;    /* what stop returned for each */
} stress_arg;

static void *stress_main(void *p) {
  stress_arg *a = p;
  for (int i = 0; i < STRESS_ROUNDS; i++) {
    rec *r = &a->recs[i];
    rec_init(r);
    /* Deadlines from already passed to 2 ms ahead: stops race with firing. */
    int64_t off = (int64_t)(next_rand(&a->seed) % 2200000) - 200000;
    tf__timer_start(&r->e, tf__now_ns() + off, rec_cb, r);
    if (next_rand(&a->seed) % 4 == 0) sched_yield();
    a->stopped[i] = tf__timer_stop(&r->e);
  }
  return NULL;
}

START_TEST(test_stress_start_stop) {
  pthread_t th[STRESS_THREADS];
  stress_arg args[STRESS_THREADS];
  for (int i = 0; i < STRESS_THREADS; i++) {
    args[i] = (stress_arg){tt_rand_u64(), tf__xcalloc(STRESS_ROUNDS, sizeof(rec)),
                           tf__xcalloc(STRESS_ROUNDS, sizeof(bool))};
    pthread_create(&th[i], NULL, stress_main, &args[i]);
  }
  for (int i = 0; i < STRESS_THREADS; i++) pthread_join(th[i], NULL);
  /* Every timer that stop could not disarm fires exactly once; the others
   * never do (the wait covers the latest deadline, 2 ms ahead). */
  int fired = 0, stopped = 0;
  for (int i = 0; i < STRESS_THREADS; i++) {
    for (int k = 0; k < STRESS_ROUNDS; k++) {
      rec *r = &args[i].recs[k];
      if (args[i].stopped[k]) {
        stopped++;
      } else {
        wait_fired(r);
        fired++;
      }
    }
  }
  sleep_ms(20);
  for (int i = 0; i < STRESS_THREADS; i++) {
    for (int k = 0; k < STRESS_ROUNDS; k++) {
      ck_assert_int_eq(atomic_load(&args[i].recs[k].calls), args[i].stopped[k] ? 0 : 1);
    }
    free(args[i].recs);
    free(args[i].stopped);
  }
  ck_assert_int_eq(tf__timer_pending(), 0);
  ck_assert_msg(fired > 0 && stopped > 0, "fired %d, stopped %d: the race was not "
                "exercised", fired, stopped);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("timer");
  TCase *tc = tcase_create("timer");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fires_once_on_time);
  tcase_add_test(tc, test_fires_in_order);
  tcase_add_test(tc, test_stop_before_firing);
  tcase_add_test(tc, test_past_deadline_fires_at_once);
  tcase_add_test(tc, test_callback_rearms);
  tcase_add_test(tc, test_stress_start_stop);
  suite_add_tcase(s, tc);
  return s;
}
