/* gradients_cf.c: tf_gradients through control flow (TensorFlow's
 * control_flow_grad.py, in C). Before the walk, each node gets its frame
 * (Enter opens the frame named by frame_name, Exit returns to the parent)
 * and its cond level (a Switch output is live only on its side of the
 * predicate, a Merge closes the level). The walk then goes over one frame
 * at a time in reverse id order: ordinary nodes by their registered
 * gradient functions, a cond's Merge by a Switch of its gradient on the
 * same predicate, a cond's Switch by a Merge of its two sides' gradients
 * (a zero that is live only on the untaken side where one is missing), so
 * the gradient of a cond is a cond on the same predicate. A loop's Exit
 * hands the whole loop to gradients_loop.c. While a gradient loop's body
 * is built, the graph's input hook maps every forward value that a
 * gradient function reads to the value the loop reads instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/gradients_cf.h"
#include "lib/core/base/util.h"

/* ---- node facts ---------------------------------------------------------- */

static bool is_op(const tf_node *n, const char *op) {
  return strcmp(n->op->name, op) == 0;
}

/* A loop's Merge has a back edge (from NextIteration). */
static bool is_loop_merge(const tf_node *n) {
  if (!is_op(n, "Merge")) {
    return false;
  }
  for (int k = 0; k < n->n_inputs; k++) {
    if (n->inputs[k].node->op->flags & TF_OP_BACK_EDGE) {
      return true;
    }
  }
  return false;
}

/* A loop's Switch takes its predicate from LoopCond. */
static bool is_loop_switch(const tf_node *n) {
  return is_op(n, "Switch") && n->n_inputs == 2 &&
         is_op(n->inputs[1].node, "LoopCond");
}

static bool is_cond_switch(const tf_node *n) {
  return is_op(n, "Switch") && !is_loop_switch(n);
}

static bool is_cond_merge(const tf_node *n) {
  return is_op(n, "Merge") && !is_loop_merge(n);
}

/* ---- frames and cond levels ---------------------------------------------- */

static void ensure_ids(tf__cf_state *cf, int n) {
  if (n <= cf->n_ids) {
    return;
  }
  int cap = cf->n_ids ? cf->n_ids : 64;
  while (cap < n) {
    cap *= 2;
  }
  cf->frame = tf__xrealloc(cf->frame, (size_t)cap * sizeof *cf->frame);
  cf->cond = tf__xrealloc(cf->cond, (size_t)cap * sizeof *cf->cond);
  for (int i = cf->n_ids; i < cap; i++) {
    cf->frame[i] = -1;
    cf->cond[i] = 0;
  }
  cf->n_ids = cap;
}

void tf__cf_set(tf__gwalk *w, const tf_node *n, int f, int c) {
  ensure_ids(w->cf, n->id + 1);
  w->cf->frame[n->id] = f;
  w->cf->cond[n->id] = c;
}

int tf__cf_frame_of(const tf__gwalk *w, const tf_node *n) {
  return n->id < w->cf->n_ids ? w->cf->frame[n->id] : -1;
}

static int cond_child(tf__cf_state *cf, int parent, tf_output pred, int side) {
  for (int i = 1; i < cf->n_conds; i++) {
    const cf_cond *c = &cf->conds[i];
    if (c->parent == parent && c->pred.node == pred.node &&
        c->pred.index == pred.index && c->side == side) {
      return i;
    }
  }
  if (cf->n_conds == cf->cap_conds) {
    cf->cap_conds *= 2;
    cf->conds = tf__xrealloc(cf->conds, (size_t)cf->cap_conds * sizeof *cf->conds);
  }
  cf->conds[cf->n_conds] = (cf_cond){parent, pred, side};
  return cf->n_conds++;
}

int tf__cf_cond_of(tf__gwalk *w, tf_output t) {
  tf__cf_state *cf = w->cf;
  int c = t.node->id < cf->n_ids ? cf->cond[t.node->id] : 0;
  if (is_cond_switch(t.node)) {
    c = cond_child(cf, c, t.node->inputs[1], t.index);
  }
  return c;
}

static int cond_depth(const tf__cf_state *cf, int c) {
  int d = 0;
  for (; c != 0; c = cf->conds[c].parent) {
    d++;
  }
  return d;
}

static int frame_named(tf__cf_state *cf, const char *name, int parent,
                       int cond, int par) {
  for (int i = 1; i < cf->n_frames; i++) {
    if (strcmp(cf->frames[i].name, name) == 0) {
      return i;
    }
  }
  if (cf->n_frames == cf->cap_frames) {
    cf->cap_frames *= 2;
    cf->frames = tf__xrealloc(cf->frames,
                              (size_t)cf->cap_frames * sizeof *cf->frames);
  }
  cf->frames[cf->n_frames] = (cf_frame){.name = name, .parent = parent,
                                        .cond = cond, .par = par};
  return cf->n_frames++;
}

