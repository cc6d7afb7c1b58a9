/* executor_deadline_test.c: a step ends within 100 ms of its deadline with
 * DEADLINE_EXCEEDED, for graphs of 1, 10, 100 and 1,000 nodes, run every
 * way: tf_executor_run and tf_executor_run_async, each inline (no runner)
 * and on a runner of 2 threads, and through the local session's
 * tf_run_options.timeout_ms with 1 and 2 inter-op threads.
 *
 * The 1-node graph is one QueueDequeue blocked on an empty FIFOQueue (plus
 * the queue's own node): only the timer can end it, since no node is left
 * to run. The others are N MatMuls in two chains from one input, each
 * MatMul sized (calibrated at run time, best of 3) to take at least 5, 3
 * and 1 ms for N = 10, 100 and 1,000: no single kernel comes close to the
 * 100 ms slack, and the deadline is a sixth of the graph's run time on one
 * thread, so even two chains in parallel are far from finishing by then.
 *
 * Each run asserts the code, deadline <= wall time <= deadline + 100 ms,
 * and that the message names the deadline and the node that started last.
 * A machine shared with other builds can delay any thread by a scheduler
 * time slice or more, so the upper bound is asserted on the best of three
 * attempts; the code and the lower bound on every one. GEMMs run on one
 * OpenBLAS thread here: a kernel's time is then its own thread's, the two
 * chains on the runner do not oversubscribe the cores with OpenBLAS's
 * threads, and ThreadSanitizer does not see OpenBLAS's uninstrumented
 * spin-wait hand-offs (which it would report as races). */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/base/timer.h"
#include "lib/core/base/workqueue.h"
#include "test/unit/core/exec/exec_testlib.h"
#include "tf/session.h"

#define SLACK_MS 100
#define ATTEMPTS 3

static const int sizes[] = {1, 10, 100, 1000};

/* ---- graphs ---------------------------------------------------------------- */

/* FIFOQueue 'q' of floats and QueueDequeue 'dq' on it, fetched as retval 0. */
static tf_graph *queue_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_dtype dt = TF_FLOAT32;
  tf_attr_kv qa[] = {{"component_types", tf_attr_type_list(&dt, 1)},
                     {"capacity", tf_attr_int(4)}};
  tf_node *q = tt_node(g, "FIFOQueue", "q", NULL, 0, qa, 2);
  tf_attr_kv da[] = {{"component_types", tf_attr_type_list(&dt, 1)}};
  tf_node *dq = tt_node(g, "QueueDequeue", "dq", &(tf_output){q, 0}, 1, da, 1);
  retval(g, "ret", o0(dq), 0);
  return g;
}

/* A size x size float input with entries uniform in +-sqrt(3/size), so
 * that powers of it keep their scale (no slow subnormals). */
static tf_tensor *input_matrix(int size) {
  double a = sqrt(3.0 / size);
  return tt_rand(TF_FLOAT32, tf_shape_of(2, size, size), -a, a);
}

/* n MatMuls in two chains of MatMul(prev, x) from x (a Const when
 * placeholder is false, else a Placeholder 'x'); the chains' ends are
 * retvals 0 and 1 (executor graphs) or the nodes 'end0' and 'end1'. */
static tf_graph *matmul_graph(int n, int size, bool placeholder) {
  tf_graph *g = tf_graph_new();
  tf_node *x = placeholder ? tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, size, size))
                           : tt_const(g, "x", input_matrix(size));
  for (int c = 0; c < 2; c++) {
    tf_node *cur = x;
    int len = n / 2 + (c == 0 ? n % 2 : 0);
    for (int i = 0; i < len; i++) {
      char name[32];
      if (i == len - 1 && placeholder) {
        snprintf(name, sizeof name, "end%d", c);
      } else {
        snprintf(name, sizeof name, "mm%d_%d", c, i);
      }
      cur = tt_node(g, "MatMul", name, (tf_output[]){{cur, 0}, {x, 0}}, 2, NULL, 0);
    }
    if (!placeholder) retval(g, c == 0 ? "ret0" : "ret1", o0(cur), c);
  }
  return g;
}

