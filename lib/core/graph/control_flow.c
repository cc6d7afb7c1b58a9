/* control_flow.c: tf_cond and tf_while_loop, assembled like TF1's
 * control_flow_ops from Switch, Merge, Enter, Exit, NextIteration and
 * LoopCond. Nodes that a branch, condition or body function creates with
 * no input at all (Const, NoOp, ...) get a control edge from the pivot of
 * their branch or loop, so they run only when, and as often as, it does.
 * On error the graph is left as it was (a mark rolled back: algorithm.h):
 * every node the call added is removed again and its names are free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"
#include "tf/control_flow.h"

/* ---- shared helpers ----------------------------------------------------- */

static tf_node *add_unary(tf_graph *g, const char *op, const char *name,
                          tf_output x, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_add_input(b, x);
  return tf_node_finish(b, st);
}

static tf_node *add_switch(tf_graph *g, tf_output data, tf_output pred,
                           tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "Switch", NULL);
  tf_node_add_input(b, data);
  tf_node_add_input(b, pred);
  return tf_node_finish(b, st);
}

static tf_node *add_merge(tf_graph *g, tf_output a, tf_output b,
                          tf_status *st) {
  tf_output in[2] = {a, b};
  tf_node_builder *nb = tf_node_begin(g, "Merge", NULL);
  tf_node_add_input_list(nb, in, 2);
  return tf_node_finish(nb, st);
}

static tf_node *add_enter(tf_graph *g, tf_output x, const char *frame,
                          bool is_constant, int parallel_iterations,
                          tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "Enter", NULL);
  tf_node_add_input(b, x);
  tf_node_set_attr(b, "frame_name", tf_attr_string(frame));
  tf_node_set_attr(b, "is_constant", tf_attr_bool(is_constant));
  tf_node_set_attr(b, "parallel_iterations", tf_attr_int(parallel_iterations));
  return tf_node_finish(b, st);
}

/* A fresh node name under the current scope, relative to it (what
 * tf_node_begin takes). */
static const char *local_name(tf_graph *g, const char *base, char *buf,
                              size_t size) {
  tf_graph_unique_name(g, base, buf, size);
  return buf + strlen(tf__graph_scope(g));
}

/* Ties every node with ids in [from, to) that has no input at all to
 * pivot with a control edge. */
static void tie_sources(tf_graph *g, int from, int to, tf_node *pivot) {
  for (int i = from; i < to && i < g->n_nodes; i++) {
    tf_node *n = g->nodes[i];
    if (n->n_inputs == 0 && n->n_control == 0) {
      tf__node_add_control(n, pivot);
    }
  }
}

/* Ends a build begun at mark m: keeps what it added, or on error puts the
 * graph back as it was (algorithm.h). */
static void end_build(tf_graph *g, const tf__gmark *m, tf_code rc) {
  if (rc == TF_OK) {
    tf__graph_commit(g, m);
  } else {
    tf__graph_rollback(g, m);
  }
}

/* A user function's result: its own status, or a generic one when it
 * returned an error code without filling st. */
static tf_code fn_failed(tf_code rc, tf_status *st, const char *label,
                         const char *what) {
  if (st->code == TF_OK) {
    tf_status_set(st, rc, "%s: the %s function failed (code %d) without a "
                  "message", label, what, (int)rc);
  }
  return st->code;
}

static tf_code check_outputs_in(const tf_graph *g, const char *label,
                                const char *what, const tf_output *v, int n,
                                tf_status *st) {
  for (int i = 0; i < n; i++) {
    if (v[i].node == NULL || v[i].node->graph != g || v[i].index < 0 ||
        v[i].index >= v[i].node->n_outputs) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s %d is not an "
                           "output of a node in this graph", label, what, i);
    }
  }
  return TF_OK;
}

/* "cond_1/" -> "cond_1" */
static void scope_label(const tf_graph *g, char *buf, size_t size) {
  snprintf(buf, size, "%s", tf__graph_scope(g));
  size_t len = strlen(buf);
  if (len > 0 && buf[len - 1] == '/') {
    buf[len - 1] = '\0';
  }
}

/* ---- cond --------------------------------------------------------------- */

/* What a branch is built from. The builder's own Switches (on pred, then
 * on each input) have ids [sw_lo, sw_hi); port is the branch's side. */
typedef struct branch {
  const char *what; /* "true" or "false" */
  int port;         /* 1: true, 0: false */
  tf_node *pivot;
  int sw_lo, sw_hi;
  tf_output *in, *out;
} branch;

