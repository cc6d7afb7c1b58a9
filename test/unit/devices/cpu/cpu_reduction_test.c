/* cpu_reduction_test.c: the CPU reduction kernels (Sum, Mean, Max, Min,
 * Prod, ArgMax, ArgMin) against hand-worked cases, a plain reference
 * written here with index arithmetic (float64 accumulation, integer
 * wrap-around), and NumPy, on random shapes including empty dims and
 * rank 0, plus large inputs that take the parallel and split paths.
 *
 * Tolerances: float32 Sum/Mean atol 1e-9, rtol 1.2e-7 (the kernel
 * accumulates in float64 and rounds once, so it must match the float64
 * reference to one float32 rounding; a float32 accumulator would miss by
 * ~1e-5 on the 2^20-element test); float32 Prod rtol 1.2e-7; float64 Sum,
 * Mean, Prod atol 1e-12, rtol 1e-13; Max, Min, ArgMax, ArgMin and all
 * integer results exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const char *const red_ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};

static void assert_shape_is(const tf_tensor *t, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&t->shape, &want), "shape %s, want %s",
                tf_shape_str(&t->shape, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}

static tf_tensor *reduce(const char *op, tf_tensor *x, tf_tensor *axes,
                         bool keep) {
  tf_tensor *in[2] = {x, axes};
  tf_attr_kv kv[] = {{"keep_dims", tf_attr_bool(keep)}};
  return tt_run1(op, in, 2, kv, 1);
}

/* Runs op and unrefs the axes tensor. */
static tf_tensor *reduce_v(const char *op, tf_tensor *x, int n,
                           const int64_t *axes, bool keep) {
  tf_tensor *a = tf_tensor_vec_i64(n, axes);
  tf_tensor *y = reduce(op, x, a, keep);
  tf_tensor_unref(a);
  return y;
}

/* ---- plain reference ---------------------------------------------------- */

/* Output index of input element i: row-major over the kept dims. */
static int64_t out_index(const tf_shape *s, uint32_t mask, int64_t i) {
  int64_t o = 0, mul = 1;
  for (int d = s->rank - 1; d >= 0; d--) {
    int64_t c = i % s->dims[d];
    i /= s->dims[d];
    if (!((mask >> d) & 1)) {
      o += c * mul;
      mul *= s->dims[d];
    }
  }
  return o;
}

static tf_shape ref_shape(const tf_shape *s, uint32_t mask, bool keep,
                          int64_t *count) {
  tf_shape out = {.rank = 0};
  *count = 1;
  for (int d = 0; d < s->rank; d++) {
    if ((mask >> d) & 1) {
      *count *= s->dims[d];
      if (keep) {
        out.dims[out.rank++] = 1;
      }
    } else {
      out.dims[out.rank++] = s->dims[d];
    }
  }
  return out;
}

static double fmax_nan(double a, double b) {
  return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
}
static double fmin_nan(double a, double b) {
  return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
}

static tf_tensor *ref_float(const char *op, const tf_tensor *x, uint32_t mask,
                            bool keep) {
  int64_t count;
  tf_shape os = ref_shape(&x->shape, mask, keep, &count);
  int64_t n = tf_shape_num_elements(&os);
  double *acc = calloc((size_t)(n ? n : 1), sizeof(double));
  double init = !strcmp(op, "Prod")  ? 1.0
                : !strcmp(op, "Max") ? -INFINITY
                : !strcmp(op, "Min") ? INFINITY
                                     : 0.0;
  for (int64_t o = 0; o < n; o++) {
    acc[o] = init;
  }
  for (int64_t i = 0; i < x->n; i++) {
    int64_t o = out_index(&x->shape, mask, i);
    double v = tf_tensor_get_f64(x, i);
    if (!strcmp(op, "Prod")) {
      acc[o] *= v;
    } else if (!strcmp(op, "Max")) {
      acc[o] = fmax_nan(acc[o], v);
    } else if (!strcmp(op, "Min")) {
      acc[o] = fmin_nan(acc[o], v);
    } else {
      acc[o] += v;
    }
  }
  if (!strcmp(op, "Mean")) {
    for (int64_t o = 0; o < n; o++) {
      acc[o] = count ? acc[o] / (double)count : NAN;
    }
  }
  tf_tensor *r = tt_tensor(x->dtype, os, acc);
  free(acc);
  return r;
}

