/* prune.c: from a graph and a (feeds, fetches, targets) signature to the
 * pruned graph a step runs (whitepaper §4.2, partial execution).
 *
 * Each fed edge becomes an _Arg node that replaces it for every consumer;
 * each fetch gets a _Retval node. Starting from the fetches and targets,
 * a backward walk over data and control inputs, stopping at fed edges,
 * keeps only the nodes they need, so unneeded stateful nodes never run.
 * The kept nodes are copied into a new internal graph by name
 * (tf_graph_import), which checks them again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/prune.h"

#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

typedef struct prune_ctx {
  const tf_graph *g;
  const tf__sig *sig;
  tf__pruned *out;
  tf_output *fed;     /* per feed: the edge */
  tf_output *fetched; /* per fetch: the edge */
  bool *has_fed;      /* per node id: some output is fed */
  bool *needed;       /* per node id */
  char **arg_names;   /* per feed */
} prune_ctx;

static int fed_index(const prune_ctx *p, const tf_node *n, int port) {
  if (!p->has_fed[n->id]) return -1;
  for (int i = 0; i < p->sig->n_feeds; i++) {
    if (p->fed[i].node == n && p->fed[i].index == port) return i;
  }
  return -1;
}

/* The edge a feed or fetch names in g. */
static tf_code resolve(const tf_graph *g, const char *what, const tf__sig_name *e,
                       tf_output *o, tf_status *st) {
  tf_node *n = tf_graph_find(g, e->node);
  if (n == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "%s '%s': no node named '%s' in the "
                         "graph", what, e->canon, e->node);
  }
  if (e->port >= n->n_outputs) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s': node '%s' (%s) has "
                         "%d output%s; '%s' asks for output %d", what, e->canon,
                         e->node, n->op->name, n->n_outputs,
                         n->n_outputs == 1 ? "" : "s", e->canon, e->port);
  }
  *o = (tf_output){n, e->port};
  return TF_OK;
}

/* Marks every node the roots need, not looking past fed edges. */
static void mark_needed(prune_ctx *p, tf_node **roots, int n_roots) {
  int n = p->g->n_nodes, top = 0;
  tf_node **stack = tf__xmalloc((size_t)(n ? n : 1) * sizeof *stack);
  for (int i = 0; i < n_roots; i++) {
    if (!p->needed[roots[i]->id]) {
      p->needed[roots[i]->id] = true;
      stack[top++] = roots[i];
    }
  }
  while (top > 0) {
    tf_node *nd = stack[--top];
    for (int i = 0; i < nd->n_inputs + nd->n_control; i++) {
      tf_node *src;
      if (i < nd->n_inputs) {
        src = nd->inputs[i].node;
        if (fed_index(p, src, nd->inputs[i].index) >= 0) continue;
      } else {
        src = nd->control[i - nd->n_inputs];
      }
      if (!p->needed[src->id]) {
        p->needed[src->id] = true;
        stack[top++] = src;
      }
    }
  }
  free(stack);
}

/* A node name not used in g: base, else base_1, base_2, ... */
static char *fresh_name(const tf_graph *g, const char *base) {
  char *name = tf__xstrdup(base);
  for (int k = 1; tf_graph_find(g, name) != NULL; k++) {
    free(name);
    name = tf__xasprintf("%s_%d", base, k);
  }
  return name;
}

/* Def for an _Arg or _Retval: attrs T, index (and shape for _Arg). */
static void special_def(tf_node_def *d, tf_attr_kv *kv, const char *name,
                        const char *op, tf_dtype dt, int index,
                        const tf_shape *shape, const char **input) {
  int na = 0;
  kv[na++] = (tf_attr_kv){"T", tf_attr_type_v(dt)};
  kv[na++] = (tf_attr_kv){"index", tf_attr_int(index)};
  if (shape != NULL) kv[na++] = (tf_attr_kv){"shape", tf_attr_shape(*shape)};
  *d = (tf_node_def){.name = name, .op = op, .n_inputs = input ? 1 : 0,
                     .inputs = input, .n_attrs = na, .attrs = kv};
}

static char *edge_name(const tf_output *o) {
  return o->index == 0 ? tf__xstrdup(o->node->name)
                       : tf__xasprintf("%s:%d", o->node->name, o->index);
}

/* Def of kept node n, its fed inputs rewritten to their _Arg. */
static void kept_def(const prune_ctx *p, const tf_node *n, tf_node_def *d) {
  tf_node_to_def(n, d);
  char **in = (char **)d->inputs;
  for (int j = 0; j < n->n_inputs; j++) {
    int f = fed_index(p, n->inputs[j].node, n->inputs[j].index);
    if (f >= 0) {
      free(in[j]);
      in[j] = tf__xstrdup(p->arg_names[f]);
    }
  }
}

/* Copies the kept nodes, rewriting fed inputs to their _Arg, and adds the
 * _Arg and _Retval nodes; imports it all into a new internal graph. */
