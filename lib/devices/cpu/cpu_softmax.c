/* cpu_softmax.c: CPU kernels for Softmax, LogSoftmax and the two softmax
 * cross-entropies (dense and sparse labels), float32 and float64. Every row
 * is shifted by its maximum before exponentiating, so large logits do not
 * overflow; sums accumulate in double. Rows are split across the intra-op
 * pool. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

/* Rows of a [rows, c] problem for the pool; row kernels read these. */
typedef struct rows_args {
  const void *x;      /* logits / features [rows, c] */
  const void *labels; /* dense [rows, c] T, or sparse [rows] int32/int64 */
  bool labels_i64;    /* sparse: labels are int64 */
  void *y;            /* softmax / log-softmax / backprop [rows, c] */
  void *loss;         /* [rows] */
  int64_t c;
  bool log;           /* LogSoftmax */
} rows_args;

/* Defines, for element type T with exp function EXP:
 *   max_##T, exp_shift_##T, softmax_rows_##T, xent_rows_##T, sparse_rows_##T. */
#define DEFINE_SOFTMAX(T, EXP)                                                 \
  static T max_##T(const T *restrict x, int64_t c) {                          \
    T m = x[0];                                                                \
    for (int64_t i = 1; i < c; i++) m = x[i] > m ? x[i] : m;                   \
    return m;                                                                  \
  }                                                                            \
  /* e[i] = exp(x[i] - m); returns the sum. */                                 \
  static double exp_shift_##T(const T *restrict x, T *restrict e, T m,         \
                              int64_t c) {                                     \
    double sum = 0;                                                            \
    for (int64_t i = 0; i < c; i++) {                                          \
      e[i] = EXP(x[i] - m);                                                    \
      sum += e[i];                                                             \
    }                                                                          \
    return sum;                                                                \
  }                                                                            \
  static void softmax_rows_##T(void *arg, int64_t begin, int64_t end) {       \
    const rows_args *a = arg;                                                  \
    const int64_t c = a->c;                                                    \
    for (int64_t r = begin; r < end; r++) {                                    \
      const T *restrict x = (const T *)a->x + r * c;                           \
      T *restrict y = (T *)a->y + r * c;                                       \
      T m = max_##T(x, c);                                                     \
      double sum = exp_shift_##T(x, y, m, c);                                  \
      if (a->log) {                                                            \
        T lse = (T)log(sum);                                                   \
        for (int64_t i = 0; i < c; i++) y[i] = (x[i] - m) - lse;               \
      } else {                                                                 \
        T inv = (T)(1.0 / sum);                                                \
        for (int64_t i = 0; i < c; i++) y[i] *= inv;                           \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void xent_rows_##T(void *arg, int64_t begin, int64_t end) {          \
    const rows_args *a = arg;                                                  \
    const int64_t c = a->c;                                                    \
    for (int64_t r = begin; r < end; r++) {                                    \
      const T *restrict x = (const T *)a->x + r * c;                           \
      const T *restrict l = (const T *)a->labels + r * c;                      \
      T *restrict y = (T *)a->y + r * c;                                       \
      T m = max_##T(x, c);                                                     \
      double sum = exp_shift_##T(x, y, m, c);                                  \
      T lse = (T)log(sum), inv = (T)(1.0 / sum);                            \
      double loss = 0;                                                         \
      for (int64_t i = 0; i < c; i++) {                                        \
        loss += l[i] * (lse - (x[i] - m));                                     \
        y[i] = y[i] * inv - l[i];                                              \
      }                                                                        \
      ((T *)a->loss)[r] = (T)loss;                                             \
    }                                                                          \
  }                                                                            \
  static void sparse_rows_##T(void *arg, int64_t begin, int64_t end) {        \
    const rows_args *a = arg;                                                  \
    const int64_t c = a->c;                                                    \
    for (int64_t r = begin; r < end; r++) {                                    \
      const T *restrict x = (const T *)a->x + r * c;                           \
      T *restrict y = (T *)a->y + r * c;                                       \
      int64_t lab = a->labels_i64 ? ((const int64_t *)a->labels)[r]            \
                                  : ((const int32_t *)a->labels)[r];           \
      T m = max_##T(x, c);                                                     \
      double sum = exp_shift_##T(x, y, m, c);                                  \
      T inv = (T)(1.0 / sum);                                                  \
      ((T *)a->loss)[r] = (T)log(sum) - (x[lab] - m);                       \
      for (int64_t i = 0; i < c; i++) y[i] *= inv;                             \
      y[lab] -= 1;                                                             \
    }                                                                          \
  }

DEFINE_SOFTMAX(float, expf)
DEFINE_SOFTMAX(double, exp)

/* Runs fn over rows, in parallel when there is enough work. */
static void run_rows(tf_kernel_ctx *ctx, tf_range_fn fn, rows_args *a,
                     int64_t rows) {
  int64_t grain = TF_PARALLEL_GRAIN / 16 / (a->c > 0 ? a->c : 1);
  tf_parallel_for(ctx->pool, rows, grain > 0 ? grain : 1, fn, a);
}

