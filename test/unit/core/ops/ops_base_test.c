/* Tests for the base op specs: Const and Placeholder shapes and checks,
 * Identity's shape function, NoOp with control inputs. */
#include <string.h>

#include "lib/core/op_registry.h"
#include "test/unit/testutil.h"

START_TEST(test_base_specs) {
  const tf_op_def *c = tf_op_lookup("Const");
  ck_assert(c != NULL && (c->flags & TF_OP_SOURCE));
  const tf_op_def *p = tf_op_lookup("Placeholder");
  const tf_attr_def *shape = tf_op_find_attr(p, "shape");
  ck_assert(shape->has_default && shape->default_value.u.shape.rank == TF_UNKNOWN_RANK);
  ck_assert_int_eq(tf_op_lookup("NoOp")->n_outputs, 0);
  ck_assert_int_eq(tf_op_lookup("Identity")->n_inputs, 1);
}
END_TEST

START_TEST(test_shapes_flow) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "p");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT64));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(3, -1, 2, 0)));
  tf_node *p = tf_node_finish(b, &st);
  b = tf_node_begin(g, "Identity", "i");
  tf_node_add_input(b, (tf_output){p, 0});
  tf_node *i = tf_node_finish(b, &st);
  ck_assert_ptr_nonnull(i);
  ck_assert(tf_shape_equal(tf_node_output_shape(i, 0), &(tf_shape){3, {-1, 2, 0}}));
  ck_assert_int_eq(tf_node_output_type(i, 0), TF_FLOAT64);
  b = tf_node_begin(g, "NoOp", "init");
  tf_node_add_control_input(b, i);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_ptr_nonnull(n);
  ck_assert_int_eq(tf_node_num_outputs(n), 0);
  b = tf_node_begin(g, "Const", "novalue");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "missing attr 'value'"));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_base");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_base_specs);
  tcase_add_test(tc, test_shapes_flow);
  suite_add_tcase(s, tc);
  return s;
}
