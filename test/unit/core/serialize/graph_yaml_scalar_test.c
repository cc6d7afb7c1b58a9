/* graph_yaml_scalar_test.c: the scalar text of the YAML graph form
 * (lib/core/serialize/graph_yaml_scalar.c) through lib/core/serialize/graph_yaml.h:
 *
 *  - base64: RFC 4648 vectors, every length 0..200 and several line widths
 *    against a bit-at-a-time reference encoder written here, decoding into
 *    a buffer of exactly the documented size, and rejection of every
 *    non-canonical padded quantum;
 *  - float formatting: hand-worked texts, then for random float64/float32
 *    bit patterns and a third of the float16 and bfloat16 patterns (all
 *    powers of two among them), the text reads back bit-exactly and is
 *    minimal (no decimal with fewer significant digits reads back: for
 *    every shorter length both decimal neighbours of the value are tried,
 *    which matters at powers of two, where the values below are twice as
 *    dense as those above), and has the digits of numpy's shortest repr
 *    (Dragon4, unique=True);
 *  - the core-schema recognisers (ints at the int64/uint64 limits against
 *    strtoll/strtoull, floats against strtod/strtof, bools, nulls, words
 *    that need quoting).
 * Everything is exact: round trips bit for bit, texts character for
 * character. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/graph_yaml.h"
#include "test/unit/testutil.h"

/* ---- base64 -------------------------------------------------------------- */

/* Reference: reads the input one bit at a time, emits a character per six
 * bits, pads to a multiple of four; no line breaks. */
static char *ref_base64(const unsigned char *p, size_t n) {
  static const char *abc =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = malloc(n / 3 * 4 + 8);
  size_t o = 0, bits = n * 8;
  for (size_t b = 0; b < bits; b += 6) {
    int v = 0;
    for (size_t k = b; k < b + 6; k++) {
      int bit = k < bits ? (p[k / 8] >> (7 - k % 8)) & 1 : 0;
      v = v * 2 + bit;
    }
    out[o++] = abc[v];
  }
  while (o % 4 != 0) {
    out[o++] = '=';
  }
  out[o] = '\0';
  return out;
}

static char *encode(const void *p, size_t n, size_t line_len, size_t *len) {
  char *s = tf__base64_encode(p, n, line_len, len);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(strlen(s), *len);
  return s;
}

/* Decodes into a buffer of exactly n / 4 * 3 + 3 bytes (ASan catches a
 * write past it); returns the malloc'd bytes, or NULL if rejected. */
static unsigned char *decode(const char *s, size_t n, size_t *len) {
  unsigned char *out = malloc(n / 4 * 3 + 3);
  if (!tf__base64_decode(s, n, out, len)) {
    free(out);
    return NULL;
  }
  return out;
}

START_TEST(test_base64_rfc4648_vectors) {
  static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
                                "Zm9vYmE=", "Zm9vYmFy"};
  for (int i = 0; i < 7; i++) {
    size_t len;
    char *s = encode(plain[i], strlen(plain[i]), 0, &len);
    ck_assert_str_eq(s, coded[i]);
    free(s);
    unsigned char *d = decode(coded[i], strlen(coded[i]), &len);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(len, strlen(plain[i]));
    ck_assert(memcmp(d, plain[i], len) == 0);
    free(d);
  }
  /* Line breaks after every line_len characters, and after the last. */
  size_t len;
  char *s = encode("foobar", 6, 4, &len);
  ck_assert_str_eq(s, "Zm9v\nYmFy\n");
  free(s);
  s = encode("foob", 4, 3, &len);
  ck_assert_str_eq(s, "Zm9\nvYg\n==\n");
  free(s);
  s = encode("", 0, 76, &len);
  ck_assert_str_eq(s, "");
  free(s);
}
END_TEST

/* Every length 0..200 at several widths: the text is the reference's with
 * a newline after each full line (and one ending a partial last line), and
 * decodes back to the bytes. */
