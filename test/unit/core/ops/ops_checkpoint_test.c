/* ops_checkpoint_test.c: the SaveV2 and RestoreV2 specs against
 * TensorFlow's (names, input and output order and types, the dtypes
 * attr), stateful and without a gradient, with CPU kernels; their shape
 * functions refuse a non-scalar prefix and names or slices whose known
 * length differs from the number of tensors, and accept unknown shapes. */
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/graph/grad_registry.h"
#include "test/unit/testutil.h"

START_TEST(test_specs) {
  const char *ops[] = {"SaveV2", "RestoreV2"};
  for (int i = 0; i < 2; i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(tf_op_family_of(d), "checkpoint");
    ck_assert(d->flags & TF_OP_STATEFUL);
    ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
    ck_assert_ptr_null(tf_grad_lookup(ops[i]));
    ck_assert(tf_kernel_exists(ops[i], TF_DEVICE_CPU));
    ck_assert_ptr_nonnull(d->spec->deviation);
    const char *in[] = {"prefix", "tensor_names", "shape_and_slices"};
    for (int k = 0; k < 3; k++) {
      ck_assert_str_eq(d->inputs[k].name, in[k]);
      ck_assert_int_eq(d->inputs[k].fixed_type, TF_STRING);
      ck_assert(!d->inputs[k].is_ref);
    }
    const tf_attr_def *a = tf_op_find_attr(d, "dtypes");
    ck_assert(a != NULL && a->type == TF_ATTR_TYPE && a->is_list && !a->has_default);
    ck_assert_int_eq(d->n_attrs, 1);
  }
  const tf_op_def *save = tf_op_lookup("SaveV2"), *restore = tf_op_lookup("RestoreV2");
  ck_assert_int_eq(save->n_inputs, 4);
  ck_assert_int_eq(save->n_outputs, 0);
  ck_assert_str_eq(save->inputs[3].name, "tensors");
  ck_assert_str_eq(save->inputs[3].type_list_attr, "dtypes");
  ck_assert_int_eq(restore->n_inputs, 3);
  ck_assert_int_eq(restore->n_outputs, 1);
  ck_assert_str_eq(restore->outputs[0].name, "tensors");
  ck_assert_str_eq(restore->outputs[0].type_list_attr, "dtypes");
}
END_TEST

START_TEST(test_shapes) {
  tf_status st;
  tf_dtype two[2] = {TF_FLOAT32, TF_INT64};
  tf_attr_kv a = {"dtypes", tf_attr_type_list(two, 2)};
  tt_input str_vec2 = {TF_STRING, tf_shape_of(1, 2)};
  tt_input str_vec3 = {TF_STRING, tf_shape_of(1, 3)};
  tt_input str_scalar = {TF_STRING, tf_shape_of(0)};
  tt_input any = {TF_STRING, tf_shape_unknown()};
  struct { tt_input in[3]; const char *err; } cases[] = {
      {{str_scalar, str_vec2, str_vec2}, NULL},
      {{any, any, any}, NULL},
      {{str_vec2, str_vec2, str_vec2}, "prefix must be a scalar"},
      {{str_scalar, str_vec3, str_vec2}, "tensor_names has 3 entries but there are 2"},
      {{str_scalar, str_vec2, str_vec3}, "shape_and_slices has 3 entries"},
      {{str_scalar, {TF_STRING, tf_shape_of(2, 2, 1)}, str_vec2}, "tensor_names must be a vector"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tf_graph *g = tf_graph_new();
    tf_node *n = tt_build_node(g, "RestoreV2", "r", cases[i].in, 3, false, &a, 1, &st);
    if (cases[i].err == NULL) {
      ck_assert_msg(n != NULL, "case %zu: %s", i, st.msg);
      ck_assert_int_eq(tf_node_num_outputs(n), 2);
      ck_assert_int_eq(tf_node_output_shape(n, 0)->rank, TF_UNKNOWN_RANK);
      ck_assert_int_eq(tf_node_output_type(n, 1), TF_INT64);
    } else {
      ck_assert_msg(n == NULL && strstr(st.msg, cases[i].err) && strstr(st.msg, "RestoreV2"),
                    "case %zu: %s", i, n ? "built" : st.msg);
    }
    tf_graph_free(g);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_checkpoint");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_shapes);
  suite_add_tcase(s, tc);
  return s;
}
