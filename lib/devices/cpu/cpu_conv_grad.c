/* cpu_conv_grad.c: the CPU kernels of Conv2D's gradients (NHWC, float32
 * and float64), Conv2DBackpropInput and Conv2DBackpropFilter, as GEMMs on
 * the forward kernel's im2col layout (cpu_conv.h).
 *
 * With col the im2col matrix [M = N*OH*OW, K = KH*KW*Cin], W the filter
 * viewed as [K, Cout] and dy the output's gradient [M, Cout]:
 *   filter:  dW = col^T . dy, accumulated over chunks of output pixels;
 *   input:   dcol = dy . W^T per chunk, then col2im adds each dcol row's
 *            taps back onto the input pixels they were copied from.
 * col2im is written as a gather over input lines (b, ih), so lines can be
 * split over the intra-op pool without write conflicts.
 *
 * Threads follow cpu_blas.c's policy. Small problems (K * Cout * rows of a
 * cache-sized chunk below OpenBLAS's own threading threshold, e.g. a first
 * layer with one input channel) are split over the pool by images (input)
 * or by output pixels (filter, each part summing into its own partial dW),
 * each part running single-threaded GEMMs on chunks that stay in L1/L2.
 * Larger problems run chunk by chunk: the pool fills (im2col) or drains
 * (col2im) the chunk and OpenBLAS's threads run each chunk's GEMM from the
 * kernel's thread. Measured with bench/bench_conv.c on the Fashion-MNIST
 * CNN's layers at batch 64 (float32, shared 2-core machine, medians):
 * 5x5x32x64 on 14x14: forward 12-13 ms, input 14-15 ms, filter 13-14 ms,
 * i.e. each backprop costs about one forward; 5x5x1x32 on 28x28: forward
 * 2.1-2.3 ms, filter 2.1-2.4 ms. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_conv.h"
#include "lib/devices/cpu/cpu_conv_dnnl.h"

/* Bytes of a chunk of im2col rows for the pool-driven path (it stays in
 * L2 between its fill and its GEMM), with at least GRAD_MIN_ROWS rows so
 * OpenBLAS's packing of the other operand is amortised. */
#define GRAD_COL_TARGET ((int64_t)1 << 20)
#define GRAD_MIN_ROWS 512
#define GRAD_COL_MAX ((int64_t)64 << 20)

typedef struct grad_plan {
  tf__conv_geom g;
  tf_dtype dt;
  size_t esz;
  int64_t m;     /* output pixels N * OH * OW */
  int64_t chunk; /* rows per chunk */
  bool per_part; /* small problem: parts on the pool, 1-thread GEMMs */
} grad_plan;

/* Chooses the chunk size and the threading path for geometry g, and
 * checks the chunk GEMMs' dims against BLAS's limits here, so GEMMs run
 * on pool threads cannot fail. */
static tf_code plan_chunks(grad_plan *p, tf_kernel_ctx *ctx) {
  const tf__conv_geom *g = &p->g;
  p->m = g->n * g->oh * g->ow;
  p->chunk = tf__conv_part_rows(g, p->esz, ctx->pool);
  p->per_part = p->chunk > 0;
  if (!p->per_part) {
    int64_t row_bytes = g->k * (int64_t)p->esz;
    p->chunk = TF_MAX(GRAD_COL_TARGET / row_bytes, GRAD_MIN_ROWS);
    p->chunk = TF_MIN(p->chunk, GRAD_COL_MAX / row_bytes);
  }
  p->chunk = TF_MAX(1, TF_MIN(p->chunk, TF_MIN(p->m, (int64_t)INT_MAX)));
  tf__gemm_dims in = tf__gemm_dims_packed(false, true, p->chunk, g->k, g->cout);
  tf__gemm_dims f = tf__gemm_dims_packed(true, false, g->k, g->cout, p->chunk);
  tf_status st;
  if (tf__blas_check(&in, &st) != TF_OK || tf__blas_check(&f, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return TF_OK;
}

/* A scratch tensor of rows x cols elements of dt. */
static tf_code scratch(tf_kernel_ctx *ctx, tf_dtype dt, int64_t rows,
                       int64_t cols, const char *what, tf_tensor **t) {
  tf_shape s = tf_shape_of(2, rows, cols);
  tf_status st;
  if (tf_tensor_new(dt, &s, t, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s buffer: %s", what, st.msg);
  }
  return TF_OK;
}

/* ---- sizes inputs --------------------------------------------------------- */

/* Reads sizes input i (a vector of 4 values; of 2, rows and cols, when
 * alt is non-NULL: alt gives the batch and depth) into a shape. */
static tf_code read_sizes(tf_kernel_ctx *ctx, int i, const char *name,
                          const int64_t *alt, tf_shape *out) {
  const tf_tensor *t = ctx->inputs[i];
  char b[128];
  if (t->shape.rank != 1 || (t->n != 4 && (alt == NULL || t->n != 2))) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be a vector of 4 values%s, got shape %s",
                           name, alt ? " (or 2: rows and cols)" : "",
                           tf_shape_str(&t->shape, b, sizeof b));
  }
  int64_t v[4];
  for (int64_t k = 0; k < t->n; k++) {
    v[k] = tf_tensor_get_i64(t, k);
    if (v[k] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s[%lld] = %lld is negative", name, (long long)k,
                             (long long)v[k]);
    }
  }
  if (t->n == 2) {
    int64_t hw[2] = {v[0], v[1]};
    v[0] = alt[0];
    v[1] = hw[0];
    v[2] = hw[1];
    v[3] = alt[1];
  }
  *out = tf_shape_make(4, v);
  return TF_OK;
}

