/* tstream_frame.c: the tensor stream's frame codec: the 16-byte prefix and
 * the msgpack header, packed from and decoded into tf_tstream_hdr. The
 * decoder walks the header with tf__msgpack_unpack (bounded allocation),
 * then checks every key's presence, type and value; only then may a
 * caller allocate the payload it declares. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/msgpack_map.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/transport/tstream_frame.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "tensor payloads travel as the host's little-endian bytes");

static const uint8_t MAGIC[3] = {'T', 'F', 'T'};

/* ---- prefix ------------------------------------------------------------- */

static void put_le(uint8_t *p, uint64_t v, int k) {
  for (int i = 0; i < k; i++) {
    p[i] = (uint8_t)(v >> (8 * i));
  }
}

static uint64_t get_le(const uint8_t *p, int k) {
  uint64_t v = 0;
  for (int i = k - 1; i >= 0; i--) {
    v = (v << 8) | p[i];
  }
  return v;
}

void tf__tstream_prefix_write(uint8_t out[TF__TSTREAM_PREFIX_BYTES],
                              uint32_t header_len, uint64_t payload_len) {
  memcpy(out, MAGIC, 3);
  out[3] = TF__TSTREAM_VERSION;
  put_le(out + 4, header_len, 4);
  put_le(out + 8, payload_len, 8);
}

tf_code tf__tstream_prefix_read(const uint8_t in[TF__TSTREAM_PREFIX_BYTES],
                                uint64_t max_payload, tf__tstream_prefix *out,
                                tf_status *st) {
  if (memcmp(in, MAGIC, 3) != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "bad magic %02x %02x %02x (want \"TFT\")", in[0],
                         in[1], in[2]);
  }
  if (in[3] != TF__TSTREAM_VERSION) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "unsupported version %u (this build speaks %d)",
                         in[3], TF__TSTREAM_VERSION);
  }
  uint64_t hl = get_le(in + 4, 4), pl = get_le(in + 8, 8);
  if (hl == 0 || hl > TF__TSTREAM_MAX_HEADER_BYTES) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header length %llu is not in 1..%d",
                         (unsigned long long)hl, TF__TSTREAM_MAX_HEADER_BYTES);
  }
  if (pl > max_payload) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "payload length %llu is over the limit of %llu bytes",
                         (unsigned long long)pl,
                         (unsigned long long)max_payload);
  }
  out->header_len = (uint32_t)hl;
  out->payload_len = pl;
  return TF_OK;
}

/* ---- packing ------------------------------------------------------------ */

static tf_code pack_check(const tf_tstream_hdr *h, const tf_tensor *t,
                          tf_status *st) {
  if (h->key == NULL || h->key[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "the rendezvous key is empty");
  }
  if (h->to == NULL || h->to[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "key '%s': the receiving task (to) is empty", h->key);
  }
  if (h->is_dead != (t == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "key '%s': %s", h->key,
                         h->is_dead ? "a dead value carries no tensor"
                                    : "a live value needs a tensor");
  }
  if (t != NULL && t->dtype == TF_STRING) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "key '%s': string tensors are not carried by the "
                         "tensor stream", h->key);
  }
  return TF_OK;
}

static void pack_str(msgpack_packer *pk, tf__mp_map *m, const char *k,
                     const char *v) {
  tf__mp_map_key(m, k);
  tf__msgpack_pack_cstr(pk, v != NULL ? v : "");
}

static void pack_u64(msgpack_packer *pk, tf__mp_map *m, const char *k,
                     uint64_t v) {
  tf__mp_map_key(m, k);
  msgpack_pack_uint64(pk, v);
}

tf_code tf__tstream_header_pack_raw(const tf_tstream_hdr *h, void **out,
                                    size_t *len, tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  tf__mp_map m;
  tf__mp_map_begin(&m, &pk, 9);
  pack_u64(&pk, &m, "step", h->step_id);
  pack_str(&pk, &m, "key", h->key);
  tf__mp_map_key(&m, "dead");
  if (h->is_dead) {
    msgpack_pack_true(&pk);
  } else {
    msgpack_pack_false(&pk);
  }
  pack_u64(&pk, &m, "dt", (uint64_t)h->dtype);
  tf__mp_map_key(&m, "shape");
  int rank = h->shape.rank > 0 ? h->shape.rank : 0;
  msgpack_pack_array(&pk, (size_t)rank);
  for (int i = 0; i < rank; i++) {
    msgpack_pack_uint64(&pk, (uint64_t)h->shape.dims[i]);
  }
  pack_str(&pk, &m, "from", h->from);
  pack_u64(&pk, &m, "from_inc", h->from_inc);
  pack_str(&pk, &m, "to", h->to);
  pack_u64(&pk, &m, "to_inc", h->to_inc);
  tf__mp_map_end(&m);
  if (sb.size > TF__TSTREAM_MAX_HEADER_BYTES) {
    msgpack_sbuffer_destroy(&sb);
    *out = NULL;
    *len = 0;
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "key '%.64s...': the frame header would be over %d "
                         "bytes", h->key ? h->key : "", TF__TSTREAM_MAX_HEADER_BYTES);
  }
  *out = sb.data;
  *len = sb.size;
  return TF_OK;
}

