/* grad_math_unary.c: gradient functions of the unary math ops and
 * activations added in ops_math_unary.c and ops_activation.c, with
 * TensorFlow's formulas (python/ops/math_grad.py, nn_grad.py):
 *   Reciprocal -> ReciprocalGrad(y, dy); Sin -> dy cos x; Cos -> -dy sin x;
 *   Expm1 -> dy exp x; Erf -> dy 2/sqrt(pi) exp(-x^2);
 *   Softsign -> SoftsignGrad(dy, x); Selu -> SeluGrad(dy, y);
 *   LeakyRelu -> LeakyReluGrad(dy, x, alpha);
 *   Floor, Ceil, Round, Rint -> None (TF registers gradients returning
 *   [None]: nothing flows back, and no error is raised).
 * Second derivatives where TF registers them: ReciprocalGrad, SeluGrad,
 * LeakyReluGrad (SoftsignGrad has none in TF, so none here). IsNan and
 * IsFinite are not differentiable (flagged in their op specs). Every
 * function computes in the forward node's dtype. */
#include <math.h>

#include "lib/core/graph/grad_registry.h"

#define IN(i) tf__grad_in(ctx, i)
#define OUT(i) tf__grad_out(ctx, i)
#define DY (ctx->dy[0])
#define OP1(op, a) tf__grad_op1(ctx, op, a)
#define OP2(op, a, b) tf__grad_op2(ctx, op, a, b)

static tf_output unary_scalar(tf_grad_ctx *ctx, double v) {
  return tf__grad_scalar(ctx, tf_node_output_type(IN(0).node, IN(0).index),
                         v);
}

static tf_code unary_set(tf_grad_ctx *ctx, tf_output v) {
  ctx->dx[0].values = v;
  return ctx->st->code;
}

/* Floor, Ceil, Round, Rint: TF's gradient is [None]. */
static tf_code none_grad(tf_grad_ctx *ctx) {
  (void)ctx;
  return TF_OK;
}

static tf_code reciprocal_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("ReciprocalGrad", OUT(0), DY));
}

static tf_code sin_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("Mul", DY, OP1("Cos", IN(0))));
}

static tf_code cos_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("Mul", OP1("Neg", DY), OP1("Sin", IN(0))));
}

static tf_code expm1_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("Mul", DY, OP1("Exp", IN(0))));
}

static tf_code erf_grad(tf_grad_ctx *ctx) {
  tf_output c = unary_scalar(ctx, 2.0 / sqrt(M_PI));
  tf_output e = OP1("Exp", OP1("Neg", OP1("Square", IN(0))));
  return unary_set(ctx, OP2("Mul", OP2("Mul", DY, c), e));
}

static tf_code softsign_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("SoftsignGrad", DY, IN(0)));
}

static tf_code selu_grad(tf_grad_ctx *ctx) {
  return unary_set(ctx, OP2("SeluGrad", DY, OUT(0)));
}

/* The node's alpha attr (defaulted at build time) as an attr pair. */
static tf_attr_kv alpha_attr(tf_grad_ctx *ctx) {
  const tf_attr_value *a = tf_node_attr(ctx->node, "alpha");
  return (tf_attr_kv){"alpha", tf_attr_float(a != NULL ? a->u.f : 0.2)};
}

static tf_code leaky_relu_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv = alpha_attr(ctx);
  tf_output in[2] = {DY, IN(0)};
  return unary_set(ctx, tf__grad_op(ctx, "LeakyReluGrad", in, 2, &kv, 1));
}

/* ---- second derivatives ---------------------------------------------------- */

/* ReciprocalGrad(y, g) = -g y^2: d/dy = dy * -2 g y (TF writes it
 * grad * -2 * b * a), d/dg = ReciprocalGrad(y, dy). */
static tf_code reciprocal_grad_grad(tf_grad_ctx *ctx) {
  tf_output y = IN(0), g = IN(1);
  tf_output m2 = unary_scalar(ctx, -2);
  ctx->dx[0].values = OP2("Mul", OP2("Mul", OP2("Mul", DY, m2), g), y);
  ctx->dx[1].values = OP2("ReciprocalGrad", y, DY);
  return ctx->st->code;
}

/* SeluGrad(g, o) = o < 0 ? g (o + scale alpha) : g scale: d/dg =
 * SeluGrad(dy, o); d/do = dy g where o < 0, else 0. (TF's _SeluGradGrad
 * builds its terms from EluGrad of SeluGrad's own output, which is not this
 * derivative; this is the exact one, checked by central differences.) */
static tf_code selu_grad_grad(tf_grad_ctx *ctx) {
  tf_output g = IN(0), o = IN(1), zeros = OP1("ZerosLike", o);
  tf_output neg = OP2("Less", o, unary_scalar(ctx, 0));
  ctx->dx[0].values = OP2("SeluGrad", DY, o);
  ctx->dx[1].values = tf__grad_op(ctx, "Select", (tf_output[]){neg,
                                  OP2("Mul", DY, g), zeros}, 3, NULL, 0);
  return ctx->st->code;
}

/* LeakyReluGrad: linear in gradients, piecewise constant in features
 * (TF's _LeakyReluGradGrad: LeakyReluGrad(dy, x, alpha), zeros). */
static tf_code leaky_relu_grad_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv = alpha_attr(ctx);
  tf_output in[2] = {DY, IN(1)};
  ctx->dx[0].values = tf__grad_op(ctx, "LeakyReluGrad", in, 2, &kv, 1);
  ctx->dx[1].values = OP1("ZerosLike", IN(1));
  return ctx->st->code;
}

static const tf_grad_def math_unary_grads[] = {
    {"Floor", none_grad},
    {"Ceil", none_grad},
    {"Round", none_grad},
    {"Rint", none_grad},
    {"Reciprocal", reciprocal_grad},
    {"Sin", sin_grad},
    {"Cos", cos_grad},
    {"Expm1", expm1_grad},
    {"Erf", erf_grad},
    {"Softsign", softsign_grad},
    {"Selu", selu_grad},
    {"LeakyRelu", leaky_relu_grad},
    {"ReciprocalGrad", reciprocal_grad_grad},
    {"SeluGrad", selu_grad_grad},
    {"LeakyReluGrad", leaky_relu_grad_grad},
};

TF_REGISTER_GRADIENTS(math_unary_grads)
