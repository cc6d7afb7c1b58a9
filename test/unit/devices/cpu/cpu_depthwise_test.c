/* cpu_depthwise_test.c: DepthwiseConv2dNative and its two backprops on CPU
 * against float64 references written plainly here (nested loops over
 * every output element and filter tap, with their own padding arithmetic;
 * the backprops as the transpose scatter of the forward sum), on fresh
 * random inputs: fixed cases (SAME, VALID, EXPLICIT, strides 1 and 2,
 * dilation 2, channel_multiplier 1 and 3, odd sizes, a filter larger than
 * the input, problems large enough to be split over the pool, channel
 * counts that reach every block size of the inner loop) and random
 * shapes, in float32 and float64; empty batches and empty outputs; and the
 * kernels' errors on operands whose shapes shape inference cannot see.
 *
 * Tolerance: inputs, filters and out_backprops are uniform in [-1, 1), so
 * each result is a sum of S terms of magnitude <= 1 (S = KH*KW forward,
 * KH*KW*M for the input gradient, N*OH*OW for the filter gradient);
 * float32 must be within atol 1e-5 * S, float64 within 1e-12 * S. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

typedef struct dw_case {
  int64_t n, h, w, c;     /* input */
  int64_t kh, kw, m;      /* filter [KH, KW, C, M] */
  int64_t sh, sw, dh, dw; /* strides, dilations */
  const char *pad;        /* "SAME", "VALID", "EXPLICIT" */
  int64_t pads[4];        /* EXPLICIT: top, bottom, left, right */
} dw_case;

/* ---- the float64 reference ----------------------------------------------- */

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

static ref_geom ref_geometry(const dw_case *c) {
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

/* The three results at once: y = conv(x, f), dx and df for dy, by one
 * pass over (b, oy, ox, channel, multiplier, tap). */
typedef struct ref_out {
  double *y, *dx, *df;
} ref_out;

static ref_out ref_all(const dw_case *c, const ref_geom *g, const double *x,
                       const double *f, const double *dy) {
  int64_t ny = c->n * g->oh * g->ow * c->c * c->m;
  ref_out r = {calloc((size_t)ny + 1, sizeof(double)),
               calloc((size_t)(c->n * c->h * c->w * c->c) + 1, sizeof(double)),
               calloc((size_t)(c->kh * c->kw * c->c * c->m) + 1,
                      sizeof(double))};
  for (int64_t b = 0; b < c->n; b++)
    for (int64_t oy = 0; oy < g->oh; oy++)
      for (int64_t ox = 0; ox < g->ow; ox++)
        for (int64_t ch = 0; ch < c->c; ch++)
          for (int64_t mm = 0; mm < c->m; mm++)
            for (int64_t ky = 0; ky < c->kh; ky++)
              for (int64_t kx = 0; kx < c->kw; kx++) {
                int64_t iy = oy * c->sh - g->pt + ky * c->dh;
                int64_t ix = ox * c->sw - g->pl + kx * c->dw;
                if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) {
                  continue;
                }
                int64_t yi = (((b * g->oh + oy) * g->ow + ox) * c->c + ch) *
                                 c->m + mm;
                int64_t xi = ((b * c->h + iy) * c->w + ix) * c->c + ch;
                int64_t fi = ((ky * c->kw + kx) * c->c + ch) * c->m + mm;
                r.y[yi] += x[xi] * f[fi];
                r.dx[xi] += dy[yi] * f[fi];
                r.df[fi] += dy[yi] * x[xi];
              }
  return r;
}

/* ---- running the ops ----------------------------------------------------- */

typedef struct dw_attrs {
  int64_t st[4], dl[4], ep[8];
  tf_attr_kv kv[4];
  int n;
} dw_attrs;

static void make_attrs(const dw_case *c, dw_attrs *a) {
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

static tf_tensor *sizes4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int32_t v[4] = {(int32_t)a, (int32_t)b, (int32_t)c, (int32_t)d};
  return tf_tensor_vec_i32(4, v);
}

static void expect(const char *what, const dw_case *c, tf_dtype dt,
                   const tf_tensor *got, const double *want, double atol) {
  for (int64_t i = 0; i < got->n; i++) {
    double g = tf_tensor_get_f64(got, i);
    ck_assert_msg(fabs(g - want[i]) <= atol,
                  "%s %s: in [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s "
                  "%lld,%lld d %lld,%lld %s: element %lld: got %.9g want %.9g "
                  "(seed %llu)", what, tf_dtype_name(dt), (long long)c->n,
                  (long long)c->h, (long long)c->w, (long long)c->c,
                  (long long)c->kh, (long long)c->kw, (long long)c->c,
                  (long long)c->m, (long long)c->sh, (long long)c->sw,
                  (long long)c->dh, (long long)c->dw, c->pad, (long long)i, g,
                  want[i], (unsigned long long)tt_seed());
  }
}

