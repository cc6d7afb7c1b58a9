/* cpu_conv_grad_test.c: Conv2DBackpropInput and Conv2DBackpropFilter on
 * CPU against plain float64 sums written here (scatter over every output
 * pixel, filter tap and channel pair, with the test's own padding
 * arithmetic), on random shapes (batch 1-3, odd sizes, strides 1-3,
 * dilations 1-2, SAME, VALID and EXPLICIT padding) and on cases that reach
 * each of the kernels' paths: the 1x1 and whole-image GEMM-only paths,
 * small filters split over the pool by images or by output pixels with
 * several chunks per part, large filters in several chunks whose bounds
 * fall inside an image, a 2-value input_sizes, and empty problems. Bad
 * inputs must give INVALID_ARGUMENT naming the problem, both from shape
 * inference (known shapes) and from the kernels (shapes unknown until
 * run time).
 *
 * Tolerance: operands are uniform in [-1, 1), so each result is a sum of
 * T products (T = KH*KW*Cout for the input, N*OH*OW for the filter);
 * float32 results must be within 1e-4 * sqrt(T), float64 within
 * 1e-12 * sqrt(T). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

typedef struct conv_case {
  int64_t n, h, w, cin;   /* input */
  int64_t kh, kw, cout;   /* filter */
  int64_t sh, sw, dh, dw; /* strides, dilations */
  const char *pad;        /* "SAME", "VALID", "EXPLICIT" */
  int64_t pads[4];        /* EXPLICIT: top, bottom, left, right */
} conv_case;

/* ---- the float64 reference ------------------------------------------------ */

static void ref_dim(int64_t in, int64_t k, int64_t d, int64_t s,
                    const char *pad, int64_t lo, int64_t hi, int64_t *out,
                    int64_t *before) {
  int64_t eff = (k - 1) * d + 1;
  if (strcmp(pad, "SAME") == 0) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + eff - in;
    *before = total > 0 ? total / 2 : 0;
    return;
  }
  int64_t padded = strcmp(pad, "EXPLICIT") == 0 ? in + lo + hi : in;
  *out = padded >= eff ? (padded - eff) / s + 1 : 0;
  *before = strcmp(pad, "EXPLICIT") == 0 ? lo : 0;
}

typedef struct ref_geom {
  int64_t oh, ow, pt, pl;
} ref_geom;

static ref_geom ref_geometry(const conv_case *c) {
  ref_geom g;
  ref_dim(c->h, c->kh, c->dh, c->sh, c->pad, c->pads[0], c->pads[1], &g.oh,
          &g.pt);
  ref_dim(c->w, c->kw, c->dw, c->sw, c->pad, c->pads[2], c->pads[3], &g.ow,
          &g.pl);
  return g;
}

static double *to_f64(const tf_tensor *t) {
  double *v = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof(double));
  for (int64_t i = 0; i < t->n; i++) v[i] = tf_tensor_get_f64(t, i);
  return v;
}

/* Calls fn(x index, filter index, dy index) for every product term of
 * the convolution. */
typedef void (*term_fn)(void *arg, int64_t xi, int64_t fi, int64_t yi);

static void for_each_term(const conv_case *c, term_fn fn, void *arg) {
  ref_geom g = ref_geometry(c);
  for (int64_t b = 0; b < c->n; b++) {
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++) {
        for (int64_t ky = 0; ky < c->kh; ky++) {
          int64_t iy = oy * c->sh - g.pt + ky * c->dh;
          for (int64_t kx = 0; kx < c->kw; kx++) {
            int64_t ix = ox * c->sw - g.pl + kx * c->dw;
            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) {
              continue;
            }
            for (int64_t ci = 0; ci < c->cin; ci++) {
              for (int64_t co = 0; co < c->cout; co++) {
                fn(arg, ((b * c->h + iy) * c->w + ix) * c->cin + ci,
                   ((ky * c->kw + kx) * c->cin + ci) * c->cout + co,
                   ((b * g.oh + oy) * g.ow + ox) * c->cout + co);
              }
            }
          }
        }
      }
    }
  }
}

