/* graph_msgpack.c: graphs to and from msgpack (.tfg files, the wire).
 *
 * Layout (docs/graph-format.md): map {"version": 1, "nodes": [node]}, node =
 * map {"name": str, "op": str, "device": str, "inputs": [str], "attrs":
 * map name -> {"type": "list(int)", "value": v}}. Every attr is written,
 * defaults included, with its type named, so empty lists keep their type
 * and a decoded graph equals the original. Decoding type-checks every field
 * into tf_node_defs (owned by an arena) and hands them to tf_graph_import,
 * which validates nodes, fills defaults and infers shapes in one place. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/msgpack_map.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

/* ---- encode -------------------------------------------------------------- */

/* Packs one element of an attr of type t stored at p. */
static tf_code pack_elem(msgpack_packer *pk, tf_attr_type t, const void *p,
                         tf_status *st) {
  int rc = 0;
  switch (t) {
  case TF_ATTR_INT: rc = msgpack_pack_int64(pk, *(const int64_t *)p); break;
  case TF_ATTR_FLOAT: rc = msgpack_pack_double(pk, *(const double *)p); break;
  case TF_ATTR_BOOL:
    rc = *(const bool *)p ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    break;
  case TF_ATTR_STRING: {
    const char *s = *(const char *const *)p;
    rc = tf__msgpack_pack_cstr(pk, s ? s : "");
    break;
  }
  case TF_ATTR_TYPE: rc = msgpack_pack_int64(pk, *(const tf_dtype *)p); break;
  case TF_ATTR_SHAPE: {
    const tf_shape *s = p;
    if (s->rank < 0) {
      rc = msgpack_pack_nil(pk);
      break;
    }
    rc = msgpack_pack_array(pk, (size_t)s->rank);
    for (int i = 0; i < s->rank; i++) {
      rc |= msgpack_pack_int64(pk, s->dims[i]);
    }
    break;
  }
  case TF_ATTR_TENSOR: {
    const tf_tensor *tt = *(tf_tensor *const *)p;
    if (tt == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor attr is NULL");
    }
    return tf__pack_tensor(pk, tt, st);
  }
  default:
    return tf_status_set(st, TF_INVALID_ARGUMENT, "attr of type %d", (int)t);
  }
  return rc == 0 ? TF_OK
                 : tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                                 "out of memory encoding a graph");
}

static tf_code pack_attr(msgpack_packer *pk, const tf_attr_value *v,
                         tf_status *st) {
  tf__mp_map m;
  int rc = tf__mp_map_begin(&m, pk, 2);
  rc |= tf__mp_map_key(&m, "type");
  rc |= tf__msgpack_pack_cstr(pk, tf_attr_type_name(v->type, v->is_list));
  rc |= tf__mp_map_key(&m, "value");
  tf__mp_map_end(&m); /* the value follows: one object, packed below */
  if (rc != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory encoding a graph");
  }
  if (!v->is_list) {
    return pack_elem(pk, v->type, &v->u, st);
  }
  if (msgpack_pack_array(pk, (size_t)(v->n > 0 ? v->n : 0)) != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory encoding a graph");
  }
  size_t es = tf_attr_elem_size(v->type);
  for (int i = 0; i < v->n; i++) {
    TF_TRY(pack_elem(pk, v->type, (const char *)v->u.ints + (size_t)i * es,
                     st));
  }
  return TF_OK;
}

static tf_code pack_node(msgpack_packer *pk, const tf_node *n, tf_status *st) {
  tf_node_def def;
  tf_node_to_def(n, &def);
  tf__mp_map m, attrs;
  int rc = tf__mp_map_begin(&m, pk, 5);
  rc |= tf__mp_map_key(&m, "name");
  rc |= tf__msgpack_pack_cstr(pk, def.name);
  rc |= tf__mp_map_key(&m, "op");
  rc |= tf__msgpack_pack_cstr(pk, def.op);
  rc |= tf__mp_map_key(&m, "device");
  rc |= tf__msgpack_pack_cstr(pk, def.device ? def.device : "");
  rc |= tf__mp_map_key(&m, "inputs");
  rc |= msgpack_pack_array(pk, (size_t)def.n_inputs);
  for (int i = 0; i < def.n_inputs; i++) {
    rc |= tf__msgpack_pack_cstr(pk, def.inputs[i]);
  }
  tf_node_def_fini(&def);
  int na = tf_node_num_attrs(n);
  rc |= tf__mp_map_key(&m, "attrs");
  tf__mp_map_end(&m); /* the attrs map is the last value */
  rc |= tf__mp_map_begin(&attrs, pk, (size_t)na);
  if (rc != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory encoding a graph");
  }
  for (int i = 0; i < na; i++) {
    const char *name = tf_node_attr_name(n, i);
    if (tf__mp_map_key(&attrs, name) != 0) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                           "out of memory encoding a graph");
    }
    tf_code c = pack_attr(pk, tf_node_attr_at(n, i), st);
    if (c != TF_OK) {
      return tf_status_prefix(st, "node '%s' attr '%s'", tf_node_name(n),
                              name);
    }
  }
  tf__mp_map_end(&attrs);
  return TF_OK;
}

