/* cpu_accumulator_test.c: the conditional accumulator ops
 * (lib/devices/cpu/cpu_accumulator.c) through a session: the mean and sum
 * of k seeded random gradients against a float64 recomputation, stale
 * gradients dropped and counted, a take that waits without holding a
 * thread (one inter-op thread), a take ended by its step's deadline, by a
 * container reset and by session close, shape, dtype and num_required
 * errors, and concurrent appliers on one shared accumulator.
 *
 * Test-only op registered here:
 *   TestAccumulatorStats  the accumulator's counters as int64 [5]: global
 *                         step, accumulated, applied, dropped, taken */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/devices/cpu/cpu_accumulator.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static const tf_op_spec test_ops[] = {
    {.name = "TestAccumulatorStats", .inputs = {"handle: Ref(string)"},
     .outputs = {"stats: int64"}, .flags = TF_OP_STATEFUL, .doc = "test"},
};
TF_REGISTER_OPS("test", test_ops)

static tf_code stats_compute(tf_kernel_ctx *ctx) {
  tf__accumulator *a = tf__accumulator_cast(ctx->in_refs[0]);
  if (a == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "not an accumulator");
  }
  tf__accumulator_stats s = tf__accumulator_get_stats(a);
  tf_tensor *out;
  tf_shape five = tf_shape_of(1, 5);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT64, &five, &out));
  int64_t v[5] = {s.global_step, s.num_accumulated, s.num_applied,
                  s.num_dropped, s.num_taken};
  memcpy(out->data, v, sizeof v);
  return TF_OK;
}

static const tf_kernel_def test_kernels[] = {
    {.op = "TestAccumulatorStats", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = stats_compute},
};
TF_REGISTER_KERNELS(test_kernels)

/* ---- graph helpers ------------------------------------------------------- */

static tf_node *finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

static tf_node *accumulator(tf_graph *g, const char *name, tf_dtype dt,
                            tf_shape shape, const char *reduction,
                            const char *shared_name) {
  tf_node_builder *b = tf_node_begin(g, "ConditionalAccumulator", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  tf_node_set_attr(b, "shape", tf_attr_shape(shape));
  if (reduction) tf_node_set_attr(b, "reduction_type", tf_attr_string(reduction));
  if (shared_name) tf_node_set_attr(b, "shared_name", tf_attr_string(shared_name));
  return finish(b);
}

/* op(handle, ins...) with attr dtype (when dt is valid). */
static tf_node *on_acc(tf_graph *g, const char *op, const char *name,
                       tf_node *acc, tf_node *const *ins, int n, tf_dtype dt) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_add_input(b, (tf_output){acc, 0});
  for (int i = 0; i < n; i++) tf_node_add_input(b, (tf_output){ins[i], 0});
  if (dt != TF_DTYPE_INVALID) tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  return finish(b);
}

/* An accumulator "acc" with: grad + step -> apply, n -> take, num, stats,
 * new_step -> set_step. */
static tf_graph *acc_graph(tf_dtype dt, tf_shape shape, tf_shape feed_shape,
                           const char *reduction) {
  tf_graph *g = tf_graph_new();
  tf_node *acc = accumulator(g, "acc", dt, shape, reduction, NULL);
  tf_node *ins[2] = {tt_placeholder(g, "step", TF_INT64, tf_shape_scalar()),
                     tt_placeholder(g, "grad", dt, feed_shape)};
  on_acc(g, "AccumulatorApplyGradient", "apply", acc, ins, 2, dt);
  tf_node *n = tt_placeholder(g, "n", TF_INT32, tf_shape_scalar());
  on_acc(g, "AccumulatorTakeGradient", "take", acc, &n, 1, dt);
  on_acc(g, "AccumulatorNumAccumulated", "num", acc, NULL, 0, TF_DTYPE_INVALID);
  on_acc(g, "TestAccumulatorStats", "stats", acc, NULL, 0, TF_DTYPE_INVALID);
  tf_node *ns = tt_placeholder(g, "new_step", TF_INT64, tf_shape_scalar());
  on_acc(g, "AccumulatorSetGlobalStep", "set_step", acc, &ns, 1, TF_DTYPE_INVALID);
  return g;
}

