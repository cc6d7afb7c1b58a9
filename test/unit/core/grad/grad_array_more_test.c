/* grad_array_more_test.c: gradients of ReverseV2, BroadcastTo, SplitV,
 * PadV2, MirrorPad, MirrorPadGrad, DepthToSpace and SpaceToDepth, each
 * checked against float64 central differences with tt_grad_check on fresh
 * random inputs, with constant and fed shape arguments (the input's dims
 * or rank hidden where the op allows it), negative axes and every
 * output of SplitV in turn (the others get zeros). These ops only move or
 * sum data, so the analytic and numeric gradients agree to rounding:
 * atol 1e-8, rtol 1e-7 throughout. */
#include <check.h>
#include <stdio.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

/* op(x, arg) with arg constant, then op(x hidden, arg fed). */
static void check_with_arg(const char *op, tf_shape xs, tf_tensor *arg,
                           const tf_attr_kv *kv, int n_kv, int max_hide) {
  tf_tensor *x = rnd(xs);
  gt_build b = {.op = op, .n_args = 2, .args = {GT_P(0), GT_C(arg)},
                .attrs = kv, .n_attrs = n_kv};
  tt_grad_check(gt_build_fn, &b, &x, 1, NULL, ATOL, RTOL);
  for (int hide = GT_HIDE_DIMS; hide <= max_hide; hide++) {
    gt_build d = {.op = op, .n_args = 2, .args = {GT_PH(0, hide), GT_P(1)},
                  .attrs = kv, .n_attrs = n_kv};
    tf_tensor *in[2] = {x, arg};
    tt_grad_check(gt_build_fn, &d, in, 2, NULL, ATOL, RTOL);
  }
  tt_free((tf_tensor *[]){x, arg}, 2);
}

START_TEST(test_reverse_v2) {
  check_with_arg("ReverseV2", GT_SHAPE(2, 3, 4),
                 tf_tensor_vec_i32(2, (int32_t[]){0, -1}), NULL, 0,
                 GT_HIDE_RANK);
  int64_t a[1] = {1};
  check_with_arg("ReverseV2", GT_SHAPE(3, 2), tf_tensor_vec_i64(1, a), NULL,
                 0, GT_HIDE_RANK);
}
END_TEST

START_TEST(test_broadcast_to) {
  check_with_arg("BroadcastTo", GT_SHAPE(3, 1),
                 tf_tensor_vec_i32(3, (int32_t[]){2, 3, 4}), NULL, 0,
                 GT_HIDE_RANK);
  check_with_arg("BroadcastTo", GT_SHAPE(1, 4),
                 tf_tensor_vec_i32(2, (int32_t[]){3, 4}), NULL, 0,
                 GT_HIDE_DIMS);
  check_with_arg("BroadcastTo", GT_SHAPE(2, 3),
                 tf_tensor_vec_i32(2, (int32_t[]){2, 3}), NULL, 0, GT_SHOW);
  check_with_arg("BroadcastTo", GT_SHAPE(),
                 tf_tensor_vec_i32(2, (int32_t[]){2, 2}), NULL, 0, GT_SHOW);
}
END_TEST

/* Static shapes: the reduction axes fold into a constant. */
START_TEST(test_broadcast_to_static_folds) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(3, 1)));
  tf_output y = gt_op2(g, "BroadcastTo", x, gt_ivec(g, 3, (int32_t[]){2, 3, 4}));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_int_eq(gt_count_op(g, "BroadcastGradientArgs"), 0);
  ck_assert_int_eq(gt_count_op(g, "Sum"), 1);
  const tf_shape *ds = tf_node_output_shape(dx.node, dx.index);
  ck_assert(tf_shape_equal(ds, &(tf_shape){2, {3, 1}}));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_split_v) {
  tf_tensor *in[3] = {rnd(GT_SHAPE(2, 6)),
                      tf_tensor_vec_i32(3, (int32_t[]){1, -1, 2}),
                      tf_tensor_scalar_i32(-1)};
  tf_attr_kv kv = {"num_split", tf_attr_int(3)};
  for (int out = 0; out < 3; out++) { /* the other outputs get zeros */
    gt_build b = {.op = "SplitV", .n_args = 3,
                  .args = {GT_P(0), GT_C(in[1]), GT_C(in[2])}, .attrs = &kv,
                  .n_attrs = 1, .out = out};
    tt_grad_check(gt_build_fn, &b, in, 1, NULL, ATOL, RTOL);
  }
  gt_build d = {.op = "SplitV", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_P(1), GT_P(2)},
                .attrs = &kv, .n_attrs = 1, .out = 1};
  tt_grad_check(gt_build_fn, &d, in, 3, NULL, ATOL, RTOL);
  tf_attr_kv one = {"num_split", tf_attr_int(1)};
  tf_tensor *all = tf_tensor_vec_i32(1, (int32_t[]){-1});
  gt_build s = {.op = "SplitV", .n_args = 3,
                .args = {GT_P(0), GT_C(all), GT_C(in[2])}, .attrs = &one,
                .n_attrs = 1};
  tt_grad_check(gt_build_fn, &s, in, 1, NULL, ATOL, RTOL);
  tt_free(in, 3);
  tf_tensor_unref(all);
}
END_TEST

