/* abandon_test.c: steps whose owners die are cancelled everywhere.
 * - 50 clients (tfctl run) each start a step that blocks on empty queues
 *   on both workers and are SIGKILLed: within the session keep-alive time
 *   (limits.session_ttl_ms) plus a stated slack the master has no session
 *   and no step left, no worker runs a step, and a new session works.
 * - The master is SIGKILLed while 5 such steps run: within the same time
 *   the workers have cancelled them and dropped its graphs (they check the
 *   master's incarnation and its silence); a restarted master serves.
 * - tfctl exits within 1 s of printing the error when a worker or the
 *   master is killed under its step. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/unit/testutil.h"
#include "tf/serialize.h"

enum { CLIENTS = 50, TTL_MS = 2000, SLACK_MS = 3000 };

static th_cluster *start_cluster(void) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  /* Fifty clients starting at once (each under the sanitizers, on two
   * cores) can starve a worker's replies past the harness's 1 s: the
   * master would rightly mark it down and fail the steps that need it.
   * Nothing here tests how fast a dead task is noticed. */
  o.down_after_ms = 5000;
  o.extra_yaml = "limits:\n  session_ttl_ms: 2000\n";
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  return c;
}

static char *save_blocking_graph(th_cluster *c) {
  char *path = malloc(strlen(c->dir) + 32);
  sprintf(path, "%s/blocking.tfg", c->dir);
  tf_graph *g = ig_blocking_graph();
  tf_status st;
  TH_REQUIRE(c, tf_graph_save(g, path, &st) == TF_OK, "save: %s", st.msg);
  tf_graph_free(g);
  return path;
}

/* tfctl run of the blocking graph with a 10-minute deadline. */
static pid_t start_client(th_cluster *c, const char *graph, const char *log) {
  char *tfctl = th_bin("tfctl");
  char *argv[] = {tfctl, "-c", c->config, "--timeout-ms", "600000", "run", (char *)graph,
                  "--fetch", "sum:0", NULL};
  pid_t pid = th_spawn(c, argv, log);
  free(tfctl);
  return pid;
}

/* A counter of the task's GetStatus reply (-1 when it does not answer). */
typedef enum { RUNNING, SESSIONS, GRAPHS } counter;
static int64_t count(th_task *t, counter k) {
  tf_msg_get_status_reply r;
  tf_wire_msg *keep = NULL;
  tf_status st;
  if (ig_status(t->url, &r, &keep, &st) != TF_OK) {
    return -1;
  }
  int64_t v = k == RUNNING ? r.running_steps : k == SESSIONS ? r.sessions : r.graphs;
  tf_msg_get_status_reply_fini(&r);
  tf_wire_msg_free(keep);
  return v;
}

/* Waits up to ms until task's counter reaches at least want; its value. */
static int64_t wait_at_least(th_task *t, counter k, int64_t want, int64_t ms) {
  int64_t deadline = tf_ctl_now_ms() + ms, v = -1;
  while ((v = count(t, k)) < want && tf_ctl_now_ms() < deadline) {
    tf_ctl_sleep_ms(50);
  }
  return v;
}

/* Whether every listed task reports 0 running steps (and the master 0
 * sessions, workers 0 graphs when graphs_too) within ms; the time taken. */
static bool all_idle(th_cluster *c, bool master_too, bool graphs_too, int64_t ms,
                     int64_t *took) {
  int64_t t0 = tf_ctl_now_ms();
  for (;;) {
    bool idle = true;
    for (int i = 0; i < c->n_tasks && idle; i++) {
      th_task *t = &c->tasks[i];
      bool is_master = strcmp(t->job, "master") == 0;
      if (is_master && !master_too) continue;
      idle = count(t, RUNNING) == 0 && (!is_master || count(t, SESSIONS) == 0) &&
             (is_master || !graphs_too || count(t, GRAPHS) == 0);
    }
    *took = tf_ctl_now_ms() - t0;
    if (idle) return true;
    if (*took > ms) return false;
    tf_ctl_sleep_ms(50);
  }
}

static void new_session_works(th_cluster *c) {
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = ig_cross_graph();
  tf_status st;
  tf_session *s = ig_remote(master->url, g, &st);
  TH_REQUIRE(c, s != NULL, "new session: %s", st.msg);
  TH_REQUIRE(c, ig_run_cross(s, 10000, &st) == TF_OK, "step on a new session: %s", st.msg);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
}

