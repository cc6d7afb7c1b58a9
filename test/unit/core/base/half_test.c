/* Tests for the 16-bit float conversions (lib/core/base/half.c and the inline
 * versions in lib/core/base/half.h): exhaustive over all 65536 float16 and
 * bfloat16 bit patterns, rounding from float32/float64 against numpy and
 * against a reference written here (nearest neighbour by binary search over
 * a table of exact values built with ldexp), hand-worked ties and edges.
 * All comparisons are bit-exact; no tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/half.h"
#include "test/unit/testutil.h"

/* Check's ck_assert* makes a syscall even when it passes; the loops over
 * every pattern use this, which costs nothing unless it fails. */
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ck_abort_msg(__VA_ARGS__);                                               \
    }                                                                          \
  } while (0)

#define F16_INF 0x7c00u
#define BF16_INF 0x7f80u

/* Value of a float16 pattern from the IEEE definition. */
static double f16_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* Value of a bfloat16 pattern: 8 exponent bits (bias 127), 7 mantissa. */
static double bf16_value(uint16_t h) {
  int e = (h >> 7) & 0xff, m = h & 0x7f;
  double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
  return (h & 0x8000) ? -v : v;
}

/* A format for the reference rounding: vals[i] is the value of the
 * non-negative pattern i for i < inf (the infinity pattern); vals[inf] is
 * the power of two the next finite value would have had, so rounding
 * between the largest finite value and it (ties to the even infinity
 * pattern) gives the right overflow. */
typedef struct fmt {
  double *vals;
  int inf;
} fmt;

static fmt make_fmt(double (*value)(uint16_t), int inf, double next) {
  fmt f = {malloc(sizeof(double) * (size_t)(inf + 1)), inf};
  for (int i = 0; i < inf; i++) {
    f.vals[i] = value((uint16_t)i);
  }
  f.vals[inf] = next;
  return f;
}

/* Round-to-nearest-even of a finite or infinite (not NaN) v. Differences
 * of neighbours are exact in double (Sterbenz), so ties are seen exactly. */
static uint16_t ref_round(const fmt *f, double v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (a >= f->vals[f->inf]) {
    return (uint16_t)(sign | f->inf);
  }
  int lo = 0, hi = f->inf; /* vals[lo] <= a < vals[hi] */
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (f->vals[mid] <= a) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  double dlo = a - f->vals[lo], dhi = f->vals[hi] - a;
  int pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return (uint16_t)(sign | pick);
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7fff) > F16_INF; }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7fff) > BF16_INF; }

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* ---- exhaustive widening and round trips ------------------------------- */

START_TEST(test_f16_exhaustive) {
  float prev = -1.0f;
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = tf_float16_to_float(h);
    uint16_t back = tf_float_to_float16(f);
    if (f16_is_nan(h)) {
      EXPECT(isnan(f), "0x%04x -> %g", h, f);
      /* NaN keeps sign and payload and comes back quiet. */
      EXPECT(back == (h | 0x0200), "NaN 0x%04x -> 0x%04x", h, back);
      EXPECT(!!signbit(f) == !!(h & 0x8000), "NaN sign 0x%04x", h);
      continue;
    }
    double want = f16_value(h);
    if ((h & 0x7fff) == F16_INF) {
      want = (h & 0x8000) ? -INFINITY : INFINITY;
    }
    EXPECT((double)f == want && !!signbit(f) == !!(h & 0x8000),
                  "0x%04x -> %.9g, want %.9g", h, f, want);
    EXPECT(back == h, "round trip 0x%04x -> %g -> 0x%04x", h, f, back);
    EXPECT(tf_double_to_float16(f) == h, "double 0x%04x", h);
    if (h <= F16_INF) { /* non-negative patterns increase in value */
      EXPECT(f > prev || h == 0, "not increasing at 0x%04x", h);
      prev = f;
    }
  }
}
END_TEST

START_TEST(test_bf16_exhaustive) {
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = tf_bfloat16_to_float(h);
    uint16_t back = tf_float_to_bfloat16(f);
    if (bf16_is_nan(h)) {
      EXPECT(isnan(f), "0x%04x -> %g", h, f);
      EXPECT(back == (h | 0x0040), "NaN 0x%04x -> 0x%04x", h, back);
      continue;
    }
    double want = bf16_value(h);
    if ((h & 0x7fff) == BF16_INF) {
      want = (h & 0x8000) ? -INFINITY : INFINITY;
    }
    EXPECT((double)f == want && !!signbit(f) == !!(h & 0x8000),
                  "0x%04x -> %.9g, want %.9g", h, f, want);
    EXPECT(back == h, "round trip 0x%04x -> 0x%04x", h, back);
    EXPECT(tf__f64_to_bf16(f) == h, "double 0x%04x", h);
  }
}
END_TEST

