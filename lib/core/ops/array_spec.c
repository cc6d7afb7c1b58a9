/* array_spec.c: TensorFlow's index arithmetic for reduction axes, Reshape
 * and StridedSlice, shared by shape functions and kernels so that both give
 * the same answers and the same errors. The StridedSlice part follows TF's
 * ValidateStridedSliceOp step by step: a sparse spec (the user's indices
 * with an ellipsis made explicit), a dense spec (one entry per input dim),
 * canonical begin/end per dim, then the final shape. */
#include "lib/core/ops/array_spec.h"

#include <inttypes.h>

#include "lib/core/base/util.h"

tf_code tf__reduction_axes(const tf_tensor *axes, int rank, uint32_t *mask,
                           tf_status *st) {
  char buf[96];
  *mask = 0;
  if (axes->shape.rank > 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "reduction_indices must be a scalar or vector, "
                         "got shape %s",
                         tf_shape_str(&axes->shape, buf, sizeof(buf)));
  }
  if (axes->dtype != TF_INT32 && axes->dtype != TF_INT64) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "reduction_indices must be int32 or int64, got %s",
                         tf_dtype_name(axes->dtype));
  }
  for (int64_t i = 0; i < axes->n; i++) {
    int64_t a = tf_tensor_get_i64(axes, i);
    if (a < -rank || a >= rank) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Invalid reduction dimension (%" PRId64
                           " for input with %d dimension(s)",
                           a, rank);
    }
    if (a < 0) {
      a += rank;
    }
    if (*mask & (1u << a)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Invalid reduction arguments: Axes contains "
                           "duplicate dimension: %" PRId64,
                           a);
    }
    *mask |= 1u << a;
  }
  return TF_OK;
}

tf_code tf__normalize_axis(int64_t axis, int64_t n, const char *what,
                           int64_t *out, tf_status *st) {
  if (axis < -n || axis >= n) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Expected %s in the range [%" PRId64 ", %" PRId64
                         "), but got %" PRId64,
                         what, -n, n, axis);
  }
  *out = axis < 0 ? axis + n : axis;
  return TF_OK;
}

/* Reads sizes into out->dims, noting the -1 and whether a 0 appears;
 * *product gets the product of the positive sizes. */
static tf_code reshape_sizes(const tf_tensor *sizes, tf_shape *out,
                             int *unknown, bool *has_zero, int64_t *product,
                             tf_status *st) {
  char buf[96];
  if (sizes->shape.rank != 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "sizes input must be 1-D, not %s",
                         tf_shape_str(&sizes->shape, buf, sizeof(buf)));
  }
  if (sizes->n > TF_MAX_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Reshape to rank %" PRId64
                         " exceeds the maximum rank %d",
                         sizes->n, TF_MAX_RANK);
  }
  out->rank = (int32_t)sizes->n;
  *unknown = -1;
  *has_zero = false;
  *product = 1;
  for (int d = 0; d < out->rank; d++) {
    int64_t v = tf_tensor_get_i64(sizes, d);
    out->dims[d] = v;
    if (v == -1) {
      if (*unknown != -1) {
        return tf_status_set(st, TF_INVALID_ARGUMENT,
                             "Only one input size may be -1, not both %d "
                             "and %d",
                             *unknown, d);
      }
      *unknown = d;
    } else if (v < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Size %d must be non-negative, not %" PRId64, d, v);
    } else if (v == 0) {
      *has_zero = true;
    } else if (__builtin_mul_overflow(*product, v, product)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "Reshape: requested shape has too many elements "
                           "(size %d is %" PRId64 ")",
                           d, v);
    }
  }
  return TF_OK;
}

/* Fills the -1 dim of out from the input's element count, as TF does:
 * input dims of 0 are left out of the count when sizes has a 0 too, so
 * Reshape([0, 6] -> [0, -1]) gives [0, 6]. */
static tf_code reshape_infer_missing(const tf_shape *in, tf_shape *out,
                                     int unknown, bool sizes_zero,
                                     int64_t product, tf_status *st) {
  int64_t count = 1;
  bool input_zero = false;
  if (in->rank == TF_UNKNOWN_RANK) {
    out->dims[unknown] = TF_UNKNOWN_DIM;
    return TF_OK;
  }
  for (int d = 0; d < in->rank; d++) {
    int64_t v = in->dims[d];
    if (v == TF_UNKNOWN_DIM) {
      out->dims[unknown] = TF_UNKNOWN_DIM;
      return TF_OK;
    }
    if (v > 0 || !sizes_zero) {
      count *= v; /* a valid input shape: cannot overflow */
    } else {
      input_zero = true;
    }
  }
  int64_t missing = count / product;
  if (!input_zero && product * missing != count) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Input to reshape is a tensor with %" PRId64
                         " values, but the requested shape requires a "
                         "multiple of %" PRId64,
                         count, product);
  }
  out->dims[unknown] = missing;
  return TF_OK;
}

