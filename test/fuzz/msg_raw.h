/* msg_raw.h: wire messages from raw body bytes, for the message fuzz
 * harnesses (msg_fuzz.h), their seeds (gen_corpus.c) and the unit tests
 * of lib/transport/messages.h. raw_build puts a real header (packed by
 * tf_wire_finish) in front of arbitrary body bytes and a payload area;
 * raw_split takes a message apart again. Aborts on misuse: these are test
 * tools, not decoders. */
#ifndef TF_TEST_FUZZ_MSG_RAW_H
#define TF_TEST_FUZZ_MSG_RAW_H

#include <nng/nng.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/transport/wire.h"

#define RAW_PREFIX 8

static inline void raw_die(const char *what) {
  fprintf(stderr, "msg_raw: %s\n", what);
  abort();
}

static inline size_t raw_align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* The message with header h, body (blen bytes: one msgpack object, or
 * anything at all: the receiver judges) and payload area pay[0..plen). */
static inline nng_msg *raw_build(const tf_wire_header *h, const void *body,
                                 size_t blen, const void *pay, size_t plen) {
  nng_msg *nil = NULL;
  tf_status st;
  if (tf_wire_finish(tf_wire_writer_new(h), &nil, &st) != TF_OK) {
    raw_die(st.msg);
  }
  /* prefix | 0x92 header 0xc0 (the nil body): replace the nil. */
  const uint8_t *b = nng_msg_body(nil);
  size_t hlen = nng_msg_len(nil) - RAW_PREFIX - 1; /* 0x92 + header */
  size_t n = hlen + blen;
  size_t area = raw_align64(RAW_PREFIX + n);
  size_t total = plen > 0 ? area + plen : RAW_PREFIX + n;
  nng_msg *m = NULL;
  if (n > UINT32_MAX || nng_msg_alloc(&m, total) != 0) {
    raw_die("cannot allocate a message");
  }
  uint8_t *d = nng_msg_body(m);
  memset(d, 0, total);
  memcpy(d, b, RAW_PREFIX + hlen);
  for (int i = 0; i < 4; i++) {
    d[4 + i] = (uint8_t)(n >> (8 * i));
  }
  if (blen > 0) {
    memcpy(d + RAW_PREFIX + hlen, body, blen);
  }
  if (plen > 0) {
    memcpy(d + area, pay, plen);
  }
  nng_msg_free(nil);
  return m;
}

/* The body bytes and payload area of a message tf_wire_finish built
 * (pointers into m). */
static inline void raw_split(nng_msg *m, const uint8_t **body, size_t *blen,
                             const uint8_t **pay, size_t *plen) {
  const uint8_t *b = nng_msg_body(m);
  size_t len = nng_msg_len(m), n = 0, hend = 0;
  for (int i = 3; i >= 0; i--) {
    n = (n << 8) | b[4 + i];
  }
  if (len < RAW_PREFIX + 1 || b[RAW_PREFIX] != 0x92 ||
      tf__msgpack_check(b + RAW_PREFIX + 1, n - 1, TF_MSGPACK_MAX_DEPTH, &hend,
                        NULL) != TF_OK) {
    raw_die("not a message tf_wire_finish built");
  }
  *body = b + RAW_PREFIX + 1 + hend;
  *blen = n - 1 - hend;
  size_t area = raw_align64(RAW_PREFIX + n);
  *pay = b + (area < len ? area : len);
  *plen = area < len ? len - area : 0;
}

#endif
