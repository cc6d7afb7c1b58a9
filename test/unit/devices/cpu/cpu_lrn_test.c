/* cpu_lrn_test.c: LRN and LRNGrad (ops_nn_lrn.c, cpu_lrn.c). Kernel values
 * on fresh random float32 inputs (seeded test RNG) against plain double
 * loops written here from TF's definitions (LRN: x / (bias + alpha *
 * window sum of squares) ** beta; LRNGrad: the analytic Jacobian-vector
 * product over each window), with depth_radius 0, 1, 2 and past the depth,
 * betas 0.5, 0.75 and 1, depth 1 and batches of several pixels; rtol 1e-5
 * + atol 1e-6 (float32 results computed in double). A hand value with the
 * defaults, empty inputs, the specs' attrs and defaults, shape inference
 * and the errors (rank, mismatched LRNGrad inputs, negative
 * depth_radius), each naming the op. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

typedef struct lrn_p {
  int64_t r;
  double bias, alpha, beta;
} lrn_p;

static int p_kv(const lrn_p *p, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"depth_radius", tf_attr_int(p->r)};
  kv[1] = (tf_attr_kv){"bias", tf_attr_float(p->bias)};
  kv[2] = (tf_attr_kv){"alpha", tf_attr_float(p->alpha)};
  kv[3] = (tf_attr_kv){"beta", tf_attr_float(p->beta)};
  return 4;
}

/* The window sum N at channel d of row x. */
static double ref_norm(const lrn_p *p, const tf_tensor *x, int64_t row,
                       int64_t depth, int64_t d) {
  double s = 0;
  for (int64_t k = d - p->r; k <= d + p->r; k++) {
    if (k >= 0 && k < depth) {
      double v = tf_tensor_get_f64(x, row * depth + k);
      s += v * v;
    }
  }
  return p->bias + p->alpha * s;
}

static tf_tensor *ref_lrn(const lrn_p *p, const tf_tensor *x) {
  int64_t depth = x->shape.dims[3];
  double *v = calloc((size_t)x->n + 1, sizeof *v);
  for (int64_t i = 0; i < x->n; i++) {
    int64_t row = i / depth, d = i % depth;
    v[i] = tf_tensor_get_f64(x, i) *
           pow(ref_norm(p, x, row, depth, d), -p->beta);
  }
  tf_tensor *t = tt_tensor(TF_FLOAT32, x->shape, v);
  free(v);
  return t;
}

/* dx_k = sum_j g_j dy_j/dx_k, dy_j/dx_k = [j==k] N_j^-b - 2 a b x_j x_k
 * N_j^(-b-1) for k in j's window (the forward output is not used). */
static tf_tensor *ref_lrn_grad(const lrn_p *p, const tf_tensor *g,
                               const tf_tensor *x) {
  int64_t depth = x->shape.dims[3];
  double *v = calloc((size_t)x->n + 1, sizeof *v);
  for (int64_t i = 0; i < x->n; i++) {
    int64_t row = i / depth, k = i % depth;
    double xk = tf_tensor_get_f64(x, i), s = 0;
    for (int64_t j = k - p->r; j <= k + p->r; j++) {
      if (j < 0 || j >= depth) continue;
      double nj = ref_norm(p, x, row, depth, j);
      double xj = tf_tensor_get_f64(x, row * depth + j);
      double dj = -2 * p->alpha * p->beta * xj * xk * pow(nj, -p->beta - 1);
      if (j == k) dj += pow(nj, -p->beta);
      s += tf_tensor_get_f64(g, row * depth + j) * dj;
    }
    v[i] = s;
  }
  tf_tensor *t = tt_tensor(TF_FLOAT32, x->shape, v);
  free(v);
  return t;
}

static const lrn_p params[] = {
    {5, 1, 1, 0.5},     {0, 1, 1, 0.5},    {1, 2, 0.5, 0.75},
    {2, 1, 1e-4, 0.75}, {3, 0.5, 2, 1.0},  {10, 1.5, 0.3, 0.6},
};
static const int64_t shapes[][4] = {
    {2, 3, 2, 7}, {1, 1, 1, 1}, {1, 2, 3, 4}, {3, 1, 2, 12}};

