/* record_io_test.c: the record formats. TFRecord: records framed by hand
 * from the published format read back with TensorFlow's "file:offset"
 * positions, our writer produces exactly those bytes (checked against
 * bytes computed by an independent Python CRC), random round trips in
 * every compression; IDX: uint8/int16/float32/float64 files built byte by
 * byte, raw and gzipped, read record by record and whole (tf_idx_load, with
 * big-endian conversion); every kind of damage is DATA_LOSS naming the file
 * and the offset; a sweep truncates and flips bytes at every offset of
 * small files and requires a clean answer each time (never a crash); the
 * Fashion-MNIST files, when installed, have the published counts. */
#include <math.h>

#include "lib/core/base/util.h"
#include "test/unit/core/serialize/io_testlib.h"

#define FMNIST "/usr/share/datasets/fashion-mnist/"

static const tf_record_options tfrec = {.format = TF_RECORD_TFRECORD};

/* ---- TFRecord -------------------------------------------------------------------- */

/* "hello" and "" as TensorFlow frames them; bytes from an independent
 * bit-by-bit CRC-32C in Python. */
static const uint8_t hello_empty[] = {
    0x05, 0, 0, 0, 0, 0, 0, 0, 0xea, 0xb2, 0x04, 0x3e, 'h', 'e', 'l', 'l', 'o',
    0xbb, 0x1f, 0x1c, 0x19,
    0, 0, 0, 0, 0, 0, 0, 0, 0x29, 0x03, 0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2};

START_TEST(test_tfrecord_published_bytes) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_write(io_path(p, dir, "a.tfrecord"), hello_empty, sizeof hello_empty);
  tf_record_reader *r;
  tf_status st;
  ck_assert_msg(tf_record_reader_open(p, &tfrec, &r, &st) == TF_OK, "%s", st.msg);
  const void *d;
  size_t n;
  ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OK);
  ck_assert_uint_eq(n, 5);
  ck_assert_int_eq(memcmp(d, "hello", 5), 0);
  ck_assert_int_eq(tf_record_reader_offset(r), 0);
  ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(tf_record_reader_offset(r), 21);
  ck_assert_int_eq(tf_record_reader_index(r), 2);
  ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OUT_OF_RANGE);
  ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OUT_OF_RANGE);
  ck_assert_int_eq(tf_record_reader_count(r), -1);
  ck_assert_int_eq(tf_record_reader_dtype(r), TF_STRING);
  ck_assert_ptr_null(tf_record_reader_record_shape(r));
  tf_record_reader_close(r);
  /* our writer writes exactly these bytes */
  tf_tfrecord_writer *w;
  io_path(p, dir, "b.tfrecord");
  ck_assert_int_eq(tf_tfrecord_writer_open(p, TF_COMPRESSION_AUTO, &w, &st), TF_OK);
  ck_assert_int_eq(tf_tfrecord_writer_write(w, "hello", 5, &st), TF_OK);
  ck_assert_int_eq(tf_tfrecord_writer_write(w, NULL, 0, &st), TF_OK);
  ck_assert_int_eq(tf_tfrecord_writer_close(w, &st), TF_OK);
  size_t fn;
  uint8_t *f = io_read(p, &fn);
  ck_assert_uint_eq(fn, sizeof hello_empty);
  ck_assert_int_eq(memcmp(f, hello_empty, fn), 0);
  free(f);
  io_tmpdir_remove(dir);
}
END_TEST

/* Random records through our writer, read back in every compression; the
 * plain file also equals the hand-framed bytes. */
