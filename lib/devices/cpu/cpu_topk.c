/* cpu_topk.c: CPU kernels for TopKV2 (float, double, float16, bfloat16
 * and the 8- to 64-bit signed and unsigned integers) and InTopKV2 (float predictions, int32 or
 * int64 targets and k).
 *
 * TopKV2 keeps, per last-dimension row, a heap of the k best positions
 * ("better" = larger value, or equal value and lower index, TF's order)
 * and drains it into the output largest first, so equal values come out
 * in index order; rows run across the intra-op pool. The result is sorted
 * for sorted=false too. Rows holding NaN come out in some order (TF leaves
 * it unspecified as well). InTopKV2 follows TF's CPU functor: false when
 * the target is out of range or any prediction of the row is non-finite,
 * else whether fewer than k predictions exceed the target's (ties count as
 * in the top k). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/half.h"
#include "lib/core/base/util.h"

/* ---- TopKV2 ---------------------------------------------------------------- */

typedef struct top_k_args {
  const void *in; /* [rows, n] */
  void *values;   /* [rows, k] */
  int32_t *idx;   /* [rows, k] */
  int64_t n, k;
} top_k_args;

/* better: a ranks before b. sift: restores the heap below i (the root is
 * the worst kept position). rows: top k of rows [r0, r1). */
#define DEFINE_TOP_K(T, KEY)                                                   \
  static bool better_##T(const T *x, int32_t a, int32_t b) {                  \
    const float_or_t_##T va = KEY(x[a]), vb = KEY(x[b]);                       \
    return va != vb ? va > vb : a < b;                                         \
  }                                                                            \
  static void sift_##T(const T *x, int32_t *h, int64_t m, int64_t i) {        \
    for (;;) {                                                                 \
      int64_t l = 2 * i + 1, r = l + 1, w = i;                                 \
      if (l < m && better_##T(x, h[w], h[l])) w = l;                           \
      if (r < m && better_##T(x, h[w], h[r])) w = r;                           \
      if (w == i) return;                                                      \
      int32_t t = h[i];                                                        \
      h[i] = h[w];                                                             \
      h[w] = t;                                                                \
      i = w;                                                                   \
    }                                                                          \
  }                                                                            \
  static void top_k_rows_##T(void *arg, int64_t r0, int64_t r1) {             \
    const top_k_args *a = arg;                                                 \
    const int64_t n = a->n, k = a->k;                                          \
    int32_t *h = tf__xcalloc((size_t)TF_MAX(k, 1), sizeof *h);                 \
    for (int64_t r = r0; r < r1; r++) {                                        \
      const T *x = (const T *)a->in + r * n;                                   \
      for (int64_t i = 0; i < k; i++) h[i] = (int32_t)i;                       \
      for (int64_t i = k / 2 - 1; i >= 0; i--) sift_##T(x, h, k, i);          \
      for (int64_t i = k; i < n; i++) {                                        \
        if (better_##T(x, (int32_t)i, h[0])) {                                 \
          h[0] = (int32_t)i;                                                   \
          sift_##T(x, h, k, 0);                                                \
        }                                                                      \
      }                                                                        \
      T *v = (T *)a->values + r * k;                                           \
      int32_t *o = a->idx + r * k;                                             \
      for (int64_t m = k; m > 0; m--) {                                        \
        o[m - 1] = h[0];                                                       \
        v[m - 1] = x[h[0]];                                                    \
        h[0] = h[m - 1];                                                       \
        sift_##T(x, h, m - 1, 0);                                              \
      }                                                                        \
    }                                                                          \
    free(h);                                                                   \
  }
/* The type values are compared in (half types widen to float). */
typedef float float_or_t_float;
typedef double float_or_t_double;
typedef int8_t float_or_t_int8_t;
typedef int16_t float_or_t_int16_t;
typedef int32_t float_or_t_int32_t;
typedef int64_t float_or_t_int64_t;
typedef uint8_t float_or_t_uint8_t;
typedef uint16_t float_or_t_uint16_t;
typedef uint32_t float_or_t_uint32_t;
typedef uint64_t float_or_t_uint64_t;
typedef float float_or_t_tf_float16;
typedef float float_or_t_tf_bfloat16;
#define AS_IS(v) (v)
DEFINE_TOP_K(float, AS_IS)
DEFINE_TOP_K(double, AS_IS)
DEFINE_TOP_K(int8_t, AS_IS)
DEFINE_TOP_K(int16_t, AS_IS)
DEFINE_TOP_K(int32_t, AS_IS)
DEFINE_TOP_K(int64_t, AS_IS)
DEFINE_TOP_K(uint8_t, AS_IS)
DEFINE_TOP_K(uint16_t, AS_IS)
DEFINE_TOP_K(uint32_t, AS_IS)
DEFINE_TOP_K(uint64_t, AS_IS)
DEFINE_TOP_K(tf_float16, tf__f16_to_f32)
DEFINE_TOP_K(tf_bfloat16, tf__bf16_to_f32)

static tf_range_fn top_k_fn(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return top_k_rows_float;
  case TF_FLOAT64: return top_k_rows_double;
  case TF_INT8: return top_k_rows_int8_t;
  case TF_INT16: return top_k_rows_int16_t;
  case TF_INT32: return top_k_rows_int32_t;
  case TF_INT64: return top_k_rows_int64_t;
  case TF_UINT8: return top_k_rows_uint8_t;
  case TF_UINT16: return top_k_rows_uint16_t;
  case TF_UINT32: return top_k_rows_uint32_t;
  case TF_UINT64: return top_k_rows_uint64_t;
  case TF_FLOAT16: return top_k_rows_tf_float16;
  case TF_BFLOAT16: return top_k_rows_tf_bfloat16;
  default: return NULL;
  }
}

