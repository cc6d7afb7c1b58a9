/* ops_matrix.c: op definitions of the matrix family: MatMul, BatchMatMul
 * (and BatchMatMulV2, the same op under TF's newer name), MatrixInverse and
 * MatrixDeterminant, with TensorFlow's argument and attr names. Shape
 * functions accept unknown ranks and dims and reject only what known dims
 * prove impossible, naming both shapes for a contraction mismatch. */
#include <stdbool.h>
#include <stdio.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* The bool attr name of node, false when absent (defaults are filled in
 * before shape inference, so absent only means a malformed node). */
static bool attr_bool(const tf_node *node, const char *name) {
  bool v = false;
  if (tf_node_attr_get_bool(node, name, &v, NULL) != TF_OK) {
    return false;
  }
  return v;
}

/* Dim i of s counted from the end (1 = last); unknown when rank unknown. */
static int64_t dim_from_end(const tf_shape *s, int i) {
  if (s->rank == TF_UNKNOWN_RANK || s->rank < i) {
    return TF_UNKNOWN_DIM;
  }
  return s->dims[s->rank - i];
}

/* A known dim wins over an unknown one (callers checked they agree). */
static int64_t merge_dim(int64_t a, int64_t b) {
  return a == TF_UNKNOWN_DIM ? b : a;
}

static bool dims_conflict(int64_t a, int64_t b) {
  return a != TF_UNKNOWN_DIM && b != TF_UNKNOWN_DIM && a != b;
}

/* ---- MatMul ------------------------------------------------------------ */

static tf_code check_rank2(tf_shape_ctx *ctx, int i, const char *arg) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 2) {
    char buf[128];
    return tf_shape_error(ctx, "Shape must be rank 2 but is rank %d for '%s' "
                          "(In[%d]) with shape %s",
                          (int)s->rank, arg, i,
                          tf_shape_str(s, buf, sizeof(buf)));
  }
  return TF_OK;
}

/* Error naming both operand shapes and the attrs that transposed them. */
static tf_code contraction_error(tf_shape_ctx *ctx, const char *ta_name,
                                 bool ta, const char *tb_name, bool tb,
                                 int64_t ka, int64_t kb) {
  char sa[128], sb[128];
  return tf_shape_error(ctx, "Matrix size-incompatible: In[0]: %s, In[1]: %s "
                        "(%s=%s, %s=%s: contraction dims %lld vs %lld)",
                        tf_shape_str(&ctx->in[0], sa, sizeof(sa)),
                        tf_shape_str(&ctx->in[1], sb, sizeof(sb)), ta_name,
                        ta ? "true" : "false", tb_name, tb ? "true" : "false",
                        (long long)ka, (long long)kb);
}

static tf_code matmul_shape(tf_shape_ctx *ctx) {
  bool ta = attr_bool(ctx->node, "transpose_a");
  bool tb = attr_bool(ctx->node, "transpose_b");
  TF_TRY(check_rank2(ctx, 0, "a"));
  TF_TRY(check_rank2(ctx, 1, "b"));
  const tf_shape *a = &ctx->in[0], *b = &ctx->in[1];
  int64_t ka = dim_from_end(a, ta ? 2 : 1);
  int64_t kb = dim_from_end(b, tb ? 1 : 2);
  if (dims_conflict(ka, kb)) {
    return contraction_error(ctx, "transpose_a", ta, "transpose_b", tb, ka,
                             kb);
  }
  ctx->out[0] = tf_shape_of(2, dim_from_end(a, ta ? 1 : 2),
                            dim_from_end(b, tb ? 2 : 1));
  return TF_OK;
}

/* ---- BatchMatMul ------------------------------------------------------- */

static tf_code check_rank_ge2(tf_shape_ctx *ctx, int i, const char *arg) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank < 2) {
    char buf[128];
    return tf_shape_error(ctx, "Shape must be at least rank 2 but is rank %d "
                          "for '%s' (In[%d]) with shape %s",
                          (int)s->rank, arg, i,
                          tf_shape_str(s, buf, sizeof(buf)));
  }
  return TF_OK;
}

/* The leading (batch) dims of s, which has known rank >= 2. */
static tf_shape batch_part(const tf_shape *s) {
  return tf_shape_make(s->rank - 2, s->dims);
}

