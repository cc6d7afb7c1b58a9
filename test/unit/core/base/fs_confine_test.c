/* fs_confine_test.c: the file-access policy on a temporary tree
 * <tmp>/data (read-only root), <tmp>/ckpt (read-write root) and
 * <tmp>/outside with a file "secret": reads and writes inside succeed; an
 * absolute path outside, a '..' escape, symbolic links to the secret (by
 * absolute and by relative target) and writes under the read-only root are
 * refused with PERMISSION_DENIED naming the path and the allowed
 * directories, and the secret keeps its bytes and mtime; mkdir, unlink and
 * rename act only inside a writable root; no policy is unconfined. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

static char g_tmp[256];
static char g_secret[320];

static char *at(const char *rel) { return tf__xasprintf("%s/%s", g_tmp, rel); }

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void setup(void) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/fs_confine_test.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_tmp));
  const char *dirs[] = {"data", "ckpt", "outside", "data/sub"};
  for (size_t i = 0; i < TF_ARRAY_LEN(dirs); i++) {
    char *p = at(dirs[i]);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
  }
  snprintf(g_secret, sizeof g_secret, "%s/outside/secret", g_tmp);
  write_text(g_secret, "do not touch\n");
  char *f = at("data/sub/train.rec");
  write_text(f, "records\n");
  free(f);
  char *l1 = at("data/abs_link"), *l2 = at("data/rel_link"), *l3 = at("data/in_link");
  ck_assert_int_eq(symlink(g_secret, l1), 0);
  ck_assert_int_eq(symlink("../outside/secret", l2), 0);
  ck_assert_int_eq(symlink("sub/train.rec", l3), 0);
  free(l1);
  free(l2);
  free(l3);
  tf_fs_policy *p = tf__fs_policy_new("no directories are allowed");
  tf_status st;
  char *d = at("data"), *c = at("ckpt");
  ck_assert_int_eq(tf__fs_policy_add(p, d, "data_dirs", false, &st), TF_OK);
  ck_assert_int_eq(tf__fs_policy_add(p, c, "checkpoint_dir", true, &st), TF_OK);
  free(d);
  free(c);
  tf__fs_policy_install(p);
}

static void teardown(void) {
  tf__fs_policy_install(NULL);
  char *cmd = tf__xasprintf("rm -rf '%s'", g_tmp);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
}

/* The secret still holds its bytes and its mtime. */
static void assert_secret_untouched(const struct stat *before) {
  struct stat now;
  ck_assert_int_eq(stat(g_secret, &now), 0);
  ck_assert_int_eq(now.st_size, before->st_size);
  ck_assert_int_eq(now.st_mtim.tv_sec, before->st_mtim.tv_sec);
  ck_assert_int_eq(now.st_mtim.tv_nsec, before->st_mtim.tv_nsec);
  char buf[64] = {0};
  FILE *f = fopen(g_secret, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_gt(fread(buf, 1, sizeof buf - 1, f), 0);
  fclose(f);
  ck_assert_str_eq(buf, "do not touch\n");
}

/* fd < 0 with a recorded refusal whose message holds each of the needles. */
static void assert_denied(int fd, const char *n1, const char *n2) {
  ck_assert_int_lt(fd, 0);
  ck_assert_int_eq(errno, EACCES);
  tf_status st;
  tf_status_init(&st);
  ck_assert(tf__fs_take_denial(&st));
  ck_assert_int_eq(st.code, TF_PERMISSION_DENIED);
  ck_assert_msg(strstr(st.msg, n1) != NULL, "'%s' lacks '%s'", st.msg, n1);
  ck_assert_msg(n2 == NULL || strstr(st.msg, n2) != NULL, "'%s' lacks '%s'", st.msg, n2);
  ck_assert(!tf__fs_take_denial(&st)); /* taken once */
}

START_TEST(test_inside_reads_and_writes) {
  char *f = at("data/sub/train.rec"), *g = at("data/./sub//../sub/train.rec");
  int fd = tf__fs_open(f, O_RDONLY, 0);
  ck_assert_int_ge(fd, 0);
  char buf[16] = {0};
  ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 8);
  ck_assert_str_eq(buf, "records\n");
  close(fd);
  fd = tf__fs_open(g, O_RDONLY, 0);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char *w = at("ckpt/model.tmp");
  fd = tf__fs_open(w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "x", 1), 1);
  close(fd);
  struct stat sb;
  ck_assert_int_eq(tf__fs_stat(w, &sb), 0);
  ck_assert_int_eq(sb.st_size, 1);
  /* a missing file inside is the plain OS error, not a refusal */
  char *m = at("data/missing");
  tf_status st;
  ck_assert_int_lt(tf__fs_open(m, O_RDONLY, 0), 0);
  ck_assert_int_eq(errno, ENOENT);
  ck_assert(!tf__fs_take_denial(&st));
  free(f);
  free(g);
  free(w);
  free(m);
}
END_TEST

