/* bench_cluster.h: the local cluster of real daemons the cluster benches
 * (bench_dist.c, bench_replicas.c) start: a master, ps tasks and workers
 * on free loopback ports, children of the bench that die with it, stopped
 * at exit and on SIGINT/SIGTERM (bc_on_signal, async-signal-safe), their
 * logs' tails printed when the bench dies. Header-only: each bench is one
 * program built from its own .c file. Before including, define BC_NAME
 * (the bench's name, for messages and its temporary directory) and
 * BC_MAX_PROCS. */
#ifndef TF_BENCH_CLUSTER_H
#define TF_BENCH_CLUSTER_H

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/auth.h"
#include "lib/transport/tls.h"
#include "tf/session.h"

#define BC_START_TIMEOUT_MS 20000
#define BC_STOP_GRACE_MS 5000

/* A daemon of the current cluster. */
typedef struct bc_proc {
  char job[16];
  int task;
  int port;
  pid_t pid;
  char url[64];
  char log[160];
} bc_proc;

static char bc_dir[64];
static char bc_config[128];
static char bc_run_dir[96];
static bc_proc bc_procs[BC_MAX_PROCS];
static int bc_n_procs;
/* Set before bc_start: the cluster authenticates (a fresh key in its
 * directory, auth.key_file in its spec) and this process signs with it. */
static bool bc_auth;
static tf_auth *bc_keyring;
static char bc_key[128];
/* Set before bc_start: the cluster runs on tls+tcp at localhost, with
 * certificates from scripts/make-certs.sh in its directory, and this
 * process presents the client certificate. */
static bool bc_tls;

/* ---- the daemons ---- */

static void bc_remove_files(void) {
  if (bc_dir[0] == '\0') {
    return;
  }
  for (int i = 0; i < bc_n_procs; i++) {
    unlink(bc_procs[i].log);
  }
  unlink(bc_config);
  if (bc_key[0] != '\0') {
    unlink(bc_key);
    bc_key[0] = '\0';
  }
  if (bc_tls) { /* what scripts/make-certs.sh made */
    static const char *const certs[] = {"ca.crt", "ca.key", "localhost.pem", "client.pem"};
    char path[160];
    for (size_t i = 0; i < sizeof certs / sizeof certs[0]; i++) {
      snprintf(path, sizeof path, "%s/certs/%s", bc_dir, certs[i]);
      unlink(path);
    }
    snprintf(path, sizeof path, "%s/certs", bc_dir);
    rmdir(path);
  }
  rmdir(bc_run_dir);
  rmdir(bc_dir);
  bc_dir[0] = '\0';
}

/* Stops the daemons (SIGTERM, SIGKILL after the grace) and removes the
 * temporary directory. Idempotent; runs at exit. */
static void bc_stop(void) {
  for (int i = 0; i < bc_n_procs; i++) {
    if (bc_procs[i].pid > 0) {
      kill(bc_procs[i].pid, SIGTERM);
    }
  }
  for (int i = 0; i < bc_n_procs; i++) {
    if (bc_procs[i].pid > 0) {
      tf_ctl_stop_pid(bc_procs[i].pid, SIGTERM, BC_STOP_GRACE_MS);
      bc_procs[i].pid = 0;
    }
  }
  bc_remove_files();
  bc_n_procs = 0;
  tf_auth_set_process(NULL);
  tf_auth_free(bc_keyring);
  bc_keyring = NULL;
}

/* Whether every started daemon has been reaped (async-signal-safe). */
static bool bc_all_reaped(void) {
  bool all = true;
  for (int i = 0; i < bc_n_procs; i++) {
    if (bc_procs[i].pid > 0 && waitpid(bc_procs[i].pid, NULL, WNOHANG) == 0) {
      all = false;
    } else {
      bc_procs[i].pid = 0;
    }
  }
  return all;
}

/* SIGINT/SIGTERM: only async-signal-safe calls. SIGTERM to the daemons,
 * up to 2 s for them to exit, then SIGKILL. */
static void bc_on_signal(int sig) {
  for (int i = 0; i < bc_n_procs; i++) {
    if (bc_procs[i].pid > 0) {
      kill(bc_procs[i].pid, SIGTERM);
    }
  }
  struct timespec tick = {.tv_nsec = 10000000};
  for (int k = 0; k < 200 && !bc_all_reaped(); k++) {
    nanosleep(&tick, NULL);
  }
  for (int i = 0; i < bc_n_procs; i++) {
    if (bc_procs[i].pid > 0) {
      kill(bc_procs[i].pid, SIGKILL);
      waitpid(bc_procs[i].pid, NULL, 0);
    }
  }
  if (bc_dir[0] != '\0') {
    for (int i = 0; i < bc_n_procs; i++) {
      unlink(bc_procs[i].log);
    }
    unlink(bc_config);
    rmdir(bc_run_dir);
    rmdir(bc_dir);
  }
  _exit(128 + sig);
}

