/* gradients.c: tf_gradients, reverse-mode automatic differentiation by
 * graph extension (whitepaper §4.1). The nodes between xs and ys (forward-
 * reachable from an x and backward-reachable from a y over differentiable
 * data edges) are visited in reverse id order (ids are topological); each
 * one's partial output gradients are summed and handed to its registered
 * gradient function, whose input gradients become partials of the producers.
 * Sparse partials (row sets) are concatenated while they meet only each
 * other and densified with UnsortedSegmentSum otherwise. Loops make the
 * graph cyclic, so the marking repeats passes until nothing changes; the
 * walk itself (frame by frame, with conds and loops) is gradients_cf.c's.
 * On error the graph is rolled back to a mark taken at the start
 * (algorithm.h): every node added is removed again and its names are
 * free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/gradients_impl.h"
#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

typedef tf__plist plist;
typedef tf__gwalk gwalk;

#define edge_differentiable tf__gw_differentiable

bool tf__gw_differentiable(const tf_node *n, int port) {
  tf_dtype dt = n->out_types[port];
  return tf_dtype_is_float(dt) || dt == TF_COMPLEX64;
}

static plist *parts_of(gwalk *w, tf_output e) {
  return &w->parts[w->off[e.node->id] + e.index];
}

void tf__gw_add_partial(gwalk *w, tf_output e, tf_grad g) {
  plist *p = parts_of(w, e);
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 2;
    p->v = tf__xrealloc(p->v, (size_t)p->cap * sizeof *p->v);
  }
  p->v[p->n++] = g;
}

/* A context for nodes named after n (aggregation, seeds, densifying). */
static tf_grad_ctx ctx_for(gwalk *w, const tf_node *n) {
  return (tf_grad_ctx){.g = w->g, .node = n, .st = w->st};
}

/* ---- summing partials ----------------------------------------------------- */

/* num_segments for densifying: dense_shape[0], constant when it can be. */
static tf_output first_dim(tf_grad_ctx *c, tf_output dense_shape) {
  const tf_node *n = dense_shape.node;
  if (c->st->code != TF_OK) {
    return (tf_output){0};
  }
  if (n != NULL && strcmp(n->op->name, "Const") == 0) {
    const tf_attr_value *v = tf_node_attr(n, "value");
    if (v != NULL && v->u.tensor->n >= 1) {
      return tf__grad_scalar(c, TF_INT32,
                             (double)tf_tensor_get_i64(v->u.tensor, 0));
    }
  }
  return tf__grad_op2(c, "Gather", dense_shape, tf__grad_scalar(c, TF_INT32, 0));
}

static tf_output densify(tf_grad_ctx *c, const tf_grad *g) {
  if (!tf_grad_is_sparse(g)) {
    return g->values;
  }
  tf_output in[3] = {g->values, g->indices, first_dim(c, g->dense_shape)};
  return tf__grad_op(c, "UnsortedSegmentSum", in, 3, NULL, 0);
}

static tf_output concat0(tf_grad_ctx *c, const tf_output *list, int n,
                         tf_output axis) {
  if (c->st->code != TF_OK) {
    return (tf_output){0};
  }
  tf_node_builder *b = tf_node_begin(c->g, "ConcatV2", NULL);
  tf_node_add_input_list(b, list, n);
  tf_node_add_input(b, axis);
  return (tf_output){tf_node_finish(b, c->st), 0};
}

/* Concatenates sparse partials v[0..n) (n >= 2, one index dtype). */
static tf_grad concat_sparse(tf_grad_ctx *c, const tf_grad *v, int n) {
  tf_output *vals = tf__xmalloc((size_t)n * sizeof *vals);
  tf_output *idx = tf__xmalloc((size_t)n * sizeof *idx);
  for (int i = 0; i < n; i++) {
    vals[i] = v[i].values;
    idx[i] = v[i].indices;
  }
  tf_output axis = tf__grad_scalar(c, TF_INT32, 0);
  tf_grad r = {.values = concat0(c, vals, n, axis),
               .indices = concat0(c, idx, n, axis),
               .dense_shape = v[0].dense_shape};
  free(vals);
  free(idx);
  return r;
}

