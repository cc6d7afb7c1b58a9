/* grad_scan_test.c: gradients of Cumsum and Cumprod (grad_scan.c) against
 * float64 central differences (tt_grad_check) for every axis (given
 * positively and negatively), all four exclusive/reverse combinations,
 * with the axis a constant or fed, and the input's dims shown or hidden.
 * Tolerances: atol 1e-8, rtol 1e-7 for Cumsum (linear) and 1e-7 / 1e-6
 * for Cumprod (inputs kept away from 0 in +-[0.5, 1.5], where TF's
 * formula is exact).
 *
 * TF's Cumprod gradient divides by x and is wrong at x == 0 (TF notes it
 * "fails when x contains 0"); we mirror it, and test_cumprod_zero pins
 * the values it gives there (NaN at the zero) so a change is noticed. */
#include <check.h>
#include <math.h>

#include "test/unit/core/grad/grad_testlib.h"

static tf_tensor *signed_away_from_zero(tf_shape s) {
  tf_tensor *t = tt_rand(TF_FLOAT64, s, 0.5, 1.5);
  double *d = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    d[i] = tt_rand_u64() % 2 ? d[i] : -d[i];
  }
  return t;
}

static void check_op(const char *op) {
  bool prod = strcmp(op, "Cumprod") == 0;
  double atol = prod ? 1e-7 : 1e-8, rtol = prod ? 1e-6 : 1e-7;
  tt_rng_reseed(tt_seed() ^ (prod ? 0xc0 : 0xc1));
  static const int axes[] = {0, 1, 2, -1, -3};
  for (size_t ai = 0; ai < sizeof(axes) / sizeof(axes[0]); ai++) {
    tf_tensor *in[2] = {signed_away_from_zero(GT_SHAPE(2, 3, 4)),
                        tf_tensor_scalar_i32(axes[ai])};
    for (int f = 0; f < 4; f++) {
      tf_attr_kv kv[2] = {{"exclusive", tf_attr_bool(f & 1)},
                          {"reverse", tf_attr_bool(f & 2)}};
      gt_build modes[3] = {
          {.op = op, .n_args = 2, .args = {GT_P(0), GT_C(in[1])}},
          {.op = op, .n_args = 2, .args = {GT_PH(0, GT_HIDE_DIMS), GT_C(in[1])}},
          {.op = op, .n_args = 2, .args = {GT_P(0), GT_P(1)}},
      };
      for (int m = 0; m < 3; m++) {
        modes[m].attrs = kv;
        modes[m].n_attrs = 2;
        bool check[2] = {true, false}; /* the axis gets no gradient */
        tt_grad_check(gt_build_fn, &modes[m], in, m == 2 ? 2 : 1, check, atol,
                      rtol);
      }
    }
    tt_free(in, 2);
  }
}

START_TEST(test_cumsum) { check_op("Cumsum"); }
END_TEST

START_TEST(test_cumprod) { check_op("Cumprod"); }
END_TEST

/* dx of Cumprod([2, 0, 3]) with dy = 1: TF's cumsum(prod * dy, reverse) /
 * x = [2, 0, 0] / [2, 0, 3] = [1, NaN, 0] (the true gradient is
 * [1, 8, 0]); and Cumsum's, [3, 2, 1], for comparison. */
START_TEST(test_cumprod_zero) {
  tf_tensor *x = tt_tensor(TF_FLOAT64, GT_SHAPE(3), (double[]){2, 0, 3});
  static const char *const ops[2] = {"Cumprod", "Cumsum"};
  static const double want_v[2][3] = {{1, NAN, 0}, {3, 2, 1}};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_output xp = gt_o(tt_placeholder(g, "x", TF_FLOAT64, GT_SHAPE(3)));
    tf_output y = gt_op2(g, ops[k], xp,
                         gt_o(tt_const(g, NULL, tf_tensor_scalar_i32(0))));
    tf_output dx;
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, &xp, 1, NULL, &dx, &st), TF_OK);
    const char *names[1] = {"x"};
    tf_tensor *got = gt_run(g, names, &x, 1, dx);
    tf_tensor *want = tt_tensor(TF_FLOAT64, GT_SHAPE(3), want_v[k]);
    tt_assert_close(got, want, 1e-15, 1e-15);
    tt_free((tf_tensor *[]){got, want}, 2);
    tf_graph_free(g);
  }
  tf_tensor_unref(x);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_scan");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_cumsum);
  tcase_add_test(tc, test_cumprod);
  tcase_add_test(tc, test_cumprod_zero);
  suite_add_tcase(s, tc);
  return s;
}
