/* ops_array.c: the array op family (shapes, reshapes, transposes, joins,
 * splits, slices, tiles, pads and fills) with TensorFlow's signatures and
 * attr names (ConcatV2 takes the values then the axis, Concat the axis
 * first).
 *
 * Shape functions use constant inputs (from Const nodes) to infer exact
 * output shapes for Reshape, Fill, Slice, StridedSlice, Tile, Pad,
 * ConcatV2, Concat, Split, Transpose and ExpandDims (and PadV2,
 * MirrorPad, MirrorPadGrad), keep what is knowable
 * otherwise (the rank, known dims), and reject graphs that cannot work
 * with the same messages the kernels give. */
#include <inttypes.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

#define U TF_UNKNOWN_DIM

static const tf_tensor *const_input(const tf_shape_ctx *ctx, int i) {
  return ctx->in_value ? ctx->in_value[i] : NULL;
}

/* Rank r with every dim unknown; unknown rank when r is out of range. */
static tf_shape unknown_dims(int64_t r) {
  if (r < 0 || r > TF_MAX_RANK) {
    return tf_shape_unknown();
  }
  return tf_shape_make((int)r, NULL);
}

/* Length of a vector-shaped input, or -1 when unknown. */
static int64_t vec_len(const tf_shape *s) {
  return s->rank == 1 ? s->dims[0] : U;
}

static tf_code spec_error(tf_shape_ctx *ctx, const tf_status *st) {
  return tf_shape_error(ctx, "%s", st->msg);
}

/* Requires input i to be a vector when its rank is known. */
static tf_code want_vector(tf_shape_ctx *ctx, int i, const char *what) {
  char buf[96];
  if (ctx->in[i].rank != TF_UNKNOWN_RANK && ctx->in[i].rank != 1) {
    return tf_shape_error(ctx, "%s must be a vector, got shape %s", what,
                          tf_shape_str(&ctx->in[i], buf, sizeof(buf)));
  }
  return TF_OK;
}

/* ---- Shape, Size, Rank ----------------------------------------------- */

static tf_code shape_shape(tf_shape_ctx *ctx) {
  ctx->out[0] = tf_shape_make(1, NULL);
  ctx->out[0].dims[0] = ctx->in[0].rank; /* -1 when unknown */
  return TF_OK;
}

/* ---- Reshape, ExpandDims, Squeeze ------------------------------------ */

static tf_code reshape_shape(tf_shape_ctx *ctx) {
  char buf[96];
  if (ctx->in[1].rank != TF_UNKNOWN_RANK && ctx->in[1].rank != 1) {
    return tf_shape_error(ctx, "sizes input must be 1-D, not %s",
                          tf_shape_str(&ctx->in[1], buf, sizeof(buf)));
  }
  const tf_tensor *sizes = const_input(ctx, 1);
  if (sizes == NULL) {
    ctx->out[0] = unknown_dims(vec_len(&ctx->in[1]));
    return TF_OK;
  }
  tf_status st;
  if (tf__reshape_shape(&ctx->in[0], sizes, &ctx->out[0], &st) != TF_OK) {
    return spec_error(ctx, &st);
  }
  return TF_OK;
}

