/* cpu_candidate_sampling_test.c: the CPU kernels of LogUniformCandidateSampler
 * and ComputeAccidentalHits.
 *
 * - Exact samples: the candidates equal a reference drawn here from the
 *   seeded Philox words (k = floor(exp(u * log(R + 1)) - 1) % R, u from two
 *   words, rejection of repeats when unique), and both expected counts equal
 *   the closed form recomputed in float64 (num_sampled * P(k), or
 *   -expm1(tries * log1p(-P(k))) after rejections) within float rounding
 *   (rtol 1e-6), for unique and non-unique draws; every candidate is in
 *   [0, R) and unique draws are distinct.
 * - Distribution: 200k non-unique draws over R = 20 classes pass a
 *   chi-square test against P(k) at p = 0.001 (19 dof: 43.82).
 * - Seeds: one session's successive steps differ, a fresh session with the
 *   same seeds repeats the first step, seed 0/0 differs between sessions.
 * - Accidental hits against a brute-force reference (last position of a
 *   repeated candidate), and every bad attr or input gives INVALID_ARGUMENT
 *   naming what is wrong. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/philox.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ck_abort_msg(__VA_ARGS__);                                               \
    }                                                                          \
  } while (0)

/* int64 values uniform in [0, range) of the given shape. */
static tf_tensor *rand_ids(tf_shape shape, int64_t range) {
  tf_tensor *t = tt_rand(TF_INT64, shape, 0, (double)(range - 1));
  for (int64_t i = 0; i < t->n; i++) {
    CHECK(((int64_t *)t->data)[i] >= 0 && ((int64_t *)t->data)[i] < range,
          "tt_rand gave %lld", (long long)((int64_t *)t->data)[i]);
  }
  return t;
}

static tf_tensor *classes(int64_t batch, int64_t num_true, int64_t range) {
  return rand_ids(tf_shape_of(2, batch, num_true), range);
}

/* Runs the sampler once (a fresh kernel instance): out[0..3). */
static void run_sampler(tf_tensor *tc, int64_t num_true, int64_t num_sampled,
                        bool unique, int64_t range_max, int64_t seed,
                        int64_t seed2, tf_tensor **out) {
  tf_attr_kv at[] = {{"num_true", tf_attr_int(num_true)},
                     {"num_sampled", tf_attr_int(num_sampled)},
                     {"unique", tf_attr_bool(unique)},
                     {"range_max", tf_attr_int(range_max)},
                     {"seed", tf_attr_int(seed)},
                     {"seed2", tf_attr_int(seed2)}};
  int n = tt_run("LogUniformCandidateSampler", &tc, 1, at, 6, out, 3);
  ck_assert_int_eq(n, 3);
}

static double p_ref(int64_t k, int64_t range_max) {
  return (log((double)k + 2) - log((double)k + 1)) / log((double)range_max + 1);
}

/* The reference draw from the stream of (seed, seed2) at offset 0: fills
 * want[0..n) and returns the number of tries. */
static int64_t ref_sample(int64_t seed, int64_t seed2, int64_t n, bool unique,
                          int64_t range_max, int64_t *want) {
  tf_philox p;
  tf_philox_init(&p, (uint64_t)seed, (uint64_t)seed2);
  uint32_t w[4];
  int used = 4;
  int64_t tries = 0;
  for (int64_t i = 0; i < n; tries++) {
    uint32_t x[2];
    for (int h = 0; h < 2; h++) {
      if (used == 4) {
        tf_philox_next(&p, w);
        used = 0;
      }
      x[h] = w[used++];
    }
    /* u in [0, 1) from 52 bits: the low 20 of the first word above the
     * second word (TF's Uint64ToDouble). */
    uint64_t bits = ((uint64_t)(x[0] & 0xfffffu) << 32) | x[1];
    double u = (double)bits / 4503599627370496.0;
    int64_t k = (int64_t)(exp(u * log((double)range_max + 1)) - 1) % range_max;
    bool dup = false;
    for (int64_t j = 0; unique && j < i; j++) {
      dup = dup || want[j] == k;
    }
    if (!dup) {
      want[i++] = k;
    }
  }
  return tries;
}

