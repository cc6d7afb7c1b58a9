/* graph_yaml.c: the YAML text form of graphs (writer; the reader is
 * graph_yaml_read.c). Readable and diffable: one node per list entry, one
 * attr per line, every attr written (defaults included) so that reading
 * the text back gives an identical graph.
 *
 * Schema (version 1; docs/graph-format.md has the long form):
 *
 *   version: 1
 *   nodes:
 *   - name: x                       # any node name
 *     op: Placeholder
 *     inputs: [w, "w:1", "^init"]   # "src", "src:port", "^ctrl"; optional
 *     device: /job:ps/task:0        # optional
 *     attrs:                        # optional; name -> value
 *       dtype: !type float32
 *       shape: !shape [2, -1]       # -1 unknown dim; `!shape unknown` rank
 *       N: 3                        # int
 *       alpha: 0.5                  # float: always has a '.', or .inf/.nan
 *       transpose_a: false          # bool
 *       padding: "SAME"             # string: double-quoted when written;
 *                                   #   !!binary base64 if not UTF-8
 *       value: !tensor {dtype: float32, shape: [2], values: [1.0, 2.0]}
 *       strides: !list(int) [1, 2, 2, 1]   # lists: !list(<type>) [...]
 *       _class: !list(string) ["loc:@w"]
 *
 * A value's type comes from its tag; an untagged value of an attr the op
 * declares takes the declared type (so hand-written files may say
 * `dtype: float32`, `shape: [2, -1]`, `strides: [1, 2, 2, 1]`); other
 * untagged values (e.g. "_" attrs) are read by YAML's core schema: a plain
 * integer is an int, a plain number with '.' or an exponent a float,
 * true/false a bool, anything quoted (or any other plain word) a string,
 * and a non-empty sequence a list of its elements' common type (ints and
 * floats make a list(float)). The writer always tags types, shapes,
 * tensors and lists, so what it writes reads back the same without the op
 * registry. Inside a tagged list, elements are untagged:
 * `!list(type) [float32]`, `!list(shape) [[2, 3], unknown]`.
 *
 * Tensors are maps {dtype, shape, values} with values flat in row-major
 * order: numbers (complex64 as [re, im] pairs), true/false, or strings
 * (!!binary for non-UTF-8 bytes). Numeric tensors of more than 256
 * elements are written as `data: !!binary` base64 of their little-endian
 * bytes instead; the reader accepts either form. Floats are written with
 * the fewest digits that read back to the same bits of their dtype; NaN
 * payloads and signs are not kept (msgpack keeps them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/core/serialize/graph_yaml.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

#define HEADER_COMMENT "# tf graph, YAML form (docs/graph-format.md)\n"

typedef struct writer {
  yaml_emitter_t em;
  char *buf;
  size_t len, cap;
  bool oom;
  tf_status *st;
} writer;

static int write_handler(void *data, unsigned char *bytes, size_t size) {
  writer *w = data;
  if (size > SIZE_MAX / 2 - w->len) {
    w->oom = true;
    return 0;
  }
  if (w->len + size + 1 > w->cap) {
    size_t cap = TF_MAX(w->cap * 2, w->len + size + 1);
    char *grown = realloc(w->buf, cap);
    if (grown == NULL) {
      w->oom = true;
      return 0;
    }
    w->buf = grown;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, bytes, size);
  w->len += size;
  w->buf[w->len] = '\0';
  return 1;
}

/* Emits an event; ok is the result of its initialize call. */
static tf_code emit(writer *w, int ok, yaml_event_t *ev) {
  if (!ok) {
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "graph yaml: cannot make a YAML event (text that is "
                         "not UTF-8, or out of memory)");
  }
  if (!yaml_emitter_emit(&w->em, ev)) {
    if (w->oom) {
      return tf_status_set(w->st, TF_RESOURCE_EXHAUSTED,
                           "graph yaml: out of memory writing %zu bytes",
                           w->len);
    }
    return tf_status_set(w->st, TF_INVALID_ARGUMENT, "graph yaml: %s",
                         w->em.problem ? w->em.problem : "emitter error");
  }
  return TF_OK;
}