tf_code tf_graph_to_msgpack(const tf_graph *g, void **buf, size_t *len,
                            tf_status *st) {
  return tf__graph_nodes_to_msgpack(g, 0, buf, len, st);
}

tf_code tf__graph_nodes_to_msgpack(const tf_graph *g, int from, void **buf,
                                   size_t *len, tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  *buf = NULL;
  *len = 0;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  int total = tf_graph_num_nodes(g);
  if (from < 0 || from > total) from = total;
  int nn = total - from;
  tf__mp_map m;
  int rc = tf__mp_map_begin(&m, &pk, 2);
  rc |= tf__mp_map_key(&m, "version");
  rc |= msgpack_pack_int(&pk, TF_GRAPH_FORMAT_VERSION);
  rc |= tf__mp_map_key(&m, "nodes");
  tf__mp_map_end(&m); /* the nodes array is the last value */
  rc |= msgpack_pack_array(&pk, (size_t)nn);
  tf_code c = rc == 0 ? TF_OK
                      : tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                                      "out of memory encoding a graph");
  for (int i = 0; i < nn && c == TF_OK; i++) {
    c = pack_node(&pk, tf_graph_node(g, from + i), st);
  }
  if (c != TF_OK) {
    msgpack_sbuffer_destroy(&sb);
    return c;
  }
  *len = sb.size;
  *buf = msgpack_sbuffer_release(&sb);
  return TF_OK;
}

/* ---- decode -------------------------------------------------------------- */

typedef struct dec {
  tf__arena arena;
  tf_status *st;
  char where[160]; /* "node 'x' attr 'T'" for messages */
} dec;

__attribute__((format(printf, 2, 3))) static tf_code
dec_err(dec *d, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(d->st, TF_INVALID_ARGUMENT, "graph msgpack: %s: %s",
                       d->where, msg);
}

/* A str without NUL bytes, copied into the arena. */
static tf_code dec_str(dec *d, const msgpack_object *o, const char *field,
                       const char **out) {
  if (o->type != MSGPACK_OBJECT_STR) {
    return dec_err(d, "%s: expected str, got %s", field,
                   tf__msgpack_type_name(o));
  }
  if (o->via.str.size > 0 && memchr(o->via.str.ptr, '\0', o->via.str.size)) {
    return dec_err(d, "%s: string contains a NUL byte", field);
  }
  *out = tf__arena_strndup(&d->arena, o->via.str.ptr, o->via.str.size);
  return TF_OK;
}

static tf_code dec_shape(dec *d, const msgpack_object *o, tf_shape *s) {
  memset(s, 0, sizeof *s);
  if (o->type == MSGPACK_OBJECT_NIL) {
    s->rank = TF_UNKNOWN_RANK;
    return TF_OK;
  }
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > TF_MAX_RANK) {
    return dec_err(d, "shape: expected nil or an array of at most %d ints, "
                   "got %s", TF_MAX_RANK, tf__msgpack_type_name(o));
  }
  s->rank = (int32_t)o->via.array.size;
  for (int i = 0; i < s->rank; i++) {
    if (!tf__msgpack_get_i64(&o->via.array.ptr[i], &s->dims[i]) ||
        s->dims[i] < TF_UNKNOWN_DIM) {
      return dec_err(d, "shape: dim %d is not an int >= -1", i);
    }
  }
  return TF_OK;
}

