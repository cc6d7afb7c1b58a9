/* msg_job_checkpoints_reply_fuzz.c: libFuzzer harness for the
 * JobCheckpoints reply body (tf_msg_job_checkpoints_reply_decode and
 * _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_job_checkpoints_reply, TF_M_JOB_CHECKPOINTS, true)
