/* job_run.h: one training job run by the master (docs/jobs.md "Running
 * jobs"). A job owns a thread that builds the job's replicated graph
 * (job_graph.h), opens a session on the master's own URL like any client
 * (so steps take the master's usual path: placement, partitions cached on
 * the tasks, deadlines, health), initializes the variables, starts one
 * input pipeline per worker and then drives the steps itself:
 *
 *   sync   one thread per replica runs replica_<i>/train over and over;
 *          the job's thread runs the chief's sync/update `steps` times.
 *   async  one thread per replica runs replica_<i>/train; each claims a
 *          global step number first, so exactly `steps` updates are made.
 *
 * `steps` is train.steps, or train.epochs passes over a worker's shard
 * (the records are counted once at the start). Evaluation (eval section)
 * feeds the whole test set, read by the master, to the eval replica in
 * batches every eval.every_steps and at the end; its metrics are reported
 * as test_loss and test_<metric> (test_accuracy). The job logs a line
 * every train.log_every_steps and on every change of state, kept in a ring
 * of TF_JOB_LOG_LINES lines.
 *
 * States: queued (the thread has not connected yet) -> running <-> paused
 * -> done | failed | cancelled. Pause stops the updates between two steps
 * (sync: the chief stops, replicas wait for their tokens; async: every
 * replica stops); `step N` lets a paused job make N more updates.
 * Cancel aborts the steps in flight by closing the session.
 *
 * Checkpoints (docs/checkpoint.md) are taken between steps per the spec's
 * checkpoint section, on request, at the end and on suspension; a job
 * starts from the latest good checkpoint of its directory when there is
 * one. Recovery: a failed step (a task killed or cut off, a ps that came
 * back empty) moves the job to recovering: the session is closed, the
 * job waits (recovery.wait_seconds) for every task to be up, drops its
 * container, opens a new session, restores the latest checkpoint (or
 * starts over without one) and goes on. After recovery.max_attempts
 * recoveries, or for errors no restart mends (a bad spec, a bad file),
 * the job fails with the reason. */
#ifndef TF_RUNTIME_JOB_RUN_H
#define TF_RUNTIME_JOB_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/runtime/job_spec.h"
#include "tf/status.h"

#define TF_JOB_LOG_LINES 2000     /* lines kept per job */
#define TF_JOB_LOG_LINE_MAX 1024  /* bytes of one line */
#define TF_JOB_INFO_METRICS 16    /* metrics reported */
#define TF_JOB_ID_MAX 80

typedef enum tf_job_state {
  TF_JOB_QUEUED = 0,
  TF_JOB_RUNNING,
  TF_JOB_PAUSED,
  TF_JOB_RECOVERING,
  TF_JOB_DONE,
  TF_JOB_FAILED,
  TF_JOB_CANCELLED
} tf_job_state;

/* "queued", "running", ... */
const char *tf_job_state_name(tf_job_state s);
/* done, failed or cancelled. */
bool tf_job_state_final(tf_job_state s);

/* The health of the tasks a job runs on, as the master's heartbeats see
 * it. */
typedef struct tf_job_health {
  /* The incarnation of the task of device dev while it is up, else 0. */
  uint64_t (*incarnation)(void *arg, const char *dev);
  void *arg;
} tf_job_health;

/* The cluster a job runs on (copied by tf_job_start). */
typedef struct tf_job_cluster {
  const char *master_url;          /* the session's target */
  int n_workers;                   /* worker tasks of the cluster */
  const char *const *worker_devices; /* [n_workers] full device names */
  int n_ps;
  const char *const *ps_devices;   /* [n_ps] */
  int64_t rpc_timeout_ms;          /* control calls of the session */
  tf_job_health health;            /* incarnation NULL: tasks assumed up */
  /* Called once from the job's thread when it ends; resumable: it was
   * suspended (tf_job_suspend) and its checkpoint can resume it. NULL:
   * nothing is called. */
  void (*on_end)(void *arg, const char *id, bool resumable);
  void *cb_arg;
} tf_job_cluster;

