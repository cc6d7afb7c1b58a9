/* graph_yaml_read.c: reads the YAML graph form (schema: graph_yaml.c).
 *
 * Two passes: libyaml's event parser builds a small tree of scalars,
 * sequences and mappings in an arena (nesting limited, aliases refused, one
 * document only), then the tree is interpreted into tf_node_defs whose
 * attrs are typed by tag, by the op's declaration of the attr, or by
 * YAML's core schema, and handed to
 * tf_graph_import. Every error names the line and column it came from:
 * libyaml's reader (encoding) errors, which carry a byte offset only, are
 * placed by counting characters up to it, and import's errors, which name
 * a node, get the position of that node's mapping. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/core/serialize/graph_yaml.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

#define YAML_MAX_DEPTH 32

typedef enum yn_kind { YN_SCALAR, YN_SEQ, YN_MAP } yn_kind;

/* A parsed YAML node. Maps keep n pairs as items[2i] (key), items[2i+1]. */
typedef struct ynode {
  yn_kind kind;
  const char *tag; /* NULL when untagged */
  bool plain;      /* scalar written without quotes or block style */
  const char *text;
  size_t len;
  struct ynode *items;
  size_t n;
  size_t line, col; /* 1-based */
} ynode;

/* ---- pass 1: events to a tree -------------------------------------------- */

typedef struct reader {
  yaml_parser_t parser;
  const unsigned char *text; /* the input, for positions of reader errors */
  size_t len;
  tf__arena *arena;
  tf_status *st;
} reader;

/* The character at s[i] (of n bytes; utf16: 0, or 1 for little-endian and
 * 2 for big-endian): its code point (0 where only breaks matter) and its
 * width in bytes, clipped to the input. */
static size_t char_at(const unsigned char *s, size_t n, size_t i, int utf16,
                      uint32_t *cp) {
  size_t w;
  if (utf16) {
    if (i + 1 >= n) {
      *cp = 0;
      return n - i;
    }
    *cp = utf16 == 1 ? s[i] | (uint32_t)s[i + 1] << 8
                     : s[i + 1] | (uint32_t)s[i] << 8;
    w = (*cp & 0xfc00) == 0xd800 ? 4 : 2;
  } else {
    unsigned char c = s[i];
    w = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
    *cp = c < 0x80 ? c : 0;
    if (i + 1 < n && c == 0xc2 && s[i + 1] == 0x85) {
      *cp = 0x85; /* NEL */
    } else if (i + 2 < n && c == 0xe2 && s[i + 1] == 0x80 &&
               (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
      *cp = 0x2028; /* LS, PS */
    }
  }
  return TF_MIN(w, n - i);
}

/* The 1-based line and column of byte offset off in the input, counted as
 * libyaml counts its marks: after any byte order mark, in characters, with
 * CR LF, CR, LF, NEL, LS and PS as line breaks. For libyaml's reader
 * (encoding) errors, which report a byte offset only. */
static void offset_position(const unsigned char *s, size_t n, size_t off,
                            size_t *line, size_t *col) {
  int utf16 = 0;
  size_t i = 0;
  if (n >= 2 && (s[0] == 0xff || s[0] == 0xfe) && s[1] == (s[0] ^ 1)) {
    utf16 = s[0] == 0xff ? 1 : 2;
    i = 2;
  } else if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
    i = 3;
  }
  *line = 1;
  *col = 1;
  off = TF_MIN(off, n);
  while (i < off) {
    uint32_t cp, next;
    size_t w = char_at(s, n, i, utf16, &cp);
    if (i + w > off) {
      break; /* off is inside this character */
    }
    i += w;
    if (cp == '\r' && i < n) {
      char_at(s, n, i, utf16, &next);
      if (next == '\n') {
        continue; /* CR LF: the LF breaks the line */
      }
    }
    bool brk = cp == '\n' || cp == '\r' || cp == 0x85 || cp == 0x2028 ||
               cp == 0x2029;
    *line = brk ? *line + 1 : *line;
    *col = brk ? 1 : *col + 1;
  }
}

static tf_code r_next(reader *r, yaml_event_t *ev) {
  if (yaml_parser_parse(&r->parser, ev)) {
    return TF_OK;
  }
  const yaml_parser_t *p = &r->parser;
  if (p->error == YAML_READER_ERROR) {
    const char *problem = p->problem ? p->problem : "cannot decode the text";
    char value[32] = ""; /* the bad octet or character, when given */
    if (p->problem_value >= 0) {
      snprintf(value, sizeof value,
               strstr(problem, "octet") ? "0x%02x at " : "U+%04X at ",
               (unsigned)p->problem_value);
    }
    size_t line, col;
    offset_position(r->text, r->len, p->problem_offset, &line, &col);
    return tf_status_set(r->st, TF_INVALID_ARGUMENT,
                         "graph yaml: line %zu column %zu: %s (%sbyte offset "
                         "%zu)", line, col, problem, value, p->problem_offset);
  }
  return tf_status_set(
      r->st,
      p->error == YAML_MEMORY_ERROR ? TF_RESOURCE_EXHAUSTED
                                    : TF_INVALID_ARGUMENT,
      "graph yaml: line %zu column %zu: %s%s%s%s", p->problem_mark.line + 1,
      p->problem_mark.column + 1, p->problem ? p->problem : "syntax error",
      p->context ? " (" : "", p->context ? p->context : "",
      p->context ? ")" : "");
}