START_TEST(test_tfrecord_round_trip) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  enum { N = 40 };
  uint8_t *recs[N];
  size_t lens[N];
  io_buf hand = {0};
  for (int i = 0; i < N; i++) {
    lens[i] = i == 7 ? 3000000 : (size_t)(tt_rand_u64() % 3000); /* one > 2 MiB */
    recs[i] = malloc(lens[i] + 1);
    for (size_t j = 0; j < lens[i]; j++) recs[i][j] = (uint8_t)tt_rand_u64();
    io_tfrecord(&hand, recs[i], lens[i]);
  }
  for (int c = TF_COMPRESSION_NONE; c <= TF_COMPRESSION_GZIP; c++) {
    tf_tfrecord_writer *w;
    tf_status st;
    io_path(p, dir, "r.tfrecord");
    ck_assert_int_eq(tf_tfrecord_writer_open(p, (tf_compression)c, &w, &st), TF_OK);
    for (int i = 0; i < N; i++) {
      ck_assert_int_eq(tf_tfrecord_writer_write(w, recs[i], lens[i], &st), TF_OK);
    }
    ck_assert_int_eq(tf_tfrecord_writer_close(w, &st), TF_OK);
    if (c == TF_COMPRESSION_NONE) {
      size_t fn;
      uint8_t *f = io_read(p, &fn);
      ck_assert_uint_eq(fn, hand.n);
      ck_assert_int_eq(memcmp(f, hand.p, fn), 0);
      free(f);
    }
    tf_record_options o = {.format = TF_RECORD_TFRECORD, .compression = (tf_compression)c};
    tf_record_reader *r;
    ck_assert_int_eq(tf_record_reader_open(p, &o, &r, &st), TF_OK);
    int64_t off = 0;
    for (int i = 0; i < N; i++) {
      const void *d;
      size_t n;
      ck_assert_msg(tf_record_reader_next(r, &d, &n, &st) == TF_OK, "%s", st.msg);
      ck_assert_uint_eq(n, lens[i]);
      ck_assert(n == 0 || memcmp(d, recs[i], n) == 0);
      ck_assert_int_eq(tf_record_reader_offset(r), off);
      off += (int64_t)lens[i] + 16;
    }
    const void *d;
    size_t n;
    ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OUT_OF_RANGE);
    tf_record_reader_close(r);
  }
  for (int i = 0; i < N; i++) free(recs[i]);
  free(hand.p);
  io_tmpdir_remove(dir);
}
END_TEST

/* Each kind of damage, with its offset. */
START_TEST(test_tfrecord_damage) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(p, dir, "d.tfrecord");
  io_buf b = {0};
  io_tfrecord(&b, "first", 5);   /* offset 0, 21 bytes */
  io_tfrecord(&b, "second", 6);  /* offset 21, 22 bytes */
  tf_status st;
  int64_t n;
  struct { size_t at; uint8_t x; size_t len; const char *want; } cases[] = {
      {21 + 3, 0x01, 43, "corrupted record at offset 21: length CRC mismatch"},
      {21 + 9, 0x80, 43, "corrupted record at offset 21: length CRC mismatch"},
      {21 + 14, 0x20, 43, "corrupted record at offset 21: data CRC mismatch"},
      {21 + 19, 0xff, 43, "corrupted record at offset 21: data CRC mismatch"},
      {0, 0, 21 + 7, "truncated record at offset 21: header has 7 of 12 bytes"},
      {0, 0, 21 + 15, "truncated record at offset 21: length 6 exceeds"},
      {0, 0, 21 + 20, "truncated record at offset 21: length 6 exceeds"},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    b.p[cases[i].at] ^= cases[i].x;
    io_write(p, b.p, cases[i].len);
    ck_assert_int_eq(io_read_all(p, &tfrec, &n, &st), TF_DATA_LOSS);
    ck_assert_int_eq(n, 1); /* the first record was fine */
    io_assert_error(&st, TF_DATA_LOSS, p, cases[i].want);
    b.p[cases[i].at] ^= cases[i].x;
  }
  /* compressed: offsets are of the decompressed data */
  io_write_gz(p, b.p, 21 + 15);
  tf_record_options gz = {.format = TF_RECORD_TFRECORD, .compression = TF_COMPRESSION_GZIP};
  ck_assert_int_eq(io_read_all(p, &gz, &n, &st), TF_DATA_LOSS);
  io_assert_error(&st, TF_DATA_LOSS, p, "truncated record at offset 21 of the "
                  "decompressed data: 3 of 6 data bytes");
  /* a huge length with a valid CRC in a compressed file: no huge allocation */
  io_buf h = {0};
  io_put_le(&h, (uint64_t)1 << 60, 8);
  io_put_le(&h, tf_crc32c_mask(tf_crc32c(h.p, 8)), 4);
  io_put(&h, "abc", 3);
  io_write_gz(p, h.p, h.n);
  ck_assert_int_eq(io_read_all(p, &gz, &n, &st), TF_DATA_LOSS);
  io_assert_error(&st, TF_DATA_LOSS, "truncated record at offset 0");
  io_write(p, h.p, h.n);
  ck_assert_int_eq(io_read_all(p, &tfrec, &n, &st), TF_DATA_LOSS);
  io_assert_error(&st, TF_DATA_LOSS, "exceeds the bytes left");
  /* missing file */
  io_path(p, dir, "nope.tfrecord");
  ck_assert_int_eq(io_read_all(p, &tfrec, &n, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, p);
  free(h.p);
  free(b.p);
  io_tmpdir_remove(dir);
}
END_TEST

