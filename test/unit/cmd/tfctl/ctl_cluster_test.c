/* ctl_cluster_test.c: `tfctl cluster up|down` as library calls: the
 * DIR/<job>-<task>.<ext> layout; up refusing to start over a pid file that
 * names a live tf process (and not over one naming another program); up
 * with a program that cannot be run stopping what it started; a task that
 * exits at once (a status, a signal) failing up at once with its status
 * and its log's last line, stopping the rest; a run dir
 * or config that cannot be used; down signalling only tf processes
 * (SIGKILL after the grace period for one ignoring SIGTERM) and removing
 * every pid file, also stale ones. Stand-in tf processes are /bin/sleep
 * and /bin/sh run under argv[0] names starting with "tf". When the built
 * tfmaster/tfworker are found (bin/ for build/, else $(BUILD)/bin) a real
 * master, ps and worker are brought up and down, and a task whose port is
 * taken fails up naming it; without them those two tests only say so. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_cluster.h"
#include "cmd/tfctl/ctl_procs.h"
#include "test/unit/testutil.h"

static char dir[64];      /* per test: a fresh temp dir */
static char run_dir[128]; /* dir/run */

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/tf-ctlcluster-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(run_dir, sizeof run_dir, "%s/run", dir);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "/bin/rm -rf %s", dir); /* PATH may be changed */
  ck_assert_int_eq(system(cmd), 0);
}


static char config[160];

/* Writes dir/c.yaml (jobs in that order: ps, master, worker) and loads
 * it; ports[0..2] get the ports of ps, master and worker. */
static tf_cluster_spec *spec_with(int ports[3], int64_t drain_ms) {
  for (int i = 0; i < 3; i++) {
    ports[i] = tt_free_port();
  }
  snprintf(config, sizeof config, "%s/c.yaml", dir);
  FILE *f = fopen(config, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "cluster: ctltest\njobs:\n  ps: [127.0.0.1:%d]\n  master: [127.0.0.1:%d]\n"
          "  worker: [127.0.0.1:%d]\n"
          "timeouts: {registration_ms: 5000, heartbeat_ms: 100, down_after_ms: 1000, "
          "rpc_ms: 2000, drain_ms: %lld}\nthreads: {inter_op: 1, rpc: 2}\n"
          "run_dir: %s\nlog_level: info\n",
          ports[0], ports[1], ports[2], (long long)drain_ms, run_dir);
  ck_assert_int_eq(fclose(f), 0);
  tf_cluster_spec *s = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_load(config, &s, &st) == TF_OK, "%s", st.msg);
  return s;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static char *task_file(const char *job, const char *ext) {
  return tf_ctl_task_file(run_dir, job, 0, ext);
}

static void write_pidfile(const char *job, pid_t pid) {
  ck_assert_int_eq(tf_ctl_mkdirs(run_dir, &(tf_status){0}), TF_OK);
  char *p = task_file(job, "pid");
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "%ld\n", (long)pid);
  fclose(f);
  free(p);
}

/* A child running /bin/sleep 30 under argv[0] name, SIGTERM ignored when
 * stubborn; returns once its exec shows in /proc (bounded). */
static pid_t fake_tf(const char *name, bool stubborn) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (stubborn) {
      signal(SIGTERM, SIG_IGN);
    }
    execl("/bin/sleep", name, "30", (char *)NULL);
    _exit(127);
  }
  int64_t until = tf_ctl_now_ms() + 3000;
  while (!tf_pid_runs(pid, name)) {
    ck_assert_msg(tf_ctl_now_ms() < until, "%s never started", name);
    tf_ctl_sleep_ms(5);
  }
  return pid;
}

/* Kills (if needed) and reaps our child; returns its wait status, or -1
 * when it was reaped already (down reaps children it stops). */
static int reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  pid_t r = waitpid(pid, &status, 0);
  if (r < 0) {
    ck_assert_int_eq(errno, ECHILD);
    ck_assert(!tf_pid_alive(pid));
    return -1;
  }
  ck_assert_int_eq(r, pid);
  return status;
}

/* PATH = only dir (plus prepend, if any): no tfmaster/tfworker there. */
static void set_path(const char *prepend) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s%s%s", prepend ? prepend : "", prepend ? ":" : "", dir);
  setenv("PATH", path, 1);
}

static char *read_all(FILE *f) {
  fflush(f);
  rewind(f);
  char *buf = calloc(1, 8192);
  size_t n = fread(buf, 1, 8191, f);
  buf[n] = '\0';
  return buf;
}

