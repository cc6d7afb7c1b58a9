/* array_spec.h: index arithmetic shared by the array and reduction ops'
 * shape functions (lib/core/ops) and their kernels (lib/devices).
 *
 * Each function follows TensorFlow's rules and error messages exactly, so a
 * bad graph fails with the same words at graph-build time (where dims may be
 * unknown, -1) as at run time. Messages go to st without a node prefix; the
 * caller adds it (tf_shape_error, tf_kernel_error). Not public API. */
#ifndef TF_CORE_OPS_ARRAY_SPEC_H
#define TF_CORE_OPS_ARRAY_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/graph.h"
#include "tf/tensor.h"

/* Reads the reduction axes in an int32/int64 tensor of rank 0 or 1 against
 * an input of the given rank (0..8) into a bitmask (bit k: dim k reduced).
 * Negative axes count from the end. INVALID_ARGUMENT on a bad rank of axes,
 * an axis out of [-rank, rank) or a duplicate axis. */
tf_code tf__reduction_axes(const tf_tensor *axes, int rank, uint32_t *mask,
                           tf_status *st);

/* Normalises a single axis in [-n, n) to [0, n); INVALID_ARGUMENT naming
 * what (e.g. "dimension") and the allowed range otherwise. */
tf_code tf__normalize_axis(int64_t axis, int64_t n, const char *what,
                           int64_t *out, tf_status *st);

/* Output shape of Reshape(tensor of shape in, sizes): sizes is an
 * int32/int64 vector with at most one -1. in may be partially known (shape
 * inference), in which case out may have unknown dims. */
tf_code tf__reshape_shape(const tf_shape *in, const tf_tensor *sizes,
                          tf_shape *out, tf_status *st);

/* The StridedSlice of an input: for input dim k the kernel reads
 * begin[k] + i * stride[k] for i in [0, size[k]); the output has shape
 * final (size with new axes inserted and shrunk axes removed). */
typedef struct tf__slice_spec {
  int rank;               /* input rank */
  int64_t begin[TF_MAX_RANK];
  int64_t stride[TF_MAX_RANK];
  int64_t size[TF_MAX_RANK]; /* -1 when unknown (shape inference) */
  tf_shape final;
  bool identity;          /* every dim taken whole with stride 1 */
} tf__slice_spec;

/* Masks of StridedSlice, as in TensorFlow. */
typedef struct tf__slice_masks {
  int64_t begin, end, ellipsis, new_axis, shrink_axis;
} tf__slice_masks;

/* Reads the five *_mask attrs of a StridedSlice-like node. */
tf_code tf__slice_masks_read(const tf_node *n, tf__slice_masks *m, tf_status *st);

/* Computes the spec for an input of shape in (rank known; dims may be -1)
 * and n-element begin/end/strides (begin/end NULL when not known at graph
 * time, strides must be known). Full TensorFlow semantics: negative
 * indices and strides, clamping, all five masks. */
tf_code tf__strided_slice_spec(const tf_shape *in, const int64_t *begin,
                               const int64_t *end, const int64_t *strides,
                               int n, const tf__slice_masks *m,
                               tf__slice_spec *out, tf_status *st);

#endif
