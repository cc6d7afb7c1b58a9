/* ops_array_index_test.c: shape inference and graph-validation errors of
 * Range, Gather, GatherV2, OneHot, DynamicPartition, DynamicStitch and
 * Where, on Placeholders of partially known shape and on Consts (whose
 * values shape functions may read). */
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
#define CF32(v) ((in_spec){TF_FLOAT32, SCALAR, tf_tensor_scalar_f32(v)})

static tf_output input_node(tf_graph *g, const in_spec *s) {
  if (s->value == NULL) {
    return (tf_output){tt_placeholder(g, NULL, s->dt, s->shape), 0};
  }
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(s->value));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(s->value->dtype));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return (tf_output){n, 0};
}

/* Builds op "x" on inputs; when n_list > 0 the first 2 * n_list inputs are
 * two lists of n_list (DynamicStitch's indices and data). */
static tf_node *build(tf_graph *g, const char *op, in_spec *in, int n_in,
                      int n_list, const tf_attr_kv *at, int n_at,
                      tf_status *st) {
  tf_output o[16];
  for (int i = 0; i < n_in; i++) {
    o[i] = input_node(g, &in[i]);
    tf_tensor_unref(in[i].value);
  }
  tf_node_builder *b = tf_node_begin(g, op, "x");
  if (n_list > 0) {
    tf_node_add_input_list(b, o, n_list);
    tf_node_add_input_list(b, o + n_list, n_list);
  } else {
    for (int i = 0; i < n_in; i++) tf_node_add_input(b, o[i]);
  }
  for (int i = 0; i < n_at; i++) tf_node_set_attr(b, at[i].name, at[i].value);
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static void expect(const char *op, in_spec *in, int n_in, int n_list,
                   const tf_attr_kv *at, int n_at, const tf_shape *want,
                   int n_want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, in, n_in, n_list, at, n_at, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  ck_assert_int_eq(tf_node_num_outputs(n), n_want);
  for (int i = 0; i < n_want; i++) {
    char a[128], b[128];
    const tf_shape *got = tf_node_output_shape(n, i);
    ck_assert_msg(tf_shape_equal(got, &want[i]), "%s output %d: %s, want %s",
                  op, i, tf_shape_str(got, a, sizeof(a)),
                  tf_shape_str(&want[i], b, sizeof(b)));
  }
  tf_graph_free(g);
}

static void expect1(const char *op, in_spec *in, int n_in,
                    const tf_attr_kv *at, int n_at, tf_shape want) {
  expect(op, in, n_in, 0, at, n_at, &want, 1);
}

static void expect_error(const char *op, in_spec *in, int n_in, int n_list,
                         const tf_attr_kv *at, int n_at, const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, in, n_in, n_list, at, n_at, &st);
  ck_assert_msg(n == NULL, "%s: expected an error about '%s'", op, needle);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "%s: '%s' lacks '%s'", op,
                st.msg, needle);
  tf_graph_free(g);
}

START_TEST(range_shapes) {
  in_spec a[3] = {PH(TF_INT32, SCALAR), PH(TF_INT32, SCALAR),
                  PH(TF_INT32, UNKNOWN)};
  expect1("Range", a, 3, NULL, 0, SHAPE(U));
  in_spec b[3] = {CI32(0), CI32(10), CI32(3)};
  expect1("Range", b, 3, NULL, 0, SHAPE(4));
  in_spec c[3] = {CF32(1), CF32(2), CF32(0.25f)};
  expect1("Range", c, 3, NULL, 0, SHAPE(4));
  in_spec d[3] = {CI32(10), CI32(10), CI32(-2)};
  expect1("Range", d, 3, NULL, 0, SHAPE(0));
  /* float32 sizes are computed in float32, as TF and the kernel do:
   * (1 - 0) / 0.1f rounds to 10 in float but is 10.0000001 in double. */
  in_spec e[3] = {CF32(0), CF32(1), CF32(0.1f)};
  expect1("Range", e, 3, NULL, 0, SHAPE(10));
}
END_TEST

START_TEST(range_errors) {
  in_spec a[3] = {CI32(0), CI32(10), CI32(0)};
  expect_error("Range", a, 3, 0, NULL, 0, "Requires delta != 0");
  in_spec b[3] = {CI32(10), CI32(0), CI32(1)};
  expect_error("Range", b, 3, 0, NULL, 0,
               "Requires start <= limit when delta > 0: 10/0");
  in_spec c[3] = {PH(TF_FLOAT32, SHAPE(2)), PH(TF_FLOAT32, SCALAR),
                  PH(TF_FLOAT32, SCALAR)};
  expect_error("Range", c, 3, 0, NULL, 0, "start must be a scalar");
  in_spec d[3] = {PH(TF_INT32, SCALAR), PH(TF_INT32, SCALAR),
                  PH(TF_INT32, SHAPE(1, 1))};
  expect_error("Range", d, 3, 0, NULL, 0, "delta must be a scalar");
}
END_TEST

