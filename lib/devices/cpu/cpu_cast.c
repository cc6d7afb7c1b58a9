/* cpu_cast.c: the CPU Cast kernel between every numeric dtype and bool.
 *
 * A macro-generated 14x14 table holds one tight loop per (SrcT, DstT) pair;
 * each loop loads an element into a wide value (int64, uint64, float,
 * double or complex64) and stores it through a converter picked at compile
 * time with _Generic, so there is no per-element dispatch. Rules: integers
 * wrap modulo 2^bits (two's complement, as C and TF); floats to integers
 * truncate toward zero and SATURATE (NaN -> 0, too large -> the type's max,
 * too small -> its min, e.g. -1.5 -> 0 for unsigned), so every conversion
 * is defined; complex to real takes the real part; x -> bool is x != 0
 * (complex: either part nonzero); bool -> x is 0/1; every conversion into
 * bfloat16/float16 is rounded once, to nearest even. Truncate=true zeroes
 * the source mantissa bits the destination cannot hold before converting,
 * as TF does, so narrowing float conversions round toward zero. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/core/base/half.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

/* -O2's "very cheap" vectoriser model skips loops that need a runtime
 * trip-count or alias check; these element loops are worth both. */
#pragma GCC optimize("vect-cost-model=dynamic")

typedef void (*cast_fn)(const void *in, void *out, int64_t n);

/* ------------------------------------------------------------------------
 * Converters: to_<DST>_<wide>(v) for wide in i64, u64, f32, f64, c64. */

/* Saturating float -> integer: NaN gives 0, values beyond the range the
 * nearest bound; in range, C's truncation toward zero. The bounds compare
 * in the source's own float type, where (F)MAX rounds up to a power of two
 * for the wide types ((float)INT32_MAX is 2^31), so ">=" catches every
 * value that does not fit; float sources stay in float, which
 * vectorises. */
#define SATURATE(NAME, T, MIN, MAX, SFX, F)                                    \
  static inline T to_##NAME##_##SFX(F v) {                                     \
    if (!(v == v)) {                                                           \
      return 0;                                                                \
    }                                                                          \
    if (v <= (F)(MIN)) {                                                       \
      return (MIN);                                                            \
    }                                                                          \
    if (v >= (F)(MAX)) {                                                       \
      return (MAX);                                                            \
    }                                                                          \
    return (T)v;                                                               \
  }

#define INT_CONVERTERS(NAME, T, MIN, MAX)                                      \
  static inline T to_##NAME##_i64(int64_t v) { return (T)v; }                  \
  static inline T to_##NAME##_u64(uint64_t v) { return (T)v; }                 \
  SATURATE(NAME, T, MIN, MAX, f32, float)                                      \
  SATURATE(NAME, T, MIN, MAX, f64, double)                                     \
  static inline T to_##NAME##_c64(tf_complex64 v) {                            \
    return to_##NAME##_f32(v.re);                                              \
  }

INT_CONVERTERS(INT8, int8_t, INT8_MIN, INT8_MAX)
INT_CONVERTERS(INT16, int16_t, INT16_MIN, INT16_MAX)
INT_CONVERTERS(INT32, int32_t, INT32_MIN, INT32_MAX)
INT_CONVERTERS(INT64, int64_t, INT64_MIN, INT64_MAX)
INT_CONVERTERS(UINT8, uint8_t, 0, UINT8_MAX)
INT_CONVERTERS(UINT16, uint16_t, 0, UINT16_MAX)
INT_CONVERTERS(UINT32, uint32_t, 0, UINT32_MAX)
INT_CONVERTERS(UINT64, uint64_t, 0, UINT64_MAX)

/* bool is stored as one byte holding 0 or 1. */
static inline uint8_t to_BOOL_i64(int64_t v) { return v != 0; }
static inline uint8_t to_BOOL_u64(uint64_t v) { return v != 0; }
static inline uint8_t to_BOOL_f32(float v) { return v != 0; }
static inline uint8_t to_BOOL_f64(double v) { return v != 0; }
static inline uint8_t to_BOOL_c64(tf_complex64 v) {
  return v.re != 0 || v.im != 0;
}

