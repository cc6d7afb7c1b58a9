/* algorithm.c: topological order (Kahn's algorithm over a min-heap, so
 * ties go to the lowest id) and while-loop frame inference (algorithm.h).
 * Marks and rollback are in graph.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

/* ---- a min-heap of ids -------------------------------------------------- */

static void heap_push(int *h, int *len, int v) {
  int i = (*len)++;
  while (i > 0 && h[(i - 1) / 2] > v) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = v;
}

static int heap_pop(int *h, int *len) {
  int top = h[0], v = h[--(*len)], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *len) {
      break;
    }
    if (c + 1 < *len && h[c + 1] < h[c]) {
      c++;
    }
    if (h[c] >= v) {
      break;
    }
    h[i] = h[c];
    i = c;
  }
  if (*len > 0) {
    h[i] = v;
  }
  return top;
}

/* ---- topological order -------------------------------------------------- */

/* CSR adjacency: the neighbours of v are adj[off[v] .. off[v + 1]), out
 * edges (dst) when by_src, else in edges (src). off has n + 1 entries. */
static void csr(int n, const tf__edge *edges, int n_edges, bool by_src,
                int *off, int *adj) {
  memset(off, 0, (size_t)(n + 1) * sizeof *off);
  for (int e = 0; e < n_edges; e++) {
    off[(by_src ? edges[e].src : edges[e].dst) + 1]++;
  }
  for (int v = 0; v < n; v++) {
    off[v + 1] += off[v];
  }
  int *fill = tf__xmalloc((size_t)(n + 1) * sizeof *fill);
  memcpy(fill, off, (size_t)(n + 1) * sizeof *fill);
  for (int e = 0; e < n_edges; e++) {
    const tf__edge *x = &edges[e];
    adj[fill[by_src ? x->src : x->dst]++] = by_src ? x->dst : x->src;
  }
  free(fill);
}

/* An id on a cycle among the unplaced ids (pending > 0): from the lowest,
 * step to the lowest unplaced source until an id repeats; the lowest id
 * on that loop. Every unplaced id has an unplaced source, so it ends. */
static int find_cycle(int n, const tf__edge *edges, int n_edges,
                      const int *pending) {
  int *off = tf__xmalloc((size_t)(n + 1) * sizeof *off);
  int *src = tf__xmalloc((size_t)(n_edges + 1) * sizeof *src);
  int *seen = tf__xmalloc((size_t)n * sizeof *seen); /* step number, or -1 */
  csr(n, edges, n_edges, false, off, src);
  for (int v = 0; v < n; v++) {
    seen[v] = -1;
  }
  int v = 0;
  while (pending[v] == 0) {
    v++;
  }
  for (int step = 0; seen[v] < 0; step++) {
    seen[v] = step;
    int next = -1;
    for (int e = off[v]; e < off[v + 1]; e++) {
      if (pending[src[e]] > 0 && (next < 0 || src[e] < next)) {
        next = src[e];
      }
    }
    TF_ASSERT(next >= 0);
    v = next;
  }
  /* v starts the loop: the ids seen at its step or later, in walk order */
  int lowest = v, first = seen[v];
  for (int u = 0; u < n; u++) {
    if (u < lowest && seen[u] >= first) {
      lowest = u;
    }
  }
  free(off);
  free(src);
  free(seen);
  return lowest;
}

int tf__topo_order(int n, const tf__edge *edges, int n_edges, int *order) {
  TF_ASSERT(n >= 0 && n_edges >= 0);
  int *pending = tf__xcalloc((size_t)n + 1, sizeof *pending);
  int *off = tf__xmalloc((size_t)(n + 1) * sizeof *off);
  int *dst = tf__xmalloc((size_t)(n_edges + 1) * sizeof *dst);
  int *heap = tf__xmalloc((size_t)(n + 1) * sizeof *heap);
  for (int e = 0; e < n_edges; e++) {
    TF_ASSERT(edges[e].src >= 0 && edges[e].src < n);
    TF_ASSERT(edges[e].dst >= 0 && edges[e].dst < n);
    pending[edges[e].dst]++;
  }
  csr(n, edges, n_edges, true, off, dst);
  int len = 0, placed = 0;
  for (int v = 0; v < n; v++) {
    if (pending[v] == 0) {
      heap_push(heap, &len, v);
    }
  }
  while (len > 0) {
    int v = heap_pop(heap, &len);
    order[placed++] = v;
    for (int e = off[v]; e < off[v + 1]; e++) {
      if (--pending[dst[e]] == 0) {
        heap_push(heap, &len, dst[e]);
      }
    }
  }
  int bad = placed < n ? find_cycle(n, edges, n_edges, pending) : -1;
  free(pending);
  free(off);
  free(dst);
  free(heap);
  return bad;
}

static bool is_back_edge(const tf_node *src) {
  return (src->op->flags & TF_OP_BACK_EDGE) != 0;
}

/* Input k of v: data inputs first, then control inputs. */
static const tf_node *input_node(const tf_node *v, int k) {
  return k < v->n_inputs ? v->inputs[k].node : v->control[k - v->n_inputs];
}