START_TEST(test_base64_lengths_and_lines) {
  static const size_t widths[] = {0, 1, 2, 3, 4, 5, 7, 76};
  unsigned char data[200];
  for (size_t n = 0; n <= 200; n++) {
    for (size_t i = 0; i < n; i++) {
      data[i] = (unsigned char)tt_rand_u64();
    }
    char *ref = ref_base64(data, n);
    size_t ref_len = strlen(ref);
    ck_assert_uint_eq(ref_len, (n + 2) / 3 * 4);
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
      size_t lw = widths[w], len;
      char *s = encode(data, n, lw, &len);
      /* Remove the line breaks, checking where they are. */
      char *flat = malloc(len + 1);
      size_t f = 0, col = 0;
      for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n') {
          ck_assert_msg(lw > 0 && col > 0 && (col == lw || i == len - 1),
                        "n %zu width %zu: newline after %zu chars", n, lw, col);
          col = 0;
        } else {
          flat[f++] = s[i];
          col++;
        }
      }
      flat[f] = '\0';
      ck_assert_msg(lw == 0 || col == 0, "n %zu width %zu: no final newline",
                    n, lw);
      ck_assert_msg(strcmp(flat, ref) == 0, "n %zu width %zu: %s vs %s", n, lw,
                    flat, ref);
      size_t dlen;
      unsigned char *d = decode(s, len, &dlen);
      ck_assert_msg(d != NULL, "n %zu width %zu: own text rejected", n, lw);
      ck_assert_uint_eq(dlen, n);
      ck_assert(n == 0 || memcmp(d, data, n) == 0);
      free(d);
      free(flat);
      free(s);
    }
    free(ref);
  }
}
END_TEST

START_TEST(test_base64_decode_rejects) {
  static const char *bad[] = {
      "Zg",        /* unpadded */
      "Zg=",       /* short padding */
      "Zm8==",     /* too much padding for the quantum */
      "Z===",      /* three pad characters */
      "====",      /* padding only */
      "Zg==Zg==",  /* data after padding */
      "Zg=A",      /* data after padding inside the quantum */
      "Zh==",      /* leftover bits not zero */
      "Zm9=",      /* leftover bits not zero */
      "Zm9v!",     /* bad character */
      "Zm9v-_==",  /* base64url alphabet */
      "Zm9\x80v",  /* high byte */
      "Zm9vY",     /* 5 characters */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t len;
    unsigned char *d = decode(bad[i], strlen(bad[i]), &len);
    ck_assert_msg(d == NULL, "'%s' accepted", bad[i]);
  }
  /* Whitespace anywhere is skipped. */
  const char *spaced = " Zm\t9v\r\nYm\nFy \n";
  size_t len;
  unsigned char *d = decode(spaced, strlen(spaced), &len);
  ck_assert_ptr_nonnull(d);
  ck_assert_uint_eq(len, 6);
  ck_assert(memcmp(d, "foobar", 6) == 0);
  free(d);
  d = decode("", 0, &len);
  ck_assert_ptr_nonnull(d);
  ck_assert_uint_eq(len, 0);
  free(d);
}
END_TEST

/* Every padded final quantum "XY==" and "XYZ=": accepted exactly when the
 * bits past the last byte are zero (the canonical encoding), and then it
 * re-encodes to the same text. */
START_TEST(test_base64_padded_quanta) {
  static const char *abc =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char q[5] = {0};
  for (int x = 0; x < 64; x++) {
    for (int y = 0; y < 64; y++) {
      for (int z = -1; z < 64; z++) {
        q[0] = abc[x], q[1] = abc[y];
        q[2] = z < 0 ? '=' : abc[z];
        q[3] = '=';
        bool canonical = z < 0 ? (y & 15) == 0 : (z & 3) == 0;
        size_t len;
        unsigned char out[6];
        bool ok = tf__base64_decode(q, 4, out, &len);
        if (ok != canonical) {
          ck_abort_msg("'%s': decode %d, canonical %d", q, ok, canonical);
        }
        if (ok) {
          char *s = tf__base64_encode(out, len, 0, &len);
          if (strcmp(s, q) != 0) {
            ck_abort_msg("'%s' re-encodes as '%s'", q, s);
          }
          free(s);
        }
      }
    }
  }
}
END_TEST

/* ---- float formatting ---------------------------------------------------- */