/* ---- IDX -------------------------------------------------------------------------- */

START_TEST(test_idx_u8_raw_and_gzip) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_buf img = io_idx_u8(5, 3, 4);
  for (int gz = 0; gz < 2; gz++) {
    io_path(p, dir, gz ? "img.gz" : "img");
    if (gz) io_write_gz(p, img.p, img.n);
    else io_write(p, img.p, img.n);
    tf_record_options o = tf_record_options_idx();
    o.idx_dtype = TF_UINT8;
    o.idx_record_shape = tf_shape_of(2, 3, 4);
    tf_record_reader *r;
    tf_status st;
    ck_assert_msg(tf_record_reader_open(p, &o, &r, &st) == TF_OK, "%s", st.msg);
    ck_assert_int_eq(tf_record_reader_count(r), 5);
    ck_assert_int_eq(tf_record_reader_dtype(r), TF_UINT8);
    ck_assert(tf_shape_equal(tf_record_reader_record_shape(r), &o.idx_record_shape));
    for (int i = 0; i < 5; i++) {
      const void *d;
      size_t n;
      ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OK);
      ck_assert_uint_eq(n, 12);
      for (int j = 0; j < 12; j++) {
        ck_assert_uint_eq(((const uint8_t *)d)[j], (uint8_t)(i * 7 + j));
      }
      ck_assert_int_eq(tf_record_reader_offset(r), 16 + 12 * i);
    }
    const void *d;
    size_t n;
    ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OUT_OF_RANGE);
    tf_record_reader_close(r);
    tf_tensor *t;
    ck_assert_int_eq(tf_idx_load(p, NULL, &t, &st), TF_OK);
    tt_assert_shape(t, 3, 5, 3, 4);
    ck_assert_int_eq(memcmp(t->data, img.p + 16, 60), 0);
    tf_tensor_unref(t);
  }
  /* labels: one byte per record, record shape [] */
  io_buf lab = io_idx_u8(12, 0, 0);
  io_write_gz(io_path(p, dir, "lab.gz"), lab.p, lab.n);
  tf_tensor *t;
  tf_status st;
  tf_record_options o = tf_record_options_idx();
  o.idx_record_shape = tf_shape_scalar();
  ck_assert_int_eq(tf_idx_load(p, &o, &t, &st), TF_OK);
  tt_assert_shape(t, 1, 12);
  for (int i = 0; i < 12; i++) ck_assert_uint_eq(((uint8_t *)t->data)[i], i % 10);
  tf_tensor_unref(t);
  free(img.p);
  free(lab.p);
  io_tmpdir_remove(dir);
}
END_TEST