/* The best of 3 times (ms) of one MatMul of size x size, inline. */
static double matmul_ms(int size) {
  tf_graph *g = matmul_graph(1, size, false);
  tf_executor *e = executor(g, NULL);
  double best = INFINITY;
  for (int r = 0; r < 3; r++) {
    step s;
    step_init(&s, 0, 2);
    tf_status st;
    int64_t t0 = tf__now_ns();
    ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
    double ms = (double)(tf__now_ns() - t0) / 1e6;
    best = ms < best ? ms : best;
    step_fini(&s);
  }
  tf_executor_free(e);
  tf_graph_free(g);
  return best;
}

/* The smallest size (from 64, growing by 2^(1/3), at most 1024) whose
 * MatMul takes at least target_ms; *ms gets its time. */
static int matmul_size_for(double target_ms, double *ms) {
  int size = 64;
  for (;;) {
    *ms = matmul_ms(size);
    if (*ms >= target_ms || size >= 1024) return size;
    size = (int)(size * 1.26) + 1;
  }
}

/* The graph for n nodes, its deadline (ms) and one kernel's time (ms);
 * *size gets the MatMul size (0 for the queue). */
typedef struct sized {
  int n, size;
  double kernel_ms;
  int64_t deadline_ms;
} sized;

static sized size_for(int n) {
  sized z = {.n = n};
  if (n == 1) {
    z.deadline_ms = 150;
    return z;
  }
  double target = n <= 10 ? 5.0 : (n <= 100 ? 3.0 : 1.0);
  z.size = matmul_size_for(target, &z.kernel_ms);
  double one_thread_ms = n * z.kernel_ms;
  z.deadline_ms = (int64_t)(one_thread_ms / 6);
  if (z.deadline_ms < 5) z.deadline_ms = 5;
  return z;
}

/* ---- one run --------------------------------------------------------------- */

typedef struct async_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int64_t at_ns;
  tf_status st;
} async_wait;