static tf_session *session(tf_graph *g, int threads) {
  tf_session_options o = {.inter_op_threads = threads};
  tf_status st;
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* ---- running ------------------------------------------------------------- */

/* apply(grad, step) with a deadline; returns the code. */
static tf_code apply(tf_session *s, const char *target, tf_tensor *grad,
                     int64_t step, tf_status *st) {
  tf_run_options o = {.timeout_ms = 5000};
  tf_tensor *sv = tf_tensor_scalar_i64(step);
  const char *fn[2] = {"grad", "step"}, *tn[1] = {target};
  tf_tensor *fv[2] = {grad, sv};
  tf_code rc = tf_session_run(s, &o, fn, fv, 2, NULL, NULL, 0, tn, 1, NULL, st);
  tf_tensor_unref(sv);
  return rc;
}

static void apply_ok(tf_session *s, tf_tensor *grad, int64_t step) {
  tf_status st;
  ck_assert_msg(apply(s, "apply", grad, step, &st) == TF_OK, "%s", st.msg);
}

/* take(n) with timeout_ms; returns the code, *out the average. */
static tf_code take(tf_session *s, int32_t n, int64_t timeout_ms,
                    tf_tensor **out, tf_status *st) {
  tf_run_options o = {.timeout_ms = timeout_ms};
  tf_tensor *nv = tf_tensor_scalar_i32(n);
  const char *fn[1] = {"n"}, *on[1] = {"take"};
  *out = NULL;
  tf_code rc = tf_session_run(s, &o, fn, &nv, 1, on, out, 1, NULL, 0, NULL, st);
  tf_tensor_unref(nv);
  return rc;
}

static tf_tensor *take_ok(tf_session *s, int32_t n) {
  tf_status st;
  tf_tensor *t;
  ck_assert_msg(take(s, n, 5000, &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

/* Fetches a node with no feeds. */
static tf_tensor *fetch(tf_session *s, const char *name) {
  tf_run_options o = {.timeout_ms = 5000};
  const char *on[1] = {name};
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, on, &t, 1, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  return t;
}

static int32_t num_accumulated(tf_session *s) {
  tf_tensor *t = fetch(s, "num");
  int32_t v = *(int32_t *)t->data;
  tf_tensor_unref(t);
  return v;
}

enum { ST_GLOBAL_STEP, ST_ACCUMULATED, ST_APPLIED, ST_DROPPED, ST_TAKEN };

static int64_t stat(tf_session *s, int which) {
  tf_tensor *t = fetch(s, "stats");
  int64_t v = ((int64_t *)t->data)[which];
  tf_tensor_unref(t);
  return v;
}

static void set_step(tf_session *s, int64_t step) {
  tf_run_options o = {.timeout_ms = 5000};
  tf_tensor *v = tf_tensor_scalar_i64(step);
  const char *fn[1] = {"new_step"}, *tn[1] = {"set_step"};
  tf_status st;
  ck_assert_msg(tf_session_run(s, &o, fn, &v, 1, NULL, NULL, 0, tn, 1, NULL,
                               &st) == TF_OK, "%s", st.msg);
  tf_tensor_unref(v);
}

/* A Run on another thread. */
typedef struct bg_run {
  tf_session *s;
  int32_t n;
  int64_t timeout_ms;
  tf_tensor *out;
  tf_code code;
  tf_status st;
  _Atomic int finished;
  pthread_t th;
} bg_run;

static void *bg_take_main(void *arg) {
  bg_run *r = arg;
  r->code = take(r->s, r->n, r->timeout_ms, &r->out, &r->st);
  atomic_store(&r->finished, 1);
  return NULL;
}

static void bg_take(bg_run *r) { pthread_create(&r->th, NULL, bg_take_main, r); }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The mean (or sum) of g[0..k) elementwise, in float64. */
static tf_tensor *reference(tf_tensor *const *g, int k, bool mean) {
  int64_t n = g[0]->n;
  double *r = calloc((size_t)n, sizeof *r);
  for (int j = 0; j < k; j++) {
    for (int64_t i = 0; i < n; i++) {
      r[i] += g[j]->dtype == TF_FLOAT32 ? (double)((float *)g[j]->data)[i]
                                        : ((double *)g[j]->data)[i];
    }
  }
  for (int64_t i = 0; mean && i < n; i++) r[i] /= k;
  tf_tensor *t = tt_tensor(TF_FLOAT64, g[0]->shape, r);
  free(r);
  return t;
}

/* got (any float dtype) as float64, for tt_assert_close against a
 * float64 reference. */
static tf_tensor *as_f64(const tf_tensor *got) {
  double *v = malloc((size_t)got->n * sizeof *v);
  for (int64_t i = 0; i < got->n; i++) {
    v[i] = got->dtype == TF_FLOAT32 ? (double)((float *)got->data)[i]
                                    : ((double *)got->data)[i];
  }
  tf_tensor *t = tt_tensor(TF_FLOAT64, got->shape, v);
  free(v);
  return t;
}

/* ---- numerics ------------------------------------------------------------- */

/* _i: 0 float32 MEAN, 1 float32 SUM, 2 float64 MEAN, 3 float64 SUM. */
START_TEST(test_mean_and_sum) {
  tt_rng_reseed(tt_seed() ^ (uint64_t)(0xacc0 + _i));
  tf_dtype dt = _i < 2 ? TF_FLOAT32 : TF_FLOAT64;
  bool mean = _i % 2 == 0;
  tf_shape shape = tf_shape_of(2, 5, 7);
  tf_graph *g = acc_graph(dt, shape, shape, mean ? "MEAN" : "SUM");
  tf_session *s = session(g, 2);
  for (int round = 0; round < 3; round++) {
    enum { K_MAX = 9 };
    int k = 1 + (int)(tt_rand_u64() % K_MAX);
    tf_tensor *grads[K_MAX];
    for (int j = 0; j < k; j++) {
      grads[j] = tt_rand(dt, shape, -10, 10);
      apply_ok(s, grads[j], round); /* local step = the global step */
    }
    ck_assert_int_eq(num_accumulated(s), k);
    tf_tensor *got = take_ok(s, k);
    ck_assert_int_eq(got->dtype, dt);
    tf_tensor *want = reference(grads, k, mean), *got64 = as_f64(got);
    double tol = dt == TF_FLOAT32 ? 1e-5 : 1e-12; /* k <= 9 roundings */
    tt_assert_close(got64, want, tol * 10, tol);
    ck_assert_int_eq(num_accumulated(s), 0);
    ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), round + 1);
    tt_free(grads, k);
    tf_tensor *done[] = {got, want, got64};
    tt_free(done, 3);
  }
  ck_assert_int_eq(stat(s, ST_TAKEN), 3);
  ck_assert_int_eq(stat(s, ST_DROPPED), 0);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Integers wrap and MEAN truncates toward zero; float16 adds in float32. */
START_TEST(test_int_and_half) {
  tf_graph *g = acc_graph(TF_INT32, tf_shape_of(1, 3), tf_shape_of(1, 3), "MEAN");
  tf_session *s = session(g, 1);
  int64_t a[3] = {7, -7, INT32_MAX}, b[3] = {-2, 2, 1};
  tf_tensor *ta = tt_tensor_i(TF_INT32, tf_shape_of(1, 3), a);
  tf_tensor *tb = tt_tensor_i(TF_INT32, tf_shape_of(1, 3), b);
  apply_ok(s, ta, 0);
  apply_ok(s, tb, 0);
  tf_tensor *got = take_ok(s, 2);
  const int32_t *v = got->data;
  ck_assert_int_eq(v[0], 2);  /* 5 / 2 */
  ck_assert_int_eq(v[1], -2); /* -5 / 2 */
  ck_assert_int_eq(v[2], INT32_MIN / 2); /* INT32_MAX + 1 wraps to INT32_MIN */
  tf_tensor *all[] = {ta, tb, got};
  tt_free(all, 3);
  tf_session_free(s);
  tf_graph_free(g);

  tt_rng_reseed(tt_seed() ^ 0x16);
  g = acc_graph(TF_FLOAT16, tf_shape_of(1, 64), tf_shape_of(1, 64), "MEAN");
  s = session(g, 1);
  tf_tensor *h[4];
  double ref[64] = {0};
  for (int j = 0; j < 4; j++) {
    h[j] = tt_rand(TF_FLOAT16, tf_shape_of(1, 64), -4, 4);
    for (int i = 0; i < 64; i++) {
      ref[i] += tf_float16_to_float(((tf_float16 *)h[j]->data)[i]) / 4.0;
    }
    apply_ok(s, h[j], 0);
  }
  got = take_ok(s, 4);
  for (int i = 0; i < 64; i++) {
    double x = tf_float16_to_float(((tf_float16 *)got->data)[i]);
    /* four float16 roundings of values below 16: about 4 * 2^-7 */
    ck_assert_msg(x > ref[i] - 0.04 && x < ref[i] + 0.04, "element %d: %g vs %g",
                  i, x, ref[i]);
  }
  tt_free(h, 4);
  tf_tensor_unref(got);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- stale gradients ------------------------------------------------------- */

START_TEST(test_stale_gradients_dropped) {
  tf_shape shape = tf_shape_of(1, 4);
  tf_graph *g = acc_graph(TF_FLOAT64, shape, shape, "MEAN");
  tf_session *s = session(g, 2);
  double one[4] = {1, 2, 3, 4}, big[4] = {1000, 1000, 1000, 1000};
  double three[4] = {3, 4, 5, 6};
  tf_tensor *t1 = tt_tensor(TF_FLOAT64, shape, one);
  tf_tensor *tb = tt_tensor(TF_FLOAT64, shape, big);
  tf_tensor *t3 = tt_tensor(TF_FLOAT64, shape, three);
  apply_ok(s, t1, 0);
  apply_ok(s, t3, 0);
  tf_tensor *got = take_ok(s, 2); /* global step 0 -> 1 */
  tf_tensor_unref(got);
  ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), 1);
  /* a late gradient of step 0: not counted, never in step 1's average */
  apply_ok(s, tb, 0);
  ck_assert_int_eq(num_accumulated(s), 0);
  ck_assert_int_eq(stat(s, ST_DROPPED), 1);
  apply_ok(s, t1, 1);
  apply_ok(s, tb, 0);
  apply_ok(s, t3, 2); /* a step ahead is accepted, as in TF */
  ck_assert_int_eq(num_accumulated(s), 2);
  ck_assert_int_eq(stat(s, ST_DROPPED), 2);
  got = take_ok(s, 2);
  double want[4] = {2, 3, 4, 5};
  tf_tensor *tw = tt_tensor(TF_FLOAT64, shape, want);
  tt_assert_close(got, tw, 0, 0);
  tf_tensor_unref(got);
  /* SetGlobalStep moves the bar both ways */
  set_step(s, 10);
  apply_ok(s, t1, 9);
  ck_assert_int_eq(stat(s, ST_DROPPED), 3);
  apply_ok(s, t1, 10);
  set_step(s, 4);
  apply_ok(s, t3, 4);
  ck_assert_int_eq(num_accumulated(s), 2);
  got = take_ok(s, 1); /* everything in counts, not only num_required */
  tt_assert_close(got, tw, 0, 0);
  ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), 5);
  ck_assert_int_eq(stat(s, ST_APPLIED), 6);
  tf_tensor *all[] = {t1, tb, t3, tw, got};
  tt_free(all, 5);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- waiting ------------------------------------------------------------- */

/* With one inter-op thread, a Run blocked in a take leaves the thread to
 * the Runs that apply; a take of 3 completes on the third gradient. */
START_TEST(test_take_waits_without_thread) {
  tf_shape shape = tf_shape_of(1, 2);
  tf_graph *g = acc_graph(TF_FLOAT32, shape, shape, "SUM");
  tf_session *s = session(g, 1);
  bg_run r = {.s = s, .n = 3, .timeout_ms = 5000};
  bg_take(&r);
  sleep_ms(50);
  double v[2] = {1, 2};
  tf_tensor *t = tt_tensor(TF_FLOAT32, shape, v);
  for (int i = 0; i < 2; i++) {
    apply_ok(s, t, 0);
    sleep_ms(20);
    ck_assert_int_eq(atomic_load(&r.finished), 0);
  }
  apply_ok(s, t, 0);
  pthread_join(r.th, NULL);
  ck_assert_msg(r.code == TF_OK, "%s", r.st.msg);
  ck_assert(((float *)r.out->data)[0] == 3 && ((float *)r.out->data)[1] == 6);
  tf_tensor_unref(r.out);
  tf_tensor_unref(t);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* One graph, one inter-op thread: "take" needs 3 gradients that three
 * apply nodes give only after a chain of Identity nodes; the step ends,
 * so the waiting take held no thread. Run again, the applies are stale
 * (local step 0 < global step 1), so the take waits until the deadline. */
START_TEST(test_take_and_apply_in_one_step) {
  tf_graph *g = tf_graph_new();
  tf_node *acc = accumulator(g, "acc", TF_FLOAT32, tf_shape_of(1, 2), "MEAN", NULL);
  tf_node *n = tt_const(g, "n", tf_tensor_scalar_i32(3));
  on_acc(g, "AccumulatorTakeGradient", "take", acc, &n, 1, TF_FLOAT32);
  on_acc(g, "TestAccumulatorStats", "stats", acc, NULL, 0, TF_DTYPE_INVALID);
  float gv[2] = {2, 4};
  tf_output x = {tt_const(g, "x", tf_tensor_vec_f32(2, gv)), 0};
  for (int i = 0; i < 6; i++) {
    x = (tf_output){tt_node(g, "Identity", NULL, &x, 1, NULL, 0), 0};
  }
  tf_node *step = tt_const(g, "step", tf_tensor_scalar_i64(0));
  const char *names[3] = {"apply0", "apply1", "apply2"};
  for (int i = 0; i < 3; i++) {
    tf_node *ins[2] = {step, x.node};
    on_acc(g, "AccumulatorApplyGradient", names[i], acc, ins, 2, TF_FLOAT32);
  }
  tf_session *s = session(g, 1);
  tf_run_options o = {.timeout_ms = 5000};
  const char *on[1] = {"take"};
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, on, &t, 1, names, 3, NULL,
                               &st) == TF_OK, "%s", st.msg);
  ck_assert(((float *)t->data)[0] == 2 && ((float *)t->data)[1] == 4);
  tf_tensor_unref(t);
  t = NULL;
  o.timeout_ms = 150;
  ck_assert_int_eq(tf_session_run(s, &o, NULL, NULL, 0, on, &t, 1, names, 3, NULL, &st),
                   TF_DEADLINE_EXCEEDED);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(stat(s, ST_DROPPED), 3);
  ck_assert_int_eq(stat(s, ST_ACCUMULATED), 0);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A take that cannot complete ends with its step's deadline, promptly,
 * and leaves the gradients for the next take. */
START_TEST(test_take_deadline) {
  tf_shape shape = tf_shape_of(1, 2);
  tf_graph *g = acc_graph(TF_FLOAT32, shape, shape, "MEAN");
  tf_session *s = session(g, _i == 0 ? 1 : 4);
  double v[2] = {5, 7};
  tf_tensor *t = tt_tensor(TF_FLOAT32, shape, v);
  apply_ok(s, t, 0);
  tf_status st;
  tf_tensor *out;
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(take(s, 2, 100, &out, &st), TF_DEADLINE_EXCEEDED);
  int64_t ms = (tf__now_ns() - t0) / 1000000;
  ck_assert_msg(ms >= 90 && ms < 1000, "took %lld ms", (long long)ms);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(num_accumulated(s), 1);
  ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), 0);
  /* the dead take's waiter is gone: the next take gets both gradients */
  apply_ok(s, t, 0);
  tf_tensor *got = take_ok(s, 2);
  tt_assert_close(got, t, 0, 0);
  tf_tensor *all[] = {t, got};
  tt_free(all, 2);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A container reset and a session close end a waiting take. */
