/* worker_async_test.c: two workers in one process, each served by only 2
 * RPC handler threads: 64 steps whose partitions wait for each other's
 * tensors (a round trip worker 0 -> 1 -> 0 per step) all run at once and
 * complete with the right values, since no handler waits for another
 * task; and a _Send by TensorPush (a string tensor: numbers go by the
 * tensor stream) whose delivery fails (the receiver's pushed-bytes cap, a
 * receiver that already cleaned the step up) fails the sending step with
 * the receiver's status, naming the receiver and the key, promptly even
 * when the step would otherwise wait. */
#include "test/unit/runtime/rt_testlib2.h"

typedef struct pair {
  tf_cluster_spec *spec;
  tf_worker *w[2];
  tf_rpc_client *c[2];
} pair;

static void pair_start(pair *p, int rpc_threads, int64_t max_pushed) {
  p->spec = rt2_spec(2, 10000, 5000);
  p->spec->rpc_threads = rpc_threads;
  if (max_pushed > 0) p->spec->max_pushed_bytes = max_pushed;
  tf_status st;
  tf_status_init(&st);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(tf_worker_start(p->spec, "worker", i, &p->w[i], &st) == TF_OK, "%s",
                  st.msg);
    p->c[i] = rt2_client(p->spec, "worker", i);
  }
}

static void pair_stop(pair *p) {
  for (int i = 0; i < 2; i++) {
    tf_rpc_client_free(p->c[i]);
    tf_worker_free(p->w[i]);
  }
  tf_cluster_spec_free(p->spec);
}

/* _Send of in as tensor from worker `from` to worker `to`. */
static void send_node(tf_graph *g, const char *name, tf_output in, const char *tensor,
                      const pair *p, int from, int to) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(tf_node_output_type(in.node, in.index))},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(tf_worker_device_name(p->w[from]))},
                     {"send_device_incarnation",
                      tf_attr_int((int64_t)tf_worker_incarnation(p->w[from]))},
                     {"recv_device", tf_attr_string(tf_worker_device_name(p->w[to]))}};
  rt_node(g, "_Send", name, NULL, &in, 1, kv, 5);
}

static tf_node *recv_node(tf_graph *g, const char *name, const char *tensor,
                          const pair *p, int from, int to) {
  tf_attr_kv kv[] = {{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(tf_worker_device_name(p->w[from]))},
                     {"send_device_incarnation",
                      tf_attr_int((int64_t)tf_worker_incarnation(p->w[from]))},
                     {"recv_device", tf_attr_string(tf_worker_device_name(p->w[to]))}};
  return rt_node(g, "_Recv", name, NULL, NULL, 0, kv, 5);
}

static void ret_node(tf_graph *g, const char *name, tf_output in, int index) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(index)}};
  rt_node(g, "_Retval", name, NULL, &in, 1, kv, 2);
}

static tf_tensor *ret_of(const tf_wire_msg *r, uint32_t k) {
  tf_status st;
  tf_status_init(&st);
  const msgpack_object_array *a = tf_wire_get_array(&r->body, "rets", "reply", &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  ck_assert_uint_gt(a->size, k);
  tf_tensor *t = NULL;
  ck_assert_msg(tf_wire_unpack_tensor(r, &a->ptr[k], &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

#define N_STEPS 64

/* Worker 0: x (_Arg) -> send "x" to 1; recv "y" from 1 -> ret. Worker 1:
 * recv "x" -> Neg -> send "y" to 0. All 64 steps start before any is
 * answered; each returns -x for its own x. */
START_TEST(many_cross_task_steps_two_threads) {
  pair p;
  pair_start(&p, 2, 0);
  tf_graph *g0 = tf_graph_new(), *g1 = tf_graph_new();
  tf_attr_kv ak[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
  tf_node *x = rt_node(g0, "_Arg", "x", NULL, NULL, 0, ak, 2);
  send_node(g0, "send_x", rt_out(x), "x", &p, 0, 1);
  ret_node(g0, "ret", rt_out(recv_node(g0, "recv_y", "y", &p, 1, 0)), 0);
  tf_output rx = rt_out(recv_node(g1, "recv_x", "x", &p, 0, 1));
  send_node(g1, "send_y", rt_out(rt_node(g1, "Neg", "neg", NULL, &rx, 1, NULL, 0)), "y",
            &p, 1, 0);
  uint64_t h0 = rt2_register(p.c[0], g0), h1 = rt2_register(p.c[1], g1);
  static rt2_async a0[N_STEPS], a1[N_STEPS];
  tf_tensor *xs[N_STEPS];
  int64_t t0 = tf__now_ns();
  for (int i = 0; i < N_STEPS; i++) {
    xs[i] = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), -10, 10);
    rt2_async_start(&a1[i], p.c[1], rt2_run_graph_msg(h1, 1000 + (uint64_t)i, 20000, NULL,
                                                      0, 0), 20000);
    rt2_async_start(&a0[i], p.c[0], rt2_run_graph_msg(h0, 1000 + (uint64_t)i, 20000,
                                                      &xs[i], 1, 1), 20000);
  }
  for (int i = 0; i < N_STEPS; i++) {
    ck_assert_msg(rt2_async_wait(&a0[i], 20000) && rt2_async_wait(&a1[i], 20000),
                  "step %d did not finish", i);
    ck_assert_msg(a0[i].st.code == TF_OK, "step %d on 0: %s", i, a0[i].st.msg);
    ck_assert_msg(a1[i].st.code == TF_OK, "step %d on 1: %s", i, a1[i].st.msg);
    tf_tensor *got = ret_of(a0[i].reply, 0);
    const float *gv = got->data, *xv = xs[i]->data;
    for (int k = 0; k < 4; k++) ck_assert(gv[k] == -xv[k]);
    tf_tensor_unref(got);
    tf_tensor_unref(xs[i]);
    rt2_async_fini(&a0[i]);
    rt2_async_fini(&a1[i]);
  }
  ck_assert_msg(rt2_secs_since(t0) < 15.0, "took %.2f s", rt2_secs_since(t0));
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, p.w[i], 0, 2000), 0);
    ck_assert_int_eq(rt2_poll_int(tf_worker_live_step_tables, p.w[i], 0, 2000), 0);
  }
  tf_graph_free(g0);
  tf_graph_free(g1);
  pair_stop(&p);
}
END_TEST

