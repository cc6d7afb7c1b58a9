/* cpu_conv_dnnl.c: Conv2D and its two backprops in float32 through
 * oneDNN's C API (see cpu_conv_dnnl.h).
 *
 * Activations are passed as dnnl_nhwc and filters as dnnl_hwio (TF's
 * layouts, no copies); the convolution primitive picks its own (blocked)
 * weights format (format tag any) and a reorder primitive converts the
 * filter into it (forward, backward-data) or the filter gradient out of it
 * (backward-weights) through a per-call buffer. TF's padding (SAME's
 * before-amounts come from the geometry) becomes oneDNN's explicit
 * padding_l and padding_r.
 *
 * Threads: one process-wide CPU engine (engines are thread-safe); a
 * stream per call (streams are not; creating one costs microseconds);
 * primitives cached per (kind, geometry) in the kernel state under a
 * mutex, entries never evicted while the state lives, so a found entry can
 * run outside the lock; oneDNN is built with concurrent execution, so one
 * primitive may run on several threads at once. The build's oneDNN uses
 * OpenMP for its own threads. */
#ifdef TF_HAVE_DNNL

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <omp.h>

#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_conv_dnnl.h"

/* Geometries kept per kernel state; more are built and freed per call. */
#define DNNL_CACHE_CAP 8

typedef struct dnnl_entry {
  tf__dnnl_conv_kind kind;
  tf__conv_geom g;
  dnnl_primitive_t conv;
  dnnl_primitive_t reorder;      /* NULL when the filter is used as is */
  dnnl_memory_desc_t user_w;     /* HWIO */
  dnnl_memory_desc_t prim_w;     /* the primitive's weights format */
} dnnl_entry;

struct tf__dnnl_cache {
  pthread_mutex_t mu;
  int n;
  dnnl_entry *e[DNNL_CACHE_CAP];
};

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void) {
  g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
}

