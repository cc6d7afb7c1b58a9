/* gradients_loop.c: the gradient of a while loop, as TensorFlow builds it
 * (control_flow_state.py). The forward loop gets a counter of its
 * iterations; the gradient is a tf_while_loop that runs that many
 * iterations backwards, carrying the gradients of the loop variables (the
 * Exits' gradients enter it; what leaves it is the gradient of the Enters'
 * inputs) and one accumulator per loop invariant (acc += its gradient in
 * each iteration). Its body is the backward walk of the forward body.
 * Every forward value that walk reads is saved on a stack: StackV2 outside
 * the loop, StackPushV2 in the forward body, StackPopV2 in the gradient
 * body, so values come back in reverse order. Iterations may overlap
 * (parallel_iterations), so the pushes of one iteration wait for the
 * counter of that iteration and the counter of the next waits for them;
 * the pops are ordered the same way by the gradient loop's counter. A
 * value inside a cond branch of the body is pushed through a Merge with a
 * zero that is live on the other side, so every iteration pushes and pops
 * exactly once, and its pop goes through Switches on the same predicates
 * (popped too), so it is dead in the gradient loop when it was dead in
 * the forward one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/gradients_cf.h"
#include "lib/core/base/util.h"
#include "tf/control_flow.h"

void tf__cf_frame_free(cf_frame *f) {
  free(f->vars);
  free(f->invs);
  free(f->pushes);
}

static void push_node(tf_node ***v, int *n, int *cap, tf_node *x) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    *v = tf__xrealloc(*v, (size_t)*cap * sizeof **v);
  }
  (*v)[(*n)++] = x;
}

static bool is_op(const tf_node *n, const char *op) {
  return strcmp(n->op->name, op) == 0;
}

/* ---- the forward loop's structure ---------------------------------------- */

static tf_code bad_loop(tf__gwalk *w, const cf_frame *F, const char *what) {
  return tf_status_set(w->st, TF_UNIMPLEMENTED, "gradient of loop frame "
                       "'%s': %s (build loops with tf_while_loop)", F->name,
                       what);
}

/* The node of frame f (or, for an Exit, leaving it) of op op whose input
 * 0 is src (for a Switch: with its predicate from LoopCond), or NULL. */
static tf_node *consumer(tf__gwalk *w, int f, const char *op, tf_output src) {
  bool sw = strcmp(op, "Switch") == 0;
  for (int id = src.node->id + 1; id < w->n0; id++) {
    tf_node *n = w->g->nodes[id];
    if (n->n_inputs > 0 && n->inputs[0].node == src.node &&
        n->inputs[0].index == src.index && is_op(n, op) &&
        (!sw || (n->n_inputs == 2 && is_op(n->inputs[1].node, "LoopCond"))) &&
        (w->cf->frame[id] == f || is_op(n, "Exit"))) {
      return n;
    }
  }
  return NULL;
}

static tf_code find_var(tf__gwalk *w, int f, cf_var *v) {
  cf_frame *F = &w->cf->frames[f];
  v->merge = consumer(w, f, "Merge", (tf_output){v->enter, 0});
  v->sw = v->merge ? consumer(w, f, "Switch", (tf_output){v->merge, 0}) : NULL;
  v->exit = v->sw ? consumer(w, f, "Exit", (tf_output){v->sw, 0}) : NULL;
  if (v->exit == NULL || v->merge->n_inputs != 2 ||
      !is_op(v->merge->inputs[1].node, "NextIteration") ||
      !is_op(v->sw->inputs[1].node, "LoopCond")) {
    return bad_loop(w, F, "a loop variable is not Enter -> Merge -> Switch "
                    "on LoopCond -> Exit with a NextIteration back edge");
  }
  tf_node *ni = v->merge->inputs[1].node;
  v->next = ni->inputs[0];
  if (F->loop_cond != NULL && F->loop_cond != v->sw->inputs[1].node) {
    return bad_loop(w, F, "its Switches use different LoopConds");
  }
  F->loop_cond = v->sw->inputs[1].node;
  bool *s = w->cf->structural;
  s[v->enter->id] = s[v->merge->id] = s[v->sw->id] = s[ni->id] = true;
  s[F->loop_cond->id] = true;
  return TF_OK;
}

