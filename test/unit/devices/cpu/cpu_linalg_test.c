/* cpu_linalg_test.c: MatrixInverse and MatrixDeterminant CPU kernels.
 *
 * Inverses are checked by A . inv(A) = I recomputed in float64, against
 * numpy.linalg.inv, and on hand cases (including ones that need a row
 * swap); determinants against numpy.linalg.det and hand cases (singular
 * gives 0, a swap flips the sign, 0 x 0 gives 1). Tolerances, stated per
 * check: the kernels accumulate in float64, so float32 results are within
 * a few float32 ulps of the exact answer times the matrix's condition
 * number; random test matrices are diagonally shifted Gaussians, whose
 * condition numbers stay below ~1e2. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

/* SHAPE(2, 3) is [2, 3] with int64_t dims (tf_shape_of reads int64_t
 * varargs, so plain int literals there would be undefined behaviour). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

/* Random batch of m x m matrices N(0,1) + shift * I: invertible and
 * moderately conditioned, while the off-diagonal part still makes partial
 * pivoting swap rows. */
static tf_tensor *rand_matrices(tf_dtype dt, tf_shape s, double shift) {
  int64_t m = s.dims[s.rank - 1];
  int64_t n = tf_shape_num_elements(&s);
  double *v = malloc((size_t)n * sizeof(double) + 1);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = (i / m) % m, c = i % m;
    v[i] = tt_rand_normal() + (r == c ? shift : 0.0);
  }
  tf_tensor *t = tt_tensor(dt, s, v);
  free(v);
  return t;
}

static tf_tensor *run_inverse(tf_tensor *a, bool adjoint) {
  tf_attr_kv attrs[] = {{"adjoint", tf_attr_bool(adjoint)}};
  return tt_run1("MatrixInverse", &a, 1, attrs, 1);
}

/* Max over the batch of |A . X - I| (or |A^T . X - I| with adjoint),
 * computed in float64 from the tensors' values. */
static double residual(const tf_tensor *a, const tf_tensor *x, bool adjoint) {
  int64_t m = a->shape.dims[a->shape.rank - 1], mm = m * m;
  double worst = 0;
  for (int64_t b = 0; m > 0 && b < a->n / mm; b++) {
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < m; j++) {
        double s = 0;
        for (int64_t p = 0; p < m; p++) {
          int64_t ai = adjoint ? p * m + i : i * m + p;
          s += tf_tensor_get_f64(a, b * mm + ai) *
               tf_tensor_get_f64(x, b * mm + p * m + j);
        }
        worst = fmax(worst, fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
  }
  return worst;
}

/* Max over the batch of ||M||_inf (the largest row sum of |m_ij|). */
static double inf_norm(const tf_tensor *t) {
  int64_t m = t->shape.dims[t->shape.rank - 1];
  double worst = 0;
  for (int64_t r = 0; m > 0 && r < t->n / m; r++) {
    double sum = 0;
    for (int64_t c = 0; c < m; c++) {
      sum += fabs(tf_tensor_get_f64(t, r * m + c));
    }
    worst = fmax(worst, sum);
  }
  return worst;
}

START_TEST(inverse_residual) {
  /* A backward-stable inverse has |A . X - I| <= ~ m * eps * |A| * |X|
   * (Higham, Accuracy and Stability, §14.3): the bound scales with the
   * matrix's conditioning, which random matrices vary. The tolerance is 4x
   * that bound, and never below 1e-4 (float32) or 1e-10 (float64). */
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  const double eps[] = {1.19e-7, 2.22e-16}, floor_tol[] = {1e-4, 1e-10};
  const int64_t ms[] = {1, 2, 3, 5, 8, 17, 40};
  for (int d = 0; d < 2; d++) {
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
      for (int adj = 0; adj < 2; adj++) {
        tf_tensor *a = rand_matrices(dts[d], SHAPE(3, ms[i], ms[i]), 3.0);
        tf_tensor *x = run_inverse(a, adj);
        tt_assert_shape(x, 3, 3, ms[i], ms[i]);
        double bound = 4.0 * (double)ms[i] * eps[d] * inf_norm(a) * inf_norm(x);
        double r = residual(a, x, adj), tol = fmax(floor_tol[d], bound);
        ck_assert_msg(r <= tol, "%s m=%lld adjoint=%d: residual %g > %g",
                      tf_dtype_name(dts[d]), (long long)ms[i], adj, r, tol);
        tf_tensor_unref(a);
        tf_tensor_unref(x);
      }
    }
  }
}
END_TEST

