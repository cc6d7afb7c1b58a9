/* cpu_function_test.c: the _Arg and _Retval kernels. Eagerly they fail
 * with FAILED_PRECONDITION ("needs a session"). Through the executor
 * (lib/core/exec/executor.h) with a tf_step_ctx filled here: fed tensors reach
 * their consumers by index (in any order, with and without inter-op
 * threads) and _Retval stores its input (the very tensor, replacing what
 * the slot held); an _Arg index out of range or without a tensor, a fed
 * dtype that differs from T and a _Retval index out of range are
 * INVALID_ARGUMENT naming the node; a _Retval inside a loop frame (a loop
 * built by hand from Enter/Merge/Switch/LoopCond/NextIteration/Exit) is
 * rejected by tf_executor_new, while one on the loop's Exit works. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "test/unit/core/exec/exec_testlib.h"

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static tf_status st;

/* ---- eager ---------------------------------------------------------------------- */

START_TEST(test_eager_needs_session) {
  tf_attr_kv a[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
  const char *msg = tt_run_fail("_Arg", NULL, 0, a, 2, TF_FAILED_PRECONDITION);
  ASSERT_HAS(msg, "needs a session");
  ASSERT_HAS(msg, "_Arg");
  tf_tensor *x = tf_tensor_scalar_f32(1.0f);
  msg = tt_run_fail("_Retval", &x, 1, a + 1, 1, TF_FAILED_PRECONDITION);
  ASSERT_HAS(msg, "needs a session");
  ASSERT_HAS(msg, "_Retval");
  tf_tensor_unref(x);
}
END_TEST

/* ---- through the executor --------------------------------------------------------- */

/* a (float, index 1) -> Neg -> _Retval index 1; b (int64, index 0) ->
 * _Retval index 0 directly: indices, not node order, pick the slots. */
START_TEST(test_args_to_retvals) {
  tt_rng_reseed(tt_seed() ^ 0xa76);
  tf_graph *g = tf_graph_new();
  tf_node *b = arg(g, "b", TF_INT64, 0);
  tf_node *a = arg(g, "a", TF_FLOAT32, 1);
  tf_node *neg = tt_node(g, "Neg", "neg", (tf_output[]){o0(a)}, 1, NULL, 0);
  retval(g, "r1", o0(neg), 1);
  retval(g, "r0", o0(b), 0);
  tf_workq *q = tf_workq_new(2, "test");
  for (int k = 0; k < 2; k++) {
    tf_executor *e = executor(g, k ? q : NULL);
    for (int rep = 0; rep < 3; rep++) {
      step s;
      step_init(&s, 2, 2);
      s.args[0] = tt_rand(TF_INT64, tf_shape_of(1, 7), -100, 100);
      s.args[1] = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 5), -4, 4);
      tf_tensor *stale = tf_tensor_scalar_f32(99.0f);
      s.rets[1] = tf_tensor_ref(stale); /* the _Retval replaces it */
      ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
      ck_assert_ptr_eq(s.rets[0], s.args[0]); /* the fed tensor itself */
      ck_assert_ptr_nonnull(s.rets[1]);
      ck_assert_ptr_ne(s.rets[1], stale);
      tt_assert_shape(s.rets[1], 2, 3, 5);
      const float *x = s.args[1]->data, *y = s.rets[1]->data;
      for (int i = 0; i < 15; i++) {
        if (y[i] != -x[i]) ck_abort_msg("element %d: %g for %g", i, y[i], x[i]);
      }
      tf_tensor_unref(stale);
      step_fini(&s);
    }
    tf_executor_free(e);
  }
  tf_workq_free(q);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_arg_errors) {
  tf_graph *g = tf_graph_new();
  tf_node *a = arg(g, "feed_two", TF_FLOAT32, 2);
  retval(g, "r", o0(a), 0);
  tf_executor *e = executor(g, NULL);
  /* Index 2 of a step with 2 args. */
  step s;
  step_init(&s, 2, 1);
  s.args[0] = tf_tensor_scalar_f32(1);
  s.args[1] = tf_tensor_scalar_f32(2);
  ck_assert_int_eq(run_step(e, &s, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "feed_two");
  ASSERT_HAS(st.msg, "2");
  ck_assert_ptr_null(s.rets[0]);
  step_fini(&s);
  /* In range, but the slot has no tensor. */
  step_init(&s, 3, 1);
  s.args[0] = tf_tensor_scalar_f32(1);
  ck_assert_int_eq(run_step(e, &s, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "feed_two");
  ck_assert_ptr_null(s.rets[0]);
  step_fini(&s);
  /* The wrong dtype: both dtypes and the node are named. */
  step_init(&s, 3, 1);
  s.args[2] = tf_tensor_scalar_i32(5);
  ck_assert_int_eq(run_step(e, &s, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "feed_two");
  ASSERT_HAS(st.msg, tf_dtype_name(TF_INT32));
  ASSERT_HAS(st.msg, tf_dtype_name(TF_FLOAT32));
  ck_assert_ptr_null(s.rets[0]);
  step_fini(&s);
  /* And right. */
  step_init(&s, 3, 1);
  s.args[2] = tf_tensor_scalar_f32(5);
  ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_ptr_eq(s.rets[0], s.args[2]);
  step_fini(&s);
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_retval_out_of_range) {
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(3));
  retval(g, "fetch_one", o0(c), 1);
  tf_executor *e = executor(g, NULL);
  step s;
  step_init(&s, 0, 1);
  ck_assert_int_eq(run_step(e, &s, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "fetch_one");
  ck_assert_ptr_null(s.rets[0]);
  step_fini(&s);
  step_init(&s, 0, 2);
  ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_ptr_null(s.rets[0]);
  ck_assert_double_eq(tf_tensor_get_f64(s.rets[1], 0), 3.0);
  step_fini(&s);
  tf_executor_free(e);
  tf_graph_free(g);
}
END_TEST

/* i = 0; while (i < 3) i = i + 1, by hand; the body's value is `body`.
 * Returns the Exit. */
static tf_node *counting_loop(tf_graph *g, tf_node **body_out) {
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *limit = tt_const(g, "limit", tf_tensor_scalar_i64(3));
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i64(1));
  tf_node *en = enter(g, "enter", o0(zero), "L", false);
  tf_node *lim = enter(g, "limit_enter", o0(limit), "L", true);
  tf_node *one_e = enter(g, "one_enter", o0(one), "L", true);
  tf_node_builder *b = tf_node_begin(g, "Merge", "merge");
  tf_node_add_input_list(b, (tf_output[]){o0(en), o0(en)}, 2);
  tf_node *merge = tf_node_finish(b, &st);
  ck_assert_msg(merge != NULL, "%s", st.msg);
  tf_node *less = tt_node(g, "Less", "less", (tf_output[]){o0(merge), o0(lim)}, 2, NULL, 0);
  tf_node *cond = tt_node(g, "LoopCond", "cond", (tf_output[]){o0(less)}, 1, NULL, 0);
  tf_node *sw = tt_node(g, "Switch", "switch", (tf_output[]){o0(merge), o0(cond)}, 2, NULL, 0);
  tf_node *ex = tt_node(g, "Exit", "exit", (tf_output[]){o0(sw)}, 1, NULL, 0);
  tf_node *body = tt_node(g, "Add", "body", (tf_output[]){{sw, 1}, o0(one_e)}, 2, NULL, 0);
  tf_node *next = tt_node(g, "NextIteration", "next", (tf_output[]){o0(body)}, 1, NULL, 0);
  ck_assert_msg(tf__node_set_back_edge(merge, 1, o0(next), &st) == TF_OK, "%s", st.msg);
  *body_out = body;
  return ex;
}

START_TEST(test_retval_in_loop_rejected) {
  tf_graph *g = tf_graph_new();
  tf_node *body;
  tf_node *ex = counting_loop(g, &body);
  retval(g, "after", o0(ex), 0);
  /* The loop itself runs: the Exit's value is fetched. */
  tf_executor *e = executor(g, NULL);
  step s;
  step_init(&s, 0, 1);
  ck_assert_msg(run_step(e, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_tensor_get_i64(s.rets[0], 0), 3);
  step_fini(&s);
  tf_executor_free(e);
  /* A _Retval on a tensor of the loop's body is refused up front. */
  retval(g, "inside", o0(body), 1);
  e = (tf_executor *)1;
  ck_assert_int_eq(tf_executor_new(g, NULL, &e, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(e);
  ASSERT_HAS(st.msg, "body");
  ASSERT_HAS(st.msg, "'L'");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_function");
  TCase *tc = tcase_create("cpu_function");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, exec_setup, exec_teardown);
  tcase_add_test(tc, test_eager_needs_session);
  tcase_add_test(tc, test_args_to_retvals);
  tcase_add_test(tc, test_arg_errors);
  tcase_add_test(tc, test_retval_out_of_range);
  tcase_add_test(tc, test_retval_in_loop_rejected);
  suite_add_tcase(s, tc);
  return s;
}