static tf_code find_loop(tf__gwalk *w, int f) {
  cf_frame *F = &w->cf->frames[f];
  int cap_v = 0, cap_i = 0;
  for (int id = 0; id < w->n0; id++) {
    tf_node *n = w->g->nodes[id];
    if (w->cf->frame[id] != f || !is_op(n, "Enter")) {
      continue;
    }
    const tf_attr_value *c = tf_node_attr(n, "is_constant");
    if (c != NULL && c->u.b) {
      push_node(&F->invs, &F->n_invs, &cap_i, n);
      w->cf->structural[id] = true;
      continue;
    }
    if (F->n_vars == cap_v) {
      cap_v = cap_v ? 2 * cap_v : 4;
      F->vars = tf__xrealloc(F->vars, (size_t)cap_v * sizeof *F->vars);
    }
    F->vars[F->n_vars] = (cf_var){.enter = n};
    TF_TRY(find_var(w, f, &F->vars[F->n_vars++]));
  }
  if (F->n_vars == 0) {
    return bad_loop(w, F, "it has no loop variable");
  }
  F->found = true;
  return TF_OK;
}

/* Every consumer of the loop's Exits must come after trigger, the last
 * Exit, so their gradients are complete when the loop is handled. */
static tf_code check_exits(tf__gwalk *w, const cf_frame *F, const tf_node *trig) {
  for (int id = 0; id < trig->id; id++) {
    const tf_node *n = w->g->nodes[id];
    for (int k = 0; k < n->n_inputs && w->bwd[id] && w->fwd[id]; k++) {
      for (int i = 0; i < F->n_vars; i++) {
        if (n->inputs[k].node == F->vars[i].exit) {
          return bad_loop(w, F, "a loop output is used before the loop's "
                          "last Exit");
        }
      }
    }
  }
  return TF_OK;
}

/* ---- forward additions (the input hook is off while they are built) ----- */

static tf_node *fwd_node(tf__gwalk *w, int f, int c, const char *op,
                         const tf_output *in, int n, tf_node *ctl,
                         const tf_attr_kv *a, int na) {
  tf_node *x = tf__cf_node(w, op, in, n, strcmp(op, "Merge") == 0, ctl, a, na);
  if (x != NULL) {
    tf__cf_set(w, x, f, c);
  }
  return x;
}

static tf_node *const_node(tf__gwalk *w, int f, int c, tf_tensor *t,
                           tf_node *ctl) {
  tf_attr_kv a[2] = {{"value", tf_attr_tensor(t)},
                     {"dtype", tf_attr_type_v(t->dtype)}};
  tf_node *x = fwd_node(w, f, c, "Const", NULL, 0, ctl, a, 2);
  tf_tensor_unref(t);
  return x;
}

static tf_node *enter_node(tf__gwalk *w, int f, int c, tf_output x,
                           const char *frame, bool is_const, int par) {
  tf_attr_kv a[3] = {{"frame_name", tf_attr_string(frame)},
                     {"is_constant", tf_attr_bool(is_const)},
                     {"parallel_iterations", tf_attr_int(par)}};
  return fwd_node(w, f, c, "Enter", &x, 1, NULL, a, 3);
}

/* The forward counter: 0 entering (derived from a loop input, so it is
 * dead exactly when the loop is), Merge, Switch on the loop's LoopCond,
 * Identity in the body and an Exit. Its increment is added by
 * finish_counter once the pushes it must wait for exist. */
