/* harness.c: temporary clusters of real daemons for integration tests
 * (see harness.h): free ports, the cluster YAML, child daemons with logs,
 * bounded waits, stopping, log tails and cleanup, also from an atexit
 * handler when a test dies half-way. */
#include "test/integration/harness.h"
#include "test/unit/testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"

/* Live clusters, cleaned up at exit if a test did not free them. */
#define TH_MAX_LIVE 8
static th_cluster *live[TH_MAX_LIVE];

static void cleanup_at_exit(void) {
  for (int i = 0; i < TH_MAX_LIVE; i++) {
    if (live[i] != NULL) {
      th_cluster_free(live[i]);
    }
  }
}

th_opts th_default_opts(void) {
  return (th_opts){.n_ps = 1, .n_workers = 2, .rpc_ms = 5000, .registration_ms = 5000,
                   .heartbeat_ms = 100, .down_after_ms = 1000, .drain_ms = 1000,
                   .step_ttl_ms = 10000, .log_level = "info", .rpc_threads = 4};
}

int th_free_port(void) { return tt_free_port(); }

char *th_bin(const char *name) {
  size_t n = strlen(TF_BIN_DIR) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", TF_BIN_DIR, name);
  return p;
}

/* The tasks' host: a name under tls+tcp (certificates name hosts). */
static bool is_tls(const th_cluster *c) {
  return c->o.transport != NULL && strcmp(c->o.transport, "tls+tcp") == 0;
}

static const char *task_host(const th_cluster *c) {
  return is_tls(c) ? "localhost" : "127.0.0.1";
}

/* Adds a task of job with a distinct free port (ports already chosen are
 * skipped). */
static void add_task(th_cluster *c, const char *job, int task) {
  th_task *t = &c->tasks[c->n_tasks++];
  memset(t, 0, sizeof *t);
  snprintf(t->job, sizeof t->job, "%s", job);
  t->task = task;
  for (bool dup = true; dup;) {
    t->port = th_free_port();
    dup = false;
    for (int i = 0; i < c->n_tasks - 1; i++) {
      dup = dup || c->tasks[i].port == t->port;
    }
  }
  snprintf(t->url, sizeof t->url, "%s://%s:%d", is_tls(c) ? "tls+tcp" : "tcp",
           task_host(c), t->port);
  snprintf(t->log, sizeof t->log, "%s/%s-%d.log", c->dir, job, task);
}

static void yaml_job(FILE *f, th_cluster *c, const char *job) {
  bool any = false;
  for (int i = 0; i < c->n_tasks; i++) {
    if (strcmp(c->tasks[i].job, job) == 0) {
      fprintf(f, "%s%s:%d", any ? ", " : "", task_host(c), c->tasks[i].port);
      any = true;
    }
  }
}

