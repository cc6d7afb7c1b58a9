/* op_allow.h: the ops a cluster's daemons run. A graph given to the
 * master (CreateSession, ExtendSession, a job's graph file) or registered
 * on a worker (RegisterGraph) may name only allowed ops; a refusal comes
 * before anything of the graph is added or run:
 *   PERMISSION_DENIED "graph node 'n' (op X) is not allowed on this
 *   cluster (ops.allow in conf/c.yaml can allow it)".
 * Allowed: every registered op, except _Send and _Recv in a graph from a
 * client (the master inserts them itself when it partitions a graph; a
 * client naming them would address the rendezvous of a step by keys of its
 * choosing), plus the names in the spec's ops.allow. File ops (readers,
 * WriteTFRecords, SaveV2, RestoreV2) are allowed because every file they
 * open goes through the daemon's file-access policy (fs_confine.h); no
 * op runs a command or reads the process's state. docs/security.md has
 * the classification of every op family. */
#ifndef TF_RUNTIME_OP_ALLOW_H
#define TF_RUNTIME_OP_ALLOW_H

#include <stdbool.h>

#include "tf/graph.h"
#include "tf/status.h"
#include "lib/runtime/cluster_spec.h"

/* What a check needs: the spec (its ops.allow and path) and whether the
 * graph is a partition the master built (RegisterGraph), where _Send and
 * _Recv belong. */
typedef struct tf_op_allow {
  const tf_cluster_spec *spec;
  bool partition;
} tf_op_allow;

/* Whether op may run under a. */
bool tf_op_allowed(const tf_op_allow *a, const char *op);
/* The check over decoded nodes (tf__node_defs_check_fn; arg is a
 * const tf_op_allow *). */
tf_code tf_op_allow_check_defs(const tf_node_def *defs, int n, void *arg, tf_status *st);
/* The check over the nodes of g from index from on. */
tf_code tf_op_allow_check_graph(const tf_op_allow *a, const tf_graph *g, int from,
                                tf_status *st);

#endif