START_TEST(test_reset_and_close_end_take) {
  tf_shape shape = tf_shape_of(1, 2);
  tf_graph *g = acc_graph(TF_FLOAT32, shape, shape, "MEAN");
  tf_session *s = session(g, _i == 0 ? 1 : 4);
  bg_run r = {.s = s, .n = 1, .timeout_ms = 5000};
  bg_take(&r);
  sleep_ms(50);
  ck_assert_int_eq(atomic_load(&r.finished), 0);
  tf_status st;
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(tf_session_reset(s, NULL, 0, &st), TF_OK);
  pthread_join(r.th, NULL);
  ck_assert_int_lt((tf__now_ns() - t0) / 1000000, 1000);
  ck_assert_int_eq(r.code, TF_CANCELLED);
  ck_assert_ptr_nonnull(strstr(r.st.msg, "ConditionalAccumulator 'acc': shut down"));
  /* the next Run makes a fresh accumulator at step 0 */
  ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), 0);
  bg_run c = {.s = s, .n = 1, .timeout_ms = 5000};
  bg_take(&c);
  sleep_ms(50);
  ck_assert_int_eq(tf_session_close(s, &st), TF_OK);
  pthread_join(c.th, NULL);
  ck_assert_int_eq(c.code, TF_CANCELLED);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- errors ---------------------------------------------------------------- */

