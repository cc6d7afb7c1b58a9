/* cpu_conv.c: the CPU Conv2D kernel (NHWC, float32 and float64).
 *
 * The convolution is a GEMM: each output pixel's receptive field, laid out
 * as the filter is ([KH, KW, Cin]), becomes one row of an im2col matrix that
 * multiplies the filter viewed as [KH*KW*Cin, Cout]. Output pixels are
 * processed in chunks so the im2col buffer stays small (about 1 MiB, at
 * most 64 MiB); each chunk is filled by the intra-op pool and multiplied by
 * OpenBLAS through cpu_blas.h. When the input already is that matrix (a 1x1
 * filter with stride 1, or a VALID filter covering the whole image), the
 * GEMM runs on the input directly. Padding arithmetic is TF's (ops_nn.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/kernel.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/core/util.h"
#include "lib/devices/cpu/cpu_blas.h"

/* Output pixels per chunk: enough for about CONV_COL_TARGET bytes of
 * im2col rows, which stay in cache between the fill and the GEMM (measured
 * 3-4x faster than 64 MiB chunks on 3x3 and 5x5 convolutions here), but at
 * least CONV_MIN_ROWS so the GEMM's repacking of the filter is amortised,
 * and never more than CONV_COL_MAX bytes. */
#define CONV_COL_TARGET ((int64_t)1 << 20)
#define CONV_MIN_ROWS 512
#define CONV_COL_MAX ((int64_t)64 << 20)

typedef struct conv_state {
  tf__nn_window w;
} conv_state;

typedef struct conv_geom {
  int64_t n, h, w, cin;   /* input [N, H, W, Cin] */
  int64_t kh, kw, cout;   /* filter [KH, KW, Cin, Cout] */
  int64_t oh, ow;         /* output [N, OH, OW, Cout] */
  int64_t sh, sw, dh, dw; /* strides and dilations */
  int64_t pt, pl;         /* padding before: top, left */
  int64_t k;              /* KH * KW * Cin: one im2col row */
} conv_geom;

static tf_code conv_init(const tf_node *node, void **state, tf_status *st) {
  conv_state *s = tf__xcalloc(1, sizeof *s);
  tf_code code = tf__nn_window_parse(node, &s->w, st);
  if (code == TF_OK && s->w.nchw) {
    code = tf_status_set(st, TF_UNIMPLEMENTED,
                         "Conv2D on CPU supports only data_format NHWC, "
                         "got NCHW (transpose the input to NHWC)");
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

static tf_code check_operands(tf_kernel_ctx *ctx, const tf_tensor *in,
                              const tf_tensor *f) {
  char a[128], b[128];
  tf_shape_str(&in->shape, a, sizeof a);
  tf_shape_str(&f->shape, b, sizeof b);
  if (in->shape.rank != 4 || f->shape.rank != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input and filter must be rank 4, got input %s and "
                           "filter %s", a, b);
  }
  if (f->n == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "filter must not have zero elements, got %s", b);
  }
  if (in->shape.dims[3] != f->shape.dims[2]) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input depth %lld does not match filter in_depth "
                           "%lld (input %s, filter %s)",
                           (long long)in->shape.dims[3],
                           (long long)f->shape.dims[2], a, b);
  }
  return TF_OK;
}

