/* msg_fuzz.h: the libFuzzer harness for one typed message of
 * lib/transport/messages.h; each test/fuzz/msg_<name>_fuzz.c instantiates
 * it with MSG_FUZZ(type, method, is_reply). The input is the body: its
 * first msgpack object is the body map, the bytes after it the payload
 * area that tensor descriptors point into (seeds: gen_corpus.c). The
 * harness wraps them in a real header of that method (msg_raw.h), parses
 * and decodes. A rejection must be INVALID_ARGUMENT (or DATA_LOSS) with a
 * message and leave the struct empty; an accepted body must encode, and
 * the encoding must decode and encode again to the same bytes (so the
 * struct survived the round trip unchanged). */
#ifndef TF_TEST_FUZZ_MSG_FUZZ_H
#define TF_TEST_FUZZ_MSG_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "lib/transport/messages.h"
#include "test/fuzz/fuzz_util.h"
#include "test/fuzz/msg_raw.h"

typedef tf_code (*msg_fuzz_decode)(const tf_wire_msg *r, void *m, tf_status *st);
typedef void (*msg_fuzz_encode)(tf_wire_writer *w, const void *m);
typedef void (*msg_fuzz_fini)(void *m);

typedef struct msg_fuzz_ops {
  int method;
  bool reply;
  size_t size; /* of the struct */
  msg_fuzz_decode decode;
  msg_fuzz_encode encode;
  msg_fuzz_fini fini;
} msg_fuzz_ops;

static inline tf_wire_header msg_fuzz_header(const msg_fuzz_ops *ops) {
  return (tf_wire_header){.version = TF_WIRE_VERSION, .method = ops->method,
                          .request_id = 7, .session = 9, .step_id = 11,
                          .from = "/job:worker/replica:0/task:1", .from_inc = 3,
                          .to = "/job:ps/replica:0/task:0", .to_inc = 5,
                          .is_reply = ops->reply, .code = TF_OK, .error = ""};
}

/* Encodes m (which must succeed) into a new message. */
static inline nng_msg *msg_fuzz_encode_msg(const msg_fuzz_ops *ops, const void *m) {
  tf_wire_header h = msg_fuzz_header(ops);
  tf_wire_writer *w = tf_wire_writer_new(&h);
  ops->encode(w, m);
  nng_msg *out = NULL;
  tf_status st;
  tf_status_init(&st);
  FUZZ_CHECK(tf_wire_finish(w, &out, &st) == TF_OK, &st);
  return out;
}

/* Parses and decodes msg (taken) into m, which must succeed; returns the
 * parsed message (m may alias it). */
static inline tf_wire_msg *msg_fuzz_decode_ok(const msg_fuzz_ops *ops, nng_msg *msg,
                                              void *m) {
  tf_wire_msg *r = NULL;
  tf_status st;
  tf_status_init(&st);
  FUZZ_CHECK(tf_wire_parse(msg, &r, &st) == TF_OK, &st);
  FUZZ_CHECK(ops->decode(r, m, &st) == TF_OK, &st);
  return r;
}

static inline bool msg_fuzz_is_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != 0) return false;
  }
  return true;
}

/* Runs one input through ops's decoder (see the top of this file);
 * aborts on a violation. Returns whether the body decoded. */
static inline bool msg_fuzz_one(const msg_fuzz_ops *ops, const uint8_t *data, size_t size) {
  size_t end = 0;
  if (tf__msgpack_check(data, size, TF_MSGPACK_MAX_DEPTH - 1, &end, NULL) != TF_OK) {
    return false; /* no body object: nothing for the decoder to see */
  }
  tf_wire_header h = msg_fuzz_header(ops);
  tf_wire_msg *r = NULL;
  tf_status st;
  tf_status_init(&st);
  FUZZ_CHECK(tf_wire_parse(raw_build(&h, data, end, data + end, size - end), &r, &st) ==
                 TF_OK, &st);
  void *a = malloc(ops->size), *b = malloc(ops->size);
  memset(a, 0xa5, ops->size); /* decode must not rely on a zeroed struct */
  tf_code c = ops->decode(r, a, &st);
  if (c != TF_OK) {
    fuzz_check_rejection(c, &st);
    FUZZ_CHECK(msg_fuzz_is_zero(a, ops->size), &st);
    tf_wire_msg_free(r);
    free(a);
    free(b);
    return false;
  }
  nng_msg *m1 = msg_fuzz_encode_msg(ops, a);
  ops->fini(a);
  tf_wire_msg_free(r);
  size_t len1 = nng_msg_len(m1);
  uint8_t *bytes1 = malloc(len1 + 1);
  memcpy(bytes1, nng_msg_body(m1), len1);
  tf_wire_msg *r1 = msg_fuzz_decode_ok(ops, m1, b);
  nng_msg *m2 = msg_fuzz_encode_msg(ops, b);
  FUZZ_CHECK(nng_msg_len(m2) == len1 && memcmp(nng_msg_body(m2), bytes1, len1) == 0, &st);
  ops->fini(b);
  tf_wire_msg_free(r1);
  nng_msg_free(m2);
  free(bytes1);
  free(a);
  free(b);
  return true;
}

/* Defines `static const msg_fuzz_ops name` for message type T (a
 * tf_msg_..._req or _reply struct) of method, a reply or not. */
#define MSG_OPS(name, T, method_, reply_)                                      \
  static tf_code name##_decode(const tf_wire_msg *r, void *m, tf_status *st) { \
    return T##_decode(r, (T *)m, st);                                          \
  }                                                                            \
  static void name##_encode(tf_wire_writer *w, const void *m) {                \
    T##_encode(w, (const T *)m);                                               \
  }                                                                            \
  static void name##_fini(void *m) { T##_fini((T *)m); }                       \
  static const msg_fuzz_ops name = {(method_), (reply_), sizeof(T),            \
                                    name##_decode, name##_encode, name##_fini};

/* As MSG_OPS, for a type whose decoder also takes the method it decodes
 * (T_decode(r, method, out, st): the JobStatus and JobControl replies). */
#define MSG_OPS_METHOD(name, T, method_, reply_)                               \
  static tf_code name##_decode(const tf_wire_msg *r, void *m, tf_status *st) { \
    return T##_decode(r, (method_), (T *)m, st);                               \
  }                                                                            \
  static void name##_encode(tf_wire_writer *w, const void *m) {                \
    T##_encode(w, (const T *)m);                                               \
  }                                                                            \
  static void name##_fini(void *m) { T##_fini((T *)m); }                       \
  static const msg_fuzz_ops name = {(method_), (reply_), sizeof(T),            \
                                    name##_decode, name##_encode, name##_fini};

/* Defines LLVMFuzzerTestOneInput for message type T of method. */
#define MSG_FUZZ(T, method_, reply_)                                           \
  MSG_OPS(fuzz_ops, T, method_, reply_)                                        \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {               \
    msg_fuzz_one(&fuzz_ops, data, size);                                       \
    return 0;                                                                  \
  }

#endif
