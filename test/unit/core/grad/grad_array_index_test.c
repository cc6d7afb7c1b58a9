/* grad_array_index_test.c: gradients of Gather, GatherV2, DynamicStitch
 * and DynamicPartition (grad_array_index.c) against float64 central
 * differences (tt_grad_check; atol 1e-8, rtol 1e-7: these ops only move
 * and sum data), with duplicate indices, int32 and int64 indices, constant
 * and fed indices, hidden static dims. For Gather and GatherV2 on axis 0,
 * tf_gradients_sparse must return a sparse gradient (values [n, row...],
 * flattened indices, dense_shape) with no densifying node in the graph,
 * and tf_gradients its dense equivalent, compared with a scatter-add
 * written here. GatherV2 with the axis fed at run time (and ranks
 * hidden) goes through the graph-built gradient; UnsortedSegmentSum's
 * gradient with negative (dropped) ids gives those slices exactly 0.
 * OneHot, Range and Where stop gradients. */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

START_TEST(test_gather) {
  tf_tensor *p = rnd(GT_SHAPE(5, 3));
  tf_tensor *idx[3] = {
      tf_tensor_vec_i32(4, (int32_t[]){1, 3, 1, 0}),
      tf_tensor_vec_i64(3, (int64_t[]){4, 4, 4}),
      tt_tensor_i(TF_INT32, GT_SHAPE(2, 2), (int64_t[]){2, 0, 2, 2})};
  for (int k = 0; k < 3; k++) {
    tf_tensor *in[2] = {p, idx[k]};
    tt_grad_check_op("Gather", in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
    gt_build c = {.op = "Gather", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_DIMS), GT_C(idx[k])}};
    tt_grad_check(gt_build_fn, &c, in, 1, NULL, ATOL, RTOL);
    gt_build r = {.op = "Gather", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_RANK), GT_P(1)}};
    tt_grad_check(gt_build_fn, &r, in, 2, NULL, ATOL, RTOL);
  }
  tt_free(idx, 3);
  tf_tensor_unref(p);
}
END_TEST

/* Builds op(params [5, 3] placeholder (dims hidden when hide), indices
 * const[, axis 0]) and checks the sparse gradient with respect to the
 * params input: its parts, its values, and the dense gradient. */
static void check_sparse(const char *op, bool hide) {
  tf_graph *g = tf_graph_new();
  tf_output p = gt_o(tt_placeholder(g, "p", TF_FLOAT64, GT_SHAPE(5, 3)));
  tf_output ph = gt_hide(g, p, hide ? GT_HIDE_DIMS : GT_SHOW);
  int32_t iv[5] = {3, 1, 3, 3, 0};
  tf_output idx = gt_o(tt_const(g, "idx", tt_tensor_i(TF_INT32, GT_SHAPE(5),
                                                      (int64_t[]){3, 1, 3, 3, 0})));
  tf_output in[3] = {ph, idx, gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(0)))};
  tf_output y = gt_o(tt_node(g, op, "y", in, strcmp(op, "Gather") ? 3 : 2, NULL, 0));
  tf_tensor *w = rnd(GT_SHAPE(5, 3));
  tf_output gy = gt_o(tt_const(g, "w", tf_tensor_ref(w)));
  tf_grad sp;
  tf_status st;
  tf_status_init(&st);
  int before = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_gradients_sparse(g, &y, 1, &ph, 1, &gy, &sp, &st), TF_OK);
  ck_assert_msg(tf_grad_is_sparse(&sp), "%s: values %s (%s)", op, tf_node_name(sp.values.node), tf_node_op(sp.values.node));
  ck_assert_ptr_nonnull(sp.dense_shape.node);
  ck_assert_int_eq(gt_count_op(g, "UnsortedSegmentSum"), 0);
  ck_assert_int_gt(tf_graph_num_nodes(g), before);
  tf_output dense;
  ck_assert_int_eq(tf_gradients(g, &y, 1, &ph, 1, &gy, &dense, &st), TF_OK);
  ck_assert(!tf_grad_is_sparse(&(tf_grad){.values = dense}));
  tf_tensor *pv = rnd(GT_SHAPE(5, 3));
  const char *names[1] = {"p"};
  tf_tensor *vals = gt_run(g, names, &pv, 1, sp.values);
  tf_tensor *ids = gt_run(g, names, &pv, 1, sp.indices);
  tf_tensor *shape = gt_run(g, names, &pv, 1, sp.dense_shape);
  tf_tensor *dv = gt_run(g, names, &pv, 1, dense);
  /* values are the rows of grad_ys in order; indices the gathered ones. */
  tt_assert_close(vals, w, 0, 0);
  ck_assert_int_eq(ids->n, 5);
  double want[15] = {0};
  for (int k = 0; k < 5; k++) {
    ck_assert_int_eq(tf_tensor_get_i64(ids, k), iv[k]);
    for (int c = 0; c < 3; c++) {
      want[iv[k] * 3 + c] += tf_tensor_get_f64(w, k * 3 + c);
    }
  }
  ck_assert_int_eq(shape->n, 2);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 0), 5);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 1), 3);
  tf_tensor *wt = tt_tensor(TF_FLOAT64, GT_SHAPE(5, 3), want);
  tt_assert_close(dv, wt, 1e-15, 1e-15);
  tt_free((tf_tensor *[]){w, pv, vals, ids, shape, dv, wt}, 7);
  tf_graph_free(g);
}

