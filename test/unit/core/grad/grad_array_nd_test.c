/* grad_array_nd_test.c: gradients of GatherNd, ScatterNd and TopKV2
 * (grad_array_nd.c) against float64 central differences (tt_grad_check;
 * atol 1e-8, rtol 1e-7: these ops only move and sum data), with duplicate
 * indices, int32 and int64 indices, constant and fed indices, hidden
 * static dims and ranks. GatherNd with [n, 1] indices must give TF's
 * sparse gradient (values dy, squeezed indices, dense_shape); TopKV2 with
 * ties must send the gradient to the lower index (TF's choice), exactly;
 * Bincount and InTopKV2 stop gradients. */
#include <check.h>

#include "test/unit/core/grad/grad_testlib.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/graph/grad_registry.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

START_TEST(test_gather_nd) {
  tf_tensor *p = rnd(GT_SHAPE(4, 3, 2));
  tf_tensor *idx[4] = {
      tt_tensor_i(TF_INT32, GT_SHAPE(3, 2), (int64_t[]){1, 0, 3, 2, 1, 0}),
      tt_tensor_i(TF_INT64, GT_SHAPE(2, 2, 3),
                  (int64_t[]){0, 0, 1, 3, 2, 0, 0, 0, 1, 2, 1, 1}),
      tt_tensor_i(TF_INT32, GT_SHAPE(3, 1), (int64_t[]){2, 0, 2}),
      tt_tensor_i(TF_INT64, GT_SHAPE(2, 0), NULL)};
  for (int k = 0; k < 4; k++) {
    tf_tensor *in[2] = {p, idx[k]};
    tt_grad_check_op("GatherNd", in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
    gt_build c = {.op = "GatherNd", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_DIMS), GT_C(idx[k])}};
    tt_grad_check(gt_build_fn, &c, in, 1, NULL, ATOL, RTOL);
    gt_build r = {.op = "GatherNd", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_RANK), GT_PH(1, GT_HIDE_RANK)}};
    tt_grad_check(gt_build_fn, &r, in, 2, NULL, ATOL, RTOL);
  }
  tt_free(idx, 4);
  tf_tensor_unref(p);
}
END_TEST

/* [n, 1] indices: the gradient stays sparse (TF's IndexedSlices). */
START_TEST(test_gather_nd_sparse) {
  tf_graph *g = tf_graph_new();
  tf_output p = gt_o(tt_placeholder(g, "p", TF_FLOAT64, GT_SHAPE(4, 2)));
  tf_output idx = gt_o(tt_const(g, "idx", tt_tensor_i(TF_INT32, GT_SHAPE(3, 1),
                                                      (int64_t[]){3, 1, 3})));
  tf_output y = gt_o(tt_node(g, "GatherNd", "y", (tf_output[]){p, idx}, 2,
                             NULL, 0));
  tf_tensor *w = rnd(GT_SHAPE(3, 2));
  tf_output gy = gt_o(tt_const(g, "w", tf_tensor_ref(w)));
  tf_grad sp;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients_sparse(g, &y, 1, &p, 1, &gy, &sp, &st), TF_OK);
  ck_assert(tf_grad_is_sparse(&sp));
  ck_assert_int_eq(gt_count_op(g, "ScatterNd"), 0);
  tf_tensor *pv = rnd(GT_SHAPE(4, 2));
  const char *names[1] = {"p"};
  tf_tensor *vals = gt_run(g, names, &pv, 1, sp.values);
  tf_tensor *ids = gt_run(g, names, &pv, 1, sp.indices);
  tf_tensor *shape = gt_run(g, names, &pv, 1, sp.dense_shape);
  tt_assert_close(vals, w, 0, 0);
  ck_assert_int_eq(ids->n, 3);
  ck_assert_int_eq(tf_tensor_get_i64(ids, 0), 3);
  ck_assert_int_eq(tf_tensor_get_i64(ids, 1), 1);
  ck_assert_int_eq(tf_tensor_get_i64(ids, 2), 3);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 0), 4);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 1), 2);
  tt_free((tf_tensor *[]){w, pv, vals, ids, shape}, 5);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_scatter_nd) {
  tf_tensor *idx[2] = {
      tt_tensor_i(TF_INT32, GT_SHAPE(4, 1), (int64_t[]){2, 0, 2, 3}),
      tt_tensor_i(TF_INT64, GT_SHAPE(3, 2), (int64_t[]){1, 2, 0, 0, 1, 2})};
  tf_tensor *upd[2] = {rnd(GT_SHAPE(4, 3)), rnd(GT_SHAPE(3))};
  tf_tensor *shape[2] = {tt_tensor_i(TF_INT32, GT_SHAPE(2), (int64_t[]){4, 3}),
                         tt_tensor_i(TF_INT64, GT_SHAPE(2), (int64_t[]){2, 3})};
  for (int k = 0; k < 2; k++) {
    tf_tensor *in[3] = {idx[k], upd[k], shape[k]};
    tt_grad_check_op("ScatterNd", in, 3, false, NULL, 0, 0, NULL, ATOL, RTOL);
    gt_build c = {.op = "ScatterNd", .n_args = 3,
                  .args = {GT_C(idx[k]), GT_PH(0, GT_HIDE_RANK),
                           GT_C(shape[k])}};
    tt_grad_check(gt_build_fn, &c, &upd[k], 1, NULL, ATOL, RTOL);
  }
  tt_free(idx, 2);
  tt_free(upd, 2);
  tt_free(shape, 2);
}
END_TEST

