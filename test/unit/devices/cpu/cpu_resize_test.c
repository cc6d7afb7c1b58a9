/* cpu_resize_test.c: values of the ResizeBilinear, ResizeBilinearGrad,
 * ResizeNearestNeighbor and ResizeNearestNeighborGrad CPU kernels on fresh
 * random inputs (seeded test RNG) against plain double loops written here
 * from TF's sampling rules. The sample positions are computed as TF
 * defines them (float scale and float source coordinate); the
 * interpolation and sums are in double. Every mode (legacy, align_corners,
 * half_pixel_centers) is run on upscaling, downscaling, equal sizes and
 * size-1 dims, several dtypes each. Tolerances: bilinear outputs atol
 * 1e-5 + rtol 1e-5 (TF interpolates in float), float64 ResizeBilinearGrad
 * 1e-12, half and bfloat16 ResizeBilinearGrad rtol 1e-3 and 8e-3 (one
 * rounding), nearest neighbor exact (copies and integer sums; float sums
 * rtol 1e-6). Also hand-computed rows for each mode, the adjoint identity
 * <resize(x), g> = <x, grad(g)>, empty batches and the errors (both modes
 * set, non-4-D images, bad size vectors, zero-size images, mismatched
 * grads). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

enum { LEGACY, ALIGN, HALF };

static tf_attr_kv kv_buf[2];

static const tf_attr_kv *mode_kv(int mode) {
  kv_buf[0] = (tf_attr_kv){"align_corners", tf_attr_bool(mode == ALIGN)};
  kv_buf[1] = (tf_attr_kv){"half_pixel_centers", tf_attr_bool(mode == HALF)};
  return kv_buf;
}

static float ref_scale(int64_t in, int64_t out, int mode) {
  if (mode == ALIGN && out > 1) {
    return (float)(in - 1) / (float)(out - 1);
  }
  return (float)in / (float)out;
}

/* Bilinear: the two source rows and the weight of the second. */
static void ref_lin(int64_t o, int64_t in, int64_t out, int mode, int64_t *lo,
                    int64_t *hi, double *t) {
  float s = ref_scale(in, out, mode);
  float src = mode == HALF ? ((float)o + 0.5f) * s - 0.5f : (float)o * s;
  double f = floor((double)src);
  *t = (double)src - f;
  *hi = (int64_t)ceil((double)src);
  if (*hi > in - 1) *hi = in - 1;
  *lo = f < 0 ? 0 : (int64_t)f;
  if (*lo > *hi) *lo = *hi;
}

/* Nearest: the source index. */
static int64_t ref_near(int64_t o, int64_t in, int64_t out, int mode) {
  float s = ref_scale(in, out, mode);
  float src = mode == HALF ? ((float)o + 0.5f) * s : (float)o * s;
  double v = mode == ALIGN ? round((double)src) : floor((double)src);
  int64_t i = (int64_t)v;
  if (i > in - 1) i = in - 1;
  if (i < 0) i = 0;
  return i;
}

static int64_t at(const int64_t *d, int64_t b, int64_t y, int64_t x,
                  int64_t c) {
  return ((b * d[1] + y) * d[2] + x) * d[3] + c;
}

/* Bilinear reference of x [N,H,W,C] to [N,oh,ow,C] as float32. */
static tf_tensor *ref_bilinear(const tf_tensor *x, int64_t oh, int64_t ow,
                               int mode) {
  const int64_t *d = x->shape.dims;
  int64_t od[4] = {d[0], oh, ow, d[3]};
  tf_shape os = tf_shape_make(4, od);
  double *v = calloc((size_t)tf_shape_num_elements(&os) + 1, sizeof *v);
  for (int64_t b = 0; b < d[0]; b++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t xx = 0; xx < ow; xx++)
        for (int64_t c = 0; c < d[3]; c++) {
          int64_t y0, y1, x0, x1;
          double ty, tx;
          ref_lin(y, d[1], oh, mode, &y0, &y1, &ty);
          ref_lin(xx, d[2], ow, mode, &x0, &x1, &tx);
          double a = tf_tensor_get_f64(x, at(d, b, y0, x0, c));
          double bb = tf_tensor_get_f64(x, at(d, b, y0, x1, c));
          double cc = tf_tensor_get_f64(x, at(d, b, y1, x0, c));
          double dd = tf_tensor_get_f64(x, at(d, b, y1, x1, c));
          v[at(od, b, y, xx, c)] = (1 - ty) * ((1 - tx) * a + tx * bb) +
                                   ty * ((1 - tx) * cc + tx * dd);
        }
  tf_tensor *t = tt_tensor(TF_FLOAT32, os, v);
  free(v);
  return t;
}

