/* daemons_test.c: tfmaster and tfworker as processes: READY=1 on a
 * NOTIFY_SOCKET the test listens on, SIGTERM -> exit 0 within the drain
 * time, a second daemon on a taken port fails clearly, bad configs and
 * flags exit 1 / 2 naming the problem (tfworker --job master and
 * heartbeat_ms >= down_after_ms included), and malformed or truncated
 * messages (valid NNG framing with garbage inside, or raw TCP garbage)
 * get an INVALID_ARGUMENT reply or a dropped connection while the daemon
 * keeps answering. SIGHUP re-reads the config: the log level and timeouts
 * apply at once (RELOADING=1, then READY=1), a changed task list is
 * reported as needing a restart, a broken file changes nothing;
 * --instance JOB-N and --pid-file (written while serving, removed at
 * exit). */
#include <errno.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/wire.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"

/* A datagram socket bound to path, for $NOTIFY_SOCKET. */
static int notify_listen(const char *path) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  ck_assert_msg(strlen(path) < sizeof sa.sun_path, "socket path too long: %s", path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

/* The next datagram within timeout_ms into buf ("" on timeout). */
static void notify_recv(int fd, char *buf, size_t size, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  buf[0] = '\0';
  if (poll(&p, 1, timeout_ms) == 1) {
    ssize_t n = recv(fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
  }
}

START_TEST(test_ready_notify_and_sigterm) {
  th_cluster *c = th_cluster_new(NULL);
  int fds[8];
  for (int i = 0; i < c->n_tasks; i++) {
    th_task *t = &c->tasks[i];
    char path[400], env[420];
    snprintf(path, sizeof path, "%s/notify-%d.sock", c->dir, i);
    snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", path);
    fds[i] = notify_listen(path);
    const char *envs[] = {env, NULL};
    TH_REQUIRE(c, th_start_task(c, t, envs), "start %s", t->job);
  }
  for (int i = 0; i < c->n_tasks; i++) {
    th_task *t = &c->tasks[i];
    char msg[512], want[64];
    notify_recv(fds[i], msg, sizeof msg, 10000);
    snprintf(want, sizeof want, "MAINPID=%ld", (long)t->pid);
    TH_REQUIRE(c, strstr(msg, "READY=1") != NULL, "/job:%s/task:%d sent '%s', not READY=1",
               t->job, t->task, msg);
    TH_REQUIRE(c, strstr(msg, want) != NULL && strstr(msg, "STATUS=serving") != NULL,
               "READY message '%s' lacks %s or STATUS", msg, want);
    TH_REQUIRE(c, th_wait_task(c, t, 5000), "/job:%s/task:%d does not answer", t->job,
               t->task);
  }
  /* SIGTERM: STOPPING=1, then exit 0 within drain_ms (+ slack). */
  for (int i = c->n_tasks - 1; i >= 0; i--) {
    th_task *t = &c->tasks[i];
    int64_t t0 = tf_ctl_now_ms();
    pid_t pid = t->pid;
    kill(pid, SIGTERM);
    char msg[512];
    notify_recv(fds[i], msg, sizeof msg, 5000);
    TH_REQUIRE(c, strstr(msg, "STOPPING=1") != NULL, "after SIGTERM got '%s'", msg);
    /* Slack for freeing after the drain: once over 2 s under ASan in CI. */
    int64_t slack = TH_SANITIZED ? 8000 : 2000;
    int status = th_stop_task(t, 0, c->o.drain_ms + slack); /* wait only */
    int64_t took = tf_ctl_now_ms() - t0;
    TH_REQUIRE(c, status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "/job:%s/task:%d: wait status %d after SIGTERM (%lld ms)", t->job, t->task,
               status, (long long)took);
    TH_REQUIRE(c, took <= c->o.drain_ms + slack, "exit took %lld ms", (long long)took);
    close(fds[i]);
  }
  char *log = tf_ctl_file_tail(c->tasks[1].log, 50, "");
  TH_REQUIRE(c, strstr(log, "<5>tfworker /job:ps/task:0: received SIGTERM") != NULL,
             "log lacks the SIGTERM notice with its priority prefix:\n%s", log);
  free(log);
  th_cluster_free(c);
}
END_TEST

/* The file's text until EOF, malloc'd ("" when unreadable). */
static char *slurp(const char *path) { return tf_ctl_file_tail(path, 1000, ""); }

/* text with its first from replaced by to, malloc'd; NULL without from. */
static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (at == NULL) return NULL;
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

/* Waits up to timeout_ms for text to appear in the log at path. */
static bool log_has(const char *path, const char *text, int64_t timeout_ms) {
  int64_t deadline = tf_ctl_now_ms() + timeout_ms;
  for (;;) {
    char *log = slurp(path);
    bool found = strstr(log, text) != NULL;
    free(log);
    if (found || tf_ctl_now_ms() >= deadline) return found;
    tf_ctl_sleep_ms(20);
  }
}

START_TEST(test_sighup_reload_pid_file_instance) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  th_task *w = th_task_get(c, "worker", 0);
  char sock[400], env[420], pidf[400];
  snprintf(sock, sizeof sock, "%s/notify-hup.sock", c->dir);
  snprintf(env, sizeof env, "NOTIFY_SOCKET=%s", sock);
  snprintf(pidf, sizeof pidf, "%s/worker.pid", c->dir);
  int fd = notify_listen(sock);
  char *prog = th_bin("tfworker");
  char *argv[] = {prog, "--config", c->config, "--instance", "worker-0", "--pid-file", pidf,
                  NULL};
  const char *envs[] = {env, NULL};
  tf_ctl_spawn_opts so = {.log_path = w->log, .env = envs, .die_with_parent = true};
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_ctl_spawn(argv, &so, &w->pid, &st) == TF_OK, "%s", st.msg);
  char msg[512];
  notify_recv(fd, msg, sizeof msg, 10000);
  TH_REQUIRE(c, strstr(msg, "READY=1") != NULL, "got '%s', not READY=1", msg);
  TH_REQUIRE(c, tf_pidfile_read(pidf) == w->pid, "pid file %s holds %ld, want %ld", pidf,
             (long)tf_pidfile_read(pidf), (long)w->pid);
  TH_REQUIRE(c, th_wait_task(c, w, 5000), "--instance worker-0 does not serve worker 0");
  /* Debug level, a shorter rpc_ms and a changed thread count (restart). */
  char *text = slurp(c->config);
  char *t2 = replaced(text, "log_level: info", "log_level: debug");
  char *t3 = t2 != NULL ? replaced(t2, "rpc_ms: 5000", "rpc_ms: 4000") : NULL;
  char *t4 = t3 != NULL ? replaced(t3, "rpc: 4", "rpc: 3") : NULL;
  TH_REQUIRE(c, t4 != NULL, "the harness' config changed shape:\n%s", text);
  free(th_write_file(c, "cluster.yaml", t4));
  free(text);
  free(t2);
  free(t3);
  free(t4);
  kill(w->pid, SIGHUP);
  notify_recv(fd, msg, sizeof msg, 5000);
  TH_REQUIRE(c, strstr(msg, "RELOADING=1") != NULL, "after SIGHUP got '%s'", msg);
  notify_recv(fd, msg, sizeof msg, 5000);
  TH_REQUIRE(c, strstr(msg, "READY=1") != NULL, "after the reload got '%s'", msg);
  TH_REQUIRE(c, log_has(w->log, "reloaded ", 3000) &&
                log_has(w->log, "log_level info -> debug, timeouts.rpc_ms 5000 -> 4000", 10),
             "no reload line naming the changes");
  TH_REQUIRE(c, log_has(w->log, "also changes threads.rpc: a restart applies them", 10),
             "the restart-only change is not reported");
  TH_REQUIRE(c, tf_ctl_answers(w->url, 2000), "worker does not answer after SIGHUP");
  TH_REQUIRE(c, log_has(w->log, "<7>tfworker /job:worker/task:0: GetStatus from ", 3000),
             "debug level did not apply: no debug line for GetStatus");
  /* A broken file: logged, nothing changes, still serving. */
  free(th_write_file(c, "cluster.yaml", "jobs: [\n"));
  kill(w->pid, SIGHUP);
  TH_REQUIRE(c, log_has(w->log, "cannot reload: ", 3000) &&
                log_has(w->log, "the running configuration is kept", 10),
             "a broken config on SIGHUP is not reported");
  TH_REQUIRE(c, tf_ctl_answers(w->url, 2000), "worker does not answer after a bad SIGHUP");
  int status = th_stop_task(w, SIGTERM, 5000);
  TH_REQUIRE(c, status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "wait status %d after SIGTERM", status);
  TH_REQUIRE(c, access(pidf, F_OK) != 0, "pid file %s left after exit", pidf);
  close(fd);
  free(prog);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_port_in_use) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  th_task *w = th_task_get(c, "worker", 0);
  th_task *m = th_task_get(c, "master", 0);
  TH_REQUIRE(c, th_start_task(c, w, NULL) && th_wait_task(c, w, 5000), "worker start");
  TH_REQUIRE(c, th_start_task(c, m, NULL) && th_wait_task(c, m, 5000), "master start");
  char *prog = th_bin("tfworker");
  char *argv[] = {prog, "--config", c->config, "--job", "worker", "--task", "0", NULL};
  char *err = NULL;
  int rc = th_run(c, argv, 10000, NULL, &err);
  char port[32];
  snprintf(port, sizeof port, "127.0.0.1:%d", w->port);
  TH_REQUIRE(c, rc == 1, "second tfworker exited %d, want 1; stderr: %s", rc, err);
  TH_REQUIRE(c, strstr(err, port) != NULL && strstr(err, "in use") != NULL,
             "error does not name the address in use: %s", err);
  free(err);
  free(prog);
  prog = th_bin("tfmaster");
  char *argv_m[] = {prog, "--config", c->config, NULL};
  rc = th_run(c, argv_m, 10000, NULL, &err);
  snprintf(port, sizeof port, "127.0.0.1:%d", m->port);
  TH_REQUIRE(c, rc == 1 && strstr(err, port) != NULL, "second tfmaster: exit %d: %s", rc, err);
  free(err);
  free(prog);
  TH_REQUIRE(c, tf_ctl_answers(w->url, 2000), "the first worker stopped answering");
  th_cluster_free(c);
}
END_TEST