/* Client i's log file, in buf. */
static const char *client_log(th_cluster *c, int i, char *buf, size_t size) {
  snprintf(buf, size, "%s/client-%d.log", c->dir, i);
  return buf;
}

START_TEST(test_killed_clients_steps_cancelled) {
  th_cluster *c = start_cluster();
  th_task *master = th_task_get(c, "master", 0);
  char *graph = save_blocking_graph(c);
  pid_t pids[CLIENTS];
  char log[400];
  for (int i = 0; i < CLIENTS; i++) {
    pids[i] = start_client(c, graph, client_log(c, i, log, sizeof log));
  }
  int64_t running = wait_at_least(master, RUNNING, CLIENTS, 60000);
  char why[600] = "";
  for (int i = 0; i < CLIENTS && running != CLIENTS && why[0] == '\0'; i++) {
    FILE *f = fopen(client_log(c, i, log, sizeof log), "r");
    if (f != NULL && fgets(why, sizeof why, f) == NULL) why[0] = '\0';
    if (f != NULL) fclose(f);
  }
  TH_REQUIRE(c, running == CLIENTS, "%lld of %d steps running on the master (a client: %s)",
             (long long)running, CLIENTS, why);
  for (int w = 0; w < 2; w++) {
    th_task *t = th_task_get(c, "worker", w);
    running = wait_at_least(t, RUNNING, CLIENTS, 10000);
    TH_REQUIRE(c, running == CLIENTS, "%lld of %d steps running on worker %d",
               (long long)running, CLIENTS, w);
  }
  for (int i = 0; i < CLIENTS; i++) {
    kill(pids[i], SIGKILL);
    waitpid(pids[i], NULL, 0);
  }
  int64_t took = 0;
  bool idle = all_idle(c, true, false, TTL_MS + SLACK_MS, &took);
  fprintf(stderr, "abandon: %d killed clients' steps and sessions gone in %lld ms "
          "(session_ttl_ms %d)\n", CLIENTS, (long long)took, TTL_MS);
  TH_REQUIRE(c, idle, "after %lld ms: master %lld steps %lld sessions; workers %lld, %lld steps",
             (long long)took, (long long)count(master, RUNNING),
             (long long)count(master, SESSIONS),
             (long long)count(th_task_get(c, "worker", 0), RUNNING),
             (long long)count(th_task_get(c, "worker", 1), RUNNING));
  new_session_works(c);
  free(graph);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_killed_master_steps_cancelled) {
  th_cluster *c = start_cluster();
  th_task *master = th_task_get(c, "master", 0);
  char *graph = save_blocking_graph(c);
  enum { N = 5 };
  pid_t pids[N];
  for (int i = 0; i < N; i++) {
    pids[i] = start_client(c, graph, NULL);
  }
  for (int w = 0; w < 2; w++) {
    th_task *t = th_task_get(c, "worker", w);
    int64_t running = wait_at_least(t, RUNNING, N, 30000);
    TH_REQUIRE(c, running == N, "%lld of %d steps running on worker %d",
               (long long)running, N, w);
  }
  th_kill_task(master);
  int64_t took = 0;
  bool idle = all_idle(c, false, true, TTL_MS + SLACK_MS, &took);
  fprintf(stderr, "abandon: the killed master's steps and graphs gone from the workers "
          "in %lld ms\n", (long long)took);
  TH_REQUIRE(c, idle, "after %lld ms the workers still run %lld and %lld steps",
             (long long)took, (long long)count(th_task_get(c, "worker", 0), RUNNING),
             (long long)count(th_task_get(c, "worker", 1), RUNNING));
  for (int i = 0; i < N; i++) {
    kill(pids[i], SIGKILL);
    waitpid(pids[i], NULL, 0);
  }
  TH_REQUIRE(c, th_start_task(c, master, NULL) && th_wait_task(c, master, 10000),
             "master restart");
  new_session_works(c);
  free(graph);
  th_cluster_free(c);
}
END_TEST

static int64_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

/* Starts one blocking tfctl step, kills victim under it, and checks that
 * tfctl prints one error and exits within 1 s of printing it. */