START_TEST(test_task_file) {
  char *p = tf_ctl_task_file("/var/run/tf", "worker", 12, "pid");
  ck_assert_str_eq(p, "/var/run/tf/worker-12.pid");
  free(p);
  p = tf_ctl_task_file("run/local", "ps", 0, "log");
  ck_assert_str_eq(p, "run/local/ps-0.log");
  free(p);
  char job[64];
  memset(job, 'j', 63);
  job[63] = '\0';
  char want[128];
  snprintf(want, sizeof want, "r/%s-2147483647.log", job);
  p = tf_ctl_task_file("r", job, 2147483647, "log");
  ck_assert_str_eq(p, want);
  free(p);
  p = tf_ctl_task_file("r", "master", -1, "pid"); /* never truncated */
  ck_assert_str_eq(p, "r/master--1.pid");
  free(p);
}
END_TEST

START_TEST(test_up_refuses_live_tf_process) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  set_path(NULL); /* nothing could start anyway */
  pid_t live = fake_tf("tfworker", false);
  write_pidfile("ps", live);
  write_pidfile("worker", getpid()); /* alive, but not a tf program */
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .timeout_ms = 2000};
  tf_status st;
  tf_status_init(&st);
  char *details = (char *)"x";
  ck_assert_int_eq(tf_ctl_cluster_up(&o, &details, &st), TF_FAILED_PRECONDITION);
  char want[256];
  char *pidf = task_file("ps", "pid");
  snprintf(want, sizeof want, "/job:ps/task:0 (pid %ld, %s)", (long)live, pidf);
  ck_assert_msg(strstr(st.msg, "already running") && strstr(st.msg, want), "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:worker") == NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:master") == NULL, "%s", st.msg);
  ck_assert_ptr_null(details);
  /* Nothing was started: no other pid file, no log; the pid file kept. */
  char *mpid = task_file("master", "pid"), *mlog = task_file("master", "log");
  char *plog = task_file("ps", "log");
  ck_assert(!exists(mpid) && !exists(mlog) && !exists(plog));
  ck_assert_int_eq(tf_pidfile_read(pidf), live);
  ck_assert(tf_pid_alive(live));
  /* With the spec's own run_dir (o.run_dir NULL) the same is found. */
  ck_assert_str_eq(s->run_dir, run_dir);
  reap(live);
  /* Once the process is gone the stale pid file no longer blocks: up
   * goes on to start tasks (and fails: no program in PATH). */
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_up(&o, NULL, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "already running") == NULL, "%s", st.msg);
  free(pidf);
  free(mpid);
  free(mlog);
  free(plog);
  tf_cluster_spec_free(s);
}
END_TEST

/* ps starts (a stand-in tfworker script that records its pid), then the
 * master cannot be run: up fails naming it and stops the ps again. */
START_TEST(test_up_cannot_run_stops_started) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  char bindir[128], script[160], rec[160];
  snprintf(bindir, sizeof bindir, "%s/bin", dir);
  ck_assert_int_eq(mkdir(bindir, 0755), 0);
  snprintf(script, sizeof script, "%s/tfworker", bindir);
  snprintf(rec, sizeof rec, "%s/started.pid", dir);
  FILE *f = fopen(script, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\necho $$ > %s.tmp && /bin/mv %s.tmp %s\nexec /bin/sleep 30\n", rec, rec,
          rec);
  fclose(f);
  ck_assert_int_eq(chmod(script, 0755), 0);
  set_path(bindir);
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .timeout_ms = 2000};
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = tf_ctl_now_ms();
  ck_assert_int_eq(tf_ctl_cluster_up(&o, NULL, &st), TF_FAILED_PRECONDITION);
  ck_assert_int_lt(tf_ctl_now_ms() - t0, 4000);
  ck_assert_msg(strstr(st.msg, "/job:master/task:0") && strstr(st.msg, "tfmaster"), "%s",
                st.msg);
  /* The ps was started, then stopped and its pid file removed. */
  char *plog = task_file("ps", "log"), *ppid = task_file("ps", "pid");
  ck_assert(exists(plog));
  ck_assert(!exists(ppid));
  int64_t until = tf_ctl_now_ms() + 2000;
  while (!exists(rec) && tf_ctl_now_ms() < until) {
    tf_ctl_sleep_ms(10); /* only if SIGTERM came before the echo */
  }
  pid_t started = tf_pidfile_read(rec);
  if (started > 0) {
    ck_assert_msg(!tf_pid_alive(started), "pid %ld still running", (long)started);
  }
  free(plog);
  free(ppid);
  tf_cluster_spec_free(s);
}
END_TEST

