/* remote.h: the backend of a remote session (a session whose target is a
 * tfmaster URL), registered by lib/runtime (remote_session.c) so that
 * lib/core knows no transport. The session keeps its graph copy as
 * locally; the backend receives new nodes (index from on) and the calls. */
#ifndef TF_CORE_EXEC_REMOTE_H
#define TF_CORE_EXEC_REMOTE_H

#include "tf/session.h"

typedef struct tf__remote_ops {
  /* rpc_timeout_ms: each control call's deadline (> 0). */
  void *(*open)(const char *target, int64_t rpc_timeout_ms, tf_status *st);
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