static tf_tensor *size_vec(int64_t h, int64_t w) {
  int32_t v[2] = {(int32_t)h, (int32_t)w};
  return tf_tensor_vec_i32(2, v);
}

typedef struct rs_case {
  int64_t n, h, w, c, oh, ow;
} rs_case;

static const rs_case cases[] = {
    {2, 3, 4, 3, 7, 9},  /* up */
    {1, 7, 9, 2, 3, 4},  /* down */
    {2, 5, 5, 1, 5, 5},  /* same */
    {1, 1, 1, 2, 3, 2},  /* 1x1 image */
    {1, 5, 4, 2, 1, 1},  /* to 1x1 */
    {2, 1, 6, 2, 4, 3},  /* height 1, mixed */
    {1, 6, 10, 1, 4, 6}, /* ratios 1.5 and 10/6 */
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static tf_tensor *rand_img(tf_dtype dt, const rs_case *k) {
  tf_shape s = tf_shape_of(4, k->n, k->h, k->w, k->c);
  bool is_int = dt != TF_FLOAT32 && dt != TF_FLOAT64;
  return tt_rand(dt, s, is_int ? 0 : -3, is_int ? 100 : 3);
}

START_TEST(test_bilinear_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64,  TF_UINT8,
                                 TF_INT32,   TF_INT16,    TF_INT64,
                                 TF_FLOAT16, TF_BFLOAT16};
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_CASES; k++)
      for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++) {
        tf_tensor *in[2] = {rand_img(dts[j], &cases[k]),
                            size_vec(cases[k].oh, cases[k].ow)};
        tf_tensor *y = tt_run1("ResizeBilinear", in, 2, mode_kv(m), 2);
        tf_tensor *want = ref_bilinear(in[0], cases[k].oh, cases[k].ow, m);
        tt_assert_close(y, want, 1e-5, 1e-5);
        tt_free((tf_tensor *[]){in[0], in[1], y, want}, 4);
      }
}
END_TEST

/* Row [0, 1] resized to width 4 in each mode (TF's documented values). */
START_TEST(test_bilinear_hand) {
  static const double want[3][4] = {{0, 0.5, 1, 1},
                                    {0, 1.0 / 3, 2.0 / 3, 1},
                                    {0, 0.25, 0.75, 1}};
  for (int m = 0; m < 3; m++) {
    tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 1, 2, 1),
                                  (double[]){0, 1}),
                        size_vec(1, 4)};
    tf_tensor *y = tt_run1("ResizeBilinear", in, 2, mode_kv(m), 2);
    tf_tensor *w = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 1, 4, 1), want[m]);
    tt_assert_close(y, w, 1e-7, 0);
    tt_free((tf_tensor *[]){in[0], in[1], y, w}, 4);
  }
}
END_TEST

/* Scatter reference of ResizeBilinearGrad (double sums). */
static tf_tensor *ref_bilinear_grad(const tf_tensor *g, const tf_tensor *x,
                                    int mode) {
  const int64_t *gd = g->shape.dims, *d = x->shape.dims;
  double *v = calloc((size_t)x->n + 1, sizeof *v);
  for (int64_t b = 0; b < gd[0]; b++)
    for (int64_t y = 0; y < gd[1]; y++)
      for (int64_t xx = 0; xx < gd[2]; xx++)
        for (int64_t c = 0; c < gd[3]; c++) {
          int64_t y0, y1, x0, x1;
          double ty, tx, gv = tf_tensor_get_f64(g, at(gd, b, y, xx, c));
          ref_lin(y, d[1], gd[1], mode, &y0, &y1, &ty);
          ref_lin(xx, d[2], gd[2], mode, &x0, &x1, &tx);
          v[at(d, b, y0, x0, c)] += gv * (1 - ty) * (1 - tx);
          v[at(d, b, y0, x1, c)] += gv * (1 - ty) * tx;
          v[at(d, b, y1, x0, c)] += gv * ty * (1 - tx);
          v[at(d, b, y1, x1, c)] += gv * ty * tx;
        }
  tf_tensor *t = tt_tensor(x->dtype, x->shape, v);
  free(v);
  return t;
}

static double dot(const tf_tensor *a, const tf_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < a->n; i++) {
    s += tf_tensor_get_f64(a, i) * tf_tensor_get_f64(b, i);
  }
  return s;
}

