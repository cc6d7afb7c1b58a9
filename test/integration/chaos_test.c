/* chaos_test.c: a Fashion-MNIST sync job (1 ps, 2 workers, checkpoints
 * every CKPT_EVERY steps) survives 5 SIGKILLs of random tasks (ps, a
 * worker or the master), each at a random moment and restarted after a
 * random short delay, with no client action: it completes, its final test
 * accuracy is within ACC_TOL of an undisturbed run of the same spec and
 * seeds, and every checkpoint it left verifies.
 *
 * Recovery time, per kill: from the restarted task answering to the job
 * stepping again (its log line "recovered: stepping again"). CHAOS_RUNS
 * (env, default 1; `make chaos RUNS=N`) repeats the disturbed run; each
 * prints a line "chaos run R: accuracy A (undisturbed U), recoveries
 * [ms...]" and the test prints the median recovery time at the end.
 * CHAOS_SEED (env) fixes the kill schedule's seed (default: time).
 *
 * Skipped, saying why, when Debian's dataset-fashion-mnist is absent. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/runtime/ckpt_dir.h"
#include "test/integration/jobutil.h"
#include "test/unit/testutil.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"
#define EPOCHS 3
#define CKPT_EVERY 100
#define KILLS 5
#define ACC_TOL 0.01
#define JOB_MS (TH_SANITIZED ? 1200000 : 400000)
#define MAX_RUNS 20

static char *write_spec(th_cluster *c, const char *name, const char *ckdir) {
  char text[8192];
  snprintf(text, sizeof text,
           "name: %s\n"
           "model:\n"
           "  input: {shape: [784], dtype: float32}\n"
           "  layers:\n"
           "    - {type: dense, units: 128, activation: relu}\n"
           "    - {type: dense, units: 10}\n"
           "  loss: sparse_softmax_cross_entropy\n"
           "  metrics: [accuracy]\n"
           "  seed: 1\n"
           "input:\n"
           "  format: idx\n"
           "  train:\n"
           "    images: " FMNIST "/train-images-idx3-ubyte.gz\n"
           "    labels: " FMNIST "/train-labels-idx1-ubyte.gz\n"
           "  test:\n"
           "    images: " FMNIST "/t10k-images-idx3-ubyte.gz\n"
           "    labels: " FMNIST "/t10k-labels-idx1-ubyte.gz\n"
           "  scale: 0.00392156862745098\n"
           "  batch_size: 100\n"
           "  shuffle: true\n"
           "  seed: 1\n"
           "  shard: shuffle\n"
           "optimizer:\n"
           "  {name: adam, learning_rate: 0.002,\n"
           "   schedule: {type: exponential_decay, decay_steps: 360, decay_rate: 0.5}}\n"
           "replication: {mode: sync, workers: 2}\n"
           "train: {epochs: %d, log_every_steps: 100}\n"
           "eval: {every_steps: 0}\n"
           "checkpoint: {dir: %s, every_steps: %d, keep: 100}\n"
           "recovery: {max_attempts: 20, wait_seconds: 60}\n",
           name, EPOCHS, ckdir, CKPT_EVERY);
  char file[96];
  snprintf(file, sizeof file, "%s.yaml", name);
  return th_write_file(c, file, text);
}

/* Waits for the job to end; returns its test_accuracy. */
static double wait_done(th_cluster *c, const char *id) {
  int64_t end = tf_ctl_now_ms() + JOB_MS;
  for (;;) {
    char *out = tj_status(c, id);
    bool done = tj_has_state(out, "done");
    bool bad = tj_has_state(out, "failed") || tj_has_state(out, "cancelled");
    double acc = tj_field(out, "test_accuracy");
    TH_REQUIRE(c, !bad, "job %s ended badly:\n%s", id, out);
    free(out);
    if (done) {
      TH_REQUIRE(c, !isnan(acc), "job %s done without a test_accuracy", id);
      return acc;
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s not done after %d s", id,
               JOB_MS / 1000);
    usleep(200 * 1000);
  }
}

