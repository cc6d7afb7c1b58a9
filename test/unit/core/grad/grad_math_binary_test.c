/* grad_math_binary_test.c: the gradients of grad_math_binary.c (AddV2,
 * RealDiv, SquaredDifference, DivNoNan, Atan2, Xdivy, Xlogy, SelectV2)
 * against float64 central differences (tt_grad_check_op; atol 1e-7, rtol
 * 1e-6), on same-shape and broadcasting operands ([2,3,1] x [2,1,4],
 * scalar x matrix, vector x rank 3; SelectV2 over three-way broadcasts;
 * operands whose dims or rank are known only at run time),
 * with inputs kept off the points where the ops are not smooth (y near 0
 * for the divisions, x near 0 for Xdivy and Xlogy). TF's conventions are
 * checked exactly where the differences cannot reach: Xdivy and Xlogy
 * give both operands 0 where x == 0 (even at y == 0), DivNoNan 0 where
 * y == 0; gradients of float32 ops stay float32. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-7
#define RTOL 1e-6

static tf_tensor *rnd(tf_shape s, double lo, double hi) {
  return tt_rand(TF_FLOAT64, s, lo, hi);
}

/* Moves elements within gap of 0 out to +-gap. */
static tf_tensor *off_zero(tf_tensor *t, double gap) {
  double *v = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    if (fabs(v[i]) < gap) {
      v[i] = v[i] < 0 ? -gap : gap;
    }
  }
  return t;
}

/* op on (a, b) for four operand shape pairs, both gradients checked; x
 * from [alo, ahi), y from [blo, bhi), each moved off 0 by gap when gap > 0
 * (xgap for x, ygap for y). */
static void check_binary(const char *op, double alo, double ahi, double xgap,
                         double blo, double bhi, double ygap) {
  tf_shape a[4] = {GT_SHAPE(2, 2, 3), GT_SHAPE(2, 3, 1), tf_shape_scalar(),
                   GT_SHAPE(3)};
  tf_shape b[4] = {GT_SHAPE(2, 2, 3), GT_SHAPE(2, 1, 4), GT_SHAPE(2, 3),
                   GT_SHAPE(2, 2, 3)};
  for (int i = 0; i < 4; i++) {
    tf_tensor *in[2] = {rnd(a[i], alo, ahi), rnd(b[i], blo, bhi)};
    if (xgap > 0) off_zero(in[0], xgap);
    if (ygap > 0) off_zero(in[1], ygap);
    tt_grad_check_op(op, in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
    /* and the operands swapped, so y broadcasts too */
    tf_tensor *sw[2] = {rnd(b[i], alo, ahi), rnd(a[i], blo, bhi)};
    if (xgap > 0) off_zero(sw[0], xgap);
    if (ygap > 0) off_zero(sw[1], ygap);
    tt_grad_check_op(op, sw, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
    tt_free(in, 2);
    tt_free(sw, 2);
  }
}

START_TEST(test_add_v2_squared_difference) {
  check_binary("AddV2", -2, 2, 0, -2, 2, 0);
  check_binary("SquaredDifference", -2, 2, 0, -2, 2, 0);
}
END_TEST

START_TEST(test_divisions) {
  check_binary("RealDiv", -2, 2, 0, -2, 2, 0.5);
  check_binary("DivNoNan", -2, 2, 0, -2, 2, 0.5);
  check_binary("Xdivy", -2, 2, 0.1, -2, 2, 0.5);
}
END_TEST

START_TEST(test_atan2_xlogy) {
  /* Atan2(y, x) off the origin: |y| >= 0.3. */
  check_binary("Atan2", -2, 2, 0.3, -2, 2, 0);
  check_binary("Xlogy", -2, 2, 0.1, 0.3, 3, 0);
}
END_TEST

START_TEST(test_select_v2) {
  tf_shape c[4] = {GT_SHAPE(2, 3), GT_SHAPE(3, 1), GT_SHAPE(2, 1, 3),
                   tf_shape_scalar()};
  tf_shape t[4] = {GT_SHAPE(2, 3), GT_SHAPE(1, 4), GT_SHAPE(4, 1),
                   GT_SHAPE(2, 2)};
  tf_shape e[4] = {GT_SHAPE(2, 3), tf_shape_scalar(), GT_SHAPE(1, 3),
                   GT_SHAPE(2)};
  bool check[3] = {false, true, true};
  for (int i = 0; i < 4; i++) {
    tf_tensor *in[3] = {tt_rand(TF_BOOL, c[i], 0, 1), rnd(t[i], -1, 1),
                        rnd(e[i], -1, 1)};
    tt_grad_check_op("SelectV2", in, 3, false, NULL, 0, 0, check, ATOL, RTOL);
    tt_free(in, 3);
  }
}
END_TEST

/* Shapes known only at run time: the broadcast axes come from
 * BroadcastGradientArgs instead of the static shapes. */
START_TEST(test_dynamic_shapes) {
  bool check[3] = {false, true, true};
  gt_build sel = {.op = "SelectV2", .n_args = 3,
                  .args = {GT_P(0), GT_PH(1, GT_HIDE_DIMS),
                           GT_PH(2, GT_HIDE_RANK)}};
  tf_tensor *in[3] = {tt_rand(TF_BOOL, GT_SHAPE(2, 1, 3), 0, 1),
                      rnd(GT_SHAPE(4, 1), -1, 1), rnd(GT_SHAPE(3), -1, 1)};
  tt_grad_check(gt_build_fn, &sel, in, 3, check, ATOL, RTOL);
  tt_free(in, 3);
  const char *ops[3] = {"Xlogy", "SquaredDifference", "Atan2"};
  for (int i = 0; i < 3; i++) {
    gt_build b = {.op = ops[i], .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_RANK)}};
    tf_tensor *xy[2] = {off_zero(rnd(GT_SHAPE(2, 1, 4), -2, 2), 0.3),
                        rnd(GT_SHAPE(3, 1), 0.3, 3)};
    tt_grad_check(gt_build_fn, &b, xy, 2, NULL, ATOL, RTOL);
    tt_free(xy, 2);
  }
}
END_TEST