/* Integers: sums and products wrap modulo 2^bits, Mean truncates. */
static tf_tensor *ref_int(const char *op, const tf_tensor *x, uint32_t mask,
                          bool keep) {
  int64_t count;
  tf_shape os = ref_shape(&x->shape, mask, keep, &count);
  int64_t n = tf_shape_num_elements(&os);
  bool i32 = x->dtype == TF_INT32;
  uint64_t *acc = calloc((size_t)(n ? n : 1), sizeof(uint64_t));
  int64_t *out = calloc((size_t)(n ? n : 1), sizeof(int64_t));
  bool is_max = !strcmp(op, "Max"), is_min = !strcmp(op, "Min");
  int64_t lo = i32 ? INT32_MIN : INT64_MIN, hi = i32 ? INT32_MAX : INT64_MAX;
  for (int64_t o = 0; o < n; o++) {
    acc[o] = !strcmp(op, "Prod") ? 1 : 0;
    out[o] = is_max ? lo : hi;
  }
  for (int64_t i = 0; i < x->n; i++) {
    int64_t o = out_index(&x->shape, mask, i), v = tf_tensor_get_i64(x, i);
    if (is_max) {
      out[o] = v > out[o] ? v : out[o];
    } else if (is_min) {
      out[o] = v < out[o] ? v : out[o];
    } else if (!strcmp(op, "Prod")) {
      acc[o] *= (uint64_t)v;
    } else {
      acc[o] += (uint64_t)v;
    }
  }
  for (int64_t o = 0; !is_max && !is_min && o < n; o++) {
    int64_t w = i32 ? (int64_t)(int32_t)(uint32_t)acc[o] : (int64_t)acc[o];
    if (!strcmp(op, "Mean")) {
      w = count ? w / count : 0;
    }
    out[o] = w;
  }
  tf_tensor *r = tt_tensor_i(x->dtype, os, out);
  free(acc);
  free(out);
  return r;
}

static tf_tensor *ref_reduce(const char *op, const tf_tensor *x,
                             uint32_t mask, bool keep) {
  return tf_dtype_is_float(x->dtype) ? ref_float(op, x, mask, keep)
                                     : ref_int(op, x, mask, keep);
}

static void check_against_ref(const char *op, tf_tensor *x, tf_tensor *axes,
                              uint32_t mask, bool keep) {
  tf_tensor *got = reduce(op, x, axes, keep);
  tf_tensor *want = ref_reduce(op, x, mask, keep);
  bool f32 = x->dtype == TF_FLOAT32, sum = strcmp(op, "Sum") == 0 ||
                                           strcmp(op, "Mean") == 0 ||
                                           strcmp(op, "Prod") == 0;
  double atol = !sum ? 0 : f32 ? 1e-9 : 1e-12;
  double rtol = !sum ? 0 : f32 ? 1.2e-7 : 1e-13;
  tt_assert_close(got, want, atol, rtol);
  tf_tensor_unref(got);
  tf_tensor_unref(want);
}

/* ---- hand-worked cases -------------------------------------------------- */

