/* ops_candidate_sampling_test.c: the op definitions of
 * LogUniformCandidateSampler and ComputeAccidentalHits: inferred shapes and
 * dtypes on Placeholders of partly known shape, attr defaults and flags
 * (stateful, not differentiable), and the graph-construction errors, each
 * naming the node and what is wrong. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

static tf_output placeholder(tf_graph *g, tf_dtype dt, tf_shape shape) {
  return (tf_output){tt_placeholder(g, NULL, dt, shape), 0};
}

static tf_node *sampler(tf_graph *g, tf_output tc, int64_t num_true,
                        int64_t num_sampled, bool unique, int64_t range_max,
                        tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "LogUniformCandidateSampler", "smp");
  tf_node_add_input(b, tc);
  tf_node_set_attr(b, "num_true", tf_attr_int(num_true));
  tf_node_set_attr(b, "num_sampled", tf_attr_int(num_sampled));
  tf_node_set_attr(b, "unique", tf_attr_bool(unique));
  tf_node_set_attr(b, "range_max", tf_attr_int(range_max));
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static tf_node *hits(tf_graph *g, tf_output tc, tf_output sc, int64_t num_true,
                     tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "ComputeAccidentalHits", NULL);
  tf_node_add_input(b, tc);
  tf_node_add_input(b, sc);
  tf_node_set_attr(b, "num_true", tf_attr_int(num_true));
  tf_status_init(st);
  return tf_node_finish(b, st);
}

static void check_out(const tf_node *n, int i, tf_dtype dt, tf_shape want) {
  char a[96], b[96];
  const tf_shape *got = tf_node_output_shape(n, i);
  ck_assert_msg(tf_shape_equal(got, &want), "%s:%d inferred %s, want %s",
                tf_node_op(n), i, tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
  ck_assert_int_eq(tf_node_output_type(n, i), dt);
}

START_TEST(sampler_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = sampler(g, placeholder(g, TF_INT64, tf_shape_of(2, U, 3)), 3,
                       7, true, 100, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  check_out(n, 0, TF_INT64, tf_shape_of(1, 7));
  check_out(n, 1, TF_FLOAT32, tf_shape_of(2, U, 3));
  check_out(n, 2, TF_FLOAT32, tf_shape_of(1, 7));
  int64_t seed = -1, seed2 = -1;
  ck_assert(tf_node_attr_get_int(n, "seed", &seed, &st) == TF_OK);
  ck_assert(tf_node_attr_get_int(n, "seed2", &seed2, &st) == TF_OK);
  ck_assert(seed == 0 && seed2 == 0);
  tf_graph_free(g);
  g = tf_graph_new();
  n = sampler(g, placeholder(g, TF_INT64, tf_shape_unknown()), 2, 5, false, 3,
              &st);
  ck_assert_msg(n != NULL, "%s", st.msg); /* non-unique: any range_max */
  check_out(n, 1, TF_FLOAT32, tf_shape_of(2, U, 2));
  const tf_op_def *d = tf_op_lookup("LogUniformCandidateSampler");
  ck_assert(d->flags & TF_OP_STATEFUL);
  ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
  d = tf_op_lookup("ComputeAccidentalHits");
  ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
  tf_graph_free(g);
}
END_TEST

static void expect_sampler_error(tf_shape s, tf_dtype dt, int64_t num_true,
                                 int64_t num_sampled, bool unique,
                                 int64_t range_max, const char *want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(sampler(g, placeholder(g, dt, s), num_true, num_sampled, unique,
                    range_max, &st) == NULL);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, want) && strstr(st.msg, "smp"), "'%s' lacks "
                "'%s' or the node name", st.msg, want);
  tf_graph_free(g);
}

START_TEST(sampler_errors) {
  tf_shape m = tf_shape_of(2, 4, 2);
  expect_sampler_error(tf_shape_of(1, 4), TF_INT64, 1, 2, false, 9,
                       "true_classes must be a matrix");
  expect_sampler_error(m, TF_INT64, 3, 2, false, 9, "num_true = 3 columns");
  expect_sampler_error(m, TF_INT64, 2, 10, true, 9,
                       "needs range_max >= num_sampled");
  expect_sampler_error(m, TF_INT64, 2, 0, false, 9, "num_sampled");
  expect_sampler_error(m, TF_INT64, 2, 2, false, 0, "range_max");
  expect_sampler_error(m, TF_INT64, 0, 2, false, 9, "num_true");
  expect_sampler_error(m, TF_INT32, 2, 2, false, 9, "int32");
}
END_TEST

START_TEST(hits_shapes_and_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output tc = placeholder(g, TF_INT64, tf_shape_of(2, 5, 2));
  tf_node *n = hits(g, tc, placeholder(g, TF_INT64, tf_shape_of(1, 8)), 2,
                    &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  check_out(n, 0, TF_INT32, tf_shape_of(1, U));
  check_out(n, 1, TF_INT64, tf_shape_of(1, U));
  check_out(n, 2, TF_FLOAT32, tf_shape_of(1, U));
  ck_assert(hits(g, tc, placeholder(g, TF_INT64, tf_shape_of(2, 8, 1)), 2,
                 &st) == NULL);
  ck_assert_msg(strstr(st.msg, "(ComputeAccidentalHits): "
                       "sampled_candidates must be a vector"), "%s", st.msg);
  ck_assert(hits(g, tc, placeholder(g, TF_INT64, tf_shape_of(1, 8)), 3,
                 &st) == NULL);
  ck_assert_msg(strstr(st.msg, "num_true = 3 columns"), "%s", st.msg);
  ck_assert(hits(g, tc, placeholder(g, TF_INT64, tf_shape_of(1, 8)), 0,
                 &st) == NULL);
  ck_assert_msg(strstr(st.msg, "num_true = 0 must be >= 1"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_candidate_sampling");
  TCase *tc = tcase_create("candidate_sampling");
  tcase_add_test(tc, sampler_shapes);
  tcase_add_test(tc, sampler_errors);
  tcase_add_test(tc, hits_shapes_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
