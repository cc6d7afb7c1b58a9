/* tensor_array.h: graph builders over the TensorArrayV3 ops (docs/ops.md):
 * an array of tensors that lives for one step, the usual way to feed a
 * sequence into a while loop (unstack before, read inside) and collect one
 * out of it (write inside, stack after). Gradients flow through every
 * builder here (tf_gradients).
 *
 * A tf_tensor_array is a value: the handle and the current flow. Every
 * write-like builder (write, scatter, unstack, split) replaces ta->flow
 * with the op's flow output, and every read-like builder takes ta->flow as
 * its flow input, so reads run after the writes made through the same
 * struct. Inside a loop, carry ta->flow as a loop variable (and pass the
 * handle in as a loop invariant). Node names are the op's, uniqued, under
 * the current scope. On error every builder leaves its outputs and *ta
 * unchanged and returns the code with the message in st. */
#ifndef TF_TENSOR_ARRAY_H
#define TF_TENSOR_ARRAY_H

#include <stdbool.h>

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_tensor_array {
  tf_output handle; /* string [2] */
  tf_output flow;   /* float scalar: ordering only */
  tf_dtype dtype;
} tf_tensor_array;

/* Options of tf_tensor_array_new; all-zero (or NULL) gives TensorFlow's
 * defaults. */
typedef struct tf_tensor_array_options {
  const tf_shape *element_shape; /* NULL: unknown */
  bool dynamic_size;             /* writes past the end grow the array */
  bool keep_after_read;          /* clear_after_read = !keep_after_read */
  bool identical_element_shapes;
  const char *name;              /* tensor_array_name; NULL: the node's */
} tf_tensor_array_options;

/* A TensorArrayV3 of size elements (int32 scalar) of dtype. */
TF_API tf_code tf_tensor_array_new(tf_graph *g, tf_dtype dtype, tf_output size,
                                   const tf_tensor_array_options *opts,
                                   tf_tensor_array *ta, tf_status *st);
/* Writes value (of ta->dtype) at index (int32 scalar); updates ta->flow. */
TF_API tf_code tf_tensor_array_write(tf_graph *g, tf_tensor_array *ta,
                                     tf_output index, tf_output value,
                                     tf_status *st);
/* *out = the element at index (int32 scalar). */
TF_API tf_code tf_tensor_array_read(tf_graph *g, const tf_tensor_array *ta,
                                    tf_output index, tf_output *out,
                                    tf_status *st);
/* *out = the elements at indices (int32 vector) stacked on a new axis 0. */
TF_API tf_code tf_tensor_array_gather(tf_graph *g, const tf_tensor_array *ta,
                                      tf_output indices, tf_output *out,
                                      tf_status *st);
/* Writes value[i] at indices[i]; updates ta->flow. */
TF_API tf_code tf_tensor_array_scatter(tf_graph *g, tf_tensor_array *ta,
                                       tf_output indices, tf_output value,
                                       tf_status *st);
/* *out = all elements 0..size-1 stacked on a new axis 0 (a gather of
 * Range(0, Size)). */
TF_API tf_code tf_tensor_array_stack(tf_graph *g, const tf_tensor_array *ta,
                                     tf_output *out, tf_status *st);
/* Writes value[i] at index i for every row of value; updates ta->flow. */
TF_API tf_code tf_tensor_array_unstack(tf_graph *g, tf_tensor_array *ta,
                                       tf_output value, tf_status *st);
/* *value = all elements concatenated on axis 0; *lengths (may be NULL) =
 * each one's rows (int64). */
TF_API tf_code tf_tensor_array_concat(tf_graph *g, const tf_tensor_array *ta,
                                      tf_output *value, tf_output *lengths,
                                      tf_status *st);
/* Splits value on axis 0 into pieces of lengths (int64 vector), piece i
 * at index i; updates ta->flow. */
TF_API tf_code tf_tensor_array_split(tf_graph *g, tf_tensor_array *ta,
                                     tf_output value, tf_output lengths,
                                     tf_status *st);
/* *out = the current size (int32 scalar). */
TF_API tf_code tf_tensor_array_size(tf_graph *g, const tf_tensor_array *ta,
                                    tf_output *out, tf_status *st);
/* A TensorArrayCloseV3 node (*out may be NULL): drops the elements when it
 * runs; later operations on the array fail. */
TF_API tf_code tf_tensor_array_close(tf_graph *g, const tf_tensor_array *ta,
                                     tf_node **out, tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
