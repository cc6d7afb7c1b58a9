/* ops_image.c: specs and shape functions of the image resize ops
 * ResizeBilinear, ResizeBilinearGrad, ResizeNearestNeighbor and
 * ResizeNearestNeighborGrad, with TensorFlow's names, argument order,
 * attrs and defaults (tensorflow/core/ops/image_ops.cc). Images are NHWC.
 * The forward ops and ResizeNearestNeighborGrad take the output height and
 * width from the int32 vector `size` ([new_height, new_width]) when it is
 * a constant; ResizeBilinearGrad's output has original_image's shape.
 * Setting both align_corners and half_pixel_centers is refused at build
 * time (TF refuses it when the kernel is made). */
#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"

/* Input i must be rank 4 when its rank is known. */
static tf_code img_rank4(tf_shape_ctx *ctx, int i, const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 4) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be 4-dimensional [batch, height, "
                               "width, channels], got shape %s",
                          what, tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

static int64_t img_dim(const tf_shape *s, int d) {
  return s->rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : s->dims[d];
}

/* align_corners and half_pixel_centers may not both be true. */
static tf_code img_check_modes(tf_shape_ctx *ctx) {
  const tf_attr_value *ac = tf_node_attr(ctx->node, "align_corners");
  const tf_attr_value *hp = tf_node_attr(ctx->node, "half_pixel_centers");
  bool a = ac != NULL && ac->type == TF_ATTR_BOOL && ac->u.b;
  bool h = hp != NULL && hp->type == TF_ATTR_BOOL && hp->u.b;
  if (a && h) {
    return tf_shape_error(ctx, "attrs align_corners and half_pixel_centers "
                               "cannot both be true");
  }
  return TF_OK;
}

/* Reads size input i ([new_height, new_width], int32) into hw; unknown
 * values stay TF_UNKNOWN_DIM. */
static tf_code img_size(tf_shape_ctx *ctx, int i, int64_t hw[2]) {
  const tf_shape *s = &ctx->in[i];
  char buf[128];
  hw[0] = hw[1] = TF_UNKNOWN_DIM;
  if (s->rank != TF_UNKNOWN_RANK &&
      (s->rank != 1 || (s->dims[0] >= 0 && s->dims[0] != 2))) {
    return tf_shape_error(ctx, "size must be a 1-D int32 tensor of 2 "
                               "elements [new_height, new_width], got shape %s",
                          tf_shape_str(s, buf, sizeof buf));
  }
  int64_t v[2];
  int n;
  if (tf_shape_const_ints(ctx, i, v, 2, &n)) {
    if (n != 2) {
      return tf_shape_error(ctx, "size must have 2 elements, got %d", n);
    }
    if (v[0] <= 0 || v[1] <= 0) {
      return tf_shape_error(ctx, "size must be positive, got [%lld, %lld]",
                            (long long)v[0], (long long)v[1]);
    }
    hw[0] = v[0];
    hw[1] = v[1];
  }
  return TF_OK;
}

/* op(images, size) -> [N, size[0], size[1], C]. */
static tf_code resize_shape(tf_shape_ctx *ctx) {
  TF_TRY(img_check_modes(ctx));
  TF_TRY(img_rank4(ctx, 0, "images"));
  int64_t hw[2];
  TF_TRY(img_size(ctx, 1, hw));
  const tf_shape *s = &ctx->in[0];
  int64_t d[4] = {img_dim(s, 0), hw[0], hw[1], img_dim(s, 3)};
  ctx->out[0] = tf_shape_make(4, d);
  return TF_OK;
}

/* ResizeNearestNeighborGrad(grads, size) -> [N, size[0], size[1], C]. */
static tf_code resize_nn_grad_shape(tf_shape_ctx *ctx) {
  TF_TRY(img_check_modes(ctx));
  TF_TRY(img_rank4(ctx, 0, "grads"));
  int64_t hw[2];
  TF_TRY(img_size(ctx, 1, hw));
  const tf_shape *s = &ctx->in[0];
  int64_t d[4] = {img_dim(s, 0), hw[0], hw[1], img_dim(s, 3)};
  ctx->out[0] = tf_shape_make(4, d);
  return TF_OK;
}

/* ResizeBilinearGrad(grads, original_image) -> original_image's shape;
 * batch and channels must agree where known. */
static tf_code resize_bilinear_grad_shape(tf_shape_ctx *ctx) {
  TF_TRY(img_check_modes(ctx));
  TF_TRY(img_rank4(ctx, 0, "grads"));
  TF_TRY(img_rank4(ctx, 1, "original_image"));
  const tf_shape *g = &ctx->in[0], *x = &ctx->in[1];
  static const int dims[2] = {0, 3};
  for (int k = 0; k < 2; k++) {
    int64_t a = img_dim(g, dims[k]), b = img_dim(x, dims[k]);
    if (a >= 0 && b >= 0 && a != b) {
      return tf_shape_error(ctx, "grads and original_image must have the "
                                 "same %s, got %lld and %lld",
                            k ? "depth" : "batch size", (long long)a,
                            (long long)b);
    }
  }
  ctx->out[0] = x->rank == TF_UNKNOWN_RANK ? tf_shape_make(4, NULL) : *x;
  return TF_OK;
}

#define RESIZE_MODE_ATTRS                                                      \
  "align_corners: bool = false", "half_pixel_centers: bool = false"

static const tf_op_spec image_ops[] = {
    {.name = "ResizeBilinear",
     .inputs = {"images: T", "size: int32"},
     .outputs = {"resized_images: float"},
     .attrs = {"T: {int8, uint8, int16, uint16, int32, int64, bfloat16, "
               "half, float, double}",
               RESIZE_MODE_ATTRS},
     .shape_fn = resize_shape,
     .doc = "Resizes images [N,H,W,C] to [N,size[0],size[1],C] by bilinear "
            "interpolation (float output)."},
    {.name = "ResizeBilinearGrad",
     .inputs = {"grads: float", "original_image: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {float, bfloat16, half, double}", RESIZE_MODE_ATTRS},
     .shape_fn = resize_bilinear_grad_shape,
     .doc = "Gradient of ResizeBilinear with respect to its images, of "
            "original_image's shape."},
    {.name = "ResizeNearestNeighbor",
     .inputs = {"images: T", "size: int32"},
     .outputs = {"resized_images: T"},
     .attrs = {"T: {int8, uint8, int16, uint16, int32, int64, half, float, "
               "double, bfloat16}",
               RESIZE_MODE_ATTRS},
     .shape_fn = resize_shape,
     .doc = "Resizes images [N,H,W,C] to [N,size[0],size[1],C] by "
            "nearest-neighbor sampling."},
    {.name = "ResizeNearestNeighborGrad",
     .inputs = {"grads: T", "size: int32"},
     .outputs = {"output: T"},
     .attrs = {"T: {uint8, int8, int32, half, float, double, bfloat16}",
               RESIZE_MODE_ATTRS},
     .shape_fn = resize_nn_grad_shape,
     .doc = "Gradient of ResizeNearestNeighbor: sums grads into the input "
            "pixel each output pixel sampled, giving [N,size[0],size[1],C]."},
};

TF_REGISTER_OPS("image", image_ops)
