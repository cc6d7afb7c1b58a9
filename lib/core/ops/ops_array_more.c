/* ops_array_more.c: more array ops with TensorFlow's signatures and attr
 * names: ReverseV2 (flip along listed axes), BroadcastTo (NumPy broadcast
 * to a given shape), SplitV (cut into parts of listed sizes, one of which
 * may be -1), and DepthToSpace / SpaceToDepth (move [block, block] spatial
 * tiles to and from the channel dim, NHWC).
 *
 * Shape functions use constant inputs (from Const nodes) to infer exact
 * output shapes and reject graphs that cannot work with the messages the
 * CPU kernels give. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

#define U TF_UNKNOWN_DIM

static const tf_tensor *const_input(const tf_shape_ctx *ctx, int i) {
  return ctx->in_value ? ctx->in_value[i] : NULL;
}

static tf_shape unknown_dims(int64_t r) {
  if (r < 0 || r > TF_MAX_RANK) {
    return tf_shape_unknown();
  }
  return tf_shape_make((int)r, NULL);
}

/* Requires input i to have rank `rank` when its rank is known. */
static tf_code want_rank(tf_shape_ctx *ctx, int i, int rank,
                         const char *what) {
  char buf[96];
  if (ctx->in[i].rank != TF_UNKNOWN_RANK && ctx->in[i].rank != rank) {
    return tf_shape_error(ctx, "%s must be %s, got shape %s", what,
                          rank == 0 ? "a scalar" : "a vector",
                          tf_shape_str(&ctx->in[i], buf, sizeof(buf)));
  }
  return TF_OK;
}

/* ---- ReverseV2 --------------------------------------------------------- */

static tf_code reverse_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  TF_TRY(want_rank(ctx, 1, 1, "axis"));
  const tf_tensor *axis = const_input(ctx, 1);
  ctx->out[0] = *in;
  if (axis == NULL || in->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  uint32_t seen = 0;
  for (int64_t i = 0; i < axis->n; i++) {
    int64_t a = tf_tensor_get_i64(axis, i);
    if (a < -in->rank || a >= in->rank) {
      return tf_shape_error(ctx, "'axis'[%" PRId64 "] = %" PRId64
                                 " is out of valid range [%d, %d)",
                            i, a, -in->rank, in->rank);
    }
    a = a < 0 ? a + in->rank : a;
    if ((seen >> a) & 1) {
      return tf_shape_error(ctx, "axis %" PRId64 " specified more than once",
                            a);
    }
    seen |= 1u << a;
  }
  return TF_OK;
}

/* ---- BroadcastTo ------------------------------------------------------- */