tf_code tf__tstream_header_pack(const tf_tstream_hdr *h, const tf_tensor *t,
                                void **out, size_t *len, tf_status *st) {
  *out = NULL;
  *len = 0;
  TF_TRY(pack_check(h, t, st));
  tf_tstream_hdr full = *h;
  full.dtype = t != NULL ? t->dtype : TF_DTYPE_INVALID;
  full.shape = t != NULL ? t->shape : tf_shape_scalar();
  return tf__tstream_header_pack_raw(&full, out, len, st);
}

/* ---- decoding ----------------------------------------------------------- */

enum { F_STEP, F_KEY, F_DEAD, F_DT, F_SHAPE, F_FROM, F_FROM_INC, F_TO,
       F_TO_INC, F_COUNT };
static const char *const FIELD[F_COUNT] = {
    "step", "key", "dead", "dt", "shape", "from", "from_inc", "to", "to_inc"};

/* The raw fields, before any string is copied. */
typedef struct raw_hdr {
  const msgpack_object *v[F_COUNT];
} raw_hdr;

static int field_index(const msgpack_object *k) {
  for (int i = 0; i < F_COUNT; i++) {
    if (tf__msgpack_str_eq(k, FIELD[i])) {
      return i;
    }
  }
  return -1;
}

/* Fills r with each key's value: all present, none twice, nothing else. */
static tf_code collect(const msgpack_object *o, raw_hdr *r, tf_status *st) {
  if (o->type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "header: a %s, not a map",
                         tf__msgpack_type_name(o));
  }
  memset(r, 0, sizeof *r);
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    int f = field_index(&kv->key);
    if (f < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: entry %u: unknown key (a %s)", i,
                           tf__msgpack_type_name(&kv->key));
    }
    if (r->v[f] != NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: field '%s' appears twice", FIELD[f]);
    }
    r->v[f] = &kv->val;
  }
  for (int f = 0; f < F_COUNT; f++) {
    if (r->v[f] == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: field '%s' missing", FIELD[f]);
    }
  }
  return TF_OK;
}

static tf_code want_u64(const raw_hdr *r, int f, uint64_t *v, tf_status *st) {
  const msgpack_object *o = r->v[f];
  if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field '%s' is a %s, not an unsigned "
                         "integer", FIELD[f], tf__msgpack_type_name(o));
  }
  *v = o->via.u64;
  return TF_OK;
}

/* A string field without NUL bytes; empty ones refused if !may_be_empty. */
static tf_code want_str(const raw_hdr *r, int f, bool may_be_empty,
                        tf_status *st) {
  const msgpack_object *o = r->v[f];
  if (o->type != MSGPACK_OBJECT_STR) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field '%s' is a %s, not a string", FIELD[f],
                         tf__msgpack_type_name(o));
  }
  if (!may_be_empty && o->via.str.size == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field '%s' is empty", FIELD[f]);
  }
  if (memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field '%s' holds a NUL byte", FIELD[f]);
  }
  return TF_OK;
}

static tf_code want_shape(const raw_hdr *r, tf_shape *s, tf_status *st) {
  const msgpack_object *o = r->v[F_SHAPE];
  if (o->type != MSGPACK_OBJECT_ARRAY) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field 'shape' is a %s, not an array",
                         tf__msgpack_type_name(o));
  }
  if (o->via.array.size > TF_MAX_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: shape of rank %u (at most %d)",
                         o->via.array.size, TF_MAX_RANK);
  }
  s->rank = (int32_t)o->via.array.size;
  for (int i = 0; i < s->rank; i++) {
    const msgpack_object *d = &o->via.array.ptr[i];
    if (d->type != MSGPACK_OBJECT_POSITIVE_INTEGER || d->via.u64 > INT64_MAX) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: shape dimension %d is not an integer in "
                           "0..2^63-1", i);
    }
    s->dims[i] = (int64_t)d->via.u64;
  }
  return TF_OK;
}

