/* recovery_test.c: a job recovers by itself (docs/jobs.md "Recovery"), on
 * real daemons (1 master, 1 ps, 2 workers) with a small synthetic
 * dataset and a checkpoint every 10 steps:
 * - the ps SIGKILLed and restarted: the job logs the recovery, restores
 *   its latest checkpoint and ends done with recoveries: 1;
 * - the latest checkpoint damaged, then the ps killed again: the restore
 *   falls back to the previous checkpoint and says which and why;
 * - the master stopped with SIGTERM while the job runs: it checkpoints
 *   and suspends the job and exits 0 well within 30 s; a master started
 *   again resumes the job under its id from that checkpoint;
 * - a worker killed and kept down (recovery.wait_seconds: 2): the job
 *   ends failed, the reason naming the worker. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/runtime/ckpt_dir.h"
#include "test/integration/jobutil.h"
#include "test/unit/testutil.h"

#define N_TRAIN 512

static char *write_spec(th_cluster *c, const char *name, const char *ckdir,
                        int steps, int wait_s) {
  char text[8192];
  snprintf(text, sizeof text,
           "name: %s\n"
           "model:\n"
           "  input: {shape: [%d]}\n"
           "  layers: [{type: dense, units: 8, activation: tanh}, {type: dense, units: %d}]\n"
           "  loss: sparse_softmax_cross_entropy\n"
           "  metrics: [accuracy]\n"
           "  seed: 7\n"
           "input:\n"
           "  format: idx\n"
           "  train: {images: %s/train-images.idx, labels: %s/train-labels.idx}\n"
           "  test: {images: %s/test-images.idx, labels: %s/test-labels.idx}\n"
           "  scale: 0.00392156862745098\n"
           "  batch_size: 8\n"
           "  seed: 1\n"
           "  shard: shuffle\n"
           "optimizer: {name: sgd, learning_rate: 0.1}\n"
           "replication: {mode: sync, workers: 2}\n"
           "train: {steps: %d, log_every_steps: 50}\n"
           "eval: {every_steps: 0}\n"
           "checkpoint: {dir: %s, every_steps: 50, keep: 3}\n"
           "recovery: {max_attempts: 5, wait_seconds: %d}\n",
           name, TJ_PIXELS, TJ_CLASSES, c->dir, c->dir, c->dir, c->dir, steps, ckdir,
           wait_s);
  char file[96];
  snprintf(file, sizeof file, "%s.yaml", name);
  return th_write_file(c, file, text);
}

/* The job's log lines about recovery (restore, recover, skip, fail,
 * suspend, wait), malloc'd. */
static char *logs(th_cluster *c, const char *id) {
  char *out = NULL;
  if (tj_tfctl(c, 5000, &out, NULL, "logs", id, NULL) != 0) {
    free(out);
    return strdup("");
  }
  char *keep = calloc(strlen(out) + 1, 1);
  static const char *const words[] = {"restor", "recover", "skip", "fail", "suspend",
                                      "wait", "shard", "back"};
  for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
      if (strstr(line, words[w]) && !strstr(line, "bytes in")) {
        strcat(keep, line);
        strcat(keep, "\n");
        break;
      }
    }
  }
  free(out);
  return keep;
}

/* Waits until the job's status contains want (or a final state); returns
 * the status (malloc'd). */
static char *wait_status(th_cluster *c, const char *id, const char *want, int64_t ms) {
  int64_t end = tf_ctl_now_ms() + ms;
  for (;;) {
    char *out = tj_status(c, id);
    if (strstr(out, want) != NULL || strstr(out, "\nstate: failed") ||
        strstr(out, "\nstate: done") || strstr(out, "\nstate: cancelled") ||
        tf_ctl_now_ms() > end) {
      return out;
    }
    free(out);
    usleep(50 * 1000);
  }
}

