/* cpu_conv_test.c: Conv2D on CPU against a direct float64 convolution
 * written plainly here (seven nested loops, its own padding arithmetic), on
 * random shapes: batch 1-3, odd sizes, strides 1-3, dilations 1-2, SAME,
 * VALID and EXPLICIT padding, 1x1 filters (the GEMM-only path), filters
 * covering the whole image, filters larger than the input, one channel, and
 * problems that need several im2col chunks.
 *
 * Tolerance: inputs and filters are uniform in [-1, 1), so each output is a
 * dot product of K = KH*KW*Cin terms; float32 results must be within
 * atol 1e-4 * sqrt(K), float64 within 1e-12 * sqrt(K). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

typedef struct conv_case {
  int64_t n, h, w, cin;   /* input */
  int64_t kh, kw, cout;   /* filter */
  int64_t sh, sw, dh, dw; /* strides, dilations */
  const char *pad;        /* "SAME", "VALID", "EXPLICIT" */
  int64_t pads[4];        /* EXPLICIT: top, bottom, left, right */
} conv_case;

/* ---- the float64 reference ----------------------------------------------- */

/* Output size and padding before, computed independently of the library. */
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

static double *to_f64(const tf_tensor *t) {
  double *v = malloc(sizeof(double) * (size_t)(t->n > 0 ? t->n : 1));
  for (int64_t i = 0; i < t->n; i++) v[i] = tf_tensor_get_f64(t, i);
  return v;
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

/* Output element (b, oy, ox, co) by direct summation. */
static double ref_point(const conv_case *c, const ref_geom *g, const double *x,
                        const double *f, int64_t b, int64_t oy, int64_t ox,
                        int64_t co) {
  double s = 0;
  for (int64_t ky = 0; ky < c->kh; ky++) {
    int64_t iy = oy * c->sh - g->pt + ky * c->dh;
    for (int64_t kx = 0; kx < c->kw; kx++) {
      int64_t ix = ox * c->sw - g->pl + kx * c->dw;
      if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) {
        continue;
      }
      for (int64_t ci = 0; ci < c->cin; ci++) {
        s += x[((b * c->h + iy) * c->w + ix) * c->cin + ci] *
             f[((ky * c->kw + kx) * c->cin + ci) * c->cout + co];
      }
    }
  }
  return s;
}

static tf_tensor *ref_conv(const conv_case *c, const tf_tensor *xt,
                           const tf_tensor *ft) {
  ref_geom g = ref_geometry(c);
  double *x = to_f64(xt), *f = to_f64(ft);
  tf_shape os = tf_shape_of(4, c->n, g.oh, g.ow, c->cout);
  int64_t n = c->n * g.oh * g.ow * c->cout;
  double *o = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  int64_t i = 0;
  for (int64_t b = 0; b < c->n; b++) {
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++) {
        for (int64_t co = 0; co < c->cout; co++) {
          o[i++] = ref_point(c, &g, x, f, b, oy, ox, co);
        }
      }
    }
  }
  tf_tensor *t = tt_tensor(xt->dtype, os, o);
  free(x);
  free(f);
  free(o);
  return t;
}

/* ---- running the op ---------------------------------------------------------- */

static int conv_attrs(const conv_case *c, tf_attr_kv *kv, int64_t *st,
                      int64_t *dl, int64_t *ep) {
  int64_t s[4] = {1, c->sh, c->sw, 1}, d[4] = {1, c->dh, c->dw, 1};
  int64_t e[8] = {0, 0, c->pads[0], c->pads[1], c->pads[2], c->pads[3], 0, 0};
  memcpy(st, s, sizeof s);
  memcpy(dl, d, sizeof d);
  memcpy(ep, e, sizeof e);
  kv[0] = (tf_attr_kv){"strides", tf_attr_int_list(st, 4)};
  kv[1] = (tf_attr_kv){"padding", tf_attr_string(c->pad)};
  kv[2] = (tf_attr_kv){"dilations", tf_attr_int_list(dl, 4)};
  kv[3] = (tf_attr_kv){"explicit_paddings", tf_attr_int_list(ep, 8)};
  return strcmp(c->pad, "EXPLICIT") == 0 ? 4 : 3;
}

static tf_tensor *run_conv(const conv_case *c, tf_tensor *x, tf_tensor *f) {
  tf_attr_kv kv[4];
  int64_t st[4], dl[4], ep[8];
  int n = conv_attrs(c, kv, st, dl, ep);
  tf_tensor *in[2] = {x, f};
  return tt_run1("Conv2D", in, 2, kv, n);
}