#define FLOAT_CONVERTERS(NAME, T)                                              \
  static inline T to_##NAME##_i64(int64_t v) { return (T)v; }                  \
  static inline T to_##NAME##_u64(uint64_t v) { return (T)v; }                 \
  static inline T to_##NAME##_f32(float v) { return (T)v; }                    \
  static inline T to_##NAME##_f64(double v) { return (T)v; }                   \
  static inline T to_##NAME##_c64(tf_complex64 v) { return (T)v.re; }

FLOAT_CONVERTERS(FLOAT32, float)
FLOAT_CONVERTERS(FLOAT64, double)

/* A 64-bit integer magnitude as a double that rounds to any format of at
 * most 51 significant bits exactly as the integer itself would: above 2^53
 * the bits shifted out are folded into a sticky lowest bit (round to odd),
 * so the one later rounding to 8 or 11 bits is still correct. */
static inline double sticky_u64_to_f64(uint64_t m) {
  if (m < (1ull << 53)) {
    return (double)m;
  }
  int shift = 11 - __builtin_clzll(m); /* 1..11 bits beyond 53 */
  uint64_t lost = m & ((1ull << shift) - 1);
  uint64_t kept = (m >> shift) | (lost != 0);
  return (double)kept * (double)(1ull << shift);
}

static inline double sticky_i64_to_f64(int64_t v) {
  uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  double d = sticky_u64_to_f64(m);
  return v < 0 ? -d : d;
}

#define HALF_CONVERTERS(NAME, FROM_F32, FROM_F64)                              \
  static inline uint16_t to_##NAME##_i64(int64_t v) {                          \
    return FROM_F64(sticky_i64_to_f64(v));                                     \
  }                                                                            \
  static inline uint16_t to_##NAME##_u64(uint64_t v) {                         \
    return FROM_F64(sticky_u64_to_f64(v));                                     \
  }                                                                            \
  static inline uint16_t to_##NAME##_f32(float v) { return FROM_F32(v); }      \
  static inline uint16_t to_##NAME##_f64(double v) { return FROM_F64(v); }     \
  static inline uint16_t to_##NAME##_c64(tf_complex64 v) {                     \
    return FROM_F32(v.re);                                                     \
  }

HALF_CONVERTERS(BFLOAT16, tf__f32_to_bf16, tf__f64_to_bf16)
HALF_CONVERTERS(FLOAT16, tf__f32_to_f16, tf__f64_to_f16)

static inline tf_complex64 to_COMPLEX64_i64(int64_t v) {
  return (tf_complex64){(float)v, 0.0f};
}
static inline tf_complex64 to_COMPLEX64_u64(uint64_t v) {
  return (tf_complex64){(float)v, 0.0f};
}
static inline tf_complex64 to_COMPLEX64_f32(float v) {
  return (tf_complex64){v, 0.0f};
}
static inline tf_complex64 to_COMPLEX64_f64(double v) {
  return (tf_complex64){(float)v, 0.0f};
}
static inline tf_complex64 to_COMPLEX64_c64(tf_complex64 v) { return v; }

