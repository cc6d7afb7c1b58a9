/* tensor_msgpack.c: tensors to and from msgpack, plus the bounded msgpack
 * walk that every decoder of untrusted msgpack runs before msgpack-c.
 *
 * A tensor is map {"dtype": int (TF's DataType number), "shape": [int],
 * "data": bin of little-endian element bytes} or, for strings, "data": an
 * array of one bin per element. Decoding checks every field's type and that
 * the data holds exactly what dtype and shape require before allocating. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/msgpack_map.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "tensor data is encoded as the host's little-endian bytes");

/* ---- bounded walk -------------------------------------------------------- */

typedef struct walk {
  const uint8_t *p;
  size_t len, off;
  tf_status *st;
} walk;

static tf_code walk_need(walk *w, size_t k) {
  if (w->len - w->off < k) {
    return tf_status_set(w->st, TF_DATA_LOSS,
                         "msgpack truncated: %zu bytes needed at offset %zu, "
                         "%zu present",
                         k, w->off, w->len - w->off);
  }
  return TF_OK;
}

static uint64_t read_be(const uint8_t *p, int k) {
  uint64_t v = 0;
  for (int i = 0; i < k; i++) {
    v = (v << 8) | p[i];
  }
  return v;
}

/* Reads a k-byte big-endian length after the 1-byte tag. */
static tf_code walk_len(walk *w, int k, uint64_t *n) {
  TF_TRY(walk_need(w, 1 + (size_t)k));
  *n = read_be(w->p + w->off + 1, k);
  return TF_OK;
}

/* Skips a payload of n bytes after a header of hdr bytes. */
static tf_code walk_skip(walk *w, size_t hdr, uint64_t n) {
  TF_TRY(walk_need(w, hdr));
  w->off += hdr;
  if (n > w->len - w->off) {
    return tf_status_set(w->st, TF_DATA_LOSS,
                         "msgpack truncated: a %llu-byte payload at offset "
                         "%zu has %zu bytes",
                         (unsigned long long)n, w->off, w->len - w->off);
  }
  w->off += (size_t)n;
  return TF_OK;
}

/* Decodes the header of one object; *count gets the number of nested
 * objects that follow (0 for scalars, strings and bins). */
static tf_code walk_one(walk *w, uint64_t *count) {
  TF_TRY(walk_need(w, 1));
  uint8_t c = w->p[w->off];
  uint64_t n = 0;
  *count = 0;
  if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) {
    w->off += 1;
    return TF_OK;
  }
  if (c >= 0x80 && c <= 0x9f) { /* fixmap, fixarray */
    *count = c <= 0x8f ? 2u * (c & 0x0f) : (c & 0x0f);
    w->off += 1;
    return TF_OK;
  }
  if (c >= 0xa0 && c <= 0xbf) { /* fixstr */
    return walk_skip(w, 1, c & 0x1f);
  }
  static const uint8_t fixed[] = {
      [0xca - 0xc4] = 5,  [0xcb - 0xc4] = 9,  [0xcc - 0xc4] = 2,
      [0xcd - 0xc4] = 3,  [0xce - 0xc4] = 5,  [0xcf - 0xc4] = 9,
      [0xd0 - 0xc4] = 2,  [0xd1 - 0xc4] = 3,  [0xd2 - 0xc4] = 5,
      [0xd3 - 0xc4] = 9,  [0xd4 - 0xc4] = 3,  [0xd5 - 0xc4] = 4,
      [0xd6 - 0xc4] = 6,  [0xd7 - 0xc4] = 10, [0xd8 - 0xc4] = 18,
  };
  if (c >= 0xca && c <= 0xd8) {
    return walk_skip(w, fixed[c - 0xc4], 0);
  }
  switch (c) {
  case 0xc4: case 0xd9: TF_TRY(walk_len(w, 1, &n)); return walk_skip(w, 2, n);
  case 0xc5: case 0xda: TF_TRY(walk_len(w, 2, &n)); return walk_skip(w, 3, n);
  case 0xc6: case 0xdb: TF_TRY(walk_len(w, 4, &n)); return walk_skip(w, 5, n);
  case 0xc7: TF_TRY(walk_len(w, 1, &n)); return walk_skip(w, 3, n);
  case 0xc8: TF_TRY(walk_len(w, 2, &n)); return walk_skip(w, 4, n);
  case 0xc9: TF_TRY(walk_len(w, 4, &n)); return walk_skip(w, 6, n);
  case 0xdc: TF_TRY(walk_len(w, 2, &n)); *count = n; w->off += 3; return TF_OK;
  case 0xdd: TF_TRY(walk_len(w, 4, &n)); *count = n; w->off += 5; return TF_OK;
  case 0xde: TF_TRY(walk_len(w, 2, &n)); *count = 2 * n; w->off += 3; return TF_OK;
  case 0xdf: TF_TRY(walk_len(w, 4, &n)); *count = 2 * n; w->off += 5; return TF_OK;
  default:
    return tf_status_set(w->st, TF_INVALID_ARGUMENT,
                         "msgpack: reserved byte 0x%02x at offset %zu", c,
                         w->off);
  }
}

