/* msg_list_devices_reply_fuzz.c: libFuzzer harness for the ListDevices reply body
 * (tf_msg_list_devices_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_list_devices_reply, TF_M_LIST_DEVICES, true)
