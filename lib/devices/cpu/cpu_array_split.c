/* cpu_array_split.c: the CPU SplitV kernel, for every dtype. Viewed as
 * [outer, dim * inner], output i is the column block of width
 * size_splits[i] * inner at the running offset: one 2-D region copy each
 * (strings deep-copied). With num_split 1 the input is returned itself. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Defined in lib/core/ops/ops_array_more.c (shared with the shape
 * function): sizes from size_splits, one -1 resolved against dim. */
tf_code tf__splitv_sizes(const tf_tensor *sizes, int64_t num, int64_t dim,
                         int64_t *out, tf_status *st);

/* Validates split_dim (an int32 scalar) against x; *axis gets it. */
static tf_code splitv_axis(tf_kernel_ctx *ctx, const tf_tensor *x,
                           const tf_tensor *dim_t, int64_t *axis) {
  char buf[96];
  tf_status st;
  if (dim_t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "split_dim must be a scalar, got shape %s",
                           tf_shape_str(&dim_t->shape, buf, sizeof(buf)));
  }
  if (x->shape.rank == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "value must be at least 1-D to be split, got a "
                           "scalar");
  }
  if (tf__normalize_axis(tf_tensor_get_i64(dim_t, 0), x->shape.rank,
                         "split_dim", axis, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return TF_OK;
}

static tf_code splitv_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int64_t axis, num = ctx->n_outputs;
  TF_TRY(splitv_axis(ctx, x, ctx->inputs[2], &axis));
  int64_t d = x->shape.dims[axis];
  int64_t *len = tf__xcalloc((size_t)num, sizeof *len);
  tf_status st;
  if (tf__splitv_sizes(ctx->inputs[1], num, d, len, &st) != TF_OK) {
    free(len);
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (num == 1) {
    free(len);
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  int64_t outer = 1, inner = 1, at = 0;
  for (int k = 0; k < x->shape.rank; k++) {
    if (k < axis) {
      outer *= x->shape.dims[k];
    } else if (k > axis) {
      inner *= x->shape.dims[k];
    }
  }
  tf_code rc = TF_OK;
  for (int64_t i = 0; rc == TF_OK && i < num; i++) {
    tf_shape os = x->shape;
    os.dims[axis] = len[i];
    tf_tensor *y;
    rc = tf_kernel_alloc_output(ctx, (int)i, x->dtype, &os, &y);
    int64_t w = len[i] * inner;
    tf__region r = {.rank = 2, .dims = {outer, w}, .sstride = {d * inner, 1},
                    .dstride = {w, 1}};
    if (rc == TF_OK && y->n > 0) {
      rc = tf__region_copy(ctx, &r, y, 0, x, at);
    }
    at += w;
  }
  free(len);
  return rc;
}

static const tf_kernel_def array_split_kernels[] = {
    {"SplitV", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, splitv_compute, NULL,
     free, 0},
};

TF_REGISTER_KERNELS(array_split_kernels)
