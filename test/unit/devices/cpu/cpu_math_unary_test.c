/* Tests for the CPU unary math kernels. Each float op runs on fresh random
 * inputs in float32, float64, float16 and bfloat16 against a long double
 * recomputation written here (expl, logl, ...: independent of the double
 * and float libm the kernels call), rounded to the dtype. Tolerances
 * (|got - want| <= atol + rtol * |want|): float32 rtol 1e-6 (a few ulp),
 * float64 rtol 1e-13, float16 rtol 1e-3 and bfloat16 rtol 8e-3 (one ulp
 * of the 16-bit result, since the kernel rounds a float32 result once
 * more), atol only for subnormal results. Integer ops are exact, with
 * wrap-around checked through __int128. Edge inputs (zeros of both signs,
 * negatives for Log/Sqrt, huge magnitudes, inf, NaN), empty, rank-0 and
 * large (threaded) tensors, in-place and out-of-place runs are covered.
 * Rounding ops (Floor, Ceil, Round, Rint) are checked exactly, halves to
 * even against a hand-written rounding, in all four float dtypes; Round on
 * integers is the identity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

/* Check's ck_assert* makes a syscall even when it passes, too slow once
 * per element of a big tensor; these only report failures. */
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ck_abort_msg(__VA_ARGS__);                                               \
    }                                                                          \
  } while (0)

/* tt_assert_close's rule (same dtype and shape; NaNs match; integers
 * exact; |got - want| <= atol + rtol * |want|), silent when it holds. */
static void expect_close(const tf_tensor *got, const tf_tensor *want,
                         double atol, double rtol, const char *op) {
  ck_assert_int_eq(got->dtype, want->dtype);
  ck_assert(tf_shape_equal(&got->shape, &want->shape));
  bool exact = !tf_dtype_is_float(want->dtype);
  for (int64_t i = 0; i < got->n; i++) {
    if (exact) {
      int64_t g = tf_tensor_get_i64(got, i), w = tf_tensor_get_i64(want, i);
      EXPECT(g == w, "%s %s element %lld: got %lld, want %lld (seed %llu)", op,
             tf_dtype_name(want->dtype), (long long)i, (long long)g,
             (long long)w, (unsigned long long)tt_seed());
      continue;
    }
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    bool ok = isnan(w) ? isnan(g) : g == w || fabs(g - w) <= atol + rtol * fabs(w);
    EXPECT(ok, "%s %s element %lld: got %.9g, want %.9g (atol %g, rtol %g; "
           "seed %llu)", op, tf_dtype_name(want->dtype), (long long)i, g, w,
           atol, rtol, (unsigned long long)tt_seed());
  }
}

typedef long double (*ref_fn)(long double);

