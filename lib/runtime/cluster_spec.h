/* cluster_spec.h: the cluster spec YAML (conf/local.yaml, docs/operations.md).
 *
 *   cluster: local                 # a name, for logs
 *   transport: tcp                 # tcp (default) | ipc | inproc | tls+tcp
 *   jobs:                          # job -> task addresses, in declared order
 *     master: [127.0.0.1:7070]     # exactly one master task
 *     ps: [127.0.0.1:7071]
 *     worker: [127.0.0.1:7072, 127.0.0.1:7073]
 *   # or every job as a task count, the addresses coming from Slurm or
 *   # TF_CONFIG when a daemon starts (task_role.h, conf/slurm/):
 *   #   jobs: {master: 1, ps: 1, worker: 2}
 *   slurm:                         # under Slurm (task_role.h)
 *     base_port: 7070              # a task listens on base_port + its
 *                                  # local id on its node
 *   timeouts:                      # milliseconds
 *     rpc_ms: 10000                # one control RPC
 *     registration_ms: 10000       # CreateSession waiting for absent tasks
 *     step_ms: 0                   # default RunStep deadline (0: none)
 *     heartbeat_ms: 500            # master -> task health checks
 *     down_after_ms: 3000          # no answer for this long: task down
 *                                  # (must exceed heartbeat_ms)
 *     step_ttl_ms: 60000           # workers expire orphaned step state
 *     drain_ms: 10000              # SIGTERM: wait this long for steps
 *   threads: {inter_op: 0, rpc: 16}  # 0: number of CPUs
 *   max_message_mb: 256            # largest message a daemon accepts (>= 1)
 *   limits:                        # caps a daemon enforces (each >= 1)
 *     max_pushed_mb: 1024          # tensors pushed to a worker, not yet taken
 *     max_graphs: 1024             # partitions registered on a worker
 *     max_sessions: 256            # sessions open on the master
 *     max_steps: 64                # steps in flight on one task
 *     max_connections: 256         # connections a daemon keeps open
 *     idle_connection_ms: 300000   # a connection idle this long is closed
 *     session_ttl_ms: 60000        # a session nobody keeps alive ends
 *   checkpoint_dir: /var/lib/tf/checkpoints  # resumable jobs (jobs/); on
 *                                  # the daemons the only directory requests
 *                                  # may write (checkpoints, WriteTFRecords)
 *   data_dirs: [/srv/data]         # directories requests may read (data,
 *                                  # graph files); neither key: no file
 *                                  # access (cluster_spec_confine.h)
 *   ops: {allow: [Name, ...]}      # ops allowed beyond the default set
 *                                  # (op_allow.h; unknown names are errors)
 *   run_dir: run/local             # tfctl cluster up: pid files and logs
 *   log_level: info                # err | warning | notice | info | debug
 *   metrics:                       # Prometheus /metrics (docs/operations.md)
 *     port_offset: 1000            # each task serves at its port + this (0: off;
 *                                  # tcp and tls+tcp only)
 *     host: 0.0.0.0                # default: the task's own host
 *   auth:                          # authentication (docs/security.md), or
 *                                  # `auth: none` (trusted networks only)
 *     key_file: keys/cluster.key   # the tasks' key: every RPC (required)
 *     client_key_file: keys/client.key     # clients: sessions, jobs
 *     readonly_key_file: keys/readonly.key # clients: health, status, jobs
 *     window_ms: 30000             # request timestamps this close to the clock
 *   tls:                           # required with transport tls+tcp, refused
 *                                  # otherwise (docs/security.md)
 *     ca_file: certs/ca.crt        # the cluster CA (PEM): peers must present
 *                                  # a certificate it signed
 *     cert_key_file: certs/h1.pem  # this daemon's certificate chain and key
 *                                  # (one PEM), presented as server and as
 *                                  # client; tfmaster/tfworker --tls-cert-key
 *                                  # FILE overrides it (per-host certificates)
 *     client_cert_key_file: certs/client.pem  # optional: what tfctl and
 *                                  # remote sessions present (default
 *                                  # cert_key_file; tfctl --cert overrides)
 *
 * Without an auth section a daemon runs unauthenticated only on loopback
 * addresses; elsewhere it refuses to start (tf_cluster_spec_check_exposure).
 * Relative key files are relative to the spec file's directory.
 * Addresses are host:port for tcp and tls+tcp, a socket path for ipc, a
 * name for inproc. With tls+tcp the hosts must be DNS names, the names in
 * the tasks' certificates (mbedTLS 2.28 does not match IP addresses).
 * Relative paths (run_dir, checkpoint_dir, the tls files) are taken from
 * the spec file's directory. No two tasks may have one endpoint: host names are
 * resolved (all together, within 2 s; a name that does not resolve is no
 * error, it is compared as written, case-folded), IPv6 addresses compared
 * in canonical form, socket paths with '.' and '..' folded, e.g.
 *   "c.yaml:4:29: jobs.worker[1]: /job:worker/task:1 at '127.0.0.1:17101'
 *    has the address of /job:worker/task:0 at 'localhost:17101' (both are
 *    127.0.0.1 port 17101); each task needs an address of its own".
 * Unknown keys are errors. Every error names the file, line and column and
 * what was expected, e.g.
 *   "conf/x.yaml:4:11: jobs.worker[1]: expected host:port, got 'abc'". */
#ifndef TF_RUNTIME_CLUSTER_SPEC_H
#define TF_RUNTIME_CLUSTER_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"

typedef struct tf_cluster_job {
  char *name;
  int n_tasks;
  char **addrs; /* n_tasks addresses as written; NULL if given as a count */
} tf_cluster_job;

