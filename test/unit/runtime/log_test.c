/* log_test.c: tf_log writes "<prio>name: message\n" to stderr in one
 * write (fd 2 is redirected to a temporary file here), drops messages
 * above the level, parses level names, and truncates long messages and
 * names without overflowing its line buffer. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/runtime/log.h"
#include "test/unit/testutil.h"

/* Captures what fd 2 receives between cap_begin and cap_end. */
typedef struct capture {
  int saved;
  int fd;
  char path[64];
} capture;

static void cap_begin(capture *c) {
  snprintf(c->path, sizeof c->path, "/tmp/tf_log_test_XXXXXX");
  c->fd = mkstemp(c->path);
  ck_assert_int_ge(c->fd, 0);
  unlink(c->path);
  c->saved = dup(STDERR_FILENO);
  ck_assert_int_ge(c->saved, 0);
  ck_assert_int_ge(dup2(c->fd, STDERR_FILENO), 0);
}

/* Restores fd 2; returns what was written (malloc'd, NUL-terminated). */
static char *cap_end(capture *c, size_t *len) {
  dup2(c->saved, STDERR_FILENO);
  close(c->saved);
  off_t n = lseek(c->fd, 0, SEEK_END);
  ck_assert_int_ge(n, 0);
  char *buf = calloc((size_t)n + 1, 1);
  ck_assert_int_eq(pread(c->fd, buf, (size_t)n, 0), n);
  close(c->fd);
  if (len != NULL) *len = (size_t)n;
  return buf;
}

static void setup(void) {
  tf_log_set_name("tfworker /job:worker/task:1");
  tf_log_set_level(LOG_INFO);
}

START_TEST(line_format) {
  capture c;
  cap_begin(&c);
  tf_log(LOG_ERR, "step %d failed: %s", 42, "boom");
  tf_log(LOG_INFO, "registered graph %016x", 3);
  size_t len = 0;
  char *out = cap_end(&c, &len);
  ck_assert_str_eq(out, "<3>tfworker /job:worker/task:1: step 42 failed: boom\n"
                        "<6>tfworker /job:worker/task:1: registered graph 0000000000000003\n");
  free(out);
  /* A NULL name falls back to "tf"; an empty message still ends the line. */
  tf_log_set_name(NULL);
  cap_begin(&c);
  tf_log(LOG_WARNING, "%s", "");
  out = cap_end(&c, NULL);
  ck_assert_str_eq(out, "<4>tf: \n");
  free(out);
}
END_TEST

START_TEST(level_filtering) {
  ck_assert_int_eq(tf_log_level(), LOG_INFO);
  capture c;
  cap_begin(&c);
  tf_log(LOG_DEBUG, "hidden debug");
  tf_log(LOG_INFO, "shown info");
  tf_log_set_level(LOG_WARNING);
  tf_log(LOG_NOTICE, "hidden notice");
  tf_log(LOG_INFO, "hidden info");
  tf_log(LOG_WARNING, "shown warning");
  tf_log(LOG_ERR, "shown error");
  tf_log_set_level(LOG_DEBUG);
  tf_log(LOG_DEBUG, "shown debug");
  tf_log_set_level(LOG_ERR);
  tf_log(LOG_WARNING, "hidden warning");
  tf_log(LOG_CRIT, "shown crit");
  char *out = cap_end(&c, NULL);
  ck_assert_ptr_null(strstr(out, "hidden"));
  const char *want[] = {"<6>", "shown info", "<4>", "shown warning", "<3>", "shown error",
                        "<7>", "shown debug", "<2>", "shown crit"};
  const char *p = out;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const char *q = strstr(p, want[i]);
    ck_assert_msg(q != NULL, "'%s' missing (in order) from:\n%s", want[i], out);
    p = q + strlen(want[i]);
  }
  int lines = 0;
  for (const char *s = out; *s; s++) lines += *s == '\n';
  ck_assert_int_eq(lines, 5);
  ck_assert_int_eq(tf_log_level(), LOG_ERR);
  free(out);
}
END_TEST

START_TEST(parse_level_names) {
  ck_assert_int_eq(tf_log_parse_level("err"), LOG_ERR);
  ck_assert_int_eq(tf_log_parse_level("error"), LOG_ERR);
  ck_assert_int_eq(tf_log_parse_level("warning"), LOG_WARNING);
  ck_assert_int_eq(tf_log_parse_level("warn"), LOG_WARNING);
  ck_assert_int_eq(tf_log_parse_level("notice"), LOG_NOTICE);
  ck_assert_int_eq(tf_log_parse_level("info"), LOG_INFO);
  ck_assert_int_eq(tf_log_parse_level("debug"), LOG_DEBUG);
  ck_assert_int_eq(tf_log_parse_level("verbose"), -1);
  ck_assert_int_eq(tf_log_parse_level("INFO"), -1); /* names are lower case */
  ck_assert_int_eq(tf_log_parse_level("info "), -1);
  ck_assert_int_eq(tf_log_parse_level(""), -1);
  ck_assert_int_eq(tf_log_parse_level(NULL), -1);
}
END_TEST

