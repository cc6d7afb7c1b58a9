/* msg_create_session_req_fuzz.c: libFuzzer harness for the CreateSession request body
 * (tf_msg_create_session_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_create_session_req, TF_M_CREATE_SESSION, false)
