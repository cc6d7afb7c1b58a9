/* Tests for the RPC server over inproc:// and tcp://127.0.0.1:0: tensor
 * echo (every byte compared), 8 client threads at once, handler errors
 * crossing with code and message intact, deadlines against a sleeping
 * handler, retry detection by request id (finished, running, reused for
 * another method, reply too large to retain, forgotten after 1024 newer
 * ids), malformed requests from a raw NNG socket, the server's identity
 * (a request for another task or incarnation refused, every reply naming
 * the server), garbage bytes on a plain TCP connection, the receive size
 * limit, start errors, and stop. Every wait is bounded by a call timeout. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "test/unit/transport/rpc_testlib.h"

static tf_wire_msg *call_ok(tf_rpc_client *c, nng_msg *req) {
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_rpc_call(c, req, 3000, &r, &st) == TF_OK, "%s", st.msg);
  ck_assert(r != NULL && r->h.is_reply);
  return r;
}

static void echo_round_trip(const char *url) {
  tf_rpc_server *s = rt_server(url, 2, 0);
  char tcp[64];
  if (strncmp(url, "tcp", 3) == 0) {
    rt_tcp_url(s, tcp, sizeof tcp);
    url = tcp;
  } else {
    ck_assert_int_eq(tf_rpc_server_port(s), 0);
  }
  tf_rpc_client *c = rt_client(url, 0);
  ck_assert_str_eq(tf_rpc_client_url(c), url);
  tf_tensor *t[] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 300, 7), -1, 1),
                    tf_tensor_scalar_i64(-3),
                    tt_rand(TF_INT32, tf_shape_of(1, 0), 0, 1)};
  tf_wire_msg *r = call_ok(c, rt_echo_request(t, 3, 0));
  ck_assert_int_eq(r->h.method, RT_ECHO);
  for (uint32_t i = 0; i < 3; i++) {
    tf_tensor *b = rt_reply_tensor(r, i);
    ck_assert(tf_tensor_equal(b, t[i]));
    tf_tensor_unref(b);
  }
  tf_wire_msg_free(r);
  ck_assert_int_eq(tf_rpc_server_served(s), 1);
  ck_assert_int_eq(tf_rpc_server_rejected(s), 0);
  tt_free(t, 3);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}

START_TEST(test_echo_inproc) { echo_round_trip("inproc://rpc_echo"); }
END_TEST

START_TEST(test_echo_tcp_port_zero) { echo_round_trip("tcp://127.0.0.1:0"); }
END_TEST

/* 6 MiB each way: big enough for the huge-page hint paths. */
START_TEST(test_large_tensor_tcp) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 1, 8 << 20);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 8 << 20);
  tf_tensor *t = tt_rand(TF_INT32, tf_shape_of(2, 1536, 1024), -1000, 1000);
  tf_wire_msg *r = call_ok(c, rt_echo_request(&t, 1, 0));
  tf_tensor *b = rt_reply_tensor(r, 0);
  ck_assert(tf_tensor_equal(b, t));
  tf_tensor_unref(b);
  tf_tensor_unref(t);
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct par_arg {
  tf_rpc_client *c;
  int k;
  int ok;
} par_arg;

static void *par_main(void *p) {
  par_arg *a = p;
  for (int i = 0; i < 40; i++) {
    int64_t v = a->k * 1000 + i;
    tf_tensor *t = tf_tensor_vec_i64(1, &v);
    tf_wire_msg *r;
    tf_status st;
    if (tf_rpc_call(a->c, rt_echo_request(&t, 1, tf_rpc_new_request_id()),
                    3000, &r, &st) == TF_OK) {
      tf_tensor *b = rt_reply_tensor(r, 0);
      a->ok += ((int64_t *)b->data)[0] == v;
      tf_tensor_unref(b);
      tf_wire_msg_free(r);
    }
    tf_tensor_unref(t);
  }
  return NULL;
}

