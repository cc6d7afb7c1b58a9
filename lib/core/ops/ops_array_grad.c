/* ops_array_grad.c: backward ops of the array family: StridedSliceGrad
 * (TensorFlow's signature and attrs), which scatters dy into zeros shaped
 * like StridedSlice's input. Its shape function takes the output shape from
 * a constant shape input and, when begin, end and strides are constants
 * too, checks dy against the slice they select. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

static tf_code masks_of(tf_shape_ctx *ctx, tf__slice_masks *m) {
  return tf__slice_masks_read(ctx->node, m, ctx->status);
}

/* dy's known shape must match the slice's: INVALID_ARGUMENT otherwise. */
static tf_code check_dy(tf_shape_ctx *ctx, const tf_shape *out) {
  const tf_tensor *v[3];
  int64_t vals[3][32];
  for (int k = 0; k < 3; k++) {
    v[k] = ctx->in_value ? ctx->in_value[k + 1] : NULL;
    if (v[k] == NULL || v[k]->shape.rank != 1 || v[k]->n > 32 ||
        v[k]->n != (v[0] ? v[0]->n : -1)) {
      return TF_OK;
    }
    for (int64_t i = 0; i < v[k]->n; i++) {
      vals[k][i] = tf_tensor_get_i64(v[k], i);
    }
  }
  tf__slice_masks m;
  TF_TRY(masks_of(ctx, &m));
  tf__slice_spec spec;
  tf_status st;
  if (tf__strided_slice_spec(out, vals[0], vals[1], vals[2], (int)v[0]->n, &m,
                             &spec, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  const tf_shape *dy = &ctx->in[4];
  bool ok = dy->rank == TF_UNKNOWN_RANK || dy->rank == spec.final.rank;
  for (int d = 0; ok && dy->rank != TF_UNKNOWN_RANK && d < dy->rank; d++) {
    ok = dy->dims[d] < 0 || dy->dims[d] == spec.final.dims[d];
  }
  if (!ok) {
    char a[96], b[96];
    return tf_shape_error(ctx, "shape of dy was %s instead of %s",
                          tf_shape_str(dy, a, sizeof(a)),
                          tf_shape_str(&spec.final, b, sizeof(b)));
  }
  return TF_OK;
}

static tf_code strided_slice_grad_shape(tf_shape_ctx *ctx) {
  const tf_shape *s = &ctx->in[0];
  char buf[96];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 1) {
    return tf_shape_error(ctx, "shape must be a vector, got shape %s",
                          tf_shape_str(s, buf, sizeof(buf)));
  }
  const tf_tensor *sv = ctx->in_value ? ctx->in_value[0] : NULL;
  if (sv == NULL) {
    int64_t r = s->rank == 1 ? s->dims[0] : TF_UNKNOWN_DIM;
    ctx->out[0] = r >= 0 && r <= TF_MAX_RANK ? tf_shape_make((int)r, NULL)
                                             : tf_shape_unknown();
    return TF_OK;
  }
  if (sv->n > TF_MAX_RANK) {
    return tf_shape_error(ctx, "shape has %" PRId64 " dims; at most %d",
                          sv->n, TF_MAX_RANK);
  }
  tf_shape out = {.rank = (int)sv->n};
  for (int d = 0; d < out.rank; d++) {
    out.dims[d] = tf_tensor_get_i64(sv, d);
    if (out.dims[d] < 0) {
      return tf_shape_error(ctx, "shape[%d] = %" PRId64 " must be >= 0", d,
                            out.dims[d]);
    }
  }
  TF_TRY(check_dy(ctx, &out));
  ctx->out[0] = out;
  return TF_OK;
}

static const tf_op_spec array_grad_ops[] = {
    {"StridedSliceGrad",
     {"shape: Index", "begin: Index", "end: Index", "strides: Index",
      "dy: T"},
     {"output: T"},
     {"T: type", "Index: {int32, int64}", "begin_mask: int = 0",
      "end_mask: int = 0", "ellipsis_mask: int = 0", "new_axis_mask: int = 0",
      "shrink_axis_mask: int = 0"},
     strided_slice_grad_shape, 0,
     "Gradient of StridedSlice: dy scattered into zeros of the given shape "
     "at the elements the slice selects."},
};

TF_REGISTER_OPS("array", array_grad_ops)
