/* ckpt_cmds_test.c: tfctl's checkpoint commands against real daemons (1
 * master, 1 ps, 1 worker) and a small synthetic dataset:
 * - `tfctl checkpoint JOB` on a running job prints "checkpoint at step S"
 *   and the checkpoint's path alone on the last line, <dir>/ckpt-S;
 * - `tfctl checkpoints JOB` lists it with its step; `tfctl status JOB`
 *   shows it (and recoveries: 0);
 * - with the job paused past it, `tfctl restore JOB` (the latest) says
 *   "restoring <path> (step S)"; the logs say "restored <path>", the job
 *   comes back paused at exactly step S (it went back) without counting a
 *   recovery, and once resumed goes on from there;
 * - `tfctl restore JOB ckpt-999999` fails (exit 1, NOT_FOUND naming it),
 *   and so do a checkpoint outside the job's directory and a bad name;
 * - a job without a checkpoint section: checkpoint, checkpoints and
 *   restore fail with exit 1, naming the missing section. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "test/integration/jobutil.h"
#include "test/unit/testutil.h"

#define N_TRAIN 256

/* tfctl -c CONFIG args... with a 20 s deadline (jobutil.h). */
#define tfctl(c, out, err, ...) tj_tfctl((c), 20000, (out), (err), __VA_ARGS__)

/* The integer after "\nkey: " in s, or -1. */
static long long int_field(const char *s, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\n%s: ", key);
  const char *p = strstr(s, k);
  return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/* Waits (up to 30 s) until the job's step is at least step; returns it. */
static long long wait_step(th_cluster *c, const char *id, long long step) {
  int64_t end = tf_ctl_now_ms() + 30000;
  for (;;) {
    char *out = tj_status(c, id);
    long long s = int_field(out, "step");
    TH_REQUIRE(c, strstr(out, "\nstate: failed") == NULL, "job %s failed:\n%s", id, out);
    free(out);
    if (s >= step) {
      return s;
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s is at step %lld, not %lld", id, s, step);
    usleep(50 * 1000);
  }
}

/* Waits until the job's step holds still for 400 ms; returns it. */
static long long settle(th_cluster *c, const char *id) {
  char *out = tj_status(c, id);
  long long last = int_field(out, "step");
  free(out);
  for (int64_t end = tf_ctl_now_ms() + 20000; tf_ctl_now_ms() < end;) {
    usleep(400 * 1000);
    out = tj_status(c, id);
    long long now = int_field(out, "step");
    free(out);
    if (now == last) {
      return now;
    }
    last = now;
  }
  TH_REQUIRE(c, false, "job %s did not stop stepping", id);
  return -1;
}

/* Runs tfctl args..., which must fail with exit 1 and an error naming want. */
#define MUST_FAIL(c, want, ...)                                                          \
  do {                                                                                   \
    char *o_ = NULL, *e_ = NULL;                                                         \
    int rc_ = tfctl((c), &o_, &e_, __VA_ARGS__, NULL);                                   \
    TH_REQUIRE((c), rc_ == 1 && strncmp(e_, "tfctl: ", 7) == 0 && strstr(e_, (want)),    \
               "%s: exit %d, stderr '%s' (want '%s'), stdout '%s'", #__VA_ARGS__, rc_, e_, \
               (want), o_);                                                              \
    free(o_), free(e_);                                                                  \
  } while (0)

/* tfctl checkpoint JOB; *step gets the step it names; returns the path. */
static char *take_checkpoint(th_cluster *c, const char *id, const char *dir,
                             long long *step) {
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "checkpoint", id, NULL);
  TH_REQUIRE(c, rc == 0, "checkpoint %s: exit %d: %s", id, rc, err);
  char head[256];
  snprintf(head, sizeof head, "job %s: checkpoint at step ", id);
  TH_REQUIRE(c, strncmp(out, head, strlen(head)) == 0, "checkpoint: %s", out);
  *step = strtoll(out + strlen(head), NULL, 10);
  char want[512];
  snprintf(want, sizeof want, "%s/ckpt-%lld", dir, *step);
  TH_REQUIRE(c, strcmp(tj_last_line(out), want) == 0, "checkpoint: the last line is '%s', "
             "not '%s':\n%s", tj_last_line(out), want, out);
  TH_REQUIRE(c, access(want, F_OK) == 0, "%s is not there", want);
  free(out), free(err);
  return strdup(want);
}

/* tfctl restore JOB (the latest) while the job is paused at a step past
 * the checkpoint (path, step s1): the job comes back paused at s1. */
static void restore_latest(th_cluster *c, const char *id, const char *path, long long s1) {
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "restore", id, NULL);
  char want[600];
  snprintf(want, sizeof want, "restoring %s (step %lld)", path, s1);
  TH_REQUIRE(c, rc == 0 && strncmp(out, want, strlen(want)) == 0,
             "restore: exit %d: '%s' (want '%s') %s", rc, out, want, err);
  free(out), free(err);
  snprintf(want, sizeof want, "restored %s", path);
  int64_t end = tf_ctl_now_ms() + 20000;
  for (;;) {
    char *lg = NULL, *st = tj_status(c, id);
    tfctl(c, &lg, NULL, "logs", id, NULL);
    bool back = lg && strstr(lg, want) && strstr(st, "\nstate: paused\n");
    if (back || tf_ctl_now_ms() > end) {
      TH_REQUIRE(c, back, "no '%s' in the logs, or not paused again:\n%s\n%s", want, lg, st);
      TH_REQUIRE(c, int_field(st, "step") == s1, "restored at step %lld, not %lld:\n%s",
                 int_field(st, "step"), s1, st);
      TH_REQUIRE(c, strstr(st, "\nrecoveries: 0\n"), "a restore counted as a recovery:\n%s",
                 st);
      free(lg), free(st);
      return;
    }
    free(lg), free(st);
    usleep(100 * 1000);
  }
}

