/* msg_submit_job_reply_fuzz.c: libFuzzer harness for the SubmitJob reply body
 * (tf_msg_submit_job_reply_decode and _encode; msg_fuzz.h says what is
 * checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_submit_job_reply, TF_M_SUBMIT_JOB, true)
