/* cpu_base.c: CPU kernels for Const, Placeholder, Identity and NoOp. */
#include "lib/core/framework/kernel.h"

static tf_code const_compute(tf_kernel_ctx *ctx) {
  tf_tensor *v;
  tf_code rc = tf_node_attr_get_tensor(ctx->node, "value", &v, ctx->status);
  if (rc != TF_OK) return rc;
  tf_kernel_set_output(ctx, 0, v); /* tensors in attrs are immutable */
  return TF_OK;
}

static tf_code placeholder_compute(tf_kernel_ctx *ctx) {
  char buf[200];
  const tf_shape *s = tf_node_output_shape(ctx->node, 0);
  return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                         "you must feed a value for placeholder tensor '%s' "
                         "with dtype %s and shape %s",
                         tf_node_name(ctx->node),
                         tf_dtype_name(tf_node_output_type(ctx->node, 0)),
                         tf_shape_str(s, buf, sizeof buf));
}

static tf_code identity_compute(tf_kernel_ctx *ctx) {
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

static tf_code noop_compute(tf_kernel_ctx *ctx) {
  (void)ctx;
  return TF_OK;
}

static const tf_kernel_def base_kernels[] = {
    {.op = "Const", .device_type = TF_DEVICE_CPU, .type_attr = "dtype",
     .compute = const_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "Placeholder", .device_type = TF_DEVICE_CPU, .type_attr = "dtype",
     .compute = placeholder_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "PlaceholderWithDefault", .device_type = TF_DEVICE_CPU,
     .type_attr = "dtype", .compute = identity_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "Identity", .device_type = TF_DEVICE_CPU,
     .compute = identity_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "NoOp", .device_type = TF_DEVICE_CPU, .compute = noop_compute,
     .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(base_kernels)
