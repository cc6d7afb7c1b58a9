/* ckpt_shard_read_test.c: reading shard files (ckpt_shard_read.c).
 * Slices: a [7, 5] float32 and a [4, 3, 6] int64 and string variable, each
 * saved as three boxes, are restored whole and as EVERY box of their full
 * shape (straddling the stored ones or inside one), each compared with the
 * element-by-element reference; with one stored box missing, exactly the
 * requests that touch it fail with DATA_LOSS. Errors: a missing tensor
 * (NOT_FOUND naming it and the file), a dtype other than the stored one,
 * a request of another full shape or bad text, a missing file, a file
 * that is not a shard. Damage: every bit of a small shard flipped, and the
 * file cut at every length, make open or verify fail with DATA_LOSS, and
 * no read ever returns wrong values; a crafted file whose CRCs are right
 * but whose bool byte is 2 is refused too. */
#include <fcntl.h>
#include <unistd.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "test/unit/core/serialize/ckpt_testlib.h"

/* ---- slices -------------------------------------------------------------------- */

typedef struct stored {
  int64_t start[3], len[3];
} stored;

/* Saves the given boxes of full as name in path. */
static void save_boxes(const char *path, const char *name, const tf_tensor *full,
                       const stored *b, int n) {
  tf_ckpt_entry e[4];
  tf_tensor *parts[4];
  char text[4][128];
  for (int i = 0; i < n; i++) {
    parts[i] = ck_slice_ref(full, b[i].start, b[i].len);
    e[i] = (tf_ckpt_entry){name, ck_slice_text(text[i], sizeof text[i], &full->shape,
                                               b[i].start, b[i].len), parts[i]};
  }
  tf_status st;
  ck_assert_msg(tf_ckpt_shard_write(path, e, n, &st) == TF_OK, "%s", st.msg);
  tt_free(parts, n);
}

/* Whether box (start, len) meets stored box b. */
static bool meets(const int64_t *start, const int64_t *len, const stored *b,
                  int rank) {
  for (int d = 0; d < rank; d++) {
    if (start[d] + len[d] <= b->start[d] || b->start[d] + b->len[d] <= start[d]) {
      return false;
    }
  }
  return true;
}

/* Requests every box of full's shape from path; with `missing` (a box
 * that was not saved) those meeting it must fail with DATA_LOSS. Returns
 * the number of boxes tried. */
static int every_box(const char *path, const char *name, const tf_tensor *full,
                     const stored *missing) {
  tf_ckpt_shard *s;
  tf_status st;
  ck_assert_msg(tf_ckpt_shard_open(path, &s, &st) == TF_OK, "%s", st.msg);
  int rank = full->shape.rank, tried = 0;
  int64_t start[3] = {0}, len[3] = {1, 1, 1};
  for (;;) {
    char text[128];
    ck_slice_text(text, sizeof text, &full->shape, start, len);
    tf_tensor *got = NULL;
    tf_code c = tf_ckpt_shard_read(s, name, text, (int)full->dtype, &got, &st);
    if (missing != NULL && meets(start, len, missing, rank)) {
      ck_assert_msg(c == TF_DATA_LOSS, "%s: %s", text, tf_code_name(c));
      ck_assert_ptr_nonnull(strstr(st.msg, "do not cover"));
      ck_assert_ptr_nonnull(strstr(st.msg, name));
    } else {
      ck_assert_msg(c == TF_OK, "%s: %s", text, st.msg);
      tf_tensor *want = ck_slice_ref(full, start, len);
      ck_assert_msg(tf_tensor_equal(got, want), "%s differs", text);
      tf_tensor_unref(want);
      tf_tensor_unref(got);
    }
    tried++;
    int d = rank - 1; /* next (start, len) in odometer order */
    for (; d >= 0; d--) {
      if (start[d] + len[d] < full->shape.dims[d]) {
        len[d]++;
        break;
      }
      if (start[d] + 1 < full->shape.dims[d]) {
        start[d]++;
        len[d] = 1;
        break;
      }
      start[d] = 0;
      len[d] = 1;
    }
    if (d < 0) break;
  }
  tf_ckpt_shard_close(s);
  return tried;
}

