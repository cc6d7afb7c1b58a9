/* ckpt_manifest_test.c: the text files of a checkpoint directory
 * (ckpt_manifest.c). The manifest's format is exactly as documented and
 * round-trips; strict parsing refuses each malformed variant (with a good
 * CRC, so the parser itself is what refuses); every bit of a committed
 * manifest flipped, and the manifest cut at every length, make
 * tf_ckpt_verify fail with DATA_LOSS; every byte of a shard damaged makes
 * it fail naming that shard. The pointer file: TensorFlow's format with
 * its timestamp lines, the latest moved last, names checked, garbage
 * refused with the line. */
#include <unistd.h>

#include "lib/core/base/crc32c.h"
#include "test/unit/runtime/ckpt_dir_testlib.h"

START_TEST(test_manifest_format_roundtrip) {
  tf_ckpt_manifest m = cd_manifest(1000);
  m.time_ms = 1700000000123;
  for (int k = 0; k < CD_SHARDS; k++) {
    m.shards[k].bytes = 100 + k;
    m.shards[k].crc32c = 0xdeadbee0u + (uint32_t)k;
  }
  char *text;
  size_t len;
  tf_status st;
  ck_assert(tf_ckpt_manifest_format(&m, &text, &len, &st) == TF_OK);
  const char *body = "tf-checkpoint-manifest 1\njob: mnist\nstep: 1000\n"
                     "time_ms: 1700000000123\nspec_hash: 0123456789abcdef\nmode: sync\n"
                     "shards: 3\nshard: ps-0.shard 100 deadbee0\n"
                     "shard: ps-1.shard 101 deadbee1\nshard: worker-0.shard 102 deadbee2\n";
  char want[1024];
  snprintf(want, sizeof want, "%scrc32c: %08x\n", body, tf_crc32c(body, strlen(body)));
  ck_assert_str_eq(text, want);
  ck_assert_uint_eq(len, strlen(want));
  tf_ckpt_manifest back;
  ck_assert_msg(tf_ckpt_manifest_parse(text, len, "m", &back, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(back.job, "mnist");
  ck_assert_int_eq(back.step, 1000);
  ck_assert_int_eq(back.time_ms, 1700000000123);
  ck_assert_str_eq(back.spec_hash, m.spec_hash);
  ck_assert_str_eq(back.mode, "sync");
  ck_assert_int_eq(back.n_shards, 3);
  ck_assert_ptr_null(back.path);
  for (int k = 0; k < 3; k++) {
    ck_assert_str_eq(back.shards[k].file, m.shards[k].file);
    ck_assert_int_eq(back.shards[k].bytes, 100 + k);
    ck_assert_uint_eq(back.shards[k].crc32c, 0xdeadbee0u + (uint32_t)k);
  }
  tf_ckpt_manifest_fini(&back);
  free(text);
  /* Empty hash and mode, no shards. */
  tf_ckpt_manifest e = {.job = "j", .step = 0};
  ck_assert(tf_ckpt_manifest_format(&e, &text, &len, &st) == TF_OK);
  ck_assert(tf_ckpt_manifest_parse(text, len, "e", &back, &st) == TF_OK);
  ck_assert(back.n_shards == 0 && back.step == 0 && strcmp(back.mode, "") == 0);
  tf_ckpt_manifest_fini(&back);
  free(text);
  tf_ckpt_manifest_fini(&m);
}
END_TEST

/* body + its CRC line parsed: must fail with DATA_LOSS naming line. */
static void expect_bad_body(const char *body, const char *line) {
  char text[2048];
  snprintf(text, sizeof text, "%scrc32c: %08x\n", body, tf_crc32c(body, strlen(body)));
  tf_ckpt_manifest m;
  tf_status st;
  ck_assert_msg(tf_ckpt_manifest_parse(text, strlen(text), "f", &m, &st) == TF_DATA_LOSS,
                "accepted:\n%s", body);
  ck_assert_msg(strstr(st.msg, line) != NULL, "'%s' lacks '%s'", st.msg, line);
  ck_assert_ptr_null(m.job);
}

START_TEST(test_manifest_strict) {
  const char *h = "tf-checkpoint-manifest 1\n";
  const char *rest = "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 1\n"
                     "shard: ps-0.shard 10 0000000a\n";
  char b[1024];
  struct { const char *job_line, *tail, *line; } cases[] = {
      {"job: a b\n", NULL, "line 2"},          /* space in the job */
      {"job: \n", NULL, "line 2"},             /* empty job */
      {"job:  a\n", NULL, "line 2"},           /* two spaces */
      {"jobs: a\n", NULL, "line 2"},           /* wrong key */
      {"job: a\n", "step: 01\n", "line 3"},    /* leading zero */
      {"job: a\n", "step: -1\n", "line 3"},
      {"job: a\n", "step: 99999999999999999999\n", "line 3"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: AB\n", "line 5"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: Sync\n", "line 6"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 2\n"
                   "shard: ps-0.shard 10 0000000a\n", "line 9"},           /* one short */
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 1\n"
                   "shard: ../x 10 0000000a\n", "line 8"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 1\n"
                   "shard: x 10 a\n", "line 8"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 2\n"
                   "shard: x 10 0000000a\nshard: x 10 0000000a\n", "line 9"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 0\nextra: 1\n",
       "line 8"},
      {"job: a\n", "step: 1\ntime_ms: 2\nspec_hash: ab\nmode: sync\nshards: 70000\n", "line 7"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(b, sizeof b, "%s%s%s", h, cases[i].job_line, cases[i].tail ? cases[i].tail : rest);
    expect_bad_body(b, cases[i].line);
  }
  expect_bad_body("tf-checkpoint-manifest x\njob: a\n", "line 1");
  expect_bad_body("some other file\n", "line 1");
  tf_ckpt_manifest m;
  tf_status st;
  const char *v2 = "tf-checkpoint-manifest 2\n";
  snprintf(b, sizeof b, "%scrc32c: %08x\n", v2, tf_crc32c(v2, strlen(v2)));
  ck_assert_int_eq(tf_ckpt_manifest_parse(b, strlen(b), "f", &m, &st), TF_UNIMPLEMENTED);
  ck_assert_int_eq(tf_ckpt_manifest_parse("", 0, "f", &m, &st), TF_DATA_LOSS);
  ck_assert_int_eq(tf_ckpt_manifest_parse("crc32c: 00000000\n", 17, "f", &m, &st), TF_DATA_LOSS);
}
END_TEST

START_TEST(test_manifest_every_bit_and_cut) {
  char dir[IO_PATH_MAX], ck[IO_PATH_MAX], mp[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  cd_save(dir, 42, 3);
  io_path(ck, dir, "ckpt-42");
  io_path(mp, ck, "manifest");
  size_t n;
  uint8_t *good = io_read(mp, &n);
  tf_status st;
  for (size_t off = 0; off < n; off++) {
    for (int bit = 0; bit < 8; bit++) {
      good[off] ^= (uint8_t)(1u << bit);
      io_write(mp, good, n);
      good[off] ^= (uint8_t)(1u << bit);
      tf_code c = tf_ckpt_verify(ck, NULL, &st);
      ck_assert_msg(c == TF_DATA_LOSS, "bit %d of byte %zu: %s", bit, off, tf_code_name(c));
      ck_assert_ptr_nonnull(strstr(st.msg, "manifest"));
    }
  }
  for (size_t len = 0; len < n; len++) {
    io_write(mp, good, len);
    ck_assert_msg(tf_ckpt_verify(ck, NULL, &st) == TF_DATA_LOSS, "cut at %zu", len);
  }
  io_write(mp, good, n);
  tf_ckpt_manifest m;
  ck_assert(tf_ckpt_verify(ck, &m, &st) == TF_OK);
  cd_expect_whole(&m);
  tf_ckpt_manifest_fini(&m);
  /* Every byte of one shard damaged: DATA_LOSS naming that shard. */
  char sp[IO_PATH_MAX];
  io_path(sp, ck, "worker-0.shard");
  uint8_t *shard = io_read(sp, &n);
  for (size_t off = 0; off < n; off++) {
    shard[off] ^= (uint8_t)(1u << (off % 8));
    io_write(sp, shard, n);
    shard[off] ^= (uint8_t)(1u << (off % 8));
    ck_assert_msg(tf_ckpt_verify(ck, NULL, &st) == TF_DATA_LOSS, "byte %zu", off);
    ck_assert_msg(strstr(st.msg, "worker-0.shard") != NULL, "%s", st.msg);
  }
  free(shard);
  free(good);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_pointer) {
  const char *tf_text = "model_checkpoint_path: \"ckpt-30\"\n"
                        "all_model_checkpoint_paths: \"ckpt-30\"\n"
                        "all_model_checkpoint_paths: \"ckpt-10\"\n"
                        "all_model_checkpoint_timestamps: 1700000000.5\n"
                        "all_model_checkpoint_paths: \"ckpt-20\"\n"
                        "all_model_checkpoint_paths: \"ckpt-20\"\n"
                        "last_preserved_timestamp: 1699999999.25\n";
  char **names;
  int n;
  tf_status st;
  ck_assert_msg(tf_ckpt_pointer_parse(tf_text, strlen(tf_text), "p", &names, &n, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(names[0], "ckpt-10");
  ck_assert_str_eq(names[1], "ckpt-20");
  ck_assert_str_eq(names[2], "ckpt-30");
  char *text = tf_ckpt_pointer_format(names, n);
  ck_assert_str_eq(text, "model_checkpoint_path: \"ckpt-30\"\n"
                         "all_model_checkpoint_paths: \"ckpt-10\"\n"
                         "all_model_checkpoint_paths: \"ckpt-20\"\n"
                         "all_model_checkpoint_paths: \"ckpt-30\"\n");
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  free(text);
  const char *only = "model_checkpoint_path: \"ckpt-0\"\n";
  ck_assert(tf_ckpt_pointer_parse(only, strlen(only), "p", &names, &n, &st) == TF_OK);
  ck_assert(n == 1 && strcmp(names[0], "ckpt-0") == 0);
  free(names[0]);
  free(names);
  struct { const char *text, *line; } bad[] = {
      {"", "line 1"},
      {"model_checkpoint_path: ckpt-1\n", "line 1"},
      {"model_checkpoint_path: \"../etc\"\n", "line 1"},
      {"model_checkpoint_path: \"ckpt-01\"\n", "line 1"},
      {"model_checkpoint_path: \"ckpt-1\"", "line 1"},
      {"model_checkpoint_path: \"ckpt-1\"\nall_model_checkpoint_paths: \"/abs/ckpt-1\"\n",
       "line 2"},
      {"model_checkpoint_path: \"ckpt-1\"\nunknown: 1\n", "line 2"},
      {"all_model_checkpoint_paths: \"ckpt-1\"\n", "line 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(tf_ckpt_pointer_parse(bad[i].text, strlen(bad[i].text), "ptr", &names, &n,
                                        &st) == TF_DATA_LOSS, "accepted %s", bad[i].text);
    ck_assert_msg(strstr(st.msg, bad[i].line) && strstr(st.msg, "ptr"), "%s", st.msg);
    ck_assert_ptr_null(names);
  }
  int64_t step;
  ck_assert(tf_ckpt_dir_name_step("ckpt-9223372036854775807", &step) && step == INT64_MAX);
  ck_assert(!tf_ckpt_dir_name_step("ckpt-9223372036854775808", &step));
  ck_assert(!tf_ckpt_dir_name_step("ckpt-", &step));
  ck_assert(!tf_ckpt_dir_name_step("ckpt-1a", &step));
  ck_assert(!tf_ckpt_dir_name_step("ckpt-+1", &step));
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_manifest");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_manifest_format_roundtrip);
  tcase_add_test(tc, test_manifest_strict);
  tcase_add_test(tc, test_manifest_every_bit_and_cut);
  tcase_add_test(tc, test_pointer);
  suite_add_tcase(s, tc);
  return s;
}
