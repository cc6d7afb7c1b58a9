/* remote_session_test.c: the client side of remote sessions: a target
 * that is malformed or whose cluster cannot be reached fails in bounded
 * time naming the URL; tf_session_reset on a remote session clears a ps
 * variable (reading it afterwards is FAILED_PRECONDITION uninitialized)
 * and only the named containers; an MLP forward pass (MatMul, BiasAdd,
 * Relu over ps and workers, fed input) equals the local session bit for
 * bit; a target nobody listens on fails within the session's
 * rpc_timeout_ms (the RPC client dials in the background, so only the
 * deadline ends the wait; by default it is 60 s). */
#include "test/unit/runtime/rt_testlib2.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* A loopback port nobody listens on (bound, read and closed). */
static int unused_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

START_TEST(absent_master_fails_within_rpc_timeout) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", unused_port());
  tf_status st;
  tf_status_init(&st);
  tf_session_options o = {.target = url, .rpc_timeout_ms = 400};
  int64_t t0 = tf__now_ns();
  ck_assert_ptr_null(tf_session_new(NULL, &o, &st));
  double secs = rt2_secs_since(t0);
  ck_assert_msg(secs >= 0.35 && secs < 2.0, "took %.2f s", secs);
  ck_assert_msg(st.code == TF_DEADLINE_EXCEEDED || st.code == TF_UNAVAILABLE, "%d %s", st.code,
                st.msg);
  ck_assert_msg(strstr(st.msg, url) != NULL, "%s", st.msg);
}
END_TEST

START_TEST(bad_target_fails_fast) {
  tf_status st;
  tf_status_init(&st);
  const char *bad[] = {"foo://nowhere:1", "tls+tcp://127.0.0.1:1"};
  for (int i = 0; i < 2; i++) {
    tf_session_options o = {.target = bad[i]};
    int64_t t0 = tf__now_ns();
    ck_assert_ptr_null(tf_session_new(NULL, &o, &st));
    ck_assert_msg(rt2_secs_since(t0) < 1.0, "took %.2f s", rt2_secs_since(t0));
    ck_assert_msg(st.code == TF_INVALID_ARGUMENT || st.code == TF_UNIMPLEMENTED, "%d %s",
                  st.code, st.msg);
    ck_assert_msg(strstr(st.msg, bad[i]) != NULL, "%s", st.msg);
  }
}
END_TEST

/* The master answers but a task of its cluster is absent: CreateSession
 * works (only the tasks a graph is placed on matter); a step that needs
 * the absent task fails naming it. */
START_TEST(unreachable_cluster_fails_in_time) {
  rt_cluster c;
  rt_start(&c, 1, 1, 300);
  tf_status st;
  tf_status_init(&st);
  tf_graph *g = tf_graph_new();
  rt_const(g, "k", "/job:worker/task:1", tf_tensor_scalar_f32(1.0f));
  tf_session_options o = {.target = c.master_url};
  int64_t t0 = tf__now_ns();
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 1);
  const char *fetch[] = {"k"};
  tf_tensor *out = NULL;
  tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL, &st);
  double secs = rt2_secs_since(t0);
  ck_assert_int_eq(rc, TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1") != NULL, "%s", st.msg);
  ck_assert_msg(secs < 0.3 + 3.0, "took %.2f s", secs);
  tf_session_free(s);
  tf_graph_free(g);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 0);
  rt_stop(&c);
}
END_TEST

static tf_code read_v(tf_session *s, tf_tensor **out, tf_status *st) {
  const char *f[] = {"v"};
  tf_status_init(st);
  tf_run_options ro = {.timeout_ms = 5000};
  return tf_session_run(s, &ro, NULL, NULL, 0, f, out, 1, NULL, 0, NULL, st);
}

static void assign_v(tf_session *s) {
  const char *t[] = {"assign"};
  tf_status st;
  tf_status_init(&st);
  tf_run_options ro = {.timeout_ms = 5000};
  ck_assert_msg(tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, t, 1, NULL, &st) ==
                    TF_OK,
                "%s", st.msg);
}

