/* cpu_softmax_test.c: Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and
 * SparseSoftmaxCrossEntropyWithLogits on CPU against a plain float64
 * recomputation in this file, hand-worked values and numpy.
 *
 * Tolerances (inputs uniform in [-5, 5)): float32 outputs are compared with
 * atol 1e-6 + rtol 1e-5 for probabilities and atol 1e-5 + rtol 1e-5 for
 * log-probabilities and losses (a few float32 roundings of values up to
 * ~log(C) + 10); float64 with atol 1e-12 + rtol 1e-12. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

/* ---- float64 references -------------------------------------------------- */

/* Softmax (or log-softmax) of x along its last axis, as a tensor of x's
 * dtype. */
static tf_tensor *ref_softmax(const tf_tensor *x, bool log_out) {
  int64_t c = x->shape.dims[x->shape.rank - 1];
  double *v = malloc(sizeof(double) * (size_t)(x->n > 0 ? x->n : 1));
  for (int64_t i = 0; i < x->n; i++) v[i] = tf_tensor_get_f64(x, i);
  for (int64_t r = 0; c > 0 && r < x->n / c; r++) {
    double *row = v + r * c, m = -INFINITY, s = 0;
    for (int64_t i = 0; i < c; i++) m = fmax(m, row[i]);
    for (int64_t i = 0; i < c; i++) s += exp(row[i] - m);
    for (int64_t i = 0; i < c; i++) {
      row[i] = log_out ? (row[i] - m) - log(s) : exp(row[i] - m) / s;
    }
  }
  tf_tensor *t = tt_tensor(x->dtype, x->shape, v);
  free(v);
  return t;
}

/* loss[b] = -sum_c labels[b,c] * log_softmax(f)[b,c]; backprop = softmax(f)
 * - labels. sparse gives labels as class indices. */
static void ref_xent(const tf_tensor *f, const tf_tensor *labels, bool sparse,
                     tf_tensor **loss, tf_tensor **back) {
  int64_t b = f->shape.dims[0], c = f->shape.dims[1];
  tf_tensor *ls = ref_softmax(f, true);
  double *lv = calloc((size_t)(b > 0 ? b : 1), sizeof(double));
  double *bv = calloc((size_t)(f->n > 0 ? f->n : 1), sizeof(double));
  for (int64_t r = 0; r < b; r++) {
    for (int64_t i = 0; i < c; i++) {
      double l = sparse ? (double)(tf_tensor_get_i64(labels, r) == i)
                        : tf_tensor_get_f64(labels, r * c + i);
      double lp = tf_tensor_get_f64(ls, r * c + i);
      lv[r] -= l * lp;
      bv[r * c + i] = exp(lp) - l;
    }
  }
  *loss = tt_tensor(f->dtype, tf_shape_of(1, b), lv);
  *back = tt_tensor(f->dtype, f->shape, bv);
  tf_tensor_unref(ls);
  free(lv);
  free(bv);
}

static double tol_p(tf_dtype dt) { return dt == TF_FLOAT32 ? 1e-6 : 1e-12; }
static double tol_l(tf_dtype dt) { return dt == TF_FLOAT32 ? 1e-5 : 1e-12; }
static double tol_r(tf_dtype dt) { return dt == TF_FLOAT32 ? 1e-5 : 1e-12; }

static const tf_dtype float_types[] = {TF_FLOAT32, TF_FLOAT64};

/* A random shape of rank 1..4 whose last dim is c. */
static tf_shape rand_shape(int64_t c) {
  int rank = 1 + (int)(tt_rand_u64() % 4);
  int64_t d[4];
  for (int i = 0; i < rank - 1; i++) d[i] = 1 + (int64_t)(tt_rand_u64() % 4);
  d[rank - 1] = c;
  return tf_shape_make(rank, d);
}

/* ---- Softmax / LogSoftmax ------------------------------------------------- */

