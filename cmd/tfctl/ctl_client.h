/* ctl_client.h: the client calls tfctl and the integration harness make
 * (docs/wire.md): GetStatus straight to a task, ClusterStatus,
 * ListDevices and the job methods (SubmitJob, ListJobs, JobStatus,
 * JobControl, JobLogs, JobCheckpoints) to the master, each a blocking call with a
 * deadline whose reply body is decoded into plain structs. */
#ifndef TF_RUNTIME_CTL_CLIENT_H
#define TF_RUNTIME_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/status.h"

/* One task as ClusterStatus (or a direct GetStatus) reports it. */
typedef struct tf_ctl_task {
  char *job;
  int task;
  char *url;
  bool up;
  uint64_t incarnation;
  int n_devices;
  char **devices;      /* full device names */
  int64_t last_ok_ms;  /* age of the last good answer; -1 never */
  char *error;         /* why it is down ("" when up) */
  int running_steps;   /* GetStatus: steps running there; -1 unknown */
  char *jobs;          /* ClusterStatus: the jobs using it, "id@step ..."; may be NULL */
  /* GetStatus: the counters the task sent (has: TF_MSG_STATUS_* bits,
   * lib/transport/messages.h); the others are 0. */
  unsigned has;
  uint64_t steps_run, bytes_sent, bytes_received;
  int64_t mem_in_use, mem_peak;
} tf_ctl_task;

void tf_ctl_task_fini(tf_ctl_task *t);
void tf_ctl_tasks_free(tf_ctl_task *ts, int n);

/* GetStatus to the task at url, waiting up to timeout_ms. On OK fills
 * out's job, task, incarnation, devices and counters (url copied, up
 * true). Errors:
 * the call's status (DEADLINE_EXCEEDED / UNAVAILABLE naming the URL, or
 * the error the task replied with) or INVALID_ARGUMENT for a malformed
 * reply. */
tf_code tf_ctl_get_status(const char *url, int64_t timeout_ms, tf_ctl_task *out,
                          tf_status *st);

/* Whether the task at url is /job:job/replica:0/task:task and serving: a
 * GetStatus meant for that task (its header's `to`) within timeout_ms
 * whose reply names that job and task (and whose header's `from`, when
 * the server fills it in, is that task). OK when it is; FAILED_PRECONDITION
 * "wrong task at address: tcp://... is /job:ps/replica:0/task:0, expected
 * /job:worker/replica:0/task:1" when another task answers (a server that
 * checks `to` refuses with FAILED_PRECONDITION itself); else the error of
 * tf_ctl_get_status. */
tf_code tf_ctl_probe_task(const char *url, const char *job, int task, int64_t timeout_ms,
                          tf_status *st);

/* Whether the server at url answers within timeout_ms: any reply counts
 * except one saying DEADLINE_EXCEEDED, UNAVAILABLE or CANCELLED (a daemon
 * that is shutting down is not serving), which the caller cannot tell from
 * a call that got no reply. A malformed URL never answers. */
bool tf_ctl_answers(const char *url, int64_t timeout_ms);

/* ClusterStatus to the master: *out gets *n tasks (free with
 * tf_ctl_tasks_free). The master itself is listed first (added as up when
 * the master's reply leaves it out, since it answered). */
tf_code tf_ctl_cluster_status(const char *master_url, int64_t timeout_ms,
                              tf_ctl_task **out, int *n, tf_status *st);

/* One device as ListDevices reports it. */
typedef struct tf_ctl_device {
  char *name;   /* "/job:ps/replica:0/task:0/device:CPU:0" */
  char *type;   /* "CPU" */
  uint64_t incarnation;
  char *task;   /* "/job:ps/replica:0/task:0" */
  char *url;
} tf_ctl_device;

void tf_ctl_devices_free(tf_ctl_device *ds, int n);

/* ListDevices to the master: *out gets *n devices in the master's order. */
tf_code tf_ctl_list_devices(const char *master_url, int64_t timeout_ms,
                            tf_ctl_device **out, int *n, tf_status *st);

/* ---- jobs ------------------------------------------------------------------ */

typedef struct tf_ctl_metric {
  char *name;   /* "test_accuracy" */
  double value;
} tf_ctl_metric;

/* A job as JobStatus, JobControl and ListJobs report it (messages.h,
 * tf_msg_job_info): strings are never NULL. */