START_TEST(test_small_2x3) {
  double v[] = {1, 2, 3, 4, 5, 6};
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2, 3), v);
  struct {
    const char *op;
    int64_t axis;
    double want[3];
  } cases[] = {
      {"Sum", 0, {5, 7, 9}},      {"Sum", 1, {6, 15}},
      {"Sum", -1, {6, 15}},       {"Mean", 0, {2.5, 3.5, 4.5}},
      {"Mean", 1, {2, 5}},        {"Max", 0, {4, 5, 6}},
      {"Min", 1, {1, 4}},         {"Prod", 0, {4, 10, 18}},
      {"Prod", -2, {4, 10, 18}},  {"Prod", 1, {6, 120}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *axis = tf_tensor_scalar_i32((int32_t)cases[c].axis);
    tf_tensor *y = reduce(cases[c].op, x, axis, false);
    int64_t n = cases[c].axis == 0 || cases[c].axis == -2 ? 3 : 2;
    tf_tensor *want = tt_tensor(TF_FLOAT32, SHAPE(n), cases[c].want);
    tt_assert_close(y, want, 0, 0);
    tt_free((tf_tensor *[]){y, want, axis}, 3);
  }
  int64_t both[] = {1, 0};
  tf_tensor *y = reduce_v("Sum", x, 2, both, false);
  assert_shape_is(y, tf_shape_scalar());
  ck_assert_float_eq(((float *)y->data)[0], 21.0f);
  tf_tensor_unref(y);
  y = reduce_v("Max", x, 2, both, true);
  assert_shape_is(y, SHAPE(1, 1));
  ck_assert_float_eq(((float *)y->data)[0], 6.0f);
  tf_tensor_unref(y);
  y = reduce_v("Mean", x, 1, (int64_t[]){1}, true);
  assert_shape_is(y, SHAPE(2, 1));
  ck_assert_float_eq(((float *)y->data)[1], 5.0f);
  tt_free((tf_tensor *[]){y, x}, 2);
}
END_TEST

/* No axes, or only size-1 axes: the output is the input (shared buffer). */
START_TEST(test_identity_reductions) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 1, 3), -1, 1);
  for (size_t k = 0; k < 5; k++) {
    tf_tensor *y = reduce_v(red_ops[k], x, 0, NULL, false);
    ck_assert_ptr_eq(y->data, x->data);
    tt_assert_close(y, x, 0, 0);
    tf_tensor_unref(y);
    y = reduce_v(red_ops[k], x, 1, (int64_t[]){1}, false);
    assert_shape_is(y, SHAPE(2, 3));
    ck_assert_ptr_eq(y->data, x->data);
    tf_tensor_unref(y);
  }
  tf_tensor *s = tf_tensor_scalar_f64(2.5);
  tf_tensor *y = reduce_v("Mean", s, 0, NULL, true);
  assert_shape_is(y, tf_shape_scalar());
  ck_assert_double_eq(((double *)y->data)[0], 2.5);
  tt_free((tf_tensor *[]){y, s, x}, 3);
}
END_TEST

/* Reducing over no elements gives each op's identity, as in TF. */
START_TEST(test_empty_reduced_dims) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(0, 3), -1, 1);
  double want[5] = {0, NAN, -INFINITY, INFINITY, 1};
  for (int k = 0; k < 5; k++) {
    tf_tensor *y = reduce_v(red_ops[k], x, 1, (int64_t[]){0}, false);
    assert_shape_is(y, SHAPE(3));
    for (int j = 0; j < 3; j++) {
      double g = ((float *)y->data)[j];
      ck_assert_msg(isnan(want[k]) ? isnan(g) : g == want[k],
                    "%s over empty dim: got %g", red_ops[k], g);
    }
    tf_tensor_unref(y);
  }
  tf_tensor *xi = tt_rand(TF_INT32, SHAPE(2, 0), -5, 5);
  int64_t want_i[5] = {0, 0, INT32_MIN, INT32_MAX, 1};
  for (int k = 0; k < 5; k++) {
    tf_tensor *y = reduce_v(red_ops[k], xi, 1, (int64_t[]){-1}, true);
    assert_shape_is(y, SHAPE(2, 1));
    ck_assert_int_eq(((int32_t *)y->data)[1], want_i[k]);
    tf_tensor_unref(y);
  }
  /* Empty output: nothing to compute. */
  tf_tensor *y = reduce_v("Sum", xi, 1, (int64_t[]){1}, false);
  assert_shape_is(y, SHAPE(2));
  tf_tensor_unref(y);
  y = reduce_v("Max", x, 1, (int64_t[]){1}, false);
  assert_shape_is(y, SHAPE(0));
  tt_free((tf_tensor *[]){y, x, xi}, 3);
}
END_TEST

