/* Tests for graph storage: accessors, typed attr getters, tensor-name
 * lookup and whole-graph validation. */
#include <string.h>

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

Suite *tt_suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_attr_getters);
  tcase_add_test(tc, test_const_attr_tensor_and_list_attrs);
  tcase_add_test(tc, test_validate_acyclic);
  suite_add_tcase(s, tc);
  return s;
}
