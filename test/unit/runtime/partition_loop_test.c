/* partition_loop_test.c: while loops split over devices by
 * tf_partition_graph. A loop whose body spans three devices (a MatMul with
 * a loop invariant, a cond inside the loop with its branches on two
 * devices, a nested loop) is partitioned; every partition gets a control
 * loop per frame it takes part in, and the partitions, run by one executor
 * each in its own thread over one rendezvous, fetch bitwise what a local
 * session fetches from the whole graph, for parallel_iterations 1 and 4
 * and two different inputs; the same for a split loop inside a cond, taken
 * in one step and untaken (dead on every device) in the next, and a split
 * loop in the condition of a split loop (live in its last iteration); and
 * the gradients of the split loop (its gradient loop split too). Also:
 * what cannot be split is refused with
 * the edge and the frame named. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/algorithm.h"
#include "lib/rendezvous/rendezvous_mgr.h"
#include "lib/runtime/partition.h"
#include "test/unit/core/exec/exec_testlib.h"
#include "tf/control_flow.h"
#include "tf/gradients.h"
#include "tf/session.h"

#define TASK "/job:worker/replica:0/task:0"
#define D0 TASK "/device:CPU:0"
#define D1 TASK "/device:CPU:1"
#define D2 TASK "/device:CPU:2"
#define NDEV 3
#define NFETCH 3
#define TRIPS 6

static const tf_place_device devs3[] = {{D0, "CPU"}, {D1, "CPU"}, {D2, "CPU"}};
static const uint64_t incs[] = {0x1111, 0xdeadbeefcafeULL, 0x42};

/* op on in[0..n) requested on device dev (NULL: none). */
static tf_node *on(tf_graph *g, const char *op, const char *name, const tf_output *in, int n,
                   const char *dev) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  if (dev != NULL) {
    tf_node_set_device(b, dev);
  }
  tf_status st;
  tf_node *v = tf_node_finish(b, &st);
  ck_assert_msg(v != NULL, "%s: %s", name, st.msg);
  return v;
}

static tf_code br_true(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                       void *arg, tf_status *st) {
  out[0] = o0(on(g, "Add", "plus", in, 2, D1));
  return TF_OK;
}

static tf_code br_false(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                        void *arg, tf_status *st) {
  out[0] = o0(on(g, "Sub", "minus", in, 2, D2));
  return TF_OK;
}

static tf_code inner_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                          tf_output *pred, void *arg, tf_status *st) {
  tf_node *lim = tt_const(g, "lim", tf_tensor_scalar_i32(2));
  *pred = o0(on(g, "Less", "less", (tf_output[]){v[0], o0(lim)}, 2, D2));
  return TF_OK;
}

static tf_code inner_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv,
                          int ni, tf_output *next, void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  next[0] = o0(on(g, "Add", "inc", (tf_output[]){v[0], o0(one)}, 2, D0));
  tf_node *h = tt_const(g, "half", tf_tensor_scalar_f32(0.5f));
  next[1] = o0(on(g, "Mul", "halve", (tf_output[]){v[1], o0(h)}, 2, D1));
  return TF_OK;
}

static tf_code outer_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                          tf_output *pred, void *arg, tf_status *st) {
  tf_node *lim = tt_const(g, "lim", tf_tensor_scalar_i32(TRIPS));
  *pred = o0(on(g, "Less", "less", (tf_output[]){v[0], o0(lim)}, 2, D0));
  return TF_OK;
}

/* i += 1; t = tanh(v w) (MatMul on d1, Tanh on d2); c = i < 3 ? t + v
 * (d1) : t - v (d2); v = c halved twice by a nested loop (d1, cond d2). */
