/* op_allow.c: the op allowlist of a cluster's daemons (op_allow.h). */
#include "lib/runtime/op_allow.h"

#include <string.h>

/* Ops only the runtime may put in a graph: the master's partitioner adds
 * them between the parts of a partitioned graph. */
static bool runtime_only(const char *op) {
  return strcmp(op, "_Send") == 0 || strcmp(op, "_Recv") == 0;
}

bool tf_op_allowed(const tf_op_allow *a, const char *op) {
  if (!runtime_only(op) || a->partition) {
    return true;
  }
  for (int i = 0; a->spec != NULL && i < a->spec->n_ops_allow; i++) {
    if (strcmp(a->spec->ops_allow[i], op) == 0) {
      return true;
    }
  }
  return false;
}

static tf_code refuse(const tf_op_allow *a, const char *name, const char *op,
                      tf_status *st) {
  return tf_status_set(st, TF_PERMISSION_DENIED, "graph node '%.200s' (op %.100s) is not "
                       "allowed on this cluster (ops.allow in %s can allow it%s)", name, op,
                       a->spec != NULL ? a->spec->path : "the cluster spec",
                       runtime_only(op) ? "; the master adds _Send and _Recv itself when "
                                          "it partitions a graph" : "");
}

tf_code tf_op_allow_check_defs(const tf_node_def *defs, int n, void *arg, tf_status *st) {
  const tf_op_allow *a = arg;
  for (int i = 0; i < n; i++) {
    if (defs[i].op != NULL && !tf_op_allowed(a, defs[i].op)) {
      return refuse(a, defs[i].name ? defs[i].name : "", defs[i].op, st);
    }
  }
  return TF_OK;
}

tf_code tf_op_allow_check_graph(const tf_op_allow *a, const tf_graph *g, int from,
                                tf_status *st) {
  int n = tf_graph_num_nodes(g);
  for (int i = from < 0 ? 0 : from; i < n; i++) {
    const tf_node *node = tf_graph_node(g, i);
    if (!tf_op_allowed(a, tf_node_op(node))) {
      return refuse(a, tf_node_name(node), tf_node_op(node), st);
    }
  }
  return TF_OK;
}
