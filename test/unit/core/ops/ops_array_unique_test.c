/* ops_array_unique_test.c: the Unique spec (TF's arguments, out_idx
 * default int32, not differentiable) and its shape function: y is a
 * vector of unknown length, idx has x's shape, x must be a vector. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

START_TEST(test_spec) {
  const tf_op_def *d = tf_op_lookup("Unique");
  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(d->n_inputs, 1);
  ck_assert_str_eq(d->inputs[0].name, "x");
  ck_assert_int_eq(d->n_outputs, 2);
  ck_assert_str_eq(d->outputs[0].name, "y");
  ck_assert_str_eq(d->outputs[1].name, "idx");
  ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
  const tf_attr_def *a = tf_op_find_attr(d, "out_idx");
  ck_assert(a->has_default && a->default_value.u.t == TF_INT32);
}
END_TEST

START_TEST(test_shapes) {
  tt_input in = {TF_INT64, tf_shape_of(1, 7)};
  tf_dtype dt;
  tf_shape y = tt_infer_shape("Unique", &in, 1, false, NULL, 0, 0, &dt);
  ck_assert_int_eq(dt, TF_INT64);
  ck_assert_int_eq(y.rank, 1);
  ck_assert_int_eq(y.dims[0], TF_UNKNOWN_DIM);
  tf_attr_kv a[] = {{"out_idx", tf_attr_type_v(TF_INT64)}};
  tf_shape idx = tt_infer_shape("Unique", &in, 1, false, a, 1, 1, &dt);
  ck_assert_int_eq(dt, TF_INT64);
  ck_assert(tf_shape_equal(&idx, &in.shape));
  tt_input bad = {TF_INT32, tf_shape_of(2, 2, 3)};
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_ptr_null(tt_build_node(g, "Unique", NULL, &bad, 1, false, NULL, 0,
                                   &st));
  ck_assert_msg(strstr(st.msg, "x must be a vector, got shape [2,3]"), "%s",
                st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array_unique");
  TCase *c = tcase_create("core");
  tcase_add_test(c, test_spec);
  tcase_add_test(c, test_shapes);
  suite_add_tcase(s, c);
  return s;
}
