/* cpu_depthwise.c: the CPU kernels of DepthwiseConv2dNative and its two
 * backprops, DepthwiseConv2dNativeBackpropInput and ...BackpropFilter
 * (NHWC, float32 and float64). They share the geometry, the line cache
 * and the inner loop, so they live in one file.
 *
 * With C input channels and multiplier M, output channel k = c * M + m is
 * input channel c convolved with filter[:, :, c, m]. The filter [KH, KW, C,
 * M] is read as [KH, KW, C*M], so each filter tap multiplies one input
 * pixel's channels, each repeated M times, element by element. When M > 1
 * input lines are first expanded to [W, C*M] in a small per-thread cache
 * (each line expanded about once). Every kernel then reduces to one inner
 * operation, dw_dots: out[k] (=, or +=) sum over a list of pointer pairs
 * (a_t, b_t) of a_t[k] * b_t[k], for k over the C*M contiguous channels,
 * computed by blocks of channels held in vector registers (GCC vector
 * extensions; unaligned loads), so each multiply-add costs two loads and
 * the result is stored once.
 *   forward: per output pixel, the pairs are (input pixel, filter tap) of
 *     its valid taps; output rows (b, oh) are split over the pool.
 *   input gradient: per input pixel, the pairs are (dy pixel, filter tap)
 *     of every output pixel whose window covers it (a gather, so input
 *     lines split over the pool without write conflicts), then summed over
 *     the multiplier.
 *   filter gradient: per output row and filter tap, the pairs are (input
 *     pixel, dy pixel) along the row, added into the tap; output rows are
 *     split into one part per pool thread, each with its own partial
 *     filter, and the parts are summed at the end.
 * Window arithmetic is TF's (ops_nn.h, attrs parsed by cpu_conv.h's
 * tf__conv_init, which refuses NCHW as TF's CPU kernels do). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_conv.h"

typedef struct dw_geom {
  int64_t n, h, w, c, m, oc; /* input [N, H, W, C]; oc = C * M */
  int64_t kh, kw;            /* filter [KH, KW, C, M] */
  int64_t oh, ow;            /* output [N, OH, OW, OC] */
  int64_t sh, sw, dh, dw, pt, pl;
} dw_geom;