START_TEST(test_random) {
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      tf_attr_kv kv[4];
      int n = p_kv(&params[i], kv);
      tf_shape sh = tf_shape_make(4, shapes[s]);
      tf_tensor *x = tt_rand(TF_FLOAT32, sh, -2, 2);
      tf_tensor *g = tt_rand(TF_FLOAT32, sh, -1, 1);
      tf_tensor *y = tt_run1("LRN", &x, 1, kv, n);
      tf_tensor *want = ref_lrn(&params[i], x);
      tt_assert_close(y, want, 1e-6, 1e-5);
      tf_tensor *dx = tt_run1("LRNGrad", (tf_tensor *[]){g, x, y}, 3, kv, n);
      tf_tensor *dwant = ref_lrn_grad(&params[i], g, x);
      tt_assert_close(dx, dwant, 1e-5, 1e-4);
      tt_free((tf_tensor *[]){x, g, y, want, dx, dwant}, 6);
    }
}
END_TEST

/* half and bfloat16 run through float32 and round once: LRN against the
 * double reference rounded to the type (rtol about one ulp: 1e-3 half,
 * 8e-3 bfloat16; atol 1e-3); LRNGrad, fed the rounded output, within
 * twice that plus atol 2e-2. */
START_TEST(test_half) {
  static const tf_dtype dts[] = {TF_FLOAT16, TF_BFLOAT16};
  static const double tol[] = {1e-3, 8e-3};
  for (int t = 0; t < 2; t++) {
    tf_attr_kv kv[4];
    int n = p_kv(&params[2], kv);
    tf_shape sh = tf_shape_of(4, 2, 2, 3, 5);
    tf_tensor *x = tt_rand(dts[t], sh, -2, 2), *g = tt_rand(dts[t], sh, -1, 1);
    tf_tensor *y = tt_run1("LRN", &x, 1, kv, n);
    tf_tensor *want = ref_lrn(&params[2], x);
    double *v = malloc(sizeof(double) * (size_t)want->n);
    for (int64_t i = 0; i < want->n; i++) v[i] = tf_tensor_get_f64(want, i);
    tf_tensor *yw = tt_tensor(dts[t], sh, v);
    tt_assert_close(y, yw, 1e-3, tol[t]);
    tf_tensor *dx = tt_run1("LRNGrad", (tf_tensor *[]){g, x, y}, 3, kv, n);
    tf_tensor *dref = ref_lrn_grad(&params[2], g, x);
    for (int64_t i = 0; i < dref->n; i++) v[i] = tf_tensor_get_f64(dref, i);
    tf_tensor *dw = tt_tensor(dts[t], sh, v);
    tt_assert_close(dx, dw, 2e-2, 2 * tol[t]);
    free(v);
    tt_free((tf_tensor *[]){x, g, y, want, yw, dx, dref, dw}, 8);
  }
}
END_TEST

/* Defaults (radius 5, bias 1, alpha 1, beta 0.5) on [1, 2]: N = 1 + 1 + 4
 * = 6 for both, y = [1, 2] / sqrt(6). */
START_TEST(test_hand) {
  tf_tensor *x = tt_tensor(TF_FLOAT32, tf_shape_of(4, 1, 1, 1, 2),
                           (double[]){1, 2});
  tf_tensor *y = tt_run1("LRN", &x, 1, NULL, 0);
  tf_tensor *w = tt_tensor(TF_FLOAT32, x->shape,
                           (double[]){1 / sqrt(6.0), 2 / sqrt(6.0)});
  tt_assert_close(y, w, 0, 1e-6);
  tf_tensor *e = tt_rand(TF_FLOAT32, tf_shape_of(4, 0, 2, 2, 3), 0, 1);
  tf_tensor *ey = tt_run1("LRN", &e, 1, NULL, 0);
  tt_assert_shape(ey, 4, 0, 2, 2, 3);
  tf_tensor *eg = tt_run1("LRNGrad", (tf_tensor *[]){e, e, e}, 3, NULL, 0);
  tt_assert_shape(eg, 4, 0, 2, 2, 3);
  tt_free((tf_tensor *[]){x, y, w, e, ey, eg}, 6);
}
END_TEST

