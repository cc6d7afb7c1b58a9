/* cpu_training_sparse.c: CPU kernels of the row-wise optimizer updates
 * (SparseApplyMomentum, SparseApplyAdagrad, SparseApplyAdadelta,
 * SparseApplyRMSProp) and of SparseApplyAdam. The SparseApply* kernels
 * keep TensorFlow's semantics: grad[i] updates row indices[i] of the
 * variable and its slots, one index after the other, so a duplicate index
 * updates its row twice (TF's optimizers sum duplicates first). Large
 * updates split the variable's rows over the pool: each thread walks all
 * the indices and applies those that fall in its rows, in order, which
 * keeps that sequential meaning exactly.
 *
 * SparseApplyAdam is TF's non-lazy sparse Adam (what AdamOptimizer builds
 * from Assign, ScatterAdd and AssignSub): duplicate rows are summed first,
 * then every row of m, v and var is updated, with a zero gradient for the
 * rows not given; the result is the dense ApplyAdam of the densified
 * gradient. Indices are all checked before anything is written. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_training.h"

static int64_t index_at(const tf_tensor *idx, int64_t i) {
  return idx->dtype == TF_INT32 ? ((const int32_t *)idx->data)[i]
                                : ((const int64_t *)idx->data)[i];
}

/* grad rows match indices and var[1:]. */
static tf_code check_grad_rows(const tf__train_call *c, tf_status *st) {
  const tf_shape *v = &c->vals[0]->shape, *g = &c->grad->shape;
  char a[96], b[96];
  if (v->rank < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "var (%s) must be at least 1 dimensional, got %s",
                         c->vars[0]->base.name, tf_shape_str(v, a, sizeof a));
  }
  bool ok = g->rank == v->rank && g->dims[0] == c->indices->n;
  for (int d = 1; ok && d < v->rank; d++) {
    ok = g->dims[d] == v->dims[d];
  }
  if (!ok) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "grad must have shape [%" PRId64 "] + var.shape[1:] "
                         "(one row per index), got grad %s and var (%s) %s",
                         c->indices->n, tf_shape_str(g, a, sizeof a),
                         c->vars[0]->base.name, tf_shape_str(v, b, sizeof b));
  }
  return TF_OK;
}

/* Every check of a sparse update, before anything is written. */
static tf_code check_sparse(const tf__train_call *c, tf_status *st) {
  TF_TRY(tf__train_check_slots(c, st));
  TF_TRY(check_grad_rows(c, st));
  int64_t dim0 = c->vals[0]->shape.dims[0];
  for (int64_t i = 0; i < c->indices->n; i++) {
    int64_t k = index_at(c->indices, i);
    if (k < 0 || k >= dim0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Index %" PRId64 " at offset %" PRId64 " in "
                           "indices is out of range [0, %" PRId64 ") "
                           "(variable %s)", k, i, dim0,
                           c->vars[0]->base.name);
    }
  }
  return TF_OK;
}

/* Row r of every variable (elements row * r onwards). */
static void row_ptrs(const tf__train_call *c, int64_t r, int64_t row,
                     void **x) {
  size_t es = tf_dtype_size(c->s->dtype);
  for (int i = 0; i < c->s->n_refs; i++) {
    x[i] = (char *)c->vals[i]->data + (size_t)(r * row) * es;
  }
}

/* Splits rows [0, dim0) over the pool so that each chunk holds about
 * TF__TRAIN_GRAIN elements of work (work: elements updated in all). */
static void split_rows(const tf__train_call *c, int64_t dim0, int64_t work,
                       tf_range_fn fn, void *arg) {
  if (work < TF__TRAIN_GRAIN || dim0 < 2) {
    fn(arg, 0, dim0);
    return;
  }
  int64_t chunk = dim0 * TF__TRAIN_GRAIN / work;
  tf_parallel_for(c->ctx->pool, dim0, chunk > 0 ? chunk : 1, fn, arg);
}

/* ---- SparseApply*: row by row, in index order ---------------------------- */

static void indexed_rows(void *arg, int64_t rb, int64_t re) {
  const tf__train_call *c = arg;
  const tf_tensor *var = c->vals[0];
  int64_t row = var->n / var->shape.dims[0];
  size_t es = tf_dtype_size(c->s->dtype);
  tf__train_span_fn span = c->s->kind->span[c->s->dtype == TF_FLOAT64];
  void *x[TF__TRAIN_MAX_REFS];
  for (int64_t i = 0; i < c->indices->n; i++) {
    int64_t r = index_at(c->indices, i);
    if (r < rb || r >= re) {
      continue;
    }
    row_ptrs(c, r, row, x);
    span(&c->p, x, (const char *)c->grad->data + (size_t)(i * row) * es, row);
  }
}

static tf_code sparse_locked(tf__train_call *c, tf_status *st) {
  TF_TRY(check_sparse(c, st));
  int64_t dim0 = c->vals[0]->shape.dims[0];
  if (dim0 > 0) {
    split_rows(c, dim0, c->grad->n, indexed_rows, c);
  }
  return TF_OK;
}

