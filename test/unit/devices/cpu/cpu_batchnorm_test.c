/* cpu_batchnorm_test.c: FusedBatchNormV3 and FusedBatchNormGradV3 on CPU
 * against plain float64 loops written here from TF's formulas, on fresh
 * random NHWC inputs: training (batch mean, biased variance for y and the
 * reserve spaces, Bessel-corrected variance out, exponential_avg_factor 0.5
 * blending, empty mean/variance allowed), the n == 1 and n == 2 Bessel
 * edges, inference, an empty x (NaN statistics, zero scale/offset
 * gradients), NCHW as the transpose of NHWC, float16/bfloat16, and the
 * input errors.
 *
 * Tolerances: the kernels compute in double and round once, so float64
 * results match within atol/rtol 1e-12 and float32 within 1e-6 (inputs
 * O(1)); float16 and bfloat16 within 1e-2 and 2e-2 relative to outputs of
 * size O(1) (one rounding of the output plus inputs already rounded); the
 * float32 gradient within 1e-5 (its scale and offset sums are O(10)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

typedef struct fbn_cfg {
  double eps, factor;
  bool training, nchw;
} fbn_cfg;

static int cfg_attrs(const fbn_cfg *c, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"epsilon", tf_attr_float(c->eps)};
  kv[1] = (tf_attr_kv){"is_training", tf_attr_bool(c->training)};
  kv[2] = (tf_attr_kv){"data_format", tf_attr_string(c->nchw ? "NCHW" : "NHWC")};
  kv[3] = (tf_attr_kv){"exponential_avg_factor", tf_attr_float(c->factor)};
  return 4;
}

static double *vals(const tf_tensor *t) {
  double *v = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *v);
  for (int64_t i = 0; i < t->n; i++) v[i] = tf_tensor_get_f64(t, i);
  return v;
}

/* ---- float64 references (NHWC: channel = i % c) ------------------------------- */

typedef struct ref_out {
  double *y, m[32], v[32], bm[32], bv[32]; /* up to 32 channels */
} ref_out;

static void ref_forward(const fbn_cfg *c, tf_tensor *const *in, ref_out *r) {
  double *x = vals(in[0]), *sc = vals(in[1]), *of = vals(in[2]);
  double *mi = vals(in[3]), *vi = vals(in[4]);
  int64_t n = in[0]->n, ch = in[1]->n, rest = n / ch;
  double eps = (float)c->eps, f = (float)c->factor;
  r->y = malloc((size_t)n * sizeof *r->y);
  for (int64_t k = 0; k < ch; k++) {
    double s = 0, q = 0;
    for (int64_t j = 0; j < rest; j++) s += x[j * ch + k];
    double mean = s / (double)rest;
    for (int64_t j = 0; j < rest; j++) {
      q += (x[j * ch + k] - mean) * (x[j * ch + k] - mean);
    }
    double var = q / (double)rest;
    double unbiased = q / (double)(rest > 1 ? rest - 1 : 1);
    double um = c->training ? mean : mi[k], uv = c->training ? var : vi[k];
    for (int64_t j = 0; j < rest; j++) {
      r->y[j * ch + k] = (x[j * ch + k] - um) / sqrt(uv + eps) * sc[k] + of[k];
    }
    r->m[k] = r->bm[k] = um;
    r->v[k] = c->training ? unbiased : uv;
    r->bv[k] = uv;
    if (c->training && f != 1) {
      r->m[k] = (1 - f) * mi[k] + f * mean;
      r->v[k] = (1 - f) * vi[k] + f * unbiased;
    }
  }
  free(x), free(sc), free(of), free(mi), free(vi);
}

static void check_vec(const tf_tensor *got, const double *want, int64_t n,
                      double atol, double rtol) {
  tf_tensor *w = tt_tensor(got->dtype, tf_shape_of(1, n), want);
  tt_assert_close(got, w, atol, rtol);
  tf_tensor_unref(w);
}

