/* cpu_random_test.c: the stateful random kernels on CPU.
 *
 * - Exact values: each op's output against the Philox stream recomputed
 *   here from (seed, seed2) and the element index (TF's layout: group g of
 *   4 floats / 2 doubles reads block g of the reserved range; truncated
 *   normal group g owns blocks [256 g / (4 / group), ...)), and RandomUniform
 *   against an independent numpy implementation of Philox4x32-10 (exact);
 *   RandomStandardNormal float64 against numpy's Box-Muller (atol 1e-12:
 *   libm versus numpy sin/cos/log differ by a few ulps).
 * - Distributions on 100k samples: mean and variance within 5 standard
 *   errors (computed from the distribution's 2nd/4th moments and n), KS
 *   statistic below the 0.1% critical value 1.9495 / sqrt(n), all truncated
 *   normals strictly within 2 stddev, chi-square for integers at p = 0.001.
 * - Determinism: same seed twice, pools of 1, 2 and 3 threads and the
 *   default pool give identical bits; successive computes of one kernel
 *   instance continue the stream at offset 256 * n blocks; seed 0/0 draws a
 *   fresh seed each time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/philox.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define NSAMP 100000
/* Per-element checks: Check's ck_assert records a mark point (a write to
 * its results file) on every success, far too slow for 100k elements. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ck_abort_msg(__VA_ARGS__);                                               \
    }                                                                          \
  } while (0)
#define KS_CRIT (1.9495 / sqrt((double)NSAMP))

static tf_tensor *shape_vec(int n, const int64_t *dims) {
  return tt_tensor_i(TF_INT64, SHAPE(n), dims);
}

/* Runs a float random op on shape [n] (or dims) with the given seeds. */
static tf_tensor *rnd(const char *op, tf_dtype dt, int rank,
                      const int64_t *dims, int64_t seed, int64_t seed2) {
  tf_tensor *s = shape_vec(rank, dims);
  tf_attr_kv at[3] = {{"dtype", tf_attr_type_v(dt)},
                      {"seed", tf_attr_int(seed)},
                      {"seed2", tf_attr_int(seed2)}};
  tf_tensor *o = tt_run1(op, &s, 1, at, 3);
  tf_tensor_unref(s);
  return o;
}

static tf_tensor *rnd1(const char *op, tf_dtype dt, int64_t n, int64_t seed,
                       int64_t seed2) {
  return rnd(op, dt, 1, &n, seed, seed2);
}

static tf_tensor *rnd_int(tf_dtype dt, int64_t n, int64_t lo, int64_t hi,
                          int64_t seed, int64_t seed2) {
  tf_tensor *in[3] = {shape_vec(1, &n), tt_tensor_i(dt, tf_shape_scalar(), &lo),
                      tt_tensor_i(dt, tf_shape_scalar(), &hi)};
  tf_attr_kv at[2] = {{"seed", tf_attr_int(seed)}, {"seed2", tf_attr_int(seed2)}};
  tf_tensor *o = tt_run1("RandomUniformInt", in, 3, at, 2);
  tt_free(in, 3);
  return o;
}

/* Block g (counter offset g from the seeded start) of the stream. */
static void block_at(int64_t seed, int64_t seed2, uint64_t g, uint32_t w[4]) {
  tf_philox p;
  tf_philox_init(&p, (uint64_t)seed, (uint64_t)seed2);
  tf_philox_skip(&p, g);
  tf_philox_next(&p, w);
}

/* ---- statistics helpers ---------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static double trunc_cdf(double x) {
  double lo = normal_cdf(-2), hi = normal_cdf(2);
  return (normal_cdf(x) - lo) / (hi - lo);
}

static double uniform_cdf(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

/* t's values as doubles (float32/float64 read directly: ASan makes a call
 * per element slow). The caller frees. */