static tf_code add_counter(tf__gwalk *w, int f) {
  cf_frame *F = &w->cf->frames[f];
  int p = F->parent;
  tf_output t = F->vars[0].enter->inputs[0];
  tf_node *size = fwd_node(w, p, F->cond, "Size", &t, 1, NULL, NULL, 0);
  F->zero = size ? fwd_node(w, p, F->cond, "ZerosLike", &(tf_output){size, 0},
                            1, NULL, NULL, 0) : NULL;
  tf_node *e = F->zero ? enter_node(w, f, 0, (tf_output){F->zero, 0}, F->name,
                                    false, F->par) : NULL;
  if (e == NULL) {
    return w->st->code;
  }
  tf_output ee[2] = {{e, 0}, {e, 0}};
  F->cnt_merge = fwd_node(w, f, 0, "Merge", ee, 2, NULL, NULL, 0);
  tf_output sin[2] = {{F->cnt_merge, 0}, {F->loop_cond, 0}};
  tf_node *sw = F->cnt_merge ? fwd_node(w, f, 0, "Switch", sin, 2, NULL, NULL, 0)
                             : NULL;
  F->cnt_body = sw ? fwd_node(w, f, 0, "Identity", &(tf_output){sw, 1}, 1,
                              NULL, NULL, 0) : NULL;
  F->cnt_exit = F->cnt_body ? fwd_node(w, p, F->cond, "Exit",
                                       &(tf_output){sw, 0}, 1, NULL, NULL, 0)
                            : NULL;
  tf_tensor *m1 = tf_tensor_scalar_i32(-1);
  tf_node *ms = F->cnt_exit ? const_node(w, p, F->cond, m1, F->zero) : NULL;
  if (ms == NULL) {
    if (F->cnt_exit == NULL) {
      tf_tensor_unref(m1);
    }
    return w->st->code;
  }
  F->max_size = (tf_output){ms, 0};
  return TF_OK;
}

/* counter + 1 after all of this iteration's pushes, back to the Merge. */
static tf_code finish_counter(tf__gwalk *w, int f) {
  cf_frame *F = &w->cf->frames[f];
  tf_node *one = const_node(w, f, 0, tf_tensor_scalar_i32(1), F->cnt_body);
  tf_output in[2] = {{F->cnt_body, 0}, {one, 0}};
  tf_node *add = one ? fwd_node(w, f, 0, "Add", in, 2, NULL, NULL, 0) : NULL;
  for (int i = 0; add != NULL && i < F->n_pushes; i++) {
    tf__node_add_control(add, F->pushes[i]);
  }
  tf_node *ni = add ? fwd_node(w, f, 0, "NextIteration", &(tf_output){add, 0},
                               1, NULL, NULL, 0) : NULL;
  if (ni == NULL) {
    return w->st->code;
  }
  return tf__node_set_back_edge(F->cnt_merge, 1, (tf_output){ni, 0}, w->st);
}

/* t, or for a value inside cond branches of the body, t merged with a zero
 * that is live on each untaken side, so it is live in every iteration. */
static tf_output live_value(tf__gwalk *w, int f, tf_output t) {
  cf_frame *F = &w->cf->frames[f];
  tf_dtype dt = t.node->out_types[t.index];
  for (int c = tf__cf_cond_of(w, t); c != 0 && w->st->code == TF_OK;
       c = w->cf->conds[c].parent) {
    const cf_cond lv = w->cf->conds[c];
    tf_tensor *z = NULL;
    tf_shape sc = tf_shape_scalar();
    if (tf_tensor_new_zeros(dt, &sc, &z, w->st) != TF_OK) {
      break;
    }
    tf_node *zn = const_node(w, f, 0, z, F->cnt_body);
    tf_output sin[2] = {{zn, 0}, lv.pred};
    tf_node *sw = zn ? fwd_node(w, f, lv.parent, "Switch", sin, 2, NULL, NULL, 0)
                     : NULL;
    tf_output min[2] = {t, {sw, 1 - lv.side}};
    tf_node *m = sw ? fwd_node(w, f, lv.parent, "Merge", min, 2, NULL, NULL, 0)
                    : NULL;
    t = (tf_output){m, 0};
  }
  return t;
}

/* ---- values the gradient loop reads ------------------------------------- */

/* Whether frame a is frame f or one of its ancestors. */
static bool encloses(const tf__cf_state *cf, int a, int f) {
  for (;; f = cf->frames[f].parent) {
    if (f == a) {
      return true;
    }
    if (f == 0) {
      return false;
    }
  }
}

/* v (a pop) behind Switches on the predicates of the cond levels of the
 * forward value it stands for, outermost first: dead in the iterations
 * where that value was, so the gradient body mirrors the forward one. */
static tf_output redead(tf__gwalk *w, cf_ctx *c, tf_output v, int cond) {
  if (cond == 0 || v.node == NULL) {
    return v;
  }
  const cf_cond lv = w->cf->conds[cond];
  v = redead(w, c, v, lv.parent);
  tf_output in[2] = {v, tf__cf_map(w, c, lv.pred)};
  tf_node *sw = v.node ? tf__cf_node(w, "Switch", in, 2, false, NULL, NULL, 0)
                       : NULL;
  return (tf_output){sw, lv.side};
}

