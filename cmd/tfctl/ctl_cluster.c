/* ctl_cluster.c: starting every task of a spec as a detached local
 * process and waiting (bounded) until each serves as itself at its
 * address, failing as soon as one exits (with its exit status and last
 * log line); stopping them again through their pid files. */
#include "cmd/tfctl/ctl_cluster.h"

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"

/* One task of the spec. */
typedef struct ctl_task {
  const char *job;
  int task;
  char *url, *log, *pidf;
  pid_t pid;
  bool ready, exited;
  int status;    /* wait status once exited */
  char why[512]; /* the last probe's error */
} ctl_task;

char *tf_ctl_task_file(const char *run_dir, const char *job, int task, const char *ext) {
  size_t n = strlen(run_dir) + strlen(job) + strlen(ext) + 32;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s-%d.%s", run_dir, job, task, ext);
  return p;
}

tf_code tf_ctl_parse_task(const tf_cluster_spec *s, const char *text, char *job, size_t job_len,
                          int *task, tf_status *st) {
  const char *p = text, *num = NULL;
  size_t n = 0;
  if (strncmp(p, "/job:", 5) == 0) {
    p += 5;
    const char *slash = strchr(p, '/');
    n = slash != NULL ? (size_t)(slash - p) : 0;
    num = slash == NULL ? NULL
          : strncmp(slash, "/replica:0/task:", 16) == 0 ? slash + 16
          : strncmp(slash, "/task:", 6) == 0 ? slash + 6 : NULL;
  } else {
    const char *sep = strrchr(p, ':') != NULL ? strrchr(p, ':') : strrchr(p, '-');
    n = sep != NULL ? (size_t)(sep - p) : 0;
    num = sep != NULL ? sep + 1 : NULL;
  }
  char *end = NULL;
  long v = num != NULL && *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : -1;
  if (n == 0 || v < 0 || v > INT_MAX || *end != '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "expected a task as /job:NAME/task:N, "
                         "NAME:N or NAME-N, got '%.100s'", text);
  }
  if (n >= job_len) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "job name in '%.100s' is too long", text);
  }
  memcpy(job, p, n);
  job[n] = '\0';
  *task = (int)v;
  return tf_cluster_spec_check_task(s, job, *task, st);
}

static bool wanted(const tf_ctl_cluster_opts *o, const char *job, int task) {
  return o->only_job == NULL || (strcmp(o->only_job, job) == 0 && o->only_task == task);
}

static ctl_task *list_tasks(const tf_ctl_cluster_opts *o, const char *dir, int *n_out) {
  const tf_cluster_spec *s = o->spec;
  int n = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    n += s->jobs[j].n_tasks;
  }
  ctl_task *ts = calloc(n > 0 ? (size_t)n : 1, sizeof *ts);
  int k = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      if (!wanted(o, s->jobs[j].name, t)) continue;
      ts[k].job = s->jobs[j].name;
      ts[k].task = t;
      ts[k].url = tf_cluster_task_url(s, ts[k].job, t);
      ts[k].log = tf_ctl_task_file(dir, ts[k].job, t, "log");
      ts[k].pidf = tf_ctl_task_file(dir, ts[k].job, t, "pid");
      k++;
    }
  }
  *n_out = k;
  return ts;
}

static void free_tasks(ctl_task *ts, int n) {
  for (int i = 0; i < n; i++) {
    free(ts[i].url);
    free(ts[i].log);
    free(ts[i].pidf);
  }
  free(ts);
}

/* Appends "/job:J/task:T" plus extra to buf. */
static void append_task(char *buf, size_t size, const ctl_task *t, const char *extra) {
  size_t l = strlen(buf);
  if (snprintf(buf + l, size - l, "%s/job:%s/task:%d%s", l ? ", " : "", t->job, t->task,
               extra) < 0) {
    buf[l] = '\0';
  }
}

