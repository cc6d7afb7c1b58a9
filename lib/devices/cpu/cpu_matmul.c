/* cpu_matmul.c: CPU kernels for MatMul and BatchMatMul(V2).
 *
 * float32/float64 products go to OpenBLAS through cpu_blas.h (which holds
 * the thread policy: a large GEMM is issued from the kernel's thread and
 * OpenBLAS splits it; only GEMMs OpenBLAS runs single-threaded are issued
 * from pool chunks). int32/int64 products use a cache-blocked loop that
 * wraps on overflow like TF's (computed in unsigned arithmetic), split over
 * the intra-op pool by rows. BatchMatMul broadcasts batch dims as
 * BatchMatMulV2 does and spreads many small products over the pool. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_blas.h"

/* ---- loop GEMM (integers) ---------------------------------------------- */

/* C[i, j] = sum_p A'[i, p] * B'[p, j] for rows [i0, i1), where A'(i, p) is
 * a[i*ars + p*acs] and B'(p, j) is b[p*brs + j*bcs]; c is [m, n] dense. */
typedef struct loop_gemm {
  int64_t n, k;
  const void *a;
  int64_t ars, acs;
  const void *b;
  int64_t brs, bcs;
  void *c;
} loop_gemm;

/* Column and depth block sizes: a KB x NB block of B' (128 KiB at 4 bytes,
 * 256 KiB at 8) stays in L2 while every row of the chunk streams past it. */
enum { LOOP_NB = 256, LOOP_KB = 128 };

