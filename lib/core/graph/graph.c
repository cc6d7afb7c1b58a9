/* graph.c: graph storage, naming (scopes, uniquing), node accessors, the
 * edits control-flow builders make to finished nodes, and marks that roll
 * all of that back (algorithm.h). Building and importing nodes is in
 * graph_build.c; orders and frames in algorithm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/graph/signature.h"
#include "lib/core/base/util.h"

tf_graph *tf_graph_new(void) {
  tf_graph *g = tf__xcalloc(1, sizeof *g);
  tf__strmap_init(&g->by_name);
  tf__strmap_init(&g->used);
  return g;
}

tf_graph *tf__graph_new_internal(void) {
  tf_graph *g = tf_graph_new();
  g->internal = true;
  return g;
}

void tf__node_free(tf_node *n) {
  if (n == NULL) return;
  for (int i = 0; i < n->n_attrs; i++) {
    free(n->attr_names[i]);
    tf_attr_value_fini(&n->attrs[i]);
  }
  free(n->attr_names);
  free(n->attrs);
  free(n->name);
  free(n->device);
  free(n->inputs);
  free(n->in_types);
  free(n->control);
  free(n->out_types);
  free(n->out_shapes);
  free(n);
}

void tf_graph_free(tf_graph *g) {
  if (g == NULL) return;
  for (int i = 0; i < g->n_nodes; i++) tf__node_free(g->nodes[i]);
  free(g->nodes);
  for (int i = 0; i < g->n_edits; i++) free(g->edits[i].key);
  free(g->edits);
  for (int i = 0; i < g->n_scopes; i++) free(g->scopes[i]);
  free(g->scopes);
  tf__strmap_fini(&g->by_name);
  tf__strmap_fini(&g->used);
  free(g);
}

/* ---- the undo log (marks) ---------------------------------------------- */

/* A new entry at the end of g's undo log (only while a mark is open). */
static tf__graph_edit *log_edit(tf_graph *g) {
  TF_ASSERT(g->n_marks > 0);
  if (g->n_edits == g->cap_edits) {
    g->cap_edits = g->cap_edits ? 2 * g->cap_edits : 32;
    g->edits = tf__xrealloc(g->edits, (size_t)g->cap_edits * sizeof *g->edits);
  }
  tf__graph_edit *e = &g->edits[g->n_edits++];
  memset(e, 0, sizeof *e);
  return e;
}

/* Sets g->used[key] = val, logging the old state while a mark is open. */
static void used_put(tf_graph *g, const char *key, intptr_t val) {
  if (g->n_marks > 0) {
    bool found;
    intptr_t old = (intptr_t)tf__strmap_get(&g->used, key, &found);
    tf__graph_edit *e = log_edit(g);
    *e = (tf__graph_edit){.kind = TF__EDIT_USED, .key = tf__xstrdup(key),
                          .existed = found, .old = old};
  }
  tf__strmap_put(&g->used, key, (void *)val);
}

static void undo_edit(tf_graph *g, tf__graph_edit *e) {
  switch (e->kind) {
    case TF__EDIT_USED:
      if (e->existed) {
        tf__strmap_put(&g->used, e->key, (void *)e->old);
      } else {
        tf__strmap_del(&g->used, e->key);
      }
      break;
    case TF__EDIT_CONTROL:
      /* undone newest first, so the control input added is the last */
      TF_ASSERT(e->node->n_control > 0);
      e->node->n_control--;
      break;
    case TF__EDIT_INPUT:
      e->node->inputs[e->input] = e->old_input;
      break;
  }
  free(e->key);
  e->key = NULL;
}

tf__gmark tf__graph_mark(tf_graph *g) {
  TF_ASSERT(g != NULL);
  g->n_marks++;
  return (tf__gmark){.n_nodes = g->n_nodes, .n_scopes = g->n_scopes,
                          .n_edits = g->n_edits, .depth = g->n_marks};
}

/* Pops the scopes pushed since m and closes m (innermost open mark). */
static void end_mark(tf_graph *g, const tf__gmark *m) {
  TF_ASSERT(g->n_marks == m->depth && m->depth > 0);
  TF_ASSERT(g->n_scopes >= m->n_scopes && g->n_nodes >= m->n_nodes);
  while (g->n_scopes > m->n_scopes) {
    tf_graph_pop_scope(g);
  }
  if (--g->n_marks == 0) {
    for (int i = 0; i < g->n_edits; i++) free(g->edits[i].key);
    g->n_edits = 0;
  }
}