START_TEST(inverse_large_parallel) {
  /* Many small matrices (several pool chunks) and one 120 x 120. */
  tf_tensor *a = rand_matrices(TF_FLOAT64, SHAPE(4, 50, 6, 6), 3.0);
  tf_tensor *x = run_inverse(a, false);
  ck_assert_double_le(residual(a, x, false), 1e-10);
  tf_tensor_unref(a);
  tf_tensor_unref(x);
  a = rand_matrices(TF_FLOAT64, SHAPE(120, 120), 20.0);
  x = run_inverse(a, false);
  ck_assert_double_le(residual(a, x, false), 1e-10);
  tf_tensor_unref(a);
  tf_tensor_unref(x);
}
END_TEST

START_TEST(inverse_vs_numpy) {
  /* Relative to numpy's float64 inverse of the same values: 1e-5 for
   * float32 (rounding of a float64-accurate result), 1e-11 for float64. */
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 2; d++) {
    tf_tensor *a = rand_matrices(dts[d], SHAPE(2, 3, 7, 7), 3.0);
    tf_tensor *got = run_inverse(a, false);
    tf_tensor *want[1] = {NULL};
    int n = tt_numpy("outs.append(np.linalg.inv(ins[0].astype(np.float64))"
                     ".astype(ins[0].dtype))",
                     &a, 1, want, 1);
    if (n >= 0) {
      ck_assert_int_eq(n, 1);
      double tol = d == 0 ? 1e-5 : 1e-11;
      tt_assert_close(got, want[0], tol, tol);
      tf_tensor_unref(want[0]);
    }
    tf_tensor_unref(a);
    tf_tensor_unref(got);
  }
}
END_TEST

START_TEST(inverse_hand_cases) {
  /* inv([[4,7],[2,6]]) = [[0.6,-0.7],[-0.2,0.4]]; [[0,1],[1,0]] needs a row
   * swap at the first pivot and is its own inverse; [[0,2],[3,4]] has
   * inverse [[-2/3, 1/3], [1/2, 0]]. Exact to 1e-15 in float64. */
  const double a1[] = {4, 7, 2, 6}, x1[] = {0.6, -0.7, -0.2, 0.4};
  const double a2[] = {0, 1, 1, 0};
  const double a3[] = {0, 2, 3, 4}, x3[] = {-2.0 / 3, 1.0 / 3, 0.5, 0};
  const double *as[] = {a1, a2, a3}, *xs[] = {x1, a2, x3};
  for (int i = 0; i < 3; i++) {
    tf_tensor *a = tt_tensor(TF_FLOAT64, SHAPE(2, 2), as[i]);
    tf_tensor *got = run_inverse(a, false);
    tf_tensor *want = tt_tensor(TF_FLOAT64, SHAPE(2, 2), xs[i]);
    tt_assert_close(got, want, 1e-15, 1e-15);
    tf_tensor_unref(a);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
  }
  /* adjoint: inv(A^T) = inv(A)^T. */
  tf_tensor *a = tt_tensor(TF_FLOAT32, SHAPE(2, 2), a1);
  tf_tensor *got = run_inverse(a, true);
  const double x1t[] = {0.6, -0.2, -0.7, 0.4};
  tf_tensor *want = tt_tensor(TF_FLOAT32, SHAPE(2, 2), x1t);
  tt_assert_close(got, want, 1e-6, 1e-6);
  tf_tensor_unref(a);
  tf_tensor_unref(got);
  tf_tensor_unref(want);
}
END_TEST

