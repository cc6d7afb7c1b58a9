/* executor_step_test.c: running steps: asynchronous kernels that hold no
 * thread, completions inline and from other threads, cancellation, the
 * deadline (on blocked steps, long chains of cheap nodes and short chains
 * of slow ones), the first error winning, and sessions staying usable.
 *
 * Test-only ops registered here:
 *   TestLatchWait  async; completes when TestLatchOpen runs (or on cancel)
 *   TestLatchOpen  opens the latch
 *   TestBlock      async; completes only when its step is cancelled
 *   TestInlineDone async; calls done before compute_async returns
 *   TestLaterDone  async; a new thread sets the output and calls done
 *   TestFail       fails with the code in attr "code" */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/base/cancel.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static const tf_op_spec test_ops[] = {
    {.name = "TestLatchWait", .outputs = {"out: float"}, .flags = TF_OP_ASYNC | TF_OP_STATEFUL,
     .doc = "test"},
    {.name = "TestLatchOpen", .flags = TF_OP_STATEFUL, .doc = "test"},
    {.name = "TestBlock", .outputs = {"out: float"}, .flags = TF_OP_ASYNC | TF_OP_STATEFUL,
     .doc = "test"},
    {.name = "TestInlineDone", .inputs = {"x: float"}, .outputs = {"y: float"},
     .flags = TF_OP_ASYNC, .doc = "test"},
    {.name = "TestLaterDone", .inputs = {"x: float"}, .outputs = {"y: float"},
     .flags = TF_OP_ASYNC, .doc = "test"},
    {.name = "TestFail", .inputs = {"x: float"}, .outputs = {"y: float"},
     .attrs = {"code: int = 3"}, .doc = "test"},
};
TF_REGISTER_OPS("test", test_ops)

/* ---- a latch: one waiter, opened by another node ------------------------- */

static pthread_mutex_t latch_mu = PTHREAD_MUTEX_INITIALIZER;
static tf_kernel_ctx *latch_ctx;
static void (*latch_done)(void *);
static void *latch_arg;
static bool latch_open;

static void latch_wait(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  pthread_mutex_lock(&latch_mu);
  if (latch_open) {
    pthread_mutex_unlock(&latch_mu);
    tf_kernel_set_output(ctx, 0, tf_tensor_scalar_f32(7));
    tf_tensor_unref(ctx->outputs[0]);
    done(arg);
    return;
  }
  latch_ctx = ctx;
  latch_done = done;
  latch_arg = arg;
  pthread_mutex_unlock(&latch_mu);
}

static tf_code latch_release(tf_kernel_ctx *ctx) {
  pthread_mutex_lock(&latch_mu);
  latch_open = true;
  tf_kernel_ctx *w = latch_ctx;
  void (*done)(void *) = latch_done;
  void *arg = latch_arg;
  latch_ctx = NULL;
  pthread_mutex_unlock(&latch_mu);
  if (w != NULL) {
    tf_tensor *v = tf_tensor_scalar_f32(7);
    tf_kernel_set_output(w, 0, v);
    tf_tensor_unref(v);
    done(arg);
  }
  (void)ctx;
  return TF_OK;
}

/* ---- blocked until cancelled ---------------------------------------------- */

typedef struct blocked {
  tf_kernel_ctx *ctx;
  void (*done)(void *);
  void *arg;
} blocked;

static void block_cancelled(void *p) {
  blocked *b = p;
  tf_kernel_error(b->ctx, TF_CANCELLED, "blocked op cancelled");
  void (*done)(void *) = b->done;
  void *arg = b->arg;
  free(b);
  done(arg);
}

static void block_compute(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  blocked *b = tf__xmalloc(sizeof *b);
  *b = (blocked){ctx, done, arg};
  if (tf_cancel_register(ctx->step->cancel, block_cancelled, b) == 0) {
    block_cancelled(b);
  }
}

/* ---- async that completes inline or later -------------------------------- */

static void inline_done(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  done(arg);
}

typedef struct later {
  tf_kernel_ctx *ctx;
  void (*done)(void *);
  void *arg;
} later;

