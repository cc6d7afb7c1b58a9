/* ctl_jobs.c: tfctl's job commands (ctl_jobs.h): reading and submitting
 * a spec, the jobs table, a job's summary and progress line, following a
 * job until it ends (polling JobStatus; a failed poll is retried for a
 * while), the control actions, the log lines, and checkpoints (take one,
 * list them, restore one). Output goes to the
 * streams the caller gives, so tests read it without a terminal. */
#include "cmd/tfctl/ctl_jobs.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/core/base/util.h"
#include "lib/transport/messages.h"

#define BAR_WIDTH 20

static int fail(const tf_ctl_jobs_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One line "tfctl: <reason>" on o->err (newlines become spaces); 1. */
static int fail(const tf_ctl_jobs_opts *o, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p != '\0'; p++) {
    if (*p == '\n') {
      *p = ' ';
    }
  }
  fflush(o->out);
  fprintf(o->err, "tfctl: %s\n", msg);
  fflush(o->err);
  return 1;
}

static int64_t opt_or(int64_t v, int64_t dflt) { return v > 0 ? v : dflt; }

bool tf_ctl_job_final(const char *state) {
  return strcmp(state, "done") == 0 || strcmp(state, "failed") == 0 ||
         strcmp(state, "cancelled") == 0;
}

/* ---- formatting ------------------------------------------------------------ */

/* "1200/3000", or "1200" when the total is not known. */
static const char *step_text(const tf_ctl_job *j, char *buf, size_t n) {
  if (j->steps > 0) {
    snprintf(buf, n, "%lld/%lld", (long long)j->step, (long long)j->steps);
  } else {
    snprintf(buf, n, "%lld", (long long)j->step);
  }
  return buf;
}

/* "0.4123", or "-" before the first loss. */
static const char *loss_text(double loss, char *buf, size_t n) {
  if (isnan(loss)) {
    snprintf(buf, n, "-");
  } else {
    snprintf(buf, n, "%.4f", loss);
  }
  return buf;
}

/* "21 s", "12m05s", "3h07m": the time left at the current rate, or "-". */
static const char *eta_text(const tf_ctl_job *j, char *buf, size_t n) {
  if (j->steps <= 0 || j->step >= j->steps || !(j->steps_per_s > 0) ||
      strcmp(j->state, "running") != 0) {
    snprintf(buf, n, "-");
    return buf;
  }
  double s = round((double)(j->steps - j->step) / j->steps_per_s);
  long long t = s < 1e12 ? (long long)s : 999999999999LL;
  if (t < 100) {
    snprintf(buf, n, "%lld s", t);
  } else if (t < 6000) {
    snprintf(buf, n, "%lldm%02llds", t / 60, t % 60);
  } else {
    snprintf(buf, n, "%lldh%02lldm", t / 3600, t / 60 % 60);
  }
  return buf;
}

/* "[=======>            ] 1200/3000  40%  " (or "step 1200  " without a total). */
static void bar_text(const tf_ctl_job *j, char *buf, size_t n) {
  char st[48];
  if (j->steps <= 0) {
    snprintf(buf, n, "step %s  ", step_text(j, st, sizeof st));
    return;
  }
  int64_t done = j->step < j->steps ? j->step : j->steps;
  int pos = (int)((double)done * BAR_WIDTH / (double)j->steps);
  char bar[BAR_WIDTH + 1];
  for (int i = 0; i < BAR_WIDTH; i++) {
    bar[i] = i < pos ? '=' : i == pos ? '>' : ' ';
  }
  bar[BAR_WIDTH] = '\0';
  int pct = (int)((double)done * 100.0 / (double)j->steps);
  snprintf(buf, n, "[%s] %s  %d%%  ", bar, step_text(j, st, sizeof st), pct);
}

const char *tf_ctl_job_line(const tf_ctl_job *j, bool bar, char *buf, size_t n) {
  char st[48], loss[32], eta[32];
  if (!bar) {
    snprintf(buf, n, "step %s loss %s %.1f steps/s state %s", step_text(j, st, sizeof st),
             loss_text(j->loss, loss, sizeof loss), j->steps_per_s, j->state);
    return buf;
  }
  char head[96];
  bar_text(j, head, sizeof head);
  if (j->steps > 0) {
    snprintf(buf, n, "%sloss %s  %.1f steps/s  ETA %s  %s", head,
             loss_text(j->loss, loss, sizeof loss), j->steps_per_s,
             eta_text(j, eta, sizeof eta), j->state);
  } else {
    snprintf(buf, n, "%sloss %s  %.1f steps/s  %s", head,
             loss_text(j->loss, loss, sizeof loss), j->steps_per_s, j->state);
  }
  return buf;
}

