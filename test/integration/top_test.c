/* top_test.c: `tfctl top` against real daemons (1 master, 1 ps, 2
 * workers) while a synchronous training job runs on both workers:
 * - `tfctl top -n 2 --interval 500` prints two frames, each with a header
 *   and a time stamp and one row per task (the master first), every task
 *   up; the workers' steps/s are > 0 in both frames, every task's bytes/s
 *   in and out are > 0 and below 1 GiB/s, the ps and the workers report a
 *   memory peak > 0 (and in use <= peak, below 4 GiB);
 * - a worker SIGKILLed: the same command still exits 0, and that worker's
 *   row shows down (with "-" for what is not known) in both frames while
 *   the others stay up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "test/integration/jobutil.h"
#include "test/unit/testutil.h"

#define N_TRAIN 256

/* Waits until the job reached step (60 s at most). */
static void wait_step(th_cluster *c, const char *id, double step) {
  int64_t end = tf_ctl_now_ms() + 60000;
  for (;;) {
    char *out = tj_status(c, id);
    double s = tj_field(out, "step");
    TH_REQUIRE(c, !tj_has_state(out, "failed") && !tj_has_state(out, "done"),
               "job %s ended:\n%s", id, out);
    free(out);
    if (s >= step) {
      return;
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s did not reach step %.0f", id, step);
    usleep(50 * 1000);
  }
}

/* One row as numbers (-1: "-"): bytes in bytes, rates per second. */
typedef struct row {
  bool found, up;
  double steps, recv, sent, mem, peak, running;
} row;

/* The value at *p ("-", "12.5", "3.0 KiB/s", "512 B"), p moved past it. */
static double value(const char **p, bool has_unit) {
  char tok[32], unit[16];
  int used = 0;
  if (sscanf(*p, " %31s%n", tok, &used) != 1) {
    return NAN;
  }
  *p += used;
  if (strcmp(tok, "-") == 0) {
    return -1;
  }
  char *end = NULL;
  double v = strtod(tok, &end);
  double mult[] = {1, 1e3, 1e6, 1e9};
  const char *suf = "\0kMG";
  for (int k = 1; k < 4 && !has_unit; k++) {
    v *= *end == suf[k] ? mult[k] : 1;
  }
  if (!has_unit || sscanf(*p, " %15s%n", unit, &used) != 1) {
    return v;
  }
  *p += used;
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  for (int k = 0; k < 5; k++) {
    if (strncmp(unit, units[k], strlen(units[k])) == 0 &&
        (unit[strlen(units[k])] == '\0' || unit[strlen(units[k])] == '/')) {
      return v * pow(1024, k);
    }
  }
  return NAN;
}

/* Task `task`'s row in frame k (0-based) of out. */
static row find_row(const char *out, int k, const char *task) {
  row r = {0};
  const char *p = out - 1;
  for (int i = 0; i <= k; i++) {
    p = strstr(p + 1, "tfctl top: ");
    if (p == NULL) {
      return r;
    }
  }
  const char *next = strstr(p + 1, "tfctl top: ");
  char key[64];
  snprintf(key, sizeof key, "\n%s ", task);
  const char *line = strstr(p, key);
  if (line == NULL || (next != NULL && line > next)) {
    return r;
  }
  line += strlen(key);
  char state[8];
  int used = 0;
  r.found = sscanf(line, " %7s%n", state, &used) == 1;
  r.up = strcmp(state, "up") == 0;
  line += used;
  r.steps = value(&line, false);
  r.recv = value(&line, true);
  r.sent = value(&line, true);
  r.mem = value(&line, true);
  r.peak = value(&line, true);
  r.running = value(&line, false);
  return r;
}

/* `tfctl top -n 2 --interval 500`; its output (malloc'd) on exit 0. */
static char *top2(th_cluster *c) {
  char *out = NULL, *err = NULL;
  int rc = tj_tfctl(c, 30000, &out, &err, "top", "-n", "2", "--interval", "500", NULL);
  TH_REQUIRE(c, rc == 0, "tfctl top exited %d: %s\n%s", rc, err, out);
  free(err);
  int frames = 0;
  for (const char *p = out; (p = strstr(p, "tfctl top: ")) != NULL; p++) {
    frames++;
  }
  TH_REQUIRE(c, frames == 2, "%d frames, not 2:\n%s", frames, out);
  TH_REQUIRE(c, strstr(out, ", 4 tasks (") != NULL && strstr(out, "every 500 ms, ") != NULL,
             "header:\n%s", out);
  fprintf(stderr, "top_test: tfctl top -n 2 --interval 500:\n%s", out);
  return out;
}

static const char *const tasks[] = {"/job:master/task:0", "/job:ps/task:0",
                                    "/job:worker/task:0", "/job:worker/task:1"};

static void check_training(th_cluster *c, const char *out) {
  const double gib = 1024.0 * 1024 * 1024;
  const char *names = strstr(out, "\nTASK ");
  const char *first = names != NULL ? strchr(names + 1, '\n') : NULL;
  TH_REQUIRE(c, first != NULL && strncmp(first + 1, "/job:master/task:0 ", 19) == 0,
             "the master's row is not first:\n%s", out);
  for (int k = 0; k < 2; k++) {
    for (int t = 0; t < 4; t++) {
      row r = find_row(out, k, tasks[t]);
      TH_REQUIRE(c, r.found && r.up, "frame %d: %s not up:\n%s", k, tasks[t], out);
      TH_REQUIRE(c, r.recv > 0 && r.recv < gib && r.sent > 0 && r.sent < gib,
                 "frame %d: %s bytes/s in %.0f out %.0f:\n%s", k, tasks[t], r.recv, r.sent,
                 out);
      TH_REQUIRE(c, r.mem >= 0 && r.peak >= r.mem && r.peak < 4 * gib,
                 "frame %d: %s memory %.0f peak %.0f:\n%s", k, tasks[t], r.mem, r.peak, out);
      TH_REQUIRE(c, r.running >= 0, "frame %d: %s running steps not shown", k, tasks[t]);
      if (t >= 1) {
        TH_REQUIRE(c, r.peak > 0, "frame %d: %s memory peak 0:\n%s", k, tasks[t], out);
      }
      if (t >= 2) {
        TH_REQUIRE(c, r.steps > 0 && r.steps < 1e6, "frame %d: %s steps/s %g:\n%s", k,
                   tasks[t], r.steps, out);
      }
    }
  }
}

START_TEST(test_top) {
  th_opts o = th_default_opts();
  th_cluster *c = th_cluster_new(&o);
  tj_write_idx(c, "train", N_TRAIN, 5u);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster did not start");
  char *path = tj_write_mlp_spec(c, "top.yaml", "top", 32, 2, 100000000, 100, "");
  char *id = tj_submit(c, path);
  wait_step(c, id, 5);
  char *out = top2(c);
  check_training(c, out);
  free(out);
  /* A worker killed: its row shows down, top goes on and exits 0. */
  th_kill_task(th_task_get(c, "worker", 1));
  out = top2(c);
  for (int k = 0; k < 2; k++) {
    for (int t = 0; t < 4; t++) {
      row r = find_row(out, k, tasks[t]);
      TH_REQUIRE(c, r.found && r.up == (t != 3), "frame %d: %s should be %s:\n%s", k,
                 tasks[t], t != 3 ? "up" : "down", out);
      if (t == 3) {
        TH_REQUIRE(c, r.steps == -1 && r.recv == -1 && r.mem == -1 && r.running == -1,
                   "frame %d: the down worker shows numbers:\n%s", k, out);
      }
    }
  }
  TH_REQUIRE(c, strstr(out, "(3 up)") != NULL, "header without 3 up:\n%s", out);
  free(out);
  free(id);
  free(path);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("top");
  TCase *tc = tcase_create("top");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_top);
  suite_add_tcase(s, tc);
  return s;
}
