/* msg_create_session_reply_fuzz.c: libFuzzer harness for the CreateSession reply body
 * (tf_msg_create_session_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_create_session_reply, TF_M_CREATE_SESSION, true)