/* Decodes one element of type t into p (a slot of the C type). */
static tf_code dec_elem(dec *d, tf_attr_type t, const msgpack_object *o,
                        void *p) {
  int64_t i64;
  switch (t) {
  case TF_ATTR_INT:
    if (!tf__msgpack_get_i64(o, (int64_t *)p)) {
      return dec_err(d, "expected an int64, got %s", tf__msgpack_type_name(o));
    }
    return TF_OK;
  case TF_ATTR_FLOAT:
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) {
      *(double *)p = o->via.f64;
    } else if (tf__msgpack_get_i64(o, &i64)) {
      *(double *)p = (double)i64;
    } else {
      return dec_err(d, "expected a float, got %s", tf__msgpack_type_name(o));
    }
    return TF_OK;
  case TF_ATTR_BOOL:
    if (o->type != MSGPACK_OBJECT_BOOLEAN) {
      return dec_err(d, "expected a bool, got %s", tf__msgpack_type_name(o));
    }
    *(bool *)p = o->via.boolean;
    return TF_OK;
  case TF_ATTR_STRING: return dec_str(d, o, "string", (const char **)p);
  case TF_ATTR_TYPE:
    if (!tf__msgpack_get_i64(o, &i64) || i64 <= 0 || i64 >= TF_DTYPE_MAX ||
        !tf_dtype_is_valid((tf_dtype)i64)) {
      return dec_err(d, "expected a dtype number, got %s",
                     tf__msgpack_type_name(o));
    }
    *(tf_dtype *)p = (tf_dtype)i64;
    return TF_OK;
  case TF_ATTR_SHAPE: return dec_shape(d, o, p);
  case TF_ATTR_TENSOR: {
    tf_tensor *t;
    if (tf__unpack_tensor(o, &t, d->st) != TF_OK) {
      return tf_status_prefix(d->st, "graph msgpack: %s", d->where);
    }
    tf__arena_own_tensor(&d->arena, t);
    *(tf_tensor **)p = t;
    return TF_OK;
  }
  default: return dec_err(d, "attr type %d", (int)t);
  }
}

/* {"type": "list(int)", "value": [..]} -> v. */
static tf_code dec_attr(dec *d, const msgpack_object *o, tf_attr_value *v) {
  const msgpack_object *type = NULL, *value = NULL;
  if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size != 2) {
    return dec_err(d, "expected map {type, value}, got %s",
                   tf__msgpack_type_name(o));
  }
  for (int i = 0; i < 2; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    if (tf__msgpack_str_eq(&kv->key, "type") && type == NULL) {
      type = &kv->val;
    } else if (tf__msgpack_str_eq(&kv->key, "value") && value == NULL) {
      value = &kv->val;
    }
  }
  memset(v, 0, sizeof *v);
  if (type == NULL || value == NULL || type->type != MSGPACK_OBJECT_STR ||
      !tf__attr_type_parse(type->via.str.ptr, type->via.str.size, &v->type,
                           &v->is_list)) {
    return dec_err(d, "expected keys 'type' (an attr type name such as "
                   "\"list(int)\") and 'value'");
  }
  if (!v->is_list) {
    return dec_elem(d, v->type, value, &v->u);
  }
  if (value->type != MSGPACK_OBJECT_ARRAY) {
    return dec_err(d, "%s: expected an array, got %s",
                   tf_attr_type_name(v->type, true),
                   tf__msgpack_type_name(value));
  }
  uint32_t n = value->via.array.size;
  if (n > INT32_MAX) {
    return dec_err(d, "list of %u elements is too long", n);
  }
  size_t es = tf_attr_elem_size(v->type);
  char *arr = tf__arena_calloc(&d->arena, n, es);
  for (uint32_t i = 0; i < n; i++) {
    TF_TRY(dec_elem(d, v->type, &value->via.array.ptr[i], arr + i * es));
  }
  v->n = (int32_t)n;
  v->u.ints = (const int64_t *)arr;
  return TF_OK;
}

static tf_code dec_attrs(dec *d, const msgpack_object *o, tf_node_def *def) {
  if (o->type != MSGPACK_OBJECT_MAP) {
    return dec_err(d, "attrs: expected a map, got %s",
                   tf__msgpack_type_name(o));
  }
  uint32_t n = o->via.map.size;
  tf_attr_kv *kv = tf__arena_calloc(&d->arena, n, sizeof *kv);
  char node_where[sizeof d->where];
  memcpy(node_where, d->where, sizeof node_where);
  for (uint32_t i = 0; i < n; i++) {
    TF_TRY(dec_str(d, &o->via.map.ptr[i].key, "attr name", &kv[i].name));
    snprintf(d->where, sizeof d->where, "%s attr '%.40s'", node_where,
             kv[i].name);
    TF_TRY(dec_attr(d, &o->via.map.ptr[i].val, &kv[i].value));
    memcpy(d->where, node_where, sizeof node_where);
  }
  def->n_attrs = (int)n;
  def->attrs = kv;
  return tf__attrs_check_unique(kv, (int)n, d->where, d->st);
}

static tf_code dec_inputs(dec *d, const msgpack_object *o, tf_node_def *def) {
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    return dec_err(d, "inputs: expected an array, got %s",
                   tf__msgpack_type_name(o));
  }
  uint32_t n = o->via.array.size;
  const char **in = tf__arena_calloc(&d->arena, n, sizeof *in);
  for (uint32_t i = 0; i < n; i++) {
    TF_TRY(dec_str(d, &o->via.array.ptr[i], "input", &in[i]));
  }
  def->n_inputs = (int)n;
  def->inputs = in;
  return TF_OK;
}

