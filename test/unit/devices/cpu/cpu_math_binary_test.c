/* cpu_math_binary_test.c: the broadcasting binary kernels (Add .. Minimum
 * with TF's division family FloorDiv, TruncateDiv, FloorMod, Mod,
 * TruncateMod; comparisons, LogicalAnd/Or) against a plain float64
 * recomputation that walks output indices and finds source elements by
 * unravelling them (no use of the kernels' broadcast machinery), on fresh
 * random inputs over scalar, empty, vector, outer-product and rank-6
 * shape pairs; a numpy cross-check; hand-worked flooring/truncating
 * division and remainder and Pow values; integer wraparound, MIN / -1,
 * NaN and division-by-zero behaviour (an error for integers, IEEE for
 * floats); shape errors; in-place forwarding.
 *
 * Tolerances (|got - want| <= rtol * |want|): float32 1.2e-7 (1 ulp: both
 * sides round the exact result once), Pow float32 2.4e-7 (powf is within
 * 1 ulp, not always correctly rounded); float64 2.3e-16, Pow float64
 * 4.5e-16; the division family's floats and every integer or bool result
 * exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Kernels for every integer and float dtype; Mod and TruncateMod (as in
 * TF) only for float32, float64, int32 and int64. */
static const char *const k_arith[] = {"Add",      "Sub",         "Mul",
                                      "Div",      "FloorDiv",    "TruncateDiv",
                                      "FloorMod", "Pow",         "Maximum",
                                      "Minimum"};
static const char *const k_trunc_mod[] = {"Mod", "TruncateMod"};
static const char *const k_compare[] = {"Greater", "GreaterEqual", "Less",
                                        "LessEqual", "Equal", "NotEqual"};

typedef struct pair {
  tf_shape a, b;
} pair;

/* Broadcasting shape pairs: scalars, empties, vectors, rows, columns,
 * outer products, rank 6. */
static pair *shape_pairs(int *n) {
  static pair p[16];
  int i = 0;
  p[i++] = (pair){SCALAR, SCALAR};
  p[i++] = (pair){SHAPE(0), SHAPE(0)};
  p[i++] = (pair){SHAPE(0), SCALAR};
  p[i++] = (pair){SHAPE(3, 0, 2), SHAPE(2)};
  p[i++] = (pair){SHAPE(3, 1, 2), SHAPE(0, 1)};
  p[i++] = (pair){SHAPE(5), SHAPE(5)};
  p[i++] = (pair){SHAPE(5), SCALAR};
  p[i++] = (pair){SCALAR, SHAPE(5)};
  p[i++] = (pair){SHAPE(2, 3), SHAPE(3)};
  p[i++] = (pair){SHAPE(3), SHAPE(2, 3)};
  p[i++] = (pair){SHAPE(2, 1, 4), SHAPE(3, 1)};
  p[i++] = (pair){SHAPE(4, 1), SHAPE(1, 5)};
  p[i++] = (pair){SHAPE(4, 5), SHAPE(4, 1)};
  p[i++] = (pair){SHAPE(2, 1, 3, 1, 2, 3), SHAPE(1, 4, 3, 1, 1, 3)};
  p[i++] = (pair){SHAPE(2, 2, 1, 3, 1, 2), SHAPE(3, 2, 2)};
  p[i++] = (pair){SHAPE(1, 3, 1, 1, 1, 1), SHAPE(2, 1, 2, 2, 1, 2)};
  *n = i;
  return p;
}

/* ---- reference -------------------------------------------------------- */

static bool is_float(tf_dtype dt) { return dt == TF_FLOAT32 || dt == TF_FLOAT64; }

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


/* The ops the reference knows, in one order with their names. */
enum {
  R_ADD, R_SUB, R_MUL, R_DIV, R_FLOORDIV, R_TRUNCDIV, R_FLOORMOD, R_MOD,
  R_TRUNCMOD, R_POW, R_MAX, R_MIN, R_GT, R_GE, R_LT, R_LE, R_EQ, R_NE, R_AND,
  R_OR, R_COUNT
};
static const char *const k_ref_names[R_COUNT] = {
    "Add", "Sub", "Mul", "Div", "FloorDiv", "TruncateDiv", "FloorMod", "Mod",
    "TruncateMod", "Pow", "Maximum", "Minimum", "Greater", "GreaterEqual",
    "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr"};

static int ref_index(const char *op) {
  for (int i = 0; i < R_COUNT; i++) {
    if (!strcmp(k_ref_names[i], op)) {
      return i;
    }
  }
  ck_abort_msg("no reference for %s", op);
  return -1;
}

/* Flooring and truncating division and remainder the way a person
 * computes them (TF's definitions): float quotients rounded to the dtype
 * first, as the kernel's division is, then floored or truncated; the
 * remainders exact (fmod), the flooring one moved to y's sign. */
