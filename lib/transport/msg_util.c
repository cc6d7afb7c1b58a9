/* msg_util.c: the helpers the message codecs share (msg_util.h): a
 * decoded struct's memory (a list of blocks freed together), the walk
 * over a body map's keys, typed readers whose errors name the method and
 * the field, packing helpers that keep senders within the caps, and the
 * reply writer that carries the replying task's identity. */
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/transport/msg_util.h"

/* ---- memory -------------------------------------------------------------- */

struct tf__msg_block {
  struct tf__msg_block *next;
  alignas(max_align_t) unsigned char data[];
};

void *tf__msg_alloc(tf_msg_mem *m, size_t n) {
  struct tf__msg_block *b = tf__xcalloc(1, sizeof *b + (n > 0 ? n : 1));
  b->next = m->head;
  m->head = b;
  return b->data;
}

void tf__msg_mem_free(tf_msg_mem *m) {
  struct tf__msg_block *b = m->head;
  while (b != NULL) {
    struct tf__msg_block *next = b->next;
    free(b);
    b = next;
  }
  m->head = NULL;
}

/* ---- naming a value in errors -------------------------------------------- */

static tf_code bad(tf_status *st, const char *what, const char *key, int64_t idx,
                   const msgpack_object *o, const char *want) {
  if (o == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: field '%s' is missing",
                         what, key);
  }
  if (idx >= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s[%lld] is a %s, not %s",
                         what, key, (long long)idx, tf__msgpack_type_name(o), want);
  }
  return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: field '%s' is a %s, not %s",
                       what, key, tf__msgpack_type_name(o), want);
}

/* "field 'key'" or "key[idx]" into buf. */
static const char *where(char *buf, size_t size, const char *key, int64_t idx) {
  if (idx >= 0) {
    snprintf(buf, size, "%s[%lld]", key, (long long)idx);
  } else {
    snprintf(buf, size, "field '%s'", key);
  }
  return buf;
}

/* ---- decoding ------------------------------------------------------------ */

static tf_code find_fields(const msgpack_object_map *m, const char *what,
                           tf__msg_field *f, int n, tf_status *st) {
  for (int k = 0; k < n; k++) {
    f[k].val = NULL;
  }
  for (uint32_t i = 0; i < m->size; i++) {
    const msgpack_object_kv *kv = &m->ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: key %u is a %s, not a str",
                           what, i, tf__msgpack_type_name(&kv->key));
    }
    for (int k = 0; k < n; k++) {
      if (!tf__msgpack_str_eq(&kv->key, f[k].key)) {
        continue;
      }
      if (f[k].val != NULL) {
        return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: field '%s' appears twice",
                             what, f[k].key);
      }
      f[k].val = &kv->val;
      break;
    }
  }
  return TF_OK;
}

tf_code tf__msg_body(const tf_wire_msg *r, int method, bool reply,
                     const char *what, tf__msg_field *f, int n, tf_status *st) {
  if (r->h.method != method || r->h.is_reply != reply) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the message is a %s %s",
                         what, tf_method_name(r->h.method),
                         r->h.is_reply ? "reply" : "request");
  }
  if (r->body.type != MSGPACK_OBJECT_MAP) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the body is a %s, not a map",
                         what, tf__msgpack_type_name(&r->body));
  }
  return find_fields(&r->body.via.map, what, f, n, st);
}

tf_code tf__msg_map(const msgpack_object *o, const char *what, const char *key,
                    int64_t idx, tf__msg_field *f, int n, tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_MAP) {
    return bad(st, what, key, idx, o, "a map");
  }
  return find_fields(&o->via.map, what, f, n, st);
}

tf_code tf__msg_get_u64(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, uint64_t *out, tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    return bad(st, what, key, idx, o, "an unsigned int");
  }
  *out = o->via.u64;
  return TF_OK;
}

