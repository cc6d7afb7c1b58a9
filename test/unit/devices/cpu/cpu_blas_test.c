/* cpu_blas_test.c: the checked OpenBLAS wrapper: argument validation
 * (negative or over-int dims, short leading dimensions), BLAS semantics of
 * alpha and beta (beta == 0 overwrites NaN garbage), degenerate sizes that
 * must not touch memory, padded leading dimensions, and the thread policy.
 * Results are compared with a float64 triple loop; tolerance k * eps *
 * max sum_p |alpha a_ip b_pj| + eps * |beta c| (the dot-product bound). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/devices/cpu/cpu_blas.h"
#include "test/unit/testutil.h"

static tf__gemm_dims dims(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc) {
  return (tf__gemm_dims){.trans_a = ta, .trans_b = tb, .m = m, .n = n,
                         .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
}

static void expect_invalid(tf__gemm_dims d, const char *needle) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf__blas_check(&d, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "'%s' lacks '%s'", st.msg,
                needle);
  /* The GEMM itself refuses too, before touching the (NULL) buffers. */
  tf_status_init(&st);
  ck_assert_int_eq(tf__blas_sgemm(&d, 1, NULL, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  tf_status_init(&st);
  ck_assert_int_eq(tf__blas_dgemm(&d, 1, NULL, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
}

START_TEST(check_rejects_bad_dims) {
  expect_invalid(dims(false, false, -1, 2, 2, 2, 2, 2), "m = -1");
  expect_invalid(dims(false, false, 2, -3, 2, 2, 2, 2), "n = -3");
  expect_invalid(dims(false, false, (int64_t)INT_MAX + 1, 1, 1, 1, 1, 1),
                 "m = 2147483648");
  expect_invalid(dims(false, false, 1, 1, (int64_t)1 << 40, (int64_t)1 << 40,
                      1, 1),
                 "k = 1099511627776");
  /* A [m,k] needs lda >= k; with trans_a, A is [k,m] and needs lda >= m. */
  expect_invalid(dims(false, false, 4, 5, 6, 5, 5, 5), "lda = 5");
  expect_invalid(dims(true, false, 4, 5, 6, 3, 5, 5), "lda = 3");
  expect_invalid(dims(false, true, 4, 5, 6, 6, 5, 5), "ldb = 5");
  expect_invalid(dims(false, false, 4, 5, 6, 6, 5, 4), "ldc = 4");
  expect_invalid(dims(false, false, 4, 5, 0, 0, 5, 5), "lda = 0");
  /* Valid edge: k == 0 with lda == 1. */
  tf__gemm_dims ok = dims(false, false, 4, 5, 0, 1, 5, 5);
  ck_assert_int_eq(tf__blas_check(&ok, NULL), TF_OK);
}
END_TEST

START_TEST(packed_dims) {
  tf__gemm_dims d = tf__gemm_dims_packed(true, false, 3, 4, 5);
  ck_assert(d.lda == 3 && d.ldb == 4 && d.ldc == 4);
  d = tf__gemm_dims_packed(false, true, 3, 4, 5);
  ck_assert(d.lda == 5 && d.ldb == 5 && d.ldc == 4);
  d = tf__gemm_dims_packed(false, false, 3, 0, 0);
  ck_assert(d.lda == 1 && d.ldb == 1 && d.ldc == 1);
  ck_assert_int_eq(tf__blas_check(&d, NULL), TF_OK);
}
END_TEST

/* Fills a rows x ld buffer: the rows x cols block with values in [-1, 1],
 * the padding with NaN (which must never be read). */
static double *padded(int64_t rows, int64_t cols, int64_t ld) {
  double *p = malloc((size_t)(rows * ld + 1) * sizeof(double));
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = 0; j < ld; j++) {
      p[i * ld + j] = j < cols ? tt_rand_uniform(-1, 1) : NAN;
    }
  }
  return p;
}

static float *to_f32(const double *v, int64_t n) {
  float *f = malloc((size_t)(n + 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) {
    f[i] = (float)v[i];
  }
  return f;
}

/* Runs sgemm and dgemm on padded random operands and checks against the
 * float64 reference, including the padding of C left untouched. */
static void check_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       double alpha, double beta) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  tf__gemm_dims d = dims(ta, tb, m, n, k, ac + 3, bc + 1, n + 2);
  double *a = padded(ar, ac, d.lda), *b = padded(br, bc, d.ldb);
  double *c = padded(m, n, d.ldc), *c64 = padded(m, n, d.ldc);
  memcpy(c64, c, (size_t)(m * d.ldc) * sizeof(double));
  float *a32 = to_f32(a, ar * d.lda), *b32 = to_f32(b, br * d.ldb);
  float *c32 = to_f32(c, m * d.ldc);
  tf_status st;
  ck_assert_int_eq(tf__blas_sgemm(&d, (float)alpha, a32, b32, (float)beta,
                                  c32, &st), TF_OK);
  ck_assert_int_eq(tf__blas_dgemm(&d, alpha, a, b, beta, c64, &st), TF_OK);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < d.ldc; j++) {
      if (j >= n) {
        ck_assert(isnan(c32[i * d.ldc + j]) && isnan(c64[i * d.ldc + j]));
        continue;
      }
      double s = 0, sa = 0;
      for (int64_t p = 0; p < k; p++) {
        double av = ta ? a[p * d.lda + i] : a[i * d.lda + p];
        double bv = tb ? b[j * d.ldb + p] : b[p * d.ldb + j];
        s += alpha * av * bv;
        sa += fabs(alpha * av * bv);
      }
      double cv = c[i * d.ldc + j], want = s + (beta == 0 ? 0 : beta * cv);
      double bound = (double)(k + 1) * (sa + fabs(beta * cv));
      double g32 = c32[i * d.ldc + j], g64 = c64[i * d.ldc + j];
      ck_assert_msg(fabs(g32 - want) <= FLT_EPSILON * bound + 1e-30,
                    "sgemm (%lld,%lld): %g vs %g", (long long)i, (long long)j,
                    g32, want);
      ck_assert_msg(fabs(g64 - want) <= DBL_EPSILON * bound + 1e-300,
                    "dgemm (%lld,%lld): %g vs %g", (long long)i, (long long)j,
                    g64, want);
    }
  }
  free(a), free(b), free(c), free(c64), free(a32), free(b32), free(c32);
}

