/* cpu_pool_test.c: MaxPool and AvgPool on CPU against direct float64 loops
 * written here (own padding arithmetic), on random shapes: batch 1-3, odd
 * sizes, windows 1-4, strides 1-3, SAME and VALID, windows larger than the
 * input under SAME, one channel, plus hand-worked TF values. MaxPool takes
 * TF's explicit_paddings attr empty (as TF writes it) with the same result,
 * and rejects it non-empty and padding EXPLICIT; AvgPool has no such attr
 * (as in TF).
 *
 * Tolerance: MaxPool selects an input element, so results must be exact in
 * every dtype. AvgPool sums at most 16 float32 values in [-1, 1) and divides
 * once: atol 1e-6 for float32, 1e-14 for float64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

typedef struct pool_case {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  const char *pad;
} pool_case;

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

/* Max or mean of the valid elements of every window, as a tensor of x's
 * dtype. */
static tf_tensor *ref_pool(const pool_case *p, const tf_tensor *x, bool max) {
  bool same = strcmp(p->pad, "SAME") == 0;
  int64_t oh, ow, pt, pl;
  ref_dim(p->h, p->kh, p->sh, same, &oh, &pt);
  ref_dim(p->w, p->kw, p->sw, same, &ow, &pl);
  int64_t n = p->n * oh * ow * p->c, i = 0;
  double *o = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  double *xv = malloc(sizeof(double) * (size_t)(x->n > 0 ? x->n : 1));
  for (int64_t j = 0; j < x->n; j++) xv[j] = tf_tensor_get_f64(x, j);
  for (int64_t b = 0; b < p->n; b++) {
    for (int64_t oy = 0; oy < oh; oy++) {
      for (int64_t ox = 0; ox < ow; ox++) {
        for (int64_t ch = 0; ch < p->c; ch++) {
          double acc = max ? -INFINITY : 0;
          int count = 0;
          for (int64_t ky = 0; ky < p->kh; ky++) {
            for (int64_t kx = 0; kx < p->kw; kx++) {
              int64_t iy = oy * p->sh - pt + ky, ix = ox * p->sw - pl + kx;
              if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) {
                continue;
              }
              double v = xv[((b * p->h + iy) * p->w + ix) * p->c + ch];
              acc = max ? fmax(acc, v) : acc + v;
              count++;
            }
          }
          o[i++] = max ? acc : acc / count;
        }
      }
    }
  }
  tf_tensor *t = tt_tensor(x->dtype, tf_shape_of(4, p->n, oh, ow, p->c), o);
  free(o);
  free(xv);
  return t;
}

static tf_tensor *run_pool(const char *op, const pool_case *p, tf_tensor *x) {
  int64_t k[4] = {1, p->kh, p->kw, 1}, s[4] = {1, p->sh, p->sw, 1};
  tf_attr_kv kv[] = {{"ksize", tf_attr_int_list(k, 4)},
                     {"strides", tf_attr_int_list(s, 4)},
                     {"padding", tf_attr_string(p->pad)}};
  return tt_run1(op, &x, 1, kv, 3);
}

static void check_case(const pool_case *p, tf_dtype dt, bool max) {
  bool is_int = dt == TF_INT32 || dt == TF_INT64;
  tf_tensor *x = tt_rand(dt, tf_shape_of(4, p->n, p->h, p->w, p->c),
                         is_int ? -1000 : -1, is_int ? 1000 : 1);
  tf_tensor *got = run_pool(max ? "MaxPool" : "AvgPool", p, x);
  tf_tensor *want = ref_pool(p, x, max);
  double atol = max ? 0 : dt == TF_FLOAT32 ? 1e-6 : 1e-14;
  tt_assert_close(got, want, atol, 0);
  tf_tensor *all[] = {x, got, want};
  tt_free(all, 3);
}