/* Runs prog with args (NULL-terminated) and expects exit code want with
 * every needle in stderr. */
static void expect_exit(th_cluster *c, const char *prog, char **args, int want,
                        const char *n1, const char *n2) {
  char *argv[16];
  int k = 0;
  argv[k++] = th_bin(prog);
  for (int i = 0; args[i] != NULL && k < 15; i++) {
    argv[k++] = args[i];
  }
  argv[k] = NULL;
  char *err = NULL;
  int rc = th_run(c, argv, 10000, NULL, &err);
  TH_REQUIRE(c, rc == want, "%s %s: exit %d, want %d; stderr: %s", prog, args[0], rc, want,
             err);
  TH_REQUIRE(c, n1 == NULL || strstr(err, n1) != NULL, "%s: stderr lacks '%s': %s", prog, n1,
             err);
  TH_REQUIRE(c, n2 == NULL || strstr(err, n2) != NULL, "%s: stderr lacks '%s': %s", prog, n2,
             err);
  TH_REQUIRE(c, strchr(err, '\n') == NULL || want == 2 || strchr(err, '\n')[1] == '\0',
             "%s: error is not one line: %s", prog, err);
  free(err);
  free(argv[0]);
}

START_TEST(test_bad_config_and_flags) {
  th_cluster *c = th_cluster_new(NULL);
  char *bad = th_write_file(c, "bad.yaml",
                            "cluster: x\njobs:\n  master: [127.0.0.1:1]\n"
                            "  worker: [127.0.0.1:2]\ntimeouts:\n  rpc_ms: soon\n");
  char *missing = th_write_file(c, "unused.txt", "");
  char path_ln[600];
  snprintf(path_ln, sizeof path_ln, "%s:6:", bad);
  char *w_bad[] = {"--config", bad, "--job", "worker", "--task", "0", NULL};
  expect_exit(c, "tfworker", w_bad, 1, path_ln, "rpc_ms");
  char *m_bad[] = {"--config", bad, NULL};
  expect_exit(c, "tfmaster", m_bad, 1, path_ln, "rpc_ms");
  char nope[600];
  snprintf(nope, sizeof nope, "%s.nope", missing);
  char *w_missing[] = {"--config", nope, "--job", "worker", "--task", "0", NULL};
  expect_exit(c, "tfworker", w_missing, 1, nope, NULL);
  char *w_task[] = {"--config", c->config, "--job", "worker", "--task", "7", NULL};
  expect_exit(c, "tfworker", w_task, 1, "/job:worker/task:7", NULL);
  char *w_nojob[] = {"--config", c->config, "--task", "0", NULL};
  expect_exit(c, "tfworker", w_nojob, 2, "missing --job", "usage:");
  char *w_badtask[] = {"--config", c->config, "--job", "worker", "--task", "x1", NULL};
  expect_exit(c, "tfworker", w_badtask, 2, "--task", "x1");
  char *w_level[] = {"--config", c->config, "--job", "worker", "--task", "0", "--log-level",
                     "loud", NULL};
  expect_exit(c, "tfworker", w_level, 2, "--log-level", "loud");
  char *m_flag[] = {"--config", c->config, "--frobnicate", NULL};
  expect_exit(c, "tfmaster", m_flag, 2, "--frobnicate", NULL);
  char *m_none[] = {NULL};
  expect_exit(c, "tfmaster", m_none, 2, "missing --config", NULL);
  /* The master's job is not a worker's: refused before binding its port. */
  char *w_master[] = {"--config", c->config, "--job", "master", "--task", "0", NULL};
  char not_worker[700], serves[700];
  snprintf(not_worker, sizeof not_worker, "job 'master' in %s is the master's task, not a "
           "worker job (worker jobs: ", c->config);
  snprintf(serves, sizeof serves, "; tfmaster --config %s serves it", c->config);
  expect_exit(c, "tfworker", w_master, 1, not_worker, serves);
  /* Heartbeats as far apart as the down timeout: file:line of the key. */
  char *slow = th_write_file(c, "slow.yaml",
                             "cluster: x\njobs:\n  master: [127.0.0.1:1]\n"
                             "  worker: [127.0.0.1:2]\ntimeouts:\n  heartbeat_ms: 3000\n");
  snprintf(path_ln, sizeof path_ln, "%s:6:17: timeouts.heartbeat_ms: heartbeat_ms (3000) "
           "must be less than down_after_ms (3000, the default)", slow);
  char *m_slow[] = {"--config", slow, NULL};
  expect_exit(c, "tfmaster", m_slow, 1, path_ln, NULL);
  char *w_slow[] = {"--config", slow, "--job", "worker", "--task", "0", NULL};
  expect_exit(c, "tfworker", w_slow, 1, path_ln, NULL);
  free(slow);
  free(bad);
  free(missing);
  th_cluster_free(c);
}
END_TEST

