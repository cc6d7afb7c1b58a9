/* cpu_matrix_band_test.c: the CPU kernels of MatrixBandPart, MatrixDiag,
 * MatrixDiagPart, MatrixDiagV3 and MatrixDiagPartV3 against plain
 * references written here from TF's documented formulas (in double), on
 * random batched shapes (with empty dims) and several dtypes (MatrixBandPart
 * also float16, bfloat16, complex64 and bool), int32 and
 * int64 band indices, negative (whole-triangle) bands, every align value
 * and scalar and [lo, hi] k; TF's documented MatrixDiagPartV3 example
 * (hand-computed values); and TF's errors. Comparisons are exact
 * (tolerance 0): the ops only move data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* A random shape [batch..., m, n] of rank 2..4 (a few dims 0). */
static tf_shape rand_matrix_shape(void) {
  tf_shape s = {.rank = (int)rnd(2, 4)};
  for (int d = 0; d < s.rank; d++) {
    s.dims[d] = rnd(0, 9) == 0 ? 0 : rnd(1, 5);
  }
  return s;
}

static void assert_exact(const tf_tensor *got, const tf_tensor *x,
                         const tf_shape *s, const double *want) {
  ck_assert_int_eq(got->dtype, x->dtype);
  ck_assert(tf_shape_equal(&got->shape, s));
  for (int64_t i = 0; i < got->n; i++) {
    ck_assert_msg(tf_tensor_get_f64(got, i) == want[i],
                  "element %lld: got %g want %g", (long long)i,
                  tf_tensor_get_f64(got, i), want[i]);
  }
}

/* ---- MatrixBandPart ----------------------------------------------------- */

static void check_band(tf_tensor *x, int64_t lower, int64_t upper,
                       tf_dtype tindex) {
  tf_tensor *in[3] = {x, tt_tensor_i(tindex, SHAPE(), (int64_t[]){lower}),
                      tt_tensor_i(tindex, SHAPE(), (int64_t[]){upper})};
  tf_tensor *y = tt_run1("MatrixBandPart", in, 3, NULL, 0);
  int r = x->shape.rank;
  int64_t m = x->shape.dims[r - 2], n = x->shape.dims[r - 1];
  double *want = malloc((size_t)(x->n + 1) * sizeof(double));
  for (int64_t e = 0; e < x->n; e++) {
    int64_t i = (e / n) % m, j = e % n;
    bool keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
    want[e] = keep ? tf_tensor_get_f64(x, e) : 0;
  }
  assert_exact(y, x, &x->shape, want);
  free(want);
  tf_tensor_unref(y);
  tf_tensor_unref(in[1]);
  tf_tensor_unref(in[2]);
}

START_TEST(test_band_part_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,
                                 TF_INT64,   TF_UINT8,   TF_BOOL,
                                 TF_FLOAT16, TF_BFLOAT16, TF_COMPLEX64};
  for (int it = 0; it < 135; it++) {
    tf_shape s = rand_matrix_shape();
    tf_dtype dt = dts[it % 9];
    tf_tensor *x = tt_rand(dt, s, dt == TF_BOOL ? 0 : -50, 50);
    int64_t m = s.dims[s.rank - 2], n = s.dims[s.rank - 1];
    int64_t lower = rnd(-2, m), upper = rnd(-2, n);
    check_band(x, lower, upper, it % 2 ? TF_INT32 : TF_INT64);
    tf_tensor_unref(x);
  }
}
END_TEST

/* Whole triangles, diagonal only, and the identity band. */
START_TEST(test_band_part_cases) {
  tf_tensor *x = tt_rand(TF_FLOAT64, SHAPE(2, 4, 5), -1, 1);
  int64_t cases[][2] = {{-1, 0}, {0, -1}, {0, 0}, {-1, -1}, {4, 5}, {1, 2}};
  for (int c = 0; c < 6; c++) {
    check_band(x, cases[c][0], cases[c][1], TF_INT64);
  }
  tf_tensor_unref(x);
  /* NaN outside the band becomes 0, inside stays NaN. */
  tf_tensor *z = tt_tensor(TF_FLOAT32, SHAPE(2, 2),
                           (double[]){NAN, NAN, NAN, NAN});
  tf_tensor *in[3] = {z, tf_tensor_scalar_i64(0), tf_tensor_scalar_i64(-1)};
  tf_tensor *y = tt_run1("MatrixBandPart", in, 3, NULL, 0);
  ck_assert(isnan(tf_tensor_get_f64(y, 0)) && isnan(tf_tensor_get_f64(y, 1)));
  ck_assert(tf_tensor_get_f64(y, 2) == 0 && isnan(tf_tensor_get_f64(y, 3)));
  tf_tensor_unref(y);
  tt_free(in, 3);
}
END_TEST