/* Concatenates the sparse partials of p that share p's first sparse
 * index dtype into one, in place (p->v keeps the others in order). */
static void merge_sparse(tf_grad_ctx *c, plist *p) {
  int first = -1, n = 0;
  tf_grad *sp = tf__xmalloc((size_t)p->n * sizeof *sp);
  tf_dtype it = TF_DTYPE_INVALID;
  for (int i = 0; i < p->n; i++) {
    const tf_grad *g = &p->v[i];
    if (!tf_grad_is_sparse(g)) {
      continue;
    }
    tf_dtype t = tf_node_output_type(g->indices.node, g->indices.index);
    if (first < 0) {
      first = i;
      it = t;
    }
    if (t == it) {
      sp[n++] = *g;
    }
  }
  if (n >= 2) {
    int k = 0;
    for (int i = 0; i < p->n; i++) {
      const tf_grad *g = &p->v[i];
      bool merged = tf_grad_is_sparse(g) &&
                    tf_node_output_type(g->indices.node, g->indices.index) == it;
      if (i == first) {
        p->v[k++] = concat_sparse(c, sp, n);
      } else if (!merged) {
        p->v[k++] = *g;
      }
    }
    p->n = k;
  }
  free(sp);
}

/* The sum of edge e's partials (values.node NULL when it has none); sparse
 * partials are concatenated first, and the result stays sparse when
 * allowed and nothing dense is left. The result replaces the list, so
 * asking twice builds nothing new. */
tf_code tf__gw_aggregate(gwalk *w, tf_output e, bool allow_sparse,
                         tf_grad *out) {
  plist *p = parts_of(w, e);
  *out = (tf_grad){{0}};
  if (p->n == 0) {
    return TF_OK;
  }
  tf_grad_ctx c = ctx_for(w, e.node);
  merge_sparse(&c, p);
  tf_grad r;
  if (p->n == 1 && (allow_sparse || !tf_grad_is_sparse(&p->v[0]))) {
    r = p->v[0];
  } else {
    tf_output *d = tf__xmalloc((size_t)p->n * sizeof *d);
    for (int i = 0; i < p->n; i++) {
      d[i] = densify(&c, &p->v[i]);
    }
    r = (tf_grad){.values = p->n == 1 ? d[0]
                                      : tf__grad_op_list(&c, "AddN", d, p->n,
                                                         NULL, 0)};
    free(d);
  }
  if (w->st->code != TF_OK) {
    return w->st->code;
  }
  p->v[0] = r;
  p->n = 1;
  *out = r;
  return TF_OK;
}

/* ---- reachability --------------------------------------------------------- */

/* Control-flow ops are flagged not differentiable too, but one on a path
 * must be reported (UNIMPLEMENTED), so the walk reaches them. */
static bool stops_gradient(const tf_node *n) {
  return (n->op->flags & TF_OP_NOT_DIFFERENTIABLE) != 0 &&
         (n->op->flags & TF_OP_CONTROL_FLOW) == 0;
}

/* One pass in id order; true when it marked something new. Loops make
 * the graph cyclic (a Merge's back edge comes from a later
 * NextIteration), so the callers repeat passes until nothing changes. */
static bool forward_pass(gwalk *w) {
  bool changed = false;
  for (int id = 0; id < w->n0; id++) {
    const tf_node *n = w->g->nodes[id];
    if (w->fwd[id] || stops_gradient(n)) {
      continue;
    }
    for (int k = 0; k < n->n_inputs && !w->fwd[id]; k++) {
      tf_output s = n->inputs[k];
      if (s.node->id < w->n0 && edge_differentiable(s.node, s.index) &&
          (w->fwd[s.node->id] || w->is_x[w->off[s.node->id] + s.index])) {
        w->fwd[id] = changed = true;
      }
    }
  }
  return changed;
}