tf__dnnl_cache *tf__dnnl_cache_new(void) {
  tf__dnnl_cache *c = tf__xcalloc(1, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

static void entry_free(dnnl_entry *e) {
  if (e == NULL) {
    return;
  }
  if (e->conv) {
    dnnl_primitive_destroy(e->conv);
  }
  if (e->reorder) {
    dnnl_primitive_destroy(e->reorder);
  }
  free(e);
}

void tf__dnnl_cache_free(tf__dnnl_cache *c) {
  if (c == NULL) {
    return;
  }
  for (int i = 0; i < c->n; i++) {
    entry_free(c->e[i]);
  }
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* Backward-data into fewer input channels than this stays on im2col:
 * oneDNN's kernel for one channel (a first layer's, usually not needed)
 * measured 9-20 ms against 5-6 ms for col2im (5x5x1x32 on 28x28, batch
 * 64). */
#define DNNL_BWD_DATA_MIN_CIN 4

bool tf__dnnl_conv_wanted(tf__dnnl_conv_kind kind, const tf__conv_geom *g,
                          tf_dtype dt) {
  const char *env = getenv("TF_DISABLE_DNNL");
  if (env != NULL && strcmp(env, "1") == 0) {
    return false;
  }
  if (kind == TF__DNNL_BWD_DATA && g->cin < DNNL_BWD_DATA_MIN_CIN) {
    return false;
  }
  return dt == TF_FLOAT32 && g->dh == 1 && g->dw == 1 && g->n > 0 &&
         g->oh > 0 && g->ow > 0 && g->cin > 0 && g->cout > 0;
}

/* ---- primitive creation ----------------------------------------------------- */

typedef struct conv_descs {
  dnnl_memory_desc_t src, dst, w_any;
  dnnl_dims_t strides, pad_l, pad_r;
} conv_descs;

/* Padding after the image so that oneDNN's output size equals TF's; false
 * when no non-negative amount does. */
static bool pad_after(int64_t in, int64_t k, int64_t s, int64_t before,
                      int64_t out, int64_t *after) {
  int64_t a = TF_MAX(0, (out - 1) * s + k - in - before);
  *after = a;
  return (in + before + a - k) / s + 1 == out;
}

static bool make_descs(const tf__conv_geom *g, conv_descs *d) {
  int64_t pb, pr;
  if (!pad_after(g->h, g->kh, g->sh, g->pt, g->oh, &pb) ||
      !pad_after(g->w, g->kw, g->sw, g->pl, g->ow, &pr)) {
    return false;
  }
  dnnl_dims_t src = {g->n, g->cin, g->h, g->w};
  dnnl_dims_t dst = {g->n, g->cout, g->oh, g->ow};
  dnnl_dims_t w = {g->cout, g->cin, g->kh, g->kw};
  d->strides[0] = g->sh, d->strides[1] = g->sw;
  d->pad_l[0] = g->pt, d->pad_l[1] = g->pl;
  d->pad_r[0] = pb, d->pad_r[1] = pr;
  return dnnl_memory_desc_init_by_tag(&d->src, 4, src, dnnl_f32, dnnl_nhwc) ==
             dnnl_success &&
         dnnl_memory_desc_init_by_tag(&d->dst, 4, dst, dnnl_f32, dnnl_nhwc) ==
             dnnl_success &&
         dnnl_memory_desc_init_by_tag(&d->w_any, 4, w, dnnl_f32,
                                      dnnl_format_tag_any) == dnnl_success;
}

static dnnl_primitive_desc_t fwd_pd(const conv_descs *d) {
  dnnl_convolution_desc_t cd;
  dnnl_primitive_desc_t pd = NULL;
  if (dnnl_convolution_forward_desc_init(
          &cd, dnnl_forward_training, dnnl_convolution_direct, &d->src,
          &d->w_any, NULL, &d->dst, d->strides, d->pad_l, d->pad_r) !=
          dnnl_success ||
      dnnl_primitive_desc_create(&pd, &cd, NULL, g_engine, NULL) !=
          dnnl_success) {
    return NULL;
  }
  return pd;
}

/* The primitive descriptor of kind (the backward ones hinted by the
 * forward one), or NULL. */
static dnnl_primitive_desc_t kind_pd(tf__dnnl_conv_kind kind,
                                     const conv_descs *d) {
  dnnl_primitive_desc_t hint = fwd_pd(d);
  if (hint == NULL || kind == TF__DNNL_FWD) {
    return hint;
  }
  dnnl_convolution_desc_t cd;
  dnnl_status_t s;
  if (kind == TF__DNNL_BWD_DATA) {
    s = dnnl_convolution_backward_data_desc_init(
        &cd, dnnl_convolution_direct, &d->src, &d->w_any, &d->dst, d->strides,
        d->pad_l, d->pad_r);
  } else {
    s = dnnl_convolution_backward_weights_desc_init(
        &cd, dnnl_convolution_direct, &d->src, &d->w_any, NULL, &d->dst,
        d->strides, d->pad_l, d->pad_r);
  }
  dnnl_primitive_desc_t pd = NULL;
  if (s != dnnl_success ||
      dnnl_primitive_desc_create(&pd, &cd, NULL, g_engine, hint) !=
          dnnl_success) {
    pd = NULL;
  }
  dnnl_primitive_desc_destroy(hint);
  return pd;
}

/* The reorder between the user's HWIO filter and the primitive's format
 * (into it, or out of it for backward-weights); NULL reorder when equal. */
static bool make_reorder(dnnl_entry *e) {
  if (dnnl_memory_desc_equal(&e->user_w, &e->prim_w)) {
    return true;
  }
  bool out = e->kind == TF__DNNL_BWD_WEIGHTS;
  const dnnl_memory_desc_t *from = out ? &e->prim_w : &e->user_w;
  const dnnl_memory_desc_t *to = out ? &e->user_w : &e->prim_w;
  dnnl_primitive_desc_t rpd;
  if (dnnl_reorder_primitive_desc_create(&rpd, from, g_engine, to, g_engine,
                                         NULL) != dnnl_success) {
    return false;
  }
  bool ok = dnnl_primitive_create(&e->reorder, rpd) == dnnl_success;
  dnnl_primitive_desc_destroy(rpd);
  return ok;
}

/* A new entry for (kind, g), or NULL when oneDNN cannot build it. */
static dnnl_entry *entry_new(tf__dnnl_conv_kind kind, const tf__conv_geom *g) {
  conv_descs d;
  if (!make_descs(g, &d)) {
    return NULL;
  }
  dnnl_primitive_desc_t pd = kind_pd(kind, &d);
  if (pd == NULL) {
    return NULL;
  }
  dnnl_entry *e = tf__xcalloc(1, sizeof *e);
  e->kind = kind;
  e->g = *g;
  dnnl_query_t q = kind == TF__DNNL_BWD_WEIGHTS ? dnnl_query_diff_weights_md
                                                : dnnl_query_weights_md;
  e->prim_w = *dnnl_primitive_desc_query_md(pd, q, 0);
  dnnl_dims_t w = {g->cout, g->cin, g->kh, g->kw};
  bool ok = dnnl_memory_desc_init_by_tag(&e->user_w, 4, w, dnnl_f32,
                                         dnnl_hwio) == dnnl_success &&
            dnnl_primitive_create(&e->conv, pd) == dnnl_success &&
            make_reorder(e);
  dnnl_primitive_desc_destroy(pd);
  if (!ok) {
    entry_free(e);
    return NULL;
  }
  return e;
}

/* The cached entry for (kind, g), built on a miss; *owned is set when the
 * cache is full and the caller must free the entry. */
static dnnl_entry *entry_get(tf__dnnl_cache *c, tf__dnnl_conv_kind kind,
                             const tf__conv_geom *g, bool *owned) {
  *owned = false;
  pthread_mutex_lock(&c->mu);
  dnnl_entry *e = NULL;
  for (int i = 0; i < c->n && e == NULL; i++) {
    if (c->e[i]->kind == kind && memcmp(&c->e[i]->g, g, sizeof *g) == 0) {
      e = c->e[i];
    }
  }
  if (e == NULL) {
    e = entry_new(kind, g);
    if (e != NULL && c->n < DNNL_CACHE_CAP) {
      c->e[c->n++] = e;
    } else {
      *owned = e != NULL;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return e;
}

/* ---- execution --------------------------------------------------------------- */

typedef struct exec_mems {
  dnnl_memory_t m[4]; /* a, b, out, reordered weights */
  void *wbuf;
} exec_mems;

static void mems_free(exec_mems *x) {
  for (int i = 0; i < 4; i++) {
    if (x->m[i]) {
      dnnl_memory_destroy(x->m[i]);
    }
  }
  free(x->wbuf);
}

/* Memory objects over the caller's buffers; m[3] the primitive-format
 * weights buffer when a reorder is needed. */
static bool make_mems(const dnnl_entry *e, const conv_descs *d, const float *a,
                      const float *b, float *out, exec_mems *x) {
  const dnnl_memory_desc_t *md[3];
  switch (e->kind) {
  case TF__DNNL_FWD:
    md[0] = &d->src, md[1] = &e->user_w, md[2] = &d->dst;
    break;
  case TF__DNNL_BWD_DATA:
    md[0] = &d->dst, md[1] = &e->user_w, md[2] = &d->src;
    break;
  default:
    md[0] = &d->src, md[1] = &d->dst, md[2] = &e->user_w;
    break;
  }
  void *h[3] = {(void *)a, (void *)b, out};
  for (int i = 0; i < 3; i++) {
    if (dnnl_memory_create(&x->m[i], md[i], g_engine, h[i]) != dnnl_success) {
      return false;
    }
  }
  if (e->reorder == NULL) {
    return true;
  }
  size_t bytes = dnnl_memory_desc_get_size(&e->prim_w);
  if (posix_memalign(&x->wbuf, 64, TF_MAX(bytes, (size_t)64)) != 0) {
    x->wbuf = NULL;
    return false;
  }
  return dnnl_memory_create(&x->m[3], &e->prim_w, g_engine, x->wbuf) ==
         dnnl_success;
}

static dnnl_status_t run_reorder(dnnl_stream_t s, dnnl_primitive_t r,
                                 dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return dnnl_primitive_execute(r, s, 2, args);
}

/* Runs e on x's memories in stream s. */
static dnnl_status_t run_entry(const dnnl_entry *e, dnnl_stream_t s,
                               const exec_mems *x) {
  dnnl_memory_t w = e->reorder ? x->m[3] : NULL;
  dnnl_exec_arg_t args[3];
  dnnl_status_t st = dnnl_success;
  if (e->kind == TF__DNNL_BWD_WEIGHTS) {
    args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, x->m[0]};
    args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, x->m[1]};
    args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, w ? w : x->m[2]};
    st = dnnl_primitive_execute(e->conv, s, 3, args);
    if (st == dnnl_success && w) {
      st = run_reorder(s, e->reorder, w, x->m[2]);
    }
    return st;
  }
  if (w) {
    st = run_reorder(s, e->reorder, x->m[1], w);
  }
  bool fwd = e->kind == TF__DNNL_FWD;
  args[0] = (dnnl_exec_arg_t){fwd ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, x->m[0]};
  args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w ? w : x->m[1]};
  args[2] = (dnnl_exec_arg_t){fwd ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, x->m[2]};
  if (st == dnnl_success) {
    st = dnnl_primitive_execute(e->conv, s, 3, args);
  }
  return st;
}