static tf_code r_error(reader *r, const yaml_event_t *ev, const char *msg) {
  return tf_status_set(r->st, TF_INVALID_ARGUMENT,
                       "graph yaml: line %zu column %zu: %s",
                       ev->start_mark.line + 1, ev->start_mark.column + 1,
                       msg);
}

static const char *r_tag(reader *r, const yaml_char_t *tag) {
  return tag ? tf__arena_strndup(r->arena, (const char *)tag,
                                 strlen((const char *)tag))
             : NULL;
}

static tf_code r_node(reader *r, yaml_event_t *ev, int depth, ynode *out);

/* Reads children until the matching end event. */
static tf_code r_children(reader *r, yaml_event_type_t end, int depth,
                          ynode *out) {
  ynode *items = NULL;
  size_t n = 0, cap = 0;
  tf_code c = TF_OK;
  for (;;) {
    yaml_event_t ev;
    c = r_next(r, &ev);
    if (c != TF_OK) {
      break;
    }
    if (ev.type == end) {
      yaml_event_delete(&ev);
      break;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      items = tf__xrealloc(items, cap * sizeof *items);
    }
    c = r_node(r, &ev, depth + 1, &items[n]);
    if (c != TF_OK) {
      break;
    }
    n++;
  }
  if (c == TF_OK) {
    out->items = tf__arena_calloc(r->arena, n, sizeof *items);
    if (n > 0) {
      memcpy(out->items, items, n * sizeof *items);
    }
    out->n = out->kind == YN_MAP ? n / 2 : n;
  }
  free(items);
  return c;
}

/* Builds out from ev and, for collections, the events that follow; deletes
 * ev in every case. */
static tf_code r_node(reader *r, yaml_event_t *ev, int depth, ynode *out) {
  memset(out, 0, sizeof *out);
  out->line = ev->start_mark.line + 1;
  out->col = ev->start_mark.column + 1;
  tf_code c = TF_OK;
  yaml_event_type_t end = YAML_NO_EVENT;
  if (ev->type == YAML_SCALAR_EVENT) {
    out->kind = YN_SCALAR;
    out->tag = r_tag(r, ev->data.scalar.tag);
    out->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    out->len = ev->data.scalar.length;
    out->text = tf__arena_strndup(r->arena, (const char *)ev->data.scalar.value,
                                  out->len);
  } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
    out->kind = YN_SEQ;
    out->tag = r_tag(r, ev->data.sequence_start.tag);
    end = YAML_SEQUENCE_END_EVENT;
  } else if (ev->type == YAML_MAPPING_START_EVENT) {
    out->kind = YN_MAP;
    out->tag = r_tag(r, ev->data.mapping_start.tag);
    end = YAML_MAPPING_END_EVENT;
  } else {
    c = r_error(r, ev, ev->type == YAML_ALIAS_EVENT
                           ? "aliases (*name) are not supported"
                           : "unexpected YAML event");
  }
  if (c == TF_OK && end != YAML_NO_EVENT && depth >= YAML_MAX_DEPTH) {
    c = r_error(r, ev, "nesting is too deep");
  }
  yaml_event_delete(ev);
  if (c == TF_OK && end != YAML_NO_EVENT) {
    c = r_children(r, end, depth, out);
  }
  return c;
}

/* Reads the one document of the stream into root. */
static tf_code r_document(reader *r, ynode *root) {
  yaml_event_t ev;
  TF_TRY(r_next(r, &ev)); /* stream start */
  yaml_event_delete(&ev);
  TF_TRY(r_next(r, &ev));
  if (ev.type != YAML_DOCUMENT_START_EVENT) {
    tf_code c = r_error(r, &ev, "the text holds no YAML document");
    yaml_event_delete(&ev);
    return c;
  }
  yaml_event_delete(&ev);
  TF_TRY(r_next(r, &ev));
  TF_TRY(r_node(r, &ev, 0, root));
  TF_TRY(r_next(r, &ev)); /* document end */
  yaml_event_delete(&ev);
  TF_TRY(r_next(r, &ev));
  tf_code c = ev.type == YAML_STREAM_END_EVENT
                  ? TF_OK
                  : r_error(r, &ev, "more than one YAML document");
  yaml_event_delete(&ev);
  return c;
}

