/* op_allow_test.c: the op allowlist (op_allow.c): every registered op is
 * allowed in a client's graph but _Send and _Recv, which a partition may
 * hold; ops.allow extends the set; a refusal names the node, the op and
 * the spec, and a checked decode adds nothing to the graph it refuses. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/runtime/op_allow.h"
#include "test/unit/testutil.h"

START_TEST(test_default_set) {
  tf_cluster_spec spec = {.path = "c.yaml"};
  tf_op_allow client = {.spec = &spec, .partition = false};
  tf_op_allow part = {.spec = &spec, .partition = true};
  int n = 0;
  const tf_op_def *const *all = tf_op_all(&n);
  ck_assert_int_gt(n, 50);
  int refused = 0;
  for (int i = 0; i < n; i++) {
    const char *name = all[i]->name;
    bool internal = strcmp(name, "_Send") == 0 || strcmp(name, "_Recv") == 0;
    ck_assert_msg(tf_op_allowed(&client, name) == !internal, "%s", name);
    ck_assert_msg(tf_op_allowed(&part, name), "%s", name);
    refused += !tf_op_allowed(&client, name);
  }
  ck_assert_int_eq(refused, 2);
  char *allow[] = {"_Recv"};
  spec.ops_allow = allow;
  spec.n_ops_allow = 1;
  ck_assert(tf_op_allowed(&client, "_Recv"));
  ck_assert(!tf_op_allowed(&client, "_Send"));
}
END_TEST

START_TEST(test_checked_decode) {
  tf_cluster_spec spec = {.path = "conf/c.yaml"};
  tf_op_allow client = {.spec = &spec, .partition = false};
  tf_graph *src = tf_graph_new();
  tt_placeholder(src, "x", TF_FLOAT32, tf_shape_of(1, 2));
  tf_tensor *t = tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), (double[]){1, 2});
  tt_const(src, "c", t);
  void *buf;
  size_t len;
  tf_status st;
  ck_assert(tf_graph_to_msgpack(src, &buf, &len, &st) == TF_OK);
  tf_graph *g = tf_graph_new();
  ck_assert_msg(tf__graph_from_msgpack_checked(g, buf, len, tf_op_allow_check_defs, &client,
                                               &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), 2);
  free(buf);
  /* a _Recv among the nodes: refused, and nothing of that graph is added */
  tf_node_def defs[1] = {{.name = "r", .op = "_Recv"}};
  ck_assert_int_eq(tf_op_allow_check_defs(defs, 1, &client, &st), TF_PERMISSION_DENIED);
  ck_assert_str_eq(st.msg, "graph node 'r' (op _Recv) is not allowed on this cluster "
                           "(ops.allow in conf/c.yaml can allow it; the master adds _Send "
                           "and _Recv itself when it partitions a graph)");
  tf_graph *bad = tf_graph_new();
  tt_placeholder(bad, "y", TF_FLOAT32, tf_shape_of(1, 2));
  tt_node(bad, "_Recv", "r", NULL, 0,
          (tf_attr_kv[]){{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                         {"tensor_name", tf_attr_string("x")},
                         {"send_device", tf_attr_string("/job:w/replica:0/task:1/device:CPU:0")},
                         {"send_device_incarnation", tf_attr_int(1)},
                         {"recv_device", tf_attr_string("/job:w/replica:0/task:0/device:CPU:0")}},
          5);
  ck_assert(tf_graph_to_msgpack(bad, &buf, &len, &st) == TF_OK);
  ck_assert_int_eq(tf__graph_from_msgpack_checked(g, buf, len, tf_op_allow_check_defs, &client,
                                                  &st), TF_PERMISSION_DENIED);
  ck_assert_int_eq(tf_graph_num_nodes(g), 2);
  ck_assert_int_eq(tf_op_allow_check_graph(&client, bad, 0, &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, "graph node 'r' (op _Recv)"));
  tf_op_allow part = {.spec = &spec, .partition = true};
  ck_assert_int_eq(tf__graph_from_msgpack_checked(g, buf, len, tf_op_allow_check_defs, &part,
                                                  &st), TF_OK);
  ck_assert_int_eq(tf_graph_num_nodes(g), 4);
  free(buf);
  tf_graph_free(bad);
  ck_assert_int_eq(tf_op_allow_check_graph(&part, g, 0, &st), TF_OK);
  ck_assert_int_eq(tf_op_allow_check_graph(&client, g, 2, &st), TF_PERMISSION_DENIED);
  ck_assert_int_eq(tf_op_allow_check_graph(&client, g, 4, &st), TF_OK);
  tf_graph_free(g);
  tf_graph_free(src);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("op_allow");
  TCase *tc = tcase_create("op_allow");
  tcase_add_test(tc, test_default_set);
  tcase_add_test(tc, test_checked_decode);
  suite_add_tcase(s, tc);
  return s;
}