static void write_config(th_cluster *c) {
  FILE *f = fopen(c->config, "w");
  ck_assert_msg(f != NULL, "cannot write %s: %s", c->config, strerror(errno));
  const char *jobs[] = {"master", "ps", "worker"};
  int counts[] = {1, c->o.n_ps, c->o.n_workers};
  fprintf(f, "# written by test/integration/harness.c\ncluster: integ\ntransport: %s\njobs:\n",
          is_tls(c) ? "tls+tcp" : "tcp");
  for (int j = 0; j < 3; j++) {
    if (counts[j] > 0) {
      fprintf(f, "  %s: [", jobs[j]);
      yaml_job(f, c, jobs[j]);
      fprintf(f, "]\n");
    }
  }
  fprintf(f,
          "timeouts:\n  rpc_ms: %lld\n  registration_ms: %lld\n  heartbeat_ms: %lld\n"
          "  down_after_ms: %lld\n  step_ttl_ms: %lld\n  drain_ms: %lld\n"
          "threads:\n  inter_op: 2\n  rpc: %d\nrun_dir: %s\nlog_level: %s\n",
          (long long)c->o.rpc_ms, (long long)c->o.registration_ms, (long long)c->o.heartbeat_ms,
          (long long)c->o.down_after_ms, (long long)c->o.step_ttl_ms, (long long)c->o.drain_ms,
          c->o.rpc_threads > 0 ? c->o.rpc_threads : 4, c->run_dir, c->o.log_level);
  if (c->o.extra_yaml != NULL) {
    fputs(c->o.extra_yaml, f);
  }
  /* The daemons open only files under data_dirs and checkpoint_dir: the
   * tests' data is in DIR, or Debian's datasets. */
  if (c->o.extra_yaml == NULL || strstr(c->o.extra_yaml, "data_dirs:") == NULL) {
    struct stat sb;
    bool datasets = stat("/usr/share/datasets", &sb) == 0 && S_ISDIR(sb.st_mode);
    fprintf(f, "data_dirs: [%s%s]\n", c->dir, datasets ? ", /usr/share/datasets" : "");
  }
  if (c->o.writable_dir) {
    ck_assert_msg(c->o.extra_yaml == NULL || strstr(c->o.extra_yaml, "checkpoint_dir:") == NULL,
                  "th_opts: writable_dir and a checkpoint_dir in extra_yaml");
    fprintf(f, "checkpoint_dir: %s\n", c->dir);
  }
  if (c->o.session_ttl_ms > 0) {
    ck_assert_msg(c->o.extra_yaml == NULL || strstr(c->o.extra_yaml, "limits:") == NULL,
                  "th_opts: put session_ttl_ms in extra_yaml's limits section");
    fprintf(f, "limits:\n  session_ttl_ms: %lld\n", (long long)c->o.session_ttl_ms);
  }
  fclose(f);
}

th_cluster *th_cluster_new(const th_opts *o) {
  static bool registered = false;
  if (!registered) {
    atexit(cleanup_at_exit);
    signal(SIGPIPE, SIG_IGN);
    registered = true;
  }
  th_cluster *c = calloc(1, sizeof *c);
  c->o = o != NULL ? *o : th_default_opts();
  snprintf(c->dir, sizeof c->dir, "/tmp/tf-integ-XXXXXX");
  ck_assert_msg(mkdtemp(c->dir) != NULL, "mkdtemp: %s", strerror(errno));
  snprintf(c->config, sizeof c->config, "%s/cluster.yaml", c->dir);
  snprintf(c->run_dir, sizeof c->run_dir, "%s/run", c->dir);
  c->tasks = calloc((size_t)(1 + c->o.n_ps + c->o.n_workers), sizeof *c->tasks);
  add_task(c, "master", 0);
  for (int i = 0; i < c->o.n_ps; i++) {
    add_task(c, "ps", i);
  }
  for (int i = 0; i < c->o.n_workers; i++) {
    add_task(c, "worker", i);
  }
  write_config(c);
  for (int i = 0; i < TH_MAX_LIVE; i++) {
    if (live[i] == NULL) {
      live[i] = c;
      break;
    }
  }
  return c;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 ? 0 : 0;
}

/* SIGKILLs daemons named by pid files under DIR/run (tfctl cluster up). */
static void kill_pidfiles(th_cluster *c) {
  DIR *d = opendir(c->run_dir);
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".pid") != 0) {
      continue;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/%s", c->run_dir, e->d_name);
    pid_t pid = tf_pidfile_read(path);
    if (pid > 0 && tf_pid_alive(pid) && tf_pid_runs(pid, "tf")) {
      tf_ctl_stop_pid(pid, SIGKILL, 2000);
    }
  }
  if (d != NULL) {
    closedir(d);
  }
}

