/* ops_nn_depthwise_test.c: the specs and shape functions of
 * DepthwiseConv2dNative and its two backprops (ops_nn_depthwise.c): TF's
 * attrs and defaults, output shapes (out channels C * M; SAME, VALID and
 * EXPLICIT windows with strides and dilations; NCHW order; partially known
 * and unknown shapes), the backprops' shapes from constant sizes or from
 * Shape(x), and build-time errors naming the op, the input and what was
 * wrong (filter rank, channel mismatch, strides and dilations in the batch
 * or depth dimension, bad sizes vectors, out_backprop mismatches). The
 * kernels are tested in test/unit/devices/cpu/cpu_depthwise_test.c. */
#include <check.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define FWD "DepthwiseConv2dNative"
#define BIN "DepthwiseConv2dNativeBackpropInput"
#define BFI "DepthwiseConv2dNativeBackpropFilter"

typedef struct win {
  int64_t strides[4], dilations[4], pads[8];
  const char *padding, *format; /* format NULL: the default */
} win;

static tf_output ph(tf_graph *g, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, TF_FLOAT32, s), 0};
}

static tf_output ivec(tf_graph *g, int n, const int32_t *v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_vec_i32(n, v)), 0};
}

/* Builds op(in) with window w; NULL with the error in *st. */
static tf_node *build(tf_graph *g, const char *op, const tf_output *in, int n,
                      const win *w, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) tf_node_add_input(b, in[i]);
  tf_node_set_attr(b, "strides", tf_attr_int_list(w->strides, 4));
  tf_node_set_attr(b, "padding", tf_attr_string(w->padding));
  if (w->dilations[0] != 0) {
    tf_node_set_attr(b, "dilations", tf_attr_int_list(w->dilations, 4));
  }
  if (strcmp(w->padding, "EXPLICIT") == 0) {
    tf_node_set_attr(b, "explicit_paddings", tf_attr_int_list(w->pads, 8));
  }
  if (w->format != NULL) {
    tf_node_set_attr(b, "data_format", tf_attr_string(w->format));
  }
  return tf_node_finish(b, st);
}

static void expect_fwd(tf_shape in, tf_shape f, win w, tf_shape want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output io[2] = {ph(g, in), ph(g, f)};
  tf_node *n = build(g, FWD, io, 2, &w, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &want), "inferred %s, want %s",
                tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
  tf_graph_free(g);
}

/* Expects op to fail with INVALID_ARGUMENT naming needle. */
static void expect_fail(tf_graph *g, const char *op, const tf_output *in,
                        int n, win w, const char *needle) {
  tf_status st;
  ck_assert_msg(build(g, op, in, n, &w, &st) == NULL,
                "%s: expected an error naming '%s'", op, needle);
  ck_assert_msg(st.code == TF_INVALID_ARGUMENT, "%s: %s: %s", op,
                tf_code_name(st.code), st.msg);
  ck_assert_msg(strstr(st.msg, op) != NULL,
                "%s: message does not name the node: %s", op, st.msg);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "%s: '%s' not in: %s", op,
                needle, st.msg);
}

#define S1 {1, 1, 1, 1}
#define S2 {1, 2, 2, 1}
#define D2 {1, 2, 2, 1}

