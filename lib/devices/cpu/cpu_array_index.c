/* cpu_array_index.c: CPU kernels for Range, Gather, GatherV2 and OneHot.
 * Gather-like kernels check every index before writing anything and name
 * the first bad one by its coordinates; rows are then copied across the
 * intra-op pool with typed fixed-size copies for 4- and 8-byte rows. String
 * tensors are deep-copied element by element on the calling thread. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_index.h"

/* Bytes of output per pool chunk at least: below this, stay inline. */
#define COPY_GRAIN_BYTES (256 * 1024)

/* ---- shared helpers ------------------------------------------------------- */

char *tf__index_coords(const tf_shape *s, int64_t i, char *buf, size_t size) {
  int64_t c[TF_MAX_RANK] = {0};
  for (int k = s->rank - 1; k >= 0; k--) {
    int64_t d = s->dims[k] > 0 ? s->dims[k] : 1;
    c[k] = i % d;
    i /= d;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < s->rank && len < size; k++) {
    len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64,
                            k == 0 ? "[" : ",", c[k]);
  }
  if (s->rank > 0 && len < size) {
    snprintf(buf + len, size - len, "]");
  }
  return buf;
}

tf_code tf__copy_elems(tf_kernel_ctx *ctx, tf_tensor *dst, int64_t d,
                       const tf_tensor *src, int64_t s, int64_t n) {
  if (dst->dtype != TF_STRING) {
    size_t es = tf_dtype_size(dst->dtype);
    memcpy((char *)dst->data + (size_t)d * es,
           (const char *)src->data + (size_t)s * es, (size_t)n * es);
    return TF_OK;
  }
  const tf_string *ss = tf_tensor_strings(src);
  for (int64_t k = 0; k < n; k++) {
    tf_status st;
    const tf_string *e = &ss[s + k];
    if (tf_tensor_set_string(dst, d + k, e->data, e->len, &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
  }
  return TF_OK;
}

bool tf__shape_starts_with(const tf_shape *data, const tf_shape *prefix) {
  if (prefix->rank > data->rank) {
    return false;
  }
  for (int i = 0; i < prefix->rank; i++) {
    if (data->dims[i] != prefix->dims[i]) {
      return false;
    }
  }
  return true;
}

int64_t tf__dims_product(const tf_shape *s, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) {
    p *= s->dims[i];
  }
  return p;
}

/* Integer index element i of t (int8/16/32/64, uint8) as int64. */
static int64_t index_at(const tf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case TF_INT8: return ((const int8_t *)t->data)[i];
  case TF_UINT8: return ((const uint8_t *)t->data)[i];
  case TF_INT16: return ((const int16_t *)t->data)[i];
  case TF_INT32: return ((const int32_t *)t->data)[i];
  default: return ((const int64_t *)t->data)[i];
  }
}

static int64_t rows_grain(size_t row_bytes) {
  return row_bytes >= COPY_GRAIN_BYTES ? 1
                                       : (int64_t)(COPY_GRAIN_BYTES / row_bytes);
}

/* ---- Range --------------------------------------------------------------- */

typedef struct range_args {
  void *out;
  int64_t start_i, delta_i;
  double start_f, delta_f;
} range_args;

#define DEFINE_RANGE_INT(T)                                                    \
  static void range_fill_##T(void *arg, int64_t b, int64_t e) {               \
    const range_args *a = arg;                                                 \
    T *restrict o = a->out;                                                    \
    const uint64_t s = (uint64_t)a->start_i, d = (uint64_t)a->delta_i;         \
    for (int64_t i = b; i < e; i++) {                                          \
      o[i] = (T)(s + (uint64_t)i * d);                                         \
    }                                                                          \
  }
#define DEFINE_RANGE_FLOAT(T)                                                  \
  static void range_fill_##T(void *arg, int64_t b, int64_t e) {               \
    const range_args *a = arg;                                                 \
    T *restrict o = a->out;                                                    \
    const T s = (T)a->start_f, d = (T)a->delta_f;                              \
    for (int64_t i = b; i < e; i++) {                                          \
      o[i] = s + (T)i * d;                                                     \
    }                                                                          \
  }
DEFINE_RANGE_INT(int32_t)
DEFINE_RANGE_INT(int64_t)
DEFINE_RANGE_FLOAT(float)
DEFINE_RANGE_FLOAT(double)

