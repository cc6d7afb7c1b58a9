/* master_lifecycle_test.c: tfmaster's drain and its sessions' keep-alive
 * against real daemons. SIGTERM with a step blocked on an empty queue:
 * the master exits after drain_ms (not before, not much after), the step
 * fails UNAVAILABLE naming the shutdown; a second SIGTERM while draining
 * changes nothing, a SIGINT then exits at once (status 3). A client process SIGKILLed while its step
 * blocks loses its session within session_ttl_ms: the master forgets it,
 * the worker's step ends, and new sessions work. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* GetStatus of the task at url: sessions (master) or running_steps; -1 when
 * it does not answer. */
static int64_t status_of(const char *url, bool sessions) {
  tf_rpc_client *c = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_rpc_client_new(url, 0, &c, &st) != TF_OK) return -1;
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_GET_STATUS,
                      .request_id = tf_rpc_new_request_id(), .deadline_ms = 1000};
  nng_msg *m = NULL;
  tf_wire_msg *r = NULL;
  int64_t v = -1;
  if (tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK &&
      tf_rpc_call(c, m, 1000, &r, &st) == TF_OK) {
    tf_msg_get_status_reply b;
    if (tf_msg_get_status_reply_decode(r, &b, &st) == TF_OK) {
      v = sessions ? b.sessions : b.running_steps;
      tf_msg_get_status_reply_fini(&b);
    }
  }
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  return v;
}

/* Polls until status_of(url) == want or ms passed; returns the last value. */
static int64_t poll_status(const char *url, bool sessions, int64_t want, int64_t ms) {
  int64_t until = tf__now_ns() + ms * 1000000, v = status_of(url, sessions);
  while (v != want && tf__now_ns() < until) {
    sleep_ms(20);
    v = status_of(url, sessions);
  }
  return v;
}

static tf_node *node(tf_graph *g, const char *op, const char *name, const tf_output *in,
                     int n_in, const char *attr, tf_attr_value v) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  if (attr != NULL) tf_node_set_attr(b, attr, v);
  tf_node_set_device(b, "/job:worker/task:0");
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) { /* also outside a test (the client) */
    fprintf(stderr, "%s: %s\n", name, st.msg);
    abort();
  }
  return n;
}

/* deq: a dequeue from an empty FIFOQueue (blocks); neg = -2. */
static tf_graph *blocking_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_dtype ct[] = {TF_FLOAT32};
  tf_node *q = node(g, "FIFOQueue", "q", NULL, 0, "component_types",
                    tf_attr_type_list(ct, 1));
  tf_output qo = {q, 0};
  node(g, "QueueDequeue", "deq", &qo, 1, "component_types", tf_attr_type_list(ct, 1));
  tf_tensor *two = tf_tensor_scalar_f32(2.0f);
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", "k");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "value", tf_attr_tensor(two));
  tf_node_set_device(b, "/job:worker/task:0");
  tf_node *k = tf_node_finish(b, &st);
  if (k == NULL) {
    fprintf(stderr, "k: %s\n", st.msg);
    abort();
  }
  tf_tensor_unref(two);
  tf_output ko = {k, 0};
  node(g, "Neg", "neg", &ko, 1, NULL, tf_attr_type_v(TF_FLOAT32));
  return g;
}

typedef struct blocked {
  const char *url;
  tf_graph *g;
  tf_code rc;
  char msg[TF_STATUS_MSG_MAX];
  pthread_t th;
} blocked;

/* A remote session running deq without a deadline until the master ends it. */
static void *blocked_main(void *arg) {
  blocked *b = arg;
  tf_status st;
  tf_status_init(&st);
  tf_session_options o = {.target = b->url, .rpc_timeout_ms = 2000};
  tf_session *s = tf_session_new(b->g, &o, &st);
  if (s == NULL) {
    b->rc = st.code;
    snprintf(b->msg, sizeof b->msg, "%s", st.msg);
    return NULL;
  }
  const char *fetch[] = {"deq"};
  tf_tensor *out = NULL;
  b->rc = tf_session_run(s, NULL, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL, &st);
  snprintf(b->msg, sizeof b->msg, "%s", st.msg);
  tf_tensor_unref(out);
  tf_session_free(s);
  return NULL;
}

static void start_blocked(th_cluster *c, blocked *b, tf_graph *g) {
  memset(b, 0, sizeof *b);
  b->url = th_task_get(c, "master", 0)->url;
  b->g = g;
  ck_assert_int_eq(pthread_create(&b->th, NULL, blocked_main, b), 0);
  TH_REQUIRE(c, poll_status(b->url, false, 1, 10000) == 1,
             "the blocked step did not start on the master");
}