void th_cluster_free(th_cluster *c) {
  if (c == NULL) {
    return;
  }
  for (int i = 0; i < TH_MAX_LIVE; i++) {
    if (live[i] == c) {
      live[i] = NULL;
    }
  }
  th_stop_all(c, 3000);
  kill_pidfiles(c);
  nftw(c->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(c->tasks);
  free(c);
}

th_task *th_task_get(th_cluster *c, const char *job, int task) {
  for (int i = 0; i < c->n_tasks; i++) {
    if (strcmp(c->tasks[i].job, job) == 0 && c->tasks[i].task == task) {
      return &c->tasks[i];
    }
  }
  return NULL;
}

bool th_start_task(th_cluster *c, th_task *t, const char *const *env) {
  bool master = strcmp(t->job, "master") == 0;
  char *prog = th_bin(master ? "tfmaster" : "tfworker");
  char task[16];
  snprintf(task, sizeof task, "%d", t->task);
  char *config = (char *)(t->config != NULL ? t->config : c->config);
  char *argv_m[] = {prog, "--config", config, NULL};
  char *argv_w[] = {prog, "--config", config, "--job", t->job, "--task", task, NULL};
  tf_ctl_spawn_opts so = {.log_path = t->log, .env = env, .die_with_parent = true};
  tf_status st;
  tf_status_init(&st);
  bool ok = tf_ctl_spawn(master ? argv_m : argv_w, &so, &t->pid, &st) == TF_OK;
  if (!ok) {
    fprintf(stderr, "harness: cannot start /job:%s/task:%d: %s\n", t->job, t->task, st.msg);
    t->pid = 0;
  }
  free(prog);
  return ok;
}

bool th_wait_task(th_cluster *c, th_task *t, int64_t timeout_ms) {
  (void)c;
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  while (t->pid > 0) {
    int status = tf_ctl_reap(t->pid);
    if (status >= 0) {
      t->status = status;
      t->pid = 0;
      fprintf(stderr, "harness: /job:%s/task:%d exited (status %d) before answering\n",
              t->job, t->task, status);
      return false;
    }
    int64_t left = deadline - tf_ctl_now_ms();
    if (left <= 0) {
      fprintf(stderr, "harness: /job:%s/task:%d did not answer within %lld ms\n", t->job,
              t->task, (long long)timeout_ms);
      return false;
    }
    if (tf_ctl_answers(t->url, left < 300 ? left : 300)) {
      return true;
    }
    tf_ctl_sleep_ms(20);
  }
  return false;
}

bool th_start_all(th_cluster *c, int64_t timeout_ms) {
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  for (int i = 0; i < c->n_tasks; i++) {
    if (c->tasks[i].pid == 0 && !th_start_task(c, &c->tasks[i], NULL)) {
      return false;
    }
  }
  for (int i = 0; i < c->n_tasks; i++) {
    int64_t left = deadline - tf_ctl_now_ms();
    if (!th_wait_task(c, &c->tasks[i], left > 1 ? left : 1)) {
      return false;
    }
  }
  return true;
}

void th_kill_task(th_task *t) { th_stop_task(t, SIGKILL, 2000); }

int th_stop_task(th_task *t, int sig, int64_t grace_ms) {
  if (t->pid <= 0) {
    return -1;
  }
  int status = tf_ctl_stop_pid(t->pid, sig, grace_ms);
  t->status = status;
  t->pid = 0;
  return status;
}

void th_stop_all(th_cluster *c, int64_t grace_ms) {
  for (int i = 0; i < c->n_tasks; i++) {
    if (c->tasks[i].pid > 0) {
      kill(c->tasks[i].pid, SIGTERM);
    }
  }
  for (int i = 0; i < c->n_tasks; i++) {
    th_stop_task(&c->tasks[i], 0, grace_ms); /* wait; SIGKILL after grace_ms */
  }
}

static void dump_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".log") != 0) {
      continue;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *tail = tf_ctl_file_tail(path, 20, "  | ");
    fprintf(stderr, "---- %s (last lines)\n%s", path, tail);
    free(tail);
  }
  if (d != NULL) {
    closedir(d);
  }
}

void th_dump_logs(th_cluster *c) {
  dump_dir(c->dir);
  dump_dir(c->run_dir);
}

