/* master.h: the master service (tfmaster).
 *
 * Serves CreateSession, ExtendSession, RunStep, CloseSession, ListDevices,
 * Reset and ClusterStatus on the master task's address. CreateSession
 * waits (up to the spec's registration timeout) until every task of the
 * spec answers GetStatus, else fails naming the absent tasks. Per session
 * and per sorted (feeds, fetches, targets) it prunes, places, partitions
 * and registers the partitions once; each step then sends one RunGraph per
 * task. The first error of a step aborts it on every task; CleanupGraph
 * follows every step. Health checks run from tf_master_tick. */
#ifndef TF_RUNTIME_MASTER_H
#define TF_RUNTIME_MASTER_H

#include <stdint.h>

#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_master tf_master;

/* Starts serving the spec's master task (spec borrowed; must outlive the
 * master). FAILED_PRECONDITION when the spec has no "master" job with one
 * task; UNAVAILABLE when the address cannot be bound. */
tf_code tf_master_start(const tf_cluster_spec *spec, tf_master **out,
                        tf_status *st);
/* Health checks: sends GetStatus to every task whose last check is older
 * than the heartbeat period (without blocking) and marks tasks down after
 * down_after_ms without an answer. Call every heartbeat period or so. */
void tf_master_tick(tf_master *m);
/* Refuses new steps, waits up to timeout_ms for running ones. */
void tf_master_drain(tf_master *m, int64_t timeout_ms);
void tf_master_free(tf_master *m);

int tf_master_num_sessions(tf_master *m);

#endif
