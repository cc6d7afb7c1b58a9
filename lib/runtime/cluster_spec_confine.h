/* cluster_spec_confine.h: the cluster spec's file-access and op keys
 * (internal to cluster_spec.c, and the daemons' policy):
 *
 *   data_dirs: [/srv/data, datasets]   # read-only for requests
 *   checkpoint_dir: /var/lib/tf/ckpt   # read-write for requests
 *   ops: {allow: [MyOp, ...]}          # ops allowed beyond the default
 *
 * Relative directories are taken against the spec file's directory. */
#ifndef TF_RUNTIME_CLUSTER_SPEC_CONFINE_H
#define TF_RUNTIME_CLUSTER_SPEC_CONFINE_H

#include "lib/core/base/fs_confine.h"
#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/spec_yaml.h"

/* data_dirs: a directory or a list of 1..64 non-empty directories, into
 * s->data_dirs. INVALID_ARGUMENT naming file:line:col otherwise. */
tf_code tf__cluster_parse_data_dirs(tf__spec *y, yaml_node_t *v, tf_cluster_spec *s);
/* ops: a mapping with allow: a list of registered op names, into
 * s->ops_allow. An unknown op is INVALID_ARGUMENT naming file:line:col. */
tf_code tf__cluster_parse_ops(tf__spec *y, yaml_node_t *v, tf_cluster_spec *s);
void tf__cluster_confine_free(tf_cluster_spec *s);

/* The file-access policy of a daemon serving s: data_dirs read-only,
 * checkpoint_dir read-write (made, with its parents, when missing); with
 * neither, a policy that allows nothing. FAILED_PRECONDITION or NOT_FOUND
 * naming the key and directory when one cannot be opened. */
tf_code tf_cluster_fs_policy(const tf_cluster_spec *s, tf_fs_policy **out, tf_status *st);

#endif
