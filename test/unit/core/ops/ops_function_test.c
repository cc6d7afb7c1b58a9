/* ops_function_test.c: the _Arg and _Retval op specs (the session's feed
 * and fetch nodes): arguments, attrs, defaults, minimum index and flags;
 * _Arg's output shape comes from its "shape" attr (partial, scalar or
 * unknown by default) and its dtype from T; _Retval infers T from its
 * input; bad attrs are rejected naming the node. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static void assert_shape_eq(const tf_shape *got, tf_shape want) {
  char a[96], b[96];
  ck_assert_msg(tf_shape_equal(got, &want), "got %s, want %s",
                tf_shape_str(got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
}

START_TEST(test_arg_spec) {
  const tf_op_def *d = tf_op_lookup("_Arg");
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(tf_op_family_of(d), "function");
  ck_assert(d->doc && *d->doc);
  ck_assert_int_eq(d->n_inputs, 0);
  ck_assert_int_eq(d->n_outputs, 1);
  ck_assert_str_eq(d->outputs[0].name, "output");
  ck_assert_str_eq(d->outputs[0].type_attr, "T");
  ck_assert(!d->outputs[0].is_ref);
  ck_assert(d->flags & TF_OP_SOURCE);
  ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(d->flags & (TF_OP_CONTROL_FLOW | TF_OP_ASYNC)));
  ck_assert_ptr_nonnull(d->shape_fn);
  const tf_attr_def *t = tf_op_find_attr(d, "T");
  ck_assert(t && t->type == TF_ATTR_TYPE && !t->has_default);
  const tf_attr_def *idx = tf_op_find_attr(d, "index");
  ck_assert(idx && idx->type == TF_ATTR_INT && !idx->has_default);
  ck_assert(idx->has_min);
  ck_assert_int_eq(idx->min, 0);
  const tf_attr_def *sh = tf_op_find_attr(d, "shape");
  ck_assert(sh && sh->type == TF_ATTR_SHAPE && sh->has_default);
  ck_assert_int_eq(sh->default_value.u.shape.rank, TF_UNKNOWN_RANK);
}
END_TEST

START_TEST(test_retval_spec) {
  const tf_op_def *d = tf_op_lookup("_Retval");
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(tf_op_family_of(d), "function");
  ck_assert(d->doc && *d->doc);
  ck_assert_int_eq(d->n_inputs, 1);
  ck_assert_int_eq(d->n_outputs, 0);
  ck_assert_str_eq(d->inputs[0].name, "input");
  ck_assert_str_eq(d->inputs[0].type_attr, "T");
  ck_assert(!d->inputs[0].is_ref);
  /* Stateful: it writes the step's fetch slot, so no pass may drop it. */
  ck_assert(d->flags & TF_OP_STATEFUL);
  ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(d->flags & TF_OP_SOURCE));
  ck_assert(tf_op_find_attr(d, "T")->type == TF_ATTR_TYPE);
  const tf_attr_def *idx = tf_op_find_attr(d, "index");
  ck_assert(idx && idx->type == TF_ATTR_INT && !idx->has_default && idx->has_min);
  ck_assert_int_eq(idx->min, 0);
}
END_TEST

/* _Arg node: T, index and (optionally) shape; NULL with *st on error. */
static tf_node *arg(tf_graph *g, const char *name, tf_dtype dt, int64_t index,
                    const tf_shape *shape, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "_Arg", name);
  if (dt != TF_DTYPE_INVALID) tf_node_set_attr(b, "T", tf_attr_type_v(dt));
  tf_node_set_attr(b, "index", tf_attr_int(index));
  if (shape != NULL) tf_node_set_attr(b, "shape", tf_attr_shape(*shape));
  return tf_node_finish(b, st);
}

START_TEST(test_arg_shape_and_type) {
  /* Unnamed, the nodes are called _Arg, _Arg_1, ...: names only internal
   * graphs (where _Arg lives) accept. */
  tf_graph *g = tf__graph_new_internal();
  tf_status st;
  struct {
    tf_dtype dt;
    tf_shape shape;
  } cases[] = {
      {TF_FLOAT32, tf_shape_of(3, 2, U, 5)},
      {TF_INT64, tf_shape_scalar()},
      {TF_BOOL, tf_shape_of(1, 0)},
      {TF_FLOAT64, tf_shape_of(2, U, U)},
      {TF_INT32, tf_shape_unknown()},
  };
  for (int i = 0; i < 5; i++) {
    tf_node *n = arg(g, NULL, cases[i].dt, i, &cases[i].shape, &st);
    ck_assert_msg(n != NULL, "%s", st.msg);
    ck_assert_int_eq(tf_node_num_outputs(n), 1);
    ck_assert_int_eq(tf_node_output_type(n, 0), cases[i].dt);
    assert_shape_eq(tf_node_output_shape(n, 0), cases[i].shape);
    int64_t idx = -1;
    ck_assert_int_eq(tf_node_attr_get_int(n, "index", &idx, &st), TF_OK);
    ck_assert_int_eq(idx, i);
  }
  /* No shape attr: the default, unknown rank. */
  tf_node *n = arg(g, "noshape", TF_FLOAT32, 0, NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_output_shape(n, 0)->rank, TF_UNKNOWN_RANK);
  /* The _Arg's shape reaches its consumers' inference. */
  tf_shape s23 = tf_shape_of(2, 2, 3);
  tf_node *a = arg(g, "a23", TF_FLOAT32, 0, &s23, &st);
  tf_node_builder *b = tf_node_begin(g, "Neg", "neg");
  tf_node_add_input(b, (tf_output){a, 0});
  tf_node *neg = tf_node_finish(b, &st);
  ck_assert_msg(neg != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(neg, 0), s23);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_retval_infers_type) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_of(1, 4));
  tf_node_builder *b = tf_node_begin(g, "_Retval", "ret");
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_set_attr(b, "index", tf_attr_int(3));
  tf_node *r = tf_node_finish(b, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  tf_dtype t = TF_DTYPE_INVALID;
  ck_assert_int_eq(tf_node_attr_get_type(r, "T", &t, &st), TF_OK);
  ck_assert_int_eq(t, TF_INT32);
  ck_assert_int_eq(tf_node_num_outputs(r), 0);
  ck_assert_int_eq(tf_node_num_inputs(r), 1);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_bad_attrs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  /* A negative index is below the attr's minimum. */
  ck_assert_ptr_null(arg(g, "neg_index", TF_FLOAT32, -1, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "neg_index");
  ASSERT_HAS(st.msg, "index");
  /* T has no default and cannot be inferred for a source. */
  ck_assert_ptr_null(arg(g, "no_type", TF_DTYPE_INVALID, 0, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "no_type");
  ASSERT_HAS(st.msg, "T");
  /* _Retval needs its index. */
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_node_builder *b = tf_node_begin(g, "_Retval", "no_index");
  tf_node_add_input(b, (tf_output){x, 0});
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "no_index");
  ASSERT_HAS(st.msg, "index");
  /* Nothing half-added. */
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_function");
  TCase *tc = tcase_create("ops_function");
  tcase_add_test(tc, test_arg_spec);
  tcase_add_test(tc, test_retval_spec);
  tcase_add_test(tc, test_arg_shape_and_type);
  tcase_add_test(tc, test_retval_infers_type);
  tcase_add_test(tc, test_bad_attrs);
  suite_add_tcase(s, tc);
  return s;
}
