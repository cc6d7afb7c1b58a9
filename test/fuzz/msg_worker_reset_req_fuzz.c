/* msg_worker_reset_req_fuzz.c: libFuzzer harness for the WorkerReset request body
 * (tf_msg_worker_reset_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_worker_reset_req, TF_M_WORKER_RESET, false)
