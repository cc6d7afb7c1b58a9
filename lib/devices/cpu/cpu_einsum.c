/* cpu_einsum.c: CPU kernel of Einsum for float, double, int32 and int64.
 *
 * The equation is parsed once (einsum_spec.h) and resolved against the
 * input shapes each step. Every label gets one stride per operand: the sum
 * of the strides of the axes that carry it (a repeated label thus walks
 * the diagonal), or 0 on a size-1 "..." dim that broadcasts. One operand:
 * a strided walk over the output labels sums the labels not in the output.
 * Two operands, as TensorFlow does it: each is packed dense as
 * [batch, free, contracted] / [batch, contracted, free] (labels only it has
 * and the output lacks summed out while packing), a batched GEMM (OpenBLAS
 * through cpu_blas.h for floats, a wrapping loop for integers) forms
 * [batch, free0, free1], and a last walk permutes that into the output.
 * An operand already so laid out is used in place, and a product already
 * in output order is written straight into the output. Walks split over
 * the intra-op pool by output element, small GEMMs by batch (large ones
 * are threaded by the BLAS wrapper). Repeated output labels ("i->ii")
 * write the diagonal of a zeroed output. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/ops/einsum_spec.h"
#include "lib/devices/cpu/cpu_blas.h"

enum { WALK_MAX = 3 * TF_MAX_RANK };

/* dst[i] = sum over the r dims of src[i . src + r . rsrc] over the outer
 * index i (sizes size[0..n)), strides in elements. */
typedef struct walk {
  int n;
  int64_t size[WALK_MAX], src[WALK_MAX], dst[WALK_MAX];
  int nr;
  int64_t rsize[WALK_MAX], rsrc[WALK_MAX];
} walk;

static int64_t prod(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    p *= v[i];
  }
  return p;
}

/* Advances an odometer over dims size[0..n) (last fastest), moving the
 * offsets *a and *b (b may be NULL) by strides sa and sb. */
static void step(int n, const int64_t *size, int64_t *idx, const int64_t *sa,
                 int64_t *a, const int64_t *sb, int64_t *b) {
  for (int d = n - 1; d >= 0; d--) {
    idx[d]++;
    *a += sa[d];
    if (b != NULL) {
      *b += sb[d];
    }
    if (idx[d] < size[d]) {
      return;
    }
    *a -= sa[d] * size[d];
    if (b != NULL) {
      *b -= sb[d] * size[d];
    }
    idx[d] = 0;
  }
}

/* Outer offsets (src in *so, dst in *dof) and odometer of outer index i. */
static void walk_seek(const walk *w, int64_t i, int64_t *idx, int64_t *so,
                      int64_t *dof) {
  *so = 0;
  *dof = 0;
  for (int d = w->n - 1; d >= 0; d--) {
    idx[d] = i % w->size[d];
    i /= w->size[d];
    *so += idx[d] * w->src[d];
    *dof += idx[d] * w->dst[d];
  }
}

/* Outer elements [begin, end) of w. Integers sum in unsigned arithmetic
 * so overflow wraps, as in TF. */
#define DEFINE_WALK(name, T, ACC)                                              \
  static void name(const walk *w, const void *src_, void *dst_,              \
                   int64_t begin, int64_t end) {                               \
    const T *src = src_;                                                       \
    T *dst = dst_;                                                             \
    int64_t rtotal = prod(w->rsize, w->nr);                                    \
    int64_t idx[WALK_MAX] = {0}, so, dof;                                      \
    walk_seek(w, begin, idx, &so, &dof);                                       \
    for (int64_t it = begin; it < end; it++) {                                 \
      ACC acc = 0;                                                             \
      int64_t ridx[WALK_MAX] = {0}, ro = 0;                                    \
      for (int64_t r = 0; r < rtotal; r++) {                                   \
        acc += (ACC)src[so + ro];                                              \
        step(w->nr, w->rsize, ridx, w->rsrc, &ro, NULL, NULL);                 \
      }                                                                        \
      dst[dof] = (T)acc;                                                       \
      step(w->n, w->size, idx, w->src, &so, w->dst, &dof);                     \
    }                                                                          \
  }

DEFINE_WALK(walk_f32, float, double)
DEFINE_WALK(walk_f64, double, double)
DEFINE_WALK(walk_i32, int32_t, uint32_t)
DEFINE_WALK(walk_i64, int64_t, uint64_t)