void tf_ctl_job_summary(FILE *f, const tf_ctl_job *j) {
  char st[48], loss[32];
  fprintf(f, "job: %s\n", j->job);
  fprintf(f, "name: %s\n", j->name);
  fprintf(f, "state: %s\n", j->state);
  fprintf(f, "mode: %s", j->mode[0] != '\0' ? j->mode : "-");
  if (j->workers > 0) {
    fprintf(f, ", %d worker%s", j->workers, j->workers == 1 ? "" : "s");
  }
  fprintf(f, "\nstep: %s\n", step_text(j, st, sizeof st));
  if (j->n_replica_steps > 0) {
    fprintf(f, "replica steps:");
    for (int i = 0; i < j->n_replica_steps; i++) {
      fprintf(f, " %lld", (long long)j->replica_steps[i]);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "loss: %s\n", loss_text(j->loss, loss, sizeof loss));
  fprintf(f, "steps/s: %.1f\n", j->steps_per_s);
  fprintf(f, "elapsed: %.1f s\n", (double)j->elapsed_ms / 1000.0);
  fprintf(f, "recoveries: %d\n", j->recoveries);
  if (j->checkpoint[0] != '\0') {
    fprintf(f, "checkpoint: %s (step %lld)\n", j->checkpoint, (long long)j->checkpoint_step);
  }
  if (strcmp(j->state, "failed") == 0) {
    fprintf(f, "error: %s\n", j->error[0] != '\0' ? j->error : "-");
  }
  for (int i = 0; i < j->n_metrics; i++) {
    fprintf(f, "%s: %.4f\n", j->metrics[i].name, j->metrics[i].value);
  }
}

/* ---- submit ---------------------------------------------------------------- */

/* Reads path into *buf (malloc'd, *len bytes), refusing more than
 * TF_MSG_MAX_JOB_SPEC_BYTES. Returns 0 or 1 (reported). */
static int read_spec(const tf_ctl_jobs_opts *o, const char *path, char **buf, size_t *len) {
  const size_t cap = TF_MSG_MAX_JOB_SPEC_BYTES;
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    return fail(o, "cannot read job spec %s: %s", path, strerror(errno));
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > cap) {
    fclose(f);
    return fail(o, "job spec %s is %lld bytes, over the limit of %zu (1 MiB)", path,
                (long long)sb.st_size, cap);
  }
  char *b = malloc(cap + 1);
  size_t n = fread(b, 1, cap + 1, f); /* a pipe may say nothing of its size */
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err != 0) {
    free(b);
    return fail(o, "cannot read job spec %s: %s", path, strerror(err));
  }
  if (n > cap) {
    free(b);
    return fail(o, "job spec %s is over the limit of %zu bytes (1 MiB)", path, cap);
  }
  *buf = b;
  *len = n;
  return 0;
}

int tf_ctl_cmd_submit(const tf_ctl_jobs_opts *o, const char *path) {
  char *spec = NULL;
  size_t len = 0;
  if (read_spec(o, path, &spec, &len) != 0) {
    return 1;
  }
  tf_status st;
  tf_status_init(&st);
  char *job = NULL;
  tf_code code = tf_ctl_submit_job(o->master_url, o->timeout_ms, spec, len, path, &job, &st);
  free(spec);
  if (code != TF_OK) {
    return fail(o, "%s", st.msg);
  }
  fprintf(o->out, "submitted job %s to %s\n%s\n", job, o->master_url, job);
  fflush(o->out);
  free(job);
  return 0;
}

/* ---- tables --------------------------------------------------------------- */

enum { CELL = 128 };

/* Prints rows x cols cells (row-major; row 0 the header) as columns two
 * spaces apart, each as wide as its widest cell (the last unpadded). */
static void print_table(FILE *f, int rows, int cols, const char (*cells)[CELL]) {
  int width[8] = {0};
  TF_ASSERT(cols <= 8);
  for (int r = 0; r < rows; r++) {
    for (int k = 0; k < cols; k++) {
      int w = (int)strlen(cells[r * cols + k]);
      width[k] = w > width[k] ? w : width[k];
    }
  }
  for (int r = 0; r < rows; r++) {
    for (int k = 0; k < cols - 1; k++) {
      fprintf(f, "%-*s  ", width[k], cells[r * cols + k]);
    }
    fprintf(f, "%s\n", cells[r * cols + cols - 1]);
  }
  fflush(f);
}

