/* Tests for the RPC client: a call to an absent server times out with
 * DEADLINE_EXCEEDED naming method, URL and timeout; background dialing
 * reaches a server that starts later; many asynchronous calls in flight on
 * one client each complete exactly once; freeing a client fails its calls
 * with UNAVAILABLE (and may be done from a completion), synchronous ones
 * too; a reply over the client's size limit fails the call; bad URLs and
 * timeouts are rejected; request ids are unique and non-zero across
 * threads; a reply from another task than expected fails the call;
 * (context, aio) pairs are reused and at most 16 idle ones kept. */
#include <pthread.h>

#include "test/unit/transport/rpc_testlib.h"

/* Waits (at most 5 s) until *n reaches want. */
static void wait_count(atomic_int *n, int want) {
  for (int i = 0; i < 500 && atomic_load(n) < want; i++) {
    rt_sleep_ms(10);
  }
  ck_assert_int_eq(atomic_load(n), want);
}

START_TEST(test_absent_server_times_out) {
  char url[64], want[192];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
  tf_rpc_client *c = rt_client(url, 0);
  tf_wire_msg *r = (tf_wire_msg *)1;
  tf_status st;
  int64_t t0 = rt_now_ms();
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_ECHO, 1, NULL, 0), 200, &r,
                               &st),
                   TF_DEADLINE_EXCEEDED);
  int64_t el = rt_now_ms() - t0;
  ck_assert_msg(el >= 195 && el < 800, "took %lld ms", (long long)el);
  ck_assert(r == NULL);
  /* Nothing listens: the synchronous call says why it never connected. */
  snprintf(want, sizeof want,
           "GetStatus to %s: no reply within 200 ms (not connected: Connection refused)", url);
  ck_assert_str_eq(st.msg, want);
  tf_rpc_client_free(c);
}
END_TEST

static void absent_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  tf_status *out = arg;
  *out = *st;
  tf_wire_msg_free(reply);
}

/* An asynchronous call (on an NNG thread: no connect probe) says it was
 * not connected; an ipc path nobody serves names the reason too. */
START_TEST(test_absent_server_async_and_ipc) {
  char url[64], want[160];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
  tf_rpc_client *c = rt_client(url, 0);
  tf_status st;
  st.code = TF_OK;
  tf_rpc_call_async(c, rt_request(RT_ECHO, 1, NULL, 0), 150, absent_done, &st);
  for (int i = 0; i < 300 && st.code == TF_OK; i++) rt_sleep_ms(10);
  ck_assert_int_eq(st.code, TF_DEADLINE_EXCEEDED);
  snprintf(want, sizeof want, "GetStatus to %s: no reply within 150 ms (not connected)", url);
  ck_assert_str_eq(st.msg, want);
  tf_rpc_client_free(c);
  c = rt_client("ipc:///tmp/tf-rpc-client-test-nobody.sock", 0);
  tf_wire_msg *r = NULL;
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_ECHO, 1, NULL, 0), 150, &r, &st),
                   TF_DEADLINE_EXCEEDED);
  ck_assert_msg(strstr(st.msg, "(not connected: No such file or directory)") != NULL, "%s",
                st.msg);
  tf_rpc_client_free(c);
}
END_TEST

START_TEST(test_bad_urls_and_timeouts) {
  tf_rpc_client *c = (tf_rpc_client *)1;
  tf_status st;
  ck_assert_int_eq(tf_rpc_client_new("nope://x", 0, &c, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(c == NULL);
  ck_assert_msg(strstr(st.msg, "cannot dial 'nope://x'"), "%s", st.msg);
  /* tls+tcp peers are checked against names: an IP literal is refused */
  ck_assert_int_eq(tf_rpc_client_new("tls+tcp://127.0.0.1:1", 0, &c, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "must be named by a DNS name"), "%s", st.msg);
  c = rt_client("inproc://nobody", 0);
  tf_wire_msg *r;
  ck_assert_int_eq(tf_rpc_call(c, rt_request(RT_SLEEP, 0, NULL, 0), 0, &r,
                               &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "RunGraph to inproc://nobody: timeout_ms must be > 0");
  tf_rpc_client_free(c);
  tf_rpc_client_free(NULL);
}
END_TEST

START_TEST(test_server_started_later_is_reached) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
  tf_rpc_client *c = rt_client(url, 0);
  rt_sleep_ms(150); /* the first dials fail */
  tf_rpc_server *s = rt_server(url, 1, 0);
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_rpc_call(c, rt_request(RT_SLEEP, 0, "ms", 0), 3000, &r,
                            &st) == TF_OK,
                "%s", st.msg);
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct slot {
  atomic_int *done;
  int64_t want;
  int calls;
  bool ok;
} slot;

static void slot_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  slot *sl = arg;
  sl->calls++;
  if (st->code == TF_OK) {
    tf_tensor *t = rt_reply_tensor(reply, 0);
    sl->ok = ((int64_t *)t->data)[0] == sl->want;
    tf_tensor_unref(t);
    tf_wire_msg_free(reply);
  }
  atomic_fetch_add(sl->done, 1);
}

/* An RT_SLEEP call's end: ok when it succeeded. */
static void sleep_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  slot *sl = arg;
  sl->calls++;
  sl->ok = st->code == TF_OK;
  tf_wire_msg_free(reply);
  atomic_fetch_add(sl->done, 1);
}

