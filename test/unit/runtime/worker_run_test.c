/* worker_run_test.c: RunGraph and TensorPush between two real workers: a
 * partition pair made by tf_partition_graph exchanges a tensor by push
 * with both RunGraphs running at once; a dead value (untaken Switch
 * output) crosses and arrives dead (its _Retval comes back nil) while the
 * live one arrives; a 64 MB tensor crosses intact, byte for byte. */
#include "lib/runtime/partition.h"
#include "test/unit/runtime/rt_testlib2.h"

typedef struct pair {
  tf_cluster_spec *spec;
  tf_worker *w[2];
  tf_rpc_client *c[2];
} pair;

static void pair_start(pair *p) {
  p->spec = rt2_spec(2, 10000, 5000);
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

/* Runs the two partitions of one step at once; fails the test unless both
 * succeed; reply[i] for partition i (on worker i). */
static void run_both(pair *p, const uint64_t *handles, uint64_t step,
                     tf_tensor *const *args0, int n_args0, const int *n_rets,
                     tf_wire_msg **reply) {
  rt2_async a[2];
  rt2_async_start(&a[1], p->c[1], rt2_run_graph_msg(handles[1], step, 20000, NULL, 0,
                                                    n_rets[1]), 20000);
  rt2_async_start(&a[0], p->c[0], rt2_run_graph_msg(handles[0], step, 20000, args0,
                                                    n_args0, n_rets[0]), 20000);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(rt2_async_wait(&a[i], 20000), "partition %d did not answer", i);
    ck_assert_msg(a[i].st.code == TF_OK, "partition %d: %s", i, a[i].st.msg);
    reply[i] = a[i].reply;
    a[i].reply = NULL;
    rt2_async_fini(&a[i]);
  }
}

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

static tf_node *arg_node(tf_graph *g, const char *name, int index, tf_dtype dt) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(dt)}, {"index", tf_attr_int(index)}};
  return rt_node(g, "_Arg", name, NULL, NULL, 0, kv, 2);
}

static void ret_node(tf_graph *g, const char *name, tf_output in, int index, tf_dtype dt) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(dt)}, {"index", tf_attr_int(index)}};
  rt_node(g, "_Retval", name, NULL, &in, 1, kv, 2);
}

static void send_node(tf_graph *g, const char *name, tf_output in, tf_dtype dt,
                      const char *tensor, const pair *p) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(dt)},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(tf_worker_device_name(p->w[0]))},
                     {"send_device_incarnation",
                      tf_attr_int((int64_t)tf_worker_incarnation(p->w[0]))},
                     {"recv_device", tf_attr_string(tf_worker_device_name(p->w[1]))}};
  rt_node(g, "_Send", name, NULL, &in, 1, kv, 5);
}

static tf_node *recv_node(tf_graph *g, const char *name, tf_dtype dt, const char *tensor,
                          const pair *p) {
  tf_attr_kv kv[] = {{"tensor_type", tf_attr_type_v(dt)},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(tf_worker_device_name(p->w[0]))},
                     {"send_device_incarnation",
                      tf_attr_int((int64_t)tf_worker_incarnation(p->w[0]))},
                     {"recv_device", tf_attr_string(tf_worker_device_name(p->w[1]))}};
  return rt_node(g, "_Recv", name, NULL, NULL, 0, kv, 5);
}

/* x (_Arg) -> y = Neg(x) on worker 0; z = Mul(y, y) -> _Retval on worker 1,
 * partitioned by tf_partition_graph. */
START_TEST(partition_pair_exchanges_by_push) {
  pair p;
  pair_start(&p);
  tf_graph *g = tf_graph_new();
  tf_node *x = arg_node(g, "x", 0, TF_FLOAT32);
  tf_output xin[] = {rt_out(x)};
  tf_node *y = rt_node(g, "Neg", "y", NULL, xin, 1, NULL, 0);
  tf_output yy[] = {rt_out(y), rt_out(y)};
  tf_node *z = rt_node(g, "Mul", "z", NULL, yy, 2, NULL, 0);
  ret_node(g, "ret", rt_out(z), 0, TF_FLOAT32);
  int assign[4] = {0, 0, 1, 1};
  tf_place_device devs[2] = {{tf_worker_device_name(p.w[0]), "CPU"},
                             {tf_worker_device_name(p.w[1]), "CPU"}};
  uint64_t incs[2] = {tf_worker_incarnation(p.w[0]), tf_worker_incarnation(p.w[1])};
  tf_partition *parts = NULL;
  int np = 0;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_partition_graph(g, assign, devs, incs, 2, &parts, &np, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(np, 2);
  ck_assert_int_eq(parts[0].n_args, 1);
  ck_assert_int_eq(parts[1].n_rets, 1);
  uint64_t h[2];
  int n_rets[2];
  for (int i = 0; i < 2; i++) {
    h[i] = rt2_register(p.c[i], parts[i].g);
    n_rets[i] = parts[i].n_rets;
  }
  tf_tensor *xv = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 5), -4, 4);
  for (uint64_t step = 100; step < 103; step++) {
    tf_wire_msg *r[2];
    run_both(&p, h, step, &xv, 1, n_rets, r);
    tf_tensor *got = ret_of(r[1], 0);
    tt_assert_shape(got, 2, 3, 5);
    const float *gv = got->data, *xd = xv->data;
    for (int64_t i = 0; i < xv->n; i++) ck_assert(gv[i] == (-xd[i]) * (-xd[i]));
    tf_tensor_unref(got);
    tf_wire_msg_free(r[0]);
    tf_wire_msg_free(r[1]);
  }
  tf_tensor_unref(xv);
  tf_partitions_free(parts, np);
  tf_graph_free(g);
  pair_stop(&p);
}
END_TEST

