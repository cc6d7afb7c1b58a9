/* msg_job_status_req_fuzz.c: libFuzzer harness for the JobStatus request body
 * (tf_msg_job_status_req_decode and _encode; msg_fuzz.h says what is
 * checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_job_status_req, TF_M_JOB_STATUS, false)
