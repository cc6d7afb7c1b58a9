/* Tests for tf_execute: input splitting for list arguments (N * T and
 * type lists), attr inference, output capacity and error reporting. */
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static const tf_op_spec eager_ops[] = {
    {.name = "TestEagerList", .inputs = {"x: T", "ys: N * T"}, .outputs = {"z: T"},
     .attrs = {"T: type", "N: int >= 0"}, .doc = "test"},
    {.name = "TestEagerTwoLists", .inputs = {"a: N * T", "b: M * T"}, .outputs = {"z: T"},
     .attrs = {"T: type", "N: int >= 0", "M: int >= 0"}, .doc = "test"},
    {.name = "TestEagerTuple", .inputs = {"x: T", "comps: Tl"}, .outputs = {"out: Tl"},
     .attrs = {"T: type", "Tl: list(type)"}, .doc = "test"},
    {.name = "TestEagerTupleAndList", .inputs = {"comps: Tl", "ys: N * T"},
     .outputs = {"out: Tl"}, .attrs = {"T: type", "Tl: list(type)", "N: int >= 0"},
     .doc = "test"},
};
TF_REGISTER_OPS("test", eager_ops)

/* Outputs the type-list inputs unchanged (they start at input `first`). */
static tf_code tuple_compute(tf_kernel_ctx *ctx) {
  int first = ctx->n_inputs - ctx->n_outputs;
  if (strcmp(tf_node_op(ctx->node), "TestEagerTupleAndList") == 0) first = 0;
  for (int i = 0; i < ctx->n_outputs; i++) {
    tf_kernel_set_output(ctx, i, ctx->inputs[first + i]);
  }
  return TF_OK;
}

static const tf_kernel_def eager_kernels[] = {
    {.op = "TestEagerTuple", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .compute = tuple_compute},
    {.op = "TestEagerTupleAndList", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = tuple_compute},
};
TF_REGISTER_KERNELS(eager_kernels)

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

START_TEST(test_type_list_inputs) {
  tf_status st;
  tf_tensor *x = tf_tensor_scalar_f32(1);
  tf_tensor *a = tf_tensor_scalar_i32(7), *b = tf_tensor_scalar_f64(2.5);
  tf_tensor *in[3] = {x, a, b}, *out[3] = {NULL};
  /* the type list takes what the single arg leaves; its attr is inferred */
  int n = 3;
  ck_assert_msg(tf_execute("TestEagerTuple", in, 3, NULL, 0, out, &n, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(n, 2);
  ck_assert_ptr_eq(out[0], a);
  ck_assert_ptr_eq(out[1], b);
  tt_free(out, 2);
  /* a type list and an N * T list split by their attrs */
  tf_dtype tl[1] = {TF_INT32};
  tf_attr_kv attrs[] = {{"Tl", tf_attr_type_list(tl, 1)}, {"N", tf_attr_int(2)}};
  tf_tensor *in2[3] = {a, x, x};
  n = 3;
  ck_assert_msg(tf_execute("TestEagerTupleAndList", in2, 3, attrs, 2, out, &n, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(n, 1);
  ck_assert_ptr_eq(out[0], a);
  tt_free(out, 1);
  /* with one of them the other list takes the rest */
  n = 3;
  ck_assert_msg(tf_execute("TestEagerTupleAndList", in2, 3, attrs + 1, 1, out, &n, &st) == TF_OK,
                "%s", st.msg);
  ck_assert(n == 1 && out[0] == a);
  tt_free(out, 1);
  /* with neither the split is ambiguous */
  n = 3;
  ck_assert_int_eq(tf_execute("TestEagerTupleAndList", in2, 3, NULL, 0, out, &n, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "several list inputs"));
  /* a given attr that disagrees with the dtypes */
  tf_dtype wrong[2] = {TF_INT32, TF_FLOAT32};
  tf_attr_kv bad[] = {{"Tl", tf_attr_type_list(wrong, 2)}};
  n = 3;
  ck_assert_int_eq(tf_execute("TestEagerTuple", in, 3, bad, 1, out, &n, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "position 1 (from 'in2:0') has type "
                               "float64, but attr Tl says float32"));
  tf_tensor_unref(x);
  tf_tensor_unref(a);
  tf_tensor_unref(b);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("eager");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_identity_and_const);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_noop_has_no_outputs);
  tcase_add_test(tc, test_type_list_inputs);
  suite_add_tcase(s, tc);
  return s;
}