static long double r_neg(long double x) { return -x; }
static long double r_abs(long double x) { return fabsl(x); }
static long double r_sign(long double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
static long double r_square(long double x) { return x * x; }
static long double r_exp(long double x) { return expl(x); }
static long double r_log(long double x) { return logl(x); }
static long double r_log1p(long double x) { return log1pl(x); }
static long double r_sqrt(long double x) { return sqrtl(x); }
static long double r_rsqrt(long double x) { return 1 / sqrtl(x); }
static long double r_sigmoid(long double x) { return 1 / (1 + expl(-x)); }
static long double r_tanh(long double x) { return tanhl(x); }
static long double r_relu(long double x) { return isnan(x) || x > 0 ? x : 0; }
static long double r_relu6(long double x) {
  return isnan(x) ? x : x > 6 ? 6 : x > 0 ? x : 0;
}
static long double r_elu(long double x) { return x > 0 ? x : expm1l(x); }
static long double r_softplus(long double x) { return log1pl(expl(x)); }
static long double r_expm1(long double x) { return expm1l(x); }
static long double r_reciprocal(long double x) { return 1 / x; }
static long double r_sin(long double x) { return sinl(x); }
static long double r_cos(long double x) { return cosl(x); }
static long double r_erf(long double x) { return erfl(x); }
static long double r_floor(long double x) { return floorl(x); }
static long double r_ceil(long double x) { return ceill(x); }
/* Halves to even, written out (not rintl) so it is independent. */
static long double r_round_even(long double x) {
  long double f = floorl(x), d = x - f;
  if (d > 0.5L || (d == 0.5L && fmodl(f, 2) != 0)) {
    f += 1;
  }
  return f == 0 ? copysignl(0, x) : f;
}
static long double r_softsign(long double x) { return x / (fabsl(x) + 1); }
static long double r_selu(long double x) {
  const long double scale = 1.0507009873554804934193349852946L;
  const long double alpha = 1.6732632423543772848170429916717L;
  return x > 0 ? scale * x : scale * alpha * expm1l(x);
}

typedef struct float_case {
  const char *op;
  ref_fn ref;
  double lo, hi; /* random input range */
} float_case;

static const float_case float_cases[] = {
    {"Neg", r_neg, -100, 100},          {"Abs", r_abs, -100, 100},
    {"Sign", r_sign, -3, 3},            {"Square", r_square, -100, 100},
    {"Exp", r_exp, -80, 80},            {"Exp", r_exp, -1e-3, 1e-3},
    {"Log", r_log, 1e-3, 100},          {"Log", r_log, 0.99, 1.01},
    {"Log1p", r_log1p, -0.999, 100},    {"Log1p", r_log1p, -1e-4, 1e-4},
    {"Sqrt", r_sqrt, 0, 1e4},           {"Rsqrt", r_rsqrt, 1e-3, 1e4},
    {"Sigmoid", r_sigmoid, -50, 50},    {"Sigmoid", r_sigmoid, -1e-3, 1e-3},
    {"Tanh", r_tanh, -10, 10},          {"Tanh", r_tanh, -1e-3, 1e-3},
    {"Relu", r_relu, -10, 10},          {"Relu6", r_relu6, -10, 10},
    {"Elu", r_elu, -10, 10},            {"Elu", r_elu, -1e-4, 1e-4},
    {"Softplus", r_softplus, -50, 50},  {"Softplus", r_softplus, -1e-3, 1e-3},
    {"Expm1", r_expm1, -20, 20},        {"Expm1", r_expm1, -1e-4, 1e-4},
    {"Reciprocal", r_reciprocal, -100, 100},
    {"Reciprocal", r_reciprocal, 1e-3, 2e-3},
    {"Sin", r_sin, -10, 10},            {"Sin", r_sin, -1e-3, 1e-3},
    {"Cos", r_cos, -10, 10},            {"Erf", r_erf, -4, 4},
    {"Erf", r_erf, -1e-3, 1e-3},        {"Floor", r_floor, -100, 100},
    {"Ceil", r_ceil, -100, 100},        {"Round", r_round_even, -100, 100},
    {"Rint", r_round_even, -100, 100},  {"Round", r_round_even, -3, 3},
    {"Softsign", r_softsign, -100, 100}, {"Softsign", r_softsign, -1e-3, 1e-3},
    {"Selu", r_selu, -10, 10},          {"Selu", r_selu, -1e-4, 1e-4},
};
#define N_FLOAT_CASES ((int)(sizeof(float_cases) / sizeof(float_cases[0])))

typedef struct tol {
  tf_dtype dt;
  double atol, rtol;
} tol;

static const tol float_tols[] = {{TF_FLOAT32, 1e-37, 1e-6},
                                 {TF_FLOAT64, 1e-300, 1e-13},
                                 {TF_FLOAT16, 1e-7, 1e-3},
                                 {TF_BFLOAT16, 1e-38, 8e-3}};

/* want[i] = ref(x[i]) rounded to x's dtype. */
static tf_tensor *reference(const tf_tensor *x, ref_fn ref) {
  double *v = malloc(sizeof(double) * (size_t)(x->n + 1));
  for (int64_t i = 0; i < x->n; i++) {
    v[i] = (double)ref(tf_tensor_get_f64(x, i));
  }
  tf_tensor *want = tt_tensor(x->dtype, x->shape, v);
  free(v);
  return want;
}


/* Runs op on x twice: through tf_execute (a fresh output buffer), then
 * through the kernel with x's only reference, which must work in place;
 * both must match want. Consumes x. */
static void run_both_ways(const char *op, tf_tensor *x, const tf_tensor *want,
                          double atol, double rtol) {
  tf_tensor *y = tt_run1(op, &x, 1, NULL, 0);
  ck_assert(y->data != x->data);
  expect_close(y, want, atol, rtol, op);
  tf_tensor_unref(y);
  y = tt_run_in_place(op, &x, 1, false);
  ck_assert_msg(y->data == x->data, "%s did not reuse its input", op);
  expect_close(y, want, atol, rtol, op);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
}

START_TEST(test_float_ops_random) {
  for (int c = 0; c < N_FLOAT_CASES; c++) {
    const float_case *fc = &float_cases[c];
    for (size_t t = 0; t < sizeof(float_tols) / sizeof(float_tols[0]); t++) {
      const tol *tl = &float_tols[t];
      tf_tensor *x = tt_rand(tl->dt, tf_shape_of(2, (int64_t)7, (int64_t)129),
                             fc->lo, fc->hi);
      tf_tensor *want = reference(x, fc->ref);
      run_both_ways(fc->op, x, want, tl->atol, tl->rtol);
      tf_tensor_unref(want);
    }
  }
}
END_TEST

/* Big enough to be split across the pool (cheap and libm-bound grains). */
START_TEST(test_float_ops_large) {
  const char *ops[] = {"Exp", "Square", "Softplus", "Neg"};
  ref_fn refs[] = {r_exp, r_square, r_softplus, r_neg};
  for (int k = 0; k < 4; k++) {
    tf_tensor *x = tt_rand(k % 2 ? TF_FLOAT64 : TF_FLOAT32,
                           tf_shape_of(1, (int64_t)200003), -20, 20);
    tf_tensor *want = reference(x, refs[k]);
    run_both_ways(ops[k], x, want, 0, k % 2 ? 1e-13 : 1e-6);
    tf_tensor_unref(want);
  }
  tf_tensor *x = tt_rand(TF_FLOAT16, tf_shape_of(1, (int64_t)100001), -5, 5);
  tf_tensor *want = reference(x, r_tanh);
  run_both_ways("Tanh", x, want, 1e-7, 1e-3);
  tf_tensor_unref(want);
}
END_TEST

/* ---- edge inputs, hand-worked ------------------------------------------ */

typedef struct edge {
  const char *op;
  double in, want; /* want compared with rtol 1e-6 (exact for 0, inf) */
} edge;

static const edge edges[] = {
    {"Sqrt", -1, NAN},          {"Sqrt", 0, 0},
    {"Sqrt", INFINITY, INFINITY}, {"Log", -1, NAN},
    {"Log", 0, -INFINITY},      {"Log", -0.0, -INFINITY},
    {"Log", INFINITY, INFINITY}, {"Log1p", -1, -INFINITY},
    {"Log1p", -2, NAN},         {"Rsqrt", 0, INFINITY},
    {"Rsqrt", -0.0, -INFINITY}, {"Rsqrt", -4, NAN},
    {"Rsqrt", INFINITY, 0},     {"Exp", -INFINITY, 0},
    {"Exp", INFINITY, INFINITY}, {"Exp", 1000, INFINITY},
    {"Exp", -1000, 0},          {"Sigmoid", 1000, 1},
    {"Sigmoid", -1000, 0},      {"Sigmoid", INFINITY, 1},
    {"Sigmoid", -INFINITY, 0},  {"Sigmoid", 0, 0.5},
    {"Sigmoid", -80, 1.8048513878454153e-35},
    {"Tanh", 1000, 1},          {"Tanh", -1000, -1},
    {"Tanh", INFINITY, 1},      {"Tanh", -INFINITY, -1},
    {"Softplus", 1000, 1000},   {"Softplus", -1000, 0},
    {"Softplus", 80, 80},       {"Softplus", -80, 1.8048513878454153e-35},
    {"Softplus", 0, 0.69314718055994531},
    {"Softplus", INFINITY, INFINITY}, {"Softplus", -INFINITY, 0},
    {"Elu", -1000, -1},         {"Elu", -INFINITY, -1},
    {"Elu", 2.5, 2.5},          {"Relu", -3, 0},
    {"Relu", INFINITY, INFINITY}, {"Relu6", 1e9, 6},
    {"Relu6", INFINITY, 6},     {"Relu6", 3.5, 3.5},
    {"Relu6", -INFINITY, 0},    {"Sign", -INFINITY, -1},
    {"Sign", 1e-30, 1},         {"Square", 1e200, INFINITY},
    {"Abs", -INFINITY, INFINITY}, {"Neg", INFINITY, -INFINITY},
    {"Floor", -0.5, -1},        {"Floor", INFINITY, INFINITY},
    {"Floor", -INFINITY, -INFINITY}, {"Ceil", 0.25, 1},
    {"Ceil", -INFINITY, -INFINITY}, {"Round", 2.5, 2},
    {"Round", 3.5, 4},          {"Round", -2.5, -2},
    {"Round", 2.50001, 3},      {"Round", INFINITY, INFINITY},
    {"Rint", 0.5, 0},           {"Rint", -1.5, -2},
    {"Rint", -INFINITY, -INFINITY}, {"Reciprocal", 0, INFINITY},
    {"Reciprocal", -0.0, -INFINITY}, {"Reciprocal", INFINITY, 0},
    {"Reciprocal", -4, -0.25},  {"Sin", INFINITY, NAN},
    {"Cos", -INFINITY, NAN},    {"Cos", 0, 1},
    {"Erf", INFINITY, 1},       {"Erf", -INFINITY, -1},
    {"Erf", 10, 1},             {"Erf", 0.5, 0.52049987781304654},
    {"Expm1", -INFINITY, -1},   {"Expm1", 1000, INFINITY},
    {"Expm1", INFINITY, INFINITY}, {"Expm1", 1e-10, 1.00000000005e-10},
    /* TF's Softsign is x / (|x| + 1): inf / inf is NaN. */
    {"Softsign", INFINITY, NAN}, {"Softsign", 1e30, 1},
    {"Softsign", -3, -0.75},
    {"Selu", INFINITY, INFINITY}, {"Selu", -INFINITY, -1.7580993408473768},
    {"Selu", 2, 2.1014019747109610}, {"Selu", -1000, -1.7580993408473768},
};

static const char *float_ops[] = {
    "Neg",   "Abs",        "Sign",  "Square",  "Exp",      "Log",
    "Log1p", "Sqrt",       "Rsqrt", "Sigmoid", "Tanh",     "Relu",
    "Relu6", "Elu",        "Softplus", "Expm1", "Reciprocal", "Sin",
    "Cos",   "Erf",        "Floor", "Ceil",    "Round",    "Rint",
    "Softsign", "Selu"};
#define N_FLOAT_OPS ((int)(sizeof(float_ops) / sizeof(float_ops[0])))

static double run_scalar(const char *op, tf_dtype dt, double in) {
  tf_tensor *x = tt_tensor(dt, tf_shape_scalar(), &in);
  tf_tensor *y = tt_run1(op, &x, 1, NULL, 0);
  ck_assert_int_eq(y->dtype, dt);
  ck_assert_int_eq(y->shape.rank, 0);
  double v = tf_tensor_get_f64(y, 0);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
  return v;
}

START_TEST(test_float_edges) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
    for (int d = 0; d < 2; d++) {
      double want = edges[e].want;
      if (dts[d] == TF_FLOAT32 && fabs(want) < 1e-30 && want != 0) {
        want = (float)want; /* a float32 subnormal */
      }
      double got = run_scalar(edges[e].op, dts[d], edges[e].in);
      bool ok = isnan(want) ? isnan(got)
                : got == want || fabs(got - want) <= 1e-6 * fabs(want) +
                                     (dts[d] == TF_FLOAT32 ? 1e-44 : 0);
      ck_assert_msg(ok, "%s(%g) in %s = %.17g, want %.17g", edges[e].op,
                    edges[e].in, tf_dtype_name(dts[d]), got, want);
    }
  }
}
END_TEST

