/* cpu_array_broadcast_to.c: the CPU BroadcastTo kernel, for every dtype.
 * The input's dims are right-aligned with the target shape; each size-1
 * (or missing) dim is read with stride 0, so the output is one region
 * copy (strings deep-copied). A target equal to the input's shape returns
 * the input itself. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Reads the target shape from shape_t into *os and checks that x
 * broadcasts to it (NumPy rules, the input's rank at most the target's). */
static tf_code target_shape(tf_kernel_ctx *ctx, const tf_tensor *x,
                            const tf_tensor *shape_t, tf_shape *os) {
  char a[128], b[128];
  if (shape_t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape must be a vector, got shape %s",
                           tf_shape_str(&shape_t->shape, a, sizeof(a)));
  }
  if (shape_t->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape has %" PRId64 " elements; a tensor has at "
                           "most %d dims", shape_t->n, TF_MAX_RANK);
  }
  os->rank = (int)shape_t->n;
  for (int d = 0; d < os->rank; d++) {
    os->dims[d] = tf_tensor_get_i64(shape_t, d);
    if (os->dims[d] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "shape[%d] = %" PRId64 " must be >= 0", d,
                             os->dims[d]);
    }
  }
  bool ok = x->shape.rank <= os->rank;
  for (int k = 1; ok && k <= x->shape.rank; k++) {
    int64_t xd = x->shape.dims[x->shape.rank - k];
    ok = xd == 1 || xd == os->dims[os->rank - k];
  }
  if (!ok) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Unable to broadcast tensor of shape %s to tensor "
                           "of shape %s",
                           tf_shape_str(&x->shape, a, sizeof(a)),
                           tf_shape_str(os, b, sizeof(b)));
  }
  return TF_OK;
}

static tf_code broadcast_to_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  tf_shape os;
  TF_TRY(target_shape(ctx, x, ctx->inputs[1], &os));
  if (tf_shape_equal(&os, &x->shape)) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  int64_t in_strides[TF_MAX_RANK];
  tf__row_major_strides(&x->shape, in_strides);
  tf__region r = {.rank = os.rank};
  tf__row_major_strides(&os, r.dstride);
  int lead = os.rank - x->shape.rank;
  for (int d = 0; d < os.rank; d++) {
    r.dims[d] = os.dims[d];
    bool from_x = d >= lead && x->shape.dims[d - lead] == os.dims[d];
    r.sstride[d] = from_x ? in_strides[d - lead] : 0;
  }
  return tf__region_copy(ctx, &r, y, 0, x, 0);
}

static const tf_kernel_def array_broadcast_to_kernels[] = {
    {"BroadcastTo", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL,
     broadcast_to_compute, NULL, free, 0},
};

TF_REGISTER_KERNELS(array_broadcast_to_kernels)