/* Worker 0: Switch(x, false): output 1 (untaken) and output 0 (taken) are
 * sent. Worker 1: the dead one through Identity to ret 0 (nil), the live
 * one through Neg to ret 1. */
START_TEST(dead_value_arrives_dead) {
  pair p;
  pair_start(&p);
  tf_graph *g0 = tf_graph_new();
  tf_node *x = arg_node(g0, "x", 0, TF_FLOAT32);
  tf_node *pred = rt_const(g0, "pred", NULL, tf_tensor_scalar_bool(false));
  tf_output sin[] = {rt_out(x), rt_out(pred)};
  tf_node *sw = rt_node(g0, "Switch", "sw", NULL, sin, 2, NULL, 0);
  send_node(g0, "send_dead", (tf_output){sw, 1}, TF_FLOAT32, "edge_sw_1", &p);
  send_node(g0, "send_live", (tf_output){sw, 0}, TF_FLOAT32, "edge_sw_0", &p);
  tf_graph *g1 = tf_graph_new();
  tf_output d[] = {rt_out(recv_node(g1, "recv_dead", TF_FLOAT32, "edge_sw_1", &p))};
  tf_node *id = rt_node(g1, "Identity", "id", NULL, d, 1, NULL, 0);
  ret_node(g1, "ret_dead", rt_out(id), 0, TF_FLOAT32);
  tf_output l[] = {rt_out(recv_node(g1, "recv_live", TF_FLOAT32, "edge_sw_0", &p))};
  tf_node *neg = rt_node(g1, "Neg", "neg", NULL, l, 1, NULL, 0);
  ret_node(g1, "ret_live", rt_out(neg), 1, TF_FLOAT32);
  uint64_t h[2] = {rt2_register(p.c[0], g0), rt2_register(p.c[1], g1)};
  int n_rets[2] = {0, 2};
  double v[3] = {1.5, -2, 0.25};
  tf_tensor *xv = tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), v);
  tf_wire_msg *r[2];
  run_both(&p, h, 7, &xv, 1, n_rets, r);
  ck_assert_ptr_null(ret_of(r[1], 0));
  tf_tensor *live = ret_of(r[1], 1);
  ck_assert_ptr_nonnull(live);
  const float *lv = live->data;
  for (int i = 0; i < 3; i++) ck_assert(lv[i] == -(float)v[i]);
  tf_tensor_unref(live);
  tf_wire_msg_free(r[0]);
  tf_wire_msg_free(r[1]);
  tf_tensor_unref(xv);
  tf_graph_free(g0);
  tf_graph_free(g1);
  pair_stop(&p);
}
END_TEST

/* 64 MB of int32 (a pattern touching every byte) through _Send/_Recv. */
START_TEST(large_tensor_crosses_intact) {
  pair p;
  pair_start(&p);
  tf_graph *g0 = tf_graph_new();
  tf_node *x = arg_node(g0, "x", 0, TF_INT32);
  send_node(g0, "send", rt_out(x), TF_INT32, "big", &p);
  tf_graph *g1 = tf_graph_new();
  tf_node *rv = recv_node(g1, "recv", TF_INT32, "big", &p);
  ret_node(g1, "ret", rt_out(rv), 0, TF_INT32);
  uint64_t h[2] = {rt2_register(p.c[0], g0), rt2_register(p.c[1], g1)};
  int n_rets[2] = {0, 1};
  tf_tensor *big = NULL;
  tf_status st;
  tf_status_init(&st);
  tf_shape shape = tf_shape_of(2, 4096, 4096);
  ck_assert(tf_tensor_new(TF_INT32, &shape, &big, &st) == TF_OK);
  ck_assert_uint_eq(big->nbytes, 64u << 20);
  uint32_t *bv = big->data;
  uint32_t s = (uint32_t)tt_rand_u64() | 1u;
  for (int64_t i = 0; i < big->n; i++) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    bv[i] = s;
  }
  tf_wire_msg *r[2];
  int64_t t0 = tf__now_ns();
  run_both(&p, h, 9, &big, 1, n_rets, r);
  tf_tensor *got = ret_of(r[1], 0);
  ck_assert_ptr_nonnull(got);
  ck_assert_int_eq(got->dtype, TF_INT32);
  tt_assert_shape(got, 2, 4096, 4096);
  ck_assert_uint_eq(got->nbytes, big->nbytes);
  ck_assert(memcmp(got->data, big->data, big->nbytes) == 0);
  ck_assert_msg(rt2_secs_since(t0) < 10.0, "took %.2f s", rt2_secs_since(t0));
  tf_tensor_unref(got);
  tf_wire_msg_free(r[0]);
  tf_wire_msg_free(r[1]);
  tf_tensor_unref(big);
  tf_graph_free(g0);
  tf_graph_free(g1);
  pair_stop(&p);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("worker_run");
  TCase *tc = tcase_create("push");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, partition_pair_exchanges_by_push);
  tcase_add_test(tc, dead_value_arrives_dead);
  tcase_add_test(tc, large_tensor_crosses_intact);
  suite_add_tcase(s, tc);
  return s;
}