/* Checks input and filter and computes the output geometry. */
static tf_code dw_geometry(tf_kernel_ctx *ctx, const tf__nn_window *w,
                           const tf_shape *in, const tf_shape *f,
                           dw_geom *g) {
  char a[128], b[128];
  tf_shape_str(in, a, sizeof a);
  tf_shape_str(f, b, sizeof b);
  if (in->rank != 4 || f->rank != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input and filter must be rank 4, got input %s "
                           "and filter %s", a, b);
  }
  const int64_t *id = in->dims, *fd = f->dims;
  if (id[3] != fd[2]) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input depth %lld does not match filter "
                           "in_channels (dimension 2) %lld (input %s, filter "
                           "%s)", (long long)id[3], (long long)fd[2], a, b);
  }
  if (fd[0] == 0 || fd[1] == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "filter must have non-zero rows and cols, got %s",
                           b);
  }
  *g = (dw_geom){.n = id[0], .h = id[1], .w = id[2], .c = id[3], .m = fd[3],
                 .oc = id[3] * fd[3], .kh = fd[0], .kw = fd[1],
                 .sh = w->strides[1], .sw = w->strides[2],
                 .dh = w->dilations[1], .dw = w->dilations[2]};
  tf_status st;
  if (tf__nn_out_size("rows", g->h, g->kh, g->dh, g->sh, w->padding,
                      w->pads[2], w->pads[3], &g->oh, &g->pt, &st) != TF_OK ||
      tf__nn_out_size("cols", g->w, g->kw, g->dw, g->sw, w->padding,
                      w->pads[4], w->pads[5], &g->ow, &g->pl, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return TF_OK;
}

/* ---- expanded input lines ------------------------------------------------ */

/* Input lines expanded to [W, C*M] (each channel M times), cached per
 * thread: slot ih % slots holds line tag[slot] (flat b * H + ih). A
 * window of one output row spans (KH - 1) * DH + 1 consecutive lines, so
 * with that many slots the lines of one row never evict each other, and
 * consecutive rows reuse the lines they share: each line is expanded about
 * once. With M == 1 the input line is used as it is. */
typedef struct dw_cache {
  char *buf;
  int64_t *tag;
  int64_t slots;
} dw_cache;

static void dw_cache_init(dw_cache *c, const dw_geom *g, size_t esz) {
  c->slots = g->m > 1 ? (g->kh - 1) * g->dh + 1 : 0;
  c->buf = c->slots ? tf__xmalloc(esz * (size_t)(c->slots * g->w * g->oc))
                    : NULL;
  c->tag = c->slots ? tf__xmalloc(sizeof(int64_t) * (size_t)c->slots) : NULL;
  for (int64_t i = 0; i < c->slots; i++) c->tag[i] = -1;
}

static void dw_cache_free(dw_cache *c) {
  free(c->buf);
  free(c->tag);
}

/* Input line l (flat b * H + ih), expanded when M > 1. */
#define DEFINE_DW_LINE(T)                                                    \
  static inline const T *dw_line_##T(const dw_geom *g, dw_cache *c,           \
                                     const T *in, int64_t l) {                 \
    const T *line = in + l * g->w * g->c;                                      \
    if (g->m == 1) {                                                           \
      return line;                                                             \
    }                                                                          \
    const int64_t slot = (l % g->h) % c->slots, n = g->w * g->c, m = g->m;     \
    T *buf = (T *)c->buf + slot * g->w * g->oc;                                \
    if (c->tag[slot] != l) {                                                   \
      c->tag[slot] = l;                                                        \
      for (int64_t i = 0; i < n; i++) {                                        \
        const T v = line[i];                                                   \
        for (int64_t j = 0; j < m; j++) buf[i * m + j] = v;                    \
      }                                                                        \
    }                                                                          \
    return buf;                                                                \
  }

DEFINE_DW_LINE(float)
DEFINE_DW_LINE(double)

/* ---- the inner loop ------------------------------------------------------ */

#define DW_VBYTES 64
typedef float dw_vec_float __attribute__((vector_size(DW_VBYTES)));
typedef double dw_vec_double __attribute__((vector_size(DW_VBYTES)));
typedef float dw_hvec_float __attribute__((vector_size(DW_VBYTES / 2)));
typedef double dw_hvec_double __attribute__((vector_size(DW_VBYTES / 2)));

/* out[k] (= or, when add, +=) sum over t < nt of a[t][k] * b[t][k] for k
 * in [0, n): blocks of four vectors, then single vectors, then one half
 * vector (8 float channels, common in small layers), then a scalar tail,
 * each block summed over all pairs in registers. */
