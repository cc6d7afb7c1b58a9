/* cpu_topk_test.c: TopKV2 and InTopKV2 on CPU against plain reference
 * loops written here (a selection of the best remaining position by value
 * in double, lower index first on ties; a count of larger predictions), on
 * fresh random inputs with many ties (small integer ranges), for every
 * dtype TopKV2 has, k from 0 to the row length, sorted true and false;
 * plus empty inputs, infinities, NaN and out-of-range targets for
 * InTopKV2, and the errors naming k and the input.
 *
 * Tolerances: both ops only select and compare, so results must match
 * exactly (values, indices and booleans). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg,
                needle);
}

/* Checks values and indices of TopKV2(x, k) row by row against a
 * selection in double (exact for every value used here). */
static void check_top_k(const tf_tensor *x, int k, bool sorted) {
  tf_tensor *kt = tf_tensor_scalar_i32(k);
  tf_attr_kv kv = {"sorted", tf_attr_bool(sorted)};
  tf_tensor *out[2];
  ck_assert_int_eq(tt_run("TopKV2", (tf_tensor *[]){(tf_tensor *)x, kt}, 2,
                          &kv, 1, out, 2), 2);
  int64_t n = x->shape.dims[x->shape.rank - 1], rows = n ? x->n / n : 0;
  tf_shape os = x->shape;
  os.dims[os.rank - 1] = k;
  ck_assert(tf_shape_equal(&out[0]->shape, &os));
  ck_assert(tf_shape_equal(&out[1]->shape, &os));
  ck_assert_int_eq(out[0]->dtype, x->dtype);
  ck_assert_int_eq(out[1]->dtype, TF_INT32);
  bool *used = calloc((size_t)n + 1, 1);
  for (int64_t r = 0; r < rows; r++) {
    memset(used, 0, (size_t)n + 1);
    for (int j = 0; j < k; j++) {
      int64_t best = -1;
      for (int64_t i = 0; i < n; i++) {
        double v = tf_tensor_get_f64(x, r * n + i);
        if (!used[i] && (best < 0 || v > tf_tensor_get_f64(x, r * n + best))) {
          best = i;
        }
      }
      used[best] = true;
      int64_t gi = tf_tensor_get_i64(out[1], r * k + j);
      ck_assert_msg(gi == best, "row %lld pos %d: index %lld, want %lld",
                    (long long)r, j, (long long)gi, (long long)best);
      ck_assert(tf_tensor_get_f64(out[0], r * k + j) ==
                tf_tensor_get_f64(x, r * n + best));
    }
  }
  free(used);
  tt_free(out, 2);
  tf_tensor_unref(kt);
}

START_TEST(test_top_k_random) {
  static const tf_dtype dts[12] = {TF_FLOAT32, TF_FLOAT64, TF_INT8,
                                   TF_INT16,   TF_INT32,   TF_INT64,
                                   TF_UINT8,   TF_UINT16,  TF_UINT32,
                                   TF_UINT64,  TF_FLOAT16, TF_BFLOAT16};
  for (int d = 0; d < 12; d++) {
    bool uns = dts[d] == TF_UINT8 || dts[d] == TF_UINT16 ||
               dts[d] == TF_UINT32 || dts[d] == TF_UINT64;
    /* Small integer ranges give many ties (half types: random reals in
     * [-4, 4), rounded to half precision, still tie now and then). */
    tf_tensor *x = tt_rand(dts[d], SHAPE(3, 4, 9), uns ? 0 : -4, 4);
    for (int k = 0; k <= 9; k += 3) {
      check_top_k(x, k, k % 2 == 0);
    }
    tf_tensor_unref(x);
  }
  tf_tensor *f = tt_rand(TF_FLOAT32, SHAPE(5, 200), -1, 1);
  check_top_k(f, 17, true);
  check_top_k(f, 200, false);
  tf_tensor_unref(f);
}
END_TEST