static tf_code range_size_int(tf_kernel_ctx *ctx, int64_t s, int64_t l,
                              int64_t d, int64_t *size) {
  if (d == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "Requires delta != 0: 0");
  }
  if (d > 0 ? s > l : s < l) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Requires start %s limit when delta %s 0: "
                           "%" PRId64 "/%" PRId64, d > 0 ? "<=" : ">=",
                           d > 0 ? ">" : "<", s, l);
  }
  uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
  uint64_t step = d > 0 ? (uint64_t)d : 0 - (uint64_t)d;
  /* cppcheck-suppress zerodivcond ; d != 0 was checked above */
  uint64_t n = span / step + (span % step != 0);
  if (n > (uint64_t)INT64_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Range from %" PRId64 " to %" PRId64 " by %" PRId64
                           " has %" PRIu64 " elements, more than int64 holds",
                           s, l, d, n);
  }
  *size = (int64_t)n;
  return TF_OK;
}

static tf_code range_size_float(tf_kernel_ctx *ctx, bool f32, double s,
                                double l, double d, int64_t *size) {
  if (d == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "Requires delta != 0: 0");
  }
  if (d > 0 ? s > l : s < l) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Requires start %s limit when delta %s 0: %g/%g",
                           d > 0 ? "<=" : ">=", d > 0 ? ">" : "<", s, l);
  }
  /* In the element type, as TF does, so float32 sizes match TF's. */
  double n = f32 ? (double)ceilf(fabsf(((float)l - (float)s) / (float)d))
                 : ceil(fabs((l - s) / d));
  if (!(n <= 9.2e18)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Requires ((limit - start) / delta) <= %" PRId64
                           ", got start %g, limit %g, delta %g",
                           INT64_MAX, s, l, d);
  }
  *size = (int64_t)n;
  return TF_OK;
}

static tf_code range_compute(tf_kernel_ctx *ctx) {
  static const char *const names[3] = {"start", "limit", "delta"};
  char buf[96];
  for (int i = 0; i < 3; i++) {
    const tf_tensor *t = ctx->inputs[i];
    if (t->n != 1 || t->shape.rank > 1) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s must be a scalar, not shape %s", names[i],
                             tf_shape_str(&t->shape, buf, sizeof(buf)));
    }
  }
  tf_dtype dt = ctx->inputs[0]->dtype;
  range_args a = {0};
  int64_t size = 0;
  if (tf_dtype_is_integer(dt)) {
    a.start_i = tf_tensor_get_i64(ctx->inputs[0], 0);
    a.delta_i = tf_tensor_get_i64(ctx->inputs[2], 0);
    TF_TRY(range_size_int(ctx, a.start_i, tf_tensor_get_i64(ctx->inputs[1], 0),
                          a.delta_i, &size));
  } else {
    a.start_f = tf_tensor_get_f64(ctx->inputs[0], 0);
    a.delta_f = tf_tensor_get_f64(ctx->inputs[2], 0);
    TF_TRY(range_size_float(ctx, dt == TF_FLOAT32, a.start_f,
                            tf_tensor_get_f64(ctx->inputs[1], 0), a.delta_f,
                            &size));
  }
  tf_shape shape = tf_shape_make(1, &size);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &shape, &out));
  a.out = out->data;
  tf_range_fn fn = dt == TF_INT32   ? range_fill_int32_t
                   : dt == TF_INT64 ? range_fill_int64_t
                   : dt == TF_FLOAT32 ? range_fill_float
                                      : range_fill_double;
  tf_parallel_for(ctx->pool, size, TF_PARALLEL_GRAIN, fn, &a);
  return TF_OK;
}

/* ---- Gather / GatherV2 ---------------------------------------------------- */

/* out[b, p, j, :] = params[b, p, indices[b, j], :] with rows of rb bytes:
 * b over batch, p over pre (params dims between batch_dims and axis), j over
 * nidx (indices dims after batch_dims). */
typedef struct gather_plan {
  const char *src;
  char *dst;
  const void *idx;
  int64_t batch, pre, axis_dim, nidx;
  size_t rb;
} gather_plan;

#define GATHER_LOOP(COPY)                                                      \
  for (int64_t r = r0; r < r1; r++) {                                          \
    const int64_t s = (b * g->pre + p) * g->axis_dim + (int64_t)ix[b * g->nidx + j]; \
    COPY;                                                                      \
    if (++j == g->nidx) {                                                      \
      j = 0;                                                                   \
      if (++p == g->pre) {                                                     \
        p = 0;                                                                 \
        b++;                                                                   \
      }                                                                        \
    }                                                                          \
  }

/* gather_bad_IT: the first out-of-range index (flat), or -1.
 * gather_rows_IT: copies output rows [r0, r1). */