START_TEST(test_softmax_random) {
  static const int64_t cs[] = {1, 2, 3, 17, 100};
  for (size_t t = 0; t < 2; t++) {
    tf_dtype dt = float_types[t];
    for (size_t k = 0; k < TF_ARRAY_LEN(cs); k++) {
      tf_tensor *x = tt_rand(dt, rand_shape(cs[k]), -5, 5);
      tf_tensor *y = tt_run1("Softmax", &x, 1, NULL, 0);
      tf_tensor *ly = tt_run1("LogSoftmax", &x, 1, NULL, 0);
      tf_tensor *want = ref_softmax(x, false), *lwant = ref_softmax(x, true);
      tt_assert_close(y, want, tol_p(dt), tol_r(dt));
      tt_assert_close(ly, lwant, tol_l(dt), tol_r(dt));
      tf_tensor *all[] = {x, y, ly, want, lwant};
      tt_free(all, 5);
    }
  }
}
END_TEST

/* Enough rows to be split across the pool. */
START_TEST(test_softmax_large_parallel) {
  for (size_t t = 0; t < 2; t++) {
    tf_tensor *x = tt_rand(float_types[t], tf_shape_of(2, 600, 37), -5, 5);
    tf_tensor *y = tt_run1("Softmax", &x, 1, NULL, 0);
    tf_tensor *ly = tt_run1("LogSoftmax", &x, 1, NULL, 0);
    tf_tensor *want = ref_softmax(x, false), *lwant = ref_softmax(x, true);
    tt_assert_close(y, want, tol_p(x->dtype), tol_r(x->dtype));
    tt_assert_close(ly, lwant, tol_l(x->dtype), tol_r(x->dtype));
    tf_tensor *all[] = {x, y, ly, want, lwant};
    tt_free(all, 5);
  }
}
END_TEST

START_TEST(test_softmax_hand_worked) {
  /* softmax([1, 2, 3]) = e^i / (e + e^2 + e^3) */
  const double x[] = {1, 2, 3};
  const double p[] = {0.090030573170380462, 0.24472847105479767,
                      0.66524095577481771};
  const double lp[] = {-2.4076059644443806, -1.4076059644443804,
                       -0.40760596444438036};
  tf_tensor *in = tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), x);
  tf_tensor *want = tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), p);
  tf_tensor *lwant = tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), lp);
  tf_tensor *y = tt_run1("Softmax", &in, 1, NULL, 0);
  tf_tensor *ly = tt_run1("LogSoftmax", &in, 1, NULL, 0);
  tt_assert_close(y, want, 1e-15, 1e-14);
  tt_assert_close(ly, lwant, 1e-15, 1e-14);
  tf_tensor *all[] = {in, want, lwant, y, ly};
  tt_free(all, 5);
}
END_TEST

/* Logits of 1e4 would overflow exp without the max shift. Row 2,
 * [0, -1e4, 1e4 - 1], is [-(1e4 - 1), -(2e4 - 1), 0] after it. */
START_TEST(test_softmax_stable) {
  const double x[] = {1e4, 1e4, 1e4, 0, -1e4, 1e4 - 1};
  const double p[] = {1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 1};
  const double lp[] = {-log(3.0), -log(3.0), -log(3.0), -(1e4 - 1),
                       -(2e4 - 1), 0};
  for (size_t t = 0; t < 2; t++) {
    tf_dtype dt = float_types[t];
    tf_tensor *in = tt_tensor(dt, tf_shape_of(2, 2, 3), x);
    tf_tensor *y = tt_run1("Softmax", &in, 1, NULL, 0);
    tf_tensor *ly = tt_run1("LogSoftmax", &in, 1, NULL, 0);
    tf_tensor *want = tt_tensor(dt, tf_shape_of(2, 2, 3), p);
    tf_tensor *lwant = tt_tensor(dt, tf_shape_of(2, 2, 3), lp);
    for (int64_t i = 0; i < y->n; i++) {
      ck_assert(isfinite(tf_tensor_get_f64(y, i)));
      ck_assert(isfinite(tf_tensor_get_f64(ly, i)));
    }
    tt_assert_close(y, want, 1e-7, 1e-6);
    tt_assert_close(ly, lwant, 1e-6, 1e-6);
    tf_tensor *all[] = {in, y, ly, want, lwant};
    tt_free(all, 5);
  }
}
END_TEST

