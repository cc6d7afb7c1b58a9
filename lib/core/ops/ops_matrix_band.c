/* ops_matrix_band.c: op definitions of the matrix_band family: the ops that
 * keep or build bands of a batch of matrices, with TensorFlow's names,
 * inputs and attrs: MatrixBandPart, MatrixDiag and MatrixDiagPart (TF's
 * V1, main diagonal only), MatrixDiagV3 and MatrixDiagPartV3 (a band of
 * diagonals k = d or [lo, hi], packed with TF's align and padding rules).
 * Shape functions accept unknown ranks and dims; the k, num_rows and
 * num_cols inputs are read when they come straight from a Const. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* Fails when input i has a known rank below min (arg names the input). */
static tf_code rank_at_least(tf_shape_ctx *ctx, int i, const char *arg,
                             int min) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank < min) {
    char buf[128];
    return tf_shape_error(ctx, "'%s' must be at least rank %d, got shape %s",
                          arg, min, tf_shape_str(s, buf, sizeof(buf)));
  }
  return TF_OK;
}

/* Fails when input i has a known rank above max. */
static tf_code rank_at_most(tf_shape_ctx *ctx, int i, const char *arg,
                            int max) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank > max) {
    char buf[128];
    return tf_shape_error(ctx, "'%s' must be at most rank %d, got shape %s",
                          arg, max, tf_shape_str(s, buf, sizeof(buf)));
  }
  return TF_OK;
}

static int64_t dim_from_end(const tf_shape *s, int i) {
  if (s->rank == TF_UNKNOWN_RANK || s->rank < i) {
    return TF_UNKNOWN_DIM;
  }
  return s->dims[s->rank - i];
}

static tf_code band_part_shape(tf_shape_ctx *ctx) {
  TF_TRY(rank_at_least(ctx, 0, "input", 2));
  TF_TRY(rank_at_most(ctx, 1, "num_lower", 0));
  TF_TRY(rank_at_most(ctx, 2, "num_upper", 0));
  ctx->out[0] = ctx->in[0];
  return TF_OK;
}