/* in: x [.., C] and the four U vectors; runs and compares every output. */
static void check_forward(const fbn_cfg *c, tf_tensor *const *in, double tol) {
  tf_attr_kv kv[4];
  int nk = cfg_attrs(c, kv);
  tf_tensor *out[6];
  ck_assert_int_eq(tt_run("FusedBatchNormV3", in, 5, kv, nk, out, 6), 6);
  ref_out r;
  ref_forward(c, in, &r);
  tf_tensor *y = tt_tensor(in[0]->dtype, in[0]->shape, r.y);
  tt_assert_close(out[0], y, tol, tol);
  int64_t ch = in[1]->n;
  check_vec(out[1], r.m, ch, tol, tol);
  check_vec(out[2], r.v, ch, tol, tol);
  check_vec(out[3], r.bm, ch, tol, tol);
  check_vec(out[4], r.bv, ch, tol, tol);
  tt_assert_shape(out[5], 0);
  ck_assert(tf_tensor_get_f64(out[5], 0) == 0);
  free(r.y);
  tf_tensor_unref(y);
  tt_free(out, 6);
}

/* x [shape] of dt, scale, offset, mean, variance (> 0) of length C. */
static void make_inputs(tf_dtype t, tf_dtype u, tf_shape xs, int64_t ch,
                        tf_tensor **in) {
  in[0] = tt_rand(t, xs, -2, 2);
  in[1] = tt_rand(u, tf_shape_of(1, ch), 0.5, 1.5);
  in[2] = tt_rand(u, tf_shape_of(1, ch), -1, 1);
  in[3] = tt_rand(u, tf_shape_of(1, ch), -0.5, 0.5);
  in[4] = tt_rand(u, tf_shape_of(1, ch), 0.5, 2);
}

START_TEST(test_forward_training_and_inference) {
  static const tf_dtype types[] = {TF_FLOAT32, TF_FLOAT64};
  static const double factors[] = {1, 0.5};
  for (int t = 0; t < 2; t++) {
    double tol = types[t] == TF_FLOAT32 ? 1e-6 : 1e-12;
    for (int f = 0; f < 2; f++) {
      for (int training = 0; training < 2; training++) {
        tf_tensor *in[5];
        make_inputs(types[t], types[t], tf_shape_of(4, 2, 3, 4, 5), 5, in);
        fbn_cfg c = {1e-3, factors[f], training, false};
        check_forward(&c, in, tol);
        tt_free(in, 5);
      }
    }
  }
}
END_TEST

/* The default epsilon (1e-4 as a float) and a large parallel case. */
START_TEST(test_forward_large_default_eps) {
  tf_tensor *in[5];
  make_inputs(TF_FLOAT32, TF_FLOAT32, tf_shape_of(4, 4, 33, 31, 17), 17, in);
  fbn_cfg c = {1e-4, 1, true, false};
  tf_tensor *out[6];
  ck_assert_int_eq(tt_run("FusedBatchNormV3", in, 5, NULL, 0, out, 6), 6);
  tt_free(out, 6);
  check_forward(&c, in, 1e-5);
  tt_free(in, 5);
}
END_TEST

/* Training with empty mean and variance (TF allows them when the factor is
 * 1): the statistics come from the batch alone. */
START_TEST(test_training_empty_running_stats) {
  tf_tensor *in[5];
  make_inputs(TF_FLOAT64, TF_FLOAT64, tf_shape_of(4, 3, 2, 2, 4), 4, in);
  tf_tensor *full[5] = {in[0], in[1], in[2], in[3], in[4]};
  tf_tensor *e[2] = {tt_rand(TF_FLOAT64, tf_shape_of(1, 0), 0, 1),
                     tt_rand(TF_FLOAT64, tf_shape_of(1, 0), 0, 1)};
  tf_tensor *in2[5] = {in[0], in[1], in[2], e[0], e[1]};
  tf_tensor *a[6], *b[6];
  tt_run("FusedBatchNormV3", full, 5, NULL, 0, a, 6);
  tt_run("FusedBatchNormV3", in2, 5, NULL, 0, b, 6);
  for (int i = 0; i < 5; i++) tt_assert_close(b[i], a[i], 0, 0);
  fbn_cfg c = {1e-4, 0.5, true, false};
  tf_attr_kv kv[4];
  int nk = cfg_attrs(&c, kv);
  const char *msg = tt_run_fail("FusedBatchNormV3", in2, 5, kv, nk,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "mean") != NULL, "%s", msg);
  tt_free(a, 6), tt_free(b, 6), tt_free(e, 2), tt_free(in, 5);
}
END_TEST