/* Writes an executable stand-in script dir/bin/name. */
static void stand_in(const char *name, const char *body) {
  char bindir[128], script[192];
  snprintf(bindir, sizeof bindir, "%s/bin", dir);
  mkdir(bindir, 0755);
  snprintf(script, sizeof script, "%s/%s", bindir, name);
  FILE *f = fopen(script, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n%s", body);
  fclose(f);
  ck_assert_int_eq(chmod(script, 0755), 0);
  set_path(bindir);
}

/* A task that exits at once fails up at once (not at the timeout), naming
 * its exit status (or signal) and its log's last line, and what was
 * started is stopped: a stand-in master that never answers, a ps and a
 * worker that do what dir/mode says. */
START_TEST(test_up_task_exits_at_once) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  char body[1024], mode_file[160], master_rec[160];
  snprintf(mode_file, sizeof mode_file, "%s/mode", dir);
  snprintf(master_rec, sizeof master_rec, "%s/master.pid", dir);
  snprintf(body, sizeof body, "echo $$ > %s.tmp && /bin/mv %s.tmp %s\nexec /bin/sleep 30\n",
           master_rec, master_rec, master_rec);
  stand_in("tfmaster", body);
  snprintf(body, sizeof body,
           "mode=$(/bin/cat %s)\n"
           "if [ \"$4\" = ps ] && [ \"$mode\" = exit ]; then\n"
           "  echo 'starting'; echo '<3>tfworker /job:ps/task:0: cannot start: no device' >&2\n"
           "  exit 3\nfi\n"
           "if [ \"$4\" = worker ] && [ \"$mode\" = signal ]; then\n"
           "  echo 'about to crash'; kill -SEGV $$\nfi\n"
           "exec /bin/sleep 30\n", mode_file);
  stand_in("tfworker", body);
  const char *modes[] = {"exit", "signal"};
  for (int m = 0; m < 2; m++) {
    FILE *f = fopen(mode_file, "w");
    fprintf(f, "%s\n", modes[m]);
    fclose(f);
    unlink(master_rec);
    tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .timeout_ms = 15000};
    tf_status st;
    tf_status_init(&st);
    char *details = NULL;
    int64_t t0 = tf_ctl_now_ms();
    ck_assert_int_eq(tf_ctl_cluster_up(&o, &details, &st), TF_FAILED_PRECONDITION);
    ck_assert_msg(tf_ctl_now_ms() - t0 < 5000, "took %lld ms", (long long)(tf_ctl_now_ms() - t0));
    char want[256];
    if (m == 0) {
      snprintf(want, sizeof want, "/job:ps/task:0 "
               "(tcp://127.0.0.1:%d) exited with status 3: tfworker /job:ps/task:0: cannot "
               "start: no device", ports[0]);
    } else {
      snprintf(want, sizeof want, "/job:worker/task:0 "
               "(tcp://127.0.0.1:%d) killed by signal 11 (Segmentation fault): about to crash",
               ports[2]);
    }
    ck_assert_msg(strcmp(st.msg, want) == 0, "got  %s\nwant %s", st.msg, want);
    ck_assert_msg(strstr(details, m == 0 ? "ps-0.log:\n  starting\n" : "worker-0.log:\n") != NULL,
                  "%s", details);
    free(details);
    const char *jobs[] = {"ps", "master", "worker"};
    for (int i = 0; i < 3; i++) {
      char *pf = task_file(jobs[i], "pid");
      ck_assert_msg(!exists(pf), "%s left", pf);
      free(pf);
    }
    pid_t mp = tf_pidfile_read(master_rec);
    ck_assert_msg(mp <= 0 || !tf_pid_alive(mp), "the master (pid %ld) still runs", (long)mp);
  }
  tf_cluster_spec_free(s);
}
END_TEST