START_TEST(test_bilinear_grad_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16,
                                 TF_BFLOAT16};
  /* half and bfloat16 sum in float32 and round once: rtol 1e-3, 8e-3 */
  static const double tols[] = {1e-5, 1e-12, 1e-3, 8e-3};
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_CASES; k++)
      for (int j = 0; j < 4; j++) {
        const rs_case *q = &cases[k];
        tf_tensor *x = rand_img(dts[j], q);
        tf_tensor *g = tt_rand(TF_FLOAT32,
                               tf_shape_of(4, q->n, q->oh, q->ow, q->c), -1, 1);
        tf_tensor *dx = tt_run1("ResizeBilinearGrad", (tf_tensor *[]){g, x},
                                2, mode_kv(m), 2);
        tf_tensor *want = ref_bilinear_grad(g, x, m);
        tt_assert_close(dx, want, tols[j], tols[j]);
        if (j >= 2) {
          tt_free((tf_tensor *[]){x, g, dx, want}, 4);
          continue;
        }
        /* Adjoint: <ResizeBilinear(x), g> = <x, ResizeBilinearGrad(g)>. */
        tf_tensor *sz = size_vec(q->oh, q->ow);
        tf_tensor *y = tt_run1("ResizeBilinear", (tf_tensor *[]){x, sz}, 2,
                               mode_kv(m), 2);
        double l = dot(y, g), r = dot(x, dx);
        ck_assert_msg(fabs(l - r) <= 1e-4 * (1 + fabs(l)), "%g vs %g", l, r);
        tt_free((tf_tensor *[]){x, g, dx, want, y, sz}, 6);
      }
}
END_TEST

START_TEST(test_nearest_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_UINT8, TF_INT32,
                                 TF_INT64,   TF_INT8,    TF_FLOAT16};
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_CASES; k++)
      for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++) {
        const rs_case *q = &cases[k];
        tf_tensor *in[2] = {rand_img(dts[j], q), size_vec(q->oh, q->ow)};
        tf_tensor *y = tt_run1("ResizeNearestNeighbor", in, 2, mode_kv(m), 2);
        const int64_t *d = in[0]->shape.dims;
        int64_t od[4] = {q->n, q->oh, q->ow, q->c};
        double *v = calloc((size_t)(q->n * q->oh * q->ow * q->c), sizeof *v);
        for (int64_t b = 0; b < q->n; b++)
          for (int64_t yy = 0; yy < q->oh; yy++)
            for (int64_t xx = 0; xx < q->ow; xx++)
              for (int64_t c = 0; c < q->c; c++) {
                int64_t sy = ref_near(yy, q->h, q->oh, m);
                int64_t sx = ref_near(xx, q->w, q->ow, m);
                v[at(od, b, yy, xx, c)] =
                    tf_tensor_get_f64(in[0], at(d, b, sy, sx, c));
              }
        tf_tensor *want = tt_tensor(dts[j], tf_shape_make(4, od), v);
        free(v);
        tt_assert_close(y, want, 0, 0);
        tt_free((tf_tensor *[]){in[0], in[1], y, want}, 4);
      }
}
END_TEST

/* Row [0, 1, 2] resized to width 5: floor, round (half away), half. */
START_TEST(test_nearest_hand) {
  static const double want[3][5] = {
      {0, 0, 1, 1, 2}, {0, 1, 1, 2, 2}, {0, 0, 1, 2, 2}};
  for (int m = 0; m < 3; m++) {
    tf_tensor *in[2] = {tt_tensor(TF_INT32, tf_shape_of(4, 1, 1, 3, 1),
                                  (double[]){0, 1, 2}),
                        size_vec(1, 5)};
    tf_tensor *y = tt_run1("ResizeNearestNeighbor", in, 2, mode_kv(m), 2);
    tf_tensor *w = tt_tensor(TF_INT32, tf_shape_of(4, 1, 1, 5, 1), want[m]);
    tt_assert_close(y, w, 0, 0);
    tt_free((tf_tensor *[]){in[0], in[1], y, w}, 4);
  }
}
END_TEST