/* v (a value of the frame around c's loop) entered into it as a constant. */
static tf_node *bwd_enter(tf__gwalk *w, cf_ctx *c, tf_output v) {
  tf_attr_kv a[3] = {{"frame_name", tf_attr_string(c->bframe)},
                     {"is_constant", tf_attr_bool(true)},
                     {"parallel_iterations", tf_attr_int(c->par)}};
  return v.node ? tf__cf_node(w, "Enter", &v, 1, false, NULL, a, 3) : NULL;
}

/* Saves forward value t of c's loop on a new stack; returns the pop in
 * c's body (behind redead). */
static tf_output stack_value(tf__gwalk *w, cf_ctx *c, tf_output t) {
  cf_frame *F = &w->cf->frames[c->f];
  tf_dtype dt = t.node->out_types[t.index];
  tf_attr_kv a[1] = {{"elem_type", tf_attr_type_v(dt)}};
  tf_node *h = fwd_node(w, F->parent, F->cond, "StackV2", &F->max_size, 1,
                        NULL, a, 1);
  tf_node *he = h ? enter_node(w, c->f, 0, (tf_output){h, 0}, F->name, true,
                               F->par) : NULL;
  tf_output v = he ? live_value(w, c->f, t) : (tf_output){0};
  tf_output pin[2] = {{he, 0}, v};
  tf_node *push = v.node ? fwd_node(w, c->f, 0, "StackPushV2", pin, 2,
                                    F->cnt_body, NULL, 0) : NULL;
  if (push == NULL) {
    return (tf_output){0};
  }
  push_node(&F->pushes, &F->n_pushes, &F->cap_pushes, push);
  tf_output hb = tf__cf_map(w, c->parent, (tf_output){h, 0});
  tf_node *hbe = bwd_enter(w, c, hb);
  tf_node *pop = hbe ? tf__cf_node(w, "StackPopV2", &(tf_output){hbe, 0}, 1,
                                   false, c->cnt, a, 1) : NULL;
  if (pop == NULL) {
    return (tf_output){0};
  }
  pop->out_shapes[0] = t.node->out_shapes[t.index];
  push_node(&c->pops, &c->n_pops, &c->cap_pops, pop);
  return redead(w, c, (tf_output){pop, 0}, tf__cf_cond_of(w, t));
}

/* t, a value of an enclosing frame, entered into c's loop. */
static tf_output enter_value(tf__gwalk *w, cf_ctx *c, tf_output t) {
  return (tf_output){bwd_enter(w, c, tf__cf_map(w, c->parent, t)), 0};
}

static tf_output map_new(tf__gwalk *w, cf_ctx *c, tf_output t, int fr) {
  if (fr != c->f) {
    return enter_value(w, c, t);
  }
  const tf_attr_value *k = is_op(t.node, "Enter")
                               ? tf_node_attr(t.node, "is_constant") : NULL;
  if (k != NULL && k->u.b) {
    return enter_value(w, c, t.node->inputs[0]);
  }
  return stack_value(w, c, t);
}

tf_output tf__cf_map(tf__gwalk *w, cf_ctx *c, tf_output t) {
  if (c == NULL || w->st->code != TF_OK) {
    return t;
  }
  int fr = tf__cf_frame_of(w, t.node);
  if (fr < 0 || !encloses(w->cf, fr, c->f)) {
    return t;
  }
  for (int i = 0; i < c->n_map; i++) {
    if (c->key[i].node == t.node && c->key[i].index == t.index) {
      return c->val[i];
    }
  }
  bool off = w->cf->hook_off;
  w->cf->hook_off = true;
  tf_output r = map_new(w, c, t, fr);
  w->cf->hook_off = off;
  if (r.node == NULL) {
    return t; /* w->st is set; the builder fails on it */
  }
  if (c->n_map == c->cap_map) {
    c->cap_map = c->cap_map ? 2 * c->cap_map : 16;
    c->key = tf__xrealloc(c->key, (size_t)c->cap_map * sizeof *c->key);
    c->val = tf__xrealloc(c->val, (size_t)c->cap_map * sizeof *c->val);
  }
  c->key[c->n_map] = t;
  c->val[c->n_map++] = r;
  return r;
}

