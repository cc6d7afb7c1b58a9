/* grad_nn_test.c: every gradient of grad_nn.c checked against float64
 * central differences (tt_grad_check / tt_grad_check_op; atol 1e-7, rtol
 * 1e-6) on fresh random inputs: Conv2D (SAME, VALID, EXPLICIT, strides 1
 * and 2, dilation 2, batch and channels > 1, odd sizes, also with shapes
 * unknown until run time so the backprops get Shape nodes), both conv
 * backprops and AvgPoolGrad (second-order uses), MaxPool (inputs spaced
 * apart so no window has a near-tie), AvgPool, Softmax and LogSoftmax
 * (ranks 2 and 3), both softmax cross-entropies through the loss output
 * and through the backprop output, L2Loss, and a small conv net's loss.
 * Also checks TF's structure: labels of the sparse cross-entropy get no
 * gradient, the loss-only gradient of a cross-entropy adds no Softmax
 * (the backprop output's zero gradient is recognised), and MaxPool's
 * explicit_paddings reaches its MaxPoolGrad (AvgPoolGrad has none). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/session.h"

#define ATOL 1e-7
#define RTOL 1e-6

static tf_tensor *rnd(tf_shape s, double lo, double hi) {
  return tt_rand(TF_FLOAT64, s, lo, hi);
}

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

/* x with its static dims hidden: Reshape(x, Shape(x)). */
static tf_output hide_dims(tf_graph *g, tf_output x) {
  tf_output s = out0(tt_node(g, "Shape", NULL, &x, 1, NULL, 0));
  return out0(tt_node(g, "Reshape", NULL, (tf_output[]){x, s}, 2, NULL, 0));
}

/* ---- convolution ------------------------------------------------------------ */

typedef struct conv_cfg {
  int64_t strides[4], dilations[4], pads[8];
  const char *padding;
  bool hide; /* feed the op through hide_dims */
} conv_cfg;

static int conv_kv(const conv_cfg *c, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"strides", tf_attr_int_list(c->strides, 4)};
  kv[1] = (tf_attr_kv){"padding", tf_attr_string(c->padding)};
  kv[2] = (tf_attr_kv){"dilations", tf_attr_int_list(c->dilations, 4)};
  kv[3] = (tf_attr_kv){"explicit_paddings", tf_attr_int_list(c->pads, 8)};
  return strcmp(c->padding, "EXPLICIT") == 0 ? 4 : 3;
}

static tf_output build_conv(tf_graph *g, const tf_output *in, int n_in,
                            void *arg) {
  const conv_cfg *c = arg;
  tf_attr_kv kv[4];
  int n = conv_kv(c, kv);
  tf_output x = c->hide ? hide_dims(g, in[0]) : in[0];
  tf_output f = c->hide ? hide_dims(g, in[1]) : in[1];
  (void)n_in;
  return out0(tt_node(g, "Conv2D", NULL, (tf_output[]){x, f}, 2, kv, n));
}