START_TEST(test_bad_run_dir_and_config) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  set_path(NULL);
  char file[128], bad[160];
  snprintf(file, sizeof file, "%s/plainfile", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(bad, sizeof bad, "%s/sub/run", file);
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .run_dir = bad, .timeout_ms = 500};
  tf_status st;
  tf_status_init(&st);
  tf_code code = tf_ctl_cluster_up(&o, NULL, &st);
  ck_assert_int_ne(code, TF_OK);
  ck_assert_msg(strstr(st.msg, file) != NULL, "'%s' does not name the directory", st.msg);
  o.run_dir = NULL;
  o.config_path = "/nonexistent/tf-config.yaml";
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_up(&o, NULL, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "/nonexistent/tf-config.yaml") != NULL, "%s", st.msg);
  ck_assert(!exists(run_dir)); /* nothing created */
  tf_cluster_spec_free(s);
}
END_TEST

START_TEST(test_down_without_pid_files) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .out = out};
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_down(&o, &st), TF_OK); /* run dir absent */
  ck_assert_int_eq(tf_ctl_mkdirs(run_dir, &st), TF_OK);
  ck_assert_int_eq(tf_ctl_cluster_down(&o, &st), TF_OK); /* empty */
  fclose(out);
  char want[512];
  snprintf(want, sizeof want, "nothing running under %s (no pid file there names a live "
           "daemon)\n", s->run_dir);
  ck_assert_uint_eq(len, 2 * strlen(want)); /* said once for each call */
  ck_assert_int_eq(strncmp(buf, want, strlen(want)), 0);
  ck_assert_str_eq(buf + strlen(want), want);
  free(buf);
  tf_cluster_spec_free(s);
}
END_TEST

/* down signals only tf processes, removes every pid file (stale and
 * malformed ones too) and reports what it stopped. */
START_TEST(test_down_stops_only_tf) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  pid_t ps = fake_tf("tfworker", false);
  write_pidfile("ps", ps);
  write_pidfile("worker", getpid()); /* not a tf program: left alone */
  ck_assert_int_eq(tf_ctl_mkdirs(run_dir, &(tf_status){0}), TF_OK);
  char *mpid = task_file("master", "pid");
  FILE *f = fopen(mpid, "w");
  fputs("garbage\n", f);
  fclose(f);
  FILE *out = tmpfile();
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .out = out};
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = tf_ctl_now_ms();
  ck_assert_msg(tf_ctl_cluster_down(&o, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_lt(tf_ctl_now_ms() - t0, 1500); /* SIGTERM sufficed */
  int status = reap(ps);
  ck_assert_msg(status == -1 || (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM),
                "status %d", status);
  char *text = read_all(out);
  char want[96];
  snprintf(want, sizeof want, "stopped /job:ps/task:0 (pid %ld)\n", (long)ps);
  ck_assert_str_eq(text, want);
  free(text);
  fclose(out);
  char *ppid = task_file("ps", "pid"), *wpid = task_file("worker", "pid");
  ck_assert(!exists(ppid) && !exists(wpid) && !exists(mpid));
  free(ppid);
  free(wpid);
  free(mpid);
  tf_cluster_spec_free(s);
}
END_TEST

/* A tf process ignoring SIGTERM is killed after drain_ms + 2 s. */
START_TEST(test_down_kills_stubborn) {
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 0);
  pid_t w = fake_tf("tfworker", true);
  write_pidfile("worker", w);
  FILE *out = tmpfile();
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .out = out};
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = tf_ctl_now_ms();
  ck_assert_msg(tf_ctl_cluster_down(&o, &st) == TF_OK, "%s", st.msg);
  int64_t took = tf_ctl_now_ms() - t0;
  ck_assert_msg(took >= 1900 && took < 4500, "took %lld ms", (long long)took);
  int status = reap(w);
  ck_assert_msg(status == -1 || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL),
                "status %d", status);
  char *text = read_all(out);
  char want[96];
  snprintf(want, sizeof want, "killed /job:worker/task:0 (pid %ld)\n", (long)w);
  ck_assert_str_eq(text, want);
  free(text);
  fclose(out);
  char *wpid = task_file("worker", "pid");
  ck_assert(!exists(wpid));
  free(wpid);
  tf_cluster_spec_free(s);
}
END_TEST

/* ---- with the real programs ----------------------------------------------- */

/* The directory of the built tfmaster/tfworker for this test binary
 * (<BUILD>/test/unit/cmd/tfctl/ctl_cluster_test): <BUILD>/bin; NULL when
 * they are not there. */
