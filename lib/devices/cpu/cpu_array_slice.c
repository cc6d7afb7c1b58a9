/* cpu_array_slice.c: CPU kernels that take a box out of a tensor or put
 * one around it: Slice, StridedSlice (full TF semantics through
 * tf__strided_slice_spec), Tile and Pad (constant zero), for every dtype.
 * Each is one region copy: Slice and StridedSlice read the input with
 * (possibly negative) strides; Tile reads it through a 2*rank region with
 * stride 0 along the repeats; Pad zero-fills and copies into the interior.
 * Ops that would copy everything unchanged return the input itself. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* ---- Slice ----------------------------------------------------------- */

static tf_code slice_bounds(tf_kernel_ctx *ctx, const tf_tensor *x,
                            int64_t *begin, int64_t *size) {
  const tf_tensor *bt = ctx->inputs[1], *st = ctx->inputs[2];
  int rank = x->shape.rank;
  char a[96], b[96];
  if (bt->shape.rank != 1 || st->shape.rank != 1 || bt->n != rank ||
      st->n != rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected begin and size arguments to be 1-D "
                           "tensors of size %d, but got shapes %s and %s "
                           "instead.",
                           rank, tf_shape_str(&bt->shape, a, sizeof(a)),
                           tf_shape_str(&st->shape, b, sizeof(b)));
  }
  for (int i = 0; i < rank; i++) {
    int64_t dim = x->shape.dims[i];
    begin[i] = tf_tensor_get_i64(bt, i);
    size[i] = tf_tensor_get_i64(st, i);
    if (begin[i] < 0 || begin[i] > dim) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Expected begin[%d] in [0, %" PRId64
                             "], but got %" PRId64,
                             i, dim, begin[i]);
    }
    if (size[i] == -1) {
      size[i] = dim - begin[i];
    }
    if (size[i] < 0 || size[i] > dim - begin[i]) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Expected size[%d] in [0, %" PRId64
                             "], but got %" PRId64,
                             i, dim - begin[i], size[i]);
    }
  }
  return TF_OK;
}

static tf_code slice_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank;
  int64_t begin[TF_MAX_RANK], size[TF_MAX_RANK], strides[TF_MAX_RANK];
  TF_TRY(slice_bounds(ctx, x, begin, size));
  tf_shape os = tf_shape_make(rank, size);
  if (tf_shape_equal(&os, &x->shape)) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  tf__row_major_strides(&x->shape, strides);
  tf__region r = {.rank = rank};
  tf__row_major_strides(&os, r.dstride);
  int64_t soff = 0;
  for (int i = 0; i < rank; i++) {
    r.dims[i] = size[i];
    r.sstride[i] = strides[i];
    soff += begin[i] * strides[i];
  }
  return tf__region_copy(ctx, &r, y, 0, x, soff);
}

/* ---- StridedSlice ---------------------------------------------------- */

typedef struct strided_state {
  tf__slice_masks masks;
} strided_state;

static tf_code strided_init(const tf_node *node, void **state,
                            tf_status *st) {
  strided_state *s = tf__xcalloc(1, sizeof *s);
  if (tf__slice_masks_read(node, &s->masks, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* Reads begin, end and strides (equal-length vectors) into the arrays. */
static tf_code strided_args(tf_kernel_ctx *ctx, int64_t *b, int64_t *e,
                            int64_t *s, int *n) {
  const tf_tensor *bt = ctx->inputs[1], *et = ctx->inputs[2],
                  *stt = ctx->inputs[3];
  char x[96], y[96], z[96];
  if (bt->shape.rank != 1 || et->shape.rank != 1 || stt->shape.rank != 1 ||
      bt->n != et->n || bt->n != stt->n) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected begin, end, and strides to be 1D equal "
                           "size tensors, but got shapes %s, %s, and %s "
                           "instead.",
                           tf_shape_str(&bt->shape, x, sizeof(x)),
                           tf_shape_str(&et->shape, y, sizeof(y)),
                           tf_shape_str(&stt->shape, z, sizeof(z)));
  }
  if (bt->n > 32) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "StridedSlice: %" PRId64
                           " indices given; at most 32 are supported",
                           bt->n);
  }
  *n = (int)bt->n;
  for (int i = 0; i < *n; i++) {
    b[i] = tf_tensor_get_i64(bt, i);
    e[i] = tf_tensor_get_i64(et, i);
    s[i] = tf_tensor_get_i64(stt, i);
  }
  return TF_OK;
}