/* out_backprop must have Conv2D's output shape for the geometry. */
static tf_code check_dy(tf_kernel_ctx *ctx, const tf__conv_geom *g,
                        const tf_tensor *dy, const char *in_name,
                        const tf_shape *in) {
  tf_shape want = tf_shape_of(4, g->n, g->oh, g->ow, g->cout);
  if (!tf_shape_equal(&dy->shape, &want)) {
    char a[128], b[128], c[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "out_backprop has shape %s but Conv2D's output for "
                           "%s %s has shape %s",
                           tf_shape_str(&dy->shape, a, sizeof a), in_name,
                           tf_shape_str(in, b, sizeof b),
                           tf_shape_str(&want, c, sizeof c));
  }
  return TF_OK;
}

static tf_code check_float(tf_kernel_ctx *ctx, int i, int j) {
  tf_dtype a = ctx->inputs[i]->dtype, b = ctx->inputs[j]->dtype;
  if (a != b || (a != TF_FLOAT32 && a != TF_FLOAT64)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "operands must both be float or both double, got "
                           "%s and %s", tf_dtype_name(a), tf_dtype_name(b));
  }
  return TF_OK;
}

/* ---- col2im ---------------------------------------------------------------- */

typedef struct col2im_args {
  const tf__conv_geom *g;
  const char *col; /* rows r0 .. r1 of dcol, [r1 - r0, K] */
  char *dx;        /* [N, H, W, Cin], accumulated into */
  int64_t r0, r1;
  int64_t line0;   /* units are input lines line0 + [begin, end) */
} col2im_args;

/* Adds the kw taps of one dcol row segment (output column ow) onto its
 * input line. */
#define DEFINE_ADD_TAPS(T)                                                     \
  static inline void add_taps_##T(const tf__conv_geom *g, T *line,            \
                                  const T *src, int64_t ow) {                  \
    const int64_t cin = g->cin, iw0 = ow * g->sw - g->pl;                      \
    if (g->dw == 1) {                                                          \
      int64_t lo = TF_MAX(0, -iw0), hi = TF_MIN(g->kw, g->w - iw0);            \
      T *restrict d = line + (iw0 + lo) * cin;                                 \
      const T *restrict s = src + lo * cin;                                    \
      for (int64_t i = 0, n = (hi - lo) * cin; i < n; i++) d[i] += s[i];       \
      return;                                                                  \
    }                                                                          \
    for (int64_t x = 0; x < g->kw; x++) {                                      \
      int64_t iw = iw0 + x * g->dw;                                            \
      if (iw >= 0 && iw < g->w) {                                              \
        T *restrict d = line + iw * cin;                                       \
        const T *restrict s = src + x * cin;                                   \
        for (int64_t i = 0; i < cin; i++) d[i] += s[i];                        \
      }                                                                        \
    }                                                                          \
  }

/* Gathers into input lines line0 + [begin, end) every tap of dcol rows
 * r0 .. r1 that was copied from them. */
