/* ctl_top.c: tfctl top (ctl_top.h). The rates come from two GetStatus
 * samples of the same incarnation; a task that restarted, went down or
 * sent no counter shows "-" for what is not known rather than a guess.
 * Samples are taken by at most TF_CTL_TOP_CONCURRENCY threads pulling
 * tasks from a shared index, each call with the command's deadline. */
#include "cmd/tfctl/ctl_top.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/transport/messages.h"

/* ---- rates and units ------------------------------------------------------- */

tf_ctl_top_sample tf_ctl_top_sample_of(const tf_ctl_task *t, int64_t at_ns) {
  tf_ctl_top_sample s = {.up = t->up, .at_ns = at_ns, .running_steps = -1};
  if (!t->up) {
    return s;
  }
  s.incarnation = t->incarnation;
  s.has = t->has;
  s.steps = t->steps_run;
  s.bytes_sent = t->bytes_sent;
  s.bytes_received = t->bytes_received;
  s.mem_in_use = t->mem_in_use;
  s.mem_peak = t->mem_peak;
  s.running_steps = (t->has & TF_MSG_STATUS_RUNNING_STEPS) ? t->running_steps : -1;
  return s;
}

/* (c - p) per second over dt_s when both samples carry bit and c >= p;
 * else -1. */
static double rate(unsigned has_p, unsigned has_c, unsigned bit, uint64_t p, uint64_t c,
                   double dt_s) {
  if ((has_p & bit) == 0 || (has_c & bit) == 0 || c < p || !(dt_s > 0)) {
    return -1;
  }
  return (double)(c - p) / dt_s;
}

void tf_ctl_top_row_of(const char *job, int task, const tf_ctl_top_sample *prev,
                       const tf_ctl_top_sample *cur, tf_ctl_top_row *row) {
  memset(row, 0, sizeof *row);
  snprintf(row->task, sizeof row->task, "/job:%s/task:%d", job, task);
  row->up = cur->up;
  row->steps_per_s = row->recv_per_s = row->sent_per_s = -1;
  row->mem_in_use = row->mem_peak = -1;
  row->running_steps = -1;
  if (!cur->up) {
    return;
  }
  row->mem_in_use = (cur->has & TF_MSG_STATUS_MEM_IN_USE) ? cur->mem_in_use : -1;
  row->mem_peak = (cur->has & TF_MSG_STATUS_MEM_PEAK) ? cur->mem_peak : -1;
  row->running_steps = cur->running_steps;
  if (prev == NULL || !prev->up || prev->incarnation != cur->incarnation) {
    return;
  }
  double dt = (double)(cur->at_ns - prev->at_ns) / 1e9;
  row->steps_per_s = rate(prev->has, cur->has, TF_MSG_STATUS_STEPS_RUN, prev->steps,
                          cur->steps, dt);
  row->recv_per_s = rate(prev->has, cur->has, TF_MSG_STATUS_BYTES_RECEIVED,
                         prev->bytes_received, cur->bytes_received, dt);
  row->sent_per_s = rate(prev->has, cur->has, TF_MSG_STATUS_BYTES_SENT, prev->bytes_sent,
                         cur->bytes_sent, dt);
}

char *tf_ctl_fmt_bytes(double v, char *buf, size_t n) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (!(v >= 0)) {
    snprintf(buf, n, "-");
    return buf;
  }
  if (v < 1024) {
    snprintf(buf, n, "%.0f B", v);
    return buf;
  }
  int u = 0;
  v /= 1024;
  /* Move up when the value would print as 1024.0 at one decimal. */
  while (u < 4 && v >= 1023.95) {
    v /= 1024;
    u++;
  }
  snprintf(buf, n, "%.1f %s", v, units[u]);
  return buf;
}

char *tf_ctl_fmt_count(double v, char *buf, size_t n) {
  static const char suffix[] = {'k', 'M', 'G', 'T'};
  if (!(v >= 0)) {
    snprintf(buf, n, "-");
    return buf;
  }
  if (v == 0) {
    snprintf(buf, n, "0");
    return buf;
  }
  if (v < 999.95) {
    snprintf(buf, n, "%.1f", v);
    return buf;
  }
  int u = 0;
  v /= 1000;
  while (u < 3 && v >= 999.95) {
    v /= 1000;
    u++;
  }
  snprintf(buf, n, "%.1f%c", v, suffix[u]);
  return buf;
}

/* ---- a frame --------------------------------------------------------------- */

/* Appends printf-style text to the growing string *s of length *len. */
static void appendf(char **s, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char **s, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  TF_ASSERT(k >= 0);
  if (*len + (size_t)k + 1 > *cap) {
    *cap = (*len + (size_t)k + 1) * 2;
    *s = tf__xrealloc(*s, *cap);
  }
  va_start(ap, fmt);
  vsnprintf(*s + *len, *cap - *len, fmt, ap);
  va_end(ap);
  *len += (size_t)k;
}