/* ---- pass 2: tree to node defs ------------------------------------------- */

typedef struct dec {
  tf__arena *arena;
  tf_status *st;
  char where[160];
  tf__strmap nodes; /* node name -> its node_pos, for import errors */
} dec;

/* Where a node's mapping starts, and its op. */
typedef struct node_pos {
  const ynode *map;
  const char *op;
} node_pos;

__attribute__((format(printf, 3, 4))) static tf_code
derr(dec *d, const ynode *n, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(d->st, TF_INVALID_ARGUMENT,
                       "graph yaml: line %zu column %zu: %s: %s", n->line,
                       n->col, d->where, msg);
}

static const char *kind_name(const ynode *n) {
  return n->kind == YN_SCALAR ? "a scalar"
         : n->kind == YN_SEQ  ? "a sequence"
                              : "a mapping";
}

/* A plain null scalar ("", "~", "null"); tagged_ok also accepts one with a
 * tag ("!shape" or "!list(int)" with nothing after it). */
static bool null_scalar(const ynode *n, bool tagged_ok) {
  return n->kind == YN_SCALAR && (tagged_ok || n->tag == NULL) && n->plain &&
         tf__yaml_is_null(n->text, n->len);
}

static bool is_null(const ynode *n) { return null_scalar(n, false); }

/* Picks the values of the named keys out of a mapping; unknown or repeated
 * keys are errors. */
static tf_code fields(dec *d, const ynode *m, const char *const *names,
                      int count, const ynode **out) {
  if (m->kind != YN_MAP) {
    return derr(d, m, "expected a mapping, got %s", kind_name(m));
  }
  for (int k = 0; k < count; k++) {
    out[k] = NULL;
  }
  for (size_t i = 0; i < m->n; i++) {
    const ynode *key = &m->items[2 * i];
    int k = 0;
    while (k < count && !(key->kind == YN_SCALAR &&
                          key->len == strlen(names[k]) &&
                          memcmp(key->text, names[k], key->len) == 0)) {
      k++;
    }
    if (k == count || out[k] != NULL) {
      return derr(d, key, "%s key '%.60s'", k == count ? "unknown" : "repeated",
                  key->kind == YN_SCALAR ? key->text : "(collection)");
    }
    out[k] = &m->items[2 * i + 1];
  }
  return TF_OK;
}

/* A scalar's text as a NUL-free string. */
static tf_code text_of(dec *d, const ynode *n, const char *what,
                       const char **out) {
  if (n->kind != YN_SCALAR) {
    return derr(d, n, "%s must be a scalar, got %s", what, kind_name(n));
  }
  if (memchr(n->text, '\0', n->len) != NULL) {
    return derr(d, n, "%s contains a NUL character", what);
  }
  *out = n->text;
  return TF_OK;
}

/* The bytes of a string scalar, decoding !!binary. */
static tf_code bytes_of(dec *d, const ynode *n, const char **s, size_t *len) {
  if (n->kind != YN_SCALAR) {
    return derr(d, n, "expected a string, got %s", kind_name(n));
  }
  if (n->tag == NULL || strcmp(n->tag, TF_YAML_TAG_BINARY) != 0) {
    *s = n->text;
    *len = n->len;
    return TF_OK;
  }
  uint8_t *buf = tf__arena_calloc(d->arena, n->len / 4 * 3 + 4, 1);
  if (!tf__base64_decode(n->text, n->len, buf, len)) {
    return derr(d, n, "!!binary value is not valid base64");
  }
  *s = (const char *)buf;
  return TF_OK;
}

/* The attr type a tag names: "!int", "!list(int)", "!type", "!shape",
 * "!tensor", "!!str"/"!!int"/"!!float"/"!!bool", "!!binary" and "!". */
static bool tag_type(const char *tag, tf_attr_type *t, bool *is_list) {
  static const struct { const char *name; tf_attr_type t; } core[] = {
      {"str", TF_ATTR_STRING}, {"binary", TF_ATTR_STRING},
      {"int", TF_ATTR_INT},    {"float", TF_ATTR_FLOAT},
      {"bool", TF_ATTR_BOOL},
  };
  size_t plen = strlen(TF_YAML_CORE_PREFIX);
  *is_list = false;
  if (strcmp(tag, "!") == 0) {
    *t = TF_ATTR_STRING;
    return true;
  }
  if (strncmp(tag, TF_YAML_CORE_PREFIX, plen) == 0) {
    for (size_t i = 0; i < TF_ARRAY_LEN(core); i++) {
      if (strcmp(tag + plen, core[i].name) == 0) {
        *t = core[i].t;
        return true;
      }
    }
    return false;
  }
  return tag[0] == '!' && tf__attr_type_parse(tag + 1, strlen(tag + 1), t,
                                              is_list);
}