/* NaN in, NaN out, for every float op and float dtype. */
START_TEST(test_nan_propagates) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16, TF_BFLOAT16};
  for (int o = 0; o < N_FLOAT_OPS; o++) {
    for (int d = 0; d < 4; d++) {
      double got = run_scalar(float_ops[o], dts[d], NAN);
      ck_assert_msg(isnan(got), "%s(NaN) in %s = %g", float_ops[o],
                    tf_dtype_name(dts[d]), got);
    }
  }
}
END_TEST

/* The sign of zero: Sign(+-0) = +-0, Neg(0) = -0, Abs(-0) = +0,
 * Relu(-0) = +0. */
START_TEST(test_signed_zero) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16, TF_BFLOAT16};
  for (int d = 0; d < 4; d++) {
    double z = run_scalar("Sign", dts[d], -0.0);
    ck_assert_msg(z == 0 && signbit(z), "Sign(-0) in %s", tf_dtype_name(dts[d]));
    z = run_scalar("Sign", dts[d], 0.0);
    ck_assert(z == 0 && !signbit(z));
    ck_assert(signbit(run_scalar("Neg", dts[d], 0.0)));
    ck_assert(!signbit(run_scalar("Abs", dts[d], -0.0)));
    ck_assert(!signbit(run_scalar("Relu", dts[d], -0.0)));
    ck_assert(run_scalar("Sign", dts[d], -2.0) == -1.0);
  }
}
END_TEST

