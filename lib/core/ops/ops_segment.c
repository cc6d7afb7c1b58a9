/* ops_segment.c: segment reductions with TensorFlow's signatures:
 * SegmentSum (sorted segment_ids, a vector as long as data's first dim;
 * output rows = last id + 1) and UnsortedSegmentMax (segment_ids of any
 * shape that prefixes data's, num_segments rows; negative ids dropped,
 * empty segments hold the dtype's lowest value). UnsortedSegmentSum lives
 * in ops_grad_support.c; UnsortedSegmentMax's shape rules are the same. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* [?] + data.shape[1:]; segment_ids a vector as long as data's dim 0. */
static tf_code sorted_segment_shape(tf_shape_ctx *ctx) {
  const tf_shape *data = &ctx->in[0], *ids = &ctx->in[1];
  char a[128], b[128];
  if (ids->rank != TF_UNKNOWN_RANK && ids->rank != 1) {
    return tf_shape_error(ctx, "segment_ids should be a vector, got shape %s",
                          tf_shape_str(ids, a, sizeof a));
  }
  if (data->rank == 0) {
    return tf_shape_error(ctx, "data must have rank >= 1, got a scalar");
  }
  if (data->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  if (ids->rank == 1 && ids->dims[0] >= 0 && data->dims[0] >= 0 &&
      ids->dims[0] != data->dims[0]) {
    return tf_shape_error(ctx, "segment_ids should be the same size as "
                          "dimension 0 of input: segment_ids %s, data %s",
                          tf_shape_str(ids, a, sizeof a),
                          tf_shape_str(data, b, sizeof b));
  }
  tf_shape out = *data;
  out.dims[0] = TF_UNKNOWN_DIM;
  ctx->out[0] = out;
  return TF_OK;
}

/* [num_segments] + data.shape[rank(segment_ids):]. */
static tf_code unsorted_segment_shape(tf_shape_ctx *ctx) {
  const tf_shape *data = &ctx->in[0], *ids = &ctx->in[1], *num = &ctx->in[2];
  char a[128], b[128];
  if (num->rank != TF_UNKNOWN_RANK && num->rank != 0) {
    return tf_shape_error(ctx, "num_segments must be a scalar, got shape %s",
                          tf_shape_str(num, a, sizeof a));
  }
  if (data->rank == TF_UNKNOWN_RANK || ids->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
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

static const tf_op_spec segment_ops[] = {
    {.name = "SegmentSum",
     .inputs = {"data: T", "segment_ids: Tindices"},
     .outputs = {"output: T"},
     .attrs = {"T: {float, double, int32, int64}", "Tindices: {int32, int64}"},
     .shape_fn = sorted_segment_shape,
     .doc = "output[i, ...] = sum of data[j, ...] with segment_ids[j] == i; "
            "ids sorted and >= 0, output rows = last id + 1 (missing ids "
            "give 0)."},
    {.name = "UnsortedSegmentMax",
     .inputs = {"data: T", "segment_ids: Tindices",
                "num_segments: Tnumsegments"},
     .outputs = {"output: T"},
     .attrs = {"T: {float, double, int32, int64}", "Tindices: {int32, int64}",
               "Tnumsegments: {int32, int64} = int32"},
     .shape_fn = unsorted_segment_shape,
     .doc = "output[i, ...] = max of data[j..., ...] with segment_ids[j...] "
            "== i (the dtype's lowest value when none); negative ids are "
            "dropped, ids >= num_segments are an error."},
};

TF_REGISTER_OPS("segment", segment_ops)