static double ref_div_op(int op, tf_dtype dt, double x, double y) {
  double q = x / y;
  q = dt == TF_FLOAT32 ? (double)(float)q : q;
  switch (op) {
  case R_FLOORDIV: return floor(q);
  case R_TRUNCDIV: return trunc(q);
  case R_MOD:
  case R_TRUNCMOD: return fmod(x, y);
  default: break;
  }
  if (!is_float(dt)) {
    return x - floor(x / y) * y;
  }
  double r = fmod(x, y);
  return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}

static double ref_op(int op, tf_dtype dt, double x, double y) {
  switch (op) {
  case R_ADD: return x + y;
  case R_SUB: return x - y;
  case R_MUL: return x * y;
  case R_DIV: return is_float(dt) ? x / y : trunc(x / y);
  case R_FLOORDIV:
  case R_TRUNCDIV:
  case R_FLOORMOD:
  case R_MOD:
  case R_TRUNCMOD: return ref_div_op(op, dt, x, y);
  case R_POW: return pow(x, y);
  case R_MAX: return x > y ? x : y;
  case R_MIN: return x < y ? x : y;
  case R_GT: return x > y;
  case R_GE: return x >= y;
  case R_LT: return x < y;
  case R_LE: return x <= y;
  case R_EQ: return x == y;
  case R_NE: return x != y;
  case R_AND: return x != 0 && y != 0;
  default: return x != 0 || y != 0;
  }
}

/* Two's-complement wraparound of an exact integer into dt's range. */
static int64_t wrap_int(tf_dtype dt, int64_t v) {
  int bits = (int)tf_dtype_size(dt) * 8;
  if (bits == 64) {
    return v;
  }
  uint64_t m = (uint64_t)1 << bits, u = (uint64_t)v & (m - 1);
  if (tf_dtype_is_signed(dt) && u >= m / 2) {
    return (int64_t)u - (int64_t)m;
  }
  return (int64_t)u;
}

static tf_tensor *reference(const char *op, const tf_tensor *x,
                            const tf_tensor *y, tf_dtype out_dt) {
  tf_shape os = bcast_shape(&x->shape, &y->shape);
  int64_t n = tf_shape_num_elements(&os);
  double *v = calloc((size_t)n + 1, sizeof(double));
  int64_t *iv = calloc((size_t)n + 1, sizeof(int64_t));
  int op_index = ref_index(op);
  for (int64_t o = 0; o < n; o++) {
    double xv = tf_tensor_get_f64(x, tt_bcast_src_index(&x->shape, &os, o));
    double yv = tf_tensor_get_f64(y, tt_bcast_src_index(&y->shape, &os, o));
    v[o] = ref_op(op_index, x->dtype, xv, yv);
    iv[o] = tf_dtype_is_integer(out_dt) ? wrap_int(out_dt, (int64_t)v[o]) : 0;
  }
  tf_tensor *t = tf_dtype_is_integer(out_dt) ? tt_tensor_i(out_dt, os, iv)
                                             : tt_tensor(out_dt, os, v);
  free(v);
  free(iv);
  return t;
}

static double rtol_for(const char *op, tf_dtype dt) {
  bool p = !strcmp(op, "Pow");
  if (dt == TF_FLOAT32) {
    return p ? 2.4e-7 : 1.2e-7;
  }
  return dt == TF_FLOAT64 ? (p ? 4.5e-16 : 2.3e-16) : 0;
}

/* tt_assert_close, but element loops stay out of Check's per-assertion
 * bookkeeping (a pipe write each in fork mode): scan first, and only
 * hand over to tt_assert_close, which reports the bad element, on a
 * mismatch. */
static void assert_close(const tf_tensor *got, const tf_tensor *want,
                         double atol, double rtol) {
  bool ok = got->dtype == want->dtype &&
            tf_shape_equal(&got->shape, &want->shape);
  for (int64_t i = 0; ok && i < got->n; i++) {
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    if (tf_dtype_is_integer(got->dtype)) {
      ok = tf_tensor_get_i64(got, i) == tf_tensor_get_i64(want, i);
    } else {
      ok = (isnan(g) && isnan(w)) || g == w ||
           fabs(g - w) <= atol + rtol * fabs(w);
    }
  }
  if (!ok) {
    tt_assert_close(got, want, atol, rtol);
    ck_abort_msg("assert_close and tt_assert_close disagree");
  }
}

/* ---- inputs ----------------------------------------------------------- */

/* Uniform in [lo, hi) (integers: [lo, hi]); `grid` rounds floats to halves
 * so ties occur; `nonzero` replaces zeros with 1. */
