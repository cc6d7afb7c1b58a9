/* identity_test.c: a task answering at an address that is not its own is
 * refused loudly.
 * - Swapped ports: the master's spec has the two workers' ports swapped
 *   against the workers' own; health shows "wrong task at address" for
 *   both, and a step fails at once naming it instead of hanging.
 * - Duplicate addresses: a spec naming one port twice (127.0.0.1:P and
 *   localhost:P) is refused by a daemon at start with the file:line and
 *   both tasks.
 * - A task restarted with another task's name: worker 1 is killed and a
 *   worker started as task 0 at worker 1's port; health shows the wrong
 *   task there and a step on worker 1 fails naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/unit/testutil.h"

/* The cluster's spec with every "127.0.0.1:<from>" written as "<to>";
 * returns the new file's path (malloc'd). */
static char *spec_with(th_cluster *c, const char *name, const char *const *from,
                       const char *const *to, int n) {
  FILE *f = fopen(c->config, "r");
  TH_REQUIRE(c, f != NULL, "read %s", c->config);
  char text[8192];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  char out[8192] = "";
  for (const char *p = text; *p != '\0';) {
    int hit = -1;
    for (int i = 0; i < n && hit < 0; i++) {
      if (strncmp(p, from[i], strlen(from[i])) == 0) hit = i;
    }
    if (hit >= 0) {
      strncat(out, to[hit], sizeof out - strlen(out) - 1);
      p += strlen(from[hit]);
    } else {
      size_t l = strlen(out);
      if (l + 1 < sizeof out) {
        out[l] = *p;
        out[l + 1] = '\0';
      }
      p++;
    }
  }
  return th_write_file(c, name, out);
}

/* Waits up to ms until the master's health shows every listed task down
 * with "wrong task at address"; the first error seen. */
static bool health_shows_wrong(th_cluster *c, const int *workers, int n, int64_t ms,
                               char *seen, size_t size) {
  th_task *master = th_task_get(c, "master", 0);
  int64_t deadline = tf_ctl_now_ms() + ms;
  snprintf(seen, size, "no answer");
  while (tf_ctl_now_ms() < deadline) {
    tf_ctl_task *ts = NULL;
    int nt = 0, wrong = 0;
    tf_status st;
    if (tf_ctl_cluster_status(master->url, 2000, &ts, &nt, &st) == TF_OK) {
      for (int i = 0; i < nt; i++) {
        for (int k = 0; k < n; k++) {
          if (strcmp(ts[i].job, "worker") == 0 && ts[i].task == workers[k]) {
            snprintf(seen, size, "/job:worker/task:%d %s: %s", ts[i].task,
                     ts[i].up ? "up" : "down", ts[i].error);
            wrong += !ts[i].up && strstr(ts[i].error, "wrong task at address") != NULL;
          }
        }
      }
      tf_ctl_tasks_free(ts, nt);
    }
    if (wrong == n) return true;
    tf_ctl_sleep_ms(100);
  }
  return false;
}

/* A cross-task step fails within 5 s naming the wrong task. */
static void step_fails_wrong(th_cluster *c) {
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = ig_cross_graph();
  tf_status st;
  int64_t t0 = tf_ctl_now_ms();
  tf_session *s = ig_remote(master->url, g, &st);
  tf_code rc = s != NULL ? ig_run_cross(s, 20000, &st) : st.code;
  int64_t ms = tf_ctl_now_ms() - t0;
  fprintf(stderr, "identity: the step failed in %lld ms: %s: %s\n", (long long)ms,
          tf_code_name(rc), st.msg);
  TH_REQUIRE(c, rc != TF_OK && strstr(st.msg, "wrong task at address") != NULL,
             "step: %s: %s", tf_code_name(rc), st.msg);
  TH_REQUIRE(c, ms < 5000, "the step took %lld ms to fail", (long long)ms);
  if (s != NULL) {
    tf_session_close(s, &st);
    tf_session_free(s);
  }
  tf_graph_free(g);
}

