/* rt_testlib2.h: more helpers for the runtime service tests, on top of
 * rt_testlib.h: specs with chosen timeouts, hand-built worker and master
 * requests over a raw RPC client, a master ticker thread, remote
 * sessions and bounded polling. Every wait here has a deadline. */
#ifndef TF_TEST_RT_TESTLIB2_H
#define TF_TEST_RT_TESTLIB2_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/transport/rpc.h"
#include "test/unit/runtime/rt_testlib.h"
#include "tf/serialize.h"

/* A spec with a master, one ps and n_workers workers on free loopback
 * ports and the given timeouts (milliseconds). */
static inline tf_cluster_spec *rt2_spec(int n_workers, int64_t rpc_ms,
                                        int64_t step_ttl_ms) {
  char yaml[2048];
  int n = snprintf(yaml, sizeof yaml,
                   "cluster: t2\njobs:\n  master: [127.0.0.1:%d]\n"
                   "  ps: [127.0.0.1:%d]\n  worker: [",
                   rt_free_port(), rt_free_port());
  for (int i = 0; i < n_workers; i++) {
    n += snprintf(yaml + n, sizeof yaml - (size_t)n, "%s127.0.0.1:%d",
                  i ? ", " : "", rt_free_port());
  }
  snprintf(yaml + n, sizeof yaml - (size_t)n,
           "]\ntimeouts: {registration_ms: 3000, heartbeat_ms: 100, "
           "down_after_ms: 2000, rpc_ms: %lld, step_ttl_ms: %lld}\n"
           "threads: {inter_op: 2, rpc: 8}\nlog_level: err\n",
           (long long)rpc_ms, (long long)step_ttl_ms);
  tf_cluster_spec *spec = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_parse(yaml, strlen(yaml), "t2.yaml", &spec, &st) == TF_OK,
                "%s", st.msg);
  tf_log_set_level(spec->log_level);
  return spec;
}

/* A raw client for a task of spec. */
static inline tf_rpc_client *rt2_client(const tf_cluster_spec *spec, const char *job,
                                        int task) {
  char *url = tf_cluster_task_url(spec, job, task);
  ck_assert_ptr_nonnull(url);
  tf_rpc_client *c = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_client_new(url, 0, &c, &st) == TF_OK, "%s", st.msg);
  free(url);
  return c;
}

/* A request writer: pack the body on tf_wire_body(w) (or nothing: nil). */
static inline tf_wire_writer *rt2_req(int method, uint64_t session, uint64_t step,
                                      int64_t deadline_ms) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id(), .session = session,
                      .step_id = step, .deadline_ms = deadline_ms};
  return tf_wire_writer_new(&h);
}

static inline nng_msg *rt2_finish(tf_wire_writer *w) {
  nng_msg *m = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_wire_finish(w, &m, &st) == TF_OK, "%s", st.msg);
  return m;
}

/* Finishes w and calls (timeout 5 s); *reply (may be NULL: freed) on OK. */
static inline tf_code rt2_call(tf_rpc_client *c, tf_wire_writer *w, tf_wire_msg **reply,
                               tf_status *st) {
  tf_wire_msg *r = NULL;
  tf_status_init(st);
  tf_code rc = tf_rpc_call(c, rt2_finish(w), 5000, &r, st);
  if (reply != NULL) {
    *reply = r;
  } else {
    tf_wire_msg_free(r);
  }
  return rc;
}

/* An integer field of a task's GetStatus answer. */
static inline int64_t rt2_status_int(tf_rpc_client *c, const char *key) {
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_msg(rt2_call(c, rt2_req(TF_M_GET_STATUS, 0, 0, 5000), &r, &st) == TF_OK,
                "%s", st.msg);
  int64_t v = -1;
  ck_assert_msg(tf_wire_get_i64(&r->body, key, "GetStatus", &v, &st) == TF_OK, "%s",
                st.msg);
  tf_wire_msg_free(r);
  return v;
}

/* RegisterGraph of g; returns the handle. */
static inline uint64_t rt2_register(tf_rpc_client *c, const tf_graph *g) {
  void *buf = NULL;
  size_t len = 0;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_graph_to_msgpack(g, &buf, &len, &st) == TF_OK, "%s", st.msg);
  tf_wire_writer *w = rt2_req(TF_M_REGISTER_GRAPH, 0, 0, 5000);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 1);
  tf_wire_pack_str(pk, "graph");
  msgpack_pack_bin(pk, len);
  msgpack_pack_bin_body(pk, buf, len);
  free(buf);
  tf_wire_msg *r = NULL;
  ck_assert_msg(rt2_call(c, w, &r, &st) == TF_OK, "%s", st.msg);
  uint64_t h = 0;
  ck_assert_msg(tf_wire_get_u64(&r->body, "handle", "reply", &h, &st) == TF_OK, "%s",
                st.msg);
  tf_wire_msg_free(r);
  return h;
}