static tf_tensor *rand_in(tf_dtype dt, tf_shape s, double lo, double hi,
                          bool grid, bool nonzero) {
  if (!tf_dtype_is_signed(dt) && dt != TF_BOOL) {
    lo = lo < 0 ? 0 : lo;
  }
  int64_t n = tf_shape_num_elements(&s);
  double *v = calloc((size_t)n + 1, sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    if (dt == TF_BOOL) {
      v[i] = (double)(tt_rand_u64() & 1);
    } else if (!is_float(dt)) {
      v[i] = floor(tt_rand_uniform(lo, hi + 1));
      v[i] = v[i] > hi ? hi : v[i];
    } else {
      v[i] = grid ? floor(tt_rand_uniform(2 * lo, 2 * hi)) / 2
                  : tt_rand_uniform(lo, hi);
    }
    if (nonzero && v[i] == 0) {
      v[i] = 1;
    }
  }
  tf_tensor *t = tt_tensor(dt, s, v);
  free(v);
  return t;
}

/* Inputs suited to op: divisors nonzero, powers small, comparisons tied. */
static void make_inputs(const char *op, tf_dtype dt, const pair *p,
                        tf_tensor **x, tf_tensor **y) {
  bool divides = strstr("Div FloorDiv TruncateDiv FloorMod Mod TruncateMod",
                        op) != NULL;
  if (divides) {
    *x = rand_in(dt, p->a, -20, 20, false, false);
    *y = rand_in(dt, p->b, -6, 6, false, true);
  } else if (!strcmp(op, "Pow")) {
    *x = is_float(dt) ? rand_in(dt, p->a, 0.1, 3, false, false)
                      : rand_in(dt, p->a, -4, 4, false, false);
    *y = is_float(dt) ? rand_in(dt, p->b, -3, 3, false, false)
                      : rand_in(dt, p->b, 0, 5, false, false);
  } else {
    bool cmp = strstr("Greater GreaterEqual Less LessEqual Equal NotEqual",
                      op) != NULL;
    double r = cmp ? 3 : 50;
    *x = rand_in(dt, p->a, -r, r, cmp, false);
    *y = rand_in(dt, p->b, -r, r, cmp, false);
  }
}

/* Runs op on fresh inputs for pair p and checks it against the
 * reference. */
static void check_op(const char *op, tf_dtype dt, const pair *p) {
  tf_tensor *in[2];
  make_inputs(op, dt, p, &in[0], &in[1]);
  tf_tensor *got = tt_run1(op, in, 2, NULL, 0);
  bool cmp = got->dtype == TF_BOOL && dt != TF_BOOL;
  tf_tensor *want = reference(op, in[0], in[1], cmp ? TF_BOOL : dt);
  char sa[64], sb[64];
  if (!tf_shape_equal(&got->shape, &want->shape)) {
    ck_abort_msg("%s %s %s x %s: wrong shape", op, tf_dtype_name(dt),
                 tf_shape_str(&p->a, sa, sizeof(sa)),
                 tf_shape_str(&p->b, sb, sizeof(sb)));
  }
  assert_close(got, want, 0, rtol_for(op, dt));
  tf_tensor_unref(got);
  tf_tensor_unref(want);
  tt_free(in, 2);
}

static void check_ops(const char *const *ops, int n_ops, tf_dtype dt) {
  int n;
  pair *p = shape_pairs(&n);
  for (int o = 0; o < n_ops; o++) {
    for (int i = 0; i < n; i++) {
      check_op(ops[o], dt, &p[i]);
    }
  }
}

START_TEST(test_arith_f32) { check_ops(k_arith, N_ELEMS(k_arith), TF_FLOAT32); }
END_TEST
START_TEST(test_arith_f64) { check_ops(k_arith, N_ELEMS(k_arith), TF_FLOAT64); }
END_TEST
START_TEST(test_arith_i32) { check_ops(k_arith, N_ELEMS(k_arith), TF_INT32); }
END_TEST
START_TEST(test_arith_i64) { check_ops(k_arith, N_ELEMS(k_arith), TF_INT64); }
END_TEST

/* Mod and TruncateMod: the dtypes of TF's CPU kernels. */
START_TEST(test_trunc_mod) {
  tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    check_ops(k_trunc_mod, N_ELEMS(k_trunc_mod), dts[d]);
  }
}
END_TEST

/* The narrower and unsigned integers: results wrap like the hardware. */
START_TEST(test_arith_small_ints) {
  tf_dtype dts[] = {TF_INT8, TF_INT16, TF_UINT8, TF_UINT16, TF_UINT32,
                    TF_UINT64};
  int n;
  pair *p = shape_pairs(&n);
  for (int d = 0; d < N_ELEMS(dts); d++) {
    for (int o = 0; o < N_ELEMS(k_arith); o++) {
      for (int i = 0; i < n; i += 3) {
        check_op(k_arith[o], dts[d], &p[i]);
      }
    }
  }
}
END_TEST