START_TEST(test_checkpoint_commands) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  o.writable_dir = true; /* the job's checkpoints go to DIR/ck */
  th_cluster *c = th_cluster_new(&o);
  tj_write_idx(c, "train", N_TRAIN, 11u);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster did not start");
  char dir[400], section[512];
  snprintf(dir, sizeof dir, "%s/ck", c->dir);
  snprintf(section, sizeof section, "checkpoint: {dir: %s, every_seconds: 3600, keep: 5}\n",
           dir);
  char *path = tj_write_mlp_spec(c, "ck.yaml", "ck", 8, 1, 100000000, 10, section);
  char *id = tj_submit(c, path);
  wait_step(c, id, 10);
  long long s1 = 0;
  char *ckpt = take_checkpoint(c, id, dir, &s1);
  TH_REQUIRE(c, s1 >= 10, "a checkpoint at step %lld, before step 10", s1);
  wait_step(c, id, s1 + 20);
  char *out = NULL, *err = NULL;
  TH_REQUIRE(c, tfctl(c, &out, &err, "pause", id, NULL) == 0, "pause: %s", err);
  free(out), free(err);
  long long s_pre = settle(c, id);
  TH_REQUIRE(c, tfctl(c, &out, &err, "checkpoints", id, NULL) == 0, "checkpoints: %s", err);
  char row[128];
  snprintf(row, sizeof row, "\nckpt-%lld  ", s1);
  const char *at = strstr(out, row);
  TH_REQUIRE(c, strncmp(out, "CHECKPOINT  ", 12) == 0 && at != NULL &&
                    strtoll(at + strlen(row), NULL, 10) == s1,
             "checkpoints has no row for ckpt-%lld with its step:\n%s", s1, out);
  fprintf(stderr, "ckpt_cmds: tfctl checkpoints:\n%s", out);
  free(out), free(err);
  out = tj_status(c, id);
  char line[600];
  snprintf(line, sizeof line, "\ncheckpoint: %s (step %lld)\n", ckpt, s1);
  TH_REQUIRE(c, strstr(out, line) && strstr(out, "\nrecoveries: 0\n"), "status:\n%s", out);
  free(out);
  restore_latest(c, id, ckpt, s1);
  fprintf(stderr, "ckpt_cmds: checkpoint %s at step %lld, paused at %lld, restored to %lld\n",
          ckpt, s1, s_pre, s1);
  TH_REQUIRE(c, s1 < s_pre, "the job was paused at %lld, after the checkpoint's %lld", s_pre,
             s1);
  MUST_FAIL(c, "ckpt-999999", "restore", id, "ckpt-999999");
  MUST_FAIL(c, "is not in job", "restore", id, "/tmp/ckpt-5");
  MUST_FAIL(c, "expected a name ckpt-<step>", "restore", id, "..");
  TH_REQUIRE(c, tfctl(c, &out, &err, "resume", id, NULL) == 0, "resume: %s", err);
  free(out), free(err);
  wait_step(c, id, s1 + 5);
  TH_REQUIRE(c, tfctl(c, &out, &err, "cancel", id, NULL) == 0, "cancel: %s", err);
  free(out), free(err);
  /* A job without a checkpoint section. */
  char *plain = tj_write_mlp_spec(c, "plain.yaml", "plain", 8, 1, 100000000, 10, "");
  char *id2 = tj_submit(c, plain);
  const char *want = "has no checkpoint section";
  MUST_FAIL(c, want, "checkpoint", id2);
  MUST_FAIL(c, want, "checkpoints", id2);
  MUST_FAIL(c, want, "restore", id2);
  MUST_FAIL(c, "no job 'nope'", "checkpoint", "nope");
  TH_REQUIRE(c, tfctl(c, &out, &err, "cancel", id2, NULL) == 0, "cancel: %s", err);
  free(out), free(err);
  free(id2), free(plain), free(ckpt), free(id), free(path);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_cmds");
  TCase *tc = tcase_create("ckpt_cmds");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_checkpoint_commands);
  suite_add_tcase(s, tc);
  return s;
}