typedef struct tf_ctl_job {
  char *job;           /* the id */
  char *name;          /* the spec's name */
  char *state;         /* queued, running, paused, recovering, done, failed, cancelled */
  char *mode;          /* sync, async; "" when the master did not say */
  int workers;
  int64_t step, steps; /* steps 0: the total is not known */
  double loss;         /* NaN: none yet */
  double steps_per_s;
  int64_t elapsed_ms, submitted_ms;
  char *error;         /* "" unless failed */
  int n_metrics;
  tf_ctl_metric *metrics;
  int n_replica_steps;    /* 0: not reported */
  int64_t *replica_steps; /* steps each replica finished */
  int recoveries;         /* automatic recoveries so far */
  char *checkpoint;       /* the newest checkpoint written or restored, "" */
  int64_t checkpoint_step;
  char *note;             /* what a checkpoint or restore did, "" */
} tf_ctl_job;

void tf_ctl_job_fini(tf_ctl_job *j);
void tf_ctl_jobs_free(tf_ctl_job *js, int n);

/* SubmitJob: spec[0..len) (a job spec's YAML, at most
 * TF_MSG_MAX_JOB_SPEC_BYTES) under name (the file it came from); *job gets
 * the new job's id (malloc'd). The master's refusal comes back as it sent
 * it (e.g. INVALID_ARGUMENT "j.yaml:7:17: model.layers[1].units: ..."). */
tf_code tf_ctl_submit_job(const char *master_url, int64_t timeout_ms, const void *spec,
                          size_t len, const char *name, char **job, tf_status *st);

/* ListJobs: *out gets *n jobs, oldest first (free with tf_ctl_jobs_free). */
tf_code tf_ctl_list_jobs(const char *master_url, int64_t timeout_ms, tf_ctl_job **out,
                         int *n, tf_status *st);

/* JobStatus of job into *out (tf_ctl_job_fini; zeroed on error). An unknown
 * id is the master's NOT_FOUND "no job 'x' (tfctl jobs lists them)". */
tf_code tf_ctl_job_status(const char *master_url, int64_t timeout_ms, const char *job,
                          tf_ctl_job *out, tf_status *st);

/* JobControl: action "pause", "resume", "cancel" or "step" (steps: how many
 * more global steps, >= 1, for "step"; 0 otherwise); *out gets the job as
 * the master reports it after the action. */
tf_code tf_ctl_job_control(const char *master_url, int64_t timeout_ms, const char *job,
                           const char *action, int64_t steps, tf_ctl_job *out,
                           tf_status *st);

/* JobControl "checkpoint": the job takes a checkpoint now; out->note gets
 * its path. The call's deadline is also how long the master waits for the
 * job to take it. FAILED_PRECONDITION from the master when the job has no
 * checkpoint section or is not running or paused. */
tf_code tf_ctl_job_checkpoint(const char *master_url, int64_t timeout_ms, const char *job,
                              tf_ctl_job *out, tf_status *st);

/* JobControl "restore": the job goes back to checkpoint ckpt (NULL or "":
 * its latest good one; else a name ckpt-<step>, or a path as
 * tf_ctl_job_checkpoint gives it); out->note says which, and what was
 * skipped. */
tf_code tf_ctl_job_restore(const char *master_url, int64_t timeout_ms, const char *job,
                           const char *ckpt, tf_ctl_job *out, tf_status *st);

/* One checkpoint of a job as JobCheckpoints reports it. */
typedef struct tf_ctl_ckpt {
  char *name;        /* "ckpt-300" */
  int64_t step;
  int64_t time_ms;   /* when it was committed, Unix time in ms */
  int64_t bytes;     /* the size of its files */
} tf_ctl_ckpt;

/* A job's checkpoint directory and its checkpoints, oldest first. */
typedef struct tf_ctl_ckpts {
  char *dir;
  int n;
  tf_ctl_ckpt *items;
} tf_ctl_ckpts;

void tf_ctl_ckpts_fini(tf_ctl_ckpts *c);

/* JobCheckpoints of job into *out (tf_ctl_ckpts_fini; zeroed on error). */
tf_code tf_ctl_job_checkpoints(const char *master_url, int64_t timeout_ms, const char *job,
                               tf_ctl_ckpts *out, tf_status *st);

/* A job's log lines as one JobLogs call returns them: lines[i] is line
 * first + i; next is where the following call starts. */
typedef struct tf_ctl_log {
  int64_t first, next;
  int n_lines;
  char **lines;
} tf_ctl_log;

void tf_ctl_log_fini(tf_ctl_log *l);

/* JobLogs of job from line `from` (>= 0) into *out (tf_ctl_log_fini). */
tf_code tf_ctl_job_logs(const char *master_url, int64_t timeout_ms, const char *job,
                        int64_t from, tf_ctl_log *out, tf_status *st);

#endif