#define DEFINE_DW_DOTS(T)                                                      \
  static inline dw_vec_##T dw_ld_##T(const T *p) {                            \
    dw_vec_##T v;                                                              \
    memcpy(&v, p, sizeof v);                                                   \
    return v;                                                                  \
  }                                                                            \
  static inline void dw_st_##T(T *p, dw_vec_##T v, bool add) {                \
    if (add) {                                                                 \
      v += dw_ld_##T(p);                                                       \
    }                                                                          \
    memcpy(p, &v, sizeof v);                                                   \
  }                                                                            \
  static void dw_dots_##T(const T *const *a, const T *const *b, int64_t nt,   \
                          int64_t n, T *out, bool add) {                       \
    const int64_t vl = (int64_t)(DW_VBYTES / sizeof(T));                       \
    int64_t k = 0;                                                             \
    for (; k + 4 * vl <= n; k += 4 * vl) {                                     \
      dw_vec_##T s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};                       \
      for (int64_t t = 0; t < nt; t++) {                                       \
        const T *x = a[t] + k, *y = b[t] + k;                                  \
        s0 += dw_ld_##T(x) * dw_ld_##T(y);                                     \
        s1 += dw_ld_##T(x + vl) * dw_ld_##T(y + vl);                           \
        s2 += dw_ld_##T(x + 2 * vl) * dw_ld_##T(y + 2 * vl);                   \
        s3 += dw_ld_##T(x + 3 * vl) * dw_ld_##T(y + 3 * vl);                   \
      }                                                                        \
      dw_st_##T(out + k, s0, add);                                             \
      dw_st_##T(out + k + vl, s1, add);                                        \
      dw_st_##T(out + k + 2 * vl, s2, add);                                    \
      dw_st_##T(out + k + 3 * vl, s3, add);                                    \
    }                                                                          \
    for (; k + vl <= n; k += vl) {                                             \
      dw_vec_##T s0 = {0};                                                     \
      for (int64_t t = 0; t < nt; t++) {                                       \
        s0 += dw_ld_##T(a[t] + k) * dw_ld_##T(b[t] + k);                       \
      }                                                                        \
      dw_st_##T(out + k, s0, add);                                             \
    }                                                                          \
    if (k + vl / 2 <= n) {                                                     \
      dw_hvec_##T h = {0}, x, y;                                               \
      for (int64_t t = 0; t < nt; t++) {                                       \
        memcpy(&x, a[t] + k, sizeof x);                                        \
        memcpy(&y, b[t] + k, sizeof y);                                        \
        h += x * y;                                                            \
      }                                                                        \
      for (int64_t i = 0; i < vl / 2; i++) {                                   \
        out[k + i] = (add ? out[k + i] : 0) + h[i];                            \
      }                                                                        \
      k += vl / 2;                                                             \
    }                                                                          \
    if (k < n) {                                                               \
      T acc[DW_VBYTES / sizeof(T)] = {0};                                      \
      const int64_t r = n - k;                                                 \
      for (int64_t t = 0; t < nt; t++) {                                       \
        const T *restrict x = a[t] + k, *restrict y = b[t] + k;                \
        for (int64_t i = 0; i < r; i++) acc[i] += x[i] * y[i];                 \
      }                                                                        \
      for (int64_t i = 0; i < r; i++) {                                        \
        out[k + i] = (add ? out[k + i] : 0) + acc[i];                          \
      }                                                                        \
    }                                                                          \
  }

DEFINE_DW_DOTS(float)
DEFINE_DW_DOTS(double)

/* Per-thread scratch: the line cache and the pair lists. */
typedef struct dw_scratch {
  dw_cache cache;
  const void **a, **b; /* pairs, max(KH * KW, OW) of each */
  const void **rows;   /* KH line pointers */
} dw_scratch;

static void dw_scratch_init(dw_scratch *s, const dw_geom *g, size_t esz) {
  size_t np = (size_t)TF_MAX(g->kh * g->kw, g->ow);
  dw_cache_init(&s->cache, g, esz);
  s->a = tf__xmalloc(sizeof(void *) * np);
  s->b = tf__xmalloc(sizeof(void *) * np);
  s->rows = tf__xmalloc(sizeof(void *) * (size_t)g->kh);
}

static void dw_scratch_free(dw_scratch *s) {
  dw_cache_free(&s->cache);
  free(s->a);
  free(s->b);
  free(s->rows);
}

/* ---- DepthwiseConv2dNative ----------------------------------------------- */

typedef struct dw_fwd_args {
  const dw_geom *g;
  const void *in, *f;
  void *out;
} dw_fwd_args;

/* Output row orow [OW, OC] from the (expanded) input lines of its taps
 * (lines[y] NULL where tap row y falls in the padding). */