/* Random values are distinct with probability 1, so TopK is locally
 * linear and central differences apply. */
START_TEST(test_top_k) {
  tf_shape shapes[3] = {GT_SHAPE(7), GT_SHAPE(3, 5), GT_SHAPE(2, 2, 4)};
  int ks[3] = {3, 5, 1};
  for (int c = 0; c < 3; c++) {
    tf_tensor *x = rnd(shapes[c]);
    tf_tensor *k = tf_tensor_scalar_i32(ks[c]);
    tf_tensor *in[2] = {x, k};
    tt_grad_check_op("TopKV2", in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
    gt_build h = {.op = "TopKV2", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_RANK), GT_C(k)}};
    tt_grad_check(gt_build_fn, &h, in, 1, NULL, ATOL, RTOL);
    tt_free(in, 2);
  }
}
END_TEST

/* Ties: TF picks the lower index, so it alone gets dy; k = 0 gives zeros. */
START_TEST(test_top_k_ties) {
  for (int kk = 0; kk <= 1; kk++) {
    tf_graph *g = tf_graph_new();
    tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(2, 4)));
    tf_output k = gt_o(tt_const(g, "k", tf_tensor_scalar_i32(kk)));
    tf_output y = gt_o(tt_node(g, "TopKV2", "y", (tf_output[]){x, k}, 2,
                               NULL, 0));
    tf_tensor *w = tt_tensor(TF_FLOAT64, GT_SHAPE(2, kk),
                             (double[]){2.5, -1.5});
    tf_output gy = gt_o(tt_const(g, "w", w));
    tf_output dx;
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, &gy, &dx, &st), TF_OK);
    tf_tensor *xv = tt_tensor(TF_FLOAT64, GT_SHAPE(2, 4),
                              (double[]){1, 3, 3, 0, -2, -2, -2, -2});
    const char *names[1] = {"x"};
    tf_tensor *got = gt_run(g, names, &xv, 1, dx);
    double want[8] = {0};
    if (kk == 1) {
      want[1] = 2.5;
      want[4] = -1.5;
    }
    tf_tensor *wt = tt_tensor(TF_FLOAT64, GT_SHAPE(2, 4), want);
    tt_assert_close(got, wt, 0, 0);
    tt_free((tf_tensor *[]){xv, got, wt}, 3);
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_not_differentiable) {
  ck_assert(tf_op_lookup("Bincount")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(tf_op_lookup("InTopKV2")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert_int_eq(tf__grad_count_registrations("GatherNd"), 1);
  ck_assert_int_eq(tf__grad_count_registrations("ScatterNd"), 1);
  ck_assert_int_eq(tf__grad_count_registrations("TopKV2"), 1);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_array_nd");
  TCase *tc = tcase_create("grad");
  tcase_add_test(tc, test_gather_nd);
  tcase_add_test(tc, test_gather_nd_sparse);
  tcase_add_test(tc, test_scatter_nd);
  tcase_add_test(tc, test_top_k);
  tcase_add_test(tc, test_top_k_ties);
  tcase_add_test(tc, test_not_differentiable);
  suite_add_tcase(s, tc);
  return s;
}
