/* grad_math.c: gradient functions of the element-wise math families, with
 * TensorFlow's math (python/ops/math_grad.py, nn_grad.py): binary ops sum
 * the broadcast axes back out (tf__grad_unbroadcast), activations use the
 * fused backward ops (ReluGrad, SigmoidGrad, ...) where TF does, and those
 * have gradients too (second derivatives). Every function computes in the
 * forward node's dtype. */
#include <stdio.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"

#define IN(i) tf__grad_in(ctx, i)
#define OUT(i) tf__grad_out(ctx, i)
#define DY (ctx->dy[0])
#define OP1(op, a) tf__grad_op1(ctx, op, a)
#define OP2(op, a, b) tf__grad_op2(ctx, op, a, b)

static tf_dtype dtype_of(tf_output o) {
  return tf_node_output_type(o.node, o.index);
}

static tf_code set_dx(tf_grad_ctx *ctx, int i, tf_output v) {
  ctx->dx[i].values = v;
  return ctx->st->code;
}

/* Sets dx for the two operands of a broadcasting binary op. */
static tf_code set_binary(tf_grad_ctx *ctx, tf_output gx, tf_output gy) {
  tf_output x = IN(0), y = IN(1);
  ctx->dx[0].values = tf__grad_unbroadcast(ctx, gx, x, y);
  ctx->dx[1].values = tf__grad_unbroadcast(ctx, gy, y, x);
  return ctx->st->code;
}

/* ---- binary -------------------------------------------------------------- */

static tf_code add_grad(tf_grad_ctx *ctx) { return set_binary(ctx, DY, DY); }

static tf_code sub_grad(tf_grad_ctx *ctx) {
  return set_binary(ctx, DY, OP1("Neg", DY));
}

static tf_code mul_grad(tf_grad_ctx *ctx) {
  return set_binary(ctx, OP2("Mul", DY, IN(1)), OP2("Mul", IN(0), DY));
}

/* FloorMod: x - floor(x / y) * y, so dx = dy and
 * dy_y = dy * -floor(x / y) (TF's _FloorModGrad). TF registers no gradient
 * for Mod and TruncateMod, FloorDiv and TruncateDiv have none. */
static tf_code floor_mod_grad(tf_grad_ctx *ctx) {
  tf_output q = OP2("FloorDiv", IN(0), IN(1));
  return set_binary(ctx, DY, OP2("Mul", DY, OP1("Neg", q)));
}

/* RealDiv: d(x/y) = dy / y, -dy * x / y^2. */
static tf_code div_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), y = IN(1);
  tf_output gx = OP2("Div", DY, y);
  tf_output gy = OP2("Mul", DY, OP2("Div", OP2("Div", OP1("Neg", x), y), y));
  return set_binary(ctx, gx, gy);
}

/* Maximum / Minimum: dy goes to x where mask(x, y) holds, else to y. */
static tf_code minmax_grad(tf_grad_ctx *ctx, const char *mask_op) {
  tf_output mask = OP2(mask_op, IN(0), IN(1));
  tf_output zeros = OP1("ZerosLike", DY);
  tf_output in_x[3] = {mask, DY, zeros}, in_y[3] = {mask, zeros, DY};
  return set_binary(ctx, tf__grad_op(ctx, "Select", in_x, 3, NULL, 0),
                    tf__grad_op(ctx, "Select", in_y, 3, NULL, 0));
}

static tf_code maximum_grad(tf_grad_ctx *ctx) {
  return minmax_grad(ctx, "GreaterEqual");
}

static tf_code minimum_grad(tf_grad_ctx *ctx) {
  return minmax_grad(ctx, "LessEqual");
}

