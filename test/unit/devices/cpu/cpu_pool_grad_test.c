/* cpu_pool_grad_test.c: MaxPoolGrad and AvgPoolGrad on CPU against plain
 * float64 scatters written here: each window's gradient goes to the first
 * maximum of the window in row-major order (MaxPoolGrad; ties are made
 * common by drawing inputs from {0, 1, 2}) or is split evenly over the
 * window's in-image elements (AvgPoolGrad). Shapes are random (batch 1-3,
 * odd sizes, ksize 1-4, strides 1-3, SAME and VALID), with windows that
 * overlap (one work unit per image) and that do not (one per output row),
 * and more channels than the kernel's 64-channel block. A hand-worked case
 * pins tie and NaN routing. Bad inputs must give INVALID_ARGUMENT naming
 * the problem, from shape inference and from the kernels. MaxPoolGrad takes
 * TF's explicit_paddings attr empty (same result) and rejects it non-empty.
 *
 * Tolerance: MaxPoolGrad adds up to KH*KW window gradients into one element
 * in the kernel's dtype, the reference in float64: relative 1e-7 * KH*KW
 * (float32), 1e-16 * KH*KW (float64), and exactly the same elements must
 * be zero (where the routing goes); AvgPoolGrad multiplies by 1/count
 * where the reference divides: relative 1e-6 (float32), 1e-14 (float64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

typedef struct pool_case {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  const char *pad;
} pool_case;

typedef struct ref_geom {
  int64_t oh, ow, pt, pl;
} ref_geom;

static void ref_dim(int64_t in, int64_t k, int64_t s, bool same, int64_t *out,
                    int64_t *before) {
  if (same) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + k - in;
    *before = total > 0 ? total / 2 : 0;
  } else {
    *out = in >= k ? (in - k) / s + 1 : 0;
    *before = 0;
  }
}

static ref_geom ref_geometry(const pool_case *c) {
  ref_geom g;
  bool same = strcmp(c->pad, "SAME") == 0;
  ref_dim(c->h, c->kh, c->sh, same, &g.oh, &g.pt);
  ref_dim(c->w, c->kw, c->sw, same, &g.ow, &g.pl);
  return g;
}

/* The reference gradient: for every output element, its window's target
 * (max) or every window element (avg) gets grad (/ count). */
static tf_tensor *ref_grad(const pool_case *c, bool max, const tf_tensor *x,
                           const tf_tensor *grad) {
  ref_geom g = ref_geometry(c);
  int64_t n = c->n * c->h * c->w * c->c;
  double *out = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
  int64_t o = 0;
  for (int64_t b = 0; b < c->n; b++) {
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++) {
        for (int64_t ch = 0; ch < c->c; ch++, o++) {
          int64_t y0 = TF_MAX(oy * c->sh - g.pt, 0);
          int64_t y1 = TF_MIN(oy * c->sh - g.pt + c->kh, c->h);
          int64_t x0 = TF_MAX(ox * c->sw - g.pl, 0);
          int64_t x1 = TF_MIN(ox * c->sw - g.pl + c->kw, c->w);
          double gv = tf_tensor_get_f64(grad, o), count = (double)((y1 - y0) *
                                                                  (x1 - x0));
          int64_t best = -1;
          for (int64_t y = y0; y < y1; y++) {
            for (int64_t xx = x0; xx < x1; xx++) {
              int64_t i = ((b * c->h + y) * c->w + xx) * c->c + ch;
              if (!max) {
                out[i] += gv / count;
              } else if (best < 0 || tf_tensor_get_f64(x, i) >
                                         tf_tensor_get_f64(x, best)) {
                best = i;
              }
            }
          }
          if (max && best >= 0) {
            out[best] += gv;
          }
        }
      }
    }
  }
  tf_tensor *t = tt_tensor(grad->dtype, tf_shape_of(4, c->n, c->h, c->w, c->c),
                           out);
  free(out);
  return t;
}

typedef struct pool_attrs {
  int64_t k[4], s[4];
  tf_attr_kv kv[3];
} pool_attrs;

