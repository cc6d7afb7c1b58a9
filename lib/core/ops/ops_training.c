/* ops_training.c: specs of the fused optimizer updates (OSDI §4.1: an
 * optimizer's step is one kernel per variable), with TensorFlow's names,
 * arguments and attrs: ApplyGradientDescent, ApplyMomentum, ApplyAdagrad,
 * ApplyAdadelta, ApplyRMSProp, ApplyAdam and the row-wise SparseApply*
 * forms (Momentum, Adagrad, Adadelta, RMSProp). SparseApplyAdam is ours:
 * TF's AdamOptimizer builds the same non-lazy update (every row of m and v
 * decays) from Assign, ScatterAdd and AssignSub; here it is one kernel.
 * Every update holds the variables' mutexes whatever use_locking says.
 * One shape function per form reads the op's arguments: ref inputs (the
 * variable and its slots) and grad must agree, the other inputs are
 * scalars, and sparse grads are rows indices.shape + var.shape[1:]. */
#include <inttypes.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static bool known(const tf_shape *s) { return s->rank != TF_UNKNOWN_RANK; }

/* s without its first dim (unknown when s is unknown or a scalar). */
static tf_shape drop_first(const tf_shape *s) {
  if (!known(s) || s->rank == 0) {
    return tf_shape_unknown();
  }
  tf_shape r = {.rank = s->rank - 1};
  for (int i = 1; i < s->rank; i++) {
    r.dims[i - 1] = s->dims[i];
  }
  return r;
}

/* Merges into *var the shape of input i, named in errors. */
static tf_code merge_into(tf_shape_ctx *c, tf_shape *var, int i,
                          const char *name) {
  char a[96], b[96];
  tf_shape m;
  if (tf_shape_merge(var, &c->in[i], &m, NULL) != TF_OK) {
    return tf_shape_error(c, "var and %s do not have the same shape %s %s",
                          name, tf_shape_str(var, a, sizeof a),
                          tf_shape_str(&c->in[i], b, sizeof b));
  }
  *var = m;
  return TF_OK;
}

static tf_code check_scalar(tf_shape_ctx *c, int i, const char *name) {
  char a[96];
  if (known(&c->in[i]) && c->in[i].rank != 0) {
    return tf_shape_error(c, "%s is not a scalar: %s", name,
                          tf_shape_str(&c->in[i], a, sizeof a));
  }
  return TF_OK;
}

/* grad rows = indices.shape + var.shape[1:]; var at least 1-D. */
static tf_code check_sparse_grad(tf_shape_ctx *c, const tf_shape *var, int gi,
                                 int ii) {
  const tf_shape *grad = &c->in[gi], *idx = &c->in[ii];
  char a[96], b[96];
  if (known(var) && var->rank == 0) {
    return tf_shape_error(c, "var must be at least 1 dimensional");
  }
  if (known(idx) && idx->rank != 1) {
    return tf_shape_error(c, "indices must be one-dimensional, got %s",
                          tf_shape_str(idx, a, sizeof a));
  }
  if (!known(grad)) {
    return TF_OK;
  }
  if (grad->rank == 0) {
    return tf_shape_error(c, "grad must be at least 1 dimensional");
  }
  int64_t n = known(idx) ? idx->dims[0] : TF_UNKNOWN_DIM;
  if (n != TF_UNKNOWN_DIM && grad->dims[0] != TF_UNKNOWN_DIM &&
      grad->dims[0] != n) {
    return tf_shape_error(c, "grad must have as many rows as indices has "
                          "elements, got grad %s and %" PRId64 " indices",
                          tf_shape_str(grad, a, sizeof a), n);
  }
  tf_shape vr = drop_first(var), gr = drop_first(grad), m;
  if (tf_shape_merge(&vr, &gr, &m, NULL) != TF_OK) {
    return tf_shape_error(c, "var and grad must match in every dimension "
                          "but the first, got var %s and grad %s",
                          tf_shape_str(var, a, sizeof a),
                          tf_shape_str(grad, b, sizeof b));
  }
  return TF_OK;
}

/* Shared by every Apply and SparseApply op: the op's arguments say which
 * input is what (refs, "grad", "indices", the rest scalars). */
static tf_code shape_apply(tf_shape_ctx *c) {
  const tf_op_def *d = tf_op_lookup(tf_node_op(c->node));
  tf_shape var = c->in[0];
  int gi = -1, ii = -1;
  for (int i = 1; i < d->n_inputs; i++) {
    const char *name = d->inputs[i].name;
    if (d->inputs[i].is_ref) {
      TF_TRY(merge_into(c, &var, i, name));
    } else if (strcmp(name, "grad") == 0 || strcmp(name, "delta") == 0) {
      gi = i;
    } else if (strcmp(name, "indices") == 0) {
      ii = i;
    } else {
      TF_TRY(check_scalar(c, i, name));
    }
  }
  TF_ASSERT(gi > 0); /* every Apply op has a "grad" or "delta" input */
  if (ii < 0) {
    TF_TRY(merge_into(c, &var, gi, d->inputs[gi].name));
  } else {
    TF_TRY(check_sparse_grad(c, &var, gi, ii));
  }
  c->out[0] = var;
  return TF_OK;
}

