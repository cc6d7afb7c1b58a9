/* tensor_msgpack_fuzz.c: libFuzzer harness for tf_tensor_from_msgpack.
 * Accepted input must re-encode and decode to an equal tensor, and (for
 * dtypes .npy carries) survive .npy too. */
#include <stddef.h>
#include <stdint.h>

#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  tf_tensor *t = NULL;
  tf_code c = tf_tensor_from_msgpack(data, size, &t, &st);
  if (c != TF_OK) {
    fuzz_check_rejection(c, &st);
    FUZZ_CHECK(t == NULL, &st);
    return 0;
  }
  FUZZ_CHECK(fuzz_tensor_roundtrip(t, tf_tensor_to_msgpack,
                                   tf_tensor_from_msgpack, &st) == TF_OK, &st);
  tf_code c_npy = fuzz_tensor_roundtrip(t, tf_tensor_to_npy, tf_tensor_from_npy, &st);
  FUZZ_CHECK(c_npy == TF_OK || c_npy == TF_UNIMPLEMENTED, &st);
  tf_tensor_unref(t);
  return 0;
}