START_TEST(test_softmax_empty_and_scalar) {
  tf_tensor *a = tt_rand(TF_FLOAT32, tf_shape_of(2, 0, 5), 0, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 0), 0, 1);
  tf_tensor *ya = tt_run1("Softmax", &a, 1, NULL, 0);
  tf_tensor *yb = tt_run1("LogSoftmax", &b, 1, NULL, 0);
  tt_assert_shape(ya, 2, 0, 5);
  tt_assert_shape(yb, 2, 3, 0);
  tf_tensor *s = tf_tensor_scalar_f32(1);
  const char *msg = tt_run_fail("Softmax", &s, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "at least 1 dimension") != NULL, "%s", msg);
  tf_tensor *all[] = {a, b, ya, yb, s};
  tt_free(all, 5);
}
END_TEST

/* A row containing NaN gives NaN throughout, as in TF. */
START_TEST(test_softmax_nan_row) {
  const double x[] = {1, NAN, 2, 0, 1, 2};
  tf_tensor *in = tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3), x);
  tf_tensor *y = tt_run1("Softmax", &in, 1, NULL, 0);
  for (int i = 0; i < 3; i++) ck_assert(isnan(tf_tensor_get_f64(y, i)));
  for (int i = 3; i < 6; i++) ck_assert(isfinite(tf_tensor_get_f64(y, i)));
  tf_tensor *all[] = {in, y};
  tt_free(all, 2);
}
END_TEST

/* ---- SoftmaxCrossEntropyWithLogits ---------------------------------------- */

/* Random label distributions: rows of positive weights normalised to 1,
 * or (raw) arbitrary values, which TF accepts too. */
static tf_tensor *rand_labels(tf_dtype dt, int64_t b, int64_t c, bool raw) {
  tf_tensor *l = tt_rand(TF_FLOAT64, tf_shape_of(2, b, c), raw ? -1 : 0, 1);
  double *v = l->data;
  for (int64_t r = 0; !raw && r < b; r++) {
    double s = 0;
    for (int64_t i = 0; i < c; i++) s += v[r * c + i];
    for (int64_t i = 0; i < c; i++) v[r * c + i] /= s;
  }
  tf_tensor *t = tt_tensor(dt, l->shape, v);
  tf_tensor_unref(l);
  return t;
}

START_TEST(test_xent_random) {
  for (size_t t = 0; t < 2; t++) {
    tf_dtype dt = float_types[t];
    for (int k = 0; k < 8; k++) {
      int64_t b = 1 + (int64_t)(tt_rand_u64() % 5);
      int64_t c = 1 + (int64_t)(tt_rand_u64() % 20);
      tf_tensor *in[2] = {tt_rand(dt, tf_shape_of(2, b, c), -5, 5),
                          rand_labels(dt, b, c, k % 2)};
      tf_tensor *out[2] = {0}, *loss, *back;
      ck_assert_int_eq(tt_run("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0,
                              out, 2), 2);
      ref_xent(in[0], in[1], false, &loss, &back);
      tt_assert_close(out[0], loss, tol_l(dt), tol_r(dt));
      tt_assert_close(out[1], back, tol_l(dt), tol_r(dt));
      tf_tensor *all[] = {in[0], in[1], out[0], out[1], loss, back};
      tt_free(all, 6);
    }
  }
}
END_TEST

