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

/* The msgpack bytes of g (exact for every value, so equal bytes mean equal
 * graphs); the caller frees *buf. */
static inline void fuzz_graph_bytes(const tf_graph *g, void **buf,
                                    size_t *len) {
  tf_status st;
  tf_status_init(&st);
  FUZZ_CHECK(tf_graph_to_msgpack(g, buf, len, &st) == TF_OK, &st);
}

#endif
