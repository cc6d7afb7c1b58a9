/* ckpt_fs_test.c: atomic replacement (ckpt_fs.h): a new file and a
 * replaced one hold exactly the bytes written, through the buffer and
 * past it; the crash hook sees temp-written, temp-synced, renamed and
 * dir-synced in that order with the final path; a writer SIGKILLed at each
 * point leaves the old bytes or the new ones (and at most a temporary
 * file that tf__afile_is_temp_name recognises); errors name the path and
 * leave no temporary file; mkdir of one level; short reads. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "test/unit/core/serialize/ckpt_testlib.h"

/* Entries of dir other than . and ..; temps counts the temporary ones. */
static int count_entries(const char *dir, int *temps) {
  DIR *d = opendir(dir);
  ck_assert(d != NULL);
  int n = 0;
  *temps = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    n++;
    *temps += tf__afile_is_temp_name(e->d_name) ? 1 : 0;
  }
  closedir(d);
  return n;
}

static void expect_file(const char *path, const void *data, size_t n) {
  size_t got;
  uint8_t *b = io_read(path, &got);
  ck_assert_uint_eq(got, n);
  ck_assert(n == 0 || memcmp(b, data, n) == 0);
  free(b);
}

START_TEST(test_write_and_replace) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "f");
  tf_status st;
  ck_assert(tf_fs_write_atomic(path, "hello", 5, &st) == TF_OK);
  expect_file(path, "hello", 5);
  size_t big = 3 * TF__AFILE_BUF + 123;
  uint8_t *b = malloc(big);
  for (size_t i = 0; i < big; i++) b[i] = (uint8_t)(i * 7 + (i >> 13));
  ck_assert_msg(tf_fs_write_atomic(path, b, big, &st) == TF_OK, "%s", st.msg);
  expect_file(path, b, big);
  /* Through the writer in pieces around the buffer's size. */
  tf__afile f;
  ck_assert(tf__afile_open(&f, path, &st) == TF_OK);
  size_t pieces[] = {1, TF__AFILE_BUF - 1, 5, TF__AFILE_BUF + 9, 0, 77};
  size_t off = 0;
  for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
    ck_assert(tf__afile_write(&f, b + off, pieces[i], &st) == TF_OK);
    off += pieces[i];
  }
  ck_assert_uint_eq(f.bytes, off);
  ck_assert(tf__afile_commit(&f, &st) == TF_OK);
  expect_file(path, b, off);
  ck_assert(tf_fs_write_atomic(path, "", 0, &st) == TF_OK);
  expect_file(path, "", 0);
  int temps;
  ck_assert_int_eq(count_entries(dir, &temps), 1);
  ck_assert_int_eq(temps, 0);
  free(b);
  io_tmpdir_remove(dir);
}
END_TEST

typedef struct trace {
  char points[8][32];
  char path[IO_PATH_MAX];
  int n;
  int kill_at; /* -1: never */
} trace;

static void hook(const char *point, const char *path, void *arg) {
  trace *t = arg;
  if (t->n == t->kill_at) raise(SIGKILL);
  if (t->n < 8) snprintf(t->points[t->n], sizeof t->points[0], "%s", point);
  snprintf(t->path, sizeof t->path, "%s", path);
  t->n++;
}

START_TEST(test_hook_points) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "f");
  trace t = {.kill_at = -1};
  tf_ckpt_set_crash_hook(hook, &t);
  ck_assert(tf_fs_write_atomic(path, "x", 1, NULL) == TF_OK);
  tf_ckpt_crash_point("mine", path);
  tf_ckpt_set_crash_hook(NULL, NULL);
  tf_ckpt_crash_point("ignored", path);
  ck_assert_int_eq(t.n, 5);
  const char *want[] = {"temp-written", "temp-synced", "renamed", "dir-synced", "mine"};
  for (int i = 0; i < 5; i++) ck_assert_str_eq(t.points[i], want[i]);
  ck_assert_str_eq(t.path, path);
  io_tmpdir_remove(dir);
}
END_TEST

