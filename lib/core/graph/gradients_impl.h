/* gradients_impl.h: the state of one tf_gradients walk, shared by
 * gradients.c (the walk over ordinary ops) and gradients_cf.c (gradients
 * of cond and while_loop: the backward walk of a loop body runs inside the
 * body of a gradient loop). Internal to lib/core/graph. */
#ifndef TF_CORE_GRAPH_GRADIENTS_IMPL_H
#define TF_CORE_GRAPH_GRADIENTS_IMPL_H

#include "lib/core/graph/grad_registry.h"
#include "lib/core/graph/graph_impl.h"

/* The partial gradients reaching one output edge. */
typedef struct tf__plist {
  tf_grad *v;
  int n, cap;
} tf__plist;

typedef struct tf__cf_state tf__cf_state;

typedef struct tf__gwalk {
  tf_graph *g;
  tf_status *st;
  int n0;          /* nodes before the call; only these are walked */
  int *off;        /* per node id: first slot of its outputs */
  tf__plist *parts; /* per output slot */
  bool *is_x;      /* per output slot: some xs[i] is this edge */
  bool *fwd, *bwd;
  tf__cf_state *cf; /* frames and conds of the graph (gradients_cf.c) */
} tf__gwalk;

/* Whether output port of n can carry a gradient (a float or complex). */
bool tf__gw_differentiable(const tf_node *n, int port);
/* Adds g to the partial gradients of edge e (a node with id < n0). */
void tf__gw_add_partial(tf__gwalk *w, tf_output e, tf_grad g);
/* The sum of e's partials (values.node NULL when none), dense unless
 * allow_sparse; the sum replaces the list. */
tf_code tf__gw_aggregate(tf__gwalk *w, tf_output e, bool allow_sparse,
                         tf_grad *out);
/* Runs the registered gradient function of the ordinary node n. */
tf_code tf__gw_visit(tf__gwalk *w, const tf_node *n);

/* gradients_cf.c. Finds the graph's frames (Enter/Exit) and the cond
 * branch each node lies in; installs the graph's input hook. */
tf_code tf__cf_init(tf__gwalk *w);
/* Removes the hook and frees what tf__cf_init made. */
void tf__cf_fini(tf__gwalk *w);
/* UNIMPLEMENTED naming what[i] when some v[i] lies inside a while loop
 * (tf_gradients differentiates a loop's outputs, not values inside it). */
tf_code tf__cf_check_outside(tf__gwalk *w, const tf_output *v, int n,
                             const char *what);
/* Walks the root frame's marked nodes in reverse id order: ordinary nodes
 * through tf__gw_visit, conds and loops by their own rules. */
tf_code tf__cf_walk(tf__gwalk *w);

#endif