static void whole_equals(const char *path, const char *name, const tf_tensor *full) {
  tf_ckpt_shard *s;
  tf_status st;
  ck_assert(tf_ckpt_shard_open(path, &s, &st) == TF_OK);
  tf_tensor *got;
  ck_assert_msg(tf_ckpt_shard_read(s, name, "", -1, &got, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_tensor_equal(got, full));
  tf_tensor_unref(got);
  tf_ckpt_shard_close(s);
}

START_TEST(test_slices_2d) {
  tt_rng_reseed(tt_seed() ^ 0x75);
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "w.shard");
  tf_tensor *full = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 7, 5));
  stored b[3] = {{{0, 0}, {3, 5}}, {{3, 0}, {4, 2}}, {{3, 2}, {4, 3}}};
  save_boxes(path, "w", full, b, 3);
  whole_equals(path, "w", full);
  ck_assert_int_eq(every_box(path, "w", full, NULL), 28 * 15);
  save_boxes(path, "w", full, b, 2); /* without rows 3..6, cols 2..4 */
  ck_assert_int_eq(every_box(path, "w", full, &b[2]), 28 * 15);
  tf_tensor_unref(full);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_slices_3d) {
  tt_rng_reseed(tt_seed() ^ 0x436);
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "v.shard");
  stored b[3] = {{{0, 0, 0}, {2, 3, 4}}, {{0, 0, 4}, {2, 3, 2}}, {{2, 0, 0}, {2, 3, 6}}};
  tf_dtype dts[] = {TF_INT64, TF_STRING};
  for (int k = 0; k < 2; k++) {
    tf_tensor *full = ck_rand_tensor(dts[k], tf_shape_of(3, 4, 3, 6));
    save_boxes(path, "emb/v", full, b, 3);
    whole_equals(path, "emb/v", full);
    ck_assert_int_eq(every_box(path, "emb/v", full, NULL), 10 * 6 * 21);
    save_boxes(path, "emb/v", full, (stored[]){b[0], b[2]}, 2);
    ck_assert_int_eq(every_box(path, "emb/v", full, &b[1]), 10 * 6 * 21);
    tf_tensor_unref(full);
  }
  io_tmpdir_remove(dir);
}
END_TEST

/* ---- errors -------------------------------------------------------------------- */

