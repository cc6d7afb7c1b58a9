/* ckpt_shard_test.c: writing shard files (ckpt_shard.c). Every dtype at
 * ranks 0..4 (empty dims too) round-trips bit for bit from seeded random
 * bytes, with the index describing each entry; verify_file gives the
 * file's size and a CRC32C equal to one computed here over the bytes read
 * back; tensors larger than the write buffer; an empty shard; a rewrite
 * replaces the file; every bad entry (name, tensor, slice text, a slice's
 * extent, a pair saved twice, overlapping slices, one name with two dtypes
 * or full shapes) is refused naming it, leaving no file behind. */
#include <dirent.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "test/unit/core/serialize/ckpt_testlib.h"

static int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert(d != NULL);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  }
  closedir(d);
  return n;
}

START_TEST(test_roundtrip_every_dtype_and_rank) {
  tt_rng_reseed(tt_seed() ^ 0xc4);
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "all.shard");
  enum { N = CK_N_DTYPES * 5 };
  tf_tensor *t[N];
  tf_ckpt_entry e[N];
  char names[N][32];
  for (int i = 0; i < N; i++) {
    int rank = i % 5;
    int64_t dims[4];
    for (int d = 0; d < rank; d++) dims[d] = (int64_t)(tt_rand_u64() % 4) + (i % 7 == 6 ? 0 : 1);
    t[i] = ck_rand_tensor(ck_all_dtypes[i / 5], tf_shape_make(rank, dims));
    snprintf(names[i], sizeof names[i], "v/%s_%d", tf_dtype_name(t[i]->dtype), rank);
    e[i] = (tf_ckpt_entry){names[i], i % 2 ? "" : NULL, t[i]};
  }
  tf_status st;
  ck_assert_msg(tf_ckpt_shard_write(path, e, N, &st) == TF_OK, "%s", st.msg);
  tf_ckpt_shard *s;
  ck_assert_msg(tf_ckpt_shard_open(path, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_ckpt_shard_count(s), N);
  ck_assert_str_eq(tf_ckpt_shard_path(s), path);
  for (int i = 0; i < N; i++) {
    tf_ckpt_info in;
    tf_ckpt_shard_info(s, i, &in);
    ck_assert_str_eq(in.name, names[i]);
    ck_assert_str_eq(in.slice, "");
    ck_assert_int_eq(in.dtype, t[i]->dtype);
    ck_assert(tf_shape_equal(&in.shape, &t[i]->shape));
    ck_assert(tf_shape_equal(&in.full, &t[i]->shape));
    if (t[i]->dtype != TF_STRING) ck_assert_int_eq(in.bytes, (int64_t)t[i]->nbytes);
    tf_tensor *back;
    int want = i % 3 == 0 ? -1 : (int)t[i]->dtype;
    ck_assert_msg(tf_ckpt_shard_read(s, names[i], i % 2 ? "" : NULL, want, &back, &st) == TF_OK,
                  "%s", st.msg);
    ck_assert_msg(tf_tensor_equal(back, t[i]), "%s", names[i]);
    tf_tensor_unref(back);
  }
  int64_t bytes;
  uint32_t crc;
  ck_assert(tf_ckpt_shard_verify_file(s, &bytes, &crc, &st) == TF_OK);
  size_t n;
  uint8_t *raw = io_read(path, &n);
  ck_assert_int_eq(bytes, (int64_t)n);
  ck_assert_uint_eq(crc, tf_crc32c(raw, n));
  ck_assert(memcmp(raw, "\x89TFCKPT\n", 8) == 0 && memcmp(raw + n - 8, "TFCKEND\n", 8) == 0);
  free(raw);
  tf_ckpt_shard_close(s);
  tt_free(t, N);
  ck_assert_int_eq(dir_entries(dir), 1); /* no temporary file left */
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_large_empty_and_replace) {
  tt_rng_reseed(tt_seed() ^ 0xb16);
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "s");
  tf_tensor *big = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 1000, 777)); /* > 1 MiB */
  tf_tensor *small = ck_rand_tensor(TF_INT8, tf_shape_of(1, 3));
  tf_ckpt_entry e[] = {{"small", NULL, small}, {"big", NULL, big}, {"small2", NULL, small}};
  tf_status st;
  ck_assert(tf_ckpt_shard_write(path, e, 3, &st) == TF_OK);
  tf_ckpt_shard *s;
  ck_assert(tf_ckpt_shard_open(path, &s, &st) == TF_OK);
  tf_tensor *back;
  ck_assert(tf_ckpt_shard_read(s, "big", NULL, -1, &back, &st) == TF_OK);
  ck_assert(tf_tensor_equal(back, big));
  tf_tensor_unref(back);
  ck_assert(tf_ckpt_shard_read(s, "small2", NULL, -1, &back, &st) == TF_OK);
  ck_assert(tf_tensor_equal(back, small));
  tf_tensor_unref(back);
  ck_assert(tf_ckpt_shard_verify(s, &st) == TF_OK);
  tf_ckpt_shard_close(s);
  /* Replaced by an empty shard: the old entries are gone. */
  ck_assert(tf_ckpt_shard_write(path, NULL, 0, &st) == TF_OK);
  ck_assert(tf_ckpt_shard_open(path, &s, &st) == TF_OK);
  ck_assert_int_eq(tf_ckpt_shard_count(s), 0);
  ck_assert_int_eq(tf_ckpt_shard_read(s, "big", NULL, -1, &back, &st), TF_NOT_FOUND);
  ck_assert(tf_ckpt_shard_verify(s, &st) == TF_OK);
  tf_ckpt_shard_close(s);
  tt_free((tf_tensor *[]){big, small}, 2);
  ck_assert_int_eq(dir_entries(dir), 1);
  io_tmpdir_remove(dir);
}
END_TEST

