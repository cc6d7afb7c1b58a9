/* Tests for tf_execute: input splitting for list arguments, attr
 * inference, output capacity and error reporting. */
#include <string.h>

#include "lib/core/op_registry.h"
#include "test/unit/testutil.h"

static const tf_op_spec eager_ops[] = {
    {.name = "TestEagerList", .inputs = {"x: T", "ys: N * T"}, .outputs = {"z: T"},
     .attrs = {"T: type", "N: int >= 0"}, .doc = "test"},
    {.name = "TestEagerTwoLists", .inputs = {"a: N * T", "b: M * T"}, .outputs = {"z: T"},
     .attrs = {"T: type", "N: int >= 0", "M: int >= 0"}, .doc = "test"},
};
TF_REGISTER_OPS("test", eager_ops)

START_TEST(test_identity_and_const) {
  tf_tensor *x = tf_tensor_vec_i64(2, (int64_t[]){5, -6});
  tf_tensor *y = tt_run1("Identity", &x, 1, NULL, 0);
  ck_assert_ptr_eq(y->data, x->data); /* Identity shares the buffer */
  tf_tensor_unref(y);
  tf_attr_kv attrs[] = {{"value", tf_attr_tensor(x)}, {"dtype", tf_attr_type_v(TF_INT64)}};
  tf_tensor *c = tt_run1("Const", NULL, 0, attrs, 2);
  tt_assert_close(c, x, 0, 0);
  tf_tensor_unref(c);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_errors) {
  tf_status st;
  tf_tensor *out[1];
  int n = 1;
  ck_assert_int_eq(tf_execute("NoSuchOp", NULL, 0, NULL, 0, out, &n, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "NoSuchOp"));
  tf_tensor *x = tf_tensor_scalar_f32(1);
  tf_tensor *two[2] = {x, x};
  n = 1;
  ck_assert_int_eq(tf_execute("Identity", two, 2, NULL, 0, out, &n, &st), TF_INVALID_ARGUMENT);
  n = 0;
  ck_assert_int_eq(tf_execute("Identity", &x, 1, NULL, 0, out, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "room for 0"));
  tf_tensor *null_in[1] = {NULL};
  n = 1;
  ck_assert_int_eq(tf_execute("Identity", null_in, 1, NULL, 0, out, &n, &st), TF_INVALID_ARGUMENT);
  /* two list args without their length attrs cannot be split */
  n = 1;
  ck_assert_int_eq(tf_execute("TestEagerTwoLists", two, 2, NULL, 0, out, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "several list inputs"));
  /* a placeholder run without a feed says so */
  tf_attr_kv attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  const char *msg = tt_run_fail("Placeholder", NULL, 0, attrs, 1, TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(msg, "must feed a value for placeholder"));
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_noop_has_no_outputs) {
  tf_status st;
  tf_tensor *out[1] = {NULL};
  int n = 1;
  ck_assert_int_eq(tf_execute("NoOp", NULL, 0, NULL, 0, out, &n, &st), TF_OK);
  ck_assert_int_eq(n, 0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("eager");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_identity_and_const);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_noop_has_no_outputs);
  suite_add_tcase(s, tc);
  return s;
}
