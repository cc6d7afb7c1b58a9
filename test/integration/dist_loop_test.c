/* dist_loop_test.c: a while loop whose body is split over two worker tasks
 * of a real cluster (1 master, 1 ps, 2 workers, metrics on). The loop
 * (i < n: i += 1 on worker 0, v = v * 0.5 + x on worker 1, and a cond
 * inside the body choosing v + 1 on worker 0 or v - 1 on worker 1 by the
 * parity of i) run through a remote session gives bitwise what a local
 * session gives for the same graph without devices, for n = 3 and n = 400.
 * The iterations run without the master: for one step of 400 iterations
 * each worker counts one RunGraph (tf_steps_total{role="worker"} + 1) and
 * the master sends fewer than 60 messages and at most 6 more than for 3
 * iterations (heartbeats are 2 s apart), while worker 1 sends at least
 * 400 (its value and the cond's deadness every iteration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/control_flow.h"
#include "tf/gradients.h"
#include "tf/session.h"

#define CURL "/usr/bin/curl"
#define W0 "/job:worker/task:0"
#define W1 "/job:worker/task:1"
#define LONG_TRIPS 400

typedef struct lp {
  bool placed; /* device requests on the nodes */
  int trips;
} lp;

static tf_node *node_on(tf_graph *g, const char *op, const char *name, const char *dev,
                        const tf_output *in, int n_in) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  if (dev != NULL) {
    tf_node_set_device(b, dev);
  }
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", name, st.msg);
  return n;
}

static const char *dev(const lp *l, const char *d) { return l->placed ? d : NULL; }

static tf_code plus_one(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                        void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_f32(1));
  out[0] = (tf_output){node_on(g, "Add", "up", dev(arg, W0), (tf_output[]){in[0], {one, 0}}, 2),
                       0};
  return TF_OK;
}

static tf_code minus_one(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                         void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one_f", tf_tensor_scalar_f32(1));
  out[0] = (tf_output){
      node_on(g, "Sub", "down", dev(arg, W1), (tf_output[]){in[0], {one, 0}}, 2), 0};
  return TF_OK;
}

static tf_code cond_fn(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *pred, void *arg, tf_status *st) {
  const lp *l = arg;
  tf_node *n = tt_const(g, "n", tf_tensor_scalar_i32(l->trips));
  *pred = (tf_output){node_on(g, "Less", "less", dev(l, W0), (tf_output[]){v[0], {n, 0}}, 2),
                      0};
  return TF_OK;
}

static tf_code body_fn(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *next, void *arg, tf_status *st) {
  const lp *l = arg;
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  tf_node *two = tt_const(g, "two", tf_tensor_scalar_i32(2));
  tf_node *half = tt_const(g, "half", tf_tensor_scalar_f32(0.5f));
  next[0] = (tf_output){node_on(g, "Add", "inc", dev(l, W0), (tf_output[]){v[0], {one, 0}}, 2),
                        0};
  tf_node *m = node_on(g, "Mul", "scale", dev(l, W1), (tf_output[]){v[1], {half, 0}}, 2);
  tf_node *a = node_on(g, "Add", "shift", dev(l, W1), (tf_output[]){{m, 0}, inv[0]}, 2);
  tf_node *r = node_on(g, "FloorMod", "parity", dev(l, W0), (tf_output[]){v[0], {two, 0}}, 2);
  tf_node *z = tt_const(g, "zero", tf_tensor_scalar_i32(0));
  tf_node *even = node_on(g, "Equal", "even", dev(l, W0), (tf_output[]){{r, 0}, {z, 0}}, 2);
  return tf_cond(g, "pick", (tf_output){even, 0}, (tf_output[]){{a, 0}}, 1, plus_one, minus_one,
                 arg, &next[1], 1, st);
}

/* x (fed, a [4] float) -> the loop -> y = the final v. */
static tf_graph *make_graph(lp *l) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, 4));
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "loop", (tf_output[]){{i0, 0}, {x, 0}}, 2,
                              (tf_output[]){{x, 0}}, 1, cond_fn, body_fn, l, 0, out,
                              &st) == TF_OK, "%s", st.msg);
  node_on(g, "Identity", "y", dev(l, W0), &out[1], 1);
  node_on(g, "Identity", "i", dev(l, W0), &out[0], 1);
  /* d Sum(y) / dx through the loop: its gradient loop is split as well. */
  tf_node *ax = tt_const(g, "ax", tf_tensor_vec_i32(1, (int32_t[]){0}));
  tf_node *loss = node_on(g, "Sum", "loss", dev(l, W0), (tf_output[]){out[1], {ax, 0}}, 2);
  tf_output dx;
  ck_assert_msg(tf_gradients(g, (tf_output[]){{loss, 0}}, 1, (tf_output[]){{x, 0}}, 1, NULL,
                             &dx, &st) == TF_OK, "%s", st.msg);
  node_on(g, "Identity", "dx", dev(l, W0), &dx, 1);
  return g;
}

