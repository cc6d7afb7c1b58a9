/* tstream_frame_fuzz.c: libFuzzer harness for the tensor stream's frame
 * decoder (lib/transport/tstream_frame.h): the input is a frame's first
 * bytes, a 16-byte prefix and then the header. A rejection must be
 * INVALID_ARGUMENT with a message and leave nothing allocated; an accepted
 * header must describe exactly the declared payload and survive packing
 * and decoding again unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/transport/tstream_frame.h"
#include "test/fuzz/fuzz_util.h"

#define MAX_PAYLOAD (1ull << 30)

static void check_same(const tf_tstream_hdr *a, const tf_tstream_hdr *b,
                       const tf_status *st) {
  FUZZ_CHECK(a->step_id == b->step_id && a->is_dead == b->is_dead &&
                 a->dtype == b->dtype && tf_shape_equal(&a->shape, &b->shape) &&
                 a->from_inc == b->from_inc && a->to_inc == b->to_inc,
             st);
  FUZZ_CHECK(strcmp(a->key, b->key) == 0 && strcmp(a->from, b->from) == 0 &&
                 strcmp(a->to, b->to) == 0,
             st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  if (size < TF__TSTREAM_PREFIX_BYTES) {
    return 0;
  }
  tf__tstream_prefix p;
  tf_code c = tf__tstream_prefix_read(data, MAX_PAYLOAD, &p, &st);
  if (c != TF_OK) {
    FUZZ_CHECK(c == TF_INVALID_ARGUMENT && st.msg[0] != '\0', &st);
    return 0;
  }
  FUZZ_CHECK(p.header_len >= 1 && p.header_len <= TF__TSTREAM_MAX_HEADER_BYTES &&
                 p.payload_len <= MAX_PAYLOAD, &st);
  /* The server reads exactly header_len bytes; a shorter input is decoded
   * as it is (the decoder sees only a buffer). */
  size_t hl = size - TF__TSTREAM_PREFIX_BYTES;
  hl = hl < p.header_len ? hl : p.header_len;
  tf__tstream_decoded d;
  c = tf__tstream_header_decode(data + TF__TSTREAM_PREFIX_BYTES, hl,
                                p.payload_len, &d, &st);
  if (c != TF_OK) {
    FUZZ_CHECK(c == TF_INVALID_ARGUMENT && st.msg[0] != '\0', &st);
    FUZZ_CHECK(d.strs == NULL, &st);
    return 0;
  }
  const tf_tstream_hdr *h = &d.h;
  FUZZ_CHECK(h->key[0] != '\0' && h->to[0] != '\0', &st);
  if (h->is_dead) {
    FUZZ_CHECK(p.payload_len == 0 && h->shape.rank == 0, &st);
  } else {
    int64_t n = tf_shape_num_elements(&h->shape);
    FUZZ_CHECK(h->dtype != TF_STRING && n >= 0 &&
                   (uint64_t)n * tf_dtype_size(h->dtype) == p.payload_len,
               &st);
  }
  void *b = NULL;
  size_t n = 0;
  FUZZ_CHECK(tf__tstream_header_pack_raw(h, &b, &n, &st) == TF_OK, &st);
  tf__tstream_decoded d2;
  FUZZ_CHECK(tf__tstream_header_decode(b, n, p.payload_len, &d2, &st) == TF_OK, &st);
  check_same(h, &d2.h, &st);
  tf__tstream_decoded_fini(&d2);
  tf__tstream_decoded_fini(&d);
  free(b);
  return 0;
}
