/* executor_frame_test.c: frames and iterations as the executor runs them:
 * per-iteration tags in traces, fresh frames per outer iteration, loops
 * that run zero times, loop invariants that arrive late, iterations
 * deferred by parallel_iterations, deadlines inside long loops, and peak
 * memory bounded by parallel_iterations, not by the trip count.
 *
 * TestSlowIdentity (registered here) is async: a new thread copies its
 * input after a short sleep, so values arrive while iterations run. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"
#include "tf/control_flow.h"
#include "tf/session.h"

static const tf_op_spec slow_ops[] = {
    {.name = "TestSlowIdentity", .inputs = {"x: T"}, .outputs = {"y: T"},
     .attrs = {"T: type", "us: int = 2000"}, .shape_fn = tf_shape_fn_unchanged,
     .flags = TF_OP_ASYNC, .doc = "test"},
};
TF_REGISTER_OPS("test_frame", slow_ops)

typedef struct slow {
  tf_kernel_ctx *ctx;
  void (*done)(void *);
  void *arg;
} slow;

static void *slow_main(void *p) {
  slow *s = p;
  int64_t us = 2000;
  tf_node_attr_get_int(s->ctx->node, "us", &us, NULL);
  usleep((useconds_t)us);
  tf_kernel_set_output(s->ctx, 0, s->ctx->inputs[0]);
  s->done(s->arg);
  free(s);
  return NULL;
}

static void slow_compute(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  slow *s = tf__xmalloc(sizeof *s);
  *s = (slow){ctx, done, arg};
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &at, slow_main, s) != 0) slow_main(s);
  pthread_attr_destroy(&at);
}

static const tf_kernel_def slow_kernels[] = {
    {.op = "TestSlowIdentity", .device_type = TF_DEVICE_CPU, .compute_async = slow_compute},
};
TF_REGISTER_KERNELS(slow_kernels)

/* ---- graph helpers ----------------------------------------------------------- */

static tf_output cnst_i64(tf_graph *g, int64_t v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_scalar_i64(v)), 0};
}

static tf_output op(tf_graph *g, const char *name, const char *type, tf_output a,
                    tf_output b, tf_status *st) {
  tf_node_builder *nb = tf_node_begin(g, type, name);
  tf_node_add_input(nb, a);
  if (b.node != NULL) tf_node_add_input(nb, b);
  return (tf_output){tf_node_finish(nb, st), 0};
}

/* vars[0] < invariants[0] */
static tf_code lt_inv(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                      int n_inv, tf_output *pred, void *arg, tf_status *st) {
  *pred = op(g, "less", "Less", v[0], inv[0], st);
  return pred->node ? TF_OK : st->code;
}

/* vars[0] + 1; vars[1] + invariants[0] through a named node "acc". */
static tf_code step_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                         int n_inv, tf_output *next, void *arg, tf_status *st) {
  next[0] = op(g, "inc", "Add", v[0], cnst_i64(g, 1), st);
  if (next[0].node == NULL) return st->code;
  next[1] = op(g, "acc", "Add", v[1], inv[n_inv - 1], st);
  return next[1].node ? TF_OK : st->code;
}

/* while (i < n) { i += 1; s += k } with k an invariant, maybe slow. */
static tf_node *build_loop(tf_graph *g, int64_t n, tf_output k, int par) {
  tf_output vars[2] = {cnst_i64(g, 0), cnst_i64(g, 0)};
  tf_output inv[2] = {cnst_i64(g, n), k};
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "loop", vars, 2, inv, 2, lt_inv, step_body, NULL, par,
                              out, &st) == TF_OK, "%s", st.msg);
  tf_node_builder *b = tf_node_begin(g, "Identity", "result");
  tf_node_add_input(b, out[1]);
  tf_node *r = tf_node_finish(b, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  return r;
}

static int64_t run_i64(tf_session *s, const char *fetch, tf_run_metadata *md) {
  tf_status st;
  tf_tensor *out = NULL;
  tf_run_options o = {.timeout_ms = 30000, .trace = md != NULL};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, md, &st) == TF_OK,
                "%s", st.msg);
  int64_t v = tf_tensor_get_i64(out, 0);
  tf_tensor_unref(out);
  return v;
}

