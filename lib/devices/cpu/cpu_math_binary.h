/* cpu_math_binary.h: internal interface between the math_binary CPU kernel
 * files. The typed element loops (cpu_math_binary_loops.c) are reached
 * through lookup functions so the kernel glue (cpu_math_binary.c,
 * cpu_math_binary_misc.c) stays free of per-dtype code. */
#ifndef TF_DEVICES_CPU_CPU_MATH_BINARY_H
#define TF_DEVICES_CPU_CPU_MATH_BINARY_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/tensor.h"
#include "lib/devices/cpu/cpu_broadcast.h"

/* Loop pragmas for the element loops. gcc 12's -O2 uses the "very-cheap"
 * vectoriser cost model, which skips every loop whose trip count is not a
 * known multiple of the vector width, so the loop files ask for the dynamic
 * model (TF__VECTORIZE at their top). Outputs may be an operand forwarded
 * in place, so pointers cannot be restrict; but they then alias element
 * for element, with no dependence between iterations, which is what
 * TF__IVDEP promises, sparing the runtime overlap checks. */
#if defined(__GNUC__) && !defined(__clang__)
#define TF__VECTORIZE _Pragma("GCC optimize(\"vect-cost-model=dynamic\")")
#define TF__IVDEP _Pragma("GCC ivdep")
#else /* clang vectorises at -O2 with runtime overlap checks */
#define TF__VECTORIZE
#define TF__IVDEP
#endif

/* Element-wise binary ops with broadcasting. */
typedef enum tf__binop {
  TF__BINOP_ADD,
  TF__BINOP_SUB,
  TF__BINOP_MUL,
  TF__BINOP_DIV,
  TF__BINOP_FLOORDIV,  /* rounds toward -inf (floats: floor(x / y)) */
  TF__BINOP_TRUNCDIV,  /* rounds toward 0 (floats: trunc(x / y)) */
  TF__BINOP_FLOORMOD,  /* remainder with the sign of the divisor */
  TF__BINOP_TRUNCMOD,  /* C's % and fmod: the sign of the dividend */
  TF__BINOP_POW,
  TF__BINOP_MAXIMUM,
  TF__BINOP_MINIMUM,
  TF__BINOP_GREATER,
  TF__BINOP_GREATER_EQUAL,
  TF__BINOP_LESS,
  TF__BINOP_LESS_EQUAL,
  TF__BINOP_EQUAL,
  TF__BINOP_NOT_EQUAL,
  TF__BINOP_LOGICAL_AND,
  TF__BINOP_LOGICAL_OR,
  /* float32/float64 only, except SquaredDifference (also int32, int64) */
  TF__BINOP_SQUARED_DIFFERENCE, /* (x - y)^2 */
  TF__BINOP_DIV_NO_NAN,         /* 0 where y == 0, else x / y */
  TF__BINOP_ATAN2,              /* atan2(in0, in1): TF's inputs are (y, x) */
  TF__BINOP_XDIVY,              /* 0 where x == 0, else x / y */
  TF__BINOP_XLOGY,              /* 0 where x == 0, else x * log(y) */
  TF__BINOP_COUNT
} tf__binop;

/* Argument of every block function below: output and operand base
 * pointers, in the order of the tf_bcast operands. */
typedef struct tf__binop_args {
  void *out;
  const void *in[TF_BCAST_MAX_IN];
} tf__binop_args;

/* Block function computing op on dtype dt over a 2-operand tf_bcast (arg is
 * a tf__binop_args); NULL when op has no loop for dt. Integer division
 * by zero yields 0 and integer powers with negative exponents 0: callers
 * check divisors first (tf__tensor_has_zero, tf__tensor_has_negative).
 * Signed MIN / -1 wraps to MIN and its remainder is 0. */
tf_bcast_block_fn tf__binop_block_fn(tf__binop op, tf_dtype dt);

/* ClipByValue over a 3-operand tf_bcast (t, min, max): max(min(t, hi), lo)
 * as TF computes it (lo when lo > hi; NaN in t stays NaN). t must be full
 * (same shape as the output); min and max full or scalar. NULL for dtypes
 * without loops. */
tf_bcast_block_fn tf__clip_block_fn(tf_dtype dt);

/* AddN over elements [begin, end): out = in[0] + ... + in[n-1], summed in
 * input order. out may alias in[0] (the first addend is read before any
 * write); aliasing a later input is wrong. NULL for dtypes without loops. */
typedef void (*tf__addn_fn)(void *out, const void *const *in, int n,
                            int64_t begin, int64_t end);
tf__addn_fn tf__addn_fn_for(tf_dtype dt);

/* Whether an integer tensor holds a zero / a negative value (false for
 * other dtypes). */
bool tf__tensor_has_zero(const tf_tensor *t);
bool tf__tensor_has_negative(const tf_tensor *t);

#endif
