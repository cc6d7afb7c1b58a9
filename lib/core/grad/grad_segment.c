/* grad_segment.c: gradients of SegmentSum and UnsortedSegmentMax, after
 * TensorFlow's python/ops/math_grad.py. segment_ids and num_segments get
 * no gradient.
 *
 * SegmentSum (_SegmentSumGrad): dx = Gather(dy, segment_ids).
 * UnsortedSegmentMax (_UnsortedSegmentMinOrMaxGrad): the elements equal to
 * their segment's maximum (with a non-negative id) share that segment's
 * dy equally: dx = selected ? Gather(dy / count, ids) : 0, where count is
 * UnsortedSegmentSum of the selected indicators. Elements with dropped
 * (negative) ids get 0. */
#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_code segment_sum_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = tf__grad_op2(ctx, "Gather", ctx->dy[0],
                                   tf__grad_in(ctx, 1));
  return ctx->st->code;
}

/* keep (shaped like ids) reshaped to broadcast over data's row dims:
 * Shape(ids) followed by rank(data) - rank(ids) ones. */
static tf_output ids_mask(tf_grad_ctx *ctx, tf_output keep, tf_output ids,
                          tf_output data) {
  int ri = tf__gs_rank(ids), rd = tf__gs_rank(data);
  tf_output ones;
  if (ri >= 0 && rd >= ri) {
    int32_t o[TF_MAX_RANK];
    for (int d = 0; d < rd - ri; d++) {
      o[d] = 1;
    }
    ones = tf__grad_ivec(ctx, o, rd - ri);
  } else {
    tf_output n = tf__grad_op2(ctx, "Sub", tf__grad_op1(ctx, "Rank", data),
                               tf__grad_op1(ctx, "Rank", ids));
    int32_t one = 1;
    ones = tf__grad_op2(ctx, "Fill",
                        tf__grad_op2(ctx, "Reshape", n,
                                     tf__grad_ivec(ctx, &one, 1)),
                        tf__grad_scalar(ctx, TF_INT32, 1));
  }
  tf_output parts[2] = {tf__grad_shape(ctx, ids), ones};
  return tf__gs_reshape(ctx, keep, tf__gs_vec_concat(ctx, parts, 2));
}

static tf_code unsorted_segment_max_grad(tf_grad_ctx *ctx) {
  tf_output data = tf__grad_in(ctx, 0), ids = tf__grad_in(ctx, 1);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output zero_ids = tf__grad_op1(ctx, "ZerosLike", ids);
  tf_output clipped = tf__grad_op2(ctx, "Maximum", ids, zero_ids);
  tf_output positive = ids_mask(
      ctx, tf__grad_op2(ctx, "GreaterEqual", ids, zero_ids), ids, data);
  tf_output at_max = tf__grad_op2(
      ctx, "Equal", data, tf__grad_op2(ctx, "Gather", tf__grad_out(ctx, 0),
                                       clipped));
  tf_output selected = tf__grad_op2(ctx, "LogicalAnd", at_max, positive);
  tf_output in[3] = {tf__gs_cast(ctx, selected, dt), ids, tf__grad_in(ctx, 2)};
  tf_output count = tf__grad_op(ctx, "UnsortedSegmentSum", in, 3, NULL, 0);
  tf_output share = tf__grad_op2(
      ctx, "Gather", tf__grad_op2(ctx, "RealDiv", ctx->dy[0], count), clipped);
  tf_output sel[3] = {selected, share, tf__grad_op1(ctx, "ZerosLike", share)};
  ctx->dx[0].values = tf__grad_op(ctx, "SelectV2", sel, 3, NULL, 0);
  return ctx->st->code;
}

static const tf_grad_def segment_grads[] = {
    {"SegmentSum", segment_sum_grad},
    {"UnsortedSegmentMax", unsorted_segment_max_grad},
};

TF_REGISTER_GRADIENTS(segment_grads)
