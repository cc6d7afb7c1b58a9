/* cpu_reduction.c: CPU kernels for Sum, Mean, Max, Min, Prod, ArgMax and
 * ArgMin over float32, float64, int32 and int64.
 *
 * Dims of size 1 are dropped and neighbouring dims that are both reduced
 * or both kept are merged, so every reduction is one of two loops: the
 * last (contiguous) dim reduced, where each output sums whole rows with
 * eight independent accumulators; or the last dim kept, where each output
 * row accumulates input rows column-wise (vectorised). Accuracy: float32
 * sums, means and products accumulate in float64 (then round once), so
 * the error is about one float32 rounding, not n of them; integers wrap
 * modulo 2^bits like TensorFlow's. Large reductions split the outputs
 * across the pool; when there are few outputs they split the reduced
 * range into a number of parts that depends only on the shape (so results
 * do not depend on the thread count) and combine the parts in order.
 * ArgMax/ArgMin scan rows (or columns, when the axis is not last) keeping
 * the first extreme; NaN counts as the extreme, as in NumPy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* gcc 12's -O2 "very cheap" vectoriser skips loops whose trip count is
 * not a known multiple of the vector width: the column loops need the
 * dynamic cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

typedef enum red_kind {
  RED_SUM,
  RED_PROD,
  RED_MAX,
  RED_MIN,
  RED_MEAN,
  RED_KINDS
} red_kind;

#define ACC_BYTES 8 /* every accumulator type below is 8 bytes */
#define RED_CB 1024  /* output columns per task when the last dim is kept */

/* Per (dtype, kind) loops over an accumulator array of type A. */
typedef struct red_fns {
  void (*init)(void *acc, int64_t n);
  /* *acc = op(*acc, x[0] op ... op x[n-1]) */
  void (*row)(const void *x, int64_t n, void *acc);
  /* acc[j] = op(acc[j], x[j]) */
  void (*col)(void *acc, const void *x, int64_t n);
  /* acc[j] = op(acc[j], other[j]) */
  void (*comb)(void *acc, const void *other, int64_t n);
  /* out[j] = final value from acc[j] over count reduced elements */
  void (*fin)(const void *acc, int64_t n, int64_t count, void *out);
} red_fns;

#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))
/* Float max/min propagate NaN (as NumPy does). */
#define OP_MAXF(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define OP_MINF(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define OP_MAXI(a, b) ((b) > (a) ? (b) : (a))
#define OP_MINI(a, b) ((b) < (a) ? (b) : (a))

/* Row reduction with eight independent lanes (vectorised by gcc's SLP). */
#define RED_ROW(pfx, T, A, INIT, OP)                                           \
  static void pfx##_row(const void *xv, int64_t n, void *av) {                 \
    const T *restrict x = xv;                                                  \
    A s[8] = {INIT, INIT, INIT, INIT, INIT, INIT, INIT, INIT};                 \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      for (int k = 0; k < 8; k++) {                                            \
        s[k] = OP(s[k], (A)x[i + k]);                                          \
      }                                                                        \
    }                                                                          \
    for (; i < n; i++) {                                                       \
      s[i & 7] = OP(s[i & 7], (A)x[i]);                                        \
    }                                                                          \
    A r = OP(OP(OP(s[0], s[1]), OP(s[2], s[3])),                               \
             OP(OP(s[4], s[5]), OP(s[6], s[7])));                              \
    A *a = av;                                                                 \
    *a = OP(*a, r);                                                            \
  }

/* Float max/min of a row: plain compares in T lanes (max/min
 * instructions) plus a separate NaN flag, so NaN still propagates. B is an
 * integer as wide as T. */
#define RED_ROW_EXTREME(pfx, T, B, INIT, OPI, OP)                              \
  static void pfx##_row(const void *xv, int64_t n, void *av) {                 \
    const T *restrict x = xv;                                                  \
    T m[8] = {INIT, INIT, INIT, INIT, INIT, INIT, INIT, INIT};                 \
    B bad[8] = {0};                                                            \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      for (int k = 0; k < 8; k++) {                                            \
        m[k] = OPI(m[k], x[i + k]);                                            \
        bad[k] |= (B)(x[i + k] != x[i + k]);                                   \
      }                                                                        \
    }                                                                          \
    for (; i < n; i++) {                                                       \
      m[0] = OPI(m[0], x[i]);                                                  \
      bad[0] |= (B)(x[i] != x[i]);                                             \
    }                                                                          \
    B any = bad[0] | bad[1] | bad[2] | bad[3] | bad[4] | bad[5] | bad[6] |     \
            bad[7];                                                            \
    T r = OPI(OPI(OPI(m[0], m[1]), OPI(m[2], m[3])),                           \
              OPI(OPI(m[4], m[5]), OPI(m[6], m[7])));                          \
    double *a = av;                                                            \
    *a = OP(*a, any ? (double)NAN : (double)r);                                \
  }