/* A RunGraph request message. */
static inline nng_msg *rt2_run_graph_msg(uint64_t handle, uint64_t step,
                                         int64_t deadline_ms, tf_tensor *const *args,
                                         int n_args, int n_rets) {
  tf_wire_writer *w = rt2_req(TF_M_RUN_GRAPH, 0, step, deadline_ms);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 4);
  tf_wire_pack_str(pk, "handle");
  msgpack_pack_uint64(pk, handle);
  tf_wire_pack_str(pk, "args");
  msgpack_pack_array(pk, (size_t)n_args);
  for (int i = 0; i < n_args; i++) tf_wire_pack_tensor(w, args[i]);
  tf_wire_pack_str(pk, "n_rets");
  msgpack_pack_int(pk, n_rets);
  tf_wire_pack_str(pk, "trace");
  msgpack_pack_false(pk);
  return rt2_finish(w);
}

/* The result of an asynchronous call, waited for with a deadline. */
typedef struct rt2_async {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  tf_status st;
  tf_wire_msg *reply;
} rt2_async;

static inline void rt2_async_cb(void *arg, const tf_status *st, tf_wire_msg *reply) {
  rt2_async *a = arg;
  pthread_mutex_lock(&a->mu);
  a->st = *st;
  a->reply = reply;
  a->done = true;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

static inline void rt2_async_start(rt2_async *a, tf_rpc_client *c, nng_msg *m,
                                   int64_t timeout_ms) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  tf_rpc_call_async(c, m, timeout_ms, rt2_async_cb, a);
}

/* Waits up to ms for the call; true if it finished. */
static inline bool rt2_async_wait(rt2_async *a, int64_t ms) {
  int64_t until = tf__now_ns() + ms * 1000000;
  pthread_mutex_lock(&a->mu);
  while (!a->done && tf__now_ns() < until) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10 * 1000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&a->cv, &a->mu, &ts);
  }
  bool done = a->done;
  pthread_mutex_unlock(&a->mu);
  return done;
}

static inline void rt2_async_fini(rt2_async *a) {
  tf_wire_msg_free(a->reply);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
}

static inline void rt2_sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static inline double rt2_secs_since(int64_t t0_ns) {
  return (double)(tf__now_ns() - t0_ns) / 1e9;
}

/* Polls until f(arg) returns want or ms passed; returns the last value. */
static inline int rt2_poll_int(int (*f)(tf_worker *), tf_worker *w, int want,
                               int64_t ms) {
  int64_t until = tf__now_ns() + ms * 1000000;
  int v = f(w);
  while (v != want && tf__now_ns() < until) {
    rt2_sleep_ms(5);
    v = f(w);
  }
  return v;
}

/* Calls tf_master_tick every 50 ms on a thread of its own. */
typedef struct rt2_ticker {
  tf_master *m;
  _Atomic bool on;
  pthread_t th;
} rt2_ticker;

static inline void *rt2_tick_loop(void *arg) {
  rt2_ticker *t = arg;
  while (atomic_load(&t->on)) {
    tf_master_tick(t->m);
    rt2_sleep_ms(50);
  }
  return NULL;
}

static inline void rt2_ticker_start(rt2_ticker *t, tf_master *m) {
  t->m = m;
  atomic_store(&t->on, true);
  ck_assert_int_eq(pthread_create(&t->th, NULL, rt2_tick_loop, t), 0);
}

static inline void rt2_ticker_stop(rt2_ticker *t) {
  atomic_store(&t->on, false);
  pthread_join(t->th, NULL);
}

/* A remote session on the cluster's master. */
static inline tf_session *rt2_remote(const rt_cluster *c, tf_graph *g) {
  tf_status st;
  tf_status_init(&st);
  tf_session_options o = {.target = c->master_url};
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* A float32 Placeholder requesting dev. */
static inline tf_node *rt2_placeholder(tf_graph *g, const char *name, const char *dev,
                                       tf_dtype dt) {
  tf_attr_kv kv[] = {{"dtype", tf_attr_type_v(dt)}};
  return rt_node(g, "Placeholder", name, dev, NULL, 0, kv, 1);
}

/* Sum over the cluster's workers and ps of GetStatus 'graphs'. */
static inline int64_t rt2_graphs(const rt_cluster *c) {
  int64_t n = 0;
  for (int i = -1; i < c->n_workers; i++) {
    tf_rpc_client *cl = rt2_client(c->spec, i < 0 ? "ps" : "worker", i < 0 ? 0 : i);
    n += rt2_status_int(cl, "graphs");
    tf_rpc_client_free(cl);
  }
  return n;
}

#endif