static void describe(const conv_case *c, char *buf, size_t size) {
  snprintf(buf, size, "input [%lld,%lld,%lld,%lld] filter [%lld,%lld,%lld,"
           "%lld] strides %lld,%lld dilations %lld,%lld %s",
           (long long)c->n, (long long)c->h, (long long)c->w,
           (long long)c->cin, (long long)c->kh, (long long)c->kw,
           (long long)c->cin, (long long)c->cout, (long long)c->sh,
           (long long)c->sw, (long long)c->dh, (long long)c->dw, c->pad);
}

/* Runs case c in dtype dt on fresh random inputs against the reference. */
static void check_case(const conv_case *c, tf_dtype dt) {
  char what[256];
  describe(c, what, sizeof what);
  tf_tensor *x = tt_rand(dt, tf_shape_of(4, c->n, c->h, c->w, c->cin), -1, 1);
  tf_tensor *f = tt_rand(dt, tf_shape_of(4, c->kh, c->kw, c->cin, c->cout),
                         -1, 1);
  tf_tensor *got = run_conv(c, x, f);
  tf_tensor *want = ref_conv(c, x, f);
  double k = (double)(c->kh * c->kw * c->cin);
  double atol = (dt == TF_FLOAT32 ? 1e-4 : 1e-12) * sqrt(k);
  ck_assert_msg(tf_shape_equal(&got->shape, &want->shape), "%s: bad shape",
                what);
  for (int64_t i = 0; i < got->n; i++) {
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    ck_assert_msg(fabs(g - w) <= atol, "%s %s: element %lld: got %.9g want "
                  "%.9g (seed %llu)", tf_dtype_name(dt), what, (long long)i,
                  g, w, (unsigned long long)tt_seed());
  }
  tf_tensor *all[] = {x, f, got, want};
  tt_free(all, 4);
}

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* ---- tests ------------------------------------------------------------------- */

START_TEST(test_conv_random) {
  static const char *pads[] = {"SAME", "VALID", "EXPLICIT"};
  for (int t = 0; t < 80; t++) {
    conv_case c = {.n = rnd(1, 3), .h = rnd(1, 12), .w = rnd(1, 12),
                   .cin = rnd(1, 5), .kh = rnd(1, 5), .kw = rnd(1, 5),
                   .cout = rnd(1, 6), .sh = rnd(1, 3), .sw = rnd(1, 3),
                   .dh = rnd(1, 2), .dw = rnd(1, 2), .pad = pads[t % 3],
                   .pads = {rnd(0, 3), rnd(0, 3), rnd(0, 3), rnd(0, 3)}};
    int64_t eh = (c.kh - 1) * c.dh + 1, ew = (c.kw - 1) * c.dw + 1;
    int64_t ph = t % 3 == 2 ? c.pads[0] + c.pads[1] : 0;
    int64_t pw = t % 3 == 2 ? c.pads[2] + c.pads[3] : 0;
    if (t % 3 != 0 && (eh > c.h + ph || ew > c.w + pw)) {
      c.pad = "SAME"; /* the window does not fit: tested below */
    }
    check_case(&c, t % 2 ? TF_FLOAT64 : TF_FLOAT32);
  }
}
END_TEST

START_TEST(test_conv_shapes) {
  const conv_case cases[] = {
      /* 1x1, stride 1: the plain-GEMM path */
      {3, 7, 5, 4, 1, 1, 3, 1, 1, 1, 1, "SAME", {0}},
      {2, 7, 5, 4, 1, 1, 3, 1, 1, 2, 2, "VALID", {0}},
      /* 1x1 with stride 2 and with explicit padding: im2col */
      {2, 7, 6, 3, 1, 1, 2, 2, 2, 1, 1, "SAME", {0}},
      {1, 4, 3, 2, 1, 1, 2, 1, 1, 1, 1, "EXPLICIT", {1, 0, 2, 1}},
      {1, 4, 3, 2, 1, 1, 2, 1, 1, 1, 1, "EXPLICIT", {0, 1, 0, 2}},
      /* filter covering the whole image, VALID: also a plain GEMM */
      {3, 5, 4, 3, 5, 4, 6, 1, 1, 1, 1, "VALID", {0}},
      {2, 5, 4, 3, 5, 4, 6, 2, 3, 1, 1, "SAME", {0}},
      {1, 3, 3, 2, 3, 3, 2, 2, 2, 1, 1, "EXPLICIT", {1, 0, 1, 0}},
      /* filter larger than the input, SAME */
      {2, 2, 3, 2, 5, 4, 3, 1, 1, 1, 1, "SAME", {0}},
      {1, 3, 1, 1, 7, 7, 1, 2, 3, 1, 1, "SAME", {0}},
      /* one channel in and out */
      {3, 9, 11, 1, 3, 3, 1, 1, 1, 1, 1, "SAME", {0}},
      {1, 9, 11, 1, 3, 2, 1, 3, 2, 1, 1, "VALID", {0}},
      /* a dilated filter as tall and wide as the input is not the whole
       * image: its second tap falls in the padding */
      {2, 2, 2, 3, 2, 2, 4, 2, 2, 2, 2, "SAME", {0}},
      /* more than one 512-row chunk of output pixels: 1800 and 1530 */
      {2, 30, 30, 5, 3, 3, 7, 1, 1, 1, 1, "SAME", {0}},
      {3, 21, 35, 2, 4, 2, 3, 1, 1, 2, 1, "VALID", {0}},
      /* small K * Cout: parts of output pixels on the pool, each with
       * 327-row chunks whose bounds fall inside images */
      {3, 15, 15, 4, 5, 5, 8, 1, 1, 1, 1, "SAME", {0}},
      {5, 13, 11, 1, 5, 5, 16, 2, 1, 1, 1, "SAME", {0}},
      /* dilation 2, with and without strides */
      {2, 11, 9, 3, 3, 3, 4, 1, 1, 2, 2, "SAME", {0}},
      {2, 11, 9, 3, 3, 2, 4, 2, 3, 2, 2, "VALID", {0}},
      {1, 6, 6, 2, 2, 3, 2, 1, 2, 2, 1, "EXPLICIT", {3, 0, 0, 2}},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32);
    check_case(&cases[i], TF_FLOAT64);
  }
}
END_TEST