START_TEST(test_xent_large_parallel) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 500, 50), -5, 5),
                      rand_labels(TF_FLOAT32, 500, 50, false)};
  tf_tensor *out[2] = {0}, *loss, *back;
  tt_run("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  ref_xent(in[0], in[1], false, &loss, &back);
  tt_assert_close(out[0], loss, 1e-5, 1e-5);
  tt_assert_close(out[1], back, 1e-6, 1e-5);
  tf_tensor *all[] = {in[0], in[1], out[0], out[1], loss, back};
  tt_free(all, 6);
}
END_TEST

START_TEST(test_xent_hand_worked_and_stable) {
  /* features [0, ln 3] against one-hot [0, 1]: p = [1/4, 3/4], loss =
   * -log(3/4); the second row shifts the first by 1e4. */
  const double f[] = {0, log(3.0), 1e4, 1e4 + log(3.0)};
  const double l[] = {0, 1, 0, 1};
  const double loss[] = {-log(0.75), -log(0.75)};
  const double back[] = {0.25, -0.25, 0.25, -0.25};
  for (size_t t = 0; t < 2; t++) {
    tf_dtype dt = float_types[t];
    tf_tensor *in[2] = {tt_tensor(dt, tf_shape_of(2, 2, 2), f),
                        tt_tensor(dt, tf_shape_of(2, 2, 2), l)};
    tf_tensor *out[2] = {0};
    tt_run("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
    tf_tensor *wl = tt_tensor(dt, tf_shape_of(1, 2), loss);
    tf_tensor *wb = tt_tensor(dt, tf_shape_of(2, 2, 2), back);
    /* float32: 1e4 + ln 3 rounds by up to 5e-4 */
    tt_assert_close(out[0], wl, dt == TF_FLOAT32 ? 1e-3 : 1e-12, 0);
    tt_assert_close(out[1], wb, dt == TF_FLOAT32 ? 1e-3 : 1e-12, 0);
    tf_tensor *all[] = {in[0], in[1], out[0], out[1], wl, wb};
    tt_free(all, 6);
  }
}
END_TEST

START_TEST(test_xent_errors_and_empty) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 3), 0, 1),
                      tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 4), 0, 1)};
  const char *msg = tt_run_fail("SoftmaxCrossEntropyWithLogits", in, 2, NULL,
                                0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3]") && strstr(msg, "[2,4]"), "%s", msg);
  tt_free(in, 2);
  in[0] = tt_rand(TF_FLOAT32, tf_shape_of(1, 3), 0, 1);
  in[1] = tt_rand(TF_FLOAT32, tf_shape_of(1, 3), 0, 1);
  msg = tt_run_fail("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0,
                    TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank 2") != NULL, "%s", msg);
  tt_free(in, 2);
  /* empty batch, and classes: 0 classes give loss 0 */
  in[0] = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 0), 0, 1);
  in[1] = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 0), 0, 1);
  tf_tensor *out[2] = {0};
  tt_run("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  tt_assert_shape(out[0], 1, 3);
  tt_assert_shape(out[1], 2, 3, 0);
  for (int i = 0; i < 3; i++) ck_assert(tf_tensor_get_f64(out[0], i) == 0);
  tt_free(out, 2);
  tt_free(in, 2);
  in[0] = tt_rand(TF_FLOAT32, tf_shape_of(2, 0, 4), 0, 1);
  in[1] = tt_rand(TF_FLOAT32, tf_shape_of(2, 0, 4), 0, 1);
  tt_run("SoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  tt_assert_shape(out[0], 1, 0);
  tt_assert_shape(out[1], 2, 0, 4);
  tt_free(out, 2);
  tt_free(in, 2);
}
END_TEST

/* ---- SparseSoftmaxCrossEntropyWithLogits ---------------------------------- */

START_TEST(test_sparse_xent_random) {
  static const tf_dtype label_types[] = {TF_INT32, TF_INT64};
  for (size_t t = 0; t < 2; t++) {
    tf_dtype dt = float_types[t];
    for (int k = 0; k < 8; k++) {
      int64_t b = 1 + (int64_t)(tt_rand_u64() % 5);
      int64_t c = 1 + (int64_t)(tt_rand_u64() % 20);
      tf_tensor *in[2] = {tt_rand(dt, tf_shape_of(2, b, c), -5, 5),
                          tt_rand(label_types[k % 2], tf_shape_of(1, b), 0,
                                  (double)(c - 1))};
      tf_tensor *out[2] = {0}, *loss, *back;
      tt_run("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
      ref_xent(in[0], in[1], true, &loss, &back);
      tt_assert_close(out[0], loss, tol_l(dt), tol_r(dt));
      tt_assert_close(out[1], back, tol_l(dt), tol_r(dt));
      tf_tensor *all[] = {in[0], in[1], out[0], out[1], loss, back};
      tt_free(all, 6);
    }
  }
}
END_TEST

START_TEST(test_sparse_xent_parallel) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT64, tf_shape_of(2, 500, 40), -10, 10),
                      tt_rand(TF_INT64, tf_shape_of(1, 500), 0, 39)};
  tf_tensor *out[2] = {0}, *loss, *back;
  tt_run("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  ref_xent(in[0], in[1], true, &loss, &back);
  tt_assert_close(out[0], loss, 1e-12, 1e-12);
  tt_assert_close(out[1], back, 1e-12, 1e-12);
  tf_tensor *all[] = {in[0], in[1], out[0], out[1], loss, back};
  tt_free(all, 6);
}
END_TEST