static void make_attrs(const pool_case *c, pool_attrs *a) {
  int64_t k[4] = {1, c->kh, c->kw, 1}, s[4] = {1, c->sh, c->sw, 1};
  memcpy(a->k, k, sizeof k);
  memcpy(a->s, s, sizeof s);
  a->kv[0] = (tf_attr_kv){"ksize", tf_attr_int_list(a->k, 4)};
  a->kv[1] = (tf_attr_kv){"strides", tf_attr_int_list(a->s, 4)};
  a->kv[2] = (tf_attr_kv){"padding", tf_attr_string(c->pad)};
}

/* Inputs from {0, 1, 2} make ties within windows common. */
static tf_tensor *tie_input(tf_dtype dt, tf_shape s) {
  tf_tensor *t = tt_rand(TF_INT32, s, 0, 2);
  double *v = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof(double));
  for (int64_t i = 0; i < t->n; i++) v[i] = (double)tf_tensor_get_i64(t, i);
  tf_tensor *out = tt_tensor(dt, s, v);
  free(v);
  tf_tensor_unref(t);
  return out;
}

static void check_case(const pool_case *c, tf_dtype dt, bool ties) {
  char what[256];
  snprintf(what, sizeof what, "%s [%lld,%lld,%lld,%lld] ksize %lld,%lld "
           "strides %lld,%lld %s (seed %llu)", tf_dtype_name(dt),
           (long long)c->n, (long long)c->h, (long long)c->w, (long long)c->c,
           (long long)c->kh, (long long)c->kw, (long long)c->sh,
           (long long)c->sw, c->pad, (unsigned long long)tt_seed());
  pool_attrs a;
  make_attrs(c, &a);
  tf_shape xs = tf_shape_of(4, c->n, c->h, c->w, c->c);
  tf_tensor *x = ties ? tie_input(dt, xs) : tt_rand(dt, xs, -1, 1);
  tf_tensor *y = tt_run1("MaxPool", &x, 1, a.kv, 3);
  tf_tensor *grad = tt_rand(dt, y->shape, -1, 1);
  tf_tensor *in[3] = {x, y, grad};
  tf_tensor *got = tt_run1("MaxPoolGrad", in, 3, a.kv, 3);
  tf_tensor *want = ref_grad(c, true, x, grad);
  /* up to kh * kw windows add into one element, each rounding once */
  double tol = (dt == TF_FLOAT32 ? 1e-7 : 1e-16) * (double)(c->kh * c->kw);
  for (int64_t i = 0; i < got->n; i++) {
    double gv = tf_tensor_get_f64(got, i), wv = tf_tensor_get_f64(want, i);
    ck_assert_msg(fabs(gv - wv) <= tol * (1 + fabs(wv)) && (gv == 0) == (wv == 0),
                  "MaxPoolGrad %s: element %lld: got %.9g want %.9g", what,
                  (long long)i, gv, wv);
  }
  tf_tensor *shape = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), xs.dims);
  tf_tensor *in2[2] = {shape, grad};
  tf_tensor *got2 = tt_run1("AvgPoolGrad", in2, 2, a.kv, 3);
  tf_tensor *want2 = ref_grad(c, false, x, grad);
  double rtol = dt == TF_FLOAT32 ? 1e-6 : 1e-14;
  for (int64_t i = 0; i < got2->n; i++) {
    double gv = tf_tensor_get_f64(got2, i), wv = tf_tensor_get_f64(want2, i);
    ck_assert_msg(fabs(gv - wv) <= rtol * (1 + fabs(wv)), "AvgPoolGrad %s: "
                  "element %lld: got %.9g want %.9g", what, (long long)i, gv,
                  wv);
  }
  tf_tensor *all[] = {x, y, grad, got, want, shape, got2, want2};
  tt_free(all, 8);
}

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

START_TEST(test_random) {
  for (int t = 0; t < 80; t++) {
    pool_case c = {.n = rnd(1, 3), .h = rnd(1, 12), .w = rnd(1, 12),
                   .c = rnd(1, 5), .kh = rnd(1, 4), .kw = rnd(1, 4),
                   .sh = rnd(1, 3), .sw = rnd(1, 3),
                   .pad = t % 2 ? "SAME" : "VALID"};
    if (t % 2 == 0 && (c.kh > c.h || c.kw > c.w)) {
      c.pad = "SAME";
    }
    check_case(&c, t % 3 ? TF_FLOAT32 : TF_FLOAT64, t % 4 < 2);
  }
}
END_TEST

