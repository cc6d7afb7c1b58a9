/* grad_math_unary_test.c: every gradient of grad_math_unary.c checked
 * against float64 central differences (tt_grad_check_op; atol 1e-7, rtol
 * 1e-6), inputs kept 0.01 away from kinks (0 for Reciprocal, Selu,
 * LeakyRelu and the backward ops' selects). TF's conventions are checked
 * by value: LeakyRelu's gradient at 0 is alpha * dy, Selu's at 0 is
 * scale * dy; Floor, Ceil, Round and Rint pass no gradient (TF's [None])
 * without error; SoftsignGrad has no gradient (as in TF), so asking for
 * one is an error naming it; IsNan and IsFinite are not differentiable. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/graph/grad_registry.h"
#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-7
#define RTOL 1e-6

static tf_tensor *rnd(tf_shape s, double lo, double hi) {
  return tt_rand(TF_FLOAT64, s, lo, hi);
}

/* Moves every element within gap of 0 to +-gap. */
static tf_tensor *away0(tf_tensor *t, double gap) {
  double *v = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    if (fabs(v[i]) < gap) {
      v[i] = v[i] < 0 ? -gap : gap;
    }
  }
  return t;
}

static void check1(const char *op, tf_tensor *x, const tf_attr_kv *kv,
                   int n_kv) {
  tt_grad_check_op(op, &x, 1, false, kv, n_kv, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}

START_TEST(test_smooth) {
  tf_shape s = tf_shape_of(2, 3, 4);
  check1("Sin", rnd(s, -4, 4), NULL, 0);
  check1("Cos", rnd(s, -4, 4), NULL, 0);
  check1("Expm1", rnd(s, -3, 3), NULL, 0);
  check1("Erf", rnd(s, -2.5, 2.5), NULL, 0);
  check1("Reciprocal", away0(rnd(s, -3, 3), 0.2), NULL, 0);
  check1("Softsign", rnd(s, -4, 4), NULL, 0);
}
END_TEST

START_TEST(test_activations) {
  tf_shape s = tf_shape_of(2, 4, 5);
  check1("Selu", away0(rnd(s, -3, 3), 0.01), NULL, 0);
  check1("LeakyRelu", away0(rnd(s, -3, 3), 0.01), NULL, 0);
  const double alphas[] = {3.5, -0.5, 0.01};
  for (int k = 0; k < 3; k++) {
    tf_attr_kv kv = {"alpha", tf_attr_float(alphas[k])};
    check1("LeakyRelu", away0(rnd(s, -3, 3), 0.01), &kv, 1);
  }
}
END_TEST

/* Second derivatives: both inputs of each backward op. */
START_TEST(test_second_order) {
  tf_shape s = tf_shape_of(2, 3, 5);
  tf_tensor *rg[2] = {rnd(s, -2, 2), rnd(s, -2, 2)};
  tt_grad_check_op("ReciprocalGrad", rg, 2, false, NULL, 0, 0, NULL, ATOL,
                   RTOL);
  tt_free(rg, 2);
  /* SeluGrad's outputs input: Selu's range, away from 0. */
  tf_tensor *sg[2] = {rnd(s, -2, 2), away0(rnd(s, -1.7, 3), 0.01)};
  tt_grad_check_op("SeluGrad", sg, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(sg, 2);
  tf_tensor *lg[2] = {rnd(s, -2, 2), away0(rnd(s, -2, 2), 0.01)};
  tf_attr_kv kv = {"alpha", tf_attr_float(0.3)};
  tt_grad_check_op("LeakyReluGrad", lg, 2, false, &kv, 1, 0, NULL, ATOL, RTOL);
  tt_grad_check_op("LeakyReluGrad", lg, 2, false, NULL, 0, 0, NULL, ATOL,
                   RTOL);
  tt_free(lg, 2);
}
END_TEST

/* d(sum op(x))/dx at the values v (float64), with attrs. */
static tf_tensor *grad_at(const char *op, const double *v, int n,
                          const tf_attr_kv *kv, int n_kv) {
  tf_graph *g = tf_graph_new();
  tf_shape s = tf_shape_of(1, (int64_t)n);
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, s), 0};
  tf_output y = {tt_node(g, op, NULL, &x, 1, kv, n_kv), 0};
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s",
                st.msg);
  ck_assert(dx.node != NULL);
  tf_tensor *xv = tt_tensor(TF_FLOAT64, s, v);
  const char *names[1] = {"x"};
  tf_tensor *out = gt_run(g, names, &xv, 1, dx);
  tf_tensor_unref(xv);
  tf_graph_free(g);
  return out;
}

/* TF's selects at the kinks: LeakyRelu (features > 0) gives alpha at 0;
 * Selu (outputs < 0) gives scale at 0. */