/* d(sum(op(x, y)))/dx and /dy on constants x, y of dtype dt. */
static void grads_of(const char *op, tf_dtype dt, int n, const double *x,
                     const double *y, tf_tensor **gx, tf_tensor **gy) {
  tf_graph *g = tf_graph_new();
  tf_output xs[2] = {gt_o(tt_const(g, "x", tt_tensor(dt, GT_SHAPE(n), x))),
                     gt_o(tt_const(g, "y", tt_tensor(dt, GT_SHAPE(n), y)))};
  tf_output z = gt_o(tt_node(g, op, "z", xs, 2, NULL, 0));
  tf_output dx[2];
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, &z, 1, xs, 2, NULL, dx, &st) == TF_OK, "%s",
                st.msg);
  *gx = gt_run(g, NULL, NULL, 0, dx[0]);
  *gy = gt_run(g, NULL, NULL, 0, dx[1]);
  tf_graph_free(g);
}

static void expect(const tf_tensor *t, const double *want, const char *what) {
  for (int64_t i = 0; i < t->n; i++) {
    double v = tf_tensor_get_f64(t, i);
    ck_assert_msg(v == want[i] || fabs(v - want[i]) <= 1e-6 * fabs(want[i]),
                  "%s element %lld: %g, want %g", what, (long long)i, v,
                  want[i]);
  }
}

/* TF's values where x == 0 (Xdivy, Xlogy) or y == 0 (DivNoNan): zeros,
 * including at 0/0 and log(0); float32 and float64. */
START_TEST(test_conventions_at_zero) {
  tf_dtype dts[2] = {TF_FLOAT64, TF_FLOAT32};
  for (int d = 0; d < 2; d++) {
    tf_tensor *gx, *gy;
    double x[3] = {0, 0, 2}, y[3] = {0, 3, 4};
    grads_of("Xdivy", dts[d], 3, x, y, &gx, &gy);
    ck_assert_int_eq(gx->dtype, dts[d]);
    expect(gx, (double[]){0, 0, 0.25}, "Xdivy dx");
    expect(gy, (double[]){0, 0, -2.0 / 16}, "Xdivy dy");
    tf_tensor_unref(gx);
    tf_tensor_unref(gy);
    grads_of("Xlogy", dts[d], 3, x, y, &gx, &gy);
    expect(gx, (double[]){0, 0, log(4)}, "Xlogy dx");
    expect(gy, (double[]){0, 0, 0.5}, "Xlogy dy");
    tf_tensor_unref(gx);
    tf_tensor_unref(gy);
    double a[3] = {5, 0, 3}, b[3] = {0, 0, 2};
    grads_of("DivNoNan", dts[d], 3, a, b, &gx, &gy);
    expect(gx, (double[]){0, 0, 0.5}, "DivNoNan dx");
    expect(gy, (double[]){0, 0, -0.75}, "DivNoNan dy");
    tf_tensor_unref(gx);
    tf_tensor_unref(gy);
    /* Atan2(y, x) at (1, 1): d/dy = 1/2, d/dx = -1/2. */
    grads_of("Atan2", dts[d], 1, (double[]){1}, (double[]){1}, &gx, &gy);
    expect(gx, (double[]){0.5}, "Atan2 d/dy");
    expect(gy, (double[]){-0.5}, "Atan2 d/dx");
    tf_tensor_unref(gx);
    tf_tensor_unref(gy);
  }
}
END_TEST

/* Every op here has exactly one gradient registration. */
START_TEST(test_registered_once) {
  const char *ops[] = {"AddV2", "RealDiv", "SquaredDifference", "DivNoNan",
                       "Atan2", "Xdivy", "Xlogy", "SelectV2"};
  for (int i = 0; i < 8; i++) {
    ck_assert_msg(tf__grad_count_registrations(ops[i]) == 1, "%s", ops[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_math_binary");
  TCase *tc = tcase_create("grad");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_add_v2_squared_difference);
  tcase_add_test(tc, test_divisions);
  tcase_add_test(tc, test_atan2_xlogy);
  tcase_add_test(tc, test_select_v2);
  tcase_add_test(tc, test_dynamic_shapes);
  tcase_add_test(tc, test_conventions_at_zero);
  tcase_add_test(tc, test_registered_once);
  suite_add_tcase(s, tc);
  return s;
}
