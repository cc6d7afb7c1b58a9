/* npy_fuzz.c: libFuzzer harness for tf_tensor_from_npy. Accepted input
 * must re-encode and decode to an equal tensor. */
#include <stddef.h>
#include <stdint.h>

#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  tf_tensor *t = NULL;
  tf_code c = tf_tensor_from_npy(data, size, &t, &st);
  if (c != TF_OK) {
    fuzz_check_rejection(c, &st);
    FUZZ_CHECK(t == NULL, &st);
    return 0;
  }
  FUZZ_CHECK(fuzz_tensor_roundtrip(t, tf_tensor_to_npy, tf_tensor_from_npy,
                                   &st) == TF_OK, &st);
  tf_tensor_unref(t);
  return 0;
}
