/* grad_array_test.c: gradients of the array ops (grad_array.c), each
 * checked against float64 central differences with tt_grad_check on fresh
 * random inputs. These ops only move or sum data, so the analytic and
 * numeric gradients agree to rounding: atol 1e-8, rtol 1e-7 throughout.
 * Every op is checked with constant shape arguments on static shapes, with
 * negative axes, and with the arguments fed at run time and the input's
 * dims or rank hidden, which exercises the gradients' dynamic paths; a few
 * structural checks confirm that static shapes fold into constants. */
#include <check.h>
#include <stdio.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

static tf_tensor *ivec(int n, const int32_t *v) { return tf_tensor_vec_i32(n, v); }

/* Checks op(x, const arg) and op(x hidden, fed arg) for one extra int arg. */
static void check_unary_with_arg(const char *op, tf_shape xs, tf_tensor *arg,
                                 const tf_attr_kv *attrs, int n_attrs) {
  tf_tensor *x = rnd(xs);
  gt_build b = {.op = op, .n_args = 2, .args = {GT_P(0), GT_C(arg)},
                .attrs = attrs, .n_attrs = n_attrs};
  tt_grad_check(gt_build_fn, &b, &x, 1, NULL, ATOL, RTOL);
  for (int hide = GT_HIDE_DIMS; hide <= GT_HIDE_RANK; hide++) {
    gt_build d = {.op = op, .n_args = 2, .args = {GT_PH(0, hide), GT_P(1)},
                  .attrs = attrs, .n_attrs = n_attrs};
    tf_tensor *in[2] = {x, arg};
    tt_grad_check(gt_build_fn, &d, in, 2, NULL, ATOL, RTOL);
  }
  tf_tensor_unref(x);
  tf_tensor_unref(arg);
}

START_TEST(test_reshape_expand_squeeze) {
  check_unary_with_arg("Reshape", GT_SHAPE(2, 3, 4), ivec(2, (int32_t[]){4, -1}),
                       NULL, 0);
  check_unary_with_arg("Reshape", GT_SHAPE(6), ivec(3, (int32_t[]){1, 2, 3}),
                       NULL, 0);
  check_unary_with_arg("ExpandDims", GT_SHAPE(2, 3), tf_tensor_scalar_i32(-1),
                       NULL, 0);
  check_unary_with_arg("ExpandDims", GT_SHAPE(2, 3), tf_tensor_scalar_i32(1),
                       NULL, 0);
  int64_t sq[1] = {-3};
  tf_attr_kv kv = {"squeeze_dims", tf_attr_int_list(sq, 1)};
  tf_tensor *x = rnd(GT_SHAPE(3, 1, 2, 1));
  tt_grad_check_op("Squeeze", &x, 1, false, &kv, 1, 0, NULL, ATOL, RTOL);
  tt_grad_check_op("Squeeze", &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_grad_check_op("Identity", &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
  gt_build b = {.op = "Squeeze", .n_args = 1, .args = {GT_PH(0, GT_HIDE_DIMS)},
                .attrs = &kv, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &b, &x, 1, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_transpose) {
  check_unary_with_arg("Transpose", GT_SHAPE(2, 3, 4),
                       ivec(3, (int32_t[]){2, 0, 1}), NULL, 0);
  check_unary_with_arg("Transpose", GT_SHAPE(2, 3, 4, 2),
                       ivec(4, (int32_t[]){1, 3, 0, 2}), NULL, 0);
  int64_t p64[2] = {1, 0};
  check_unary_with_arg("Transpose", GT_SHAPE(3, 5), tf_tensor_vec_i64(2, p64),
                       NULL, 0);
  /* A constant perm is inverted at graph-build time: no DynamicStitch. */
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(2, 3, 4)));
  tf_output y = gt_op2(g, "Transpose", x, gt_ivec(g, 3, (int32_t[]){1, 2, 0}));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_int_eq(gt_count_op(g, "DynamicStitch"), 0);
  const tf_shape *ds = tf_node_output_shape(dx.node, dx.index);
  ck_assert(tf_shape_equal(ds, &(tf_shape){3, {2, 3, 4}}));
  tf_graph_free(g);
}
END_TEST

/* ConcatV2 (v2) or Concat of three inputs along axis (constant or fed,
 * inputs hidden). Placeholder i feeds in[i]; in[3] is the axis. */
static gt_build concat_build(bool v2, gt_arg x0, gt_arg x1, gt_arg x2,
                             gt_arg axis) {
  gt_build b = {.op = v2 ? "ConcatV2" : "Concat", .n_args = 4,
                .list_start = v2 ? 0 : 1, .list_len = 3};
  gt_arg xs[3] = {x0, x1, x2};
  for (int i = 0; i < 3; i++) {
    b.args[i + !v2] = xs[i];
  }
  b.args[v2 ? 3 : 0] = axis;
  return b;
}

static void check_concat(bool v2, tf_shape a, tf_shape b, tf_shape c,
                         int32_t axis) {
  tf_tensor *in[4] = {rnd(a), rnd(b), rnd(c), tf_tensor_scalar_i32(axis)};
  gt_build k = concat_build(v2, GT_P(0), GT_P(1), GT_P(2), GT_C(in[3]));
  tt_grad_check(gt_build_fn, &k, in, 3, NULL, ATOL, RTOL);
  gt_build d = concat_build(v2, GT_PH(0, GT_HIDE_DIMS), GT_P(1),
                            GT_PH(2, GT_HIDE_RANK), GT_P(3));
  tt_grad_check(gt_build_fn, &d, in, 4, NULL, ATOL, RTOL);
  gt_build h = concat_build(v2, GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_DIMS),
                            GT_P(2), GT_C(in[3]));
  tt_grad_check(gt_build_fn, &h, in, 3, NULL, ATOL, RTOL);
  tt_free(in, 4);
}