/* Sends m (ownership taken) on a fresh req socket to url and returns the
 * parsed reply (NULL: no reply within 5 s). */
static tf_wire_msg *raw_call(const char *url, nng_msg *m) {
  nng_socket s;
  ck_assert_int_eq(nng_req0_open(&s), 0);
  nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 5000);
  nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 5000);
  tf_wire_msg *r = NULL;
  nng_msg *reply = NULL;
  if (nng_dial(s, url, NULL, 0) == 0 && nng_sendmsg(s, m, 0) == 0) {
    m = NULL;
    if (nng_recvmsg(s, &reply, 0) == 0) {
      tf_status st;
      tf_status_init(&st);
      if (tf_wire_parse(reply, &r, &st) != TF_OK) {
        r = NULL;
      }
    }
  }
  if (m != NULL) {
    nng_msg_free(m);
  }
  nng_close(s);
  return r;
}

static nng_msg *bytes_msg(const void *p, size_t n) {
  nng_msg *m = NULL;
  ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
  nng_msg_append(m, p, n);
  return m;
}

/* A valid request for method with a nil body. */
static nng_msg *valid_msg(int method) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method, .deadline_ms = 5000};
  nng_msg *m = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_wire_finish(tf_wire_writer_new(&h), &m, &st), TF_OK);
  return m;
}

