/* ops_state_test.c: the variable op specs (TF names, arguments, attrs,
 * defaults, flags, ref arguments) and their shape functions: VariableV2
 * gives its shape attr (partial too), Assign merges ref and value (or
 * takes the value's shape without validate_shape), AssignAdd/Sub merge,
 * Scatter* checks updates = indices + ref[1:] (or a scalar), and known
 * shapes that cannot work are rejected naming them; a Ref input needs a
 * ref edge. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

static tf_node *variable(tf_graph *g, const char *name, tf_dtype dt,
                         tf_shape shape) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "VariableV2", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  tf_node_set_attr(b, "shape", tf_attr_shape(shape));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* op(ref, inputs...) with optional bool attr; NULL with *st on error. */
static tf_node *update(tf_graph *g, const char *op, tf_node *ref,
                       tf_node *const *in, int n_in, const char *battr,
                       bool bval, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, (tf_output){ref, 0});
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, (tf_output){in[i], 0});
  }
  if (battr != NULL) {
    tf_node_set_attr(b, battr, tf_attr_bool(bval));
  }
  return tf_node_finish(b, st);
}

static void assert_shape_eq(const tf_shape *got, tf_shape want) {
  char a[96], b[96];
  ck_assert_msg(tf_shape_equal(got, &want), "got %s, want %s",
                tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

START_TEST(test_specs) {
  const char *stateful[] = {"VariableV2", "Assign",        "AssignAdd",
                            "AssignSub",  "ScatterUpdate", "ScatterAdd",
                            "ScatterSub", "IsVariableInitialized"};
  /* TF's use_locking defaults (state_ops.cc), in the order above. */
  const bool locking[] = {false, true, false, false, true, false, false};
  for (size_t i = 0; i < sizeof stateful / sizeof *stateful; i++) {
    const tf_op_def *d = tf_op_lookup(stateful[i]);
    ck_assert_msg(d != NULL, "%s", stateful[i]);
    ck_assert_msg(d->flags & TF_OP_STATEFUL, "%s", stateful[i]);
    ck_assert_str_eq(tf_op_family_of(d), "state");
    ck_assert(d->doc && *d->doc);
    if (i > 0) {
      ck_assert_str_eq(d->inputs[0].name, "ref");
      ck_assert(d->inputs[0].is_ref);
    }
    if (i > 0 && i < 7) {
      ck_assert_str_eq(d->outputs[0].name, "output_ref");
      ck_assert(d->outputs[0].is_ref);
      ck_assert_ptr_nonnull(tf_op_find_attr(d, "use_locking"));
      ck_assert_msg(tf_op_find_attr(d, "use_locking")->default_value.u.b ==
                        locking[i],
                    "%s: use_locking defaults to %d, TF's to %d", stateful[i],
                    !locking[i], locking[i]);
    }
  }
  const tf_op_def *v = tf_op_lookup("VariableV2");
  ck_assert(v->flags & TF_OP_SOURCE);
  ck_assert(v->outputs[0].is_ref);
  ck_assert_str_eq(v->outputs[0].name, "ref");
  ck_assert_str_eq(tf_op_find_attr(v, "container")->default_value.u.s, "");
  ck_assert_str_eq(tf_op_find_attr(v, "shared_name")->default_value.u.s, "");
  ck_assert(!tf_op_find_attr(v, "shape")->has_default);
  const tf_op_def *a = tf_op_lookup("Assign");
  ck_assert(tf_op_find_attr(a, "validate_shape")->default_value.u.b);
  const tf_op_def *s = tf_op_lookup("ScatterAdd");
  ck_assert_str_eq(s->inputs[1].name, "indices");
  ck_assert_str_eq(s->inputs[2].name, "updates");
  ck_assert_int_eq(tf_op_find_attr(s, "Tindices")->n_allowed_types, 2);
  const tf_op_def *iv = tf_op_lookup("IsVariableInitialized");
  ck_assert_int_eq(iv->outputs[0].fixed_type, TF_BOOL);
  ck_assert_str_eq(iv->outputs[0].name, "is_initialized");
}
END_TEST

START_TEST(test_variable_and_assign_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *v = variable(g, "v", TF_FLOAT32, tf_shape_of(2, U, 3));
  assert_shape_eq(tf_node_output_shape(v, 0), tf_shape_of(2, U, 3));
  ck_assert_int_eq(tf_node_output_type(v, 0), TF_FLOAT32);
  ck_assert(tf__node_output_is_ref(v, 0));
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_of(2, 4, U));
  tf_node *a = update(g, "Assign", v, &p, 1, NULL, false, &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(a, 0), tf_shape_of(2, 4, 3));
  ck_assert(tf__node_input_is_ref(a, 0));
  ck_assert(!tf__node_input_is_ref(a, 1));
  ck_assert(tf__node_output_is_ref(a, 0));
  tf_node *q = tt_placeholder(g, "q", TF_FLOAT32, tf_shape_of(1, 3));
  ck_assert_ptr_null(update(g, "Assign", v, &q, 1, NULL, false, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "[?,3]") && strstr(st.msg, "[3]"), "%s",
                st.msg);
  a = update(g, "Assign", v, &q, 1, "validate_shape", false, &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(a, 0), tf_shape_of(1, 3));
  tf_node *i = update(g, "IsVariableInitialized", v, NULL, 0, NULL, 0, &st);
  ck_assert_msg(i != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(i, 0), tf_shape_scalar());
  ck_assert_int_eq(tf_node_output_type(i, 0), TF_BOOL);
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  tf_node *add = update(g, "AssignAdd", v, &x, 1, NULL, false, &st);
  ck_assert_msg(add != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(add, 0), tf_shape_of(2, U, 3));
  ck_assert_ptr_null(update(g, "AssignSub", v, &q, 1, NULL, false, &st));
  ck_assert_msg(strstr(st.msg, "AssignSub"), "%s", st.msg);
  tf_node *d = tt_placeholder(g, "d", TF_FLOAT64, tf_shape_of(2, 5, 3));
  ck_assert_ptr_null(update(g, "AssignAdd", v, &d, 1, NULL, false, &st));
  /* ref inputs need a ref edge; refs chain through output_ref. */
  ck_assert_ptr_null(update(g, "Assign", p, &p, 1, NULL, false, &st));
  ck_assert_msg(strstr(st.msg, "must be a reference"), "%s", st.msg);
  tf_node *chained = update(g, "AssignSub", add, &x, 1, NULL, false, &st);
  ck_assert_msg(chained != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_arith_dtypes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *v = variable(g, "v8", TF_INT8, tf_shape_of(1, 2));
  tf_node *p = tt_placeholder(g, "p", TF_INT8, tf_shape_of(1, 2));
  ck_assert_ptr_nonnull(update(g, "Assign", v, &p, 1, NULL, false, &st));
  ck_assert_ptr_null(update(g, "AssignAdd", v, &p, 1, NULL, false, &st));
  ck_assert_msg(strstr(st.msg, "int8"), "%s", st.msg);
  tf_node *in[] = {tt_placeholder(g, "i", TF_INT32, tf_shape_of(1, 1)),
                   tt_placeholder(g, "u", TF_INT8, tf_shape_of(1, 1))};
  ck_assert_ptr_nonnull(update(g, "ScatterUpdate", v, in, 2, NULL, 0, &st));
  ck_assert_ptr_null(update(g, "ScatterAdd", v, in, 2, NULL, 0, &st));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_scatter_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *v = variable(g, "v", TF_FLOAT64, tf_shape_of(3, 10, U, 4));
  struct {
    tf_shape idx, upd;
    bool ok;
  } cases[] = {
      {tf_shape_of(1, 5), tf_shape_of(3, 5, 2, 4), true},
      {tf_shape_of(2, 2, 3), tf_shape_of(4, 2, 3, 7, 4), true},
      {tf_shape_of(0), tf_shape_of(2, 6, 4), true},
      {tf_shape_of(1, 5), tf_shape_of(0), true}, /* scalar updates */
      {tf_shape_unknown(), tf_shape_of(3, 5, 2, 4), true},
      {tf_shape_of(1, 5), tf_shape_of(3, 4, 2, 4), false},
      {tf_shape_of(1, 5), tf_shape_of(3, 5, 2, 3), false},
      {tf_shape_of(1, 5), tf_shape_of(2, 5, 2), false},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    tf_node *in[] = {tt_placeholder(g, NULL, TF_INT64, cases[k].idx),
                     tt_placeholder(g, NULL, TF_FLOAT64, cases[k].upd)};
    const char *ops[] = {"ScatterUpdate", "ScatterAdd", "ScatterSub"};
    tf_node *n = update(g, ops[k % 3], v, in, 2, NULL, 0, &st);
    ck_assert_msg((n != NULL) == cases[k].ok, "case %zu: %s", k, st.msg);
    if (n != NULL) {
      assert_shape_eq(tf_node_output_shape(n, 0), tf_shape_of(3, 10, U, 4));
    } else {
      ck_assert_msg(strstr(st.msg, "Must have updates.shape = "
                                   "indices.shape + ref.shape[1:]"),
                    "%s", st.msg);
    }
  }
  tf_node *s = variable(g, "scalar", TF_FLOAT64, tf_shape_scalar());
  tf_node *in[] = {tt_placeholder(g, NULL, TF_INT32, tf_shape_unknown()),
                   tt_placeholder(g, NULL, TF_FLOAT64, tf_shape_unknown())};
  ck_assert_ptr_null(update(g, "ScatterUpdate", s, in, 2, NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "at least 1-D"), "%s", st.msg);
  tf_node *f = tt_placeholder(g, NULL, TF_FLOAT32, tf_shape_unknown());
  tf_node *bad[] = {f, in[1]};
  ck_assert_ptr_null(update(g, "ScatterAdd", v, bad, 2, NULL, 0, &st));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_state");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_variable_and_assign_shapes);
  tcase_add_test(tc, test_arith_dtypes);
  tcase_add_test(tc, test_scatter_shapes);
  suite_add_tcase(s, tc);
  return s;
}