/* init, col, comb and fin over accumulators of type A. */
#define RED_REST(pfx, T, A, INIT, OP)                                          \
  _Static_assert(sizeof(A) == ACC_BYTES, "accumulators are 8 bytes");         \
  static void pfx##_init(void *av, int64_t n) {                                \
    A *a = av;                                                                 \
    for (int64_t i = 0; i < n; i++) {                                          \
      a[i] = INIT;                                                             \
    }                                                                          \
  }                                                                            \
  static void pfx##_col(void *av, const void *xv, int64_t n) {                 \
    A *restrict a = av;                                                        \
    const T *restrict x = xv;                                                  \
    for (int64_t j = 0; j < n; j++) {                                          \
      a[j] = OP(a[j], (A)x[j]);                                                \
    }                                                                          \
  }                                                                            \
  static void pfx##_comb(void *av, const void *bv, int64_t n) {                \
    A *restrict a = av;                                                        \
    const A *restrict b = bv;                                                  \
    for (int64_t j = 0; j < n; j++) {                                          \
      a[j] = OP(a[j], b[j]);                                                   \
    }                                                                          \
  }                                                                            \
  static void pfx##_fin(const void *av, int64_t n, int64_t count, void *ov) {  \
    const A *a = av;                                                           \
    T *o = ov;                                                                 \
    (void)count;                                                               \
    for (int64_t j = 0; j < n; j++) {                                          \
      o[j] = (T)a[j];                                                          \
    }                                                                          \
  }

#define RED_IMPL(pfx, T, A, INIT, OP)                                          \
  RED_ROW(pfx, T, A, INIT, OP)                                                 \
  RED_REST(pfx, T, A, INIT, OP)
#define RED_EXTREME(pfx, T, B, INIT, OPI, OP)                                  \
  RED_ROW_EXTREME(pfx, T, B, INIT, OPI, OP)                                    \
  RED_REST(pfx, T, double, INIT, OP)

/* Mean of floats: NaN over no elements (0 / 0). */
#define RED_MEAN_F(pfx, T)                                                     \
  static void pfx##_fin(const void *av, int64_t n, int64_t count, void *ov) {  \
    const double *a = av;                                                      \
    T *o = ov;                                                                 \
    for (int64_t j = 0; j < n; j++) {                                          \
      o[j] = count > 0 ? (T)(a[j] / (double)count) : (T)NAN;                   \
    }                                                                          \
  }

/* Mean of integers: the wrapped sum divided by the count, truncating as
 * TF does; 0 over no elements (TF would divide by zero). */
#define RED_MEAN_I(pfx, T)                                                     \
  static void pfx##_fin(const void *av, int64_t n, int64_t count, void *ov) {  \
    const uint64_t *a = av;                                                    \
    T *o = ov;                                                                 \
    for (int64_t j = 0; j < n; j++) {                                          \
      o[j] = count > 0 ? (T)((int64_t)(T)a[j] / count) : 0;                    \
    }                                                                          \
  }

