/* ctl_jobs.h: tfctl's job commands (docs/operations.md "Jobs"): submit,
 * jobs, status [--follow], step, pause, resume, cancel, logs [--follow],
 * checkpoint, checkpoints and restore, against the master's job methods (ctl_client.h). Each
 * prints its results to o->out and, when it fails, one line
 * "tfctl: <reason>" to o->err, and returns tfctl's exit status: 0, or 1
 * when the command failed (usage errors, exit 2, are main.c's). A reason
 * from the master is printed as the master gave it ("no job 'x' (tfctl
 * jobs lists them)", "j.yaml:7:17: model.layers[1].units: ..."). */
#ifndef TF_CMD_TFCTL_CTL_JOBS_H
#define TF_CMD_TFCTL_CTL_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd/tfctl/ctl_client.h"

typedef struct tf_ctl_jobs_opts {
  const char *master_url;
  int64_t timeout_ms;       /* each call's deadline, > 0 */
  FILE *out, *err;
  bool tty;                 /* --follow redraws one progress line on out */
  int64_t poll_ms;          /* --follow: the pause between polls; 0: 200 */
  int64_t plain_every_ms;   /* --follow on a non-terminal: a progress line at
                             * least this often (and on every state change);
                             * 0: 5000 */
  int64_t unreachable_ms;   /* --follow: give up once polls have failed for
                             * this long in a row; 0: 10000 */
} tf_ctl_jobs_opts;

/* tfctl submit PATH: reads PATH (at most TF_MSG_MAX_JOB_SPEC_BYTES, 1 MiB;
 * a file that is missing, unreadable or larger fails naming the path,
 * before any call), sends it to the master named PATH, and prints
 * "submitted job ID to MASTER" and then ID alone on the last line. */
int tf_ctl_cmd_submit(const tf_ctl_jobs_opts *o, const char *path);

/* tfctl jobs: a table JOB NAME STATE STEP LOSS ELAPSED, oldest first, or
 * "no jobs". */
int tf_ctl_cmd_jobs(const tf_ctl_jobs_opts *o);

/* tfctl status JOB: the job's summary (tf_ctl_job_summary); exit 0 what
 * ever its state. With follow: polls every poll_ms (a failed poll is
 * retried until polls have failed for unreachable_ms in a row) until the
 * state is done, failed or cancelled, showing progress (tf_ctl_job_line:
 * one line redrawn with \r on a terminal; else a line every
 * plain_every_ms and on every state change), then the summary; exit 0
 * when done, 1 when failed or cancelled (the error line says which, and
 * why it failed). */
int tf_ctl_cmd_status(const tf_ctl_jobs_opts *o, const char *job, bool follow);

/* tfctl pause|resume|cancel JOB (steps 0) and tfctl step JOB -n N
 * (action "step", steps N >= 1): prints "job ID: STATE", the state the
 * master reports after the action, and for step the job's progress
 * ("job ID: running, step 1200/3000, loss 0.4123"). */
int tf_ctl_cmd_control(const tf_ctl_jobs_opts *o, const char *job, const char *action,
                       int64_t steps);

/* tfctl logs JOB: prints the job's log lines the master keeps, from the
 * first. With follow: then polls (JobLogs from where it left off, and
 * JobStatus) until the job is done, failed or cancelled and every line is
 * printed; exit 0 (failed polls as for status --follow). */
int tf_ctl_cmd_logs(const tf_ctl_jobs_opts *o, const char *job, bool follow);

/* tfctl checkpoint JOB: the job takes a checkpoint now (the master waits
 * for it up to o->timeout_ms); prints "job ID: checkpoint at step S" and
 * then its path alone on the last line. */
int tf_ctl_cmd_checkpoint(const tf_ctl_jobs_opts *o, const char *job);

/* tfctl checkpoints JOB: a table CHECKPOINT STEP TIME SIZE, oldest first
 * (TIME in local time, "2025-06-01 14:03:07"; SIZE in B, KiB, MiB, ...),
 * or "no checkpoints yet (in DIR)". */
int tf_ctl_cmd_checkpoints(const tf_ctl_jobs_opts *o, const char *job);

/* tfctl restore JOB [CHECKPOINT]: the job goes back to CHECKPOINT (a name
 * ckpt-<step> or its path; NULL: the latest good one); prints the master's
 * note as it says it: "restoring PATH (step S)" and what was skipped. */
int tf_ctl_cmd_restore(const tf_ctl_jobs_opts *o, const char *job, const char *ckpt);

/* Whether state is final (done, failed, cancelled). */
bool tf_ctl_job_final(const char *state);

/* The progress line of j into buf (always NUL-terminated):
 *   bar:   "[========>           ] 1200/3000  40%  loss 0.4123  85.2 steps/s  ETA 21 s  running"
 *   plain: "step 1200/3000 loss 0.4123 85.2 steps/s state running"
 * Without a total (steps 0): no bar, percent or ETA, "step 1200"; no loss
 * yet: "loss -"; ETA only while running at a known rate. */
const char *tf_ctl_job_line(const tf_ctl_job *j, bool bar, char *buf, size_t n);

/* Prints j's summary to f: job, name, state, mode ("sync, 2 workers"),
 * step, loss, steps/s, elapsed, recoveries, the newest checkpoint ("PATH
 * (step S)", when there is one), error (when failed), then each metric as
 * "NAME: VALUE" with 4 decimals. */
void tf_ctl_job_summary(FILE *f, const tf_ctl_job *j);

#endif