START_TEST(test_conv_hand_worked) {
  /* 3x3 image 1..9, 2x2 filter of ones, SAME stride 2: TF pads the bottom
   * and right only (total padding 1, before = 0), giving the window sums
   * [[1+2+4+5, 3+6], [7+8, 9]]. */
  double x[9], f[4] = {1, 1, 1, 1};
  for (int i = 0; i < 9; i++) x[i] = i + 1;
  const double want[] = {12, 9, 15, 9};
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 3, 3, 1), x),
                      tt_tensor(TF_FLOAT32, tf_shape_of(4, 2, 2, 1, 1), f)};
  conv_case c = {1, 3, 3, 1, 2, 2, 1, 2, 2, 1, 1, "SAME", {0}};
  tf_tensor *got = run_conv(&c, in[0], in[1]);
  tf_tensor *w = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 2, 2, 1), want);
  tt_assert_close(got, w, 0, 0);
  tf_tensor *all[] = {in[0], in[1], got, w};
  tt_free(all, 4);
}
END_TEST

/* A filter row of K = 3*3*4096 floats (144 KiB) hits the kernel's 64 MiB
 * cap on the im2col buffer at 455 rows, below its usual 512-row minimum, so
 * the 576 output pixels take two chunks of different sizes. */
START_TEST(test_conv_chunk_cap) {
  conv_case c = {1, 24, 24, 4096, 3, 3, 2, 1, 1, 1, 1, "SAME", {0}};
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, c.n, c.h, c.w, c.cin), -1, 1);
  tf_tensor *f = tt_rand(TF_FLOAT32, tf_shape_of(4, 3, 3, c.cin, c.cout), -1, 1);
  tf_tensor *got = run_conv(&c, x, f);
  tt_assert_shape(got, 4, 1, 24, 24, 2);
  /* the scratch buffer stayed within the cap (plus inputs and output) */
  long long peak = tf_allocator_get_stats(tf_cpu_allocator()).peak_bytes;
  long long bound = (64 << 20) + (long long)(x->nbytes + f->nbytes) +
                    (long long)got->nbytes + (1 << 20);
  ck_assert_msg(peak <= bound, "peak %lld bytes > %lld", peak, bound);
  ref_geom g = ref_geometry(&c);
  double *xv = to_f64(x), *fv = to_f64(f);
  const float *o = got->data;
  int64_t k = 3 * 3 * c.cin, m = c.n * g.oh * g.ow;
  ck_assert(((int64_t)64 << 20) / (k * 4) < m);
  for (int64_t p = 0; p < m; p++) {
    int64_t ox = p % g.ow, oy = p / g.ow % g.oh, b = p / g.ow / g.oh;
    for (int64_t co = 0; co < c.cout; co++) {
      double want = ref_point(&c, &g, xv, fv, b, oy, ox, co);
      ck_assert_msg(fabs(o[p * c.cout + co] - want) <= 1e-4 * sqrt((double)k),
                    "pixel %lld channel %lld: got %g want %g (seed %llu)",
                    (long long)p, (long long)co, o[p * c.cout + co], want,
                    (unsigned long long)tt_seed());
    }
  }
  free(xv);
  free(fv);
  tf_tensor *all[] = {x, f, got};
  tt_free(all, 3);
}
END_TEST

