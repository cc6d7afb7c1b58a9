/* cpu_segment.c: CPU kernels for SegmentSum and UnsortedSegmentMax over
 * float32, float64, int32 and int64 data with int32/int64 segment ids.
 *
 * Both read and validate every id first (TF's messages), then fold data
 * rows (the elements after the ids' dims) into output rows in order.
 * SegmentSum: ids sorted and >= 0, output rows = last id + 1, rows with no
 * id are 0; integer sums wrap like TF's. UnsortedSegmentMax: negative ids
 * are dropped, ids >= num_segments are an error, empty segments hold the
 * dtype's lowest value (-FLT_MAX, -DBL_MAX, INT_MIN; TF's
 * numeric_limits<T>::lowest(), not -inf); a NaN in a segment makes that
 * element NaN, as this library's Max does. */
#include <float.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

typedef struct seg_rows {
  const void *data;
  void *out;
  const int64_t *ids; /* validated; -1 for dropped */
  int64_t n_ids, inner;
} seg_rows;

#define SEG_ADD(a, b) ((a) + (b))
#define SEG_MAXF(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define SEG_MAXI(a, b) ((b) > (a) ? (b) : (a))

/* out row ids[i] = OP(out row, data row i) for every kept i; A is the
 * type the arithmetic runs in (unsigned for wrapping integer sums). */
#define SEG_FOLD(name, T, A, OP)                                               \
  static void name(const seg_rows *r) {                                        \
    const T *restrict src = r->data;                                           \
    T *restrict dst = r->out;                                                  \
    for (int64_t i = 0; i < r->n_ids; i++) {                                   \
      if (r->ids[i] < 0) {                                                     \
        continue;                                                              \
      }                                                                        \
      const T *restrict s = src + i * r->inner;                                \
      T *restrict d = dst + r->ids[i] * r->inner;                              \
      for (int64_t c = 0; c < r->inner; c++) {                                 \
        d[c] = (T)OP((A)d[c], (A)s[c]);                                        \
      }                                                                        \
    }                                                                          \
  }

SEG_FOLD(sum_f32, float, float, SEG_ADD)
SEG_FOLD(sum_f64, double, double, SEG_ADD)
SEG_FOLD(sum_i32, int32_t, uint32_t, SEG_ADD)
SEG_FOLD(sum_i64, int64_t, uint64_t, SEG_ADD)
SEG_FOLD(max_f32, float, float, SEG_MAXF)
SEG_FOLD(max_f64, double, double, SEG_MAXF)
SEG_FOLD(max_i32, int32_t, int32_t, SEG_MAXI)
SEG_FOLD(max_i64, int64_t, int64_t, SEG_MAXI)

static void seg_fold(tf_dtype dt, bool is_max, const seg_rows *r) {
  switch (dt) {
  case TF_FLOAT32: is_max ? max_f32(r) : sum_f32(r); break;
  case TF_FLOAT64: is_max ? max_f64(r) : sum_f64(r); break;
  case TF_INT32: is_max ? max_i32(r) : sum_i32(r); break;
  default: is_max ? max_i64(r) : sum_i64(r); break;
  }
}

/* Fills t with the lowest value of its dtype. */
static void fill_lowest(tf_tensor *t) {
  for (int64_t i = 0; i < t->n; i++) {
    switch (t->dtype) {
    case TF_FLOAT32: ((float *)t->data)[i] = -FLT_MAX; break;
    case TF_FLOAT64: ((double *)t->data)[i] = -DBL_MAX; break;
    case TF_INT32: ((int32_t *)t->data)[i] = INT32_MIN; break;
    default: ((int64_t *)t->data)[i] = INT64_MIN; break;
    }
  }
}

static bool seg_dtype_ok(tf_dtype dt) {
  return dt == TF_FLOAT32 || dt == TF_FLOAT64 || dt == TF_INT32 ||
         dt == TF_INT64;
}

/* Reads sorted ids into *ids (caller frees) and the output row count. */
static tf_code sorted_ids(tf_kernel_ctx *ctx, int64_t **ids, int64_t *rows) {
  const tf_tensor *data = ctx->inputs[0], *t = ctx->inputs[1];
  char a[128], b[128];
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "segment_ids should be "
                           "a vector, got shape %s",
                           tf_shape_str(&t->shape, a, sizeof a));
  }
  if (data->shape.rank < 1 || data->shape.dims[0] != t->n) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "segment_ids should be "
                           "the same size as dimension 0 of input: "
                           "segment_ids %s, data %s",
                           tf_shape_str(&t->shape, a, sizeof a),
                           tf_shape_str(&data->shape, b, sizeof b));
  }
  int64_t *v = tf__xmalloc(((size_t)t->n + 1) * sizeof *v);
  for (int64_t i = 0; i < t->n; i++) {
    v[i] = tf_tensor_get_i64(t, i);
    const char *bad = v[i] < 0 ? "segment ids must be >= 0"
                      : i > 0 && v[i] < v[i - 1] ? "segment ids are not "
                                                   "increasing"
                                                 : NULL;
    if (bad != NULL) {
      free(v);
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s: segment_ids[%"
                             PRId64 "] = %" PRId64, bad, i,
                             tf_tensor_get_i64(t, i));
    }
  }
  *rows = t->n > 0 ? v[t->n - 1] + 1 : 0;
  *ids = v;
  return TF_OK;
}