static void tfctl_exit_after_kill(th_cluster *c, th_task *victim) {
  th_task *master = th_task_get(c, "master", 0);
  char *graph = save_blocking_graph(c);
  char log[400];
  snprintf(log, sizeof log, "%s/tfctl-%s.log", c->dir, victim->job);
  pid_t pid = start_client(c, graph, log);
  TH_REQUIRE(c, wait_at_least(master, RUNNING, 1, 20000) == 1, "the step did not start");
  TH_REQUIRE(c, wait_at_least(th_task_get(c, "worker", 1), RUNNING, 1, 5000) == 1,
             "the step did not reach worker 1");
  int64_t t_kill = tf_ctl_now_ms(), t_err = -1, t_exit = -1;
  th_kill_task(victim);
  int status = 0;
  while (tf_ctl_now_ms() - t_kill < 20000 && t_exit < 0) {
    if (t_err < 0 && file_size(log) > 0) t_err = tf_ctl_now_ms();
    if (waitpid(pid, &status, WNOHANG) == pid) t_exit = tf_ctl_now_ms();
    tf_ctl_sleep_ms(2);
  }
  if (t_exit < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  if (t_err < 0 && file_size(log) > 0) t_err = t_exit;
  char *err = NULL;
  {
    FILE *f = fopen(log, "r");
    char buf[1024] = "";
    if (f != NULL) {
      size_t n = fread(buf, 1, sizeof buf - 1, f);
      buf[n] = '\0';
      fclose(f);
    }
    err = strdup(buf);
  }
  fprintf(stderr, "abandon: %s killed: tfctl printed its error %lld ms after the kill and "
          "exited %lld ms after that: %s", victim->job, (long long)(t_err - t_kill),
          (long long)(t_exit - t_err), err);
  TH_REQUIRE(c, t_exit >= 0, "tfctl still running 20 s after %s was killed", victim->job);
  TH_REQUIRE(c, WIFEXITED(status) && WEXITSTATUS(status) != 0, "tfctl exit status %d", status);
  TH_REQUIRE(c, t_err >= 0 && t_exit - t_err <= (TH_SANITIZED ? 2000 : 1000),
             "tfctl exited %lld ms after printing its error", (long long)(t_exit - t_err));
  TH_REQUIRE(c, strncmp(err, "tfctl: ", 7) == 0, "tfctl's error: %s", err);
  free(err);
  free(graph);
}

/* A Reset while worker 0 is dead answers once the master knows it is
 * down, naming it, instead of waiting out the RPC deadline on it. */
static void reset_with_a_dead_worker(th_cluster *c) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_session *s = ig_remote(th_task_get(c, "master", 0)->url, g, &st);
  TH_REQUIRE(c, s != NULL, "session: %s", st.msg);
  const char *box = "a-job";
  int64_t t0 = tf_ctl_now_ms(), ms = 0;
  tf_code rc = TF_OK;
  do { /* the master marks the worker down after down_after_ms */
    rc = tf_session_reset(s, &box, 1, &st);
    ms = tf_ctl_now_ms() - t0;
  } while (strstr(st.msg, "the task is down") == NULL && ms < 15000 &&
           (tf_ctl_sleep_ms(100), true));
  int64_t t1 = tf_ctl_now_ms();
  rc = tf_session_reset(s, &box, 1, &st);
  int64_t one = tf_ctl_now_ms() - t1;
  fprintf(stderr, "abandon: Reset with worker 0 down: %s in %lld ms: %s\n",
          tf_code_name(rc), (long long)one, st.msg);
  TH_REQUIRE(c, rc == TF_UNAVAILABLE && strstr(st.msg, "/job:worker/replica:0/task:0") &&
                    strstr(st.msg, "the task is down") && one < 2000,
             "Reset with a dead worker: %s after %lld ms: %s", tf_code_name(rc),
             (long long)one, st.msg);
  tf_session_free(s);
  tf_graph_free(g);
}

START_TEST(test_tfctl_exits_after_killed_worker_and_master) {
  th_cluster *c = start_cluster();
  tfctl_exit_after_kill(c, th_task_get(c, "worker", 0));
  reset_with_a_dead_worker(c);
  th_task *w0 = th_task_get(c, "worker", 0);
  TH_REQUIRE(c, th_start_task(c, w0, NULL) && th_wait_task(c, w0, 10000), "worker restart");
  TH_REQUIRE(c, ig_master_sees_all_up(c, 10000), "the master does not see the restarted worker");
  tfctl_exit_after_kill(c, th_task_get(c, "master", 0));
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("abandon");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_killed_clients_steps_cancelled);
  tcase_add_test(tc, test_killed_master_steps_cancelled);
  tcase_add_test(tc, test_tfctl_exits_after_killed_worker_and_master);
  suite_add_tcase(s, tc);
  return s;
}