START_TEST(test_gather_sparse) {
  check_sparse("Gather", false);
  check_sparse("Gather", true);
  check_sparse("GatherV2", false);
  check_sparse("GatherV2", true);
}
END_TEST

/* GatherV2(params, indices, axis) with batch_dims. */
static void check_v2(tf_shape ps, tf_tensor *idx, int axis, int batch_dims) {
  tf_tensor *in[3] = {rnd(ps), idx, tf_tensor_scalar_i32(axis)};
  tf_attr_kv kv = {"batch_dims", tf_attr_int(batch_dims)};
  gt_build c = {.op = "GatherV2", .n_args = 3,
                .args = {GT_P(0), GT_C(idx), GT_C(in[2])}, .attrs = &kv,
                .n_attrs = 1};
  tt_grad_check(gt_build_fn, &c, in, 1, NULL, ATOL, RTOL);
  gt_build h = {.op = "GatherV2", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_DIMS),
                         GT_C(in[2])},
                .attrs = &kv, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &h, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 3);
}

START_TEST(test_gather_v2_axes) {
  check_v2(GT_SHAPE(3, 4), tf_tensor_vec_i32(3, (int32_t[]){3, 0, 3}), 1, 0);
  check_v2(GT_SHAPE(2, 4, 3), tf_tensor_vec_i64(4, (int64_t[]){1, 1, 2, 0}), -1, 0);
  check_v2(GT_SHAPE(2, 4, 3),
           tt_tensor_i(TF_INT32, GT_SHAPE(2, 2), (int64_t[]){3, 3, 0, 1}), 1, 0);
  /* batch_dims 1: per batch row its own indices. */
  check_v2(GT_SHAPE(2, 4, 3),
           tt_tensor_i(TF_INT32, GT_SHAPE(2, 3), (int64_t[]){3, 3, 0, 1, 2, 1}), 1, 1);
  check_v2(GT_SHAPE(2, 3, 4, 2),
           tt_tensor_i(TF_INT64, GT_SHAPE(2, 2), (int64_t[]){0, 3, 2, 2}), 2, -1);
  check_v2(GT_SHAPE(2, 3, 4),
           tt_tensor_i(TF_INT32, GT_SHAPE(2, 3, 2), (int64_t[]){0, 1, 1, 1, 2, 0,
                                                                2, 2, 0, 1, 1, 0}),
           2, 2);
}
END_TEST

/* GatherV2 with the axis fed at run time (TF builds this gradient from
 * graph ops): positive and negative axes, axis 0 (dense then), batch dims,
 * params and indices with hidden dims or rank. */
static void check_v2_fed_axis(tf_shape ps, tf_tensor *idx, int axis,
                              int batch_dims) {
  tf_tensor *in[3] = {rnd(ps), idx, tf_tensor_scalar_i32(axis)};
  tf_attr_kv kv = {"batch_dims", tf_attr_int(batch_dims)};
  gt_build f = {.op = "GatherV2", .n_args = 3,
                .args = {GT_P(0), GT_C(idx), GT_P(2)}, .attrs = &kv,
                .n_attrs = 1};
  tt_grad_check(gt_build_fn, &f, in, 3, NULL, ATOL, RTOL);
  gt_build h = {.op = "GatherV2", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_PH(1, GT_HIDE_DIMS),
                         GT_P(2)},
                .attrs = &kv, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &h, in, 3, NULL, ATOL, RTOL);
  tt_free(in, 3);
}

