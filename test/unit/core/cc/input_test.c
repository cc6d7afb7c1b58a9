/* input_test.c: queue runners (lib/core/cc/input.c) on real sessions: a run
 * budget shared by several threads is used exactly and then the queue is
 * closed; an upstream queue running dry (OUT_OF_RANGE) ends the threads
 * and closes the downstream queue, so its consumer sees every element and
 * then OUT_OF_RANGE; the first error is kept and stops the runner (and the
 * consumer is released); a stop releases threads blocked on a full queue
 * promptly; join honours its deadline; a closed session ends the threads;
 * bad options and double starts are refused. */
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"
#include "tf/input.h"

static tf_node *finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* An int32 scalar FIFOQueue named name with capacity cap, and its
 * close_<name>, cancel_<name>, deq_<name> and size_<name> nodes. */
static tf_node *int_queue(tf_graph *g, const char *name, int64_t cap) {
  tf_dtype dt = TF_INT32;
  tf_shape s = tf_shape_scalar();
  tf_attr_kv a[3] = {{"component_types", tf_attr_type_list(&dt, 1)},
                     {"shapes", tf_attr_shape_list(&s, 1)},
                     {"capacity", tf_attr_int(cap)}};
  tf_node *q = tt_node(g, "FIFOQueue", name, NULL, 0, a, 3);
  tf_output h = {q, 0};
  char nm[64];
  for (int cancel = 0; cancel < 2; cancel++) {
    tf_attr_kv c = {"cancel_pending_enqueues", tf_attr_bool(cancel)};
    snprintf(nm, sizeof nm, "%s_%s", cancel ? "cancel" : "close", name);
    tt_node(g, "QueueClose", nm, &h, 1, &c, 1);
  }
  tf_attr_kv d = {"component_types", tf_attr_type_list(&dt, 1)};
  snprintf(nm, sizeof nm, "deq_%s", name);
  tt_node(g, "QueueDequeue", nm, &h, 1, &d, 1);
  snprintf(nm, sizeof nm, "size_%s", name);
  tt_node(g, "QueueSize", nm, &h, 1, NULL, 0);
  return q;
}

static tf_node *enqueue(tf_graph *g, const char *name, tf_node *q, tf_output v) {
  tf_node_builder *b = tf_node_begin(g, "QueueEnqueue", name);
  tf_node_add_input(b, (tf_output){q, 0});
  tf_node_add_input_list(b, &v, 1);
  return finish(b);
}

static tf_session *session(tf_graph *g) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* Runs fetch (or target when fetch is NULL) with a deadline. */
static tf_code run(tf_session *s, const char *fetch, tf_tensor **out,
                   const char *target, tf_status *st) {
  tf_run_options o = {.timeout_ms = 5000};
  tf_tensor *dummy = NULL;
  return tf_session_run(s, &o, NULL, NULL, 0, &fetch, out ? out : &dummy,
                        fetch ? 1 : 0, &target, target ? 1 : 0, NULL, st);
}

static int64_t queue_size(tf_session *s, const char *name) {
  char f[64];
  snprintf(f, sizeof f, "size_%s", name);
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(run(s, f, &t, NULL, &st) == TF_OK, "%s", st.msg);
  int64_t n = *(int32_t *)t->data;
  tf_tensor_unref(t);
  return n;
}

