/* executor.c: preparing a graph for execution (tf_executor_new).
 *
 * For every node: its kernel (looked up and initialised once), its out
 * edges in one flat array, its input kinds (plain, ref, read of a ref
 * edge), and its static frame. Frames follow the data: a node runs in the
 * frame its inputs come from; Enter's outputs live in the frame named by
 * its frame_name attr and Exit's in the parent (tf__graph_frames, shared
 * with the partitioner). Here the frames are checked further: every input
 * of a node, forward and back edges alike, must come from its frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/exec/executor_impl.h"
#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

static bool is_op(const tf_node *n, const char *op) {
  return strcmp(n->op->name, op) == 0;
}

static bool is_back_edge(const tf_node *src) {
  return (src->op->flags & TF_OP_BACK_EDGE) != 0;
}

static const char *frame_desc(const tf_executor *e, int f, char *buf, size_t n) {
  if (f <= 0) {
    snprintf(buf, n, "the root frame");
  } else {
    snprintf(buf, n, "frame '%s'", e->frames[f].name);
  }
  return buf;
}

/* The executor's frames from the inferred ones: names, parents and each
 * loop's parallel_iterations (from its first Enter). */
static void copy_frames(tf_executor *e, const tf__frames *fr) {
  e->frames = tf__xcalloc((size_t)fr->n_frames, sizeof *e->frames);
  e->n_frames = fr->n_frames;
  for (int f = 0; f < fr->n_frames; f++) {
    exec_frame *x = &e->frames[f];
    x->name = tf__xstrdup(fr->frames[f].name);
    x->parent = fr->frames[f].parent;
    x->parallel_iterations = 1;
    if (fr->frames[f].enter != NULL) {
      int64_t pi = 10;
      tf_node_attr_get_int(fr->frames[f].enter, "parallel_iterations", &pi, NULL);
      x->parallel_iterations = pi < 1 ? 1 : (pi > 1 << 20 ? 1 << 20 : (int32_t)pi);
    }
  }
  for (int i = 0; i < e->n_items; i++) {
    exec_item *it = &e->items[i];
    it->frame = fr->node_frame[i];
    it->enter_frame = (it->flags & IT_ENTER) ? fr->out_frame[i] : 0;
  }
}

/* The frames of g: inferred, then _Retval (a fetch) must be in the root. */
static tf_code assign_frames(tf_executor *e, tf_status *st) {
  tf__frames fr;
  TF_TRY(tf__graph_frames(e->g, &fr, st));
  copy_frames(e, &fr);
  tf__frames_fini(&fr);
  for (int i = 0; i < e->n_items; i++) {
    const tf_node *n = e->items[i].node;
    int f = e->items[i].frame;
    if (is_op(n, "_Retval") && f != 0) {
      char b[300];
      return tf_status_set(st, TF_INVALID_ARGUMENT, "cannot fetch '%s:%d': it "
                           "is inside %s (fetch the loop's outputs instead)",
                           n->inputs[0].node->name, n->inputs[0].index,
                           frame_desc(e, f, b, sizeof b));
    }
  }
  return TF_OK;
}

/* The static frame a node's outputs live in. */
static int out_frame(const tf_executor *e, const tf_node *src) {
  const exec_item *it = &e->items[src->id];
  if (it->flags & IT_ENTER) return it->enter_frame;
  if (it->flags & IT_EXIT) return e->frames[it->frame].parent;
  return it->frame;
}

/* Every input of n must come from n's frame: the forward inputs, or (when
 * back) the back edges. All forward inputs are checked before any back
 * edge, so a body node mixing frames is named rather than the Merge that
 * its NextIteration feeds. */
static tf_code check_frames(const tf_executor *e, const tf_node *n, bool back,
                            tf_status *st) {
  int f = e->items[n->id].frame;
  for (int i = 0; i < n->n_inputs + n->n_control; i++) {
    const tf_node *src = i < n->n_inputs ? n->inputs[i].node : n->control[i - n->n_inputs];
    if (is_back_edge(src) != back) continue;
    int sf = out_frame(e, src);
    if (sf != f) {
      char a[300], b[300];
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s) has inputs "
                           "from different frames: it runs in %s, but its input "
                           "'%s' is in %s (pass outer tensors into a loop as "
                           "loop variables or invariants)", n->name, n->op->name,
                           frame_desc(e, f, a, sizeof a), src->name,
                           frame_desc(e, sf, b, sizeof b));
    }
  }
  return TF_OK;
}

