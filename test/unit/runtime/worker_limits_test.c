/* worker_limits_test.c: the worker's bounds and owners, spoken to with
 * hand-built requests: limits.max_steps, max_graphs and max_pushed_mb each
 * refuse with RESOURCE_EXHAUSTED naming the cap and its value and the
 * worker keeps serving; a master that comes back with another incarnation
 * loses its graphs and steps at once; a master silent for session_ttl_ms
 * loses them at the next tick (and one that keeps talking keeps them); a
 * step blocked in a _Recv ends within 100 ms of its header deadline. */
#include "lib/core/framework/rendezvous.h"
#include "lib/transport/messages.h"
#include "test/unit/runtime/rt_testlib2.h"

#define MASTER "/job:master/replica:0/task:0"
#define PS_DEV "/job:ps/replica:0/task:0/device:CPU:0"

typedef struct fx {
  tf_cluster_spec *spec;
  tf_worker *w; /* worker task 1 */
  tf_rpc_client *c;
} fx;

/* Starts worker 1 after adjust(spec) (may be NULL) changed limits. */
static void fx_start(fx *f, void (*adjust)(tf_cluster_spec *)) {
  f->spec = rt2_spec(2, 3000, 5000);
  if (adjust != NULL) adjust(f->spec);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_worker_start(f->spec, "worker", 1, &f->w, &st) == TF_OK, "%s", st.msg);
  f->c = rt2_client(f->spec, "worker", 1);
}

static void fx_stop(fx *f) {
  tf_rpc_client_free(f->c);
  tf_worker_free(f->w);
  tf_cluster_spec_free(f->spec);
}

/* A request writer from task `from` (incarnation inc). */
static tf_wire_writer *req_from(int method, uint64_t step, int64_t deadline_ms,
                                const char *from, uint64_t inc) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id(), .step_id = step,
                      .deadline_ms = deadline_ms, .from = from, .from_inc = inc};
  return tf_wire_writer_new(&h);
}

/* RegisterGraph of g from (from, inc): the code; *handle on OK. */
static tf_code register_from(fx *f, const tf_graph *g, const char *from, uint64_t inc,
                             uint64_t *handle, tf_status *st) {
  void *buf = NULL;
  size_t len = 0;
  ck_assert_msg(tf_graph_to_msgpack(g, &buf, &len, st) == TF_OK, "%s", st->msg);
  tf_wire_writer *w = req_from(TF_M_REGISTER_GRAPH, 0, 5000, from, inc);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 1);
  tf_wire_pack_str(pk, "graph");
  msgpack_pack_bin(pk, len);
  msgpack_pack_bin_body(pk, buf, len);
  free(buf);
  tf_wire_msg *r = NULL;
  tf_code rc = rt2_call(f->c, w, &r, st);
  if (rc == TF_OK) {
    ck_assert(tf_wire_get_u64(&r->body, "handle", "reply", handle, st) == TF_OK);
  }
  tf_wire_msg_free(r);
  return rc;
}

/* A RunGraph request (no args) from (from, inc). */
static nng_msg *run_msg(uint64_t handle, uint64_t step, int64_t deadline_ms, int n_rets,
                        const char *from, uint64_t inc) {
  tf_wire_writer *w = req_from(TF_M_RUN_GRAPH, step, deadline_ms, from, inc);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 4);
  tf_wire_pack_str(pk, "handle");
  msgpack_pack_uint64(pk, handle);
  tf_wire_pack_str(pk, "args");
  msgpack_pack_array(pk, 0);
  tf_wire_pack_str(pk, "n_rets");
  msgpack_pack_int(pk, n_rets);
  tf_wire_pack_str(pk, "trace");
  msgpack_pack_false(pk);
  return rt2_finish(w);
}

static tf_code get_status_from(fx *f, const char *from, uint64_t inc) {
  tf_status st;
  return rt2_call(f->c, req_from(TF_M_GET_STATUS, 0, 5000, from, inc), NULL, &st);
}

