/* ops_reduction.c: the reduction op family (Sum, Mean, Max, Min, Prod,
 * ArgMax, ArgMin, and the logical All and Any over bool) with TensorFlow's signatures and attr names. Shape
 * functions compute the output shape when the axes are constants and keep
 * what is knowable (the rank) when they are not; bad constant axes fail at
 * graph-build time with the same message the kernel would give. */
#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

static const tf_tensor *const_input(const tf_shape_ctx *ctx, int i) {
  return ctx->in_value ? ctx->in_value[i] : NULL;
}

static tf_shape unknown_dims(int rank) {
  tf_shape s = {.rank = rank};
  for (int d = 0; d < rank; d++) {
    s.dims[d] = TF_UNKNOWN_DIM;
  }
  return s;
}

/* Output when the axes are not known: rank only, where it can be told. */
static tf_shape reduce_shape_unknown_axes(const tf_shape *in,
                                          const tf_shape *axes, bool keep) {
  if (keep) {
    return unknown_dims(in->rank);
  }
  if (axes->rank == 0 && in->rank >= 1) {
    return unknown_dims(in->rank - 1);
  }
  if (axes->rank == 1 && axes->dims[0] >= 0 && axes->dims[0] <= in->rank) {
    /* Valid axes are distinct, so each removes one dim. */
    return unknown_dims(in->rank - (int)axes->dims[0]);
  }
  return tf_shape_unknown();
}

static tf_code reduce_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0], *axes = &ctx->in[1];
  char buf[96];
  bool keep = false;
  TF_TRY(tf_node_attr_get_bool(ctx->node, "keep_dims", &keep, ctx->status));
  if (axes->rank > 1) {
    return tf_shape_error(ctx,
                          "reduction_indices must be a scalar or vector, "
                          "got shape %s",
                          tf_shape_str(axes, buf, sizeof(buf)));
  }
  if (in->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  const tf_tensor *axes_value = const_input(ctx, 1);
  if (!axes_value) {
    ctx->out[0] = reduce_shape_unknown_axes(in, axes, keep);
    return TF_OK;
  }
  uint32_t mask;
  tf_status st;
  tf_status_init(&st);
  if (tf__reduction_axes(axes_value, in->rank, &mask, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  tf_shape out = {.rank = 0};
  for (int d = 0; d < in->rank; d++) {
    if (!(mask & (1u << d))) {
      out.dims[out.rank++] = in->dims[d];
    } else if (keep) {
      out.dims[out.rank++] = 1;
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code arg_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0], *dim = &ctx->in[1];
  char buf[96];
  if (dim->rank != TF_UNKNOWN_RANK && dim->rank != 0) {
    return tf_shape_error(ctx, "dimension must be a scalar, got shape %s",
                          tf_shape_str(dim, buf, sizeof(buf)));
  }
  if (in->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  const tf_tensor *dim_value = const_input(ctx, 1);
  if (!dim_value || dim_value->n != 1) {
    ctx->out[0] = in->rank >= 1 ? unknown_dims(in->rank - 1)
                                : tf_shape_unknown();
    return TF_OK;
  }
  int64_t axis;
  tf_status st;
  tf_status_init(&st);
  if (tf__normalize_axis(tf_tensor_get_i64(dim_value, 0), in->rank,
                         "dimension", &axis, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  if (in->dims[axis] == 0) {
    return tf_shape_error(ctx, "Reduction axis %d is empty in shape %s",
                          (int)axis, tf_shape_str(in, buf, sizeof(buf)));
  }
  tf_shape out = {.rank = 0};
  for (int d = 0; d < in->rank; d++) {
    if (d != axis) {
      out.dims[out.rank++] = in->dims[d];
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

#define REDUCE_TYPES "T: {float, double, int32, int64}"
#define REDUCE_OP(op_name, what)                                               \
  {op_name,                                                                    \
   {"input: T", "reduction_indices: Tidx"},                                    \
   {"output: T"},                                                              \
   {"keep_dims: bool = false", REDUCE_TYPES, "Tidx: {int32, int64} = int32"},  \
   reduce_shape,                                                               \
   0,                                                                          \
   what " of elements across the axes in reduction_indices (all axes kept "   \
        "as 1 with keep_dims)."}
#define ARG_OP(op_name, what)                                                  \
  {op_name,                                                                    \
   {"input: T", "dimension: Tidx"},                                            \
   {"output: output_type"},                                                    \
   {REDUCE_TYPES, "Tidx: {int32, int64} = int32",                              \
    "output_type: {int32, int64} = int64"},                                    \
   arg_shape,                                                                  \
   TF_OP_NOT_DIFFERENTIABLE,                                                   \
   "Index of the " what " value along dimension (first one on ties; NaN "     \
   "counts as " what ")."}

#define BOOL_REDUCE_OP(op_name, what)                                          \
  {op_name,                                                                    \
   {"input: bool", "reduction_indices: Tidx"},                                 \
   {"output: bool"},                                                           \
   {"keep_dims: bool = false", "Tidx: {int32, int64} = int32"},                \
   reduce_shape,                                                               \
   TF_OP_NOT_DIFFERENTIABLE,                                                   \
   what " of elements across the axes in reduction_indices (all axes kept "   \
        "as 1 with keep_dims)."}

static const tf_op_spec reduction_ops[] = {
    REDUCE_OP("Sum", "Sum"),
    REDUCE_OP("Mean", "Mean (NaN for float over no elements)"),
    REDUCE_OP("Max", "Maximum (-inf or the lowest integer over no elements)"),
    REDUCE_OP("Min", "Minimum (+inf or the highest integer over no elements)"),
    REDUCE_OP("Prod", "Product"),
    ARG_OP("ArgMax", "largest"),
    ARG_OP("ArgMin", "smallest"),
    BOOL_REDUCE_OP("All", "Logical and (true over no elements)"),
    BOOL_REDUCE_OP("Any", "Logical or (false over no elements)"),
};

TF_REGISTER_OPS("reduction", reduction_ops)
