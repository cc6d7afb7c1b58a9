/* partition.c: splits a placed graph into one graph per device
 * (partition.h). Every edge between devices becomes a _Send in the source
 * device's graph and one _Recv per (tensor, destination device); control
 * edges travel as a dummy Const's value. Nodes are emitted in a
 * topological order so each partition imports with topological ids, as
 * the executor needs. A while loop split over devices gets a control loop
 * on each device an edge of its frame touches (the "control loops"
 * section below; EuroSys 2018 section 4, TensorFlow's AddControlLoop). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"
#include "lib/runtime/partition.h"
#include "lib/runtime/placement_impl.h"

/* One value that crosses to device dev: output port of src (-1: a control
 * edge), received there by the _Recv named recv (made on first use). */
typedef struct xfer {
  int port;
  int dev;
  char *recv;
} xfer;

/* A node definition for a partition, with what it owns. */
typedef struct pnode {
  tf_node_def def;
  bool from_graph;   /* def came from tf_node_to_def */
  char *owned[4];    /* name and strings of a new node */
  const char *in[2]; /* a new node's inputs */
  tf_attr_kv kv[8];  /* a new node's attrs */
  tf_tensor *value;  /* the dummy Const's tensor */
} pnode;

typedef struct pbuild {
  pnode **nodes;
  int n, cap;
} pbuild;

/* The control loop of one (frame, device): Enter of a dummy value, Merge,
 * Switch on the frame's predicate, Identity of its true side, NextIteration
 * and Exit. merge is borrowed from the partition's node. */
typedef struct cloop {
  bool wanted;
  const char *merge;
} cloop;

typedef struct parter {
  const tf_graph *g;
  const int *assign;  /* the effective device of each node (see fix_devices) */
  const tf_place_device *devs;
  const uint64_t *inc;
  int nd;
  int *order;
  tf__frames frames;  /* out_frame: where each node's outputs live (0: root) */
  xfer **xs;          /* per source node */
  int *n_xs;
  tf__strmap names;   /* generated names */
  const tf_node **cond; /* per frame: its LoopCond (NULL: none) */
  cloop *cl;          /* per frame * nd + device */
  int *dev;           /* owns assign: the caller's, after fix_devices */
  pbuild *parts;      /* per device */
  tf_status *st;
} parter;

/* ---- edges that cross devices ------------------------------------------------------ */

static xfer *find_xfer(parter *p, int src, int port, int dev) {
  for (int i = 0; i < p->n_xs[src]; i++) {
    xfer *x = &p->xs[src][i];
    if (x->port == port && x->dev == dev) {
      return x;
    }
  }
  return NULL;
}

static void edge_desc(const tf_node *src, int port, const tf_node *dst, char *buf, size_t n) {
  if (port < 0) {
    snprintf(buf, n, "control edge '%s' -> '%s'", src->name, dst->name);
  } else {
    snprintf(buf, n, "edge '%s:%d' -> '%s'", src->name, port, dst->name);
  }
}

static void push_xfer(parter *p, const tf_node *src, int port, int dev) {
  if (find_xfer(p, src->id, port, dev) == NULL) {
    p->xs[src->id] = tf__xrealloc(p->xs[src->id], (size_t)(p->n_xs[src->id] + 1) * sizeof(xfer));
    p->xs[src->id][p->n_xs[src->id]++] = (xfer){.port = port, .dev = dev};
  }
}

/* Frame f (and every frame around it) needs a control loop on device d;
 * a device other than the LoopCond's gets the predicate sent to it every
 * iteration, and the LoopCond's device gets a control loop too, so that
 * every device of the frame runs the same iterations. */