static void addr(char *buf, size_t n, int port) { snprintf(buf, n, "127.0.0.1:%d", port); }

START_TEST(test_swapped_ports) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  th_cluster *c = th_cluster_new(&o);
  th_task *w0 = th_task_get(c, "worker", 0), *w1 = th_task_get(c, "worker", 1);
  th_task *master = th_task_get(c, "master", 0);
  char a0[32], a1[32];
  addr(a0, sizeof a0, w0->port);
  addr(a1, sizeof a1, w1->port);
  const char *from[] = {a0, a1}, *to[] = {a1, a0};
  char *swapped = spec_with(c, "swapped.yaml", from, to, 2);
  master->config = swapped;
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  char seen[1024];
  int both[] = {0, 1};
  TH_REQUIRE(c, health_shows_wrong(c, both, 2, 5000, seen, sizeof seen),
             "health does not show the swapped workers: %s", seen);
  fprintf(stderr, "identity: swapped ports: %s\n", seen);
  step_fails_wrong(c);
  th_cluster_free(c);
  free(swapped);
}
END_TEST

START_TEST(test_duplicate_addresses) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  th_cluster *c = th_cluster_new(&o);
  th_task *w0 = th_task_get(c, "worker", 0), *w1 = th_task_get(c, "worker", 1);
  char a1[32], dup[32];
  addr(a1, sizeof a1, w1->port);
  snprintf(dup, sizeof dup, "localhost:%d", w0->port);
  const char *from[] = {a1}, *to[] = {dup};
  char *spec = spec_with(c, "dup.yaml", from, to, 1);
  char *prog = th_bin("tfworker");
  char *argv[] = {prog, "--config", spec, "--job", "worker", "--task", "0", NULL};
  char *err = NULL;
  int rc = th_run(c, argv, 10000, NULL, &err);
  fprintf(stderr, "identity: duplicate addresses: exit %d: %s", rc, err);
  TH_REQUIRE(c, rc != 0 && rc != -1, "tfworker exit %d", rc);
  TH_REQUIRE(c, strstr(err, "dup.yaml:") != NULL && strstr(err, "/job:worker/task:1") != NULL &&
                    strstr(err, "/job:worker/task:0") != NULL,
             "the error names neither the place nor both tasks: %s", err);
  free(err);
  free(prog);
  free(spec);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_restarted_with_another_name) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  th_task *w0 = th_task_get(c, "worker", 0), *w1 = th_task_get(c, "worker", 1);
  TH_REQUIRE(c, th_wait_task(c, w1, 5000), "worker 1");
  th_kill_task(w1);
  /* An impostor: task 0 of a spec that puts task 0 at worker 1's port
   * (and task 1 at worker 0's, so the two stay distinct). */
  char a0[32], a1[32];
  addr(a0, sizeof a0, w0->port);
  addr(a1, sizeof a1, w1->port);
  const char *from[] = {a0, a1}, *to[] = {a1, a0};
  char *spec = spec_with(c, "impostor.yaml", from, to, 2);
  th_task impostor = *w1;
  snprintf(impostor.job, sizeof impostor.job, "worker");
  impostor.task = 0;
  impostor.config = spec;
  snprintf(impostor.log, sizeof impostor.log, "%s/impostor.log", c->dir);
  TH_REQUIRE(c, th_start_task(c, &impostor, NULL), "impostor start");
  w1->pid = impostor.pid; /* so th_cluster_free stops it */
  char seen[1024];
  int one[] = {1};
  TH_REQUIRE(c, health_shows_wrong(c, one, 1, 5000, seen, sizeof seen),
             "health does not show the impostor: %s", seen);
  fprintf(stderr, "identity: impostor: %s\n", seen);
  step_fails_wrong(c);
  th_cluster_free(c);
  free(spec);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("identity");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_swapped_ports);
  tcase_add_test(tc, test_duplicate_addresses);
  tcase_add_test(tc, test_restarted_with_another_name);
  suite_add_tcase(s, tc);
  return s;
}