/* The body's node runs once per iteration, tagged 0..n-1 in one frame. */
START_TEST(test_trace_iterations) {
  tf_graph *g = tf_graph_new();
  build_loop(g, 25, cnst_i64(g, 3), 4);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_run_metadata md;
  ck_assert_int_eq(run_i64(s, "result", &md), 75);
  bool seen[25] = {false};
  int64_t frame = 0;
  for (int i = 0; i < md.n_timings; i++) {
    const tf_node_timing *t = &md.timings[i];
    if (strstr(t->node, "acc") == NULL) continue;
    ck_assert_int_ne(t->frame_id, 0);
    if (frame == 0) frame = t->frame_id;
    ck_assert_int_eq(t->frame_id, frame);
    ck_assert(t->iter >= 0 && t->iter < 25);
    ck_assert(!seen[t->iter]);
    seen[t->iter] = true;
  }
  for (int i = 0; i < 25; i++) ck_assert_msg(seen[i], "iteration %d missing", i);
  tf_run_metadata_fini(&md);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Outer loop of 6 with an inner loop of 5: 30 inner bodies, and one inner
 * frame instance per outer iteration (6 distinct frame ids). */
static tf_code inner_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                          int n_inv, tf_output *next, void *arg, tf_status *st) {
  next[0] = op(g, "iinc", "Add", v[0], cnst_i64(g, 1), st);
  if (next[0].node == NULL) return st->code;
  next[1] = op(g, "icount", "Add", v[1], cnst_i64(g, 1), st);
  return next[1].node ? TF_OK : st->code;
}

static tf_code outer_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                          int n_inv, tf_output *next, void *arg, tf_status *st) {
  tf_output vars[2] = {cnst_i64(g, 0), v[1]};
  tf_output iinv[1] = {cnst_i64(g, 5)};
  tf_output out[2];
  TF_TRY(tf_while_loop(g, "inner", vars, 2, iinv, 1, lt_inv, inner_body, NULL, 3, out, st));
  next[0] = op(g, "oinc", "Add", v[0], cnst_i64(g, 1), st);
  next[1] = out[1];
  return next[0].node ? TF_OK : st->code;
}

