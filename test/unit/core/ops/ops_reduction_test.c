/* ops_reduction_test.c: shape inference and graph-validation errors of the
 * reduction ops (Sum, Mean, Max, Min, Prod, ArgMax, ArgMin, All, Any),
 * built on
 * Placeholders of partially known shape, with the axes either constants
 * (exact output shapes, early errors) or fed at run time (rank only). */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_output ph(tf_graph *g, tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, dt, s), 0};
}

/* A Const node holding t (the graph keeps its own reference). */
static tf_output cst(tf_graph *g, tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  return (tf_output){n, 0};
}

static tf_node *build(tf_graph *g, const char *op, tf_output x, tf_output a,
                      const tf_attr_kv *kv, int nkv, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, x);
  tf_node_add_input(b, a);
  for (int i = 0; i < nkv; i++) {
    tf_node_set_attr(b, kv[i].name, kv[i].value);
  }
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static void expect(tf_node *n, const tf_status *st, tf_shape want) {
  ck_assert_msg(n != NULL, "%s", st->msg);
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &want), "%s: inferred %s, want %s",
                tf_node_op(n), tf_shape_str(got, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}

static void expect_err(tf_node *n, const tf_status *st, const char *needle) {
  ck_assert_msg(n == NULL, "expected an error containing '%s'", needle);
  ck_assert_int_eq(st->code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st->msg, needle), "'%s' lacks '%s'", st->msg, needle);
}

static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};

START_TEST(test_const_axes) {
  for (int k = 0; k < 5; k++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_output x = ph(g, TF_FLOAT32, SHAPE(2, U, 4));
    tf_node *n = build(g, ops[k], x, cst(g, tf_tensor_vec_i32(1, (int32_t[]){1})),
                       NULL, 0, &st);
    expect(n, &st, SHAPE(2, 4));
    ck_assert_int_eq(tf_node_output_type(n, 0), TF_FLOAT32);
    tf_attr_kv keep[] = {{"keep_dims", tf_attr_bool(true)}};
    n = build(g, ops[k], x, cst(g, tf_tensor_vec_i64(2, (int64_t[]){-1, 0})),
              keep, 1, &st);
    expect(n, &st, SHAPE(1, U, 1));
    n = build(g, ops[k], x, cst(g, tf_tensor_scalar_i32(-2)), NULL, 0, &st);
    expect(n, &st, SHAPE(2, 4));
    n = build(g, ops[k], x, cst(g, tf_tensor_vec_i32(0, NULL)), NULL, 0, &st);
    expect(n, &st, SHAPE(2, U, 4));
    n = build(g, ops[k], x, cst(g, tf_tensor_vec_i32(3, (int32_t[]){0, 1, 2})),
              NULL, 0, &st);
    expect(n, &st, tf_shape_scalar());
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_fed_axes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = ph(g, TF_FLOAT64, SHAPE(2, 3, 4));
  tf_output a = ph(g, TF_INT32, SHAPE(2));
  expect(build(g, "Sum", x, a, NULL, 0, &st), &st, SHAPE(U));
  tf_attr_kv keep[] = {{"keep_dims", tf_attr_bool(true)}};
  expect(build(g, "Mean", x, a, keep, 1, &st), &st, SHAPE(U, U, U));
  tf_output s = ph(g, TF_INT64, tf_shape_scalar());
  expect(build(g, "Max", x, s, NULL, 0, &st), &st, SHAPE(U, U));
  tf_output any = ph(g, TF_INT32, SHAPE(U));
  expect(build(g, "Min", x, any, NULL, 0, &st), &st, tf_shape_unknown());
  tf_output xu = ph(g, TF_INT32, tf_shape_unknown());
  expect(build(g, "Prod", xu, cst(g, tf_tensor_scalar_i32(0)), NULL, 0, &st),
         &st, tf_shape_unknown());
  tf_graph_free(g);
}
END_TEST

START_TEST(test_axes_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = ph(g, TF_FLOAT32, SHAPE(2, U, 4));
  expect_err(build(g, "Sum", x, cst(g, tf_tensor_scalar_i32(3)), NULL, 0, &st),
             &st, "Invalid reduction dimension (3 for input with 3");
  expect_err(build(g, "Max", x, cst(g, tf_tensor_vec_i32(2, (int32_t[]){0, -3})),
                   NULL, 0, &st),
             &st, "duplicate dimension: 0");
  expect_err(build(g, "Mean", x, ph(g, TF_INT32, SHAPE(1, 2)), NULL, 0, &st),
             &st, "reduction_indices must be a scalar or vector");
  ck_assert_msg(strstr(st.msg, "(Mean)"), "%s", st.msg);
  /* bool is not a reduction type; float axes are not an index type */
  tf_node *n = build(g, "Sum", ph(g, TF_BOOL, SHAPE(2)),
                     cst(g, tf_tensor_scalar_i32(0)), NULL, 0, &st);
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
  n = build(g, "Sum", x, ph(g, TF_FLOAT32, SHAPE(1)), NULL, 0, &st);
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_arg_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = ph(g, TF_INT32, SHAPE(2, U, 4));
  tf_node *n = build(g, "ArgMax", x, cst(g, tf_tensor_scalar_i32(1)), NULL, 0,
                     &st);
  expect(n, &st, SHAPE(2, 4));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT64);
  tf_attr_kv kv[] = {{"output_type", tf_attr_type_v(TF_INT32)}};
  n = build(g, "ArgMin", x, cst(g, tf_tensor_scalar_i64(-1)), kv, 1, &st);
  expect(n, &st, SHAPE(2, U));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT32);
  n = build(g, "ArgMax", x, ph(g, TF_INT32, tf_shape_scalar()), NULL, 0, &st);
  expect(n, &st, SHAPE(U, U));
  expect_err(build(g, "ArgMax", x, cst(g, tf_tensor_scalar_i32(3)), NULL, 0,
                   &st),
             &st, "Expected dimension in the range [-3, 3), but got 3");
  expect_err(build(g, "ArgMin", x, ph(g, TF_INT32, SHAPE(1)), NULL, 0, &st),
             &st, "dimension must be a scalar");
  tf_output e = ph(g, TF_FLOAT32, SHAPE(3, 0));
  expect_err(build(g, "ArgMax", e, cst(g, tf_tensor_scalar_i32(1)), NULL, 0,
                   &st),
             &st, "Reduction axis 1 is empty in shape [3,0]");
  tf_graph_free(g);
}
END_TEST