/* numpy's float16 -> float32 over all patterns, bit for bit. */
START_TEST(test_f16_widen_vs_numpy) {
  tf_shape s = tf_shape_of(1, (int64_t)65536);
  tf_tensor *in;
  tf_status st;
  ck_assert(tf_tensor_new(TF_UINT16, &s, &in, &st) == TF_OK);
  uint16_t *p = in->data;
  for (uint32_t i = 0; i < 65536; i++) {
    p[i] = (uint16_t)i;
  }
  tf_tensor *out[1];
  int n = tt_numpy("outs = [ins[0].view(np.float16).astype(np.float32)]",
                   &in, 1, out, 1);
  if (n < 0) {
    tf_tensor_unref(in);
    return;
  }
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(out[0]->dtype, TF_FLOAT32);
  const float *want = out[0]->data;
  for (uint32_t i = 0; i < 65536; i++) {
    float got = tf_float16_to_float((uint16_t)i);
    if (isnan(want[i])) {
      EXPECT(isnan(got), "0x%04x: want NaN", i);
    } else {
      EXPECT(memcmp(&got, &want[i], 4) == 0, "0x%04x: %g vs numpy %g",
                    i, got, want[i]);
    }
  }
  tf_tensor_unref(out[0]);
  tf_tensor_unref(in);
}
END_TEST

/* ---- hand-worked cases ------------------------------------------------- */

START_TEST(test_f16_cases) {
  struct { float in; uint16_t want; } c[] = {
      {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000},
      {65504.0f, 0x7bff}, {65519.99f, 0x7bff}, {65520.0f, 0x7c00},
      {1e10f, 0x7c00}, {-1e10f, 0xfc00}, {INFINITY, 0x7c00},
      {-INFINITY, 0xfc00}, {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000},
      {-0x1p-25f, 0x8000}, {0x1.0002p-25f, 0x0001}, {0x3p-25f, 0x0002},
      {0x1p-14f, 0x0400}, {0x1.ffcp-15f, 0x0400}, {0x1.ff4p-15f, 0x03fe},
      {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02},
      {1.0f + 0x1.02p-11f, 0x3c01}, {0x1p-30f, 0x0000},
  };
  for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
    ck_assert_msg(tf_float_to_float16(c[i].in) == c[i].want,
                  "%a -> 0x%04x, want 0x%04x", (double)c[i].in,
                  tf_float_to_float16(c[i].in), c[i].want);
    ck_assert_msg(tf_double_to_float16(c[i].in) == c[i].want, "double %a",
                  (double)c[i].in);
  }
  /* NaNs: quiet, sign and top payload bits kept. */
  ck_assert_uint_eq(tf_float_to_float16(bits_f32(0x7fc00000u)), 0x7e00);
  ck_assert_uint_eq(tf_float_to_float16(bits_f32(0xffc00000u)), 0xfe00);
  ck_assert_uint_eq(tf_float_to_float16(bits_f32(0x7f800001u)), 0x7e00);
  ck_assert_uint_eq(tf_float_to_float16(bits_f32(0x7fa02000u)), 0x7f01);
  ck_assert_uint_eq(tf_double_to_float16(bits_f64(0x7ff0000000000001ull)),
                    0x7e00);
  ck_assert_uint_eq(tf_double_to_float16(bits_f64(0xfff4000000000000ull)),
                    0xff00);
  /* A double just above a tie must round up, though as a float it would
   * have been the tie itself (double rounding). */
  ck_assert_uint_eq(tf_double_to_float16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  ck_assert_uint_eq(tf_float_to_float16((float)(1.0 + 0x1p-11 + 0x1p-40)),
                    0x3c00);
}
END_TEST

