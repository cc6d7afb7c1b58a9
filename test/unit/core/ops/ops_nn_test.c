/* ops_nn_test.c: shape inference and graph-validation errors of the nn ops
 * (Softmax, LogSoftmax, the softmax cross-entropies, Conv2D, MaxPool,
 * AvgPool, L2Loss, InTopK) on Placeholders of partially known shape. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define UNKNOWN tf_shape_unknown()

/* SHAPE(2, 3) is [2, 3]; SHAPE() is a scalar. */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){0, __VA_ARGS__}) / sizeof(int64_t)) - 1, \
                (int64_t[]){0, __VA_ARGS__} + 1)

/* An input: a Placeholder of this dtype and shape. */
typedef tt_input arg;

/* Builds op "nn" on placeholders for args[0..n_args) with attrs; NULL on
 * error (message in *st). */
static tf_node *build(tf_graph *g, const char *op, const arg *args, int n_args,
                      const tf_attr_kv *kv, int n_kv, tf_status *st) {
  return tt_build_node(g, op, "nn", args, n_args, false, kv, n_kv, st);
}

static void assert_shape(const tf_node *n, int i, tf_shape want) {
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, i);
  ck_assert_msg(tf_shape_equal(got, &want), "%s output %d: inferred %s, want %s",
                tf_node_op(n), i, tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

/* Expects outputs 0 (and 1 unless want1 is NULL) to be inferred as given. */
static void expect(const char *op, const arg *args, int n_args,
                   const tf_attr_kv *kv, int n_kv, tf_shape want0,
                   const tf_shape *want1) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, args, n_args, kv, n_kv, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  assert_shape(n, 0, want0);
  if (want1 != NULL) {
    assert_shape(n, 1, *want1);
  }
  tf_graph_free(g);
}

/* Expects construction to fail with code and every needle in the message
 * (up to three; NULL ends the list). */
static void expect_error(const char *op, const arg *args, int n_args,
                         const tf_attr_kv *kv, int n_kv, tf_code code,
                         const char *n1, const char *n2, const char *n3) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, args, n_args, kv, n_kv, &st);
  ck_assert_msg(n == NULL, "%s: expected an error", op);
  ck_assert_msg(st.code == code, "%s: got %s: %s", op, tf_code_name(st.code),
                st.msg);
  const char *needles[] = {"nn", n1, n2, n3};
  for (size_t i = 0; i < TF_ARRAY_LEN(needles) && needles[i]; i++) {
    ck_assert_msg(strstr(st.msg, needles[i]) != NULL, "%s: '%s' not in: %s",
                  op, needles[i], st.msg);
  }
  tf_graph_free(g);
}

static arg F(tf_shape s) { return (arg){TF_FLOAT32, s}; }

/* ---- softmax family ---------------------------------------------------------- */

START_TEST(test_softmax_shapes) {
  static const char *ops[] = {"Softmax", "LogSoftmax"};
  for (int i = 0; i < 2; i++) {
    arg a = F(SHAPE(U, 5));
    expect(ops[i], &a, 1, NULL, 0, SHAPE(U, 5), NULL);
    a = F(UNKNOWN);
    expect(ops[i], &a, 1, NULL, 0, UNKNOWN, NULL);
    a = F(SHAPE(2, U, 3, 7));
    expect(ops[i], &a, 1, NULL, 0, SHAPE(2, U, 3, 7), NULL);
    a = F(SHAPE());
    expect_error(ops[i], &a, 1, NULL, 0, TF_INVALID_ARGUMENT,
                 "at least 1 dimension", NULL, NULL);
    a = (arg){TF_INT32, SHAPE(3)};
    expect_error(ops[i], &a, 1, NULL, 0, TF_INVALID_ARGUMENT, "int32", NULL,
                 NULL);
  }
}
END_TEST

