/* cpu_array_index.h: helpers shared by the CPU index kernels
 * (cpu_array_index.c, cpu_array_index_partition.c): row copies that also
 * deep-copy string elements, and index coordinates for error messages. */
#ifndef TF_DEVICES_CPU_ARRAY_INDEX_H
#define TF_DEVICES_CPU_ARRAY_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/framework/kernel.h"

/* Writes the coordinates of flat element i of shape s as "[1,2]" ("" for a
 * scalar) into buf; returns buf. */
char *tf__index_coords(const tf_shape *s, int64_t i, char *buf, size_t size);

/* Copies n elements from src (starting at element s) to dst (at element d).
 * Strings are deep-copied; RESOURCE_EXHAUSTED (on ctx) if that fails. */
tf_code tf__copy_elems(tf_kernel_ctx *ctx, tf_tensor *dst, int64_t d,
                       const tf_tensor *src, int64_t s, int64_t n);

/* Whether data's shape starts with prefix's dims. */
bool tf__shape_starts_with(const tf_shape *data, const tf_shape *prefix);

/* Product of s->dims[from:to]. */
int64_t tf__dims_product(const tf_shape *s, int from, int to);

#endif
