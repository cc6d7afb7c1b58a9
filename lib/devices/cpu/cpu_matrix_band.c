/* cpu_matrix_band.c: CPU kernels of the matrix_band family (MatrixBandPart,
 * MatrixDiag, MatrixDiagPart, MatrixDiagV3, MatrixDiagPartV3) for every
 * non-string dtype. The kernels only move elements, so they work on raw
 * bytes of the element size; zero is all-zero bytes for every numeric
 * dtype and bool. Checks and error texts follow TF's kernels
 * (matrix_band_part_op.cc, matrix_diag_op.cc). Packing of a band of
 * diagonals: diagonal d (lo <= d <= hi) is row hi - d of the packed
 * [num_diags, max_diag_len] block, starting at column 0 when it is
 * left-aligned and at max_diag_len - len(d) when right-aligned; align
 * "X_Y" aligns superdiagonals (d >= 0) by X and subdiagonals (d <= 0) by Y,
 * the main diagonal counting as left if either says LEFT. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

static tf_code no_string(tf_kernel_ctx *ctx, const tf_tensor *x,
                         const char *arg) {
  if (x->dtype == TF_STRING) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "'%s' has dtype string; only numeric and bool "
                           "tensors are supported", arg);
  }
  return TF_OK;
}

/* The scalar int input i into *v; error naming arg when not a scalar. */
static tf_code scalar_arg(tf_kernel_ctx *ctx, int i, const char *arg,
                          int64_t *v) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 0) {
    char buf[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be scalar, got shape %s", arg,
                           tf_shape_str(&t->shape, buf, sizeof(buf)));
  }
  *v = tf_tensor_get_i64(t, 0);
  return TF_OK;
}

/* ---- MatrixBandPart ----------------------------------------------------- */

static tf_code band_part_args(tf_kernel_ctx *ctx, int64_t *lower,
                              int64_t *upper) {
  const tf_tensor *x = ctx->inputs[0];
  TF_TRY(no_string(ctx, x, "input"));
  if (x->shape.rank < 2) {
    char buf[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must be at least 2-dim, received shape: %s",
                           tf_shape_str(&x->shape, buf, sizeof(buf)));
  }
  TF_TRY(scalar_arg(ctx, 1, "num_lower", lower));
  TF_TRY(scalar_arg(ctx, 2, "num_upper", upper));
  int64_t m = x->shape.dims[x->shape.rank - 2];
  int64_t n = x->shape.dims[x->shape.rank - 1];
  if (*lower > m) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "num_lower must be negative or less or equal to "
                           "number of rows (%" PRId64 ") got: %" PRId64, m,
                           *lower);
  }
  if (*upper > n) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "num_upper must be negative or less or equal to "
                           "number of columns (%" PRId64 ") got: %" PRId64, n,
                           *upper);
  }
  return TF_OK;
}

static tf_code band_part_compute(tf_kernel_ctx *ctx) {
  int64_t lower = 0, upper = 0;
  TF_TRY(band_part_args(ctx, &lower, &upper));
  const tf_tensor *x = ctx->inputs[0];
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  size_t es = tf_dtype_size(x->dtype);
  int64_t m = x->shape.dims[x->shape.rank - 2];
  int64_t n = x->shape.dims[x->shape.rank - 1];
  int64_t rows = y->n / n;
  const char *src = x->data;
  char *dst = y->data;
  memset(dst, 0, y->nbytes);
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = r % m;
    int64_t b = lower < 0 ? 0 : TF_MAX(i - lower, (int64_t)0);
    int64_t e = upper < 0 ? n : TF_MIN(i + upper + 1, n);
    if (b < e) {
      size_t off = (size_t)(r * n + b) * es;
      memcpy(dst + off, src + off, (size_t)(e - b) * es);
    }
  }
  return TF_OK;
}

/* ---- diagonal geometry -------------------------------------------------- */

