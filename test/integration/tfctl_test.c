/* tfctl_test.c: tfctl against real daemons: `cluster up` then `health`
 * (one line per task, all up, exit 0), `devices`, a killed worker makes
 * `health` exit 1 naming it, a second `cluster up` refuses, `cluster down`
 * stops everything; `run` returns what a local session computes and
 * writes .npy files; `graph` prints yaml/dot, placed on the cluster; a
 * cluster that cannot start names the task and stops the rest; usage
 * errors exit 2 (-c with -m among them); a run with only targets says it
 * ran them; --out is checked before the step; a session error names the
 * master once; --version, help and COMMAND --help; the job commands' usage
 * errors (missing JOB, extra arguments, a bad -n, options of other
 * commands) and a job spec that cannot be read, named before any call. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/core/base/util.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/serialize.h"
#include "tf/version.h"
#include "tf/session.h"

/* Runs tfctl with args (NULL-terminated); returns the exit code. */
static int tfctl(th_cluster *c, char **out, char **err, const char *a0, ...) {
  char *argv[24];
  int k = 0;
  argv[k++] = th_bin("tfctl");
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a != NULL && k < 23; a = va_arg(ap, const char *)) {
    argv[k++] = (char *)a;
  }
  va_end(ap);
  argv[k] = NULL;
  int rc = th_run(c, argv, 20000, out, err);
  free(argv[0]);
  return rc;
}

static int count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; p != NULL && *p != '\0';) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    n += needle == NULL || strstr(line, needle) != NULL;
    p = nl ? nl + 1 : NULL;
  }
  return n;
}

static bool one_line_error(const char *err) {
  return strncmp(err, "tfctl: ", 7) == 0 && strchr(err, '\n') == err + strlen(err) - 1;
}

