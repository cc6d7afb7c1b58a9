/* philox.c: seeding, skipping and TensorFlow's distributions over the
 * Philox4x32-10 block function (see philox.h). Every conversion follows
 * tensorflow/core/lib/random/random_distributions.h bit for bit, including
 * where TF computes in double before rounding to float. */
#include "lib/core/base/philox.h"

#include <math.h>
#include <string.h>

void tf_philox_init(tf_philox *g, uint64_t seed, uint64_t seed2) {
  g->key[0] = (uint32_t)seed;
  g->key[1] = (uint32_t)(seed >> 32);
  g->counter[0] = 0;
  g->counter[1] = 0;
  g->counter[2] = (uint32_t)seed2;
  g->counter[3] = (uint32_t)(seed2 >> 32);
}

void tf_philox_skip(tf_philox *g, uint64_t count) {
  const uint32_t count_lo = (uint32_t)count;
  uint32_t count_hi = (uint32_t)(count >> 32);
  g->counter[0] += count_lo;
  if (g->counter[0] < count_lo) {
    ++count_hi;
  }
  g->counter[1] += count_hi;
  if (g->counter[1] < count_hi) {
    if (++g->counter[2] == 0) {
      ++g->counter[3];
    }
  }
}

/* Structure of arrays, fixed trip counts: GCC turns the rounds into
 * vpmuludq on 8 or 16 lanes. Lane i starts at the 128-bit counter + i. */
void tf_philox_next_batch(tf_philox *g, uint32_t out[4][TF_PHILOX_BATCH]) {
  enum { N = TF_PHILOX_BATCH };
  uint32_t c0[N], c1[N], c2[N], c3[N];
  const uint64_t base = ((uint64_t)g->counter[1] << 32) | g->counter[0];
  for (int i = 0; i < N; i++) {
    uint64_t lo = base + (uint64_t)i;
    uint32_t carry = lo < base;
    c0[i] = (uint32_t)lo;
    c1[i] = (uint32_t)(lo >> 32);
    c2[i] = g->counter[2] + carry;
    c3[i] = g->counter[3] + (carry & (c2[i] == 0));
  }
  uint32_t k0 = g->key[0], k1 = g->key[1];
  for (int r = 0; r < TF_PHILOX_ROUNDS; r++) {
    for (int i = 0; i < N; i++) {
      uint64_t p0 = (uint64_t)TF_PHILOX_M0 * c0[i];
      uint64_t p1 = (uint64_t)TF_PHILOX_M1 * c2[i];
      uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[i] ^ k0;
      uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[i] ^ k1;
      c1[i] = (uint32_t)p1;
      c3[i] = (uint32_t)p0;
      c0[i] = n0;
      c2[i] = n2;
    }
    k0 += TF_PHILOX_W0;
    k1 += TF_PHILOX_W1;
  }
  memcpy(out[0], c0, sizeof(c0));
  memcpy(out[1], c1, sizeof(c1));
  memcpy(out[2], c2, sizeof(c2));
  memcpy(out[3], c3, sizeof(c3));
  /* The counter as N calls of next() leave it: a 128-bit add. */
  const uint64_t end = base + N;
  g->counter[0] = (uint32_t)end;
  g->counter[1] = (uint32_t)(end >> 32);
  if (end < base && ++g->counter[2] == 0) {
    ++g->counter[3];
  }
}

void tf_philox_single_init(tf_philox_single *s, tf_philox *gen) {
  s->gen = gen;
  memset(s->buf, 0, sizeof(s->buf));
  s->used = 4;
}

uint32_t tf_philox_single_next(tf_philox_single *s) {
  if (s->used == 4) {
    tf_philox_next(s->gen, s->buf);
    s->used = 0;
  }
  return s->buf[s->used++];
}