START_TEST(test_many_async_calls_in_flight) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 4, 0);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  atomic_int done = 0;
  slot sl[32];
  for (int i = 0; i < 32; i++) {
    sl[i] = (slot){&done, 1000 + i, 0, false};
    tf_tensor *t = tf_tensor_vec_i64(1, &sl[i].want);
    tf_rpc_call_async(c, rt_echo_request(&t, 1, 0), 3000, slot_done, &sl[i]);
    tf_tensor_unref(t);
  }
  wait_count(&done, 32);
  for (int i = 0; i < 32; i++) {
    ck_assert_int_eq(sl[i].calls, 1);
    ck_assert(sl[i].ok);
  }
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct fail_box {
  atomic_int done;
  tf_status st;
  tf_rpc_client *free_me;
} fail_box;

static void fail_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  fail_box *b = arg;
  b->st = *st;
  tf_wire_msg_free(reply);
  tf_rpc_client_free(b->free_me); /* allowed from a completion */
  atomic_fetch_add(&b->done, 1);
}

START_TEST(test_free_fails_calls_in_flight) {
  tf_rpc_server *s = rt_server("inproc://rpc_free", 1, 0);
  tf_rpc_client *c = rt_client("inproc://rpc_free", 0);
  fail_box b = {0};
  tf_rpc_call_async(c, rt_request(RT_SLEEP, 0, "ms", 300), 3000, fail_done,
                    &b);
  rt_sleep_ms(50);
  tf_rpc_client_free(c);
  wait_count(&b.done, 1);
  ck_assert_int_eq(b.st.code, TF_UNAVAILABLE);
  ck_assert_msg(strstr(b.st.msg, "RunGraph to inproc://rpc_free: "), "%s",
                b.st.msg);
  /* A completion that frees its client. */
  fail_box b2 = {0};
  b2.free_me = rt_client("inproc://rpc_free", 0);
  tf_rpc_call_async(b2.free_me, rt_request(RT_SLEEP, 0, "ms", 0), 3000,
                    fail_done, &b2);
  wait_count(&b2.done, 1);
  ck_assert_msg(b2.st.code == TF_OK, "%s", b2.st.msg);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_reply_over_client_limit_fails) {
  tf_rpc_server *s = rt_server("tcp://127.0.0.1:0", 1, 0);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 64 << 10);
  tf_wire_msg *r;
  tf_status st;
  tf_code code = tf_rpc_call(c, rt_request(RT_BIG, 0, "bytes", 200 << 10),
                             500, &r, &st);
  ck_assert_msg(code == TF_UNAVAILABLE || code == TF_DEADLINE_EXCEEDED, "%s",
                st.msg);
  ck_assert_msg(strstr(st.msg, url) != NULL, "%s", st.msg);
  ck_assert_msg(tf_rpc_call(c, rt_request(RT_BIG, 0, "bytes", 1000), 3000, &r,
                            &st) == TF_OK,
                "%s", st.msg);
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

#define TASK1 "/job:worker/replica:0/task:1"
#define TASK2 "/job:worker/replica:0/task:2"

static tf_rpc_client *expecting(const char *url, const char *task) {
  tf_rpc_client_options o = {.url = url, .expect_task = task};
  tf_rpc_client *c;
  tf_status st;
  ck_assert_msg(tf_rpc_client_open(&o, &c, &st) == TF_OK, "%s", st.msg);
  return c;
}

