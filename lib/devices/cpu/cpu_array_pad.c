/* cpu_array_pad.c: the CPU PadV2, MirrorPad and MirrorPadGrad kernels.
 * PadV2 (every dtype) fills the output with constant_values and copies the
 * input into the interior. MirrorPad (every dtype) is a set of region
 * copies: along each dim the output is three segments (before, interior,
 * after), each reading the input with stride +1 or -1, so each of the up
 * to 3^rank segment boxes is one region copy (strings deep-copied).
 * MirrorPadGrad (the real number types: float, double, half, bfloat16,
 * signed and unsigned 8- to 64-bit integers) adds every element of the
 * padded input onto the element it was copied from (integers wrap; half
 * and bfloat16 sum in float). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/half.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Reads paddings p (a [rank, 2] matrix of non-negative values) into
 * lo/hi; the checks and messages of the Pad kernel. */
static tf_code read_paddings(tf_kernel_ctx *ctx, const tf_shape *xs,
                             const tf_tensor *p, int64_t *lo, int64_t *hi) {
  char a[96], b[96];
  if (p->shape.rank != 2 || p->shape.dims[1] != 2) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "paddings must be a matrix with 2 columns: %s",
                           tf_shape_str(&p->shape, a, sizeof(a)));
  }
  if (p->shape.dims[0] != xs->rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "The first dimension of paddings must be the rank "
                           "of inputs %s, got paddings of shape %s",
                           tf_shape_str(xs, a, sizeof(a)),
                           tf_shape_str(&p->shape, b, sizeof(b)));
  }
  for (int i = 0; i < xs->rank; i++) {
    lo[i] = tf_tensor_get_i64(p, 2 * i);
    hi[i] = tf_tensor_get_i64(p, 2 * i + 1);
    if (lo[i] < 0 || hi[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Paddings must be non-negative: %" PRId64
                             " %" PRId64 " (dim %d)", lo[i], hi[i], i);
    }
  }
  return TF_OK;
}

/* xs grown (sign +1) or shrunk (sign -1) by the paddings into *os. */
static tf_code padded_shape(tf_kernel_ctx *ctx, const tf_shape *xs,
                            const int64_t *lo, const int64_t *hi, int sign,
                            tf_shape *os) {
  *os = *xs;
  for (int i = 0; i < xs->rank; i++) {
    int64_t d = xs->dims[i];
    if (sign > 0 && (__builtin_add_overflow(d, lo[i], &d) ||
                     __builtin_add_overflow(d, hi[i], &d))) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "output dim %d overflows int64", i);
    }
    if (sign < 0 && (lo[i] > d || hi[i] > d - lo[i])) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "paddings %" PRId64 ", %" PRId64
                             " exceed input dim %d of size %" PRId64,
                             lo[i], hi[i], i, d);
    }
    os->dims[i] = sign > 0 ? d : d - lo[i] - hi[i];
  }
  return TF_OK;
}

/* ---- PadV2 ------------------------------------------------------------- */

static tf_code pad_v2_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  const tf_tensor *cv = ctx->inputs[2];
  int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK];
  char buf[96];
  tf_shape os;
  if (cv->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "constant_values must be a scalar. Got: %s",
                           tf_shape_str(&cv->shape, buf, sizeof(buf)));
  }
  TF_TRY(read_paddings(ctx, &x->shape, ctx->inputs[1], lo, hi));
  TF_TRY(padded_shape(ctx, &x->shape, lo, hi, 1, &os));
  if (tf_shape_equal(&os, &x->shape)) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  TF_TRY(tf__fill_value(ctx, y, cv->data));
  if (x->n == 0) {
    return TF_OK;
  }
  tf__region r = {.rank = x->shape.rank};
  tf__row_major_strides(&x->shape, r.sstride);
  tf__row_major_strides(&os, r.dstride);
  int64_t doff = 0;
  for (int i = 0; i < r.rank; i++) {
    r.dims[i] = x->shape.dims[i];
    doff += lo[i] * r.dstride[i];
  }
  return tf__region_copy(ctx, &r, y, doff, x, 0);
}

/* ---- MirrorPad --------------------------------------------------------- */

typedef struct mirror_state {
  int64_t offset; /* 1: REFLECT (edge not repeated), 0: SYMMETRIC */
} mirror_state;

static tf_code mirror_init(const tf_node *node, void **state, tf_status *st) {
  const char *mode;
  TF_TRY(tf_node_attr_get_string(node, "mode", &mode, st));
  if (strcmp(mode, "REFLECT") != 0 && strcmp(mode, "SYMMETRIC") != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s: mode must be REFLECT or SYMMETRIC, got %s",
                         tf_node_op(node), mode);
  }
  mirror_state *s = tf__xcalloc(1, sizeof *s);
  s->offset = strcmp(mode, "REFLECT") == 0;
  *state = s;
  return TF_OK;
}