static void on_done(void *arg, const tf_status *st) {
  async_wait *w = arg;
  pthread_mutex_lock(&w->mu);
  w->st = *st;
  w->at_ns = tf__now_ns();
  w->done = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Runs one step of e with a deadline deadline_ms from now, synchronously
 * or not; returns its code, the status in *st and the wall time in *ms. */
static tf_code run_once(tf_executor *e, bool async, int64_t deadline_ms,
                        int64_t *ms, tf_status *st) {
  step s;
  step_init(&s, 0, 2);
  int64_t t0 = tf__now_ns(), deadline = t0 + deadline_ms * 1000000;
  tf_code rc;
  if (!async) {
    rc = tf_executor_run(e, &s.ctx, NULL, deadline, st);
    *ms = (tf__now_ns() - t0) / 1000000;
  } else {
    async_wait w = {.done = false};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    tf_executor_run_async(e, &s.ctx, NULL, deadline, on_done, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    *st = w.st;
    rc = w.st.code;
    *ms = (w.at_ns - t0) / 1000000;
  }
  step_fini(&s);
  return rc;
}

/* Asserts that a deadline error names the deadline; returns whether it
 * names a node of type op as the last to start (it says "no node had
 * started" instead when the thread that starts the step was descheduled
 * past the deadline, so this is required of one attempt in ATTEMPTS). */
static bool check_message(const char *msg, const sized *z, const char *op) {
  char want[64];
  snprintf(want, sizeof want, "deadline (%lld ms after it started)",
           (long long)z->deadline_ms);
  ck_assert_msg(strstr(msg, want) != NULL, "'%s' lacks '%s'", msg, want);
  snprintf(want, sizeof want, "' (%s)", op);
  if (strstr(msg, "; no node had started") != NULL) return false;
  ck_assert_msg(strstr(msg, "the last to start was '") != NULL && strstr(msg, want) != NULL,
                "'%s' does not name the %s that started last", msg, op);
  return true;
}

/* Runs n-node graphs every executor way, ATTEMPTS times each. */
static void executor_case(int n) {
  sized z = size_for(n);
  tf_graph *g = n == 1 ? queue_graph() : matmul_graph(n, z.size, false);
  tf_workq *q = tf_workq_new(2, "deadline");
  for (int way = 0; way < 4; way++) {
    bool async = way & 1, pooled = way & 2;
    tf_executor *e = executor(g, pooled ? q : NULL);
    int64_t best = INT64_MAX;
    int named = 0;
    for (int a = 0; a < ATTEMPTS; a++) {
      tf_status st;
      int64_t ms;
      tf_code rc = run_once(e, async, z.deadline_ms, &ms, &st);
      ck_assert_msg(rc == TF_DEADLINE_EXCEEDED, "%d nodes, %s, %s: %s after %lld ms "
                    "(deadline %lld ms, one kernel %.1f ms)", n, async ? "async" : "sync",
                    pooled ? "pool" : "inline", rc == TF_OK ? "OK" : st.msg,
                    (long long)ms, (long long)z.deadline_ms, z.kernel_ms);
      ck_assert_msg(ms >= z.deadline_ms, "%d nodes: ended after %lld ms, before the "
                    "deadline of %lld ms", n, (long long)ms, (long long)z.deadline_ms);
      named += check_message(st.msg, &z, n == 1 ? "QueueDequeue" : "MatMul");
      best = ms < best ? ms : best;
    }
    ck_assert_msg(named > 0, "%d nodes: no error named the node that started last", n);
    ck_assert_msg(best <= z.deadline_ms + SLACK_MS, "%d nodes, %s, %s: the best of %d "
                  "runs took %lld ms, deadline %lld ms (one kernel %.1f ms, size %d)",
                  n, async ? "async" : "sync", pooled ? "pool" : "inline", ATTEMPTS,
                  (long long)best, (long long)z.deadline_ms, z.kernel_ms, z.size);
    tf_executor_free(e);
  }
  ck_assert_int_eq(tf__timer_pending(), 0);
  tf_workq_free(q);
  tf_graph_free(g);
}

START_TEST(test_executor_sizes) { executor_case(sizes[_i]); }
END_TEST

/* ---- the local session ------------------------------------------------------ */

static tf_code session_run_timed(tf_session *s, const sized *z, tf_tensor *x,
                                 int64_t *ms, tf_status *st) {
  const char *feed = "x", *fetch1 = "dq", *fetch2[] = {"end0", "end1"};
  tf_tensor *out[2] = {NULL, NULL};
  tf_run_options o = {.timeout_ms = z->deadline_ms};
  int64_t t0 = tf__now_ns();
  tf_code rc = z->n == 1
                   ? tf_session_run(s, &o, NULL, NULL, 0, &fetch1, out, 1, NULL, 0, NULL, st)
                   : tf_session_run(s, &o, &feed, &x, 1, fetch2, out, 2, NULL, 0, NULL, st);
  *ms = (tf__now_ns() - t0) / 1000000;
  tf_tensor_unref(out[0]);
  tf_tensor_unref(out[1]);
  return rc;
}

static void session_case(int n) {
  sized z = size_for(n);
  tf_graph *g = n == 1 ? queue_graph() : matmul_graph(n, z.size, true);
  tf_tensor *x = n == 1 ? NULL : input_matrix(z.size);
  for (int threads = 1; threads <= 2; threads++) {
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads};
    tf_session *s = tf_session_new(g, &so, &st);
    ck_assert_msg(s != NULL, "%s", st.msg);
    int64_t best = INT64_MAX;
    int named = 0;
    for (int a = 0; a < ATTEMPTS; a++) {
      int64_t ms;
      tf_code rc = session_run_timed(s, &z, x, &ms, &st);
      ck_assert_msg(rc == TF_DEADLINE_EXCEEDED, "%d nodes, %d threads: %s after %lld ms "
                    "(timeout_ms %lld)", n, threads, rc == TF_OK ? "OK" : st.msg,
                    (long long)ms, (long long)z.deadline_ms);
      ck_assert_msg(ms >= z.deadline_ms, "%d nodes: ended after %lld ms, before "
                    "timeout_ms=%lld", n, (long long)ms, (long long)z.deadline_ms);
      char want[48];
      snprintf(want, sizeof want, "Run exceeded timeout_ms=%lld", (long long)z.deadline_ms);
      ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' lacks '%s'", st.msg, want);
      named += check_message(st.msg, &z, n == 1 ? "QueueDequeue" : "MatMul");
      best = ms < best ? ms : best;
    }
    ck_assert_msg(named > 0, "%d nodes: no error named the node that started last", n);
    ck_assert_msg(best <= z.deadline_ms + SLACK_MS, "%d nodes, %d threads: the best of "
                  "%d Runs took %lld ms, timeout_ms %lld (one kernel %.1f ms)", n, threads,
                  ATTEMPTS, (long long)best, (long long)z.deadline_ms, z.kernel_ms);
    tf_session_free(s);
  }
  tf_tensor_unref(x);
  tf_graph_free(g);
}

START_TEST(test_session_sizes) { session_case(sizes[_i]); }
END_TEST

/* ---- edges ------------------------------------------------------------------ */

/* A deadline that has passed before the step starts: nothing runs, the
 * step ends at once with DEADLINE_EXCEEDED, sync and async. */
START_TEST(test_deadline_already_passed) {
  tf_graph *g = matmul_graph(4, 64, false);
  tf_executor *e = executor(g, NULL);
  for (int async = 0; async < 2; async++) {
    int64_t ms;
    tf_status st;
    ck_assert_int_eq(run_once(e, async, 0, &ms, &st), TF_DEADLINE_EXCEEDED);
    ck_assert_msg(ms < SLACK_MS, "took %lld ms", (long long)ms);
    ck_assert_msg(strstr(st.msg, "deadline had passed") != NULL, "%s", st.msg);
  }
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

/* A step that finishes before its deadline is OK, and its timer is
 * disarmed at once (none left armed), so it can be freed right away. */
START_TEST(test_deadline_not_reached) {
  tf_graph *g = matmul_graph(4, 64, false);
  tf_workq *q = tf_workq_new(2, "deadline");
  for (int way = 0; way < 4; way++) {
    tf_executor *e = executor(g, (way & 2) ? q : NULL);
    for (int r = 0; r < 50; r++) {
      int64_t ms;
      tf_status st;
      ck_assert_msg(run_once(e, way & 1, 60000, &ms, &st) == TF_OK, "%s", st.msg);
    }
    ck_assert_int_eq(tf__timer_pending(), 0);
    tf_executor_free(e);
  }
  tf_workq_free(q);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  /* Before any GEMM; the forked tests inherit both (cpu_blas.c leaves the
   * thread count alone when the variable is set). */
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  openblas_set_num_threads(1);
  Suite *s = suite_create("executor_deadline");
  TCase *tc = tcase_create("deadline");
  tcase_add_checked_fixture(tc, exec_setup, exec_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_executor_sizes, 0, (int)TF_ARRAY_LEN(sizes));
  tcase_add_loop_test(tc, test_session_sizes, 0, (int)TF_ARRAY_LEN(sizes));
  tcase_add_test(tc, test_deadline_already_passed);
  tcase_add_test(tc, test_deadline_not_reached);
  suite_add_tcase(s, tc);
  return s;
}
