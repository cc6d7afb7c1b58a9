/* grad_matrix_band.c: gradients of the matrix_band ops, after TensorFlow's
 * python/ops/array_grad.py. MatrixBandPart: the same band of dy (none for
 * num_lower/num_upper). MatrixDiag: MatrixDiagPart of dy. MatrixDiagV3:
 * MatrixDiagPartV3 of dy with the same k and align, padding 0 (none for k,
 * num_rows, num_cols, padding_value). MatrixDiagPart and MatrixDiagPartV3:
 * dy scattered back into zero matrices of the input's shape; TF uses
 * MatrixDiag(V3) when the matrix dims are static and MatrixSetDiag(V3) of
 * zeros otherwise, here always MatrixDiagV3 with num_rows/num_cols taken
 * from the input (constants when static, Shape/GatherV2 at run time
 * otherwise), which gives the same values. */
#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_code band_part_grad(tf_grad_ctx *ctx) {
  tf_output in[3] = {ctx->dy[0], tf__grad_in(ctx, 1), tf__grad_in(ctx, 2)};
  ctx->dx[0].values = tf__grad_op(ctx, "MatrixBandPart", in, 3, NULL, 0);
  return ctx->st->code;
}

static tf_code diag_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = tf__grad_op1(ctx, "MatrixDiagPart", ctx->dy[0]);
  return ctx->st->code;
}

/* Copies the forward node's align attr into kv. */
static tf_code align_kv(tf_grad_ctx *ctx, tf_attr_kv *kv) {
  const char *a = NULL;
  TF_TRY(tf_node_attr_get_string(ctx->node, "align", &a, ctx->st));
  kv->name = "align";
  kv->value = tf_attr_string(a);
  return TF_OK;
}

static tf_code diag_v3_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv;
  TF_TRY(align_kv(ctx, &kv));
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output in[3] = {ctx->dy[0], tf__grad_in(ctx, 1),
                     tf__grad_scalar(ctx, dt, 0)};
  ctx->dx[0].values = tf__grad_op(ctx, "MatrixDiagPartV3", in, 3, &kv, 1);
  return ctx->st->code;
}

/* Dim rank - from_end of x as an int32 scalar: a constant when inferred,
 * else GatherV2(Shape(x), Rank(x) - from_end, 0). */
static tf_output dim_from_end(tf_grad_ctx *ctx, tf_output x, int from_end) {
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  if (s->rank != TF_UNKNOWN_RANK && s->rank >= from_end &&
      s->dims[s->rank - from_end] != TF_UNKNOWN_DIM) {
    return tf__grad_scalar(ctx, TF_INT32,
                           (double)s->dims[s->rank - from_end]);
  }
  tf_output idx = tf__grad_op2(ctx, "Sub", tf__grad_op1(ctx, "Rank", x),
                               tf__grad_scalar(ctx, TF_INT32, from_end));
  tf_output in[3] = {tf__grad_shape(ctx, x), idx,
                     tf__grad_scalar(ctx, TF_INT32, 0)};
  return tf__grad_op(ctx, "GatherV2", in, 3, NULL, 0);
}

/* MatrixDiagV3(dy, k, M, N, 0) with M, N the dims of the forward input. */
static tf_output scatter_diag(tf_grad_ctx *ctx, tf_output k,
                              const tf_attr_kv *kv) {
  tf_output x = tf__grad_in(ctx, 0);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output in[5] = {ctx->dy[0], k, dim_from_end(ctx, x, 2),
                     dim_from_end(ctx, x, 1), tf__grad_scalar(ctx, dt, 0)};
  return tf__grad_op(ctx, "MatrixDiagV3", in, 5, kv, 1);
}

static tf_code diag_part_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv = {"align", tf_attr_string("RIGHT_LEFT")};
  ctx->dx[0].values = scatter_diag(ctx, tf__grad_scalar(ctx, TF_INT32, 0),
                                   &kv);
  return ctx->st->code;
}

static tf_code diag_part_v3_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv;
  TF_TRY(align_kv(ctx, &kv));
  ctx->dx[0].values = scatter_diag(ctx, tf__grad_in(ctx, 1), &kv);
  return ctx->st->code;
}

static const tf_grad_def matrix_band_grads[] = {
    {"MatrixBandPart", band_part_grad},
    {"MatrixDiag", diag_grad},
    {"MatrixDiagV3", diag_v3_grad},
    {"MatrixDiagPart", diag_part_grad},
    {"MatrixDiagPartV3", diag_part_v3_grad},
};

TF_REGISTER_GRADIENTS(matrix_band_grads)
