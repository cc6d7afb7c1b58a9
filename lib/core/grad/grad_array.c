/* grad_array.c: gradients of the array ops, after TensorFlow's
 * python/ops/array_grad.py. Views (Reshape, ExpandDims, Squeeze, Identity)
 * reshape dy back; Transpose applies the inverse permutation; joins
 * (ConcatV2, Concat, Pack) slice or unstack dy and splits (Split, Unpack)
 * join it; Slice pads dy, Pad and PadV2 slice it (constant_values gets no
 * gradient, as in TF), StridedSlice scatters it with
 * StridedSliceGrad; Tile sums the repeats; Fill sums everything into its
 * value. Constant axes, offsets and shapes fold into Const nodes. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_output dy0(const tf_grad_ctx *ctx) { return ctx->dy[0]; }

static tf_code reshape_back(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0);
  ctx->dx[0].values = tf__gs_reshape(ctx, dy0(ctx), tf__grad_shape(ctx, x));
  return ctx->st->code;
}

static tf_code identity_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = dy0(ctx);
  return TF_OK;
}

/* ---- Transpose ---------------------------------------------------------- */

static tf_code transpose_grad(tf_grad_ctx *ctx) {
  tf_output perm = tf__grad_in(ctx, 1);
  int64_t p[TF_MAX_RANK];
  int n = tf__gs_const_ints(perm, p, TF_MAX_RANK);
  bool seen[TF_MAX_RANK] = {false};
  bool valid = n >= 0;
  int inv[TF_MAX_RANK];
  for (int i = 0; valid && i < n; i++) {
    valid = p[i] >= 0 && p[i] < n && !seen[p[i]];
    if (valid) {
      seen[p[i]] = true;
      inv[p[i]] = i;
    }
  }
  if (valid) {
    ctx->dx[0].values = tf__gs_transpose(ctx, dy0(ctx), inv, n);
    return ctx->st->code;
  }
  /* inv[perm[i]] = i: stitch 0..n-1 into the positions perm. */
  tf_output range[3] = {tf__grad_scalar(ctx, TF_INT32, 0),
                        tf__gs_size(ctx, perm),
                        tf__grad_scalar(ctx, TF_INT32, 1)};
  tf_output st_in[2] = {tf__gs_cast(ctx, perm, TF_INT32),
                        tf__grad_op(ctx, "Range", range, 3, NULL, 0)};
  int count[2] = {1, 1};
  tf_output inv_perm =
      tf__gs_op_groups(ctx, "DynamicStitch", st_in, count, 2, NULL, 0);
  ctx->dx[0].values = tf__grad_op2(ctx, "Transpose", dy0(ctx), inv_perm);
  return ctx->st->code;
}

/* ---- ConcatV2, Concat and Split ---------------------------------------- */

/* Where the joined values and the axis are among a concat node's inputs:
 * ConcatV2(values..., axis) or Concat(concat_dim, values...). */
typedef struct concat_args {
  int first, n, axis;
} concat_args;

/* Static offsets of the values along a constant axis: true when the axis
 * and every value's size along it are known. */
static bool concat_static(const tf_grad_ctx *ctx, const concat_args *c,
                          int *rank, int *axis, int64_t *len) {
  int64_t a;
  *rank = tf__gs_rank(tf__grad_in(ctx, c->first));
  if (*rank <= 0 || tf__gs_const_ints(tf__grad_in(ctx, c->axis), &a, 1) != 1 ||
      a < -*rank || a >= *rank) {
    return false;
  }
  *axis = (int)(a < 0 ? a + *rank : a);
  for (int i = 0; i < c->n; i++) {
    tf_output v = tf__grad_in(ctx, c->first + i);
    const tf_shape *s = tf_node_output_shape(v.node, v.index);
    if (s->rank != *rank || s->dims[*axis] < 0) {
      return false;
    }
    len[i] = s->dims[*axis];
  }
  return true;
}

/* A one-hot int32 mask along the axis (constant when the axis and rank
 * are), to turn sizes into begin offsets; a negative axis counts from the
 * end (FloorMod by the rank, as TF's gradient does). */