START_TEST(test_band_part_errors) {
  tf_tensor *in[3] = {tt_rand(TF_FLOAT32, SHAPE(3, 4), -1, 1),
                      tf_tensor_scalar_i64(4), tf_tensor_scalar_i64(0)};
  const char *m = tt_run_fail("MatrixBandPart", in, 3, NULL, 0,
                              TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "num_lower must be negative or less or equal to "
                          "number of rows (3) got: 4"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_scalar_i64(0);
  tf_tensor_unref(in[2]);
  in[2] = tf_tensor_scalar_i64(5);
  m = tt_run_fail("MatrixBandPart", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "num_upper") && strstr(m, "(4) got: 5"), "%s", m);
  tf_tensor_unref(in[0]);
  in[0] = tt_rand(TF_FLOAT32, SHAPE(4), -1, 1);
  m = tt_run_fail("MatrixBandPart", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "input") && strstr(m, "MatrixBandPart"), "%s", m);
  /* Strings: TF's kernel covers POD types only. */
  tf_tensor_unref(in[0]);
  tf_status st;
  tf_status_init(&st);
  tf_shape ss = SHAPE(2, 2);
  ck_assert_int_eq(tf_tensor_new_zeros(TF_STRING, &ss, &in[0], &st), TF_OK);
  m = tt_run_fail("MatrixBandPart", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "'input' has dtype string"), "%s", m);
  tt_free(in, 3);
}
END_TEST

/* ---- diagonals ---------------------------------------------------------- */

static const char *const k_aligns[4] = {"LEFT_RIGHT", "RIGHT_LEFT",
                                        "LEFT_LEFT", "RIGHT_RIGHT"};

/* TF's documented offset of diagonal d (right-aligned superdiagonals for
 * RIGHT_*, subdiagonals for *_RIGHT). */
static int64_t doc_offset(const char *align, int64_t d, int64_t m, int64_t n,
                          int64_t max_len) {
  int64_t len = (d >= 0 ? (n - d < m ? n - d : m) : (m + d < n ? m + d : n));
  bool right = (d >= 0 && strncmp(align, "RIGHT", 5) == 0) ||
               (d <= 0 && strcmp(align + strlen(align) - 5, "RIGHT") == 0);
  return right ? max_len - len : 0;
}

static int64_t max_diag_len(int64_t m, int64_t n, int64_t lo, int64_t hi) {
  int64_t a = m + (hi < 0 ? hi : 0), b = n - (lo > 0 ? lo : 0);
  return a < b ? a : b;
}

static tf_tensor *k_tensor(int64_t lo, int64_t hi) {
  if (lo == hi && rnd(0, 1)) {
    return tf_tensor_scalar_i32((int32_t)lo);
  }
  return tf_tensor_vec_i32(2, (int32_t[]){(int32_t)lo, (int32_t)hi});
}

/* output[b, j, p] = input[b, p + y, p + x] with d = hi - j,
 * y = max(-d, 0) - offset, x = max(d, 0) - offset, else padding. */
static double *diag_part_ref(const tf_tensor *x, int64_t lo, int64_t hi,
                             const char *align, double pad, int64_t *len) {
  int r = x->shape.rank;
  int64_t m = x->shape.dims[r - 2], n = x->shape.dims[r - 1];
  int64_t L = max_diag_len(m, n, lo, hi), nd = hi - lo + 1;
  int64_t batch = 1;
  for (int d = 0; d < r - 2; d++) {
    batch *= x->shape.dims[d];
  }
  double *out = malloc((size_t)(batch * nd * L + 1) * sizeof(double));
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t j = 0; j < nd; j++) {
      int64_t d = hi - j, off = doc_offset(align, d, m, n, L);
      int64_t y0 = (d < 0 ? -d : 0) - off, x0 = (d > 0 ? d : 0) - off;
      for (int64_t p = 0; p < L; p++) {
        int64_t row = p + y0, col = p + x0;
        bool in = row >= 0 && row < m && col >= 0 && col < n;
        out[(b * nd + j) * L + p] =
            in ? tf_tensor_get_f64(x, (b * m + row) * n + col) : pad;
      }
    }
  }
  *len = L;
  return out;
}

/* Output shape of MatrixDiagPartV3: batch dims, [num_diags], len. */
static tf_shape part_shape(const tf_shape *s, int64_t lo, int64_t hi,
                           int64_t len) {
  tf_shape o = tf_shape_make(s->rank - 2, s->dims);
  if (lo < hi) {
    o.dims[o.rank++] = hi - lo + 1;
  }
  o.dims[o.rank++] = len;
  return o;
}