static tf_code broadcast_to_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  char a[128], b[128];
  TF_TRY(want_rank(ctx, 1, 1, "shape"));
  const tf_tensor *st = const_input(ctx, 1);
  if (st == NULL) {
    int64_t n = ctx->in[1].rank == 1 ? ctx->in[1].dims[0] : U;
    ctx->out[0] = unknown_dims(n);
    return TF_OK;
  }
  if (st->n > TF_MAX_RANK) {
    return tf_shape_error(ctx, "shape has %" PRId64 " elements; a tensor has "
                               "at most %d dims", st->n, TF_MAX_RANK);
  }
  tf_shape out = {.rank = (int)st->n};
  for (int d = 0; d < out.rank; d++) {
    out.dims[d] = tf_tensor_get_i64(st, d);
    if (out.dims[d] < 0) {
      return tf_shape_error(ctx, "shape[%d] = %" PRId64 " must be >= 0", d,
                            out.dims[d]);
    }
  }
  bool ok = in->rank == TF_UNKNOWN_RANK || in->rank <= out.rank;
  for (int k = 1; ok && in->rank != TF_UNKNOWN_RANK && k <= in->rank; k++) {
    int64_t x = in->dims[in->rank - k], y = out.dims[out.rank - k];
    ok = x == U || x == 1 || x == y;
  }
  if (!ok) {
    return tf_shape_error(ctx, "Unable to broadcast tensor of shape %s to "
                               "tensor of shape %s",
                          tf_shape_str(in, a, sizeof(a)),
                          tf_shape_str(&out, b, sizeof(b)));
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- SplitV ------------------------------------------------------------ */

/* Sizes from the constant size_splits (one -1 resolved against dim when
 * dim is known); the checks and messages of TF's SplitV kernel. */
tf_code tf__splitv_sizes(const tf_tensor *sizes, int64_t num, int64_t dim,
                         int64_t *out, tf_status *st) {
  if (sizes->shape.rank != 1 || sizes->n != num) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Length of size_splits should be equal to the value "
                         "of num_split (%" PRId64 "), got %" PRId64, num,
                         sizes->n);
  }
  int64_t neg = -1, sum = 0;
  for (int64_t i = 0; i < num; i++) {
    out[i] = tf_tensor_get_i64(sizes, i);
    if (out[i] == -1 && neg >= 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "There can only be one -1 in the input.");
    }
    if (out[i] == -1) {
      neg = i;
    } else if (out[i] < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Split size at index %" PRId64
                           " must be >= 0. Got: %" PRId64, i, out[i]);
    } else if (__builtin_add_overflow(sum, out[i], &sum)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "size_splits overflow int64");
    }
  }
  if (dim == U) {
    return TF_OK;
  }
  if ((neg < 0 && sum != dim) || (neg >= 0 && sum > dim)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Determined shape must either match input shape "
                         "along split_dim exactly if fully specified, or be "
                         "less than the size of the input along split_dim if "
                         "not fully specified.  Got: %" PRId64, sum);
  }
  if (neg >= 0) {
    out[neg] = dim - sum;
  }
  return TF_OK;
}

static tf_code splitv_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  const tf_tensor *sizes = const_input(ctx, 1), *dim_t = const_input(ctx, 2);
  int64_t num, axis = -1;
  tf_status st;
  TF_TRY(tf_node_attr_get_int(ctx->node, "num_split", &num, ctx->status));
  TF_TRY(want_rank(ctx, 1, 1, "size_splits"));
  TF_TRY(want_rank(ctx, 2, 0, "split_dim"));
  if (ctx->in[1].rank == 1 && ctx->in[1].dims[0] != U &&
      ctx->in[1].dims[0] != num) {
    return tf_shape_error(ctx, "Length of size_splits should be equal to the "
                               "value of num_split (%" PRId64 "), got %" PRId64,
                          num, ctx->in[1].dims[0]);
  }
  if (in->rank != TF_UNKNOWN_RANK && dim_t != NULL &&
      tf__normalize_axis(tf_tensor_get_i64(dim_t, 0), in->rank, "split_dim",
                         &axis, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  int64_t *len = tf__xcalloc((size_t)num, sizeof *len);
  if (sizes != NULL &&
      tf__splitv_sizes(sizes, num, axis >= 0 ? in->dims[axis] : U, len,
                       &st) != TF_OK) {
    free(len);
    return tf_shape_error(ctx, "%s", st.msg);
  }
  for (int i = 0; i < ctx->n_out; i++) {
    if (in->rank == TF_UNKNOWN_RANK) {
      ctx->out[i] = tf_shape_unknown();
      continue;
    }
    ctx->out[i] = *in;
    if (axis < 0) {
      ctx->out[i] = unknown_dims(in->rank);
    } else if (num == 1) {
      ctx->out[i] = *in;
    } else {
      ctx->out[i].dims[axis] = sizes == NULL || len[i] == -1 ? U : len[i];
    }
  }
  free(len);
  return TF_OK;
}

/* ---- DepthToSpace and SpaceToDepth ------------------------------------- */

/* Reads block_size and data_format; only NHWC is supported (on CPU, as
 * in TF). */
tf_code tf__space_attrs(const tf_node *n, int64_t *block, tf_status *st) {
  const char *fmt;
  TF_TRY(tf_node_attr_get_int(n, "block_size", block, st));
  TF_TRY(tf_node_attr_get_string(n, "data_format", &fmt, st));
  if (strcmp(fmt, "NHWC") != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s: only data_format NHWC is supported on CPU, got "
                         "%s", tf_node_op(n), fmt);
  }
  if (*block < 2) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s: block_size must be >= 2, got %" PRId64,
                         tf_node_op(n), *block);
  }
  return TF_OK;
}

