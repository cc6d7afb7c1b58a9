/* ops_random_test.c: shape inference, attr defaults and graph-validation
 * errors of the random ops (RandomUniform, RandomStandardNormal,
 * RandomNormal, TruncatedNormal, RandomUniformInt, RandomShuffle) on
 * Placeholders of partially known shape and on Const shape vectors. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const char *const float_ops[] = {"RandomUniform", "RandomStandardNormal",
                                        "RandomNormal", "TruncatedNormal"};

static tf_output placeholder(tf_graph *g, tf_dtype dt, tf_shape shape) {
  return (tf_output){tt_placeholder(g, NULL, dt, shape), 0};
}

/* A Const int64 vector (takes ownership of t). */
static tf_output constant(tf_graph *g, tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  return (tf_output){n, 0};
}

static tf_node *float_op(tf_graph *g, const char *op, tf_output shape,
                         tf_dtype dt, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, shape);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static void check_shape(const tf_node *n, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(n != NULL, "node was not built");
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &want), "%s: inferred %s, want %s",
                tf_node_op(n), tf_shape_str(got, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}

START_TEST(float_op_shapes) {
  for (int k = 0; k < 4; k++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_node *n = float_op(g, float_ops[k], placeholder(g, TF_INT32, SHAPE(3)),
                          TF_FLOAT64, &st);
    ck_assert_msg(n != NULL, "%s", st.msg);
    check_shape(n, SHAPE(U, U, U));
    ck_assert_int_eq(tf_node_output_type(n, 0), TF_FLOAT64);
    int64_t seed = -1;
    ck_assert(tf_node_attr_get_int(n, "seed", &seed, &st) == TF_OK);
    ck_assert_int_eq(seed, 0); /* defaults filled in */
    n = float_op(g, float_ops[k], placeholder(g, TF_INT64, SHAPE(U)),
                 TF_FLOAT32, &st);
    check_shape(n, tf_shape_unknown());
    n = float_op(g, float_ops[k],
                 constant(g, tf_tensor_vec_i64(2, (int64_t[]){4, 0})),
                 TF_FLOAT32, &st);
    check_shape(n, SHAPE(4, 0));
    n = float_op(g, float_ops[k],
                 constant(g, tf_tensor_vec_i32(0, (int32_t[]){0})),
                 TF_FLOAT32, &st);
    check_shape(n, tf_shape_scalar());
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(float_op_errors) {
  for (int k = 0; k < 4; k++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    ck_assert(float_op(g, float_ops[k], placeholder(g, TF_INT32, SHAPE(2, 2)),
                       TF_FLOAT32, &st) == NULL);
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, "shape must be a vector"), "%s", st.msg);
    ck_assert(float_op(g, float_ops[k],
                       constant(g, tf_tensor_vec_i64(2, (int64_t[]){3, -2})),
                       TF_FLOAT32, &st) == NULL);
    ck_assert_msg(strstr(st.msg, "shape[1] = -2 must be >= 0"), "%s", st.msg);
    ck_assert(float_op(g, float_ops[k], placeholder(g, TF_INT32, SHAPE(9)),
                       TF_FLOAT32, &st) == NULL);
    ck_assert_msg(strstr(st.msg, "at most 8"), "%s", st.msg);
    /* dtype must be float or double; the shape must be int32/int64. */
    ck_assert(float_op(g, float_ops[k], placeholder(g, TF_INT32, SHAPE(1)),
                       TF_INT32, &st) == NULL);
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert(float_op(g, float_ops[k], placeholder(g, TF_FLOAT32, SHAPE(1)),
                       TF_FLOAT32, &st) == NULL);
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    tf_graph_free(g);
  }
}
END_TEST

static tf_node *uniform_int(tf_graph *g, tf_tensor *shape, tf_shape smin,
                            tf_dtype dt, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "RandomUniformInt", NULL);
  tf_node_add_input(b, constant(g, shape));
  tf_node_add_input(b, placeholder(g, dt, smin));
  tf_node_add_input(b, placeholder(g, dt, tf_shape_scalar()));
  tf_status_init(st);
  return tf_node_finish(b, st);
}

START_TEST(uniform_int_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = uniform_int(g, tf_tensor_vec_i32(2, (int32_t[]){2, 5}),
                           tf_shape_scalar(), TF_INT64, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  check_shape(n, SHAPE(2, 5));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT64);
  ck_assert(uniform_int(g, tf_tensor_vec_i32(1, (int32_t[]){2}), SHAPE(2),
                        TF_INT32, &st) == NULL);
  ck_assert_msg(strstr(st.msg, "minval must be 0-D"), "%s", st.msg);
  ck_assert(uniform_int(g, tf_tensor_vec_i32(1, (int32_t[]){2}),
                        tf_shape_scalar(), TF_FLOAT32, &st) == NULL);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT); /* Tout is int32/int64 */
  tf_graph_free(g);
}
END_TEST

START_TEST(shuffle_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "RandomShuffle", "s");
  tf_node_add_input(b, placeholder(g, TF_STRING, SHAPE(U, 3)));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  check_shape(n, SHAPE(U, 3));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_STRING);
  tf_graph_free(g);
}
END_TEST

START_TEST(flags) {
  const char *all[] = {"RandomUniform", "RandomStandardNormal", "RandomNormal",
                       "TruncatedNormal", "RandomUniformInt", "RandomShuffle"};
  for (int i = 0; i < 6; i++) {
    const tf_op_def *d = tf_op_lookup(all[i]);
    ck_assert_msg(d != NULL, "%s", all[i]);
    ck_assert(d->flags & TF_OP_STATEFUL);
    ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
    ck_assert_str_eq(tf_op_family_of(d), "random");
    ck_assert(tf_op_find_attr(d, "seed") && tf_op_find_attr(d, "seed2"));
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_random");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, float_op_shapes);
  tcase_add_test(tc, float_op_errors);
  tcase_add_test(tc, uniform_int_shapes);
  tcase_add_test(tc, shuffle_shapes);
  tcase_add_test(tc, flags);
  suite_add_tcase(s, tc);
  return s;
}
