/* grad_matrix_band_test.c: gradients of MatrixBandPart (bands with negative
 * = whole triangle, int32 and int64 band indices), MatrixDiag,
 * MatrixDiagPart (square and non-square), MatrixDiagV3 and
 * MatrixDiagPartV3 (single diagonals and bands, every align), each against
 * float64 central differences (tt_grad_check; atol 1e-8, rtol 1e-7: these
 * ops only move data, so the gradients are exact up to the difference
 * quotient's rounding), with static, hidden-dims and hidden-rank inputs to
 * reach the run-time num_rows/num_cols path. Structural checks: the band
 * inputs, k, num_rows, num_cols and padding_value get no gradient (TF's
 * None), and MatrixBandPart's gradient is a MatrixBandPart. */
#include <check.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static const char *const k_aligns[4] = {"LEFT_RIGHT", "RIGHT_LEFT",
                                        "LEFT_LEFT", "RIGHT_RIGHT"};

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

START_TEST(test_band_part) {
  int64_t bands[][2] = {{-1, 0}, {0, -1}, {1, 2}, {-1, -1}, {0, 0}};
  int hides[3] = {GT_SHOW, GT_HIDE_DIMS, GT_HIDE_RANK};
  for (int c = 0; c < 5; c++) {
    tf_dtype ti = c % 2 ? TF_INT32 : TF_INT64;
    tf_tensor *lo = tt_tensor_i(ti, GT_SHAPE(), (int64_t[]){bands[c][0]});
    tf_tensor *hi = tt_tensor_i(ti, GT_SHAPE(), (int64_t[]){bands[c][1]});
    tf_tensor *x = rnd(c % 2 ? GT_SHAPE(4, 5) : GT_SHAPE(2, 3, 4));
    gt_build b = {.op = "MatrixBandPart", .n_args = 3,
                  .args = {GT_PH(0, hides[c % 3]), GT_C(lo), GT_C(hi)}};
    tt_grad_check(gt_build_fn, &b, &x, 1, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
    tf_tensor_unref(lo);
    tf_tensor_unref(hi);
  }
}
END_TEST

/* dx of MatrixBandPart is MatrixBandPart(dy, num_lower, num_upper); the
 * band inputs get none. */
START_TEST(test_band_part_structure) {
  tf_graph *g = tf_graph_new();
  tf_output x[3] = {
      gt_o(tt_placeholder(g, "x", TF_FLOAT32, GT_SHAPE(3, 3))),
      gt_o(tt_placeholder(g, "l", TF_INT64, GT_SHAPE())),
      gt_o(tt_placeholder(g, "u", TF_INT64, GT_SHAPE()))};
  tf_output y = gt_o(tt_node(g, "MatrixBandPart", "y", x, 3, NULL, 0));
  tf_output dx[3];
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, x, 3, NULL, dx, &st), TF_OK);
  ck_assert_str_eq(tf_node_op(dx[0].node), "MatrixBandPart");
  ck_assert(dx[1].node == NULL && dx[2].node == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_diag_v1) {
  tf_tensor *d[2] = {rnd(GT_SHAPE(3)), rnd(GT_SHAPE(2, 4))};
  for (int i = 0; i < 2; i++) {
    tt_grad_check_op("MatrixDiag", &d[i], 1, false, NULL, 0, 0, NULL, ATOL,
                     RTOL);
  }
  tt_free(d, 2);
}
END_TEST

START_TEST(test_diag_part_v1) {
  tf_tensor *x[3] = {rnd(GT_SHAPE(3, 3)), rnd(GT_SHAPE(2, 3, 5)),
                     rnd(GT_SHAPE(4, 2))};
  int hides[3] = {GT_SHOW, GT_HIDE_DIMS, GT_HIDE_RANK};
  for (int i = 0; i < 3; i++) {
    for (int h = 0; h < 3; h++) {
      gt_build b = {.op = "MatrixDiagPart", .n_args = 1,
                    .args = {GT_PH(0, hides[h])}};
      tt_grad_check(gt_build_fn, &b, &x[i], 1, NULL, ATOL, RTOL);
    }
  }
  tt_free(x, 3);
}
END_TEST

START_TEST(test_diag_part_v3) {
  tf_tensor *x[2] = {rnd(GT_SHAPE(2, 4, 5)), rnd(GT_SHAPE(5, 3))};
  int32_t ks[][2] = {{-2, 1}, {1, 1}, {-1, 2}, {0, 0}};
  tf_tensor *pad = tf_tensor_scalar_f64(0.5);
  int hides[3] = {GT_SHOW, GT_HIDE_DIMS, GT_HIDE_RANK};
  for (int c = 0; c < 8; c++) {
    tf_tensor *k = tf_tensor_vec_i32(2, ks[c % 4]);
    tf_attr_kv kv = {"align", tf_attr_string(k_aligns[c % 4])};
    gt_build b = {.op = "MatrixDiagPartV3", .n_args = 3,
                  .args = {GT_PH(0, hides[c % 3]), GT_C(k), GT_C(pad)},
                  .attrs = &kv, .n_attrs = 1};
    tt_grad_check(gt_build_fn, &b, &x[c / 4], 1, NULL, ATOL, RTOL);
    tf_tensor_unref(k);
  }
  tf_tensor_unref(pad);
  tt_free(x, 2);
}
END_TEST