#define DEFINE_DW_ROW(T)                                                       \
  static void dw_row_##T(const dw_geom *g, dw_scratch *sc, const T *f,        \
                         T *orow) {                                            \
    const T *const *lines = (const T *const *)sc->rows;                        \
    const T **pa = (const T **)sc->a, **pb = (const T **)sc->b;                \
    const int64_t oc = g->oc;                                                  \
    for (int64_t ow = 0; ow < g->ow; ow++) {                                   \
      const int64_t iw0 = ow * g->sw - g->pl;                                  \
      int64_t nt = 0;                                                          \
      for (int64_t y = 0; y < g->kh; y++) {                                    \
        for (int64_t x = 0; lines[y] != NULL && x < g->kw; x++) {              \
          const int64_t iw = iw0 + x * g->dw;                                  \
          if (iw >= 0 && iw < g->w) {                                          \
            pa[nt] = lines[y] + iw * oc;                                       \
            pb[nt++] = f + (y * g->kw + x) * oc;                               \
          }                                                                    \
        }                                                                      \
      }                                                                        \
      dw_dots_##T(pa, pb, nt, oc, orow + ow * oc, false);                      \
    }                                                                          \
  }

/* Output rows [begin, end) (flat b * OH + oh). */
#define DEFINE_DW_FWD(T)                                                       \
  DEFINE_DW_ROW(T)                                                             \
  static void dw_fwd_##T(void *arg, int64_t begin, int64_t end) {             \
    const dw_fwd_args *a = arg;                                                \
    const dw_geom g = *a->g;                                                   \
    dw_scratch sc;                                                             \
    dw_scratch_init(&sc, &g, sizeof(T));                                       \
    for (int64_t r = begin; r < end; r++) {                                    \
      const int64_t b = r / g.oh, oh = r % g.oh;                               \
      for (int64_t y = 0; y < g.kh; y++) {                                     \
        const int64_t ih = oh * g.sh - g.pt + y * g.dh;                        \
        sc.rows[y] = ih < 0 || ih >= g.h                                       \
                         ? NULL                                                \
                         : dw_line_##T(&g, &sc.cache, a->in, b * g.h + ih);    \
      }                                                                        \
      dw_row_##T(&g, &sc, a->f, (T *)a->out + r * g.ow * g.oc);                \
    }                                                                          \
    dw_scratch_free(&sc);                                                      \
  }

DEFINE_DW_FWD(float)
DEFINE_DW_FWD(double)

static tf_code depthwise_kernel(tf_kernel_ctx *ctx) {
  const tf__nn_window *w = ctx->state; /* a tf__conv_state's first member */
  const tf_tensor *in = ctx->inputs[0], *f = ctx->inputs[1];
  dw_geom g;
  TF_TRY(dw_geometry(ctx, w, &in->shape, &f->shape, &g));
  tf_shape os = tf_shape_of(4, g.n, g.oh, g.ow, g.oc);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  dw_fwd_args a = {.g = &g, .in = in->data, .f = f->data, .out = out->data};
  int64_t row_cost = TF_MAX(1, g.ow * g.oc * g.kh * g.kw);
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / row_cost);
  tf_parallel_for(ctx->pool, g.n * g.oh, grain,
                  in->dtype == TF_FLOAT64 ? dw_fwd_double : dw_fwd_float, &a);
  return TF_OK;
}

/* ---- DepthwiseConv2dNativeBackpropInput ---------------------------------- */

/* Reads sizes input i (a vector of 4 non-negative values) into a shape. */
static tf_code dw_read_sizes(tf_kernel_ctx *ctx, int i, const char *name,
                             tf_shape *out) {
  const tf_tensor *t = ctx->inputs[i];
  char b[128];
  if (t->shape.rank != 1 || t->n != 4) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be a vector of 4 values, got shape %s",
                           name, tf_shape_str(&t->shape, b, sizeof b));
  }
  int64_t v[4];
  for (int64_t k = 0; k < 4; k++) {
    v[k] = tf_tensor_get_i64(t, k);
    if (v[k] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s[%lld] = %lld is negative", name, (long long)k,
                             (long long)v[k]);
    }
  }
  *out = tf_shape_make(4, v);
  return TF_OK;
}

/* Checks the operands' dtypes and that out_backprop (input 2) has the
 * forward output's shape for geometry g. */
