/* cpu_function.c: kernels for _Arg and _Retval, which move a step's fed
 * and fetched tensors between the session and the graph. */
#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

static tf_code arg_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  int64_t index = 0;
  tf_node_attr_get_int(ctx->node, "index", &index, NULL);
  if (index < 0 || index >= ctx->step->n_args || ctx->step->args[index] == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "feed %lld was not given "
                           "(the step has %d)", (long long)index, ctx->step->n_args);
  }
  tf_tensor *t = ctx->step->args[index];
  tf_dtype want = tf_node_output_type(ctx->node, 0);
  if (t->dtype != want) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "fed tensor is %s, "
                           "expected %s", tf_dtype_name(t->dtype),
                           tf_dtype_name(want));
  }
  tf_kernel_set_output(ctx, 0, t);
  return TF_OK;
}

static tf_code retval_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  int64_t index = 0;
  tf_node_attr_get_int(ctx->node, "index", &index, NULL);
  if (index < 0 || index >= ctx->step->n_retvals) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "fetch %lld is out of "
                           "range (the step has %d)", (long long)index,
                           ctx->step->n_retvals);
  }
  tf_tensor **slot = &ctx->step->retvals[index];
  tf_tensor_unref(*slot);
  *slot = tf_tensor_ref(ctx->inputs[0]);
  return TF_OK;
}

static const tf_kernel_def function_kernels[] = {
    {.op = "_Arg", .device_type = TF_DEVICE_CPU, .compute = arg_compute,
     .flags = TF_KERNEL_CHEAP},
    {.op = "_Retval", .device_type = TF_DEVICE_CPU, .compute = retval_compute,
     .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(function_kernels)
