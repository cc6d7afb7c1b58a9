/* grad_nn.c: gradient functions of the neural-network ops, with
 * TensorFlow's math (python/ops/nn_grad.py): Conv2D and its two backprops,
 * MaxPool, AvgPool and AvgPoolGrad through the backward ops of
 * ops_nn_grad.c; Softmax, LogSoftmax, the two softmax cross-entropies and
 * L2Loss as small graphs of element-wise ops. Sizes inputs of the backward
 * ops are constants when the forward operand's shape is statically known,
 * else Shape nodes. Every function computes in the forward node's dtype.
 * (BiasAdd and Relu live with the math family, grad_math.c.) */
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

#define IN(i) tf__grad_in(ctx, i)
#define OUT(i) tf__grad_out(ctx, i)
#define DY (ctx->dy[0])
#define OP1(op, a) tf__grad_op1(ctx, op, a)
#define OP2(op, a, b) tf__grad_op2(ctx, op, a, b)

static const char *const conv_attrs[] = {
    "strides", "padding", "explicit_paddings", "data_format", "dilations",
    "use_cudnn_on_gpu"};
/* explicit_paddings: MaxPool and MaxPoolGrad have it, the AvgPool pair
 * does not; copy_attrs copies only what the forward node has. */
static const char *const pool_attrs[] = {"ksize", "strides", "padding",
                                         "explicit_paddings", "data_format"};

/* The forward node's attrs among names[0..n) that it has, into kv. */
static int copy_attrs(const tf_grad_ctx *ctx, const char *const *names, int n,
                      tf_attr_kv *kv) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const tf_attr_value *v = tf_node_attr(ctx->node, names[i]);
    if (v != NULL) {
      kv[k++] = (tf_attr_kv){names[i], *v};
    }
  }
  return k;
}

/* x's shape as an int32 vector: a constant when statically known. */
static tf_output sizes_of(tf_grad_ctx *ctx, tf_output x) {
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

/* op(a, b, c) with the forward node's attrs among names. */
static tf_output op3_attrs(tf_grad_ctx *ctx, const char *op, tf_output a,
                           tf_output b, tf_output c, const char *const *names,
                           int n_names) {
  tf_attr_kv kv[8];
  int n = copy_attrs(ctx, names, n_names, kv);
  tf_output in[3] = {a, b, c};
  return tf__grad_op(ctx, op, in, c.node != NULL ? 3 : 2, kv, n);
}

#define N_CONV ((int)TF_ARRAY_LEN(conv_attrs))
#define N_POOL ((int)TF_ARRAY_LEN(pool_attrs))

/* ---- convolution and pooling ---------------------------------------------- */

/* y = Conv2D(x, f): dx = BackpropInput(shape x, f, dy), df =
 * BackpropFilter(x, shape f, dy). */
static tf_code conv2d_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), f = IN(1);
  ctx->dx[0].values = op3_attrs(ctx, "Conv2DBackpropInput", sizes_of(ctx, x),
                                f, DY, conv_attrs, N_CONV);
  ctx->dx[1].values = op3_attrs(ctx, "Conv2DBackpropFilter", x,
                                sizes_of(ctx, f), DY, conv_attrs, N_CONV);
  return ctx->st->code;
}

/* dx = BackpropInput(sizes, f, g) is linear in f and in g: df =
 * BackpropFilter(dy, shape f, g), dg = Conv2D(dy, f). */
static tf_code conv2d_backprop_input_grad(tf_grad_ctx *ctx) {
  tf_output f = IN(1), g = IN(2);
  ctx->dx[1].values = op3_attrs(ctx, "Conv2DBackpropFilter", DY,
                                sizes_of(ctx, f), g, conv_attrs, N_CONV);
  ctx->dx[2].values = op3_attrs(ctx, "Conv2D", DY, f, (tf_output){0},
                                conv_attrs, N_CONV);
  return ctx->st->code;
}

/* df = BackpropFilter(x, sizes, g) is linear in x and in g: dx =
 * BackpropInput(shape x, dy, g), dg = Conv2D(x, dy). */
static tf_code conv2d_backprop_filter_grad(tf_grad_ctx *ctx) {
  tf_output x = IN(0), g = IN(2);
  ctx->dx[0].values = op3_attrs(ctx, "Conv2DBackpropInput", sizes_of(ctx, x),
                                DY, g, conv_attrs, N_CONV);
  ctx->dx[2].values = op3_attrs(ctx, "Conv2D", x, DY, (tf_output){0},
                                conv_attrs, N_CONV);
  return ctx->st->code;
}

static tf_code max_pool_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = op3_attrs(ctx, "MaxPoolGrad", IN(0), OUT(0), DY,
                                pool_attrs, N_POOL);
  return ctx->st->code;
}

