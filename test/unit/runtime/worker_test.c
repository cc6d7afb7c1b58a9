/* worker_test.c: the worker service spoken to directly with hand-built
 * requests (lib/transport/rpc.h, wire.h): GetStatus fields, RegisterGraph
 * and RunGraph with args and rets, malformed registrations, unknown and
 * deregistered handles, the step deadline on a short chain of slow
 * MatMuls, AbortStep of a step blocked in a _Recv, pushes
 * after cleanup and to the wrong task, a push whose payload offset is not
 * 64-byte aligned, a push that arrives before its step starts, draining,
 * and the TTL sweep of orphaned step tables. */
#include "lib/core/framework/rendezvous.h"
#include "lib/transport/messages.h"
#include "test/unit/runtime/rt_testlib2.h"
#include "tf/allocator.h"

typedef struct wk_fixture {
  tf_cluster_spec *spec;
  tf_worker *w;       /* worker task 1 */
  tf_rpc_client *c;
} wk_fixture;

static void fx_start(wk_fixture *f, int64_t step_ttl_ms) {
  f->spec = rt2_spec(2, 3000, step_ttl_ms);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_worker_start(f->spec, "worker", 1, &f->w, &st) == TF_OK, "%s", st.msg);
  f->c = rt2_client(f->spec, "worker", 1);
}

static void fx_stop(wk_fixture *f) {
  tf_rpc_client_free(f->c);
  tf_worker_free(f->w);
  tf_cluster_spec_free(f->spec);
}

static tf_node *arg_node(tf_graph *g, const char *name, int index) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(index)}};
  return rt_node(g, "_Arg", name, NULL, NULL, 0, kv, 2);
}

static void ret_node(tf_graph *g, const char *name, tf_output in, int index) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(index)}};
  rt_node(g, "_Retval", name, NULL, &in, 1, kv, 2);
}

/* ret0 = a + b, ret1 = -a. */
static tf_graph *add_neg_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *a = arg_node(g, "a", 0);
  tf_node *b = arg_node(g, "b", 1);
  tf_output ab[] = {rt_out(a), rt_out(b)};
  tf_node *s = rt_node(g, "Add", "sum", NULL, ab, 2, NULL, 0);
  tf_node *n = rt_node(g, "Neg", "neg", NULL, ab, 1, NULL, 0);
  ret_node(g, "r0", rt_out(s), 0);
  ret_node(g, "r1", rt_out(n), 1);
  return g;
}

#define PS_DEV "/job:ps/replica:0/task:0/device:CPU:0"