START_TEST(test_forward_shapes) {
  tf_shape f = tf_shape_of(4, 3, 3, 4, 3);
  expect_fwd(tf_shape_of(4, 2, 10, 9, 4), f, (win){S1, .padding = "SAME"},
             tf_shape_of(4, 2, 10, 9, 12));
  expect_fwd(tf_shape_of(4, 2, 10, 9, 4), f, (win){S2, .padding = "SAME"},
             tf_shape_of(4, 2, 5, 5, 12));
  expect_fwd(tf_shape_of(4, 2, 10, 9, 4), f, (win){S2, .padding = "VALID"},
             tf_shape_of(4, 2, 4, 4, 12));
  /* dilation 2: effective window 5 */
  expect_fwd(tf_shape_of(4, 1, 10, 9, 4), f,
             (win){S1, D2, .padding = "VALID"}, tf_shape_of(4, 1, 6, 5, 12));
  /* explicit: rows 10 + 1 + 2, cols 9 + 0 + 3 */
  expect_fwd(tf_shape_of(4, 1, 10, 9, 4), f,
             (win){S1, {0}, {0, 0, 1, 2, 0, 3, 0, 0}, "EXPLICIT", NULL},
             tf_shape_of(4, 1, 11, 10, 12));
  /* NCHW: channels in dimension 1 (shape inference accepts it) */
  expect_fwd(tf_shape_of(4, 2, 4, 10, 9), f,
             (win){{1, 1, 2, 2}, .padding = "SAME", .format = "NCHW"},
             tf_shape_of(4, 2, 12, 5, 5));
  /* unknown dims stay unknown; the depth comes from the filter */
  expect_fwd(tf_shape_of(4, U, U, 9, U), f, (win){S1, .padding = "SAME"},
             tf_shape_of(4, U, U, 9, 12));
  expect_fwd(tf_shape_of(4, 2, 8, 8, 4), tf_shape_of(4, 3, 3, 4, U),
             (win){S1, .padding = "SAME"}, tf_shape_of(4, 2, 8, 8, U));
  expect_fwd(tf_shape_unknown(), f, (win){S1, .padding = "SAME"},
             tf_shape_of(4, U, U, U, 12));
}
END_TEST

START_TEST(test_forward_errors) {
  tf_graph *g = tf_graph_new();
  win w = {S1, .padding = "SAME"};
  tf_output in[2] = {ph(g, tf_shape_of(4, 2, 8, 8, 4)),
                     ph(g, tf_shape_of(3, 3, 3, 4))};
  expect_fail(g, FWD, in, 2, w, "filter must be rank 4");
  in[1] = ph(g, tf_shape_of(4, 3, 3, 5, 2));
  expect_fail(g, FWD, in, 2, w, "in_channels");
  in[1] = ph(g, tf_shape_of(4, 3, 3, 4, 2));
  expect_fail(g, FWD, in, 2, (win){{2, 1, 1, 1}, .padding = "SAME"},
              "strides in the batch and depth");
  expect_fail(g, FWD, in, 2, (win){{1, 1, 1, 2}, .padding = "SAME"},
              "strides in the batch and depth");
  expect_fail(g, FWD, in, 2, (win){S1, {2, 1, 1, 1}, .padding = "SAME"},
              "dilations in the batch and depth");
  expect_fail(g, FWD, in, 2, (win){S1, .padding = "FULL"}, "padding");
  /* VALID dilated window (5) two rows larger than the input: TF's
   * output size (2 - 5 + 1) is negative */
  in[0] = ph(g, tf_shape_of(4, 2, 2, 8, 4));
  expect_fail(g, FWD, in, 2, (win){S1, D2, .padding = "VALID"}, "rows");
  tf_graph_free(g);
}
END_TEST

