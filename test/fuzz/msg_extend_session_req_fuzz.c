/* msg_extend_session_req_fuzz.c: libFuzzer harness for the ExtendSession request body
 * (tf_msg_extend_session_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_extend_session_req, TF_M_EXTEND_SESSION, false)