/* Picks the converter into DST for the wide value v at compile time. */
#define STORE(DST, v)                                                          \
  _Generic((v), int64_t: to_##DST##_i64, uint64_t: to_##DST##_u64,            \
           float: to_##DST##_f32, double: to_##DST##_f64,                      \
           tf_complex64: to_##DST##_c64)(v)

/* Loaders by source kind: element -> wide value (exact). */
#define LOAD_b(x) ((int64_t)((x) != 0))
#define LOAD_i(x) ((int64_t)(x))
#define LOAD_u(x) ((uint64_t)(x))
#define LOAD_bf(x) tf__bf16_to_f32(x)
#define LOAD_hf(x) tf__f16_to_f32(x)
#define LOAD_f(x) (x)
#define LOAD_c(x) (x)

/* ------------------------------------------------------------------------
 * The (src, dst) table. Two copies of the type list, since a macro cannot
 * expand inside itself: X(ENUM, storage type, load kind, extra...). */
#define CAST_SRC_TYPES(X)                                                      \
  X(BOOL, uint8_t, b)                                                          \
  X(INT8, int8_t, i)                                                           \
  X(INT16, int16_t, i)                                                         \
  X(INT32, int32_t, i)                                                         \
  X(INT64, int64_t, i)                                                         \
  X(UINT8, uint8_t, u)                                                         \
  X(UINT16, uint16_t, u)                                                       \
  X(UINT32, uint32_t, u)                                                       \
  X(UINT64, uint64_t, u)                                                       \
  X(BFLOAT16, uint16_t, bf)                                                    \
  X(FLOAT16, uint16_t, hf)                                                     \
  X(FLOAT32, float, f)                                                         \
  X(FLOAT64, double, f)                                                        \
  X(COMPLEX64, tf_complex64, c)

#define CAST_DST_TYPES(X, ...)                                                 \
  X(BOOL, uint8_t, __VA_ARGS__)                                                \
  X(INT8, int8_t, __VA_ARGS__)                                                 \
  X(INT16, int16_t, __VA_ARGS__)                                               \
  X(INT32, int32_t, __VA_ARGS__)                                               \
  X(INT64, int64_t, __VA_ARGS__)                                               \
  X(UINT8, uint8_t, __VA_ARGS__)                                               \
  X(UINT16, uint16_t, __VA_ARGS__)                                             \
  X(UINT32, uint32_t, __VA_ARGS__)                                             \
  X(UINT64, uint64_t, __VA_ARGS__)                                             \
  X(BFLOAT16, uint16_t, __VA_ARGS__)                                           \
  X(FLOAT16, uint16_t, __VA_ARGS__)                                            \
  X(FLOAT32, float, __VA_ARGS__)                                               \
  X(FLOAT64, double, __VA_ARGS__)                                              \
  X(COMPLEX64, tf_complex64, __VA_ARGS__)

/* cast_S_D: y[i] = D(x[i]) over n elements. */
#define CAST_LOOP(D, DT, S, ST, SK)                                            \
  static void cast_##S##_##D(const void *in, void *out, int64_t n) {          \
    const ST *restrict x = in;                                                 \
    DT *restrict y = out;                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      y[i] = STORE(D, LOAD_##SK(x[i]));                                        \
    }                                                                          \
  }
#define CAST_LOOP_ROW(S, ST, SK) CAST_DST_TYPES(CAST_LOOP, S, ST, SK)
CAST_SRC_TYPES(CAST_LOOP_ROW)

#define CAST_ENTRY(D, DT, S, ST, SK) [TF_##S][TF_##D] = cast_##S##_##D,
#define CAST_ENTRY_ROW(S, ST, SK) CAST_DST_TYPES(CAST_ENTRY, S, ST, SK)
static const cast_fn cast_table[TF_DTYPE_MAX][TF_DTYPE_MAX] = {
    CAST_SRC_TYPES(CAST_ENTRY_ROW)};

/* ------------------------------------------------------------------------
 * Truncate=true: zero the mantissa bits the destination lacks (not NaNs'),
 * then convert as usual; the rounding that follows is then exact for
 * normal results, so the value is truncated toward zero. */
static inline float trunc_f32(float v, int bits) {
  uint32_t u = tf__f32_bits(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return v;
  }
  return tf__f32_from_bits(u & ~((1u << bits) - 1));
}

static inline double trunc_f64(double v, int bits) {
  uint64_t u = tf__f64_bits(v);
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
    return v;
  }
  return tf__f64_from_bits(u & ~((1ull << bits) - 1));
}

/* Mantissa bits: float 23, double 52, bfloat16 7, float16 10. */
#define TRUNC_LOOP(S, ST, D, DT, PREP)                                         \
  static void trunc_##S##_##D(const void *in, void *out, int64_t n) {         \
    const ST *restrict x = in;                                                 \
    DT *restrict y = out;                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      y[i] = STORE(D, PREP(x[i]));                                             \
    }                                                                          \
  }
#define PREP_F32_7(x) trunc_f32((x), 16)
#define PREP_F32_10(x) trunc_f32((x), 13)
#define PREP_C64_7(x) trunc_f32((x).re, 16)
#define PREP_C64_10(x) trunc_f32((x).re, 13)
#define PREP_F64_7(x) trunc_f64((x), 45)
#define PREP_F64_10(x) trunc_f64((x), 42)
#define PREP_F64_23(x) trunc_f64((x), 29)
TRUNC_LOOP(FLOAT32, float, BFLOAT16, uint16_t, PREP_F32_7)
TRUNC_LOOP(FLOAT32, float, FLOAT16, uint16_t, PREP_F32_10)
TRUNC_LOOP(COMPLEX64, tf_complex64, BFLOAT16, uint16_t, PREP_C64_7)
TRUNC_LOOP(COMPLEX64, tf_complex64, FLOAT16, uint16_t, PREP_C64_10)
TRUNC_LOOP(FLOAT64, double, BFLOAT16, uint16_t, PREP_F64_7)
TRUNC_LOOP(FLOAT64, double, FLOAT16, uint16_t, PREP_F64_10)
TRUNC_LOOP(FLOAT64, double, FLOAT32, float, PREP_F64_23)
TRUNC_LOOP(FLOAT64, double, COMPLEX64, tf_complex64, PREP_F64_23)