static tf_code dec_node(dec *d, uint32_t idx, const msgpack_object *o,
                        tf_node_def *def) {
  static const char *keys[] = {"name", "op", "device", "inputs", "attrs"};
  const msgpack_object *f[5] = {NULL, NULL, NULL, NULL, NULL};
  snprintf(d->where, sizeof d->where, "node %u", idx);
  if (o->type != MSGPACK_OBJECT_MAP) {
    return dec_err(d, "expected a map, got %s", tf__msgpack_type_name(o));
  }
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    int k = 0;
    while (k < 5 && !tf__msgpack_str_eq(&o->via.map.ptr[i].key, keys[k])) {
      k++;
    }
    if (k == 5 || f[k] != NULL) {
      return dec_err(d, "%s key at position %u", k == 5 ? "unknown" : "repeated",
                     i);
    }
    f[k] = &o->via.map.ptr[i].val;
  }
  if (f[0] == NULL || f[1] == NULL) {
    return dec_err(d, "'name' and 'op' are required");
  }
  TF_TRY(dec_str(d, f[0], "name", &def->name));
  snprintf(d->where, sizeof d->where, "node '%.100s'", def->name);
  TF_TRY(dec_str(d, f[1], "op", &def->op));
  if (f[2] != NULL) {
    TF_TRY(dec_str(d, f[2], "device", &def->device));
  }
  if (f[3] != NULL) {
    TF_TRY(dec_inputs(d, f[3], def));
  }
  if (f[4] != NULL) {
    TF_TRY(dec_attrs(d, f[4], def));
  }
  return TF_OK;
}

/* Checks the root map and decodes every node into *defs. */
static tf_code dec_graph(dec *d, const msgpack_object *o, tf_node_def **defs,
                         int *n) {
  const msgpack_object *version = NULL, *nodes = NULL;
  snprintf(d->where, sizeof d->where, "root");
  if (o->type != MSGPACK_OBJECT_MAP) {
    return dec_err(d, "expected a map, got %s", tf__msgpack_type_name(o));
  }
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    if (tf__msgpack_str_eq(&kv->key, "version") && version == NULL) {
      version = &kv->val;
    } else if (tf__msgpack_str_eq(&kv->key, "nodes") && nodes == NULL) {
      nodes = &kv->val;
    } else {
      return dec_err(d, "unknown or repeated key at position %u", i);
    }
  }
  int64_t ver;
  if (version == NULL || !tf__msgpack_get_i64(version, &ver) ||
      ver != TF_GRAPH_FORMAT_VERSION) {
    return dec_err(d, "'version' must be %d", TF_GRAPH_FORMAT_VERSION);
  }
  if (nodes == NULL || nodes->type != MSGPACK_OBJECT_ARRAY ||
      nodes->via.array.size > INT32_MAX) {
    return dec_err(d, "'nodes' must be an array");
  }
  uint32_t nn = nodes->via.array.size;
  *defs = tf__arena_calloc(&d->arena, nn, sizeof **defs);
  for (uint32_t i = 0; i < nn; i++) {
    TF_TRY(dec_node(d, i, &nodes->via.array.ptr[i], &(*defs)[i]));
  }
  *n = (int)nn;
  return TF_OK;
}

tf_code tf_graph_from_msgpack(tf_graph *g, const void *buf, size_t len,
                              tf_status *st) {
  return tf__graph_from_msgpack_checked(g, buf, len, NULL, NULL, st);
}

tf_code tf__graph_from_msgpack_checked(tf_graph *g, const void *buf, size_t len,
                                       tf__node_defs_check_fn check, void *arg,
                                       tf_status *st) {
  msgpack_unpacked res;
  tf_code c = tf__msgpack_unpack(buf, len, TF_MSGPACK_MAX_DEPTH, &res, st);
  if (c != TF_OK) {
    msgpack_unpacked_destroy(&res);
    return tf_status_prefix(st, "graph");
  }
  dec d;
  memset(&d, 0, sizeof d);
  tf__arena_init(&d.arena);
  d.st = st;
  tf_node_def *defs = NULL;
  int n = 0;
  c = dec_graph(&d, &res.data, &defs, &n);
  if (c == TF_OK && check != NULL) {
    c = check(defs, n, arg, st);
  }
  if (c == TF_OK) {
    c = tf__graph_import_decoded(g, defs, n, st);
  }
  tf__arena_fini(&d.arena);
  msgpack_unpacked_destroy(&res);
  return c;
}