#define DEFINE_COL2IM(T)                                                       \
  DEFINE_ADD_TAPS(T)                                                           \
  static void col2im_##T(void *arg, int64_t begin, int64_t end) {             \
    const col2im_args *a = arg;                                                \
    const tf__conv_geom *g = a->g;                                             \
    const int64_t kwc = g->kw * g->cin;                                        \
    for (int64_t l = a->line0 + begin; l < a->line0 + end; l++) {             \
      int64_t b = l / g->h, ih = l % g->h;                                     \
      T *line = (T *)a->dx + l * g->w * g->cin;                                \
      for (int64_t y = 0; y < g->kh; y++) {                                    \
        int64_t t = ih + g->pt - y * g->dh;                                    \
        if (t < 0 || t % g->sh != 0 || t / g->sh >= g->oh) {                   \
          continue;                                                            \
        }                                                                      \
        int64_t base = (b * g->oh + t / g->sh) * g->ow;                        \
        int64_t ow0 = TF_MAX(0, a->r0 - base);                                 \
        int64_t ow1 = TF_MIN(g->ow, a->r1 - base);                             \
        const T *src = (const T *)a->col + y * kwc;                            \
        for (int64_t ow = ow0; ow < ow1; ow++) {                               \
          add_taps_##T(g, line, src + (base + ow - a->r0) * g->k, ow);         \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

DEFINE_COL2IM(float)
DEFINE_COL2IM(double)

/* The input lines [*lo, *hi) (flat b * H + ih) that rows r0 .. r1 touch. */
static void touched_lines(const tf__conv_geom *g, int64_t r0, int64_t r1,
                          int64_t *lo, int64_t *hi) {
  int64_t t0 = r0 / g->ow, t1 = (r1 - 1) / g->ow;
  int64_t b0 = t0 / g->oh, oh0 = t0 % g->oh;
  int64_t b1 = t1 / g->oh, oh1 = t1 % g->oh;
  int64_t ih0 = oh0 * g->sh - g->pt;
  int64_t ih1 = oh1 * g->sh - g->pt + (g->kh - 1) * g->dh + 1;
  *lo = b0 * g->h + TF_MIN(TF_MAX(ih0, 0), g->h);
  *hi = b1 * g->h + TF_MIN(TF_MAX(ih1, 0), g->h);
}

/* dcol[rows, K] = dy rows r0 .. r0 + rows . W^T (W stored [K, Cout]). */
static tf_code dcol_gemm(tf_kernel_ctx *ctx, const grad_plan *p,
                         const char *dy, const void *filter, int64_t r0,
                         int64_t rows, void *dcol) {
  tf__gemm_dims d = tf__gemm_dims_packed(false, true, rows, p->g.k,
                                         p->g.cout);
  return tf__conv_gemm(ctx, p->dt, &d,
                       dy + (size_t)(r0 * p->g.cout) * p->esz, filter, 0.0,
                       dcol);
}

/* ---- Conv2DBackpropInput ---------------------------------------------------- */

typedef struct input_parts {
  tf_kernel_ctx *ctx;
  const grad_plan *p;
  const char *dy;
  const void *filter;
  char *dx;
  char *bufs;     /* one chunk buffer per part */
  int64_t n_parts;
  tf_code *codes; /* per part */
} input_parts;

/* Parts of whole images: each runs its chunks' GEMMs and col2im alone. */
static void input_part(void *arg, int64_t begin, int64_t end) {
  const input_parts *a = arg;
  const grad_plan *p = a->p;
  const tf__conv_geom *g = &p->g;
  int64_t per_img = g->oh * g->ow;
  for (int64_t part = begin; part < end; part++) {
    char *buf = a->bufs + (size_t)(part * p->chunk * g->k) * p->esz;
    int64_t r = g->n * part / a->n_parts * per_img;
    int64_t r_end = g->n * (part + 1) / a->n_parts * per_img;
    for (; r < r_end && a->codes[part] == TF_OK; r += p->chunk) {
      int64_t rows = TF_MIN(p->chunk, r_end - r);
      a->codes[part] = dcol_gemm(a->ctx, p, a->dy, a->filter, r, rows, buf);
      col2im_args c = {.g = g, .col = buf, .dx = a->dx, .r0 = r,
                       .r1 = r + rows};
      int64_t hi;
      touched_lines(g, r, r + rows, &c.line0, &hi);
      (p->dt == TF_FLOAT64 ? col2im_double : col2im_float)(&c, 0,
                                                           hi - c.line0);
    }
  }
}

static tf_code input_per_part(tf_kernel_ctx *ctx, const grad_plan *p,
                              const tf_tensor *f, const tf_tensor *dy,
                              tf_tensor *dx) {
  int64_t parts = TF_MIN(p->g.n, (int64_t)tf_threadpool_size(ctx->pool));
  tf_tensor *bufs;
  TF_TRY(scratch(ctx, p->dt, parts * p->chunk, p->g.k, "col2im", &bufs));
  tf_code *codes = tf__xcalloc((size_t)parts, sizeof *codes);
  input_parts a = {.ctx = ctx, .p = p, .dy = dy->data, .filter = f->data,
                   .dx = dx->data, .bufs = bufs->data, .n_parts = parts,
                   .codes = codes};
  tf_parallel_for(ctx->pool, parts, 1, input_part, &a);
  tf_code code = TF_OK;
  for (int64_t i = 0; i < parts && code == TF_OK; i++) code = codes[i];
  free(codes);
  tf_tensor_unref(bufs);
  return code;
}

static tf_code input_chunked(tf_kernel_ctx *ctx, const grad_plan *p,
                             const tf_tensor *f, const tf_tensor *dy,
                             tf_tensor *dx) {
  const tf__conv_geom *g = &p->g;
  tf_tensor *buf;
  TF_TRY(scratch(ctx, p->dt, p->chunk, g->k, "col2im", &buf));
  tf_range_fn fn = p->dt == TF_FLOAT64 ? col2im_double : col2im_float;
  int64_t line_work = TF_MAX(1, g->w * g->cin * g->kh);
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / line_work);
  tf_code code = TF_OK;
  for (int64_t r = 0; r < p->m && code == TF_OK; r += p->chunk) {
    int64_t rows = TF_MIN(p->chunk, p->m - r), hi;
    code = dcol_gemm(ctx, p, dy->data, f->data, r, rows, buf->data);
    col2im_args c = {.g = g, .col = buf->data, .dx = dx->data, .r0 = r,
                     .r1 = r + rows};
    touched_lines(g, r, r + rows, &c.line0, &hi);
    if (code == TF_OK && hi > c.line0) {
      tf_parallel_for(ctx->pool, hi - c.line0, grain, fn, &c);
    }
  }
  tf_tensor_unref(buf);
  return code;
}

/* dx viewed as [M, K] = dy . W^T when the input is the im2col matrix. */
static tf_code input_direct(tf_kernel_ctx *ctx, const grad_plan *p,
                            const tf_tensor *f, const tf_tensor *dy,
                            tf_tensor *dx) {
  for (int64_t r = 0; r < p->m; r += INT_MAX) {
    int64_t rows = TF_MIN(p->m - r, (int64_t)INT_MAX);
    TF_TRY(dcol_gemm(ctx, p, dy->data, f->data, r, rows,
                     (char *)dx->data + (size_t)(r * p->g.k) * p->esz));
  }
  return TF_OK;
}

static tf_code backprop_input_kernel(tf_kernel_ctx *ctx) {
  const tf__conv_state *cs = ctx->state;
  const tf__nn_window *w = &cs->w;
  const tf_tensor *f = ctx->inputs[1], *dy = ctx->inputs[2];
  TF_TRY(check_float(ctx, 1, 2));
  int64_t alt[2] = {dy->shape.rank == 4 ? dy->shape.dims[0] : 0,
                    f->shape.rank == 4 ? f->shape.dims[2] : 0};
  tf_shape in;
  TF_TRY(read_sizes(ctx, 0, "input_sizes", alt, &in));
  grad_plan p = {.dt = f->dtype, .esz = tf_dtype_size(f->dtype)};
  TF_TRY(tf__conv_geometry(ctx, w, &in, &f->shape, "input_sizes", "filter",
                           &p.g));
  TF_TRY(check_dy(ctx, &p.g, dy, "input_sizes", &in));
  tf_tensor *dx;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, p.dt, &in, &dx));
  if (dx->n == 0) {
    return TF_OK;
  }
  if (tf__dnnl_conv_wanted(TF__DNNL_BWD_DATA, &p.g, p.dt)) {
    tf_code code = tf__dnnl_conv(ctx, cs->dnnl, TF__DNNL_BWD_DATA, &p.g,
                                 dy->data, f->data, dx->data);
    if (code != TF_UNIMPLEMENTED) {
      return code;
    }
  }
  TF_TRY(plan_chunks(&p, ctx));
  if (tf__conv_is_direct(&p.g)) {
    return input_direct(ctx, &p, f, dy, dx);
  }
  memset(dx->data, 0, dx->nbytes);
  if (p.m == 0) {
    return TF_OK;
  }
  if (p.per_part && p.g.n > 1) {
    return input_per_part(ctx, &p, f, dy, dx);
  }
  return input_chunked(ctx, &p, f, dy, dx);
}

