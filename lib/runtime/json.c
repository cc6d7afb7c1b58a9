/* json.c: the strict JSON reader of json.h, recursive descent over the
 * text with a depth cap; strings are decoded to UTF-8 (surrogate pairs
 * joined) as they are read. */
#include "lib/runtime/json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

typedef struct rd {
  const char *s, *end, *what;
  const char *p;
  tf_status *st;
} rd;

__attribute__((format(printf, 3, 4))) static tf_code
bad(const rd *r, const char *at, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(r->st, TF_INVALID_ARGUMENT, "%s at character %d: %s",
                       r->what, (int)(at - r->s) + 1, msg);
}

/* "'x'" or "the end" for messages (static per call site's buffer). */
static const char *shown(const rd *r, const char *at, char *b) {
  if (at >= r->end) {
    return "the end";
  }
  unsigned char c = (unsigned char)*at;
  snprintf(b, 16, c >= 0x20 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
  return b;
}

static void skip_ws(rd *r) {
  while (r->p < r->end &&
         (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) {
    r->p++;
  }
}

static tf_code value(rd *r, tf__json *v, int depth);

static int hex4(const char *p) {
  int x = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) {
      return -1;
    }
    x = x * 16 + d;
  }
  return x;
}

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* A \uXXXX escape at r->p (past the 'u'), a surrogate pair joined. */
static tf_code unicode_escape(rd *r, const char *at, uint32_t *cp) {
  int hi = r->end - r->p >= 4 ? hex4(r->p) : -1;
  if (hi < 0) {
    return bad(r, at, "expected 4 hex digits after '\\u'");
  }
  r->p += 4;
  if (hi >= 0xdc00 && hi <= 0xdfff) {
    return bad(r, at, "lone low surrogate \\u%04x", hi);
  }
  if (hi >= 0xd800 && hi <= 0xdbff) {
    int lo = r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u'
                 ? hex4(r->p + 2) : -1;
    if (lo < 0xdc00 || lo > 0xdfff) {
      return bad(r, at, "high surrogate \\u%04x without a low one after it",
                 hi);
    }
    r->p += 6;
    *cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
    return TF_OK;
  }
  if (hi == 0) {
    return bad(r, at, "\\u0000 (a NUL character) is not supported");
  }
  *cp = (uint32_t)hi;
  return TF_OK;
}

/* A string at r->p ('"'); *out malloc'd. */
static tf_code string(rd *r, char **out) {
  const char *open = r->p++;
  char *o = tf__xmalloc((size_t)(r->end - r->p) * 2 + 1), b[16];
  size_t n = 0;
  tf_code code = TF_OK;
  while (code == TF_OK) {
    if (r->p >= r->end) {
      code = bad(r, open, "string not closed");
      break;
    }
    const char *at = r->p;
    char c = *r->p++;
    if (c == '"') {
      break;
    }
    if ((unsigned char)c < 0x20) {
      code = bad(r, at, "%s in a string (control characters must be "
                 "escaped)", shown(r, at, b));
    } else if (c != '\\') {
      o[n++] = c;
    } else if (r->p >= r->end) {
      code = bad(r, open, "string not closed");
    } else {
      char e = *r->p++;
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      const char *k = strchr(from, e);
      uint32_t cp = 0;
      if (e == 'u') {
        code = unicode_escape(r, at, &cp);
        n += code == TF_OK ? put_utf8(o + n, cp) : 0;
      } else if (e != '\0' && k != NULL) {
        o[n++] = to[k - from];
      } else {
        code = bad(r, at, "unknown escape '\\%c'", e);
      }
    }
  }
  o[n] = '\0';
  if (code != TF_OK) {
    free(o);
    return code;
  }
  *out = o;
  return TF_OK;
}

/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static tf_code number(rd *r, tf__json *v) {
  const char *s = r->p, *p = r->p;
  char b[16];
  p += p < r->end && *p == '-';
  const char *int0 = p;
#define DIGITS() while (p < r->end && *p >= '0' && *p <= '9') p++
  DIGITS();
  if (p == int0) {
    return bad(r, int0, "expected a digit, got %s", shown(r, p, b));
  }
  if (*int0 == '0' && p - int0 > 1) {
    return bad(r, int0, "a number may not start with 0");
  }
  if (p < r->end && *p == '.') {
    const char *f = ++p;
    DIGITS();
    if (p == f) {
      return bad(r, p, "expected a digit after '.', got %s", shown(r, p, b));
    }
  }
  if (p < r->end && (*p == 'e' || *p == 'E')) {
    p++;
    p += p < r->end && (*p == '+' || *p == '-');
    const char *e = p;
    DIGITS();
    if (p == e) {
      return bad(r, p, "expected a digit in the exponent, got %s",
                 shown(r, p, b));
    }
  }
#undef DIGITS
  v->type = TF__JSON_NUMBER;
  v->text = tf__xstrndup(s, (size_t)(p - s));
  r->p = p;
  return TF_OK;
}