static void run_graph(th_cluster *c, tf_graph *g, const char *target, tf_tensor *x,
                      tf_tensor **out) {
  tf_status st;
  tf_session_options so = {.target = target};
  tf_session *s = tf_session_new(g, target ? &so : NULL, &st);
  TH_REQUIRE(c, s != NULL, "session on %s: %s", target ? target : "(local)", st.msg);
  const char *feed = "x";
  const char *fetch[3] = {"y", "i", "dx"};
  tf_run_options ro = {.timeout_ms = 30000};
  TH_REQUIRE(c, tf_session_run(s, &ro, &feed, &x, 1, fetch, out, 3, NULL, 0, NULL, &st) ==
                    TF_OK, "run on %s: %s", target ? target : "(local)", st.msg);
  if (target != NULL) {
    TH_REQUIRE(c, tf_session_close(s, &st) == TF_OK, "close: %s", st.msg);
  }
  tf_session_free(s);
}

/* The sum of the series of family (whose label set contains label, if
 * not NULL) in task t's /metrics. */
static double metric(th_cluster *c, const th_task *t, int off, const char *family,
                     const char *label) {
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", t->port + off);
  char *argv[] = {CURL, "-sS", "--max-time", "10", "-o", "-", url, NULL};
  char *out = NULL, *err = NULL;
  int rc = th_run(c, argv, 15000, &out, &err);
  TH_REQUIRE(c, rc == 0 && out != NULL, "curl %s: exit %d: %s", url, rc, err ? err : "");
  double sum = 0;
  size_t fl = strlen(family);
  for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    if (strncmp(line, family, fl) != 0 || (line[fl] != '{' && line[fl] != ' ')) {
      continue;
    }
    char *sp = strrchr(line, ' ');
    if (sp != NULL && (label == NULL || strstr(line, label) != NULL)) {
      sum += strtod(sp + 1, NULL);
    }
  }
  free(out);
  free(err);
  return sum;
}

static void check_same(th_cluster *c, tf_tensor **got, tf_tensor **want, int trips) {
  TH_REQUIRE(c, got[0]->nbytes == want[0]->nbytes &&
                    memcmp(got[0]->data, want[0]->data, got[0]->nbytes) == 0,
             "%d trips: the split loop's v differs from the local one", trips);
  TH_REQUIRE(c, ((int32_t *)got[1]->data)[0] == trips, "%d trips: i is %d", trips,
             ((int32_t *)got[1]->data)[0]);
  TH_REQUIRE(c, got[2]->nbytes == want[2]->nbytes &&
                    memcmp(got[2]->data, want[2]->data, got[2]->nbytes) == 0,
             "%d trips: the split loop's gradient d Sum(v)/dx %g differs from the local %g",
             trips, (double)((float *)got[2]->data)[0], (double)((float *)want[2]->data)[0]);
}

START_TEST(test_loop_split_over_workers) {
  th_opts o = th_default_opts();
  o.heartbeat_ms = 2000; /* few heartbeats in the counted window */
  o.down_after_ms = 20000;
  th_cluster *c = th_cluster_new(&o);
  int off = th_add_metrics_section(c, 1100);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  th_task *m = th_task_get(c, "master", 0), *w0 = th_task_get(c, "worker", 0),
          *w1 = th_task_get(c, "worker", 1);
  TH_REQUIRE(c, m && w0 && w1, "tasks missing");
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), -3, 3);
  int trips[2] = {3, LONG_TRIPS};
  double master_msgs[2] = {0};
  for (int k = 0; k < 2; k++) {
    lp placed = {true, trips[k]}, plain = {false, trips[k]};
    tf_graph *g = make_graph(&placed), *ref = make_graph(&plain);
    tf_tensor *want[3] = {0}, *got[3] = {0};
    run_graph(c, ref, NULL, x, want);
    const char *wrole = "role=\"worker\"";
    double s0 = metric(c, w0, off, "tf_steps_total", wrole);
    double s1 = metric(c, w1, off, "tf_steps_total", wrole);
    double mm = metric(c, m, off, "tf_rpc_sent_messages_total", NULL);
    double m1 = metric(c, w1, off, "tf_rpc_sent_messages_total", NULL);
    run_graph(c, g, m->url, x, got);
    check_same(c, got, want, trips[k]);
    double d0 = metric(c, w0, off, "tf_steps_total", wrole) - s0;
    double d1 = metric(c, w1, off, "tf_steps_total", wrole) - s1;
    double dm = metric(c, m, off, "tf_rpc_sent_messages_total", NULL) - mm;
    double dw = metric(c, w1, off, "tf_rpc_sent_messages_total", NULL) - m1;
    fprintf(stderr, "%d trips: RunGraph per worker %g %g, master sent %g messages, "
            "worker 1 sent %g\n", trips[k], d0, d1, dm, dw);
    TH_REQUIRE(c, d0 == 1 && d1 == 1, "%d trips: workers ran %g and %g graphs, not one",
               trips[k], d0, d1);
    TH_REQUIRE(c, dm < 60, "%d trips: the master sent %g messages", trips[k], dm);
    master_msgs[k] = dm;
    TH_REQUIRE(c, dw >= trips[k], "%d trips: worker 1 sent only %g messages", trips[k], dw);
    tt_free(want, 3);
    tt_free(got, 3);
    tf_graph_free(g);
    tf_graph_free(ref);
  }
  /* one step, not one per iteration: the same messages (a heartbeat aside) */
  TH_REQUIRE(c, master_msgs[1] <= master_msgs[0] + 6, "the master sent %g messages for %d "
             "iterations, %g for 3", master_msgs[1], LONG_TRIPS, master_msgs[0]);
  tf_tensor_unref(x);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("dist_loop");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_loop_split_over_workers);
  suite_add_tcase(s, tc);
  return s;
}
