/* grad_einsum_test.c: the gradient of Einsum against float64 central
 * differences (tt_grad_check) for one- and two-input equations: plain
 * contractions, batch labels, outer products, transposes, labels summed
 * out of one operand (the OnesLike spread), repeated labels (diagonals,
 * whose gradient fills a diagonal), implicit outputs, "..." dims
 * (broadcast ones summed back), each with static and with hidden dims
 * (the dynamic BroadcastGradientArgs path) and hidden ranks; and the exact zero off the
 * diagonal of a diagonal's gradient. Einsum is multilinear,
 * so the differences are exact up to rounding: atol 1e-8, rtol 1e-7. */
#include <check.h>

#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-8
#define RTOL 1e-7

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

/* Checks Einsum(eq) of inputs with shapes s[0..n), first with static
 * shapes, then with every input's dims hidden, then its rank. */
static void check(const char *eq, int n, tf_shape s0, tf_shape s1) {
  tf_tensor *in[2] = {rnd(s0), n == 2 ? rnd(s1) : NULL};
  tf_attr_kv kv = {"equation", tf_attr_string(eq)};
  tt_grad_check_op("Einsum", in, n, true, &kv, 1, 0, NULL, ATOL, RTOL);
  gt_build h = {.op = "Einsum", .n_args = n,
                .args = {GT_PH(0, GT_HIDE_DIMS), GT_PH(1, GT_HIDE_DIMS)},
                .list_start = 0, .list_len = n, .attrs = &kv, .n_attrs = 1};
  tt_grad_check(gt_build_fn, &h, in, n, NULL, ATOL, RTOL);
  gt_build r = h;
  r.args[0] = GT_PH(0, GT_HIDE_RANK);
  r.args[1] = GT_PH(1, GT_HIDE_RANK);
  tt_grad_check(gt_build_fn, &r, in, n, NULL, ATOL, RTOL);
  tt_free(in, n);
}

START_TEST(test_two_inputs) {
  check("ij,jk->ik", 2, GT_SHAPE(3, 4), GT_SHAPE(4, 2));
  check("ij,jk", 2, GT_SHAPE(2, 3), GT_SHAPE(3, 4));
  check("bij,bjk->bik", 2, GT_SHAPE(2, 3, 4), GT_SHAPE(2, 4, 2));
  check("bhqd,bhkd->bhqk", 2, GT_SHAPE(2, 2, 3, 4), GT_SHAPE(2, 2, 5, 4));
  check("i,i->", 2, GT_SHAPE(5), GT_SHAPE(5));
  check("i,j->ij", 2, GT_SHAPE(3), GT_SHAPE(4));
  check("ij,jk->ki", 2, GT_SHAPE(3, 4), GT_SHAPE(4, 2));
  check("ij,ij->ij", 2, GT_SHAPE(3, 4), GT_SHAPE(3, 4));
}
END_TEST

/* Labels only one operand has and the output lacks, and repeated labels. */
START_TEST(test_reduced_and_repeated) {
  check("ijk,j->i", 2, GT_SHAPE(2, 3, 4), GT_SHAPE(3));
  check("ij,jk->i", 2, GT_SHAPE(2, 3), GT_SHAPE(3, 4));
  check("ii,i->i", 2, GT_SHAPE(3, 3), GT_SHAPE(3));
  check("iij,jk->ik", 2, GT_SHAPE(3, 3, 2), GT_SHAPE(2, 4));
}
END_TEST

START_TEST(test_one_input) {
  check("ij->ji", 1, GT_SHAPE(3, 4), GT_SHAPE());
  check("ij->", 1, GT_SHAPE(3, 4), GT_SHAPE());
  check("ij->j", 1, GT_SHAPE(3, 4), GT_SHAPE());
  check("ii->i", 1, GT_SHAPE(4, 4), GT_SHAPE());
  check("ii", 1, GT_SHAPE(4, 4), GT_SHAPE());
  check("iij->j", 1, GT_SHAPE(3, 3, 2), GT_SHAPE());
  check("i->ii", 1, GT_SHAPE(3), GT_SHAPE());
}
END_TEST

/* The diagonal's gradient is zero off the diagonal: d/dx sum(w * diag(x))
 * is diag(w), checked exactly. */
START_TEST(test_diagonal_value) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(3, 3)));
  tf_attr_kv kv = {"equation", tf_attr_string("ii->i")};
  tf_node_builder *nb = tf_node_begin(g, "Einsum", "y");
  tf_node_add_input_list(nb, &x, 1);
  tf_node_set_attr(nb, kv.name, kv.value);
  tf_status st;
  tf_status_init(&st);
  tf_node *y = tf_node_finish(nb, &st);
  ck_assert_msg(y != NULL, "%s", st.msg);
  double wv[3] = {2, -3, 5};
  tf_output w = gt_o(tt_const(g, NULL, tt_tensor(TF_FLOAT64, GT_SHAPE(3), wv)));
  tf_output dx;
  tf_output yo = {y, 0};
  ck_assert_int_eq(tf_gradients(g, &yo, 1, &x, 1, &w, &dx, &st), TF_OK);
  tf_tensor *xv = rnd(GT_SHAPE(3, 3));
  const char *names[1] = {"x"};
  tf_tensor *got = gt_run(g, names, &xv, 1, dx);
  double want[9] = {2, 0, 0, 0, -3, 0, 0, 0, 5};
  tf_tensor *wt = tt_tensor(TF_FLOAT64, GT_SHAPE(3, 3), want);
  tt_assert_close(got, wt, 0, 0);
  tf_tensor_unref(xv);
  tf_tensor_unref(got);
  tf_tensor_unref(wt);
  tf_graph_free(g);
}
END_TEST

/* "..." dims, equal and broadcast (summed back to each operand's own
 * "..." dims), or standing for no dims at all. */
START_TEST(test_ellipsis) {
  check("...ij,...jk->...ik", 2, GT_SHAPE(2, 3, 4), GT_SHAPE(2, 4, 2));
  check("...ij,...jk->...ik", 2, GT_SHAPE(2, 1, 3, 4), GT_SHAPE(3, 4, 2));
  check("...ij,...jk->...ik", 2, GT_SHAPE(3, 2), GT_SHAPE(3, 2, 4));
  check("...ij,jk->...ik", 2, GT_SHAPE(2, 3, 4), GT_SHAPE(4, 2));
  check("...ij,jk->ik", 2, GT_SHAPE(3, 4), GT_SHAPE(4, 2));
  check("i...,i->...", 2, GT_SHAPE(3, 2, 2), GT_SHAPE(3));
  check("...ij,...jk", 2, GT_SHAPE(2, 2, 3), GT_SHAPE(1, 3, 2));
  check("...ij->...ji", 1, GT_SHAPE(2, 3, 4), GT_SHAPE());
  check("...ij->j", 1, GT_SHAPE(3, 4), GT_SHAPE());
  check("...ij->...", 1, GT_SHAPE(2, 3, 4), GT_SHAPE());
  check("i...->...", 1, GT_SHAPE(3, 2, 2), GT_SHAPE());
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_einsum");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_two_inputs);
  tcase_add_test(tc, test_reduced_and_repeated);
  tcase_add_test(tc, test_one_input);
  tcase_add_test(tc, test_diagonal_value);
  tcase_add_test(tc, test_ellipsis);
  suite_add_tcase(s, tc);
  return s;
}
