/* ops_nn_depthwise.c: specs and shape functions of the depthwise
 * convolution ops (DepthwiseConv2dNative and its two backprops,
 * DepthwiseConv2dNativeBackpropInput and ...BackpropFilter), with
 * TensorFlow's names, argument order and attrs. The filter is [KH, KW,
 * in_channels, channel_multiplier] and output channel c * multiplier + m
 * convolves input channel c with filter slice [:, :, c, m]. Window
 * arithmetic (strides, dilations, SAME/VALID/EXPLICIT padding) is the
 * shared one of ops_nn.h. The backprops' shape functions take the result
 * from the sizes input when it is a constant or a Shape node, and check
 * out_backprop against the forward output whenever enough is known. */
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/ops_nn.h"

/* ---- helpers ------------------------------------------------------------- */

static tf_code dw_with_rank(tf_shape_ctx *ctx, int i, int rank,
                            const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != rank) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be rank %d, got shape %s", what, rank,
                          tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

static int64_t dw_dim(const tf_shape *s, int d) {
  return s->rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : s->dims[d];
}

static tf_code dw_parse(tf_shape_ctx *ctx, tf__nn_window *w) {
  tf_status st;
  if (tf__nn_window_parse(ctx->node, w, &st) != TF_OK) {
    if (st.code == TF_INVALID_ARGUMENT) {
      return tf_shape_error(ctx, "%s", st.msg);
    }
    return tf_status_set(ctx->status, st.code, "node '%s' (%s): %s",
                         tf_node_name(ctx->node), tf_node_op(ctx->node),
                         st.msg);
  }
  return TF_OK;
}

/* The forward output shape (data_format order) of input shape in and
 * filter shape f, as far as known; checks the depths agree. */
static tf_code dw_forward_shape(tf_shape_ctx *ctx, const tf__nn_window *w,
                                const tf_shape *in, const tf_shape *f,
                                const char *in_name, const char *f_name,
                                tf_shape *out) {
  int64_t c = dw_dim(in, w->c_dim), fc = dw_dim(f, 2), m = dw_dim(f, 3);
  if (c >= 0 && fc >= 0 && c != fc) {
    return tf_shape_error(ctx, "%s depth %lld does not match %s in_channels "
                               "(dimension 2) %lld",
                          in_name, (long long)c, f_name, (long long)fc);
  }
  if (c < 0) {
    c = fc;
  }
  int64_t d[4] = {dw_dim(in, 0), TF_UNKNOWN_DIM, TF_UNKNOWN_DIM,
                  c >= 0 && m >= 0 ? c * m : TF_UNKNOWN_DIM};
  if (w->c_dim != 3) {
    d[w->c_dim] = d[3];
  }
  const int sp[2] = {w->h_dim, w->w_dim};
  for (int j = 0; j < 2; j++) {
    int s = sp[j];
    int64_t x = dw_dim(in, s), k = dw_dim(f, j), pad;
    d[s] = TF_UNKNOWN_DIM;
    if (x < 0 || k < 0) {
      continue;
    }
    tf_status st;
    if (tf__nn_out_size(j ? "cols" : "rows", x, k, w->dilations[s],
                        w->strides[s], w->padding, w->pads[2 * s],
                        w->pads[2 * s + 1], &d[s], &pad, &st) != TF_OK) {
      return tf_shape_error(ctx, "%s", st.msg);
    }
  }
  *out = tf_shape_make(4, d);
  return TF_OK;
}

/* The 4-D shape held by sizes input i: a Const's value, the static shape
 * of x for Shape(x), else unknown dims. */
static tf_code dw_sizes(tf_shape_ctx *ctx, int i, const char *what,
                        tf_shape *out) {
  const tf_shape *s = &ctx->in[i];
  char buf[128];
  if (s->rank != TF_UNKNOWN_RANK &&
      (s->rank != 1 || (s->dims[0] >= 0 && s->dims[0] != 4))) {
    return tf_shape_error(ctx, "%s must be a vector of 4 values, got shape %s",
                          what, tf_shape_str(s, buf, sizeof buf));
  }
  *out = tf_shape_make(4, NULL);
  int64_t v[4];
  int n;
  if (tf_shape_const_ints(ctx, i, v, 4, &n)) {
    if (n != 4) {
      return tf_shape_error(ctx, "%s must have 4 values, got %d", what, n);
    }
    for (int k = 0; k < 4; k++) {
      if (v[k] < 0) {
        return tf_shape_error(ctx, "%s[%d] = %lld is negative", what, k,
                              (long long)v[k]);
      }
    }
    *out = tf_shape_make(4, v);
    return TF_OK;
  }
  tf_output src = tf_node_input(ctx->node, i);
  if (src.node != NULL && strcmp(tf_node_op(src.node), "Shape") == 0) {
    tf_output x = tf_node_input(src.node, 0);
    const tf_shape *xs = tf_node_output_shape(x.node, x.index);
    if (xs != NULL && xs->rank == 4) {
      *out = *xs;
    }
  }
  return TF_OK;
}