START_TEST(long_message_truncated) {
  size_t big = 10000;
  char *msg = malloc(big + 1);
  for (size_t i = 0; i < big; i++) msg[i] = (char)('a' + i % 26);
  msg[big] = '\0';
  capture c;
  cap_begin(&c);
  tf_log(LOG_ERR, "%s", msg);
  tf_log(LOG_ERR, "after");
  size_t len = 0;
  char *out = cap_end(&c, &len);
  /* One line, cut short, still ending in a newline, then the next one. */
  const char *prefix = "<3>tfworker /job:worker/task:1: ";
  ck_assert_int_eq(strncmp(out, prefix, strlen(prefix)), 0);
  char *nl = strchr(out, '\n');
  ck_assert_ptr_nonnull(nl);
  size_t first = (size_t)(nl - out) + 1;
  ck_assert_uint_le(first, 2048);
  ck_assert_uint_gt(first, 1024);
  ck_assert_uint_eq(strlen(out), len); /* no NUL bytes written */
  size_t body = first - 1 - strlen(prefix);
  ck_assert_int_eq(memcmp(out + strlen(prefix), msg, body), 0);
  ck_assert_str_eq(nl + 1, "<3>tfworker /job:worker/task:1: after\n");
  free(out);
  /* A name longer than its buffer is cut, never overflowing. */
  char name[400];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  tf_log_set_name(name);
  cap_begin(&c);
  tf_log(LOG_ERR, "%s", msg);
  out = cap_end(&c, &len);
  ck_assert_uint_le(len, 2048);
  ck_assert_int_eq(out[len - 1], '\n');
  ck_assert_int_eq(strncmp(out, "<3>nnn", 6), 0);
  char *colon = strstr(out, ": ");
  ck_assert_ptr_nonnull(colon);
  ck_assert_uint_lt((size_t)(colon - out), 3 + 128);
  free(out);
  free(msg);
}
END_TEST

/* With timestamps: "YYYY-MM-DDTHH:MM:SS.mmmZ " (UTC, now) before the
 * priority; journald is recognised only by stderr's own device:inode. */
START_TEST(timestamps_and_journal) {
  tf_log_set_name("tfmaster /job:master/task:0");
  tf_log_set_timestamps(1);
  time_t before = time(NULL);
  capture c;
  cap_begin(&c);
  tf_log(LOG_NOTICE, "ready");
  char *out = cap_end(&c, NULL);
  tf_log_set_timestamps(0);
  ck_assert_str_eq(out + 25, "<5>tfmaster /job:master/task:0: ready\n");
  struct tm tm = {0};
  char *end = strptime(out, "%Y-%m-%dT%H:%M:%S", &tm);
  ck_assert_ptr_nonnull(end);
  ck_assert_msg(end[0] == '.' && end[4] == 'Z' && end[5] == ' ', "%s", out);
  time_t t = timegm(&tm);
  ck_assert_int_le(labs((long)(t - before)), 2);
  free(out);
  struct stat sb;
  ck_assert_int_eq(fstat(STDERR_FILENO, &sb), 0);
  char js[64];
  snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)sb.st_dev,
           (unsigned long long)sb.st_ino);
  setenv("JOURNAL_STREAM", js, 1);
  ck_assert_int_eq(tf_log_stderr_is_journal(), 1);
  snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)sb.st_dev,
           (unsigned long long)sb.st_ino + 1);
  setenv("JOURNAL_STREAM", js, 1);
  ck_assert_int_eq(tf_log_stderr_is_journal(), 0);
  setenv("JOURNAL_STREAM", "garbage", 1);
  ck_assert_int_eq(tf_log_stderr_is_journal(), 0);
  unsetenv("JOURNAL_STREAM");
  ck_assert_int_eq(tf_log_stderr_is_journal(), 0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("log");
  TCase *tc = tcase_create("log");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, line_format);
  tcase_add_test(tc, level_filtering);
  tcase_add_test(tc, parse_level_names);
  tcase_add_test(tc, long_message_truncated);
  tcase_add_test(tc, timestamps_and_journal);
  suite_add_tcase(s, tc);
  return s;
}
