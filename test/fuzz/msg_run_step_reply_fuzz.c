/* msg_run_step_reply_fuzz.c: libFuzzer harness for the RunStep reply body
 * (tf_msg_run_step_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_run_step_reply, TF_M_RUN_STEP, true)