static double ec_ref(double p, int64_t n, int64_t tries) {
  return tries == n ? p * (double)n : -expm1((double)tries * log1p(-p));
}

static void check_draw(int64_t num_sampled, bool unique, int64_t range_max) {
  int64_t seed = 17, seed2 = 5, num_true = 3;
  tf_tensor *tc = classes(4, num_true, range_max), *o[3];
  run_sampler(tc, num_true, num_sampled, unique, range_max, seed, seed2, o);
  tt_assert_shape(o[0], 1, num_sampled);
  tt_assert_shape(o[1], 2, 4, num_true);
  tt_assert_shape(o[2], 1, num_sampled);
  int64_t *want = calloc((size_t)num_sampled, sizeof(int64_t));
  int64_t tries = ref_sample(seed, seed2, num_sampled, unique, range_max, want);
  const int64_t *c = o[0]->data;
  for (int64_t i = 0; i < num_sampled; i++) {
    CHECK(c[i] >= 0 && c[i] < range_max, "candidate %lld out of range",
          (long long)c[i]);
    CHECK(c[i] == want[i], "candidate %lld: got %lld, want %lld", (long long)i,
          (long long)c[i], (long long)want[i]);
    for (int64_t j = 0; unique && j < i; j++) {
      CHECK(c[j] != c[i], "unique draw repeats %lld", (long long)c[i]);
    }
    double e = ec_ref(p_ref(c[i], range_max), num_sampled, tries);
    double g = ((const float *)o[2]->data)[i];
    CHECK(fabs(g - e) <= 1e-6 * fabs(e) + 1e-30, "sampled_expected_count[%lld]"
          " = %.9g, want %.9g (tries %lld)", (long long)i, g, e,
          (long long)tries);
  }
  for (int64_t i = 0; i < tc->n; i++) {
    double e = ec_ref(p_ref(((int64_t *)tc->data)[i], range_max), num_sampled,
                      tries);
    double g = ((const float *)o[1]->data)[i];
    CHECK(fabs(g - e) <= 1e-6 * fabs(e) + 1e-30, "true_expected_count[%lld] = "
          "%.9g, want %.9g", (long long)i, g, e);
  }
  if (unique && num_sampled > 1 && num_sampled > range_max / 2) {
    ck_assert_int_gt(tries, num_sampled); /* the rejection branch ran */
  }
  free(want);
  tt_free(o, 3);
  tf_tensor_unref(tc);
}

START_TEST(test_exact_draws) {
  tt_rng_reseed(tt_seed() ^ 11);
  check_draw(20, false, 50);
  check_draw(1000, false, 7);
  check_draw(20, true, 30);    /* many rejections */
  check_draw(64, true, 64);    /* every class */
  check_draw(3, true, 1000000);
  check_draw(1, true, 1);
}
END_TEST

START_TEST(test_distribution) {
  const int64_t n = 200000, r = 20;
  tf_tensor *tc = classes(1, 1, r), *o[3];
  run_sampler(tc, 1, n, false, r, 99, 1, o);
  int64_t count[20] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ((int64_t *)o[0]->data)[i];
    CHECK(k >= 0 && k < r, "candidate %lld out of range", (long long)k);
    count[k]++;
  }
  double chi2 = 0, psum = 0;
  for (int64_t k = 0; k < r; k++) {
    double e = (double)n * p_ref(k, r);
    psum += p_ref(k, r);
    chi2 += ((double)count[k] - e) * ((double)count[k] - e) / e;
  }
  ck_assert_double_eq_tol(psum, 1.0, 1e-12); /* P sums to one */
  ck_assert_msg(chi2 < 43.82, "chi-square %.2f >= 43.82 (19 dof, p = 0.001)",
                chi2);
  tt_free(o, 3);
  tf_tensor_unref(tc);
}
END_TEST

