/* executor_test.c: tf_executor_new's checks and tf_executor_run used
 * directly (lib/core/exec/executor.h). Refused graphs, each error naming the
 * node: inputs from two frames (naming both frames, whichever input comes
 * first), an Exit in the root frame, one frame name entered from two
 * different frames, an op with no kernel for its dtype (NOT_FOUND). An
 * empty graph runs and completes (sync and async); a step cancelled before
 * it starts runs nothing; a kernel error ends the step naming the node;
 * one executor runs steps from 4 threads at once, with and without
 * inter-op threads, each step getting its own results. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "test/unit/core/exec/exec_testlib.h"

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static tf_status st;

/* ---- graph helpers ---------------------------------------------------------- */

static tf_node *op1(tf_graph *g, const char *op, const char *name, tf_output a) {
  return tt_node(g, op, name, &a, 1, NULL, 0);
}

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_output a,
                    tf_output b) {
  return tt_node(g, op, name, (tf_output[]){a, b}, 2, NULL, 0);
}

/* The head of a loop in frame `frame` over an int64 counter starting at
 * 0 (Enter, Merge, Less against an invariant limit, LoopCond, Switch).
 * Returns the Switch; *merge gets the Merge for the back edge. */
static tf_node *loop_head(tf_graph *g, const char *frame, tf_output start,
                          tf_output limit, tf_node **merge) {
  char name[64];
  snprintf(name, sizeof name, "%s_enter", frame);
  tf_node *en = enter(g, name, start, frame, false);
  snprintf(name, sizeof name, "%s_limit", frame);
  tf_node *lim = enter(g, name, limit, frame, true);
  snprintf(name, sizeof name, "%s_merge", frame);
  tf_node_builder *b = tf_node_begin(g, "Merge", name);
  tf_node_add_input_list(b, (tf_output[]){o0(en), o0(en)}, 2);
  *merge = tf_node_finish(b, &st);
  ck_assert_msg(*merge != NULL, "%s", st.msg);
  tf_node *less = op2(g, "Less", NULL, o0(*merge), o0(lim));
  tf_node *cond = op1(g, "LoopCond", NULL, o0(less));
  snprintf(name, sizeof name, "%s_switch", frame);
  return op2(g, "Switch", name, o0(*merge), o0(cond));
}

/* Closes the loop: NextIteration(body) into the Merge; Exit of the Switch. */
static tf_node *loop_tail(tf_graph *g, tf_node *merge, tf_node *sw, tf_node *body) {
  tf_node *next = op1(g, "NextIteration", NULL, o0(body));
  ck_assert_msg(tf__node_set_back_edge(merge, 1, o0(next), &st) == TF_OK, "%s", st.msg);
  return op1(g, "Exit", NULL, o0(sw));
}

/* ---- tf_executor_new errors ----------------------------------------------------------- */

static tf_code new_fails(const tf_graph *g) {
  tf_executor *e = (tf_executor *)1;
  tf_code rc = tf_executor_new(g, NULL, &e, &st);
  ck_assert_ptr_null(e);
  return rc;
}

/* i = 0; while (i < 3) i = i + one, where `one` is a root-frame Const read
 * directly inside the loop (not through an Enter). */
START_TEST(test_inputs_from_two_frames) {
  for (int order = 0; order < 2; order++) {
    tf_graph *g = tf_graph_new();
    tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
    tf_node *limit = tt_const(g, "limit", tf_tensor_scalar_i64(3));
    tf_node *one = tt_const(g, "outer_one", tf_tensor_scalar_i64(1));
    tf_node *merge;
    tf_node *sw = loop_head(g, "myloop", o0(zero), o0(limit), &merge);
    tf_output in = {sw, 1};
    tf_node *body = order ? op2(g, "Add", "mixed", o0(one), in) : op2(g, "Add", "mixed", in, o0(one));
    loop_tail(g, merge, sw, body);
    ck_assert_int_eq(new_fails(g), TF_INVALID_ARGUMENT);
    ASSERT_HAS(st.msg, "'mixed'");
    ASSERT_HAS(st.msg, "frame 'myloop'");
    ASSERT_HAS(st.msg, "root frame");
    ASSERT_HAS(st.msg, order ? "myloop_switch" : "outer_one");
    tf_graph_free(g);
  }
}
END_TEST