#define DEFINE_GATHER(IT)                                                      \
  static int64_t gather_bad_##IT(const IT *ix, int64_t n, int64_t lim) {       \
    for (int64_t i = 0; i < n; i++) {                                          \
      if ((uint64_t)(int64_t)ix[i] >= (uint64_t)lim) {                         \
        return i;                                                              \
      }                                                                        \
    }                                                                          \
    return -1;                                                                 \
  }                                                                            \
  static void gather_rows_##IT(void *arg, int64_t r0, int64_t r1) {           \
    const gather_plan *g = arg;                                                \
    const IT *restrict ix = g->idx;                                            \
    const char *restrict src = g->src;                                         \
    char *restrict dst = g->dst;                                               \
    const int64_t pn = g->pre * g->nidx;                                       \
    int64_t b = r0 / pn, p = r0 % pn / g->nidx, j = r0 % g->nidx;             \
    const size_t rb = g->rb;                                                   \
    if (rb == 4) {                                                             \
      GATHER_LOOP(memcpy(dst + r * 4, src + s * 4, 4))                         \
    } else if (rb == 8) {                                                      \
      GATHER_LOOP(memcpy(dst + r * 8, src + s * 8, 8))                         \
    } else {                                                                   \
      GATHER_LOOP(memcpy(dst + (size_t)r * rb, src + (size_t)s * rb, rb))      \
    }                                                                          \
  }
DEFINE_GATHER(int16_t)
DEFINE_GATHER(int32_t)
DEFINE_GATHER(int64_t)

static int64_t gather_first_bad(const tf_tensor *ix, int64_t lim) {
  switch (ix->dtype) {
  case TF_INT16: return gather_bad_int16_t(ix->data, ix->n, lim);
  case TF_INT32: return gather_bad_int32_t(ix->data, ix->n, lim);
  default: return gather_bad_int64_t(ix->data, ix->n, lim);
  }
}

/* String rows: deep copies, on the calling thread. */
static tf_code gather_strings(tf_kernel_ctx *ctx, const gather_plan *g,
                              const tf_tensor *params, const tf_tensor *ix,
                              tf_tensor *out, int64_t inner) {
  int64_t rows = g->batch * g->pre * g->nidx;
  for (int64_t r = 0; r < rows; r++) {
    int64_t j = r % g->nidx, bp = r / g->nidx, b = bp / g->pre;
    int64_t s = bp * g->axis_dim + index_at(ix, b * g->nidx + j);
    TF_TRY(tf__copy_elems(ctx, out, r * inner, params, s * inner, inner));
  }
  return TF_OK;
}

static tf_code gather_out_shape(tf_kernel_ctx *ctx, const tf_shape *p,
                                const tf_shape *ix, int axis, int bd,
                                tf_shape *o) {
  int rank = p->rank - 1 + ix->rank - bd;
  if (rank > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "output rank %d exceeds the maximum %d", rank,
                           TF_MAX_RANK);
  }
  o->rank = rank;
  int k = 0;
  for (int i = 0; i < axis; i++) {
    o->dims[k++] = p->dims[i];
  }
  for (int i = bd; i < ix->rank; i++) {
    o->dims[k++] = ix->dims[i];
  }
  for (int i = axis + 1; i < p->rank; i++) {
    o->dims[k++] = p->dims[i];
  }
  return TF_OK;
}

static tf_code gather_run(tf_kernel_ctx *ctx, const tf_tensor *params,
                          const tf_tensor *ix, int axis, int bd) {
  tf_shape oshape;
  TF_TRY(gather_out_shape(ctx, &params->shape, &ix->shape, axis, bd, &oshape));
  gather_plan g = {.idx = ix->data,
                   .batch = tf__dims_product(&params->shape, 0, bd),
                   .pre = tf__dims_product(&params->shape, bd, axis),
                   .axis_dim = params->shape.dims[axis],
                   .nidx = tf__dims_product(&ix->shape, bd, ix->shape.rank)};
  int64_t bad = gather_first_bad(ix, g.axis_dim);
  if (bad >= 0) {
    char c[160];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices%s = %" PRId64 " is not in [0, %" PRId64 ")",
                           tf__index_coords(&ix->shape, bad, c, sizeof(c)),
                           index_at(ix, bad), g.axis_dim);
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, params->dtype, &oshape, &out));
  int64_t inner = tf__dims_product(&params->shape, axis + 1,
                                   params->shape.rank);
  if (out->n == 0) {
    return TF_OK;
  }
  if (params->dtype == TF_STRING) {
    return gather_strings(ctx, &g, params, ix, out, inner);
  }
  g.src = params->data;
  g.dst = out->data;
  g.rb = (size_t)inner * tf_dtype_size(params->dtype);
  tf_range_fn fn = ix->dtype == TF_INT16   ? gather_rows_int16_t
                   : ix->dtype == TF_INT32 ? gather_rows_int32_t
                                           : gather_rows_int64_t;
  tf_parallel_for(ctx->pool, g.batch * g.pre * g.nidx, rows_grain(g.rb), fn,
                  &g);
  return TF_OK;
}