START_TEST(test_compare) {
  tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    check_ops(k_compare, N_ELEMS(k_compare), dts[d]);
  }
  tf_dtype more[] = {TF_INT8, TF_INT16, TF_UINT8, TF_UINT16, TF_UINT32,
                     TF_UINT64};
  int n;
  pair *p = shape_pairs(&n);
  for (int d = 0; d < N_ELEMS(more); d++) {
    for (int o = 0; o < N_ELEMS(k_compare); o++) {
      check_op(k_compare[o], more[d], &p[10]);
    }
  }
  const char *const eq[] = {"Equal", "NotEqual", "LogicalAnd", "LogicalOr"};
  check_ops(eq, N_ELEMS(eq), TF_BOOL);
}
END_TEST

/* Above TF_PARALLEL_GRAIN: the pool splits the walk mid-row; short
 * repeated rows ([N,3] + [3]) go through the tiled path on both sides. */
START_TEST(test_large_parallel) {
  pair big[] = {{SHAPE(300, 257), SHAPE(257)},
                {SHAPE(61, 1, 700), SHAPE(3, 1)},
                {SHAPE(40000), SHAPE(40000)},
                {SHAPE(1), SHAPE(70001)},
                {SHAPE(40000, 3), SHAPE(3)},
                {SHAPE(7), SHAPE(9000, 7)}};
  const char *const ops[] = {"Sub",         "Div", "FloorMod", "TruncateMod",
                             "TruncateDiv", "Pow", "Maximum",  "Less"};
  tf_dtype dts[] = {TF_FLOAT32, TF_INT64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    for (int o = 0; o < N_ELEMS(ops); o++) {
      for (int i = 0; i < N_ELEMS(big); i++) {
        check_op(ops[o], dts[d], &big[i]);
      }
    }
  }
}
END_TEST

/* ---- numpy ------------------------------------------------------------ */

/* One python run for every case (starting numpy costs ~0.3 s). */
START_TEST(test_numpy) {
  struct {
    const char *op, *np;
    tf_dtype dt;
    tf_shape a, b;
  } c[] = {
      {"Add", "np.add", TF_FLOAT32, SHAPE(2, 1, 4), SHAPE(3, 1)},
      {"FloorDiv", "np.floor_divide", TF_INT32, SHAPE(4, 1), SHAPE(1, 5)},
      {"FloorDiv", "np.floor_divide", TF_UINT16, SHAPE(3, 4), SHAPE(4)},
      {"FloorDiv", "fdiv", TF_FLOAT32, SHAPE(2, 1, 3), SHAPE(4, 1)},
      {"FloorDiv", "fdiv", TF_FLOAT64, SHAPE(5), SCALAR},
      {"TruncateDiv", "tdiv", TF_INT64, SHAPE(2, 3), SHAPE(3)},
      {"TruncateDiv", "tdiv", TF_INT8, SHAPE(4, 5), SHAPE(4, 1)},
      {"TruncateDiv", "tdiv", TF_FLOAT32, SHAPE(3, 1), SHAPE(1, 4)},
      {"FloorMod", "np.mod", TF_INT64, SHAPE(2, 3), SHAPE(3)},
      {"FloorMod", "np.mod", TF_INT16, SCALAR, SHAPE(6)},
      {"FloorMod", "np.mod", TF_FLOAT64, SHAPE(3, 4), SHAPE(4)},
      {"FloorMod", "np.mod", TF_FLOAT32, SHAPE(4, 1), SHAPE(1, 5)},
      {"Mod", "np.fmod", TF_INT32, SHAPE(2, 3), SHAPE(2, 1)},
      {"Mod", "np.fmod", TF_FLOAT64, SHAPE(3, 4), SHAPE(4)},
      {"TruncateMod", "np.fmod", TF_INT64, SHAPE(6), SHAPE(6)},
      {"TruncateMod", "np.fmod", TF_FLOAT32, SHAPE(2, 1, 3), SHAPE(3, 1)},
      {"Pow", "np.power", TF_FLOAT64, SHAPE(2, 1, 3, 1, 2, 3),
       SHAPE(4, 3, 1, 1, 3)},
      {"Maximum", "np.maximum", TF_INT32, SHAPE(5), SCALAR},
      {"LessEqual", "np.less_equal", TF_FLOAT32, SHAPE(4, 5), SHAPE(4, 1)},
  };
  enum { N = sizeof(c) / sizeof(c[0]) };
  tf_tensor *in[2 * N], *ref[N] = {NULL};
  char script[4096];
  /* TF's FloorDiv on floats is floor(x / y) (np.floor_divide differs);
   * TruncateDiv rounds the quotient toward zero. Integer quotients of
   * these small operands are exact in float64. */
  size_t len = (size_t)snprintf(
      script, sizeof(script),
      "fdiv = lambda a, b: np.floor(np.divide(a, b)).astype(a.dtype)\n"
      "tdiv = lambda a, b: np.trunc(np.divide(a, b)).astype(a.dtype)\n");
  for (int i = 0; i < N; i++) {
    pair p = {c[i].a, c[i].b};
    make_inputs(c[i].op, c[i].dt, &p, &in[2 * i], &in[2 * i + 1]);
    len += (size_t)snprintf(script + len, sizeof(script) - len,
                            "outs.append(%s(ins[%d], ins[%d]))\n", c[i].np,
                            2 * i, 2 * i + 1);
  }
  int n = tt_numpy(script, in, 2 * N, ref, N);
  if (n >= 0) {
    ck_assert_int_eq(n, N);
    for (int i = 0; i < N; i++) {
      tf_tensor *got = tt_run1(c[i].op, in + 2 * i, 2, NULL, 0);
      tt_assert_close(got, ref[i], 0, rtol_for(c[i].op, c[i].dt));
      tf_tensor_unref(got);
    }
    tt_free(ref, N);
  }
  tt_free(in, 2 * N);
}
END_TEST

