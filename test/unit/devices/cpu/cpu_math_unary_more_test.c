/* cpu_math_unary_more_test.c: values of the IsNan, IsFinite and LeakyRelu
 * CPU kernels in float32, float64, float16 and bfloat16. Inputs are fresh
 * random tensors (seeded by the test RNG) with NaN, +-inf, +-0 planted;
 * references are plain double loops written here. IsNan/IsFinite are
 * exact; LeakyRelu is compared with rtol 1e-6 (float32: one rounding of
 * x * alpha), 1e-15 (float64), 1e-3 (float16) and 8e-3 (bfloat16), one ulp
 * of the 16-bit result. Alpha values: the 0.2 default, 3.5 (> 1, where
 * max(x, alpha x) would be wrong) and -0.5. Also: empty and large
 * (threaded) tensors, in-place runs, and dtype errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

static const tf_dtype float_dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16,
                                     TF_BFLOAT16};
static const double rtols[] = {1e-6, 1e-15, 1e-3, 8e-3};

/* A random [n] tensor of dt in [-5, 5) with specials planted at the front. */
static tf_tensor *with_specials(tf_dtype dt, int64_t n) {
  tf_tensor *x = tt_rand(dt, tf_shape_of(1, n), -5, 5);
  const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -NAN, 1e-3};
  double *v = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    v[i] = i < 7 ? sp[i] : tf_tensor_get_f64(x, i);
  }
  tf_tensor_unref(x);
  x = tt_tensor(dt, tf_shape_of(1, n), v);
  free(v);
  return x;
}

START_TEST(test_predicates) {
  for (int d = 0; d < 4; d++) {
    tf_tensor *x = with_specials(float_dts[d], 300);
    tf_tensor *nan = tt_run1("IsNan", &x, 1, NULL, 0);
    tf_tensor *fin = tt_run1("IsFinite", &x, 1, NULL, 0);
    ck_assert_int_eq(nan->dtype, TF_BOOL);
    ck_assert_int_eq(fin->dtype, TF_BOOL);
    tt_assert_shape(nan, 1, (int64_t)300);
    const uint8_t *pn = nan->data, *pf = fin->data;
    int n_nan = 0, n_inf = 0;
    for (int64_t i = 0; i < x->n; i++) {
      double v = tf_tensor_get_f64(x, i);
      if (pn[i] != (isnan(v) ? 1 : 0) || pf[i] != (isfinite(v) ? 1 : 0)) {
        ck_abort_msg("%s element %lld (%g): IsNan %d IsFinite %d",
                     tf_dtype_name(float_dts[d]), (long long)i, v, pn[i],
                     pf[i]);
      }
      n_nan += pn[i];
      n_inf += !pn[i] && !pf[i];
    }
    ck_assert_int_eq(n_nan, 2); /* both NaN signs */
    ck_assert_int_eq(n_inf, 2);
    tt_free((tf_tensor *[]){x, nan, fin}, 3);
  }
}
END_TEST

/* 16-bit predicates over every bit pattern against the widened value. */
START_TEST(test_predicates_exhaustive_16bit) {
  const tf_dtype dts[] = {TF_FLOAT16, TF_BFLOAT16};
  for (int d = 0; d < 2; d++) {
    tf_shape s = tf_shape_of(1, (int64_t)65536);
    tf_tensor *x = NULL;
    tf_status st;
    tf_status_init(&st);
    ck_assert(tf_tensor_new(dts[d], &s, &x, &st) == TF_OK);
    for (int i = 0; i < 65536; i++) {
      ((uint16_t *)x->data)[i] = (uint16_t)i;
    }
    tf_tensor *nan = tt_run1("IsNan", &x, 1, NULL, 0);
    tf_tensor *fin = tt_run1("IsFinite", &x, 1, NULL, 0);
    for (int64_t i = 0; i < x->n; i++) {
      double v = tf_tensor_get_f64(x, i);
      if (((const uint8_t *)nan->data)[i] != (isnan(v) != 0) ||
          ((const uint8_t *)fin->data)[i] != (isfinite(v) != 0)) {
        ck_abort_msg("%s bits 0x%04x", tf_dtype_name(dts[d]), (unsigned)i);
      }
    }
    tt_free((tf_tensor *[]){x, nan, fin}, 3);
  }
}
END_TEST

/* want = x > 0 ? x : x * alpha, in double, then rounded to x's dtype (the
 * 16-bit kernels multiply by alpha rounded to float32, as TF's do). */
static tf_tensor *leaky_ref(const tf_tensor *x, double alpha) {
  double *v = malloc(sizeof(double) * (size_t)(x->n + 1));
  double a = x->dtype == TF_FLOAT64 ? alpha : (double)(float)alpha;
  for (int64_t i = 0; i < x->n; i++) {
    double f = tf_tensor_get_f64(x, i);
    v[i] = f > 0 ? f : f * a;
  }
  tf_tensor *want = tt_tensor(x->dtype, x->shape, v);
  free(v);
  return want;
}

