/* tf_config.h: TensorFlow's TF_CONFIG environment variable, e.g.
 *   {"cluster": {"chief": ["h0:2222"], "ps": ["h1:2222"],
 *                "worker": ["h2:2222", "h3:2222"]},
 *    "task": {"type": "worker", "index": 1}}
 * read with a strict JSON reader (json.h; libyaml was not used: it
 * refuses surrogate pairs and accepts duplicate keys and non-JSON).
 *
 * Mapping to this system's jobs: "chief" or "master" becomes the job
 * "master" (at most one of the two, with exactly one task); "ps", "worker"
 * and other job names keep their names; "evaluator" is left out of the
 * cluster with a note (TensorFlow runs it beside the training cluster, and
 * this system has no evaluator), and task.type "evaluator" is an error.
 * A cluster with no chief/master is an error (the master task is where
 * jobs are submitted). Top-level keys: cluster and task (required),
 * rpc_layer, environment, session_master (accepted and ignored: the
 * cluster spec's transport applies). task.index is a JSON integer (not a
 * string) naming a task of the job. A job is a list of addresses; the
 * sparse form (a mapping of indices) is not supported. Every error names
 * the field, e.g. "TF_CONFIG: task.index 2 is out of range (job 'worker'
 * has 2 tasks: 0..1)". Addresses are checked against the transport by the
 * caller (task_role.h). */
#ifndef TF_RUNTIME_TF_CONFIG_H
#define TF_RUNTIME_TF_CONFIG_H

#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_tfconfig {
  int n_jobs;
  tf_cluster_job *jobs; /* master first, then the others as written */
  char *job;            /* this process's job, mapped ("master" for chief) */
  int task;             /* task.index */
  char note[256];       /* what was left out ("evaluator"), or "" */
} tf_tfconfig;

/* Parses the value of TF_CONFIG (len bytes). *out malloc'd, freed with
 * tf_tfconfig_free; NULL and INVALID_ARGUMENT on any error. */
tf_code tf_tfconfig_parse(const char *text, size_t len, tf_tfconfig **out,
                          tf_status *st);
void tf_tfconfig_free(tf_tfconfig *c);

#endif
