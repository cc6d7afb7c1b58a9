/* ops_nn.c: specs and shape functions of the neural-network ops (Softmax,
 * LogSoftmax, the two softmax cross-entropies, Conv2D, MaxPool, AvgPool,
 * L2Loss, InTopK), with TensorFlow's names, arguments and attrs. It also
 * holds the window arithmetic (ops_nn.h) the Conv2D and pooling kernels
 * share with these shape functions. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/core/base/util.h"

/* ---- window arithmetic --------------------------------------------------- */

static tf_code read_list(const tf_node *n, const char *name, int64_t *v,
                         int want, tf_status *st) {
  const int64_t *vals;
  int count;
  TF_TRY(tf_node_attr_get_int_list(n, name, &vals, &count, st));
  if (count != want) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s must have %d values (one per input dimension), "
                         "got %d", name, want, count);
  }
  for (int i = 0; i < want; i++) v[i] = vals[i];
  return TF_OK;
}

static tf_code read_padding(const tf_node *n, tf__nn_window *w, tf_status *st) {
  const char *pad, *fmt;
  TF_TRY(tf_node_attr_get_string(n, "padding", &pad, st));
  TF_TRY(tf_node_attr_get_string(n, "data_format", &fmt, st));
  if (strcmp(pad, "VALID") == 0) {
    w->padding = TF__NN_VALID;
  } else if (strcmp(pad, "SAME") == 0) {
    w->padding = TF__NN_SAME;
  } else if (strcmp(pad, "EXPLICIT") == 0 &&
             tf_node_attr(n, "explicit_paddings") != NULL) {
    w->padding = TF__NN_EXPLICIT;
  } else {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "unknown padding '%s'", pad);
  }
  if (strcmp(fmt, "NHWC") != 0 && strcmp(fmt, "NCHW") != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "unknown data_format '%s' (want NHWC or NCHW)", fmt);
  }
  w->nchw = strcmp(fmt, "NCHW") == 0;
  w->h_dim = w->nchw ? 2 : 1;
  w->w_dim = w->nchw ? 3 : 2;
  w->c_dim = w->nchw ? 1 : 3;
  return TF_OK;
}

static tf_code read_explicit(const tf_node *n, tf__nn_window *w, tf_status *st) {
  memset(w->pads, 0, sizeof w->pads);
  if (tf_node_attr(n, "explicit_paddings") == NULL) {
    return TF_OK;
  }
  const int64_t *v;
  int count;
  TF_TRY(tf_node_attr_get_int_list(n, "explicit_paddings", &v, &count, st));
  if (w->padding != TF__NN_EXPLICIT) {
    if (count != 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "explicit_paddings must be empty unless padding "
                           "is EXPLICIT, got %d values", count);
    }
    return TF_OK;
  }
  if (count != 8) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "explicit_paddings must have 8 values (before and "
                         "after for each of 4 dimensions), got %d", count);
  }
  for (int i = 0; i < 8; i++) {
    if (v[i] < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "explicit_paddings[%d] = %lld is negative", i,
                           (long long)v[i]);
    }
    w->pads[i] = v[i];
  }
  if (v[0] || v[1] || v[2 * w->c_dim] || v[2 * w->c_dim + 1]) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "explicit_paddings in the batch and depth "
                         "dimensions must be 0");
  }
  return TF_OK;
}

/* Values must be >= 1 and 1 in the batch and depth dimensions. */
static tf_code check_list(const char *name, const int64_t *v, int c_dim,
                          tf_status *st) {
  for (int i = 0; i < 4; i++) {
    if (v[i] < 1) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "%s[%d] = %lld must be >= 1", name, i, (long long)v[i]);
    }
  }
  if (v[0] != 1 || v[c_dim] != 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s in the batch and depth dimensions must be 1, got "
                         "[%lld, %lld, %lld, %lld]", name, (long long)v[0],
                         (long long)v[1], (long long)v[2], (long long)v[3]);
  }
  return TF_OK;
}