typedef struct walk_job {
  tf_dtype dt;
  const walk *w;
  const void *src;
  void *dst;
} walk_job;

static void walk_chunk(void *arg, int64_t begin, int64_t end) {
  const walk_job *j = arg;
  switch (j->dt) {
  case TF_FLOAT32:
    walk_f32(j->w, j->src, j->dst, begin, end);
    break;
  case TF_FLOAT64:
    walk_f64(j->w, j->src, j->dst, begin, end);
    break;
  case TF_INT32:
    walk_i32(j->w, j->src, j->dst, begin, end);
    break;
  case TF_INT64:
    walk_i64(j->w, j->src, j->dst, begin, end);
    break;
  default:
    TF_PANIC("einsum walk: unexpected dtype %s", tf_dtype_name(j->dt));
  }
}

/* Runs w over all its outer elements, split over pool when large (each
 * chunk writes its own output elements: distinct outer indices reach
 * distinct destinations). */
static void run_walk(tf_threadpool *pool, tf_dtype dt, const walk *w,
                     const void *src, void *dst) {
  walk_job j = {dt, w, src, dst};
  int64_t total = prod(w->size, w->n);
  if (total == 0) {
    return;
  }
  int64_t per = TF_MAX((int64_t)1, prod(w->rsize, w->nr));
  tf_parallel_for(pool, total, TF_MAX((int64_t)1, TF_PARALLEL_GRAIN / per), walk_chunk, &j);
}

/* ---- labels and strides --------------------------------------------------- */

typedef struct einsum_state {
  char *text;
  tf__einsum_eq eq;
} einsum_state;

/* Per-label strides of the operands and of the output. */
typedef struct strides {
  int64_t in[2][TF__EINSUM_LABELS];
  int64_t out[TF__EINSUM_LABELS];
} strides;

static void label_strides(const tf__einsum_dims *d, tf_tensor *const *in,
                          int n_in, strides *s) {
  memset(s, 0, sizeof(*s));
  for (int i = 0; i < n_in; i++) {
    int64_t st = 1;
    for (int a = d->rank[i] - 1; a >= 0; a--) {
      int label = d->axis[i][a];
      int64_t dim = in[i]->shape.dims[a];
      if (!(dim == 1 && d->size[label] != 1)) {
        s->in[i][label] += st;
      }
      st *= dim;
    }
  }
  int64_t st = 1;
  for (int a = d->out_rank - 1; a >= 0; a--) {
    s->out[d->out_axis[a]] += st;
    st *= d->out_shape.dims[a];
  }
}

/* Appends label to w's outer dims (src stride from s, dst stride given). */
static void add_outer(walk *w, const tf__einsum_dims *d, int label,
                      int64_t src, int64_t dst) {
  w->size[w->n] = d->size[label];
  w->src[w->n] = src;
  w->dst[w->n] = dst;
  w->n++;
}

/* Adds, as summed dims, the labels of operand i in no other operand and
 * not in the output. */
static void add_reduced(walk *w, const tf__einsum_dims *d, const strides *s,
                        int i) {
  for (int l = 0; l < TF__EINSUM_LABELS; l++) {
    if (d->use[l] == (1u << i)) {
      w->rsize[w->nr] = d->size[l];
      w->rsrc[w->nr] = s->in[i][l];
      w->nr++;
    }
  }
}

/* Whether some output label repeats (the output is then a diagonal). */
static bool out_repeats(const tf__einsum_dims *d) {
  for (int a = 0; a < d->out_rank; a++) {
    for (int b = a + 1; b < d->out_rank; b++) {
      if (d->out_axis[a] == d->out_axis[b]) {
        return true;
      }
    }
  }
  return false;
}

static tf_code one_input(tf_kernel_ctx *ctx, const tf__einsum_dims *d,
                         const strides *s, tf_tensor *out) {
  walk w = {0};
  bool seen[TF__EINSUM_LABELS] = {false};
  for (int a = 0; a < d->out_rank; a++) {
    int label = d->out_axis[a];
    if (!seen[label]) {
      seen[label] = true;
      add_outer(&w, d, label, s->in[0][label], s->out[label]);
    }
  }
  add_reduced(&w, d, s, 0);
  run_walk(ctx->pool, out->dtype, &w, ctx->inputs[0]->data, out->data);
  return TF_OK;
}

/* ---- two operands ---------------------------------------------------------- */

enum { K_BATCH, K_FREE0, K_FREE1, K_CONTRACT, K_KINDS };