/* The same loop done right (the constant through an invariant Enter)
 * runs: the graph helpers build a valid loop. */
START_TEST(test_hand_built_loop_runs) {
  tf_graph *g = tf_graph_new();
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *limit = tt_const(g, "limit", tf_tensor_scalar_i64(5));
  tf_node *two = tt_const(g, "two", tf_tensor_scalar_i64(2));
  tf_node *merge;
  tf_node *sw = loop_head(g, "L", o0(zero), o0(limit), &merge);
  tf_node *two_e = enter(g, "two_enter", o0(two), "L", true);
  tf_node *body = op2(g, "Add", "body", (tf_output){sw, 1}, o0(two_e));
  tf_node *ex = loop_tail(g, merge, sw, body);
  retval(g, "r", o0(ex), 0);
  tf_executor *e = executor(g, NULL);
  ck_assert_ptr_eq(tf_executor_graph(e), g);
  step s;
  step_init(&s, 0, 1);
  ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_tensor_get_i64(s.rets[0], 0), 6); /* 0 2 4 6 */
  step_fini(&s);
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

/* Node ids need not be topological: a node made before the loop that
 * gets a control input from the loop's body later runs in the loop's
 * frame (frames follow the topological order, not the ids), and one made
 * first that waits for the result runs after it. */
START_TEST(test_ids_not_topological) {
  tf_graph *g = tf_graph_new();
  tf_node *tick = tt_node(g, "NoOp", "tick", NULL, 0, NULL, 0);
  tf_node *after = tt_node(g, "NoOp", "after", NULL, 0, NULL, 0);
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *limit = tt_const(g, "limit", tf_tensor_scalar_i64(5));
  tf_node *two = tt_const(g, "two", tf_tensor_scalar_i64(2));
  tf_node *merge;
  tf_node *sw = loop_head(g, "L", o0(zero), o0(limit), &merge);
  tf_node *two_e = enter(g, "two_enter", o0(two), "L", true);
  tf_node *body = op2(g, "Add", "body", (tf_output){sw, 1}, o0(two_e));
  tf_node *ex = loop_tail(g, merge, sw, body);
  retval(g, "r", o0(ex), 0);
  tf__node_add_control(tick, body);
  tf__node_add_control(after, ex);
  tf_executor *e = executor(g, NULL);
  step s;
  step_init(&s, 0, 1);
  tf_exec_trace tr = {0};
  ck_assert_msg(tf_executor_run(e, &s.ctx, &tr, tf__now_ns() + 20LL * 1000000000, &st) ==
                TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_tensor_get_i64(s.rets[0], 0), 6); /* 0 2 4 6 */
  int ticks = 0, afters = 0;
  for (int i = 0; i < tr.n; i++) {
    ticks += tr.stats[i].node == tf_node_id(tick);
    afters += tr.stats[i].node == tf_node_id(after);
  }
  ck_assert_int_eq(ticks, 3); /* once per iteration */
  ck_assert_int_eq(afters, 1);
  free(tr.stats);
  step_fini(&s);
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_exit_in_root_frame) {
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(1));
  op1(g, "Exit", "lonely_exit", o0(c));
  ck_assert_int_eq(new_fails(g), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "lonely_exit");
  ASSERT_HAS(st.msg, "not inside a loop");
  tf_graph_free(g);
  /* And an Exit that leaves a frame twice (Exit of an Exit). */
  g = tf_graph_new();
  c = tt_const(g, "c", tf_tensor_scalar_f32(1));
  tf_node *en = enter(g, "en", o0(c), "F", false);
  tf_node *x1 = op1(g, "Exit", "x1", o0(en));
  op1(g, "Exit", "x2", o0(x1));
  ck_assert_int_eq(new_fails(g), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "x2");
  tf_graph_free(g);
}
END_TEST

