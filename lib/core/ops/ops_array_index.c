/* ops_array_index.c: op definitions of the index-producing and
 * index-consuming array ops (Range, Gather, GatherV2, OneHot,
 * DynamicPartition, DynamicStitch, Where) with TensorFlow's signatures and
 * their shape functions. Shape functions accept unknown ranks and dims and
 * reject known shapes that no kernel could run, naming the offending input. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* ---- helpers ---------------------------------------------------------- */

static bool known(const tf_shape *s) { return s->rank != TF_UNKNOWN_RANK; }

static const char *sstr(const tf_shape *s, char *buf, size_t n) {
  return tf_shape_str(s, buf, n);
}

/* A shape of rank r with every dim unknown (unknown rank when r < 0). */
static tf_shape shape_unknown_dims(int r) {
  if (r < 0) {
    return tf_shape_unknown();
  }
  int64_t d[TF_MAX_RANK];
  for (int i = 0; i < r; i++) {
    d[i] = TF_UNKNOWN_DIM;
  }
  return tf_shape_make(r, d);
}

static tf_code require_scalar(tf_shape_ctx *c, int i, const char *what) {
  char b[96];
  if (known(&c->in[i]) && c->in[i].rank != 0) {
    return tf_shape_error(c, "%s must be a scalar, got shape %s", what,
                          sstr(&c->in[i], b, sizeof(b)));
  }
  return TF_OK;
}

/* The value of a constant scalar input as int64; false if not constant. */
static bool const_scalar_i64(const tf_shape_ctx *c, int i, int64_t *v) {
  const tf_tensor *t = c->in_value ? c->in_value[i] : NULL;
  if (t == NULL || t->n != 1 || !tf_dtype_is_integer(t->dtype)) {
    return false;
  }
  *v = tf_tensor_get_i64(t, 0);
  return true;
}

static tf_code check_out_rank(tf_shape_ctx *c, int64_t rank) {
  if (rank > TF_MAX_RANK) {
    return tf_shape_error(c, "output rank %" PRId64 " exceeds the maximum %d",
                          rank, TF_MAX_RANK);
  }
  return TF_OK;
}

/* ---- Range ------------------------------------------------------------- */

static tf_code range_size_int(tf_shape_ctx *c, int64_t s, int64_t l,
                              int64_t d, int64_t *size) {
  if (d == 0) {
    return tf_shape_error(c, "Requires delta != 0: 0");
  }
  if (d > 0 && s > l) {
    return tf_shape_error(c,
                          "Requires start <= limit when delta > 0: %" PRId64
                          "/%" PRId64, s, l);
  }
  if (d < 0 && s < l) {
    return tf_shape_error(c,
                          "Requires start >= limit when delta < 0: %" PRId64
                          "/%" PRId64, s, l);
  }
  uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
  uint64_t step = d > 0 ? (uint64_t)d : 0 - (uint64_t)d;
  /* cppcheck-suppress zerodivcond ; d != 0 was checked above */
  uint64_t n = span / step + (span % step != 0);
  if (n > (uint64_t)INT64_MAX) {
    return tf_shape_error(c, "Range from %" PRId64 " to %" PRId64 " by %" PRId64
                          " has %" PRIu64 " elements, more than int64 holds",
                          s, l, d, n);
  }
  *size = (int64_t)n;
  return TF_OK;
}

static tf_code range_size_float(tf_shape_ctx *c, bool f32, double s, double l,
                                double d, int64_t *size) {
  if (d == 0) {
    return tf_shape_error(c, "Requires delta != 0: 0");
  }
  if (d > 0 && s > l) {
    return tf_shape_error(c, "Requires start <= limit when delta > 0: %g/%g",
                          s, l);
  }
  if (d < 0 && s < l) {
    return tf_shape_error(c, "Requires start >= limit when delta < 0: %g/%g",
                          s, l);
  }
  /* In the element type, as the kernel (and TF) do. */
  double n = f32 ? (double)ceilf(fabsf(((float)l - (float)s) / (float)d))
                 : ceil(fabs((l - s) / d));
  if (!(n <= 9.2e18)) {
    return tf_shape_error(c, "Requires ((limit - start) / delta) <= %" PRId64,
                          INT64_MAX);
  }
  *size = (int64_t)n;
  return TF_OK;
}

