/* cpu_pool_grad.c: CPU kernels for MaxPoolGrad and AvgPoolGrad (NHWC,
 * float32 and float64), the gradients of cpu_pool.c's MaxPool and AvgPool.
 *
 * MaxPoolGrad recomputes each window's maximum from orig_input, as
 * TensorFlow's CPU kernel does, and routes the window's gradient to the
 * first maximal element in window order (rows, then columns): only a
 * strictly greater element displaces the current one, so ties and NaNs
 * resolve as in the forward kernel. AvgPoolGrad spreads each window's
 * gradient evenly over the window's non-padded elements (the forward
 * kernel's divisor). Windows are scattered back onto a zeroed output.
 *
 * Work units for the intra-op pool write disjoint parts of the output:
 * when windows cannot overlap across output rows (stride >= window
 * height), a unit is one output row and owns the input rows from its
 * window's top to the next window's top; otherwise a unit is one image.
 * Each unit zeroes what it owns before scattering. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/core/base/util.h"

/* Channels handled together when looking for each channel's maximum. */
#define CHAN_BLOCK 64

typedef struct pool_grad_args {
  int64_t h, w, c;     /* orig_input [N, H, W, C] */
  int64_t oh, ow;      /* grad [N, OH, OW, C] */
  int64_t kh, kw, sh, sw;
  int64_t pt, pl;      /* padding before: top, left */
  bool by_row;         /* units are output rows (b, oh), else images */
  const void *in;      /* orig_input (MaxPoolGrad) */
  const void *grad;
  void *out;           /* [N, H, W, C] */
} pool_grad_args;

/* The input rows [*h0, *h1) and cols [*w0, *w1) of output pixel (oh, ow). */
static void window(const pool_grad_args *a, int64_t oh, int64_t ow,
                   int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
  int64_t hs = oh * a->sh - a->pt, ws = ow * a->sw - a->pl;
  *h0 = TF_MAX(hs, 0);
  *h1 = TF_MIN(hs + a->kh, a->h);
  *w0 = TF_MAX(ws, 0);
  *w1 = TF_MIN(ws + a->kw, a->w);
}

/* Unit u's images or output rows: output rows [*o0, *o1) (flat b * OH +
 * oh), and the output elements [*z0, *z1) it owns and zeroes. */
static void unit_span(const pool_grad_args *a, int64_t u, int64_t *o0,
                      int64_t *o1, int64_t *z0, int64_t *z1) {
  int64_t line = a->w * a->c;
  if (!a->by_row) {
    *o0 = u * a->oh;
    *o1 = *o0 + a->oh;
    *z0 = u * a->h * line;
    *z1 = *z0 + a->h * line;
    return;
  }
  int64_t b = u / a->oh, oh = u % a->oh;
  int64_t r0 = oh == 0 ? 0 : TF_MIN(TF_MAX(oh * a->sh - a->pt, 0), a->h);
  int64_t r1 = oh == a->oh - 1
                   ? a->h
                   : TF_MIN(TF_MAX((oh + 1) * a->sh - a->pt, 0), a->h);
  *o0 = u;
  *o1 = u + 1;
  *z0 = (b * a->h + r0) * line;
  *z1 = (b * a->h + r1) * line;
}

/* Defines max_grad_##T: for each output pixel and block of channels, finds
 * the first maximum of the window and adds the gradient there. */
