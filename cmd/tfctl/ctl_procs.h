/* ctl_procs.h: local process management for `tfctl cluster up|down` and
 * the integration harness: starting daemons with their output in a log
 * file, pid files, liveness, stopping with a deadline, log tails. */
#ifndef TF_RUNTIME_CTL_PROCS_H
#define TF_RUNTIME_CTL_PROCS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd/common/pidfile.h"
#include "tf/status.h"

/* CLOCK_MONOTONIC in milliseconds. */
int64_t tf_ctl_now_ms(void);
void tf_ctl_sleep_ms(int64_t ms);

/* `prog` in the directory of the running executable (/proc/self/exe)
 * when it is executable there, else prog itself (to be searched in PATH).
 * malloc'd. */
char *tf_ctl_find_program(const char *prog);

/* mkdir -p; errors name the directory. */
tf_code tf_ctl_mkdirs(const char *dir, tf_status *st);

typedef struct tf_ctl_spawn_opts {
  const char *log_path;        /* stdout and stderr (appended); NULL: inherit */
  const char *const *env;      /* extra "KEY=VALUE" entries, NULL-terminated */
  bool detach;                 /* setsid(): own session, survives the caller */
  bool die_with_parent;        /* SIGKILL when the calling thread's process dies */
} tf_ctl_spawn_opts;

/* Starts argv (argv[0] a path, or a name searched in PATH) as a child
 * with stdin from /dev/null. *pid gets its pid. Errors (nothing started):
 * FAILED_PRECONDITION naming the log file or the program and why exec
 * failed. */
tf_code tf_ctl_spawn(char *const argv[], const tf_ctl_spawn_opts *o, pid_t *pid,
                     tf_status *st);

/* If pid is our child and has exited: reaps it and returns its wait
 * status; else -1 (still running, or not our child). */
int tf_ctl_reap(pid_t pid);
/* Sends sig (SIGTERM) and waits up to grace_ms for pid to end, then
 * SIGKILL and up to 2 s more. Our children are reaped: returns the wait
 * status; for others returns 0 when gone, -1 if still alive. */
int tf_ctl_stop_pid(pid_t pid, int sig, int64_t grace_ms);

/* The last max_lines lines of the file (at most 64 KiB from its end),
 * each prefixed with indent; malloc'd; "" when unreadable. */
char *tf_ctl_file_tail(const char *path, int max_lines, const char *indent);

#endif