static tf_code w_scalar(writer *w, const char *tag, const char *s, size_t n,
                        yaml_scalar_style_t style) {
  yaml_event_t ev;
  if (n > INT32_MAX) {
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "graph yaml: a %zu-byte scalar is too long", n);
  }
  int ok = yaml_scalar_event_initialize(
      &ev, NULL, (const yaml_char_t *)tag, (const yaml_char_t *)s, (int)n,
      tag == NULL, tag == NULL, style);
  return emit(w, ok, &ev);
}

static tf_code w_plain(writer *w, const char *tag, const char *s) {
  return w_scalar(w, tag, s, strlen(s), YAML_PLAIN_SCALAR_STYLE);
}

/* Names, ops, devices, inputs: plain unless a reader would take the plain
 * text for a number, bool or null. */
static tf_code w_name(writer *w, const char *s) {
  size_t n = strlen(s);
  if (!tf__utf8_valid(s, n)) {
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "graph yaml: '%.100s' is not UTF-8", s);
  }
  return w_scalar(w, NULL, s, n,
                  tf__yaml_plain_is_special(s, n)
                      ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                      : YAML_ANY_SCALAR_STYLE);
}

/* A string value: double-quoted, or !!binary base64 when not UTF-8. */
static tf_code w_string(writer *w, const char *s, size_t n) {
  if (tf__utf8_valid(s, n)) {
    return w_scalar(w, NULL, s, n, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
  }
  size_t blen;
  char *b64 = tf__base64_encode(s, n, 0, &blen);
  if (b64 == NULL) {
    return tf_status_set(w->st, TF_RESOURCE_EXHAUSTED,
                         "graph yaml: out of memory");
  }
  tf_code c = w_scalar(w, TF_YAML_TAG_BINARY, b64, blen,
                       YAML_PLAIN_SCALAR_STYLE);
  free(b64);
  return c;
}

static tf_code w_seq_start(writer *w, const char *tag, bool flow) {
  yaml_event_t ev;
  int ok = yaml_sequence_start_event_initialize(
      &ev, NULL, (const yaml_char_t *)tag, tag == NULL,
      flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
  return emit(w, ok, &ev);
}

static tf_code w_map_start(writer *w, const char *tag, bool flow) {
  yaml_event_t ev;
  int ok = yaml_mapping_start_event_initialize(
      &ev, NULL, (const yaml_char_t *)tag, tag == NULL,
      flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
  return emit(w, ok, &ev);
}

static tf_code w_seq_end(writer *w) {
  yaml_event_t ev;
  return emit(w, yaml_sequence_end_event_initialize(&ev), &ev);
}

static tf_code w_map_end(writer *w) {
  yaml_event_t ev;
  return emit(w, yaml_mapping_end_event_initialize(&ev), &ev);
}

static tf_code w_int(writer *w, int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return w_plain(w, NULL, buf);
}

static tf_code w_float(writer *w, double v, tf_dtype dt) {
  char buf[64];
  tf__yaml_format_float(v, dt, buf, sizeof buf);
  return w_plain(w, NULL, buf);
}

static tf_code w_dims(writer *w, const char *tag, const tf_shape *s) {
  TF_TRY(w_seq_start(w, tag, true));
  for (int i = 0; i < s->rank; i++) {
    TF_TRY(w_int(w, s->dims[i]));
  }
  return w_seq_end(w);
}

/* ---- tensors ------------------------------------------------------------- */

/* Element i of a numeric or bool tensor as a YAML scalar. */
static tf_code w_tensor_elem(writer *w, const tf_tensor *t, int64_t i) {
  const void *p = (const char *)t->data + (size_t)i * tf_dtype_size(t->dtype);
  char buf[32];
  switch (t->dtype) {
  case TF_FLOAT64: return w_float(w, *(const double *)p, TF_FLOAT64);
  case TF_FLOAT32: return w_float(w, *(const float *)p, TF_FLOAT32);
  case TF_FLOAT16:
    return w_float(w, tf_float16_to_float(*(const tf_float16 *)p), TF_FLOAT16);
  case TF_BFLOAT16:
    return w_float(w, tf_bfloat16_to_float(*(const tf_bfloat16 *)p),
                   TF_BFLOAT16);
  case TF_COMPLEX64: {
    const tf_complex64 *c = p;
    TF_TRY(w_seq_start(w, NULL, true));
    TF_TRY(w_float(w, c->re, TF_FLOAT32));
    TF_TRY(w_float(w, c->im, TF_FLOAT32));
    return w_seq_end(w);
  }
  case TF_BOOL: return w_plain(w, NULL, *(const bool *)p ? "true" : "false");
  case TF_UINT64:
    snprintf(buf, sizeof buf, "%llu",
             (unsigned long long)*(const uint64_t *)p);
    return w_plain(w, NULL, buf);
  case TF_STRING: {
    const tf_string *s = p;
    return w_string(w, s->data ? s->data : "", s->len);
  }
  default: return w_int(w, tf_tensor_get_i64(t, i));
  }
}

static tf_code w_tensor_data(writer *w, const tf_tensor *t) {
  size_t blen;
  char *b64 = tf__base64_encode(t->data, t->nbytes, 76, &blen);
  if (b64 == NULL) {
    return tf_status_set(w->st, TF_RESOURCE_EXHAUSTED,
                         "graph yaml: out of memory");
  }
  tf_code c = w_scalar(w, TF_YAML_TAG_BINARY, b64, blen,
                       YAML_LITERAL_SCALAR_STYLE);
  free(b64);
  return c;
}

/* {dtype, shape, values | data}: flow style when small, block otherwise
 * (block only ever happens in block context: attrs and tensor lists). */
static tf_code w_tensor(writer *w, const char *tag, const tf_tensor *t) {
  if (t == NULL) {
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "graph yaml: tensor attr is NULL");
  }
  bool raw = t->dtype != TF_STRING && t->n > TF_YAML_VALUES_MAX;
  TF_TRY(w_map_start(w, tag, !raw && t->n <= 8));
  TF_TRY(w_plain(w, NULL, "dtype"));
  TF_TRY(w_plain(w, NULL, tf_dtype_name(t->dtype)));
  TF_TRY(w_plain(w, NULL, "shape"));
  TF_TRY(w_dims(w, NULL, &t->shape));
  if (raw) {
    TF_TRY(w_plain(w, NULL, "data"));
    TF_TRY(w_tensor_data(w, t));
  } else {
    TF_TRY(w_plain(w, NULL, "values"));
    TF_TRY(w_seq_start(w, NULL, true));
    for (int64_t i = 0; i < t->n; i++) {
      TF_TRY(w_tensor_elem(w, t, i));
    }
    TF_TRY(w_seq_end(w));
  }
  return w_map_end(w);
}

/* ---- attrs --------------------------------------------------------------- */

/* One value of attr type t at p; scalar attrs of type, shape and tensor
 * carry their tag, list elements none. */
static tf_code w_attr_elem(writer *w, tf_attr_type t, const void *p,
                           bool tagged) {
  switch (t) {
  case TF_ATTR_INT: return w_int(w, *(const int64_t *)p);
  case TF_ATTR_FLOAT: return w_float(w, *(const double *)p, TF_FLOAT64);
  case TF_ATTR_BOOL:
    return w_plain(w, NULL, *(const bool *)p ? "true" : "false");
  case TF_ATTR_STRING: {
    const char *s = *(const char *const *)p;
    return w_string(w, s ? s : "", s ? strlen(s) : 0);
  }
  case TF_ATTR_TYPE:
    return w_plain(w, tagged ? TF_YAML_TAG_TYPE : NULL,
                   tf_dtype_name(*(const tf_dtype *)p));
  case TF_ATTR_SHAPE: {
    const tf_shape *s = p;
    const char *tag = tagged ? TF_YAML_TAG_SHAPE : NULL;
    return s->rank < 0 ? w_plain(w, tag, TF_YAML_UNKNOWN_SHAPE)
                       : w_dims(w, tag, s);
  }
  case TF_ATTR_TENSOR:
    return w_tensor(w, tagged ? TF_YAML_TAG_TENSOR : NULL,
                    *(tf_tensor *const *)p);
  default:
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "graph yaml: attr of type %d", (int)t);
  }
}

static tf_code w_attr(writer *w, const tf_attr_value *v) {
  if (!v->is_list) {
    return w_attr_elem(w, v->type, &v->u, true);
  }
  char tag[32];
  snprintf(tag, sizeof tag, "!%s", tf_attr_type_name(v->type, true));
  TF_TRY(w_seq_start(w, tag, v->type != TF_ATTR_TENSOR));
  size_t es = tf_attr_elem_size(v->type);
  for (int i = 0; i < v->n; i++) {
    TF_TRY(w_attr_elem(w, v->type, (const char *)v->u.ints + (size_t)i * es,
                       false));
  }
  return w_seq_end(w);
}

/* ---- nodes --------------------------------------------------------------- */

static tf_code w_node_body(writer *w, const tf_node *n, const tf_node_def *def) {
  TF_TRY(w_plain(w, NULL, "name"));
  TF_TRY(w_name(w, def->name));
  TF_TRY(w_plain(w, NULL, "op"));
  TF_TRY(w_name(w, def->op));
  if (def->n_inputs > 0) {
    TF_TRY(w_plain(w, NULL, "inputs"));
    TF_TRY(w_seq_start(w, NULL, true));
    for (int i = 0; i < def->n_inputs; i++) {
      TF_TRY(w_name(w, def->inputs[i]));
    }
    TF_TRY(w_seq_end(w));
  }
  if (def->device != NULL && def->device[0] != '\0') {
    TF_TRY(w_plain(w, NULL, "device"));
    TF_TRY(w_name(w, def->device));
  }
  int na = tf_node_num_attrs(n);
  if (na > 0) {
    TF_TRY(w_plain(w, NULL, "attrs"));
    TF_TRY(w_map_start(w, NULL, false));
    for (int i = 0; i < na; i++) {
      TF_TRY(w_name(w, tf_node_attr_name(n, i)));
      if (w_attr(w, tf_node_attr_at(n, i)) != TF_OK) {
        return tf_status_prefix(w->st, "node '%s' attr '%s'", def->name,
                                tf_node_attr_name(n, i));
      }
    }
    TF_TRY(w_map_end(w));
  }
  return TF_OK;
}

static tf_code w_node(writer *w, const tf_node *n) {
  tf_node_def def;
  tf_node_to_def(n, &def);
  tf_code c = w_map_start(w, NULL, false);
  if (c == TF_OK) {
    c = w_node_body(w, n, &def);
  }
  tf_node_def_fini(&def);
  TF_TRY(c);
  return w_map_end(w);
}

static tf_code w_graph(writer *w, const tf_graph *g) {
  yaml_event_t ev;
  TF_TRY(emit(w, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING),
              &ev));
  TF_TRY(emit(w, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1),
              &ev));
  TF_TRY(w_map_start(w, NULL, false));
  TF_TRY(w_plain(w, NULL, "version"));
  TF_TRY(w_int(w, TF_GRAPH_FORMAT_VERSION));
  TF_TRY(w_plain(w, NULL, "nodes"));
  TF_TRY(w_seq_start(w, NULL, false));
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    TF_TRY(w_node(w, tf_graph_node(g, i)));
  }
  TF_TRY(w_seq_end(w));
  TF_TRY(w_map_end(w));
  TF_TRY(emit(w, yaml_document_end_event_initialize(&ev, 1), &ev));
  TF_TRY(emit(w, yaml_stream_end_event_initialize(&ev), &ev));
  if (!yaml_emitter_flush(&w->em)) {
    return tf_status_set(w->st, TF_RESOURCE_EXHAUSTED,
                         "graph yaml: out of memory writing %zu bytes", w->len);
  }
  return TF_OK;
}

tf_code tf_graph_to_yaml(const tf_graph *g, char **text, size_t *len,
                         tf_status *st) {
  writer w;
  memset(&w, 0, sizeof w);
  w.st = st;
  *text = NULL;
  *len = 0;
  if (!yaml_emitter_initialize(&w.em)) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "graph yaml: out of memory");
  }
  yaml_emitter_set_output(&w.em, write_handler, &w);
  yaml_emitter_set_unicode(&w.em, 1);
  yaml_emitter_set_width(&w.em, 100);
  yaml_emitter_set_indent(&w.em, 2);
  yaml_emitter_set_break(&w.em, YAML_LN_BREAK);
  tf_code c = write_handler(&w, (unsigned char *)HEADER_COMMENT,
                            strlen(HEADER_COMMENT))
                  ? w_graph(&w, g)
                  : tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                                  "graph yaml: out of memory");
  yaml_emitter_delete(&w.em);
  if (c != TF_OK) {
    free(w.buf);
    return c;
  }
  *text = w.buf;
  *len = w.len;
  return TF_OK;
}