/* Paddings of the unpadded dims `small` at most dim - offset each. */
static tf_code mirror_limits(tf_kernel_ctx *ctx, const tf_shape *small,
                             const int64_t *lo, const int64_t *hi,
                             int64_t offset) {
  for (int i = 0; i < small->rank; i++) {
    int64_t d = small->dims[i];
    if (lo[i] > d - offset || hi[i] > d - offset) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "paddings must be %s the dimension size: "
                             "paddings %" PRId64 ", %" PRId64
                             " of dim %d of size %" PRId64,
                             offset ? "less than" : "no greater than", lo[i],
                             hi[i], i, d);
    }
  }
  return TF_OK;
}

/* Segment seg (0 before, 1 interior, 2 after) of dim d of size n padded
 * by lo/hi: its length, first source index, source step, first output
 * index. */
static void mirror_segment(int seg, int64_t n, int64_t lo, int64_t hi,
                           int64_t offset, int64_t *len, int64_t *src,
                           int64_t *step, int64_t *dst) {
  if (seg == 0) {
    *len = lo, *src = lo - 1 + offset, *step = -1, *dst = 0;
  } else if (seg == 1) {
    *len = n, *src = 0, *step = 1, *dst = lo;
  } else {
    *len = hi, *src = n - 1 - offset, *step = -1, *dst = lo + n;
  }
}

static tf_code mirror_pad_compute(tf_kernel_ctx *ctx) {
  const mirror_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  int rank = x->shape.rank;
  int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK], xst[TF_MAX_RANK];
  int64_t yst[TF_MAX_RANK];
  tf_shape os;
  TF_TRY(read_paddings(ctx, &x->shape, ctx->inputs[1], lo, hi));
  TF_TRY(mirror_limits(ctx, &x->shape, lo, hi, s->offset));
  TF_TRY(padded_shape(ctx, &x->shape, lo, hi, 1, &os));
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  tf__row_major_strides(&x->shape, xst);
  tf__row_major_strides(&os, yst);
  int64_t combos = 1;
  for (int d = 0; d < rank; d++) {
    combos *= 3;
  }
  for (int64_t c = 0; c < combos; c++) {
    tf__region r = {.rank = rank};
    int64_t soff = 0, doff = 0, rest = c, n = 1;
    for (int d = rank - 1; d >= 0; d--, rest /= 3) {
      int64_t src, step, dst;
      mirror_segment((int)(rest % 3), x->shape.dims[d], lo[d], hi[d],
                     s->offset, &r.dims[d], &src, &step, &dst);
      r.sstride[d] = step * xst[d];
      r.dstride[d] = yst[d];
      soff += src * xst[d];
      doff += dst * yst[d];
      n *= r.dims[d];
    }
    if (n > 0) {
      TF_TRY(tf__region_copy(ctx, &r, y, doff, x, soff));
    }
  }
  return TF_OK;
}

/* ---- MirrorPadGrad ----------------------------------------------------- */

/* Source index along a dim of size n (the small side) of index i of the
 * padded side. */
static int64_t mirror_src(int64_t i, int64_t n, int64_t lo, int64_t offset) {
  int64_t j = i - lo;
  if (j < 0) {
    return -j - 1 + offset;
  }
  return j < n ? j : 2 * n - 1 - offset - j;
}

/* tgt[i] = the flat index in the small shape ds of the element that
 * element i of the padded shape ps was copied from. */
static void mirror_targets(const tf_shape *ps, const tf_shape *ds,
                           const int64_t *lo, int64_t offset, int64_t *tgt) {
  int rank = ps->rank;
  int64_t idx[TF_MAX_RANK] = {0}, st[TF_MAX_RANK];
  int64_t n = tf_shape_num_elements(ps);
  tf__row_major_strides(ds, st);
  for (int64_t i = 0; i < n; i++) {
    int64_t o = 0;
    for (int d = 0; d < rank; d++) {
      o += mirror_src(idx[d], ds->dims[d], lo[d], offset) * st[d];
    }
    tgt[i] = o;
    for (int d = rank - 1; d >= 0 && ++idx[d] == ps->dims[d]; d--) {
      idx[d] = 0;
    }
  }
}