static tf_code want_loop(parter *p, int f, int d) {
  for (; f > 0; f = p->frames.frames[f].parent) {
    cloop *c = &p->cl[f * p->nd + d];
    if (c->wanted) {
      return TF_OK;
    }
    const tf_node *lc = p->cond[f];
    if (lc == NULL) {
      return tf_status_set(p->st, TF_INVALID_ARGUMENT, "while loop frame '%s' is split "
                           "over devices (%s among them) but has no LoopCond to drive "
                           "their control loops", p->frames.frames[f].name,
                           p->devs[d].name);
    }
    c->wanted = true;
    int cd = p->assign[lc->id];
    if (cd != d) {
      push_xfer(p, lc, 0, d);
      tf_code rc = want_loop(p, f, cd);
      if (rc != TF_OK) {
        return rc;
      }
    }
  }
  return TF_OK;
}

static bool is_op(const tf_node *v, const char *op) { return strcmp(tf_node_op(v), op) == 0; }

static bool is_var_enter(const tf_node *v) {
  bool c = false;
  tf_status st;
  return is_op(v, "Enter") && (tf_node_attr_get_bool(v, "is_constant", &c, &st) != TF_OK || !c);
}

/* An edge of frame f (described by e) from device sd to dd: both devices
 * get a control loop for f. A variable Enter or a NextIteration runs in one
 * iteration but feeds the next, so it cannot send (fix_devices moves those
 * that feed a Merge to the Merge's device). */
static tf_code loop_edge(parter *p, const tf_node *src, const char *e, int sd, int dd, int f) {
  if (is_var_enter(src) || is_op(src, "NextIteration")) {
    return tf_status_set(p->st, TF_UNIMPLEMENTED, "cannot partition %s: it crosses from %s "
                         "to %s out of op %s of while loop frame '%s', which runs in one "
                         "iteration and feeds the next; only a Merge may consume an Enter "
                         "or NextIteration across devices (place its consumers with it)",
                         e, p->devs[sd].name, p->devs[dd].name, tf_node_op(src),
                         p->frames.frames[f].name);
  }
  tf_code rc = want_loop(p, f, sd);
  return rc != TF_OK ? rc : want_loop(p, f, dd);
}

/* Records that output port (-1: control) of src must reach dst's device. */
static tf_code add_xfer(parter *p, const tf_node *src, int port, const tf_node *dst,
                        bool is_ref) {
  int sd = p->assign[src->id], dd = p->assign[dst->id];
  if (sd == dd) {
    return TF_OK;
  }
  char e[600];
  edge_desc(src, port, dst, e, sizeof e);
  if (is_ref) {
    return tf_status_set(p->st, TF_INVALID_ARGUMENT, "cannot partition ref %s: it "
                         "crosses from %s to %s (a ref edge must stay on one device)",
                         e, p->devs[sd].name, p->devs[dd].name);
  }
  int f = p->frames.out_frame[src->id];
  if (f != 0) {
    tf_code rc = loop_edge(p, src, e, sd, dd, f);
    if (rc != TF_OK) {
      return rc;
    }
  }
  push_xfer(p, src, port, dd);
  return TF_OK;
}

static tf_code collect_xfers(parter *p) {
  for (int k = 0; k < p->g->n_nodes; k++) {
    const tf_node *v = p->g->nodes[p->order[k]];
    for (int i = 0; i < v->n_inputs; i++) {
      tf_code rc = add_xfer(p, v->inputs[i].node, v->inputs[i].index, v,
                            tf__node_input_is_ref(v, i));
      if (rc != TF_OK) {
        return rc;
      }
    }
    for (int i = 0; i < v->n_control; i++) {
      tf_code rc = add_xfer(p, v->control[i], -1, v, false);
      if (rc != TF_OK) {
        return rc;
      }
    }
  }
  return TF_OK;
}

/* ---- new nodes ----------------------------------------------------------------------- */

/* A name not in g and not generated before: base, base_1, ... (malloc'd). */
static char *fresh_name(parter *p, const char *base) {
  char *s = tf__xstrdup(base);
  for (int k = 1; tf_graph_find(p->g, s) != NULL || tf__strmap_get(&p->names, s, NULL); k++) {
    free(s);
    s = tf__xasprintf("%s_%d", base, k);
  }
  tf__strmap_put(&p->names, s, (void *)1);
  return s;
}

