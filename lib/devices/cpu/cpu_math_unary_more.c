/* cpu_math_unary_more.c: CPU kernels of the unary ops that do not fit
 * cpu_math_unary.c's one-dtype-in, same-dtype-out, attr-free mould:
 * IsNan and IsFinite (float in, bool out) and LeakyRelu (attr alpha).
 * All cover float32, float64, float16 and bfloat16. The predicates test
 * the bits of the 16-bit types directly (exact); LeakyRelu widens 16-bit
 * blocks to float32 and rounds back once. Large tensors split across the
 * intra-op pool. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/half.h"
#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"

#define HALF_BLOCK 512

typedef struct more_args {
  const void *x;
  void *y;
  tf_dtype dt;
  double alpha; /* LeakyRelu */
} more_args;

/* ---- IsNan, IsFinite -------------------------------------------------------
 * Each 16-bit type by its exponent mask (all ones: inf or NaN) and
 * mantissa mask (nonzero with all-ones exponent: NaN). */

static bool h16_is_nan(uint16_t h, uint16_t exp, uint16_t man) {
  return (h & exp) == exp && (h & man) != 0;
}

static bool h16_is_finite(uint16_t h, uint16_t exp) { return (h & exp) != exp; }

/* y[i] = pred(x[i]) for i in [lo, hi); want_nan picks IsNan, else IsFinite. */
static void predicate_range(const more_args *a, int64_t lo, int64_t hi,
                            bool want_nan) {
  uint8_t *y = a->y;
  const float *f = a->x;
  const double *d = a->x;
  const uint16_t *h = a->x;
  uint16_t exp = a->dt == TF_FLOAT16 ? 0x7c00u : 0x7f80u;
  uint16_t man = a->dt == TF_FLOAT16 ? 0x03ffu : 0x007fu;
  for (int64_t i = lo; i < hi; i++) {
    switch (a->dt) {
    case TF_FLOAT32:
      y[i] = want_nan ? isnan(f[i]) != 0 : isfinite(f[i]) != 0;
      break;
    case TF_FLOAT64:
      y[i] = want_nan ? isnan(d[i]) != 0 : isfinite(d[i]) != 0;
      break;
    default:
      y[i] = want_nan ? h16_is_nan(h[i], exp, man) : h16_is_finite(h[i], exp);
      break;
    }
  }
}

static void is_nan_range(void *arg, int64_t lo, int64_t hi) {
  predicate_range(arg, lo, hi, true);
}

static void is_finite_range(void *arg, int64_t lo, int64_t hi) {
  predicate_range(arg, lo, hi, false);
}

static bool is_float_dtype(tf_dtype dt) {
  return dt == TF_FLOAT32 || dt == TF_FLOAT64 || dt == TF_FLOAT16 ||
         dt == TF_BFLOAT16;
}

static tf_code predicate_run(tf_kernel_ctx *ctx, tf_range_fn fn) {
  const tf_tensor *x = ctx->inputs[0];
  if (!is_float_dtype(x->dtype)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s needs a float input "
                           "x, got %s", tf_node_op(ctx->node),
                           tf_dtype_name(x->dtype));
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &x->shape, &y));
  more_args a = {.x = x->data, .y = y->data, .dt = x->dtype};
  tf_parallel_for(ctx->pool, x->n, TF_PARALLEL_GRAIN, fn, &a);
  return TF_OK;
}

static tf_code is_nan_compute(tf_kernel_ctx *ctx) {
  return predicate_run(ctx, is_nan_range);
}

static tf_code is_finite_compute(tf_kernel_ctx *ctx) {
  return predicate_run(ctx, is_finite_range);
}

/* ---- LeakyRelu -------------------------------------------------------------
 * TF's select: features > 0 ? features : features * alpha, for any alpha
 * (not max(x, alpha x), which is wrong for alpha > 1); NaN gives NaN. */

static void leaky_f32(const float *x, float *y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; i++) {
    y[i] = x[i] > 0 ? x[i] : x[i] * alpha;
  }
}

static void leaky_f64(const double *x, double *y, int64_t n, double alpha) {
  for (int64_t i = 0; i < n; i++) {
    y[i] = x[i] > 0 ? x[i] : x[i] * alpha;
  }
}

/* 16-bit blocks: widen, run the float32 loop (alpha rounded to float32, as
 * TF's Eigen::half kernels compute through float), round back. */
static void leaky_h16(const more_args *a, int64_t lo, int64_t hi) {
  const uint16_t *x = a->x;
  uint16_t *y = a->y;
  bool f16 = a->dt == TF_FLOAT16;
  float buf[HALF_BLOCK];
  for (int64_t i = lo; i < hi; i += HALF_BLOCK) {
    int64_t m = TF_MIN((int64_t)HALF_BLOCK, hi - i);
    for (int64_t j = 0; j < m; j++) {
      buf[j] = f16 ? tf__f16_to_f32(x[i + j]) : tf__bf16_to_f32(x[i + j]);
    }
    leaky_f32(buf, buf, m, (float)a->alpha);
    for (int64_t j = 0; j < m; j++) {
      y[i + j] = f16 ? tf__f32_to_f16(buf[j]) : tf__f32_to_bf16(buf[j]);
    }
  }
}

static void leaky_range(void *arg, int64_t lo, int64_t hi) {
  const more_args *a = arg;
  if (a->dt == TF_FLOAT32) {
    leaky_f32((const float *)a->x + lo, (float *)a->y + lo, hi - lo,
              (float)a->alpha);
  } else if (a->dt == TF_FLOAT64) {
    leaky_f64((const double *)a->x + lo, (double *)a->y + lo, hi - lo,
              a->alpha);
  } else {
    leaky_h16(a, lo, hi);
  }
}

static tf_code leaky_relu_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  if (!is_float_dtype(x->dtype)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "LeakyRelu needs float "
                           "features, got %s", tf_dtype_name(x->dtype));
  }
  const tf_attr_value *alpha = tf_node_attr(ctx->node, "alpha");
  if (alpha == NULL || alpha->type != TF_ATTR_FLOAT) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "LeakyRelu needs a float "
                           "attr alpha");
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_forward_or_alloc(ctx, 0, 0, x->dtype, &x->shape, &y));
  more_args a = {.x = x->data, .y = y->data, .dt = x->dtype,
                 .alpha = alpha->u.f};
  tf_parallel_for(ctx->pool, x->n, TF_PARALLEL_GRAIN, leaky_range, &a);
  return TF_OK;
}

/* ---- registration ---------------------------------------------------------- */

#define KDEF4(NAME, FN)                                                        \
  {.op = NAME, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,              \
   .compute = FN},                                                             \
  {.op = NAME, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,              \
   .compute = FN},                                                             \
  {.op = NAME, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT16,              \
   .compute = FN},                                                             \
  {.op = NAME, .device_type = TF_DEVICE_CPU, .dtype = TF_BFLOAT16,             \
   .compute = FN}

static const tf_kernel_def math_unary_more_kernels[] = {
    KDEF4("IsNan", is_nan_compute),
    KDEF4("IsFinite", is_finite_compute),
    KDEF4("LeakyRelu", leaky_relu_compute),
};

TF_REGISTER_KERNELS(math_unary_more_kernels)