tf_code tf__graph_topo_order(const tf_graph *g, int *order, tf_status *st) {
  int n = g->n_nodes, n_edges = 0;
  for (int i = 0; i < n; i++) {
    n_edges += g->nodes[i]->n_inputs + g->nodes[i]->n_control;
  }
  tf__edge *edges = tf__xmalloc((size_t)(n_edges + 1) * sizeof *edges);
  n_edges = 0;
  for (int i = 0; i < n; i++) {
    const tf_node *v = g->nodes[i];
    for (int k = 0; k < v->n_inputs + v->n_control; k++) {
      const tf_node *src = input_node(v, k);
      if (!is_back_edge(src)) {
        edges[n_edges++] = (tf__edge){src->id, i};
      }
    }
  }
  int *buf = order != NULL ? order : tf__xmalloc((size_t)(n + 1) * sizeof *buf);
  int bad = tf__topo_order(n, edges, n_edges, buf);
  free(edges);
  if (buf != order) {
    free(buf);
  }
  if (bad >= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "graph has a cycle through "
                         "node '%s' (%s) that does not pass through a "
                         "NextIteration node", g->nodes[bad]->name,
                         g->nodes[bad]->op->name);
  }
  return TF_OK;
}

/* ---- while-loop frames -------------------------------------------------- */

/* "the root frame" or "frame 'name'" for frame i, in buf. */
static const char *frame_desc(const tf__frames *f, int i, char *buf, size_t size) {
  if (i <= 0) {
    snprintf(buf, size, "the root frame");
  } else {
    snprintf(buf, size, "frame '%s'", f->frames[i].name);
  }
  return buf;
}

static bool op_is(const tf_node *n, const char *op) {
  return strcmp(n->op->name, op) == 0;
}

/* The frame Enter node `enter`, running in frame parent, feeds: found by
 * name or added. -1 (with st set) when the name is entered from another
 * frame too. */
static int child_frame(tf__frames *f, const char *name, int parent,
                       const tf_node *enter, tf_status *st) {
  for (int i = 1; i < f->n_frames; i++) {
    if (strcmp(f->frames[i].name, name) != 0) {
      continue;
    }
    if (f->frames[i].parent != parent) {
      char a[300], b[300];
      tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (Enter) enters frame "
                    "'%s' from %s, but it is also entered from %s", enter->name,
                    name, frame_desc(f, parent, a, sizeof a),
                    frame_desc(f, f->frames[i].parent, b, sizeof b));
      return -1;
    }
    return i;
  }
  f->frames = tf__xrealloc(f->frames, (size_t)(f->n_frames + 1) * sizeof *f->frames);
  f->frames[f->n_frames] = (tf__frame){.name = name, .parent = parent, .enter = enter};
  return f->n_frames++;
}

/* Frames of node v, whose forward inputs have theirs. */
static tf_code visit_frame(tf__frames *f, const tf_node *v, tf_status *st) {
  int fr = 0;
  for (int k = 0; k < v->n_inputs + v->n_control; k++) {
    const tf_node *src = input_node(v, k);
    if (!is_back_edge(src)) {
      fr = f->out_frame[src->id];
      break;
    }
  }
  TF_ASSERT(fr >= 0 && fr < f->n_frames);
  f->node_frame[v->id] = fr;
  f->out_frame[v->id] = fr;
  if (op_is(v, "Enter")) {
    const char *name = NULL;
    if (tf_node_attr_get_string(v, "frame_name", &name, NULL) != TF_OK ||
        name == NULL || name[0] == '\0') {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (Enter) needs "
                           "a non-empty frame_name", v->name);
    }
    int child = child_frame(f, name, fr, v, st);
    if (child < 0) {
      return TF_INVALID_ARGUMENT;
    }
    f->out_frame[v->id] = child;
  } else if (op_is(v, "Exit")) {
    if (fr == 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (Exit) is not "
                           "inside a loop (its input is in the root frame)",
                           v->name);
    }
    f->out_frame[v->id] = f->frames[fr].parent;
  }
  return TF_OK;
}

tf_code tf__graph_frames(const tf_graph *g, tf__frames *f, tf_status *st) {
  int n = g->n_nodes;
  memset(f, 0, sizeof *f);
  f->n_frames = 1;
  f->frames = tf__xcalloc(1, sizeof *f->frames);
  f->frames[0] = (tf__frame){.name = "", .parent = -1, .enter = NULL};
  f->node_frame = tf__xcalloc((size_t)n + 1, sizeof *f->node_frame);
  f->out_frame = tf__xcalloc((size_t)n + 1, sizeof *f->out_frame);
  int *order = tf__xmalloc((size_t)(n + 1) * sizeof *order);
  tf_code rc = tf__graph_topo_order(g, order, st);
  for (int k = 0; k < n && rc == TF_OK; k++) {
    rc = visit_frame(f, g->nodes[order[k]], st);
  }
  free(order);
  if (rc != TF_OK) {
    tf__frames_fini(f);
  }
  return rc;
}

void tf__frames_fini(tf__frames *f) {
  if (f == NULL) {
    return;
  }
  free(f->frames);
  free(f->node_frame);
  free(f->out_frame);
  memset(f, 0, sizeof *f);
}
