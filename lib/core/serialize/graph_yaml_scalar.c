/* graph_yaml_scalar.c: the scalar text of the YAML graph form: numbers
 * written so they read back bit-exactly, YAML core-schema recognisers, and
 * base64 for !!binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/graph_yaml.h"
#include "lib/core/base/util.h"

/* ---- base64 -------------------------------------------------------------- */

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *tf__base64_encode(const void *data, size_t n, size_t line_len,
                        size_t *out_len) {
  const uint8_t *p = data;
  size_t chars = (n + 2) / 3 * 4;
  size_t lines = line_len ? chars / line_len + 1 : 0;
  char *out = malloc(chars + lines + 1);
  if (out == NULL) {
    return NULL;
  }
  size_t o = 0, col = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    v |= i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0;
    v |= i + 2 < n ? p[i + 2] : 0;
    char q[4] = {b64_chars[(v >> 18) & 63], b64_chars[(v >> 12) & 63],
                 i + 1 < n ? b64_chars[(v >> 6) & 63] : '=',
                 i + 2 < n ? b64_chars[v & 63] : '='};
    for (int k = 0; k < 4; k++) {
      out[o++] = q[k];
      if (line_len && ++col == line_len) {
        out[o++] = '\n';
        col = 0;
      }
    }
  }
  if (line_len && col != 0) {
    out[o++] = '\n';
  }
  out[o] = '\0';
  *out_len = o;
  return out;
}

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

bool tf__base64_decode(const char *s, size_t n, uint8_t *out,
                       size_t *out_len) {
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t o = 0, chars = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    }
    chars++;
    if (c == '=') {
      pad++;
      continue;
    }
    int v = b64_value(c);
    if (v < 0 || pad > 0) {
      return false; /* bad character, or data after padding */
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  /* Padding must complete the last quantum; leftover bits must be zero. */
  if (chars % 4 != 0 || pad > 2 || (bits == 0 && pad != 0) ||
      (bits == 2 && pad != 1) || (bits == 4 && pad != 2) ||
      (acc & ((1u << bits) - 1)) != 0) {
    return false;
  }
  *out_len = o;
  return true;
}

