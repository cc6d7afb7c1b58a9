/* Tests for the server's asynchronous contract: a handler that returns
 * without replying and a reply from another thread later; 256 deferred
 * calls at once served by 2 handler threads (no thread is held); retries
 * of a deferred request waiting without a thread and all answered by the
 * original's reply; a handler that finishes a call twice panics; one that
 * never finishes is logged by stop, which returns after stop_wait_ms and
 * frees the server when the call is finished late; stop with calls in
 * flight waits for their owners and their replies still arrive; stop
 * wakes waiting retries; methods the server runs inline are handled on
 * NNG's thread, marked responsive, and the others on a handler thread,
 * deferred or not. Every wait is bounded. */
#include <pthread.h>
#include <signal.h>
#include <syslog.h>

#include "lib/transport/rpc_server.h"
#include "test/unit/transport/rpc_testlib.h"

/* GetStatus is answered at once; every other method is deferred: the call
 * is queued here and the handler returns. */
typedef struct pending {
  pthread_mutex_t mu;
  struct tf_rpc_call *calls[512];
  int n;
  atomic_int handled;  /* handler runs that returned */
  bool twice;          /* answer at once, then again (a bug) */
} pending;

static pending P;

/* Answers c with {v: 2 * request's v}. */
static void answer(struct tf_rpc_call *c) {
  const tf_wire_msg *req = tf_rpc_call_request(c);
  int64_t v = 0;
  tf_wire_get_i64(&req->body, "v", "test", &v, NULL);
  tf_wire_writer *w = tf_rpc_reply_writer(c);
  msgpack_pack_map(tf_wire_body(w), 1);
  tf_wire_pack_str(tf_wire_body(w), "v");
  msgpack_pack_int64(tf_wire_body(w), 2 * v);
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  tf_rpc_reply(c, m);
}

static void defer_handler(void *arg, struct tf_rpc_call *c) {
  pending *p = arg;
  ck_assert_uint_ne(tf_rpc_call_pipe(c), 0);
  if (tf_rpc_call_request(c)->h.method == TF_M_GET_STATUS || p->twice) {
    answer(c);
    if (p->twice) {
      tf_status st;
      tf_status_set(&st, TF_INTERNAL, "second answer");
      tf_rpc_reply_error(c, &st); /* panics */
    }
  } else {
    pthread_mutex_lock(&p->mu);
    ck_assert_int_lt(p->n, 512);
    p->calls[p->n++] = c;
    pthread_mutex_unlock(&p->mu);
  }
  atomic_fetch_add(&p->handled, 1);
}

/* The deferred calls so far, taken from P. */
static int take_pending(struct tf_rpc_call **out) {
  pthread_mutex_lock(&P.mu);
  int n = P.n;
  memcpy(out, P.calls, (size_t)n * sizeof *out);
  P.n = 0;
  pthread_mutex_unlock(&P.mu);
  return n;
}

/* Log lines captured from the server. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[8192];

static void capture_log(void *arg, int prio, const char *msg) {
  pthread_mutex_lock(&log_mu);
  size_t n = strlen(log_text);
  snprintf(log_text + n, sizeof log_text - n, "<%d>%s\n", prio, msg);
  pthread_mutex_unlock(&log_mu);
}

static bool logged(const char *what) {
  pthread_mutex_lock(&log_mu);
  bool found = strstr(log_text, what) != NULL;
  pthread_mutex_unlock(&log_mu);
  return found;
}

static tf_rpc_server *defer_server(const char *url, int threads, int calls,
                                   int64_t stop_wait_ms) {
  pthread_mutex_init(&P.mu, NULL);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.handler_threads = threads;
  o.max_calls = calls;
  o.stop_wait_ms = stop_wait_ms;
  o.log = capture_log;
  tf_rpc_server *s;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start(&o, defer_handler, &P, &s, &st) == TF_OK,
                "%s", st.msg);
  return s;
}

/* Waits (at most 5 s) until *n reaches want. */
static void wait_count(atomic_int *n, int want) {
  for (int i = 0; i < 500 && atomic_load(n) < want; i++) {
    rt_sleep_ms(10);
  }
  ck_assert_int_eq(atomic_load(n), want);
}

/* Waits (at most 5 s) until the server has n calls in progress. */
static void wait_calls(const tf_rpc_server *s, int n) {
  tf_rpc_server_stats x = {0};
  for (int i = 0; i < 500; i++) {
    tf_rpc_server_get_stats(s, &x);
    if (x.calls == n) {
      return;
    }
    rt_sleep_ms(10);
  }
  ck_assert_int_eq(x.calls, n);
}

typedef struct box {
  atomic_int *done;
  int64_t want;
  tf_status st;
  int64_t got;
  int calls;
} box;

