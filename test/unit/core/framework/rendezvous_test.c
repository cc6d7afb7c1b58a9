/* rendezvous_test.c: rendezvous keys (lib/core/framework/rendezvous.h). A made key
 * has TF's exact text (incarnation as 16 lower-case hex digits, frame and
 * iteration in decimal) and parses back into the same parts, also for
 * random parts; every kind of malformed key is refused with
 * INVALID_ARGUMENT and a message naming the key and the bad part. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/rendezvous.h"
#include "test/unit/testutil.h"

#define DEV_A "/job:worker/replica:0/task:0/device:CPU:0"
#define DEV_B "/job:ps/replica:0/task:1/device:CPU:0"

START_TEST(test_make_exact_text) {
  char *k = tf_rdv_key_make(DEV_A, 0x1234abcdULL, DEV_B, "edge_3_add:0", 0, 0);
  ck_assert_str_eq(k, DEV_A ";000000001234abcd;" DEV_B ";edge_3_add:0;0:0");
  free(k);
  k = tf_rdv_key_make("a", UINT64_MAX, "b", "t", 12345678901234ULL, 7);
  ck_assert_str_eq(k, "a;ffffffffffffffff;b;t;12345678901234:7");
  free(k);
}
END_TEST

START_TEST(test_parse_round_trip) {
  char *k = tf_rdv_key_make(DEV_A, 0xfeedface00000001ULL, DEV_B, "x:1", 42, 3);
  tf_rdv_key p;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_key_parse(k, &p, &st), TF_OK);
  ck_assert_str_eq(p.src_device, DEV_A);
  ck_assert_uint_eq(p.src_incarnation, 0xfeedface00000001ULL);
  ck_assert_str_eq(p.dst_device, DEV_B);
  ck_assert_str_eq(p.tensor_name, "x:1");
  ck_assert_uint_eq(p.frame_id, 42);
  ck_assert_int_eq(p.iter, 3);
  tf_rdv_key_fini(&p);
  ck_assert_ptr_null(p.buf);
  tf_rdv_key_fini(&p); /* twice is harmless */
  free(k);
}
END_TEST

START_TEST(test_parse_random_round_trips) {
  tt_rng_reseed(tt_seed() ^ 0x5eed);
  for (int i = 0; i < 200; i++) {
    char src[32], dst[32], name[32];
    snprintf(src, sizeof src, "/job:j/task:%d/device:CPU:0", (int)(tt_rand_u64() % 100));
    snprintf(dst, sizeof dst, "/job:k/task:%d/device:CPU:%d", (int)(tt_rand_u64() % 100),
             (int)(tt_rand_u64() % 4));
    snprintf(name, sizeof name, "n%d:%d", (int)(tt_rand_u64() % 1000), i % 3);
    uint64_t inc = tt_rand_u64(), frame = tt_rand_u64();
    int64_t iter = (int64_t)(tt_rand_u64() >> 1);
    char *k = tf_rdv_key_make(src, inc, dst, name, frame, iter);
    tf_rdv_key p;
    tf_status st;
    tf_status_init(&st);
    ck_assert_msg(tf_rdv_key_parse(k, &p, &st) == TF_OK, "%s: %s", k, st.msg);
    ck_assert_str_eq(p.src_device, src);
    ck_assert_str_eq(p.dst_device, dst);
    ck_assert_str_eq(p.tensor_name, name);
    ck_assert_uint_eq(p.src_incarnation, inc);
    ck_assert_uint_eq(p.frame_id, frame);
    ck_assert_int_eq(p.iter, iter);
    char *again = tf_rdv_key_make(p.src_device, p.src_incarnation, p.dst_device,
                                  p.tensor_name, p.frame_id, p.iter);
    ck_assert_str_eq(again, k);
    free(again);
    tf_rdv_key_fini(&p);
    free(k);
  }
}
END_TEST

/* Each malformed key must fail with INVALID_ARGUMENT; the message names
 * the key and contains `what`. */
static const struct {
  const char *key, *what;
} bad_keys[] = {
    {"", "expected 5 ';'-separated parts"},
    {"a;0000000000000001;b;t", "got 4"},
    {"a;0000000000000001;b;t;0:0;extra", "got 6"},
    {";0000000000000001;b;t;0:0", "bad source device"},
    {"a;;b;t;0:0", "bad incarnation"},
    {"a;00000000000000001;b;t;0:0", "bad incarnation"},  /* 17 digits */
    {"a;00000000000000zz;b;t;0:0", "bad incarnation"},
    {"a;0x00000000000001;b;t;0:0", "bad incarnation"},
    {"a;-000000000000001;b;t;0:0", "bad incarnation"},
    {"a;0000000000000001;;t;0:0", "bad destination device"},
    {"a;0000000000000001;b;;0:0", "bad tensor name"},
    {"a;0000000000000001;b;t;0", "bad frame:iteration"},
    {"a;0000000000000001;b;t;:0", "bad frame:iteration"},
    {"a;0000000000000001;b;t;0:", "bad frame:iteration"},
    {"a;0000000000000001;b;t;x:0", "bad frame:iteration"},
    {"a;0000000000000001;b;t;0:-1", "bad frame:iteration"},
    {"a;0000000000000001;b;t;0:1:2", "bad frame:iteration"},
    {"a;0000000000000001;b;t;0:9223372036854775808", "bad frame:iteration"},
    {"a;0000000000000001;b;t;99999999999999999999:0", "bad frame:iteration"},
};

START_TEST(test_parse_malformed) {
  for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
    tf_rdv_key p;
    tf_status st;
    tf_status_init(&st);
    tf_code rc = tf_rdv_key_parse(bad_keys[i].key, &p, &st);
    ck_assert_msg(rc == TF_INVALID_ARGUMENT, "key '%s' gave %d", bad_keys[i].key, rc);
    ck_assert_ptr_null(p.buf);
    char quoted[128];
    snprintf(quoted, sizeof quoted, "'%s'", bad_keys[i].key);
    ck_assert_msg(strstr(st.msg, quoted) != NULL, "key %s: %s", quoted, st.msg);
    ck_assert_msg(strstr(st.msg, bad_keys[i].what) != NULL, "key %s: '%s' lacks '%s'",
                  quoted, st.msg, bad_keys[i].what);
  }
}
END_TEST

START_TEST(test_parse_accepts_edges) {
  /* Short and upper-case incarnations, the largest iteration. */
  tf_rdv_key p;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_key_parse("a;FF;b;t;0:9223372036854775807", &p, &st), TF_OK);
  ck_assert_uint_eq(p.src_incarnation, 255);
  ck_assert_int_eq(p.iter, INT64_MAX);
  tf_rdv_key_fini(&p);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rendezvous");
  TCase *tc = tcase_create("keys");
  tcase_add_test(tc, test_make_exact_text);
  tcase_add_test(tc, test_parse_round_trip);
  tcase_add_test(tc, test_parse_random_round_trips);
  tcase_add_test(tc, test_parse_malformed);
  tcase_add_test(tc, test_parse_accepts_edges);
  suite_add_tcase(s, tc);
  return s;
}