START_TEST(inverse_empty) {
  const tf_shape shapes[] = {SHAPE(0, 0), SHAPE(3, 0, 0), SHAPE(0, 4, 4)};
  for (int i = 0; i < 3; i++) {
    tf_tensor *a = tt_rand(TF_FLOAT32, shapes[i], -1, 1);
    tf_tensor *x = run_inverse(a, false);
    ck_assert(tf_shape_equal(&x->shape, &shapes[i]));
    tf_tensor_unref(a);
    tf_tensor_unref(x);
  }
}
END_TEST

START_TEST(inverse_singular) {
  const double s1[] = {1, 2, 2, 4};
  const double s2[] = {1, 2, 3, 2, 4, 6, 1, 0, 1}; /* row 1 = 2 * row 0 */
  tf_tensor *a = tt_tensor(TF_FLOAT64, SHAPE(2, 2), s1);
  const char *msg =
      tt_run_fail("MatrixInverse", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Input is not invertible.") != NULL, "%s", msg);
  tf_tensor_unref(a);
  /* Elimination of s2 is exact in float64 and ends on a zero pivot. */
  a = tt_tensor(TF_FLOAT32, SHAPE(3, 3), s2);
  msg = tt_run_fail("MatrixInverse", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "not invertible") != NULL, "%s", msg);
  tf_tensor_unref(a);
  /* One zero matrix in a batch of otherwise invertible ones. */
  tf_tensor *batch = rand_matrices(TF_FLOAT64, SHAPE(5, 3, 3), 3.0);
  memset((double *)batch->data + 3 * 9, 0, 9 * sizeof(double));
  msg = tt_run_fail("MatrixInverse", &batch, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "not invertible") != NULL, "%s", msg);
  tf_tensor_unref(batch);
}
END_TEST

START_TEST(linalg_bad_inputs) {
  tf_tensor *a = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  const char *msg =
      tt_run_fail("MatrixInverse", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "square") && strstr(msg, "[2,3]"), "%s", msg);
  msg = tt_run_fail("MatrixDeterminant", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "square") && strstr(msg, "[2,3]"), "%s", msg);
  tf_tensor_unref(a);
  a = tt_rand(TF_FLOAT64, SHAPE(4), -1, 1);
  msg = tt_run_fail("MatrixDeterminant", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank") && strstr(msg, "[4]"), "%s", msg);
  tf_tensor_unref(a);
  a = tt_rand(TF_FLOAT32, tf_shape_scalar(), -1, 1);
  msg = tt_run_fail("MatrixInverse", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank") != NULL, "%s", msg);
  tf_tensor_unref(a);
}
END_TEST

/* ---- MatrixDeterminant ------------------------------------------------- */

static void expect_det(tf_dtype dt, int64_t m, const double *v, double want,
                       double tol) {
  tf_tensor *a = tt_tensor(dt, SHAPE(m, m), v);
  tf_tensor *got = tt_run1("MatrixDeterminant", &a, 1, NULL, 0);
  tt_assert_shape(got, 0);
  double g = tf_tensor_get_f64(got, 0);
  ck_assert_msg(fabs(g - want) <= tol, "%s det %g, want %g",
                tf_dtype_name(dt), g, want);
  tf_tensor_unref(a);
  tf_tensor_unref(got);
}

START_TEST(det_hand_cases) {
  const double a2[] = {1, 2, 3, 4};                 /* -2 */
  const double swap[] = {0, 1, 1, 0};               /* -1 */
  const double sing[] = {1, 2, 2, 4};               /* 0 */
  const double a3[] = {2, -3, 1, 2, 0, -1, 1, 4, 5}; /* 49 */
  const double sing3[] = {1, 2, 3, 2, 4, 6, 1, 0, 1}; /* exactly 0 */
  const double near3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; /* 0 up to rounding */
  const double perm3[] = {0, 0, 1, 1, 0, 0, 0, 1, 0}; /* cyclic: +1 */
  const double one[] = {-2.5};
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 2; d++) {
    /* Small integers: exact in float64 up to rounding of 1e-12. */
    expect_det(dts[d], 2, a2, -2, 1e-12);
    expect_det(dts[d], 2, swap, -1, 0);
    expect_det(dts[d], 2, sing, 0, 0);
    expect_det(dts[d], 3, a3, 49, 1e-12);
    expect_det(dts[d], 3, sing3, 0, 0);
    expect_det(dts[d], 3, near3, 0, 1e-12);
    expect_det(dts[d], 3, perm3, 1, 0);
    expect_det(dts[d], 1, one, -2.5, 0);
  }
}
END_TEST

