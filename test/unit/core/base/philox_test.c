/* philox_test.c: the Philox4x32-10 block function against Random123's
 * published known-answer vectors, counter arithmetic (skip and carries), and
 * TF's conversions and distributions against formulas written out plainly
 * here (exact where TF is exact, else a stated tolerance). */
#include <math.h>
#include <string.h>

#include "lib/core/base/philox.h"
#include "test/unit/testutil.h"

/* Random123 kat_vectors, philox4x32 with 10 rounds: ctr, key, expected. */
static const struct {
  uint32_t ctr[4], key[2], want[4];
} kat[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

START_TEST(test_known_answers) {
  for (size_t k = 0; k < sizeof(kat) / sizeof(kat[0]); k++) {
    uint32_t out[4];
    tf_philox_block(kat[k].ctr, kat[k].key, out);
    for (int i = 0; i < 4; i++) {
      ck_assert_msg(out[i] == kat[k].want[i], "vector %zu word %d: %08x != %08x",
                    k, i, out[i], kat[k].want[i]);
    }
  }
}
END_TEST

START_TEST(test_init_layout_and_next) {
  tf_philox g;
  tf_philox_init(&g, 0xa4093822299f31d0ull ^ 0, 0);
  /* seed -> key (low word first), seed2 -> counter words 2 and 3. */
  ck_assert_uint_eq(g.key[0], 0x299f31d0u);
  ck_assert_uint_eq(g.key[1], 0xa4093822u);
  tf_philox_init(&g, 7, 0x0370734413198a2eull);
  ck_assert_uint_eq(g.counter[0], 0);
  ck_assert_uint_eq(g.counter[1], 0);
  ck_assert_uint_eq(g.counter[2], 0x13198a2eu);
  ck_assert_uint_eq(g.counter[3], 0x03707344u);
  /* next() = block(counter), then counter + 1 with carries. */
  g.key[0] = 0xffffffff;
  g.key[1] = 0xffffffff;
  for (int i = 0; i < 4; i++) {
    g.counter[i] = 0xffffffff;
  }
  uint32_t out[4];
  tf_philox_next(&g, out);
  ck_assert_uint_eq(out[0], 0x408f276du);
  ck_assert_uint_eq(out[3], 0x6d5451fdu);
  for (int i = 0; i < 4; i++) {
    ck_assert_uint_eq(g.counter[i], 0); /* wrapped all four words */
  }
}
END_TEST

/* skip(n) lands on the same counter as n calls of next(), and a block at a
 * skipped position equals the block function at that counter. */
START_TEST(test_skip) {
  tf_philox a, b;
  tf_philox_init(&a, 42, 99);
  b = a;
  uint32_t x[4], y[4];
  for (int i = 0; i < 37; i++) {
    tf_philox_next(&a, x);
  }
  tf_philox_skip(&b, 37);
  ck_assert_mem_eq(a.counter, b.counter, sizeof(a.counter));
  tf_philox_next(&a, x);
  tf_philox_next(&b, y);
  ck_assert_mem_eq(x, y, sizeof(x));

  /* Carries: low word into word 1, words 0-1 into word 2. */
  tf_philox c = {.counter = {0xfffffffe, 5, 0, 0}};
  tf_philox_skip(&c, 3);
  ck_assert_uint_eq(c.counter[0], 1);
  ck_assert_uint_eq(c.counter[1], 6);
  tf_philox_skip(&c, (3ull << 32) | 2);
  ck_assert_uint_eq(c.counter[0], 3);
  ck_assert_uint_eq(c.counter[1], 9);
  tf_philox d = {.counter = {0, 0xffffffff, 0xffffffff, 4}};
  tf_philox_skip(&d, 1ull << 32);
  ck_assert_uint_eq(d.counter[1], 0);
  ck_assert_uint_eq(d.counter[2], 0);
  ck_assert_uint_eq(d.counter[3], 5);
}
END_TEST

/* The vectorised batch equals TF_PHILOX_BATCH next() calls, also when the
 * counter carries out of its low 64 bits inside the batch. */
START_TEST(test_batch) {
  static const uint32_t starts[3][4] = {
      {0, 0, 7, 9},
      {0xfffffff8u, 0xffffffffu, 0xffffffffu, 3},
      {0xfffffffau, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  for (int k = 0; k < 3; k++) {
    tf_philox a = {.key = {(uint32_t)tt_rand_u64(), (uint32_t)tt_rand_u64()}};
    memcpy(a.counter, starts[k], sizeof(a.counter));
    tf_philox b = a;
    uint32_t w[4][TF_PHILOX_BATCH];
    tf_philox_next_batch(&a, w);
    for (int i = 0; i < TF_PHILOX_BATCH; i++) {
      uint32_t x[4];
      tf_philox_next(&b, x);
      for (int j = 0; j < 4; j++) {
        ck_assert_msg(w[j][i] == x[j], "start %d block %d word %d", k, i, j);
      }
    }
    ck_assert_mem_eq(a.counter, b.counter, sizeof(a.counter));
  }
}
END_TEST

START_TEST(test_single_adapter) {
  tf_philox g, h;
  tf_philox_init(&g, 3, 4);
  h = g;
  tf_philox_single s;
  tf_philox_single_init(&s, &g);
  for (int blk = 0; blk < 3; blk++) {
    uint32_t want[4];
    tf_philox_next(&h, want);
    for (int i = 0; i < 4; i++) {
      ck_assert_uint_eq(tf_philox_single_next(&s), want[i]);
    }
  }
}
END_TEST

START_TEST(test_conversions) {
  /* 23 mantissa bits of x (upper bits ignored) scaled by 2^-23. */
  ck_assert(tf_philox_u32_to_float(0) == 0.0f);
  ck_assert(tf_philox_u32_to_float(0xff800000u) == 0.0f);
  ck_assert(tf_philox_u32_to_float(0x7fffffu) == 1.0f - 0x1p-23f);
  ck_assert(tf_philox_u64_to_double(0, 0) == 0.0);
  ck_assert(tf_philox_u64_to_double(0xfff00000u, 0) == 0.0);
  ck_assert(tf_philox_u64_to_double(0xfffffu, 0xffffffffu) == 1.0 - 0x1p-52);
  for (int k = 0; k < 1000; k++) {
    uint32_t x = (uint32_t)tt_rand_u64(), y = (uint32_t)tt_rand_u64();
    ck_assert(tf_philox_u32_to_float(x) == (float)(x & 0x7fffff) * 0x1p-23f);
    double want = ((double)(x & 0xfffff) * 4294967296.0 + y) * 0x1p-52;
    ck_assert(tf_philox_u64_to_double(x, y) == want);
  }
}
END_TEST

/* Box-Muller recomputed in double from the raw words: float results within
 * 2e-6 * (1 + |z|) (float rounding of log/sqrt/sincos), double within 1e-12
 * relative. */
START_TEST(test_box_muller) {
  for (int k = 0; k < 2000; k++) {
    uint32_t w[4];
    for (int i = 0; i < 4; i++) {
      w[i] = (uint32_t)tt_rand_u64();
    }
    if (k == 0) {
      w[0] = 0; /* u1 = 0 is clamped to 1e-7 */
    }
    double u1 = fmax((w[0] & 0x7fffff) * 0x1p-23, 1e-7);
    double th = 2 * M_PI * ((w[1] & 0x7fffff) * 0x1p-23);
    double r = sqrt(-2 * log(u1));
    float f0, f1;
    tf_philox_box_muller_f32(w[0], w[1], &f0, &f1);
    ck_assert_msg(fabs(f0 - r * sin(th)) <= 2e-6 * (1 + r), "k %d", k);
    ck_assert_msg(fabs(f1 - r * cos(th)) <= 2e-6 * (1 + r), "k %d", k);

    double v1 = fmax(((double)(w[0] & 0xfffff) * 4294967296.0 + w[1]) * 0x1p-52,
                     1e-7);
    double v2 = ((double)(w[2] & 0xfffff) * 4294967296.0 + w[3]) * 0x1p-52;
    double rr = sqrt(-2 * log(v1));
    double d0, d1;
    tf_philox_box_muller_f64(w[0], w[1], w[2], w[3], &d0, &d1);
    ck_assert(fabs(d0 - rr * sin(2 * M_PI * v2)) <= 1e-12 * (1 + rr));
    ck_assert(fabs(d1 - rr * cos(2 * M_PI * v2)) <= 1e-12 * (1 + rr));
  }
}
END_TEST

/* Groups: which words feed which value, checked exactly. */
START_TEST(test_groups) {
  tf_philox g, h;
  tf_philox_init(&g, 11, 12);
  h = g;
  uint32_t w[4];
  float f[4];
  tf_philox_next(&h, w);
  tf_philox_uniform_f32(&g, f);
  for (int i = 0; i < 4; i++) {
    ck_assert(f[i] == tf_philox_u32_to_float(w[i]));
  }
  double d[2];
  tf_philox_next(&h, w);
  tf_philox_uniform_f64(&g, d);
  ck_assert(d[0] == tf_philox_u64_to_double(w[0], w[1]));
  ck_assert(d[1] == tf_philox_u64_to_double(w[2], w[3]));
  int32_t i32[4];
  tf_philox_next(&h, w);
  tf_philox_uniform_i32(&g, -5, 7, i32);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(i32[i], -5 + (int32_t)(w[i] % 7));
  }
  int64_t i64[2];
  tf_philox_next(&h, w);
  tf_philox_uniform_i64(&g, INT64_MIN, UINT64_MAX, i64);
  uint64_t bits = w[0] | ((uint64_t)w[1] << 32);
  ck_assert(i64[0] == (int64_t)((uint64_t)INT64_MIN + bits % UINT64_MAX));
  float n[4];
  float b0, b1;
  tf_philox_next(&h, w);
  tf_philox_normal_f32(&g, n);
  tf_philox_box_muller_f32(w[2], w[3], &b0, &b1);
  ck_assert(n[2] == b0 && n[3] == b1);
}
END_TEST

/* Truncated normal: the accepted Box-Muller values, in order, from
 * consecutive single words; a reference filter written here. */
START_TEST(test_truncated) {
  for (int rep = 0; rep < 200; rep++) {
    tf_philox g, h;
    tf_philox_init(&g, tt_rand_u64(), tt_rand_u64());
    h = g;
    tf_philox_single s, t;
    tf_philox_single_init(&s, &g);
    tf_philox_single_init(&t, &h);
    float got[4], want[4];
    tf_philox_truncated_normal_f32(&s, got);
    int n = 0;
    while (n < 4) {
      uint32_t x0 = tf_philox_single_next(&t), x1 = tf_philox_single_next(&t);
      float f[2];
      tf_philox_box_muller_f32(x0, x1, &f[0], &f[1]);
      for (int i = 0; i < 2 && n < 4; i++) {
        if (fabsf(f[i]) < 2.0f) {
          want[n++] = f[i];
        }
      }
    }
    ck_assert_mem_eq(got, want, sizeof(got));
    for (int i = 0; i < 4; i++) {
      ck_assert(fabsf(got[i]) < 2.0f);
    }
    double gd[2];
    tf_philox_truncated_normal_f64(&s, gd);
    ck_assert(fabs(gd[0]) < 2.0 && fabs(gd[1]) < 2.0);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("philox");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_known_answers);
  tcase_add_test(tc, test_init_layout_and_next);
  tcase_add_test(tc, test_skip);
  tcase_add_test(tc, test_batch);
  tcase_add_test(tc, test_single_adapter);
  tcase_add_test(tc, test_conversions);
  tcase_add_test(tc, test_box_muller);
  tcase_add_test(tc, test_groups);
  tcase_add_test(tc, test_truncated);
  suite_add_tcase(s, tc);
  return s;
}
