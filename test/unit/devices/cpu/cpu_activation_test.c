/* cpu_activation_test.c: values of the SoftsignGrad, SeluGrad,
 * LeakyReluGrad and ReciprocalGrad CPU kernels (float32, float64) on
 * fresh random inputs (seeded test RNG) against double loops written here
 * from TF's formulas; rtol 1e-6 for float32 (a few roundings), 1e-14 for
 * float64. The select boundaries are checked by hand (SeluGrad at outputs
 * = 0 takes the scale branch, LeakyReluGrad at features = 0 the alpha
 * branch), as are LeakyReluGrad's alpha attr, in-place runs, empty inputs
 * and the shape and dtype errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

#define SCALE 1.0507009873554804934193349852946
#define SCALE_ALPHA 1.7580993408473768599402175208123

typedef double (*ref2)(double a, double b, double alpha);

static double r_softsign(double g, double f, double al) {
  (void)al;
  return g / ((1 + fabs(f)) * (1 + fabs(f)));
}
static double r_selu(double g, double o, double al) {
  (void)al;
  return o < 0 ? g * (o + SCALE_ALPHA) : g * SCALE;
}
static double r_leaky(double g, double f, double al) {
  return f > 0 ? g : g * al;
}
static double r_recip(double y, double dy, double al) {
  (void)al;
  return -dy * y * y;
}

typedef struct act_case {
  const char *op;
  ref2 ref;
  double blo, bhi; /* range of the second input */
} act_case;

static const act_case cases[] = {
    {"SoftsignGrad", r_softsign, -5, 5},
    {"SeluGrad", r_selu, -1.7, 3}, /* outputs of Selu lie above -1.758 */
    {"LeakyReluGrad", r_leaky, -5, 5},
    {"ReciprocalGrad", r_recip, -5, 5},
};

/* want = ref(a, b) in double, rounded to a's dtype. */
static tf_tensor *reference(const act_case *c, const tf_tensor *a,
                            const tf_tensor *b, double alpha) {
  double *v = malloc(sizeof(double) * (size_t)(a->n + 1));
  double al = a->dtype == TF_FLOAT32 ? (double)(float)alpha : alpha;
  for (int64_t i = 0; i < a->n; i++) {
    v[i] = c->ref(tf_tensor_get_f64(a, i), tf_tensor_get_f64(b, i), al);
  }
  tf_tensor *w = tt_tensor(a->dtype, a->shape, v);
  free(v);
  return w;
}

START_TEST(test_random) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64};
  const double rtol[] = {1e-6, 1e-14};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    for (int d = 0; d < 2; d++) {
      tf_shape s = tf_shape_of(2, (int64_t)5, (int64_t)67);
      tf_tensor *in[2] = {tt_rand(dts[d], s, -3, 3),
                          tt_rand(dts[d], s, cases[c].blo, cases[c].bhi)};
      double alpha = 0.2;
      tf_attr_kv kv = {"alpha", tf_attr_float(alpha)};
      bool leaky = strcmp(cases[c].op, "LeakyReluGrad") == 0;
      tf_tensor *y = tt_run1(cases[c].op, in, 2, leaky ? &kv : NULL,
                             leaky ? 1 : 0);
      tf_tensor *want = reference(&cases[c], in[0], in[1], alpha);
      tt_assert_close(y, want, 0, rtol[d]);
      tf_tensor_unref(y);
      /* Default alpha (0.2) and the in-place path (sole references). */
      y = tt_run_in_place(cases[c].op, in, 2, false);
      ck_assert_msg(y->data == in[0]->data || y->data == in[1]->data,
                    "%s did not reuse an input", cases[c].op);
      tt_assert_close(y, want, 0, rtol[d]);
      tt_free((tf_tensor *[]){in[0], in[1], y, want}, 4);
    }
  }
}
END_TEST

/* Boundaries and attrs, worked by hand. */
START_TEST(test_hand) {
  double g[] = {2, 2, 2, 2}, v[] = {-1, 0, -0.0, 1};
  tf_shape s = tf_shape_of(1, (int64_t)4);
  tf_tensor *in[2] = {tt_tensor(TF_FLOAT64, s, g), tt_tensor(TF_FLOAT64, s, v)};
  tf_tensor *y = tt_run1("SeluGrad", in, 2, NULL, 0);
  const double *p = y->data;
  ck_assert(fabs(p[0] - 2 * (SCALE_ALPHA - 1)) < 1e-15);
  ck_assert(p[1] == 2 * SCALE && p[2] == 2 * SCALE && p[3] == 2 * SCALE);
  tf_tensor_unref(y);
  tf_attr_kv kv = {"alpha", tf_attr_float(3.5)};
  y = tt_run1("LeakyReluGrad", in, 2, &kv, 1);
  p = y->data;
  ck_assert(p[0] == 7 && p[1] == 7 && p[2] == 7 && p[3] == 2);
  tf_tensor_unref(y);
  y = tt_run1("LeakyReluGrad", in, 2, NULL, 0); /* alpha defaults to 0.2 */
  p = y->data;
  ck_assert(fabs(p[0] - 0.4) < 1e-15 && fabs(p[1] - 0.4) < 1e-15 && p[3] == 2);
  tf_tensor_unref(y);
  y = tt_run1("SoftsignGrad", in, 2, NULL, 0);
  p = y->data;
  ck_assert(p[0] == 0.5 && p[1] == 2 && p[3] == 0.5);
  tf_tensor_unref(y);
  y = tt_run1("ReciprocalGrad", in, 2, NULL, 0); /* -dy * y^2 */
  p = y->data;
  ck_assert(p[0] == 4 && p[1] == 0 && p[3] == -4);
  tt_free((tf_tensor *[]){in[0], in[1], y}, 3);
}
END_TEST

START_TEST(test_empty_and_errors) {
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    const char *op = cases[c].op;
    tf_shape e = tf_shape_of(2, (int64_t)0, (int64_t)3);
    tf_tensor *in[2] = {tt_rand(TF_FLOAT32, e, 0, 1),
                        tt_rand(TF_FLOAT32, e, 0, 1)};
    tf_tensor *y = tt_run1(op, in, 2, NULL, 0);
    tt_assert_shape(y, 2, (int64_t)0, (int64_t)3);
    tt_free((tf_tensor *[]){in[0], in[1], y}, 3);
    tf_tensor *bad[2] = {tt_rand(TF_FLOAT32, tf_shape_of(1, (int64_t)3), 0, 1),
                         tt_rand(TF_FLOAT32, tf_shape_of(1, (int64_t)4), 0, 1)};
    const char *msg = tt_run_fail(op, bad, 2, NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "same shape") && strstr(msg, op), "%s", msg);
    tt_free(bad, 2);
    tf_tensor *ints[2] = {tf_tensor_scalar_i32(1), tf_tensor_scalar_i32(2)};
    msg = tt_run_fail(op, ints, 2, NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "int32"), "%s: %s", op, msg);
    tt_free(ints, 2);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_activation");
  TCase *tc = tcase_create("activation");
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_hand);
  tcase_add_test(tc, test_empty_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
