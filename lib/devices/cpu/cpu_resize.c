/* cpu_resize.c: CPU kernels of the image resize ops of ops_image.c:
 * ResizeBilinear (every T of the op, float output), ResizeBilinearGrad
 * (float32, float64, half, bfloat16), ResizeNearestNeighbor (every T of
 * the op; elements are copied) and ResizeNearestNeighborGrad (uint8, int8,
 * int32, float32, float64, half, bfloat16). Images are NHWC. Half and
 * bfloat16 gradients are summed in float32 and rounded once.
 *
 * Sampling follows TF's kernels (resize_bilinear_op.cc,
 * resize_nearest_neighbor_op.cc) in single precision, as TF does:
 *   scale = align_corners && out > 1 ? (in - 1) / (out - 1) : in / out;
 *   bilinear source  = half_pixel_centers ? (o + 0.5) * scale - 0.5
 *                                         : o * scale,
 *     lower = max(floor(src), 0), upper = min(ceil(src), in - 1),
 *     lerp = src - floor(src);
 *   nearest source   = min(align_corners ? round(s) : floor(s), in - 1)
 *     with s = half_pixel_centers ? (o + 0.5) * scale : o * scale, then
 *     max(.., 0) under half_pixel_centers.
 * The gradients scatter-add along the same index and weight maps. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"

typedef struct rs_modes {
  bool align, half;
} rs_modes;

/* Reads the mode attrs; both true is an error naming the op. */
static tf_code rs_read_modes(tf_kernel_ctx *ctx, rs_modes *m) {
  const tf_attr_value *a = tf_node_attr(ctx->node, "align_corners");
  const tf_attr_value *h = tf_node_attr(ctx->node, "half_pixel_centers");
  m->align = a != NULL && a->type == TF_ATTR_BOOL && a->u.b;
  m->half = h != NULL && h->type == TF_ATTR_BOOL && h->u.b;
  if (m->align && m->half) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: attrs align_corners and half_pixel_centers "
                           "cannot both be true", tf_node_op(ctx->node));
  }
  return TF_OK;
}

/* Input i must be 4-D; what names it in the error. */
static tf_code rs_check4(tf_kernel_ctx *ctx, int i, const char *what) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 4) {
    char buf[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: %s must be 4-dimensional [batch, height, "
                           "width, channels], got shape %s",
                           tf_node_op(ctx->node), what,
                           tf_shape_str(&t->shape, buf, sizeof buf));
  }
  return TF_OK;
}

/* Reads size input i: a vector of two positive int32 values. */
static tf_code rs_read_size(tf_kernel_ctx *ctx, int i, int64_t hw[2]) {
  const tf_tensor *s = ctx->inputs[i];
  if (s->shape.rank != 1 || s->n != 2) {
    char buf[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: size must be a 1-D tensor of 2 elements "
                           "[new_height, new_width], got shape %s",
                           tf_node_op(ctx->node),
                           tf_shape_str(&s->shape, buf, sizeof buf));
  }
  hw[0] = tf_tensor_get_i64(s, 0);
  hw[1] = tf_tensor_get_i64(s, 1);
  if (hw[0] <= 0 || hw[1] <= 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: size must be positive, got [%lld, %lld]",
                           tf_node_op(ctx->node), (long long)hw[0],
                           (long long)hw[1]);
  }
  return TF_OK;
}