START_TEST(test_shapes) {
  const pool_case cases[] = {
      /* the CNN's 2x2 stride 2 (one unit per output row) */
      {3, 28, 28, 8, 2, 2, 2, 2, "VALID"},
      {2, 7, 7, 5, 2, 2, 2, 2, "SAME"},
      /* overlapping windows (one unit per image), batch 1 and 3 */
      {1, 9, 8, 3, 3, 3, 2, 2, "SAME"},
      {3, 9, 8, 3, 3, 3, 1, 1, "VALID"},
      {2, 11, 10, 2, 3, 2, 2, 1, "SAME"},
      /* stride larger than the window: rows no window covers */
      {2, 11, 10, 2, 2, 2, 3, 3, "VALID"},
      {2, 11, 10, 2, 1, 2, 3, 1, "SAME"},
      /* more channels than the 64-channel block */
      {2, 6, 5, 70, 2, 3, 2, 2, "SAME"},
      {1, 5, 5, 130, 3, 3, 1, 1, "VALID"},
      /* window covering the image; 1x1 window */
      {2, 4, 5, 3, 4, 5, 1, 1, "VALID"},
      {2, 4, 5, 3, 1, 1, 1, 1, "SAME"},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32, true);
    check_case(&cases[i], TF_FLOAT64, false);
    check_case(&cases[i], TF_FLOAT64, true);
  }
}
END_TEST

START_TEST(test_hand_worked) {
  /* One 2x3 window (VALID), two channels. Channel 0 holds 1 5 5 / 2 5 0:
   * the first 5 (position 1) takes the gradient. Channel 1 holds
   * NaN 1 2 / 3 3 0 for the first window, as MaxPool keeps the NaN that
   * comes first; a second image has 1 NaN 3 / 3 2 0: a later NaN is never
   * taken, the first 3 (position 2) is. */
  const double nan = NAN;
  const double xv[] = {1, nan, 5, 1, 5, 2, 2, 3, 5, 3, 0, 0,
                       1, 1, 5, nan, 5, 3, 2, 3, 5, 2, 0, 0};
  const double gv[] = {10, 20, 30, 40};
  pool_case c = {2, 2, 3, 2, 2, 3, 1, 1, "VALID"};
  pool_attrs a;
  make_attrs(&c, &a);
  tf_tensor *x = tt_tensor(TF_FLOAT32, tf_shape_of(4, 2, 2, 3, 2), xv);
  tf_tensor *y = tt_run1("MaxPool", &x, 1, a.kv, 3);
  tf_tensor *g = tt_tensor(TF_FLOAT32, tf_shape_of(4, 2, 1, 1, 2), gv);
  tf_tensor *in[3] = {x, y, g};
  tf_tensor *got = tt_run1("MaxPoolGrad", in, 3, a.kv, 3);
  const double want[] = {0, 20, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                         0, 0, 30, 0, 0, 40, 0, 0, 0, 0, 0, 0};
  tf_tensor *w = tt_tensor(TF_FLOAT32, tf_shape_of(4, 2, 2, 3, 2), want);
  tt_assert_close(got, w, 0, 0);
  tf_tensor *all[] = {x, y, g, got, w};
  tt_free(all, 5);
}
END_TEST

/* Runs op's kernel on Placeholders of unknown shape expecting code. */
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

static void both_fail(const char *op, tf_tensor **in, int n,
                      const tf_attr_kv *kv, const char *what) {
  const char *m1 = tt_run_fail(op, in, n, kv, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m1, what) != NULL, "%s (shape fn): '%s' lacks '%s'", op,
                m1, what);
  const char *m2 = kernel_fail(op, in, n, kv, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m2, what) != NULL, "%s (kernel): '%s' lacks '%s'", op,
                m2, what);
}

