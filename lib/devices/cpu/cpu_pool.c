/* cpu_pool.c: CPU kernels for MaxPool (float32, float64, int32, int64) and
 * AvgPool (float32, float64) over NHWC input. Windows are clipped to the
 * input, so padding never contributes: MaxPool takes the maximum of the
 * valid elements and AvgPool divides by their count, as TensorFlow does.
 * Output rows (batch, out_row) are split across the intra-op pool; the
 * inner loops run over channels, which are contiguous. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/core/base/util.h"

typedef struct pool_state {
  tf__nn_window w;
} pool_state;

typedef struct pool_args {
  int64_t h, w, c;    /* input [N, H, W, C] */
  int64_t oh, ow;     /* output [N, OH, OW, C] */
  int64_t kh, kw, sh, sw;
  int64_t pt, pl;     /* padding before: top, left */
  const void *in;
  void *out;
} pool_args;

/* The input rows [*h0, *h1) and cols [*w0, *w1) of output pixel (oh, ow). */
static void pool_window(const pool_args *a, int64_t oh, int64_t ow,
                        int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
  int64_t hs = oh * a->sh - a->pt, ws = ow * a->sw - a->pl;
  *h0 = TF_MAX(hs, 0);
  *h1 = TF_MIN(hs + a->kh, a->h);
  *w0 = TF_MAX(ws, 0);
  *w1 = TF_MIN(ws + a->kw, a->w);
}

