/* msg_register_graph_reply_fuzz.c: libFuzzer harness for the RegisterGraph reply body
 * (tf_msg_register_graph_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_register_graph_reply, TF_M_REGISTER_GRAPH, true)