typedef struct ref_acc {
  const double *a, *dy; /* the other operand and the output gradient */
  double *out;
} ref_acc;

static void acc_input(void *arg, int64_t xi, int64_t fi, int64_t yi) {
  ref_acc *r = arg;
  r->out[xi] += r->a[fi] * r->dy[yi];
}

static void acc_filter(void *arg, int64_t xi, int64_t fi, int64_t yi) {
  ref_acc *r = arg;
  r->out[fi] += r->a[xi] * r->dy[yi];
}

/* The reference gradient (of the input when for_input, else of the
 * filter) as a tensor of dtype dt and shape s. */
static tf_tensor *ref_grad(const conv_case *c, bool for_input,
                           const tf_tensor *other, const tf_tensor *dy,
                           tf_shape s) {
  int64_t n = tf_shape_num_elements(&s);
  ref_acc r = {.a = to_f64(other), .dy = to_f64(dy),
               .out = calloc((size_t)(n > 0 ? n : 1), sizeof(double))};
  for_each_term(c, for_input ? acc_input : acc_filter, &r);
  tf_tensor *t = tt_tensor(dy->dtype, s, r.out);
  free((void *)r.a);
  free((void *)r.dy);
  free(r.out);
  return t;
}

/* ---- running the ops ------------------------------------------------------- */

typedef struct conv_attrs {
  int64_t st[4], dl[4], ep[8];
  tf_attr_kv kv[4];
  int n;
} conv_attrs;

static void make_attrs(const conv_case *c, conv_attrs *a) {
  int64_t st[4] = {1, c->sh, c->sw, 1}, dl[4] = {1, c->dh, c->dw, 1};
  int64_t ep[8] = {0, 0, c->pads[0], c->pads[1], c->pads[2], c->pads[3], 0, 0};
  memcpy(a->st, st, sizeof st);
  memcpy(a->dl, dl, sizeof dl);
  memcpy(a->ep, ep, sizeof ep);
  a->kv[0] = (tf_attr_kv){"strides", tf_attr_int_list(a->st, 4)};
  a->kv[1] = (tf_attr_kv){"padding", tf_attr_string(c->pad)};
  a->kv[2] = (tf_attr_kv){"dilations", tf_attr_int_list(a->dl, 4)};
  a->kv[3] = (tf_attr_kv){"explicit_paddings", tf_attr_int_list(a->ep, 8)};
  a->n = strcmp(c->pad, "EXPLICIT") == 0 ? 4 : 3;
}

static tf_tensor *sizes(int n, const int64_t *v) {
  return tt_tensor_i(TF_INT32, tf_shape_of(1, n), v);
}

static void describe(const conv_case *c, tf_dtype dt, char *buf, size_t n) {
  snprintf(buf, n, "%s input [%lld,%lld,%lld,%lld] filter [%lld,%lld,%lld,"
           "%lld] strides %lld,%lld dilations %lld,%lld %s (seed %llu)",
           tf_dtype_name(dt), (long long)c->n, (long long)c->h,
           (long long)c->w, (long long)c->cin, (long long)c->kh,
           (long long)c->kw, (long long)c->cin, (long long)c->cout,
           (long long)c->sh, (long long)c->sw, (long long)c->dh,
           (long long)c->dw, c->pad, (unsigned long long)tt_seed());
}

static void assert_near(const tf_tensor *got, const tf_tensor *want,
                        double atol, const char *what, const char *op) {
  ck_assert_msg(tf_shape_equal(&got->shape, &want->shape) &&
                    got->dtype == want->dtype,
                "%s %s: bad shape or dtype", op, what);
  for (int64_t i = 0; i < got->n; i++) {
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    ck_assert_msg(fabs(g - w) <= atol, "%s %s: element %lld: got %.9g want "
                  "%.9g", op, what, (long long)i, g, w);
  }
}

/* Runs both backprops of case c in dtype dt against the reference; with
 * two_sizes, input_sizes holds only rows and cols. */