static tf_code gather_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *params = ctx->inputs[0];
  if (params->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "params must be at least 1 dimensional");
  }
  return gather_run(ctx, params, ctx->inputs[1], 0, 0);
}

typedef struct gather_v2_state {
  int64_t batch_dims;
} gather_v2_state;

static tf_code gather_v2_init(const tf_node *node, void **state,
                              tf_status *st) {
  gather_v2_state *s = tf__xcalloc(1, sizeof(*s));
  if (tf_node_attr_get_int(node, "batch_dims", &s->batch_dims, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* Resolves negative batch_dims and checks it against both ranks, axis and
 * the leading dims, as TF's GatherV2 does. */
static tf_code gather_v2_batch_dims(tf_kernel_ctx *ctx, const tf_tensor *p,
                                    const tf_tensor *ix, int64_t axis,
                                    int64_t *bd) {
  char b1[96], b2[96];
  int r = ix->shape.rank;
  if (*bd < -(int64_t)r || *bd > r) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected batch_dims in the range [%d, %d], but got "
                           "%" PRId64, -r, r, *bd);
  }
  if (*bd < 0) {
    *bd += r;
  }
  if (*bd >= p->shape.rank || *bd > axis) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "batch_dims (%" PRId64 ") must be less than "
                           "rank(params) (%d) and at most axis (%" PRId64 ")",
                           *bd, p->shape.rank, axis);
  }
  for (int i = 0; i < *bd; i++) {
    if (p->shape.dims[i] != ix->shape.dims[i]) {
      return tf_kernel_error(
          ctx, TF_INVALID_ARGUMENT,
          "params.shape[%d]: %" PRId64 " should be equal to indices.shape[%d]:"
          " %" PRId64 " (params %s, indices %s)", i, p->shape.dims[i], i,
          ix->shape.dims[i], tf_shape_str(&p->shape, b1, sizeof(b1)),
          tf_shape_str(&ix->shape, b2, sizeof(b2)));
    }
  }
  return TF_OK;
}

static tf_code gather_v2_compute(tf_kernel_ctx *ctx) {
  const gather_v2_state *s = ctx->state;
  const tf_tensor *p = ctx->inputs[0], *ix = ctx->inputs[1],
                  *at = ctx->inputs[2];
  char buf[96];
  if (p->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "params must be at least 1 dimensional");
  }
  if (at->n != 1 || at->shape.rank > 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "axis must be scalar, but got shape %s",
                           tf_shape_str(&at->shape, buf, sizeof(buf)));
  }
  int64_t axis = tf_tensor_get_i64(at, 0);
  int r = p->shape.rank;
  if (axis < -(int64_t)r || axis >= r) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected axis in the range [%d, %d), but got "
                           "%" PRId64, -r, r, axis);
  }
  if (axis < 0) {
    axis += r;
  }
  int64_t bd = s->batch_dims;
  if (bd != 0) {
    TF_TRY(gather_v2_batch_dims(ctx, p, ix, axis, &bd));
  }
  return gather_run(ctx, p, ix, (int)axis, (int)bd);
}

/* ---- OneHot -------------------------------------------------------------- */

typedef struct one_hot_state {
  int64_t axis;
} one_hot_state;

/* out[p, d, s] = indices[p, s] == d ? on : off, with es-byte elements. */
typedef struct one_hot_args {
  const tf_tensor *ix;
  char *out;
  const char *on, *off;
  int64_t depth, suffix;
} one_hot_args;

#define DEFINE_ONE_HOT(ES)                                                     \
  static void one_hot_fill_##ES(void *arg, int64_t i0, int64_t i1) {          \
    const one_hot_args *a = arg;                                               \
    const int64_t depth = a->depth, suffix = a->suffix;                        \
    char on[ES], off[ES];                                                      \
    memcpy(on, a->on, ES);                                                     \
    memcpy(off, a->off, ES);                                                   \
    for (int64_t i = i0; i < i1; i++) {                                        \
      const int64_t p = i / suffix, s = i % suffix;                            \
      const int64_t hot = index_at(a->ix, i);                                  \
      char *restrict o = a->out + ((p * depth) * suffix + s) * ES;             \
      for (int64_t d = 0; d < depth; d++) {                                    \
        memcpy(o + d * suffix * ES, d == hot ? on : off, ES);                  \
      }                                                                        \
    }                                                                          \
  }
