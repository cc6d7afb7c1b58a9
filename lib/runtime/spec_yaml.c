/* spec_yaml.c: typed reading of a YAML spec file (spec_yaml.h): the
 * document loader with positioned syntax errors, and one reader per value
 * type that checks the node and names file:line:column, the key path and
 * what was expected when it is wrong. Numbers and booleans follow YAML's
 * core schema through the scalar helpers of lib/core/serialize. */
#include "lib/runtime/spec_yaml.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/graph_yaml.h"

tf_code tf__spec_err(tf__spec *c, const yaml_node_t *n, const char *path,
                     const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool has_path = path != NULL && path[0] != '\0';
  return tf_status_set(c->st, TF_INVALID_ARGUMENT, "%s:%zu:%zu: %s%s%s",
                       c->file, n->start_mark.line + 1,
                       n->start_mark.column + 1, has_path ? path : "",
                       has_path ? ": " : "", msg);
}

yaml_node_t *tf__spec_node(tf__spec *c, int i) {
  return yaml_document_get_node(&c->doc, i);
}

yaml_node_t *tf__spec_root(tf__spec *c) {
  return yaml_document_get_root_node(&c->doc);
}

bool tf__spec_is_null(const yaml_node_t *n) {
  if (n->type != YAML_SCALAR_NODE ||
      n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
    return false;
  }
  return tf__yaml_is_null((const char *)n->data.scalar.value,
                          n->data.scalar.length);
}