static void *later_main(void *p) {
  later *l = p;
  usleep(1000);
  tf_tensor *out = NULL;
  tf_status st;
  if (tf_tensor_copy(l->ctx->inputs[0], &out, &st) == TF_OK) {
    ((float *)out->data)[0] += 1.0f;
    tf_kernel_set_output(l->ctx, 0, out);
    tf_tensor_unref(out);
  } else {
    tf_kernel_error(l->ctx, st.code, "%s", st.msg);
  }
  l->done(l->arg);
  free(l);
  return NULL;
}

static void later_done(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  later *l = tf__xmalloc(sizeof *l);
  *l = (later){ctx, done, arg};
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &at, later_main, l) != 0) later_main(l);
  pthread_attr_destroy(&at);
}

static tf_code fail_compute(tf_kernel_ctx *ctx) {
  int64_t code = 3;
  tf_node_attr_get_int(ctx->node, "code", &code, NULL);
  return tf_kernel_error(ctx, (tf_code)code, "failing on purpose");
}

static const tf_kernel_def test_kernels[] = {
    {.op = "TestLatchWait", .device_type = TF_DEVICE_CPU, .compute_async = latch_wait},
    {.op = "TestLatchOpen", .device_type = TF_DEVICE_CPU, .compute = latch_release},
    {.op = "TestBlock", .device_type = TF_DEVICE_CPU, .compute_async = block_compute},
    {.op = "TestInlineDone", .device_type = TF_DEVICE_CPU, .compute_async = inline_done},
    {.op = "TestLaterDone", .device_type = TF_DEVICE_CPU, .compute_async = later_done},
    {.op = "TestFail", .device_type = TF_DEVICE_CPU, .compute = fail_compute},
};
TF_REGISTER_KERNELS(test_kernels)

/* ---- helpers --------------------------------------------------------------- */

static tf_node *node(tf_graph *g, const char *op, const char *name,
                     const tf_node *in, const tf_node *ctrl) {
  tf_node *n = tt_node(g, op, name, &(tf_output){(tf_node *)in, 0}, in != NULL, NULL, 0);
  if (ctrl != NULL) tf__node_add_control(n, (tf_node *)ctrl);
  return n;
}

static tf_node *cnst(tf_graph *g, const char *name, float v) {
  return tt_const(g, name, tf_tensor_scalar_f32(v));
}

static tf_code run1(tf_session *s, const char *fetch, const char *target,
                    int64_t timeout_ms, tf_tensor **out, tf_status *st) {
  tf_run_options o = {.timeout_ms = timeout_ms};
  return tf_session_run(s, &o, NULL, NULL, 0, fetch ? &fetch : NULL, out,
                        fetch ? 1 : 0, target ? &target : NULL, target ? 1 : 0,
                        NULL, st);
}

/* The waiting node holds no thread: with ONE inter-op thread, the node
 * that opens the latch still runs while the waiter is pending. A blocking
 * executor would deadlock here (the timeout turns that into a failure). */
START_TEST(test_async_holds_no_thread) {
  tf_graph *g = tf_graph_new();
  node(g, "TestLatchWait", "wait", NULL, NULL);
  node(g, "TestLatchOpen", "open", NULL, NULL);
  int threads[] = {1, 3};
  for (int k = 0; k < 2; k++) {
    latch_open = false;
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads[k]};
    tf_session *s = tf_session_new(g, &so, &st);
    const char *fetch = "wait", *target = "open";
    tf_run_options o = {.timeout_ms = 5000};
    tf_tensor *out = NULL;
    ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, &fetch, &out, 1, &target, 1, NULL, &st) == TF_OK,
                  "%s", st.msg);
    ck_assert_double_eq(tf_tensor_get_f64(out, 0), 7.0);
    tf_tensor_unref(out);
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

/* A step blocked forever ends with DEADLINE_EXCEEDED soon after its
 * timeout, and the next Run on the session works. */