static char *bin_dir(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    return NULL;
  }
  self[n] = '\0';
  char *unit = strstr(self, "/test/unit/");
  if (unit == NULL) {
    return NULL;
  }
  *unit = '\0';
  char out[PATH_MAX + 8], m[PATH_MAX + 32], w[PATH_MAX + 32];
  snprintf(out, sizeof out, "%s/bin", self);
  snprintf(m, sizeof m, "%s/tfmaster", out);
  snprintf(w, sizeof w, "%s/tfworker", out);
  if (access(m, X_OK) != 0 || access(w, X_OK) != 0) {
    fprintf(stderr, "ctl_cluster_test: no tfmaster/tfworker in %s: real cluster not "
            "tested (make them first)\n", out);
    return NULL;
  }
  return strdup(out);
}

static void check_pidfile_runs(const char *job, const char *prog) {
  char *p = task_file(job, "pid"), *l = task_file(job, "log");
  pid_t pid = tf_pidfile_read(p);
  ck_assert_msg(pid > 0, "%s", p);
  ck_assert(tf_pid_alive(pid));
  ck_assert_msg(tf_pid_runs(pid, prog), "pid %ld is not %s", (long)pid, prog);
  ck_assert(exists(l));
  free(p);
  free(l);
}

START_TEST(test_real_up_and_down) {
  char *bins = bin_dir();
  if (bins == NULL) {
    return;
  }
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 1000);
  set_path(bins);
  FILE *out = tmpfile();
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .timeout_ms = 8000, .out = out};
  tf_status st;
  tf_status_init(&st);
  char *details = NULL;
  ck_assert_msg(tf_ctl_cluster_up(&o, &details, &st) == TF_OK, "%s\n%s", st.msg,
                details ? details : "");
  ck_assert_ptr_null(details);
  check_pidfile_runs("ps", "tfworker");
  check_pidfile_runs("master", "tfmaster");
  check_pidfile_runs("worker", "tfworker");
  char *text = read_all(out);
  const char *jobs[] = {"ps", "master", "worker"};
  for (int i = 0; i < 3; i++) {
    char *pf = task_file(jobs[i], "pid"), *lf = task_file(jobs[i], "log");
    char want[512];
    snprintf(want, sizeof want, "started /job:%s/task:0 on tcp://127.0.0.1:%d: pid %ld, log %s\n",
             jobs[i], ports[i], (long)tf_pidfile_read(pf), lf);
    ck_assert_msg(strstr(text, want) != NULL, "no '%s' in:\n%s", want, text);
    free(pf);
    free(lf);
  }
  free(text);
  /* Every task answers and the master sees all up already. */
  char murl[64];
  snprintf(murl, sizeof murl, "tcp://127.0.0.1:%d", ports[1]);
  tf_ctl_task *ts = NULL;
  int n = 0;
  ck_assert_msg(tf_ctl_cluster_status(murl, 2000, &ts, &n, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(ts[i].up, "/job:%s/task:%d down", ts[i].job, ts[i].task);
  }
  tf_ctl_tasks_free(ts, n);
  /* A second up refuses: every task is already running. */
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_up(&o, NULL, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "/job:ps/task:0") && strstr(st.msg, "/job:master/task:0") &&
                strstr(st.msg, "/job:worker/task:0"), "%s", st.msg);
  ck_assert(tf_ctl_answers(murl, 1000));
  /* down stops all three, removes the pid files, keeps the logs. */
  rewind(out);
  ck_assert_int_eq(ftruncate(fileno(out), 0), 0);
  pid_t pids[3];
  for (int i = 0; i < 3; i++) {
    char *pf = task_file(jobs[i], "pid");
    pids[i] = tf_pidfile_read(pf);
    free(pf);
  }
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_cluster_down(&o, &st) == TF_OK, "%s", st.msg);
  text = read_all(out);
  for (int i = 0; i < 3; i++) {
    char want[128];
    snprintf(want, sizeof want, "stopped /job:%s/task:0 (pid %ld)\n", jobs[i], (long)pids[i]);
    ck_assert_msg(strstr(text, want) != NULL, "no '%s' in:\n%s", want, text);
    ck_assert(!tf_pid_alive(pids[i]));
    char *pf = task_file(jobs[i], "pid"), *lf = task_file(jobs[i], "log");
    ck_assert(!exists(pf));
    ck_assert(exists(lf));
    free(pf);
    free(lf);
  }
  free(text);
  fclose(out);
  ck_assert(!tf_ctl_answers(murl, 200));
  free(bins);
  tf_cluster_spec_free(s);
}
END_TEST

