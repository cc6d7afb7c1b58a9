/* daemon.h: what tfmaster and tfworker share (daemon.c): flag parsing,
 * loading the cluster spec,
 * and the libuv loop that runs a started service: a housekeeping timer,
 * SIGTERM/SIGINT -> drain and exit 0, READY=1 / STOPPING=1 / WATCHDOG=1 to
 * the service manager (cmd/common/notify.h). The drain runs on a thread
 * so the loop (and the watchdog) keep running; a second SIGTERM/SIGINT
 * while draining exits at once. Exit codes: 0 after a clean stop, 1 for a
 * bad config or a failed start, 2 for bad usage, 3 after a second signal
 * cut the drain short. */
#ifndef TF_CMD_COMMON_DAEMON_H
#define TF_CMD_COMMON_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/log.h"

#define TF_EXIT_CONFIG 1
#define TF_EXIT_USAGE 2
#define TF_EXIT_FORCED 3

typedef struct tf_daemon_args {
  const char *config;
  const char *job;  /* tfworker only */
  int task;         /* tfworker only; -1 unset */
  int log_level;    /* -1: the spec's */
} tf_daemon_args;

/* Parses a non-negative decimal int; false for anything else. */
bool tf_daemon_parse_int(const char *s, int *out);

/* Parses argv into a; with_task accepts --job and --task, both or neither
 * (then a->job is NULL: tf_daemon_take_role, role.h, derives them).
 * Returns 0, or TF_EXIT_USAGE after printing one line and the usage. */
int tf_daemon_parse_args(int argc, char **argv, bool with_task,
                         const char *usage, tf_daemon_args *a);

/* A started service as the loop sees it. */
typedef struct tf_daemon {
  const char *prog;       /* "tfworker" */
  void *svc;
  void (*tick)(void *svc);
  int64_t tick_ms;
  void (*drain)(void *svc, int64_t timeout_ms);
  void (*free)(void *svc);
  int64_t drain_ms;
  char status[256];       /* STATUS= text once serving */
  /* private */
  uv_loop_t loop;
  uv_signal_t sig_term, sig_int;
  uv_timer_t tick_timer, watchdog_timer;
  uv_async_t drained;     /* the drain thread is done */
  pthread_t drain_thread;
  uint64_t drain_t0;      /* uv_now at the first signal */
  bool watchdog_on, stopping, draining;
} tf_daemon;

/* Runs d's loop until SIGTERM/SIGINT, drains (d->drain, on a thread:
 * it must return within about drain_ms), frees d->svc. Returns the
 * process exit code (0; 1 if the loop could not be set up). */
int tf_daemon_run(tf_daemon *d);

/* Keeps freed memory for reuse instead of returning it to the kernel, as
 * TensorFlow's BFC allocator does: glibc would serve every block over
 * 32 MiB (tensors, NNG messages) from a fresh mmap, and faulting in fresh
 * pages costs more than the copies a large transfer makes. The process
 * then stays at its peak size. TF_DAEMON_KEEP_MMAP=1 keeps glibc's
 * defaults. */
void tf_daemon_tune_memory(void);

/* Loads the spec at path; on error logs one line and returns NULL. */
tf_cluster_spec *tf_daemon_load_spec(const char *path);

#endif