/* A snapshot of a job (tf_job_info_get). */
typedef struct tf_job_info {
  char id[TF_JOB_ID_MAX + 1];
  char name[TF_JOB_NAME_MAX + 1];
  tf_job_state state;
  bool sync;
  int workers;
  int64_t step, steps;       /* global steps done / total (0: not known yet) */
  double loss;               /* mean training loss of the last log window,
                              * else the latest; NaN before the first step */
  double steps_per_s;
  int64_t elapsed_ms;
  int64_t submitted_ms;      /* Unix time */
  char error[TF_JOB_LOG_LINE_MAX];
  int n_metrics;
  char metric_names[TF_JOB_INFO_METRICS][TF_JOB_NAME_MAX + 8];
  double metric_values[TF_JOB_INFO_METRICS];
  int recoveries;            /* automatic recoveries so far */
  char checkpoint[TF_JOB_LOG_LINE_MAX]; /* newest written or restored, "" */
  int64_t checkpoint_step;
  int n_replicas;                       /* = workers once started, else 0 */
  int64_t replica_steps[TF_JOB_WORKERS_MAX]; /* steps each replica finished */
} tf_job_info;

typedef struct tf_job tf_job;

/* Checks spec against the cluster (a model and input section; at most
 * n_workers workers; ps_tasks at most n_ps; at least one ps task), then
 * starts the job's thread. Takes spec in every case. INVALID_ARGUMENT
 * naming the spec and what does not fit. */
tf_code tf_job_start(tf_job_spec *spec, const char *id, const tf_job_cluster *c,
                     tf_job **out, tf_status *st);

void tf_job_info_get(tf_job *j, tf_job_info *out);
/* The job's id (set at start, never changed; valid while j lives). */
const char *tf_job_id(const tf_job *j);

/* action "pause", "resume", "cancel" or "step" (steps >= 1 more updates
 * of a paused job). FAILED_PRECONDITION when the job's state does not
 * allow it (naming the state); INVALID_ARGUMENT for another action. */
tf_code tf_job_control(tf_job *j, const char *action, int64_t steps,
                       tf_status *st);

/* Takes a checkpoint between two steps and waits up to timeout_ms for
 * it; *path gets it (free()). FAILED_PRECONDITION when the job has no
 * checkpoint section or is not running or paused; DEADLINE_EXCEEDED;
 * the save's error. */
tf_code tf_job_checkpoint(tf_job *j, int64_t timeout_ms, char **path,
                          tf_status *st);

/* Makes the job go back to checkpoint ckpt (NULL or "": the latest good
 * one): its steps in flight are aborted and the job restores it and goes
 * on from its step, as after a recovery (not counted as one). The
 * checkpoint is checked first: DATA_LOSS or NOT_FOUND naming it;
 * FAILED_PRECONDITION when the job is final or has no checkpoints. *note
 * (free(); may be NULL) says which checkpoint, and what was skipped. */
tf_code tf_job_restore(tf_job *j, const char *ckpt, char **note, tf_status *st);

/* Whether the job runs on the task of device dev (its workers and ps). */
bool tf_job_uses(const tf_job *j, const char *dev);

/* The job's checkpoint directory (NULL when it has none). */
const char *tf_job_checkpoint_dir(const tf_job *j);

/* Tells the job that its master is stopping: from now on it drops its
 * container on the tasks no more (a Reset through a stopping master to
 * tasks that may have stopped first would hold the master's stop for the
 * RPC deadline); the tasks keep its variables until they restart. */
void tf_job_master_stopping(tf_job *j);

/* Asks a running job to checkpoint and end without dropping its state, so
 * that a master started again resumes it (on_end gets resumable); a job
 * without checkpoints is cancelled. Returns at once. */
void tf_job_suspend(tf_job *j);

/* Log lines from number `from` on (at most max): *first is the number of
 * (*lines)[0] (> from when older ones were dropped), *next the number to
 * ask from next. The caller frees each line and the array. */
int tf_job_logs(tf_job *j, int64_t from, int max, char ***lines, int64_t *first,
                int64_t *next);

/* Cancels (if not final) and waits up to timeout_ms for the thread; true
 * when it ended. */
bool tf_job_stop(tf_job *j, int64_t timeout_ms);
/* Waits up to timeout_ms (< 0: forever) for the job's thread to end; true
 * when it did. */
bool tf_job_wait(tf_job *j, int64_t timeout_ms);
/* Holds j for a caller that goes on using it after releasing the lock
 * under which it found j (the master's job table: a JobControl checkpoint
 * waits for the job without holding the table). tf_job_free waits until
 * every hold is released; tf_job_held says whether one is, so that a
 * table drops only jobs nobody holds. tf_job_release is the holder's last
 * touch of j. */
void tf_job_hold(tf_job *j);
void tf_job_release(tf_job *j);
bool tf_job_held(tf_job *j);

/* Stops (waiting as long as it takes), waits for the holds to be released
 * and frees. NULL-safe. */
void tf_job_free(tf_job *j);

#endif
