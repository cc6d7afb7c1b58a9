/* ops_matrix_band_test.c: graph-level checks of the matrix_band ops
 * (MatrixBandPart, MatrixDiag, MatrixDiagPart, MatrixDiagV3,
 * MatrixDiagPartV3): TF's input/attr names and defaults (Tindex = int64,
 * align = RIGHT_LEFT), inferred shapes with known, unknown-dim and
 * unknown-rank inputs and with constant or fed k/num_rows/num_cols, and
 * the shape functions' errors (ranks, k order and bounds, bad align). */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define U TF_UNKNOWN_DIM

static void assert_shape_eq(tf_shape got, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "got %s want %s",
                tf_shape_str(&got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

START_TEST(test_defs) {
  const tf_op_def *op = tf_op_lookup("MatrixBandPart");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(op->n_inputs, 3);
  ck_assert_str_eq(op->inputs[1].name, "num_lower");
  ck_assert_str_eq(op->inputs[2].name, "num_upper");
  const tf_attr_def *ti = tf_op_find_attr(op, "Tindex");
  ck_assert(ti != NULL && ti->has_default);
  ck_assert_int_eq(ti->default_value.u.t, TF_INT64);
  op = tf_op_lookup("MatrixDiagV3");
  ck_assert_ptr_nonnull(op);
  const char *names[5] = {"diagonal", "k", "num_rows", "num_cols",
                          "padding_value"};
  for (int i = 0; i < 5; i++) {
    ck_assert_str_eq(op->inputs[i].name, names[i]);
  }
  const tf_attr_def *al = tf_op_find_attr(op, "align");
  ck_assert(al != NULL && al->has_default);
  ck_assert_str_eq(al->default_value.u.s, "RIGHT_LEFT");
  ck_assert_int_eq(al->n_allowed_strings, 4);
  op = tf_op_lookup("MatrixDiagPartV3");
  ck_assert_ptr_nonnull(op);
  ck_assert_str_eq(op->inputs[2].name, "padding_value");
  ck_assert_ptr_nonnull(tf_op_lookup("MatrixDiag"));
  ck_assert_ptr_nonnull(tf_op_lookup("MatrixDiagPart"));
}
END_TEST

START_TEST(test_band_part_shape) {
  tt_input in[3] = {{TF_FLOAT32, SHAPE(2, 3, U)}, {TF_INT64, SHAPE()},
                    {TF_INT64, SHAPE()}};
  assert_shape_eq(tt_infer_shape("MatrixBandPart", in, 3, false, NULL, 0, 0,
                                 NULL), SHAPE(2, 3, U));
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  in[0].shape = SHAPE(4);
  ck_assert_ptr_null(tt_build_node(g, "MatrixBandPart", NULL, in, 3, false,
                                   NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "'input' must be at least rank 2"), "%s",
                st.msg);
  in[0].shape = SHAPE(4, 4);
  in[1].shape = SHAPE(2);
  tf_status_init(&st);
  ck_assert_ptr_null(tt_build_node(g, "MatrixBandPart", NULL, in, 3, false,
                                   NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "num_lower"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_diag_v1_shapes) {
  tt_input d = {TF_FLOAT64, SHAPE(2, 5)};
  assert_shape_eq(tt_infer_shape("MatrixDiag", &d, 1, false, NULL, 0, 0,
                                 NULL), SHAPE(2, 5, 5));
  d.shape = tf_shape_unknown();
  ck_assert_int_eq(tt_infer_shape("MatrixDiag", &d, 1, false, NULL, 0, 0,
                                  NULL).rank, TF_UNKNOWN_RANK);
  tt_input x = {TF_INT32, SHAPE(3, 4, 6)};
  assert_shape_eq(tt_infer_shape("MatrixDiagPart", &x, 1, false, NULL, 0, 0,
                                 NULL), SHAPE(3, 4));
  x.shape = SHAPE(3, U, 6);
  assert_shape_eq(tt_infer_shape("MatrixDiagPart", &x, 1, false, NULL, 0, 0,
                                 NULL), SHAPE(3, U));
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  x.shape = SHAPE(3);
  ck_assert_ptr_null(tt_build_node(g, "MatrixDiagPart", NULL, &x, 1, false,
                                   NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "MatrixDiagPart"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* Builds op on a Placeholder x of shape xs, then the inputs in[1..n)
 * (Consts, or Placeholders where in[i] is NULL: dtype int32 scalar or
 * vector, or x's dtype for the padding), with align (NULL: default).
 * Returns the inferred output shape, or checks the error contains err. */
static tf_shape build(const char *op, tf_shape xs, tf_tensor **in, int n,
                      const char *align, const char *err) {
  tf_graph *g = tf_graph_new();
  tf_output v[5];
  v[0] = (tf_output){tt_placeholder(g, NULL, TF_FLOAT32, xs), 0};
  for (int i = 1; i < n; i++) {
    bool pad = i == n - 1;
    v[i] = (tf_output){in[i] != NULL
                           ? tt_const(g, NULL, in[i])
                           : tt_placeholder(g, NULL, pad ? TF_FLOAT32
                                                         : TF_INT32,
                                            tf_shape_unknown()),
                       0};
  }
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *nb = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(nb, v[i]);
  }
  if (align != NULL) {
    tf_node_set_attr(nb, "align", tf_attr_string(align));
  }
  tf_node *node = tf_node_finish(nb, &st);
  tf_shape out = tf_shape_unknown();
  if (err != NULL) {
    ck_assert_msg(node == NULL && strstr(st.msg, err), "want error '%s', "
                  "got '%s'", err, node ? "success" : st.msg);
  } else {
    ck_assert_msg(node != NULL, "%s", st.msg);
    out = *tf_node_output_shape(node, 0);
  }
  tf_graph_free(g);
  return out;
}

static tf_tensor *kvec(int32_t lo, int32_t hi) {
  return tf_tensor_vec_i32(2, (int32_t[]){lo, hi});
}

START_TEST(test_diag_part_v3_shapes) {
  tf_tensor *in[3] = {NULL, kvec(-1, 2), tf_tensor_scalar_f32(0)};
  assert_shape_eq(build("MatrixDiagPartV3", SHAPE(2, 3, 4), in, 3, NULL,
                        NULL), SHAPE(2, 4, 3));
  in[1] = tf_tensor_scalar_i32(1);
  in[2] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagPartV3", SHAPE(2, 3, 4), in, 3,
                        "LEFT_LEFT", NULL), SHAPE(2, 3));
  in[1] = kvec(-2, -1);
  in[2] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagPartV3", SHAPE(5, U), in, 3, NULL, NULL),
                  SHAPE(2, U));
  in[1] = kvec(1, 2); /* an unknown dim bounds nothing */
  in[2] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagPartV3", SHAPE(5, U), in, 3, NULL, NULL),
                  SHAPE(2, U));
  in[1] = kvec(-4, -3);
  in[2] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagPartV3", SHAPE(U, 5), in, 3, NULL, NULL),
                  SHAPE(2, U));
  in[1] = NULL; /* fed k: the output rank is unknown */
  in[2] = tf_tensor_scalar_f32(0);
  ck_assert_int_eq(build("MatrixDiagPartV3", SHAPE(5, 5), in, 3, NULL,
                         NULL).rank, TF_UNKNOWN_RANK);
  in[1] = kvec(2, 1);
  in[2] = tf_tensor_scalar_f32(0);
  build("MatrixDiagPartV3", SHAPE(5, 5), in, 3, NULL,
        "must not be larger than upper diagonal index");
  in[1] = kvec(0, 4);
  in[2] = tf_tensor_scalar_f32(0);
  build("MatrixDiagPartV3", SHAPE(3, 4), in, 3, NULL, "out of bounds");
  in[1] = kvec(0, 1);
  in[2] = tf_tensor_scalar_f32(0);
  build("MatrixDiagPartV3", SHAPE(3, 4), in, 3, "UP_DOWN", "align");
  in[1] = tf_tensor_vec_i32(3, (int32_t[]){0, 1, 2});
  in[2] = tf_tensor_scalar_f32(0);
  build("MatrixDiagPartV3", SHAPE(3, 4), in, 3, NULL, "one or two elements");
}
END_TEST

START_TEST(test_diag_v3_shapes) {
  tf_tensor *in[5] = {NULL, kvec(-1, 1), tf_tensor_scalar_i32(-1),
                      tf_tensor_scalar_i32(-1), tf_tensor_scalar_f32(0)};
  /* 4-long diagonals in [-1, 1]: square 4 x 4. */
  assert_shape_eq(build("MatrixDiagV3", SHAPE(2, 3, 4), in, 5, NULL, NULL),
                  SHAPE(2, 4, 4));
  in[1] = tf_tensor_scalar_i32(1);
  in[2] = tf_tensor_scalar_i32(-1);
  in[3] = tf_tensor_scalar_i32(6);
  in[4] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagV3", SHAPE(2, 3), in, 5, "LEFT_RIGHT",
                        NULL), SHAPE(2, 3, 6));
  in[1] = tf_tensor_scalar_i32(0);
  in[2] = NULL; /* fed num_rows: both unknown (a -1 fed would square) */
  in[3] = tf_tensor_scalar_i32(-1);
  in[4] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagV3", SHAPE(4), in, 5, NULL, NULL),
                  SHAPE(U, U));
  in[1] = tf_tensor_scalar_i32(0);
  in[2] = NULL; /* fed num_rows, given num_cols */
  in[3] = tf_tensor_scalar_i32(7);
  in[4] = tf_tensor_scalar_f32(0);
  assert_shape_eq(build("MatrixDiagV3", SHAPE(4), in, 5, NULL, NULL),
                  SHAPE(U, 7));
  in[1] = kvec(0, 1);
  in[2] = tf_tensor_scalar_i32(-1);
  in[3] = tf_tensor_scalar_i32(-1);
  in[4] = tf_tensor_scalar_f32(0);
  build("MatrixDiagV3", SHAPE(4), in, 5, NULL, "at least rank 2");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_matrix_band");
  TCase *tc = tcase_create("matrix_band");
  tcase_add_test(tc, test_defs);
  tcase_add_test(tc, test_band_part_shape);
  tcase_add_test(tc, test_diag_v1_shapes);
  tcase_add_test(tc, test_diag_part_v3_shapes);
  tcase_add_test(tc, test_diag_v3_shapes);
  suite_add_tcase(s, tc);
  return s;
}