START_TEST(test_nan_propagates_in_max_min) {
  double v[] = {1, NAN, 3, -2, 5, 0};
  tf_tensor *x = tt_tensor(TF_FLOAT64, SHAPE(2, 3), v);
  tf_tensor *mx = reduce_v("Max", x, 1, (int64_t[]){1}, false);
  tf_tensor *mn = reduce_v("Min", x, 1, (int64_t[]){0}, false);
  ck_assert(isnan(((double *)mx->data)[0]));
  ck_assert_double_eq(((double *)mx->data)[1], 5);
  ck_assert_double_eq(((double *)mn->data)[0], -2);
  ck_assert(isnan(((double *)mn->data)[1]));
  tt_free((tf_tensor *[]){mx, mn, x}, 3);
}
END_TEST

/* NaN inside the eight-lane part of a row and in its tail, for both
 * float widths: Max/Min give NaN, ArgMax/ArgMin the first NaN. */
START_TEST(test_nan_in_long_rows) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  int64_t where[] = {13, 35, 2};
  for (int k = 0; k < 2; k++) {
    for (int w = 0; w < 3; w++) {
      tf_tensor *x = tt_rand(dts[k], SHAPE(2, 37), -1, 1);
      double *v = calloc(74, sizeof(double));
      for (int i = 0; i < 74; i++) {
        v[i] = tf_tensor_get_f64(x, i);
      }
      v[37 + where[w]] = NAN;
      v[37 + 36] = NAN; /* a later NaN must not win ArgMax */
      tf_tensor_unref(x);
      x = tt_tensor(dts[k], SHAPE(2, 37), v);
      free(v);
      tf_tensor *mx = reduce_v("Max", x, 1, (int64_t[]){1}, false);
      tf_tensor *mn = reduce_v("Min", x, 1, (int64_t[]){-1}, false);
      ck_assert(!isnan(tf_tensor_get_f64(mx, 0)));
      ck_assert(isnan(tf_tensor_get_f64(mx, 1)));
      ck_assert(isnan(tf_tensor_get_f64(mn, 1)));
      tf_tensor *d = tf_tensor_scalar_i32(1);
      tf_tensor *in[2] = {x, d};
      tf_tensor *am = tt_run1("ArgMax", in, 2, NULL, 0);
      tf_tensor *an = tt_run1("ArgMin", in, 2, NULL, 0);
      ck_assert_int_eq(((int64_t *)am->data)[1], where[w]);
      ck_assert_int_eq(((int64_t *)an->data)[1], where[w]);
      tt_free((tf_tensor *[]){x, mx, mn, d, am, an}, 6);
    }
  }
}
END_TEST

START_TEST(test_int_wraps_like_tf) {
  int64_t v[] = {INT32_MAX, 1, INT32_MIN, -1, 65536, 65536};
  tf_tensor *x = tt_tensor_i(TF_INT32, SHAPE(3, 2), v);
  tf_tensor *s = reduce_v("Sum", x, 1, (int64_t[]){1}, false);
  tf_tensor *p = reduce_v("Prod", x, 1, (int64_t[]){1}, false);
  tf_tensor *m = reduce_v("Mean", x, 1, (int64_t[]){1}, false);
  int32_t *sv = s->data, *pv = p->data, *mv = m->data;
  ck_assert_int_eq(sv[0], INT32_MIN); /* INT32_MAX + 1 wraps */
  ck_assert_int_eq(sv[1], INT32_MAX);
  ck_assert_int_eq(pv[2], 0);         /* 2^32 wraps to 0 */
  ck_assert_int_eq(mv[0], INT32_MIN / 2);
  ck_assert_int_eq(mv[2], 65536);
  tt_free((tf_tensor *[]){s, p, m, x}, 4);
}
END_TEST

/* ---- random shapes against the reference -------------------------------- */

