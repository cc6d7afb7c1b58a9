/* algorithm.h: the graph algorithms the rest of the system shares, each
 * in one place: marks that roll a graph back to an earlier state (the
 * control-flow, gradient and training builders). Marks live in graph.c,
 * beside the layout they undo. Not public API. */
#ifndef TF_CORE_GRAPH_ALGORITHM_H
#define TF_CORE_GRAPH_ALGORITHM_H

#include "tf/graph.h"
#include "tf/status.h"

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