/* Raw TCP garbage: the daemon must drop the connection (EOF or reset). */
static bool tcp_garbage_dropped(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return false;
  }
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n\x01\x02\x03garbage garbage garbage";
  ssize_t w = send(fd, junk, sizeof junk, MSG_NOSIGNAL);
  bool dropped = false;
  int64_t deadline = tf_ctl_now_ms() + 5000;
  while (w > 0 && !dropped && tf_ctl_now_ms() < deadline) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      char buf[256];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      dropped = n == 0 || (n < 0 && errno == ECONNRESET);
    }
  }
  close(fd);
  return dropped;
}

static void attack(th_cluster *c, th_task *t, int body_method) {
  const char garbage[] = "this is not a tf wire message at all";
  tf_wire_msg *r = raw_call(t->url, bytes_msg(garbage, sizeof garbage));
  TH_REQUIRE(c, r != NULL && r->h.code == TF_INVALID_ARGUMENT && r->h.is_reply,
             "%s: garbage: reply %p code %d", t->url, (void *)r, r ? r->h.code : -1);
  tf_wire_msg_free(r);
  nng_msg *m = valid_msg(TF_M_GET_STATUS); /* truncate an envelope */
  size_t len = nng_msg_len(m);
  for (size_t cut = 1; cut < len; cut += len / 4 + 1) {
    r = raw_call(t->url, bytes_msg(nng_msg_body(m), len - cut));
    TH_REQUIRE(c, r != NULL && r->h.code == TF_INVALID_ARGUMENT,
               "%s: truncated by %zu bytes: reply %p code %d", t->url, cut, (void *)r,
               r ? r->h.code : -1);
    TH_REQUIRE(c, r->h.error != NULL && r->h.error[0] != '\0', "no message with the error");
    tf_wire_msg_free(r);
  }
  nng_msg_free(m);
  r = raw_call(t->url, valid_msg(body_method)); /* right envelope, nil body */
  TH_REQUIRE(c, r != NULL && (r->h.code == TF_INVALID_ARGUMENT || r->h.code == TF_NOT_FOUND),
             "%s: %s with a nil body: code %d (%s)", t->url, tf_method_name(body_method),
             r ? r->h.code : -1, r && r->h.error ? r->h.error : "");
  tf_wire_msg_free(r);
  r = raw_call(t->url, valid_msg(99)); /* unknown method */
  TH_REQUIRE(c, r != NULL && r->h.code != TF_OK, "%s: method 99 was accepted", t->url);
  tf_wire_msg_free(r);
  TH_REQUIRE(c, tcp_garbage_dropped(t->port), "%s kept a garbage TCP connection", t->url);
}