/* The type an untagged (or scalar-tagged) value reads as; false if it has
 * none (null, collections without a tag). */
static bool natural_type(const ynode *n, tf_attr_type *t) {
  bool is_list, b;
  int64_t i;
  double f;
  if (n->tag != NULL) {
    return tag_type(n->tag, t, &is_list) && !is_list;
  }
  if (n->kind != YN_SCALAR) {
    return false;
  }
  if (!n->plain) {
    *t = TF_ATTR_STRING;
  } else if (tf__yaml_parse_bool(n->text, n->len, &b)) {
    *t = TF_ATTR_BOOL;
  } else if (tf__yaml_parse_int(n->text, n->len, &i)) {
    *t = TF_ATTR_INT;
  } else if (tf__yaml_parse_float(n->text, n->len, &f)) {
    *t = TF_ATTR_FLOAT;
  } else if (tf__yaml_is_null(n->text, n->len)) {
    return false;
  } else {
    *t = TF_ATTR_STRING;
  }
  return true;
}

static tf_code y_tensor(dec *d, const ynode *n, tf_tensor **out);

static tf_code y_shape(dec *d, const ynode *n, bool allow_unknown,
                       tf_shape *s) {
  memset(s, 0, sizeof *s);
  if (allow_unknown && n->kind == YN_SCALAR &&
      (null_scalar(n, true) || (n->len == strlen(TF_YAML_UNKNOWN_SHAPE) &&
                      memcmp(n->text, TF_YAML_UNKNOWN_SHAPE, n->len) == 0))) {
    s->rank = TF_UNKNOWN_RANK;
    return TF_OK;
  }
  if (n->kind != YN_SEQ || n->n > TF_MAX_RANK) {
    return derr(d, n, "a shape is a sequence of at most %d ints%s",
                TF_MAX_RANK, allow_unknown ? " or 'unknown'" : "");
  }
  s->rank = (int32_t)n->n;
  for (size_t i = 0; i < n->n; i++) {
    const ynode *e = &n->items[i];
    if (e->kind != YN_SCALAR ||
        !tf__yaml_parse_int(e->text, e->len, &s->dims[i]) ||
        s->dims[i] < (allow_unknown ? TF_UNKNOWN_DIM : 0)) {
      return derr(d, e, "shape dim %zu must be an int >= %d", i,
                  allow_unknown ? -1 : 0);
    }
  }
  return TF_OK;
}

/* One attr value of type t from n into p (a slot of the C type). */
static tf_code y_elem(dec *d, tf_attr_type t, const ynode *n, void *p) {
  tf_attr_type tt;
  bool is_list;
  if (n->tag != NULL && (!tag_type(n->tag, &tt, &is_list) || is_list ||
                         (tt != t && !(t == TF_ATTR_FLOAT && tt == TF_ATTR_INT)))) {
    return derr(d, n, "tag %.40s does not fit a %s value", n->tag,
                tf_attr_type_name(t, false));
  }
  if (t != TF_ATTR_SHAPE && t != TF_ATTR_TENSOR && n->kind != YN_SCALAR) {
    return derr(d, n, "a %s value must be a scalar, got %s",
                tf_attr_type_name(t, false), kind_name(n));
  }
  const char *s = NULL;
  size_t len;
  switch (t) {
  case TF_ATTR_INT:
    return tf__yaml_parse_int(n->text, n->len, p)
               ? TF_OK : derr(d, n, "'%.40s' is not an int64", n->text);
  case TF_ATTR_FLOAT:
    return tf__yaml_parse_float(n->text, n->len, p)
               ? TF_OK : derr(d, n, "'%.40s' is not a float", n->text);
  case TF_ATTR_BOOL:
    return tf__yaml_parse_bool(n->text, n->len, p)
               ? TF_OK : derr(d, n, "'%.40s' is not true or false", n->text);
  case TF_ATTR_STRING:
    TF_TRY(bytes_of(d, n, &s, &len));
    if (memchr(s, '\0', len) != NULL) {
      return derr(d, n, "string attrs cannot hold NUL bytes");
    }
    *(const char **)p = tf__arena_strndup(d->arena, s, len);
    return TF_OK;
  case TF_ATTR_TYPE:
    TF_TRY(text_of(d, n, "a type", &s));
    return tf_dtype_from_name(s, p)
               ? TF_OK : derr(d, n, "'%.40s' is not a dtype", s);
  case TF_ATTR_SHAPE: return y_shape(d, n, true, p);
  case TF_ATTR_TENSOR: return y_tensor(d, n, p);
  default: return derr(d, n, "attr type %d", (int)t);
  }
}

