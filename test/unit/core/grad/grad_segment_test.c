/* grad_segment_test.c: gradients of SegmentSum and UnsortedSegmentMax
 * (grad_segment.c) against float64 central differences (tt_grad_check),
 * with the ids constant or fed and data's dims shown or hidden; ids of
 * rank 1 and 2 (UnsortedSegmentMax) with dropped (negative) ids. Empty
 * segments are left out of the numeric checks (their output, the dtype's
 * lowest value ~ -1.8e308, swamps the finite-difference loss) and checked
 * by hand instead: they take a gradient that reaches no input. Tolerances: atol 1e-8, rtol 1e-7 (both are linear where
 * differentiable). UnsortedSegmentMax data are distinct (gaps 0.1 >> the
 * step 1e-6); ties are checked by hand: TF splits dy equally among the
 * elements equal to the maximum, and ids < 0 get 0. */
#include <check.h>

#include "test/unit/core/grad/grad_testlib.h"

/* Distinct values: a shuffled 0.1-grid plus a little noise. */
static tf_tensor *distinct(tf_shape s) {
  tf_tensor *t = tt_rand(TF_FLOAT64, s, 0, 0.01);
  double *d = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    d[i] += 0.1 * (double)i - 1.0;
  }
  for (int64_t i = t->n - 1; i > 0; i--) {
    int64_t j = (int64_t)(tt_rand_u64() % (uint64_t)(i + 1));
    double x = d[i];
    d[i] = d[j];
    d[j] = x;
  }
  return t;
}

START_TEST(test_segment_sum) {
  tt_rng_reseed(tt_seed() ^ 0x51);
  tf_tensor *in[2] = {tt_rand(TF_FLOAT64, GT_SHAPE(5, 3), -1, 1),
                      tt_tensor_i(TF_INT32, GT_SHAPE(5),
                                  (int64_t[]){0, 0, 2, 3, 3})};
  gt_build modes[3] = {
      {.op = "SegmentSum", .n_args = 2, .args = {GT_P(0), GT_C(in[1])}},
      {.op = "SegmentSum", .n_args = 2,
       .args = {GT_PH(0, GT_HIDE_DIMS), GT_C(in[1])}},
      {.op = "SegmentSum", .n_args = 2, .args = {GT_P(0), GT_P(1)}},
  };
  bool check[2] = {true, false};
  for (int m = 0; m < 3; m++) {
    tt_grad_check(gt_build_fn, &modes[m], in, m == 2 ? 2 : 1, check, 1e-8,
                  1e-7);
  }
  tt_free(in, 2);
}
END_TEST

START_TEST(test_unsorted_max) {
  tt_rng_reseed(tt_seed() ^ 0x52);
  struct {
    tf_shape ds, is;
    int64_t ids[8];
    int num;
  } cases[] = {
      {GT_SHAPE(6, 2), GT_SHAPE(6), {1, 0, 2, -1, 3, 1}, 4},
      {GT_SHAPE(2, 3), GT_SHAPE(2, 3), {0, 1, 0, 1, -2, 2}, 3},
      {GT_SHAPE(2, 2, 2), GT_SHAPE(2, 2), {2, 0, 1, 2}, 3},
  };
  bool check[3] = {true, false, false};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *in[3] = {distinct(cases[c].ds),
                        tt_tensor_i(TF_INT64, cases[c].is, cases[c].ids),
                        tf_tensor_scalar_i32(cases[c].num)};
    gt_build modes[3] = {
        {.op = "UnsortedSegmentMax", .n_args = 3,
         .args = {GT_P(0), GT_C(in[1]), GT_C(in[2])}},
        {.op = "UnsortedSegmentMax", .n_args = 3,
         .args = {GT_PH(0, GT_HIDE_RANK), GT_C(in[1]), GT_C(in[2])}},
        {.op = "UnsortedSegmentMax", .n_args = 3,
         .args = {GT_P(0), GT_P(1), GT_P(2)}},
    };
    for (int m = 0; m < 3; m++) {
      tt_grad_check(gt_build_fn, &modes[m], in, m == 2 ? 3 : 1, check, 1e-8,
                    1e-7);
    }
    tt_free(in, 3);
  }
}
END_TEST

/* Ties share dy equally; a dropped id gets 0. With dy = 1 per segment:
 * segment 0 = {3, 3} -> 1/2 each, segment 1 = {2, 2, 2} -> 1/3 each;
 * segment 2 is empty (its dy / 0 reaches no input). */
START_TEST(test_unsorted_max_ties) {
  tf_tensor *x = tt_tensor(TF_FLOAT64, GT_SHAPE(7),
                           (double[]){1, 3, 3, 2, 2, 2, 9});
  tf_graph *g = tf_graph_new();
  tf_output xp = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(7)));
  tf_output ids = gt_o(tt_const(
      g, NULL, tt_tensor_i(TF_INT32, GT_SHAPE(7),
                           (int64_t[]){0, 0, 0, 1, 1, 1, -1})));
  tf_output num = gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(3)));
  tf_output y = gt_o(tt_node(g, "UnsortedSegmentMax", NULL,
                             (tf_output[]){xp, ids, num}, 3, NULL, 0));
  tf_output dx;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &xp, 1, NULL, &dx, &st), TF_OK);
  const char *names[1] = {"x"};
  tf_tensor *got = gt_run(g, names, &x, 1, dx);
  tf_tensor *want = tt_tensor(
      TF_FLOAT64, GT_SHAPE(7),
      (double[]){0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
  tt_assert_close(got, want, 1e-15, 1e-15);
  tt_free((tf_tensor *[]){got, want, x}, 3);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_segment");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_segment_sum);
  tcase_add_test(tc, test_unsorted_max);
  tcase_add_test(tc, test_unsorted_max_ties);
  suite_add_tcase(s, tc);
  return s;
}
