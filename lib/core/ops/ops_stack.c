/* ops_stack.c: op definitions of the stacks that while-loop gradients keep
 * forward values on (TensorFlow's StackV2 family, data_flow_ops.cc): the
 * forward loop pushes a value each iteration, the gradient loop pops them
 * back in reverse order. A stack lives for one step: it is freed when the
 * last reference to its handle goes (lib/devices/cpu/cpu_stack.c). */
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static tf_code want_scalar(tf_shape_ctx *ctx, int i, const char *what) {
  char buf[64];
  if (ctx->in[i].rank != TF_UNKNOWN_RANK && ctx->in[i].rank != 0) {
    return tf_shape_error(ctx, "%s must be a scalar, got shape %s", what,
                          tf_shape_str(&ctx->in[i], buf, sizeof buf));
  }
  return TF_OK;
}

static tf_code shape_stack(tf_shape_ctx *ctx) {
  TF_TRY(want_scalar(ctx, 0, "max_size"));
  ctx->out[0] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_push(tf_shape_ctx *ctx) {
  TF_TRY(want_scalar(ctx, 0, "handle"));
  ctx->out[0] = ctx->in[1];
  return TF_OK;
}

static tf_code shape_pop(tf_shape_ctx *ctx) {
  TF_TRY(want_scalar(ctx, 0, "handle"));
  ctx->out[0] = tf_shape_unknown();
  return TF_OK;
}

static tf_code shape_close(tf_shape_ctx *ctx) {
  return want_scalar(ctx, 0, "handle");
}

#define STACK_FLAGS (TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE)
#define HANDLE_DEVIATION                                                       \
  "the handle is a scalar int64 naming the stack (this project has no "       \
  "resource dtype); a value that names no live stack is INVALID_ARGUMENT"

static const tf_op_spec stack_ops[] = {
    {.name = "StackV2",
     .inputs = {"max_size: int32"},
     .outputs = {"handle: int64"},
     .attrs = {"elem_type: type", "stack_name: string = ''"},
     .shape_fn = shape_stack,
     .flags = STACK_FLAGS,
     .doc = "A new empty stack of elem_type tensors holding at most max_size "
            "of them (< 0: unlimited, up to 16777216); it lives until its "
            "handle's last reference goes, at the latest when the step ends.",
     .deviation = HANDLE_DEVIATION},
    {.name = "StackPushV2",
     .inputs = {"handle: int64", "elem: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type", "swap_memory: bool = false"},
     .shape_fn = shape_push,
     .flags = STACK_FLAGS,
     .doc = "Pushes elem on the stack and forwards it. A full stack is "
            "RESOURCE_EXHAUSTED naming it.",
     .deviation = HANDLE_DEVIATION "; a full stack is RESOURCE_EXHAUSTED "
                  "where TF says INVALID_ARGUMENT; swap_memory is accepted "
                  "and ignored (values stay in host memory)"},
    {.name = "StackPopV2",
     .inputs = {"handle: int64"},
     .outputs = {"elem: elem_type"},
     .attrs = {"elem_type: type"},
     .shape_fn = shape_pop,
     .flags = STACK_FLAGS,
     .doc = "Pops the stack's top element; an empty stack is "
            "INVALID_ARGUMENT naming it.",
     .deviation = HANDLE_DEVIATION},
    {.name = "StackCloseV2",
     .inputs = {"handle: int64"},
     .shape_fn = shape_close,
     .flags = STACK_FLAGS,
     .doc = "Drops the stack's elements; later pushes and pops fail.",
     .deviation = HANDLE_DEVIATION},
};

TF_REGISTER_OPS("stack", stack_ops)