/* 16-bit Neg and Abs act on the sign bit alone: exhaustive. */
START_TEST(test_half_neg_abs_exhaustive) {
  const tf_dtype dts[] = {TF_FLOAT16, TF_BFLOAT16};
  for (int d = 0; d < 2; d++) {
    tf_shape s = tf_shape_of(1, (int64_t)65536);
    tf_tensor *x;
    tf_status st;
    ck_assert(tf_tensor_new(dts[d], &s, &x, &st) == TF_OK);
    for (uint32_t i = 0; i < 65536; i++) {
      ((uint16_t *)x->data)[i] = (uint16_t)i;
    }
    tf_tensor *neg = tt_run1("Neg", &x, 1, NULL, 0);
    tf_tensor *abs = tt_run1("Abs", &x, 1, NULL, 0);
    for (uint32_t i = 0; i < 65536; i++) {
      EXPECT(((uint16_t *)neg->data)[i] == (i ^ 0x8000u), "Neg 0x%04x", i);
      EXPECT(((uint16_t *)abs->data)[i] == (i & 0x7fffu), "Abs 0x%04x", i);
    }
    tf_tensor_unref(neg);
    tf_tensor_unref(abs);
    tf_tensor_unref(x);
  }
}
END_TEST

/* ---- integers ---------------------------------------------------------- */

