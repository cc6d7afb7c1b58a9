/* control_flow_test.c: tf_cond and tf_while_loop built into graphs and run
 * through a session, each result checked against a plain C recomputation:
 * deadness through a chain with a stateful op on the untaken side (it must
 * not run), conds with several outputs, outer tensors and nesting, a
 * 10,000-iteration loop, nested loops (one inner trip count set by the
 * outer variable), a loop invariant, a cond inside a loop and a loop inside
 * an untaken branch; the same results for every parallel_iterations and
 * inter-op thread count; the graphs' structure; and the builders' errors,
 * after which the graph is left as it was: the same YAML (no node, name or
 * control edge left behind, also when the failure comes after a nested
 * cond was built) and the names free again ("cond", "while", "bad"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

static tf_status st;

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

/* ---- graph helpers ------------------------------------------------------- */

static tf_node *node(tf_graph *g, const char *op, const char *name,
                     const tf_output *in, int n) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  tf_node *nd = tf_node_finish(b, &st);
  ck_assert_msg(nd != NULL, "%s: %s", op, st.msg);
  return nd;
}

static tf_output op1(tf_graph *g, const char *op, tf_output x) {
  return (tf_output){node(g, op, NULL, &x, 1), 0};
}

static tf_output op2(tf_graph *g, const char *op, tf_output x, tf_output y) {
  return (tf_output){node(g, op, NULL, (tf_output[]){x, y}, 2), 0};
}

/* A Const holding t (taken over). */
static tf_output cst(tf_graph *g, tf_tensor *t) {
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  return (tf_output){n, 0};
}

static tf_output i64c(tf_graph *g, int64_t v) { return cst(g, tf_tensor_scalar_i64(v)); }
static tf_output i32c(tf_graph *g, int32_t v) { return cst(g, tf_tensor_scalar_i32(v)); }
static tf_output f32c(tf_graph *g, float v) { return cst(g, tf_tensor_scalar_f32(v)); }

static tf_output cast(tf_graph *g, tf_output x, tf_dtype dt) {
  tf_node_builder *b = tf_node_begin(g, "Cast", NULL);
  tf_node_add_input(b, x);
  tf_node_set_attr(b, "DstT", tf_attr_type_v(dt));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return (tf_output){n, 0};
}

static tf_output merge2(tf_graph *g, const char *name, tf_output a,
                        tf_output b) {
  tf_node_builder *nb = tf_node_begin(g, "Merge", name);
  tf_node_add_input_list(nb, (tf_output[]){a, b}, 2);
  tf_node *n = tf_node_finish(nb, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return (tf_output){n, 0};
}

static tf_output ph(tf_graph *g, const char *name, tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, name, dt, s), 0};
}

/* ---- running ------------------------------------------------------------- */

typedef struct runner {
  tf_session *s;
  int n_feeds;
  const char *feed_names[4];
  tf_tensor *feeds[4];
  char names[8][256];
  const char *fetch[8];
  tf_run_metadata meta;
} runner;

static void runner_init(runner *r, tf_graph *g, int threads) {
  memset(r, 0, sizeof *r);
  tf_session_options o = {.inter_op_threads = threads};
  r->s = tf_session_new(g, &o, &st);
  ck_assert_msg(r->s != NULL, "%s", st.msg);
}

static void runner_fini(runner *r) {
  tt_free(r->feeds, r->n_feeds);
  tf_run_metadata_fini(&r->meta);
  tf_session_free(r->s);
}

static void feed(runner *r, const char *name, tf_tensor *t) {
  r->feed_names[r->n_feeds] = name;
  r->feeds[r->n_feeds++] = t;
}

/* Runs with the feeds, fetching outs (and running target, when set). */
static tf_code run_outs(runner *r, const tf_output *outs, int n,
                        const char *target, tf_tensor **res) {
  for (int i = 0; i < n; i++) {
    snprintf(r->names[i], sizeof r->names[i], "%s:%d",
             tf_node_name(outs[i].node), outs[i].index);
    r->fetch[i] = r->names[i];
  }
  tf_run_metadata_fini(&r->meta);
  tf_run_options o = {.timeout_ms = 30000, .trace = true};
  tf_code rc = tf_session_run(r->s, &o, r->feed_names, r->feeds, r->n_feeds,
                              r->fetch, res, n, &target, target ? 1 : 0,
                              &r->meta, &st);
  tt_free(r->feeds, r->n_feeds);
  r->n_feeds = 0;
  return rc;
}

static void run_ok(runner *r, const tf_output *outs, int n, tf_tensor **res) {
  tf_code rc = run_outs(r, outs, n, NULL, res);
  ck_assert_msg(rc == TF_OK, "run: %s", st.msg);
}

static bool ran(const runner *r, const char *node) {
  for (int i = 0; i < r->meta.n_timings; i++) {
    if (strcmp(r->meta.timings[i].node, node) == 0) {
      return true;
    }
  }
  return false;
}

static int64_t get_i(tf_tensor *t) { return tf_tensor_get_i64(t, 0); }

/* ---- deadness ------------------------------------------------------------ */

static void check_f32(tf_tensor *t, const float *want, int n) {
  ck_assert_int_eq(t->dtype, TF_FLOAT32);
  ck_assert_int_eq(t->n, n);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(((float *)t->data)[i] == want[i], "[%d]: got %g, want %g", i,
                  ((float *)t->data)[i], want[i]);
  }
}

/* Switch(x, p): the false side runs Neg -> AssignAdd(v) -> Identity ->
 * Square -> Abs, the true side Add(x, x); Merge joins them. With p true the
 * chain is dead: nothing on it runs and v keeps its value. */
