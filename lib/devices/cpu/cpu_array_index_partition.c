/* cpu_array_index_partition.c: CPU kernels for DynamicPartition,
 * DynamicStitch and Where. Partition and stitch keep TF's ordering rules
 * (slices stay in input order; for duplicate stitch indices the last one
 * wins), so they copy rows on one thread. Where counts and writes the true
 * elements in fixed blocks on the pool, so its output does not depend on the
 * number of threads. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_index.h"

/* Copies one row of rb bytes; 4- and 8-byte rows (a scalar per slice, the
 * common case) become single moves instead of memcpy calls. */
static void copy_row(char *dst, const char *src, size_t rb) {
  if (rb == 4) {
    memcpy(dst, src, 4);
  } else if (rb == 8) {
    memcpy(dst, src, 8);
  } else {
    memcpy(dst, src, rb);
  }
}

/* ---- DynamicPartition -------------------------------------------------------- */

/* Counts rows per partition; INVALID_ARGUMENT naming the first bad id. */
static tf_code partition_count(tf_kernel_ctx *ctx, const tf_tensor *part,
                               int np, int64_t *counts) {
  const int32_t *pv = part->data;
  for (int64_t i = 0; i < part->n; i++) {
    if ((uint32_t)pv[i] >= (uint32_t)np) {
      char c[160];
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "partitions%s = %d is not in [0, %d)",
                             tf__index_coords(&part->shape, i, c, sizeof(c)),
                             (int)pv[i], np);
    }
    counts[pv[i]]++;
  }
  return TF_OK;
}

static tf_code partition_alloc(tf_kernel_ctx *ctx, const tf_tensor *data,
                               int prank, const int64_t *counts) {
  tf_shape s = {.rank = data->shape.rank - prank + 1};
  for (int i = prank; i < data->shape.rank; i++) {
    s.dims[i - prank + 1] = data->shape.dims[i];
  }
  for (int k = 0; k < ctx->n_outputs; k++) {
    s.dims[0] = counts[k];
    TF_TRY(tf_kernel_alloc_output(ctx, k, data->dtype, &s, NULL));
  }
  return TF_OK;
}

static tf_code partition_copy(tf_kernel_ctx *ctx, const tf_tensor *data,
                              const tf_tensor *part, int64_t inner,
                              int64_t *pos) {
  const int32_t *pv = part->data;
  if (data->dtype == TF_STRING) {
    for (int64_t i = 0; i < part->n; i++) {
      tf_tensor *o = ctx->outputs[pv[i]];
      TF_TRY(tf__copy_elems(ctx, o, pos[pv[i]]++ * inner, data, i * inner,
                            inner));
    }
    return TF_OK;
  }
  size_t rb = (size_t)inner * tf_dtype_size(data->dtype);
  const char *src = data->data;
  for (int64_t i = 0; i < part->n; i++) {
    char *dst = (char *)ctx->outputs[pv[i]]->data;
    copy_row(dst + (size_t)pos[pv[i]]++ * rb, src + (size_t)i * rb, rb);
  }
  return TF_OK;
}

static tf_code dynamic_partition_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *data = ctx->inputs[0], *part = ctx->inputs[1];
  int np = ctx->n_outputs;
  if (!tf__shape_starts_with(&data->shape, &part->shape)) {
    char b1[96], b2[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "data.shape must start with partitions.shape, got "
                           "data.shape = %s, partitions.shape = %s",
                           tf_shape_str(&data->shape, b1, sizeof(b1)),
                           tf_shape_str(&part->shape, b2, sizeof(b2)));
  }
  int64_t *counts = tf__xcalloc((size_t)np * 2, sizeof(int64_t));
  int64_t *pos = counts + np;
  tf_code rc = partition_count(ctx, part, np, counts);
  if (rc == TF_OK) {
    rc = partition_alloc(ctx, data, part->shape.rank, counts);
  }
  int64_t inner = tf__dims_product(&data->shape, part->shape.rank,
                                   data->shape.rank);
  if (rc == TF_OK && inner > 0) {
    rc = partition_copy(ctx, data, part, inner, pos);
  }
  free(counts);
  return rc;
}

/* ---- DynamicStitch ----------------------------------------------------------- */