START_TEST(test_specs_and_shapes) {
  static const char *const ops[] = {"LRN", "LRNGrad"};
  for (int i = 0; i < 2; i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert(d != NULL);
    ck_assert_int_eq(d->n_inputs, i ? 3 : 1);
    ck_assert_int_eq(tf_op_find_attr(d, "depth_radius")->default_value.u.i, 5);
    ck_assert(tf_op_find_attr(d, "bias")->default_value.u.f == 1.0);
    ck_assert(tf_op_find_attr(d, "alpha")->default_value.u.f == 1.0);
    ck_assert(tf_op_find_attr(d, "beta")->default_value.u.f == 0.5);
    ck_assert_int_eq(tf_op_find_attr(d, "T")->default_value.u.t, TF_FLOAT32);
  }
  ck_assert_str_eq(tf_op_lookup("LRNGrad")->inputs[2].name, "output_image");
  tf_shape s = tt_infer_shape("LRN", (tt_input[]){{TF_FLOAT32,
                                                   tf_shape_unknown()}},
                              1, false, NULL, 0, 0, NULL);
  ck_assert_int_eq(s.rank, 4);
  int64_t U = TF_UNKNOWN_DIM;
  tt_input gi[3] = {{TF_FLOAT32, tf_shape_of(4, 2, U, 3, U)},
                    {TF_FLOAT32, tf_shape_of(4, U, 5, U, U)},
                    {TF_FLOAT32, tf_shape_of(4, U, U, U, 7)}};
  s = tt_infer_shape("LRNGrad", gi, 3, false, NULL, 0, 0, NULL);
  tf_shape want = tf_shape_of(4, 2, 5, 3, 7);
  ck_assert(tf_shape_equal(&s, &want));
}
END_TEST

static void expect_build_fail(const char *op, const tt_input *in, int n,
                              const tf_attr_kv *kv, int nkv,
                              const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(tt_build_node(g, op, NULL, in, n, false, kv, nkv, &st) == NULL);
  ck_assert_msg(st.code == TF_INVALID_ARGUMENT && strstr(st.msg, op) &&
                    strstr(st.msg, needle), "%s", st.msg);
  tf_graph_free(g);
}

START_TEST(test_errors) {
  tt_input x3 = {TF_FLOAT32, tf_shape_of(3, 2, 3, 4)};
  tt_input x4 = {TF_FLOAT32, tf_shape_of(4, 1, 2, 3, 4)};
  tt_input x5 = {TF_FLOAT32, tf_shape_of(4, 1, 2, 3, 5)};
  tf_attr_kv neg = {"depth_radius", tf_attr_int(-1)};
  expect_build_fail("LRN", &x3, 1, NULL, 0, "4-dimensional");
  expect_build_fail("LRN", &x4, 1, &neg, 1, "depth_radius");
  expect_build_fail("LRNGrad", (tt_input[]){x4, x4, x5}, 3, NULL, 0,
                    "same shape");
  expect_build_fail("LRNGrad", (tt_input[]){x4, x3, x4}, 3, NULL, 0,
                    "input_image");
  expect_build_fail("LRN", (tt_input[]){{TF_FLOAT64, x4.shape}}, 1, NULL, 0,
                    "T");
  /* kernels (eager: shapes known only at run time) */
  tf_tensor *a = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 4), 0, 1);
  const char *msg = tt_run_fail("LRN", &a, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "LRN") && strstr(msg, "4-dimensional"), "%s", msg);
  tf_tensor *b = tt_rand(TF_FLOAT32, tf_shape_of(4, 1, 1, 2, 3), 0, 1);
  tf_tensor *c = tt_rand(TF_FLOAT32, tf_shape_of(4, 1, 1, 2, 4), 0, 1);
  msg = tt_run_fail("LRNGrad", (tf_tensor *[]){b, b, c}, 3, NULL, 0,
                    TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "LRNGrad") && strstr(msg, "same shape"), "%s",
                msg);
  msg = tt_run_fail("LRN", &b, 1, &neg, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "depth_radius"), "%s", msg);
  tt_free((tf_tensor *[]){a, b, c}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_lrn");
  TCase *tc = tcase_create("lrn");
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_half);
  tcase_add_test(tc, test_hand);
  tcase_add_test(tc, test_specs_and_shapes);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