START_TEST(test_concat) {
  for (int v2 = 0; v2 < 2; v2++) {
    check_concat(v2, GT_SHAPE(2, 3), GT_SHAPE(2, 1), GT_SHAPE(2, 4), 1);
    check_concat(v2, GT_SHAPE(2, 3), GT_SHAPE(2, 1), GT_SHAPE(2, 4), -1);
    check_concat(v2, GT_SHAPE(1, 3, 2), GT_SHAPE(3, 3, 2), GT_SHAPE(2, 3, 2),
                 0);
    check_concat(v2, GT_SHAPE(2, 0, 2), GT_SHAPE(2, 2, 2), GT_SHAPE(2, 1, 2),
                 -2);
  }
}
END_TEST

START_TEST(test_concat_static_is_slices) {
  tf_graph *g = tf_graph_new();
  tf_output in[3] = {
      gt_o(tt_placeholder(g, "a", TF_FLOAT64, tf_shape_of(2, -1, 3))),
      gt_o(tt_placeholder(g, "b", TF_FLOAT64, tf_shape_of(2, -1, 2))),
      gt_ivec(g, 1, (int32_t[]){1})};
  in[2] = gt_o(tt_const(g, "axis", tf_tensor_scalar_i32(1)));
  tf_node_builder *nb = tf_node_begin(g, "ConcatV2", "c");
  tf_node_add_input_list(nb, in, 2);
  tf_node_add_input(nb, in[2]);
  tf_status st;
  tf_status_init(&st);
  tf_output y = gt_o(tf_node_finish(nb, &st));
  ck_assert_ptr_nonnull(y.node);
  tf_output dx[2];
  ck_assert_int_eq(tf_gradients(g, &y, 1, in, 2, NULL, dx, &st), TF_OK);
  /* Known sizes along the axis: constant offsets, no Shape or OneHot. */
  ck_assert_int_eq(gt_count_op(g, "OneHot"), 0);
  ck_assert_int_eq(gt_count_op(g, "Shape"), 0);
  ck_assert_int_eq(gt_count_op(g, "Slice"), 2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_split) {
  tf_tensor *in[2] = {tf_tensor_scalar_i32(-1), rnd(GT_SHAPE(2, 6))};
  tf_attr_kv kv = {"num_split", tf_attr_int(3)};
  for (int out = 0; out < 3; out++) { /* the other outputs get zeros */
    gt_build b = {.op = "Split", .n_args = 2, .args = {GT_C(in[0]), GT_P(1)},
                  .attrs = &kv, .n_attrs = 1, .out = out};
    tt_grad_check(gt_build_fn, &b, in, 2, NULL, ATOL, RTOL);
  }
  gt_build d = {.op = "Split", .n_args = 2,
                .args = {GT_P(0), GT_PH(1, GT_HIDE_RANK)}, .attrs = &kv,
                .n_attrs = 1, .out = 2};
  tt_grad_check(gt_build_fn, &d, in, 2, NULL, ATOL, RTOL);
  tf_attr_kv one = {"num_split", tf_attr_int(1)};
  gt_build s = {.op = "Split", .n_args = 2, .args = {GT_C(in[0]), GT_P(1)},
                .attrs = &one, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &s, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_pack_unpack) {
  tf_tensor *x[3] = {rnd(GT_SHAPE(2, 3)), rnd(GT_SHAPE(2, 3)), rnd(GT_SHAPE(2, 3))};
  for (int axis = -3; axis <= 2; axis++) {
    tf_attr_kv kv = {"axis", tf_attr_int(axis)};
    tt_grad_check_op("Pack", x, 3, true, &kv, 1, 0, NULL, ATOL, RTOL);
  }
  tf_tensor *u = rnd(GT_SHAPE(2, 3, 4));
  int64_t dims[3] = {2, 3, 4};
  for (int axis = -3; axis <= 2; axis++) {
    int a = axis < 0 ? axis + 3 : axis;
    tf_attr_kv kv[2] = {{"axis", tf_attr_int(axis)}, {"num", tf_attr_int(dims[a])}};
    for (int out = 0; out < dims[a]; out += 2) {
      tt_grad_check_op("Unpack", &u, 1, false, kv, 2, out, NULL, ATOL, RTOL);
    }
  }
  tt_free(x, 3);
  tf_tensor_unref(u);
}
END_TEST

/* Slice(x, begin, size) with constant and fed begin/size. */
static void check_slice(tf_shape xs, tf_tensor *begin, tf_tensor *size) {
  tf_tensor *in[3] = {rnd(xs), begin, size};
  gt_build k = {.op = "Slice", .n_args = 3,
                .args = {GT_P(0), GT_C(begin), GT_C(size)}};
  tt_grad_check(gt_build_fn, &k, in, 1, NULL, ATOL, RTOL);
  gt_build d = {.op = "Slice", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_P(1), GT_P(2)}};
  tt_grad_check(gt_build_fn, &d, in, 3, NULL, ATOL, RTOL);
  gt_build r = {.op = "Slice", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_C(begin), GT_C(size)}};
  tt_grad_check(gt_build_fn, &r, in, 1, NULL, ATOL, RTOL);
  tt_free(in, 3);
}

