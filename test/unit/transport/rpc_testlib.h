/* rpc_testlib.h: helpers shared by the RPC server and client tests: a test
 * handler whose behaviour the method picks (echo tensors, sleep, fail,
 * return nothing, big reply), a server with a task identity, request
 * builders, and a free loopback port.
 * Static inline so each test includes what it uses. */
#ifndef TF_TEST_RPC_TESTLIB_H
#define TF_TEST_RPC_TESTLIB_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/transport/rpc.h"
#include "test/unit/testutil.h"

/* Methods of the test handler. */
#define RT_ECHO TF_M_GET_STATUS      /* body [descs...] -> same tensors */
#define RT_SLEEP TF_M_RUN_GRAPH      /* body {ms} -> {slept: ms} */
#define RT_FAIL TF_M_ABORT_STEP      /* body {code, msg} -> error status */
#define RT_NOTHING TF_M_RESET        /* NULL with an OK status */
#define RT_BIG TF_M_LIST_DEVICES     /* body {bytes} -> bin of that size */

static atomic_int rt_calls; /* handler invocations */

static inline void rt_sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static inline int64_t rt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline tf_wire_writer *rt_reply_writer(const tf_wire_msg *req) {
  tf_wire_header h = req->h;
  h.is_reply = true;
  h.code = TF_OK;
  h.error = "";
  return tf_wire_writer_new(&h);
}

static inline nng_msg *rt_echo(const tf_wire_msg *req, tf_status *st) {
  if (req->body.type != MSGPACK_OBJECT_ARRAY) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "echo: body is not an array");
    return NULL;
  }
  tf_wire_writer *w = rt_reply_writer(req);
  const msgpack_object_array *a = &req->body.via.array;
  msgpack_pack_array(tf_wire_body(w), a->size);
  for (uint32_t i = 0; i < a->size; i++) {
    tf_tensor *t;
    if (tf_wire_unpack_tensor(req, &a->ptr[i], &t, st) != TF_OK) {
      tf_wire_writer_free(w);
      return NULL;
    }
    tf_wire_pack_tensor(w, t);
    tf_tensor_unref(t);
  }
  nng_msg *m = NULL;
  tf_wire_finish(w, &m, st);
  return m;
}

static inline nng_msg *rt_handler(void *arg, const tf_wire_msg *req,
                                  tf_status *st) {
  atomic_fetch_add(&rt_calls, 1);
  int64_t v = 0;
  nng_msg *m = NULL;
  tf_wire_writer *w;
  switch (req->h.method) {
  case RT_ECHO:
    return rt_echo(req, st);
  case RT_SLEEP:
    tf_wire_get_i64(&req->body, "ms", "sleep", &v, NULL);
    rt_sleep_ms(v);
    w = rt_reply_writer(req);
    msgpack_pack_map(tf_wire_body(w), 1);
    tf_wire_pack_str(tf_wire_body(w), "slept");
    msgpack_pack_int64(tf_wire_body(w), v);
    tf_wire_finish(w, &m, st);
    return m;
  case RT_FAIL: {
    char *msg = NULL;
    tf_wire_get_i64(&req->body, "code", "fail", &v, NULL);
    tf_wire_get_str(&req->body, "msg", "fail", &msg, NULL);
    tf_status_set(st, (tf_code)v, "%s", msg != NULL ? msg : "");
    free(msg);
    return NULL;
  }
  case RT_BIG: {
    tf_wire_get_i64(&req->body, "bytes", "big", &v, NULL);
    char *buf = calloc(1, (size_t)v + 1);
    w = rt_reply_writer(req);
    msgpack_pack_bin_with_body(tf_wire_body(w), buf, (size_t)v);
    free(buf);
    tf_wire_finish(w, &m, st);
    return m;
  }
  default:
    return NULL;
  }
}

/* A request for method with request id; body: a map of one int field, or
 * nil when key is NULL. */
static inline nng_msg *rt_request(int method, uint64_t id, const char *key,
                                  int64_t v) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = id};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  if (key != NULL) {
    msgpack_pack_map(tf_wire_body(w), 1);
    tf_wire_pack_str(tf_wire_body(w), key);
    msgpack_pack_int64(tf_wire_body(w), v);
  }
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  return m;
}

/* An echo request carrying tensors t[0..n). */
static inline nng_msg *rt_echo_request(tf_tensor **t, int n, uint64_t id) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = RT_ECHO,
                      .request_id = id};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_pack_array(tf_wire_body(w), (size_t)n);
  for (int i = 0; i < n; i++) {
    tf_wire_pack_tensor(w, t[i]);
  }
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  return m;
}

/* Tensor i of an echo reply (the caller unrefs it). */
static inline tf_tensor *rt_reply_tensor(const tf_wire_msg *r, uint32_t i) {
  ck_assert(r->body.type == MSGPACK_OBJECT_ARRAY && i < r->body.via.array.size);
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_wire_unpack_tensor(r, &r->body.via.array.ptr[i], &t,
                                      &st) == TF_OK,
                "%s", st.msg);
  return t;
}

/* A loopback TCP port nobody listens on, distinct within this process. */
static inline int rt_free_port(void) { return tt_free_port(); }

/* Starts the test handler's server on url. */
static inline tf_rpc_server *rt_server(const char *url, int threads,
                                       int64_t max_bytes) {
  tf_rpc_server *s;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start_sync(url, threads, max_bytes, rt_handler, NULL,
                                    &s, &st) == TF_OK,
                "%s", st.msg);
  return s;
}

static inline tf_rpc_client *rt_client(const char *url, int64_t max_bytes) {
  tf_rpc_client *c;
  tf_status st;
  ck_assert_msg(tf_rpc_client_new(url, max_bytes, &c, &st) == TF_OK, "%s",
                st.msg);
  return c;
}

/* An asynchronous handler that answers every request at once with an OK
 * reply whose body is nil. */
static inline void rt_nil_handler(void *arg, struct tf_rpc_call *c) {
  atomic_fetch_add(&rt_calls, 1);
  nng_msg *m = NULL;
  tf_status st;
  ck_assert(tf_wire_finish(tf_rpc_reply_writer(c), &m, &st) == TF_OK);
  tf_rpc_reply(c, m);
}

/* A server that is task `task` (incarnation inc) and answers with nil. */
static inline tf_rpc_server *rt_named_server(const char *url, const char *task,
                                             uint64_t inc) {
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.self_task = task;
  o.self_incarnation = inc;
  tf_rpc_server *s;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start(&o, rt_nil_handler, NULL, &s, &st) ==
                    TF_OK,
                "%s", st.msg);
  return s;
}

/* A request for method carrying identity (from, to) in its header. */
static inline nng_msg *rt_addressed(int method, const char *from,
                                    uint64_t from_inc, const char *to,
                                    uint64_t to_inc) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .from = from, .from_inc = from_inc, .to = to,
                      .to_inc = to_inc};
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK);
  return m;
}

/* "tcp://127.0.0.1:<port of s>". */
static inline void rt_tcp_url(const tf_rpc_server *s, char *buf, size_t n) {
  ck_assert_int_gt(tf_rpc_server_port(s), 0);
  snprintf(buf, n, "tcp://127.0.0.1:%d", tf_rpc_server_port(s));
}

#endif