RED_IMPL(f32_sum, float, double, 0.0, OP_ADD)
RED_IMPL(f32_prod, float, double, 1.0, OP_MUL)
RED_EXTREME(f32_max, float, int32_t, -INFINITY, OP_MAXI, OP_MAXF)
RED_EXTREME(f32_min, float, int32_t, INFINITY, OP_MINI, OP_MINF)
RED_MEAN_F(f32_mean, float)
RED_IMPL(f64_sum, double, double, 0.0, OP_ADD)
RED_IMPL(f64_prod, double, double, 1.0, OP_MUL)
RED_EXTREME(f64_max, double, int64_t, -INFINITY, OP_MAXI, OP_MAXF)
RED_EXTREME(f64_min, double, int64_t, INFINITY, OP_MINI, OP_MINF)
RED_MEAN_F(f64_mean, double)
RED_IMPL(i32_sum, int32_t, uint64_t, 0, OP_ADD)
RED_IMPL(i32_prod, int32_t, uint64_t, 1, OP_MUL)
RED_IMPL(i32_max, int32_t, int64_t, INT32_MIN, OP_MAXI)
RED_IMPL(i32_min, int32_t, int64_t, INT32_MAX, OP_MINI)
RED_MEAN_I(i32_mean, int32_t)
RED_IMPL(i64_sum, int64_t, uint64_t, 0, OP_ADD)
RED_IMPL(i64_prod, int64_t, uint64_t, 1, OP_MUL)
RED_IMPL(i64_max, int64_t, int64_t, INT64_MIN, OP_MAXI)
RED_IMPL(i64_min, int64_t, int64_t, INT64_MAX, OP_MINI)
RED_MEAN_I(i64_mean, int64_t)

