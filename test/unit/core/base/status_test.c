/* status_test.c: tf_status codes, names, formatting and prefixing,
 * including truncation of long messages at TF_STATUS_MSG_MAX. */
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"

/* TensorFlow's canonical codes (tensorflow/core/protobuf/error_codes.proto),
 * written out independently of TF_CODE_MAP. */
static const struct {
  const char *name;
  int num;
} tf_codes[] = {
    {"OK", 0},
    {"CANCELLED", 1},
    {"UNKNOWN", 2},
    {"INVALID_ARGUMENT", 3},
    {"DEADLINE_EXCEEDED", 4},
    {"NOT_FOUND", 5},
    {"ALREADY_EXISTS", 6},
    {"PERMISSION_DENIED", 7},
    {"RESOURCE_EXHAUSTED", 8},
    {"FAILED_PRECONDITION", 9},
    {"ABORTED", 10},
    {"OUT_OF_RANGE", 11},
    {"UNIMPLEMENTED", 12},
    {"INTERNAL", 13},
    {"UNAVAILABLE", 14},
    {"DATA_LOSS", 15},
    {"UNAUTHENTICATED", 16},
};
#define N_CODES ((int)(sizeof tf_codes / sizeof tf_codes[0]))

/* A status followed by a canary, to catch writes past msg. */
typedef struct {
  tf_status st;
  char canary[64];
} guarded_status;

static void guard_init(guarded_status *g) {
  memset(g, 'x', sizeof *g);
  tf_status_init(&g->st);
}

static void guard_check(const guarded_status *g) {
  for (size_t i = 0; i < sizeof g->canary; i++) {
    if (g->canary[i] != 'x') ck_abort_msg("write past tf_status.msg at +%zu", i);
  }
  ck_assert_msg(memchr(g->st.msg, '\0', TF_STATUS_MSG_MAX) != NULL,
                "msg is not NUL-terminated within TF_STATUS_MSG_MAX");
}

START_TEST(test_codes_match_tf_numbers) {
  ck_assert_int_eq(TF_CODE_COUNT, N_CODES);
  ck_assert_int_eq(TF_OK, 0);
  ck_assert_int_eq(TF_CANCELLED, 1);
  ck_assert_int_eq(TF_INVALID_ARGUMENT, 3);
  ck_assert_int_eq(TF_NOT_FOUND, 5);
  ck_assert_int_eq(TF_RESOURCE_EXHAUSTED, 8);
  ck_assert_int_eq(TF_FAILED_PRECONDITION, 9);
  ck_assert_int_eq(TF_OUT_OF_RANGE, 11);
  ck_assert_int_eq(TF_UNIMPLEMENTED, 12);
  ck_assert_int_eq(TF_INTERNAL, 13);
  ck_assert_int_eq(TF_DATA_LOSS, 15);
  ck_assert_int_eq(TF_UNAUTHENTICATED, 16);
  for (int i = 0; i < N_CODES; i++) {
    tf_code c;
    ck_assert_msg(tf_code_from_name(tf_codes[i].name, &c), "%s", tf_codes[i].name);
    ck_assert_msg((int)c == tf_codes[i].num, "%s is %d, TF says %d",
                  tf_codes[i].name, (int)c, tf_codes[i].num);
    ck_assert_str_eq(tf_code_name((tf_code)tf_codes[i].num), tf_codes[i].name);
  }
}
END_TEST

START_TEST(test_names_distinct_and_round_trip) {
  for (int c = 0; c < TF_CODE_COUNT; c++) {
    const char *name = tf_code_name((tf_code)c);
    ck_assert_ptr_nonnull(name);
    ck_assert_msg(name[0] != '\0', "code %d has an empty name", c);
    ck_assert_msg(strcmp(name, "UNKNOWN_CODE") != 0, "code %d has no name", c);
    for (int d = 0; d < c; d++) {
      ck_assert_msg(strcmp(name, tf_code_name((tf_code)d)) != 0,
                    "codes %d and %d share the name %s", d, c, name);
    }
    tf_code back = (tf_code)-7;
    ck_assert_msg(tf_code_from_name(name, &back), "%s does not parse", name);
    ck_assert_int_eq(back, c);
  }
}
END_TEST

