/* master_session_test.c: the master's sessions through remote sessions
 * (tf_session_options.target) and hand-built requests: nodes added after
 * the first Run reach the master (ExtendSession) and can be fetched,
 * tf_session_extend_defs works remotely, duplicate names are refused
 * clearly (and leave the session usable), close deregisters the
 * session's partitions and later Runs fail, and a session id the master
 * does not know is ABORTED naming it. */
#include "test/unit/runtime/rt_testlib2.h"

static void run_ok(tf_session *s, const char *const *fetch, tf_tensor **out, int n) {
  tf_status st;
  tf_status_init(&st);
  tf_run_options ro = {.timeout_ms = 5000};
  ck_assert_msg(tf_session_run(s, &ro, NULL, NULL, 0, fetch, out, n, NULL, 0, NULL, &st) ==
                    TF_OK,
                "%s", st.msg);
}

static void check_vals(tf_tensor *t, const float *want, int n) {
  ck_assert_int_eq(t->dtype, TF_FLOAT32);
  ck_assert_int_eq(t->n, n);
  const float *v = t->data;
  for (int i = 0; i < n; i++) ck_assert_msg(v[i] == want[i], "[%d] %g != %g", i, v[i], want[i]);
  tf_tensor_unref(t);
}

/* a = [1, 2] on the ps. */
static tf_graph *const_graph(void) {
  tf_graph *g = tf_graph_new();
  double av[2] = {1, 2};
  rt_const(g, "a", "/job:ps", tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), av));
  return g;
}

static void pack_graph_field(tf_wire_writer *w, const tf_graph *g) {
  void *buf = NULL;
  size_t len = 0;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_graph_to_msgpack(g, &buf, &len, &st) == TF_OK, "%s", st.msg);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 1);
  tf_wire_pack_str(pk, "graph");
  msgpack_pack_bin(pk, len);
  msgpack_pack_bin_body(pk, buf, len);
  free(buf);
}

/* RunStep by hand: fetches only. *reply on OK. */
static tf_code run_step(tf_rpc_client *m, uint64_t session, const char *fetch,
                        tf_wire_msg **reply, tf_status *st) {
  tf_wire_writer *w = rt2_req(TF_M_RUN_STEP, session, 0, 4000);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 4);
  tf_wire_pack_str(pk, "feeds");
  msgpack_pack_array(pk, 0);
  tf_wire_pack_str(pk, "fetches");
  msgpack_pack_array(pk, 1);
  tf_wire_pack_str(pk, fetch);
  tf_wire_pack_str(pk, "targets");
  msgpack_pack_array(pk, 0);
  tf_wire_pack_str(pk, "trace");
  msgpack_pack_false(pk);
  return rt2_call(m, w, reply, st);
}

START_TEST(nodes_added_after_run_are_sent) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = const_graph();
  tf_session *s = rt2_remote(&c, g);
  const char *fa[] = {"a"};
  tf_tensor *out[2];
  run_ok(s, fa, out, 1);
  check_vals(out[0], (float[]){1, 2}, 2);
  /* New nodes in the user's graph: the next Run sends them. */
  tf_output ain[] = {rt_out(tf_graph_find(g, "a"))};
  tf_node *b = rt_node(g, "Neg", "b", "/job:worker/task:0", ain, 1, NULL, 0);
  const char *fb[] = {"b"};
  run_ok(s, fb, out, 1);
  check_vals(out[0], (float[]){-1, -2}, 2);
  /* And again, consuming both old and new nodes, on another task. */
  tf_output bain[] = {rt_out(b), ain[0]};
  tf_node *cc = rt_node(g, "Mul", "c", "/job:worker/task:1", bain, 2, NULL, 0);
  tf_output cin[] = {rt_out(cc)};
  rt_node(g, "Square", "d", NULL, cin, 1, NULL, 0);
  const char *fcd[] = {"d", "c:0"};
  run_ok(s, fcd, out, 2);
  check_vals(out[0], (float[]){1, 16}, 2);
  check_vals(out[1], (float[]){-1, -4}, 2);
  /* An explicit extend with nothing new is a no-op. */
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_session_extend(s, &st) == TF_OK, "%s", st.msg);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