/* z = x^y: dx = dy * y * x^(y-1); dy = dy * z * log(x) where x > 0, else 0. */
static tf_code pow_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), y = IN(1), z = OUT(0);
  tf_dtype dt = dtype_of(x);
  tf_output one = tf__grad_scalar(ctx, dt, 1), zero = tf__grad_scalar(ctx, dt, 0);
  tf_output xm1 = OP2("Pow", x, OP2("Sub", y, one));
  tf_output gx = OP2("Mul", DY, OP2("Mul", y, xm1));
  tf_output pos = OP2("Greater", x, zero);
  tf_output zx = OP1("ZerosLike", x);
  tf_output safe_x = tf__grad_op(ctx, "Select", (tf_output[]){pos, x,
                                 OP1("OnesLike", x)}, 3, NULL, 0);
  tf_output logx = tf__grad_op(ctx, "Select", (tf_output[]){pos,
                               OP1("Log", safe_x), zx}, 3, NULL, 0);
  tf_output gy = OP2("Mul", DY, OP2("Mul", z, logx));
  return set_binary(ctx, gx, gy);
}

static tf_code addn_grad(tf_grad_ctx *ctx) {
  for (int i = 0; i < ctx->n_dx; i++) {
    ctx->dx[i].values = DY;
  }
  return ctx->st->code;
}

static tf_code bias_add_grad(tf_grad_ctx *ctx) {
  const tf_attr_value *fmt = tf_node_attr(ctx->node, "data_format");
  tf_attr_kv kv = {"data_format", tf_attr_string(fmt ? fmt->u.s : "NHWC")};
  ctx->dx[0].values = DY;
  ctx->dx[1].values = tf__grad_op(ctx, "BiasAddGrad", &DY, 1, &kv, 1);
  return ctx->st->code;
}

/* Bounds get dy where t is outside them; t gets it elsewhere. */
static tf_code clip_grad(tf_grad_ctx *ctx) {
  tf_output t = IN(0), lo = IN(1), hi = IN(2);
  tf_output below = OP2("Less", t, lo), above = OP2("Greater", t, hi);
  tf_output zeros = OP1("ZerosLike", DY);
  tf_output out = OP2("LogicalOr", below, above);
  tf_output gt = tf__grad_op(ctx, "Select", (tf_output[]){out, zeros, DY}, 3,
                             NULL, 0);
  tf_output glo = tf__grad_op(ctx, "Select", (tf_output[]){below, DY, zeros},
                              3, NULL, 0);
  tf_output ghi = tf__grad_op(ctx, "Select", (tf_output[]){above, DY, zeros},
                              3, NULL, 0);
  ctx->dx[0].values = tf__grad_unbroadcast(ctx, gt, t, lo);
  ctx->dx[1].values = tf__grad_unbroadcast(ctx, glo, lo, t);
  ctx->dx[2].values = tf__grad_unbroadcast(ctx, ghi, hi, t);
  return ctx->st->code;
}

static tf_code select_grad(tf_grad_ctx *ctx) {
  tf_output c = IN(0), zeros = OP1("ZerosLike", DY);
  ctx->dx[1].values = tf__grad_op(ctx, "Select", (tf_output[]){c, DY, zeros},
                                  3, NULL, 0);
  ctx->dx[2].values = tf__grad_op(ctx, "Select", (tf_output[]){c, zeros, DY},
                                  3, NULL, 0);
  return ctx->st->code;
}

/* ---- unary --------------------------------------------------------------- */

static tf_code neg_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP1("Neg", DY));
}

static tf_code abs_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("Mul", DY, OP1("Sign", IN(0))));
}

static tf_code exp_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("Mul", DY, OUT(0)));
}

static tf_code log_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("Div", DY, IN(0)));
}

static tf_code log1p_grad(tf_grad_ctx *ctx) {
  tf_output one = tf__grad_scalar(ctx, dtype_of(IN(0)), 1);
  return set_dx(ctx, 0, OP2("Div", DY, OP2("Add", one, IN(0))));
}

static tf_code square_grad(tf_grad_ctx *ctx) {
  tf_output two = tf__grad_scalar(ctx, dtype_of(IN(0)), 2);
  return set_dx(ctx, 0, OP2("Mul", DY, OP2("Mul", two, IN(0))));
}

static tf_code sign_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP1("ZerosLike", IN(0)));
}