char *tf_ctl_top_frame(const tf_ctl_top_head *h, const tf_ctl_top_row *rows, int n) {
  size_t len = 0, cap = 256;
  char *s = tf__xmalloc(cap);
  s[0] = '\0';
  int up = 0, w = 4; /* "TASK" */
  for (int i = 0; i < n; i++) {
    up += rows[i].up;
    int l = (int)strlen(rows[i].task);
    w = l > w ? l : w;
  }
  char stamp[40] = "?";
  struct tm tm;
  if (localtime_r(&h->now, &tm) != NULL) {
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S%z", &tm);
  }
  appendf(&s, &len, &cap, "tfctl top: %s, %d task%s (%d up), every %lld ms, %s\n",
          h->master_url, n, n == 1 ? "" : "s", up, (long long)h->interval_ms, stamp);
  appendf(&s, &len, &cap, "%-*s %-5s %8s %11s %11s %10s %10s %7s\n", w, "TASK", "STATE",
          "STEPS/S", "RECV/S", "SENT/S", "MEM", "MEM-PEAK", "RUNNING");
  for (int i = 0; i < n; i++) {
    const tf_ctl_top_row *r = &rows[i];
    char steps[16], recv[24], sent[24], mem[24], peak[24], run[16] = "-";
    char recv_s[32], sent_s[32];
    tf_ctl_fmt_count(r->steps_per_s, steps, sizeof steps);
    tf_ctl_fmt_bytes(r->recv_per_s, recv, sizeof recv);
    tf_ctl_fmt_bytes(r->sent_per_s, sent, sizeof sent);
    snprintf(recv_s, sizeof recv_s, "%s%s", recv, r->recv_per_s >= 0 ? "/s" : "");
    snprintf(sent_s, sizeof sent_s, "%s%s", sent, r->sent_per_s >= 0 ? "/s" : "");
    tf_ctl_fmt_bytes((double)r->mem_in_use, mem, sizeof mem);
    tf_ctl_fmt_bytes((double)r->mem_peak, peak, sizeof peak);
    if (r->running_steps >= 0) {
      snprintf(run, sizeof run, "%d", r->running_steps);
    }
    appendf(&s, &len, &cap, "%-*s %-5s %8s %11s %11s %10s %10s %7s\n", w, r->task,
            r->up ? "up" : "down", steps, recv_s, sent_s, mem, peak, run);
  }
  return s;
}

/* ---- sampling -------------------------------------------------------------- */

typedef struct sampler {
  const tf_ctl_task *tasks;  /* the list: job, task, url */
  int n;
  const char *master_url;    /* the master is asked here, not at its listed url */
  int64_t timeout_ms;
  atomic_int next;
  tf_ctl_top_sample *out;    /* [n] */
} sampler;

static void *sample_main(void *arg) {
  sampler *sp = arg;
  for (int i; (i = atomic_fetch_add(&sp->next, 1)) < sp->n;) {
    const tf_ctl_task *t = &sp->tasks[i];
    const char *url = i == 0 && strcmp(t->job, "master") == 0 ? sp->master_url : t->url;
    tf_ctl_task got;
    memset(&got, 0, sizeof got);
    if (url != NULL && url[0] != '\0') {
      tf_status st;
      tf_status_init(&st);
      tf_ctl_get_status(url, sp->timeout_ms, &got, &st);
    }
    sp->out[i] = tf_ctl_top_sample_of(&got, tf__now_ns());
    tf_ctl_task_fini(&got);
  }
  return NULL;
}

/* GetStatus to every task of ts[0..n) into out[0..n), in parallel. */
static void sample_all(const tf_ctl_top_opts *o, const tf_ctl_task *ts, int n,
                       tf_ctl_top_sample *out) {
  sampler sp = {.tasks = ts, .n = n, .master_url = o->master_url,
                .timeout_ms = o->timeout_ms, .out = out};
  atomic_init(&sp.next, 0);
  int n_th = n < TF_CTL_TOP_CONCURRENCY ? n : TF_CTL_TOP_CONCURRENCY;
  pthread_t th[TF_CTL_TOP_CONCURRENCY];
  int started = 0;
  for (; started < n_th; started++) {
    if (pthread_create(&th[started], NULL, sample_main, &sp) != 0) {
      break;
    }
  }
  if (started == 0) {
    sample_main(&sp); /* no thread to spare: one after another, here */
  }
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
  }
}

/* ---- the loop -------------------------------------------------------------- */

static const char HIDE_CURSOR[] = "\033[?25l", SHOW_CURSOR[] = "\033[?25h",
                  HOME_CLEAR[] = "\033[H\033[2J";

