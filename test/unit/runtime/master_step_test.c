/* master_step_test.c: RunStep's signature cache and its checks, through a
 * remote session: the same (feeds, fetches, targets) in any order and
 * with "x" or "x:0" reuses the registered partitions (the workers' graph
 * count stays put), a new signature registers new ones; a feed given
 * twice, an unknown fetch, a fetch of a dead tensor (untaken tf_cond
 * branch) and a feed of the wrong dtype fail naming the culprit, and so
 * do malformed names (which once crashed the master). */
#include "test/unit/runtime/rt_testlib2.h"
#include "tf/control_flow.h"

/* x (fed, worker 0) -> y = Neg(x) (worker 1) -> z = y + x (ps); the
 * target t = Identity(y) (worker 0). */
static tf_graph *fed_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = rt2_placeholder(g, "x", "/job:worker/task:0", TF_FLOAT32);
  tf_output xin[] = {rt_out(x)};
  tf_node *y = rt_node(g, "Neg", "y", "/job:worker/task:1", xin, 1, NULL, 0);
  tf_output yx[] = {rt_out(y), rt_out(x)};
  rt_node(g, "Add", "z", "/job:ps/task:0", yx, 2, NULL, 0);
  tf_output yin[] = {rt_out(y)};
  rt_node(g, "Identity", "t", "/job:worker/task:0", yin, 1, NULL, 0);
  return g;
}

static tf_code run(tf_session *s, const char *const *feeds, tf_tensor *const *fv, int nf,
                   const char *const *fetches, tf_tensor **out, int no,
                   const char *const *targets, int nt, tf_status *st) {
  tf_status_init(st);
  tf_run_options ro = {.timeout_ms = 5000};
  return tf_session_run(s, &ro, feeds, fv, nf, fetches, out, no, targets, nt, NULL, st);
}

/* Checks y = -x and z = 0 (in whichever fetch order). */
static void check_yz(tf_tensor *y, tf_tensor *z, const tf_tensor *x) {
  const float *xv = x->data, *yv = y->data, *zv = z->data;
  for (int64_t i = 0; i < x->n; i++) {
    ck_assert(yv[i] == -xv[i]);
    ck_assert(zv[i] == -xv[i] + xv[i]);
  }
  tf_tensor_unref(y);
  tf_tensor_unref(z);
}

