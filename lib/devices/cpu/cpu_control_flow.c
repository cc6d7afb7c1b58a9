/* cpu_control_flow.c: CPU kernels for Switch, Merge, Enter, Exit,
 * NextIteration and LoopCond. They only move tensors: the executor does
 * the rest (an output left unset is dead, a dead input arrives as NULL,
 * Enter/Exit/NextIteration change the frame or iteration). Any dtype. */
#include "lib/core/framework/kernel.h"

/* Sets only the taken output; the other stays unset, so it is dead. */
static tf_code switch_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *pred = ctx->inputs[1];
  char buf[64];
  if (pred->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "pred must be a scalar "
                           "bool, got shape %s",
                           tf_shape_str(&pred->shape, buf, sizeof buf));
  }
  bool taken = *(const bool *)pred->data;
  tf_kernel_set_output(ctx, taken ? 1 : 0, ctx->inputs[0]);
  return TF_OK;
}

/* Forwards the first live input and its index. With no live input (the
 * executor does not run a dead Merge) both outputs stay dead. */
static tf_code merge_compute(tf_kernel_ctx *ctx) {
  for (int i = 0; i < ctx->n_inputs; i++) {
    if (ctx->inputs[i] == NULL) {
      continue;
    }
    tf_tensor *idx;
    tf_shape scalar = tf_shape_scalar();
    if (tf_kernel_alloc_output(ctx, 1, TF_INT32, &scalar, &idx) != TF_OK) {
      return ctx->status->code;
    }
    *(int32_t *)idx->data = i;
    tf_kernel_set_output(ctx, 0, ctx->inputs[i]);
    return TF_OK;
  }
  return TF_OK;
}

/* Enter, Exit, NextIteration and LoopCond: the value is unchanged. */
static tf_code forward_compute(tf_kernel_ctx *ctx) {
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

static tf_code loop_cond_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *in = ctx->inputs[0];
  char buf[64];
  if (in->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "the loop condition "
                           "must be a scalar bool, got shape %s",
                           tf_shape_str(&in->shape, buf, sizeof buf));
  }
  return forward_compute(ctx);
}

#define CF_KERNEL(name, fn)                                                    \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,            \
   .compute = fn, .flags = TF_KERNEL_CHEAP}

static const tf_kernel_def control_flow_kernels[] = {
    CF_KERNEL("Switch", switch_compute),
    CF_KERNEL("Merge", merge_compute),
    CF_KERNEL("Enter", forward_compute),
    CF_KERNEL("Exit", forward_compute),
    CF_KERNEL("NextIteration", forward_compute),
    CF_KERNEL("LoopCond", loop_cond_compute),
};

TF_REGISTER_KERNELS(control_flow_kernels)