START_TEST(gather_shapes) {
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(U, 3)), PH(TF_INT32, SHAPE(2, U))};
  expect1("Gather", a, 2, NULL, 0, SHAPE(2, U, 3));
  in_spec b[2] = {PH(TF_STRING, SHAPE(5)), PH(TF_INT64, SCALAR)};
  expect1("Gather", b, 2, NULL, 0, SCALAR);
  in_spec c[2] = {PH(TF_FLOAT32, UNKNOWN), PH(TF_INT32, SHAPE(2))};
  expect1("Gather", c, 2, NULL, 0, UNKNOWN);
  in_spec d[2] = {PH(TF_FLOAT32, SCALAR), PH(TF_INT32, SHAPE(2))};
  expect_error("Gather", d, 2, 0, NULL, 0, "at least 1 dimensional");
  in_spec e[2] = {PH(TF_FLOAT32, SHAPE(2, 2, 2, 2, 2)),
                  PH(TF_INT32, SHAPE(1, 1, 1, 1, 1))};
  expect_error("Gather", e, 2, 0, NULL, 0, "output rank 9");
  /* float indices are not allowed by Tindices. */
  tf_graph *g = tf_graph_new();
  tf_status st;
  in_spec f[2] = {PH(TF_FLOAT32, SHAPE(2)), PH(TF_FLOAT32, SHAPE(2))};
  ck_assert(build(g, "Gather", f, 2, 0, NULL, 0, &st) == NULL);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

START_TEST(gather_v2_shapes) {
  in_spec a[3] = {PH(TF_FLOAT32, SHAPE(4, 5, 6)), PH(TF_INT32, SHAPE(2)),
                  CI32(1)};
  expect1("GatherV2", a, 3, NULL, 0, SHAPE(4, 2, 6));
  in_spec b[3] = {PH(TF_FLOAT32, SHAPE(4, 5, 6)), PH(TF_INT64, SHAPE(2, 3)),
                  CI32(-1)};
  expect1("GatherV2", b, 3, NULL, 0, SHAPE(4, 5, 2, 3));
  in_spec c[3] = {PH(TF_FLOAT32, SHAPE(4, 5, 6)), PH(TF_INT32, SHAPE(2)),
                  PH(TF_INT32, SCALAR)};
  expect1("GatherV2", c, 3, NULL, 0, SHAPE(U, U, U));
  tf_attr_kv bd1[1] = {{"batch_dims", tf_attr_int(1)}};
  in_spec d[3] = {PH(TF_FLOAT32, SHAPE(2, 5, 6)), PH(TF_INT32, SHAPE(U, 3)),
                  CI32(1)};
  expect1("GatherV2", d, 3, bd1, 1, SHAPE(2, 3, 6));
  in_spec e[3] = {PH(TF_FLOAT32, SHAPE(2, 5, 6)), PH(TF_INT16, SHAPE(2, 3)),
                  CI32(2)};
  expect1("GatherV2", e, 3, bd1, 1, SHAPE(2, 5, 3));
}
END_TEST

START_TEST(gather_v2_errors) {
  in_spec a[3] = {PH(TF_FLOAT32, SHAPE(4, 5, 6)), PH(TF_INT32, SHAPE(2)),
                  CI32(3)};
  expect_error("GatherV2", a, 3, 0, NULL, 0,
               "Expected axis in the range [-3, 3), but got 3");
  in_spec b[3] = {PH(TF_FLOAT32, SHAPE(4, 5)), PH(TF_INT32, SHAPE(2)),
                  PH(TF_INT32, SHAPE(1))};
  expect_error("GatherV2", b, 3, 0, NULL, 0, "axis must be a scalar");
  tf_attr_kv bd1[1] = {{"batch_dims", tf_attr_int(1)}};
  in_spec c[3] = {PH(TF_FLOAT32, SHAPE(2, 5)), PH(TF_INT32, SHAPE(3, 4)),
                  CI32(1)};
  expect_error("GatherV2", c, 3, 0, bd1, 1,
               "params.shape[0]: 2 should be equal to indices.shape[0]: 3");
  in_spec d[3] = {PH(TF_FLOAT32, SHAPE(2, 5)), PH(TF_INT32, SHAPE(2, 4)),
                  CI32(0)};
  expect_error("GatherV2", d, 3, 0, bd1, 1,
               "batch_dims (1) must be less than or equal to axis (0)");
  tf_attr_kv bd3[1] = {{"batch_dims", tf_attr_int(3)}};
  in_spec e[3] = {PH(TF_FLOAT32, SHAPE(2, 5)), PH(TF_INT32, SHAPE(2, 4)),
                  CI32(1)};
  expect_error("GatherV2", e, 3, 0, bd3, 1, "Expected batch_dims in the range");
}
END_TEST