/* Frame "inner" entered from frame "outer" and from the root frame. */
START_TEST(test_frame_entered_from_two_frames) {
  tf_graph *g = tf_graph_new();
  tf_node *a = tt_const(g, "a", tf_tensor_scalar_f32(1));
  tf_node *b = tt_const(g, "b", tf_tensor_scalar_f32(2));
  tf_node *to_outer = enter(g, "to_outer", o0(a), "outer", false);
  enter(g, "to_inner", o0(to_outer), "inner", false);
  enter(g, "inner_from_root", o0(b), "inner", false);
  ck_assert_int_eq(new_fails(g), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "inner_from_root");
  ASSERT_HAS(st.msg, "'inner'");
  ASSERT_HAS(st.msg, "frame 'outer'");
  ASSERT_HAS(st.msg, "root frame");
  tf_graph_free(g);
}
END_TEST

START_TEST(test_no_kernel_for_dtype) {
  tf_dtype dt = dtype_without_kernel("MatMul");
  ck_assert_msg(dt != TF_DTYPE_INVALID, "every MatMul dtype has a kernel now");
  tf_graph *g = tf_graph_new();
  tf_node *a = arg(g, "a", dt, 0);
  op2(g, "MatMul", "product", o0(a), o0(a));
  ck_assert_int_eq(new_fails(g), TF_NOT_FOUND);
  ASSERT_HAS(st.msg, "'product'");
  ASSERT_HAS(st.msg, "MatMul");
  ASSERT_HAS(st.msg, tf_dtype_name(dt));
  tf_graph_free(g);
}
END_TEST

/* ---- running ------------------------------------------------------------------------ */

typedef struct async_done_arg {
  _Atomic int calls;
  tf_code code;
} async_done_arg;

static void on_done(void *arg, const tf_status *status) {
  async_done_arg *a = arg;
  a->code = status->code;
  atomic_fetch_add(&a->calls, 1);
}

START_TEST(test_empty_graph) {
  tf_graph *g = tf_graph_new();
  tf_workq *q = tf_workq_new(2, "test");
  for (int k = 0; k < 2; k++) {
    tf_executor *e = executor(g, k ? q : NULL);
    ck_assert_ptr_eq(tf_executor_graph(e), g);
    step s;
    step_init(&s, 0, 0);
    tf_exec_trace tr = {0};
    tf_status status;
    ck_assert_int_eq(tf_executor_run(e, &s.ctx, &tr, 0, &status), TF_OK);
    ck_assert_int_eq(status.code, TF_OK);
    ck_assert_int_eq(tr.n, 0);
    free(tr.stats);
    step_fini(&s);
    step_init(&s, 0, 0);
    async_done_arg d = {0};
    tf_executor_run_async(e, &s.ctx, NULL, 0, on_done, &d);
    int64_t end = tf__now_ns() + 10LL * 1000000000;
    while (atomic_load(&d.calls) == 0 && tf__now_ns() < end) {
    }
    ck_assert_int_eq(atomic_load(&d.calls), 1);
    ck_assert_int_eq(d.code, TF_OK);
    step_fini(&s);
    tf_executor_free(e);
  }
  tf_workq_free(q);
  tf_graph_free(g);
  tf_executor_free(NULL); /* NULL-safe */
}
END_TEST

/* A step whose cancel has already started runs no node and reports the
 * reason; a kernel's error ends a step with the node named. */