/* Runs the three ops of case c in dtype dt against the reference. */
static void check_case(const dw_case *c, tf_dtype dt) {
  ref_geom g = ref_geometry(c);
  dw_attrs a;
  make_attrs(c, &a);
  tf_tensor *x = tt_rand(dt, tf_shape_of(4, c->n, c->h, c->w, c->c), -1, 1);
  tf_tensor *f = tt_rand(dt, tf_shape_of(4, c->kh, c->kw, c->c, c->m), -1, 1);
  tf_tensor *dy = tt_rand(dt, tf_shape_of(4, c->n, g.oh, g.ow, c->c * c->m),
                          -1, 1);
  tf_tensor *xs = sizes4(c->n, c->h, c->w, c->c);
  tf_tensor *fs = sizes4(c->kh, c->kw, c->c, c->m);
  tf_tensor *y = tt_run1("DepthwiseConv2dNative", (tf_tensor *[]){x, f}, 2,
                         a.kv, a.n);
  tf_tensor *dx = tt_run1("DepthwiseConv2dNativeBackpropInput",
                          (tf_tensor *[]){xs, f, dy}, 3, a.kv, a.n);
  tf_tensor *df = tt_run1("DepthwiseConv2dNativeBackpropFilter",
                          (tf_tensor *[]){x, fs, dy}, 3, a.kv, a.n);
  tt_assert_shape(y, 4, c->n, g.oh, g.ow, c->c * c->m);
  tt_assert_shape(dx, 4, c->n, c->h, c->w, c->c);
  tt_assert_shape(df, 4, c->kh, c->kw, c->c, c->m);
  double *xd = to_f64(x), *fd = to_f64(f), *dyd = to_f64(dy);
  ref_out r = ref_all(c, &g, xd, fd, dyd);
  double tol = dt == TF_FLOAT32 ? 1e-5 : 1e-12;
  expect("forward", c, dt, y, r.y, tol * (double)(c->kh * c->kw));
  expect("input grad", c, dt, dx, r.dx,
         tol * (double)(c->kh * c->kw * c->m));
  expect("filter grad", c, dt, df, r.df,
         tol * (double)TF_MAX(1, c->n * g.oh * g.ow));
  free(xd);
  free(fd);
  free(dyd);
  free(r.y);
  free(r.dx);
  free(r.df);
  tf_tensor *all[] = {x, f, dy, xs, fs, y, dx, df};
  tt_free(all, 8);
}

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_fixed_cases) {
  const dw_case cases[] = {
      {2, 7, 5, 3, 3, 3, 1, 1, 1, 1, 1, "SAME", {0}},
      {2, 7, 5, 3, 3, 3, 3, 1, 1, 1, 1, "SAME", {0}},
      {2, 7, 5, 3, 3, 2, 1, 1, 1, 1, 1, "VALID", {0}},
      {1, 9, 7, 2, 3, 3, 3, 1, 1, 1, 1, "VALID", {0}},
      {2, 9, 7, 5, 3, 3, 1, 2, 2, 1, 1, "SAME", {0}},
      {2, 9, 8, 2, 3, 3, 3, 2, 2, 1, 1, "SAME", {0}},
      {2, 9, 7, 3, 3, 3, 3, 2, 2, 1, 1, "VALID", {0}},
      {1, 11, 9, 4, 3, 3, 1, 1, 1, 2, 2, "SAME", {0}},
      {1, 11, 9, 2, 3, 2, 3, 1, 1, 2, 2, "VALID", {0}},
      {2, 10, 9, 3, 2, 3, 3, 2, 1, 2, 1, "SAME", {0}},
      {1, 6, 5, 3, 3, 3, 2, 1, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}},
      {1, 3, 2, 2, 5, 4, 3, 1, 1, 1, 1, "SAME", {0}}, /* filter > input */
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "VALID", {0}},
      {3, 5, 5, 1, 5, 5, 4, 1, 1, 1, 1, "SAME", {0}}, /* one channel */
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32);
    check_case(&cases[i], TF_FLOAT64);
  }
}
END_TEST

START_TEST(test_pool_split) {
  /* enough work per call that the pool splits rows, lines and parts */
  const dw_case cases[] = {
      {4, 23, 21, 16, 3, 3, 1, 1, 1, 1, 1, "SAME", {0}},
      {3, 19, 17, 8, 3, 3, 2, 2, 2, 1, 1, "SAME", {0}},
      {2, 21, 19, 12, 5, 5, 1, 1, 1, 2, 2, "VALID", {0}},
      /* wide channels: the inner loop's four-vector blocks, single
       * vectors, half vector and scalar tail all run (91 = 64 + 16 + 8 + 3
       * floats; 32 * 2 + 8 * 3 + 3 doubles) */
      {2, 9, 8, 91, 3, 3, 1, 1, 1, 1, 1, "SAME", {0}},
      {1, 7, 6, 30, 3, 3, 3, 2, 1, 1, 2, "SAME", {0}},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32);
    check_case(&cases[i], TF_FLOAT64);
  }
}
END_TEST