START_TEST(reset_clears_ps_variable) {
  rt_cluster c;
  rt_start(&c, 1, 0, 3000);
  tf_graph *g = tf_graph_new();
  tf_attr_kv vkv[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                      {"shape", tf_attr_shape(tf_shape_of(1, 3))}};
  tf_node *v = rt_node(g, "VariableV2", "v", NULL, NULL, 0, vkv, 2);
  double iv[3] = {4, 5, 6};
  tf_node *init = rt_const(g, "init", NULL, tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), iv));
  tf_output a_in[] = {rt_out(v), rt_out(init)};
  rt_node(g, "Assign", "assign", NULL, a_in, 2, NULL, 0);
  tf_session *s = rt2_remote(&c, g);
  tf_tensor *out = NULL;
  tf_status st;
  ck_assert_int_eq(read_v(s, &out, &st), TF_FAILED_PRECONDITION); /* not yet */
  assign_v(s);
  ck_assert_msg(read_v(s, &out, &st) == TF_OK, "%s", st.msg);
  ck_assert(((const float *)out->data)[2] == 6.0f);
  tf_tensor_unref(out);
  /* Another container: v (in the default one) survives. */
  const char *other[] = {"other"};
  ck_assert_msg(tf_session_reset(s, other, 1, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(read_v(s, &out, &st) == TF_OK, "%s", st.msg);
  tf_tensor_unref(out);
  /* The default container: v is gone from the ps. */
  ck_assert_msg(tf_session_reset(s, NULL, 0, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(read_v(s, &out, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "uninitialized") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "v") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out);
  /* Another session on the same cluster sees the same (reset) state. */
  tf_session *s2 = rt2_remote(&c, g);
  ck_assert_int_eq(read_v(s2, &out, &st), TF_FAILED_PRECONDITION);
  assign_v(s);
  ck_assert_msg(read_v(s2, &out, &st) == TF_OK, "%s", st.msg);
  ck_assert(((const float *)out->data)[0] == 4.0f);
  tf_tensor_unref(out);
  tf_session_free(s2);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

static tf_node *bias_add(tf_graph *g, const char *name, const char *dev, tf_node *x,
                         tf_node *b) {
  tf_output in[] = {rt_out(x), rt_out(b)};
  return rt_node(g, "BiasAdd", name, dev, in, 2, NULL, 0);
}

static tf_node *matmul(tf_graph *g, const char *name, const char *dev, tf_node *a,
                       tf_node *b) {
  tf_output in[] = {rt_out(a), rt_out(b)};
  return rt_node(g, "MatMul", name, dev, in, 2, NULL, 0);
}

/* x (fed) -> relu(x W1 + b1) on worker 0 -> relu(h W2 + b2) on worker 1
 * -> h2 W3 + b3 unplaced; weights on the ps. */
START_TEST(mlp_forward_equals_local) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = tf_graph_new();
  tf_node *x = rt2_placeholder(g, "x", "/job:worker/task:0", TF_FLOAT32);
  tf_node *w1 = rt_const(g, "w1", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(2, 24, 48), -0.5, 0.5));
  tf_node *b1 = rt_const(g, "b1", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(1, 48), -0.1, 0.1));
  tf_node *w2 = rt_const(g, "w2", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(2, 48, 32), -0.5, 0.5));
  tf_node *b2 = rt_const(g, "b2", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(1, 32), -0.1, 0.1));
  tf_node *w3 = rt_const(g, "w3", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(2, 32, 10), -0.5, 0.5));
  tf_node *b3 = rt_const(g, "b3", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(1, 10), -0.1, 0.1));
  const char *d0 = "/job:worker/task:0", *d1 = "/job:worker/task:1";
  tf_node *a1 = bias_add(g, "a1", d0, matmul(g, "m1", d0, x, w1), b1);
  tf_output a1o[] = {rt_out(a1)};
  tf_node *h1 = rt_node(g, "Relu", "h1", d0, a1o, 1, NULL, 0);
  tf_node *a2 = bias_add(g, "a2", d1, matmul(g, "m2", d1, h1, w2), b2);
  tf_output a2o[] = {rt_out(a2)};
  tf_node *h2 = rt_node(g, "Relu", "h2", d1, a2o, 1, NULL, 0);
  bias_add(g, "logits", NULL, matmul(g, "m3", NULL, h2, w3), b3);
  tf_status st;
  tf_status_init(&st);
  tf_session *local = tf_session_new(g, NULL, &st);
  ck_assert_msg(local != NULL, "%s", st.msg);
  tf_session *rs = rt2_remote(&c, g);
  const char *feed[] = {"x"}, *fetch[] = {"logits", "h1", "h2:0"};
  tf_run_options ro = {.timeout_ms = 10000};
  for (int step = 0; step < 3; step++) {
    tf_tensor *xv = tt_rand(TF_FLOAT32, tf_shape_of(2, 8, 24), -2, 2);
    tf_tensor *want[3], *got[3];
    ck_assert_msg(tf_session_run(local, &ro, feed, &xv, 1, fetch, want, 3, NULL, 0, NULL,
                                 &st) == TF_OK, "%s", st.msg);
    ck_assert_msg(tf_session_run(rs, &ro, feed, &xv, 1, fetch, got, 3, NULL, 0, NULL,
                                 &st) == TF_OK, "%s", st.msg);
    tt_assert_shape(got[0], 2, 8, 10);
    for (int i = 0; i < 3; i++) {
      ck_assert_msg(tf_tensor_equal(got[i], want[i]), "step %d: %s differs", step, fetch[i]);
    }
    tt_free(want, 3);
    tt_free(got, 3);
    tf_tensor_unref(xv);
  }
  tf_session_free(rs);
  tf_session_free(local);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("remote_session");
  TCase *tc = tcase_create("remote");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, bad_target_fails_fast);
  tcase_add_test(tc, absent_master_fails_within_rpc_timeout);
  tcase_add_test(tc, unreachable_cluster_fails_in_time);
  tcase_add_test(tc, reset_clears_ps_variable);
  tcase_add_test(tc, mlp_forward_equals_local);
  suite_add_tcase(s, tc);
  return s;
}
