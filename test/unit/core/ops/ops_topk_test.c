/* ops_topk_test.c: shape inference, dtypes and graph-validation errors of
 * TopKV2 and InTopKV2, on Placeholders of partially known shape and on a
 * constant k (which the TopKV2 shape function reads). */
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

START_TEST(top_k_shapes) {
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(4, 9)), CI32(3)};
  expect("TopKV2", a, 2, NULL, 0, 0, SHAPE(4, 3), TF_FLOAT32);
  in_spec b[2] = {PH(TF_INT64, SHAPE(2, U, 9)), CI32(9)};
  expect("TopKV2", b, 2, NULL, 0, 1, SHAPE(2, U, 9), TF_INT32);
  in_spec c[2] = {PH(TF_FLOAT64, SHAPE(5)), PH(TF_INT32, SCALAR)};
  expect("TopKV2", c, 2, NULL, 0, 0, SHAPE(U), TF_FLOAT64);
  in_spec d[2] = {PH(TF_FLOAT64, UNKNOWN), CI32(2)};
  expect("TopKV2", d, 2, NULL, 0, 0, UNKNOWN, TF_FLOAT64);
  in_spec e[2] = {PH(TF_UINT8, SHAPE(3, U)), CI32(0)};
  tf_attr_kv kv = {"sorted", tf_attr_bool(false)};
  expect("TopKV2", e, 2, &kv, 1, 1, SHAPE(3, 0), TF_INT32);
  in_spec f[2] = {PH(TF_BFLOAT16, SHAPE(2, 6)), CI32(6)};
  expect("TopKV2", f, 2, NULL, 0, 0, SHAPE(2, 6), TF_BFLOAT16);
  in_spec h[2] = {PH(TF_FLOAT16, SHAPE(6)), CI32(2)};
  expect("TopKV2", h, 2, NULL, 0, 1, SHAPE(2), TF_INT32);
}
END_TEST

START_TEST(top_k_errors) {
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(4, 2)), CI32(3)};
  expect_error("TopKV2", a, 2, NULL, 0, "last dimension >= k = 3 but is 2");
  in_spec b[2] = {PH(TF_FLOAT32, SHAPE(4, 2)), CI32(-1)};
  expect_error("TopKV2", b, 2, NULL, 0, "Need k >= 0, got -1");
  in_spec c[2] = {PH(TF_FLOAT32, SCALAR), CI32(1)};
  expect_error("TopKV2", c, 2, NULL, 0, "input must be at least 1-D");
  in_spec d[2] = {PH(TF_FLOAT32, SHAPE(3)), PH(TF_INT32, SHAPE(1))};
  expect_error("TopKV2", d, 2, NULL, 0, "k must be 0-D");
  in_spec e[2] = {PH(TF_BOOL, SHAPE(3)), CI32(1)};
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "TopKV2", e, 2, NULL, 0, &st) == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(in_top_k_v2_shapes) {
  in_spec a[3] = {PH(TF_FLOAT32, SHAPE(U, 10)), PH(TF_INT64, SHAPE(6)),
                  PH(TF_INT64, SCALAR)};
  expect("InTopKV2", a, 3, NULL, 0, 0, SHAPE(6), TF_BOOL);
  in_spec b[3] = {PH(TF_FLOAT32, UNKNOWN), PH(TF_INT32, UNKNOWN), CI32(1)};
  expect("InTopKV2", b, 3, NULL, 0, 0, SHAPE(U), TF_BOOL);
  in_spec c[3] = {PH(TF_FLOAT32, SHAPE(5, 4)), PH(TF_INT32, SHAPE(4)),
                  CI32(1)};
  expect_error("InTopKV2", c, 3, NULL, 0, "targets has 4 entries");
  in_spec d[3] = {PH(TF_FLOAT32, SHAPE(5)), PH(TF_INT32, SHAPE(5)), CI32(1)};
  expect_error("InTopKV2", d, 3, NULL, 0, "predictions must be 2-D");
  in_spec e[3] = {PH(TF_FLOAT32, SHAPE(5, 2)), PH(TF_INT32, SHAPE(5)),
                  PH(TF_INT32, SHAPE(1))};
  expect_error("InTopKV2", e, 3, NULL, 0, "k must be 0-D");
  /* predictions are float only; targets and k share T. */
  in_spec f[3] = {PH(TF_FLOAT64, SHAPE(5, 2)), PH(TF_INT32, SHAPE(5)),
                  CI32(1)};
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "InTopKV2", f, 3, NULL, 0, &st) == NULL);
  tf_graph_free(g);
  in_spec h[3] = {PH(TF_FLOAT32, SHAPE(5, 2)), PH(TF_INT64, SHAPE(5)),
                  CI32(1)};
  g = tf_graph_new();
  ck_assert(build(g, "InTopKV2", h, 3, NULL, 0, &st) == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(op_flags) {
  ck_assert(tf_op_lookup("InTopKV2")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(tf_op_lookup("TopKV2")->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert_str_eq(tf_op_family_of(tf_op_lookup("TopKV2")), "topk");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_topk");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, top_k_shapes);
  tcase_add_test(tc, top_k_errors);
  tcase_add_test(tc, in_top_k_v2_shapes);
  tcase_add_test(tc, op_flags);
  suite_add_tcase(s, tc);
  return s;
}
