/* Tests for the CPU Cast kernel: every (SrcT, DstT) pair of the 14 numeric
 * and bool dtypes on a small tensor of edge values, checked exactly against
 * a reference computed here in long double / int64 (integer wrap-around,
 * float -> int truncation with saturation and NaN -> 0, rounding to
 * nearest even into float32, float16 and bfloat16, complex real parts);
 * Truncate=true; identity casts; empty, rank-0 and large (threaded)
 * tensors; unsupported string casts. All comparisons are exact. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"

/* Check's ck_assert* makes a syscall even when it passes; per-element
 * checks use this, which costs nothing unless it fails. */
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ck_abort_msg(__VA_ARGS__);                                               \
    }                                                                          \
  } while (0)

static const tf_dtype all_types[] = {
    TF_BOOL,   TF_INT8,   TF_INT16,    TF_INT32,   TF_INT64,
    TF_UINT8,  TF_UINT16, TF_UINT32,   TF_UINT64,  TF_BFLOAT16,
    TF_FLOAT16, TF_FLOAT32, TF_FLOAT64, TF_COMPLEX64};
#define N_TYPES ((int)(sizeof(all_types) / sizeof(all_types[0])))

/* ---- element values ---------------------------------------------------- */

enum { K_INT, K_UINT, K_FLOAT, K_COMPLEX };

/* One element: ints as int64/uint64, floats (all widths) as long double,
 * which holds every int64, uint64 and double exactly. */
typedef struct val {
  int kind;
  int64_t i;
  uint64_t u;
  long double re, im;
} val;

static val read_val(const tf_tensor *t, int64_t k) {
  const void *p = (const char *)t->data + (size_t)k * tf_dtype_size(t->dtype);
  val v = {.kind = K_INT};
  switch (t->dtype) {
  case TF_BOOL: v.i = *(const uint8_t *)p != 0; break;
  case TF_INT8: v.i = *(const int8_t *)p; break;
  case TF_INT16: v.i = *(const int16_t *)p; break;
  case TF_INT32: v.i = *(const int32_t *)p; break;
  case TF_INT64: v.i = *(const int64_t *)p; break;
  case TF_UINT8: v.kind = K_UINT; v.u = *(const uint8_t *)p; break;
  case TF_UINT16: v.kind = K_UINT; v.u = *(const uint16_t *)p; break;
  case TF_UINT32: v.kind = K_UINT; v.u = *(const uint32_t *)p; break;
  case TF_UINT64: v.kind = K_UINT; v.u = *(const uint64_t *)p; break;
  case TF_BFLOAT16:
    v.kind = K_FLOAT;
    v.re = tf_bfloat16_to_float(*(const uint16_t *)p);
    break;
  case TF_FLOAT16:
    v.kind = K_FLOAT;
    v.re = tf_float16_to_float(*(const uint16_t *)p);
    break;
  case TF_FLOAT32: v.kind = K_FLOAT; v.re = *(const float *)p; break;
  case TF_FLOAT64: v.kind = K_FLOAT; v.re = *(const double *)p; break;
  case TF_COMPLEX64:
    v.kind = K_COMPLEX;
    v.re = ((const tf_complex64 *)p)->re;
    v.im = ((const tf_complex64 *)p)->im;
    break;
  default: ck_abort_msg("no reader for %s", tf_dtype_name(t->dtype));
  }
  return v;
}

static long double as_ld(val v) {
  return v.kind == K_INT ? (long double)v.i
         : v.kind == K_UINT ? (long double)v.u : v.re;
}

static int int_bits(tf_dtype dt) { return (int)tf_dtype_size(dt) * 8; }

/* Two's complement wrap of an integer into bits (signed or not). */
static val wrap_int(uint64_t x, tf_dtype dst) {
  int b = int_bits(dst);
  uint64_t mask = b == 64 ? ~0ull : (1ull << b) - 1;
  x &= mask;
  if (!tf_dtype_is_signed(dst)) {
    return (val){.kind = K_UINT, .u = x};
  }
  if (b < 64 && (x >> (b - 1)) & 1) {
    x |= ~mask; /* sign-extend */
  }
  int64_t s;
  memcpy(&s, &x, sizeof(s));
  return (val){.kind = K_INT, .i = s};
}