START_TEST(extend_defs_remote) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = const_graph();
  tf_session *s = rt2_remote(&c, g);
  const char *in_a[] = {"a"}, *in_e[] = {"e", "a"};
  tf_attr_kv tkv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}};
  tf_node_def defs[] = {
      {.name = "e", .op = "Neg", .device = "/job:worker/task:1", .n_inputs = 1,
       .inputs = in_a, .n_attrs = 1, .attrs = tkv},
      {.name = "f", .op = "Add", .device = "", .n_inputs = 2, .inputs = in_e,
       .n_attrs = 1, .attrs = tkv}};
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_session_extend_defs(s, defs, 2, &st) == TF_OK, "%s", st.msg);
  const char *fef[] = {"e", "f"};
  tf_tensor *out[2];
  run_ok(s, fef, out, 2);
  check_vals(out[0], (float[]){-1, -2}, 2);
  check_vals(out[1], (float[]){0, 0}, 2);
  /* A duplicate name is refused, naming the node; the session still runs. */
  tf_node_def dup = {.name = "e", .op = "Neg", .n_inputs = 1, .inputs = in_a,
                     .n_attrs = 1, .attrs = tkv};
  ck_assert_int_eq(tf_session_extend_defs(s, &dup, 1, &st), TF_ALREADY_EXISTS);
  ck_assert_msg(strstr(st.msg, "'e'") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "duplicate") != NULL, "%s", st.msg);
  run_ok(s, fef, out, 2);
  check_vals(out[0], (float[]){-1, -2}, 2);
  check_vals(out[1], (float[]){0, 0}, 2);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

/* The master itself refuses a duplicate in ExtendSession (a client that
 * sends one by hand), atomically: the session keeps working. */
START_TEST(master_refuses_duplicate_extend) {
  rt_cluster c;
  rt_start(&c, 1, 0, 3000);
  tf_rpc_client *m = rt2_client(c.spec, "master", 0);
  tf_graph *g = const_graph();
  tf_wire_writer *w = rt2_req(TF_M_CREATE_SESSION, 0, 0, 4000);
  pack_graph_field(w, g);
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_msg(rt2_call(m, w, &r, &st) == TF_OK, "%s", st.msg);
  uint64_t sid = 0;
  ck_assert(tf_wire_get_u64(&r->body, "session", "reply", &sid, &st) == TF_OK);
  tf_wire_msg_free(r);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 1);
  /* Extend with b (new) and a (duplicate): nothing is added. */
  tf_output ain[] = {rt_out(tf_graph_find(g, "a"))};
  rt_node(g, "Neg", "b", NULL, ain, 1, NULL, 0);
  w = rt2_req(TF_M_EXTEND_SESSION, sid, 0, 4000);
  pack_graph_field(w, g);
  tf_code drc = rt2_call(m, w, NULL, &st);
  ck_assert_msg(drc == TF_ALREADY_EXISTS || drc == TF_INVALID_ARGUMENT, "%d %s", drc, st.msg);
  ck_assert_msg(strstr(st.msg, "'a'") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "ExtendSession") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "duplicate") != NULL, "%s", st.msg);
  ck_assert_int_ne(run_step(m, sid, "b", NULL, &st), TF_OK); /* b was not added */
  ck_assert_msg(strstr(st.msg, "b") != NULL, "%s", st.msg);
  ck_assert_msg(run_step(m, sid, "a", NULL, &st) == TF_OK, "%s", st.msg);
  /* A 'graph' that is not binary. */
  w = rt2_req(TF_M_EXTEND_SESSION, sid, 0, 4000);
  msgpack_pack_map(tf_wire_body(w), 1);
  tf_wire_pack_str(tf_wire_body(w), "graph");
  tf_wire_pack_str(tf_wire_body(w), "nodes");
  ck_assert_int_eq(rt2_call(m, w, NULL, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'graph'") != NULL, "%s", st.msg);
  /* Close by hand; the id is then unknown. */
  ck_assert_int_eq(rt2_call(m, rt2_req(TF_M_CLOSE_SESSION, sid, 0, 4000), NULL, &st), TF_OK);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 0);
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)sid);
  ck_assert_int_eq(run_step(m, sid, "a", NULL, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, hex) != NULL, "%s", st.msg);
  tf_rpc_client_free(m);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

/* A session's graph may grow by ExtendSession only up to max_message_mb in
 * all (msgpack bytes as sent): past that RESOURCE_EXHAUSTED naming the
 * limit, and the session keeps working. Before, each ExtendSession could
 * add up to a message's worth of nodes, without end. */