static void check_case(const conv_case *c, tf_dtype dt, bool two_sizes) {
  char what[320];
  describe(c, dt, what, sizeof what);
  ref_geom g = ref_geometry(c);
  tf_shape xs = tf_shape_of(4, c->n, c->h, c->w, c->cin);
  tf_shape fs = tf_shape_of(4, c->kh, c->kw, c->cin, c->cout);
  tf_tensor *x = tt_rand(dt, xs, -1, 1), *f = tt_rand(dt, fs, -1, 1);
  tf_tensor *dy = tt_rand(dt, tf_shape_of(4, c->n, g.oh, g.ow, c->cout), -1, 1);
  conv_attrs a;
  make_attrs(c, &a);
  tf_tensor *isz = two_sizes ? sizes(2, xs.dims + 1) : sizes(4, xs.dims);
  tf_tensor *fsz = sizes(4, fs.dims);
  tf_tensor *in1[3] = {isz, f, dy}, *in2[3] = {x, fsz, dy};
  tf_tensor *dx = tt_run1("Conv2DBackpropInput", in1, 3, a.kv, a.n);
  tf_tensor *dw = tt_run1("Conv2DBackpropFilter", in2, 3, a.kv, a.n);
  tf_tensor *want_dx = ref_grad(c, true, f, dy, xs);
  tf_tensor *want_dw = ref_grad(c, false, x, dy, fs);
  double scale = dt == TF_FLOAT32 ? 1e-4 : 1e-12;
  assert_near(dx, want_dx, scale * sqrt((double)(c->kh * c->kw * c->cout)),
              what, "Conv2DBackpropInput");
  assert_near(dw, want_dw,
              scale * sqrt((double)TF_MAX(1, c->n * g.oh * g.ow)), what,
              "Conv2DBackpropFilter");
  tf_tensor *all[] = {x, f, dy, isz, fsz, dx, dw, want_dx, want_dw};
  tt_free(all, 9);
}

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_random) {
  static const char *pads[] = {"SAME", "VALID", "EXPLICIT"};
  for (int t = 0; t < 60; t++) {
    conv_case c = {.n = rnd(1, 3), .h = rnd(1, 11), .w = rnd(1, 11),
                   .cin = rnd(1, 4), .kh = rnd(1, 5), .kw = rnd(1, 5),
                   .cout = rnd(1, 5), .sh = rnd(1, 3), .sw = rnd(1, 3),
                   .dh = rnd(1, 2), .dw = rnd(1, 2), .pad = pads[t % 3],
                   .pads = {rnd(0, 3), rnd(0, 3), rnd(0, 3), rnd(0, 3)}};
    int64_t eh = (c.kh - 1) * c.dh + 1, ew = (c.kw - 1) * c.dw + 1;
    int64_t ph = t % 3 == 2 ? c.pads[0] + c.pads[1] : 0;
    int64_t pw = t % 3 == 2 ? c.pads[2] + c.pads[3] : 0;
    if (t % 3 != 0 && (eh > c.h + ph || ew > c.w + pw)) {
      c.pad = "SAME"; /* the window does not fit */
    }
    check_case(&c, t % 2 ? TF_FLOAT64 : TF_FLOAT32, t % 7 == 3);
  }
}
END_TEST

