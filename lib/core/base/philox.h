/* philox.h: the Philox4x32-10 counter-based generator and TensorFlow's
 * random distributions on top of it.
 *
 * A generator is a 128-bit counter and a 64-bit key; one call encrypts the
 * counter into four 32-bit words and advances the counter by one. The round
 * function, key schedule and seeding (seed -> key, seed2 -> the counter's
 * high 64 bits) are those of Random123 and TensorFlow's PhiloxRandom, and the
 * distributions (uniform float/double/int, Box-Muller normal, truncated
 * normal by rejection at 2 stddev) reproduce TF's bit-for-bit, so that a
 * seeded stream depends only on (key, counter), never on the thread doing
 * the work. */
#ifndef TF_CORE_PHILOX_H
#define TF_CORE_PHILOX_H

#include <stdint.h>

#define TF_PHILOX_M0 0xD2511F53u
#define TF_PHILOX_M1 0xCD9E8D57u
#define TF_PHILOX_W0 0x9E3779B9u
#define TF_PHILOX_W1 0xBB67AE85u
#define TF_PHILOX_ROUNDS 10

/* Samples (4 x uint32 blocks) that TF reserves per output element of a
 * random op, so that rejection samplers never run into the next group. */
#define TF_PHILOX_RESERVED_PER_OUTPUT 256

typedef struct tf_philox {
  uint32_t counter[4]; /* counter[0] is the least significant word */
  uint32_t key[2];
} tf_philox;

/* One 32-bit sample at a time from a generator (TF's SingleSampleAdapter):
 * draws a block of four and hands them out in order. */
typedef struct tf_philox_single {
  tf_philox *gen;
  uint32_t buf[4];
  int used; /* words of buf already handed out; 4 means empty */
} tf_philox_single;

/* The Philox4x32-10 block function: out = E_key(ctr). Pure. */
static inline void tf_philox_block(const uint32_t ctr[4],
                                   const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < TF_PHILOX_ROUNDS; r++) {
    uint64_t p0 = (uint64_t)TF_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)TF_PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += TF_PHILOX_W0;
    k1 += TF_PHILOX_W1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* TF's PhiloxRandom(seed, seed2): key = seed, counter = [0, 0, seed2]. */
void tf_philox_init(tf_philox *g, uint64_t seed, uint64_t seed2);
/* Advances the counter by count blocks (TF's Skip, carries included). */
void tf_philox_skip(tf_philox *g, uint64_t count);

/* Next block of four words; advances the counter by one. */
static inline void tf_philox_next(tf_philox *g, uint32_t out[4]) {
  tf_philox_block(g->counter, g->key, out);
  if (++g->counter[0] == 0 && ++g->counter[1] == 0 &&
      ++g->counter[2] == 0) {
    ++g->counter[3];
  }
}

/* Blocks to compute per vectorised batch. */
#define TF_PHILOX_BATCH 16

/* The next TF_PHILOX_BATCH blocks at once, as words: out[w][i] is word w
 * of block i. Same values as that many tf_philox_next calls, and advances
 * the counter as far; written so the compiler vectorises the rounds. */
void tf_philox_next_batch(tf_philox *g, uint32_t out[4][TF_PHILOX_BATCH]);

void tf_philox_single_init(tf_philox_single *s, tf_philox *gen);
uint32_t tf_philox_single_next(tf_philox_single *s);

/* Bit-exact conversions of TF's random_distributions.h: the low 23 (52)
 * bits become the mantissa of a number in [1, 2), minus 1. */
static inline float tf_philox_u32_to_float(uint32_t x) { /* [0, 1) */
  union { uint32_t u; float f; } v = {.u = (127u << 23) | (x & 0x7fffffu)};
  return v.f - 1.0f;
}

static inline double tf_philox_u64_to_double(uint32_t x0, uint32_t x1) {
  union { uint64_t u; double d; } v = {
      .u = (1023ull << 52) | ((uint64_t)(x0 & 0xfffffu) << 32) | x1};
  return v.d - 1.0; /* [0, 1) */
}

void tf_philox_box_muller_f32(uint32_t x0, uint32_t x1, float *f0,
                              float *f1);
void tf_philox_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2,
                              uint32_t x3, double *d0, double *d1);

/* One output group per call, as TF's distributions: float32 groups hold 4
 * values and consume one block; float64 and int64 groups hold 2 values and
 * consume one block. Integer draws are lo + (bits % range) with range =
 * hi - lo > 0 as an unsigned number (TF's slight modulo bias included). */
#define TF_PHILOX_GROUP_F32 4
#define TF_PHILOX_GROUP_F64 2
void tf_philox_uniform_f32(tf_philox *g, float out[4]);
void tf_philox_uniform_f64(tf_philox *g, double out[2]);
void tf_philox_uniform_i32(tf_philox *g, int32_t lo, uint32_t range,
                           int32_t out[4]);
void tf_philox_uniform_i64(tf_philox *g, int64_t lo, uint64_t range,
                           int64_t out[2]);
void tf_philox_normal_f32(tf_philox *g, float out[4]);
void tf_philox_normal_f64(tf_philox *g, double out[2]);

/* Truncated standard normal (|x| < 2) by rejection from single samples; a
 * group uses a variable number of words, so TF gives each group its own
 * window of TF_PHILOX_TRUNC_SKIP_* blocks. */
#define TF_PHILOX_TRUNC_SKIP_F32                                               \
  (TF_PHILOX_GROUP_F32 * TF_PHILOX_RESERVED_PER_OUTPUT / 4)
#define TF_PHILOX_TRUNC_SKIP_F64                                               \
  (TF_PHILOX_GROUP_F64 * TF_PHILOX_RESERVED_PER_OUTPUT / 4)
void tf_philox_truncated_normal_f32(tf_philox_single *s, float out[4]);
void tf_philox_truncated_normal_f64(tf_philox_single *s, double out[2]);

#endif
