/* util_test.c: TF_ASSERT / TF_PANIC abort with file and line, the
 * assertion macro is statement-safe, the x* allocators, TF_TRY and the
 * small macros, and the monotonic clock. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

static int evaluations;

/* The abort tests expect a panic line on stderr; keep it out of the log. */
static void quiet_stderr(void) {
  FILE *f = freopen("/dev/null", "w", stderr);
  ck_assert_ptr_nonnull(f);
}

static int count_eval(int v) {
  evaluations++;
  return v;
}

START_TEST(test_assert_true_is_silent) {
  evaluations = 0;
  TF_ASSERT(count_eval(1) == 1);
  TF_ASSERT(count_eval(7));
  ck_assert_int_eq(evaluations, 2); /* each expression evaluated once */
}
END_TEST

START_TEST(test_assert_false_aborts) {
  int x = 2;
  quiet_stderr();
  TF_ASSERT(x == 3);
  ck_abort_msg("TF_ASSERT(false) returned");
}
END_TEST

START_TEST(test_panic_aborts) {
  quiet_stderr();
  TF_PANIC("unreachable state %d", 42);
}
END_TEST

START_TEST(test_assert_in_if_else) {
  /* The macro must behave as one statement inside an unbraced if/else. */
  int taken = 0;
  int a = 1;
  if (a) TF_ASSERT(a == 1); else taken = 1;
  ck_assert_int_eq(taken, 0);
  a = 0;
  if (a) TF_ASSERT(a == 1); else taken = 2;
  ck_assert_int_eq(taken, 2);
  /* And as the body of a loop without braces. */
  for (int i = 0; i < 3; i++) TF_ASSERT(i < 3);
}
END_TEST

START_TEST(test_assert_in_if_else_aborts) {
  int a = 1, taken = 0;
  quiet_stderr();
  if (a) TF_ASSERT(a == 2); else taken = 1;
  ck_abort_msg("TF_ASSERT(false) in an if branch returned (taken %d)", taken);
}
END_TEST

/* Runs TF_ASSERT(1 + 1 == 3) in a child whose stderr goes to a pipe and
 * returns what it printed; *sig gets the signal that ended it. */
static void capture_panic(char *out, size_t size, int *sig, int *line) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  *line = __LINE__ + 6;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    TF_ASSERT(1 + 1 == 3);
    _exit(0);
  }
  close(fds[1]);
  size_t off = 0;
  ssize_t r;
  while (off + 1 < size && (r = read(fds[0], out + off, size - 1 - off)) > 0) {
    off += (size_t)r;
  }
  out[off] = '\0';
  close(fds[0]);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