/* out[tgt[i]] += in[i]; integers wrap (added as utype), as in TF. */
#define MIRROR_ACCUM(name, ctype, utype)                                       \
  static void name(const void *src, void *dst, const int64_t *tgt,            \
                   int64_t n) {                                                \
    const ctype *in = src;                                                     \
    ctype *out = dst;                                                          \
    for (int64_t i = 0; i < n; i++) {                                          \
      out[tgt[i]] = (ctype)((utype)out[tgt[i]] + (utype)in[i]);                \
    }                                                                          \
  }

MIRROR_ACCUM(accum_f32, float, float)
MIRROR_ACCUM(accum_f64, double, double)
MIRROR_ACCUM(accum_i8, int8_t, uint8_t)
MIRROR_ACCUM(accum_u8, uint8_t, uint8_t)
MIRROR_ACCUM(accum_i16, int16_t, uint16_t)
MIRROR_ACCUM(accum_u16, uint16_t, uint16_t)
MIRROR_ACCUM(accum_i32, int32_t, uint32_t)
MIRROR_ACCUM(accum_u32, uint32_t, uint32_t)
MIRROR_ACCUM(accum_i64, int64_t, uint64_t)
MIRROR_ACCUM(accum_u64, uint64_t, uint64_t)

/* half / bfloat16: sums in float, rounded once per output element. */
static void accum_16(const tf_tensor *x, tf_tensor *y, const int64_t *tgt) {
  bool bf = x->dtype == TF_BFLOAT16;
  const uint16_t *in = x->data;
  uint16_t *out = y->data;
  float *acc = tf__xcalloc((size_t)y->n, sizeof *acc);
  for (int64_t i = 0; i < x->n; i++) {
    acc[tgt[i]] += bf ? tf__bf16_to_f32(in[i]) : tf__f16_to_f32(in[i]);
  }
  for (int64_t i = 0; i < y->n; i++) {
    out[i] = bf ? tf__f32_to_bf16(acc[i]) : tf__f32_to_f16(acc[i]);
  }
  free(acc);
}

typedef void (*accum_fn)(const void *, void *, const int64_t *, int64_t);

static accum_fn accum_for(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return accum_f32;
  case TF_FLOAT64: return accum_f64;
  case TF_INT8: return accum_i8;
  case TF_UINT8: return accum_u8;
  case TF_INT16: return accum_i16;
  case TF_UINT16: return accum_u16;
  case TF_INT32: return accum_i32;
  case TF_UINT32: return accum_u32;
  case TF_INT64: return accum_i64;
  case TF_UINT64: return accum_u64;
  default: return NULL; /* half, bfloat16: accum_16 */
  }
}

static tf_code mirror_pad_grad_compute(tf_kernel_ctx *ctx) {
  const mirror_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK];
  tf_shape os;
  TF_TRY(read_paddings(ctx, &x->shape, ctx->inputs[1], lo, hi));
  TF_TRY(padded_shape(ctx, &x->shape, lo, hi, -1, &os));
  TF_TRY(mirror_limits(ctx, &os, lo, hi, s->offset));
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &os, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  memset(y->data, 0, (size_t)y->n * tf_dtype_size(y->dtype));
  int64_t *tgt = tf__xcalloc((size_t)x->n, sizeof *tgt);
  mirror_targets(&x->shape, &os, lo, s->offset, tgt);
  accum_fn fn = accum_for(x->dtype);
  if (fn != NULL) {
    fn(x->data, y->data, tgt, x->n);
  } else {
    accum_16(x, y, tgt);
  }
  free(tgt);
  return TF_OK;
}

#define GRAD_KERNEL(dt)                                                        \
  {"MirrorPadGrad", TF_DEVICE_CPU, dt, NULL, mirror_init,                      \
   mirror_pad_grad_compute, NULL, free, 0}

static const tf_kernel_def array_pad_kernels[] = {
    {"PadV2", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, pad_v2_compute, NULL,
     free, 0},
    {"MirrorPad", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, mirror_init,
     mirror_pad_compute, NULL, free, 0},
    GRAD_KERNEL(TF_FLOAT32), GRAD_KERNEL(TF_FLOAT64), GRAD_KERNEL(TF_FLOAT16),
    GRAD_KERNEL(TF_BFLOAT16), GRAD_KERNEL(TF_INT8), GRAD_KERNEL(TF_UINT8),
    GRAD_KERNEL(TF_INT16), GRAD_KERNEL(TF_UINT16), GRAD_KERNEL(TF_INT32),
    GRAD_KERNEL(TF_UINT32), GRAD_KERNEL(TF_INT64), GRAD_KERNEL(TF_UINT64),
};

TF_REGISTER_KERNELS(array_pad_kernels)
