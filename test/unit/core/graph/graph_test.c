/* Tests for graph storage: accessors, typed attr getters, tensor-name
 * lookup, whole-graph validation, and marks (lib/core/graph/algorithm.h):
 * a rollback puts the graph back exactly as it was (same YAML, names and
 * scopes handed out again, control inputs and back edges set on older
 * nodes undone), marks nest (inner commit then outer rollback, inner
 * rollback then outer commit), and ending marks out of order aborts. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "test/unit/testutil.h"

START_TEST(test_attr_getters) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *p = tt_placeholder(g, "p", TF_INT32, tf_shape_of(2, 4, -1));
  tf_dtype dt;
  tf_shape s;
  ck_assert_int_eq(tf_node_attr_get_type(p, "dtype", &dt, &st), TF_OK);
  ck_assert_int_eq(dt, TF_INT32);
  ck_assert_int_eq(tf_node_attr_get_shape(p, "shape", &s, &st), TF_OK);
  ck_assert(s.rank == 2 && s.dims[0] == 4 && s.dims[1] == -1);
  int64_t i;
  ck_assert_int_eq(tf_node_attr_get_int(p, "dtype", &i, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "attr 'dtype' is type, not int"));
  ck_assert_int_eq(tf_node_attr_get_bool(p, "missing", &(bool){0}, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "has no attr 'missing'"));
  const int64_t *list;
  int n;
  ck_assert_int_eq(tf_node_attr_get_int_list(p, "shape", &list, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_node_num_attrs(p), 2);
  ck_assert_str_eq(tf_node_attr_name(p, 0), "dtype"); /* sorted */
  ck_assert_str_eq(tf_node_attr_name(p, 1), "shape");
  ck_assert_int_eq(tf_node_attr_at(p, 1)->type, TF_ATTR_SHAPE);
  ck_assert(tf_shape_equal(tf_node_output_shape(p, 0), &s));
  ck_assert_str_eq(tf_node_op(p), "Placeholder");
  ck_assert_int_eq(tf_node_num_outputs(p), 1);
  ck_assert_int_eq(tf_node_output_type(p, 0), TF_INT32);
  ck_assert_ptr_eq(tf_graph_node(g, 0), p);
  ck_assert_ptr_null(tf_graph_node(g, 1));
  ck_assert_ptr_null(tf_graph_node(g, -1));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_const_attr_tensor_and_list_attrs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *v = tf_tensor_vec_f32(3, (float[]){1, 2, 3});
  tf_node_builder *b = tf_node_begin(g, "Const", "c");
  tf_node_set_attr(b, "value", tf_attr_tensor(v));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  int64_t ints[] = {7, 8};
  tf_node_set_attr(b, "_hint", tf_attr_int_list(ints, 2));
  tf_node *c = tf_node_finish(b, &st);
  ck_assert_msg(c != NULL, "%s", st.msg);
  tf_tensor_unref(v); /* the graph holds its own reference */
  tf_tensor *got;
  ck_assert_int_eq(tf_node_attr_get_tensor(c, "value", &got, &st), TF_OK);
  ck_assert_int_eq(got->n, 3);
  ck_assert(((float *)got->data)[2] == 3.0f);
  const int64_t *l;
  int n;
  ck_assert_int_eq(tf_node_attr_get_int_list(c, "_hint", &l, &n, &st), TF_OK);
  ck_assert(n == 2 && l[1] == 8);
  ck_assert(tf_shape_equal(tf_node_output_shape(c, 0), &(tf_shape){1, {3}}));
  /* dtype attr disagreeing with the tensor is an error from shape inference */
  v = tf_tensor_scalar_i32(1);
  b = tf_node_begin(g, "Const", "bad");
  tf_node_set_attr(b, "value", tf_attr_tensor(v));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "value is int32 but attr dtype is float32"));
  tf_tensor_unref(v);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_validate_acyclic) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *p = tt_placeholder(g, "p", TF_INT32, tf_shape_of(2, 4, -1));
  tf_node *prev = p;
  for (int i = 0; i < 100; i++) {
    tf_node_builder *b = tf_node_begin(g, "Identity", NULL);
    tf_node_add_input(b, (tf_output){prev, 0});
    tf_node_add_control_input(b, p);
    prev = tf_node_finish(b, &st);
    ck_assert_ptr_nonnull(prev);
  }
  ck_assert_str_eq(tf_node_name(prev), "Identity_99");
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  tf_graph_free(g);
  tf_graph_free(NULL);
}
END_TEST

/* ---- marks -------------------------------------------------------------- */

/* g as YAML (names, ops, inputs with control inputs, attrs, devices). */
static char *yaml_of(const tf_graph *g) {
  char *text = NULL;
  size_t len = 0;
  tf_status st;
  ck_assert_msg(tf_graph_to_yaml(g, &text, &len, &st) == TF_OK, "%s", st.msg);
  return text;
}

static tf_node *add(tf_graph *g, const char *op, const char *name, tf_node *in) {
  tf_output x = {in, 0};
  return tt_node(g, op, name, &x, in != NULL, NULL, 0);
}

static const char *unique(tf_graph *g, const char *base, char *buf) {
  return tf_graph_unique_name(g, base, buf, 64);
}