static void box_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  box *b = arg;
  b->st = *st;
  b->calls++;
  if (reply != NULL) {
    tf_wire_get_i64(&reply->body, "v", "reply", &b->got, NULL);
    tf_wire_msg_free(reply);
  }
  atomic_fetch_add(b->done, 1);
}

static void call_v(tf_rpc_client *c, int method, uint64_t id, int64_t v,
                   int64_t timeout_ms, box *b) {
  tf_rpc_call_async(c, rt_request(method, id, "v", v), timeout_ms, box_done, b);
}

START_TEST(test_reply_from_another_thread_after_return) {
  tf_rpc_server *s = defer_server("inproc://async_later", 1, 4, 5000);
  tf_rpc_client *c = rt_client("inproc://async_later", 0);
  atomic_int done = 0;
  box b = {.done = &done};
  call_v(c, TF_M_RUN_GRAPH, 0, 21, 3000, &b);
  wait_count(&P.handled, 1); /* the handler returned without replying */
  rt_sleep_ms(50);
  ck_assert_int_eq(atomic_load(&done), 0);
  wait_calls(s, 1);
  struct tf_rpc_call *calls[4];
  ck_assert_int_eq(take_pending(calls), 1);
  answer(calls[0]); /* from this thread, long after the handler returned */
  wait_count(&done, 1);
  ck_assert_msg(b.st.code == TF_OK, "%s", b.st.msg);
  ck_assert_int_eq(b.got, 42);
  /* The single handler thread still serves. */
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_rpc_call(c, rt_request(TF_M_GET_STATUS, 0, "v", 5), 3000,
                            &r, &st) == TF_OK,
                "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_int_eq(tf_rpc_server_served(s), 2);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct replier {
  struct tf_rpc_call **calls;
  int n;
  int64_t delay_ms;
} replier;

/* Answers calls in reverse order after delay_ms. */
static void *replier_main(void *arg) {
  replier *r = arg;
  rt_sleep_ms(r->delay_ms);
  for (int i = r->n - 1; i >= 0; i--) {
    answer(r->calls[i]);
  }
  return NULL;
}

START_TEST(test_256_deferred_calls_two_threads) {
  tf_rpc_server *s = defer_server("tcp://127.0.0.1:0", 2, 256, 5000);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  atomic_int done = 0;
  static box b[256];
  for (int i = 0; i < 256; i++) {
    b[i] = (box){.done = &done, .want = 2 * i};
    call_v(c, TF_M_RUN_GRAPH, tf_rpc_new_request_id(), i, 10000, &b[i]);
  }
  wait_count(&P.handled, 256); /* two threads took all 256: none was held */
  wait_calls(s, 256);
  ck_assert_int_eq(atomic_load(&done), 0);
  static struct tf_rpc_call *calls[512];
  replier r = {calls, take_pending(calls), 0};
  ck_assert_int_eq(r.n, 256);
  pthread_t th;
  pthread_create(&th, NULL, replier_main, &r);
  pthread_join(th, NULL);
  wait_count(&done, 256);
  for (int i = 0; i < 256; i++) {
    ck_assert_msg(b[i].st.code == TF_OK, "%d: %s", i, b[i].st.msg);
    ck_assert_int_eq(b[i].calls, 1);
    ck_assert_int_eq(b[i].got, b[i].want);
  }
  ck_assert_int_eq(tf_rpc_server_served(s), 256);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_retries_wait_without_a_thread) {
  tf_rpc_server *s = defer_server("inproc://async_retry", 1, 16, 5000);
  tf_rpc_client *c = rt_client("inproc://async_retry", 0);
  uint64_t id = tf_rpc_new_request_id();
  atomic_int done = 0;
  box b[9];
  for (int i = 0; i < 9; i++) {
    b[i] = (box){.done = &done};
    call_v(c, TF_M_RUN_GRAPH, id, 7, 5000, &b[i]);
    if (i == 0) {
      wait_count(&P.handled, 1); /* the original is in the handler first */
    }
  }
  rt_sleep_ms(100);
  ck_assert_int_eq(atomic_load(&P.handled), 1); /* retries never reach it */
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_rpc_call(c, rt_request(TF_M_GET_STATUS, 0, "v", 1), 3000,
                            &r, &st) == TF_OK,
                "%s", st.msg); /* the only handler thread is free */
  tf_wire_msg_free(r);
  wait_calls(s, 9); /* GetStatus's slot may still be finishing its send */
  struct tf_rpc_call *calls[4];
  ck_assert_int_eq(take_pending(calls), 1);
  answer(calls[0]);
  wait_count(&done, 9);
  for (int i = 0; i < 9; i++) {
    ck_assert_msg(b[i].st.code == TF_OK, "%d: %s", i, b[i].st.msg);
    ck_assert_int_eq(b[i].got, 14);
  }
  ck_assert_int_eq(atomic_load(&P.handled), 2);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