const char *tf__spec_shown(const yaml_node_t *n, char buf[80]) {
  if (n->type == YAML_SEQUENCE_NODE) {
    return "a sequence";
  }
  if (n->type == YAML_MAPPING_NODE) {
    return "a mapping";
  }
  if (tf__spec_is_null(n)) {
    return "nothing";
  }
  size_t len = n->data.scalar.length, k = 0;
  buf[k++] = '\'';
  for (size_t i = 0; i < len && i < 60; i++) {
    unsigned char ch = n->data.scalar.value[i];
    buf[k++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  if (len > 60) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k++] = '\'';
  buf[k] = '\0';
  return buf;
}

/* A scalar that is not null, or an error naming expected. */
static tf_code scalar(tf__spec *c, const yaml_node_t *n, const char *path,
                      const char *expected) {
  char b[80];
  if (n->type != YAML_SCALAR_NODE || tf__spec_is_null(n)) {
    return tf__spec_err(c, n, path, "expected %s, got %s", expected,
                        tf__spec_shown(n, b));
  }
  return TF_OK;
}

tf_code tf__spec_text(tf__spec *c, const yaml_node_t *n, const char *path,
                      const char *expected, size_t max_len, const char **out) {
  TF_TRY(scalar(c, n, path, expected));
  const char *v = (const char *)n->data.scalar.value;
  size_t len = n->data.scalar.length;
  if (strlen(v) != len) {
    return tf__spec_err(c, n, path, "expected %s, got text with a NUL "
                        "character", expected);
  }
  if (len == 0 || len > max_len) {
    return tf__spec_err(c, n, path, "expected %s of 1..%zu bytes, got %zu "
                        "bytes", expected, max_len, len);
  }
  *out = v;
  return TF_OK;
}

tf_code tf__spec_int(tf__spec *c, const yaml_node_t *n, const char *path,
                     int64_t lo, int64_t hi, const char *unit, int64_t *out) {
  char b[80];
  const char *v = NULL;
  bool ok = n->type == YAML_SCALAR_NODE && !tf__spec_is_null(n);
  if (ok) {
    v = (const char *)n->data.scalar.value;
    const char *d = v + (v[0] == '-' || v[0] == '+');
    ok = *d != '\0' && strspn(d, "0123456789") == strlen(d) &&
         strlen(d) <= 18 && strlen(v) == n->data.scalar.length;
  }
  long long x = ok ? strtoll(v, NULL, 10) : 0;
  if (!ok || x < lo || x > hi) {
    return tf__spec_err(c, n, path, "expected an integer in %lld..%lld%s, "
                        "got %s", (long long)lo, (long long)hi,
                        unit ? unit : "", tf__spec_shown(n, b));
  }
  *out = x;
  return TF_OK;
}

tf_code tf__spec_float(tf__spec *c, const yaml_node_t *n, const char *path,
                       double lo, bool lo_open, double hi, bool hi_open,
                       double *out) {
  char b[80];
  double x = 0;
  bool ok = n->type == YAML_SCALAR_NODE && !tf__spec_is_null(n) &&
            tf__yaml_parse_float((const char *)n->data.scalar.value,
                                 n->data.scalar.length, &x) &&
            isfinite(x);
  bool in = ok && (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
  if (!in) {
    return tf__spec_err(c, n, path, "expected a number in %s%g, %g%s, got %s",
                        lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]",
                        tf__spec_shown(n, b));
  }
  *out = x;
  return TF_OK;
}

tf_code tf__spec_bool(tf__spec *c, const yaml_node_t *n, const char *path,
                      bool *out) {
  char b[80];
  bool ok = n->type == YAML_SCALAR_NODE &&
            n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            tf__yaml_parse_bool((const char *)n->data.scalar.value,
                                n->data.scalar.length, out);
  if (!ok) {
    return tf__spec_err(c, n, path, "expected true or false, got %s",
                        tf__spec_shown(n, b));
  }
  return TF_OK;
}

/* "a, b or c" into buf. */
static void list_names(const char *const *names, int count, const char *last,
                       char *buf, size_t size) {
  buf[0] = '\0';
  for (int i = 0; i < count; i++) {
    size_t l = strlen(buf);
    const char *sep = i == 0 ? "" : i == count - 1 ? last : ", ";
    snprintf(buf + l, size - l, "%s%s", sep, names[i]);
  }
}

tf_code tf__spec_enum(tf__spec *c, const yaml_node_t *n, const char *path,
                      const char *const *names, int count, int *out) {
  char list[512], b[80];
  list_names(names, count, " or ", list, sizeof list);
  bool ok = n->type == YAML_SCALAR_NODE && !tf__spec_is_null(n);
  for (int k = 0; ok && k < count; k++) {
    if (n->data.scalar.length == strlen(names[k]) &&
        memcmp(n->data.scalar.value, names[k], n->data.scalar.length) == 0) {
      *out = k;
      return TF_OK;
    }
  }
  return tf__spec_err(c, n, path, "expected %s, got %s", list,
                      tf__spec_shown(n, b));
}

tf_code tf__spec_fields(tf__spec *c, const yaml_node_t *m, const char *path,
                        const char *const *names, int count,
                        yaml_node_t **out) {
  char b[80], where[160];
  for (int k = 0; k < count; k++) {
    out[k] = NULL;
  }
  if (tf__spec_is_null(m)) {
    return TF_OK;
  }
  if (m->type != YAML_MAPPING_NODE) {
    return tf__spec_err(c, m, path, "expected a mapping, got %s",
                        tf__spec_shown(m, b));
  }
  bool top = path == NULL || path[0] == '\0';
  snprintf(where, sizeof where, top ? "the top level" : "'%s'",
           top ? "" : path);
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
       p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *key = tf__spec_node(c, p->key);
    const char *name = "";
    TF_TRY(tf__spec_text(c, key, path, "a key name", 255, &name));
    int k = 0;
    while (k < count && strcmp(names[k], name) != 0) {
      k++;
    }
    if (k == count) {
      char list[512];
      list_names(names, count, ", ", list, sizeof list);
      return tf__spec_err(c, key, path, "unknown key %s in %s (expected %s)",
                          tf__spec_shown(key, b), where, list);
    }
    if (out[k] != NULL) {
      return tf__spec_err(c, key, path, "key '%s' appears twice in %s", name,
                          where);
    }
    out[k] = tf__spec_node(c, p->value);
  }
  return TF_OK;
}

