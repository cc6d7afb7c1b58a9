/* grad_matrix.c: gradients of the matrix ops, after TensorFlow's
 * python/ops/math_grad.py (MatMul, BatchMatMul, BatchMatMulV2) and
 * linalg_grad.py (MatrixInverse, MatrixDeterminant).
 *
 * MatMul's gradients are MatMuls with the transposes chosen so that no
 * operand is ever transposed by a separate op (and carry grad_a/grad_b).
 * BatchMatMul's are BatchMatMulV2s whose broadcast batch dims are summed
 * back to each operand's batch shape (constant axes when the batch shapes
 * are known, BroadcastGradientArgs otherwise). MatrixInverse:
 * -A^-T dY A^-T (adjoint-aware); MatrixDeterminant: dy * det(A) * A^-T
 * (like TF, it needs A invertible). Complex operands would need
 * conjugation, which this op set lacks: their gradients are refused. */
#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_code no_complex(tf_grad_ctx *ctx) {
  if (tf_node_output_type(ctx->node, 0) == TF_COMPLEX64) {
    return tf_status_set(ctx->st, TF_UNIMPLEMENTED, "gradient of %s '%s': "
                         "complex64 operands are not supported (no Conj op)",
                         tf_node_op(ctx->node), tf_node_name(ctx->node));
  }
  return TF_OK;
}

static tf_code get_flags(tf_grad_ctx *ctx, const char *fa, const char *fb,
                         bool *a, bool *b) {
  TF_TRY(no_complex(ctx));
  TF_TRY(tf_node_attr_get_bool(ctx->node, fa, a, ctx->st));
  return tf_node_attr_get_bool(ctx->node, fb, b, ctx->st);
}

static tf_output matmul(tf_grad_ctx *ctx, tf_output a, tf_output b, bool ta,
                        bool tb, const char *hint) {
  tf_output in[2] = {a, b};
  tf_attr_kv kv[3] = {{"transpose_a", tf_attr_bool(ta)},
                      {"transpose_b", tf_attr_bool(tb)},
                      {hint, tf_attr_bool(true)}};
  return tf__grad_op(ctx, "MatMul", in, 2, kv, 3);
}

static tf_code matmul_grad(tf_grad_ctx *ctx) {
  bool ta, tb;
  TF_TRY(get_flags(ctx, "transpose_a", "transpose_b", &ta, &tb));
  tf_output a = tf__grad_in(ctx, 0), b = tf__grad_in(ctx, 1), g = ctx->dy[0];
  tf_grad *dx = ctx->dx;
  if (!ta && !tb) {
    dx[0].values = matmul(ctx, g, b, false, true, "grad_a");
    dx[1].values = matmul(ctx, a, g, true, false, "grad_b");
  } else if (!ta && tb) {
    dx[0].values = matmul(ctx, g, b, false, false, "grad_a");
    dx[1].values = matmul(ctx, g, a, true, false, "grad_b");
  } else if (ta && !tb) {
    dx[0].values = matmul(ctx, b, g, false, true, "grad_a");
    dx[1].values = matmul(ctx, a, g, false, false, "grad_b");
  } else {
    dx[0].values = matmul(ctx, b, g, true, true, "grad_a");
    dx[1].values = matmul(ctx, g, a, true, true, "grad_b");
  }
  return ctx->st->code;
}

/* ---- BatchMatMul -------------------------------------------------------- */

/* x @ y (adjoints per ax, ay); hint "grad_x" or "grad_y" marks it as the
 * gradient of that operand, as TF's gradient does (NULL: no hint). */
static tf_output bmm(tf_grad_ctx *ctx, tf_output x, tf_output y, bool ax,
                     bool ay, const char *hint) {
  tf_output in[2] = {x, y};
  tf_attr_kv kv[3] = {{"adj_x", tf_attr_bool(ax)},
                      {"adj_y", tf_attr_bool(ay)},
                      {hint, tf_attr_bool(true)}};
  return tf__grad_op(ctx, "BatchMatMulV2", in, 2, kv, hint != NULL ? 3 : 2);
}

/* The batch part (all but the last two dims) of x's static shape. */
static bool static_batch(tf_output x, tf_shape *b) {
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  if (s->rank < 2) {
    return false;
  }
  *b = tf_shape_make(s->rank - 2, s->dims);
  return tf_shape_is_fully_defined(b);
}

/* Axes of bcast(bx, by) that x's batch shape bx was broadcast along. */
static int bcast_axes(const tf_shape *bx, const tf_shape *by, int32_t *axes) {
  int rank = TF_MAX(bx->rank, by->rank), n = 0;
  for (int d = 0; d < rank; d++) {
    int xd = d - (rank - bx->rank), yd = d - (rank - by->rank);
    int64_t xs = xd >= 0 ? bx->dims[xd] : 1, ys = yd >= 0 ? by->dims[yd] : 1;
    if (xd < 0 || (xs == 1 && ys != 1)) {
      axes[n++] = d;
    }
  }
  return n;
}

