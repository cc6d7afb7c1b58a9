/* cpu_array_copy.h: the data-movement engine behind the CPU array kernels
 * (Transpose, ConcatV2, Concat, Split, Pack, Unpack, Slice, StridedSlice,
 * Tile, Pad) and the index odometer the reductions share.
 *
 * A region is an N-d box of elements with one stride per dim on each side
 * (in elements, any sign, 0 to repeat a source element). Every array op
 * becomes one or a few region copies: the engine merges dims that are
 * contiguous on both sides, then copies whole rows with memcpy, blocks
 * transposes into cache-sized tiles, or walks strides, split over the
 * intra-op pool. Strings are deep-copied. */
#ifndef TF_DEVICES_CPU_ARRAY_COPY_H
#define TF_DEVICES_CPU_ARRAY_COPY_H

#include <stdint.h>

#include "lib/core/framework/kernel.h"

#define TF__REGION_MAX_RANK 16

/* Mixed-radix counter over dims[0..n) (last dim fastest) keeping two
 * running offsets: off0 = sum idx[k] * s0[k], off1 likewise with s1. */
typedef struct tf__odo {
  int n;
  const int64_t *dims, *s0, *s1;
  int64_t idx[TF__REGION_MAX_RANK];
  int64_t off0, off1;
} tf__odo;

/* Positions o at flat index flat (row-major over dims). */
static inline void tf__odo_seek(tf__odo *o, int n, const int64_t *dims,
                                const int64_t *s0, const int64_t *s1,
                                int64_t flat) {
  o->n = n;
  o->dims = dims;
  o->s0 = s0;
  o->s1 = s1;
  o->off0 = o->off1 = 0;
  for (int k = n - 1; k >= 0; k--) {
    o->idx[k] = flat % dims[k];
    flat /= dims[k];
    o->off0 += o->idx[k] * s0[k];
    o->off1 += o->idx[k] * s1[k];
  }
}

/* Advances to the next index (wrapping to all zeros after the last). */
static inline void tf__odo_next(tf__odo *o) {
  for (int k = o->n - 1; k >= 0; k--) {
    o->off0 += o->s0[k];
    o->off1 += o->s1[k];
    if (++o->idx[k] < o->dims[k]) {
      return;
    }
    o->off0 -= o->s0[k] * o->dims[k];
    o->off1 -= o->s1[k] * o->dims[k];
    o->idx[k] = 0;
  }
}

typedef struct tf__region {
  int rank;
  int64_t dims[TF__REGION_MAX_RANK];
  int64_t sstride[TF__REGION_MAX_RANK]; /* source, in elements */
  int64_t dstride[TF__REGION_MAX_RANK]; /* destination, in elements */
} tf__region;

/* Row-major strides (in elements) of shape s into strides[0..rank). */
void tf__row_major_strides(const tf_shape *s, int64_t *strides);

/* Drops dims of size 1 and merges neighbours that are contiguous on both
 * sides; the copy is unchanged. A region with a 0 dim keeps it. */
void tf__region_simplify(tf__region *r);

/* Copies the region: element idx goes from src element
 * soff + sum idx[k] * sstride[k] to dst element doff + sum idx[k] *
 * dstride[k]. dst and src have the same dtype and must not overlap. The
 * caller guarantees every offset is in bounds. Errors (only
 * RESOURCE_EXHAUSTED while copying strings) are set on ctx. */
tf_code tf__region_copy(tf_kernel_ctx *ctx, const tf__region *r,
                        tf_tensor *dst, int64_t doff, const tf_tensor *src,
                        int64_t soff);

/* Sets every element of dst to *value (an element of dst's dtype; for
 * strings a tf_string, deep-copied). */
tf_code tf__fill_value(tf_kernel_ctx *ctx, tf_tensor *dst, const void *value);

#endif