tf_code tf__reshape_shape(const tf_shape *in, const tf_tensor *sizes,
                          tf_shape *out, tf_status *st) {
  int unknown = -1;
  bool has_zero = false;
  int64_t product = 1;
  TF_TRY(reshape_sizes(sizes, out, &unknown, &has_zero, &product, st));
  if (unknown != -1) {
    TF_TRY(
        reshape_infer_missing(in, out, unknown, has_zero, product, st));
  }
  int64_t n_in = tf_shape_num_elements(in);
  int64_t n_out = tf_shape_num_elements(out);
  if (n_in >= 0 && n_out >= 0 && n_in != n_out) {
    char buf[96];
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Input to reshape is a tensor with %" PRId64
                         " values, but the requested shape %s has %" PRId64,
                         n_in, tf_shape_str(out, buf, sizeof(buf)), n_out);
  }
  return TF_OK;
}

/* ---- StridedSlice ---------------------------------------------------- */

#define SS_MAX_SPARSE 32
#define SS_NEW_AXIS (-1)
#define SS_SHRINK (-2)

/* One entry per input dim, after the ellipsis has been expanded. */
typedef struct ss_dense {
  int64_t begin[TF_MAX_RANK], end[TF_MAX_RANK], stride[TF_MAX_RANK];
  uint32_t begin_mask, end_mask, shrink_mask;
  int gather[SS_MAX_SPARSE + TF_MAX_RANK + 1]; /* dim, SS_NEW_AXIS, SHRINK */
  int n_gather;
} ss_dense;

static bool bit(int64_t mask, int i) { return i < 63 && ((mask >> i) & 1); }

/* Expands the ellipsis (an implicit one at the end when absent) into whole
 * dims and maps each remaining sparse entry to its input dim. */
static tf_code ss_build_dense(int rank, const int64_t *begin,
                              const int64_t *end, const int64_t *strides,
                              int n, const tf__slice_masks *m, ss_dense *d,
                              tf_status *st) {
  int64_t ellipsis = m->ellipsis;
  int sparse_dims = n, after_ellipsis = 0, full = 0;
  bool seen = false;
  for (int i = 0; i < n; i++) {
    if (seen && bit(m->new_axis, i)) {
      after_ellipsis++;
    }
    seen = seen || bit(ellipsis, i);
  }
  if (!seen) {
    ellipsis |= (int64_t)1 << n;
    sparse_dims = n + 1;
  }
  for (int i = 0; i < sparse_dims; i++) {
    if (bit(ellipsis, i)) {
      int next = TF_MIN(rank - (sparse_dims - i) + 1 + after_ellipsis, rank);
      for (; full < next; full++) {
        d->begin[full] = d->end[full] = 0;
        d->stride[full] = 1;
        d->begin_mask |= 1u << full;
        d->end_mask |= 1u << full;
        d->gather[d->n_gather++] = full;
      }
    } else if (bit(m->new_axis, i)) {
      d->gather[d->n_gather++] = SS_NEW_AXIS;
    } else {
      if (full == rank) {
        return tf_status_set(st, TF_INVALID_ARGUMENT,
                             "Index out of range using input dim %d; input "
                             "has only %d dims",
                             full, rank);
      }
      d->begin[full] = begin ? begin[i] : 0;
      d->end[full] = end ? end[i] : 0;
      d->stride[full] = strides[i];
      d->begin_mask |= (uint32_t)bit(m->begin, i) << full;
      d->end_mask |= (uint32_t)bit(m->end, i) << full;
      if (bit(m->shrink_axis, i)) {
        d->gather[d->n_gather++] = SS_SHRINK;
        d->shrink_mask |= 1u << full;
      } else {
        d->gather[d->n_gather++] = full;
      }
      full++;
    }
  }
  return TF_OK;
}

/* TF's canonical(): a masked bound takes the whole range in the stride's
 * direction; otherwise negative indices count from the end and the result
 * is clamped to [0, dim] (stride > 0) or [-1, dim - 1] (stride < 0). */