typedef struct diag_geom {
  int64_t m, n;        /* matrix rows and columns */
  int64_t lo, hi;      /* diagonal band */
  int64_t max_len;     /* packed row length */
  bool left_super;     /* superdiagonals left-aligned */
  bool left_sub;       /* subdiagonals left-aligned */
} diag_geom;

static int64_t diag_len(const diag_geom *g, int64_t d) {
  return TF_MIN(g->m + TF_MIN(d, (int64_t)0), g->n - TF_MAX(d, (int64_t)0));
}

/* Column of the packed row where diagonal d's element 0 sits. */
static int64_t diag_offset(const diag_geom *g, int64_t d) {
  bool left = (d >= 0 && g->left_super) || (d <= 0 && g->left_sub);
  return left ? 0 : g->max_len - diag_len(g, d);
}

typedef struct align_state {
  bool left_super, left_sub;
} align_state;

static tf_code align_init(const tf_node *node, void **state, tf_status *st) {
  const char *a = NULL;
  TF_TRY(tf_node_attr_get_string(node, "align", &a, st));
  align_state *s = tf__xcalloc(1, sizeof(*s));
  s->left_super = strncmp(a, "LEFT", 4) == 0;
  const char *us = strchr(a, '_');
  s->left_sub = us != NULL && strcmp(us + 1, "LEFT") == 0;
  *state = s;
  return TF_OK;
}

/* Reads k (scalar or 1-2 element vector) from input i into [lo, hi]. */
static tf_code read_k(tf_kernel_ctx *ctx, int i, int64_t *lo, int64_t *hi) {
  const tf_tensor *k = ctx->inputs[i];
  if (k->shape.rank > 1) {
    char buf[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "diag_index (k) must be a scalar or vector, got "
                           "shape %s",
                           tf_shape_str(&k->shape, buf, sizeof(buf)));
  }
  if (k->n < 1 || k->n > 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "diag_index (k) must have only one or two "
                           "elements, received %" PRId64 " elements", k->n);
  }
  *lo = tf_tensor_get_i64(k, 0);
  *hi = tf_tensor_get_i64(k, k->n - 1);
  if (*lo > *hi) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "lower_diag_index must not be larger than "
                           "upper_diag_index: %" PRId64 " > %" PRId64, *lo,
                           *hi);
  }
  return TF_OK;
}

/* Checks input i is a scalar of x's dtype; *pad points at its bytes. */
static tf_code read_padding(tf_kernel_ctx *ctx, int i, const char **pad) {
  const tf_tensor *p = ctx->inputs[i];
  if (p->shape.rank != 0) {
    char buf[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "padding_value must be a scalar, got shape %s",
                           tf_shape_str(&p->shape, buf, sizeof(buf)));
  }
  *pad = p->data;
  return TF_OK;
}

static const char k_zero[16];

/* ---- MatrixDiagPart, MatrixDiagPartV3 ----------------------------------- */

/* Fills out (batch blocks of [num_diags, max_len]) from x's matrices. */
static void diag_part_fill(const diag_geom *g, const char *x, char *out,
                           int64_t batch, size_t es, const char *pad) {
  int64_t nd = g->hi - g->lo + 1;
  for (int64_t b = 0; b < batch; b++) {
    const char *mat = x + (size_t)(b * g->m * g->n) * es;
    for (int64_t j = 0; j < nd; j++) {
      int64_t d = g->hi - j, len = diag_len(g, d), off = diag_offset(g, d);
      int64_t r0 = TF_MAX(-d, (int64_t)0), c0 = TF_MAX(d, (int64_t)0);
      char *row = out + (size_t)((b * nd + j) * g->max_len) * es;
      for (int64_t p = 0; p < g->max_len; p++) {
        int64_t i = p - off;
        const char *src = i >= 0 && i < len
                              ? mat + (size_t)((r0 + i) * g->n + c0 + i) * es
                              : pad;
        memcpy(row + (size_t)p * es, src, es);
      }
    }
  }
}