/* The frame and cond level of node n from its inputs (ids before n's). */
static void place(tf__gwalk *w, const tf_node *n) {
  tf__cf_state *cf = w->cf;
  int f = 0, c = 0, depth = -1;
  bool loop_merge = is_loop_merge(n);
  for (int k = 0; k < n->n_inputs && (!loop_merge || k == 0); k++) {
    const tf_node *s = n->inputs[k].node;
    if (s->id >= n->id) {
      continue; /* a back edge */
    }
    int sc = tf__cf_cond_of(w, n->inputs[k]), d = cond_depth(cf, sc);
    f = depth < 0 ? cf->frame[s->id] : f;
    if (d > depth) {
      depth = d;
      c = sc;
    }
  }
  for (int k = 0; k < n->n_control; k++) {
    const tf_node *s = n->control[k];
    int d = cond_depth(cf, cf->cond[s->id]);
    f = depth < 0 ? cf->frame[s->id] : f;
    if (d > depth) {
      depth = d;
      c = cf->cond[s->id];
    }
  }
  if (is_cond_merge(n) && c != 0) {
    c = cf->conds[c].parent;
  }
  cf->frame[n->id] = f < 0 ? 0 : f;
  cf->cond[n->id] = c;
}

static void place_all(tf__gwalk *w) {
  tf__cf_state *cf = w->cf;
  for (int id = 0; id < w->n0; id++) {
    const tf_node *n = w->g->nodes[id];
    if (is_op(n, "Enter")) {
      tf_output in = n->inputs[0];
      const tf_attr_value *fn = tf_node_attr(n, "frame_name");
      const tf_attr_value *pi = tf_node_attr(n, "parallel_iterations");
      cf->frame[id] = frame_named(cf, fn ? fn->u.s : "", cf->frame[in.node->id],
                                  tf__cf_cond_of(w, in), pi ? (int)pi->u.i : 10);
      cf->cond[id] = 0;
    } else if (is_op(n, "Exit")) {
      const cf_frame *fr = &cf->frames[cf->frame[n->inputs[0].node->id]];
      cf->frame[id] = fr->parent;
      cf->cond[id] = fr->cond;
    } else {
      place(w, n);
    }
  }
}

/* ---- the input hook ---------------------------------------------------- */

static tf_output input_hook(void *arg, tf_output in) {
  tf__gwalk *w = arg;
  if (w->cf->cur == NULL || w->cf->hook_off) {
    return in;
  }
  return tf__cf_map(w, w->cf->cur, in);
}

tf_code tf__cf_init(tf__gwalk *w) {
  tf__cf_state *cf = tf__xcalloc(1, sizeof *cf);
  w->cf = cf;
  cf->cap_frames = cf->cap_conds = 8;
  cf->frames = tf__xcalloc((size_t)cf->cap_frames, sizeof *cf->frames);
  cf->conds = tf__xcalloc((size_t)cf->cap_conds, sizeof *cf->conds);
  cf->frames[0] = (cf_frame){.name = "", .par = 10, .found = true};
  cf->n_frames = cf->n_conds = 1;
  ensure_ids(cf, w->n0 + 1);
  cf->structural = tf__xcalloc((size_t)w->n0 + 1, sizeof *cf->structural);
  place_all(w);
  w->g->input_hook = input_hook;
  w->g->input_hook_arg = w;
  return TF_OK;
}

void tf__cf_fini(tf__gwalk *w) {
  tf__cf_state *cf = w->cf;
  if (cf == NULL) {
    return;
  }
  w->g->input_hook = NULL;
  w->g->input_hook_arg = NULL;
  for (int i = 0; i < cf->n_frames; i++) {
    tf__cf_frame_free(&cf->frames[i]);
  }
  free(cf->frames);
  free(cf->conds);
  free(cf->frame);
  free(cf->cond);
  free(cf->structural);
  free(cf);
  w->cf = NULL;
}

tf_code tf__cf_check_outside(tf__gwalk *w, const tf_output *v, int n,
                             const char *what) {
  for (int i = 0; i < n; i++) {
    int f = tf__cf_frame_of(w, v[i].node);
    if (f > 0) {
      return tf_status_set(w->st, TF_UNIMPLEMENTED, "tf_gradients: %s[%d] "
                           "('%s') is inside the while loop frame '%s'; only "
                           "values outside loops can be differentiated or "
                           "differentiated against", what, i, v[i].node->name,
                           w->cf->frames[f].name);
    }
  }
  return TF_OK;
}

tf_node *tf__cf_node(tf__gwalk *w, const char *op, const tf_output *in,
                     int n, bool list, tf_node *ctl, const tf_attr_kv *a,
                     int na) {
  if (w->st->code != TF_OK) {
    return NULL;
  }
  tf_node_builder *b = tf_node_begin(w->g, op, NULL);
  if (list) {
    tf_node_add_input_list(b, in, n);
  } else {
    for (int i = 0; i < n; i++) {
      tf_node_add_input(b, in[i]);
    }
  }
  if (ctl != NULL) {
    tf_node_add_control_input(b, ctl);
  }
  for (int i = 0; i < na; i++) {
    tf_node_set_attr(b, a[i].name, a[i].value);
  }
  return tf_node_finish(b, w->st);
}

