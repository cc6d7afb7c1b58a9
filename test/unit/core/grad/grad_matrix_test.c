/* grad_matrix_test.c: gradients of MatMul (all four transpose_a/transpose_b
 * combinations), BatchMatMul and BatchMatMulV2 (all adj_x/adj_y
 * combinations, equal and broadcast batch dims, static and hidden shapes),
 * MatrixInverse (adjoint both ways) and MatrixDeterminant, each against
 * float64 central differences (tt_grad_check). Products are bilinear, so
 * atol 1e-8 / rtol 1e-7; the inverse and determinant are checked on
 * well-conditioned matrices (3I + U(-1, 1)) with atol 1e-6 / rtol 1e-5.
 * Structural checks: MatMul's gradients are MatMuls flagged grad_a/grad_b
 * with no Transpose nodes, BatchMatMul's and BatchMatMulV2's are
 * BatchMatMulV2s flagged grad_x/grad_y (as TF's); static batch
 * broadcasting folds its axes. */
#include <check.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

static tf_shape t2(tf_shape s, bool t) {
  if (t) {
    int64_t d = s.dims[s.rank - 1];
    s.dims[s.rank - 1] = s.dims[s.rank - 2];
    s.dims[s.rank - 2] = d;
  }
  return s;
}

START_TEST(test_matmul) {
  for (int c = 0; c < 4; c++) {
    bool ta = c & 1, tb = c & 2;
    tf_tensor *in[2] = {rnd(t2(GT_SHAPE(3, 4), ta)), rnd(t2(GT_SHAPE(4, 2), tb))};
    tf_attr_kv kv[2] = {{"transpose_a", tf_attr_bool(ta)},
                        {"transpose_b", tf_attr_bool(tb)}};
    tt_grad_check_op("MatMul", in, 2, false, kv, 2, 0, NULL, ATOL, RTOL);
    gt_build h = {.op = "MatMul", .n_args = 2,
                  .args = {GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_DIMS)},
                  .attrs = kv, .n_attrs = 2};
    tt_grad_check(gt_build_fn, &h, in, 2, NULL, ATOL, RTOL);
    tt_free(in, 2);
  }
}
END_TEST

START_TEST(test_matmul_structure) {
  for (int c = 0; c < 4; c++) {
    bool ta = c & 1, tb = c & 2;
    tf_graph *g = tf_graph_new();
    tf_output x[2] = {
        gt_o(tt_placeholder(g, "a", TF_FLOAT32, t2(GT_SHAPE(3, 4), ta))),
        gt_o(tt_placeholder(g, "b", TF_FLOAT32, t2(GT_SHAPE(4, 2), tb)))};
    tf_attr_kv kv[2] = {{"transpose_a", tf_attr_bool(ta)},
                        {"transpose_b", tf_attr_bool(tb)}};
    tf_output y = gt_o(tt_node(g, "MatMul", "y", x, 2, kv, 2));
    tf_output dx[2];
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, x, 2, NULL, dx, &st), TF_OK);
    ck_assert_int_eq(gt_count_op(g, "Transpose"), 0);
    for (int i = 0; i < 2; i++) {
      ck_assert_str_eq(tf_node_op(dx[i].node), "MatMul");
      bool flag = false;
      ck_assert_int_eq(tf_node_attr_get_bool(dx[i].node, i ? "grad_b" : "grad_a",
                                             &flag, &st), TF_OK);
      ck_assert(flag);
      ck_assert(tf_shape_equal(tf_node_output_shape(dx[i].node, 0),
                               tf_node_output_shape(x[i].node, 0)));
    }
    tf_graph_free(g);
  }
}
END_TEST

/* With equal batch dims dx and dy are the BatchMatMulV2 products
 * themselves, flagged grad_x for x's and grad_y for y's. */
