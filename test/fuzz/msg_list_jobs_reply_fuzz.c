/* msg_list_jobs_reply_fuzz.c: libFuzzer harness for the ListJobs reply body
 * (tf_msg_list_jobs_reply_decode and _encode; msg_fuzz.h says what is
 * checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_list_jobs_reply, TF_M_LIST_JOBS, true)