START_TEST(test_slice) {
  check_slice(GT_SHAPE(4, 5), ivec(2, (int32_t[]){1, 2}), ivec(2, (int32_t[]){2, -1}));
  check_slice(GT_SHAPE(3, 2, 4), ivec(3, (int32_t[]){0, 1, 1}),
              ivec(3, (int32_t[]){3, 1, 2}));
  int64_t b[2] = {2, 0}, s[2] = {0, 3};
  check_slice(GT_SHAPE(4, 3), tf_tensor_vec_i64(2, b), tf_tensor_vec_i64(2, s));
}
END_TEST

/* StridedSlice with the given masks, constant and fed arguments. */
static void check_strided(tf_shape xs, int n, const int32_t *b,
                          const int32_t *e, const int32_t *s,
                          const int64_t masks[5], bool as_i64) {
  static const char *const names[5] = {"begin_mask", "end_mask",
                                       "ellipsis_mask", "new_axis_mask",
                                       "shrink_axis_mask"};
  tf_attr_kv kv[5];
  for (int i = 0; i < 5; i++) {
    kv[i] = (tf_attr_kv){names[i], tf_attr_int(masks[i])};
  }
  tf_tensor *in[4] = {rnd(xs), ivec(n, b), ivec(n, e), ivec(n, s)};
  for (int i = 1; as_i64 && i < 4; i++) {
    int64_t v[8];
    for (int k = 0; k < n; k++) {
      v[k] = tf_tensor_get_i64(in[i], k);
    }
    tf_tensor_unref(in[i]);
    in[i] = tf_tensor_vec_i64(n, v);
  }
  gt_build k = {.op = "StridedSlice", .n_args = 4,
                .args = {GT_P(0), GT_C(in[1]), GT_C(in[2]), GT_C(in[3])},
                .attrs = kv, .n_attrs = 5};
  tt_grad_check(gt_build_fn, &k, in, 1, NULL, ATOL, RTOL);
  gt_build d = {.op = "StridedSlice", .n_args = 4,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_P(1), GT_P(2), GT_P(3)},
                .attrs = kv, .n_attrs = 5};
  tt_grad_check(gt_build_fn, &d, in, 4, NULL, ATOL, RTOL);
  tt_free(in, 4);
}