/* ---- hand-worked values ----------------------------------------------- */

static void check_hand(const char *op, tf_dtype dt, int n, const double *x,
                       const double *y, const double *want) {
  tf_shape s = tf_shape_make(1, (int64_t[]){n});
  tf_tensor *in[2] = {tt_tensor(dt, s, x), tt_tensor(dt, s, y)};
  tf_tensor *w = tt_tensor(dt, s, want);
  tf_tensor *got = tt_run1(op, in, 2, NULL, 0);
  tt_assert_close(got, w, 0, 0);
  tf_tensor_unref(got);
  tf_tensor_unref(w);
  tt_free(in, 2);
}

/* Flooring (FloorDiv, FloorMod: the divisor's sign, as Python) against
 * truncating (Div and TruncateDiv on integers, Mod and TruncateMod: the
 * dividend's sign, as C) on every sign combination. */
START_TEST(test_floor_and_trunc_negative) {
  const double x[] = {7, -7, 7, -7, 0, 1, -1, 6, -6};
  const double y[] = {2, 2, -2, -2, 3, -3, 3, -3, 4};
  const double fdiv[] = {3, -4, -4, 3, 0, -1, -1, -2, -2};
  const double fmod_[] = {1, 1, -1, -1, 0, -2, 2, 0, 2};
  const double tdiv[] = {3, -3, -3, 3, 0, 0, 0, -2, -1};
  const double tmod[] = {1, -1, 1, -1, 0, 1, -1, 0, -2};
  tf_dtype dts[] = {TF_INT8, TF_INT16, TF_INT32, TF_INT64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    check_hand("FloorDiv", dts[d], 9, x, y, fdiv);
    check_hand("FloorMod", dts[d], 9, x, y, fmod_);
    check_hand("Div", dts[d], 9, x, y, tdiv);
    check_hand("TruncateDiv", dts[d], 9, x, y, tdiv);
    if (dts[d] == TF_INT32 || dts[d] == TF_INT64) {
      check_hand("Mod", dts[d], 9, x, y, tmod);
      check_hand("TruncateMod", dts[d], 9, x, y, tmod);
    }
  }
  const double fx[] = {-7.5, 7.5, 7.5, -7.5, 5.0, -0.5};
  const double fy[] = {2, -2, 2, -2, 2.5, 3};
  const double ffdiv[] = {-4, -4, 3, 3, 2, -1};
  const double ffmod[] = {0.5, -0.5, 1.5, -1.5, 0, 2.5};
  const double ftdiv[] = {-3, -3, 3, 3, 2, 0};
  const double ftmod[] = {-1.5, 1.5, 1.5, -1.5, 0, -0.5};
  for (int d = 0; d < 2; d++) {
    tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
    check_hand("FloorDiv", dt, 6, fx, fy, ffdiv);
    check_hand("FloorMod", dt, 6, fx, fy, ffmod);
    check_hand("TruncateDiv", dt, 6, fx, fy, ftdiv);
    check_hand("Mod", dt, 6, fx, fy, ftmod);
    check_hand("TruncateMod", dt, 6, fx, fy, ftmod);
  }
  /* Unsigned: flooring and truncating agree. */
  const double ux[] = {7, 200, 0, 65535}, uy[] = {2, 7, 3, 256};
  const double uq[] = {3, 28, 0, 255}, ur[] = {1, 4, 0, 255};
  check_hand("FloorDiv", TF_UINT16, 4, ux, uy, uq);
  check_hand("TruncateDiv", TF_UINT16, 4, ux, uy, uq);
  check_hand("FloorMod", TF_UINT16, 4, ux, uy, ur);
}
END_TEST

