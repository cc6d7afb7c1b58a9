/* cpu_math_grad.c: CPU kernels (float32, float64) for the fused backward
 * ops of ops_math_grad.c. The element-wise ones are one vectorisable loop
 * each, split across the pool above TF_PARALLEL_GRAIN and written in place
 * into the gradient input when nothing else holds it. BiasAddGrad sums
 * fixed blocks of rows in parallel and adds the block sums in order (in
 * double), so its result does not depend on the thread count. */
#include <tgmath.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

/* ---- element-wise --------------------------------------------------------
 * a, b: the op's inputs in order; o may alias either (same index only). */

#define EW_LOOPS(OP, EXPR)                                                     \
  static void OP##_float(const float *a, const float *b, float *o,             \
                         int64_t n) {                                          \
    typedef float T;                                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      T x = a[i], y = b[i];                                                    \
      o[i] = (EXPR);                                                           \
    }                                                                          \
  }                                                                            \
  static void OP##_double(const double *a, const double *b, double *o,         \
                          int64_t n) {                                         \
    typedef double T;                                                          \
    for (int64_t i = 0; i < n; i++) {                                          \
      T x = a[i], y = b[i];                                                    \
      o[i] = (EXPR);                                                           \
    }                                                                          \
  }

EW_LOOPS(relu_grad, y > 0 ? x : (T)0)
EW_LOOPS(relu6_grad, (y > 0 && y < 6) ? x : (T)0)
EW_LOOPS(elu_grad, y > 0 ? x : x * (y + 1))
EW_LOOPS(softplus_grad, x / (1 + exp(-y)))
EW_LOOPS(sigmoid_grad, y * x * (1 - x))
EW_LOOPS(tanh_grad, y * (1 - x * x))
EW_LOOPS(sqrt_grad, y * (T)0.5 / x)
EW_LOOPS(rsqrt_grad, y * (T)-0.5 * (x * x * x))

typedef void (*ew_f32)(const float *, const float *, float *, int64_t);
typedef void (*ew_f64)(const double *, const double *, double *, int64_t);

typedef struct ew_def {
  ew_f32 f32;
  ew_f64 f64;
  int forward; /* the input whose buffer the output may take */
} ew_def;

typedef struct ew_args {
  const ew_def *def;
  const void *a, *b;
  void *o;
  bool f64;
} ew_args;

static void ew_range(void *arg, int64_t lo, int64_t hi) {
  const ew_args *e = arg;
  if (e->f64) {
    e->def->f64((const double *)e->a + lo, (const double *)e->b + lo,
                (double *)e->o + lo, hi - lo);
  } else {
    e->def->f32((const float *)e->a + lo, (const float *)e->b + lo,
                (float *)e->o + lo, hi - lo);
  }
}

static tf_code ew_compute(tf_kernel_ctx *ctx, const ew_def *def) {
  const tf_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (!tf_shape_equal(&a->shape, &b->shape)) {
    char x[128], y[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "inputs must have the "
                           "same shape, got %s and %s",
                           tf_shape_str(&a->shape, x, sizeof x),
                           tf_shape_str(&b->shape, y, sizeof y));
  }
  if (a->dtype != TF_FLOAT32 && a->dtype != TF_FLOAT64) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no kernel for %s",
                           tf_dtype_name(a->dtype));
  }
  tf_tensor *o;
  TF_TRY(tf_kernel_forward_or_alloc(ctx, def->forward, 0, a->dtype, &a->shape,
                                    &o));
  ew_args e = {def, a->data, b->data, o->data, a->dtype == TF_FLOAT64};
  tf_parallel_for(ctx->pool, a->n, TF_PARALLEL_GRAIN, ew_range, &e);
  return TF_OK;
}

#define EW_KERNEL(OP, FORWARD)                                                 \
  static const ew_def OP##_def = {OP##_float, OP##_double, FORWARD};           \
  static tf_code OP##_compute(tf_kernel_ctx *ctx) {                            \
    return ew_compute(ctx, &OP##_def);                                         \
  }

EW_KERNEL(relu_grad, 0)
EW_KERNEL(relu6_grad, 0)
EW_KERNEL(elu_grad, 0)
EW_KERNEL(softplus_grad, 0)
EW_KERNEL(sigmoid_grad, 1)
EW_KERNEL(tanh_grad, 1)
EW_KERNEL(sqrt_grad, 1)
EW_KERNEL(rsqrt_grad, 1)

/* ---- BiasAddGrad ---------------------------------------------------------- */

#define BIAS_BLOCK_ELEMS ((int64_t)1 << 15)

typedef struct bias_args {
  const void *x;
  int64_t rows, c, rows_per_block;
  double *partial; /* blocks x c */
  bool f64;
} bias_args;