START_TEST(test_pad_v2) {
  tf_tensor *in[3] = {rnd(GT_SHAPE(2, 3)),
                      tt_tensor_i(TF_INT32, GT_SHAPE(2, 2),
                                  (int64_t[]){1, 0, 2, 1}),
                      tf_tensor_scalar_f64(0.5)};
  gt_build b = {.op = "PadV2", .n_args = 3,
                .args = {GT_P(0), GT_C(in[1]), GT_C(in[2])}};
  tt_grad_check(gt_build_fn, &b, in, 1, NULL, ATOL, RTOL);
  gt_build d = {.op = "PadV2", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_P(1), GT_C(in[2])}};
  tt_grad_check(gt_build_fn, &d, in, 2, NULL, ATOL, RTOL);
  /* constant_values gets no gradient, as in TF's _PadGrad. */
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(2, 3)));
  tf_output c = gt_o(tt_placeholder(g, "c", TF_FLOAT64, GT_SHAPE()));
  tf_output p = gt_o(tt_const(g, NULL, tf_tensor_ref(in[1])));
  tf_output y = gt_o(tt_node(g, "PadV2", NULL, (tf_output[]){x, p, c}, 3,
                             NULL, 0));
  tf_output dx[2];
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, (tf_output[]){x, c}, 2, NULL, dx,
                                &st), TF_OK);
  ck_assert_ptr_nonnull(dx[0].node);
  ck_assert_ptr_null(dx[1].node);
  tf_graph_free(g);
  tt_free(in, 3);
}
END_TEST

static tf_tensor *pads(int rows, const int64_t *v) {
  return tt_tensor_i(TF_INT32, tf_shape_make(2, (int64_t[]){rows, 2}), v);
}

START_TEST(test_mirror_pad) {
  static const char *modes[2] = {"REFLECT", "SYMMETRIC"};
  for (int m = 0; m < 2; m++) {
    tf_attr_kv kv = {"mode", tf_attr_string(modes[m])};
    check_with_arg("MirrorPad", GT_SHAPE(3, 4),
                   pads(2, (int64_t[]){2, 1, 0, 2 + m}), &kv, 1, GT_HIDE_RANK);
    check_with_arg("MirrorPad", GT_SHAPE(2, 3, 2),
                   pads(3, (int64_t[]){1, 1, 2, 1, 1, m}), &kv, 1,
                   GT_HIDE_DIMS);
    /* MirrorPadGrad is linear: its gradient is MirrorPad. */
    check_with_arg("MirrorPadGrad", GT_SHAPE(7, 5),
                   pads(2, (int64_t[]){2, 2, 1, 1}), &kv, 1, GT_HIDE_DIMS);
  }
}
END_TEST

START_TEST(test_depth_space) {
  for (int b = 2; b <= 3; b++) {
    tf_attr_kv kv[2] = {{"block_size", tf_attr_int(b)},
                        {"data_format", tf_attr_string("NHWC")}};
    tf_tensor *x = rnd(GT_SHAPE(2, 2, 1, 2 * b * b));
    tt_grad_check_op("DepthToSpace", &x, 1, false, kv, 2, 0, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
    x = rnd(GT_SHAPE(1, 2 * b, b, 2));
    tt_grad_check_op("SpaceToDepth", &x, 1, false, kv, 2, 0, NULL, ATOL, RTOL);
    gt_build d = {.op = "SpaceToDepth", .n_args = 1,
                  .args = {GT_PH(0, GT_HIDE_DIMS)}, .attrs = kv, .n_attrs = 2};
    tt_grad_check(gt_build_fn, &d, &x, 1, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_array_more");
  TCase *tc = tcase_create("grad");
  tcase_add_test(tc, test_reverse_v2);
  tcase_add_test(tc, test_broadcast_to);
  tcase_add_test(tc, test_broadcast_to_static_folds);
  tcase_add_test(tc, test_split_v);
  tcase_add_test(tc, test_pad_v2);
  tcase_add_test(tc, test_mirror_pad);
  tcase_add_test(tc, test_depth_space);
  suite_add_tcase(s, tc);
  return s;
}