START_TEST(test_cluster_up_health_down) {
  prctl(PR_SET_CHILD_SUBREAPER, 1); /* daemons of tfctl come back to us */
  th_cluster *c = th_cluster_new(NULL);
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "cluster", "up", "-c", c->config, "--timeout-ms", "15000", NULL);
  TH_REQUIRE(c, rc == 0, "cluster up: exit %d: %s%s", rc, out, err);
  TH_REQUIRE(c, count_lines(out, "started /job:") == 4, "cluster up said:\n%s", out);
  free(out), free(err);

  rc = tfctl(c, &out, &err, "-c", c->config, "health", NULL);
  TH_REQUIRE(c, rc == 0, "health: exit %d:\n%s%s", rc, out, err);
  TH_REQUIRE(c, count_lines(out, NULL) == 4 && count_lines(out, " up ") == 4,
             "health:\n%s", out);
  TH_REQUIRE(c, strstr(out, "/job:worker/replica:0/task:1/device:CPU:0") != NULL &&
                    strstr(out, c->tasks[3].url) != NULL, "health lacks devices/urls:\n%s", out);
  free(out), free(err);

  char maddr[64];
  snprintf(maddr, sizeof maddr, "127.0.0.1:%d", c->tasks[0].port);
  rc = tfctl(c, &out, &err, "-m", maddr, "devices", NULL);
  TH_REQUIRE(c, rc == 0 && count_lines(out, "/device:CPU:0") == 3, "devices: %d\n%s%s", rc,
             out, err);
  TH_REQUIRE(c, strstr(out, "/job:ps/replica:0/task:0/device:CPU:0") != NULL, "devices:\n%s",
             out);
  free(out), free(err);

  rc = tfctl(c, &out, &err, "cluster", "up", c->config, NULL);
  TH_REQUIRE(c, rc == 1 && strstr(err, "already running") != NULL && one_line_error(err),
             "second cluster up: exit %d: %s", rc, err);
  free(out), free(err);

  char pidf[400];
  snprintf(pidf, sizeof pidf, "%s/worker-1.pid", c->run_dir);
  pid_t victim = tf_pidfile_read(pidf);
  TH_REQUIRE(c, victim > 0, "no pid in %s", pidf);
  tf_ctl_stop_pid(victim, SIGKILL, 2000);
  int64_t deadline = tf_ctl_now_ms() + c->o.down_after_ms + 5000;
  do {
    tf_ctl_sleep_ms(100);
    rc = tfctl(c, &out, &err, "-c", c->config, "health", NULL);
    if (rc != 1) {
      free(out), free(err);
    }
  } while (rc != 1 && tf_ctl_now_ms() < deadline);
  TH_REQUIRE(c, rc == 1, "health after the kill: exit %d", rc);
  TH_REQUIRE(c, one_line_error(err) && strstr(err, "/job:worker/task:1") != NULL,
             "health error does not name the worker: %s", err);
  TH_REQUIRE(c, count_lines(out, " down ") == 1 && count_lines(out, " up ") == 3,
             "health after the kill:\n%s", out);
  free(out), free(err);

  /* restart brings the one task back; the master sees it at its next
   * health check. */
  rc = tfctl(c, &out, &err, "-c", c->config, "cluster", "restart", "worker-1", NULL);
  TH_REQUIRE(c, rc == 0 && count_lines(out, "started /job:worker/task:1 ") == 1 &&
                    count_lines(out, "started") == 1,
             "cluster restart: exit %d:\n%s%s", rc, out, err);
  free(out), free(err);
  deadline = tf_ctl_now_ms() + c->o.down_after_ms + 5000;
  do {
    tf_ctl_sleep_ms(100);
    rc = tfctl(c, &out, &err, "-c", c->config, "health", NULL);
    if (rc != 0) {
      free(out), free(err);
    }
  } while (rc != 0 && tf_ctl_now_ms() < deadline);
  TH_REQUIRE(c, rc == 0 && count_lines(out, " up ") == 4, "health after the restart:\n%s",
             out);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "cluster", "restart", c->config, "/job:worker/task:9", NULL);
  TH_REQUIRE(c, rc == 2 && strstr(err, "no task /job:worker/task:9") != NULL,
             "restart of a task the spec lacks: exit %d: %s", rc, err);
  free(out), free(err);

  /* A relative run_dir is relative to the config file, wherever tfctl
   * runs: the same spec with run_dir "run" finds the pid files. */
  char *text = tf_ctl_file_tail(c->config, 1000, "");
  char *at = strstr(text, "run_dir: ");
  TH_REQUIRE(c, at != NULL, "no run_dir in the config");
  char *eol = strchr(at, '\n');
  char *rel = tf__xasprintf("%.*srun_dir: run%s", (int)(at - text), text, eol);
  char *rel_config = th_write_file(c, "relative.yaml", rel);
  free(text), free(rel);
  rc = tfctl(c, &out, &err, "cluster", "down", "--only", "/job:ps/task:0", rel_config, NULL);
  TH_REQUIRE(c, rc == 0 && count_lines(out, "stopped /job:ps/task:0 ") == 1 &&
                    count_lines(out, "stopped") == 1,
             "cluster down --only: exit %d:\n%s%s", rc, out, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "cluster", "down", "-c", rel_config, NULL);
  TH_REQUIRE(c, rc == 0, "cluster down: exit %d: %s", rc, err);
  TH_REQUIRE(c, count_lines(out, "stopped /job:") == 3, "cluster down said:\n%s", out);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "cluster", "down", "-c", rel_config, NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "nothing running under ") != NULL,
             "cluster down of a stopped cluster: exit %d:\n%s%s", rc, out, err);
  free(out), free(err);
  free(rel_config);
  for (int i = 0; i < c->n_tasks; i++) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s-%d.pid", c->run_dir, c->tasks[i].job, c->tasks[i].task);
    TH_REQUIRE(c, access(path, F_OK) != 0, "%s left behind", path);
    TH_REQUIRE(c, !tf_ctl_answers(c->tasks[i].url, 200), "%s still answers", c->tasks[i].url);
  }
  rc = tfctl(c, &out, &err, "-c", c->config, "--timeout-ms", "300", "health", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && strstr(err, "master unreachable") != NULL &&
                    count_lines(out, " down ") == 4,
             "health of a stopped cluster: exit %d:\n%s%s", rc, out, err);
  free(out), free(err);
  th_cluster_free(c);
}
END_TEST