static double *values(const tf_tensor *t) {
  double *v = malloc(sizeof(double) * (size_t)t->n);
  for (int64_t i = 0; i < t->n; i++) {
    v[i] = t->dtype == TF_FLOAT32   ? ((const float *)t->data)[i]
           : t->dtype == TF_FLOAT64 ? ((const double *)t->data)[i]
                                    : tf_tensor_get_f64(t, i);
  }
  return v;
}

/* KS statistic of t's values against cdf. */
static double ks_stat(const tf_tensor *t, double (*cdf)(double)) {
  double *v = values(t);
  qsort(v, (size_t)t->n, sizeof(double), cmp_double);
  double d = 0, n = (double)t->n;
  for (int64_t i = 0; i < t->n; i++) {
    double f = cdf(v[i]);
    d = fmax(d, fmax(f - i / n, (i + 1) / n - f));
  }
  free(v);
  return d;
}

/* Checks sample mean and variance against mu and var within 5 standard
 * errors; m4 is the distribution's 4th central moment. Also checks every
 * value lies in [lo, hi). */
static void check_moments(const tf_tensor *t, double mu, double var,
                          double m4, double lo, double hi, const char *what) {
  double *x = values(t);
  double n = (double)t->n, s = 0, s2 = 0;
  for (int64_t i = 0; i < t->n; i++) {
    CHECK(x[i] >= lo && x[i] < hi, "%s: element %lld = %g", what,
          (long long)i, x[i]);
    s += x[i];
  }
  double mean = s / n;
  for (int64_t i = 0; i < t->n; i++) {
    s2 += (x[i] - mean) * (x[i] - mean);
  }
  free(x);
  double v = s2 / (n - 1);
  double se_mean = sqrt(var / n), se_var = sqrt((m4 - var * var) / n);
  ck_assert_msg(fabs(mean - mu) <= 5 * se_mean, "%s: mean %g, want %g +- %g",
                what, mean, mu, 5 * se_mean);
  ck_assert_msg(fabs(v - var) <= 5 * se_var, "%s: var %g, want %g +- %g",
                what, v, var, 5 * se_var);
}

/* Moments of the standard normal truncated to (-2, 2), by Simpson's rule. */
static void trunc_moments(double *var, double *m4) {
  int n = 20000;
  double h = 4.0 / n, z = 0, s2 = 0, s4 = 0;
  for (int i = 0; i <= n; i++) {
    double x = -2 + i * h, w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
    double p = w * exp(-x * x / 2);
    z += p;
    s2 += p * x * x;
    s4 += p * x * x * x * x;
  }
  *var = s2 / z;
  *m4 = s4 / z;
}

/* ---- distributions ---------------------------------------------------------- */

