/* ops_math_unary_test.c: graph-level checks of the unary math ops and
 * Cast: output shapes and dtypes inferred on Placeholders of partially
 * known shape, dtype errors from the type sets, Cast's and LeakyRelu's
 * attrs, IsNan/IsFinite's bool output, the fused backward ops of
 * ops_activation.c (shape merging and mismatch errors), and that every
 * registered CPU kernel dtype is one the op accepts (and the ones promised
 * exist). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const char *float_ops[] = {
    "Neg",   "Abs",        "Sign",  "Square",  "Exp",      "Log",
    "Log1p", "Sqrt",       "Rsqrt", "Sigmoid", "Tanh",     "Relu",
    "Relu6", "Elu",        "Softplus", "Expm1", "Reciprocal", "Sin",
    "Cos",   "Erf",        "Floor", "Ceil",    "Round",    "Rint",
    "Softsign", "Selu",    "LeakyRelu"};
#define N_FLOAT_OPS ((int)(sizeof(float_ops) / sizeof(float_ops[0])))

/* Builds op "y" on one Placeholder; NULL (with *st set) on error. */
static tf_node *build(tf_graph *g, const char *op, tf_dtype dt, tf_shape in,
                      const tf_attr_kv *at, int n_at, tf_status *st) {
  tt_input x = {dt, in};
  return tt_build_node(g, op, "y", &x, 1, false, at, n_at, st);
}

static void expect_shape(const char *op, tf_dtype dt, tf_shape in,
                         const tf_attr_kv *at, int n_at, tf_dtype want_dt) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, dt, in, at, n_at, &st);
  ck_assert_msg(n != NULL, "%s(%s): %s", op, tf_dtype_name(dt), st.msg);
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &in), "%s: shape %s, want %s", op,
                tf_shape_str(got, a, sizeof a), tf_shape_str(&in, b, sizeof b));
  ck_assert_int_eq(tf_node_num_outputs(n), 1);
  ck_assert_int_eq(tf_node_output_type(n, 0), want_dt);
  tf_graph_free(g);
}

/* Expects tf_node_finish to fail with INVALID_ARGUMENT whose message
 * contains every word of want (NULL-terminated). */
static void expect_error(const char *op, tf_dtype dt, const tf_attr_kv *at,
                         int n_at, const char *const *want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, dt, SHAPE(2, 3), at, n_at, &st);
  ck_assert_msg(n == NULL, "%s(%s) was accepted", op, tf_dtype_name(dt));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  for (int i = 0; want[i] != NULL; i++) {
    ck_assert_msg(strstr(st.msg, want[i]) != NULL, "%s: '%s' lacks '%s'", op,
                  st.msg, want[i]);
  }
  tf_graph_free(g);
}

START_TEST(test_shapes_pass_through) {
  tf_shape shapes[] = {SHAPE(U, 3), tf_shape_unknown(), tf_shape_scalar(),
                       SHAPE(2, 0, 5), SHAPE(U, U, U, 7)};
  for (int o = 0; o < N_FLOAT_OPS; o++) {
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
      expect_shape(float_ops[o], TF_FLOAT32, shapes[s], NULL, 0, TF_FLOAT32);
      expect_shape(float_ops[o], TF_FLOAT64, shapes[s], NULL, 0, TF_FLOAT64);
      expect_shape(float_ops[o], TF_FLOAT16, shapes[s], NULL, 0, TF_FLOAT16);
    }
  }
  expect_shape("LogicalNot", TF_BOOL, SHAPE(U, 4), NULL, 0, TF_BOOL);
  expect_shape("Neg", TF_INT64, tf_shape_unknown(), NULL, 0, TF_INT64);
  expect_shape("Relu", TF_UINT8, SHAPE(3), NULL, 0, TF_UINT8);
}
END_TEST