static const char *fmt(double v, tf_dtype dt) {
  static char buf[64];
  memset(buf, '#', sizeof buf);
  tf__yaml_format_float(v, dt, buf, sizeof buf);
  return buf;
}

START_TEST(test_format_float_hand) {
  static const struct { double v; tf_dtype dt; const char *want; } cases[] = {
      {0.0, TF_FLOAT64, "0.0"},
      {-0.0, TF_FLOAT64, "-0.0"},
      {1.0, TF_FLOAT64, "1.0"},
      {-2.0, TF_FLOAT32, "-2.0"},
      {0.1, TF_FLOAT64, "0.1"},
      {0.3, TF_FLOAT64, "0.3"},
      {2.0 / 3.0, TF_FLOAT64, "0.6666666666666666"},
      {0.1 + 0.2, TF_FLOAT64, "0.30000000000000004"},
      {(double)0.1f, TF_FLOAT32, "0.1"},
      {(double)0.1f, TF_FLOAT64, "0.10000000149011612"},
      {1e20, TF_FLOAT64, "1.0e+20"},
      {1.5e300, TF_FLOAT64, "1.5e+300"},
      {-1e-7, TF_FLOAT64, "-1.0e-07"},
      {123456.0, TF_FLOAT64, "123456.0"},
      {1e16, TF_FLOAT64, "1.0e+16"},
      {4.9406564584124654e-324, TF_FLOAT64, "5.0e-324"}, /* min subnormal */
      {1.7976931348623157e308, TF_FLOAT64, "1.7976931348623157e+308"},
      {(double)1.4e-45f, TF_FLOAT32, "1.0e-45"},
      {(double)3.4028235e38f, TF_FLOAT32, "3.4028235e+38"},
      {16777216.0, TF_FLOAT32, "16777216.0"},
      {65504.0, TF_FLOAT16, "6.55e+04"},     /* 65500 rounds to 65504 */
      {5.960464477539063e-08, TF_FLOAT16, "6.0e-08"}, /* min subnormal */
      {0.333984375, TF_BFLOAT16, "0.334"},   /* bfloat16(1/3) */
      /* Powers of two: the values below are twice as dense as those above,
       * so the shortest decimal may be a farther one above v: 0.01562 is
       * nearer 2^-6 but reads back as the float16 below it. */
      {0x1p-6, TF_FLOAT16, "0.01563"},
      {-0x1p-6, TF_FLOAT16, "-0.01563"},
      {0x1p-69, TF_BFLOAT16, "1.7e-21"},     /* 1.69e-21 is bfloat16 below */
      {0x1p-24, TF_FLOAT64, "5.960464477539063e-08"}, /* not ...0625e-08 */
      {0x1p-24, TF_FLOAT16, "6.0e-08"},
      {0x1p+15, TF_FLOAT16, "3.277e+04"},    /* 32768 */
      {3.3895313892515355e38, TF_BFLOAT16, "3.39e+38"}, /* bfloat16 max */
      {NAN, TF_FLOAT64, ".nan"},
      {-NAN, TF_FLOAT32, ".nan"},
      {INFINITY, TF_FLOAT16, ".inf"},
      {-INFINITY, TF_FLOAT64, "-.inf"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(strcmp(fmt(cases[i].v, cases[i].dt), cases[i].want) == 0,
                  "%.17g as %s: got '%s', want '%s'", cases[i].v,
                  tf_dtype_name(cases[i].dt), fmt(cases[i].v, cases[i].dt),
                  cases[i].want);
  }
  /* size 32 is enough for the longest text. */
  char small[32];
  tf__yaml_format_float(-2.2250738585072014e-308, TF_FLOAT64, small, 32);
  ck_assert_str_eq(small, "-2.2250738585072014e-308");
}
END_TEST

/* Whether text reads back as v of dt, the way the YAML reader reads each
 * dtype (float16 through the double, bfloat16 through the float), bit for
 * bit. (No Check assertions on the way: each passing one costs a pipe
 * write, and this runs a million times.) */
static bool reads_back(const char *text, double v, tf_dtype dt) {
  double d = 0;
  float f = 0;
  bool wide = dt == TF_FLOAT64 || dt == TF_FLOAT16;
  if (!(wide ? tf__yaml_parse_float(text, strlen(text), &d)
             : tf__yaml_parse_float32(text, strlen(text), &f))) {
    ck_abort_msg("'%s' does not parse as a float", text);
  }
  switch (dt) {
  case TF_FLOAT64: return memcmp(&d, &v, sizeof d) == 0;
  case TF_FLOAT32: {
    float fv = (float)v;
    return memcmp(&f, &fv, sizeof f) == 0;
  }
  case TF_FLOAT16: return tf_double_to_float16(d) == tf_double_to_float16(v);
  default: return tf_float_to_bfloat16(f) == tf_float_to_bfloat16((float)v);
  }
}

/* Mantissa digits (no sign, point or trailing zeros) of a decimal text,
 * as an integer, and the power of ten it is scaled by. */
static void digits_of(const char *text, int64_t *m, int *e10) {
  int64_t v = 0;
  int scale = 0, exp = 0;
  bool frac = false, seen = false;
  const char *p = text;
  for (; *p && *p != 'e'; p++) {
    if (*p == '.') {
      frac = true;
    } else if (*p >= '0' && *p <= '9') {
      seen = true;
      v = v * 10 + (*p - '0');
      scale -= frac ? 1 : 0;
    }
  }
  ck_assert(seen);
  if (*p == 'e') {
    exp = atoi(p + 1);
  }
  while (v != 0 && v % 10 == 0) {
    v /= 10;
    scale++;
  }
  *m = v;
  *e10 = v == 0 ? 0 : scale + exp;
}

/* The q-significant-digit decimal nearest |v| (d = 0, what "%.*g" gives)
 * or the next q-digit decimal below (d = -1) or above (d = +1) it, with
 * v's sign; whether it reads back as v. Below 10^k the next one down is
 * 99..9 (q nines) times 10^(k-q). */
static bool shorter_reads_back(double v, tf_dtype dt, int q, int d) {
  char near[64], cand[80];
  snprintf(near, sizeof near, "%.*e", q - 1, fabs(v));
  int64_t m = 0, low = 1;
  for (const char *c = near; *c != 'e'; c++) {
    m = *c == '.' ? m : m * 10 + (*c - '0');
  }
  for (int i = 1; i < q; i++) {
    low *= 10;
  }
  int e = atoi(strchr(near, 'e') + 1) - (q - 1);
  if (d < 0 && m == low) {
    m = low * 10; /* 10^(q-1) -> 10^q at one exponent lower */
    e--;
  }
  snprintf(cand, sizeof cand, "%s%lld.0e%d", v < 0 ? "-" : "",
           (long long)(m + d), e);
  return reads_back(cand, v, dt);
}

/* Whether any decimal of q significant digits reads back as v. Such a
 * decimal lies between v's two q-digit decimal neighbours, which are among
 * the nearest one and those a unit either side of it. */
static bool any_reads_back(double v, tf_dtype dt, int q) {
  for (int d = -1; d <= 1; d++) {
    if (shorter_reads_back(v, dt, q, d)) {
      return true;
    }
  }
  return false;
}

/* Checks one finite value: the text has a '.' in the mantissa, reads back,
 * and no decimal with fewer significant digits does (every shorter length
 * is tried: at a power of two, where the values below are twice as dense
 * as those above, the nearest decimal of q digits can fail where a farther
 * one above reads back, so "some q-digit decimal reads back" is the test,
 * not "the nearest one does"). Returns the digits written. */
static void check_minimal(double v, tf_dtype dt, int64_t *m, int *e10) {
  const char *text = fmt(v, dt);
  char t[64];
  snprintf(t, sizeof t, "%s", text);
  const char *e = strchr(t, 'e');
  size_t mant = e ? (size_t)(e - t) : strlen(t);
  if (memchr(t, '.', mant) == NULL || !reads_back(t, v, dt) ||
      !tf__yaml_plain_is_special(t, strlen(t))) {
    ck_abort_msg("%a as %s: '%s' is not a float that reads back", v,
                 tf_dtype_name(dt), t);
  }
  digits_of(t, m, e10);
  int p = 0;
  for (int64_t x = *m; x != 0; x /= 10) {
    p++;
  }
  for (int q = p - 1; q >= 1; q--) {
    if (any_reads_back(v, dt, q)) {
      ck_abort_msg("%a as %s: a %d-digit decimal reads back but '%s' was "
                   "written", v, tf_dtype_name(dt), q, t);
    }
  }
}

static double half_value(tf_dtype dt, uint16_t bits) {
  return dt == TF_FLOAT16 ? (double)tf_float16_to_float(bits)
                          : (double)tf_bfloat16_to_float(bits);
}

/* Every third float16 and bfloat16 pattern (every 24th negative one: the
 * sign only adds a '-'), and every power of two (mantissa bits zero). */
START_TEST(test_format_half_patterns) {
  tf_dtype dts[2] = {TF_FLOAT16, TF_BFLOAT16};
  const uint32_t mant_mask[2] = {0x3ff, 0x7f};
  for (int k = 0; k < 2; k++) {
    for (uint32_t b = 0; b < 65536; b++) {
      if ((b & mant_mask[k]) != 0 && b % (b < 0x8000 ? 3 : 24) != 0) {
        continue;
      }
      double v = half_value(dts[k], (uint16_t)b);
      if (isfinite(v)) {
        int64_t m;
        int e;
        check_minimal(v, dts[k], &m, &e);
      }
    }
  }
}
END_TEST

static double rand_finite(tf_dtype dt) {
  for (;;) {
    uint64_t r = tt_rand_u64();
    double v;
    if (dt == TF_FLOAT64) {
      memcpy(&v, &r, 8);
    } else {
      uint32_t r32 = (uint32_t)r;
      float f;
      memcpy(&f, &r32, 4);
      v = f;
    }
    if (isfinite(v)) {
      return v;
    }
  }
}

/* Random float64 and float32 bit patterns, then every power of two of
 * both (normal and subnormal), where the shortest text may lie on the far
 * side of v from the nearest decimal of its length. */
START_TEST(test_format_random_float_bits) {
  int64_t m;
  int e;
  for (int i = 0; i < 6000; i++) {
    check_minimal(rand_finite(TF_FLOAT64), TF_FLOAT64, &m, &e);
    check_minimal(rand_finite(TF_FLOAT32), TF_FLOAT32, &m, &e);
  }
  for (int k = -1074; k <= 1023; k++) {
    check_minimal(ldexp(1.0, k), TF_FLOAT64, &m, &e);
    if (k >= -149 && k <= 127) {
      check_minimal(ldexp(1.0, k), TF_FLOAT32, &m, &e);
    }
  }
}
END_TEST

/* The digits match numpy's shortest round-trip repr (an independent
 * implementation: Dragon4 with unique=True) for random float64 and float32
 * values and every finite non-negative float16. */
START_TEST(test_format_matches_numpy) {
  enum { N = 2000 };
  tf_shape s = tf_shape_of(1, N);
  tf_shape sh = tf_shape_of(1, 32768);
  tf_tensor *x64, *x32, *x16;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT64, &s, &x64, &st) == TF_OK);
  ck_assert(tf_tensor_new(TF_FLOAT32, &s, &x32, &st) == TF_OK);
  ck_assert(tf_tensor_new(TF_FLOAT16, &sh, &x16, &st) == TF_OK);
  for (int i = 0; i < N; i++) {
    ((double *)x64->data)[i] = rand_finite(TF_FLOAT64);
    ((float *)x32->data)[i] = (float)rand_finite(TF_FLOAT32);
  }
  uint16_t *h = x16->data;
  for (uint32_t b = 0; b < 32768; b++) {
    h[b] = (b & 0x7c00) == 0x7c00 ? 0 : (uint16_t)b; /* no inf/NaN */
  }
  tf_tensor *in[3] = {x64, x32, x16}, *out[6] = {0};
  const char *script =
      "def dig(x):\n"
      "    m, e = np.format_float_scientific(x, unique=True, trim='-').split('e')\n"
      "    m = m.lstrip('-')\n"
      "    i, f = (m.split('.') + [''])[:2]\n"
      "    d = int(i + f)\n"
      "    e = int(e) - len(f)\n"
      "    while d and d % 10 == 0:\n"
      "        d //= 10; e += 1\n"
      "    return d, (e if d else 0)\n"
      "for x in ins:\n"
      "    r = [dig(v) for v in x]\n"
      "    outs.append(np.array([a for a, b in r], dtype=np.int64))\n"
      "    outs.append(np.array([b for a, b in r], dtype=np.int64))\n";
  int n_out = tt_numpy(script, in, 3, out, 6);
  if (n_out < 0) { /* numpy not available: skipped (printed) */
    tt_free(in, 3);
    return;
  }
  ck_assert_int_eq(n_out, 6);
  const tf_dtype dts[3] = {TF_FLOAT64, TF_FLOAT32, TF_FLOAT16};
  for (int k = 0; k < 3; k++) {
    for (int64_t i = 0; i < in[k]->n; i++) {
      double v = k == 0   ? ((double *)x64->data)[i]
                 : k == 1 ? ((float *)x32->data)[i]
                          : half_value(TF_FLOAT16, h[i]);
      int64_t m;
      int e;
      digits_of(fmt(v, dts[k]), &m, &e);
      int64_t nm = ((int64_t *)out[2 * k]->data)[i];
      int64_t ne = ((int64_t *)out[2 * k + 1]->data)[i];
      if (m != nm || e != ne) {
        ck_abort_msg("%a as %s: wrote '%s' (%llde%d), numpy %llde%lld", v,
                     tf_dtype_name(dts[k]), fmt(v, dts[k]), (long long)m, e,
                     (long long)nm, (long long)ne);
      }
    }
  }
  tt_free(out, 6);
  tt_free(in, 3);
}
END_TEST

