/* cpu_gather_nd.c: CPU kernels for GatherNd (any dtype, strings
 * deep-copied) and ScatterNd (float, double, float16, bfloat16,
 * complex64 and the 8- to 64-bit signed and unsigned integers). Both check every index row before writing
 * anything and name the first bad one by its coordinates in
 * indices.shape[:-1] and its value, as TF's CPU kernels do. GatherNd copies
 * slices across the intra-op pool; ScatterNd sums updates in index order on
 * the calling thread (so float sums are reproducible; duplicates add;
 * integer sums wrap). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/half.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_index.h"

/* Bytes of output per pool chunk at least: below this, stay inline. */
#define COPY_GRAIN_BYTES (256 * 1024)

/* Integer index element i of t (int16, int32, int64) as int64. */
static int64_t ix_at(const tf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case TF_INT16: return ((const int16_t *)t->data)[i];
  case TF_INT32: return ((const int32_t *)t->data)[i];
  default: return ((const int64_t *)t->data)[i];
  }
}

/* The N-d index layout: n rows of depth coordinates into dims[0..depth),
 * each addressing a slice of `slice` elements. */
typedef struct nd_plan {
  int64_t n, depth, slice;
  int64_t stride[TF_MAX_RANK]; /* elements per step of each indexed dim */
} nd_plan;

static void nd_plan_init(nd_plan *p, const tf_shape *ix, const tf_shape *s) {
  p->depth = ix->dims[ix->rank - 1];
  p->n = tf__dims_product(ix, 0, ix->rank - 1);
  p->slice = tf__dims_product(s, (int)p->depth, s->rank);
  int64_t st = p->slice;
  for (int j = (int)p->depth - 1; j >= 0; j--) {
    p->stride[j] = st;
    st *= s->dims[j];
  }
}

/* Row r's flat element offset into s, or -1 when some coordinate is out
 * of range. */
static int64_t nd_offset(const nd_plan *p, const tf_tensor *ix,
                         const tf_shape *s, int64_t r) {
  int64_t off = 0;
  for (int64_t j = 0; j < p->depth; j++) {
    int64_t v = ix_at(ix, r * p->depth + j);
    if (v < 0 || v >= s->dims[j]) {
      return -1;
    }
    off += v * p->stride[j];
  }
  return off;
}

/* INVALID_ARGUMENT "indices[1,0] = [5, 0] does not index into <what> <s>"
 * for the first bad row, or OK. */
static tf_code nd_check(tf_kernel_ctx *ctx, const nd_plan *p,
                        const tf_tensor *ix, const tf_shape *s,
                        const char *what) {
  for (int64_t r = 0; r < p->n; r++) {
    if (nd_offset(p, ix, s, r) >= 0) {
      continue;
    }
    tf_shape batch = tf_shape_make(ix->shape.rank - 1, ix->shape.dims);
    char c[128], v[256], sb[128];
    size_t len = 0;
    v[0] = '\0';
    for (int64_t j = 0; j < p->depth && len < sizeof(v); j++) {
      len += (size_t)snprintf(v + len, sizeof(v) - len, "%s%" PRId64,
                              j ? ", " : "", ix_at(ix, r * p->depth + j));
    }
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices%s = [%s] does not index into %s %s",
                           tf__index_coords(&batch, r, c, sizeof(c)), v, what,
                           tf_shape_str(s, sb, sizeof(sb)));
  }
  return TF_OK;
}

/* ---- GatherNd ------------------------------------------------------------- */

typedef struct gather_nd_args {
  const nd_plan *p;
  const tf_tensor *ix;
  const tf_shape *ps;
  const char *src;
  char *dst;
  size_t es, rb; /* bytes per element and per slice */
} gather_nd_args;

static void gather_nd_rows(void *arg, int64_t r0, int64_t r1) {
  const gather_nd_args *a = arg;
  for (int64_t r = r0; r < r1; r++) {
    int64_t off = nd_offset(a->p, a->ix, a->ps, r);
    memcpy(a->dst + (size_t)r * a->rb,
           a->src + (size_t)off * a->es, a->rb);
  }
}

static tf_code gather_nd_validate(tf_kernel_ctx *ctx, const tf_tensor *p,
                                  const tf_tensor *ix) {
  char b1[96], b2[96];
  if (p->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "params must be at least a vector, got shape %s",
                           tf_shape_str(&p->shape, b1, sizeof(b1)));
  }
  if (ix->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices must be at least a vector, got shape %s",
                           tf_shape_str(&ix->shape, b1, sizeof(b1)));
  }
  int64_t depth = ix->shape.dims[ix->shape.rank - 1];
  if (depth > p->shape.rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "index innermost dimension length must be <= "
                           "params rank; saw: %" PRId64 " vs. %d (indices %s, "
                           "params %s)", depth, p->shape.rank,
                           tf_shape_str(&ix->shape, b1, sizeof(b1)),
                           tf_shape_str(&p->shape, b2, sizeof(b2)));
  }
  int64_t rank = (int64_t)ix->shape.rank - 1 + p->shape.rank - depth;
  if (rank > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "output rank %" PRId64 " exceeds the maximum %d",
                           rank, TF_MAX_RANK);
  }
  return TF_OK;
}