#define FNS(p, fin) {p##_init, p##_row, p##_col, p##_comb, fin##_fin}
#define FNS_FOR(t)                                                             \
  {FNS(t##_sum, t##_sum), FNS(t##_prod, t##_prod), FNS(t##_max, t##_max),      \
   FNS(t##_min, t##_min), FNS(t##_sum, t##_mean)}

/* Indexed by red_dtype_index and red_kind. */
static const red_fns red_table[4][RED_KINDS] = {
    FNS_FOR(f32), FNS_FOR(f64), FNS_FOR(i32), FNS_FOR(i64)};

static int red_dtype_index(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return 0;
  case TF_FLOAT64: return 1;
  case TF_INT32: return 2;
  case TF_INT64: return 3;
  default: return -1;
  }
}

/* ---- plan ------------------------------------------------------------ */

/* The reduction after collapsing dims. The last collapsed dim (length L)
 * is either reduced (last_red) or kept. kd/ks are the kept dims before it
 * (with input strides), rd/rs the reduced dims before it. */
typedef struct red_plan {
  const red_fns *f;
  int64_t es; /* element size */
  const char *x;
  char *y;
  bool last_red;
  int64_t L;
  int nk, nr;
  int64_t kd[TF_MAX_RANK], ks[TF_MAX_RANK];
  int64_t rd[TF_MAX_RANK], rs[TF_MAX_RANK];
  int64_t nkout; /* prod(kd) */
  int64_t nrows; /* prod(rd) */
  int64_t count; /* reduced elements per output */
  int64_t out_n;
  int64_t ncb;   /* column blocks per output row (last dim kept) */
  int parts;     /* > 1: reduced range split; partial results combined */
  char *partial; /* parts * out_n accumulators */
} red_plan;

static void red_build_plan(const tf_shape *in, uint32_t mask, red_plan *p) {
  int64_t dims[TF_MAX_RANK], strides[TF_MAX_RANK];
  bool red[TF_MAX_RANK];
  int m = 0;
  for (int d = 0; d < in->rank; d++) {
    bool r = (mask >> d) & 1;
    if (in->dims[d] == 1) {
      continue;
    }
    if (m > 0 && red[m - 1] == r) {
      dims[m - 1] *= in->dims[d];
    } else {
      dims[m] = in->dims[d];
      red[m++] = r;
    }
  }
  TF_ASSERT(m > 0);
  tf_shape collapsed = tf_shape_make(m, dims);
  tf__row_major_strides(&collapsed, strides);
  p->L = dims[m - 1];
  p->last_red = red[m - 1];
  p->nk = p->nr = 0;
  p->nkout = p->nrows = 1;
  for (int k = 0; k < m - 1; k++) {
    if (red[k]) {
      p->rd[p->nr] = dims[k];
      p->rs[p->nr++] = strides[k];
      p->nrows *= dims[k];
    } else {
      p->kd[p->nk] = dims[k];
      p->ks[p->nk++] = strides[k];
      p->nkout *= dims[k];
    }
  }
  p->count = p->last_red ? p->nrows * p->L : p->nrows;
  p->out_n = p->last_red ? p->nkout : p->nkout * p->L;
  p->ncb = (p->L + RED_CB - 1) / RED_CB;
}

/* Parallel tasks of the direct (unsplit) schedule. */
static int64_t red_tasks(const red_plan *p) {
  return p->last_red ? p->out_n : p->nkout * p->ncb;
}

/* Splits the reduced range when there are too few output tasks to share
 * out a large reduction. Depends on the shape only. */
static void red_choose_parts(red_plan *p) {
  int64_t total = p->out_n * p->count;
  int64_t range = p->last_red ? p->count : p->nrows;
  p->parts = 1;
  if (red_tasks(p) < 16 && total >= 4 * TF_PARALLEL_GRAIN) {
    p->parts = (int)TF_MIN(TF_MIN(32, total / (2 * TF_PARALLEL_GRAIN)), range);
  }
}

/* Last dim reduced: acc[i] accumulates output o0 + i over the reduced
 * flat range [k0, k1) (rows of L contiguous elements). */
static void red_rows(const red_plan *p, int64_t o0, int64_t n, int64_t k0,
                     int64_t k1, char *acc) {
  tf__odo ko;
  tf__odo_seek(&ko, p->nk, p->kd, p->ks, p->ks, o0);
  for (int64_t i = 0; i < n; i++) {
    const char *base = p->x + ko.off0 * p->es;
    tf__odo ro;
    tf__odo_seek(&ro, p->nr, p->rd, p->rs, p->rs, k0 / p->L);
    int64_t c = k0 % p->L;
    for (int64_t k = k0; k < k1;) {
      int64_t len = TF_MIN(p->L - c, k1 - k);
      p->f->row(base + (ro.off0 + c) * p->es, len, acc + i * ACC_BYTES);
      k += len;
      c = 0;
      tf__odo_next(&ro);
    }
    tf__odo_next(&ko);
  }
}

/* Last dim kept: acc[0..jn) accumulates columns [j0, j0 + jn) of output
 * row q over reduced rows [r0, r1). */
static void red_cols(const red_plan *p, int64_t q, int64_t j0, int64_t jn,
                     int64_t r0, int64_t r1, char *acc) {
  tf__odo ko, ro;
  tf__odo_seek(&ko, p->nk, p->kd, p->ks, p->ks, q);
  tf__odo_seek(&ro, p->nr, p->rd, p->rs, p->rs, r0);
  const char *base = p->x + (ko.off0 + j0) * p->es;
  for (int64_t r = r0; r < r1; r++) {
    p->f->col(acc, base + ro.off0 * p->es, jn);
    tf__odo_next(&ro);
  }
}

static void red_direct_range(void *arg, int64_t t0, int64_t t1) {
  const red_plan *p = arg;
  char *acc = tf__xmalloc(RED_CB * ACC_BYTES);
  if (p->last_red) {
    for (int64_t o = t0; o < t1; o += RED_CB) {
      int64_t n = TF_MIN(RED_CB, t1 - o);
      p->f->init(acc, n);
      red_rows(p, o, n, 0, p->count, acc);
      p->f->fin(acc, n, p->count, p->y + o * p->es);
    }
  } else {
    for (int64_t t = t0; t < t1; t++) {
      int64_t q = t / p->ncb, j0 = (t % p->ncb) * RED_CB;
      int64_t jn = TF_MIN(RED_CB, p->L - j0);
      p->f->init(acc, jn);
      red_cols(p, q, j0, jn, 0, p->nrows, acc);
      p->f->fin(acc, jn, p->count, p->y + (q * p->L + j0) * p->es);
    }
  }
  free(acc);
}

static void red_part_range(void *arg, int64_t a0, int64_t a1) {
  const red_plan *p = arg;
  for (int64_t part = a0; part < a1; part++) {
    char *acc = p->partial + part * p->out_n * ACC_BYTES;
    p->f->init(acc, p->out_n);
    if (p->last_red) {
      red_rows(p, 0, p->out_n, part * p->count / p->parts,
               (part + 1) * p->count / p->parts, acc);
      continue;
    }
    int64_t r0 = part * p->nrows / p->parts;
    int64_t r1 = (part + 1) * p->nrows / p->parts;
    for (int64_t q = 0; q < p->nkout; q++) {
      for (int64_t j0 = 0; j0 < p->L; j0 += RED_CB) {
        red_cols(p, q, j0, TF_MIN(RED_CB, p->L - j0), r0, r1,
                 acc + (q * p->L + j0) * ACC_BYTES);
      }
    }
  }
}

static void red_run(tf_threadpool *pool, red_plan *p) {
  red_choose_parts(p);
  if (p->parts <= 1) {
    int64_t work = p->last_red ? p->count : p->count * TF_MIN(p->L, RED_CB);
    tf_parallel_for(pool, red_tasks(p), TF_MAX(1, TF_PARALLEL_GRAIN / work),
                    red_direct_range, p);
    return;
  }
  size_t stride = (size_t)p->out_n * ACC_BYTES;
  p->partial = tf__xmalloc((size_t)p->parts * stride);
  tf_parallel_for(pool, p->parts, 1, red_part_range, p);
  for (int k = 1; k < p->parts; k++) {
    p->f->comb(p->partial, p->partial + k * stride, p->out_n);
  }
  p->f->fin(p->partial, p->out_n, p->count, p->y);
  free(p->partial);
}

/* Outputs of a reduction over no elements: each gets the identity. */
static void red_fill_empty(const red_fns *f, tf_tensor *y) {
  void *acc = tf__xmalloc(RED_CB * ACC_BYTES);
  size_t es = tf_dtype_size(y->dtype);
  for (int64_t o = 0; o < y->n; o += RED_CB) {
    int64_t n = TF_MIN(RED_CB, y->n - o);
    f->init(acc, n);
    f->fin(acc, n, 0, (char *)y->data + (size_t)o * es);
  }
  free(acc);
}

/* ---- kernels --------------------------------------------------------- */

typedef struct red_state {
  red_kind kind;
  bool keep_dims;
} red_state;

static tf_code red_init(const tf_node *node, red_kind kind, void **state,
                        tf_status *st) {
  red_state *s = tf__xcalloc(1, sizeof *s);
  s->kind = kind;
  if (tf_node_attr_get_bool(node, "keep_dims", &s->keep_dims, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

#define RED_INIT_FN(name, kind)                                                \
  static tf_code name(const tf_node *node, void **state, tf_status *st) {      \
    return red_init(node, kind, state, st);                                    \
  }
RED_INIT_FN(sum_init, RED_SUM)
RED_INIT_FN(prod_init, RED_PROD)
RED_INIT_FN(max_init, RED_MAX)
RED_INIT_FN(min_init, RED_MIN)
RED_INIT_FN(mean_init, RED_MEAN)

/* Output shape and reduced element count for mask over x. */
static int64_t red_out_shape(const tf_shape *in, uint32_t mask, bool keep,
                             tf_shape *out) {
  int64_t count = 1;
  out->rank = 0;
  for (int d = 0; d < in->rank; d++) {
    if ((mask >> d) & 1) {
      count *= in->dims[d];
      if (keep) {
        out->dims[out->rank++] = 1;
      }
    } else {
      out->dims[out->rank++] = in->dims[d];
    }
  }
  return count;
}

static tf_code red_compute(tf_kernel_ctx *ctx) {
  const red_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  int di = red_dtype_index(x->dtype);
  tf_status st;
  uint32_t mask;
  if (di < 0) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU reduction for %s",
                           tf_dtype_name(x->dtype));
  }
  if (tf__reduction_axes(ctx->inputs[1], x->shape.rank, &mask, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_shape out_shape;
  int64_t count = red_out_shape(&x->shape, mask, s->keep_dims, &out_shape);
  if (count == 1) { /* nothing to combine: a view of the input */
    tf_tensor *v;
    if (tf_tensor_view(x, &out_shape, &v, &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
    tf_kernel_set_output(ctx, 0, v);
    tf_tensor_unref(v);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &out_shape, &y));
  const red_fns *f = &red_table[di][s->kind];
  if (y->n == 0) {
    return TF_OK;
  }
  if (count == 0) {
    red_fill_empty(f, y);
    return TF_OK;
  }
  red_plan p = {.f = f, .es = (int64_t)tf_dtype_size(x->dtype),
                .x = x->data, .y = y->data};
  red_build_plan(&x->shape, mask, &p);
  TF_ASSERT(p.out_n == y->n && p.count == count);
  red_run(ctx->pool, &p);
  return TF_OK;
}


/* ---- ArgMax / ArgMin ------------------------------------------------- */

#define ARG_CB 256

/* a is better than b: larger (smaller), or the first NaN (NumPy's rule;
 * ties keep the first index because the comparison is strict). */
#define GT_F(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))
#define LT_F(a, b) ((a) < (b) || ((a) != (a) && (b) == (b)))
#define GT_I(a, b) ((a) > (b))
#define LT_I(a, b) ((a) < (b))

typedef struct arg_fns {
  /* index of the best of x[0..n), n >= 1 */
  int64_t (*row)(const void *x, int64_t n);
  /* idx[j] = best r of x[r * stride + j] over r in [0, d), j < n <= ARG_CB */
  void (*cols)(const void *x, int64_t d, int64_t stride, int64_t n,
               int64_t *idx);
  bool (*better)(const void *x, int64_t i, int64_t j);
} arg_fns;

/* Index of the first extreme of a row in two vectorisable passes: the
 * extreme value (eight lanes of plain compares, plus a NaN flag for
 * floats), then the first element equal to it (or the first NaN). */
#define ARG_ROW_F(pfx, T, B, OPI)                                              \
  static int64_t pfx##_row(const void *xv, int64_t n) {                        \
    const T *x = xv;                                                           \
    T m[8] = {x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0]};                 \
    B bad[8] = {0};                                                            \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      for (int k = 0; k < 8; k++) {                                            \
        m[k] = OPI(m[k], x[i + k]);                                            \
        bad[k] |= (B)(x[i + k] != x[i + k]);                                   \
      }                                                                        \
    }                                                                          \
    for (; i < n; i++) {                                                       \
      m[0] = OPI(m[0], x[i]);                                                  \
      bad[0] |= (B)(x[i] != x[i]);                                             \
    }                                                                          \
    bool nan = (bad[0] | bad[1] | bad[2] | bad[3] | bad[4] | bad[5] |         \
                bad[6] | bad[7]) != 0;                                         \
    T best = OPI(OPI(OPI(m[0], m[1]), OPI(m[2], m[3])),                        \
                 OPI(OPI(m[4], m[5]), OPI(m[6], m[7])));                       \
    for (i = 0; i < n; i++) {                                                  \
      if (nan ? x[i] != x[i] : x[i] == best) {                                 \
        return i;                                                              \
      }                                                                        \
    }                                                                          \
    return 0;                                                                  \
  }

#define ARG_ROW_I(pfx, T, OPI)                                                 \
  static int64_t pfx##_row(const void *xv, int64_t n) {                        \
    const T *x = xv;                                                           \
    T m[8] = {x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0]};                 \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8) {                                               \
      for (int k = 0; k < 8; k++) {                                            \
        m[k] = OPI(m[k], x[i + k]);                                            \
      }                                                                        \
    }                                                                          \
    for (; i < n; i++) {                                                       \
      m[0] = OPI(m[0], x[i]);                                                  \
    }                                                                          \
    T best = OPI(OPI(OPI(m[0], m[1]), OPI(m[2], m[3])),                        \
                 OPI(OPI(m[4], m[5]), OPI(m[6], m[7])));                       \
    for (i = 0; i < n; i++) {                                                  \
      if (x[i] == best) {                                                      \
        return i;                                                              \
      }                                                                        \
    }                                                                          \
    return 0;                                                                  \
  }