/* ---- the gradient loop ------------------------------------------------- */

typedef struct grad_loop {
  tf__gwalk *w;
  int f;
  int *var_of;  /* per forward variable: its slot in the gradient loop, -1 */
  int *inv_of;  /* per invariant: its accumulator's slot, -1 */
  int n;        /* slots: [0] the counter, then gradients, accumulators */
} grad_loop;

static tf_code grad_cond(tf_graph *g, const tf_output *v, int n,
                         const tf_output *inv, int n_inv, tf_output *pred,
                         void *arg, tf_status *st) {
  grad_loop *G = arg;
  tf_node *zero = const_node(G->w, -1, 0, tf_tensor_scalar_i32(0), NULL);
  tf_output in[2] = {v[0], {zero, 0}};
  tf_node *gt = zero ? tf__cf_node(G->w, "Greater", in, 2, false, NULL, NULL, 0)
                     : NULL;
  *pred = (tf_output){gt, 0};
  return st->code;
}

static tf_output sum2(tf__gwalk *w, tf_output a, tf_output b) {
  tf_output in[2] = {a, b};
  tf_node *s = tf__cf_node(w, "Add", in, 2, false, NULL, NULL, 0);
  return (tf_output){s, 0};
}

/* After the backward walk of the body: each variable's gradient for the
 * previous iteration (what reached its Switch's true side) and each
 * accumulator plus what reached its invariant. */
static tf_code body_results(grad_loop *G, const tf_output *v, tf_output *next) {
  tf__gwalk *w = G->w;
  cf_frame *F = &w->cf->frames[G->f];
  for (int i = 0; i < F->n_vars; i++) {
    int s = G->var_of[i];
    tf_grad g;
    if (s < 0) {
      continue;
    }
    TF_TRY(tf__gw_aggregate(w, (tf_output){F->vars[i].sw, 1}, false, &g));
    next[s] = g.values.node ? g.values
                            : (tf_output){tf__cf_node(w, "ZerosLike", &v[s], 1,
                                                      false, NULL, NULL, 0), 0};
  }
  for (int j = 0; j < F->n_invs; j++) {
    int s = G->inv_of[j];
    tf_grad g;
    if (s < 0) {
      continue;
    }
    TF_TRY(tf__gw_aggregate(w, (tf_output){F->invs[j], 0}, false, &g));
    next[s] = g.values.node ? sum2(w, v[s], g.values) : v[s];
  }
  return w->st->code;
}

/* The name of the frame whose body reads v (Identity <- Switch <- Merge
 * <- Enter). */
static const char *frame_of_body(tf_output v) {
  const tf_node *e = v.node->inputs[0].node->inputs[0].node->inputs[0].node;
  return tf_node_attr(e, "frame_name")->u.s;
}

static tf_code grad_body_run(grad_loop *G, cf_ctx *c, const tf_output *v,
                             tf_output *next) {
  tf__gwalk *w = G->w;
  cf_frame *F = &w->cf->frames[G->f];
  for (int i = 0; i < F->n_vars; i++) {
    tf_output nx = F->vars[i].next;
    if (G->var_of[i] >= 0 && nx.node->id < w->n0) {
      tf__gw_add_partial(w, nx, (tf_grad){.values = v[G->var_of[i]]});
    }
  }
  TF_TRY(tf__cf_walk_frame(w, G->f));
  TF_TRY(body_results(G, v, next));
  tf_node *one = const_node(w, -1, 0, tf_tensor_scalar_i32(1), NULL);
  tf_output in[2] = {v[0], {one, 0}};
  tf_node *sub = one ? tf__cf_node(w, "Sub", in, 2, false, NULL, NULL, 0) : NULL;
  for (int i = 0; sub != NULL && i < c->n_pops; i++) {
    tf__node_add_control(sub, c->pops[i]);
  }
  next[0] = (tf_output){sub, 0};
  return w->st->code;
}