static tf_output concat_axis_mask(tf_grad_ctx *ctx, tf_output axis,
                                  tf_output dy) {
  int64_t a;
  int rank = tf__gs_rank(dy);
  if (rank > 0 && tf__gs_const_ints(axis, &a, 1) == 1 && a >= -rank &&
      a < rank) {
    int32_t m[TF_MAX_RANK] = {0};
    m[a < 0 ? a + rank : a] = 1;
    return tf__grad_ivec(ctx, m, rank);
  }
  tf_output r = tf__grad_op1(ctx, "Rank", dy);
  tf_output am =
      tf__grad_op2(ctx, "FloorMod", tf__gs_cast(ctx, axis, TF_INT32), r);
  tf_output in[4] = {am, r, tf__grad_scalar(ctx, TF_INT32, 1),
                     tf__grad_scalar(ctx, TF_INT32, 0)};
  return tf__grad_op(ctx, "OneHot", in, 4, NULL, 0);
}

/* dy sliced back into the values, each at its offset along the axis; the
 * axis gets no gradient. */
static tf_code concat_slices(tf_grad_ctx *ctx, const concat_args *c) {
  int rank, axis;
  int64_t len[64];
  tf_output dy = dy0(ctx);
  tf_grad *dx = ctx->dx + c->first;
  if (c->n <= 64 && concat_static(ctx, c, &rank, &axis, len)) {
    int32_t begin[TF_MAX_RANK] = {0}, size[TF_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      size[d] = -1;
    }
    for (int i = 0; i < c->n; i++) {
      size[axis] = (int32_t)len[i];
      tf_output in[3] = {dy, tf__grad_ivec(ctx, begin, rank),
                         tf__grad_ivec(ctx, size, rank)};
      dx[i].values = tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
      begin[axis] += (int32_t)len[i];
    }
    return ctx->st->code;
  }
  tf_output mask = concat_axis_mask(ctx, tf__grad_in(ctx, c->axis), dy);
  tf_output off = tf__grad_op1(ctx, "ZerosLike", mask);
  for (int i = 0; i < c->n; i++) {
    tf_output size = tf__grad_shape(ctx, tf__grad_in(ctx, c->first + i));
    tf_output in[3] = {dy, off, size};
    dx[i].values = tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
    if (i + 1 < c->n) {
      off = tf__grad_op2(ctx, "Add", off, tf__grad_op2(ctx, "Mul", size, mask));
    }
  }
  return ctx->st->code;
}

static tf_code concat_v2_grad(tf_grad_ctx *ctx) {
  int n = ctx->n_dx - 1;
  return concat_slices(ctx, &(concat_args){.first = 0, .n = n, .axis = n});
}

static tf_code concat_grad(tf_grad_ctx *ctx) {
  return concat_slices(
      ctx, &(concat_args){.first = 1, .n = ctx->n_dx - 1, .axis = 0});
}

static tf_code split_grad(tf_grad_ctx *ctx) {
  if (ctx->n_dy == 1) {
    ctx->dx[1].values = dy0(ctx);
    return TF_OK;
  }
  tf_output *in = tf__xcalloc((size_t)ctx->n_dy + 1, sizeof *in);
  memcpy(in, ctx->dy, (size_t)ctx->n_dy * sizeof *in);
  in[ctx->n_dy] = tf__grad_in(ctx, 0);
  int count[2] = {ctx->n_dy, 0};
  ctx->dx[1].values =
      tf__gs_op_groups(ctx, "ConcatV2", in, count, 2, NULL, 0);
  free(in);
  return ctx->st->code;
}

/* ---- Pack and Unpack ---------------------------------------------------- */

static tf_code pack_grad(tf_grad_ctx *ctx) {
  int64_t axis;
  TF_TRY(tf_node_attr_get_int(ctx->node, "axis", &axis, ctx->st));
  tf_attr_kv kv[2] = {{"num", tf_attr_int(ctx->n_dx)},
                      {"axis", tf_attr_int(axis)}};
  tf_output dy = dy0(ctx);
  tf_output u = tf__grad_op(ctx, "Unpack", &dy, 1, kv, 2);
  for (int i = 0; u.node != NULL && i < ctx->n_dx; i++) {
    ctx->dx[i].values = (tf_output){u.node, i};
  }
  return ctx->st->code;
}