START_TEST(test_xent_shapes) {
  const char *op = "SoftmaxCrossEntropyWithLogits";
  arg a[2] = {F(SHAPE(U, 5)), F(SHAPE(3, U))};
  tf_shape back = SHAPE(3, 5);
  expect(op, a, 2, NULL, 0, SHAPE(3), &back);
  a[0] = F(UNKNOWN);
  a[1] = F(UNKNOWN);
  back = SHAPE(U, U);
  expect(op, a, 2, NULL, 0, SHAPE(U), &back);
  a[0] = F(SHAPE(2, 3));
  a[1] = F(SHAPE(2, 4));
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, "[2,3]", "[2,4]", NULL);
  a[0] = F(SHAPE(2, 3, 1));
  a[1] = F(UNKNOWN);
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, "features", "rank 2",
               NULL);
  a[0] = F(SHAPE(2, 3));
  a[1] = (arg){TF_FLOAT64, SHAPE(2, 3)};
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_sparse_xent_shapes) {
  const char *op = "SparseSoftmaxCrossEntropyWithLogits";
  arg a[2] = {F(SHAPE(U, 5)), {TF_INT32, SHAPE(4)}};
  tf_shape back = SHAPE(4, 5);
  expect(op, a, 2, NULL, 0, SHAPE(4), &back);
  a[1].dt = TF_INT64;
  a[0] = F(UNKNOWN);
  a[1].shape = SHAPE(U);
  back = SHAPE(U, U);
  expect(op, a, 2, NULL, 0, SHAPE(U), &back);
  a[0] = F(SHAPE(3, 5));
  a[1].shape = SHAPE(4);
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, "4", "3", NULL);
  a[1].shape = SHAPE(3, 1);
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, "labels", "rank 1",
               NULL);
  a[1] = F(SHAPE(3)); /* float labels */
  expect_error(op, a, 2, NULL, 0, TF_INVALID_ARGUMENT, NULL, NULL, NULL);
}
END_TEST

/* ---- Conv2D ------------------------------------------------------------------ */

typedef struct conv_attrs {
  int64_t strides[4], dilations[4], pads[8];
  int n_strides, n_pads;
  const char *padding, *format;
} conv_attrs;

static int conv_kv(const conv_attrs *c, tf_attr_kv *kv) {
  int n = 0;
  kv[n++] = (tf_attr_kv){"strides", tf_attr_int_list(c->strides, c->n_strides)};
  kv[n++] = (tf_attr_kv){"padding", tf_attr_string(c->padding)};
  if (c->dilations[0] != 0) {
    kv[n++] = (tf_attr_kv){"dilations", tf_attr_int_list(c->dilations, 4)};
  }
  if (c->n_pads > 0) {
    kv[n++] = (tf_attr_kv){"explicit_paddings",
                           tf_attr_int_list(c->pads, c->n_pads)};
  }
  if (c->format != NULL) {
    kv[n++] = (tf_attr_kv){"data_format", tf_attr_string(c->format)};
  }
  return n;
}

static void conv_expect(tf_shape in, tf_shape filter, conv_attrs c,
                        tf_shape want) {
  arg a[2] = {F(in), F(filter)};
  tf_attr_kv kv[5];
  expect("Conv2D", a, 2, kv, conv_kv(&c, kv), want, NULL);
}

static void conv_error(tf_shape in, tf_shape filter, conv_attrs c,
                       tf_code code, const char *n1, const char *n2) {
  arg a[2] = {F(in), F(filter)};
  tf_attr_kv kv[5];
  expect_error("Conv2D", a, 2, kv, conv_kv(&c, kv), code, n1, n2, NULL);
}

#define S1 {1, 1, 1, 1}, .n_strides = 4
#define S2 {1, 2, 2, 1}, .n_strides = 4

START_TEST(test_conv_shapes) {
  tf_shape f = SHAPE(3, 3, 3, 8);
  conv_expect(SHAPE(U, 10, U, 3), f, (conv_attrs){.strides = S2, .padding = "SAME"},
              SHAPE(U, 5, U, 8));
  conv_expect(SHAPE(U, 10, 9, 3), f, (conv_attrs){.strides = S2, .padding = "VALID"},
              SHAPE(U, 4, 4, 8));
  /* dilation 2: effective window 5 */
  conv_expect(SHAPE(2, 10, 9, 3), f,
              (conv_attrs){.strides = S2, .padding = "VALID",
                           .dilations = {1, 2, 2, 1}},
              SHAPE(2, 3, 3, 8));
  conv_expect(SHAPE(2, 10, 9, U), f,
              (conv_attrs){.strides = S1, .padding = "EXPLICIT",
                           .pads = {0, 0, 1, 2, 0, 3, 0, 0}, .n_pads = 8},
              SHAPE(2, 11, 10, 8));
  /* filter larger than the input under SAME */
  conv_expect(SHAPE(1, 2, 2, 3), SHAPE(5, 5, 3, 4),
              (conv_attrs){.strides = S1, .padding = "SAME"}, SHAPE(1, 2, 2, 4));
  /* unknown filter, unknown input */
  conv_expect(SHAPE(4, 8, 8, 3), UNKNOWN,
              (conv_attrs){.strides = S2, .padding = "VALID"}, SHAPE(4, U, U, U));
  conv_expect(UNKNOWN, f, (conv_attrs){.strides = S2, .padding = "SAME"},
              SHAPE(U, U, U, 8));
  /* NCHW is inferred (the CPU kernel rejects it at run time) */
  conv_expect(SHAPE(2, 3, 10, 9), f,
              (conv_attrs){.strides = {1, 1, 2, 2}, .n_strides = 4,
                           .padding = "SAME", .format = "NCHW"},
              SHAPE(2, 8, 5, 5));
}
END_TEST