START_TEST(det_batch_and_empty) {
  /* [2,3,0,0] gives ones of shape [2,3]: the empty product. */
  tf_tensor *a = tt_rand(TF_FLOAT64, SHAPE(2, 3, 0, 0), -1, 1);
  tf_tensor *got = tt_run1("MatrixDeterminant", &a, 1, NULL, 0);
  tt_assert_shape(got, 2, 2, 3);
  for (int64_t i = 0; i < got->n; i++) {
    ck_assert(tf_tensor_get_f64(got, i) == 1.0);
  }
  tf_tensor_unref(a);
  tf_tensor_unref(got);
  a = tt_rand(TF_FLOAT32, SHAPE(0, 3, 3), -1, 1);
  got = tt_run1("MatrixDeterminant", &a, 1, NULL, 0);
  tt_assert_shape(got, 1, 0);
  tf_tensor_unref(a);
  tf_tensor_unref(got);
}
END_TEST

START_TEST(det_vs_numpy) {
  /* Relative tolerance vs numpy's float64 det of the same values: 1e-6
   * for float32 (one final rounding of a float64-accurate product), 1e-11
   * for float64. Includes a batch large enough for several pool chunks. */
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  for (int d = 0; d < 2; d++) {
    tf_tensor *a[] = {rand_matrices(dts[d], SHAPE(4, 5, 5), 1.0),
                      rand_matrices(dts[d], SHAPE(2, 600, 4, 4), 1.0),
                      rand_matrices(dts[d], SHAPE(30, 30), 1.0)};
    tf_tensor *want[3] = {NULL};
    int n = tt_numpy("for x in ins:\n"
                     "    outs.append(np.linalg.det(x.astype(np.float64))"
                     ".astype(x.dtype))",
                     a, 3, want, 3);
    for (int s = 0; s < 3; s++) {
      tf_tensor *got = tt_run1("MatrixDeterminant", &a[s], 1, NULL, 0);
      if (n >= 0) {
        ck_assert_int_eq(n, 3);
        double tol = d == 0 ? 1e-6 : 1e-11;
        tt_assert_close(got, want[s], 1e-30, tol);
      }
      tf_tensor_unref(got);
    }
    tt_free(want, n > 0 ? n : 0);
    tt_free(a, 3);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_linalg");
  TCase *ti = tcase_create("inverse");
  tcase_set_timeout(ti, 60);
  tcase_add_test(ti, inverse_residual);
  tcase_add_test(ti, inverse_large_parallel);
  tcase_add_test(ti, inverse_vs_numpy);
  tcase_add_test(ti, inverse_hand_cases);
  tcase_add_test(ti, inverse_empty);
  tcase_add_test(ti, inverse_singular);
  tcase_add_test(ti, linalg_bad_inputs);
  suite_add_tcase(s, ti);
  TCase *td = tcase_create("determinant");
  tcase_set_timeout(td, 60);
  tcase_add_test(td, det_hand_cases);
  tcase_add_test(td, det_batch_and_empty);
  tcase_add_test(td, det_vs_numpy);
  suite_add_tcase(s, td);
  return s;
}
