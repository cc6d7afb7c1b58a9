/* grad_reduction_test.c: gradients of Sum, Mean, Prod, Max and Min
 * (grad_reduction.c) against float64 central differences (tt_grad_check)
 * for every combination of: axes (one, negative, several, all, an empty
 * list, a scalar, int64), keep_dims both ways, and four ways of giving the
 * graph its shapes (constant axes on a static input, constant axes with
 * the input's dims hidden, fed axes, constant axes with the rank hidden).
 * Tolerances: atol 1e-8, rtol 1e-7 for Sum/Mean/Max/Min (linear where
 * differentiable) and 1e-7 / 1e-6 for Prod. Max/Min inputs are distinct
 * (gaps 0.1 >> the step 1e-6); ties are checked by hand (equal split).
 * Prod is checked with zeros in a group (none, one, two): the product is
 * multilinear, so central differences are exact there too. ArgMax/ArgMin
 * get no gradient. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "test/unit/core/grad/grad_testlib.h"

typedef struct axes_case {
  int n;         /* -1: a scalar axis */
  int32_t v[4];
  bool i64;
} axes_case;

static tf_tensor *axes_tensor(const axes_case *a) {
  if (a->n < 0) {
    return a->i64 ? tf_tensor_scalar_i64(a->v[0]) : tf_tensor_scalar_i32(a->v[0]);
  }
  if (a->i64) {
    int64_t v[4];
    for (int i = 0; i < a->n; i++) {
      v[i] = a->v[i];
    }
    return tf_tensor_vec_i64(a->n, v);
  }
  return tf_tensor_vec_i32(a->n, a->v);
}

/* Distinct values: a shuffled 0.1-grid plus a little noise, shifted. */
static tf_tensor *distinct(tf_shape s) {
  tf_tensor *t = tt_rand(TF_FLOAT64, s, 0, 0.01);
  double *d = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    d[i] += 0.1 * (double)i - 1.0;
  }
  for (int64_t i = t->n - 1; i > 0; i--) {
    int64_t j = (int64_t)(tt_rand_u64() % (uint64_t)(i + 1));
    double x = d[i];
    d[i] = d[j];
    d[j] = x;
  }
  return t;
}

static tf_tensor *input_for(const char *op, tf_shape s) {
  if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0) {
    return distinct(s);
  }
  tf_tensor *t = tt_rand(TF_FLOAT64, s, 0.5, 1.5);
  if (strcmp(op, "Prod") == 0) {
    double *d = t->data;
    for (int64_t i = 0; i < t->n; i++) {
      d[i] = tt_rand_u64() % 2 ? d[i] : -d[i];
    }
  }
  return t;
}

/* All shape modes and keep_dims values for one op, shape and axes. */
static void check_all(const char *op, tf_shape xs, const axes_case *a) {
  bool prod = strcmp(op, "Prod") == 0;
  double atol = prod ? 1e-7 : 1e-8, rtol = prod ? 1e-6 : 1e-7;
  tf_tensor *in[2] = {input_for(op, xs), axes_tensor(a)};
  for (int keep = 0; keep < 2; keep++) {
    tf_attr_kv kv = {"keep_dims", tf_attr_bool(keep)};
    gt_build modes[4] = {
        {.op = op, .n_args = 2, .args = {GT_P(0), GT_C(in[1])}},
        {.op = op, .n_args = 2, .args = {GT_PH(0, GT_HIDE_DIMS), GT_C(in[1])}},
        {.op = op, .n_args = 2, .args = {GT_P(0), GT_P(1)}},
        {.op = op, .n_args = 2, .args = {GT_PH(0, GT_HIDE_RANK), GT_C(in[1])}},
    };
    for (int m = 0; m < 4; m++) {
      modes[m].attrs = &kv;
      modes[m].n_attrs = 1;
      tt_grad_check(gt_build_fn, &modes[m], in, m == 2 ? 2 : 1, NULL, atol,
                    rtol);
    }
  }
  tt_free(in, 2);
}

static const axes_case k_axes3[] = {
    {1, {1}, false},  {1, {-1}, false},     {2, {0, 2}, false},
    {3, {0, 1, 2}, true}, {0, {0}, false},  {-1, {-2}, false},
    {2, {-1, 0}, true},
};

static void check_op(const char *op) {
  for (size_t i = 0; i < sizeof(k_axes3) / sizeof(k_axes3[0]); i++) {
    check_all(op, GT_SHAPE(2, 3, 4), &k_axes3[i]);
  }
  axes_case a0 = {1, {0}, false};
  check_all(op, GT_SHAPE(5), &a0);
  axes_case none = {0, {0}, false};
  check_all(op, tf_shape_scalar(), &none);
}

START_TEST(test_sum) { check_op("Sum"); }
END_TEST

START_TEST(test_mean) { check_op("Mean"); }
END_TEST

START_TEST(test_prod) { check_op("Prod"); }
END_TEST

START_TEST(test_max) { check_op("Max"); }
END_TEST

START_TEST(test_min) { check_op("Min"); }
END_TEST

