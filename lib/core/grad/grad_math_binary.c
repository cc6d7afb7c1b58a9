/* grad_math_binary.c: gradient functions of the binary math ops that
 * TensorFlow 2 emits (AddV2, RealDiv, SquaredDifference, DivNoNan, Atan2,
 * Xdivy, Xlogy, SelectV2), with TensorFlow's formulas from
 * python/ops/math_grad.py and array_grad.py, including its conventions:
 * Xdivy and Xlogy pass no gradient to x where x == 0, DivNoNan none where
 * y == 0, SelectV2 none to the branch not taken. Broadcast axes are summed
 * back out of every operand (tf__grad_unbroadcast). */
#include "lib/core/graph/grad_registry.h"

#define IN(i) tf__grad_in(ctx, i)
#define OUT(i) tf__grad_out(ctx, i)
#define DY (ctx->dy[0])
#define OP1(op, a) tf__grad_op1(ctx, op, a)
#define OP2(op, a, b) tf__grad_op2(ctx, op, a, b)

static tf_dtype dtype_of(tf_output o) {
  return tf_node_output_type(o.node, o.index);
}

/* Sets dx for the two operands of a broadcasting binary op. */
static tf_code set_binary(tf_grad_ctx *ctx, tf_output gx, tf_output gy) {
  tf_output x = IN(0), y = IN(1);
  ctx->dx[0].values = tf__grad_unbroadcast(ctx, gx, x, y);
  ctx->dx[1].values = tf__grad_unbroadcast(ctx, gy, y, x);
  return ctx->st->code;
}

/* AddV2: as Add (TF's _AddGrad). */
static tf_code add_v2_grad(tf_grad_ctx *ctx) {
  return set_binary(ctx, DY, DY);
}

/* RealDiv / DivNoNan: dx = dy / y, dy_y = dy * ((-x / y) / y), with the
 * op itself as the division (TF's _RealDivGrad, _DivNoNanGrad: DivNoNan's
 * gradients are 0 where y == 0). */
static tf_code div_like_grad(tf_grad_ctx *ctx, const char *div) {
  tf_output x = IN(0), y = IN(1);
  tf_output gx = OP2(div, DY, y);
  tf_output gy = OP2("Mul", DY, OP2(div, OP2(div, OP1("Neg", x), y), y));
  return set_binary(ctx, gx, gy);
}

static tf_code real_div_grad(tf_grad_ctx *ctx) {
  return div_like_grad(ctx, "RealDiv");
}

static tf_code div_no_nan_grad(tf_grad_ctx *ctx) {
  return div_like_grad(ctx, "DivNoNan");
}

/* (x - y)^2: x gets 2 dy (x - y), y its negation (TF's
 * _SquaredDifferenceGrad), each summed over its broadcast axes. */
static tf_code squared_difference_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), y = IN(1);
  tf_output two = tf__grad_scalar(ctx, dtype_of(x), 2);
  tf_output g = OP2("Mul", OP2("Mul", two, DY), OP2("Sub", x, y));
  ctx->dx[0].values = tf__grad_unbroadcast(ctx, g, x, y);
  ctx->dx[1].values = OP1("Neg", tf__grad_unbroadcast(ctx, g, y, x));
  return ctx->st->code;
}

/* Atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) (TF's
 * _Atan2Grad; unlike TF, broadcast axes are summed back out, so
 * broadcasting operands get gradients of their own shape). */
static tf_code atan2_grad(tf_grad_ctx *ctx) {
  tf_output y = IN(0), x = IN(1);
  tf_output den = OP2("AddV2", OP1("Square", x), OP1("Square", y));
  tf_output inv = OP2("RealDiv", DY, den);
  return set_binary(ctx, OP2("Mul", x, inv),
                    OP2("Mul", OP1("Neg", y), inv));
}

/* 1 where x != 0, else 0, in x's dtype. */
static tf_output not_zero(tf_grad_ctx *ctx, tf_output x) {
  tf_dtype dt = dtype_of(x);
  tf_output ne = OP2("NotEqual", x, tf__grad_scalar(ctx, dt, 0));
  tf_attr_kv kv = {"DstT", tf_attr_type_v(dt)};
  return tf__grad_op(ctx, "Cast", &ne, 1, &kv, 1);
}

/* Xdivy: d/dx = xdivy(x != 0, y), d/dy = xdivy(-x, y^2) (TF's
 * _XdivyGrad): both 0 where x == 0. */
static tf_code xdivy_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), y = IN(1);
  tf_output px = OP2("Xdivy", not_zero(ctx, x), y);
  tf_output py = OP2("Xdivy", OP1("Neg", x), OP1("Square", y));
  return set_binary(ctx, OP2("Mul", px, DY), OP2("Mul", py, DY));
}

/* Xlogy: d/dx = xlogy(x != 0, y), d/dy = xdivy(x, y) (TF's _XlogyGrad):
 * both 0 where x == 0. */
static tf_code xlogy_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), y = IN(1);
  tf_output px = OP2("Xlogy", not_zero(ctx, x), y);
  tf_output py = OP2("Xdivy", x, y);
  return set_binary(ctx, OP2("Mul", px, DY), OP2("Mul", py, DY));
}

/* SelectV2: dy where the branch was taken, 0 elsewhere, summed back to
 * the branch's shape (TF's _SelectGradV2); no gradient to condition. */
static tf_code select_v2_grad(tf_grad_ctx *ctx) {
  tf_output c = IN(0), t = IN(1), e = IN(2), out = OUT(0);
  tf_output zero = tf__grad_scalar(ctx, dtype_of(DY), 0);
  tf_output gt = tf__grad_op(ctx, "SelectV2", (tf_output[]){c, DY, zero}, 3,
                             NULL, 0);
  tf_output ge = tf__grad_op(ctx, "SelectV2", (tf_output[]){c, zero, DY}, 3,
                             NULL, 0);
  ctx->dx[1].values = tf__grad_unbroadcast(ctx, gt, t, out);
  ctx->dx[2].values = tf__grad_unbroadcast(ctx, ge, e, out);
  return ctx->st->code;
}

static const tf_grad_def math_binary_grads[] = {
    {"AddV2", add_v2_grad},
    {"RealDiv", real_div_grad},
    {"DivNoNan", div_no_nan_grad},
    {"SquaredDifference", squared_difference_grad},
    {"Atan2", atan2_grad},
    {"Xdivy", xdivy_grad},
    {"Xlogy", xlogy_grad},
    {"SelectV2", select_v2_grad},
};

TF_REGISTER_GRADIENTS(math_binary_grads)