/* Fused backward ops taking (y, dy): TanhGrad, SigmoidGrad, SqrtGrad,
 * RsqrtGrad. */
static tf_code y_dy_grad(tf_grad_ctx *ctx, const char *op) {
  return set_dx(ctx, 0, OP2(op, OUT(0), DY));
}

static tf_code tanh_grad(tf_grad_ctx *ctx) { return y_dy_grad(ctx, "TanhGrad"); }
static tf_code sigmoid_grad(tf_grad_ctx *ctx) {
  return y_dy_grad(ctx, "SigmoidGrad");
}
static tf_code sqrt_grad(tf_grad_ctx *ctx) { return y_dy_grad(ctx, "SqrtGrad"); }
static tf_code rsqrt_grad(tf_grad_ctx *ctx) {
  return y_dy_grad(ctx, "RsqrtGrad");
}

/* Activation backward ops taking (gradients, features or outputs). */
static tf_code relu_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("ReluGrad", DY, IN(0)));
}
static tf_code relu6_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("Relu6Grad", DY, IN(0)));
}
static tf_code elu_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("EluGrad", DY, OUT(0)));
}
static tf_code softplus_grad(tf_grad_ctx *ctx) {
  return set_dx(ctx, 0, OP2("SoftplusGrad", DY, IN(0)));
}

/* Cast: a gradient only between float types (TF also stops at ints). */
static tf_code cast_grad(tf_grad_ctx *ctx) {
  tf_dtype src = dtype_of(IN(0)), dst = dtype_of(OUT(0));
  if (!tf_dtype_is_float(src) || !tf_dtype_is_float(dst)) {
    return TF_OK;
  }
  tf_attr_kv kv = {"DstT", tf_attr_type_v(src)};
  return set_dx(ctx, 0, tf__grad_op(ctx, "Cast", &DY, 1, &kv, 1));
}

static tf_code check_numerics_grad(tf_grad_ctx *ctx) {
  const tf_attr_value *m = tf_node_attr(ctx->node, "message");
  char msg[512];
  snprintf(msg, sizeof msg, "Not a number (NaN) or infinity (Inf) values "
           "detected in gradient. %s", m ? m->u.s : "");
  tf_attr_kv kv = {"message", tf_attr_string(msg)};
  return set_dx(ctx, 0, tf__grad_op(ctx, "CheckNumerics", &DY, 1, &kv, 1));
}

/* ---- second derivatives: the fused backward ops ---------------------------- */

/* ReluGrad, Relu6Grad: linear in gradients, piecewise constant in features. */
static tf_code masked_grad_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = OP2(tf_node_op(ctx->node), DY, IN(1));
  ctx->dx[1].values = OP1("ZerosLike", IN(1));
  return ctx->st->code;
}

/* EluGrad(g, o) = g if o > 0 else g * (o + 1). */
static tf_code elu_grad_grad(tf_grad_ctx *ctx) {
  tf_output o = IN(1), zeros = OP1("ZerosLike", DY);
  tf_output pos = OP2("Greater", o, tf__grad_scalar(ctx, dtype_of(o), 0));
  ctx->dx[0].values = OP2("EluGrad", DY, o);
  ctx->dx[1].values = tf__grad_op(ctx, "Select", (tf_output[]){pos, zeros,
                                  OP2("Mul", DY, IN(0))}, 3, NULL, 0);
  return ctx->st->code;
}

/* SoftplusGrad(g, f) = g * s(f): d/df = g * s * (1 - s). */
static tf_code softplus_grad_grad(tf_grad_ctx *ctx) {
  tf_output f = IN(1), s = OP1("Sigmoid", f);
  ctx->dx[0].values = OP2("SoftplusGrad", DY, f);
  ctx->dx[1].values = OP2("Mul", OP2("Mul", DY, IN(0)),
                          OP2("SigmoidGrad", s, OP1("OnesLike", s)));
  return ctx->st->code;
}

/* Ops z = op(y, g), linear in g: d/dg = op(y, dy); d/dy = dy * g * f'(y)
 * with f'(y) built by deriv. */