START_TEST(test_cast_graph) {
  tf_attr_kv to_i8[] = {{"DstT", tf_attr_type_v(TF_INT8)}};
  expect_shape("Cast", TF_FLOAT32, SHAPE(U, 2), to_i8, 1, TF_INT8);
  expect_shape("Cast", TF_COMPLEX64, tf_shape_unknown(), to_i8, 1, TF_INT8);
  tf_attr_kv to_b[] = {{"DstT", tf_attr_type_v(TF_BOOL)},
                       {"Truncate", tf_attr_bool(true)}};
  expect_shape("Cast", TF_BFLOAT16, tf_shape_scalar(), to_b, 2, TF_BOOL);
  /* Truncate defaults to false; SrcT is inferred from the input. */
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, "Cast", TF_INT32, SHAPE(4), to_i8, 1, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  bool truncate = true;
  ck_assert(tf_node_attr_get_bool(n, "Truncate", &truncate, &st) == TF_OK);
  ck_assert(!truncate);
  tf_dtype src;
  ck_assert(tf_node_attr_get_type(n, "SrcT", &src, &st) == TF_OK);
  ck_assert_int_eq(src, TF_INT32);
  tf_graph_free(g);
  /* DstT is required. */
  g = tf_graph_new();
  n = build(g, "Cast", TF_INT32, SHAPE(4), NULL, 0, &st);
  ck_assert(n == NULL);
  ck_assert_msg(strstr(st.msg, "DstT") != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_dtype_errors) {
  expect_error("Exp", TF_INT32, NULL, 0,
               (const char *[]){"y", "Exp", "int32", NULL});
  expect_error("Softplus", TF_COMPLEX64, NULL, 0,
               (const char *[]){"Softplus", "complex64", NULL});
  expect_error("Neg", TF_UINT8, NULL, 0,
               (const char *[]){"Neg", "uint8", NULL});
  expect_error("Abs", TF_BOOL, NULL, 0, (const char *[]){"Abs", "bool", NULL});
  expect_error("LogicalNot", TF_FLOAT32, NULL, 0,
               (const char *[]){"LogicalNot", "float32", NULL});
  expect_error("Relu", TF_COMPLEX64, NULL, 0,
               (const char *[]){"Relu", "complex64", NULL});
  expect_error("Exp", TF_COMPLEX64, NULL, 0,
               (const char *[]){"Exp", "complex64", NULL});
}
END_TEST

static bool op_allows(const tf_op_def *op, const char *attr, tf_dtype dt) {
  const tf_attr_def *a = tf_op_find_attr(op, attr);
  if (a == NULL || a->n_allowed_types == 0) {
    return true;
  }
  for (int i = 0; i < a->n_allowed_types; i++) {
    if (a->allowed_types[i] == dt) {
      return true;
    }
  }
  return false;
}

/* For every op, the dtypes with a CPU kernel are exactly the op's type
 * set: nothing the graph accepts lacks a kernel, no kernel is unreachable.
 * Spot checks that the promised ones are there. */
START_TEST(test_kernels_match_specs) {
  for (int o = 0; o < N_FLOAT_OPS; o++) {
    const tf_op_def *op = tf_op_lookup(float_ops[o]);
    ck_assert_msg(op != NULL && op->doc != NULL && op->doc[0] != '\0', "%s",
                  float_ops[o]);
    tf_dtype dts[32];
    int n = tf_kernel_dtypes(float_ops[o], TF_DEVICE_CPU, dts, 32);
    ck_assert_int_le(n, 32);
    for (int i = 0; i < n; i++) {
      ck_assert_msg(op_allows(op, "T", dts[i]), "%s has a %s kernel", op->name,
                    tf_dtype_name(dts[i]));
    }
    const tf_attr_def *t = tf_op_find_attr(op, "T");
    ck_assert(t != NULL && t->n_allowed_types > 0);
    for (int i = 0; i < t->n_allowed_types; i++) {
      tf_dtype dt = t->allowed_types[i];
      ck_assert_msg(tf_kernel_lookup(float_ops[o], TF_DEVICE_CPU, dt) != NULL,
                    "%s accepts %s but has no CPU kernel for it", op->name,
                    tf_dtype_name(dt));
    }
    ck_assert_int_eq(n, t->n_allowed_types);
    ck_assert(tf_kernel_lookup(float_ops[o], TF_DEVICE_CPU, TF_FLOAT64));
    ck_assert(tf_kernel_lookup(float_ops[o], TF_DEVICE_CPU, TF_BFLOAT16));
  }
  const char *int_ops[] = {"Neg", "Abs", "Sign", "Square", "Relu", "Relu6"};
  for (int o = 0; o < 6; o++) {
    ck_assert(tf_kernel_lookup(int_ops[o], TF_DEVICE_CPU, TF_INT32) != NULL);
    ck_assert(tf_kernel_lookup(int_ops[o], TF_DEVICE_CPU, TF_INT64) != NULL);
  }
  ck_assert(tf_kernel_lookup("Exp", TF_DEVICE_CPU, TF_COMPLEX64) == NULL);
  ck_assert(tf_kernel_lookup("Cast", TF_DEVICE_CPU, TF_FLOAT32) != NULL);
  ck_assert(tf_kernel_lookup("LogicalNot", TF_DEVICE_CPU, TF_BOOL) != NULL);
  const tf_op_def *ln = tf_op_lookup("LogicalNot");
  ck_assert(ln != NULL && (ln->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert_str_eq(tf_op_family_of(ln), "math_unary");
}
END_TEST

/* IsNan / IsFinite: bool output of the input's shape, float inputs only,
 * no gradient. */
START_TEST(test_predicates) {
  const char *ops[] = {"IsNan", "IsFinite"};
  for (int o = 0; o < 2; o++) {
    expect_shape(ops[o], TF_FLOAT32, SHAPE(U, 3), NULL, 0, TF_BOOL);
    expect_shape(ops[o], TF_BFLOAT16, tf_shape_unknown(), NULL, 0, TF_BOOL);
    expect_shape(ops[o], TF_FLOAT64, tf_shape_scalar(), NULL, 0, TF_BOOL);
    expect_error(ops[o], TF_INT32, NULL, 0,
                 (const char *[]){ops[o], "int32", NULL});
    const tf_op_def *op = tf_op_lookup(ops[o]);
    ck_assert(op != NULL && (op->flags & TF_OP_NOT_DIFFERENTIABLE));
    const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_FLOAT16, TF_BFLOAT16};
    for (int d = 0; d < 4; d++) {
      ck_assert(tf_kernel_lookup(ops[o], TF_DEVICE_CPU, dts[d]) != NULL);
    }
    ck_assert(tf_kernel_lookup(ops[o], TF_DEVICE_CPU, TF_INT32) == NULL);
  }
  expect_error("Round", TF_UINT8, NULL, 0,
               (const char *[]){"Round", "uint8", NULL});
  expect_error("Floor", TF_INT32, NULL, 0,
               (const char *[]){"Floor", "int32", NULL});
  expect_shape("Round", TF_INT64, SHAPE(2, U), NULL, 0, TF_INT64);
}
END_TEST

/* LeakyRelu's alpha: defaults to 0.2, takes any float, refuses other
 * types. */
START_TEST(test_leaky_relu_attrs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, "LeakyRelu", TF_FLOAT32, SHAPE(3), NULL, 0, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  const tf_attr_value *a = tf_node_attr(n, "alpha");
  ck_assert(a != NULL && a->type == TF_ATTR_FLOAT);
  ck_assert(fabs(a->u.f - 0.2) < 1e-7);
  tf_graph_free(g);
  tf_attr_kv big[] = {{"alpha", tf_attr_float(3.5)}};
  expect_shape("LeakyRelu", TF_FLOAT64, SHAPE(U, 2), big, 1, TF_FLOAT64);
  tf_attr_kv bad[] = {{"alpha", tf_attr_string("x")}};
  expect_error("LeakyRelu", TF_FLOAT32, bad, 1,
               (const char *[]){"alpha", NULL});
}
END_TEST

/* The two-input backward ops: merged shapes, mismatch errors, dtypes. */
static tf_node *build2(tf_graph *g, const char *op, tf_dtype dt, tf_shape a,
                       tf_shape b, tf_status *st) {
  static int k;
  char name[32];
  snprintf(name, sizeof name, "z%d", k++);
  tt_input x[2] = {{dt, a}, {dt, b}};
  return tt_build_node(g, op, name, x, 2, false, NULL, 0, st);
}

START_TEST(test_activation_grad_ops) {
  const char *ops[] = {"SoftsignGrad", "SeluGrad", "LeakyReluGrad",
                       "ReciprocalGrad"};
  for (int o = 0; o < 4; o++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_node *n = build2(g, ops[o], TF_FLOAT64, SHAPE(U, 3), SHAPE(2, U), &st);
    ck_assert_msg(n != NULL, "%s: %s", ops[o], st.msg);
    tf_shape want = SHAPE(2, 3);
    ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
    ck_assert_int_eq(tf_node_output_type(n, 0), TF_FLOAT64);
    n = build2(g, ops[o], TF_FLOAT32, tf_shape_unknown(), SHAPE(4), &st);
    ck_assert(n != NULL);
    want = SHAPE(4);
    ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
    n = build2(g, ops[o], TF_FLOAT32, SHAPE(2, 3), SHAPE(3, 2), &st);
    ck_assert_msg(n == NULL && strstr(st.msg, "same shape") &&
                  strstr(st.msg, ops[o]), "%s: %s", ops[o], st.msg);
    n = build2(g, ops[o], TF_INT32, SHAPE(2), SHAPE(2), &st);
    ck_assert_msg(n == NULL && strstr(st.msg, "int32"), "%s", ops[o]);
    ck_assert(tf_kernel_lookup(ops[o], TF_DEVICE_CPU, TF_FLOAT32) != NULL);
    ck_assert(tf_kernel_lookup(ops[o], TF_DEVICE_CPU, TF_FLOAT64) != NULL);
    ck_assert_str_eq(tf_op_family_of(tf_op_lookup(ops[o])), "activation");
    tf_graph_free(g);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_math_unary");
  TCase *tc = tcase_create("ops");
  tcase_add_test(tc, test_shapes_pass_through);
  tcase_add_test(tc, test_cast_graph);
  tcase_add_test(tc, test_dtype_errors);
  tcase_add_test(tc, test_kernels_match_specs);
  tcase_add_test(tc, test_predicates);
  tcase_add_test(tc, test_leaky_relu_attrs);
  tcase_add_test(tc, test_activation_grad_ops);
  suite_add_tcase(s, tc);
  return s;
}
