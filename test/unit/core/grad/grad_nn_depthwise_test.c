/* grad_nn_depthwise_test.c: the gradients of grad_nn_depthwise.c checked
 * against float64 central differences (tt_grad_check; atol 1e-7, rtol
 * 1e-6; the ops are bilinear, so differences are exact up to rounding) on
 * fresh random inputs: DepthwiseConv2dNative's input and filter gradients
 * (SAME, VALID, EXPLICIT, strides 1 and 2, dilation 2, channel_multiplier
 * 1 and 3, odd sizes, batch > 1, also with shapes unknown until run time
 * so the backprops get Shape nodes), and both backprops' own gradients
 * (second-order uses). Also checks TF's structure: the forward gradient
 * emits exactly one of each backprop op, carrying the forward node's
 * window attrs. */
#include <check.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/gradients.h"

#define ATOL 1e-7
#define RTOL 1e-6

static tf_tensor *rnd(tf_shape s) { return tt_rand(TF_FLOAT64, s, -1, 1); }

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

/* x with its static dims hidden: Reshape(x, Shape(x)). */
static tf_output hide_dims(tf_graph *g, tf_output x) {
  tf_output s = out0(tt_node(g, "Shape", NULL, &x, 1, NULL, 0));
  return out0(tt_node(g, "Reshape", NULL, (tf_output[]){x, s}, 2, NULL, 0));
}

typedef struct dw_cfg {
  int64_t strides[4], dilations[4], pads[8];
  const char *padding;
  bool hide; /* feed the op through hide_dims */
} dw_cfg;

static int dw_kv(const dw_cfg *c, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"strides", tf_attr_int_list(c->strides, 4)};
  kv[1] = (tf_attr_kv){"padding", tf_attr_string(c->padding)};
  kv[2] = (tf_attr_kv){"dilations", tf_attr_int_list(c->dilations, 4)};
  kv[3] = (tf_attr_kv){"explicit_paddings", tf_attr_int_list(c->pads, 8)};
  return strcmp(c->padding, "EXPLICIT") == 0 ? 4 : 3;
}

static tf_output build_dw(tf_graph *g, const tf_output *in, int n_in,
                          void *arg) {
  const dw_cfg *c = arg;
  tf_attr_kv kv[4];
  int n = dw_kv(c, kv);
  tf_output x = c->hide ? hide_dims(g, in[0]) : in[0];
  tf_output f = c->hide ? hide_dims(g, in[1]) : in[1];
  (void)n_in;
  return out0(tt_node(g, "DepthwiseConv2dNative", NULL, (tf_output[]){x, f},
                      2, kv, n));
}