START_TEST(gemm_padded_all_transposes) {
  for (int t = 0; t < 4; t++) {
    check_gemm(t & 1, t & 2, 7, 9, 11, 1, 0);
    check_gemm(t & 1, t & 2, 33, 17, 65, -0.5, 1);
    check_gemm(t & 1, t & 2, 5, 6, 3, 2, 0.25);
    check_gemm(t & 1, t & 2, 130, 70, 90, 1, 0);
    check_gemm(t & 1, t & 2, 301, 260, 270, 1, 0.5); /* rows split over the pool */
  }
}
END_TEST

START_TEST(gemm_degenerate) {
  /* k == 0 and alpha == 0 only scale C by beta; beta == 0 overwrites even
   * NaN garbage with zeros, as BLAS does. */
  for (int t = 0; t < 4; t++) {
    check_gemm(t & 1, t & 2, 4, 5, 0, 1, 0);
    check_gemm(t & 1, t & 2, 4, 5, 0, 1, 3);
    check_gemm(t & 1, t & 2, 4, 5, 6, 0, 0.5);
  }
  float c[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
  tf__gemm_dims d = tf__gemm_dims_packed(false, false, 2, 3, 0);
  ck_assert_int_eq(tf__blas_sgemm(&d, 1, NULL, NULL, 0, c, NULL), TF_OK);
  for (int i = 0; i < 6; i++) {
    ck_assert(c[i] == 0.0f);
  }
  /* m == 0 or n == 0: nothing to do, buffers never touched. */
  d = tf__gemm_dims_packed(false, false, 0, 3, 4);
  ck_assert_int_eq(tf__blas_sgemm(&d, 1, NULL, NULL, 0, NULL, NULL), TF_OK);
  d = tf__gemm_dims_packed(true, true, 3, 0, 4);
  ck_assert_int_eq(tf__blas_dgemm(&d, 1, NULL, NULL, 0, NULL, NULL), TF_OK);
}
END_TEST

START_TEST(thread_policy) {
  int n = tf__blas_num_threads();
  ck_assert_int_ge(n, 1);
  if (getenv("OPENBLAS_NUM_THREADS") == NULL) {
    ck_assert_int_eq(n, 1); /* our pool splits large GEMMs, not OpenBLAS */
  }
  /* 256^3 multiply-adds and below stay on the caller's thread; above, the
   * rows of C are split over the default pool. */
  ck_assert(tf__blas_is_single_threaded(64, 64, 64));
  ck_assert(tf__blas_is_single_threaded(256, 256, 256));
  ck_assert(tf__blas_is_single_threaded(0, 1 << 30, 1 << 30));
  ck_assert(!tf__blas_is_single_threaded(257, 256, 256));
  ck_assert(!tf__blas_is_single_threaded(1 << 20, 1 << 20, 1 << 20));
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_blas");
  TCase *tc = tcase_create("blas");
  tcase_add_test(tc, check_rejects_bad_dims);
  tcase_add_test(tc, packed_dims);
  tcase_add_test(tc, gemm_padded_all_transposes);
  tcase_add_test(tc, gemm_degenerate);
  tcase_add_test(tc, thread_policy);
  suite_add_tcase(s, tc);
  return s;
}