/* ---- jobs ------------------------------------------------------------------ */

enum { N_COLS = 6 };

/* The cells of row r (0: the header) of the jobs table into c[N_COLS]. */
static void job_cells(const tf_ctl_job *j, char c[N_COLS][128]) {
  static const char *const head[N_COLS] = {"JOB", "NAME", "STATE", "STEP", "LOSS",
                                           "ELAPSED"};
  if (j == NULL) {
    for (int k = 0; k < N_COLS; k++) {
      snprintf(c[k], 128, "%s", head[k]);
    }
    return;
  }
  snprintf(c[0], 128, "%s", j->job);
  snprintf(c[1], 128, "%s", j->name);
  snprintf(c[2], 128, "%s", j->state);
  step_text(j, c[3], 128);
  loss_text(j->loss, c[4], 128);
  snprintf(c[5], 128, "%.1f s", (double)j->elapsed_ms / 1000.0);
}

int tf_ctl_cmd_jobs(const tf_ctl_jobs_opts *o) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_job *js = NULL;
  int n = 0;
  if (tf_ctl_list_jobs(o->master_url, o->timeout_ms, &js, &n, &st) != TF_OK) {
    return fail(o, "%s", st.msg);
  }
  if (n == 0) {
    fprintf(o->out, "no jobs\n");
  }
  char (*cells)[N_COLS][CELL] = calloc((size_t)n + 1, sizeof *cells);
  for (int r = 0; n > 0 && r <= n; r++) {
    job_cells(r == 0 ? NULL : &js[r - 1], cells[r]);
  }
  print_table(o->out, n > 0 ? n + 1 : 0, N_COLS, (const char (*)[CELL])cells);
  fflush(o->out);
  free(cells);
  tf_ctl_jobs_free(js, n);
  return 0;
}

/* ---- polling --------------------------------------------------------------- */

/* What --follow keeps between polls. */
typedef struct follow {
  const tf_ctl_jobs_opts *o;
  const char *job;
  int64_t failing_since_ms; /* when the first of the failed polls in a row began; -1 */
  int64_t last_line_ms;     /* plain mode: when the last line was printed */
  char state[64];           /* the state last shown ("" before the first) */
  size_t drawn;             /* tty: the length of the line on the screen */
} follow;

/* Whether a poll that failed with code may succeed if tried again: the
 * master did not answer (yet), or is restarting. */
static bool transient(tf_code code) {
  return code == TF_DEADLINE_EXCEEDED || code == TF_UNAVAILABLE;
}

/* After a poll that began at t0 and failed with st: 0 to go on polling, or
 * 1 (reported) when the failure is not transient or failures have lasted
 * unreachable_ms. */
static int poll_failed(follow *f, int64_t t0, const tf_status *st) {
  if (f->drawn > 0) {
    fputc('\n', f->o->out); /* keep the progress line */
    f->drawn = 0;
  }
  if (!transient(st->code)) {
    return fail(f->o, "%s", st->msg);
  }
  if (f->failing_since_ms < 0) {
    f->failing_since_ms = t0;
  }
  int64_t for_ms = tf_ctl_now_ms() - f->failing_since_ms;
  if (for_ms >= opt_or(f->o->unreachable_ms, 10000)) {
    return fail(f->o, "following job %s: no answer from the master for %.1f s: %s", f->job,
                (double)for_ms / 1000.0, st->msg);
  }
  return 0;
}

/* JobStatus into *j: 0 with *answered (and *j filled) or not (a transient
 * failure: poll again), or 1 (reported). */
static int poll_status(follow *f, tf_ctl_job *j, bool *answered) {
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = tf_ctl_now_ms();
  *answered = tf_ctl_job_status(f->o->master_url, f->o->timeout_ms, f->job, j, &st) == TF_OK;
  if (*answered) {
    f->failing_since_ms = -1;
    return 0;
  }
  return poll_failed(f, t0, &st);
}

/* Shows j's progress: the redrawn line on a terminal, else a line when the
 * state changed or plain_every_ms passed. */
static void show_progress(follow *f, const tf_ctl_job *j) {
  char line[512];
  int64_t now = tf_ctl_now_ms();
  FILE *out = f->o->out;
  if (f->o->tty) {
    size_t n = strlen(tf_ctl_job_line(j, true, line, sizeof line));
    fprintf(out, "\r%s%*s", line, f->drawn > n ? (int)(f->drawn - n) : 0, "");
    f->drawn = n;
  } else if (strcmp(f->state, j->state) != 0 ||
             now - f->last_line_ms >= opt_or(f->o->plain_every_ms, 5000)) {
    fprintf(out, "%s\n", tf_ctl_job_line(j, false, line, sizeof line));
    f->last_line_ms = now;
  }
  snprintf(f->state, sizeof f->state, "%s", j->state);
  fflush(out);
}