typedef struct cond_build {
  tf_graph *g;
  tf_status *st;
  char label[256];
  tf_output pred;
  int n_in, n_out;
  branch br[2]; /* [0] false, [1] true */
} cond_build;

/* Whether a value from s (port; -1 for a control edge) is certainly dead
 * when the branch is not taken. dead[] covers nodes [from, to). */
static bool src_dead(const branch *br, const bool *dead, int from, int to,
                     const tf_node *s, int port) {
  if (s == br->pivot) {
    return true;
  }
  if (s->id >= from && s->id < to) {
    return dead[s->id - from];
  }
  return s->id >= br->sw_lo && s->id < br->sw_hi && port == br->port;
}

/* Which of the nodes [from, to) the branch function made are dead when
 * the branch is not taken: a dead input kills a node, except a Merge,
 * which needs all its (forward) data inputs dead. Conservative. */
static bool *branch_deadness(const tf_graph *g, const branch *br, int from,
                             int to) {
  bool *dead = tf__xcalloc((size_t)(to - from) + 1, sizeof *dead);
  for (int id = from; id < to; id++) {
    const tf_node *v = g->nodes[id];
    bool is_merge = strcmp(v->op->name, "Merge") == 0;
    bool any = false, all = true;
    int n = 0;
    for (int k = 0; k < v->n_inputs; k++) {
      const tf_output *s = &v->inputs[k];
      if (is_merge && (s->node->op->flags & TF_OP_BACK_EDGE)) {
        continue;
      }
      bool d = src_dead(br, dead, from, to, s->node, s->index);
      any = any || d;
      all = all && d;
      n++;
    }
    for (int k = 0; k < v->n_control && !is_merge; k++) {
      any = any || src_dead(br, dead, from, to, v->control[k], -1);
    }
    dead[id - from] = is_merge ? (n > 0 && all) : any;
  }
  return dead;
}

/* Runs one branch function, ties its sources to the pivot and routes any
 * output that could be live on the untaken side through a Switch. */
static tf_code build_branch(cond_build *c, branch *br, tf_branch_fn fn,
                            void *arg) {
  tf_graph *g = c->g;
  int from = g->n_nodes;
  for (int i = 0; i < c->n_out; i++) {
    br->out[i] = (tf_output){NULL, 0};
  }
  tf_code rc = fn(g, br->in, c->n_in, br->out, c->n_out, arg, c->st);
  if (rc != TF_OK) {
    return fn_failed(rc, c->st, c->label, br->what);
  }
  int to = g->n_nodes;
  char what[64];
  snprintf(what, sizeof what, "%s branch output", br->what);
  TF_TRY(check_outputs_in(g, c->label, what, br->out, c->n_out, c->st));
  tie_sources(g, from, to, br->pivot);
  bool *dead = branch_deadness(g, br, from, to);
  for (int i = 0; i < c->n_out && rc == TF_OK; i++) {
    if (src_dead(br, dead, from, to, br->out[i].node, br->out[i].index)) {
      continue;
    }
    tf_node *sw = add_switch(g, br->out[i], c->pred, c->st);
    if (sw == NULL) {
      rc = c->st->code;
    } else {
      br->out[i] = (tf_output){sw, br->port};
    }
  }
  free(dead);
  return rc;
}

static tf_code cond_switches(cond_build *c, const tf_output *inputs) {
  tf_graph *g = c->g;
  char buf[512];
  tf_node *ps = add_switch(g, c->pred, c->pred, c->st);
  if (ps == NULL) {
    return c->st->code;
  }
  for (int i = 0; i < c->n_in; i++) {
    tf_node *s = add_switch(g, inputs[i], c->pred, c->st);
    if (s == NULL) {
      return c->st->code;
    }
    c->br[0].in[i] = (tf_output){s, 0};
    c->br[1].in[i] = (tf_output){s, 1};
  }
  for (int side = 0; side < 2; side++) {
    branch *br = &c->br[side];
    br->sw_lo = ps->id;
    br->sw_hi = ps->id + 1 + c->n_in;
    const char *nm = local_name(g, side ? "switch_t" : "switch_f", buf, sizeof buf);
    br->pivot = add_unary(g, "Identity", nm, (tf_output){ps, side}, c->st);
    if (br->pivot == NULL) {
      return c->st->code;
    }
  }
  return TF_OK;
}

