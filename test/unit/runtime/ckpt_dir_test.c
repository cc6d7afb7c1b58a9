/* ckpt_dir_test.c: the checkpoint directory (ckpt_dir.c). Commits write the
 * manifest and a TensorFlow-format pointer; keep-K leaves exactly K
 * ckpt-* directories (and removes nothing else); list and latest read
 * them back; verify catches a flipped bit in a shard and names that shard
 * and tensor; latest falls back past a damaged latest (and past a missing
 * one, and a damaged pointer) with a note naming what it skipped and why;
 * begin removes a crashed writer's leftovers, refuses to overwrite a good
 * checkpoint and replaces a bad one; commit refuses a missing shard, a
 * missing directory and fields the manifest cannot hold. Under a
 * file-access policy whose checkpoint_dir is a temporary directory, a
 * nested job directory is made and saved into (the ancestors outside are
 * passed by), while a directory outside it, a symbolic link out of it and
 * a '..' escape are refused with PERMISSION_DENIED and nothing is made. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/base/fs_confine.h"
#include "test/unit/runtime/ckpt_dir_testlib.h"

/* The names in dir, sorted, joined by spaces, into buf. */
static const char *listing(const char *dir, char *buf, size_t n) {
  struct dirent **ents;
  int k = scandir(dir, &ents, NULL, alphasort);
  ck_assert(k >= 0);
  buf[0] = '\0';
  size_t off = 0;
  for (int i = 0; i < k; i++) {
    if (ents[i]->d_name[0] != '.' || strlen(ents[i]->d_name) > 2) {
      off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " " : "", ents[i]->d_name);
    }
    free(ents[i]);
  }
  free(ents);
  return buf;
}

static char *read_text(const char *dir, const char *name) {
  char path[IO_PATH_MAX];
  size_t n;
  uint8_t *b = io_read(io_path(path, dir, name), &n);
  b[n] = '\0';
  return (char *)b;
}

START_TEST(test_commit_list_keep) {
  char dir[IO_PATH_MAX], buf[512];
  io_tmpdir(dir, sizeof dir);
  char other[IO_PATH_MAX];
  io_write(io_path(other, dir, "notes.txt"), "mine", 4);
  ck_assert_int_eq(mkdir(io_path(other, dir, "ckpt-x"), 0755), 0);
  for (int64_t s = 100; s <= 600; s += 100) cd_save(dir, s, 3);
  ck_assert_str_eq(listing(dir, buf, sizeof buf),
                   "checkpoint ckpt-400 ckpt-500 ckpt-600 ckpt-x notes.txt");
  char *ptr = read_text(dir, "checkpoint");
  ck_assert_str_eq(ptr, "model_checkpoint_path: \"ckpt-600\"\n"
                        "all_model_checkpoint_paths: \"ckpt-400\"\n"
                        "all_model_checkpoint_paths: \"ckpt-500\"\n"
                        "all_model_checkpoint_paths: \"ckpt-600\"\n");
  free(ptr);
  tf_ckpt_manifest *ms;
  int n;
  tf_status st;
  ck_assert(tf_ckpt_list(dir, &ms, &n, &st) == TF_OK);
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(ms[i].step, 400 + 100 * i);
    ck_assert_str_eq(ms[i].job, "mnist");
    ck_assert_str_eq(ms[i].mode, "sync");
    ck_assert_str_eq(ms[i].spec_hash, "0123456789abcdef");
    int64_t sum = 0;
    for (int k = 0; k < CD_SHARDS; k++) {
      char p[IO_PATH_MAX];
      struct stat sb;
      ck_assert(stat(io_path(p, ms[i].path, ms[i].shards[k].file), &sb) == 0);
      ck_assert_int_eq(ms[i].shards[k].bytes, sb.st_size);
      sum += sb.st_size;
    }
    char mp[IO_PATH_MAX];
    struct stat sb;
    ck_assert(stat(io_path(mp, ms[i].path, "manifest"), &sb) == 0);
    ck_assert_int_eq(tf_ckpt_bytes(&ms[i]), sum + sb.st_size);
  }
  tf_ckpt_list_free(ms, n);
  /* keep 1, then keep 0 (all). */
  cd_save(dir, 700, 1);
  ck_assert_str_eq(listing(dir, buf, sizeof buf), "checkpoint ckpt-700 ckpt-x notes.txt");
  cd_save(dir, 800, 0);
  cd_save(dir, 900, 0);
  ck_assert_str_eq(listing(dir, buf, sizeof buf),
                   "checkpoint ckpt-700 ckpt-800 ckpt-900 ckpt-x notes.txt");
  tf_ckpt_manifest m;
  char *note = (char *)1;
  ck_assert(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK);
  ck_assert_ptr_null(note);
  ck_assert_int_eq(m.step, 900);
  cd_expect_whole(&m);
  tf_ckpt_manifest_fini(&m);
  io_tmpdir_remove(dir);
}
END_TEST