START_TEST(test_batch_matmul_structure) {
  const char *ops[2] = {"BatchMatMul", "BatchMatMulV2"};
  for (int c = 0; c < 8; c++) {
    bool ax = c & 1, ay = c & 2;
    tf_graph *g = tf_graph_new();
    tf_output x[2] = {
        gt_o(tt_placeholder(g, "a", TF_FLOAT32, t2(GT_SHAPE(2, 3, 4), ax))),
        gt_o(tt_placeholder(g, "b", TF_FLOAT32, t2(GT_SHAPE(2, 4, 5), ay)))};
    tf_attr_kv kv[2] = {{"adj_x", tf_attr_bool(ax)}, {"adj_y", tf_attr_bool(ay)}};
    tf_output y = gt_o(tt_node(g, ops[c >> 2], "y", x, 2, kv, 2));
    tf_output dx[2];
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, x, 2, NULL, dx, &st), TF_OK);
    for (int i = 0; i < 2; i++) {
      ck_assert_str_eq(tf_node_op(dx[i].node), "BatchMatMulV2");
      bool mine = false, other = true;
      ck_assert_int_eq(tf_node_attr_get_bool(dx[i].node, i ? "grad_y" : "grad_x",
                                             &mine, &st), TF_OK);
      ck_assert_int_eq(tf_node_attr_get_bool(dx[i].node, i ? "grad_x" : "grad_y",
                                             &other, &st), TF_OK);
      ck_assert(mine && !other);
      ck_assert(tf_shape_equal(tf_node_output_shape(dx[i].node, 0),
                               tf_node_output_shape(x[i].node, 0)));
    }
    tf_graph_free(g);
  }
}
END_TEST

static void check_bmm(const char *op, tf_shape xs, tf_shape ys, bool hide) {
  for (int c = 0; c < 4; c++) {
    bool ax = c & 1, ay = c & 2;
    tf_tensor *in[2] = {rnd(t2(xs, ax)), rnd(t2(ys, ay))};
    tf_attr_kv kv[2] = {{"adj_x", tf_attr_bool(ax)}, {"adj_y", tf_attr_bool(ay)}};
    tt_grad_check_op(op, in, 2, false, kv, 2, 0, NULL, ATOL, RTOL);
    if (hide) {
      gt_build h = {.op = op, .n_args = 2,
                    .args = {GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_RANK)},
                    .attrs = kv, .n_attrs = 2};
      tt_grad_check(gt_build_fn, &h, in, 2, NULL, ATOL, RTOL);
    }
    tt_free(in, 2);
  }
}

START_TEST(test_batch_matmul) {
  check_bmm("BatchMatMul", GT_SHAPE(2, 3, 4), GT_SHAPE(2, 4, 2), true);
  check_bmm("BatchMatMulV2", GT_SHAPE(2, 3, 4), GT_SHAPE(2, 4, 2), true);
  check_bmm("BatchMatMulV2", GT_SHAPE(3, 4), GT_SHAPE(4, 2), false);
}
END_TEST

START_TEST(test_batch_matmul_broadcast) {
  check_bmm("BatchMatMulV2", GT_SHAPE(2, 1, 3, 4), GT_SHAPE(3, 4, 2), true);
  check_bmm("BatchMatMulV2", GT_SHAPE(3, 4), GT_SHAPE(2, 4, 2), true);
  check_bmm("BatchMatMulV2", GT_SHAPE(1, 2, 3), GT_SHAPE(3, 1, 3, 2), true);
}
END_TEST

START_TEST(test_batch_matmul_static_folds) {
  tf_graph *g = tf_graph_new();
  tf_output x[2] = {gt_o(tt_placeholder(g, "a", TF_FLOAT64, GT_SHAPE(2, 1, 3, 4))),
                    gt_o(tt_placeholder(g, "b", TF_FLOAT64, GT_SHAPE(5, 4, 2)))};
  tf_output y = gt_o(tt_node(g, "BatchMatMulV2", "y", x, 2, NULL, 0));
  tf_output dx[2];
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, x, 2, NULL, dx, &st), TF_OK);
  ck_assert_int_eq(gt_count_op(g, "BroadcastGradientArgs"), 0);
  ck_assert_int_eq(gt_count_op(g, "Shape"), 0);
  for (int i = 0; i < 2; i++) {
    ck_assert(tf_shape_equal(tf_node_output_shape(dx[i].node, dx[i].index),
                             tf_node_output_shape(x[i].node, 0)));
  }
  tf_graph_free(g);
}
END_TEST

