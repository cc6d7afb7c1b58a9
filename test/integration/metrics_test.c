/* metrics_test.c: the daemons' Prometheus endpoint on a real cluster (1
 * master, 1 ps, 1 worker) with the spec's metrics section on. A small
 * training job runs; then every daemon's /metrics (fetched with curl) has
 * the step, transport, task, job and memory series with plausible values
 * and passes `promtool check metrics`; the real /usr/bin/prometheus,
 * scraping the three daemons every second, answers its HTTP API with a
 * non-zero tf_steps_total and a non-zero median step latency; and a huge
 * URL (100 kB) or 100 idle connections neither crash nor hang a daemon. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "test/integration/jobutil.h"
#include "test/unit/testutil.h"

#define N_TRAIN 256
#define CURL "/usr/bin/curl"
#define PROMETHEUS "/usr/bin/prometheus"
#define PROMTOOL "/usr/bin/promtool"

/* Whether a TCP port on 127.0.0.1 can be bound now. */
/* curl's output for url (malloc'd), requiring exit 0. */
static char *http_get(th_cluster *c, const char *url) {
  char *argv[] = {CURL, "-sS", "--max-time", "10", "-o", "-", (char *)url, NULL};
  char *out = NULL, *err = NULL;
  int rc = th_run(c, argv, 15000, &out, &err);
  TH_REQUIRE(c, rc == 0, "curl %s: exit %d: %s", url, rc, err ? err : "");
  free(err);
  return out;
}

/* The HTTP status of url (curl -w). */
static int http_code(th_cluster *c, const char *url, const char *method) {
  char *argv[] = {CURL, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", (char *)method,
                  "--max-time", "10", (char *)url, NULL};
  char *out = NULL;
  int rc = th_run(c, argv, 15000, &out, NULL);
  int code = rc == 0 && out != NULL ? atoi(out) : -rc;
  free(out);
  return code;
}

static void promtool_check(th_cluster *c, const char *name, const char *text) {
  if (access(PROMTOOL, X_OK) != 0) {
    fprintf(stderr, "metrics_test: SKIP promtool check: %s is not installed "
            "(scripts/install-deps.sh installs prometheus)\n", PROMTOOL);
    return;
  }
  char file[64];
  snprintf(file, sizeof file, "%s.prom", name);
  char *path = th_write_file(c, file, text);
  char cmd[700];
  snprintf(cmd, sizeof cmd, PROMTOOL " check metrics < '%s'", path);
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  char *err = NULL;
  int rc = th_run(c, argv, 20000, NULL, &err);
  TH_REQUIRE(c, rc == 0, "promtool check metrics on %s: exit %d: %s", name, rc,
             err ? err : "");
  free(err);
  free(path);
}

static void run_job(th_cluster *c) {
  char *path = tj_write_mlp_spec(c, "job.yaml", "metrics", 8, 1, 60, 20, "");
  char *id = tj_submit(c, path);
  char *out = NULL;
  int64_t deadline = tf__now_ns() + 60LL * 1000000000;
  do {
    free(out);
    usleep(200 * 1000);
    out = tj_status(c, id);
  } while (!tj_has_state(out, "done") && !tj_has_state(out, "failed") &&
           tf__now_ns() < deadline);
  TH_REQUIRE(c, tj_has_state(out, "done"), "job %s:\n%s", id, out);
  free(out);
  free(id);
  free(path);
}

/* ---- each daemon's text ---------------------------------------------------- */

