/* grad_nn_depthwise.c: gradient functions of DepthwiseConv2dNative and its
 * two backprops, with TensorFlow's math (python/ops/nn_grad.py:
 * _DepthwiseConv2dNativeGrad and the backprops' gradients). The forward
 * node's window attrs are copied onto every op emitted. Sizes inputs are
 * constants when the operand's shape is statically known, else Shape
 * nodes. Every function computes in the forward node's dtype. */
#include "lib/core/base/util.h"
#include "lib/core/graph/grad_registry.h"

#define IN(i) tf__grad_in(ctx, i)
#define DY (ctx->dy[0])

static const char *const dw_attrs[] = {"strides", "padding",
                                       "explicit_paddings", "data_format",
                                       "dilations"};
#define N_DW ((int)TF_ARRAY_LEN(dw_attrs))

/* x's shape as an int32 vector: a constant when statically known. */
static tf_output dw_sizes_of(tf_grad_ctx *ctx, tf_output x) {
  const tf_shape *s = x.node ? tf_node_output_shape(x.node, x.index) : NULL;
  if (s != NULL && s->rank >= 0 && tf_shape_is_fully_defined(s)) {
    int32_t v[TF_MAX_RANK];
    bool fits = true;
    for (int i = 0; i < s->rank; i++) {
      fits = fits && s->dims[i] <= INT32_MAX;
      v[i] = (int32_t)s->dims[i];
    }
    if (fits) {
      return tf__grad_ivec(ctx, v, s->rank);
    }
  }
  return tf__grad_shape(ctx, x);
}

/* op(a, b[, c]) with the forward node's window attrs. */
static tf_output dw_op(tf_grad_ctx *ctx, const char *op, tf_output a,
                       tf_output b, tf_output c) {
  tf_attr_kv kv[N_DW];
  int n = 0;
  for (int i = 0; i < N_DW; i++) {
    const tf_attr_value *v = tf_node_attr(ctx->node, dw_attrs[i]);
    if (v != NULL) {
      kv[n++] = (tf_attr_kv){dw_attrs[i], *v};
    }
  }
  tf_output in[3] = {a, b, c};
  return tf__grad_op(ctx, op, in, c.node != NULL ? 3 : 2, kv, n);
}

/* y = DepthwiseConv2dNative(x, f): dx = BackpropInput(shape x, f, dy),
 * df = BackpropFilter(x, shape f, dy). */
static tf_code depthwise_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), f = IN(1);
  ctx->dx[0].values = dw_op(ctx, "DepthwiseConv2dNativeBackpropInput",
                            dw_sizes_of(ctx, x), f, DY);
  ctx->dx[1].values = dw_op(ctx, "DepthwiseConv2dNativeBackpropFilter", x,
                            dw_sizes_of(ctx, f), DY);
  return ctx->st->code;
}

/* dx = BackpropInput(sizes, f, g) is linear in f and in g: df =
 * BackpropFilter(dy, shape f, g), dg = DepthwiseConv2dNative(dy, f). */
static tf_code depthwise_backprop_input_grad(tf_grad_ctx *ctx) {
  tf_output f = IN(1), g = IN(2);
  ctx->dx[1].values = dw_op(ctx, "DepthwiseConv2dNativeBackpropFilter", DY,
                            dw_sizes_of(ctx, f), g);
  ctx->dx[2].values = dw_op(ctx, "DepthwiseConv2dNative", DY, f,
                            (tf_output){0});
  return ctx->st->code;
}

/* df = BackpropFilter(x, sizes, g) is linear in x and in g: dx =
 * BackpropInput(shape x, dy, g), dg = DepthwiseConv2dNative(x, dy). */
static tf_code depthwise_backprop_filter_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), g = IN(2);
  ctx->dx[0].values = dw_op(ctx, "DepthwiseConv2dNativeBackpropInput",
                            dw_sizes_of(ctx, x), DY, g);
  ctx->dx[2].values = dw_op(ctx, "DepthwiseConv2dNative", x, DY,
                            (tf_output){0});
  return ctx->st->code;
}

static const tf_grad_def nn_depthwise_grads[] = {
    {"DepthwiseConv2dNative", depthwise_grad},
    {"DepthwiseConv2dNativeBackpropInput", depthwise_backprop_input_grad},
    {"DepthwiseConv2dNativeBackpropFilter", depthwise_backprop_filter_grad},
};

TF_REGISTER_GRADIENTS(nn_depthwise_grads)