START_TEST(test_paths) {
  const conv_case cases[] = {
      /* 1x1 stride 1 and whole-image VALID: plain GEMMs */
      {3, 7, 5, 4, 1, 1, 3, 1, 1, 1, 1, "SAME", {0}},
      {3, 5, 4, 3, 5, 4, 6, 1, 1, 1, 1, "VALID", {0}},
      {2, 5, 4, 3, 5, 4, 6, 2, 3, 1, 1, "VALID", {0}},
      /* 1x1 with stride 2: im2col */
      {2, 7, 6, 3, 1, 1, 2, 2, 2, 1, 1, "SAME", {0}},
      /* small K * Cout: parts over the pool; 327-row chunks that cross
       * images inside a part (3 images of 225 pixels on 2 parts) */
      {3, 15, 15, 4, 5, 5, 8, 1, 1, 1, 1, "SAME", {0}},
      {5, 13, 11, 1, 5, 5, 16, 2, 1, 1, 1, "SAME", {0}},
      {1, 28, 28, 1, 5, 5, 32, 1, 1, 1, 1, "SAME", {0}},
      /* large K * Cout: one GEMM per chunk from the kernel's thread, and
       * chunk bounds inside an image (655 rows in float64, 1310 in
       * float32) */
      {3, 16, 16, 8, 5, 5, 24, 1, 1, 1, 1, "SAME", {0}},
      {2, 30, 30, 8, 5, 5, 24, 1, 1, 1, 1, "SAME", {0}},
      {2, 17, 19, 8, 5, 5, 24, 2, 2, 1, 1, "VALID", {0}},
      /* one channel in and out, filter larger than the input */
      {3, 9, 11, 1, 3, 3, 1, 1, 1, 1, 1, "SAME", {0}},
      {2, 2, 3, 2, 5, 4, 3, 1, 1, 1, 1, "SAME", {0}},
      /* dilations and explicit padding */
      {2, 11, 9, 3, 3, 3, 4, 1, 1, 2, 2, "SAME", {0}},
      {2, 11, 9, 3, 3, 2, 4, 2, 3, 2, 2, "VALID", {0}},
      {1, 6, 6, 2, 2, 3, 2, 1, 2, 2, 1, "EXPLICIT", {3, 0, 0, 2}},
      {2, 4, 3, 2, 1, 1, 2, 1, 1, 1, 1, "EXPLICIT", {1, 0, 2, 1}},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32, false);
    check_case(&cases[i], TF_FLOAT64, i % 4 == 1);
  }
}
END_TEST

START_TEST(test_hand_worked) {
  /* 3x3 image, 2x2 filter of ones, SAME stride 2 (pads bottom and right
   * only): output (0,0) covers x[0..1][0..1], (0,1) x[0..1][2], (1,0)
   * x[2][0..1], (1,1) x[2][2]. With dy = [[1, 2], [3, 4]] each input pixel
   * gets the dy of the one window holding it. */
  double dyv[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1};
  int64_t xs[4] = {1, 3, 3, 1}, fs[4] = {2, 2, 1, 1};
  conv_case c = {1, 3, 3, 1, 2, 2, 1, 2, 2, 1, 1, "SAME", {0}};
  conv_attrs a;
  make_attrs(&c, &a);
  tf_tensor *dy = tt_tensor(TF_FLOAT64, tf_shape_of(4, 1, 2, 2, 1), dyv);
  tf_tensor *f = tt_tensor(TF_FLOAT64, tf_shape_of(4, 2, 2, 1, 1), ones);
  tf_tensor *isz = sizes(4, xs), *fsz = sizes(4, fs);
  tf_tensor *in1[3] = {isz, f, dy};
  tf_tensor *dx = tt_run1("Conv2DBackpropInput", in1, 3, a.kv, a.n);
  const double want_dx[9] = {1, 1, 2, 1, 1, 2, 3, 3, 4};
  tf_tensor *w1 = tt_tensor(TF_FLOAT64, tf_shape_of(4, 1, 3, 3, 1), want_dx);
  tt_assert_close(dx, w1, 0, 0);
  /* x = 1..9: dW[ky][kx] = sum of dy times the pixel each tap saw */
  double xv[9];
  for (int i = 0; i < 9; i++) xv[i] = i + 1;
  tf_tensor *x = tt_tensor(TF_FLOAT64, tf_shape_of(4, 1, 3, 3, 1), xv);
  tf_tensor *in2[3] = {x, fsz, dy};
  tf_tensor *dw = tt_run1("Conv2DBackpropFilter", in2, 3, a.kv, a.n);
  const double want_dw[4] = {1 * 1 + 2 * 3 + 3 * 7 + 4 * 9, 1 * 2 + 3 * 8,
                             1 * 4 + 2 * 6, 1 * 5};
  tf_tensor *w2 = tt_tensor(TF_FLOAT64, tf_shape_of(4, 2, 2, 1, 1), want_dw);
  tt_assert_close(dw, w2, 0, 0);
  tf_tensor *all[] = {dy, f, isz, fsz, dx, w1, x, dw, w2};
  tt_free(all, 9);
}
END_TEST