#define DEFINE_MAX_GRAD(T)                                                     \
  static void max_pixel_##T(const pool_grad_args *a, int64_t b, int64_t oh,   \
                            int64_t ow, const T *g, T *img_out) {             \
    const T *img = (const T *)a->in + b * a->h * a->w * a->c;                  \
    int64_t h0, h1, w0, w1;                                                    \
    window(a, oh, ow, &h0, &h1, &w0, &w1);                                     \
    if (h0 >= h1 || w0 >= w1) {                                                \
      return;                                                                  \
    }                                                                          \
    for (int64_t c0 = 0; c0 < a->c; c0 += CHAN_BLOCK) {                        \
      int64_t nc = TF_MIN(CHAN_BLOCK, a->c - c0);                              \
      T best[CHAN_BLOCK];                                                      \
      int64_t arg[CHAN_BLOCK];                                                 \
      int64_t first = h0 * a->w + w0;                                          \
      for (int64_t i = 0; i < nc; i++) {                                       \
        best[i] = img[first * a->c + c0 + i];                                  \
        arg[i] = first;                                                        \
      }                                                                        \
      for (int64_t y = h0; y < h1; y++) {                                      \
        for (int64_t x = y == h0 ? w0 + 1 : w0; x < w1; x++) {                 \
          int64_t pix = y * a->w + x;                                          \
          const T *restrict p = img + pix * a->c + c0;                         \
          for (int64_t i = 0; i < nc; i++) {                                   \
            bool gt = p[i] > best[i];                                          \
            best[i] = gt ? p[i] : best[i];                                     \
            arg[i] = gt ? pix : arg[i];                                        \
          }                                                                    \
        }                                                                      \
      }                                                                        \
      for (int64_t i = 0; i < nc; i++) {                                       \
        img_out[arg[i] * a->c + c0 + i] += g[c0 + i];                          \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void max_grad_##T(void *arg, int64_t begin, int64_t end) {           \
    const pool_grad_args *a = arg;                                             \
    for (int64_t u = begin; u < end; u++) {                                    \
      int64_t o0, o1, z0, z1;                                                  \
      unit_span(a, u, &o0, &o1, &z0, &z1);                                     \
      memset((T *)a->out + z0, 0, (size_t)(z1 - z0) * sizeof(T));              \
      for (int64_t r = o0; r < o1; r++) {                                      \
        int64_t b = r / a->oh, oh = r % a->oh;                                 \
        T *img_out = (T *)a->out + b * a->h * a->w * a->c;                     \
        for (int64_t ow = 0; ow < a->ow; ow++) {                               \
          const T *g = (const T *)a->grad + (r * a->ow + ow) * a->c;           \
          max_pixel_##T(a, b, oh, ow, g, img_out);                             \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

/* Defines avg_grad_##T: adds grad / count to every element of each
 * window. */
#define DEFINE_AVG_GRAD(T)                                                     \
  static void avg_pixel_##T(const pool_grad_args *a, int64_t oh, int64_t ow,  \
                            const T *g, T *img_out) {                          \
    int64_t h0, h1, w0, w1;                                                    \
    window(a, oh, ow, &h0, &h1, &w0, &w1);                                     \
    if (h0 >= h1 || w0 >= w1) {                                                \
      return;                                                                  \
    }                                                                          \
    T scale = (T)1 / (T)((h1 - h0) * (w1 - w0));                               \
    for (int64_t y = h0; y < h1; y++) {                                        \
      for (int64_t x = w0; x < w1; x++) {                                      \
        T *restrict o = img_out + (y * a->w + x) * a->c;                       \
        for (int64_t i = 0; i < a->c; i++) o[i] += g[i] * scale;               \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void avg_grad_##T(void *arg, int64_t begin, int64_t end) {           \
    const pool_grad_args *a = arg;                                             \
    for (int64_t u = begin; u < end; u++) {                                    \
      int64_t o0, o1, z0, z1;                                                  \
      unit_span(a, u, &o0, &o1, &z0, &z1);                                     \
      memset((T *)a->out + z0, 0, (size_t)(z1 - z0) * sizeof(T));              \
      for (int64_t r = o0; r < o1; r++) {                                      \
        int64_t b = r / a->oh, oh = r % a->oh;                                 \
        T *img_out = (T *)a->out + b * a->h * a->w * a->c;                     \
        for (int64_t ow = 0; ow < a->ow; ow++) {                               \
          const T *restrict g = (const T *)a->grad + (r * a->ow + ow) * a->c;  \
          avg_pixel_##T(a, oh, ow, g, img_out);                                \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

DEFINE_MAX_GRAD(float)
DEFINE_MAX_GRAD(double)
DEFINE_AVG_GRAD(float)
DEFINE_AVG_GRAD(double)

static tf_code pool_grad_init(const tf_node *node, void **state,
                              tf_status *st) {
  tf__nn_window *w = tf__xcalloc(1, sizeof *w);
  tf_code code = tf__nn_window_parse(node, w, st);
  if (code == TF_OK && w->nchw) {
    code = tf_status_set(st, TF_UNIMPLEMENTED,
                         "%s on CPU supports only data_format NHWC, got "
                         "NCHW (transpose the input to NHWC)",
                         tf_node_op(node));
  }
  if (code != TF_OK) {
    free(w);
    tf_status_prefix(st, "node '%s' (%s)", tf_node_name(node),
                     tf_node_op(node));
    return code;
  }
  *state = w;
  return TF_OK;
}

/* Fills a's geometry for an input of shape in and checks that each of
 * the n_chk tensors chk[] (named names[]) has the pool's output shape. */
static tf_code geometry(tf_kernel_ctx *ctx, const tf_shape *in,
                        const char *in_name, const tf_tensor *const *chk,
                        const char *const *names, int n_chk,
                        pool_grad_args *a) {
  const tf__nn_window *w = ctx->state;
  char b1[128], b2[128], b3[128];
  if (in->rank != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be rank 4 [batch, rows, cols, depth], got "
                           "%s", in_name, tf_shape_str(in, b1, sizeof b1));
  }
  *a = (pool_grad_args){.h = in->dims[1], .w = in->dims[2], .c = in->dims[3],
                        .kh = w->ksize[1], .kw = w->ksize[2],
                        .sh = w->strides[1], .sw = w->strides[2]};
  tf_status st;
  if (tf__nn_out_size("rows", a->h, a->kh, 1, a->sh, w->padding, 0, 0, &a->oh,
                      &a->pt, &st) != TF_OK ||
      tf__nn_out_size("cols", a->w, a->kw, 1, a->sw, w->padding, 0, 0, &a->ow,
                      &a->pl, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_shape want = tf_shape_of(4, in->dims[0], a->oh, a->ow, a->c);
  for (int i = 0; i < n_chk; i++) {
    if (!tf_shape_equal(&chk[i]->shape, &want)) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s has shape %s but pooling %s %s gives %s",
                             names[i], tf_shape_str(&chk[i]->shape, b1,
                                                    sizeof b1),
                             in_name, tf_shape_str(in, b2, sizeof b2),
                             tf_shape_str(&want, b3, sizeof b3));
    }
  }
  a->by_row = a->sh >= a->kh && a->oh > 0;
  return TF_OK;
}

/* Allocates the output of shape in and runs fn over the units. */
static tf_code run_units(tf_kernel_ctx *ctx, const tf_shape *in, tf_dtype dt,
                         pool_grad_args *a, tf_range_fn fn) {
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, in, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  a->out = out->data;
  if (a->oh == 0 || a->ow == 0) {
    memset(out->data, 0, out->nbytes);
    return TF_OK;
  }
  int64_t units = a->by_row ? in->dims[0] * a->oh : in->dims[0];
  double per_unit = (double)out->n / (double)units +
                    (double)a->ow * (double)(a->kh * a->kw * a->c) *
                        (double)(a->by_row ? 1 : a->oh);
  int64_t grain = (int64_t)(TF_PARALLEL_GRAIN / per_unit);
  tf_parallel_for(ctx->pool, units, TF_MAX(grain, 1), fn, a);
  return TF_OK;
}

static tf_code same_dtypes(tf_kernel_ctx *ctx, int from) {
  tf_dtype dt = ctx->inputs[from]->dtype;
  for (int i = from + 1; i < ctx->n_inputs; i++) {
    if (ctx->inputs[i]->dtype != dt) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "inputs %d and %d have different dtypes (%s and "
                             "%s)", from, i, tf_dtype_name(dt),
                             tf_dtype_name(ctx->inputs[i]->dtype));
    }
  }
  return TF_OK;
}

static tf_code max_pool_grad_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *in = ctx->inputs[0];
  TF_TRY(same_dtypes(ctx, 0));
  static const char *const names[2] = {"orig_output", "grad"};
  pool_grad_args a;
  const tf_tensor *chk[2] = {ctx->inputs[1], ctx->inputs[2]};
  TF_TRY(geometry(ctx, &in->shape, "orig_input", chk, names, 2, &a));
  a.in = in->data;
  a.grad = ctx->inputs[2]->data;
  bool f64 = in->dtype == TF_FLOAT64;
  return run_units(ctx, &in->shape, in->dtype, &a,
                   f64 ? max_grad_double : max_grad_float);
}

static tf_code avg_pool_grad_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *sz = ctx->inputs[0], *grad = ctx->inputs[1];
  char b[128];
  if (sz->shape.rank != 1 || sz->n != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "orig_input_shape must be a vector of 4 values, got "
                           "shape %s", tf_shape_str(&sz->shape, b, sizeof b));
  }
  int64_t d[4];
  for (int i = 0; i < 4; i++) {
    d[i] = tf_tensor_get_i64(sz, i);
    if (d[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "orig_input_shape[%d] = %lld is negative", i,
                             (long long)d[i]);
    }
  }
  tf_shape in = tf_shape_make(4, d);
  pool_grad_args a;
  TF_TRY(geometry(ctx, &in, "orig_input_shape", &grad,
                  (const char *const[]){"grad"}, 1, &a));
  a.grad = grad->data;
  bool f64 = grad->dtype == TF_FLOAT64;
  return run_units(ctx, &in, grad->dtype, &a,
                   f64 ? avg_grad_double : avg_grad_float);
}

#define POOL_GRAD(OP, DT, FN)                                                  \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = DT,                        \
   .init = pool_grad_init, .compute = FN, .free_state = free}

static const tf_kernel_def pool_grad_kernels[] = {
    POOL_GRAD("MaxPoolGrad", TF_FLOAT32, max_pool_grad_kernel),
    POOL_GRAD("MaxPoolGrad", TF_FLOAT64, max_pool_grad_kernel),
    POOL_GRAD("AvgPoolGrad", TF_FLOAT32, avg_pool_grad_kernel),
    POOL_GRAD("AvgPoolGrad", TF_FLOAT64, avg_pool_grad_kernel),
};

TF_REGISTER_KERNELS(pool_grad_kernels)