START_TEST(test_uniform_distribution) {
  for (int k = 0; k < 2; k++) {
    tf_dtype dt = k ? TF_FLOAT64 : TF_FLOAT32;
    tf_tensor *t = rnd1("RandomUniform", dt, NSAMP, 17, 4 + k);
    check_moments(t, 0.5, 1.0 / 12, 1.0 / 80, 0, 1, "uniform");
    double d = ks_stat(t, uniform_cdf);
    ck_assert_msg(d < KS_CRIT, "uniform KS %g >= %g", d, KS_CRIT);
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(test_normal_distribution) {
  static const char *ops[] = {"RandomStandardNormal", "RandomNormal"};
  for (int k = 0; k < 4; k++) {
    tf_dtype dt = k % 2 ? TF_FLOAT64 : TF_FLOAT32;
    tf_tensor *t = rnd1(ops[k / 2], dt, NSAMP, 99, 1000 + k);
    check_moments(t, 0, 1, 3, -INFINITY, INFINITY, "normal");
    double d = ks_stat(t, normal_cdf);
    ck_assert_msg(d < KS_CRIT, "normal KS %g >= %g", d, KS_CRIT);
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(test_truncated_distribution) {
  double var, m4;
  trunc_moments(&var, &m4);
  ck_assert(fabs(var - 0.7737413) < 1e-6); /* known value at +-2 sigma */
  for (int k = 0; k < 2; k++) {
    tf_dtype dt = k ? TF_FLOAT64 : TF_FLOAT32;
    tf_tensor *t = rnd1("TruncatedNormal", dt, NSAMP, 5, 6 + k);
    check_moments(t, 0, var, m4, nextafter(-2, 0), 2, "truncated normal");
    double d = ks_stat(t, trunc_cdf);
    ck_assert_msg(d < KS_CRIT, "truncated KS %g >= %g", d, KS_CRIT);
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(test_uniform_int_distribution) {
  for (int k = 0; k < 2; k++) {
    tf_dtype dt = k ? TF_INT64 : TF_INT32;
    tf_tensor *t = rnd_int(dt, NSAMP, -3, 7, 12, 34 + k);
    int64_t bins[10] = {0};
    for (int64_t i = 0; i < t->n; i++) {
      int64_t v = k ? ((int64_t *)t->data)[i] : ((int32_t *)t->data)[i];
      CHECK(v >= -3 && v < 7, "element %lld = %lld", (long long)i,
            (long long)v);
      bins[v + 3]++;
    }
    double chi2 = 0, e = NSAMP / 10.0;
    for (int b = 0; b < 10; b++) chi2 += (bins[b] - e) * (bins[b] - e) / e;
    ck_assert_msg(chi2 < 27.877, "chi2 %g with 9 dof", chi2); /* p = 0.001 */
    tf_tensor_unref(t);
  }
  /* Full ranges: no overflow, both signs show up. */
  tf_tensor *t = rnd_int(TF_INT32, 1000, INT32_MIN, INT32_MAX, 1, 2);
  tf_tensor *u = rnd_int(TF_INT64, 1000, INT64_MIN, INT64_MAX, 1, 2);
  int neg32 = 0, neg64 = 0;
  for (int64_t i = 0; i < 1000; i++) {
    neg32 += tf_tensor_get_i64(t, i) < 0;
    int64_t v = tf_tensor_get_i64(u, i);
    CHECK(v != INT64_MAX, "maxval drawn");
    neg64 += v < 0;
  }
  ck_assert(neg32 > 400 && neg32 < 600 && neg64 > 400 && neg64 < 600);
  tt_free((tf_tensor *[]){t, u}, 2);
}
END_TEST

/* ---- exact streams ------------------------------------------------------------- */

START_TEST(test_exact_values) {
  int64_t seed = 123456789012345, seed2 = -7;
  int64_t n = 75; /* batches of 16 groups, scalar groups, a partial one */
  tf_tensor *u = rnd1("RandomUniform", TF_FLOAT32, n, seed, seed2);
  tf_tensor *z = rnd1("RandomStandardNormal", TF_FLOAT64, n, seed, seed2);
  tf_tensor *tr = rnd1("TruncatedNormal", TF_FLOAT32, n, seed, seed2);
  tf_tensor *ti = rnd_int(TF_INT32, n, -100, 50, seed, seed2);
  tf_tensor *tl = rnd_int(TF_INT64, n, -5, 3, seed, seed2);
  for (int64_t i = 0; i < n; i++) {
    uint32_t w[4];
    block_at(seed, seed2, (uint64_t)i / 4, w);
    ck_assert(((float *)u->data)[i] == tf_philox_u32_to_float(w[i % 4]));
    ck_assert_int_eq(((int32_t *)ti->data)[i], -100 + (int32_t)(w[i % 4] % 150));
    block_at(seed, seed2, (uint64_t)i / 2, w);
    double d[2];
    tf_philox_box_muller_f64(w[0], w[1], w[2], w[3], &d[0], &d[1]);
    ck_assert(((double *)z->data)[i] == d[i % 2]);
    uint64_t bits = w[2 * (i % 2)] | ((uint64_t)w[2 * (i % 2) + 1] << 32);
    ck_assert_int_eq(((int64_t *)tl->data)[i], -5 + (int64_t)(bits % 8));
    tf_philox p;
    tf_philox_init(&p, (uint64_t)seed, (uint64_t)seed2);
    tf_philox_skip(&p, (uint64_t)(i / 4) * 256);
    tf_philox_single s;
    tf_philox_single_init(&s, &p);
    float f[4];
    tf_philox_truncated_normal_f32(&s, f);
    ck_assert(((float *)tr->data)[i] == f[i % 4]);
  }
  tt_free((tf_tensor *[]){u, z, tr, ti, tl}, 5);
}
END_TEST

/* Philox4x32-10 and TF's conversions written again in numpy: an independent
 * implementation of the whole stream. */
static const char *numpy_philox =
    "m = np.uint64(0xffffffff)\n"
    "def philox(c, k0, k1):\n"
    "    k0, k1 = np.uint64(k0), np.uint64(k1)\n"
    "    for r in range(10):\n"
    "        p0 = np.uint64(0xD2511F53) * c[0]\n"
    "        p1 = np.uint64(0xCD9E8D57) * c[2]\n"
    "        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & m,\n"
    "             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & m]\n"
    "        k0 = (k0 + np.uint64(0x9E3779B9)) & m\n"
    "        k1 = (k1 + np.uint64(0xBB67AE85)) & m\n"
    "    return np.stack(c, axis=1)\n"
    "seed, seed2, n = [int(x) % 2**64 for x in ins]\n"
    "g = np.arange((n + 3) // 4, dtype=np.uint64)\n"
    "hi = np.full_like(g, seed2 & 0xffffffff)\n"
    "c = [g & m, g >> np.uint64(32), hi, np.full_like(g, seed2 >> 32)]\n"
    "w = philox(c, seed & 0xffffffff, seed >> 32)\n"
    "f = ((w.reshape(-1)[:n] & np.uint64(0x7fffff)) | np.uint64(127 << 23))\n"
    "f = f.astype(np.uint32).view(np.float32) - np.float32(1)\n"
    "u = lambda a, b: (((a & np.uint64(0xfffff)) << np.uint64(32)) | b)"
    ".astype(np.float64) * 2.0**-52\n"
    "u1 = np.maximum(u(w[:, 0], w[:, 1]), 1e-7)\n"
    "z = np.sqrt(-2 * np.log(u1))\n"
    "t = 2 * np.pi * u(w[:, 2], w[:, 3])\n"
    "zz = np.stack([z * np.sin(t), z * np.cos(t)], axis=1).reshape(-1)\n"
    "outs = [f, zz[:n]]\n";

START_TEST(test_numpy_philox) {
  int64_t seed = (int64_t)(tt_rand_u64() >> 1), seed2 = (int64_t)tt_rand_u64();
  int64_t n = 1001;
  tf_tensor *in[3] = {tt_tensor_i(TF_INT64, tf_shape_scalar(), &seed),
                      tt_tensor_i(TF_INT64, tf_shape_scalar(), &seed2),
                      tt_tensor_i(TF_INT64, tf_shape_scalar(), &n)};
  tf_tensor *ref[2];
  /* Normal float64 uses one block per two values: only the first ~n/2
   * blocks, the same words numpy's "w" holds. */
  if (tt_numpy(numpy_philox, in, 3, ref, 2) == 2) {
    tf_tensor *u = rnd1("RandomUniform", TF_FLOAT32, n, seed, seed2);
    tt_assert_close(u, ref[0], 0, 0);
    tf_tensor *z = rnd1("RandomStandardNormal", TF_FLOAT64, n / 2, seed, seed2);
    tf_tensor *zr;
    tf_status st;
    int64_t half = n / 2;
    tf_shape hs = tf_shape_make(1, &half);
    ck_assert(tf_tensor_from_data(TF_FLOAT64, &hs, ref[1]->data,
                                  (size_t)half * 8, &zr, &st) == TF_OK);
    tt_assert_close(z, zr, 1e-12, 1e-12);
    tt_free((tf_tensor *[]){u, z, zr, ref[0], ref[1]}, 5);
  }
  tt_free(in, 3);
}
END_TEST

START_TEST(test_seeds) {
  tf_tensor *a = rnd1("RandomUniform", TF_FLOAT32, 64, 1, 2);
  tf_tensor *b = rnd1("RandomUniform", TF_FLOAT32, 64, 1, 2);
  tf_tensor *c = rnd1("RandomUniform", TF_FLOAT32, 64, 1, 3);
  tf_tensor *d = rnd1("RandomUniform", TF_FLOAT32, 64, 0, 3); /* seed2 only */
  tf_tensor *e = rnd1("RandomUniform", TF_FLOAT32, 64, 0, 3);
  ck_assert(tf_tensor_equal(a, b));
  ck_assert(!tf_tensor_equal(a, c));
  ck_assert(tf_tensor_equal(d, e));
  /* 0/0: a fresh seed per kernel instance. */
  tf_tensor *f = rnd1("RandomNormal", TF_FLOAT64, 64, 0, 0);
  tf_tensor *g = rnd1("RandomNormal", TF_FLOAT64, 64, 0, 0);
  ck_assert(!tf_tensor_equal(f, g));
  tt_free((tf_tensor *[]){a, b, c, d, e, f, g}, 7);
}
END_TEST

/* ---- pools and kernel state ------------------------------------------------------ */

static tf_node *build_node(tf_graph *g, const char *op, tf_tensor **in,
                           int n_in, const tf_attr_kv *at, int n_at) {
  tf_output ph[4];
  for (int i = 0; i < n_in; i++) {
    ph[i] = (tf_output){
        tt_placeholder(g, NULL, in[i]->dtype, in[i]->shape), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "r");
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, ph[i]);
  for (int i = 0; i < n_at; i++) tf_node_set_attr(b, at[i].name, at[i].value);
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  return n;
}

static tf_device test_device(tf_threadpool *pool) {
  return (tf_device){.name = "/job:localhost/replica:0/task:0/device:CPU:0",
                     .type = TF_DEVICE_CPU,
                     .alloc = tf_cpu_allocator(),
                     .pool = pool};
}

static tf_tensor *run_on_pool(const tf_node *n, tf_threadpool *pool,
                              tf_tensor **in) {
  tf_device dev = test_device(pool);
  tf_tensor *out[1] = {0};
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_kernel_run_node(n, &dev, in, out, &st) == TF_OK, "%s",
                st.msg);
  return out[0];
}

/* Every random op, seeded, on pools of 1, 2 and 3 threads and inline. */
START_TEST(test_thread_count_independent) {
  tf_threadpool *pools[3] = {tf_threadpool_new(1), tf_threadpool_new(2),
                             tf_threadpool_new(3)};
  static const char *ops[] = {"RandomUniform", "RandomStandardNormal",
                              "TruncatedNormal", "RandomUniformInt",
                              "RandomShuffle"};
  int64_t n = 100003;
  for (int k = 0; k < 5; k++) {
    for (int f64 = 0; f64 < 2; f64++) {
      tf_graph *g = tf_graph_new();
      tf_tensor *in[3] = {shape_vec(1, &n), NULL, NULL};
      tf_attr_kv at[3] = {{"seed", tf_attr_int(77)}, {"seed2", tf_attr_int(f64)},
                          {"dtype", tf_attr_type_v(f64 ? TF_FLOAT64 : TF_FLOAT32)}};
      int n_in = 1, n_at = 3;
      if (k == 3) {
        tf_dtype it = f64 ? TF_INT64 : TF_INT32;
        in[1] = tt_tensor_i(it, tf_shape_scalar(), (int64_t[]){-1000});
        in[2] = tt_tensor_i(it, tf_shape_scalar(), (int64_t[]){1000});
        n_in = 3;
        n_at = 2;
      } else if (k == 4) {
        tf_tensor_unref(in[0]);
        in[0] = tt_rand(f64 ? TF_FLOAT64 : TF_INT32, SHAPE(n), 0, 1000);
        n_at = 2;
      }
      tf_node *node = build_node(g, ops[k], in, n_in, at, n_at);
      tf_tensor *ref = run_on_pool(node, NULL, in);
      for (int p = 0; p < 3; p++) {
        tf_tensor *o = run_on_pool(node, pools[p], in);
        ck_assert_msg(tf_tensor_equal(o, ref), "%s f64=%d differs on a pool "
                      "of %d threads", ops[k], f64, p + 1);
        tf_tensor_unref(o);
      }
      tf_tensor_unref(ref);
      tt_free(in, n_in);
      tf_graph_free(g);
    }
  }
  for (int p = 0; p < 3; p++) tf_threadpool_free(pools[p]);
}
END_TEST

static tf_tensor *compute_with_state(const tf_node *n, const tf_kernel_def *k,
                                     void *state, tf_tensor **in,
                                     tf_threadpool *pool) {
  tf_device dev = test_device(pool);
  tf_tensor *outs[1] = {0};
  tf_status st;
  tf_status_init(&st);
  tf_kernel_ctx ctx = {.node = n, .def = k, .state = state, .device = &dev,
                       .pool = pool, .n_inputs = tf_node_num_inputs(n),
                       .inputs = in, .n_outputs = 1, .outputs = outs,
                       .status = &st};
  ck_assert_msg(k->compute(&ctx) == TF_OK, "%s", st.msg);
  return outs[0];
}

/* One kernel instance run twice continues its stream: the second output is
 * the block range after the 256 * n blocks the first one reserved. */
START_TEST(test_stream_continues) {
  tf_graph *g = tf_graph_new();
  int64_t n = 10, seed = 3, seed2 = 9;
  tf_tensor *in[1] = {shape_vec(1, &n)};
  tf_attr_kv at[3] = {{"seed", tf_attr_int(seed)}, {"seed2", tf_attr_int(seed2)},
                      {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *node = build_node(g, "RandomUniform", in, 1, at, 3);
  tf_status st;
  const tf_kernel_def *k = tf_kernel_for_node(node, TF_DEVICE_CPU, &st);
  ck_assert(k != NULL && k->init != NULL);
  void *state = NULL;
  ck_assert(k->init(node, &state, &st) == TF_OK);
  tf_threadpool *pool = tf_threadpool_new(2);
  tf_tensor *o[3];
  for (int r = 0; r < 3; r++) {
    o[r] = compute_with_state(node, k, state, in, r == 1 ? pool : NULL);
  }
  for (int r = 0; r < 3; r++) {
    for (int64_t i = 0; i < n; i++) {
      uint32_t w[4];
      block_at(seed, seed2, (uint64_t)(r * 256 * n + i / 4), w);
      ck_assert(((float *)o[r]->data)[i] == tf_philox_u32_to_float(w[i % 4]));
    }
  }
  ck_assert(!tf_tensor_equal(o[0], o[1]));
  /* A fresh instance starts over. */
  tf_tensor *fresh = run_on_pool(node, NULL, in);
  ck_assert(tf_tensor_equal(fresh, o[0]));
  k->free_state(state);
  tt_free(o, 3);
  tt_free((tf_tensor *[]){fresh, in[0]}, 2);
  tf_threadpool_free(pool);
  tf_graph_free(g);
}
END_TEST

/* ---- RandomShuffle ------------------------------------------------------------------ */

static tf_tensor *shuffle(tf_tensor *v, int64_t seed, int64_t seed2) {
  tf_attr_kv at[2] = {{"seed", tf_attr_int(seed)}, {"seed2", tf_attr_int(seed2)}};
  return tt_run1("RandomShuffle", &v, 1, at, 2);
}

START_TEST(test_shuffle_permutation) {
  int64_t n = 1000;
  int64_t *iota = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) iota[i] = i;
  tf_tensor *v = tt_tensor_i(TF_INT32, SHAPE(n), iota);
  tf_tensor *o = shuffle(v, 8, 9);
  int *seen = calloc((size_t)n, sizeof(int));
  int fixed = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = tf_tensor_get_i64(o, i);
    CHECK(x >= 0 && x < n && !seen[x], "element %lld = %lld repeats or is "
          "out of range", (long long)i, (long long)x);
    seen[x] = 1;
    fixed += x == i;
  }
  ck_assert_msg(fixed < 10, "%d fixed points: not shuffled", fixed);
  /* Exact: TF's forward Fisher-Yates on single 32-bit words. */
  tf_philox p;
  tf_philox_init(&p, 8, 9);
  tf_philox_single s;
  tf_philox_single_init(&s, &p);
  for (int64_t i = 0; i + 1 < n; i++) {
    int64_t j = i + (int64_t)(tf_philox_single_next(&s) % (uint32_t)(n - i));
    int64_t t = iota[i];
    iota[i] = iota[j];
    iota[j] = t;
  }
  tf_tensor *w = tt_tensor_i(TF_INT32, SHAPE(n), iota);
  tt_assert_close(o, w, 0, 0);
  free(iota);
  free(seen);
  tt_free((tf_tensor *[]){v, o, w}, 3);
}
END_TEST

/* Rows move whole, in the same order a 1-D shuffle with the same seed gives;
 * strings are deep-copied. */
START_TEST(test_shuffle_rows_and_strings) {
  int64_t n = 50;
  tf_tensor *m = tt_rand(TF_FLOAT64, SHAPE(n, 3), 0, 1);
  tf_tensor *idx = tt_rand(TF_INT64, SHAPE(n), 0, 0);
  for (int64_t i = 0; i < n; i++) {
    ((int64_t *)idx->data)[i] = i;
  }
  tf_tensor *om = shuffle(m, 4, 2), *oi = shuffle(idx, 4, 2);
  for (int64_t i = 0; i < n; i++) {
    int64_t src = tf_tensor_get_i64(oi, i);
    for (int e = 0; e < 3; e++) {
      CHECK(tf_tensor_get_f64(om, i * 3 + e) ==
                tf_tensor_get_f64(m, src * 3 + e), "row %lld", (long long)i);
    }
  }
  tf_tensor *s;
  tf_status st;
  tf_shape ss = SHAPE(4);
  ck_assert(tf_tensor_new(TF_STRING, &ss, &s, &st) == TF_OK);
  static const char *words[] = {"one", "two", "three", "four"};
  for (int i = 0; i < 4; i++) {
    tf_tensor_set_string(s, i, words[i], strlen(words[i]), &st);
  }
  tf_tensor *os = shuffle(s, 4, 2);
  tf_tensor *idx4 = tt_tensor_i(TF_INT64, SHAPE(4), (int64_t[]){0, 1, 2, 3});
  tf_tensor *oi4 = shuffle(idx4, 4, 2);
  tf_tensor_unref(s);
  for (int i = 0; i < 4; i++) {
    const tf_string *e = &tf_tensor_strings(os)[i];
    ck_assert_str_eq(e->data, words[tf_tensor_get_i64(oi4, i)]);
  }
  tt_free((tf_tensor *[]){m, idx, om, oi, os, idx4, oi4}, 7);
}
END_TEST

START_TEST(test_shuffle_trivial) {
  tf_tensor *a = tf_tensor_scalar_f32(3), *b = tt_rand(TF_FLOAT32, SHAPE(1, 5), 0, 1);
  tf_tensor *c = tt_rand(TF_FLOAT32, SHAPE(5, 0), 0, 1);
  tf_tensor *d = tt_rand(TF_FLOAT32, SHAPE(0), 0, 1);
  tf_tensor *in[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    tf_tensor *o = shuffle(in[i], 1, 1);
    ck_assert(tf_tensor_equal(o, in[i]));
    tf_tensor_unref(o);
  }
  tt_free(in, 4);
}
END_TEST

/* ---- errors and flags ------------------------------------------------------------------ */

START_TEST(test_errors) {
  int64_t lo = 5, hi = 3, n = 4, zero = 0;
  tf_tensor *in[3] = {shape_vec(1, &n), tt_tensor_i(TF_INT32, tf_shape_scalar(), &lo),
                      tt_tensor_i(TF_INT32, tf_shape_scalar(), &hi)};
  const char *m = tt_run_fail("RandomUniformInt", in, 3, NULL, 0,
                              TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "Need minval < maxval: 5 >= 3"), "%s", m);
  tf_tensor_unref(in[0]);
  in[0] = shape_vec(1, &zero); /* empty output: no range needed, as TF */
  tf_tensor *o = tt_run1("RandomUniformInt", in, 3, NULL, 0);
  ck_assert_int_eq(o->n, 0);
  tf_tensor_unref(o);
  tf_tensor_unref(in[1]);
  in[1] = tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){1, 2});
  m = tt_run_fail("RandomUniformInt", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "minval must be 0-D"), "%s", m);
  tt_free(in, 3);

  tf_attr_kv at[1] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_tensor *neg = tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){2, -1});
  m = tt_run_fail("RandomUniform", &neg, 1, at, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "shape[1] = -1 must be >= 0"), "%s", m);
  tf_tensor *mat = tt_tensor_i(TF_INT32, SHAPE(1, 2), (int64_t[]){2, 2});
  m = tt_run_fail("RandomNormal", &mat, 1, at, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "shape must be a vector"), "%s", m);
  tf_tensor *huge = tt_tensor_i(TF_INT64, SHAPE(3),
                                (int64_t[]){1ll << 40, 1ll << 40, 1ll << 40});
  tf_status st;
  tf_tensor *out[1];
  int nout = 1;
  tf_code rc = tf_execute("TruncatedNormal", &huge, 1, at, 1, out, &nout, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT || rc == TF_RESOURCE_EXHAUSTED,
                "%s", st.msg);
  tf_attr_kv bad[1] = {{"dtype", tf_attr_type_v(TF_INT32)}};
  tt_run_fail("RandomUniform", &neg, 1, bad, 1, TF_INVALID_ARGUMENT);
  tt_free((tf_tensor *[]){neg, mat, huge}, 3);
}
END_TEST