/* A string tensor of n elements (n * sizeof(tf_string) bytes as the
 * pushed-bytes cap counts them). */
static tf_tensor *strings(int n) {
  tf_tensor *t = NULL;
  tf_status st;
  tf_shape sh = tf_shape_of(1, n);
  ck_assert(tf_tensor_new(TF_STRING, &sh, &t, &st) == TF_OK);
  for (int i = 0; i < n; i++) {
    ck_assert(tf_tensor_set_string(t, i, "x", 1, &st) == TF_OK);
  }
  return t;
}

/* Worker 0 sends a 500-string constant (8000 bytes counted) to worker 1
 * (cap 4096 bytes), and with wait_back also waits for a reply that never
 * comes. */
static tf_graph *big_send_graph(const pair *p, bool wait_back) {
  tf_graph *g = tf_graph_new();
  tf_node *c = rt_const(g, "big", NULL, strings(500));
  send_node(g, "send_big", rt_out(c), "big", p, 0, 1);
  if (wait_back) ret_node(g, "ret", rt_out(recv_node(g, "recv", "never", p, 1, 0)), 0);
  return g;
}

START_TEST(failed_delivery_fails_sender) {
  pair p;
  pair_start(&p, 2, 4096);
  for (int wait_back = 0; wait_back < 2; wait_back++) {
    tf_graph *g = big_send_graph(&p, wait_back);
    uint64_t h = rt2_register(p.c[0], g);
    tf_wire_msg *r = NULL;
    tf_status st;
    int64_t t0 = tf__now_ns();
    tf_code rc = tf_rpc_call(p.c[0], rt2_run_graph_msg(h, 70 + (uint64_t)wait_back, 10000,
                                                       NULL, 0, wait_back), 10000, &r, &st);
    ck_assert_int_eq(rc, TF_RESOURCE_EXHAUSTED);
    ck_assert_msg(rt2_secs_since(t0) < 2.0, "took %.2f s", rt2_secs_since(t0));
    ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:0: delivering key '") != NULL,
                  "%s", st.msg);
    ck_assert_msg(strstr(st.msg, ";big;") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "to /job:worker/replica:0/task:1 failed: "
                                 "/job:worker/replica:0/task:1: TensorPush key") != NULL,
                  "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "the limit is 4096 bytes (limits.max_pushed_mb)") !=
                  NULL, "%s", st.msg);
    tf_graph_free(g);
  }
  /* A receiver that already cleaned the step up: ABORTED, naming the step. */
  tf_status st;
  ck_assert_int_eq(rt2_call(p.c[1], rt2_req(TF_M_CLEANUP_GRAPH, 0, 80, 5000), NULL, &st),
                   TF_OK);
  p.spec->max_pushed_bytes = 1 << 20;
  tf_graph *g = big_send_graph(&p, false);
  uint64_t h = rt2_register(p.c[0], g);
  tf_wire_msg *r = NULL;
  ck_assert_int_eq(tf_rpc_call(p.c[0], rt2_run_graph_msg(h, 80, 10000, NULL, 0, 0), 10000,
                               &r, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "step 80 was already cleaned up or aborted") != NULL, "%s",
                st.msg);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, p.w[0], 0, 2000), 0);
  tf_graph_free(g);
  pair_stop(&p);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("worker_async");
  TCase *tc = tcase_create("async");
  tcase_set_timeout(tc, 45);
  tcase_add_test(tc, many_cross_task_steps_two_threads);
  tcase_add_test(tc, failed_delivery_fails_sender);
  suite_add_tcase(s, tc);
  return s;
}