/* A handler that answers twice: TF_ASSERT aborts the process. */
START_TEST(test_reply_twice_panics) {
  P.twice = true;
  tf_rpc_server *s = defer_server("inproc://async_twice", 1, 4, 5000);
  tf_rpc_client *c = rt_client("inproc://async_twice", 0);
  tf_wire_msg *r;
  tf_status st;
  tf_rpc_call(c, rt_request(TF_M_RUN_GRAPH, 0, "v", 1), 3000, &r, &st);
  rt_sleep_ms(3000); /* the abort comes first */
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_never_finished_call_is_logged_at_stop) {
  tf_rpc_server *s = defer_server("inproc://async_never", 2, 4, 200);
  tf_rpc_client *c = rt_client("inproc://async_never", 0);
  atomic_int done = 0;
  box b = {.done = &done};
  uint64_t id = tf_rpc_new_request_id();
  call_v(c, TF_M_RUN_GRAPH, id, 3, 1000, &b);
  wait_count(&P.handled, 1);
  int64_t t0 = rt_now_ms();
  tf_rpc_server_stop(s); /* must not hang */
  int64_t el = rt_now_ms() - t0;
  ck_assert_msg(el >= 190 && el < 2000, "stop took %lld ms", (long long)el);
  char want[160];
  snprintf(want, sizeof want, "RunGraph request %llu (step 0)",
           (unsigned long long)id);
  ck_assert_msg(logged(want), "%s", log_text);
  ck_assert_msg(logged("was not finished by its handler when the server "
                       "stopped"),
                "%s", log_text);
  ck_assert_msg(logged("<3>rpc server inproc://async_never: stopped with 1 "
                       "call(s) never finished"),
                "%s", log_text);
  wait_count(&done, 1); /* the client gives up at its deadline */
  ck_assert_msg(b.st.code == TF_DEADLINE_EXCEEDED ||
                    b.st.code == TF_UNAVAILABLE,
                "%s", b.st.msg);
  struct tf_rpc_call *calls[4];
  ck_assert_int_eq(take_pending(calls), 1);
  answer(calls[0]); /* late: nothing is sent; the server is freed (ASan) */
  tf_rpc_client_free(c);
}
END_TEST

typedef struct stopper {
  tf_rpc_server *s;
  atomic_int stopped;
} stopper;

static void *stopper_main(void *arg) {
  stopper *k = arg;
  tf_rpc_server_stop(k->s);
  atomic_store(&k->stopped, 1);
  return NULL;
}

START_TEST(test_stop_waits_for_calls_in_flight) {
  tf_rpc_server *s = defer_server("tcp://127.0.0.1:0", 2, 16, 5000);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  atomic_int done = 0;
  box b[8];
  for (int i = 0; i < 8; i++) {
    b[i] = (box){.done = &done};
    call_v(c, TF_M_RUN_GRAPH, 0, i, 5000, &b[i]);
  }
  wait_count(&P.handled, 8);
  struct tf_rpc_call *calls[16];
  replier r = {calls, take_pending(calls), 300};
  ck_assert_int_eq(r.n, 8);
  pthread_t th;
  pthread_create(&th, NULL, replier_main, &r);
  int64_t t0 = rt_now_ms();
  tf_rpc_server_stop(s); /* the replier finishes the calls meanwhile */
  int64_t el = rt_now_ms() - t0;
  pthread_join(th, NULL);
  ck_assert_msg(el >= 250 && el < 3000, "stop took %lld ms", (long long)el);
  wait_count(&done, 8);
  for (int i = 0; i < 8; i++) {
    ck_assert_msg(b[i].st.code == TF_OK, "%d: %s", i, b[i].st.msg);
    ck_assert_int_eq(b[i].got, 2 * i);
  }
  ck_assert_msg(!logged("not finished"), "%s", log_text);
  tf_rpc_client_free(c);
}
END_TEST

