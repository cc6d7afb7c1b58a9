/* cpu_lrn.c: CPU kernels (float32; half and bfloat16 through float32
 * copies, rounded once) of LRN and LRNGrad (ops_nn_lrn.c).
 * The input is read as rows of `depth` channels (N * H * W rows); row
 * ranges are split over the intra-op pool. Each row is computed in double
 * and rounded once:
 *   LRN:      N_d = bias + alpha * sum_{|k-d| <= r} x_k^2,
 *             y_d = x_d * N_d^-beta;
 *   LRNGrad:  dx_k = sum_{|j-k| <= r} g_j * ([j == k] N_j^-beta
 *                                    - 2 alpha beta x_k y_j / N_j),
 * which is TF's loop (lrn_op.cc, LaunchLRNGrad) with y the forward
 * output given as output_image. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"

typedef struct lrn_params {
  int64_t radius;
  double bias, alpha, beta;
} lrn_params;

/* Reads and checks the attrs; errors name the op. */
static tf_code lrn_read_params(tf_kernel_ctx *ctx, lrn_params *p) {
  tf_status st;
  tf_status_init(&st);
  if (tf_node_attr_get_int(ctx->node, "depth_radius", &p->radius, &st) !=
          TF_OK ||
      tf_node_attr_get_float(ctx->node, "bias", &p->bias, &st) != TF_OK ||
      tf_node_attr_get_float(ctx->node, "alpha", &p->alpha, &st) != TF_OK ||
      tf_node_attr_get_float(ctx->node, "beta", &p->beta, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s: %s", tf_node_op(ctx->node),
                           st.msg);
  }
  if (p->radius < 0 || p->radius > INT32_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: depth_radius = %lld must be in [0, %d]",
                           tf_node_op(ctx->node), (long long)p->radius,
                           INT32_MAX);
  }
  return TF_OK;
}

typedef struct lrn_args {
  const lrn_params *p;
  const float *g, *x, *y; /* g, y: LRNGrad only */
  float *out;
  int64_t depth;
} lrn_args;

/* N_d for one row x of depth channels. */
static double lrn_norm(const lrn_params *p, const float *x, int64_t depth,
                       int64_t d) {
  int64_t lo = TF_MAX((int64_t)0, d - p->radius);
  int64_t hi = TF_MIN(depth - 1, d + p->radius);
  double s = 0;
  for (int64_t k = lo; k <= hi; k++) s += (double)x[k] * x[k];
  return p->bias + p->alpha * s;
}

static void lrn_rows(void *arg, int64_t lo, int64_t hi) {
  const lrn_args *a = arg;
  for (int64_t r = lo; r < hi; r++) {
    const float *x = a->x + r * a->depth;
    float *o = a->out + r * a->depth;
    for (int64_t d = 0; d < a->depth; d++) {
      o[d] = (float)(x[d] * pow(lrn_norm(a->p, x, a->depth, d), -a->p->beta));
    }
  }
}

static void lrn_grad_rows(void *arg, int64_t lo, int64_t hi) {
  const lrn_args *a = arg;
  const lrn_params *p = a->p;
  const int64_t depth = a->depth;
  double acc[64], *buf = depth <= 64 ? acc : tf__xmalloc(sizeof(double) *
                                                         (size_t)depth);
  for (int64_t r = lo; r < hi; r++) {
    const float *x = a->x + r * depth, *y = a->y + r * depth,
                *g = a->g + r * depth;
    for (int64_t k = 0; k < depth; k++) buf[k] = 0;
    for (int64_t j = 0; j < depth; j++) {
      double n = lrn_norm(p, x, depth, j);
      double c = -2 * p->alpha * p->beta * (double)y[j] / n * g[j];
      int64_t k0 = TF_MAX((int64_t)0, j - p->radius);
      int64_t k1 = TF_MIN(depth - 1, j + p->radius);
      for (int64_t k = k0; k <= k1; k++) buf[k] += c * x[k];
      buf[j] += g[j] * pow(n, -p->beta);
    }
    float *o = a->out + r * depth;
    for (int64_t k = 0; k < depth; k++) o[k] = (float)buf[k];
  }
  if (buf != acc) {
    free(buf);
  }
}

static tf_code lrn_check4(tf_kernel_ctx *ctx, int i, const char *what) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 4) {
    char buf[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: %s must be 4-dimensional, got shape %s",
                           tf_node_op(ctx->node), what,
                           tf_shape_str(&t->shape, buf, sizeof buf));
  }
  return TF_OK;
}

/* t's elements as float32: t's own buffer, or a new copy in *owned (half,
 * bfloat16) that the caller frees. */