static int64_t ss_canonical(int64_t x, bool masked, bool is_end, int64_t s,
                            int64_t dim) {
  int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
  if (masked) {
    return (s > 0) == is_end ? hi : lo;
  }
  int64_t fwd = x < 0 ? dim + x : x;
  return fwd < lo ? lo : fwd > hi ? hi : fwd;
}

static int64_t ss_count(int64_t interval, int64_t s) {
  if (interval == 0 || (interval < 0) != (s < 0)) {
    return 0;
  }
  return interval / s + (interval % s != 0 ? 1 : 0);
}

/* Canonical begin, stride and element count of dense dim i. */
static tf_code ss_dim(const ss_dense *d, int i, int64_t dim, bool known,
                      tf__slice_spec *out, tf_status *st) {
  int64_t b = d->begin[i], e = d->end[i], s = d->stride[i];
  bool shrink = (d->shrink_mask >> i) & 1;
  bool bm = (d->begin_mask >> i) & 1, em = (d->end_mask >> i) & 1;
  out->begin[i] = 0;
  out->stride[i] = s;
  if (dim == TF_UNKNOWN_DIM) {
    out->size[i] = shrink ? 1 : TF_UNKNOWN_DIM;
    out->identity = false;
    return TF_OK;
  }
  if (known && shrink) {
    int64_t fwd = b < 0 ? dim + b : b;
    if (fwd < 0 || fwd >= dim) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "slice index %" PRId64
                           " of dimension %d out of bounds.",
                           b, i);
    }
    out->begin[i] = fwd;
    out->stride[i] = 1; /* one element: the direction does not matter */
    out->size[i] = 1;
  } else if (known) {
    b = ss_canonical(b, bm, false, s, dim);
    e = ss_canonical(e, em, true, s, dim);
    out->begin[i] = b;
    out->size[i] = ss_count(e - b, s);
  } else if (shrink) {
    out->size[i] = 1;
  } else if (bm && em) {
    out->begin[i] = s > 0 ? 0 : dim - 1;
    out->size[i] = ss_count(s < 0 ? -dim : dim, s);
  } else {
    out->size[i] = TF_UNKNOWN_DIM;
  }
  bool whole = out->stride[i] == 1 && out->begin[i] == 0 &&
               out->size[i] == dim;
  out->identity = out->identity && whole;
  return TF_OK;
}

tf_code tf__strided_slice_spec(const tf_shape *in, const int64_t *begin,
                               const int64_t *end, const int64_t *strides,
                               int n, const tf__slice_masks *m,
                               tf__slice_spec *out, tf_status *st) {
  if (n > SS_MAX_SPARSE) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "StridedSlice: begin, end and strides have %d "
                         "elements; at most %d are supported",
                         n, SS_MAX_SPARSE);
  }
  if (m->ellipsis & (m->ellipsis - 1)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Multiple ellipses in slice spec not allowed");
  }
  ss_dense d = {0};
  TF_TRY(ss_build_dense(in->rank, begin, end, strides, n, m, &d, st));
  out->rank = in->rank;
  out->identity = true;
  for (int i = 0; i < in->rank; i++) {
    if (d.stride[i] == 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "strides[%d] must be non-zero", i);
    }
    TF_TRY(ss_dim(&d, i, in->dims[i], begin && end, out, st));
  }
  out->final.rank = 0;
  for (int g = 0; g < d.n_gather; g++) {
    if (d.gather[g] == SS_SHRINK) {
      continue;
    }
    if (out->final.rank == TF_MAX_RANK) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "StridedSlice: output would have more than %d "
                           "dimensions",
                           TF_MAX_RANK);
    }
    int64_t v = d.gather[g] == SS_NEW_AXIS ? 1 : out->size[d.gather[g]];
    out->final.dims[out->final.rank++] = v;
  }
  return TF_OK;
}

tf_code tf__slice_masks_read(const tf_node *n, tf__slice_masks *m, tf_status *st) {
  TF_TRY(tf_node_attr_get_int(n, "begin_mask", &m->begin, st));
  TF_TRY(tf_node_attr_get_int(n, "end_mask", &m->end, st));
  TF_TRY(tf_node_attr_get_int(n, "ellipsis_mask", &m->ellipsis, st));
  TF_TRY(tf_node_attr_get_int(n, "new_axis_mask", &m->new_axis, st));
  return tf_node_attr_get_int(n, "shrink_axis_mask", &m->shrink_axis, st);
}