/* ---- recognisers --------------------------------------------------------- */

START_TEST(test_parse_int_limits) {
  static const struct { const char *s; bool ok; int64_t v; } ints[] = {
      {"0", true, 0},
      {"-0", true, 0},
      {"+5", true, 5},
      {"007", true, 7},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775808", false, 0},
      {"-9223372036854775809", false, 0},
      {"99999999999999999999", false, 0},
      {"", false, 0},
      {"-", false, 0},
      {"+", false, 0},
      {"-+5", false, 0},
      {"+-5", false, 0},
      {"--5", false, 0},
      {"0x10", false, 0},
      {"1_000", false, 0},
      {" 1", false, 0},
      {"1 ", false, 0},
      {"1.0", false, 0},
      {"1e3", false, 0},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    int64_t v = 42;
    bool ok = tf__yaml_parse_int(ints[i].s, strlen(ints[i].s), &v);
    ck_assert_msg(ok == ints[i].ok, "'%s'", ints[i].s);
    ck_assert_msg(ok ? v == ints[i].v : v == 42, "'%s' gave %lld", ints[i].s,
                  (long long)v);
  }
  static const struct { const char *s; bool ok; uint64_t v; } uints[] = {
      {"18446744073709551615", true, UINT64_MAX},
      {"+18446744073709551615", true, UINT64_MAX},
      {"18446744073709551616", false, 0},
      {"-1", false, 0},
      {"-0", false, 0},
      {"", false, 0},
  };
  for (size_t i = 0; i < sizeof uints / sizeof uints[0]; i++) {
    uint64_t v = 42;
    bool ok = tf__yaml_parse_uint(uints[i].s, strlen(uints[i].s), &v);
    ck_assert_msg(ok == uints[i].ok, "'%s'", uints[i].s);
    ck_assert(ok ? v == uints[i].v : v == 42);
  }
  /* Only n bytes are read. */
  int64_t v;
  ck_assert(tf__yaml_parse_int("123abc", 3, &v) && v == 123);
  ck_assert(!tf__yaml_parse_int("123abc", 4, &v));
}
END_TEST

