/* msg_get_status_reply_fuzz.c: libFuzzer harness for the GetStatus reply body
 * (tf_msg_get_status_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_get_status_reply, TF_M_GET_STATUS, true)
