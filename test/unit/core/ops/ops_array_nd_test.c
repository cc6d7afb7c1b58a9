/* ops_array_nd_test.c: shape inference, dtypes and graph-validation errors
 * of GatherNd, ScatterNd and Bincount, on Placeholders of partially known
 * shape and on Consts (whose values the shape functions read). */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define UNKNOWN tf_shape_unknown()
#define SCALAR tf_shape_scalar()

/* One input: a Placeholder of dtype/shape, or a Const holding value. */
typedef struct in_spec {
  tf_dtype dt;
  tf_shape shape;
  tf_tensor *value; /* owned by the spec; released by build */
} in_spec;

#define PH(dt, sh) ((in_spec){(dt), (sh), NULL})
#define CI32(v) ((in_spec){TF_INT32, SCALAR, tf_tensor_scalar_i32(v)})
#define CVEC(dt, n, ...)                                                       \
  ((in_spec){(dt), SHAPE(n), tt_tensor_i((dt), SHAPE(n), (int64_t[]){__VA_ARGS__})})

static tf_output input_node(tf_graph *g, const in_spec *s) {
  if (s->value == NULL) {
    return (tf_output){tt_placeholder(g, NULL, s->dt, s->shape), 0};
  }
  return (tf_output){tt_const(g, NULL, s->value), 0};
}

/* Builds op "x" on inputs (each its own argument) with attrs. */
static tf_node *build(tf_graph *g, const char *op, in_spec *in, int n_in,
                      const tf_attr_kv *at, int n_at, tf_status *st) {
  tf_output o[8];
  for (int i = 0; i < n_in; i++) {
    o[i] = input_node(g, &in[i]);
  }
  tf_node_builder *b = tf_node_begin(g, op, "x");
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, o[i]);
  for (int i = 0; i < n_at; i++) tf_node_set_attr(b, at[i].name, at[i].value);
  tf_status_init(st);
  return tf_node_finish(b, st);
}

/* Output `out` of op on in must have shape want (and dtype dt unless
 * TF_DTYPE_INVALID). */
static void expect(const char *op, in_spec *in, int n_in, const tf_attr_kv *at,
                   int n_at, int out, tf_shape want, tf_dtype dt) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, in, n_in, at, n_at, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, out);
  ck_assert_msg(tf_shape_equal(got, &want), "%s output %d: %s, want %s", op,
                out, tf_shape_str(got, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
  if (dt != TF_DTYPE_INVALID) {
    ck_assert_int_eq(tf_node_output_type(n, out), dt);
  }
  tf_graph_free(g);
}

static void expect_error(const char *op, in_spec *in, int n_in,
                         const tf_attr_kv *at, int n_at, const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, in, n_in, at, n_at, &st);
  ck_assert_msg(n == NULL, "%s: expected an error about '%s'", op, needle);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "%s: '%s' lacks '%s'", op,
                st.msg, needle);
  tf_graph_free(g);
}

START_TEST(gather_nd_shapes) {
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(4, 3, 5)), PH(TF_INT32, SHAPE(2, 6, 2))};
  expect("GatherNd", a, 2, NULL, 0, 0, SHAPE(2, 6, 5), TF_FLOAT32);
  in_spec b[2] = {PH(TF_INT64, SHAPE(4, U)), PH(TF_INT64, SHAPE(7, 0))};
  expect("GatherNd", b, 2, NULL, 0, 0, SHAPE(7, 4, U), TF_INT64);
  in_spec c[2] = {PH(TF_STRING, SHAPE(4, 3)), PH(TF_INT16, SHAPE(2, 2))};
  expect("GatherNd", c, 2, NULL, 0, 0, SHAPE(2), TF_STRING);
  in_spec d[2] = {PH(TF_FLOAT64, SHAPE(4, 3)), PH(TF_INT32, SHAPE(2, U))};
  expect("GatherNd", d, 2, NULL, 0, 0, UNKNOWN, TF_FLOAT64);
  in_spec e[2] = {PH(TF_FLOAT64, UNKNOWN), PH(TF_INT32, SHAPE(2, 1))};
  expect("GatherNd", e, 2, NULL, 0, 0, UNKNOWN, TF_FLOAT64);
}
END_TEST

START_TEST(gather_nd_errors) {
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(4, 3)), PH(TF_INT32, SHAPE(2, 3))};
  expect_error("GatherNd", a, 2, NULL, 0, "indices.shape[-1] must be <= "
                                          "params.rank");
  in_spec b[2] = {PH(TF_FLOAT32, SHAPE(4, 3)), PH(TF_INT32, SCALAR)};
  expect_error("GatherNd", b, 2, NULL, 0, "indices must be at least a vector");
  in_spec c[2] = {PH(TF_FLOAT32, SCALAR), PH(TF_INT32, SHAPE(1, 0))};
  expect_error("GatherNd", c, 2, NULL, 0, "params must be at least a vector");
  in_spec d[2] = {PH(TF_FLOAT32, SHAPE(4)), PH(TF_UINT8, SHAPE(1, 1))};
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "GatherNd", d, 2, NULL, 0, &st) == NULL);
  tf_graph_free(g);
  in_spec e[2] = {PH(TF_FLOAT32, SHAPE(4)), PH(TF_INT32, SHAPE(1, 1))};
  tf_attr_kv kv = {"bad_indices_policy", tf_attr_string("IGNORE")};
  expect_error("GatherNd", e, 2, &kv, 1, "bad_indices_policy 'IGNORE'");
  in_spec f[2] = {PH(TF_FLOAT32, SHAPE(4)), PH(TF_INT32, SHAPE(1, 1))};
  kv.value = tf_attr_string("ERROR");
  expect("GatherNd", f, 2, &kv, 1, 0, SHAPE(1), TF_FLOAT32);
}
END_TEST

