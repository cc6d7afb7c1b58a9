/* master_test.c: the master and worker services in one process over
 * loopback TCP: distributed results equal local ones bit for bit, state
 * on the ps persists across steps, step state is cleaned up, an absent
 * task does not block CreateSession but fails the steps that need it,
 * naming it, a dead worker fails the step within its deadline while other
 * sessions -- new ones too -- keep working. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "test/unit/runtime/rt_testlib.h"

static tf_master *volatile ticked;
static _Atomic bool ticking;
static pthread_t ticker;

static void *tick_loop(void *arg) {
  while (atomic_load(&ticking)) {
    tf_master_tick(ticked);
    struct timespec ts = {0, 50 * 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void start(rt_cluster *c, int n_workers, int absent, int64_t reg_ms) {
  rt_start(c, n_workers, absent, reg_ms);
  ticked = c->master;
  atomic_store(&ticking, true);
  pthread_create(&ticker, NULL, tick_loop, NULL);
}

static void stop(rt_cluster *c) {
  atomic_store(&ticking, false);
  pthread_join(ticker, NULL);
  rt_stop(c);
}

static tf_session *remote(rt_cluster *c, tf_graph *g) {
  tf_status st;
  tf_status_init(&st);
  tf_session_options o = {.target = c->master_url};
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* x (ps) @ w (worker 0) + b (worker 1), tanh on the ps. */
static tf_graph *spread_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = rt_const(g, "x", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(2, 64, 32), -1, 1));
  tf_node *w = rt_const(g, "w", "/job:worker/task:0", tt_rand(TF_FLOAT32, tf_shape_of(2, 32, 16), -1, 1));
  tf_node *b = rt_const(g, "b", "/job:worker/task:1", tt_rand(TF_FLOAT32, tf_shape_of(1, 16), -1, 1));
  tf_output mm_in[] = {rt_out(x), rt_out(w)};
  tf_node *mm = rt_node(g, "MatMul", "mm", "/job:worker/task:0", mm_in, 2, NULL, 0);
  tf_output add_in[] = {rt_out(mm), rt_out(b)};
  tf_node *y = rt_node(g, "Add", "y", "/job:worker/task:1/device:CPU:0", add_in, 2, NULL, 0);
  tf_output t_in[] = {rt_out(y)};
  rt_node(g, "Tanh", "z", "/job:ps/task:0", t_in, 1, NULL, 0);
  return g;
}