START_TEST(test_ops_stateful) {
  static const char *ops[] = {"RandomUniform", "RandomStandardNormal",
                              "RandomNormal", "TruncatedNormal",
                              "RandomUniformInt", "RandomShuffle"};
  for (int i = 0; i < 6; i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert_msg(d != NULL && (d->flags & TF_OP_STATEFUL), "%s", ops[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_random");
  TCase *td = tcase_create("distributions");
  tcase_add_test(td, test_uniform_distribution);
  tcase_add_test(td, test_normal_distribution);
  tcase_add_test(td, test_truncated_distribution);
  tcase_add_test(td, test_uniform_int_distribution);
  suite_add_tcase(s, td);
  TCase *tx = tcase_create("streams");
  tcase_add_test(tx, test_exact_values);
  tcase_add_test(tx, test_numpy_philox);
  tcase_add_test(tx, test_seeds);
  tcase_add_test(tx, test_thread_count_independent);
  tcase_add_test(tx, test_stream_continues);
  suite_add_tcase(s, tx);
  TCase *tsh = tcase_create("shuffle");
  tcase_add_test(tsh, test_shuffle_permutation);
  tcase_add_test(tsh, test_shuffle_rows_and_strings);
  tcase_add_test(tsh, test_shuffle_trivial);
  suite_add_tcase(s, tsh);
  TCase *te = tcase_create("errors");
  tcase_add_test(te, test_errors);
  tcase_add_test(te, test_ops_stateful);
  suite_add_tcase(s, te);
  return s;
}
