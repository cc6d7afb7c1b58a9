/* ops_accumulator.c: op definitions of the conditional accumulators that
 * synchronous replicas aggregate gradients with (OSDI §4.4), with
 * TensorFlow's signatures: ConditionalAccumulator makes or finds one in a
 * container of the session and outputs a ref edge to it; the apply, take,
 * count and set-step ops reach it through that edge (the resource is
 * lib/devices/cpu/cpu_accumulator.h). When a handle comes straight from a
 * ConditionalAccumulator node, shape functions check gradients against its
 * shape attr and give TakeGradient that shape. */
#include <stdbool.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"

/* TF's numbertype, less the dtypes this project does not have. */
#define ACC_DTYPE                                                              \
  "dtype: {float, double, int32, uint8, int16, int8, complex64, int64, "       \
  "bfloat16, uint16, half, uint32, uint64}"

/* Input i must be a scalar (or of unknown rank). */
static tf_code want_scalar(tf_shape_ctx *c, int i, const char *name) {
  char b[96];
  if (c->in[i].rank != TF_UNKNOWN_RANK && c->in[i].rank != 0) {
    return tf_shape_error(c, "%s must be a scalar, got shape %s", name,
                          tf_shape_str(&c->in[i], b, sizeof b));
  }
  return TF_OK;
}

/* The ConditionalAccumulator node feeding input 0 directly, or NULL. */
static const tf_node *acc_node(const tf_shape_ctx *c) {
  const tf_node *src = tf_node_input(c->node, 0).node;
  return src != NULL && strcmp(tf_node_op(src), "ConditionalAccumulator") == 0
             ? src : NULL;
}

/* The declared shape of the accumulator feeding input 0, if known. */
static bool acc_shape(const tf_shape_ctx *c, tf_shape *out) {
  const tf_node *an = acc_node(c);
  const tf_attr_value *v = an ? tf_node_attr(an, "shape") : NULL;
  if (v == NULL) {
    return false;
  }
  *out = v->u.shape;
  return true;
}

static tf_code shape_accumulator(tf_shape_ctx *c) {
  c->out[0] = tf_shape_of(1, 2); /* TF's handle: [container, name] */
  return TF_OK;
}

static tf_code shape_apply(tf_shape_ctx *c) {
  char a[96], b[96];
  TF_TRY(want_scalar(c, 1, "local_step"));
  tf_shape declared, merged;
  if (acc_shape(c, &declared) &&
      tf_shape_merge(&declared, &c->in[2], &merged, NULL) != TF_OK) {
    return tf_shape_error(c, "gradient has shape %s, but accumulator '%s' "
                          "has shape %s", tf_shape_str(&c->in[2], a, sizeof a),
                          tf_node_name(acc_node(c)),
                          tf_shape_str(&declared, b, sizeof b));
  }
  return TF_OK;
}

static tf_code shape_take(tf_shape_ctx *c) {
  TF_TRY(want_scalar(c, 1, "num_required"));
  int64_t v;
  int got;
  if (tf_shape_const_ints(c, 1, &v, 1, &got) && got == 1 && v < 1) {
    return tf_shape_error(c, "num_required must be positive, got %lld",
                          (long long)v);
  }
  tf_shape declared;
  if (acc_shape(c, &declared)) {
    c->out[0] = declared;
  }
  return TF_OK;
}

static tf_code shape_set_step(tf_shape_ctx *c) {
  return want_scalar(c, 1, "new_global_step");
}

static const tf_op_spec accumulator_ops[] = {
    {.name = "ConditionalAccumulator",
     .outputs = {"handle: Ref(string)"},
     .attrs = {ACC_DTYPE, "shape: shape", "container: string = ''",
               "shared_name: string = ''",
               "reduction_type: {'MEAN', 'SUM'} = 'MEAN'"},
     .shape_fn = shape_accumulator,
     .flags = TF_OP_STATEFUL | TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "An accumulator of gradients of a dtype and (maybe partial) "
            "shape in the session's container, named shared_name or the "
            "node's name, starting at global step 0; outputs a ref to it."},
    {.name = "AccumulatorApplyGradient",
     .inputs = {"handle: Ref(string)", "local_step: int64",
                "gradient: dtype"},
     .attrs = {ACC_DTYPE},
     .shape_fn = shape_apply,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Adds gradient to the accumulator when local_step >= its global "
            "step; a stale gradient is dropped silently, unchecked. A shape "
            "that does not fit the accumulator's, or differs from this "
            "step's gradients, is INVALID_ARGUMENT.",
     .deviation = "the shape function already rejects a gradient whose "
                  "static shape conflicts with the shape attr of a "
                  "ConditionalAccumulator feeding the handle directly; TF "
                  "checks at run time only, and drops such a gradient "
                  "unchecked when it is stale"},
    {.name = "AccumulatorTakeGradient",
     .inputs = {"handle: Ref(string)", "num_required: int32"},
     .outputs = {"average: dtype"},
     .attrs = {ACC_DTYPE},
     .shape_fn = shape_take,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Waits (holding no thread) until num_required >= 1 gradients "
            "are in, outputs their mean (SUM: their sum; integers divide "
            "truncating), empties the accumulator and increments its global "
            "step."},
    {.name = "AccumulatorNumAccumulated",
     .inputs = {"handle: Ref(string)"},
     .outputs = {"num_accumulated: int32"},
     .shape_fn = tf_shape_fn_scalar,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "The number of gradients in the accumulator now."},
    {.name = "AccumulatorSetGlobalStep",
     .inputs = {"handle: Ref(string)", "new_global_step: int64"},
     .shape_fn = shape_set_step,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Sets the accumulator's global step (gradients already in "
            "stay); later gradients with a lower local_step are dropped.",
     .deviation = "setting a global step below the current one is accepted "
                  "silently; TF also logs a warning"},
};

TF_REGISTER_OPS("accumulator", accumulator_ops)