/* Float -> integer: NaN -> 0, truncate toward zero, saturate. */
static val saturate_int(long double x, tf_dtype dst) {
  int b = int_bits(dst);
  bool is_signed = tf_dtype_is_signed(dst);
  if (isnan(x)) {
    return is_signed ? (val){.kind = K_INT} : (val){.kind = K_UINT};
  }
  long double t = truncl(x);
  if (is_signed) {
    long double lim = ldexpl(1, b - 1);
    int64_t max = (int64_t)(lim - 1), min = -max - 1;
    int64_t r = t >= lim ? max : t <= -lim ? min : (int64_t)t;
    return (val){.kind = K_INT, .i = r};
  }
  long double lim = ldexpl(1, b);
  uint64_t max = b == 64 ? ~0ull : (1ull << b) - 1;
  uint64_t r = t >= lim ? max : t <= 0 ? 0 : (uint64_t)t;
  return (val){.kind = K_UINT, .u = r};
}

/* Round to nearest even into a binary format of p significant bits,
 * smallest normal exponent emin and largest emax (the reference for
 * float16: 11, -14, 15; bfloat16: 8, -126, 127). */
static long double round_fmt(long double x, int p, int emin, int emax) {
  if (isnan(x) || isinf(x) || x == 0) {
    return x;
  }
  int e;
  frexpl(fabsl(x), &e);
  int lead = e - 1 < emin ? emin : e - 1;
  long double ulp = ldexpl(1, lead - (p - 1));
  long double r = nearbyintl(fabsl(x) / ulp) * ulp;
  if (r >= ldexpl(1, emax + 1)) {
    r = INFINITY;
  }
  return copysignl(r, x);
}

static val float_val(long double x) { return (val){.kind = K_FLOAT, .re = x}; }

/* The value casting v to dst must give. */
static val expected(val v, tf_dtype dst) {
  bool from_int = v.kind == K_INT || v.kind == K_UINT;
  long double x = as_ld(v);
  switch (dst) {
  case TF_BOOL:
    return (val){.kind = K_INT, .i = x != 0 || (v.kind == K_COMPLEX && v.im != 0)};
  case TF_BFLOAT16: return float_val(round_fmt(x, 8, -126, 127));
  case TF_FLOAT16: return float_val(round_fmt(x, 11, -14, 15));
  case TF_FLOAT32: return float_val((float)x);
  case TF_FLOAT64: return float_val((double)x);
  case TF_COMPLEX64:
    return (val){.kind = K_COMPLEX, .re = (float)x,
                 .im = v.kind == K_COMPLEX ? v.im : 0};
  default:
    if (from_int) {
      return wrap_int(v.kind == K_INT ? (uint64_t)v.i : v.u, dst);
    }
    return saturate_int(x, dst);
  }
}

static bool same_float(long double a, long double b) {
  if (isnan(a) || isnan(b)) {
    return isnan(a) && isnan(b);
  }
  return a == b && !!signbit(a) == !!signbit(b);
}

static bool same_val(val a, val b) {
  if (a.kind != b.kind) {
    return false;
  }
  switch (a.kind) {
  case K_INT: return a.i == b.i;
  case K_UINT: return a.u == b.u;
  case K_FLOAT: return same_float(a.re, b.re);
  default: return same_float(a.re, b.re) && same_float(a.im, b.im);
  }
}

static void val_str(val v, char *buf, size_t n) {
  switch (v.kind) {
  case K_INT: snprintf(buf, n, "%lld", (long long)v.i); break;
  case K_UINT: snprintf(buf, n, "%llu", (unsigned long long)v.u); break;
  case K_FLOAT: snprintf(buf, n, "%.21Lg", v.re); break;
  default: snprintf(buf, n, "(%.12Lg, %.12Lg)", v.re, v.im); break;
  }
}

/* ---- source tensors ---------------------------------------------------- */

static const double float_cases[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, -0.7, 100.9, 127.5,
    128.0, -128.5, -129.0, 255.9, 256.0, 300.0, -300.0, 32767.9, 65504.0,
    65520.0, 70000.0, 2147483647.0, 2147483648.0, -2147483649.0,
    4294967296.0, 1e10, -1e10, 9.3e18, 1.9e19, -9.3e18, 1e30, -1e30, 3e38,
    1e300, 1e-45, 1e-300, 1.0 + 0x1p-11 + 0x1p-20, 1.0 / 3.0, INFINITY,
    -INFINITY, NAN, -NAN};