/* _Recv of tensor_name from the ps (incarnation 7) into dst -> _Retval 0. */
static tf_graph *recv_graph(const char *dst, const char *tensor_name) {
  tf_graph *g = tf_graph_new();
  tf_attr_kv kv[] = {{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                     {"tensor_name", tf_attr_string(tensor_name)},
                     {"send_device", tf_attr_string(PS_DEV)},
                     {"send_device_incarnation", tf_attr_int(7)},
                     {"recv_device", tf_attr_string(dst)}};
  tf_node *r = rt_node(g, "_Recv", "recv", NULL, NULL, 0, kv, 5);
  ret_node(g, "out", rt_out(r), 0);
  return g;
}

/* Runs RunGraph synchronously; returns the code, *reply on OK. */
static tf_code run_graph(wk_fixture *f, uint64_t handle, uint64_t step,
                         tf_tensor *const *args, int n_args, int n_rets,
                         tf_wire_msg **reply, tf_status *st) {
  tf_wire_msg *r = NULL;
  tf_status_init(st);
  tf_code rc = tf_rpc_call(f->c, rt2_run_graph_msg(handle, step, 5000, args, n_args, n_rets),
                           5000, &r, st);
  if (reply != NULL) {
    *reply = r;
  } else {
    tf_wire_msg_free(r);
  }
  return rc;
}

/* The k-th ret of a RunGraph reply (new reference; NULL when nil). */
static tf_tensor *ret_of(const tf_wire_msg *r, uint32_t k) {
  tf_status st;
  tf_status_init(&st);
  const msgpack_object_array *a = tf_wire_get_array(&r->body, "rets", "reply", &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  ck_assert_uint_gt(a->size, k);
  if (a->ptr[k].type == MSGPACK_OBJECT_NIL) return NULL;
  tf_tensor *t = NULL;
  ck_assert_msg(tf_wire_unpack_tensor(r, &a->ptr[k], &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

/* TensorPush of t (NULL: dead) under key for step. */
static tf_code push(wk_fixture *f, uint64_t step, const char *key, tf_tensor *t,
                    tf_status *st) {
  tf_wire_writer *w = rt2_req(TF_M_TENSOR_PUSH, 0, step, 5000);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 3);
  tf_wire_pack_str(pk, "key");
  tf_wire_pack_str(pk, key);
  tf_wire_pack_str(pk, "dead");
  if (t == NULL) {
    msgpack_pack_true(pk);
  } else {
    msgpack_pack_false(pk);
  }
  tf_wire_pack_str(pk, "tensor");
  if (t == NULL) {
    msgpack_pack_nil(pk);
  } else {
    tf_wire_pack_tensor(w, t);
  }
  return rt2_call(f->c, w, NULL, st);
}

static tf_code simple_call(wk_fixture *f, int method, uint64_t step, tf_status *st) {
  return rt2_call(f->c, rt2_req(method, 0, step, 5000), NULL, st);
}

static tf_code abort_step(wk_fixture *f, uint64_t step, tf_code code, const char *msg,
                          tf_status *st) {
  tf_wire_writer *w = rt2_req(TF_M_ABORT_STEP, 0, step, 5000);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 2);
  tf_wire_pack_str(pk, "code");
  msgpack_pack_int(pk, code);
  tf_wire_pack_str(pk, "msg");
  tf_wire_pack_str(pk, msg);
  return rt2_call(f->c, w, NULL, st);
}

/* tf_worker_start refuses the master's task (it would bind its address). */
START_TEST(master_job_refused) {
  tf_cluster_spec *spec = rt2_spec(1, 3000, 5000);
  tf_worker *w = (tf_worker *)1;
  tf_status st;
  ck_assert_int_eq(tf_worker_start(spec, "master", 0, &w, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(w);
  ck_assert_msg(strstr(st.msg, "job 'master' in t2.yaml is the master's task, not a worker "
                               "job (worker jobs: ps, worker)") != NULL, "%s", st.msg);
  tf_cluster_spec_free(spec);
}
END_TEST

/* GetStatus to f's worker, decoded. */
static void get_status_typed(wk_fixture *f, tf_msg_get_status_reply *out) {
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_msg(rt2_call(f->c, rt2_req(TF_M_GET_STATUS, 0, 0, 5000), &r, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_msg(tf_msg_get_status_reply_decode(r, out, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
}

START_TEST(get_status_fields) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_msg(rt2_call(f.c, rt2_req(TF_M_GET_STATUS, 0, 0, 5000), &r, &st) == TF_OK,
                "%s", st.msg);
  char *job = NULL, *dname = NULL;
  int64_t task = -1, running = -1, graphs = -1;
  uint64_t inc = 0;
  ck_assert(tf_wire_get_str(&r->body, "job", "s", &job, &st) == TF_OK);
  ck_assert(tf_wire_get_i64(&r->body, "task", "s", &task, &st) == TF_OK);
  ck_assert(tf_wire_get_u64(&r->body, "incarnation", "s", &inc, &st) == TF_OK);
  ck_assert(tf_wire_get_i64(&r->body, "running_steps", "s", &running, &st) == TF_OK);
  ck_assert(tf_wire_get_i64(&r->body, "graphs", "s", &graphs, &st) == TF_OK);
  ck_assert_str_eq(job, "worker");
  ck_assert_int_eq(task, 1);
  ck_assert(inc != 0 && inc == tf_worker_incarnation(f.w));
  ck_assert_int_eq(running, 0);
  ck_assert_int_eq(graphs, 0);
  const msgpack_object_array *devs = tf_wire_get_array(&r->body, "devices", "s", &st);
  ck_assert_ptr_nonnull(devs);
  ck_assert_uint_eq(devs->size, 1);
  ck_assert(tf_wire_get_str(&devs->ptr[0], "name", "s", &dname, &st) == TF_OK);
  ck_assert_str_eq(dname, "/job:worker/replica:0/task:1/device:CPU:0");
  ck_assert_str_eq(dname, tf_worker_device_name(f.w));
  uint64_t dinc = 0;
  ck_assert(tf_wire_get_u64(&devs->ptr[0], "incarnation", "s", &dinc, &st) == TF_OK);
  ck_assert(dinc == inc);
  free(job);
  free(dname);
  tf_wire_msg_free(r);
  /* Traffic and memory: the process's bytes (this request received, the
   * first reply sent before the second is built) and the CPU allocator's. */
  tf_msg_get_status_reply s1, s2;
  get_status_typed(&f, &s1);
  get_status_typed(&f, &s2);
  ck_assert_uint_eq(s1.has & TF_MSG_STATUS_USAGE, TF_MSG_STATUS_USAGE);
  ck_assert_uint_eq(s2.has, TF_MSG_STATUS_WORKER | TF_MSG_STATUS_USAGE);
  ck_assert(s1.bytes_received > 0 && s1.bytes_sent > 0);
  ck_assert(s2.bytes_received > s1.bytes_received && s2.bytes_sent > s1.bytes_sent);
  tf_allocator_stats cpu = tf_allocator_get_stats(tf_cpu_allocator());
  ck_assert(s2.mem_in_use >= 0 && s2.mem_peak >= s2.mem_in_use);
  ck_assert(s2.mem_peak <= cpu.peak_bytes && s2.mem_peak >= s1.mem_peak);
  tf_msg_get_status_reply_fini(&s1);
  tf_msg_get_status_reply_fini(&s2);
  /* A master method is refused, naming it. */
  ck_assert_int_eq(simple_call(&f, TF_M_LIST_DEVICES, 0, &st), TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, "ListDevices") != NULL, "%s", st.msg);
  fx_stop(&f);
}
END_TEST

START_TEST(register_run_deregister) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_graph *g = add_neg_graph();
  uint64_t h = rt2_register(f.c, g);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 1);
  double av[3] = {1, 2.5, -3}, bv[3] = {0.5, -1, 4};
  tf_tensor *args[2] = {tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), av),
                        tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), bv)};
  tf_status st;
  for (uint64_t step = 1; step <= 2; step++) {
    tf_wire_msg *r = NULL;
    ck_assert_msg(run_graph(&f, h, step, args, 2, 2, &r, &st) == TF_OK, "%s", st.msg);
    tf_tensor *sum = ret_of(r, 0), *neg = ret_of(r, 1);
    tt_assert_shape(sum, 1, 3);
    tt_assert_shape(neg, 1, 3);
    const float *s = sum->data, *n = neg->data;
    for (int i = 0; i < 3; i++) {
      ck_assert(s[i] == (float)av[i] + (float)bv[i]);
      ck_assert(n[i] == -(float)av[i]);
    }
    tf_tensor_unref(sum);
    tf_tensor_unref(neg);
    tf_wire_msg_free(r);
  }
  ck_assert_int_ge(rt2_status_int(f.c, "steps_run"), 2);
  /* Too few args: the executor's error, not a crash. */
  ck_assert_int_ne(run_graph(&f, h, 3, args, 1, 2, NULL, &st), TF_OK);
  /* Deregistered: RunGraph is ABORTED, naming the handle as not found. */
  tf_wire_writer *w = rt2_req(TF_M_DEREGISTER_GRAPH, 0, 0, 5000);
  msgpack_pack_map(tf_wire_body(w), 1);
  tf_wire_pack_str(tf_wire_body(w), "handle");
  msgpack_pack_uint64(tf_wire_body(w), h);
  ck_assert_msg(rt2_call(f.c, w, NULL, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 0);
  ck_assert_int_eq(run_graph(&f, h, 4, args, 2, 2, NULL, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "not found") != NULL, "%s", st.msg);
  tt_free(args, 2);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

START_TEST(unknown_handle_aborted) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_status st;
  ck_assert_int_eq(run_graph(&f, 0xabcdef, 1, NULL, 0, 0, NULL, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "Graph handle is not found") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "0000000000abcdef") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1") != NULL, "%s", st.msg);
  /* RunGraph without a handle field: INVALID_ARGUMENT naming it. */
  tf_wire_writer *w = rt2_req(TF_M_RUN_GRAPH, 0, 1, 5000);
  msgpack_pack_map(tf_wire_body(w), 0);
  ck_assert_int_eq(rt2_call(f.c, w, NULL, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "handle") != NULL, "%s", st.msg);
  fx_stop(&f);
}
END_TEST

static tf_code register_body(wk_fixture *f, int kind, tf_status *st) {
  tf_wire_writer *w = rt2_req(TF_M_REGISTER_GRAPH, 0, 0, 5000);
  msgpack_packer *pk = tf_wire_body(w);
  if (kind == 0) { /* no 'graph' */
    msgpack_pack_map(pk, 1);
    tf_wire_pack_str(pk, "grph");
    msgpack_pack_nil(pk);
  } else if (kind == 1) { /* 'graph' as a string */
    msgpack_pack_map(pk, 1);
    tf_wire_pack_str(pk, "graph");
    tf_wire_pack_str(pk, "not bytes");
  } else if (kind == 2) { /* bytes that are not a graph */
    msgpack_pack_map(pk, 1);
    tf_wire_pack_str(pk, "graph");
    msgpack_pack_bin(pk, 5);
    msgpack_pack_bin_body(pk, "\xc1\x01\x02\x03\x04", 5);
  } else { /* a well-formed graph whose node has an unknown op */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer gp;
    msgpack_packer_init(&gp, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&gp, 2);
    tf_wire_pack_str(&gp, "version");
    msgpack_pack_int(&gp, 1);
    tf_wire_pack_str(&gp, "nodes");
    msgpack_pack_array(&gp, 1);
    msgpack_pack_map(&gp, 5);
    tf_wire_pack_str(&gp, "name");
    tf_wire_pack_str(&gp, "mystery");
    tf_wire_pack_str(&gp, "op");
    tf_wire_pack_str(&gp, "NoSuchOpXyz");
    tf_wire_pack_str(&gp, "device");
    tf_wire_pack_str(&gp, "");
    tf_wire_pack_str(&gp, "inputs");
    msgpack_pack_array(&gp, 0);
    tf_wire_pack_str(&gp, "attrs");
    msgpack_pack_map(&gp, 0);
    msgpack_pack_map(pk, 1);
    tf_wire_pack_str(pk, "graph");
    msgpack_pack_bin(pk, sb.size);
    msgpack_pack_bin_body(pk, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
  }
  return rt2_call(f->c, w, NULL, st);
}

START_TEST(register_bad_graph) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_status st;
  ck_assert_int_eq(register_body(&f, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'graph'") != NULL, "%s", st.msg);
  ck_assert_int_eq(register_body(&f, 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'graph'") != NULL && strstr(st.msg, "binary"), "%s", st.msg);
  ck_assert_int_eq(register_body(&f, 2, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "RegisterGraph") != NULL, "%s", st.msg);
  ck_assert_int_eq(register_body(&f, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "NoSuchOpXyz") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "RegisterGraph") != NULL, "%s", st.msg);
  ck_assert_int_eq(rt2_status_int(f.c, "graphs"), 0);
  fx_stop(&f);
}
END_TEST

/* A step blocked in a _Recv for a key nobody sends ends with AbortStep's
 * code and reason; its table is gone after CleanupGraph. */
START_TEST(abort_step_ends_blocked_recv) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "never");
  uint64_t h = rt2_register(f.c, g);
  rt2_async a;
  rt2_async_start(&a, f.c, rt2_run_graph_msg(h, 41, 10000, NULL, 0, 1), 10000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 2000), 1);
  ck_assert(!rt2_async_wait(&a, 100)); /* still blocked */
  ck_assert_int_eq(rt2_status_int(f.c, "running_steps"), 1);
  tf_status st;
  int64_t t0 = tf__now_ns();
  ck_assert_msg(abort_step(&f, 41, TF_RESOURCE_EXHAUSTED, "peer ran out of memory", &st) == TF_OK,
                "%s", st.msg);
  ck_assert(rt2_async_wait(&a, 3000));
  ck_assert_msg(rt2_secs_since(t0) < 2.0, "took %.2f s", rt2_secs_since(t0));
  ck_assert_int_eq(a.st.code, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(a.st.msg, "peer ran out of memory") != NULL, "%s", a.st.msg);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 0, 2000), 0);
  ck_assert_int_eq(simple_call(&f, TF_M_CLEANUP_GRAPH, 41, &st), TF_OK);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 0);
  rt2_async_fini(&a);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