static tf_code avg_pool_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = op3_attrs(ctx, "AvgPoolGrad", sizes_of(ctx, IN(0)), DY,
                                (tf_output){0}, pool_attrs, N_POOL);
  return ctx->st->code;
}

/* AvgPoolGrad is linear in its gradient input: d(grad) = AvgPool(dy). */
static tf_code avg_pool_grad_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv[TF_ARRAY_LEN(pool_attrs)];
  int n = copy_attrs(ctx, pool_attrs, N_POOL, kv);
  ctx->dx[1].values = tf__grad_op(ctx, "AvgPool", &DY, 1, kv, n);
  return ctx->st->code;
}

/* ---- softmax family ------------------------------------------------------- */

/* Sum(x, axis, keep_dims = true). */
static tf_output sum_keep(tf_grad_ctx *ctx, tf_output x, int32_t axis) {
  tf_attr_kv kv = {"keep_dims", tf_attr_bool(true)};
  tf_output in[2] = {x, tf__grad_ivec(ctx, &axis, 1)};
  return tf__grad_op(ctx, "Sum", in, 2, &kv, 1);
}

/* ExpandDims(v, -1): [B] -> [B, 1]. */
static tf_output column(tf_grad_ctx *ctx, tf_output v) {
  return OP2("ExpandDims", v, tf__grad_scalar(ctx, TF_INT32, -1));
}

/* y = softmax(x): dx = (dy - sum(dy * y, -1)) * y. */
static tf_code softmax_grad(tf_grad_ctx *ctx) {
  tf_output y = OUT(0);
  tf_output s = sum_keep(ctx, OP2("Mul", DY, y), -1);
  ctx->dx[0].values = OP2("Mul", OP2("Sub", DY, s), y);
  return ctx->st->code;
}

/* y = log_softmax(x): dx = dy - sum(dy, -1) * exp(y). */
static tf_code log_softmax_grad(tf_grad_ctx *ctx) {
  tf_output y = OUT(0);
  tf_output s = sum_keep(ctx, DY, -1);
  ctx->dx[0].values = OP2("Sub", DY, OP2("Mul", s, OP1("Exp", y)));
  return ctx->st->code;
}

/* Whether gradient g is known to be zero (TF's IsZero): a ZerosLike node,
 * as tf_gradients makes for outputs that got no gradient. */
static bool is_zero(tf_output g) {
  return g.node == NULL || strcmp(tf_node_op(g.node), "ZerosLike") == 0;
}

/* The gradient of the loss output (dloss [B] times backprop [B, C]) plus,
 * when the backprop output has a nonzero gradient g, the gradient through
 * backprop = softmax(x) - labels: (g - sum(g * softmax, 1)) * softmax. */
static tf_output xent_features_grad(tf_grad_ctx *ctx) {
  tf_output grad = OP2("Mul", column(ctx, ctx->dy[0]), OUT(1));
  if (ctx->n_dy > 1 && !is_zero(ctx->dy[1])) {
    tf_output gg = ctx->dy[1];
    tf_output sm = OP1("Softmax", IN(0));
    tf_output s = sum_keep(ctx, OP2("Mul", gg, sm), 1);
    grad = OP2("Add", grad, OP2("Mul", OP2("Sub", gg, s), sm));
  }
  return grad;
}

/* SoftmaxCrossEntropyWithLogits(features, labels): as TF, labels get
 * dloss * -log_softmax(features). */
static tf_code softmax_xent_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = xent_features_grad(ctx);
  tf_output nls = OP1("Neg", OP1("LogSoftmax", IN(0)));
  ctx->dx[1].values = OP2("Mul", column(ctx, ctx->dy[0]), nls);
  return ctx->st->code;
}

/* Integer labels get no gradient. */
static tf_code sparse_softmax_xent_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = xent_features_grad(ctx);
  return ctx->st->code;
}

/* L2Loss(x) = sum(x^2) / 2: dx = x * dy. */
static tf_code l2_loss_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = OP2("Mul", IN(0), DY);
  return ctx->st->code;
}

static const tf_grad_def nn_grads[] = {
    {"Conv2D", conv2d_grad},
    {"Conv2DBackpropInput", conv2d_backprop_input_grad},
    {"Conv2DBackpropFilter", conv2d_backprop_filter_grad},
    {"MaxPool", max_pool_grad},
    {"AvgPool", avg_pool_grad},
    {"AvgPoolGrad", avg_pool_grad_grad},
    {"Softmax", softmax_grad},
    {"LogSoftmax", log_softmax_grad},
    {"SoftmaxCrossEntropyWithLogits", softmax_xent_grad},
    {"SparseSoftmaxCrossEntropyWithLogits", sparse_softmax_xent_grad},
    {"L2Loss", l2_loss_grad},
};

TF_REGISTER_GRADIENTS(nn_grads)