static const float *lrn_floats(const tf_tensor *t, float **owned) {
  *owned = NULL;
  if (t->dtype == TF_FLOAT32) {
    return t->data;
  }
  *owned = tf__xmalloc(sizeof(float) * (size_t)(t->n + 1));
  for (int64_t i = 0; i < t->n; i++) {
    (*owned)[i] = (float)tf_tensor_get_f64(t, i);
  }
  return *owned;
}

/* Where the rows write: out's buffer when float32, else a scratch buffer
 * that lrn_finish rounds into out and frees. */
static float *lrn_target(tf_tensor *out) {
  return out->dtype == TF_FLOAT32
             ? out->data
             : tf__xmalloc(sizeof(float) * (size_t)(out->n + 1));
}

static void lrn_finish(float *buf, tf_tensor *out) {
  if (out->dtype == TF_FLOAT32) {
    return;
  }
  for (int64_t i = 0; i < out->n; i++) {
    if (out->dtype == TF_FLOAT16) {
      ((tf_float16 *)out->data)[i] = tf_float_to_float16(buf[i]);
    } else {
      ((tf_bfloat16 *)out->data)[i] = tf_float_to_bfloat16(buf[i]);
    }
  }
  free(buf);
}

static int64_t lrn_grain(const lrn_params *p, int64_t depth) {
  return TF_MAX((int64_t)1,
                TF_PARALLEL_GRAIN / (depth * (2 * TF_MIN(p->radius, depth) +
                                              1)));
}

static tf_code lrn_kernel(tf_kernel_ctx *ctx) {
  lrn_params p;
  TF_TRY(lrn_read_params(ctx, &p));
  TF_TRY(lrn_check4(ctx, 0, "input"));
  const tf_tensor *x = ctx->inputs[0];
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &out));
  const int64_t depth = x->shape.dims[3];
  if (x->n == 0) {
    return TF_OK;
  }
  float *xo;
  lrn_args a = {.p = &p, .x = lrn_floats(x, &xo), .out = lrn_target(out),
                .depth = depth};
  tf_parallel_for(ctx->pool, x->n / depth, lrn_grain(&p, depth), lrn_rows,
                  &a);
  lrn_finish(a.out, out);
  free(xo);
  return TF_OK;
}

static tf_code lrn_grad_kernel(tf_kernel_ctx *ctx) {
  static const char *const names[3] = {"input_grads", "input_image",
                                       "output_image"};
  lrn_params p;
  TF_TRY(lrn_read_params(ctx, &p));
  for (int i = 0; i < 3; i++) {
    TF_TRY(lrn_check4(ctx, i, names[i]));
  }
  const tf_tensor *g = ctx->inputs[0], *x = ctx->inputs[1],
                  *y = ctx->inputs[2];
  if (!tf_shape_equal(&g->shape, &x->shape) ||
      !tf_shape_equal(&g->shape, &y->shape)) {
    char a[128], b[128], c[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "LRNGrad: input_grads %s, input_image %s and "
                           "output_image %s must have the same shape",
                           tf_shape_str(&g->shape, a, sizeof a),
                           tf_shape_str(&x->shape, b, sizeof b),
                           tf_shape_str(&y->shape, c, sizeof c));
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &out));
  const int64_t depth = x->shape.dims[3];
  if (x->n == 0) {
    return TF_OK;
  }
  float *go, *xo, *yo;
  lrn_args a = {.p = &p, .g = lrn_floats(g, &go), .x = lrn_floats(x, &xo),
                .y = lrn_floats(y, &yo), .out = lrn_target(out),
                .depth = depth};
  tf_parallel_for(ctx->pool, x->n / depth, lrn_grain(&p, depth),
                  lrn_grad_rows, &a);
  lrn_finish(a.out, out);
  free(go);
  free(xo);
  free(yo);
  return TF_OK;
}

#define LRN_K(name, fn, dt)                                                    \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = dt, .compute = fn}

static const tf_kernel_def lrn_kernels[] = {
    LRN_K("LRN", lrn_kernel, TF_FLOAT32),
    LRN_K("LRN", lrn_kernel, TF_FLOAT16),
    LRN_K("LRN", lrn_kernel, TF_BFLOAT16),
    LRN_K("LRNGrad", lrn_grad_kernel, TF_FLOAT32),
    LRN_K("LRNGrad", lrn_grad_kernel, TF_FLOAT16),
    LRN_K("LRNGrad", lrn_grad_kernel, TF_BFLOAT16),
};

TF_REGISTER_KERNELS(lrn_kernels)