/* The input image's height and width must be non-zero (TF). */
static tf_code rs_check_nonempty(tf_kernel_ctx *ctx, const tf_shape *s,
                                 const char *what) {
  if (s->dims[1] <= 0 || s->dims[2] <= 0) {
    char buf[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: %s must have non-zero height and width, got "
                           "shape %s", tf_node_op(ctx->node), what,
                           tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

static float rs_scale(int64_t in, int64_t out, bool align) {
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1)
                          : (float)in / (float)out;
}

/* Whether dt is half or bfloat16 (computed through float32 buffers). */
static bool rs_is_half(tf_dtype dt) {
  return dt == TF_FLOAT16 || dt == TF_BFLOAT16;
}

/* A new float32 copy of t's elements (half or bfloat16). */
static float *rs_to_float(const tf_tensor *t) {
  float *f = tf__xmalloc(sizeof(float) * (size_t)t->n);
  for (int64_t i = 0; i < t->n; i++) f[i] = (float)tf_tensor_get_f64(t, i);
  return f;
}

/* Rounds f (t->n values) into t, a half or bfloat16 tensor. */
static void rs_from_float(const float *f, tf_tensor *t) {
  for (int64_t i = 0; i < t->n; i++) {
    if (t->dtype == TF_FLOAT16) {
      ((tf_float16 *)t->data)[i] = tf_float_to_float16(f[i]);
    } else {
      ((tf_bfloat16 *)t->data)[i] = tf_float_to_bfloat16(f[i]);
    }
  }
}

/* ---- bilinear ------------------------------------------------------------ */

typedef struct rs_interp {
  int64_t lo, hi;
  float lerp;
} rs_interp;

/* The bilinear weights of the n_out output positions over n_in inputs;
 * the caller frees the array. */
static rs_interp *rs_bilinear_weights(int64_t n_in, int64_t n_out,
                                      const rs_modes *m) {
  rs_interp *w = tf__xmalloc(sizeof *w * (size_t)n_out);
  float scale = rs_scale(n_in, n_out, m->align);
  for (int64_t i = 0; i < n_out; i++) {
    float src = m->half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
    float f = floorf(src);
    w[i].lo = TF_MAX((int64_t)f, (int64_t)0);
    w[i].hi = TF_MIN((int64_t)ceilf(src), n_in - 1);
    w[i].lo = TF_MIN(w[i].lo, w[i].hi);
    w[i].lerp = src - f;
  }
  return w;
}

/* out [N, OH, OW, C] from img (as float) [N, H, W, C], TF's lerp order. */
static void rs_bilinear_loop(const float *img, const int64_t *d, int64_t oh,
                             int64_t ow, const rs_interp *ys,
                             const rs_interp *xs, float *out) {
  const int64_t h = d[1], w = d[2], c = d[3];
  for (int64_t b = 0; b < d[0]; b++) {
    const float *ib = img + b * h * w * c;
    for (int64_t y = 0; y < oh; y++) {
      const float *top = ib + ys[y].lo * w * c, *bot = ib + ys[y].hi * w * c;
      const float yl = ys[y].lerp;
      for (int64_t x = 0; x < ow; x++) {
        const int64_t l = xs[x].lo * c, r = xs[x].hi * c;
        const float xl = xs[x].lerp;
        float *o = out + ((b * oh + y) * ow + x) * c;
        for (int64_t k = 0; k < c; k++) {
          const float t = top[l + k] + (top[r + k] - top[l + k]) * xl;
          const float u = bot[l + k] + (bot[r + k] - bot[l + k]) * xl;
          o[k] = t + (u - t) * yl;
        }
      }
    }
  }
}

static tf_code resize_bilinear_kernel(tf_kernel_ctx *ctx) {
  rs_modes m;
  int64_t hw[2];
  TF_TRY(rs_read_modes(ctx, &m));
  TF_TRY(rs_check4(ctx, 0, "images"));
  TF_TRY(rs_read_size(ctx, 1, hw));
  const tf_tensor *in = ctx->inputs[0];
  TF_TRY(rs_check_nonempty(ctx, &in->shape, "images"));
  const int64_t *d = in->shape.dims;
  tf_shape os = tf_shape_of(4, d[0], hw[0], hw[1], d[3]);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_FLOAT32, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  float *img = tf__xmalloc(sizeof(float) * (size_t)in->n);
  for (int64_t i = 0; i < in->n; i++) img[i] = (float)tf_tensor_get_f64(in, i);
  rs_interp *ys = rs_bilinear_weights(d[1], hw[0], &m);
  rs_interp *xs = rs_bilinear_weights(d[2], hw[1], &m);
  rs_bilinear_loop(img, d, hw[0], hw[1], ys, xs, out->data);
  free(ys);
  free(xs);
  free(img);
  return TF_OK;
}

/* out [N, H, W, C] += the bilinear scatter of g [N, GH, GW, C], in T. */
#define DEFINE_RS_BILINEAR_GRAD(T)                                             \
  static void rs_bilinear_grad_##T(const float *g, const int64_t *gd,         \
                                   int64_t h, int64_t w, const rs_interp *ys, \
                                   const rs_interp *xs, T *out) {             \
    const int64_t gh = gd[1], gw = gd[2], c = gd[3];                           \
    for (int64_t b = 0; b < gd[0]; b++) {                                      \
      T *ob = out + b * h * w * c;                                             \
      for (int64_t y = 0; y < gh; y++) {                                       \
        T *top = ob + ys[y].lo * w * c, *bot = ob + ys[y].hi * w * c;          \
        const T yl = (T)ys[y].lerp, iyl = (T)(1.0 - yl);                       \
        for (int64_t x = 0; x < gw; x++) {                                     \
          const int64_t l = xs[x].lo * c, r = xs[x].hi * c;                    \
          const T xl = (T)xs[x].lerp, ixl = (T)(1.0 - xl);                     \
          const float *gp = g + ((b * gh + y) * gw + x) * c;                   \
          for (int64_t k = 0; k < c; k++) {                                    \
            top[l + k] += (T)(gp[k] * iyl * ixl);                              \
            top[r + k] += (T)(gp[k] * iyl * xl);                               \
            bot[l + k] += (T)(gp[k] * yl * ixl);                               \
            bot[r + k] += (T)(gp[k] * yl * xl);                                \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

DEFINE_RS_BILINEAR_GRAD(float)
DEFINE_RS_BILINEAR_GRAD(double)

/* grads [N, GH, GW, C] and original_image [N, H, W, C] must agree on N, C. */
static tf_code rs_check_grad_pair(tf_kernel_ctx *ctx, const tf_shape *g,
                                  const tf_shape *x) {
  if (g->dims[0] != x->dims[0] || g->dims[3] != x->dims[3]) {
    char a[128], b[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s: grads %s and original_image %s must have the "
                           "same batch size and depth", tf_node_op(ctx->node),
                           tf_shape_str(g, a, sizeof a),
                           tf_shape_str(x, b, sizeof b));
  }
  return TF_OK;
}

static tf_code resize_bilinear_grad_kernel(tf_kernel_ctx *ctx) {
  rs_modes m;
  TF_TRY(rs_read_modes(ctx, &m));
  TF_TRY(rs_check4(ctx, 0, "grads"));
  TF_TRY(rs_check4(ctx, 1, "original_image"));
  const tf_tensor *g = ctx->inputs[0], *x = ctx->inputs[1];
  TF_TRY(rs_check_grad_pair(ctx, &g->shape, &x->shape));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &out));
  memset(out->data, 0, out->nbytes);
  if (g->n == 0 || out->n == 0) {
    return TF_OK;
  }
  const int64_t h = x->shape.dims[1], w = x->shape.dims[2];
  rs_interp *ys = rs_bilinear_weights(h, g->shape.dims[1], &m);
  rs_interp *xs = rs_bilinear_weights(w, g->shape.dims[2], &m);
  if (x->dtype == TF_FLOAT64) {
    rs_bilinear_grad_double(g->data, g->shape.dims, h, w, ys, xs, out->data);
  } else if (rs_is_half(x->dtype)) {
    float *acc = tf__xcalloc((size_t)out->n, sizeof(float));
    rs_bilinear_grad_float(g->data, g->shape.dims, h, w, ys, xs, acc);
    rs_from_float(acc, out);
    free(acc);
  } else {
    rs_bilinear_grad_float(g->data, g->shape.dims, h, w, ys, xs, out->data);
  }
  free(ys);
  free(xs);
  return TF_OK;
}

/* ---- nearest neighbor ---------------------------------------------------- */

/* The source index of each of n_out positions over n_in (TF's rules). */
static int64_t *rs_nearest_index(int64_t n_in, int64_t n_out,
                                 const rs_modes *m) {
  int64_t *ix = tf__xmalloc(sizeof *ix * (size_t)n_out);
  float scale = rs_scale(n_in, n_out, m->align);
  for (int64_t i = 0; i < n_out; i++) {
    float s = m->half ? ((float)i + 0.5f) * scale : (float)i * scale;
    int64_t v = m->align ? (int64_t)roundf(s) : (int64_t)floorf(s);
    v = TF_MIN(v, n_in - 1);
    if (m->half) {
      v = TF_MAX((int64_t)0, v);
    }
    ix[i] = v;
  }
  return ix;
}

static tf_code resize_nearest_kernel(tf_kernel_ctx *ctx) {
  rs_modes m;
  int64_t hw[2];
  TF_TRY(rs_read_modes(ctx, &m));
  TF_TRY(rs_check4(ctx, 0, "images"));
  TF_TRY(rs_read_size(ctx, 1, hw));
  const tf_tensor *in = ctx->inputs[0];
  TF_TRY(rs_check_nonempty(ctx, &in->shape, "images"));
  const int64_t *d = in->shape.dims;
  tf_shape os = tf_shape_of(4, d[0], hw[0], hw[1], d[3]);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  int64_t *ys = rs_nearest_index(d[1], hw[0], &m);
  int64_t *xs = rs_nearest_index(d[2], hw[1], &m);
  const size_t px = tf_dtype_size(in->dtype) * (size_t)d[3];
  const char *src = in->data;
  char *dst = out->data;
  for (int64_t b = 0; b < d[0]; b++) {
    for (int64_t y = 0; y < hw[0]; y++) {
      const char *row = src + (size_t)((b * d[1] + ys[y]) * d[2]) * px;
      for (int64_t x = 0; x < hw[1]; x++) {
        memcpy(dst, row + (size_t)xs[x] * px, px);
        dst += px;
      }
    }
  }
  free(ys);
  free(xs);
  return TF_OK;
}

/* out [N, H, W, C] += g [N, GH, GW, C] at the sampled pixels, in T. */
#define DEFINE_RS_NEAREST_GRAD(T)                                              \
  static void rs_nearest_grad_##T(const void *gv, const int64_t *gd,          \
                                  int64_t h, int64_t w, const int64_t *ys,    \
                                  const int64_t *xs, void *ov) {              \
    const T *g = gv;                                                           \
    T *out = ov;                                                               \
    const int64_t c = gd[3];                                                   \
    for (int64_t b = 0; b < gd[0]; b++) {                                      \
      for (int64_t y = 0; y < gd[1]; y++) {                                    \
        for (int64_t x = 0; x < gd[2]; x++) {                                  \
          T *o = out + ((b * h + ys[y]) * w + xs[x]) * c;                      \
          const T *gp = g + ((b * gd[1] + y) * gd[2] + x) * c;                 \
          for (int64_t k = 0; k < c; k++) o[k] = (T)(o[k] + gp[k]);            \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

DEFINE_RS_NEAREST_GRAD(float)
DEFINE_RS_NEAREST_GRAD(double)
DEFINE_RS_NEAREST_GRAD(int32_t)
DEFINE_RS_NEAREST_GRAD(uint8_t)
DEFINE_RS_NEAREST_GRAD(int8_t)

typedef void (*rs_nearest_grad_fn)(const void *, const int64_t *, int64_t,
                                   int64_t, const int64_t *, const int64_t *,
                                   void *);

static rs_nearest_grad_fn rs_nearest_grad_for(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return rs_nearest_grad_float;
  case TF_FLOAT64: return rs_nearest_grad_double;
  case TF_INT32: return rs_nearest_grad_int32_t;
  case TF_UINT8: return rs_nearest_grad_uint8_t;
  case TF_INT8: return rs_nearest_grad_int8_t;
  case TF_FLOAT16:
  case TF_BFLOAT16: return rs_nearest_grad_float; /* on float32 copies */
  default: return NULL;
  }
}

static tf_code resize_nearest_grad_kernel(tf_kernel_ctx *ctx) {
  rs_modes m;
  int64_t hw[2];
  TF_TRY(rs_read_modes(ctx, &m));
  TF_TRY(rs_check4(ctx, 0, "grads"));
  TF_TRY(rs_read_size(ctx, 1, hw));
  const tf_tensor *g = ctx->inputs[0];
  rs_nearest_grad_fn fn = rs_nearest_grad_for(g->dtype);
  if (fn == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "ResizeNearestNeighborGrad: grads dtype %s is not "
                           "supported", tf_dtype_name(g->dtype));
  }
  const int64_t *d = g->shape.dims;
  tf_shape os = tf_shape_of(4, d[0], hw[0], hw[1], d[3]);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, g->dtype, &os, &out));
  memset(out->data, 0, out->nbytes);
  if (g->n == 0 || out->n == 0) {
    return TF_OK;
  }
  /* The forward op mapped size (hw) to grads' spatial size. */
  int64_t *ys = rs_nearest_index(hw[0], d[1], &m);
  int64_t *xs = rs_nearest_index(hw[1], d[2], &m);
  if (rs_is_half(g->dtype)) {
    float *gf = rs_to_float(g);
    float *acc = tf__xcalloc((size_t)out->n, sizeof(float));
    fn(gf, d, hw[0], hw[1], ys, xs, acc);
    rs_from_float(acc, out);
    free(acc);
    free(gf);
  } else {
    fn(g->data, d, hw[0], hw[1], ys, xs, out->data);
  }
  free(ys);
  free(xs);
  return TF_OK;
}

/* ---- registration -------------------------------------------------------- */

#define RS_K(name, fn, dt)                                                     \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = dt, .compute = fn}

#define RS_ALL(name, fn)                                                       \
  RS_K(name, fn, TF_INT8), RS_K(name, fn, TF_UINT8), RS_K(name, fn, TF_INT16), \
      RS_K(name, fn, TF_UINT16), RS_K(name, fn, TF_INT32),                     \
      RS_K(name, fn, TF_INT64), RS_K(name, fn, TF_BFLOAT16),                   \
      RS_K(name, fn, TF_FLOAT16), RS_K(name, fn, TF_FLOAT32),                  \
      RS_K(name, fn, TF_FLOAT64)

static const tf_kernel_def resize_kernels[] = {
    RS_ALL("ResizeBilinear", resize_bilinear_kernel),
    RS_K("ResizeBilinearGrad", resize_bilinear_grad_kernel, TF_FLOAT32),
    RS_K("ResizeBilinearGrad", resize_bilinear_grad_kernel, TF_FLOAT64),
    RS_K("ResizeBilinearGrad", resize_bilinear_grad_kernel, TF_FLOAT16),
    RS_K("ResizeBilinearGrad", resize_bilinear_grad_kernel, TF_BFLOAT16),
    RS_ALL("ResizeNearestNeighbor", resize_nearest_kernel),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_FLOAT32),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_FLOAT64),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_INT32),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_UINT8),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_INT8),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, TF_FLOAT16),
    RS_K("ResizeNearestNeighborGrad", resize_nearest_grad_kernel,
         TF_BFLOAT16),
};

TF_REGISTER_KERNELS(resize_kernels)