/* ---- Conv2DBackpropFilter --------------------------------------------------- */

/* dW[K, Cout] (+)= col[rows, K]^T . dy rows r0 .. r0 + rows. */
static tf_code dw_gemm(tf_kernel_ctx *ctx, const grad_plan *p, const void *col,
                       const char *dy, int64_t r0, int64_t rows, bool first,
                       void *dw) {
  tf__gemm_dims d = tf__gemm_dims_packed(true, false, p->g.k, p->g.cout,
                                         rows);
  return tf__conv_gemm(ctx, p->dt, &d, col,
                       dy + (size_t)(r0 * p->g.cout) * p->esz,
                       first ? 0.0 : 1.0, dw);
}

typedef struct filter_parts {
  tf_kernel_ctx *ctx;
  const grad_plan *p;
  const char *in, *dy;
  char *bufs;     /* one chunk buffer per part */
  char *partials; /* one dW per part */
  int64_t n_parts;
  tf_code *codes;
} filter_parts;

/* Parts of output pixels: each fills its chunks and sums its own dW. */
static void filter_part(void *arg, int64_t begin, int64_t end) {
  const filter_parts *a = arg;
  const grad_plan *p = a->p;
  const tf__conv_geom *g = &p->g;
  for (int64_t part = begin; part < end; part++) {
    tf__im2col_args c = {.g = g, .in = a->in, .esz = p->esz,
                         .col = a->bufs +
                                (size_t)(part * p->chunk * g->k) * p->esz};
    char *dw = a->partials + (size_t)(part * g->k * g->cout) * p->esz;
    int64_t r = p->m * part / a->n_parts, r_end = p->m * (part + 1) / a->n_parts;
    bool first = true;
    for (; r < r_end && a->codes[part] == TF_OK; r += p->chunk, first = false) {
      int64_t rows = TF_MIN(p->chunk, r_end - r);
      c.row0 = r;
      tf__im2col_rows(&c, 0, rows);
      a->codes[part] = dw_gemm(a->ctx, p, c.col, a->dy, r, rows, first, dw);
    }
    if (first) {
      memset(dw, 0, (size_t)(g->k * g->cout) * p->esz);
    }
  }
}

