/* gradients.h: automatic differentiation by graph extension (whitepaper
 * §4.1, OSDI §4.1).
 *
 * tf_gradients adds to the graph the nodes that compute the gradients of
 * ys with respect to xs: a backward walk from ys over the nodes that lie
 * between xs and ys, calling each op's registered gradient function in
 * reverse topological order. Partial gradients reaching one tensor are
 * summed (AddN). Outputs of a node that do not reach ys contribute zeros.
 * StopGradient, ops registered as not differentiable and integer tensors
 * stop the walk. Gradient nodes are named under "gradients/" (made unique).
 *
 * Sparse gradients: the gradient of Gather with respect to its params is
 * a set of rows (indices + values, TF's IndexedSlices). tf_gradients_sparse
 * returns it as such, so an optimizer can apply it as a sparse update; a
 * sparse gradient is densified only where it must be summed with a dense
 * one or fed to a gradient function, and by tf_gradients. */
#ifndef TF_GRADIENTS_H
#define TF_GRADIENTS_H

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_grad {
  tf_output values;      /* dense gradient, or the rows' values; node NULL: none */
  tf_output indices;     /* node NULL: dense; else int32/int64 row indices */
  tf_output dense_shape; /* sparse only: the dense tensor's shape (int32) */
} tf_grad;

static inline bool tf_grad_is_sparse(const tf_grad *g) { return g->indices.node != NULL; }

/* dxs[i] = d(sum_j sum(ys[j] * grad_ys[j])) / d(xs[i]), dense. grad_ys
 * NULL means ones for every y. dxs[i].node is NULL when xs[i] does not
 * reach any y (no gradient, as TF's None). Errors name the node whose op
 * has no gradient function, or the dtype mismatch of a grad_y; the graph
 * is left unchanged on error. */
TF_API tf_code tf_gradients(tf_graph *g, const tf_output *ys, int n_ys,
                            const tf_output *xs, int n_xs,
                            const tf_output *grad_ys, tf_output *dxs,
                            tf_status *st);

/* As tf_gradients, but a gradient that is a set of rows stays sparse. */
TF_API tf_code tf_gradients_sparse(tf_graph *g, const tf_output *ys, int n_ys,
                                   const tf_output *xs, int n_xs,
                                   const tf_output *grad_ys, tf_grad *dxs,
                                   tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
