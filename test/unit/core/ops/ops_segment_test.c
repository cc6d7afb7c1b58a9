/* ops_segment_test.c: graph-level checks of SegmentSum and
 * UnsortedSegmentMax (ops_segment.c): inferred output shapes and dtypes
 * with known, partly known and unknown inputs, and the graph-build errors
 * (ids not a vector / not a prefix of data, size mismatch, num_segments
 * not a scalar or negative, dtypes outside the allowed sets). */
#include <string.h>

#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_output ph(tf_graph *g, tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, dt, s), 0};
}

static tf_output cst(tf_graph *g, tf_tensor *t) {
  return (tf_output){tt_const(g, NULL, t), 0};
}

static tf_node *build(tf_graph *g, const char *op, const tf_output *in, int n,
                      tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  tf_status_init(st);
  return tf_node_finish(b, st);
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

START_TEST(test_segment_sum) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output in[2] = {ph(g, TF_INT64, SHAPE(5, U, 3)), ph(g, TF_INT32, SHAPE(5))};
  tf_node *n = build(g, "SegmentSum", in, 2, &st);
  expect_shape(n, &st, SHAPE(U, U, 3));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_INT64);
  in[1] = ph(g, TF_INT64, SHAPE(4));
  expect_err(build(g, "SegmentSum", in, 2, &st), &st,
             "segment_ids should be the same size as dimension 0");
  in[1] = ph(g, TF_INT32, SHAPE(5, 1));
  expect_err(build(g, "SegmentSum", in, 2, &st), &st,
             "segment_ids should be a vector");
  in[0] = ph(g, TF_FLOAT32, tf_shape_scalar());
  in[1] = ph(g, TF_INT32, SHAPE(U));
  expect_err(build(g, "SegmentSum", in, 2, &st), &st, "rank >= 1");
  in[0] = ph(g, TF_FLOAT32, tf_shape_unknown());
  expect_shape(build(g, "SegmentSum", in, 2, &st), &st, tf_shape_unknown());
  in[0] = ph(g, TF_BOOL, SHAPE(2));
  tf_node *bad = build(g, "SegmentSum", in, 2, &st);
  ck_assert(bad == NULL && st.code == TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_unsorted_segment_max) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output in[3] = {ph(g, TF_FLOAT64, SHAPE(2, 3, 4)),
                     ph(g, TF_INT64, SHAPE(2, 3)),
                     cst(g, tf_tensor_scalar_i32(7))};
  tf_node *n = build(g, "UnsortedSegmentMax", in, 3, &st);
  expect_shape(n, &st, SHAPE(7, 4));
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_FLOAT64);
  in[2] = ph(g, TF_INT64, tf_shape_scalar());
  expect_shape(build(g, "UnsortedSegmentMax", in, 3, &st), &st, SHAPE(U, 4));
  in[1] = ph(g, TF_INT32, SHAPE(3));
  expect_err(build(g, "UnsortedSegmentMax", in, 3, &st), &st,
             "must be a prefix of data shape");
  in[1] = ph(g, TF_INT32, SHAPE(2));
  in[2] = cst(g, tf_tensor_scalar_i32(-1));
  expect_err(build(g, "UnsortedSegmentMax", in, 3, &st), &st,
             "num_segments must be >= 0");
  in[2] = ph(g, TF_INT32, SHAPE(1));
  expect_err(build(g, "UnsortedSegmentMax", in, 3, &st), &st,
             "num_segments must be a scalar");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_segment");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_segment_sum);
  tcase_add_test(tc, test_unsorted_segment_max);
  suite_add_tcase(s, tc);
  return s;
}
