/* auth_test.c: a cluster of real daemons with authentication on (a task
 * key, a client key and a read-only key in its spec) refuses every
 * request that is not properly signed and keeps serving those that are:
 * - a client without a key, with another cluster's key, and a captured
 *   signed request sent a second time (a replay) are refused with
 *   UNAUTHENTICATED, naming why; the master logs the refusal;
 * - the read-only key runs health and jobs but cannot submit a job or
 *   open a session (PERMISSION_DENIED); the client key cannot call a
 *   worker's RPCs (RegisterGraph) directly;
 * - a tensor-stream connection that does not start with a hello signed by
 *   a task key is closed at once;
 * - after all of it, a step across two workers (RPC and tensor stream,
 *   every message signed) still runs with the client key;
 * - a daemon whose spec has no auth section refuses to listen on a
 *   non-loopback address. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/auth.h"
#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/unit/testutil.h"

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

static tf_auth *load(th_cluster *c, const char *file) {
  tf_auth *a;
  tf_status st;
  TH_REQUIRE(c, tf_auth_new(30000, &a, &st) == TF_OK, "%s", st.msg);
  TH_REQUIRE(c, tf_auth_add_key_file(a, file, TF_AUTH_ROLE_TASK, &st) == TF_OK, "%s", st.msg);
  return a;
}

/* One step of the cross graph (worker 0 -> worker 1) with the process's
 * current keyring; returns its status code. */
static tf_code cross_step(th_cluster *c, tf_status *st) {
  tf_graph *g = ig_cross_graph();
  tf_status_init(st);
  tf_session *s = ig_remote(th_task_get(c, "master", 0)->url, g, st);
  tf_code code = s != NULL ? TF_OK : st->code;
  if (code == TF_OK) {
    code = ig_run_cross(s, 10000, st);
    tf_status cst;
    tf_session_close(s, &cst);
  }
  tf_session_free(s);
  tf_graph_free(g);
  return code;
}

/* A signed ListJobs sent twice on a raw socket: the first is answered,
 * the second refused as a replay. */
static void replay(th_cluster *c, tf_auth *key) {
  const char *url = th_task_get(c, "master", 0)->url;
  nng_socket sock;
  TH_REQUIRE(c, nng_req0_open(&sock) == 0 && nng_dial(sock, url, NULL, 0) == 0, "dial %s", url);
  nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 5000);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_LIST_JOBS,
                      .to = "/job:master/replica:0/task:0"};
  nng_msg *m;
  tf_status st;
  TH_REQUIRE(c, tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK, "%s", st.msg);
  uint8_t prefix[TF_AUTH_PREFIX_BYTES];
  tf_auth_sign(key, 0, NULL, nng_msg_body(m), nng_msg_len(m), prefix, NULL);
  TH_REQUIRE(c, nng_msg_insert(m, prefix, sizeof prefix) == 0, "insert");
  for (int i = 0; i < 2; i++) {
    nng_msg *copy, *reply = NULL;
    TH_REQUIRE(c, nng_msg_dup(&copy, m) == 0 && nng_sendmsg(sock, copy, 0) == 0, "send");
    TH_REQUIRE(c, nng_recvmsg(sock, &reply, 0) == 0, "no reply to attempt %d", i);
    bool is_signed = tf_auth_is_signed(nng_msg_body(reply), nng_msg_len(reply));
    if (is_signed) {
      nng_msg_trim(reply, TF_AUTH_PREFIX_BYTES);
    }
    tf_wire_msg *r;
    TH_REQUIRE(c, tf_wire_parse(reply, &r, &st) == TF_OK, "%s", st.msg);
    fprintf(stderr, "auth: replay attempt %d: %s %s\n", i, tf_code_name((tf_code)r->h.code),
            r->h.error);
    TH_REQUIRE(c, r->h.code == (i == 0 ? TF_OK : TF_UNAUTHENTICATED) && is_signed == (i == 0),
               "attempt %d: code %d: %s", i, r->h.code, r->h.error);
    TH_REQUIRE(c, i == 0 || strstr(r->h.error, "seen before") != NULL, "%s", r->h.error);
    tf_wire_msg_free(r);
  }
  nng_msg_free(m);
  nng_close(sock);
}