void tf_philox_box_muller_f32(uint32_t x0, uint32_t x1, float *f0,
                              float *f1) {
  const float epsilon = 1.0e-7f;
  float u1 = tf_philox_u32_to_float(x0);
  if (u1 < epsilon) {
    u1 = epsilon;
  }
  /* TF writes 2.0f * M_PI * u: the product is formed in double. */
  const float v1 = (float)(2.0 * M_PI * (double)tf_philox_u32_to_float(x1));
  const float u2 = sqrtf(-2.0f * logf(u1));
  sincosf(v1, f0, f1);
  *f0 *= u2;
  *f1 *= u2;
}

void tf_philox_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2,
                              uint32_t x3, double *d0, double *d1) {
  const double epsilon = 1.0e-7;
  double u1 = tf_philox_u64_to_double(x0, x1);
  if (u1 < epsilon) {
    u1 = epsilon;
  }
  const double v1 = 2 * M_PI * tf_philox_u64_to_double(x2, x3);
  const double u2 = sqrt(-2.0 * log(u1));
  sincos(v1, d0, d1);
  *d0 *= u2;
  *d1 *= u2;
}

void tf_philox_uniform_f32(tf_philox *g, float out[4]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  for (int i = 0; i < 4; i++) {
    out[i] = tf_philox_u32_to_float(s[i]);
  }
}

void tf_philox_uniform_f64(tf_philox *g, double out[2]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  out[0] = tf_philox_u64_to_double(s[0], s[1]);
  out[1] = tf_philox_u64_to_double(s[2], s[3]);
}

void tf_philox_uniform_i32(tf_philox *g, int32_t lo, uint32_t range,
                           int32_t out[4]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  for (int i = 0; i < 4; i++) {
    out[i] = (int32_t)((uint32_t)lo + s[i] % range);
  }
}

void tf_philox_uniform_i64(tf_philox *g, int64_t lo, uint64_t range,
                           int64_t out[2]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  for (int i = 0; i < 2; i++) {
    uint64_t bits = (uint64_t)s[2 * i] | ((uint64_t)s[2 * i + 1] << 32);
    out[i] = (int64_t)((uint64_t)lo + bits % range);
  }
}

void tf_philox_normal_f32(tf_philox *g, float out[4]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  tf_philox_box_muller_f32(s[0], s[1], &out[0], &out[1]);
  tf_philox_box_muller_f32(s[2], s[3], &out[2], &out[3]);
}

void tf_philox_normal_f64(tf_philox *g, double out[2]) {
  uint32_t s[4];
  tf_philox_next(g, s);
  tf_philox_box_muller_f64(s[0], s[1], s[2], s[3], &out[0], &out[1]);
}

/* Rejection terminates with probability 1: each pair of candidates is
 * accepted with probability about 0.954. */
void tf_philox_truncated_normal_f32(tf_philox_single *s, float out[4]) {
  const float truncate = 2.0f;
  int n = 0;
  for (;;) {
    const uint32_t x0 = tf_philox_single_next(s);
    const uint32_t x1 = tf_philox_single_next(s);
    float f[2];
    tf_philox_box_muller_f32(x0, x1, &f[0], &f[1]);
    for (int i = 0; i < 2; i++) {
      if (fabsf(f[i]) < truncate) {
        out[n++] = f[i];
        if (n == 4) {
          return;
        }
      }
    }
  }
}

void tf_philox_truncated_normal_f64(tf_philox_single *s, double out[2]) {
  const double truncate = 2.0;
  int n = 0;
  for (;;) {
    const uint32_t x0 = tf_philox_single_next(s);
    const uint32_t x1 = tf_philox_single_next(s);
    const uint32_t x2 = tf_philox_single_next(s);
    const uint32_t x3 = tf_philox_single_next(s);
    double d[2];
    tf_philox_box_muller_f64(x0, x1, x2, x3, &d[0], &d[1]);
    for (int i = 0; i < 2; i++) {
      if (fabs(d[i]) < truncate) {
        out[n++] = d[i];
        if (n == 2) {
          return;
        }
      }
    }
  }
}
