/* ops_grad_support.c: op definitions that automatic differentiation builds
 * on, with TensorFlow's signatures: StopGradient (identity the gradient walk
 * does not cross), BroadcastGradientArgs (reduction axes of a broadcast),
 * UnsortedSegmentSum (densifies sparse gradients) and CheckNumerics. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static tf_code vector_shape(tf_shape_ctx *ctx) {
  for (int i = 0; i < ctx->n_in; i++) {
    const tf_shape *s = &ctx->in[i];
    if (s->rank != TF_UNKNOWN_RANK && s->rank != 1) {
      char b[96];
      return tf_shape_error(ctx, "s%d must be a vector, got shape %s", i,
                            tf_shape_str(s, b, sizeof b));
    }
  }
  for (int i = 0; i < ctx->n_out; i++) {
    ctx->out[i] = tf_shape_of(1, TF_UNKNOWN_DIM);
  }
  return TF_OK;
}

/* [num_segments] + data.shape[rank(segment_ids):]. */
static tf_code segment_sum_shape(tf_shape_ctx *ctx) {
  const tf_shape *data = &ctx->in[0], *ids = &ctx->in[1], *num = &ctx->in[2];
  char a[128], b[128];
  if (num->rank != TF_UNKNOWN_RANK && num->rank != 0) {
    return tf_shape_error(ctx, "num_segments must be a scalar, got shape %s",
                          tf_shape_str(num, a, sizeof a));
  }
  if (data->rank == TF_UNKNOWN_RANK || ids->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  bool prefix = ids->rank <= data->rank;
  for (int d = 0; prefix && d < ids->rank; d++) {
    prefix = ids->dims[d] < 0 || data->dims[d] < 0 ||
             ids->dims[d] == data->dims[d];
  }
  if (!prefix) {
    return tf_shape_error(ctx, "segment_ids shape %s must be a prefix of "
                          "data shape %s", tf_shape_str(ids, a, sizeof a),
                          tf_shape_str(data, b, sizeof b));
  }
  tf_shape out = {.rank = 1 + data->rank - ids->rank};
  if (out.rank > TF_MAX_RANK) {
    return tf_shape_error(ctx, "output rank %d exceeds the maximum %d",
                          out.rank, TF_MAX_RANK);
  }
  out.dims[0] = TF_UNKNOWN_DIM;
  const tf_tensor *nv = ctx->in_value ? ctx->in_value[2] : NULL;
  if (nv != NULL && nv->n == 1) {
    int64_t n = tf_tensor_get_i64(nv, 0);
    if (n < 0) {
      return tf_shape_error(ctx, "num_segments must be >= 0, got %" PRId64, n);
    }
    out.dims[0] = n;
  }
  for (int d = ids->rank; d < data->rank; d++) {
    out.dims[1 + d - ids->rank] = data->dims[d];
  }
  ctx->out[0] = out;
  return TF_OK;
}

static const tf_op_spec grad_support_ops[] = {
    {.name = "StopGradient",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type"},
     .shape_fn = tf_shape_fn_unchanged,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Returns its input; gradients do not flow through it."},
    {.name = "BroadcastGradientArgs",
     .inputs = {"s0: T", "s1: T"},
     .outputs = {"r0: T", "r1: T"},
     .attrs = {"T: {int32, int64} = int32"},
     .shape_fn = vector_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Axes to sum a broadcast result over to get back to shapes s0 "
            "and s1 (dims where both are 1 go to both)."},
    {.name = "UnsortedSegmentSum",
     .inputs = {"data: T", "segment_ids: Tindices",
                "num_segments: Tnumsegments"},
     .outputs = {"output: T"},
     .attrs = {"T: {float, double, int32, int64}", "Tindices: {int32, int64}",
               "Tnumsegments: {int32, int64} = int32"},
     .shape_fn = segment_sum_shape,
     .doc = "output[i, ...] = sum of data[j..., ...] with segment_ids[j...] == "
            "i; negative ids are dropped, ids >= num_segments are an error."},
    {.name = "CheckNumerics",
     .inputs = {"tensor: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {bfloat16, half, float, double}", "message: string"},
     .shape_fn = tf_shape_fn_unchanged,
     .doc = "Returns tensor; an error naming message when it holds a NaN or "
            "an Inf."},
};

TF_REGISTER_OPS("grad_support", grad_support_ops)