/* n == 1: variance 0, y = offset, the Bessel factor n / max(n - 1, 1) = 1;
 * n == 2: the unbiased variance is twice the biased one. */
START_TEST(test_bessel_edges) {
  const double x1[] = {0.3, -1.2, 2.5};
  tf_tensor *in[5];
  make_inputs(TF_FLOAT64, TF_FLOAT64, tf_shape_of(4, 1, 1, 1, 3), 3, in);
  tf_tensor_unref(in[0]);
  in[0] = tt_tensor(TF_FLOAT64, tf_shape_of(4, 1, 1, 1, 3), x1);
  tf_tensor *out[6];
  tt_run("FusedBatchNormV3", in, 5, NULL, 0, out, 6);
  for (int k = 0; k < 3; k++) {
    ck_assert(tf_tensor_get_f64(out[0], k) == tf_tensor_get_f64(in[2], k));
    ck_assert(tf_tensor_get_f64(out[1], k) == x1[k]);
    ck_assert(tf_tensor_get_f64(out[2], k) == 0);
    ck_assert(tf_tensor_get_f64(out[4], k) == 0);
  }
  tt_free(out, 6), tt_free(in, 5);
  const double x2[] = {1, 5, -1, 2}; /* channel 0: {1, -1}; 1: {5, 2} */
  tf_tensor *in2[5];
  make_inputs(TF_FLOAT64, TF_FLOAT64, tf_shape_of(4, 1, 2, 1, 2), 2, in2);
  tf_tensor_unref(in2[0]);
  in2[0] = tt_tensor(TF_FLOAT64, tf_shape_of(4, 1, 2, 1, 2), x2);
  tt_run("FusedBatchNormV3", in2, 5, NULL, 0, out, 6);
  ck_assert(fabs(tf_tensor_get_f64(out[4], 0) - 1.0) < 1e-15);   /* biased */
  ck_assert(fabs(tf_tensor_get_f64(out[2], 0) - 2.0) < 1e-15);   /* n/(n-1) */
  ck_assert(fabs(tf_tensor_get_f64(out[4], 1) - 2.25) < 1e-15);
  ck_assert(fabs(tf_tensor_get_f64(out[2], 1) - 4.5) < 1e-15);
  tt_free(out, 6), tt_free(in2, 5);
}
END_TEST

/* Empty x: y empty, the statistics NaN in both modes, as TF. */
START_TEST(test_empty_x) {
  for (int training = 0; training < 2; training++) {
    tf_tensor *in[5];
    make_inputs(TF_FLOAT32, TF_FLOAT32, tf_shape_of(4, 0, 2, 2, 3), 3, in);
    fbn_cfg c = {1e-3, 1, training, false};
    tf_attr_kv kv[4];
    int nk = cfg_attrs(&c, kv);
    tf_tensor *out[6];
    tt_run("FusedBatchNormV3", in, 5, kv, nk, out, 6);
    tt_assert_shape(out[0], 4, 0, 2, 2, 3);
    for (int i = 1; i <= 4; i++) {
      tt_assert_shape(out[i], 1, 3);
      for (int k = 0; k < 3; k++) ck_assert(isnan(tf_tensor_get_f64(out[i], k)));
    }
    tt_free(out, 6), tt_free(in, 5);
  }
}
END_TEST

/* ---- NCHW -------------------------------------------------------------------- */