static tf_code unpack_grad(tf_grad_ctx *ctx) {
  int64_t axis;
  TF_TRY(tf_node_attr_get_int(ctx->node, "axis", &axis, ctx->st));
  if (ctx->n_dy == 0) {
    ctx->dx[0].values = tf__grad_op1(ctx, "ZerosLike", tf__grad_in(ctx, 0));
    return ctx->st->code;
  }
  tf_attr_kv kv = {"axis", tf_attr_int(axis)};
  ctx->dx[0].values = tf__grad_op_list(ctx, "Pack", ctx->dy, ctx->n_dy, &kv, 1);
  return ctx->st->code;
}

/* ---- Slice, StridedSlice and Pad ---------------------------------------- */

/* Pad(dy) by [begin, shape(x) - begin - shape(dy)] per dim. */
static tf_code slice_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0), dy = dy0(ctx);
  tf_shape xs, ys;
  int64_t b[TF_MAX_RANK];
  if (tf__gs_static_shape(x, &xs) && tf__gs_static_shape(dy, &ys) &&
      tf__gs_const_ints(tf__grad_in(ctx, 1), b, TF_MAX_RANK) == xs.rank &&
      ys.rank == xs.rank) {
    int32_t pad[2 * TF_MAX_RANK];
    for (int d = 0; d < xs.rank; d++) {
      pad[2 * d] = (int32_t)b[d];
      pad[2 * d + 1] = (int32_t)(xs.dims[d] - b[d] - ys.dims[d]);
    }
    tf_output p = tf__gs_reshape_to(ctx, tf__grad_ivec(ctx, pad, 2 * xs.rank),
                                    (int64_t[]){xs.rank, 2}, 2);
    ctx->dx[0].values = tf__grad_op2(ctx, "Pad", dy, p);
    return ctx->st->code;
  }
  tf_output before = tf__gs_cast(ctx, tf__grad_in(ctx, 1), TF_INT32);
  tf_output after = tf__grad_op2(
      ctx, "Sub", tf__grad_op2(ctx, "Sub", tf__grad_shape(ctx, x), before),
      tf__grad_shape(ctx, dy));
  tf_output both[2] = {before, after};
  tf_attr_kv kv = {"axis", tf_attr_int(1)};
  tf_output p = tf__grad_op_list(ctx, "Pack", both, 2, &kv, 1);
  ctx->dx[0].values = tf__grad_op2(ctx, "Pad", dy, p);
  return ctx->st->code;
}

static const char *const k_masks[5] = {"begin_mask", "end_mask",
                                       "ellipsis_mask", "new_axis_mask",
                                       "shrink_axis_mask"};

static tf_code copy_masks(tf_grad_ctx *ctx, tf_attr_kv *kv) {
  for (int i = 0; i < 5; i++) {
    int64_t v;
    TF_TRY(tf_node_attr_get_int(ctx->node, k_masks[i], &v, ctx->st));
    kv[i] = (tf_attr_kv){k_masks[i], tf_attr_int(v)};
  }
  return TF_OK;
}

static tf_code strided_slice_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv[5];
  TF_TRY(copy_masks(ctx, kv));
  tf_dtype index = tf_node_input_type(ctx->node, 1);
  tf_output in[5] = {
      tf__gs_cast(ctx, tf__grad_shape(ctx, tf__grad_in(ctx, 0)), index),
      tf__grad_in(ctx, 1), tf__grad_in(ctx, 2), tf__grad_in(ctx, 3),
      dy0(ctx)};
  ctx->dx[0].values = tf__grad_op(ctx, "StridedSliceGrad", in, 5, kv, 5);
  return ctx->st->code;
}

/* StridedSliceGrad is linear in dy: its gradient slices again. */
static tf_code strided_slice_grad_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv[5];
  TF_TRY(copy_masks(ctx, kv));
  tf_output in[4] = {dy0(ctx), tf__grad_in(ctx, 1), tf__grad_in(ctx, 2),
                     tf__grad_in(ctx, 3)};
  ctx->dx[4].values = tf__grad_op(ctx, "StridedSlice", in, 4, kv, 5);
  return ctx->st->code;
}

