/* tensor.h: shapes and refcounted tensors.
 *
 * A tf_tensor is a heap object with an atomic reference count: the creator
 * holds one reference, tf_tensor_ref adds one, tf_tensor_unref drops one and
 * frees at zero. Its data lives in a tf_buffer (also refcounted) from a
 * device allocator, 64-byte aligned on CPU (wrapped memory: aligned to
 * the element size); views
 * (Reshape) share a buffer.
 * Element counts and byte sizes are overflow-checked at creation. */
#ifndef TF_TENSOR_H
#define TF_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/allocator.h"
#include "tf/dtype.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_MAX_RANK 8
#define TF_UNKNOWN_RANK (-1)
#define TF_UNKNOWN_DIM (-1)

/* A shape; in shape inference rank may be TF_UNKNOWN_RANK and dims
 * TF_UNKNOWN_DIM. A tensor's shape is always fully defined. */
typedef struct tf_shape {
  int32_t rank;
  int64_t dims[TF_MAX_RANK];
} tf_shape;

/* dims may be NULL: every dim is then unknown. */
TF_API tf_shape tf_shape_make(int rank, const int64_t *dims);
/* tf_shape_of(2, 3, 4) is the shape [3, 4]; tf_shape_of(0) a scalar.
 * Rank must be 0..8; dims are converted to int64_t. In C++ it is an
 * inline function template (C++ has no compound literals). */
#ifndef __cplusplus
#define tf_shape_of(rank, ...)                                                 \
  tf_shape_make((rank), (const int64_t[TF_MAX_RANK]){__VA_ARGS__})
#else
#define tf_shape_of(...) tf__shape_of_cxx(__VA_ARGS__)
#endif
TF_API tf_shape tf_shape_unknown(void);
TF_API tf_shape tf_shape_scalar(void);
TF_API bool tf_shape_is_fully_defined(const tf_shape *s);
TF_API bool tf_shape_equal(const tf_shape *a, const tf_shape *b);
/* Product of dims; -1 if not fully defined or on int64 overflow. */
TF_API int64_t tf_shape_num_elements(const tf_shape *s);
/* Checks rank, dims >= 0 and that the element count times elem_size fits in
 * int64 (and size_t); INVALID_ARGUMENT naming the shape otherwise. */
TF_API tf_code tf_shape_check(const tf_shape *s, size_t elem_size,
                              int64_t *n_out, tf_status *st);
/* Writes "[2,3]", "[?,3]", "<unknown>"; returns buf. */
TF_API char *tf_shape_str(const tf_shape *s, char *buf, size_t size);
/* NumPy broadcasting of a and b (unknown dims allowed: a known 1 against
 * unknown gives unknown). INVALID_ARGUMENT naming both shapes on conflict. */
TF_API tf_code tf_shape_broadcast(const tf_shape *a, const tf_shape *b,
                                  tf_shape *out, tf_status *st);
/* Merges two partially known shapes into the most specific shape both
 * describe (TF's TensorShape.merge_with): an unknown rank (< 0) takes the
 * other side's rank and dims, an unknown dim (< 0) the other side's dim;
 * unknown stays TF_UNKNOWN_RANK / TF_UNKNOWN_DIM. On a conflict (both ranks
 * known and different, or one dim known on both sides with different
 * values) INVALID_ARGUMENT naming both shapes and where they differ
 * ("shapes [2,3] and [2,4] are incompatible: dimension 1 is 3 vs 4"), and
 * *out is left as it was. out may be a or b; st may be NULL. */
TF_API tf_code tf_shape_merge(const tf_shape *a, const tf_shape *b,
                              tf_shape *out, tf_status *st);

typedef struct tf_buffer tf_buffer; /* opaque refcounted storage */

typedef struct tf_tensor {
  tf_dtype dtype;
  tf_shape shape;   /* fully defined */
  int64_t n;        /* number of elements */
  size_t nbytes;    /* n * tf_dtype_size(dtype) */
  void *data;       /* aligned element storage (NULL-free even when n == 0) */
  tf_buffer *buf;   /* owner of data; shared by views */
  int32_t refs;     /* private: atomic, use tf_tensor_ref/unref */
} tf_tensor;

/* New tensor with uninitialised numeric data (string elements are empty) on
 * the CPU allocator. RESOURCE_EXHAUSTED when memory is short,
 * INVALID_ARGUMENT on a bad shape or dtype. The caller owns one reference. */
TF_API tf_code tf_tensor_new(tf_dtype dt, const tf_shape *shape,
                             tf_tensor **out, tf_status *st);
