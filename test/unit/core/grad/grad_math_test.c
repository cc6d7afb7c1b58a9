/* grad_math_test.c: every gradient of grad_math.c checked against float64
 * central differences (tt_grad_check_op; atol 1e-7, rtol 1e-6 unless
 * stated), binary ops also under broadcasting ([3,1] x [1,4], scalar x
 * matrix, vector x rank 3). Inputs are kept away from kinks (0 for
 * Relu/Abs/Sign, 6 for Relu6, ties for Maximum/Minimum, the bounds of
 * ClipByValue). Select's condition and int casts get no gradient. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/session.h"

#define ATOL 1e-7
#define RTOL 1e-6

static tf_tensor *rnd(tf_shape s, double lo, double hi) {
  return tt_rand(TF_FLOAT64, s, lo, hi);
}

/* Moves every element within gap of a kink k[i] to k[i] +- gap. */
static tf_tensor *away(tf_tensor *t, const double *k, int nk, double gap) {
  double *v = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    for (int j = 0; j < nk; j++) {
      if (fabs(v[i] - k[j]) < gap) v[i] = v[i] < k[j] ? k[j] - gap : k[j] + gap;
    }
  }
  return t;
}

static const double k_zero[1] = {0};

static void check_unary(const char *op, tf_tensor *x) {
  tt_grad_check_op(op, &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}

START_TEST(test_unary_smooth) {
  tf_shape s = tf_shape_of(2, 3, 4);
  check_unary("Neg", rnd(s, -2, 2));
  check_unary("Exp", rnd(s, -2, 2));
  check_unary("Log", rnd(s, 0.2, 3));
  check_unary("Log1p", rnd(s, -0.7, 3));
  check_unary("Sqrt", rnd(s, 0.2, 4));
  check_unary("Rsqrt", rnd(s, 0.3, 4));
  check_unary("Square", rnd(s, -2, 2));
  check_unary("Tanh", rnd(s, -2, 2));
  check_unary("Sigmoid", rnd(s, -4, 4));
  check_unary("Softplus", rnd(s, -4, 4));
  check_unary("Elu", away(rnd(s, -2, 2), k_zero, 1, 0.01));
}
END_TEST

START_TEST(test_unary_kinks) {
  tf_shape s = tf_shape_of(2, 4, 5);
  check_unary("Abs", away(rnd(s, -2, 2), k_zero, 1, 0.01));
  check_unary("Relu", away(rnd(s, -2, 2), k_zero, 1, 0.01));
  const double k6[2] = {0, 6};
  check_unary("Relu6", away(rnd(s, -2, 8), k6, 2, 0.01));
  /* Sign: the gradient is zero (checked numerically away from 0). */
  check_unary("Sign", away(rnd(s, -2, 2), k_zero, 1, 0.01));
}
END_TEST

/* Binary ops on operand shapes a, b (both checked). */
static void check_binary(const char *op, tf_shape a, tf_shape b, double alo,
                         double ahi, double blo, double bhi) {
  tf_tensor *in[2] = {rnd(a, alo, ahi), rnd(b, blo, bhi)};
  tt_grad_check_op(op, in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in, 2);
}

static void check_binary_all_shapes(const char *op, double alo, double ahi,
                                    double blo, double bhi) {
  check_binary(op, tf_shape_of(2, 2, 3), tf_shape_of(2, 2, 3), alo, ahi, blo, bhi);
  check_binary(op, tf_shape_of(2, 3, 1), tf_shape_of(2, 1, 4), alo, ahi, blo, bhi);
  check_binary(op, tf_shape_of(0), tf_shape_of(2, 2, 3), alo, ahi, blo, bhi);
  check_binary(op, tf_shape_of(2, 2, 3), tf_shape_of(0), alo, ahi, blo, bhi);
  check_binary(op, tf_shape_of(1, 4), tf_shape_of(3, 2, 3, 4), alo, ahi, blo, bhi);
  check_binary(op, tf_shape_of(3, 2, 1, 4), tf_shape_of(2, 3, 1), alo, ahi, blo, bhi);
}

START_TEST(test_add_sub_mul) {
  check_binary_all_shapes("Add", -2, 2, -2, 2);
  check_binary_all_shapes("Sub", -2, 2, -2, 2);
  check_binary_all_shapes("Mul", -2, 2, -2, 2);
}
END_TEST

START_TEST(test_div) {
  check_binary_all_shapes("Div", -2, 2, 0.5, 2);
  check_binary("Div", tf_shape_of(2, 3, 1), tf_shape_of(2, 1, 4), -2, 2, -2, -0.5);
}
END_TEST

/* Max/Min: continuous random operands tie with probability ~0; a and b
 * drawn from overlapping ranges so both sides win somewhere. */
/* FloorMod: x / y kept away from integers, where it jumps (a random x/y
 * lands within 1e-6 of one with probability ~1e-5). */
START_TEST(test_floor_mod) {
  check_binary("FloorMod", tf_shape_of(2, 2, 3), tf_shape_of(2, 2, 3), -3, 3,
               0.5, 2);
  check_binary("FloorMod", tf_shape_of(2, 3, 1), tf_shape_of(2, 1, 4), -3, 3,
               -2, -0.5);
}
END_TEST

/* As in TF: FloorDiv and TruncateDiv stop the gradient (TF returns None);
 * Mod and TruncateMod have no gradient, so asking for one through them is
 * an error naming the op and node. */
START_TEST(test_division_family_gradients) {
  tf_graph *g = tf_graph_new();
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output y = {tt_placeholder(g, "y", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output dx[2];
  tf_status st;
  tf_status_init(&st);
  const char *divs[] = {"FloorDiv", "TruncateDiv"};
  for (int i = 0; i < 2; i++) {
    tf_output z = {tt_node(g, divs[i], NULL, (tf_output[]){x, y}, 2, NULL, 0),
                   0};
    ck_assert_ptr_null(tf_grad_lookup(divs[i]));
    ck_assert_int_eq(tf_gradients(g, &z, 1, (tf_output[]){x, y}, 2, NULL, dx,
                                  &st), TF_OK);
    ck_assert(dx[0].node == NULL && dx[1].node == NULL);
  }
  const char *mods[] = {"Mod", "TruncateMod"};
  for (int i = 0; i < 2; i++) {
    tf_output z = {tt_node(g, mods[i], NULL, (tf_output[]){x, y}, 2, NULL, 0),
                   0};
    ck_assert_ptr_null(tf_grad_lookup(mods[i]));
    ck_assert_int_eq(tf_gradients(g, &z, 1, &x, 1, NULL, dx, &st),
                     TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, mods[i]) && strstr(st.msg, "no gradient"),
                  "%s", st.msg);
    tf_status_init(&st);
  }
  ck_assert_ptr_nonnull(tf_grad_lookup("FloorMod"));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_maximum_minimum) {
  check_binary_all_shapes("Maximum", -2, 2, -2, 2);
  check_binary_all_shapes("Minimum", -2, 2, -2, 2);
}
END_TEST

START_TEST(test_pow) {
  check_binary_all_shapes("Pow", 0.5, 2, -2, 2);
  /* Negative bases with integral exponents: only dx (dy is undefined). */
  double e[4] = {2, 3, 1, 2};
  tf_tensor *in[2] = {away(rnd(tf_shape_of(2, 3, 4), -2, 2), k_zero, 1, 0.1),
                      tt_tensor(TF_FLOAT64, tf_shape_of(1, 4), e)};
  bool check[2] = {true, false};
  tt_grad_check_op("Pow", in, 2, false, NULL, 0, 0, check, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_addn) {
  tf_tensor *in[3] = {rnd(tf_shape_of(2, 2, 3), -1, 1), rnd(tf_shape_of(2, 2, 3), -1, 1),
                      rnd(tf_shape_of(2, 2, 3), -1, 1)};
  tt_grad_check_op("AddN", in, 3, true, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_grad_check_op("AddN", in, 1, true, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in, 3);
}
END_TEST

START_TEST(test_bias_add) {
  tf_tensor *in[2] = {rnd(tf_shape_of(3, 2, 3, 4), -1, 1), rnd(tf_shape_of(1, 4), -1, 1)};
  tt_grad_check_op("BiasAdd", in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in, 2);
  tf_tensor *nc[2] = {rnd(tf_shape_of(4, 2, 3, 2, 2), -1, 1), rnd(tf_shape_of(1, 3), -1, 1)};
  tf_attr_kv kv = {"data_format", tf_attr_string("NCHW")};
  tt_grad_check_op("BiasAdd", nc, 2, false, &kv, 1, 0, NULL, ATOL, RTOL);
  tt_free(nc, 2);
  tf_tensor *m[2] = {rnd(tf_shape_of(2, 5, 3), -1, 1), rnd(tf_shape_of(1, 3), -1, 1)};
  tt_grad_check_op("BiasAdd", m, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(m, 2);
}
END_TEST

/* Scalar bounds and bounds of t's shape; t kept away from the bounds. */
START_TEST(test_clip_by_value) {
  const double k[2] = {-0.5, 0.7};
  tf_tensor *in[3] = {away(rnd(tf_shape_of(2, 4, 5), -2, 2), k, 2, 0.01),
                      tf_tensor_scalar_f64(-0.5), tf_tensor_scalar_f64(0.7)};
  tt_grad_check_op("ClipByValue", in, 3, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in, 3);
  tf_tensor *lo = rnd(tf_shape_of(2, 3, 4), -1, -0.2);
  tf_tensor *hi = rnd(tf_shape_of(2, 3, 4), 0.2, 1);
  tf_tensor *t = rnd(tf_shape_of(2, 3, 4), -2, 2);
  double *tv = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    double l = ((double *)lo->data)[i], h = ((double *)hi->data)[i];
    if (fabs(tv[i] - l) < 0.01) tv[i] = l - 0.01;
    if (fabs(tv[i] - h) < 0.01) tv[i] = h + 0.01;
  }
  tf_tensor *in2[3] = {t, lo, hi};
  tt_grad_check_op("ClipByValue", in2, 3, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in2, 3);
}
END_TEST

START_TEST(test_select) {
  tf_tensor *c = tt_rand(TF_BOOL, tf_shape_of(2, 3, 4), 0, 1);
  tf_tensor *in[3] = {c, rnd(tf_shape_of(2, 3, 4), -1, 1), rnd(tf_shape_of(2, 3, 4), -1, 1)};
  bool check[3] = {false, true, true};
  tt_grad_check_op("Select", in, 3, false, NULL, 0, 0, check, ATOL, RTOL);
  tt_free(in, 3);
  /* a condition over the first dim only */
  tf_tensor *v[3] = {tt_rand(TF_BOOL, tf_shape_of(1, 3), 0, 1),
                     rnd(tf_shape_of(2, 3, 2), -1, 1), rnd(tf_shape_of(2, 3, 2), -1, 1)};
  tt_grad_check_op("Select", v, 3, false, NULL, 0, 0, check, ATOL, RTOL);
  tt_free(v, 3);
}
END_TEST

START_TEST(test_check_numerics) {
  tf_tensor *x = rnd(tf_shape_of(2, 2, 3), -1, 1);
  tf_attr_kv kv = {"message", tf_attr_string("m")};
  tt_grad_check_op("CheckNumerics", &x, 1, false, &kv, 1, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}
END_TEST

/* ---- second derivatives ---------------------------------------------------- */

static void check_pair(const char *op, tf_tensor *a, tf_tensor *b) {
  tf_tensor *in[2] = {a, b};
  tt_grad_check_op(op, in, 2, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tt_free(in, 2);
}

START_TEST(test_fused_backward_ops) {
  tf_shape s = tf_shape_of(2, 3, 4);
  const double k6[2] = {0, 6};
  check_pair("ReluGrad", rnd(s, -2, 2), away(rnd(s, -2, 2), k_zero, 1, 0.01));
  check_pair("Relu6Grad", rnd(s, -2, 2), away(rnd(s, -2, 8), k6, 2, 0.01));
  check_pair("EluGrad", rnd(s, -2, 2), away(rnd(s, -0.9, 3), k_zero, 1, 0.01));
  check_pair("SoftplusGrad", rnd(s, -2, 2), rnd(s, -4, 4));
  check_pair("SigmoidGrad", rnd(s, 0.05, 0.95), rnd(s, -2, 2));
  check_pair("TanhGrad", rnd(s, -0.95, 0.95), rnd(s, -2, 2));
  check_pair("SqrtGrad", rnd(s, 0.3, 3), rnd(s, -2, 2));
  check_pair("RsqrtGrad", rnd(s, 0.3, 3), rnd(s, -2, 2));
  tf_tensor *x = rnd(tf_shape_of(3, 3, 2, 4), -1, 1);
  tt_grad_check_op("BiasAddGrad", &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tf_attr_kv kv = {"data_format", tf_attr_string("NCHW")};
  tt_grad_check_op("BiasAddGrad", &x, 1, false, &kv, 1, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}
END_TEST

/* d/dx of (d/dx sum(f(x))) through the fused ops: the first gradient's
 * graph is differentiated again and checked by finite differences. */
typedef struct second_arg {
  const char *op;
} second_arg;

static tf_output first_grad(tf_graph *g, const tf_output *in, int n, void *arg) {
  (void)n;
  const second_arg *a = arg;
  tf_output y = {tt_node(g, a->op, NULL, in, 1, NULL, 0), 0};
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, in, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  return dx;
}

START_TEST(test_second_order) {
  static const struct { const char *op; double lo, hi; } k[] = {
      {"Tanh", -2, 2}, {"Sigmoid", -3, 3}, {"Sqrt", 0.3, 3}, {"Rsqrt", 0.3, 3},
      {"Softplus", -3, 3}, {"Elu", -2, 2}, {"Exp", -1, 1}, {"Log", 0.3, 3}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    second_arg a = {k[i].op};
    tf_tensor *x = away(rnd(tf_shape_of(2, 2, 3), k[i].lo, k[i].hi), k_zero, 1, 0.01);
    tt_grad_check(first_grad, &a, &x, 1, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
  }
}
END_TEST

/* ---- Cast and Select's condition: exact graph checks ----------------------- */

static tf_tensor *eval(tf_graph *g, const char *feed, tf_tensor *v, tf_output what) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(what.node), what.index);
  const char *fetch = name;
  tf_tensor *out = NULL;
  ck_assert_msg(tf_session_run(s, NULL, &feed, &v, 1, &fetch, &out, 1, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  tf_session_free(s);
  return out;
}

/* float64 -> float32 cast: dx = Cast(grad_y, float64) exactly; an int cast
 * gives no gradient. */
START_TEST(test_cast) {
  tf_graph *g = tf_graph_new();
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 5)), 0};
  tf_attr_kv f32 = {"DstT", tf_attr_type_v(TF_FLOAT32)};
  tf_attr_kv i32 = {"DstT", tf_attr_type_v(TF_INT32)};
  tf_output y = {tt_node(g, "Cast", "y", &x, 1, &f32, 1), 0};
  tf_output yi = {tt_node(g, "Cast", "yi", &x, 1, &i32, 1), 0};
  tf_tensor *gv = tt_rand(TF_FLOAT32, tf_shape_of(1, 5), -3, 3);
  tf_output gy = {tt_const(g, "gy", tf_tensor_ref(gv)), 0};
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, &gy, &dx, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_node_output_type(dx.node, dx.index), TF_FLOAT64);
  tf_tensor *xv = rnd(tf_shape_of(1, 5), -1, 1);
  tf_tensor *d = eval(g, "x", xv, dx);
  for (int i = 0; i < 5; i++) {
    ck_assert_double_eq(tf_tensor_get_f64(d, i), (double)((float *)gv->data)[i]);
  }
  ck_assert_int_eq(tf_gradients(g, &yi, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_ptr_null(dx.node);
  tt_free((tf_tensor *[]){gv, xv, d}, 3);
  tf_graph_free(g);
}
END_TEST

/* Float32 graphs: the gradient has the forward dtype (Relu through
 * ReluGrad, Mul, BiasAdd through BiasAddGrad, Sigmoid). */
START_TEST(test_float32_dtypes) {
  tf_graph *g = tf_graph_new();
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 4, 3)), 0};
  tf_output b = {tt_placeholder(g, "b", TF_FLOAT32, tf_shape_of(1, 3)), 0};
  tf_output h = {tt_node(g, "BiasAdd", "h", (tf_output[]){x, b}, 2, NULL, 0), 0};
  tf_output r = {tt_node(g, "Relu", "r", &h, 1, NULL, 0), 0};
  tf_output y = {tt_node(g, "Sigmoid", "y", &r, 1, NULL, 0), 0};
  tf_output xs[2] = {x, b}, dx[2];
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, xs, 2, NULL, dx, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(tf_node_output_type(dx[i].node, dx[i].index), TF_FLOAT32);
  }
  ck_assert_str_eq(tf_node_op(dx[1].node), "BiasAddGrad");
  bool relu_grad = false;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    relu_grad = relu_grad || strcmp(tf_node_op(tf_graph_node(g, i)), "ReluGrad") == 0;
  }
  ck_assert(relu_grad);
  tf_graph_free(g);
}
END_TEST

/* A composite of many of the ops with float64 broadcasting throughout. */
static tf_output composite(tf_graph *g, const tf_output *in, int n, void *arg) {
  (void)n;
  (void)arg;
  tf_output a = in[0], b = in[1], c = in[2];
  tf_output m = {tt_node(g, "Maximum", NULL, (tf_output[]){a, b}, 2, NULL, 0), 0};
  tf_output e = {tt_node(g, "Elu", NULL, &m, 1, NULL, 0), 0};
  tf_output p = {tt_node(g, "Pow", NULL, (tf_output[]){c, b}, 2, NULL, 0), 0};
  tf_output s = {tt_node(g, "Softplus", NULL, &p, 1, NULL, 0), 0};
  tf_output q = {tt_node(g, "Mul", NULL, (tf_output[]){e, s}, 2, NULL, 0), 0};
  tf_output r = {tt_node(g, "Rsqrt", NULL, &c, 1, NULL, 0), 0};
  return (tf_output){tt_node(g, "Sub", NULL, (tf_output[]){q, r}, 2, NULL, 0), 0};
}

START_TEST(test_composite) {
  tf_tensor *in[3] = {rnd(tf_shape_of(2, 3, 4), -2, 2), rnd(tf_shape_of(2, 3, 1), -1, 1),
                      rnd(tf_shape_of(1, 4), 0.5, 2)};
  tt_grad_check(composite, NULL, in, 3, NULL, ATOL, RTOL);
  tt_free(in, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_math");
  TCase *tc = tcase_create("grad");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_unary_smooth);
  tcase_add_test(tc, test_unary_kinks);
  tcase_add_test(tc, test_add_sub_mul);
  tcase_add_test(tc, test_div);
  tcase_add_test(tc, test_maximum_minimum);
  tcase_add_test(tc, test_floor_mod);
  tcase_add_test(tc, test_division_family_gradients);
  tcase_add_test(tc, test_pow);
  tcase_add_test(tc, test_addn);
  tcase_add_test(tc, test_bias_add);
  tcase_add_test(tc, test_clip_by_value);
  tcase_add_test(tc, test_select);
  tcase_add_test(tc, test_check_numerics);
  tcase_add_test(tc, test_cast);
  tcase_add_test(tc, test_float32_dtypes);
  tcase_add_test(tc, test_composite);
  tcase_add_test(tc, test_fused_backward_ops);
  tcase_add_test(tc, test_second_order);
  suite_add_tcase(s, tc);
  return s;
}
