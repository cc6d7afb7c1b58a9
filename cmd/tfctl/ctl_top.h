/* ctl_top.h: tfctl top (docs/operations.md "Watching a cluster: tfctl
 * top"), a live view of every task's steps/s, bytes/s in and out, memory
 * and running steps. It asks the master for the task list (ClusterStatus)
 * and every task, the master included, for GetStatus (ctl_client.h),
 * each call with a deadline, and turns two successive samples into rates.
 * The pure parts (rates, human units, a frame's text) are separate from
 * the loop that calls the cluster, so they are tested without one. */
#ifndef TF_CMD_TFCTL_CTL_TOP_H
#define TF_CMD_TFCTL_CTL_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cmd/tfctl/ctl_client.h"

/* One task's counters at one moment, from one GetStatus. */
typedef struct tf_ctl_top_sample {
  bool up;              /* it answered */
  uint64_t incarnation; /* a new one means it restarted: counters began again */
  int64_t at_ns;        /* monotonic time of the answer (tf__now_ns) */
  unsigned has;         /* TF_MSG_STATUS_* bits: which counters it sent */
  uint64_t steps, bytes_sent, bytes_received;
  int64_t mem_in_use, mem_peak;
  int running_steps;    /* -1: not reported */
} tf_ctl_top_sample;

/* The sample a GetStatus gave: t (with t->up false when it did not
 * answer) at at_ns. */
tf_ctl_top_sample tf_ctl_top_sample_of(const tf_ctl_task *t, int64_t at_ns);

/* One row of the view. A negative number is not known (shown as "-"). */
typedef struct tf_ctl_top_row {
  char task[96];        /* "/job:worker/task:0" */
  bool up;
  double steps_per_s, recv_per_s, sent_per_s;
  int64_t mem_in_use, mem_peak;
  int running_steps;
} tf_ctl_top_row;

/* The row of /job:job/task:task from its previous sample prev (NULL: none)
 * and its current one cur. Down when cur is down. A rate is known when
 * both samples are up, of the same incarnation, carry the counter and are
 * in time order, and the counter did not go back: (cur - prev) / seconds
 * between them. Memory and running steps come from cur alone. */
void tf_ctl_top_row_of(const char *job, int task, const tf_ctl_top_sample *prev,
                       const tf_ctl_top_sample *cur, tf_ctl_top_row *row);

/* Human units into buf[0..n) (returns buf): bytes as "512 B", "1.5 KiB",
 * "20.0 MiB", "3.2 GiB", "1.0 TiB" (1024-based, one decimal); counts and
 * rates as "0", "7.5", "999.9", "1.2k", "3.4M", "5.6G" (1000-based). A
 * negative or NaN value is "-". */
char *tf_ctl_fmt_bytes(double v, char *buf, size_t n);
char *tf_ctl_fmt_count(double v, char *buf, size_t n);

/* What a frame's header line says besides the rows. */
typedef struct tf_ctl_top_head {
  const char *master_url;
  int64_t interval_ms;
  time_t now;           /* the time stamp, local time with its UTC offset */
} tf_ctl_top_head;

/* A frame (malloc'd): a header line "tfctl top: MASTER, N tasks (U up),
 * every I ms, YYYY-MM-DDTHH:MM:SS+hhmm", the column names (TASK STATE
 * STEPS/S RECV/S SENT/S MEM MEM-PEAK RUNNING), then one line per row.
 * Every line ends with "\n". */
char *tf_ctl_top_frame(const tf_ctl_top_head *h, const tf_ctl_top_row *rows, int n);

typedef struct tf_ctl_top_opts {
  const char *master_url;
  int64_t timeout_ms;   /* each call's deadline, > 0 */
  int64_t interval_ms;  /* between samples, > 0 */
  int64_t frames;       /* frames to print; 0: until interrupted */
  bool redraw;          /* redraw in place (a terminal, no frame count) */
  FILE *out, *err;
} tf_ctl_top_opts;

/* tfctl top: ClusterStatus to the master, then per frame: GetStatus to
 * every task (at most TF_CTL_TOP_CONCURRENCY at a time), a sleep of
 * interval_ms, GetStatus again, one frame. The task list is asked again
 * before each frame (the last one is kept when the master does not
 * answer: its row shows down). With redraw, each frame replaces the last
 * (cursor home, clear screen; the cursor is hidden and comes back on
 * SIGINT, SIGTERM and at the end); else frames follow each other. A task
 * that does not answer shows as down and top goes on. Returns 0, or 1
 * with one line "tfctl: top: ..." on err when the master does not answer
 * the first ClusterStatus. */
#define TF_CTL_TOP_CONCURRENCY 32
int tf_ctl_cmd_top(const tf_ctl_top_opts *o);

#endif
