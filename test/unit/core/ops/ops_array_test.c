/* ops_array_test.c: shape inference and graph-validation errors of the
 * array ops, built on Placeholders of partially known shape. Shape-like
 * inputs come either from Const nodes (the shape functions must use their
 * values: exact shapes, early errors naming the problem) or from
 * Placeholders (only what is knowable: ranks, known dims). */
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

static tf_node *op1(const char *op, tf_output a) {
  return node(op, &a, 1, -1, 0, NULL, 0);
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

START_TEST(test_shape_size_rank) {
  tf_node *n = op1("Shape", f32(SHAPE(2, U, 3)));
  expect(n, SHAPE(3));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT32);
  tf_attr_kv kv[] = {{"out_type", tf_attr_type_v(TF_INT64)}};
  tf_output x = f32(tf_shape_unknown());
  n = node("Shape", &x, 1, -1, 0, kv, 1);
  expect(n, SHAPE(U));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT64);
  expect(op1("Size", x), tf_shape_scalar());
  n = op1("Rank", ph(TF_STRING, SHAPE(2)));
  expect(n, tf_shape_scalar());
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT32);
}
END_TEST

START_TEST(test_reshape) {
  expect(op2("Reshape", f32(SHAPE(4, 3)), IVEC(-1, 6)), SHAPE(2, 6));
  expect(op2("Reshape", f32(SHAPE(U, 3)), IVEC(-1, 6)), SHAPE(U, 6));
  expect(op2("Reshape", f32(tf_shape_unknown()), IVEC(2, 5)), SHAPE(2, 5));
  expect(op2("Reshape", f32(SHAPE(0, 6)), IVEC(0, -1)), SHAPE(0, 6));
  expect(op2("Reshape", f32(SHAPE(4, 3)), ph(TF_INT32, SHAPE(3))),
         SHAPE(U, U, U));
  expect(op2("Reshape", f32(SHAPE(4, 3)), ph(TF_INT64, SHAPE(U))),
         tf_shape_unknown());
  expect_err(op2("Reshape", f32(SHAPE(4, 3)), IVEC(5, -1)),
             "12 values, but the requested shape requires a multiple of 5");
  expect_err(op2("Reshape", f32(SHAPE(4, 3)), IVEC(5, 2)),
             "tensor with 12 values, but the requested shape [5,2] has 10");
  expect_err(op2("Reshape", f32(SHAPE(U, 3)), IVEC(-1, 2, -1)),
             "Only one input size may be -1, not both 0 and 2");
  expect_err(op2("Reshape", f32(SHAPE(2)), ph(TF_INT32, SHAPE(1, 2))),
             "sizes input must be 1-D");
}
END_TEST

START_TEST(test_expand_squeeze) {
  expect(op2("ExpandDims", f32(SHAPE(2, 3)), iscalar(-1)), SHAPE(2, 3, 1));
  expect(op2("ExpandDims", f32(SHAPE(2, 3)), iscalar(0)), SHAPE(1, 2, 3));
  expect(op2("ExpandDims", f32(SHAPE(2, U)), ph(TF_INT32, tf_shape_scalar())),
         SHAPE(U, U, U));
  expect_err(op2("ExpandDims", f32(SHAPE(2, 3)), iscalar(4)),
             "dim in the range [-3, 3), but got 4");
  expect(op1("Squeeze", f32(SHAPE(1, 2, 1, 3))), SHAPE(2, 3));
  expect(op1("Squeeze", f32(SHAPE(1, U, 3))), tf_shape_unknown());
  tf_attr_kv kv[] = {{"squeeze_dims", tf_attr_int_list((int64_t[]){0, -2}, 2)}};
  tf_output x = f32(SHAPE(1, U, 1, 3));
  expect(node("Squeeze", &x, 1, -1, 0, kv, 1), SHAPE(U, 3));
  kv[0].value = tf_attr_int_list((int64_t[]){3}, 1);
  expect_err(node("Squeeze", &x, 1, -1, 0, kv, 1),
             "Can not squeeze dim[3], expected a dimension of 1, got 3");
}
END_TEST

START_TEST(test_transpose) {
  expect(op2("Transpose", f32(SHAPE(2, U, 4)), IVEC(1, 0, 2)),
         SHAPE(U, 2, 4));
  expect(op2("Transpose", f32(tf_shape_unknown()), IVEC(1, 0)), SHAPE(U, U));
  expect(op2("Transpose", f32(SHAPE(2, 3, 4)), ph(TF_INT32, SHAPE(3))),
         SHAPE(U, U, U));
  expect_err(op2("Transpose", f32(SHAPE(2, 3, 4)), ph(TF_INT32, SHAPE(2))),
             "transpose expects a vector of size 3");
  expect_err(op2("Transpose", f32(SHAPE(2, 3)), IVEC(0, 2)),
             "perm[1] = 2 is out of range [0 .. 2)");
  expect_err(op2("Transpose", f32(SHAPE(2, 3)), IVEC(1, 1)),
             "1 appears twice");
}
END_TEST

