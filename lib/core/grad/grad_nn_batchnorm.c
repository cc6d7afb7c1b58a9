/* grad_nn_batchnorm.c: the gradient of FusedBatchNormV3, as TensorFlow's
 * _FusedBatchNormV3Grad (python/ops/nn_grad.py): one FusedBatchNormGradV3
 * node giving x, scale and offset their gradients from the gradient of y
 * (the statistics outputs' gradients are ignored, as in TF); mean and
 * variance get none. Training mode feeds it the saved batch statistics
 * (reserve_space_1/2/3); inference mode the population mean and variance
 * inputs, transposing NCHW operands to NHWC and the result back, as TF
 * does. FusedBatchNormGradV3 itself is marked not differentiable
 * (ops_nn_batchnorm.c): TF's second-order gradient is not provided. */
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

#define IN(i) tf__grad_in(ctx, i)
#define OUT(i) tf__grad_out(ctx, i)

/* Transpose(x, perm) with a constant int32 perm. */
static tf_output transpose(tf_grad_ctx *ctx, tf_output x, const int32_t *perm) {
  return tf__grad_op2(ctx, "Transpose", x, tf__grad_ivec(ctx, perm, 4));
}

/* The forward node's epsilon and is_training, plus data_format fmt. */
static int grad_attrs(tf_grad_ctx *ctx, const char *fmt, tf_attr_kv *kv) {
  int n = 0;
  const char *names[2] = {"epsilon", "is_training"};
  for (int i = 0; i < 2; i++) {
    const tf_attr_value *v = tf_node_attr(ctx->node, names[i]);
    if (v != NULL) {
      kv[n++] = (tf_attr_kv){names[i], *v};
    }
  }
  kv[n++] = (tf_attr_kv){"data_format", tf_attr_string(fmt)};
  return n;
}

/* y = FusedBatchNormV3(x, scale, offset, mean, variance). */
static tf_code fused_batch_norm_v3_grad(tf_grad_ctx *ctx) {
  const char *fmt = "NHWC";
  bool training = true;
  const tf_attr_value *f = tf_node_attr(ctx->node, "data_format");
  const tf_attr_value *t = tf_node_attr(ctx->node, "is_training");
  if (f != NULL && tf_node_attr_get_string(ctx->node, "data_format", &fmt,
                                           ctx->st) != TF_OK) {
    return ctx->st->code;
  }
  if (t != NULL && tf_node_attr_get_bool(ctx->node, "is_training", &training,
                                         ctx->st) != TF_OK) {
    return ctx->st->code;
  }
  tf_output dy = ctx->dy[0], x = IN(0);
  if (dy.node == NULL) {
    dy = tf__grad_op1(ctx, "ZerosLike", OUT(0));
  }
  tf_output m = training ? OUT(3) : IN(3), v = training ? OUT(4) : IN(4);
  bool nchw = !training && strcmp(fmt, "NCHW") == 0;
  static const int32_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  if (nchw) {
    x = transpose(ctx, x, to_nhwc);
    dy = transpose(ctx, dy, to_nhwc);
    fmt = "NHWC";
  }
  tf_attr_kv kv[3];
  int n = grad_attrs(ctx, fmt, kv);
  tf_output in[6] = {dy, x, IN(1), m, v, OUT(5)};
  tf_output g = tf__grad_op(ctx, "FusedBatchNormGradV3", in, 6, kv, n);
  if (ctx->st->code != TF_OK) {
    return ctx->st->code;
  }
  ctx->dx[0].values = nchw ? transpose(ctx, g, to_nchw) : g;
  ctx->dx[1].values = (tf_output){g.node, 1};
  ctx->dx[2].values = (tf_output){g.node, 2};
  return ctx->st->code;
}

static const tf_grad_def batchnorm_grads[] = {
    {"FusedBatchNormV3", fused_batch_norm_v3_grad},
};

TF_REGISTER_GRADIENTS(batchnorm_grads)