/* SIGINT/SIGTERM while redrawing: the cursor comes back, then the signal
 * does what it would have (SA_RESETHAND restored the default; it is
 * delivered again once this returns). */
static void on_signal(int sig) {
  ssize_t k = write(STDOUT_FILENO, SHOW_CURSOR, sizeof SHOW_CURSOR - 1);
  k += write(STDOUT_FILENO, "\n", 1);
  (void)k;
  raise(sig);
}

/* One view: the current list and its samples. */
typedef struct view {
  tf_ctl_task *tasks;
  int n;
  tf_ctl_top_sample *samples;
} view;

static void view_fini(view *v) {
  tf_ctl_tasks_free(v->tasks, v->n);
  free(v->samples);
  memset(v, 0, sizeof *v);
}

/* The sample of job/task in v (index hint i first), or NULL. */
static const tf_ctl_top_sample *find_sample(const view *v, int i, const char *job, int task) {
  if (i < v->n && v->tasks[i].task == task && strcmp(v->tasks[i].job, job) == 0) {
    return &v->samples[i];
  }
  for (int k = 0; k < v->n; k++) {
    if (v->tasks[k].task == task && strcmp(v->tasks[k].job, job) == 0) {
      return &v->samples[k];
    }
  }
  return NULL;
}

/* The task list now: ClusterStatus, or (when the master does not answer)
 * a copy of the names and addresses in prev. */
static void next_list(const tf_ctl_top_opts *o, const view *prev, view *cur) {
  tf_status st;
  tf_status_init(&st);
  memset(cur, 0, sizeof *cur);
  if (tf_ctl_cluster_status(o->master_url, o->timeout_ms, &cur->tasks, &cur->n, &st) !=
      TF_OK) {
    cur->n = prev->n;
    cur->tasks = tf__xcalloc((size_t)cur->n + 1, sizeof *cur->tasks);
    for (int i = 0; i < cur->n; i++) {
      cur->tasks[i].job = strdup(prev->tasks[i].job);
      cur->tasks[i].task = prev->tasks[i].task;
      cur->tasks[i].url = strdup(prev->tasks[i].url != NULL ? prev->tasks[i].url : "");
    }
  }
  cur->samples = tf__xcalloc((size_t)cur->n + 1, sizeof *cur->samples);
  sample_all(o, cur->tasks, cur->n, cur->samples);
}

/* Prints the frame of cur against prev (a blank line before every frame
 * but the first when frames follow each other). */
static void print_frame(const tf_ctl_top_opts *o, const view *prev, const view *cur,
                        bool first) {
  tf_ctl_top_row *rows = tf__xcalloc((size_t)cur->n + 1, sizeof *rows);
  for (int i = 0; i < cur->n; i++) {
    const tf_ctl_task *t = &cur->tasks[i];
    tf_ctl_top_row_of(t->job, t->task, find_sample(prev, i, t->job, t->task),
                      &cur->samples[i], &rows[i]);
  }
  tf_ctl_top_head h = {.master_url = o->master_url, .interval_ms = o->interval_ms,
                       .now = time(NULL)};
  char *text = tf_ctl_top_frame(&h, rows, cur->n);
  if (o->redraw) {
    fputs(HOME_CLEAR, o->out);
  } else if (!first) {
    fputc('\n', o->out);
  }
  fputs(text, o->out);
  fflush(o->out);
  free(text);
  free(rows);
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* The frames: sample, sleep, sample, print; the last sample is the next
 * frame's first. Takes first's list and samples. */
static void run_frames(const tf_ctl_top_opts *o, view *first) {
  view prev = *first, cur;
  memset(first, 0, sizeof *first);
  for (int64_t f = 0; o->frames == 0 || f < o->frames; f++) {
    sleep_ms(o->interval_ms);
    next_list(o, &prev, &cur);
    print_frame(o, &prev, &cur, f == 0);
    view_fini(&prev);
    prev = cur;
  }
  view_fini(&prev);
}

int tf_ctl_cmd_top(const tf_ctl_top_opts *o) {
  tf_status st;
  tf_status_init(&st);
  view first = {0};
  if (tf_ctl_cluster_status(o->master_url, o->timeout_ms, &first.tasks, &first.n, &st) !=
      TF_OK) {
    fprintf(o->err, "tfctl: top: the master at %s did not answer ClusterStatus: %s\n",
            o->master_url, st.msg);
    return 1;
  }
  first.samples = tf__xcalloc((size_t)first.n + 1, sizeof *first.samples);
  sample_all(o, first.tasks, first.n, first.samples);
  struct sigaction sa, old_int, old_term;
  if (o->redraw) {
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fputs(HIDE_CURSOR, o->out);
    fflush(o->out);
  }
  run_frames(o, &first);
  if (o->redraw) {
    fputs(SHOW_CURSOR, o->out);
    fflush(o->out);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
  }
  return 0;
}