#define DEFINE_LOOP_GEMM(name, T)                                              \
  static void name(const loop_gemm *g, int64_t i0, int64_t i1) {               \
    const T *a = g->a, *b = g->b;                                              \
    T *c = g->c;                                                               \
    int64_t n = g->n, k = g->k;                                                \
    memset(c + i0 * n, 0, (size_t)((i1 - i0) * n) * sizeof(T));               \
    for (int64_t j0 = 0; j0 < n; j0 += LOOP_NB) {                              \
      int64_t jn = TF_MIN((int64_t)LOOP_NB, n - j0);                           \
      for (int64_t p0 = 0; p0 < k; p0 += LOOP_KB) {                            \
        int64_t p1 = TF_MIN(p0 + (int64_t)LOOP_KB, k);                         \
        for (int64_t i = i0; i < i1; i++) {                                    \
          T *restrict crow = c + i * n + j0;                                   \
          for (int64_t p = p0; p < p1; p++) {                                  \
            T av = a[i * g->ars + p * g->acs];                                 \
            const T *restrict brow = b + p * g->brs + j0 * g->bcs;            \
            if (g->bcs == 1) {                                                 \
              for (int64_t j = 0; j < jn; j++) {                               \
                crow[j] += av * brow[j];                                       \
              }                                                                \
            } else {                                                           \
              for (int64_t j = 0; j < jn; j++) {                               \
                crow[j] += av * brow[j * g->bcs];                              \
              }                                                                \
            }                                                                  \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

/* Integers multiply in unsigned types so overflow wraps (defined in C).
 * Floats always go to OpenBLAS, which beats this loop even on 4 x 4
 * matrices (measured: its small-matrix kernels take ~0.1 us per 4 x 4 x 4
 * product including call overhead, this loop ~0.3 us with runtime strides). */
DEFINE_LOOP_GEMM(loop_gemm_u32, uint32_t)
DEFINE_LOOP_GEMM(loop_gemm_u64, uint64_t)

static void loop_gemm_rows(tf_dtype dt, const loop_gemm *g, int64_t i0,
                           int64_t i1) {
  switch (dt) {
  case TF_INT32:
    loop_gemm_u32(g, i0, i1);
    break;
  case TF_INT64:
    loop_gemm_u64(g, i0, i1);
    break;
  default:
    TF_PANIC("loop_gemm: unexpected dtype %s", tf_dtype_name(dt));
  }
}

typedef struct loop_job {
  tf_dtype dt;
  const loop_gemm *g;
} loop_job;

static void loop_gemm_chunk(void *arg, int64_t begin, int64_t end) {
  const loop_job *job = arg;
  loop_gemm_rows(job->dt, job->g, begin, end);
}

/* Work (multiply-adds) below which a loop stays on one thread. */
#define LOOP_GRAIN_MACS ((int64_t)1 << 17)

/* Runs the loop GEMM for m rows, split over pool by rows when large. */
static void loop_gemm_run(tf_threadpool *pool, tf_dtype dt, const loop_gemm *g,
                          int64_t m) {
  int64_t per_row = TF_MAX((int64_t)1, g->n * TF_MAX((int64_t)1, g->k));
  int64_t grain = TF_MAX((int64_t)1, LOOP_GRAIN_MACS / per_row);
  loop_job job = {dt, g};
  tf_parallel_for(pool, m, grain, loop_gemm_chunk, &job);
}

/* A'/B' strides of a matrix stored dense as [rows, cols] and used as itself
 * or (trans) as its transpose. */
static void op_strides(bool trans, int64_t cols, int64_t *rs, int64_t *cs) {
  *rs = trans ? 1 : cols;
  *cs = trans ? cols : 1;
}

/* ---- shared helpers ---------------------------------------------------- */

typedef struct matmul_state {
  bool trans_a, trans_b; /* transpose_a/_b, or adj_x/adj_y */
} matmul_state;

static tf_code read_flags(const tf_node *node, const char *na, const char *nb,
                          void **state, tf_status *st) {
  matmul_state *s = tf__xcalloc(1, sizeof(*s));
  tf_code rc = tf_node_attr_get_bool(node, na, &s->trans_a, st);
  if (rc == TF_OK) {
    rc = tf_node_attr_get_bool(node, nb, &s->trans_b, st);
  }
  if (rc != TF_OK) {
    free(s);
    return rc;
  }
  *state = s;
  return TF_OK;
}

static tf_code matmul_init(const tf_node *node, void **state, tf_status *st) {
  return read_flags(node, "transpose_a", "transpose_b", state, st);
}

static tf_code batch_matmul_init(const tf_node *node, void **state,
                                 tf_status *st) {
  return read_flags(node, "adj_x", "adj_y", state, st);
}

static void matmul_free(void *state) { free(state); }

/* One float GEMM through the BLAS wrapper (dt is float32 or float64). */
static tf_code blas_gemm(tf_dtype dt, const tf__gemm_dims *d, const void *a,
                         const void *b, void *c, tf_status *st) {
  if (dt == TF_FLOAT32) {
    return tf__blas_sgemm(d, 1.0f, a, b, 0.0f, c, st);
  }
  return tf__blas_dgemm(d, 1.0, a, b, 0.0, c, st);
}

static bool is_blas_type(tf_dtype dt) {
  return dt == TF_FLOAT32 || dt == TF_FLOAT64;
}

static tf_code size_mismatch(tf_kernel_ctx *ctx, const char *na, bool ta,
                             const char *nb, bool tb, int64_t ka,
                             int64_t kb) {
  char sa[128], sb[128];
  return tf_kernel_error(
      ctx, TF_INVALID_ARGUMENT,
      "Matrix size-incompatible: In[0]: %s, In[1]: %s (%s=%s, %s=%s: "
      "contraction dims %lld vs %lld)",
      tf_shape_str(&ctx->inputs[0]->shape, sa, sizeof(sa)),
      tf_shape_str(&ctx->inputs[1]->shape, sb, sizeof(sb)), na,
      ta ? "true" : "false", nb, tb ? "true" : "false", (long long)ka,
      (long long)kb);
}

/* Runs a wrapper call's status through tf_kernel_error for the node name. */
static tf_code blas_error(tf_kernel_ctx *ctx, const tf_status *st) {
  return tf_kernel_error(ctx, st->code, "%s", st->msg);
}

/* ---- MatMul ------------------------------------------------------------ */

/* Dense transpose of src [rows, cols] into dst [cols, rows], for 4- or
 * 8-byte elements. */
static void transpose_dense(size_t es, const void *src, int64_t rows,
                            int64_t cols, void *dst) {
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++) {
      if (es == 4) {
        ((uint32_t *)dst)[c * rows + r] = ((const uint32_t *)src)[r * cols + c];
      } else {
        ((uint64_t *)dst)[c * rows + r] = ((const uint64_t *)src)[r * cols + c];
      }
    }
  }
}

/* Integer MatMul: B' is packed dense when transposed so that the inner
 * loop runs at unit stride. */
static tf_code int_matmul(tf_kernel_ctx *ctx, const matmul_state *s,
                          int64_t m, int64_t n, int64_t k, tf_tensor *out) {
  const tf_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  size_t es = tf_dtype_size(a->dtype);
  loop_gemm g = {.n = n, .k = k, .a = a->data, .b = b->data, .c = out->data};
  op_strides(s->trans_a, a->shape.dims[1], &g.ars, &g.acs);
  op_strides(s->trans_b, b->shape.dims[1], &g.brs, &g.bcs);
  void *packed = NULL;
  if (s->trans_b && n > 1 && k > 1) {
    packed = malloc((size_t)(n * k) * es);
    if (packed == NULL) {
      return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED,
                             "out of memory packing b [%lld,%lld]",
                             (long long)n, (long long)k);
    }
    transpose_dense(es, b->data, n, k, packed);
    g.b = packed;
    g.brs = n;
    g.bcs = 1;
  }
  loop_gemm_run(ctx->pool, a->dtype, &g, m);
  free(packed);
  return TF_OK;
}

static tf_code matmul_compute(tf_kernel_ctx *ctx) {
  const matmul_state *s = ctx->state;
  const tf_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
  if (a->shape.rank != 2 || b->shape.rank != 2 || a->dtype != b->dtype) {
    char sa[128], sb[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "MatMul needs two 2-D tensors of one dtype, got "
                           "In[0]: %s %s, In[1]: %s %s",
                           tf_dtype_name(a->dtype),
                           tf_shape_str(&a->shape, sa, sizeof(sa)),
                           tf_dtype_name(b->dtype),
                           tf_shape_str(&b->shape, sb, sizeof(sb)));
  }
  int64_t m = a->shape.dims[s->trans_a ? 1 : 0];
  int64_t k = a->shape.dims[s->trans_a ? 0 : 1];
  int64_t kb = b->shape.dims[s->trans_b ? 1 : 0];
  int64_t n = b->shape.dims[s->trans_b ? 0 : 1];
  if (k != kb) {
    return size_mismatch(ctx, "transpose_a", s->trans_a, "transpose_b",
                         s->trans_b, k, kb);
  }
  tf_shape shape = tf_shape_of(2, m, n);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, a->dtype, &shape, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (!is_blas_type(a->dtype)) {
    return int_matmul(ctx, s, m, n, k, out);
  }
  tf__gemm_dims d = tf__gemm_dims_packed(s->trans_a, s->trans_b, m, n, k);
  tf_status st;
  tf_status_init(&st);
  if (blas_gemm(a->dtype, &d, a->data, b->data, out->data, &st) != TF_OK) {
    return blas_error(ctx, &st);
  }
  return TF_OK;
}

/* ---- BatchMatMul ------------------------------------------------------- */

/* Everything a batch chunk needs; read-only while chunks run, except err. */
typedef struct bmm_plan {
  tf_dtype dt;
  size_t es;                 /* element size */
  int rank;                  /* output batch rank */
  int64_t dims[TF_MAX_RANK]; /* output batch dims */
  int64_t xs[TF_MAX_RANK];   /* x element stride per batch dim, 0: broadcast */
  int64_t ys[TF_MAX_RANK];
  int64_t m, n, k;
  bool ax, ay;
  int64_t xcols, ycols;      /* stored matrix row lengths of x and y */
  const char *x, *y;
  char *c;
  tf__gemm_dims d;
  bool use_blas;             /* float types; integers use the loop */
  atomic_int err;            /* first failing tf_code from a chunk */
} bmm_plan;

/* Element offsets into x and y of output batch b. */
static void bmm_offsets(const bmm_plan *p, int64_t b, int64_t *xo,
                        int64_t *yo) {
  int64_t xoff = 0, yoff = 0;
  for (int d = p->rank - 1; d >= 0; d--) {
    int64_t i = b % p->dims[d];
    b /= p->dims[d];
    xoff += i * p->xs[d];
    yoff += i * p->ys[d];
  }
  *xo = xoff;
  *yo = yoff;
}

/* Output batch b; pool splits an integer product by rows (NULL: inline). */
static tf_code bmm_one(bmm_plan *p, tf_threadpool *pool, int64_t b,
                       tf_status *st) {
  int64_t xo, yo;
  bmm_offsets(p, b, &xo, &yo);
  const char *x = p->x + (size_t)xo * p->es, *y = p->y + (size_t)yo * p->es;
  char *c = p->c + (size_t)(b * p->m * p->n) * p->es;
  if (p->use_blas) {
    return blas_gemm(p->dt, &p->d, x, y, c, st);
  }
  loop_gemm g = {.n = p->n, .k = p->k, .a = x, .b = y, .c = c};
  op_strides(p->ax, p->xcols, &g.ars, &g.acs);
  op_strides(p->ay, p->ycols, &g.brs, &g.bcs);
  loop_gemm_run(pool, p->dt, &g, p->m);
  return TF_OK;
}

static void bmm_chunk(void *arg, int64_t begin, int64_t end) {
  bmm_plan *p = arg;
  tf_status st;
  tf_status_init(&st);
  for (int64_t b = begin; b < end; b++) {
    tf_code code = bmm_one(p, NULL, b, &st);
    if (code != TF_OK) {
      int expected = TF_OK;
      atomic_compare_exchange_strong(&p->err, &expected, (int)code);
      return;
    }
  }
}

/* Broadcast strides of one operand's batch dims (bs, right-aligned to the
 * output's rank) for matrices of mat elements each. */
static void batch_strides(const tf_shape *bs, int rank, int64_t mat,
                          int64_t *strides) {
  int64_t stride = mat;
  for (int d = rank - 1; d >= 0; d--) {
    int di = d - (rank - bs->rank);
    if (di < 0 || bs->dims[di] == 1) {
      strides[d] = 0;
    } else {
      strides[d] = stride;
      stride *= bs->dims[di];
    }
  }
}

/* Checks x [..., M, K] and y [..., K, N] (after adjoints) and fills the
 * plan's shapes; *out_shape gets the broadcast batch dims + [M, N]. */
static tf_code bmm_prepare(tf_kernel_ctx *ctx, bmm_plan *p,
                           tf_shape *out_shape) {
  const tf_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
  char sx[128], sy[128];
  tf_shape_str(&x->shape, sx, sizeof(sx));
  tf_shape_str(&y->shape, sy, sizeof(sy));
  if (x->shape.rank < 2 || y->shape.rank < 2 || x->dtype != y->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "BatchMatMul needs two tensors of rank >= 2 and "
                           "one dtype, got In[0]: %s %s, In[1]: %s %s",
                           tf_dtype_name(x->dtype), sx,
                           tf_dtype_name(y->dtype), sy);
  }
  const int64_t *xd = x->shape.dims + x->shape.rank - 2;
  const int64_t *yd = y->shape.dims + y->shape.rank - 2;
  p->xcols = xd[1];
  p->ycols = yd[1];
  p->m = xd[p->ax ? 1 : 0];
  p->k = xd[p->ax ? 0 : 1];
  p->n = yd[p->ay ? 0 : 1];
  int64_t ky = yd[p->ay ? 1 : 0];
  if (p->k != ky) {
    return size_mismatch(ctx, "adj_x", p->ax, "adj_y", p->ay, p->k, ky);
  }
  tf_shape bx = tf_shape_make(x->shape.rank - 2, x->shape.dims);
  tf_shape by = tf_shape_make(y->shape.rank - 2, y->shape.dims);
  if (tf_shape_broadcast(&bx, &by, out_shape, NULL) != TF_OK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "In[0] and In[1] must have compatible batch "
                           "dimensions: %s vs. %s",
                           sx, sy);
  }
  p->rank = out_shape->rank;
  memcpy(p->dims, out_shape->dims, sizeof(p->dims));
  batch_strides(&bx, p->rank, xd[0] * xd[1], p->xs);
  batch_strides(&by, p->rank, yd[0] * yd[1], p->ys);
  out_shape->dims[out_shape->rank] = p->m;
  out_shape->dims[out_shape->rank + 1] = p->n;
  out_shape->rank += 2;
  return TF_OK;
}