static tf_code build_graph(prune_ctx *p, tf_status *st) {
  const tf_graph *g = p->g;
  int nf = p->sig->n_feeds, no = p->sig->n_fetches, n_kept = 0;
  for (int i = 0; i < g->n_nodes; i++) n_kept += p->needed[i];
  int total = nf + n_kept + no;
  tf_node_def *defs = tf__xcalloc((size_t)(total ? total : 1), sizeof *defs);
  tf_attr_kv(*kv)[3] = tf__xcalloc((size_t)(nf + no + 1), sizeof *kv);
  const char **ret_in = tf__xcalloc((size_t)(no + 1), sizeof *ret_in);
  char **ret_names = tf__xcalloc((size_t)(no + 1), sizeof *ret_names);
  int d = 0;
  for (int i = 0; i < nf; i++) {
    special_def(&defs[d++], kv[i], p->arg_names[i], "_Arg", p->out->feed_types[i],
                i, &p->out->feed_shapes[i], NULL);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (p->needed[i]) kept_def(p, g->nodes[i], &defs[d++]);
  }
  for (int i = 0; i < no; i++) {
    const tf_output *o = &p->fetched[i];
    int f = fed_index(p, o->node, o->index);
    ret_in[i] = f >= 0 ? tf__xstrdup(p->arg_names[f]) : edge_name(o);
    char base[32];
    snprintf(base, sizeof base, "_retval_%d", i);
    ret_names[i] = fresh_name(g, base);
    special_def(&defs[d++], kv[nf + i], ret_names[i], "_Retval",
                tf_node_output_type(o->node, o->index), i, NULL, &ret_in[i]);
  }
  tf_graph *ng = tf__graph_new_internal();
  tf_code rc = tf_graph_import(ng, defs, total, st);
  for (int i = nf; i < nf + n_kept; i++) tf_node_def_fini(&defs[i]);
  for (int i = 0; i < no; i++) {
    free((char *)ret_in[i]);
    free(ret_names[i]);
  }
  free(ret_in);
  free(ret_names);
  free(kv);
  free(defs);
  if (rc != TF_OK) {
    tf_graph_free(ng);
    return rc;
  }
  p->out->g = ng;
  return TF_OK;
}

/* Resolves feeds, fetches and targets; roots are what the walk starts
 * from (fetches that are not fed, and targets). */
static tf_code resolve_all(prune_ctx *p, tf_node **roots, int *n_roots,
                           tf_status *st) {
  const tf__sig *sig = p->sig;
  for (int i = 0; i < sig->n_feeds; i++) {
    TF_TRY(resolve(p->g, "feed", &sig->feeds[i], &p->fed[i], st));
    if (tf__node_output_is_ref(p->fed[i].node, p->fed[i].index)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s': it is a "
                           "reference (a variable or queue), which cannot be "
                           "fed; feed a tensor read from it", sig->feeds[i].canon);
    }
    p->has_fed[p->fed[i].node->id] = true;
    p->out->feed_types[i] = tf_node_output_type(p->fed[i].node, p->fed[i].index);
    p->out->feed_shapes[i] = *tf_node_output_shape(p->fed[i].node, p->fed[i].index);
  }
  *n_roots = 0;
  for (int i = 0; i < sig->n_fetches; i++) {
    TF_TRY(resolve(p->g, "fetch", &sig->fetches[i], &p->fetched[i], st));
    if (fed_index(p, p->fetched[i].node, p->fetched[i].index) < 0) {
      roots[(*n_roots)++] = p->fetched[i].node;
    }
  }
  for (int i = 0; i < sig->n_targets; i++) {
    tf_node *n = tf_graph_find(p->g, sig->targets[i].node);
    if (n == NULL) {
      return tf_status_set(st, TF_NOT_FOUND, "target '%s': no node named '%s' "
                           "in the graph", sig->targets[i].canon,
                           sig->targets[i].node);
    }
    roots[(*n_roots)++] = n;
  }
  return TF_OK;
}

tf_code tf__prune(const tf_graph *g, const tf__sig *sig, tf__pruned **out,
                  tf_status *st) {
  *out = NULL;
  int nf = sig->n_feeds, no = sig->n_fetches, nt = sig->n_targets;
  tf__pruned *pr = tf__xcalloc(1, sizeof *pr);
  pr->n_feeds = nf;
  pr->n_fetches = no;
  pr->feed_types = tf__xcalloc((size_t)nf + 1, sizeof *pr->feed_types);
  pr->feed_shapes = tf__xcalloc((size_t)nf + 1, sizeof *pr->feed_shapes);
  int nn = g->n_nodes ? g->n_nodes : 1;
  prune_ctx p = {.g = g, .sig = sig, .out = pr};
  p.fed = tf__xcalloc((size_t)nf + 1, sizeof *p.fed);
  p.fetched = tf__xcalloc((size_t)no + 1, sizeof *p.fetched);
  p.has_fed = tf__xcalloc((size_t)nn, sizeof *p.has_fed);
  p.needed = tf__xcalloc((size_t)nn, sizeof *p.needed);
  p.arg_names = tf__xcalloc((size_t)nf + 1, sizeof *p.arg_names);
  tf_node **roots = tf__xcalloc((size_t)(no + nt + 1), sizeof *roots);
  int n_roots = 0;
  tf_code rc = resolve_all(&p, roots, &n_roots, st);
  if (rc == TF_OK) {
    for (int i = 0; i < nf; i++) {
      char base[32];
      snprintf(base, sizeof base, "_arg_%d", i);
      p.arg_names[i] = fresh_name(g, base);
    }
    mark_needed(&p, roots, n_roots);
    rc = build_graph(&p, st);
  }
  for (int i = 0; i < nf; i++) free(p.arg_names[i]);
  free(p.arg_names);
  free(p.fed);
  free(p.fetched);
  free(p.has_fed);
  free(p.needed);
  free(roots);
  if (rc != TF_OK) {
    tf__pruned_free(pr);
    return rc;
  }
  *out = pr;
  return TF_OK;
}

void tf__pruned_free(tf__pruned *p) {
  if (p == NULL) return;
  tf_graph_free(p->g);
  free(p->feed_types);
  free(p->feed_shapes);
  free(p);
}
