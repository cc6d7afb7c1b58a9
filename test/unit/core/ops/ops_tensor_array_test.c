/* ops_tensor_array_test.c: the TensorArrayV3 op specs (TF names, input and
 * output order, attrs and defaults, flags) and their shape functions:
 * handles are [2] and flows scalars, Read and Gather take the element shape
 * of the TensorArrayV3 the handle comes from (also through Identity), a
 * write of a conflicting shape is refused when the node is built, and
 * scalar/vector arguments of the wrong rank are named. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/tensor_array.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_output o(tf_node *n) { return (tf_output){n, 0}; }
static tf_output ci(tf_graph *g, int32_t v) {
  return o(tt_const(g, NULL, tf_tensor_scalar_i32(v)));
}

static void assert_shape(tf_output e, tf_shape want) {
  char a[96], b[96];
  const tf_shape *got = tf_node_output_shape(e.node, e.index);
  ck_assert_msg(got != NULL && tf_shape_equal(got, &want), "%s:%d has shape "
                "%s, want %s", tf_node_name(e.node), e.index,
                got ? tf_shape_str(got, a, sizeof a) : "none",
                tf_shape_str(&want, b, sizeof b));
}

START_TEST(test_specs) {
  struct { const char *op; int n_in, n_out; const char *first_in; } want[] = {
      {"TensorArrayV3", 1, 2, "size"},
      {"TensorArrayGradV3", 2, 2, "handle"},
      {"TensorArrayWriteV3", 4, 1, "handle"},
      {"TensorArrayReadV3", 3, 1, "handle"},
      {"TensorArrayGatherV3", 3, 1, "handle"},
      {"TensorArrayScatterV3", 4, 1, "handle"},
      {"TensorArrayConcatV3", 2, 2, "handle"},
      {"TensorArraySplitV3", 4, 1, "handle"},
      {"TensorArraySizeV3", 2, 1, "handle"},
      {"TensorArrayCloseV3", 1, 0, "handle"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const tf_op_def *d = tf_op_lookup(want[i].op);
    ck_assert_msg(d != NULL, "%s not registered", want[i].op);
    ck_assert_int_eq(d->n_inputs, want[i].n_in);
    ck_assert_int_eq(d->n_outputs, want[i].n_out);
    ck_assert_str_eq(d->inputs[0].name, want[i].first_in);
    ck_assert(d->flags & TF_OP_STATEFUL);
  }
  const tf_op_def *c = tf_op_lookup("TensorArrayV3");
  const tf_attr_def *a = tf_op_find_attr(c, "clear_after_read");
  ck_assert(a && a->has_default && a->default_value.u.b);
  a = tf_op_find_attr(c, "dynamic_size");
  ck_assert(a && a->has_default && !a->default_value.u.b);
  a = tf_op_find_attr(c, "identical_element_shapes");
  ck_assert(a && a->has_default && !a->default_value.u.b);
  a = tf_op_find_attr(c, "element_shape");
  ck_assert(a && a->has_default && a->default_value.u.shape.rank == TF_UNKNOWN_RANK);
  ck_assert(tf_op_find_attr(c, "tensor_array_name") != NULL);
  ck_assert(tf_op_find_attr(tf_op_lookup("TensorArrayGradV3"), "source") != NULL);
  ck_assert(tf_op_find_attr(tf_op_lookup("TensorArrayConcatV3"),
                            "element_shape_except0") != NULL);
  ck_assert_int_eq(tf_op_lookup("TensorArrayConcatV3")->outputs[1].fixed_type, TF_INT64);
}
END_TEST

START_TEST(test_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape es = SHAPE(3, -1);
  tf_tensor_array_options opts = {.element_shape = &es};
  tf_tensor_array ta;
  ck_assert(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 4), &opts, &ta, &st) == TF_OK);
  assert_shape(ta.handle, SHAPE(2));
  assert_shape(ta.flow, tf_shape_scalar());
  tf_output r, gth, size, cat, len;
  ck_assert(tf_tensor_array_read(g, &ta, ci(g, 0), &r, &st) == TF_OK);
  assert_shape(r, es);
  tf_output idx = o(tt_const(g, NULL, tf_tensor_vec_i32(2, (int32_t[]){0, 1})));
  ck_assert(tf_tensor_array_gather(g, &ta, idx, &gth, &st) == TF_OK);
  assert_shape(gth, SHAPE(2, 3, -1));
  ck_assert(tf_tensor_array_size(g, &ta, &size, &st) == TF_OK);
  assert_shape(size, tf_shape_scalar());
  ck_assert(tf_tensor_array_concat(g, &ta, &cat, &len, &st) == TF_OK);
  assert_shape(len, SHAPE(-1));
  /* Through Identity, the element shape is still seen. */
  tf_tensor_array via = ta;
  via.handle = o(tt_node(g, "Identity", NULL, &ta.handle, 1, NULL, 0));
  ck_assert(tf_tensor_array_read(g, &via, ci(g, 1), &r, &st) == TF_OK);
  assert_shape(r, es);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_shape_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape es = SHAPE(3);
  tf_tensor_array_options opts = {.element_shape = &es};
  tf_tensor_array ta;
  /* size must be a scalar */
  tf_output v2 = o(tt_const(g, NULL, tf_tensor_vec_i32(2, (int32_t[]){1, 2})));
  ck_assert(tf_tensor_array_new(g, TF_FLOAT32, v2, NULL, &ta, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "size must have rank 0") != NULL, "%s", st.msg);
  ck_assert(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 4), &opts, &ta, &st) == TF_OK);
  /* a write of a conflicting shape */
  tf_output bad = o(tt_const(g, NULL, tf_tensor_vec_f32(2, (float[]){1, 2})));
  ck_assert(tf_tensor_array_write(g, &ta, ci(g, 0), bad, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "value has shape [2]") != NULL &&
                strstr(st.msg, "elements have shape [3]") != NULL, "%s", st.msg);
  /* an index that is not a scalar; a gather with scalar indices */
  tf_output r;
  ck_assert(tf_tensor_array_read(g, &ta, v2, &r, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "index must have rank 0") != NULL, "%s", st.msg);
  ck_assert(tf_tensor_array_gather(g, &ta, ci(g, 0), &r, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "indices must have rank 1") != NULL, "%s", st.msg);
  /* a handle that is not [2] */
  tf_tensor *h3;
  tf_shape s3 = SHAPE(3);
  ck_assert(tf_tensor_new(TF_STRING, &s3, &h3, &st) == TF_OK);
  tf_node_builder *b = tf_node_begin(g, "TensorArraySizeV3", NULL);
  tf_node_add_input(b, o(tt_const(g, NULL, h3)));
  tf_node_add_input(b, ta.flow);
  ck_assert(tf_node_finish(b, &st) == NULL);
  ck_assert_msg(strstr(st.msg, "handle must be a TensorArray handle of shape "
                               "[2], got shape [3]") != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_tensor_array");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_shape_errors);
  suite_add_tcase(s, tc);
  return s;
}