START_TEST(test_deadline_blocked) {
  tf_graph *g = tf_graph_new();
  node(g, "TestBlock", "block", NULL, NULL);
  cnst(g, "c", 3);
  int threads[] = {1, 2};
  for (int k = 0; k < 2; k++) {
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads[k]};
    tf_session *s = tf_session_new(g, &so, &st);
    tf_tensor *out = NULL;
    int64_t t0 = tf__now_ns();
    ck_assert_int_eq(run1(s, "block", NULL, 100, &out, &st), TF_DEADLINE_EXCEEDED);
    int64_t ms = (tf__now_ns() - t0) / 1000000;
    ck_assert_msg(ms >= 95 && ms < 2000, "took %lld ms", (long long)ms);
    ck_assert_msg(strstr(st.msg, "timeout_ms=100") != NULL, "%s", st.msg);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(run1(s, "c", NULL, 1000, &out, &st), TF_OK);
    ck_assert_double_eq(tf_tensor_get_f64(out, 0), 3.0);
    tf_tensor_unref(out);
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

/* A CPU-bound step (a long chain of real kernels) also stops at its
 * deadline, single-threaded (the ready loop polls the clock) and with the
 * pool (the waiting caller cancels). */
START_TEST(test_deadline_busy) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 128, 128));
  tf_node *cur = x;
  for (int i = 0; i < 4000; i++) {
    tf_status st;
    tf_node_builder *b = tf_node_begin(g, "MatMul", NULL);
    tf_node_add_input(b, (tf_output){cur, 0});
    tf_node_add_input(b, (tf_output){x, 0});
    cur = tf_node_finish(b, &st);
    ck_assert_msg(cur != NULL, "%s", st.msg);
  }
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 128, 128), -0.01, 0.01);
  int threads[] = {1, 2};
  for (int k = 0; k < 2; k++) {
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads[k]};
    tf_session *s = tf_session_new(g, &so, &st);
    const char *fn = "x", *on = tf_node_name(cur);
    tf_run_options o = {.timeout_ms = 50};
    tf_tensor *out = NULL;
    int64_t t0 = tf__now_ns();
    ck_assert_int_eq(tf_session_run(s, &o, &fn, &in, 1, &on, &out, 1, NULL, 0, NULL, &st),
                     TF_DEADLINE_EXCEEDED);
    int64_t ms = (tf__now_ns() - t0) / 1000000;
    /* Ran past 50 ms by at most a few dozen nodes (generous for ASan). */
    ck_assert_msg(ms < 1500, "took %lld ms", (long long)ms);
    tf_session_free(s);
  }
  tf_tensor_unref(in);
  tf_graph_free(g);
}
END_TEST

/* x -> MatMul(x, x) -> MatMul(., x) ... n times: a short chain of slow
 * kernels. Returns the last node. */
static tf_node *matmul_chain(tf_graph *g, tf_node *x, int n) {
  tf_node *cur = x;
  for (int i = 0; i < n; i++) {
    tf_status st;
    tf_node_builder *b = tf_node_begin(g, "MatMul", NULL);
    tf_node_add_input(b, (tf_output){cur, 0});
    tf_node_add_input(b, (tf_output){x, 0});
    cur = tf_node_finish(b, &st);
    ck_assert_msg(cur != NULL, "%s", st.msg);
  }
  return cur;
}

/* Runs fetch with x fed and the timeout; returns the code, *ms the time. */
static tf_code run_timed(tf_session *s, tf_node *fetch, tf_tensor *x, int64_t timeout_ms,
                         int64_t *ms, tf_status *st) {
  const char *fn = "x", *on = tf_node_name(fetch);
  tf_run_options o = {.timeout_ms = timeout_ms};
  tf_tensor *out = NULL;
  int64_t t0 = tf__now_ns();
  tf_code rc = tf_session_run(s, &o, &fn, &x, 1, &on, &out, 1, NULL, 0, NULL, st);
  *ms = (tf__now_ns() - t0) / 1000000;
  tf_tensor_unref(out);
  return rc;
}

/* A small graph (40 MatMuls of 1024x1024, far fewer nodes than a batch of
 * cheap ones) stops at its deadline too: the thread that runs the chain
 * inline reads the clock before each node. The deadline is 4 MatMuls'
 * time, so the whole chain would take about 10 deadlines. */
