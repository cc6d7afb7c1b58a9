/* session_prune_test.c: partial execution (whitepaper §4.2) through
 * tf_session_run with traces, which list every node that ran by name.
 * Only the nodes that fetches and targets need run (the exact set is
 * checked); a fed edge cuts its producer out (a stateful RandomUniform or a
 * Placeholder does not run; a producer whose other output is still needed
 * does); targets pull in their control dependencies, and a node needed
 * only through a control input runs; feeding and fetching one edge returns
 * the fed tensor; feeding a ref edge is INVALID_ARGUMENT; the generated
 * _arg_N/_retval_N cannot clash with user nodes (whose names may not begin
 * with '_'), nor with lookalikes without the '_'; 1,000 distinct
 * signatures give 1,000 cache entries and one signature in any order (and
 * spelling) gives one; an invalid part of the graph is harmless until a
 * Run keeps it, and then the error names its node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "test/unit/core/exec/exec_testlib.h"
#include "tf/session.h"

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static tf_status st;

/* ---- graph helpers ---------------------------------------------------------- */

/* op on data inputs in[0..n_in) with control inputs ctrl[0..n_ctrl)
 * (tt_node takes none). Aborts the test on failure. */
static tf_node *ctrl_node(tf_graph *g, const char *op, const char *name,
                          const tf_output *in, int n_in, tf_node *const *ctrl, int n_ctrl) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < n_ctrl; i++) tf_node_add_control_input(b, ctrl[i]);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s %s: %s", op, name ? name : "", st.msg);
  return n;
}

static tf_node *op1(tf_graph *g, const char *op, const char *name, tf_node *a) {
  return tt_node(g, op, name, (tf_output[]){o0(a)}, 1, NULL, 0);
}

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_node *a,
                    tf_node *b) {
  return tt_node(g, op, name, (tf_output[]){o0(a), o0(b)}, 2, NULL, 0);
}

static tf_node *f32(tf_graph *g, const char *name, float v) {
  return tt_const(g, name, tf_tensor_scalar_f32(v));
}

static tf_node *variable(tf_graph *g, const char *name) {
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(TF_INT64)},
                    {"shape", tf_attr_shape(tf_shape_scalar())}};
  return tt_node(g, "VariableV2", name, NULL, 0, a, 2);
}

/* ---- running with a trace ------------------------------------------------------ */

typedef struct run_spec {
  const char *feeds[4];
  tf_tensor *values[4];
  int n_feeds;
  const char *fetches[8];
  int n_fetches;
  const char *targets[4];
  int n_targets;
} run_spec;

static tf_run_metadata meta;
static tf_tensor *outs[8];

static tf_code run(tf_session *s, const run_spec *r) {
  tf_run_metadata_fini(&meta);
  tf_run_options o = {.timeout_ms = 20000, .trace = true};
  return tf_session_run(s, &o, r->feeds, r->values, r->n_feeds, r->fetches, outs,
                        r->n_fetches, r->targets, r->n_targets, &meta, &st);
}

static void run_ok(tf_session *s, const run_spec *r) {
  ck_assert_msg(run(s, r) == TF_OK, "%s", st.msg);
}

static int times_ran(const char *name) {
  int k = 0;
  for (int i = 0; i < meta.n_timings; i++) k += strcmp(meta.timings[i].node, name) == 0;
  return k;
}

/* The trace lists exactly these nodes, each once. */
static void assert_ran_exactly(const char *const *names, int n) {
  char all[2048] = "";
  for (int i = 0; i < meta.n_timings; i++) {
    size_t l = strlen(all);
    snprintf(all + l, sizeof all - l, "%s ", meta.timings[i].node);
  }
  ck_assert_msg(meta.n_timings == n, "ran %d nodes, want %d: %s", meta.n_timings, n, all);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(times_ran(names[i]) == 1, "'%s' ran %d times: %s", names[i],
                  times_ran(names[i]), all);
  }
}

#define RAN_EXACTLY(...)                                                       \
  do {                                                                         \
    const char *want_[] = {__VA_ARGS__};                                       \
    assert_ran_exactly(want_, (int)(sizeof want_ / sizeof *want_));            \
  } while (0)

static void free_outs(int n) { tt_free(outs, n); }