static void push(pbuild *b, pnode *pn) {
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 32;
    b->nodes = tf__xrealloc(b->nodes, (size_t)b->cap * sizeof *b->nodes);
  }
  b->nodes[b->n++] = pn;
}

static char *tensor_name(const tf_node *src, int port) {
  return port < 0 ? tf__xasprintf("ctrl_%s", src->name)
                  : tf__xasprintf("edge_%s_%d", src->name, port);
}

/* The attrs both _Send and _Recv carry (kv[1..5]); kv[0] is the type. */
static void key_attrs(parter *p, pnode *pn, const tf_node *src, int port, int dst_dev) {
  int sd = p->assign[src->id];
  pn->owned[1] = tensor_name(src, port);
  pn->kv[1] = (tf_attr_kv){"client_terminated", tf_attr_bool(false)};
  pn->kv[2] = (tf_attr_kv){"recv_device", tf_attr_string(p->devs[dst_dev].name)};
  pn->kv[3] = (tf_attr_kv){"send_device", tf_attr_string(p->devs[sd].name)};
  pn->kv[4] = (tf_attr_kv){"send_device_incarnation",
                           tf_attr_int(p->inc != NULL ? (int64_t)p->inc[sd] : 0)};
  pn->kv[5] = (tf_attr_kv){"tensor_name", tf_attr_string(pn->owned[1])};
}

static pnode *new_node(const char *name, const char *op, const char *device) {
  pnode *pn = tf__xcalloc(1, sizeof *pn);
  pn->owned[0] = (char *)name;
  pn->def = (tf_node_def){.name = name, .op = op, .device = device, .inputs = pn->in,
                          .attrs = pn->kv};
  return pn;
}

/* The _Recv on dst_dev for x (an output of src). */
static void emit_recv(parter *p, const tf_node *src, xfer *x) {
  char base[400];
  if (x->port < 0) {
    snprintf(base, sizeof base, "%s/_recv_ctrl_d%d", src->name, x->dev);
  } else {
    snprintf(base, sizeof base, "%s/_recv_%d_d%d", src->name, x->port, x->dev);
  }
  char *name = fresh_name(p, base);
  pnode *pn = new_node(name, "_Recv", p->devs[x->dev].name);
  tf_dtype dt = x->port < 0 ? TF_FLOAT32 : src->out_types[x->port];
  pn->kv[0] = (tf_attr_kv){"tensor_type", tf_attr_type_v(dt)};
  key_attrs(p, pn, src, x->port, x->dev);
  pn->def.n_attrs = 6;
  int f = p->frames.out_frame[src->id];
  if (f != 0) { /* re-armed every iteration by its control loop */
    pn->owned[3] = tf__xasprintf("^%s", p->cl[f * p->nd + x->dev].merge);
    pn->in[0] = pn->owned[3];
    pn->def.n_inputs = 1;
  }
  push(&p->parts[x->dev], pn);
  if (x->port >= 0) {
    pn->owned[0] = NULL; /* x owns the name */
    x->recv = name;
    return;
  }
  /* A control edge: consumers depend on an Identity of the dummy value,
   * which is dead when the value is (as TF's graph_partition does), so a
   * control edge out of an untaken branch stays dead on this device. */
  char idb[440];
  snprintf(idb, sizeof idb, "%s/id", name);
  x->recv = fresh_name(p, idb);
  pnode *id = new_node(x->recv, "Identity", p->devs[x->dev].name);
  id->owned[0] = NULL;
  id->owned[2] = tf__xstrdup(name);
  id->in[0] = id->owned[2];
  id->def.n_inputs = 1;
  id->kv[0] = (tf_attr_kv){"T", tf_attr_type_v(TF_FLOAT32)};
  id->def.n_attrs = 1;
  push(&p->parts[x->dev], id);
}