/* Multi-byte elements are big-endian in the file. */
START_TEST(test_idx_wide_types) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  struct { uint8_t code; tf_dtype dt; int size; } types[] = {
      {0x09, TF_INT8, 1}, {0x0B, TF_INT16, 2}, {0x0C, TF_INT32, 4},
      {0x0D, TF_FLOAT32, 4}, {0x0E, TF_FLOAT64, 8}};
  for (size_t k = 0; k < TF_ARRAY_LEN(types); k++) {
    io_buf b = {0};
    uint32_t dims[2] = {3, 2};
    io_idx_header(&b, types[k].code, 2, dims);
    double want[6];
    for (int i = 0; i < 6; i++) {
      want[i] = (double)(i * 37 - 100);
      uint64_t bits = 0;
      if (types[k].dt == TF_FLOAT32) {
        float f = (float)want[i] / 4;
        uint32_t u;
        memcpy(&u, &f, 4);
        bits = u;
        want[i] = f;
      } else if (types[k].dt == TF_FLOAT64) {
        double f = want[i] / 8;
        memcpy(&bits, &f, 8);
        want[i] = f;
      } else {
        if (types[k].dt == TF_INT8) want[i] = (int8_t)want[i];
        bits = (uint64_t)(int64_t)want[i];
      }
      for (int j = types[k].size - 1; j >= 0; j--) {
        uint8_t x = (uint8_t)(bits >> (8 * j));
        io_put(&b, &x, 1);
      }
    }
    io_write_gz(io_path(p, dir, "w.gz"), b.p, b.n);
    tf_tensor *t;
    tf_status st;
    ck_assert_msg(tf_idx_load(p, NULL, &t, &st) == TF_OK, "%s", st.msg);
    ck_assert_int_eq(t->dtype, types[k].dt);
    tt_assert_shape(t, 2, 3, 2);
    for (int i = 0; i < 6; i++) ck_assert_double_eq(tf_tensor_get_f64(t, i), want[i]);
    tf_tensor_unref(t);
    free(b.p);
  }
  io_tmpdir_remove(dir);
}
END_TEST

typedef struct idx_case {
  const char *what;
  uint8_t magic[4];
  uint32_t dims[3];
  int trunc;          /* bytes cut from the end (negative: appended) */
  tf_dtype want_dt;   /* expected-type check, INVALID: any */
  int want_rank;      /* expected record rank, -1: any */
  const char *msg[2]; /* for raw, for gzip */
} idx_case;

static const idx_case idx_cases[] = {
    {"bad magic", {1, 0, 8, 3}, {4, 2, 2}, 0, 0, -1,
     {"bad IDX magic 01 00 08 03 at offset 0", NULL}},
    {"unknown type", {0, 0, 7, 3}, {4, 2, 2}, 0, 0, -1,
     {"unknown IDX element type 0x07 at offset 2", NULL}},
    {"no dims", {0, 0, 8, 0}, {4, 2, 2}, 0, 0, -1,
     {"IDX ndims 0 at offset 3", NULL}},
    {"truncated body", {0, 0, 8, 3}, {4, 2, 2}, 3, 0, -1,
     {"truncated at offset 29: record 3 of 4 (at offset 28, 4 bytes)",
      "truncated record 3 of 4 at offset 28 of the decompressed data: 1 of 4"}},
    {"trailing bytes", {0, 0, 8, 3}, {4, 2, 2}, -2, 0, -1,
     {"2 trailing bytes after the last of 4 records, at offset 32",
      "trailing bytes after the last of 4 records, at offset 32 of the "
      "decompressed data"}},
    {"wrong type", {0, 0, 8, 3}, {4, 2, 2}, 0, TF_INT32, -1,
     {"IDX element type is uint8 (0x08 at offset 2), expected int32", NULL}},
    {"wrong dims", {0, 0, 8, 3}, {4, 2, 2}, 0, 0, 1,
     {"IDX record dims are [2,2] (from offset 8), expected [4]", NULL}},
};