/* ConcatV2(xs..., axis) when v2, else Concat(axis, xs...). */
static tf_node *concat_op(bool v2, const tf_output *xs, int n,
                          tf_output axis) {
  tf_output in[8];
  memcpy(in + !v2, xs, (size_t)n * sizeof(tf_output));
  in[v2 ? n : 0] = axis;
  return node(v2 ? "ConcatV2" : "Concat", in, n + 1, v2 ? 0 : 1, n, NULL, 0);
}

/* The same shape rules for both: the axis input only moves. */
static void check_concat_shapes(bool v2) {
  tf_output a = f32(SHAPE(2, 3)), b = f32(SHAPE(2, 4)), c = f32(SHAPE(U, U));
  expect(concat_op(v2, (tf_output[]){a, b}, 2, iscalar(1)), SHAPE(2, 7));
  expect(concat_op(v2, (tf_output[]){a, b, c}, 3, iscalar(-1)), SHAPE(2, U));
  expect(concat_op(v2, (tf_output[]){c, a}, 2, iscalar(0)), SHAPE(U, 3));
  expect(concat_op(v2, (tf_output[]){a, c}, 2, iscalar(-2)), SHAPE(U, 3));
  expect(concat_op(v2, (tf_output[]){a, f32(tf_shape_unknown())}, 2,
                   iscalar(0)),
         SHAPE(U, 3));
  expect(concat_op(v2, (tf_output[]){a, b}, 2,
                   ph(TF_INT32, tf_shape_scalar())),
         SHAPE(U, U));
  tf_output d = f32(SHAPE(5, 4));
  expect_err(concat_op(v2, (tf_output[]){a, b, d}, 3, iscalar(1)),
             "Dimension 0 in both shapes must be equal: shape[1] = [2,4] vs. "
             "shape[2] = [5,4]");
  expect_err(concat_op(v2, (tf_output[]){a, f32(SHAPE(2, 3, 1))}, 2,
                       iscalar(0)),
             "Ranks of all input tensors should match: shape[0] = [2,3] vs. "
             "shape[1] = [2,3,1]");
  expect_err(concat_op(v2, (tf_output[]){a, b}, 2, iscalar(2)),
             "in the range [-2, 2), but got 2");
  expect_err(concat_op(v2, (tf_output[]){a, b}, 2, iscalar(-3)),
             "in the range [-2, 2), but got -3");
  expect_err(concat_op(v2,
                       (tf_output[]){f32(tf_shape_scalar()),
                                     f32(tf_shape_scalar())},
                       2, iscalar(0)),
             "Can't concatenate scalars");
  expect_err(concat_op(v2, (tf_output[]){a, b}, 2, ph(TF_INT32, SHAPE(1))),
             v2 ? "axis must be a scalar, got shape [1]"
                : "concat_dim must be a scalar, got shape [1]");
  /* N >= 2 */
  tf_node *n = concat_op(v2, &a, 1, iscalar(0));
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
}

START_TEST(test_concat) {
  check_concat_shapes(true);
  check_concat_shapes(false);
  /* TF's signatures: ConcatV2(values, axis: Tidx = int32), Concat's
   * concat_dim first and int32 only. */
  const tf_op_def *v2 = tf_op_lookup("ConcatV2"), *v1 = tf_op_lookup("Concat");
  ck_assert(v2->n_inputs == 2 && v1->n_inputs == 2);
  ck_assert_str_eq(v2->inputs[0].name, "values");
  ck_assert_str_eq(v2->inputs[0].number_attr, "N");
  ck_assert_str_eq(v2->inputs[1].name, "axis");
  ck_assert_str_eq(v2->inputs[1].type_attr, "Tidx");
  ck_assert_str_eq(v1->inputs[0].name, "concat_dim");
  ck_assert_int_eq(v1->inputs[0].fixed_type, TF_INT32);
  ck_assert_str_eq(v1->inputs[1].name, "values");
  ck_assert_ptr_null(tf_op_find_attr(v1, "Tidx"));
  const tf_attr_def *tidx = tf_op_find_attr(v2, "Tidx");
  ck_assert(tidx->has_default && tidx->default_value.u.t == TF_INT32);
  ck_assert(tf_op_find_attr(v1, "N")->has_min &&
            tf_op_find_attr(v1, "N")->min == 2);
  ck_assert_ptr_null(v1->spec->deviation);
  ck_assert_ptr_null(v2->spec->deviation);
  tf_output a = f32(SHAPE(2, 3)), b = f32(SHAPE(1, 3));
  tf_output a64 = cst(tf_tensor_scalar_i64(0));
  expect(concat_op(true, (tf_output[]){a, b}, 2, a64), SHAPE(3, 3));
  ck_assert_ptr_null(concat_op(false, (tf_output[]){a, b}, 2, a64));
}
END_TEST

