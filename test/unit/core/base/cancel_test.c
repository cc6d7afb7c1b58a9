/* cancel_test.c: a step's cancellation (lib/core/base/cancel.h). Tokens are
 * distinct and > 0; a deregistered callback never runs; start runs every
 * registered callback exactly once, in the starting thread, with the
 * reason already readable; the first start wins; registering after start
 * returns 0; a deregister racing a running callback (it sleeps 100 ms)
 * returns only after the callback has finished; a callback may deregister
 * itself and others without deadlock; and a stress run of threads
 * registering and deregistering while another starts checks that a
 * deregister returning true means "never ran" and false means "has run". */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/cancel.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

#define DEADLINE_MS 10000

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- a recording callback ------------------------------------------------- */

typedef struct rec {
  tf_cancel *c;
  _Atomic int calls;
  tf_code seen_code;      /* tf_cancel_reason from inside the callback */
  char seen_msg[64];
  bool seen_cancelled;
  pthread_t thread;
} rec;

static void rec_cb(void *arg) {
  rec *r = arg;
  tf_status st;
  r->seen_code = tf_cancel_reason(r->c, &st);
  snprintf(r->seen_msg, sizeof r->seen_msg, "%.63s", st.msg);
  r->seen_cancelled = tf_cancel_is_cancelled(r->c);
  r->thread = pthread_self();
  atomic_fetch_add(&r->calls, 1);
}

START_TEST(test_register_deregister) {
  tf_cancel c;
  tf_cancel_init(&c);
  rec r[20];
  uint64_t tok[20];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 20; i++) {
    r[i].c = &c;
    tok[i] = tf_cancel_register(&c, rec_cb, &r[i]);
    ck_assert_uint_gt(tok[i], 0);
    for (int j = 0; j < i; j++) ck_assert_uint_ne(tok[i], tok[j]);
  }
  /* Every third one leaves again; twice is harmless. */
  for (int i = 0; i < 20; i += 3) {
    ck_assert(tf_cancel_deregister(&c, tok[i]));
    ck_assert(tf_cancel_deregister(&c, tok[i]));
  }
  ck_assert(!tf_cancel_deregister(&c, 0));
  ck_assert(!tf_cancel_is_cancelled(&c));
  ck_assert(tf_cancel_start(&c, TF_CANCELLED, "stop"));
  for (int i = 0; i < 20; i++) {
    ck_assert_int_eq(atomic_load(&r[i].calls), i % 3 == 0 ? 0 : 1);
  }
  /* After the callbacks ran: deregister says "ran or will not run" (false). */
  ck_assert(!tf_cancel_deregister(&c, tok[1]));
  tf_cancel_fini(&c);
}
END_TEST

/* Each callback runs once, in the starting thread, and already sees the
 * reason; a second start changes nothing. */
START_TEST(test_start_runs_each_once) {
  tf_cancel c;
  tf_cancel_init(&c);
  tf_status st;
  ck_assert_int_eq(tf_cancel_reason(&c, &st), TF_OK);
  ck_assert_str_eq(st.msg, "");
  ck_assert_int_eq(tf_cancel_reason(&c, NULL), TF_OK);
  enum { N = 100 }; /* beyond the list's first capacity */
  rec *r = tf__xcalloc(N, sizeof *r);
  for (int i = 0; i < N; i++) {
    r[i].c = &c;
    ck_assert_uint_gt(tf_cancel_register(&c, rec_cb, &r[i]), 0);
  }
  ck_assert(tf_cancel_start(&c, TF_DEADLINE_EXCEEDED, "too slow"));
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(atomic_load(&r[i].calls), 1);
    ck_assert_int_eq(r[i].seen_code, TF_DEADLINE_EXCEEDED);
    ck_assert_str_eq(r[i].seen_msg, "too slow");
    ck_assert(r[i].seen_cancelled);
    ck_assert(pthread_equal(r[i].thread, pthread_self()));
  }
  /* The first start wins. */
  ck_assert(!tf_cancel_start(&c, TF_CANCELLED, "again"));
  ck_assert_int_eq(tf_cancel_reason(&c, &st), TF_DEADLINE_EXCEEDED);
  ck_assert_str_eq(st.msg, "too slow");
  for (int i = 0; i < N; i++) ck_assert_int_eq(atomic_load(&r[i].calls), 1);
  /* Too late to register: 0, and nothing will run. */
  rec late = {.c = &c};
  ck_assert_uint_eq(tf_cancel_register(&c, rec_cb, &late), 0);
  ck_assert(tf_cancel_is_cancelled(&c));
  ck_assert_int_eq(atomic_load(&late.calls), 0);
  free(r);
  tf_cancel_fini(&c);
}
END_TEST