/* Labels of each kind: batch (both inputs and the output), free (one
 * input and the output), contracted (both inputs, not the output). */
typedef struct kinds {
  int n[K_KINDS];
  int label[K_KINDS][TF__EINSUM_LABELS];
  int64_t total[K_KINDS];
} kinds;

static void classify(const tf__einsum_dims *d, kinds *k) {
  memset(k, 0, sizeof(*k));
  for (int l = 0; l < TF__EINSUM_LABELS; l++) {
    int kind;
    switch (d->use[l]) {
    case 7u: kind = K_BATCH; break;
    case 5u: kind = K_FREE0; break;
    case 6u: kind = K_FREE1; break;
    case 3u: kind = K_CONTRACT; break;
    default: continue;
    }
    k->label[kind][k->n[kind]++] = l;
  }
  for (int kind = 0; kind < K_KINDS; kind++) {
    k->total[kind] = 1;
    for (int j = 0; j < k->n[kind]; j++) {
      k->total[kind] *= d->size[k->label[kind][j]];
    }
  }
}

/* Whether w only copies a dense source laid out as its dense destination
 * (no summed dims, equal strides on every dim longer than 1). */
static bool walk_is_identity(const walk *w) {
  if (w->nr != 0) {
    return false;
  }
  for (int i = 0; i < w->n; i++) {
    if (w->size[i] > 1 && w->src[i] != w->dst[i]) {
      return false;
    }
  }
  return true;
}

/* Sets w's dst (src with src_side) strides dense for its sizes; returns
 * the element count. */
static int64_t dense_strides(walk *w, bool src_side) {
  int64_t st = 1;
  for (int a = w->n - 1; a >= 0; a--) {
    if (src_side) {
      w->src[a] = st;
    } else {
      w->dst[a] = st;
    }
    st *= w->size[a];
  }
  return st;
}

/* The walk packing operand i dense with its labels in the order of kinds
 * o[0..3); returns the packed element count. */
static int64_t pack_walk(const tf__einsum_dims *d, const strides *s,
                         const kinds *k, int i, const int *o, walk *w) {
  memset(w, 0, sizeof(*w));
  for (int q = 0; q < 3; q++) {
    for (int j = 0; j < k->n[o[q]]; j++) {
      int label = k->label[o[q]][j];
      add_outer(w, d, label, s->in[i][label], 0);
    }
  }
  int64_t st = dense_strides(w, false);
  add_reduced(w, d, s, i);
  return st;
}

/* Operand i as a dense batch of matrices in the order o[0..3): x's own
 * data when x is so laid out, or when laid out in the order swapped (the
 * last two kinds exchanged: *trans set, the GEMM transposes it, as TF's
 * ShouldSwapFreeAndContract); else a packed copy in *owned for the caller
 * to free. */
static const void *pack(tf_threadpool *pool, const tf__einsum_dims *d,
                        const strides *s, const kinds *k, int i, const int *o,
                        const tf_tensor *x, void **owned, bool *trans) {
  walk w;
  const int swapped[3] = {o[0], o[2], o[1]};
  *owned = NULL;
  *trans = false;
  if (pack_walk(d, s, k, i, swapped, &w) == x->n && walk_is_identity(&w)) {
    *trans = true;
    return x->data;
  }
  int64_t st = pack_walk(d, s, k, i, o, &w);
  if (walk_is_identity(&w) && st == x->n) {
    *trans = false;
    return x->data;
  }
  size_t es = tf_dtype_size(x->dtype);
  *owned = tf__xmalloc((size_t)TF_MAX(st, (int64_t)1) * es);
  if (st > 0) {
    run_walk(pool, x->dtype, &w, x->data, *owned);
  }
  return *owned;
}

/* C [m,n] = op(A) . op(B), A stored [m,k] ([k,m] with ta), B [k,n] ([n,k]
 * with tb), in unsigned arithmetic so overflow wraps. */
#define DEFINE_LOOP_GEMM(name, T, U)                                           \
  static void name(bool ta, bool tb, int64_t m, int64_t n, int64_t k,        \
                   const void *a_, const void *b_, void *c_) {                 \
    const T *a = a_, *b = b_;                                                  \
    T *c = c_;                                                                 \
    int64_t ai = ta ? 1 : k, ap = ta ? m : 1;                                  \
    int64_t bp = tb ? 1 : n, bj = tb ? k : 1;                                  \
    for (int64_t i = 0; i < m; i++) {                                          \
      for (int64_t j = 0; j < n; j++) {                                        \
        U acc = 0;                                                             \
        for (int64_t p = 0; p < k; p++) {                                      \
          acc += (U)a[i * ai + p * ap] * (U)b[p * bp + j * bj];                \
        }                                                                      \
        c[i * n + j] = (T)acc;                                                 \
      }                                                                        \
    }                                                                          \
  }