START_TEST(test_backprop_input_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  win w = {S2, .padding = "SAME"};
  const int32_t sizes[4] = {2, 9, 8, 4};
  tf_output in[3] = {ivec(g, 4, sizes), ph(g, tf_shape_of(4, 3, 3, 4, 3)),
                     ph(g, tf_shape_of(4, 2, 5, 4, 12))};
  tf_node *n = build(g, BIN, in, 3, &w, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_shape want = tf_shape_of(4, 2, 9, 8, 4);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  /* sizes from Shape(x) */
  tf_output x = ph(g, tf_shape_of(4, 2, 9, 8, 4));
  in[0] = (tf_output){tt_node(g, "Shape", NULL, &x, 1, NULL, 0), 0};
  n = build(g, BIN, in, 3, &w, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  /* sizes unknown: rank 4 of unknown dims */
  in[0] = (tf_output){tt_placeholder(g, NULL, TF_INT32, tf_shape_of(1, 4)), 0};
  n = build(g, BIN, in, 3, &w, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  want = tf_shape_of(4, U, U, U, U);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  /* errors */
  const int32_t three[3] = {2, 9, 8}, neg[4] = {2, -9, 8, 4};
  in[0] = ivec(g, 3, three);
  expect_fail(g, BIN, in, 3, w, "input_sizes");
  in[0] = ivec(g, 4, neg);
  expect_fail(g, BIN, in, 3, w, "negative");
  in[0] = ivec(g, 4, sizes);
  in[2] = ph(g, tf_shape_of(4, 2, 5, 5, 12));
  expect_fail(g, BIN, in, 3, w, "out_backprop");
  in[2] = ph(g, tf_shape_of(4, 2, 5, 4, 8));
  expect_fail(g, BIN, in, 3, w, "out_backprop");
  in[1] = ph(g, tf_shape_of(4, 3, 3, 5, 3));
  expect_fail(g, BIN, in, 3, w, "in_channels");
  tf_graph_free(g);
}
END_TEST

START_TEST(test_backprop_filter_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  win w = {S1, D2, .padding = "VALID"};
  const int32_t sizes[4] = {3, 3, 4, 2};
  tf_output in[3] = {ph(g, tf_shape_of(4, 2, 9, 8, 4)), ivec(g, 4, sizes),
                     ph(g, tf_shape_of(4, 2, 5, 4, 8))};
  tf_node *n = build(g, BFI, in, 3, &w, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_shape want = tf_shape_of(4, 3, 3, 4, 2);
  ck_assert(tf_shape_equal(tf_node_output_shape(n, 0), &want));
  const int32_t three[3] = {3, 3, 4}, depth[4] = {3, 3, 5, 2};
  in[1] = ivec(g, 3, three);
  expect_fail(g, BFI, in, 3, w, "filter_sizes");
  in[1] = ivec(g, 4, depth);
  expect_fail(g, BFI, in, 3, w, "in_channels");
  in[1] = ivec(g, 4, sizes);
  in[2] = ph(g, tf_shape_of(4, 2, 5, 4, 6));
  expect_fail(g, BFI, in, 3, w, "out_backprop");
  in[2] = ph(g, tf_shape_of(3, 2, 5, 4));
  expect_fail(g, BFI, in, 3, w, "out_backprop must be rank 4");
  tf_graph_free(g);
}
END_TEST

START_TEST(test_registry_entries) {
  static const char *ops[] = {FWD, BIN, BFI};
  for (size_t i = 0; i < TF_ARRAY_LEN(ops); i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert_msg(d != NULL, "%s not registered", ops[i]);
    ck_assert_str_eq(tf_op_family_of(d), "nn");
    ck_assert_msg(d->doc[0] != '\0', "%s has no doc", ops[i]);
    ck_assert_msg(d->shape_fn != NULL, "%s has no shape function", ops[i]);
    const tf_attr_def *dl = tf_op_find_attr(d, "dilations");
    ck_assert(dl != NULL && dl->has_default && dl->default_value.n == 4);
    const tf_attr_def *df = tf_op_find_attr(d, "data_format");
    ck_assert(df != NULL && df->has_default &&
              strcmp(df->default_value.u.s, "NHWC") == 0);
    const tf_attr_def *ep = tf_op_find_attr(d, "explicit_paddings");
    ck_assert(ep != NULL && ep->has_default && ep->default_value.n == 0);
    ck_assert(tf_op_find_attr(d, "use_cudnn_on_gpu") == NULL);
    const tf_attr_def *t = tf_op_find_attr(d, "T");
    ck_assert(t != NULL && t->n_allowed_types == 4);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_nn_depthwise");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_forward_shapes);
  tcase_add_test(tc, test_forward_errors);
  tcase_add_test(tc, test_backprop_input_shapes);
  tcase_add_test(tc, test_backprop_filter_shapes);
  tcase_add_test(tc, test_registry_entries);
  suite_add_tcase(s, tc);
  return s;
}