tf_code tf__msg_get_int(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, int64_t lo, int64_t hi, int64_t *out,
                        tf_status *st) {
  if (o == NULL || (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER &&
                    o->type != MSGPACK_OBJECT_NEGATIVE_INTEGER)) {
    return bad(st, what, key, idx, o, "an int");
  }
  bool pos = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER; /* else < 0 */
  bool in = pos ? hi >= 0 && o->via.u64 <= (uint64_t)hi &&
                      (lo <= 0 || o->via.u64 >= (uint64_t)lo)
                : o->via.i64 >= lo && o->via.i64 <= hi;
  if (!in) {
    char at[96], val[32];
    if (pos) {
      snprintf(val, sizeof val, "%llu", (unsigned long long)o->via.u64);
    } else {
      snprintf(val, sizeof val, "%lld", (long long)o->via.i64);
    }
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s is %s, not in [%lld, %lld]",
                         what, where(at, sizeof at, key, idx), val, (long long)lo,
                         (long long)hi);
  }
  *out = pos ? (int64_t)o->via.u64 : o->via.i64;
  return TF_OK;
}

tf_code tf__msg_get_bool(const msgpack_object *o, const char *what, const char *key,
                         int64_t idx, bool *out, tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_BOOLEAN) {
    return bad(st, what, key, idx, o, "a bool");
  }
  *out = o->via.boolean;
  return TF_OK;
}

tf_code tf__msg_get_f64(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, double lo, double hi, bool nan_ok, double *out,
                        tf_status *st) {
  double v = 0;
  if (o != NULL && (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)) {
    v = o->via.f64; /* msgpack-c widens a float32 to this double */
  } else if (o != NULL && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    v = (double)o->via.u64;
  } else if (o != NULL && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    v = (double)o->via.i64;
  } else {
    return bad(st, what, key, idx, o, "a number");
  }
  char at[96];
  if (isnan(v) && !nan_ok) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s is NaN, not a number in "
                         "[%g, %g]", what, where(at, sizeof at, key, idx), lo, hi);
  }
  if (!isnan(v) && (v < lo || v > hi)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s is %g, not in [%g, %g]", what,
                         where(at, sizeof at, key, idx), v, lo, hi);
  }
  *out = v;
  return TF_OK;
}

tf_code tf__msg_get_str(tf_msg_mem *mem, const msgpack_object *o, const char *what,
                        const char *key, int64_t idx, const char **out,
                        tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_STR) {
    return bad(st, what, key, idx, o, "a str");
  }
  uint32_t n = o->via.str.size;
  char at[96];
  if (n > TF_MSG_MAX_STR_BYTES) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s is %u bytes long, over the "
                         "cap of %d (TF_MSG_MAX_STR_BYTES)", what,
                         where(at, sizeof at, key, idx), n, TF_MSG_MAX_STR_BYTES);
  }
  if (n > 0 && memchr(o->via.str.ptr, '\0', n) != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s holds a NUL byte", what,
                         where(at, sizeof at, key, idx));
  }
  char *s = tf__msg_alloc(mem, (size_t)n + 1);
  if (n > 0) {
    memcpy(s, o->via.str.ptr, n);
  }
  *out = s;
  return TF_OK;
}

tf_code tf__msg_get_bin(const msgpack_object *o, const char *what, const char *key,
                        const void **out, size_t *len, tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_BIN) {
    return bad(st, what, key, -1, o, "binary");
  }
  *out = o->via.bin.ptr;
  *len = o->via.bin.size;
  return TF_OK;
}

tf_code tf__msg_get_list(const msgpack_object *o, const char *what, const char *key,
                         uint32_t cap, const char *cap_name,
                         const msgpack_object_array **out, tf_status *st) {
  if (o == NULL || o->type != MSGPACK_OBJECT_ARRAY) {
    return bad(st, what, key, -1, o, "an array");
  }
  if (o->via.array.size > cap) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: '%s' has %u entries, over "
                         "the cap of %u (%s)", what, key, o->via.array.size, cap,
                         cap_name);
  }
  *out = &o->via.array;
  return TF_OK;
}

tf_code tf__msg_get_tensor(const tf_wire_msg *r, const msgpack_object *o,
                           const char *what, const char *key, int64_t idx,
                           bool nil_ok, tf_tensor **out, tf_status *st) {
  *out = NULL;
  if (o == NULL) {
    return bad(st, what, key, idx, o, "a tensor");
  }
  if (o->type == MSGPACK_OBJECT_NIL) {
    if (nil_ok) {
      return TF_OK;
    }
    return bad(st, what, key, idx, o, "a tensor");
  }
  if (tf_wire_unpack_tensor(r, o, out, st) != TF_OK) {
    char at[96];
    return tf_status_prefix(st, "%s: %s", what, where(at, sizeof at, key, idx));
  }
  return TF_OK;
}