static tf_code stitch_check_shapes(tf_kernel_ctx *ctx, int n) {
  const tf_tensor *ix0 = ctx->inputs[0], *d0 = ctx->inputs[n];
  char b1[96], b2[96], b3[96], b4[96];
  for (int i = 0; i < n; i++) {
    const tf_tensor *ix = ctx->inputs[i], *d = ctx->inputs[n + i];
    if (!tf__shape_starts_with(&d->shape, &ix->shape)) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "data[%d].shape = %s does not start with "
                             "indices[%d].shape = %s", i,
                             tf_shape_str(&d->shape, b1, sizeof(b1)), i,
                             tf_shape_str(&ix->shape, b2, sizeof(b2)));
    }
    bool same = d->shape.rank - ix->shape.rank == d0->shape.rank - ix0->shape.rank;
    for (int k = ix->shape.rank; same && k < d->shape.rank; k++) {
      same = d->shape.dims[k] ==
             d0->shape.dims[k - ix->shape.rank + ix0->shape.rank];
    }
    if (!same) {
      return tf_kernel_error(
          ctx, TF_INVALID_ARGUMENT,
          "Need data[0].shape[%d:] = data[%d].shape[%d:], got data[0].shape "
          "= %s, data[%d].shape = %s, indices[0].shape = %s, indices[%d]"
          ".shape = %s", ix0->shape.rank, i, ix->shape.rank,
          tf_shape_str(&d0->shape, b1, sizeof(b1)), i,
          tf_shape_str(&d->shape, b2, sizeof(b2)),
          tf_shape_str(&ix0->shape, b3, sizeof(b3)), i,
          tf_shape_str(&ix->shape, b4, sizeof(b4)));
    }
  }
  return TF_OK;
}

/* The largest index over all inputs (-1 when all are empty). */
static tf_code stitch_max_index(tf_kernel_ctx *ctx, int n, int64_t *max) {
  *max = -1;
  for (int i = 0; i < n; i++) {
    const tf_tensor *ix = ctx->inputs[i];
    const int32_t *v = ix->data;
    for (int64_t k = 0; k < ix->n; k++) {
      if (v[k] < 0) {
        char c[160];
        return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                               "indices[%d]%s = %d is negative", i,
                               tf__index_coords(&ix->shape, k, c, sizeof(c)),
                               (int)v[k]);
      }
      *max = TF_MAX(*max, (int64_t)v[k]);
    }
  }
  return TF_OK;
}

static tf_code stitch_copy(tf_kernel_ctx *ctx, int n, tf_tensor *out,
                           int64_t inner) {
  size_t rb = (size_t)inner * tf_dtype_size(out->dtype);
  for (int i = 0; i < n; i++) {
    const tf_tensor *ix = ctx->inputs[i], *d = ctx->inputs[n + i];
    const int32_t *v = ix->data;
    for (int64_t k = 0; k < ix->n; k++) {
      if (out->dtype == TF_STRING) {
        TF_TRY(tf__copy_elems(ctx, out, v[k] * inner, d, k * inner, inner));
      } else {
        copy_row((char *)out->data + (size_t)v[k] * rb,
                 (const char *)d->data + (size_t)k * rb, rb);
      }
    }
  }
  return TF_OK;
}

static tf_code dynamic_stitch_compute(tf_kernel_ctx *ctx) {
  int n = ctx->n_inputs / 2;
  TF_TRY(stitch_check_shapes(ctx, n));
  int64_t max;
  TF_TRY(stitch_max_index(ctx, n, &max));
  const tf_tensor *ix0 = ctx->inputs[0], *d0 = ctx->inputs[n];
  int srank = d0->shape.rank - ix0->shape.rank;
  if (srank + 1 > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "output rank %d exceeds the maximum %d", srank + 1,
                           TF_MAX_RANK);
  }
  tf_shape os = {.rank = srank + 1};
  os.dims[0] = max + 1;
  for (int k = 0; k < srank; k++) {
    os.dims[k + 1] = d0->shape.dims[ix0->shape.rank + k];
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, d0->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (out->dtype != TF_STRING) {
    memset(out->data, 0, out->nbytes); /* rows no index names are zero */
  }
  int64_t inner = tf__dims_product(&os, 1, os.rank);
  return stitch_copy(ctx, n, out, inner);
}

/* ---- Where --------------------------------------------------------------- */

#define WHERE_BLOCK 65536
#define WHERE_MAX_BLOCKS 256

typedef struct where_args {
  const void *in;
  int64_t n, block;    /* elements, elements per block */
  int64_t *counts;     /* [n_blocks]: true elements, then output row start */
  int64_t *out;        /* [num_true, rank] */
  tf_shape shape;
} where_args;

/* Coordinates of flat index i in c[0..rank). */
static void where_coords(const tf_shape *s, int64_t i, int64_t *c) {
  for (int k = s->rank - 1; k >= 0; k--) {
    c[k] = i % s->dims[k];
    i /= s->dims[k];
  }
}

/* where_count_NAME counts blocks; where_write_NAME writes coordinates,
 * advancing an odometer instead of dividing per element. */
