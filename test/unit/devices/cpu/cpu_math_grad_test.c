/* cpu_math_grad_test.c: CPU kernels of the fused backward ops (ReluGrad,
 * Relu6Grad, EluGrad, SoftplusGrad, SigmoidGrad, TanhGrad, SqrtGrad,
 * RsqrtGrad, BiasAddGrad) against plain float64 recomputations, on sizes
 * below and above the parallel grain, in place, and their errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

typedef double (*ref_fn)(double a, double b);

static double relu_ref(double g, double f) { return f > 0 ? g : 0; }
static double relu6_ref(double g, double f) { return f > 0 && f < 6 ? g : 0; }
static double elu_ref(double g, double o) { return o > 0 ? g : g * (o + 1); }
static double softplus_ref(double g, double f) { return g / (1 + exp(-f)); }
static double sigmoid_ref(double y, double dy) { return dy * y * (1 - y); }
static double tanh_ref(double y, double dy) { return dy * (1 - y * y); }
static double sqrt_ref(double y, double dy) { return dy * 0.5 / y; }
static double rsqrt_ref(double y, double dy) { return dy * -0.5 * y * y * y; }

typedef struct ew_case {
  const char *op;
  ref_fn ref;
  double lo1, hi1; /* range of the second input (the first is in [-2, 2]) */
  bool y_first;    /* (y, dy): the first input is y, in [lo1, hi1] */
} ew_case;

static const ew_case k_cases[] = {
    {"ReluGrad", relu_ref, -3, 3, false},
    {"Relu6Grad", relu6_ref, -2, 8, false},
    {"EluGrad", elu_ref, -1, 3, false},
    {"SoftplusGrad", softplus_ref, -30, 30, false},
    {"SigmoidGrad", sigmoid_ref, 0.01, 0.99, true},
    {"TanhGrad", tanh_ref, -0.99, 0.99, true},
    {"SqrtGrad", sqrt_ref, 0.1, 4, true},
    {"RsqrtGrad", rsqrt_ref, 0.1, 4, true},
};

static void check_ew(const ew_case *c, tf_dtype dt, int64_t n, bool in_place) {
  tf_tensor *grad = tt_rand(dt, tf_shape_of(1, n), -2, 2);
  tf_tensor *other = tt_rand(dt, tf_shape_of(1, n), c->lo1, c->hi1);
  tf_tensor *in[2] = {c->y_first ? other : grad, c->y_first ? grad : other};
  double *want = malloc((size_t)n * sizeof *want);
  for (int64_t i = 0; i < n; i++) {
    want[i] = c->ref(tf_tensor_get_f64(in[0], i), tf_tensor_get_f64(in[1], i));
  }
  tf_tensor *got = in_place ? tt_run_in_place(c->op, in, 2, false)
                            : tt_run1(c->op, in, 2, NULL, 0);
  tf_tensor *wt = tt_tensor(dt, tf_shape_of(1, n), want);
  double tol = dt == TF_FLOAT32 ? 2e-6 : 1e-14;
  tt_assert_close(got, wt, tol, tol);
  free(want);
  tt_free((tf_tensor *[]){grad, other, got, wt}, 4);
}

START_TEST(test_elementwise) {
  for (size_t k = 0; k < sizeof k_cases / sizeof k_cases[0]; k++) {
    check_ew(&k_cases[k], TF_FLOAT32, 37, false);
    check_ew(&k_cases[k], TF_FLOAT64, 37, false);
    check_ew(&k_cases[k], TF_FLOAT32, 100003, false);
    check_ew(&k_cases[k], TF_FLOAT64, 70001, true);
    check_ew(&k_cases[k], TF_FLOAT32, 1000, true);
  }
}
END_TEST

/* ReluGrad at features exactly 0 passes nothing (TF: features > 0). */
START_TEST(test_relu_grad_at_zero) {
  double g[3] = {1, 2, 3}, f[3] = {0, -0.0, 1e-30};
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), g),
                      tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), f)};
  tf_tensor *got = tt_run1("ReluGrad", in, 2, NULL, 0);
  double w[3] = {0, 0, 3};
  tf_tensor *wt = tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), w);
  tt_assert_close(got, wt, 0, 0);
  tt_free(in, 2);
  tt_free((tf_tensor *[]){got, wt}, 2);
}
END_TEST

START_TEST(test_elementwise_errors) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(1, 3), 0, 1),
                      tt_rand(TF_FLOAT32, tf_shape_of(1, 4), 0, 1)};
  const char *m = tt_run_fail("TanhGrad", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "same shape") && strstr(m, "[3]") && strstr(m, "[4]"), "%s", m);
  tt_free(in, 2);
  tf_tensor *ints[2] = {tt_rand(TF_INT32, tf_shape_of(1, 3), 0, 1),
                        tt_rand(TF_INT32, tf_shape_of(1, 3), 0, 1)};
  m = tt_run_fail("ReluGrad", ints, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "int32"), "%s", m);
  tt_free(ints, 2);
}
END_TEST

/* ---- BiasAddGrad ----------------------------------------------------------- */

static void check_bias(tf_dtype dt, tf_shape s, bool nchw) {
  tf_tensor *x = tt_rand(dt, s, -1, 1);
  int cdim = nchw ? 1 : s.rank - 1;
  int64_t c = s.dims[cdim];
  double *want = calloc((size_t)c + 1, sizeof *want);
  int64_t inner = 1;
  for (int d = cdim + 1; d < s.rank; d++) inner *= s.dims[d];
  for (int64_t i = 0; i < x->n; i++) want[(i / inner) % c] += tf_tensor_get_f64(x, i);
  tf_attr_kv kv = {"data_format", tf_attr_string(nchw ? "NCHW" : "NHWC")};
  tf_tensor *got = tt_run1("BiasAddGrad", &x, 1, &kv, 1);
  tf_tensor *wt = tt_tensor(dt, tf_shape_of(1, c), want);
  double tol = dt == TF_FLOAT32 ? 1e-5 * sqrt((double)x->n / c) + 1e-5 : 1e-11;
  tt_assert_close(got, wt, tol, 1e-6);
  free(want);
  tt_free((tf_tensor *[]){x, got, wt}, 3);
}

START_TEST(test_bias_add_grad) {
  tf_dtype dts[2] = {TF_FLOAT32, TF_FLOAT64};
  for (int k = 0; k < 2; k++) {
    check_bias(dts[k], tf_shape_of(2, 5, 3), false);
    check_bias(dts[k], tf_shape_of(4, 2, 3, 4, 5), false);
    check_bias(dts[k], tf_shape_of(4, 2, 3, 4, 5), true);
    check_bias(dts[k], tf_shape_of(2, 3, 7), true);
    check_bias(dts[k], tf_shape_of(2, 5000, 37), false);  /* parallel blocks */
    check_bias(dts[k], tf_shape_of(2, 300, 700), false);  /* wide rows */
    check_bias(dts[k], tf_shape_of(2, 0, 4), false);      /* empty: zeros */
  }
}
END_TEST

START_TEST(test_bias_add_grad_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), 0, 1);
  const char *m = tt_run_fail("BiasAddGrad", &x, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "at least 2-D"), "%s", m);
  tf_tensor_unref(x);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_grad");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_elementwise);
  tcase_add_test(tc, test_relu_grad_at_zero);
  tcase_add_test(tc, test_elementwise_errors);
  tcase_add_test(tc, test_bias_add_grad);
  tcase_add_test(tc, test_bias_add_grad_errors);
  suite_add_tcase(s, tc);
  return s;
}
