/* cpu_math_binary_loops.c: the typed element loops of the math_binary
 * kernels, stamped out by macros for every (op, dtype) pair.
 *
 * Each op is a small inline function of two elements; each block loop has
 * four variants (both operands moving along the row, one fixed, both fixed)
 * so the compiler vectorises the common ones. Integer arithmetic wraps (it
 * is done in an unsigned type: no undefined behaviour on overflow), and
 * integer division guards its own divisor so a missed check can never
 * trap; the kernels report division by zero before running the loops. */
#include "lib/devices/cpu/cpu_math_binary.h"

TF__VECTORIZE /* see cpu_math_binary.h */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* suffix, C type, dtype enum, unsigned type of the wrapping arithmetic */
#define SINT_TYPES(X)                                                          \
  X(i8, int8_t, INT8, uint32_t)                                                \
  X(i16, int16_t, INT16, uint32_t)                                             \
  X(i32, int32_t, INT32, uint32_t)                                             \
  X(i64, int64_t, INT64, uint64_t)
#define UINT_TYPES(X)                                                          \
  X(u8, uint8_t, UINT8, uint32_t)                                              \
  X(u16, uint16_t, UINT16, uint32_t)                                           \
  X(u32, uint32_t, UINT32, uint32_t)                                           \
  X(u64, uint64_t, UINT64, uint64_t)
/* suffix, C type, dtype enum, libm floor, trunc, fmod, pow, atan2, log */
#define FLOAT_TYPES(X)                                                         \
  X(f32, float, FLOAT32, floorf, truncf, fmodf, powf, atan2f, logf)            \
  X(f64, double, FLOAT64, floor, trunc, fmod, pow, atan2, log)

/* ---- element ops ------------------------------------------------------ */

#define FLOAT_OPS(s, T, DT, FLOOR, TRUNC, FMOD, POW, ATAN2, LOG)               \
  static inline T add_##s##_op(T x, T y) { return x + y; }                     \
  static inline T sub_##s##_op(T x, T y) { return x - y; }                     \
  static inline T mul_##s##_op(T x, T y) { return x * y; }                     \
  static inline T div_##s##_op(T x, T y) { return x / y; }                     \
  static inline T floordiv_##s##_op(T x, T y) { return FLOOR(x / y); }         \
  static inline T truncdiv_##s##_op(T x, T y) { return TRUNC(x / y); }         \
  static inline T floormod_##s##_op(T x, T y) {                                \
    T r = FMOD(x, y);                                                          \
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;                       \
  }                                                                            \
  static inline T truncmod_##s##_op(T x, T y) { return FMOD(x, y); }           \
  static inline T pow_##s##_op(T x, T y) { return POW(x, y); }                 \
  static inline T max_##s##_op(T x, T y) {                                     \
    return (x > y || x != x) ? x : y;                                          \
  }                                                                            \
  static inline T min_##s##_op(T x, T y) {                                     \
    return (x < y || x != x) ? x : y;                                          \
  }                                                                            \
  static inline T sqdiff_##s##_op(T x, T y) { return (x - y) * (x - y); }      \
  static inline T divnonan_##s##_op(T x, T y) { return y == 0 ? 0 : x / y; }   \
  static inline T atan2_##s##_op(T y, T x) { return ATAN2(y, x); }             \
  static inline T xdivy_##s##_op(T x, T y) { return x == 0 ? 0 : x / y; }      \
  static inline T xlogy_##s##_op(T x, T y) { return x == 0 ? 0 : x * LOG(y); }

#define WRAP_OPS(s, T, U)                                                      \
  static inline T add_##s##_op(T x, T y) { return (T)((U)x + (U)y); }          \
  static inline T sub_##s##_op(T x, T y) { return (T)((U)x - (U)y); }          \
  static inline T mul_##s##_op(T x, T y) { return (T)((U)x * (U)y); }          \
  static inline T max_##s##_op(T x, T y) { return x > y ? x : y; }             \
  static inline T min_##s##_op(T x, T y) { return x < y ? x : y; }             \
  static inline T ipow_##s(T x, T e) {                                         \
    U r = 1, b = (U)x;                                                         \
    for (; e > 0; e = (T)(e >> 1)) {                                           \
      if (e & 1) {                                                             \
        r *= b;                                                                \
      }                                                                        \
      b *= b;                                                                  \
    }                                                                          \
    return (T)r;                                                               \
  }