static tf_code outer_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv,
                          int ni, tf_output *next, void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  next[0] = o0(on(g, "Add", "inc", (tf_output[]){v[0], o0(one)}, 2, D0));
  tf_node *m = on(g, "MatMul", "mm", (tf_output[]){v[1], inv[0]}, 2, D1);
  tf_node *t = on(g, "Tanh", "tanh", (tf_output[]){o0(m)}, 1, D2);
  tf_node *three = tt_const(g, "three", tf_tensor_scalar_i32(3));
  tf_node *p = on(g, "Less", "early", (tf_output[]){v[0], o0(three)}, 2, D0);
  tf_output c;
  TF_TRY(tf_cond(g, "pick", o0(p), (tf_output[]){o0(t), v[1]}, 2, br_true, br_false, NULL, &c,
                 1, st));
  tf_node *j0 = tt_const(g, "j0", tf_tensor_scalar_i32(0));
  tf_output out[2];
  TF_TRY(tf_while_loop(g, "inner", (tf_output[]){o0(j0), c}, 2, NULL, 0, inner_cond, inner_body,
                       NULL, 0, out, st));
  next[1] = out[1];
  return TF_OK;
}

/* x: an _Arg when partitioned, else a Placeholder. */
static tf_node *input(tf_graph *g, bool partitioned) {
  tt_rng_reseed(tt_seed() ^ 0x100b);
  if (partitioned) {
    tf_attr_kv a[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)},
                      {"shape", tf_attr_shape(tf_shape_of(2, 3, 3))}};
    return tt_node(g, "_Arg", "x", NULL, 0, a, 3);
  }
  return tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 3, 3));
}

/* fetch[k] = f[k], with a _Retval each when partitioned. */
static void fetches(tf_graph *g, bool partitioned, const tf_output *f, tf_output *fetch) {
  for (int k = 0; k < NFETCH; k++) {
    fetch[k] = f[k];
    if (partitioned) {
      char nm[16];
      snprintf(nm, sizeof nm, "ret%d", k);
      retval(g, nm, f[k], k);
    }
  }
}

/* fetch: the loop's i and v, and x + v on d2 after it. */
static void build(tf_graph *g, bool partitioned, int par, tf_output *fetch) {
  tf_node *x = input(g, partitioned);
  tf_node *w = tt_const(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), -1, 1));
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "outer", (tf_output[]){o0(i0), o0(x)}, 2,
                              (tf_output[]){o0(w)}, 1, outer_cond, outer_body, NULL, par, out,
                              &st) == TF_OK, "%s", st.msg);
  tf_node *y = on(g, "Add", "y", (tf_output[]){o0(x), out[1]}, 2, D2);
  fetches(g, partitioned, (tf_output[]){out[0], out[1], o0(y)}, fetch);
}

static tf_code bl_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *pred, void *arg, tf_status *st) {
  tf_node *lim = tt_const(g, "lim", tf_tensor_scalar_i32(4));
  *pred = o0(on(g, "Less", "less", (tf_output[]){v[0], o0(lim)}, 2, D0));
  return TF_OK;
}

static tf_code bl_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *next, void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  next[0] = o0(on(g, "Add", "inc", (tf_output[]){v[0], o0(one)}, 2, D0));
  tf_node *k = tt_const(g, "k", tf_tensor_scalar_f32(0.9f));
  tf_node *m = on(g, "Mul", "scale", (tf_output[]){v[1], o0(k)}, 2, D1);
  next[1] = o0(on(g, "Tanh", "tanh", (tf_output[]){o0(m)}, 1, D2));
  return TF_OK;
}

/* The true branch: a loop over d0, d1 and d2 (4 trips of v = tanh(0.9 v)). */
static tf_code br_loop(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                       void *arg, tf_status *st) {
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output lo[2];
  TF_TRY(tf_while_loop(g, "bl", (tf_output[]){o0(i0), in[0]}, 2, NULL, 0, bl_cond, bl_body,
                       NULL, *(int *)arg, lo, st));
  out[0] = lo[1];
  return TF_OK;
}

static tf_code br_neg(tf_graph *g, const tf_output *in, int n_in, tf_output *out, int n_out,
                      void *arg, tf_status *st) {
  out[0] = o0(on(g, "Neg", "neg", in, 1, D2));
  return TF_OK;
}