/* k from its scalar input, checked against the input's shape. */
static tf_code top_k_check(tf_kernel_ctx *ctx, const tf_tensor *x,
                           const tf_tensor *kt, int64_t *k) {
  char b[96];
  if (kt->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "k must be scalar, got shape %s",
                           tf_shape_str(&kt->shape, b, sizeof(b)));
  }
  *k = tf_tensor_get_i64(kt, 0);
  if (*k < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "Need k >= 0, got %" PRId64,
                           *k);
  }
  if (x->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must be >= 1-D, got shape %s",
                           tf_shape_str(&x->shape, b, sizeof(b)));
  }
  int64_t n = x->shape.dims[x->shape.rank - 1];
  if (n < *k) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must have at least k columns. Had %" PRId64
                           ", needed %" PRId64, n, *k);
  }
  if (n > INT32_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "last dimension of input must be <= INT_MAX for "
                           "int32 indices, got %" PRId64, n);
  }
  return TF_OK;
}

static tf_code top_k_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  tf_range_fn fn = top_k_fn(x->dtype);
  if (fn == NULL) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED,
                           "input of dtype %s is not supported on CPU",
                           tf_dtype_name(x->dtype));
  }
  int64_t k = 0;
  TF_TRY(top_k_check(ctx, x, ctx->inputs[1], &k));
  tf_shape os = x->shape;
  os.dims[os.rank - 1] = k;
  tf_tensor *values, *idx;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &values));
  TF_TRY(tf_kernel_alloc_output(ctx, 1, TF_INT32, &os, &idx));
  if (values->n == 0) {
    return TF_OK;
  }
  top_k_args a = {.in = x->data, .values = values->data, .idx = idx->data,
                  .n = x->shape.dims[x->shape.rank - 1], .k = k};
  int64_t rows = x->n / a.n;
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(a.n, 1));
  tf_parallel_for(ctx->pool, rows, grain, fn, &a);
  return TF_OK;
}

/* ---- InTopKV2 -------------------------------------------------------------- */

typedef struct in_top_k_args {
  const float *pred; /* [B, C] */
  const tf_tensor *targets;
  int64_t c, k;
  bool *out;
} in_top_k_args;

static void in_top_k_rows(void *arg, int64_t r0, int64_t r1) {
  const in_top_k_args *a = arg;
  for (int64_t r = r0; r < r1; r++) {
    const float *p = a->pred + r * a->c;
    int64_t t = tf_tensor_get_i64(a->targets, r);
    bool ok = t >= 0 && t < a->c;
    int64_t more = 0;
    for (int64_t i = 0; ok && i < a->c; i++) {
      ok = isfinite(p[i]);
      more += p[i] > p[t];
    }
    a->out[r] = ok && more < a->k;
  }
}

static tf_code in_top_k_check(tf_kernel_ctx *ctx, const tf_tensor *p,
                              const tf_tensor *t, const tf_tensor *k) {
  char b1[96], b2[96];
  if (p->shape.rank != 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "predictions must be 2-dimensional, got shape %s",
                           tf_shape_str(&p->shape, b1, sizeof(b1)));
  }
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "targets must be 1-dimensional, got shape %s",
                           tf_shape_str(&t->shape, b1, sizeof(b1)));
  }
  if (p->shape.dims[0] != t->shape.dims[0]) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "First dimension of predictions %s must match "
                           "length of targets %s",
                           tf_shape_str(&p->shape, b1, sizeof(b1)),
                           tf_shape_str(&t->shape, b2, sizeof(b2)));
  }
  if (k->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "k must be 0-D, got shape %s",
                           tf_shape_str(&k->shape, b1, sizeof(b1)));
  }
  return TF_OK;
}

static tf_code in_top_k_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *p = ctx->inputs[0], *t = ctx->inputs[1], *k = ctx->inputs[2];
  TF_TRY(in_top_k_check(ctx, p, t, k));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &t->shape, &out));
  in_top_k_args a = {.pred = p->data, .targets = t, .c = p->shape.dims[1],
                     .k = tf_tensor_get_i64(k, 0), .out = out->data};
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(a.c, 1));
  tf_parallel_for(ctx->pool, t->n, grain, in_top_k_rows, &a);
  return TF_OK;
}

/* ---- registration ---------------------------------------------------------- */

#define TOP_K(dt)                                                              \
  {.op = "TopKV2", .device_type = TF_DEVICE_CPU, .dtype = (dt),                \
   .type_attr = "T", .compute = top_k_compute}

static const tf_kernel_def topk_kernels[] = {
    TOP_K(TF_FLOAT32), TOP_K(TF_FLOAT64), TOP_K(TF_INT8),   TOP_K(TF_INT16),
    TOP_K(TF_INT32),   TOP_K(TF_INT64),   TOP_K(TF_UINT8),  TOP_K(TF_UINT16),
    TOP_K(TF_UINT32),  TOP_K(TF_UINT64),  TOP_K(TF_FLOAT16), TOP_K(TF_BFLOAT16),
    {.op = "InTopKV2", .device_type = TF_DEVICE_CPU, .dtype = TF_INT32,
     .type_attr = "T", .compute = in_top_k_compute},
    {.op = "InTopKV2", .device_type = TF_DEVICE_CPU, .dtype = TF_INT64,
     .type_attr = "T", .compute = in_top_k_compute},
};

TF_REGISTER_KERNELS(topk_kernels)