/* As tf_tensor_new on the given allocator. */
TF_API tf_code tf_tensor_new_on(tf_allocator *a, tf_dtype dt,
                                const tf_shape *shape, tf_tensor **out,
                                tf_status *st);
/* As tf_tensor_new, with all bytes zero (0, 0.0, false, ""). */
TF_API tf_code tf_tensor_new_zeros(tf_dtype dt, const tf_shape *shape,
                                   tf_tensor **out, tf_status *st);
/* New tensor holding a copy of nbytes bytes at data (not for strings). */
TF_API tf_code tf_tensor_from_data(tf_dtype dt, const tf_shape *shape,
                                   const void *data, size_t nbytes,
                                   tf_tensor **out, tf_status *st);
/* A tensor over memory the caller owns (TensorFlow's TF_NewTensor with a
 * deallocator): nbytes at data must be exactly the elements' bytes (not for
 * strings) and aligned to the element size; release(arg) runs once, when the
 * last reference goes (also if this fails). Kernels may write into it. The
 * wire uses it to hand received payloads to the graph without a copy. */
TF_API tf_code tf_tensor_wrap(tf_dtype dt, const tf_shape *shape, void *data,
                              size_t nbytes, void (*release)(void *arg),
                              void *arg, tf_tensor **out, tf_status *st);

/* Scalar constructors for building graphs and tests; abort on OOM. */
TF_API tf_tensor *tf_tensor_scalar_f32(float v);
TF_API tf_tensor *tf_tensor_scalar_f64(double v);
TF_API tf_tensor *tf_tensor_scalar_i32(int32_t v);
TF_API tf_tensor *tf_tensor_scalar_i64(int64_t v);
TF_API tf_tensor *tf_tensor_scalar_bool(bool v);
/* Vectors copied from arrays; abort on OOM. */
TF_API tf_tensor *tf_tensor_vec_f32(int64_t n, const float *v);
TF_API tf_tensor *tf_tensor_vec_i32(int64_t n, const int32_t *v);
TF_API tf_tensor *tf_tensor_vec_i64(int64_t n, const int64_t *v);

/* Adds a reference; returns t. NULL-safe. */
TF_API tf_tensor *tf_tensor_ref(tf_tensor *t);
/* Drops a reference, freeing at zero. NULL-safe. */
TF_API void tf_tensor_unref(tf_tensor *t);

/* A new tensor of the same buffer with another shape (same element count):
 * no data is copied. INVALID_ARGUMENT if the counts differ. */
TF_API tf_code tf_tensor_view(tf_tensor *t, const tf_shape *shape,
                              tf_tensor **out, tf_status *st);
/* Deep copy (strings included). */
TF_API tf_code tf_tensor_copy(const tf_tensor *t, tf_tensor **out,
                              tf_status *st);
/* True when t's buffer has no other holder, so a kernel may write into it
 * (forward an input to an output). */
TF_API bool tf_tensor_buffer_is_unique(const tf_tensor *t);
/* Allocator that owns t's buffer. */
TF_API tf_allocator *tf_tensor_allocator(const tf_tensor *t);

/* String elements. Index is the flat element index. set copies len bytes. */
TF_API tf_code tf_tensor_set_string(tf_tensor *t, int64_t i, const char *bytes,
                                    size_t len, tf_status *st);
static inline tf_string *tf_tensor_strings(const tf_tensor *t) {
  return (tf_string *)t->data;
}

/* Equal dtype, shape and bytes (strings compared by content). */
TF_API bool tf_tensor_equal(const tf_tensor *a, const tf_tensor *b);
/* Short human summary, e.g. "float32[2,3] {1, 2, 3, ...}"; returns buf. */
TF_API char *tf_tensor_str(const tf_tensor *t, char *buf, size_t size);

/* Element value of any numeric or bool tensor as double (complex: real
 * part), and as int64 (floats truncated toward zero). */
TF_API double tf_tensor_get_f64(const tf_tensor *t, int64_t i);
TF_API int64_t tf_tensor_get_i64(const tf_tensor *t, int64_t i);

#ifdef __cplusplus
}

extern "C++" {
template <typename... Dims>
inline tf_shape tf__shape_of_cxx(int rank, Dims... dims) {
  static_assert(sizeof...(Dims) <= TF_MAX_RANK, "tf_shape_of: rank above 8");
  const int64_t d[TF_MAX_RANK] = {static_cast<int64_t>(dims)...};
  return tf_shape_make(rank, d);
}
}
#endif

#endif