DEFINE_LOOP_GEMM(gemm_i32, int32_t, uint32_t)
DEFINE_LOOP_GEMM(gemm_i64, int64_t, uint64_t)

/* nb dense products C[b] = A[b] [m,k] . B[b] [k,n]; chunks of batches run
 * on the intra-op pool. */
typedef struct bgemm {
  tf_dtype dt;
  size_t es;
  bool ta, tb;
  int64_t m, n, k;
  tf__gemm_dims gd;
  const char *a, *b;
  char *c;
  atomic_int err;
} bgemm;

static tf_code bgemm_one(const bgemm *g, int64_t i, tf_status *st) {
  const char *ai = g->a + (size_t)(i * g->m * g->k) * g->es;
  const char *bi = g->b + (size_t)(i * g->k * g->n) * g->es;
  char *ci = g->c + (size_t)(i * g->m * g->n) * g->es;
  switch (g->dt) {
  case TF_FLOAT32:
    return tf__blas_sgemm(&g->gd, 1.0f, (const float *)ai, (const float *)bi,
                          0.0f, (float *)ci, st);
  case TF_FLOAT64:
    return tf__blas_dgemm(&g->gd, 1.0, (const double *)ai,
                          (const double *)bi, 0.0, (double *)ci, st);
  case TF_INT32:
    gemm_i32(g->ta, g->tb, g->m, g->n, g->k, ai, bi, ci);
    return TF_OK;
  default:
    gemm_i64(g->ta, g->tb, g->m, g->n, g->k, ai, bi, ci);
    return TF_OK;
  }
}

static void bgemm_chunk(void *arg, int64_t begin, int64_t end) {
  bgemm *g = arg;
  tf_status st;
  tf_status_init(&st);
  for (int64_t i = begin; i < end; i++) {
    tf_code rc = bgemm_one(g, i, &st);
    if (rc != TF_OK) {
      int expected = TF_OK;
      atomic_compare_exchange_strong(&g->err, &expected, (int)rc);
      return;
    }
  }
}

/* Work (multiply-adds) below which batches stay on one thread. */
#define BGEMM_GRAIN_MACS ((int64_t)1 << 17)

static tf_code batched_gemm(tf_threadpool *pool, bgemm *g, int64_t nb,
                            tf_status *st) {
  g->es = tf_dtype_size(g->dt);
  g->gd = tf__gemm_dims_packed(g->ta, g->tb, g->m, g->n, g->k);
  bool blas = g->dt == TF_FLOAT32 || g->dt == TF_FLOAT64;
  if (blas && tf__blas_check(&g->gd, st) != TF_OK) {
    return st->code;
  }
  if (nb == 1 || (blas && !tf__blas_is_single_threaded(g->m, g->n, g->k))) {
    /* Large products one at a time, each threaded by the BLAS wrapper. */
    for (int64_t i = 0; i < nb; i++) {
      TF_TRY(bgemm_one(g, i, st));
    }
    return TF_OK;
  }
  int64_t per = TF_MAX((int64_t)1, g->m * g->n * (g->k + 1));
  atomic_init(&g->err, TF_OK);
  tf_parallel_for(pool, nb, TF_MAX((int64_t)1, BGEMM_GRAIN_MACS / per),
                  bgemm_chunk, g);
  int err = atomic_load(&g->err);
  if (err != TF_OK) {
    return tf_status_set(st, (tf_code)err, "batched gemm failed");
  }
  return TF_OK;
}

/* The walk from the product [batch, free0, free1] into the output. */
static void product_walk(const tf__einsum_dims *d, const strides *s,
                         const kinds *k, walk *w) {
  static const int order_c[3] = {K_BATCH, K_FREE0, K_FREE1};
  memset(w, 0, sizeof(*w));
  for (int q = 0; q < 3; q++) {
    for (int j = 0; j < k->n[order_c[q]]; j++) {
      int label = k->label[order_c[q]][j];
      add_outer(w, d, label, 0, s->out[label]);
    }
  }
  dense_strides(w, true);
}