/* SIGKILL at each of the 4 points of a replacement of "old" by "new". */
START_TEST(test_killed_writer_leaves_old_or_new) {
  for (int k = 0; k <= 4; k++) {
    char dir[IO_PATH_MAX], path[IO_PATH_MAX];
    io_tmpdir(dir, sizeof dir);
    io_path(path, dir, "f");
    ck_assert(tf_fs_write_atomic(path, "old", 3, NULL) == TF_OK);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      trace t = {.kill_at = k};
      tf_ckpt_set_crash_hook(hook, &t);
      _exit(tf_fs_write_atomic(path, "new!", 4, NULL) == TF_OK ? 0 : 3);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ck_assert_msg(killed == (k < 4), "k=%d status %d", k, status);
    ck_assert(killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    size_t n;
    uint8_t *b = io_read(path, &n);
    bool is_new = n == 4 && memcmp(b, "new!", 4) == 0;
    bool is_old = n == 3 && memcmp(b, "old", 3) == 0;
    ck_assert_msg(is_new == (k >= 2) && is_old == (k < 2), "k=%d", k);
    free(b);
    int temps;
    int entries = count_entries(dir, &temps);
    ck_assert_int_eq(temps, k < 2 ? 1 : 0); /* the garbage a cleaner removes */
    ck_assert_int_eq(entries, 1 + temps);
    io_tmpdir_remove(dir);
  }
}
END_TEST

START_TEST(test_errors_name_the_path) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf_status st;
  io_path(path, dir, "missing/f");
  ck_assert_int_eq(tf_fs_write_atomic(path, "x", 1, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, dir));
  io_path(path, dir, "d/");
  ck_assert_int_eq(tf_fs_write_atomic(path, "x", 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_fs_write_atomic("", "x", 1, &st), TF_INVALID_ARGUMENT);
  /* A directory where the file should go: the rename fails, no temp stays. */
  io_path(path, dir, "sub");
  ck_assert_int_eq(mkdir(path, 0755), 0);
  char inner[IO_PATH_MAX];
  io_path(inner, path, "x");
  io_write(inner, "x", 1);
  ck_assert(tf_fs_write_atomic(path, "x", 1, &st) != TF_OK);
  ck_assert_ptr_nonnull(strstr(st.msg, "sub"));
  int temps;
  ck_assert_int_eq(count_entries(dir, &temps), 1);
  ck_assert_int_eq(temps, 0);
  /* Read-only directory (root may write anyway: then it succeeds). */
  io_path(path, dir, "ro");
  ck_assert_int_eq(mkdir(path, 0555), 0);
  io_path(inner, path, "f");
  if (geteuid() != 0) {
    ck_assert_int_eq(tf_fs_write_atomic(inner, "x", 1, &st), TF_PERMISSION_DENIED);
    ck_assert_ptr_nonnull(strstr(st.msg, "ro/"));
  }
  chmod(path, 0755);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_mkdir_and_reads) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf_status st;
  io_path(path, dir, "d");
  ck_assert(tf__mkdir_one(path, 0755, &st) == TF_OK);
  ck_assert(tf__mkdir_one(path, 0755, &st) == TF_OK);
  struct stat sb;
  ck_assert(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
  ck_assert(tf__fsync_dir(path, &st) == TF_OK);
  io_path(path, dir, "file");
  io_write(path, "abcdef", 6);
  ck_assert_int_eq(tf__mkdir_one(path, 0755, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "file"));
  io_path(path, dir, "a/b");
  ck_assert_int_eq(tf__mkdir_one(path, 0755, &st), TF_NOT_FOUND);
  ck_assert_int_eq(tf__fsync_dir(path, &st), TF_NOT_FOUND);
  io_path(path, dir, "file");
  int fd = open(path, O_RDONLY);
  char b[8];
  ck_assert_int_eq(tf__pread_full(fd, b, 4, 2), 0);
  ck_assert(memcmp(b, "cdef", 4) == 0);
  ck_assert_int_eq(tf__pread_full(fd, b, 8, 0), 1);
  close(fd);
  ck_assert(tf__afile_is_temp_name(".ps-0.shard.tmp-12-ab"));
  ck_assert(!tf__afile_is_temp_name("ps-0.shard"));
  ck_assert(!tf__afile_is_temp_name(".hidden"));
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_fs");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_write_and_replace);
  tcase_add_test(tc, test_hook_points);
  tcase_add_test(tc, test_killed_writer_leaves_old_or_new);
  tcase_add_test(tc, test_errors_name_the_path);
  tcase_add_test(tc, test_mkdir_and_reads);
  suite_add_tcase(s, tc);
  return s;
}