/* Sums the parts' dW into out. */
static void sum_partials(const grad_plan *p, const char *partials,
                         int64_t parts, void *out) {
  int64_t n = p->g.k * p->g.cout;
  memcpy(out, partials, (size_t)n * p->esz);
  for (int64_t q = 1; q < parts; q++) {
    if (p->dt == TF_FLOAT64) {
      double *restrict o = out;
      const double *restrict s = (const double *)partials + q * n;
      for (int64_t i = 0; i < n; i++) o[i] += s[i];
    } else {
      float *restrict o = out;
      const float *restrict s = (const float *)partials + q * n;
      for (int64_t i = 0; i < n; i++) o[i] += s[i];
    }
  }
}

static tf_code filter_per_part(tf_kernel_ctx *ctx, const grad_plan *p,
                               const tf_tensor *in, const tf_tensor *dy,
                               tf_tensor *dw) {
  int64_t parts = TF_MIN((p->m + p->chunk - 1) / p->chunk,
                         (int64_t)tf_threadpool_size(ctx->pool));
  tf_tensor *bufs, *partials;
  TF_TRY(scratch(ctx, p->dt, parts * p->chunk, p->g.k, "im2col", &bufs));
  if (scratch(ctx, p->dt, parts * p->g.k, p->g.cout, "partial",
              &partials) != TF_OK) {
    tf_tensor_unref(bufs);
    return ctx->status->code;
  }
  tf_code *codes = tf__xcalloc((size_t)parts, sizeof *codes);
  filter_parts a = {.ctx = ctx, .p = p, .in = in->data, .dy = dy->data,
                    .bufs = bufs->data, .partials = partials->data,
                    .n_parts = parts, .codes = codes};
  tf_parallel_for(ctx->pool, parts, 1, filter_part, &a);
  tf_code code = TF_OK;
  for (int64_t i = 0; i < parts && code == TF_OK; i++) code = codes[i];
  if (code == TF_OK) {
    sum_partials(p, partials->data, parts, dw->data);
  }
  free(codes);
  tf_tensor_unref(bufs);
  tf_tensor_unref(partials);
  return code;
}