START_TEST(test_strided_slice) {
  int64_t none[5] = {0}, shrink0[5] = {0, 0, 0, 0, 1},
          ellipsis[5] = {0, 0, 1, 2, 0}, be[5] = {2, 1, 0, 0, 0};
  check_strided(GT_SHAPE(6, 4), 2, (int32_t[]){1, 0}, (int32_t[]){5, 4},
                (int32_t[]){2, 1}, none, false);
  check_strided(GT_SHAPE(6, 4), 2, (int32_t[]){-1, 3}, (int32_t[]){-7, 0},
                (int32_t[]){-2, -1}, none, true);
  check_strided(GT_SHAPE(3, 4, 2), 2, (int32_t[]){1, 1}, (int32_t[]){2, 3},
                (int32_t[]){1, 1}, shrink0, false);
  check_strided(GT_SHAPE(3, 4, 2), 3, (int32_t[]){0, 0, 1}, (int32_t[]){0, 0, 2},
                (int32_t[]){1, 1, 1}, ellipsis, false);
  check_strided(GT_SHAPE(5, 4), 2, (int32_t[]){3, 1}, (int32_t[]){0, 4},
                (int32_t[]){-1, 2}, be, true);
}
END_TEST

/* StridedSliceGrad's own gradient (with respect to dy) slices again. */
START_TEST(test_strided_slice_grad_grad) {
  int64_t masks[5] = {0, 2, 0, 0, 0};
  tf_attr_kv kv[2] = {{"end_mask", tf_attr_int(masks[1])},
                      {"begin_mask", tf_attr_int(0)}};
  tf_tensor *in[5] = {ivec(2, (int32_t[]){5, 4}), ivec(2, (int32_t[]){4, 1}),
                      ivec(2, (int32_t[]){0, 0}), ivec(2, (int32_t[]){-2, 2}),
                      rnd(GT_SHAPE(2, 2))};
  tt_grad_check_op("StridedSliceGrad", in, 5, false, kv, 2, 0, NULL, ATOL, RTOL);
  tt_free(in, 5);
}
END_TEST

START_TEST(test_pad) {
  int32_t p[6] = {1, 0, 0, 2, 2, 1};
  int64_t p64[4] = {0, 3, 1, 1};
  tf_tensor *pads = tt_tensor_i(TF_INT32, GT_SHAPE(3, 2),
                                (int64_t[]){p[0], p[1], p[2], p[3], p[4], p[5]});
  check_unary_with_arg("Pad", GT_SHAPE(2, 3, 2), pads, NULL, 0);
  check_unary_with_arg("Pad", GT_SHAPE(2, 2),
                       tt_tensor_i(TF_INT64, GT_SHAPE(2, 2), p64), NULL, 0);
}
END_TEST