/* ---- numpy ------------------------------------------------------------------- */

/* All four ops against numpy in one python run (float64, atol and rtol
 * 1e-12). */
START_TEST(test_numpy_cross_check) {
  tf_tensor *in[5] = {tt_rand(TF_FLOAT64, tf_shape_of(3, 2, 3, 7), -20, 20),
                      tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 9), -10, 10),
                      rand_labels(TF_FLOAT64, 4, 9, false),
                      tt_rand(TF_FLOAT64, tf_shape_of(2, 6, 11), -10, 10),
                      tt_rand(TF_INT64, tf_shape_of(1, 6), 0, 10)};
  tf_tensor *got[6] = {0}, *np[6] = {0};
  got[0] = tt_run1("Softmax", &in[0], 1, NULL, 0);
  got[1] = tt_run1("LogSoftmax", &in[0], 1, NULL, 0);
  tt_run("SoftmaxCrossEntropyWithLogits", &in[1], 2, NULL, 0, &got[2], 2);
  tt_run("SparseSoftmaxCrossEntropyWithLogits", &in[3], 2, NULL, 0, &got[4], 2);
  int n = tt_numpy("def lsm(x):\n"
                   "    z = x - x.max(-1, keepdims=True)\n"
                   "    return z - np.log(np.exp(z).sum(-1, keepdims=True))\n"
                   "x, f, l, g, k = ins\n"
                   "oh = np.eye(g.shape[1])[k]\n"
                   "outs = [np.exp(lsm(x)), lsm(x),\n"
                   "        -(l * lsm(f)).sum(1), np.exp(lsm(f)) - l,\n"
                   "        -(oh * lsm(g)).sum(1), np.exp(lsm(g)) - oh]\n",
                   in, 5, np, 6);
  if (n >= 0) {
    ck_assert_int_eq(n, 6);
    for (int i = 0; i < 6; i++) tt_assert_close(got[i], np[i], 1e-12, 1e-12);
    tt_free(np, 6);
  }
  tt_free(got, 6);
  tt_free(in, 5);
}
END_TEST