static const int64_t int_cases[] = {
    0, 1, -1, 2, 7, -5, 100, 127, 128, -128, -129, 200, 255, 256, 1000,
    -1000, 32767, 32768, -32768, 65504, 65519, 65520, 65535, 65536,
    16777217, 2147483647, -2147483647 - 1, 4294967295, 4294967296,
    9007199254740993, 4611686018427400000, INT64_MAX, INT64_MIN,
    /* 2^60 + 2^52 + 1: above a bfloat16 tie by one; through double it
     * would look like the tie itself */
    1157425104234217473, -1157425104234217473};

#define N_FLOAT_CASES ((int64_t)(sizeof(float_cases) / sizeof(float_cases[0])))
#define N_INT_CASES ((int64_t)(sizeof(int_cases) / sizeof(int_cases[0])))

static tf_tensor *new_vec(tf_dtype dt, int64_t n) {
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &s, &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

/* The edge values as dt: floats rounded into it, integers wrapped (C's
 * conversions to unsigned wrap; to signed, GCC wraps too). */
static tf_tensor *source(tf_dtype dt) {
  bool is_float = tf_dtype_is_float(dt) || dt == TF_COMPLEX64;
  int64_t n = dt == TF_BOOL ? 4 : is_float ? N_FLOAT_CASES : N_INT_CASES;
  tf_tensor *t = new_vec(dt, n);
  for (int64_t k = 0; k < n; k++) {
    void *p = (char *)t->data + (size_t)k * tf_dtype_size(dt);
    double f = is_float ? float_cases[k] : 0;
    uint64_t u = is_float ? 0 : (uint64_t)int_cases[k];
    switch (dt) {
    case TF_BOOL: *(uint8_t *)p = (uint8_t)(k == 1 || k == 2); break;
    case TF_INT8: *(int8_t *)p = (int8_t)u; break;
    case TF_INT16: *(int16_t *)p = (int16_t)u; break;
    case TF_INT32: *(int32_t *)p = (int32_t)u; break;
    case TF_INT64: *(int64_t *)p = (int64_t)u; break;
    case TF_UINT8: *(uint8_t *)p = (uint8_t)u; break;
    case TF_UINT16: *(uint16_t *)p = (uint16_t)u; break;
    case TF_UINT32: *(uint32_t *)p = (uint32_t)u; break;
    case TF_UINT64: *(uint64_t *)p = u; break;
    case TF_BFLOAT16: *(uint16_t *)p = tf_float_to_bfloat16((float)f); break;
    case TF_FLOAT16: *(uint16_t *)p = tf_double_to_float16(f); break;
    case TF_FLOAT32: *(float *)p = (float)f; break;
    case TF_FLOAT64: *(double *)p = f; break;
    case TF_COMPLEX64: /* some imaginary parts nonzero, one with re == 0 */
      *(tf_complex64 *)p = (tf_complex64){(float)f, k % 3 == 1 ? 1.5f : 0.0f};
      break;
    default: ck_abort_msg("no source for %s", tf_dtype_name(dt));
    }
  }
  return t;
}

static tf_tensor *cast(tf_tensor *x, tf_dtype dst, bool truncate) {
  tf_attr_kv attrs[] = {{"DstT", tf_attr_type_v(dst)},
                        {"Truncate", tf_attr_bool(truncate)}};
  return tt_run1("Cast", &x, 1, attrs, 2);
}

static void check_cast(tf_tensor *x, tf_tensor *y, tf_dtype dst) {
  ck_assert_int_eq(y->dtype, dst);
  ck_assert(tf_shape_equal(&x->shape, &y->shape));
  for (int64_t k = 0; k < x->n; k++) {
    val in = read_val(x, k), got = read_val(y, k), want = expected(in, dst);
    char a[96], b[96], c[96];
    val_str(in, a, sizeof a);
    val_str(got, b, sizeof b);
    val_str(want, c, sizeof c);
    EXPECT(same_val(got, want), "%s %s -> %s: got %s, want %s",
           tf_dtype_name(x->dtype), a, tf_dtype_name(dst), b, c);
  }
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(test_cast_matrix) {
  for (int s = 0; s < N_TYPES; s++) {
    tf_tensor *x = source(all_types[s]);
    for (int d = 0; d < N_TYPES; d++) {
      tf_tensor *y = cast(x, all_types[d], false);
      check_cast(x, y, all_types[d]);
      tf_tensor_unref(y);
    }
    tf_tensor_unref(x);
  }
}
END_TEST

/* Truncate changes nothing but narrowing float conversions. */
START_TEST(test_cast_matrix_truncate_int_pairs) {
  for (int s = 0; s < N_TYPES; s++) {
    if (tf_dtype_is_float(all_types[s]) || all_types[s] == TF_COMPLEX64) {
      continue;
    }
    tf_tensor *x = source(all_types[s]);
    for (int d = 0; d < N_TYPES; d++) {
      tf_tensor *y = cast(x, all_types[d], true);
      check_cast(x, y, all_types[d]);
      tf_tensor_unref(y);
    }
    tf_tensor_unref(x);
  }
}
END_TEST

/* Truncate=true rounds toward zero where rounding to nearest goes up;
 * NaN and infinities pass. Hand-worked. */
START_TEST(test_cast_truncate) {
  double v[] = {1.0 + 0x1.fep-8, -(1.0 + 0x1.fep-8), 1.0 + 0x1.ff8p-11,
                1.0 + 0x1p-23 - 0x1p-50, 3.0, INFINITY, NAN};
  tf_tensor *x64 = tt_tensor(TF_FLOAT64, tf_shape_of(1, (int64_t)7), v);
  tf_tensor *x32 = tt_tensor(TF_FLOAT32, tf_shape_of(1, (int64_t)7), v);
  tf_tensor *y = cast(x32, TF_BFLOAT16, true);
  const uint16_t *h = y->data;
  ck_assert_uint_eq(h[0], 0x3f80); /* rounding would give 0x3f81 */
  ck_assert_uint_eq(h[1], 0xbf80);
  ck_assert_uint_eq(h[4], 0x4040);
  ck_assert_uint_eq(h[5], 0x7f80);
  ck_assert((h[6] & 0x7fff) > 0x7f80);
  tf_tensor_unref(y);
  y = cast(x32, TF_BFLOAT16, false);
  ck_assert_uint_eq(((uint16_t *)y->data)[0], 0x3f81);
  tf_tensor_unref(y);
  y = cast(x32, TF_FLOAT16, true);
  ck_assert_uint_eq(((uint16_t *)y->data)[2], 0x3c00); /* nearest: 0x3c01 */
  tf_tensor_unref(y);
  y = cast(x64, TF_FLOAT16, true);
  ck_assert_uint_eq(((uint16_t *)y->data)[2], 0x3c00);
  ck_assert_uint_eq(((uint16_t *)y->data)[1], 0xbc07); /* nearest: 0xbc08 */
  tf_tensor_unref(y);
  y = cast(x64, TF_BFLOAT16, true);
  ck_assert_uint_eq(((uint16_t *)y->data)[0], 0x3f80);
  tf_tensor_unref(y);
  y = cast(x64, TF_FLOAT32, true);
  ck_assert(((float *)y->data)[3] == 1.0f); /* nearest: 1 + 2^-23 */
  ck_assert(isnan(((float *)y->data)[6]));
  tf_tensor_unref(y);
  y = cast(x64, TF_FLOAT32, false);
  ck_assert(((float *)y->data)[3] == 1.0f + 0x1p-23f);
  tf_tensor_unref(y);
  y = cast(x64, TF_COMPLEX64, true);
  ck_assert(((tf_complex64 *)y->data)[3].re == 1.0f);
  tf_tensor_unref(y);
  tf_tensor_unref(x32);
  tf_tensor_unref(x64);
}
END_TEST

/* Hand-worked saturation and wrap-around, independent of the reference. */
START_TEST(test_cast_hand_cases) {
  double f[] = {-1.5, 1e20, -1e20, NAN, 255.9, -0.9, 2147483647.9};
  tf_tensor *x = tt_tensor(TF_FLOAT64, tf_shape_of(1, (int64_t)7), f);
  tf_tensor *y = cast(x, TF_INT32, false);
  int32_t w32[] = {-1, INT32_MAX, INT32_MIN, 0, 255, 0, INT32_MAX};
  ck_assert(memcmp(y->data, w32, sizeof w32) == 0);
  tf_tensor_unref(y);
  y = cast(x, TF_UINT8, false);
  uint8_t w8[] = {0, 255, 0, 0, 255, 0, 255};
  ck_assert(memcmp(y->data, w8, sizeof w8) == 0);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
  int64_t iv[] = {300, -1, 128};
  x = tt_tensor_i(TF_INT64, tf_shape_of(1, (int64_t)3), iv);
  y = cast(x, TF_INT8, false);
  int8_t wi8[] = {44, -1, -128};
  ck_assert(memcmp(y->data, wi8, sizeof wi8) == 0);
  tf_tensor_unref(y);
  y = cast(x, TF_UINT16, false);
  uint16_t wu16[] = {300, 65535, 128};
  ck_assert(memcmp(y->data, wu16, sizeof wu16) == 0);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_cast_identity_empty_scalar) {
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, (int64_t)3, (int64_t)4),
                         -5, 5);
  tf_tensor *y = cast(x, TF_FLOAT32, false);
  ck_assert(tf_tensor_equal(x, y));
  tf_tensor_unref(y);
  tf_tensor_unref(x);
  x = tt_rand(TF_FLOAT32, tf_shape_of(2, (int64_t)0, (int64_t)3), 0, 1);
  y = cast(x, TF_INT64, false);
  tt_assert_shape(y, 2, (int64_t)0, (int64_t)3);
  ck_assert_int_eq(y->dtype, TF_INT64);
  tf_tensor_unref(y);
  tf_tensor_unref(x);
  x = tf_tensor_scalar_f64(-7.75);
  y = cast(x, TF_INT16, false);
  ck_assert_int_eq(y->shape.rank, 0);
  ck_assert_int_eq(*(int16_t *)y->data, -7);
  tf_tensor_unref(y);
  y = cast(x, TF_FLOAT16, false);
  ck_assert_uint_eq(*(uint16_t *)y->data, 0xc7c0); /* -7.75 */
  tf_tensor_unref(y);
  tf_tensor_unref(x);
}
END_TEST