/* [N,H,W,C] -> [N,C,H,W] (to_nchw) or back. */
static tf_tensor *permute(const tf_tensor *t, bool to_nchw) {
  const int64_t *d = t->shape.dims;
  int64_t n = d[0], h = to_nchw ? d[1] : d[2], w = to_nchw ? d[2] : d[3];
  int64_t c = to_nchw ? d[3] : d[1];
  double *v = malloc((size_t)t->n * sizeof *v);
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < h; i++)
      for (int64_t j = 0; j < w; j++)
        for (int64_t k = 0; k < c; k++) {
          int64_t nhwc = ((b * h + i) * w + j) * c + k;
          int64_t nchw = ((b * c + k) * h + i) * w + j;
          v[to_nchw ? nchw : nhwc] = tf_tensor_get_f64(t, to_nchw ? nhwc : nchw);
        }
  tf_shape s = to_nchw ? tf_shape_of(4, n, c, h, w) : tf_shape_of(4, n, h, w, c);
  tf_tensor *r = tt_tensor(t->dtype, s, v);
  free(v);
  return r;
}

START_TEST(test_nchw_forward) {
  for (int training = 0; training < 2; training++) {
    tf_tensor *in[5];
    make_inputs(TF_FLOAT64, TF_FLOAT64, tf_shape_of(4, 2, 3, 4, 5), 5, in);
    fbn_cfg c = {1e-3, 0.5, training, false};
    tf_attr_kv kv[4];
    int nk = cfg_attrs(&c, kv);
    tf_tensor *a[6], *b[6];
    tt_run("FusedBatchNormV3", in, 5, kv, nk, a, 6);
    tf_tensor *xt = permute(in[0], true);
    tf_tensor *in2[5] = {xt, in[1], in[2], in[3], in[4]};
    c.nchw = true;
    nk = cfg_attrs(&c, kv);
    tt_run("FusedBatchNormV3", in2, 5, kv, nk, b, 6);
    tf_tensor *yb = permute(b[0], false);
    tt_assert_close(yb, a[0], 1e-12, 1e-12);
    for (int i = 1; i < 5; i++) tt_assert_close(b[i], a[i], 1e-12, 1e-12);
    tf_tensor_unref(yb), tf_tensor_unref(xt);
    tt_free(a, 6), tt_free(b, 6), tt_free(in, 5);
  }
}
END_TEST

/* ---- 16-bit T ------------------------------------------------------------------ */

START_TEST(test_half_types) {
  static const tf_dtype types[] = {TF_FLOAT16, TF_BFLOAT16};
  for (int t = 0; t < 2; t++) {
    for (int training = 0; training < 2; training++) {
      tf_tensor *in[5];
      make_inputs(types[t], TF_FLOAT32, tf_shape_of(4, 2, 3, 3, 4), 4, in);
      fbn_cfg c = {1e-3, 1, training, false};
      check_forward(&c, in, t == 0 ? 1e-2 : 2e-2);
      tt_free(in, 5);
    }
  }
}
END_TEST

/* ---- FusedBatchNormGradV3 -------------------------------------------------------- */

/* TF's formulas: training dx = scale r (dy - mean(dy) - (x - m) r^2
 * mean(dy (x - m))), inference dx = dy scale r; r = 1/sqrt(v + eps). */
static void ref_grad(bool training, double eps, tf_tensor *const *in,
                     double *dx, double *ds, double *db) {
  double *dy = vals(in[0]), *x = vals(in[1]), *sc = vals(in[2]);
  double *m = vals(in[3]), *v = vals(in[4]);
  int64_t n = in[1]->n, ch = in[2]->n, rest = n / ch;
  for (int64_t k = 0; k < ch; k++) {
    double r = 1 / sqrt(v[k] + (float)eps), sdy = 0, sdx = 0;
    for (int64_t j = 0; j < rest; j++) {
      sdy += dy[j * ch + k];
      sdx += dy[j * ch + k] * (x[j * ch + k] - m[k]);
    }
    ds[k] = sdx * r;
    db[k] = sdy;
    for (int64_t j = 0; j < rest; j++) {
      double xc = x[j * ch + k] - m[k], g = dy[j * ch + k];
      dx[j * ch + k] = training ? sc[k] * r * (g - sdy / (double)rest -
                                               xc * r * r * sdx / (double)rest)
                                : g * sc[k] * r;
    }
  }
  free(dy), free(x), free(sc), free(m), free(v);
}