tf_code tf__nn_window_parse(const tf_node *n, tf__nn_window *w, tf_status *st) {
  memset(w, 0, sizeof *w);
  TF_TRY(read_padding(n, w, st));
  TF_TRY(read_explicit(n, w, st));
  TF_TRY(read_list(n, "strides", w->strides, 4, st));
  TF_TRY(check_list("strides", w->strides, w->c_dim, st));
  for (int i = 0; i < 4; i++) w->ksize[i] = w->dilations[i] = 1;
  if (tf_node_attr(n, "dilations") != NULL) {
    TF_TRY(read_list(n, "dilations", w->dilations, 4, st));
    TF_TRY(check_list("dilations", w->dilations, w->c_dim, st));
  }
  if (tf_node_attr(n, "ksize") != NULL) {
    TF_TRY(read_list(n, "ksize", w->ksize, 4, st));
    if (w->ksize[w->c_dim] > 1 && w->ksize[0] == 1) {
      return tf_status_set(st, TF_UNIMPLEMENTED,
                           "pooling over the depth dimension (ksize[%d] = "
                           "%lld) is not supported", w->c_dim,
                           (long long)w->ksize[w->c_dim]);
    }
    TF_TRY(check_list("ksize", w->ksize, w->c_dim, st));
  }
  return TF_OK;
}

static tf_code overflow(const char *dim, tf_status *st) {
  return tf_status_set(st, TF_INVALID_ARGUMENT,
                       "window size arithmetic for %s overflows int64", dim);
}

tf_code tf__nn_out_size(const char *dim, int64_t in, int64_t k, int64_t d,
                        int64_t s, tf__nn_padding p, int64_t lo, int64_t hi,
                        int64_t *out, int64_t *pad_before, tf_status *st) {
  int64_t eff, o;
  if (s < 1 || d < 1 || k < 0 || in < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "bad window for %s: input %lld, window %lld, "
                         "dilation %lld, stride %lld", dim, (long long)in,
                         (long long)k, (long long)d, (long long)s);
  }
  if (__builtin_mul_overflow(k > 0 ? k - 1 : 0, d, &eff) || eff == INT64_MAX) {
    return overflow(dim, st);
  }
  eff += 1;
  *pad_before = 0;
  if (p == TF__NN_SAME) {
    o = in == 0 ? 0 : (in - 1) / s + 1; /* ceil(in / s) */
    int64_t need = (o > 0 ? o - 1 : 0) * s; /* < in: cannot overflow */
    if (__builtin_add_overflow(need, eff, &need)) {
      return overflow(dim, st);
    }
    *pad_before = need > in ? (need - in) / 2 : 0;
  } else {
    int64_t padded = in;
    if (p == TF__NN_EXPLICIT) {
      if (__builtin_add_overflow(in, lo, &padded) ||
          __builtin_add_overflow(padded, hi, &padded)) {
        return overflow(dim, st);
      }
      *pad_before = lo;
    }
    /* TF's (padded - eff + s) / s, truncating toward zero, without
     * overflowing for huge strides */
    int64_t span = padded - eff;
    o = span >= 0 ? span / s + 1 : (span + s) / s;
  }
  if (o < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "computed output size for %s would be negative: "
                         "%lld [input size %lld, effective window size %lld, "
                         "stride %lld]: the window is larger than the input",
                         dim, (long long)o, (long long)in, (long long)eff,
                         (long long)s);
  }
  *out = o;
  return TF_OK;
}

/* ---- shape function helpers ---------------------------------------------- */

/* Forwards st (any code) as the node's shape error. */
static tf_code shape_fail(tf_shape_ctx *ctx, const tf_status *st) {
  if (st->code == TF_INVALID_ARGUMENT) {
    return tf_shape_error(ctx, "%s", st->msg);
  }
  return tf_status_set(ctx->status, st->code, "node '%s' (%s): %s",
                       tf_node_name(ctx->node), tf_node_op(ctx->node), st->msg);
}

static tf_code with_rank(tf_shape_ctx *ctx, int i, int rank, const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != rank) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be rank %d, got shape %s", what, rank,
                          tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

/* Dim d of input i, or unknown when its rank is unknown. */
static int64_t dim_of(const tf_shape_ctx *ctx, int i, int d) {
  const tf_shape *s = &ctx->in[i];
  return s->rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : s->dims[d];
}

/* Merges two dims that must agree; false on a conflict. */
static bool merge_dim(int64_t a, int64_t b, int64_t *out) {
  if (a >= 0 && b >= 0 && a != b) {
    return false;
  }
  *out = a >= 0 ? a : b;
  return true;
}

/* ---- shape functions ----------------------------------------------------- */

static tf_code softmax_shape(tf_shape_ctx *ctx) {
  if (ctx->in[0].rank == 0) {
    return tf_shape_error(ctx, "logits must have at least 1 dimension, got a "
                               "scalar");
  }
  ctx->out[0] = ctx->in[0];
  return TF_OK;
}