/* All/Any: bool in and out, the shared axis handling, no gradient. */
START_TEST(test_all_any_shapes) {
  static const char *const bops[2] = {"All", "Any"};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_output x = ph(g, TF_BOOL, SHAPE(2, U, 4));
    tf_node *n = build(g, bops[k], x, cst(g, tf_tensor_scalar_i64(-1)), NULL,
                       0, &st);
    expect(n, &st, SHAPE(2, U));
    ck_assert_int_eq(tf_node_output_type(n, 0), TF_BOOL);
    ck_assert(tf_op_lookup(bops[k])->flags & TF_OP_NOT_DIFFERENTIABLE);
    tf_attr_kv keep[] = {{"keep_dims", tf_attr_bool(true)}};
    n = build(g, bops[k], x, cst(g, tf_tensor_vec_i32(2, (int32_t[]){0, 2})),
              keep, 1, &st);
    expect(n, &st, SHAPE(1, U, 1));
    n = build(g, bops[k], x, ph(g, TF_INT32, SHAPE(2)), NULL, 0, &st);
    expect(n, &st, SHAPE(U));
    expect_err(build(g, bops[k], x, cst(g, tf_tensor_scalar_i32(3)), NULL, 0,
                     &st),
               &st, "Invalid reduction dimension (3 for input with 3");
    n = build(g, bops[k], ph(g, TF_FLOAT32, SHAPE(2)),
              cst(g, tf_tensor_scalar_i32(0)), NULL, 0, &st);
    ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
    tf_graph_free(g);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_reduction");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_const_axes);
  tcase_add_test(tc, test_fed_axes);
  tcase_add_test(tc, test_axes_errors);
  tcase_add_test(tc, test_arg_shapes);
  tcase_add_test(tc, test_all_any_shapes);
  suite_add_tcase(s, tc);
  return s;
}