/* The element type of an untagged sequence: all elements' natural type,
 * ints widened to float when floats are present. */
static tf_code infer_list_type(dec *d, const ynode *n, tf_attr_type *t) {
  if (n->n == 0) {
    return derr(d, n, "an empty list needs a tag such as !list(int) []");
  }
  for (size_t i = 0; i < n->n; i++) {
    tf_attr_type e;
    if (!natural_type(&n->items[i], &e)) {
      return derr(d, &n->items[i], "cannot tell this element's type; tag the "
                  "list, e.g. !list(shape)");
    }
    if (i > 0 && e != *t) {
      bool num = (e == TF_ATTR_INT || e == TF_ATTR_FLOAT) &&
                 (*t == TF_ATTR_INT || *t == TF_ATTR_FLOAT);
      if (!num) {
        return derr(d, &n->items[i], "list mixes %s and %s elements",
                    tf_attr_type_name(*t, false), tf_attr_type_name(e, false));
      }
      e = TF_ATTR_FLOAT;
    }
    *t = e;
  }
  return TF_OK;
}

static tf_code y_list(dec *d, const ynode *n, tf_attr_type t,
                      tf_attr_value *v) {
  if (null_scalar(n, true)) {
    return TF_OK; /* "!list(int)" with nothing after it: empty */
  }
  if (n->kind != YN_SEQ) {
    return derr(d, n, "a %s value must be a sequence", tf_attr_type_name(t, true));
  }
  if (n->n > INT32_MAX) {
    return derr(d, n, "list is too long");
  }
  size_t es = tf_attr_elem_size(t);
  char *arr = tf__arena_calloc(d->arena, n->n, es);
  for (size_t i = 0; i < n->n; i++) {
    TF_TRY(y_elem(d, t, &n->items[i], arr + i * es));
  }
  v->n = (int32_t)n->n;
  v->u.ints = (const int64_t *)arr;
  return TF_OK;
}

/* An attr value: typed by its tag, else by the op's declaration of the
 * attr (decl, may be NULL), else by YAML's core schema. */
static tf_code y_attr(dec *d, const ynode *n, const tf_attr_def *decl,
                      tf_attr_value *v) {
  memset(v, 0, sizeof *v);
  if (n->tag != NULL) {
    if (!tag_type(n->tag, &v->type, &v->is_list)) {
      return derr(d, n, "unknown tag %.60s", n->tag);
    }
  } else if (decl != NULL) {
    v->type = decl->type;
    v->is_list = decl->is_list;
  } else if (n->kind == YN_SEQ) {
    TF_TRY(infer_list_type(d, n, &v->type));
    v->is_list = true;
  } else if (!natural_type(n, &v->type)) {
    return derr(d, n, "%s has no attr type (tensors need !tensor, empty "
                "values a tag)", kind_name(n));
  }
  if (v->is_list) {
    return y_list(d, n, v->type, v);
  }
  return y_elem(d, v->type, n, &v->u);
}

/* ---- tensors ------------------------------------------------------------- */

static bool int_range(tf_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case TF_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
  case TF_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
  case TF_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
  case TF_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return true;
  case TF_UINT8: *lo = 0, *hi = UINT8_MAX; return true;
  case TF_UINT16: *lo = 0, *hi = UINT16_MAX; return true;
  case TF_UINT32: *lo = 0, *hi = UINT32_MAX; return true;
  default: return false;
  }
}

static void store_int(tf_dtype dt, void *p, int64_t v) {
  switch (dt) {
  case TF_INT8: *(int8_t *)p = (int8_t)v; break;
  case TF_INT16: *(int16_t *)p = (int16_t)v; break;
  case TF_INT32: *(int32_t *)p = (int32_t)v; break;
  case TF_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case TF_UINT16: *(uint16_t *)p = (uint16_t)v; break;
  case TF_UINT32: *(uint32_t *)p = (uint32_t)v; break;
  default: *(int64_t *)p = v; break;
  }
}

/* A number (or bool) element of dtype dt from scalar n into p. */
static tf_code y_number(dec *d, tf_dtype dt, const ynode *n, void *p) {
  const char *s = n->text;
  double f64;
  float f32;
  int64_t i, lo, hi;
  bool ok;
  switch (dt) {
  case TF_FLOAT64: ok = tf__yaml_parse_float(s, n->len, p); break;
  case TF_FLOAT32: ok = tf__yaml_parse_float32(s, n->len, p); break;
  case TF_FLOAT16:
    ok = tf__yaml_parse_float(s, n->len, &f64);
    *(tf_float16 *)p = tf_double_to_float16(f64);
    break;
  case TF_BFLOAT16:
    ok = tf__yaml_parse_float32(s, n->len, &f32);
    *(tf_bfloat16 *)p = tf_float_to_bfloat16(f32);
    break;
  case TF_BOOL: ok = tf__yaml_parse_bool(s, n->len, p); break;
  case TF_UINT64: ok = tf__yaml_parse_uint(s, n->len, p); break;
  default:
    ok = int_range(dt, &lo, &hi) && tf__yaml_parse_int(s, n->len, &i) &&
         i >= lo && i <= hi;
    if (ok) {
      store_int(dt, p, i);
    }
    break;
  }
  return ok ? TF_OK
            : derr(d, n, "'%.40s' is not a %s value", s, tf_dtype_name(dt));
}

