/* train.h: training as graph building (whitepaper §4.1, OSDI §4.1), after
 * TF1's tf.train.
 *
 * An optimizer adds to the graph, for each variable, one fused update node
 * (ApplyAdam, SparseApplyMomentum, ...; see ops_training.c) fed by the
 * variable, its slot variables and the gradient, and one target node that
 * runs every update and then increments global_step. Slots are variables
 * the optimizer creates on first use, named like TF's "<var>/<Optimizer>"
 * ("dense/kernel/Adam", "dense/kernel/Adam_1"), each with its initializer
 * "<slot>/Assign"; Adam also creates the scalars "beta1_power" and
 * "beta2_power". Run tf_optimizer_init_op (or
 * tf_global_variables_initializer) once before training.
 *
 * A sparse gradient (tf_grad with indices, from the gradient of Gather) is
 * applied row-wise and never densified: SGD subtracts lr * rows with
 * ScatterSub; the others first sum duplicate rows (Unique and
 * UnsortedSegmentSum, as TF's optimizers do) and then run SparseApply*;
 * Adam runs SparseApplyAdam, TF's non-lazy sparse Adam (every row of m and
 * v decays; the result equals dense Adam on the densified gradient).
 *
 * Names of the nodes built here are relative to the graph's current scope
 * (they match TF's names when no scope is pushed). Every builder returns
 * NULL or an error code with st naming what was wrong. */
#ifndef TF_TRAIN_H
#define TF_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/gradients.h"
#include "tf/graph.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- variables ------------------------------------------------------------
 * (The layers API, tf/layers.h, has its own context-bound variables; these
 * are the plain graph-level form, usable without a layers context.) */

typedef struct tf_var {
  tf_output ref;        /* the VariableV2's ref output */
  tf_node *initializer; /* "<name>/Assign" of the initial value */
} tf_var;

/* A VariableV2 `name` of dtype and fully defined shape, with Assign
 * "<name>/Assign" of init_value (dtype `dtype`; its inferred shape must
 * fit). INVALID_ARGUMENT for a bad shape or dtype, ALREADY_EXISTS when the
 * name is taken; the graph is unchanged on error. */
TF_API tf_code tf_variable_create(tf_graph *g, const char *name, tf_shape shape,
                                  tf_dtype dtype, tf_output init_value,
                                  tf_var *out, tf_status *st);

/* A NoOp `name` (NULL: "init", made unique) with a control input on the
 * initializer of every variable of g: each Assign named "<v>/Assign" whose
 * ref input is VariableV2 <v> (the form made here, by the optimizers and
 * by tf/layers.h). INVALID_ARGUMENT when g has none. */
TF_API tf_node *tf_global_variables_initializer(tf_graph *g, const char *name,
                                                tf_status *st);

/* The int64 scalar variable "global_step": found when g has a VariableV2
 * of that name (it must be an int32/int64 scalar), else created with its
 * initializer "global_step/Assign" of 0. */
TF_API tf_code tf_global_step(tf_graph *g, tf_output *out, tf_status *st);

/* ---- optimizers ----------------------------------------------------------- */

typedef enum tf_optimizer_kind {
  TF_OPT_GRADIENT_DESCENT = 0,
  TF_OPT_MOMENTUM,
  TF_OPT_ADAGRAD,
  TF_OPT_ADADELTA,
  TF_OPT_RMSPROP,
  TF_OPT_ADAM
} tf_optimizer_kind;

/* Hyperparameters; tf_optimizer_defaults gives TF1's defaults. */
typedef struct tf_optimizer_options {
  double learning_rate; /* Adadelta 0.001, Adam 0.001; others: required */
  /* When its node is set, a scalar tensor (float32 or float64, e.g. a
   * decay schedule below) used instead of learning_rate; cast to each
   * variable's dtype. */
  tf_output learning_rate_tensor;
  double momentum;      /* Momentum: required (0.9 here); RMSProp: 0.0 */
  bool use_nesterov;    /* Momentum; Adam's op has it too. false */
  double initial_accumulator_value; /* Adagrad: 0.1 */
  double rho;           /* Adadelta: 0.95; RMSProp's decay: 0.9 */
  double beta1, beta2;  /* Adam: 0.9, 0.999 */
  double epsilon;       /* Adadelta 1e-8, RMSProp 1e-10, Adam 1e-8 */
  const char *name;     /* "GradientDescent", "Momentum", "Adagrad",
                         * "Adadelta", "RMSProp", "Adam": slot suffix and
                         * the update nodes' scope */
} tf_optimizer_options;

typedef struct tf_optimizer tf_optimizer;

/* TF1's defaults for kind (learning_rate 0.01 where TF requires one). */
TF_API tf_optimizer_options tf_optimizer_defaults(tf_optimizer_kind kind);
/* An optimizer of kind with options o (NULL: the defaults). It builds into
 * one graph (bound on first use). Aborts on OOM only. */
TF_API tf_optimizer *tf_optimizer_new(tf_optimizer_kind kind,
                                      const tf_optimizer_options *o);
/* Shorthands with the remaining options at their defaults. */
TF_API tf_optimizer *tf_optimizer_gradient_descent(double learning_rate);
TF_API tf_optimizer *tf_optimizer_momentum(double learning_rate,
                                           double momentum, bool use_nesterov);
TF_API tf_optimizer *tf_optimizer_adagrad(double learning_rate);
TF_API tf_optimizer *tf_optimizer_adadelta(double learning_rate);
TF_API tf_optimizer *tf_optimizer_rmsprop(double learning_rate);
TF_API tf_optimizer *tf_optimizer_adam(double learning_rate);
/* Frees the optimizer (not the graph's nodes). NULL-safe. */
TF_API void tf_optimizer_free(tf_optimizer *o);

