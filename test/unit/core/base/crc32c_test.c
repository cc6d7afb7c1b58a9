/* crc32c_test.c: CRC-32C against published vectors (the "123456789" check
 * value, RFC 3720 B.4's iSCSI vectors), TensorFlow's masking (values
 * computed by an independent bit-by-bit Python reference), extension over
 * splits, and the SSE4.2 and table implementations agreeing with a
 * bitwise reference on random data of every length and alignment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/crc32c.h"
#include "test/unit/testutil.h"

/* Bit-by-bit reference, independent of the tables and the instruction. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

START_TEST(test_known_vectors) {
  ck_assert_uint_eq(tf_crc32c("123456789", 9), 0xe3069283u);
  ck_assert_uint_eq(tf_crc32c(NULL, 0), 0);
  ck_assert_uint_eq(tf_crc32c("a", 1), 0xc1d04330u);
  uint8_t buf[32];
  memset(buf, 0, sizeof buf);
  ck_assert_uint_eq(tf_crc32c(buf, 32), 0x8a9136aau);
  memset(buf, 0xff, sizeof buf);
  ck_assert_uint_eq(tf_crc32c(buf, 32), 0x62a8ab43u);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  ck_assert_uint_eq(tf_crc32c(buf, 32), 0x46dd794eu);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
  ck_assert_uint_eq(tf_crc32c(buf, 32), 0x113fdb5cu);
  static const uint8_t iscsi[48] = {
      0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
      0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
  ck_assert_uint_eq(tf_crc32c(iscsi, 48), 0xd9963a56u);
}
END_TEST

START_TEST(test_mask) {
  uint32_t foo = tf_crc32c("foo", 3);
  ck_assert_uint_eq(foo, 0xcfc4ae1du);
  ck_assert_uint_eq(tf_crc32c_mask(foo), 0xfebe8a61u);
  ck_assert_uint_ne(tf_crc32c_mask(foo), foo);
  ck_assert_uint_ne(tf_crc32c_mask(tf_crc32c_mask(foo)), foo);
  ck_assert_uint_eq(tf_crc32c_unmask(tf_crc32c_mask(foo)), foo);
  ck_assert_uint_eq(tf_crc32c_unmask(tf_crc32c_unmask(
                        tf_crc32c_mask(tf_crc32c_mask(foo)))), foo);
  /* TFRecord framing values: masked CRCs of the 8-byte length and data */
  uint8_t len0[8] = {0}, len5[8] = {5};
  ck_assert_uint_eq(tf_crc32c_mask(tf_crc32c(len0, 8)), 0x07980329u);
  ck_assert_uint_eq(tf_crc32c_mask(tf_crc32c(NULL, 0)), 0xa282ead8u);
  ck_assert_uint_eq(tf_crc32c_mask(tf_crc32c(len5, 8)), 0x3e04b2eau);
  ck_assert_uint_eq(tf_crc32c_mask(tf_crc32c("hello", 5)), 0x191c1fbbu);
  for (int i = 0; i < 1000; i++) {
    uint32_t v = (uint32_t)tt_rand_u64();
    ck_assert_uint_eq(tf_crc32c_unmask(tf_crc32c_mask(v)), v);
  }
}
END_TEST

START_TEST(test_extend) {
  const char *s = "hello world, this is a CRC-32C extension test";
  size_t n = strlen(s);
  uint32_t whole = tf_crc32c(s, n);
  for (size_t k = 0; k <= n; k++) {
    ck_assert_uint_eq(tf_crc32c_extend(tf_crc32c(s, k), s + k, n - k), whole);
  }
  ck_assert_uint_eq(tf_crc32c_extend(whole, s, 0), whole);
}
END_TEST

/* Hardware and table agree with the bitwise reference on random data of
 * every length 0..300 at every alignment 0..7, and on 1 MiB. */
START_TEST(test_hw_table_agree) {
  enum { BIG = 1 << 20 };
  uint8_t *buf = malloc(BIG + 8);
  for (size_t i = 0; i < BIG + 8; i++) buf[i] = (uint8_t)tt_rand_u64();
  bool hw = tf__crc32c_have_hw();
  if (!hw) fprintf(stderr, "crc32c_test: no SSE4.2 here; checking the table only\n");
  for (size_t off = 0; off < 8; off++) {
    for (size_t len = 0; len <= 300; len++) {
      uint32_t want = crc_bitwise(buf + off, len);
      ck_assert_uint_eq(tf__crc32c_extend_table(0, buf + off, len), want);
      if (hw) ck_assert_uint_eq(tf__crc32c_extend_hw(0, buf + off, len), want);
      ck_assert_uint_eq(tf_crc32c(buf + off, len), want);
    }
  }
  uint32_t want = crc_bitwise(buf + 3, BIG);
  ck_assert_uint_eq(tf__crc32c_extend_table(0, buf + 3, BIG), want);
  if (hw) ck_assert_uint_eq(tf__crc32c_extend_hw(0, buf + 3, BIG), want);
  /* a single flipped bit changes the value */
  buf[1000] ^= 0x10;
  ck_assert_uint_ne(tf_crc32c(buf + 3, BIG), want);
  free(buf);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("crc32c");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_known_vectors);
  tcase_add_test(tc, test_mask);
  tcase_add_test(tc, test_extend);
  tcase_add_test(tc, test_hw_table_agree);
  suite_add_tcase(s, tc);
  return s;
}
