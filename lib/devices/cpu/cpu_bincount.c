/* cpu_bincount.c: CPU kernel for Bincount (weights int32, int64, float,
 * double), as TF's CPU BincountOp: a negative value in arr is an error,
 * values >= size are ignored, empty weights count 1 per value, otherwise
 * weights must have arr's shape. Sums run in arr's order on the calling
 * thread (integer sums wrap). */
#include <inttypes.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

#define DEFINE_BINCOUNT(T, UT)                                                 \
  static void bincount_##T(const int32_t *arr, int64_t n, const void *w,      \
                           bool weighted, int32_t size, void *out) {          \
    T *o = out;                                                                \
    const T *wt = w;                                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (arr[i] < size) {                                                     \
        o[arr[i]] = (T)((UT)o[arr[i]] + (UT)(weighted ? wt[i] : (T)1));        \
      }                                                                        \
    }                                                                          \
  }
DEFINE_BINCOUNT(int32_t, uint32_t)
DEFINE_BINCOUNT(int64_t, uint64_t)
DEFINE_BINCOUNT(float, float)
DEFINE_BINCOUNT(double, double)

static tf_code bincount_check(tf_kernel_ctx *ctx, const tf_tensor *arr,
                              const tf_tensor *size, const tf_tensor *w) {
  char b1[96], b2[96];
  if (size->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "size must be a scalar, got shape %s",
                           tf_shape_str(&size->shape, b1, sizeof(b1)));
  }
  int32_t s = *(const int32_t *)size->data;
  if (s < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "size (%d) must be non-negative", (int)s);
  }
  if (w->n != 0 && !tf_shape_equal(&w->shape, &arr->shape)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "weights must be empty or have the shape of arr, "
                           "got weights %s and arr %s",
                           tf_shape_str(&w->shape, b1, sizeof(b1)),
                           tf_shape_str(&arr->shape, b2, sizeof(b2)));
  }
  const int32_t *a = arr->data;
  for (int64_t i = 0; i < arr->n; i++) {
    if (a[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Input arr must be non-negative! arr[%" PRId64
                             "] = %d", i, (int)a[i]);
    }
  }
  return TF_OK;
}

static tf_code bincount_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *arr = ctx->inputs[0], *size = ctx->inputs[1],
                  *w = ctx->inputs[2];
  TF_TRY(bincount_check(ctx, arr, size, w));
  int32_t s = *(const int32_t *)size->data;
  int64_t d = s;
  tf_shape os = tf_shape_make(1, &d);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, w->dtype, &os, &out));
  memset(out->data, 0, (size_t)out->n * tf_dtype_size(w->dtype));
  bool weighted = w->n != 0;
  switch (w->dtype) {
  case TF_INT32: bincount_int32_t(arr->data, arr->n, w->data, weighted, s,
                                  out->data); break;
  case TF_INT64: bincount_int64_t(arr->data, arr->n, w->data, weighted, s,
                                  out->data); break;
  case TF_FLOAT32: bincount_float(arr->data, arr->n, w->data, weighted, s,
                                  out->data); break;
  case TF_FLOAT64: bincount_double(arr->data, arr->n, w->data, weighted, s,
                                   out->data); break;
  default:
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED,
                           "weights of dtype %s are not supported",
                           tf_dtype_name(w->dtype));
  }
  return TF_OK;
}

#define BINCOUNT(dt)                                                           \
  {.op = "Bincount", .device_type = TF_DEVICE_CPU, .dtype = (dt),              \
   .type_attr = "T", .compute = bincount_compute}

static const tf_kernel_def bincount_kernels[] = {
    BINCOUNT(TF_INT32), BINCOUNT(TF_INT64), BINCOUNT(TF_FLOAT32),
    BINCOUNT(TF_FLOAT64),
};

TF_REGISTER_KERNELS(bincount_kernels)