START_TEST(test_outside_and_dotdot_refused) {
  struct stat before;
  ck_assert_int_eq(stat(g_secret, &before), 0);
  assert_denied(tf__fs_open("/etc/passwd", O_RDONLY, 0), "'/etc/passwd' is outside the "
                "directories this cluster allows", "data_dirs: ");
  assert_denied(tf__fs_open(g_secret, O_WRONLY | O_TRUNC, 0), g_secret, "checkpoint_dir: ");
  char *esc = at("data/../outside/secret"), *esc2 = at("ckpt/../../etc/passwd");
  assert_denied(tf__fs_open(esc, O_WRONLY | O_CREAT | O_TRUNC, 0644), esc, "is outside");
  assert_denied(tf__fs_open(esc2, O_RDONLY, 0), esc2, "is outside");
  /* a relative path is taken against the working directory */
  assert_denied(tf__fs_open("passwd", O_RDONLY, 0), "'passwd' is outside", NULL);
  assert_secret_untouched(&before);
  free(esc);
  free(esc2);
}
END_TEST

START_TEST(test_symlink_escape_refused) {
  struct stat before;
  ck_assert_int_eq(stat(g_secret, &before), 0);
  char *l1 = at("data/abs_link"), *l2 = at("data/rel_link"), *l3 = at("data/in_link");
  assert_denied(tf__fs_open(l1, O_RDONLY, 0), l1, "symbolic link");
  assert_denied(tf__fs_open(l2, O_RDONLY, 0), l2, "symbolic link");
  struct stat sb;
  assert_denied(tf__fs_stat(l1, &sb), l1, "leads outside");
  /* lstat of the link itself is inside */
  ck_assert_int_eq(tf__fs_lstat(l1, &sb), 0);
  ck_assert(S_ISLNK(sb.st_mode));
  /* a link whose target stays inside the root works */
  int fd = tf__fs_open(l3, O_RDONLY, 0);
  ck_assert_int_ge(fd, 0);
  close(fd);
  /* a link in the writable root to the secret: no write through it */
  char *l4 = at("ckpt/evil");
  ck_assert_int_eq(symlink(g_secret, l4), 0);
  assert_denied(tf__fs_open(l4, O_WRONLY | O_CREAT | O_TRUNC, 0644), l4, "leads outside");
  assert_secret_untouched(&before);
  free(l1);
  free(l2);
  free(l3);
  free(l4);
}
END_TEST

START_TEST(test_read_only_root) {
  char *w = at("data/new.rec"), *t = at("data/sub/train.rec");
  assert_denied(tf__fs_open(w, O_WRONLY | O_CREAT, 0644), "read-only directory", "data_dirs");
  assert_denied(tf__fs_open(t, O_RDWR, 0), "read-only", NULL);
  assert_denied(tf__fs_mkdir(w, 0755), "read-only", NULL);
  assert_denied(tf__fs_unlink(t), "read-only", NULL);
  struct stat sb;
  ck_assert_int_ne(stat(w, &sb), 0);
  ck_assert_int_eq(stat(t, &sb), 0);
  ck_assert_int_eq(sb.st_size, 8);
  free(w);
  free(t);
}
END_TEST