/* A push may arrive before the step's RunGraph: the table is made on
 * arrival and the _Recv finds the value. */
START_TEST(push_before_run) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "early");
  uint64_t h = rt2_register(f.c, g);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "early", 0, 0);
  double v[2] = {3.25, -8};
  tf_tensor *t = tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), v);
  tf_status st;
  ck_assert_msg(push(&f, 55, key, t, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 1);
  ck_assert_int_gt(rt2_status_int(f.c, "buffered_bytes"), 0);
  /* The same key twice in one step is refused. */
  ck_assert_int_eq(push(&f, 55, key, t, &st), TF_INTERNAL);
  ck_assert_msg(strstr(st.msg, "duplicate") != NULL, "%s", st.msg);
  tf_wire_msg *r = NULL;
  ck_assert_msg(run_graph(&f, h, 55, NULL, 0, 1, &r, &st) == TF_OK, "%s", st.msg);
  tf_tensor *got = ret_of(r, 0);
  ck_assert(tf_tensor_equal(got, t));
  tf_tensor_unref(got);
  tf_wire_msg_free(r);
  /* A dead push makes a dead (nil) ret. */
  ck_assert_msg(push(&f, 56, key, NULL, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(run_graph(&f, h, 56, NULL, 0, 1, &r, &st) == TF_OK, "%s", st.msg);
  ck_assert_ptr_null(ret_of(r, 0));
  tf_wire_msg_free(r);
  ck_assert_int_eq(simple_call(&f, TF_M_CLEANUP_GRAPH, 55, &st), TF_OK);
  ck_assert_int_eq(simple_call(&f, TF_M_CLEANUP_GRAPH, 56, &st), TF_OK);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 0);
  tf_tensor_unref(t);
  free(key);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

START_TEST(push_refused) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_status st;
  tf_tensor *t = tf_tensor_scalar_f32(1.5f);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "x", 0, 0);
  /* After CleanupGraph of the step: ABORTED, not a resurrected table. */
  ck_assert_int_eq(simple_call(&f, TF_M_CLEANUP_GRAPH, 90, &st), TF_OK);
  ck_assert_int_eq(push(&f, 90, key, t, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "90") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 0);
  /* After AbortStep: ABORTED with the reason. */
  ck_assert_int_eq(abort_step(&f, 91, TF_CANCELLED, "client gave up", &st), TF_OK);
  ck_assert_int_eq(push(&f, 91, key, t, &st), TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "client gave up") != NULL, "%s", st.msg);
  /* A key whose destination is another task. */
  char *other = tf_rdv_key_make(PS_DEV, 7, "/job:worker/replica:0/task:0/device:CPU:0",
                                "x", 0, 0);
  ck_assert_int_eq(push(&f, 92, other, t, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "not on this task") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1") != NULL, "%s", st.msg);
  /* A malformed key, a missing tensor. */
  ck_assert_int_eq(push(&f, 92, "no;semicolons", t, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "no;semicolons") != NULL, "%s", st.msg);
  tf_wire_writer *w = rt2_req(TF_M_TENSOR_PUSH, 0, 93, 5000);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 2);
  tf_wire_pack_str(pk, "key");
  tf_wire_pack_str(pk, key);
  tf_wire_pack_str(pk, "dead");
  msgpack_pack_false(pk);
  ck_assert_int_eq(rt2_call(f.c, w, NULL, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'tensor'") != NULL, "%s", st.msg);
  free(other);
  free(key);
  tf_tensor_unref(t);
  fx_stop(&f);
}
END_TEST

/* A TensorPush whose descriptor puts the payload at offset 3 of the
 * payload area (inside it, but not 64-byte aligned as every sender
 * writes): INVALID_ARGUMENT naming the key and the offset, nothing
 * delivered. A 64-byte "pad" tensor gives the message a payload area. */
START_TEST(push_misaligned_payload_refused) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_status st;
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "x", 0, 0);
  tf_tensor *pad = tf_tensor_vec_f32(16, (float[16]){0});
  for (int k = 0; k < 2; k++) {
    uint64_t off = k == 0 ? 3 : 0;
    tf_wire_writer *w = rt2_req(TF_M_TENSOR_PUSH, 0, 94, 5000);
    msgpack_packer *pk = tf_wire_body(w);
    tf__mp_map body, desc;
    tf__mp_map_begin(&body, pk, 4);
    tf__mp_map_key(&body, "pad");
    tf_wire_pack_tensor(w, pad);
    tf__mp_map_key(&body, "key");
    tf_wire_pack_str(pk, key);
    tf__mp_map_key(&body, "dead");
    msgpack_pack_false(pk);
    tf__mp_map_key(&body, "tensor");
    tf__mp_map_begin(&desc, pk, 4);
    tf__mp_map_key(&desc, "dt");
    msgpack_pack_int(pk, TF_UINT8);
    tf__mp_map_key(&desc, "shape");
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 4);
    tf__mp_map_key(&desc, "off");
    msgpack_pack_uint64(pk, off);
    tf__mp_map_key(&desc, "len");
    msgpack_pack_uint64(pk, 4);
    tf__mp_map_end(&desc);
    tf__mp_map_end(&body);
    tf_code rc = rt2_call(f.c, w, NULL, &st);
    if (k == 0) {
      ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(st.msg, "payload 'off' 3 is not a multiple of 64") != NULL, "%s",
                    st.msg);
      ck_assert_msg(strstr(st.msg, key) != NULL, "%s", st.msg);
      ck_assert_int_eq(tf_worker_live_step_tables(f.w), 0);
    } else { /* the same push, aligned, is delivered */
      ck_assert_msg(rc == TF_OK, "%s", st.msg);
      ck_assert_int_eq(tf_worker_live_step_tables(f.w), 1);
    }
  }
  ck_assert_int_eq(simple_call(&f, TF_M_CLEANUP_GRAPH, 94, &st), TF_OK);
  tf_tensor_unref(pad);
  free(key);
  fx_stop(&f);
}
END_TEST