/* Batch shape of x as a runtime int32 vector: Shape(x)[:-2]. */
static tf_output batch_shape(tf_grad_ctx *ctx, tf_output x) {
  tf_output s = tf__grad_shape(ctx, x);
  tf_output len = tf__grad_op2(ctx, "Sub", tf__gs_size(ctx, s),
                               tf__grad_scalar(ctx, TF_INT32, 2));
  tf_output size = tf__gs_reshape_to(ctx, len, (int64_t[]){1}, 1);
  tf_output in[3] = {s, tf__grad_ivec(ctx, (int32_t[]){0}, 1), size};
  return tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
}

/* g (shaped [bcast batch..., M, K]) summed back to x's shape; other is the
 * other operand. */
static tf_output unbroadcast_batch(tf_grad_ctx *ctx, tf_output g, tf_output x,
                                   tf_output other) {
  tf_shape bx, bo;
  if (g.node == NULL) {
    return g;
  }
  if (static_batch(x, &bx) && static_batch(other, &bo)) {
    int32_t axes[TF_MAX_RANK];
    int n = bcast_axes(&bx, &bo, axes);
    if (n == 0) {
      return g;
    }
    tf_output sum = tf__gs_sum(ctx, g, tf__grad_ivec(ctx, axes, n), false);
    return tf__gs_reshape(ctx, sum, tf__grad_shape(ctx, x));
  }
  /* Output 0 of BroadcastGradientArgs: the axes for its first input. */
  tf_output r = tf__grad_op2(ctx, "BroadcastGradientArgs", batch_shape(ctx, x),
                             batch_shape(ctx, other));
  tf_output sum = tf__gs_sum(ctx, g, r, false);
  return tf__grad_op2(ctx, "Reshape", sum, tf__grad_shape(ctx, x));
}

static tf_code batch_matmul_grad(tf_grad_ctx *ctx) {
  bool ax, ay;
  TF_TRY(get_flags(ctx, "adj_x", "adj_y", &ax, &ay));
  tf_output x = tf__grad_in(ctx, 0), y = tf__grad_in(ctx, 1), g = ctx->dy[0];
  tf_output gx, gy;
  if (!ax && !ay) {
    gx = bmm(ctx, g, y, false, true, "grad_x");
    gy = bmm(ctx, x, g, true, false, "grad_y");
  } else if (!ax && ay) {
    gx = bmm(ctx, g, y, false, false, "grad_x");
    gy = bmm(ctx, g, x, true, false, "grad_y");
  } else if (ax && !ay) {
    gx = bmm(ctx, y, g, false, true, "grad_x");
    gy = bmm(ctx, x, g, false, false, "grad_y");
  } else {
    gx = bmm(ctx, y, g, true, true, "grad_x");
    gy = bmm(ctx, g, x, true, true, "grad_y");
  }
  ctx->dx[0].values = unbroadcast_batch(ctx, gx, x, y);
  ctx->dx[1].values = unbroadcast_batch(ctx, gy, y, x);
  return ctx->st->code;
}

/* ---- MatrixInverse and MatrixDeterminant -------------------------------- */

static tf_code matrix_inverse_grad(tf_grad_ctx *ctx) {
  bool adj;
  TF_TRY(no_complex(ctx));
  TF_TRY(tf_node_attr_get_bool(ctx->node, "adjoint", &adj, ctx->st));
  tf_output ainv = tf__grad_out(ctx, 0);
  tf_output inner = bmm(ctx, ctx->dy[0], ainv, adj, !adj, NULL);
  ctx->dx[0].values =
      tf__grad_op1(ctx, "Neg", bmm(ctx, ainv, inner, !adj, false, NULL));
  return ctx->st->code;
}

static tf_code matrix_determinant_grad(tf_grad_ctx *ctx) {
  TF_TRY(no_complex(ctx));
  tf_output a = tf__grad_in(ctx, 0), det = tf__grad_out(ctx, 0);
  tf_attr_kv kv = {"adjoint", tf_attr_bool(true)};
  tf_output inv_t = tf__grad_op(ctx, "MatrixInverse", &a, 1, &kv, 1);
  tf_output parts[2] = {tf__grad_shape(ctx, det),
                        tf__grad_ivec(ctx, (int32_t[]){1, 1}, 2)};
  tf_output mult = tf__gs_reshape(
      ctx, tf__grad_op2(ctx, "Mul", ctx->dy[0], det),
      tf__gs_vec_concat(ctx, parts, 2));
  ctx->dx[0].values = tf__grad_op2(ctx, "Mul", mult, inv_t);
  return ctx->st->code;
}

static const tf_grad_def matrix_grads[] = {
    {"MatMul", matmul_grad},
    {"BatchMatMul", batch_matmul_grad},
    {"BatchMatMulV2", batch_matmul_grad},
    {"MatrixInverse", matrix_inverse_grad},
    {"MatrixDeterminant", matrix_determinant_grad},
};

TF_REGISTER_GRADIENTS(matrix_grads)