/* A _Send of input (a node name in the source partition) for x. */
static void emit_send(parter *p, const tf_node *src, const xfer *x, const char *input,
                      tf_dtype dt) {
  char base[400];
  if (x->port < 0) {
    snprintf(base, sizeof base, "%s/_send_ctrl_d%d", src->name, x->dev);
  } else {
    snprintf(base, sizeof base, "%s/_send_%d_d%d", src->name, x->port, x->dev);
  }
  int sd = p->assign[src->id];
  pnode *pn = new_node(fresh_name(p, base), "_Send", p->devs[sd].name);
  pn->owned[2] = tf__xstrdup(input);
  pn->in[0] = pn->owned[2];
  pn->def.n_inputs = 1;
  pn->kv[0] = (tf_attr_kv){"T", tf_attr_type_v(dt)};
  key_attrs(p, pn, src, x->port, x->dev);
  pn->def.n_attrs = 6;
  push(&p->parts[sd], pn);
}

/* The sends for every value of src that leaves its device; control edges
 * go through one dummy Const with src as its control input. */
static void emit_sends(parter *p, const tf_node *src) {
  const char *ctrl = NULL;
  for (int i = 0; i < p->n_xs[src->id]; i++) {
    const xfer *x = &p->xs[src->id][i];
    if (x->port >= 0) {
      char in[400];
      snprintf(in, sizeof in, "%s:%d", src->name, x->port);
      emit_send(p, src, x, in, src->out_types[x->port]);
      continue;
    }
    if (ctrl == NULL) {
      char base[400];
      snprintf(base, sizeof base, "%s/_ctrl_const", src->name);
      pnode *pn = new_node(fresh_name(p, base), "Const", p->devs[p->assign[src->id]].name);
      pn->owned[2] = tf__xasprintf("^%s", src->name);
      pn->in[0] = pn->owned[2];
      pn->def.n_inputs = 1;
      pn->value = tf_tensor_scalar_f32(0.0f);
      pn->kv[0] = (tf_attr_kv){"dtype", tf_attr_type_v(TF_FLOAT32)};
      pn->kv[1] = (tf_attr_kv){"value", tf_attr_tensor(pn->value)};
      pn->def.n_attrs = 2;
      push(&p->parts[p->assign[src->id]], pn);
      ctrl = pn->def.name;
    }
    emit_send(p, src, x, ctrl, TF_FLOAT32);
  }
}

/* ---- control loops ------------------------------------------------------------------ */

/* Moves every variable Enter and NextIteration that feeds a Merge to the
 * Merge's device: they run in one iteration and feed another, which a
 * _Send/_Recv pair (keyed by one iteration) cannot carry. */
static void fix_devices(parter *p, int *dev) {
  for (int k = 0; k < p->g->n_nodes; k++) {
    const tf_node *v = p->g->nodes[p->order[k]];
    if (is_op(v, "LoopCond")) {
      p->cond[p->frames.node_frame[v->id]] = v;
    }
    if (!is_op(v, "Merge")) {
      continue;
    }
    for (int i = 0; i < v->n_inputs; i++) {
      const tf_node *s = v->inputs[i].node;
      if (is_var_enter(s) || is_op(s, "NextIteration")) {
        dev[s->id] = dev[v->id];
      }
    }
  }
}

/* A node of a control loop: op on device d with inputs in[0..n_in). */
static pnode *cl_node(parter *p, const char *frame, int d, const char *what, const char *op,
                      const char *in0, const char *in1) {
  char base[400];
  snprintf(base, sizeof base, "%s/_cloop_d%d/%s", frame, d, what);
  pnode *pn = new_node(fresh_name(p, base), op, p->devs[d].name);
  pn->in[0] = in0;
  pn->in[1] = in1;
  pn->def.n_inputs = (in0 != NULL) + (in1 != NULL);
  pn->kv[0] = (tf_attr_kv){"T", tf_attr_type_v(TF_FLOAT32)};
  pn->def.n_attrs = 1;
  push(&p->parts[d], pn);
  return pn;
}

/* The start of frame f's control loop on d: a dummy Const in the root
 * frame, or the enclosing frame's control-loop Merge, so that the control
 * loop starts once per iteration of the enclosing frame, as the frame's
 * own Enters do. How many iterations it runs is up to the predicate alone:
 * a dead one (a loop in an untaken branch, or in the last iteration of an
 * enclosing loop, runs one dead iteration) stops it like a false one. */
