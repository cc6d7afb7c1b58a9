/* cpu_device_test.c: the local CPU device: its name and type, its
 * allocator and pool, one instance even when first used from several
 * threads at once, and the pool size from TF_NUM_INTRAOP_THREADS. Each test
 * runs in its own process (Check's fork mode), so each sees a first use. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/framework/device.h"
#include "test/unit/testutil.h"

START_TEST(test_fields) {
  tf_device *d = tf_cpu_device();
  ck_assert_ptr_nonnull(d);
  ck_assert_ptr_eq(tf_cpu_device(), d);
  ck_assert_str_eq(d->name, "/job:localhost/replica:0/task:0/device:CPU:0");
  ck_assert_str_eq(d->type, TF_DEVICE_CPU);
  ck_assert_str_eq(d->type, "CPU");
  ck_assert_ptr_eq(d->alloc, tf_cpu_allocator());
  ck_assert_ptr_eq(d->pool, tf_threadpool_default());
  ck_assert_ptr_null(d->impl);
}
END_TEST

static void *first_use(void *arg) { return tf_cpu_device(); }

START_TEST(test_concurrent_first_use) {
  pthread_t th[6];
  void *got[6];
  for (int i = 0; i < 6; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, first_use, NULL), 0);
  for (int i = 0; i < 6; i++) pthread_join(th[i], &got[i]);
  for (int i = 0; i < 6; i++) {
    tf_device *d = got[i];
    ck_assert_ptr_eq(d, got[0]);
    ck_assert_ptr_nonnull(d->name);
    ck_assert_ptr_nonnull(d->pool);
  }
  ck_assert_ptr_eq(got[0], tf_cpu_device());
}
END_TEST

START_TEST(test_pool_size_from_env) {
  ck_assert_int_eq(setenv("TF_NUM_INTRAOP_THREADS", "3", 1), 0);
  tf_device *d = tf_cpu_device();
  ck_assert_int_eq(tf_threadpool_size(d->pool), 3);
}
END_TEST

START_TEST(test_pool_size_default) {
  ck_assert_int_eq(setenv("TF_NUM_INTRAOP_THREADS", "not-a-number", 1), 0);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  if (cpus > 256) cpus = 256;
  ck_assert_int_eq(tf_threadpool_size(tf_cpu_device()->pool), cpus);
}
END_TEST

START_TEST(test_pool_size_zero_means_default) {
  ck_assert_int_eq(setenv("TF_NUM_INTRAOP_THREADS", "0", 1), 0);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  ck_assert_int_eq(tf_threadpool_size(tf_cpu_device()->pool), cpus < 1 ? 1 : cpus);
}
END_TEST

typedef struct {
  atomic_llong sum;
} sum_arg;

static void sum_fn(void *arg, int64_t b, int64_t e) {
  sum_arg *s = arg;
  long long local = 0;
  for (int64_t i = b; i < e; i++) local += i;
  atomic_fetch_add(&s->sum, local);
}

/* The device's pool and allocator work together: a tensor from the device
 * allocator filled by a parallel loop. */
START_TEST(test_pool_and_allocator_work) {
  ck_assert_int_eq(setenv("TF_NUM_INTRAOP_THREADS", "4", 1), 0);
  tf_device *d = tf_cpu_device();
  sum_arg s;
  atomic_init(&s.sum, 0);
  const int64_t n = 1000000;
  tf_parallel_for(d->pool, n, 1000, sum_fn, &s);
  ck_assert_int_eq(atomic_load(&s.sum), n * (n - 1) / 2);
  tf_tensor *t = NULL;
  tf_shape shape = tf_shape_of(1, 1000);
  ck_assert_int_eq(tf_tensor_new_on(d->alloc, TF_FLOAT32, &shape, &t, NULL), TF_OK);
  ck_assert_ptr_eq(tf_tensor_allocator(t), d->alloc);
  tf_tensor_unref(t);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_device");
  TCase *tc = tcase_create("cpu_device");
  tcase_add_test(tc, test_fields);
  tcase_add_test(tc, test_concurrent_first_use);
  tcase_add_test(tc, test_pool_size_from_env);
  tcase_add_test(tc, test_pool_size_default);
  tcase_add_test(tc, test_pool_size_zero_means_default);
  tcase_add_test(tc, test_pool_and_allocator_work);
  suite_add_tcase(s, tc);
  return s;
}