/* The worker's port is taken: it exits, and up fails at once naming it,
 * its exit status and its log's last line (the details hold the log's
 * tail); nothing is left running. */
START_TEST(test_real_up_port_taken) {
  char *bins = bin_dir();
  if (bins == NULL) {
    return;
  }
  int ports[3];
  tf_cluster_spec *s = spec_with(ports, 1000);
  set_path(bins);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ports[2])};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 1), 0);
  tf_ctl_cluster_opts o = {.spec = s, .config_path = config, .timeout_ms = 15000};
  tf_status st;
  tf_status_init(&st);
  char *details = NULL;
  int64_t t0 = tf_ctl_now_ms();
  ck_assert_int_eq(tf_ctl_cluster_up(&o, &details, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(tf_ctl_now_ms() - t0 < 10000, "waited %lld ms for the exited task",
                (long long)(tf_ctl_now_ms() - t0));
  char want[256];
  snprintf(want, sizeof want, "/job:worker/task:0 "
           "(tcp://127.0.0.1:%d) exited with status 1: tfworker /job:worker/task:0: ",
           ports[2]);
  ck_assert_msg(strstr(st.msg, want) == st.msg, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "Address in use") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:ps") == NULL && strstr(st.msg, "/job:master") == NULL,
                "%s", st.msg);
  char *wlog = task_file("worker", "log");
  ck_assert_ptr_nonnull(details);
  ck_assert_msg(strstr(details, wlog) != NULL, "%s", details);
  ck_assert_msg(strstr(details, "cannot start") != NULL, "%s", details);
  free(details);
  free(wlog);
  const char *jobs[] = {"ps", "master", "worker"};
  for (int i = 0; i < 3; i++) {
    char *pf = task_file(jobs[i], "pid");
    ck_assert_msg(!exists(pf), "%s left", pf);
    free(pf);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", ports[i]);
    if (i < 2) {
      ck_assert_msg(!tf_ctl_answers(url, 200), "%s still answers", url);
    }
  }
  close(fd);
  free(bins);
  tf_cluster_spec_free(s);
}
END_TEST

/* The task names cluster --only and restart take, and their errors. */
START_TEST(test_parse_task) {
  int ports[3] = {1, 2, 3};
  tf_cluster_spec *s = spec_with(ports, 0);
  tf_status st;
  tf_status_init(&st);
  char job[16];
  int task = -1;
  const char *good[] = {"/job:worker/task:0", "/job:worker/replica:0/task:0", "worker:0",
                        "worker-0"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    ck_assert_msg(tf_ctl_parse_task(s, good[i], job, sizeof job, &task, &st) == TF_OK, "%s: %s",
                  good[i], st.msg);
    ck_assert_str_eq(job, "worker");
    ck_assert_int_eq(task, 0);
  }
  ck_assert_int_eq(tf_ctl_parse_task(s, "master-0", job, sizeof job, &task, &st), TF_OK);
  const char *bad[] = {"worker", "-1", "worker-x", "/job:worker", "/job:worker/task:",
                       "/job:worker/replica:1/task:0", "worker:0x", "worker-99999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(tf_ctl_parse_task(s, bad[i], job, sizeof job, &task, &st),
                     TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "expected a task as /job:NAME/task:N, NAME:N or NAME-N") !=
                      NULL, "%s: %s", bad[i], st.msg);
  }
  ck_assert_int_eq(tf_ctl_parse_task(s, "worker:5", job, sizeof job, &task, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "no task /job:worker/task:5") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_ctl_parse_task(s, "averyveryverylongjobname-0", job, sizeof job, &task,
                                     &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_ctl_parse_task(s, "gpu-0", job, sizeof job, &task, &st), TF_NOT_FOUND);
  tf_cluster_spec_free(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_cluster");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_task_file);
  tcase_add_test(tc, test_up_refuses_live_tf_process);
  tcase_add_test(tc, test_up_cannot_run_stops_started);
  tcase_add_test(tc, test_up_task_exits_at_once);
  tcase_add_test(tc, test_bad_run_dir_and_config);
  tcase_add_test(tc, test_down_without_pid_files);
  tcase_add_test(tc, test_down_stops_only_tf);
  tcase_add_test(tc, test_down_kills_stubborn);
  tcase_add_test(tc, test_real_up_and_down);
  tcase_add_test(tc, test_real_up_port_taken);
  tcase_add_test(tc, test_parse_task);
  suite_add_tcase(s, tc);
  return s;
}