/* Truncating C division is only safe off y == 0 and MIN / -1. */
#define SINT_OPS(s, T, DT, U)                                                  \
  WRAP_OPS(s, T, U)                                                            \
  static inline T div_##s##_op(T x, T y) {                                     \
    if (y == 0) {                                                              \
      return 0;                                                                \
    }                                                                          \
    return y == -1 ? (T)(0 - (U)x) : (T)(x / y);                               \
  }                                                                            \
  static inline T truncdiv_##s##_op(T x, T y) { return div_##s##_op(x, y); }   \
  static inline T floordiv_##s##_op(T x, T y) {                                \
    if (y == 0 || y == -1) {                                                   \
      return y == 0 ? 0 : (T)(0 - (U)x);                                       \
    }                                                                          \
    T q = (T)(x / y);                                                          \
    return (x % y != 0 && ((x < 0) != (y < 0))) ? (T)(q - 1) : q;             \
  }                                                                            \
  static inline T truncmod_##s##_op(T x, T y) {                                \
    return (y == 0 || y == -1) ? 0 : (T)(x % y);                               \
  }                                                                            \
  static inline T floormod_##s##_op(T x, T y) {                                \
    T r = truncmod_##s##_op(x, y);                                             \
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r;                 \
  }                                                                            \
  static inline T pow_##s##_op(T x, T y) { return y < 0 ? 0 : ipow_##s(x, y); } \
  static inline T sqdiff_##s##_op(T x, T y) {                                  \
    U d = (U)x - (U)y;                                                         \
    return (T)(d * d);                                                         \
  }

/* Unsigned: truncating and flooring agree. */
#define UINT_OPS(s, T, DT, U)                                                  \
  WRAP_OPS(s, T, U)                                                            \
  static inline T div_##s##_op(T x, T y) { return y ? (T)(x / y) : 0; }        \
  static inline T floordiv_##s##_op(T x, T y) { return div_##s##_op(x, y); }   \
  static inline T truncdiv_##s##_op(T x, T y) { return div_##s##_op(x, y); }   \
  static inline T truncmod_##s##_op(T x, T y) { return y ? (T)(x % y) : 0; }   \
  static inline T floormod_##s##_op(T x, T y) {                                \
    return truncmod_##s##_op(x, y);                                            \
  }                                                                            \
  static inline T pow_##s##_op(T x, T y) { return ipow_##s(x, y); }

FLOAT_TYPES(FLOAT_OPS)
SINT_TYPES(SINT_OPS)
UINT_TYPES(UINT_OPS)

/* ---- block loops ------------------------------------------------------ */

/* Short rows where one operand repeats a single row ([N,C] + [C], small
 * C) would spend their time in per-row overhead; they are regrouped into
 * long rows against a tiled copy of the repeated row (TILE_BYTES on the
 * stack). Returns which operand repeats (0 or 1), or -1 if the block is
 * not of that kind. */
#define SHORT_ROW 64
#define TILE_BYTES 4096
static int repeated_row(const tf_bcast *bc, const tf_bcast_block *k) {
  if (k->rows < 2 || k->cols >= SHORT_ROW) {
    return -1;
  }
  bool full[2], rep[2];
  for (int j = 0; j < 2; j++) {
    full[j] = bc->row_stride[j] == k->cols && bc->col_stride[j] == 1;
    rep[j] = bc->row_stride[j] == 0 && bc->col_stride[j] == 1;
  }
  return full[0] && rep[1] ? 1 : full[1] && rep[0] ? 0 : -1;
}

