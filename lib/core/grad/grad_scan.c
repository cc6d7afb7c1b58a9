/* grad_scan.c: gradients of Cumsum and Cumprod, after TensorFlow's
 * python/ops/math_grad.py (_CumsumGrad, _CumprodGrad). The axis gets no
 * gradient.
 *
 * Cumsum: dx = cumsum(dy) along the same axis with the same exclusive and
 * the opposite reverse.
 * Cumprod: dx = cumsum(cumprod(x) * dy, same exclusive, opposite reverse)
 * / x, TF's formula verbatim. As TF notes ("This fails when x contains
 * 0"), it is wrong where x has a zero: the division gives NaN or Inf
 * there instead of the product of the other factors. We mirror TF. */
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

/* op(x, axis) with exclusive and reverse attrs. */
static tf_output scan(tf_grad_ctx *ctx, const char *op, tf_output x,
                      bool exclusive, bool reverse) {
  tf_output in[2] = {x, tf__grad_in(ctx, 1)};
  tf_attr_kv kv[2] = {{"exclusive", tf_attr_bool(exclusive)},
                      {"reverse", tf_attr_bool(reverse)}};
  return tf__grad_op(ctx, op, in, 2, kv, 2);
}

static tf_code scan_attrs(tf_grad_ctx *ctx, bool *exclusive, bool *reverse) {
  TF_TRY(tf_node_attr_get_bool(ctx->node, "exclusive", exclusive, ctx->st));
  return tf_node_attr_get_bool(ctx->node, "reverse", reverse, ctx->st);
}

static tf_code cumsum_grad(tf_grad_ctx *ctx) {
  bool exclusive, reverse;
  TF_TRY(scan_attrs(ctx, &exclusive, &reverse));
  ctx->dx[0].values = scan(ctx, "Cumsum", ctx->dy[0], exclusive, !reverse);
  return ctx->st->code;
}

/* TF's formula; NaN/Inf where x == 0 (see the file comment). */
static tf_code cumprod_grad(tf_grad_ctx *ctx) {
  bool exclusive, reverse;
  TF_TRY(scan_attrs(ctx, &exclusive, &reverse));
  tf_output x = tf__grad_in(ctx, 0);
  tf_output prod = scan(ctx, "Cumprod", x, exclusive, reverse);
  tf_output out = scan(ctx, "Cumsum", tf__grad_op2(ctx, "Mul", prod, ctx->dy[0]),
                       exclusive, !reverse);
  ctx->dx[0].values = tf__grad_op2(ctx, "RealDiv", out, x);
  return ctx->st->code;
}

static const tf_grad_def scan_grads[] = {
    {"Cumsum", cumsum_grad},
    {"Cumprod", cumprod_grad},
};

TF_REGISTER_GRADIENTS(scan_grads)
