/* msg_register_graph_req_fuzz.c: libFuzzer harness for the RegisterGraph request body
 * (tf_msg_register_graph_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_register_graph_req, TF_M_REGISTER_GRAPH, false)