static tf_code two_inputs(tf_kernel_ctx *ctx, const tf__einsum_dims *d,
                          const strides *s, tf_tensor *out) {
  kinds k;
  classify(d, &k);
  static const int order_a[3] = {K_BATCH, K_FREE0, K_CONTRACT};
  static const int order_b[3] = {K_BATCH, K_CONTRACT, K_FREE1};
  void *own_a, *own_b, *own_c = NULL;
  bgemm g = {.dt = out->dtype, .m = k.total[K_FREE0], .n = k.total[K_FREE1],
             .k = k.total[K_CONTRACT]};
  g.a = pack(ctx->pool, d, s, &k, 0, order_a, ctx->inputs[0], &own_a,
             &g.ta);
  g.b = pack(ctx->pool, d, s, &k, 1, order_b, ctx->inputs[1], &own_b,
             &g.tb);
  int64_t nb = k.total[K_BATCH];
  walk w;
  product_walk(d, s, &k, &w);
  bool direct = walk_is_identity(&w) && !out_repeats(d);
  if (direct) {
    g.c = out->data;
  } else {
    own_c = tf__xmalloc((size_t)TF_MAX(nb * g.m * g.n, (int64_t)1) *
                        tf_dtype_size(out->dtype));
    g.c = own_c;
  }
  tf_status st;
  tf_status_init(&st);
  tf_code rc = batched_gemm(ctx->pool, &g, nb, &st);
  if (rc == TF_OK && !direct) {
    run_walk(ctx->pool, out->dtype, &w, own_c, out->data);
  }
  free(own_a);
  free(own_b);
  free(own_c);
  if (rc != TF_OK) {
    return tf_kernel_error(ctx, rc, "%s", st.msg);
  }
  return TF_OK;
}

/* ---- the kernel ------------------------------------------------------------- */

static tf_code einsum_init(const tf_node *node, void **state, tf_status *st) {
  const char *text = NULL;
  TF_TRY(tf_node_attr_get_string(node, "equation", &text, st));
  einsum_state *s = tf__xcalloc(1, sizeof(*s));
  s->text = tf__xstrdup(text);
  if (tf__einsum_parse(s->text, tf_node_num_inputs(node), &s->eq, st) !=
      TF_OK) {
    char msg[sizeof(st->msg)];
    snprintf(msg, sizeof msg, "%s", st->msg);
    tf_code rc = tf_status_set(st, st->code, "%s (%s): %s", tf_node_name(node),
                               tf_node_op(node), msg);
    free(s->text);
    free(s);
    return rc;
  }
  *state = s;
  return TF_OK;
}

static void einsum_free(void *state) {
  einsum_state *s = state;
  if (s != NULL) {
    free(s->text);
    free(s);
  }
}

static tf_code einsum_compute(tf_kernel_ctx *ctx) {
  const einsum_state *s = ctx->state;
  if (ctx->n_inputs != s->eq.n_in) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "Einsum equation '%s' "
                           "has %d input terms but got %d inputs",
                           s->text, s->eq.n_in, ctx->n_inputs);
  }
  tf_shape shapes[2];
  for (int i = 0; i < ctx->n_inputs; i++) {
    shapes[i] = ctx->inputs[i]->shape;
  }
  tf__einsum_dims d;
  tf_status st;
  tf_status_init(&st);
  if (tf__einsum_resolve(&s->eq, shapes, &d, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, ctx->inputs[0]->dtype, &d.out_shape,
                                &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (out_repeats(&d)) {
    memset(out->data, 0, (size_t)out->n * tf_dtype_size(out->dtype));
  }
  strides str;
  label_strides(&d, ctx->inputs, ctx->n_inputs, &str);
  if (ctx->n_inputs == 1) {
    return one_input(ctx, &d, &str, out);
  }
  return two_inputs(ctx, &d, &str, out);
}

#define EINSUM_KERNEL(dt)                                                      \
  {.op = "Einsum", .device_type = TF_DEVICE_CPU, .dtype = dt,                  \
   .init = einsum_init, .compute = einsum_compute, .free_state = einsum_free}

static const tf_kernel_def einsum_kernels[] = {
    EINSUM_KERNEL(TF_FLOAT32),
    EINSUM_KERNEL(TF_FLOAT64),
    EINSUM_KERNEL(TF_INT32),
    EINSUM_KERNEL(TF_INT64),
};

TF_REGISTER_KERNELS(einsum_kernels)