/* Adds the update of every vars[i] (a float32/float64 VariableV2 ref
 * output with a fully defined shape) by grads[i] (dense, of the
 * variable's shape, or sparse rows; values.node NULL: no gradient, the
 * variable is skipped), creating missing slots, and returns a NoOp `name`
 * (NULL: the optimizer's name, made unique) that runs them all and then,
 * when global_step's node is set, adds 1 to that int32/int64 variable,
 * and also waits for the optimizer's control dependencies (see
 * tf_optimizer_control_dependencies): run it as a target once per
 * training step. INVALID_ARGUMENT when no
 * variable has a gradient, for a variable that is not one, a dtype or
 * shape mismatch, an optimizer bound to another graph, or a control
 * dependency (tf_optimizer_control_dependencies) NULL or in another graph. */
TF_API tf_node *tf_optimizer_apply_gradients(tf_optimizer *o, tf_graph *g,
                                             const tf_output *vars,
                                             const tf_grad *grads, int n,
                                             tf_output global_step,
                                             const char *name, tf_status *st);

/* TF's tf.control_dependencies(ops) around minimize: every train op the
 * optimizer builds after this call (apply_gradients, minimize) also waits
 * for ops[0..n) (nodes of the graph it builds into), so running it as a
 * target runs them once per step, e.g. the update ops of batch norm
 * (tf_layers_update_ops in tf/layers.h, TF's UPDATE_OPS). Replaces the
 * previous list; n 0 clears it. Aborts on OOM only. */
TF_API void tf_optimizer_control_dependencies(tf_optimizer *o,
                                              tf_node *const *ops, int n);

/* tf_gradients_sparse(loss, vars) then apply_gradients; vars that loss
 * does not depend on are skipped (none at all: INVALID_ARGUMENT). No
 * update starts before every gradient is computed (TF's GATE_GRAPH: a
 * NoOp "gradients_ready", made unique, and an Identity per gradient after
 * it), so one Run gives the same result on every run: a variable is read
 * when its consumer runs, and an update could otherwise change it before
 * the backward pass read it. */
TF_API tf_node *tf_optimizer_minimize(tf_optimizer *o, tf_graph *g,
                                      tf_output loss, const tf_output *vars,
                                      int n, tf_output global_step,
                                      const char *name, tf_status *st);

/* A NoOp `name` (NULL: "<Optimizer>_init", made unique) over the
 * initializers of every slot and Adam power the optimizer created.
 * INVALID_ARGUMENT when it created none (SGD never does). */
TF_API tf_node *tf_optimizer_init_op(tf_optimizer *o, const char *name,
                                     tf_status *st);

/* The ref output of var's slot `slot` (TF's get_slot names: "momentum"
 * for Momentum, "accumulator" for Adagrad, "accum" and "accum_update" for
 * Adadelta, "rms" and "momentum" for RMSProp, "m" and "v" for Adam), or
 * NOT_FOUND. */
TF_API tf_code tf_optimizer_slot(const tf_optimizer *o, tf_output var,
                                 const char *slot, tf_output *out,
                                 tf_status *st);

/* ---- gradient clipping ---------------------------------------------------- */

/* TF's clip_by_global_norm: norm = sqrt(sum_i sum(values_i^2)) over the
 * gradients present (a sparse one counts its rows' values as given,
 * duplicates included), out[i] = grads[i] * clip_norm / max(norm,
 * clip_norm) with the same indices (node NULL where grads[i] has none),
 * all NaN when norm is infinite; *global_norm gets norm. All gradients
 * share one float dtype; clip_norm > 0. Nodes under scope
 * "clip_by_global_norm". */
TF_API tf_code tf_clip_by_global_norm(tf_graph *g, const tf_grad *grads, int n,
                                      double clip_norm, tf_grad *out,
                                      tf_output *global_norm, tf_status *st);

/* ---- learning-rate schedules ----------------------------------------------
 * Graph builders on global_step (any int or float scalar, cast to
 * float32); *out gets a float32 scalar, TF1's formulas with p =
 * global_step / decay_steps (decay_steps > 0): */

/* learning_rate * decay_rate ^ p (p floored when staircase). Scope
 * "ExponentialDecay". */
TF_API tf_code tf_exponential_decay(tf_graph *g, double learning_rate,
                                    tf_output global_step, double decay_steps,
                                    double decay_rate, bool staircase,
                                    tf_output *out, tf_status *st);

/* learning_rate / (1 + decay_rate * p) (p floored when staircase). Scope
 * "InverseTimeDecay". */
TF_API tf_code tf_inverse_time_decay(tf_graph *g, double learning_rate,
                                     tf_output global_step, double decay_steps,
                                     double decay_rate, bool staircase,
                                     tf_output *out, tf_status *st);

/* (learning_rate - end) * (1 - p)^power + end with global_step capped at
 * decay_steps; with cycle, decay_steps is first multiplied by
 * ceil(global_step / decay_steps) (1 at step 0). Scope "PolynomialDecay". */
TF_API tf_code tf_polynomial_decay(tf_graph *g, double learning_rate,
                                   tf_output global_step, double decay_steps,
                                   double end_learning_rate, double power,
                                   bool cycle, tf_output *out, tf_status *st);

/* values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x
 * <= boundaries[i], values[n_boundaries] after: n_boundaries + 1 values.
 * x: an int32/int64/float32/float64 scalar, compared in its own dtype
 * (integer x needs integral boundaries); boundaries increasing. Scope
 * "PiecewiseConstant". */
TF_API tf_code tf_piecewise_constant(tf_graph *g, tf_output x,
                                     const double *boundaries, int n_boundaries,
                                     const double *values, tf_output *out,
                                     tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