#define DEFINE_ROWSUM(T)                                                       \
  static void rowsum_##T(const T *restrict x, int64_t rows, int64_t c,         \
                         double *restrict out) {                               \
    T acc[256];                                                                \
    for (int64_t c0 = 0; c0 < c; c0 += 256) {                                  \
      int64_t w = TF_MIN(256, c - c0);                                         \
      memset(acc, 0, sizeof acc);                                              \
      for (int64_t r = 0; r < rows; r++) {                                     \
        const T *restrict xr = x + r * c + c0;                                 \
        for (int64_t k = 0; k < w; k++) {                                      \
          acc[k] += xr[k];                                                     \
        }                                                                      \
      }                                                                        \
      for (int64_t k = 0; k < w; k++) {                                        \
        out[c0 + k] = (double)acc[k];                                          \
      }                                                                        \
    }                                                                          \
  }

DEFINE_ROWSUM(float)
DEFINE_ROWSUM(double)

static void bias_blocks(void *arg, int64_t lo, int64_t hi) {
  const bias_args *a = arg;
  for (int64_t b = lo; b < hi; b++) {
    int64_t r0 = b * a->rows_per_block;
    int64_t n = TF_MIN(a->rows_per_block, a->rows - r0);
    double *out = a->partial + b * a->c;
    if (a->f64) {
      rowsum_double((const double *)a->x + r0 * a->c, n, a->c, out);
    } else {
      rowsum_float((const float *)a->x + r0 * a->c, n, a->c, out);
    }
  }
}

static void store(tf_tensor *o, int64_t k, double v) {
  if (o->dtype == TF_FLOAT64) {
    ((double *)o->data)[k] = v;
  } else {
    ((float *)o->data)[k] = (float)v;
  }
}

/* NHWC: x is [rows, c]. */
static tf_code bias_nhwc(tf_kernel_ctx *ctx, const tf_tensor *x, int64_t c,
                         tf_tensor *o) {
  bias_args a = {.x = x->data, .c = c, .rows = c ? x->n / c : 0,
                 .f64 = x->dtype == TF_FLOAT64};
  a.rows_per_block = TF_MAX(1, BIAS_BLOCK_ELEMS / TF_MAX(1, c));
  int64_t blocks = (a.rows + a.rows_per_block - 1) / a.rows_per_block;
  a.partial = calloc((size_t)(blocks * c) + 1, sizeof *a.partial);
  if (a.partial == NULL) {
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED, "no memory for %lld "
                           "partial sums", (long long)(blocks * c));
  }
  tf_parallel_for(ctx->pool, blocks, 1, bias_blocks, &a);
  for (int64_t k = 0; k < c; k++) {
    double s = 0;
    for (int64_t b = 0; b < blocks; b++) {
      s += a.partial[b * c + k];
    }
    store(o, k, s);
  }
  free(a.partial);
  return TF_OK;
}

/* NCHW: x is [n, c, inner]. */
static void bias_nchw(const tf_tensor *x, int64_t c, tf_tensor *o) {
  int64_t n = x->shape.dims[0], inner = c ? x->n / (n * c) : 0;
  for (int64_t k = 0; k < c; k++) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t base = (i * c + k) * inner;
      for (int64_t j = 0; j < inner; j++) {
        s += x->dtype == TF_FLOAT64 ? ((const double *)x->data)[base + j]
                                    : ((const float *)x->data)[base + j];
      }
    }
    store(o, k, s);
  }
}

static tf_code bias_add_grad_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  const tf_attr_value *f = tf_node_attr(ctx->node, "data_format");
  bool nchw = f != NULL && strcmp(f->u.s, "NCHW") == 0;
  if (x->shape.rank < 2) {
    char b[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "out_backprop must be at "
                           "least 2-D, got %s",
                           tf_shape_str(&x->shape, b, sizeof b));
  }
  if (x->dtype != TF_FLOAT32 && x->dtype != TF_FLOAT64) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no kernel for %s",
                           tf_dtype_name(x->dtype));
  }
  int64_t c = x->shape.dims[nchw ? 1 : x->shape.rank - 1];
  tf_shape os = tf_shape_of(1, c);
  tf_tensor *o;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &o));
  if (x->n == 0) {
    memset(o->data, 0, o->nbytes);
    return TF_OK;
  }
  if (nchw) {
    bias_nchw(x, c, o);
    return TF_OK;
  }
  return bias_nhwc(ctx, x, c, o);
}

#define K(OP, FN)                                                              \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32, .compute = FN}, \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64, .compute = FN}

static const tf_kernel_def math_grad_kernels[] = {
    K("ReluGrad", relu_grad_compute),
    K("Relu6Grad", relu6_grad_compute),
    K("EluGrad", elu_grad_compute),
    K("SoftplusGrad", softplus_grad_compute),
    K("SigmoidGrad", sigmoid_grad_compute),
    K("TanhGrad", tanh_grad_compute),
    K("SqrtGrad", sqrt_grad_compute),
    K("RsqrtGrad", rsqrt_grad_compute),
    K("BiasAddGrad", bias_add_grad_compute),
};

TF_REGISTER_KERNELS(math_grad_kernels)