static void one_hot_case(tf_shape ix, in_spec depth, int64_t axis,
                         tf_shape want) {
  in_spec in[4] = {PH(TF_INT64, ix), depth, PH(TF_FLOAT32, SCALAR),
                   PH(TF_FLOAT32, SCALAR)};
  tf_attr_kv at[1] = {{"axis", tf_attr_int(axis)}};
  expect1("OneHot", in, 4, at, 1, want);
}

START_TEST(one_hot_shapes) {
  one_hot_case(SHAPE(2, U), CI32(5), -1, SHAPE(2, U, 5));
  one_hot_case(SHAPE(2, U), CI32(5), 0, SHAPE(5, 2, U));
  one_hot_case(SHAPE(2, U), CI32(5), 1, SHAPE(2, 5, U));
  one_hot_case(SHAPE(2, U), PH(TF_INT32, SCALAR), 2, SHAPE(2, U, U));
  one_hot_case(SCALAR, CI32(3), -1, SHAPE(3));
  one_hot_case(UNKNOWN, CI32(3), -1, UNKNOWN);
}
END_TEST

START_TEST(one_hot_errors) {
  tf_attr_kv a3[1] = {{"axis", tf_attr_int(3)}};
  in_spec a[4] = {PH(TF_INT32, SHAPE(2, 2)), CI32(4), PH(TF_FLOAT32, SCALAR),
                  PH(TF_FLOAT32, SCALAR)};
  expect_error("OneHot", a, 4, 0, a3, 1, "Expected axis to be -1 or between");
  tf_attr_kv am2[1] = {{"axis", tf_attr_int(-2)}};
  in_spec b[4] = {PH(TF_INT32, SHAPE(2)), CI32(4), PH(TF_FLOAT32, SCALAR),
                  PH(TF_FLOAT32, SCALAR)};
  expect_error("OneHot", b, 4, 0, am2, 1, "axis must be -1 or non-negative");
  in_spec c[4] = {PH(TF_INT32, SHAPE(2)), CI32(-1), PH(TF_FLOAT32, SCALAR),
                  PH(TF_FLOAT32, SCALAR)};
  expect_error("OneHot", c, 4, 0, NULL, 0, "depth must be non-negative, got: -1");
  in_spec d[4] = {PH(TF_INT32, SHAPE(2)), CI32(4), PH(TF_FLOAT32, SHAPE(2)),
                  PH(TF_FLOAT32, SCALAR)};
  expect_error("OneHot", d, 4, 0, NULL, 0, "on_value must be a scalar");
  in_spec e[4] = {PH(TF_INT32, SHAPE(2)), PH(TF_INT32, SHAPE(1)),
                  PH(TF_FLOAT32, SCALAR), PH(TF_FLOAT32, SCALAR)};
  expect_error("OneHot", e, 4, 0, NULL, 0, "depth must be a scalar");
}
END_TEST