/* How many lines of the job's log contain s (-1: no answer). */
static int count_lines(th_cluster *c, const char *id, const char *s) {
  char *out = NULL;
  if (tj_tfctl(c, 5000, &out, NULL, "logs", id, NULL) != 0) {
    free(out);
    return -1;
  }
  int n = 0;
  for (const char *p = out; (p = strstr(p, s)) != NULL; p += strlen(s)) {
    n++;
  }
  free(out);
  return n;
}

/* Waits until the job is running and past its first checkpoint. */
static void wait_stepping(th_cluster *c, const char *id, int64_t min_step) {
  int64_t end = tf_ctl_now_ms() + JOB_MS;
  for (;;) {
    char *out = tj_status(c, id);
    bool ok = tj_has_state(out, "running") && tj_field(out, "step") >= (double)min_step;
    TH_REQUIRE(c, !tj_has_state(out, "failed") && !tj_has_state(out, "done"),
               "job %s ended before the kills were done:\n%s", id, out);
    free(out);
    if (ok) {
      return;
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s not stepping", id);
    usleep(100 * 1000);
  }
}

/* On a failure: the job's log and the master's last lines (the harness
 * shows only a few of each task's). */
static void dump_job(th_cluster *c, const char *id) {
  char *out = NULL;
  tj_tfctl(c, 5000, &out, NULL, "logs", id, NULL);
  fprintf(stderr, "---- tfctl logs %s\n%s", id, out != NULL ? out : "(none)\n");
  free(out);
  char path[600];
  snprintf(path, sizeof path, "%s/master-0.log", c->dir);
  char *tail = tf_ctl_file_tail(path, 120, "  | ");
  fprintf(stderr, "---- %s (last 120 lines)\n%s", path, tail);
  free(tail);
  th_dump_stacks(th_task_get(c, "master", 0)); /* where the job waits */
}

static const char *const victims[][2] = {
    {"master", "0"}, {"ps", "0"}, {"worker", "0"}, {"worker", "1"}};

/* One kill: SIGKILL a random task, restart it after a random delay, wait
 * for the job to step again; returns the recovery time in ms. */
static int64_t one_kill(th_cluster *c, const char *id, unsigned *seed) {
  int v = (int)(rand_r(seed) % 4);
  th_task *t = th_task_get(c, victims[v][0], atoi(victims[v][1]));
  int before = count_lines(c, id, "recovered: stepping again");
  usleep((useconds_t)(rand_r(seed) % 1500) * 1000);
  fprintf(stderr, "chaos: SIGKILL %s-%d\n", t->job, t->task);
  th_kill_task(t);
  usleep((useconds_t)(200 + rand_r(seed) % 1300) * 1000);
  TH_REQUIRE(c, th_start_task(c, t, NULL) && th_wait_task(c, t, 20000),
             "%s-%d did not come back", t->job, t->task);
  int64_t back = tf_ctl_now_ms(), end = back + JOB_MS;
  if (v == 0) {
    before = 0; /* a new master: the job's log starts over */
  }
  for (;;) {
    int n = count_lines(c, id, "recovered: stepping again");
    if (n > before) {
      return tf_ctl_now_ms() - back;
    }
    char *out = tj_status(c, id);
    TH_REQUIRE(c, !tj_has_state(out, "failed"), "job %s failed after %s-%d was "
               "killed:\n%s", id, t->job, t->task, out);
    bool done = tj_has_state(out, "done");
    free(out);
    if (done) {
      return -1; /* it ended before stepping again: nothing to time */
    }
    if (tf_ctl_now_ms() >= end) {
      dump_job(c, id);
    }
    TH_REQUIRE(c, tf_ctl_now_ms() < end, "job %s did not step again after "
               "%s-%d came back", id, t->job, t->task);
    usleep(50 * 1000);
  }
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Every checkpoint of dir verifies. */
static void check_checkpoints(th_cluster *c, const char *dir) {
  tf_ckpt_manifest *ms = NULL;
  int n = 0;
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_ckpt_list(dir, &ms, &n, &st) == TF_OK && n > 0,
             "listing %s: %s (%d)", dir, st.msg, n);
  for (int i = 0; i < n; i++) {
    tf_ckpt_manifest m = {0};
    TH_REQUIRE(c, tf_ckpt_verify(ms[i].path, &m, &st) == TF_OK, "%s: %s",
               ms[i].path, st.msg);
    tf_ckpt_manifest_fini(&m);
  }
  tf_ckpt_list_free(ms, n);
}

START_TEST(test_chaos) {
  struct stat sb;
  if (stat(FMNIST "/train-images-idx3-ubyte.gz", &sb) != 0) {
    fprintf(stderr, "chaos_test: SKIP: %s is absent (apt-get install "
            "dataset-fashion-mnist)\n", FMNIST);
    return;
  }
  const char *runs_env = getenv("CHAOS_RUNS"), *seed_env = getenv("CHAOS_SEED");
  int runs = runs_env ? atoi(runs_env) : 1;
  runs = runs < 1 ? 1 : runs > MAX_RUNS ? MAX_RUNS : runs;
  unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
  fprintf(stderr, "chaos: seed %u (CHAOS_SEED), %d run(s)\n", seed, runs);
  th_opts o = th_default_opts();
  o.rpc_threads = 8;
  char extra[512], root[] = "/tmp/tf-chaos-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  snprintf(extra, sizeof extra, "checkpoint_dir: %s\n", root);
  o.extra_yaml = extra;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 20000), "cluster did not start");
  char dir[400];
  snprintf(dir, sizeof dir, "%s/ref", root);
  char *path = write_spec(c, "chaos-ref", dir);
  char *id = tj_submit(c, path);
  double ref = wait_done(c, id);
  free(id);
  free(path);
  fprintf(stderr, "chaos: undisturbed accuracy %.4f\n", ref);
  int64_t times[MAX_RUNS * KILLS];
  int nt = 0;
  for (int r = 0; r < runs; r++) {
    char name[32];
    snprintf(name, sizeof name, "chaos-%d", r);
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    path = write_spec(c, name, dir);
    id = tj_submit(c, path);
    char line[512];
    int len = 0;
    for (int k = 0; k < KILLS; k++) {
      wait_stepping(c, id, CKPT_EVERY);
      int64_t ms = one_kill(c, id, &seed);
      if (ms >= 0) {
        times[nt++] = ms;
      }
      len += snprintf(line + len, sizeof line - (size_t)len, " %lld", (long long)ms);
    }
    double acc = wait_done(c, id);
    fprintf(stderr, "chaos run %d: accuracy %.4f (undisturbed %.4f), recoveries "
            "[ms]:%s\n", r, acc, ref, line);
    TH_REQUIRE(c, fabs(acc - ref) <= ACC_TOL, "run %d: accuracy %.4f, undisturbed "
               "%.4f: more than %.2f apart", r, acc, ref, ACC_TOL);
    check_checkpoints(c, dir);
    free(id);
    free(path);
  }
  qsort(times, (size_t)nt, sizeof *times, cmp64);
  fprintf(stderr, "chaos: %d recoveries, median %lld ms, max %lld ms\n", nt,
          nt ? (long long)times[nt / 2] : -1LL, nt ? (long long)times[nt - 1] : -1LL);
  th_cluster_free(c);
  tj_remove_tree(root);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("chaos");
  TCase *tc = tcase_create("chaos");
  tcase_set_timeout(tc, TH_SANITIZED ? 3600 : 1800);
  tcase_add_test(tc, test_chaos);
  suite_add_tcase(s, tc);
  return s;
}