static tf_code diag_shape(tf_shape_ctx *ctx) {
  TF_TRY(rank_at_least(ctx, 0, "diagonal", 1));
  const tf_shape *s = &ctx->in[0];
  if (s->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  if (s->rank + 1 > TF_MAX_RANK) {
    return tf_shape_error(ctx, "'diagonal' has rank %d: the output's rank "
                          "would exceed %d", (int)s->rank, TF_MAX_RANK);
  }
  tf_shape out = *s;
  out.dims[out.rank] = s->dims[s->rank - 1];
  out.rank++;
  ctx->out[0] = out;
  return TF_OK;
}

/* min(a, b) of dims, unknown when either is. */
static int64_t min_dim(int64_t a, int64_t b) {
  if (a == TF_UNKNOWN_DIM || b == TF_UNKNOWN_DIM) {
    return TF_UNKNOWN_DIM;
  }
  return a < b ? a : b;
}

static tf_code diag_part_shape(tf_shape_ctx *ctx) {
  TF_TRY(rank_at_least(ctx, 0, "input", 2));
  const tf_shape *s = &ctx->in[0];
  if (s->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  tf_shape out = tf_shape_make(s->rank - 1, s->dims);
  out.dims[out.rank - 1] = min_dim(dim_from_end(s, 2), dim_from_end(s, 1));
  ctx->out[0] = out;
  return TF_OK;
}

/* Reads the constant k input i into [*lo, *hi]; false when it is not a
 * Const. Errors for a bad rank, count or order. */
static tf_code const_k(tf_shape_ctx *ctx, int i, bool *known, int64_t *lo,
                       int64_t *hi) {
  const tf_tensor *k = ctx->in_value ? ctx->in_value[i] : NULL;
  *known = false;
  TF_TRY(rank_at_most(ctx, i, "k", 1));
  if (k == NULL) {
    return TF_OK;
  }
  if (k->n < 1 || k->n > 2) {
    return tf_shape_error(ctx, "'k' must have only one or two elements, "
                          "received %lld elements", (long long)k->n);
  }
  *lo = tf_tensor_get_i64(k, 0);
  *hi = tf_tensor_get_i64(k, k->n - 1);
  if (*lo > *hi) {
    return tf_shape_error(ctx, "'k': lower diagonal index %lld must not be "
                          "larger than upper diagonal index %lld",
                          (long long)*lo, (long long)*hi);
  }
  *known = true;
  return TF_OK;
}

/* TF's bound on a diagonal index of an [m, n] matrix: 0, or in (-m, n);
 * an unknown m or n bounds nothing on its side. */
static bool k_in_bounds(int64_t k, int64_t m, int64_t n) {
  return k == 0 || ((m == TF_UNKNOWN_DIM || -m < k) &&
                    (n == TF_UNKNOWN_DIM || k < n));
}

static tf_code diag_part_v3_shape(tf_shape_ctx *ctx) {
  TF_TRY(rank_at_least(ctx, 0, "input", 2));
  TF_TRY(rank_at_most(ctx, 2, "padding_value", 0));
  bool known;
  int64_t lo = 0, hi = 0;
  TF_TRY(const_k(ctx, 1, &known, &lo, &hi));
  const tf_shape *s = &ctx->in[0];
  if (!known || s->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  int64_t m = dim_from_end(s, 2), n = dim_from_end(s, 1);
  if (!k_in_bounds(lo, m, n) || !k_in_bounds(hi, m, n)) {
    char buf[128];
    return tf_shape_error(ctx, "'k' = [%lld, %lld] is out of bounds for "
                          "'input' of shape %s: each index must be 0 or in "
                          "(-num_rows, num_cols)", (long long)lo,
                          (long long)hi, tf_shape_str(s, buf, sizeof(buf)));
  }
  int64_t len = TF_UNKNOWN_DIM;
  if (m != TF_UNKNOWN_DIM && n != TF_UNKNOWN_DIM) {
    int64_t a = m + (hi < 0 ? hi : 0), b = n - (lo > 0 ? lo : 0);
    len = a < b ? a : b;
  }
  tf_shape out = tf_shape_make(s->rank - 2, s->dims);
  if (lo < hi) {
    out.dims[out.rank++] = hi - lo + 1;
  }
  out.dims[out.rank++] = len;
  ctx->out[0] = out;
  return TF_OK;
}

/* Marks a num_rows/num_cols input that is not a Const (TF_UNKNOWN_DIM is
 * -1, which is a value: TF's "infer"). */
#define NOT_CONST INT64_MIN

/* The constant scalar input i (-1 is TF's "infer"), or NOT_CONST. */
static int64_t const_scalar(tf_shape_ctx *ctx, int i) {
  const tf_tensor *v = ctx->in_value ? ctx->in_value[i] : NULL;
  return v != NULL && v->n == 1 ? tf_tensor_get_i64(v, 0) : NOT_CONST;
}

/* Output rows and cols from the num_rows/num_cols values (TF's kernel
 * rule: both -1 square, one -1 minimal); unknown where it depends on a fed
 * value or on an unknown diagonal length. */
static void infer_rows_cols(int64_t *rows, int64_t *cols, int64_t min_rows,
                            int64_t min_cols) {
  if (*rows == NOT_CONST || *cols == NOT_CONST) {
    *rows = *rows < 0 ? TF_UNKNOWN_DIM : *rows;
    *cols = *cols < 0 ? TF_UNKNOWN_DIM : *cols;
    return;
  }
  if (*rows == -1 && *cols == -1) {
    *rows = *cols = min_rows == TF_UNKNOWN_DIM
                        ? TF_UNKNOWN_DIM
                        : (min_rows > min_cols ? min_rows : min_cols);
  } else if (*rows == -1) {
    *rows = min_rows;
  } else if (*cols == -1) {
    *cols = min_cols;
  }
}

static tf_code diag_v3_shape(tf_shape_ctx *ctx) {
  TF_TRY(rank_at_least(ctx, 0, "diagonal", 1));
  TF_TRY(rank_at_most(ctx, 2, "num_rows", 0));
  TF_TRY(rank_at_most(ctx, 3, "num_cols", 0));
  TF_TRY(rank_at_most(ctx, 4, "padding_value", 0));
  bool known;
  int64_t lo = 0, hi = 0;
  TF_TRY(const_k(ctx, 1, &known, &lo, &hi));
  const tf_shape *s = &ctx->in[0];
  if (!known || s->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  int batch = s->rank - (lo < hi ? 2 : 1);
  if (batch < 0) {
    char buf[128];
    return tf_shape_error(ctx, "'diagonal' of shape %s must be at least "
                          "rank 2 for a band k = [%lld, %lld]",
                          tf_shape_str(s, buf, sizeof(buf)), (long long)lo,
                          (long long)hi);
  }
  if (batch + 2 > TF_MAX_RANK) {
    return tf_shape_error(ctx, "output rank would exceed %d", TF_MAX_RANK);
  }
  int64_t len = s->dims[s->rank - 1];
  int64_t rows = const_scalar(ctx, 2), cols = const_scalar(ctx, 3);
  int64_t min_rows = TF_UNKNOWN_DIM, min_cols = TF_UNKNOWN_DIM;
  if (len != TF_UNKNOWN_DIM) {
    min_rows = len - (hi < 0 ? hi : 0);
    min_cols = len + (lo > 0 ? lo : 0);
  }
  infer_rows_cols(&rows, &cols, min_rows, min_cols);
  tf_shape out = tf_shape_make(batch, s->dims);
  out.dims[out.rank++] = rows < 0 ? TF_UNKNOWN_DIM : rows;
  out.dims[out.rank++] = cols < 0 ? TF_UNKNOWN_DIM : cols;
  ctx->out[0] = out;
  return TF_OK;
}

#define ALIGN_ATTR                                                             \
  "align: {'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'} = "       \
  "'RIGHT_LEFT'"

static const tf_op_spec matrix_band_ops[] = {
    {.name = "MatrixBandPart",
     .inputs = {"input: T", "num_lower: Tindex", "num_upper: Tindex"},
     .outputs = {"band: T"},
     .attrs = {"T: type", "Tindex: {int32, int64} = int64"},
     .shape_fn = band_part_shape,
     .doc = "Keeps the band of each matrix of input [..., M, N]: element "
            "(m, n) stays when (num_lower < 0 || m - n <= num_lower) && "
            "(num_upper < 0 || n - m <= num_upper), else becomes 0."},
    {.name = "MatrixDiag",
     .inputs = {"diagonal: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type"},
     .shape_fn = diag_shape,
     .doc = "Square matrices [..., N, N] with diagonal [..., N] on the main "
            "diagonal and zeros elsewhere."},
    {.name = "MatrixDiagPart",
     .inputs = {"input: T"},
     .outputs = {"diagonal: T"},
     .attrs = {"T: type"},
     .shape_fn = diag_part_shape,
     .doc = "Main diagonal [..., min(M, N)] of each matrix of input "
            "[..., M, N]."},
    {.name = "MatrixDiagV3",
     .inputs = {"diagonal: T", "k: int32", "num_rows: int32",
                "num_cols: int32", "padding_value: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type", ALIGN_ATTR},
     .shape_fn = diag_v3_shape,
     .doc = "Matrices [..., num_rows, num_cols] with diagonals k (d or "
            "[lo, hi]) taken from diagonal (packed per align) and "
            "padding_value elsewhere; num_rows/num_cols -1 are inferred."},
    {.name = "MatrixDiagPartV3",
     .inputs = {"input: T", "k: int32", "padding_value: T"},
     .outputs = {"diagonal: T"},
     .attrs = {"T: type", ALIGN_ATTR},
     .shape_fn = diag_part_v3_shape,
     .doc = "Diagonals k (d or [lo, hi]) of each matrix of input [..., M, "
            "N], packed per align and padded with padding_value."},
};

TF_REGISTER_OPS("matrix_band", matrix_band_ops)