static tf_code gather_nd_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *params = ctx->inputs[0], *ix = ctx->inputs[1];
  TF_TRY(gather_nd_validate(ctx, params, ix));
  nd_plan p;
  nd_plan_init(&p, &ix->shape, &params->shape);
  char b1[96];
  if (p.n > 0 && params->n == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Requested more than 0 entries, but params is "
                           "empty.  Params shape: %s",
                           tf_shape_str(&params->shape, b1, sizeof(b1)));
  }
  TF_TRY(nd_check(ctx, &p, ix, &params->shape, "param shape"));
  tf_shape os = tf_shape_make(ix->shape.rank - 1, ix->shape.dims);
  for (int i = (int)p.depth; i < params->shape.rank; i++) {
    os.dims[os.rank++] = params->shape.dims[i];
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, params->dtype, &os, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  if (params->dtype == TF_STRING) {
    for (int64_t r = 0; r < p.n; r++) {
      TF_TRY(tf__copy_elems(ctx, out, r * p.slice, params,
                            nd_offset(&p, ix, &params->shape, r), p.slice));
    }
    return TF_OK;
  }
  gather_nd_args a = {.p = &p, .ix = ix, .ps = &params->shape,
                      .src = params->data, .dst = out->data,
                      .es = tf_dtype_size(params->dtype),
                      .rb = (size_t)p.slice * tf_dtype_size(params->dtype)};
  int64_t grain = a.rb >= COPY_GRAIN_BYTES
                      ? 1
                      : (int64_t)(COPY_GRAIN_BYTES / a.rb);
  tf_parallel_for(ctx->pool, p.n, grain, gather_nd_rows, &a);
  return TF_OK;
}

/* ---- ScatterNd ------------------------------------------------------------ */

/* out[off(r) + k] += upd[r * slice + k], in row order; UT is the type the
 * sum is done in (unsigned for integers, so overflow wraps). */
#define DEFINE_SCATTER_ADD(T, UT)                                              \
  static void scatter_add_##T(const nd_plan *p, const tf_tensor *ix,          \
                              const tf_shape *s, const void *upd, void *out) { \
    const T *u = upd;                                                          \
    T *o = out;                                                                \
    for (int64_t r = 0; r < p->n; r++) {                                       \
      T *dst = o + nd_offset(p, ix, s, r);                                     \
      const T *src = u + r * p->slice;                                         \
      for (int64_t k = 0; k < p->slice; k++) {                                 \
        dst[k] = (T)((UT)dst[k] + (UT)src[k]);                                 \
      }                                                                        \
    }                                                                          \
  }
DEFINE_SCATTER_ADD(float, float)
DEFINE_SCATTER_ADD(double, double)
DEFINE_SCATTER_ADD(int8_t, uint8_t)
DEFINE_SCATTER_ADD(int16_t, uint16_t)
DEFINE_SCATTER_ADD(int32_t, uint32_t)
DEFINE_SCATTER_ADD(int64_t, uint64_t)
DEFINE_SCATTER_ADD(uint8_t, uint8_t)
DEFINE_SCATTER_ADD(uint16_t, uint16_t)
DEFINE_SCATTER_ADD(uint32_t, uint32_t)
DEFINE_SCATTER_ADD(uint64_t, uint64_t)

/* complex64: real and imaginary parts summed as floats. */
static void scatter_add_complex64(const nd_plan *p, const tf_tensor *ix,
                                  const tf_shape *s, const void *upd,
                                  void *out) {
  const float *u = upd;
  float *o = out;
  for (int64_t r = 0; r < p->n; r++) {
    float *dst = o + 2 * nd_offset(p, ix, s, r);
    const float *src = u + 2 * r * p->slice;
    for (int64_t k = 0; k < 2 * p->slice; k++) {
      dst[k] += src[k];
    }
  }
}

/* float16 and bfloat16: each add in float, rounded back (as TF's Eigen
 * half arithmetic). */
#define DEFINE_SCATTER_ADD_HALF(T, TO_F, FROM_F)                               \
  static void scatter_add_##T(const nd_plan *p, const tf_tensor *ix,          \
                              const tf_shape *s, const void *upd, void *out) { \
    const T *u = upd;                                                          \
    T *o = out;                                                                \
    for (int64_t r = 0; r < p->n; r++) {                                       \
      T *dst = o + nd_offset(p, ix, s, r);                                     \
      const T *src = u + r * p->slice;                                         \
      for (int64_t k = 0; k < p->slice; k++) {                                 \
        dst[k] = FROM_F(TO_F(dst[k]) + TO_F(src[k]));                          \
      }                                                                        \
    }                                                                          \
  }
DEFINE_SCATTER_ADD_HALF(tf_float16, tf__f16_to_f32, tf__f32_to_f16)
DEFINE_SCATTER_ADD_HALF(tf_bfloat16, tf__bf16_to_f32, tf__f32_to_bf16)

typedef void (*scatter_add_fn)(const nd_plan *, const tf_tensor *,
                               const tf_shape *, const void *, void *);