static void mark_forward(gwalk *w) {
  while (forward_pass(w)) {
  }
}

static bool backward_pass(gwalk *w) {
  bool changed = false;
  for (int id = w->n0 - 1; id >= 0; id--) {
    const tf_node *n = w->g->nodes[id];
    if (!w->bwd[id] || !w->fwd[id]) {
      continue;
    }
    for (int k = 0; k < n->n_inputs; k++) {
      tf_output s = n->inputs[k];
      if (s.node->id < w->n0 && edge_differentiable(s.node, s.index) &&
          !w->bwd[s.node->id]) {
        w->bwd[s.node->id] = changed = true;
      }
    }
  }
  return changed;
}

static void mark_backward(gwalk *w, const tf_output *ys, int n_ys) {
  for (int j = 0; j < n_ys; j++) {
    w->bwd[ys[j].node->id] = true;
  }
  while (backward_pass(w)) {
  }
}

/* ---- the walk ------------------------------------------------------------- */

/* The dense gradient of each output of n; zeros for the float outputs that
 * got none when another did. false when no output got any. */
static bool gather_dys(gwalk *w, const tf_node *n, tf_output *dy) {
  bool any = false;
  for (int i = 0; i < n->n_outputs; i++) {
    tf_grad g;
    if (tf__gw_aggregate(w, (tf_output){(tf_node *)n, i}, false, &g) != TF_OK) {
      return false;
    }
    dy[i] = g.values;
    any = any || dy[i].node != NULL;
  }
  if (!any) {
    return false;
  }
  tf_grad_ctx c = ctx_for(w, n);
  for (int i = 0; i < n->n_outputs; i++) {
    if (dy[i].node == NULL && edge_differentiable(n, i)) {
      dy[i] = tf__grad_op1(&c, "ZerosLike", (tf_output){(tf_node *)n, i});
    }
  }
  return w->st->code == TF_OK;
}

/* Checks what a gradient function returned and records it as partials. */
static tf_code take_dx(gwalk *w, const tf_node *n, const tf_grad *dx) {
  for (int i = 0; i < n->n_inputs; i++) {
    tf_output s = n->inputs[i];
    const tf_grad *g = &dx[i];
    if (g->values.node == NULL || !edge_differentiable(s.node, s.index)) {
      continue;
    }
    tf_dtype want = s.node->out_types[s.index];
    tf_dtype got = tf_node_output_type(g->values.node, g->values.index);
    if (got != want || (tf_grad_is_sparse(g) && g->dense_shape.node == NULL)) {
      return tf_status_set(w->st, TF_INTERNAL, "the gradient function of op "
                           "'%s' (node '%s') gave input %d a %s%s gradient "
                           "for a %s input", n->op->name, n->name, i,
                           tf_dtype_name(got),
                           tf_grad_is_sparse(g) && !g->dense_shape.node
                               ? " sparse (no dense_shape)" : "",
                           tf_dtype_name(want));
    }
    tf__gw_add_partial(w, s, *g);
  }
  return TF_OK;
}

tf_code tf__gw_visit(gwalk *w, const tf_node *n) {
  if (n->op->flags & TF_OP_CONTROL_FLOW) {
    return tf_status_set(w->st, TF_UNIMPLEMENTED, "gradients through control "
                         "flow (node '%s', op '%s') are not supported",
                         n->name, n->op->name);
  }
  tf_output *dy = tf__xcalloc((size_t)n->n_outputs + 1, sizeof *dy);
  tf_grad *dx = tf__xcalloc((size_t)n->n_inputs + 1, sizeof *dx);
  tf_code rc = TF_OK;
  if (gather_dys(w, n, dy)) {
    tf_grad_fn fn = tf_grad_lookup(n->op->name);
    if (fn == NULL) {
      rc = tf_status_set(w->st, TF_INVALID_ARGUMENT, "no gradient registered "
                         "for op '%s' (node '%s')", n->op->name, n->name);
    } else {
      tf_grad_ctx c = {.g = w->g, .node = n, .n_dy = n->n_outputs, .dy = dy,
                       .n_dx = n->n_inputs, .dx = dx, .st = w->st};
      rc = fn(&c);
      if (rc != TF_OK && w->st->code == TF_OK) {
        tf_status_set(w->st, rc, "the gradient function of op '%s' (node "
                      "'%s') failed without a message", n->op->name, n->name);
      }
      rc = w->st->code != TF_OK ? w->st->code : take_dx(w, n, dx);
    }
  }
  free(dy);
  free(dx);
  return rc != TF_OK ? rc : w->st->code;
}

