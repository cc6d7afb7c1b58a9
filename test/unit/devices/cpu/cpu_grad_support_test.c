/* cpu_grad_support_test.c: CPU kernels of StopGradient,
 * BroadcastGradientArgs (TensorFlow's own test cases), UnsortedSegmentSum
 * (against a plain loop, every dtype, the parallel path, errors) and
 * CheckNumerics (pass-through and each message). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

START_TEST(test_stop_gradient) {
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 4), -1, 1);
  tf_tensor *y = tt_run1("StopGradient", &x, 1, NULL, 0);
  tt_assert_close(y, x, 0, 0);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

/* ---- BroadcastGradientArgs ------------------------------------------------ */

static void bga(tf_dtype dt, const int64_t *s0, int n0, const int64_t *s1, int n1,
                const int64_t *r0, int m0, const int64_t *r1, int m1) {
  tf_tensor *in[2] = {tt_tensor_i(dt, tf_shape_of(1, n0), s0),
                      tt_tensor_i(dt, tf_shape_of(1, n1), s1)};
  tf_tensor *out[2];
  ck_assert_int_eq(tt_run("BroadcastGradientArgs", in, 2, NULL, 0, out, 2), 2);
  tf_tensor *w0 = tt_tensor_i(dt, tf_shape_of(1, m0), r0);
  tf_tensor *w1 = tt_tensor_i(dt, tf_shape_of(1, m1), r1);
  tt_assert_close(out[0], w0, 0, 0);
  tt_assert_close(out[1], w1, 0, 0);
  tt_free(in, 2);
  tt_free(out, 2);
  tt_free((tf_tensor *[]){w0, w1}, 2);
}

#define V(...) ((const int64_t[]){__VA_ARGS__})
#define BGA(dt, a, na, b, nb, r0, m0, r1, m1) bga(dt, V a, na, V b, nb, V r0, m0, V r1, m1)

START_TEST(test_bcast_args_tf_cases) {
  tf_dtype dts[2] = {TF_INT32, TF_INT64};
  for (int k = 0; k < 2; k++) {
    tf_dtype dt = dts[k];
    BGA(dt, (2, 3, 5), 3, (1), 1, (0), 0, (0, 1, 2), 3);
    BGA(dt, (1), 1, (2, 3, 5), 3, (0, 1, 2), 3, (0), 0);
    BGA(dt, (2, 3, 5), 3, (5), 1, (0), 0, (0, 1), 2);
    BGA(dt, (5), 1, (2, 3, 5), 3, (0, 1), 2, (0), 0);
    BGA(dt, (2, 3, 5), 3, (3, 5), 2, (0), 0, (0), 1);
    BGA(dt, (2, 3, 5), 3, (3, 1), 2, (0), 0, (0, 2), 2);
    BGA(dt, (3, 1), 2, (2, 3, 5), 3, (0, 2), 2, (0), 0);
    BGA(dt, (2, 1, 5), 3, (3, 1), 2, (1), 1, (0, 2), 2);
    BGA(dt, (3, 1), 2, (2, 1, 5), 3, (0, 2), 2, (1), 1);
    /* zero-sized dims */
    BGA(dt, (2, 0, 3, 0, 5), 5, (3, 0, 5), 3, (0), 0, (0, 1), 2);
    BGA(dt, (2, 0, 3, 0, 5), 5, (3, 1, 5), 3, (0), 0, (0, 1, 3), 3);
    /* dims that are 1 in both go to both; equal shapes reduce nothing */
    BGA(dt, (1, 4), 2, (1, 4), 2, (0), 1, (0), 1);
    BGA(dt, (2, 4), 2, (2, 4), 2, (0), 0, (0), 0);
    BGA(dt, (0), 0, (0), 0, (0), 0, (0), 0);
  }
}
END_TEST

START_TEST(test_bcast_args_errors) {
  tf_tensor *in[2] = {tt_tensor_i(TF_INT32, tf_shape_of(1, 2), V(2, 3)),
                      tt_tensor_i(TF_INT32, tf_shape_of(1, 2), V(4, 3))};
  const char *m = tt_run_fail("BroadcastGradientArgs", in, 2, NULL, 0,
                              TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "Incompatible shapes: [2,3] vs. [4,3]"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tt_tensor_i(TF_INT32, tf_shape_of(2, 1, 2), V(4, 3));
  m = tt_run_fail("BroadcastGradientArgs", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "s1 must be a vector"), "%s", m);
  tt_free(in, 2);
}
END_TEST

/* ---- UnsortedSegmentSum --------------------------------------------------- */

/* data [n, inner...] (ids of shape [n] or ids_shape), ids in [-1, num),
 * against a plain double loop. */