/* y = MatMul(x, w) + b on a graph saved as .tfg; x fed from a .npy. */
static tf_graph *make_graph(tf_tensor **x_out) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 2, 3));
  double wv[] = {1, -2, 0.5, 3, 0, 1};
  double bv[] = {0.25, -1};
  tf_node *w = tt_const(g, "w", tt_tensor(TF_FLOAT32, tf_shape_of(2, 3, 2), wv));
  tf_node *b = tt_const(g, "b", tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), bv));
  tf_node *mm = tt_node(g, "MatMul", "layer/mm", (tf_output[]){{x, 0}, {w, 0}}, 2, NULL, 0);
  tt_node(g, "Add", "layer/y", (tf_output[]){{mm, 0}, {b, 0}}, 2, NULL, 0);
  double xv[] = {1, 2, 3, -4, 5, -6};
  *x_out = tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3), xv);
  return g;
}

START_TEST(test_run_and_graph) {
  th_cluster *c = th_cluster_new(NULL);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  tf_tensor *x = NULL;
  tf_graph *g = make_graph(&x);
  tf_status st;
  tf_status_init(&st);
  char gpath[400], xpath[400], outdir[400], ypath[500];
  snprintf(gpath, sizeof gpath, "%s/g.tfg", c->dir);
  snprintf(xpath, sizeof xpath, "%s/x.npy", c->dir);
  snprintf(outdir, sizeof outdir, "%s/out", c->dir);
  snprintf(ypath, sizeof ypath, "%s/layer_y_0.npy", outdir);
  TH_REQUIRE(c, tf_graph_save(g, gpath, &st) == TF_OK, "save: %s", st.msg);
  TH_REQUIRE(c, tf_tensor_save_npy(x, xpath, &st) == TF_OK, "npy: %s", st.msg);
  /* The local reference. */
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *feed = "x:0", *fetch = "layer/y:0";
  tf_tensor *want = NULL;
  TH_REQUIRE(c, tf_session_run(s, NULL, &feed, &x, 1, &fetch, &want, 1, NULL, 0, NULL, &st) ==
                    TF_OK, "local run: %s", st.msg);
  tf_session_free(s);

  char feedarg[500], maddr[64];
  snprintf(feedarg, sizeof feedarg, "x:0=%s", xpath);
  snprintf(maddr, sizeof maddr, "127.0.0.1:%d", c->tasks[0].port);
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "-m", maddr, "run", gpath, "--feed", feedarg, "--fetch",
                 "layer/y:0", "--out", outdir, "--timeout-ms", "10000", NULL);
  TH_REQUIRE(c, rc == 0, "tfctl run: exit %d: %s%s", rc, out, err);
  TH_REQUIRE(c, strstr(out, "layer/y:0: float32 [2,2]") != NULL, "run printed:\n%s", out);
  free(out), free(err);
  tf_tensor *got = NULL;
  TH_REQUIRE(c, tf_tensor_load_npy(ypath, &got, &st) == TF_OK, "%s: %s", ypath, st.msg);
  TH_REQUIRE(c, tf_tensor_equal(got, want), "remote result differs from the local one");
  tf_tensor_unref(got);

  rc = tfctl(c, &out, &err, "graph", gpath, "--format", "dot", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "digraph") != NULL &&
                    strstr(out, "\"layer/mm\" -> \"layer/y\"") != NULL, "dot: %d\n%s%s", rc,
             out, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-c", c->config, "graph", gpath, "--placed", "--format", "dot",
             NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "subgraph cluster_") != NULL &&
                    strstr(out, "/job:worker/replica:0/task:") != NULL, "placed dot: %d\n%s%s",
             rc, out, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-c", c->config, "graph", gpath, "--placed", NULL);
  TH_REQUIRE(c, rc == 0 && count_lines(out, "device: /job:worker/replica:0/task:") >= 4,
             "placed yaml: %d\n%s%s", rc, out, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-m", maddr, "run", gpath, "--feed", feedarg, "--target",
             "layer/y", NULL);
  TH_REQUIRE(c, rc == 0 && strcmp(out, "ran layer/y: ok\n") == 0, "target-only run: exit %d: "
             "%s%s", rc, out, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-m", maddr, "run", gpath, "--fetch", "layer/y:0", "--out",
             "/proc/no/such/dir", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && strncmp(err, "tfctl: --out: ", 14) == 0,
             "unwritable --out: exit %d: %s", rc, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-m", "127.0.0.1:1", "--timeout-ms", "300", "run", gpath,
             "--fetch", "layer/y:0", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && count_lines(err, "session on") == 1 &&
                    strstr(strstr(err, "session on") + 1, "session on") == NULL,
             "session error: exit %d: %s", rc, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-m", maddr, "run", gpath, "--fetch", "nosuch:0", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && strstr(err, "nosuch") != NULL,
             "run of an unknown fetch: exit %d: %s", rc, err);
  free(out), free(err);
  tf_tensor_unref(want);
  tf_tensor_unref(x);
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_cluster_up_failure_names_task) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  th_cluster *c = th_cluster_new(NULL);
  /* Occupy worker 1's port so its tfworker exits 1. */
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->tasks[3].port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  TH_REQUIRE(c, bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0,
             "cannot occupy port %d", c->tasks[3].port);
  char *out = NULL, *err = NULL;
  int64_t t0 = tf_ctl_now_ms();
  int rc = tfctl(c, &out, &err, "cluster", "up", "-c", c->config, "--timeout-ms", "30000", NULL);
  int64_t took = tf_ctl_now_ms() - t0;
  close(fd);
  /* The first line: the task, its exit status and its log's last line. */
  char want[256];
  snprintf(want, sizeof want, "tfctl: cluster up: /job:worker/task:1 (%s) exited with status 1: "
           "tfworker /job:worker/task:1: cannot start: ", c->tasks[3].url);
  const char *nl = strchr(err, '\n');
  TH_REQUIRE(c, rc == 1 && strncmp(err, want, strlen(want)) == 0 && nl != NULL, "exit %d: %s",
             rc, err);
  TH_REQUIRE(c, strstr(err, "Address in use\n") == nl - strlen("Address in use") &&
                    strstr(err, "/job:worker/task:0") == NULL,
             "error does not name just worker 1 and its cause: %s", err);
  TH_REQUIRE(c, strstr(nl, "worker-1.log:\n") != NULL, "no log tail after the line: %s", err);
  TH_REQUIRE(c, took < 15000, "cluster up took %lld ms for a task that exits at once",
             (long long)took);
  free(out), free(err);
  for (int i = 0; i < c->n_tasks; i++) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s-%d.pid", c->run_dir, c->tasks[i].job, c->tasks[i].task);
    TH_REQUIRE(c, access(path, F_OK) != 0, "%s left behind", path);
    TH_REQUIRE(c, !tf_ctl_answers(c->tasks[i].url, 200), "%s still answers", c->tasks[i].url);
  }
  th_cluster_free(c);
}
END_TEST