START_TEST(test_idx_damage) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  for (size_t k = 0; k < TF_ARRAY_LEN(idx_cases); k++) {
    const idx_case *c = &idx_cases[k];
    io_buf b = {0};
    io_put(&b, c->magic, 4);
    for (int i = 0; i < 3; i++) io_put_be32(&b, c->dims[i]);
    for (int i = 0; i < 16; i++) io_put(&b, "\x05", 1);
    size_t n = b.n - (size_t)(c->trunc > 0 ? c->trunc : 0);
    if (c->trunc < 0) io_put(&b, "\x01\x02\x03", (size_t)-c->trunc);
    n = c->trunc < 0 ? b.n : n;
    tf_record_options o = tf_record_options_idx();
    o.idx_dtype = c->want_dt;
    if (c->want_rank >= 0) o.idx_record_shape = tf_shape_of(c->want_rank, 4);
    for (int gz = 0; gz < 2; gz++) {
      io_path(p, dir, gz ? "x.gz" : "x");
      if (gz) io_write_gz(p, b.p, n);
      else io_write(p, b.p, n);
      tf_status st;
      int64_t count;
      const char *want = c->msg[gz] ? c->msg[gz] : c->msg[0];
      ck_assert_msg(io_read_all(p, &o, &count, &st) == TF_DATA_LOSS, "%s: %s",
                    c->what, st.msg);
      io_assert_error(&st, TF_DATA_LOSS, p, want);
      tf_tensor *t;
      ck_assert_int_eq(tf_idx_load(p, &o, &t, &st), TF_DATA_LOSS);
      io_assert_error(&st, TF_DATA_LOSS, p, "offset");
    }
    free(b.p);
  }
  tf_status st;
  tf_tensor *t;
  ck_assert_int_eq(tf_idx_load("/nonexistent/x-idx1-ubyte.gz", NULL, &t, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, "/nonexistent/x-idx1-ubyte.gz");
  ck_assert_int_eq(tf_idx_load("x", &tfrec, &t, &st), TF_INVALID_ARGUMENT);
  /* a gzip file read as plain IDX says so */
  io_buf img = io_idx_u8(2, 2, 2);
  io_write_gz(io_path(p, dir, "g.gz"), img.p, img.n);
  tf_record_options plain = tf_record_options_idx();
  plain.compression = TF_COMPRESSION_NONE;
  int64_t count;
  ck_assert_int_eq(io_read_all(p, &plain, &count, &st), TF_DATA_LOSS);
  io_assert_error(&st, TF_DATA_LOSS, "bad IDX magic 1f 8b", "gzip-compressed");
  free(img.p);
  io_tmpdir_remove(dir);
}
END_TEST

/* ---- corruption sweep --------------------------------------------------------------- */

/* Reads path fully; the answer must be the clean end or DATA_LOSS naming
 * the file and an offset, never anything else (and never a crash: this
 * runs under ASan in CI). *digest gets a CRC of every record read, in
 * order, with its length. Returns the code. */
static tf_code sweep_read(const char *path, const tf_record_options *o,
                          int64_t *count, uint32_t *digest) {
  tf_status st;
  tf_record_reader *r;
  *count = 0;
  *digest = 0;
  tf_code rc = tf_record_reader_open(path, o, &r, &st);
  if (rc == TF_OK) {
    const void *d;
    size_t n;
    while ((rc = tf_record_reader_next(r, &d, &n, &st)) == TF_OK) {
      (*count)++;
      *digest = tf_crc32c_extend(tf_crc32c_extend(*digest, &n, sizeof n), d, n);
    }
    tf_record_reader_close(r);
  }
  if (rc == TF_DATA_LOSS) {
    ck_assert_msg(strstr(st.msg, path) && strstr(st.msg, "offset"), "%s", st.msg);
  } else {
    ck_assert_msg(rc == TF_OUT_OF_RANGE, "%s: %s", tf_code_name(rc), st.msg);
  }
  tf_tensor *t = NULL;
  if (o->format == TF_RECORD_IDX && tf_idx_load(path, o, &t, &st) != TF_OK) {
    ck_assert_int_eq(st.code, TF_DATA_LOSS);
    ck_assert_int_eq(rc, TF_DATA_LOSS); /* both ways agree */
  }
  tf_tensor_unref(t);
  return rc;
}

