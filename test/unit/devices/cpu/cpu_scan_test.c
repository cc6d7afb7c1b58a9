/* cpu_scan_test.c: the CPU Cumsum and Cumprod kernels (cpu_scan.c)
 * against hand-worked cases and a plain float64 reference written here
 * (index arithmetic per output element, summing or multiplying the
 * elements before it along the axis), on random shapes (rank 1..4, dims
 * including 0 and 1, inner dims longer than one column block), every axis
 * given positively and negatively as int32 or int64, and all four
 * exclusive/reverse combinations; plus integer wrap-around (exact, modulo
 * 2^bits as TF) and the axis errors.
 *
 * Tolerances: float64 atol 1e-12, rtol 1e-12; float32 atol 1e-6, rtol
 * 2.4e-7 (the kernel accumulates in float64 and rounds each output once,
 * so it is within one float32 rounding of the reference plus the small
 * absolute slack for sums that cancel near 0); integers exact. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_tensor *scan(const char *op, tf_tensor *x, tf_tensor *axis,
                       bool exclusive, bool reverse) {
  tf_tensor *in[2] = {x, axis};
  tf_attr_kv kv[] = {{"exclusive", tf_attr_bool(exclusive)},
                     {"reverse", tf_attr_bool(reverse)}};
  return tt_run1(op, in, 2, kv, 2);
}

/* Reference: output (o, i, n) folds x(o, k, n) for k before i (after i
 * when reverse), including i unless exclusive. Integers wrap: the fold
 * runs in uint64 and is truncated to the type. */
static tf_tensor *ref(bool prod, const tf_tensor *x, int axis, bool excl,
                      bool rev) {
  const tf_shape *s = &x->shape;
  int64_t outer = 1, inner = 1, d = s->dims[axis];
  for (int k = 0; k < s->rank; k++) {
    if (k != axis) {
      *(k < axis ? &outer : &inner) *= s->dims[k];
    }
  }
  bool is_int = !tf_dtype_is_float(x->dtype);
  double *out = malloc((size_t)(x->n ? x->n : 1) * sizeof(double));
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < d; i++) {
      for (int64_t n = 0; n < inner; n++) {
        double acc = prod ? 1 : 0;
        uint64_t iacc = prod ? 1 : 0;
        for (int64_t k = 0; k < d; k++) {
          bool in = rev ? (excl ? k > i : k >= i) : (excl ? k < i : k <= i);
          if (!in) {
            continue;
          }
          int64_t idx = (o * d + k) * inner + n;
          double v = tf_tensor_get_f64(x, idx);
          uint64_t iv = (uint64_t)tf_tensor_get_i64(x, idx);
          acc = prod ? acc * v : acc + v;
          iacc = prod ? iacc * iv : iacc + iv;
        }
        if (is_int) {
          acc = x->dtype == TF_INT32 ? (double)(int32_t)(uint32_t)iacc
                                     : (double)(int64_t)iacc;
        }
        out[(o * d + i) * inner + n] = acc;
      }
    }
  }
  tf_tensor *t = tt_tensor(x->dtype, *s, out);
  free(out);
  return t;
}