/* ---- entry points --------------------------------------------------------- */

static tf_code check_edges(const tf_graph *g, const tf_output *v, int n,
                           const char *what, tf_status *st) {
  for (int i = 0; i < n; i++) {
    if (v[i].node == NULL || v[i].node->graph != g || v[i].index < 0 ||
        v[i].index >= v[i].node->n_outputs) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_gradients: %s[%d] is "
                           "not an output of a node in this graph", what, i);
    }
  }
  return TF_OK;
}

static tf_code check_args(const tf_graph *g, const tf_output *ys, int n_ys,
                          const tf_output *xs, int n_xs,
                          const tf_output *grad_ys, tf_status *st) {
  if (g == NULL || n_ys < 0 || n_xs < 0 || (n_ys > 0 && ys == NULL) ||
      (n_xs > 0 && xs == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_gradients: bad "
                         "arguments (graph, ys or xs missing)");
  }
  TF_TRY(check_edges(g, ys, n_ys, "ys", st));
  TF_TRY(check_edges(g, xs, n_xs, "xs", st));
  if (grad_ys == NULL) {
    return TF_OK;
  }
  for (int j = 0; j < n_ys; j++) {
    if (grad_ys[j].node == NULL) {
      continue;
    }
    TF_TRY(check_edges(g, &grad_ys[j], 1, "grad_ys", st));
    tf_dtype yt = ys[j].node->out_types[ys[j].index];
    tf_dtype gt = grad_ys[j].node->out_types[grad_ys[j].index];
    if (yt != gt) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_gradients: grad_ys[%d] "
                           "is %s but ys[%d] ('%s:%d') is %s", j,
                           tf_dtype_name(gt), j, ys[j].node->name,
                           ys[j].index, tf_dtype_name(yt));
    }
  }
  return TF_OK;
}

static void walk_init(gwalk *w, tf_graph *g, const tf_output *xs, int n_xs,
                      tf_status *st) {
  w->g = g;
  w->st = st;
  w->n0 = g->n_nodes;
  w->off = tf__xcalloc((size_t)w->n0 + 1, sizeof *w->off);
  for (int id = 0; id < w->n0; id++) {
    w->off[id + 1] = w->off[id] + g->nodes[id]->n_outputs;
  }
  w->parts = tf__xcalloc((size_t)w->off[w->n0] + 1, sizeof *w->parts);
  w->is_x = tf__xcalloc((size_t)w->off[w->n0] + 1, sizeof *w->is_x);
  w->fwd = tf__xcalloc((size_t)w->n0 + 1, sizeof *w->fwd);
  w->bwd = tf__xcalloc((size_t)w->n0 + 1, sizeof *w->bwd);
  for (int i = 0; i < n_xs; i++) {
    w->is_x[w->off[xs[i].node->id] + xs[i].index] = true;
  }
}

static void walk_fini(gwalk *w) {
  for (int i = 0; i < w->off[w->n0]; i++) {
    free(w->parts[i].v);
  }
  free(w->parts);
  free(w->off);
  free(w->is_x);
  free(w->fwd);
  free(w->bwd);
}

/* Ones of y's shape: Fill of a constant shape when it is known (so the
 * gradient does not wait for y itself), else OnesLike(y). */