static tf_code xent_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 2, "features"));
  TF_TRY(with_rank(ctx, 1, 2, "labels"));
  int64_t b, c;
  if (!merge_dim(dim_of(ctx, 0, 0), dim_of(ctx, 1, 0), &b) ||
      !merge_dim(dim_of(ctx, 0, 1), dim_of(ctx, 1, 1), &c)) {
    char f[128], l[128];
    return tf_shape_error(ctx, "features and labels must have the same shape, "
                               "got %s and %s",
                          tf_shape_str(&ctx->in[0], f, sizeof f),
                          tf_shape_str(&ctx->in[1], l, sizeof l));
  }
  ctx->out[0] = tf_shape_of(1, b);
  ctx->out[1] = tf_shape_of(2, b, c);
  return TF_OK;
}

static tf_code sparse_xent_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 2, "features"));
  TF_TRY(with_rank(ctx, 1, 1, "labels"));
  int64_t b;
  if (!merge_dim(dim_of(ctx, 0, 0), dim_of(ctx, 1, 0), &b)) {
    return tf_shape_error(ctx, "labels has %lld entries but features has "
                               "batch size %lld",
                          (long long)dim_of(ctx, 1, 0),
                          (long long)dim_of(ctx, 0, 0));
  }
  ctx->out[0] = tf_shape_of(1, b);
  ctx->out[1] = tf_shape_of(2, b, dim_of(ctx, 0, 1));
  return TF_OK;
}

/* One spatial output dim, unknown when the input dim is. */
static tf_code spatial_out(tf_shape_ctx *ctx, const tf__nn_window *w, int d,
                           int64_t in, int64_t k, int64_t *out) {
  if (in < 0 || k < 0) {
    *out = TF_UNKNOWN_DIM;
    return TF_OK;
  }
  tf_status st;
  int64_t pad;
  if (tf__nn_out_size(d == w->h_dim ? "rows" : "cols", in, k, w->dilations[d],
                      w->strides[d], w->padding, w->pads[2 * d],
                      w->pads[2 * d + 1], out, &pad, &st) != TF_OK) {
    return shape_fail(ctx, &st);
  }
  return TF_OK;
}

/* Output [N, OH, OW, C] (in data_format order) of a windowed op. */
static tf_code window_shape(tf_shape_ctx *ctx, const tf__nn_window *w,
                            int64_t kh, int64_t kw, int64_t out_c) {
  int64_t d[4];
  d[0] = dim_of(ctx, 0, 0);
  d[w->c_dim] = out_c;
  TF_TRY(spatial_out(ctx, w, w->h_dim, dim_of(ctx, 0, w->h_dim), kh,
                     &d[w->h_dim]));
  TF_TRY(spatial_out(ctx, w, w->w_dim, dim_of(ctx, 0, w->w_dim), kw,
                     &d[w->w_dim]));
  ctx->out[0] = tf_shape_make(4, d);
  return TF_OK;
}

static tf_code conv2d_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 4, "input"));
  TF_TRY(with_rank(ctx, 1, 4, "filter"));
  tf__nn_window w;
  tf_status st;
  if (tf__nn_window_parse(ctx->node, &w, &st) != TF_OK) {
    return shape_fail(ctx, &st);
  }
  for (int i = 0; i < 4; i++) {
    if (dim_of(ctx, 1, i) == 0) {
      char b[128];
      return tf_shape_error(ctx, "filter must not have zero elements, got "
                                 "shape %s",
                            tf_shape_str(&ctx->in[1], b, sizeof b));
    }
  }
  int64_t in_c = dim_of(ctx, 0, w.c_dim), f_c = dim_of(ctx, 1, 2);
  if (in_c >= 0 && f_c >= 0 && in_c != f_c) {
    char a[128], b[128];
    return tf_shape_error(ctx, "input depth %lld does not match filter "
                               "in_depth %lld (input %s, filter %s)",
                          (long long)in_c, (long long)f_c,
                          tf_shape_str(&ctx->in[0], a, sizeof a),
                          tf_shape_str(&ctx->in[1], b, sizeof b));
  }
  return window_shape(ctx, &w, dim_of(ctx, 1, 0), dim_of(ctx, 1, 1),
                      dim_of(ctx, 1, 3));
}

static tf_code pool_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 4, "input"));
  tf__nn_window w;
  tf_status st;
  if (tf__nn_window_parse(ctx->node, &w, &st) != TF_OK) {
    return shape_fail(ctx, &st);
  }
  return window_shape(ctx, &w, w.ksize[w.h_dim], w.ksize[w.w_dim],
                      dim_of(ctx, 0, w.c_dim));
}

