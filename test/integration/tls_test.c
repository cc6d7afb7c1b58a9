/* tls_test.c: real daemons on transport tls+tcp (a master, a ps and a
 * worker on localhost, certificates from scripts/make-certs.sh in the
 * cluster's directory). A remote session from this process (the spec's
 * client certificate) runs a step across the worker and the ps, so the
 * tensor y goes from the worker to the ps over the TLS tensor stream
 * (both log their stream at tls+tcp://); its values are checked exactly.
 * tfctl health with the spec's client certificate works; with a
 * certificate from a foreign CA and with an expired one it fails at once,
 * every task's line saying "TLS handshake failed"; the master logs the failed handshakes and
 * the cluster keeps serving (health and another step). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/tls.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/session.h"
#include "tf/tls.h"

static tf_node *node_on(tf_graph *g, const char *op, const char *name, const char *device,
                        const tf_output *in, int n_in) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  tf_node_set_device(b, device);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", name, st.msg);
  return n;
}

/* x (fed) -> y = Neg(x) on the worker -> z = y * x on the ps. */
static tf_graph *make_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, -1));
  tf_output xo = {x, 0};
  tf_node *y = node_on(g, "Neg", "y", "/job:worker/task:0", &xo, 1);
  tf_output yx[] = {{y, 0}, {x, 0}};
  node_on(g, "Mul", "z", "/job:ps/task:0", yx, 2);
  return g;
}

/* Runs {y, z} and checks y = -x, z = -x*x exactly. */
static void run_yz(th_cluster *c, tf_session *s, tf_tensor *x) {
  const char *feed = "x";
  const char *yz[] = {"y", "z"};
  tf_tensor *out[2] = {NULL, NULL};
  tf_status st;
  tf_run_options ro = {.timeout_ms = 20000};
  TH_REQUIRE(c, tf_session_run(s, &ro, &feed, &x, 1, yz, out, 2, NULL, 0, NULL, &st) == TF_OK,
             "Run {y, z}: %s", st.msg);
  const float *xv = x->data, *yv = out[0]->data, *zv = out[1]->data;
  TH_REQUIRE(c, out[0]->n == x->n && out[1]->n == x->n, "fetched sizes");
  for (int64_t i = 0; i < x->n; i++) {
    TH_REQUIRE(c, yv[i] == -xv[i] && zv[i] == -xv[i] * xv[i],
               "element %lld: x %g y %g z %g", (long long)i, xv[i], yv[i], zv[i]);
  }
  tt_free(out, 2);
}

/* Runs tfctl -c CONFIG [--cert CERT] health; returns the exit code. */
static int health(th_cluster *c, const char *cert, char **out, char **err) {
  char *argv[] = {th_bin("tfctl"), "-c", c->config, "health", NULL, NULL, NULL};
  if (cert != NULL) {
    argv[4] = "--cert";
    argv[5] = (char *)cert;
  }
  int rc = th_run(c, argv, 20000, out, err);
  free(argv[0]);
  return rc;
}

static bool log_has(const th_task *t, const char *needle) {
  FILE *f = fopen(t->log, "r");
  if (f == NULL) return false;
  char line[2048];
  bool found = false;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    found = strstr(line, needle) != NULL;
  }
  fclose(f);
  return found;
}

START_TEST(test_cluster_over_tls) {
  th_opts o = th_default_opts();
  o.n_ps = 1;
  o.n_workers = 1;
  o.transport = "tls+tcp";
  o.extra_yaml = "tls:\n  ca_file: certs/ca.crt\n  cert_key_file: certs/localhost.pem\n"
                 "  client_cert_key_file: certs/client.pem\n";
  th_cluster *c = th_cluster_new(&o);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "scripts/make-certs.sh %s/certs localhost >/dev/null && "
           "scripts/make-certs.sh --ca-name foreign-ca %s/foreign localhost >/dev/null && "
           "mkdir -p %s/expired && cp %s/certs/ca.crt %s/certs/ca.key %s/expired/ && "
           "scripts/make-certs.sh --expired %s/expired localhost >/dev/null",
           c->dir, c->dir, c->dir, c->dir, c->dir, c->dir, c->dir);
  TH_REQUIRE(c, system(cmd) == 0, "%s", cmd);
  /* this process is a client too (the harness's health probes, the session) */
  char ca[512], client[512];
  snprintf(ca, sizeof ca, "%s/certs/ca.crt", c->dir);
  snprintf(client, sizeof client, "%s/certs/client.pem", c->dir);
  tf_status st;
  TH_REQUIRE(c, tf_tls_use_files(ca, client, &st) == TF_OK, "%s", st.msg); /* public API */
  TH_REQUIRE(c, th_start_all(c, 20000), "cluster start");
  th_task *master = th_task_get(c, "master", 0);
  TH_REQUIRE(c, strncmp(master->url, "tls+tcp://localhost:", 20) == 0, "%s", master->url);

  tf_graph *g = make_graph();
  tf_session_options so = {.target = master->url};
  tf_session *s = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, s != NULL, "remote session on %s: %s", master->url, st.msg);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 4096), -3, 3);
  run_yz(c, s, x);
  TH_REQUIRE(c, log_has(th_task_get(c, "ps", 0), "tensor stream on tls+tcp://localhost:"),
             "the ps has no TLS tensor stream");
  TH_REQUIRE(c, log_has(th_task_get(c, "worker", 0), "tensor stream on tls+tcp://localhost:"),
             "the worker has no TLS tensor stream");

  char *out = NULL, *err = NULL;
  int rc = health(c, NULL, &out, &err);
  TH_REQUIRE(c, rc == 0 && strstr(out, "up") != NULL, "health: rc %d: %s %s", rc, out, err);
  free(out);
  free(err);
  const char *bad[] = {"foreign/client.pem", "expired/localhost.pem"};
  for (int i = 0; i < 2; i++) {
    char cert[512];
    snprintf(cert, sizeof cert, "%s/%s", c->dir, bad[i]);
    int64_t t0 = tf_ctl_now_ms();
    rc = health(c, cert, &out, &err);
    /* health asks every task: each line says why */
    char want[256];
    snprintf(want, sizeof want, "ClusterStatus to %s: TLS handshake failed (certificate not "
             "trusted, expired, or name mismatch: ", master->url);
    TH_REQUIRE(c, rc == 1 && strstr(out, want) != NULL && strstr(err, "3 of 3 tasks down"),
               "health with %s: rc %d: %s %s", bad[i], rc, out, err);
    TH_REQUIRE(c, tf_ctl_now_ms() - t0 < 5000, "health with %s took %lld ms", bad[i],
               (long long)(tf_ctl_now_ms() - t0));
    free(out);
    free(err);
  }
  /* the master saw them (its listener's statistics, polled every second) */
  int64_t end = tf_ctl_now_ms() + 5000;
  while (!log_has(master, "TLS handshake(s) failed") && tf_ctl_now_ms() < end) {
    tf_ctl_sleep_ms(50);
  }
  TH_REQUIRE(c, log_has(master, "TLS handshake(s) failed"), "the master logged no failure");
  /* and keeps serving */
  rc = health(c, NULL, &out, &err);
  TH_REQUIRE(c, rc == 0, "health after the refusals: rc %d: %s %s", rc, out, err);
  free(out);
  free(err);
  run_yz(c, s, x);
  TH_REQUIRE(c, tf_session_close(s, &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(s);
  tf_tensor_unref(x);
  tf_graph_free(g);
  tf_tls_set_default(NULL);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tls");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_cluster_over_tls);
  suite_add_tcase(s, tc);
  return s;
}