static const tf_dtype signed_types[] = {TF_INT8, TF_INT16, TF_INT32,
                                        TF_INT64};
static const tf_dtype unsigned_types[] = {TF_UINT8, TF_UINT16, TF_UINT32,
                                          TF_UINT64};

/* v wrapped into dt's width (two's complement), as the int64 that
 * tt_tensor_i stores back (the bit pattern, for uint64). */
static int64_t wrap(unsigned __int128 v, tf_dtype dt) {
  int b = (int)tf_dtype_size(dt) * 8;
  uint64_t m = (uint64_t)v; /* low 64 bits */
  if (b < 64) {
    m &= (1ull << b) - 1;
    if (tf_dtype_is_signed(dt) && ((m >> (b - 1)) & 1)) {
      m |= ~((1ull << b) - 1); /* sign-extend */
    }
  }
  int64_t r;
  memcpy(&r, &m, sizeof(r));
  return r;
}

/* The exact result of op on x, modulo 2^128 (only the low bits matter). */
static unsigned __int128 int_ref(const char *op, __int128 x) {
  typedef unsigned __int128 u128;
  u128 pos = x > 0 ? (u128)x : 0;
  if (!strcmp(op, "Neg")) {
    return 0 - (u128)x;
  }
  if (!strcmp(op, "Abs")) {
    return x < 0 ? 0 - (u128)x : (u128)x;
  }
  if (!strcmp(op, "Sign")) {
    return (u128)(__int128)((x > 0) - (x < 0));
  }
  if (!strcmp(op, "Square")) {
    return (u128)x * (u128)x;
  }
  if (!strcmp(op, "Relu")) {
    return pos;
  }
  return x > 6 ? 6 : pos; /* Relu6 */
}