static tf_code filter_chunked(tf_kernel_ctx *ctx, const grad_plan *p,
                              const tf_tensor *in, const tf_tensor *dy,
                              tf_tensor *dw) {
  tf_tensor *buf;
  TF_TRY(scratch(ctx, p->dt, p->chunk, p->g.k, "im2col", &buf));
  tf__im2col_args c = {.g = &p->g, .in = in->data, .col = buf->data,
                       .esz = p->esz};
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / p->g.k);
  tf_code code = TF_OK;
  for (int64_t r = 0; r < p->m && code == TF_OK; r += p->chunk) {
    int64_t rows = TF_MIN(p->chunk, p->m - r);
    c.row0 = r;
    tf_parallel_for(ctx->pool, rows, grain, tf__im2col_rows, &c);
    code = dw_gemm(ctx, p, buf->data, dy->data, r, rows, r == 0, dw->data);
  }
  tf_tensor_unref(buf);
  return code;
}

/* dW = input viewed as [M, K], transposed, . dy. */
static tf_code filter_direct(tf_kernel_ctx *ctx, const grad_plan *p,
                             const tf_tensor *in, const tf_tensor *dy,
                             tf_tensor *dw) {
  for (int64_t r = 0; r < p->m; r += INT_MAX) {
    int64_t rows = TF_MIN(p->m - r, (int64_t)INT_MAX);
    TF_TRY(dw_gemm(ctx, p, (const char *)in->data +
                               (size_t)(r * p->g.k) * p->esz,
                   dy->data, r, rows, r == 0, dw->data));
  }
  return TF_OK;
}

static tf_code backprop_filter_kernel(tf_kernel_ctx *ctx) {
  const tf__conv_state *cs = ctx->state;
  const tf__nn_window *w = &cs->w;
  const tf_tensor *in = ctx->inputs[0], *dy = ctx->inputs[2];
  TF_TRY(check_float(ctx, 0, 2));
  tf_shape fs;
  TF_TRY(read_sizes(ctx, 1, "filter_sizes", NULL, &fs));
  grad_plan p = {.dt = in->dtype, .esz = tf_dtype_size(in->dtype)};
  TF_TRY(tf__conv_geometry(ctx, w, &in->shape, &fs, "input", "filter_sizes",
                           &p.g));
  TF_TRY(check_dy(ctx, &p.g, dy, "input", &in->shape));
  tf_tensor *dw;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, p.dt, &fs, &dw));
  if (tf__dnnl_conv_wanted(TF__DNNL_BWD_WEIGHTS, &p.g, p.dt)) {
    tf_code code = tf__dnnl_conv(ctx, cs->dnnl, TF__DNNL_BWD_WEIGHTS, &p.g,
                                 in->data, dy->data, dw->data);
    if (code != TF_UNIMPLEMENTED) {
      return code;
    }
  }
  TF_TRY(plan_chunks(&p, ctx));
  if (p.m == 0) {
    memset(dw->data, 0, dw->nbytes);
    return TF_OK;
  }
  if (tf__conv_is_direct(&p.g)) {
    return filter_direct(ctx, &p, in, dy, dw);
  }
  if (p.per_part) {
    return filter_per_part(ctx, &p, in, dy, dw);
  }
  return filter_chunked(ctx, &p, in, dy, dw);
}

#define GRAD_KERNEL(OP, DT, FN)                                                \
  {.op = OP, .device_type = TF_DEVICE_CPU, .dtype = DT,                        \
   .init = tf__conv_init, .compute = FN,                                  \
   .free_state = tf__conv_free_state}

static const tf_kernel_def conv_grad_kernels[] = {
    GRAD_KERNEL("Conv2DBackpropInput", TF_FLOAT32, backprop_input_kernel),
    GRAD_KERNEL("Conv2DBackpropInput", TF_FLOAT64, backprop_input_kernel),
    GRAD_KERNEL("Conv2DBackpropFilter", TF_FLOAT32, backprop_filter_kernel),
    GRAD_KERNEL("Conv2DBackpropFilter", TF_FLOAT64, backprop_filter_kernel),
};

TF_REGISTER_KERNELS(conv_grad_kernels)
