/* daemon.h: what tfmaster and tfworker share (daemon.c): flag parsing,
 * loading the cluster spec,
 * and the libuv loop that runs a started service: a housekeeping timer,
 * SIGTERM/SIGINT -> drain and exit 0, SIGHUP -> re-read the config and
 * apply what can change while serving (cluster_spec_reload.h), the pid
 * file, READY=1 / RELOADING=1 / STOPPING=1 / WATCHDOG=1 to the service
 * manager (cmd/common/notify.h). The drain runs on a thread
 * so the loop (and the watchdog) keep running; a second SIGINT while
 * draining exits at once, a second SIGTERM does not (one stop may have
 * several senders). Exit codes: 0 after a clean stop, 1 for a bad config
 * or a failed start, 2 for bad usage, 3 after a second SIGINT cut the
 * drain short. */
#ifndef TF_CMD_COMMON_DAEMON_H
#define TF_CMD_COMMON_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/transport/auth.h"
#include "lib/runtime/log.h"

#define TF_EXIT_CONFIG 1
#define TF_EXIT_USAGE 2
#define TF_EXIT_FORCED 3

typedef struct tf_daemon_args {
  const char *config;
  const char *job;  /* tfworker only */
  int task;         /* tfworker only; -1 unset */
  int log_level;    /* -1: the spec's */
  const char *pid_file; /* NULL: none */
  char instance_job[64]; /* --instance JOB-N: the job (job points here) */
  bool role_from_env;    /* tf_daemon_take_role derived the task (role.h) */
  const char *metrics_address; /* --metrics-address HOST:PORT|off; NULL: the spec's */
  const char *tls_cert_key; /* --tls-cert-key FILE; NULL: the spec's tls.cert_key_file */
} tf_daemon_args;

/* Parses a non-negative decimal int; false for anything else. */
bool tf_daemon_parse_int(const char *s, int *out);

/* Splits a systemd instance name "JOB-N" (tfworker@ps-0) at its last '-'
 * into job (copied into job, job_len bytes) and task. False, with a
 * reason in why (why_len bytes), when it is not of that form. */
bool tf_daemon_parse_instance(const char *s, char *job, size_t job_len, int *task,
                              char *why, size_t why_len);

/* Parses argv into a; with_task accepts --job and --task, both or neither
 * (then a->job is NULL: tf_daemon_take_role, role.h, derives them), or
 * --instance JOB-N instead of both. --pid-file FILE: both daemons.
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
  /* Optional: the phase of free under way (named when a stop hangs). */
  const char *(*free_phase)(void);
  int64_t drain_ms;
  char status[256];       /* STATUS= text once serving */
  /* SIGHUP: the config re-read, the live spec its reloadable fields go
   * to (the service reads them there), whether --log-level pinned the
   * level, and whether the tick period is the spec's heartbeat_ms. */
  const char *config_path;
  tf_cluster_spec *spec;
  bool keep_log_level;
  bool tick_is_heartbeat;
  bool role_from_env;     /* re-derive the re-read spec's addresses too */
  const char *pid_file;   /* written before READY=1, removed at exit */
  /* Prometheus metrics (cmd/common/metrics_http.h): served for task
   * (job, task) of spec at metrics_address (NULL: the spec's metrics
   * section) from start to stop; spec NULL: none. */
  const char *job;
  int task;
  const char *metrics_address;
  /* private */
  struct tf_metrics_http *metrics;
  uv_loop_t loop;
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t tick_timer, watchdog_timer;
  uv_async_t drained;     /* the drain thread is done */
  pthread_t drain_thread;
  uint64_t drain_t0;      /* uv_now at the first signal */
  bool watchdog_on, stopping, draining;
} tf_daemon;

/* Runs d's loop until SIGTERM/SIGINT, drains (d->drain, on a thread:
 * it must return within about d->spec->drain_ms, read at the signal),
 * frees d->svc. Serves metrics while the loop runs. Returns the process
 * exit code (0; 1 if the loop could not be set up, the pid file names
 * another live tf daemon or the metrics address cannot be served). */
int tf_daemon_run(tf_daemon *d);

/* Keeps freed memory for reuse instead of returning it to the kernel, as
 * TensorFlow's BFC allocator does: glibc would serve every block over
 * 32 MiB (tensors, NNG messages) from a fresh mmap, and faulting in fresh
 * pages costs more than the copies a large transfer makes. The process
 * then stays at its peak size. TF_DAEMON_KEEP_MMAP=1 keeps glibc's
 * defaults. */
void tf_daemon_tune_memory(void);

/* Logs with timestamps unless stderr goes to journald. */
void tf_daemon_setup_log(void);

/* Loads the spec at path; on error logs one line and returns NULL. */
tf_cluster_spec *tf_daemon_load_spec(const char *path);
/* Installs the process's file-access policy from spec's data_dirs and
 * checkpoint_dir (every file a request names is opened through it;
 * neither key: none may be opened); on error (a directory
 * that cannot be opened) logs one line and returns -1. Once, at start. */
int tf_daemon_confine(const tf_cluster_spec *spec);
/* Logs what tf_daemon_confine installed (once the daemon started, so a
 * start that fails logs one line). */
void tf_daemon_confine_note(const tf_cluster_spec *spec);

/* Authentication for the daemon serving (job, task): refuses (logs, returns
 * TF_EXIT_CONFIG) a task that would listen beyond loopback without an auth
 * section (tf_cluster_check_exposure) or whose key files cannot be used;
 * otherwise loads the spec's keys, makes them the process's keyring
 * (tf_auth_set_process: the daemon's servers require them, its clients
 * sign with the task key), logs a warning when unauthenticated, and
 * returns 0 with *out the keyring (NULL: none) to free after the daemon
 * has stopped. */
int tf_daemon_setup_auth(const tf_cluster_spec *spec, const char *job, int task,
                         tf_auth **out);
/* Logs what tf_daemon_setup_auth found (keys loaded, or the warning that
 * the daemon is unauthenticated): called once the daemon has started, so a
 * daemon that fails to start says only why. */
void tf_daemon_auth_note(void);

/* transport tls+tcp: loads the spec's CA and this daemon's certificate
 * (a->tls_cert_key, else tls.cert_key_file) and makes them the process's
 * TLS configuration, warning when the certificate has expired. Returns 0,
 * or TF_EXIT_CONFIG after logging why (the file and what is wrong). */
int tf_daemon_setup_tls(const tf_cluster_spec *spec, const tf_daemon_args *a);

#endif