static void run2(tf_session *s, const char *const *fetch, tf_tensor **out, int n) {
  tf_status st;
  tf_status_init(&st);
  tf_run_options ro = {.timeout_ms = 10000};
  ck_assert_msg(tf_session_run(s, &ro, NULL, NULL, 0, fetch, out, n, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
}

START_TEST(distributed_equals_local) {
  rt_cluster c;
  start(&c, 2, 0, 5000);
  tf_graph *g = spread_graph();
  tf_status st;
  tf_status_init(&st);
  tf_session *local = tf_session_new(g, NULL, &st);
  ck_assert_msg(local != NULL, "%s", st.msg);
  tf_session *rs = remote(&c, g);
  const char *fetch[] = {"z", "y:0", "mm"};
  tf_tensor *want[3], *got[3];
  run2(local, fetch, want, 3);
  for (int step = 0; step < 3; step++) { /* the cached partitions, again */
    run2(rs, fetch, got, 3);
    for (int i = 0; i < 3; i++) {
      ck_assert_msg(tf_tensor_equal(got[i], want[i]), "fetch %s differs", fetch[i]);
      tf_tensor_unref(got[i]);
    }
  }
  tt_free(want, 3);
  /* Each step's tables are cleaned up on every task (asynchronously). */
  int64_t until = tf__now_ns() + 2000000000LL;
  while (tf__now_ns() < until &&
         (tf_worker_live_step_tables(c.ps) + tf_worker_live_step_tables(c.workers[0]) +
          tf_worker_live_step_tables(c.workers[1])) > 0) {
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
  ck_assert_int_eq(tf_worker_live_step_tables(c.ps), 0);
  ck_assert_int_eq(tf_worker_live_step_tables(c.workers[1]), 0);
  tf_session_free(rs);
  tf_session_free(local);
  tf_graph_free(g);
  stop(&c);
}
END_TEST

/* A ps variable updated from fed values on a worker keeps its state. */
START_TEST(variables_live_on_ps) {
  rt_cluster c;
  start(&c, 2, 0, 5000);
  tf_graph *g = tf_graph_new();
  tf_attr_kv vkv[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                      {"shape", tf_attr_shape(tf_shape_of(1, 4))}};
  tf_node *v = rt_node(g, "VariableV2", "v", NULL, NULL, 0, vkv, 2);
  double zeros[4] = {1, 2, 3, 4};
  tf_node *init = rt_const(g, "init", NULL, tt_tensor(TF_FLOAT32, tf_shape_of(1, 4), zeros));
  tf_output a_in[] = {rt_out(v), rt_out(init)};
  rt_node(g, "Assign", "assign", NULL, a_in, 2, NULL, 0);
  tf_attr_kv pkv[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                      {"shape", tf_attr_shape(tf_shape_of(1, 4))}};
  tf_node *delta = rt_node(g, "Placeholder", "delta", "/job:worker/task:1", NULL, 0, pkv, 2);
  tf_output d2_in[] = {rt_out(delta), rt_out(delta)};
  tf_node *twice = rt_node(g, "Add", "twice", "/job:worker/task:1", d2_in, 2, NULL, 0);
  tf_output aa_in[] = {rt_out(v), rt_out(twice)};
  rt_node(g, "AssignAdd", "update", NULL, aa_in, 2, NULL, 0);
  tf_session *rs = remote(&c, g);
  tf_status st;
  tf_status_init(&st);
  const char *assign[] = {"assign"};
  ck_assert_msg(tf_session_run(rs, NULL, NULL, NULL, 0, NULL, NULL, 0, assign, 1,
                               NULL, &st) == TF_OK, "%s", st.msg);
  double dv[4] = {0.5, -1, 2, 0.25};
  tf_tensor *d = tt_tensor(TF_FLOAT32, tf_shape_of(1, 4), dv);
  const char *feed[] = {"delta"}, *upd[] = {"update"}, *fv[] = {"v"};
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(tf_session_run(rs, NULL, feed, &d, 1, NULL, NULL, 0, upd, 1, NULL,
                                 &st) == TF_OK, "%s", st.msg);
  }
  tf_tensor *got = NULL;
  ck_assert_msg(tf_session_run(rs, NULL, NULL, NULL, 0, fv, &got, 1, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  const float *gv = got->data;
  for (int i = 0; i < 4; i++) ck_assert(gv[i] == (float)(zeros[i] + 6 * dv[i]));
  /* A feed of the wrong dtype is refused, naming the feed. */
  tf_tensor *bad = tt_tensor(TF_FLOAT64, tf_shape_of(1, 4), dv);
  ck_assert_int_eq(tf_session_run(rs, NULL, feed, &bad, 1, NULL, NULL, 0, upd, 1, NULL,
                                  &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "delta") != NULL, "%s", st.msg);
  tf_tensor_unref(bad);
  tf_tensor_unref(got);
  tf_tensor_unref(d);
  tf_session_free(rs);
  tf_graph_free(g);
  stop(&c);
}
END_TEST

START_TEST(absent_task_named) {
  rt_cluster c;
  start(&c, 1, 1, 300);
  tf_graph *g = spread_graph();
  tf_status st;
  tf_status_init(&st);
  tf_session_options o = {.target = c.master_url};
  int64_t t0 = tf__now_ns();
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "an absent task must not block CreateSession: %s", st.msg);
  const char *fetch[] = {"z"};
  tf_tensor *out = NULL;
  tf_run_options ro = {.timeout_ms = 5000};
  tf_code rc = tf_session_run(s, &ro, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL, &st);
  double secs = (double)(tf__now_ns() - t0) / 1e9;
  ck_assert_int_eq(rc, TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:1 is down") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "/job:ps") == NULL, "%s", st.msg);
  ck_assert_msg(secs < 3.0, "took %.2f s", secs);
  /* A graph on the tasks that are up runs. */
  tf_graph *g2 = tf_graph_new();
  tf_node *a = rt_const(g2, "a", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(1, 8), -1, 1));
  tf_output in[] = {rt_out(a)};
  rt_node(g2, "Neg", "n", "/job:worker/task:0", in, 1, NULL, 0);
  tf_session *s2 = remote(&c, g2);
  const char *f2[] = {"n"};
  run2(s2, f2, &out, 1);
  tf_tensor_unref(out);
  tf_session_free(s2);
  tf_session_free(s);
  tf_graph_free(g2);
  tf_graph_free(g);
  stop(&c);
}
END_TEST

START_TEST(dead_worker_fails_step_in_time) {
  rt_cluster c;
  start(&c, 2, 0, 5000);
  tf_graph *g = spread_graph();
  tf_session *rs = remote(&c, g);
  const char *fetch[] = {"z"};
  tf_tensor *out = NULL;
  run2(rs, fetch, &out, 1);
  tf_tensor_unref(out);
  /* Another session, on the ps and worker 0 only, made beforehand. */
  tf_graph *g2 = tf_graph_new();
  tf_node *a = rt_const(g2, "a", "/job:ps", tt_rand(TF_FLOAT32, tf_shape_of(1, 8), -1, 1));
  tf_output in[] = {rt_out(a)};
  rt_node(g2, "Neg", "n", "/job:worker/task:0", in, 1, NULL, 0);
  tf_session *s2 = remote(&c, g2);
  tf_worker_free(c.workers[1]); /* worker 1 dies */
  c.workers[1] = NULL;
  c.n_workers = 1;
  tf_status st;
  tf_status_init(&st);
  tf_run_options ro = {.timeout_ms = 1500};
  int64_t t0 = tf__now_ns();
  tf_code rc = tf_session_run(rs, &ro, NULL, NULL, 0, fetch, &out, 1, NULL, 0, NULL, &st);
  double secs = (double)(tf__now_ns() - t0) / 1e9;
  ck_assert_msg(rc == TF_UNAVAILABLE || rc == TF_DEADLINE_EXCEEDED, "%d %s", rc, st.msg);
  ck_assert_msg(secs < 1.5 + 3.0, "took %.2f s", secs);
  /* The other session still runs; new sessions fail naming the task. */
  const char *f2[] = {"n"};
  run2(s2, f2, &out, 1);
  tf_tensor_unref(out);
  tf_session *s3 = remote(&c, g2);
  run2(s3, f2, &out, 1);
  tf_tensor_unref(out);
  tf_session_free(s3);
  tf_session_free(s2);
  tf_session_free(rs);
  tf_graph_free(g2);
  tf_graph_free(g);
  stop(&c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("master");
  TCase *tc = tcase_create("cluster");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, distributed_equals_local);
  tcase_add_test(tc, variables_live_on_ps);
  tcase_add_test(tc, absent_task_named);
  tcase_add_test(tc, dead_worker_fails_step_in_time);
  suite_add_tcase(s, tc);
  return s;
}