/* Truncates f at every length and flips each byte three ways. IDX
 * headers and gzip streams catch every truncation (a plain TFRecord file
 * cut at a record boundary just ends there). With checked (TFRecord
 * framing, gzip's CRC) a flipped byte is DATA_LOSS or harmless: the same
 * records come back (gzip's FTEXT flag, mtime, xfl and os fields and the
 * padding bits of the last deflate byte are checked by no one); a plain
 * IDX file cannot notice a flipped pixel, only a broken header. */
static void sweep(const char *path, const uint8_t *f, size_t n,
                  const tf_record_options *o, bool checked, int64_t records) {
  uint8_t *g = malloc(n);
  int64_t count;
  uint32_t want, got;
  io_write(path, f, n);
  ck_assert_int_eq(sweep_read(path, o, &count, &want), TF_OUT_OF_RANGE);
  ck_assert_int_eq(count, records);
  bool cut_fails = o->format == TF_RECORD_IDX || o->compression == TF_COMPRESSION_GZIP;
  for (size_t cut = 0; cut < n; cut++) {
    io_write(path, f, cut);
    tf_code rc = sweep_read(path, o, &count, &got);
    ck_assert_msg(rc == TF_DATA_LOSS || !cut_fails, "cut at %zu not noticed", cut);
    ck_assert_int_le(count, records);
  }
  static const uint8_t flips[3] = {0x01, 0x80, 0xff};
  for (size_t at = 0; at < n; at++) {
    for (int k = 0; k < 3; k++) {
      memcpy(g, f, n);
      g[at] ^= flips[k];
      io_write(path, g, n);
      tf_code rc = sweep_read(path, o, &count, &got);
      ck_assert_msg(rc == TF_DATA_LOSS || !checked ||
                    (count == records && got == want),
                    "byte %zu ^ 0x%02x changed the records unnoticed", at, flips[k]);
    }
  }
  free(g);
}

START_TEST(test_corruption_sweep) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(p, dir, "s");
  io_buf t = {0};
  const char *recs[4] = {"alpha", "", "gamma-gamma", "d"};
  for (int i = 0; i < 4; i++) io_tfrecord(&t, recs[i], strlen(recs[i]));
  sweep(p, t.p, t.n, &tfrec, true, 4);
  io_buf img = io_idx_u8(4, 3, 3);
  tf_record_options idx = tf_record_options_idx();
  sweep(p, img.p, img.n, &idx, false, 4);
  /* gzipped: a file made by zlib, swept whole */
  char q[IO_PATH_MAX];
  io_write_gz(io_path(q, dir, "src.gz"), img.p, img.n);
  size_t gn;
  uint8_t *g = io_read(q, &gn);
  tf_record_options idx_gz = tf_record_options_idx();
  idx_gz.compression = TF_COMPRESSION_GZIP;
  sweep(p, g, gn, &idx_gz, true, 4);
  free(g);
  io_write_gz(q, t.p, t.n);
  g = io_read(q, &gn);
  tf_record_options t_gz = {.format = TF_RECORD_TFRECORD, .compression = TF_COMPRESSION_GZIP};
  sweep(p, g, gn, &t_gz, true, 4);
  free(g);
  free(t.p);
  free(img.p);
  io_tmpdir_remove(dir);
}
END_TEST

/* ---- Fashion-MNIST ----------------------------------------------------------------------- */