static tf_code range_shape(tf_shape_ctx *c) {
  static const char *const names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++) {
    TF_TRY(require_scalar(c, i, names[i]));
  }
  c->out[0] = shape_unknown_dims(1);
  const tf_tensor *v[3];
  for (int i = 0; i < 3; i++) {
    v[i] = c->in_value ? c->in_value[i] : NULL;
    if (v[i] == NULL || v[i]->n != 1) {
      return TF_OK;
    }
  }
  int64_t size = TF_UNKNOWN_DIM;
  if (tf_dtype_is_integer(v[0]->dtype)) {
    TF_TRY(range_size_int(c, tf_tensor_get_i64(v[0], 0),
                          tf_tensor_get_i64(v[1], 0),
                          tf_tensor_get_i64(v[2], 0), &size));
  } else {
    TF_TRY(range_size_float(c, v[0]->dtype == TF_FLOAT32,
                            tf_tensor_get_f64(v[0], 0),
                            tf_tensor_get_f64(v[1], 0),
                            tf_tensor_get_f64(v[2], 0), &size));
  }
  c->out[0].dims[0] = size;
  return TF_OK;
}

/* ---- Gather / GatherV2 --------------------------------------------------- */

/* out = params[:axis] + indices[batch_dims:] + params[axis+1:]. */
static tf_code gather_out(tf_shape_ctx *c, int axis, int batch_dims) {
  const tf_shape *p = &c->in[0], *ix = &c->in[1];
  char b1[96], b2[96];
  for (int i = 0; i < batch_dims; i++) {
    int64_t a = p->dims[i], b = ix->dims[i];
    if (a >= 0 && b >= 0 && a != b) {
      return tf_shape_error(c,
                            "params.shape[%d]: %" PRId64
                            " should be equal to indices.shape[%d]: %" PRId64
                            " (params %s, indices %s)",
                            i, a, i, b, sstr(p, b1, sizeof(b1)),
                            sstr(ix, b2, sizeof(b2)));
    }
  }
  int64_t rank = (int64_t)p->rank - 1 + ix->rank - batch_dims;
  TF_TRY(check_out_rank(c, rank));
  tf_shape o = shape_unknown_dims((int)rank);
  int k = 0;
  for (int i = 0; i < axis; i++) {
    o.dims[k++] = p->dims[i];
  }
  for (int i = batch_dims; i < ix->rank; i++) {
    o.dims[k++] = ix->dims[i];
  }
  for (int i = axis + 1; i < p->rank; i++) {
    o.dims[k++] = p->dims[i];
  }
  c->out[0] = o;
  return TF_OK;
}

static tf_code gather_shape(tf_shape_ctx *c) {
  if (known(&c->in[0]) && c->in[0].rank < 1) {
    return tf_shape_error(c, "params must be at least 1 dimensional");
  }
  if (!known(&c->in[0]) || !known(&c->in[1])) {
    return TF_OK;
  }
  return gather_out(c, 0, 0);
}

static tf_code gather_v2_batch_dims(tf_shape_ctx *c, int64_t *bd) {
  TF_TRY(tf_node_attr_get_int(c->node, "batch_dims", bd, c->status));
  const tf_shape *p = &c->in[0], *ix = &c->in[1];
  if (*bd == 0 || !known(ix)) {
    return TF_OK;
  }
  if (*bd < -(int64_t)ix->rank || *bd > ix->rank) {
    return tf_shape_error(c,
                          "Expected batch_dims in the range [%d, %d], but "
                          "got %" PRId64, -ix->rank, ix->rank, *bd);
  }
  if (*bd < 0) {
    *bd += ix->rank;
  }
  if (known(p) && *bd >= p->rank) {
    return tf_shape_error(c,
                          "batch_dims (%" PRId64
                          ") must be less than rank(params) (%d)",
                          *bd, p->rank);
  }
  return TF_OK;
}

static tf_code gather_v2_shape(tf_shape_ctx *c) {
  const tf_shape *p = &c->in[0], *ix = &c->in[1];
  if (known(p) && p->rank < 1) {
    return tf_shape_error(c, "params must be at least 1 dimensional");
  }
  TF_TRY(require_scalar(c, 2, "axis"));
  int64_t bd;
  TF_TRY(gather_v2_batch_dims(c, &bd));
  if (!known(p) || !known(ix)) {
    return TF_OK;
  }
  int64_t axis;
  if (!const_scalar_i64(c, 2, &axis)) {
    int64_t rank = (int64_t)p->rank - 1 + ix->rank - bd;
    TF_TRY(check_out_rank(c, rank));
    c->out[0] = shape_unknown_dims((int)rank);
    return TF_OK;
  }
  if (axis < -(int64_t)p->rank || axis >= p->rank) {
    return tf_shape_error(c,
                          "Expected axis in the range [%d, %d), but got "
                          "%" PRId64, -p->rank, p->rank, axis);
  }
  if (axis < 0) {
    axis += p->rank;
  }
  if (bd > axis) {
    return tf_shape_error(c,
                          "batch_dims (%" PRId64
                          ") must be less than or equal to axis (%" PRId64 ")",
                          bd, axis);
  }
  return gather_out(c, (int)axis, (int)bd);
}

