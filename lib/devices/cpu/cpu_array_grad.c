/* cpu_array_grad.c: CPU kernel of StridedSliceGrad, for every dtype. The
 * slice is resolved with tf__strided_slice_spec exactly as StridedSlice
 * does; the output is zero-filled and dy is written through one region
 * copy whose destination strides are the slice's (possibly negative)
 * strides. A slice that takes everything returns dy reshaped. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

typedef struct ssg_state {
  tf__slice_masks masks;
} ssg_state;

static tf_code ssg_init(const tf_node *node, void **state, tf_status *st) {
  ssg_state *s = tf__xcalloc(1, sizeof *s);
  if (tf__slice_masks_read(node, &s->masks, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* The output shape from input 0 (a vector of non-negative dims). */
static tf_code ssg_out_shape(tf_kernel_ctx *ctx, tf_shape *out) {
  const tf_tensor *t = ctx->inputs[0];
  char a[96];
  if (t->shape.rank != 1 || t->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "StridedSliceGrad: shape must be a vector of at "
                           "most %d dims, got shape %s",
                           TF_MAX_RANK, tf_shape_str(&t->shape, a, sizeof(a)));
  }
  out->rank = (int)t->n;
  for (int d = 0; d < out->rank; d++) {
    out->dims[d] = tf_tensor_get_i64(t, d);
    if (out->dims[d] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "StridedSliceGrad: shape[%d] = %" PRId64
                             " must be >= 0",
                             d, out->dims[d]);
    }
  }
  int64_t n;
  tf_status st;
  if (tf_shape_check(out, 1, &n, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "StridedSliceGrad: %s", st.msg);
  }
  return TF_OK;
}

/* Reads begin, end and strides (equal-length vectors, at most 32). */
static tf_code ssg_args(tf_kernel_ctx *ctx, int64_t *b, int64_t *e,
                        int64_t *s, int *n) {
  const tf_tensor *bt = ctx->inputs[1], *et = ctx->inputs[2],
                  *stt = ctx->inputs[3];
  char x[96], y[96], z[96];
  if (bt->shape.rank != 1 || et->shape.rank != 1 || stt->shape.rank != 1 ||
      bt->n != et->n || bt->n != stt->n || bt->n > 32) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected begin, end, and strides to be 1D equal "
                           "size tensors (at most 32), but got shapes %s, "
                           "%s, and %s instead.",
                           tf_shape_str(&bt->shape, x, sizeof(x)),
                           tf_shape_str(&et->shape, y, sizeof(y)),
                           tf_shape_str(&stt->shape, z, sizeof(z)));
  }
  *n = (int)bt->n;
  for (int i = 0; i < *n; i++) {
    b[i] = tf_tensor_get_i64(bt, i);
    e[i] = tf_tensor_get_i64(et, i);
    s[i] = tf_tensor_get_i64(stt, i);
  }
  return TF_OK;
}

static tf_code ssg_compute(tf_kernel_ctx *ctx) {
  const ssg_state *s = ctx->state;
  tf_tensor *dy = ctx->inputs[4];
  int64_t b[32], e[32], strides[32], out_strides[TF_MAX_RANK];
  int n = 0;
  tf_shape os;
  tf__slice_spec spec;
  tf_status st;
  char a[96], c[96];
  TF_TRY(ssg_out_shape(ctx, &os));
  TF_TRY(ssg_args(ctx, b, e, strides, &n));
  if (tf__strided_slice_spec(&os, b, e, strides, n, &s->masks, &spec, &st) !=
      TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (!tf_shape_equal(&dy->shape, &spec.final)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape of dy was %s instead of %s",
                           tf_shape_str(&dy->shape, a, sizeof(a)),
                           tf_shape_str(&spec.final, c, sizeof(c)));
  }
  if (spec.identity) {
    tf_tensor *v;
    if (tf_tensor_view(dy, &os, &v, &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
    tf_kernel_set_output(ctx, 0, v);
    tf_tensor_unref(v);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dy->dtype, &os, &y));
  if (dy->dtype != TF_STRING) { /* new string tensors are already "" */
    static const unsigned char zero[16] = {0};
    TF_TRY(tf__fill_value(ctx, y, zero));
  }
  tf__row_major_strides(&os, out_strides);
  tf__region r = {.rank = spec.rank};
  tf_shape proc = tf_shape_make(spec.rank, spec.size);
  tf__row_major_strides(&proc, r.sstride);
  int64_t doff = 0;
  if (dy->n == 0) {
    return TF_OK;
  }
  for (int i = 0; i < spec.rank; i++) {
    r.dims[i] = spec.size[i];
    r.dstride[i] = spec.stride[i] * out_strides[i];
    doff += spec.begin[i] * out_strides[i];
  }
  return tf__region_copy(ctx, &r, y, doff, dy, 0);
}

static const tf_kernel_def array_grad_kernels[] = {
    {"StridedSliceGrad", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, ssg_init,
     ssg_compute, NULL, free, 0},
};

TF_REGISTER_KERNELS(array_grad_kernels)