void tf__graph_commit(tf_graph *g, const tf__gmark *m) {
  end_mark(g, m);
}

void tf__graph_rollback(tf_graph *g, const tf__gmark *m) {
  TF_ASSERT(g->n_marks == m->depth && g->n_edits >= m->n_edits);
  while (g->n_edits > m->n_edits) {
    undo_edit(g, &g->edits[--g->n_edits]);
  }
  while (g->n_nodes > m->n_nodes) {
    tf_node *n = g->nodes[--g->n_nodes];
    tf__strmap_del(&g->by_name, n->name);
    tf__node_free(n);
  }
  end_mark(g, m);
}

/* ---- nodes -------------------------------------------------------------- */

void tf__graph_add_node(tf_graph *g, tf_node *n) {
  if (g->n_nodes == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->nodes = tf__xrealloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
  }
  n->id = g->n_nodes;
  n->graph = g;
  g->nodes[g->n_nodes++] = n;
  tf__strmap_put(&g->by_name, n->name, n);
  if (!tf__strmap_get(&g->used, n->name, NULL)) {
    used_put(g, n->name, 1);
  }
}

int tf_graph_num_nodes(const tf_graph *g) { return g->n_nodes; }

tf_node *tf_graph_node(const tf_graph *g, int i) {
  return i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}

tf_node *tf_graph_find(const tf_graph *g, const char *name) {
  return tf__strmap_get(&g->by_name, name, NULL);
}

tf_code tf_graph_find_output(const tf_graph *g, const char *edge,
                             tf_output *out, tf_status *st) {
  char name[512];
  size_t len;
  int port;
  const char *bad = tf__tensor_name_split(edge, &len, &port);
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "bad tensor name '%s': %s "
                         "(expected 'node' or 'node:port')", edge, bad);
  }
  if (len == 0 || len >= sizeof name) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "bad tensor name '%s'", edge);
  }
  memcpy(name, edge, len);
  name[len] = '\0';
  tf_node *n = tf_graph_find(g, name);
  if (n == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "no node named '%s' in the graph "
                         "(from tensor name '%s')", name, edge);
  }
  if (port >= n->n_outputs) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "node '%s' (%s) has %d outputs; '%s' asks for output "
                         "%d", name, n->op->name, n->n_outputs, edge, port);
  }
  out->node = n;
  out->index = port;
  return TF_OK;
}

/* ---- naming ------------------------------------------------------------- */

const char *tf__graph_scope(const tf_graph *g) {
  return g->n_scopes ? g->scopes[g->n_scopes - 1] : "";
}

/* A name under the scope not used by any node or scope: base, base_1, ... */
static char *unique_full(tf_graph *g, const char *base) {
  char *full = tf__xasprintf("%s%s", tf__graph_scope(g), base);
  bool found;
  intptr_t next = (intptr_t)tf__strmap_get(&g->used, full, &found);
  if (!found) {
    used_put(g, full, 1);
    return full;
  }
  for (;; next++) {
    char *cand = tf__xasprintf("%s_%ld", full, (long)next);
    if (!tf__strmap_get(&g->used, cand, NULL)) {
      used_put(g, full, next + 1);
      used_put(g, cand, 1);
      free(full);
      return cand;
    }
    free(cand);
  }
}

const char *tf_graph_unique_name(tf_graph *g, const char *base, char *buf,
                                 size_t size) {
  char *full = unique_full(g, base);
  snprintf(buf, size, "%s", full);
  free(full);
  return buf;
}

void tf_graph_push_scope(tf_graph *g, const char *scope) {
  size_t len = strlen(scope);
  char *full;
  if (len > 0 && scope[len - 1] == '/') {
    full = tf__xasprintf("%s%s", tf__graph_scope(g), scope);
  } else {
    char *u = unique_full(g, scope);
    full = tf__xasprintf("%s/", u);
    free(u);
  }
  if (g->n_scopes == g->cap_scopes) {
    g->cap_scopes = g->cap_scopes ? g->cap_scopes * 2 : 8;
    g->scopes = tf__xrealloc(g->scopes, (size_t)g->cap_scopes * sizeof *g->scopes);
  }
  g->scopes[g->n_scopes++] = full;
}

