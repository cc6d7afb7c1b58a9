/* Tests for the base op specs: Const and Placeholder shapes and checks,
 * Identity's shape function, NoOp with control inputs. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

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

/* PlaceholderWithDefault: output takes the attr's shape; an incompatible
 * default is rejected naming both shapes; feeding another batch size works
 * and so does running on the default. */
START_TEST(test_placeholder_with_default) {
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 3), -1, 1));
  tf_attr_kv attrs[] = {{"shape", tf_attr_shape(tf_shape_of(2, -1, 3))}};
  tf_output in = {c, 0};
  tf_node *p = tt_node(g, "PlaceholderWithDefault", "p", &in, 1, attrs, 1);
  const tf_shape *s = tf_node_output_shape(p, 0);
  ck_assert_int_eq(s->rank, 2);
  ck_assert_int_eq(s->dims[0], -1);
  ck_assert_int_eq(s->dims[1], 3);
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "PlaceholderWithDefault", "bad");
  tf_node_add_input(b, in);
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(2, -1, 5)));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_msg(strstr(st.msg, "[4,3]") && strstr(st.msg, "[?,5]"), "%s", st.msg);
  tf_session *sess = tf_session_new(g, NULL, &st);
  const char *fetch = "p";
  tf_tensor *out = NULL;
  ck_assert_int_eq(tf_session_run(sess, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_int_eq(out->shape.dims[0], 4);
  tf_tensor_unref(out);
  tf_tensor *feed = tt_rand(TF_FLOAT32, tf_shape_of(2, 7, 3), -1, 1);
  ck_assert_int_eq(tf_session_run(sess, NULL, &fetch, &feed, 1, &fetch, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_ptr_eq(out, feed);
  tf_tensor_unref(out);
  tf_tensor_unref(feed);
  tf_session_free(sess);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_base");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_base_specs);
  tcase_add_test(tc, test_shapes_flow);
  tcase_add_test(tc, test_placeholder_with_default);
  suite_add_tcase(s, tc);
  return s;
}