/* Truncating after step 200 of 100..400: the later directories go, the
 * pointer names the rest with 200 the latest; a save of 300 then commits
 * anew (begin no longer finds the old one). Truncating before every step
 * removes the pointer. */
START_TEST(test_truncate) {
  char dir[IO_PATH_MAX], buf[512];
  io_tmpdir(dir, sizeof dir);
  for (int64_t s = 100; s <= 400; s += 100) cd_save(dir, s, 0);
  int removed = -1;
  tf_status st;
  ck_assert_msg(tf_ckpt_truncate(dir, 200, &removed, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(removed, 2);
  ck_assert_str_eq(listing(dir, buf, sizeof buf), "checkpoint ckpt-100 ckpt-200");
  char *ptr = read_text(dir, "checkpoint");
  ck_assert_str_eq(ptr, "model_checkpoint_path: \"ckpt-200\"\n"
                        "all_model_checkpoint_paths: \"ckpt-100\"\n"
                        "all_model_checkpoint_paths: \"ckpt-200\"\n");
  free(ptr);
  cd_save(dir, 300, 0);
  tf_ckpt_manifest m;
  char *note = NULL;
  ck_assert(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK);
  ck_assert_int_eq(m.step, 300);
  tf_ckpt_manifest_fini(&m);
  free(note);
  ck_assert(tf_ckpt_truncate(dir, 50, &removed, &st) == TF_OK);
  ck_assert_int_eq(removed, 3);
  ck_assert_str_eq(listing(dir, buf, sizeof buf), "");
  ck_assert_int_eq(tf_ckpt_latest(dir, &m, &note, &st), TF_NOT_FOUND);
  io_tmpdir_remove(dir);
}
END_TEST

/* Flips bit `bit` of byte off of file path. */
static void flip(const char *path, size_t off, int bit) {
  size_t n;
  uint8_t *b = io_read(path, &n);
  ck_assert(off < n);
  b[off] ^= (uint8_t)(1u << bit);
  io_write(path, b, n);
  free(b);
}

START_TEST(test_damaged_shard_and_fallback) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  for (int64_t s = 1; s <= 3; s++) cd_save(dir, s, 5);
  char ck3[IO_PATH_MAX];
  io_path(ck3, dir, "ckpt-3");
  tf_status st;
  ck_assert(tf_ckpt_verify(ck3, NULL, &st) == TF_OK);
  /* A bit in ps-1's first tensor's data (the header is 16 bytes). */
  flip(io_path(path, ck3, "ps-1.shard"), 16 + 9, 3);
  tf_ckpt_manifest m;
  ck_assert_int_eq(tf_ckpt_verify(ck3, &m, &st), TF_DATA_LOSS);
  ck_assert_ptr_null(m.job);
  ck_assert_msg(strstr(st.msg, "ps-1.shard") && strstr(st.msg, "'1/a'"), "%s", st.msg);
  char *note = NULL;
  ck_assert(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK);
  ck_assert_int_eq(m.step, 2);
  cd_expect_whole(&m);
  tf_ckpt_manifest_fini(&m);
  ck_assert_ptr_nonnull(note);
  ck_assert_msg(strstr(note, "skipped ckpt-3") && strstr(note, "DATA_LOSS") &&
                    strstr(note, "ps-1.shard"), "%s", note);
  free(note);
  /* ckpt-2's manifest gone too (a damaged manifest is tested in
   * ckpt_manifest_test): latest goes back to ckpt-1 and names both. */
  char mp[IO_PATH_MAX];
  io_path(path, dir, "ckpt-2");
  ck_assert_int_eq(unlink(io_path(mp, path, "manifest")), 0);
  ck_assert(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK);
  ck_assert_int_eq(m.step, 1);
  ck_assert_msg(strstr(note, "skipped ckpt-3") && strstr(note, "skipped ckpt-2 (NOT_FOUND"),
                "%s", note);
  tf_ckpt_manifest_fini(&m);
  free(note);
  /* A damaged pointer: every directory with a manifest is considered. */
  io_write(io_path(path, dir, "checkpoint"), "garbage\n", 8);
  ck_assert(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK);
  ck_assert_int_eq(m.step, 1);
  ck_assert_msg(strstr(note, "pointer file is damaged") && strstr(note, "skipped ckpt-3"), "%s",
                note);
  tf_ckpt_manifest_fini(&m);
  free(note);
  /* Nothing verifies: DATA_LOSS naming the latest's problem. */
  io_path(path, dir, "ckpt-1");
  flip(io_path(mp, path, "worker-0.shard"), 20, 0);
  ck_assert_int_eq(tf_ckpt_latest(dir, &m, &note, &st), TF_DATA_LOSS);
  ck_assert_msg(strstr(st.msg, "ckpt-3") && strstr(st.msg, "ps-1.shard"), "%s", st.msg);
  free(note);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_latest_and_list_when_empty) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf_ckpt_manifest m, *ms;
  int n;
  tf_status st;
  char *note;
  ck_assert_int_eq(tf_ckpt_latest(dir, &m, &note, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, dir));
  ck_assert(tf_ckpt_list(dir, &ms, &n, &st) == TF_OK && n == 0);
  tf_ckpt_list_free(ms, n);
  io_path(path, dir, "nope");
  ck_assert_int_eq(tf_ckpt_latest(path, &m, NULL, &st), TF_NOT_FOUND);
  ck_assert_int_eq(tf_ckpt_list(path, &ms, &n, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "nope"));
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_begin_cleans_and_refuses) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX], buf[512], sub[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(sub, dir, "a/b/ckpts"); /* begin makes the parents */
  cd_save(sub, 5, 3);
  /* A crashed writer's leftovers: a temporary pointer, a ckpt dir with
   * shards but no manifest, and a half-written shard's temporary. */
  io_write(io_path(path, sub, ".checkpoint.tmp-1-abc"), "x", 1);
  ck_assert_int_eq(mkdir(io_path(path, sub, "ckpt-6"), 0755), 0);
  cd_write_shard(path, 6, 0);
  char tmp[IO_PATH_MAX];
  io_write(io_path(tmp, path, ".ps-1.shard.tmp-9-ff"), "partial", 7);
  char *ck;
  tf_status st;
  ck_assert_int_eq(tf_ckpt_begin(sub, 5, &ck, &st), TF_ALREADY_EXISTS);
  ck_assert_ptr_null(ck);
  ck_assert_ptr_nonnull(strstr(st.msg, "ckpt-5"));
  ck_assert_str_eq(listing(sub, buf, sizeof buf), "checkpoint ckpt-5");
  /* A bad ckpt-5 is replaced by an empty directory. */
  io_path(path, sub, "ckpt-5");
  flip(io_path(tmp, path, "ps-0.shard"), 30, 1);
  ck_assert(tf_ckpt_begin(sub, 5, &ck, &st) == TF_OK);
  ck_assert_str_eq(ck, path);
  ck_assert_str_eq(listing(ck, buf, sizeof buf), "");
  free(ck);
  ck_assert_int_eq(tf_ckpt_begin(sub, -1, &ck, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_ckpt_begin("", 1, &ck, &st), TF_INVALID_ARGUMENT);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_commit_refusals) {
  char dir[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf_status st;
  tf_ckpt_manifest m = cd_manifest(7);
  ck_assert_int_eq(tf_ckpt_commit(dir, &m, 3, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(st.msg, "ckpt-7"));
  char *ck;
  ck_assert(tf_ckpt_begin(dir, 7, &ck, &st) == TF_OK);
  cd_write_shard(ck, 7, 0);
  cd_write_shard(ck, 7, 2);
  ck_assert_int_eq(tf_ckpt_commit(dir, &m, 3, &st), TF_DATA_LOSS);
  ck_assert_msg(strstr(st.msg, "ps-1.shard") && strstr(st.msg, "ckpt-7"), "%s", st.msg);
  char path[IO_PATH_MAX];
  ck_assert_int_ne(access(io_path(path, ck, "manifest"), F_OK), 0);
  ck_assert_int_ne(access(io_path(path, dir, "checkpoint"), F_OK), 0);
  /* Fields the manifest cannot hold. */
  tf_ckpt_manifest b = cd_manifest(7);
  free(b.job);
  b.job = tf__xstrdup("has space");
  ck_assert_int_eq(tf_ckpt_commit(dir, &b, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "job"));
  free(b.job);
  b.job = tf__xstrdup("ok");
  free(b.mode);
  b.mode = tf__xstrdup("Sync");
  ck_assert_int_eq(tf_ckpt_commit(dir, &b, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "mode"));
  free(b.mode);
  b.mode = NULL; /* "" */
  free(b.shards[1].file);
  b.shards[1].file = tf__xstrdup("../ps-1.shard");
  ck_assert_int_eq(tf_ckpt_commit(dir, &b, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "../ps-1.shard"));
  free(b.shards[1].file);
  b.shards[1].file = tf__xstrdup("ps-0.shard");
  ck_assert_int_eq(tf_ckpt_commit(dir, &b, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "twice"));
  /* Now with all shards it commits. */
  cd_write_shard(ck, 7, 1);
  ck_assert_msg(tf_ckpt_commit(dir, &m, 3, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_ckpt_verify(ck, NULL, &st) == TF_OK);
  char *sn = tf_ckpt_shard_name("ps", 12);
  ck_assert_str_eq(sn, "ps-12.shard");
  free(sn);
  free(ck);
  tf_ckpt_manifest_fini(&b);
  tf_ckpt_manifest_fini(&m);
  tf_ckpt_manifest_fini(NULL);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_confined) {
  char root[IO_PATH_MAX], out[IO_PATH_MAX], buf[512], p[IO_PATH_MAX], q[IO_PATH_MAX];
  io_tmpdir(root, sizeof root);
  io_tmpdir(out, sizeof out);
  tf_fs_policy *pol = tf__fs_policy_new("nothing");
  tf_status st;
  ck_assert_msg(tf__fs_policy_add(pol, root, "checkpoint_dir", true, &st) == TF_OK, "%s", st.msg);
  tf__fs_policy_install(pol);
  io_path(p, root, "jobs");
  io_path(q, p, "run1");
  cd_save(q, 10, 2);
  cd_save(q, 20, 2);
  ck_assert_str_eq(listing(q, buf, sizeof buf), "checkpoint ckpt-10 ckpt-20");
  tf_ckpt_manifest m;
  char *note = NULL, *ck = NULL;
  ck_assert_msg(tf_ckpt_latest(q, &m, &note, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(m.step, 20);
  cd_expect_whole(&m);
  tf_ckpt_manifest_fini(&m);
  /* outside, through a link, and by '..' */
  io_path(p, root, "link");
  ck_assert_int_eq(symlink(out, p), 0);
  char *esc = tf__xasprintf("%s/../%s", root, strrchr(out, '/') + 1);
  const char *bad[] = {out, p, esc};
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(tf_ckpt_begin(bad[i], 30, &ck, &st) == TF_PERMISSION_DENIED, "%s: %s", bad[i], st.msg);
    ck_assert_msg(strstr(st.msg, "checkpoint_dir: ") && strstr(st.msg, "this cluster allows"),
                  "%s", st.msg);
  }
  ck_assert_str_eq(listing(out, buf, sizeof buf), "");
  tf__fs_policy_install(NULL);
  free(esc);
  io_tmpdir_remove(out);
  io_tmpdir_remove(root);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_dir");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_commit_list_keep);
  tcase_add_test(tc, test_damaged_shard_and_fallback);
  tcase_add_test(tc, test_latest_and_list_when_empty);
  tcase_add_test(tc, test_begin_cleans_and_refuses);
  tcase_add_test(tc, test_commit_refusals);
  tcase_add_test(tc, test_truncate);
  tcase_add_test(tc, test_confined);
  suite_add_tcase(s, tc);
  return s;
}