/* A TCP connection to the tensor stream at url (tcp://host:port) that
 * sends bytes[0..n): the server must close it within 3 s. */
static void stream_refuses(th_cluster *c, const char *url, const uint8_t *bytes, size_t n) {
  const char *colon = strrchr(url, ':');
  TH_REQUIRE(c, colon != NULL, "stream url %s", url);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  TH_REQUIRE(c, connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect %s", url);
  TH_REQUIRE(c, write(fd, bytes, n) == (ssize_t)n, "write");
  TH_REQUIRE(c, ig_closed_within(fd, 3000), "the stream kept a connection without a valid hello");
  close(fd);
}

START_TEST(test_refusals_and_roles) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  o.extra_yaml = "auth:\n  key_file: keys/task.key\n  client_key_file: keys/client.key\n"
                 "  readonly_key_file: keys/ro.key\n";
  th_cluster *c = th_cluster_new(&o);
  char task_key[512], client_key[512], ro_key[512], other_key[512], keys[400];
  snprintf(keys, sizeof keys, "%s/keys", c->dir);
  mkdir(keys, 0700);
  snprintf(task_key, sizeof task_key, "%s/task.key", keys);
  snprintf(client_key, sizeof client_key, "%s/client.key", keys);
  snprintf(ro_key, sizeof ro_key, "%s/ro.key", keys);
  snprintf(other_key, sizeof other_key, "%s/other.key", c->dir);
  const char *files[] = {task_key, client_key, ro_key, other_key};
  tf_status st;
  for (int i = 0; i < 4; i++) {
    TH_REQUIRE(c, tf_auth_key_file_generate(files[i], &st) == TF_OK, "%s", st.msg);
  }
  tf_auth *task = load(c, task_key), *client = load(c, client_key), *ro = load(c, ro_key);
  tf_auth_set_process(task); /* the harness's health checks */
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  th_task *master = th_task_get(c, "master", 0), *w0 = th_task_get(c, "worker", 0);
  char maddr[64];
  snprintf(maddr, sizeof maddr, "127.0.0.1:%d", master->port);

  tf_auth_set_process(client);
  TH_REQUIRE(c, cross_step(c, &st) == TF_OK, "signed step: %s", st.msg);

  char *out = NULL, *err = NULL;
  int rc = tfctl(c, &out, &err, "-m", maddr, "health", NULL);
  fprintf(stderr, "auth: no key: exit %d: %s", rc, err);
  TH_REQUIRE(c, rc == 1 && strstr(err, "not signed") != NULL, "no key: %d %s%s", rc, out, err);
  free(out);
  free(err);
  rc = tfctl(c, &out, &err, "-m", maddr, "--key", other_key, "health", NULL);
  fprintf(stderr, "auth: wrong key: exit %d: %s", rc, err);
  TH_REQUIRE(c, rc == 1 && strstr(err, "not one of this task's keys") != NULL,
             "wrong key: %d %s%s", rc, out, err);
  free(out);
  free(err);
  replay(c, client);

  rc = tfctl(c, &out, &err, "-m", maddr, "--key", ro_key, "health", NULL);
  TH_REQUIRE(c, rc == 0 && strstr(out, "worker") != NULL, "read-only health: %d %s%s", rc, out,
             err);
  free(out);
  free(err);
  rc = tfctl(c, &out, &err, "-m", maddr, "--key", ro_key, "jobs", NULL);
  TH_REQUIRE(c, rc == 0, "read-only jobs: %d %s%s", rc, out, err);
  free(out);
  free(err);
  char *job = th_write_file(c, "j.yaml", "name: j\n");
  rc = tfctl(c, &out, &err, "-m", maddr, "--key", ro_key, "submit", job, NULL);
  fprintf(stderr, "auth: read-only submit: exit %d: %s", rc, err);
  TH_REQUIRE(c, rc == 1 && strstr(err, "SubmitJob") != NULL &&
                    strstr(err, "needs a client key") != NULL,
             "read-only submit: %d %s%s", rc, out, err);
  free(out);
  free(err);
  free(job);
  tf_auth_set_process(ro);
  TH_REQUIRE(c, cross_step(c, &st) == TF_PERMISSION_DENIED, "read-only session: %s", st.msg);

  /* the client key straight to a worker */
  tf_auth_set_process(client);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_REGISTER_GRAPH};
  tf_wire_msg *r = NULL;
  TH_REQUIRE(c, ig_call(w0->url, &h, NULL, NULL, 3000, &r, &st) == TF_PERMISSION_DENIED &&
                    strstr(st.msg, "needs a task key") != NULL,
             "client key RegisterGraph: %s", st.msg);
  tf_auth_set_process(NULL);
  TH_REQUIRE(c, ig_call(w0->url, &h, NULL, NULL, 3000, &r, &st) == TF_UNAUTHENTICATED,
             "unsigned RegisterGraph: %s", st.msg);

  /* the tensor stream: garbage, then a hello signed with a client key */
  tf_auth_set_process(task);
  tf_msg_get_status_reply gs;
  TH_REQUIRE(c, ig_status(w0->url, &gs, &r, &st) == TF_OK && gs.tensor_stream != NULL &&
                    gs.tensor_stream[0] != '\0',
             "worker status: %s", st.msg);
  char surl[128];
  snprintf(surl, sizeof surl, "%s", gs.tensor_stream);
  tf_msg_get_status_reply_fini(&gs);
  tf_wire_msg_free(r);
  uint8_t junk[TF_AUTH_HELLO_BYTES];
  memset(junk, 'A', sizeof junk);
  stream_refuses(c, surl, junk, sizeof junk);
  tf_auth_hello_sign(client, junk);
  stream_refuses(c, surl, junk, sizeof junk);

  tf_auth_set_process(client);
  TH_REQUIRE(c, cross_step(c, &st) == TF_OK, "signed step after the refusals: %s", st.msg);
  char line[4096] = "";
  FILE *f = fopen(master->log, "r");
  bool logged = false;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    logged |= strstr(line, "refused a request from 127.0.0.1") != NULL;
  }
  if (f != NULL) {
    fclose(f);
  }
  TH_REQUIRE(c, logged, "the master did not log a refusal");
  tf_auth_set_process(NULL);
  th_cluster_free(c);
  tf_auth_free(task);
  tf_auth_free(client);
  tf_auth_free(ro);
}
END_TEST

START_TEST(test_no_auth_beyond_loopback_refused) {
  th_opts o = th_default_opts();
  o.n_ps = 0;
  th_cluster *c = th_cluster_new(&o);
  int port = th_free_port();
  char text[512];
  snprintf(text, sizeof text, "jobs:\n  master: [127.0.0.1:%d]\n  worker: [0.0.0.0:%d]\n",
           th_free_port(), port);
  char *spec = th_write_file(c, "open.yaml", text);
  char *prog = th_bin("tfworker");
  char *argv[] = {prog, "--config", spec, "--job", "worker", "--task", "0", NULL};
  char *err = NULL;
  int rc = th_run(c, argv, 10000, NULL, &err);
  fprintf(stderr, "auth: no auth on 0.0.0.0: exit %d: %s", rc, err);
  TH_REQUIRE(c, rc > 0 && strstr(err, "without authentication") != NULL &&
                    strstr(err, "every interface") != NULL && strstr(err, "open.yaml") != NULL,
             "exit %d: %s", rc, err);
  free(err);
  free(prog);
  free(spec);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("auth");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_refusals_and_roles);
  tcase_add_test(tc, test_no_auth_beyond_loopback_refused);
  suite_add_tcase(s, tc);
  return s;
}