/* Slice(dy, paddings[:, 0], shape(x)). */
static tf_code pad_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0), pads = tf__grad_in(ctx, 1);
  int64_t p[2 * TF_MAX_RANK];
  int n = tf__gs_const_ints(pads, p, 2 * TF_MAX_RANK);
  tf_output begin;
  const tf_tensor *pt = tf__gs_const(pads);
  if (n >= 0 && pt->shape.rank == 2 && pt->shape.dims[1] == 2) {
    int32_t b[TF_MAX_RANK];
    for (int d = 0; d < n / 2; d++) {
      b[d] = (int32_t)p[2 * d];
    }
    begin = tf__grad_ivec(ctx, b, n / 2);
  } else {
    tf_output pi = tf__gs_cast(ctx, pads, TF_INT32);
    int32_t zero[2] = {0, 0}, cols[2] = {-1, 1}, flat = -1;
    tf_output in[3] = {pi, tf__grad_ivec(ctx, zero, 2),
                       tf__grad_ivec(ctx, cols, 2)};
    begin = tf__grad_op2(ctx, "Reshape",
                         tf__grad_op(ctx, "Slice", in, 3, NULL, 0),
                         tf__grad_ivec(ctx, &flat, 1));
  }
  tf_output in[3] = {dy0(ctx), begin, tf__grad_shape(ctx, x)};
  ctx->dx[0].values = tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
  return ctx->st->code;
}

/* ---- Tile and Fill ------------------------------------------------------ */

/* prod(v[begin:end]) of an int32 vector v as a 1-element vector ([1]
 * when the slice is empty). */
static tf_output vec_prod(tf_grad_ctx *ctx, tf_output v, int begin, int end) {
  int32_t one = 1, zero = 0;
  if (begin >= end) {
    return tf__grad_ivec(ctx, &one, 1);
  }
  return tf__gs_op_attr(ctx, "Prod", tf__gs_vec_slice(ctx, v, begin,
                                                      end - begin),
                        tf__grad_ivec(ctx, &zero, 1), "keep_dims",
                        tf_attr_bool(true));
}

/* Tile's gradient one axis at a time, for inputs of known rank whose
 * interleaved [m0, s0, m1, s1, ...] shape would exceed TF_MAX_RANK: at
 * axis d, dy (already summed over the axes before d) is viewed as
 * [prod(x.shape[:d]), m_d, x.shape[d], prod(dy.shape[d+1:])] (no -1, so
 * empty tensors work) and summed over its axis 1; the result is reshaped
 * to x's shape. m holds the constant multiples (axes with m[d] == 1 are
 * skipped), or is NULL when they are known only at run time. */
static tf_code tile_grad_by_axis(tf_grad_ctx *ctx, int rank, const int64_t *m) {
  tf_output x = tf__grad_in(ctx, 0), dy = dy0(ctx);
  tf_output xshape = tf__grad_shape(ctx, x);
  tf_output dyshape = tf__grad_shape(ctx, dy);
  tf_output mult = tf__gs_cast(ctx, tf__grad_in(ctx, 1), TF_INT32);
  tf_output t = dy;
  int32_t one = 1;
  for (int d = 0; d < rank; d++) {
    if (m != NULL && m[d] == 1) {
      continue;
    }
    tf_output parts[4] = {vec_prod(ctx, xshape, 0, d),
                          tf__gs_vec_slice(ctx, mult, d, 1),
                          tf__gs_vec_slice(ctx, xshape, d, 1),
                          vec_prod(ctx, dyshape, d + 1, rank)};
    t = tf__grad_op2(ctx, "Reshape", t, tf__gs_vec_concat(ctx, parts, 4));
    t = tf__gs_sum(ctx, t, tf__grad_ivec(ctx, &one, 1), false);
  }
  ctx->dx[0].values = tf__grad_op2(ctx, "Reshape", t, xshape);
  return ctx->st->code;
}

/* Sum(Reshape(dy, [m0, s0, m1, s1, ...]), [0, 2, 4, ...]) as TF's
 * _TileGrad; with constant multiples only the repeated dims split in two.
 * When that split shape would pass TF_MAX_RANK and the rank is known, the
 * repeats are summed one axis at a time instead (tile_grad_by_axis); an
 * input of unknown rank uses the split shape, so its run-time rank must
 * then be at most TF_MAX_RANK / 2. */
