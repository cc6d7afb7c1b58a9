/* harness.h: real daemons for integration tests.
 *
 * A th_cluster is a temporary directory holding a cluster YAML on free
 * loopback ports (1 master, n_ps ps tasks, n_workers worker tasks), the
 * daemons' logs (DIR/<job>-<task>.log) and anything a test writes there.
 * Daemons run as children of the test process (killed if it dies), every
 * wait has a deadline, and th_cluster_free stops everything (SIGTERM, then
 * SIGKILL), including daemons that `tfctl cluster up` started under
 * DIR/run, and removes the directory. TH_REQUIRE fails the test after
 * printing the tails of the daemons' logs and cleaning up. TF_BIN_DIR (set
 * by the Makefile) is where tfmaster, tfworker and tfctl are. */
#ifndef TF_TEST_INTEGRATION_HARNESS_H
#define TF_TEST_INTEGRATION_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* 1 when built with AddressSanitizer or ThreadSanitizer: the daemons run
 * several times slower and their RSS carries the sanitizer's shadow and
 * quarantine, so time and memory bounds get a stated extra margin. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TH_SANITIZED 1
#else
#define TH_SANITIZED 0
#endif

#ifndef TF_BIN_DIR
#define TF_BIN_DIR "build/bin"
#endif

typedef struct th_opts {
  int n_ps;              /* default 1 */
  int n_workers;         /* default 2 */
  int64_t rpc_ms;        /* default 5000 */
  int64_t registration_ms; /* default 5000 */
  int64_t heartbeat_ms;  /* default 100 */
  int64_t down_after_ms; /* default 1000 */
  int64_t drain_ms;      /* default 1000 */
  int64_t step_ttl_ms;   /* default 10000 */
  const char *log_level; /* default "info" */
  int rpc_threads;       /* default 4 */
  /* YAML appended to the spec as written (e.g. "limits:\n  max_steps: 8\n");
   * NULL: none. */
  const char *extra_yaml;
  int64_t session_ttl_ms; /* limits.session_ttl_ms; 0: the spec's default */
  /* "tls+tcp": the tasks are at localhost (certificates name hosts) and
   * extra_yaml must hold the tls: section; NULL: tcp at 127.0.0.1. */
  const char *transport;
  /* checkpoint_dir: DIR, where the daemons let requests write (job
   * checkpoints; the master then also records its jobs in DIR/jobs).
   * Without it the spec has data_dirs: [DIR] only (reads), unless
   * extra_yaml sets these keys. */
  bool writable_dir;
} th_opts;

th_opts th_default_opts(void);

typedef struct th_task {
  char job[16];
  int task;
  int port;
  char url[64];
  char log[512];
  pid_t pid;  /* 0: not running */
  int status; /* wait status once reaped */
  const char *config; /* NULL: the cluster's; else the spec this task starts with */
} th_task;

typedef struct th_cluster {
  char dir[256];      /* the temporary directory */
  char config[300];   /* DIR/cluster.yaml */
  char run_dir[300];  /* DIR/run (the spec's run_dir, for tfctl) */
  th_opts o;
  int n_tasks;
  th_task *tasks;     /* master, ps..., worker... */
} th_cluster;

/* A free loopback TCP port (bound, read and closed). */
int th_free_port(void);

/* Makes the directory and writes the cluster YAML; starts nothing. NULL o:
 * defaults. Aborts the test on failure. */
th_cluster *th_cluster_new(const th_opts *o);
/* Stops every daemon (th_stop_all with a 3 s grace), removes the
 * directory. NULL-safe. */
void th_cluster_free(th_cluster *c);

/* The task, or NULL. */
th_task *th_task_get(th_cluster *c, const char *job, int task);

/* Starts the task's daemon with extra "K=V" environment entries (NULL
 * terminated; env may be NULL). false if it could not be started. */
bool th_start_task(th_cluster *c, th_task *t, const char *const *env);
/* Waits until the task answers GetStatus; false when it exited or the
 * deadline passed. */
bool th_wait_task(th_cluster *c, th_task *t, int64_t timeout_ms);
/* Starts every task and waits for all within timeout_ms. */
bool th_start_all(th_cluster *c, int64_t timeout_ms);
/* SIGKILL and reap. */
void th_kill_task(th_task *t);
/* Sends sig and waits up to grace_ms for the exit (then SIGKILL). Returns
 * the wait status, -1 if it could not be reaped. */
int th_stop_task(th_task *t, int sig, int64_t grace_ms);
void th_stop_all(th_cluster *c, int64_t grace_ms);

/* The resident set of process pid in KiB (VmRSS), -1 if unreadable. */
int64_t th_rss_kib(pid_t pid);

/* Starts argv (argv[0] a path) in the background with stdout and stderr
 * to log_path (NULL: /dev/null); it dies with the test. Returns its pid
 * (the caller kills and reaps it). */
pid_t th_spawn(th_cluster *c, char *const argv[], const char *log_path);

/* Writes the tails of every log in the directory (and DIR/run) to stderr. */
void th_dump_logs(th_cluster *c);

/* Writes the stacks of every thread of t (gdb, when installed) to stderr,
 * under a line naming the task: where a daemon that stopped answering
 * waits. */
void th_dump_stacks(th_task *t);

/* Writes text to DIR/name; returns the path (static buffer per call site
 * is not needed: malloc'd). */
char *th_write_file(th_cluster *c, const char *name, const char *text);

/* Appends metrics: {port_offset: N} to the spec (before the tasks start)
 * with the first N from first (in steps of 97) for which every task's
 * port + N is free on loopback; returns N. */
int th_add_metrics_section(th_cluster *c, int first);

/* Runs argv (argv[0] a path) with stdout and stderr captured (malloc'd,
 * NUL-terminated; out/err may be NULL), killing it after timeout_ms.
 * Returns its exit code, 128+signal when killed by one, -1 on timeout. */
int th_run(th_cluster *c, char *const argv[], int64_t timeout_ms, char **out, char **err);

/* TF_BIN_DIR/name, malloc'd. */
char *th_bin(const char *name);

/* Prints file:line and the message, dumps the logs, frees c (may be NULL)
 * and fails the test. */
void th_fail(th_cluster *c, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#define TH_REQUIRE(c, cond, ...)                                               \
  do {                                                                         \
    if (!(cond)) {                                                             \
      th_fail((c), __FILE__, __LINE__, __VA_ARGS__);                           \
    }                                                                          \
  } while (0)

#endif
