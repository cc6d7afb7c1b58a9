/* ops_base.c: the ops every graph needs: Const, Placeholder, Identity,
 * NoOp. */
#include <string.h>

#include "lib/core/framework/op_registry.h"

static tf_code shape_const(tf_shape_ctx *ctx) {
  const tf_attr_value *v = tf_node_attr(ctx->node, "value");
  const tf_attr_value *dt = tf_node_attr(ctx->node, "dtype");
  if (v->u.tensor->dtype != dt->u.t) {
    return tf_shape_error(ctx, "value is %s but attr dtype is %s",
                          tf_dtype_name(v->u.tensor->dtype),
                          tf_dtype_name(dt->u.t));
  }
  ctx->out[0] = v->u.tensor->shape;
  return TF_OK;
}

static tf_code shape_placeholder(tf_shape_ctx *ctx) {
  ctx->out[0] = tf_node_attr(ctx->node, "shape")->u.shape;
  return TF_OK;
}

/* The default's shape must be compatible with attr shape; the output
 * takes the attr's (usually less specific) shape. */
static tf_code shape_placeholder_default(tf_shape_ctx *ctx) {
  tf_shape want = tf_node_attr(ctx->node, "shape")->u.shape;
  const tf_shape *in = &ctx->in[0];
  if (want.rank >= 0 && in->rank >= 0) {
    bool ok = want.rank == in->rank;
    for (int d = 0; ok && d < want.rank; d++) {
      ok = want.dims[d] < 0 || in->dims[d] < 0 || want.dims[d] == in->dims[d];
    }
    if (!ok) {
      char a[128], b[128];
      return tf_shape_error(ctx, "default of shape %s is not compatible with "
                            "shape %s", tf_shape_str(in, a, sizeof a),
                            tf_shape_str(&want, b, sizeof b));
    }
  }
  ctx->out[0] = want;
  return TF_OK;
}

static const tf_op_spec base_ops[] = {
    {.name = "Const",
     .outputs = {"output: dtype"},
     .attrs = {"value: tensor", "dtype: type"},
     .shape_fn = shape_const,
     .flags = TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "A constant tensor held in the graph."},
    {.name = "Placeholder",
     .outputs = {"output: dtype"},
     .attrs = {"dtype: type", "shape: shape = unknown"},
     .shape_fn = shape_placeholder,
     .flags = TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "A value that must be fed when the graph runs."},
    {.name = "PlaceholderWithDefault",
     .inputs = {"input: dtype"},
     .outputs = {"output: dtype"},
     .attrs = {"dtype: type", "shape: shape"},
     .shape_fn = shape_placeholder_default,
     .doc = "Its input unless fed; the output has the attr's shape, so it may "
            "be fed with another batch size."},
    {.name = "Identity",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {"T: type"},
     .shape_fn = tf_shape_fn_unchanged,
     .doc = "Returns its input (no copy)."},
    {.name = "NoOp",
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Does nothing; a target for control dependencies."},
};

TF_REGISTER_OPS("base", base_ops)
