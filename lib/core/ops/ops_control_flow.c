/* ops_control_flow.c: the dynamic control-flow primitives (whitepaper
 * §4.4, EuroSys 2018): Switch, Merge, Enter, Exit, NextIteration and
 * LoopCond. The executor gives them their meaning (deadness, frames,
 * iterations); here they are ordinary specs whose shapes flow through.
 * tf_cond and tf_while_loop (control_flow.c) assemble them. */
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* Fails unless input i is a scalar or of unknown rank. */
static tf_code want_scalar(tf_shape_ctx *ctx, int i, const char *what) {
  char buf[64];
  if (ctx->in[i].rank != TF_UNKNOWN_RANK && ctx->in[i].rank != 0) {
    return tf_shape_error(ctx, "%s must be a scalar, got shape %s", what,
                          tf_shape_str(&ctx->in[i], buf, sizeof buf));
  }
  return TF_OK;
}

static tf_code shape_switch(tf_shape_ctx *ctx) {
  TF_TRY(want_scalar(ctx, 1, "pred"));
  ctx->out[0] = ctx->in[0];
  ctx->out[1] = ctx->in[0];
  return TF_OK;
}

/* The most specific shape every input satisfies: equal dims stay, others
 * become unknown, and differing ranks give an unknown rank. */
static tf_code shape_merge(tf_shape_ctx *ctx) {
  tf_shape s = ctx->in[0];
  for (int i = 1; i < ctx->n_in && s.rank != TF_UNKNOWN_RANK; i++) {
    const tf_shape *x = &ctx->in[i];
    if (x->rank != s.rank) {
      s = tf_shape_unknown();
      break;
    }
    for (int d = 0; d < s.rank; d++) {
      if (x->dims[d] != s.dims[d]) {
        s.dims[d] = TF_UNKNOWN_DIM;
      }
    }
  }
  ctx->out[0] = s;
  ctx->out[1] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_enter(tf_shape_ctx *ctx) {
  const tf_attr_value *f = tf_node_attr(ctx->node, "frame_name");
  if (f->u.s[0] == '\0') {
    return tf_shape_error(ctx, "attr 'frame_name' must not be empty");
  }
  return tf_shape_fn_unchanged(ctx);
}

static tf_code shape_loop_cond(tf_shape_ctx *ctx) {
  TF_TRY(want_scalar(ctx, 0, "input (the loop condition)"));
  ctx->out[0] = tf_shape_scalar();
  return TF_OK;
}

#define CF_FLAGS (TF_OP_CONTROL_FLOW | TF_OP_NOT_DIFFERENTIABLE)

static const tf_op_spec control_flow_ops[] = {
    {.name = "Switch",
     .inputs = {"data: T", "pred: bool"},
     .outputs = {"output_false: T", "output_true: T"},
     .attrs = {"T: type"},
     .shape_fn = shape_switch,
     .flags = CF_FLAGS,
     .doc = "Forwards data to output_true if pred, else to output_false; "
            "the other output is dead."},
    {.name = "Merge",
     .inputs = {"inputs: N * T"},
     .outputs = {"output: T", "value_index: int32"},
     .attrs = {"T: type", "N: int >= 1"},
     .shape_fn = shape_merge,
     .flags = CF_FLAGS,
     .doc = "Forwards the first input that is not dead, and its index."},
    {.name = "Enter",
     .inputs = {"data: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type", "frame_name: string", "is_constant: bool = false",
               "parallel_iterations: int >= 1 = 10"},
     .shape_fn = shape_enter,
     .flags = CF_FLAGS,
     .doc = "Moves data into the child frame frame_name (a loop); "
            "is_constant makes it reach every iteration.",
     .deviation = "parallel_iterations must be >= 1 when the graph is "
                  "built; TF's op sets no minimum, but its executor stalls "
                  "a loop given 0"},
    {.name = "Exit",
     .inputs = {"data: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type"},
     .shape_fn = tf_shape_fn_unchanged,
     .flags = CF_FLAGS,
     .doc = "Moves data from a loop's frame back to its parent frame."},
    {.name = "NextIteration",
     .inputs = {"data: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type"},
     .shape_fn = tf_shape_fn_unchanged,
     .flags = CF_FLAGS | TF_OP_BACK_EDGE,
     .doc = "Makes data available to the next iteration of its loop."},
    {.name = "LoopCond",
     .inputs = {"input: bool"},
     .outputs = {"output: bool"},
     .shape_fn = shape_loop_cond,
     .flags = CF_FLAGS,
     .doc = "Forwards a loop's condition; marks it as the loop's "
            "predicate for its Switches."},
};

TF_REGISTER_OPS("control_flow", control_flow_ops)