START_TEST(test_bf16_cases) {
  struct { uint32_t in; uint16_t want; } c[] = {
      {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82},
      {0x3f808001u, 0x3f81}, {0x3f807fffu, 0x3f80}, {0x7f7fffffu, 0x7f80},
      {0x7f7f7fffu, 0x7f7f}, {0x7f7f8000u, 0x7f80}, {0x00008000u, 0x0000},
      {0x00018000u, 0x0002}, {0x80008001u, 0x8001}, {0x7f800000u, 0x7f80},
      {0xff800000u, 0xff80}, {0x7f800001u, 0x7fc0}, {0xffa00000u, 0xffe0},
      {0x80000000u, 0x8000},
  };
  for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
    float f = bits_f32(c[i].in);
    ck_assert_msg(tf_float_to_bfloat16(f) == c[i].want,
                  "0x%08x -> 0x%04x, want 0x%04x", c[i].in,
                  tf_float_to_bfloat16(f), c[i].want);
  }
  /* double -> bfloat16 is rounded once: 2^-134 (half the smallest
   * subnormal) plus a little rounds up, though as a float it is exactly
   * the tie and would round to 0. */
  ck_assert_uint_eq(tf__f64_to_bf16(0x1p-134 + 0x1p-160), 0x0001);
  ck_assert_uint_eq(tf__f64_to_bf16(0x1p-134), 0x0000);
  ck_assert_uint_eq(tf__f64_to_bf16(-0x3p-134), 0x8002);
  ck_assert_uint_eq(tf__f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  ck_assert_uint_eq(tf__f64_to_bf16(0x1.ffp127), 0x7f80);
  ck_assert_uint_eq(tf__f64_to_bf16(0x1.fefffp127), 0x7f7f);
  ck_assert_uint_eq(tf__f64_to_bf16(1e300), 0x7f80);
  ck_assert_uint_eq(tf__f64_to_bf16(-1e-300), 0x8000);
}
END_TEST

/* ---- random values against the references ------------------------------ */

#define N_RAND 200000

/* Random float: a third uniform bit patterns (all exponents, NaNs), a third
 * log-uniform over [2^-27, 2^17) (the float16 range), a third exact ties
 * between two neighbouring float16 values, possibly nudged by one ulp. */
static float rand_f32_for_f16(void) {
  uint64_t r = tt_rand_u64();
  switch (r % 3) {
  case 0:
    return bits_f32((uint32_t)(r >> 32));
  case 1: {
    float v = (float)ldexp(tt_rand_uniform(1.0, 2.0), (int)(r >> 40) % 44 - 27);
    return (r >> 20) & 1 ? -v : v;
  }
  default: {
    uint16_t h = (uint16_t)((r >> 16) % 0x7c00); /* finite, non-negative */
    double lo = f16_value(h);
    double hi = h == 0x7bff ? 65536.0 : f16_value((uint16_t)(h + 1));
    float t = (float)((lo + hi) / 2); /* exact: needs 12 bits */
    uint32_t u;
    memcpy(&u, &t, 4);
    u += (uint32_t)((r >> 40) % 3) - 1u; /* tie, or one float ulp off */
    return (r >> 20) & 1 ? -bits_f32(u) : bits_f32(u);
  }
  }
}

START_TEST(test_f32_to_f16_random_vs_reference) {
  fmt f = make_fmt(f16_value, F16_INF, 65536.0);
  for (int i = 0; i < N_RAND; i++) {
    float v = rand_f32_for_f16();
    uint16_t got = tf_float_to_float16(v);
    if (isnan(v)) {
      EXPECT(f16_is_nan(got) && (got & 0x0200), "NaN -> 0x%04x", got);
      continue;
    }
    uint16_t want = ref_round(&f, v);
    EXPECT(got == want, "%a -> 0x%04x, want 0x%04x (seed %llu)",
                  (double)v, got, want, (unsigned long long)tt_seed());
  }
  free(f.vals);
}
END_TEST

/* Random doubles: as above, plus ties nudged by far less than a float ulp,
 * where rounding through float would be wrong. */
static double rand_f64_for_f16(void) {
  uint64_t r = tt_rand_u64();
  if (r % 4 == 3) {
    uint16_t h = (uint16_t)((r >> 16) % 0x7c00);
    double lo = f16_value(h);
    double hi = h == 0x7bff ? 65536.0 : f16_value((uint16_t)(h + 1));
    double nudge = ldexp((double)((r >> 40) % 3) - 1.0, -30) * (hi - lo);
    double v = (lo + hi) / 2 + nudge;
    return (r >> 20) & 1 ? -v : v;
  }
  return rand_f32_for_f16() * (1.0 + ldexp((double)(r >> 44), -60));
}

START_TEST(test_f64_to_f16_random_vs_reference) {
  fmt f = make_fmt(f16_value, F16_INF, 65536.0);
  for (int i = 0; i < N_RAND; i++) {
    double v = rand_f64_for_f16();
    uint16_t got = tf_double_to_float16(v);
    if (isnan(v)) {
      EXPECT(f16_is_nan(got), "NaN -> 0x%04x", got);
      continue;
    }
    uint16_t want = ref_round(&f, v);
    EXPECT(got == want, "%a -> 0x%04x, want 0x%04x (seed %llu)", v,
                  got, want, (unsigned long long)tt_seed());
  }
  free(f.vals);
}
END_TEST