static tf_queue_runner *runner(const char *target, int threads,
                               const char *close, const char *cancel,
                               int64_t max_runs) {
  tf_queue_runner_options o = {.enqueue_targets = &target, .n_enqueue_targets = 1,
                               .threads = threads, .close_target = close,
                               .cancel_target = cancel, .max_runs = max_runs};
  tf_status st;
  tf_queue_runner *r = tf_queue_runner_new(&o, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  return r;
}

/* Dequeues from deq_<name> until OUT_OF_RANGE; returns the count. */
static int64_t drain(tf_session *s, const char *name, int64_t *sum) {
  char f[64];
  snprintf(f, sizeof f, "deq_%s", name);
  int64_t n = 0;
  for (;;) {
    tf_tensor *t;
    tf_status st;
    tf_code rc = run(s, f, &t, NULL, &st);
    if (rc == TF_OUT_OF_RANGE) return n;
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    if (sum) *sum += *(int32_t *)t->data;
    tf_tensor_unref(t);
    n++;
  }
}

START_TEST(test_max_runs_then_close) {
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 1000);
  enqueue(g, "enq", q, (tf_output){tt_const(g, "seven", tf_tensor_scalar_i32(7)), 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("enq", 3, "close_q", "cancel_q", 50);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  ck_assert_msg(tf_queue_runner_join(r, 5000, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_queue_runner_done(r));
  ck_assert_int_eq(tf_queue_runner_runs(r), 50);
  ck_assert_int_eq(queue_size(s, "q"), 50);
  int64_t sum = 0;
  ck_assert_int_eq(drain(s, "q", &sum), 50); /* closed: then OUT_OF_RANGE */
  ck_assert_int_eq(sum, 350);
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* q2 <- q1 until q1 is closed and empty. */
START_TEST(test_upstream_out_of_range) {
  tf_graph *g = tf_graph_new();
  tf_node *q1 = int_queue(g, "q1", -1);
  tf_node *q2 = int_queue(g, "q2", 3);
  tf_node *ph = tt_placeholder(g, "x", TF_INT32, tf_shape_scalar());
  enqueue(g, "feed", q1, (tf_output){ph, 0});
  enqueue(g, "move", q2, (tf_output){tf_graph_find(g, "deq_q1"), 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("move", 2, "close_q2", "cancel_q2", 0);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  for (int i = 1; i <= 20; i++) {
    tf_tensor *x = tf_tensor_scalar_i32(i);
    const char *fn[1] = {"x"}, *tn[1] = {"feed"};
    ck_assert_int_eq(tf_session_run(s, NULL, fn, &x, 1, NULL, NULL, 0, tn, 1, NULL, &st),
                     TF_OK);
    tf_tensor_unref(x);
  }
  ck_assert_int_eq(run(s, NULL, NULL, "close_q1", &st), TF_OK);
  int64_t sum = 0;
  ck_assert_int_eq(drain(s, "q2", &sum), 20);
  ck_assert_int_eq(sum, 210);
  ck_assert_msg(tf_queue_runner_join(r, 5000, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_queue_runner_runs(r), 20);
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A target that always fails: the first error is kept, every thread
 * stops, the queue is closed so a waiting consumer is released. */
START_TEST(test_error_kept_and_consumer_released) {
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 10);
  tf_node *ph = tt_placeholder(g, "unfed", TF_INT32, tf_shape_scalar());
  enqueue(g, "enq", q, (tf_output){ph, 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("enq", 2, "close_q", "cancel_q", 0);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  ck_assert_int_eq(drain(s, "q", NULL), 0); /* released by the close */
  ck_assert_int_ne(tf_queue_runner_join(r, 5000, &st), TF_OK);
  ck_assert_int_ne(st.code, TF_DEADLINE_EXCEEDED);
  ck_assert_msg(strstr(st.msg, "unfed"), "%s", st.msg);
  tf_status again;
  ck_assert_int_eq(tf_queue_runner_status(r, &again), st.code);
  ck_assert_str_eq(again.msg, st.msg);
  ck_assert_int_eq(tf_queue_runner_runs(r), 0);
  tf_queue_runner_free(r);
  /* an unknown target is such an error too */
  r = runner("no_such_node", 1, NULL, NULL, 0);
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  ck_assert_int_eq(tf_queue_runner_join(r, 5000, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "no_such_node"), "%s", st.msg);
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

static void wait_size(tf_session *s, const char *q, int64_t n) {
  int64_t end = tf__now_ns() + 5000000000LL;
  while (queue_size(s, q) < n) {
    ck_assert_msg(tf__now_ns() < end, "queue %s never reached %lld", q, (long long)n);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

START_TEST(test_stop_while_blocked) {
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 2);
  enqueue(g, "enq", q, (tf_output){tt_const(g, "one", tf_tensor_scalar_i32(1)), 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("enq", 2, "close_q", "cancel_q", 0);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  wait_size(s, "q", 2); /* full: both threads are blocked in an enqueue */
  ck_assert(!tf_queue_runner_done(r));
  int64_t t0 = tf__now_ns();
  tf_queue_runner_request_stop(r);
  ck_assert_msg(tf_queue_runner_join(r, 2000, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_lt(tf__now_ns() - t0, 1000000000LL);
  ck_assert_int_ge(tf_queue_runner_runs(r), 2);
  tf_queue_runner_request_stop(r); /* again: harmless */
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Without a cancel target a stop cannot release a blocked thread: join
 * reports DEADLINE_EXCEEDED until someone closes the queue. */
START_TEST(test_join_deadline) {
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 1);
  enqueue(g, "enq", q, (tf_output){tt_const(g, "one", tf_tensor_scalar_i32(1)), 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("enq", 2, "close_q", NULL, 0);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  wait_size(s, "q", 1);
  tf_queue_runner_request_stop(r);
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(tf_queue_runner_join(r, 50, &st), TF_DEADLINE_EXCEEDED);
  ck_assert_int_ge(tf__now_ns() - t0, 40000000LL);
  ck_assert_msg(strstr(st.msg, "of 2 threads still running after 50 ms"), "%s", st.msg);
  ck_assert_int_eq(run(s, NULL, NULL, "cancel_q", &st), TF_OK);
  ck_assert_msg(tf_queue_runner_join(r, 2000, &st) == TF_OK, "%s", st.msg);
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_session_close_ends_threads) {
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 1);
  enqueue(g, "enq", q, (tf_output){tt_const(g, "one", tf_tensor_scalar_i32(1)), 0});
  tf_session *s = session(g);
  tf_queue_runner *r = runner("enq", 3, "close_q", NULL, 0);
  tf_status st;
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  wait_size(s, "q", 1);
  ck_assert_int_eq(tf_session_close(s, &st), TF_OK);
  tf_queue_runner_join(r, 2000, &st);
  ck_assert_int_ne(st.code, TF_DEADLINE_EXCEEDED);
  ck_assert(tf_queue_runner_done(r));
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_bad_options) {
  tf_status st;
  tf_queue_runner_options o = {0};
  ck_assert_ptr_null(tf_queue_runner_new(&o, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(tf_queue_runner_new(NULL, &st));
  const char *empty = "";
  o = (tf_queue_runner_options){.enqueue_targets = &empty, .n_enqueue_targets = 1};
  ck_assert_ptr_null(tf_queue_runner_new(&o, &st));
  ck_assert_msg(strstr(st.msg, "target 0 is empty"), "%s", st.msg);
  const char *t = "x";
  o = (tf_queue_runner_options){.enqueue_targets = &t, .n_enqueue_targets = 1,
                                .max_runs = -1};
  ck_assert_ptr_null(tf_queue_runner_new(&o, &st));
  /* not started: join is immediate, nothing is done */
  tf_queue_runner *r = runner("x", 0, NULL, NULL, 0);
  ck_assert_int_eq(tf_queue_runner_join(r, 0, &st), TF_OK);
  ck_assert(!tf_queue_runner_done(r));
  tf_queue_runner_free(r);
  tf_queue_runner_free(NULL);
  /* a runner starts once */
  tf_graph *g = tf_graph_new();
  tf_node *q = int_queue(g, "q", 5);
  enqueue(g, "enq", q, (tf_output){tt_const(g, "one", tf_tensor_scalar_i32(1)), 0});
  tf_session *s = session(g);
  r = runner("enq", 1, "close_q", "cancel_q", 2);
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_OK);
  ck_assert_int_eq(tf_queue_runner_start(r, s, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "started already"), "%s", st.msg);
  ck_assert_int_eq(tf_queue_runner_join(r, 5000, &st), TF_OK);
  tf_queue_runner_free(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("input");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_max_runs_then_close);
  tcase_add_test(tc, test_upstream_out_of_range);
  tcase_add_test(tc, test_error_kept_and_consumer_released);
  tcase_add_test(tc, test_stop_while_blocked);
  tcase_add_test(tc, test_join_deadline);
  tcase_add_test(tc, test_session_close_ends_threads);
  tcase_add_test(tc, test_bad_options);
  suite_add_tcase(s, tc);
  return s;
}