/* in: dy, x, scale, reserve_space_1, reserve_space_2, reserve_space_3. */
static void make_grad_inputs(tf_dtype t, tf_shape xs, int64_t ch,
                             tf_tensor **in) {
  tf_dtype u = t == TF_FLOAT64 ? TF_FLOAT64 : TF_FLOAT32;
  in[0] = tt_rand(t, xs, -1, 1);
  in[1] = tt_rand(t, xs, -2, 2);
  in[2] = tt_rand(u, tf_shape_of(1, ch), 0.5, 1.5);
  in[3] = tt_rand(u, tf_shape_of(1, ch), -0.5, 0.5);
  in[4] = tt_rand(u, tf_shape_of(1, ch), 0.5, 2);
  in[5] = tt_rand(u, tf_shape_of(0), 0, 1);
}

START_TEST(test_grad_kernel) {
  static const tf_dtype types[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16,
                                   TF_BFLOAT16};
  static const double tols[] = {1e-5, 1e-12, 1e-2, 2e-2};
  for (int t = 0; t < 4; t++) {
    double tol = tols[t];
    for (int training = 0; training < 2; training++) {
      tf_tensor *in[6];
      make_grad_inputs(types[t], tf_shape_of(4, 2, 3, 4, 5), 5, in);
      fbn_cfg c = {1e-3, 1, training, false};
      tf_attr_kv kv[4];
      int nk = cfg_attrs(&c, kv) - 1; /* the grad op has no factor */
      tf_tensor *out[5];
      ck_assert_int_eq(tt_run("FusedBatchNormGradV3", in, 6, kv, nk, out, 5), 5);
      double dx[120], ds[5], db[5];
      ref_grad(training, 1e-3, in, dx, ds, db);
      tf_tensor *w = tt_tensor(types[t], in[1]->shape, dx);
      tt_assert_close(out[0], w, tol, tol);
      ck_assert_int_eq(out[1]->dtype, in[2]->dtype);
      check_vec(out[1], ds, 5, tol, tol);
      check_vec(out[2], db, 5, tol, tol);
      tt_assert_shape(out[3], 1, 0);
      tt_assert_shape(out[4], 1, 0);
      tf_tensor_unref(w), tt_free(out, 5), tt_free(in, 6);
    }
  }
}
END_TEST

/* NCHW training is the transpose of NHWC; inference refuses NCHW as TF;
 * an empty x gives zero scale and offset gradients. */
START_TEST(test_grad_kernel_nchw_and_empty) {
  tf_tensor *in[6];
  make_grad_inputs(TF_FLOAT64, tf_shape_of(4, 2, 3, 2, 4), 4, in);
  fbn_cfg c = {1e-3, 1, true, false};
  tf_attr_kv kv[4];
  int nk = cfg_attrs(&c, kv) - 1;
  tf_tensor *a[5], *b[5];
  tt_run("FusedBatchNormGradV3", in, 6, kv, nk, a, 5);
  tf_tensor *t0 = permute(in[0], true), *t1 = permute(in[1], true);
  tf_tensor *in2[6] = {t0, t1, in[2], in[3], in[4], in[5]};
  c.nchw = true;
  nk = cfg_attrs(&c, kv) - 1;
  tt_run("FusedBatchNormGradV3", in2, 6, kv, nk, b, 5);
  tf_tensor *db = permute(b[0], false);
  tt_assert_close(db, a[0], 1e-12, 1e-12);
  tt_assert_close(b[1], a[1], 1e-12, 1e-12);
  tt_assert_close(b[2], a[2], 1e-12, 1e-12);
  c.training = false;
  nk = cfg_attrs(&c, kv) - 1;
  const char *msg = tt_run_fail("FusedBatchNormGradV3", in2, 6, kv, nk,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "NHWC") != NULL, "%s", msg);
  tf_tensor_unref(db), tf_tensor_unref(t0), tf_tensor_unref(t1);
  tt_free(a, 5), tt_free(b, 5), tt_free(in, 6);
  make_grad_inputs(TF_FLOAT32, tf_shape_of(4, 2, 0, 2, 3), 3, in);
  tt_run("FusedBatchNormGradV3", in, 6, NULL, 0, a, 5);
  tt_assert_shape(a[0], 4, 2, 0, 2, 3);
  for (int k = 0; k < 3; k++) {
    ck_assert(tf_tensor_get_f64(a[1], k) == 0);
    ck_assert(tf_tensor_get_f64(a[2], k) == 0);
  }
  tt_free(a, 5), tt_free(in, 6);
}
END_TEST