/* Random sign/digit strings of up to 21 characters against strtoll and
 * strtoull (which also report overflow through errno). */
START_TEST(test_parse_int_vs_strtoll) {
  char s[32];
  for (int it = 0; it < 100000; it++) {
    size_t n = 0, len = 1 + tt_rand_u64() % 21;
    uint64_t r = tt_rand_u64();
    if (r % 4 == 0) {
      s[n++] = r % 8 == 0 ? '-' : '+';
    }
    while (n < len) {
      s[n++] = (char)('0' + tt_rand_u64() % 10);
    }
    s[n] = '\0';
    bool digits = n > 1 || (s[0] != '-' && s[0] != '+');
    errno = 0;
    long long want = strtoll(s, NULL, 10);
    bool want_ok = digits && errno == 0;
    int64_t got;
    bool ok = tf__yaml_parse_int(s, n, &got);
    if (ok != want_ok || (ok && got != want)) {
      ck_abort_msg("int '%s': got %d %lld, strtoll %d %lld", s, ok,
                   (long long)got, want_ok, want);
    }
    errno = 0;
    unsigned long long uwant = strtoull(s, NULL, 10);
    bool uwant_ok = digits && errno == 0 && s[0] != '-';
    uint64_t ugot;
    ok = tf__yaml_parse_uint(s, n, &ugot);
    if (ok != uwant_ok || (ok && ugot != uwant)) {
      ck_abort_msg("uint '%s': got %d %llu, strtoull %d %llu", s, ok,
                   (unsigned long long)ugot, uwant_ok, uwant);
    }
  }
}
END_TEST

