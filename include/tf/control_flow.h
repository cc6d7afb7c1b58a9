/* control_flow.h: build conditionals and loops from the control-flow
 * primitives (whitepaper §4.4, OSDI §3.4): Switch, Merge, Enter, Exit,
 * NextIteration and LoopCond. Both builders nest.
 *
 * The branch and body functions receive the tensors they may use as
 * arguments and must build every node from those (or from nodes without
 * inputs, such as Const, which the builder ties to the branch or loop).
 * Using another outer tensor directly inside a loop is an error when the
 * graph runs ("inputs from different frames"); inside a cond it is allowed
 * but that node then runs whichever branch is taken. */
#ifndef TF_CONTROL_FLOW_H
#define TF_CONTROL_FLOW_H

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a branch: reads in[0..n_in), writes out[0..n_out). Returns OK or
 * an error in st (which the builder passes on). */
typedef tf_code (*tf_branch_fn)(tf_graph *g, const tf_output *in, int n_in,
                                tf_output *out, int n_out, void *arg,
                                tf_status *st);

/* out[i] = pred ? true_fn(inputs)[i] : false_fn(inputs)[i]. pred is a
 * scalar bool. Only the taken branch runs. Both branches must produce
 * n_out outputs of matching dtypes. name ("cond" if NULL) scopes the
 * nodes. */
TF_API tf_code tf_cond(tf_graph *g, const char *name, tf_output pred,
                       const tf_output *inputs, int n_inputs,
                       tf_branch_fn true_fn, tf_branch_fn false_fn, void *arg,
                       tf_output *out, int n_out, tf_status *st);

/* cond_fn(vars, invariants) -> one scalar bool; body_fn(vars, invariants)
 * -> n_vars new values (same dtypes; shapes compatible with the inputs'). */
typedef tf_code (*tf_loop_cond_fn)(tf_graph *g, const tf_output *vars,
                                   int n_vars, const tf_output *invariants,
                                   int n_invariants, tf_output *pred,
                                   void *arg, tf_status *st);
typedef tf_code (*tf_loop_body_fn)(tf_graph *g, const tf_output *vars,
                                   int n_vars, const tf_output *invariants,
                                   int n_invariants, tf_output *next,
                                   void *arg, tf_status *st);

/* while (cond(vars)) vars = body(vars); out[i] = the final vars[i].
 * Invariants are outer tensors that the loop reads on every iteration
 * without changing them (Enter with is_constant). parallel_iterations
 * (>= 1; 0 means 10) bounds how many iterations run at once; the results
 * do not depend on it. name ("while" if NULL) scopes the nodes and names
 * the frame. */
TF_API tf_code tf_while_loop(tf_graph *g, const char *name,
                             const tf_output *vars, int n_vars,
                             const tf_output *invariants, int n_invariants,
                             tf_loop_cond_fn cond_fn, tf_loop_body_fn body_fn,
                             void *arg, int parallel_iterations, tf_output *out,
                             tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
