/* algorithm.h: the graph algorithms the rest of the system shares, each
 * in one place: topological order (import, validation, placement,
 * partitioning), while-loop frame inference (executor, partitioning) and
 * marks that roll a graph back to an earlier state (the control-flow,
 * gradient and training builders). Order and frames are in algorithm.c;
 * marks live in graph.c, beside the layout they undo. Not public API. */
#ifndef TF_CORE_GRAPH_ALGORITHM_H
#define TF_CORE_GRAPH_ALGORITHM_H

#include "tf/graph.h"
#include "tf/status.h"

/* ---- topological order -------------------------------------------------- */

/* An edge of a directed graph over ids 0..n-1: dst depends on src. */
typedef struct tf__edge {
  int src, dst;
} tf__edge;

/* Orders the ids 0..n-1 so that every edge goes forward (src before dst)
 * and writes them to order[0..n). Ties: of the ids whose sources are all
 * placed, the lowest comes next (Kahn's algorithm over a min-heap), so ids
 * already in a topological order come back unchanged and the result does
 * not depend on the order of the edges. Parallel edges are allowed; edges
 * must name ids in [0, n). O((n + n_edges) log n).
 * Returns -1 when every id is placed. When the edges have a cycle, returns
 * an id on one: walking back from the lowest unplaced id, each time to
 * its lowest unplaced source, until an id repeats, the lowest id of the
 * cycle found; order then holds only the ids placed before (fewer than n).
 * n == 0 is allowed (order is not touched). */
int tf__topo_order(int n, const tf__edge *edges, int n_edges, int *order);

/* Fills order[0..num_nodes) (order may be NULL: only checks) with g's
 * node ids in a topological order over data and control edges, ignoring
 * edges out of NextIteration nodes (TF_OP_BACK_EDGE: loop back edges),
 * with tf__topo_order's tie rule (lowest id first: the identity for a
 * graph whose ids are topological, which builders and import guarantee).
 * INVALID_ARGUMENT "graph has a cycle through node 'b' (Identity) that
 * does not pass through a NextIteration node", naming a node on such a
 * cycle, otherwise. */
tf_code tf__graph_topo_order(const tf_graph *g, int *order, tf_status *st);

/* ---- while-loop frames -------------------------------------------------- */

/* A frame: the root (index 0) or one while loop's, named by the
 * frame_name attr of the Enter nodes that feed it. */
typedef struct tf__frame {
  const char *name;     /* "" for the root; borrowed from the graph */
  int parent;           /* -1 for the root */
  const tf_node *enter; /* its first Enter in topological order; NULL for the root */
} tf__frame;

/* Which frame every node of a graph runs in. */
typedef struct tf__frames {
  int n_frames;
  tf__frame *frames;    /* frames[0] is the root; parents come first */
  int *node_frame;      /* per node id: the frame the node runs in */
  int *out_frame;       /* per node id: the frame its outputs live in */
} tf__frames;

/* Infers the static frames of g as TensorFlow's executor does. Nodes are
 * visited in topological order (tf__graph_topo_order); a node runs in the
 * frame of its first input (data inputs, then control inputs) that is not
 * a back edge, or in the root frame when it has none. Its outputs live in
 * that frame too, except an Enter's, which live in the child frame named
 * by its frame_name attr, and an Exit's, which live in its frame's parent.
 * Frame names are global: two Enters naming one frame must run in the
 * same frame (its parent). On success *f owns its arrays (free them with
 * tf__frames_fini). Errors (INVALID_ARGUMENT naming the node; *f is then
 * empty): a cycle without NextIteration, an Enter without a non-empty
 * frame_name, a frame entered from two different frames ("node 'e'
 * (Enter) enters frame 'w' from the root frame, but it is also entered
 * from frame 'v'"), an Exit in the root frame ("node 'x' (Exit) is not
 * inside a loop (its input is in the root frame)"). */
tf_code tf__graph_frames(const tf_graph *g, tf__frames *f, tf_status *st);
/* Frees f's arrays and zeroes it; NULL-safe, and safe on a zeroed f. */
void tf__frames_fini(tf__frames *f);

/* ---- marks: rolling a graph back ---------------------------------------- */

/* The state of a graph when the mark was taken. Plain data: keep it in
 * the builder that took it. */
typedef struct tf__gmark {
  int n_nodes;  /* node count */
  int n_scopes; /* scope depth */
  int n_edits;  /* length of the graph's undo log */
  int depth;    /* marks open on the graph, this one included */
} tf__gmark;

/* Takes a mark on g. From now until the mark ends the graph logs what it
 * needs to undo: names and scopes handed out (tf_graph_unique_name, scope
 * pushes, new nodes), control inputs added to finished nodes and back
 * edges set (graph_impl.h). Every mark must end, in the reverse order of
 * taking (marks nest like the builders that take them), in exactly one
 * tf__graph_commit or tf__graph_rollback; a mark ended out of order
 * aborts (TF_ASSERT). */
tf__gmark tf__graph_mark(tf_graph *g);
/* Ends m keeping the nodes added since; pops the scopes pushed since m
 * (a builder's scopes end with it). The edits stay undoable by an
 * enclosing mark. */
void tf__graph_commit(tf_graph *g, const tf__gmark *m);
/* Ends m and puts g back as it was when m was taken: the nodes added since
 * are freed (pointers to them dangle), every name and scope handed out
 * since can be handed out again (the next tf_cond is "cond" again, not
 * "cond_1"), control inputs and back edges set on older nodes since are
 * undone, and the scope stack is popped back to its depth. Node ids and
 * the names of older nodes are unchanged. */
void tf__graph_rollback(tf_graph *g, const tf__gmark *m);

#endif
