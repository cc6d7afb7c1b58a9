/* executor_responsive_test.c: which thread runs a node. A thread marked
 * responsive (tf_thread_set_responsive: a transport's callback thread)
 * that starts a step runs its cheap roots in place and hands expensive
 * ones to the runner; an asynchronous kernel completed from another thread
 * has its cheap successors run on that thread at once (marked responsive
 * meanwhile) and its expensive ones on the runner; an unmarked caller
 * keeps running an expensive root itself, as before.
 *
 * Test-only ops registered here:
 *   TestWhereCheap  x -> x, a cheap kernel; records its thread
 *   TestWhereDear   x -> x, an expensive kernel; records its thread
 *   TestOtherThread async; a new thread sets the output and completes it */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/base/workqueue.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static const tf_op_spec test_ops[] = {
    {.name = "TestWhereCheap", .inputs = {"x: float"}, .outputs = {"y: float"},
     .attrs = {"slot: int"}, .flags = TF_OP_STATEFUL, .doc = "test"},
    {.name = "TestWhereDear", .inputs = {"x: float"}, .outputs = {"y: float"},
     .attrs = {"slot: int"}, .flags = TF_OP_STATEFUL, .doc = "test"},
    {.name = "TestOtherThread", .inputs = {"x: float"}, .outputs = {"y: float"},
     .flags = TF_OP_ASYNC, .doc = "test"},
};
TF_REGISTER_OPS("test", test_ops)

/* Where each node ran: its thread and whether that thread was responsive. */
typedef struct seen {
  pthread_t thread;
  bool responsive;
  bool ran;
} seen;

enum { N_SLOTS = 4 };
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static seen slots[N_SLOTS];
static pthread_t other_thread; /* TestOtherThread's completing thread */

