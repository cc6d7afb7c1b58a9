/* cluster_spec_resolve_test.c: host names resolved together within a
 * deadline: numeric forms made canonical (IPv6 shortened, IPv4-mapped
 * written as IPv4), localhost from /etc/hosts, a reserved name that does
 * not resolve, repeats resolved once, more names than helper threads, and
 * a zero deadline that returns at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/cluster_spec_resolve.h"
#include "test/unit/testutil.h"

static bool has(char *const *list, const char *want) {
  for (int i = 0; list != NULL && list[i] != NULL; i++) {
    if (strcmp(list[i], want) == 0) {
      return true;
    }
  }
  return false;
}

START_TEST(test_numeric) {
  char buf[64];
  ck_assert(tf__resolve_numeric("127.0.0.1", buf, sizeof buf));
  ck_assert_str_eq(buf, "127.0.0.1");
  ck_assert(tf__resolve_numeric("0:0::1", buf, sizeof buf));
  ck_assert_str_eq(buf, "::1");
  ck_assert(tf__resolve_numeric("::ffff:10.1.2.3", buf, sizeof buf));
  ck_assert_str_eq(buf, "10.1.2.3");
  ck_assert(tf__resolve_numeric("FE80:0000::0001", buf, sizeof buf));
  ck_assert_str_eq(buf, "fe80::1");
  ck_assert(!tf__resolve_numeric("localhost", buf, sizeof buf));
  ck_assert(!tf__resolve_numeric("[::1]", buf, sizeof buf));
  ck_assert(!tf__resolve_numeric("1.2.3", buf, sizeof buf));
}
END_TEST

START_TEST(test_names) {
  const char *names[] = {"localhost", "nosuch.invalid", "localhost", "::ffff:127.0.0.9"};
  char **out[4];
  tf__resolve_names(names, 4, 5000, out);
  ck_assert_msg(has(out[0], "127.0.0.1"), "localhost did not resolve to 127.0.0.1");
  ck_assert(out[1] == NULL); /* RFC 6761: .invalid never resolves */
  ck_assert(has(out[2], "127.0.0.1"));
  ck_assert(out[2] != out[0]); /* each list is the caller's own */
  ck_assert(has(out[3], "127.0.0.9") && out[3][1] == NULL);
  for (int i = 0; i < 4; i++) {
    tf__resolve_free(out[i]);
  }
  tf__resolve_names(names, 0, 1000, out); /* nothing to do */
  tf__resolve_free(NULL);
}
END_TEST

/* 40 names, more than the helper threads: every one resolved. */
START_TEST(test_many) {
  char text[40][32];
  const char *names[40];
  char **out[40];
  for (int i = 0; i < 40; i++) {
    snprintf(text[i], sizeof text[i], "10.%d.0.%d", i / 8, i);
    names[i] = text[i];
  }
  tf__resolve_names(names, 40, 10000, out);
  for (int i = 0; i < 40; i++) {
    ck_assert_msg(has(out[i], text[i]) && out[i][1] == NULL, "%s", text[i]);
    tf__resolve_free(out[i]);
  }
}
END_TEST

/* A deadline of 0 does not wait: whatever is done is returned, correct. */
START_TEST(test_zero_deadline) {
  const char *names[] = {"localhost", "nosuch.invalid", "127.0.0.2"};
  char **out[3];
  int64_t t0 = tf__now_ns();
  tf__resolve_names(names, 3, 0, out);
  double ms = (double)(tf__now_ns() - t0) / 1e6;
  ck_assert_msg(ms < 200, "took %.1f ms", ms);
  ck_assert(out[0] == NULL || has(out[0], "127.0.0.1"));
  ck_assert(out[1] == NULL);
  ck_assert(out[2] == NULL || has(out[2], "127.0.0.2"));
  for (int i = 0; i < 3; i++) {
    tf__resolve_free(out[i]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_spec_resolve");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_numeric);
  tcase_add_test(tc, test_names);
  tcase_add_test(tc, test_many);
  tcase_add_test(tc, test_zero_deadline);
  suite_add_tcase(s, tc);
  return s;
}
