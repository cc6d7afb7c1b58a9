/* cpu_math_binary_more_test.c: the CPU kernels of TF's AddV2, RealDiv,
 * SquaredDifference, DivNoNan, Atan2, Xdivy and Xlogy against a plain
 * float64 recomputation that finds each operand element by unravelling
 * output indices (tt_bcast_src_index, none of the kernels' broadcast
 * machinery), on fresh seeded random inputs over scalar, empty, vector,
 * outer-product and rank-6 shape pairs; TF's special values (DivNoNan,
 * Xdivy and Xlogy at zeros, NaN and Inf; Atan2's quadrants and signed
 * zeros; IEEE RealDiv by zero); integer AddV2 and SquaredDifference
 * wrapping; dtypes without kernels; Maximum and Minimum propagating NaN
 * from either side (Eigen's PropagateNaN, as TF's CPU kernels).
 *
 * Tolerances (|got - want| <= rtol * |want|, computed from the same
 * rounded inputs): one rounding (AddV2, RealDiv, DivNoNan, Xdivy) float32
 * 1.2e-7, float64 2.3e-16; two roundings or a libm call (SquaredDifference,
 * Atan2, Xlogy) float32 3.6e-7, float64 6.7e-16; integers exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct pair {
  tf_shape a, b;
} pair;

static int shape_pairs(pair *p) {
  int i = 0;
  p[i++] = (pair){SCALAR, SCALAR};
  p[i++] = (pair){SHAPE(0), SHAPE(0)};
  p[i++] = (pair){SHAPE(0), SCALAR};
  p[i++] = (pair){SHAPE(3, 0, 2), SHAPE(2)};
  p[i++] = (pair){SHAPE(7), SHAPE(7)};
  p[i++] = (pair){SHAPE(5), SCALAR};
  p[i++] = (pair){SCALAR, SHAPE(5)};
  p[i++] = (pair){SHAPE(2, 3), SHAPE(3)};
  p[i++] = (pair){SHAPE(3), SHAPE(2, 3)};
  p[i++] = (pair){SHAPE(4, 1), SHAPE(1, 5)};
  p[i++] = (pair){SHAPE(2, 1, 3, 1, 2, 3), SHAPE(1, 4, 3, 1, 1, 3)};
  p[i++] = (pair){SHAPE(70, 3), SHAPE(70, 1)};
  return i;
}

static tf_shape bcast_shape(const tf_shape *a, const tf_shape *b) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  tf_shape o = tf_shape_make(r, NULL);
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    o.dims[i] = da == 1 ? db : da;
  }
  return o;
}

/* TF's definitions, in double. */
static double ref_op(const char *op, double x, double y) {
  if (!strcmp(op, "AddV2")) return x + y;
  if (!strcmp(op, "RealDiv")) return x / y;
  if (!strcmp(op, "SquaredDifference")) return (x - y) * (x - y);
  if (!strcmp(op, "DivNoNan")) return y == 0 ? 0 : x / y;
  if (!strcmp(op, "Atan2")) return atan2(x, y);
  if (!strcmp(op, "Xdivy")) return x == 0 ? 0 : x / y;
  if (!strcmp(op, "Xlogy")) return x == 0 ? 0 : x * log(y);
  ck_abort_msg("no reference for %s", op);
  return 0;
}

static double rtol_for(const char *op, tf_dtype dt) {
  bool two = !strcmp(op, "SquaredDifference") || !strcmp(op, "Atan2") ||
             !strcmp(op, "Xlogy");
  if (dt == TF_FLOAT32) {
    return two ? 3.6e-7 : 1.2e-7;
  }
  return dt == TF_FLOAT64 ? (two ? 6.7e-16 : 2.3e-16) : 0;
}

