/* msg_submit_job_req_fuzz.c: libFuzzer harness for the SubmitJob request body
 * (tf_msg_submit_job_req_decode and _encode; msg_fuzz.h says what is
 * checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_submit_job_req, TF_M_SUBMIT_JOB, false)