static tf_code batch_matmul_compute(tf_kernel_ctx *ctx) {
  const matmul_state *s = ctx->state;
  bmm_plan p = {.ax = s->trans_a, .ay = s->trans_b};
  tf_shape shape;
  TF_TRY(bmm_prepare(ctx, &p, &shape));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, ctx->inputs[0]->dtype, &shape, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  p.dt = out->dtype;
  p.es = tf_dtype_size(p.dt);
  p.x = ctx->inputs[0]->data;
  p.y = ctx->inputs[1]->data;
  p.c = out->data;
  p.d = tf__gemm_dims_packed(p.ax, p.ay, p.m, p.n, p.k);
  p.use_blas = is_blas_type(p.dt);
  tf_status st;
  tf_status_init(&st);
  if (p.use_blas && tf__blas_check(&p.d, &st) != TF_OK) {
    return blas_error(ctx, &st);
  }
  int64_t nbatch = out->n / (p.m * p.n);
  if (nbatch == 1 || !tf__blas_is_single_threaded(p.m, p.n, p.k)) {
    /* Large products: one at a time, each using every thread itself. */
    for (int64_t b = 0; b < nbatch; b++) {
      if (bmm_one(&p, ctx->pool, b, &st) != TF_OK) {
        return blas_error(ctx, &st);
      }
    }
    return TF_OK;
  }
  int64_t per = p.m * p.n * (p.k + 1);
  int64_t grain = TF_MAX((int64_t)1, LOOP_GRAIN_MACS / TF_MAX((int64_t)1, per));
  atomic_init(&p.err, TF_OK);
  tf_parallel_for(ctx->pool, nbatch, grain, bmm_chunk, &p);
  int err = atomic_load(&p.err);
  if (err != TF_OK) {
    return tf_kernel_error(ctx, (tf_code)err, "batched gemm failed");
  }
  return TF_OK;
}

/* ---- registration ------------------------------------------------------ */

#define MATMUL_KERNEL(op_name, dt, init_fn, compute_fn)                        \
  {.op = op_name, .device_type = TF_DEVICE_CPU, .dtype = dt, .init = init_fn,       \
   .compute = compute_fn, .free_state = matmul_free}

#define MATMUL_KERNELS_FOR(op_name, init_fn, compute_fn)                       \
  MATMUL_KERNEL(op_name, TF_FLOAT32, init_fn, compute_fn),                     \
      MATMUL_KERNEL(op_name, TF_FLOAT64, init_fn, compute_fn),                 \
      MATMUL_KERNEL(op_name, TF_INT32, init_fn, compute_fn),                   \
      MATMUL_KERNEL(op_name, TF_INT64, init_fn, compute_fn)

static const tf_kernel_def matmul_kernels[] = {
    MATMUL_KERNELS_FOR("MatMul", matmul_init, matmul_compute),
    MATMUL_KERNELS_FOR("BatchMatMul", batch_matmul_init, batch_matmul_compute),
    MATMUL_KERNELS_FOR("BatchMatMulV2", batch_matmul_init,
                       batch_matmul_compute),
};

TF_REGISTER_KERNELS(matmul_kernels)