static tf_shape rand_shape(int max_rank, int max_dim) {
  tf_shape s = {.rank = (int)(tt_rand_u64() % (uint64_t)(max_rank + 1))};
  for (int d = 0; d < s.rank; d++) {
    s.dims[d] = tt_rand_u64() % 10 == 0
                    ? 0
                    : 1 + (int64_t)(tt_rand_u64() % (uint64_t)max_dim);
  }
  return s;
}

/* A random axis subset in random order, some written negatively. */
static tf_tensor *rand_axes(int rank, uint32_t *mask) {
  int64_t axes[TF_MAX_RANK];
  int n = 0;
  *mask = 0;
  for (int d = 0; d < rank; d++) {
    if (tt_rand_u64() & 1) {
      *mask |= 1u << d;
      axes[n++] = (tt_rand_u64() & 1) ? d - rank : d;
    }
  }
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(tt_rand_u64() % (uint64_t)(i + 1));
    int64_t t = axes[i];
    axes[i] = axes[j];
    axes[j] = t;
  }
  if (n == 1 && (tt_rand_u64() & 1)) {
    tf_tensor *t = tf_tensor_scalar_i32((int32_t)axes[0]);
    return t;
  }
  if (tt_rand_u64() & 1) {
    int32_t a32[TF_MAX_RANK];
    for (int i = 0; i < n; i++) {
      a32[i] = (int32_t)axes[i];
    }
    return tf_tensor_vec_i32(n, a32);
  }
  return tf_tensor_vec_i64(n, axes);
}

START_TEST(test_random_vs_reference) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int it = 0; it < 300; it++) {
    tf_dtype dt = dts[it % 4];
    const char *op = red_ops[(it / 4) % 5];
    tf_shape s = rand_shape(5, 6);
    double lo = -3, hi = 3;
    if (!strcmp(op, "Prod") && tf_dtype_is_float(dt)) {
      lo = 0.5;
      hi = 1.5;
    }
    if (dt == TF_INT32 && !strcmp(op, "Sum")) {
      lo = -2147483648.0;
      hi = 2147483647.0; /* exercise wrap-around */
    }
    tf_tensor *x = tt_rand(dt, s, lo, hi);
    uint32_t mask;
    tf_tensor *axes = rand_axes(s.rank, &mask);
    check_against_ref(op, x, axes, mask, (tt_rand_u64() & 1) != 0);
    tt_free((tf_tensor *[]){x, axes}, 2);
  }
}
END_TEST

/* Shapes chosen to take each schedule: rows (last dim reduced), columns
 * (last dim kept), split reduced range, many outputs in parallel. */
START_TEST(test_large_paths) {
  struct {
    tf_shape s;
    uint32_t mask;
  } cases[] = {
      {SHAPE(1 << 18), 1},           /* split full reduction */
      {SHAPE(1024, 200), 1},         /* leading axis, split over rows */
      {SHAPE(1024, 200), 2},         /* last axis, outputs in parallel */
      {SHAPE(3, 50000), 2},          /* few long rows: split inside rows */
      {SHAPE(64, 50, 40), 5},        /* outer and inner reduced */
      {SHAPE(64, 50, 40), 2},        /* middle reduced */
      {SHAPE(6, 8000, 3), 2},        /* middle reduced, tiny rows */
      {SHAPE(20, 3, 30, 4, 25), 10}, /* K R K R K */
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    int64_t axes[TF_MAX_RANK];
    int n = 0;
    for (int d = 0; d < cases[c].s.rank; d++) {
      if ((cases[c].mask >> d) & 1) {
        axes[n++] = d;
      }
    }
    tf_tensor *a = tf_tensor_vec_i64(n, axes);
    tf_tensor *x = tt_rand(TF_FLOAT32, cases[c].s, 0, 1);
    check_against_ref(c % 2 ? "Mean" : "Sum", x, a, cases[c].mask, false);
    check_against_ref("Max", x, a, cases[c].mask, true);
    tf_tensor *xi = tt_rand(TF_INT64, cases[c].s, -1000, 1000);
    check_against_ref("Sum", xi, a, cases[c].mask, false);
    check_against_ref("Min", xi, a, cases[c].mask, false);
    tt_free((tf_tensor *[]){a, x, xi}, 3);
  }
}
END_TEST