/* Element i of an integer tensor as a mathematical integer. */
static __int128 int_at(const tf_tensor *t, int64_t i) {
  if (t->dtype == TF_UINT64) {
    return ((const uint64_t *)t->data)[i];
  }
  return tf_tensor_get_i64(t, i);
}

/* Random bits over the full range, plus the extremes and small values. */
static tf_tensor *int_input(tf_dtype dt) {
  const int64_t n = 301;
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *x;
  tf_status st;
  ck_assert(tf_tensor_new(dt, &s, &x, &st) == TF_OK);
  size_t sz = tf_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = tt_rand_u64();
    if (i < 8) { /* 0, 1, -1 (max for unsigned), min, max, 5, 6, 7 */
      int b = (int)sz * 8;
      uint64_t top = 1ull << (b - 1);
      uint64_t sp[] = {0, 1, ~0ull, top, top - 1, 5, 6, 7};
      r = sp[i];
    } else if (i % 2) {
      r = (uint64_t)((int64_t)(r % 41) - 20); /* small, both signs */
    }
    memcpy((char *)x->data + (size_t)i * sz, &r, sz); /* little-endian */
  }
  return x;
}

static void check_int_op(const char *op, tf_dtype dt) {
  tf_tensor *x = int_input(dt);
  int64_t *w = malloc(sizeof(int64_t) * (size_t)x->n);
  for (int64_t i = 0; i < x->n; i++) {
    w[i] = wrap(int_ref(op, int_at(x, i)), dt);
  }
  tf_tensor *want = tt_tensor_i(dt, x->shape, w);
  free(w);
  run_both_ways(op, x, want, 0, 0);
  tf_tensor_unref(want);
}

START_TEST(test_int_ops) {
  const char *sops[] = {"Neg", "Abs", "Sign", "Square", "Relu", "Relu6"};
  for (int t = 0; t < 4; t++) {
    for (int o = 0; o < 6; o++) {
      check_int_op(sops[o], signed_types[t]);
    }
    for (int o = 3; o < 6; o++) {
      check_int_op(sops[o], unsigned_types[t]);
    }
  }
}
END_TEST

/* Hand-worked wrap-around: -INT32_MIN and |INT32_MIN| stay INT32_MIN. */
START_TEST(test_int_hand_cases) {
  int64_t v[] = {INT32_MIN, -7, 0, 46341};
  tf_tensor *x = tt_tensor_i(TF_INT32, tf_shape_of(1, (int64_t)4), v);
  tf_tensor *y = tt_run1("Neg", &x, 1, NULL, 0);
  int32_t neg[] = {INT32_MIN, 7, 0, -46341};
  ck_assert(memcmp(y->data, neg, sizeof neg) == 0);
  tf_tensor_unref(y);
  y = tt_run1("Abs", &x, 1, NULL, 0);
  int32_t abs[] = {INT32_MIN, 7, 0, 46341};
  ck_assert(memcmp(y->data, abs, sizeof abs) == 0);
  tf_tensor_unref(y);
  y = tt_run1("Square", &x, 1, NULL, 0);
  int32_t sq[] = {0, 49, 0, -2147479015}; /* 46341^2 = 2^31 + 4633 */
  ck_assert(memcmp(y->data, sq, sizeof sq) == 0);
  tf_tensor_unref(y);
  y = tt_run1("Sign", &x, 1, NULL, 0);
  int32_t sg[] = {-1, -1, 0, 1};
  ck_assert(memcmp(y->data, sg, sizeof sg) == 0);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
}
END_TEST

