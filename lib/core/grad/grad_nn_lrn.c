/* grad_nn_lrn.c: the gradient function of LRN, with TensorFlow's math
 * (python/ops/nn_grad.py, _LRNGrad): dx = LRNGrad(dy, x, y) with y the
 * forward node's own output and its depth_radius, bias, alpha and beta
 * attrs copied. (TF registers no gradient for LRNGrad.) */
#include "lib/core/base/util.h"
#include "lib/core/graph/grad_registry.h"

static const char *const lrn_attrs[] = {"depth_radius", "bias", "alpha",
                                        "beta"};

static tf_code lrn_grad(tf_grad_ctx *ctx) {
  tf_attr_kv kv[4];
  int n = 0;
  for (int i = 0; i < 4; i++) {
    const tf_attr_value *v = tf_node_attr(ctx->node, lrn_attrs[i]);
    if (v != NULL) {
      kv[n++] = (tf_attr_kv){lrn_attrs[i], *v};
    }
  }
  tf_output in[3] = {ctx->dy[0], tf__grad_in(ctx, 0), tf__grad_out(ctx, 0)};
  ctx->dx[0].values = tf__grad_op(ctx, "LRNGrad", in, 3, kv, n);
  return ctx->st->code;
}

static const tf_grad_def nn_lrn_grads[] = {
    {"LRN", lrn_grad},
};

TF_REGISTER_GRADIENTS(nn_lrn_grads)