START_TEST(test_malformed_messages) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  attack(c, th_task_get(c, "master", 0), TF_M_RUN_STEP);
  attack(c, th_task_get(c, "ps", 0), TF_M_REGISTER_GRAPH);
  attack(c, th_task_get(c, "worker", 0), TF_M_RUN_GRAPH);
  for (int i = 1; i < c->n_tasks; i++) {
    tf_status st;
    tf_status_init(&st);
    tf_ctl_task t;
    tf_code code = tf_ctl_get_status(c->tasks[i].url, 3000, &t, &st);
    TH_REQUIRE(c, code == TF_OK && strcmp(t.job, c->tasks[i].job) == 0,
               "%s after the attack: %s", c->tasks[i].url, st.msg);
    tf_ctl_task_fini(&t);
  }
  tf_ctl_task *ts = NULL;
  int n = 0;
  tf_status st;
  tf_status_init(&st);
  TH_REQUIRE(c, tf_ctl_cluster_status(c->tasks[0].url, 3000, &ts, &n, &st) == TF_OK,
             "master after the attack: %s", st.msg);
  TH_REQUIRE(c, n == c->n_tasks, "ClusterStatus lists %d tasks, want %d", n, c->n_tasks);
  tf_ctl_tasks_free(ts, n);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("daemons");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_ready_notify_and_sigterm);
  tcase_add_test(tc, test_port_in_use);
  tcase_add_test(tc, test_sighup_reload_pid_file_instance);
  tcase_add_test(tc, test_bad_config_and_flags);
  tcase_add_test(tc, test_malformed_messages);
  suite_add_tcase(s, tc);
  return s;
}