static uint32_t op_flags(const tf_node *n, const tf_kernel_def *k) {
  uint32_t f = 0;
  if (k->flags & TF_KERNEL_CHEAP) f |= IT_CHEAP;
  if (k->compute_async != NULL && k->compute == NULL) f |= IT_ASYNC;
  if (n->op->flags & TF_OP_CONTROL_FLOW) f |= IT_CTRL_FLOW | IT_CHEAP;
  if (n->op->flags & TF_OP_DEAD_AWARE) f |= IT_DEAD_AWARE;
  if (is_op(n, "Merge")) f |= IT_MERGE;
  if (is_op(n, "Enter")) {
    bool c = false;
    tf_node_attr_get_bool(n, "is_constant", &c, NULL);
    f |= IT_ENTER | (c ? IT_CONST_ENTER : 0);
  }
  if (is_op(n, "Exit")) f |= IT_EXIT;
  if (is_op(n, "NextIteration")) f |= IT_NEXT;
  for (int i = 0; i < n->n_outputs; i++) {
    if (tf__node_output_is_ref(n, i)) f |= IT_REF_OUT;
  }
  for (int i = 0; i < n->n_inputs; i++) {
    if (tf__node_input_is_ref(n, i)) {
      f |= IT_REF_IN;
    } else if (tf__node_output_is_ref(n->inputs[i].node, n->inputs[i].index)) {
      f |= IT_DEREF;
    }
  }
  return f;
}

/* Kernel lookup and init; init errors are reported with the node. */
static tf_code init_kernel(tf_executor *e, const tf_node *n, tf_status *st) {
  exec_item *it = &e->items[n->id];
  it->node = n;
  it->k = tf_kernel_for_node(n, e->device->type, st);
  if (it->k == NULL) return st->code;
  if (it->k->init != NULL) {
    tf_status local;
    tf_status_init(&local);
    if (it->k->init(n, &it->state, &local) != TF_OK) {
      if (strstr(local.msg, n->name) != NULL) {
        *st = local;
        return st->code;
      }
      return tf_status_set(st, local.code, "node '%s' (%s): %s", n->name,
                           n->op->name, local.msg);
    }
  }
  return TF_OK;
}

/* Out edges as one CSR array, input kinds, and per-frame numbering. */
static void build_edges(tf_executor *e) {
  int n = e->n_items, total = 0, n_kinds = 0;
  for (int i = 0; i < n; i++) {
    const tf_node *nd = e->items[i].node;
    for (int j = 0; j < nd->n_inputs; j++) e->items[nd->inputs[j].node->id].n_edges++;
    for (int j = 0; j < nd->n_control; j++) e->items[nd->control[j]->id].n_edges++;
    if (e->items[i].flags & (IT_REF_IN | IT_DEREF)) n_kinds += nd->n_inputs;
  }
  for (int i = 0; i < n; i++) {
    e->items[i].edge_start = total;
    total += e->items[i].n_edges;
    e->items[i].n_edges = 0;
  }
  e->edges = tf__xcalloc((size_t)(total ? total : 1), sizeof *e->edges);
  e->in_kinds = tf__xcalloc((size_t)(n_kinds ? n_kinds : 1), 1);
  n_kinds = 0;
  for (int i = 0; i < n; i++) {
    exec_item *it = &e->items[i];
    const tf_node *nd = it->node;
    for (int j = 0; j < nd->n_inputs; j++) {
      exec_item *src = &e->items[nd->inputs[j].node->id];
      e->edges[src->edge_start + src->n_edges++] = (exec_edge){i, j, nd->inputs[j].index};
    }
    for (int j = 0; j < nd->n_control; j++) {
      exec_item *src = &e->items[nd->control[j]->id];
      e->edges[src->edge_start + src->n_edges++] = (exec_edge){i, -1, -1};
    }
    if (it->flags & (IT_REF_IN | IT_DEREF)) {
      it->kinds_start = n_kinds;
      for (int j = 0; j < nd->n_inputs; j++) {
        uint8_t k = IN_PLAIN;
        if (tf__node_input_is_ref(nd, j)) {
          k = IN_REF;
        } else if (tf__node_output_is_ref(nd->inputs[j].node, nd->inputs[j].index)) {
          k = IN_DEREF;
        }
        e->in_kinds[n_kinds++] = k;
      }
    }
  }
}

