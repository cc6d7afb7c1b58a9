/* grad_image.c: gradient functions of the image resize ops, with
 * TensorFlow's math (python/ops/image_grad.py): ResizeBilinear's images get
 * ResizeBilinearGrad(dy, images) when their dtype is float32, float64,
 * half or bfloat16 (integer images get none, as in TF);
 * ResizeNearestNeighbor's images get ResizeNearestNeighborGrad(dy, image
 * [height, width]), the size a constant when the image's static height and
 * width are known, else Slice(Shape(images), [1], [2]). size never gets a
 * gradient. The mode attrs are copied from the forward node. */
#include "lib/core/base/util.h"
#include "lib/core/graph/grad_registry.h"

static const char *const img_mode_attrs[] = {"align_corners",
                                             "half_pixel_centers"};

/* op(a, b) with the forward node's mode attrs. */
static tf_output img_op(tf_grad_ctx *ctx, const char *op, tf_output a,
                        tf_output b) {
  tf_attr_kv kv[2];
  int n = 0;
  for (int i = 0; i < 2; i++) {
    const tf_attr_value *v = tf_node_attr(ctx->node, img_mode_attrs[i]);
    if (v != NULL) {
      kv[n++] = (tf_attr_kv){img_mode_attrs[i], *v};
    }
  }
  tf_output in[2] = {a, b};
  return tf__grad_op(ctx, op, in, 2, kv, n);
}

/* y = ResizeBilinear(x, size): dx = ResizeBilinearGrad(dy, x). */
static tf_code resize_bilinear_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0);
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  if (dt == TF_FLOAT32 || dt == TF_FLOAT64 || dt == TF_FLOAT16 ||
      dt == TF_BFLOAT16) {
    ctx->dx[0].values = img_op(ctx, "ResizeBilinearGrad", ctx->dy[0], x);
  }
  return ctx->st->code;
}

/* x's [height, width] as an int32 vector: a constant when known. */
static tf_output img_hw(tf_grad_ctx *ctx, tf_output x) {
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  if (s != NULL && s->rank == 4 && s->dims[1] >= 0 && s->dims[2] >= 0 &&
      s->dims[1] <= INT32_MAX && s->dims[2] <= INT32_MAX) {
    int32_t v[2] = {(int32_t)s->dims[1], (int32_t)s->dims[2]};
    return tf__grad_ivec(ctx, v, 2);
  }
  static const int32_t begin = 1, size = 2;
  tf_output in[3] = {tf__grad_shape(ctx, x), tf__grad_ivec(ctx, &begin, 1),
                     tf__grad_ivec(ctx, &size, 1)};
  return tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
}

/* y = ResizeNearestNeighbor(x, size): dx = ResizeNearestNeighborGrad(dy,
 * [H, W] of x). */
static tf_code resize_nearest_grad(tf_grad_ctx *ctx) {
  tf_output x = tf__grad_in(ctx, 0);
  ctx->dx[0].values = img_op(ctx, "ResizeNearestNeighborGrad", ctx->dy[0],
                             img_hw(ctx, x));
  return ctx->st->code;
}

static const tf_grad_def image_grads[] = {
    {"ResizeBilinear", resize_bilinear_grad},
    {"ResizeNearestNeighbor", resize_nearest_grad},
};

TF_REGISTER_GRADIENTS(image_grads)