static tf_code tile_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0), mult = tf__grad_in(ctx, 1), dy = dy0(ctx);
  tf_shape xs;
  int64_t m[TF_MAX_RANK], split[2 * TF_MAX_RANK];
  int32_t axes[TF_MAX_RANK];
  int rank = tf__gs_rank(x), n = 0, n_axes = 0;
  if (tf__gs_static_shape(x, &xs) &&
      tf__gs_const_ints(mult, m, TF_MAX_RANK) == xs.rank) {
    for (int d = 0; d < xs.rank; d++) {
      if (m[d] != 1) {
        axes[n_axes++] = n;
        split[n++] = m[d];
      }
      split[n++] = xs.dims[d];
    }
    if (n_axes == 0) {
      ctx->dx[0].values = dy;
      return TF_OK;
    }
    if (n > TF_MAX_RANK) {
      return tile_grad_by_axis(ctx, xs.rank, m);
    }
    tf_output r = tf__gs_reshape_to(ctx, dy, split, n);
    ctx->dx[0].values =
        tf__gs_sum(ctx, r, tf__grad_ivec(ctx, axes, n_axes), false);
    return ctx->st->code;
  }
  if (rank > TF_MAX_RANK / 2) {
    return tile_grad_by_axis(ctx, rank, NULL);
  }
  for (int d = 0; d < rank; d++) {
    axes[d] = 2 * d;
  }
  tf_output pair[2] = {tf__gs_cast(ctx, mult, TF_INT32), tf__grad_shape(ctx, x)};
  tf_attr_kv kv = {"axis", tf_attr_int(1)};
  int32_t flat = -1;
  tf_output sp = tf__grad_op2(ctx, "Reshape",
                              tf__grad_op_list(ctx, "Pack", pair, 2, &kv, 1),
                              tf__grad_ivec(ctx, &flat, 1));
  tf_output ax;
  if (rank >= 0) {
    ax = tf__grad_ivec(ctx, axes, rank);
  } else {
    tf_output in[3] = {tf__grad_scalar(ctx, TF_INT32, 0), tf__gs_size(ctx, sp),
                       tf__grad_scalar(ctx, TF_INT32, 2)};
    ax = tf__grad_op(ctx, "Range", in, 3, NULL, 0);
  }
  ctx->dx[0].values =
      tf__gs_sum(ctx, tf__grad_op2(ctx, "Reshape", dy, sp), ax, false);
  return ctx->st->code;
}

/* Every output element is value: its gradient is the sum of dy. */
static tf_code fill_grad(tf_grad_ctx *ctx) {
  tf_output dy = dy0(ctx);
  int rank = tf__gs_rank(dy);
  tf_output axes;
  if (rank >= 0) {
    int32_t a[TF_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      a[d] = d;
    }
    axes = tf__grad_ivec(ctx, a, rank);
  } else {
    tf_output in[3] = {tf__grad_scalar(ctx, TF_INT32, 0),
                       tf__grad_op1(ctx, "Rank", dy),
                       tf__grad_scalar(ctx, TF_INT32, 1)};
    axes = tf__grad_op(ctx, "Range", in, 3, NULL, 0);
  }
  ctx->dx[1].values = tf__gs_sum(ctx, dy, axes, false);
  return ctx->st->code;
}

static const tf_grad_def array_grads[] = {
    {"Reshape", reshape_back},
    {"ExpandDims", reshape_back},
    {"Squeeze", reshape_back},
    {"Identity", identity_grad},
    {"PlaceholderWithDefault", identity_grad},
    {"Transpose", transpose_grad},
    {"ConcatV2", concat_v2_grad},
    {"Concat", concat_grad},
    {"Split", split_grad},
    {"Pack", pack_grad},
    {"Unpack", unpack_grad},
    {"Slice", slice_grad},
    {"StridedSlice", strided_slice_grad},
    {"StridedSliceGrad", strided_slice_grad_grad},
    {"Pad", pad_grad},
    {"PadV2", pad_grad}, /* constant_values gets none, as in TF */
    {"Tile", tile_grad},
    {"Fill", fill_grad},
};

TF_REGISTER_GRADIENTS(array_grads)