START_TEST(test_mark_rollback) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  char buf[64];
  tf_node *p = tt_placeholder(g, "p", TF_INT32, tf_shape_of(1, 2));
  tf_node_builder *mb = tf_node_begin(g, "Merge", "m");
  tf_node_add_input_list(mb, (tf_output[]){{p, 0}, {p, 0}}, 2);
  tf_node *m = tf_node_finish(mb, &st);
  ck_assert_msg(m != NULL, "%s", st.msg);
  tf_node *q = add(g, "Identity", "q", p);
  ck_assert_str_eq(unique(g, "u", buf), "u");
  tf_graph_push_scope(g, "outer");
  char *before = yaml_of(g);
  int n0 = tf_graph_num_nodes(g), depth0 = g->n_scopes;

  tf__gmark mk = tf__graph_mark(g);
  tf_graph_push_scope(g, "s");
  tf_node *a = add(g, "Identity", "a", q);
  add(g, "NoOp", NULL, NULL);
  ck_assert_str_eq(unique(g, "u", buf), "outer/s/u");
  tf_graph_pop_scope(g);
  tf_graph_push_scope(g, "s");             /* outer/s_1/ */
  ck_assert_str_eq(unique(g, "u", buf), "outer/s_1/u");
  tf_node *nx = add(g, "NextIteration", "next", a);
  ck_assert_int_eq(tf__node_set_back_edge(m, 1, (tf_output){nx, 0}, &st), TF_OK);
  tf__node_add_control(q, a);              /* an older node gains inputs */
  tf__node_add_control(q, p);
  ck_assert_str_eq(unique(g, "u", buf), "outer/s_1/u_1");
  tf_graph_pop_scope(g);
  ck_assert_str_eq(unique(g, "u", buf), "outer/u");
  ck_assert_int_eq(tf_graph_num_nodes(g), n0 + 3);
  tf__graph_rollback(g, &mk);

  char *after = yaml_of(g);
  ck_assert_str_eq(after, before);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0);
  ck_assert_int_eq(g->n_scopes, depth0);
  ck_assert_int_eq(tf_node_num_control_inputs(q), 0);
  ck_assert_ptr_eq(tf_node_input(m, 1).node, p);
  ck_assert_ptr_null(tf_graph_find(g, "outer/s/a"));
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  /* every name and scope handed out since the mark is free again */
  ck_assert_str_eq(unique(g, "u", buf), "outer/u");
  tf_graph_push_scope(g, "s");
  ck_assert_str_eq(tf__graph_scope(g), "outer/s/");
  ck_assert_str_eq(tf_node_name(add(g, "Identity", "a", q)), "outer/s/a");
  ck_assert_str_eq(tf_node_name(add(g, "NoOp", NULL, NULL)), "outer/s/NoOp");
  tf_graph_pop_scope(g);
  tf_graph_pop_scope(g);
  ck_assert_str_eq(unique(g, "u", buf), "u_1"); /* older names stay taken */
  free(before);
  free(after);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_mark_nesting) {
  tf_graph *g = tf_graph_new();
  char buf[64];
  tf_node *p = tt_placeholder(g, "p", TF_INT32, tf_shape_of(1, 2));
  char *before = yaml_of(g);
  /* inner commit, outer rollback: everything goes */
  tf__gmark outer = tf__graph_mark(g);
  add(g, "Identity", "a", p);
  tf__gmark inner = tf__graph_mark(g);
  tf_graph_push_scope(g, "in");
  tf_node *b = add(g, "Identity", "b", p);
  tf__node_add_control(p, b);
  tf__graph_commit(g, &inner);
  ck_assert_str_eq(tf__graph_scope(g), ""); /* the build's scopes end with it */
  add(g, "Identity", "c", p);
  tf__graph_rollback(g, &outer);
  char *after = yaml_of(g);
  ck_assert_str_eq(after, before);
  free(after);
  ck_assert_str_eq(unique(g, "in", buf), "in");
  ck_assert_str_eq(unique(g, "a", buf), "a");
  /* inner rollback, outer commit: what the outer added stays */
  outer = tf__graph_mark(g);
  add(g, "Identity", "x", p);
  inner = tf__graph_mark(g);
  add(g, "Identity", "y", p);
  tf__graph_rollback(g, &inner);
  add(g, "Identity", "z", p);
  tf__graph_commit(g, &outer);
  ck_assert_int_eq(tf_graph_num_nodes(g), 3);
  ck_assert_ptr_nonnull(tf_graph_find(g, "x"));
  ck_assert_ptr_null(tf_graph_find(g, "y"));
  ck_assert_ptr_nonnull(tf_graph_find(g, "z"));
  ck_assert_str_eq(unique(g, "y", buf), "y");
  ck_assert_str_eq(unique(g, "x", buf), "x_1");
  ck_assert_int_eq(g->n_marks, 0);
  ck_assert_int_eq(g->n_edits, 0); /* the log empties with the last mark */
  free(before);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_mark_out_of_order_aborts) {
  tf_graph *g = tf_graph_new();
  tf__gmark outer = tf__graph_mark(g);
  tf__gmark inner = tf__graph_mark(g);
  (void)inner;
  tf__graph_rollback(g, &outer); /* inner is still open: TF_ASSERT */
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_attr_getters);
  tcase_add_test(tc, test_const_attr_tensor_and_list_attrs);
  tcase_add_test(tc, test_validate_acyclic);
  suite_add_tcase(s, tc);
  TCase *tm = tcase_create("marks");
  tcase_add_test(tm, test_mark_rollback);
  tcase_add_test(tm, test_mark_nesting);
  tcase_add_test_raise_signal(tm, test_mark_out_of_order_aborts, SIGABRT);
  suite_add_tcase(s, tm);
  return s;
}