/* Columns: branch-free updates of the best value and index per column. */
#define ARG_REST(pfx, T, BETTER)                                               \
  static void pfx##_cols(const void *xv, int64_t d, int64_t stride,            \
                         int64_t n, int64_t *idx) {                            \
    const T *x = xv;                                                           \
    T best[ARG_CB];                                                            \
    for (int64_t j = 0; j < n; j++) {                                          \
      best[j] = x[j];                                                          \
      idx[j] = 0;                                                              \
    }                                                                          \
    for (int64_t r = 1; r < d; r++) {                                          \
      const T *row = x + r * stride;                                           \
      for (int64_t j = 0; j < n; j++) {                                        \
        bool g = BETTER(row[j], best[j]);                                      \
        best[j] = g ? row[j] : best[j];                                        \
        idx[j] = g ? r : idx[j];                                               \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static bool pfx##_better(const void *xv, int64_t i, int64_t j) {             \
    const T *x = xv;                                                           \
    return BETTER(x[i], x[j]);                                                 \
  }

#define ARG_IMPL_F(pfx, T, B, OPI, BETTER)                                     \
  ARG_ROW_F(pfx, T, B, OPI)                                                    \
  ARG_REST(pfx, T, BETTER)
#define ARG_IMPL_I(pfx, T, OPI, BETTER)                                        \
  ARG_ROW_I(pfx, T, OPI)                                                       \
  ARG_REST(pfx, T, BETTER)

ARG_IMPL_F(f32_argmax, float, int32_t, OP_MAXI, GT_F)
ARG_IMPL_F(f32_argmin, float, int32_t, OP_MINI, LT_F)
ARG_IMPL_F(f64_argmax, double, int64_t, OP_MAXI, GT_F)
ARG_IMPL_F(f64_argmin, double, int64_t, OP_MINI, LT_F)
ARG_IMPL_I(i32_argmax, int32_t, OP_MAXI, GT_I)
ARG_IMPL_I(i32_argmin, int32_t, OP_MINI, LT_I)
ARG_IMPL_I(i64_argmax, int64_t, OP_MAXI, GT_I)
ARG_IMPL_I(i64_argmin, int64_t, OP_MINI, LT_I)

#define ARG_FNS(p) {p##_row, p##_cols, p##_better}
/* Indexed by red_dtype_index and [0] max, [1] min. */
static const arg_fns arg_table[4][2] = {
    {ARG_FNS(f32_argmax), ARG_FNS(f32_argmin)},
    {ARG_FNS(f64_argmax), ARG_FNS(f64_argmin)},
    {ARG_FNS(i32_argmax), ARG_FNS(i32_argmin)},
    {ARG_FNS(i64_argmax), ARG_FNS(i64_argmin)}};

/* The input as [outer, d, inner]; the output as [outer, inner]. */
typedef struct arg_job {
  const arg_fns *f;
  const char *x;
  int64_t es, outer, d, inner, ncb;
  void *y;
  bool y64;
  int parts;         /* inner == 1 only: row split into parts */
  int64_t *part_idx; /* outer * parts */
} arg_job;

static void arg_put(const arg_job *j, int64_t pos, int64_t v) {
  if (j->y64) {
    ((int64_t *)j->y)[pos] = v;
  } else {
    ((int32_t *)j->y)[pos] = (int32_t)v;
  }
}

static void arg_rows_range(void *arg, int64_t t0, int64_t t1) {
  const arg_job *j = arg;
  for (int64_t t = t0; t < t1; t++) {
    arg_put(j, t, j->f->row(j->x + t * j->d * j->es, j->d));
  }
}

static void arg_cols_range(void *arg, int64_t t0, int64_t t1) {
  const arg_job *j = arg;
  int64_t idx[ARG_CB];
  for (int64_t t = t0; t < t1; t++) {
    int64_t o = t / j->ncb, c0 = (t % j->ncb) * ARG_CB;
    int64_t n = TF_MIN(ARG_CB, j->inner - c0);
    j->f->cols(j->x + (o * j->d * j->inner + c0) * j->es, j->d, j->inner, n,
               idx);
    for (int64_t c = 0; c < n; c++) {
      arg_put(j, o * j->inner + c0 + c, idx[c]);
    }
  }
}

static void arg_parts_range(void *arg, int64_t t0, int64_t t1) {
  const arg_job *j = arg;
  for (int64_t t = t0; t < t1; t++) {
    int64_t o = t / j->parts, k = t % j->parts;
    int64_t lo = k * j->d / j->parts, hi = (k + 1) * j->d / j->parts;
    j->part_idx[t] = lo + j->f->row(j->x + (o * j->d + lo) * j->es, hi - lo);
  }
}

static void arg_run(tf_threadpool *pool, arg_job *j) {
  int64_t total = j->outer * j->d * j->inner;
  if (j->inner > 1) {
    j->ncb = (j->inner + ARG_CB - 1) / ARG_CB;
    int64_t work = j->d * TF_MIN(j->inner, ARG_CB);
    tf_parallel_for(pool, j->outer * j->ncb,
                    TF_MAX(1, TF_PARALLEL_GRAIN / work), arg_cols_range, j);
    return;
  }
  j->parts = 1;
  if (j->outer < 16 && total >= 4 * TF_PARALLEL_GRAIN) {
    j->parts = (int)TF_MIN(TF_MIN(32, total / (2 * TF_PARALLEL_GRAIN)), j->d);
  }
  if (j->parts == 1) {
    tf_parallel_for(pool, j->outer, TF_MAX(1, TF_PARALLEL_GRAIN / j->d),
                    arg_rows_range, j);
    return;
  }
  j->part_idx = tf__xmalloc((size_t)(j->outer * j->parts) * sizeof(int64_t));
  tf_parallel_for(pool, j->outer * j->parts, 1, arg_parts_range, j);
  for (int64_t o = 0; o < j->outer; o++) {
    const int64_t *pi = j->part_idx + o * j->parts;
    const char *row = j->x + o * j->d * j->es;
    int64_t best = pi[0];
    for (int k = 1; k < j->parts; k++) {
      if (j->f->better(row, pi[k], best)) {
        best = pi[k];
      }
    }
    arg_put(j, o, best);
  }
  free(j->part_idx);
}

typedef struct arg_state {
  int which; /* 0 ArgMax, 1 ArgMin */
  tf_dtype out_type;
} arg_state;

static tf_code arg_init(const tf_node *node, int which, void **state,
                        tf_status *st) {
  arg_state *s = tf__xcalloc(1, sizeof *s);
  s->which = which;
  if (tf_node_attr_get_type(node, "output_type", &s->out_type, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code argmax_init(const tf_node *node, void **state, tf_status *st) {
  return arg_init(node, 0, state, st);
}

static tf_code argmin_init(const tf_node *node, void **state, tf_status *st) {
  return arg_init(node, 1, state, st);
}

static tf_code arg_compute(tf_kernel_ctx *ctx) {
  const arg_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0], *dim = ctx->inputs[1];
  char buf[200];
  tf_status st;
  int di = red_dtype_index(x->dtype);
  if (di < 0) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU kernel for %s",
                           tf_dtype_name(x->dtype));
  }
  if (dim->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "dimension must be a scalar, got shape %s",
                           tf_shape_str(&dim->shape, buf, sizeof(buf)));
  }
  int64_t axis;
  if (tf__normalize_axis(tf_tensor_get_i64(dim, 0), x->shape.rank,
                         "dimension", &axis, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (x->shape.dims[axis] == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Reduction axis %d is empty in shape %s",
                           (int)axis, tf_shape_str(&x->shape, buf, sizeof(buf)));
  }
  arg_job j = {.f = &arg_table[di][s->which], .x = x->data,
               .es = (int64_t)tf_dtype_size(x->dtype), .outer = 1,
               .d = x->shape.dims[axis], .inner = 1,
               .y64 = s->out_type == TF_INT64};
  tf_shape out_shape = {.rank = 0};
  for (int k = 0; k < x->shape.rank; k++) {
    if (k != axis) {
      out_shape.dims[out_shape.rank++] = x->shape.dims[k];
      *(k < axis ? &j.outer : &j.inner) *= x->shape.dims[k];
    }
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, s->out_type, &out_shape, &y));
  if (y->n > 0) {
    j.y = y->data;
    arg_run(ctx->pool, &j);
  }
  return TF_OK;
}

/* ---- registration ---------------------------------------------------- */

#define RED_KERNEL(op, init, fn, dt)                                           \
  {op, TF_DEVICE_CPU, dt, NULL, init, fn, NULL, free, 0}
#define RED_KERNELS_FN(op, init, fn)                                           \
  RED_KERNEL(op, init, fn, TF_FLOAT32), RED_KERNEL(op, init, fn, TF_FLOAT64),  \
      RED_KERNEL(op, init, fn, TF_INT32), RED_KERNEL(op, init, fn, TF_INT64)
#define RED_KERNELS(op, init) RED_KERNELS_FN(op, init, red_compute)

static const tf_kernel_def reduction_kernels[] = {
    RED_KERNELS("Sum", sum_init),   RED_KERNELS("Prod", prod_init),
    RED_KERNELS("Max", max_init),   RED_KERNELS("Min", min_init),
    RED_KERNELS("Mean", mean_init),
    RED_KERNELS_FN("ArgMax", argmax_init, arg_compute),
    RED_KERNELS_FN("ArgMin", argmin_init, arg_compute),
};

TF_REGISTER_KERNELS(reduction_kernels)