static int64_t rnd(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

START_TEST(test_pool_random) {
  static const tf_dtype max_types[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,
                                       TF_INT64};
  for (int t = 0; t < 80; t++) {
    pool_case p = {.n = rnd(1, 3), .h = rnd(1, 11), .w = rnd(1, 11),
                   .c = rnd(1, 6), .kh = rnd(1, 4), .kw = rnd(1, 4),
                   .sh = rnd(1, 3), .sw = rnd(1, 3),
                   .pad = t % 2 ? "VALID" : "SAME"};
    if (p.kh > p.h || p.kw > p.w) {
      p.pad = "SAME";
    }
    check_case(&p, max_types[t % 4], true);
    check_case(&p, t % 3 ? TF_FLOAT32 : TF_FLOAT64, false);
  }
}
END_TEST

START_TEST(test_pool_shapes) {
  const pool_case cases[] = {
      {2, 3, 2, 3, 5, 4, 1, 1, "SAME"},   /* window larger than input */
      {1, 2, 5, 1, 3, 3, 2, 3, "SAME"},
      {3, 9, 7, 1, 3, 3, 2, 2, "VALID"},  /* one channel */
      {2, 8, 8, 4, 2, 2, 2, 2, "VALID"},  /* the classic 2x2/2 */
      {2, 7, 5, 3, 1, 1, 1, 1, "SAME"},   /* identity */
      {1, 6, 6, 2, 6, 6, 1, 1, "VALID"},  /* global pool */
      {3, 40, 40, 16, 3, 3, 1, 1, "SAME"}, /* enough work for the pool */
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    check_case(&cases[i], TF_FLOAT32, true);
    check_case(&cases[i], TF_FLOAT64, true);
    check_case(&cases[i], TF_FLOAT32, false);
    check_case(&cases[i], TF_FLOAT64, false);
  }
}
END_TEST

START_TEST(test_pool_explicit_paddings) {
  const pool_case cases[] = {{2, 7, 5, 3, 3, 2, 2, 1, "SAME"},
                             {1, 9, 8, 2, 2, 3, 2, 2, "VALID"}};
  int64_t eight[8] = {0, 0, 1, 1, 1, 1, 0, 0};
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    const pool_case *p = &cases[i];
    int64_t k[4] = {1, p->kh, p->kw, 1}, s[4] = {1, p->sh, p->sw, 1};
    tf_attr_kv kv[] = {{"ksize", tf_attr_int_list(k, 4)},
                       {"strides", tf_attr_int_list(s, 4)},
                       {"padding", tf_attr_string(p->pad)},
                       {"explicit_paddings", tf_attr_int_list(NULL, 0)}};
    tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, p->n, p->h, p->w, p->c),
                           -1, 1);
    tf_tensor *got = tt_run1("MaxPool", &x, 1, kv, 4);
    tf_tensor *want = ref_pool(p, x, true);
    tt_assert_close(got, want, 0, 0);
    kv[3].value = tf_attr_int_list(eight, 8);
    const char *msg = tt_run_fail("MaxPool", &x, 1, kv, 4, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "explicit_paddings must be empty") != NULL, "%s",
                  msg);
    kv[2].value = tf_attr_string("EXPLICIT");
    msg = tt_run_fail("MaxPool", &x, 1, kv, 4, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "'padding' = 'EXPLICIT' is not one of the "
                              "allowed values") != NULL, "%s", msg);
    kv[2].value = tf_attr_string(p->pad);
    kv[3].value = tf_attr_int_list(NULL, 0);
    msg = tt_run_fail("AvgPool", &x, 1, kv, 4, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "unknown attr 'explicit_paddings'") != NULL, "%s",
                  msg);
    tf_tensor *all[] = {x, got, want};
    tt_free(all, 3);
  }
}
END_TEST

START_TEST(test_pool_hand_worked) {
  /* 3x3 image 1..9, 2x2 window, stride 2, SAME: TF pads bottom and right
   * only, so windows hold {1,2,4,5}, {3,6}, {7,8}, {9}; the average divides
   * by the count of real elements. */
  double x[9];
  for (int i = 0; i < 9; i++) x[i] = i + 1;
  const double avg[] = {3, 4.5, 7.5, 9}, mx[] = {5, 6, 8, 9};
  pool_case p = {1, 3, 3, 1, 2, 2, 2, 2, "SAME"};
  tf_tensor *in = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 3, 3, 1), x);
  tf_tensor *a = run_pool("AvgPool", &p, in), *m = run_pool("MaxPool", &p, in);
  tf_tensor *wa = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 2, 2, 1), avg);
  tf_tensor *wm = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 2, 2, 1), mx);
  tt_assert_close(a, wa, 0, 0);
  tt_assert_close(m, wm, 0, 0);
  tf_tensor *all[] = {in, a, m, wa, wm};
  tt_free(all, 5);
}
END_TEST