START_TEST(test_empty) {
  /* empty batch; VALID window one larger than the input (0 output rows):
   * the input gradient is all zeros, the filter gradient too */
  const conv_case cases[] = {
      {0, 5, 5, 2, 3, 3, 4, 1, 1, 1, 1, "SAME", {0}},
      {1, 2, 5, 2, 3, 3, 4, 1, 1, 1, 1, "VALID", {0}},
  };
  for (int i = 0; i < 2; i++) {
    check_case(&cases[i], TF_FLOAT32, false);
  }
}
END_TEST

/* ---- bad inputs ---------------------------------------------------------- */

/* Runs op's kernel on Placeholders of unknown shape (so shape inference
 * cannot catch the error) expecting code; returns the message. */
static const char *kernel_fail(const char *op, tf_tensor **in, int n,
                               const tf_attr_kv *kv, int n_kv, tf_code code) {
  static char msg[1024];
  tf_graph *g = tf_graph_new();
  tt_input ti[3];
  for (int i = 0; i < n; i++) ti[i] = (tt_input){in[i]->dtype, tf_shape_unknown()};
  tf_status st;
  tf_node *node = tt_build_node(g, op, NULL, ti, n, false, kv, n_kv, &st);
  ck_assert_msg(node != NULL, "%s: %s", op, st.msg);
  tf_tensor *out = NULL;
  tf_code rc = tf_kernel_run_node(node, NULL, in, &out, &st);
  ck_assert_msg(rc == code, "%s: expected %s, got %s: %s", op,
                tf_code_name(code), tf_code_name(rc), st.msg);
  snprintf(msg, sizeof msg, "%s", st.msg);
  tf_graph_free(g);
  return msg;
}

/* Both ways: the shape function and the kernel must reject in[], each
 * naming what (a substring of the message). */
static void both_fail(const char *op, tf_tensor **in, const tf_attr_kv *kv,
                      int n_kv, const char *what) {
  const char *m1 = tt_run_fail(op, in, 3, kv, n_kv, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m1, what) != NULL, "%s (shape fn): '%s' lacks '%s'", op,
                m1, what);
  const char *m2 = kernel_fail(op, in, 3, kv, n_kv, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m2, what) != NULL, "%s (kernel): '%s' lacks '%s'", op,
                m2, what);
}