START_TEST(test_shape_errors) {
  /* a declared shape: a gradient of another shape names both */
  tf_graph *g = acc_graph(TF_FLOAT32, tf_shape_of(2, 2, 3), tf_shape_unknown(), "MEAN");
  tf_session *s = session(g, 1);
  tf_tensor *a = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 2), 0, 1);
  tf_status st;
  ck_assert_int_eq(apply(s, "apply", a, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'apply' (AccumulatorApplyGradient)"));
  ck_assert_ptr_nonnull(strstr(st.msg, "ConditionalAccumulator 'acc' has shape "
                               "[2,3], got a gradient of shape [3,2]"));
  ck_assert_int_eq(stat(s, ST_APPLIED) + stat(s, ST_DROPPED), 0);
  tf_tensor *out;
  ck_assert_int_eq(take(s, 0, 1000, &out, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "num_required must be positive, got 0"));
  tf_session_free(s);
  tf_graph_free(g);
  /* unknown shape: the first gradient of a step fixes it for that step */
  g = acc_graph(TF_FLOAT32, tf_shape_unknown(), tf_shape_unknown(), "MEAN");
  s = session(g, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, tf_shape_of(1, 6), 0, 1);
  apply_ok(s, a, 0);
  ck_assert_int_eq(apply(s, "apply", b, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "holds gradients of shape [3,2] this "
                               "step, got a gradient of shape [6]"));
  apply_ok(s, b, -1); /* stale: dropped unchecked, as in TF */
  ck_assert_int_eq(stat(s, ST_DROPPED), 1);
  tf_tensor *got = take_ok(s, 1);
  apply_ok(s, b, 1); /* a new step may have another shape, as in TF */
  tf_tensor_unref(got);
  got = take_ok(s, 1);
  tt_assert_close(got, b, 0, 0);
  tf_tensor *all[] = {a, b, got};
  tt_free(all, 3);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Shape inference catches what the graph already tells. */
START_TEST(test_graph_time_errors) {
  tf_graph *g = tf_graph_new();
  tf_node *acc = accumulator(g, "acc", TF_FLOAT32, tf_shape_of(1, 4), NULL, NULL);
  tf_node *ins[2] = {tt_placeholder(g, "step", TF_INT64, tf_shape_scalar()),
                     tt_placeholder(g, "grad", TF_FLOAT32, tf_shape_of(1, 5))};
  tf_node_builder *b = tf_node_begin(g, "AccumulatorApplyGradient", "apply");
  tf_node_add_input(b, (tf_output){acc, 0});
  for (int i = 0; i < 2; i++) tf_node_add_input(b, (tf_output){ins[i], 0});
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_status st;
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "gradient has shape [5], but accumulator "
                               "'acc' has shape [4]"));
  tf_node *n = tt_const(g, "n", tf_tensor_scalar_i32(2));
  tf_node *take = on_acc(g, "AccumulatorTakeGradient", "take", acc, &n, 1, TF_FLOAT32);
  ck_assert(tf_shape_equal(tf_node_output_shape(take, 0), &(tf_shape){1, {4}}));
  b = tf_node_begin(g, "ConditionalAccumulator", "bad");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_scalar()));
  tf_node_set_attr(b, "reduction_type", tf_attr_string("MAX"));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "MAX"));
  b = tf_node_begin(g, "ConditionalAccumulator", "strings");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_STRING));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_scalar()));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  tf_graph_free(g);
}
END_TEST

