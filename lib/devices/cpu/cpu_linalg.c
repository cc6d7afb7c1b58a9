/* cpu_linalg.c: CPU kernels for MatrixInverse and MatrixDeterminant.
 *
 * Each matrix of a [..., M, M] batch is copied into a float64 workspace and
 * factored by LU with partial pivoting (row-major, LAPACK-style full row
 * swaps), so float32 inputs get float64 accumulation. As in TF (and
 * LAPACK's getrf), a matrix is singular when a pivot is exactly zero:
 * MatrixInverse then fails with "Input is not invertible." and
 * MatrixDeterminant returns 0. Matrices are spread over the intra-op pool,
 * one workspace per chunk. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

/* ---- LU in float64 ----------------------------------------------------- */

static void swap_rows(double *restrict a, int64_t m, int64_t r1, int64_t r2) {
  double *x = a + r1 * m, *y = a + r2 * m;
  for (int64_t j = 0; j < m; j++) {
    double t = x[j];
    x[j] = y[j];
    y[j] = t;
  }
}

/* Factors the dense m x m matrix a in place into P.a = L.U (L unit lower,
 * stored below the diagonal; U on and above). piv[c] is the row swapped
 * with row c at step c and *sign the permutation's sign. Returns false,
 * leaving a partly factored, at the first exactly-zero pivot. */
static bool lu_factor(double *restrict a, int64_t m, int64_t *piv,
                      int *sign) {
  *sign = 1;
  for (int64_t c = 0; c < m; c++) {
    int64_t r = c;
    double best = fabs(a[c * m + c]);
    for (int64_t i = c + 1; i < m; i++) {
      double v = fabs(a[i * m + c]);
      if (v > best) {
        best = v;
        r = i;
      }
    }
    piv[c] = r;
    if (r != c) {
      swap_rows(a, m, r, c);
      *sign = -*sign;
    }
    double pivot = a[c * m + c];
    if (pivot == 0) {
      return false;
    }
    const double *restrict prow = a + c * m;
    for (int64_t i = c + 1; i < m; i++) {
      double *restrict row = a + i * m;
      double f = row[c] / pivot;
      row[c] = f;
      for (int64_t j = c + 1; j < m; j++) {
        row[j] -= f * prow[j];
      }
    }
  }
  return true;
}

/* inv = A^-1 from A's factors lu/piv: solves L.U.inv = P by row operations
 * (each a unit-stride loop over a whole row of inv). */
static void lu_inverse(const double *restrict lu, const int64_t *piv,
                       int64_t m, double *restrict inv) {
  memset(inv, 0, (size_t)(m * m) * sizeof(double));
  for (int64_t i = 0; i < m; i++) {
    inv[i * m + i] = 1;
  }
  for (int64_t c = 0; c < m; c++) {
    if (piv[c] != c) {
      swap_rows(inv, m, c, piv[c]);
    }
  }
  for (int64_t i = 0; i < m; i++) {
    double *restrict row = inv + i * m;
    for (int64_t p = 0; p < i; p++) {
      double f = lu[i * m + p];
      const double *restrict prow = inv + p * m;
      for (int64_t j = 0; j < m; j++) {
        row[j] -= f * prow[j];
      }
    }
  }
  for (int64_t i = m - 1; i >= 0; i--) {
    double *restrict row = inv + i * m;
    for (int64_t p = i + 1; p < m; p++) {
      double f = lu[i * m + p];
      const double *restrict prow = inv + p * m;
      for (int64_t j = 0; j < m; j++) {
        row[j] -= f * prow[j];
      }
    }
    double d = lu[i * m + i];
    for (int64_t j = 0; j < m; j++) {
      row[j] /= d;
    }
  }
}

/* ---- batch driver ------------------------------------------------------ */

enum { LINALG_OK = 0, LINALG_SINGULAR = 1, LINALG_NOMEM = 2 };

typedef struct linalg_job {
  bool inverse;      /* MatrixInverse, else MatrixDeterminant */
  bool adjoint;      /* invert the (conjugate) transpose */
  tf_dtype dt;       /* float32 or float64 */
  int64_t m;
  const void *in;    /* [batch, m, m] */
  void *out;         /* [batch, m, m] or [batch] */
  atomic_int err;    /* LINALG_* of the first failure */
} linalg_job;

/* Copies matrix b of the batch into w as float64 (transposed if asked). */
static void load_matrix(const linalg_job *j, int64_t b, double *restrict w) {
  int64_t m = j->m, base = b * m * m;
  for (int64_t r = 0; r < m; r++) {
    for (int64_t c = 0; c < m; c++) {
      int64_t src = j->adjoint ? c * m + r : r * m + c;
      w[r * m + c] = j->dt == TF_FLOAT32
                         ? (double)((const float *)j->in)[base + src]
                         : ((const double *)j->in)[base + src];
    }
  }
}

static void store_matrix(const linalg_job *j, int64_t b,
                         const double *restrict w) {
  int64_t mm = j->m * j->m;
  for (int64_t i = 0; i < mm; i++) {
    if (j->dt == TF_FLOAT32) {
      ((float *)j->out)[b * mm + i] = (float)w[i];
    } else {
      ((double *)j->out)[b * mm + i] = w[i];
    }
  }
}

static void store_scalar(const linalg_job *j, int64_t b, double v) {
  if (j->dt == TF_FLOAT32) {
    ((float *)j->out)[b] = (float)v;
  } else {
    ((double *)j->out)[b] = v;
  }
}

static void fail(linalg_job *j, int code) {
  int expected = LINALG_OK;
  atomic_compare_exchange_strong(&j->err, &expected, code);
}