static void check_daemon_text(th_cluster *c, const th_task *t, int off, char **text) {
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", t->port + off);
  *text = http_get(c, url);
  const char *m = *text;
  bool master = strcmp(t->job, "master") == 0;
  char head[128];
  snprintf(head, sizeof head, "tf_steps_total{role=\"%s\"}", master ? "master" : "worker");
  double steps = tt_line_value(m, head);
  if (strcmp(t->job, "ps") != 0) { /* the ps runs a partition only at init */
    TH_REQUIRE(c, steps >= 60, "%s/%d: %s = %g, want >= 60:\n%s", t->job, t->task, head,
               steps, m);
  }
  snprintf(head, sizeof head, "tf_step_duration_seconds_count{role=\"%s\"}",
           master ? "master" : "worker");
  TH_REQUIRE(c, steps != steps || tt_line_value(m, head) == steps, "%s/%d: %s != steps:\n%s",
             t->job, t->task, head, m);
  TH_REQUIRE(c, strstr(m, "tf_rpc_sent_bytes_total{peer=\"") != NULL &&
                    strstr(m, "tf_rpc_received_messages_total{peer=\"") != NULL,
             "%s/%d: no per-peer transport series:\n%s", t->job, t->task, m);
  TH_REQUIRE(c, tt_line_value(m, "tf_allocator_peak_bytes{allocator=\"cpu\"}") > 0,
             "%s/%d: no allocator peak:\n%s", t->job, t->task, m);
  TH_REQUIRE(c, tt_line_value(m, "process_start_time_seconds") > 1.6e9, "%s/%d: start time:\n%s",
             t->job, t->task, m);
  if (master) {
    TH_REQUIRE(c, tt_line_value(m, "tf_tasks_up") == 2 &&
                      tt_line_value(m, "tf_task_up{task=\"/job:worker/task:0\"}") == 1 &&
                      tt_line_value(m, "tf_jobs{state=\"done\"}") == 1 &&
                      tt_line_value(m, "tf_jobs{state=\"running\"}") == 0,
               "master: tasks and jobs:\n%s", m);
  } else {
    TH_REQUIRE(c, tt_line_value(m, "tf_rendezvous_buffered_bytes") >= 0, "%s/%d: buffered:\n%s",
               t->job, t->task, m);
  }
  char name[32];
  snprintf(name, sizeof name, "%s-%d", t->job, t->task);
  promtool_check(c, name, m);
}

/* ---- the real Prometheus ------------------------------------------------------ */

/* The first "value":[t,"v"] number of a Prometheus query answer, or NaN. */
static double query_value(const char *json) {
  const char *p = json != NULL ? strstr(json, "\"value\":[") : NULL;
  if (p == NULL || (p = strstr(p, ",\"")) == NULL) {
    return NAN;
  }
  return strtod(p + 2, NULL);
}

static double prom_query(th_cluster *c, int port, const char *q) {
  char url[96], data[400];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/query", port);
  snprintf(data, sizeof data, "query=%s", q);
  char *argv[] = {CURL, "-sS", "--max-time", "5", "--data-urlencode", data, url, NULL};
  char *out = NULL;
  th_run(c, argv, 10000, &out, NULL);
  double v = query_value(out);
  free(out);
  return v;
}

static pid_t start_prometheus(th_cluster *c, int off, int *port) {
  char targets[512] = "";
  for (int i = 0; i < c->n_tasks; i++) {
    size_t n = strlen(targets);
    snprintf(targets + n, sizeof targets - n, "%s'127.0.0.1:%d'", i ? ", " : "",
             c->tasks[i].port + off);
  }
  char cfg[1024];
  snprintf(cfg, sizeof cfg,
           "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
           "scrape_configs:\n"
           "  - job_name: tf\n"
           "    static_configs: [{targets: [%s]}]\n", targets);
  char *cfg_path = th_write_file(c, "prometheus.yml", cfg);
  *port = th_free_port();
  char flag_cfg[400], flag_db[400], flag_listen[64], log[400];
  snprintf(flag_cfg, sizeof flag_cfg, "--config.file=%s", cfg_path);
  snprintf(flag_db, sizeof flag_db, "--storage.tsdb.path=%s/prom-data", c->dir);
  snprintf(flag_listen, sizeof flag_listen, "--web.listen-address=127.0.0.1:%d", *port);
  snprintf(log, sizeof log, "%s/prometheus.log", c->dir);
  char *argv[] = {PROMETHEUS, flag_cfg, flag_db, flag_listen, NULL};
  pid_t pid = th_spawn(c, argv, log);
  free(cfg_path);
  return pid;
}