START_TEST(test_tile) {
  check_unary_with_arg("Tile", GT_SHAPE(2, 3), ivec(2, (int32_t[]){3, 2}), NULL, 0);
  check_unary_with_arg("Tile", GT_SHAPE(2, 1, 3), ivec(3, (int32_t[]){1, 4, 1}),
                       NULL, 0);
  check_unary_with_arg("Tile", GT_SHAPE(3), ivec(1, (int32_t[]){1}), NULL, 0);
  int64_t m64[2] = {2, 2};
  check_unary_with_arg("Tile", GT_SHAPE(2, 2), tf_tensor_vec_i64(2, m64), NULL, 0);
  /* Rank 5 with constant multiples: only the repeated dims split. */
  tf_tensor *x = rnd(GT_SHAPE(2, 1, 2, 1, 2));
  tf_tensor *m = ivec(5, (int32_t[]){1, 2, 1, 3, 1});
  gt_build b = {.op = "Tile", .n_args = 2, .args = {GT_P(0), GT_C(m)}};
  tt_grad_check(gt_build_fn, &b, &x, 1, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
  tf_tensor_unref(m);
}
END_TEST

/* Ranks 1-5 with every multiple repeated (rank 5 splits to rank 10 >
 * TF_MAX_RANK, so its gradient sums one axis at a time), constant and fed
 * multiples, static and hidden dims (hidden rank only up to rank 4: an
 * unknown rank uses TF's interleaved reshape), int64 multiples, and a zero
 * multiple (empty output: the gradient is all zeros). */
START_TEST(test_tile_ranks) {
  tf_shape xs[5] = {GT_SHAPE(3), GT_SHAPE(2, 3), GT_SHAPE(2, 1, 3),
                    GT_SHAPE(2, 1, 2, 2), GT_SHAPE(2, 1, 2, 1, 2)};
  int32_t mult[5][5] = {{3}, {2, 3}, {2, 3, 1}, {2, 2, 1, 2},
                        {2, 2, 2, 3, 2}};
  for (int r = 1; r <= 5; r++) {
    tf_tensor *x = rnd(xs[r - 1]);
    tf_tensor *m = ivec(r, mult[r - 1]);
    tf_tensor *in[2] = {x, m};
    gt_build c = {.op = "Tile", .n_args = 2, .args = {GT_P(0), GT_C(m)}};
    tt_grad_check(gt_build_fn, &c, &x, 1, NULL, ATOL, RTOL);
    for (int hide = GT_SHOW; hide <= (r <= 4 ? GT_HIDE_RANK : GT_HIDE_DIMS);
         hide++) {
      gt_build f = {.op = "Tile", .n_args = 2, .args = {GT_PH(0, hide), GT_P(1)}};
      tt_grad_check(gt_build_fn, &f, in, 2, NULL, ATOL, RTOL);
    }
    tf_tensor_unref(m);
    int64_t m64[5];
    for (int d = 0; d < r; d++) {
      m64[d] = mult[r - 1][d];
    }
    in[1] = tf_tensor_vec_i64(r, m64);
    gt_build f = {.op = "Tile", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_DIMS), GT_P(1)}};
    tt_grad_check(gt_build_fn, &f, in, 2, NULL, ATOL, RTOL);
    tf_tensor_unref(in[1]);
    tf_tensor_unref(x);
  }
  tf_tensor *x = rnd(GT_SHAPE(2, 1, 2, 1, 2));
  tf_tensor *in[2] = {x, ivec(5, (int32_t[]){2, 0, 2, 3, 2})};
  gt_build c = {.op = "Tile", .n_args = 2, .args = {GT_P(0), GT_C(in[1])}};
  tt_grad_check(gt_build_fn, &c, &x, 1, NULL, ATOL, RTOL);
  gt_build f = {.op = "Tile", .n_args = 2,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_P(1)}};
  tt_grad_check(gt_build_fn, &f, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_fill) {
  tf_tensor *in[2] = {ivec(2, (int32_t[]){3, 4}), tf_tensor_scalar_f64(0.7)};
  tt_grad_check_op("Fill", in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  gt_build b = {.op = "Fill", .n_args = 2, .args = {GT_C(in[0]), GT_P(1)}};
  tt_grad_check(gt_build_fn, &b, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

/* A tiny composite: ConcatV2, Transpose, StridedSlice, Tile and Pad chained. */
static tf_output chain(tf_graph *g, const tf_output *in, int n, void *arg) {
  (void)n;
  (void)arg;
  tf_node_builder *nb = tf_node_begin(g, "ConcatV2", NULL);
  tf_node_add_input_list(nb, in, 2);
  tf_node_add_input(nb, gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(0))));
  tf_status st;
  tf_status_init(&st);
  tf_output c = gt_o(tf_node_finish(nb, &st)); /* [5, 3] */
  tf_output t = gt_op2(g, "Transpose", c, gt_ivec(g, 2, (int32_t[]){1, 0}));
  tf_output s = gt_o(tt_node(g, "StridedSlice", NULL,
                             (tf_output[]){t, gt_ivec(g, 2, (int32_t[]){0, 4}),
                                           gt_ivec(g, 2, (int32_t[]){3, 0}),
                                           gt_ivec(g, 2, (int32_t[]){1, -2})},
                             4, NULL, 0)); /* [3, 2] */
  tf_output tl = gt_op2(g, "Tile", s, gt_ivec(g, 2, (int32_t[]){2, 1}));
  tf_output p = gt_op2(g, "Pad", tl, gt_o(tt_const(g, NULL, tt_tensor_i(
                                          TF_INT32, GT_SHAPE(2, 2),
                                          (int64_t[]){1, 0, 0, 2}))));
  return gt_op2(g, "Mul", p, p);
}

START_TEST(test_composite) {
  tf_tensor *in[2] = {rnd(GT_SHAPE(2, 3)), rnd(GT_SHAPE(3, 3))};
  tt_grad_check(chain, NULL, in, 2, NULL, 1e-7, 1e-6);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_array");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_reshape_expand_squeeze);
  tcase_add_test(tc, test_transpose);
  tcase_add_test(tc, test_concat);
  tcase_add_test(tc, test_concat_static_is_slices);
  tcase_add_test(tc, test_split);
  tcase_add_test(tc, test_pack_unpack);
  tcase_add_test(tc, test_slice);
  tcase_add_test(tc, test_strided_slice);
  tcase_add_test(tc, test_strided_slice_grad_grad);
  tcase_add_test(tc, test_pad);
  tcase_add_test(tc, test_tile);
  tcase_add_test(tc, test_tile_ranks);
  tcase_add_test(tc, test_fill);
  tcase_add_test(tc, test_composite);
  suite_add_tcase(s, tc);
  return s;
}