/* Defines max_rows_##T over units of output rows (b * OH + oh). */
#define DEFINE_MAXPOOL(T)                                                      \
  static void max_rows_##T(void *arg, int64_t begin, int64_t end) {           \
    const pool_args *a = arg;                                                  \
    const int64_t c = a->c;                                                    \
    for (int64_t u = begin; u < end; u++) {                                    \
      int64_t b = u / a->oh, oh = u % a->oh;                                   \
      const T *img = (const T *)a->in + b * a->h * a->w * c;                   \
      for (int64_t ow = 0; ow < a->ow; ow++) {                                 \
        T *restrict o = (T *)a->out + (u * a->ow + ow) * c;                    \
        int64_t h0, h1, w0, w1;                                                \
        pool_window(a, oh, ow, &h0, &h1, &w0, &w1);                            \
        if (h0 >= h1 || w0 >= w1) {                                            \
          memset(o, 0, (size_t)c * sizeof(T));                                 \
          continue;                                                            \
        }                                                                      \
        memcpy(o, img + (h0 * a->w + w0) * c, (size_t)c * sizeof(T));          \
        for (int64_t y = h0; y < h1; y++) {                                    \
          for (int64_t x = w0; x < w1; x++) {                                  \
            const T *restrict p = img + (y * a->w + x) * c;                    \
            for (int64_t i = 0; i < c; i++) o[i] = p[i] > o[i] ? p[i] : o[i];  \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

/* Defines avg_rows_##T over units of output rows (b * OH + oh). */
#define DEFINE_AVGPOOL(T)                                                      \
  static void avg_rows_##T(void *arg, int64_t begin, int64_t end) {           \
    const pool_args *a = arg;                                                  \
    const int64_t c = a->c;                                                    \
    for (int64_t u = begin; u < end; u++) {                                    \
      int64_t b = u / a->oh, oh = u % a->oh;                                   \
      const T *img = (const T *)a->in + b * a->h * a->w * c;                   \
      for (int64_t ow = 0; ow < a->ow; ow++) {                                 \
        T *restrict o = (T *)a->out + (u * a->ow + ow) * c;                    \
        int64_t h0, h1, w0, w1;                                                \
        pool_window(a, oh, ow, &h0, &h1, &w0, &w1);                            \
        memset(o, 0, (size_t)c * sizeof(T));                                   \
        for (int64_t y = h0; y < h1; y++) {                                    \
          for (int64_t x = w0; x < w1; x++) {                                  \
            const T *restrict p = img + (y * a->w + x) * c;                    \
            for (int64_t i = 0; i < c; i++) o[i] += p[i];                      \
          }                                                                    \
        }                                                                      \
        int64_t count = (h1 - h0) * (w1 - w0);                                 \
        T div = count > 0 ? (T)count : (T)1;                                   \
        for (int64_t i = 0; i < c; i++) o[i] /= div;                           \
      }                                                                        \
    }                                                                          \
  }

DEFINE_MAXPOOL(float)
DEFINE_MAXPOOL(double)
DEFINE_MAXPOOL(int32_t)
DEFINE_MAXPOOL(int64_t)
DEFINE_AVGPOOL(float)
DEFINE_AVGPOOL(double)

static tf_code pool_init(const tf_node *node, void **state, tf_status *st) {
  pool_state *s = tf__xcalloc(1, sizeof *s);
  tf_code code = tf__nn_window_parse(node, &s->w, st);
  if (code == TF_OK && s->w.nchw) {
    code = tf_status_set(st, TF_UNIMPLEMENTED,
                         "%s on CPU supports only data_format NHWC, got "
                         "NCHW (transpose the input to NHWC)",
                         tf_node_op(node));
  }
  if (code != TF_OK) {
    free(s);
    tf_status_prefix(st, "node '%s' (%s)", tf_node_name(node),
                     tf_node_op(node));
    return code;
  }
  *state = s;
  return TF_OK;
}

static tf_code pool_compute(tf_kernel_ctx *ctx, tf_range_fn fn) {
  const pool_state *s = ctx->state;
  const tf_tensor *in = ctx->inputs[0];
  if (in->shape.rank != 4) {
    char b[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must be rank 4 [batch, rows, cols, depth], "
                           "got %s", tf_shape_str(&in->shape, b, sizeof b));
  }
  const int64_t *d = in->shape.dims;
  pool_args a = {.h = d[1], .w = d[2], .c = d[3], .kh = s->w.ksize[1],
                 .kw = s->w.ksize[2], .sh = s->w.strides[1],
                 .sw = s->w.strides[2], .in = in->data};
  tf_status st;
  if (tf__nn_out_size("rows", a.h, a.kh, 1, a.sh, s->w.padding, 0, 0, &a.oh,
                      &a.pt, &st) != TF_OK ||
      tf__nn_out_size("cols", a.w, a.kw, 1, a.sw, s->w.padding, 0, 0, &a.ow,
                      &a.pl, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_shape os = tf_shape_of(4, d[0], a.oh, a.ow, a.c);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  a.out = out->data;
  double per_unit = (double)a.ow * (double)a.kh * (double)a.kw * (double)a.c;
  int64_t grain = (int64_t)(TF_PARALLEL_GRAIN / per_unit);
  tf_parallel_for(ctx->pool, d[0] * a.oh, TF_MAX(grain, 1), fn, &a);
  return TF_OK;
}

static tf_code max_pool_kernel(tf_kernel_ctx *ctx) {
  switch (ctx->inputs[0]->dtype) {
  case TF_FLOAT32: return pool_compute(ctx, max_rows_float);
  case TF_FLOAT64: return pool_compute(ctx, max_rows_double);
  case TF_INT32: return pool_compute(ctx, max_rows_int32_t);
  case TF_INT64: return pool_compute(ctx, max_rows_int64_t);
  default:
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "MaxPool has no CPU kernel "
                           "for %s", tf_dtype_name(ctx->inputs[0]->dtype));
  }
}

static tf_code avg_pool_kernel(tf_kernel_ctx *ctx) {
  bool f64 = ctx->inputs[0]->dtype == TF_FLOAT64;
  return pool_compute(ctx, f64 ? avg_rows_double : avg_rows_float);
}

#define POOL_KERNEL(OP, DT, FN)                                                \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = DT, .init = pool_init,     \
   .compute = FN, .free_state = free}

static const tf_kernel_def pool_kernels[] = {
    POOL_KERNEL("MaxPool", TF_FLOAT32, max_pool_kernel),
    POOL_KERNEL("MaxPool", TF_FLOAT64, max_pool_kernel),
    POOL_KERNEL("MaxPool", TF_INT32, max_pool_kernel),
    POOL_KERNEL("MaxPool", TF_INT64, max_pool_kernel),
    POOL_KERNEL("AvgPool", TF_FLOAT32, avg_pool_kernel),
    POOL_KERNEL("AvgPool", TF_FLOAT64, avg_pool_kernel),
};

TF_REGISTER_KERNELS(pool_kernels)