START_TEST(test_eight_threads_concurrently) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 4, 0);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  pthread_t th[8];
  par_arg a[8];
  for (int k = 0; k < 8; k++) {
    a[k] = (par_arg){c, k, 0};
    pthread_create(&th[k], NULL, par_main, &a[k]);
  }
  for (int k = 0; k < 8; k++) {
    pthread_join(th[k], NULL);
    ck_assert_int_eq(a[k].ok, 40);
  }
  ck_assert_int_eq(tf_rpc_server_served(s), 320);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_handler_errors_cross_intact) {
  tf_rpc_server *s = rt_server("inproc://rpc_err", 1, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_err", 0);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = RT_FAIL};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_pack_map(tf_wire_body(w), 2);
  tf_wire_pack_str(tf_wire_body(w), "code");
  msgpack_pack_int(tf_wire_body(w), TF_NOT_FOUND);
  tf_wire_pack_str(tf_wire_body(w), "msg");
  tf_wire_pack_str(tf_wire_body(w), "graph handle 42 not registered");
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  tf_wire_msg *r = (tf_wire_msg *)1;
  ck_assert_int_eq(tf_rpc_call(c, m, 3000, &r, &st), TF_NOT_FOUND);
  ck_assert(r == NULL);
  ck_assert_str_eq(st.msg, "graph handle 42 not registered");
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_NOTHING, 0, NULL, 0), 3000,
                               &r, &st),
                   TF_INTERNAL);
  ck_assert_str_eq(st.msg, "the Reset handler returned no reply");
  /* An echo of a non-array body: the handler's INVALID_ARGUMENT. */
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_ECHO, 0, "x", 1), 3000, &r,
                               &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "echo: body is not an array");
  ck_assert_int_eq(tf_rpc_server_served(s), 3);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_deadline_against_sleeping_handler) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 1, 0);
  char url[64], want[128];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  tf_wire_msg *r = (tf_wire_msg *)1;
  tf_status st;
  int64_t t0 = rt_now_ms();
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_SLEEP, 0, "ms", 500), 100, &r,
                               &st),
                   TF_DEADLINE_EXCEEDED);
  int64_t el = rt_now_ms() - t0;
  ck_assert_msg(el >= 95 && el < 450, "took %lld ms", (long long)el);
  ck_assert(r == NULL);
  snprintf(want, sizeof want, "RunGraph to %s: no reply within 100 ms", url);
  ck_assert_str_eq(st.msg, want);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s); /* waits for the sleeping handler */
  ck_assert_int_ge(rt_now_ms() - t0, 480);
}
END_TEST

START_TEST(test_same_request_id_runs_once) {
  tf_rpc_server *s = rt_server("inproc://rpc_dedup", 2, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_dedup", 0);
  uint64_t id = tf_rpc_new_request_id();
  tf_wire_msg *a = call_ok(c, rt_request(RT_SLEEP, id, "ms", 1));
  tf_wire_msg *b = call_ok(c, rt_request(RT_SLEEP, id, "ms", 1));
  ck_assert_int_eq(atomic_load(&rt_calls), 1);
  ck_assert_int_eq(nng_msg_len(a->msg), nng_msg_len(b->msg));
  ck_assert(memcmp(nng_msg_body(a->msg), nng_msg_body(b->msg),
                   nng_msg_len(a->msg)) == 0);
  ck_assert(b->h.request_id == id);
  tf_wire_msg_free(a);
  tf_wire_msg_free(b);
  /* Reused for another method. */
  tf_wire_msg *r;
  tf_status st;
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_ECHO, id, NULL, 0), 3000, &r,
                               &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "reused: it was RunGraph, now GetStatus"),
                "%s", st.msg);
  ck_assert_int_eq(atomic_load(&rt_calls), 1);
  /* Id 0: no retry detection. */
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, 0, "ms", 1)));
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, 0, "ms", 1)));
  ck_assert_int_eq(atomic_load(&rt_calls), 3);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct async_box {
  atomic_int done;
  tf_status st;
  tf_wire_msg *reply;
} async_box;

static void box_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  async_box *b = arg;
  b->st = *st;
  b->reply = reply;
  atomic_fetch_add(&b->done, 1);
}