START_TEST(test_fashion_mnist) {
  if (access(FMNIST "t10k-labels-idx1-ubyte.gz", R_OK) != 0) {
    fprintf(stderr, "record_io_test: %s not installed (INSTALL_EXTRAS=1 "
            "scripts/install-deps.sh); Fashion-MNIST checks skipped\n", FMNIST);
    return;
  }
  struct { const char *file; int64_t count; int rank; } f[4] = {
      {FMNIST "train-images-idx3-ubyte.gz", 60000, 2},
      {FMNIST "train-labels-idx1-ubyte.gz", 60000, 0},
      {FMNIST "t10k-images-idx3-ubyte.gz", 10000, 2},
      {FMNIST "t10k-labels-idx1-ubyte.gz", 10000, 0}};
  for (int k = 0; k < 4; k++) {
    tf_record_options o = tf_record_options_idx();
    o.idx_dtype = TF_UINT8;
    o.idx_record_shape = f[k].rank ? tf_shape_of(2, 28, 28) : tf_shape_scalar();
    tf_record_reader *r;
    tf_status st;
    ck_assert_msg(tf_record_reader_open(f[k].file, &o, &r, &st) == TF_OK, "%s", st.msg);
    ck_assert_int_eq(tf_record_reader_count(r), f[k].count);
    for (int i = 0; i < 100; i++) {
      const void *d;
      size_t n;
      ck_assert_int_eq(tf_record_reader_next(r, &d, &n, &st), TF_OK);
      ck_assert_uint_eq(n, f[k].rank ? 784 : 1);
      if (!f[k].rank) ck_assert_uint_le(*(const uint8_t *)d, 9);
    }
    tf_record_reader_close(r);
    if (f[k].rank == 0) {
      /* every label in [0, 9]; the classes are balanced */
      tf_tensor *t;
      ck_assert_int_eq(tf_idx_load(f[k].file, &o, &t, &st), TF_OK);
      tt_assert_shape(t, 1, f[k].count);
      int64_t per[10] = {0}, bad = 0;
      for (int64_t i = 0; i < t->n; i++) {
        uint8_t v = ((uint8_t *)t->data)[i];
        if (v > 9) bad++;
        else per[v]++;
      }
      ck_assert_int_eq(bad, 0);
      for (int c = 0; c < 10; c++) ck_assert_int_eq(per[c], f[k].count / 10);
      tf_tensor_unref(t);
    }
  }
}
END_TEST

START_TEST(test_compression_names) {
  tf_compression c;
  tf_status st;
  ck_assert_int_eq(tf_compression_from_name("", &c, &st), TF_OK);
  ck_assert_int_eq(c, TF_COMPRESSION_AUTO);
  ck_assert_int_eq(tf_compression_from_name("GZIP", &c, &st), TF_OK);
  ck_assert_int_eq(c, TF_COMPRESSION_GZIP);
  ck_assert_int_eq(tf_compression_from_name("ZLIB", &c, &st), TF_OK);
  ck_assert_int_eq(c, TF_COMPRESSION_ZLIB);
  ck_assert_int_eq(tf_compression_from_name("NONE", &c, &st), TF_OK);
  ck_assert_int_eq(c, TF_COMPRESSION_NONE);
  ck_assert_int_eq(tf_compression_from_name("gzip", &c, &st), TF_INVALID_ARGUMENT);
  io_assert_error(&st, TF_INVALID_ARGUMENT, "'gzip'");
  tf_record_options bad = {.format = (tf_record_format)7};
  tf_record_reader *r;
  ck_assert_int_eq(tf_record_reader_open("/x", &bad, &r, &st), TF_INVALID_ARGUMENT);
  tf_record_reader_close(NULL);
  ck_assert_int_eq(tf_tfrecord_writer_close(NULL, &st), TF_OK);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("record_io");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_tfrecord_published_bytes);
  tcase_add_test(tc, test_tfrecord_round_trip);
  tcase_add_test(tc, test_tfrecord_damage);
  tcase_add_test(tc, test_idx_u8_raw_and_gzip);
  tcase_add_test(tc, test_idx_wide_types);
  tcase_add_test(tc, test_idx_damage);
  tcase_add_test(tc, test_corruption_sweep);
  tcase_add_test(tc, test_fashion_mnist);
  tcase_add_test(tc, test_compression_names);
  suite_add_tcase(s, tc);
  return s;
}