/* FAILED_PRECONDITION when a pid file names a live tf process. */
static tf_code check_not_running(ctl_task *ts, int n, tf_status *st) {
  char msg[TF_STATUS_MSG_MAX] = "";
  for (int i = 0; i < n; i++) {
    pid_t pid = tf_pidfile_read(ts[i].pidf);
    if (pid > 0 && tf_pid_alive(pid) && tf_pid_runs(pid, "tf")) {
      char extra[PATH_MAX + 64];
      snprintf(extra, sizeof extra, " (pid %ld, %s)", (long)pid, ts[i].pidf);
      append_task(msg, sizeof msg, &ts[i], extra);
    }
  }
  if (msg[0] != '\0') {
    return tf_status_set(st, TF_FAILED_PRECONDITION,
                         "already running: %s; stop it with 'tfctl cluster down' first", msg);
  }
  return TF_OK;
}

static tf_code start_task(ctl_task *t, const char *config, tf_status *st) {
  bool master = strcmp(t->job, "master") == 0;
  char *prog = tf_ctl_find_program(master ? "tfmaster" : "tfworker");
  char task[16];
  snprintf(task, sizeof task, "%d", t->task);
  char *argv_m[] = {prog, "--config", (char *)config, NULL};
  char *argv_w[] = {prog, "--config", (char *)config, "--job", (char *)t->job,
                    "--task", task, NULL};
  FILE *f = fopen(t->log, "w"); /* a fresh log per start */
  if (f != NULL) {
    fclose(f);
  }
  tf_ctl_spawn_opts so = {.log_path = t->log, .detach = true};
  tf_code code = tf_ctl_spawn(master ? argv_m : argv_w, &so, &t->pid, st);
  free(prog);
  if (code != TF_OK) {
    return tf_status_prefix(st, "/job:%s/task:%d", t->job, t->task);
  }
  return tf_pidfile_write(t->pidf, t->pid, st);
}

/* Notes every task that has exited (reaping it); returns how many have. */
static int reap_exited(ctl_task *ts, int n) {
  int exited = 0;
  for (int i = 0; i < n; i++) {
    ctl_task *t = &ts[i];
    int status = t->exited || t->pid <= 0 ? -1 : tf_ctl_reap(t->pid);
    if (status >= 0) {
      t->exited = true;
      t->ready = false;
      t->status = status;
    }
    exited += t->exited;
  }
  return exited;
}

/* Polls until every task serves as itself (tf_ctl_probe_task), one has
 * exited, or the deadline; returns whether all serve. A task's last
 * probe error is kept in why. */
static bool wait_ready(ctl_task *ts, int n, int64_t deadline) {
  for (;;) {
    int waiting = 0;
    if (reap_exited(ts, n) > 0) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      ctl_task *t = &ts[i];
      int64_t left = deadline - tf_ctl_now_ms();
      if (t->ready || left <= 0) {
        waiting += !t->ready;
        continue;
      }
      tf_status st;
      tf_status_init(&st);
      t->ready = tf_ctl_probe_task(t->url, t->job, t->task, left < 500 ? left : 500, &st) ==
                 TF_OK;
      snprintf(t->why, sizeof t->why, "%.500s", t->ready ? "" : st.msg);
      waiting += !t->ready;
    }
    if (waiting == 0 || tf_ctl_now_ms() >= deadline) {
      return waiting == 0 && reap_exited(ts, n) == 0;
    }
    tf_ctl_sleep_ms(50);
  }
}

/* After every task answered: waits until the master's health checks
 * see every task up too (so `tfctl health` right after `cluster up`
 * shows all up); false at the deadline. */
static bool wait_master_view(const tf_cluster_spec *s, int64_t deadline) {
  char *url = tf_cluster_task_url(s, "master", 0);
  bool all_up = url == NULL;
  while (!all_up && tf_ctl_now_ms() < deadline) {
    tf_status st;
    tf_status_init(&st);
    tf_ctl_task *ts = NULL;
    int n = 0;
    int64_t left = deadline - tf_ctl_now_ms();
    if (tf_ctl_cluster_status(url, left < 1000 ? (left > 0 ? left : 1) : 1000, &ts, &n, &st) ==
        TF_OK) {
      all_up = true;
      for (int i = 0; i < n; i++) {
        all_up = all_up && ts[i].up;
      }
      tf_ctl_tasks_free(ts, n);
    }
    if (!all_up) {
      tf_ctl_sleep_ms(50);
    }
  }
  free(url);
  return all_up;
}

