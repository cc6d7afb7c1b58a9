/* fuzz_util.h: checks shared by the libFuzzer harnesses. A decoder may
 * accept or reject its input, but a rejection must be INVALID_ARGUMENT or
 * DATA_LOSS with a message, and whatever is accepted must survive encoding
 * and decoding again unchanged. Violations abort, which libFuzzer reports
 * with the input that caused them. */
#ifndef TF_TEST_FUZZ_UTIL_H
#define TF_TEST_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf/tf.h"

#define FUZZ_CHECK(cond, st)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check `%s' failed: %s %s\n", __FILE__,           \
              __LINE__, #cond, tf_code_name((st)->code), (st)->msg);           \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* A rejection must be one of the two documented codes, with a message. */
static inline void fuzz_check_rejection(tf_code c, const tf_status *st) {
  FUZZ_CHECK((c == TF_INVALID_ARGUMENT || c == TF_DATA_LOSS) &&
                 st->msg[0] != '\0',
             st);
}

typedef tf_code (*fuzz_tensor_enc)(const tf_tensor *, void **, size_t *,
                                   tf_status *);
typedef tf_code (*fuzz_tensor_dec)(const void *, size_t, tf_tensor **,
                                   tf_status *);

/* Encodes t with enc and decodes it with dec; the result must equal t.
 * Returns the encoder's code: an encoder may refuse (UNIMPLEMENTED for
 * dtypes its format cannot carry), and the caller decides if that is ok. */
static inline tf_code fuzz_tensor_roundtrip(const tf_tensor *t,
                                            fuzz_tensor_enc enc,
                                            fuzz_tensor_dec dec,
                                            tf_status *st) {
  void *buf;
  size_t len;
  tf_code c = enc(t, &buf, &len, st);
  if (c != TF_OK) return c;
  tf_tensor *back = NULL;
  FUZZ_CHECK(dec(buf, len, &back, st) == TF_OK, st);
  FUZZ_CHECK(tf_tensor_equal(t, back), st);
  free(buf);
  tf_tensor_unref(back);
  return TF_OK;
}

/* The msgpack bytes of g (exact for every value, so equal bytes mean equal
 * graphs); the caller frees *buf. */
static inline void fuzz_graph_bytes(const tf_graph *g, void **buf,
                                    size_t *len) {
  tf_status st;
  tf_status_init(&st);
  FUZZ_CHECK(tf_graph_to_msgpack(g, buf, len, &st) == TF_OK, &st);
}

#endif