/* The end of a followed job: the summary, and its exit status. */
static int follow_end(follow *f, const tf_ctl_job *j) {
  if (f->drawn > 0) {
    fputc('\n', f->o->out);
    f->drawn = 0;
  }
  tf_ctl_job_summary(f->o->out, j);
  if (strcmp(j->state, "failed") == 0) {
    return fail(f->o, "job %s failed: %s", j->job, j->error[0] != '\0' ? j->error
                                                                        : "no reason given");
  }
  if (strcmp(j->state, "cancelled") == 0) {
    return fail(f->o, "job %s was cancelled", j->job);
  }
  fflush(f->o->out);
  return 0;
}

int tf_ctl_cmd_status(const tf_ctl_jobs_opts *o, const char *job, bool follow_job) {
  tf_ctl_job j;
  if (!follow_job) {
    tf_status st;
    tf_status_init(&st);
    if (tf_ctl_job_status(o->master_url, o->timeout_ms, job, &j, &st) != TF_OK) {
      return fail(o, "%s", st.msg);
    }
    tf_ctl_job_summary(o->out, &j);
    fflush(o->out);
    tf_ctl_job_fini(&j);
    return 0;
  }
  follow f = {.o = o, .job = job, .failing_since_ms = -1, .last_line_ms = 0};
  for (;;) {
    bool answered = false;
    if (poll_status(&f, &j, &answered) != 0) {
      return 1;
    }
    if (answered) {
      bool final = tf_ctl_job_final(j.state);
      show_progress(&f, &j);
      int rc = final ? follow_end(&f, &j) : 0;
      tf_ctl_job_fini(&j);
      if (final) {
        return rc;
      }
    }
    tf_ctl_sleep_ms(opt_or(o->poll_ms, 200));
  }
}

/* ---- control --------------------------------------------------------------- */

int tf_ctl_cmd_control(const tf_ctl_jobs_opts *o, const char *job, const char *action,
                       int64_t steps) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_job j;
  if (tf_ctl_job_control(o->master_url, o->timeout_ms, job, action, steps, &j, &st) !=
      TF_OK) {
    return fail(o, "%s", st.msg);
  }
  if (strcmp(action, "step") == 0) {
    char s[48], loss[32];
    fprintf(o->out, "job %s: %s, step %s, loss %s\n", j.job, j.state,
            step_text(&j, s, sizeof s), loss_text(j.loss, loss, sizeof loss));
  } else {
    fprintf(o->out, "job %s: %s\n", j.job, j.state);
  }
  fflush(o->out);
  tf_ctl_job_fini(&j);
  return 0;
}

/* ---- logs ------------------------------------------------------------------ */

/* One JobLogs call from *from: prints the lines numbered *from on and
 * advances *from; *got: how many it printed, -1 when the call failed and
 * may be tried again (with f only). Returns 0, or 1 (reported): any
 * failure without f, as poll_failed with it. */
static int fetch_logs(const tf_ctl_jobs_opts *o, const char *job, follow *f,
                      int64_t *from, int *got) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_log l;
  int64_t t0 = tf_ctl_now_ms();
  *got = 0;
  if (tf_ctl_job_logs(o->master_url, o->timeout_ms, job, *from, &l, &st) != TF_OK) {
    *got = -1;
    return f != NULL ? poll_failed(f, t0, &st) : fail(o, "%s", st.msg);
  }
  if (f != NULL) {
    f->failing_since_ms = -1;
  }
  for (int i = 0; i < l.n_lines; i++) {
    if (l.first + i >= *from) { /* a master that repeats lines prints them once */
      fprintf(o->out, "%s\n", l.lines[i]);
      (*got)++;
    }
  }
  if (l.next > *from) {
    *from = l.next;
  }
  fflush(o->out);
  tf_ctl_log_fini(&l);
  return 0;
}

