/* master_limits_test.c: the master's bounds and liveness over loopback TCP:
 * the session cap, sessions expiring after session_ttl_ms (their blocked
 * steps aborted on the worker, their graphs deregistered), keep-alive
 * keeping a remote session, the step deadline answered within 100 ms,
 * the steps cap, a slow RegisterGraph not holding up another session's
 * steps on a master with one handler thread, and a wrong task at an
 * address shown by ClusterStatus. */
#include "lib/transport/messages.h"
#include "test/unit/runtime/rt_testlib2.h"

/* A spec with master, ps, workers at the given ports, rpc threads and
 * limits (YAML flow-map body, e.g. "max_sessions: 2"). */
static tf_cluster_spec *spec_at(const int *ports, int n_workers, int rpc_threads,
                                const char *limits) {
  char yaml[2048];
  int n = snprintf(yaml, sizeof yaml, "cluster: lim\njobs:\n  master: [127.0.0.1:%d]\n"
                   "  ps: [127.0.0.1:%d]\n  worker: [", ports[0], ports[1]);
  for (int i = 0; i < n_workers; i++) {
    n += snprintf(yaml + n, sizeof yaml - (size_t)n, "%s127.0.0.1:%d", i ? ", " : "",
                  ports[2 + i]);
  }
  snprintf(yaml + n, sizeof yaml - (size_t)n,
           "]\ntimeouts: {registration_ms: 3000, heartbeat_ms: 50, down_after_ms: 2000, "
           "rpc_ms: 3000, step_ttl_ms: 5000}\nthreads: {inter_op: 2, rpc: %d}\n"
           "limits: {%s}\nlog_level: err\n", rpc_threads, limits);
  tf_cluster_spec *spec = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_parse(yaml, strlen(yaml), "lim.yaml", &spec, &st) == TF_OK,
                "%s", st.msg);
  tf_log_set_level(spec->log_level);
  return spec;
}

typedef struct lim {
  rt_cluster c;
  rt2_ticker tk;
  tf_rpc_client *mc;  /* raw client to the master */
} lim;

/* Starts master, ps and worker 0 (of n_workers in the spec). */
static void lim_start(lim *l, int n_workers, int rpc_threads, const char *limits) {
  memset(l, 0, sizeof *l);
  int ports[6];
  for (int i = 0; i < 2 + n_workers; i++) ports[i] = rt_free_port();
  l->c.spec = spec_at(ports, n_workers, rpc_threads, limits);
  snprintf(l->c.master_url, sizeof l->c.master_url, "tcp://127.0.0.1:%d", ports[0]);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_worker_start(l->c.spec, "ps", 0, &l->c.ps, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_worker_start(l->c.spec, "worker", 0, &l->c.workers[0], &st) == TF_OK,
                "%s", st.msg);
  l->c.n_workers = 1;
  ck_assert_msg(tf_master_start(l->c.spec, &l->c.master, &st) == TF_OK, "%s", st.msg);
  rt2_ticker_start(&l->tk, l->c.master);
  l->mc = rt2_client(l->c.spec, "master", 0);
}

static void lim_stop(lim *l) {
  tf_rpc_client_free(l->mc);
  rt2_ticker_stop(&l->tk);
  rt_stop(&l->c);
}

/* deq = QueueDequeue(FIFOQueue) on worker 0: blocks until fed. */
static tf_graph *blocking_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_dtype ct[] = {TF_FLOAT32};
  tf_attr_kv qkv[] = {{"component_types", tf_attr_type_list(ct, 1)}};
  tf_node *q = rt_node(g, "FIFOQueue", "q", "/job:worker/task:0", NULL, 0, qkv, 1);
  tf_output qin[] = {rt_out(q)};
  rt_node(g, "QueueDequeue", "deq", "/job:worker/task:0", qin, 1, qkv, 1);
  tf_node *k = rt_const(g, "k", "/job:worker/task:0", tf_tensor_scalar_f32(2.0f));
  tf_output nin[] = {rt_out(k)};
  rt_node(g, "Neg", "neg", "/job:worker/task:0", nin, 1, NULL, 0);
  return g;
}