START_TEST(test_diag_v3) {
  /* k = [-1, 1] on 4-long diagonals: a 4 x 4 output (rows/cols -1);
   * k = 1 on [2, 3]: 3 x 4 with num_cols given; k = [0, 2] into 3 x 5. */
  struct {
    tf_shape s;
    int32_t k[2];
    int32_t rows, cols;
  } cs[3] = {{GT_SHAPE(2, 3, 4), {-1, 1}, -1, -1},
             {GT_SHAPE(2, 3), {1, 1}, -1, 4},
             {GT_SHAPE(3, 3), {0, 2}, 3, 5}};
  tf_tensor *pad = tf_tensor_scalar_f64(-2);
  for (int c = 0; c < 12; c++) {
    int i = c % 3;
    tf_tensor *d = rnd(cs[i].s);
    tf_tensor *k = tf_tensor_vec_i32(2, cs[i].k);
    tf_tensor *r = tf_tensor_scalar_i32(cs[i].rows);
    tf_tensor *cl = tf_tensor_scalar_i32(cs[i].cols);
    tf_attr_kv kv = {"align", tf_attr_string(k_aligns[c % 4])};
    gt_build b = {.op = "MatrixDiagV3", .n_args = 5,
                  .args = {GT_PH(0, c % 2 ? GT_HIDE_DIMS : GT_SHOW), GT_C(k),
                           GT_C(r), GT_C(cl), GT_C(pad)},
                  .attrs = &kv, .n_attrs = 1};
    tt_grad_check(gt_build_fn, &b, &d, 1, NULL, ATOL, RTOL);
    tf_tensor_unref(d);
    tf_tensor_unref(k);
    tf_tensor_unref(r);
    tf_tensor_unref(cl);
  }
  tf_tensor_unref(pad);
}
END_TEST

/* k, num_lower and num_upper fed at run time (the gradients pass them
 * through), with the input's rank hidden too. */
START_TEST(test_fed_band_args) {
  tf_tensor *x = rnd(GT_SHAPE(2, 4, 3));
  tf_tensor *in[3] = {x, tf_tensor_vec_i32(2, (int32_t[]){-2, 1}),
                      tf_tensor_scalar_f64(0.25)};
  tf_attr_kv kv = {"align", tf_attr_string("LEFT_RIGHT")};
  gt_build b = {.op = "MatrixDiagPartV3", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_P(1), GT_C(in[2])},
                .attrs = &kv, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &b, in, 2, NULL, ATOL, RTOL);
  tf_tensor *bp[3] = {x, tf_tensor_scalar_i32(1), tf_tensor_scalar_i32(-1)};
  gt_build c = {.op = "MatrixBandPart", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_P(1), GT_P(2)}};
  tt_grad_check(gt_build_fn, &c, bp, 3, NULL, ATOL, RTOL);
  tf_tensor_unref(bp[1]);
  tf_tensor_unref(bp[2]);
  tt_free(in, 3);
}
END_TEST

/* padding_value gets no gradient (TF's None), even when fed. */
START_TEST(test_no_grad_inputs) {
  tf_graph *g = tf_graph_new();
  tf_output x[3] = {
      gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(3, 4))),
      gt_o(tt_placeholder(g, "k", TF_INT32, GT_SHAPE(2))),
      gt_o(tt_placeholder(g, "p", TF_FLOAT64, GT_SHAPE()))};
  tf_output y = gt_o(tt_node(g, "MatrixDiagPartV3", "y", x, 3, NULL, 0));
  tf_output dx[3];
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, x, 3, NULL, dx, &st), TF_OK);
  ck_assert_str_eq(tf_node_op(dx[0].node), "MatrixDiagV3");
  ck_assert(dx[1].node == NULL && dx[2].node == NULL);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_matrix_band");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_band_part);
  tcase_add_test(tc, test_band_part_structure);
  tcase_add_test(tc, test_diag_v1);
  tcase_add_test(tc, test_diag_part_v1);
  tcase_add_test(tc, test_diag_part_v3);
  tcase_add_test(tc, test_diag_v3);
  tcase_add_test(tc, test_fed_band_args);
  tcase_add_test(tc, test_no_grad_inputs);
  suite_add_tcase(s, tc);
  return s;
}