/* out_backprop (input i) must match the forward output want where known. */
static tf_code dw_check_dy(tf_shape_ctx *ctx, int i, const tf_shape *want) {
  const tf_shape *g = &ctx->in[i];
  if (g->rank != 4) {
    return TF_OK;
  }
  for (int d = 0; d < 4; d++) {
    if (g->dims[d] >= 0 && want->dims[d] >= 0 && g->dims[d] != want->dims[d]) {
      char a[128], b[128];
      return tf_shape_error(ctx, "out_backprop has shape %s but the forward "
                                 "op's output has shape %s (dimension %d "
                                 "differs)",
                            tf_shape_str(g, a, sizeof a),
                            tf_shape_str(want, b, sizeof b), d);
    }
  }
  return TF_OK;
}

/* ---- shape functions ----------------------------------------------------- */

static tf_code depthwise_shape(tf_shape_ctx *ctx) {
  TF_TRY(dw_with_rank(ctx, 0, 4, "input"));
  TF_TRY(dw_with_rank(ctx, 1, 4, "filter"));
  tf__nn_window w;
  TF_TRY(dw_parse(ctx, &w));
  return dw_forward_shape(ctx, &w, &ctx->in[0], &ctx->in[1], "input",
                          "filter", &ctx->out[0]);
}

/* BackpropInput(input_sizes, filter, out_backprop) -> input_sizes. */
static tf_code depthwise_backprop_input_shape(tf_shape_ctx *ctx) {
  TF_TRY(dw_with_rank(ctx, 1, 4, "filter"));
  TF_TRY(dw_with_rank(ctx, 2, 4, "out_backprop"));
  tf__nn_window w;
  TF_TRY(dw_parse(ctx, &w));
  tf_shape out, want;
  TF_TRY(dw_sizes(ctx, 0, "input_sizes", &out));
  TF_TRY(dw_forward_shape(ctx, &w, &out, &ctx->in[1], "input_sizes",
                          "filter", &want));
  TF_TRY(dw_check_dy(ctx, 2, &want));
  ctx->out[0] = out;
  return TF_OK;
}

/* BackpropFilter(input, filter_sizes, out_backprop) -> filter_sizes. */
static tf_code depthwise_backprop_filter_shape(tf_shape_ctx *ctx) {
  TF_TRY(dw_with_rank(ctx, 0, 4, "input"));
  TF_TRY(dw_with_rank(ctx, 2, 4, "out_backprop"));
  tf__nn_window w;
  TF_TRY(dw_parse(ctx, &w));
  tf_shape out, want;
  TF_TRY(dw_sizes(ctx, 1, "filter_sizes", &out));
  TF_TRY(dw_forward_shape(ctx, &w, &ctx->in[0], &out, "input",
                          "filter_sizes", &want));
  TF_TRY(dw_check_dy(ctx, 2, &want));
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- the table ----------------------------------------------------------- */

#define DW_ATTRS                                                               \
  "T: {half, bfloat16, float, double}", "strides: list(int)",                  \
      "padding: {'SAME', 'VALID', 'EXPLICIT'}",                                \
      "explicit_paddings: list(int) = []",                                     \
      "data_format: {'NHWC', 'NCHW'} = 'NHWC'",                                \
      "dilations: list(int) = [1, 1, 1, 1]"

#define DW_DEVIATION                                                           \
  "CPU kernels for float and double only (no half or bfloat16); like TF's, "  \
  "they refuse data_format NCHW"

static const tf_op_spec nn_depthwise_ops[] = {
    {.name = "DepthwiseConv2dNative",
     .inputs = {"input: T", "filter: T"},
     .outputs = {"output: T"},
     .attrs = {DW_ATTRS},
     .shape_fn = depthwise_shape,
     .deviation = DW_DEVIATION,
     .doc = "Depthwise 2-D convolution of input [N,H,W,C] with filter "
            "[KH,KW,C,M]: output channel c*M+m convolves input channel c "
            "with filter[:, :, c, m]."},
    {.name = "DepthwiseConv2dNativeBackpropInput",
     .inputs = {"input_sizes: int32", "filter: T", "out_backprop: T"},
     .outputs = {"output: T"},
     .attrs = {DW_ATTRS},
     .shape_fn = depthwise_backprop_input_shape,
     .deviation = DW_DEVIATION,
     .doc = "Gradient of DepthwiseConv2dNative with respect to its input, "
            "of shape input_sizes, given the filter and the output's "
            "gradient."},
    {.name = "DepthwiseConv2dNativeBackpropFilter",
     .inputs = {"input: T", "filter_sizes: int32", "out_backprop: T"},
     .outputs = {"output: T"},
     .attrs = {DW_ATTRS},
     .shape_fn = depthwise_backprop_filter_shape,
     .deviation = DW_DEVIATION,
     .doc = "Gradient of DepthwiseConv2dNative with respect to its filter, "
            "of shape filter_sizes, given the input and the output's "
            "gradient."},
};

TF_REGISTER_OPS("nn", nn_depthwise_ops)