tf_code tf__msg_get_strs(tf_msg_mem *mem, const msgpack_object *o, const char *what,
                         const char *key, uint32_t cap, const char *cap_name,
                         const char ***out, int *n, tf_status *st) {
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_list(o, what, key, cap, cap_name, &a, st));
  const char **v = tf__msg_alloc(mem, (size_t)a->size * sizeof *v);
  for (uint32_t i = 0; i < a->size; i++) {
    TF_TRY(tf__msg_get_str(mem, &a->ptr[i], what, key, i, &v[i], st));
  }
  *out = v;
  *n = (int)a->size;
  return TF_OK;
}

/* ---- encoding ------------------------------------------------------------ */

void tf__msg_pack_bool(msgpack_packer *pk, bool v) {
  if (v) {
    msgpack_pack_true(pk);
  } else {
    msgpack_pack_false(pk);
  }
}

void tf__msg_pack_f64(msgpack_packer *pk, double v) { msgpack_pack_double(pk, v); }

void tf__msg_pack_str(tf_wire_writer *w, const char *what, const char *key,
                      const char *s) {
  size_t n = s != NULL ? strlen(s) : 0;
  if (n > TF_MSG_MAX_STR_BYTES) {
    tf_status st;
    tf_status_set(&st, TF_INVALID_ARGUMENT, "%s: '%s' is %zu bytes long, over the "
                  "cap of %d (TF_MSG_MAX_STR_BYTES)", what, key, n,
                  TF_MSG_MAX_STR_BYTES);
    tf_wire_writer_fail(w, &st);
    s = "";
  }
  tf_wire_pack_str(tf_wire_body(w), s);
}

bool tf__msg_pack_list(tf_wire_writer *w, const char *what, const char *key,
                       size_t n, uint32_t cap, const char *cap_name) {
  if (n > cap) {
    tf_status st;
    tf_status_set(&st, TF_INVALID_ARGUMENT, "%s: '%s' has %zu entries, over the "
                  "cap of %u (%s)", what, key, n, cap, cap_name);
    tf_wire_writer_fail(w, &st);
    msgpack_pack_array(tf_wire_body(w), 0);
    return false;
  }
  msgpack_pack_array(tf_wire_body(w), n);
  return true;
}

void tf__msg_pack_bin(tf_wire_writer *w, const char *what, const char *key,
                      const void *p, size_t len) {
  msgpack_packer *pk = tf_wire_body(w);
  if (len > UINT32_MAX) { /* msgpack's bin holds at most 2^32-1 bytes */
    tf_status st;
    tf_status_set(&st, TF_INVALID_ARGUMENT, "%s: '%s' is %zu bytes long, over "
                  "msgpack's limit of 2^32-1", what, key, len);
    tf_wire_writer_fail(w, &st);
    len = 0;
  }
  msgpack_pack_bin(pk, len);
  if (len > 0) {
    msgpack_pack_bin_body(pk, p, len);
  }
}

void tf__msg_pack_strs(tf_wire_writer *w, const char *what, const char *key,
                       const char *const *s, int n, uint32_t cap,
                       const char *cap_name) {
  if (!tf__msg_pack_list(w, what, key, (size_t)(n > 0 ? n : 0), cap, cap_name)) {
    return;
  }
  for (int i = 0; i < n; i++) {
    tf__msg_pack_str(w, what, key, s[i]);
  }
}

void tf__msg_pack_tensor(tf_wire_writer *w, const tf_tensor *t) {
  if (t == NULL) {
    msgpack_pack_nil(tf_wire_body(w));
  } else {
    tf_wire_pack_tensor(w, t);
  }
}

/* ---- identity ------------------------------------------------------------ */

tf_wire_writer *tf_msg_reply_writer(const tf_wire_msg *req, const char *self,
                                    uint64_t self_inc) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = req->h.method,
                      .request_id = req->h.request_id,
                      .session = req->h.session, .step_id = req->h.step_id,
                      .from = self, .from_inc = self_inc,
                      .to = req->h.from, .to_inc = req->h.from_inc,
                      .is_reply = true, .code = TF_OK, .error = ""};
  return tf_wire_writer_new(&h);
}