START_TEST(test_deadline_small_slow_graph) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 1024, 1024));
  tf_node *one = matmul_chain(g, x, 1);
  tf_node *last = matmul_chain(g, x, 40);
  /* Entries uniform in +-sqrt(3)/32 (variance 1/1024): the chain's powers
   * keep their scale, so no MatMul slows down on subnormal floats. */
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 1024, 1024), -0.0541, 0.0541);
  int threads[] = {1, 2};
  for (int k = 0; k < 2; k++) {
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads[k]};
    tf_session *s = tf_session_new(g, &so, &st);
    int64_t t1 = INT64_MAX, ms;
    for (int r = 0; r < 3; r++) { /* one MatMul's time, the best of 3 */
      ck_assert_msg(run_timed(s, one, in, 0, &ms, &st) == TF_OK, "%s", st.msg);
      t1 = ms < t1 ? ms : t1;
    }
    t1 = t1 > 1 ? t1 : 1;
    int64_t deadline = t1 * 4 > 50 ? t1 * 4 : 50;
    tf_code rc = run_timed(s, last, in, deadline, &ms, &st);
    ck_assert_msg(rc == TF_DEADLINE_EXCEEDED, "threads %d: %s after %lld ms (deadline %lld "
                  "ms, one MatMul %lld ms)", threads[k], rc == TF_OK ? "OK" : st.msg,
                  (long long)ms, (long long)deadline, (long long)t1);
    /* Past the deadline by at most the kernel running then, with slack
     * for a loaded machine; far from the ~40 MatMuls of the whole chain. */
    ck_assert_msg(ms >= deadline - 1 && ms < deadline + 3 * t1 + 250,
                  "threads %d: took %lld ms (deadline %lld ms, one MatMul %lld ms)",
                  threads[k], (long long)ms, (long long)deadline, (long long)t1);
    tf_session_free(s);
  }
  tf_tensor_unref(in);
  tf_graph_free(g);
}
END_TEST

typedef struct closer {
  tf_session *s;
} closer;

static void *close_later(void *p) {
  closer *c = p;
  usleep(50000);
  tf_session_close(c->s, NULL);
  return NULL;
}

/* Closing the session cancels a blocked step with CANCELLED. */
START_TEST(test_close_cancels) {
  tf_graph *g = tf_graph_new();
  node(g, "TestBlock", "block", NULL, NULL);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  pthread_t th;
  closer c = {s};
  pthread_create(&th, NULL, close_later, &c);
  tf_tensor *out = NULL;
  ck_assert_int_eq(run1(s, "block", NULL, 10000, &out, &st), TF_CANCELLED);
  ck_assert_msg(strstr(st.msg, "closed") != NULL, "%s", st.msg);
  pthread_join(th, NULL);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* 20,000 async nodes in a chain that complete inline: no recursion, the
 * values flow; and a chain completing from other threads. */
START_TEST(test_async_chains) {
  const char *ops[] = {"TestInlineDone", "TestLaterDone"};
  int lens[] = {20000, 50};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_node *cur = cnst(g, "c", 1);
    for (int i = 0; i < lens[k]; i++) cur = node(g, ops[k], NULL, cur, NULL);
    for (int threads = 1; threads <= 2; threads++) {
      tf_status st;
      tf_session_options so = {.inter_op_threads = threads};
      tf_session *s = tf_session_new(g, &so, &st);
      tf_tensor *out = NULL;
      ck_assert_msg(run1(s, tf_node_name(cur), NULL, 20000, &out, &st) == TF_OK, "%s", st.msg);
      ck_assert_double_eq(tf_tensor_get_f64(out, 0), k == 0 ? 1.0 : 1.0 + lens[k]);
      tf_tensor_unref(out);
      tf_session_free(s);
    }
    tf_graph_free(g);
  }
}
END_TEST

/* An error ends the step: later nodes do not run, a blocked node is
 * cancelled, the status is the kernel's (not CANCELLED), and the session
 * keeps working. */