/* ret0 = a @ a @ ... (n MatMuls of the fed a by itself, chained). */
static tf_graph *matmul_chain_graph(int n) {
  tf_graph *g = tf_graph_new();
  tf_node *a = arg_node(g, "a", 0);
  tf_output cur = rt_out(a);
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "mm%d", i);
    tf_output in[] = {cur, rt_out(a)};
    cur = rt_out(rt_node(g, "MatMul", name, NULL, in, 2, NULL, 0));
  }
  ret_node(g, "r0", cur, 0);
  return g;
}

/* RunGraph of handle with the header deadline dl_ms (the RPC itself may
 * take much longer); *ms gets the call's time. */
static tf_code run_graph_dl(wk_fixture *f, uint64_t handle, uint64_t step, tf_tensor *arg,
                            int64_t dl_ms, int64_t *ms, tf_status *st) {
  tf_wire_msg *r = NULL;
  tf_status_init(st);
  int64_t t0 = tf__now_ns();
  tf_code rc = tf_rpc_call(f->c, rt2_run_graph_msg(handle, step, dl_ms, &arg, 1, 1),
                           dl_ms + 20000, &r, st);
  *ms = (tf__now_ns() - t0) / 1000000;
  tf_wire_msg_free(r);
  return rc;
}

/* The worker enforces the step deadline in the header on a small graph of
 * slow kernels (40 MatMuls of 1024x1024): it answers DEADLINE_EXCEEDED
 * about one MatMul past the deadline, not after the whole chain (about
 * 10 deadlines), and the step is over on the worker when it answers. */