static tf_session *session(tf_graph *g, int threads) {
  tf_session_options o = {.inter_op_threads = threads};
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

static void teardown(void) {
  tf_run_metadata_fini(&meta);
}

/* ---- tests ------------------------------------------------------------------------ */

/* d = (a + b) * a; e = -b and an Assign nobody asks for: exactly the
 * ancestors of the fetches run, and the Assign leaves its variable alone. */
START_TEST(test_only_needed_nodes_run) {
  tf_graph *g = tf_graph_new();
  tf_node *a = f32(g, "a", 2), *b = f32(g, "b", 3);
  tf_node *c = op2(g, "Add", "c", a, b);
  op2(g, "Mul", "d", c, a);
  op1(g, "Neg", "e", b);
  tf_node *v = variable(g, "v");
  op2(g, "Assign", "assign", v, tt_const(g, "seven", tf_tensor_scalar_i64(7)));
  op1(g, "IsVariableInitialized", "inited", v);
  int threads[] = {1, 3};
  for (int k = 0; k < 2; k++) {
    tf_session *s = session(g, threads[k]);
    run_spec r = {.fetches = {"d"}, .n_fetches = 1};
    run_ok(s, &r);
    ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), 10.0);
    free_outs(1);
    RAN_EXACTLY("a", "b", "c", "d", "_retval_0");
    run_spec r2 = {.fetches = {"e", "c:0"}, .n_fetches = 2};
    run_ok(s, &r2);
    ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), -3.0);
    ck_assert_double_eq(tf_tensor_get_f64(outs[1], 0), 5.0);
    free_outs(2);
    RAN_EXACTLY("a", "b", "c", "e", "_retval_0", "_retval_1");
    run_spec r3 = {.fetches = {"inited"}, .n_fetches = 1};
    run_ok(s, &r3);
    ck_assert_int_eq(tf_tensor_get_i64(outs[0], 0), 0); /* assign never ran */
    free_outs(1);
    RAN_EXACTLY("v", "inited", "_retval_0");
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

/* A fed edge replaces its producer: a stateful RandomUniform (and the
 * shape Const feeding it) and an unfed Placeholder never run. */
START_TEST(test_fed_edge_cuts_producer) {
  tf_graph *g = tf_graph_new();
  tf_node *shape = tt_const(g, "shape", tt_tensor_i(TF_INT32, tf_shape_of(1, 1),
                                                   (int64_t[]){4}));
  tf_attr_kv ra[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}, {"seed", tf_attr_int(7)}};
  tf_node *rnd = tt_node(g, "RandomUniform", "rnd", (tf_output[]){o0(shape)}, 1, ra, 2);
  op1(g, "Neg", "neg", rnd);
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_scalar());
  tf_node *sq = op1(g, "Square", "sq", p);
  op1(g, "Neg", "negsq", sq);
  tf_session *s = session(g, 2);
  /* Not fed: the random op runs; its values are in [0, 1). */
  run_spec r = {.fetches = {"neg"}, .n_fetches = 1};
  run_ok(s, &r);
  RAN_EXACTLY("shape", "rnd", "neg", "_retval_0");
  for (int i = 0; i < 4; i++) {
    double x = tf_tensor_get_f64(outs[0], i);
    ck_assert(x <= 0 && x > -1);
  }
  free_outs(1);
  /* Fed: it does not. */
  tf_tensor *t = tt_tensor(TF_FLOAT32, tf_shape_of(1, 4), (double[]){1, -2, 3.5, 0});
  run_spec rf = {.feeds = {"rnd:0"}, .values = {t}, .n_feeds = 1,
                 .fetches = {"neg"}, .n_fetches = 1};
  run_ok(s, &rf);
  RAN_EXACTLY("_arg_0", "neg", "_retval_0");
  for (int i = 0; i < 4; i++) {
    ck_assert_double_eq(tf_tensor_get_f64(outs[0], i), -tf_tensor_get_f64(t, i));
  }
  free_outs(1);
  tf_tensor_unref(t);
  /* A Placeholder fed directly, and one cut off by feeding its consumer
   * (it would fail, unfed, if it ran). */
  tf_tensor *five = tf_tensor_scalar_f32(5);
  run_spec rp = {.feeds = {"p"}, .values = {five}, .n_feeds = 1,
                 .fetches = {"negsq"}, .n_fetches = 1};
  run_ok(s, &rp);
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), -25.0);
  free_outs(1);
  RAN_EXACTLY("_arg_0", "sq", "negsq", "_retval_0");
  run_spec rs = {.feeds = {"sq"}, .values = {five}, .n_feeds = 1,
                 .fetches = {"negsq"}, .n_fetches = 1};
  run_ok(s, &rs);
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), -5.0);
  free_outs(1);
  RAN_EXACTLY("_arg_0", "negsq", "_retval_0");
  tf_tensor_unref(five);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Feeding one output of a two-output node: the node still runs when its
 * other output is needed, and not when it is not. */
