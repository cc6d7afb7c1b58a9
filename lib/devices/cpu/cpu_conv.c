/* cpu_conv.c: the CPU Conv2D kernel (NHWC, float32 and float64).
 *
 * The convolution is a GEMM: each output pixel's receptive field, laid out
 * as the filter is ([KH, KW, Cin]), becomes one row of an im2col matrix that
 * multiplies the filter viewed as [KH*KW*Cin, Cout]. Output pixels are
 * processed in chunks so the im2col buffer stays small (about 1 MiB, at
 * most 64 MiB); each chunk is filled by the intra-op pool and multiplied by
 * OpenBLAS through cpu_blas.h. When the input already is that matrix (a 1x1
 * filter with stride 1, or a VALID filter covering the whole image), the
 * GEMM runs on the input directly. Small problems (K * Cout small enough
 * that a cache-sized chunk's GEMM stays single-threaded in OpenBLAS, e.g. a
 * first layer on one input channel) are instead split over the pool into
 * one part per thread, each filling and multiplying its own chunks: about
 * twice as fast as alternating pool fills with tiny threaded GEMMs (5x5x1x32
 * at batch 64: 7.5-9 ms before, 3-4 ms after, medians on the shared 2-core
 * machine). Padding arithmetic is TF's (ops_nn.h). This file also holds
 * what the backprops (cpu_conv_grad.c) share, declared in cpu_conv.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/devices/cpu/cpu_conv.h"
#include "lib/devices/cpu/cpu_conv_dnnl.h"

#include "lib/core/base/util.h"

/* Output pixels per chunk: enough for about CONV_COL_TARGET bytes of
 * im2col rows, which stay in cache between the fill and the GEMM (measured
 * 3-4x faster than 64 MiB chunks on 3x3 and 5x5 convolutions here), but at
 * least CONV_MIN_ROWS so the GEMM's repacking of the filter is amortised,
 * and never more than CONV_COL_MAX bytes. */
#define CONV_COL_TARGET ((int64_t)1 << 20)
#define CONV_MIN_ROWS 512
#define CONV_COL_MAX ((int64_t)64 << 20)

tf_code tf__conv_init(const tf_node *node, void **state, tf_status *st) {
  tf__conv_state *cs = tf__xcalloc(1, sizeof *cs);
  tf__nn_window *w = &cs->w;
  tf_code code = tf__nn_window_parse(node, w, st);
  if (code == TF_OK && w->nchw) {
    code = tf_status_set(st, TF_UNIMPLEMENTED,
                         "%s on CPU supports only data_format NHWC, got NCHW "
                         "(transpose the input to NHWC)", tf_node_op(node));
  }
  if (code != TF_OK) {
    free(cs);
    tf_status_prefix(st, "node '%s' (%s)", tf_node_name(node),
                     tf_node_op(node));
    return code;
  }
  cs->dnnl = tf__dnnl_cache_new();
  *state = cs;
  return TF_OK;
}

void tf__conv_free_state(void *state) {
  tf__conv_state *cs = state;
  if (cs != NULL) {
    tf__dnnl_cache_free(cs->dnnl);
    free(cs);
  }
}

static tf_code check_operands(tf_kernel_ctx *ctx, const tf_shape *in,
                              const tf_shape *f, const char *in_name,
                              const char *f_name) {
  char a[128], b[128];
  tf_shape_str(in, a, sizeof a);
  tf_shape_str(f, b, sizeof b);
  if (in->rank != 4 || f->rank != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s and %s must be rank 4, got %s %s and %s %s",
                           in_name, f_name, in_name, a, f_name, b);
  }
  if (tf_shape_num_elements(f) == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must not have zero elements, got %s", f_name, b);
  }
  if (in->dims[3] != f->dims[2]) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s depth %lld does not match %s in_depth %lld "
                           "(%s %s, %s %s)", in_name, (long long)in->dims[3],
                           f_name, (long long)f->dims[2], in_name, a, f_name,
                           b);
  }
  return TF_OK;
}