START_TEST(test_reply_from_another_task_fails) {
  tf_rpc_server *s = rt_named_server("inproc://cl_identity", TASK1, 9);
  tf_rpc_client *wrong = expecting("inproc://cl_identity", TASK2);
  tf_wire_msg *r = (tf_wire_msg *)1;
  tf_status st;
  ck_assert_int_eq(tf_rpc_call(wrong, rt_request(RT_ECHO, 0, NULL, 0), 3000,
                               &r, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert(r == NULL);
  ck_assert_str_eq(st.msg, "wrong task at address: inproc://cl_identity "
                           "answered as " TASK1 ", expected " TASK2);
  tf_rpc_client *right = expecting("inproc://cl_identity", TASK1);
  ck_assert_msg(tf_rpc_call(right, rt_request(RT_ECHO, 0, NULL, 0), 3000, &r,
                            &st) == TF_OK,
                "%s", st.msg);
  tf_wire_msg_free(r);
  tf_rpc_client_free(wrong);
  tf_rpc_client_free(right);
  tf_rpc_server_stop(s);
  /* A server that does not name itself: any expectation passes. */
  s = rt_server("inproc://cl_anonymous", 1, 0);
  tf_rpc_client *any = expecting("inproc://cl_anonymous", TASK2);
  ck_assert_msg(tf_rpc_call(any, rt_request(RT_SLEEP, 0, "ms", 0), 3000, &r,
                            &st) == TF_OK,
                "%s", st.msg);
  tf_wire_msg_free(r);
  tf_rpc_client_free(any);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_pairs_are_pooled_and_bounded) {
  tf_rpc_server *s = rt_server("inproc://cl_pool", 4, 0);
  tf_rpc_client *c = rt_client("inproc://cl_pool", 0);
  ck_assert_int_eq(tf__rpc_client_idle_pairs(c), 0);
  for (int i = 0; i < 10; i++) { /* one pair serves them all */
    tf_wire_msg *r;
    tf_status st;
    ck_assert(tf_rpc_call(c, rt_request(RT_SLEEP, 0, "ms", 0), 3000, &r,
                          &st) == TF_OK);
    tf_wire_msg_free(r);
    ck_assert_int_eq(tf__rpc_client_idle_pairs(c), 1);
  }
  atomic_int done = 0;
  slot sl[40];
  /* 40 in flight: 40 async pairs. Each call sleeps 100 ms on one of the
   * server's 4 handlers, so none ends (and lends its pair to a later
   * one) before the last has started. */
  for (int i = 0; i < 40; i++) {
    sl[i] = (slot){&done, 0, 0, false};
    tf_rpc_call_async(c, rt_request(RT_SLEEP, 0, "ms", 100), 20000, sleep_done, &sl[i]);
  }
  wait_count(&done, 40);
  for (int i = 0; i < 500 && tf__rpc_client_idle_pairs(c) < 17; i++) {
    rt_sleep_ms(10); /* pairs go back just after done (5 s: a loaded CI) */
  }
  ck_assert_int_eq(tf__rpc_client_idle_pairs(c), 1 + 16); /* 16 kept */
  for (int i = 0; i < 40; i++) {
    ck_assert(sl[i].ok);
  }
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

typedef struct sync_arg {
  tf_rpc_client *c;
  tf_code code;
  tf_status st;
  int64_t ms;
} sync_arg;

static void *sync_main(void *p) {
  sync_arg *a = p;
  tf_wire_msg *r = NULL;
  int64_t t0 = rt_now_ms();
  a->code = tf_rpc_call(a->c, rt_request(RT_SLEEP, 0, "ms", 2000), 5000, &r,
                        &a->st);
  a->ms = rt_now_ms() - t0;
  tf_wire_msg_free(r);
  return NULL;
}

START_TEST(test_free_fails_a_waiting_sync_call) {
  tf_rpc_server *s = rt_server("inproc://cl_sync_free", 1, 0);
  sync_arg a = {.c = rt_client("inproc://cl_sync_free", 0)};
  pthread_t th;
  pthread_create(&th, NULL, sync_main, &a);
  wait_count(&rt_calls, 1);
  tf_rpc_client_free(a.c); /* the call's thread waits on its own aio */
  pthread_join(th, NULL);
  ck_assert_int_eq(a.code, TF_UNAVAILABLE);
  ck_assert_msg(strstr(a.st.msg, "RunGraph to inproc://cl_sync_free: "),
                "%s", a.st.msg);
  ck_assert_msg(a.ms < 1500, "took %lld ms", (long long)a.ms);
  tf_rpc_server_stop(s);
}
END_TEST

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void *ids_main(void *p) {
  uint64_t *out = p;
  for (int i = 0; i < 5000; i++) {
    out[i] = tf_rpc_new_request_id();
  }
  return NULL;
}

START_TEST(test_request_ids_unique_nonzero) {
  static uint64_t ids[4][5000];
  pthread_t th[4];
  for (int k = 0; k < 4; k++) {
    pthread_create(&th[k], NULL, ids_main, ids[k]);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(th[k], NULL);
  }
  uint64_t *all = &ids[0][0];
  qsort(all, 20000, sizeof *all, cmp_u64);
  for (int i = 0; i < 20000; i++) {
    ck_assert(all[i] != 0);
    ck_assert(i == 0 || all[i] != all[i - 1]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rpc_client");
  TCase *tc = tcase_create("rpc_client");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_absent_server_times_out);
  tcase_add_test(tc, test_absent_server_async_and_ipc);
  tcase_add_test(tc, test_bad_urls_and_timeouts);
  tcase_add_test(tc, test_server_started_later_is_reached);
  tcase_add_test(tc, test_many_async_calls_in_flight);
  tcase_add_test(tc, test_free_fails_calls_in_flight);
  tcase_add_test(tc, test_reply_over_client_limit_fails);
  tcase_add_test(tc, test_request_ids_unique_nonzero);
  tcase_add_test(tc, test_reply_from_another_task_fails);
  tcase_add_test(tc, test_pairs_are_pooled_and_bounded);
  tcase_add_test(tc, test_free_fails_a_waiting_sync_call);
  suite_add_tcase(s, tc);
  return s;
}