START_TEST(test_conv_errors) {
  tf_shape f = SHAPE(3, 3, 4, 8);
  conv_error(SHAPE(U, 5, 5, 3), f, (conv_attrs){.strides = S1, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "depth 3", "in_depth 4");
  f = SHAPE(3, 3, 3, 8);
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = {1, 1, 1}, .n_strides = 3, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "strides", "got 3");
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = {1, 1, 1, 2}, .n_strides = 4, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "strides", "batch and depth");
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = {1, 0, 1, 1}, .n_strides = 4, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "strides[1] = 0", NULL);
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "SAME", .dilations = {2, 1, 1, 1}},
             TF_INVALID_ARGUMENT, "dilations", "batch and depth");
  conv_error(SHAPE(U, 1, 5, 3), f, (conv_attrs){.strides = S1, .padding = "VALID"},
             TF_INVALID_ARGUMENT, "rows", "negative");
  conv_error(SHAPE(5, 5, 3), f, (conv_attrs){.strides = S1, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "input", "rank 4");
  conv_error(SHAPE(1, 5, 5, 3), SHAPE(3, 3, 3), (conv_attrs){.strides = S1, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "filter", "rank 4");
  conv_error(SHAPE(1, 5, 5, 3), SHAPE(3, 0, 3, 2), (conv_attrs){.strides = S1, .padding = "SAME"},
             TF_INVALID_ARGUMENT, "zero elements", NULL);
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "EXPLICIT", .n_pads = 6},
             TF_INVALID_ARGUMENT, "explicit_paddings", "got 6");
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "EXPLICIT", .n_pads = 8,
                          .pads = {1, 0, 0, 0, 0, 0, 0, 0}},
             TF_INVALID_ARGUMENT, "batch and depth", NULL);
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "EXPLICIT", .n_pads = 8,
                          .pads = {0, 0, -1, 0, 0, 0, 0, 0}},
             TF_INVALID_ARGUMENT, "negative", NULL);
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "SAME", .n_pads = 8},
             TF_INVALID_ARGUMENT, "explicit_paddings", "EXPLICIT");
  conv_error(SHAPE(1, 5, 5, 3), f, (conv_attrs){.strides = S1, .padding = "FULL"},
             TF_INVALID_ARGUMENT, "FULL", NULL);
  /* huge strides and dilations must not overflow */
  conv_error(SHAPE(1, 5, 5, 3), f,
             (conv_attrs){.strides = S1, .padding = "SAME",
                          .dilations = {1, INT64_MAX / 2, 1, 1}},
             TF_INVALID_ARGUMENT, "overflow", NULL);
  conv_expect(SHAPE(1, 5, 5, 3), f,
              (conv_attrs){.strides = {1, INT64_MAX, 1, 1}, .n_strides = 4,
                           .padding = "VALID"},
              SHAPE(1, 1, 3, 8));
}
END_TEST

/* ---- pools ------------------------------------------------------------------- */

static int pool_kv(tf_attr_kv *kv, const int64_t *k, int nk, const int64_t *s,
                   const char *pad) {
  kv[0] = (tf_attr_kv){"ksize", tf_attr_int_list(k, nk)};
  kv[1] = (tf_attr_kv){"strides", tf_attr_int_list(s, 4)};
  kv[2] = (tf_attr_kv){"padding", tf_attr_string(pad)};
  return 3;
}