tf_code tf__conv_geometry(tf_kernel_ctx *ctx, const tf__nn_window *w,
                          const tf_shape *in, const tf_shape *f,
                          const char *in_name, const char *f_name,
                          tf__conv_geom *g) {
  TF_TRY(check_operands(ctx, in, f, in_name, f_name));
  const int64_t *id = in->dims, *fd = f->dims;
  *g = (tf__conv_geom){.n = id[0], .h = id[1], .w = id[2], .cin = id[3],
                       .kh = fd[0], .kw = fd[1], .cout = fd[3],
                       .sh = w->strides[1], .sw = w->strides[2],
                       .dh = w->dilations[1], .dw = w->dilations[2]};
  g->k = fd[0] * fd[1] * fd[2];
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

tf_code tf__conv_gemm(tf_kernel_ctx *ctx, tf_dtype dt, const tf__gemm_dims *d,
                      const void *a, const void *b, double beta, void *c) {
  tf_status st;
  tf_code code = dt == TF_FLOAT64
                     ? tf__blas_dgemm(d, 1.0, a, b, beta, c, &st)
                     : tf__blas_sgemm(d, 1.0f, a, b, (float)beta, c, &st);
  if (code != TF_OK) {
    return tf_kernel_error(ctx, code, "%s", st.msg);
  }
  return TF_OK;
}

/* out[m, cout] = a[m, k] . filter[k, cout]. */
static tf_code conv_gemm(tf_kernel_ctx *ctx, tf_dtype dt, int64_t m, int64_t k,
                         int64_t cout, const void *a, const void *filter,
                         void *out) {
  tf__gemm_dims d = tf__gemm_dims_packed(false, false, m, cout, k);
  return tf__conv_gemm(ctx, dt, &d, a, filter, 0.0, out);
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

/* Runs of a few dozen bytes (one input channel) are copied and cleared in
 * 4-byte words inline: libc's memcpy and memset calls cost more than the
 * copy itself there (measured: im2col of a 5x5x1 filter 2.3x faster).
 * Every run is a multiple of 4 bytes (float32 or float64 elements). */
#define SMALL_RUN 64

static inline void copy_run(char *dst, const char *src, size_t n) {
  if (n <= SMALL_RUN) {
    for (size_t i = 0; i < n; i += 4) memcpy(dst + i, src + i, 4);
  } else {
    memcpy(dst, src, n);
  }
}

static inline void zero_run(char *dst, size_t n) {
  if (n <= SMALL_RUN) {
    for (size_t i = 0; i < n; i += 4) memset(dst + i, 0, 4);
  } else {
    memset(dst, 0, n);
  }
}

/* One filter row (kw taps) of output pixel column ow from input line
 * `line`; run is one pixel's bytes. g is the caller's local copy, which
 * stores through dst (a char pointer) cannot alias, so its fields stay in
 * registers. */
static inline char *im2col_taps(const tf__conv_geom *g, size_t run,
                                const char *line, int64_t ow, char *dst) {
  const int64_t iw0 = ow * g->sw - g->pl;
  if (g->dw == 1) { /* taps are contiguous in the input line */
    int64_t lo = TF_MAX(0, -iw0), hi = TF_MIN(g->kw, g->w - iw0);
    if (hi <= lo) { /* every tap falls in the padding */
      zero_run(dst, (size_t)g->kw * run);
      return dst + (size_t)g->kw * run;
    }
    zero_run(dst, (size_t)lo * run);
    copy_run(dst + (size_t)lo * run, line + (size_t)(iw0 + lo) * run,
             (size_t)(hi - lo) * run);
    zero_run(dst + (size_t)hi * run, (size_t)(g->kw - hi) * run);
    return dst + (size_t)g->kw * run;
  }
  for (int64_t x = 0; x < g->kw; x++, dst += run) {
    int64_t iw = iw0 + x * g->dw;
    if (iw >= 0 && iw < g->w) {
      copy_run(dst, line + (size_t)iw * run, run);
    } else {
      zero_run(dst, run);
    }
  }
  return dst;
}

void tf__im2col_rows(void *arg, int64_t begin, int64_t end) {
  const tf__im2col_args *a = arg;
  const tf__conv_geom g = *a->g;
  const size_t run = (size_t)g.cin * a->esz, row_bytes = (size_t)g.k * a->esz;
  const size_t line_bytes = (size_t)g.w * run;
  const char *in = a->in;
  char *col = a->col;
  int64_t m = a->row0 + begin;
  int64_t ow = m % g.ow, t = m / g.ow, oh = t % g.oh, b = t / g.oh;
  for (int64_t r = begin; r < end; r++) {
    const char *img = in + (size_t)(b * g.h) * line_bytes;
    char *dst = col + (size_t)r * row_bytes;
    for (int64_t y = 0; y < g.kh; y++) {
      int64_t ih = oh * g.sh - g.pt + y * g.dh;
      if (ih < 0 || ih >= g.h) {
        zero_run(dst, (size_t)g.kw * run);
        dst += (size_t)g.kw * run;
        continue;
      }
      dst = im2col_taps(&g, run, img + (size_t)ih * line_bytes, ow, dst);
    }
    if (++ow == g.ow) { /* next pixel, without dividing per row */
      ow = 0;
      if (++oh == g.oh) {
        oh = 0;
        b++;
      }
    }
  }
}

int64_t tf__conv_part_rows(const tf__conv_geom *g, size_t esz,
                           const tf_threadpool *pool) {
  double kc = (double)g->k * (double)g->cout;
  double rows = TF__CONV_PART_MNK / kc;
  if (tf_threadpool_size(pool) < 2 || rows < TF__CONV_PART_MIN_ROWS) {
    return 0;
  }
  int64_t cap = TF_MAX(TF__CONV_PART_BYTES / (g->k * (int64_t)esz), 1);
  return TF_MAX(TF_MIN((int64_t)rows, cap), 1);
}

typedef struct conv_parts {
  const tf__conv_geom *g;
  tf_kernel_ctx *ctx;
  tf_dtype dt;
  size_t esz;
  const void *in, *filter;
  char *out, *bufs; /* bufs: one chunk of rows x K per part */
  int64_t m, rows, n_parts;
} conv_parts;

/* Each part fills its chunks of its output rows and multiplies them alone
 * (GEMMs small enough to stay single-threaded, checked by the caller). */
static void conv_part(void *arg, int64_t begin, int64_t end) {
  const conv_parts *a = arg;
  const tf__conv_geom *g = a->g;
  for (int64_t part = begin; part < end; part++) {
    tf__im2col_args c = {.g = g, .in = a->in, .esz = a->esz,
                         .col = a->bufs + (size_t)(part * a->rows * g->k) *
                                              a->esz};
    int64_t r = a->m * part / a->n_parts, r_end = a->m * (part + 1) / a->n_parts;
    for (; r < r_end; r += a->rows) {
      int64_t rows = TF_MIN(a->rows, r_end - r);
      c.row0 = r;
      tf__im2col_rows(&c, 0, rows);
      conv_gemm(a->ctx, a->dt, rows, g->k, g->cout, c.col, a->filter,
                a->out + (size_t)(r * g->cout) * a->esz);
    }
  }
}

static tf_code conv_per_part(tf_kernel_ctx *ctx, const tf__conv_geom *g,
                             int64_t rows, const tf_tensor *in,
                             const tf_tensor *f, tf_tensor *out) {
  int64_t m = g->n * g->oh * g->ow;
  int64_t parts = TF_MIN((m + rows - 1) / rows,
                         (int64_t)tf_threadpool_size(ctx->pool));
  tf__gemm_dims d = tf__gemm_dims_packed(false, false, rows, g->cout, g->k);
  tf_status st;
  tf_tensor *bufs;
  tf_shape bs = tf_shape_of(2, parts * rows, g->k);
  if (tf__blas_check(&d, &st) != TF_OK ||
      tf_tensor_new(in->dtype, &bs, &bufs, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "im2col: %s", st.msg);
  }
  conv_parts a = {.g = g, .ctx = ctx, .dt = in->dtype,
                  .esz = tf_dtype_size(in->dtype), .in = in->data,
                  .filter = f->data, .out = out->data, .bufs = bufs->data,
                  .m = m, .rows = rows, .n_parts = parts};
  tf_parallel_for(ctx->pool, parts, 1, conv_part, &a);
  tf_tensor_unref(bufs);
  return TF_OK;
}

static tf_code conv_im2col(tf_kernel_ctx *ctx, const tf__conv_geom *g,
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
  tf__im2col_args a = {.g = g, .in = in->data, .col = col->data, .esz = esz};
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / g->k);
  tf_code code = TF_OK;
  for (int64_t r0 = 0; r0 < m && code == TF_OK; r0 += chunk) {
    int64_t rows = TF_MIN(chunk, m - r0);
    a.row0 = r0;
    tf_parallel_for(ctx->pool, rows, grain, tf__im2col_rows, &a);
    code = conv_gemm(ctx, in->dtype, rows, g->k, g->cout, col->data, f->data,
                     (char *)out->data + (size_t)(r0 * g->cout) * esz);
  }
  tf_tensor_unref(col);
  return code;
}

/* ---- kernel --------------------------------------------------------------- */

bool tf__conv_is_direct(const tf__conv_geom *g) {
  bool unpadded = g->pt == 0 && g->pl == 0;
  bool one_by_one = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
                    g->oh == g->h && g->ow == g->w;
  bool whole = g->kh == g->h && g->kw == g->w && g->oh == 1 && g->ow == 1 &&
               g->dh == 1 && g->dw == 1;
  return unpadded && (one_by_one || whole);
}

static tf_code conv2d_kernel(tf_kernel_ctx *ctx) {
  const tf__conv_state *cs = ctx->state;
  const tf__nn_window *w = &cs->w;
  const tf_tensor *in = ctx->inputs[0], *f = ctx->inputs[1];
  tf__conv_geom g;
  TF_TRY(tf__conv_geometry(ctx, w, &in->shape, &f->shape, "input", "filter",
                           &g));
  tf_shape os = tf_shape_of(4, g.n, g.oh, g.ow, g.cout);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (tf__dnnl_conv_wanted(TF__DNNL_FWD, &g, in->dtype)) {
    tf_code code = tf__dnnl_conv(ctx, cs->dnnl, TF__DNNL_FWD, &g, in->data,
                                 f->data, out->data);
    if (code != TF_UNIMPLEMENTED) {
      return code;
    }
  }
  if (tf__conv_is_direct(&g)) {
    return conv_direct(ctx, in, f, out, out->n / g.cout, g.k, g.cout);
  }
  int64_t part_rows = tf__conv_part_rows(&g, tf_dtype_size(in->dtype),
                                         ctx->pool);
  if (part_rows > 0) {
    return conv_per_part(ctx, &g, part_rows, in, f, out);
  }
  return conv_im2col(ctx, &g, in, f, out);
}

static const tf_kernel_def conv_kernels[] = {
    {.op = "Conv2D", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .init = tf__conv_init, .compute = conv2d_kernel,
     .free_state = tf__conv_free_state},
    {.op = "Conv2D", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,
     .init = tf__conv_init, .compute = conv2d_kernel,
     .free_state = tf__conv_free_state},
};

TF_REGISTER_KERNELS(conv_kernels)