int tf_ctl_cmd_logs(const tf_ctl_jobs_opts *o, const char *job, bool follow_job) {
  follow f = {.o = o, .job = job, .failing_since_ms = -1};
  follow *fp = follow_job ? &f : NULL;
  int64_t from = 0;
  bool final = false;
  for (;;) {
    int got = 0;
    if (fetch_logs(o, job, fp, &from, &got) != 0) {
      return 1;
    }
    if (got > 0) {
      continue; /* more may be waiting right away */
    }
    if (got < 0) {
      tf_ctl_sleep_ms(opt_or(o->poll_ms, 200)); /* no answer: ask again */
      continue;
    }
    if (!follow_job || final) {
      return 0;
    }
    tf_ctl_job j;
    bool answered = false;
    if (poll_status(&f, &j, &answered) != 0) {
      return 1;
    }
    if (answered) {
      final = tf_ctl_job_final(j.state); /* then once more for the last lines */
      tf_ctl_job_fini(&j);
      if (final) {
        continue;
      }
    }
    tf_ctl_sleep_ms(opt_or(o->poll_ms, 200));
  }
}

/* ---- checkpoints ----------------------------------------------------------- */

int tf_ctl_cmd_checkpoint(const tf_ctl_jobs_opts *o, const char *job) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_job j;
  if (tf_ctl_job_checkpoint(o->master_url, o->timeout_ms, job, &j, &st) != TF_OK) {
    return fail(o, "%s", st.msg);
  }
  if (j.note[0] == '\0') {
    tf_ctl_job_fini(&j);
    return fail(o, "job %s: the master took a checkpoint but did not say where", job);
  }
  if (strcmp(j.checkpoint, j.note) == 0) {
    fprintf(o->out, "job %s: checkpoint at step %lld\n", j.job, (long long)j.checkpoint_step);
  } else {
    fprintf(o->out, "job %s: checkpoint taken\n", j.job);
  }
  fprintf(o->out, "%s\n", j.note);
  fflush(o->out);
  tf_ctl_job_fini(&j);
  return 0;
}

/* "812 B", "1.5 KiB", "12.3 MiB", ... */
static const char *size_text(int64_t bytes, char *buf, size_t n) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buf, n, "%lld B", (long long)bytes);
    return buf;
  }
  double v = (double)bytes / 1024.0;
  int u = 0;
  while (v >= 1023.95 && u < 5) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, n, "%.1f %s", v, units[u]);
  return buf;
}

/* "2025-06-01 14:03:07" in local time, or "-" for 0. */
static const char *time_text(int64_t ms, char *buf, size_t n) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (ms <= 0 || localtime_r(&t, &tm) == NULL || strftime(buf, n, "%Y-%m-%d %H:%M:%S",
                                                          &tm) == 0) {
    snprintf(buf, n, "-");
  }
  return buf;
}

enum { CK_COLS = 4 };

int tf_ctl_cmd_checkpoints(const tf_ctl_jobs_opts *o, const char *job) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_ckpts c;
  if (tf_ctl_job_checkpoints(o->master_url, o->timeout_ms, job, &c, &st) != TF_OK) {
    return fail(o, "%s", st.msg);
  }
  if (c.n == 0) {
    fprintf(o->out, "no checkpoints yet (in %s)\n", c.dir);
    fflush(o->out);
    tf_ctl_ckpts_fini(&c);
    return 0;
  }
  char (*cells)[CK_COLS][CELL] = calloc((size_t)c.n + 1, sizeof *cells);
  static const char *const head[CK_COLS] = {"CHECKPOINT", "STEP", "TIME", "SIZE"};
  for (int k = 0; k < CK_COLS; k++) {
    snprintf(cells[0][k], CELL, "%s", head[k]);
  }
  for (int i = 0; i < c.n; i++) {
    const tf_ctl_ckpt *k = &c.items[i];
    snprintf(cells[i + 1][0], CELL, "%s", k->name);
    snprintf(cells[i + 1][1], CELL, "%lld", (long long)k->step);
    time_text(k->time_ms, cells[i + 1][2], CELL);
    size_text(k->bytes, cells[i + 1][3], CELL);
  }
  print_table(o->out, c.n + 1, CK_COLS, (const char (*)[CELL])cells);
  free(cells);
  tf_ctl_ckpts_fini(&c);
  return 0;
}

int tf_ctl_cmd_restore(const tf_ctl_jobs_opts *o, const char *job, const char *ckpt) {
  tf_status st;
  tf_status_init(&st);
  tf_ctl_job j;
  if (tf_ctl_job_restore(o->master_url, o->timeout_ms, job, ckpt, &j, &st) != TF_OK) {
    return fail(o, "%s", st.msg);
  }
  if (j.note[0] != '\0') {
    fprintf(o->out, "%s\n", j.note);
  } else {
    fprintf(o->out, "job %s: %s\n", j.job, j.state);
  }
  fflush(o->out);
  tf_ctl_job_fini(&j);
  return 0;
}