/* explicit_paddings = [] (TF's default, written out) routes as without it. */
START_TEST(test_explicit_paddings) {
  pool_case c = {2, 7, 6, 3, 3, 2, 2, 2, "SAME"};
  pool_attrs a;
  make_attrs(&c, &a);
  tf_attr_kv kv[4] = {a.kv[0], a.kv[1], a.kv[2],
                      {"explicit_paddings", tf_attr_int_list(NULL, 0)}};
  tf_tensor *x = tie_input(TF_FLOAT64, tf_shape_of(4, 2, 7, 6, 3));
  tf_tensor *y = tt_run1("MaxPool", &x, 1, kv, 4);
  tf_tensor *grad = tt_rand(TF_FLOAT64, y->shape, -1, 1);
  tf_tensor *in[3] = {x, y, grad};
  tf_tensor *got = tt_run1("MaxPoolGrad", in, 3, kv, 4);
  tf_tensor *want = ref_grad(&c, true, x, grad);
  tt_assert_close(got, want, 1e-15 * 6, 1e-15 * 6); /* <= 6 adds per cell */
  int64_t eight[8] = {0, 0, 1, 1, 1, 1, 0, 0};
  kv[3].value = tf_attr_int_list(eight, 8);
  const char *msg = tt_run_fail("MaxPoolGrad", in, 3, kv, 4,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "explicit_paddings must be empty") != NULL, "%s",
                msg);
  tf_tensor *all[] = {x, y, grad, got, want};
  tt_free(all, 5);
}
END_TEST

START_TEST(test_errors) {
  pool_case c = {2, 6, 6, 3, 2, 2, 2, 2, "VALID"};
  pool_attrs a;
  make_attrs(&c, &a);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 6, 6, 3), -1, 1);
  tf_tensor *y = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 3, 3, 3), -1, 1);
  tf_tensor *bad = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 3, 4, 3), -1, 1);
  tf_tensor *in[3] = {x, y, bad};
  both_fail("MaxPoolGrad", in, 3, a.kv, "grad has shape [2,3,4,3]");
  in[1] = bad;
  in[2] = y;
  both_fail("MaxPoolGrad", in, 3, a.kv, "orig_output has shape [2,3,4,3]");
  int64_t v3[3] = {2, 6, 6}, vneg[4] = {2, 6, -1, 3}, good[4] = {2, 6, 6, 3};
  tf_tensor *s3 = tt_tensor_i(TF_INT32, tf_shape_of(1, 3), v3);
  tf_tensor *sneg = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), vneg);
  tf_tensor *sgood = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), good);
  tf_tensor *in2[2] = {s3, y};
  both_fail("AvgPoolGrad", in2, 2, a.kv, "orig_input_shape must be a vector "
            "of 4 values");
  in2[0] = sneg;
  both_fail("AvgPoolGrad", in2, 2, a.kv, "orig_input_shape[2] = -1 is "
            "negative");
  in2[0] = sgood;
  in2[1] = bad;
  both_fail("AvgPoolGrad", in2, 2, a.kv, "grad has shape [2,3,4,3]");
  tf_tensor *x3 = tt_rand(TF_FLOAT32, tf_shape_of(3, 6, 6, 3), -1, 1);
  tf_tensor *in3[3] = {x3, y, y};
  both_fail("MaxPoolGrad", in3, 3, a.kv, "orig_input must be rank 4");
  tf_tensor *all[] = {x, y, bad, s3, sneg, sgood, x3};
  tt_free(all, 7);
}
END_TEST

START_TEST(test_shape_inference) {
  tf_graph *g = tf_graph_new();
  int64_t v[4] = {2, 7, 9, 3}, k[4] = {1, 2, 2, 1};
  tf_node *sz = tt_const(g, NULL, tt_tensor_i(TF_INT32, tf_shape_of(1, 4), v));
  tf_node *grad = tt_placeholder(g, NULL, TF_FLOAT32, tf_shape_unknown());
  tf_attr_kv kv[3] = {{"ksize", tf_attr_int_list(k, 4)},
                      {"strides", tf_attr_int_list(k, 4)},
                      {"padding", tf_attr_string("SAME")}};
  tf_output in[2] = {{sz, 0}, {grad, 0}};
  tf_node *n = tt_node(g, "AvgPoolGrad", NULL, in, 2, kv, 3);
  tf_shape want = tf_shape_of(4, 2, 7, 9, 3);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  tf_node *x = tt_placeholder(g, NULL, TF_FLOAT32, tf_shape_of(4, -1, 7, 9, 3));
  tf_output in2[3] = {{x, 0}, {grad, 0}, {grad, 0}};
  n = tt_node(g, "MaxPoolGrad", NULL, in2, 3, kv, 3);
  want = tf_shape_of(4, -1, 7, 9, 3);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_pool_grad");
  TCase *tc = tcase_create("pool_grad");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_hand_worked);
  tcase_add_test(tc, test_explicit_paddings);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_shape_inference);
  suite_add_tcase(s, tc);
  return s;
}
