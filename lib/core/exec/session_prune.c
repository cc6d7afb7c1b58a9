/* session_prune.c: from a (feeds, fetches, targets) signature to a pruned
 * graph and its executor (whitepaper §4.2, partial execution).
 *
 * Each fed edge becomes an _Arg node that replaces it for every consumer;
 * each fetch gets a _Retval node. Starting from the fetches and targets,
 * a backward walk over data and control inputs, stopping at fed edges,
 * keeps only the nodes they need, so unneeded stateful nodes never run.
 * The kept nodes are copied into a new graph by name (tf_graph_import),
 * which checks them again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/exec/session_impl.h"
#include "lib/core/base/util.h"

typedef struct prune_ctx {
  const tf_graph *g;
  int n_feeds;
  tf_output *fed;     /* resolved feeds */
  bool *has_fed;      /* per node id: some output is fed */
  bool *needed;       /* per node id */
  char **arg_names;   /* per feed */
} prune_ctx;

static int fed_index(const prune_ctx *p, const tf_node *n, int port) {
  if (!p->has_fed[n->id]) return -1;
  for (int i = 0; i < p->n_feeds; i++) {
    if (p->fed[i].node == n && p->fed[i].index == port) return i;
  }
  return -1;
}

static tf_code resolve(const tf_graph *g, const char *what, const char *name,
                       tf_output *o, tf_status *st) {
  if (tf_graph_find_output(g, name, o, st) != TF_OK) {
    return tf_status_prefix(st, "%s '%s'", what, name);
  }
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

/* Copies the kept nodes, rewriting fed inputs to their _Arg, and adds the
 * _Arg and _Retval nodes; imports it all into a new graph. */
static tf_code build_graph(prune_ctx *p, sess_prepared *sp,
                           const tf_output *fetched, tf_graph **out,
                           tf_status *st) {
  const tf_graph *g = p->g;
  int n_kept = 0;
  for (int i = 0; i < g->n_nodes; i++) n_kept += p->needed[i];
  int total = p->n_feeds + n_kept + sp->n_fetches;
  tf_node_def *defs = tf__xcalloc((size_t)(total ? total : 1), sizeof *defs);
  tf_attr_kv(*kv)[3] = tf__xcalloc((size_t)(p->n_feeds + sp->n_fetches + 1), sizeof *kv);
  const char **ret_in = tf__xcalloc((size_t)(sp->n_fetches + 1), sizeof *ret_in);
  char **ret_names = tf__xcalloc((size_t)(sp->n_fetches + 1), sizeof *ret_names);
  int d = 0;
  for (int i = 0; i < p->n_feeds; i++) {
    special_def(&defs[d++], kv[i], p->arg_names[i], "_Arg", sp->feed_types[i], i,
                &sp->feed_shapes[i], NULL);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (!p->needed[i]) continue;
    const tf_node *n = g->nodes[i];
    tf_node_to_def(n, &defs[d]);
    char **in = (char **)defs[d].inputs;
    for (int j = 0; j < n->n_inputs; j++) {
      int f = fed_index(p, n->inputs[j].node, n->inputs[j].index);
      if (f >= 0) {
        free(in[j]);
        in[j] = tf__xstrdup(p->arg_names[f]);
      }
    }
    d++;
  }
  for (int i = 0; i < sp->n_fetches; i++) {
    int f = fed_index(p, fetched[i].node, fetched[i].index);
    ret_in[i] = f >= 0 ? tf__xstrdup(p->arg_names[f]) : edge_name(&fetched[i]);
    char base[32];
    snprintf(base, sizeof base, "_retval_%d", i);
    ret_names[i] = fresh_name(g, base);
    special_def(&defs[d++], kv[p->n_feeds + i], ret_names[i], "_Retval",
                tf_node_output_type(fetched[i].node, fetched[i].index), i, NULL,
                &ret_in[i]);
  }
  tf_graph *ng = tf__graph_new_internal(); /* _arg_N, _retval_N */
  tf_code rc = tf_graph_import(ng, defs, total, st);
  for (int i = p->n_feeds; i < p->n_feeds + n_kept; i++) tf_node_def_fini(&defs[i]);
  for (int i = 0; i < sp->n_fetches; i++) {
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
  *out = ng;
  return TF_OK;
}

static tf_code resolve_all(prune_ctx *p, sess_prepared *sp,
                           char *const *targets, int n_targets,
                           tf_output *fetched, tf_node **roots, int *n_roots,
                           tf_status *st) {
  for (int i = 0; i < p->n_feeds; i++) {
    TF_TRY(resolve(p->g, "feed", sp->feeds[i], &p->fed[i], st));
    if (tf__node_output_is_ref(p->fed[i].node, p->fed[i].index)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s': it is a "
                           "reference (a variable or queue), which cannot be "
                           "fed; feed a tensor read from it", sp->feeds[i]);
    }
    p->has_fed[p->fed[i].node->id] = true;
    sp->feed_types[i] = tf_node_output_type(p->fed[i].node, p->fed[i].index);
    sp->feed_shapes[i] = *tf_node_output_shape(p->fed[i].node, p->fed[i].index);
  }
  *n_roots = 0;
  for (int i = 0; i < sp->n_fetches; i++) {
    TF_TRY(resolve(p->g, "fetch", sp->fetches[i], &fetched[i], st));
    if (fed_index(p, fetched[i].node, fetched[i].index) < 0) {
      roots[(*n_roots)++] = fetched[i].node;
    }
  }
  for (int i = 0; i < n_targets; i++) {
    tf_node *n = tf_graph_find(p->g, targets[i]);
    if (n == NULL) {
      return tf_status_set(st, TF_NOT_FOUND, "target '%s': no node named '%s' "
                           "in the graph", targets[i], targets[i]);
    }
    roots[(*n_roots)++] = n;
  }
  return TF_OK;
}

static char **copy_strs(char *const *v, int n) {
  char **c = tf__xcalloc((size_t)(n ? n : 1), sizeof *c);
  for (int i = 0; i < n; i++) c[i] = tf__xstrdup(v[i]);
  return c;
}

tf_code tf__session_prepare(const tf_graph *g, char *const *feeds, int n_feeds,
                            char *const *fetches, int n_fetches,
                            char *const *targets, int n_targets,
                            tf_workq *runner, sess_prepared **out,
                            tf_status *st) {
  *out = NULL;
  sess_prepared *sp = tf__xcalloc(1, sizeof *sp);
  sp->n_feeds = n_feeds;
  sp->feeds = copy_strs(feeds, n_feeds);
  sp->feed_types = tf__xcalloc((size_t)(n_feeds ? n_feeds : 1), sizeof *sp->feed_types);
  sp->feed_shapes = tf__xcalloc((size_t)(n_feeds ? n_feeds : 1), sizeof *sp->feed_shapes);
  sp->n_fetches = n_fetches;
  sp->fetches = copy_strs(fetches, n_fetches);
  int nn = g->n_nodes ? g->n_nodes : 1;
  prune_ctx p = {.g = g, .n_feeds = n_feeds};
  p.fed = tf__xcalloc((size_t)(n_feeds ? n_feeds : 1), sizeof *p.fed);
  p.has_fed = tf__xcalloc((size_t)nn, sizeof *p.has_fed);
  p.needed = tf__xcalloc((size_t)nn, sizeof *p.needed);
  p.arg_names = tf__xcalloc((size_t)(n_feeds ? n_feeds : 1), sizeof *p.arg_names);
  tf_output *fetched = tf__xcalloc((size_t)(n_fetches ? n_fetches : 1), sizeof *fetched);
  tf_node **roots = tf__xcalloc((size_t)(n_fetches + n_targets + 1), sizeof *roots);
  int n_roots = 0;
  tf_code rc = resolve_all(&p, sp, targets, n_targets, fetched, roots, &n_roots, st);
  if (rc == TF_OK) {
    for (int i = 0; i < n_feeds; i++) {
      char base[32];
      snprintf(base, sizeof base, "_arg_%d", i);
      p.arg_names[i] = fresh_name(g, base);
    }
    mark_needed(&p, roots, n_roots);
    rc = build_graph(&p, sp, fetched, &sp->g, st);
  }
  if (rc == TF_OK && runner != TF__NO_EXECUTOR) {
    tf_executor_opts o = {.device = NULL, .runner = runner};
    rc = tf_executor_new(sp->g, &o, &sp->ex, st);
  }
  for (int i = 0; i < n_feeds; i++) free(p.arg_names[i]);
  free(p.arg_names);
  free(p.fed);
  free(p.has_fed);
  free(p.needed);
  free(fetched);
  free(roots);
  if (rc != TF_OK) {
    tf__session_prepared_free(sp);
    return rc;
  }
  *out = sp;
  return TF_OK;
}

void tf__session_prepared_free(sess_prepared *p) {
  if (p == NULL) return;
  tf_executor_free(p->ex);
  tf_graph_free(p->g);
  for (int i = 0; i < p->n_feeds; i++) free(p->feeds[i]);
  for (int i = 0; i < p->n_fetches; i++) free(p->fetches[i]);
  free(p->feeds);
  free(p->fetches);
  free(p->feed_types);
  free(p->feed_shapes);
  free(p);
}