static tf_code dw_check_grad_operands(tf_kernel_ctx *ctx, int other,
                                      const dw_geom *g) {
  const tf_tensor *dy = ctx->inputs[2];
  tf_dtype a = ctx->inputs[other]->dtype;
  if (a != dy->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "operands must have the same dtype, got %s and "
                           "out_backprop %s", tf_dtype_name(a),
                           tf_dtype_name(dy->dtype));
  }
  tf_shape want = tf_shape_of(4, g->n, g->oh, g->ow, g->oc);
  if (!tf_shape_equal(&dy->shape, &want)) {
    char s1[128], s2[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "out_backprop has shape %s but the forward output "
                           "has shape %s",
                           tf_shape_str(&dy->shape, s1, sizeof s1),
                           tf_shape_str(&want, s2, sizeof s2));
  }
  return TF_OK;
}

typedef struct dw_bwd_args {
  const dw_geom *g;
  const void *a;  /* filter (input grad) or input (filter grad) */
  const void *dy; /* [N, OH, OW, OC] */
  void *out;      /* dx [N, H, W, C], or per-part dW [parts, KH*KW*OC] */
  int64_t rows, n_parts; /* filter grad: output rows split in parts */
} dw_bwd_args;

/* dx pixel iw of the line whose dy rows are sc->rows[y] (NULL where tap
 * row y reaches no output row): out [OC] = the sum over taps (y, x) of dy
 * * filter. */