/* ---- recognisers --------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static size_t digits(const char *s, size_t i, size_t n) {
  size_t j = i;
  while (j < n && is_digit(s[j])) {
    j++;
  }
  return j - i;
}

static bool word_in(const char *s, size_t n, const char *const *words) {
  for (int i = 0; words[i] != NULL; i++) {
    if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0) {
      return true;
    }
  }
  return false;
}

bool tf__yaml_parse_bool(const char *s, size_t n, bool *v) {
  static const char *const t[] = {"true", "True", "TRUE", NULL};
  static const char *const f[] = {"false", "False", "FALSE", NULL};
  if (word_in(s, n, t)) {
    *v = true;
    return true;
  }
  if (word_in(s, n, f)) {
    *v = false;
    return true;
  }
  return false;
}

bool tf__yaml_is_null(const char *s, size_t n) {
  static const char *const w[] = {"", "~", "null", "Null", "NULL", NULL};
  return word_in(s, n, w);
}

bool tf__yaml_parse_uint(const char *s, size_t n, uint64_t *v) {
  size_t i = n > 0 && s[0] == '+' ? 1 : 0;
  if (n == i || digits(s, i, n) != n - i) {
    return false;
  }
  uint64_t x = 0;
  for (; i < n; i++) {
    if (__builtin_mul_overflow(x, 10u, &x) ||
        __builtin_add_overflow(x, (uint64_t)(s[i] - '0'), &x)) {
      return false;
    }
  }
  *v = x;
  return true;
}

bool tf__yaml_parse_int(const char *s, size_t n, int64_t *v) {
  bool neg = n > 0 && s[0] == '-';
  uint64_t x;
  if (!tf__yaml_parse_uint(s + neg, n - neg, &x) || (neg && n > 1 && s[1] == '+')) {
    return false;
  }
  if (neg ? x > (uint64_t)INT64_MAX + 1 : x > (uint64_t)INT64_MAX) {
    return false;
  }
  *v = neg ? (int64_t)(0 - x) : (int64_t)x;
  return true;
}

/* Checks YAML float/int syntax and writes a strtod-ready copy to buf. */
static bool float_text(const char *s, size_t n, char *buf, size_t size) {
  static const char *const inf[] = {".inf", ".Inf", ".INF", NULL};
  static const char *const nan[] = {".nan", ".NaN", ".NAN", NULL};
  size_t i = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (word_in(s + i, n - i, inf)) {
    snprintf(buf, size, "%sinf", s[0] == '-' ? "-" : "");
    return true;
  }
  if (i == 0 && word_in(s, n, nan)) {
    snprintf(buf, size, "nan");
    return true;
  }
  if (n >= size) {
    return false;
  }
  size_t int_digits = digits(s, i, n), frac_digits = 0;
  i += int_digits;
  if (i < n && s[i] == '.') {
    frac_digits = digits(s, i + 1, n);
    i += 1 + frac_digits;
  }
  if (int_digits + frac_digits == 0) {
    return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    i += i < n && (s[i] == '-' || s[i] == '+') ? 1 : 0;
    size_t e = digits(s, i, n);
    if (e == 0) {
      return false;
    }
    i += e;
  }
  if (i != n) {
    return false;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  return true;
}

bool tf__yaml_parse_float(const char *s, size_t n, double *v) {
  char buf[512];
  if (!float_text(s, n, buf, sizeof buf)) {
    return false;
  }
  *v = strtod(buf, NULL);
  return true;
}

bool tf__yaml_parse_float32(const char *s, size_t n, float *v) {
  char buf[512];
  if (!float_text(s, n, buf, sizeof buf)) {
    return false;
  }
  *v = strtof(buf, NULL);
  return true;
}

bool tf__yaml_plain_is_special(const char *s, size_t n) {
  static const char *const yaml11[] = {
      "yes", "Yes", "YES", "no",  "No", "NO", "on", "On",
      "ON",  "off", "Off", "OFF", "=",  "<<", NULL};
  char buf[512];
  bool b;
  return tf__yaml_parse_bool(s, n, &b) || tf__yaml_is_null(s, n) ||
         word_in(s, n, yaml11) || float_text(s, n, buf, sizeof buf) ||
         (n > 0 && (is_digit(s[0]) || s[0] == '.' || s[0] == '-' || s[0] == '+'));
}

/* ---- float formatting ---------------------------------------------------- */

/* Whether text reads back as v of dt the way the reader reads it (float16
 * through the double, bfloat16 through the float); *back is the text as
 * read, before any narrowing to dt. */
static bool reads_back(const char *text, double v, tf_dtype dt, double *back) {
  if (dt == TF_FLOAT64 || dt == TF_FLOAT16) {
    double d = strtod(text, NULL);
    *back = d;
    return dt == TF_FLOAT16
               ? tf_double_to_float16(d) == tf_double_to_float16(v)
               : memcmp(&d, &v, sizeof d) == 0;
  }
  float f = strtof(text, NULL), fv = (float)v;
  *back = f;
  return dt == TF_FLOAT32
             ? memcmp(&f, &fv, sizeof f) == 0
             : tf_float_to_bfloat16(f) == tf_float_to_bfloat16(fv);
}

/* A decimal m * 10^e of p significant digits: 10^(p-1) <= m < 10^p, or
 * m = 0. */
typedef struct decimal {
  uint64_t m;
  int e, p;
} decimal;

/* |v| rounded to the nearest decimal of p significant digits. */
static decimal dec_nearest(double v, int p) {
  char t[40];
  snprintf(t, sizeof t, "%.*e", p - 1, fabs(v));
  decimal d = {0, 0, p};
  const char *c = t;
  for (; *c != 'e'; c++) {
    d.m = *c == '.' ? d.m : d.m * 10 + (uint64_t)(*c - '0');
  }
  d.e = atoi(c + 1) - (p - 1);
  return d;
}

/* The next decimal of d.p digits above (dir > 0) or below d (m > 0). */
static decimal dec_step(decimal d, int dir) {
  uint64_t lo = 1;
  for (int i = 1; i < d.p; i++) {
    lo *= 10;
  }
  if (dir > 0 && ++d.m == lo * 10) {
    d.m = lo;
    d.e++;
  } else if (dir < 0 && d.m-- == lo) {
    d.m = lo * 10 - 1;
    d.e--;
  }
  return d;
}

/* Writes d (with v's sign) the way "%.*g" with precision d.p would, plus
 * a ".0" where the mantissa has no point: "0.015625", "1.0e+20". */
static void dec_text(decimal d, double v, char *buf, size_t size) {
  char dig[24] = {0};
  uint64_t m = d.m;
  for (int i = d.p - 1; i >= 0; i--, m /= 10) {
    dig[i] = (char)('0' + m % 10);
  }
  int k = d.p;
  while (k > 1 && dig[k - 1] == '0') {
    k--; /* %g drops trailing zeros */
  }
  int x = d.m == 0 ? 0 : d.e + d.p - 1; /* exponent of the first digit */
  const char *sign = signbit(v) ? "-" : "";
  if (x < -4 || x >= d.p) {
    snprintf(buf, size, "%s%c.%.*se%c%02d", sign, dig[0], k > 1 ? k - 1 : 1,
             k > 1 ? dig + 1 : "0", x < 0 ? '-' : '+', abs(x));
  } else if (x < 0) {
    snprintf(buf, size, "%s0.%.*s%.*s", sign, -x - 1, "000", k, dig);
  } else if (k > x + 1) {
    snprintf(buf, size, "%s%.*s.%.*s", sign, x + 1, dig, k - x - 1,
             dig + x + 1);
  } else {
    snprintf(buf, size, "%s%.*s.0", sign, x + 1, dig);
  }
}

/* Writes to buf the p-digit decimal nearest v that reads back, if any. */
static bool shortest_of(double v, tf_dtype dt, int p, char *buf,
                        size_t size) {
  decimal d = dec_nearest(v, p);
  double back;
  dec_text(d, v, buf, size);
  if (reads_back(buf, v, dt, &back)) {
    return true;
  }
  if (d.m == 0) {
    return false;
  }
  dec_text(dec_step(d, fabs(back) < fabs(v) ? 1 : -1), v, buf, size);
  return reads_back(buf, v, dt, &back);
}

void tf__yaml_format_float(double v, tf_dtype dt, char *buf, size_t size) {
  TF_ASSERT(size >= 32);
  if (isnan(v)) {
    snprintf(buf, size, ".nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, "%s", v < 0 ? "-.inf" : ".inf");
    return;
  }
  /* The fewest significant digits p with which some decimal reads back.
   * Those that read back form an interval around v, so one of p digits
   * does iff one of v's two p-digit neighbours does: the nearest
   * (preferred), else the next one on the other side of v. (The nearest
   * alone is not enough: at a power of two the values below v are twice as
   * dense as those above, so a farther decimal above can read back where
   * the nearest one, below, does not.) Every p-digit decimal has p + 1
   * digits too, so "some p-digit decimal reads back" is monotonic in p:
   * binary search. 17 digits always read back for a double, 9 for the
   * narrower types. */
  int lo = 1, hi = dt == TF_FLOAT64 ? 17 : 9;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (shortest_of(v, dt, mid, buf, size)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (!shortest_of(v, dt, lo, buf, size)) {
    dec_text(dec_nearest(v, lo), v, buf, size); /* lo = 17 or 9: unreached */
  }
}
