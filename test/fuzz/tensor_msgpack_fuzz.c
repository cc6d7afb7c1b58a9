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
  void *buf;
  size_t len;
  tf_tensor *back = NULL;
  FUZZ_CHECK(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK, &st);
  FUZZ_CHECK(tf_tensor_from_msgpack(buf, len, &back, &st) == TF_OK, &st);
  FUZZ_CHECK(tf_tensor_equal(t, back), &st);
  free(buf);
  tf_tensor_unref(back);
  if (tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK) {
    FUZZ_CHECK(tf_tensor_from_npy(buf, len, &back, &st) == TF_OK, &st);
    FUZZ_CHECK(tf_tensor_equal(t, back), &st);
    free(buf);
    tf_tensor_unref(back);
  } else {
    FUZZ_CHECK(st.code == TF_UNIMPLEMENTED, &st);
  }
  tf_tensor_unref(t);
  return 0;
}