/* fetch: c = sum(x) > 0 ? the loop over x : -x, the predicate, x + c. */
static void build_in_cond(tf_graph *g, bool partitioned, int par, tf_output *fetch) {
  tf_node *x = input(g, partitioned);
  tf_node *axes = tt_const(g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  tf_node *sum = on(g, "Sum", "sum", (tf_output[]){o0(x), o0(axes)}, 2, D1);
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_f32(0));
  tf_node *p = on(g, "Greater", "pos", (tf_output[]){o0(sum), o0(zero)}, 2, D0);
  tf_output c;
  tf_status st;
  ck_assert_msg(tf_cond(g, "sel", o0(p), (tf_output[]){o0(x)}, 1, br_loop, br_neg, &par, &c, 1,
                        &st) == TF_OK, "%s", st.msg);
  tf_node *y = on(g, "Add", "y", (tf_output[]){o0(x), c}, 2, D2);
  fetches(g, partitioned, (tf_output[]){c, o0(p), o0(y)}, fetch);
}

/* An outer loop whose condition runs a split loop (2 trips of u *= 0.5,
 * Mul on d1, counter on d0, its cond on d2): i < 3 and sum(u) < 1e30. The
 * inner loop runs live in every outer iteration, the last included. */
static tf_code cl_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *pred, void *arg, tf_status *st) {
  tf_node *j0 = tt_const(g, "j0", tf_tensor_scalar_i32(0));
  tf_output lo[2];
  TF_TRY(tf_while_loop(g, "inner", (tf_output[]){o0(j0), v[1]}, 2, NULL, 0, inner_cond,
                       inner_body, NULL, 0, lo, st));
  tf_node *axes = tt_const(g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  tf_node *sum = on(g, "Sum", "sum", (tf_output[]){lo[1], o0(axes)}, 2, D1);
  tf_node *big = tt_const(g, "big", tf_tensor_scalar_f32(1e30f));
  tf_node *fin = on(g, "Less", "finite", (tf_output[]){o0(sum), o0(big)}, 2, D2);
  tf_node *lim = tt_const(g, "lim", tf_tensor_scalar_i32(3));
  tf_node *lt = on(g, "Less", "less", (tf_output[]){v[0], o0(lim)}, 2, D0);
  *pred = o0(on(g, "LogicalAnd", "and", (tf_output[]){o0(lt), o0(fin)}, 2, D0));
  return TF_OK;
}

static tf_code cl_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *next, void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  next[0] = o0(on(g, "Add", "inc", (tf_output[]){v[0], o0(one)}, 2, D0));
  next[1] = o0(on(g, "Tanh", "tanh", (tf_output[]){v[1]}, 1, D2));
  return TF_OK;
}

/* fetch: the outer loop's i and v, and x + v. */
static void build_loop_in_cond_fn(tf_graph *g, bool partitioned, int par, tf_output *fetch) {
  tf_node *x = input(g, partitioned);
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "outer", (tf_output[]){o0(i0), o0(x)}, 2, NULL, 0, cl_cond,
                              cl_body, NULL, par, out, &st) == TF_OK, "%s", st.msg);
  tf_node *y = on(g, "Add", "y", (tf_output[]){o0(x), out[1]}, 2, D2);
  fetches(g, partitioned, (tf_output[]){out[0], out[1], o0(y)}, fetch);
}

/* The split loop of build (MatMul on d1, Tanh on d2, a cond and a nested
 * loop), differentiated: fetch the loop's v, d Sum(v) / dx and d Sum(v) /
 * dw. The gradient loop runs backwards over the forward values pushed on
 * stacks; its nodes are placed like any others, so it is split too. */
static void build_grad(tf_graph *g, bool partitioned, int par, tf_output *fetch) {
  tf_node *x = input(g, partitioned);
  tf_node *w = tt_const(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), -1, 1));
  tf_node *wv = on(g, "Identity", "wv", (tf_output[]){o0(w)}, 1, D1);
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "outer", (tf_output[]){o0(i0), o0(x)}, 2,
                              (tf_output[]){o0(wv)}, 1, outer_cond, outer_body, NULL, par, out,
                              &st) == TF_OK, "%s", st.msg);
  int32_t axes[2] = {0, 1};
  tf_node *ax = tt_const(g, "axes", tf_tensor_vec_i32(2, axes));
  tf_node *loss = on(g, "Sum", "loss", (tf_output[]){out[1], o0(ax)}, 2, D2);
  tf_output d[2];
  ck_assert_msg(tf_gradients(g, (tf_output[]){o0(loss)}, 1, (tf_output[]){o0(x), o0(wv)}, 2,
                             NULL, d, &st) == TF_OK, "%s", st.msg);
  fetches(g, partitioned, (tf_output[]){out[1], d[0], d[1]}, fetch);
}