/* Sum of 2^20 floats in [0, 1): a float32 accumulator would be off by
 * ~1e-5 relative; ours must be within one float32 rounding. */
START_TEST(test_float32_sum_accuracy) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(1 << 20), 0, 1);
  tf_tensor *y = reduce_v("Sum", x, 1, (int64_t[]){0}, false);
  double want = 0;
  for (int64_t i = 0; i < x->n; i++) {
    want += ((float *)x->data)[i];
  }
  double got = ((float *)y->data)[0];
  ck_assert_msg(fabs(got - want) <= 1.2e-7 * want, "got %.9g want %.9g", got,
                want);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

START_TEST(test_numpy_random_axes) {
  static const char *const np_ops[] = {"sum", "mean", "max", "min", "prod"};
  for (int it = 0; it < 8; it++) {
    int k = it % 5;
    tf_shape s = rand_shape(4, 5);
    tf_tensor *x = tt_rand(TF_FLOAT64, s, 0.5, 1.5);
    uint32_t mask;
    tf_tensor *axes = rand_axes(s.rank, &mask);
    bool keep = it & 1;
    char script[256];
    snprintf(script, sizeof(script),
             "ax = tuple(int(a) for a in np.atleast_1d(ins[1]))\n"
             "with np.errstate(all='ignore'):\n"
             "  outs = [np.asarray(np.%s(ins[0], axis=ax, keepdims=%s))]",
             np_ops[k], keep ? "True" : "False");
    tf_tensor *want[1] = {0};
    tf_tensor *in[2] = {x, axes};
    bool skip = false;
    if (s.rank > 0 && (k == 2 || k == 3)) {
      for (int d = 0; d < s.rank; d++) {
        skip = skip || (((mask >> d) & 1) && s.dims[d] == 0);
      }
    }
    if (!skip && tt_numpy(script, in, 2, want, 1) == 1) {
      tf_tensor *got = reduce(red_ops[k], x, axes, keep);
      tt_assert_close(got, want[0], 1e-12, 1e-13);
      tt_free((tf_tensor *[]){got, want[0]}, 2);
    }
    tt_free((tf_tensor *[]){x, axes}, 2);
  }
}
END_TEST

START_TEST(test_bad_axes) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *a = tf_tensor_vec_i64(1, (int64_t[]){2});
  tf_tensor *in[2] = {x, a};
  const char *msg = tt_run_fail("Sum", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Invalid reduction dimension (2 for input with 2"),
                "%s", msg);
  tf_tensor_unref(a);
  a = tf_tensor_vec_i64(2, (int64_t[]){1, -1});
  in[1] = a;
  msg = tt_run_fail("Max", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "duplicate dimension: 1"), "%s", msg);
  tf_tensor_unref(a);
  a = tt_tensor_i(TF_INT32, SHAPE(1, 1), (int64_t[]){0});
  in[1] = a;
  msg = tt_run_fail("Mean", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "reduction_indices must be a scalar or vector"),
                "%s", msg);
  tf_tensor_unref(a);
  a = tf_tensor_scalar_i32(-3);
  in[1] = a;
  msg = tt_run_fail("Prod", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "-3"), "%s", msg);
  tf_tensor *s = tf_tensor_scalar_f32(1);
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  in[0] = s;
  in[1] = zero;
  msg = tt_run_fail("Sum", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "0 dimension(s)"), "%s", msg);
  tf_tensor *b = tt_rand(TF_BOOL, SHAPE(2), 0, 1);
  in[0] = b;
  tt_run_fail("Sum", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  tt_free((tf_tensor *[]){x, a, s, zero, b}, 5);
}
END_TEST

/* ---- ArgMax / ArgMin ---------------------------------------------------- */

static tf_tensor *arg(const char *op, tf_tensor *x, int64_t dim,
                      tf_dtype out_type) {
  tf_tensor *d = tf_tensor_scalar_i64(dim);
  tf_tensor *in[2] = {x, d};
  tf_attr_kv kv[] = {{"output_type", tf_attr_type_v(out_type)}};
  tf_tensor *y = tt_run1(op, in, 2, kv, 1);
  tf_tensor_unref(d);
  return y;
}