START_TEST(test_conv_empty) {
  /* empty batch; zero rows under SAME; VALID window one larger than the
   * input, which TF sizes (2 - 3 + 1) / 1 = 0 rather than rejecting */
  const conv_case cases[] = {
      {0, 5, 5, 2, 3, 3, 4, 1, 1, 1, 1, "SAME", {0}},
      {2, 0, 5, 2, 3, 3, 4, 2, 1, 1, 1, "SAME", {0}},
      {1, 2, 5, 2, 3, 3, 4, 1, 1, 1, 1, "VALID", {0}},
  };
  const int64_t want[][4] = {{0, 5, 5, 4}, {2, 0, 5, 4}, {1, 0, 3, 4}};
  for (int i = 0; i < 3; i++) {
    const conv_case *c = &cases[i];
    tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, c->n, c->h, c->w, c->cin), -1, 1);
    tf_tensor *f = tt_rand(TF_FLOAT32, tf_shape_of(4, c->kh, c->kw, c->cin, c->cout), -1, 1);
    tf_tensor *got = run_conv(c, x, f);
    tt_assert_shape(got, 4, want[i][0], want[i][1], want[i][2], want[i][3]);
    tf_tensor *all[] = {x, f, got};
    tt_free(all, 3);
  }
}
END_TEST

/* Runs Conv2D on x [1,h,w,cin] and filter [k,k,fcin,1] expecting code;
 * returns the message. */
static const char *conv_fail(int64_t h, int64_t w, int64_t cin, int64_t k,
                             int64_t fcin, const tf_attr_kv *kv, int n_kv,
                             tf_code code) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(4, 1, h, w, cin), -1, 1),
                      tt_rand(TF_FLOAT32, tf_shape_of(4, k, k, fcin, 1), -1, 1)};
  const char *msg = tt_run_fail("Conv2D", in, 2, kv, n_kv, code);
  tt_free(in, 2);
  return msg;
}

START_TEST(test_conv_errors) {
  int64_t s4[4] = {1, 1, 1, 1}, s3[3] = {1, 1, 1}, sb[4] = {2, 1, 1, 1};
  tf_attr_kv kv[3] = {{"strides", tf_attr_int_list(s4, 4)},
                      {"padding", tf_attr_string("SAME")}};
  const char *msg = conv_fail(5, 5, 3, 3, 4, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "depth 3") && strstr(msg, "in_depth 4"), "%s", msg);

  kv[0].value = tf_attr_int_list(s3, 3);
  msg = conv_fail(5, 5, 3, 3, 3, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "strides") && strstr(msg, "4 values") &&
                strstr(msg, "got 3"), "%s", msg);

  kv[0].value = tf_attr_int_list(sb, 4);
  msg = conv_fail(5, 5, 3, 3, 3, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "batch and depth") != NULL, "%s", msg);

  kv[0].value = tf_attr_int_list(s4, 4);
  kv[1].value = tf_attr_string("VALID");
  msg = conv_fail(1, 5, 3, 3, 3, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "negative") && strstr(msg, "larger than the input"),
                "%s", msg);

  kv[1].value = tf_attr_string("SAME");
  kv[2] = (tf_attr_kv){"data_format", tf_attr_string("NCHW")};
  msg = conv_fail(3, 5, 5, 3, 3, kv, 3, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(msg, "NHWC") != NULL, "%s", msg);

  int64_t e7[7] = {0};
  kv[1].value = tf_attr_string("EXPLICIT");
  kv[2] = (tf_attr_kv){"explicit_paddings", tf_attr_int_list(e7, 7)};
  msg = conv_fail(5, 5, 3, 3, 3, kv, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "explicit_paddings") != NULL, "%s", msg);

  kv[1].value = tf_attr_string("SAME");
  msg = conv_fail(5, 5, 3, 0, 3, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "zero elements") != NULL, "%s", msg);

  /* rank */
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(3, 5, 5, 3), -1, 1),
                      tt_rand(TF_FLOAT32, tf_shape_of(4, 3, 3, 3, 1), -1, 1)};
  msg = tt_run_fail("Conv2D", in, 2, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank 4") != NULL, "%s", msg);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_conv");
  TCase *tc = tcase_create("conv2d");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_conv_random);
  tcase_add_test(tc, test_conv_shapes);
  tcase_add_test(tc, test_conv_hand_worked);
  tcase_add_test(tc, test_conv_chunk_cap);
  tcase_add_test(tc, test_conv_empty);
  tcase_add_test(tc, test_conv_errors);
  suite_add_tcase(s, tc);
  return s;
}