static tf_code y_tensor_elem(dec *d, tf_tensor *t, int64_t i, const ynode *n) {
  char *p = (char *)t->data + (size_t)i * tf_dtype_size(t->dtype);
  if (t->dtype == TF_STRING) {
    const char *s;
    size_t len;
    TF_TRY(bytes_of(d, n, &s, &len));
    return tf_tensor_set_string(t, i, s, len, d->st);
  }
  if (n->tag != NULL) {
    return derr(d, n, "tensor elements take no tag");
  }
  if (t->dtype == TF_COMPLEX64) {
    if (n->kind != YN_SEQ || n->n != 2 || n->items[0].kind != YN_SCALAR ||
        n->items[1].kind != YN_SCALAR) {
      return derr(d, n, "a complex64 element is a pair [re, im]");
    }
    tf_complex64 *c = (tf_complex64 *)p;
    TF_TRY(y_number(d, TF_FLOAT32, &n->items[0], &c->re));
    return y_number(d, TF_FLOAT32, &n->items[1], &c->im);
  }
  if (n->kind != YN_SCALAR) {
    return derr(d, n, "a %s element must be a scalar",
                tf_dtype_name(t->dtype));
  }
  return y_number(d, t->dtype, n, p);
}

static tf_code y_tensor_values(dec *d, const ynode *n, tf_dtype dt,
                               const tf_shape *shape, int64_t count,
                               tf_tensor **out) {
  if (n->kind != YN_SEQ || n->n != (uint64_t)count) {
    return derr(d, n, "values must be a sequence of %lld elements%s",
                (long long)count, n->kind == YN_SEQ ? " (count differs)" : "");
  }
  TF_TRY(tf_tensor_new(dt, shape, out, d->st));
  for (int64_t i = 0; i < count; i++) {
    tf_code c = y_tensor_elem(d, *out, i, &n->items[i]);
    if (c != TF_OK) {
      tf_tensor_unref(*out);
      *out = NULL;
      return c;
    }
  }
  return TF_OK;
}

static tf_code y_tensor_data(dec *d, const ynode *n, tf_dtype dt,
                             const tf_shape *shape, size_t nbytes,
                             tf_tensor **out) {
  if (dt == TF_STRING) {
    return derr(d, n, "string tensors take 'values', not 'data'");
  }
  const char *s;
  size_t len;
  if (n->kind != YN_SCALAR || n->len / 4 * 3 + 3 < nbytes) {
    return derr(d, n, "data must be !!binary holding %zu bytes", nbytes);
  }
  TF_TRY(bytes_of(d, n, &s, &len));
  if (len != nbytes) {
    return derr(d, n, "data holds %zu bytes, the tensor needs %zu", len,
                nbytes);
  }
  for (size_t i = 0; dt == TF_BOOL && i < len; i++) {
    if ((uint8_t)s[i] > 1) {
      return derr(d, n, "bool element %zu has byte value %u", i,
                  (unsigned)(uint8_t)s[i]);
    }
  }
  return tf_tensor_from_data(dt, shape, s, len, out, d->st);
}

/* {dtype, shape, values | data} -> a new tensor owned by the arena. */
static tf_code y_tensor(dec *d, const ynode *n, tf_tensor **out) {
  static const char *const keys[] = {"dtype", "shape", "values", "data"};
  const ynode *f[4];
  const char *name = NULL;
  tf_dtype dt;
  tf_shape shape;
  int64_t count;
  *out = NULL;
  TF_TRY(fields(d, n, keys, 4, f));
  if (f[0] == NULL || f[1] == NULL || (f[2] == NULL) == (f[3] == NULL)) {
    return derr(d, n, "a tensor needs dtype, shape and one of values, data");
  }
  TF_TRY(text_of(d, f[0], "dtype", &name));
  if (!tf_dtype_from_name(name, &dt) || !tf_dtype_is_valid(dt)) {
    return derr(d, f[0], "'%.40s' is not a dtype", name);
  }
  TF_TRY(y_shape(d, f[1], false, &shape));
  if (tf_shape_check(&shape, tf_dtype_size(dt), &count, d->st) != TF_OK) {
    return tf_status_prefix(d->st, "graph yaml: line %zu column %zu: %s",
                            f[1]->line, f[1]->col, d->where);
  }
  tf_code c = f[2] != NULL
                  ? y_tensor_values(d, f[2], dt, &shape, count, out)
                  : y_tensor_data(d, f[3], dt, &shape,
                                  (size_t)count * tf_dtype_size(dt), out);
  if (c == TF_OK) {
    tf__arena_own_tensor(d->arena, *out);
  }
  return c;
}