START_TEST(test_error_cancels_step) {
  tf_graph *g = tf_graph_new();
  tf_node *c = cnst(g, "c", 1);
  tf_node *f = node(g, "TestFail", "fail", c, NULL);
  node(g, "Neg", "after", f, NULL);
  node(g, "TestBlock", "block", NULL, NULL);
  for (int threads = 1; threads <= 2; threads++) {
    tf_status st;
    tf_session_options so = {.inter_op_threads = threads};
    tf_session *s = tf_session_new(g, &so, &st);
    const char *fetch[] = {"after", "block"};
    tf_tensor *out[2] = {NULL, NULL};
    tf_run_options o = {.timeout_ms = 10000};
    tf_run_metadata md;
    o.trace = true;
    ck_assert_int_eq(tf_session_run(s, &o, NULL, NULL, 0, fetch, out, 2, NULL, 0, &md, &st),
                     TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "fail") && strstr(st.msg, "on purpose"), "%s", st.msg);
    for (int i = 0; i < md.n_timings; i++) ck_assert_str_ne(md.timings[i].node, "after");
    tf_run_metadata_fini(&md);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    ck_assert_int_eq(run1(s, "c", NULL, 1000, out, &st), TF_OK);
    tf_tensor_unref(out[0]);
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

/* Two failing nodes: the step reports exactly one of their errors. */
START_TEST(test_first_error_wins) {
  tf_graph *g = tf_graph_new();
  tf_node *c = cnst(g, "c", 1);
  tf_node_builder *b = tf_node_begin(g, "TestFail", "f1");
  tf_node_add_input(b, (tf_output){c, 0});
  tf_node_set_attr(b, "code", tf_attr_int(TF_OUT_OF_RANGE));
  tf_status st;
  ck_assert_ptr_nonnull(tf_node_finish(b, &st));
  b = tf_node_begin(g, "TestFail", "f2");
  tf_node_add_input(b, (tf_output){c, 0});
  tf_node_set_attr(b, "code", tf_attr_int(TF_DATA_LOSS));
  ck_assert_ptr_nonnull(tf_node_finish(b, &st));
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *targets[] = {"f1", "f2"};
  for (int i = 0; i < 20; i++) {
    tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, targets, 2, NULL, &st);
    ck_assert(rc == TF_OUT_OF_RANGE || rc == TF_DATA_LOSS);
    ck_assert_msg(strstr(st.msg, rc == TF_OUT_OF_RANGE ? "f1" : "f2") != NULL, "%s", st.msg);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST


/* A node reading two variables where the second is uninitialized: the
 * first read is released, the error names the second, nothing leaks
 * (checked under ASan), and after initializing it the same Run works. */
START_TEST(test_deref_failure) {
  tf_graph *g = tf_graph_new();
  tf_node *v[2];
  const char *names[2] = {"v_ok", "v_uninit"};
  for (int i = 0; i < 2; i++) {
    tf_attr_kv attrs[] = {{"shape", tf_attr_shape(tf_shape_of(1, 4))},
                          {"dtype", tf_attr_type_v(TF_FLOAT32)}};
    v[i] = tt_node(g, "VariableV2", names[i], NULL, 0, attrs, 2);
  }
  float ones[4] = {1, 1, 1, 1};
  tf_node *init[2];
  for (int i = 0; i < 2; i++) {
    tf_node *c = tt_const(g, NULL, tf_tensor_vec_f32(4, ones));
    tf_output in[2] = {{v[i], 0}, {c, 0}};
    init[i] = tt_node(g, "Assign", NULL, in, 2, NULL, 0);
  }
  /* v_uninit in the middle: the read after it must never happen. */
  tf_output in[3] = {{v[0], 0}, {v[1], 0}, {v[0], 0}};
  tf_status st;
  tf_node_builder *nb = tf_node_begin(g, "AddN", "sum");
  tf_node_add_input_list(nb, in, 3);
  ck_assert_msg(tf_node_finish(nb, &st) != NULL, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_tensor *out = NULL;
  ck_assert_int_eq(run1(s, NULL, tf_node_name(init[0]), 1000, &out, &st), TF_OK);
  ck_assert_int_eq(run1(s, "sum", NULL, 1000, &out, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "v_uninit") != NULL, "%s", st.msg);
  ck_assert_int_eq(run1(s, NULL, tf_node_name(init[1]), 1000, &out, &st), TF_OK);
  ck_assert_int_eq(run1(s, "sum", NULL, 1000, &out, &st), TF_OK);
  ck_assert_double_eq(tf_tensor_get_f64(out, 3), 3.0);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("executor_step");
  TCase *tc = tcase_create("step");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_async_holds_no_thread);
  tcase_add_test(tc, test_deadline_blocked);
  tcase_add_test(tc, test_deadline_busy);
  tcase_add_test(tc, test_deadline_small_slow_graph);
  tcase_add_test(tc, test_close_cancels);
  tcase_add_test(tc, test_async_chains);
  tcase_add_test(tc, test_error_cancels_step);
  tcase_add_test(tc, test_first_error_wins);
  tcase_add_test(tc, test_deref_failure);
  suite_add_tcase(s, tc);
  return s;
}