static tf_code softmax_compute(tf_kernel_ctx *ctx, bool log) {
  const tf_tensor *x = ctx->inputs[0];
  if (x->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "logits must have at least 1 dimension, got a "
                           "scalar");
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  int64_t c = x->shape.dims[x->shape.rank - 1];
  if (x->n == 0) {
    return TF_OK;
  }
  rows_args a = {.x = x->data, .y = y->data, .c = c, .log = log};
  run_rows(ctx, x->dtype == TF_FLOAT64 ? softmax_rows_double : softmax_rows_float,
           &a, x->n / c);
  return TF_OK;
}

static tf_code softmax_kernel(tf_kernel_ctx *ctx) {
  return softmax_compute(ctx, false);
}

static tf_code log_softmax_kernel(tf_kernel_ctx *ctx) {
  return softmax_compute(ctx, true);
}

/* Allocates loss [B] and backprop [B, C] for a [B, C] features tensor. */
static tf_code alloc_xent(tf_kernel_ctx *ctx, const tf_tensor *f,
                          rows_args *a) {
  tf_tensor *loss, *back;
  tf_shape ls = tf_shape_of(1, f->shape.dims[0]);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, f->dtype, &ls, &loss));
  TF_TRY(tf_kernel_alloc_output(ctx, 1, f->dtype, &f->shape, &back));
  a->x = f->data;
  a->y = back->data;
  a->loss = loss->data;
  a->c = f->shape.dims[1];
  if (a->c == 0) { /* no classes: loss is an empty sum */
    for (int64_t r = 0; r < loss->n; r++) {
      if (f->dtype == TF_FLOAT64) {
        ((double *)loss->data)[r] = 0;
      } else {
        ((float *)loss->data)[r] = 0;
      }
    }
  }
  return TF_OK;
}

static tf_code xent_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *f = ctx->inputs[0], *l = ctx->inputs[1];
  if (f->shape.rank != 2 || !tf_shape_equal(&f->shape, &l->shape)) {
    char fs[128], ls[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "features and labels must be 2-D and of the same "
                           "shape, got %s and %s",
                           tf_shape_str(&f->shape, fs, sizeof fs),
                           tf_shape_str(&l->shape, ls, sizeof ls));
  }
  rows_args a = {.labels = l->data};
  TF_TRY(alloc_xent(ctx, f, &a));
  if (f->n > 0) {
    run_rows(ctx, f->dtype == TF_FLOAT64 ? xent_rows_double : xent_rows_float,
             &a, f->shape.dims[0]);
  }
  return TF_OK;
}

/* INVALID_ARGUMENT naming the first label outside [0, c) and its row. */
static tf_code check_labels(tf_kernel_ctx *ctx, const tf_tensor *l, int64_t c) {
  for (int64_t r = 0; r < l->n; r++) {
    int64_t v = l->dtype == TF_INT64 ? ((const int64_t *)l->data)[r]
                                     : ((const int32_t *)l->data)[r];
    if (v < 0 || v >= c) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "received a label value of %lld at batch index "
                             "%lld, which is outside the valid range of "
                             "[0, %lld)",
                             (long long)v, (long long)r, (long long)c);
    }
  }
  return TF_OK;
}

static tf_code sparse_xent_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *f = ctx->inputs[0], *l = ctx->inputs[1];
  if (f->shape.rank != 2 || l->shape.rank != 1 ||
      l->shape.dims[0] != f->shape.dims[0]) {
    char fs[128], ls[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "features must be [batch, classes] and labels "
                           "[batch], got %s and %s",
                           tf_shape_str(&f->shape, fs, sizeof fs),
                           tf_shape_str(&l->shape, ls, sizeof ls));
  }
  if (l->dtype != TF_INT32 && l->dtype != TF_INT64) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "labels must be int32 or int64, got %s",
                           tf_dtype_name(l->dtype));
  }
  TF_TRY(check_labels(ctx, l, f->shape.dims[1]));
  rows_args a = {.labels = l->data, .labels_i64 = l->dtype == TF_INT64};
  TF_TRY(alloc_xent(ctx, f, &a));
  if (f->n > 0) {
    run_rows(ctx, f->dtype == TF_FLOAT64 ? sparse_rows_double : sparse_rows_float,
             &a, f->shape.dims[0]);
  }
  return TF_OK;
}

#define SOFTMAX_KERNELS(DT)                                                    \
  {.op = "Softmax", .device_type = TF_DEVICE_CPU, .dtype = DT,                 \
   .compute = softmax_kernel},                                                 \
  {.op = "LogSoftmax", .device_type = TF_DEVICE_CPU, .dtype = DT,              \
   .compute = log_softmax_kernel},                                             \
  {.op = "SoftmaxCrossEntropyWithLogits", .device_type = TF_DEVICE_CPU,        \
   .dtype = DT, .compute = xent_kernel},                                       \
  {.op = "SparseSoftmaxCrossEntropyWithLogits", .device_type = TF_DEVICE_CPU,  \
   .dtype = DT, .compute = sparse_xent_kernel}

static const tf_kernel_def softmax_kernels[] = {
    SOFTMAX_KERNELS(TF_FLOAT32),
    SOFTMAX_KERNELS(TF_FLOAT64),
};

TF_REGISTER_KERNELS(softmax_kernels)
