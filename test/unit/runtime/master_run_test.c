/* master_run_test.c: driving steps over partitions, through a remote
 * session: a kernel error on one worker reaches the client with that
 * worker's code and message while the partition blocked in a _Recv on
 * another worker is aborted (promptly, long before the deadline) and the
 * session keeps working; a step blocked on an empty queue ends with
 * DEADLINE_EXCEEDED in time, leaves no running step behind and does not
 * disturb the queue; steps from 4 threads on one session are correct. */
#include "test/unit/runtime/rt_testlib2.h"

static tf_code run(tf_session *s, int64_t timeout_ms, const char *const *feeds,
                   tf_tensor *const *fv, int nf, const char *const *fetches, tf_tensor **out,
                   int no, const char *const *targets, int nt, tf_status *st) {
  tf_status_init(st);
  tf_run_options ro = {.timeout_ms = timeout_ms};
  return tf_session_run(s, &ro, feeds, fv, nf, fetches, out, no, targets, nt, NULL, st);
}

static int all_running(rt_cluster *c) {
  int n = tf_worker_running_steps(c->ps);
  for (int i = 0; i < c->n_workers; i++) n += tf_worker_running_steps(c->workers[i]);
  return n;
}

static int all_tables(rt_cluster *c) {
  int n = tf_worker_live_step_tables(c->ps);
  for (int i = 0; i < c->n_workers; i++) n += tf_worker_live_step_tables(c->workers[i]);
  return n;
}

/* Polls f(c) until 0 or ms passed; returns the last value. */
static int poll_zero(int (*f)(rt_cluster *), rt_cluster *c, int64_t ms) {
  int64_t until = tf__now_ns() + ms * 1000000;
  int v = f(c);
  while (v != 0 && tf__now_ns() < until) {
    rt2_sleep_ms(5);
    v = f(c);
  }
  return v;
}

/* x (fed) -> CheckNumerics on worker 1 -> Neg on worker 0 (whose _Recv
 * waits for worker 1). */
static tf_graph *checked_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = rt2_placeholder(g, "x", "/job:worker/task:1", TF_FLOAT32);
  tf_output xin[] = {rt_out(x)};
  tf_attr_kv kv[] = {{"message", tf_attr_string("x went bad")}};
  tf_node *cn = rt_node(g, "CheckNumerics", "check_x", "/job:worker/task:1", xin, 1, kv, 1);
  tf_output cin[] = {rt_out(cn)};
  rt_node(g, "Neg", "y", "/job:worker/task:0", cin, 1, NULL, 0);
  return g;
}

START_TEST(kernel_error_aborts_step_everywhere) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = checked_graph();
  tf_session *s = rt2_remote(&c, g);
  tf_session *local = tf_session_new(g, NULL, &(tf_status){0});
  ck_assert_ptr_nonnull(local);
  const char *feed[] = {"x"}, *fetch[] = {"y"};
  double good[3] = {1, -2, 3}, bad[3] = {1, 0.0 / 0.0, 3};
  tf_tensor *gx = tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), good);
  tf_tensor *bx = tt_tensor(TF_FLOAT32, tf_shape_of(1, 3), bad);
  tf_tensor *out = NULL;
  tf_status st, lst;
  ck_assert_msg(run(s, 20000, feed, &gx, 1, fetch, &out, 1, NULL, 0, &st) == TF_OK, "%s",
                st.msg);
  tf_tensor_unref(out);
  /* The local session's error for the same step is the reference. */
  ck_assert_int_ne(run(local, 20000, feed, &bx, 1, fetch, &out, 1, NULL, 0, &lst), TF_OK);
  for (int k = 0; k < 2; k++) {
    int64_t t0 = tf__now_ns();
    tf_code rc = run(s, 20000, feed, &bx, 1, fetch, &out, 1, NULL, 0, &st);
    double secs = rt2_secs_since(t0);
    ck_assert_int_eq(rc, lst.code);
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(st.msg, "check_x") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "x went bad") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, lst.msg) != NULL, "remote '%s' vs local '%s'", st.msg,
                  lst.msg);
    ck_assert_msg(secs < 2.0, "the failed step took %.2f s", secs);
    /* Worker 0's partition (waiting in its _Recv) is aborted, not left to
     * its 20 s deadline; the step's tables go away everywhere. */
    ck_assert_int_eq(poll_zero(all_running, &c, 2000), 0);
    ck_assert_int_eq(poll_zero(all_tables, &c, 2000), 0);
    /* And the session still runs good steps. */
    ck_assert_msg(run(s, 20000, feed, &gx, 1, fetch, &out, 1, NULL, 0, &st) == TF_OK, "%s",
                  st.msg);
    const float *ov = out->data;
    for (int i = 0; i < 3; i++) ck_assert(ov[i] == -(float)good[i]);
    tf_tensor_unref(out);
  }
  tf_tensor_unref(gx);
  tf_tensor_unref(bx);
  tf_session_free(local);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

/* q = FIFOQueue (worker 0), deq = QueueDequeue(q), enq = QueueEnqueue(q,
 * 7.5). */
