/* cpu_tensor_array.h: the TensorArray resource behind the TensorArrayV3
 * ops (ops_tensor_array.c): a growable table of tensors in the step's own
 * resource manager (tf_kernel_step_resources), so it dies with the step.
 *
 * Invariants: every element is written at most once, except in a gradient
 * array, where a second write adds to the first; an element read with
 * clear_after_read is dropped and cannot be read or written again; an
 * element's shape is remembered once written (also after a clearing read)
 * so a gradient array can hand out zeros of that shape for elements the
 * backward pass never wrote. All functions lock the array; errors name it
 * ("TensorArray 'name'") and the index. */
#ifndef TF_DEVICES_CPU_TENSOR_ARRAY_H
#define TF_DEVICES_CPU_TENSOR_ARRAY_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/framework/resource.h"

/* The most elements one array may hold. */
#define TF__TA_MAX_SIZE ((int64_t)1 << 22)
/* The container of the handle: [TF__TA_CONTAINER, key]. */
#define TF__TA_CONTAINER "_tensor_arrays"

typedef struct tf__tensor_array tf__tensor_array;

typedef struct tf__ta_config {
  tf_dtype dtype;
  tf_shape element_shape; /* may be partial or of unknown rank */
  int64_t size;
  bool dynamic_size, clear_after_read, identical_shapes;
  const char *display; /* for errors: tensor_array_name or the node's name */
} tf__ta_config;

extern const tf_resource_type tf__tensor_array_type;

/* A new array (one reference) named key; INVALID_ARGUMENT for a negative
 * size or one above TF__TA_MAX_SIZE. */
tf_code tf__ta_new(const tf__ta_config *cfg, const char *key,
                   tf__tensor_array **out, tf_status *st);
/* The array behind resource r, or NULL when r is something else. */
tf__tensor_array *tf__ta_cast(tf_resource *r);
static inline tf_resource *tf__ta_resource(tf__tensor_array *ta) {
  return (tf_resource *)ta;
}
/* For errors: the array's display name. */
const char *tf__ta_name(const tf__tensor_array *ta);
tf_dtype tf__ta_dtype(const tf__tensor_array *ta);
/* The array's element_shape (possibly partial). */
tf_shape tf__ta_element_shape(const tf__tensor_array *ta);

/* Stores value (adds a reference) at index. Errors: a closed array, a
 * dtype or shape that does not fit, an index out of range (a dynamic array
 * whose size is not frozen grows instead, up to TF__TA_MAX_SIZE), an index
 * already written (a gradient array adds instead) or already read and
 * cleared. */
tf_code tf__ta_write(tf__tensor_array *ta, int64_t index, tf_tensor *value,
                     tf_status *st);
/* The elements at idx[0..n) as new references in out[0..n) (zeros of the
 * known shape for an unwritten one, else FAILED_PRECONDITION); clears each
 * as it is read when the array has clear_after_read, so an index listed
 * twice is then an error. On error out[] holds nothing. */
tf_code tf__ta_read(tf__tensor_array *ta, const int64_t *idx, int64_t n,
                    tf_tensor **out, tf_status *st);
/* The current size. */
int64_t tf__ta_size(tf__tensor_array *ta);
/* Drops every element; later reads and writes fail. */
void tf__ta_close(tf__tensor_array *ta);

/* The gradient array of fwd: same dtype, element shape and size, not
 * dynamic, clear_after_read, writes that add up, and each element's
 * shape copied from fwd's elements written so far. Freezes fwd's size. */
tf_code tf__ta_new_grad(tf__tensor_array *fwd, const char *key,
                        const char *source, tf__tensor_array **out,
                        tf_status *st);
/* Copies into grad the shapes of fwd's elements written since grad was
 * made (a later TensorArrayGradV3 on the same pair). */
void tf__ta_sync_grad_shapes(tf__tensor_array *fwd, tf__tensor_array *grad);

#endif
