/* graph_yaml_scalar.c: the scalar text of the YAML graph form: numbers
 * written so they read back bit-exactly, YAML core-schema recognisers, and
 * base64 for !!binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph_yaml.h"
#include "lib/core/util.h"

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

static bool reads_back(const char *text, double v, tf_dtype dt) {
  double d = strtod(text, NULL);
  float f = strtof(text, NULL), fv = (float)v;
  switch (dt) {
  case TF_FLOAT32: return memcmp(&f, &fv, sizeof f) == 0;
  case TF_FLOAT16: return tf_double_to_float16(d) == tf_double_to_float16(v);
  case TF_BFLOAT16: return tf_float_to_bfloat16(f) == tf_float_to_bfloat16(fv);
  default: return memcmp(&d, &v, sizeof d) == 0;
  }
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
  /* The fewest significant digits that read back: if p digits do, so do
   * p + 1, so binary search; 17 always do for a double (9 for a float). */
  char tmp[40];
  int lo = 1, hi = dt == TF_FLOAT64 ? 17 : 9;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    snprintf(tmp, sizeof tmp, "%.*g", mid, v);
    if (reads_back(tmp, v, dt)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  snprintf(tmp, sizeof tmp, "%.*g", lo, v);
  /* Make sure the mantissa has a '.': "1" -> "1.0", "1e+20" -> "1.0e+20". */
  char *e = strchr(tmp, 'e');
  size_t mant = e ? (size_t)(e - tmp) : strlen(tmp);
  if (memchr(tmp, '.', mant) == NULL) {
    snprintf(buf, size, "%.*s.0%s", (int)mant, tmp, e ? e : "");
  } else {
    snprintf(buf, size, "%s", tmp);
  }
}