/* Waits until the job reached step (running). */
static void wait_step(th_cluster *c, const char *id, int step) {
  int64_t end = tf_ctl_now_ms() + 60000;
  for (;;) {
    char *out = tj_status(c, id);
    double s = tj_field(out, "step");
    bool final = strstr(out, "\nstate: done") || strstr(out, "\nstate: failed");
    TH_REQUIRE(c, !final, "job %s ended before step %d:\n%s", id, step, out);
    free(out);
    if (s >= step) {
      return;
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s did not reach step %d", id, step);
    usleep(50 * 1000);
  }
}

static void done(th_cluster *c, const char *root) {
  th_cluster_free(c);
  tj_remove_tree(root);
}

static th_cluster *cluster(char *root) {
  static char extra[512];
  snprintf(extra, sizeof extra, "checkpoint_dir: %s\n", root);
  th_opts o = th_default_opts();
  o.rpc_threads = 8;
  /* The master's SIGTERM checkpoints a running job within drain_ms: the
   * step in flight and the checkpoint take several times longer under a
   * sanitizer (seen over 1 s once under ASan in CI). */
  o.drain_ms = TH_SANITIZED ? 5000 : 1000;
  o.extra_yaml = extra;
  th_cluster *c = th_cluster_new(&o);
  tj_write_idx(c, "train", N_TRAIN, 11u);
  tj_write_idx(c, "test", 256, 99u);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster did not start");
  return c;
}

static void restart(th_cluster *c, th_task *t) {
  th_kill_task(t);
  usleep(300 * 1000);
  TH_REQUIRE(c, th_start_task(c, t, NULL) && th_wait_task(c, t, 15000),
             "%s-%d did not come back", t->job, t->task);
}

START_TEST(test_ps_killed_and_fallback) {
  char root[] = "/tmp/tf-recovery-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  th_cluster *c = cluster(root);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/ps-kill", root);
  char *path = write_spec(c, "ps-kill", dir, 100000, 30);
  char *id = tj_submit(c, path);
  wait_step(c, id, 120);
  th_task *ps = th_task_get(c, "ps", 0);
  restart(c, ps);
  char *out = wait_status(c, id, "\nrecoveries: 1\n", 30000);
  free(out);
  wait_step(c, id, 200);
  char *lg = logs(c, id);
  TH_REQUIRE(c, strstr(lg, "recovering (1 of 5)") && strstr(lg, "restored ") &&
                    strstr(lg, "recovered: stepping again"),
             "logs after the ps restart:\n%s", lg);
  free(lg);
  /* Pause (no newer checkpoint may replace the damaged one), damage the
   * latest checkpoint's shard, then kill the ps again. */
  TH_REQUIRE(c, tj_tfctl(c, 10000, NULL, NULL, "pause", id, NULL) == 0, "pause");
  out = wait_status(c, id, "\nstate: paused\n", 10000);
  free(out);
  usleep(300 * 1000); /* a checkpoint under way ends */
  tf_ckpt_manifest *ms = NULL;
  int n = 0;
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_ckpt_list(dir, &ms, &n, &st) == TF_OK && n >= 2, "list: %s (%d)",
             st.msg, n);
  char shard[600];
  snprintf(shard, sizeof shard, "%s/ps-0.shard", ms[n - 1].path);
  char latest[400];
  snprintf(latest, sizeof latest, "%s", ms[n - 1].path);
  tf_ckpt_list_free(ms, n);
  FILE *f = fopen(shard, "r+b");
  TH_REQUIRE(c, f != NULL, "open %s", shard);
  fseek(f, -3, SEEK_END);
  int b = fgetc(f);
  fseek(f, -3, SEEK_END);
  fputc(b ^ 0x10, f);
  fclose(f);
  restart(c, ps);
  TH_REQUIRE(c, tj_tfctl(c, 10000, NULL, NULL, "resume", id, NULL) == 0, "resume");
  out = wait_status(c, id, "\nrecoveries: 2\n", 30000);
  free(out);
  wait_step(c, id, 300);
  lg = logs(c, id);
  TH_REQUIRE(c, strstr(lg, latest) != NULL && strstr(lg, "ps-0.shard") != NULL,
             "no note of the damaged %s in the logs:\n%s", shard, lg);
  free(lg);
  TH_REQUIRE(c, tj_tfctl(c, 10000, NULL, NULL, "cancel", id, NULL) == 0, "cancel");
  free(id);
  free(path);
  done(c, root);
}
END_TEST

START_TEST(test_master_sigterm_suspends_and_resumes) {
  char root[] = "/tmp/tf-recovery-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  th_cluster *c = cluster(root);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/resume", root);
  char *path = write_spec(c, "resume", dir, 1500, 30);
  char *id = tj_submit(c, path);
  wait_step(c, id, 120);
  th_task *m = th_task_get(c, "master", 0);
  int64_t t0 = tf_ctl_now_ms();
  int ws = th_stop_task(m, SIGTERM, 30000);
  int64_t took = tf_ctl_now_ms() - t0;
  TH_REQUIRE(c, ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
             "the master's exit on SIGTERM: status %d", ws);
  TH_REQUIRE(c, took < 30000, "the master took %lld ms to exit", (long long)took);
  tf_ckpt_manifest latest = {0};
  char *note = NULL;
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_ckpt_latest(dir, &latest, &note, &st) == TF_OK, "latest: %s", st.msg);
  int64_t saved = latest.step;
  tf_ckpt_manifest_fini(&latest);
  free(note);
  TH_REQUIRE(c, saved >= 120, "the suspended job's checkpoint is at step %lld",
             (long long)saved);
  TH_REQUIRE(c, th_start_task(c, m, NULL) && th_wait_task(c, m, 15000),
             "the master did not start again");
  char *out = wait_status(c, id, "\nstate: done\n", 120000);
  TH_REQUIRE(c, strstr(out, "\nstate: done\n") != NULL, "resumed job:\n%s", out);
  free(out);
  char *lg = logs(c, id);
  char want[64];
  snprintf(want, sizeof want, "step %lld", (long long)saved);
  TH_REQUIRE(c, strstr(lg, "restored ") && strstr(lg, want), "the resumed job's "
             "log does not say it restored step %lld:\n%s", (long long)saved, lg);
  free(lg);
  free(id);
  free(path);
  done(c, root);
}
END_TEST

START_TEST(test_worker_kept_down_fails_the_job) {
  char root[] = "/tmp/tf-recovery-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  th_cluster *c = cluster(root);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/down", root);
  char *path = write_spec(c, "down", dir, 100000, 2);
  char *id = tj_submit(c, path);
  wait_step(c, id, 5);
  th_kill_task(th_task_get(c, "worker", 1));
  /* Right after the kill the master's health checks may still see the
   * worker up (they mark it down after down_after_ms): the next attempt
   * then waits out rpc_ms on calls to it before the job fails, several
   * times slower under a sanitizer. */
  char *out = wait_status(c, id, "\nstate: failed\n", TH_SANITIZED ? 90000 : 30000);
  TH_REQUIRE(c, strstr(out, "\nstate: failed\n") && strstr(out, "worker") &&
                    strstr(out, "recovery.wait_seconds"),
             "after a worker stayed down:\n%s", out);
  free(out);
  free(id);
  free(path);
  done(c, root);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("recovery");
  TCase *tc = tcase_create("recovery");
  tcase_set_timeout(tc, TH_SANITIZED ? 600 : 180);
  tcase_add_test(tc, test_ps_killed_and_fallback);
  tcase_add_test(tc, test_master_sigterm_suspends_and_resumes);
  tcase_add_test(tc, test_worker_kept_down_fails_the_job);
  suite_add_tcase(s, tc);
  return s;
}