static tf_code build_cond(cond_build *c, const tf_output *inputs,
                          tf_branch_fn true_fn, tf_branch_fn false_fn,
                          void *arg, tf_output *out) {
  TF_TRY(cond_switches(c, inputs));
  TF_TRY(build_branch(c, &c->br[1], true_fn, arg));
  TF_TRY(build_branch(c, &c->br[0], false_fn, arg));
  for (int i = 0; i < c->n_out; i++) {
    tf_dtype dt = tf_node_output_type(c->br[1].out[i].node, c->br[1].out[i].index);
    tf_dtype df = tf_node_output_type(c->br[0].out[i].node, c->br[0].out[i].index);
    if (dt != df) {
      return tf_status_set(c->st, TF_INVALID_ARGUMENT, "%s: output %d is %s "
                           "in the true branch but %s in the false branch",
                           c->label, i, tf_dtype_name(dt), tf_dtype_name(df));
    }
  }
  for (int i = 0; i < c->n_out; i++) {
    tf_node *m = add_merge(c->g, c->br[0].out[i], c->br[1].out[i], c->st);
    if (m == NULL) {
      return c->st->code;
    }
    out[i] = (tf_output){m, 0};
  }
  return TF_OK;
}

static tf_code check_cond_args(tf_graph *g, tf_output pred,
                               const tf_output *inputs, int n_inputs,
                               tf_branch_fn true_fn, tf_branch_fn false_fn,
                               tf_output *out, int n_out, tf_status *st) {
  char buf[64];
  if (g == NULL || true_fn == NULL || false_fn == NULL || out == NULL ||
      n_out < 1 || n_inputs < 0 || (n_inputs > 0 && inputs == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "cond: needs a graph, both "
                         "branch functions and at least one output (got "
                         "n_out=%d, n_inputs=%d)", n_out, n_inputs);
  }
  TF_TRY(check_outputs_in(g, "cond", "pred", &pred, 1, st));
  TF_TRY(check_outputs_in(g, "cond", "input", inputs, n_inputs, st));
  const tf_shape *ps = tf_node_output_shape(pred.node, pred.index);
  tf_dtype pt = tf_node_output_type(pred.node, pred.index);
  if (pt != TF_BOOL || (ps->rank != TF_UNKNOWN_RANK && ps->rank != 0)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "cond: pred '%s:%d' must "
                         "be a scalar bool, got %s%s", tf_node_name(pred.node),
                         pred.index, tf_dtype_name(pt),
                         tf_shape_str(ps, buf, sizeof buf));
  }
  return TF_OK;
}

tf_code tf_cond(tf_graph *g, const char *name, tf_output pred,
                const tf_output *inputs, int n_inputs, tf_branch_fn true_fn,
                tf_branch_fn false_fn, void *arg, tf_output *out, int n_out,
                tf_status *st) {
  TF_TRY(check_cond_args(g, pred, inputs, n_inputs, true_fn, false_fn, out,
                         n_out, st));
  tf__gmark m = tf__graph_mark(g);
  tf_graph_push_scope(g, name ? name : "cond");
  cond_build c = {.g = g, .st = st, .pred = pred, .n_in = n_inputs,
                  .n_out = n_out};
  scope_label(g, c.label, sizeof c.label);
  size_t nin = (size_t)n_inputs + 1, nout = (size_t)n_out;
  tf_output *mem = tf__xcalloc(2 * nin + 3 * nout, sizeof *mem);
  c.br[0] = (branch){.what = "false", .port = 0, .in = mem, .out = mem + 2 * nin};
  c.br[1] = (branch){.what = "true", .port = 1, .in = mem + nin,
                     .out = mem + 2 * nin + nout};
  tf_output *res = mem + 2 * nin + 2 * nout;
  tf_code rc = build_cond(&c, inputs, true_fn, false_fn, arg, res);
  end_build(g, &m, rc);
  if (rc == TF_OK) {
    memcpy(out, res, nout * sizeof *out);
  }
  free(mem);
  return rc;
}

/* ---- while loop --------------------------------------------------------- */

typedef struct loop_build {
  tf_graph *g;
  tf_status *st;
  char label[256];
  char frame[512];
  int n, n_inv, par, start;
  tf_node **merge;     /* n */
  tf_node **sw;        /* n */
  tf_output *vals;     /* n: Merge outputs, what cond_fn reads */
  tf_output *inv;      /* n_inv: the invariants' Enters */
  tf_output *body_in;  /* n: Identity(Switch:1), what body_fn reads */
  tf_output *next;     /* n: body_fn's results */
  tf_output *exits;    /* n */
} loop_build;