static tf_code expand_dims_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  const tf_tensor *dim = const_input(ctx, 1);
  if (in->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  if (in->rank == TF_MAX_RANK) {
    return tf_shape_error(ctx, "ExpandDims: input already has the maximum "
                               "rank %d", TF_MAX_RANK);
  }
  if (dim == NULL) {
    ctx->out[0] = unknown_dims(in->rank + 1);
    return TF_OK;
  }
  if (dim->n != 1) {
    return tf_shape_error(ctx, "'dim' must be a tensor with a single value");
  }
  int64_t axis;
  tf_status st;
  if (tf__normalize_axis(tf_tensor_get_i64(dim, 0), in->rank + 1, "dim",
                         &axis, &st) != TF_OK) {
    return spec_error(ctx, &st);
  }
  tf_shape out = {.rank = in->rank + 1};
  for (int d = 0, k = 0; d < out.rank; d++) {
    out.dims[d] = d == axis ? 1 : in->dims[k++];
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code squeeze_listed(tf_shape_ctx *ctx, const int64_t *v, int n) {
  const tf_shape *in = &ctx->in[0];
  uint32_t drop = 0;
  tf_status st;
  for (int i = 0; i < n; i++) {
    int64_t a;
    if (tf__normalize_axis(v[i], in->rank, "squeeze_dims", &a, &st) != TF_OK) {
      return spec_error(ctx, &st);
    }
    if (in->dims[a] != U && in->dims[a] != 1) {
      return tf_shape_error(ctx,
                            "Can not squeeze dim[%d], expected a dimension "
                            "of 1, got %" PRId64,
                            (int)a, in->dims[a]);
    }
    drop |= 1u << a;
  }
  tf_shape out = {.rank = 0};
  for (int d = 0; d < in->rank; d++) {
    if (!((drop >> d) & 1)) {
      out.dims[out.rank++] = in->dims[d];
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code squeeze_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  const int64_t *v;
  int n;
  TF_TRY(tf_node_attr_get_int_list(ctx->node, "squeeze_dims", &v, &n,
                                   ctx->status));
  if (in->rank == TF_UNKNOWN_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  if (n > 0) {
    return squeeze_listed(ctx, v, n);
  }
  tf_shape out = {.rank = 0};
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] == U) { /* may or may not be squeezed */
      ctx->out[0] = tf_shape_unknown();
      return TF_OK;
    }
    if (in->dims[d] != 1) {
      out.dims[out.rank++] = in->dims[d];
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- Transpose ------------------------------------------------------- */

static tf_code transpose_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  TF_TRY(want_vector(ctx, 1, "perm"));
  int64_t n = vec_len(&ctx->in[1]);
  if (in->rank != TF_UNKNOWN_RANK && n != U && n != in->rank) {
    return tf_shape_error(ctx,
                          "transpose expects a vector of size %d. But "
                          "input(1) is a vector of size %" PRId64,
                          in->rank, n);
  }
  const tf_tensor *perm = const_input(ctx, 1);
  if (perm == NULL || perm->n > TF_MAX_RANK) {
    ctx->out[0] = unknown_dims(in->rank != TF_UNKNOWN_RANK ? in->rank : n);
    return TF_OK;
  }
  tf_shape out = {.rank = (int)perm->n};
  uint32_t seen = 0;
  for (int k = 0; k < out.rank; k++) {
    int64_t p = tf_tensor_get_i64(perm, k);
    if (p < 0 || p >= out.rank) {
      return tf_shape_error(ctx, "perm[%d] = %" PRId64
                                 " is out of range [0 .. %d)",
                            k, p, out.rank);
    }
    if ((seen >> p) & 1) {
      return tf_shape_error(ctx, "perm is not a permutation: %" PRId64
                                 " appears twice", p);
    }
    seen |= 1u << p;
    out.dims[k] = in->rank == TF_UNKNOWN_RANK ? U : in->dims[p];
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- ConcatV2 and Concat --------------------------------------------- */

/* Index of the first of the n values with a known rank, or -1. */
static int first_known_rank(const tf_shape *in, int n) {
  for (int i = 0; i < n; i++) {
    if (in[i].rank != TF_UNKNOWN_RANK) {
      return i;
    }
  }
  return -1;
}

/* Merges dim d of values in[0, n) except axis; error naming both values. */
static tf_code concat_merge(tf_shape_ctx *ctx, const tf_shape *in, int n,
                            int ref, int axis, tf_shape *out) {
  const tf_shape *r = &in[ref];
  char a[128], b[128];
  int from[TF_MAX_RANK];
  *out = *r;
  for (int d = 0; d < r->rank; d++) {
    from[d] = ref;
  }
  for (int i = 0; i < n; i++) {
    const tf_shape *s = &in[i];
    if (s->rank == TF_UNKNOWN_RANK) {
      continue;
    }
    if (s->rank != r->rank) {
      return tf_shape_error(ctx, "ConcatOp : Ranks of all input tensors "
                                 "should match: shape[%d] = %s vs. "
                                 "shape[%d] = %s",
                            ref, tf_shape_str(r, a, sizeof(a)), i,
                            tf_shape_str(s, b, sizeof(b)));
    }
    for (int d = 0; d < r->rank && axis >= 0; d++) {
      if (d == axis || s->dims[d] == U) {
        continue;
      }
      if (out->dims[d] != U && out->dims[d] != s->dims[d]) {
        return tf_shape_error(
            ctx, "ConcatOp : Dimension %d in both shapes must be equal: "
                 "shape[%d] = %s vs. shape[%d] = %s",
            d, from[d], tf_shape_str(&in[from[d]], a, sizeof(a)), i,
            tf_shape_str(s, b, sizeof(b)));
      }
      out->dims[d] = s->dims[d];
      from[d] = i;
    }
  }
  return TF_OK;
}

/* The sum of the values' dims along axis, or U when one is unknown. */
static int64_t concat_total(const tf_shape *in, int n, int axis) {
  int64_t total = 0;
  for (int i = 0; i < n && total != U; i++) {
    int64_t d = in[i].rank == TF_UNKNOWN_RANK ? U : in[i].dims[axis];
    if (d == U || __builtin_add_overflow(total, d, &total)) {
      total = U;
    }
  }
  return total;
}

/* The n values start at input `first`; the axis is input `ai`, named
 * `what` (ConcatV2: values then "axis"; Concat: "concat_dim" first). */
static tf_code concat_shape_at(tf_shape_ctx *ctx, int first, int n, int ai,
                               const char *what) {
  const tf_shape *in = ctx->in + first;
  int ref = first_known_rank(in, n);
  if (ref < 0) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  int rank = in[ref].rank;
  if (rank == 0) {
    return tf_shape_error(ctx, "ConcatOp : Can't concatenate scalars (use "
                               "tf.stack instead)");
  }
  const tf_tensor *axis_t = const_input(ctx, ai);
  tf_shape out;
  char buf[96];
  if (ctx->in[ai].rank != TF_UNKNOWN_RANK && ctx->in[ai].rank != 0) {
    return tf_shape_error(ctx, "%s must be a scalar, got shape %s", what,
                          tf_shape_str(&ctx->in[ai], buf, sizeof(buf)));
  }
  if (axis_t == NULL || axis_t->n != 1) {
    TF_TRY(concat_merge(ctx, in, n, ref, -1, &out));
    ctx->out[0] = unknown_dims(rank);
    return TF_OK;
  }
  int64_t axis;
  tf_status st;
  if (tf__normalize_axis(tf_tensor_get_i64(axis_t, 0), rank,
                         "concatenating dimensions", &axis, &st) != TF_OK) {
    return tf_shape_error(ctx, "ConcatOp : %s", st.msg);
  }
  TF_TRY(concat_merge(ctx, in, n, ref, (int)axis, &out));
  out.dims[axis] = concat_total(in, n, (int)axis);
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code concat_v2_shape(tf_shape_ctx *ctx) {
  return concat_shape_at(ctx, 0, ctx->n_in - 1, ctx->n_in - 1, "axis");
}

static tf_code concat_shape(tf_shape_ctx *ctx) {
  return concat_shape_at(ctx, 1, ctx->n_in - 1, 0, "concat_dim");
}

/* ---- Split, Pack, Unpack --------------------------------------------- */

static tf_code split_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[1];
  const tf_tensor *dim = const_input(ctx, 0);
  int64_t num;
  char buf[96];
  TF_TRY(tf_node_attr_get_int(ctx->node, "num_split", &num, ctx->status));
  if (ctx->in[0].rank != TF_UNKNOWN_RANK && ctx->in[0].rank != 0) {
    return tf_shape_error(ctx, "split_dim must be a scalar, got shape %s",
                          tf_shape_str(&ctx->in[0], buf, sizeof(buf)));
  }
  tf_shape out = tf_shape_unknown();
  if (in->rank != TF_UNKNOWN_RANK && dim == NULL) {
    out = unknown_dims(in->rank);
  } else if (in->rank != TF_UNKNOWN_RANK) {
    int64_t axis;
    tf_status st;
    if (tf__normalize_axis(tf_tensor_get_i64(dim, 0), in->rank, "split_dim",
                           &axis, &st) != TF_OK) {
      return spec_error(ctx, &st);
    }
    out = *in;
    int64_t d = in->dims[axis];
    if (d != U && d % num != 0) {
      return tf_shape_error(ctx,
                            "Number of ways to split should evenly divide "
                            "the split dimension, but got split_dim %d (size "
                            "= %" PRId64 ") and num_split %" PRId64,
                            (int)axis, d, num);
    }
    out.dims[axis] = d == U ? U : d / num;
  }
  for (int i = 0; i < ctx->n_out; i++) {
    ctx->out[i] = out;
  }
  return TF_OK;
}

static tf_code pack_shape(tf_shape_ctx *ctx) {
  int n = ctx->n_in, ref = first_known_rank(ctx->in, n);
  int64_t axis_attr, axis;
  char a[128], b[128];
  TF_TRY(tf_node_attr_get_int(ctx->node, "axis", &axis_attr, ctx->status));
  if (ref < 0) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  tf_shape m = ctx->in[ref];
  for (int i = 0; i < n; i++) {
    const tf_shape *s = &ctx->in[i];
    if (tf_shape_merge(&m, s, &m, NULL) != TF_OK) {
      return tf_shape_error(ctx, "Shapes of all inputs must match: "
                                 "values[%d].shape = %s != values[%d].shape "
                                 "= %s",
                            ref, tf_shape_str(&ctx->in[ref], a, sizeof(a)), i,
                            tf_shape_str(s, b, sizeof(b)));
    }
  }
  tf_status st;
  if (tf__normalize_axis(axis_attr, m.rank + 1, "axis", &axis, &st) != TF_OK) {
    return spec_error(ctx, &st);
  }
  if (m.rank == TF_MAX_RANK) {
    return tf_shape_error(ctx, "Pack: inputs already have the maximum rank "
                               "%d", TF_MAX_RANK);
  }
  tf_shape out = {.rank = m.rank + 1};
  for (int d = 0, k = 0; d < out.rank; d++) {
    out.dims[d] = d == axis ? n : m.dims[k++];
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code unpack_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  int64_t axis_attr, num, axis;
  char buf[128];
  TF_TRY(tf_node_attr_get_int(ctx->node, "axis", &axis_attr, ctx->status));
  TF_TRY(tf_node_attr_get_int(ctx->node, "num", &num, ctx->status));
  tf_shape out = tf_shape_unknown();
  if (in->rank != TF_UNKNOWN_RANK) {
    tf_status st;
    if (tf__normalize_axis(axis_attr, in->rank, "axis", &axis, &st) != TF_OK) {
      return spec_error(ctx, &st);
    }
    if (in->dims[axis] != U && in->dims[axis] != num) {
      return tf_shape_error(ctx, "Input shape axis %d must equal %" PRId64
                                 ", got shape %s",
                            (int)axis, num, tf_shape_str(in, buf, sizeof(buf)));
    }
    out.rank = 0;
    for (int d = 0; d < in->rank; d++) {
      if (d != axis) {
        out.dims[out.rank++] = in->dims[d];
      }
    }
  }
  for (int i = 0; i < ctx->n_out; i++) {
    ctx->out[i] = out;
  }
  return TF_OK;
}

/* ---- Slice, StridedSlice --------------------------------------------- */

/* Output dim i of Slice given what is known: dim may be U; b and s are
 * read only when known (s may be -1: to the end). */
static tf_code slice_dim(tf_shape_ctx *ctx, int i, int64_t dim, bool b_known,
                         int64_t b, bool s_known, int64_t s, int64_t *out) {
  if (dim != U && b_known && (b < 0 || b > dim)) {
    return tf_shape_error(ctx, "Expected begin[%d] in [0, %" PRId64
                               "], but got %" PRId64, i, dim, b);
  }
  if (!s_known) {
    *out = U;
  } else if (s == -1) {
    *out = (dim == U || !b_known) ? U : dim - b;
  } else if (s < 0 || (dim != U && b_known && s > dim - b)) {
    return tf_shape_error(ctx, "Expected size[%d] in [0, %" PRId64
                               "], but got %" PRId64,
                          i, (dim != U && b_known) ? dim - b : INT64_MAX, s);
  } else {
    *out = s;
  }
  return TF_OK;
}

static tf_code slice_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  TF_TRY(want_vector(ctx, 1, "begin"));
  TF_TRY(want_vector(ctx, 2, "size"));
  const tf_tensor *bt = const_input(ctx, 1), *st = const_input(ctx, 2);
  int64_t n = in->rank != TF_UNKNOWN_RANK ? in->rank : U;
  int64_t lens[3] = {n, st ? st->n : vec_len(&ctx->in[2]),
                     bt ? bt->n : vec_len(&ctx->in[1])};
  for (int k = 1; k < 3; k++) {
    if (n == U) {
      n = lens[k];
    } else if (lens[k] != U && lens[k] != n) {
      return tf_shape_error(ctx, "Expected begin and size arguments to be "
                                 "1-D tensors of size %" PRId64
                                 ", but got %" PRId64 " elements",
                            n, lens[k]);
    }
  }
  if (n == U || n > TF_MAX_RANK) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  tf_shape out = {.rank = (int)n};
  for (int i = 0; i < n; i++) {
    int64_t dim = in->rank == TF_UNKNOWN_RANK ? U : in->dims[i];
    int64_t b = bt ? tf_tensor_get_i64(bt, i) : 0;
    int64_t s = st ? tf_tensor_get_i64(st, i) : 0;
    TF_TRY(slice_dim(ctx, i, dim, bt != NULL, b, st != NULL, s,
                     &out.dims[i]));
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code strided_masks(tf_shape_ctx *ctx, tf__slice_masks *m) {
  return tf__slice_masks_read(ctx->node, m, ctx->status);
}

static tf_code strided_slice_shape(tf_shape_ctx *ctx) {
  const tf_tensor *v[3] = {const_input(ctx, 1), const_input(ctx, 2),
                           const_input(ctx, 3)};
  int64_t vals[3][32], n = U;
  tf__slice_masks m;
  TF_TRY(strided_masks(ctx, &m));
  for (int k = 0; k < 3; k++) {
    TF_TRY(want_vector(ctx, k + 1, k == 0 ? "begin" : k == 1 ? "end"
                                                             : "strides"));
    int64_t len = v[k] ? v[k]->n : vec_len(&ctx->in[k + 1]);
    if (n != U && len != U && len != n) {
      return tf_shape_error(ctx, "Expected begin, end, and strides to be 1D "
                                 "equal size tensors");
    }
    n = len != U ? len : n;
    for (int64_t i = 0; v[k] && i < v[k]->n && i < 32; i++) {
      vals[k][i] = tf_tensor_get_i64(v[k], i);
    }
  }
  if (ctx->in[0].rank == TF_UNKNOWN_RANK || v[2] == NULL || n > 32) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  tf__slice_spec spec;
  tf_status st;
  if (tf__strided_slice_spec(&ctx->in[0], v[0] ? vals[0] : NULL,
                             v[1] ? vals[1] : NULL, vals[2], (int)n, &m,
                             &spec, &st) != TF_OK) {
    return spec_error(ctx, &st);
  }
  ctx->out[0] = spec.final;
  return TF_OK;
}

/* ---- Tile, Pad, Fill ------------------------------------------------- */

static tf_code tile_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0];
  TF_TRY(want_vector(ctx, 1, "multiples"));
  const tf_tensor *mt = const_input(ctx, 1);
  int64_t n = mt ? mt->n : vec_len(&ctx->in[1]);
  if (in->rank != TF_UNKNOWN_RANK && n != U && n != in->rank) {
    return tf_shape_error(ctx, "Expected multiples argument to be a vector "
                               "of length %d but got length %" PRId64,
                          in->rank, n);
  }
  if (mt == NULL || mt->n > TF_MAX_RANK) {
    ctx->out[0] = unknown_dims(in->rank != TF_UNKNOWN_RANK ? in->rank : n);
    return TF_OK;
  }
  tf_shape out = {.rank = (int)n};
  for (int i = 0; i < n; i++) {
    int64_t mul = tf_tensor_get_i64(mt, i);
    int64_t d = in->rank == TF_UNKNOWN_RANK ? U : in->dims[i];
    if (mul < 0) {
      return tf_shape_error(ctx, "Expected multiples[%d] >= 0, but got "
                                 "%" PRId64, i, mul);
    }
    if (mul == 0 || d == U) {
      out.dims[i] = mul == 0 ? 0 : U;
    } else if (__builtin_mul_overflow(d, mul, &out.dims[i])) {
      return tf_shape_error(ctx, "Tile: output dim %d = %" PRId64 " * %" PRId64
                                 " overflows int64", i, d, mul);
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

static tf_code pad_shape(tf_shape_ctx *ctx) {
  const tf_shape *in = &ctx->in[0], *p = &ctx->in[1];
  char buf[96];
  if (p->rank != TF_UNKNOWN_RANK &&
      (p->rank != 2 || (p->dims[1] != U && p->dims[1] != 2))) {
    return tf_shape_error(ctx, "paddings must be a matrix with 2 columns: %s",
                          tf_shape_str(p, buf, sizeof(buf)));
  }
  int64_t n = p->rank == 2 ? p->dims[0] : U;
  if (in->rank != TF_UNKNOWN_RANK && n != U && n != in->rank) {
    return tf_shape_error(ctx, "The first dimension of paddings must be the "
                               "rank of inputs (%d), got %" PRId64,
                          in->rank, n);
  }
  if (n > TF_MAX_RANK) {
    return tf_shape_error(ctx, "paddings has %" PRId64 " rows; a tensor has "
                               "at most %d dims", n, TF_MAX_RANK);
  }
  const tf_tensor *pv = const_input(ctx, 1);
  if (pv == NULL) {
    ctx->out[0] = unknown_dims(in->rank != TF_UNKNOWN_RANK ? in->rank : n);
    return TF_OK;
  }
  tf_shape out = {.rank = (int)p->dims[0]};
  for (int i = 0; i < out.rank; i++) {
    int64_t lo = tf_tensor_get_i64(pv, 2 * i);
    int64_t hi = tf_tensor_get_i64(pv, 2 * i + 1);
    int64_t d = in->rank == TF_UNKNOWN_RANK ? U : in->dims[i];
    if (lo < 0 || hi < 0) {
      return tf_shape_error(ctx, "Paddings must be non-negative: %" PRId64
                                 " %" PRId64 " (dim %d)", lo, hi, i);
    }
    if (d != U && (__builtin_add_overflow(d, lo, &d) ||
                   __builtin_add_overflow(d, hi, &d))) {
      return tf_shape_error(ctx, "Pad: output dim %d overflows int64", i);
    }
    out.dims[i] = d;
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* PadV2: Pad's shape and a scalar constant_values. */
static tf_code pad_v2_shape(tf_shape_ctx *ctx) {
  char buf[96];
  if (ctx->in[2].rank != TF_UNKNOWN_RANK && ctx->in[2].rank != 0) {
    return tf_shape_error(ctx, "constant_values must be a scalar, got shape "
                               "%s", tf_shape_str(&ctx->in[2], buf, sizeof(buf)));
  }
  return pad_shape(ctx);
}

/* Reads MirrorPad's mode: *offset 1 for REFLECT, 0 for SYMMETRIC. */
static tf_code mirror_mode(tf_shape_ctx *ctx, int64_t *offset) {
  const char *mode;
  TF_TRY(tf_node_attr_get_string(ctx->node, "mode", &mode, ctx->status));
  if (strcmp(mode, "REFLECT") != 0 && strcmp(mode, "SYMMETRIC") != 0) {
    return tf_shape_error(ctx, "mode must be REFLECT or SYMMETRIC, got %s",
                          mode);
  }
  *offset = strcmp(mode, "REFLECT") == 0;
  return TF_OK;
}

/* Each padding of a known dim d (the unpadded size) at most d - offset. */
static tf_code mirror_limits(tf_shape_ctx *ctx, const tf_shape *small,
                             int64_t offset) {
  const tf_tensor *pv = const_input(ctx, 1);
  for (int i = 0; pv != NULL && i < small->rank; i++) {
    int64_t lo = tf_tensor_get_i64(pv, 2 * i);
    int64_t hi = tf_tensor_get_i64(pv, 2 * i + 1);
    int64_t d = small->dims[i];
    if (d != U && (lo > d - offset || hi > d - offset)) {
      return tf_shape_error(ctx, "paddings must be %s the dimension size: "
                                 "paddings %" PRId64 ", %" PRId64
                                 " of dim %d of size %" PRId64,
                            offset ? "less than" : "no greater than", lo, hi,
                            i, d);
    }
  }
  return TF_OK;
}

static tf_code mirror_pad_shape(tf_shape_ctx *ctx) {
  int64_t offset = 0;
  TF_TRY(mirror_mode(ctx, &offset));
  TF_TRY(pad_shape(ctx));
  if (ctx->in[0].rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  return mirror_limits(ctx, &ctx->in[0], offset);
}

/* MirrorPadGrad: the input less its paddings. */
static tf_code mirror_pad_grad_shape(tf_shape_ctx *ctx) {
  int64_t offset = 0;
  TF_TRY(mirror_mode(ctx, &offset));
  TF_TRY(pad_shape(ctx)); /* checks paddings' shape and values */
  const tf_tensor *pv = const_input(ctx, 1);
  const tf_shape *in = &ctx->in[0];
  if (pv == NULL || in->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  tf_shape out = *in;
  for (int i = 0; i < out.rank; i++) {
    int64_t lo = tf_tensor_get_i64(pv, 2 * i);
    int64_t hi = tf_tensor_get_i64(pv, 2 * i + 1);
    if (in->dims[i] != U) {
      out.dims[i] = in->dims[i] - lo - hi;
      if (out.dims[i] < 0) {
        return tf_shape_error(ctx, "paddings %" PRId64 ", %" PRId64
                                   " exceed input dim %d of size %" PRId64,
                              lo, hi, i, in->dims[i]);
      }
    }
  }
  ctx->out[0] = out;
  return mirror_limits(ctx, &out, offset);
}

static tf_code fill_shape(tf_shape_ctx *ctx) {
  char buf[96];
  TF_TRY(want_vector(ctx, 0, "dims"));
  if (ctx->in[1].rank != TF_UNKNOWN_RANK && ctx->in[1].rank != 0) {
    return tf_shape_error(ctx, "value must be a scalar, got shape %s",
                          tf_shape_str(&ctx->in[1], buf, sizeof(buf)));
  }
  const tf_tensor *dims = const_input(ctx, 0);
  if (dims == NULL) {
    ctx->out[0] = unknown_dims(vec_len(&ctx->in[0]));
    return TF_OK;
  }
  if (dims->n > TF_MAX_RANK) {
    return tf_shape_error(ctx, "Fill: %" PRId64 " dims exceed the maximum "
                               "rank %d", dims->n, TF_MAX_RANK);
  }
  tf_shape out = {.rank = (int)dims->n};
  for (int d = 0; d < out.rank; d++) {
    out.dims[d] = tf_tensor_get_i64(dims, d);
    if (out.dims[d] < 0) {
      return tf_shape_error(ctx, "Fill: dims[%d] = %" PRId64 " must be >= 0",
                            d, out.dims[d]);
    }
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* ---- the table ------------------------------------------------------- */

#define NODIFF TF_OP_NOT_DIFFERENTIABLE
#define IDX(attr) attr ": {int32, int64} = int32"

static const tf_op_spec array_ops[] = {
    {"Shape", {"input: T"}, {"output: out_type"},
     {"T: type", IDX("out_type")}, shape_shape, NODIFF,
     "The shape of input as a vector."},
    {"Size", {"input: T"}, {"output: out_type"},
     {"T: type", IDX("out_type")}, tf_shape_fn_scalar, NODIFF,
     "The number of elements of input."},
    {"Rank", {"input: T"}, {"output: int32"}, {"T: type"},
     tf_shape_fn_scalar, NODIFF, "The number of dimensions of input."},
    {"Reshape", {"tensor: T", "shape: Tshape"}, {"output: T"},
     {"T: type", IDX("Tshape")}, reshape_shape, 0,
     "The same elements with another shape (one -1 dim is inferred); a view, "
     "no copy."},
    {"ExpandDims", {"input: T", "dim: Tdim"}, {"output: T"},
     {"T: type", IDX("Tdim")}, expand_dims_shape, 0,
     "Inserts a dim of size 1 at index dim (a view)."},
    {"Squeeze", {"input: T"}, {"output: T"},
     {"T: type", "squeeze_dims: list(int) = []"}, squeeze_shape, 0,
     "Removes the size-1 dims listed in squeeze_dims, or all of them (a "
     "view)."},
    {"Transpose", {"x: T", "perm: Tperm"}, {"y: T"},
     {"T: type", IDX("Tperm")}, transpose_shape, 0,
     "Permutes dims: output dim k is input dim perm[k]."},
    {"ConcatV2", {"values: N * T", "axis: Tidx"}, {"output: T"},
     {"N: int >= 2", "T: type", IDX("Tidx")}, concat_v2_shape, 0,
     "Joins values along axis (negative: from the end)."},
    {"Concat", {"concat_dim: int32", "values: N * T"}, {"output: T"},
     {"N: int >= 2", "T: type"}, concat_shape, 0,
     "Joins values along concat_dim (negative: from the end); ConcatV2 "
     "with the axis first."},
    {"Split", {"split_dim: int32", "value: T"}, {"output: num_split * T"},
     {"num_split: int >= 1", "T: type"}, split_shape, 0,
     "Cuts value into num_split equal parts along split_dim."},
    {"Pack", {"values: N * T"}, {"output: T"},
     {"N: int >= 1", "T: type", "axis: int = 0"}, pack_shape, 0,
     "Stacks N tensors of one shape along a new dim at axis."},
    {"Unpack", {"value: T"}, {"output: num * T"},
     {"num: int >= 0", "T: type", "axis: int = 0"}, unpack_shape, 0,
     "Unstacks value along axis into num tensors."},
    {"Slice", {"input: T", "begin: Index", "size: Index"}, {"output: T"},
     {"T: type", "Index: {int32, int64}"}, slice_shape, 0,
     "The box starting at begin of the given size (-1: to the end)."},
    {"StridedSlice",
     {"input: T", "begin: Index", "end: Index", "strides: Index"},
     {"output: T"},
     {"T: type", "Index: {int32, int64}", "begin_mask: int = 0",
      "end_mask: int = 0", "ellipsis_mask: int = 0", "new_axis_mask: int = 0",
      "shrink_axis_mask: int = 0"},
     strided_slice_shape, 0,
     "NumPy-style basic indexing: strides (also negative), ellipsis, new "
     "and shrunk axes."},
    {"Tile", {"input: T", "multiples: Tmultiples"}, {"output: T"},
     {"T: type", IDX("Tmultiples")}, tile_shape, 0,
     "Repeats input multiples[k] times along each dim k."},
    {"Pad", {"input: T", "paddings: Tpaddings"}, {"output: T"},
     {"T: type", IDX("Tpaddings")}, pad_shape, 0,
     "Pads with zeros: paddings[k] = [before, after] for dim k."},
    {"PadV2", {"input: T", "paddings: Tpaddings", "constant_values: T"},
     {"output: T"}, {"T: type", IDX("Tpaddings")}, pad_v2_shape, 0,
     "Pads with constant_values: paddings[k] = [before, after] for dim k."},
    {"MirrorPad", {"input: T", "paddings: Tpaddings"}, {"output: T"},
     {"T: type", IDX("Tpaddings"), "mode: {'REFLECT', 'SYMMETRIC'}"},
     mirror_pad_shape, 0,
     "Pads with mirrored copies of input (REFLECT leaves out the edge, "
     "SYMMETRIC repeats it)."},
    {"MirrorPadGrad", {"input: T", "paddings: Tpaddings"}, {"output: T"},
     {"T: type", IDX("Tpaddings"), "mode: {'REFLECT', 'SYMMETRIC'}"},
     mirror_pad_grad_shape, 0,
     "The gradient of MirrorPad: folds the mirrored parts of input back "
     "onto the interior and sums them."},
    {"Fill", {"dims: index_type", "value: T"}, {"output: T"},
     {"T: type", IDX("index_type")}, fill_shape, 0,
     "A tensor of shape dims with every element equal to value."},
    {"ZerosLike", {"x: T"}, {"y: T"}, {"T: type"}, tf_shape_fn_unchanged,
     NODIFF, "Zeros (empty strings) of the shape and dtype of x."},
    {"OnesLike", {"x: T"}, {"y: T"},
     {"T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, "
      "uint32, int64, uint64, complex64, bool}"},
     tf_shape_fn_unchanged, NODIFF, "Ones of the shape and dtype of x."},
};

TF_REGISTER_OPS("array", array_ops)