static void check_dw(const dw_cfg *c, tf_shape xs, tf_shape fs) {
  tf_tensor *in[2] = {rnd(xs), rnd(fs)};
  tt_grad_check(build_dw, (void *)c, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}

#define S1 {1, 1, 1, 1}
#define S2 {1, 2, 2, 1}

START_TEST(test_depthwise) {
  dw_cfg c = {S1, S1, {0}, "SAME", false};
  check_dw(&c, tf_shape_of(4, 2, 5, 6, 3), tf_shape_of(4, 3, 3, 3, 1));
  check_dw(&c, tf_shape_of(4, 2, 5, 6, 2), tf_shape_of(4, 3, 3, 2, 3));
  c.padding = "VALID";
  check_dw(&c, tf_shape_of(4, 2, 5, 7, 2), tf_shape_of(4, 3, 2, 2, 3));
  dw_cfg s = {S2, S1, {0}, "SAME", false};
  check_dw(&s, tf_shape_of(4, 2, 7, 6, 2), tf_shape_of(4, 3, 3, 2, 3));
  s.padding = "VALID";
  check_dw(&s, tf_shape_of(4, 1, 7, 5, 3), tf_shape_of(4, 3, 3, 3, 1));
  dw_cfg d = {S1, S2, {0}, "SAME", false};
  check_dw(&d, tf_shape_of(4, 2, 7, 6, 2), tf_shape_of(4, 3, 2, 2, 3));
  d.padding = "VALID";
  check_dw(&d, tf_shape_of(4, 1, 7, 7, 2), tf_shape_of(4, 2, 3, 2, 1));
  dw_cfg e = {{1, 2, 1, 1}, S1, {0, 0, 1, 2, 0, 1, 0, 0}, "EXPLICIT", false};
  check_dw(&e, tf_shape_of(4, 2, 5, 4, 2), tf_shape_of(4, 3, 2, 2, 3));
}
END_TEST

START_TEST(test_depthwise_dynamic_shapes) {
  dw_cfg c = {{1, 2, 1, 1}, S1, {0}, "SAME", true};
  check_dw(&c, tf_shape_of(4, 2, 5, 6, 3), tf_shape_of(4, 3, 3, 3, 2));
}
END_TEST

/* BackpropInput(Const sizes, in[0] = filter, in[1] = out_backprop) or
 * BackpropFilter(in[0] = input, Const sizes, in[1]). */
typedef struct backprop_cfg {
  dw_cfg c;
  bool filter;
  int32_t sizes[4];
} backprop_cfg;

static tf_output build_backprop(tf_graph *g, const tf_output *in, int n_in,
                                void *arg) {
  const backprop_cfg *b = arg;
  tf_attr_kv kv[4];
  int n = dw_kv(&b->c, kv);
  tf_output sz = out0(tt_const(g, NULL, tf_tensor_vec_i32(4, b->sizes)));
  (void)n_in;
  if (b->filter) {
    return out0(tt_node(g, "DepthwiseConv2dNativeBackpropFilter", NULL,
                        (tf_output[]){in[0], sz, in[1]}, 3, kv, n));
  }
  return out0(tt_node(g, "DepthwiseConv2dNativeBackpropInput", NULL,
                      (tf_output[]){sz, in[0], in[1]}, 3, kv, n));
}

START_TEST(test_backprops) {
  /* input [2,5,6,3], filter [3,3,3,2], SAME stride 2: dy [2,3,3,6] */
  backprop_cfg b = {{S2, S1, {0}, "SAME", false}, false, {2, 5, 6, 3}};
  tf_tensor *in[2] = {rnd(tf_shape_of(4, 3, 3, 3, 2)),
                      rnd(tf_shape_of(4, 2, 3, 3, 6))};
  tt_grad_check(build_backprop, &b, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
  /* input [2,7,6,2], filter [2,3,2,3], VALID dilation 2: dy [2,5,2,6] */
  backprop_cfg f = {{S1, S2, {0}, "VALID", false}, true, {2, 3, 2, 3}};
  tf_tensor *in2[2] = {rnd(tf_shape_of(4, 2, 7, 6, 2)),
                       rnd(tf_shape_of(4, 2, 5, 2, 6))};
  tt_grad_check(build_backprop, &f, in2, 2, NULL, ATOL, RTOL);
  tt_free(in2, 2);
}
END_TEST

static int count_op(const tf_graph *g, const char *op) {
  int k = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    k += strcmp(tf_node_op(tf_graph_node(g, i)), op) == 0;
  }
  return k;
}

START_TEST(test_structure) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64,
                                    tf_shape_of(4, 1, 6, 6, 2)));
  tf_output f = out0(tt_placeholder(g, "f", TF_FLOAT64,
                                    tf_shape_of(4, 3, 3, 2, 2)));
  dw_cfg c = {S2, S1, {0}, "VALID", false};
  tf_output y = build_dw(g, (tf_output[]){x, f}, 2, &c);
  tf_output dx[2];
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, &y, 1, (tf_output[]){x, f}, 2, NULL, dx,
                             &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(count_op(g, "DepthwiseConv2dNativeBackpropInput"), 1);
  ck_assert_int_eq(count_op(g, "DepthwiseConv2dNativeBackpropFilter"), 1);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(dx[i].node != NULL, "no gradient for input %d", i);
    tf_shape want = i ? tf_shape_of(4, 3, 3, 2, 2) : tf_shape_of(4, 1, 6, 6, 2);
    ck_assert(tf_shape_equal(tf_node_output_shape(dx[i].node, dx[i].index),
                             &want));
    const char *pad;
    ck_assert(tf_node_attr_get_string(dx[i].node, "padding", &pad, &st) ==
              TF_OK);
    ck_assert_str_eq(pad, "VALID");
    const int64_t *s;
    int ns;
    ck_assert(tf_node_attr_get_int_list(dx[i].node, "strides", &s, &ns,
                                        &st) == TF_OK);
    ck_assert(ns == 4 && s[1] == 2 && s[2] == 2);
  }
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_nn_depthwise");
  TCase *tc = tcase_create("depthwise");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_depthwise);
  tcase_add_test(tc, test_depthwise_dynamic_shapes);
  tcase_add_test(tc, test_backprops);
  tcase_add_test(tc, test_structure);
  suite_add_tcase(s, tc);
  return s;
}