START_TEST(test_retry_of_running_request_waits) {
  tf_rpc_server *s = rt_server("inproc://rpc_wait", 2, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_wait", 0);
  uint64_t id = tf_rpc_new_request_id();
  async_box first = {0};
  tf_rpc_call_async(c, rt_request(RT_SLEEP, id, "ms", 300), 3000, box_done,
                    &first);
  rt_sleep_ms(50);
  int64_t t0 = rt_now_ms();
  tf_wire_msg *b = call_ok(c, rt_request(RT_SLEEP, id, "ms", 300));
  ck_assert_int_lt(rt_now_ms() - t0, 1000);
  ck_assert_int_eq(atomic_load(&rt_calls), 1);
  const msgpack_object *slept = tf_wire_get(&b->body, "slept");
  ck_assert(slept != NULL && slept->via.i64 == 300);
  tf_wire_msg_free(b);
  for (int i = 0; i < 300 && atomic_load(&first.done) == 0; i++) {
    rt_sleep_ms(10);
  }
  ck_assert_int_eq(atomic_load(&first.done), 1);
  ck_assert_msg(first.st.code == TF_OK, "%s", first.st.msg);
  tf_wire_msg_free(first.reply);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_retry_waits_only_up_to_its_deadline) {
  tf_rpc_server *s = rt_server("inproc://rpc_wait2", 2, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_wait2", 0);
  uint64_t id = tf_rpc_new_request_id();
  async_box first = {0};
  tf_rpc_call_async(c, rt_request(RT_SLEEP, id, "ms", 600), 3000, box_done,
                    &first);
  rt_sleep_ms(50);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = RT_SLEEP,
                      .request_id = id, .deadline_ms = 100};
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK);
  tf_wire_msg *r;
  ck_assert_int_eq(tf_rpc_call(c, m, 2000, &r, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "is still running after 100 ms"), "%s",
                st.msg);
  for (int i = 0; i < 300 && atomic_load(&first.done) == 0; i++) {
    rt_sleep_ms(10);
  }
  ck_assert(first.st.code == TF_OK && first.reply != NULL);
  tf_wire_msg_free(first.reply);
  ck_assert_int_eq(atomic_load(&rt_calls), 1);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_large_reply_not_retained) {
  tf_rpc_server *s = rt_server("inproc://rpc_big", 1, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_big", 0);
  uint64_t id = tf_rpc_new_request_id();
  tf_wire_msg *r = call_ok(c, rt_request(RT_BIG, id, "bytes", 2 << 20));
  ck_assert_int_eq(r->body.type, MSGPACK_OBJECT_BIN);
  ck_assert_int_eq(r->body.via.bin.size, 2 << 20);
  tf_wire_msg_free(r);
  tf_status st;
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_BIG, id, "bytes", 2 << 20),
                               3000, &r, &st),
                   TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "too large to retain"), "%s", st.msg);
  /* Just under the limit: retained. */
  id = tf_rpc_new_request_id();
  tf_wire_msg_free(call_ok(c, rt_request(RT_BIG, id, "bytes", 1000000)));
  tf_wire_msg_free(call_ok(c, rt_request(RT_BIG, id, "bytes", 1000000)));
  ck_assert_int_eq(atomic_load(&rt_calls), 2);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

/* Replies retained for retries hold at most 64 MiB: 100 finished requests
 * with 1000000-byte replies (each under the 1 MiB per-reply limit) keep
 * the newest 67; a retry of an older one is refused, not run again, and
 * one of the newest still gets its reply. Before the cap the table kept
 * up to 1024 such replies (1 GiB) whatever the server's limits. */