/* A graph with a sampler over a constant true_classes. */
static tf_graph *sampler_graph(int64_t seed, int64_t seed2) {
  tf_graph *g = tf_graph_new();
  tf_output tc = {tt_const(g, "tc", classes(2, 1, 1000)), 0};
  tf_attr_kv at[] = {{"num_true", tf_attr_int(1)},
                     {"num_sampled", tf_attr_int(50)},
                     {"unique", tf_attr_bool(true)},
                     {"range_max", tf_attr_int(1000)},
                     {"seed", tf_attr_int(seed)},
                     {"seed2", tf_attr_int(seed2)}};
  tt_node(g, "LogUniformCandidateSampler", "s", &tc, 1, at, 6);
  return g;
}

static void run_steps(tf_graph *g, tf_tensor **out, int n) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  const char *f[] = {"s:0"};
  for (int i = 0; i < n; i++) {
    ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, f, &out[i], 1, NULL,
                                 0, NULL, &st) == TF_OK, "%s", st.msg);
  }
  tf_session_free(s);
}

START_TEST(test_seeds) {
  tf_graph *g = sampler_graph(3, 4);
  tf_tensor *a[2], *b[1];
  run_steps(g, a, 2);
  run_steps(g, b, 1);
  ck_assert_msg(!tf_tensor_equal(a[0], a[1]), "two steps drew the same");
  ck_assert_msg(tf_tensor_equal(a[0], b[0]), "same seed, different draw");
  tt_free(a, 2);
  tt_free(b, 1);
  tf_graph_free(g);
  g = sampler_graph(0, 0);
  run_steps(g, a, 1);
  run_steps(g, b, 1);
  ck_assert_msg(!tf_tensor_equal(a[0], b[0]), "seed 0/0 repeated a draw");
  tt_free(a, 1);
  tt_free(b, 1);
  tf_graph_free(g);
}
END_TEST

static void expect_sampler_error(tf_tensor *tc, int64_t num_true,
                                 int64_t num_sampled, bool unique,
                                 int64_t range_max, const char *want) {
  tf_attr_kv at[] = {{"num_true", tf_attr_int(num_true)},
                     {"num_sampled", tf_attr_int(num_sampled)},
                     {"unique", tf_attr_bool(unique)},
                     {"range_max", tf_attr_int(range_max)}};
  const char *msg = tt_run_fail("LogUniformCandidateSampler", &tc, 1, at, 4,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, want) != NULL, "'%s' lacks '%s'", msg, want);
  ck_assert_msg(strstr(msg, "LogUniformCandidateSampler") != NULL,
                "'%s' does not name the node", msg);
}

START_TEST(test_sampler_errors) {
  tf_tensor *tc = classes(3, 2, 10);
  expect_sampler_error(tc, 2, 4, true, 0, "range_max");
  expect_sampler_error(tc, 2, 0, false, 10, "num_sampled");
  expect_sampler_error(tc, 0, 4, false, 10, "num_true");
  expect_sampler_error(tc, 2, 11, true, 10, "range_max >= num_sampled");
  expect_sampler_error(tc, 3, 4, false, 10, "num_true = 3");
  ((int64_t *)tc->data)[3] = 10;
  expect_sampler_error(tc, 2, 4, false, 10, "true_classes[1, 1] = 10");
  ((int64_t *)tc->data)[3] = -1;
  expect_sampler_error(tc, 2, 4, false, 10, "true_classes[1, 1] = -1");
  tf_tensor *v = tt_tensor_i(TF_INT64, tf_shape_of(1, 2), (int64_t[]){1, 2});
  expect_sampler_error(v, 2, 4, false, 10, "matrix");
  tf_tensor *i32 = tt_tensor_i(TF_INT32, tf_shape_of(2, 1, 1), (int64_t[]){1});
  tf_attr_kv at[] = {{"num_true", tf_attr_int(1)},
                     {"num_sampled", tf_attr_int(1)},
                     {"unique", tf_attr_bool(false)},
                     {"range_max", tf_attr_int(2)}};
  tt_run_fail("LogUniformCandidateSampler", &i32, 1, at, 4,
              TF_INVALID_ARGUMENT);
  tt_free((tf_tensor *[]){tc, v, i32}, 3);
}
END_TEST

