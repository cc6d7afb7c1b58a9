/* ops_math_grad.c: fused backward ops of the element-wise math family with
 * TensorFlow's names, argument order and attrs: ReluGrad, Relu6Grad,
 * EluGrad, SoftplusGrad (gradients, features/outputs), SigmoidGrad,
 * TanhGrad, SqrtGrad, RsqrtGrad (y, dy) and BiasAddGrad. Both inputs of the
 * element-wise ones have one shape. Their own gradients (second
 * derivatives) are in lib/core/grad/grad_math.c. */
#include "lib/core/framework/op_registry.h"

/* Both inputs have the same shape; the output has it too. */
static tf_code same_shape2(tf_shape_ctx *ctx) {
  const tf_shape *a = &ctx->in[0], *b = &ctx->in[1];
  tf_shape m = a->rank == TF_UNKNOWN_RANK ? *b : *a;
  if (a->rank != TF_UNKNOWN_RANK && b->rank != TF_UNKNOWN_RANK) {
    bool ok = a->rank == b->rank;
    for (int d = 0; ok && d < a->rank; d++) {
      ok = a->dims[d] < 0 || b->dims[d] < 0 || a->dims[d] == b->dims[d];
      if (m.dims[d] < 0) {
        m.dims[d] = b->dims[d];
      }
    }
    if (!ok) {
      char x[128], y[128];
      return tf_shape_error(ctx, "inputs must have the same shape, got %s "
                            "and %s", tf_shape_str(a, x, sizeof x),
                            tf_shape_str(b, y, sizeof y));
    }
  }
  ctx->out[0] = m;
  return TF_OK;
}

/* [C]: the channel dim (last for NHWC, 1 for NCHW) of out_backprop. */
static tf_code bias_add_grad_shape(tf_shape_ctx *ctx) {
  const tf_shape *s = &ctx->in[0];
  const tf_attr_value *f = tf_node_attr(ctx->node, "data_format");
  bool nchw = f != NULL && f->u.s[0] == 'N' && f->u.s[1] == 'C';
  ctx->out[0] = tf_shape_of(1, TF_UNKNOWN_DIM);
  if (s->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  if (s->rank < 2) {
    char b[96];
    return tf_shape_error(ctx, "out_backprop must be at least 2-D, got %s",
                          tf_shape_str(s, b, sizeof b));
  }
  ctx->out[0].dims[0] = s->dims[nchw ? 1 : s->rank - 1];
  return TF_OK;
}

#define FEATURES_GRAD(NAME, SECOND, DOC)                                       \
  {.name = NAME,                                                               \
   .inputs = {"gradients: T", SECOND ": T"},                                   \
   .outputs = {"backprops: T"},                                                \
   .attrs = {"T: {float, double}"},                                            \
   .shape_fn = same_shape2,                                                    \
   .doc = DOC}
#define Y_DY_GRAD(NAME, DOC)                                                   \
  {.name = NAME,                                                               \
   .inputs = {"y: T", "dy: T"},                                                \
   .outputs = {"z: T"},                                                        \
   .attrs = {"T: {float, double}"},                                            \
   .shape_fn = same_shape2,                                                    \
   .doc = DOC}

static const tf_op_spec math_grad_ops[] = {
    FEATURES_GRAD("ReluGrad", "features",
                  "gradients where features > 0, else 0 (Relu's backward)."),
    FEATURES_GRAD("Relu6Grad", "features",
                  "gradients where 0 < features < 6, else 0."),
    FEATURES_GRAD("EluGrad", "outputs",
                  "gradients where outputs > 0, else gradients * (outputs + "
                  "1)."),
    FEATURES_GRAD("SoftplusGrad", "features",
                  "gradients * sigmoid(features)."),
    Y_DY_GRAD("SigmoidGrad", "dy * y * (1 - y), y = sigmoid(x)."),
    Y_DY_GRAD("TanhGrad", "dy * (1 - y^2), y = tanh(x)."),
    Y_DY_GRAD("SqrtGrad", "dy * 0.5 / y, y = sqrt(x)."),
    Y_DY_GRAD("RsqrtGrad", "dy * -0.5 * y^3, y = rsqrt(x)."),
    {.name = "BiasAddGrad",
     .inputs = {"out_backprop: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {float, double}",
               "data_format: {'NHWC', 'NCHW'} = 'NHWC'"},
     .shape_fn = bias_add_grad_shape,
     .doc = "Sums out_backprop over every dim but the channel dim (BiasAdd's "
            "backward for the bias)."},
};

TF_REGISTER_OPS("math_grad", math_grad_ops)