START_TEST(signature_cache_reuses_partitions) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = fed_graph();
  tf_session *s = rt2_remote(&c, g);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 6), -3, 3);
  tf_tensor *out[2];
  tf_status st;
  const char *f1[] = {"x"}, *o1[] = {"y", "z"}, *t1[] = {"t"};
  ck_assert_msg(run(s, f1, &x, 1, o1, out, 2, t1, 1, &st) == TF_OK, "%s", st.msg);
  check_yz(out[0], out[1], x);
  int64_t after_first = rt2_graphs(&c);
  ck_assert_int_ge(after_first, 3); /* worker 0, worker 1, ps */
  /* Same signature: fetch order swapped, ":0" spelled out, target as is. */
  const char *f2[] = {"x:0"}, *o2[] = {"z:0", "y"};
  ck_assert_msg(run(s, f2, &x, 1, o2, out, 2, t1, 1, &st) == TF_OK, "%s", st.msg);
  check_yz(out[1], out[0], x);
  const char *o3[] = {"z", "y:0", "z"}; /* a repeated fetch is the same set */
  tf_tensor *out3[3];
  ck_assert_msg(run(s, f1, &x, 1, o3, out3, 3, t1, 1, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_tensor_equal(out3[0], out3[2]));
  tf_tensor_unref(out3[2]);
  check_yz(out3[1], out3[0], x);
  ck_assert_int_eq(rt2_graphs(&c), after_first);
  /* A different signature (no target) registers new partitions. */
  ck_assert_msg(run(s, f1, &x, 1, o1, out, 2, NULL, 0, &st) == TF_OK, "%s", st.msg);
  check_yz(out[0], out[1], x);
  int64_t after_second = rt2_graphs(&c);
  ck_assert_int_gt(after_second, after_first);
  ck_assert_msg(run(s, f2, &x, 1, o2, out, 2, NULL, 0, &st) == TF_OK, "%s", st.msg);
  check_yz(out[1], out[0], x);
  ck_assert_int_eq(rt2_graphs(&c), after_second);
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

START_TEST(bad_feeds_and_fetches) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = fed_graph();
  tf_session *s = rt2_remote(&c, g);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), -1, 1);
  tf_tensor *out[2] = {NULL, NULL};
  tf_status st;
  /* The same edge fed twice, spelled two ways. */
  const char *twice[] = {"x", "x:0"}, *fy[] = {"y"};
  tf_tensor *xx[] = {x, x};
  ck_assert_int_eq(run(s, twice, xx, 2, fy, out, 1, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "twice") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out[0]);
  /* An unknown fetch, named. */
  const char *fx[] = {"x"}, *bad[] = {"y", "no_such_node"};
  ck_assert_int_ne(run(s, fx, &x, 1, bad, out, 2, NULL, 0, &st), TF_OK);
  ck_assert_msg(strstr(st.msg, "no_such_node") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out[0]);
  ck_assert_ptr_null(out[1]);
  /* An unknown port of a known node, named. */
  const char *badport[] = {"y:3"};
  ck_assert_int_ne(run(s, fx, &x, 1, badport, out, 1, NULL, 0, &st), TF_OK);
  ck_assert_msg(strstr(st.msg, "y:3") != NULL, "%s", st.msg);
  /* An unknown feed and target, named. */
  const char *nofeed[] = {"ghost"}, *notarget[] = {"phantom"};
  ck_assert_int_ne(run(s, nofeed, &x, 1, fy, out, 1, NULL, 0, &st), TF_OK);
  ck_assert_msg(strstr(st.msg, "ghost") != NULL, "%s", st.msg);
  ck_assert_int_ne(run(s, fx, &x, 1, fy, out, 1, notarget, 1, &st), TF_OK);
  ck_assert_msg(strstr(st.msg, "phantom") != NULL, "%s", st.msg);
  /* A feed of the wrong dtype, named, also once the signature is cached. */
  tf_tensor *xi = tt_rand(TF_INT32, tf_shape_of(1, 4), -5, 5);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(run(s, fx, &xi, 1, fy, out, 1, NULL, 0, &st), TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "'x'") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "int32") != NULL, "%s", st.msg);
    ck_assert_msg(run(s, fx, &x, 1, fy, out, 1, NULL, 0, &st) == TF_OK, "%s", st.msg);
    tf_tensor_unref(out[0]);
    out[0] = NULL;
  }
  tf_tensor_unref(xi);
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

/* Fetches {"y","z"}, then {"y:0,z"}, which the master's ','-joined key
 * took for {"y:0","z:0"} (the cached entry) before reading fetched[-1]:
 * now INVALID_ARGUMENT naming it, for this and other malformed names in
 * every role, no partitions registered, and the next {"y","z"} works. */
START_TEST(malformed_names_refused) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = fed_graph();
  tf_session *s = rt2_remote(&c, g);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 5), -2, 2);
  tf_tensor *out[2] = {NULL, NULL};
  tf_status st;
  const char *fx[] = {"x"}, *yz[] = {"y", "z"};
  ck_assert_msg(run(s, fx, &x, 1, yz, out, 2, NULL, 0, &st) == TF_OK, "%s", st.msg);
  check_yz(out[0], out[1], x);
  int64_t graphs = rt2_graphs(&c);
  struct {
    int role; /* 0 feed, 1 fetch, 2 target */
    const char *name, *shown;
  } bad[] = {{1, "y:0,z", "fetch 'y:0,z'"}, {1, "y:0\nz:0", "fetch 'y:0\\x0az:0'"},
             {1, "y:", "fetch 'y:'"},      {1, "y:-1", "fetch 'y:-1'"},
             {1, "y:01", "fetch 'y:01'"},  {0, "x:0,x", "feed 'x:0,x'"},
             {2, "t:0", "target 't:0'"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *name = bad[i].name;
    out[0] = NULL;
    tf_code rc = bad[i].role == 0 ? run(s, &name, &x, 1, yz, out, 1, NULL, 0, &st)
                 : bad[i].role == 1 ? run(s, fx, &x, 1, &name, out, 1, NULL, 0, &st)
                                    : run(s, fx, &x, 1, yz, out, 1, &name, 1, &st);
    ck_assert_msg(rc == TF_INVALID_ARGUMENT, "%s: %d %s", name, rc, st.msg);
    ck_assert_msg(strstr(st.msg, bad[i].shown) != NULL, "%s", st.msg);
    ck_assert_ptr_null(out[0]);
  }
  ck_assert_int_eq(rt2_graphs(&c), graphs);
  ck_assert_msg(run(s, fx, &x, 1, yz, out, 2, NULL, 0, &st) == TF_OK, "%s", st.msg);
  check_yz(out[0], out[1], x);
  ck_assert_int_eq(rt2_graphs(&c), graphs);
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

static tf_code neg_branch(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                          int n_out, void *arg, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "Neg", "tneg");
  tf_node_add_input(b, in[0]);
  tf_node_set_device(b, "/job:worker/task:1");
  tf_node *n = tf_node_finish(b, st);
  if (n == NULL) return st->code;
  out[0] = rt_out(n);
  return TF_OK;
}

