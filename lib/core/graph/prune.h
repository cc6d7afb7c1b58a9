/* prune.h: the graph pass that turns a graph and a step's signature into
 * the graph that step runs (whitepaper §4.2, partial execution): every fed
 * edge becomes an _Arg node, every fetch gets a _Retval node, and only the
 * nodes the fetches and targets need are kept. No executor is involved:
 * the local session builds one over the result, the master places and
 * partitions it. */
#ifndef TF_CORE_GRAPH_PRUNE_H
#define TF_CORE_GRAPH_PRUNE_H

#include "lib/core/graph/signature.h"
#include "tf/graph.h"

/* The pruned graph of a signature. The index maps are fixed by the sorted
 * signature: the _Arg node with attr index k replaces sig->feeds[k] and
 * the _Retval with index k returns sig->fetches[k] (the caller's own
 * order maps through sig->feed_pos / fetch_pos). */
typedef struct tf__pruned {
  tf_graph *g;            /* an internal graph (tf__graph_new_internal) */
  int n_feeds;            /* sig->n_feeds */
  tf_dtype *feed_types;   /* per sorted feed: the edge's dtype */
  tf_shape *feed_shapes;  /* and its inferred (maybe partial) shape */
  int n_fetches;          /* sig->n_fetches */
} tf__pruned;

/* Builds the pruned graph of sig over g (which is not changed). The
 * generated nodes are named _arg_<k> and _retval_<k> (with a suffix if g
 * has such a node). Errors name the feed, fetch, target or node at fault:
 * NOT_FOUND for a name that is not in g, INVALID_ARGUMENT for a port out
 * of range or a fed reference edge, and whatever tf_graph_import says about
 * a kept node. */
tf_code tf__prune(const tf_graph *g, const tf__sig *sig, tf__pruned **out,
                  tf_status *st);
void tf__pruned_free(tf__pruned *p); /* NULL-safe */

#endif