START_TEST(test_nested_frames) {
  tf_graph *g = tf_graph_new();
  tf_output vars[2] = {cnst_i64(g, 0), cnst_i64(g, 0)};
  tf_output inv[1] = {cnst_i64(g, 6)};
  tf_output out[2];
  tf_status st;
  ck_assert_msg(tf_while_loop(g, "outer", vars, 2, inv, 1, lt_inv, outer_body, NULL, 2,
                              out, &st) == TF_OK, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  char fetch[256];
  snprintf(fetch, sizeof fetch, "%s:%d", tf_node_name(out[1].node), out[1].index);
  tf_run_metadata md;
  ck_assert_int_eq(run_i64(s, fetch, &md), 30);
  int64_t ids[64];
  int n_ids = 0, bodies = 0;
  for (int i = 0; i < md.n_timings; i++) {
    const tf_node_timing *t = &md.timings[i];
    if (strstr(t->node, "icount") == NULL) continue;
    bodies++;
    bool known = false;
    for (int j = 0; j < n_ids; j++) known = known || ids[j] == t->frame_id;
    if (!known && n_ids < 64) ids[n_ids++] = t->frame_id;
  }
  ck_assert_int_eq(bodies, 30);
  ck_assert_int_eq(n_ids, 6);
  tf_run_metadata_fini(&md);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A loop whose condition is false at once runs no body and returns the
 * initial values. */
START_TEST(test_zero_iterations) {
  tf_graph *g = tf_graph_new();
  build_loop(g, 0, cnst_i64(g, 3), 10);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_run_metadata md;
  ck_assert_int_eq(run_i64(s, "result", &md), 0);
  for (int i = 0; i < md.n_timings; i++) ck_assert(strstr(md.timings[i].node, "acc") == NULL);
  tf_run_metadata_fini(&md);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* The invariant comes from a slow async node, so it arrives after the
 * loop has started: every iteration, live or later, must still get it;
 * and with a slow node in the body, parallel_iterations defers
 * iterations. Same result for every bound and thread count. */
static tf_code slow_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                         int n_inv, tf_output *next, void *arg, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "TestSlowIdentity", NULL);
  tf_node_add_input(b, v[0]);
  tf_node_set_attr(b, "us", tf_attr_int(300));
  tf_output slow_i = {tf_node_finish(b, st), 0};
  if (slow_i.node == NULL) return st->code;
  next[0] = op(g, "inc", "Add", slow_i, cnst_i64(g, 1), st);
  if (next[0].node == NULL) return st->code;
  next[1] = op(g, "acc", "Add", v[1], inv[1], st);
  return next[1].node ? TF_OK : st->code;
}

START_TEST(test_late_invariant_and_deferral) {
  int pars[] = {1, 2, 8};
  for (int p = 0; p < 3; p++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_node_builder *b = tf_node_begin(g, "TestSlowIdentity", "slow_k");
    tf_node_add_input(b, cnst_i64(g, 7));
    tf_node_set_attr(b, "us", tf_attr_int(20000));
    tf_output k = {tf_node_finish(b, &st), 0};
    ck_assert_msg(k.node != NULL, "%s", st.msg);
    tf_output vars[2] = {cnst_i64(g, 0), cnst_i64(g, 0)};
    tf_output inv[2] = {cnst_i64(g, 12), k};
    tf_output out[2];
    ck_assert_msg(tf_while_loop(g, "loop", vars, 2, inv, 2, lt_inv, slow_body, NULL, pars[p],
                                out, &st) == TF_OK, "%s", st.msg);
    char fetch[256];
    snprintf(fetch, sizeof fetch, "%s:%d", tf_node_name(out[1].node), out[1].index);
    for (int threads = 1; threads <= 3; threads += 2) {
      tf_session_options so = {.inter_op_threads = threads};
      tf_session *s = tf_session_new(g, &so, &st);
      ck_assert_int_eq(run_i64(s, fetch, NULL), 84);
      tf_session_free(s);
    }
    tf_graph_free(g);
  }
}
END_TEST

/* acc += Sum(Tanh(x)) for the [32, 32] float invariant x: a 4 KiB tensor
 * allocated and freed in every iteration. */
static tf_code tanh_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                         int n_inv, tf_output *next, void *arg, tf_status *st) {
  next[0] = op(g, "inc", "Add", v[0], cnst_i64(g, 1), st);
  tf_output y = op(g, "tanh", "Tanh", inv[1], (tf_output){NULL, 0}, st);
  if (y.node == NULL || next[0].node == NULL) return st->code;
  int32_t axes[2] = {0, 1};
  tf_output ax = {tt_const(g, NULL, tf_tensor_vec_i32(2, axes)), 0};
  next[1] = op(g, "acc", "Add", v[1], op(g, "sum", "Sum", y, ax, st), st);
  return next[1].node ? TF_OK : st->code;
}

/* The CPU allocator's peak above its use before, over one Run of a loop
 * of n iterations on x with window par; *acc gets the loop's result. */
static int64_t loop_peak_bytes(tf_tensor *x, int64_t n, int par, float *acc) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor_ref(x);
  tf_output vars[2] = {cnst_i64(g, 0), {tt_const(g, NULL, tf_tensor_scalar_f32(0)), 0}};
  tf_output inv[2] = {cnst_i64(g, n), {tt_const(g, NULL, x), 0}};
  tf_output out[2];
  ck_assert_msg(tf_while_loop(g, "loop", vars, 2, inv, 2, lt_inv, tanh_body, NULL, par, out,
                              &st) == TF_OK, "%s", st.msg);
  char fetch[256];
  snprintf(fetch, sizeof fetch, "%s:%d", tf_node_name(out[1].node), out[1].index);
  const char *f = fetch;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_allocator *a = tf_cpu_allocator();
  tf_allocator_reset_peak(a);
  int64_t base = tf_allocator_get_stats(a).bytes_in_use;
  tf_tensor *r = NULL;
  tf_run_options o = {.timeout_ms = 60000};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, &f, &r, 1, NULL, 0, NULL, &st) == TF_OK,
                "%s", st.msg);
  int64_t peak = tf_allocator_get_stats(a).peak_bytes - base;
  *acc = *(const float *)r->data;
  tf_tensor_unref(r);
  tf_session_free(s);
  tf_graph_free(g);
  return peak;
}

