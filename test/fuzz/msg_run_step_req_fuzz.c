/* msg_run_step_req_fuzz.c: libFuzzer harness for the RunStep request body
 * (tf_msg_run_step_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_run_step_req, TF_M_RUN_STEP, false)
