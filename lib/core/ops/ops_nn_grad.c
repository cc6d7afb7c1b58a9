/* ops_nn_grad.c: specs and shape functions of the backward ops of the
 * convolution and pooling ops (Conv2DBackpropInput, Conv2DBackpropFilter,
 * MaxPoolGrad, AvgPoolGrad), with TensorFlow's names, argument order and
 * attrs. Their shape functions take the result's shape from the sizes
 * input when it is a constant or a Shape node (TF's
 * constant_value_as_shape), and check out_backprop against the forward
 * op's output shape whenever enough is known. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/core/base/util.h"

/* ---- helpers -------------------------------------------------------------- */

static tf_code with_rank(tf_shape_ctx *ctx, int i, int rank, const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != rank) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be rank %d, got shape %s", what, rank,
                          tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

static int64_t dim_of(const tf_shape *s, int d) {
  return s->rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : s->dims[d];
}

/* The 4-D shape that sizes input i holds: its value when it is a Const,
 * the static shape of x when it is Shape(x), else unknown dims. A vector
 * of n_alt (2) values gives only rows and cols ([?, h, w, ?] in NHWC
 * order), as TF allows for input_sizes. */
static tf_code sizes_value(tf_shape_ctx *ctx, int i, const char *what,
                           const tf__nn_window *w, tf_shape *out) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK &&
      (s->rank != 1 || (s->dims[0] >= 0 && s->dims[0] != 4 &&
                        s->dims[0] != 2))) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be a vector of 4 values (or 2: rows "
                               "and cols), got shape %s",
                          what, tf_shape_str(s, buf, sizeof buf));
  }
  *out = tf_shape_make(4, NULL);
  int64_t v[4];
  int n;
  if (tf_shape_const_ints(ctx, i, v, 4, &n)) {
    if (n != 4 && n != 2) {
      return tf_shape_error(ctx, "%s must have 4 values (or 2), got %d", what,
                            n);
    }
    for (int k = 0; k < n; k++) {
      if (v[k] < 0) {
        return tf_shape_error(ctx, "%s[%d] = %lld is negative", what, k,
                              (long long)v[k]);
      }
    }
    if (n == 4) {
      *out = tf_shape_make(4, v);
    } else {
      out->dims[w->h_dim] = v[0];
      out->dims[w->w_dim] = v[1];
    }
    return TF_OK;
  }
  tf_output src = tf_node_input(ctx->node, i);
  if (src.node != NULL && strcmp(tf_node_op(src.node), "Shape") == 0) {
    const tf_shape *xs = tf_node_output_shape(tf_node_input(src.node, 0).node,
                                              tf_node_input(src.node, 0).index);
    if (xs != NULL && xs->rank == 4) {
      *out = *xs;
    }
  }
  return TF_OK;
}

/* Fills unknown dim *a from b; false when both are known and differ. */
static bool merge_dim(int64_t *a, int64_t b) {
  if (*a >= 0 && b >= 0 && *a != b) {
    return false;
  }
  if (*a < 0) {
    *a = b;
  }
  return true;
}

static tf_code parse_window(tf_shape_ctx *ctx, tf__nn_window *w) {
  tf_status st;
  if (tf__nn_window_parse(ctx->node, w, &st) != TF_OK) {
    return tf_status_set(ctx->status, st.code, "node '%s' (%s): %s",
                         tf_node_name(ctx->node), tf_node_op(ctx->node),
                         st.msg);
  }
  return TF_OK;
}

/* Checks out_backprop (input dy) against the forward output of a window
 * kh x kw over input shape in with out_c channels, as far as known. */
static tf_code check_backprop(tf_shape_ctx *ctx, const tf__nn_window *w,
                              const tf_shape *in, int64_t kh, int64_t kw,
                              int64_t out_c, int dy, const char *dy_name) {
  const tf_shape *g = &ctx->in[dy];
  if (g->rank != 4) {
    return TF_OK;
  }
  int64_t want[4] = {dim_of(in, 0), TF_UNKNOWN_DIM, TF_UNKNOWN_DIM,
                     TF_UNKNOWN_DIM};
  want[w->c_dim] = out_c;
  const int sp[2] = {w->h_dim, w->w_dim};
  const int64_t k[2] = {kh, kw};
  for (int j = 0; j < 2; j++) {
    int d = sp[j];
    int64_t x = dim_of(in, d), pad;
    tf_status st;
    if (x < 0 || k[j] < 0) {
      continue;
    }
    if (tf__nn_out_size(j ? "cols" : "rows", x, k[j], w->dilations[d],
                        w->strides[d], w->padding, w->pads[2 * d],
                        w->pads[2 * d + 1], &want[d], &pad, &st) != TF_OK) {
      return tf_shape_error(ctx, "%s", st.msg);
    }
  }
  for (int d = 0; d < 4; d++) {
    if (!merge_dim(&want[d], g->dims[d])) {
      char a[128], b[128];
      tf_shape ws = tf_shape_make(4, want);
      return tf_shape_error(ctx, "%s has shape %s but the forward op's output "
                                 "has shape %s (dimension %d differs)",
                            dy_name, tf_shape_str(g, a, sizeof a),
                            tf_shape_str(&ws, b, sizeof b), d);
    }
  }
  return TF_OK;
}

