/* msg_tensor_push_req_fuzz.c: libFuzzer harness for the TensorPush request body
 * (tf_msg_tensor_push_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_tensor_push_req, TF_M_TENSOR_PUSH, false)
