/* grad_array_more.c: gradients of more array ops, after TensorFlow's
 * python/ops/array_grad.py: ReverseV2 reverses dy on the same axes;
 * BroadcastTo sums dy over the broadcast axes and reshapes it to the
 * input's shape; SplitV concatenates the dys (zeros for unused outputs)
 * along split_dim; MirrorPad folds dy back with MirrorPadGrad, whose own
 * gradient is MirrorPad; DepthToSpace and SpaceToDepth are each other's
 * gradient. Axes, sizes and paddings get no gradient. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_code reverse_v2_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values =
      tf__grad_op2(ctx, "ReverseV2", ctx->dy[0], tf__grad_in(ctx, 1));
  return ctx->st->code;
}

/* Sum over the axes BroadcastGradientArgs(shape(y), shape(x)) gives for
 * x, then Reshape to shape(x): folded to constants when shapes are known. */
static tf_code broadcast_to_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = tf__grad_unbroadcast(
      ctx, ctx->dy[0], tf__grad_in(ctx, 0), tf__grad_out(ctx, 0));
  return ctx->st->code;
}

static tf_code split_v_grad(tf_grad_ctx *ctx) {
  if (ctx->n_dy == 1) {
    ctx->dx[0].values = ctx->dy[0];
    return TF_OK;
  }
  tf_output *in = tf__xcalloc((size_t)ctx->n_dy + 1, sizeof *in);
  memcpy(in, ctx->dy, (size_t)ctx->n_dy * sizeof *in);
  in[ctx->n_dy] = tf__grad_in(ctx, 2);
  int count[2] = {ctx->n_dy, 0};
  ctx->dx[0].values = tf__gs_op_groups(ctx, "ConcatV2", in, count, 2, NULL, 0);
  free(in);
  return ctx->st->code;
}

/* op(dy, paddings) with the forward node's mode; the result goes to the
 * forward node's input 0. */
static tf_code mirror_with_mode(tf_grad_ctx *ctx, const char *op) {
  const char *mode;
  TF_TRY(tf_node_attr_get_string(ctx->node, "mode", &mode, ctx->st));
  tf_attr_kv kv = {"mode", tf_attr_string(mode)};
  tf_output in[2] = {ctx->dy[0], tf__grad_in(ctx, 1)};
  ctx->dx[0].values = tf__grad_op(ctx, op, in, 2, &kv, 1);
  return ctx->st->code;
}

static tf_code mirror_pad_grad(tf_grad_ctx *ctx) {
  return mirror_with_mode(ctx, "MirrorPadGrad");
}

static tf_code mirror_pad_grad_grad(tf_grad_ctx *ctx) {
  return mirror_with_mode(ctx, "MirrorPad");
}

/* op(dy) with the forward node's block_size and data_format. */
static tf_code space_with_attrs(tf_grad_ctx *ctx, const char *op) {
  const char *fmt;
  int64_t block;
  TF_TRY(tf_node_attr_get_int(ctx->node, "block_size", &block, ctx->st));
  TF_TRY(tf_node_attr_get_string(ctx->node, "data_format", &fmt, ctx->st));
  tf_attr_kv kv[2] = {{"block_size", tf_attr_int(block)},
                      {"data_format", tf_attr_string(fmt)}};
  tf_output dy = ctx->dy[0];
  ctx->dx[0].values = tf__grad_op(ctx, op, &dy, 1, kv, 2);
  return ctx->st->code;
}

static tf_code depth_to_space_grad(tf_grad_ctx *ctx) {
  return space_with_attrs(ctx, "SpaceToDepth");
}

static tf_code space_to_depth_grad(tf_grad_ctx *ctx) {
  return space_with_attrs(ctx, "DepthToSpace");
}

static const tf_grad_def array_more_grads[] = {
    {"ReverseV2", reverse_v2_grad},
    {"BroadcastTo", broadcast_to_grad},
    {"SplitV", split_v_grad},
    {"MirrorPad", mirror_pad_grad},
    {"MirrorPadGrad", mirror_pad_grad_grad},
    {"DepthToSpace", depth_to_space_grad},
    {"SpaceToDepth", space_to_depth_grad},
};

TF_REGISTER_GRADIENTS(array_more_grads)