START_TEST(test_unknown_codes_and_names) {
  ck_assert_str_eq(tf_code_name(TF_CODE_COUNT), "UNKNOWN_CODE");
  ck_assert_str_eq(tf_code_name((tf_code)-1), "UNKNOWN_CODE");
  ck_assert_str_eq(tf_code_name((tf_code)1000), "UNKNOWN_CODE");
  const char *bad[] = {"", "UNKNOWN_CODE", "ok", "Ok", "INVALID", "INVALID_ARGUMENTS",
                       " OK", "OK ", "NOT FOUND", "17"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_code c = TF_ABORTED;
    ck_assert_msg(!tf_code_from_name(bad[i], &c), "'%s' parsed", bad[i]);
    ck_assert_msg(c == TF_ABORTED, "'%s' wrote *out on failure", bad[i]);
  }
}
END_TEST

START_TEST(test_init_and_ok) {
  tf_status st;
  memset(&st, 0x5a, sizeof st);
  tf_status_init(&st);
  ck_assert_int_eq(st.code, TF_OK);
  ck_assert_str_eq(st.msg, "");
  ck_assert(tf_status_ok(&st));
  tf_status_set(&st, TF_INTERNAL, "x");
  ck_assert(!tf_status_ok(&st));
}
END_TEST

START_TEST(test_set_formats) {
  tf_status st;
  tf_status_init(&st);
  tf_code rc = tf_status_set(&st, TF_INVALID_ARGUMENT, "node %s: dim %d is %lld",
                             "conv1", 2, -5LL);
  ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node conv1: dim 2 is -5");
  /* A second set replaces code and message. */
  rc = tf_status_set(&st, TF_NOT_FOUND, "no op '%s'", "Foo");
  ck_assert_int_eq(rc, TF_NOT_FOUND);
  ck_assert_str_eq(st.msg, "no op 'Foo'");
  /* A literal percent and an empty message. */
  tf_status_set(&st, TF_ABORTED, "100%% done");
  ck_assert_str_eq(st.msg, "100% done");
  tf_status_set(&st, TF_ABORTED, "%s", "");
  ck_assert_str_eq(st.msg, "");
  ck_assert_int_eq(st.code, TF_ABORTED);
}
END_TEST

START_TEST(test_set_ok_clears_message) {
  tf_status st;
  tf_status_set(&st, TF_INTERNAL, "broken");
  ck_assert_int_eq(tf_status_set(&st, TF_OK, "ignored %d", 1), TF_OK);
  ck_assert_int_eq(st.code, TF_OK);
  ck_assert_str_eq(st.msg, "");
  tf_status_set(&st, TF_INTERNAL, "broken");
  ck_assert_int_eq(tf_status_set(&st, TF_UNKNOWN, NULL), TF_UNKNOWN);
  ck_assert_int_eq(st.code, TF_UNKNOWN);
  ck_assert_str_eq(st.msg, "");
}
END_TEST

START_TEST(test_set_null_status) {
  for (int c = 0; c < TF_CODE_COUNT; c++) {
    ck_assert_int_eq(tf_status_set(NULL, (tf_code)c, "code %d", c), c);
  }
  ck_assert_int_eq(tf_status_prefix(NULL, "ctx %d", 1), TF_OK);
}
END_TEST

START_TEST(test_set_truncates_long_message) {
  static char big[3 * TF_STATUS_MSG_MAX];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  big[TF_STATUS_MSG_MAX - 2] = 'Z'; /* the last byte that fits */
  guarded_status g;
  guard_init(&g);
  tf_status_set(&g.st, TF_DATA_LOSS, "%s", big);
  guard_check(&g);
  ck_assert_int_eq(strlen(g.st.msg), TF_STATUS_MSG_MAX - 1);
  ck_assert_int_eq(g.st.msg[TF_STATUS_MSG_MAX - 2], 'Z');
  ck_assert_int_eq(g.st.code, TF_DATA_LOSS);
}
END_TEST