START_TEST(run_graph_deadline_small_slow_graph) {
  wk_fixture f;
  fx_start(&f, 5000);
  /* Under ThreadSanitizer the 4 MiB transfers dominate the one-MatMul
   * step used to size the deadline (OpenBLAS is not instrumented), so the
   * chain is longer there to stay well past it. */
#ifdef __SANITIZE_THREAD__
  const int chain = 200;
#else
  const int chain = 40;
#endif
  tf_graph *g1 = matmul_chain_graph(1), *g40 = matmul_chain_graph(chain);
  uint64_t h1 = rt2_register(f.c, g1), h40 = rt2_register(f.c, g40);
  /* Entries uniform in +-sqrt(3)/32 (variance 1/1024): the chain's powers
   * keep their scale, so no MatMul slows down on subnormal floats. */
  tf_tensor *a = tt_rand(TF_FLOAT32, tf_shape_of(2, 1024, 1024), -0.0541, 0.0541);
  tf_status st;
  int64_t t1 = INT64_MAX, ms;
  for (uint64_t step = 1; step <= 3; step++) { /* one MatMul + transfers */
    ck_assert_msg(run_graph_dl(&f, h1, step, a, 30000, &ms, &st) == TF_OK, "%s", st.msg);
    t1 = ms < t1 ? ms : t1;
  }
  t1 = t1 > 1 ? t1 : 1;
  int64_t deadline = t1 * 4 > 100 ? t1 * 4 : 100;
  tf_code rc = run_graph_dl(&f, h40, 4, a, deadline, &ms, &st);
  ck_assert_msg(rc == TF_DEADLINE_EXCEEDED, "%s after %lld ms (deadline %lld ms, one "
                "MatMul %lld ms)", rc == TF_OK ? "OK" : st.msg, (long long)ms,
                (long long)deadline, (long long)t1);
  ck_assert_msg(strstr(st.msg, "deadline") != NULL, "%s", st.msg);
  ck_assert_msg(ms < deadline + 3 * t1 + 500, "took %lld ms (deadline %lld ms, one "
                "MatMul %lld ms)", (long long)ms, (long long)deadline, (long long)t1);
  ck_assert_int_eq(tf_worker_running_steps(f.w), 0);
  tf_tensor_unref(a);
  tf_graph_free(g1);
  tf_graph_free(g40);
  fx_stop(&f);
}
END_TEST