/* Integers wrap to dt's width (two's complement). */
static int64_t wrap(tf_dtype dt, uint64_t v) {
  return dt == TF_INT32 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

static int64_t ref_int(const char *op, tf_dtype dt, int64_t x, int64_t y) {
  if (!strcmp(op, "AddV2")) return wrap(dt, (uint64_t)x + (uint64_t)y);
  uint64_t d = (uint64_t)x - (uint64_t)y;
  return wrap(dt, dt == TF_INT32 ? (uint64_t)((uint32_t)d * (uint32_t)d)
                                 : d * d);
}

/* Scans, and hands a mismatch to tt_assert_close, which names it. */
static void assert_close(const tf_tensor *got, const tf_tensor *want,
                         double rtol) {
  bool ok = got->dtype == want->dtype &&
            tf_shape_equal(&got->shape, &want->shape);
  for (int64_t i = 0; ok && i < got->n; i++) {
    if (tf_dtype_is_integer(got->dtype)) {
      ok = tf_tensor_get_i64(got, i) == tf_tensor_get_i64(want, i);
      continue;
    }
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    ok = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= rtol * fabs(w);
  }
  if (!ok) {
    tt_assert_close(got, want, 0, rtol);
    ck_abort_msg("assert_close and tt_assert_close disagree");
  }
}

static tf_tensor *reference(const char *op, const tf_tensor *x,
                            const tf_tensor *y) {
  tf_shape os = bcast_shape(&x->shape, &y->shape);
  int64_t n = tf_shape_num_elements(&os);
  double *v = calloc((size_t)n + 1, sizeof(double));
  int64_t *iv = calloc((size_t)n + 1, sizeof(int64_t));
  bool is_int = tf_dtype_is_integer(x->dtype);
  for (int64_t o = 0; o < n; o++) {
    int64_t ix = tt_bcast_src_index(&x->shape, &os, o);
    int64_t iy = tt_bcast_src_index(&y->shape, &os, o);
    if (is_int) {
      iv[o] = ref_int(op, x->dtype, tf_tensor_get_i64(x, ix),
                      tf_tensor_get_i64(y, iy));
    } else {
      v[o] = ref_op(op, tf_tensor_get_f64(x, ix), tf_tensor_get_f64(y, iy));
    }
  }
  tf_tensor *t = is_int ? tt_tensor_i(x->dtype, os, iv)
                        : tt_tensor(x->dtype, os, v);
  free(v);
  free(iv);
  return t;
}

/* Inputs with some exact zeros (x for Xdivy/Xlogy, y for DivNoNan) so the
 * special branches are taken; Xlogy's y positive. */
static tf_tensor *rand_in(tf_dtype dt, tf_shape s, double lo, double hi,
                          double zero_frac) {
  tf_tensor *t = tt_rand(dt, s, lo, hi);
  for (int64_t i = 0; i < t->n; i++) {
    if (tt_rand_uniform(0, 1) < zero_frac) {
      size_t w = tf_dtype_size(dt); /* all-zero bits: +0 */
      memset((char *)t->data + (size_t)i * w, 0, w);
    }
  }
  return t;
}

static void check_op(const char *op, tf_dtype dt, const pair *p) {
  bool zx = !strcmp(op, "Xdivy") || !strcmp(op, "Xlogy");
  bool zy = !strcmp(op, "DivNoNan");
  double ylo = !strcmp(op, "Xlogy") ? 0.01 : -10;
  tf_tensor *in[2] = {rand_in(dt, p->a, -10, 10, zx ? 0.25 : 0),
                      rand_in(dt, p->b, ylo, 10, zy ? 0.25 : 0)};
  tf_tensor *got = tt_run1(op, in, 2, NULL, 0);
  tf_tensor *want = reference(op, in[0], in[1]);
  assert_close(got, want, rtol_for(op, dt));
  tf_tensor_unref(got);
  tf_tensor_unref(want);
  tt_free(in, 2);
}

static const char *const k_float_ops[] = {"AddV2", "RealDiv",
                                          "SquaredDifference", "DivNoNan",
                                          "Atan2", "Xdivy", "Xlogy"};

static void check_dtype(tf_dtype dt, const char *const *ops, int n_ops) {
  pair p[16];
  int n = shape_pairs(p);
  for (int o = 0; o < n_ops; o++) {
    for (int i = 0; i < n; i++) {
      check_op(ops[o], dt, &p[i]);
    }
  }
}

START_TEST(test_random_f32) {
  check_dtype(TF_FLOAT32, k_float_ops, N_ELEMS(k_float_ops));
}
END_TEST

START_TEST(test_random_f64) {
  check_dtype(TF_FLOAT64, k_float_ops, N_ELEMS(k_float_ops));
}
END_TEST

/* AddV2 on every integer type (wrapping checked below); SquaredDifference
 * on TF's int32 and int64. */
START_TEST(test_random_ints) {
  const char *add[] = {"AddV2"}, *both[] = {"AddV2", "SquaredDifference"};
  check_dtype(TF_INT32, both, 2);
  check_dtype(TF_INT64, both, 2);
  tf_dtype small[] = {TF_INT8, TF_INT16, TF_UINT8, TF_UINT16, TF_UINT32,
                      TF_UINT64};
  for (int d = 0; d < N_ELEMS(small); d++) {
    tf_tensor *in[2] = {tt_rand(small[d], SHAPE(3, 4), 0, 20),
                        tt_rand(small[d], SHAPE(4), 0, 20)};
    tf_tensor *got = tt_run1(add[0], in, 2, NULL, 0);
    tf_tensor *want = reference("AddV2", in[0], in[1]);
    assert_close(got, want, 0);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
    tt_free(in, 2);
  }
}
END_TEST

/* Runs op on two vectors given as doubles and compares with want
 * (NaNs must match, signs of zeros too). */
static void check_values(const char *op, tf_dtype dt, int n, const double *x,
                         const double *y, const double *want) {
  tf_tensor *in[2] = {tt_tensor(dt, SHAPE(n), x), tt_tensor(dt, SHAPE(n), y)};
  tf_tensor *got = tt_run1(op, in, 2, NULL, 0);
  for (int i = 0; i < n; i++) {
    double g = tf_tensor_get_f64(got, i);
    bool same = (isnan(g) && isnan(want[i])) ||
                (g == want[i] && signbit(g) == signbit(want[i])) ||
                fabs(g - want[i]) <= 1e-6 * fabs(want[i]);
    ck_assert_msg(same, "%s %s element %d: %s(%g, %g) = %g, want %g", op,
                  tf_dtype_name(dt), i, op, x[i], y[i], g, want[i]);
  }
  tf_tensor_unref(got);
  tt_free(in, 2);
}

START_TEST(test_special_values) {
  const double inf = INFINITY, nan = NAN, pi = M_PI;
  tf_dtype dts[2] = {TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 2; d++) {
    tf_dtype dt = dts[d];
    /* DivNoNan: 0 wherever y == 0, even for x NaN or Inf. */
    check_values("DivNoNan", dt, 6, (double[]){1, nan, inf, 0, 6, nan},
                 (double[]){0, 0, -0.0, 0, 3, 2}, (double[]){0, 0, 0, 0, 2, nan});
    /* Xdivy / Xlogy: 0 wherever x == 0, even for y 0, NaN, negative. */
    check_values("Xdivy", dt, 6, (double[]){0, 0, 0, 1, -1, 6},
                 (double[]){0, nan, inf, 0, 0, 3},
                 (double[]){0, 0, 0, inf, -inf, 2});
    check_values("Xlogy", dt, 7, (double[]){0, 0, 0, 1, 1, 2, nan},
                 (double[]){0, nan, -1, 0, -1, 1, 1},
                 (double[]){0, 0, 0, -inf, nan, 0, nan});
    /* RealDiv is IEEE division. */
    check_values("RealDiv", dt, 4, (double[]){1, -1, 0, 3},
                 (double[]){0, 0, 0, -0.0}, (double[]){inf, -inf, nan, -inf});
    /* Atan2(y, x): quadrants and signed zeros. */
    check_values("Atan2", dt, 8, (double[]){1, 1, -1, -1, 0, -0.0, 0, 1},
                 (double[]){1, -1, -1, 1, -1, -1, 0, 0},
                 (double[]){pi / 4, 3 * pi / 4, -3 * pi / 4, -pi / 4, pi,
                            -pi, 0, pi / 2});
    check_values("SquaredDifference", dt, 3, (double[]){inf, 1, nan},
                 (double[]){inf, -inf, 0}, (double[]){nan, inf, nan});
  }
}
END_TEST

/* TF's CPU Maximum/Minimum (Eigen PropagateNaN): NaN on either side wins. */
START_TEST(test_max_min_nan) {
  const double nan = NAN;
  tf_dtype dts[2] = {TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 2; d++) {
    double x[4] = {nan, 1, nan, 2}, y[4] = {1, nan, nan, -3};
    check_values("Maximum", dts[d], 4, x, y, (double[]){nan, nan, nan, 2});
    check_values("Minimum", dts[d], 4, x, y, (double[]){nan, nan, nan, -3});
  }
  /* A NaN in a broadcast scalar reaches every element. */
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, SHAPE(40), -1, 1),
                      tt_tensor(TF_FLOAT32, SCALAR, (double[]){nan})};
  for (int k = 0; k < 2; k++) {
    tf_tensor *got = tt_run1(k ? "Minimum" : "Maximum", in, 2, NULL, 0);
    for (int64_t i = 0; i < got->n; i++) {
      ck_assert(isnan(tf_tensor_get_f64(got, i)));
    }
    tf_tensor_unref(got);
  }
  tt_free(in, 2);
}
END_TEST