static tf_tensor *well_conditioned(tf_shape s) {
  tf_tensor *t = rnd(s);
  int64_t m = s.dims[s.rank - 1];
  double *d = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    int64_t r = (i / m) % m, c = i % m;
    d[i] += r == c ? 3 : 0;
  }
  return t;
}

START_TEST(test_matrix_inverse) {
  tf_shape shapes[2] = {GT_SHAPE(3, 3), GT_SHAPE(2, 3, 3)};
  for (int k = 0; k < 2; k++) {
    tf_tensor *a = well_conditioned(shapes[k]);
    for (int adj = 0; adj < 2; adj++) {
      tf_attr_kv kv = {"adjoint", tf_attr_bool(adj)};
      tt_grad_check_op("MatrixInverse", &a, 1, false, &kv, 1, 0, NULL, 1e-6, 1e-5);
    }
    gt_build h = {.op = "MatrixInverse", .n_args = 1,
                  .args = {GT_PH(0, GT_HIDE_RANK)}};
    tt_grad_check(gt_build_fn, &h, &a, 1, NULL, 1e-6, 1e-5);
    tf_tensor_unref(a);
  }
}
END_TEST

START_TEST(test_matrix_determinant) {
  tf_shape shapes[3] = {GT_SHAPE(3, 3), GT_SHAPE(2, 3, 3), GT_SHAPE(1, 1)};
  for (int k = 0; k < 3; k++) {
    tf_tensor *a = well_conditioned(shapes[k]);
    tt_grad_check_op("MatrixDeterminant", &a, 1, false, NULL, 0, 0, NULL, 1e-6,
                     1e-5);
    gt_build h = {.op = "MatrixDeterminant", .n_args = 1,
                  .args = {GT_PH(0, GT_HIDE_DIMS)}};
    tt_grad_check(gt_build_fn, &h, &a, 1, NULL, 1e-6, 1e-5);
    tf_tensor_unref(a);
  }
}
END_TEST

/* A small MLP-like loss: Sum over softplus-free pieces of MatMul chains. */
static tf_output two_layer(tf_graph *g, const tf_output *in, int n, void *arg) {
  (void)n;
  (void)arg;
  tf_attr_kv tb = {"transpose_b", tf_attr_bool(true)};
  tf_output h = gt_o(tt_node(g, "MatMul", NULL, (tf_output[]){in[0], in[1]}, 2,
                             &tb, 1));
  tf_output h2 = gt_op2(g, "Mul", h, h);
  tf_output o = gt_op2(g, "MatMul", h2, in[2]);
  return gt_op2(g, "Mean", o, gt_ivec(g, 1, (int32_t[]){0}));
}

START_TEST(test_composite) {
  tf_tensor *in[3] = {rnd(GT_SHAPE(4, 3)), rnd(GT_SHAPE(5, 3)), rnd(GT_SHAPE(5, 2))};
  tt_grad_check(two_layer, NULL, in, 3, NULL, 1e-7, 1e-6);
  tt_free(in, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_matrix");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_matmul);
  tcase_add_test(tc, test_matmul_structure);
  tcase_add_test(tc, test_batch_matmul);
  tcase_add_test(tc, test_batch_matmul_structure);
  tcase_add_test(tc, test_batch_matmul_broadcast);
  tcase_add_test(tc, test_batch_matmul_static_folds);
  tcase_add_test(tc, test_matrix_inverse);
  tcase_add_test(tc, test_matrix_determinant);
  tcase_add_test(tc, test_composite);
  suite_add_tcase(s, tc);
  return s;
}