/* MIN / -1 overflows: it wraps to MIN (remainder 0) instead of trapping. */
START_TEST(test_int_min_by_minus_one) {
  int64_t x32[] = {INT32_MIN, INT32_MIN}, y32[] = {-1, 1};
  tf_shape s = SHAPE(2);
  tf_tensor *in[2] = {tt_tensor_i(TF_INT32, s, x32), tt_tensor_i(TF_INT32, s, y32)};
  const char *ops[] = {"Div", "FloorDiv", "TruncateDiv", "FloorMod", "Mod",
                       "TruncateMod"};
  for (int o = 0; o < N_ELEMS(ops); o++) {
    int64_t want[2] = {INT32_MIN, INT32_MIN};
    if (strstr(ops[o], "Mod")) {
      want[0] = want[1] = 0;
    }
    tf_tensor *got = tt_run1(ops[o], in, 2, NULL, 0);
    tf_tensor *w = tt_tensor_i(TF_INT32, s, want);
    tt_assert_close(got, w, 0, 0);
    tt_free((tf_tensor *[]){got, w}, 2);
  }
  tt_free(in, 2);
  int64_t x64[] = {INT64_MIN}, y64[] = {-1};
  tf_tensor *in64[2] = {tt_tensor_i(TF_INT64, SHAPE(1), x64),
                        tt_tensor_i(TF_INT64, SHAPE(1), y64)};
  for (int o = 0; o < N_ELEMS(ops); o++) {
    tf_tensor *got = tt_run1(ops[o], in64, 2, NULL, 0);
    int64_t want = strstr(ops[o], "Mod") ? 0 : INT64_MIN;
    ck_assert_msg(((int64_t *)got->data)[0] == want, "%s", ops[o]);
    tf_tensor_unref(got);
  }
  tt_free(in64, 2);
}
END_TEST

/* Each integer division or remainder by zero is an error naming the op
 * and node; over the dtypes each op has kernels for. */
START_TEST(test_int_division_by_zero) {
  const char *ops[] = {"Div", "FloorDiv", "TruncateDiv", "FloorMod", "Mod",
                       "TruncateMod"};
  tf_dtype dts[] = {TF_INT32, TF_INT64, TF_UINT8, TF_INT8, TF_UINT64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    for (int o = 0; o < N_ELEMS(ops); o++) {
      bool narrow = dts[d] != TF_INT32 && dts[d] != TF_INT64;
      bool trunc_mod = !strcmp(ops[o], "Mod") || !strcmp(ops[o], "TruncateMod");
      if (narrow && trunc_mod) {
        continue; /* Mod and TruncateMod: int32 and int64 only */
      }
      tf_tensor *in[2] = {tt_tensor(dts[d], SHAPE(2, 2), (double[]){1, 2, 3, 4}),
                          tt_tensor(dts[d], SHAPE(2), (double[]){1, 0})};
      const char *msg = tt_run_fail(ops[o], in, 2, NULL, 0, TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(msg, "Integer division by zero") != NULL &&
                        strstr(msg, ops[o]) != NULL,
                    "%s", msg);
      tt_free(in, 2);
    }
  }
  /* An empty output divides nothing: no error. */
  tf_tensor *in[2] = {tt_tensor(TF_INT32, SHAPE(0), NULL),
                      tt_tensor(TF_INT32, SCALAR, (double[]){0})};
  tf_tensor *got = tt_run1("Div", in, 2, NULL, 0);
  tt_assert_shape(got, 1, (int64_t)0);
  tf_tensor_unref(got);
  got = tt_run1("FloorMod", in, 2, NULL, 0);
  tt_assert_shape(got, 1, (int64_t)0);
  tf_tensor_unref(got);
  tt_free(in, 2);
}
END_TEST

/* Floats follow IEEE, as TF: quotients by zero are +-inf (NaN for 0 / 0),
 * remainders by zero NaN. */
START_TEST(test_float_division_by_zero) {
  const double x[] = {1, -1, 0}, y[] = {0, 0, 0};
  const double inf = INFINITY, nan = NAN;
  const double q[] = {inf, -inf, nan}, r[] = {nan, nan, nan};
  for (int d = 0; d < 2; d++) {
    tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
    check_hand("Div", dt, 3, x, y, q);
    check_hand("FloorDiv", dt, 3, x, y, q);
    check_hand("TruncateDiv", dt, 3, x, y, q);
    check_hand("FloorMod", dt, 3, x, y, r);
    check_hand("Mod", dt, 3, x, y, r);
    check_hand("TruncateMod", dt, 3, x, y, r);
  }
  /* A broadcast zero divisor. */
  tf_tensor *f[2] = {tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, -1}),
                     tt_tensor(TF_FLOAT32, SCALAR, (double[]){0})};
  tf_tensor *got = tt_run1("FloorDiv", f, 2, NULL, 0);
  ck_assert(isinf(((float *)got->data)[0]) && ((float *)got->data)[0] > 0);
  ck_assert(isinf(((float *)got->data)[1]) && ((float *)got->data)[1] < 0);
  tf_tensor_unref(got);
  got = tt_run1("TruncateMod", f, 2, NULL, 0);
  ck_assert(isnan(((float *)got->data)[0]) && isnan(((float *)got->data)[1]));
  tf_tensor_unref(got);
  tt_free(f, 2);
}
END_TEST

