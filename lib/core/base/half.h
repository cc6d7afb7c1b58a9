/* half.h: inline 16-bit float conversions for kernels' inner loops.
 *
 * lib/core/base/half.c exports these as the tf_* functions declared in
 * include/tf/dtype.h; kernels (Cast, the unary math ops) include this header
 * so that the conversions inline and vectorise. All narrowing conversions
 * round to nearest, ties to even, exactly like IEEE 754, numpy and
 * TensorFlow: overflow gives infinity, results below the smallest normal
 * become subnormals or zero, and the sign of zero is kept. A NaN stays a NaN
 * with its sign and the top bits of its payload, and comes out quiet (as
 * x86 F16C and ARM hardware convert). Widening is exact, payloads included. */
#ifndef TF_CORE_HALF_H
#define TF_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t tf__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float tf__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline uint64_t tf__f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

static inline double tf__f64_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

/* bfloat16 is the top half of a float32: widening is a shift. */
static inline float tf__bf16_to_f32(uint16_t h) {
  return tf__f32_from_bits((uint32_t)h << 16);
}

static inline uint16_t tf__f32_to_bf16(float f) {
  uint32_t u = tf__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep payload, set quiet */
  }
  /* Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry
   * out of the mantissa bumps the exponent, which also yields infinity. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float tf__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu; /* exponent and mantissa */
  /* Shifted into a float's place, the bits are the value times 2^-112
   * (exponent bias 127 vs 15), subnormals included; the multiply restores
   * it exactly. It runs unconditionally, so loops vectorise. */
  uint32_t finite = tf__f32_bits(tf__f32_from_bits(em << 13) * 0x1p112f);
  /* Infinity and NaN: all-ones exponent, payload kept. */
  uint32_t special = (em << 13) | 0x7f800000u;
  return tf__f32_from_bits(sign | (em >= 0x7c00u ? special : finite));
}

static inline uint16_t tf__f32_to_f16(float f) {
  uint32_t u = tf__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) { /* NaN */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x47800000u) { /* >= 65536 (and inf): beyond rounding range */
    return (uint16_t)(sign | 0x7c00u);
  }
  if (a < 0x38800000u) {
    /* Below 2^-14: the result is subnormal. In [0.5, 1) a float's ulp is
     * 2^-24, the half subnormal step, so the float addition rounds exactly
     * as needed; the difference of bit patterns counts the steps (0x400,
     * the smallest normal, when it rounds up to it). */
    float t = tf__f32_from_bits(a) + 0.5f;
    return (uint16_t)(sign | (tf__f32_bits(t) - 0x3f000000u));
  }
  /* Normal: rebias the exponent (127 -> 15) and round off 13 bits; a carry
   * into the exponent is right, including 65520.. -> infinity. */
  a -= 112u << 23;
  a += 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | (a >> 13));
}

static inline uint16_t tf__f64_to_f16(double d) {
  uint64_t u = tf__f64_bits(d);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
  uint64_t a = u & 0x7fffffffffffffffull;
  if (a > 0x7ff0000000000000ull) { /* NaN */
    return (uint16_t)(sign | 0x7e00u | ((a >> 42) & 0x3ffu));
  }
  if (a >= 0x40f0000000000000ull) { /* >= 65536 */
    return (uint16_t)(sign | 0x7c00u);
  }
  if (a < 0x3f10000000000000ull) { /* < 2^-14: subnormal result */
    /* Doubles in [2^28, 2^29) step by 2^-24: same trick as for float. */
    double t = tf__f64_from_bits(a) + 0x1p28;
    return (uint16_t)(sign | (tf__f64_bits(t) - 0x41b0000000000000ull));
  }
  a -= 1008ull << 52; /* rebias 1023 -> 15 */
  a += 0x1ffffffffffull + ((a >> 42) & 1u);
  return (uint16_t)(sign | (a >> 42));
}

/* Direct (singly rounded) double -> bfloat16; going through float would
 * round twice, which is wrong in float's subnormal range. */
static inline uint16_t tf__f64_to_bf16(double d) {
  uint64_t u = tf__f64_bits(d);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
  uint64_t a = u & 0x7fffffffffffffffull;
  if (a > 0x7ff0000000000000ull) { /* NaN */
    return (uint16_t)(sign | 0x7fc0u | ((a >> 45) & 0x7fu));
  }
  if (a >= 0x47f0000000000000ull) { /* >= 2^128 */
    return (uint16_t)(sign | 0x7f80u);
  }
  if (a < 0x3810000000000000ull) { /* < 2^-126: subnormal result */
    /* Doubles in [2^-81, 2^-80) step by 2^-133, bfloat16's subnormal step. */
    double t = tf__f64_from_bits(a) + 0x1p-81;
    return (uint16_t)(sign | (tf__f64_bits(t) - 0x3ae0000000000000ull));
  }
  a -= 896ull << 52; /* rebias 1023 -> 127 */
  a += 0xfffffffffffull + ((a >> 45) & 1u);
  return (uint16_t)(sign | (a >> 45));
}

#endif