tf_code tf__msgpack_check(const void *buf, size_t len, int max_depth,
                          size_t *end, tf_status *st) {
  TF_ASSERT(max_depth >= 1 && max_depth <= 32);
  walk w = {buf, len, 0, st};
  uint64_t pending[33];
  int depth = 0;
  pending[0] = 1;
  while (depth >= 0) {
    if (pending[depth] == 0) {
      depth--;
      continue;
    }
    pending[depth]--;
    size_t at = w.off;
    uint64_t count;
    TF_TRY(walk_one(&w, &count));
    if (count == 0) {
      continue;
    }
    if (count > w.len - w.off) {
      return tf_status_set(st, TF_DATA_LOSS,
                           "msgpack: container at offset %zu declares %llu "
                           "elements but only %zu bytes follow",
                           at, (unsigned long long)count, w.len - w.off);
    }
    if (depth + 1 > max_depth) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "msgpack: nesting deeper than %d at offset %zu",
                           max_depth, at);
    }
    pending[++depth] = count;
  }
  *end = w.off;
  return TF_OK;
}

tf_code tf__msgpack_unpack(const void *buf, size_t len, int max_depth,
                           msgpack_unpacked *res, tf_status *st) {
  msgpack_unpacked_init(res);
  size_t end = 0, off = 0;
  TF_TRY(tf__msgpack_check(buf, len, max_depth, &end, st));
  if (end != len) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "msgpack: %zu trailing bytes after the object at "
                         "offset %zu",
                         len - end, end);
  }
  msgpack_unpack_return r = msgpack_unpack_next(res, buf, len, &off);
  switch (r) {
  case MSGPACK_UNPACK_SUCCESS:
  case MSGPACK_UNPACK_EXTRA_BYTES:
    return TF_OK;
  case MSGPACK_UNPACK_CONTINUE:
    return tf_status_set(st, TF_DATA_LOSS, "msgpack truncated at offset %zu",
                         len);
  case MSGPACK_UNPACK_NOMEM_ERROR:
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory unpacking %zu bytes of msgpack", len);
  default:
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "msgpack: parse error in %zu bytes", len);
  }
}

/* ---- accessors ----------------------------------------------------------- */

const char *tf__msgpack_type_name(const msgpack_object *o) {
  switch (o->type) {
  case MSGPACK_OBJECT_NIL: return "nil";
  case MSGPACK_OBJECT_BOOLEAN: return "bool";
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
  case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "int";
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64: return "float";
  case MSGPACK_OBJECT_STR: return "str";
  case MSGPACK_OBJECT_ARRAY: return "array";
  case MSGPACK_OBJECT_MAP: return "map";
  case MSGPACK_OBJECT_BIN: return "bin";
  case MSGPACK_OBJECT_EXT: return "ext";
  default: return "unknown";
  }
}

bool tf__msgpack_str_eq(const msgpack_object *o, const char *key) {
  size_t n = strlen(key);
  return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
         (n == 0 || memcmp(o->via.str.ptr, key, n) == 0);
}

bool tf__msgpack_get_i64(const msgpack_object *o, int64_t *v) {
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    if (o->via.u64 > (uint64_t)INT64_MAX) {
      return false;
    }
    *v = (int64_t)o->via.u64;
    return true;
  }
  if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    *v = o->via.i64;
    return true;
  }
  return false;
}

int tf__msgpack_pack_cstr(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  return msgpack_pack_str_with_body(pk, s, n);
}

/* ---- tensor encode ------------------------------------------------------- */