/* ---- ComputeAccidentalHits ------------------------------------------------ */

START_TEST(test_accidental_hits) {
  tt_rng_reseed(tt_seed() ^ 23);
  for (int rep = 0; rep < 20; rep++) {
    int64_t b = 1 + (int64_t)(tt_rand_u64() % 6), t = 1 + rep % 3, ns = 8;
    tf_tensor *tc = classes(b, t, 12), *sc = rand_ids(tf_shape_of(1, ns), 12);
    tf_tensor *o[3];
    tf_attr_kv at[] = {{"num_true", tf_attr_int(t)}};
    ck_assert_int_eq(tt_run("ComputeAccidentalHits", (tf_tensor *[]){tc, sc},
                            2, at, 1, o, 3), 3);
    const int64_t *tv = tc->data, *sv = sc->data;
    int64_t h = 0;
    for (int64_t i = 0; i < b * t; i++) {
      int64_t last = -1;
      for (int64_t j = 0; j < ns; j++) {
        last = sv[j] == tv[i] ? j : last;
      }
      if (last < 0) {
        continue;
      }
      CHECK(h < o[0]->n, "too few hits (%lld)", (long long)o[0]->n);
      ck_assert_int_eq(((int32_t *)o[0]->data)[h], i / t);
      ck_assert_int_eq(((int64_t *)o[1]->data)[h], last);
      ck_assert(((float *)o[2]->data)[h] == -FLT_MAX);
      h++;
    }
    ck_assert_int_eq(o[0]->n, h);
    tt_assert_shape(o[1], 1, h);
    tt_assert_shape(o[2], 1, h);
    tt_free(o, 3);
    tt_free((tf_tensor *[]){tc, sc}, 2);
  }
}
END_TEST

START_TEST(test_accidental_hits_errors) {
  tf_tensor *tc = classes(2, 2, 5), *sc = classes(2, 2, 5);
  tf_tensor *v = tt_tensor_i(TF_INT64, tf_shape_of(1, 2), (int64_t[]){1, 2});
  tf_attr_kv at[] = {{"num_true", tf_attr_int(2)}};
  const char *m = tt_run_fail("ComputeAccidentalHits", (tf_tensor *[]){tc, sc},
                              2, at, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "sampled_candidates must be a vector"), "%s", m);
  m = tt_run_fail("ComputeAccidentalHits", (tf_tensor *[]){v, v}, 2, at, 1,
                  TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "true_classes must be a matrix"), "%s", m);
  tf_attr_kv at3[] = {{"num_true", tf_attr_int(3)}};
  m = tt_run_fail("ComputeAccidentalHits", (tf_tensor *[]){tc, v}, 2, at3, 1,
                  TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "num_true = 3"), "%s", m);
  tt_free((tf_tensor *[]){tc, sc, v}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_candidate_sampling");
  TCase *tc = tcase_create("sampler");
  tcase_add_test(tc, test_exact_draws);
  tcase_add_test(tc, test_distribution);
  tcase_add_test(tc, test_seeds);
  tcase_add_test(tc, test_sampler_errors);
  suite_add_tcase(s, tc);
  TCase *th = tcase_create("accidental_hits");
  tcase_add_test(th, test_accidental_hits);
  tcase_add_test(th, test_accidental_hits_errors);
  suite_add_tcase(s, th);
  return s;
}