static scatter_add_fn scatter_add_for(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return scatter_add_float;
  case TF_FLOAT64: return scatter_add_double;
  case TF_INT8: return scatter_add_int8_t;
  case TF_INT16: return scatter_add_int16_t;
  case TF_INT32: return scatter_add_int32_t;
  case TF_INT64: return scatter_add_int64_t;
  case TF_UINT8: return scatter_add_uint8_t;
  case TF_UINT16: return scatter_add_uint16_t;
  case TF_UINT32: return scatter_add_uint32_t;
  case TF_UINT64: return scatter_add_uint64_t;
  case TF_COMPLEX64: return scatter_add_complex64;
  case TF_FLOAT16: return scatter_add_tf_float16;
  case TF_BFLOAT16: return scatter_add_tf_bfloat16;
  default: return NULL;
  }
}

/* The output shape from the shape input, checked non-negative. */
static tf_code scatter_nd_out_shape(tf_kernel_ctx *ctx, const tf_tensor *st,
                                    tf_shape *os) {
  char b1[96];
  if (st->shape.rank != 1 || st->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape must be a vector of at most %d elements, "
                           "got shape %s", TF_MAX_RANK,
                           tf_shape_str(&st->shape, b1, sizeof(b1)));
  }
  os->rank = (int)st->n;
  for (int i = 0; i < os->rank; i++) {
    os->dims[i] = ix_at(st, i);
    if (os->dims[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "shape[%d] = %" PRId64 " must be non-negative", i,
                             os->dims[i]);
    }
  }
  return TF_OK;
}

/* updates.shape must be indices.shape[:-1] + shape[depth:]. */
static tf_code scatter_nd_validate(tf_kernel_ctx *ctx, const tf_tensor *ix,
                                   const tf_tensor *u, const tf_shape *os) {
  char b1[96], b2[96], b3[96];
  if (ix->shape.rank < 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices must be at least a vector, got shape %s",
                           tf_shape_str(&ix->shape, b1, sizeof(b1)));
  }
  int outer = ix->shape.rank - 1;
  int64_t depth = ix->shape.dims[outer];
  tf_shape want = tf_shape_make(outer, ix->shape.dims);
  bool ok = depth <= os->rank &&
            (int64_t)outer + os->rank - depth <= TF_MAX_RANK;
  for (int64_t i = depth; ok && i < os->rank; i++) {
    want.dims[want.rank++] = os->dims[i];
  }
  if (!ok || !tf_shape_equal(&want, &u->shape)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "updates must have shape indices.shape[:-1] + "
                           "shape[indices.shape[-1]:], got updates %s, "
                           "indices %s, shape %s",
                           tf_shape_str(&u->shape, b1, sizeof(b1)),
                           tf_shape_str(&ix->shape, b2, sizeof(b2)),
                           tf_shape_str(os, b3, sizeof(b3)));
  }
  return TF_OK;
}

static tf_code scatter_nd_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *ix = ctx->inputs[0], *u = ctx->inputs[1];
  char b1[96];
  scatter_add_fn add = scatter_add_for(u->dtype);
  if (add == NULL) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED,
                           "updates of dtype %s are not supported on CPU",
                           tf_dtype_name(u->dtype));
  }
  tf_shape os;
  TF_TRY(scatter_nd_out_shape(ctx, ctx->inputs[2], &os));
  TF_TRY(scatter_nd_validate(ctx, ix, u, &os));
  nd_plan p;
  nd_plan_init(&p, &ix->shape, &os);
  if (p.n > 0 && tf_shape_num_elements(&os) == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Indices and updates specified for empty output "
                           "shape %s", tf_shape_str(&os, b1, sizeof(b1)));
  }
  TF_TRY(nd_check(ctx, &p, ix, &os, "shape"));
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, u->dtype, &os, &out));
  memset(out->data, 0, (size_t)out->n * tf_dtype_size(u->dtype));
  add(&p, ix, &os, u->data, out->data);
  return TF_OK;
}

/* ---- registration ---------------------------------------------------------- */

#define SCATTER_ND(dt)                                                         \
  {.op = "ScatterNd", .device_type = TF_DEVICE_CPU, .dtype = (dt),             \
   .type_attr = "T", .compute = scatter_nd_compute}

static const tf_kernel_def gather_nd_kernels[] = {
    {.op = "GatherNd", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "Tparams", .compute = gather_nd_compute},
    SCATTER_ND(TF_FLOAT32), SCATTER_ND(TF_FLOAT64), SCATTER_ND(TF_INT8),
    SCATTER_ND(TF_INT16),   SCATTER_ND(TF_INT32),   SCATTER_ND(TF_INT64),
    SCATTER_ND(TF_UINT8),   SCATTER_ND(TF_UINT16),  SCATTER_ND(TF_UINT32),
    SCATTER_ND(TF_UINT64),  SCATTER_ND(TF_COMPLEX64), SCATTER_ND(TF_FLOAT16),
    SCATTER_ND(TF_BFLOAT16),
};

TF_REGISTER_KERNELS(gather_nd_kernels)
