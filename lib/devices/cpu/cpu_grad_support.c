/* cpu_grad_support.c: CPU kernels for StopGradient (forwards its input),
 * BroadcastGradientArgs (int32/int64, TF's BCast reduction indices),
 * UnsortedSegmentSum (float32/float64/int32/int64 data, int32/int64 ids:
 * ids are validated first, then rows are added; large row blocks are split
 * by columns across the pool so no two threads write one element) and
 * CheckNumerics (bfloat16/half/float32/float64). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

static tf_code stop_gradient_compute(tf_kernel_ctx *ctx) {
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

/* ---- BroadcastGradientArgs ------------------------------------------------ */

static tf_code read_shape_vec(tf_kernel_ctx *ctx, int i, int64_t *v, int *n) {
  const tf_tensor *t = ctx->inputs[i];
  char b[96];
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "s%d must be a vector, "
                           "got shape %s", i, tf_shape_str(&t->shape, b,
                                                           sizeof b));
  }
  if (t->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "s%d has %" PRId64
                           " dims, more than the maximum %d", i, t->n,
                           TF_MAX_RANK);
  }
  *n = (int)t->n;
  for (int k = 0; k < *n; k++) {
    v[k] = tf_tensor_get_i64(t, k);
  }
  return TF_OK;
}

static tf_code set_index_vec(tf_kernel_ctx *ctx, int out, tf_dtype dt,
                             const int64_t *v, int n) {
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *t;
  TF_TRY(tf_kernel_alloc_output(ctx, out, dt, &s, &t));
  for (int k = 0; k < n; k++) {
    if (dt == TF_INT32) {
      ((int32_t *)t->data)[k] = (int32_t)v[k];
    } else {
      ((int64_t *)t->data)[k] = v[k];
    }
  }
  return TF_OK;
}

static tf_code bcast_args_compute(tf_kernel_ctx *ctx) {
  int64_t s[2][TF_MAX_RANK], r[2][TF_MAX_RANK];
  int n[2], nr[2] = {0, 0};
  TF_TRY(read_shape_vec(ctx, 0, s[0], &n[0]));
  TF_TRY(read_shape_vec(ctx, 1, s[1], &n[1]));
  int rank = TF_MAX(n[0], n[1]);
  for (int d = 0; d < rank; d++) {
    int64_t a[2];
    for (int k = 0; k < 2; k++) {
      int j = d - (rank - n[k]);
      a[k] = j >= 0 ? s[k][j] : 1;
    }
    if (a[0] != a[1] && a[0] != 1 && a[1] != 1) {
      char x[96], y[96];
      tf_shape sx = tf_shape_make(n[0], s[0]), sy = tf_shape_make(n[1], s[1]);
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "Incompatible shapes: "
                             "%s vs. %s", tf_shape_str(&sx, x, sizeof x),
                             tf_shape_str(&sy, y, sizeof y));
    }
    for (int k = 0; k < 2; k++) {
      if (a[k] == 1 && (a[1 - k] != 1 || a[0] == a[1])) {
        r[k][nr[k]++] = d;
      }
    }
  }
  tf_dtype dt = ctx->inputs[0]->dtype;
  TF_TRY(set_index_vec(ctx, 0, dt, r[0], nr[0]));
  return set_index_vec(ctx, 1, dt, r[1], nr[1]);
}

/* ---- UnsortedSegmentSum --------------------------------------------------- */

typedef struct seg_args {
  const void *data;
  void *out;
  const int64_t *ids; /* validated, -1 for dropped */
  int64_t n_ids, inner;
  tf_dtype dt;
} seg_args;

#define DEFINE_SEG_ADD(T)                                                      \
  static void seg_add_##T(const seg_args *a, int64_t c0, int64_t c1) {         \
    const T *restrict src = a->data;                                           \
    T *restrict dst = a->out;                                                  \
    for (int64_t i = 0; i < a->n_ids; i++) {                                   \
      if (a->ids[i] < 0) {                                                     \
        continue;                                                              \
      }                                                                        \
      const T *restrict s = src + i * a->inner;                                \
      T *restrict d = dst + a->ids[i] * a->inner;                              \
      for (int64_t c = c0; c < c1; c++) {                                      \
        d[c] += s[c];                                                          \
      }                                                                        \
    }                                                                          \
  }

DEFINE_SEG_ADD(float)
DEFINE_SEG_ADD(double)
DEFINE_SEG_ADD(int32_t)
DEFINE_SEG_ADD(int64_t)

