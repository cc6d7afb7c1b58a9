/* layers_conv.c: Keras's DepthwiseConv2D and SeparableConv2D as graph
 * builders on NHWC input: DepthwiseConv2dNative with a depthwise kernel
 * [kh, kw, cin, depth_multiplier], for the separable layer followed by a
 * 1x1 Conv2D with the pointwise kernel [1, 1, cin * depth_multiplier,
 * filters] (tf.nn.separable_conv2d), then BiasAdd and the activation.
 * Kernels default to Glorot uniform with TF's fans, biases to zeros. */
#include <string.h>

#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"

/* Checks what both layers take: x, window, padding, activation, the
 * depth multiplier and (filters > 0 only for the separable layer) filters,
 * and the initializers. */
static tf_code check_conv(const char *what, tf_output x, int kh, int kw,
                          int sh, int sw, const char *padding,
                          int64_t depth_multiplier, int64_t filters,
                          tf_activation act, const tf_initializer *const *inits,
                          int n_inits, tf_status *st) {
  TF_TRY(tf__layers_check_window(what, x, kh, kw, sh, sw, padding, st));
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  char b[96];
  if (s->rank != 4 || s->dims[3] < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the channels of x "
                         "must be known, got shape %s", what,
                         tf_shape_str(s, b, sizeof b));
  }
  if (depth_multiplier <= 0 || depth_multiplier > INT32_MAX ||
      s->dims[3] * depth_multiplier > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: depth_multiplier must "
                         "be >= 1 with channels * depth_multiplier < 2^31, "
                         "got %lld", what, (long long)depth_multiplier);
  }
  if (filters <= 0 || filters > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: filters must be in "
                         "[1, 2^31), got %lld", what, (long long)filters);
  }
  TF_TRY(tf__layers_check_act(what, act, st));
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  for (int i = 0; i + 1 < n_inits; i++) {
    TF_TRY(tf__layers_check_inits(what, inits[i], NULL, dt, st));
  }
  return tf__layers_check_init(what, inits[n_inits - 1], dt, st);
}

/* The depthwise kernel and DepthwiseConv2dNative on x, in the scope. */
static tf_output depthwise(tf_layers *l, tf_output x, int kh, int kw, int sh,
                           int sw, const char *padding, int64_t dm,
                           const tf_initializer *init, tf_status *st) {
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  tf_initializer glorot = tf_init_glorot_uniform(0);
  tf_output k = tf__layers_var(l, "depthwise_kernel",
                               tf_shape_of(4, kh, kw, s->dims[3], dm), dt,
                               init ? init : &glorot, true, st);
  int64_t strides[4] = {1, sh, sw, 1};
  tf_attr_kv a[] = {{"strides", tf_attr_int_list(strides, 4)},
                    {"padding", tf_attr_string(padding)}};
  tf_output in[2] = {x, k};
  return tf__layers_op(l, "DepthwiseConv2dNative", NULL, in, 2, a, 2, st);
}

/* BiasAdd of a [units] bias (when use_bias) and the activation. */
static tf_output bias_act(tf_layers *l, tf_output y, int64_t units,
                          bool use_bias, const tf_initializer *init,
                          tf_activation act, tf_status *st) {
  if (use_bias && st->code == TF_OK) {
    tf_dtype dt = tf_node_output_type(y.node, y.index);
    tf_output b = tf__layers_var(l, "bias", tf_shape_of(1, units), dt, init,
                                 true, st);
    tf_output in[2] = {y, b};
    y = tf__layers_op(l, "BiasAdd", NULL, in, 2, NULL, 0, st);
  }
  return tf__layers_act(l, y, act, NULL, st);
}

tf_code tf_layer_depthwise_conv2d(tf_layers *l, tf_output x, int kernel_h,
                                  int kernel_w, int stride_h, int stride_w,
                                  const char *padding,
                                  int64_t depth_multiplier, tf_activation act,
                                  bool use_bias,
                                  const tf_initializer *depthwise_init,
                                  const tf_initializer *bias_init,
                                  const char *name, tf_output *out,
                                  tf_status *st) {
  tf_status local;
  if (st == NULL) {
    st = &local;
  }
  tf_status_init(st);
  *out = (tf_output){NULL, 0};
  const tf_initializer *inits[2] = {depthwise_init, bias_init};
  TF_TRY(check_conv("depthwise_conv2d", x, kernel_h, kernel_w, stride_h,
                    stride_w, padding, depth_multiplier, 1, act, inits, 2,
                    st));
  int64_t cin = tf_node_output_shape(x.node, x.index)->dims[3];
  tf_graph_push_scope(l->g, name ? name : "depthwise_conv2d");
  tf_output y = depthwise(l, x, kernel_h, kernel_w, stride_h, stride_w,
                          padding, depth_multiplier, depthwise_init, st);
  *out = bias_act(l, y, cin * depth_multiplier, use_bias, bias_init, act, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

tf_code tf_layer_separable_conv2d(
    tf_layers *l, tf_output x, int64_t filters, int kernel_h, int kernel_w,
    int stride_h, int stride_w, const char *padding, int64_t depth_multiplier,
    tf_activation act, bool use_bias, const tf_initializer *depthwise_init,
    const tf_initializer *pointwise_init, const tf_initializer *bias_init,
    const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  if (st == NULL) {
    st = &local;
  }
  tf_status_init(st);
  *out = (tf_output){NULL, 0};
  const tf_initializer *inits[3] = {depthwise_init, pointwise_init, bias_init};
  TF_TRY(check_conv("separable_conv2d", x, kernel_h, kernel_w, stride_h,
                    stride_w, padding, depth_multiplier, filters, act, inits,
                    3, st));
  int64_t cin = tf_node_output_shape(x.node, x.index)->dims[3];
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  tf_initializer glorot = tf_init_glorot_uniform(0);
  tf_graph_push_scope(l->g, name ? name : "separable_conv2d");
  tf_output y = depthwise(l, x, kernel_h, kernel_w, stride_h, stride_w,
                          padding, depth_multiplier, depthwise_init, st);
  tf_output pk = tf__layers_var(
      l, "pointwise_kernel",
      tf_shape_of(4, 1, 1, cin * depth_multiplier, filters), dt,
      pointwise_init ? pointwise_init : &glorot, true, st);
  int64_t ones[4] = {1, 1, 1, 1};
  tf_attr_kv a[] = {{"strides", tf_attr_int_list(ones, 4)},
                    {"padding", tf_attr_string("VALID")}};
  tf_output in[2] = {y, pk};
  y = tf__layers_op(l, "Conv2D", NULL, in, 2, a, 2, st);
  *out = bias_act(l, y, filters, use_bias, bias_init, act, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}