/* ---- shape functions ------------------------------------------------------ */

/* Conv2DBackpropInput(input_sizes, filter, out_backprop) -> input shape. */
static tf_code conv_backprop_input_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 1, 4, "filter"));
  TF_TRY(with_rank(ctx, 2, 4, "out_backprop"));
  tf__nn_window w;
  TF_TRY(parse_window(ctx, &w));
  tf_shape out;
  TF_TRY(sizes_value(ctx, 0, "input_sizes", &w, &out));
  const tf_shape *f = &ctx->in[1], *dy = &ctx->in[2];
  if (!merge_dim(&out.dims[0], dim_of(dy, 0))) {
    return tf_shape_error(ctx, "input_sizes has batch %lld but out_backprop "
                               "has batch %lld", (long long)out.dims[0],
                          (long long)dim_of(dy, 0));
  }
  if (!merge_dim(&out.dims[w.c_dim], dim_of(f, 2))) {
    return tf_shape_error(ctx, "input_sizes depth %lld does not match filter "
                               "in_depth %lld", (long long)out.dims[w.c_dim],
                          (long long)dim_of(f, 2));
  }
  int64_t fo = dim_of(f, 3), go = dim_of(dy, w.c_dim);
  if (fo >= 0 && go >= 0 && fo != go) {
    return tf_shape_error(ctx, "filter out_depth %lld does not match "
                               "out_backprop depth %lld", (long long)fo,
                          (long long)go);
  }
  TF_TRY(check_backprop(ctx, &w, &out, dim_of(f, 0), dim_of(f, 1), fo, 2,
                        "out_backprop"));
  ctx->out[0] = out;
  return TF_OK;
}

/* Conv2DBackpropFilter(input, filter_sizes, out_backprop) -> filter shape. */
static tf_code conv_backprop_filter_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 4, "input"));
  TF_TRY(with_rank(ctx, 2, 4, "out_backprop"));
  tf__nn_window w;
  TF_TRY(parse_window(ctx, &w));
  const tf_shape *s = &ctx->in[1];
  if (s->rank != TF_UNKNOWN_RANK && (s->rank != 1 || (s->dims[0] >= 0 &&
                                                      s->dims[0] != 4))) {
    char buf[128];
    return tf_shape_error(ctx, "filter_sizes must be a vector of 4 values, "
                               "got shape %s", tf_shape_str(s, buf, sizeof buf));
  }
  tf_shape out = tf_shape_make(4, NULL);
  int64_t v[4];
  int n;
  if (tf_shape_const_ints(ctx, 1, v, 4, &n)) {
    if (n != 4) {
      return tf_shape_error(ctx, "filter_sizes must have 4 values, got %d", n);
    }
    out = tf_shape_make(4, v);
  } else {
    tf_shape tmp;
    TF_TRY(sizes_value(ctx, 1, "filter_sizes", &w, &tmp));
    out = tmp;
  }
  const tf_shape *in = &ctx->in[0], *dy = &ctx->in[2];
  if (!merge_dim(&out.dims[2], dim_of(in, w.c_dim))) {
    return tf_shape_error(ctx, "filter_sizes in_depth %lld does not match "
                               "input depth %lld", (long long)out.dims[2],
                          (long long)dim_of(in, w.c_dim));
  }
  if (!merge_dim(&out.dims[3], dim_of(dy, w.c_dim))) {
    return tf_shape_error(ctx, "filter_sizes out_depth %lld does not match "
                               "out_backprop depth %lld",
                          (long long)out.dims[3],
                          (long long)dim_of(dy, w.c_dim));
  }
  TF_TRY(check_backprop(ctx, &w, in, out.dims[0], out.dims[1], out.dims[3], 2,
                        "out_backprop"));
  ctx->out[0] = out;
  return TF_OK;
}