START_TEST(test_pool_shapes) {
  static const char *ops[] = {"MaxPool", "AvgPool"};
  const int64_t k3[] = {1, 3, 3, 1}, s2[] = {1, 2, 2, 1}, s1[] = {1, 1, 1, 1};
  const int64_t kd[] = {1, 1, 1, 2}, kb[] = {2, 1, 1, 1};
  const int64_t k5[] = {1, 3, 3, 1, 1};
  tf_attr_kv kv[3];
  for (int i = 0; i < 2; i++) {
    arg a = F(SHAPE(U, 7, 8, 3));
    expect(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s2, "SAME"), SHAPE(U, 4, 4, 3),
           NULL);
    expect(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s2, "VALID"),
           SHAPE(U, 3, 3, 3), NULL);
    a = F(UNKNOWN);
    expect(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s2, "VALID"),
           SHAPE(U, U, U, U), NULL);
    a = F(SHAPE(2, 2, 1, 5));
    expect(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s1, "SAME"),
           SHAPE(2, 2, 1, 5), NULL);
    /* rows: (2 - 3 + 1) / 1 = 0 is allowed, as in TF; cols: -1 is not */
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s1, "VALID"),
                 TF_INVALID_ARGUMENT, "cols", "negative", NULL);
    /* TF's "ksize: list(int) >= 4" when the node is built; more than 4
     * values fail in the window check */
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, k3, 3, s1, "VALID"),
                 TF_INVALID_ARGUMENT, "'ksize' has 3 elements",
                 "at least 4 required", NULL);
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, k5, 5, s1, "VALID"),
                 TF_INVALID_ARGUMENT, "ksize", "got 5", NULL);
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, kd, 4, s1, "VALID"),
                 TF_UNIMPLEMENTED, "depth", NULL, NULL);
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, kb, 4, s1, "VALID"),
                 TF_INVALID_ARGUMENT, "ksize", "batch", NULL);
    a = F(SHAPE(2, 2, 5));
    expect_error(ops[i], &a, 1, kv, pool_kv(kv, k3, 4, s1, "SAME"),
                 TF_INVALID_ARGUMENT, "input", "rank 4", NULL);
  }
}
END_TEST

/* ---- L2Loss, InTopK --------------------------------------------------------- */

START_TEST(test_misc_shapes) {
  arg a = F(SHAPE(U, 3));
  expect("L2Loss", &a, 1, NULL, 0, SHAPE(), NULL);
  a = F(UNKNOWN);
  expect("L2Loss", &a, 1, NULL, 0, SHAPE(), NULL);

  tf_attr_kv kv[] = {{"k", tf_attr_int(2)}};
  arg b[2] = {F(SHAPE(U, 10)), {TF_INT32, SHAPE(5)}};
  expect("InTopK", b, 2, kv, 1, SHAPE(5), NULL);
  b[1] = (arg){TF_INT64, UNKNOWN};
  expect("InTopK", b, 2, kv, 1, SHAPE(U), NULL);
  b[0] = F(SHAPE(4, 10));
  b[1] = (arg){TF_INT64, SHAPE(5)};
  expect_error("InTopK", b, 2, kv, 1, TF_INVALID_ARGUMENT, "5", "4", NULL);
  b[1] = (arg){TF_INT64, SHAPE(4, 1)};
  expect_error("InTopK", b, 2, kv, 1, TF_INVALID_ARGUMENT, "targets",
               "rank 1", NULL);
  b[1] = (arg){TF_INT64, SHAPE(4)};
  expect_error("InTopK", b, 2, NULL, 0, TF_INVALID_ARGUMENT, "k", NULL, NULL);

  tf_graph *g = tf_graph_new();
  tf_status st;
  b[1] = (arg){TF_INT64, SHAPE(4)};
  tf_node *n = build(g, "InTopK", b, 2, kv, 1, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_output_type(n, 0), TF_BOOL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_registry_entries) {
  static const char *ops[] = {"Softmax", "LogSoftmax",
                              "SoftmaxCrossEntropyWithLogits",
                              "SparseSoftmaxCrossEntropyWithLogits", "Conv2D",
                              "MaxPool", "AvgPool", "L2Loss", "InTopK"};
  for (size_t i = 0; i < TF_ARRAY_LEN(ops); i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert_msg(d != NULL, "%s not registered", ops[i]);
    ck_assert_str_eq(tf_op_family_of(d), "nn");
    ck_assert_msg(d->doc[0] != '\0', "%s has no doc", ops[i]);
    ck_assert_msg(d->shape_fn != NULL, "%s has no shape function", ops[i]);
  }
  const tf_attr_def *dl = tf_op_find_attr(tf_op_lookup("Conv2D"), "dilations");
  ck_assert(dl != NULL && dl->has_default && dl->default_value.n == 4);
  ck_assert(tf_op_lookup("InTopK")->flags & TF_OP_NOT_DIFFERENTIABLE);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_nn");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, test_softmax_shapes);
  tcase_add_test(tc, test_xent_shapes);
  tcase_add_test(tc, test_sparse_xent_shapes);
  tcase_add_test(tc, test_conv_shapes);
  tcase_add_test(tc, test_conv_errors);
  tcase_add_test(tc, test_pool_shapes);
  tcase_add_test(tc, test_misc_shapes);
  tcase_add_test(tc, test_registry_entries);
  suite_add_tcase(s, tc);
  return s;
}
