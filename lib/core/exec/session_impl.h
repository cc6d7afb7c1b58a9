/* session_impl.h: the session's prepared executors (one per feed, fetch
 * and target signature), shared by session.c and session_prune.c. */
#ifndef TF_CORE_SESSION_IMPL_H
#define TF_CORE_SESSION_IMPL_H

#include "lib/core/exec/executor.h"
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
/* Passed as runner: build only the pruned graph (the master places and
 * partitions it instead of running it here). */
#define TF__NO_EXECUTOR ((tf_workq *)-1)

tf_code tf__session_prepare(const tf_graph *g, char *const *feeds, int n_feeds,
                            char *const *fetches, int n_fetches,
                            char *const *targets, int n_targets,
                            tf_workq *runner, sess_prepared **out,
                            tf_status *st);
void tf__session_prepared_free(sess_prepared *p);

/* A remote session's backend, registered by lib/runtime (remote_session.c)
 * so that lib/core knows no transport. The session keeps its graph copy as
 * locally; the backend receives new nodes (index from on) and the calls. */
typedef struct tf__remote_ops {
  void *(*open)(const char *target, tf_status *st);
  tf_code (*extend)(void *impl, const tf_graph *g, int from, tf_status *st);
  tf_code (*run)(void *impl, const tf_run_options *opts,
                 const char *const *feed_names, tf_tensor *const *feed_values,
                 int n_feeds, const char *const *fetch_names,
                 tf_tensor **fetch_values, int n_fetches,
                 const char *const *target_names, int n_targets,
                 tf_run_metadata *meta, tf_status *st);
  tf_code (*reset)(void *impl, const char *const *containers, int n,
                   tf_status *st);
  tf_code (*close)(void *impl, tf_status *st);
  void (*free)(void *impl);
} tf__remote_ops;

/* Installs the remote backend (once, from a constructor). */
void tf__session_set_remote_ops(const tf__remote_ops *ops);

#endif