START_TEST(test_diag_part_v3_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int it = 0; it < 160; it++) {
    tf_shape s = rand_matrix_shape();
    int64_t m = s.dims[s.rank - 2], n = s.dims[s.rank - 1];
    if (m == 0 || n == 0) {
      s.dims[s.rank - 2] = m = 1 + rnd(0, 3);
      s.dims[s.rank - 1] = n = 1 + rnd(0, 3);
    }
    int64_t a = rnd(-m + 1, n - 1), b = rnd(-m + 1, n - 1);
    int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    tf_dtype dt = dts[it % 4];
    const char *align = k_aligns[it % 4];
    double pad = (double)rnd(-9, 9);
    tf_tensor *x = tt_rand(dt, s, -50, 50);
    tf_tensor *in[3] = {x, k_tensor(lo, hi),
                        tt_tensor(dt, SHAPE(), (double[]){pad})};
    tf_attr_kv kv = {"align", tf_attr_string(align)};
    tf_tensor *y = tt_run1("MatrixDiagPartV3", in, 3, &kv, 1);
    int64_t len = 0;
    double *want = diag_part_ref(x, lo, hi, align, pad, &len);
    tf_shape os = part_shape(&s, lo, hi, len);
    assert_exact(y, x, &os, want);
    free(want);
    tf_tensor_unref(y);
    tt_free(in, 3);
  }
}
END_TEST

/* MatrixDiagPart (V1) is the main diagonal, also of empty matrices. */
START_TEST(test_diag_part_v1) {
  for (int it = 0; it < 60; it++) {
    tf_shape s = rand_matrix_shape();
    tf_tensor *x = tt_rand(it % 2 ? TF_FLOAT64 : TF_INT32, s, -50, 50);
    tf_tensor *y = tt_run1("MatrixDiagPart", &x, 1, NULL, 0);
    int64_t len = 0;
    double *want = diag_part_ref(x, 0, 0, "RIGHT_LEFT", 0, &len);
    tf_shape os = part_shape(&s, 0, 0, len);
    assert_exact(y, x, &os, want);
    free(want);
    tf_tensor_unref(y);
    tf_tensor_unref(x);
  }
}
END_TEST

/* TF's documented example (array_ops.matrix_diag_part, k = (-1, 2)). */
START_TEST(test_diag_part_v3_doc) {
  tf_tensor *in[3] = {
      tt_tensor(TF_INT32, SHAPE(1, 3, 4),
                (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 7, 6}),
      tf_tensor_vec_i32(2, (int32_t[]){-1, 2}), tf_tensor_scalar_i32(0)};
  double rl[12] = {0, 3, 8, 2, 7, 6, 1, 6, 7, 5, 8, 0};
  double lr[12] = {3, 8, 0, 2, 7, 6, 1, 6, 7, 0, 5, 8};
  tf_shape os = SHAPE(1, 4, 3);
  for (int c = 0; c < 2; c++) {
    tf_attr_kv kv = {"align", tf_attr_string(c ? "LEFT_RIGHT" : "RIGHT_LEFT")};
    tf_tensor *y = tt_run1("MatrixDiagPartV3", in, 3, &kv, c);
    assert_exact(y, in[0], &os, c ? lr : rl);
    tf_tensor_unref(y);
  }
  tt_free(in, 3);
}
END_TEST

/* output[b, r, c] = diagonal[b, hi - d, min(r, c) + offset(d)] for
 * lo <= d = c - r <= hi, else padding (TF's documented formula). */
static double *diag_ref(const tf_tensor *dg, int64_t lo, int64_t hi,
                        int64_t m, int64_t n, const char *align, double pad,
                        int64_t batch) {
  int64_t L = dg->shape.dims[dg->shape.rank - 1], nd = hi - lo + 1;
  double *out = malloc((size_t)(batch * m * n + 1) * sizeof(double));
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t r = 0; r < m; r++) {
      for (int64_t c = 0; c < n; c++) {
        int64_t d = c - r;
        double v = pad;
        if (d >= lo && d <= hi) {
          int64_t p = c - (d > 0 ? d : 0) + doc_offset(align, d, m, n, L);
          v = tf_tensor_get_f64(dg, (b * nd + hi - d) * L + p);
        }
        out[(b * m + r) * n + c] = v;
      }
    }
  }
  return out;
}

