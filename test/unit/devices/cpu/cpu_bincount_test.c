/* cpu_bincount_test.c: Bincount on CPU against a float64 reference loop
 * written here, on fresh random inputs (values past size, which TF
 * ignores; 2-D arr; every weights dtype; empty weights = counts), plus
 * size 0, empty arr and the errors for negative values, negative size and
 * mismatched weights.
 *
 * Tolerances: integer results must match exactly; float64 sums are formed
 * in the same order as the reference (exact); float32 within atol 1e-5
 * (at most ~40 values in [-1, 1] per bin, summed in float32). */
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg,
                needle);
}

static tf_tensor *ref_bincount(const tf_tensor *arr, int32_t size,
                               const tf_tensor *w) {
  tf_shape s = SHAPE(size);
  tf_tensor *o;
  tf_status st;
  ck_assert(tf_tensor_new_zeros(TF_FLOAT64, &s, &o, &st) == TF_OK);
  for (int64_t i = 0; i < arr->n; i++) {
    int64_t v = tf_tensor_get_i64(arr, i);
    if (v < size) {
      ((double *)o->data)[v] += w->n ? tf_tensor_get_f64(w, i) : 1.0;
    }
  }
  return o;
}

static tf_tensor *as_f64(const tf_tensor *t) {
  tf_tensor *o;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT64, &t->shape, &o, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ((double *)o->data)[i] = tf_tensor_get_f64(t, i);
  }
  return o;
}

START_TEST(test_bincount_random) {
  static const tf_dtype dts[4] = {TF_INT32, TF_INT64, TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 4; d++) {
    for (int weighted = 0; weighted <= 1; weighted++) {
      int32_t size = 7;
      tf_tensor *arr = tt_rand(TF_INT32, SHAPE(5, 8), 0, size + 2);
      tf_tensor *w = weighted ? tt_rand(dts[d], SHAPE(5, 8), -1, 1)
                              : tt_rand(dts[d], SHAPE(0), -1, 1);
      if (weighted && (dts[d] == TF_INT32 || dts[d] == TF_INT64)) {
        tf_tensor_unref(w);
        w = tt_rand(dts[d], SHAPE(5, 8), -1000, 1000);
      }
      tf_tensor *sz = tf_tensor_scalar_i32(size);
      tf_tensor *o = tt_run1("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL,
                             0);
      ck_assert_int_eq(o->dtype, dts[d]);
      tt_assert_shape(o, 1, (int64_t)size);
      tf_tensor *of = as_f64(o), *want = ref_bincount(arr, size, w);
      tt_assert_close(of, want, dts[d] == TF_FLOAT32 ? 1e-5 : 0, 0);
      tt_free((tf_tensor *[]){arr, w, sz, o, of, want}, 6);
    }
  }
}
END_TEST

START_TEST(test_bincount_hand) {
  /* arr [1, 1, 3, 9], size 4, no weights -> [0, 2, 0, 1] (9 ignored). */
  tf_tensor *arr = tt_tensor_i(TF_INT32, SHAPE(4), (int64_t[]){1, 1, 3, 9});
  tf_tensor *sz = tf_tensor_scalar_i32(4);
  tf_tensor *w = tt_tensor(TF_INT64, SHAPE(0), NULL);
  tf_tensor *o = tt_run1("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0);
  tf_tensor *want = tt_tensor_i(TF_INT64, SHAPE(4), (int64_t[]){0, 2, 0, 1});
  tt_assert_close(o, want, 0, 0);
  tt_free((tf_tensor *[]){sz, o, want}, 3);
  /* size 0: empty bins; empty arr: zeros. */
  sz = tf_tensor_scalar_i32(0);
  o = tt_run1("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0);
  tt_assert_shape(o, 1, (int64_t)0);
  tt_free((tf_tensor *[]){sz, o, arr}, 3);
  arr = tt_tensor_i(TF_INT32, SHAPE(0), NULL);
  sz = tf_tensor_scalar_i32(3);
  o = tt_run1("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0);
  want = tt_tensor_i(TF_INT64, SHAPE(3), (int64_t[]){0, 0, 0});
  tt_assert_close(o, want, 0, 0);
  tt_free((tf_tensor *[]){arr, sz, w, o, want}, 5);
}
END_TEST

START_TEST(test_bincount_errors) {
  tf_tensor *arr = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){1, -2, 0});
  tf_tensor *sz = tf_tensor_scalar_i32(4);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(0), NULL);
  assert_has(tt_run_fail("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "non-negative");
  tt_free((tf_tensor *[]){arr, sz}, 2);
  arr = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){1, 2, 0});
  sz = tf_tensor_scalar_i32(-1);
  assert_has(tt_run_fail("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "size (-1)");
  tt_free((tf_tensor *[]){sz, w}, 2);
  sz = tf_tensor_scalar_i32(3);
  w = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 2});
  assert_has(tt_run_fail("Bincount", (tf_tensor *[]){arr, sz, w}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "weights");
  tt_free((tf_tensor *[]){arr, sz, w}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_bincount");
  TCase *tc = tcase_create("bincount");
  tcase_add_test(tc, test_bincount_random);
  tcase_add_test(tc, test_bincount_hand);
  tcase_add_test(tc, test_bincount_errors);
  suite_add_tcase(s, tc);
  return s;
}