/* Raw CreateSession with g (NULL: none); returns the handle or 0 with st. */
static uint64_t create(lim *l, const tf_graph *g, tf_status *st) {
  void *buf = NULL;
  size_t len = 0;
  if (g != NULL) ck_assert(tf_graph_to_msgpack(g, &buf, &len, st) == TF_OK);
  tf_wire_writer *w = rt2_req(TF_M_CREATE_SESSION, 0, 0, 5000);
  tf_msg_create_session_req b = {.has_graph = g != NULL, .graph = buf, .graph_len = len};
  tf_msg_create_session_req_encode(w, &b);
  free(buf);
  tf_wire_msg *r = NULL;
  if (rt2_call(l->mc, w, &r, st) != TF_OK) return 0;
  tf_msg_create_session_reply rb;
  ck_assert_msg(tf_msg_create_session_reply_decode(r, &rb, st) == TF_OK, "%s", st->msg);
  ck_assert_int_eq(rb.session_ttl_ms, l->c.spec->session_ttl_ms);
  tf_wire_msg_free(r);
  return rb.session;
}

/* A RunStep fetching name, deadline_ms (0: none), started asynchronously. */
static void run_async(lim *l, rt2_async *a, uint64_t session, const char *name,
                      int64_t deadline_ms) {
  tf_wire_writer *w = rt2_req(TF_M_RUN_STEP, session, 0, deadline_ms);
  const char *fetch[] = {name};
  tf_msg_run_step_req b = {.n_fetches = 1, .fetches = fetch};
  tf_msg_run_step_req_encode(w, &b);
  rt2_async_start(a, l->mc, rt2_finish(w), 20000);
}

/* GetStatus running_steps of worker 0, polled until 0 or ms passed. */
static int64_t running(lim *l, int64_t ms) {
  tf_rpc_client *c = rt2_client(l->c.spec, "worker", 0);
  int64_t until = tf__now_ns() + ms * 1000000, v = rt2_status_int(c, "running_steps");
  while (v != 0 && tf__now_ns() < until) {
    rt2_sleep_ms(10);
    v = rt2_status_int(c, "running_steps");
  }
  tf_rpc_client_free(c);
  return v;
}