/* ---- cond ------------------------------------------------------------------ */

/* Merge(false, true) -> Switch(dy, pred): each input gets the side of the
 * gradient that is live when its branch ran. */
static tf_code merge_grad(tf__gwalk *w, const tf_node *n) {
  tf_grad g;
  TF_TRY(tf__gw_aggregate(w, (tf_output){(tf_node *)n, 0}, false, &g));
  if (g.values.node == NULL) {
    return TF_OK;
  }
  int c0 = tf__cf_cond_of(w, n->inputs[0]);
  if (n->n_inputs != 2 || c0 == 0) {
    return tf_status_set(w->st, TF_UNIMPLEMENTED, "gradients through control "
                         "flow: Merge '%s' is not the output of a cond (only "
                         "a cond's two-input Merge is supported)", n->name);
  }
  tf_output pred = w->cf->conds[c0].pred;
  tf_output in[2] = {g.values, pred};
  tf_node *sw = tf__cf_node(w, "Switch", in, 2, false, NULL, NULL, 0);
  if (sw == NULL) {
    return w->st->code;
  }
  for (int k = 0; k < 2; k++) {
    int ck = tf__cf_cond_of(w, n->inputs[k]);
    const cf_cond *lv = &w->cf->conds[ck];
    if (ck == 0 || lv->pred.node != pred.node || lv->pred.index != pred.index) {
      return tf_status_set(w->st, TF_UNIMPLEMENTED, "gradients through "
                           "control flow: the inputs of Merge '%s' are not "
                           "the two branches of one cond", n->name);
    }
    if (tf__gw_differentiable(n->inputs[k].node, n->inputs[k].index)) {
      tf__gw_add_partial(w, n->inputs[k], (tf_grad){.values = {sw, lv->side}});
    }
  }
  return TF_OK;
}

/* Switch -> Merge(grad of the false side, grad of the true side); a side
 * without one gets zeros of the input that are live only on that side. */
static tf_code switch_grad(tf__gwalk *w, const tf_node *n) {
  tf_grad g[2];
  for (int s = 0; s < 2; s++) {
    TF_TRY(tf__gw_aggregate(w, (tf_output){(tf_node *)n, s}, false, &g[s]));
  }
  if (g[0].values.node == NULL && g[1].values.node == NULL) {
    return TF_OK;
  }
  tf_output side[2] = {g[0].values, g[1].values};
  for (int s = 0; s < 2; s++) {
    if (side[s].node != NULL) {
      continue;
    }
    tf_node *z = tf__cf_node(w, "ZerosLike", &n->inputs[0], 1, false, NULL,
                             NULL, 0);
    tf_output in[2] = {{z, 0}, n->inputs[1]};
    tf_node *sw = z ? tf__cf_node(w, "Switch", in, 2, false, NULL, NULL, 0)
                    : NULL;
    if (sw == NULL) {
      return w->st->code;
    }
    side[s] = (tf_output){sw, s};
  }
  tf_node *m = tf__cf_node(w, "Merge", side, 2, true, NULL, NULL, 0);
  if (m == NULL) {
    return w->st->code;
  }
  tf__gw_add_partial(w, n->inputs[0], (tf_grad){.values = {m, 0}});
  return TF_OK;
}

/* ---- the walk ---------------------------------------------------------- */

static tf_code walk_node(tf__gwalk *w, const tf_node *n) {
  tf__cf_state *cf = w->cf;
  if (is_op(n, "Exit")) {
    int child = cf->frame[n->inputs[0].node->id];
    return cf->frames[child].handled ? TF_OK : tf__cf_loop_grad(w, child, n);
  }
  if (is_cond_merge(n)) {
    return merge_grad(w, n);
  }
  if (is_cond_switch(n)) {
    return switch_grad(w, n);
  }
  if (n->op->flags & TF_OP_CONTROL_FLOW) {
    return tf_status_set(w->st, TF_UNIMPLEMENTED, "gradients through control "
                         "flow: node '%s' (op '%s') is not part of a loop or "
                         "cond built like tf_while_loop or tf_cond",
                         n->name, n->op->name);
  }
  return tf__gw_visit(w, n);
}

tf_code tf__cf_walk_frame(tf__gwalk *w, int f) {
  for (int id = w->n0 - 1; id >= 0; id--) {
    if (w->cf->frame[id] != f || !w->fwd[id] || !w->bwd[id] ||
        w->cf->structural[id]) {
      continue;
    }
    TF_TRY(walk_node(w, w->g->nodes[id]));
  }
  return TF_OK;
}

tf_code tf__cf_walk(tf__gwalk *w) {
  return tf__cf_walk_frame(w, 0);
}