START_TEST(test_gather_v2_fed_axis) {
  check_v2_fed_axis(GT_SHAPE(3, 4), tf_tensor_vec_i32(3, (int32_t[]){3, 0, 3}),
                    1, 0);
  check_v2_fed_axis(GT_SHAPE(5, 2), tf_tensor_vec_i64(4, (int64_t[]){4, 1, 1, 0}),
                    0, 0);
  check_v2_fed_axis(GT_SHAPE(2, 4, 3),
                    tf_tensor_vec_i64(4, (int64_t[]){1, 1, 2, 0}), -1, 0);
  check_v2_fed_axis(GT_SHAPE(2, 4, 3),
                    tt_tensor_i(TF_INT32, GT_SHAPE(2, 2), (int64_t[]){3, 3, 0, 1}),
                    -2, 0);
  check_v2_fed_axis(GT_SHAPE(2, 4, 3),
                    tt_tensor_i(TF_INT32, GT_SHAPE(2, 3),
                                (int64_t[]){3, 3, 0, 1, 2, 1}),
                    1, 1);
  check_v2_fed_axis(GT_SHAPE(2, 3, 4, 2),
                    tt_tensor_i(TF_INT64, GT_SHAPE(2, 2), (int64_t[]){0, 3, 2, 2}),
                    2, -1);
  check_v2_fed_axis(GT_SHAPE(2, 3, 4),
                    tt_tensor_i(TF_INT32, GT_SHAPE(2, 3, 2),
                                (int64_t[]){0, 1, 1, 1, 2, 0, 2, 2, 0, 1, 1, 0}),
                    2, 2);
  /* A constant axis with ranks unknown takes the same graph-built path. */
  tf_tensor *p = rnd(GT_SHAPE(2, 4, 3));
  tf_tensor *idx = tt_tensor_i(TF_INT32, GT_SHAPE(2, 3),
                               (int64_t[]){3, 3, 0, 1, 2, 1});
  tf_tensor *axis = tf_tensor_scalar_i32(-2);
  tf_attr_kv kv = {"batch_dims", tf_attr_int(1)};
  gt_build c = {.op = "GatherV2", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_PH(1, GT_HIDE_DIMS),
                         GT_C(axis)},
                .attrs = &kv, .n_attrs = 1};
  tf_tensor *in[2] = {p, idx};
  tt_grad_check(gt_build_fn, &c, in, 2, NULL, ATOL, RTOL);
  tt_free((tf_tensor *[]){p, idx, axis}, 3);
}
END_TEST

/* Fed axis at every params rank 1-5, every axis (positive and negative),
 * with vector and matrix indices (output ranks up to 6). */
START_TEST(test_gather_v2_fed_axis_ranks) {
  tf_shape ps[5] = {GT_SHAPE(5), GT_SHAPE(3, 4), GT_SHAPE(2, 4, 3),
                    GT_SHAPE(2, 3, 2, 3), GT_SHAPE(2, 2, 3, 2, 2)};
  for (int r = 1; r <= 5; r++) {
    for (int a = -r; a < r; a++) {
      int64_t dim = ps[r - 1].dims[a < 0 ? a + r : a];
      tf_tensor *idx =
          (r + a) % 2 ? tf_tensor_vec_i32(3, (int32_t[]){(int32_t)dim - 1, 0,
                                                          (int32_t)dim - 1})
                      : tt_tensor_i(TF_INT64, GT_SHAPE(2, 2),
                                    (int64_t[]){0, dim - 1, 1, 0});
      check_v2_fed_axis(ps[r - 1], idx, a, 0);
    }
  }
}
END_TEST

/* A negative batch_dims needs the indices' rank (TF refuses it too). */
START_TEST(test_gather_v2_negative_batch_dims_unknown_rank) {
  tf_graph *g = tf_graph_new();
  tf_output p = gt_o(tt_placeholder(g, "p", TF_FLOAT64, GT_SHAPE(2, 4, 3)));
  tf_output i = gt_o(tt_placeholder(g, "i", TF_INT32, tf_shape_unknown()));
  tf_output a = gt_o(tt_placeholder(g, "a", TF_INT32, tf_shape_scalar()));
  tf_attr_kv kv = {"batch_dims", tf_attr_int(-1)};
  tf_output y = gt_o(tt_node(g, "GatherV2", "y", (tf_output[]){p, i, a}, 3,
                             &kv, 1));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &p, 1, NULL, &dx, &st),
                   TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, "'y'") && strstr(st.msg, "batch_dims -1"),
                "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* ---- UnsortedSegmentSum ------------------------------------------------- */

