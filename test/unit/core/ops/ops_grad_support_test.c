/* ops_grad_support_test.c: specs and shape inference of StopGradient,
 * BroadcastGradientArgs, UnsortedSegmentSum and CheckNumerics, and the
 * graph-build errors their shape functions and type sets give. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

static void assert_shape_eq(tf_shape got, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "inferred %s, want %s",
                tf_shape_str(&got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
}

START_TEST(test_flags) {
  ck_assert(tf_op_lookup("StopGradient")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(tf_op_lookup("BroadcastGradientArgs")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(tf_op_lookup("UnsortedSegmentSum")->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert(!(tf_op_lookup("CheckNumerics")->flags & TF_OP_NOT_DIFFERENTIABLE));
}
END_TEST

START_TEST(test_shapes) {
  tt_input sg = {TF_STRING, tf_shape_of(2, 3, U)};
  assert_shape_eq(tt_infer_shape("StopGradient", &sg, 1, false, NULL, 0, 0, NULL),
                  tf_shape_of(2, 3, U));
  tt_input b[2] = {{TF_INT64, tf_shape_of(1, 3)}, {TF_INT64, tf_shape_unknown()}};
  tf_dtype dt;
  assert_shape_eq(tt_infer_shape("BroadcastGradientArgs", b, 2, false, NULL, 0, 1, &dt),
                  tf_shape_of(1, U));
  ck_assert_int_eq(dt, TF_INT64);
  tt_input s[3] = {{TF_FLOAT32, tf_shape_of(3, 4, 5, 6)}, {TF_INT32, tf_shape_of(2, 4, U)},
                   {TF_INT32, tf_shape_scalar()}};
  assert_shape_eq(tt_infer_shape("UnsortedSegmentSum", s, 3, false, NULL, 0, 0, NULL),
                  tf_shape_of(2, U, 6));
  tt_input c = {TF_FLOAT64, tf_shape_of(1, 7)};
  tf_attr_kv kv = {"message", tf_attr_string("m")};
  assert_shape_eq(tt_infer_shape("CheckNumerics", &c, 1, false, &kv, 1, 0, NULL),
                  tf_shape_of(1, 7));
}
END_TEST

/* A constant num_segments gives the first dim. */
START_TEST(test_segment_sum_const_num) {
  tf_graph *g = tf_graph_new();
  tf_output d = {tt_placeholder(g, "d", TF_FLOAT32, tf_shape_of(2, 5, 3)), 0};
  tf_output i = {tt_placeholder(g, "i", TF_INT32, tf_shape_of(1, 5)), 0};
  tf_output n = {tt_const(g, "n", tf_tensor_scalar_i32(9)), 0};
  tf_node *s = tt_node(g, "UnsortedSegmentSum", "s", (tf_output[]){d, i, n}, 3, NULL, 0);
  assert_shape_eq(*tf_node_output_shape(s, 0), tf_shape_of(2, 9, 3));
  tf_graph_free(g);
}
END_TEST

static void expect_build_error(const char *op, const tt_input *in, int n,
                               const tf_attr_kv *kv, int n_kv, const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *node = tt_build_node(g, op, "x", in, n, false, kv, n_kv, &st);
  ck_assert_msg(node == NULL, "%s: expected an error", op);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "%s: %s", op, st.msg);
  tf_graph_free(g);
}

START_TEST(test_errors) {
  tt_input b[2] = {{TF_INT32, tf_shape_of(2, 1, 3)}, {TF_INT32, tf_shape_of(1, 3)}};
  expect_build_error("BroadcastGradientArgs", b, 2, NULL, 0, "s0 must be a vector");
  tt_input s[3] = {{TF_FLOAT32, tf_shape_of(2, 4, 5)}, {TF_INT32, tf_shape_of(1, 3)},
                   {TF_INT32, tf_shape_scalar()}};
  expect_build_error("UnsortedSegmentSum", s, 3, NULL, 0, "prefix");
  s[1].shape = tf_shape_of(1, 4);
  s[2].shape = tf_shape_of(1, 1);
  expect_build_error("UnsortedSegmentSum", s, 3, NULL, 0, "num_segments must be a scalar");
  tt_input c = {TF_INT32, tf_shape_of(1, 7)};
  tf_attr_kv kv = {"message", tf_attr_string("m")};
  expect_build_error("CheckNumerics", &c, 1, &kv, 1, "int32");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_grad_support");
  TCase *tc = tcase_create("specs");
  tcase_add_test(tc, test_flags);
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_segment_sum_const_num);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
