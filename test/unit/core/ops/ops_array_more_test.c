/* ops_array_more_test.c: shape inference and graph-validation errors of
 * ReverseV2, BroadcastTo, SplitV, PadV2, MirrorPad, MirrorPadGrad,
 * DepthToSpace and SpaceToDepth, built on Placeholders of partially known
 * shape; shape-like inputs come from Const nodes (exact shapes, early
 * errors) or Placeholders (only what is knowable). */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_graph *g;

static tf_output ph(tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, dt, s), 0};
}

static tf_output f32(tf_shape s) { return ph(TF_FLOAT32, s); }

/* A Const node holding t (which it takes over). */
static tf_output cst(tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  return (tf_output){n, 0};
}

static tf_output ivec(int n, const int64_t *v) {
  return cst(tf_tensor_vec_i64(n, v));
}
#define IVEC(...)                                                              \
  ivec((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),             \
       (int64_t[]){__VA_ARGS__})
static tf_output iscalar(int64_t v) { return cst(tf_tensor_scalar_i32((int32_t)v)); }

static tf_status st;

/* Builds op: inputs [0, list_at) single, then n_list as one list
 * argument, then the rest single. */
static tf_node *node(const char *op, const tf_output *in, int n, int list_at,
                     int n_list, const tf_attr_kv *kv, int nkv) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n;) {
    if (i == list_at && n_list > 0) {
      tf_node_add_input_list(b, in + i, n_list);
      i += n_list;
    } else {
      tf_node_add_input(b, in[i++]);
    }
  }
  for (int i = 0; i < nkv; i++) {
    tf_node_set_attr(b, kv[i].name, kv[i].value);
  }
  tf_status_init(&st);
  return tf_node_finish(b, &st);
}

static tf_node *op2(const char *op, tf_output a, tf_output b) {
  return node(op, (tf_output[]){a, b}, 2, -1, 0, NULL, 0);
}
static tf_node *op3(const char *op, tf_output a, tf_output b, tf_output c) {
  return node(op, (tf_output[]){a, b, c}, 3, -1, 0, NULL, 0);
}

static void expect_out(tf_node *n, int i, tf_shape want) {
  ck_assert_msg(n != NULL, "%s", st.msg);
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, i);
  ck_assert_msg(tf_shape_equal(got, &want), "%s: inferred %s, want %s",
                tf_node_op(n), tf_shape_str(got, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}
static void expect(tf_node *n, tf_shape want) { expect_out(n, 0, want); }

static void expect_err(tf_node *n, const char *needle) {
  ck_assert_msg(n == NULL, "expected an error containing '%s'", needle);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle), "'%s' lacks '%s'", st.msg, needle);
}

static void setup(void) { g = tf_graph_new(); }
static void teardown(void) { tf_graph_free(g); }
static tf_tensor *mat2(int64_t rows, const int64_t *v) {
  return tt_tensor_i(TF_INT32, SHAPE(rows, 2), v);
}

START_TEST(test_reverse_v2) {
  expect(op2("ReverseV2", f32(SHAPE(U, 3, 4)), IVEC(0, -1)), SHAPE(U, 3, 4));
  expect(op2("ReverseV2", f32(SHAPE(2, 3)), ph(TF_INT32, SHAPE(1))),
         SHAPE(2, 3));
  expect(op2("ReverseV2", f32(tf_shape_unknown()), IVEC(5)),
         tf_shape_unknown());
  expect_err(op2("ReverseV2", f32(SHAPE(2, 3)), IVEC(1, -1)),
             "axis 1 specified more than once");
  expect_err(op2("ReverseV2", f32(SHAPE(2, 3)), IVEC(2)),
             "'axis'[0] = 2 is out of valid range [-2, 2)");
  expect_err(op2("ReverseV2", f32(SHAPE(2, 3)), iscalar(0)),
             "axis must be a vector");
  tf_node *n = op2("ReverseV2", ph(TF_STRING, SHAPE(2)), IVEC(0));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_STRING);
}
END_TEST

START_TEST(test_broadcast_to) {
  expect(op2("BroadcastTo", f32(SHAPE(3, 1)), IVEC(2, 3, 4)), SHAPE(2, 3, 4));
  expect(op2("BroadcastTo", f32(SHAPE(U)), IVEC(2, 5)), SHAPE(2, 5));
  expect(op2("BroadcastTo", f32(SHAPE()), IVEC(0, 2)), SHAPE(0, 2));
  expect(op2("BroadcastTo", f32(SHAPE(3)), ph(TF_INT64, SHAPE(2))),
         SHAPE(U, U));
  expect_err(op2("BroadcastTo", f32(SHAPE(3, 2)), IVEC(3, 3)),
             "Unable to broadcast tensor of shape [3,2]");
  expect_err(op2("BroadcastTo", f32(SHAPE(1, 3)), IVEC(3)),
             "Unable to broadcast");
  expect_err(op2("BroadcastTo", f32(SHAPE(1)), IVEC(-2)),
             "shape[0] = -2 must be >= 0");
}
END_TEST

static tf_node *splitv(tf_output v, tf_output sizes, tf_output dim, int num) {
  tf_attr_kv kv = {"num_split", tf_attr_int(num)};
  return node("SplitV", (tf_output[]){v, sizes, dim}, 3, -1, 0, &kv, 1);
}

