/* ops_function.c: the ops a session adds to a pruned graph to pass feeds
 * in (_Arg) and fetches out (_Retval), as TensorFlow rewrites feeds and
 * fetches into its graphs. Users do not build them. */
#include "lib/core/framework/op_registry.h"

static tf_code shape_arg(tf_shape_ctx *ctx) {
  ctx->out[0] = tf_node_attr(ctx->node, "shape")->u.shape;
  return TF_OK;
}

static const tf_op_spec function_ops[] = {
    {.name = "_Arg",
     .outputs = {"output: T"},
     .attrs = {"T: type", "index: int >= 0", "shape: shape = unknown"},
     .shape_fn = shape_arg,
     .flags = TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Internal: the step's fed tensor number index (added by the "
            "session for each feed).",
     .deviation = "extra attr shape (default unknown): the fed tensor's "
                  "shape, set by the session for shape inference; TF's "
                  "_Arg has only T and index"},
    {.name = "_Retval",
     .inputs = {"input: T"},
     .attrs = {"T: type", "index: int >= 0"},
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Internal: stores its input as the step's fetched tensor number "
            "index (added by the session for each fetch)."},
};

TF_REGISTER_OPS("function", function_ops)