/* Writing e[0..n) fails with code and a message holding each of want. */
static void expect_refused(const char *dir, const tf_ckpt_entry *e, int n,
                           tf_code code, const char *w1, const char *w2) {
  char path[IO_PATH_MAX];
  io_path(path, dir, "bad.shard");
  tf_status st;
  ck_assert_int_eq(tf_ckpt_shard_write(path, e, n, &st), code);
  ck_assert_msg(strstr(st.msg, w1) != NULL, "'%s' lacks '%s'", st.msg, w1);
  ck_assert_msg(w2 == NULL || strstr(st.msg, w2) != NULL, "'%s' lacks '%s'", st.msg, w2);
  ck_assert_ptr_nonnull(strstr(st.msg, "bad.shard"));
  ck_assert_int_eq(dir_entries(dir), 0);
}

START_TEST(test_bad_entries_refused) {
  char dir[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf_tensor *a = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 3, 5));
  tf_tensor *b = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 7, 5));
  tf_tensor *c = ck_rand_tensor(TF_INT32, tf_shape_of(2, 3, 5));
  char *long_name = malloc(TF_CKPT_NAME_MAX + 2);
  memset(long_name, 'n', TF_CKPT_NAME_MAX + 1);
  long_name[TF_CKPT_NAME_MAX + 1] = '\0';
  const tf_code IA = TF_INVALID_ARGUMENT;
  expect_refused(dir, (tf_ckpt_entry[]){{"", NULL, a}}, 1, IA, "entry 0", "empty");
  expect_refused(dir, (tf_ckpt_entry[]){{NULL, NULL, a}}, 1, IA, "entry 0", "empty");
  expect_refused(dir, (tf_ckpt_entry[]){{"x", NULL, a}, {"y", NULL, NULL}}, 2, IA, "entry 1", "no tensor");
  expect_refused(dir, (tf_ckpt_entry[]){{long_name, NULL, a}}, 1, IA, "entry 0", "4096");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3", a}}, 1, IA, "'w'", "7 5 0,3");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,4:-", a}}, 1, IA, "'w'", "[4,5]");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3:-", a}, {"w", "7 5 0,3:-", a}}, 2, IA,
                 "'w'", "twice");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", NULL, b}, {"w", "", b}}, 2, IA, "'w'", "twice");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3:-", a}, {"w", "7 5 2,3:-", a}}, 2, IA,
                 "overlaps", "7 5 0,3:-");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3:-", a}, {"w", NULL, b}}, 2, IA,
                 "overlaps", NULL);
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3:-", a}, {"w", "7 5 3,3:-", c}}, 2, IA,
                 "int32", "one dtype");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", "7 5 0,3:-", a}, {"w", "8 5 3,3:-", a}}, 2, IA,
                 "[8,5]", "full shape");
  expect_refused(dir, (tf_ckpt_entry[]){{"w", NULL, a}}, -1, IA, "-1 entries", NULL);
  /* A missing directory: the path and the OS error. */
  char path[IO_PATH_MAX];
  io_path(path, dir, "no/such.shard");
  tf_status st;
  ck_assert_int_eq(tf_ckpt_shard_write(path, (tf_ckpt_entry[]){{"w", NULL, a}}, 1, &st),
                   TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "no/such.shard'"));
  ck_assert_ptr_nonnull(strstr(st.msg, "No such file"));
  free(long_name);
  tt_free((tf_tensor *[]){a, b, c}, 3);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_shard");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_roundtrip_every_dtype_and_rank);
  tcase_add_test(tc, test_large_empty_and_replace);
  tcase_add_test(tc, test_bad_entries_refused);
  suite_add_tcase(s, tc);
  return s;
}