/* Rows with no zero, one zero and two zeros. */
START_TEST(test_prod_zeros) {
  tf_tensor *in[2] = {
      tt_tensor(TF_FLOAT64, GT_SHAPE(3, 3),
                (double[]){0.5, -1.5, 2, 0, 1.25, -0.75, 0, 3, 0}),
      tf_tensor_vec_i32(1, (int32_t[]){1})};
  gt_build b = {.op = "Prod", .n_args = 2, .args = {GT_P(0), GT_C(in[1])}};
  tt_grad_check(gt_build_fn, &b, in, 1, NULL, 1e-8, 1e-7);
  gt_build d = {.op = "Prod", .n_args = 2, .args = {GT_P(0), GT_P(1)}};
  tt_grad_check(gt_build_fn, &d, in, 2, NULL, 1e-8, 1e-7);
  /* Exact values with dy = 1. */
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(3, 3)));
  tf_output y = gt_op2(g, "Prod", x, gt_ivec(g, 1, (int32_t[]){1}));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  const char *names[1] = {"x"};
  tf_tensor *got = gt_run(g, names, in, 1, dx);
  tf_tensor *want = tt_tensor(TF_FLOAT64, GT_SHAPE(3, 3),
                              (double[]){-3, 1, -0.75, 1.25 * -0.75, 0, 0, 0, 0, 0});
  tt_assert_close(got, want, 1e-15, 1e-15);
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(in, 2);
  tf_graph_free(g);
}
END_TEST

/* Ties share the gradient equally (TF's rule). */
START_TEST(test_max_min_ties) {
  static const char *const ops[2] = {"Max", "Min"};
  static const double want_v[2][6] = {
      {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3},
      {1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}};
  tf_tensor *x = tt_tensor(TF_FLOAT64, GT_SHAPE(2, 3),
                           (double[]){1, 3, 3, 2, 2, 2});
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_output xp = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(2, 3)));
    tf_output y = gt_op2(g, ops[k], xp, gt_ivec(g, 1, (int32_t[]){-1}));
    tf_output dx;
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, &xp, 1, NULL, &dx, &st), TF_OK);
    const char *names[1] = {"x"};
    tf_tensor *got = gt_run(g, names, &x, 1, dx);
    tf_tensor *want = tt_tensor(TF_FLOAT64, GT_SHAPE(2, 3), want_v[k]);
    tt_assert_close(got, want, 1e-15, 1e-15);
    tt_free((tf_tensor *[]){got, want}, 2);
    tf_graph_free(g);
  }
  tf_tensor_unref(x);
}
END_TEST

/* Reductions over an empty dim: gradients of the right (empty) shape. */
START_TEST(test_empty_input) {
  static const char *const ops[3] = {"Sum", "Mean", "Max"};
  for (int k = 0; k < 3; k++) {
    for (int hide = 0; hide < 2; hide++) {
      tf_graph *g = tf_graph_new();
      tf_output xp = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(2, 0)));
      tf_output xh = gt_hide(g, xp, hide ? GT_HIDE_RANK : GT_SHOW);
      tf_output y = gt_op2(g, ops[k], xh, gt_ivec(g, 1, (int32_t[]){1}));
      tf_output dx;
      tf_status st;
      tf_status_init(&st);
      ck_assert_int_eq(tf_gradients(g, &y, 1, &xp, 1, NULL, &dx, &st), TF_OK);
      tf_tensor *x = tt_rand(TF_FLOAT64, GT_SHAPE(2, 0), 0, 1);
      const char *names[1] = {"x"};
      tf_tensor *got = gt_run(g, names, &x, 1, dx);
      ck_assert(tf_shape_equal(&got->shape, &x->shape));
      tt_free((tf_tensor *[]){got, x}, 2);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* Constant axes on a static shape: the gradient needs no Shape op. */
START_TEST(test_static_folds) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(4, 5)));
  tf_output y = gt_op2(g, "Mean", x, gt_ivec(g, 1, (int32_t[]){0}));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_int_eq(gt_count_op(g, "Shape"), 0);
  ck_assert_int_eq(gt_count_op(g, "DynamicStitch"), 0);
  ck_assert_int_eq(gt_count_op(g, "Tile"), 1);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_arg_ops_have_none) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(4, 5)));
  tf_output a = gt_op2(g, "ArgMax", x, gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(1))));
  tf_output c = gt_o(tt_node(g, "Cast", NULL, &a, 1,
                             &(tf_attr_kv){"DstT", tf_attr_type_v(TF_FLOAT64)}, 1));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &c, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_ptr_null(dx.node);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_reduction");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sum);
  tcase_add_test(tc, test_mean);
  tcase_add_test(tc, test_prod);
  tcase_add_test(tc, test_max);
  tcase_add_test(tc, test_min);
  tcase_add_test(tc, test_prod_zeros);
  tcase_add_test(tc, test_max_min_ties);
  tcase_add_test(tc, test_empty_input);
  tcase_add_test(tc, test_static_folds);
  tcase_add_test(tc, test_arg_ops_have_none);
  suite_add_tcase(s, tc);
  return s;
}