static const char *cl_start(parter *p, int f, int d) {
  const tf__frame *fr = &p->frames.frames[f];
  if (fr->parent > 0) {
    return p->cl[fr->parent * p->nd + d].merge;
  }
  pnode *c = cl_node(p, fr->name, d, "start", "Const", NULL, NULL);
  c->value = tf_tensor_scalar_f32(0.0f);
  c->kv[0] = (tf_attr_kv){"dtype", tf_attr_type_v(TF_FLOAT32)};
  c->kv[1] = (tf_attr_kv){"value", tf_attr_tensor(c->value)};
  c->def.n_attrs = 2;
  return c->def.name;
}

/* Frame f's control loop on device d (TF's AddControlLoop): Enter ->
 * Merge -> Switch on the predicate (the LoopCond, or its _Recv) -> Identity
 * -> NextIteration -> Merge, and Exit on the false side. The Merge fires
 * once per iteration; every _Recv of the frame on d hangs off it. */
static void emit_cloop(parter *p, int f, int d) {
  const tf__frame *fr = &p->frames.frames[f];
  cloop *c = &p->cl[f * p->nd + d];
  int64_t par = 10;
  tf_status st;
  if (fr->enter != NULL && tf_node_attr_get_int(fr->enter, "parallel_iterations", &par,
                                                &st) != TF_OK) {
    par = 10;
  }
  pnode *en = cl_node(p, fr->name, d, "enter", "Enter", cl_start(p, f, d), NULL);
  en->kv[1] = (tf_attr_kv){"frame_name", tf_attr_string(fr->name)};
  en->kv[2] = (tf_attr_kv){"is_constant", tf_attr_bool(false)};
  en->kv[3] = (tf_attr_kv){"parallel_iterations", tf_attr_int(par)};
  en->def.n_attrs = 4;
  char base[400];
  snprintf(base, sizeof base, "%s/_cloop_d%d/next", fr->name, d);
  char *next = fresh_name(p, base);
  pnode *m = cl_node(p, fr->name, d, "merge", "Merge", en->def.name, next);
  m->kv[1] = (tf_attr_kv){"N", tf_attr_int(2)};
  m->def.n_attrs = 2;
  c->merge = m->def.name;
  const tf_node *lc = p->cond[f];
  const char *pred = lc->name;
  if (p->assign[lc->id] != d) {
    xfer *x = find_xfer(p, lc->id, 0, d);
    if (x->recv == NULL) {
      emit_recv(p, lc, x);
    }
    pred = x->recv;
  }
  pnode *sw = cl_node(p, fr->name, d, "switch", "Switch", m->def.name, pred);
  sw->owned[2] = tf__xasprintf("%s:1", sw->def.name);
  pnode *body = cl_node(p, fr->name, d, "body", "Identity", sw->owned[2], NULL);
  pnode *nx = new_node(next, "NextIteration", p->devs[d].name);
  nx->in[0] = body->def.name;
  nx->def.n_inputs = 1;
  nx->kv[0] = (tf_attr_kv){"T", tf_attr_type_v(TF_FLOAT32)};
  nx->def.n_attrs = 1;
  push(&p->parts[d], nx);
  cl_node(p, fr->name, d, "exit", "Exit", sw->def.name, NULL);
}

static void emit_cloops(parter *p) {
  for (int f = 1; f < p->frames.n_frames; f++) {
    for (int d = 0; d < p->nd; d++) {
      if (p->cl[f * p->nd + d].wanted) {
        emit_cloop(p, f, d);
      }
    }
  }
}

/* ---- the device graphs ----------------------------------------------------------- */

/* v's def for its partition: cross-device inputs replaced by _Recv outputs
 * (emitted on first use). */