void tf_graph_pop_scope(tf_graph *g) {
  TF_ASSERT(g->n_scopes > 0);
  free(g->scopes[--g->n_scopes]);
}

/* ---- accessors ---------------------------------------------------------- */

const char *tf_node_name(const tf_node *n) { return n->name; }
const char *tf_node_op(const tf_node *n) { return n->op->name; }
const char *tf_node_device(const tf_node *n) { return n->device; }
int tf_node_id(const tf_node *n) { return n->id; }
int tf_node_num_inputs(const tf_node *n) { return n->n_inputs; }
tf_output tf_node_input(const tf_node *n, int i) { return n->inputs[i]; }
int tf_node_num_control_inputs(const tf_node *n) { return n->n_control; }
tf_node *tf_node_control_input(const tf_node *n, int i) { return n->control[i]; }
int tf_node_num_outputs(const tf_node *n) { return n->n_outputs; }
tf_dtype tf_node_output_type(const tf_node *n, int i) { return n->out_types[i]; }
tf_dtype tf_node_input_type(const tf_node *n, int i) { return n->in_types[i]; }
const tf_shape *tf_node_output_shape(const tf_node *n, int i) {
  return &n->out_shapes[i];
}

static bool arg_range(const tf_arg_def *args, int nargs, const int *start,
                      const char *arg, int *s, int *count) {
  for (int k = 0; k < nargs; k++) {
    if (strcmp(args[k].name, arg) == 0) {
      *s = start[k];
      *count = start[k + 1] - start[k];
      return true;
    }
  }
  return false;
}

bool tf_node_input_range(const tf_node *n, const char *arg, int *start,
                         int *count) {
  return arg_range(n->op->inputs, n->op->n_inputs, n->in_start, arg, start, count);
}

bool tf_node_output_range(const tf_node *n, const char *arg, int *start,
                          int *count) {
  return arg_range(n->op->outputs, n->op->n_outputs, n->out_start, arg, start,
                   count);
}

int tf_node_num_attrs(const tf_node *n) { return n->n_attrs; }
const char *tf_node_attr_name(const tf_node *n, int i) { return n->attr_names[i]; }
const tf_attr_value *tf_node_attr_at(const tf_node *n, int i) { return &n->attrs[i]; }

const tf_attr_value *tf_node_attr(const tf_node *n, const char *name) {
  int lo = 0, hi = n->n_attrs - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(name, n->attr_names[mid]);
    if (c == 0) return &n->attrs[mid];
    if (c < 0) {
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return NULL;
}

static const tf_attr_value *get_typed(const tf_node *n, const char *name,
                                      tf_attr_type t, bool is_list,
                                      tf_status *st) {
  const tf_attr_value *v = tf_node_attr(n, name);
  if (v == NULL) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s) has no attr '%s'",
                  n->name, n->op->name, name);
    return NULL;
  }
  if (v->type != t || v->is_list != is_list) {
    tf_status_set(st, TF_INVALID_ARGUMENT,
                  "node '%s' (%s): attr '%s' is %s, not %s", n->name,
                  n->op->name, name, tf_attr_type_name(v->type, v->is_list),
                  tf_attr_type_name(t, is_list));
    return NULL;
  }
  return v;
}

#define TF__GETTER(fn, T, attr_t, field)                                       \
  tf_code fn(const tf_node *n, const char *name, T *v, tf_status *st) {        \
    const tf_attr_value *a = get_typed(n, name, attr_t, false, st);            \
    if (a == NULL) return TF_INVALID_ARGUMENT;                                 \
    *v = a->u.field;                                                           \
    return TF_OK;                                                              \
  }
TF__GETTER(tf_node_attr_get_int, int64_t, TF_ATTR_INT, i)
TF__GETTER(tf_node_attr_get_float, double, TF_ATTR_FLOAT, f)
TF__GETTER(tf_node_attr_get_bool, bool, TF_ATTR_BOOL, b)
TF__GETTER(tf_node_attr_get_type, tf_dtype, TF_ATTR_TYPE, t)
TF__GETTER(tf_node_attr_get_string, const char *, TF_ATTR_STRING, s)
TF__GETTER(tf_node_attr_get_shape, tf_shape, TF_ATTR_SHAPE, shape)
TF__GETTER(tf_node_attr_get_tensor, tf_tensor *, TF_ATTR_TENSOR, tensor)
#undef TF__GETTER