/* Enter, Merge(enter, enter) for each variable; Enter for invariants. */
static tf_code loop_entries(loop_build *L, const tf_output *vars,
                            const tf_output *invariants) {
  for (int i = 0; i < L->n; i++) {
    tf_node *e = add_enter(L->g, vars[i], L->frame, false, L->par, L->st);
    if (e == NULL) {
      return L->st->code;
    }
    tf_output eo = {e, 0};
    L->merge[i] = add_merge(L->g, eo, eo, L->st);
    if (L->merge[i] == NULL) {
      return L->st->code;
    }
    L->vals[i] = (tf_output){L->merge[i], 0};
  }
  for (int j = 0; j < L->n_inv; j++) {
    tf_node *e = add_enter(L->g, invariants[j], L->frame, true, L->par, L->st);
    if (e == NULL) {
      return L->st->code;
    }
    L->inv[j] = (tf_output){e, 0};
  }
  return TF_OK;
}

/* cond_fn -> LoopCond -> a Switch per variable, Identity of its true side. */
static tf_code loop_condition(loop_build *L, tf_loop_cond_fn cond_fn,
                              void *arg) {
  tf_graph *g = L->g;
  char buf[64];
  int from = g->n_nodes;
  tf_output pred = {NULL, 0};
  tf_code rc = cond_fn(g, L->vals, L->n, L->inv, L->n_inv, &pred, arg, L->st);
  if (rc != TF_OK) {
    return fn_failed(rc, L->st, L->label, "condition");
  }
  TF_TRY(check_outputs_in(g, L->label, "the condition's result", &pred, 1, L->st));
  tie_sources(g, from, g->n_nodes, L->merge[0]);
  const tf_shape *ps = tf_node_output_shape(pred.node, pred.index);
  tf_dtype pt = tf_node_output_type(pred.node, pred.index);
  if (pt != TF_BOOL || (ps->rank != TF_UNKNOWN_RANK && ps->rank != 0)) {
    return tf_status_set(L->st, TF_INVALID_ARGUMENT, "%s: the loop condition "
                         "'%s:%d' must be a scalar bool, got %s%s", L->label,
                         tf_node_name(pred.node), pred.index, tf_dtype_name(pt),
                         tf_shape_str(ps, buf, sizeof buf));
  }
  if (pred.node->id < L->start) {
    return tf_status_set(L->st, TF_INVALID_ARGUMENT, "%s: the loop condition "
                         "'%s' was built outside the loop; compute it from the "
                         "loop variables", L->label, tf_node_name(pred.node));
  }
  tf_node *lc = add_unary(g, "LoopCond", NULL, pred, L->st);
  if (lc == NULL) {
    return L->st->code;
  }
  for (int i = 0; i < L->n; i++) {
    L->sw[i] = add_switch(g, L->vals[i], (tf_output){lc, 0}, L->st);
    if (L->sw[i] == NULL) {
      return L->st->code;
    }
    tf_node *id = add_unary(g, "Identity", NULL, (tf_output){L->sw[i], 1}, L->st);
    if (id == NULL) {
      return L->st->code;
    }
    L->body_in[i] = (tf_output){id, 0};
  }
  return TF_OK;
}

/* Body result i must keep the variable's dtype, a compatible shape, and
 * come from inside the loop. */
static tf_code check_next(loop_build *L, int i) {
  char a[64], b[64];
  tf_output v = L->vals[i], x = L->next[i];
  tf_dtype vt = tf_node_output_type(v.node, v.index);
  tf_dtype xt = tf_node_output_type(x.node, x.index);
  if (vt != xt) {
    return tf_status_set(L->st, TF_INVALID_ARGUMENT, "%s: loop variable %d "
                         "has dtype %s before the loop but %s after one "
                         "iteration", L->label, i, tf_dtype_name(vt),
                         tf_dtype_name(xt));
  }
  const tf_shape *vs = tf_node_output_shape(v.node, v.index);
  const tf_shape *xs = tf_node_output_shape(x.node, x.index);
  tf_shape merged;
  if (tf_shape_merge(vs, xs, &merged, NULL) != TF_OK) {
    return tf_status_set(L->st, TF_INVALID_ARGUMENT, "%s: loop variable %d "
                         "has shape %s before the loop but %s after one "
                         "iteration", L->label, i, tf_shape_str(vs, a, sizeof a),
                         tf_shape_str(xs, b, sizeof b));
  }
  if (x.node->id < L->start) {
    return tf_status_set(L->st, TF_INVALID_ARGUMENT, "%s: the body's result "
                         "%d '%s' was built outside the loop; pass outer "
                         "tensors as invariants", L->label, i,
                         tf_node_name(x.node));
  }
  return TF_OK;
}