/* The placer's assignment; at least one edge inside a frame must cross
 * devices, or the test would show nothing. */
static int *place(const tf_graph *g) {
  int nn = tf_graph_num_nodes(g);
  int *as = calloc((size_t)nn, sizeof *as);
  tf_status st;
  tf_place_opts o = {0};
  ck_assert_msg(tf_place(g, devs3, NDEV, &o, as, &st) == TF_OK, "%s", st.msg);
  tf__frames fr;
  ck_assert_msg(tf__graph_frames(g, &fr, &st) == TF_OK, "%s", st.msg);
  int crossing = 0;
  for (int i = 0; i < nn; i++) {
    tf_node *v = tf_graph_node(g, i);
    for (int k = 0; k < tf_node_num_inputs(v); k++) {
      tf_node *s = tf_node_input(v, k).node;
      crossing += as[tf_node_id(s)] != as[i] && fr.out_frame[tf_node_id(s)] != 0;
    }
  }
  tf__frames_fini(&fr);
  ck_assert_int_gt(crossing, 3);
  return as;
}

static int count_prefix(const tf_graph *g, const char *op, const char *needle) {
  int c = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *v = tf_graph_node(g, i);
    c += strcmp(tf_node_op(v), op) == 0 && strstr(tf_node_name(v), needle) != NULL;
  }
  return c;
}

typedef struct prun {
  tf_executor *e;
  tf_rdv_mgr *mgr;
  tf_step_ctx ctx;
  tf_cancel cancel;
  tf_tensor *args[1];
  tf_tensor *rets[NFETCH];
  tf_status st;
} prun;

static void *run_one(void *arg) {
  prun *r = arg;
  tf_executor_run(r->e, &r->ctx, NULL, tf__now_ns() + 20LL * 1000000000, &r->st);
  if (r->st.code != TF_OK) {
    tf_rdv_mgr_abort(r->mgr, r->ctx.step_id, &r->st);
  }
  return NULL;
}

/* Runs step step_id of the n partitions with x fed; out[k] gets fetch k. */
static void run_parts(tf_partition *p, int n, tf_executor **ex, tf_rdv_mgr *mgr,
                      tf_resource_mgr *res, uint64_t step_id, tf_tensor *x, tf_tensor **out) {
  tf_status st;
  tf_rendezvous *rdv = tf_rdv_mgr_step(mgr, step_id, &st);
  ck_assert_msg(rdv != NULL, "%s", st.msg);
  prun runs[NDEV] = {0};
  pthread_t th[NDEV];
  for (int k = 0; k < n; k++) {
    prun *r = &runs[k];
    *r = (prun){.e = ex[k], .mgr = mgr};
    tf_cancel_init(&r->cancel);
    tf_status_init(&r->st);
    ck_assert_int_le(p[k].n_args, 1);
    r->args[0] = x;
    r->ctx = (tf_step_ctx){.step_id = step_id, .resources = res, .cancel = &r->cancel,
                           .args = r->args, .n_args = p[k].n_args, .retvals = r->rets,
                           .n_retvals = p[k].n_rets, .rendezvous = rdv};
    ck_assert_int_eq(pthread_create(&th[k], NULL, run_one, r), 0);
  }
  for (int k = 0; k < n; k++) {
    pthread_join(th[k], NULL);
  }
  for (int k = 0; k < n; k++) {
    ck_assert_msg(runs[k].st.code == TF_OK, "partition %d: %s", k, runs[k].st.msg);
    for (int i = 0; i < p[k].n_rets; i++) {
      out[p[k].ret_fetch[i]] = runs[k].rets[i];
    }
    tf_cancel_fini(&runs[k].cancel);
  }
  tf_rdv_step_unref(rdv);
  tf_rdv_mgr_cleanup(mgr, step_id);
}

static void assert_bitwise(const tf_tensor *a, const tf_tensor *b, const char *what) {
  ck_assert_msg(a != NULL && b != NULL, "%s: missing", what);
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert_msg(tf_shape_equal(&a->shape, &b->shape), "%s: shapes differ", what);
  ck_assert_msg(memcmp(a->data, b->data, a->nbytes) == 0, "%s: values differ", what);
}