static void emit_node(parter *p, const tf_node *v) {
  int d = p->assign[v->id];
  pnode *pn = tf__xcalloc(1, sizeof *pn);
  pn->from_graph = true;
  tf_node_to_def(v, &pn->def);
  pn->def.device = p->devs[d].name;
  char **in = (char **)pn->def.inputs;
  for (int i = 0; i < v->n_inputs + v->n_control; i++) {
    bool ctl = i >= v->n_inputs;
    const tf_node *src = ctl ? v->control[i - v->n_inputs] : v->inputs[i].node;
    if (p->assign[src->id] == d) {
      continue;
    }
    xfer *x = find_xfer(p, src->id, ctl ? -1 : v->inputs[i].index, d);
    if (x->recv == NULL) {
      emit_recv(p, src, x);
    }
    free(in[i]);
    in[i] = ctl ? tf__xasprintf("^%s", x->recv) : tf__xstrdup(x->recv);
  }
  push(&p->parts[d], pn);
  emit_sends(p, v);
}

static void pnode_free(pnode *pn) {
  if (pn->from_graph) {
    tf_node_def_fini(&pn->def);
  }
  for (int i = 0; i < 4; i++) {
    free(pn->owned[i]);
  }
  if (pn->value != NULL) {
    tf_tensor_unref(pn->value);
  }
  free(pn);
}

typedef struct numbered {
  int64_t index;
  int pos;
} numbered;

static int cmp_numbered(const void *a, const void *b) {
  const numbered *x = a, *y = b;
  if (x->index != y->index) {
    return x->index < y->index ? -1 : 1;
  }
  return x->pos - y->pos;
}

/* Renumbers the partition's nodes of op (_Arg or _Retval) 0.. in order of
 * their original index; *map gets local -> original. */
static int renumber(pbuild *b, const char *op, int **map) {
  numbered *v = tf__xcalloc((size_t)b->n + 1, sizeof *v);
  int n = 0;
  for (int i = 0; i < b->n; i++) {
    const tf_node_def *d = &b->nodes[i]->def;
    if (!b->nodes[i]->from_graph || strcmp(d->op, op) != 0) {
      continue;
    }
    for (int a = 0; a < d->n_attrs; a++) {
      if (strcmp(d->attrs[a].name, "index") == 0) {
        v[n++] = (numbered){d->attrs[a].value.u.i, i};
      }
    }
  }
  qsort(v, (size_t)n, sizeof *v, cmp_numbered);
  *map = tf__xcalloc((size_t)n + 1, sizeof **map);
  for (int k = 0; k < n; k++) {
    (*map)[k] = (int)v[k].index;
    tf_node_def *d = &b->nodes[v[k].pos]->def;
    tf_attr_kv *kv = (tf_attr_kv *)d->attrs;
    for (int a = 0; a < d->n_attrs; a++) {
      if (strcmp(kv[a].name, "index") == 0) {
        kv[a].value = tf_attr_int(k);
      }
    }
  }
  free(v);
  return n;
}

static tf_code build_partition(parter *p, int d, tf_partition *out) {
  pbuild *b = &p->parts[d];
  *out = (tf_partition){.device = d, .g = tf__graph_new_internal()};
  out->n_args = renumber(b, "_Arg", &out->arg_feed);
  out->n_rets = renumber(b, "_Retval", &out->ret_fetch);
  tf_node_def *defs = tf__xcalloc((size_t)b->n + 1, sizeof *defs);
  for (int i = 0; i < b->n; i++) {
    defs[i] = b->nodes[i]->def;
  }
  tf_code rc = tf_graph_import(out->g, defs, b->n, p->st);
  free(defs);
  if (rc != TF_OK) {
    tf_status_prefix(p->st, "partition for %s", p->devs[d].name);
  }
  return rc;
}

static void parter_fini(parter *p) {
  for (int i = 0; p->xs != NULL && i < p->g->n_nodes; i++) {
    for (int k = 0; k < p->n_xs[i]; k++) {
      free(p->xs[i][k].recv);
    }
    free(p->xs[i]);
  }
  for (int d = 0; p->parts != NULL && d < p->nd; d++) {
    for (int i = 0; i < p->parts[d].n; i++) {
      pnode_free(p->parts[d].nodes[i]);
    }
    free(p->parts[d].nodes);
  }
  free(p->xs);
  free(p->n_xs);
  free(p->parts);
  free(p->order);
  free(p->cond);
  free(p->cl);
  free(p->dev);
  tf__frames_fini(&p->frames);
  tf__strmap_fini(&p->names);
}