START_TEST(test_split_pack_unpack) {
  tf_attr_kv kv[] = {{"num_split", tf_attr_int(3)}};
  tf_node *n = node("Split", (tf_output[]){iscalar(1), f32(SHAPE(4, 6))}, 2,
                    -1, 0, kv, 1);
  ck_assert_int_eq(tf_node_num_outputs(n), 3);
  expect_out(n, 2, SHAPE(4, 2));
  n = node("Split", (tf_output[]){ph(TF_INT32, tf_shape_scalar()),
                                  f32(SHAPE(4, 6))},
           2, -1, 0, kv, 1);
  expect_out(n, 1, SHAPE(U, U));
  expect_err(node("Split", (tf_output[]){iscalar(0), f32(SHAPE(4, 6))}, 2, -1,
                  0, kv, 1),
             "split_dim 0 (size = 4) and num_split 3");
  tf_attr_kv ax[] = {{"axis", tf_attr_int(1)}, {"num", tf_attr_int(3)}};
  tf_output xs[3] = {f32(SHAPE(2, U)), f32(SHAPE(U, 3)), f32(tf_shape_unknown())};
  expect(node("Pack", xs, 3, 0, 3, ax, 1), SHAPE(2, 3, 3));
  ax[0].value = tf_attr_int(-1);
  expect(node("Pack", xs, 3, 0, 3, ax, 1), SHAPE(2, 3, 3));
  xs[2] = f32(SHAPE(3, 3));
  expect_err(node("Pack", xs, 3, 0, 3, ax, 1),
             "Shapes of all inputs must match: values[0].shape = [2,?] != "
             "values[2].shape = [3,3]");
  ax[0].value = tf_attr_int(1);
  tf_output y = f32(SHAPE(U, 3, 4));
  n = node("Unpack", &y, 1, -1, 0, ax, 2);
  ck_assert_int_eq(tf_node_num_outputs(n), 3);
  expect_out(n, 1, SHAPE(U, 4));
  ax[1].value = tf_attr_int(4);
  expect_err(node("Unpack", &y, 1, -1, 0, ax, 2),
             "Input shape axis 1 must equal 4, got shape [?,3,4]");
}
END_TEST

START_TEST(test_slice) {
  expect(op3("Slice", f32(SHAPE(4, U)), IVEC(1, 0), IVEC(-1, 2)),
         SHAPE(3, 2));
  expect(op3("Slice", f32(SHAPE(U, 5)), IVEC(1, 1), IVEC(2, -1)),
         SHAPE(2, 4));
  expect(op3("Slice", f32(SHAPE(4, 5)), ph(TF_INT64, SHAPE(2)), IVEC(2, -1)),
         SHAPE(2, U));
  expect(op3("Slice", f32(SHAPE(4, 5)), IVEC(0, 0),
             ph(TF_INT64, SHAPE(2))),
         SHAPE(U, U));
  expect_err(op3("Slice", f32(SHAPE(4, 5)), IVEC(5, 0), IVEC(1, 1)),
             "Expected begin[0] in [0, 4], but got 5");
  expect_err(op3("Slice", f32(SHAPE(4, 5)), IVEC(1, 1), IVEC(1, 5)),
             "Expected size[1] in [0, 4], but got 5");
  expect_err(op3("Slice", f32(SHAPE(4, 5)), IVEC(1), IVEC(1)),
             "1-D tensors of size 2");
}
END_TEST

static tf_node *strided(tf_output x, tf_output b, tf_output e, tf_output s,
                        int64_t bm, int64_t em, int64_t ell, int64_t na,
                        int64_t sa) {
  tf_attr_kv kv[] = {{"begin_mask", tf_attr_int(bm)},
                     {"end_mask", tf_attr_int(em)},
                     {"ellipsis_mask", tf_attr_int(ell)},
                     {"new_axis_mask", tf_attr_int(na)},
                     {"shrink_axis_mask", tf_attr_int(sa)}};
  return node("StridedSlice", (tf_output[]){x, b, e, s}, 4, -1, 0, kv, 5);
}