static tf_code strided_slice_compute(tf_kernel_ctx *ctx) {
  const strided_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  int64_t b[32], e[32], strides[32], in_strides[TF_MAX_RANK];
  int n = 0;
  tf_status st;
  tf__slice_spec spec;
  TF_TRY(strided_args(ctx, b, e, strides, &n));
  if (tf__strided_slice_spec(&x->shape, b, e, strides, n, &s->masks, &spec,
                             &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (spec.identity) { /* same elements in the same order */
    tf_tensor *v;
    if (tf_tensor_view(x, &spec.final, &v, &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
    tf_kernel_set_output(ctx, 0, v);
    tf_tensor_unref(v);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &spec.final, &y));
  tf__row_major_strides(&x->shape, in_strides);
  tf__region r = {.rank = spec.rank};
  tf_shape proc = tf_shape_make(spec.rank, spec.size);
  tf__row_major_strides(&proc, r.dstride);
  int64_t soff = 0;
  for (int i = 0; i < spec.rank; i++) {
    r.dims[i] = spec.size[i];
    r.sstride[i] = spec.stride[i] * in_strides[i];
    soff += spec.begin[i] * in_strides[i];
  }
  return tf__region_copy(ctx, &r, y, 0, x, soff);
}

/* ---- Tile ------------------------------------------------------------ */

static tf_code tile_shape(tf_kernel_ctx *ctx, const tf_tensor *x,
                          const tf_tensor *mt, int64_t *mult, tf_shape *os) {
  int rank = x->shape.rank;
  if (mt->shape.rank != 1 || mt->n != rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected multiples argument to be a vector of "
                           "length %d but got length %" PRId64,
                           rank, mt->shape.rank == 1 ? mt->n : -1);
  }
  os->rank = rank;
  for (int i = 0; i < rank; i++) {
    mult[i] = tf_tensor_get_i64(mt, i);
    if (mult[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Expected multiples[%d] >= 0, but got %" PRId64,
                             i, mult[i]);
    }
    if (__builtin_mul_overflow(x->shape.dims[i], mult[i], &os->dims[i])) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Tile: output dim %d = %" PRId64 " * %" PRId64
                             " overflows int64",
                             i, x->shape.dims[i], mult[i]);
    }
  }
  return TF_OK;
}

static tf_code tile_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank;
  int64_t mult[TF_MAX_RANK], in_strides[TF_MAX_RANK], out_strides[TF_MAX_RANK];
  tf_shape os;
  TF_TRY(tile_shape(ctx, x, ctx->inputs[1], mult, &os));
  if (tf_shape_equal(&os, &x->shape)) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  tf__row_major_strides(&x->shape, in_strides);
  tf__row_major_strides(&os, out_strides);
  /* Output dim k as [mult[k], dims[k]]: the repeat reads stride 0. */
  tf__region r = {.rank = 2 * rank};
  for (int k = 0; k < rank; k++) {
    r.dims[2 * k] = mult[k];
    r.sstride[2 * k] = 0;
    r.dstride[2 * k] = x->shape.dims[k] * out_strides[k];
    r.dims[2 * k + 1] = x->shape.dims[k];
    r.sstride[2 * k + 1] = in_strides[k];
    r.dstride[2 * k + 1] = out_strides[k];
  }
  return tf__region_copy(ctx, &r, y, 0, x, 0);
}

/* ---- Pad ------------------------------------------------------------- */

static tf_code pad_shape(tf_kernel_ctx *ctx, const tf_tensor *x,
                         const tf_tensor *p, int64_t *before, tf_shape *os) {
  int rank = x->shape.rank;
  char a[96], b[96];
  if (p->shape.rank != 2 || p->shape.dims[1] != 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "paddings must be a matrix with 2 columns: %s",
                           tf_shape_str(&p->shape, a, sizeof(a)));
  }
  if (p->shape.dims[0] != rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "The first dimension of paddings must be the rank "
                           "of inputs %s, got paddings of shape %s",
                           tf_shape_str(&x->shape, a, sizeof(a)),
                           tf_shape_str(&p->shape, b, sizeof(b)));
  }
  os->rank = rank;
  for (int i = 0; i < rank; i++) {
    int64_t lo = tf_tensor_get_i64(p, 2 * i), hi = tf_tensor_get_i64(p, 2 * i + 1);
    if (lo < 0 || hi < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Paddings must be non-negative: %" PRId64
                             " %" PRId64 " (dim %d)",
                             lo, hi, i);
    }
    before[i] = lo;
    if (__builtin_add_overflow(x->shape.dims[i], lo, &os->dims[i]) ||
        __builtin_add_overflow(os->dims[i], hi, &os->dims[i])) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Pad: output dim %d overflows int64", i);
    }
  }
  return TF_OK;
}

static tf_code pad_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank;
  int64_t before[TF_MAX_RANK];
  tf_shape os;
  TF_TRY(pad_shape(ctx, x, ctx->inputs[1], before, &os));
  if (tf_shape_equal(&os, &x->shape)) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  if (x->dtype != TF_STRING) { /* new string tensors are already "" */
    static const unsigned char zero[8] = {0};
    TF_TRY(tf__fill_value(ctx, y, zero));
  }
  tf__region r = {.rank = rank};
  tf__row_major_strides(&x->shape, r.sstride);
  tf__row_major_strides(&os, r.dstride);
  int64_t doff = 0;
  for (int i = 0; i < rank; i++) {
    r.dims[i] = x->shape.dims[i];
    doff += before[i] * r.dstride[i];
  }
  return tf__region_copy(ctx, &r, y, doff, x, 0);
}

#define ANY_KERNEL(op, init, fn)                                               \
  {op, TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, init, fn, NULL, free, 0}

static const tf_kernel_def array_slice_kernels[] = {
    ANY_KERNEL("Slice", NULL, slice_compute),
    ANY_KERNEL("StridedSlice", strided_init, strided_slice_compute),
    ANY_KERNEL("Tile", NULL, tile_compute),
    ANY_KERNEL("Pad", NULL, pad_compute),
};

TF_REGISTER_KERNELS(array_slice_kernels)