START_TEST(test_dead_branch_chain) {
  tf_graph *g = tf_graph_new();
  tf_output x = ph(g, "x", TF_FLOAT32, tf_shape_of(1, 3));
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_scalar());
  tf_node_builder *b = tf_node_begin(g, "VariableV2", "v");
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(1, 3)));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_output v = {tf_node_finish(b, &st), 0};
  ck_assert_msg(v.node != NULL, "%s", st.msg);
  float init[3] = {10, 20, 30}, xv[3] = {1.5f, -2, 4};
  node(g, "Assign", "init", (tf_output[]){v, cst(g, tf_tensor_vec_f32(3, init))}, 2);
  tf_node *sw = node(g, "Switch", "sw", (tf_output[]){x, p}, 2);
  tf_output neg = {node(g, "Neg", "neg", &(tf_output){sw, 0}, 1), 0};
  tf_output aa = {node(g, "AssignAdd", "aa", (tf_output[]){v, neg}, 2), 0};
  tf_output rd = {node(g, "Identity", "rd", &aa, 1), 0};
  tf_output sq = {node(g, "Square", "sq", &rd, 1), 0};
  tf_output ab = {node(g, "Abs", "ab", &sq, 1), 0};
  tf_output tr = {node(g, "Add", "tr", (tf_output[]){{sw, 1}, {sw, 1}}, 2), 0};
  tf_output m = merge2(g, "m", ab, tr);
  tf_output read = {node(g, "Identity", "read", &v, 1), 0};
  const char *chain[5] = {"neg", "aa", "rd", "sq", "ab"};
  runner r;
  runner_init(&r, g, 2);
  tf_tensor *res[1];
  ck_assert_msg(run_outs(&r, NULL, 0, "init", res) == TF_OK, "%s", st.msg);
  for (int rep = 0; rep < 2; rep++) {
    feed(&r, "x", tf_tensor_vec_f32(3, xv));
    feed(&r, "p", tf_tensor_scalar_bool(true));
    run_ok(&r, &m, 1, res);
    float want[3] = {2 * xv[0], 2 * xv[1], 2 * xv[2]};
    check_f32(res[0], want, 3);
    tf_tensor_unref(res[0]);
    ck_assert(ran(&r, "tr") && ran(&r, "m") && ran(&r, "sw"));
    for (int i = 0; i < 5; i++) {
      ck_assert_msg(!ran(&r, chain[i]), "dead node '%s' ran", chain[i]);
    }
    run_ok(&r, &read, 1, res);
    check_f32(res[0], init, 3);
    tf_tensor_unref(res[0]);
  }
  /* The other way round the chain runs, and the variable changes. */
  feed(&r, "x", tf_tensor_vec_f32(3, xv));
  feed(&r, "p", tf_tensor_scalar_bool(false));
  run_ok(&r, &m, 1, res);
  float after[3], sqw[3];
  for (int i = 0; i < 3; i++) {
    after[i] = init[i] - xv[i];
    sqw[i] = after[i] * after[i];
  }
  check_f32(res[0], sqw, 3);
  tf_tensor_unref(res[0]);
  for (int i = 0; i < 5; i++) {
    ck_assert_msg(ran(&r, chain[i]), "live node '%s' did not run", chain[i]);
  }
  ck_assert(!ran(&r, "tr"));
  run_ok(&r, &read, 1, res);
  check_f32(res[0], after, 3);
  tf_tensor_unref(res[0]);
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* ---- cond ---------------------------------------------------------------- */

/* true: (a * b + 1, 10), false: (a - b, 20); the int32 outputs are Consts,
 * which the builder must tie to the branch. */
static tf_code true_two(tf_graph *g, const tf_output *in, int n_in,
                        tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Add", op2(g, "Mul", in[0], in[1]), f32c(g, 1));
  out[1] = i32c(g, 10);
  return TF_OK;
}

static tf_code false_two(tf_graph *g, const tf_output *in, int n_in,
                         tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Sub", in[0], in[1]);
  out[1] = i32c(g, 20);
  return TF_OK;
}