static tf_code in_top_k_shape(tf_shape_ctx *ctx) {
  TF_TRY(with_rank(ctx, 0, 2, "predictions"));
  TF_TRY(with_rank(ctx, 1, 1, "targets"));
  int64_t b;
  if (!merge_dim(dim_of(ctx, 0, 0), dim_of(ctx, 1, 0), &b)) {
    return tf_shape_error(ctx, "targets has %lld entries but predictions has "
                               "batch size %lld",
                          (long long)dim_of(ctx, 1, 0),
                          (long long)dim_of(ctx, 0, 0));
  }
  ctx->out[0] = tf_shape_of(1, b);
  return TF_OK;
}

/* ---- the table ------------------------------------------------------------ */

#define NN_FLOATS "T: {half, bfloat16, float, double}"

static const tf_op_spec nn_ops[] = {
    {.name = "Softmax",
     .inputs = {"logits: T"},
     .outputs = {"softmax: T"},
     .attrs = {NN_FLOATS},
     .shape_fn = softmax_shape,
     .doc = "exp(logits) / sum(exp(logits)) along the last axis."},
    {.name = "LogSoftmax",
     .inputs = {"logits: T"},
     .outputs = {"logsoftmax: T"},
     .attrs = {NN_FLOATS},
     .shape_fn = softmax_shape,
     .doc = "logits - log(sum(exp(logits))) along the last axis."},
    {.name = "SoftmaxCrossEntropyWithLogits",
     .inputs = {"features: T", "labels: T"},
     .outputs = {"loss: T", "backprop: T"},
     .attrs = {NN_FLOATS},
     .shape_fn = xent_shape,
     .doc = "Per-row cross-entropy of softmax(features [B,C]) against label "
            "distributions [B,C], and its gradient.",
     .deviation = "features and labels must both be [batch, classes]; TF "
                  "also broadcasts one against the other (e.g. labels [1, "
                  "classes])"},
    {.name = "SparseSoftmaxCrossEntropyWithLogits",
     .inputs = {"features: T", "labels: Tlabels"},
     .outputs = {"loss: T", "backprop: T"},
     .attrs = {NN_FLOATS, "Tlabels: {int32, int64} = int64"},
     .shape_fn = sparse_xent_shape,
     .doc = "Per-row cross-entropy of softmax(features [B,C]) against class "
            "indices [B] in [0, C), and its gradient."},
    {.name = "Conv2D",
     .inputs = {"input: T", "filter: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {half, bfloat16, float, double, int32}", "strides: list(int)",
               "use_cudnn_on_gpu: bool = true",
               "padding: {'SAME', 'VALID', 'EXPLICIT'}",
               "explicit_paddings: list(int) = []",
               "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
               "dilations: list(int) = [1, 1, 1, 1]"},
     .shape_fn = conv2d_shape,
     .doc = "2-D convolution of input [N,H,W,Cin] with filter "
            "[KH,KW,Cin,Cout]."},
    {.name = "MaxPool",
     .inputs = {"input: T"},
     .outputs = {"output: T"},
     .attrs = {"T: {half, bfloat16, float, double, int32, int64, uint8, int16, "
               "int8, uint16} = float",
               "ksize: list(int) >= 4", "strides: list(int) >= 4",
               "padding: {'SAME', 'VALID'}",
               "explicit_paddings: list(int) = []",
               "data_format: {'NHWC', 'NCHW'} = 'NHWC'"},
     .shape_fn = pool_shape,
     .doc = "Maximum over spatial windows of input [N,H,W,C].",
     .deviation = "padding 'EXPLICIT' and data_format 'NCHW_VECT_C' are not "
                  "supported; explicit_paddings is accepted empty, as TF "
                  "writes it by default"},
    {.name = "AvgPool",
     .inputs = {"value: T"},
     .outputs = {"output: T"},
     .attrs = {NN_FLOATS, "ksize: list(int) >= 4", "strides: list(int) >= 4",
               "padding: {'SAME', 'VALID'}",
               "data_format: {'NHWC', 'NCHW'} = 'NHWC'"},
     .shape_fn = pool_shape,
     .doc = "Mean over spatial windows of value [N,H,W,C], counting only "
            "non-padded elements."},
    {.name = "L2Loss",
     .inputs = {"t: T"},
     .outputs = {"output: T"},
     .attrs = {NN_FLOATS},
     .shape_fn = tf_shape_fn_scalar,
     .doc = "sum(t ** 2) / 2 as a scalar."},
    {.name = "InTopK",
     .inputs = {"predictions: float", "targets: T"},
     .outputs = {"precision: bool"},
     .attrs = {"k: int", "T: {int32, int64} = int32"},
     .shape_fn = in_top_k_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Whether each target class is among the k largest predictions of "
            "its row (ties counted; false when any score of the row is not "
            "finite)."},
};

TF_REGISTER_OPS("nn", nn_ops)
