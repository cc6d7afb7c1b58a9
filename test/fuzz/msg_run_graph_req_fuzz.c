/* msg_run_graph_req_fuzz.c: libFuzzer harness for the RunGraph request body
 * (tf_msg_run_graph_req_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_run_graph_req, TF_M_RUN_GRAPH, false)
