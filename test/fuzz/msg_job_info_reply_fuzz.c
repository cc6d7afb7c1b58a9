/* msg_job_info_reply_fuzz.c: libFuzzer harness for the body of the
 * JobStatus and JobControl replies (tf_msg_job_info_reply_decode, which
 * takes the method, and _encode): each input is decoded as both methods'
 * reply; msg_fuzz.h says what is checked. */
#include "test/fuzz/msg_fuzz.h"

MSG_OPS_METHOD(status_ops, tf_msg_job_info_reply, TF_M_JOB_STATUS, true)
MSG_OPS_METHOD(control_ops, tf_msg_job_info_reply, TF_M_JOB_CONTROL, true)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool a = msg_fuzz_one(&status_ops, data, size);
  bool b = msg_fuzz_one(&control_ops, data, size);
  if (a != b) {
    abort(); /* the same body: the method must not change the verdict */
  }
  return 0;
}
