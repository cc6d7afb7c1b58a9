/* cpu_nn_misc_test.c: L2Loss and InTopK on CPU against plain float64
 * recomputations here and hand-worked TF examples.
 *
 * Tolerance: L2Loss accumulates in double, so the float32 result must be
 * the float64 sum rounded once (rtol 1e-6) and float64 within rtol 1e-12;
 * InTopK is exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

/* ---- L2Loss ------------------------------------------------------------------ */

static void check_l2(tf_dtype dt, tf_shape shape) {
  tf_tensor *x = tt_rand(dt, shape, -3, 3);
  tf_tensor *y = tt_run1("L2Loss", &x, 1, NULL, 0);
  double s = 0;
  for (int64_t i = 0; i < x->n; i++) {
    double v = tf_tensor_get_f64(x, i);
    s += v * v;
  }
  double half = s / 2;
  tf_tensor *want = tt_tensor(dt, tf_shape_scalar(), &half);
  tt_assert_close(y, want, 0, dt == TF_FLOAT32 ? 1e-6 : 1e-12);
  tf_tensor *all[] = {x, y, want};
  tt_free(all, 3);
}

START_TEST(test_l2_loss) {
  static const tf_dtype types[] = {TF_FLOAT32, TF_FLOAT64};
  for (int t = 0; t < 2; t++) {
    check_l2(types[t], tf_shape_scalar());
    check_l2(types[t], tf_shape_of(1, 7));
    check_l2(types[t], tf_shape_of(3, 2, 3, 5));
    check_l2(types[t], tf_shape_of(1, 16384));      /* exactly one block */
    check_l2(types[t], tf_shape_of(2, 301, 1001)); /* many blocks, parallel */
  }
}
END_TEST

START_TEST(test_l2_loss_hand_worked) {
  const double x[] = {1, -2, 3, 0.5};
  tf_tensor *in = tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 2), x);
  tf_tensor *y = tt_run1("L2Loss", &in, 1, NULL, 0);
  tt_assert_shape(y, 0);
  ck_assert(tf_tensor_get_f64(y, 0) == 7.125); /* (1 + 4 + 9 + 0.25) / 2 */
  tf_tensor *e = tt_rand(TF_FLOAT64, tf_shape_of(2, 0, 4), 0, 1);
  tf_tensor *ye = tt_run1("L2Loss", &e, 1, NULL, 0);
  ck_assert(tf_tensor_get_f64(ye, 0) == 0);
  tf_tensor *all[] = {in, y, e, ye};
  tt_free(all, 4);
}
END_TEST

/* ---- InTopK ------------------------------------------------------------------ */

static tf_tensor *run_in_top_k(tf_tensor *pred, tf_tensor *targets, int64_t k) {
  tf_attr_kv kv[] = {{"k", tf_attr_int(k)}};
  tf_tensor *in[2] = {pred, targets};
  return tt_run1("InTopK", in, 2, kv, 1);
}

static void expect_bools(const tf_tensor *got, const bool *want, int n) {
  ck_assert_int_eq(got->dtype, TF_BOOL);
  tt_assert_shape(got, 1, n);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(((const bool *)got->data)[i] == want[i], "row %d: got %d",
                  i, ((const bool *)got->data)[i]);
  }
}

START_TEST(test_in_top_k_hand_worked) {
  /* Ties count in the target's favour: in row 0 classes 1 and 2 tie at 0.4
   * behind class 0, so class 2 is in the top 2 (one class scores higher)
   * but not the top 1. Row 1: only class 3 beats class 0. */
  const double p[] = {0.5, 0.4, 0.4, 0.1, 0.2, 0.1, 0.0, 0.3};
  const int64_t t[] = {2, 0};
  tf_tensor *pred = tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 4), p);
  for (int ti = 0; ti < 2; ti++) {
    tf_tensor *tg = tt_tensor_i(ti ? TF_INT64 : TF_INT32, tf_shape_of(1, 2), t);
    tf_tensor *k1 = run_in_top_k(pred, tg, 1), *k2 = run_in_top_k(pred, tg, 2);
    tf_tensor *k0 = run_in_top_k(pred, tg, 0);
    expect_bools(k1, (const bool[]){false, false}, 2);
    expect_bools(k2, (const bool[]){true, true}, 2);
    expect_bools(k0, (const bool[]){false, false}, 2);
    tf_tensor *all[] = {tg, k1, k2, k0};
    tt_free(all, 4);
  }
  tf_tensor_unref(pred);
}
END_TEST