START_TEST(test_small) {
  tf_tensor *x = tt_tensor(TF_FLOAT64, SHAPE(2, 3),
                           (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *a = tf_tensor_scalar_i32(1);
  struct {
    const char *op;
    bool excl, rev;
    double want[6];
  } cases[] = {
      {"Cumsum", false, false, {1, 3, 6, 4, 9, 15}},
      {"Cumsum", true, false, {0, 1, 3, 0, 4, 9}},
      {"Cumsum", false, true, {6, 5, 3, 15, 11, 6}},
      {"Cumsum", true, true, {5, 3, 0, 11, 6, 0}},
      {"Cumprod", false, false, {1, 2, 6, 4, 20, 120}},
      {"Cumprod", true, false, {1, 1, 2, 1, 4, 20}},
      {"Cumprod", false, true, {6, 6, 3, 120, 30, 6}},
      {"Cumprod", true, true, {6, 3, 1, 30, 6, 1}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *y = scan(cases[c].op, x, a, cases[c].excl, cases[c].rev);
    tf_tensor *w = tt_tensor(TF_FLOAT64, SHAPE(2, 3), cases[c].want);
    tt_assert_close(y, w, 0, 0);
    tt_free((tf_tensor *[]){y, w}, 2);
  }
  tf_tensor_unref(a);
  a = tf_tensor_scalar_i64(-2); /* axis 0 */
  tf_tensor *y = scan("Cumsum", x, a, false, false);
  tf_tensor *w = tt_tensor(TF_FLOAT64, SHAPE(2, 3),
                           (double[]){1, 2, 3, 5, 7, 9});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a, x}, 4);
}
END_TEST

START_TEST(test_random_vs_reference) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  tt_rng_reseed(tt_seed() ^ 0x5ca7);
  for (int it = 0; it < 240; it++) {
    tf_dtype dt = dts[it % 4];
    bool prod = (it / 4) % 2;
    tf_shape s = {.rank = 1 + (int)(tt_rand_u64() % 4)};
    for (int k = 0; k < s.rank; k++) {
      s.dims[k] = tt_rand_u64() % 10 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 5);
    }
    if (it % 17 == 0) { /* inner dims spanning several column blocks */
      s = SHAPE(3, 4, 300);
    }
    double lo = prod ? 0.5 : -3, hi = prod ? 1.5 : 3;
    if (dt == TF_INT32 && !prod) {
      lo = -2147483648.0; /* wrap-around */
      hi = 2147483647.0;
    }
    tf_tensor *x = tt_rand(dt, s, lo, hi);
    int axis = (int)(tt_rand_u64() % (uint64_t)s.rank);
    int given = (tt_rand_u64() & 1) ? axis - s.rank : axis;
    tf_tensor *a = (it & 1) ? tf_tensor_scalar_i64(given)
                            : tf_tensor_scalar_i32(given);
    for (int f = 0; f < 4; f++) {
      bool excl = f & 1, rev = f & 2;
      tf_tensor *got = scan(prod ? "Cumprod" : "Cumsum", x, a, excl, rev);
      tf_tensor *want = ref(prod, x, axis, excl, rev);
      double atol = dt == TF_FLOAT32 ? 1e-6 : 1e-12;
      double rtol = dt == TF_FLOAT32 ? 2.4e-7 : 1e-12;
      tt_assert_close(got, want, atol, rtol);
      tt_free((tf_tensor *[]){got, want}, 2);
    }
    tt_free((tf_tensor *[]){x, a}, 2);
  }
}
END_TEST

/* Integer products and sums wrap modulo 2^bits. */
START_TEST(test_int_wraps) {
  tf_tensor *x = tt_tensor_i(TF_INT32, SHAPE(3),
                             (int64_t[]){65536, 65536, 3});
  tf_tensor *a = tf_tensor_scalar_i32(0);
  tf_tensor *y = scan("Cumprod", x, a, false, false);
  tf_tensor *w = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){65536, 0, 0});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, x}, 3);
  x = tt_tensor_i(TF_INT64, SHAPE(2), (int64_t[]){INT64_MAX, 1});
  y = scan("Cumsum", x, a, false, false);
  w = tt_tensor_i(TF_INT64, SHAPE(2), (int64_t[]){INT64_MAX, INT64_MIN});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, x, a}, 4);
}
END_TEST

/* NaN and Inf propagate forward (not backward) along the scan. */
START_TEST(test_nan_inf) {
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(4),
                           (double[]){1, NAN, 2, INFINITY});
  tf_tensor *a = tf_tensor_scalar_i32(0);
  tf_tensor *y = scan("Cumsum", x, a, false, false);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(4), (double[]){1, NAN, NAN, NAN});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  y = scan("Cumprod", x, a, true, true);
  w = tt_tensor(TF_FLOAT32, SHAPE(4), (double[]){NAN, 2 * INFINITY, INFINITY, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, x, a}, 4);
}
END_TEST

START_TEST(test_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *a = tf_tensor_scalar_i32(2);
  tf_tensor *in[2] = {x, a};
  const char *msg = tt_run_fail("Cumsum", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Expected scan axis in the range [-2, 2), but "
                            "got 2") && strstr(msg, "(Cumsum)"), "%s", msg);
  tf_tensor_unref(a);
  a = tf_tensor_vec_i32(1, (int32_t[]){0});
  in[1] = a;
  msg = tt_run_fail("Cumprod", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "axis must be a scalar"), "%s", msg);
  tf_tensor_unref(a);
  tf_tensor *s = tf_tensor_scalar_f32(1); /* rank 0: no axis is valid */
  a = tf_tensor_scalar_i32(0);
  in[0] = s;
  in[1] = a;
  msg = tt_run_fail("Cumsum", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "range [0, 0)"), "%s", msg);
  tt_free((tf_tensor *[]){x, a, s}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_scan");
  TCase *tc = tcase_create("scan");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_small);
  tcase_add_test(tc, test_random_vs_reference);
  tcase_add_test(tc, test_int_wraps);
  tcase_add_test(tc, test_nan_inf);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
