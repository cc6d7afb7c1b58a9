/* train_build_test.c: the graph-level variable helpers of train.h.
 * tf_variable_create adds "<name>" and "<name>/Assign" (under the current
 * scope) and the variable holds the initial value once initialized; bad
 * shapes, dtypes, initial values and taken names fail naming them and
 * leave the graph unchanged. tf_global_variables_initializer runs every
 * "<v>/Assign" (also those of optimizer slots) and fails on a graph
 * without any. tf_global_step creates an int64 scalar at 0, finds it
 * again, and rejects a "global_step" that is not an integer scalar
 * variable. */
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/session.h"
#include "tf/train.h"

static tf_session *session(tf_graph *g) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

static void run_target(tf_session *s, const char *target) {
  tf_status st;
  tf_run_options o = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, NULL, NULL, 0, &target,
                               1, NULL, &st) == TF_OK,
                "%s: %s", target, st.msg);
}

static tf_tensor *fetch(tf_session *s, const char *name) {
  tf_status st;
  tf_tensor *t = NULL;
  tf_run_options o = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, &name, &t, 1, NULL, 0,
                               NULL, &st) == TF_OK,
                "%s: %s", name, st.msg);
  return t;
}

START_TEST(test_variable_create) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *v0 = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 2), -1, 1);
  tf_output init = {tt_const(g, "w_init", tf_tensor_ref(v0)), 0};
  tf_graph_push_scope(g, "layer");
  tf_var w;
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(2, 3, 2),
                                      TF_FLOAT32, init, &w, &st),
                   TF_OK);
  tf_graph_pop_scope(g);
  ck_assert_str_eq(tf_node_name(w.ref.node), "layer/w");
  ck_assert_str_eq(tf_node_op(w.ref.node), "VariableV2");
  ck_assert_str_eq(tf_node_name(w.initializer), "layer/w/Assign");
  tf_session *s = session(g);
  run_target(s, "layer/w/Assign");
  tf_tensor *got = fetch(s, "layer/w");
  ck_assert(tf_tensor_equal(got, v0));
  tf_tensor_unref(got);
  tf_session_free(s);
  tf_tensor_unref(v0);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_variable_create_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output f = {tt_placeholder(g, "f", TF_FLOAT32, tf_shape_of(1, 4)), 0};
  tf_output d = {tt_placeholder(g, "d", TF_FLOAT64, tf_shape_unknown()), 0};
  tf_var w;
  int n0 = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(1, -1), TF_FLOAT32,
                                      f, &w, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "variable w: shape [?] is not fully defined"),
                "%s", st.msg);
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(1, 4), TF_FLOAT32,
                                      d, &w, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "variable w is float32 but its initial value "
                               "is float64"),
                "%s", st.msg);
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(1, 5), TF_FLOAT32,
                                      f, &w, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "variable w has shape [5]; its initial value "
                               "has shape [4]"),
                "%s", st.msg);
  ck_assert_ptr_null(w.ref.node);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0);
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(1, 4), TF_FLOAT32,
                                      f, &w, &st),
                   TF_OK);
  int n1 = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_variable_create(g, "w", tf_shape_of(1, 4), TF_FLOAT32,
                                      f, &w, &st),
                   TF_ALREADY_EXISTS);
  ck_assert_msg(strstr(st.msg, "w"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), n1);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_global_initializer) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_ptr_null(tf_global_variables_initializer(g, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "no variable initializer"), "%s", st.msg);
  tf_var a, b;
  double one = 1.0;
  tf_output c1 = {tt_const(g, "c1", tt_tensor(TF_FLOAT64, tf_shape_of(1, 1),
                                              &one)), 0};
  ck_assert_int_eq(tf_variable_create(g, "a", tf_shape_of(1, 1), TF_FLOAT64,
                                      c1, &a, &st), TF_OK);
  ck_assert_int_eq(tf_variable_create(g, "b", tf_shape_of(1, 1), TF_FLOAT64,
                                      c1, &b, &st), TF_OK);
  tf_optimizer *o = tf_optimizer_adagrad(0.1);
  tf_grad gr[] = {{.values = c1}, {.values = c1}};
  tf_output vars[] = {a.ref, b.ref};
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(
      o, g, vars, gr, 2, (tf_output){NULL, 0}, NULL, &st));
  tf_node *init = tf_global_variables_initializer(g, NULL, &st);
  ck_assert_msg(init != NULL, "%s", st.msg);
  ck_assert_str_eq(tf_node_name(init), "init");
  ck_assert_int_eq(tf_node_num_control_inputs(init), 4); /* a, b, 2 slots */
  tf_node *init2 = tf_global_variables_initializer(g, NULL, &st);
  ck_assert_str_eq(tf_node_name(init2), "init_1");
  tf_session *s = session(g);
  run_target(s, "init");
  tf_tensor *acc = fetch(s, "b/Adagrad");
  ck_assert_double_eq_tol(((double *)acc->data)[0], 0.1, 1e-15);
  tf_tensor_unref(acc);
  tf_session_free(s);
  tf_optimizer_free(o);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_global_step) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output step, again;
  ck_assert_int_eq(tf_global_step(g, &step, &st), TF_OK);
  ck_assert_str_eq(tf_node_name(step.node), "global_step");
  ck_assert_int_eq(tf_node_output_type(step.node, 0), TF_INT64);
  ck_assert_int_eq(tf_node_output_shape(step.node, 0)->rank, 0);
  ck_assert_ptr_nonnull(tf_graph_find(g, "global_step/Assign"));
  ck_assert_int_eq(tf_global_step(g, &again, &st), TF_OK);
  ck_assert_ptr_eq(again.node, step.node);
  tf_session *s = session(g);
  run_target(s, "global_step/Assign");
  tf_tensor *v = fetch(s, "global_step");
  ck_assert_int_eq(((int64_t *)v->data)[0], 0);
  tf_tensor_unref(v);
  tf_session_free(s);
  tf_graph_free(g);
  g = tf_graph_new();
  tt_placeholder(g, "global_step", TF_FLOAT32, tf_shape_scalar());
  ck_assert_int_eq(tf_global_step(g, &step, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "node global_step is not an int32/int64 "
                               "scalar variable (op Placeholder, float32"),
                "%s", st.msg);
  ck_assert_ptr_null(step.node);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("train_build");
  TCase *c = tcase_create("core");
  tcase_add_test(c, test_variable_create);
  tcase_add_test(c, test_variable_create_errors);
  tcase_add_test(c, test_global_initializer);
  tcase_add_test(c, test_global_step);
  suite_add_tcase(s, c);
  return s;
}