/* A NULL message and an error code as the reason. */
START_TEST(test_reason) {
  tf_cancel c;
  tf_cancel_init(&c);
  ck_assert(tf_cancel_start(&c, TF_INVALID_ARGUMENT, NULL));
  tf_status st;
  ck_assert_int_eq(tf_cancel_reason(&c, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "");
  tf_cancel_fini(&c);
  tf_cancel_init(&c);
  ck_assert(tf_cancel_start(&c, TF_ABORTED, "node 'x' (Foo): broke"));
  ck_assert_int_eq(tf_cancel_reason(&c, NULL), TF_ABORTED);
  ck_assert_int_eq(tf_cancel_reason(&c, &st), TF_ABORTED);
  ck_assert_str_eq(st.msg, "node 'x' (Foo): broke");
  tf_cancel_fini(&c);
}
END_TEST

/* ---- deregister racing a running callback --------------------------------- */

typedef struct slow {
  _Atomic int entered;
  _Atomic int finished;
} slow;

static void slow_cb(void *arg) {
  slow *s = arg;
  atomic_store(&s->entered, 1);
  sleep_ms(100);
  atomic_store(&s->finished, 1);
}

static void *start_main(void *arg) {
  tf_cancel_start(arg, TF_CANCELLED, "from another thread");
  return NULL;
}

START_TEST(test_deregister_waits_for_running_callback) {
  /* Retried (at most 3 times) in the unlikely case that this thread was
   * descheduled for the callback's whole 100 ms, so the race was missed. */
  bool raced = false;
  for (int attempt = 0; attempt < 3 && !raced; attempt++) {
    tf_cancel c;
    tf_cancel_init(&c);
    slow s = {0};
    uint64_t tok = tf_cancel_register(&c, slow_cb, &s);
    pthread_t th;
    pthread_create(&th, NULL, start_main, &c);
    int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
    while (!atomic_load(&s.entered) && tf__now_ns() < end) sleep_ms(1);
    ck_assert_int_eq(atomic_load(&s.entered), 1);
    raced = atomic_load(&s.finished) == 0;
    ck_assert(!tf_cancel_deregister(&c, tok));
    /* Returned only once the callback had returned (its object may go). */
    ck_assert_int_eq(atomic_load(&s.finished), 1);
    pthread_join(th, NULL);
    tf_cancel_fini(&c);
  }
  ck_assert_msg(raced, "never called deregister while the callback ran");
}
END_TEST

/* ---- deregister from inside a callback ------------------------------------ */

typedef struct selfdereg {
  tf_cancel *c;
  uint64_t own, other;
  int own_result, other_result;
  _Atomic int calls;
} selfdereg;

static void selfdereg_cb(void *arg) {
  selfdereg *d = arg;
  d->own_result = tf_cancel_deregister(d->c, d->own);
  d->other_result = tf_cancel_deregister(d->c, d->other);
  atomic_fetch_add(&d->calls, 1);
}

/* Runs in its own thread so a deadlock shows as a deadline, not a hang. */
static void *selfdereg_main(void *arg) {
  selfdereg *d = arg;
  tf_cancel_start(d->c, TF_CANCELLED, "x");
  return NULL;
}

START_TEST(test_deregister_inside_callback) {
  tf_cancel c;
  tf_cancel_init(&c);
  selfdereg a = {.c = &c, .own_result = -1, .other_result = -1};
  rec other = {.c = &c};
  a.own = tf_cancel_register(&c, selfdereg_cb, &a);
  a.other = tf_cancel_register(&c, rec_cb, &other);
  pthread_t th;
  pthread_create(&th, NULL, selfdereg_main, &a);
  int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
  while (atomic_load(&a.calls) == 0 && tf__now_ns() < end) sleep_ms(1);
  ck_assert_msg(atomic_load(&a.calls) == 1, "a deregister inside a callback deadlocked");
  pthread_join(th, NULL);
  ck_assert_int_eq(a.own_result, 0);
  ck_assert_int_eq(a.other_result, 0); /* cancellation had started */
  /* The other callback was taken with the list when start began: it ran. */
  ck_assert_int_eq(atomic_load(&other.calls), 1);
  tf_cancel_fini(&c);
}
END_TEST

/* ---- stress ---------------------------------------------------------------- */

typedef struct slot {
  _Atomic int ran;
} slot;

static void slot_cb(void *arg) {
  slot *s = arg;
  atomic_fetch_add(&s->ran, 1);
}

typedef struct stress_arg {
  tf_cancel *c;
  _Atomic int *go;
  _Atomic int *progress; /* iterations done by all threads */
  slot slots[400];
  bool kept[400];   /* deregister returned true: must never run */
  int bad;
  int n_true, n_false; /* deregister outcomes */
} stress_arg;

static void *stress_main(void *p) {
  stress_arg *a = p;
  while (!atomic_load(a->go)) sched_yield();
  for (int i = 0; i < 400; i++) {
    slot *s = &a->slots[i];
    uint64_t tok = tf_cancel_register(a->c, slot_cb, s);
    if (tok == 0) {
      a->kept[i] = true; /* not registered: must not run either */
      atomic_fetch_add(a->progress, 1);
      continue;
    }
    sched_yield(); /* hold the registration a moment */
    if (tf_cancel_deregister(a->c, tok)) {
      a->kept[i] = true;
      a->n_true++;
    } else {
      a->n_false++;
      if (atomic_load(&s->ran) != 1) a->bad++; /* false: it has run */
    }
    atomic_fetch_add(a->progress, 1);
  }
  return NULL;
}

START_TEST(test_stress) {
  tt_rng_reseed(tt_seed() ^ 0xca9ce1);
  enum { THREADS = 4, ROUNDS = 60 };
  stress_arg *args = tf__xcalloc(THREADS, sizeof *args);
  int n_true = 0, n_false = 0;
  for (int round = 0; round < ROUNDS; round++) {
    tf_cancel c;
    tf_cancel_init(&c);
    _Atomic int go = 0, progress = 0;
    memset(args, 0, THREADS * sizeof *args);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
      args[i].c = &c;
      args[i].go = &go;
      args[i].progress = &progress;
      pthread_create(&th[i], NULL, stress_main, &args[i]);
    }
    atomic_store(&go, 1);
    /* Start once the threads are a random way through (at most ~90%). */
    int target = (int)(tt_rand_u64() % (THREADS * 360));
    int64_t end = tf__now_ns() + (int64_t)DEADLINE_MS * 1000000;
    while (atomic_load(&progress) < target && tf__now_ns() < end) sched_yield();
    ck_assert(tf_cancel_start(&c, TF_CANCELLED, "stress"));
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
      ck_assert_int_eq(args[i].bad, 0);
      n_true += args[i].n_true;
      n_false += args[i].n_false;
      for (int j = 0; j < 400; j++) {
        int ran = atomic_load(&args[i].slots[j].ran);
        if (ran > 1 || (args[i].kept[j] && ran != 0)) {
          ck_abort_msg("round %d thread %d slot %d: ran %d, deregistered %d",
                       round, i, j, ran, args[i].kept[j]);
        }
      }
    }
    ck_assert(!tf_cancel_start(&c, TF_CANCELLED, "again"));
    tf_cancel_fini(&c);
  }
  /* Both outcomes happened: the race was real. */
  ck_assert_int_gt(n_true, 0);
  ck_assert_int_gt(n_false, 0);
  free(args);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cancel");
  TCase *tc = tcase_create("cancel");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_register_deregister);
  tcase_add_test(tc, test_start_runs_each_once);
  tcase_add_test(tc, test_reason);
  tcase_add_test(tc, test_deregister_waits_for_running_callback);
  tcase_add_test(tc, test_deregister_inside_callback);
  tcase_add_test(tc, test_stress);
  suite_add_tcase(s, tc);
  return s;
}