static void check_segment_sum(tf_dtype dt, tf_dtype it, tf_shape ds, tf_shape is,
                              int64_t num) {
  tf_tensor *data = tt_rand(dt, ds, -4, 4);
  tf_tensor *ids = tt_rand(it, is, -1, (double)num - 1);
  tf_tensor *ns = tf_tensor_scalar_i32((int32_t)num);
  tf_tensor *in[3] = {data, ids, ns};
  tf_tensor *got = tt_run1("UnsortedSegmentSum", in, 3, NULL, 0);
  int64_t inner = 1;
  for (int d = is.rank; d < ds.rank; d++) inner *= ds.dims[d];
  tf_shape os = {.rank = 1 + ds.rank - is.rank};
  os.dims[0] = num;
  for (int d = is.rank; d < ds.rank; d++) os.dims[1 + d - is.rank] = ds.dims[d];
  double *want = calloc((size_t)(num * inner) + 1, sizeof *want);
  for (int64_t i = 0; i < ids->n; i++) {
    int64_t s = tf_tensor_get_i64(ids, i);
    if (s < 0) continue;
    for (int64_t k = 0; k < inner; k++) want[s * inner + k] += tf_tensor_get_f64(data, i * inner + k);
  }
  tf_tensor *wt = tt_tensor(dt, os, want);
  double tol = dt == TF_FLOAT32 ? 1e-4 : 1e-12;
  tt_assert_close(got, wt, tol, tol);
  free(want);
  tt_free((tf_tensor *[]){data, ids, ns, got, wt}, 5);
}

START_TEST(test_segment_sum_values) {
  tf_dtype dts[4] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int k = 0; k < 4; k++) {
    check_segment_sum(dts[k], TF_INT32, tf_shape_of(2, 7, 3), tf_shape_of(1, 7), 4);
    check_segment_sum(dts[k], TF_INT64, tf_shape_of(1, 9), tf_shape_of(1, 9), 3);
    check_segment_sum(dts[k], TF_INT32, tf_shape_of(3, 2, 3, 5), tf_shape_of(2, 2, 3), 5);
  }
  /* large enough for the column-parallel path */
  check_segment_sum(TF_FLOAT32, TF_INT32, tf_shape_of(2, 600, 256), tf_shape_of(1, 600), 50);
  check_segment_sum(TF_FLOAT64, TF_INT64, tf_shape_of(2, 300, 200), tf_shape_of(1, 300), 7);
  /* no ids: all zeros */
  check_segment_sum(TF_FLOAT32, TF_INT32, tf_shape_of(2, 0, 3), tf_shape_of(1, 0), 2);
}
END_TEST

START_TEST(test_segment_sum_errors) {
  tf_tensor *data = tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 2), 0, 1);
  tf_tensor *ids = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), V(0, 1, 2, 7));
  tf_tensor *ns = tf_tensor_scalar_i32(3);
  const char *m = tt_run_fail("UnsortedSegmentSum", (tf_tensor *[]){data, ids, ns}, 3,
                              NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "segment_ids[3] = 7 is out of range [0, 3)"), "%s", m);
  tf_tensor *bad = tt_tensor_i(TF_INT32, tf_shape_of(1, 3), V(0, 1, 2));
  m = tt_run_fail("UnsortedSegmentSum", (tf_tensor *[]){data, bad, ns}, 3, NULL, 0,
                  TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "prefix"), "%s", m);
  tf_tensor *neg = tf_tensor_scalar_i32(-1);
  tf_tensor_unref(bad);
  bad = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), V(0, 1, 2, 0));
  m = tt_run_fail("UnsortedSegmentSum", (tf_tensor *[]){data, bad, neg}, 3, NULL, 0,
                  TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "num_segments"), "%s", m);
  tt_free((tf_tensor *[]){data, ids, ns, bad, neg}, 5);
}
END_TEST

/* ---- CheckNumerics -------------------------------------------------------- */

START_TEST(test_check_numerics) {
  tf_attr_kv kv = {"message", tf_attr_string("after layer 3")};
  tf_dtype dts[3] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16};
  for (int k = 0; k < 3; k++) {
    tf_tensor *x = tt_rand(dts[k], tf_shape_of(1, 100), -1, 1);
    tf_tensor *y = tt_run1("CheckNumerics", &x, 1, &kv, 1);
    tt_assert_close(y, x, 0, 0);
    tf_tensor_unref(y);
    double v[4] = {1, NAN, 2, 3};
    tf_tensor *n = tt_tensor(dts[k], tf_shape_of(1, 4), v);
    const char *m = tt_run_fail("CheckNumerics", &n, 1, &kv, 1, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(m, "after layer 3 : Tensor had NaN values") &&
                      strstr(m, "CheckNumerics"), "%s", m);
    v[1] = -INFINITY;
    tf_tensor *i = tt_tensor(dts[k], tf_shape_of(1, 4), v);
    m = tt_run_fail("CheckNumerics", &i, 1, &kv, 1, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(m, "after layer 3 : Tensor had Inf values"), "%s", m);
    v[0] = NAN;
    tf_tensor *b = tt_tensor(dts[k], tf_shape_of(1, 4), v);
    m = tt_run_fail("CheckNumerics", &b, 1, &kv, 1, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(m, "Tensor had Inf and NaN values"), "%s", m);
    tt_free((tf_tensor *[]){x, n, i, b}, 4);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_grad_support");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_stop_gradient);
  tcase_add_test(tc, test_bcast_args_tf_cases);
  tcase_add_test(tc, test_bcast_args_errors);
  tcase_add_test(tc, test_segment_sum_values);
  tcase_add_test(tc, test_segment_sum_errors);
  tcase_add_test(tc, test_check_numerics);
  suite_add_tcase(s, tc);
  return s;
}