/* One matrix: inverse or determinant of matrix b, with workspaces lu and
 * inv ([m, m] each) and piv ([m]). */
static void linalg_one(linalg_job *j, int64_t b, double *lu, double *inv,
                       int64_t *piv) {
  int sign;
  load_matrix(j, b, lu);
  bool ok = lu_factor(lu, j->m, piv, &sign);
  if (j->inverse) {
    if (!ok) {
      fail(j, LINALG_SINGULAR);
      return;
    }
    lu_inverse(lu, piv, j->m, inv);
    store_matrix(j, b, inv);
    return;
  }
  double det = ok ? (double)sign : 0.0;
  for (int64_t i = 0; ok && i < j->m; i++) {
    det *= lu[i * j->m + i];
  }
  store_scalar(j, b, det);
}

static void linalg_chunk(void *arg, int64_t begin, int64_t end) {
  linalg_job *j = arg;
  size_t mm = (size_t)(j->m * j->m);
  double *lu = malloc(TF_MAX(mm, (size_t)1) * sizeof(double));
  double *inv = j->inverse ? malloc(TF_MAX(mm, (size_t)1) * sizeof(double))
                           : NULL;
  int64_t *piv = malloc(TF_MAX((size_t)j->m, (size_t)1) * sizeof(int64_t));
  if (lu == NULL || piv == NULL || (j->inverse && inv == NULL)) {
    fail(j, LINALG_NOMEM);
  } else {
    for (int64_t b = begin; b < end && atomic_load(&j->err) == LINALG_OK;
         b++) {
      linalg_one(j, b, lu, inv, piv);
    }
  }
  free(lu);
  free(inv);
  free(piv);
}

/* Checks input 0 is [..., M, M] of float32/float64; *m gets M. */
static tf_code check_square(tf_kernel_ctx *ctx, int64_t *m) {
  const tf_tensor *x = ctx->inputs[0];
  char buf[128];
  tf_shape_str(&x->shape, buf, sizeof(buf));
  if (x->dtype != TF_FLOAT32 && x->dtype != TF_FLOAT64) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "expected float32 or float64 input, got %s",
                           tf_dtype_name(x->dtype));
  }
  int r = x->shape.rank;
  if (r < 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Input must have rank >= 2, got shape %s", buf);
  }
  if (x->shape.dims[r - 1] != x->shape.dims[r - 2]) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Input matrix must be square, got shape %s", buf);
  }
  *m = x->shape.dims[r - 1];
  return TF_OK;
}

/* Runs job over batch matrices on the pool and turns its error flag into
 * the kernel's status. */
static tf_code linalg_run(tf_kernel_ctx *ctx, linalg_job *j, int64_t batch) {
  double cube = (double)j->m * (double)j->m * (double)j->m;
  int64_t grain = cube >= 65536.0 ? 1 : (int64_t)(65536.0 / (cube + 1.0));
  atomic_init(&j->err, LINALG_OK);
  tf_parallel_for(ctx->pool, batch, TF_MAX(grain, (int64_t)1), linalg_chunk,
                  j);
  switch (atomic_load(&j->err)) {
  case LINALG_SINGULAR:
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Input is not invertible.");
  case LINALG_NOMEM:
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED,
                           "out of memory for a %lld x %lld LU workspace",
                           (long long)j->m, (long long)j->m);
  default:
    return TF_OK;
  }
}

typedef struct inverse_state {
  bool adjoint;
} inverse_state;

static tf_code inverse_init(const tf_node *node, void **state, tf_status *st) {
  inverse_state *s = tf__xcalloc(1, sizeof(*s));
  tf_code rc = tf_node_attr_get_bool(node, "adjoint", &s->adjoint, st);
  if (rc != TF_OK) {
    free(s);
    return rc;
  }
  *state = s;
  return TF_OK;
}

static void inverse_free(void *state) { free(state); }

static tf_code inverse_compute(tf_kernel_ctx *ctx) {
  const inverse_state *s = ctx->state;
  int64_t m = 0;
  TF_TRY(check_square(ctx, &m));
  const tf_tensor *x = ctx->inputs[0];
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  linalg_job j = {.inverse = true, .adjoint = s->adjoint, .dt = x->dtype,
                  .m = m, .in = x->data, .out = out->data};
  return linalg_run(ctx, &j, out->n / (m * m));
}

static tf_code determinant_compute(tf_kernel_ctx *ctx) {
  int64_t m = 0;
  TF_TRY(check_square(ctx, &m));
  const tf_tensor *x = ctx->inputs[0];
  tf_shape shape = tf_shape_make(x->shape.rank - 2, x->shape.dims);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &shape, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  linalg_job j = {.inverse = false, .dt = x->dtype, .m = m, .in = x->data,
                  .out = out->data};
  return linalg_run(ctx, &j, out->n);
}

static const tf_kernel_def linalg_kernels[] = {
    {.op = "MatrixInverse", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .init = inverse_init, .compute = inverse_compute,
     .free_state = inverse_free},
    {.op = "MatrixInverse", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,
     .init = inverse_init, .compute = inverse_compute,
     .free_state = inverse_free},
    {.op = "MatrixDeterminant", .device_type = TF_DEVICE_CPU,
     .dtype = TF_FLOAT32, .compute = determinant_compute},
    {.op = "MatrixDeterminant", .device_type = TF_DEVICE_CPU,
     .dtype = TF_FLOAT64, .compute = determinant_compute},
};

TF_REGISTER_KERNELS(linalg_kernels)