static const cast_fn trunc_table[TF_DTYPE_MAX][TF_DTYPE_MAX] = {
    [TF_FLOAT32][TF_BFLOAT16] = trunc_FLOAT32_BFLOAT16,
    [TF_FLOAT32][TF_FLOAT16] = trunc_FLOAT32_FLOAT16,
    [TF_COMPLEX64][TF_BFLOAT16] = trunc_COMPLEX64_BFLOAT16,
    [TF_COMPLEX64][TF_FLOAT16] = trunc_COMPLEX64_FLOAT16,
    [TF_FLOAT64][TF_BFLOAT16] = trunc_FLOAT64_BFLOAT16,
    [TF_FLOAT64][TF_FLOAT16] = trunc_FLOAT64_FLOAT16,
    [TF_FLOAT64][TF_FLOAT32] = trunc_FLOAT64_FLOAT32,
    [TF_FLOAT64][TF_COMPLEX64] = trunc_FLOAT64_COMPLEX64,
};

/* ------------------------------------------------------------------------
 * The kernel. */

typedef struct cast_state {
  tf_dtype src, dst;
  cast_fn fn; /* NULL when src == dst: the input is forwarded */
} cast_state;

static cast_fn cast_lookup(tf_dtype src, tf_dtype dst, bool truncate) {
  if ((unsigned)src >= TF_DTYPE_MAX || (unsigned)dst >= TF_DTYPE_MAX) {
    return NULL;
  }
  if (truncate && trunc_table[src][dst] != NULL) {
    return trunc_table[src][dst];
  }
  return cast_table[src][dst];
}

static tf_code cast_init(const tf_node *node, void **state, tf_status *st) {
  tf_dtype src, dst;
  TF_TRY(tf_node_attr_get_type(node, "SrcT", &src, st));
  TF_TRY(tf_node_attr_get_type(node, "DstT", &dst, st));
  bool truncate = false;
  if (tf_node_attr(node, "Truncate") != NULL) {
    TF_TRY(tf_node_attr_get_bool(node, "Truncate", &truncate, st));
  }
  cast_fn fn = NULL;
  if (src != dst) {
    fn = cast_lookup(src, dst, truncate);
    if (fn == NULL) {
      return tf_status_set(st, TF_UNIMPLEMENTED,
                           "%s (Cast): casting %s to %s is not supported",
                           tf_node_name(node), tf_dtype_name(src),
                           tf_dtype_name(dst));
    }
  }
  cast_state *s = tf__xmalloc(sizeof(*s));
  *s = (cast_state){.src = src, .dst = dst, .fn = fn};
  *state = s;
  return TF_OK;
}

static void cast_free(void *state) { free(state); }

typedef struct cast_args {
  cast_fn fn;
  const char *in;
  char *out;
  size_t in_size, out_size;
} cast_args;

static void cast_range(void *arg, int64_t begin, int64_t end) {
  const cast_args *a = arg;
  a->fn(a->in + (size_t)begin * a->in_size,
        a->out + (size_t)begin * a->out_size, end - begin);
}

static tf_code cast_compute(tf_kernel_ctx *ctx) {
  const cast_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  if (x->dtype != s->src) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input is %s but SrcT is %s",
                           tf_dtype_name(x->dtype), tf_dtype_name(s->src));
  }
  if (s->fn == NULL) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, s->dst, &x->shape, &y));
  cast_args a = {.fn = s->fn,
                 .in = x->data,
                 .out = y->data,
                 .in_size = tf_dtype_size(s->src),
                 .out_size = tf_dtype_size(s->dst)};
  tf_parallel_for(ctx->pool, x->n, TF_PARALLEL_GRAIN, cast_range, &a);
  return TF_OK;
}

static const tf_kernel_def cast_kernels[] = {
    {.op = "Cast",
     .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY,
     .type_attr = "SrcT",
     .init = cast_init,
     .compute = cast_compute,
     .free_state = cast_free},
};

TF_REGISTER_KERNELS(cast_kernels)
