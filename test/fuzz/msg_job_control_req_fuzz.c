/* msg_job_control_req_fuzz.c: libFuzzer harness for the JobControl request body
 * (tf_msg_job_control_req_decode and _encode; msg_fuzz.h says what is
 * checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_job_control_req, TF_M_JOB_CONTROL, false)