/* Random floats and doubles for bfloat16: uniform bit patterns, exact ties
 * and ties nudged by a float ulp or (doubles) by 2^-30 of a step. */
static double rand_for_bf16(bool dbl) {
  uint64_t r = tt_rand_u64();
  if (r % 2 == 0) {
    return dbl ? bits_f64(r) : bits_f32((uint32_t)(r >> 32));
  }
  uint16_t h = (uint16_t)((r >> 16) % 0x7f80);
  double lo = bf16_value(h);
  double hi = h == 0x7f7f ? 0x1p128 : bf16_value((uint16_t)(h + 1));
  double k = (double)((r >> 40) % 3) - 1.0;
  double v = (lo + hi) / 2 + k * (hi - lo) * (dbl ? 0x1p-30 : 0x1p-16);
  return (r >> 20) & 1 ? -v : v;
}

START_TEST(test_to_bf16_random_vs_reference) {
  fmt f = make_fmt(bf16_value, BF16_INF, 0x1p128);
  for (int i = 0; i < N_RAND; i++) {
    float v = (float)rand_for_bf16(false);
    uint16_t got = tf_float_to_bfloat16(v);
    if (isnan(v)) {
      EXPECT(bf16_is_nan(got) && (got & 0x0040), "NaN -> 0x%04x", got);
    } else {
      EXPECT(got == ref_round(&f, v), "%a -> 0x%04x, want 0x%04x",
                    (double)v, got, ref_round(&f, v));
    }
    double d = rand_for_bf16(true);
    got = tf__f64_to_bf16(d);
    if (isnan(d)) {
      EXPECT(bf16_is_nan(got) && (got & 0x0040), "NaN -> 0x%04x", got);
    } else {
      EXPECT(got == ref_round(&f, d), "double %a -> 0x%04x, want 0x%04x",
                    d, got, ref_round(&f, d));
    }
  }
  free(f.vals);
}
END_TEST

/* numpy's astype(np.float16) from float32 and from float64, bit for bit
 * (NaNs only need to stay NaN: numpy does not quiet them). */
static void check_vs_numpy(tf_dtype dt) {
  tf_shape s = tf_shape_of(1, (int64_t)N_RAND);
  tf_tensor *in;
  tf_status st;
  ck_assert(tf_tensor_new(dt, &s, &in, &st) == TF_OK);
  for (int i = 0; i < N_RAND; i++) {
    if (dt == TF_FLOAT32) {
      ((float *)in->data)[i] = rand_f32_for_f16();
    } else {
      ((double *)in->data)[i] = rand_f64_for_f16();
    }
  }
  tf_tensor *out[1];
  int n = tt_numpy("import warnings\nwarnings.simplefilter('ignore')\n"
                   "outs = [ins[0].astype(np.float16)]",
                   &in, 1, out, 1);
  if (n >= 0) {
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(out[0]->dtype, TF_FLOAT16);
    const uint16_t *want = out[0]->data;
    for (int i = 0; i < N_RAND; i++) {
      double v = dt == TF_FLOAT32 ? ((float *)in->data)[i]
                                  : ((double *)in->data)[i];
      uint16_t got = dt == TF_FLOAT32 ? tf_float_to_float16((float)v)
                                      : tf_double_to_float16(v);
      if (isnan(v)) {
        EXPECT(f16_is_nan(got) && f16_is_nan(want[i]), "NaN -> 0x%04x", got);
      } else {
        EXPECT(got == want[i], "%s %a -> 0x%04x, numpy 0x%04x",
                      tf_dtype_name(dt), v, got, want[i]);
      }
    }
    tf_tensor_unref(out[0]);
  }
  tf_tensor_unref(in);
}

START_TEST(test_f32_to_f16_vs_numpy) { check_vs_numpy(TF_FLOAT32); }
END_TEST

START_TEST(test_f64_to_f16_vs_numpy) { check_vs_numpy(TF_FLOAT64); }
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("half");
  TCase *tc = tcase_create("half");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_f16_exhaustive);
  tcase_add_test(tc, test_bf16_exhaustive);
  tcase_add_test(tc, test_f16_widen_vs_numpy);
  tcase_add_test(tc, test_f16_cases);
  tcase_add_test(tc, test_bf16_cases);
  tcase_add_test(tc, test_f32_to_f16_random_vs_reference);
  tcase_add_test(tc, test_f64_to_f16_random_vs_reference);
  tcase_add_test(tc, test_to_bf16_random_vs_reference);
  tcase_add_test(tc, test_f32_to_f16_vs_numpy);
  tcase_add_test(tc, test_f64_to_f16_vs_numpy);
  suite_add_tcase(s, tc);
  return s;
}