/* ---- OneHot -------------------------------------------------------------- */

static tf_code one_hot_shape(tf_shape_ctx *c) {
  static const char *const names[4] = {"indices", "depth", "on_value",
                                       "off_value"};
  for (int i = 1; i < 4; i++) {
    TF_TRY(require_scalar(c, i, names[i]));
  }
  int64_t axis;
  TF_TRY(tf_node_attr_get_int(c->node, "axis", &axis, c->status));
  if (axis < -1) {
    return tf_shape_error(c, "axis must be -1 or non-negative, got %" PRId64,
                          axis);
  }
  const tf_shape *ix = &c->in[0];
  if (!known(ix)) {
    return TF_OK;
  }
  if (axis > ix->rank) {
    return tf_shape_error(c,
                          "Expected axis to be -1 or between [0, %d].  But "
                          "received: %" PRId64, ix->rank, axis);
  }
  TF_TRY(check_out_rank(c, (int64_t)ix->rank + 1));
  int a = axis == -1 ? ix->rank : (int)axis;
  int64_t depth = TF_UNKNOWN_DIM;
  if (const_scalar_i64(c, 1, &depth) && depth < 0) {
    return tf_shape_error(c, "depth must be non-negative, got: %" PRId64,
                          depth);
  }
  tf_shape o = shape_unknown_dims(ix->rank + 1);
  for (int i = 0, k = 0; i <= ix->rank; i++) {
    o.dims[i] = i == a ? depth : ix->dims[k++];
  }
  c->out[0] = o;
  return TF_OK;
}

/* ---- DynamicPartition ------------------------------------------------------ */

static tf_code dynamic_partition_shape(tf_shape_ctx *c) {
  const tf_shape *d = &c->in[0], *p = &c->in[1];
  char b1[96], b2[96];
  if (!known(d) || !known(p)) {
    return TF_OK;
  }
  bool ok = p->rank <= d->rank;
  for (int i = 0; ok && i < p->rank; i++) {
    ok = d->dims[i] < 0 || p->dims[i] < 0 || d->dims[i] == p->dims[i];
  }
  if (!ok) {
    return tf_shape_error(c,
                          "data.shape must start with partitions.shape, got "
                          "data.shape = %s, partitions.shape = %s",
                          sstr(d, b1, sizeof(b1)), sstr(p, b2, sizeof(b2)));
  }
  tf_shape o = shape_unknown_dims(d->rank - p->rank + 1);
  for (int i = p->rank; i < d->rank; i++) {
    o.dims[i - p->rank + 1] = d->dims[i];
  }
  for (int i = 0; i < c->n_out; i++) {
    c->out[i] = o;
  }
  return TF_OK;
}

/* ---- DynamicStitch --------------------------------------------------------- */

/* Checks data[i].shape starts with indices[i].shape and merges its trailing
 * dims into *suffix (rank -1 until the first known pair). */
static tf_code stitch_merge(tf_shape_ctx *c, int i, int n, tf_shape *suffix) {
  const tf_shape *ix = &c->in[i], *d = &c->in[n + i];
  char b1[96], b2[96];
  if (!known(ix) || !known(d)) {
    return TF_OK;
  }
  bool ok = ix->rank <= d->rank;
  for (int k = 0; ok && k < ix->rank; k++) {
    ok = d->dims[k] < 0 || ix->dims[k] < 0 || d->dims[k] == ix->dims[k];
  }
  if (!ok) {
    return tf_shape_error(c, "data[%d].shape = %s does not start with "
                          "indices[%d].shape = %s", i, sstr(d, b1, sizeof(b1)),
                          i, sstr(ix, b2, sizeof(b2)));
  }
  int r = d->rank - ix->rank;
  if (suffix->rank < 0) {
    *suffix = tf_shape_make(r, d->dims + ix->rank);
    return TF_OK;
  }
  ok = suffix->rank == r;
  for (int k = 0; ok && k < r; k++) {
    int64_t a = suffix->dims[k], b = d->dims[ix->rank + k];
    ok = a < 0 || b < 0 || a == b;
    if (ok && a < 0) {
      suffix->dims[k] = b;
    }
  }
  if (!ok) {
    return tf_shape_error(c, "Need data[0].shape[indices[0].rank:] = "
                          "data[%d].shape[%d:], got trailing shape %s vs "
                          "data[%d].shape = %s", i, ix->rank,
                          sstr(suffix, b1, sizeof(b1)), i,
                          sstr(d, b2, sizeof(b2)));
  }
  return TF_OK;
}

