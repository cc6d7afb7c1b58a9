/* cpu_array_reverse.c: the CPU ReverseV2 kernel, for every dtype. The
 * output is one region copy of the input read with negative strides along
 * the reversed axes (strings deep-copied); no axis to reverse, or only
 * axes of size <= 1, returns the input itself. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Marks the axes listed in axis_t in rev[0..rank); TF's checks. */
static tf_code reverse_axes(tf_kernel_ctx *ctx, const tf_tensor *axis_t,
                            int rank, bool *rev) {
  char buf[96];
  if (axis_t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "'axis' must be 1-dimension, got shape %s",
                           tf_shape_str(&axis_t->shape, buf, sizeof(buf)));
  }
  for (int d = 0; d < rank; d++) {
    rev[d] = false;
  }
  for (int64_t i = 0; i < axis_t->n; i++) {
    int64_t a = tf_tensor_get_i64(axis_t, i);
    if (a < -rank || a >= rank) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "'axis'[%" PRId64 "] = %" PRId64
                             " is out of valid range [%d, %d)",
                             i, a, -rank, rank);
    }
    a = a < 0 ? a + rank : a;
    if (rev[a]) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "axis %" PRId64 " specified more than once", a);
    }
    rev[a] = true;
  }
  return TF_OK;
}

static tf_code reverse_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank;
  bool rev[TF_MAX_RANK];
  TF_TRY(reverse_axes(ctx, ctx->inputs[1], rank, rev));
  bool any = false;
  for (int d = 0; d < rank; d++) {
    any = any || (rev[d] && x->shape.dims[d] > 1);
  }
  if (!any || x->n == 0) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  tf__region r = {.rank = rank};
  tf__row_major_strides(&x->shape, r.sstride);
  tf__row_major_strides(&x->shape, r.dstride);
  int64_t soff = 0;
  for (int d = 0; d < rank; d++) {
    r.dims[d] = x->shape.dims[d];
    if (rev[d]) {
      soff += (r.dims[d] - 1) * r.sstride[d];
      r.sstride[d] = -r.sstride[d];
    }
  }
  return tf__region_copy(ctx, &r, y, 0, x, soff);
}

static const tf_kernel_def array_reverse_kernels[] = {
    {"ReverseV2", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, reverse_compute,
     NULL, free, 0},
};

TF_REGISTER_KERNELS(array_reverse_kernels)