/* Prints the message and the daemons' log tails and exits 1 (the daemons
 * are stopped at exit). */
static void bc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bc_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, BC_NAME ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  for (int i = 0; i < bc_n_procs && bc_dir[0] != '\0'; i++) {
    char *tail = tf_ctl_file_tail(bc_procs[i].log, 15, "  | ");
    fprintf(stderr, "---- %s\n%s", bc_procs[i].log, tail);
    free(tail);
  }
  exit(1);
}

/* Dies naming the first daemon that has exited, and `cause` (NULL: none)
 * as what the client saw. */
static void bc_check_daemons(const char *when, const char *cause) {
  for (int i = 0; i < bc_n_procs; i++) {
    int ws = bc_procs[i].pid > 0 ? tf_ctl_reap(bc_procs[i].pid) : -1;
    if (ws >= 0) {
      bc_procs[i].pid = 0;
      bc_die("/job:%s/task:%d died %s (%s %d)%s%s", bc_procs[i].job, bc_procs[i].task, when,
          WIFSIGNALED(ws) ? "signal" : "exit status",
          WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws),
          cause != NULL ? "; the client got: " : "", cause != NULL ? cause : "");
    }
  }
}

/* A free loopback port (bind 127.0.0.1:0), distinct from those taken. */
static int bc_free_port(void) {
  for (int tries = 0; tries < 100; tries++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
      port = ntohs(sa.sin_port);
    }
    if (fd >= 0) {
      close(fd);
    }
    bool taken = port <= 0;
    for (int i = 0; i < bc_n_procs && !taken; i++) {
      taken = bc_procs[i].port == port;
    }
    if (!taken) {
      return port;
    }
  }
  bc_die("no free loopback port: %s", strerror(errno));
}

static void bc_write_addrs(FILE *f, const char *job) {
  fprintf(f, "  %s: [", job);
  const char *sep = "";
  for (int i = 0; i < bc_n_procs && i < BC_MAX_PROCS; i++) {
    if (strcmp(bc_procs[i].job, job) == 0) {
      fprintf(f, "%s%s:%d", sep, bc_tls ? "localhost" : "127.0.0.1", bc_procs[i].port);
      sep = ", ";
    }
  }
  fprintf(f, "]\n");
}

static void bc_write_config(int rpc_ms) {
  snprintf(bc_config, sizeof bc_config, "%s/cluster.yaml", bc_dir);
  FILE *f = fopen(bc_config, "w");
  if (f == NULL) {
    bc_die("cannot write %s: %s", bc_config, strerror(errno));
  }
  fprintf(f, "# written by " BC_NAME "\ncluster: bench\ntransport: %s\njobs:\n",
          bc_tls ? "tls+tcp" : "tcp");
  bc_write_addrs(f, "master");
  bc_write_addrs(f, "ps");
  bc_write_addrs(f, "worker");
  fprintf(f,
          "timeouts:\n  rpc_ms: %d\n  registration_ms: 10000\n  drain_ms: 2000\n"
          "run_dir: %s\nlog_level: warning\n",
          rpc_ms, bc_run_dir);
  if (bc_auth) {
    fprintf(f, "auth: {key_file: %s}\n", bc_key);
  }
  if (bc_tls) {
    fprintf(f, "tls: {ca_file: certs/ca.crt, cert_key_file: certs/localhost.pem}\n");
  }
  fclose(f);
}

static void bc_start_proc(bc_proc *p, const char *bin_dir) {
  char prog[512], task[16];
  bool master = strcmp(p->job, "master") == 0;
  snprintf(prog, sizeof prog, "%s/%s", bin_dir, master ? "tfmaster" : "tfworker");
  snprintf(task, sizeof task, "%d", p->task);
  char *argv_m[] = {prog, "--config", bc_config, NULL};
  char *argv_w[] = {prog, "--config", bc_config, "--job", p->job, "--task", task, NULL};
  tf_ctl_spawn_opts so = {.log_path = p->log, .die_with_parent = true};
  tf_status st;
  tf_status_init(&st);
  if (tf_ctl_spawn(master ? argv_m : argv_w, &so, &p->pid, &st) != TF_OK) {
    p->pid = 0;
    bc_die("cannot start %s: %s", prog, st.msg);
  }
}