START_TEST(test_assert_message_names_expr_file_line) {
  char out[1024], want[64];
  int sig, line;
  capture_panic(out, sizeof out, &sig, &line);
  ck_assert_int_eq(sig, SIGABRT);
  ck_assert_msg(strstr(out, "assertion `1 + 1 == 3' failed") != NULL, "got: %s", out);
  snprintf(want, sizeof want, "util_test.c:%d", line);
  ck_assert_msg(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
}
END_TEST

START_TEST(test_xmalloc_family) {
  char *p = tf__xmalloc(0);
  ck_assert_ptr_nonnull(p);
  free(p);
  int *z = tf__xcalloc(1000, sizeof *z);
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += z[i] != 0;
  ck_assert_int_eq(bad, 0);
  for (int i = 0; i < 1000; i++) z[i] = i;
  z = tf__xrealloc(z, 4000 * sizeof *z);
  for (int i = 0; i < 1000; i++) bad += z[i] != i;
  ck_assert_int_eq(bad, 0);
  z[3999] = 1;
  free(z);
  void *e = tf__xcalloc(0, 0);
  ck_assert_ptr_nonnull(e);
  e = tf__xrealloc(e, 0);
  ck_assert_ptr_nonnull(e);
  free(e);
}
END_TEST

START_TEST(test_xstrdup) {
  const char *src = "hello, world";
  char *d = tf__xstrdup(src);
  ck_assert_ptr_ne(d, src);
  ck_assert_str_eq(d, src);
  free(d);
  d = tf__xstrdup("");
  ck_assert_str_eq(d, "");
  free(d);
  d = tf__xstrndup(src, 5);
  ck_assert_str_eq(d, "hello");
  free(d);
  d = tf__xstrndup(src, 0);
  ck_assert_str_eq(d, "");
  free(d);
  /* n bytes are copied even past an embedded NUL; a NUL is appended. */
  const char raw[4] = {'a', '\0', 'b', 'c'};
  d = tf__xstrndup(raw, 4);
  ck_assert(memcmp(d, raw, 4) == 0 && d[4] == '\0');
  free(d);
}
END_TEST

START_TEST(test_xasprintf) {
  char *s = tf__xasprintf("%s-%d-%05.1f-%lld", "n", 7, 2.25, -9LL);
  ck_assert_str_eq(s, "n-7-002.2--9");
  free(s);
  s = tf__xasprintf("%s", "");
  ck_assert_str_eq(s, "");
  free(s);
  char big[20001];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  s = tf__xasprintf("<%s>", big);
  ck_assert_int_eq(strlen(s), 20002);
  ck_assert(s[0] == '<' && s[20001] == '>' && s[10000] == 'q');
  free(s);
}
END_TEST

#ifndef __SANITIZE_ADDRESS__
/* ASan reports a too-big malloc itself instead of returning NULL. */
START_TEST(test_xmalloc_oom_aborts) {
  quiet_stderr();
  void *p = tf__xmalloc(SIZE_MAX - 4096);
  ck_abort_msg("xmalloc of SIZE_MAX returned %p", p);
}
END_TEST
#endif

static int steps;

static tf_code step(tf_code c) {
  steps++;
  return c;
}

static tf_code try_sequence(tf_code first, tf_code second) {
  TF_TRY(step(first));
  TF_TRY(step(second));
  steps += 100;
  return TF_OK;
}

START_TEST(test_try) {
  steps = 0;
  ck_assert_int_eq(try_sequence(TF_OK, TF_OK), TF_OK);
  ck_assert_int_eq(steps, 102);
  steps = 0;
  ck_assert_int_eq(try_sequence(TF_NOT_FOUND, TF_OK), TF_NOT_FOUND);
  ck_assert_int_eq(steps, 1); /* stopped at the first failure */
  steps = 0;
  ck_assert_int_eq(try_sequence(TF_OK, TF_INTERNAL), TF_INTERNAL);
  ck_assert_int_eq(steps, 2);
}
END_TEST

START_TEST(test_small_macros) {
  int a[7];
  double b[3][5];
  ck_assert_int_eq(TF_ARRAY_LEN(a), 7);
  ck_assert_int_eq(TF_ARRAY_LEN(b), 3);
  ck_assert_int_eq(TF_MIN(3, -4), -4);
  ck_assert_int_eq(TF_MAX(3, -4), 3);
  ck_assert_int_eq(TF_MIN(5, 5), 5);
  ck_assert(TF_MAX(2.5, 2.25) == 2.5);
  ck_assert_int_eq(TF_MAX(1 + 1, 3) * 2, 6); /* fully parenthesised */
}
END_TEST

START_TEST(test_now_ns_monotonic) {
  int64_t t0 = tf__now_ns();
  ck_assert_int_gt(t0, 0);
  int64_t prev = t0;
  for (int i = 0; i < 1000; i++) {
    int64_t t = tf__now_ns();
    if (t < prev) ck_abort_msg("clock went back: %lld after %lld", (long long)t, (long long)prev);
    prev = t;
  }
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
  int64_t dt = tf__now_ns() - t0;
  ck_assert_msg(dt >= 3000000 && dt < 5000000000LL, "slept 3 ms, clock says %lld ns",
                (long long)dt);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("util");
  TCase *tc = tcase_create("util");
  tcase_add_test(tc, test_assert_true_is_silent);
  tcase_add_test_raise_signal(tc, test_assert_false_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_panic_aborts, SIGABRT);
  tcase_add_test(tc, test_assert_in_if_else);
  tcase_add_test_raise_signal(tc, test_assert_in_if_else_aborts, SIGABRT);
  tcase_add_test(tc, test_assert_message_names_expr_file_line);
  tcase_add_test(tc, test_xmalloc_family);
  tcase_add_test(tc, test_xstrdup);
  tcase_add_test(tc, test_xasprintf);
#ifndef __SANITIZE_ADDRESS__
  tcase_add_test_raise_signal(tc, test_xmalloc_oom_aborts, SIGABRT);
#endif
  tcase_add_test(tc, test_try);
  tcase_add_test(tc, test_small_macros);
  tcase_add_test(tc, test_now_ns_monotonic);
  suite_add_tcase(s, tc);
  return s;
}