START_TEST(test_pow_values) {
  const double x[] = {2, -2, 0, 3, -1, 5};
  const double y[] = {10, 3, 0, 0, 7, 1};
  const double w[] = {1024, -8, 1, 1, -1, 5};
  check_hand("Pow", TF_INT32, 6, x, y, w);
  check_hand("Pow", TF_INT64, 6, x, y, w);
  check_hand("Pow", TF_FLOAT64, 6, x, y, w);
  /* 2^31 wraps in int32; 3^5 = 243 wraps to -13 in int8. */
  check_hand("Pow", TF_INT32, 1, (double[]){2}, (double[]){31},
             (double[]){INT32_MIN});
  check_hand("Pow", TF_INT8, 1, (double[]){3}, (double[]){5}, (double[]){-13});
  /* A negative base to a fractional power is NaN. */
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, SCALAR, (double[]){-2}),
                      tt_tensor(TF_FLOAT32, SCALAR, (double[]){0.5})};
  tf_tensor *got = tt_run1("Pow", in, 2, NULL, 0);
  ck_assert(isnan(*(float *)got->data));
  tf_tensor_unref(got);
  tt_free(in, 2);
  tf_tensor *bad[2] = {tt_tensor(TF_INT32, SHAPE(3), (double[]){2, 2, 2}),
                       tt_tensor(TF_INT32, SHAPE(3), (double[]){1, -1, 2})};
  const char *msg = tt_run_fail("Pow", bad, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "negative integer powers") != NULL, "%s", msg);
  tt_free(bad, 2);
}
END_TEST

/* Integer overflow wraps (two's complement), never traps (UBSan runs
 * this too). */
START_TEST(test_int_wraparound) {
  check_hand("Add", TF_INT32, 2, (double[]){INT32_MAX, INT32_MIN},
             (double[]){1, -1}, (double[]){INT32_MIN, INT32_MAX});
  check_hand("Sub", TF_INT32, 1, (double[]){INT32_MIN}, (double[]){1},
             (double[]){INT32_MAX});
  check_hand("Mul", TF_INT32, 1, (double[]){65536}, (double[]){65536},
             (double[]){0});
  check_hand("Add", TF_UINT8, 2, (double[]){200, 5}, (double[]){100, 3},
             (double[]){44, 8});
  check_hand("Sub", TF_UINT16, 1, (double[]){1}, (double[]){2},
             (double[]){65535});
  check_hand("Mul", TF_UINT16, 1, (double[]){65535}, (double[]){65535},
             (double[]){1});
  check_hand("Add", TF_INT8, 1, (double[]){127}, (double[]){1},
             (double[]){-128});
  int64_t big[] = {INT64_MAX}, one[] = {1}, wmin[] = {INT64_MIN};
  tf_tensor *in[2] = {tt_tensor_i(TF_INT64, SHAPE(1), big),
                      tt_tensor_i(TF_INT64, SHAPE(1), one)};
  tf_tensor *got = tt_run1("Add", in, 2, NULL, 0);
  ck_assert_int_eq(((int64_t *)got->data)[0], wmin[0]);
  tf_tensor_unref(got);
  tt_free(in, 2);
}
END_TEST

/* Maximum/Minimum propagate NaN from either side; comparisons with NaN
 * are false (NotEqual true). */
START_TEST(test_nan) {
  double nan = NAN;
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){nan, 1, nan}),
                      tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){1, nan, nan})};
  for (int i = 0; i < 2; i++) {
    tf_tensor *got = tt_run1(i ? "Minimum" : "Maximum", in, 2, NULL, 0);
    for (int k = 0; k < 3; k++) {
      ck_assert(isnan(((float *)got->data)[k]));
    }
    tf_tensor_unref(got);
  }
  const char *cmp[] = {"Greater", "GreaterEqual", "Less", "LessEqual", "Equal",
                       "NotEqual"};
  for (int i = 0; i < 6; i++) {
    tf_tensor *got = tt_run1(cmp[i], in, 2, NULL, 0);
    for (int k = 0; k < 3; k++) {
      ck_assert_int_eq(((bool *)got->data)[k], i == 5);
    }
    tf_tensor_unref(got);
  }
  tt_free(in, 2);
}
END_TEST

/* ---- shapes and errors ------------------------------------------------ */

/* Runs op's kernel on a node whose inputs are Placeholders of unknown
 * shape, so the kernel, not shape inference, judges the shapes. */
static tf_code run_kernel(const char *op, tf_tensor **in, int n,
                          const tf_attr_kv *attrs, int n_attrs,
                          tf_tensor **out, tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_output o[4];
  for (int i = 0; i < n; i++) {
    o[i] = (tf_output){
        tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "op");
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, o[i]);
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *node = tf_node_finish(b, st);
  ck_assert_msg(node != NULL, "%s", st->msg);
  tf_code rc = tf_kernel_run_node(node, NULL, in, out, st);
  tf_graph_free(g);
  return rc;
}