/* name##_blk: output type TO from operands of type T, EXPR over x and y. */
#define BINOP_DEF(name, T, TO, EXPR)                                           \
  static inline void name##_seg(TO *o, const T *a, const T *b, int64_t n,      \
                                int64_t sa, int64_t sb) {                      \
    if (sa && sb) {                                                            \
      TF__IVDEP for (int64_t i = 0; i < n; i++) {                                  \
        const T x = a[i], y = b[i];                                            \
        o[i] = (EXPR);                                                         \
      }                                                                        \
    } else if (sa) {                                                           \
      const T y = b[0];                                                        \
      TF__IVDEP for (int64_t i = 0; i < n; i++) {                                  \
        const T x = a[i];                                                      \
        o[i] = (EXPR);                                                         \
      }                                                                        \
    } else if (sb) {                                                           \
      const T x = a[0];                                                        \
      TF__IVDEP for (int64_t i = 0; i < n; i++) {                                  \
        const T y = b[i];                                                      \
        o[i] = (EXPR);                                                         \
      }                                                                        \
    } else {                                                                   \
      const T x = a[0], y = b[0];                                              \
      const TO v = (EXPR);                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        o[i] = v;                                                              \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void name##_blk(void *arg, const tf_bcast *bc,                        \
                         const tf_bcast_block *k) {                            \
    const tf__binop_args *p = arg;                                             \
    TO *o = (TO *)p->out + k->out_off;                                         \
    const T *a = (const T *)p->in[0] + k->in_off[0];                           \
    const T *b = (const T *)p->in[1] + k->in_off[1];                           \
    int rep = repeated_row(bc, k);                                             \
    if (rep >= 0) {                                                            \
      T tile[TILE_BYTES / sizeof(T)];                                          \
      int64_t c = k->cols, per = (int64_t)(sizeof(tile) / sizeof(T)) / c;      \
      const T *row = rep ? b : a;                                              \
      for (int64_t i = 0; i < per * c; i++) {                                  \
        tile[i] = row[i % c];                                                  \
      }                                                                        \
      for (int64_t r = 0; r < k->rows; r += per) {                             \
        int64_t n = (k->rows - r < per ? k->rows - r : per) * c;               \
        name##_seg(o + r * c, rep ? a + r * c : tile, rep ? tile : b + r * c,  \
                   n, 1, 1);                                                   \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    for (int64_t r = 0; r < k->rows; r++) {                                    \
      name##_seg(o + r * bc->out_row_stride, a + r * bc->row_stride[0],        \
                 b + r * bc->row_stride[1], k->cols, bc->col_stride[0],        \
                 bc->col_stride[1]);                                           \
    }                                                                          \
  }

/* (op, table enum) pairs; X gets (op, OPC, s, T, DT). */
#define ARITH_X(X, s, T, DT)                                                   \
  X(add, ADD, s, T, DT)                                                        \
  X(sub, SUB, s, T, DT)                                                        \
  X(mul, MUL, s, T, DT)                                                        \
  X(div, DIV, s, T, DT)                                                        \
  X(floordiv, FLOORDIV, s, T, DT)                                              \
  X(truncdiv, TRUNCDIV, s, T, DT)                                              \
  X(floormod, FLOORMOD, s, T, DT)                                              \
  X(truncmod, TRUNCMOD, s, T, DT)                                              \
  X(pow, POW, s, T, DT)                                                        \
  X(max, MAXIMUM, s, T, DT)                                                    \
  X(min, MINIMUM, s, T, DT)
/* X gets (op, OPC, operator, s, T, DT). */
#define CMP_X(X, s, T, DT)                                                     \
  X(gt, GREATER, >, s, T, DT)                                                  \
  X(ge, GREATER_EQUAL, >=, s, T, DT)                                           \
  X(lt, LESS, <, s, T, DT)                                                     \
  X(le, LESS_EQUAL, <=, s, T, DT)                                              \
  X(eq, EQUAL, ==, s, T, DT)                                                   \
  X(ne, NOT_EQUAL, !=, s, T, DT)

/* Float-only ops (TF's CPU kernels of these take float and double). */
#define FLOAT_MORE_X(X, s, T, DT)                                              \
  X(sqdiff, SQUARED_DIFFERENCE, s, T, DT)                                      \
  X(divnonan, DIV_NO_NAN, s, T, DT)                                            \
  X(atan2, ATAN2, s, T, DT)                                                    \
  X(xdivy, XDIVY, s, T, DT)                                                    \
  X(xlogy, XLOGY, s, T, DT)

#define DEF_ARITH(op, OPC, s, T, DT) BINOP_DEF(op##_##s, T, T, op##_##s##_op(x, y))
#define DEF_CMP(op, OPC, OPR, s, T, DT) BINOP_DEF(op##_##s, T, bool, (x OPR y))
#define DEF_TYPE(s, T, DT, ...) ARITH_X(DEF_ARITH, s, T, DT) CMP_X(DEF_CMP, s, T, DT)

#define DEF_FLOAT_MORE(s, T, DT, ...) FLOAT_MORE_X(DEF_ARITH, s, T, DT)

FLOAT_TYPES(DEF_TYPE)
FLOAT_TYPES(DEF_FLOAT_MORE)
SINT_TYPES(DEF_TYPE)
DEF_ARITH(sqdiff, SQUARED_DIFFERENCE, i32, int32_t, INT32)
DEF_ARITH(sqdiff, SQUARED_DIFFERENCE, i64, int64_t, INT64)
UINT_TYPES(DEF_TYPE)
BINOP_DEF(eq_b, bool, bool, (x == y))
BINOP_DEF(ne_b, bool, bool, (x != y))
BINOP_DEF(land_b, bool, bool, (x && y))
BINOP_DEF(lor_b, bool, bool, (x || y))

#define ENT_ARITH(op, OPC, s, T, DT) [TF__BINOP_##OPC][TF_##DT] = op##_##s##_blk,
#define ENT_CMP(op, OPC, OPR, s, T, DT) [TF__BINOP_##OPC][TF_##DT] = op##_##s##_blk,
#define ENT_TYPE(s, T, DT, ...) ARITH_X(ENT_ARITH, s, T, DT) CMP_X(ENT_CMP, s, T, DT)
#define ENT_FLOAT_MORE(s, T, DT, ...) FLOAT_MORE_X(ENT_ARITH, s, T, DT)

static const tf_bcast_block_fn k_binop_fns[TF__BINOP_COUNT][TF_DTYPE_MAX] = {
    FLOAT_TYPES(ENT_TYPE) SINT_TYPES(ENT_TYPE) UINT_TYPES(ENT_TYPE)
    FLOAT_TYPES(ENT_FLOAT_MORE)
    [TF__BINOP_SQUARED_DIFFERENCE][TF_INT32] = sqdiff_i32_blk,
    [TF__BINOP_SQUARED_DIFFERENCE][TF_INT64] = sqdiff_i64_blk,
    [TF__BINOP_EQUAL][TF_BOOL] = eq_b_blk,
    [TF__BINOP_NOT_EQUAL][TF_BOOL] = ne_b_blk,
    [TF__BINOP_LOGICAL_AND][TF_BOOL] = land_b_blk,
    [TF__BINOP_LOGICAL_OR][TF_BOOL] = lor_b_blk,
};

tf_bcast_block_fn tf__binop_block_fn(tf__binop op, tf_dtype dt) {
  if ((int)op < 0 || op >= TF__BINOP_COUNT || (int)dt < 0 ||
      dt >= TF_DTYPE_MAX) {
    return NULL;
  }
  return k_binop_fns[op][dt];
}

/* ---- ClipByValue ------------------------------------------------------ */

/* Eigen's cwiseMin(hi).cwiseMax(lo), which TF uses: NaN t stays NaN. */
#define CLIP_DEF(s, T, DT, ...)                                                \
  static inline T clip_##s##_op(T x, T lo, T hi) {                             \
    T v = hi < x ? hi : x;                                                     \
    return v < lo ? lo : v;                                                    \
  }                                                                            \
  static void clip_##s##_blk(void *arg, const tf_bcast *bc,                    \
                             const tf_bcast_block *k) {                        \
    const tf__binop_args *p = arg;                                             \
    for (int64_t r = 0; r < k->rows; r++) {                                    \
      T *o = (T *)p->out + k->out_off + r * bc->out_row_stride;                \
      const T *a = (const T *)p->in[0] + k->in_off[0] + r * bc->row_stride[0]; \
      const T *l = (const T *)p->in[1] + k->in_off[1] + r * bc->row_stride[1]; \
      const T *h = (const T *)p->in[2] + k->in_off[2] + r * bc->row_stride[2]; \
      int64_t n = k->cols;                                                     \
      if (bc->col_stride[1] && bc->col_stride[2]) {                            \
        for (int64_t i = 0; i < n; i++) {                                      \
          o[i] = clip_##s##_op(a[i], l[i], h[i]);                              \
        }                                                                      \
      } else if (bc->col_stride[1]) {                                          \
        const T hv = h[0];                                                     \
        for (int64_t i = 0; i < n; i++) {                                      \
          o[i] = clip_##s##_op(a[i], l[i], hv);                                \
        }                                                                      \
      } else if (bc->col_stride[2]) {                                          \
        const T lv = l[0];                                                     \
        for (int64_t i = 0; i < n; i++) {                                      \
          o[i] = clip_##s##_op(a[i], lv, h[i]);                                \
        }                                                                      \
      } else {                                                                 \
        const T lv = l[0], hv = h[0];                                          \
        for (int64_t i = 0; i < n; i++) {                                      \
          o[i] = clip_##s##_op(a[i], lv, hv);                                  \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

FLOAT_TYPES(CLIP_DEF)
SINT_TYPES(CLIP_DEF)
UINT_TYPES(CLIP_DEF)

#define ENT_CLIP(s, T, DT, ...) [TF_##DT] = clip_##s##_blk,
static const tf_bcast_block_fn k_clip_fns[TF_DTYPE_MAX] = {
    FLOAT_TYPES(ENT_CLIP) SINT_TYPES(ENT_CLIP) UINT_TYPES(ENT_CLIP)};

tf_bcast_block_fn tf__clip_block_fn(tf_dtype dt) {
  return (int)dt >= 0 && dt < TF_DTYPE_MAX ? k_clip_fns[dt] : NULL;
}

/* ---- AddN ------------------------------------------------------------- */

/* Sums in chunks that stay in L1 while the inputs stream through. */
#define ADDN_CHUNK 2048
#define ADDN_DEF(s, T, DT, ...)                                                \
  static void addn_##s(void *out, const void *const *in, int n,               \
                       int64_t begin, int64_t end) {                           \
    T *o = out;                                                                \
    for (int64_t c = begin; c < end; c += ADDN_CHUNK) {                        \
      int64_t e = c + ADDN_CHUNK < end ? c + ADDN_CHUNK : end;                 \
      const T *x0 = in[0];                                                     \
      if (n == 1) {                                                            \
        memmove(o + c, x0 + c, (size_t)(e - c) * sizeof(T));                  \
        continue;                                                              \
      }                                                                        \
      const T *x1 = in[1];                                                     \
      for (int64_t i = c; i < e; i++) {                                        \
        o[i] = add_##s##_op(x0[i], x1[i]);                                     \
      }                                                                        \
      for (int j = 2; j < n; j++) {                                            \
        const T *xj = in[j];                                                   \
        for (int64_t i = c; i < e; i++) {                                      \
          o[i] = add_##s##_op(o[i], xj[i]);                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

FLOAT_TYPES(ADDN_DEF)
SINT_TYPES(ADDN_DEF)
UINT_TYPES(ADDN_DEF)

#define ENT_ADDN(s, T, DT, ...) [TF_##DT] = addn_##s,
static const tf__addn_fn k_addn_fns[TF_DTYPE_MAX] = {
    FLOAT_TYPES(ENT_ADDN) SINT_TYPES(ENT_ADDN) UINT_TYPES(ENT_ADDN)};

tf__addn_fn tf__addn_fn_for(tf_dtype dt) {
  return (int)dt >= 0 && dt < TF_DTYPE_MAX ? k_addn_fns[dt] : NULL;
}

/* ---- divisor checks --------------------------------------------------- */

#define SCAN_CASE(s, T, DT, ...)                                               \
  case TF_##DT: {                                                              \
    const T *v = t->data;                                                      \
    bool hit = false;                                                          \
    for (int64_t i = 0; i < t->n; i++) {                                       \
      hit |= PRED(v[i]);                                                       \
    }                                                                          \
    return hit;                                                                \
  }

bool tf__tensor_has_zero(const tf_tensor *t) {
#define PRED(v) ((v) == 0)
  switch (t->dtype) {
    SINT_TYPES(SCAN_CASE)
    UINT_TYPES(SCAN_CASE)
  default:
    return false;
  }
#undef PRED
}

bool tf__tensor_has_negative(const tf_tensor *t) {
#define PRED(v) ((v) < 0)
  switch (t->dtype) {
    SINT_TYPES(SCAN_CASE)
  default:
    return false;
  }
#undef PRED
}