typedef void (*build_fn)(tf_graph *g, bool partitioned, int par, tf_output *fetch);

/* The reference: the whole graph in a local session. */
static void run_local(build_fn build, int par, tf_tensor *x, tf_tensor **want) {
  tf_graph *ref = tf_graph_new();
  tf_output rf[NFETCH];
  build(ref, false, par, rf);
  tf_status st;
  tf_session *sess = tf_session_new(ref, NULL, &st);
  ck_assert_msg(sess != NULL, "%s", st.msg);
  char names[NFETCH][160];
  const char *fn[NFETCH];
  for (int k = 0; k < NFETCH; k++) {
    snprintf(names[k], sizeof names[k], "%s:%d", tf_node_name(rf[k].node), rf[k].index);
    fn[k] = names[k];
  }
  const char *feed = "x";
  tf_run_options ro = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(sess, &ro, &feed, &x, 1, fn, want, NFETCH, NULL, 0, NULL, &st) ==
                TF_OK, "%s", st.msg);
  tf_session_free(sess);
  tf_graph_free(ref);
}

/* Partitions build's graph over three devices (each with at least
 * min_loops control loops in all) and runs two steps against a local
 * session: x in (0.05, 1), then -2x - 0.25. */
static void check_split(build_fn build, int par, int min_loops, int trips) {
  tf_graph *g = tf_graph_new();
  tf_output fetch[NFETCH];
  build(g, true, par, fetch);
  int *as = place(g);
  int n = 0;
  tf_partition *p = NULL;
  tf_status st;
  ck_assert_msg(tf_partition_graph(g, as, devs3, incs, NDEV, &p, &n, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(n, NDEV);
  tf_device dev[NDEV];
  tf_executor *ex[NDEV];
  int loops = 0;
  for (int k = 0; k < n; k++) {
    loops += count_prefix(p[k].g, "Merge", "/_cloop_d");
    ck_assert_int_eq(count_prefix(p[k].g, "Merge", "/_cloop_d"),
                     count_prefix(p[k].g, "NextIteration", "/_cloop_d"));
    dev[k] = *tf_cpu_device();
    dev[k].name = devs3[p[k].device].name;
    tf_executor_opts eo = {.device = &dev[k]};
    ck_assert_msg(tf_executor_new(p[k].g, &eo, &ex[k], &st) == TF_OK, "%s", st.msg);
  }
  ck_assert_int_ge(loops, min_loops);
  tf_rdv_mgr *mgr = tf_rdv_mgr_new(TASK, 60000, NULL, NULL);
  tf_resource_mgr *res = tf_resource_mgr_new();
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), 0.05, 1);
  for (int step = 0; step < 2; step++) {
    if (step == 1) {
      float *xv = x->data;
      for (int i = 0; i < 9; i++) {
        xv[i] = -2.0f * xv[i] - 0.25f;
      }
    }
    tf_tensor *want[NFETCH] = {0}, *got[NFETCH] = {0};
    run_local(build, par, x, want);
    if (trips > 0) {
      ck_assert_int_eq(((int32_t *)want[0]->data)[0], trips);
    } else if (trips == 0) { /* the cond: the loop's branch, then the other */
      ck_assert_int_eq(((bool *)want[1]->data)[0], step == 0);
    } else { /* gradients: not all zero (they can be small: the nested
              * loop quarters v in each of the 6 iterations) */
      float norm = 0;
      for (int i = 0; i < 9; i++) norm += fabsf(((float *)want[1]->data)[i]);
      ck_assert_msg(norm > 0, "d loss / dx is zero");
    }
    run_parts(p, n, ex, mgr, res, (uint64_t)step + 1, x, got);
    for (int k = 0; k < NFETCH; k++) {
      char what[32];
      snprintf(what, sizeof what, "fetch %d (par %d)", k, par);
      assert_bitwise(got[k], want[k], what);
    }
    tt_free(want, NFETCH);
    tt_free(got, NFETCH);
  }
  ck_assert_int_eq(tf_rdv_mgr_live_steps(mgr), 0);
  tf_tensor_unref(x);
  tf_rdv_mgr_free(mgr);
  tf_resource_mgr_free(res);
  for (int k = 0; k < n; k++) {
    tf_executor_free(ex[k]);
  }
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}