/* Checks k's bounds against x [..., M, N] (TF's rule) and fills g. */
static tf_code diag_part_geom(tf_kernel_ctx *ctx, const tf_tensor *x,
                              diag_geom *g) {
  char buf[96];
  if (x->shape.rank < 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must be at least 2-dim, received shape: %s",
                           tf_shape_str(&x->shape, buf, sizeof(buf)));
  }
  g->m = x->shape.dims[x->shape.rank - 2];
  g->n = x->shape.dims[x->shape.rank - 1];
  int64_t k[2] = {g->lo, g->hi};
  const char *nm[2] = {"lower", "upper"};
  for (int i = 0; i < 2; i++) {
    if (!(k[i] == 0 || (-g->m < k[i] && k[i] < g->n))) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s_diag_index is out of bound: %" PRId64
                             ". It must be between %" PRId64 " and %" PRId64,
                             nm[i], k[i], -g->m, g->n);
    }
  }
  g->max_len = TF_MIN(g->m + TF_MIN(g->hi, (int64_t)0),
                      g->n - TF_MAX(g->lo, (int64_t)0));
  g->max_len = TF_MAX(g->max_len, (int64_t)0);
  return TF_OK;
}

static tf_code diag_part_run(tf_kernel_ctx *ctx, diag_geom *g,
                             const char *pad) {
  const tf_tensor *x = ctx->inputs[0];
  TF_TRY(no_string(ctx, x, "input"));
  TF_TRY(diag_part_geom(ctx, x, g));
  tf_shape s = tf_shape_make(x->shape.rank - 2, x->shape.dims);
  if (g->lo < g->hi) {
    s.dims[s.rank++] = g->hi - g->lo + 1;
  }
  s.dims[s.rank++] = g->max_len;
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &s, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  int64_t batch = tf_shape_num_elements(&s) /
                  ((g->hi - g->lo + 1) * g->max_len);
  diag_part_fill(g, x->data, y->data, batch, tf_dtype_size(x->dtype), pad);
  return TF_OK;
}

static tf_code diag_part_compute(tf_kernel_ctx *ctx) {
  diag_geom g = {.left_super = true, .left_sub = true};
  return diag_part_run(ctx, &g, k_zero);
}

static tf_code diag_part_v3_compute(tf_kernel_ctx *ctx) {
  const align_state *a = ctx->state;
  diag_geom g = {.left_super = a->left_super, .left_sub = a->left_sub};
  const char *pad = NULL;
  TF_TRY(read_k(ctx, 1, &g.lo, &g.hi));
  TF_TRY(read_padding(ctx, 2, &pad));
  return diag_part_run(ctx, &g, pad);
}

/* ---- MatrixDiag, MatrixDiagV3 ------------------------------------------- */

/* Fills out (batch matrices [m, n]) from packed diagonals diag. */
static void diag_fill(const diag_geom *g, const char *diag, char *out,
                      int64_t batch, size_t es, const char *pad) {
  int64_t nd = g->hi - g->lo + 1;
  for (int64_t b = 0; b < batch; b++) {
    const char *blk = diag + (size_t)(b * nd * g->max_len) * es;
    char *mat = out + (size_t)(b * g->m * g->n) * es;
    for (int64_t r = 0; r < g->m; r++) {
      for (int64_t c = 0; c < g->n; c++) {
        int64_t d = c - r;
        const char *src = pad;
        if (d >= g->lo && d <= g->hi) {
          int64_t p = TF_MIN(r, c) + diag_offset(g, d);
          src = blk + (size_t)((g->hi - d) * g->max_len + p) * es;
        }
        memcpy(mat + (size_t)(r * g->n + c) * es, src, es);
      }
    }
  }
}

/* TF's checks of the diagonal's shape against k and the sizes asked for;
 * fills g->m, g->n (inferring -1s) and g->max_len. */
