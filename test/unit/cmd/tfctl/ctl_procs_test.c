/* ctl_procs_test.c: spawning with a log file and extra environment,
 * exec failures reported, pid files (round trip and malformed), liveness
 * (zombies are gone), stopping with a deadline (SIGTERM ignored ->
 * SIGKILL), log tails and mkdir -p. Uses /bin/sh as the child. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "test/unit/testutil.h"

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/tf-ctlprocs-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *buf = calloc(1, 4096);
  size_t n = fread(buf, 1, 4095, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

START_TEST(test_spawn_env_and_log) {
  char log[128];
  snprintf(log, sizeof log, "%s/x.log", dir);
  char *argv[] = {"sh", "-c", "echo out=$TF_X; echo err >&2; exit 3", NULL};
  const char *env[] = {"TF_X=42", NULL};
  tf_ctl_spawn_opts o = {.log_path = log, .env = env};
  tf_status st;
  tf_status_init(&st);
  pid_t pid = 0;
  ck_assert_int_eq(tf_ctl_spawn(argv, &o, &pid, &st), TF_OK);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
  char *text = slurp(log);
  ck_assert_str_eq(text, "out=42\nerr\n");
  free(text);
}
END_TEST

START_TEST(test_spawn_failures_named) {
  char *argv[] = {"/nonexistent/tfworker", NULL};
  tf_status st;
  tf_status_init(&st);
  pid_t pid = 0;
  ck_assert_int_eq(tf_ctl_spawn(argv, NULL, &pid, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "/nonexistent/tfworker"));
  ck_assert_ptr_nonnull(strstr(st.msg, "No such file"));
  char *argv2[] = {"sh", "-c", "true", NULL};
  tf_ctl_spawn_opts o = {.log_path = "/nonexistent/dir/x.log"};
  ck_assert_int_eq(tf_ctl_spawn(argv2, &o, &pid, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "/nonexistent/dir/x.log"));
}
END_TEST

START_TEST(test_pidfile) {
  char path[128], bad[128];
  snprintf(path, sizeof path, "%s/a.pid", dir);
  snprintf(bad, sizeof bad, "%s/bad.pid", dir);
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_pidfile_write(path, 12345, &st), TF_OK);
  ck_assert_int_eq(tf_pidfile_read(path), 12345);
  const char *bads[] = {"", "abc\n", "-5\n", "12x\n", "99999999999\n"};
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    FILE *f = fopen(bad, "w");
    fputs(bads[i], f);
    fclose(f);
    ck_assert_msg(tf_pidfile_read(bad) == 0, "'%s' read as a pid", bads[i]);
  }
  ck_assert_int_eq(tf_pidfile_read("/nonexistent.pid"), 0);
  ck_assert_int_eq(tf_pidfile_write("/nonexistent/dir/a.pid", 1, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "/nonexistent/dir/a.pid"));
}
END_TEST

START_TEST(test_alive_zombie_and_stop) {
  char *argv[] = {"sh", "-c", "exit 0", NULL};
  tf_status st;
  tf_status_init(&st);
  pid_t pid = 0;
  ck_assert_int_eq(tf_ctl_spawn(argv, NULL, &pid, &st), TF_OK);
  int64_t deadline = tf_ctl_now_ms() + 3000;
  while (tf_pid_alive(pid) && tf_ctl_now_ms() < deadline) {
    tf_ctl_sleep_ms(5);
  }
  ck_assert(!tf_pid_alive(pid)); /* a zombie until reaped */
  ck_assert_int_eq(tf_ctl_reap(pid), 0);
  ck_assert(tf_pid_alive(getpid()));
  ck_assert(tf_pid_runs(getpid(), "ctl_procs_test"));
  ck_assert(!tf_pid_runs(getpid(), "tfworker"));
  /* Ignores SIGTERM: SIGKILL after the grace period. */
  char *stubborn[] = {"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done", NULL};
  ck_assert_int_eq(tf_ctl_spawn(stubborn, NULL, &pid, &st), TF_OK);
  tf_ctl_sleep_ms(100);
  int64_t t0 = tf_ctl_now_ms();
  int status = tf_ctl_stop_pid(pid, SIGTERM, 300);
  int64_t took = tf_ctl_now_ms() - t0;
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ck_assert_msg(took >= 290 && took < 2500, "took %lld ms", (long long)took);
  char *quick[] = {"sh", "-c", "sleep 5", NULL};
  ck_assert_int_eq(tf_ctl_spawn(quick, NULL, &pid, &st), TF_OK);
  status = tf_ctl_stop_pid(pid, SIGTERM, 3000);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}
END_TEST

START_TEST(test_tail_and_mkdirs) {
  char path[128], deep[128];
  snprintf(path, sizeof path, "%s/t.log", dir);
  FILE *f = fopen(path, "w");
  for (int i = 1; i <= 30; i++) {
    fprintf(f, "line %d\n", i);
  }
  fclose(f);
  char *tail = tf_ctl_file_tail(path, 3, "> ");
  ck_assert_str_eq(tail, "> line 28\n> line 29\n> line 30\n");
  free(tail);
  tail = tf_ctl_file_tail("/nonexistent.log", 3, "> ");
  ck_assert_str_eq(tail, "");
  free(tail);
  snprintf(deep, sizeof deep, "%s/a/b/c", dir);
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_mkdirs(deep, &st), TF_OK);
  ck_assert_int_eq(tf_ctl_mkdirs(deep, &st), TF_OK);
  struct stat sb;
  ck_assert(stat(deep, &sb) == 0 && S_ISDIR(sb.st_mode));
  snprintf(deep, sizeof deep, "%s/t.log/sub", dir);
  ck_assert_int_eq(tf_ctl_mkdirs(deep, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "t.log/sub"));
  char *p = tf_ctl_find_program("no-such-program-here");
  ck_assert_str_eq(p, "no-such-program-here");
  free(p);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_procs");
  TCase *tc = tcase_create("ctl_procs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_spawn_env_and_log);
  tcase_add_test(tc, test_spawn_failures_named);
  tcase_add_test(tc, test_pidfile);
  tcase_add_test(tc, test_alive_zombie_and_stop);
  tcase_add_test(tc, test_tail_and_mkdirs);
  suite_add_tcase(s, tc);
  return s;
}