/* data [ids shape..., row...] summed by ids (negative ids dropped). */
static void check_segment_sum(tf_shape ds, tf_tensor *ids, int num) {
  tf_tensor *in[3] = {rnd(ds), ids, tf_tensor_scalar_i32(num)};
  gt_build c = {.op = "UnsortedSegmentSum", .n_args = 3,
                .args = {GT_P(0), GT_C(ids), GT_C(in[2])}};
  tt_grad_check(gt_build_fn, &c, in, 1, NULL, ATOL, RTOL);
  gt_build f = {.op = "UnsortedSegmentSum", .n_args = 3,
                .args = {GT_PH(0, GT_HIDE_RANK), GT_PH(1, GT_HIDE_DIMS),
                         GT_P(2)}};
  tt_grad_check(gt_build_fn, &f, in, 3, NULL, ATOL, RTOL);
  tt_free(in, 3);
}

START_TEST(test_unsorted_segment_sum) {
  check_segment_sum(GT_SHAPE(6, 2),
                    tf_tensor_vec_i32(6, (int32_t[]){2, -1, 0, 2, -3, 1}), 4);
  check_segment_sum(GT_SHAPE(5),
                    tf_tensor_vec_i64(5, (int64_t[]){0, 0, -1, 1, 0}), 2);
  check_segment_sum(GT_SHAPE(2, 3, 2),
                    tt_tensor_i(TF_INT32, GT_SHAPE(2, 3),
                                (int64_t[]){1, -1, 0, -2, 1, 2}),
                    3);
  check_segment_sum(GT_SHAPE(3, 2),
                    tf_tensor_vec_i32(3, (int32_t[]){-1, -1, -1}), 1);
}
END_TEST

/* The slices of dropped ids get exactly 0, even when the row a clipped id
 * would gather holds NaN; the others get dy's row of their id. */
START_TEST(test_unsorted_segment_sum_drops_exactly) {
  tf_graph *g = tf_graph_new();
  tf_output d = gt_o(tt_placeholder(g, "d", TF_FLOAT64, GT_SHAPE(4, 2)));
  tf_output ids = gt_ivec(g, 4, (int32_t[]){-1, 1, 0, -5});
  tf_output n = gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(2)));
  tf_output y = gt_o(tt_node(g, "UnsortedSegmentSum", "y",
                             (tf_output[]){d, ids, n}, 3, NULL, 0));
  tf_tensor *w = tt_tensor(TF_FLOAT64, GT_SHAPE(2, 2),
                           (double[]){NAN, 2, 3, 4});
  tf_output gy = gt_o(tt_const(g, "w", w));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &d, 1, &gy, &dx, &st), TF_OK);
  tf_tensor *dv0 = rnd(GT_SHAPE(4, 2));
  const char *names[1] = {"d"};
  tf_tensor *got = gt_run(g, names, &dv0, 1, dx);
  const double *v = got->data;
  ck_assert(v[0] == 0 && !signbit(v[0]) && v[1] == 0);
  ck_assert(v[2] == 3 && v[3] == 4);
  ck_assert(isnan(v[4]) && v[5] == 2);
  ck_assert(v[6] == 0 && v[7] == 0);
  tt_free((tf_tensor *[]){dv0, got}, 2);
  tf_graph_free(g);
}
END_TEST

/* DynamicStitch(indices..., data...) with n inputs. */
static void check_stitch(int n, tf_tensor **idx, tf_tensor **data) {
  tf_tensor *in[8];
  gt_build c = {.op = "DynamicStitch", .n_args = 2 * n, .list_start = 0,
                .list_len = n, .list2_start = n, .list2_len = n};
  gt_build f = c;
  for (int i = 0; i < n; i++) {
    in[i] = data[i];
    in[n + i] = idx[i];
    c.args[i] = GT_C(idx[i]);
    c.args[n + i] = GT_P(i);
    f.args[i] = GT_PH(n + i, GT_HIDE_DIMS);
    f.args[n + i] = GT_PH(i, i == 0 ? GT_HIDE_RANK : GT_SHOW);
  }
  tt_grad_check(gt_build_fn, &c, in, n, NULL, ATOL, RTOL);
  tt_grad_check(gt_build_fn, &f, in, 2 * n, NULL, ATOL, RTOL);
  tt_free(idx, n);
  tt_free(data, n);
}

