/* rendezvous_local_test.c: the in-process rendezvous tables
 * (lib/rendezvous/rendezvous_local.c) as a local session uses them. A
 * graph with an explicit _Send/_Recv pair between devices of this process
 * runs in tf_session_run: the value arrives (whichever node runs first),
 * over many steps with a fresh table each; an untaken cond branch arrives
 * dead; a _Recv whose _Send never runs ends at the step's deadline; a
 * send to a device of another task fails naming it; and the tables are
 * what the session found registered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/rendezvous.h"
#include "test/unit/testutil.h"
#include "tf/tf.h"

#define DEV "/job:localhost/replica:0/task:0/device:CPU:0"
#define OTHER "/job:worker/replica:0/task:1/device:CPU:0"

static tf_node *send_node(tf_graph *g, const char *name, tf_output in,
                          const char *tensor, const char *to) {
  tf_attr_kv a[] = {{"tensor_name", tf_attr_string(tensor)},
                    {"send_device", tf_attr_string(DEV)},
                    {"send_device_incarnation", tf_attr_int(1)},
                    {"recv_device", tf_attr_string(to)}};
  return tt_node(g, "_Send", name, &in, 1, a, 4);
}

static tf_node *recv_node(tf_graph *g, const char *name, const char *tensor) {
  tf_attr_kv a[] = {{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                    {"tensor_name", tf_attr_string(tensor)},
                    {"send_device", tf_attr_string(DEV)},
                    {"send_device_incarnation", tf_attr_int(1)},
                    {"recv_device", tf_attr_string(DEV)}};
  return tt_node(g, "_Recv", name, NULL, 0, a, 5);
}

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_output a,
                    tf_output b) {
  return tt_node(g, op, name, (tf_output[]){a, b}, 2, NULL, 0);
}

/* x -> _Send("t") ... _Recv("t") -> y = recv * 2. */
static tf_graph *pair_graph(const char *send_to) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  send_node(g, "send", (tf_output){x, 0}, "t", send_to);
  tf_node *r = recv_node(g, "recv", "t");
  tf_node *two = tt_const(g, "two", tf_tensor_scalar_f32(2.0f));
  op2(g, "Mul", "y", (tf_output){r, 0}, (tf_output){two, 0});
  return g;
}

static tf_code run_pair(tf_session *s, float x, int64_t timeout_ms, float *y,
                        tf_status *st) {
  const char *feed = "x", *fetch = "y", *target = "send";
  tf_tensor *in = tf_tensor_scalar_f32(x), *out = NULL;
  tf_run_options opts = {.timeout_ms = timeout_ms};
  tf_code rc = tf_session_run(s, &opts, &feed, &in, 1, &fetch, &out, 1,
                              &target, 1, NULL, st);
  if (rc == TF_OK) *y = *(float *)out->data;
  tf_tensor_unref(in);
  tf_tensor_unref(out);
  return rc;
}

START_TEST(test_tables_registered) {
  ck_assert_ptr_nonnull(tf__rdv_get_local_ops());
}
END_TEST

/* Each step gets its own table: 200 steps with different values, every
 * one delivered, on a session with inter-op threads. */
START_TEST(test_send_recv_in_session) {
  tf_graph *g = pair_graph(DEV);
  tf_status st;
  tf_session_options o = {.inter_op_threads = 4};
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  for (int i = 0; i < 200; i++) {
    float y = 0;
    ck_assert_msg(run_pair(s, (float)i, 10000, &y, &st) == TF_OK, "%s", st.msg);
    ck_assert_float_eq(y, 2.0f * (float)i);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A cond's untaken branch sent through the pair arrives dead: the Merge
 * after the _Recv passes the taken branch. */
START_TEST(test_dead_value_crosses) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  tf_node *p = tt_placeholder(g, "p", TF_BOOL, tf_shape_scalar());
  tf_node *sw = op2(g, "Switch", "sw", (tf_output){x, 0}, (tf_output){p, 0});
  send_node(g, "send", (tf_output){sw, 1}, "t", DEV); /* the true branch */
  tf_node *r = recv_node(g, "recv", "t");
  tf_node *neg = tt_node(g, "Neg", "neg", &(tf_output){sw, 0}, 1, NULL, 0);
  tf_node_builder *b = tf_node_begin(g, "Merge", "m");
  tf_node_add_input_list(b, (tf_output[]){{r, 0}, {neg, 0}}, 2);
  tf_status st;
  ck_assert_msg(tf_node_finish(b, &st) != NULL, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  for (int taken = 0; taken < 2; taken++) {
    const char *feeds[] = {"x", "p"}, *fetch = "m", *target = "send";
    tf_tensor *in[] = {tf_tensor_scalar_f32(3.0f), tf_tensor_scalar_bool(taken)};
    tf_tensor *out = NULL;
    ck_assert_msg(tf_session_run(s, NULL, feeds, in, 2, &fetch, &out, 1,
                                 &target, 1, NULL, &st) == TF_OK, "%s", st.msg);
    ck_assert_float_eq(*(float *)out->data, taken ? 3.0f : -3.0f);
    tf_tensor_unref(in[0]);
    tf_tensor_unref(in[1]);
    tf_tensor_unref(out);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Without its _Send as a target the pruned step only waits in _Recv:
 * the deadline ends it, promptly. */
START_TEST(test_recv_without_send_times_out) {
  tf_graph *g = pair_graph(DEV);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  const char *fetch = "y";
  tf_tensor *out = NULL;
  tf_run_options opts = {.timeout_ms = 200};
  int64_t t0 = tf__now_ns();
  tf_code rc = tf_session_run(s, &opts, NULL, NULL, 0, &fetch, &out, 1, NULL, 0,
                              NULL, &st);
  int64_t ms = (tf__now_ns() - t0) / 1000000;
  ck_assert_int_eq(rc, TF_DEADLINE_EXCEEDED);
  ck_assert_msg(ms < 5000, "took %lld ms", (long long)ms);
  float y = 0; /* the session still works afterwards */
  ck_assert_msg(run_pair(s, 4.0f, 10000, &y, &st) == TF_OK, "%s", st.msg);
  ck_assert_float_eq(y, 8.0f);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A local session has no path to another task's devices. */
START_TEST(test_send_to_other_task_fails) {
  tf_graph *g = pair_graph(OTHER);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  float y = 0;
  tf_code rc = run_pair(s, 1.0f, 2000, &y, &st);
  ck_assert_int_ne(rc, TF_OK);
  ck_assert_msg(strstr(st.msg, OTHER) != NULL, "%s", st.msg);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rendezvous_local");
  TCase *tc = tcase_create("session");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_tables_registered);
  tcase_add_test(tc, test_send_recv_in_session);
  tcase_add_test(tc, test_dead_value_crosses);
  tcase_add_test(tc, test_recv_without_send_times_out);
  tcase_add_test(tc, test_send_to_other_task_fails);
  suite_add_tcase(s, tc);
  return s;
}