static tf_code where_compute(tf_kernel_ctx *ctx) {
  int64_t slot = -1;
  tf_node_attr_get_int(ctx->node, "slot", &slot, NULL);
  ck_assert(slot >= 0 && slot < N_SLOTS);
  pthread_mutex_lock(&seen_mu);
  slots[slot] = (seen){pthread_self(), tf_thread_is_responsive(), true};
  pthread_mutex_unlock(&seen_mu);
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

typedef struct other {
  tf_kernel_ctx *ctx;
  void (*done)(void *);
  void *arg;
} other;

static void *other_main(void *p) {
  other *o = p;
  pthread_mutex_lock(&seen_mu);
  other_thread = pthread_self();
  pthread_mutex_unlock(&seen_mu);
  tf_kernel_set_output(o->ctx, 0, o->ctx->inputs[0]);
  o->done(o->arg);
  free(o);
  return NULL;
}

static void other_compute(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  other *o = tf__xmalloc(sizeof *o);
  *o = (other){ctx, done, arg};
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  ck_assert_int_eq(pthread_create(&th, &at, other_main, o), 0);
  pthread_attr_destroy(&at);
}

static const tf_kernel_def test_kernels[] = {
    {.op = "TestWhereCheap", .device_type = TF_DEVICE_CPU, .compute = where_compute,
     .flags = TF_KERNEL_CHEAP},
    {.op = "TestWhereDear", .device_type = TF_DEVICE_CPU, .compute = where_compute},
    {.op = "TestOtherThread", .device_type = TF_DEVICE_CPU, .compute_async = other_compute},
};
TF_REGISTER_KERNELS(test_kernels)

static tf_node *where(tf_graph *g, const char *op, const char *name, tf_node *in,
                      int slot) {
  tf_attr_kv kv[] = {{"slot", tf_attr_int(slot)}};
  return tt_node(g, op, name, &(tf_output){in, 0}, 1, kv, 1);
}

/* Runs g on a session with 2 inter-op threads, fetching `fetch`, and
 * targeting `target` (NULL: none), from this thread marked responsive or
 * not. */
static void run(tf_graph *g, const char *fetch, const char *target, bool responsive) {
  memset(slots, 0, sizeof slots);
  tf_status st;
  tf_session_options so = {.inter_op_threads = 2};
  tf_session *s = tf_session_new(g, &so, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  tf_run_options o = {.timeout_ms = 10000};
  tf_tensor *out = NULL;
  bool was = tf_thread_set_responsive(responsive);
  tf_code rc = tf_session_run(s, &o, NULL, NULL, 0, &fetch, &out, 1, target ? &target : NULL,
                              target ? 1 : 0, NULL, &st);
  tf_thread_set_responsive(was);
  ck_assert_msg(rc == TF_OK, "%s", st.msg);
  ck_assert_double_eq(tf_tensor_get_f64(out, 0), 3.0);
  tf_tensor_unref(out);
  tf_session_free(s);
}

/* Two roots fed by one constant: cheap (slot 0) and expensive (slot 1). */
static tf_graph *two_roots(void) {
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(3));
  where(g, "TestWhereCheap", "cheap", c, 0);
  where(g, "TestWhereDear", "dear", c, 1);
  return g;
}

START_TEST(responsive_caller_keeps_only_cheap_nodes) {
  tf_graph *g = two_roots();
  pthread_t me = pthread_self();
  run(g, "cheap", "dear", true);
  ck_assert(slots[0].ran && slots[1].ran);
  ck_assert_msg(pthread_equal(slots[0].thread, me), "the cheap node left the caller");
  ck_assert_msg(slots[0].responsive, "the caller's mark was lost");
  ck_assert_msg(!pthread_equal(slots[1].thread, me), "the expensive node ran on a "
                "responsive caller");
  ck_assert_msg(!slots[1].responsive, "a runner thread was marked responsive");
  tf_graph_free(g);
}
END_TEST

START_TEST(plain_caller_may_run_an_expensive_node) {
  /* One expensive node ready at a time: the caller runs it itself. */
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(3));
  where(g, "TestWhereDear", "dear", c, 1);
  pthread_t me = pthread_self();
  run(g, "dear", NULL, false);
  ck_assert(slots[1].ran);
  ck_assert(pthread_equal(slots[1].thread, me));
  ck_assert(!slots[1].responsive);
  tf_graph_free(g);
}
END_TEST

START_TEST(completion_runs_cheap_successors_in_place) {
  /* c -> TestOtherThread -> cheap (slot 0) -> expensive (slot 1), and the
   * async node's second successor, expensive (slot 2). */
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(3));
  tf_node *o = tt_node(g, "TestOtherThread", "other", &(tf_output){c, 0}, 1, NULL, 0);
  tf_node *cheap = where(g, "TestWhereCheap", "cheap", o, 0);
  where(g, "TestWhereDear", "after_cheap", cheap, 1);
  where(g, "TestWhereDear", "dear", o, 2);
  for (int k = 0; k < 2; k++) {
    pthread_t me = pthread_self();
    run(g, "after_cheap", "dear", k == 1);
    for (int i = 0; i < 3; i++) ck_assert_msg(slots[i].ran, "slot %d did not run", i);
    ck_assert_msg(pthread_equal(slots[0].thread, other_thread), "the cheap successor "
                  "did not run on the completing thread");
    ck_assert(slots[0].responsive);
    for (int i = 1; i < 3; i++) {
      ck_assert_msg(!pthread_equal(slots[i].thread, other_thread) &&
                        !pthread_equal(slots[i].thread, me),
                    "expensive node %d ran on the completing thread or the caller", i);
      ck_assert(!slots[i].responsive);
    }
  }
  ck_assert(!tf_thread_is_responsive());
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("executor_responsive");
  TCase *tc = tcase_create("responsive");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, responsive_caller_keeps_only_cheap_nodes);
  tcase_add_test(tc, plain_caller_may_run_an_expensive_node);
  tcase_add_test(tc, completion_runs_cheap_successors_in_place);
  suite_add_tcase(s, tc);
  return s;
}
