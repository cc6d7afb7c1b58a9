/* ops_nn_batchnorm.c: specs and shape functions of TensorFlow's fused batch
 * normalisation ops, FusedBatchNormV3 and FusedBatchNormGradV3, with TF's
 * names, argument order, attrs and defaults (core/ops/nn_ops.cc) and its
 * shape functions (FusedBatchNormV3Shape, FusedBatchNormGradShape): the
 * channel dimension comes from data_format and every per-channel vector
 * must be rank 1 with that many elements. Kernels: cpu_batchnorm.c;
 * gradient: grad_nn_batchnorm.c. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* ---- helpers -------------------------------------------------------------- */

/* The channel dimension of a 4-D tensor in the node's data_format. */
static tf_code channel_dim(tf_shape_ctx *ctx, int *c_dim) {
  const char *fmt;
  tf_status st;
  tf_status_init(&st);
  if (tf_node_attr_get_string(ctx->node, "data_format", &fmt, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  if (strcmp(fmt, "NHWC") != 0 && strcmp(fmt, "NCHW") != 0) {
    return tf_shape_error(ctx, "unknown data_format '%s' (want NHWC or NCHW)",
                          fmt);
  }
  *c_dim = strcmp(fmt, "NCHW") == 0 ? 1 : 3;
  return TF_OK;
}

/* T = U = float64, or T a float type of at most 32 bits with U float32 (TF's
 * pairing, extended by float64). */
static tf_code check_types(tf_shape_ctx *ctx) {
  tf_dtype t, u;
  tf_status st;
  tf_status_init(&st);
  if (tf_node_attr_get_type(ctx->node, "T", &t, &st) != TF_OK ||
      tf_node_attr_get_type(ctx->node, "U", &u, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  if ((t == TF_FLOAT64) != (u == TF_FLOAT64)) {
    return tf_shape_error(ctx, "U must be float64 exactly when T is float64 "
                               "(float32 otherwise), got T=%s and U=%s",
                          tf_dtype_name(t), tf_dtype_name(u));
  }
  return TF_OK;
}

static tf_code want_rank(tf_shape_ctx *ctx, int i, int rank, const char *what) {
  const tf_shape *s = &ctx->in[i];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != rank) {
    char buf[128];
    return tf_shape_error(ctx, "%s must be %d-dimensional, got shape %s", what,
                          rank, tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

static int64_t dim_of(const tf_shape_ctx *ctx, int i, int d) {
  const tf_shape *s = &ctx->in[i];
  return s->rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : s->dims[d];
}

/* Merges the length of vector input i (rank 1, checked) into *c. */
static tf_code merge_vec(tf_shape_ctx *ctx, int i, const char *what,
                         int64_t *c) {
  TF_TRY(want_rank(ctx, i, 1, what));
  int64_t n = dim_of(ctx, i, 0);
  if (n >= 0 && *c >= 0 && n != *c) {
    return tf_shape_error(ctx, "%s must have the same number of elements as "
                               "the channels of x, got %lld and %lld", what,
                          (long long)n, (long long)*c);
  }
  if (*c < 0) {
    *c = n;
  }
  return TF_OK;
}

/* out[0] = x with its channel dim set to c; out[1..n_vec] = [c]. */
static void set_outputs(tf_shape_ctx *ctx, const tf_shape *x, int c_dim,
                        int64_t c, int n_vec) {
  tf_shape y = *x;
  if (y.rank == TF_UNKNOWN_RANK) {
    y = tf_shape_make(4, NULL);
  }
  y.dims[c_dim] = c;
  ctx->out[0] = y;
  for (int i = 1; i <= n_vec; i++) ctx->out[i] = tf_shape_of(1, c);
}

/* ---- shape functions ------------------------------------------------------ */

/* FusedBatchNormV3Shape: scale and offset always, mean and variance only
 * when they are used (is_training false or exponential_avg_factor != 1);
 * otherwise they may be empty, but must still be vectors (the kernel's
 * rank check). reserve_space_3 is unknown, as in TF. */
static tf_code fbn_shape(tf_shape_ctx *ctx) {
  int c_dim = 3;
  TF_TRY(channel_dim(ctx, &c_dim));
  TF_TRY(check_types(ctx));
  TF_TRY(want_rank(ctx, 0, 4, "x"));
  bool training;
  double factor;
  tf_status st;
  tf_status_init(&st);
  if (tf_node_attr_get_bool(ctx->node, "is_training", &training, &st) != TF_OK ||
      tf_node_attr_get_float(ctx->node, "exponential_avg_factor", &factor,
                             &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  int64_t c = dim_of(ctx, 0, c_dim);
  TF_TRY(merge_vec(ctx, 1, "scale", &c));
  TF_TRY(merge_vec(ctx, 2, "offset", &c));
  if (!training || (float)factor != 1.0f) {
    TF_TRY(merge_vec(ctx, 3, "mean", &c));
    TF_TRY(merge_vec(ctx, 4, "variance", &c));
  } else {
    TF_TRY(want_rank(ctx, 3, 1, "mean"));
    TF_TRY(want_rank(ctx, 4, 1, "variance"));
  }
  set_outputs(ctx, &ctx->in[0], c_dim, c, 4);
  ctx->out[5] = tf_shape_unknown();
  return TF_OK;
}

/* Merges the shapes of y_backprop and x (the kernel needs them equal)
 * into *m. */
static tf_code merge_x_dy(tf_shape_ctx *ctx, tf_shape *m) {
  const tf_shape *dy = &ctx->in[0];
  const tf_shape *x = &ctx->in[1];
  *m = dy->rank == TF_UNKNOWN_RANK ? *x : *dy;
  if (dy->rank == TF_UNKNOWN_RANK || x->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  for (int d = 0; d < 4; d++) {
    if (m->dims[d] < 0) {
      m->dims[d] = x->dims[d];
    }
    if (dy->dims[d] >= 0 && x->dims[d] >= 0 && dy->dims[d] != x->dims[d]) {
      char a[128], b[128];
      return tf_shape_error(ctx, "x and y_backprop must have the same shape, "
                                 "got %s and %s",
                            tf_shape_str(x, a, sizeof a),
                            tf_shape_str(dy, b, sizeof b));
    }
  }
  return TF_OK;
}

/* FusedBatchNormGradShape: y_backprop and x 4-D; scale, reserve_space_1 and
 * reserve_space_2 vectors of the channel count; reserve_space_4/5 are
 * empty vectors. reserve_space_3 is not checked (TF's V3 ignores it). */
static tf_code fbn_grad_shape(tf_shape_ctx *ctx) {
  int c_dim = 3;
  TF_TRY(channel_dim(ctx, &c_dim));
  TF_TRY(check_types(ctx));
  TF_TRY(want_rank(ctx, 0, 4, "y_backprop"));
  TF_TRY(want_rank(ctx, 1, 4, "x"));
  tf_shape m;
  TF_TRY(merge_x_dy(ctx, &m));
  int64_t c = m.rank == TF_UNKNOWN_RANK ? TF_UNKNOWN_DIM : m.dims[c_dim];
  TF_TRY(merge_vec(ctx, 2, "scale", &c));
  TF_TRY(merge_vec(ctx, 3, "reserve_space_1", &c));
  TF_TRY(merge_vec(ctx, 4, "reserve_space_2", &c));
  set_outputs(ctx, &m, c_dim, c, 2);
  ctx->out[3] = tf_shape_of(1, 0);
  ctx->out[4] = tf_shape_of(1, 0);
  return TF_OK;
}

/* ---- the table ------------------------------------------------------------ */

#define FBN_TYPES "T: {half, bfloat16, float, double}", "U: {float, double}"
#define FBN_FORMAT "data_format: {'NHWC', 'NCHW'} = 'NHWC'"

static const tf_op_spec batchnorm_ops[] = {
    {.name = "FusedBatchNormV3",
     .inputs = {"x: T", "scale: U", "offset: U", "mean: U", "variance: U"},
     .outputs = {"y: T", "batch_mean: U", "batch_variance: U",
                 "reserve_space_1: U", "reserve_space_2: U",
                 "reserve_space_3: U"},
     .attrs = {FBN_TYPES, "epsilon: float = 0.0001",
               "exponential_avg_factor: float = 1.0", FBN_FORMAT,
               "is_training: bool = true"},
     .shape_fn = fbn_shape,
     .doc = "Batch normalisation of 4-D x over all but the channel dim: with "
            "the batch's mean and variance when training (also returning the "
            "Bessel-corrected running variance), else with the given ones.",
     .deviation = "T and U also accept double (T = U = float64; TF has T in "
                  "{half, bfloat16, float} and U float); data_format is NHWC "
                  "or NCHW only (TF also takes NDHWC and NCDHW for 5-D x); "
                  "when is_training is false reserve_space_1/2 hold the given "
                  "mean and variance (TF leaves them unset)"},
    {.name = "FusedBatchNormGradV3",
     .inputs = {"y_backprop: T", "x: T", "scale: U",
                "reserve_space_1: U", "reserve_space_2: U",
                "reserve_space_3: U"},
     .outputs = {"x_backprop: T", "scale_backprop: U", "offset_backprop: U",
                 "reserve_space_4: U", "reserve_space_5: U"},
     .attrs = {FBN_TYPES, "epsilon: float = 0.0001", FBN_FORMAT,
               "is_training: bool = true"},
     .shape_fn = fbn_grad_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Gradients of FusedBatchNormV3's y with respect to x, scale and "
            "offset, from the saved batch statistics (is_training) or the "
            "population mean and variance.",
     .deviation = "no gradient registered (TF has a second-order one); T and "
                  "U also accept double, and scale is U (TF: float, which is "
                  "U there); data_format is NHWC or NCHW only"},
};

TF_REGISTER_OPS("nn", batchnorm_ops)
