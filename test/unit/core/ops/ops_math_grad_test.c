/* ops_math_grad_test.c: specs and shape inference of the fused backward
 * ops (ReluGrad ... RsqrtGrad, BiasAddGrad) and their graph-build errors. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

static void assert_shape_eq(tf_shape got, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "inferred %s, want %s",
                tf_shape_str(&got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
}

static const char *const k_ops[] = {"ReluGrad", "Relu6Grad", "EluGrad", "SoftplusGrad",
                                    "SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad"};

START_TEST(test_elementwise_shapes) {
  for (int k = 0; k < 8; k++) {
    const tf_op_def *op = tf_op_lookup(k_ops[k]);
    ck_assert_ptr_nonnull(op);
    ck_assert(!(op->flags & TF_OP_NOT_DIFFERENTIABLE));
    tt_input in[2] = {{TF_FLOAT32, tf_shape_of(2, U, 4)}, {TF_FLOAT32, tf_shape_of(2, 3, U)}};
    assert_shape_eq(tt_infer_shape(k_ops[k], in, 2, false, NULL, 0, 0, NULL),
                    tf_shape_of(2, 3, 4));
    in[0].shape = tf_shape_unknown();
    assert_shape_eq(tt_infer_shape(k_ops[k], in, 2, false, NULL, 0, 0, NULL),
                    tf_shape_of(2, 3, U));
    tf_graph *g = tf_graph_new();
    tf_status st;
    in[0].shape = tf_shape_of(1, 3);
    in[1].shape = tf_shape_of(1, 4);
    ck_assert_ptr_null(tt_build_node(g, k_ops[k], "x", in, 2, false, NULL, 0, &st));
    ck_assert_msg(strstr(st.msg, "same shape"), "%s", st.msg);
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_bias_add_grad_shape) {
  tt_input in = {TF_FLOAT64, tf_shape_of(4, 2, 3, 5, 7)};
  assert_shape_eq(tt_infer_shape("BiasAddGrad", &in, 1, false, NULL, 0, 0, NULL),
                  tf_shape_of(1, 7));
  tf_attr_kv kv = {"data_format", tf_attr_string("NCHW")};
  assert_shape_eq(tt_infer_shape("BiasAddGrad", &in, 1, false, &kv, 1, 0, NULL),
                  tf_shape_of(1, 3));
  in.shape = tf_shape_unknown();
  assert_shape_eq(tt_infer_shape("BiasAddGrad", &in, 1, false, NULL, 0, 0, NULL),
                  tf_shape_of(1, U));
  tf_graph *g = tf_graph_new();
  tf_status st;
  in.shape = tf_shape_of(1, 5);
  ck_assert_ptr_null(tt_build_node(g, "BiasAddGrad", "x", &in, 1, false, NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "at least 2-D"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_math_grad");
  TCase *tc = tcase_create("specs");
  tcase_add_test(tc, test_elementwise_shapes);
  tcase_add_test(tc, test_bias_add_grad_shape);
  suite_add_tcase(s, tc);
  return s;
}