static tf_code diag_geom_of(tf_kernel_ctx *ctx, const tf_tensor *dg,
                            int64_t rows, int64_t cols, diag_geom *g) {
  char buf[96];
  int r = dg->shape.rank;
  tf_shape_str(&dg->shape, buf, sizeof(buf));
  if (r < 1 || (g->lo < g->hi && r < 2)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "diagonal must be at least %s, received shape: %s",
                           g->lo < g->hi ? "2-dim for a band k" : "1-dim",
                           buf);
  }
  if (g->lo < g->hi && dg->shape.dims[r - 2] != g->hi - g->lo + 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "The number of diagonals provided in the input "
                           "(shape %s) does not match the lower_diag_index "
                           "and upper_diag_index range [%" PRId64 ", %" PRId64
                           "].", buf, g->lo, g->hi);
  }
  g->max_len = dg->shape.dims[r - 1];
  int64_t min_rows = g->max_len - TF_MIN(g->hi, (int64_t)0);
  int64_t min_cols = g->max_len + TF_MAX(g->lo, (int64_t)0);
  if ((rows != -1 && rows < min_rows) || (cols != -1 && cols < min_cols)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "The number of %s is too small (%" PRId64
                           " < %" PRId64 ").", rows != -1 && rows < min_rows
                           ? "rows" : "columns",
                           rows != -1 && rows < min_rows ? rows : cols,
                           rows != -1 && rows < min_rows ? min_rows
                                                         : min_cols);
  }
  if (rows == -1 && cols == -1) {
    rows = cols = TF_MAX(min_rows, min_cols);
  } else if (rows == -1) {
    rows = min_rows;
  } else if (cols == -1) {
    cols = min_cols;
  }
  if (rows != min_rows && cols != min_cols) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "The number of rows or columns is not consistent "
                           "with the specified d_lower, d_upper, and "
                           "diagonal.");
  }
  g->m = rows;
  g->n = cols;
  return TF_OK;
}

static tf_code diag_run(tf_kernel_ctx *ctx, diag_geom *g, int64_t rows,
                        int64_t cols, const char *pad) {
  const tf_tensor *dg = ctx->inputs[0];
  TF_TRY(no_string(ctx, dg, "diagonal"));
  TF_TRY(diag_geom_of(ctx, dg, rows, cols, g));
  int batch_rank = dg->shape.rank - (g->lo < g->hi ? 2 : 1);
  if (batch_rank + 2 > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "output rank would exceed %d", TF_MAX_RANK);
  }
  tf_shape s = tf_shape_make(batch_rank, dg->shape.dims);
  int64_t batch = tf_shape_num_elements(&s);
  s.dims[s.rank++] = g->m;
  s.dims[s.rank++] = g->n;
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dg->dtype, &s, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  diag_fill(g, dg->data, y->data, batch, tf_dtype_size(dg->dtype), pad);
  return TF_OK;
}

static tf_code diag_compute(tf_kernel_ctx *ctx) {
  diag_geom g = {.left_super = true, .left_sub = true};
  return diag_run(ctx, &g, -1, -1, k_zero);
}

static tf_code diag_v3_compute(tf_kernel_ctx *ctx) {
  const align_state *a = ctx->state;
  diag_geom g = {.left_super = a->left_super, .left_sub = a->left_sub};
  int64_t rows = 0, cols = 0;
  const char *pad = NULL;
  TF_TRY(read_k(ctx, 1, &g.lo, &g.hi));
  TF_TRY(scalar_arg(ctx, 2, "num_rows", &rows));
  TF_TRY(scalar_arg(ctx, 3, "num_cols", &cols));
  TF_TRY(read_padding(ctx, 4, &pad));
  return diag_run(ctx, &g, rows, cols, pad);
}

static const tf_kernel_def matrix_band_kernels[] = {
    {.op = "MatrixBandPart", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = band_part_compute},
    {.op = "MatrixDiag", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .compute = diag_compute},
    {.op = "MatrixDiagPart", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = diag_part_compute},
    {.op = "MatrixDiagV3", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .init = align_init, .compute = diag_v3_compute,
     .free_state = free},
    {.op = "MatrixDiagPartV3", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .init = align_init,
     .compute = diag_part_v3_compute, .free_state = free},
};

TF_REGISTER_KERNELS(matrix_band_kernels)