DEFINE_ONE_HOT(1)
DEFINE_ONE_HOT(2)
DEFINE_ONE_HOT(4)
DEFINE_ONE_HOT(8)

static tf_code one_hot_init(const tf_node *node, void **state, tf_status *st) {
  one_hot_state *s = tf__xcalloc(1, sizeof(*s));
  if (tf_node_attr_get_int(node, "axis", &s->axis, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code one_hot_check(tf_kernel_ctx *ctx, int64_t axis) {
  static const char *const names[4] = {"indices", "depth", "on_value",
                                       "off_value"};
  char buf[96];
  for (int i = 1; i < 4; i++) {
    const tf_tensor *t = ctx->inputs[i];
    if (t->shape.rank != 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s must be a scalar, but got: %s", names[i],
                             tf_shape_str(&t->shape, buf, sizeof(buf)));
    }
  }
  int r = ctx->inputs[0]->shape.rank;
  if (axis != -1 && (axis < 0 || axis > r)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected axis to be -1 or between [0, %d).  But "
                           "received: %" PRId64, r + 1, axis);
  }
  if (r + 1 > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "output rank %d exceeds the maximum %d", r + 1,
                           TF_MAX_RANK);
  }
  int32_t depth = *(const int32_t *)ctx->inputs[1]->data;
  if (depth < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "depth must be non-negative, got: %d", (int)depth);
  }
  return TF_OK;
}

static tf_code one_hot_strings(tf_kernel_ctx *ctx, const one_hot_args *a,
                               tf_tensor *out) {
  int64_t n = a->ix->n;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = i / a->suffix, s = i % a->suffix, hot = index_at(a->ix, i);
    for (int64_t d = 0; d < a->depth; d++) {
      int64_t o = (p * a->depth + d) * a->suffix + s;
      TF_TRY(tf__copy_elems(ctx, out, o, ctx->inputs[d == hot ? 2 : 3], 0, 1));
    }
  }
  return TF_OK;
}

static tf_code one_hot_compute(tf_kernel_ctx *ctx) {
  const one_hot_state *st = ctx->state;
  TF_TRY(one_hot_check(ctx, st->axis));
  const tf_tensor *ix = ctx->inputs[0];
  tf_dtype dt = ctx->inputs[2]->dtype;
  int r = ix->shape.rank, a = st->axis == -1 ? r : (int)st->axis;
  one_hot_args args = {.ix = ix,
                       .on = ctx->inputs[2]->data,
                       .off = ctx->inputs[3]->data,
                       .depth = *(const int32_t *)ctx->inputs[1]->data,
                       .suffix = tf__dims_product(&ix->shape, a, r)};
  tf_shape os = {.rank = r + 1};
  for (int i = 0, k = 0; i <= r; i++) {
    os.dims[i] = i == a ? args.depth : ix->shape.dims[k++];
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  args.out = out->data;
  if (dt == TF_STRING) {
    return one_hot_strings(ctx, &args, out);
  }
  size_t es = tf_dtype_size(dt);
  tf_range_fn fn = es == 1   ? one_hot_fill_1
                   : es == 2 ? one_hot_fill_2
                   : es == 4 ? one_hot_fill_4
                             : one_hot_fill_8;
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(1, args.depth));
  tf_parallel_for(ctx->pool, ix->n, grain, fn, &args);
  return TF_OK;
}

/* ---- registration ---------------------------------------------------------- */

static const tf_kernel_def array_index_kernels[] = {
    {.op = "Range", .device_type = TF_DEVICE_CPU, .dtype = TF_INT32,
     .type_attr = "Tidx", .compute = range_compute},
    {.op = "Range", .device_type = TF_DEVICE_CPU, .dtype = TF_INT64,
     .type_attr = "Tidx", .compute = range_compute},
    {.op = "Range", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,
     .type_attr = "Tidx", .compute = range_compute},
    {.op = "Range", .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,
     .type_attr = "Tidx", .compute = range_compute},
    {.op = "Gather", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "Tparams", .compute = gather_compute},
    {.op = "GatherV2", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "Tparams", .init = gather_v2_init,
     .compute = gather_v2_compute, .free_state = free},
    {.op = "OneHot", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "T", .init = one_hot_init, .compute = one_hot_compute,
     .free_state = free},
};

TF_REGISTER_KERNELS(array_index_kernels)
