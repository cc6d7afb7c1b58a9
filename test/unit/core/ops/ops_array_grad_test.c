/* ops_array_grad_test.c: the StridedSliceGrad op spec: TF's signature and
 * defaults, shape inference from a constant shape input (or rank only from
 * a fed one), and graph-build errors for a bad shape input or a dy that
 * cannot match the slice selected by constant begin/end/strides. */
#include <check.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static tf_output cvec(tf_graph *g, int n, const int64_t *v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_vec_i64(n, v)), 0};
}

/* StridedSliceGrad with constant shape/begin/end/strides and a dy
 * placeholder of shape dys; NULL on error (message in st). */
static tf_node *build(tf_graph *g, tf_output shape, const int64_t *b,
                      const int64_t *e, const int64_t *s, int n, tf_shape dys,
                      int64_t shrink, tf_status *st) {
  tf_output in[5] = {shape, cvec(g, n, b), cvec(g, n, e), cvec(g, n, s),
                     {tt_placeholder(g, NULL, TF_FLOAT32, dys), 0}};
  tf_node_builder *nb = tf_node_begin(g, "StridedSliceGrad", NULL);
  for (int i = 0; i < 5; i++) {
    tf_node_add_input(nb, in[i]);
  }
  tf_node_set_attr(nb, "shrink_axis_mask", tf_attr_int(shrink));
  return tf_node_finish(nb, st);
}

START_TEST(test_spec) {
  const tf_op_def *op = tf_op_lookup("StridedSliceGrad");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(op->n_inputs, 5);
  ck_assert_str_eq(op->inputs[0].name, "shape");
  ck_assert_str_eq(op->inputs[4].name, "dy");
  const char *masks[5] = {"begin_mask", "end_mask", "ellipsis_mask",
                          "new_axis_mask", "shrink_axis_mask"};
  for (int i = 0; i < 5; i++) {
    const tf_attr_def *a = tf_op_find_attr(op, masks[i]);
    ck_assert_ptr_nonnull(a);
    ck_assert(a->has_default && a->default_value.u.i == 0);
  }
  ck_assert_str_eq(tf_op_family_of(op), "array");
}
END_TEST

START_TEST(test_shape_inference) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_node *n = build(g, cvec(g, 2, (int64_t[]){5, 4}), (int64_t[]){1, 0},
                     (int64_t[]){5, 4}, (int64_t[]){2, 1}, 2,
                     tf_shape_of(2, 2, 4), 0, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_shape want = tf_shape_of(2, 5, 4);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  /* dy of unknown dims is accepted. */
  n = build(g, cvec(g, 2, (int64_t[]){5, 4}), (int64_t[]){1, 2},
            (int64_t[]){2, 4}, (int64_t[]){1, 1}, 2, tf_shape_of(1, -1), 1,
            &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  /* A fed shape of length 3 gives rank 3 with unknown dims. */
  tt_input in[5] = {{TF_INT32, tf_shape_of(1, 3)}, {TF_INT32, tf_shape_of(1, 3)},
                    {TF_INT32, tf_shape_of(1, 3)}, {TF_INT32, tf_shape_of(1, 3)},
                    {TF_FLOAT64, tf_shape_unknown()}};
  tf_shape s = tt_infer_shape("StridedSliceGrad", in, 5, false, NULL, 0, 0, NULL);
  ck_assert_int_eq(s.rank, 3);
  ck_assert_int_eq(s.dims[0], -1);
  in[0].shape = tf_shape_unknown();
  s = tt_infer_shape("StridedSliceGrad", in, 5, false, NULL, 0, 0, NULL);
  ck_assert_int_eq(s.rank, TF_UNKNOWN_RANK);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_node *n = build(g, cvec(g, 2, (int64_t[]){5, 4}), (int64_t[]){1, 0},
                     (int64_t[]){5, 4}, (int64_t[]){2, 1}, 2,
                     tf_shape_of(2, 3, 4), 0, &st);
  ck_assert_ptr_null(n);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "shape of dy was [3,4] instead of [2,4]"), "%s",
                st.msg);
  n = build(g, cvec(g, 1, (int64_t[]){-1}), (int64_t[]){0}, (int64_t[]){1},
            (int64_t[]){1}, 1, tf_shape_of(1, 1), 0, &st);
  ck_assert_ptr_null(n);
  ck_assert_msg(strstr(st.msg, "shape[0] = -1 must be >= 0"), "%s", st.msg);
  tt_input in[5] = {{TF_INT32, tf_shape_of(2, 1, 2)}, {TF_INT32, tf_shape_of(1, 2)},
                    {TF_INT32, tf_shape_of(1, 2)}, {TF_INT32, tf_shape_of(1, 2)},
                    {TF_FLOAT64, tf_shape_unknown()}};
  ck_assert_ptr_null(tt_build_node(g, "StridedSliceGrad", NULL, in, 5, false,
                                   NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "shape must be a vector"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array_grad");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_spec);
  tcase_add_test(tc, test_shape_inference);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