START_TEST(test_read_errors) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "e.shard");
  tf_tensor *a = ck_rand_tensor(TF_FLOAT64, tf_shape_of(2, 4, 2));
  tf_status st;
  ck_assert(tf_ckpt_shard_write(path, (tf_ckpt_entry[]){{"a", NULL, a}}, 1, &st) == TF_OK);
  tf_ckpt_shard *s;
  ck_assert(tf_ckpt_shard_open(path, &s, &st) == TF_OK);
  tf_tensor *t = (tf_tensor *)1;
  ck_assert_int_eq(tf_ckpt_shard_read(s, "b", NULL, -1, &t, &st), TF_NOT_FOUND);
  ck_assert_ptr_null(t);
  ck_assert(strstr(st.msg, "'b'") && strstr(st.msg, "e.shard"));
  ck_assert_int_eq(tf_ckpt_shard_read(s, "a", NULL, TF_FLOAT32, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert(strstr(st.msg, "float64") && strstr(st.msg, "float32") && strstr(st.msg, "'a'"));
  ck_assert_int_eq(tf_ckpt_shard_read(s, "a", "4 3 0,1:-", -1, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert(strstr(st.msg, "[4,2]") && strstr(st.msg, "[4,3]"));
  ck_assert_int_eq(tf_ckpt_shard_read(s, "a", "4 2 0,1", -1, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert(strstr(st.msg, "'a'") && strstr(st.msg, "4 2 0,1"));
  ck_assert(tf_ckpt_shard_read(s, "a", "4 2 1,2:1,1", TF_FLOAT64, &t, &st) == TF_OK);
  ck_assert_double_eq(((double *)t->data)[0], ((double *)a->data)[3]);
  ck_assert_double_eq(((double *)t->data)[1], ((double *)a->data)[5]);
  tf_tensor_unref(t);
  tf_ckpt_shard_close(s);
  io_path(path, dir, "none.shard");
  ck_assert_int_eq(tf_ckpt_shard_open(path, &s, &st), TF_NOT_FOUND);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(st.msg, "none.shard"));
  ck_assert_int_ne(tf_ckpt_shard_open(dir, &s, &st), TF_OK);
  io_path(path, dir, "text");
  const char *text = "model_checkpoint_path: \"ckpt-1\"\nall_model_checkpoint_paths: \"x\"\n";
  io_write(path, text, strlen(text));
  ck_assert_int_eq(tf_ckpt_shard_open(path, &s, &st), TF_DATA_LOSS);
  ck_assert(strstr(st.msg, "text") && strstr(st.msg, "magic"));
  tf_tensor_unref(a);
  io_tmpdir_remove(dir);
}
END_TEST

/* ---- damage -------------------------------------------------------------------- */

enum { N_SMALL = 4 };

/* A small shard with numbers, strings, bools and a slice; its tensors. */
static void small_shard(const char *path, tf_tensor **t, const char **names,
                        const char **slices) {
  t[0] = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3));
  t[1] = ck_rand_tensor(TF_STRING, tf_shape_of(1, 3));
  t[2] = ck_rand_tensor(TF_BOOL, tf_shape_of(1, 5));
  t[3] = ck_rand_tensor(TF_INT16, tf_shape_of(2, 2, 2));
  static const char *n[] = {"w", "vocab", "mask", "emb"};
  static const char *sl[] = {"", "", "", "4 2 1,2:-"};
  tf_ckpt_entry e[N_SMALL];
  for (int i = 0; i < N_SMALL; i++) {
    names[i] = n[i];
    slices[i] = sl[i];
    e[i] = (tf_ckpt_entry){n[i], sl[i], t[i]};
  }
  tf_status st;
  ck_assert(tf_ckpt_shard_write(path, e, N_SMALL, &st) == TF_OK);
}

/* Opens the (damaged) file: at least one of open and verify must fail
 * with DATA_LOSS, and every read that succeeds must give the original. */
static void check_damaged(const char *path, tf_tensor **t, const char **names,
                          const char **slices, const char *what) {
  tf_ckpt_shard *s;
  tf_status st;
  tf_code c = tf_ckpt_shard_open(path, &s, &st);
  if (c != TF_OK) {
    ck_assert_msg(c == TF_DATA_LOSS, "%s: open gave %s: %s", what, tf_code_name(c), st.msg);
    ck_assert_ptr_nonnull(strstr(st.msg, path));
    return;
  }
  int failed = 0;
  for (int i = 0; i < N_SMALL; i++) {
    tf_tensor *got = NULL;
    c = tf_ckpt_shard_read(s, names[i], slices[i], -1, &got, &st);
    if (c == TF_OK) {
      ck_assert_msg(tf_tensor_equal(got, t[i]), "%s: wrong values for '%s'", what, names[i]);
      tf_tensor_unref(got);
    } else {
      ck_assert_msg(c == TF_DATA_LOSS, "%s: %s", what, st.msg);
      ck_assert_ptr_nonnull(strstr(st.msg, names[i]));
      failed++;
    }
  }
  c = tf_ckpt_shard_verify(s, &st);
  ck_assert_msg(c == TF_DATA_LOSS, "%s: verify gave %s", what, tf_code_name(c));
  ck_assert_int_eq(failed, 1); /* exactly the tensor whose byte changed */
  tf_ckpt_shard_close(s);
}

START_TEST(test_every_bit_and_truncation) {
  tt_rng_reseed(tt_seed() ^ 0xda);
  char dir[IO_PATH_MAX], path[IO_PATH_MAX], bad[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "small.shard");
  io_path(bad, dir, "bad.shard");
  tf_tensor *t[N_SMALL];
  const char *names[N_SMALL], *slices[N_SMALL];
  small_shard(path, t, names, slices);
  size_t n;
  uint8_t *good = io_read(path, &n);
  uint8_t *b = malloc(n + 8);
  for (size_t off = 0; off < n; off++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(b, good, n);
      b[off] ^= (uint8_t)(1u << bit);
      io_write(bad, b, n);
      char what[64];
      snprintf(what, sizeof what, "bit %d of byte %zu", bit, off);
      check_damaged(bad, t, names, slices, what);
    }
  }
  for (size_t len = 0; len < n; len++) {
    io_write(bad, good, len);
    tf_ckpt_shard *s;
    tf_status st;
    ck_assert_msg(tf_ckpt_shard_open(bad, &s, &st) == TF_DATA_LOSS, "cut at %zu", len);
    ck_assert_ptr_nonnull(strstr(st.msg, "bad.shard"));
  }
  memcpy(b, good, n);
  memcpy(b + n, "garbage!", 8); /* appended bytes move the footer */
  io_write(bad, b, n + 8);
  tf_ckpt_shard *s;
  ck_assert_int_eq(tf_ckpt_shard_open(bad, &s, NULL), TF_DATA_LOSS);
  free(b);
  free(good);
  tt_free(t, N_SMALL);
  io_tmpdir_remove(dir);
}
END_TEST

/* A uint8 tensor holding 2, relabelled bool with every CRC recomputed:
 * the CRCs pass, the value check does not. */
START_TEST(test_crafted_bool_refused) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "b.shard");
  tf_tensor *u = tt_tensor_i(TF_UINT8, tf_shape_of(1, 3), (int64_t[]){1, 2, 0});
  tf_status st;
  ck_assert(tf_ckpt_shard_write(path, (tf_ckpt_entry[]){{"m", NULL, u}}, 1, &st) == TF_OK);
  size_t n;
  uint8_t *b = io_read(path, &n);
  uint64_t io;
  memcpy(&io, b + n - 32, 8);
  /* index: u32 count, u32 1, "m", u32 0, u32 dtype */
  size_t dt_at = (size_t)io + 4 + 4 + 1 + 4;
  uint32_t dt;
  memcpy(&dt, b + dt_at, 4);
  ck_assert_uint_eq(dt, TF_UINT8);
  dt = TF_BOOL;
  memcpy(b + dt_at, &dt, 4);
  uint32_t crc = tf_crc32c(b, 16);
  crc = tf_crc32c_extend(crc, b + io, n - 32 - (size_t)io);
  crc = tf_crc32c_extend(crc, b + n - 32, 20);
  memcpy(b + n - 12, &crc, 4);
  io_write(path, b, n);
  tf_ckpt_shard *s;
  ck_assert_msg(tf_ckpt_shard_open(path, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_ckpt_shard_verify(s, &st) == TF_OK); /* the bytes are intact */
  tf_tensor *t;
  ck_assert_int_eq(tf_ckpt_shard_read(s, "m", NULL, TF_BOOL, &t, &st), TF_DATA_LOSS);
  ck_assert(strstr(st.msg, "'m'") && strstr(st.msg, "not 0 or 1"));
  tf_ckpt_shard_close(s);
  free(b);
  tf_tensor_unref(u);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_shard_read");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_slices_2d);
  tcase_add_test(tc, test_slices_3d);
  tcase_add_test(tc, test_read_errors);
  tcase_add_test(tc, test_every_bit_and_truncation);
  tcase_add_test(tc, test_crafted_bool_refused);
  suite_add_tcase(s, tc);
  return s;
}