START_TEST(test_int_wrap) {
  int64_t x[3] = {INT32_MAX, INT32_MIN, 100000};
  int64_t y[3] = {1, -1, -100000};
  tf_tensor *in[2] = {tt_tensor_i(TF_INT32, SHAPE(3), x),
                      tt_tensor_i(TF_INT32, SHAPE(3), y)};
  tf_tensor *sum = tt_run1("AddV2", in, 2, NULL, 0);
  tf_tensor *sq = tt_run1("SquaredDifference", in, 2, NULL, 0);
  int64_t want_sum[3] = {INT32_MIN, INT32_MAX, 0};
  /* (2^31 - 2)^2, (1 - 2^31)^2 and (2e5)^2 mod 2^32, two's complement. */
  int64_t want_sq[3] = {4, 1, (int32_t)(uint32_t)(200000ull * 200000ull)};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(tf_tensor_get_i64(sum, i), want_sum[i]);
    ck_assert_int_eq(tf_tensor_get_i64(sq, i), want_sq[i]);
  }
  tf_tensor_unref(sum);
  tf_tensor_unref(sq);
  tt_free(in, 2);
}
END_TEST

/* RealDiv's op takes int32 but TF has no CPU kernel for it (NOT_FOUND);
 * DivNoNan, Atan2, Xdivy, Xlogy and SquaredDifference (int8) reject the
 * dtype at the op; shapes that do not broadcast fail. */
