/* cluster_spec_reload.h: what SIGHUP applies to a running daemon. A
 * daemon re-reads its config file and hands the fresh spec here with the
 * live one its services read: the fields that can change while serving
 * (log_level and the timeouts rpc_ms, registration_ms, step_ms,
 * heartbeat_ms, down_after_ms, drain_ms, limits.session_ttl_ms) are
 * stored into the live spec, atomically each; every other difference
 * (the task list, the transport, threads, caps, directories, metrics,
 * slurm, tls: certificates are read at start) needs a restart and is
 * only reported. A daemon whose addresses
 * come from Slurm or TF_CONFIG derives them for the fresh spec first. */
#ifndef TF_RUNTIME_CLUSTER_SPEC_RELOAD_H
#define TF_RUNTIME_CLUSTER_SPEC_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/runtime/cluster_spec.h"

/* Applies fresh's reloadable fields to live. applied gets what changed,
 * e.g. "log_level info -> debug, timeouts.rpc_ms 10000 -> 5000" ("" if
 * nothing); restart gets the changed fields that were not applied, e.g.
 * "jobs (the task list), limits.max_steps" (""). Both are truncated to
 * their sizes. keep_log_level: the level was fixed on the command line
 * (--log-level), so the file's is not applied (nor reported). */
void tf_cluster_spec_reload(tf_cluster_spec *live, const tf_cluster_spec *fresh,
                            bool keep_log_level, char *applied, size_t applied_len,
                            char *restart, size_t restart_len);

#endif