START_TEST(drain_refuses_run_graph) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_graph *g = add_neg_graph();
  uint64_t h = rt2_register(f.c, g);
  int64_t t0 = tf__now_ns();
  tf_worker_drain(f.w, 2000); /* nothing running: returns at once */
  ck_assert_msg(rt2_secs_since(t0) < 1.0, "took %.2f s", rt2_secs_since(t0));
  tf_tensor *args[2] = {tf_tensor_scalar_f32(1), tf_tensor_scalar_f32(2)};
  tf_status st;
  ck_assert_int_eq(run_graph(&f, h, 1, args, 2, 2, NULL, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "shutting down") != NULL, "%s", st.msg);
  /* GetStatus still answers. */
  ck_assert_int_eq(rt2_status_int(f.c, "task"), 1);
  tt_free(args, 2);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

/* Draining aborts a step that does not end within the timeout. */
START_TEST(drain_aborts_blocked_step) {
  wk_fixture f;
  fx_start(&f, 5000);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "never");
  uint64_t h = rt2_register(f.c, g);
  rt2_async a;
  rt2_async_start(&a, f.c, rt2_run_graph_msg(h, 7, 10000, NULL, 0, 1), 10000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 2000), 1);
  int64_t t0 = tf__now_ns();
  tf_worker_drain(f.w, 200);
  ck_assert(rt2_async_wait(&a, 3000));
  ck_assert_msg(rt2_secs_since(t0) < 2.0, "took %.2f s", rt2_secs_since(t0));
  ck_assert_int_eq(a.st.code, TF_UNAVAILABLE);
  ck_assert_msg(strstr(a.st.msg, "shutting down") != NULL, "%s", a.st.msg);
  rt2_async_fini(&a);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