START_TEST(test_parse_bool_null) {
  static const char *t[] = {"true", "True", "TRUE"};
  static const char *f[] = {"false", "False", "FALSE"};
  for (int i = 0; i < 3; i++) {
    bool v = false;
    ck_assert(tf__yaml_parse_bool(t[i], strlen(t[i]), &v) && v);
    ck_assert(tf__yaml_parse_bool(f[i], strlen(f[i]), &v) && !v);
  }
  static const char *notbool[] = {"tRue", "yes", "on", "1", "", "t", "truex"};
  for (size_t i = 0; i < sizeof notbool / sizeof notbool[0]; i++) {
    bool v;
    ck_assert_msg(!tf__yaml_parse_bool(notbool[i], strlen(notbool[i]), &v),
                  "'%s'", notbool[i]);
  }
  bool v = false;
  ck_assert(tf__yaml_parse_bool("truex", 4, &v) && v);
  static const char *nulls[] = {"", "~", "null", "Null", "NULL"};
  for (int i = 0; i < 5; i++) {
    ck_assert_msg(tf__yaml_is_null(nulls[i], strlen(nulls[i])), "'%s'", nulls[i]);
  }
  static const char *notnull[] = {"nUll", "none", " ", "~~", "nul"};
  for (int i = 0; i < 5; i++) {
    ck_assert_msg(!tf__yaml_is_null(notnull[i], strlen(notnull[i])), "'%s'",
                  notnull[i]);
  }
}
END_TEST