tf_code tf__pack_tensor(msgpack_packer *pk, const tf_tensor *t,
                        tf_status *st) {
  if (t->dtype == TF_STRING ? (uint64_t)t->n > UINT32_MAX
                            : (uint64_t)t->nbytes > UINT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "a %s tensor of %lld elements (%zu bytes) exceeds "
                         "msgpack's 4 GiB limit",
                         tf_dtype_name(t->dtype), (long long)t->n, t->nbytes);
  }
  tf__mp_map m;
  int rc = tf__mp_map_begin(&m, pk, 3);
  rc |= tf__mp_map_key(&m, "dtype");
  rc |= msgpack_pack_int64(pk, (int64_t)t->dtype);
  rc |= tf__mp_map_key(&m, "shape");
  rc |= msgpack_pack_array(pk, (size_t)t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++) {
    rc |= msgpack_pack_int64(pk, t->shape.dims[i]);
  }
  rc |= tf__mp_map_key(&m, "data");
  if (t->dtype == TF_STRING) {
    const tf_string *s = tf_tensor_strings(t);
    rc |= msgpack_pack_array(pk, (size_t)t->n);
    for (int64_t i = 0; i < t->n && rc == 0; i++) {
      if (s[i].len > UINT32_MAX) {
        return tf_status_set(st, TF_INVALID_ARGUMENT,
                             "string element %lld of %zu bytes exceeds "
                             "msgpack's 4 GiB limit",
                             (long long)i, s[i].len);
      }
      rc |= msgpack_pack_bin_with_body(pk, s[i].data, s[i].len);
    }
  } else {
    rc |= msgpack_pack_bin_with_body(pk, t->data, t->nbytes);
  }
  tf__mp_map_end(&m);
  if (rc != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory encoding a %s tensor of %zu bytes",
                         tf_dtype_name(t->dtype), t->nbytes);
  }
  return TF_OK;
}

tf_code tf_tensor_to_msgpack(const tf_tensor *t, void **buf, size_t *len,
                             tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  *buf = NULL;
  *len = 0;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  tf_code c = tf__pack_tensor(&pk, t, st);
  if (c != TF_OK) {
    msgpack_sbuffer_destroy(&sb);
    return c;
  }
  *len = sb.size;
  *buf = msgpack_sbuffer_release(&sb);
  return TF_OK;
}

/* ---- tensor decode ------------------------------------------------------- */

static tf_code field_error(tf_status *st, const char *field, const char *want,
                           const msgpack_object *got) {
  return tf_status_set(st, TF_INVALID_ARGUMENT,
                       "tensor field '%s': expected %s, got %s", field, want,
                       tf__msgpack_type_name(got));
}

static tf_code unpack_dtype(const msgpack_object *o, tf_dtype *dt,
                            tf_status *st) {
  int64_t v;
  if (!tf__msgpack_get_i64(o, &v)) {
    return field_error(st, "dtype", "an int", o);
  }
  if (v <= 0 || v >= TF_DTYPE_MAX || !tf_dtype_is_valid((tf_dtype)v)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor field 'dtype': %lld is not a dtype",
                         (long long)v);
  }
  *dt = (tf_dtype)v;
  return TF_OK;
}

static tf_code unpack_shape(const msgpack_object *o, tf_shape *shape,
                            tf_status *st) {
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    return field_error(st, "shape", "an array", o);
  }
  if (o->via.array.size > TF_MAX_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor field 'shape': rank %u exceeds %d",
                         o->via.array.size, TF_MAX_RANK);
  }
  memset(shape, 0, sizeof *shape);
  shape->rank = (int32_t)o->via.array.size;
  for (int i = 0; i < shape->rank; i++) {
    const msgpack_object *d = &o->via.array.ptr[i];
    if (!tf__msgpack_get_i64(d, &shape->dims[i]) || shape->dims[i] < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "tensor field 'shape': dim %d is not an int >= 0 "
                           "(%s)",
                           i, tf__msgpack_type_name(d));
    }
  }
  return TF_OK;
}

