/* ctl_cluster.h: `tfctl cluster up|down|restart`: a local development
 * cluster of one process per task of a spec, with per-task logs and pid
 * files under a run directory (DIR/<job>-<task>.log, DIR/<job>-<task>.pid);
 * --only TASK (and restart) act on one task. */
#ifndef TF_RUNTIME_CTL_CLUSTER_H
#define TF_RUNTIME_CTL_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_ctl_cluster_opts {
  const tf_cluster_spec *spec;
  const char *config_path; /* the spec's file, given to every daemon */
  const char *run_dir;     /* NULL: spec->run_dir */
  int64_t timeout_ms;      /* up: the bound on the wait; 0: the spec's
                            * registration_ms, else its rpc_ms */
  FILE *out;               /* one line per task started or stopped; NULL: quiet */
  const char *only_job;    /* non-NULL: only /job:only_job/task:only_task */
  int only_task;
} tf_ctl_cluster_opts;

/* Parses a task named as "/job:J/task:N", "/job:J/replica:0/task:N",
 * "J:N" or "J-N" (a systemd instance name) into job (job_len bytes) and
 * *task, and checks the spec has it. INVALID_ARGUMENT for another form,
 * NOT_FOUND naming the spec's jobs and task ranges. */
tf_code tf_ctl_parse_task(const tf_cluster_spec *s, const char *text, char *job, size_t job_len,
                          int *task, tf_status *st);

/* "DIR/<job>-<task>.<ext>", malloc'd. */
char *tf_ctl_task_file(const char *run_dir, const char *job, int task, const char *ext);

/* Starts every task (tfmaster for job "master", tfworker otherwise; found
 * next to this executable, else in PATH) in its own session, then waits
 * until each serves as itself at its address (tf_ctl_probe_task: another
 * task answering there does not count) and the master sees every task up,
 * all within the timeout. Errors, with nothing left running and the pid
 * files removed:
 * FAILED_PRECONDITION "already running: /job:ps/task:0 (pid N,
 * DIR/ps-0.pid); ..." (nothing started), or a program that cannot be run;
 * FAILED_PRECONDITION "/job:worker/task:1 (tcp://...) exited with status 1:
 * <the last line of its log>" as soon as a task exits (also "killed by
 * signal 9 (Killed): ..."; several tasks comma-separated);
 * DEADLINE_EXCEEDED "not serving within N ms: /job:worker/task:1
 * (tcp://...) <why: no answer, wrong task at address: ...>".
 * *details (if details is non-NULL) gets the last lines of the logs of the
 * tasks named (malloc'd; "" when none). With only_job, starts that one
 * task (the others may run or not) and waits until it serves as itself;
 * the master's view of it follows at its next health check. */
tf_code tf_ctl_cluster_up(const tf_ctl_cluster_opts *o, char **details, tf_status *st);

/* SIGTERM to every task whose pid file names a live tf process, waits up
 * to the spec's drain_ms + 2 s, then SIGKILL; removes the pid files (also
 * stale ones). INTERNAL naming the pids that survived SIGKILL. Prints
 * "nothing running under DIR" to out when no pid file names a live
 * daemon. With only_job, stops that one task. */
tf_code tf_ctl_cluster_down(const tf_ctl_cluster_opts *o, tf_status *st);

#endif