static void check_conv(const conv_cfg *c, tf_shape xs, tf_shape fs) {
  tf_tensor *in[2] = {rnd(xs, -1, 1), rnd(fs, -1, 1)};
  tt_grad_check(build_conv, (void *)c, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}

START_TEST(test_conv2d) {
  conv_cfg c = {{1, 1, 1, 1}, {1, 1, 1, 1}, {0}, "SAME", false};
  check_conv(&c, tf_shape_of(4, 2, 5, 6, 3), tf_shape_of(4, 3, 3, 3, 4));
  c.padding = "VALID";
  check_conv(&c, tf_shape_of(4, 2, 5, 6, 3), tf_shape_of(4, 3, 2, 3, 2));
  c.strides[1] = c.strides[2] = 2;
  check_conv(&c, tf_shape_of(4, 2, 7, 6, 2), tf_shape_of(4, 3, 3, 2, 3));
  c.padding = "SAME";
  check_conv(&c, tf_shape_of(4, 3, 5, 7, 2), tf_shape_of(4, 3, 3, 2, 2));
  conv_cfg d = {{1, 1, 2, 1}, {1, 2, 2, 1}, {0}, "SAME", false};
  check_conv(&d, tf_shape_of(4, 2, 7, 6, 2), tf_shape_of(4, 2, 3, 2, 3));
  conv_cfg e = {{1, 2, 1, 1}, {1, 1, 1, 1}, {0, 0, 1, 2, 0, 1, 0, 0},
                "EXPLICIT", false};
  check_conv(&e, tf_shape_of(4, 2, 5, 4, 2), tf_shape_of(4, 3, 2, 2, 3));
}
END_TEST

START_TEST(test_conv2d_dynamic_shapes) {
  conv_cfg c = {{1, 2, 1, 1}, {1, 1, 1, 1}, {0}, "SAME", true};
  check_conv(&c, tf_shape_of(4, 2, 5, 6, 3), tf_shape_of(4, 3, 3, 3, 2));
}
END_TEST

/* Conv2DBackpropInput(Const sizes, in[0] = filter, in[1] = out_backprop)
 * or Conv2DBackpropFilter(in[0] = input, Const sizes, in[1]). */
typedef struct backprop_cfg {
  conv_cfg c;
  bool filter; /* Conv2DBackpropFilter */
  int32_t sizes[4];
} backprop_cfg;

static tf_output build_backprop(tf_graph *g, const tf_output *in, int n_in,
                                void *arg) {
  const backprop_cfg *b = arg;
  tf_attr_kv kv[4];
  int n = conv_kv(&b->c, kv);
  tf_output sz = out0(tt_const(g, NULL, tf_tensor_vec_i32(4, b->sizes)));
  (void)n_in;
  if (b->filter) {
    return out0(tt_node(g, "Conv2DBackpropFilter", NULL,
                        (tf_output[]){in[0], sz, in[1]}, 3, kv, n));
  }
  return out0(tt_node(g, "Conv2DBackpropInput", NULL,
                      (tf_output[]){sz, in[0], in[1]}, 3, kv, n));
}

START_TEST(test_conv_backprops) {
  /* input [2,5,6,3], filter [3,3,3,2], SAME stride 2: dy [2,3,3,2] */
  backprop_cfg b = {{{1, 2, 2, 1}, {1, 1, 1, 1}, {0}, "SAME", false},
                    false, {2, 5, 6, 3}};
  tf_tensor *in[2] = {rnd(tf_shape_of(4, 3, 3, 3, 2), -1, 1),
                      rnd(tf_shape_of(4, 2, 3, 3, 2), -1, 1)};
  tt_grad_check(build_backprop, &b, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
  /* input [2,5,6,3], filter [2,3,3,2], VALID: dy [2,4,4,2] */
  backprop_cfg f = {{{1, 1, 1, 1}, {1, 1, 1, 1}, {0}, "VALID", false},
                    true, {2, 3, 3, 2}};
  tf_tensor *in2[2] = {rnd(tf_shape_of(4, 2, 5, 6, 3), -1, 1),
                       rnd(tf_shape_of(4, 2, 4, 4, 2), -1, 1)};
  tt_grad_check(build_backprop, &f, in2, 2, NULL, ATOL, RTOL);
  tt_free(in2, 2);
}
END_TEST

/* ---- pooling ---------------------------------------------------------------- */

/* A random permutation of 0.05 * k: no two elements closer than 0.05. */
static tf_tensor *spaced(tf_shape s) {
  tf_tensor *t = rnd(s, 0, 1);
  double *v = t->data;
  for (int64_t i = 0; i < t->n; i++) v[i] = 0.05 * (double)i - 1;
  for (int64_t i = t->n - 1; i > 0; i--) {
    int64_t j = (int64_t)(tt_rand_u64() % (uint64_t)(i + 1));
    double tmp = v[i];
    v[i] = v[j];
    v[j] = tmp;
  }
  return t;
}

static void check_pool(const char *op, tf_tensor *x, int64_t k, int64_t s,
                       const char *pad) {
  int64_t ks[4] = {1, k, k, 1}, st[4] = {1, s, s, 1};
  tf_attr_kv kv[3] = {{"ksize", tf_attr_int_list(ks, 4)},
                      {"strides", tf_attr_int_list(st, 4)},
                      {"padding", tf_attr_string(pad)}};
  tt_grad_check_op(op, &x, 1, false, kv, 3, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}

START_TEST(test_max_pool) {
  check_pool("MaxPool", spaced(tf_shape_of(4, 2, 6, 6, 3)), 2, 2, "VALID");
  check_pool("MaxPool", spaced(tf_shape_of(4, 2, 5, 7, 2)), 3, 2, "SAME");
  check_pool("MaxPool", spaced(tf_shape_of(4, 1, 5, 5, 3)), 3, 1, "VALID");
  check_pool("MaxPool", spaced(tf_shape_of(4, 3, 7, 5, 2)), 2, 2, "SAME");
}
END_TEST

START_TEST(test_avg_pool) {
  check_pool("AvgPool", rnd(tf_shape_of(4, 2, 6, 6, 3), -1, 1), 2, 2, "VALID");
  check_pool("AvgPool", rnd(tf_shape_of(4, 2, 5, 7, 2), -1, 1), 3, 2, "SAME");
  check_pool("AvgPool", rnd(tf_shape_of(4, 1, 5, 5, 3), -1, 1), 3, 1, "SAME");
  check_pool("AvgPool", rnd(tf_shape_of(4, 3, 7, 5, 2), -1, 1), 2, 1, "VALID");
}
END_TEST

/* MaxPool with TF's explicit_paddings written out: the same gradient, and
 * the MaxPoolGrad node carries the attr, as TF's _MaxPoolGrad passes it. */
START_TEST(test_max_pool_explicit_paddings) {
  int64_t ks[4] = {1, 3, 2, 1}, sd[4] = {1, 2, 1, 1};
  tf_attr_kv kv[4] = {{"ksize", tf_attr_int_list(ks, 4)},
                      {"strides", tf_attr_int_list(sd, 4)},
                      {"padding", tf_attr_string("SAME")},
                      {"explicit_paddings", tf_attr_int_list(NULL, 0)}};
  tf_tensor *x = spaced(tf_shape_of(4, 2, 5, 4, 2));
  tt_grad_check_op("MaxPool", &x, 1, false, kv, 4, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
  const char *ops[2] = {"MaxPool", "AvgPool"};
  for (int i = 0; i < 2; i++) {
    tf_graph *g = tf_graph_new();
    tf_output in = out0(tt_placeholder(g, "x", TF_FLOAT32,
                                       tf_shape_of(4, 2, 5, 4, 2)));
    tf_output y = out0(tt_node(g, ops[i], "y", &in, 1, kv, i == 0 ? 4 : 3));
    tf_output dx;
    tf_status st;
    tf_status_init(&st);
    ck_assert_int_eq(tf_gradients(g, &y, 1, &in, 1, NULL, &dx, &st), TF_OK);
    ck_assert_str_eq(tf_node_op(dx.node), i == 0 ? "MaxPoolGrad"
                                                 : "AvgPoolGrad");
    const tf_attr_value *v = tf_node_attr(dx.node, "explicit_paddings");
    if (i == 0) {
      ck_assert(v != NULL && v->is_list && v->n == 0);
    } else {
      ck_assert_ptr_null(v);
    }
    tf_graph_free(g);
  }
}
END_TEST

static tf_output build_avg_pool_grad(tf_graph *g, const tf_output *in,
                                     int n_in, void *arg) {
  int64_t ks[4] = {1, 3, 2, 1}, st[4] = {1, 2, 1, 1};
  tf_attr_kv kv[3] = {{"ksize", tf_attr_int_list(ks, 4)},
                      {"strides", tf_attr_int_list(st, 4)},
                      {"padding", tf_attr_string("SAME")}};
  const int32_t *sizes = arg;
  tf_output sz = out0(tt_const(g, NULL, tf_tensor_vec_i32(4, sizes)));
  (void)n_in;
  return out0(tt_node(g, "AvgPoolGrad", NULL, (tf_output[]){sz, in[0]}, 2, kv,
                      3));
}

START_TEST(test_avg_pool_grad_grad) {
  /* orig input [2,5,4,3], ksize 3x2, strides 2x1, SAME: grad [2,3,4,3] */
  int32_t sizes[4] = {2, 5, 4, 3};
  tf_tensor *g = rnd(tf_shape_of(4, 2, 3, 4, 3), -1, 1);
  tt_grad_check(build_avg_pool_grad, sizes, &g, 1, NULL, ATOL, RTOL);
  tf_tensor_unref(g);
}
END_TEST

/* ---- softmax family -------------------------------------------------------- */

START_TEST(test_softmax) {
  const char *ops[2] = {"Softmax", "LogSoftmax"};
  for (int i = 0; i < 2; i++) {
    tf_tensor *x = rnd(tf_shape_of(2, 3, 5), -3, 3);
    tt_grad_check_op(ops[i], &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
    x = rnd(tf_shape_of(3, 2, 3, 4), -3, 3);
    tt_grad_check_op(ops[i], &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
    tf_tensor_unref(x);
  }
}
END_TEST

/* Random label distributions: positive rows summing to 1 (the op's
 * backprop output, softmax - labels, is the gradient only then). */
static tf_tensor *distributions(int64_t b, int64_t c) {
  tf_tensor *t = rnd(tf_shape_of(2, b, c), 0.1, 1);
  double *v = t->data;
  for (int64_t i = 0; i < b; i++) {
    double s = 0;
    for (int64_t j = 0; j < c; j++) s += v[i * c + j];
    for (int64_t j = 0; j < c; j++) v[i * c + j] /= s;
  }
  return t;
}

START_TEST(test_softmax_xent) {
  tf_tensor *in[2] = {rnd(tf_shape_of(2, 4, 5), -3, 3), distributions(4, 5)};
  /* loss output: both features and labels (dloss * -log_softmax) */
  tt_grad_check_op("SoftmaxCrossEntropyWithLogits", in, 2, false, NULL, 0, 0,
                   NULL, ATOL, RTOL);
  /* backprop output: features only; as in TF, the labels' gradient covers
   * only the loss output */
  const bool features[2] = {true, false};
  tt_grad_check_op("SoftmaxCrossEntropyWithLogits", in, 2, false, NULL, 0, 1,
                   features, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_sparse_softmax_xent) {
  const int64_t lab[4] = {2, 0, 4, 4};
  const tf_dtype dts[2] = {TF_INT64, TF_INT32};
  const bool features[2] = {true, false};
  for (int i = 0; i < 2; i++) {
    tf_tensor *in[2] = {rnd(tf_shape_of(2, 4, 5), -3, 3),
                        tt_tensor_i(dts[i], tf_shape_of(1, 4), lab)};
    tf_attr_kv kv = {"Tlabels", tf_attr_type_v(dts[i])};
    tt_grad_check_op("SparseSoftmaxCrossEntropyWithLogits", in, 2, false, &kv,
                     1, 0, features, ATOL, RTOL);
    tt_grad_check_op("SparseSoftmaxCrossEntropyWithLogits", in, 2, false, &kv,
                     1, 1, features, ATOL, RTOL);
    tt_free(in, 2);
  }
}
END_TEST

/* The loss-only gradient of a cross-entropy: labels (int) get none, and
 * no Softmax is added for the backprop output's zero gradient. */
START_TEST(test_xent_structure) {
  const char *ops[2] = {"SparseSoftmaxCrossEntropyWithLogits",
                        "SoftmaxCrossEntropyWithLogits"};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 4, 3));
    tf_node *l = k == 0 ? tt_placeholder(g, "l", TF_INT64, tf_shape_of(1, 4))
                        : tt_placeholder(g, "l", TF_FLOAT32, tf_shape_of(2, 4, 3));
    tf_node *xe = tt_node(g, ops[k], NULL, (tf_output[]){out0(x), out0(l)}, 2,
                          NULL, 0);
    tf_output loss = out0(xe), xs[2] = {out0(x), out0(l)}, dx[2];
    tf_status st;
    tf_status_init(&st);
    ck_assert_msg(tf_gradients(g, &loss, 1, xs, 2, NULL, dx, &st) == TF_OK,
                  "%s", st.msg);
    ck_assert(dx[0].node != NULL);
    ck_assert(k == 1 ? dx[1].node != NULL : dx[1].node == NULL);
    for (int i = 0; i < tf_graph_num_nodes(g); i++) {
      ck_assert_msg(strcmp(tf_node_op(tf_graph_node(g, i)), "Softmax") != 0,
                    "%s: the loss gradient built a Softmax", ops[k]);
    }
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_l2_loss) {
  tf_tensor *x = rnd(tf_shape_of(2, 3, 4), -2, 2);
  tt_grad_check_op("L2Loss", &x, 1, false, NULL, 0, 0, NULL, ATOL, RTOL);
  tf_tensor_unref(x);
}
END_TEST

/* ---- a conv net ------------------------------------------------------------- */

/* x [2,6,6,2] -> Conv2D(f1 [3,3,2,3], SAME) -> MaxPool 2x2 -> Conv2D(f2
 * [2,2,3,4], VALID) -> AvgPool 2x2 SAME -> [2,4] -> MatMul(w [4,3]) ->
 * SparseSoftmaxCrossEntropyWithLogits(labels) -> Mean, plus
 * 0.1 * L2Loss(w): the loss. */
static tf_output build_net(tf_graph *g, const tf_output *in, int n_in,
                           void *arg) {
  int64_t one[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
  tf_attr_kv conv_same[2] = {{"strides", tf_attr_int_list(one, 4)},
                             {"padding", tf_attr_string("SAME")}};
  tf_attr_kv conv_valid[2] = {{"strides", tf_attr_int_list(one, 4)},
                              {"padding", tf_attr_string("VALID")}};
  tf_attr_kv pool[3] = {{"ksize", tf_attr_int_list(two, 4)},
                        {"strides", tf_attr_int_list(two, 4)},
                        {"padding", tf_attr_string("SAME")}};
  (void)n_in;
  (void)arg;
  tf_output h = out0(tt_node(g, "Conv2D", NULL, (tf_output[]){in[0], in[1]}, 2,
                             conv_same, 2));
  h = out0(tt_node(g, "MaxPool", NULL, &h, 1, pool, 3));
  h = out0(tt_node(g, "Conv2D", NULL, (tf_output[]){h, in[2]}, 2, conv_valid,
                   2));
  h = out0(tt_node(g, "AvgPool", NULL, &h, 1, pool, 3));
  int32_t flat[2] = {2, 4};
  tf_output shp = out0(tt_const(g, NULL, tf_tensor_vec_i32(2, flat)));
  h = out0(tt_node(g, "Reshape", NULL, (tf_output[]){h, shp}, 2, NULL, 0));
  h = out0(tt_node(g, "MatMul", NULL, (tf_output[]){h, in[3]}, 2, NULL, 0));
  const int64_t lab[2] = {1, 2};
  tf_output l = out0(tt_const(g, NULL, tt_tensor_i(TF_INT64,
                                                   tf_shape_of(1, 2), lab)));
  h = out0(tt_node(g, "SparseSoftmaxCrossEntropyWithLogits", NULL,
                   (tf_output[]){h, l}, 2, NULL, 0));
  int32_t zero = 0;
  tf_output ax = out0(tt_const(g, NULL, tf_tensor_vec_i32(1, &zero)));
  h = out0(tt_node(g, "Mean", NULL, (tf_output[]){h, ax}, 2, NULL, 0));
  tf_output l2 = out0(tt_node(g, "L2Loss", NULL, &in[3], 1, NULL, 0));
  tf_output c = out0(tt_const(g, NULL, tf_tensor_scalar_f64(0.1)));
  l2 = out0(tt_node(g, "Mul", NULL, (tf_output[]){l2, c}, 2, NULL, 0));
  return out0(tt_node(g, "Add", NULL, (tf_output[]){h, l2}, 2, NULL, 0));
}

START_TEST(test_conv_net) {
  tf_tensor *in[4] = {rnd(tf_shape_of(4, 2, 6, 6, 2), -1, 1),
                      rnd(tf_shape_of(4, 3, 3, 2, 3), -1, 1),
                      rnd(tf_shape_of(4, 2, 2, 3, 4), -1, 1),
                      rnd(tf_shape_of(2, 4, 3), -1, 1)};
  tt_grad_check(build_net, NULL, in, 4, NULL, ATOL, RTOL);
  tt_free(in, 4);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_nn");
  TCase *tc = tcase_create("nn");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_conv2d);
  tcase_add_test(tc, test_conv2d_dynamic_shapes);
  tcase_add_test(tc, test_conv_backprops);
  tcase_add_test(tc, test_max_pool);
  tcase_add_test(tc, test_max_pool_explicit_paddings);
  tcase_add_test(tc, test_avg_pool);
  tcase_add_test(tc, test_avg_pool_grad_grad);
  tcase_add_test(tc, test_softmax);
  tcase_add_test(tc, test_softmax_xent);
  tcase_add_test(tc, test_sparse_softmax_xent);
  tcase_add_test(tc, test_xent_structure);
  tcase_add_test(tc, test_l2_loss);
  tcase_add_test(tc, test_conv_net);
  suite_add_tcase(s, tc);
  return s;
}