START_TEST(test_kink_conventions) {
  const double v[] = {0.0, -0.0, 1, -1};
  tf_attr_kv kv = {"alpha", tf_attr_float(0.25)};
  tf_tensor *d = grad_at("LeakyRelu", v, 4, &kv, 1);
  const double *p = d->data;
  ck_assert(p[0] == 0.25 && p[1] == 0.25 && p[2] == 1 && p[3] == 0.25);
  tf_tensor_unref(d);
  d = grad_at("Selu", v, 4, NULL, 0);
  p = d->data;
  const double scale = 1.0507009873554804934193349852946;
  ck_assert(p[0] == scale && p[1] == scale && p[2] == scale);
  ck_assert(fabs(p[3] - 1.7580993408473768 * exp(-1)) < 1e-12);
  tf_tensor_unref(d);
  d = grad_at("Reciprocal", (const double[]){2, -4, 0.5, 1}, 4, NULL, 0);
  p = d->data;
  ck_assert(p[0] == -0.25 && p[1] == -0.0625 && p[2] == -4 && p[3] == -1);
  tf_tensor_unref(d);
  d = grad_at("Erf", (const double[]){0, 1, -1, 3}, 4, NULL, 0);
  p = d->data;
  ck_assert(fabs(p[0] - 1.1283791670955126) < 1e-15);
  ck_assert(fabs(p[1] - 0.41510749742059472) < 1e-15 && p[1] == p[2]);
  tf_tensor_unref(d);
}
END_TEST

/* Rounding ops: a gradient is registered and returns None, so nothing
 * reaches x and tf_gradients succeeds (TF's [None]). */
START_TEST(test_rounding_no_gradient) {
  const char *ops[] = {"Floor", "Ceil", "Round", "Rint"};
  for (int o = 0; o < 4; o++) {
    ck_assert_ptr_nonnull(tf_grad_lookup(ops[o]));
    ck_assert_int_eq(tf__grad_count_registrations(ops[o]), 1);
    tf_graph *g = tf_graph_new();
    tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)), 0};
    tf_output y = {tt_node(g, ops[o], NULL, &x, 1, NULL, 0), 0};
    tf_output dx = {NULL, 0};
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
    ck_assert_msg(dx.node == NULL, "%s passed a gradient", ops[o]);
    /* Beside a differentiable path the sum is that path's alone. */
    tf_output z = gt_op2(g, "Add", y, gt_o(tt_node(g, "Sin", NULL, &x, 1,
                                                   NULL, 0)));
    ck_assert_int_eq(tf_gradients(g, &z, 1, &x, 1, NULL, &dx, &st), TF_OK);
    const char *names[1] = {"x"};
    tf_tensor *xv = tt_tensor(TF_FLOAT64, tf_shape_of(1, 3),
                              (const double[]){0.3, -1.2, 2.5});
    tf_tensor *d = gt_run(g, names, &xv, 1, dx);
    for (int i = 0; i < 3; i++) {
      double xi = ((double *)xv->data)[i];
      ck_assert(fabs(((double *)d->data)[i] - cos(xi)) < 1e-15);
    }
    tt_free((tf_tensor *[]){xv, d}, 2);
    tf_graph_free(g);
  }
}
END_TEST

/* IsNan/IsFinite are not differentiable; SoftsignGrad has no gradient
 * function in TF, so differentiating through it is an error naming it. */
START_TEST(test_not_differentiable) {
  const char *preds[] = {"IsNan", "IsFinite"};
  for (int o = 0; o < 2; o++) {
    const tf_op_def *op = tf_op_lookup(preds[o]);
    ck_assert(op != NULL && (op->flags & TF_OP_NOT_DIFFERENTIABLE));
    ck_assert_ptr_null(tf_grad_lookup(preds[o]));
  }
  ck_assert_ptr_null(tf_grad_lookup("SoftsignGrad"));
  tf_graph *g = tf_graph_new();
  tf_output a = {tt_placeholder(g, "a", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output b = {tt_placeholder(g, "b", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output z = gt_op2(g, "SoftsignGrad", a, b);
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &z, 1, &a, 1, NULL, &dx, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "SoftsignGrad") && strstr(st.msg, "no gradient"),
                "%s", st.msg);
  tf_graph_free(g);
  const char *ops[] = {"Reciprocal", "Sin", "Cos", "Expm1", "Erf", "Softsign",
                       "Selu", "LeakyRelu", "ReciprocalGrad", "SeluGrad",
                       "LeakyReluGrad"};
  for (int o = 0; o < 11; o++) {
    ck_assert_int_eq(tf__grad_count_registrations(ops[o]), 1);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_math_unary");
  TCase *tc = tcase_create("grad");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_smooth);
  tcase_add_test(tc, test_activations);
  tcase_add_test(tc, test_second_order);
  tcase_add_test(tc, test_kink_conventions);
  tcase_add_test(tc, test_rounding_no_gradient);
  tcase_add_test(tc, test_not_differentiable);
  suite_add_tcase(s, tc);
  return s;
}
