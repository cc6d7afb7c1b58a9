/* cpu_array_space.c: the CPU DepthToSpace and SpaceToDepth kernels (NHWC
 * only, as TF's CPU kernels), for every dtype. Both are one 6-D region
 * copy over (n, h, bh, w, bw, c): a spatial pixel (h * b + bh, w * b + bw)
 * with channel c is depth channel (bh * b + bw) * C + c of pixel (h, w),
 * C being the smaller depth. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Defined in lib/core/ops/ops_array_more.c (shared with the shape
 * functions): block_size and data_format, and the output shape. */
tf_code tf__space_attrs(const tf_node *n, int64_t *block, tf_status *st);
tf_code tf__space_shape(const tf_shape *s, int64_t b, bool to_space,
                        tf_shape *out, tf_status *st);

typedef struct space_state {
  int64_t block;
} space_state;

static tf_code space_init(const tf_node *node, void **state, tf_status *st) {
  space_state *s = tf__xcalloc(1, sizeof *s);
  if (tf__space_attrs(node, &s->block, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* Strides of the 6-D view (n, h, bh, w, bw, c) of the spatial tensor
 * [N, H*b, W*b, C] (sp) and of the depth tensor [N, H, W, b*b*C] (dp). */
static void space_strides(int64_t n, int64_t h, int64_t w, int64_t c,
                          int64_t b, tf__region *r, int64_t *sp,
                          int64_t *dp) {
  int64_t dims[6] = {n, h, b, w, b, c};
  int64_t spv[6] = {h * b * w * b * c, b * w * b * c, w * b * c, b * c, c, 1};
  int64_t dpv[6] = {h * w * b * b * c, w * b * b * c, b * c, b * b * c, c, 1};
  r->rank = 6;
  for (int k = 0; k < 6; k++) {
    r->dims[k] = dims[k];
    sp[k] = spv[k];
    dp[k] = dpv[k];
  }
}

static tf_code space_run(tf_kernel_ctx *ctx, bool to_space) {
  const space_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  int64_t b = s->block;
  tf_shape os;
  tf_status st;
  if (tf__space_shape(&x->shape, b, to_space, &os, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  const tf_shape *small = to_space ? &x->shape : &os; /* depth side */
  tf__region r;
  int64_t sp[6], dp[6];
  space_strides(small->dims[0], small->dims[1], small->dims[2],
                small->dims[3] / (b * b), b, &r, sp, dp);
  for (int k = 0; k < 6; k++) {
    r.sstride[k] = to_space ? dp[k] : sp[k];
    r.dstride[k] = to_space ? sp[k] : dp[k];
  }
  return tf__region_copy(ctx, &r, y, 0, x, 0);
}

static tf_code depth_to_space_compute(tf_kernel_ctx *ctx) {
  return space_run(ctx, true);
}

static tf_code space_to_depth_compute(tf_kernel_ctx *ctx) {
  return space_run(ctx, false);
}

static const tf_kernel_def array_space_kernels[] = {
    {"DepthToSpace", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, space_init,
     depth_to_space_compute, NULL, free, 0},
    {"SpaceToDepth", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, space_init,
     space_to_depth_compute, NULL, free, 0},
};

TF_REGISTER_KERNELS(array_space_kernels)