static void check_prometheus(th_cluster *c, int off) {
  if (access(PROMETHEUS, X_OK) != 0) {
    fprintf(stderr, "metrics_test: SKIP the Prometheus server check: %s is not installed "
            "(scripts/install-deps.sh installs prometheus)\n", PROMETHEUS);
    return;
  }
  int port = 0;
  int64_t t0 = tf__now_ns();
  pid_t pid = start_prometheus(c, off, &port);
  double steps = NAN, median = NAN;
  const char *q_med = "histogram_quantile(0.5, sum by (le) (tf_step_duration_seconds_bucket))";
  while (tf__now_ns() - t0 < 30LL * 1000000000 && !(steps > 0 && median > 0)) {
    usleep(500 * 1000);
    steps = prom_query(c, port, "sum(tf_steps_total)");
    median = prom_query(c, port, q_med);
  }
  double waited = (double)(tf__now_ns() - t0) / 1e9;
  kill(pid, SIGTERM);
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 100 && (got = waitpid(pid, &status, WNOHANG)) == 0; i++) {
    usleep(100 * 1000);
  }
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  TH_REQUIRE(c, got == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "prometheus did not exit 0 within 10 s of SIGTERM (status 0x%x)", status);
  TH_REQUIRE(c, steps > 0 && median > 0 && median < 60,
             "Prometheus after %.1f s: sum(tf_steps_total) = %g, median step latency %g s "
             "(see %s/prometheus.log)", waited, steps, median, c->dir);
  fprintf(stderr, "prometheus: sum(tf_steps_total) = %g, median step %.4f s, seen after "
          "%.1f s\n", steps, median, waited);
}

/* ---- hostile clients ------------------------------------------------------------ */

static void check_hostile(th_cluster *c, const th_task *t, int off) {
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d", t->port + off);
  size_t n = 100000; /* under the kernel's 128 kB cap on one argument */
  char *url = malloc(strlen(base) + n + 2);
  sprintf(url, "%s/", base);
  memset(url + strlen(url), 'a', n);
  url[strlen(base) + 1 + n] = '\0';
  int code = http_code(c, url, "GET");
  free(url);
  TH_REQUIRE(c, code == 414 || code == 431 || code == 400 || code == -52 || code == -56,
             "a 100 kB URL: HTTP %d", code);
  char path[96];
  snprintf(path, sizeof path, "%s/other", base);
  TH_REQUIRE(c, http_code(c, path, "GET") == 404, "GET /other is not 404");
  snprintf(path, sizeof path, "%s/metrics", base);
  TH_REQUIRE(c, http_code(c, path, "POST") == 405, "POST /metrics is not 405");
  int fds[100];
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(t->port + off)),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (int i = 0; i < 100; i++) {
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fds[i], (struct sockaddr *)&a, sizeof a) != 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  }
  /* The task's own service is unaffected while they are held. */
  TH_REQUIRE(c, th_wait_task(c, (th_task *)t, 5000), "%s/%d stopped answering GetStatus "
             "with 100 idle /metrics connections", t->job, t->task);
  for (int i = 0; i < 100; i++) {
    if (fds[i] >= 0) {
      close(fds[i]);
    }
  }
  char *text = http_get(c, path);
  TH_REQUIRE(c, strstr(text, "tf_steps_total") != NULL, "no metrics after the flood");
  free(text);
}

START_TEST(test_metrics_end_to_end) {
  int64_t t0 = tf__now_ns();
  th_opts o = th_default_opts();
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  int off = th_add_metrics_section(c, 1000);
  tj_write_idx(c, "train", N_TRAIN, 11u);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster did not start");
  run_job(c);
  for (int i = 0; i < c->n_tasks; i++) {
    char *text = NULL;
    check_daemon_text(c, &c->tasks[i], off, &text);
    free(text);
  }
  check_prometheus(c, off);
  check_hostile(c, th_task_get(c, "worker", 0), off);
  check_hostile(c, th_task_get(c, "master", 0), off);
  fprintf(stderr, "metrics_test: %.1f s\n", (double)(tf__now_ns() - t0) / 1e9);
  th_cluster_free(c);
}
END_TEST

/* A metrics address that cannot be served stops the daemon at start with
 * a message naming it. */
START_TEST(test_bad_metrics_address) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  char *master = th_bin("tfmaster");
  char *argv[] = {master, "--config", c->config, "--metrics-address", "127.0.0.1:x", NULL};
  char *err = NULL;
  int rc = th_run(c, argv, 10000, NULL, &err);
  TH_REQUIRE(c, rc == 1 && strstr(err, "metrics address '127.0.0.1:x': expected HOST:PORT"),
             "exit %d: %s", rc, err ? err : "");
  free(err);
  free(master);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("metrics");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, test_metrics_end_to_end);
  tcase_add_test(tc, test_bad_metrics_address);
  suite_add_tcase(s, tc);
  return s;
}
