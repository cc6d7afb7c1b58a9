/* Tests for the backward nn op specs (lib/core/ops/ops_nn_grad.c):
 * Conv2DBackpropInput, Conv2DBackpropFilter, MaxPoolGrad, AvgPoolGrad.
 * Output shapes come from constant sizes inputs or from the forward
 * input's shape; mismatches with out_backprop are rejected at build time,
 * naming the disagreeing dims. (The kernels are tested in
 * test/unit/devices/cpu/cpu_conv_grad_test.c and cpu_pool_grad_test.c.) */
#include <check.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static tf_output ph(tf_graph *g, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, TF_FLOAT32, s), 0};
}

static tf_output ivec(tf_graph *g, int n, const int32_t *v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_vec_i32(n, v)), 0};
}

/* Builds op(in) with conv/pool attrs; NULL with the error in *st. */
static tf_node *build(tf_graph *g, const char *op, const tf_output *in, int n,
                      bool pool, const char *padding, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) tf_node_add_input(b, in[i]);
  int64_t strides[4] = {1, 2, 2, 1}, ksize[4] = {1, 2, 2, 1};
  tf_node_set_attr(b, "strides", tf_attr_int_list(strides, 4));
  if (pool) tf_node_set_attr(b, "ksize", tf_attr_int_list(ksize, 4));
  tf_node_set_attr(b, "padding", tf_attr_string(padding));
  return tf_node_finish(b, st);
}

static void assert_shape(const tf_node *n, tf_shape want) {
  ck_assert_msg(n != NULL, "node not built");
  ck_assert_msg(tf_shape_equal(tf_node_output_shape(n, 0), &want), "shape mismatch");
}

START_TEST(test_conv_backprop_input) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  const int32_t sizes[4] = {8, 28, 28, 3};
  tf_output in[3] = {ivec(g, 4, sizes), ph(g, tf_shape_of(4, 5, 5, 3, 16)),
                     ph(g, tf_shape_of(4, 8, 14, 14, 16))};
  assert_shape(build(g, "Conv2DBackpropInput", in, 3, false, "SAME", &st),
               tf_shape_of(4, 8, 28, 28, 3));
  /* A filter whose in_depth disagrees with input_sizes is rejected. */
  in[1] = ph(g, tf_shape_of(4, 5, 5, 4, 16));
  ck_assert_ptr_null(build(g, "Conv2DBackpropInput", in, 3, false, "SAME", &st));
  ck_assert_msg(strstr(st.msg, "depth") != NULL, "%s", st.msg);
  /* A batch that disagrees with out_backprop. */
  in[1] = ph(g, tf_shape_of(4, 5, 5, 3, 16));
  in[2] = ph(g, tf_shape_of(4, 7, 14, 14, 16));
  ck_assert_ptr_null(build(g, "Conv2DBackpropInput", in, 3, false, "SAME", &st));
  ck_assert_msg(strstr(st.msg, "batch") != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_conv_backprop_filter) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  const int32_t sizes[4] = {5, 5, 3, 16};
  tf_output in[3] = {ph(g, tf_shape_of(4, 8, 28, 28, 3)), ivec(g, 4, sizes),
                     ph(g, tf_shape_of(4, 8, 14, 14, 16))};
  assert_shape(build(g, "Conv2DBackpropFilter", in, 3, false, "SAME", &st),
               tf_shape_of(4, 5, 5, 3, 16));
  const int32_t three[3] = {5, 5, 3};
  in[1] = ivec(g, 3, three);
  ck_assert_ptr_null(build(g, "Conv2DBackpropFilter", in, 3, false, "SAME", &st));
  ck_assert_msg(strstr(st.msg, "filter_sizes") != NULL, "%s", st.msg);
  const int32_t wrong_out[4] = {5, 5, 3, 32};
  in[1] = ivec(g, 4, wrong_out);
  ck_assert_ptr_null(build(g, "Conv2DBackpropFilter", in, 3, false, "SAME", &st));
  ck_assert_msg(strstr(st.msg, "out_depth") != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_pool_grads) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = ph(g, tf_shape_of(4, 2, 6, 6, 5)), y = ph(g, tf_shape_of(4, 2, 3, 3, 5));
  tf_output mp[3] = {x, y, ph(g, tf_shape_of(4, 2, 3, 3, 5))};
  assert_shape(build(g, "MaxPoolGrad", mp, 3, true, "VALID", &st), tf_shape_of(4, 2, 6, 6, 5));
  const int32_t sizes[4] = {2, 6, 6, 5};
  tf_output ap[2] = {ivec(g, 4, sizes), ph(g, tf_shape_of(4, 2, 3, 3, 5))};
  assert_shape(build(g, "AvgPoolGrad", ap, 2, true, "VALID", &st), tf_shape_of(4, 2, 6, 6, 5));
  const int32_t bad[2] = {6, 6};
  ap[0] = ivec(g, 2, bad);
  ck_assert_ptr_null(build(g, "AvgPoolGrad", ap, 2, true, "VALID", &st));
  ck_assert_msg(strstr(st.msg, "orig_input_shape") != NULL, "%s", st.msg);
  /* MaxPoolGrad has no gradient of its own; the others do. */
  ck_assert(tf_op_lookup("MaxPoolGrad")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(tf_op_lookup("AvgPoolGrad")->flags & TF_OP_NOT_DIFFERENTIABLE));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_nn_grad");
  TCase *tc = tcase_create("specs");
  tcase_add_test(tc, test_conv_backprop_input);
  tcase_add_test(tc, test_conv_backprop_filter);
  tcase_add_test(tc, test_pool_grads);
  suite_add_tcase(s, tc);
  return s;
}
