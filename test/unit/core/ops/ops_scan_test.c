/* ops_scan_test.c: graph-level checks of Cumsum and Cumprod (ops_scan.c):
 * the output keeps x's shape and dtype (known, partly known or unknown),
 * the attr defaults, and the graph-build errors for a non-scalar axis, a
 * constant axis out of range, and dtypes outside the allowed sets. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_node *build(tf_graph *g, const char *op, tf_output x, tf_output a,
                      tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, x);
  tf_node_add_input(b, a);
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static tf_output ph(tf_graph *g, tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, dt, s), 0};
}

static tf_output cst(tf_graph *g, tf_tensor *t) {
  return (tf_output){tt_const(g, NULL, t), 0};
}

static void expect_shape(tf_node *n, const tf_status *st, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(n != NULL, "%s", st->msg);
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &want), "inferred %s, want %s",
                tf_shape_str(got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
}

static void expect_err(tf_node *n, const tf_status *st, const char *needle) {
  ck_assert_msg(n == NULL, "expected an error containing '%s'", needle);
  ck_assert_int_eq(st->code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st->msg, needle), "'%s' lacks '%s'", st->msg, needle);
}

START_TEST(test_shapes) {
  static const char *const ops[2] = {"Cumsum", "Cumprod"};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_node *n = build(g, ops[k], ph(g, TF_INT64, SHAPE(2, U, 4)),
                       cst(g, tf_tensor_scalar_i32(-1)), &st);
    expect_shape(n, &st, SHAPE(2, U, 4));
    ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT64);
    bool v = true;
    ck_assert_int_eq(tf_node_attr_get_bool(n, "exclusive", &v, &st), TF_OK);
    ck_assert(!v);
    ck_assert_int_eq(tf_node_attr_get_bool(n, "reverse", &v, &st), TF_OK);
    ck_assert(!v);
    n = build(g, ops[k], ph(g, TF_FLOAT32, tf_shape_unknown()),
              ph(g, TF_INT64, tf_shape_scalar()), &st);
    expect_shape(n, &st, tf_shape_unknown());
    ck_assert(!(tf_op_lookup(ops[k])->flags & TF_OP_NOT_DIFFERENTIABLE));
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = ph(g, TF_FLOAT64, SHAPE(2, 3));
  expect_err(build(g, "Cumsum", x, cst(g, tf_tensor_scalar_i32(2)), &st), &st,
             "Expected scan axis in the range [-2, 2), but got 2");
  ck_assert_msg(strstr(st.msg, "(Cumsum)"), "%s", st.msg);
  expect_err(build(g, "Cumprod", x, cst(g, tf_tensor_scalar_i64(-3)), &st),
             &st, "but got -3");
  expect_err(build(g, "Cumsum", x, ph(g, TF_INT32, SHAPE(1)), &st), &st,
             "axis must be a scalar");
  tf_node *n = build(g, "Cumsum", ph(g, TF_BOOL, SHAPE(2)),
                     cst(g, tf_tensor_scalar_i32(0)), &st);
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
  n = build(g, "Cumprod", x, ph(g, TF_FLOAT32, tf_shape_scalar()), &st);
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_scan");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