static tf_code segment_sum_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *data = ctx->inputs[0];
  if (!seg_dtype_ok(data->dtype)) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU kernel for data "
                           "of %s", tf_dtype_name(data->dtype));
  }
  int64_t *ids = NULL, rows = 0;
  TF_TRY(sorted_ids(ctx, &ids, &rows));
  tf_shape os = data->shape;
  os.dims[0] = rows;
  tf_tensor *out;
  tf_code rc = tf_kernel_alloc_output(ctx, 0, data->dtype, &os, &out);
  if (rc == TF_OK) {
    memset(out->data, 0, out->nbytes);
    int64_t inner = 1;
    for (int d = 1; d < data->shape.rank; d++) {
      inner *= data->shape.dims[d];
    }
    seg_rows r = {.data = data->data, .out = out->data, .ids = ids,
                  .n_ids = data->shape.dims[0], .inner = inner};
    seg_fold(data->dtype, false, &r);
  }
  free(ids);
  return rc;
}

/* Checks the unsorted op's shapes; *num and *os get the output rows and
 * shape. */
static tf_code unsorted_check(tf_kernel_ctx *ctx, int64_t *num, tf_shape *os) {
  const tf_tensor *data = ctx->inputs[0], *ids = ctx->inputs[1];
  const tf_tensor *ns = ctx->inputs[2];
  char a[128], b[128];
  if (ns->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "num_segments must be a "
                           "scalar, got shape %s",
                           tf_shape_str(&ns->shape, a, sizeof a));
  }
  *num = tf_tensor_get_i64(ns, 0);
  if (*num < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "num_segments must be "
                           ">= 0, got %" PRId64, *num);
  }
  bool prefix = ids->shape.rank <= data->shape.rank;
  for (int d = 0; prefix && d < ids->shape.rank; d++) {
    prefix = ids->shape.dims[d] == data->shape.dims[d];
  }
  if (!prefix) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "segment_ids shape %s "
                           "must be a prefix of data shape %s",
                           tf_shape_str(&ids->shape, a, sizeof a),
                           tf_shape_str(&data->shape, b, sizeof b));
  }
  os->rank = 1 + data->shape.rank - ids->shape.rank;
  if (os->rank > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "output rank %d exceeds "
                           "the maximum %d", os->rank, TF_MAX_RANK);
  }
  os->dims[0] = *num;
  for (int d = ids->shape.rank; d < data->shape.rank; d++) {
    os->dims[1 + d - ids->shape.rank] = data->shape.dims[d];
  }
  return TF_OK;
}

static tf_code unsorted_segment_max_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *data = ctx->inputs[0], *ids = ctx->inputs[1];
  if (!seg_dtype_ok(data->dtype)) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU kernel for data "
                           "of %s", tf_dtype_name(data->dtype));
  }
  int64_t num = 0;
  tf_shape os;
  TF_TRY(unsorted_check(ctx, &num, &os));
  int64_t *idv = tf__xmalloc(((size_t)ids->n + 1) * sizeof *idv);
  for (int64_t i = 0; i < ids->n; i++) {
    idv[i] = tf_tensor_get_i64(ids, i);
    if (idv[i] >= num) {
      free(idv);
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "segment_ids[%" PRId64
                             "] = %" PRId64 " is out of range [0, %" PRId64
                             ")", i, tf_tensor_get_i64(ids, i), num);
    }
  }
  tf_tensor *out;
  tf_code rc = tf_kernel_alloc_output(ctx, 0, data->dtype, &os, &out);
  if (rc == TF_OK) {
    fill_lowest(out);
    seg_rows r = {.data = data->data, .out = out->data, .ids = idv,
                  .n_ids = ids->n,
                  .inner = tf_shape_num_elements(&os) / TF_MAX(1, num)};
    if (num == 0) {
      r.n_ids = 0; /* every id is negative (dropped) */
    }
    seg_fold(data->dtype, true, &r);
  }
  free(idv);
  return rc;
}

static const tf_kernel_def segment_kernels[] = {
    {.op = "SegmentSum", .device_type = TF_DEVICE_CPU,
     .compute = segment_sum_compute},
    {.op = "UnsortedSegmentMax", .device_type = TF_DEVICE_CPU,
     .compute = unsorted_segment_max_compute},
};

TF_REGISTER_KERNELS(segment_kernels)
