/* ops_activation.c: fused backward ops of the activations and unary math
 * ops added beside ops_math_unary.c, with TensorFlow's names, argument
 * order and attrs: SoftsignGrad, SeluGrad, LeakyReluGrad (gradients,
 * features/outputs) and ReciprocalGrad (y, dy). Both inputs have one
 * shape, which is the output's. Type sets are {float, double}, the dtypes
 * with kernels (as for ReluGrad and the rest of ops_math_grad.c); the
 * forward ops, their gradients and these ops' own gradients are in
 * ops_math_unary.c and lib/core/grad/grad_math_unary.c. */
#include "lib/core/framework/op_registry.h"

/* Both inputs have the same shape (unknown dims merge); the output has it. */
static tf_code activation_same_shape2(tf_shape_ctx *ctx) {
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

static const tf_op_spec activation_ops[] = {
    {.name = "SoftsignGrad",
     .inputs = {"gradients: T", "features: T"},
     .outputs = {"backprops: T"},
     .attrs = {"T: {float, double}"},
     .shape_fn = activation_same_shape2,
     .doc = "gradients / (1 + |features|)^2 (Softsign's backward)."},
    {.name = "SeluGrad",
     .inputs = {"gradients: T", "outputs: T"},
     .outputs = {"backprops: T"},
     .attrs = {"T: {float, double}"},
     .shape_fn = activation_same_shape2,
     .doc = "gradients * (outputs + scale * alpha) where outputs < 0, else "
            "gradients * scale (Selu's backward, from Selu's outputs).",
     .deviation = "its own gradient is the exact second derivative "
                  "(SeluGrad(dy, outputs), and dy * gradients where outputs "
                  "< 0), where TF's _SeluGradGrad builds both terms from "
                  "EluGrad of SeluGrad's output"},
    {.name = "LeakyReluGrad",
     .inputs = {"gradients: T", "features: T"},
     .outputs = {"backprops: T"},
     .attrs = {"alpha: float = 0.2", "T: {float, double} = float"},
     .shape_fn = activation_same_shape2,
     .doc = "gradients where features > 0, else gradients * alpha "
            "(LeakyRelu's backward)."},
    {.name = "ReciprocalGrad",
     .inputs = {"y: T", "dy: T"},
     .outputs = {"z: T"},
     .attrs = {"T: {float, double}"},
     .shape_fn = activation_same_shape2,
     .doc = "-dy * y * y, y = 1 / x (Reciprocal's backward)."},
};

TF_REGISTER_OPS("activation", activation_ops)
