/* refcount_test.c: the reference count of lib/ (lib/core/base/refcount.h).
 * init sets the count; get and drop move it by one and drop says which
 * drop was the last; put calls release exactly once, on the last
 * reference, after every other holder's writes (8 threads hammering
 * get/put on one count, over many objects, with the release checking that
 * every thread had finished with the object, from plain writes that only
 * the count's acquire/release ordering publishes: ThreadSanitizer reports
 * them if it does not); taking a reference from
 * zero, dropping below zero and init with no reference panic (SIGABRT). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lib/core/base/refcount.h"
#include "test/unit/testutil.h"

#define N_THREADS 8
#define N_OBJS 2000
#define HAMMER 64 /* get/put pairs per thread and object */

typedef struct obj {
  tf__refcount refs;
  int released;              /* written only by release */
  bool finished[N_THREADS];  /* thread i is done with the object (plain
                                writes, published by the put after them) */
} obj;

typedef struct hammer_arg {
  obj *objs;
  int me;
} hammer_arg;

static _Atomic int n_release;

static void count_release(void *arg) {
  int *calls = arg;
  (*calls)++;
}

START_TEST(test_init_get_drop_put) {
  tf__refcount c;
  tf__ref_init(&c, 3);
  ck_assert_int_eq(tf__ref_count(&c), 3);
  tf__ref_get(&c);
  ck_assert_int_eq(tf__ref_count(&c), 4);
  ck_assert(!tf__ref_drop(&c));
  ck_assert(!tf__ref_drop(&c));
  ck_assert_int_eq(tf__ref_count(&c), 2);
  int calls = 0;
  tf__ref_put(&c, count_release, &calls);
  ck_assert_int_eq(calls, 0);
  ck_assert_int_eq(tf__ref_count(&c), 1);
  tf__ref_put(&c, count_release, &calls);
  ck_assert_int_eq(calls, 1);
  ck_assert_int_eq(tf__ref_count(&c), 0);
  /* drop reports the last reference instead of releasing */
  tf__ref_init(&c, 1);
  ck_assert(tf__ref_drop(&c));
  ck_assert_int_eq(tf__ref_count(&c), 0);
}
END_TEST

/* Runs on the last put of an object: every thread must have finished
 * with it, and it must not have been released before. */
static void obj_release(void *arg) {
  obj *o = arg;
  for (int i = 0; i < N_THREADS; i++) {
    if (!o->finished[i]) abort();
  }
  if (o->released != 0) abort();
  o->released++;
  atomic_fetch_add(&n_release, 1);
}

static void *hammer(void *arg) {
  hammer_arg *a = arg;
  for (int i = 0; i < N_OBJS; i++) {
    obj *o = &a->objs[i];
    for (int k = 0; k < HAMMER; k++) {
      tf__ref_get(&o->refs);
      tf__ref_put(&o->refs, obj_release, o);
    }
    o->finished[a->me] = true;
    tf__ref_put(&o->refs, obj_release, o); /* this thread's own reference */
  }
  return NULL;
}

START_TEST(test_release_once_under_threads) {
  obj *objs = calloc(N_OBJS, sizeof *objs);
  ck_assert_ptr_nonnull(objs);
  for (int i = 0; i < N_OBJS; i++) {
    tf__ref_init(&objs[i].refs, N_THREADS);
  }
  atomic_store(&n_release, 0);
  pthread_t th[N_THREADS];
  hammer_arg args[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (hammer_arg){objs, i};
    ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(atomic_load(&n_release), N_OBJS);
  for (int i = 0; i < N_OBJS; i++) {
    ck_assert_int_eq(objs[i].released, 1);
    ck_assert_int_eq(tf__ref_count(&objs[i].refs), 0);
  }
  free(objs);
}
END_TEST

/* A heap object whose release frees it, put by 8 threads at once: ASan
 * reports a double free or a use after free if put releases early or
 * twice. */
typedef struct heap_obj {
  tf__refcount refs;
  pthread_barrier_t *go;
} heap_obj;

static void heap_release(void *arg) {
  free(arg);
  atomic_fetch_add(&n_release, 1);
}

static void *race_put(void *arg) {
  heap_obj *o = arg;
  pthread_barrier_wait(o->go);
  tf__ref_get(&o->refs);
  tf__ref_put(&o->refs, heap_release, o);
  tf__ref_put(&o->refs, heap_release, o);
  return NULL;
}

START_TEST(test_racing_last_puts_free_once) {
  atomic_store(&n_release, 0);
  pthread_barrier_t go;
  enum { ROUNDS = 200 };
  for (int r = 0; r < ROUNDS; r++) {
    pthread_barrier_init(&go, NULL, N_THREADS);
    heap_obj *o = malloc(sizeof *o);
    ck_assert_ptr_nonnull(o);
    tf__ref_init(&o->refs, N_THREADS);
    o->go = &go;
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
      ck_assert_int_eq(pthread_create(&th[i], NULL, race_put, o), 0);
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    ck_assert_int_eq(atomic_load(&n_release), r + 1);
  }
}
END_TEST

START_TEST(test_put_below_zero_panics) {
  tf__refcount c;
  int calls = 0;
  tf__ref_init(&c, 1);
  tf__ref_put(&c, count_release, &calls);
  ck_assert_int_eq(calls, 1);
  tf__ref_put(&c, count_release, &calls); /* released already: panics */
}
END_TEST

START_TEST(test_get_from_zero_panics) {
  tf__refcount c;
  tf__ref_init(&c, 1);
  ck_assert(tf__ref_drop(&c));
  tf__ref_get(&c); /* a use after release: panics */
}
END_TEST

START_TEST(test_init_zero_panics) {
  tf__refcount c;
  tf__ref_init(&c, 0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("refcount");
  TCase *tc = tcase_create("refcount");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_init_get_drop_put);
  tcase_add_test(tc, test_release_once_under_threads);
  tcase_add_test(tc, test_racing_last_puts_free_once);
  tcase_add_test_raise_signal(tc, test_put_below_zero_panics, SIGABRT);
  tcase_add_test_raise_signal(tc, test_get_from_zero_panics, SIGABRT);
  tcase_add_test_raise_signal(tc, test_init_zero_panics, SIGABRT);
  suite_add_tcase(s, tc);
  return s;
}