START_TEST(test_strided_slice) {
  tf_output x = f32(SHAPE(10, U, 4));
  /* x[1:8:3, :, -1] */
  expect(strided(x, IVEC(1, 0, -1), IVEC(8, 0, 0), IVEC(3, 1, 1), 2, 2, 0, 0,
                 4),
         SHAPE(3, U));
  /* x[..., None] */
  expect(strided(x, IVEC(0, 0), IVEC(0, 0), IVEC(1, 1), 0, 0, 1, 2, 0),
         SHAPE(10, U, 4, 1));
  /* x[::-2] */
  expect(strided(x, IVEC(0), IVEC(0), IVEC(-2), 1, 1, 0, 0, 0),
         SHAPE(5, U, 4));
  /* begin and end fed: x[b:e, 2] keeps only what masks and shrinks know */
  tf_output fed = ph(TF_INT64, SHAPE(2));
  expect(strided(x, fed, fed, IVEC(1, 1), 0, 0, 0, 0, 2), SHAPE(U, 4));
  expect(strided(x, IVEC(0), IVEC(1), ph(TF_INT64, SHAPE(1)), 0, 0, 0, 0, 0),
         tf_shape_unknown());
  expect_err(strided(x, IVEC(0), IVEC(1), IVEC(0), 0, 0, 0, 0, 0),
             "strides[0] must be non-zero");
  expect_err(strided(x, IVEC(0, 0, 4), IVEC(1, 1, 5), IVEC(1, 1, 1), 0, 0, 0,
                     0, 4),
             "slice index 4 of dimension 2 out of bounds");
  expect_err(strided(x, IVEC(0, 0), IVEC(1, 1), IVEC(1, 1), 0, 0, 3, 0, 0),
             "Multiple ellipses");
  expect_err(strided(x, IVEC(0, 0), IVEC(1), IVEC(1, 1), 0, 0, 0, 0, 0),
             "1D equal size tensors");
}
END_TEST

START_TEST(test_tile_pad_fill) {
  expect(op2("Tile", f32(SHAPE(U, 4)), IVEC(2, 3)), SHAPE(U, 12));
  expect(op2("Tile", f32(SHAPE(U, 4)), IVEC(0, 1)), SHAPE(0, 4));
  expect(op2("Tile", f32(SHAPE(U, 4)), ph(TF_INT32, SHAPE(2))), SHAPE(U, U));
  expect_err(op2("Tile", f32(SHAPE(2, 4)), IVEC(1, -1)),
             "Expected multiples[1] >= 0, but got -1");
  expect_err(op2("Tile", f32(SHAPE(2, 4)), IVEC(1, 1, 1)),
             "vector of length 2 but got length 3");
  tf_tensor *p = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){1, 2, 0, 3});
  expect(op2("Pad", f32(SHAPE(U, 3)), cst(p)), SHAPE(U, 6));
  expect(op2("Pad", f32(SHAPE(U, 3)), ph(TF_INT32, SHAPE(2, 2))),
         SHAPE(U, U));
  p = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){1, -2, 0, 3});
  expect_err(op2("Pad", f32(SHAPE(U, 3)), cst(p)),
             "Paddings must be non-negative: 1 -2");
  expect_err(op2("Pad", f32(SHAPE(U, 3)), ph(TF_INT32, SHAPE(3, 2))),
             "first dimension of paddings must be the rank");
  expect_err(op2("Pad", f32(SHAPE(U, 3)), ph(TF_INT32, SHAPE(2, 3))),
             "paddings must be a matrix with 2 columns");
  tf_output v = cst(tf_tensor_scalar_f32(1.5f));
  tf_node *n = op2("Fill", IVEC(2, 3), v);
  expect(n, SHAPE(2, 3));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_FLOAT32);
  expect(op2("Fill", ph(TF_INT32, SHAPE(3)), v), SHAPE(U, U, U));
  expect_err(op2("Fill", IVEC(2, -3), v), "dims[1] = -3 must be >= 0");
  expect_err(op2("Fill", IVEC(2), f32(SHAPE(2))), "value must be a scalar");
  expect(op1("ZerosLike", f32(SHAPE(U, 2))), SHAPE(U, 2));
  expect(op1("OnesLike", ph(TF_INT8, SHAPE(3))), SHAPE(3));
  n = op1("OnesLike", ph(TF_STRING, SHAPE(3)));
  ck_assert(n == NULL && st.code == TF_INVALID_ARGUMENT);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_array");
  TCase *tc = tcase_create("shapes");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_shape_size_rank);
  tcase_add_test(tc, test_reshape);
  tcase_add_test(tc, test_expand_squeeze);
  tcase_add_test(tc, test_transpose);
  tcase_add_test(tc, test_concat);
  tcase_add_test(tc, test_split_pack_unpack);
  tcase_add_test(tc, test_slice);
  tcase_add_test(tc, test_strided_slice);
  tcase_add_test(tc, test_tile_pad_fill);
  suite_add_tcase(s, tc);
  return s;
}