START_TEST(test_parse_float) {
  static const char *good[] = {"1", "-2.5e-3", ".5", "5.", "+.5", "-0",
                               "1e5", "1E+5", "1.5e-300", "007.50",
                               "1e400", "-1e400", "4.9e-324", "2e-400"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    double v;
    float f;
    ck_assert_msg(tf__yaml_parse_float(good[i], strlen(good[i]), &v), "'%s'",
                  good[i]);
    ck_assert_msg(tf__yaml_parse_float32(good[i], strlen(good[i]), &f), "'%s'",
                  good[i]);
    double want = strtod(good[i], NULL);
    float wantf = strtof(good[i], NULL);
    ck_assert_msg(memcmp(&v, &want, 8) == 0 && memcmp(&f, &wantf, 4) == 0,
                  "'%s'", good[i]);
  }
  static const char *specials[] = {".inf", ".Inf", ".INF", "+.inf", "-.inf",
                                   "-.Inf", ".nan", ".NaN", ".NAN"};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
    double v;
    float f;
    ck_assert(tf__yaml_parse_float(specials[i], strlen(specials[i]), &v));
    ck_assert(tf__yaml_parse_float32(specials[i], strlen(specials[i]), &f));
    bool nan = strchr(specials[i], 'n') || strchr(specials[i], 'N');
    nan = nan && !strchr(specials[i], 'f') && !strchr(specials[i], 'F');
    ck_assert_msg(nan ? isnan(v) && isnan(f)
                      : isinf(v) && isinf(f) && (v < 0) == (specials[i][0] == '-'),
                  "'%s'", specials[i]);
  }
  static const char *bad[] = {"-.nan", "+.nan", "inf", "nan", "Infinity",
                              ".INf", "e5", ".", "-", "", "1e", "1e+",
                              "1.2.3", "0x1p3", " 1", "1 ", "1_0", "1,5",
                              "..5", "1e5.0", "1ee5", "--1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double v = 7;
    float f = 7;
    ck_assert_msg(!tf__yaml_parse_float(bad[i], strlen(bad[i]), &v), "'%s'",
                  bad[i]);
    ck_assert_msg(!tf__yaml_parse_float32(bad[i], strlen(bad[i]), &f), "'%s'",
                  bad[i]);
    ck_assert(v == 7 && f == 7);
  }
  /* float32 is rounded once from the text, not through a double: this is
   * just above the midpoint 1 + 2^-24, which a double rounds onto. */
  const char *mid = "1.000000059604644775390625000000001";
  float f;
  double d;
  ck_assert(tf__yaml_parse_float32(mid, strlen(mid), &f));
  ck_assert(tf__yaml_parse_float(mid, strlen(mid), &d));
  ck_assert(f == 1.0f + 0x1p-23f);
  ck_assert((float)d == 1.0f);
  /* Only n bytes are read; texts of 512 bytes or more are refused. */
  ck_assert(tf__yaml_parse_float("2.5junk", 3, &d) && d == 2.5);
  char longtext[600];
  memset(longtext, '0', sizeof longtext);
  longtext[0] = '1';
  ck_assert(tf__yaml_parse_float(longtext, 511, &d)); /* 1e510 */
  ck_assert(isinf(d) && d > 0);
  ck_assert(!tf__yaml_parse_float(longtext, 512, &d));
}
END_TEST