START_TEST(test_incompatible_shapes) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1),
                      tt_rand(TF_FLOAT32, SHAPE(4), -1, 1)};
  /* Caught by shape inference when building the node... */
  const char *msg = tt_run_fail("Add", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3]") && strstr(msg, "[4]"), "%s", msg);
  /* ...and by the kernel when shapes were unknown until run time. */
  const char *ops[] = {"Add", "Pow", "Less", "Equal"};
  for (int i = 0; i < 4; i++) {
    tf_status st;
    tf_tensor *out[1] = {NULL};
    ck_assert_int_eq(run_kernel(ops[i], in, 2, NULL, 0, out, &st),
                     TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "Incompatible shapes: [2,3] vs. [4]"), "%s",
                  st.msg);
    ck_assert_msg(strstr(st.msg, ops[i]), "names the op: %s", st.msg);
  }
  tt_free(in, 2);
}
END_TEST

/* Equal/NotEqual with incompatible_shape_error=false answer a scalar
 * false/true for shapes that do not broadcast, and broadcast otherwise. */
START_TEST(test_equal_incompatible_ok) {
  tf_attr_kv attr = {"incompatible_shape_error", tf_attr_bool(false)};
  tf_tensor *in[2] = {tt_tensor(TF_INT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6}),
                      tt_tensor(TF_INT32, SHAPE(4), (double[]){1, 2, 3, 4})};
  for (int i = 0; i < 2; i++) {
    const char *op = i ? "NotEqual" : "Equal";
    tf_tensor *got = tt_run1(op, in, 2, &attr, 1);
    tt_assert_shape(got, 0);
    ck_assert_int_eq(*(bool *)got->data, i == 1);
    tf_tensor_unref(got);
    tf_status st;
    tf_tensor *out[1] = {NULL};
    ck_assert_int_eq(run_kernel(op, in, 2, &attr, 1, out, &st), TF_OK);
    tt_assert_shape(out[0], 0);
    ck_assert_int_eq(*(bool *)out[0]->data, i == 1);
    tf_tensor_unref(out[0]);
  }
  tf_tensor *b = tt_tensor(TF_INT32, SHAPE(3), (double[]){1, 0, 3});
  tf_tensor *in2[2] = {in[0], b};
  tf_tensor *got = tt_run1("Equal", in2, 2, &attr, 1);
  tf_tensor *want = tt_tensor(TF_BOOL, SHAPE(2, 3), (double[]){1, 0, 1, 0, 0, 0});
  tt_assert_close(got, want, 0, 0);
  tt_free((tf_tensor *[]){got, want, b}, 3);
  tt_free(in, 2);
}
END_TEST

/* ---- in place --------------------------------------------------------- */


START_TEST(test_forward_in_place) {
  /* [3] + [2,3]: only y has the output's size, so y's buffer is reused. */
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(3), -5, 5);
  tf_tensor *y = tt_rand(TF_FLOAT32, SHAPE(2, 3), -5, 5);
  tf_tensor *want = reference("Sub", x, y, TF_FLOAT32);
  void *ybuf = y->data;
  tf_tensor *in[2] = {x, y};
  tf_tensor *got = tt_run_in_place("Sub", in, 2, false);
  ck_assert_ptr_eq(got->data, ybuf);
  tt_assert_close(got, want, 0, 1.2e-7);
  tt_free((tf_tensor *[]){got, want, x, y}, 4);
  /* Same tensor on both sides: x * x in place. */
  x = tt_rand(TF_FLOAT64, SHAPE(1000), -5, 5);
  want = reference("Mul", x, x, TF_FLOAT64);
  void *xbuf = x->data;
  tf_tensor *in2[2] = {x, x};
  got = tt_run_in_place("Mul", in2, 2, false);
  ck_assert_ptr_eq(got->data, xbuf);
  tt_assert_close(got, want, 0, 2.3e-16);
  tt_free((tf_tensor *[]){got, want, x}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_binary");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_arith_f32);
  tcase_add_test(tc, test_arith_f64);
  tcase_add_test(tc, test_arith_i32);
  tcase_add_test(tc, test_arith_i64);
  tcase_add_test(tc, test_arith_small_ints);
  tcase_add_test(tc, test_compare);
  tcase_add_test(tc, test_large_parallel);
  tcase_add_test(tc, test_numpy);
  tcase_add_test(tc, test_trunc_mod);
  tcase_add_test(tc, test_floor_and_trunc_negative);
  tcase_add_test(tc, test_int_min_by_minus_one);
  tcase_add_test(tc, test_int_division_by_zero);
  tcase_add_test(tc, test_float_division_by_zero);
  tcase_add_test(tc, test_pow_values);
  tcase_add_test(tc, test_int_wraparound);
  tcase_add_test(tc, test_nan);
  tcase_add_test(tc, test_incompatible_shapes);
  tcase_add_test(tc, test_equal_incompatible_ok);
  tcase_add_test(tc, test_forward_in_place);
  suite_add_tcase(s, tc);
  return s;
}