/* body_fn, then NextIteration per result closing the cycle, and Exits. */
static tf_code loop_body(loop_build *L, tf_loop_body_fn body_fn, void *arg) {
  tf_graph *g = L->g;
  int from = g->n_nodes;
  for (int i = 0; i < L->n; i++) {
    L->next[i] = (tf_output){NULL, 0};
  }
  tf_code rc = body_fn(g, L->body_in, L->n, L->inv, L->n_inv, L->next, arg,
                       L->st);
  if (rc != TF_OK) {
    return fn_failed(rc, L->st, L->label, "body");
  }
  TF_TRY(check_outputs_in(g, L->label, "body result", L->next, L->n, L->st));
  tie_sources(g, from, g->n_nodes, L->body_in[0].node);
  for (int i = 0; i < L->n; i++) {
    TF_TRY(check_next(L, i));
  }
  for (int i = 0; i < L->n; i++) {
    tf_node *ni = add_unary(g, "NextIteration", NULL, L->next[i], L->st);
    if (ni == NULL) {
      return L->st->code;
    }
    TF_TRY(tf__node_set_back_edge(L->merge[i], 1, (tf_output){ni, 0}, L->st));
  }
  for (int i = 0; i < L->n; i++) {
    tf_node *ex = add_unary(g, "Exit", NULL, (tf_output){L->sw[i], 0}, L->st);
    if (ex == NULL) {
      return L->st->code;
    }
    L->exits[i] = (tf_output){ex, 0};
  }
  return TF_OK;
}

static tf_code check_loop_args(tf_graph *g, const tf_output *vars, int n_vars,
                               const tf_output *invariants, int n_invariants,
                               tf_loop_cond_fn cond_fn, tf_loop_body_fn body_fn,
                               int parallel_iterations, tf_output *out,
                               tf_status *st) {
  if (g == NULL || cond_fn == NULL || body_fn == NULL || out == NULL ||
      vars == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "while_loop: needs a graph, "
                         "loop variables, cond and body functions and an "
                         "output array");
  }
  if (n_vars < 1 || n_invariants < 0 || (n_invariants > 0 && invariants == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "while_loop: needs at least "
                         "one loop variable (got n_vars=%d, n_invariants=%d)",
                         n_vars, n_invariants);
  }
  if (parallel_iterations < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "while_loop: "
                         "parallel_iterations must be >= 1 (or 0 for the "
                         "default 10), got %d", parallel_iterations);
  }
  TF_TRY(check_outputs_in(g, "while_loop", "loop variable", vars, n_vars, st));
  return check_outputs_in(g, "while_loop", "invariant", invariants,
                          n_invariants, st);
}

tf_code tf_while_loop(tf_graph *g, const char *name, const tf_output *vars,
                      int n_vars, const tf_output *invariants,
                      int n_invariants, tf_loop_cond_fn cond_fn,
                      tf_loop_body_fn body_fn, void *arg,
                      int parallel_iterations, tf_output *out, tf_status *st) {
  TF_TRY(check_loop_args(g, vars, n_vars, invariants, n_invariants, cond_fn,
                         body_fn, parallel_iterations, out, st));
  tf__gmark m = tf__graph_mark(g);
  tf_graph_push_scope(g, name ? name : "while");
  loop_build L = {.g = g, .st = st, .n = n_vars, .n_inv = n_invariants,
                  .par = parallel_iterations ? parallel_iterations : 10,
                  .start = m.n_nodes};
  scope_label(g, L.label, sizeof L.label);
  tf_graph_unique_name(g, "while_context", L.frame, sizeof L.frame);
  size_t n = (size_t)n_vars;
  L.merge = tf__xcalloc(2 * n, sizeof *L.merge);
  L.sw = L.merge + n;
  L.vals = tf__xcalloc(4 * n + (size_t)n_invariants + 1, sizeof *L.vals);
  L.body_in = L.vals + n;
  L.next = L.vals + 2 * n;
  L.exits = L.vals + 3 * n;
  L.inv = L.vals + 4 * n;
  tf_code rc = loop_entries(&L, vars, invariants);
  if (rc == TF_OK) {
    rc = loop_condition(&L, cond_fn, arg);
  }
  if (rc == TF_OK) {
    rc = loop_body(&L, body_fn, arg);
  }
  end_build(g, &m, rc);
  if (rc == TF_OK) {
    memcpy(out, L.exits, n * sizeof *out);
  }
  free(L.merge);
  free(L.vals);
  return rc;
}