START_TEST(session_cap) {
  lim l;
  lim_start(&l, 1, 8, "max_sessions: 2");
  tf_status st;
  uint64_t a = create(&l, NULL, &st), b = create(&l, NULL, &st);
  ck_assert_msg(a != 0 && b != 0, "%s", st.msg);
  ck_assert_int_eq(create(&l, NULL, &st), 0);
  ck_assert_int_eq(st.code, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "limits.max_sessions = 2") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_master_num_sessions(l.c.master), 2);
  /* Closing one makes room. */
  ck_assert_msg(rt2_call(l.mc, rt2_req(TF_M_CLOSE_SESSION, a, 0, 5000), NULL, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_msg(create(&l, NULL, &st) != 0, "%s", st.msg);
  lim_stop(&l);
}
END_TEST

/* A session nobody refreshes ends after the TTL: its blocked step gets
 * ABORTED naming the expiry, the worker's step ends, its graphs go. */
START_TEST(ttl_expiry_aborts_steps) {
  lim l;
  lim_start(&l, 1, 8, "session_ttl_ms: 400");
  tf_graph *g = blocking_graph();
  tf_status st;
  uint64_t s = create(&l, g, &st);
  ck_assert_msg(s != 0, "%s", st.msg);
  rt2_async a;
  int64_t t0 = tf__now_ns();
  run_async(&l, &a, s, "deq", 0);
  ck_assert(rt2_async_wait(&a, 3000));
  double secs = rt2_secs_since(t0);
  ck_assert_int_eq(a.st.code, TF_ABORTED);
  ck_assert_msg(strstr(a.st.msg, "expired") != NULL, "%s", a.st.msg);
  ck_assert_msg(secs >= 0.35 && secs < 0.4 + 0.5, "took %.2f s", secs);
  rt2_async_fini(&a);
  ck_assert_int_eq(tf_master_num_sessions(l.c.master), 0);
  ck_assert_int_eq(running(&l, 2000), 0);
  int64_t until = tf__now_ns() + 2000 * 1000000LL;
  while (rt2_graphs(&l.c) != 0 && tf__now_ns() < until) rt2_sleep_ms(10);
  ck_assert_int_eq(rt2_graphs(&l.c), 0);
  /* The session is gone for good. */
  ck_assert_int_eq(rt2_call(l.mc, rt2_req(TF_M_KEEP_ALIVE, s, 0, 5000), NULL, &st),
                   TF_ABORTED);
  tf_graph_free(g);
  lim_stop(&l);
}
END_TEST

/* KeepAlive (by the remote session's thread, or by hand) keeps a session
 * past its TTL; a session without it expires. */
START_TEST(keep_alive_keeps_session) {
  lim l;
  lim_start(&l, 1, 8, "session_ttl_ms: 500");
  tf_graph *g = blocking_graph();
  tf_session *rs = rt2_remote(&l.c, g);
  tf_status st;
  uint64_t bare = create(&l, NULL, &st), manual = create(&l, NULL, &st);
  ck_assert_msg(bare != 0 && manual != 0, "%s", st.msg);
  int64_t t0 = tf__now_ns(), last = t0;
  for (int i = 0; i < 12; i++) { /* 1.2 s: over two TTLs */
    rt2_sleep_ms(100);
    ck_assert_msg(rt2_call(l.mc, rt2_req(TF_M_KEEP_ALIVE, manual, 0, 5000), NULL, &st) ==
                  TF_OK, "KeepAlive %d at %.3f s (%.3f s after the last): %s", i,
                  rt2_secs_since(t0), rt2_secs_since(last), st.msg);
    last = tf__now_ns();
  }
  ck_assert_int_eq(tf_master_num_sessions(l.c.master), 2);
  ck_assert_int_eq(rt2_call(l.mc, rt2_req(TF_M_KEEP_ALIVE, bare, 0, 5000), NULL, &st),
                   TF_ABORTED);
  const char *fetch[] = {"neg"};
  tf_tensor *out = NULL;
  ck_assert_msg(tf_session_run(rs, NULL, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  ck_assert(*(const float *)out->data == -2.0f);
  tf_tensor_unref(out);
  tf_session_free(rs);
  ck_assert_int_eq(tf_master_num_sessions(l.c.master), 1);
  tf_graph_free(g);
  lim_stop(&l);
}
END_TEST

/* A blocked step with a 300 ms deadline is answered DEADLINE_EXCEEDED
 * within 100 ms of it, and ends on the worker. */
START_TEST(deadline_within_100ms) {
  lim l;
  lim_start(&l, 1, 8, "max_steps: 8");
  tf_graph *g = blocking_graph();
  tf_status st;
  uint64_t s = create(&l, g, &st);
  ck_assert_msg(s != 0, "%s", st.msg);
  for (int k = 0; k < 3; k++) {
    rt2_async a;
    int64_t t0 = tf__now_ns();
    run_async(&l, &a, s, "deq", 300);
    ck_assert(rt2_async_wait(&a, 3000));
    double secs = rt2_secs_since(t0);
    ck_assert_int_eq(a.st.code, TF_DEADLINE_EXCEEDED);
    /* The master's timer or the worker's (it got the time left) ends it,
     * whichever fires first; both name the deadline. */
    ck_assert_msg(strstr(a.st.msg, "deadline") != NULL && strstr(a.st.msg, "300 ms") != NULL,
                  "%s", a.st.msg);
    ck_assert_msg(secs >= 0.3 && secs < 0.4, "step %d took %.3f s", k, secs);
    rt2_async_fini(&a);
    ck_assert_int_eq(running(&l, 2000), 0);
  }
  tf_graph_free(g);
  lim_stop(&l);
}
END_TEST

/* Steps beyond max_steps are refused at once naming the cap; others run
 * once those finish. */
START_TEST(steps_cap) {
  lim l;
  lim_start(&l, 1, 8, "max_steps: 2");
  tf_graph *g = blocking_graph();
  tf_status st;
  uint64_t s = create(&l, g, &st);
  ck_assert_msg(s != 0, "%s", st.msg);
  rt2_async a[3];
  run_async(&l, &a[0], s, "deq", 1500);
  run_async(&l, &a[1], s, "deq", 1500);
  rt2_sleep_ms(200);
  int64_t t0 = tf__now_ns();
  run_async(&l, &a[2], s, "deq", 1500);
  ck_assert(rt2_async_wait(&a[2], 3000));
  ck_assert_msg(rt2_secs_since(t0) < 0.5, "took %.2f s", rt2_secs_since(t0));
  ck_assert_int_eq(a[2].st.code, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(a[2].st.msg, "limits.max_steps = 2") != NULL, "%s", a[2].st.msg);
  for (int i = 0; i < 2; i++) {
    ck_assert(rt2_async_wait(&a[i], 5000));
    ck_assert_int_eq(a[i].st.code, TF_DEADLINE_EXCEEDED);
  }
  for (int i = 0; i < 3; i++) rt2_async_fini(&a[i]);
  rt2_async b;
  run_async(&l, &b, s, "neg", 5000);
  ck_assert(rt2_async_wait(&b, 5000));
  ck_assert_msg(b.st.code == TF_OK, "%s", b.st.msg);
  rt2_async_fini(&b);
  tf_graph_free(g);
  lim_stop(&l);
}
END_TEST

/* ---- a fake worker:1 whose RegisterGraph answers after 1.5 s ------------- */

static void fake_handle(void *arg, struct tf_rpc_call *call) {
  (void)arg;
  const tf_wire_msg *req = tf_rpc_call_request(call);
  tf_status st;
  tf_status_init(&st);
  if (req->h.method == TF_M_GET_STATUS) {
    tf_msg_get_status_reply b = {.job = "worker", .task = 1, .incarnation = 42};
    tf_wire_writer *w = tf_rpc_reply_writer(call);
    tf_msg_get_status_reply_encode(w, &b);
    nng_msg *m = NULL;
    ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
    tf_rpc_reply(call, m);
    return;
  }
  if (req->h.method == TF_M_REGISTER_GRAPH) rt2_sleep_ms(1500);
  tf_status_set(&st, TF_UNAVAILABLE, "the fake worker refuses %s",
                tf_method_name(req->h.method));
  tf_rpc_reply_error(call, &st);
}

/* With one master handler thread, session A's first step waits on a slow
 * RegisterGraph while session B's steps run at once. */
START_TEST(slow_register_blocks_nobody) {
  lim l;
  lim_start(&l, 2, 1, "max_steps: 8");
  char *url = tf_cluster_task_url(l.c.spec, "worker", 1);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.self_task = "/job:worker/replica:0/task:1";
  o.self_incarnation = 42;
  tf_rpc_server *fake = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_server_start(&o, fake_handle, NULL, &fake, &st) == TF_OK, "%s",
                st.msg);
  tf_graph *ga = tf_graph_new();
  rt_const(ga, "ka", "/job:worker/task:1", tf_tensor_scalar_f32(1.0f));
  tf_graph *gb = blocking_graph();
  uint64_t sa = create(&l, ga, &st), sb = create(&l, gb, &st);
  ck_assert_msg(sa != 0 && sb != 0, "%s", st.msg);
  rt2_async a;
  int64_t t0 = tf__now_ns();
  run_async(&l, &a, sa, "ka", 5000);
  rt2_sleep_ms(100);
  for (int k = 0; k < 5; k++) {
    rt2_async b;
    run_async(&l, &b, sb, "neg", 5000);
    ck_assert(rt2_async_wait(&b, 5000));
    ck_assert_msg(b.st.code == TF_OK, "%s", b.st.msg);
    rt2_async_fini(&b);
  }
  ck_assert_msg(rt2_secs_since(t0) < 1.0, "session B waited: %.2f s", rt2_secs_since(t0));
  ck_assert(rt2_async_wait(&a, 5000));
  ck_assert_int_eq(a.st.code, TF_UNAVAILABLE);
  ck_assert_msg(strstr(a.st.msg, "RegisterGraph on /job:worker/replica:0/task:1") != NULL,
                "%s", a.st.msg);
  ck_assert_msg(rt2_secs_since(t0) >= 1.4, "%.2f s", rt2_secs_since(t0));
  rt2_async_fini(&a);
  tf_rpc_server_stop(fake);
  free(url);
  tf_graph_free(ga);
  tf_graph_free(gb);
  lim_stop(&l);
}
END_TEST

/* worker 1 of a spec with the workers' ports swapped serves at worker 0's
 * address: ClusterStatus shows worker 0 as a wrong task there. */
START_TEST(wrong_task_in_health) {
  int ports[4] = {rt_free_port(), rt_free_port(), rt_free_port(), rt_free_port()};
  int swapped[4] = {ports[0], ports[1], ports[3], ports[2]};
  tf_cluster_spec *spec = spec_at(ports, 2, 8, "max_steps: 8");
  tf_cluster_spec *other = spec_at(swapped, 2, 8, "max_steps: 8");
  tf_status st;
  tf_status_init(&st);
  tf_worker *ps = NULL, *w = NULL;
  tf_master *m = NULL;
  ck_assert_msg(tf_worker_start(spec, "ps", 0, &ps, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_worker_start(other, "worker", 1, &w, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_master_start(spec, &m, &st) == TF_OK, "%s", st.msg);
  rt2_ticker tk;
  rt2_ticker_start(&tk, m);
  tf_rpc_client *mc = rt2_client(spec, "master", 0);
  char want[256];
  snprintf(want, sizeof want, "wrong task at address: tcp://127.0.0.1:%d answered as "
           "/job:worker/replica:0/task:1, expected /job:worker/replica:0/task:0", ports[2]);
  char seen[1024] = "";
  int64_t until = tf__now_ns() + 3000 * 1000000LL;
  while (strstr(seen, want) == NULL && tf__now_ns() < until) {
    tf_wire_msg *r = NULL;
    ck_assert_msg(rt2_call(mc, rt2_req(TF_M_CLUSTER_STATUS, 0, 0, 5000), &r, &st) == TF_OK,
                  "%s", st.msg);
    tf_msg_cluster_status_reply b;
    ck_assert_msg(tf_msg_cluster_status_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    for (int i = 0; i < b.n_tasks; i++) {
      if (strcmp(b.tasks[i].job, "worker") == 0 && b.tasks[i].task == 0) {
        ck_assert(!b.tasks[i].up);
        snprintf(seen, sizeof seen, "%s", b.tasks[i].error);
      }
    }
    tf_msg_cluster_status_reply_fini(&b);
    tf_wire_msg_free(r);
    rt2_sleep_ms(20);
  }
  ck_assert_msg(strstr(seen, want) != NULL, "health error: '%s', want '%s'", seen, want);
  tf_rpc_client_free(mc);
  rt2_ticker_stop(&tk);
  tf_master_free(m);
  tf_worker_free(w);
  tf_worker_free(ps);
  tf_cluster_spec_free(other);
  tf_cluster_spec_free(spec);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("master_limits");
  TCase *tc = tcase_create("limits");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, session_cap);
  tcase_add_test(tc, ttl_expiry_aborts_steps);
  tcase_add_test(tc, keep_alive_keeps_session);
  tcase_add_test(tc, deadline_within_100ms);
  tcase_add_test(tc, steps_cap);
  tcase_add_test(tc, slow_register_blocks_nobody);
  tcase_add_test(tc, wrong_task_in_health);
  suite_add_tcase(s, tc);
  return s;
}