/* Checks dtype and shape against the payload length. */
static tf_code check_value(const tf_tstream_hdr *h, uint64_t payload_len,
                           tf_status *st) {
  char sh[96];
  if (h->is_dead) {
    if (h->dtype != TF_DTYPE_INVALID || h->shape.rank != 0 || payload_len != 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "header: a dead value with dt %d, shape %s and a "
                           "%llu-byte payload (want 0, [] and none)",
                           (int)h->dtype, tf_shape_str(&h->shape, sh, sizeof sh),
                           (unsigned long long)payload_len);
    }
    return TF_OK;
  }
  if (!tf_dtype_is_valid(h->dtype) || h->dtype == TF_STRING) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: dt %d is not a numeric or bool dtype",
                         (int)h->dtype);
  }
  int64_t n = 0;
  size_t es = tf_dtype_size(h->dtype);
  if (tf_shape_check(&h->shape, es, &n, st) != TF_OK) {
    tf_status_prefix(st, "header");
    return TF_INVALID_ARGUMENT;
  }
  if ((uint64_t)n * es != payload_len) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: %s%s is %llu bytes, the payload length is "
                         "%llu", tf_dtype_name(h->dtype),
                         tf_shape_str(&h->shape, sh, sizeof sh),
                         (unsigned long long)((uint64_t)n * es),
                         (unsigned long long)payload_len);
  }
  return TF_OK;
}

/* Copies the three strings into one allocation owned by out. */
static void copy_strings(const raw_hdr *r, tf__tstream_decoded *out) {
  const msgpack_object_str *k = &r->v[F_KEY]->via.str;
  const msgpack_object_str *f = &r->v[F_FROM]->via.str;
  const msgpack_object_str *t = &r->v[F_TO]->via.str;
  char *p = tf__xmalloc((size_t)k->size + f->size + t->size + 3);
  out->strs = p;
  memcpy(p, k->ptr, k->size);
  p[k->size] = '\0';
  out->h.key = p;
  p += k->size + 1;
  memcpy(p, f->ptr, f->size);
  p[f->size] = '\0';
  out->h.from = p;
  p += f->size + 1;
  memcpy(p, t->ptr, t->size);
  p[t->size] = '\0';
  out->h.to = p;
}

static tf_code decode_fields(const raw_hdr *r, tf_tstream_hdr *h,
                             tf_status *st) {
  uint64_t dt = 0;
  TF_TRY(want_u64(r, F_STEP, &h->step_id, st));
  TF_TRY(want_str(r, F_KEY, false, st));
  if (r->v[F_DEAD]->type != MSGPACK_OBJECT_BOOLEAN) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: field 'dead' is a %s, not a bool",
                         tf__msgpack_type_name(r->v[F_DEAD]));
  }
  h->is_dead = r->v[F_DEAD]->via.boolean;
  TF_TRY(want_u64(r, F_DT, &dt, st));
  if (dt >= TF_DTYPE_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "header: dt %llu is not a numeric or bool dtype",
                         (unsigned long long)dt);
  }
  h->dtype = (tf_dtype)dt;
  TF_TRY(want_shape(r, &h->shape, st));
  TF_TRY(want_str(r, F_FROM, true, st));
  TF_TRY(want_u64(r, F_FROM_INC, &h->from_inc, st));
  TF_TRY(want_str(r, F_TO, false, st));
  return want_u64(r, F_TO_INC, &h->to_inc, st);
}

tf_code tf__tstream_header_decode(const void *buf, size_t len,
                                  uint64_t payload_len,
                                  tf__tstream_decoded *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  msgpack_unpacked res;
  tf_code c = tf__msgpack_unpack(buf, len, 4, &res, st);
  if (c != TF_OK) {
    msgpack_unpacked_destroy(&res);
    tf_status_prefix(st, "header");
    if (st != NULL) {
      st->code = TF_INVALID_ARGUMENT; /* a truncated header is malformed too */
    }
    return TF_INVALID_ARGUMENT;
  }
  raw_hdr r;
  tf_tstream_hdr h = {0};
  c = collect(&res.data, &r, st);
  if (c == TF_OK) {
    c = decode_fields(&r, &h, st);
  }
  if (c == TF_OK) {
    c = check_value(&h, payload_len, st);
  }
  if (c == TF_OK) {
    out->h = h;
    copy_strings(&r, out);
  }
  msgpack_unpacked_destroy(&res);
  return c;
}

void tf__tstream_decoded_fini(tf__tstream_decoded *d) {
  if (d != NULL) {
    free(d->strs);
    memset(d, 0, sizeof *d);
  }
}