static tf_output ones_like(gwalk *w, tf_output y) {
  tf_grad_ctx c = ctx_for(w, y.node);
  const tf_shape *s = tf_node_output_shape(y.node, y.index);
  if (!tf_shape_is_fully_defined(s)) {
    return tf__grad_op1(&c, "OnesLike", y);
  }
  return tf__grad_op2(&c, "Fill", tf__grad_shape(&c, y),
                      tf__grad_scalar(&c, y.node->out_types[y.index], 1));
}

/* Seeds each y that lies on a path with grad_ys[j] or OnesLike(y). */
static tf_code seed(gwalk *w, const tf_output *ys, int n_ys,
                    const tf_output *grad_ys) {
  for (int j = 0; j < n_ys; j++) {
    tf_output y = ys[j];
    if (!edge_differentiable(y.node, y.index) ||
        !(w->fwd[y.node->id] || w->is_x[w->off[y.node->id] + y.index])) {
      continue;
    }
    tf_grad g = {{0}};
    if (grad_ys != NULL && grad_ys[j].node != NULL) {
      g.values = grad_ys[j];
    } else {
      g.values = ones_like(w, y);
      TF_TRY(w->st->code);
    }
    tf__gw_add_partial(w, y, g);
  }
  return TF_OK;
}

static tf_code run_walk(gwalk *w, const tf_output *ys, int n_ys,
                        const tf_output *xs, int n_xs,
                        const tf_output *grad_ys, bool sparse, tf_grad *dxs) {
  TF_TRY(tf__cf_check_outside(w, ys, n_ys, "ys"));
  TF_TRY(tf__cf_check_outside(w, xs, n_xs, "xs"));
  mark_forward(w);
  mark_backward(w, ys, n_ys);
  TF_TRY(seed(w, ys, n_ys, grad_ys));
  TF_TRY(tf__cf_walk(w));
  for (int i = 0; i < n_xs; i++) {
    TF_TRY(tf__gw_aggregate(w, xs[i], sparse, &dxs[i]));
  }
  return TF_OK;
}

static tf_code gradients(tf_graph *g, const tf_output *ys, int n_ys,
                         const tf_output *xs, int n_xs,
                         const tf_output *grad_ys, bool sparse, tf_grad *dxs,
                         tf_status *st) {
  tf_status_init(st);
  for (int i = 0; i < n_xs && dxs != NULL; i++) {
    dxs[i] = (tf_grad){{0}};
  }
  TF_TRY(check_args(g, ys, n_ys, xs, n_xs, grad_ys, st));
  if (n_xs > 0 && dxs == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_gradients: dxs is NULL");
  }
  tf__gmark m = tf__graph_mark(g);
  gwalk w;
  walk_init(&w, g, xs, n_xs, st);
  tf_graph_push_scope(g, "gradients");
  tf_code rc = tf__cf_init(&w);
  if (rc == TF_OK) {
    rc = run_walk(&w, ys, n_ys, xs, n_xs, grad_ys, sparse, dxs);
  }
  tf__cf_fini(&w);
  walk_fini(&w);
  if (rc == TF_OK) {
    tf__graph_commit(g, &m);
  } else {
    tf__graph_rollback(g, &m);
    for (int i = 0; i < n_xs; i++) {
      dxs[i] = (tf_grad){{0}};
    }
  }
  return rc;
}

tf_code tf_gradients_sparse(tf_graph *g, const tf_output *ys, int n_ys,
                            const tf_output *xs, int n_xs,
                            const tf_output *grad_ys, tf_grad *dxs,
                            tf_status *st) {
  return gradients(g, ys, n_ys, xs, n_xs, grad_ys, true, dxs, st);
}

tf_code tf_gradients(tf_graph *g, const tf_output *ys, int n_ys,
                     const tf_output *xs, int n_xs, const tf_output *grad_ys,
                     tf_output *dxs, tf_status *st) {
  tf_grad *d = tf__xcalloc((size_t)n_xs + 1, sizeof *d);
  tf_code rc = gradients(g, ys, n_ys, xs, n_xs, grad_ys, false, d, st);
  for (int i = 0; i < n_xs && dxs != NULL; i++) {
    dxs[i] = d[i].values;
  }
  free(d);
  return rc;
}