START_TEST(extend_session_capped_at_max_message) {
  tf_cluster_spec *spec = rt2_spec(1, 4000, 5000);
  spec->max_message_bytes = 1 << 20;
  tf_worker *ps = NULL, *wk = NULL;
  tf_master *mst = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_worker_start(spec, "ps", 0, &ps, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_worker_start(spec, "worker", 0, &wk, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_master_start(spec, &mst, &st) == TF_OK, "%s", st.msg);
  tf_rpc_client *m = rt2_client(spec, "master", 0);
  tf_graph *g = const_graph();
  tf_wire_writer *w = rt2_req(TF_M_CREATE_SESSION, 0, 0, 4000);
  pack_graph_field(w, g);
  tf_wire_msg *r = NULL;
  ck_assert_msg(rt2_call(m, w, &r, &st) == TF_OK, "%s", st.msg);
  uint64_t sid = 0;
  ck_assert(tf_wire_get_u64(&r->body, "session", "reply", &sid, &st) == TF_OK);
  tf_wire_msg_free(r);
  /* Each extension: one Const of 300000 bytes (a graph of ~300 KB). */
  tf_code rc = TF_OK;
  int added = 0;
  for (int i = 0; i < 8 && rc == TF_OK; i++) {
    tf_graph *ext = tf_graph_new();
    char name[16];
    snprintf(name, sizeof name, "big%d", i);
    rt_const(ext, name, NULL, tt_rand(TF_FLOAT32, tf_shape_of(1, 75000), -1, 1));
    w = rt2_req(TF_M_EXTEND_SESSION, sid, 0, 4000);
    pack_graph_field(w, ext);
    rc = rt2_call(m, w, NULL, &st);
    added += rc == TF_OK;
    tf_graph_free(ext);
  }
  ck_assert_int_eq(added, 3); /* 3 x 300 KB fit in 1 MiB, a 4th does not */
  ck_assert_int_eq(rc, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "ExtendSession: session ") &&
                    strstr(st.msg, "over max_message_mb (1048576 bytes, t2.yaml)"),
                "%s", st.msg);
  ck_assert_msg(run_step(m, sid, "big2", NULL, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_ne(run_step(m, sid, "big3", NULL, &st), TF_OK); /* not added */
  tf_rpc_client_free(m);
  tf_graph_free(g);
  tf_master_free(mst);
  tf_worker_free(wk);
  tf_worker_free(ps);
  tf_cluster_spec_free(spec);
}
END_TEST

START_TEST(run_after_close_fails) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = const_graph();
  tf_output ain[] = {rt_out(tf_graph_find(g, "a"))};
  rt_node(g, "Neg", "b", "/job:worker/task:1", ain, 1, NULL, 0);
  tf_session *s = rt2_remote(&c, g);
  const char *fb[] = {"b"};
  tf_tensor *out = NULL;
  run_ok(s, fb, &out, 1);
  check_vals(out, (float[]){-1, -2}, 2);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 1);
  ck_assert_int_gt(rt2_graphs(&c), 0);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_session_close(s, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_master_num_sessions(c.master), 0);
  ck_assert_int_eq(rt2_graphs(&c), 0); /* its partitions are deregistered */
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, fb, &out, 1, NULL, 0, NULL, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "closed") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out);
  ck_assert_msg(tf_session_close(s, &st) == TF_OK, "%s", st.msg); /* idempotent */
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

START_TEST(unknown_session_aborted) {
  rt_cluster c;
  rt_start(&c, 1, 0, 3000);
  tf_rpc_client *m = rt2_client(c.spec, "master", 0);
  tf_status st;
  ck_assert_int_eq(run_step(m, 0x1234, "a", NULL, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "session 0000000000001234") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, c.master_url) != NULL, "%s", st.msg);
  tf_graph *g = const_graph();
  tf_wire_writer *w = rt2_req(TF_M_EXTEND_SESSION, 0x1234, 0, 4000);
  pack_graph_field(w, g);
  ck_assert_int_eq(rt2_call(m, w, NULL, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "0000000000001234") != NULL, "%s", st.msg);
  ck_assert_int_eq(rt2_call(m, rt2_req(TF_M_CLOSE_SESSION, 0x1234, 0, 4000), NULL, &st),
                   TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "0000000000001234") != NULL, "%s", st.msg);
  /* A worker method sent to the master is refused, naming it. */
  ck_assert_int_eq(rt2_call(m, rt2_req(TF_M_RUN_GRAPH, 0, 1, 4000), NULL, &st),
                   TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, "RunGraph") != NULL, "%s", st.msg);
  tf_graph_free(g);
  tf_rpc_client_free(m);
  rt_stop(&c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("master_session");
  TCase *tc = tcase_create("sessions");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, nodes_added_after_run_are_sent);
  tcase_add_test(tc, extend_defs_remote);
  tcase_add_test(tc, master_refuses_duplicate_extend);
  tcase_add_test(tc, extend_session_capped_at_max_message);
  tcase_add_test(tc, run_after_close_fails);
  tcase_add_test(tc, unknown_session_aborted);
  suite_add_tcase(s, tc);
  return s;
}
