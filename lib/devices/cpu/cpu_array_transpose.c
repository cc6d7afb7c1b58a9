/* cpu_array_transpose.c: the CPU Transpose kernel for every dtype.
 *
 * The permutation is checked, then the output is described as a region
 * of the input (output dim k reads input dim perm[k]) and handed to the
 * copy engine, which merges dims that stay adjacent, copies rows whole
 * when the last dim stays last, and otherwise moves 32x32 cache-blocked
 * tiles (a 2-D transpose is one such batch of tiles). The identity
 * permutation returns the input itself. */
#include <inttypes.h>
#include <stdio.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Reads and checks perm against rank; INVALID_ARGUMENT naming the
 * problem. */
static tf_code read_perm(tf_kernel_ctx *ctx, const tf_tensor *p, int rank,
                         int *perm) {
  char buf[96];
  if (p->shape.rank != 1 || p->n != rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "transpose expects a vector of size %d. But "
                           "input(1) has shape %s",
                           rank, tf_shape_str(&p->shape, buf, sizeof(buf)));
  }
  uint32_t seen = 0;
  for (int k = 0; k < rank; k++) {
    int64_t v = tf_tensor_get_i64(p, k);
    if (v < 0 || v >= rank) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "perm[%d] = %" PRId64
                             " is out of range [0 .. %d)",
                             k, v, rank);
    }
    if ((seen >> v) & 1) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "perm is not a permutation: %" PRId64
                             " appears twice",
                             v);
    }
    seen |= 1u << v;
    perm[k] = (int)v;
  }
  return TF_OK;
}

static tf_code transpose_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank, perm[TF_MAX_RANK];
  TF_TRY(read_perm(ctx, ctx->inputs[1], rank, perm));
  bool identity = true;
  for (int k = 0; k < rank; k++) {
    identity = identity && perm[k] == k;
  }
  if (identity) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_shape os = {.rank = rank};
  for (int k = 0; k < rank; k++) {
    os.dims[k] = x->shape.dims[perm[k]];
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  int64_t in_strides[TF_MAX_RANK];
  tf__row_major_strides(&x->shape, in_strides);
  tf__region r = {.rank = rank};
  tf__row_major_strides(&os, r.dstride);
  for (int k = 0; k < rank; k++) {
    r.dims[k] = os.dims[k];
    r.sstride[k] = in_strides[perm[k]];
  }
  return tf__region_copy(ctx, &r, y, 0, x, 0);
}

static const tf_kernel_def array_transpose_kernels[] = {
    {"Transpose", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, transpose_compute,
     NULL, NULL, 0},
};

TF_REGISTER_KERNELS(array_transpose_kernels)