static tf_code id_branch(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                         int n_out, void *arg, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "Identity", "fid");
  tf_node_add_input(b, in[0]);
  tf_node *n = tf_node_finish(b, st);
  if (n == NULL) return st->code;
  out[0] = rt_out(n);
  return TF_OK;
}

/* r = cond(p, -v, v) with p fed; the untaken branch's node is dead, and
 * fetching it fails naming it, whichever task it ran on. */
START_TEST(dead_fetch_refused) {
  rt_cluster c;
  rt_start(&c, 2, 0, 3000);
  tf_graph *g = tf_graph_new();
  tf_node *p = rt2_placeholder(g, "p", "/job:worker/task:0", TF_BOOL);
  double vv[2] = {2, -5};
  tf_node *v = rt_const(g, "v", "/job:ps", tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), vv));
  tf_output in[] = {rt_out(v)}, res;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cond(g, "cond", rt_out(p), in, 1, neg_branch, id_branch, NULL, &res, 1,
                        &st) == TF_OK,
                "%s", st.msg);
  ck_assert_ptr_nonnull(tf_graph_find(g, "cond/tneg"));
  tf_session *s = rt2_remote(&c, g);
  const char *feed[] = {"p"};
  char resname[128];
  snprintf(resname, sizeof resname, "%s:%d", tf_node_name(res.node), res.index);
  const char *fetch[] = {resname, "cond/tneg"};
  tf_tensor *out[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) { /* taken: both values; again from the cache */
    tf_tensor *pt = tf_tensor_scalar_bool(true);
    ck_assert_msg(run(s, feed, &pt, 1, fetch, out, 2, NULL, 0, &st) == TF_OK, "%s", st.msg);
    const float *r = out[0]->data, *n = out[1]->data;
    ck_assert(r[0] == -2.0f && r[1] == 5.0f);
    ck_assert(n[0] == -2.0f && n[1] == 5.0f);
    tt_free(out, 2);
    tf_tensor_unref(pt);
  }
  for (int k = 0; k < 2; k++) { /* untaken: the branch's node is dead */
    tf_tensor *pf = tf_tensor_scalar_bool(false);
    ck_assert_int_eq(run(s, feed, &pf, 1, fetch, out, 2, NULL, 0, &st), TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "cond/tneg") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "dead tensor") != NULL, "%s", st.msg);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    /* The cond's output itself is live. */
    ck_assert_msg(run(s, feed, &pf, 1, fetch, out, 1, NULL, 0, &st) == TF_OK, "%s", st.msg);
    const float *r = out[0]->data;
    ck_assert(r[0] == 2.0f && r[1] == -5.0f);
    tf_tensor_unref(out[0]);
    out[0] = NULL;
    tf_tensor_unref(pf);
  }
  tf_session_free(s);
  tf_graph_free(g);
  rt_stop(&c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("master_step");
  TCase *tc = tcase_create("steps");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, signature_cache_reuses_partitions);
  tcase_add_test(tc, bad_feeds_and_fetches);
  tcase_add_test(tc, malformed_names_refused);
  tcase_add_test(tc, dead_fetch_refused);
  suite_add_tcase(s, tc);
  return s;
}