#define DEFINE_DW_INPUT_PIXEL(T)                                               \
  static void dw_input_pixel_##T(const dw_geom *g, dw_scratch *sc,            \
                                 const T *f, int64_t iw, T *out) {             \
    const T *const *rows = (const T *const *)sc->rows;                         \
    const T **pa = (const T **)sc->a, **pb = (const T **)sc->b;                \
    int64_t nt = 0;                                                            \
    for (int64_t y = 0; y < g->kh; y++) {                                      \
      for (int64_t x = 0; rows[y] != NULL && x < g->kw; x++) {                 \
        const int64_t t = iw + g->pl - x * g->dw;                              \
        if (t >= 0 && t % g->sw == 0 && t / g->sw < g->ow) {                   \
          pa[nt] = rows[y] + (t / g->sw) * g->oc;                              \
          pb[nt++] = f + (y * g->kw + x) * g->oc;                              \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    dw_dots_##T(pa, pb, nt, g->oc, out, false);                                \
  }

/* Input lines [begin, end) (flat b * H + ih) of dx; with M > 1 each
 * pixel's [OC] sums are added over the multiplier. */
#define DEFINE_DW_BWD_INPUT(T)                                                 \
  DEFINE_DW_INPUT_PIXEL(T)                                                     \
  static void dw_bwd_input_##T(void *arg, int64_t begin, int64_t end) {       \
    const dw_bwd_args *a = arg;                                                \
    const dw_geom g = *a->g;                                                   \
    dw_scratch sc;                                                             \
    dw_scratch_init(&sc, &g, sizeof(T));                                       \
    T *tmp = g.m > 1 ? tf__xmalloc(sizeof(T) * (size_t)g.oc) : NULL;          \
    for (int64_t l = begin; l < end; l++) {                                    \
      const int64_t b = l / g.h, ih = l % g.h;                                 \
      for (int64_t y = 0; y < g.kh; y++) {                                     \
        const int64_t t = ih + g.pt - y * g.dh;                                \
        sc.rows[y] = t < 0 || t % g.sh != 0 || t / g.sh >= g.oh                \
                         ? NULL                                                \
                         : (const T *)a->dy +                                  \
                               (b * g.oh + t / g.sh) * g.ow * g.oc;            \
      }                                                                        \
      for (int64_t iw = 0; iw < g.w; iw++) {                                   \
        T *dxp = (T *)a->out + (l * g.w + iw) * g.c;                           \
        dw_input_pixel_##T(&g, &sc, a->a, iw, tmp ? tmp : dxp);                \
        for (int64_t i = 0; tmp != NULL && i < g.c; i++) {                     \
          T s = 0;                                                             \
          for (int64_t j = 0; j < g.m; j++) s += tmp[i * g.m + j];             \
          dxp[i] = s;                                                          \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    free(tmp);                                                                 \
    dw_scratch_free(&sc);                                                      \
  }

DEFINE_DW_BWD_INPUT(float)
DEFINE_DW_BWD_INPUT(double)

static tf_code depthwise_backprop_input_kernel(tf_kernel_ctx *ctx) {
  const tf__nn_window *w = ctx->state;
  const tf_tensor *f = ctx->inputs[1], *dy = ctx->inputs[2];
  tf_shape is;
  dw_geom g;
  TF_TRY(dw_read_sizes(ctx, 0, "input_sizes", &is));
  TF_TRY(dw_geometry(ctx, w, &is, &f->shape, &g));
  TF_TRY(dw_check_grad_operands(ctx, 1, &g));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, f->dtype, &is, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  dw_bwd_args a = {.g = &g, .a = f->data, .dy = dy->data, .out = out->data};
  int64_t line_cost = TF_MAX(1, g.ow * g.oc * g.kh * g.kw / g.sh);
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / line_cost);
  tf_parallel_for(ctx->pool, g.n * g.h, grain,
                  f->dtype == TF_FLOAT64 ? dw_bwd_input_double
                                         : dw_bwd_input_float, &a);
  return TF_OK;
}

/* ---- DepthwiseConv2dNativeBackpropFilter --------------------------------- */

/* acc [KW, OC] (filter row y) += input line src (expanded) times dy row
 * dyrow, summed along the row for each tap x. */
#define DEFINE_DW_FILTER_ROW(T)                                                \
  static void dw_filter_row_##T(const dw_geom *g, dw_scratch *sc,             \
                                const T *src, const T *dyrow, T *acc) {        \
    const T **pa = (const T **)sc->a, **pb = (const T **)sc->b;                \
    for (int64_t x = 0; x < g->kw; x++) {                                      \
      int64_t nt = 0;                                                          \
      for (int64_t ow = 0; ow < g->ow; ow++) {                                 \
        const int64_t iw = ow * g->sw - g->pl + x * g->dw;                     \
        if (iw >= 0 && iw < g->w) {                                            \
          pa[nt] = src + iw * g->oc;                                           \
          pb[nt++] = dyrow + ow * g->oc;                                       \
        }                                                                      \
      }                                                                        \
      dw_dots_##T(pa, pb, nt, g->oc, acc + x * g->oc, true);                   \
    }                                                                          \
  }

/* Parts [begin, end): part p sums the output rows of its share into its
 * own partial dW (a->out + p * KH*KW*OC). */
#define DEFINE_DW_BWD_FILTER(T)                                                \
  DEFINE_DW_FILTER_ROW(T)                                                      \
  static void dw_bwd_filter_##T(void *arg, int64_t begin, int64_t end) {      \
    const dw_bwd_args *a = arg;                                                \
    const dw_geom g = *a->g;                                                   \
    const int64_t kf = g.kh * g.kw * g.oc;                                     \
    dw_scratch sc;                                                             \
    dw_scratch_init(&sc, &g, sizeof(T));                                       \
    for (int64_t p = begin; p < end; p++) {                                    \
      T *acc = (T *)a->out + p * kf;                                           \
      memset(acc, 0, sizeof(T) * (size_t)kf);                                  \
      int64_t r1 = a->rows * (p + 1) / a->n_parts;                             \
      for (int64_t r = a->rows * p / a->n_parts; r < r1; r++) {                \
        const int64_t b = r / g.oh, oh = r % g.oh;                             \
        for (int64_t y = 0; y < g.kh; y++) {                                   \
          const int64_t ih = oh * g.sh - g.pt + y * g.dh;                      \
          if (ih < 0 || ih >= g.h) {                                           \
            continue;                                                          \
          }                                                                    \
          dw_filter_row_##T(&g, &sc,                                           \
                            dw_line_##T(&g, &sc.cache, a->a, b * g.h + ih),    \
                            (const T *)a->dy + r * g.ow * g.oc,                \
                            acc + y * g.kw * g.oc);                            \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    dw_scratch_free(&sc);                                                      \
  }

DEFINE_DW_BWD_FILTER(float)
DEFINE_DW_BWD_FILTER(double)

/* out[i] = sum over parts of part[p][i], in the output's dtype. */
static void dw_sum_parts(tf_dtype dt, const void *parts, int64_t n_parts,
                         int64_t kf, void *out) {
  for (int64_t i = 0; i < kf; i++) {
    double s = 0;
    for (int64_t p = 0; p < n_parts; p++) {
      s += dt == TF_FLOAT64 ? ((const double *)parts)[p * kf + i]
                            : ((const float *)parts)[p * kf + i];
    }
    if (dt == TF_FLOAT64) {
      ((double *)out)[i] = s;
    } else {
      ((float *)out)[i] = (float)s;
    }
  }
}

static tf_code depthwise_backprop_filter_kernel(tf_kernel_ctx *ctx) {
  const tf__nn_window *w = ctx->state;
  const tf_tensor *in = ctx->inputs[0], *dy = ctx->inputs[2];
  tf_shape fs;
  dw_geom g;
  TF_TRY(dw_read_sizes(ctx, 1, "filter_sizes", &fs));
  TF_TRY(dw_geometry(ctx, w, &in->shape, &fs, &g));
  TF_TRY(dw_check_grad_operands(ctx, 0, &g));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, in->dtype, &fs, &out));
  int64_t kf = out->n, rows = g.n * g.oh;
  if (kf == 0) {
    return TF_OK;
  }
  double work = (double)rows * (double)(g.ow * kf);
  int64_t n_parts = TF_MIN((int64_t)tf_threadpool_size(ctx->pool),
                           TF_MAX(1, (int64_t)(work / TF_PARALLEL_GRAIN)));
  n_parts = TF_MAX(1, TF_MIN(n_parts, rows));
  tf_tensor *parts = NULL;
  if (n_parts > 1) {
    tf_shape ps = tf_shape_of(2, n_parts, kf);
    tf_status st;
    if (tf_tensor_new(in->dtype, &ps, &parts, &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "partial sums: %s", st.msg);
    }
  }
  dw_bwd_args a = {.g = &g, .a = in->data, .dy = dy->data,
                   .out = parts ? parts->data : out->data, .rows = rows,
                   .n_parts = n_parts};
  tf_parallel_for(ctx->pool, n_parts, 1,
                  in->dtype == TF_FLOAT64 ? dw_bwd_filter_double
                                          : dw_bwd_filter_float, &a);
  if (parts != NULL) {
    dw_sum_parts(in->dtype, parts->data, n_parts, kf, out->data);
    tf_tensor_unref(parts);
  }
  return TF_OK;
}

/* ---- registration -------------------------------------------------------- */

#define DW_KERNEL(name, fn, dt)                                                \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = dt,                      \
   .init = tf__conv_init, .compute = fn, .free_state = tf__conv_free_state}

static const tf_kernel_def depthwise_kernels[] = {
    DW_KERNEL("DepthwiseConv2dNative", depthwise_kernel, TF_FLOAT32),
    DW_KERNEL("DepthwiseConv2dNative", depthwise_kernel, TF_FLOAT64),
    DW_KERNEL("DepthwiseConv2dNativeBackpropInput",
              depthwise_backprop_input_kernel, TF_FLOAT32),
    DW_KERNEL("DepthwiseConv2dNativeBackpropInput",
              depthwise_backprop_input_kernel, TF_FLOAT64),
    DW_KERNEL("DepthwiseConv2dNativeBackpropFilter",
              depthwise_backprop_filter_kernel, TF_FLOAT32),
    DW_KERNEL("DepthwiseConv2dNativeBackpropFilter",
              depthwise_backprop_filter_kernel, TF_FLOAT64),
};

TF_REGISTER_KERNELS(depthwise_kernels)