START_TEST(scatter_nd_shapes) {
  in_spec a[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT32, SHAPE(5, 3)),
                  CVEC(TF_INT32, 2, 8, 3)};
  expect("ScatterNd", a, 3, NULL, 0, 0, SHAPE(8, 3), TF_FLOAT32);
  in_spec b[3] = {PH(TF_INT64, SHAPE(2, 2, 3)), PH(TF_INT32, SHAPE(2, 2)),
                  CVEC(TF_INT64, 3, 4, 4, 4)};
  expect("ScatterNd", b, 3, NULL, 0, 0, SHAPE(4, 4, 4), TF_INT32);
  in_spec c[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT64, SHAPE(5, 3)),
                  PH(TF_INT32, SHAPE(2))};
  expect("ScatterNd", c, 3, NULL, 0, 0, SHAPE(U, U), TF_FLOAT64);
  in_spec d[3] = {PH(TF_INT32, UNKNOWN), PH(TF_FLOAT64, UNKNOWN),
                  PH(TF_INT32, UNKNOWN)};
  expect("ScatterNd", d, 3, NULL, 0, 0, UNKNOWN, TF_FLOAT64);
}
END_TEST

START_TEST(scatter_nd_errors) {
  in_spec a[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT32, SHAPE(4, 3)),
                  CVEC(TF_INT32, 2, 8, 3)};
  expect_error("ScatterNd", a, 3, NULL, 0, "Dimensions [0,1) of indices");
  in_spec b[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT32, SHAPE(5, 2)),
                  CVEC(TF_INT32, 2, 8, 3)};
  expect_error("ScatterNd", b, 3, NULL, 0, "updates[shape=[5,2]]");
  in_spec c[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT32, SHAPE(5)),
                  CVEC(TF_INT32, 1, -2)};
  expect_error("ScatterNd", c, 3, NULL, 0, "must be non-negative");
  in_spec d[3] = {PH(TF_INT32, SHAPE(5, 1)), PH(TF_FLOAT32, SHAPE(5)),
                  PH(TF_INT32, SHAPE(2, 2))};
  expect_error("ScatterNd", d, 3, NULL, 0, "shape must be a vector");
  in_spec e[3] = {PH(TF_INT32, SCALAR), PH(TF_FLOAT32, SHAPE(5)),
                  PH(TF_INT32, SHAPE(1))};
  expect_error("ScatterNd", e, 3, NULL, 0, "indices must be at least a vector");
  in_spec f[3] = {PH(TF_INT32, SHAPE(1, 3)), PH(TF_FLOAT32, SHAPE(1)),
                  CVEC(TF_INT32, 2, 4, 4)};
  expect_error("ScatterNd", f, 3, NULL, 0, "updates[shape=[1]]");
}
END_TEST

START_TEST(bincount_shapes) {
  in_spec a[3] = {PH(TF_INT32, SHAPE(4, 5)), CI32(7), PH(TF_FLOAT32, SHAPE(0))};
  expect("Bincount", a, 3, NULL, 0, 0, SHAPE(7), TF_FLOAT32);
  in_spec b[3] = {PH(TF_INT32, SHAPE(U)), PH(TF_INT32, SCALAR),
                  PH(TF_INT64, SHAPE(U))};
  expect("Bincount", b, 3, NULL, 0, 0, SHAPE(U), TF_INT64);
  in_spec c[3] = {PH(TF_INT32, SHAPE(3)), CI32(-1), PH(TF_FLOAT64, SHAPE(3))};
  expect_error("Bincount", c, 3, NULL, 0, "size (-1) must be non-negative");
  in_spec d[3] = {PH(TF_INT32, SHAPE(3)), PH(TF_INT32, SHAPE(1)),
                  PH(TF_FLOAT64, SHAPE(3))};
  expect_error("Bincount", d, 3, NULL, 0, "size must be a scalar");
  in_spec e[3] = {PH(TF_INT32, SHAPE(3)), CI32(2), PH(TF_INT8, SHAPE(3))};
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "Bincount", e, 3, NULL, 0, &st) == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(op_flags) {
  ck_assert(tf_op_lookup("Bincount")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(tf_op_lookup("GatherNd")->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert(!(tf_op_lookup("ScatterNd")->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert_str_eq(tf_op_family_of(tf_op_lookup("ScatterNd")), "array_nd");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array_nd");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, gather_nd_shapes);
  tcase_add_test(tc, gather_nd_errors);
  tcase_add_test(tc, scatter_nd_shapes);
  tcase_add_test(tc, scatter_nd_errors);
  tcase_add_test(tc, bincount_shapes);
  tcase_add_test(tc, op_flags);
  suite_add_tcase(s, tc);
  return s;
}
