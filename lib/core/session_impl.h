/* session_impl.h: the session's prepared executors (one per feed, fetch
 * and target signature), shared by session.c and session_prune.c. */
#ifndef TF_CORE_SESSION_IMPL_H
#define TF_CORE_SESSION_IMPL_H

#include "lib/core/executor.h"
#include "tf/session.h"

typedef struct sess_prepared {
  tf_graph *g;          /* pruned; feeds are _Arg nodes, fetches _Retval */
  tf_executor *ex;
  int n_feeds;          /* sorted, unique, canonical "node:port" */
  char **feeds;
  tf_dtype *feed_types;
  tf_shape *feed_shapes;
  int n_fetches;        /* sorted, unique */
  char **fetches;
} sess_prepared;

/* Builds the pruned graph for a signature over g and its executor. feeds
 * and fetches are sorted, unique and canonical ("node:port"); targets are
 * node names. Errors name the feed, fetch, target or node at fault. */
tf_code tf__session_prepare(const tf_graph *g, char *const *feeds, int n_feeds,
                            char *const *fetches, int n_fetches,
                            char *const *targets, int n_targets,
                            tf_workq *runner, sess_prepared **out,
                            tf_status *st);
void tf__session_prepared_free(sess_prepared *p);

#endif
