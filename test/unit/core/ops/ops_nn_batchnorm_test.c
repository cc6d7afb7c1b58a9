/* ops_nn_batchnorm_test.c: shape inference, output dtypes, attr defaults
 * and graph-validation errors of FusedBatchNormV3 and FusedBatchNormGradV3
 * on Placeholders of partially known shape: the channel dim from
 * data_format (NHWC, NCHW) merged with the per-channel vectors, mean and
 * variance checked only when used (TF's FusedBatchNormV3Shape), the empty
 * reserve_space_4/5, and clear errors naming the input. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define FWD "FusedBatchNormV3"
#define BWD "FusedBatchNormGradV3"

typedef tt_input arg;

static arg F(tf_shape s) { return (arg){TF_FLOAT32, s}; }
static tf_shape vec(int64_t n) { return tf_shape_of(1, n); }

static void assert_shape(const tf_node *n, int i, tf_shape want) {
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, i);
  ck_assert_msg(tf_shape_equal(got, &want), "%s output %d: inferred %s, want %s",
                tf_node_op(n), i, tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

/* Builds op "bn"; NULL with the error in *st. */
static tf_node *build(tf_graph *g, const char *op, const arg *a, int n,
                      const tf_attr_kv *kv, int nk, tf_status *st) {
  tf_status_init(st);
  return tt_build_node(g, op, "bn", a, n, false, kv, nk, st);
}

/* Expects y (output 0) and the vector outputs 1..n_vec as given. */
static void expect(const char *op, const arg *a, int n, const tf_attr_kv *kv,
                   int nk, tf_shape y, tf_shape v, int n_vec) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *node = build(g, op, a, n, kv, nk, &st);
  ck_assert_msg(node != NULL, "%s: %s", op, st.msg);
  assert_shape(node, 0, y);
  for (int i = 1; i <= n_vec; i++) assert_shape(node, i, v);
  tf_graph_free(g);
}

static void expect_error(const char *op, const arg *a, int n,
                         const tf_attr_kv *kv, int nk, const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *node = build(g, op, a, n, kv, nk, &st);
  ck_assert_msg(node == NULL, "%s: expected an error", op);
  ck_assert_msg(st.code == TF_INVALID_ARGUMENT, "%s: %s", op, st.msg);
  ck_assert_msg(strstr(st.msg, needle) != NULL && strstr(st.msg, "bn") != NULL,
                "%s: '%s' not in: %s", op, needle, st.msg);
  tf_graph_free(g);
}

START_TEST(test_forward_shapes) {
  arg a[5] = {F(tf_shape_of(4, 2, U, U, 3)), F(vec(U)), F(vec(3)), F(vec(3)),
              F(vec(3))};
  expect(FWD, a, 5, NULL, 0, tf_shape_of(4, 2, U, U, 3), vec(3), 4);
  /* x of unknown rank: rank 4 with the channel from scale */
  a[0] = F(tf_shape_unknown());
  a[1] = F(vec(5)), a[2] = F(vec(U)), a[3] = F(vec(5)), a[4] = F(vec(5));
  expect(FWD, a, 5, NULL, 0, tf_shape_of(4, U, U, U, 5), vec(5), 4);
  /* NCHW: channel is dim 1 */
  tf_attr_kv nchw = {"data_format", tf_attr_string("NCHW")};
  a[0] = F(tf_shape_of(4, 2, 5, 7, 3));
  expect(FWD, a, 5, &nchw, 1, tf_shape_of(4, 2, 5, 7, 3), vec(5), 4);
  /* training with factor 1: empty mean and variance are fine */
  arg b[5] = {F(tf_shape_of(4, 2, 2, 2, 3)), F(vec(3)), F(vec(3)), F(vec(0)),
              F(vec(0))};
  expect(FWD, b, 5, NULL, 0, tf_shape_of(4, 2, 2, 2, 3), vec(3), 4);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, FWD, b, 5, NULL, 0, &st);
  ck_assert(tf_node_output_shape(n, 5)->rank == TF_UNKNOWN_RANK);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_forward_errors) {
  arg a[5] = {F(tf_shape_of(4, 2, 2, 2, 3)), F(vec(3)), F(vec(3)), F(vec(0)),
              F(vec(0))};
  tf_attr_kv inf = {"is_training", tf_attr_bool(false)};
  expect_error(FWD, a, 5, &inf, 1, "mean must have the same number");
  tf_attr_kv half = {"exponential_avg_factor", tf_attr_float(0.5)};
  expect_error(FWD, a, 5, &half, 1, "mean");
  a[3] = F(vec(3));
  expect_error(FWD, a, 5, &half, 1, "variance");
  a[4] = F(tf_shape_of(2, 1, 3));
  expect_error(FWD, a, 5, NULL, 0, "variance must be 1-dimensional");
  a[4] = F(vec(3));
  a[1] = F(vec(4));
  expect_error(FWD, a, 5, NULL, 0, "scale must have the same number");
  a[1] = F(vec(3)), a[2] = F(tf_shape_of(0));
  expect_error(FWD, a, 5, NULL, 0, "offset must be 1-dimensional");
  a[2] = F(vec(3)), a[0] = F(tf_shape_of(3, 2, 2, 3));
  expect_error(FWD, a, 5, NULL, 0, "x must be 4-dimensional");
  a[0] = F(tf_shape_of(4, 2, 2, 2, 3));
  tf_attr_kv fmt = {"data_format", tf_attr_string("NDHWC")};
  expect_error(FWD, a, 5, &fmt, 1, "NDHWC");
  a[0] = (arg){TF_FLOAT64, tf_shape_of(4, 2, 2, 2, 3)};
  expect_error(FWD, a, 5, NULL, 0, "U must be float64");
}
END_TEST