static tf_code sparse_compute(tf_kernel_ctx *ctx) {
  return tf__train_run(ctx, sparse_locked);
}

/* ---- SparseApplyAdam: duplicates summed, every row updated --------------- */

typedef struct adam_job {
  const tf__train_call *c;
  int64_t row;
  const int32_t *slot; /* per var row: its summed grad row, or -1 */
  const char *gsum;    /* summed grad rows */
  const char *zeros;   /* zrows rows of zeros */
  int64_t zrows;
} adam_job;

static void adam_rows(void *arg, int64_t rb, int64_t re) {
  const adam_job *j = arg;
  const tf__train_call *c = j->c;
  size_t es = tf_dtype_size(c->s->dtype);
  tf__train_span_fn span = c->s->kind->span[c->s->dtype == TF_FLOAT64];
  void *x[TF__TRAIN_MAX_REFS];
  for (int64_t r = rb; r < re;) {
    int64_t n = 1;
    const char *g = j->zeros;
    if (j->slot[r] >= 0) {
      g = j->gsum + (size_t)j->slot[r] * (size_t)j->row * es;
    } else { /* a run of rows without gradient */
      while (r + n < re && n < j->zrows && j->slot[r + n] < 0) {
        n++;
      }
    }
    row_ptrs(c, r, j->row, x);
    span(&c->p, x, g, n * j->row);
    r += n;
  }
}

static void add_row(tf_dtype dt, char *dst, const char *src, int64_t n) {
  if (dt == TF_FLOAT32) {
    float *restrict d = (float *)dst;
    const float *restrict s = (const float *)src;
    for (int64_t i = 0; i < n; i++) {
      d[i] += s[i];
    }
  } else {
    double *restrict d = (double *)dst;
    const double *restrict s = (const double *)src;
    for (int64_t i = 0; i < n; i++) {
      d[i] += s[i];
    }
  }
}

/* Fills j->slot and j->gsum (rows summed in index order); false on OOM. */
static bool sum_duplicates(const tf__train_call *c, adam_job *j,
                           int32_t *slot, int64_t dim0) {
  size_t es = tf_dtype_size(c->s->dtype);
  int64_t nu = 0;
  for (int64_t r = 0; r < dim0; r++) {
    slot[r] = -1;
  }
  for (int64_t i = 0; i < c->indices->n; i++) {
    int64_t r = index_at(c->indices, i);
    if (slot[r] < 0) {
      slot[r] = (int32_t)nu++;
    }
  }
  char *gsum = calloc((size_t)(nu * j->row) + 1, es); /* +1: never 0 */
  if (gsum == NULL) {
    return false;
  }
  for (int64_t i = 0; i < c->indices->n; i++) {
    int64_t k = slot[index_at(c->indices, i)];
    add_row(c->s->dtype, gsum + (size_t)(k * j->row) * es,
            (const char *)c->grad->data + (size_t)(i * j->row) * es, j->row);
  }
  j->slot = slot;
  j->gsum = gsum;
  return true;
}

static tf_code adam_locked(tf__train_call *c, tf_status *st) {
  TF_TRY(check_sparse(c, st));
  const tf_tensor *var = c->vals[0];
  int64_t dim0 = var->shape.dims[0];
  if (var->n == 0) {
    return TF_OK;
  }
  if (c->indices->n > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "SparseApplyAdam takes at most %d indices",
                         INT32_MAX);
  }
  adam_job j = {.c = c, .row = var->n / dim0};
  j.zrows = j.row >= 1024 ? 1 : 1024 / j.row;
  int32_t *slot = malloc((size_t)dim0 * sizeof *slot);
  char *zeros = calloc((size_t)(j.zrows * j.row),
                       tf_dtype_size(c->s->dtype));
  bool ok = slot != NULL && zeros != NULL && sum_duplicates(c, &j, slot, dim0);
  if (ok) {
    j.zeros = zeros;
    split_rows(c, dim0, var->n, adam_rows, &j);
  }
  free((void *)j.gsum);
  free(zeros);
  free(slot);
  if (!ok) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory summing the gradient rows of %s",
                         c->vars[0]->base.name);
  }
  return TF_OK;
}

static tf_code adam_compute(tf_kernel_ctx *ctx) {
  return tf__train_run(ctx, adam_locked);
}

/* ---- registration -------------------------------------------------------- */

#define SPARSE(name, fn)                                                       \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,              \
   .init = tf__train_init, .compute = fn,                                      \
   .free_state = tf__train_free_state},                                        \
      {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,          \
       .init = tf__train_init, .compute = fn,                                  \
       .free_state = tf__train_free_state}

static const tf_kernel_def sparse_training_kernels[] = {
    SPARSE("SparseApplyMomentum", sparse_compute),
    SPARSE("SparseApplyAdagrad", sparse_compute),
    SPARSE("SparseApplyAdadelta", sparse_compute),
    SPARSE("SparseApplyRMSProp", sparse_compute),
    SPARSE("SparseApplyAdam", adam_compute),
};

TF_REGISTER_KERNELS(sparse_training_kernels)
