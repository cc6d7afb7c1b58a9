/* inspect_test.c: the tfctl binary's `inspect` on checkpoints written by
 * the library (no daemons needed): a job's checkpoint directory lists its
 * latest checkpoint, exit 0; --export writes a .npy the project's reader
 * reads back equal; a damaged shard exits 1 with one "tfctl: inspect:
 * DATA_LOSS" line naming the file and tensor, while the job's directory
 * falls back with a note; usage errors exit 2; `help inspect` and the
 * global usage mention it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/integration/harness.h"
#include "test/unit/runtime/ckpt_dir_testlib.h"
#include "tf/serialize.h"

static int tfctl(char **out, char **err, const char *a0, ...) {
  char *argv[16];
  int k = 0;
  argv[k++] = th_bin("tfctl");
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a != NULL && k < 15; a = va_arg(ap, const char *)) {
    argv[k++] = (char *)a;
  }
  va_end(ap);
  argv[k] = NULL;
  int rc = th_run(NULL, argv, 20000, out, err);
  free(argv[0]);
  return rc;
}

START_TEST(test_inspect_binary) {
  char dir[IO_PATH_MAX], ck[IO_PATH_MAX], npy[IO_PATH_MAX], shard[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  cd_save(dir, 10, 3);
  cd_save(dir, 20, 3);
  io_path(ck, dir, "ckpt-20");
  io_path(npy, dir, "a.npy");
  char *out = NULL, *err = NULL;
  int rc = tfctl(&out, &err, "inspect", dir, "--export", "1/a", npy, NULL);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  char line[4 * IO_PATH_MAX];
  snprintf(line, sizeof line, "latest checkpoint of %s: %s\ncheckpoint: %s\njob: mnist\n"
                              "step: 20\n", dir, ck, ck);
  ck_assert_msg(strncmp(out, line, strlen(line)) == 0, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "\nshard worker-0.shard: 3 tensors, "));
  ck_assert_ptr_nonnull(strstr(out, "  1/a   float32   [5,4]           80\n"));
  ck_assert_ptr_nonnull(strstr(out, "exported 1/a (float32 [5,4]) to "));
  free(out);
  free(err);
  tf_tensor *back, *want[3];
  char names[3][16];
  tf_status st;
  ck_assert_msg(tf_tensor_load_npy(npy, &back, &st) == TF_OK, "%s", st.msg);
  cd_tensors(20, 1, want, names);
  ck_assert(tf_tensor_equal(back, want[0]));
  tf_tensor_unref(back);
  tt_free(want, 3);
  /* Damage: DATA_LOSS on one line, exit 1; the job dir falls back. */
  io_path(shard, ck, "ps-0.shard");
  size_t n;
  uint8_t *b = io_read(shard, &n);
  b[40] ^= 1;
  io_write(shard, b, n);
  free(b);
  rc = tfctl(&out, &err, "inspect", ck, NULL);
  ck_assert_int_eq(rc, 1);
  const char *head = "tfctl: inspect: DATA_LOSS: tensor '0/a'";
  ck_assert_msg(strncmp(err, head, strlen(head)) == 0 &&
                    strstr(err, "ps-0.shard") && strchr(err, '\n') == err + strlen(err) - 1,
                "%s", err);
  free(out);
  free(err);
  rc = tfctl(&out, &err, "inspect", dir, NULL);
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_nonnull(strstr(out, "step: 10\n"));
  ck_assert_ptr_nonnull(strstr(err, "tfctl: note: skipped ckpt-20 (DATA_LOSS"));
  free(out);
  free(err);
  /* Usage. */
  const char *bad[][5] = {{"inspect", NULL}, {"inspect", dir, dir, NULL},
                          {"inspect", dir, "-m", "localhost:1", NULL},
                          {"inspect", dir, "--export", "x", NULL},
                          {"jobs", "--export", "x", "y.npy", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rc = tfctl(&out, &err, bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4], NULL);
    ck_assert_msg(rc == 2, "case %zu: exit %d: %s", i, rc, err);
    free(out);
    free(err);
  }
  ck_assert_int_eq(tfctl(&out, &err, "help", "inspect", NULL), 0);
  ck_assert_ptr_nonnull(strstr(out, "usage: tfctl inspect CHECKPOINT [--export NAME FILE.npy]"));
  free(out);
  free(err);
  ck_assert_int_eq(tfctl(&out, &err, "help", NULL), 0);
  ck_assert_ptr_nonnull(strstr(out, "  inspect CHECKPOINT"));
  free(out);
  free(err);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("inspect");
  TCase *tc = tcase_create("inspect");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_inspect_binary);
  suite_add_tcase(s, tc);
  return s;
}