static tf_code unpack_strings(const msgpack_object *o, const tf_shape *shape,
                              int64_t n, tf_tensor **out, tf_status *st) {
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    return field_error(st, "data", "an array of bin for a string tensor", o);
  }
  if ((int64_t)o->via.array.size != n) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor field 'data': %u strings, the shape needs "
                         "%lld",
                         o->via.array.size, (long long)n);
  }
  for (int64_t i = 0; i < n; i++) {
    msgpack_object_type ty = o->via.array.ptr[i].type;
    if (ty != MSGPACK_OBJECT_BIN && ty != MSGPACK_OBJECT_STR) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "tensor field 'data': string %lld is a %s, not "
                           "bin",
                           (long long)i,
                           tf__msgpack_type_name(&o->via.array.ptr[i]));
    }
  }
  TF_TRY(tf_tensor_new(TF_STRING, shape, out, st));
  for (int64_t i = 0; i < n; i++) {
    /* bin and str share the {size, ptr} layout. */
    const msgpack_object_bin *b = &o->via.array.ptr[i].via.bin;
    tf_code c = tf_tensor_set_string(*out, i, b->ptr, b->size, st);
    if (c != TF_OK) {
      tf_tensor_unref(*out);
      *out = NULL;
      return c;
    }
  }
  return TF_OK;
}

static tf_code unpack_numeric(const msgpack_object *o, tf_dtype dt,
                              const tf_shape *shape, int64_t n,
                              tf_tensor **out, tf_status *st) {
  if (o->type != MSGPACK_OBJECT_BIN) {
    return field_error(st, "data", "a bin", o);
  }
  size_t want = (size_t)n * tf_dtype_size(dt);
  const msgpack_object_bin *b = &o->via.bin;
  if (b->size != want) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor field 'data': %u bytes, a %s tensor of %lld "
                         "elements needs %zu",
                         b->size, tf_dtype_name(dt), (long long)n, want);
  }
  if (dt == TF_BOOL) {
    for (size_t i = 0; i < want; i++) {
      if ((uint8_t)b->ptr[i] > 1) {
        return tf_status_set(st, TF_INVALID_ARGUMENT,
                             "tensor field 'data': bool element %zu has byte "
                             "value %u (must be 0 or 1)",
                             i, (unsigned)(uint8_t)b->ptr[i]);
      }
    }
  }
  return tf_tensor_from_data(dt, shape, b->ptr, want, out, st);
}

/* Finds the three fields of a tensor map, rejecting unknown and repeated
 * keys. */
static tf_code tensor_fields(const msgpack_object *o,
                             const msgpack_object *f[3], tf_status *st) {
  static const char *names[3] = {"dtype", "shape", "data"};
  if (o->type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor: expected a map, got %s",
                         tf__msgpack_type_name(o));
  }
  f[0] = f[1] = f[2] = NULL;
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object *k = &o->via.map.ptr[i].key;
    int j = 0;
    while (j < 3 && !tf__msgpack_str_eq(k, names[j])) {
      j++;
    }
    if (j == 3 || f[j] != NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "tensor: %s key %u (%s)",
                           j == 3 ? "unknown" : "repeated", i,
                           tf__msgpack_type_name(k));
    }
    f[j] = &o->via.map.ptr[i].val;
  }
  for (int j = 0; j < 3; j++) {
    if (f[j] == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "tensor: missing field '%s'", names[j]);
    }
  }
  return TF_OK;
}

tf_code tf__unpack_tensor(const msgpack_object *o, tf_tensor **out,
                          tf_status *st) {
  const msgpack_object *f[3];
  tf_dtype dt = TF_DTYPE_INVALID;
  tf_shape shape;
  int64_t n;
  *out = NULL;
  TF_TRY(tensor_fields(o, f, st));
  TF_TRY(unpack_dtype(f[0], &dt, st));
  TF_TRY(unpack_shape(f[1], &shape, st));
  TF_TRY(tf_shape_check(&shape, tf_dtype_size(dt), &n, st));
  if (dt == TF_STRING) {
    return unpack_strings(f[2], &shape, n, out, st);
  }
  return unpack_numeric(f[2], dt, &shape, n, out, st);
}

tf_code tf_tensor_from_msgpack(const void *buf, size_t len, tf_tensor **out,
                               tf_status *st) {
  msgpack_unpacked res;
  *out = NULL;
  tf_code c = tf__msgpack_unpack(buf, len, TF_MSGPACK_MAX_DEPTH, &res, st);
  if (c == TF_OK) {
    c = tf__unpack_tensor(&res.data, out, st);
  }
  msgpack_unpacked_destroy(&res);
  return c;
}
