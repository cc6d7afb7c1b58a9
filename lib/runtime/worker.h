/* worker.h: the worker service: one task of a job (worker or ps).
 *
 * Serves GetStatus, RegisterGraph, RunGraph, TensorPush, CleanupGraph,
 * AbortStep, DeregisterGraph and WorkerReset (docs/wire.md) on the task's
 * address. It holds the task's CPU device, one resource manager (variables
 * and queues outlive sessions, as in TF), registered partition graphs with
 * their executors, and the per-step rendezvous. Tensors for other tasks
 * are pushed to the receiving worker over its tensor stream, which
 * GetStatus advertises (strings and dead values by TensorPush). RunGraph
 * and TensorPush are served on NNG's threads. Linkable into one
 * process with a master and clients (tests, benchmarks). */
#ifndef TF_RUNTIME_WORKER_H
#define TF_RUNTIME_WORKER_H

#include <stdint.h>

#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_worker tf_worker;

/* Starts serving task `task` of job `job` of spec (borrowed; must outlive
 * the worker). Errors: NOT_FOUND for a task not in the spec, UNAVAILABLE
 * when the address cannot be bound (naming it). */
tf_code tf_worker_start(const tf_cluster_spec *spec, const char *job, int task,
                        tf_worker **out, tf_status *st);
/* Housekeeping, about once a second: expires orphaned step state (TTL). */
void tf_worker_tick(tf_worker *w);
/* Refuses new RunGraph requests (UNAVAILABLE "worker is shutting down"),
 * waits up to timeout_ms for running steps, then aborts what is left. */
void tf_worker_drain(tf_worker *w, int64_t timeout_ms);
/* Stops serving and frees. NULL-safe. */
void tf_worker_free(tf_worker *w);
/* The phase of tf_worker_free running now in this process ("ending the
 * running steps", ...), or NULL: what a stop that hangs is waiting for.
 * Any thread may call it. */
const char *tf_worker_stop_phase(void);

uint64_t tf_worker_incarnation(const tf_worker *w);
/* "/job:worker/replica:0/task:1/device:CPU:0" */
const char *tf_worker_device_name(const tf_worker *w);
/* Steps running now, and step tables the rendezvous holds. */
int tf_worker_running_steps(tf_worker *w);
int tf_worker_live_step_tables(tf_worker *w);

#endif