tf_code tf_node_attr_get_int_list(const tf_node *n, const char *name,
                                  const int64_t **v, int *count,
                                  tf_status *st) {
  const tf_attr_value *a = get_typed(n, name, TF_ATTR_INT, true, st);
  if (a == NULL) return TF_INVALID_ARGUMENT;
  *v = a->u.ints;
  *count = a->n;
  return TF_OK;
}

/* ---- edits made by the control-flow builders ---------------------------- */

tf_code tf__node_set_back_edge(tf_node *n, int i, tf_output src, tf_status *st) {
  if (i < 0 || i >= n->n_inputs) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s) has no data "
                         "input %d for a back edge from '%s'", n->name,
                         n->op->name, i, src.node ? src.node->name : "(null)");
  }
  if (src.node == NULL || src.node->graph != n->graph) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "back edge into node '%s' "
                         "(%s) input %d comes from %s", n->name, n->op->name,
                         i, src.node ? "a node of another graph" : "no node");
  }
  const tf_node *s = src.node;
  if (!(s->op->flags & TF_OP_BACK_EDGE)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s) cannot be "
                         "the source of a back edge into '%s' (%s): only "
                         "NextIteration can", s->name, s->op->name, n->name,
                         n->op->name);
  }
  if (src.index < 0 || src.index >= s->n_outputs) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "back edge into '%s' asks "
                         "for output %d of '%s', which has %d outputs",
                         n->name, src.index, s->name, s->n_outputs);
  }
  if (s->out_types[src.index] != n->in_types[i]) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "back edge from '%s:%d' "
                         "(%s) into input %d of '%s' (%s), which takes %s",
                         s->name, src.index,
                         tf_dtype_name(s->out_types[src.index]), i, n->name,
                         n->op->name, tf_dtype_name(n->in_types[i]));
  }
  if (n->graph->n_marks > 0) {
    tf__graph_edit *e = log_edit(n->graph);
    *e = (tf__graph_edit){.kind = TF__EDIT_INPUT, .node = n, .input = i,
                          .old_input = n->inputs[i]};
  }
  n->inputs[i] = src;
  return TF_OK;
}

void tf__node_add_control(tf_node *n, tf_node *src) {
  TF_ASSERT(src != NULL && src->graph == n->graph);
  for (int i = 0; i < n->n_control; i++) {
    if (n->control[i] == src) {
      return;
    }
  }
  if (n->graph->n_marks > 0) {
    *log_edit(n->graph) = (tf__graph_edit){.kind = TF__EDIT_CONTROL, .node = n};
  }
  n->control = tf__xrealloc(n->control, (size_t)(n->n_control + 1) * sizeof *n->control);
  n->control[n->n_control++] = src;
}

/* ---- defs and validation ------------------------------------------------ */

void tf_node_to_def(const tf_node *n, tf_node_def *def) {
  int total = n->n_inputs + n->n_control;
  char **in = tf__xcalloc((size_t)(total ? total : 1), sizeof *in);
  for (int i = 0; i < n->n_inputs; i++) {
    const tf_output *o = &n->inputs[i];
    in[i] = o->index == 0 ? tf__xstrdup(o->node->name)
                          : tf__xasprintf("%s:%d", o->node->name, o->index);
  }
  for (int i = 0; i < n->n_control; i++) {
    in[n->n_inputs + i] = tf__xasprintf("^%s", n->control[i]->name);
  }
  tf_attr_kv *kv = tf__xcalloc((size_t)(n->n_attrs ? n->n_attrs : 1), sizeof *kv);
  for (int i = 0; i < n->n_attrs; i++) {
    kv[i].name = n->attr_names[i];
    kv[i].value = n->attrs[i];
  }
  *def = (tf_node_def){.name = n->name, .op = n->op->name, .device = n->device,
                       .n_inputs = total, .inputs = (const char *const *)in,
                       .n_attrs = n->n_attrs, .attrs = kv};
}

void tf_node_def_fini(tf_node_def *def) {
  for (int i = 0; i < def->n_inputs; i++) free((char *)def->inputs[i]);
  free((void *)def->inputs);
  free((void *)def->attrs);
  memset(def, 0, sizeof *def);
}

/* Every cycle passes through a NextIteration: a topological order exists
 * once back edges are ignored. */
tf_code tf_graph_validate(const tf_graph *g, tf_status *st) {
  return tf__graph_topo_order(g, NULL, st);
}