/* ---- nodes and the graph ------------------------------------------------- */

static tf_code y_inputs(dec *d, const ynode *n, tf_node_def *def) {
  if (is_null(n)) {
    return TF_OK;
  }
  if (n->kind != YN_SEQ) {
    return derr(d, n, "inputs must be a sequence");
  }
  const char **in = tf__arena_calloc(d->arena, n->n, sizeof *in);
  for (size_t i = 0; i < n->n; i++) {
    TF_TRY(text_of(d, &n->items[i], "an input", &in[i]));
  }
  def->n_inputs = (int)n->n;
  def->inputs = in;
  return TF_OK;
}

static tf_code y_attrs(dec *d, const ynode *n, tf_node_def *def) {
  if (is_null(n)) {
    return TF_OK;
  }
  if (n->kind != YN_MAP) {
    return derr(d, n, "attrs must be a mapping");
  }
  tf_attr_kv *kv = tf__arena_calloc(d->arena, n->n, sizeof *kv);
  const tf_op_def *op = tf_op_lookup(def->op);
  char node_where[sizeof d->where];
  memcpy(node_where, d->where, sizeof node_where);
  for (size_t i = 0; i < n->n; i++) {
    TF_TRY(text_of(d, &n->items[2 * i], "an attr name", &kv[i].name));
    snprintf(d->where, sizeof d->where, "%s attr '%.40s'", node_where,
             kv[i].name);
    const tf_attr_def *decl = op ? tf_op_find_attr(op, kv[i].name) : NULL;
    TF_TRY(y_attr(d, &n->items[2 * i + 1], decl, &kv[i].value));
    memcpy(d->where, node_where, sizeof node_where);
  }
  def->n_attrs = (int)n->n;
  def->attrs = kv;
  return tf__attrs_check_unique(kv, def->n_attrs, d->where, d->st);
}

static tf_code y_node(dec *d, size_t idx, const ynode *n, tf_node_def *def) {
  static const char *const keys[] = {"name", "op", "inputs", "device",
                                     "attrs"};
  const ynode *f[5];
  snprintf(d->where, sizeof d->where, "node %zu", idx);
  TF_TRY(fields(d, n, keys, 5, f));
  if (f[0] == NULL || f[1] == NULL) {
    return derr(d, n, "'name' and 'op' are required");
  }
  TF_TRY(text_of(d, f[0], "name", &def->name));
  snprintf(d->where, sizeof d->where, "node '%.100s'", def->name);
  TF_TRY(text_of(d, f[1], "op", &def->op));
  if (f[2] != NULL) {
    TF_TRY(y_inputs(d, f[2], def));
  }
  if (f[3] != NULL) {
    TF_TRY(text_of(d, f[3], "device", &def->device));
  }
  if (f[4] != NULL) {
    TF_TRY(y_attrs(d, f[4], def));
  }
  return TF_OK;
}

/* Records the node's mapping under its name, for import errors; a name
 * already in the document is an error here, at its second use. */
static tf_code node_mark(dec *d, const ynode *n, const tf_node_def *def) {
  const node_pos *first = tf__strmap_get(&d->nodes, def->name, NULL);
  if (first != NULL) {
    return tf_status_set(d->st, TF_INVALID_ARGUMENT,
                         "graph yaml: line %zu column %zu: node '%.100s' "
                         "(%.100s): duplicate node name; the first is at line "
                         "%zu column %zu", n->line, n->col, def->name, def->op,
                         first->map->line, first->map->col);
  }
  node_pos *pos = tf__arena_calloc(d->arena, 1, sizeof *pos);
  pos->map = n;
  pos->op = def->op;
  tf__strmap_put(&d->nodes, def->name, pos);
  return TF_OK;
}

