/* msg_util.h: what the message codecs (msg_*.c) share, internal to
 * lib/transport: the memory a decoded struct owns, finding the fields of
 * a body map, typed readers that check a value and name it in their
 * errors, and packing helpers that enforce the caps of messages.h on the
 * sending side.
 *
 * Readers name a value as "<what>: field '<key>'" (idx < 0) or
 * "<what>: <key>[<idx>]" (an element of the list under key); what is the
 * message ("RunGraph", "ClusterStatus reply") or a part of it
 * ("ClusterStatus reply: tasks[3]"). A NULL object is a missing field. */
#ifndef TF_TRANSPORT_MSG_UTIL_H
#define TF_TRANSPORT_MSG_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/transport/messages.h"

/* n zeroed bytes owned by m (n may be 0); aborts when out of memory, as
 * every metadata allocation does (the caps bound n). */
void *tf__msg_alloc(tf_msg_mem *m, size_t n);
/* Frees everything m owns and empties it. */
void tf__msg_mem_free(tf_msg_mem *m);

/* ---- decoding ------------------------------------------------------------ */

typedef struct tf__msg_field {
  const char *key;
  const msgpack_object *val; /* NULL: absent */
} tf__msg_field;

/* Checks that r is a request (reply false) or a reply of method, and that
 * its body is a map with str keys; fills f[i].val with the value under
 * f[i].key. Unknown keys are ignored; a known key twice is refused. */
tf_code tf__msg_body(const tf_wire_msg *r, int method, bool reply,
                     const char *what, tf__msg_field *f, int n, tf_status *st);
/* The same for a map inside a body (o may be any object). */
tf_code tf__msg_map(const msgpack_object *o, const char *what, const char *key,
                    int64_t idx, tf__msg_field *f, int n, tf_status *st);

tf_code tf__msg_get_u64(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, uint64_t *out, tf_status *st);
/* An integer in [lo, hi]. */
tf_code tf__msg_get_int(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, int64_t lo, int64_t hi, int64_t *out,
                        tf_status *st);
tf_code tf__msg_get_bool(const msgpack_object *o, const char *what, const char *key,
                         int64_t idx, bool *out, tf_status *st);
/* A number in [lo, hi] (infinities allowed as bounds): a float32, a
 * float64 or an int (converted to the nearest double). NaN is accepted
 * (whatever lo and hi are) only when nan_ok. */
tf_code tf__msg_get_f64(const msgpack_object *o, const char *what, const char *key,
                        int64_t idx, double lo, double hi, bool nan_ok, double *out,
                        tf_status *st);
/* A str of at most TF_MSG_MAX_STR_BYTES bytes without NUL bytes, copied
 * into mem with a terminating NUL. */
tf_code tf__msg_get_str(tf_msg_mem *mem, const msgpack_object *o, const char *what,
                        const char *key, int64_t idx, const char **out,
                        tf_status *st);
/* A bin, borrowed from the message. */
tf_code tf__msg_get_bin(const msgpack_object *o, const char *what, const char *key,
                        const void **out, size_t *len, tf_status *st);
/* An array of at most cap elements (cap_name names the cap in errors). */
tf_code tf__msg_get_list(const msgpack_object *o, const char *what, const char *key,
                         uint32_t cap, const char *cap_name,
                         const msgpack_object_array **out, tf_status *st);
/* A tensor descriptor of r (tf_wire_unpack_tensor; its error prefixed
 * with where the tensor is). nil_ok: nil gives *out NULL. */
tf_code tf__msg_get_tensor(const tf_wire_msg *r, const msgpack_object *o,
                           const char *what, const char *key, int64_t idx,
                           bool nil_ok, tf_tensor **out, tf_status *st);
/* A list of strs under key (cap TF_MSG_MAX_NAMES or as given), copied. */
tf_code tf__msg_get_strs(tf_msg_mem *mem, const msgpack_object *o, const char *what,
                         const char *key, uint32_t cap, const char *cap_name,
                         const char ***out, int *n, tf_status *st);

/* ---- encoding ------------------------------------------------------------ */

void tf__msg_pack_bool(msgpack_packer *pk, bool v);
/* Packs v as a float64, NaN and infinities included (bit for bit). */
void tf__msg_pack_f64(msgpack_packer *pk, double v);
/* Packs s (NULL as ""); a string over TF_MSG_MAX_STR_BYTES is packed as ""
 * and fails the writer, naming what and key. */
void tf__msg_pack_str(tf_wire_writer *w, const char *what, const char *key,
                      const char *s);
/* Packs the array header for n elements and returns true, or (n over
 * cap) packs an empty array, fails the writer and returns false. */
bool tf__msg_pack_list(tf_wire_writer *w, const char *what, const char *key,
                       size_t n, uint32_t cap, const char *cap_name);
/* Packs a bin (one over 2^32-1 bytes is packed empty and fails w). */
void tf__msg_pack_bin(tf_wire_writer *w, const char *what, const char *key,
                      const void *p, size_t len);
/* Packs the list of n strs under the current key (cap as given). */
void tf__msg_pack_strs(tf_wire_writer *w, const char *what, const char *key,
                       const char *const *s, int n, uint32_t cap,
                       const char *cap_name);
/* Packs t's descriptor, or nil for NULL. */
void tf__msg_pack_tensor(tf_wire_writer *w, const tf_tensor *t);

#endif
