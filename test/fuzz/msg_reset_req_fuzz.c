/* msg_reset_req_fuzz.c: libFuzzer harness for the Reset request body
 * (tf_msg_reset_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_reset_req, TF_M_RESET, false)