/* 20,000 iterations with window 8 peak at about what 200 do: the live
 * iterations (and their tensors) are bounded by parallel_iterations. A
 * window of 64 may hold more at once, but also a bounded amount. */
START_TEST(test_memory_bounded_by_window) {
  tt_rng_reseed(tt_seed() ^ 0x16u);
  float a_small, a_large, a_wide;
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 32, 32), -1, 1);
  int64_t small = loop_peak_bytes(x, 200, 8, &a_small);
  int64_t large = loop_peak_bytes(x, 20000, 8, &a_large);
  int64_t wide = loop_peak_bytes(x, 20000, 64, &a_wide);
  tf_tensor_unref(x);
  ck_assert_msg(large <= small + 8 * 4096, "peak %lld bytes for 20,000 iterations, %lld for 200",
                (long long)large, (long long)small);
  ck_assert_msg(wide <= 66 * 2 * 4096 + small, "window 64: peak %lld bytes", (long long)wide);
  ck_assert_msg(large < 20000 * 4096 / 100, "peak %lld bytes", (long long)large);
  ck_assert(a_large == a_wide);
}
END_TEST

/* A loop of a million iterations stops at its deadline; the next Run of
 * a short loop on the same session works. */
START_TEST(test_deadline_in_loop) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "n");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT64));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_scalar()));
  tf_output n = {tf_node_finish(b, &st), 0};
  tf_output vars[2] = {cnst_i64(g, 0), cnst_i64(g, 0)};
  tf_output inv[2] = {n, cnst_i64(g, 2)};
  tf_output out[2];
  ck_assert_msg(tf_while_loop(g, "loop", vars, 2, inv, 2, lt_inv, step_body, NULL, 10,
                              out, &st) == TF_OK, "%s", st.msg);
  char fetch[256];
  snprintf(fetch, sizeof fetch, "%s:%d", tf_node_name(out[1].node), out[1].index);
  const char *fp = fetch, *fn = "n";
  for (int threads = 1; threads <= 2; threads++) {
    tf_session_options so = {.inter_op_threads = threads};
    tf_session *s = tf_session_new(g, &so, &st);
    tf_tensor *big = tf_tensor_scalar_i64(100000000), *small = tf_tensor_scalar_i64(10);
    tf_tensor *res = NULL;
    tf_run_options o = {.timeout_ms = 60};
    int64_t t0 = tf__now_ns();
    ck_assert_int_eq(tf_session_run(s, &o, &fn, &big, 1, &fp, &res, 1, NULL, 0, NULL, &st),
                     TF_DEADLINE_EXCEEDED);
    int64_t ms = (tf__now_ns() - t0) / 1000000;
    ck_assert_msg(ms < 1500, "took %lld ms", (long long)ms);
    o.timeout_ms = 10000;
    ck_assert_msg(tf_session_run(s, &o, &fn, &small, 1, &fp, &res, 1, NULL, 0, NULL, &st) == TF_OK,
                  "%s", st.msg);
    ck_assert_int_eq(tf_tensor_get_i64(res, 0), 20);
    tf_tensor_unref(res);
    tf_tensor_unref(big);
    tf_tensor_unref(small);
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("executor_frame");
  TCase *tc = tcase_create("frames");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_trace_iterations);
  tcase_add_test(tc, test_nested_frames);
  tcase_add_test(tc, test_zero_iterations);
  tcase_add_test(tc, test_late_invariant_and_deferral);
  tcase_add_test(tc, test_deadline_in_loop);
  tcase_add_test(tc, test_memory_bounded_by_window);
  suite_add_tcase(s, tc);
  return s;
}