/* How t ended or why it is not serving: "exited with status 1: <the
 * last line of its log>", "killed by signal 9 (Killed): ...", or its last
 * probe error ("no answer" when there was none). */
static void task_outcome(const ctl_task *t, char *buf, size_t n) {
  if (!t->exited) {
    snprintf(buf, n, "%s", t->why[0] != '\0' ? t->why : "no answer");
    return;
  }
  char *last = tf_ctl_file_tail(t->log, 1, "");
  size_t len = strlen(last);
  while (len > 0 && last[len - 1] == '\n') {
    last[--len] = '\0';
  }
  const char *line = last; /* without the time stamp and the "<3>" priority tag */
  if (strlen(line) > 25 && line[4] == '-' && line[10] == 'T' && line[23] == 'Z' &&
      line[24] == ' ') {
    line += 25;
  }
  if (line[0] == '<' && line[1] >= '0' && line[1] <= '7' && line[2] == '>') {
    line += 3;
  }
  if (WIFEXITED(t->status)) {
    snprintf(buf, n, "exited with status %d%s%.300s", WEXITSTATUS(t->status),
             line[0] ? ": " : " (its log is empty)", line);
  } else {
    int sig = WTERMSIG(t->status);
    snprintf(buf, n, "killed by signal %d (%s)%s%.300s", sig, strsignal(sig),
             line[0] ? ": " : " (its log is empty)", line);
  }
  free(last);
}

/* Appends "<log>:\n<its last lines>" to *d (of length *len). */
static void append_log_tail(char **d, size_t *len, const ctl_task *t) {
  char *tail = tf_ctl_file_tail(t->log, 10, "  ");
  size_t need = *len + strlen(t->log) + strlen(tail) + 8;
  char *grown = realloc(*d, need);
  if (grown != NULL) {
    *d = grown;
    *len += (size_t)snprintf(*d + *len, need - *len, "%s:\n%s", t->log, tail);
  }
  free(tail);
}

/* Stops every started task and reports the ones that exited (or, when
 * none did, never served as themselves within timeout_ms). */
static tf_code fail_up(ctl_task *ts, int n, int64_t timeout_ms, char **details,
                       tf_status *st) {
  char msg[TF_STATUS_MSG_MAX] = "";
  size_t dlen = 0;
  char *d = calloc(1, 1);
  bool any_exited = false;
  for (int i = 0; i < n; i++) {
    any_exited = any_exited || ts[i].exited;
  }
  for (int i = 0; i < n; i++) {
    ctl_task *t = &ts[i];
    if (any_exited ? !t->exited : t->ready) {
      continue;
    }
    char outcome[700], extra[900];
    task_outcome(t, outcome, sizeof outcome);
    snprintf(extra, sizeof extra, " (%s) %s", t->url, outcome);
    append_task(msg, sizeof msg, t, extra);
    append_log_tail(&d, &dlen, t);
  }
  for (int i = 0; i < n; i++) {
    if (ts[i].pid > 0 && !ts[i].exited) {
      tf_ctl_stop_pid(ts[i].pid, SIGTERM, 3000);
    }
    if (ts[i].pid > 0) {
      unlink(ts[i].pidf);
    }
  }
  if (details != NULL) {
    *details = d;
  } else {
    free(d);
  }
  if (any_exited) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "%s", msg);
  }
  return tf_status_set(st, TF_DEADLINE_EXCEEDED, "not serving within %lld ms: %s",
                       (long long)timeout_ms, msg);
}

/* --timeout-ms, else the spec's registration_ms (the time a task has to
 * come up), else its rpc_ms. */
static int64_t up_timeout_ms(const tf_ctl_cluster_opts *o) {
  if (o->timeout_ms > 0) {
    return o->timeout_ms;
  }
  return o->spec->registration_timeout_ms > 0 ? o->spec->registration_timeout_ms
                                              : o->spec->rpc_timeout_ms;
}