START_TEST(test_in_top_k_non_finite_and_range) {
  /* row 0: NaN target score -> false; row 1: +inf target -> not finite,
   * false; row 2: +inf elsewhere -> false (TF's CPU kernel cannot say
   * when any score of the row is not finite); row 3: target out of range
   * -> false; row 4: negative target -> false; row 5: NaN elsewhere ->
   * false. */
  const double p[] = {NAN, 1, 0,    INFINITY, 1, 0, INFINITY, 1, 0,
                      3,   2, 1,    3,        2, 1, NAN,      1, 0};
  const int64_t t[] = {0, 0, 1, 3, -1, 1};
  tf_tensor *pred = tt_tensor(TF_FLOAT32, tf_shape_of(2, 6, 3), p);
  tf_tensor *tg = tt_tensor_i(TF_INT64, tf_shape_of(1, 6), t);
  tf_tensor *k = run_in_top_k(pred, tg, 1);
  expect_bools(k, (const bool[]){false, false, false, false, false, false}, 6);
  tf_tensor *k3 = run_in_top_k(pred, tg, 3);
  expect_bools(k3, (const bool[]){false, false, false, false, false, false}, 6);
  tf_tensor *all[] = {pred, tg, k, k3};
  tt_free(all, 4);
}
END_TEST

START_TEST(test_in_top_k_random) {
  /* Scores drawn from 5 levels so ties are common; 3000 rows run in
   * parallel. */
  int64_t b = 3000, c = 17;
  tf_tensor *lv = tt_rand(TF_INT32, tf_shape_of(2, b, c), 0, 4);
  double *pv = malloc(sizeof(double) * (size_t)(b * c));
  for (int64_t i = 0; i < b * c; i++) pv[i] = tf_tensor_get_f64(lv, i) / 4;
  tf_tensor *pred = tt_tensor(TF_FLOAT32, tf_shape_of(2, b, c), pv);
  tf_tensor *tg = tt_rand(TF_INT32, tf_shape_of(1, b), 0, (double)(c - 1));
  for (int64_t k = 1; k <= 4; k++) {
    tf_tensor *got = run_in_top_k(pred, tg, k);
    for (int64_t r = 0; r < b; r++) {
      int64_t t = tf_tensor_get_i64(tg, r), higher = 0;
      for (int64_t i = 0; i < c; i++) higher += pv[r * c + i] > pv[r * c + t];
      ck_assert_msg(((bool *)got->data)[r] == (higher < k),
                    "row %lld k %lld (seed %llu)", (long long)r, (long long)k,
                    (unsigned long long)tt_seed());
    }
    tf_tensor_unref(got);
  }
  free(pv);
  tf_tensor *all[] = {lv, pred, tg};
  tt_free(all, 3);
}
END_TEST

START_TEST(test_in_top_k_errors) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 4), 0, 1),
                      tt_rand(TF_INT32, tf_shape_of(1, 2), 0, 3)};
  tf_attr_kv kv[] = {{"k", tf_attr_int(1)}};
  const char *msg = tt_run_fail("InTopK", in, 2, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "2") && strstr(msg, "3"), "%s", msg);
  tt_free(in, 2);
  in[0] = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), 0, 1);
  in[1] = tt_rand(TF_INT32, tf_shape_of(1, 4), 0, 3);
  msg = tt_run_fail("InTopK", in, 2, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank 2") != NULL, "%s", msg);
  tt_free(in, 2);
  /* float64 predictions are not accepted (predictions: float) */
  in[0] = tt_rand(TF_FLOAT64, tf_shape_of(2, 2, 4), 0, 1);
  in[1] = tt_rand(TF_INT32, tf_shape_of(1, 2), 0, 3);
  tt_run_fail("InTopK", in, 2, kv, 1, TF_INVALID_ARGUMENT);
  tt_free(in, 2);
  /* empty batch */
  in[0] = tt_rand(TF_FLOAT32, tf_shape_of(2, 0, 4), 0, 1);
  in[1] = tt_rand(TF_INT64, tf_shape_of(1, 0), 0, 3);
  tf_tensor *y = run_in_top_k(in[0], in[1], 1);
  tt_assert_shape(y, 1, 0);
  tf_tensor_unref(y);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_nn_misc");
  TCase *tc = tcase_create("l2_loss");
  tcase_add_test(tc, test_l2_loss);
  tcase_add_test(tc, test_l2_loss_hand_worked);
  suite_add_tcase(s, tc);
  tc = tcase_create("in_top_k");
  tcase_add_test(tc, test_in_top_k_hand_worked);
  tcase_add_test(tc, test_in_top_k_non_finite_and_range);
  tcase_add_test(tc, test_in_top_k_random);
  tcase_add_test(tc, test_in_top_k_errors);
  suite_add_tcase(s, tc);
  return s;
}