START_TEST(test_split_v) {
  tf_node *n = splitv(f32(SHAPE(2, 7)), IVEC(1, -1, 4), iscalar(-1), 3);
  expect_out(n, 0, SHAPE(2, 1));
  expect_out(n, 1, SHAPE(2, 2));
  expect_out(n, 2, SHAPE(2, 4));
  n = splitv(f32(SHAPE(U, 7)), IVEC(1, -1), iscalar(0), 2);
  expect_out(n, 0, SHAPE(1, 7));
  expect_out(n, 1, SHAPE(U, 7));
  n = splitv(f32(SHAPE(4, 7)), ph(TF_INT64, SHAPE(2)), iscalar(1), 2);
  expect_out(n, 1, SHAPE(4, U));
  n = splitv(f32(SHAPE(4, 7)), IVEC(3, 4), cst(tf_tensor_scalar_i32(1)), 2);
  expect_out(n, 1, SHAPE(4, 4));
  expect_err(splitv(f32(SHAPE(2, 7)), IVEC(1, 2), iscalar(1), 2),
             "Determined shape must either match input shape");
  expect_err(splitv(f32(SHAPE(2, 7)), IVEC(-1, -1), iscalar(1), 2),
             "There can only be one -1 in the input.");
  expect_err(splitv(f32(SHAPE(2, 7)), IVEC(-2, 9), iscalar(1), 2),
             "Split size at index 0 must be >= 0. Got: -2");
  expect_err(splitv(f32(SHAPE(2, 7)), IVEC(1, 6), iscalar(1), 3),
             "Length of size_splits should be equal to the value of num_split");
  expect_err(splitv(f32(SHAPE(2, 7)), IVEC(1, 6), iscalar(2), 2),
             "split_dim");
}
END_TEST

START_TEST(test_pad_v2_mirror_pad) {
  tf_output c = cst(tf_tensor_scalar_f32(2.0f));
  int64_t pv[4] = {1, 2, 0, 3};
  expect(op3("PadV2", f32(SHAPE(U, 3)), cst(mat2(2, pv)), c), SHAPE(U, 6));
  expect_err(op3("PadV2", f32(SHAPE(2, 3)), cst(mat2(2, pv)), f32(SHAPE(1))),
             "constant_values must be a scalar");
  int64_t neg[4] = {1, -2, 0, 3};
  expect_err(op3("PadV2", f32(SHAPE(2, 3)), cst(mat2(2, neg)), c),
             "Paddings must be non-negative: 1 -2");
  tf_attr_kv refl = {"mode", tf_attr_string("REFLECT")};
  tf_attr_kv sym = {"mode", tf_attr_string("SYMMETRIC")};
  int64_t mp[4] = {1, 2, 3, 0};
  tf_output in2[2] = {f32(SHAPE(3, 4)), cst(mat2(2, mp))};
  expect(node("MirrorPad", in2, 2, -1, 0, &refl, 1), SHAPE(6, 7));
  in2[0] = f32(SHAPE(2, 4));
  expect_err(node("MirrorPad", in2, 2, -1, 0, &refl, 1),
             "paddings must be less than the dimension size");
  expect(node("MirrorPad", in2, 2, -1, 0, &sym, 1), SHAPE(5, 7));
  in2[0] = f32(SHAPE(2, 2));
  expect_err(node("MirrorPad", in2, 2, -1, 0, &sym, 1),
             "paddings must be no greater than the dimension size");
  tf_attr_kv bad = {"mode", tf_attr_string("CONSTANT")};
  in2[0] = f32(SHAPE(3, 4));
  ck_assert(node("MirrorPad", in2, 2, -1, 0, &bad, 1) == NULL);
  in2[0] = f32(SHAPE(6, U));
  expect(node("MirrorPadGrad", in2, 2, -1, 0, &refl, 1), SHAPE(3, U));
  in2[0] = f32(SHAPE(2, 7));
  expect_err(node("MirrorPadGrad", in2, 2, -1, 0, &sym, 1),
             "exceed input dim 0 of size 2");
}
END_TEST

static tf_node *space(const char *op, tf_output x, int64_t b,
                      const char *fmt) {
  tf_attr_kv kv[2] = {{"block_size", tf_attr_int(b)},
                      {"data_format", tf_attr_string(fmt)}};
  return node(op, &x, 1, -1, 0, kv, 2);
}

START_TEST(test_depth_space) {
  expect(space("DepthToSpace", f32(SHAPE(2, 3, U, 12)), 2, "NHWC"),
         SHAPE(2, 6, U, 3));
  expect(space("SpaceToDepth", f32(SHAPE(2, 4, 6, 3)), 2, "NHWC"),
         SHAPE(2, 2, 3, 12));
  expect(space("SpaceToDepth", f32(tf_shape_unknown()), 3, "NHWC"),
         SHAPE(U, U, U, U));
  expect_err(space("DepthToSpace", f32(SHAPE(2, 3, 3, 10)), 2, "NHWC"),
             "Input depth dimension 10 should be divisible by: 4");
  expect_err(space("SpaceToDepth", f32(SHAPE(2, 3, 4, 1)), 2, "NHWC"),
             "should be divisible by block_size: 2");
  expect_err(space("SpaceToDepth", f32(SHAPE(3, 4, 1)), 2, "NHWC"),
             "Input rank should be: 4");
  tf_node *n = space("DepthToSpace", f32(SHAPE(1, 1, 1, 4)), 2, "NCHW");
  ck_assert(n == NULL);
  ck_assert_msg(strstr(st.msg, "only data_format NHWC is supported on CPU"),
                "%s", st.msg);
  ck_assert(space("DepthToSpace", f32(SHAPE(1, 1, 1, 4)), 1, "NHWC") == NULL);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array_more");
  TCase *tc = tcase_create("shapes");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_reverse_v2);
  tcase_add_test(tc, test_broadcast_to);
  tcase_add_test(tc, test_split_v);
  tcase_add_test(tc, test_pad_v2_mirror_pad);
  tcase_add_test(tc, test_depth_space);
  suite_add_tcase(s, tc);
  return s;
}