tf_code tf_ctl_cluster_up(const tf_ctl_cluster_opts *o, char **details, tf_status *st) {
  if (details != NULL) {
    *details = NULL;
  }
  const char *dir = o->run_dir != NULL ? o->run_dir : o->spec->run_dir;
  int64_t timeout_ms = up_timeout_ms(o);
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  char config[PATH_MAX];
  if (realpath(o->config_path, config) == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "config %s not found", o->config_path);
  }
  if (tf_ctl_mkdirs(dir, st) != TF_OK) {
    return st->code;
  }
  int n = 0;
  ctl_task *ts = list_tasks(o, dir, &n);
  tf_code code = check_not_running(ts, n, st);
  for (int i = 0; i < n && code == TF_OK; i++) {
    code = start_task(&ts[i], config, st);
  }
  if (code != TF_OK) {
    for (int i = 0; i < n; i++) {
      if (ts[i].pid > 0) {
        tf_ctl_stop_pid(ts[i].pid, SIGTERM, 3000);
        unlink(ts[i].pidf);
      }
    }
  } else if (!wait_ready(ts, n, deadline)) {
    code = fail_up(ts, n, timeout_ms, details, st);
  } else if (o->only_job == NULL &&
             (!wait_master_view(o->spec, deadline) || reap_exited(ts, n) > 0)) {
    bool exited = reap_exited(ts, n) > 0;
    for (int i = 0; i < n; i++) {
      ts[i].ready = strcmp(ts[i].job, "master") != 0;
    }
    code = fail_up(ts, n, timeout_ms, details, st);
    if (!exited) {
      tf_status_prefix(st, "the master does not see every task up");
    }
  } else {
    for (int i = 0; i < n && o->out != NULL; i++) {
      fprintf(o->out, "started /job:%s/task:%d on %s: pid %ld, log %s\n", ts[i].job,
              ts[i].task, ts[i].url, (long)ts[i].pid, ts[i].log);
    }
  }
  free_tasks(ts, n);
  return code;
}

tf_code tf_ctl_cluster_down(const tf_ctl_cluster_opts *o, tf_status *st) {
  const char *dir = o->run_dir != NULL ? o->run_dir : o->spec->run_dir;
  int n = 0, live = 0;
  ctl_task *ts = list_tasks(o, dir, &n);
  for (int i = 0; i < n; i++) {
    pid_t pid = tf_pidfile_read(ts[i].pidf);
    if (pid > 0 && tf_pid_alive(pid) && tf_pid_runs(pid, "tf")) {
      ts[i].pid = pid;
      kill(pid, SIGTERM);
      live++;
    }
  }
  if (live == 0 && o->out != NULL) {
    fprintf(o->out, "nothing running under %s (no pid file there names a live daemon)\n",
            dir);
  }
  int64_t deadline = tf_ctl_now_ms() + o->spec->drain_ms + 2000;
  char survivors[TF_STATUS_MSG_MAX] = "";
  for (int i = 0; i < n; i++) {
    ctl_task *t = &ts[i];
    while (t->pid > 0 && tf_pid_alive(t->pid) && tf_ctl_now_ms() < deadline) {
      tf_ctl_reap(t->pid);
      tf_ctl_sleep_ms(20);
    }
    bool killed = false;
    if (t->pid > 0 && tf_pid_alive(t->pid)) {
      killed = true;
      if (tf_ctl_stop_pid(t->pid, SIGKILL, 2000) < 0) {
        char extra[32];
        snprintf(extra, sizeof extra, " (pid %ld)", (long)t->pid);
        append_task(survivors, sizeof survivors, t, extra);
        continue;
      }
    }
    if (t->pid > 0 && o->out != NULL) {
      fprintf(o->out, "%s /job:%s/task:%d (pid %ld)\n", killed ? "killed" : "stopped", t->job,
              t->task, (long)t->pid);
    }
    unlink(t->pidf);
  }
  free_tasks(ts, n);
  if (survivors[0] != '\0') {
    return tf_status_set(st, TF_INTERNAL, "still running after SIGKILL: %s", survivors);
  }
  return TF_OK;
}
