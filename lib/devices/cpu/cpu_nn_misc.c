/* cpu_nn_misc.c: CPU kernels for L2Loss (float32, float64) and InTopK
 * (float32 predictions, int32 or int64 targets). L2Loss sums squares in
 * double over fixed blocks whose partial sums are added in order, so the
 * result does not depend on the thread count. InTopK follows TF's CPU
 * kernel: a target is in the top k when fewer than k classes score
 * strictly higher, and an out-of-range target or any non-finite score in
 * its row gives false. */
#include <math.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

/* ---- L2Loss ---------------------------------------------------------------- */

#define L2_BLOCK ((int64_t)1 << 14)

/* Defines sumsq_##T: sum of x[i]^2 in double, 8 independent lanes so the
 * compiler can vectorise without reassociating one accumulator. */
#define DEFINE_SUMSQ(T)                                                        \
  static double sumsq_##T(const T *restrict x, int64_t n) {                   \
    double acc[8] = {0};                                                       \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      for (int j = 0; j < 8; j++) {                                            \
        acc[j] += (double)x[i + j] * (double)x[i + j];                         \
      }                                                                        \
    }                                                                          \
    double s = 0;                                                              \
    for (; i < n; i++) s += (double)x[i] * (double)x[i];                       \
    for (int j = 0; j < 8; j++) s += acc[j];                                   \
    return s;                                                                  \
  }

DEFINE_SUMSQ(float)
DEFINE_SUMSQ(double)

typedef struct l2_args {
  const void *x;
  int64_t n;
  bool f64;
  double *partial; /* one per block */
} l2_args;

static double l2_block(const l2_args *a, int64_t blk) {
  int64_t lo = blk * L2_BLOCK, len = TF_MIN(L2_BLOCK, a->n - lo);
  return a->f64 ? sumsq_double((const double *)a->x + lo, len)
                : sumsq_float((const float *)a->x + lo, len);
}

static void l2_blocks(void *arg, int64_t begin, int64_t end) {
  const l2_args *a = arg;
  for (int64_t b = begin; b < end; b++) a->partial[b] = l2_block(a, b);
}

static tf_code l2_loss_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *t = ctx->inputs[0];
  tf_shape scalar = tf_shape_scalar();
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, t->dtype, &scalar, &out));
  l2_args a = {.x = t->data, .n = t->n, .f64 = t->dtype == TF_FLOAT64};
  int64_t blocks = (t->n + L2_BLOCK - 1) / L2_BLOCK;
  double sum = 0;
  if (blocks == 1) {
    sum = l2_block(&a, 0);
  } else if (blocks > 1) {
    a.partial = malloc((size_t)blocks * sizeof *a.partial);
    if (a.partial == NULL) {
      return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED,
                             "no memory for %lld partial sums",
                             (long long)blocks);
    }
    int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / L2_BLOCK);
    tf_parallel_for(ctx->pool, blocks, grain, l2_blocks, &a);
    for (int64_t b = 0; b < blocks; b++) sum += a.partial[b];
    free(a.partial);
  }
  if (a.f64) {
    *(double *)out->data = sum / 2;
  } else {
    *(float *)out->data = (float)(sum / 2);
  }
  return TF_OK;
}

/* ---- InTopK ---------------------------------------------------------------- */

typedef struct in_top_k_state {
  int64_t k;
} in_top_k_state;

typedef struct in_top_k_args {
  const float *pred; /* [B, C] */
  const void *targets;
  bool t64;
  int64_t c, k;
  bool *out;         /* [B] */
} in_top_k_args;

static void in_top_k_rows(void *arg, int64_t begin, int64_t end) {
  const in_top_k_args *a = arg;
  for (int64_t r = begin; r < end; r++) {
    const float *restrict p = a->pred + r * a->c;
    int64_t t = a->t64 ? ((const int64_t *)a->targets)[r]
                       : ((const int32_t *)a->targets)[r];
    if (t < 0 || t >= a->c || !isfinite(p[t])) {
      a->out[r] = false;
      continue;
    }
    float target = p[t];
    int64_t more = 0;
    bool finite = true;
    for (int64_t i = 0; i < a->c; i++) {
      more += p[i] > target;
      finite = finite && isfinite(p[i]);
    }
    a->out[r] = finite && more < a->k;
  }
}

static tf_code in_top_k_init(const tf_node *node, void **state, tf_status *st) {
  in_top_k_state *s = tf__xcalloc(1, sizeof *s);
  tf_code code = tf_node_attr_get_int(node, "k", &s->k, st);
  if (code != TF_OK) {
    free(s);
    tf_status_prefix(st, "node '%s' (%s)", tf_node_name(node),
                     tf_node_op(node));
    return code;
  }
  *state = s;
  return TF_OK;
}

static tf_code in_top_k_kernel(tf_kernel_ctx *ctx) {
  const in_top_k_state *s = ctx->state;
  const tf_tensor *p = ctx->inputs[0], *t = ctx->inputs[1];
  if (p->shape.rank != 2 || t->shape.rank != 1 ||
      t->shape.dims[0] != p->shape.dims[0]) {
    char ps[128], ts[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "predictions must be [batch, classes] and targets "
                           "[batch], got %s and %s",
                           tf_shape_str(&p->shape, ps, sizeof ps),
                           tf_shape_str(&t->shape, ts, sizeof ts));
  }
  if (p->dtype != TF_FLOAT32 || (t->dtype != TF_INT32 && t->dtype != TF_INT64)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "predictions must be float32 and targets int32 or "
                           "int64, got %s and %s", tf_dtype_name(p->dtype),
                           tf_dtype_name(t->dtype));
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &t->shape, &out));
  in_top_k_args a = {.pred = p->data, .targets = t->data,
                     .t64 = t->dtype == TF_INT64, .c = p->shape.dims[1],
                     .k = s->k, .out = out->data};
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(a.c, 1));
  tf_parallel_for(ctx->pool, t->n, grain, in_top_k_rows, &a);
  return TF_OK;
}

static const tf_kernel_def nn_misc_kernels[] = {
    {.op = "L2Loss", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .compute = l2_loss_kernel},
    {.op = "L2Loss", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,
     .compute = l2_loss_kernel},
    {.op = "InTopK", .device_type = TF_DEVICE_CPU, .dtype = TF_INT32,
     .init = in_top_k_init, .compute = in_top_k_kernel, .free_state = free},
    {.op = "InTopK", .device_type = TF_DEVICE_CPU, .dtype = TF_INT64,
     .init = in_top_k_init, .compute = in_top_k_kernel, .free_state = free},
};

TF_REGISTER_KERNELS(nn_misc_kernels)