/* Signs of zero and NaNs must match too (tt_assert_close matches NaNs). */
static void expect_leaky(const tf_tensor *x, const tf_tensor *y,
                         const tf_tensor *want, double rtol) {
  tt_assert_close(y, want, 0, rtol);
  for (int64_t i = 0; i < x->n; i++) {
    double g = tf_tensor_get_f64(y, i), w = tf_tensor_get_f64(want, i);
    ck_assert_msg(g != 0 || signbit(g) == signbit(w), "sign of zero at %lld",
                  (long long)i);
  }
}

START_TEST(test_leaky_relu) {
  const double alphas[] = {0.2, 3.5, -0.5};
  for (int d = 0; d < 4; d++) {
    for (int k = 0; k < 3; k++) {
      tf_tensor *x = with_specials(float_dts[d], 513);
      tf_attr_kv kv = {"alpha", tf_attr_float(alphas[k])};
      tf_tensor *y = tt_run1("LeakyRelu", &x, 1, &kv, 1);
      tf_tensor *want = leaky_ref(x, alphas[k]);
      expect_leaky(x, y, want, rtols[d]);
      tt_free((tf_tensor *[]){x, y, want}, 3);
    }
    /* No attr given: alpha = 0.2; the only reference to x: in place. */
    tf_tensor *x = with_specials(float_dts[d], 64);
    tf_tensor *want = leaky_ref(x, 0.2);
    tf_tensor *y = tt_run_in_place("LeakyRelu", &x, 1, false);
    ck_assert_msg(y->data == x->data, "LeakyRelu did not reuse its input");
    expect_leaky(x, y, want, rtols[d]);
    tt_free((tf_tensor *[]){x, y, want}, 3);
  }
}
END_TEST

/* Hand cases: TF's select formula gives -inf * 0 = NaN for alpha = 0. */
START_TEST(test_leaky_relu_hand) {
  double in[] = {-INFINITY, -2, 3, INFINITY};
  tf_tensor *x = tt_tensor(TF_FLOAT32, tf_shape_of(1, (int64_t)4), in);
  tf_attr_kv kv = {"alpha", tf_attr_float(0.0)};
  tf_tensor *y = tt_run1("LeakyRelu", &x, 1, &kv, 1);
  const float *p = y->data;
  ck_assert(isnan(p[0]) && p[1] == 0 && signbit(p[1]) && p[2] == 3 &&
            p[3] == INFINITY);
  tf_tensor_unref(y);
  y = tt_run1("LeakyRelu", &x, 1, NULL, 0);
  p = y->data;
  ck_assert(p[0] == -INFINITY && fabsf(p[1] + 0.4f) < 1e-7f && p[2] == 3);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

/* Large enough to split across the pool. */
START_TEST(test_large) {
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(1, (int64_t)200003), -5, 5);
  ((double *)x->data)[123457] = NAN;
  tf_tensor *y = tt_run1("LeakyRelu", &x, 1, NULL, 0);
  tf_tensor *want = leaky_ref(x, 0.2);
  tt_assert_close(y, want, 0, 1e-15);
  tf_tensor *nan = tt_run1("IsNan", &x, 1, NULL, 0);
  int count = 0;
  for (int64_t i = 0; i < nan->n; i++) {
    count += ((const uint8_t *)nan->data)[i];
  }
  ck_assert_int_eq(count, 1);
  ck_assert(((const uint8_t *)nan->data)[123457] == 1);
  tt_free((tf_tensor *[]){x, y, want, nan}, 4);
}
END_TEST

START_TEST(test_empty_and_errors) {
  const char *ops[] = {"IsNan", "IsFinite", "LeakyRelu"};
  for (int o = 0; o < 3; o++) {
    tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, (int64_t)3, (int64_t)0),
                           0, 1);
    tf_tensor *y = tt_run1(ops[o], &x, 1, NULL, 0);
    tt_assert_shape(y, 2, (int64_t)3, (int64_t)0);
    tt_free((tf_tensor *[]){x, y}, 2);
    tf_tensor *i = tf_tensor_scalar_i32(3);
    const char *msg = tt_run_fail(ops[o], &i, 1, NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "int32"), "%s: %s", ops[o], msg);
    tf_tensor_unref(i);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_unary_more");
  TCase *tc = tcase_create("math_unary_more");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_predicates);
  tcase_add_test(tc, test_predicates_exhaustive_16bit);
  tcase_add_test(tc, test_leaky_relu);
  tcase_add_test(tc, test_leaky_relu_hand);
  tcase_add_test(tc, test_large);
  tcase_add_test(tc, test_empty_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
