/* tensor_msgpack.h: msgpack-level helpers shared by the tensor and graph
 * codecs and the wire protocol (internal).
 *
 * Decoding untrusted msgpack goes through tf__msgpack_unpack, which first
 * walks the bytes with tf__msgpack_check: msgpack-c allocates an array's or
 * map's element slots as soon as it reads the header, so a 5-byte input
 * declaring 2^32 elements would otherwise ask for ~100 GB. The walk rejects
 * any container whose declared count exceeds the bytes left (each element
 * takes at least one byte) and nesting beyond a limit, so what msgpack-c
 * allocates afterwards is bounded by a small multiple of the input length. */
#ifndef TF_CORE_TENSOR_MSGPACK_H
#define TF_CORE_TENSOR_MSGPACK_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "tf/status.h"
#include "tf/tensor.h"

/* Deepest container nesting tf__msgpack_unpack accepts by default. Graphs
 * use 8 levels; msgpack-c itself stops at 32. */
#define TF_MSGPACK_MAX_DEPTH 16

/* Walks one msgpack object at the start of buf without allocating. On OK,
 * *end is the offset just past it. DATA_LOSS when the bytes end early or a
 * container declares more elements than bytes remain; INVALID_ARGUMENT on
 * the reserved byte 0xc1 or nesting deeper than max_depth (<= 32). Messages
 * name the byte offset. */
tf_code tf__msgpack_check(const void *buf, size_t len, int max_depth,
                          size_t *end, tf_status *st);

/* Checks buf with tf__msgpack_check and unpacks exactly one object spanning
 * all len bytes into *res (initialised here; the caller destroys it with
 * msgpack_unpacked_destroy in every case). Strings and bins in the result
 * point into buf, which must outlive *res. Trailing bytes are
 * INVALID_ARGUMENT. */
tf_code tf__msgpack_unpack(const void *buf, size_t len, int max_depth,
                           msgpack_unpacked *res, tf_status *st);

/* Appends t as map {"dtype": int, "shape": [int], "data": bin} (strings:
 * "data" is an array of bin, one per element); numeric data is the
 * little-endian element bytes. INVALID_ARGUMENT if a bin or array would
 * exceed msgpack's 2^32-1 limit, RESOURCE_EXHAUSTED if the packer's writer
 * fails (out of memory). */
tf_code tf__pack_tensor(msgpack_packer *pk, const tf_tensor *t,
                        tf_status *st);

/* Builds a new tensor from an object written by tf__pack_tensor. Every
 * field is type-checked; the dtype must be valid, the shape rank <= 8 with
 * dims >= 0 whose product (times the element size) fits, and the data must
 * hold exactly that many bytes (bool bytes 0 or 1; string arrays exactly n
 * elements). INVALID_ARGUMENT naming the field otherwise; the caller owns
 * *out on OK, *out is NULL on error. */
tf_code tf__unpack_tensor(const msgpack_object *o, tf_tensor **out,
                          tf_status *st);

/* Small accessors for decoders. */
const char *tf__msgpack_type_name(const msgpack_object *o);
/* True when o is a str equal to the NUL-terminated key. */
bool tf__msgpack_str_eq(const msgpack_object *o, const char *key);
/* o as int64 (positive or negative integer that fits); false otherwise. */
bool tf__msgpack_get_i64(const msgpack_object *o, int64_t *v);
/* Packs a NUL-terminated string as str; returns msgpack's 0 / -1. */
int tf__msgpack_pack_cstr(msgpack_packer *pk, const char *s);

#endif