/* Output shape of DepthToSpace (to_space) or SpaceToDepth of a 4-D NHWC
 * input s (dims may be unknown); the kernels' checks and messages. */
tf_code tf__space_shape(const tf_shape *s, int64_t b, bool to_space,
                        tf_shape *out, tf_status *st) {
  char buf[96];
  if (s->rank != 4) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Input rank should be: 4 instead of: %d (shape %s)",
                         s->rank, tf_shape_str(s, buf, sizeof(buf)));
  }
  *out = *s;
  int64_t h = s->dims[1], w = s->dims[2], c = s->dims[3];
  if (to_space) {
    if (c != U && c % (b * b) != 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Input depth dimension %" PRId64
                           " should be divisible by: %" PRId64, c, b * b);
    }
    out->dims[1] = h == U ? U : h * b;
    out->dims[2] = w == U ? U : w * b;
    out->dims[3] = c == U ? U : c / (b * b);
    return TF_OK;
  }
  if ((h != U && h % b != 0) || (w != U && w % b != 0)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Image width %" PRId64 " and height %" PRId64
                         " should be divisible by block_size: %" PRId64,
                         w, h, b);
  }
  out->dims[1] = h == U ? U : h / b;
  out->dims[2] = w == U ? U : w / b;
  out->dims[3] = c == U ? U : c * b * b;
  return TF_OK;
}

static tf_code space_shape_fn(tf_shape_ctx *ctx, bool to_space) {
  int64_t b;
  tf_status st;
  if (tf__space_attrs(ctx->node, &b, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  if (ctx->in[0].rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_make(4, NULL);
    return TF_OK;
  }
  if (tf__space_shape(&ctx->in[0], b, to_space, &ctx->out[0], &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  return TF_OK;
}

static tf_code depth_to_space_shape(tf_shape_ctx *ctx) {
  return space_shape_fn(ctx, true);
}

static tf_code space_to_depth_shape(tf_shape_ctx *ctx) {
  return space_shape_fn(ctx, false);
}

/* ---- the table --------------------------------------------------------- */

#define IDX(attr) attr ": {int32, int64} = int32"

static const tf_op_spec array_more_ops[] = {
    {"ReverseV2", {"tensor: T", "axis: Tidx"}, {"output: T"},
     {IDX("Tidx"), "T: type"}, reverse_shape, 0,
     "Reverses tensor along each listed axis (negative: from the end)."},
    {"BroadcastTo", {"input: T", "shape: Tidx"}, {"output: T"},
     {"T: type", IDX("Tidx")}, broadcast_to_shape, 0,
     "Broadcasts input to shape with NumPy rules."},
    {"SplitV", {"value: T", "size_splits: Tlen", "split_dim: int32"},
     {"output: num_split * T"},
     {"num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = int64"},
     splitv_shape, 0,
     "Cuts value along split_dim into parts of the sizes listed (one may "
     "be -1: the rest)."},
    {"DepthToSpace", {"input: T"}, {"output: T"},
     {"T: type", "block_size: int >= 2",
      "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"},
     depth_to_space_shape, 0,
     "Moves depth blocks of block_size^2 channels into block_size x "
     "block_size spatial tiles (NHWC).",
     "only data_format NHWC is supported (as TF's CPU kernel)"},
    {"SpaceToDepth", {"input: T"}, {"output: T"},
     {"T: type", "block_size: int >= 2",
      "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"},
     space_to_depth_shape, 0,
     "Moves block_size x block_size spatial tiles into the depth dim "
     "(NHWC).",
     "only data_format NHWC is supported (as TF's CPU kernel)"},
};

TF_REGISTER_OPS("array", array_more_ops)