START_TEST(test_errors) {
  tf_tensor *ints[2] = {tt_rand(TF_INT32, SHAPE(2), 1, 5),
                        tt_rand(TF_INT32, SHAPE(2), 1, 5)};
  tt_run_fail("RealDiv", ints, 2, NULL, 0, TF_NOT_FOUND);
  const char *float_only[] = {"DivNoNan", "Atan2", "Xdivy", "Xlogy"};
  for (int i = 0; i < N_ELEMS(float_only); i++) {
    tt_run_fail(float_only[i], ints, 2, NULL, 0, TF_INVALID_ARGUMENT);
  }
  tf_tensor *i8[2] = {tt_rand(TF_INT8, SHAPE(2), 1, 5),
                      tt_rand(TF_INT8, SHAPE(2), 1, 5)};
  tt_run_fail("SquaredDifference", i8, 2, NULL, 0, TF_INVALID_ARGUMENT);
  tf_tensor *bad[2] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), 1, 5),
                       tt_rand(TF_FLOAT32, SHAPE(4), 1, 5)};
  const char *msg = tt_run_fail("Atan2", bad, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3]") && strstr(msg, "[4]"), "%s", msg);
  tt_free(ints, 2);
  tt_free(i8, 2);
  tt_free(bad, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_binary_more");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_random_f32);
  tcase_add_test(tc, test_random_f64);
  tcase_add_test(tc, test_random_ints);
  tcase_add_test(tc, test_special_values);
  tcase_add_test(tc, test_max_min_nan);
  tcase_add_test(tc, test_int_wrap);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