/* The members of an array ('[') or object ('{') at r->p. */
static tf_code container(rd *r, tf__json *v, int depth) {
  char b[16];
  bool obj = *r->p == '{';
  char close = obj ? '}' : ']';
  v->type = obj ? TF__JSON_OBJECT : TF__JSON_ARRAY;
  if (depth >= TF__JSON_DEPTH) {
    return bad(r, r->p, "nested deeper than %d", TF__JSON_DEPTH);
  }
  r->p++;
  skip_ws(r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    return TF_OK;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(r);
    if (obj) {
      const char *at = r->p;
      if (r->p >= r->end || *r->p != '"') {
        return bad(r, r->p, "expected a key in quotes, got %s",
                   shown(r, r->p, b));
      }
      TF_TRY(string(r, &key));
      if (tf__json_get(v, key) != NULL) {
        tf_code c = bad(r, at, "key \"%.80s\" appears twice", key);
        free(key);
        return c;
      }
      skip_ws(r);
      if (r->p >= r->end || *r->p != ':') {
        free(key);
        return bad(r, r->p, "expected ':' after the key, got %s",
                   shown(r, r->p, b));
      }
      r->p++;
    }
    v->items = tf__xrealloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
    v->keys = tf__xrealloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
    memset(&v->items[v->n], 0, sizeof *v->items);
    v->keys[v->n++] = key;
    TF_TRY(value(r, &v->items[v->n - 1], depth + 1));
    skip_ws(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return TF_OK;
    }
    return bad(r, r->p, "expected ',' or '%c', got %s", close,
               shown(r, r->p, b));
  }
}

static tf_code value(rd *r, tf__json *v, int depth) {
  static const char *const words[] = {"null", "true", "false"};
  char b[16];
  skip_ws(r);
  v->pos = (int)(r->p - r->s) + 1;
  if (r->p >= r->end) {
    return bad(r, r->p, "expected a value, got the end");
  }
  char c = *r->p;
  if (c == '{' || c == '[') {
    return container(r, v, depth);
  }
  if (c == '"') {
    v->type = TF__JSON_STRING;
    return string(r, &v->text);
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    return number(r, v);
  }
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(words[i]);
    if ((size_t)(r->end - r->p) >= l && memcmp(r->p, words[i], l) == 0) {
      v->type = i == 0 ? TF__JSON_NULL : TF__JSON_BOOL;
      v->b = i == 1;
      r->p += l;
      return TF_OK;
    }
  }
  return bad(r, r->p, "expected a value (object, array, string, number, "
             "true, false or null), got %s", shown(r, r->p, b));
}

tf_code tf__json_parse(const char *text, size_t len, const char *what,
                       tf__json **out, tf_status *st) {
  char b[16];
  rd r = {text, text + len, what, text, st};
  tf__json *v = tf__xcalloc(1, sizeof *v);
  tf_code code = value(&r, v, 0);
  skip_ws(&r);
  if (code == TF_OK && r.p < r.end) {
    code = bad(&r, r.p, "unexpected %s after the value", shown(&r, r.p, b));
  }
  if (code != TF_OK) {
    tf__json_free(v);
    *out = NULL;
    return code;
  }
  *out = v;
  return TF_OK;
}

static void fini(tf__json *j) {
  for (int i = 0; i < j->n; i++) {
    fini(&j->items[i]);
    free(j->keys[i]);
  }
  free(j->items);
  free(j->keys);
  free(j->text);
}

void tf__json_free(tf__json *j) {
  if (j != NULL) {
    fini(j);
    free(j);
  }
}

const tf__json *tf__json_get(const tf__json *o, const char *key) {
  for (int i = 0; o != NULL && o->type == TF__JSON_OBJECT && i < o->n; i++) {
    if (o->keys[i] != NULL && strcmp(o->keys[i], key) == 0) {
      return &o->items[i];
    }
  }
  return NULL;
}

const char *tf__json_type_name(tf__json_type t) {
  static const char *const names[] = {"null", "a boolean", "a number",
                                      "a string", "an array", "an object"};
  return names[t];
}