void th_dump_stacks(th_task *t) {
  if (t->pid <= 0 || access("/usr/bin/gdb", X_OK) != 0) {
    return;
  }
  char cmd[200];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/gdb -p %d -batch -ex 'thread apply all bt 24' 2>/dev/null | "
           "grep -E '^(Thread|#)' 1>&2",
           (int)t->pid);
  fprintf(stderr, "---- the threads of /job:%s/task:%d (pid %d)\n", t->job, t->task,
          (int)t->pid);
  if (system(cmd) != 0) {
    fprintf(stderr, "(gdb failed)\n");
  }
}

static bool loopback_port_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0) {
    close(fd);
  }
  return ok;
}

int th_add_metrics_section(th_cluster *c, int first) {
  for (int off = first; off < 20000; off += 97) {
    bool ok = true;
    for (int i = 0; ok && i < c->n_tasks; i++) {
      ok = c->tasks[i].port + off <= 65535 && loopback_port_free(c->tasks[i].port + off);
    }
    if (ok) {
      FILE *f = fopen(c->config, "a");
      TH_REQUIRE(c, f != NULL, "cannot append to %s", c->config);
      fprintf(f, "metrics: {port_offset: %d}\n", off);
      fclose(f);
      return off;
    }
  }
  TH_REQUIRE(c, false, "no free port offset for the metrics");
  return 0;
}

char *th_write_file(th_cluster *c, const char *name, const char *text) {
  size_t n = strlen(c->dir) + strlen(name) + 2;
  char *path = malloc(n);
  snprintf(path, n, "%s/%s", c->dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
  return path;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return strdup("");
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t r;
  while ((r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += r;
    if (cap - len < 2) {
      buf = realloc(buf, cap *= 2);
    }
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}

int th_run(th_cluster *c, char *const argv[], int64_t timeout_ms, char **out, char **err) {
  static int seq = 0;
  char out_path[400], err_path[400];
  const char *dir = c != NULL ? c->dir : "/tmp";
  snprintf(out_path, sizeof out_path, "%s/run-%d-%d.out", dir, (int)getpid(), seq);
  snprintf(err_path, sizeof err_path, "%s/run-%d-%d.err", dir, (int)getpid(), seq++);
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, STDOUT_FILENO);
    dup2(fe, STDERR_FILENO);
    execv(argv[0], argv);
    _exit(127);
  }
  ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  int status = 0, rc = -1;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (tf_ctl_now_ms() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fprintf(stderr, "harness: %s timed out after %lld ms\n", argv[0], (long long)timeout_ms);
      break;
    }
    tf_ctl_sleep_ms(5);
  }
  if (getenv("TH_VERBOSE") != NULL) {
    fprintf(stderr, "harness: %s %s: exit %d after %lld ms\n", argv[0], argv[1] ? argv[1] : "",
            rc, (long long)(tf_ctl_now_ms() - (deadline - timeout_ms)));
  }
  if (out != NULL) {
    *out = slurp(out_path);
  }
  if (err != NULL) {
    *err = slurp(err_path);
  }
  unlink(out_path);
  unlink(err_path);
  return rc;
}

void th_fail(th_cluster *c, const char *file, int line, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s:%d: %s\n", file, line, msg);
  if (c != NULL) {
    th_dump_logs(c);
    th_cluster_free(c);
  }
  ck_abort_msg("%s:%d: %s", file, line, msg);
  abort(); /* not reached */
}

int64_t th_rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return -1;
  }
  long long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmRSS: %lld kB", &kib) == 1) {
      break;
    }
  }
  fclose(f);
  return kib;
}

pid_t th_spawn(th_cluster *c, char *const argv[], const char *log_path) {
  (void)c;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log_path != NULL ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execv(argv[0], argv);
    _exit(127);
  }
  ck_assert_msg(pid > 0, "fork: %s", strerror(errno));
  return pid;
}