START_TEST(test_fed_port_is_per_output) {
  tf_graph *g = tf_graph_new();
  tf_node *pair = tt_const(g, "pair", tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), (double[]){1, 2}));
  tf_attr_kv ua[] = {{"num", tf_attr_int(2)}};
  tf_node *un = tt_node(g, "Unpack", "un", (tf_output[]){o0(pair)}, 1, ua, 1);
  tt_node(g, "Neg", "n0", (tf_output[]){{un, 0}}, 1, NULL, 0);
  tt_node(g, "Neg", "n1", (tf_output[]){{un, 1}}, 1, NULL, 0);
  tf_session *s = session(g, 1);
  tf_tensor *ten = tf_tensor_scalar_f32(10);
  run_spec r = {.feeds = {"un:0"}, .values = {ten}, .n_feeds = 1,
                .fetches = {"n0", "n1"}, .n_fetches = 2};
  run_ok(s, &r);
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), -10.0);
  ck_assert_double_eq(tf_tensor_get_f64(outs[1], 0), -2.0);
  free_outs(2);
  RAN_EXACTLY("_arg_0", "pair", "un", "n0", "n1", "_retval_0", "_retval_1");
  run_spec r0 = {.feeds = {"un:0"}, .values = {ten}, .n_feeds = 1,
                 .fetches = {"n0"}, .n_fetches = 1};
  run_ok(s, &r0);
  free_outs(1);
  RAN_EXACTLY("_arg_0", "n0", "_retval_0");
  tf_tensor_unref(ten);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A target pulls in its control inputs, transitively: group waits on
 * inc (an AssignAdd) and on a NoOp that waits on inc2. */
START_TEST(test_targets_pull_control_deps) {
  tf_graph *g = tf_graph_new();
  tf_node *v = variable(g, "counter");
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i64(1));
  tf_node *ten = tt_const(g, "ten", tf_tensor_scalar_i64(10));
  op2(g, "Assign", "init", v, zero);
  tf_node *inc = op2(g, "AssignAdd", "inc", v, one);
  tf_node *inc2 = op2(g, "AssignAdd", "inc2", v, ten);
  tf_node *inner = ctrl_node(g, "NoOp", "inner", NULL, 0, (tf_node *[]){inc2}, 1);
  ctrl_node(g, "NoOp", "group", NULL, 0, (tf_node *[]){inc, inner}, 2);
  tf_session *s = session(g, 2);
  run_spec ri = {.targets = {"init"}, .n_targets = 1};
  run_ok(s, &ri);
  RAN_EXACTLY("counter", "zero", "init");
  run_spec rg = {.targets = {"group"}, .n_targets = 1};
  run_ok(s, &rg);
  RAN_EXACTLY("counter", "one", "ten", "inc", "inc2", "inner", "group");
  run_spec rc = {.targets = {"^group"}, .n_targets = 1}; /* the same */
  run_ok(s, &rc);
  ck_assert_int_eq(tf_session_cache_size(s), 2);
  run_spec rv = {.fetches = {"counter"}, .n_fetches = 1};
  run_ok(s, &rv);
  ck_assert_int_eq(tf_tensor_get_i64(outs[0], 0), 22);
  free_outs(1);
  RAN_EXACTLY("counter", "_retval_0");
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* y = Identity(x) with ^side, where side = Square(k) and side waits on
 * side2: fetching y runs both, though nothing reads their outputs. */
START_TEST(test_control_only_node_runs) {
  tf_graph *g = tf_graph_new();
  tf_node *x = f32(g, "x", 4), *k = f32(g, "k", 3);
  tf_node *side2 = tt_node(g, "NoOp", "side2", NULL, 0, NULL, 0);
  tf_node *side = ctrl_node(g, "Square", "side", (tf_output[]){o0(k)}, 1, (tf_node *[]){side2}, 1);
  ctrl_node(g, "Identity", "y", (tf_output[]){o0(x)}, 1, (tf_node *[]){side}, 1);
  f32(g, "unrelated", 1);
  tf_session *s = session(g, 2);
  run_spec r = {.fetches = {"y"}, .n_fetches = 1};
  run_ok(s, &r);
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), 4.0);
  free_outs(1);
  RAN_EXACTLY("x", "k", "side2", "side", "y", "_retval_0");
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Feeding and fetching one edge returns the fed tensor itself; its
 * producer does not run; consumers see the feed. */