/* version: the integer 1 (a plain or !!int scalar; '1' is a string). */
static tf_code y_version(dec *d, const ynode *root, const ynode *v) {
  int64_t ver;
  bool str_tag = v != NULL && v->tag != NULL &&
                 (strcmp(v->tag, "!") == 0 ||
                  strcmp(v->tag, TF_YAML_CORE_PREFIX "str") == 0);
  bool is_int = v != NULL && v->kind == YN_SCALAR &&
                (v->tag != NULL ? strcmp(v->tag, TF_YAML_CORE_PREFIX "int") == 0
                                : v->plain);
  if (is_int && tf__yaml_parse_int(v->text, v->len, &ver) &&
      ver == TF_GRAPH_FORMAT_VERSION) {
    return TF_OK;
  }
  if (v != NULL && v->kind == YN_SCALAR &&
      (str_tag || (v->tag == NULL && !v->plain))) {
    return derr(d, v, "'version' must be the integer %d, not the string "
                "'%.20s'", TF_GRAPH_FORMAT_VERSION, v->text);
  }
  return derr(d, v ? v : root, "'version' must be %d",
              TF_GRAPH_FORMAT_VERSION);
}

static tf_code y_graph(dec *d, const ynode *root, tf_node_def **defs, int *n) {
  static const char *const keys[] = {"version", "nodes"};
  const ynode *f[2];
  snprintf(d->where, sizeof d->where, "top level");
  TF_TRY(fields(d, root, keys, 2, f));
  TF_TRY(y_version(d, root, f[0]));
  if (f[1] == NULL || (f[1]->kind != YN_SEQ && !is_null(f[1])) ||
      f[1]->n > INT32_MAX) {
    return derr(d, f[1] ? f[1] : root, "'nodes' must be a sequence");
  }
  size_t nn = f[1]->kind == YN_SEQ ? f[1]->n : 0;
  *defs = tf__arena_calloc(d->arena, nn, sizeof **defs);
  for (size_t i = 0; i < nn; i++) {
    TF_TRY(y_node(d, i, &f[1]->items[i], &(*defs)[i]));
    TF_TRY(node_mark(d, &f[1]->items[i], &(*defs)[i]));
  }
  *n = (int)nn;
  return TF_OK;
}

/* The node whose name is msg[0..q) (q: the quote after it), if any; when
 * strict, only if what follows the quote is ":" or " (<its op>)", as
 * import writes "node 'x': ..." and "node 'x' (Op): ...". */
static const node_pos *named_node(const dec *d, char *msg, char *q,
                                  bool strict) {
  *q = '\0';
  const node_pos *pos = tf__strmap_get(&d->nodes, msg, NULL);
  *q = '\'';
  if (pos == NULL || !strict || q[1] == ':') {
    return pos;
  }
  size_t n = strlen(pos->op);
  return strncmp(q + 1, " (", 2) == 0 && strncmp(q + 3, pos->op, n) == 0 &&
                 q[3 + n] == ')'
             ? pos
             : NULL;
}

/* Prefixes an import error with the position of the node it names: the
 * first quoted text after "node '" (or, failing that, "name '", as in
 * "node 3 has an invalid name 'x'") that is a node's name followed the way
 * import writes one, else just a node's name. */
static tf_code import_error_position(const dec *d, tf_status *st) {
  static const char *const words[] = {"node '", "name '"};
  char msg[TF_STATUS_MSG_MAX];
  memcpy(msg, st->msg, sizeof msg);
  for (int pass = 0; pass < 4; pass++) {
    const char *word = words[pass % 2];
    for (char *p = strstr(msg, word); p != NULL; p = strstr(p + 1, word)) {
      char *name = p + strlen(word);
      for (char *q = strchr(name, '\''); q != NULL; q = strchr(q + 1, '\'')) {
        const node_pos *pos = named_node(d, name, q, pass < 2);
        if (pos != NULL) {
          return tf_status_prefix(st, "graph yaml: line %zu column %zu",
                                  pos->map->line, pos->map->col);
        }
      }
    }
  }
  return st->code;
}

tf_code tf_graph_from_yaml(tf_graph *g, const char *text, size_t len,
                           tf_status *st) {
  tf__arena arena;
  tf__arena_init(&arena);
  reader r = {.text = (const unsigned char *)(text ? text : ""),
              .len = text ? len : 0,
              .arena = &arena,
              .st = st};
  if (!yaml_parser_initialize(&r.parser)) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "graph yaml: out of memory");
  }
  /* libyaml asserts on a NULL input even when it is empty. */
  yaml_parser_set_input_string(&r.parser, r.text, r.len);
  ynode root;
  tf_code c = r_document(&r, &root);
  yaml_parser_delete(&r.parser);
  if (c == TF_OK) {
    dec d = {.arena = &arena, .st = st};
    tf__strmap_init(&d.nodes);
    tf_node_def *defs = NULL;
    int n = 0;
    c = y_graph(&d, &root, &defs, &n);
    if (c == TF_OK) {
      c = tf__graph_import_decoded(g, defs, n, st);
      if (c != TF_OK) {
        c = import_error_position(&d, st);
      }
    }
    tf__strmap_fini(&d.nodes);
  }
  tf__arena_fini(&arena);
  return c;
}