START_TEST(test_cond_both_branches) {
  tf_graph *g = tf_graph_new();
  tf_output in[2] = {ph(g, "a", TF_FLOAT32, tf_shape_of(1, 2)),
                     ph(g, "b", TF_FLOAT32, tf_shape_of(1, 2))};
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_scalar());
  tf_output out[2];
  ck_assert_msg(tf_cond(g, NULL, p, in, 2, true_two, false_two, NULL, out, 2,
                        &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(tf_node_op(out[0].node), "Merge");
  ck_assert_int_eq(tf_node_output_type(out[1].node, 0), TF_INT32);
  const tf_shape *s0 = tf_node_output_shape(out[0].node, 0);
  ck_assert(tf_shape_equal(s0, &(tf_shape){1, {2}}));
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  runner r;
  runner_init(&r, g, 4);
  float av[2] = {1.25f, -3}, bv[2] = {2, 0.5f};
  for (int rep = 0; rep < 20; rep++) {
    bool pv = rep % 2;
    feed(&r, "a", tf_tensor_vec_f32(2, av));
    feed(&r, "b", tf_tensor_vec_f32(2, bv));
    feed(&r, "p", tf_tensor_scalar_bool(pv));
    tf_tensor *res[2];
    run_ok(&r, out, 2, res);
    float want[2];
    for (int i = 0; i < 2; i++) {
      want[i] = pv ? av[i] * bv[i] + 1 : av[i] - bv[i];
    }
    check_f32(res[0], want, 2);
    ck_assert_int_eq(get_i(res[1]), pv ? 10 : 20);
    tt_free(res, 2);
  }
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* Branches that use an outer tensor directly (passed through arg) instead
 * of an input: the builder must still keep the untaken value out of the
 * Merge. */
static tf_code true_outer(tf_graph *g, const tf_output *in, int n_in,
                          tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = *(const tf_output *)arg;
  return TF_OK;
}

static tf_code false_outer(tf_graph *g, const tf_output *in, int n_in,
                           tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op1(g, "Neg", *(const tf_output *)arg);
  return TF_OK;
}

START_TEST(test_cond_outer_tensors) {
  tf_graph *g = tf_graph_new();
  tf_output y = ph(g, "y", TF_INT64, tf_shape_scalar());
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_scalar());
  tf_output out;
  ck_assert_msg(tf_cond(g, "c", p, NULL, 0, true_outer, false_outer, &y, &out,
                        1, &st) == TF_OK, "%s", st.msg);
  runner r;
  runner_init(&r, g, 4);
  for (int rep = 0; rep < 40; rep++) {
    bool pv = rep % 2;
    feed(&r, "y", tf_tensor_scalar_i64(rep + 5));
    feed(&r, "p", tf_tensor_scalar_bool(pv));
    tf_tensor *res;
    run_ok(&r, &out, 1, &res);
    ck_assert_int_eq(get_i(res), pv ? rep + 5 : -(rep + 5));
    tf_tensor_unref(res);
  }
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* p1 ? (p2 ? a + b : 100) : a * b, the inner cond built inside the outer
 * true branch. With direct_pred the inner pred is the outer tensor p2
 * itself rather than the outer branch's input. */
typedef struct nest_arg {
  bool direct_pred;
  tf_output p2;
} nest_arg;

static tf_code in_true(tf_graph *g, const tf_output *in, int n_in,
                       tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Add", in[0], in[1]);
  return TF_OK;
}

static tf_code in_false(tf_graph *g, const tf_output *in, int n_in,
                        tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = i64c(g, 100);
  return TF_OK;
}

static tf_code out_true(tf_graph *g, const tf_output *in, int n_in,
                        tf_output *out, int n_out, void *arg, tf_status *s) {
  const nest_arg *a = arg;
  tf_output p2 = a->direct_pred ? a->p2 : in[2];
  return tf_cond(g, "inner", p2, in, 2, in_true, in_false, NULL, out, 1, s);
}

static tf_code out_false(tf_graph *g, const tf_output *in, int n_in,
                         tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Mul", in[0], in[1]);
  return TF_OK;
}

START_TEST(test_nested_cond) {
  for (int direct = 0; direct < 2; direct++) {
    tf_graph *g = tf_graph_new();
    tf_output in[3] = {ph(g, "a", TF_INT64, tf_shape_scalar()),
                       ph(g, "b", TF_INT64, tf_shape_scalar()),
                       ph(g, "p2", TF_BOOL, tf_shape_scalar())};
    tf_output p1 = ph(g, "p1", TF_BOOL, tf_shape_scalar());
    nest_arg na = {direct, in[2]};
    tf_output out;
    ck_assert_msg(tf_cond(g, "outer", p1, in, 3, out_true, out_false, &na,
                          &out, 1, &st) == TF_OK, "%s", st.msg);
    ck_assert_ptr_nonnull(tf_graph_find(g, "outer/inner/switch_t"));
    runner r;
    runner_init(&r, g, 2);
    for (int c = 0; c < 8; c++) {
      bool v1 = c & 1, v2 = (c >> 1) & 1;
      feed(&r, "a", tf_tensor_scalar_i64(7));
      feed(&r, "b", tf_tensor_scalar_i64(-3));
      feed(&r, "p2", tf_tensor_scalar_bool(v2));
      feed(&r, "p1", tf_tensor_scalar_bool(v1));
      tf_tensor *res;
      run_ok(&r, &out, 1, &res);
      ck_assert_int_eq(get_i(res), v1 ? (v2 ? 4 : 100) : -21);
      tf_tensor_unref(res);
    }
    runner_fini(&r);
    tf_graph_free(g);
  }
}
END_TEST

/* ---- while loops --------------------------------------------------------- */

typedef struct sum_arg {
  int64_t limit;
  int par;
} sum_arg;

static tf_code sum_cond(tf_graph *g, const tf_output *v, int n,
                        const tf_output *inv, int n_inv, tf_output *pred,
                        void *arg, tf_status *s) {
  *pred = op2(g, "Less", v[0], i64c(g, ((const sum_arg *)arg)->limit));
  return TF_OK;
}

/* (i, s, f) -> (i + 1, s + i, f * 0.999 + float(i)) */
static tf_code sum_body(tf_graph *g, const tf_output *v, int n,
                        const tf_output *inv, int n_inv, tf_output *next,
                        void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i64c(g, 1));
  next[1] = op2(g, "Add", v[1], v[0]);
  next[2] = op2(g, "Add", op2(g, "Mul", v[2], f32c(g, 0.999f)),
                cast(g, v[0], TF_FLOAT32));
  return TF_OK;
}

static void sum_loop(tf_graph *g, const sum_arg *a, tf_output *out) {
  tf_output vars[3] = {i64c(g, 0), i64c(g, 0), f32c(g, 0)};
  ck_assert_msg(tf_while_loop(g, NULL, vars, 3, NULL, 0, sum_cond, sum_body,
                              (void *)a, a->par, out, &st) == TF_OK,
                "%s", st.msg);
}

static void check_sum(tf_tensor **res, int64_t limit) {
  int64_t s = 0;
  float f = 0;
  for (int64_t i = 0; i < limit; i++) {
    s += i;
    f = f * 0.999f + (float)i;
  }
  ck_assert_int_eq(get_i(res[0]), limit);
  ck_assert_int_eq(get_i(res[1]), s);
  ck_assert_msg(*(float *)res[2]->data == f, "f: got %.9g, want %.9g",
                *(float *)res[2]->data, f);
}

START_TEST(test_while_10000) {
  tf_graph *g = tf_graph_new();
  sum_arg a = {10000, 0};
  tf_output out[3];
  sum_loop(g, &a, out);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  runner r;
  runner_init(&r, g, 2);
  tf_tensor *res[3];
  int64_t t0 = tf__now_ns();
  run_ok(&r, out, 3, res);
  int64_t t1 = tf__now_ns();
  printf("while_10000: %.1f ms\n", (double)(t1 - t0) / 1e6);
  check_sum(res, 10000);
  ck_assert_int_eq(get_i(res[1]), 49995000);
  tt_free(res, 3);
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* Outer loop over i < outer whose body runs two inner loops: j < 40 counting
 * (c += 1) and k < i summing (t += k), i being an inner invariant. */
static tf_code lt_inv(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *pred,
                      void *arg, tf_status *s) {
  *pred = op2(g, "Less", v[0], inv[0]);
  return TF_OK;
}

static tf_code count_body(tf_graph *g, const tf_output *v, int n,
                          const tf_output *inv, int n_inv, tf_output *next,
                          void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = op2(g, "Add", v[1], i32c(g, 1));
  return TF_OK;
}

static tf_code tri_body(tf_graph *g, const tf_output *v, int n,
                        const tf_output *inv, int n_inv, tf_output *next,
                        void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = op2(g, "Add", v[1], v[0]);
  return TF_OK;
}

static tf_code outer_body(tf_graph *g, const tf_output *v, int n,
                          const tf_output *inv, int n_inv, tf_output *next,
                          void *arg, tf_status *s) {
  int par = *(const int *)arg;
  tf_output in1[2] = {i32c(g, 0), v[1]}, out1[2];
  tf_output lim = i32c(g, 40);
  TF_TRY(tf_while_loop(g, "count", in1, 2, &lim, 1, lt_inv, count_body, NULL,
                       par, out1, s));
  tf_output in2[2] = {i32c(g, 0), v[2]}, out2[2];
  TF_TRY(tf_while_loop(g, "tri", in2, 2, &v[0], 1, lt_inv, tri_body, NULL,
                       par, out2, s));
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = out1[1];
  next[2] = out2[1];
  return TF_OK;
}

static void nested_loop(tf_graph *g, int *par, int outer, tf_output *out) {
  tf_output vars[3] = {i32c(g, 0), i32c(g, 0), i32c(g, 0)};
  tf_output lim = i32c(g, outer);
  ck_assert_msg(tf_while_loop(g, "outer", vars, 3, &lim, 1, lt_inv, outer_body,
                              par, *par, out, &st) == TF_OK, "%s", st.msg);
}

static void check_nested(tf_tensor **res, int outer) {
  int32_t c = 0, t = 0;
  for (int i = 0; i < outer; i++) {
    for (int j = 0; j < 40; j++) {
      c++;
    }
    for (int k = 0; k < i; k++) {
      t += k;
    }
  }
  ck_assert_int_eq(get_i(res[0]), outer);
  ck_assert_int_eq(get_i(res[1]), c);
  ck_assert_int_eq(get_i(res[2]), t);
}

START_TEST(test_nested_loops) {
  tf_graph *g = tf_graph_new();
  int par = 10;
  tf_output out[3];
  nested_loop(g, &par, 50, out);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  runner r;
  runner_init(&r, g, 2);
  tf_tensor *res[3];
  run_ok(&r, out, 3, res);
  check_nested(res, 50);
  ck_assert_int_eq(get_i(res[1]), 2000);
  tt_free(res, 3);
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* The same results for parallel_iterations 1, 2, 10, 32 and 1, 2, 4
 * inter-op threads. */
START_TEST(test_parallel_iterations_and_threads) {
  int pars[4] = {1, 2, 10, 32}, threads[3] = {1, 2, 4};
  for (int pi = 0; pi < 4; pi++) {
    tf_graph *g = tf_graph_new();
    sum_arg a = {300, pars[pi]};
    tf_output out[6];
    sum_loop(g, &a, out);
    nested_loop(g, &pars[pi], 12, out + 3);
    for (int ti = 0; ti < 3; ti++) {
      runner r;
      runner_init(&r, g, threads[ti]);
      tf_tensor *res[6];
      run_ok(&r, out, 6, res);
      check_sum(res, 300);
      check_nested(res + 3, 12);
      tt_free(res, 6);
      runner_fini(&r);
    }
    tf_graph_free(g);
  }
}
END_TEST

/* v = v @ M for 25 iterations, M a loop invariant. */
static tf_code lt25(tf_graph *g, const tf_output *v, int n,
                    const tf_output *inv, int n_inv, tf_output *pred,
                    void *arg, tf_status *s) {
  *pred = op2(g, "Less", v[1], i32c(g, 25));
  return TF_OK;
}

static tf_code matmul_body(tf_graph *g, const tf_output *v, int n,
                           const tf_output *inv, int n_inv, tf_output *next,
                           void *arg, tf_status *s) {
  next[0] = op2(g, "MatMul", v[0], inv[0]);
  next[1] = op2(g, "Add", v[1], i32c(g, 1));
  return TF_OK;
}

START_TEST(test_invariant_matmul) {
  tt_rng_reseed(tt_seed() ^ 0x3a7);
  tf_graph *g = tf_graph_new();
  tf_tensor *m = tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 4), -0.6, 0.6);
  tf_tensor *v0 = tt_rand(TF_FLOAT32, tf_shape_of(2, 1, 4), -1, 1);
  float mv[16], vv[4];
  memcpy(mv, m->data, sizeof mv);
  memcpy(vv, v0->data, sizeof vv);
  tf_output inv = cst(g, m);
  tf_output vars[2] = {cst(g, v0), i32c(g, 0)}, out[2];
  ck_assert_msg(tf_while_loop(g, "mm", vars, 2, &inv, 1, lt25, matmul_body,
                              NULL, 4, out, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_shape_equal(tf_node_output_shape(out[0].node, 0),
                           &(tf_shape){2, {1, 4}}));
  for (int it = 0; it < 25; it++) {
    float nv[4] = {0};
    for (int j = 0; j < 4; j++) {
      for (int k = 0; k < 4; k++) {
        nv[j] += vv[k] * mv[k * 4 + j];
      }
    }
    memcpy(vv, nv, sizeof vv);
  }
  runner r;
  runner_init(&r, g, 2);
  tf_tensor *res[2];
  run_ok(&r, out, 2, res);
  tf_tensor *want = tf_tensor_vec_f32(4, vv), *wview;
  ck_assert_int_eq(tf_tensor_view(want, &(tf_shape){2, {1, 4}}, &wview, &st), TF_OK);
  tt_assert_close(res[0], wview, 1e-6, 1e-4);
  ck_assert_int_eq(get_i(res[1]), 25);
  tf_tensor_unref(want);
  tf_tensor_unref(wview);
  tt_free(res, 2);
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* Collatz: while (n != 1) { n = n % 2 == 0 ? n / 2 : 3n + 1; steps++; } */
static tf_code ne1(tf_graph *g, const tf_output *v, int n,
                   const tf_output *inv, int n_inv, tf_output *pred,
                   void *arg, tf_status *s) {
  *pred = op2(g, "NotEqual", v[0], i64c(g, 1));
  return TF_OK;
}

static tf_code halve(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "FloorDiv", in[0], i64c(g, 2));
  return TF_OK;
}

static tf_code triple(tf_graph *g, const tf_output *in, int n_in,
                      tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Add", op2(g, "Mul", in[0], i64c(g, 3)), i64c(g, 1));
  return TF_OK;
}

static tf_code collatz_body(tf_graph *g, const tf_output *v, int n,
                            const tf_output *inv, int n_inv, tf_output *next,
                            void *arg, tf_status *s) {
  tf_output even = op2(g, "Equal", op2(g, "Mod", v[0], i64c(g, 2)), i64c(g, 0));
  TF_TRY(tf_cond(g, NULL, even, v, 1, halve, triple, NULL, next, 1, s));
  next[1] = op2(g, "Add", v[1], i64c(g, 1));
  return TF_OK;
}

START_TEST(test_cond_in_loop) {
  tf_graph *g = tf_graph_new();
  tf_output n0 = ph(g, "n", TF_INT64, tf_shape_scalar());
  tf_output vars[2] = {n0, i64c(g, 0)}, out[2];
  ck_assert_msg(tf_while_loop(g, "collatz", vars, 2, NULL, 0, ne1,
                              collatz_body, NULL, 0, out, &st) == TF_OK,
                "%s", st.msg);
  runner r;
  runner_init(&r, g, 4);
  int64_t starts[3] = {27, 1, 97};
  for (int c = 0; c < 3; c++) {
    int64_t n = starts[c], steps = 0;
    while (n != 1) {
      n = n % 2 == 0 ? n / 2 : 3 * n + 1;
      steps++;
    }
    feed(&r, "n", tf_tensor_scalar_i64(starts[c]));
    tf_tensor *res[2];
    run_ok(&r, out, 2, res);
    ck_assert_int_eq(get_i(res[0]), 1);
    ck_assert_int_eq(get_i(res[1]), steps);
    tt_free(res, 2);
  }
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* p ? sum(0..n-1) by a loop : -n; the loop sits in the true branch and
 * must die quietly when the branch is not taken. */
static tf_code sum_to_body(tf_graph *g, const tf_output *v, int n,
                           const tf_output *inv, int n_inv, tf_output *next,
                           void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i64c(g, 1));
  next[1] = op2(g, "Add", v[1], v[0]);
  return TF_OK;
}

static tf_code loop_branch(tf_graph *g, const tf_output *in, int n_in,
                           tf_output *out, int n_out, void *arg, tf_status *s) {
  tf_output vars[2] = {i64c(g, 0), i64c(g, 0)}, res[2];
  TF_TRY(tf_while_loop(g, NULL, vars, 2, in, 1, lt_inv, sum_to_body, NULL, 0,
                       res, s));
  out[0] = res[1];
  return TF_OK;
}

static tf_code neg_branch(tf_graph *g, const tf_output *in, int n_in,
                          tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op1(g, "Neg", in[0]);
  return TF_OK;
}

START_TEST(test_loop_in_untaken_branch) {
  tf_graph *g = tf_graph_new();
  tf_output n = ph(g, "n", TF_INT64, tf_shape_scalar());
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_scalar());
  tf_output out;
  ck_assert_msg(tf_cond(g, NULL, p, &n, 1, loop_branch, neg_branch, NULL, &out,
                        1, &st) == TF_OK, "%s", st.msg);
  runner r;
  runner_init(&r, g, 2);
  for (int c = 0; c < 4; c++) {
    bool pv = c % 2;
    feed(&r, "n", tf_tensor_scalar_i64(100));
    feed(&r, "p", tf_tensor_scalar_bool(pv));
    tf_tensor *res;
    run_ok(&r, &out, 1, &res);
    ck_assert_int_eq(get_i(res), pv ? 4950 : -100);
    tf_tensor_unref(res);
    ck_assert(ran(&r, "cond/while/Merge") == pv);
  }
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* ---- structure ----------------------------------------------------------- */

static const char *attr_s(const tf_node *n, const char *name) {
  const char *v = NULL;
  ck_assert_int_eq(tf_node_attr_get_string(n, name, &v, &st), TF_OK);
  return v;
}

static void check_tied(tf_graph *g, const char *name, const char *pivot) {
  tf_node *n = tf_graph_find(g, name);
  ck_assert_msg(n != NULL, "no node %s", name);
  ck_assert_int_eq(tf_node_num_control_inputs(n), 1);
  ck_assert_str_eq(tf_node_name(tf_node_control_input(n, 0)), pivot);
}

/* Runs a copy of test_structure's graph made from its defs (as a remote
 * client would send it). */
static void run_copy(tf_graph *g, const tf_output *co) {
  int n = tf_graph_num_nodes(g);
  tf_node_def *defs = calloc((size_t)n, sizeof *defs);
  for (int i = 0; i < n; i++) {
    tf_node_to_def(tf_graph_node(g, i), &defs[i]);
  }
  tf_graph *g2 = tf_graph_new();
  ck_assert_msg(tf_graph_import(g2, defs, n, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < n; i++) {
    tf_node_def_fini(&defs[i]);
  }
  free(defs);
  runner r;
  runner_init(&r, g2, 2);
  tf_output fetch[4] = {{tf_graph_find(g2, "while_1/Exit_1"), 0},
                        {tf_graph_find(g2, "w/Exit_3"), 0},
                        {tf_graph_find(g2, tf_node_name(co[0].node)), 0},
                        {tf_graph_find(g2, tf_node_name(co[1].node)), 0}};
  feed(&r, "p", tf_tensor_scalar_bool(false));
  tf_tensor *res[4];
  run_ok(&r, fetch, 4, res);
  ck_assert_int_eq(get_i(res[0]), 45);
  ck_assert_int_eq(get_i(res[1]), 3);
  ck_assert_float_eq(*(float *)res[2]->data, -1.0f);
  ck_assert_int_eq(get_i(res[3]), 20);
  tt_free(res, 4);
  runner_fini(&r);
  tf_graph_free(g2);
}

START_TEST(test_structure) {
  tf_graph *g = tf_graph_new();
  sum_arg a = {10, 0};
  tf_output out1[3], out2[3];
  sum_loop(g, &a, out1);
  sum_loop(g, &a, out2);
  ck_assert_str_eq(tf_node_name(out1[0].node), "while/Exit");
  ck_assert_str_eq(tf_node_name(out2[0].node), "while_1/Exit");
  tf_node *e = tf_graph_find(g, "while/Enter");
  ck_assert_str_eq(attr_s(e, "frame_name"), "while/while_context");
  ck_assert_str_eq(attr_s(tf_graph_find(g, "while_1/Enter"), "frame_name"),
                   "while_1/while_context");
  int64_t par;
  bool is_const = true;
  tf_node_attr_get_int(e, "parallel_iterations", &par, &st);
  tf_node_attr_get_bool(e, "is_constant", &is_const, &st);
  ck_assert(par == 10 && !is_const);
  tf_node *m = tf_graph_find(g, "while/Merge");
  ck_assert_str_eq(tf_node_op(tf_node_input(m, 1).node), "NextIteration");
  ck_assert_str_eq(tf_node_op(tf_node_input(m, 0).node), "Enter");
  ck_assert_str_eq(tf_node_op(tf_graph_find(g, "while/LoopCond")), "LoopCond");
  check_tied(g, "while/Const", "while/Merge");      /* the cond's limit */
  check_tied(g, "while/Const_1", "while/Identity"); /* the body's 1 */
  /* Scopes given as "name/" are reused, yet each loop has its own frame. */
  tf_output v = i32c(g, 0), lim = i32c(g, 3), o1[2], o2[2];
  tf_output vars[2] = {v, v};
  ck_assert_int_eq(tf_while_loop(g, "w/", vars, 2, &lim, 1, lt_inv, count_body,
                                 NULL, 2, o1, &st), TF_OK);
  ck_assert_int_eq(tf_while_loop(g, "w/", vars, 2, &lim, 1, lt_inv, count_body,
                                 NULL, 2, o2, &st), TF_OK);
  ck_assert_str_ne(attr_s(tf_graph_find(g, "w/Enter"), "frame_name"),
                   attr_s(tf_graph_find(g, "w/Enter_3"), "frame_name"));
  tf_node *ie = tf_graph_find(g, "w/Enter_2"); /* the invariant */
  tf_node_attr_get_bool(ie, "is_constant", &is_const, &st);
  tf_node_attr_get_int(ie, "parallel_iterations", &par, &st);
  ck_assert(is_const && par == 2);
  /* cond: pivots named after TF's, branch constants tied to them. */
  tf_output in[2] = {f32c(g, 2), f32c(g, 3)}, co[2];
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_scalar());
  ck_assert_int_eq(tf_cond(g, NULL, p, in, 2, true_two, false_two, NULL, co, 2,
                           &st), TF_OK);
  check_tied(g, "cond/Const", "cond/switch_t");
  check_tied(g, "cond/Const_2", "cond/switch_f");
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  run_copy(g, co);
  tf_graph_free(g);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

/* What the error functions do, by mode. */
enum { BAD_DTYPE, BAD_SHAPE, COND_INT, COND_VEC, COND_FAILS, BODY_OUTER,
       BODY_UNSET };

typedef struct bad_arg {
  int mode;
  tf_output outer;
} bad_arg;

static tf_code bad_cond(tf_graph *g, const tf_output *v, int n,
                        const tf_output *inv, int n_inv, tf_output *pred,
                        void *arg, tf_status *s) {
  const bad_arg *a = arg;
  switch (a->mode) {
    case COND_INT:
      *pred = op2(g, "Add", v[0], v[0]);
      return TF_OK;
    case COND_VEC:
      *pred = cst(g, tt_rand(TF_BOOL, tf_shape_of(1, 2), 0, 1));
      return TF_OK;
    case COND_FAILS:
      return tf_status_set(s, TF_UNIMPLEMENTED, "my condition cannot be built");
    default:
      *pred = op2(g, "Less", v[0], i32c(g, 3));
      return TF_OK;
  }
}

static tf_code bad_body(tf_graph *g, const tf_output *v, int n,
                        const tf_output *inv, int n_inv, tf_output *next,
                        void *arg, tf_status *s) {
  const bad_arg *a = arg;
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = v[1];
  if (a->mode == BAD_DTYPE) {
    next[0] = cast(g, next[0], TF_INT64);
  } else if (a->mode == BAD_SHAPE) {
    next[1] = cst(g, tf_tensor_vec_f32(3, (float[]){1, 2, 3}));
  } else if (a->mode == BODY_OUTER) {
    next[1] = a->outer;
  } else if (a->mode == BODY_UNSET) {
    next[1] = (tf_output){NULL, 0};
  }
  return TF_OK;
}

/* g as YAML: names, ops, inputs (control inputs too), attrs. */
static char *yaml_of(const tf_graph *g) {
  char *text = NULL;
  size_t len = 0;
  ck_assert_msg(tf_graph_to_yaml(g, &text, &len, &st) == TF_OK, "%s", st.msg);
  return text;
}

static void loop_fails(tf_graph *g, int mode, tf_code code, const char *msg) {
  int before = tf_graph_num_nodes(g);
  char *yaml = yaml_of(g);
  tf_output vars[2] = {{tf_graph_find(g, "i0"), 0}, {tf_graph_find(g, "v0"), 0}};
  bad_arg a = {mode, vars[1]};
  tf_output out[2] = {{NULL, 0}, {NULL, 0}};
  tf_status_init(&st);
  ck_assert_int_eq(tf_while_loop(g, "bad", vars, 2, NULL, 0, bad_cond, bad_body,
                                 &a, 0, out, &st), code);
  ASSERT_HAS(st.msg, msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), before); /* nothing left behind */
  char *after = yaml_of(g);
  ck_assert_str_eq(after, yaml);
  ck_assert_ptr_null(out[0].node);
  free(yaml);
  free(after);
}

static tf_code unset_branch(tf_graph *g, const tf_output *in, int n_in,
                            tf_output *out, int n_out, void *arg, tf_status *s) {
  return TF_OK;
}

static tf_code int_branch(tf_graph *g, const tf_output *in, int n_in,
                          tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = f32c(g, 1);
  out[1] = i32c(g, 2);
  return TF_OK;
}

static tf_code int_branch1(tf_graph *g, const tf_output *in, int n_in,
                           tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Add", in[0], i32c(g, 2));
  return TF_OK;
}

static tf_code float_branch(tf_graph *g, const tf_output *in, int n_in,
                            tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = f32c(g, 1);
  out[1] = f32c(g, 2);
  return TF_OK;
}

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_output i0 = {node(g, "Identity", "i0", (tf_output[]){i32c(g, 0)}, 1), 0};
  tf_output v0 = {node(g, "Identity", "v0",
                       (tf_output[]){cst(g, tf_tensor_vec_f32(2, (float[]){1, 2}))}, 1), 0};
  loop_fails(g, BAD_DTYPE, TF_INVALID_ARGUMENT,
             "bad: loop variable 0 has dtype int32 before the loop but int64 "
             "after one iteration");
  loop_fails(g, BAD_SHAPE, TF_INVALID_ARGUMENT,
             "loop variable 1 has shape [2] before the loop but [3] after one "
             "iteration");
  loop_fails(g, COND_INT, TF_INVALID_ARGUMENT, "must be a scalar bool, got int32[]");
  loop_fails(g, COND_VEC, TF_INVALID_ARGUMENT, "must be a scalar bool, got bool[2]");
  loop_fails(g, COND_FAILS, TF_UNIMPLEMENTED, "my condition cannot be built");
  loop_fails(g, BODY_OUTER, TF_INVALID_ARGUMENT,
             "the body's result 1 'v0' was built outside the loop");
  loop_fails(g, BODY_UNSET, TF_INVALID_ARGUMENT, "body result 1 is not an output");
  tf_output out[2];
  ck_assert_int_eq(tf_while_loop(g, NULL, &i0, 0, NULL, 0, bad_cond, bad_body,
                                 NULL, 0, out, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "at least one loop variable");
  ck_assert_int_eq(tf_while_loop(g, NULL, (tf_output[]){i0, v0}, 2, NULL, 0,
                                 bad_cond, bad_body, NULL, -1, out, &st),
                   TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "parallel_iterations must be >= 1");
  /* cond */
  tf_output p = {node(g, "Less", "p", (tf_output[]){i0, i32c(g, 1)}, 2), 0};
  int before = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_cond(g, NULL, p, NULL, 0, int_branch, float_branch, NULL,
                           out, 2, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "output 1 is int32 in the true branch but float32 in the "
                     "false branch");
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  ck_assert_int_eq(tf_cond(g, NULL, v0, NULL, 0, int_branch, float_branch, NULL,
                           out, 2, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "pred 'v0:0' must be a scalar bool, got float32[2]");
  ck_assert_int_eq(tf_cond(g, NULL, p, NULL, 0, unset_branch, float_branch,
                           NULL, out, 2, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "true branch output 0 is not an output");
  ck_assert_int_eq(tf_cond(g, NULL, p, NULL, 0, int_branch, float_branch, NULL,
                           out, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "at least one output");
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  /* The graph is still whole: a good loop builds and runs, in a session
   * made before the loop was added. */
  runner r;
  runner_init(&r, g, 1);
  tf_output lim = i32c(g, 4), vars[2] = {i0, i0};
  ck_assert_int_eq(tf_while_loop(g, "bad", vars, 2, &lim, 1, lt_inv, count_body,
                                 NULL, 0, out, &st), TF_OK);
  /* every failed "bad" loop gave its scope back */
  ck_assert_str_eq(tf_node_name(out[0].node), "bad/Exit");
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  tf_tensor *res[2];
  run_ok(&r, out, 2, res);
  ck_assert_int_eq(get_i(res[0]), 4);
  ck_assert_int_eq(get_i(res[1]), 4);
  tt_free(res, 2);
  runner_fini(&r);
  tf_graph_free(g);
}
END_TEST

/* ---- rollback in the middle of a build ---------------------------------- */

/* Builds a few nodes and a nested cond (which succeeds), then fails. */
static tf_code failing_branch(tf_graph *g, const tf_output *in, int n_in,
                              tf_output *out, int n_out, void *arg, tf_status *s) {
  tf_output x = op2(g, "Add", in[0], i32c(g, 1));
  tf_output p = op2(g, "Less", x, i32c(g, 5)), y;
  TF_TRY(tf_cond(g, NULL, p, &x, 1, int_branch1, int_branch1, NULL, &y, 1, s));
  out[0] = op2(g, "Mul", y, x);
  return tf_status_set(s, TF_UNIMPLEMENTED, "branch gives up after %s",
                       tf_node_name(out[0].node));
}

static tf_code failing_body(tf_graph *g, const tf_output *v, int n,
                            const tf_output *inv, int n_inv, tf_output *next,
                            void *arg, tf_status *s) {
  return failing_branch(g, v, n, next, n, arg, s);
}

START_TEST(test_rollback_mid_build) {
  tf_graph *g = tf_graph_new();
  tf_output x = ph(g, "x", TF_INT32, tf_shape_scalar());
  tf_output p = op2(g, "Less", x, i32c(g, 3)), out[2];
  tf_output lim = i32c(g, 4), vars[2] = {x, x};
  char *before = yaml_of(g);
  ck_assert_int_eq(tf_cond(g, NULL, p, &x, 1, int_branch1, failing_branch, NULL,
                           out, 1, &st), TF_UNIMPLEMENTED);
  ASSERT_HAS(st.msg, "branch gives up after cond/Mul");
  char *after = yaml_of(g);
  ck_assert_str_eq(after, before);
  free(after);
  ck_assert_int_eq(tf_while_loop(g, NULL, vars, 2, &lim, 1, lt_inv, failing_body,
                                 NULL, 0, out, &st), TF_UNIMPLEMENTED);
  ASSERT_HAS(st.msg, "branch gives up after while/Mul");
  after = yaml_of(g);
  ck_assert_str_eq(after, before);
  free(after);
  /* the names are free again: the next cond and loop get "cond" and "while" */
  ck_assert_int_eq(tf_cond(g, NULL, p, &x, 1, int_branch1, int_branch1, NULL,
                           out, 1, &st), TF_OK);
  ck_assert_str_eq(tf_node_name(out[0].node), "cond/Merge");
  ck_assert_int_eq(tf_while_loop(g, NULL, vars, 2, &lim, 1, lt_inv, count_body,
                                 NULL, 0, out, &st), TF_OK);
  ck_assert_str_eq(tf_node_name(out[0].node), "while/Exit");
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  runner r;
  runner_init(&r, g, 1);
  feed(&r, "x", tf_tensor_scalar_i32(1));
  tf_tensor *res[2];
  run_ok(&r, out, 2, res);
  ck_assert_int_eq(get_i(res[0]), 4);
  ck_assert_int_eq(get_i(res[1]), 4);
  tt_free(res, 2);
  runner_fini(&r);
  free(before);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("control_flow");
  TCase *tc = tcase_create("cond");
  tcase_add_test(tc, test_dead_branch_chain);
  tcase_add_test(tc, test_cond_both_branches);
  tcase_add_test(tc, test_cond_outer_tensors);
  tcase_add_test(tc, test_nested_cond);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("while");
  tcase_set_timeout(tl, 60);
  tcase_add_test(tl, test_while_10000);
  tcase_add_test(tl, test_nested_loops);
  tcase_add_test(tl, test_parallel_iterations_and_threads);
  tcase_add_test(tl, test_invariant_matmul);
  tcase_add_test(tl, test_cond_in_loop);
  tcase_add_test(tl, test_loop_in_untaken_branch);
  suite_add_tcase(s, tl);
  TCase *tb = tcase_create("build");
  tcase_add_test(tb, test_structure);
  tcase_add_test(tb, test_errors);
  tcase_add_test(tb, test_rollback_mid_build);
  suite_add_tcase(s, tb);
  return s;
}
