/* cpu_conv_dnnl_test.c: the oneDNN convolution path (cpu_conv_dnnl.c)
 * against the im2col + OpenBLAS fallback (TF_DISABLE_DNNL=1) for Conv2D,
 * Conv2DBackpropInput and Conv2DBackpropFilter in float32 on random shapes
 * (batch 1-4, sizes 1-15, filters 1-5, 1-9 input and 1-20 output
 * channels, SAME and VALID, strides 1 and 2) and on the Fashion-MNIST
 * CNN's layer shapes (which select oneDNN's blocked JIT kernels). The
 * fallback itself is checked against float64 sums by cpu_conv_test.c and
 * cpu_conv_grad_test.c, which pass with and without TF_DISABLE_DNNL=1.
 *
 * Tolerance: operands are uniform in [-1, 1), so each result is a sum of T
 * products of magnitude < 1 computed in two float32 orders; results must
 * agree within 2e-5 * sqrt(T) + 1e-5 * |value|.
 * Built without oneDNN (no TF_HAVE_DNNL) the test says so and passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

typedef struct dcase {
  int64_t n, h, w, cin, kh, kw, cout, s;
  const char *pad;
} dcase;

/* Output size for one dimension (TF's arithmetic, dilation 1). */
static int64_t out_dim(int64_t in, int64_t k, int64_t s, const char *pad) {
  if (strcmp(pad, "SAME") == 0) {
    return (in + s - 1) / s;
  }
  return in >= k ? (in - k) / s + 1 : 0;
}

/* Runs Conv2D (which 0), Conv2DBackpropInput (1) or Conv2DBackpropFilter
 * (2) on x, f, dy, with oneDNN unless disabled. */
static tf_tensor *run(int which, const dcase *c, tf_tensor *x, tf_tensor *f,
                      tf_tensor *dy, bool disabled) {
  if (disabled) {
    setenv("TF_DISABLE_DNNL", "1", 1);
  } else {
    unsetenv("TF_DISABLE_DNNL");
  }
  int64_t st[4] = {1, c->s, c->s, 1};
  tf_attr_kv kv[2] = {{"strides", tf_attr_int_list(st, 4)},
                      {"padding", tf_attr_string(c->pad)}};
  tf_tensor *out;
  if (which == 0) {
    tf_tensor *in[2] = {x, f};
    out = tt_run1("Conv2D", in, 2, kv, 2);
  } else if (which == 1) {
    tf_tensor *sizes = tt_tensor_i(TF_INT32, tf_shape_of(1, 4),
                                   x->shape.dims);
    tf_tensor *in[3] = {sizes, f, dy};
    out = tt_run1("Conv2DBackpropInput", in, 3, kv, 2);
    tf_tensor_unref(sizes);
  } else {
    tf_tensor *sizes = tt_tensor_i(TF_INT32, tf_shape_of(1, 4),
                                   f->shape.dims);
    tf_tensor *in[3] = {x, sizes, dy};
    out = tt_run1("Conv2DBackpropFilter", in, 3, kv, 2);
    tf_tensor_unref(sizes);
  }
  unsetenv("TF_DISABLE_DNNL");
  return out;
}

static void check_case(const dcase *c) {
  int64_t oh = out_dim(c->h, c->kh, c->s, c->pad);
  int64_t ow = out_dim(c->w, c->kw, c->s, c->pad);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(4, c->n, c->h, c->w, c->cin),
                         -1, 1);
  tf_tensor *f = tt_rand(TF_FLOAT32,
                         tf_shape_of(4, c->kh, c->kw, c->cin, c->cout), -1, 1);
  tf_tensor *dy = tt_rand(TF_FLOAT32, tf_shape_of(4, c->n, oh, ow, c->cout),
                          -1, 1);
  double terms[3] = {(double)(c->kh * c->kw * c->cin),
                     (double)(c->kh * c->kw * c->cout),
                     (double)(c->n * oh * ow)};
  for (int which = 0; which < 3; which++) {
    tf_tensor *got = run(which, c, x, f, dy, false);
    tf_tensor *want = run(which, c, x, f, dy, true);
    tt_assert_close(got, want, 2e-5 * sqrt(terms[which]) + 1e-6, 1e-5);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
  }
  tf_tensor_unref(x);
  tf_tensor_unref(f);
  tf_tensor_unref(dy);
}

START_TEST(test_dnnl_random) {
#ifndef TF_HAVE_DNNL
  printf("cpu_conv_dnnl_test: built without oneDNN (libdnnl-dev), "
         "skipping\n");
  return;
#endif
  for (int i = 0; i < 40; i++) {
    dcase c = {.n = 1 + (int64_t)(tt_rand_u64() % 4),
               .h = 1 + (int64_t)(tt_rand_u64() % 15),
               .w = 1 + (int64_t)(tt_rand_u64() % 15),
               .cin = 1 + (int64_t)(tt_rand_u64() % 9),
               .kh = 1 + (int64_t)(tt_rand_u64() % 5),
               .kw = 1 + (int64_t)(tt_rand_u64() % 5),
               .cout = 1 + (int64_t)(tt_rand_u64() % 20),
               .s = 1 + (int64_t)(tt_rand_u64() % 2),
               .pad = tt_rand_u64() % 2 ? "SAME" : "VALID"};
    if (strcmp(c.pad, "VALID") == 0 && (c.h < c.kh || c.w < c.kw)) {
      c.pad = "SAME"; /* keep the output non-empty */
    }
    check_case(&c);
  }
}
END_TEST

START_TEST(test_dnnl_cnn_layers) {
#ifndef TF_HAVE_DNNL
  printf("cpu_conv_dnnl_test: built without oneDNN (libdnnl-dev), "
         "skipping\n");
  return;
#endif
  static const dcase cases[] = {
      {4, 28, 28, 1, 5, 5, 32, 1, "SAME"},
      {4, 14, 14, 32, 5, 5, 64, 1, "SAME"},
      {3, 14, 14, 32, 3, 3, 64, 2, "SAME"},
      {2, 15, 13, 16, 3, 3, 48, 2, "VALID"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_case(&cases[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_conv_dnnl");
  TCase *tc = tcase_create("dnnl_vs_fallback");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_dnnl_random);
  tcase_add_test(tc, test_dnnl_cnn_layers);
  suite_add_tcase(s, tc);
  return s;
}