/* Rounding: every half in [-4.5, 4.5] goes to even under Round and Rint,
 * Floor and Ceil keep the sign of zero (Ceil(-0.5) = -0, Round(-0.5) = -0),
 * in all four float dtypes (halves are exact in each). Exact compares. */
START_TEST(test_rounding_halves) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16, TF_BFLOAT16};
  const double halves[] = {-4.5, -3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5};
  const double even[] = {-4, -4, -2, -2, -0.0, 0, 2, 2, 4, 4};
  for (int d = 0; d < 4; d++) {
    for (int i = 0; i < 10; i++) {
      double r = run_scalar("Round", dts[d], halves[i]);
      double q = run_scalar("Rint", dts[d], halves[i]);
      ck_assert_msg(r == even[i] && q == even[i] &&
                    signbit(r) == signbit(even[i]),
                    "Round/Rint(%g) in %s = %g/%g", halves[i],
                    tf_dtype_name(dts[d]), r, q);
    }
    ck_assert(signbit(run_scalar("Ceil", dts[d], -0.5)));
    ck_assert(signbit(run_scalar("Floor", dts[d], -0.0)));
    ck_assert(run_scalar("Floor", dts[d], -0.25) == -1);
    ck_assert(!signbit(run_scalar("Ceil", dts[d], 0.0)));
  }
}
END_TEST

/* Round on integers is the identity, extremes included. */
START_TEST(test_round_int) {
  int64_t v[] = {INT64_MIN, -7, 0, 5, INT64_MAX};
  tf_tensor *x = tt_tensor_i(TF_INT64, tf_shape_of(1, (int64_t)5), v);
  tf_tensor *y = tt_run1("Round", &x, 1, NULL, 0);
  ck_assert(memcmp(y->data, v, sizeof v) == 0);
  tt_free((tf_tensor *[]){x, y}, 2);
  int64_t w[] = {INT32_MIN, -3, 0, INT32_MAX};
  x = tt_tensor_i(TF_INT32, tf_shape_of(1, (int64_t)4), w);
  y = tt_run1("Round", &x, 1, NULL, 0);
  int32_t want[] = {INT32_MIN, -3, 0, INT32_MAX};
  ck_assert_int_eq(y->dtype, TF_INT32);
  ck_assert(memcmp(y->data, want, sizeof want) == 0);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

/* ---- complex, bool, shapes, errors ------------------------------------- */

START_TEST(test_complex_neg_square) {
  const int64_t n = 100;
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *x;
  tf_status st;
  ck_assert(tf_tensor_new(TF_COMPLEX64, &s, &x, &st) == TF_OK);
  tf_complex64 *xc = x->data;
  for (int64_t i = 0; i < n; i++) {
    xc[i] = (tf_complex64){(float)tt_rand_uniform(-10, 10),
                           (float)tt_rand_uniform(-10, 10)};
  }
  tf_tensor *neg = tt_run1("Neg", &x, 1, NULL, 0);
  tf_tensor *sq = tt_run1("Square", &x, 1, NULL, 0);
  for (int64_t i = 0; i < n; i++) {
    double re = xc[i].re, im = xc[i].im;
    tf_complex64 g = ((tf_complex64 *)neg->data)[i];
    ck_assert(g.re == -xc[i].re && g.im == -xc[i].im);
    g = ((tf_complex64 *)sq->data)[i];
    /* float32 products: error ~ eps * (re^2 + im^2); tolerance 1e-6 of it. */
    double mag = re * re + im * im;
    ck_assert_msg(fabs(g.re - (re * re - im * im)) <= 1e-6 * mag &&
                      fabs(g.im - 2 * re * im) <= 1e-6 * mag,
                  "Square(%g%+gi) = %g%+gi", re, im, g.re, g.im);
  }
  tt_free((tf_tensor *[]){neg, sq, x}, 3);
}
END_TEST

START_TEST(test_logical_not) {
  tf_tensor *x = tt_rand(TF_BOOL, tf_shape_of(2, (int64_t)3, (int64_t)50), 0, 1);
  ((uint8_t *)x->data)[0] = 2; /* any nonzero byte is true */
  int64_t n = x->n;
  uint8_t *want = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) {
    want[i] = ((uint8_t *)x->data)[i] == 0;
  }
  tf_tensor *keep = tf_tensor_ref(x);
  tf_tensor *y = tt_run1("LogicalNot", &x, 1, NULL, 0);
  ck_assert_int_eq(y->dtype, TF_BOOL);
  tt_assert_shape(y, 2, (int64_t)3, (int64_t)50);
  ck_assert(memcmp(y->data, want, (size_t)n) == 0);
  ck_assert_uint_eq(((uint8_t *)y->data)[0], 0);
  tf_tensor_unref(y);
  tf_tensor_unref(keep);
  tf_tensor_unref(x);
  free(want);
  tf_tensor *f = tf_tensor_scalar_f32(1);
  const char *msg = tt_run_fail("LogicalNot", &f, 1, NULL, 0,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "float32") || strstr(msg, "bool"), "%s", msg);
  tf_tensor_unref(f);
}
END_TEST

