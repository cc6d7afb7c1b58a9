/* grad_array_nd.c: gradients of GatherNd, ScatterNd and TopKV2, after
 * TensorFlow's array_grad.py (_GatherNdGrad, _ScatterNdGrad) and
 * nn_grad.py (_TopKGrad).
 *
 * GatherNd: when indices is statically [n, 1], params gets a SPARSE
 * gradient as TF's IndexedSlices (values = dy, indices = the squeezed
 * indices, dense_shape = Shape(params)); otherwise the dense
 * ScatterNd(indices, dy, Shape(params)), which sums duplicate indices.
 * ScatterNd: updates get GatherNd(dy, indices). TopKV2: dy is scattered
 * into the input's shape at the flattened positions of the returned
 * indices (row * last_dim + index), zero elsewhere. Indices, shape and k
 * get no gradient (TF returns None for the first two; for k it returns an
 * int32 zero, which carries nothing). Bincount and InTopKV2 are registered
 * as not differentiable. */
#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"

static tf_output i32(tf_grad_ctx *ctx, int v) {
  return tf__grad_scalar(ctx, TF_INT32, v);
}

static tf_output vec1(tf_grad_ctx *ctx, tf_output scalar) {
  return tf__gs_reshape_to(ctx, scalar, (int64_t[]){1}, 1);
}

static tf_dtype out_type(tf_output o) {
  return o.node ? tf_node_output_type(o.node, o.index) : TF_INT32;
}

/* ---- GatherNd / ScatterNd ------------------------------------------------ */

static tf_code gather_nd_grad(tf_grad_ctx *ctx) {
  tf_output params = tf__grad_in(ctx, 0), indices = tf__grad_in(ctx, 1);
  tf_dtype it = out_type(indices);
  const tf_shape *is = tf_node_output_shape(indices.node, indices.index);
  if (is->rank == 2 && is->dims[1] == 1) {
    tf_grad *g = &ctx->dx[0];
    tf_output flat = tf__gs_reshape_to(ctx, indices, (int64_t[]){-1}, 1);
    g->values = ctx->dy[0];
    g->indices = it == TF_INT64 ? flat : tf__gs_cast(ctx, flat, TF_INT32);
    g->dense_shape = tf__grad_shape(ctx, params);
    return ctx->st->code;
  }
  tf_output in[3] = {indices, ctx->dy[0],
                     tf__gs_cast(ctx, tf__grad_shape(ctx, params), it)};
  ctx->dx[0].values = tf__grad_op(ctx, "ScatterNd", in, 3, NULL, 0);
  return ctx->st->code;
}

static tf_code scatter_nd_grad(tf_grad_ctx *ctx) {
  ctx->dx[1].values =
      tf__grad_op2(ctx, "GatherNd", ctx->dy[0], tf__grad_in(ctx, 0));
  return ctx->st->code;
}

/* ---- TopKV2 ------------------------------------------------------------- */

/* Slice(v, [begin], [size]) of an int32 vector with scalar outputs for
 * begin and size. */
static tf_output vslice(tf_grad_ctx *ctx, tf_output v, tf_output begin,
                        tf_output size) {
  tf_output in[3] = {v, vec1(ctx, begin), vec1(ctx, size)};
  return tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
}

static tf_code top_k_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0), k = tf__grad_in(ctx, 1);
  tf_output idx = tf__grad_out(ctx, 1);
  tf_output ps = tf__grad_shape(ctx, x);
  tf_output rank_1 = tf__grad_op2(ctx, "Sub", tf__gs_size(ctx, ps), i32(ctx, 1));
  tf_output outer = tf__gs_op_attr(ctx, "Prod", vslice(ctx, ps, i32(ctx, 0), rank_1),
                                   i32(ctx, 0), "keep_dims",
                                   tf_attr_bool(false));
  tf_output last = tf__gs_reshape_to(ctx, vslice(ctx, ps, rank_1, i32(ctx, 1)),
                                     NULL, 0);
  /* indices as [outer, k], plus row * last as an [outer, 1] column. */
  tf_output shape2[2] = {vec1(ctx, outer),
                         vec1(ctx, tf__gs_cast(ctx, k, TF_INT32))};
  tf_output ind2 = tf__grad_op2(ctx, "Reshape", idx,
                                tf__gs_vec_concat(ctx, shape2, 2));
  tf_output range[3] = {i32(ctx, 0), outer, i32(ctx, 1)};
  tf_output rows = tf__grad_op2(
      ctx, "Mul", tf__grad_op(ctx, "Range", range, 3, NULL, 0), last);
  tf_output col = tf__gs_reshape_to(ctx, rows, (int64_t[]){-1, 1}, 2);
  tf_output flat = tf__gs_reshape_to(ctx, tf__grad_op2(ctx, "Add", ind2, col),
                                     (int64_t[]){-1, 1}, 2);
  tf_output total = tf__gs_op_attr(ctx, "Prod", ps, i32(ctx, 0), "keep_dims",
                                   tf_attr_bool(true));
  tf_output in[3] = {flat, tf__gs_reshape_to(ctx, ctx->dy[0], (int64_t[]){-1}, 1),
                     total};
  tf_output sc = tf__grad_op(ctx, "ScatterNd", in, 3, NULL, 0);
  ctx->dx[0].values = tf__grad_op2(ctx, "Reshape", sc, ps);
  return ctx->st->code;
}

static const tf_grad_def array_nd_grads[] = {
    {"GatherNd", gather_nd_grad},
    {"ScatterNd", scatter_nd_grad},
    {"TopKV2", top_k_grad},
};

TF_REGISTER_GRADIENTS(array_nd_grads)