/* A spec naming one endpoint twice (a name and its address) is refused at
 * load, naming both tasks and the position of the second; nothing starts. */
START_TEST(test_cluster_up_duplicate_address) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  th_cluster *c = th_cluster_new(NULL);
  int p0 = c->tasks[0].port, p1 = c->tasks[2].port;
  char text[512];
  snprintf(text, sizeof text, "cluster: dup\njobs:\n  master: [127.0.0.1:%d]\n"
           "  worker: [localhost:%d, 127.0.0.1:%d]\nrun_dir: %s\n", p0, p1, p1, c->run_dir);
  char *path = th_write_file(c, "dup.yaml", text);
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "cluster", "up", path, "--timeout-ms", "8000", NULL);
  char want[512], digits[16];
  int col = (int)strlen("  worker: [localhost:, ") + snprintf(digits, sizeof digits, "%d", p1) + 1;
  snprintf(want, sizeof want, "tfctl: %s:4:%d: jobs.worker[1]: /job:worker/task:1 at "
           "'127.0.0.1:%d' has the address of /job:worker/task:0 at 'localhost:%d' (both are "
           "127.0.0.1 port %d); each task needs an address of its own\n", path, col, p1, p1,
           p1);
  TH_REQUIRE(c, rc == 1 && strcmp(err, want) == 0, "exit %d:\n%s\nwant\n%s", rc, err, want);
  free(out), free(err);
  char pidf[400];
  snprintf(pidf, sizeof pidf, "%s/worker-0.pid", c->run_dir);
  TH_REQUIRE(c, access(pidf, F_OK) != 0, "%s written", pidf);
  TH_REQUIRE(c, !tf_ctl_answers(c->tasks[0].url, 200), "a master was started");
  rc = tfctl(c, &out, &err, "-c", path, "health", NULL); /* every command loads it */
  TH_REQUIRE(c, rc == 1 && strstr(err, "has the address of /job:worker/task:0") != NULL,
             "health: exit %d: %s", rc, err);
  free(out), free(err);
  free(path);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_usage_errors) {
  th_cluster *c = th_cluster_new(NULL);
  const char *cases[][6] = {
      {NULL},
      {"bogus", NULL},
      {"health", NULL},
      {"-c", NULL},
      {"--frob", "health", NULL},
      {"-m", "127.0.0.1:1", "run", NULL},
      {"-m", "127.0.0.1:1", "run", "g.tfg", NULL},
      {"graph", "g.tfg", "--format", "png", NULL},
      {"cluster", "sideways", NULL},
      {"cluster", "up", NULL},
      {"-m", "127.0.0.1:1", "health", "extra", NULL},
      {"-m", "127.0.0.1:1", "--timeout-ms", "soon", "health", NULL},
      {"-m", "127.0.0.1:1", "devices", "--placed", NULL},
      {"-c", "c.yaml", "-m", "127.0.0.1:1", "health", NULL},
      {"help", "bogus", NULL},
      {"help", "run", "graph", NULL},
      {"-m", "127.0.0.1:1", "submit", NULL},
      {"-m", "127.0.0.1:1", "submit", "a.yaml", "b.yaml"},
      {"submit", "j.yaml", NULL},
      {"-m", "127.0.0.1:1", "status", NULL},
      {"-m", "127.0.0.1:1", "pause", "j", "extra"},
      {"-m", "127.0.0.1:1", "logs", NULL},
      {"-m", "127.0.0.1:1", "jobs", "extra", NULL},
      {"step", "j", "-n", "0", NULL},
      {"step", "j", "-n", "-3", NULL},
      {"step", "j", "-n", "2x", NULL},
      {"step", "j", "-n", "2147483648", NULL},
      {"step", "j", "-n", NULL},
      {"status", "j", "-n", "3", NULL},
      {"cancel", "j", "--follow", NULL},
      {"jobs", "--follow", NULL},
      {"-m", "127.0.0.1:1", "health", "--follow", NULL},
      {"checkpoint", NULL},
      {"checkpoint", "j", "extra", NULL},
      {"checkpoints", "j", "--follow", NULL},
      {"restore", NULL},
      {"restore", "j", "ckpt-1", "extra", NULL},
      {"restore", "j", "-n", "3", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out = NULL, *err = NULL;
    const char *const *a = cases[i];
    int rc = tfctl(c, &out, &err, a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL,
                   a[0] && a[1] && a[2] ? a[3] : NULL,
                   a[0] && a[1] && a[2] && a[3] ? a[4] : NULL, NULL);
    TH_REQUIRE(c, rc == 2 && strncmp(err, "tfctl: ", 7) == 0 && strstr(err, "usage:") != NULL,
               "case %zu (%s ...): exit %d: %s", i, a[0] ? a[0] : "", rc, err);
    free(out), free(err);
  }
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "-m", "127.0.0.1:1", "--timeout-ms", "300", "health", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && strstr(err, "127.0.0.1:1") != NULL,
             "health of nothing: exit %d: %s", rc, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-c", "/nonexistent/c.yaml", "health", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) && strstr(err, "/nonexistent/c.yaml") != NULL,
             "missing config: exit %d: %s", rc, err);
  free(out), free(err);
  /* A spec file that cannot be read is named before any call: the master
   * address answers nothing, and the error is the file's. */
  rc = tfctl(c, &out, &err, "-m", "127.0.0.1:1", "submit", "/nonexistent/j.yaml", NULL);
  TH_REQUIRE(c, rc == 1 && one_line_error(err) &&
                    strstr(err, "cannot read job spec /nonexistent/j.yaml") != NULL &&
                    out[0] == '\0',
             "missing job spec: exit %d: %s", rc, err);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "-m", "127.0.0.1:1", "--timeout-ms", "300", "status", "j", NULL);
  /* Nothing listens there: refused at once, said as such (not a timeout). */
  TH_REQUIRE(c, rc == 1 && one_line_error(err) &&
                    strstr(err, "cannot connect to tcp://127.0.0.1:1: Connection refused")
                    != NULL, "status of nothing: exit %d: %s", rc, err);
  free(out), free(err);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_help_and_version) {
  th_cluster *c = th_cluster_new(NULL);
  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "--version", NULL);
  TH_REQUIRE(c, rc == 0 && strncmp(out, "tfctl ", 6) == 0 && strstr(out, tf_version()) != NULL,
             "--version: exit %d: %s%s", rc, out, err);
  free(out), free(err);
  const char *commands[] = {"health", "devices", "run",    "graph", "cluster", "submit", "jobs",
                            "status", "step",    "pause",  "resume", "cancel",  "logs",   "help",
                            "checkpoint", "checkpoints", "restore"};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    rc = tfctl(c, &out, &err, "help", commands[i], NULL);
    TH_REQUIRE(c, rc == 0 && strncmp(out, "usage: tfctl", 12) == 0 && err[0] == '\0',
               "help %s: exit %d: %s%s", commands[i], rc, out, err);
    char *out2 = NULL, *err2 = NULL;
    rc = tfctl(c, &out2, &err2, commands[i], "--help", NULL);
    TH_REQUIRE(c, rc == 0 && strcmp(out, out2) == 0, "%s --help differs from help %s: %s",
               commands[i], commands[i], out2);
    free(out), free(err), free(out2), free(err2);
  }
  rc = tfctl(c, &out, &err, "run", "--help", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "--out DIR") != NULL && strstr(out, "Runs one step"),
             "run --help: %s", out);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "--help", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "help [COMMAND]") != NULL &&
                    strstr(out, "submit JOB.yaml") != NULL &&
                    strstr(out, "status JOB [--follow]") != NULL, "--help: %s", out);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "status", "--help", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "--follow") != NULL && strstr(out, "metrics") != NULL,
             "status --help: %s", out);
  free(out), free(err);
  rc = tfctl(c, &out, &err, "help", "step", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "step JOB [-n N]") != NULL, "help step: %s", out);
  free(out), free(err);
  th_cluster_free(c);
}
END_TEST