START_TEST(test_pool_empty) {
  pool_case p = {0, 4, 4, 3, 2, 2, 2, 2, "VALID"};
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, 0, 4, 4, 3), -1, 1);
  tf_tensor *y = run_pool("MaxPool", &p, x);
  tt_assert_shape(y, 4, 0, 2, 2, 3);
  tf_tensor *all[] = {x, y};
  tt_free(all, 2);
  /* VALID window one larger than the input: TF sizes it (2 - 3 + 1) / 1 = 0 */
  pool_case q = {1, 2, 4, 3, 3, 2, 1, 1, "VALID"};
  x = tt_rand(TF_FLOAT64, tf_shape_of(4, 1, 2, 4, 3), -1, 1);
  y = run_pool("AvgPool", &q, x);
  tt_assert_shape(y, 4, 1, 0, 3, 3);
  tf_tensor *all2[] = {x, y};
  tt_free(all2, 2);
}
END_TEST

static const char *pool_fail(const char *op, const int64_t *k, int nk,
                             const int64_t *s, const char *pad,
                             const char *fmt, int64_t h, tf_code code) {
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, 1, h, 5, 2), -1, 1);
  tf_attr_kv kv[] = {{"ksize", tf_attr_int_list(k, nk)},
                     {"strides", tf_attr_int_list(s, 4)},
                     {"padding", tf_attr_string(pad)},
                     {"data_format", tf_attr_string(fmt)}};
  const char *msg = tt_run_fail(op, &x, 1, kv, 4, code);
  tf_tensor_unref(x);
  return msg;
}

START_TEST(test_pool_errors) {
  const int64_t k3[] = {1, 3, 3}, k4[] = {1, 3, 3, 1}, kb[] = {2, 1, 1, 1};
  const int64_t kd[] = {1, 1, 1, 2}, kn[] = {1, 1, 3, 3}, s1[] = {1, 1, 1, 1};
  const char *msg;
  /* TF's "ksize: list(int) >= 4", checked when the node is built */
  msg = pool_fail("MaxPool", k3, 3, s1, "SAME", "NHWC", 5, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "'ksize' has 3 elements, at least 4 required"),
                "%s", msg);
  msg = pool_fail("AvgPool", k3, 3, s1, "SAME", "NHWC", 5, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "'ksize' has 3 elements, at least 4 required"),
                "%s", msg);
  msg = pool_fail("AvgPool", k4, 4, s1, "VALID", "NHWC", 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "negative") && strstr(msg, "rows"), "%s", msg);
  msg = pool_fail("AvgPool", kb, 4, s1, "VALID", "NHWC", 5, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "batch") != NULL, "%s", msg);
  msg = pool_fail("MaxPool", kd, 4, s1, "VALID", "NHWC", 5, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(msg, "depth") != NULL, "%s", msg);
  msg = pool_fail("MaxPool", kn, 4, s1, "SAME", "NCHW", 5, TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(msg, "NHWC") != NULL, "%s", msg);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(3, 4, 4, 2), -1, 1);
  tf_attr_kv kv[] = {{"ksize", tf_attr_int_list(k4, 4)},
                     {"strides", tf_attr_int_list(s1, 4)},
                     {"padding", tf_attr_string("SAME")}};
  msg = tt_run_fail("MaxPool", &x, 1, kv, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rank 4") != NULL, "%s", msg);
  tf_tensor_unref(x);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_pool");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_pool_random);
  tcase_add_test(tc, test_pool_shapes);
  tcase_add_test(tc, test_pool_explicit_paddings);
  tcase_add_test(tc, test_pool_hand_worked);
  tcase_add_test(tc, test_pool_empty);
  tcase_add_test(tc, test_pool_errors);
  suite_add_tcase(s, tc);
  return s;
}
