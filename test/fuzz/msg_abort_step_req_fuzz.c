/* msg_abort_step_req_fuzz.c: libFuzzer harness for the AbortStep request body
 * (tf_msg_abort_step_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_abort_step_req, TF_M_ABORT_STEP, false)
