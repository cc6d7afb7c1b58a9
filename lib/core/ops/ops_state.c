/* ops_state.c: op definitions of variables (whitepaper §4.7) with
 * TensorFlow's signatures: VariableV2 makes or finds a variable in a
 * container of the session and outputs a ref edge to it; Assign,
 * AssignAdd, AssignSub and the Scatter ops update it through that edge and
 * forward the same ref; IsVariableInitialized tests it. Every update holds
 * the variable's mutex whatever use_locking says (kept for TF
 * compatibility). Shape functions give the ref's shape, refined by the
 * value's, and reject known shapes no kernel could accept. */
#include "lib/core/framework/op_registry.h"

static bool known(const tf_shape *s) { return s->rank != TF_UNKNOWN_RANK; }

static tf_code shape_variable(tf_shape_ctx *c) {
  c->out[0] = tf_node_attr(c->node, "shape")->u.shape;
  return TF_OK;
}

/* out = merge(ref, value) or an error naming both shapes. */
static tf_code merge_ref_value(tf_shape_ctx *c) {
  char a[96], b[96];
  if (tf_shape_merge(&c->in[0], &c->in[1], &c->out[0], NULL) != TF_OK) {
    return tf_shape_error(c, "shapes of ref %s and value %s must match",
                          tf_shape_str(&c->in[0], a, sizeof a),
                          tf_shape_str(&c->in[1], b, sizeof b));
  }
  return TF_OK;
}

static tf_code shape_assign(tf_shape_ctx *c) {
  const tf_attr_value *vs = tf_node_attr(c->node, "validate_shape");
  if (vs != NULL && !vs->u.b) {
    c->out[0] = c->in[1]; /* the variable takes the value's shape */
    return TF_OK;
  }
  return merge_ref_value(c);
}

/* updates must be [] or indices.shape + ref.shape[1:]. */
static tf_code shape_scatter(tf_shape_ctx *c) {
  const tf_shape *ref = &c->in[0], *idx = &c->in[1], *upd = &c->in[2];
  char a[96], b[96], d[96];
  c->out[0] = *ref;
  if (known(ref) && ref->rank == 0) {
    return tf_shape_error(c, "ref must be at least 1-D, got shape []");
  }
  if (!known(ref) || !known(idx) || !known(upd) || upd->rank == 0) {
    return TF_OK;
  }
  tf_shape want;
  want.rank = idx->rank + ref->rank - 1;
  bool ok = want.rank <= TF_MAX_RANK;
  for (int i = 0; ok && i < want.rank; i++) {
    want.dims[i] = i < idx->rank ? idx->dims[i] : ref->dims[i - idx->rank + 1];
  }
  tf_shape merged;
  if (!ok || tf_shape_merge(&want, upd, &merged, NULL) != TF_OK) {
    return tf_shape_error(c, "Must have updates.shape = indices.shape + "
                          "ref.shape[1:] or updates.shape = [], got "
                          "updates.shape %s, indices.shape %s, ref.shape %s",
                          tf_shape_str(upd, a, sizeof a),
                          tf_shape_str(idx, b, sizeof b),
                          tf_shape_str(ref, d, sizeof d));
  }
  return TF_OK;
}

#define ARITH_T "T: {float, double, int32, int64}"
/* TF's defaults: true for Assign and ScatterUpdate, false for the
 * arithmetic updates. The kernels lock the variable whatever it says. */
#define LOCKING "use_locking: bool = true"
#define NO_LOCKING "use_locking: bool = false"
#define SCATTER(op, t, locking, what)                                          \
  {.name = op,                                                                 \
   .inputs = {"ref: Ref(T)", "indices: Tindices", "updates: T"},               \
   .outputs = {"output_ref: Ref(T)"},                                          \
   .attrs = {t, "Tindices: {int32, int64}", locking},                          \
   .shape_fn = shape_scatter,                                                  \
   .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,                       \
   .doc = what " rows ref[indices[...]] by updates (under the variable's "    \
              "lock, whatever use_locking says); outputs the same ref."}

static const tf_op_spec state_ops[] = {
    {.name = "VariableV2",
     .outputs = {"ref: Ref(dtype)"},
     .attrs = {"shape: shape", "dtype: type", "container: string = ''",
               "shared_name: string = ''"},
     .shape_fn = shape_variable,
     .flags = TF_OP_STATEFUL | TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "A variable in the session's container ('' = default) named "
            "shared_name or the node's name; outputs a ref to it."},
    {.name = "Assign",
     .inputs = {"ref: Ref(T)", "value: T"},
     .outputs = {"output_ref: Ref(T)"},
     .attrs = {"T: type", "validate_shape: bool = true", LOCKING},
     .shape_fn = shape_assign,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Sets ref to value (always under the variable's lock; "
            "use_locking is accepted for TF); outputs the same ref."},
    {.name = "AssignAdd",
     .inputs = {"ref: Ref(T)", "value: T"},
     .outputs = {"output_ref: Ref(T)"},
     .attrs = {ARITH_T, NO_LOCKING},
     .shape_fn = merge_ref_value,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "ref += value (always under the variable's lock; use_locking is "
            "accepted for TF); outputs the same ref."},
    {.name = "AssignSub",
     .inputs = {"ref: Ref(T)", "value: T"},
     .outputs = {"output_ref: Ref(T)"},
     .attrs = {ARITH_T, NO_LOCKING},
     .shape_fn = merge_ref_value,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "ref -= value (always under the variable's lock; use_locking is "
            "accepted for TF); outputs the same ref."},
    SCATTER("ScatterUpdate", "T: type", LOCKING,
            "Replaces (last duplicate wins)"),
    SCATTER("ScatterAdd", ARITH_T, NO_LOCKING,
            "Adds to (duplicates accumulate)"),
    SCATTER("ScatterSub", ARITH_T, NO_LOCKING,
            "Subtracts from (duplicates accumulate)"),
    {.name = "IsVariableInitialized",
     .inputs = {"ref: Ref(dtype)"},
     .outputs = {"is_initialized: bool"},
     .attrs = {"dtype: type"},
     .shape_fn = tf_shape_fn_scalar,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Whether the variable behind ref has been assigned a value."},
};

TF_REGISTER_OPS("state", state_ops)