START_TEST(test_mkdir_rename_unlink) {
  char *d = at("ckpt/step-1"), *f = at("ckpt/step-1/a.tmp"), *g = at("ckpt/step-1/a");
  ck_assert_int_eq(tf__fs_mkdir(d, 0755), 0);
  ck_assert_int_lt(tf__fs_mkdir(d, 0755), 0);
  ck_assert_int_eq(errno, EEXIST);
  int fd = tf__fs_open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(tf__fs_rename(f, g), 0);
  struct stat sb;
  ck_assert_int_eq(stat(g, &sb), 0);
  DIR *dir = tf__fs_opendir(d);
  ck_assert_ptr_nonnull(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    n += e->d_name[0] != '.';
  }
  closedir(dir);
  ck_assert_int_eq(n, 1);
  /* rename out of the root, into the read-only root, over the secret */
  struct stat before;
  ck_assert_int_eq(stat(g_secret, &before), 0);
  char *ro = at("data/a");
  assert_denied(tf__fs_rename(g, g_secret), "is outside", NULL);
  assert_denied(tf__fs_rename(g, ro), "read-only", NULL);
  assert_denied(tf__fs_unlink(g_secret), "is outside", NULL);
  char *up = at("ckpt/../outside/x");
  assert_denied(tf__fs_mkdir(up, 0755), "is outside", NULL);
  char *root = at("ckpt");
  assert_denied(tf__fs_unlink(root), "itself", NULL);
  ck_assert_int_lt(tf__fs_mkdir(root, 0755), 0); /* mkdir -p passes the root */
  ck_assert_int_eq(errno, EEXIST);
  char *sub = at("ckpt/sub"), *in = at("ckpt/sub/f");
  ck_assert_int_eq(tf__fs_mkdir(sub, 0755), 0);
  int fd2 = tf__fs_open(in, O_WRONLY | O_CREAT, 0644);
  ck_assert_int_ge(fd2, 0);
  close(fd2);
  ck_assert_int_lt(tf__fs_rmdir(sub), 0);
  ck_assert_int_eq(errno, ENOTEMPTY);
  ck_assert_int_eq(tf__fs_unlink(in), 0);
  ck_assert_int_eq(tf__fs_rmdir(sub), 0);
  free(sub);
  free(in);
  assert_denied(tf__fs_opendir("/etc") == NULL ? -1 : 0, "'/etc' is outside", NULL);
  assert_secret_untouched(&before);
  ck_assert_int_eq(tf__fs_unlink(g), 0);
  ck_assert_int_ne(stat(g, &sb), 0);
  free(d);
  free(f);
  free(g);
  free(ro);
  free(up);
  free(root);
}
END_TEST

START_TEST(test_check_ahead) {
  tf_status st;
  char *in = at("data/sub/x"), *ck = at("ckpt/run1");
  ck_assert_int_eq(tf__fs_check(in, false, "input", &st), TF_OK);
  ck_assert_int_eq(tf__fs_check(ck, true, "checkpoint.dir", &st), TF_OK);
  ck_assert_int_eq(tf__fs_check(in, true, "checkpoint.dir", &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, "checkpoint.dir: '"));
  ck_assert_int_eq(tf__fs_check("/etc/passwd", false, NULL, &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, "'/etc/passwd' is outside"));
  free(in);
  free(ck);
}
END_TEST