START_TEST(test_plain_is_special) {
  static const char *special[] = {"yes", "Yes", "YES", "no", "No", "NO", "on",
                                  "On", "ON", "off", "Off", "OFF", "=", "<<",
                                  "true", "False", "", "~", "null", "12",
                                  "-x", "+x", ".hidden", "1abc", ".inf",
                                  "-.5", "1e3"};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
    ck_assert_msg(tf__yaml_plain_is_special(special[i], strlen(special[i])),
                  "'%s'", special[i]);
  }
  static const char *plain[] = {"abc", "x1", "VALID", "Yes?", "yess", "n",
                                "hello world", "a.b", "T", "float32",
                                "/job:ps", "^x", "NaN", "inf"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    ck_assert_msg(!tf__yaml_plain_is_special(plain[i], strlen(plain[i])),
                  "'%s'", plain[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_yaml_scalar");
  TCase *tb = tcase_create("base64");
  tcase_add_test(tb, test_base64_rfc4648_vectors);
  tcase_add_test(tb, test_base64_lengths_and_lines);
  tcase_add_test(tb, test_base64_decode_rejects);
  tcase_add_test(tb, test_base64_padded_quanta);
  suite_add_tcase(s, tb);
  TCase *tf = tcase_create("float_format");
  tcase_set_timeout(tf, 30);
  tcase_add_test(tf, test_format_float_hand);
  tcase_add_test(tf, test_format_half_patterns);
  tcase_add_test(tf, test_format_random_float_bits);
  tcase_add_test(tf, test_format_matches_numpy);
  suite_add_tcase(s, tf);
  TCase *tr = tcase_create("recognisers");
  tcase_add_test(tr, test_parse_int_limits);
  tcase_add_test(tr, test_parse_int_vs_strtoll);
  tcase_add_test(tr, test_parse_bool_null);
  tcase_add_test(tr, test_parse_float);
  tcase_add_test(tr, test_plain_is_special);
  suite_add_tcase(s, tr);
  return s;
}