START_TEST(test_nearest_grad_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,
                                 TF_UINT8,   TF_INT8,    TF_FLOAT16,
                                 TF_BFLOAT16};
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_CASES; k++)
      for (size_t j = 0; j < sizeof dts / sizeof dts[0]; j++) {
        const rs_case *q = &cases[k];
        bool is_int = dts[j] != TF_FLOAT32 && dts[j] != TF_FLOAT64;
        tf_tensor *g = tt_rand(dts[j], tf_shape_of(4, q->n, q->oh, q->ow, q->c),
                               is_int ? 0 : -1, is_int ? 3 : 1);
        tf_tensor *in[2] = {g, size_vec(q->h, q->w)};
        tf_tensor *dx = tt_run1("ResizeNearestNeighborGrad", in, 2,
                                mode_kv(m), 2);
        int64_t d[4] = {q->n, q->h, q->w, q->c};
        const int64_t gd[4] = {q->n, q->oh, q->ow, q->c};
        double *v = calloc((size_t)(q->n * q->h * q->w * q->c), sizeof *v);
        for (int64_t b = 0; b < q->n; b++)
          for (int64_t yy = 0; yy < q->oh; yy++)
            for (int64_t xx = 0; xx < q->ow; xx++)
              for (int64_t c = 0; c < q->c; c++) {
                int64_t sy = ref_near(yy, q->h, q->oh, m);
                int64_t sx = ref_near(xx, q->w, q->ow, m);
                v[at(d, b, sy, sx, c)] +=
                    tf_tensor_get_f64(g, at(gd, b, yy, xx, c));
              }
        tf_tensor *want = tt_tensor(dts[j], tf_shape_make(4, d), v);
        free(v);
        tt_assert_close(dx, want, 1e-6, 1e-6);
        tt_free((tf_tensor *[]){in[0], in[1], dx, want}, 4);
      }
}
END_TEST

START_TEST(test_empty_batch) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(4, 0, 3, 3, 2), 0, 1),
                      size_vec(5, 4)};
  tf_tensor *y = tt_run1("ResizeBilinear", in, 2, NULL, 0);
  tt_assert_shape(y, 4, 0, 5, 4, 2);
  tf_tensor *z = tt_run1("ResizeNearestNeighbor", in, 2, NULL, 0);
  tt_assert_shape(z, 4, 0, 5, 4, 2);
  tt_free((tf_tensor *[]){in[0], in[1], y, z}, 4);
}
END_TEST

static void expect_fail(const char *op, tf_tensor *a, tf_tensor *b, int mode,
                        const char *what) {
  tf_tensor *in[2] = {a, b};
  const tf_attr_kv *kv = mode_kv(LEGACY);
  tf_attr_kv both[2] = {{"align_corners", tf_attr_bool(true)},
                        {"half_pixel_centers", tf_attr_bool(true)}};
  const char *msg = tt_run_fail(op, in, 2, mode < 0 ? both : kv, 2,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, what) != NULL && strstr(msg, op) != NULL,
                "%s: %s", op, msg);
  tt_free(in, 2);
}

START_TEST(test_errors) {
  static const char *const fwd[] = {"ResizeBilinear", "ResizeNearestNeighbor"};
  tf_shape img = tf_shape_of(4, 1, 3, 3, 1);
  for (int i = 0; i < 2; i++) {
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, img, 0, 1), size_vec(2, 2), -1,
                "half_pixel_centers");
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, tf_shape_of(3, 3, 3, 1), 0, 1),
                size_vec(2, 2), 0, "4-dimensional");
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, img, 0, 1),
                tf_tensor_vec_i32(3, (int32_t[]){2, 2, 2}), 0, "size");
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, img, 0, 1), size_vec(0, 2), 0,
                "positive");
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, img, 0, 1), size_vec(2, -1), 0,
                "positive");
    expect_fail(fwd[i], tt_rand(TF_FLOAT32, tf_shape_of(4, 1, 0, 3, 1), 0, 1),
                size_vec(2, 2), 0, "non-zero");
  }
  expect_fail("ResizeBilinearGrad",
              tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 3, 3, 1), 0, 1),
              tt_rand(TF_FLOAT32, tf_shape_of(4, 1, 3, 3, 1), 0, 1), 0,
              "batch");
  expect_fail("ResizeBilinearGrad",
              tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), 0, 1),
              tt_rand(TF_FLOAT32, img, 0, 1), 0, "4-dimensional");
  expect_fail("ResizeBilinearGrad", tt_rand(TF_FLOAT32, img, 0, 1),
              tt_rand(TF_FLOAT64, img, 0, 1), -1, "half_pixel_centers");
  expect_fail("ResizeNearestNeighborGrad", tt_rand(TF_FLOAT32, img, 0, 1),
              size_vec(0, 3), 0, "positive");
  expect_fail("ResizeNearestNeighborGrad", tt_rand(TF_FLOAT32, img, 0, 1),
              size_vec(2, 2), -1, "half_pixel_centers");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_resize");
  TCase *tc = tcase_create("resize");
  tcase_add_test(tc, test_bilinear_random);
  tcase_add_test(tc, test_bilinear_hand);
  tcase_add_test(tc, test_bilinear_grad_random);
  tcase_add_test(tc, test_nearest_random);
  tcase_add_test(tc, test_nearest_hand);
  tcase_add_test(tc, test_nearest_grad_random);
  tcase_add_test(tc, test_empty_batch);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