START_TEST(test_empty_policy_and_unconfined) {
  tf__fs_policy_install(tf__fs_policy_new("the cluster spec sets neither data_dirs nor "
                                          "checkpoint_dir"));
  char *f = at("data/sub/train.rec");
  assert_denied(tf__fs_open(f, O_RDONLY, 0), "neither data_dirs nor checkpoint_dir", NULL);
  ck_assert(tf__fs_confined());
  tf__fs_policy_install(NULL);
  ck_assert(!tf__fs_confined());
  int fd = tf__fs_open(g_secret, O_RDONLY, 0);
  ck_assert_int_ge(fd, 0);
  close(fd);
  /* a root that is not a directory is refused when the policy is built */
  tf_fs_policy *p = tf__fs_policy_new("none");
  tf_status st;
  ck_assert_int_eq(tf__fs_policy_add(p, g_secret, "data_dirs", false, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, g_secret));
  ck_assert_int_eq(tf__fs_policy_add(p, "rel/dir", "data_dirs", false, &st),
                   TF_INVALID_ARGUMENT);
  tf__fs_policy_free(p);
  free(f);
}
END_TEST

/* Without openat2 (forced): the component walk reads and writes inside,
 * refuses every symbolic link (also one that stays inside) and what the
 * lexical check refuses; the secret stays untouched. */
START_TEST(test_walk_without_openat2) {
  tf__fs_force_walk(true);
  struct stat before;
  ck_assert_int_eq(stat(g_secret, &before), 0);
  char *f = at("data/sub/train.rec"), *w = at("ckpt/d/x"), *d = at("ckpt/d"), *y = at("ckpt/d/y");
  int fd = tf__fs_open(f, O_RDONLY, 0);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(tf__fs_mkdir(d, 0755), 0);
  fd = tf__fs_open(w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(tf__fs_rename(w, y), 0);
  DIR *dir = tf__fs_opendir(d);
  ck_assert_ptr_nonnull(dir);
  closedir(dir);
  struct stat sb;
  ck_assert_int_eq(tf__fs_stat(y, &sb), 0);
  ck_assert(S_ISREG(sb.st_mode));
  char *l1 = at("data/abs_link"), *l2 = at("data/rel_link"), *l3 = at("data/in_link");
  char *l4 = at("ckpt/evil"), *esc = at("data/../outside/secret");
  ck_assert_int_eq(symlink(g_secret, l4), 0);
  assert_denied(tf__fs_open(l1, O_RDONLY, 0), "is not followed", "openat2");
  assert_denied(tf__fs_open(l2, O_RDONLY, 0), "is not followed", NULL);
  assert_denied(tf__fs_open(l3, O_RDONLY, 0), "is not followed", NULL);
  assert_denied(tf__fs_stat(l1, &sb), "is not followed", NULL);
  assert_denied(tf__fs_open(l4, O_WRONLY | O_CREAT | O_TRUNC, 0644), "is not followed", NULL);
  assert_denied(tf__fs_open(esc, O_RDONLY, 0), "is outside", NULL);
  ck_assert_int_eq(tf__fs_lstat(l1, &sb), 0); /* the link itself */
  ck_assert(S_ISLNK(sb.st_mode));
  /* a link as a directory on the way */
  char *l5 = at("data/dirlink"), *via = at("data/dirlink/passwd");
  ck_assert_int_eq(symlink("/etc", l5), 0);
  assert_denied(tf__fs_open(via, O_RDONLY, 0), "is not followed", NULL);
  assert_secret_untouched(&before);
  tf__fs_force_walk(false);
  char *ptrs[] = {f, w, d, y, l1, l2, l3, l4, esc, l5, via};
  for (size_t i = 0; i < TF_ARRAY_LEN(ptrs); i++) free(ptrs[i]);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("fs_confine");
  TCase *tc = tcase_create("fs_confine");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_inside_reads_and_writes);
  tcase_add_test(tc, test_outside_and_dotdot_refused);
  tcase_add_test(tc, test_symlink_escape_refused);
  tcase_add_test(tc, test_read_only_root);
  tcase_add_test(tc, test_mkdir_rename_unlink);
  tcase_add_test(tc, test_check_ahead);
  tcase_add_test(tc, test_empty_policy_and_unconfined);
  tcase_add_test(tc, test_walk_without_openat2);
  suite_add_tcase(s, tc);
  return s;
}
