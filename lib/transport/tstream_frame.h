/* tstream_frame.h: the tensor stream's frame codec (internal to
 * lib/transport; docs/wire.md, "Tensor stream"). Pure functions over byte
 * buffers, so the server, the client, the tests and the fuzz harness share
 * one encoder and one decoder. The decoder is the only place that checks
 * a frame: everything it accepts is safe to allocate and deliver.
 *
 * Prefix (16 bytes): "TFT" | version (1) | u32 LE header length |
 * u64 LE payload length. Header: a msgpack map of exactly the keys
 * step, key, dead, dt, shape, from, from_inc, to, to_inc. */
#ifndef TF_TRANSPORT_TSTREAM_FRAME_H
#define TF_TRANSPORT_TSTREAM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "lib/transport/tensor_stream.h"

#define TF__TSTREAM_VERSION 1
#define TF__TSTREAM_PREFIX_BYTES 16
#define TF__TSTREAM_MAX_HEADER_BYTES 65536

typedef struct tf__tstream_prefix {
  uint32_t header_len;
  uint64_t payload_len;
} tf__tstream_prefix;

/* Writes the 16-byte prefix. */
void tf__tstream_prefix_write(uint8_t out[TF__TSTREAM_PREFIX_BYTES],
                              uint32_t header_len, uint64_t payload_len);

/* Reads and checks a prefix: INVALID_ARGUMENT "bad magic", "unsupported
 * version V", "header length N is not in 1..65536", "payload length N is
 * over the limit of M bytes". */
tf_code tf__tstream_prefix_read(const uint8_t in[TF__TSTREAM_PREFIX_BYTES],
                                uint64_t max_payload, tf__tstream_prefix *out,
                                tf_status *st);

/* Packs h's header with t's dtype and shape (t NULL: a dead value) into a
 * malloc'd buffer. INVALID_ARGUMENT for an empty key or to, a dead value
 * with a tensor or a live one without, a string tensor, or a header over
 * 64 KiB. */
tf_code tf__tstream_header_pack(const tf_tstream_hdr *h, const tf_tensor *t,
                                void **out, size_t *len, tf_status *st);

/* Packs h as it is (dtype and shape from h, nothing checked but the
 * 64 KiB limit): for tests and the fuzz harness, which re-encode what the
 * decoder accepted. */
tf_code tf__tstream_header_pack_raw(const tf_tstream_hdr *h, void **out,
                                    size_t *len, tf_status *st);

/* A decoded header: h's strings point into strs, which it owns. */
typedef struct tf__tstream_decoded {
  tf_tstream_hdr h;
  char *strs;
} tf__tstream_decoded;

/* Decodes len header bytes and checks them against the prefix's
 * payload_len: exactly one msgpack map with every key once and no other,
 * each of its type; strings without NUL bytes; key and to non-empty; a
 * dead value with dt 0, shape [] and no payload; otherwise a numeric or
 * bool dtype, a shape of rank <= 8 whose byte size is payload_len.
 * INVALID_ARGUMENT "header: ..." naming the field otherwise (out is then
 * empty). */
tf_code tf__tstream_header_decode(const void *buf, size_t len,
                                  uint64_t payload_len,
                                  tf__tstream_decoded *out, tf_status *st);
/* NULL-safe; leaves d empty. */
void tf__tstream_decoded_fini(tf__tstream_decoded *d);

#endif
