/* msg_job_checkpoints_req_fuzz.c: libFuzzer harness for the JobCheckpoints
 * request body (tf_msg_job_checkpoints_req_decode and _encode; msg_fuzz.h
 * says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_job_checkpoints_req, TF_M_JOB_CHECKPOINTS, false)