/* Reference: first index of the extreme; the first NaN wins (NumPy). */
static tf_tensor *ref_arg(bool is_max, const tf_tensor *x, int axis) {
  int64_t outer = 1, inner = 1, d = x->shape.dims[axis];
  tf_shape os = {.rank = 0};
  for (int k = 0; k < x->shape.rank; k++) {
    if (k != axis) {
      os.dims[os.rank++] = x->shape.dims[k];
      *(k < axis ? &outer : &inner) *= x->shape.dims[k];
    }
  }
  int64_t *idx = calloc((size_t)(outer * inner + 1), sizeof(int64_t));
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < inner; j++) {
      int64_t best = 0;
      for (int64_t r = 0; r < d; r++) {
        double v = tf_tensor_get_f64(x, (o * d + r) * inner + j);
        double b = tf_tensor_get_f64(x, (o * d + best) * inner + j);
        if (isnan(b)) {
          break;
        }
        if (isnan(v) || (is_max ? v > b : v < b)) {
          best = r;
        }
      }
      idx[o * inner + j] = best;
    }
  }
  tf_tensor *r = tt_tensor_i(TF_INT64, os, idx);
  free(idx);
  return r;
}

START_TEST(test_arg_small) {
  double v[] = {1, 7, 7, 0, -2, 9, 9, -2};
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2, 4), v);
  tf_tensor *a = arg("ArgMax", x, 1, TF_INT64);
  ck_assert_int_eq(a->dtype, TF_INT64);
  ck_assert_int_eq(((int64_t *)a->data)[0], 1); /* tie: first */
  ck_assert_int_eq(((int64_t *)a->data)[1], 1);
  tf_tensor *b = arg("ArgMin", x, -1, TF_INT32);
  ck_assert_int_eq(b->dtype, TF_INT32);
  ck_assert_int_eq(((int32_t *)b->data)[0], 3);
  ck_assert_int_eq(((int32_t *)b->data)[1], 0);
  tf_tensor *c = arg("ArgMax", x, 0, TF_INT64);
  int64_t want[] = {0, 1, 1, 0};
  for (int j = 0; j < 4; j++) {
    ck_assert_int_eq(((int64_t *)c->data)[j], want[j]);
  }
  tt_free((tf_tensor *[]){a, b, c, x}, 4);
  double w[] = {1, NAN, 5, NAN};
  x = tt_tensor(TF_FLOAT64, SHAPE(4), w);
  a = arg("ArgMax", x, 0, TF_INT64);
  b = arg("ArgMin", x, 0, TF_INT64);
  ck_assert_int_eq(((int64_t *)a->data)[0], 1);
  ck_assert_int_eq(((int64_t *)b->data)[0], 1);
  tt_free((tf_tensor *[]){a, b, x}, 3);
}
END_TEST

START_TEST(test_arg_random_vs_reference) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int it = 0; it < 200; it++) {
    tf_shape s = rand_shape(4, 6);
    if (s.rank == 0) {
      continue;
    }
    int axis = (int)(tt_rand_u64() % (uint64_t)s.rank);
    if (s.dims[axis] == 0) {
      s.dims[axis] = 3;
    }
    /* Few distinct values (also for floats), so ties are common. */
    tf_tensor *r = tt_rand(TF_INT32, s, -3, 3);
    double *v = malloc((size_t)(r->n + 1) * sizeof(double));
    for (int64_t i = 0; i < r->n; i++) {
      v[i] = tf_tensor_get_f64(r, i);
    }
    tf_tensor *x = tt_tensor(dts[it % 4], s, v);
    free(v);
    tf_tensor_unref(r);
    bool is_max = it & 1;
    tf_tensor *got = arg(is_max ? "ArgMax" : "ArgMin", x,
                         (it & 2) ? axis - s.rank : axis, TF_INT64);
    tf_tensor *want = ref_arg(is_max, x, axis);
    tt_assert_close(got, want, 0, 0);
    tt_free((tf_tensor *[]){x, got, want}, 3);
  }
}
END_TEST