/* _Recv of tensor_name (float32, from the ps) into dst -> _Retval 0. */
static tf_graph *recv_graph(const char *dst, const char *tensor_name) {
  tf_graph *g = tf_graph_new();
  tf_attr_kv kv[] = {{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                     {"tensor_name", tf_attr_string(tensor_name)},
                     {"send_device", tf_attr_string(PS_DEV)},
                     {"send_device_incarnation", tf_attr_int(7)},
                     {"recv_device", tf_attr_string(dst)}};
  tf_node *r = rt_node(g, "_Recv", "recv", NULL, NULL, 0, kv, 5);
  tf_attr_kv rk[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
  tf_output in = rt_out(r);
  rt_node(g, "_Retval", "out", NULL, &in, 1, rk, 2);
  return g;
}

/* TensorPush of t under key for step (anonymous sender). */
static tf_code push(fx *f, uint64_t step, const char *key, tf_tensor *t, tf_status *st) {
  tf_wire_writer *w = rt2_req(TF_M_TENSOR_PUSH, 0, step, 5000);
  tf_msg_tensor_push_req b = {.key = key, .dead = false, .tensor = t};
  tf_msg_tensor_push_req_encode(w, &b);
  return rt2_call(f->c, w, NULL, st);
}

static void max_steps_2(tf_cluster_spec *s) { s->max_steps = 2; }

/* With max_steps 2, two steps blocked in a _Recv fill the worker: a third
 * RunGraph is refused at once naming the cap; GetStatus and TensorPush
 * still get through and complete the blocked steps; then a new step runs. */
START_TEST(max_steps_refuses_with_cap) {
  fx f;
  fx_start(&f, max_steps_2);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "v");
  tf_status st;
  uint64_t h = 0;
  ck_assert_msg(register_from(&f, g, "", 0, &h, &st) == TF_OK, "%s", st.msg);
  rt2_async a[2];
  for (int i = 0; i < 2; i++) {
    rt2_async_start(&a[i], f.c, run_msg(h, 10 + (uint64_t)i, 10000, 1, "", 0), 10000);
  }
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 2, 3000), 2);
  tf_wire_msg *r = NULL;
  tf_code rc = tf_rpc_call(f.c, run_msg(h, 12, 10000, 1, "", 0), 5000, &r, &st);
  ck_assert_int_eq(rc, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1: 2 steps in flight, the "
                               "limit (limits.max_steps) is 2") != NULL, "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "running_steps"), 2);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "v", 0, 0);
  tf_tensor *t = tf_tensor_scalar_f32(5);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(push(&f, 10 + (uint64_t)i, key, t, &st) == TF_OK, "%s", st.msg);
    ck_assert(rt2_async_wait(&a[i], 3000));
    ck_assert_msg(a[i].st.code == TF_OK, "%s", a[i].st.msg);
    rt2_async_fini(&a[i]);
  }
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 0, 3000), 0);
  ck_assert_msg(push(&f, 12, key, t, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_rpc_call(f.c, run_msg(h, 12, 10000, 1, "", 0), 5000, &r, &st), TF_OK);
  tf_wire_msg_free(r);
  tf_tensor_unref(t);
  free(key);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

static void max_graphs_2(tf_cluster_spec *s) { s->max_graphs = 2; }

START_TEST(max_graphs_refuses_with_cap) {
  fx f;
  fx_start(&f, max_graphs_2);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "v");
  tf_status st;
  uint64_t h[3] = {0};
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(register_from(&f, g, "", 0, &h[i], &st) == TF_OK, "%s", st.msg);
  }
  ck_assert_int_eq(register_from(&f, g, "", 0, &h[2], &st), TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "RegisterGraph on /job:worker/replica:0/task:1: 2 graphs "
                               "registered, the limit (limits.max_graphs) is 2") != NULL,
                "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 2);
  /* One deregistered: room for one more. */
  tf_wire_writer *w = rt2_req(TF_M_DEREGISTER_GRAPH, 0, 0, 5000);
  tf_msg_deregister_graph_req d = {.handle = h[0]};
  tf_msg_deregister_graph_req_encode(w, &d);
  ck_assert_msg(rt2_call(f.c, w, NULL, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(register_from(&f, g, "", 0, &h[2], &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 2);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

static void max_pushed_4k(tf_cluster_spec *s) { s->max_pushed_bytes = 4096; }

/* With 4096 bytes of pushed tensors allowed: 3000 bytes wait; 3000 more for
 * another step are refused naming the cap; once the first is received the
 * second fits. A push that meets a waiting receiver is never refused. */
START_TEST(max_pushed_refuses_with_cap) {
  fx f;
  fx_start(&f, max_pushed_4k);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "v");
  tf_status st;
  uint64_t h = 0;
  ck_assert_msg(register_from(&f, g, "", 0, &h, &st) == TF_OK, "%s", st.msg);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "v", 0, 0);
  tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(1, 750), -1, 1); /* 3000 bytes */
  ck_assert_msg(push(&f, 20, key, t, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(push(&f, 21, key, t, &st), TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1: TensorPush key") != NULL,
                "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "(3000 bytes) for step 21 refused: pushed tensors not yet "
                               "received hold 3000 bytes, the limit is 4096 bytes "
                               "(limits.max_pushed_mb)") != NULL, "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "buffered_bytes"), 3000);
  tf_wire_msg *r = NULL;
  ck_assert_int_eq(tf_rpc_call(f.c, run_msg(h, 20, 5000, 1, "", 0), 5000, &r, &st), TF_OK);
  tf_wire_msg_free(r);
  ck_assert_int_eq(rt2_status_int(f.c, "buffered_bytes"), 0);
  ck_assert_msg(push(&f, 21, key, t, &st) == TF_OK, "%s", st.msg);
  /* Step 22 waits in its _Recv; a push over the cap goes straight to it. */
  rt2_async a;
  rt2_async_start(&a, f.c, run_msg(h, 22, 5000, 1, "", 0), 5000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 3000), 1);
  /* The step runs, but its _Recv may not wait yet: until it does, the push
   * would be buffered, and step 21's 3000 bytes leave no room for it. */
  tf_code pc = TF_UNKNOWN;
  for (int i = 0; i < 300 && (pc = push(&f, 22, key, t, &st)) == TF_RESOURCE_EXHAUSTED; i++) {
    rt2_sleep_ms(10);
  }
  ck_assert_msg(pc == TF_OK, "%s", st.msg);
  ck_assert(rt2_async_wait(&a, 3000));
  ck_assert_msg(a.st.code == TF_OK, "%s", a.st.msg);
  rt2_async_fini(&a);
  tf_tensor_unref(t);
  free(key);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

/* The master restarts: a request from the same task with another
 * incarnation drops the old incarnation's graphs and aborts its steps at
 * once; the graphs of another master stay. */
START_TEST(owner_new_incarnation_drops_old) {
  fx f;
  fx_start(&f, NULL);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "never");
  tf_status st;
  uint64_t h = 0, other = 0;
  ck_assert_msg(register_from(&f, g, MASTER, 0x11, &h, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(register_from(&f, g, "/job:master/replica:0/task:1", 0x99, &other, &st) ==
                TF_OK, "%s", st.msg);
  rt2_async a;
  rt2_async_start(&a, f.c, run_msg(h, 30, 20000, 1, MASTER, 0x11), 20000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 3000), 1);
  ck_assert_int_eq(get_status_from(&f, MASTER, 0x11), TF_OK); /* same: nothing */
  ck_assert(!rt2_async_wait(&a, 50));
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(get_status_from(&f, MASTER, 0x22), TF_OK);
  ck_assert(rt2_async_wait(&a, 2000));
  ck_assert_msg(rt2_secs_since(t0) < 1.0, "took %.2f s", rt2_secs_since(t0));
  ck_assert_int_eq(a.st.code, TF_ABORTED);
  ck_assert_msg(strstr(a.st.msg, "the master " MASTER " (incarnation 0000000000000011) "
                                 "was replaced by incarnation 0000000000000022") != NULL,
                "%s", a.st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 1); /* the other master's */
  tf_wire_msg *r = NULL;
  ck_assert_int_eq(tf_rpc_call(f.c, run_msg(h, 31, 5000, 1, MASTER, 0x22), 5000, &r, &st),
                   TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "Graph handle is not found") != NULL, "%s", st.msg);
  rt2_async_fini(&a);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

static void session_ttl_300(tf_cluster_spec *s) { s->session_ttl_ms = 300; }

/* With session_ttl_ms 300: a master that keeps sending GetStatus keeps its
 * graph and blocked step through 700 ms of ticks; once silent, the next
 * tick past the TTL deregisters the graph and aborts the step, naming the
 * master, its incarnation and the silence. */
START_TEST(owner_silent_expires) {
  fx f;
  fx_start(&f, session_ttl_300);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "never");
  tf_status st;
  uint64_t h = 0;
  ck_assert_msg(register_from(&f, g, MASTER, 0x5, &h, &st) == TF_OK, "%s", st.msg);
  rt2_async a;
  rt2_async_start(&a, f.c, run_msg(h, 40, 20000, 1, MASTER, 0x5), 20000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 3000), 1);
  for (int i = 0; i < 14; i++) { /* 700 ms, health checks every 50 ms */
    ck_assert_int_eq(get_status_from(&f, MASTER, 0x5), TF_OK);
    tf_worker_tick(f.w);
    rt2_sleep_ms(50);
  }
  ck_assert(!rt2_async_wait(&a, 1));
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 1);
  int64_t t0 = tf__now_ns();
  while (!rt2_async_wait(&a, 50) && rt2_secs_since(t0) < 3.0) tf_worker_tick(f.w);
  ck_assert(a.done);
  ck_assert_msg(rt2_secs_since(t0) < 0.6, "took %.2f s", rt2_secs_since(t0));
  ck_assert_int_eq(a.st.code, TF_ABORTED);
  ck_assert_msg(strstr(a.st.msg, "the master " MASTER " (incarnation 0000000000000005) "
                                 "has been silent for ") != NULL, "%s", a.st.msg);
  ck_assert_msg(strstr(a.st.msg, "(the limit, limits.session_ttl_ms, is 300)") != NULL,
                "%s", a.st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 0);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 0, 2000), 0);
  rt2_async_fini(&a);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

