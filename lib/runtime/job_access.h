/* job_access.h: a submitted job's paths and graph against the cluster's
 * policies, before the job starts (internal to the master). */
#ifndef TF_RUNTIME_JOB_ACCESS_H
#define TF_RUNTIME_JOB_ACCESS_H

#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/job_spec.h"

/* Every data file the job names (input.train/test) and its graph file must
 * lie in a directory the process's file-access policy lets requests read,
 * its checkpoint.dir in one it lets them write (fs_confine.h; OK when no
 * policy is installed); the graph file's ops must be allowed by cluster's
 * ops.allow rules (op_allow.h). PERMISSION_DENIED naming the job spec, the
 * key, the path and the allowed directories (or the node and op). */
tf_code tf__job_access_check(const tf_cluster_spec *cluster, const tf_job_spec *s,
                             tf_status *st);

#endif