static tf_code y_g_grad_grad(tf_grad_ctx *ctx, tf_output dfdy) {
  ctx->dx[0].values = OP2("Mul", OP2("Mul", DY, IN(1)), dfdy);
  ctx->dx[1].values = OP2(tf_node_op(ctx->node), IN(0), DY);
  return ctx->st->code;
}

static tf_output yscalar(tf_grad_ctx *ctx, double v) {
  return tf__grad_scalar(ctx, dtype_of(IN(0)), v);
}

/* y (1 - y) -> 1 - 2y */
static tf_code sigmoid_grad_grad(tf_grad_ctx *ctx) {
  tf_output y = IN(0);
  return y_g_grad_grad(ctx, OP2("Sub", yscalar(ctx, 1),
                                OP2("Mul", yscalar(ctx, 2), y)));
}

/* 1 - y^2 -> -2y */
static tf_code tanh_grad_grad(tf_grad_ctx *ctx) {
  return y_g_grad_grad(ctx, OP2("Mul", yscalar(ctx, -2), IN(0)));
}

/* 0.5 / y -> -0.5 / y^2 */
static tf_code sqrt_grad_grad(tf_grad_ctx *ctx) {
  tf_output y = IN(0);
  return y_g_grad_grad(ctx, OP2("Div", yscalar(ctx, -0.5), OP1("Square", y)));
}

/* -0.5 y^3 -> -1.5 y^2 */
static tf_code rsqrt_grad_grad(tf_grad_ctx *ctx) {
  return y_g_grad_grad(ctx, OP2("Mul", yscalar(ctx, -1.5), OP1("Square", IN(0))));
}

/* BiasAddGrad sums over all but the channel dim: broadcast dy back. */
static tf_code bias_add_grad_grad(tf_grad_ctx *ctx) {
  const tf_attr_value *fmt = tf_node_attr(ctx->node, "data_format");
  tf_attr_kv kv = {"data_format", tf_attr_string(fmt ? fmt->u.s : "NHWC")};
  tf_output in[2] = {OP1("ZerosLike", IN(0)), DY};
  ctx->dx[0].values = tf__grad_op(ctx, "BiasAdd", in, 2, &kv, 1);
  return ctx->st->code;
}

static const tf_grad_def math_grads[] = {
    {"Add", add_grad},
    {"Sub", sub_grad},
    {"Mul", mul_grad},
    {"Div", div_grad},
    {"FloorMod", floor_mod_grad},
    {"Maximum", maximum_grad},
    {"Minimum", minimum_grad},
    {"Pow", pow_grad},
    {"AddN", addn_grad},
    {"BiasAdd", bias_add_grad},
    {"ClipByValue", clip_grad},
    {"Select", select_grad},
    {"Neg", neg_grad},
    {"Abs", abs_grad},
    {"Exp", exp_grad},
    {"Log", log_grad},
    {"Log1p", log1p_grad},
    {"Square", square_grad},
    {"Sign", sign_grad},
    {"Tanh", tanh_grad},
    {"Sigmoid", sigmoid_grad},
    {"Sqrt", sqrt_grad},
    {"Rsqrt", rsqrt_grad},
    {"Relu", relu_grad},
    {"Relu6", relu6_grad},
    {"Elu", elu_grad},
    {"Softplus", softplus_grad},
    {"Cast", cast_grad},
    {"CheckNumerics", check_numerics_grad},
    {"ReluGrad", masked_grad_grad},
    {"Relu6Grad", masked_grad_grad},
    {"EluGrad", elu_grad_grad},
    {"SoftplusGrad", softplus_grad_grad},
    {"SigmoidGrad", sigmoid_grad_grad},
    {"TanhGrad", tanh_grad_grad},
    {"SqrtGrad", sqrt_grad_grad},
    {"RsqrtGrad", rsqrt_grad_grad},
    {"BiasAddGrad", bias_add_grad_grad},
};

TF_REGISTER_GRADIENTS(math_grads)
