/* cpu_activation.c: CPU kernels (float32, float64) of the fused backward
 * ops of ops_activation.c: SoftsignGrad, SeluGrad, LeakyReluGrad and
 * ReciprocalGrad, with TensorFlow's formulas and selects (SeluGrad tests
 * outputs < 0, LeakyReluGrad features > 0, so both boundaries take the
 * other branch, as in TF). Each is one element loop over two same-shaped
 * inputs, split across the pool above TF_PARALLEL_GRAIN, writing into the
 * first input's buffer when nothing else holds it. */
#include <stdbool.h>
#include <tgmath.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"

/* Selu's scale and scale * alpha (TF's constants). */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_SCALE_ALPHA 1.7580993408473768599402175208123

/* a, b: the op's two inputs in order; o may alias a. p: LeakyRelu's
 * alpha (unused by the others). */
#define ACT_LOOPS(OP, EXPR)                                                    \
  static void OP##_f32(const float *a, const float *b, float *o, int64_t n,    \
                       double p) {                                             \
    typedef float T;                                                           \
    T alpha = (T)p;                                                            \
    (void)alpha;                                                               \
    for (int64_t i = 0; i < n; i++) {                                          \
      T g = a[i], v = b[i];                                                    \
      o[i] = (EXPR);                                                           \
    }                                                                          \
  }                                                                            \
  static void OP##_f64(const double *a, const double *b, double *o,            \
                       int64_t n, double p) {                                  \
    typedef double T;                                                          \
    T alpha = p;                                                               \
    (void)alpha;                                                               \
    for (int64_t i = 0; i < n; i++) {                                          \
      T g = a[i], v = b[i];                                                    \
      o[i] = (EXPR);                                                           \
    }                                                                          \
  }

/* SoftsignGrad(g, features v) = g / (1 + |v|)^2. */
ACT_LOOPS(softsign_grad, g / ((fabs(v) + 1) * (fabs(v) + 1)))
/* SeluGrad(g, outputs v) = v < 0 ? g (v + scale alpha) : g scale. */
ACT_LOOPS(selu_grad, v < 0 ? g * (v + (T)SELU_SCALE_ALPHA) : g * (T)SELU_SCALE)
/* LeakyReluGrad(g, features v) = v > 0 ? g : g alpha. */
ACT_LOOPS(leaky_relu_grad, v > 0 ? g : g * alpha)
/* ReciprocalGrad(y = g, dy = v) = -dy y^2. */
ACT_LOOPS(reciprocal_grad, -v * g * g)

typedef void (*act_f32)(const float *, const float *, float *, int64_t,
                        double);
typedef void (*act_f64)(const double *, const double *, double *, int64_t,
                        double);

typedef struct act_def {
  const char *op;
  act_f32 f32;
  act_f64 f64;
  int forward; /* the input whose buffer the output may take */
} act_def;

typedef struct act_args {
  const act_def *def;
  const void *a, *b;
  void *o;
  bool f64;
  double alpha;
} act_args;

static void act_range(void *arg, int64_t lo, int64_t hi) {
  const act_args *e = arg;
  if (e->f64) {
    e->def->f64((const double *)e->a + lo, (const double *)e->b + lo,
                (double *)e->o + lo, hi - lo, e->alpha);
  } else {
    e->def->f32((const float *)e->a + lo, (const float *)e->b + lo,
                (float *)e->o + lo, hi - lo, e->alpha);
  }
}

/* Checks both inputs (same dtype, float32 or float64, same shape) and runs
 * def with LeakyRelu's alpha (0 for the others). */
static tf_code act_compute(tf_kernel_ctx *ctx, const act_def *def,
                           double alpha) {
  const tf_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (a->dtype != TF_FLOAT32 && a->dtype != TF_FLOAT64) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s needs float32 or "
                           "float64 inputs, got %s", def->op,
                           tf_dtype_name(a->dtype));
  }
  if (b->dtype != a->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s: inputs must have "
                           "one dtype, got %s and %s", def->op,
                           tf_dtype_name(a->dtype), tf_dtype_name(b->dtype));
  }
  if (!tf_shape_equal(&a->shape, &b->shape)) {
    char x[128], y[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s: inputs must have "
                           "the same shape, got %s and %s", def->op,
                           tf_shape_str(&a->shape, x, sizeof x),
                           tf_shape_str(&b->shape, y, sizeof y));
  }
  tf_tensor *o;
  TF_TRY(tf_kernel_forward_or_alloc(ctx, def->forward, 0, a->dtype, &a->shape,
                                    &o));
  act_args e = {def, a->data, b->data, o->data, a->dtype == TF_FLOAT64, alpha};
  tf_parallel_for(ctx->pool, a->n, TF_PARALLEL_GRAIN, act_range, &e);
  return TF_OK;
}

static const act_def softsign_grad_def = {"SoftsignGrad", softsign_grad_f32,
                                          softsign_grad_f64, 0};
static const act_def selu_grad_def = {"SeluGrad", selu_grad_f32,
                                      selu_grad_f64, 0};
static const act_def leaky_relu_grad_def = {
    "LeakyReluGrad", leaky_relu_grad_f32, leaky_relu_grad_f64, 0};
static const act_def reciprocal_grad_def = {
    "ReciprocalGrad", reciprocal_grad_f32, reciprocal_grad_f64, 1};

static tf_code softsign_grad_compute(tf_kernel_ctx *ctx) {
  return act_compute(ctx, &softsign_grad_def, 0);
}

static tf_code selu_grad_compute(tf_kernel_ctx *ctx) {
  return act_compute(ctx, &selu_grad_def, 0);
}

static tf_code reciprocal_grad_compute(tf_kernel_ctx *ctx) {
  return act_compute(ctx, &reciprocal_grad_def, 0);
}

static tf_code leaky_relu_grad_compute(tf_kernel_ctx *ctx) {
  const tf_attr_value *alpha = tf_node_attr(ctx->node, "alpha");
  if (alpha == NULL || alpha->type != TF_ATTR_FLOAT) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "LeakyReluGrad needs a "
                           "float attr alpha");
  }
  return act_compute(ctx, &leaky_relu_grad_def, alpha->u.f);
}

#define K(OP, FN)                                                              \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32, .compute = FN}, \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64, .compute = FN}

static const tf_kernel_def activation_kernels[] = {
    K("SoftsignGrad", softsign_grad_compute),
    K("SeluGrad", selu_grad_compute),
    K("LeakyReluGrad", leaky_relu_grad_compute),
    K("ReciprocalGrad", reciprocal_grad_compute),
};

TF_REGISTER_KERNELS(activation_kernels)