static void seg_cols(void *arg, int64_t c0, int64_t c1) {
  const seg_args *a = arg;
  switch (a->dt) {
    case TF_FLOAT32: seg_add_float(a, c0, c1); break;
    case TF_FLOAT64: seg_add_double(a, c0, c1); break;
    case TF_INT32: seg_add_int32_t(a, c0, c1); break;
    default: seg_add_int64_t(a, c0, c1); break;
  }
}

/* Checks the shapes and num_segments; *out_shape gets the output shape. */
static tf_code seg_check(tf_kernel_ctx *ctx, int64_t *num, tf_shape *out_shape) {
  const tf_tensor *data = ctx->inputs[0], *ids = ctx->inputs[1];
  const tf_tensor *ns = ctx->inputs[2];
  char a[128], b[128];
  if (ns->n != 1) {
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
  out_shape->rank = 1 + data->shape.rank - ids->shape.rank;
  if (out_shape->rank > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "output rank %d exceeds "
                           "the maximum %d", out_shape->rank, TF_MAX_RANK);
  }
  out_shape->dims[0] = *num;
  for (int d = ids->shape.rank; d < data->shape.rank; d++) {
    out_shape->dims[1 + d - ids->shape.rank] = data->shape.dims[d];
  }
  return TF_OK;
}

static tf_code seg_sum_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *data = ctx->inputs[0], *ids = ctx->inputs[1];
  int64_t num = 0;
  tf_shape os;
  TF_TRY(seg_check(ctx, &num, &os));
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
    memset(out->data, 0, out->nbytes);
    seg_args a = {.data = data->data, .out = out->data, .ids = idv,
                  .n_ids = ids->n, .dt = data->dtype,
                  .inner = ids->n ? data->n / ids->n : 0};
    if (a.n_ids * a.inner >= TF_PARALLEL_GRAIN && a.inner >= 64) {
      int64_t chunk = TF_MAX(16, TF_PARALLEL_GRAIN / TF_MAX(1, a.n_ids));
      tf_parallel_for(ctx->pool, a.inner, chunk, seg_cols, &a);
    } else if (a.inner > 0) {
      seg_cols(&a, 0, a.inner);
    }
  }
  free(idv);
  return rc;
}

/* ---- CheckNumerics -------------------------------------------------------- */

#define DEFINE_SCAN(T)                                                         \
  static void scan_##T(const T *restrict x, int64_t n, bool *nan, bool *inf) { \
    int any_nan = 0, any_inf = 0;                                              \
    for (int64_t i = 0; i < n; i++) {                                          \
      any_nan |= isnan(x[i]);                                                  \
      any_inf |= isinf(x[i]);                                                  \
    }                                                                          \
    *nan = any_nan != 0;                                                       \
    *inf = any_inf != 0;                                                       \
  }

DEFINE_SCAN(float)
DEFINE_SCAN(double)

static tf_code check_numerics_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *t = ctx->inputs[0];
  bool nan = false, inf = false;
  if (t->dtype == TF_FLOAT32) {
    scan_float(t->data, t->n, &nan, &inf);
  } else if (t->dtype == TF_FLOAT64) {
    scan_double(t->data, t->n, &nan, &inf);
  } else {
    for (int64_t i = 0; i < t->n; i++) {
      double v = tf_tensor_get_f64(t, i);
      nan = nan || isnan(v);
      inf = inf || isinf(v);
    }
  }
  if (nan || inf) {
    const char *msg = "";
    tf_node_attr_get_string(ctx->node, "message", &msg, ctx->status);
    tf_status_init(ctx->status);
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s : Tensor had %s "
                           "values", msg, nan && inf ? "Inf and NaN"
                                          : nan      ? "NaN" : "Inf");
  }
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

static const tf_kernel_def grad_support_kernels[] = {
    {.op = "StopGradient", .device_type = TF_DEVICE_CPU,
     .compute = stop_gradient_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "BroadcastGradientArgs", .device_type = TF_DEVICE_CPU,
     .compute = bcast_args_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "UnsortedSegmentSum", .device_type = TF_DEVICE_CPU,
     .compute = seg_sum_compute},
    {.op = "CheckNumerics", .device_type = TF_DEVICE_CPU,
     .compute = check_numerics_compute},
};

TF_REGISTER_KERNELS(grad_support_kernels)
