/* remote_session_test.c: a remote session (tf_session_options.target =
 * the tfmaster URL) against real daemons. Regression: fetching {"y","z"}
 * and then {"y:0,z"} made tfmaster take the second for the first's cached
 * signature and read fetched[-1] (a segfault); now the second Run, and
 * other malformed names, fail with INVALID_ARGUMENT naming the name, the
 * master process keeps running and answering GetStatus, and Runs on the
 * same and on a new session give the right values. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

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

/* x (fed) -> y = Neg(x) on worker 1 -> z = y * x on the ps task. */
static tf_graph *make_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, -1));
  tf_output xo = {x, 0};
  tf_node *y = node_on(g, "Neg", "y", "/job:worker/task:1", &xo, 1);
  tf_output yx[] = {{y, 0}, {x, 0}};
  node_on(g, "Mul", "z", "/job:ps/task:0", yx, 2);
  return g;
}

static tf_code run(tf_session *s, tf_tensor *x, const char *const *fetches, int n,
                   tf_tensor **out, tf_status *st) {
  const char *feed = "x";
  tf_run_options ro = {.timeout_ms = 10000};
  return tf_session_run(s, &ro, &feed, &x, 1, fetches, out, n, NULL, 0, NULL, st);
}

/* Runs {"y","z"} and checks y = -x, z = -x*x exactly. */
static void run_yz(th_cluster *c, tf_session *s, tf_tensor *x) {
  const char *yz[] = {"y", "z"};
  tf_tensor *out[2] = {NULL, NULL};
  tf_status st;
  TH_REQUIRE(c, run(s, x, yz, 2, out, &st) == TF_OK, "Run {y, z}: %s", st.msg);
  const float *xv = x->data, *yv = out[0]->data, *zv = out[1]->data;
  TH_REQUIRE(c, out[0]->n == x->n && out[1]->n == x->n, "fetched sizes");
  for (int64_t i = 0; i < x->n; i++) {
    TH_REQUIRE(c, yv[i] == -xv[i] && zv[i] == -xv[i] * xv[i],
               "element %lld: x %g y %g z %g", (long long)i, xv[i], yv[i], zv[i]);
  }
  tt_free(out, 2);
}

START_TEST(test_malformed_fetch_does_not_crash_master) {
  th_cluster *c = th_cluster_new(NULL);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  th_task *master = th_task_get(c, "master", 0);
  TH_REQUIRE(c, master != NULL, "no master task");
  tf_graph *g = make_graph();
  tf_status st;
  tf_session_options so = {.target = master->url};
  tf_session *s = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, s != NULL, "remote session on %s: %s", master->url, st.msg);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 8), -3, 3);
  run_yz(c, s, x);
  const char *bad[] = {"y:0,z", "y:0,z:0", "y:0\nz:0", "y:", "y:-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_tensor *out = (tf_tensor *)1;
    tf_code rc = run(s, x, &bad[i], 1, &out, &st);
    TH_REQUIRE(c, rc == TF_INVALID_ARGUMENT, "Run {%s}: %s: %s", bad[i], tf_code_name(rc),
               st.msg);
    char want[64];
    snprintf(want, sizeof want, "fetch '%.*s", (int)strcspn(bad[i], "\n"), bad[i]);
    TH_REQUIRE(c, strstr(st.msg, want) != NULL, "Run {%s}: '%s' lacks \"%s\"", bad[i],
               st.msg, want);
    TH_REQUIRE(c, out == NULL, "Run {%s} left a tensor", bad[i]);
    /* The master is still there: its process lives and it answers. */
    TH_REQUIRE(c, master->pid != 0 && kill(master->pid, 0) == 0, "tfmaster is gone");
    TH_REQUIRE(c, th_wait_task(c, master, 5000), "tfmaster stopped answering after {%s}",
               bad[i]);
  }
  run_yz(c, s, x);
  /* A new session on the same master works too. */
  tf_session *s2 = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, s2 != NULL, "second session: %s", st.msg);
  run_yz(c, s2, x);
  TH_REQUIRE(c, tf_session_close(s2, &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(s2);
  TH_REQUIRE(c, tf_session_close(s, &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(s);
  tf_tensor_unref(x);
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("remote_session");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_malformed_fetch_does_not_crash_master);
  suite_add_tcase(s, tc);
  return s;
}