tf_code tf__dnnl_conv(tf_kernel_ctx *ctx, tf__dnnl_cache *c,
                      tf__dnnl_conv_kind kind, const tf__conv_geom *g,
                      const float *a, const float *b, float *out) {
  pthread_once(&g_engine_once, engine_init);
  conv_descs d;
  if (g_engine_status != dnnl_success || !make_descs(g, &d)) {
    return TF_UNIMPLEMENTED;
  }
  /* oneDNN on this thread only (OpenMP's setting is per thread). */
  int omp_threads = omp_get_max_threads();
  omp_set_num_threads(1);
  bool owned;
  dnnl_entry *e = entry_get(c, kind, g, &owned);
  if (e == NULL) {
    omp_set_num_threads(omp_threads);
    return TF_UNIMPLEMENTED;
  }
  exec_mems x = {0};
  dnnl_stream_t s = NULL;
  const char *what = "dnnl_memory_create";
  dnnl_status_t st = dnnl_runtime_error;
  if (make_mems(e, &d, a, b, out, &x)) {
    what = "dnnl_stream_create";
    st = dnnl_stream_create(&s, g_engine, dnnl_stream_default_flags);
  }
  if (st == dnnl_success) {
    what = "dnnl_primitive_execute";
    st = run_entry(e, s, &x);
  }
  if (st == dnnl_success) {
    what = "dnnl_stream_wait";
    st = dnnl_stream_wait(s);
  }
  if (s) {
    dnnl_stream_destroy(s);
  }
  mems_free(&x);
  if (owned) {
    entry_free(e);
  }
  omp_set_num_threads(omp_threads);
  if (st != dnnl_success) {
    return tf_kernel_error(ctx, TF_INTERNAL, "oneDNN convolution: %s failed "
                           "(status %d)", what, (int)st);
  }
  return TF_OK;
}

#endif