/* An orphaned table (a push whose step never runs) expires after
 * step_ttl_ms of inactivity; later pushes for it are refused. */
START_TEST(tick_expires_orphan_table) {
  wk_fixture f;
  fx_start(&f, 300);
  tf_status st;
  tf_tensor *t = tf_tensor_scalar_f32(2);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "orphan", 0, 0);
  ck_assert_msg(push(&f, 12, key, t, &st) == TF_OK, "%s", st.msg);
  tf_worker_tick(f.w);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 1);
  ck_assert_int_eq(rt2_status_int(f.c, "step_tables"), 1);
  rt2_sleep_ms(450);
  tf_worker_tick(f.w);
  ck_assert_int_eq(tf_worker_live_step_tables(f.w), 0);
  ck_assert_int_eq(rt2_status_int(f.c, "buffered_bytes"), 0);
  char *key2 = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "late", 0, 0);
  ck_assert_int_eq(push(&f, 12, key2, t, &st), TF_ABORTED);
  free(key2);
  free(key);
  tf_tensor_unref(t);
  fx_stop(&f);
}
END_TEST

/* A step that is running (its RunGraph holds the table, waiting in a
 * _Recv for a slow upstream partition) is not orphaned: the TTL sweep must
 * leave it alone, and the value that arrives later completes it (the
 * sweep skips tables a RunGraph or a waiter still holds). */