START_TEST(test_random) {
  static const char *pads[] = {"SAME", "VALID", "EXPLICIT"};
  for (int t = 0; t < 60; t++) {
    dw_case c = {.n = rnd(1, 3), .h = rnd(1, 10), .w = rnd(1, 10),
                 .c = rnd(1, 5), .kh = rnd(1, 4), .kw = rnd(1, 4),
                 .m = rnd(1, 3), .sh = rnd(1, 3), .sw = rnd(1, 3),
                 .dh = rnd(1, 2), .dw = rnd(1, 2), .pad = pads[t % 3],
                 .pads = {rnd(0, 2), rnd(0, 2), rnd(0, 2), rnd(0, 2)}};
    int64_t eh = (c.kh - 1) * c.dh + 1, ew = (c.kw - 1) * c.dw + 1;
    int64_t ph = t % 3 == 2 ? c.pads[0] + c.pads[1] : 0;
    int64_t pw = t % 3 == 2 ? c.pads[2] + c.pads[3] : 0;
    if (t % 3 != 0 && (eh > c.h + ph || ew > c.w + pw)) {
      c.pad = "SAME"; /* the window does not fit: see test_empty */
    }
    check_case(&c, t % 2 ? TF_FLOAT64 : TF_FLOAT32);
  }
}
END_TEST

START_TEST(test_empty) {
  /* empty batch; a VALID window larger than the input (no output rows:
   * both gradients are zeros); zero channels */
  const dw_case cases[] = {
      {0, 5, 5, 2, 3, 3, 2, 1, 1, 1, 1, "SAME", {0}},
      {2, 2, 5, 2, 3, 3, 2, 1, 1, 1, 1, "VALID", {0}},
      {2, 4, 4, 0, 3, 3, 2, 1, 1, 1, 1, "SAME", {0}},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32);
    check_case(&cases[i], TF_FLOAT64);
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
  for (int i = 0; i < n; i++) {
    ti[i] = (tt_input){in[i]->dtype, tf_shape_unknown()};
  }
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

static void expect_msg(const char *msg, const char *want) {
  ck_assert_msg(strstr(msg, want) != NULL, "'%s' lacks '%s'", msg, want);
}

START_TEST(test_kernel_errors) {
  dw_case c = {2, 5, 5, 3, 3, 3, 2, 1, 1, 1, 1, "SAME", {0}};
  dw_attrs a;
  make_attrs(&c, &a);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 5, 5, 3), -1, 1);
  tf_tensor *f = tt_rand(TF_FLOAT32, tf_shape_of(4, 3, 3, 3, 2), -1, 1);
  tf_tensor *f3 = tt_rand(TF_FLOAT32, tf_shape_of(3, 3, 3, 3), -1, 1);
  tf_tensor *f4 = tt_rand(TF_FLOAT32, tf_shape_of(4, 3, 3, 4, 2), -1, 1);
  tf_tensor *dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 5, 5, 6), -1, 1);
  tf_tensor *bad_dy = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 5, 4, 6), -1, 1);
  tf_tensor *xs = sizes4(2, 5, 5, 3), *fs = sizes4(3, 3, 3, 2);
  int32_t three[3] = {2, 5, 5};
  tf_tensor *xs3 = tf_tensor_vec_i32(3, three);
  const char *op = "DepthwiseConv2dNative";
  const char *bi = "DepthwiseConv2dNativeBackpropInput";
  const char *bf = "DepthwiseConv2dNativeBackpropFilter";
  expect_msg(kernel_fail(op, (tf_tensor *[]){x, f3}, 2, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "rank 4");
  expect_msg(kernel_fail(op, (tf_tensor *[]){x, f4}, 2, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "does not match");
  expect_msg(kernel_fail(bi, (tf_tensor *[]){xs, f, bad_dy}, 3, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "out_backprop");
  expect_msg(kernel_fail(bf, (tf_tensor *[]){x, fs, bad_dy}, 3, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "out_backprop");
  expect_msg(kernel_fail(bi, (tf_tensor *[]){xs3, f, dy}, 3, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "input_sizes");
  expect_msg(kernel_fail(bf, (tf_tensor *[]){x, xs3, dy}, 3, a.kv, a.n,
                         TF_INVALID_ARGUMENT), "filter_sizes");
  /* NCHW: the CPU kernels refuse it, as TF's do */
  tf_attr_kv kv[4] = {a.kv[0], a.kv[1], a.kv[2],
                      {"data_format", tf_attr_string("NCHW")}};
  expect_msg(kernel_fail(op, (tf_tensor *[]){x, f}, 2, kv, 4,
                         TF_UNIMPLEMENTED), "NHWC");
  tf_tensor *all[] = {x, f, f3, f4, dy, bad_dy, xs, fs, xs3};
  tt_free(all, 9);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_depthwise");
  TCase *tc = tcase_create("depthwise");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fixed_cases);
  tcase_add_test(tc, test_pool_split);
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_kernel_errors);
  suite_add_tcase(s, tc);
  return s;
}