START_TEST(test_empty_and_scalar) {
  for (int o = 0; o < N_FLOAT_OPS; o++) {
    tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, (int64_t)4, (int64_t)0),
                           0, 1);
    tf_tensor *y = tt_run1(float_ops[o], &x, 1, NULL, 0);
    tt_assert_shape(y, 2, (int64_t)4, (int64_t)0);
    ck_assert_int_eq(y->dtype, TF_FLOAT32);
    tf_tensor_unref(y);
    tf_tensor_unref(x);
  }
  tf_tensor *x = tt_tensor_i(TF_INT64, tf_shape_of(1, (int64_t)0), NULL);
  tf_tensor *y = tt_run1("Abs", &x, 1, NULL, 0);
  tt_assert_shape(y, 1, (int64_t)0);
  tt_free((tf_tensor *[]){x, y}, 2);
  ck_assert(fabs(run_scalar("Exp", TF_FLOAT64, 1.0) - M_E) < 1e-15);
  ck_assert(run_scalar("Relu6", TF_INT32, 9) == 6);
}
END_TEST

/* Dtypes outside an op's type set are refused with a message naming it. */
START_TEST(test_bad_dtypes) {
  tf_tensor *i = tf_tensor_scalar_i32(3);
  const char *msg = tt_run_fail("Exp", &i, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "int32"), "%s", msg);
  msg = tt_run_fail("Softplus", &i, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "int32"), "%s", msg);
  const char *float_only[] = {"Floor", "Rint", "Sin", "Erf", "Selu"};
  for (int k = 0; k < 5; k++) {
    msg = tt_run_fail(float_only[k], &i, 1, NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "int32"), "%s: %s", float_only[k], msg);
  }
  tf_tensor_unref(i);
  tf_tensor *b = tf_tensor_scalar_bool(true);
  msg = tt_run_fail("Neg", &b, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "bool"), "%s", msg);
  tf_tensor_unref(b);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_unary");
  TCase *tc = tcase_create("math_unary");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_float_ops_random);
  tcase_add_test(tc, test_float_ops_large);
  tcase_add_test(tc, test_float_edges);
  tcase_add_test(tc, test_nan_propagates);
  tcase_add_test(tc, test_signed_zero);
  tcase_add_test(tc, test_half_neg_abs_exhaustive);
  tcase_add_test(tc, test_int_ops);
  tcase_add_test(tc, test_int_hand_cases);
  tcase_add_test(tc, test_rounding_halves);
  tcase_add_test(tc, test_round_int);
  tcase_add_test(tc, test_complex_neg_square);
  tcase_add_test(tc, test_logical_not);
  tcase_add_test(tc, test_empty_and_scalar);
  tcase_add_test(tc, test_bad_dtypes);
  suite_add_tcase(s, tc);
  return s;
}