START_TEST(test_stop_wakes_waiting_retries) {
  tf_rpc_server *s = defer_server("inproc://async_stop_retry", 1, 4, 5000);
  tf_rpc_client *c = rt_client("inproc://async_stop_retry", 0);
  uint64_t id = tf_rpc_new_request_id();
  atomic_int done = 0;
  box first = {.done = &done}, retry = {.done = &done};
  call_v(c, TF_M_RUN_GRAPH, id, 1, 5000, &first);
  wait_count(&P.handled, 1);
  call_v(c, TF_M_RUN_GRAPH, id, 1, 5000, &retry);
  rt_sleep_ms(100); /* the retry waits (30 s without a deadline) */
  stopper k = {.s = s};
  pthread_t th;
  pthread_create(&th, NULL, stopper_main, &k);
  wait_count(&done, 1); /* the retry is answered at once */
  ck_assert_int_eq(retry.st.code, TF_UNAVAILABLE);
  ck_assert_msg(strstr(retry.st.msg, "is still running and the server at "
                                     "inproc://async_stop_retry is stopping"),
                "%s", retry.st.msg);
  ck_assert_int_eq(atomic_load(&k.stopped), 0); /* waits for the original */
  struct tf_rpc_call *calls[4];
  ck_assert_int_eq(take_pending(calls), 1);
  answer(calls[0]);
  pthread_join(th, NULL);
  wait_count(&done, 2);
  ck_assert_msg(first.st.code == TF_OK, "%s", first.st.msg);
  ck_assert_int_eq(first.got, 2);
  tf_rpc_client_free(c);
}
END_TEST

/* ---- methods served inline ---------------------------------------------- */

static tf_rpc_server *inline_srv;
static atomic_int inline_seen[2];   /* RunGraph runs on NNG's thread, responsive */
static atomic_int handler_seen[2];  /* GetStatus runs on a handler thread, not */

static bool run_graph_inline(void *arg, int method) { return method == TF_M_RUN_GRAPH; }

static void where_handler(void *arg, struct tf_rpc_call *c) {
  bool on_q = tf_workq_is_worker(inline_srv->q);
  bool resp = tf_thread_is_responsive();
  if (tf_rpc_call_request(c)->h.method == TF_M_RUN_GRAPH) {
    atomic_fetch_add(&inline_seen[!on_q && resp], 1);
  } else {
    atomic_fetch_add(&handler_seen[on_q && !resp], 1);
  }
  int64_t v = 0;
  tf_wire_get_i64(&tf_rpc_call_request(c)->body, "v", "test", &v, NULL);
  if (v < 0) {
    defer_handler(&P, c); /* answered later, from the test's thread */
  } else {
    answer(c);
  }
}

START_TEST(test_inline_methods_run_on_nng_threads) {
  pthread_mutex_init(&P.mu, NULL);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, "tcp://127.0.0.1:0");
  o.handler_threads = 2;
  o.runs_inline = run_graph_inline;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start(&o, where_handler, NULL, &inline_srv, &st) == TF_OK,
                "%s", st.msg);
  char url[64];
  rt_tcp_url(inline_srv, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  atomic_int done = 0;
  static box b[64];
  for (int i = 0; i < 64; i++) {
    int method = i % 2 == 0 ? TF_M_RUN_GRAPH : TF_M_GET_STATUS;
    int64_t v = i % 4 == 0 ? -i - 1 : i; /* a quarter deferred, all RunGraph */
    b[i] = (box){.done = &done, .want = 2 * v};
    call_v(c, method, tf_rpc_new_request_id(), v, 10000, &b[i]);
  }
  wait_count(&P.handled, 16); /* the deferred ones, queued in P */
  static struct tf_rpc_call *calls[512];
  int n = take_pending(calls);
  ck_assert_int_eq(n, 16);
  for (int i = 0; i < n; i++) answer(calls[i]);
  wait_count(&done, 64);
  for (int i = 0; i < 64; i++) {
    ck_assert_msg(b[i].st.code == TF_OK, "%d: %s", i, b[i].st.msg);
    ck_assert_int_eq(b[i].got, b[i].want);
  }
  ck_assert_int_eq(atomic_load(&inline_seen[1]), 32);
  ck_assert_int_eq(atomic_load(&inline_seen[0]), 0);
  ck_assert_int_eq(atomic_load(&handler_seen[1]), 32);
  ck_assert_int_eq(atomic_load(&handler_seen[0]), 0);
  ck_assert_int_eq(tf_rpc_server_served(inline_srv), 64);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(inline_srv);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rpc_async");
  TCase *tc = tcase_create("rpc_async");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_reply_from_another_thread_after_return);
  tcase_add_test(tc, test_256_deferred_calls_two_threads);
  tcase_add_test(tc, test_retries_wait_without_a_thread);
  tcase_add_test_raise_signal(tc, test_reply_twice_panics, SIGABRT);
  tcase_add_test(tc, test_never_finished_call_is_logged_at_stop);
  tcase_add_test(tc, test_stop_waits_for_calls_in_flight);
  tcase_add_test(tc, test_stop_wakes_waiting_retries);
  tcase_add_test(tc, test_inline_methods_run_on_nng_threads);
  suite_add_tcase(s, tc);
  return s;
}