START_TEST(test_errors) {
  conv_case c = {2, 6, 6, 3, 3, 3, 4, 1, 1, 1, 1, "SAME", {0}};
  conv_attrs a;
  make_attrs(&c, &a);
  tf_tensor *f = tt_rand(TF_FLOAT32, tf_shape_of(4, 3, 3, 3, 4), -1, 1);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 6, 6, 3), -1, 1);
  tf_tensor *dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 6, 6, 4), -1, 1);
  tf_tensor *bad_dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 5, 6, 4), -1, 1);
  int64_t v3[3] = {2, 6, 6}, vneg[4] = {2, -6, 6, 3}, vdepth[4] = {2, 6, 6, 5};
  int64_t good[4] = {2, 6, 6, 3}, fgood[4] = {3, 3, 3, 4};
  int64_t fdepth[4] = {3, 3, 2, 4}, fzero[4] = {3, 0, 3, 4};
  tf_tensor *t[8] = {sizes(3, v3), sizes(4, vneg), sizes(4, vdepth),
                     sizes(4, good), sizes(4, fgood), sizes(4, fdepth),
                     sizes(4, fzero)};
  tf_tensor *in[3] = {t[0], f, dy};
  both_fail("Conv2DBackpropInput", in, a.kv, a.n, "input_sizes must be a "
            "vector of 4 values");
  in[0] = t[1];
  both_fail("Conv2DBackpropInput", in, a.kv, a.n, "input_sizes[1] = -6 is "
            "negative");
  in[0] = t[2];
  both_fail("Conv2DBackpropInput", in, a.kv, a.n, "in_depth 3");
  in[0] = t[3];
  in[2] = bad_dy;
  both_fail("Conv2DBackpropInput", in, a.kv, a.n, "out_backprop has shape "
            "[2,5,6,4]");
  tf_tensor *in2[3] = {x, t[4], bad_dy};
  both_fail("Conv2DBackpropFilter", in2, a.kv, a.n, "out_backprop has shape "
            "[2,5,6,4]");
  in2[2] = dy;
  in2[1] = t[5];
  both_fail("Conv2DBackpropFilter", in2, a.kv, a.n, "in_depth 2");
  in2[1] = t[6];
  const char *m = kernel_fail("Conv2DBackpropFilter", in2, 3, a.kv, a.n,
                              TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "zero elements") != NULL, "%s", m);
  in2[1] = t[0];
  both_fail("Conv2DBackpropFilter", in2, a.kv, a.n, "filter_sizes must be a "
            "vector of 4 values");
  /* NCHW has no CPU kernel */
  tf_attr_kv kv[4] = {a.kv[0], a.kv[1],
                      {"data_format", tf_attr_string("NCHW")}};
  tf_tensor *nchw_dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 4, 6, 6), -1, 1);
  int64_t nchw[4] = {2, 3, 6, 6};
  tf_tensor *nsz = sizes(4, nchw);
  tf_tensor *in3[3] = {nsz, f, nchw_dy};
  m = tt_run_fail("Conv2DBackpropInput", in3, 3, kv, 3, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(m, "NHWC") != NULL, "%s", m);
  tf_tensor *all[] = {f, x, dy, bad_dy, nchw_dy, nsz};
  tt_free(all, 6);
  tt_free(t, 7);
}
END_TEST

START_TEST(test_shape_inference) {
  /* input_sizes from a Const gives the exact shape; 2 values take batch
   * and depth from out_backprop and filter */
  tf_graph *g = tf_graph_new();
  int64_t v[4] = {2, 7, 9, 3}, hw[2] = {7, 9}, s1[4] = {1, 1, 1, 1};
  tf_node *c4 = tt_const(g, NULL, sizes(4, v));
  tf_node *c2 = tt_const(g, NULL, sizes(2, hw));
  tf_node *f = tt_placeholder(g, NULL, TF_FLOAT32, tf_shape_of(4, 3, 3, 3, 5));
  tf_node *dy = tt_placeholder(g, NULL, TF_FLOAT32,
                               tf_shape_of(4, -1, 7, 9, 5));
  tf_attr_kv kv[2] = {{"strides", tf_attr_int_list(s1, 4)},
                      {"padding", tf_attr_string("SAME")}};
  tf_output in[3] = {{c4, 0}, {f, 0}, {dy, 0}};
  tf_node *n = tt_node(g, "Conv2DBackpropInput", NULL, in, 3, kv, 2);
  tf_shape want = tf_shape_of(4, 2, 7, 9, 3);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  in[0] = (tf_output){c2, 0};
  n = tt_node(g, "Conv2DBackpropInput", NULL, in, 3, kv, 2);
  want = tf_shape_of(4, -1, 7, 9, 3);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  /* filter_sizes = Shape(filter): the filter's static shape */
  tf_node *x = tt_placeholder(g, NULL, TF_FLOAT32, tf_shape_of(4, -1, 7, 9, 3));
  tf_output fo = {f, 0};
  tf_node *shp = tt_node(g, "Shape", NULL, &fo, 1, NULL, 0);
  tf_output in2[3] = {{x, 0}, {shp, 0}, {dy, 0}};
  n = tt_node(g, "Conv2DBackpropFilter", NULL, in2, 3, kv, 2);
  want = tf_shape_of(4, 3, 3, 3, 5);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_conv_grad");
  TCase *tc = tcase_create("conv2d_backprop");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_paths);
  tcase_add_test(tc, test_hand_worked);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_shape_inference);
  suite_add_tcase(s, tc);
  return s;
}