static tf_code grad_body(tf_graph *g, const tf_output *v, int n,
                         const tf_output *inv, int n_inv, tf_output *next,
                         void *arg, tf_status *st) {
  grad_loop *G = arg;
  tf__cf_state *cf = G->w->cf;
  cf_ctx c = {.parent = cf->cur, .f = G->f, .cnt = v[0].node,
              .bframe = (char *)frame_of_body(v[0]),
              .par = cf->frames[G->f].par};
  cf->cur = &c;
  tf_code rc = grad_body_run(G, &c, v, next);
  cf->cur = c.parent;
  free(c.pops);
  free(c.key);
  free(c.val);
  return rc;
}

/* The loop's initial values: the counter's Exit, the gradient of each
 * differentiable variable's Exit (zeros when none), zeros for each
 * differentiable invariant's accumulator. */
static tf_code grad_inputs(grad_loop *G, tf_output *init) {
  tf__gwalk *w = G->w;
  cf_frame *F = &w->cf->frames[G->f];
  init[G->n++] = (tf_output){F->cnt_exit, 0};
  for (int i = 0; i < F->n_vars; i++) {
    tf_node *ex = F->vars[i].exit;
    G->var_of[i] = -1;
    if (!tf__gw_differentiable(ex, 0)) {
      continue;
    }
    tf_grad g;
    TF_TRY(tf__gw_aggregate(w, (tf_output){ex, 0}, false, &g));
    if (g.values.node == NULL) {
      g.values = (tf_output){tf__cf_node(w, "ZerosLike", &(tf_output){ex, 0},
                                         1, false, NULL, NULL, 0), 0};
    }
    G->var_of[i] = G->n;
    init[G->n++] = g.values;
  }
  for (int j = 0; j < F->n_invs; j++) {
    tf_output x = F->invs[j]->inputs[0];
    G->inv_of[j] = -1;
    if (!tf__gw_differentiable(x.node, x.index) || !w->fwd[F->invs[j]->id]) {
      continue;
    }
    G->inv_of[j] = G->n;
    init[G->n++] = (tf_output){tf__cf_node(w, "ZerosLike", &x, 1, false, NULL,
                                           NULL, 0), 0};
  }
  return w->st->code;
}

/* Hands what left the gradient loop to the inputs of the Enters. */
static void grad_outputs(grad_loop *G, const tf_output *out) {
  cf_frame *F = &G->w->cf->frames[G->f];
  for (int i = 0; i < F->n_vars; i++) {
    if (G->var_of[i] >= 0) {
      tf__gw_add_partial(G->w, F->vars[i].enter->inputs[0],
                         (tf_grad){.values = out[G->var_of[i]]});
    }
  }
  for (int j = 0; j < F->n_invs; j++) {
    if (G->inv_of[j] >= 0) {
      tf__gw_add_partial(G->w, F->invs[j]->inputs[0],
                         (tf_grad){.values = out[G->inv_of[j]]});
    }
  }
}

tf_code tf__cf_loop_grad(tf__gwalk *w, int f, const tf_node *trigger) {
  cf_frame *F = &w->cf->frames[f];
  F->handled = true;
  TF_TRY(find_loop(w, f));
  TF_TRY(check_exits(w, F, trigger));
  bool off = w->cf->hook_off;
  w->cf->hook_off = true;
  tf_code rc = add_counter(w, f);
  w->cf->hook_off = off;
  TF_TRY(rc);
  size_t n = (size_t)(1 + F->n_vars + F->n_invs);
  grad_loop G = {.w = w, .f = f};
  G.var_of = tf__xcalloc(n, sizeof *G.var_of);
  G.inv_of = tf__xcalloc(n, sizeof *G.inv_of);
  tf_output *init = tf__xcalloc(2 * n, sizeof *init);
  rc = grad_inputs(&G, init);
  if (rc == TF_OK) {
    char name[300];
    snprintf(name, sizeof name, "%s_grad", F->name);
    rc = tf_while_loop(w->g, name, init, G.n, NULL, 0, grad_cond, grad_body,
                       &G, F->par, init + n, w->st);
  }
  if (rc == TF_OK) {
    w->cf->hook_off = true;
    rc = finish_counter(w, f);
    w->cf->hook_off = off;
  }
  if (rc == TF_OK) {
    grad_outputs(&G, init + n);
  }
  free(G.var_of);
  free(G.inv_of);
  free(init);
  return rc;
}