typedef enum tf_cluster_auth_mode {
  TF_CLUSTER_AUTH_UNSET = 0, /* no auth section */
  TF_CLUSTER_AUTH_NONE,      /* auth: none */
  TF_CLUSTER_AUTH_KEY,       /* auth: {key_file: ...} */
} tf_cluster_auth_mode;

typedef struct tf_cluster_spec {
  char *path;      /* the file read, or the name given to parse */
  char *name;      /* "cluster", default "tf" */
  char *transport; /* "tcp" default */
  int n_jobs;
  tf_cluster_job *jobs; /* in declared order */
  /* The timeouts SIGHUP may change while the daemon runs (see
   * tf_cluster_spec_reload) are atomics: plain reads load them. */
  _Atomic int64_t rpc_timeout_ms, registration_timeout_ms, step_timeout_ms;
  _Atomic int64_t heartbeat_ms, down_after_ms, drain_ms;
  int64_t step_ttl_ms;
  int64_t max_message_bytes; /* > 0 */
  /* limits: (each > 0) */
  int64_t max_pushed_bytes;  /* pushed to a worker and not yet received */
  int max_graphs;            /* registered on a worker */
  int max_sessions;          /* open on the master */
  int max_steps;             /* in flight on one task */
  int max_connections;       /* open to one daemon */
  int64_t idle_connection_ms;
  _Atomic int64_t session_ttl_ms; /* without keep-alive, a session ends */
  int inter_op_threads;      /* 0: CPUs */
  int rpc_threads;           /* default 16 */
  char *checkpoint_dir;      /* NULL if unset */
  char *run_dir;             /* default "run/<name>" */
  int log_level;             /* syslog priority, default LOG_INFO */
  bool log_level_set;        /* log_level was written in the file */
  int metrics_port_offset;   /* 0: no metrics from the spec */
  char *metrics_host;        /* NULL: each task's own host */
  int slurm_base_port;       /* slurm.base_port; 0 unset */
  /* tls: (all NULL without the section; transport tls+tcp has it) */
  char *tls_ca_file;
  char *tls_cert_key_file;
  char *tls_client_cert_key_file; /* NULL: tls_cert_key_file */
  bool counts;               /* jobs are task counts, no addresses yet */
  tf_cluster_auth_mode auth_mode;
  char *auth_key_file;          /* the tasks' key (KEY mode) */
  char *auth_client_key_file;   /* NULL: none */
  char *auth_readonly_key_file; /* NULL: none */
  int64_t auth_window_ms;       /* default 30000 */
  /* file access and ops (cluster_spec_confine.c) */
  char **data_dirs;          /* n_data_dirs, absolute after load */
  int n_data_dirs;
  char **ops_allow;          /* n_ops_allow registered op names */
  int n_ops_allow;
} tf_cluster_spec;

tf_code tf_cluster_spec_load(const char *path, tf_cluster_spec **out,
                             tf_status *st);
/* Parses text; name stands for the file in errors. */
tf_code tf_cluster_spec_parse(const char *text, size_t len, const char *name,
                              tf_cluster_spec **out, tf_status *st);
void tf_cluster_spec_free(tf_cluster_spec *s);

/* Replaces s's jobs with jobs (n_jobs of them, each with addresses), as
 * Slurm or TF_CONFIG gave them (source names it in errors: "TF_CONFIG").
 * Checks them as the file's are: exactly one master task, addresses
 * well-formed for s's transport, no two tasks at one endpoint
 * (INVALID_ARGUMENT). s owns jobs and their strings afterwards, also if
 * this fails (they are freed then, s unchanged). */
tf_code tf_cluster_spec_set_jobs(tf_cluster_spec *s, tf_cluster_job *jobs,
                                 int n_jobs, const char *source,
                                 tf_status *st);
/* FAILED_PRECONDITION if s's jobs are task counts without addresses yet
 * (what a program that cannot derive them says: tfctl, cluster up, a
 * daemon given --job/--task), else OK. */
tf_code tf_cluster_spec_check_addressed(const tf_cluster_spec *s,
                                        tf_status *st);

/* The job named name, or NULL. */
const tf_cluster_job *tf_cluster_spec_job(const tf_cluster_spec *s,
                                          const char *name);
/* The task's URL ("tcp://127.0.0.1:7072"), malloc'd; NULL if no such task. */
char *tf_cluster_task_url(const tf_cluster_spec *s, const char *job, int task);
/* Where task (job, task) serves its Prometheus metrics by the spec's
 * metrics section: *out gets "host:port" (malloc'd; the task's host or
 * metrics.host, the task's port + metrics.port_offset), or NULL when the
 * spec has no metrics (port_offset 0 or absent). INVALID_ARGUMENT when the
 * port would pass 65535, NOT_FOUND for an unknown task. */
tf_code tf_cluster_metrics_address(const tf_cluster_spec *s, const char *job, int task,
                                   char **out, tf_status *st);

/* NOT_FOUND "no task /job:worker/task:5 in conf/x.yaml (job 'worker' has 2
 * tasks: 0..1)" or "no job 'x' in ... (jobs: master, ps, worker)". */
tf_code tf_cluster_spec_check_task(const tf_cluster_spec *s, const char *job,
                                   int task, tf_status *st);
/* As tf_cluster_spec_check_task for a task a worker would serve: job
 * "master" is INVALID_ARGUMENT "job 'master' in conf/x.yaml is the
 * master's task, not a worker job (worker jobs: ps, worker)" (the master
 * service serves it, on its address). */
tf_code tf_cluster_spec_check_worker_task(const tf_cluster_spec *s,
                                          const char *job, int task,
                                          tf_status *st);

#endif