START_TEST(test_cancelled_and_failing_steps) {
  tf_graph *g = tf_graph_new();
  tf_node *a = arg(g, "a", TF_FLOAT32, 0);
  tf_node *b = arg(g, "b", TF_FLOAT32, 1);
  tf_node *mm = op2(g, "MatMul", "mm", o0(a), o0(b));
  retval(g, "r", o0(mm), 0);
  tf_executor *e = executor(g, NULL);
  ck_assert_ptr_eq(tf_executor_graph(e), g);
  step s;
  step_init(&s, 2, 1);
  s.args[0] = tf_tensor_scalar_f32(1);
  s.args[1] = tf_tensor_scalar_f32(2);
  ck_assert(tf_cancel_start(&s.cancel, TF_CANCELLED, "stopped early"));
  tf_exec_trace tr = {0};
  ck_assert_int_eq(tf_executor_run(e, &s.ctx, &tr, 0, &st), TF_CANCELLED);
  ASSERT_HAS(st.msg, "stopped early");
  ck_assert_int_eq(tr.n, 0);
  ck_assert_ptr_null(s.rets[0]);
  free(tr.stats);
  step_fini(&s);
  /* Scalars are not matrices: MatMul's error names it. */
  step_init(&s, 2, 1);
  s.args[0] = tf_tensor_scalar_f32(1);
  s.args[1] = tf_tensor_scalar_f32(2);
  ck_assert_int_eq(run_step(e, &s, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "mm");
  ck_assert_ptr_null(s.rets[0]);
  step_fini(&s);
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

/* ---- concurrent steps on one executor -------------------------------------------------- */

/* y = (x * x + x) * 2 - x over 64 floats, against a plain loop. */
typedef struct conc {
  tf_executor *e;
  int id;
  int bad;
  char err[256];
} conc;

static void *conc_main(void *p) {
  conc *c = p;
  tf_status status;
  for (int rep = 0; rep < 100; rep++) {
    step s;
    step_init(&s, 1, 2);
    tf_shape shape = tf_shape_of(1, 64);
    if (tf_tensor_new(TF_FLOAT32, &shape, &s.args[0], &status) != TF_OK) abort();
    float *x = s.args[0]->data;
    for (int i = 0; i < 64; i++) x[i] = (float)(c->id * 1000 + rep) + (float)i / 64.0f;
    if (run_step(c->e, &s, &status) != TF_OK) {
      snprintf(c->err, sizeof c->err, "%.200s", status.msg);
      c->bad++;
    } else {
      const float *y = s.rets[0]->data, *sq = s.rets[1]->data;
      for (int i = 0; i < 64; i++) {
        float want = (x[i] * x[i] + x[i]) * 2.0f - x[i];
        if (y[i] != want || sq[i] != x[i] * x[i]) {
          c->bad++;
          break;
        }
      }
    }
    step_fini(&s);
  }
  return NULL;
}

START_TEST(test_concurrent_steps) {
  tf_graph *g = tf_graph_new();
  tf_node *x = arg(g, "x", TF_FLOAT32, 0);
  tf_node *two = tt_const(g, "two", tf_tensor_scalar_f32(2));
  tf_node *sq = op2(g, "Mul", "sq", o0(x), o0(x));
  tf_node *sum = op2(g, "Add", "sum", o0(sq), o0(x));
  tf_node *dbl = op2(g, "Mul", "dbl", o0(sum), o0(two));
  tf_node *y = op2(g, "Sub", "y", o0(dbl), o0(x));
  retval(g, "ry", o0(y), 0);
  retval(g, "rsq", o0(sq), 1);
  tf_workq *q = tf_workq_new(3, "test");
  for (int k = 0; k < 2; k++) {
    tf_executor *e = executor(g, k ? q : NULL);
    ck_assert_ptr_eq(tf_executor_graph(e), g);
    pthread_t th[4];
    conc c[4];
    for (int i = 0; i < 4; i++) {
      c[i] = (conc){.e = e, .id = i};
      pthread_create(&th[i], NULL, conc_main, &c[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
      ck_assert_msg(c[i].bad == 0, "runner %d thread %d: %d bad steps %s", k, i, c[i].bad,
                    c[i].err);
    }
    tf_executor_free(e);
  }
  tf_workq_free(q);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("executor");
  TCase *tc = tcase_create("executor");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, exec_setup, exec_teardown);
  tcase_add_test(tc, test_inputs_from_two_frames);
  tcase_add_test(tc, test_hand_built_loop_runs);
  tcase_add_test(tc, test_exit_in_root_frame);
  tcase_add_test(tc, test_ids_not_topological);
  tcase_add_test(tc, test_frame_entered_from_two_frames);
  tcase_add_test(tc, test_no_kernel_for_dtype);
  tcase_add_test(tc, test_empty_graph);
  tcase_add_test(tc, test_cancelled_and_failing_steps);
  tcase_add_test(tc, test_concurrent_steps);
  suite_add_tcase(s, tc);
  return s;
}