START_TEST(tick_spares_running_step) {
  wk_fixture f;
  fx_start(&f, 300);
  tf_graph *g = recv_graph(tf_worker_device_name(f.w), "slow");
  uint64_t h = rt2_register(f.c, g);
  rt2_async a;
  rt2_async_start(&a, f.c, rt2_run_graph_msg(h, 61, 10000, NULL, 0, 1), 10000);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, f.w, 1, 2000), 1);
  for (int i = 0; i < 8; i++) { /* 800 ms: over twice the TTL */
    rt2_sleep_ms(100);
    tf_worker_tick(f.w);
  }
  bool ended = rt2_async_wait(&a, 10);
  ck_assert_msg(!ended, "the running step was expired by the TTL sweep: %d %s",
                a.st.code, a.st.msg);
  tf_status st;
  tf_tensor *t = tf_tensor_scalar_f32(4);
  char *key = tf_rdv_key_make(PS_DEV, 7, tf_worker_device_name(f.w), "slow", 0, 0);
  ck_assert_msg(push(&f, 61, key, t, &st) == TF_OK, "%s", st.msg);
  ck_assert(rt2_async_wait(&a, 3000));
  ck_assert_msg(a.st.code == TF_OK, "%s", a.st.msg);
  free(key);
  tf_tensor_unref(t);
  rt2_async_fini(&a);
  tf_graph_free(g);
  fx_stop(&f);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("worker");
  TCase *tc = tcase_create("service");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, master_job_refused);
  tcase_add_test(tc, get_status_fields);
  tcase_add_test(tc, register_run_deregister);
  tcase_add_test(tc, unknown_handle_aborted);
  tcase_add_test(tc, register_bad_graph);
  tcase_add_test(tc, abort_step_ends_blocked_recv);
  tcase_add_test(tc, push_before_run);
  tcase_add_test(tc, push_refused);
  tcase_add_test(tc, push_misaligned_payload_refused);
  tcase_add_test(tc, run_graph_deadline_small_slow_graph);
  tcase_add_test(tc, drain_refuses_run_graph);
  tcase_add_test(tc, drain_aborts_blocked_step);
  tcase_add_test(tc, tick_expires_orphan_table);
  tcase_add_test(tc, tick_spares_running_step);
  suite_add_tcase(s, tc);
  return s;
}
