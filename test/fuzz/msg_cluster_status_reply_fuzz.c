/* msg_cluster_status_reply_fuzz.c: libFuzzer harness for the ClusterStatus reply body
 * (tf_msg_cluster_status_reply_decode and _encode; msg_fuzz.h says what is checked). */
#include "test/fuzz/msg_fuzz.h"

MSG_FUZZ(tf_msg_cluster_status_reply, TF_M_CLUSTER_STATUS, true)