START_TEST(test_prefix_basic) {
  tf_status st;
  tf_status_set(&st, TF_INVALID_ARGUMENT, "shape mismatch");
  ck_assert_int_eq(tf_status_prefix(&st, "node '%s'", "add_1"), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node 'add_1': shape mismatch");
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  /* Prefixes stack outermost first. */
  tf_status_prefix(&st, "graph %d", 3);
  ck_assert_str_eq(st.msg, "graph 3: node 'add_1': shape mismatch");
  /* An empty old message still gets the separator. */
  tf_status_set(&st, TF_INTERNAL, "%s", "");
  tf_status_prefix(&st, "where");
  ck_assert_str_eq(st.msg, "where: ");
  /* The prefix may quote the message itself. */
  tf_status_set(&st, TF_INTERNAL, "abc");
  tf_status_prefix(&st, "[%s]", st.msg);
  ck_assert_str_eq(st.msg, "[abc]: abc");
}
END_TEST

START_TEST(test_prefix_ok_is_noop) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_status_prefix(&st, "node %s", "x"), TF_OK);
  ck_assert_int_eq(st.code, TF_OK);
  ck_assert_str_eq(st.msg, "");
}
END_TEST

/* The full "<prefix>: <old>" cut to TF_STATUS_MSG_MAX - 1 bytes. */
static void check_prefix_lengths(size_t plen, size_t olen) {
  static char prefix[2 * TF_STATUS_MSG_MAX], old[2 * TF_STATUS_MSG_MAX];
  static char want[5 * TF_STATUS_MSG_MAX];
  for (size_t i = 0; i < plen; i++) prefix[i] = (char)('A' + i % 26);
  prefix[plen] = '\0';
  for (size_t i = 0; i < olen; i++) old[i] = (char)('a' + i % 26);
  old[olen] = '\0';
  guarded_status g;
  guard_init(&g);
  tf_status_set(&g.st, TF_OUT_OF_RANGE, "%s", old);
  ck_assert_int_eq(tf_status_prefix(&g.st, "%s", prefix), TF_OUT_OF_RANGE);
  guard_check(&g);
  /* tf_status_set itself keeps only MSG_MAX - 1 bytes of old. */
  size_t kept = olen < TF_STATUS_MSG_MAX - 1 ? olen : TF_STATUS_MSG_MAX - 1;
  snprintf(want, sizeof want, "%s: %.*s", prefix, (int)kept, old);
  want[TF_STATUS_MSG_MAX - 1] = '\0';
  ck_assert_msg(strcmp(g.st.msg, want) == 0,
                "prefix %zu + old %zu bytes: got %zu bytes, want %zu", plen, olen,
                strlen(g.st.msg), strlen(want));
  ck_assert_int_eq(g.st.code, TF_OUT_OF_RANGE);
}

START_TEST(test_prefix_truncation) {
  const size_t cap = TF_STATUS_MSG_MAX - 1;
  const size_t lens[] = {0, 1, 2, 10, cap - 3, cap - 2, cap - 1, cap, cap + 1,
                         cap + 5, 2 * cap};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
      check_prefix_lengths(lens[i], lens[j]);
    }
  }
  /* Every split of a message that just fits or just overflows. */
  for (size_t p = 0; p <= cap; p += 37) {
    check_prefix_lengths(p, cap - 2 - (p < cap - 2 ? p : cap - 2));
    check_prefix_lengths(p, cap - 1 - (p < cap - 1 ? p : cap - 1));
  }
}
END_TEST

START_TEST(test_prefix_repeated_stays_bounded) {
  guarded_status g;
  guard_init(&g);
  tf_status_set(&g.st, TF_UNAVAILABLE, "root cause");
  for (int i = 0; i < 500; i++) {
    tf_status_prefix(&g.st, "level %d", i);
    guard_check(&g);
  }
  ck_assert_int_eq(strlen(g.st.msg), TF_STATUS_MSG_MAX - 1);
  ck_assert(strncmp(g.st.msg, "level 499: level 498: ", 22) == 0);
  ck_assert_int_eq(g.st.code, TF_UNAVAILABLE);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("status");
  TCase *tc = tcase_create("status");
  tcase_add_test(tc, test_codes_match_tf_numbers);
  tcase_add_test(tc, test_names_distinct_and_round_trip);
  tcase_add_test(tc, test_unknown_codes_and_names);
  tcase_add_test(tc, test_init_and_ok);
  tcase_add_test(tc, test_set_formats);
  tcase_add_test(tc, test_set_ok_clears_message);
  tcase_add_test(tc, test_set_null_status);
  tcase_add_test(tc, test_set_truncates_long_message);
  tcase_add_test(tc, test_prefix_basic);
  tcase_add_test(tc, test_prefix_ok_is_noop);
  tcase_add_test(tc, test_prefix_truncation);
  tcase_add_test(tc, test_prefix_repeated_stays_bounded);
  suite_add_tcase(s, tc);
  return s;
}