/* Largest constant index over all indices inputs, -1 when all are empty;
 * false if some input is not constant. */
static bool stitch_const_max(const tf_shape_ctx *c, int n, int64_t *max) {
  *max = -1;
  for (int i = 0; i < n; i++) {
    const tf_tensor *t = c->in_value ? c->in_value[i] : NULL;
    if (t == NULL) {
      return false;
    }
    for (int64_t k = 0; k < t->n; k++) {
      *max = TF_MAX(*max, tf_tensor_get_i64(t, k));
    }
  }
  return true;
}

static tf_code dynamic_stitch_shape(tf_shape_ctx *c) {
  int n = c->n_in / 2;
  tf_shape suffix = tf_shape_unknown();
  for (int i = 0; i < n; i++) {
    TF_TRY(stitch_merge(c, i, n, &suffix));
  }
  if (!known(&suffix)) {
    return TF_OK;
  }
  TF_TRY(check_out_rank(c, (int64_t)suffix.rank + 1));
  tf_shape o = shape_unknown_dims(suffix.rank + 1);
  for (int k = 0; k < suffix.rank; k++) {
    o.dims[k + 1] = suffix.dims[k];
  }
  int64_t max;
  if (stitch_const_max(c, n, &max)) {
    o.dims[0] = max + 1;
  }
  c->out[0] = o;
  return TF_OK;
}

/* ---- Where --------------------------------------------------------------- */

static tf_code where_shape(tf_shape_ctx *c) {
  int64_t d[2] = {TF_UNKNOWN_DIM,
                  known(&c->in[0]) ? c->in[0].rank : TF_UNKNOWN_DIM};
  c->out[0] = tf_shape_make(2, d);
  return TF_OK;
}

/* ---- table --------------------------------------------------------------- */

static const tf_op_spec array_index_ops[] = {
    {.name = "Range",
     .inputs = {"start: Tidx", "limit: Tidx", "delta: Tidx"},
     .outputs = {"output: Tidx"},
     .attrs = {"Tidx: {int32, int64, float, double} = int32"},
     .shape_fn = range_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Sequence start, start + delta, ... up to but excluding limit."},
    {.name = "Gather",
     .inputs = {"params: Tparams", "indices: Tindices"},
     .outputs = {"output: Tparams"},
     .attrs = {"validate_indices: bool = true", "Tparams: type",
               "Tindices: {int32, int64}"},
     .shape_fn = gather_shape,
     .doc = "Slices of params along axis 0 at indices (indices.shape + "
            "params.shape[1:])."},
    {.name = "GatherV2",
     .inputs = {"params: Tparams", "indices: Tindices", "axis: Taxis"},
     .outputs = {"output: Tparams"},
     .attrs = {"batch_dims: int = 0", "Tparams: type",
               "Tindices: {int16, int32, int64}", "Taxis: {int32, int64}"},
     .shape_fn = gather_v2_shape,
     .doc = "Slices of params along axis at indices, optionally batched over "
            "the leading batch_dims."},
    {.name = "OneHot",
     .inputs = {"indices: TI", "depth: int32", "on_value: T",
                "off_value: T"},
     .outputs = {"output: T"},
     .attrs = {"axis: int = -1", "T: type",
               "TI: {uint8, int8, int32, int64} = int64"},
     .shape_fn = one_hot_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "One-hot encoding of indices along a new axis of size depth."},
    {.name = "DynamicPartition",
     .inputs = {"data: T", "partitions: int32"},
     .outputs = {"outputs: num_partitions * T"},
     .attrs = {"num_partitions: int >= 1", "T: type"},
     .shape_fn = dynamic_partition_shape,
     .doc = "Splits data into num_partitions tensors by the partition id of "
            "each slice."},
    {.name = "DynamicStitch",
     .inputs = {"indices: N * int32", "data: N * T"},
     .outputs = {"merged: T"},
     .attrs = {"N: int >= 1", "T: type"},
     .shape_fn = dynamic_stitch_shape,
     .doc = "Interleaves the slices of data into one tensor at the given "
            "indices (later ones win)."},
    {.name = "Where",
     .inputs = {"input: T"},
     .outputs = {"index: int64"},
     .attrs = {"T: {bool, float, double, int8, int16, int32, int64, uint8, "
               "uint16, uint32, uint64, half, bfloat16, complex64} = bool"},
     .shape_fn = where_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Coordinates [num_true, rank] of the true (non-zero) elements, "
            "in row-major order."},
};

TF_REGISTER_OPS("array_index", array_index_ops)