#define FLOAT_T "T: {float, double}"
#define IDX_T "Tindices: {int32, int64}"
#define LOCK "use_locking: bool = false"
#define OUT {"out: Ref(T)"}
#define UPDATE(op, in, attr_list, what)                                        \
  {.name = op,                                                                 \
   .inputs = in,                                                               \
   .outputs = OUT,                                                             \
   .attrs = attr_list,                                                         \
   .shape_fn = shape_apply,                                                    \
   .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,                         \
   .doc = what " Outputs the same ref as var."}
#define ARGS(...) {__VA_ARGS__}
/* UPDATE with the audit's note on how it differs from TensorFlow. */
#define UPDATE_DEV(op, in, attr_list, what, dev)                               \
  {.name = op,                                                                 \
   .inputs = in,                                                               \
   .outputs = OUT,                                                             \
   .attrs = attr_list,                                                         \
   .shape_fn = shape_apply,                                                    \
   .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,                         \
   .doc = what " Outputs the same ref as var.",                                \
   .deviation = dev}

static const tf_op_spec training_ops[] = {
    UPDATE("ApplyGradientDescent",
           ARGS("var: Ref(T)", "alpha: T", "delta: T"),
           ARGS(FLOAT_T, LOCK), "var -= alpha * delta."),
    UPDATE("ApplyMomentum",
           ARGS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T",
                "momentum: T"),
           ARGS(FLOAT_T, LOCK, "use_nesterov: bool = false"),
           "accum = accum * momentum + grad; var -= lr * accum (Nesterov: "
           "var -= lr * grad + lr * momentum * accum)."),
    UPDATE("SparseApplyMomentum",
           ARGS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T",
                "indices: Tindices", "momentum: T"),
           ARGS(FLOAT_T, IDX_T, LOCK, "use_nesterov: bool = false"),
           "ApplyMomentum on the rows var[indices[i]] with grad[i], one "
           "index after the other (duplicates update twice)."),
    UPDATE("ApplyAdagrad",
           ARGS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T"),
           ARGS(FLOAT_T, LOCK, "update_slots: bool = true"),
           "accum += grad^2 (if update_slots); var -= lr * grad / "
           "sqrt(accum)."),
    UPDATE("SparseApplyAdagrad",
           ARGS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T",
                "indices: Tindices"),
           ARGS(FLOAT_T, IDX_T, LOCK, "update_slots: bool = true"),
           "ApplyAdagrad on the rows var[indices[i]] with grad[i], one index "
           "after the other."),
    UPDATE("ApplyAdadelta",
           ARGS("var: Ref(T)", "accum: Ref(T)", "accum_update: Ref(T)",
                "lr: T", "rho: T", "epsilon: T", "grad: T"),
           ARGS(FLOAT_T, LOCK),
           "accum = rho * accum + (1 - rho) * grad^2; update = "
           "sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad; "
           "accum_update = rho * accum_update + (1 - rho) * update^2; "
           "var -= lr * update."),
    UPDATE("SparseApplyAdadelta",
           ARGS("var: Ref(T)", "accum: Ref(T)", "accum_update: Ref(T)",
                "lr: T", "rho: T", "epsilon: T", "grad: T",
                "indices: Tindices"),
           ARGS(FLOAT_T, IDX_T, LOCK),
           "ApplyAdadelta on the rows var[indices[i]] with grad[i], one "
           "index after the other."),
    UPDATE("ApplyRMSProp",
           ARGS("var: Ref(T)", "ms: Ref(T)", "mom: Ref(T)", "lr: T", "rho: T",
                "momentum: T", "epsilon: T", "grad: T"),
           ARGS(FLOAT_T, LOCK),
           "ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * "
           "grad / sqrt(ms + epsilon); var -= mom."),
    UPDATE("SparseApplyRMSProp",
           ARGS("var: Ref(T)", "ms: Ref(T)", "mom: Ref(T)", "lr: T", "rho: T",
                "momentum: T", "epsilon: T", "grad: T", "indices: Tindices"),
           ARGS(FLOAT_T, IDX_T, LOCK),
           "ApplyRMSProp on the rows var[indices[i]] with grad[i], one index "
           "after the other."),
    UPDATE("ApplyAdam",
           ARGS("var: Ref(T)", "m: Ref(T)", "v: Ref(T)", "beta1_power: T",
                "beta2_power: T", "lr: T", "beta1: T", "beta2: T",
                "epsilon: T", "grad: T"),
           ARGS(FLOAT_T, LOCK, "use_nesterov: bool = false"),
           "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad "
           "- m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2); var -= lr_t "
           "* m / (sqrt(v) + epsilon) (Nesterov: m replaced by beta1 * m + "
           "(1 - beta1) * grad)."),
    UPDATE_DEV("SparseApplyAdam",
           ARGS("var: Ref(T)", "m: Ref(T)", "v: Ref(T)", "beta1_power: T",
                "beta2_power: T", "lr: T", "beta1: T", "beta2: T",
                "epsilon: T", "grad: T", "indices: Tindices"),
           ARGS(FLOAT_T, IDX_T, LOCK),
           "TF's non-lazy sparse Adam in one kernel (not a TF op): every row "
           "of m and v decays (m = beta1 * m, v = beta2 * v), the rows "
           "grad[i] (duplicates summed) are added, m += (1 - beta1) * g, "
           "v += (1 - beta2) * g^2, then every row of var moves as in "
           "ApplyAdam.",
           "not a TensorFlow op: the non-lazy Adam update that TF's Adam "
           "optimizer builds from several ops for a sparse gradient, in "
           "one kernel"),
};

TF_REGISTER_OPS("training", training_ops)