/* ---- tfctl exits once it knows a step's outcome ------------------------------ */

static tf_node *dev_node(tf_graph *g, const char *op, const char *name, const char *dev,
                         const tf_output *in, int n_in, const tf_attr_kv *kv, int n_kv) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < n_kv; i++) {
    tf_node_set_attr(b, kv[i].name, kv[i].value);
  }
  tf_node_set_device(b, dev);
  tf_status st;
  tf_status_init(&st);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", name, st.msg);
  return n;
}

/* Saves DIR/block.tfg: deq = QueueDequeue(q) on worker 0, q an empty
 * FIFOQueue there, so the step blocks until something ends it; y = deq +
 * one on worker 1, so the step spans both workers. */
static void save_blocking_graph(th_cluster *c, char *path, size_t n) {
  tf_graph *g = tf_graph_new();
  tf_dtype ct[] = {TF_FLOAT32};
  tf_attr_kv qkv[] = {{"component_types", tf_attr_type_list(ct, 1)}};
  tf_node *q = dev_node(g, "FIFOQueue", "q", "/job:worker/task:0", NULL, 0, qkv, 1);
  tf_node *deq = dev_node(g, "QueueDequeue", "deq", "/job:worker/task:0",
                          (tf_output[]){{q, 0}}, 1, qkv, 1);
  tf_tensor *one = tf_tensor_scalar_f32(1.0f);
  tf_attr_kv ckv[] = {{"value", tf_attr_tensor(one)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *k = dev_node(g, "Const", "one", "/job:worker/task:1", NULL, 0, ckv, 2);
  tf_tensor_unref(one);
  dev_node(g, "Add", "y", "/job:worker/task:1", (tf_output[]){{deq, 0}, {k, 0}}, 2, NULL, 0);
  snprintf(path, n, "%s/block.tfg", c->dir);
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_graph_save(g, path, &st) == TF_OK, "save: %s", st.msg);
  tf_graph_free(g);
}

/* `tfctl -c CONFIG run GRAPH --fetch y:0` in the background, its stdout
 * and stderr in log. */
static pid_t start_run(th_cluster *c, const char *gpath, const char *log) {
  char *prog = th_bin("tfctl");
  char *argv[] = {prog, "-c", c->config, "run", (char *)gpath, "--fetch", "y:0", NULL};
  tf_ctl_spawn_opts so = {.log_path = log, .die_with_parent = true};
  tf_status st;
  tf_status_init(&st);
  pid_t pid = 0;
  TH_REQUIRE(c, tf_ctl_spawn(argv, &so, &pid, &st) == TF_OK, "tfctl run: %s", st.msg);
  free(prog);
  return pid;
}

/* Waits until the task at url runs a step; false after timeout_ms. */
static bool wait_step_running(const char *url, int64_t timeout_ms) {
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  while (tf_ctl_now_ms() < deadline) {
    tf_ctl_task t;
    tf_status st;
    tf_status_init(&st);
    bool running = tf_ctl_get_status(url, 500, &t, &st) == TF_OK && t.running_steps > 0;
    tf_ctl_task_fini(&t);
    if (running) {
      return true;
    }
    tf_ctl_sleep_ms(20);
  }
  return false;
}

/* Whether the file holds needle. */
static bool file_has(const char *path, const char *needle) {
  char *text = tf_ctl_file_tail(path, 1000, "");
  bool has = strstr(text, needle) != NULL;
  free(text);
  return has;
}

/* Watches pid for up to limit_ms: *err_ms gets when its log first held
 * "tfctl: " (its error line), *exit_ms when it exited (tf_ctl_now_ms;
 * -1 if not seen). Returns its exit code, -1 if it did not exit (then
 * killed). */
static int watch_exit(pid_t pid, const char *log, int64_t limit_ms, int64_t *err_ms,
                      int64_t *exit_ms) {
  int64_t deadline = tf_ctl_now_ms() + limit_ms;
  *err_ms = *exit_ms = -1;
  for (;;) {
    int status = tf_ctl_reap(pid);
    int64_t now = tf_ctl_now_ms();
    if (*err_ms < 0 && file_has(log, "tfctl: ")) {
      *err_ms = now;
    }
    if (status >= 0) {
      *exit_ms = now;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (now >= deadline) {
      tf_ctl_stop_pid(pid, SIGKILL, 1000);
      return -1;
    }
    tf_ctl_sleep_ms(5);
  }
}

/* Kills victim (a job name) while tfctl runs the blocking step; tfctl must
 * print one error line and exit 1 within 1 s of printing it. */
static void run_and_kill(const char *victim) {
  th_cluster *c = th_cluster_new(NULL);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  char gpath[400], log[400];
  save_blocking_graph(c, gpath, sizeof gpath);
  snprintf(log, sizeof log, "%s/tfctl-run.out", c->dir);
  pid_t pid = start_run(c, gpath, log);
  th_task *w0 = th_task_get(c, "worker", 0);
  TH_REQUIRE(c, wait_step_running(w0->url, 10000), "the step never started on worker 0");
  th_task *t = th_task_get(c, victim, 0);
  int64_t killed = tf_ctl_now_ms();
  th_kill_task(t);
  int64_t err_ms, exit_ms;
  int rc = watch_exit(pid, log, 30000, &err_ms, &exit_ms);
  char *out = tf_ctl_file_tail(log, 20, "  ");
  fprintf(stderr, "tfctl_test: %s killed: error after %lld ms, exit %lld ms after the error\n%s",
          victim, (long long)(err_ms - killed), (long long)(exit_ms - err_ms), out);
  TH_REQUIRE(c, rc == 1, "tfctl run exit %d after the %s was killed:\n%s", rc, victim, out);
  TH_REQUIRE(c, err_ms >= 0 && exit_ms - err_ms <= 1000,
             "tfctl exited %lld ms after printing its error (limit 1000):\n%s",
             (long long)(exit_ms - err_ms), out);
  free(out);
  th_cluster_free(c);
}

START_TEST(test_run_exits_after_worker_killed) { run_and_kill("worker"); }
END_TEST

START_TEST(test_run_exits_after_master_killed) { run_and_kill("master"); }
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tfctl");
  TCase *tc = tcase_create("tfctl");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_cluster_up_health_down);
  tcase_add_test(tc, test_run_and_graph);
  tcase_add_test(tc, test_cluster_up_failure_names_task);
  tcase_add_test(tc, test_cluster_up_duplicate_address);
  tcase_add_test(tc, test_usage_errors);
  tcase_add_test(tc, test_help_and_version);
  tcase_add_test(tc, test_run_exits_after_worker_killed);
  tcase_add_test(tc, test_run_exits_after_master_killed);
  suite_add_tcase(s, tc);
  return s;
}
