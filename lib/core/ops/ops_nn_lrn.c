/* ops_nn_lrn.c: specs and shape functions of local response normalization,
 * LRN and LRNGrad, with TensorFlow's names, argument order, attrs and
 * defaults (tensorflow/core/ops/nn_ops.cc). Over the last (depth)
 * dimension of a 4-D input,
 *   sqr_sum[..., d] = sum(input[..., d - depth_radius : d + depth_radius
 *                                    + 1] ** 2)
 *   output = input / (bias + alpha * sqr_sum) ** beta.
 * The shape functions check rank 4 (and, for LRNGrad, that the three
 * inputs agree) and depth_radius in [0, INT32_MAX], which TF's kernel
 * requires. */
#include <stdint.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"

static tf_code lrn_check_radius(tf_shape_ctx *ctx) {
  const tf_attr_value *r = tf_node_attr(ctx->node, "depth_radius");
  if (r != NULL && r->type == TF_ATTR_INT &&
      (r->u.i < 0 || r->u.i > INT32_MAX)) {
    return tf_shape_error(ctx, "depth_radius = %lld must be in [0, %d]",
                          (long long)r->u.i, INT32_MAX);
  }
  return TF_OK;
}

static tf_code lrn_rank4(tf_shape_ctx *ctx, int i, const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 4) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be 4-dimensional, got shape %s",
                          what, tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

/* LRN(input) -> input's shape, rank 4. */
static tf_code lrn_shape(tf_shape_ctx *ctx) {
  TF_TRY(lrn_check_radius(ctx));
  TF_TRY(lrn_rank4(ctx, 0, "input"));
  ctx->out[0] = ctx->in[0].rank == 4 ? ctx->in[0] : tf_shape_make(4, NULL);
  return TF_OK;
}

/* LRNGrad(input_grads, input_image, output_image) -> their common shape. */
static tf_code lrn_grad_shape(tf_shape_ctx *ctx) {
  static const char *const names[3] = {"input_grads", "input_image",
                                       "output_image"};
  TF_TRY(lrn_check_radius(ctx));
  int64_t d[4] = {TF_UNKNOWN_DIM, TF_UNKNOWN_DIM, TF_UNKNOWN_DIM,
                  TF_UNKNOWN_DIM};
  for (int i = 0; i < 3; i++) {
    TF_TRY(lrn_rank4(ctx, i, names[i]));
    const tf_shape *s = &ctx->in[i];
    if (s->rank != 4) {
      continue;
    }
    for (int k = 0; k < 4; k++) {
      if (s->dims[k] >= 0 && d[k] >= 0 && s->dims[k] != d[k]) {
        return tf_shape_error(ctx, "input_grads, input_image and "
                                   "output_image must have the same shape: "
                                   "%s dimension %d is %lld, not %lld",
                              names[i], k, (long long)s->dims[k],
                              (long long)d[k]);
      }
      if (d[k] < 0) {
        d[k] = s->dims[k];
      }
    }
  }
  ctx->out[0] = tf_shape_make(4, d);
  return TF_OK;
}

#define LRN_ATTRS                                                              \
  "depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0",          \
      "beta: float = 0.5", "T: {half, bfloat16, float} = float"

static const tf_op_spec nn_lrn_ops[] = {
    {.name = "LRN",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {LRN_ATTRS},
     .shape_fn = lrn_shape,
     .doc = "Local response normalization over the depth of a 4-D input: "
            "input / (bias + alpha * sum of squares over depth_radius "
            "neighbors) ** beta."},
    {.name = "LRNGrad",
     .inputs = {"input_grads: T", "input_image: T", "output_image: T"},
     .outputs = {"output: T"},
     .attrs = {LRN_ATTRS},
     .shape_fn = lrn_grad_shape,
     .doc = "Gradient of LRN with respect to its input, given the output's "
            "gradient, the input and LRN's output."},
};

TF_REGISTER_OPS("nn_lrn", nn_lrn_ops)