START_TEST(dynamic_partition_shapes) {
  tf_attr_kv np3[1] = {{"num_partitions", tf_attr_int(3)}};
  in_spec a[2] = {PH(TF_FLOAT32, SHAPE(U, 3, 4)), PH(TF_INT32, SHAPE(5, U))};
  tf_shape w[3] = {SHAPE(U, 4), SHAPE(U, 4), SHAPE(U, 4)};
  expect("DynamicPartition", a, 2, 0, np3, 1, w, 3);
  in_spec b[2] = {PH(TF_STRING, SHAPE(6)), PH(TF_INT32, SHAPE(6))};
  tf_shape wb[3] = {SHAPE(U), SHAPE(U), SHAPE(U)};
  expect("DynamicPartition", b, 2, 0, np3, 1, wb, 3);
  in_spec c[2] = {PH(TF_FLOAT32, UNKNOWN), PH(TF_INT32, SHAPE(6))};
  tf_shape wc[3] = {UNKNOWN, UNKNOWN, UNKNOWN};
  expect("DynamicPartition", c, 2, 0, np3, 1, wc, 3);
  in_spec d[2] = {PH(TF_FLOAT32, SHAPE(4, 3)), PH(TF_INT32, SHAPE(5))};
  expect_error("DynamicPartition", d, 2, 0, np3, 1,
               "data.shape must start with partitions.shape");
  in_spec e[2] = {PH(TF_FLOAT32, SHAPE(4)), PH(TF_INT32, SHAPE(4, 1))};
  expect_error("DynamicPartition", e, 2, 0, np3, 1, "[4,1]");
  tf_attr_kv np0[1] = {{"num_partitions", tf_attr_int(0)}};
  in_spec f[2] = {PH(TF_FLOAT32, SHAPE(4)), PH(TF_INT32, SHAPE(4))};
  expect_error("DynamicPartition", f, 2, 0, np0, 1, "num_partitions");
}
END_TEST

START_TEST(dynamic_stitch_shapes) {
  tf_attr_kv n2[1] = {{"N", tf_attr_int(2)}};
  in_spec a[4] = {PH(TF_INT32, SHAPE(2)), PH(TF_INT32, SHAPE(3)),
                  PH(TF_FLOAT32, SHAPE(2, 4)), PH(TF_FLOAT32, SHAPE(3, U))};
  tf_shape w = SHAPE(U, 4);
  expect("DynamicStitch", a, 4, 2, n2, 1, &w, 1);
  tf_tensor *i1 = tf_tensor_vec_i32(3, (int32_t[]){7, 1, 2});
  in_spec b[4] = {{TF_INT32, SCALAR, tf_tensor_scalar_i32(0)},
                  {TF_INT32, SHAPE(3), i1}, PH(TF_FLOAT32, SHAPE(4)),
                  PH(TF_FLOAT32, SHAPE(3, 4))};
  w = SHAPE(8, 4);
  expect("DynamicStitch", b, 4, 2, n2, 1, &w, 1);
  in_spec c[4] = {PH(TF_INT32, SHAPE(2)), PH(TF_INT32, SHAPE(3)),
                  PH(TF_FLOAT32, SHAPE(2, 4)), PH(TF_FLOAT32, SHAPE(3, 5))};
  expect_error("DynamicStitch", c, 4, 2, n2, 1, "data[1].shape");
  in_spec d[4] = {PH(TF_INT32, SHAPE(2)), PH(TF_INT32, SHAPE(3)),
                  PH(TF_FLOAT32, SHAPE(2, 4)), PH(TF_FLOAT32, SHAPE(2, 4))};
  expect_error("DynamicStitch", d, 4, 2, n2, 1,
               "data[1].shape = [2,4] does not start with indices[1].shape = [3]");
}
END_TEST

START_TEST(where_shapes) {
  in_spec a[1] = {PH(TF_BOOL, SHAPE(2, U, 3))};
  expect1("Where", a, 1, NULL, 0, SHAPE(U, 3));
  in_spec b[1] = {PH(TF_FLOAT32, UNKNOWN)};
  expect1("Where", b, 1, NULL, 0, SHAPE(U, U));
  in_spec c[1] = {PH(TF_INT32, SCALAR)};
  expect1("Where", c, 1, NULL, 0, SHAPE(U, 0));
  tf_graph *g = tf_graph_new();
  tf_status st;
  in_spec d[1] = {PH(TF_STRING, SHAPE(2))};
  ck_assert(build(g, "Where", d, 1, 0, NULL, 0, &st) == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(op_flags) {
  ck_assert(tf_op_lookup("Range")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(tf_op_lookup("Where")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(tf_op_lookup("OneHot")->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(!(tf_op_lookup("GatherV2")->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert_str_eq(tf_op_family_of(tf_op_lookup("DynamicStitch")),
                   "array_index");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array_index");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, range_shapes);
  tcase_add_test(tc, range_errors);
  tcase_add_test(tc, gather_shapes);
  tcase_add_test(tc, gather_v2_shapes);
  tcase_add_test(tc, gather_v2_errors);
  tcase_add_test(tc, one_hot_shapes);
  tcase_add_test(tc, one_hot_errors);
  tcase_add_test(tc, dynamic_partition_shapes);
  tcase_add_test(tc, dynamic_stitch_shapes);
  tcase_add_test(tc, where_shapes);
  tcase_add_test(tc, op_flags);
  suite_add_tcase(s, tc);
  return s;
}