tf_code tf__spec_seq(tf__spec *c, const yaml_node_t *n, const char *path,
                     int min, int max, bool scalar_ok, int *count) {
  char b[80];
  int k;
  if (n->type == YAML_SEQUENCE_NODE) {
    k = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
  } else if (scalar_ok && n->type == YAML_SCALAR_NODE && !tf__spec_is_null(n)) {
    k = 1;
  } else {
    return tf__spec_err(c, n, path, "expected a list%s, got %s",
                        scalar_ok ? " (or one item)" : "",
                        tf__spec_shown(n, b));
  }
  if (k < min || k > max) {
    return tf__spec_err(c, n, path, "expected %d..%d items, got %d", min, max,
                        k);
  }
  *count = k;
  return TF_OK;
}

yaml_node_t *tf__spec_item(tf__spec *c, yaml_node_t *n, int i) {
  if (n->type != YAML_SEQUENCE_NODE) {
    return n;
  }
  return tf__spec_node(c, n->data.sequence.items.start[i]);
}

/* ---- loading ------------------------------------------------------------- */

/* The 1-based line and column of byte offset off (columns count UTF-8
 * characters), for libyaml's reader errors, which carry an offset only. */
static void offset_position(const char *text, size_t len, size_t off,
                            size_t *line, size_t *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off && i < len; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch == '\n') {
      (*line)++;
      *col = 1;
    } else if ((ch & 0xc0) != 0x80) {
      (*col)++;
    }
  }
}

/* The parser's error: "file:L:C: YAML syntax error: <problem> (<context>)". */
static tf_code syntax_error(const yaml_parser_t *p, const char *file,
                            const char *text, size_t len, tf_status *st) {
  size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
  if (p->error == YAML_READER_ERROR) {
    offset_position(text, len, p->problem_offset, &line, &col);
  }
  return tf_status_set(
      st, p->error == YAML_MEMORY_ERROR ? TF_RESOURCE_EXHAUSTED
                                        : TF_INVALID_ARGUMENT,
      "%s:%zu:%zu: YAML syntax error: %s%s%s%s", file, line, col,
      p->problem ? p->problem : "cannot parse", p->context ? " (" : "",
      p->context ? p->context : "", p->context ? ")" : "");
}

/* Loads the second document slot: anything there is an error. */
static tf_code no_second_document(yaml_parser_t *parser, const char *file,
                                  const char *text, size_t len,
                                  tf_status *st) {
  yaml_document_t next;
  if (!yaml_parser_load(parser, &next)) {
    return syntax_error(parser, file, text, len, st);
  }
  tf_code code = TF_OK;
  if (yaml_document_get_root_node(&next) != NULL) {
    code = tf_status_set(st, TF_INVALID_ARGUMENT, "%s:%zu:%zu: a second YAML "
                         "document (expected one)", file,
                         next.start_mark.line + 1, next.start_mark.column + 1);
  }
  yaml_document_delete(&next);
  return code;
}

tf_code tf__spec_load(tf__spec *c, const char *text, size_t len,
                      const char *file, size_t max_len, tf_status *st) {
  memset(c, 0, sizeof *c);
  c->file = file;
  c->st = st;
  if (len > max_len) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %zu bytes, more than "
                         "the %zu a spec may have", file, len, max_len);
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: cannot start the "
                         "YAML parser", file);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &c->doc)) {
    tf_code code = syntax_error(&parser, file, text, len, st);
    yaml_parser_delete(&parser);
    return code;
  }
  tf_code code = no_second_document(&parser, file, text, len, st);
  yaml_parser_delete(&parser);
  if (code != TF_OK) {
    yaml_document_delete(&c->doc);
    return code;
  }
  c->loaded = true;
  return TF_OK;
}

void tf__spec_fini(tf__spec *c) {
  if (c != NULL && c->loaded) {
    yaml_document_delete(&c->doc);
    c->loaded = false;
  }
}
