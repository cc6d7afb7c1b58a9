/* ctl_graph_test.c: tfctl's graph and tensor text: dot with and without
 * device clusters, YAML carrying placed devices (read back), tensor
 * summaries checked against hand-written strings, fetch file names. */
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_graph.h"
#include "test/unit/testutil.h"
#include "tf/serialize.h"

static tf_graph *small_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *a = tt_const(g, "a", tf_tensor_scalar_f32(2));
  tf_node *b = tt_const(g, "scope/b", tf_tensor_scalar_f32(3));
  tt_node(g, "Add", "sum", (tf_output[]){{a, 0}, {b, 0}}, 2, NULL, 0);
  return g;
}

START_TEST(test_dot_plain_and_clustered) {
  tf_graph *g = small_graph();
  char *dot = tf_ctl_graph_dot(g, NULL);
  ck_assert_ptr_nonnull(strstr(dot, "digraph tf {"));
  ck_assert_ptr_nonnull(strstr(dot, "\"a\" -> \"sum\";"));
  ck_assert_ptr_nonnull(strstr(dot, "\"scope/b\" -> \"sum\";"));
  ck_assert_ptr_nonnull(strstr(dot, "label=\"sum\\nAdd\""));
  ck_assert_ptr_null(strstr(dot, "subgraph"));
  free(dot);
  const char *devs[] = {"/job:ps/replica:0/task:0/device:CPU:0",
                        "/job:worker/replica:0/task:0/device:CPU:0",
                        "/job:ps/replica:0/task:0/device:CPU:0"};
  dot = tf_ctl_graph_dot(g, devs);
  const char *c0 = strstr(dot, "subgraph cluster_0");
  const char *c1 = strstr(dot, "subgraph cluster_1");
  ck_assert_ptr_nonnull(c0);
  ck_assert_ptr_nonnull(c1);
  ck_assert_ptr_null(strstr(dot, "subgraph cluster_2"));
  /* a and sum share the ps cluster, which comes first; b is alone. */
  const char *sum = strstr(dot, "\"sum\" [label");
  ck_assert(sum > c0 && sum < c1);
  ck_assert(strstr(dot, "\"scope/b\" [label") > c1);
  free(dot);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_yaml_with_devices_reads_back) {
  tf_graph *g = small_graph();
  const char *devs[] = {"/job:ps/replica:0/task:0/device:CPU:0",
                        "/job:worker/replica:0/task:1/device:CPU:0",
                        "/job:worker/replica:0/task:1/device:CPU:0"};
  tf_status st;
  tf_status_init(&st);
  char *text = NULL;
  ck_assert_int_eq(tf_ctl_graph_yaml(g, devs, &text, &st), TF_OK);
  tf_graph *back = tf_graph_new();
  ck_assert_int_eq(tf_graph_from_yaml(back, text, strlen(text), &st), TF_OK);
  ck_assert_int_eq(tf_graph_num_nodes(back), 3);
  for (int i = 0; i < 3; i++) {
    const tf_node *n = tf_graph_find(back, tf_node_name(tf_graph_node(g, i)));
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(tf_node_device(n), devs[i]);
  }
  free(text);
  ck_assert_int_eq(tf_ctl_graph_yaml(g, NULL, &text, &st), TF_OK);
  ck_assert_ptr_null(strstr(text, "/job:ps"));
  free(text);
  tf_graph_free(back);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_tensor_summary) {
  char buf[256];
  double v[12];
  for (int i = 0; i < 12; i++) {
    v[i] = i * 0.5;
  }
  tf_tensor *t = tt_tensor(TF_FLOAT32, tf_shape_of(2, 3, 4), v);
  ck_assert_str_eq(tf_ctl_tensor_summary(t, 10, buf, sizeof buf),
                   "float32 [3,4] 0 0.5 1 1.5 2 2.5 3 3.5 4 4.5 ...");
  tf_tensor_unref(t);
  t = tf_tensor_vec_i32(3, (const int32_t[]){7, -8, 9});
  ck_assert_str_eq(tf_ctl_tensor_summary(t, 10, buf, sizeof buf), "int32 [3] 7 -8 9");
  tf_tensor_unref(t);
  t = tf_tensor_scalar_bool(true);
  ck_assert_str_eq(tf_ctl_tensor_summary(t, 10, buf, sizeof buf), "bool [] 1");
  tf_tensor_unref(t);
  char small[8];
  t = tf_tensor_vec_i32(3, (const int32_t[]){1000000, 2000000, 3});
  tf_ctl_tensor_summary(t, 10, small, sizeof small); /* truncates, no overflow */
  ck_assert_int_eq((int)strlen(small), 7);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_fetch_file_name) {
  char buf[64];
  ck_assert_str_eq(tf_ctl_fetch_file_name("layer/out:0", buf, sizeof buf), "layer_out_0.npy");
  ck_assert_str_eq(tf_ctl_fetch_file_name("y", buf, sizeof buf), "y.npy");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_graph");
  TCase *tc = tcase_create("ctl_graph");
  tcase_add_test(tc, test_dot_plain_and_clustered);
  tcase_add_test(tc, test_yaml_with_devices_reads_back);
  tcase_add_test(tc, test_tensor_summary);
  tcase_add_test(tc, test_fetch_file_name);
  suite_add_tcase(s, tc);
  return s;
}