/* A step blocked in a _Recv with a 300 ms header deadline is answered
 * DEADLINE_EXCEEDED within 100 ms of it (timed at the client, so the
 * round trip counts too). */
START_TEST(deadline_ends_blocked_recv) {
  fx f;
  fx_start(&f, NULL);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "never");
  tf_status st;
  uint64_t h = 0;
  ck_assert_msg(register_from(&f, g, "", 0, &h, &st) == TF_OK, "%s", st.msg);
  for (uint64_t k = 0; k < 3; k++) {
    int64_t dl = 300;
    tf_wire_msg *r = NULL;
    int64_t t0 = tf__now_ns();
    tf_code rc = tf_rpc_call(f.c, run_msg(h, 50 + k, dl, 1, "", 0), 5000, &r, &st);
    int64_t ms = (tf__now_ns() - t0) / 1000000;
    ck_assert_int_eq(rc, TF_DEADLINE_EXCEEDED);
    ck_assert_msg(strstr(st.msg, "ran past its deadline (300 ms after it started)") != NULL, "%s", st.msg);
    ck_assert_msg(ms >= dl - 5 && ms < dl + 100, "answered after %lld ms (deadline %lld)",
                  (long long)ms, (long long)dl);
  }
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 0, 2000), 0);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("worker_limits");
  TCase *tc = tcase_create("limits");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, max_steps_refuses_with_cap);
  tcase_add_test(tc, max_graphs_refuses_with_cap);
  tcase_add_test(tc, max_pushed_refuses_with_cap);
  tcase_add_test(tc, owner_new_incarnation_drops_old);
  tcase_add_test(tc, owner_silent_expires);
  tcase_add_test(tc, deadline_ends_blocked_recv);
  suite_add_tcase(s, tc);
  return s;
}