/* MaxPoolGrad(orig_input, orig_output, grad) -> orig_input's shape. */
static tf_code max_pool_grad_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 4, "orig_input"));
  TF_TRY(with_rank(ctx, 1, 4, "orig_output"));
  TF_TRY(with_rank(ctx, 2, 4, "grad"));
  tf__nn_window w;
  TF_TRY(parse_window(ctx, &w));
  const tf_shape *in = &ctx->in[0];
  int64_t c = dim_of(in, w.c_dim);
  TF_TRY(check_backprop(ctx, &w, in, w.ksize[w.h_dim], w.ksize[w.w_dim], c, 1,
                        "orig_output"));
  TF_TRY(check_backprop(ctx, &w, in, w.ksize[w.h_dim], w.ksize[w.w_dim], c, 2,
                        "grad"));
  ctx->out[0] = in->rank == 4 ? *in : tf_shape_make(4, NULL);
  return TF_OK;
}

/* AvgPoolGrad(orig_input_shape, grad) -> orig_input_shape. */
static tf_code avg_pool_grad_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 1, 4, "grad"));
  tf__nn_window w;
  TF_TRY(parse_window(ctx, &w));
  const tf_shape *s = &ctx->in[0];
  if (s->rank != TF_UNKNOWN_RANK && (s->rank != 1 || (s->dims[0] >= 0 &&
                                                      s->dims[0] != 4))) {
    char buf[128];
    return tf_shape_error(ctx, "orig_input_shape must be a vector of 4 "
                               "values, got shape %s",
                          tf_shape_str(s, buf, sizeof buf));
  }
  tf_shape out;
  TF_TRY(sizes_value(ctx, 0, "orig_input_shape", &w, &out));
  TF_TRY(check_backprop(ctx, &w, &out, w.ksize[w.h_dim], w.ksize[w.w_dim],
                        out.dims[w.c_dim], 1, "grad"));
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- the table ------------------------------------------------------------ */

#define CONV_ATTRS                                                             \
  "strides: list(int)", "use_cudnn_on_gpu: bool = true",                       \
      "padding: {'SAME', 'VALID', 'EXPLICIT'}",                                \
      "explicit_paddings: list(int) = []",                                     \
      "data_format: {'NHWC', 'NCHW'} = 'NHWC'",                                \
      "dilations: list(int) = [1, 1, 1, 1]"
#define POOL_ATTRS                                                             \
  "ksize: list(int) >= 4", "strides: list(int) >= 4",                          \
      "padding: {'SAME', 'VALID'}", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"

static const tf_op_spec nn_grad_ops[] = {
    {.name = "Conv2DBackpropInput",
     .inputs = {"input_sizes: int32", "filter: T", "out_backprop: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {half, bfloat16, float, double, int32}", CONV_ATTRS},
     .shape_fn = conv_backprop_input_shape,
     .doc = "Gradient of Conv2D with respect to its input, of shape "
            "input_sizes, given the filter and the output's gradient."},
    {.name = "Conv2DBackpropFilter",
     .inputs = {"input: T", "filter_sizes: int32", "out_backprop: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {half, bfloat16, float, double}", CONV_ATTRS},
     .shape_fn = conv_backprop_filter_shape,
     .doc = "Gradient of Conv2D with respect to its filter, of shape "
            "filter_sizes, given the input and the output's gradient."},
    {.name = "MaxPoolGrad",
     .inputs = {"orig_input: T", "orig_output: T", "grad: T"},
     .outputs = {"output: T"},
     .attrs = {"ksize: list(int) >= 4", "strides: list(int) >= 4",
               "padding: {'SAME', 'VALID'}",
               "explicit_paddings: list(int) = []",
               "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
               "T: {half, bfloat16, float, double, int32, int64, uint8, "
               "int16, int8, uint16} = float"},
     .shape_fn = max_pool_grad_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Gradient of MaxPool: each window's gradient goes to the first "
            "maximum of orig_input in the window (row-major order).",
     .deviation = "padding 'EXPLICIT' is not supported; explicit_paddings "
                  "is accepted empty, as TF writes it by default"},
    {.name = "AvgPoolGrad",
     .inputs = {"orig_input_shape: int32", "grad: T"},
     .outputs = {"output: T"},
     .attrs = {POOL_ATTRS, "T: {half, bfloat16, float, double}"},
     .shape_fn = avg_pool_grad_shape,
     .doc = "Gradient of AvgPool: each window's gradient spread evenly over "
            "its non-padded elements."},
};

TF_REGISTER_OPS("nn", nn_grad_ops)