static tf_code conv_geometry(tf_kernel_ctx *ctx, const tf__nn_window *w,
                             const tf_tensor *in, const tf_tensor *f,
                             conv_geom *g) {
  TF_TRY(check_operands(ctx, in, f));
  const int64_t *id = in->shape.dims, *fd = f->shape.dims;
  *g = (conv_geom){.n = id[0], .h = id[1], .w = id[2], .cin = id[3],
                   .kh = fd[0], .kw = fd[1], .cout = fd[3],
                   .sh = w->strides[1], .sw = w->strides[2],
                   .dh = w->dilations[1], .dw = w->dilations[2]};
  g->k = f->n / g->cout;
  tf_status st;
  if (tf__nn_out_size("rows", g->h, g->kh, g->dh, g->sh, w->padding,
                      w->pads[2], w->pads[3], &g->oh, &g->pt, &st) != TF_OK ||
      tf__nn_out_size("cols", g->w, g->kw, g->dw, g->sw, w->padding,
                      w->pads[4], w->pads[5], &g->ow, &g->pl, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return TF_OK;
}

/* ---- GEMM ----------------------------------------------------------------- */

/* out[m, cout] = a[m, k] . filter[k, cout]. */
static tf_code conv_gemm(tf_kernel_ctx *ctx, tf_dtype dt, int64_t m, int64_t k,
                         int64_t cout, const void *a, const void *filter,
                         void *out) {
  tf__gemm_dims d = tf__gemm_dims_packed(false, false, m, cout, k);
  tf_status st;
  tf_code code =
      dt == TF_FLOAT64
          ? tf__blas_dgemm(&d, 1.0, a, filter, 0.0, out, &st)
          : tf__blas_sgemm(&d, 1.0f, a, filter, 0.0f, out, &st);
  if (code != TF_OK) {
    return tf_kernel_error(ctx, code, "%s", st.msg);
  }
  return TF_OK;
}

/* The input viewed as [m, k] is the im2col matrix: one GEMM per chunk of at
 * most INT_MAX rows (BLAS's int). */
static tf_code conv_direct(tf_kernel_ctx *ctx, const tf_tensor *in,
                           const tf_tensor *f, tf_tensor *out, int64_t m,
                           int64_t k, int64_t cout) {
  size_t esz = tf_dtype_size(in->dtype);
  for (int64_t r0 = 0; r0 < m; r0 += INT_MAX) {
    int64_t rows = TF_MIN(m - r0, (int64_t)INT_MAX);
    TF_TRY(conv_gemm(ctx, in->dtype, rows, k, cout,
                     (const char *)in->data + (size_t)(r0 * k) * esz, f->data,
                     (char *)out->data + (size_t)(r0 * cout) * esz));
  }
  return TF_OK;
}

/* ---- im2col --------------------------------------------------------------- */

typedef struct im2col_args {
  const conv_geom *g;
  const char *in; /* input [N, H, W, Cin] */
  char *col;      /* [rows, K] for output pixels row0 .. row0 + rows */
  size_t esz;
  int64_t row0;
} im2col_args;

/* One filter row (kw taps) of output pixel (b, oh, ow) at input row ih. */
static char *im2col_taps(const im2col_args *a, const char *line, int64_t ow,
                         char *dst) {
  const conv_geom *g = a->g;
  const size_t run = (size_t)g->cin * a->esz;
  const int64_t iw0 = ow * g->sw - g->pl;
  if (g->dw == 1) { /* taps are contiguous in the input line */
    int64_t lo = TF_MAX(0, -iw0), hi = TF_MIN(g->kw, g->w - iw0);
    if (hi <= lo) { /* every tap falls in the padding */
      memset(dst, 0, (size_t)g->kw * run);
      return dst + (size_t)g->kw * run;
    }
    memset(dst, 0, (size_t)lo * run);
    memcpy(dst + (size_t)lo * run, line + (size_t)(iw0 + lo) * run,
           (size_t)(hi - lo) * run);
    memset(dst + (size_t)hi * run, 0, (size_t)(g->kw - hi) * run);
    return dst + (size_t)g->kw * run;
  }
  for (int64_t x = 0; x < g->kw; x++, dst += run) {
    int64_t iw = iw0 + x * g->dw;
    if (iw >= 0 && iw < g->w) {
      memcpy(dst, line + (size_t)iw * run, run);
    } else {
      memset(dst, 0, run);
    }
  }
  return dst;
}

static void im2col_rows(void *arg, int64_t begin, int64_t end) {
  const im2col_args *a = arg;
  const conv_geom *g = a->g;
  const size_t run = (size_t)g->cin * a->esz;
  const size_t line_bytes = (size_t)g->w * run;
  for (int64_t r = begin; r < end; r++) {
    int64_t m = a->row0 + r;
    int64_t ow = m % g->ow, t = m / g->ow, oh = t % g->oh, b = t / g->oh;
    const char *img = a->in + (size_t)(b * g->h) * line_bytes;
    char *dst = a->col + (size_t)(r * g->k) * a->esz;
    for (int64_t y = 0; y < g->kh; y++) {
      int64_t ih = oh * g->sh - g->pt + y * g->dh;
      if (ih < 0 || ih >= g->h) {
        memset(dst, 0, (size_t)g->kw * run);
        dst += (size_t)g->kw * run;
        continue;
      }
      dst = im2col_taps(a, img + (size_t)ih * line_bytes, ow, dst);
    }
  }
}

static tf_code conv_im2col(tf_kernel_ctx *ctx, const conv_geom *g,
                           const tf_tensor *in, const tf_tensor *f,
                           tf_tensor *out) {
  size_t esz = tf_dtype_size(in->dtype);
  int64_t m = g->n * g->oh * g->ow;
  int64_t row_bytes = g->k * (int64_t)esz;
  int64_t chunk = TF_MAX(CONV_COL_TARGET / row_bytes, CONV_MIN_ROWS);
  chunk = TF_MIN(chunk, CONV_COL_MAX / row_bytes);
  chunk = TF_MAX(1, TF_MIN(chunk, m));
  tf_tensor *col;
  tf_shape cs = tf_shape_of(2, chunk, g->k);
  tf_status st;
  if (tf_tensor_new(in->dtype, &cs, &col, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "im2col buffer: %s", st.msg);
  }
  im2col_args a = {.g = g, .in = in->data, .col = col->data, .esz = esz};
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / g->k);
  tf_code code = TF_OK;
  for (int64_t r0 = 0; r0 < m && code == TF_OK; r0 += chunk) {
    int64_t rows = TF_MIN(chunk, m - r0);
    a.row0 = r0;
    tf_parallel_for(ctx->pool, rows, grain, im2col_rows, &a);
    code = conv_gemm(ctx, in->dtype, rows, g->k, g->cout, col->data, f->data,
                     (char *)out->data + (size_t)(r0 * g->cout) * esz);
  }
  tf_tensor_unref(col);
  return code;
}

/* ---- kernel --------------------------------------------------------------- */

/* True when the input, as stored, is the im2col matrix. */
static bool conv_is_direct(const conv_geom *g) {
  bool unpadded = g->pt == 0 && g->pl == 0;
  bool one_by_one = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
                    g->oh == g->h && g->ow == g->w;
  bool whole = g->kh == g->h && g->kw == g->w && g->oh == 1 && g->ow == 1 &&
               g->dh == 1 && g->dw == 1;
  return unpadded && (one_by_one || whole);
}

static tf_code conv2d_kernel(tf_kernel_ctx *ctx) {
  const conv_state *s = ctx->state;
  const tf_tensor *in = ctx->inputs[0], *f = ctx->inputs[1];
  conv_geom g;
  TF_TRY(conv_geometry(ctx, &s->w, in, f, &g));
  tf_shape os = tf_shape_of(4, g.n, g.oh, g.ow, g.cout);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (conv_is_direct(&g)) {
    return conv_direct(ctx, in, f, out, out->n / g.cout, g.k, g.cout);
  }
  return conv_im2col(ctx, &g, in, f, out);
}

static const tf_kernel_def conv_kernels[] = {
    {.op = "Conv2D", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .init = conv_init, .compute = conv2d_kernel, .free_state = free},
    {.op = "Conv2D", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,
     .init = conv_init, .compute = conv2d_kernel, .free_state = free},
};

TF_REGISTER_KERNELS(conv_kernels)