START_TEST(test_retained_replies_capped_in_all) {
  tf_rpc_server *s = rt_server("inproc://rpc_retained", 1, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_retained", 0);
  enum { N = 100, BYTES = 1000000 };
  uint64_t ids[N];
  for (int i = 0; i < N; i++) {
    ids[i] = tf_rpc_new_request_id();
    tf_wire_msg_free(call_ok(c, rt_request(RT_BIG, ids[i], "bytes", BYTES)));
  }
  tf_rpc_server_stats stats;
  tf_rpc_server_get_stats(s, &stats);
  ck_assert_msg(stats.retained_bytes <= (64u << 20) && stats.retained_bytes > (60u << 20),
                "retained %llu bytes", (unsigned long long)stats.retained_bytes);
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_BIG, ids[0], "bytes", BYTES), 3000, &r, &st),
                   TF_ABORTED);
  ck_assert_msg(strstr(st.msg, "is no longer retained for a retry (the replies retained "
                               "hold at most 64 MiB)"), "%s", st.msg);
  ck_assert_int_eq(atomic_load(&rt_calls), N); /* refused, not run again */
  r = call_ok(c, rt_request(RT_BIG, ids[N - 1], "bytes", BYTES));
  ck_assert_int_eq(r->body.via.bin.size, BYTES);
  tf_wire_msg_free(r);
  ck_assert_int_eq(atomic_load(&rt_calls), N);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_old_ids_are_forgotten_after_1024) {
  tf_rpc_server *s = rt_server("inproc://rpc_evict", 1, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_evict", 0);
  uint64_t first = tf_rpc_new_request_id();
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, first, "ms", 0)));
  uint64_t last = 0;
  for (int i = 0; i < 1024; i++) {
    last = tf_rpc_new_request_id();
    tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, last, "ms", 0)));
  }
  ck_assert_int_eq(atomic_load(&rt_calls), 1025);
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, last, "ms", 0)));
  ck_assert_int_eq(atomic_load(&rt_calls), 1025); /* still remembered */
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, first, "ms", 0)));
  ck_assert_int_eq(atomic_load(&rt_calls), 1026); /* forgotten: runs again */
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

/* Sends raw bytes as one message from a plain NNG req socket. */
static tf_wire_msg *raw_call(const char *url, const void *p, size_t n) {
  nng_socket sock;
  ck_assert(nng_req0_open(&sock) == 0);
  nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 3000);
  nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, 3000);
  ck_assert(nng_dial(sock, url, NULL, 0) == 0);
  nng_msg *m;
  ck_assert(nng_msg_alloc(&m, n) == 0);
  memcpy(nng_msg_body(m), p, n);
  ck_assert(nng_sendmsg(sock, m, 0) == 0);
  ck_assert(nng_recvmsg(sock, &m, 0) == 0);
  nng_close(sock);
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_wire_parse(m, &r, &st) == TF_OK, "%s", st.msg);
  return r;
}

START_TEST(test_malformed_request_gets_invalid_argument) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 2, 0);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_wire_msg *r = raw_call(url, "GET / HTTP/1.0\r\n\r\n", 18);
  ck_assert(r->h.is_reply);
  ck_assert_int_eq(r->h.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(r->h.error, "malformed request to tcp://127.0.0.1:"),
                "%s", r->h.error);
  ck_assert_msg(strstr(r->h.error, "bad magic"), "%s", r->h.error);
  tf_wire_msg_free(r);
  r = raw_call(url, "TFW\x01\xff\0\0\0", 8);
  ck_assert_int_eq(r->h.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(r->h.error, "overruns"), "%s", r->h.error);
  tf_wire_msg_free(r);
  /* A reply sent as a request. */
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = 3};
  tf_status bad;
  tf_status_set(&bad, TF_ABORTED, "x");
  nng_msg *m;
  ck_assert(tf_wire_error_reply(&h, &bad, &m, NULL) == TF_OK);
  r = raw_call(url, nng_msg_body(m), nng_msg_len(m));
  nng_msg_free(m);
  ck_assert_msg(strstr(r->h.error, "a RunGraph reply sent as a request"),
                "%s", r->h.error);
  tf_wire_msg_free(r);
  ck_assert_int_eq(tf_rpc_server_rejected(s), 3);
  ck_assert_int_eq(atomic_load(&rt_calls), 0);
  tf_rpc_client *c = rt_client(url, 0);
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, 0, "ms", 0)));
  ck_assert_int_eq(tf_rpc_server_served(s), 1);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