START_TEST(test_split_loop_serial) { check_split(build, 1, 2 * NDEV, TRIPS); }
END_TEST

START_TEST(test_split_loop_parallel) { check_split(build, 4, 2 * NDEV, TRIPS); }
END_TEST

/* Gradients through a split loop equal the local session's, bitwise
 * (the same kernels run in the same order on each value). */
START_TEST(test_split_loop_gradients) {
  check_split(build_grad, 1, 2 * NDEV, -1);
  check_split(build_grad, 4, 2 * NDEV, -1);
}
END_TEST

/* A split loop in a cond branch: taken in step 1, dead on every device in
 * step 2 (its control loops start after the branch's value). */
/* A split loop in the condition of another: it runs live in the outer
 * loop's last iteration too, on every device. */
START_TEST(test_split_loop_in_loop_cond) {
  check_split(build_loop_in_cond_fn, 1, 2 * NDEV, 3);
  check_split(build_loop_in_cond_fn, 2, 2 * NDEV, 3);
}
END_TEST

START_TEST(test_split_loop_in_cond) {
  check_split(build_in_cond, 1, NDEV, 0);
  check_split(build_in_cond, 3, NDEV, 0);
}
END_TEST

/* A frame without a LoopCond cannot be split: no predicate drives the
 * control loops. */
START_TEST(test_no_loop_cond) {
  tf_graph *g = tf_graph_new();
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(1));
  tf_node *e = enter(g, "e", o0(c), "f", true);
  tf_node *n = tt_node(g, "Neg", "n", (tf_output[]){o0(e)}, 1, NULL, 0);
  tt_node(g, "Exit", "x", (tf_output[]){o0(n)}, 1, NULL, 0);
  int as[4] = {0, 0, 1, 1};
  tf_partition *p = NULL;
  int np = 0;
  tf_status st;
  ck_assert_int_eq(tf_partition_graph(g, as, devs3, incs, NDEV, &p, &np, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(p);
  ck_assert_msg(strstr(st.msg, "frame 'f'") && strstr(st.msg, "LoopCond"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* A variable Enter read by a non-Merge on another device is refused,
 * naming the edge and the frame. */
START_TEST(test_enter_consumer_refused) {
  tf_graph *g = tf_graph_new();
  tf_output fetch[NFETCH];
  build(g, true, 1, fetch);
  tf_node *ven = NULL;
  for (int i = 0; i < tf_graph_num_nodes(g) && ven == NULL; i++) {
    tf_node *v = tf_graph_node(g, i);
    bool cst = true;
    tf_status st;
    if (strcmp(tf_node_op(v), "Enter") == 0 &&
        tf_node_attr_get_bool(v, "is_constant", &cst, &st) == TF_OK && !cst) {
      ven = v;
    }
  }
  ck_assert_ptr_nonnull(ven);
  tf_node *peek = tt_node(g, "Identity", "peek", (tf_output[]){o0(ven)}, 1, NULL, 0);
  int nn = tf_graph_num_nodes(g);
  int *as = calloc((size_t)nn, sizeof *as);
  as[tf_node_id(peek)] = 1;
  tf_partition *p = NULL;
  int np = 0;
  tf_status st;
  ck_assert_int_eq(tf_partition_graph(g, as, devs3, incs, NDEV, &p, &np, &st),
                   TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, tf_node_name(ven)) && strstr(st.msg, "'peek'") &&
                strstr(st.msg, "frame 'outer/") && strstr(st.msg, "op Enter"), "%s", st.msg);
  free(as);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("partition_loop");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_split_loop_serial);
  tcase_add_test(tc, test_split_loop_parallel);
  tcase_add_test(tc, test_split_loop_in_cond);
  tcase_add_test(tc, test_split_loop_gradients);
  tcase_add_test(tc, test_split_loop_in_loop_cond);
  tcase_add_test(tc, test_no_loop_cond);
  tcase_add_test(tc, test_enter_consumer_refused);
  suite_add_tcase(s, tc);
  return s;
}