/* Pending-count ids, input slots and initial counts per frame. */
static void number_frames(tf_executor *e) {
  for (int i = 0; i < e->n_items; i++) {
    exec_item *it = &e->items[i];
    exec_frame *fr = &e->frames[it->frame];
    it->pending_id = fr->n_nodes++;
    it->input_start = fr->n_slots;
    fr->n_slots += it->n_inputs;
    if (it->flags & (IT_REF_IN | IT_DEREF)) fr->has_refs = true;
    if (it->flags & IT_ENTER) e->frames[it->enter_frame].n_enters++;
  }
  for (int f = 0; f < e->n_frames; f++) {
    exec_frame *fr = &e->frames[f];
    fr->init_pending = tf__xcalloc((size_t)(fr->n_nodes ? fr->n_nodes : 1), sizeof(int32_t));
  }
  for (int i = 0; i < e->n_items; i++) {
    exec_item *it = &e->items[i];
    int n_ctrl = it->node->n_control;
    e->frames[it->frame].init_pending[it->pending_id] =
        (it->flags & IT_MERGE) ? 1 + 2 * n_ctrl : it->n_inputs + n_ctrl;
    if (it->frame == 0 && it->n_inputs + n_ctrl == 0) {
      e->roots[e->n_roots++] = i;
    }
  }
}

tf_code tf_executor_new(const tf_graph *g, const tf_executor_opts *opts,
                        tf_executor **out, tf_status *st) {
  *out = NULL;
  tf_executor *e = tf__xcalloc(1, sizeof *e);
  e->g = g;
  e->device = opts && opts->device ? opts->device : tf_cpu_device();
  e->runner = opts ? opts->runner : NULL;
  e->n_items = g->n_nodes;
  e->items = tf__xcalloc((size_t)(e->n_items ? e->n_items : 1), sizeof *e->items);
  e->roots = tf__xcalloc((size_t)(e->n_items ? e->n_items : 1), sizeof *e->roots);
  tf_code rc = TF_OK;
  for (int i = 0; i < e->n_items && rc == TF_OK; i++) {
    const tf_node *n = g->nodes[i];
    rc = init_kernel(e, n, st);
    if (rc != TF_OK) break;
    exec_item *it = &e->items[i];
    it->flags = op_flags(n, it->k);
    it->n_inputs = n->n_inputs;
    it->n_data_in = n->n_inputs;
    if (it->flags & IT_MERGE) {
      /* A Merge is dead when its forward inputs all are: a loop's back
       * edge never delivers deadness (dead NextIterations stop). */
      it->n_data_in = 0;
      for (int j = 0; j < n->n_inputs; j++) {
        it->n_data_in += !is_back_edge(n->inputs[j].node);
      }
    }
    it->n_outputs = n->n_outputs;
    if (n->n_outputs > e->max_outputs) e->max_outputs = n->n_outputs;
  }
  if (rc == TF_OK) rc = assign_frames(e, st);
  for (int pass = 0; pass < 2 && rc == TF_OK; pass++) {
    for (int i = 0; i < e->n_items && rc == TF_OK; i++) {
      rc = check_frames(e, g->nodes[i], pass == 1, st);
    }
  }
  if (rc != TF_OK) {
    tf_executor_free(e);
    return rc;
  }
  build_edges(e);
  number_frames(e);
  e->simple = e->n_frames == 1;
  for (int i = 0; i < e->n_items; i++) {
    if (e->items[i].flags & (IT_CTRL_FLOW | IT_DEAD_AWARE)) e->simple = false;
    if (g->nodes[i]->op->flags & TF_OP_RENDEZVOUS) e->needs_rendezvous = true;
  }
  *out = e;
  return TF_OK;
}

void tf_executor_free(tf_executor *e) {
  if (e == NULL) return;
  for (int i = 0; i < e->n_items; i++) {
    exec_item *it = &e->items[i];
    if (it->k != NULL && it->k->free_state != NULL && it->state != NULL) {
      it->k->free_state(it->state);
    }
  }
  for (int f = 0; f < e->n_frames; f++) {
    free(e->frames[f].name);
    free(e->frames[f].init_pending);
  }
  free(e->frames);
  free(e->items);
  free(e->edges);
  free(e->in_kinds);
  free(e->roots);
  free(e);
}

const tf_graph *tf_executor_graph(const tf_executor *e) { return e->g; }

bool tf_executor_needs_rendezvous(const tf_executor *e) {
  return e->needs_rendezvous;
}
