/* ckpt_slice.h: TensorFlow's shape_and_slice text and the N-d boxes it
 * names (internal). "10 20 0,5:-" is the full shape [10, 20] and the box
 * of rows 0..4 and every column; "" is the whole tensor. SaveV2 stores a
 * slice with its box, and RestoreV2 assembles a requested box from the
 * stored boxes that overlap it with tf__ckpt_box_copy. */
#ifndef TF_CORE_SERIALIZE_CKPT_SLICE_H
#define TF_CORE_SERIALIZE_CKPT_SLICE_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/tensor.h"

/* Elements [start[d], start[d] + len[d]) of each dim d of a full shape. */
typedef struct tf_ckpt_box {
  int rank;
  int64_t start[TF_MAX_RANK];
  int64_t len[TF_MAX_RANK];
} tf_ckpt_box;

/* Parses text (NULL or "": *whole = true, full and box untouched).
 * Otherwise the full shape ("dim dim ... " then the slice, each of rank
 * >= 1 and at most TF_MAX_RANK dims) and the slice: one "start,length"
 * (start >= 0, length >= 1) or "-" (the whole dim) per dim, joined by ':',
 * inside the full shape. INVALID_ARGUMENT quoting text otherwise. */
tf_code tf__ckpt_slice_parse(const char *text, tf_shape *full,
                             tf_ckpt_box *box, bool *whole, tf_status *st);
/* TensorFlow's text for box of full ("-" for a whole dim); NUL-terminated
 * in buf (size >= 512 always suffices for TF_MAX_RANK dims); returns buf. */
char *tf__ckpt_slice_str(const tf_shape *full, const tf_ckpt_box *box,
                         char *buf, size_t size);

/* The box of the whole of full. */
tf_ckpt_box tf__ckpt_box_whole(const tf_shape *full);
/* The shape of the box's elements (its lengths). */
tf_shape tf__ckpt_box_shape(const tf_ckpt_box *b);
/* Elements in b; -1 when the count overflows int64. */
int64_t tf__ckpt_box_volume(const tf_ckpt_box *b);
bool tf__ckpt_box_equal(const tf_ckpt_box *a, const tf_ckpt_box *b);
/* Whether a holds every element of b (same rank). */
bool tf__ckpt_box_contains(const tf_ckpt_box *a, const tf_ckpt_box *b);
/* The common part of a and b (same rank) in *out; false when it is empty. */
bool tf__ckpt_box_intersect(const tf_ckpt_box *a, const tf_ckpt_box *b,
                            tf_ckpt_box *out);

/* Copies the elements of region r from src, which holds box sb, into dst,
 * which holds box db (r inside both; same dtype; ranks equal; strings are
 * deep-copied). RESOURCE_EXHAUSTED only when a string cannot be copied. */
tf_code tf__ckpt_box_copy(tf_tensor *dst, const tf_ckpt_box *db,
                          const tf_tensor *src, const tf_ckpt_box *sb,
                          const tf_ckpt_box *r, tf_status *st);
/* Sets to 1 the bytes of mask (one per element of box db, row-major) that
 * region r (inside db) covers. */
void tf__ckpt_box_mark(uint8_t *mask, const tf_ckpt_box *db,
                       const tf_ckpt_box *r);

#endif