START_TEST(test_dynamic_stitch) {
  /* Distinct indices (a permutation). */
  tf_tensor *i1[2] = {tf_tensor_vec_i32(2, (int32_t[]){0, 3}),
                      tt_tensor_i(TF_INT32, GT_SHAPE(2, 1), (int64_t[]){2, 1})};
  tf_tensor *d1[2] = {rnd(GT_SHAPE(2, 2)), rnd(GT_SHAPE(2, 1, 2))};
  check_stitch(2, i1, d1);
  /* Duplicates: later inputs win, the overwritten slices get zero. */
  tf_tensor *i2[3] = {tf_tensor_vec_i32(3, (int32_t[]){0, 1, 2}),
                      tf_tensor_vec_i32(2, (int32_t[]){1, 4}),
                      tf_tensor_vec_i32(2, (int32_t[]){4, 3})};
  tf_tensor *d2[3] = {rnd(GT_SHAPE(3)), rnd(GT_SHAPE(2)), rnd(GT_SHAPE(2))};
  check_stitch(3, i2, d2);
  /* Duplicates within one input. */
  tf_tensor *i3[1] = {tf_tensor_vec_i32(4, (int32_t[]){1, 0, 1, 2})};
  tf_tensor *d3[1] = {rnd(GT_SHAPE(4, 3))};
  check_stitch(1, i3, d3);
}
END_TEST

START_TEST(test_dynamic_partition) {
  tf_tensor *in[2] = {rnd(GT_SHAPE(6, 2)),
                      tf_tensor_vec_i32(6, (int32_t[]){2, 0, 2, 1, 0, 2})};
  tf_attr_kv kv = {"num_partitions", tf_attr_int(4)}; /* 3 stays empty */
  for (int out = 0; out < 4; out++) {
    gt_build c = {.op = "DynamicPartition", .n_args = 2,
                  .args = {GT_P(0), GT_C(in[1])}, .attrs = &kv, .n_attrs = 1,
                  .out = out};
    tt_grad_check(gt_build_fn, &c, in, 1, NULL, ATOL, RTOL);
    gt_build f = {.op = "DynamicPartition", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_RANK), GT_P(1)}, .attrs = &kv,
                  .n_attrs = 1, .out = out};
    tt_grad_check(gt_build_fn, &f, in, 2, NULL, ATOL, RTOL);
  }
  tf_tensor *m[2] = {rnd(GT_SHAPE(2, 3, 2)),
                     tt_tensor_i(TF_INT32, GT_SHAPE(2, 3), (int64_t[]){1, 1, 0, 0, 1, 0})};
  tf_attr_kv two = {"num_partitions", tf_attr_int(2)};
  gt_build c = {.op = "DynamicPartition", .n_args = 2,
                .args = {GT_P(0), GT_C(m[1])}, .attrs = &two, .n_attrs = 1,
                .out = 1};
  tt_grad_check(gt_build_fn, &c, m, 1, NULL, ATOL, RTOL);
  tt_free(m, 2);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_not_differentiable) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_scalar()));
  tf_output in[4] = {gt_ivec(g, 2, (int32_t[]){0, 2}),
                     gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(3))), x,
                     gt_o(tt_const(g, NULL, tf_tensor_scalar_f64(0)))};
  tf_output y = gt_o(tt_node(g, "OneHot", "y", in, 4, NULL, 0));
  tf_output r_in[3] = {x, gt_o(tt_const(g, NULL, tf_tensor_scalar_f64(5))),
                       gt_o(tt_const(g, NULL, tf_tensor_scalar_f64(1)))};
  tf_output r = gt_o(tt_node(g, "Range", "r", r_in, 3, NULL, 0));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_ptr_null(dx.node);
  ck_assert_int_eq(tf_gradients(g, &r, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_ptr_null(dx.node);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_array_index");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_gather);
  tcase_add_test(tc, test_gather_sparse);
  tcase_add_test(tc, test_gather_v2_axes);
  tcase_add_test(tc, test_gather_v2_fed_axis);
  tcase_add_test(tc, test_gather_v2_fed_axis_ranks);
  tcase_add_test(tc, test_gather_v2_negative_batch_dims_unknown_rank);
  tcase_add_test(tc, test_unsorted_segment_sum);
  tcase_add_test(tc, test_unsorted_segment_sum_drops_exactly);
  tcase_add_test(tc, test_dynamic_stitch);
  tcase_add_test(tc, test_dynamic_partition);
  tcase_add_test(tc, test_not_differentiable);
  suite_add_tcase(s, tc);
  return s;
}