#define TASK1 "/job:worker/replica:0/task:1"
#define TASK2 "/job:worker/replica:0/task:2"
#define MASTER "/job:master/replica:0/task:0"

START_TEST(test_identity_checked_and_replies_name_the_server) {
  tf_rpc_server *s = rt_named_server("inproc://rpc_identity", TASK1, 0xabc);
  tf_rpc_client *c = rt_client("inproc://rpc_identity", 0);
  tf_wire_msg *r;
  tf_status st;
  ck_assert_int_eq(tf_rpc_call(c, rt_addressed(RT_ECHO, MASTER, 7, TASK2, 0),
                               3000, &r, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_str_eq(st.msg, "wrong task at address: inproc://rpc_identity is "
                           TASK1 ", the request was for " TASK2);
  ck_assert_int_eq(tf_rpc_call(c, rt_addressed(RT_ECHO, MASTER, 7, TASK1,
                                               0xdef),
                               3000, &r, &st),
                   TF_ABORTED);
  ck_assert_str_eq(st.msg, "the task restarted: " TASK1 " at "
                           "inproc://rpc_identity is incarnation "
                           "0000000000000abc, the request was for "
                           "incarnation 0000000000000def");
  ck_assert_int_eq(atomic_load(&rt_calls), 0);
  ck_assert_int_eq(tf_rpc_server_rejected(s), 2);
  /* Right task and incarnation, or none named: served, and the reply says
   * who answered and to whom. */
  ck_assert(tf_rpc_call(c, rt_addressed(RT_ECHO, MASTER, 7, TASK1, 0xabc),
                        3000, &r, &st) == TF_OK);
  ck_assert_str_eq(r->h.from, TASK1);
  ck_assert(r->h.from_inc == 0xabc);
  ck_assert_str_eq(r->h.to, MASTER);
  ck_assert(r->h.to_inc == 7);
  tf_wire_msg_free(r);
  ck_assert(tf_rpc_call(c, rt_addressed(RT_ECHO, "", 0, "", 0), 3000, &r,
                        &st) == TF_OK);
  ck_assert_str_eq(r->h.from, TASK1);
  ck_assert(r->h.from_inc == 0xabc);
  tf_wire_msg_free(r);
  ck_assert_int_eq(atomic_load(&rt_calls), 2);
  tf_rpc_client_free(c);
  /* Error replies come from the server too, malformed requests included. */
  nng_msg *m = rt_addressed(RT_ECHO, MASTER, 7, TASK2, 0);
  r = raw_call("inproc://rpc_identity", nng_msg_body(m), nng_msg_len(m));
  nng_msg_free(m);
  ck_assert_int_eq(r->h.code, TF_FAILED_PRECONDITION);
  ck_assert_str_eq(r->h.from, TASK1);
  ck_assert_str_eq(r->h.to, MASTER);
  tf_wire_msg_free(r);
  r = raw_call("inproc://rpc_identity", "junk", 4);
  ck_assert_int_eq(r->h.code, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(r->h.from, TASK1);
  tf_wire_msg_free(r);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_garbage_tcp_bytes_drop_the_connection) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 1, 0);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)tf_rpc_server_port(s)),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  static const char junk[] = "\x16\x03\x01\x02\x00garbage that is not SP";
  ck_assert(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
  /* The server closes: read reaches EOF (or a reset) within 3 s. */
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char buf[64];
  ssize_t got = 1;
  for (int i = 0; i < 10 && got > 0; i++) {
    ck_assert_int_eq(poll(&p, 1, 3000), 1);
    got = read(fd, buf, sizeof buf); /* NNG's own header may come first */
  }
  ck_assert(got == 0 || (got < 0 && errno == ECONNRESET));
  close(fd);
  tf_rpc_client *c = rt_client(url, 0);
  tf_wire_msg_free(call_ok(c, rt_request(RT_SLEEP, 0, "ms", 0)));
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_receive_size_limit) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 1, 64 << 10);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  tf_tensor *t = tt_rand(TF_UINT8, tf_shape_of(1, 100 << 10), 0, 255);
  tf_wire_msg *r;
  tf_status st;
  /* NNG drops the connection: the call fails (UNAVAILABLE "Connection
   * reset", or a timeout should the reset come late). */
  tf_code code = tf_rpc_call(c, rt_echo_request(&t, 1, 0), 300, &r, &st);
  ck_assert_msg(code == TF_UNAVAILABLE || code == TF_DEADLINE_EXCEEDED, "%s",
                st.msg);
  ck_assert_msg(strstr(st.msg, url) != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  ck_assert_int_eq(atomic_load(&rt_calls), 0);
  t = tt_rand(TF_UINT8, tf_shape_of(1, 60 << 10), 0, 255);
  r = call_ok(c, rt_echo_request(&t, 1, 0));
  tf_tensor *b = rt_reply_tensor(r, 0);
  ck_assert(tf_tensor_equal(b, t));
  tf_tensor_unref(b);
  tf_tensor_unref(t);
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_start_errors) {
  tf_rpc_server *s = (tf_rpc_server *)1;
  tf_status st;
  ck_assert_int_eq(tf_rpc_server_start_sync("bogus://x", 1, 0, rt_handler, NULL,
                                       &s, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(s == NULL);
  ck_assert_msg(strstr(st.msg, "bogus://x"), "%s", st.msg);
  /* tls+tcp without a TLS configuration (none given, no process default) */
  ck_assert_int_eq(tf_rpc_server_start_sync("tls+tcp://127.0.0.1:0", 1, 0,
                                       rt_handler, NULL, &s, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "no TLS configuration"), "%s", st.msg);
  ck_assert_int_eq(tf_rpc_server_start_sync("inproc://x", 0, 0, rt_handler, NULL,
                                       &s, &st),
                   TF_INVALID_ARGUMENT);
  tf_rpc_server *a = rt_server("tcp://127.0.0.1:0", 1, 0);
  char url[64];
  rt_tcp_url(a, url, sizeof url);
  ck_assert_int_eq(tf_rpc_server_start_sync(url, 1, 0, rt_handler, NULL, &s, &st),
                   TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "cannot listen on ") && strstr(st.msg, url),
                "%s", st.msg);
  tf_rpc_server_stop(a);
  tf_rpc_server_stop(NULL);
}
END_TEST

START_TEST(test_stop_idle_server_is_prompt) {
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < 5; i++) {
    tf_rpc_server_stop(rt_server("tcp://127.0.0.1:0", 8, 0));
  }
  ck_assert_int_lt(rt_now_ms() - t0, 1000);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rpc");
  TCase *tc = tcase_create("rpc");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_echo_inproc);
  tcase_add_test(tc, test_echo_tcp_port_zero);
  tcase_add_test(tc, test_large_tensor_tcp);
  tcase_add_test(tc, test_eight_threads_concurrently);
  tcase_add_test(tc, test_handler_errors_cross_intact);
  tcase_add_test(tc, test_deadline_against_sleeping_handler);
  tcase_add_test(tc, test_same_request_id_runs_once);
  tcase_add_test(tc, test_retained_replies_capped_in_all);
  tcase_add_test(tc, test_retry_of_running_request_waits);
  tcase_add_test(tc, test_retry_waits_only_up_to_its_deadline);
  tcase_add_test(tc, test_large_reply_not_retained);
  tcase_add_test(tc, test_old_ids_are_forgotten_after_1024);
  tcase_add_test(tc, test_malformed_request_gets_invalid_argument);
  tcase_add_test(tc, test_identity_checked_and_replies_name_the_server);
  tcase_add_test(tc, test_garbage_tcp_bytes_drop_the_connection);
  tcase_add_test(tc, test_receive_size_limit);
  tcase_add_test(tc, test_start_errors);
  tcase_add_test(tc, test_stop_idle_server_is_prompt);
  suite_add_tcase(s, tc);
  return s;
}