START_TEST(test_drain_ms_and_second_signal) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  o.drain_ms = 1500;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster did not start");
  th_task *mt = th_task_get(c, "master", 0);
  tf_graph *g = blocking_graph();
  blocked b;
  start_blocked(c, &b, g);
  int64_t t0 = tf__now_ns();
  kill(mt->pid, SIGTERM);
  int status = th_stop_task(mt, 0, 5000); /* wait only */
  double took = (double)(tf__now_ns() - t0) / 1e9;
  TH_REQUIRE(c, WIFEXITED(status) && WEXITSTATUS(status) == 0, "wait status %d", status);
  TH_REQUIRE(c, took >= 1.4 && took < 1.5 + (TH_SANITIZED ? 2.0 : 1.0), "exit %.2f s after SIGTERM "
             "(drain_ms 1500)", took);
  pthread_join(b.th, NULL);
  TH_REQUIRE(c, b.rc == TF_UNAVAILABLE && strstr(b.msg, "shutting down") != NULL,
             "the blocked step got %d: %s", b.rc, b.msg);
  /* Again: a second SIGTERM while draining changes nothing (one stop may
   * have several senders), a SIGINT then exits at once. */
  TH_REQUIRE(c, th_start_task(c, mt, NULL) && th_wait_task(c, mt, 10000),
             "master did not restart");
  start_blocked(c, &b, g);
  kill(mt->pid, SIGTERM);
  sleep_ms(200);
  kill(mt->pid, SIGTERM);
  sleep_ms(300);
  TH_REQUIRE(c, waitpid(mt->pid, &status, WNOHANG) == 0,
             "the master exited on a second SIGTERM (wait status %d)", status);
  t0 = tf__now_ns();
  kill(mt->pid, SIGINT);
  status = th_stop_task(mt, 0, 5000);
  took = (double)(tf__now_ns() - t0) / 1e9;
  TH_REQUIRE(c, WIFEXITED(status) && WEXITSTATUS(status) == 3, "wait status %d", status);
  TH_REQUIRE(c, took < (TH_SANITIZED ? 1.5 : 0.5), "exit %.2f s after SIGINT while draining",
             took);
  pthread_join(b.th, NULL);
  TH_REQUIRE(c, b.rc != TF_OK, "the blocked step succeeded");
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_killed_client_loses_session) {
  th_opts o = th_default_opts();
  o.n_workers = 1;
  o.session_ttl_ms = 1000;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster did not start");
  const char *murl = th_task_get(c, "master", 0)->url;
  const char *wurl = th_task_get(c, "worker", 0)->url;
  tf_graph *g = blocking_graph();
  /* The client is this program again (NNG does not survive a fork): see
   * tt_suite. */
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    setenv("TF_LIFECYCLE_CLIENT", murl, 1);
    execl("/proc/self/exe", "master_lifecycle_client", (char *)NULL);
    _exit(127);
  }
  TH_REQUIRE(c, poll_status(murl, false, 1, 10000) == 1, "the client's step did not start");
  TH_REQUIRE(c, poll_status(wurl, false, 1, 5000) == 1, "the step is not on the worker");
  /* Alive and keeping its session for two TTLs. */
  sleep_ms(2000);
  TH_REQUIRE(c, status_of(murl, true) == 1, "the live client lost its session");
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  int64_t t0 = tf__now_ns();
  int64_t sessions = poll_status(murl, true, 0, 5000);
  double took = (double)(tf__now_ns() - t0) / 1e9;
  TH_REQUIRE(c, sessions == 0, "the session stayed (%lld)", (long long)sessions);
  TH_REQUIRE(c, took < 1.0 + (TH_SANITIZED ? 1.5 : 0.5), "the session ended %.2f s after the kill (TTL 1 s)", took);
  TH_REQUIRE(c, poll_status(wurl, false, 0, 1000) == 0, "the step still runs on the worker");
  /* New sessions work. */
  tf_status st;
  tf_status_init(&st);
  tf_session_options so = {.target = murl, .rpc_timeout_ms = 5000};
  tf_session *s = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, s != NULL, "%s", st.msg);
  const char *fetch[] = {"neg"};
  tf_tensor *out = NULL;
  TH_REQUIRE(c, tf_session_run(s, NULL, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL, &st) ==
                 TF_OK, "%s", st.msg);
  TH_REQUIRE(c, *(const float *)out->data == -2.0f, "neg = %g", *(const float *)out->data);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

/* Run as TF_LIFECYCLE_CLIENT=<master url>: the client whose step blocks
 * until it is killed. */
static void client_main(const char *url) {
  blocked b = {.url = url, .g = blocking_graph()};
  blocked_main(&b);
  fprintf(stderr, "client: the step ended: %d %s\n", b.rc, b.msg);
  _exit(1);
}

Suite *tt_suite(void) {
  const char *client = getenv("TF_LIFECYCLE_CLIENT");
  if (client != NULL) client_main(client);
  Suite *s = suite_create("master_lifecycle");
  TCase *tc = tcase_create("lifecycle");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_drain_ms_and_second_signal);
  tcase_add_test(tc, test_killed_client_loses_session);
  suite_add_tcase(s, tc);
  return s;
}