START_TEST(deadline_on_blocked_step) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = tf_graph_new();
  tf_dtype ct[] = {TF_FLOAT32};
  tf_attr_kv qkv[] = {{"component_types", tf_attr_type_list(ct, 1)}};
  tf_node *q = rt_node(g, "FIFOQueue", "q", "/job:worker/task:0", NULL, 0, qkv, 1);
  tf_output qin[] = {rt_out(q)};
  rt_node(g, "QueueDequeue", "deq", "/job:worker/task:0", qin, 1, qkv, 1);
  tf_node *v = rt_const(g, "v", "/job:worker/task:1", tf_tensor_scalar_f32(7.5f));
  tf_output ein[] = {rt_out(q), rt_out(v)};
  tf_attr_kv ekv[] = {{"Tcomponents", tf_attr_type_list(ct, 1)}};
  rt_node(g, "QueueEnqueue", "enq", "/job:worker/task:0", ein, 2, ekv, 1);
  tf_session *s = rt2_remote(&c, g);
  const char *fetch[] = {"deq"}, *enq[] = {"enq"};
  tf_tensor *out = NULL;
  tf_status st;
  for (int k = 0; k < 2; k++) {
    int64_t t0 = tf__now_ns();
    tf_code rc = run(s, 400, NULL, NULL, 0, fetch, &out, 1, NULL, 0, &st);
    double secs = rt2_secs_since(t0);
    ck_assert_msg(rc == TF_DEADLINE_EXCEEDED, "%d %s", rc, st.msg);
    ck_assert_ptr_null(out);
    ck_assert_msg(secs >= 0.35 && secs < 0.4 + 3.0, "took %.2f s", secs);
    ck_assert_int_eq(poll_zero(all_running, &c, 2000), 0);
    ck_assert_int_eq(poll_zero(all_tables, &c, 2000), 0);
  }
  /* The timed-out dequeues took nothing: one enqueue, one dequeue. */
  ck_assert_msg(run(s, 5000, NULL, NULL, 0, NULL, NULL, 0, enq, 1, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(run(s, 5000, NULL, NULL, 0, fetch, &out, 1, NULL, 0, &st) == TF_OK, "%s",
                st.msg);
  ck_assert(*(const float *)out->data == 7.5f);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

#define N_THREADS 4
#define N_STEPS 6

typedef struct thread_job {
  tf_session *s;
  tf_tensor *x[N_STEPS];
  float c;
  int failures;
  char first_error[TF_STATUS_MSG_MAX + 64];
} thread_job;

static void *thread_main(void *arg) {
  thread_job *j = arg;
  const char *feed[] = {"x"}, *fetch[] = {"z", "y"};
  for (int k = 0; k < N_STEPS; k++) {
    tf_tensor *out[2] = {NULL, NULL};
    tf_status st;
    if (run(j->s, 10000, feed, &j->x[k], 1, fetch, out, 2, NULL, 0, &st) != TF_OK) {
      if (j->failures++ == 0) snprintf(j->first_error, sizeof j->first_error, "%s", st.msg);
      continue;
    }
    const float *xv = j->x[k]->data, *zv = out[0]->data, *yv = out[1]->data;
    for (int64_t i = 0; i < j->x[k]->n; i++) {
      float y = xv[i] * xv[i];
      if (yv[i] != y || zv[i] != y + j->c) {
        if (j->failures++ == 0) {
          snprintf(j->first_error, sizeof j->first_error, "step %d element %lld: got "
                   "(%g, %g), want (%g, %g)", k, (long long)i, yv[i], zv[i], y, y + j->c);
        }
        break;
      }
    }
    tt_free(out, 2);
  }
  return NULL;
}

/* x (fed, worker 0) -> y = x*x (worker 1) -> z = y + c (ps). */
START_TEST(concurrent_steps_from_threads) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = tf_graph_new();
  tf_node *x = rt2_placeholder(g, "x", "/job:worker/task:0", TF_FLOAT32);
  tf_output xx[] = {rt_out(x), rt_out(x)};
  tf_node *y = rt_node(g, "Mul", "y", "/job:worker/task:1", xx, 2, NULL, 0);
  tf_node *cn = rt_const(g, "c", "/job:ps", tf_tensor_scalar_f32(0.125f));
  tf_output yc[] = {rt_out(y), rt_out(cn)};
  rt_node(g, "Add", "z", "/job:ps/task:0", yc, 2, NULL, 0);
  tf_session *s = rt2_remote(&c, g);
  thread_job jobs[N_THREADS];
  pthread_t th[N_THREADS];
  memset(jobs, 0, sizeof jobs);
  for (int t = 0; t < N_THREADS; t++) {
    jobs[t].s = s;
    jobs[t].c = 0.125f;
    for (int k = 0; k < N_STEPS; k++) {
      jobs[t].x[k] = tt_rand(TF_FLOAT32, tf_shape_of(1, 16 + t), -10, 10);
    }
  }
  for (int t = 0; t < N_THREADS; t++) {
    ck_assert_int_eq(pthread_create(&th[t], NULL, thread_main, &jobs[t]), 0);
  }
  for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < N_THREADS; t++) {
    ck_assert_msg(jobs[t].failures == 0, "thread %d: %d failure(s), first: %s", t,
                  jobs[t].failures, jobs[t].first_error);
    tt_free(jobs[t].x, N_STEPS);
  }
  ck_assert_int_eq(poll_zero(all_tables, &c, 2000), 0);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("master_run");
  TCase *tc = tcase_create("steps");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, kernel_error_aborts_step_everywhere);
  tcase_add_test(tc, deadline_on_blocked_step);
  tcase_add_test(tc, concurrent_steps_from_threads);
  suite_add_tcase(s, tc);
  return s;
}