static tf_code check_args(const tf_graph *g, const int *assign, const tf_place_device *devs,
                          int n_devs, tf_partition **parts, int *n_parts, tf_status *st) {
  if (g == NULL || assign == NULL || devs == NULL || parts == NULL || n_parts == NULL ||
      n_devs <= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_partition_graph: NULL argument "
                         "or no devices");
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (assign[i] < 0 || assign[i] >= n_devs) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' is assigned to device "
                           "%d, but there are %d devices", g->nodes[i]->name,
                           assign[i], n_devs);
    }
  }
  return TF_OK;
}

/* The partitions of the devices that got nodes, in device order. */
static tf_code build_all(parter *p, tf_partition **parts, int *n_parts) {
  int n = 0;
  for (int d = 0; d < p->nd; d++) {
    n += p->parts[d].n > 0;
  }
  tf_partition *ps = tf__xcalloc((size_t)n + 1, sizeof *ps);
  tf_code rc = TF_OK;
  int k = 0;
  for (int d = 0; d < p->nd && rc == TF_OK; d++) {
    if (p->parts[d].n > 0) {
      rc = build_partition(p, d, &ps[k++]);
    }
  }
  if (rc != TF_OK) {
    tf_partitions_free(ps, k);
    return rc;
  }
  *parts = ps;
  *n_parts = n;
  return TF_OK;
}

tf_code tf_partition_graph(const tf_graph *g, const int *assign,
                           const tf_place_device *devs,
                           const uint64_t *incarnations, int n_devs,
                           tf_partition **parts, int *n_parts, tf_status *st) {
  tf_code rc = check_args(g, assign, devs, n_devs, parts, n_parts, st);
  if (rc != TF_OK) {
    return rc;
  }
  *parts = NULL;
  *n_parts = 0;
  size_t n = (size_t)g->n_nodes;
  parter p = {.g = g, .assign = assign, .devs = devs, .inc = incarnations, .nd = n_devs,
              .order = tf__xcalloc(n + 1, sizeof(int)),
              .xs = tf__xcalloc(n + 1, sizeof(xfer *)),
              .n_xs = tf__xcalloc(n + 1, sizeof(int)),
              .parts = tf__xcalloc((size_t)n_devs, sizeof(pbuild)), .st = st};
  tf__strmap_init(&p.names);
  rc = tf__graph_topo_order(g, p.order, st);
  if (rc == TF_OK) {
    rc = tf__graph_frames(g, &p.frames, st);
  }
  if (rc == TF_OK) {
    p.dev = tf__xcalloc(n + 1, sizeof(int));
    memcpy(p.dev, assign, n * sizeof(int));
    p.assign = p.dev;
    p.cond = tf__xcalloc((size_t)p.frames.n_frames, sizeof *p.cond);
    p.cl = tf__xcalloc((size_t)p.frames.n_frames * (size_t)n_devs, sizeof *p.cl);
    fix_devices(&p, p.dev);
    rc = collect_xfers(&p);
  }
  if (rc == TF_OK) {
    emit_cloops(&p);
  }
  for (size_t k = 0; k < n && rc == TF_OK; k++) {
    emit_node(&p, g->nodes[p.order[k]]);
  }
  if (rc == TF_OK) {
    rc = build_all(&p, parts, n_parts);
  }
  parter_fini(&p);
  return rc;
}

void tf_partitions_free(tf_partition *parts, int n) {
  if (parts == NULL) {
    return;
  }
  for (int i = 0; i < n; i++) {
    tf_graph_free(parts[i].g);
    free(parts[i].arg_feed);
    free(parts[i].ret_fetch);
  }
  free(parts);
}