START_TEST(test_arg_large_paths) {
  tf_shape shapes[] = {SHAPE(1 << 18), SHAPE(5, 60000), SHAPE(100, 7, 300),
                       SHAPE(3000, 40)};
  int axes[] = {0, 1, 1, 0};
  for (int c = 0; c < 4; c++) {
    tf_tensor *x = tt_rand(TF_INT32, shapes[c], -1000000, 1000000);
    for (int k = 0; k < 2; k++) {
      tf_tensor *got = arg(k ? "ArgMax" : "ArgMin", x, axes[c], TF_INT64);
      tf_tensor *want = ref_arg(k, x, axes[c]);
      tt_assert_close(got, want, 0, 0);
      tt_free((tf_tensor *[]){got, want}, 2);
    }
    tf_tensor_unref(x);
  }
}
END_TEST

START_TEST(test_arg_numpy) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(4, 5, 6), -1, 1);
  tf_tensor *want[3] = {0};
  if (tt_numpy("outs = [np.argmax(ins[0], 0), np.argmin(ins[0], 1), "
               "np.argmax(ins[0], 2)]",
               (tf_tensor *[]){x}, 1, want, 3) == 3) {
    tf_tensor *g0 = arg("ArgMax", x, 0, TF_INT64);
    tf_tensor *g1 = arg("ArgMin", x, 1, TF_INT64);
    tf_tensor *g2 = arg("ArgMax", x, -1, TF_INT64);
    tt_assert_close(g0, want[0], 0, 0);
    tt_assert_close(g1, want[1], 0, 0);
    tt_assert_close(g2, want[2], 0, 0);
    tt_free((tf_tensor *[]){g0, g1, g2, want[0], want[1], want[2]}, 6);
  }
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_arg_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 0), -1, 1);
  tf_tensor *d = tf_tensor_scalar_i32(1);
  tf_tensor *in[2] = {x, d};
  const char *msg = tt_run_fail("ArgMax", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Reduction axis 1 is empty in shape [2,0]"), "%s",
                msg);
  tf_tensor_unref(d);
  d = tf_tensor_scalar_i32(2);
  in[1] = d;
  msg = tt_run_fail("ArgMin", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "dimension in the range [-2, 2), but got 2"), "%s",
                msg);
  tf_tensor *v = tf_tensor_vec_i32(1, (int32_t[]){0});
  in[1] = v;
  msg = tt_run_fail("ArgMax", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "dimension must be a scalar"), "%s", msg);
  tf_tensor *s = tf_tensor_scalar_f32(1);
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  in[0] = s;
  in[1] = zero;
  tt_run_fail("ArgMax", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  tt_free((tf_tensor *[]){x, d, v, s, zero}, 5);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_reduction");
  TCase *tc = tcase_create("reduce");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_small_2x3);
  tcase_add_test(tc, test_identity_reductions);
  tcase_add_test(tc, test_empty_reduced_dims);
  tcase_add_test(tc, test_nan_propagates_in_max_min);
  tcase_add_test(tc, test_nan_in_long_rows);
  tcase_add_test(tc, test_int_wraps_like_tf);
  tcase_add_test(tc, test_random_vs_reference);
  tcase_add_test(tc, test_large_paths);
  tcase_add_test(tc, test_float32_sum_accuracy);
  tcase_add_test(tc, test_numpy_random_axes);
  tcase_add_test(tc, test_bad_axes);
  suite_add_tcase(s, tc);
  TCase *ta = tcase_create("arg");
  tcase_set_timeout(ta, 60);
  tcase_add_test(ta, test_arg_small);
  tcase_add_test(ta, test_arg_random_vs_reference);
  tcase_add_test(ta, test_arg_large_paths);
  tcase_add_test(ta, test_arg_numpy);
  tcase_add_test(ta, test_arg_errors);
  suite_add_tcase(s, ta);
  return s;
}
