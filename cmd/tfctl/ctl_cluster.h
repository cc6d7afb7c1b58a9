/* ctl_cluster.h: `tfctl cluster up|down`: a local development cluster of
 * one process per task of a spec, with per-task logs and pid files under
 * a run directory (DIR/<job>-<task>.log, DIR/<job>-<task>.pid). */
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
  int64_t timeout_ms;      /* up: wait for every task this long; 0: 15000 */
  FILE *out;               /* one line per task started or stopped; NULL: quiet */
} tf_ctl_cluster_opts;

/* "DIR/<job>-<task>.<ext>", malloc'd. */
char *tf_ctl_task_file(const char *run_dir, const char *job, int task, const char *ext);

/* Starts every task (tfmaster for job "master", tfworker otherwise; found
 * next to this executable, else in PATH) in its own session, then waits
 * until each answers GetStatus. Errors, with nothing left running:
 * FAILED_PRECONDITION "/job:ps/task:0 already running (pid N, DIR/ps-0.pid)"
 * (nothing started) or when a program cannot be run; DEADLINE_EXCEEDED
 * "tasks never answered within N ms: /job:worker/task:1 (tcp://..., exited
 * with status 1)" after stopping every started task and removing the pid
 * files. *details (if details is non-NULL) gets the tails of the logs of
 * the tasks that never answered (malloc'd; "" when none). */
tf_code tf_ctl_cluster_up(const tf_ctl_cluster_opts *o, char **details, tf_status *st);

/* SIGTERM to every task whose pid file names a live tf process, waits up
 * to the spec's drain_ms + 2 s, then SIGKILL; removes the pid files (also
 * stale ones). INTERNAL naming the pids that survived SIGKILL. */
tf_code tf_ctl_cluster_down(const tf_ctl_cluster_opts *o, tf_status *st);

#endif