START_TEST(test_top_k_hand) {
  /* [1, 3, 3, -inf, inf]: k 3 -> inf, 3, 3 at 4, 1, 2. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(5),
                           (double[]){1, 3, 3, -INFINITY, INFINITY});
  tf_tensor *k = tf_tensor_scalar_i32(3);
  tf_tensor *out[2];
  tt_run("TopKV2", (tf_tensor *[]){x, k}, 2, NULL, 0, out, 2);
  tf_tensor *wv = tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){INFINITY, 3, 3});
  tf_tensor *wi = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){4, 1, 2});
  tt_assert_close(out[0], wv, 0, 0);
  tt_assert_close(out[1], wi, 0, 0);
  tt_free((tf_tensor *[]){x, k, out[0], out[1], wv, wi}, 6);
  /* Empty rows and k = 0. */
  x = tt_rand(TF_FLOAT64, SHAPE(0, 3), -1, 1);
  check_top_k(x, 2, true);
  tf_tensor_unref(x);
  x = tt_rand(TF_INT64, SHAPE(2, 0), -1, 1);
  check_top_k(x, 0, true);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(test_top_k_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *k = tf_tensor_scalar_i32(4);
  assert_has(tt_run_fail("TopKV2", (tf_tensor *[]){x, k}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "needed 4");
  tf_tensor_unref(k);
  k = tf_tensor_scalar_i32(-1);
  assert_has(tt_run_fail("TopKV2", (tf_tensor *[]){x, k}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "k >= 0");
  tf_tensor_unref(k);
  k = tf_tensor_vec_i32(1, (int32_t[]){1});
  assert_has(tt_run_fail("TopKV2", (tf_tensor *[]){x, k}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "k must be");
  tf_tensor_unref(k);
  tf_tensor *s = tf_tensor_scalar_f32(1);
  k = tf_tensor_scalar_i32(1);
  assert_has(tt_run_fail("TopKV2", (tf_tensor *[]){s, k}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "input must be");
  tt_free((tf_tensor *[]){x, k, s}, 3);
}
END_TEST

/* ---- InTopKV2 ------------------------------------------------------------- */

/* TF's rule, written out: false if the target is out of range or any
 * prediction of the row is non-finite, else count(p > p[t]) < k. */
static bool ref_in_top_k(const float *p, int64_t c, int64_t t, int64_t k) {
  if (t < 0 || t >= c) {
    return false;
  }
  int64_t more = 0;
  for (int64_t i = 0; i < c; i++) {
    if (!isfinite(p[i])) {
      return false;
    }
    more += (double)p[i] > (double)p[t];
  }
  return more < k;
}

START_TEST(test_in_top_k_random) {
  for (int tdt = 0; tdt < 2; tdt++) {
    tf_dtype dt = tdt ? TF_INT64 : TF_INT32;
    /* Integer-valued predictions make ties common. */
    tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(40, 6), -3, 3);
    float *pv = p->data;
    for (int64_t i = 0; i < p->n; i++) {
      pv[i] = roundf(pv[i]);
    }
    pv[6 * 5 + 2] = NAN;
    pv[6 * 9 + 0] = INFINITY;
    tf_tensor *t = tt_rand(dt, SHAPE(40), -1, 6); /* -1 and 6: out of range */
    for (int64_t k = -1; k <= 7; k++) {
      tf_tensor *kt = dt == TF_INT64 ? tf_tensor_scalar_i64(k)
                                     : tf_tensor_scalar_i32((int32_t)k);
      tf_tensor *o = tt_run1("InTopKV2", (tf_tensor *[]){p, t, kt}, 3, NULL, 0);
      ck_assert_int_eq(o->dtype, TF_BOOL);
      for (int64_t r = 0; r < 40; r++) {
        bool want = ref_in_top_k(pv + r * 6, 6, tf_tensor_get_i64(t, r), k);
        ck_assert_msg(((bool *)o->data)[r] == want, "row %lld k %lld",
                      (long long)r, (long long)k);
      }
      tt_free((tf_tensor *[]){kt, o}, 2);
    }
    tt_free((tf_tensor *[]){p, t}, 2);
  }
}
END_TEST

START_TEST(test_in_top_k_hand) {
  /* Row [1, 3, 3, 0], k 1: targets 1 and 2 tie for the top (both true),
   * 0 false; row with NaN elsewhere: false. */
  tf_tensor *p = tt_tensor(TF_FLOAT32, SHAPE(4, 4),
                           (double[]){1, 3, 3, 0, 1, 3, 3, 0, 1, 3, 3, 0, 5,
                                      NAN, 1, 1});
  tf_tensor *t = tt_tensor_i(TF_INT32, SHAPE(4), (int64_t[]){1, 2, 0, 0});
  tf_tensor *k = tf_tensor_scalar_i32(1);
  tf_tensor *o = tt_run1("InTopKV2", (tf_tensor *[]){p, t, k}, 3, NULL, 0);
  const bool *b = o->data;
  ck_assert(b[0] && b[1] && !b[2] && !b[3]);
  tt_free((tf_tensor *[]){p, t, k, o}, 4);
  p = tt_rand(TF_FLOAT32, SHAPE(0, 3), -1, 1);
  t = tt_tensor_i(TF_INT64, SHAPE(0), NULL);
  k = tf_tensor_scalar_i64(1);
  o = tt_run1("InTopKV2", (tf_tensor *[]){p, t, k}, 3, NULL, 0);
  tt_assert_shape(o, 1, (int64_t)0);
  tt_free((tf_tensor *[]){o, t}, 2);
  t = tt_tensor_i(TF_INT64, SHAPE(2), (int64_t[]){0, 0});
  assert_has(tt_run_fail("InTopKV2", (tf_tensor *[]){p, t, k}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "predictions");
  tt_free((tf_tensor *[]){p, t, k}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_topk");
  TCase *tc = tcase_create("topk");
  tcase_add_test(tc, test_top_k_random);
  tcase_add_test(tc, test_top_k_hand);
  tcase_add_test(tc, test_top_k_errors);
  tcase_add_test(tc, test_in_top_k_random);
  tcase_add_test(tc, test_in_top_k_hand);
  suite_add_tcase(s, tc);
  return s;
}