static tf_code batch_matmul_shape(tf_shape_ctx *ctx) {
  bool ax = attr_bool(ctx->node, "adj_x");
  bool ay = attr_bool(ctx->node, "adj_y");
  TF_TRY(check_rank_ge2(ctx, 0, "x"));
  TF_TRY(check_rank_ge2(ctx, 1, "y"));
  const tf_shape *x = &ctx->in[0], *y = &ctx->in[1];
  int64_t kx = dim_from_end(x, ax ? 2 : 1);
  int64_t ky = dim_from_end(y, ay ? 1 : 2);
  if (dims_conflict(kx, ky)) {
    return contraction_error(ctx, "adj_x", ax, "adj_y", ay, kx, ky);
  }
  if (x->rank == TF_UNKNOWN_RANK || y->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  tf_shape bx = batch_part(x), by = batch_part(y), out;
  if (tf_shape_broadcast(&bx, &by, &out, NULL) != TF_OK) {
    char sx[128], sy[128];
    return tf_shape_error(ctx, "In[0] and In[1] must have compatible batch "
                          "dimensions: %s vs. %s",
                          tf_shape_str(x, sx, sizeof(sx)),
                          tf_shape_str(y, sy, sizeof(sy)));
  }
  out.dims[out.rank] = dim_from_end(x, ax ? 1 : 2);
  out.dims[out.rank + 1] = dim_from_end(y, ay ? 2 : 1);
  out.rank += 2;
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- MatrixInverse, MatrixDeterminant ---------------------------------- */

/* Checks input 0 is [..., M, M] as far as known; *m gets M or unknown. */
static tf_code square_input(tf_shape_ctx *ctx, int64_t *m) {
  TF_TRY(check_rank_ge2(ctx, 0, "input"));
  const tf_shape *s = &ctx->in[0];
  int64_t r = dim_from_end(s, 2), c = dim_from_end(s, 1);
  if (dims_conflict(r, c)) {
    char buf[128];
    return tf_shape_error(ctx, "Input matrix must be square, got shape %s "
                          "(%lld x %lld)",
                          tf_shape_str(s, buf, sizeof(buf)), (long long)r,
                          (long long)c);
  }
  *m = merge_dim(r, c);
  return TF_OK;
}

static tf_code matrix_inverse_shape(tf_shape_ctx *ctx) {
  int64_t m = 0;
  TF_TRY(square_input(ctx, &m));
  tf_shape out = ctx->in[0];
  if (out.rank != TF_UNKNOWN_RANK) {
    out.dims[out.rank - 1] = m;
    out.dims[out.rank - 2] = m;
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code matrix_determinant_shape(tf_shape_ctx *ctx) {
  int64_t m = 0;
  TF_TRY(square_input(ctx, &m));
  const tf_shape *s = &ctx->in[0];
  ctx->out[0] = s->rank == TF_UNKNOWN_RANK ? tf_shape_unknown()
                                           : batch_part(s);
  return TF_OK;
}

#define BATCH_MATMUL_T                                                         \
  "T: {bfloat16, half, float, double, int32, int64, complex64}"
#define BATCH_MATMUL_DOC                                                       \
  "Batched matrix product of x [..., M, K] and y [..., K, N] (adj_x/adj_y "    \
  "transpose), batch dims broadcast."

static const tf_op_spec matrix_ops[] = {
    {.name = "MatMul",
     .inputs = {"a: T", "b: T"},
     .outputs = {"product: T"},
     .attrs = {"transpose_a: bool = false", "transpose_b: bool = false",
               "T: {bfloat16, half, float, double, int32, int64, complex64}",
               "grad_a: bool = false", "grad_b: bool = false"},
     .shape_fn = matmul_shape,
     .doc = "Matrix product of 2-D a [M, K] and b [K, N], optionally "
            "transposing either first."},
    {.name = "BatchMatMul",
     .inputs = {"x: T", "y: T"},
     .outputs = {"output: T"},
     .attrs = {BATCH_MATMUL_T, "adj_x: bool = false", "adj_y: bool = false"},
     .shape_fn = batch_matmul_shape,
     .doc = BATCH_MATMUL_DOC,
     .deviation = "batch dims broadcast as in BatchMatMulV2; TF's "
                  "BatchMatMul wants equal batch dims (every graph TF "
                  "accepts computes the same here)"},
    /* grad_x, grad_y: TF's hints that the product is the gradient of a
     * BatchMatMul's x or y (set by its gradient); no effect on the result. */
    {.name = "BatchMatMulV2",
     .inputs = {"x: T", "y: T"},
     .outputs = {"output: T"},
     .attrs = {BATCH_MATMUL_T, "adj_x: bool = false", "adj_y: bool = false",
               "grad_x: bool = false", "grad_y: bool = false"},
     .shape_fn = batch_matmul_shape,
     .doc = BATCH_MATMUL_DOC},
    {.name = "MatrixInverse",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {"adjoint: bool = false",
               "T: {double, float, half, complex64}"},
     .shape_fn = matrix_inverse_shape,
     .doc = "Inverse of each square matrix in input [..., M, M] (of its "
            "adjoint with adjoint=true); fails if one is singular."},
    {.name = "MatrixDeterminant",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {half, float, double, complex64}"},
     .shape_fn = matrix_determinant_shape,
     .doc = "Determinant of each square matrix in input [..., M, M]; output "
            "has shape [...]."},
};

TF_REGISTER_OPS("matrix", matrix_ops)