#define DEFINE_WHERE(NAME, CT, NZ)                                             \
  static void where_count_##NAME(void *arg, int64_t b0, int64_t b1) {         \
    where_args *a = arg;                                                       \
    const CT *restrict x = a->in;                                              \
    for (int64_t b = b0; b < b1; b++) {                                        \
      int64_t e = TF_MIN(a->n, (b + 1) * a->block), c = 0;                     \
      for (int64_t i = b * a->block; i < e; i++) {                             \
        c += (NZ(x[i])) ? 1 : 0;                                               \
      }                                                                        \
      a->counts[b] = c;                                                        \
    }                                                                          \
  }                                                                            \
  static void where_write_##NAME(void *arg, int64_t b0, int64_t b1) {         \
    where_args *a = arg;                                                       \
    const CT *restrict x = a->in;                                              \
    const int r = a->shape.rank;                                               \
    for (int64_t b = b0; b < b1; b++) {                                        \
      int64_t e = TF_MIN(a->n, (b + 1) * a->block), c[TF_MAX_RANK];           \
      int64_t *restrict o = a->out + a->counts[b] * r;                         \
      where_coords(&a->shape, b * a->block, c);                                \
      for (int64_t i = b * a->block; i < e; i++) {                             \
        if (NZ(x[i])) {                                                        \
          memcpy(o, c, (size_t)r * sizeof(int64_t));                           \
          o += r;                                                              \
        }                                                                      \
        for (int k = r - 1; k >= 0 && ++c[k] == a->shape.dims[k]; k--) {      \
          c[k] = 0;                                                            \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

#define NZ_PLAIN(v) ((v) != 0)
#define NZ_HALF(v) (((v)&0x7fff) != 0)
#define NZ_COMPLEX(v) ((v).re != 0 || (v).im != 0)
DEFINE_WHERE(bool, bool, NZ_PLAIN)
DEFINE_WHERE(f32, float, NZ_PLAIN)
DEFINE_WHERE(f64, double, NZ_PLAIN)
DEFINE_WHERE(i8, int8_t, NZ_PLAIN)
DEFINE_WHERE(i16, int16_t, NZ_PLAIN)
DEFINE_WHERE(i32, int32_t, NZ_PLAIN)
DEFINE_WHERE(i64, int64_t, NZ_PLAIN)
DEFINE_WHERE(half, uint16_t, NZ_HALF)
DEFINE_WHERE(c64, tf_complex64, NZ_COMPLEX)

/* Byte-identical element types share a loop: uint8 with int8, and so on. */
static bool where_fns(tf_dtype dt, tf_range_fn *count, tf_range_fn *write) {
  switch (dt) {
  case TF_BOOL: *count = where_count_bool; *write = where_write_bool; break;
  case TF_FLOAT32: *count = where_count_f32; *write = where_write_f32; break;
  case TF_FLOAT64: *count = where_count_f64; *write = where_write_f64; break;
  case TF_INT8: case TF_UINT8:
    *count = where_count_i8; *write = where_write_i8; break;
  case TF_INT16: case TF_UINT16:
    *count = where_count_i16; *write = where_write_i16; break;
  case TF_INT32: case TF_UINT32:
    *count = where_count_i32; *write = where_write_i32; break;
  case TF_INT64: case TF_UINT64:
    *count = where_count_i64; *write = where_write_i64; break;
  case TF_FLOAT16: case TF_BFLOAT16:
    *count = where_count_half; *write = where_write_half; break;
  case TF_COMPLEX64: *count = where_count_c64; *write = where_write_c64; break;
  default: return false;
  }
  return true;
}

static tf_code where_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *in = ctx->inputs[0];
  tf_range_fn count, write;
  if (!where_fns(in->dtype, &count, &write)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Where does not support %s input",
                           tf_dtype_name(in->dtype));
  }
  int64_t nb = (in->n + WHERE_BLOCK - 1) / WHERE_BLOCK;
  nb = TF_MIN(TF_MAX(nb, 1), WHERE_MAX_BLOCKS);
  where_args a = {.in = in->data, .n = in->n, .shape = in->shape,
                  .block = TF_MAX((in->n + nb - 1) / nb, 1)};
  a.counts = tf__xcalloc((size_t)nb, sizeof(int64_t));
  tf_parallel_for(ctx->pool, nb, 1, count, &a);
  int64_t total = 0;
  for (int64_t b = 0; b < nb; b++) {
    int64_t c = a.counts[b];
    a.counts[b] = total;
    total += c;
  }
  int64_t dims[2] = {total, in->shape.rank};
  tf_shape os = tf_shape_make(2, dims);
  tf_tensor *out;
  tf_code rc = tf_kernel_alloc_output(ctx, 0, TF_INT64, &os, &out);
  if (rc == TF_OK && total > 0 && in->shape.rank > 0) {
    a.out = out->data;
    tf_parallel_for(ctx->pool, nb, 1, write, &a);
  }
  free(a.counts);
  return rc;
}

/* ---- registration ---------------------------------------------------------- */

static const tf_kernel_def array_index_partition_kernels[] = {
    {.op = "DynamicPartition", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = dynamic_partition_compute},
    {.op = "DynamicStitch", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = dynamic_stitch_compute},
    {.op = "Where", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .compute = where_compute},
};

TF_REGISTER_KERNELS(array_index_partition_kernels)