/* ---- errors -------------------------------------------------------------------- */

static void expect_fail(const char *op, tf_tensor *const *in, int n,
                        const tf_attr_kv *kv, int nk, const char *needle) {
  const char *msg = tt_run_fail(op, in, n, kv, nk, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, needle) != NULL && strstr(msg, op) != NULL,
                "'%s' not in: %s", needle, msg);
}

START_TEST(test_errors) {
  tf_tensor *in[5];
  make_inputs(TF_FLOAT32, TF_FLOAT32, tf_shape_of(4, 2, 2, 2, 3), 3, in);
  tf_tensor *bad = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), 0, 1);
  tf_tensor *mat = tt_rand(TF_FLOAT32, tf_shape_of(2, 1, 3), 0, 1);
  tf_tensor *x3 = tt_rand(TF_FLOAT32, tf_shape_of(3, 2, 2, 3), 0, 1);
  tf_tensor *a[5] = {in[0], bad, in[2], in[3], in[4]};
  expect_fail("FusedBatchNormV3", a, 5, NULL, 0, "scale");
  tf_tensor *b[5] = {in[0], in[1], mat, in[3], in[4]};
  expect_fail("FusedBatchNormV3", b, 5, NULL, 0, "offset");
  tf_tensor *d[5] = {x3, in[1], in[2], in[3], in[4]};
  expect_fail("FusedBatchNormV3", d, 5, NULL, 0, "4-dimensional");
  tf_attr_kv inf = {"is_training", tf_attr_bool(false)};
  tf_tensor *e[5] = {in[0], in[1], in[2], in[3], bad};
  expect_fail("FusedBatchNormV3", e, 5, &inf, 1, "variance");
  tf_tensor *f64 = tt_rand(TF_FLOAT64, tf_shape_of(4, 2, 2, 2, 3), 0, 1);
  tf_tensor *g[5] = {f64, in[1], in[2], in[3], in[4]};
  expect_fail("FusedBatchNormV3", g, 5, NULL, 0, "U");
  tf_tensor *dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 2, 1, 3), 0, 1);
  tf_tensor *h[6] = {dy, in[0], in[1], in[3], in[4], bad};
  expect_fail("FusedBatchNormGradV3", h, 6, NULL, 0, "same shape");
  tf_tensor *k[6] = {in[0], in[0], in[1], bad, in[4], bad};
  expect_fail("FusedBatchNormGradV3", k, 6, NULL, 0, "reserve_space_1");
  tf_tensor *all[] = {bad, mat, x3, f64, dy};
  tt_free(all, 5), tt_free(in, 5);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_batchnorm");
  TCase *tc = tcase_create("batchnorm");
  tcase_add_test(tc, test_forward_training_and_inference);
  tcase_add_test(tc, test_forward_large_default_eps);
  tcase_add_test(tc, test_training_empty_running_stats);
  tcase_add_test(tc, test_bessel_edges);
  tcase_add_test(tc, test_empty_x);
  tcase_add_test(tc, test_nchw_forward);
  tcase_add_test(tc, test_half_types);
  tcase_add_test(tc, test_grad_kernel);
  tcase_add_test(tc, test_grad_kernel_nchw_and_empty);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