START_TEST(test_diag_v3_random) {
  for (int it = 0; it < 160; it++) {
    int64_t m = rnd(1, 5), n = rnd(1, 5);
    int64_t a = rnd(-m + 1, n - 1), b = rnd(-m + 1, n - 1);
    int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    int64_t L = max_diag_len(m, n, lo, hi), batch = rnd(0, 3);
    tf_shape ds = lo < hi ? SHAPE(batch, hi - lo + 1, L) : SHAPE(batch, L);
    tf_dtype dt = it % 2 ? TF_FLOAT64 : TF_INT64;
    const char *align = k_aligns[it % 4];
    /* The diagonal fixes one of m, n (TF: rows or cols must be minimal);
     * pass -1 for the other when they coincide with TF's inference. */
    int64_t min_rows = L - (hi < 0 ? hi : 0), min_cols = L + (lo > 0 ? lo : 0);
    if (m != min_rows && n != min_cols) {
      m = min_rows;
    }
    int64_t rows = m, cols = n;
    if (it % 3 == 0 && m == min_rows && n != min_cols) {
      rows = -1;
    } else if (it % 3 == 1 && n == min_cols && m != min_rows) {
      cols = -1;
    }
    double pad = (double)rnd(-9, 9);
    tf_tensor *dg = tt_rand(dt, ds, -50, 50);
    tf_tensor *in[5] = {dg, k_tensor(lo, hi), tf_tensor_scalar_i32((int32_t)rows),
                        tf_tensor_scalar_i32((int32_t)cols),
                        tt_tensor(dt, SHAPE(), (double[]){pad})};
    tf_attr_kv kv = {"align", tf_attr_string(align)};
    tf_tensor *y = tt_run1("MatrixDiagV3", in, 5, &kv, 1);
    double *want = diag_ref(dg, lo, hi, m, n, align, pad, batch);
    tf_shape os = SHAPE(batch, m, n);
    assert_exact(y, dg, &os, want);
    free(want);
    tf_tensor_unref(y);
    tt_free(in, 5);
  }
}
END_TEST

/* MatrixDiag (V1): square [..., N, N]; also an empty batch and N = 0. */
START_TEST(test_diag_v1) {
  tf_shape shapes[] = {SHAPE(3), SHAPE(2, 4), SHAPE(2, 1, 3), SHAPE(0, 3),
                       SHAPE(2, 0)};
  for (int i = 0; i < 5; i++) {
    tf_tensor *dg = tt_rand(TF_FLOAT32, shapes[i], -5, 5);
    tf_tensor *y = tt_run1("MatrixDiag", &dg, 1, NULL, 0);
    int r = dg->shape.rank;
    int64_t n = dg->shape.dims[r - 1];
    tf_shape os = dg->shape;
    os.dims[os.rank++] = n;
    int64_t batch = n == 0 ? 0 : dg->n / n;
    double *want = diag_ref(dg, 0, 0, n, n, "RIGHT_LEFT", 0, batch);
    assert_exact(y, dg, &os, want);
    free(want);
    tf_tensor_unref(y);
    tf_tensor_unref(dg);
  }
}
END_TEST

START_TEST(test_diag_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(3, 4), -1, 1);
  tf_tensor *in[3] = {x, tf_tensor_scalar_i32(4), tf_tensor_scalar_f32(0)};
  const char *m = tt_run_fail("MatrixDiagPartV3", in, 3, NULL, 0,
                              TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "MatrixDiagPartV3") &&
                    strstr(m, "lower_diag_index is out of bound: 4"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i32(2, (int32_t[]){2, 1});
  m = tt_run_fail("MatrixDiagPartV3", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "must not be larger"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i32(3, (int32_t[]){0, 1, 2});
  m = tt_run_fail("MatrixDiagPartV3", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "one or two elements"), "%s", m);
  tt_free(in, 3);
  /* MatrixDiagV3: 2 diagonals given for a band of 3; too few rows. */
  tf_tensor *d[5] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1),
                     tf_tensor_vec_i32(2, (int32_t[]){0, 2}),
                     tf_tensor_scalar_i32(-1), tf_tensor_scalar_i32(-1),
                     tf_tensor_scalar_f32(0)};
  m = tt_run_fail("MatrixDiagV3", d, 5, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "MatrixDiagV3") && strstr(m, "diagonal"), "%s", m);
  tf_tensor_unref(d[1]);
  d[1] = tf_tensor_scalar_i32(0);
  tf_tensor_unref(d[2]);
  d[2] = tf_tensor_scalar_i32(2);
  m = tt_run_fail("MatrixDiagV3", d, 5, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "rows"), "%s", m);
  tt_free(d, 5);
  tf_tensor *s = tf_tensor_scalar_f32(1);
  m = tt_run_fail("MatrixDiag", &s, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "diagonal"), "%s", m);
  tf_tensor_unref(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_matrix_band");
  TCase *tc = tcase_create("matrix_band");
  tcase_add_test(tc, test_band_part_random);
  tcase_add_test(tc, test_band_part_cases);
  tcase_add_test(tc, test_band_part_errors);
  tcase_add_test(tc, test_diag_part_v3_random);
  tcase_add_test(tc, test_diag_part_v1);
  tcase_add_test(tc, test_diag_part_v3_doc);
  tcase_add_test(tc, test_diag_v3_random);
  tcase_add_test(tc, test_diag_v1);
  tcase_add_test(tc, test_diag_errors);
  suite_add_tcase(s, tc);
  return s;
}
