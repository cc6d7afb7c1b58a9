/* Tests for kernel lookup (exact dtype before ANY), error messages for
 * missing kernels, output helpers and the synchronous runner. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static const tf_op_spec kr_ops[] = {
    {.name = "TestTwice", .inputs = {"x: T"}, .outputs = {"y: T"},
     .attrs = {"T: type"}, .shape_fn = tf_shape_fn_unchanged, .doc = "test"},
    {.name = "TestNoKernel", .outputs = {"y: float"}, .doc = "test"},
    {.name = "TestForgets", .outputs = {"y: float"}, .doc = "test"},
    {.name = "TestFails", .outputs = {"y: float"}, .doc = "test"},
};
TF_REGISTER_OPS("test", kr_ops)

typedef struct { float k; } twice_state;

static tf_code twice_init(const tf_node *n, void **state, tf_status *st) {
  twice_state *s = malloc(sizeof *s);
  s->k = 2.0f;
  *state = s;
  return TF_OK;
}

static tf_code twice_f32(tf_kernel_ctx *ctx) {
  const twice_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0], *y;
  tf_code rc = tf_kernel_forward_or_alloc(ctx, 0, 0, TF_FLOAT32, &x->shape, &y);
  if (rc != TF_OK) return rc;
  for (int64_t i = 0; i < x->n; i++) ((float *)y->data)[i] = s->k * ((float *)x->data)[i];
  return TF_OK;
}

static tf_code twice_any(tf_kernel_ctx *ctx) {
  return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "generic twice for %s",
                         tf_dtype_name(ctx->inputs[0]->dtype));
}

static tf_code forgets(tf_kernel_ctx *ctx) { (void)ctx; return TF_OK; }

static tf_code fails(tf_kernel_ctx *ctx) {
  tf_shape s = tf_shape_of(1, 4);
  tf_kernel_alloc_output(ctx, 0, TF_FLOAT32, &s, NULL);
  return tf_kernel_error(ctx, TF_OUT_OF_RANGE, "value %d too big", 42);
}

static const tf_kernel_def kr_kernels[] = {
    {.op = "TestTwice", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .init = twice_init, .compute = twice_f32, .free_state = free},
    {.op = "TestTwice", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .compute = twice_any},
    {.op = "TestForgets", .device_type = TF_DEVICE_CPU, .compute = forgets},
    {.op = "TestFails", .device_type = TF_DEVICE_CPU, .compute = fails},
};
TF_REGISTER_KERNELS(kr_kernels)

START_TEST(test_lookup_order) {
  const tf_kernel_def *k = tf_kernel_lookup("TestTwice", TF_DEVICE_CPU, TF_FLOAT32);
  ck_assert_ptr_nonnull(k);
  ck_assert_ptr_eq(k->compute, twice_f32);
  k = tf_kernel_lookup("TestTwice", TF_DEVICE_CPU, TF_INT8);
  ck_assert_ptr_eq(k->compute, twice_any);
  ck_assert_ptr_null(tf_kernel_lookup("TestTwice", TF_DEVICE_GPU, TF_FLOAT32));
  ck_assert(tf_kernel_exists("TestTwice", TF_DEVICE_CPU));
  ck_assert(!tf_kernel_exists("TestNoKernel", TF_DEVICE_CPU));
  tf_dtype dts[4];
  ck_assert_int_eq(tf_kernel_dtypes("TestTwice", TF_DEVICE_CPU, dts, 4), 2);
}
END_TEST

START_TEST(test_run_forward_and_errors) {
  tf_tensor *x = tf_tensor_vec_f32(3, (float[]){1, -2, 3});
  tf_tensor *y = tt_run1("TestTwice", &x, 1, NULL, 0);
  ck_assert(((float *)y->data)[1] == -4.0f);
  ck_assert_ptr_ne(y->data, x->data); /* the caller still holds x */
  tf_tensor_unref(y);
  tf_tensor_unref(x);
  tf_tensor *i8 = tt_rand(TF_INT8, tf_shape_of(1, 2), 0, 3);
  const char *msg = tt_run_fail("TestTwice", &i8, 1, NULL, 0, TF_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(msg, "generic twice for int8"));
  ck_assert_ptr_nonnull(strstr(msg, "(TestTwice)"));
  tf_tensor_unref(i8);
  msg = tt_run_fail("TestNoKernel", NULL, 0, NULL, 0, TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(msg, "no CPU kernel for op TestNoKernel"));
  msg = tt_run_fail("TestForgets", NULL, 0, NULL, 0, TF_INTERNAL);
  ck_assert_ptr_nonnull(strstr(msg, "did not set output 0"));
  msg = tt_run_fail("TestFails", NULL, 0, NULL, 0, TF_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(strstr(msg, "value 42 too big")); /* output freed: ASan */
}
END_TEST

START_TEST(test_forward_reuses_unique_buffer) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  tf_node_builder *b = tf_node_begin(g, "TestTwice", "t");
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node *t = tf_node_finish(b, &st);
  ck_assert_ptr_nonnull(t);
  tf_tensor *in = tf_tensor_vec_f32(2, (float[]){1, 2});
  void *data = in->data;
  tf_tensor *out[1] = {NULL};
  /* through the runner: the caller's tensor is never overwritten */
  ck_assert_int_eq(tf_kernel_run_node(t, NULL, &in, out, &st), TF_OK);
  ck_assert_ptr_ne(out[0]->data, data);
  ck_assert(((float *)in->data)[1] == 2.0f && ((float *)out[0]->data)[1] == 4.0f);
  tf_tensor_unref(out[0]);
  /* as the executor calls it, holding the only reference: in place */
  const tf_kernel_def *k = tf_kernel_for_node(t, TF_DEVICE_CPU, &st);
  void *state;
  ck_assert_int_eq(k->init(t, &state, &st), TF_OK);
  out[0] = NULL;
  tf_kernel_ctx ctx = {.node = t, .def = k, .state = state, .n_inputs = 1,
                       .inputs = &in, .n_outputs = 1, .outputs = out,
                       .status = &st};
  ck_assert_int_eq(k->compute(&ctx), TF_OK);
  ck_assert_ptr_eq(out[0]->data, data);
  ck_assert(((float *)out[0]->data)[1] == 4.0f);
  k->free_state(state);
  tf_tensor_unref(out[0]);
  tf_tensor *wrong = tf_tensor_scalar_i32(1);
  ck_assert_int_eq(tf_kernel_run_node(t, NULL, &wrong, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "input 0 is int32, expected float32"));
  tf_tensor_unref(wrong);
  tf_tensor_unref(in);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("kernel_registry");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_lookup_order);
  tcase_add_test(tc, test_run_forward_and_errors);
  tcase_add_test(tc, test_forward_reuses_unique_buffer);
  suite_add_tcase(s, tc);
  return s;
}