START_TEST(test_dtypes_and_defaults) {
  arg a[5] = {{TF_FLOAT16, tf_shape_of(4, 1, 2, 2, 3)}, F(vec(3)), F(vec(3)),
              F(vec(3)), F(vec(3))};
  tf_dtype dt;
  tt_infer_shape(FWD, a, 5, false, NULL, 0, 0, &dt);
  ck_assert_int_eq(dt, TF_FLOAT16);
  for (int i = 1; i < 6; i++) {
    tt_infer_shape(FWD, a, 5, false, NULL, 0, i, &dt);
    ck_assert_int_eq(dt, TF_FLOAT32);
  }
  const tf_op_def *d = tf_op_lookup(FWD);
  ck_assert(d != NULL && d->n_inputs == 5 && d->n_outputs == 6);
  ck_assert_str_eq(tf_op_family_of(d), "nn");
  ck_assert(tf_op_find_attr(d, "epsilon")->default_value.u.f == 0.0001);
  ck_assert(tf_op_find_attr(d, "exponential_avg_factor")->default_value.u.f == 1);
  ck_assert_str_eq(tf_op_find_attr(d, "data_format")->default_value.u.s, "NHWC");
  ck_assert(tf_op_find_attr(d, "is_training")->default_value.u.b);
  const tf_op_def *gd = tf_op_lookup(BWD);
  ck_assert(gd != NULL && gd->n_inputs == 6 && gd->n_outputs == 5);
  ck_assert(tf_op_find_attr(gd, "exponential_avg_factor") == NULL);
  ck_assert(gd->flags & TF_OP_NOT_DIFFERENTIABLE);
}
END_TEST

START_TEST(test_grad_shapes_and_errors) {
  arg a[6] = {F(tf_shape_of(4, 2, 3, 4, 5)), F(tf_shape_of(4, 2, 3, 4, 5)),
              F(vec(5)), F(vec(U)), F(vec(5)), F(vec(0))};
  expect(BWD, a, 6, NULL, 0, tf_shape_of(4, 2, 3, 4, 5), vec(5), 2);
  a[0] = F(tf_shape_unknown());
  a[2] = F(vec(U)), a[3] = F(vec(U)), a[4] = F(vec(U));
  tf_attr_kv nchw = {"data_format", tf_attr_string("NCHW")};
  expect(BWD, a, 6, &nchw, 1, tf_shape_of(4, 2, 3, 4, 5), vec(3), 2);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, BWD, a, 6, NULL, 0, &st);
  assert_shape(n, 3, vec(0));
  assert_shape(n, 4, vec(0));
  tf_graph_free(g);
  /* dims known in only one of y_backprop and x are merged */
  a[0] = F(tf_shape_of(4, U, 3, U, 5)), a[1] = F(tf_shape_of(4, 2, U, 4, U));
  expect(BWD, a, 6, NULL, 0, tf_shape_of(4, 2, 3, 4, 5), vec(5), 2);
  a[1] = F(tf_shape_of(4, 2, 3, 4, 5));
  a[0] = F(tf_shape_of(4, 2, 3, 1, 5));
  expect_error(BWD, a, 6, NULL, 0, "x and y_backprop must have the same shape");
  a[0] = F(tf_shape_of(4, 2, 3, 4, 5)), a[3] = F(vec(4));
  expect_error(BWD, a, 6, NULL, 0, "reserve_space_1 must have the same number");
  a[3] = F(vec(5)), a[2] = F(tf_shape_of(2, 5, 1));
  expect_error(BWD, a, 6, NULL, 0, "scale must be 1-dimensional");
  a[2] = F(vec(5)), a[1] = F(tf_shape_of(2, 5, 5));
  expect_error(BWD, a, 6, NULL, 0, "x must be 4-dimensional");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_nn_batchnorm");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_forward_shapes);
  tcase_add_test(tc, test_forward_errors);
  tcase_add_test(tc, test_dtypes_and_defaults);
  tcase_add_test(tc, test_grad_shapes_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