static void bc_add_proc(const char *job, int task) {
  bc_proc *p = &bc_procs[bc_n_procs];
  memset(p, 0, sizeof *p);
  snprintf(p->job, sizeof p->job, "%s", job);
  p->task = task;
  p->port = bc_free_port();
  snprintf(p->url, sizeof p->url, "%s://%s:%d", bc_tls ? "tls+tcp" : "tcp",
           bc_tls ? "localhost" : "127.0.0.1", p->port);
  snprintf(p->log, sizeof p->log, "%s/%s-%d.log", bc_dir, job, task);
  bc_n_procs++;
}

/* bc_tls: the certificates in DIR/certs, and this process's client
 * configuration. */
static void bc_use_tls(void) {
  char cmd[256], ca[128], cert[128];
  snprintf(cmd, sizeof cmd, "scripts/make-certs.sh %s/certs localhost >/dev/null", bc_dir);
  if (system(cmd) != 0) {
    bc_die("'%s' failed", cmd);
  }
  snprintf(ca, sizeof ca, "%s/certs/ca.crt", bc_dir);
  snprintf(cert, sizeof cert, "%s/certs/client.pem", bc_dir);
  tf_tls_config *c = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_tls_config_load(ca, cert, &c, &st) != TF_OK) {
    bc_die("%s", st.msg);
  }
  tf_tls_set_default(c);
  tf_tls_config_free(c);
}

/* Starts a master, n_ps ps tasks and `workers` workers (at most
 * BC_MAX_PROCS in all) whose control calls have rpc_ms, and waits
 * (bounded) until each answers. */
static void bc_start(const char *bin_dir, int n_ps, int workers, int rpc_ms) {
  snprintf(bc_dir, sizeof bc_dir, "/tmp/tf-" BC_NAME "-XXXXXX");
  if (mkdtemp(bc_dir) == NULL) {
    bc_dir[0] = '\0';
    bc_die("mkdtemp: %s", strerror(errno));
  }
  snprintf(bc_run_dir, sizeof bc_run_dir, "%s/run", bc_dir);
  bc_n_procs = 0;
  if (bc_auth) {
    tf_status st;
    tf_status_init(&st);
    snprintf(bc_key, sizeof bc_key, "%s/cluster.key", bc_dir);
    if (tf_auth_key_file_generate(bc_key, &st) != TF_OK ||
        tf_auth_new(TF_AUTH_DEFAULT_WINDOW_MS, &bc_keyring, &st) != TF_OK ||
        tf_auth_add_key_file(bc_keyring, bc_key, TF_AUTH_ROLE_TASK, &st) != TF_OK) {
      bc_die("cluster key: %s", st.msg);
    }
    tf_auth_set_process(bc_keyring);
  }
  bc_add_proc("master", 0);
  for (int k = 0; k < n_ps; k++) {
    bc_add_proc("ps", k);
  }
  for (int w = 0; w < workers; w++) {
    bc_add_proc("worker", w);
  }
  bc_write_config(rpc_ms);
  if (bc_tls) {
    bc_use_tls();
  }
  for (int i = 0; i < bc_n_procs; i++) {
    bc_start_proc(&bc_procs[i], bin_dir);
  }
  int64_t deadline = tf_ctl_now_ms() + BC_START_TIMEOUT_MS;
  for (int i = 0; i < bc_n_procs; i++) {
    while (!tf_ctl_answers(bc_procs[i].url, 300)) {
      bc_check_daemons("before answering", NULL);
      if (tf_ctl_now_ms() > deadline) {
        bc_die("/job:%s/task:%d did not answer on %s within %d ms", bc_procs[i].job, bc_procs[i].task,
            bc_procs[i].url, BC_START_TIMEOUT_MS);
      }
      tf_ctl_sleep_ms(20);
    }
  }
}

/* A remote session of g on the master (procs[0]), retried until it opens
 * or BC_START_TIMEOUT_MS passes; a daemon that died ends the bench.
 * rpc_timeout_ms: the session's control calls (0: the default). */
static tf_session *bc_open_session(int64_t rpc_timeout_ms, tf_graph *g) {
  tf_session_options o = {.target = bc_procs[0].url, .rpc_timeout_ms = rpc_timeout_ms};
  tf_status st;
  tf_status_init(&st);
  int64_t deadline = tf_ctl_now_ms() + BC_START_TIMEOUT_MS;
  for (;;) {
    tf_session *s = tf_session_new(g, &o, &st);
    if (s != NULL) {
      return s;
    }
    bc_check_daemons("while opening the session", st.msg);
    if (tf_ctl_now_ms() > deadline) {
      bc_die("remote session on %s: %s", bc_procs[0].url, st.msg);
    }
    tf_ctl_sleep_ms(100);
  }
}

/* A monotonic clock in seconds. */
static double bc_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bc_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v and returns its q-quantile (nearest rank; 0.5: median). */
static double bc_quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, bc_cmp_d);
  int i = (int)(q * (n - 1) + 0.5);
  return v[i];
}

#endif