/* Big enough to split across the pool: every element still right. */
START_TEST(test_cast_large) {
  const int64_t n = 300007;
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, n), -70000, 70000);
  tf_tensor *y = cast(x, TF_FLOAT16, false);
  const float *xf = x->data;
  const uint16_t *yh = y->data;
  for (int64_t i = 0; i < n; i++) {
    val want = expected(float_val(xf[i]), TF_FLOAT16);
    EXPECT(same_float(tf_float16_to_float(yh[i]), want.re), "element %lld",
           (long long)i);
  }
  tf_tensor_unref(y);
  y = cast(x, TF_INT32, false);
  for (int64_t i = 0; i < n; i++) {
    EXPECT(((int32_t *)y->data)[i] == (int32_t)truncf(xf[i]), "element %lld",
           (long long)i);
  }
  tf_tensor_unref(y);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_cast_string_unsupported) {
  tf_shape s = tf_shape_of(1, (int64_t)1);
  tf_tensor *x;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &x, &st) == TF_OK);
  tf_attr_kv attrs[] = {{"DstT", tf_attr_type_v(TF_FLOAT32)}};
  const char *msg = tt_run_fail("Cast", &x, 1, attrs, 1, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(msg, "string") && strstr(msg, "float32"), "%s", msg);
  tf_tensor_unref(x);
  tf_tensor *f = tf_tensor_scalar_f32(1);
  tf_attr_kv to_str[] = {{"DstT", tf_attr_type_v(TF_STRING)}};
  msg = tt_run_fail("Cast", &f, 1, to_str, 1, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(msg, "float32 to string"), "%s", msg);
  tf_tensor_unref(f);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_cast");
  TCase *tc = tcase_create("cast");
  tcase_add_test(tc, test_cast_matrix);
  tcase_add_test(tc, test_cast_matrix_truncate_int_pairs);
  tcase_add_test(tc, test_cast_truncate);
  tcase_add_test(tc, test_cast_hand_cases);
  tcase_add_test(tc, test_cast_identity_empty_scalar);
  tcase_add_test(tc, test_cast_large);
  tcase_add_test(tc, test_cast_string_unsupported);
  suite_add_tcase(s, tc);
  return s;
}