/* A take whose dtype is not the accumulator's, and two nodes that share a
 * name but not a dtype. */
START_TEST(test_dtype_errors) {
  tf_graph *g = tf_graph_new();
  tf_node *a1 = accumulator(g, "a1", TF_FLOAT32, tf_shape_unknown(), NULL, "shared");
  tf_node *a2 = accumulator(g, "a2", TF_FLOAT64, tf_shape_unknown(), NULL, "shared");
  on_acc(g, "AccumulatorNumAccumulated", "num1", a1, NULL, 0, TF_DTYPE_INVALID);
  on_acc(g, "AccumulatorNumAccumulated", "num2", a2, NULL, 0, TF_DTYPE_INVALID);
  tf_session *s = session(g, 1);
  tf_tensor *t = fetch(s, "num1");
  tf_tensor_unref(t);
  tf_run_options o = {.timeout_ms = 1000};
  const char *on[1] = {"num2"};
  tf_status st;
  ck_assert_int_eq(tf_session_run(s, &o, NULL, NULL, 0, on, &t, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'a2' (ConditionalAccumulator)"));
  ck_assert_ptr_nonnull(strstr(st.msg, "the dtype differs"));
  tf_session_free(s);
  /* a take node of another dtype fails at run time, naming both */
  tf_graph *g2 = tf_graph_new();
  tf_node *acc = accumulator(g2, "acc", TF_FLOAT32, tf_shape_unknown(), NULL, NULL);
  tf_node *n2 = tt_const(g2, "n", tf_tensor_scalar_i32(1));
  on_acc(g2, "AccumulatorTakeGradient", "take", acc, &n2, 1, TF_FLOAT64);
  s = session(g2, 1);
  on[0] = "take";
  ck_assert_int_eq(tf_session_run(s, &o, NULL, NULL, 0, on, &t, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "dtype is float64 but ConditionalAccumulator "
                               "'acc' holds float32"));
  tf_session_free(s);
  tf_graph_free(g2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_eager_needs_session) {
  tf_attr_kv attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                        {"shape", tf_attr_shape(tf_shape_unknown())}};
  const char *msg = tt_run_fail("ConditionalAccumulator", NULL, 0, attrs, 2,
                                TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(msg, "needs a session"));
}
END_TEST

/* ---- many appliers ------------------------------------------------------- */

enum { CA_THREADS = 4, CA_EACH = 50, CA_LEN = 16 };

typedef struct applier {
  tf_session *s;
  int id;
  tf_code last;
  tf_status st;
} applier;

/* Gradient j of thread id: element i is id * 1000 + j * 10 + i (exact in
 * float64, so the sum does not depend on the order). */
static double grad_value(int id, int j, int i) { return id * 1000.0 + j * 10.0 + i; }

static void *applier_main(void *arg) {
  applier *a = arg;
  double v[CA_LEN];
  for (int j = 0; j < CA_EACH && a->last == TF_OK; j++) {
    for (int i = 0; i < CA_LEN; i++) v[i] = grad_value(a->id, j, i);
    tf_tensor *t = tt_tensor(TF_FLOAT64, tf_shape_of(1, CA_LEN), v);
    a->last = apply(a->s, a->id % 2 ? "apply2" : "apply", t, 0, &a->st);
    tf_tensor_unref(t);
  }
  return NULL;
}

/* Two accumulator nodes share one accumulator (shared_name); threads apply
 * through both at once while a take of all of them waits. */
START_TEST(test_concurrent_appliers) {
  tf_shape shape = tf_shape_of(1, CA_LEN);
  tf_graph *g = tf_graph_new();
  tf_node *acc = accumulator(g, "acc", TF_FLOAT64, shape, "SUM", "grads");
  tf_node *acc2 = accumulator(g, "acc2", TF_FLOAT64, shape, "SUM", "grads");
  tf_node *ins[2] = {tt_placeholder(g, "step", TF_INT64, tf_shape_scalar()),
                     tt_placeholder(g, "grad", TF_FLOAT64, shape)};
  on_acc(g, "AccumulatorApplyGradient", "apply", acc, ins, 2, TF_FLOAT64);
  on_acc(g, "AccumulatorApplyGradient", "apply2", acc2, ins, 2, TF_FLOAT64);
  tf_node *n = tt_placeholder(g, "n", TF_INT32, tf_shape_scalar());
  on_acc(g, "AccumulatorTakeGradient", "take", acc, &n, 1, TF_FLOAT64);
  on_acc(g, "TestAccumulatorStats", "stats", acc2, NULL, 0, TF_DTYPE_INVALID);
  tf_session *s = session(g, _i == 0 ? 1 : 4);
  bg_run r = {.s = s, .n = CA_THREADS * CA_EACH, .timeout_ms = 10000};
  bg_take(&r);
  applier ap[CA_THREADS];
  pthread_t th[CA_THREADS];
  for (int i = 0; i < CA_THREADS; i++) {
    ap[i] = (applier){.s = s, .id = i};
    pthread_create(&th[i], NULL, applier_main, &ap[i]);
  }
  for (int i = 0; i < CA_THREADS; i++) pthread_join(th[i], NULL);
  pthread_join(r.th, NULL);
  for (int i = 0; i < CA_THREADS; i++) ck_assert_msg(ap[i].last == TF_OK, "%s", ap[i].st.msg);
  ck_assert_msg(r.code == TF_OK, "%s", r.st.msg);
  for (int i = 0; i < CA_LEN; i++) {
    double want = 0;
    for (int id = 0; id < CA_THREADS; id++) {
      for (int j = 0; j < CA_EACH; j++) want += grad_value(id, j, i);
    }
    ck_assert_msg(((double *)r.out->data)[i] == want, "element %d: %g vs %g", i,
                  ((double *)r.out->data)[i], want);
  }
  ck_assert_int_eq(stat(s, ST_APPLIED), CA_THREADS * CA_EACH);
  ck_assert_int_eq(stat(s, ST_ACCUMULATED), 0);
  ck_assert_int_eq(stat(s, ST_GLOBAL_STEP), 1);
  tf_tensor_unref(r.out);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_accumulator");
  TCase *tc = tcase_create("accumulator");
  tcase_set_timeout(tc, 30);
  tcase_add_loop_test(tc, test_mean_and_sum, 0, 4);
  tcase_add_test(tc, test_int_and_half);
  tcase_add_test(tc, test_stale_gradients_dropped);
  tcase_add_test(tc, test_take_waits_without_thread);
  tcase_add_test(tc, test_take_and_apply_in_one_step);
  tcase_add_loop_test(tc, test_take_deadline, 0, 2);
  tcase_add_loop_test(tc, test_reset_and_close_end_take, 0, 2);
  tcase_add_test(tc, test_shape_errors);
  tcase_add_test(tc, test_graph_time_errors);
  tcase_add_test(tc, test_dtype_errors);
  tcase_add_test(tc, test_eager_needs_session);
  tcase_add_loop_test(tc, test_concurrent_appliers, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}