START_TEST(test_sparse_xent_stable) {
  const double f[] = {1e4, -1e4, 0, 1e4, 1e4, 1e4};
  const int64_t l[] = {1, 2};
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3), f),
                      tt_tensor_i(TF_INT32, tf_shape_of(1, 2), l)};
  tf_tensor *out[2] = {0};
  tt_run("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  const double loss[] = {2e4, log(3.0)};
  const double back[] = {1, -1, 0, 1.0 / 3, 1.0 / 3, -2.0 / 3};
  tf_tensor *wl = tt_tensor(TF_FLOAT32, tf_shape_of(1, 2), loss);
  tf_tensor *wb = tt_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3), back);
  tt_assert_close(out[0], wl, 1e-6, 1e-6);
  tt_assert_close(out[1], wb, 1e-6, 1e-6);
  tf_tensor *all[] = {in[0], in[1], out[0], out[1], wl, wb};
  tt_free(all, 6);
}
END_TEST

START_TEST(test_sparse_xent_errors) {
  const int64_t bad[][3] = {{0, 5, 1}, {0, 1, -1}};
  for (int k = 0; k < 2; k++) {
    tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 5), 0, 1),
                        tt_tensor_i(k ? TF_INT64 : TF_INT32, tf_shape_of(1, 3),
                                    bad[k])};
    const char *msg = tt_run_fail("SparseSoftmaxCrossEntropyWithLogits", in, 2,
                                  NULL, 0, TF_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "label value of %lld at batch index %d",
             (long long)bad[k][k + 1], k + 1);
    ck_assert_msg(strstr(msg, want) && strstr(msg, "[0, 5)"), "%s", msg);
    tt_free(in, 2);
  }
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 5), 0, 1),
                      tt_rand(TF_INT32, tf_shape_of(1, 4), 0, 4)};
  const char *msg = tt_run_fail("SparseSoftmaxCrossEntropyWithLogits", in, 2,
                                NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "4") && strstr(msg, "3"), "%s", msg);
  tt_free(in, 2);
  /* zero classes: every label is out of range */
  in[0] = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 0), 0, 1);
  in[1] = tt_rand(TF_INT32, tf_shape_of(1, 2), 0, 0);
  tt_run_fail("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, 0,
              TF_INVALID_ARGUMENT);
  tt_free(in, 2);
  /* empty batch is fine */
  in[0] = tt_rand(TF_FLOAT64, tf_shape_of(2, 0, 3), 0, 1);
  in[1] = tt_rand(TF_INT64, tf_shape_of(1, 0), 0, 0);
  tf_tensor *out[2] = {0};
  tt_run("SparseSoftmaxCrossEntropyWithLogits", in, 2, NULL, 0, out, 2);
  tt_assert_shape(out[0], 1, 0);
  tt_assert_shape(out[1], 2, 0, 3);
  tt_free(out, 2);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_softmax");
  TCase *tc = tcase_create("softmax");
  tcase_add_test(tc, test_softmax_random);
  tcase_add_test(tc, test_softmax_large_parallel);
  tcase_add_test(tc, test_softmax_hand_worked);
  tcase_add_test(tc, test_softmax_stable);
  tcase_add_test(tc, test_softmax_empty_and_scalar);
  tcase_add_test(tc, test_softmax_nan_row);
  suite_add_tcase(s, tc);
  tc = tcase_create("xent");
  tcase_add_test(tc, test_xent_random);
  tcase_add_test(tc, test_xent_large_parallel);
  tcase_add_test(tc, test_xent_hand_worked_and_stable);
  tcase_add_test(tc, test_xent_errors_and_empty);
  suite_add_tcase(s, tc);
  tc = tcase_create("sparse_xent");
  tcase_add_test(tc, test_sparse_xent_random);
  tcase_add_test(tc, test_sparse_xent_parallel);
  tcase_add_test(tc, test_sparse_xent_stable);
  tcase_add_test(tc, test_sparse_xent_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("numpy");
  tcase_add_test(tc, test_numpy_cross_check);
  suite_add_tcase(s, tc);
  return s;
}