START_TEST(test_feed_and_fetch_same_edge) {
  tf_graph *g = tf_graph_new();
  tf_node *a = f32(g, "a", 1);
  tf_node *b = op1(g, "Neg", "b", a);
  op1(g, "Neg", "c", b);
  tf_session *s = session(g, 2);
  tf_tensor *t = tf_tensor_scalar_f32(6);
  run_spec r = {.feeds = {"b:0"}, .values = {t}, .n_feeds = 1,
                .fetches = {"b", "c"}, .n_fetches = 2};
  run_ok(s, &r);
  ck_assert_ptr_eq(outs[0], t);
  ck_assert_double_eq(tf_tensor_get_f64(outs[1], 0), -6.0);
  free_outs(2);
  RAN_EXACTLY("_arg_0", "c", "_retval_0", "_retval_1");
  /* Only the fed edge fetched: nothing but the _Arg and _Retval. */
  run_spec r1 = {.feeds = {"b"}, .values = {t}, .n_feeds = 1,
                 .fetches = {"b:0"}, .n_fetches = 1};
  run_ok(s, &r1);
  ck_assert_ptr_eq(outs[0], t);
  free_outs(1);
  RAN_EXACTLY("_arg_0", "_retval_0");
  tf_tensor_unref(t);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_feed_ref_edge) {
  tf_graph *g = tf_graph_new();
  tf_node *v = variable(g, "var");
  op2(g, "Assign", "init", v, tt_const(g, "three", tf_tensor_scalar_i64(3)));
  op1(g, "Identity", "read", v);
  tf_session *s = session(g, 1);
  tf_tensor *t = tf_tensor_scalar_i64(5);
  const char *refs[] = {"var", "var:0", "init"};
  for (int i = 0; i < 3; i++) {
    run_spec r = {.feeds = {refs[i]}, .values = {t}, .n_feeds = 1,
                  .fetches = {"read"}, .n_fetches = 1};
    ck_assert_int_eq(run(s, &r), TF_INVALID_ARGUMENT);
    ASSERT_HAS(st.msg, refs[i]);
    ASSERT_HAS(st.msg, "reference");
    ck_assert_ptr_null(outs[0]);
  }
  ck_assert_int_eq(tf_session_cache_size(s), 0);
  /* The value read from it can be fed. */
  run_spec ok = {.feeds = {"read"}, .values = {t}, .n_feeds = 1,
                 .fetches = {"read"}, .n_fetches = 1};
  run_ok(s, &ok);
  ck_assert_ptr_eq(outs[0], t);
  free_outs(1);
  tf_tensor_unref(t);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* The generated _arg_N/_retval_N begin with '_', which user graphs refuse
 * (builder and import, naming the node), so they cannot clash; user nodes
 * named like them without the '_' sit beside them and every value comes
 * from the right node. */
START_TEST(test_generated_names_do_not_clash) {
  tf_graph *g = tf_graph_new();
  ck_assert_ptr_null(tf_node_finish(tf_node_begin(g, "NoOp", "_arg_0"), &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'_arg_0'");
  ASSERT_HAS(st.msg, "reserved");
  tf_node_def d = {.name = "_retval_0", .op = "NoOp"};
  ck_assert_int_eq(tf_graph_import(g, &d, 1, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'_retval_0'");
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_node *ua = f32(g, "arg_0", 10);
  tf_node *ua1 = f32(g, "arg_0_1", 100);
  tf_node *ur = f32(g, "retval_0", 20);
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_node *y = op2(g, "Add", "y", x, ua);
  op2(g, "Add", "z", op2(g, "Add", "y2", y, ur), ua1);
  tf_session *s = session(g, 2);
  tf_tensor *one = tf_tensor_scalar_f32(1);
  run_spec r = {.feeds = {"x"}, .values = {one}, .n_feeds = 1,
                .fetches = {"z", "arg_0", "retval_0", "arg_0_1"}, .n_fetches = 4};
  run_ok(s, &r);
  /* outs follow fetch order, whatever the signature's order. */
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), 131.0);
  ck_assert_double_eq(tf_tensor_get_f64(outs[1], 0), 10.0);
  ck_assert_double_eq(tf_tensor_get_f64(outs[2], 0), 20.0);
  ck_assert_double_eq(tf_tensor_get_f64(outs[3], 0), 100.0);
  free_outs(4);
  ck_assert_int_eq(times_ran("arg_0"), 1);
  ck_assert_int_eq(times_ran("_arg_0"), 1); /* x's _Arg */
  ck_assert_int_eq(meta.n_timings, 3 + 1 + 3 + 4); /* consts, x's _Arg, y y2 z, retvals */
  /* Now feed the user's arg_0 node too. */
  tf_tensor *k = tf_tensor_scalar_f32(1000);
  run_spec r2 = {.feeds = {"x", "arg_0"}, .values = {one, k}, .n_feeds = 2,
                 .fetches = {"arg_0", "y"}, .n_fetches = 2};
  run_ok(s, &r2);
  ck_assert_ptr_eq(outs[0], k);
  ck_assert_double_eq(tf_tensor_get_f64(outs[1], 0), 1001.0);
  free_outs(2);
  tf_tensor_unref(k);
  tf_tensor_unref(one);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Fetching the subsets 1..1000 of ten Consts: 1,000 signatures, 1,000
 * cached executors, each fetching the right values. */
START_TEST(test_cache_distinct_signatures) {
  tf_graph *g = tf_graph_new();
  char names[10][8];
  for (int i = 0; i < 10; i++) {
    snprintf(names[i], sizeof names[i], "c%d", i);
    f32(g, names[i], (float)(i * i));
  }
  tf_session *s = session(g, 1);
  tf_tensor *res[10];
  for (int mask = 1; mask <= 1000; mask++) {
    const char *fetch[10];
    int n = 0, which[10];
    for (int i = 0; i < 10; i++) {
      if (mask & (1 << i)) {
        which[n] = i;
        fetch[n++] = names[i];
      }
    }
    ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, fetch, res, n, NULL, 0, NULL, &st) == TF_OK,
                  "%s", st.msg);
    for (int i = 0; i < n; i++) {
      ck_assert_double_eq(tf_tensor_get_f64(res[i], 0), (double)(which[i] * which[i]));
    }
    tt_free(res, n);
  }
  ck_assert_int_eq(tf_session_cache_size(s), 1000);
  /* A target is part of the signature too. */
  const char *f0[] = {"c0"}, *t1[] = {"c1"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f0, res, 1, t1, 1, NULL, &st), TF_OK);
  tt_free(res, 1);
  ck_assert_int_eq(tf_session_cache_size(s), 1001);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* One signature (two feeds, three fetches, two targets) in every order and
 * spelling: one executor, and each Run's outputs follow its own order. */
START_TEST(test_cache_same_signature_any_order) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_node *y = tt_placeholder(g, "y", TF_FLOAT32, tf_shape_scalar());
  op2(g, "Add", "sum", x, y);
  op2(g, "Mul", "prod", x, y);
  op2(g, "Sub", "diff", x, y);
  tt_node(g, "NoOp", "t1", NULL, 0, NULL, 0);
  tt_node(g, "NoOp", "t2", NULL, 0, NULL, 0);
  tf_session *s = session(g, 2);
  tf_tensor *xv = tf_tensor_scalar_f32(5), *yv = tf_tensor_scalar_f32(2);
  const char *fetch_names[3][2] = {{"sum", "sum:0"}, {"prod", "prod:0"}, {"diff", "diff:0"}};
  const double want[3] = {7, 10, 3};
  const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int p = 0; p < 6; p++) {
    for (int fo = 0; fo < 2; fo++) {
      for (int to = 0; to < 2; to++) {
        run_spec r = {.n_feeds = 2, .n_fetches = 3, .n_targets = 2};
        r.feeds[fo] = fo ? "x:0" : "x";
        r.values[fo] = xv;
        r.feeds[1 - fo] = "y";
        r.values[1 - fo] = yv;
        for (int i = 0; i < 3; i++) r.fetches[i] = fetch_names[perms[p][i]][(p + i) % 2];
        r.targets[to] = to ? "^t1" : "t1";
        r.targets[1 - to] = "t2";
        run_ok(s, &r);
        for (int i = 0; i < 3; i++) {
          ck_assert_double_eq(tf_tensor_get_f64(outs[i], 0), want[perms[p][i]]);
        }
        free_outs(3);
        RAN_EXACTLY("_arg_0", "_arg_1", "sum", "prod", "diff", "t1", "t2", "_retval_0",
                    "_retval_1", "_retval_2");
      }
    }
  }
  ck_assert_int_eq(tf_session_cache_size(s), 1);
  tf_tensor_unref(xv);
  tf_tensor_unref(yv);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A loop (built by hand) whose body reads an outer tensor directly, and a
 * MatMul of a dtype without a kernel: Runs that do not keep them work;
 * Runs that do fail naming the node. */
START_TEST(test_invalid_kept_part_names_node) {
  tf_graph *g = tf_graph_new();
  f32(g, "fine", 1.5f);
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *outer = tt_const(g, "outer_one", tf_tensor_scalar_i64(1));
  tf_node *lim = tt_const(g, "limit", tf_tensor_scalar_i64(3));
  tf_node *en = enter(g, "enter", o0(zero), "loop", false);
  tf_node *le = enter(g, "limit_enter", o0(lim), "loop", true);
  tf_node_builder *b = tf_node_begin(g, "Merge", "merge");
  tf_node_add_input_list(b, (tf_output[]){o0(en), o0(en)}, 2);
  tf_node *merge = tf_node_finish(b, &st);
  ck_assert_msg(merge != NULL, "%s", st.msg);
  tf_node *cond = op1(g, "LoopCond", "cond", op2(g, "Less", "less", merge, le));
  tf_node *sw = op2(g, "Switch", "switch", merge, cond);
  tt_node(g, "Exit", "exit", (tf_output[]){o0(sw)}, 1, NULL, 0);
  tf_node *bad = tt_node(g, "Add", "bad_add", (tf_output[]){{sw, 1}, o0(outer)}, 2, NULL, 0);
  tf_node *next = op1(g, "NextIteration", "next", bad);
  ck_assert_msg(tf__node_set_back_edge(merge, 1, o0(next), &st) == TF_OK, "%s", st.msg);
  tf_dtype no_kernel = dtype_without_kernel("MatMul");
  ck_assert_msg(no_kernel != TF_DTYPE_INVALID, "every MatMul dtype has a kernel now");
  tf_node *h = tt_placeholder(g, "h", no_kernel, tf_shape_of(2, 2, 2));
  op2(g, "MatMul", "mm", h, h);
  tf_session *s = session(g, 2);
  run_spec ok = {.fetches = {"fine"}, .n_fetches = 1};
  run_ok(s, &ok);
  ck_assert_double_eq(tf_tensor_get_f64(outs[0], 0), 1.5);
  free_outs(1);
  run_spec loop = {.fetches = {"exit"}, .n_fetches = 1};
  ck_assert_int_eq(run(s, &loop), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "bad_add");
  ASSERT_HAS(st.msg, "outer_one");
  ck_assert_ptr_null(outs[0]);
  run_spec mm = {.fetches = {"mm"}, .n_fetches = 1};
  ck_assert_int_eq(run(s, &mm), TF_NOT_FOUND);
  ASSERT_HAS(st.msg, "'mm'");
  ASSERT_HAS(st.msg, tf_dtype_name(no_kernel));
  /* Nothing failed was cached; the session still works. */
  ck_assert_int_eq(tf_session_cache_size(s), 1);
  run_ok(s, &ok);
  free_outs(1);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("session_prune");
  TCase *tc = tcase_create("session_prune");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, test_only_needed_nodes_run);
  tcase_add_test(tc, test_fed_edge_cuts_producer);
  tcase_add_test(tc, test_fed_port_is_per_output);
  tcase_add_test(tc, test_targets_pull_control_deps);
  tcase_add_test(tc, test_control_only_node_runs);
  tcase_add_test(tc, test_feed_and_fetch_same_edge);
  tcase_add_test(tc, test_feed_ref_edge);
  tcase_add_test(tc, test_generated_names_do_not_clash);
  tcase_add_test(tc, test_cache_distinct_signatures);
  tcase_add_test(tc, test_cache_same_signature_any_order);
  tcase_add_test(tc, test_invalid_kept_part_names_node);
  suite_add_tcase(s, tc);
  return s;
}
