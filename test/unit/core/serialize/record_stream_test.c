/* record_stream_test.c: the byte streams under the record formats. Plain,
 * ZLIB and GZIP writes read back identically in pieces of every size, and
 * the compressed files are checked independently (gzip(1) and zlib's
 * uncompress must give the plain bytes); AUTO detects gzip; several gzip
 * members read as one stream; damage (truncation, flipped bytes, trailing
 * garbage after a zlib stream) is DATA_LOSS naming the path and an offset;
 * open errors name the path with the right code. */
#include "lib/core/serialize/record_stream.h"
#include "test/unit/core/serialize/io_testlib.h"

static uint8_t *random_bytes(size_t n, bool compressible) {
  uint8_t *p = malloc(n + 1);
  for (size_t i = 0; i < n; i++) {
    p[i] = compressible ? (uint8_t)("abcdefgh"[tt_rand_u64() % 8]) : (uint8_t)tt_rand_u64();
  }
  return p;
}

static void write_stream(const char *path, tf_compression c, const uint8_t *d,
                         size_t n) {
  tf__outstream *o;
  tf_status st;
  ck_assert_msg(tf__outstream_open(path, c, &o, &st) == TF_OK, "%s", st.msg);
  /* uneven pieces */
  for (size_t at = 0, k = 1; at < n; at += k, k = k * 3 + 1) {
    k = k > n - at ? n - at : k;
    ck_assert_msg(tf__outstream_write(o, d + at, k, &st) == TF_OK, "%s", st.msg);
  }
  ck_assert_msg(tf__outstream_close(o, &st) == TF_OK, "%s", st.msg);
}

/* Reads path back in pieces of `piece` bytes and compares with d. */
static void check_read(const char *path, tf_compression c, const uint8_t *d,
                       size_t n, size_t piece) {
  tf__instream *in;
  tf_status st;
  ck_assert_msg(tf__instream_open(path, c, &in, &st) == TF_OK, "%s", st.msg);
  uint8_t *buf = malloc(piece);
  size_t at = 0, got;
  do {
    ck_assert_msg(tf__instream_read(in, buf, piece, &got, &st) == TF_OK, "%s", st.msg);
    ck_assert_uint_le(at + got, n);
    ck_assert_int_eq(memcmp(buf, d + at, got), 0);
    at += got;
    ck_assert_int_eq(tf__instream_offset(in), (int64_t)at);
  } while (got == piece);
  ck_assert_uint_eq(at, n);
  /* the end stays the end */
  ck_assert_int_eq(tf__instream_read(in, buf, piece, &got, &st), TF_OK);
  ck_assert_uint_eq(got, 0);
  free(buf);
  tf__instream_close(in);
}

START_TEST(test_round_trips) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX], q[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  static const tf_compression cs[3] = {TF_COMPRESSION_NONE, TF_COMPRESSION_ZLIB,
                                       TF_COMPRESSION_GZIP};
  static const size_t sizes[4] = {0, 1, 1000, 700 * 1000}; /* > 2 buffers */
  static const size_t pieces[4] = {1, 7, 4096, 600 * 1000};
  for (int s = 0; s < 4; s++) {
    uint8_t *d = random_bytes(sizes[s], s % 2 == 0);
    for (int c = 0; c < 3; c++) {
      io_path(p, dir, "f");
      write_stream(p, cs[c], d, sizes[s]);
      for (int k = 0; k < 4; k++) {
        if (sizes[s] > 100000 && pieces[k] < 100) continue; /* too slow */
        check_read(p, cs[c], d, sizes[s], pieces[k]);
      }
      size_t fn;
      uint8_t *raw = io_read(p, &fn);
      if (cs[c] == TF_COMPRESSION_NONE) {
        ck_assert_uint_eq(fn, sizes[s]);
        ck_assert(sizes[s] == 0 || memcmp(raw, d, fn) == 0);
      } else if (cs[c] == TF_COMPRESSION_ZLIB) {
        /* independent: zlib's one-shot uncompress */
        uLongf out_n = (uLongf)sizes[s] + 1;
        uint8_t *out = malloc(out_n);
        ck_assert_int_eq(uncompress(out, &out_n, raw, fn), Z_OK);
        ck_assert_uint_eq(out_n, sizes[s]);
        ck_assert(sizes[s] == 0 || memcmp(out, d, out_n) == 0);
        free(out);
      } else {
        /* independent: gzip(1) */
        ck_assert(raw[0] == 0x1f && raw[1] == 0x8b);
        char cmd[3 * IO_PATH_MAX];
        snprintf(cmd, sizeof cmd, "gzip -dc < '%s' > '%s'", p, io_path(q, dir, "plain"));
        ck_assert_int_eq(system(cmd), 0);
        size_t qn;
        uint8_t *plain = io_read(q, &qn);
        ck_assert_uint_eq(qn, sizes[s]);
        ck_assert(qn == 0 || memcmp(plain, d, qn) == 0);
        free(plain);
        /* AUTO detects gzip */
        check_read(p, TF_COMPRESSION_AUTO, d, sizes[s], 4096);
      }
      free(raw);
    }
    free(d);
  }
  io_tmpdir_remove(dir);
}
END_TEST

/* Two gzip members back to back read as one stream (as gzip -d). */
START_TEST(test_gzip_members) {
  char dir[IO_PATH_MAX], a[IO_PATH_MAX], b[IO_PATH_MAX], c[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_write_gz(io_path(a, dir, "a.gz"), "hello ", 6);
  io_write_gz(io_path(b, dir, "b.gz"), "world", 5);
  char cmd[4 * IO_PATH_MAX];
  snprintf(cmd, sizeof cmd, "cat '%s' '%s' > '%s'", a, b, io_path(c, dir, "c.gz"));
  ck_assert_int_eq(system(cmd), 0);
  check_read(c, TF_COMPRESSION_GZIP, (const uint8_t *)"hello world", 11, 3);
  /* AUTO leaves a plain file alone */
  io_write(a, "\x1f plain", 7);
  check_read(a, TF_COMPRESSION_AUTO, (const uint8_t *)"\x1f plain", 7, 100);
  io_tmpdir_remove(dir);
}
END_TEST

/* Reads everything; returns the code of the first failure (or OK). */
static tf_code drain(const char *path, tf_compression c, tf_status *st) {
  tf__instream *in;
  tf_code rc = tf__instream_open(path, c, &in, st);
  if (rc != TF_OK) return rc;
  uint8_t buf[999];
  size_t got;
  do {
    rc = tf__instream_read(in, buf, sizeof buf, &got, st);
  } while (rc == TF_OK && got == sizeof buf);
  if (rc != TF_OK) {
    /* errors are sticky */
    tf_status again;
    ck_assert_int_eq(tf__instream_read(in, buf, 1, &got, &again), rc);
    ck_assert_str_eq(again.msg, st->msg);
  }
  tf__instream_close(in);
  return rc;
}

START_TEST(test_damage) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(p, dir, "d.gz");
  size_t n = 100000;
  uint8_t *d = random_bytes(n, false);
  for (int c = TF_COMPRESSION_ZLIB; c <= TF_COMPRESSION_GZIP; c++) {
    write_stream(p, (tf_compression)c, d, n);
    size_t fn;
    uint8_t *f = io_read(p, &fn);
    tf_status st;
    /* truncated anywhere: DATA_LOSS naming path and offset */
    for (size_t cut = 1; cut < fn; cut += fn / 37 + 1) {
      io_write(p, f, cut);
      ck_assert_int_eq(drain(p, (tf_compression)c, &st), TF_DATA_LOSS);
      io_assert_error(&st, TF_DATA_LOSS, p, "offset", "of the decompressed data");
    }
    /* a flipped byte in the deflate data or the trailer */
    for (size_t at = 20; at < fn; at += fn / 23 + 1) {
      f[at] ^= 0x5a;
      io_write(p, f, fn);
      ck_assert_int_eq(drain(p, (tf_compression)c, &st), TF_DATA_LOSS);
      io_assert_error(&st, TF_DATA_LOSS, p, "offset");
      f[at] ^= 0x5a;
    }
    /* the last bytes (the adler32 / crc32 trailer) */
    ck_assert_uint_gt(fn, 100);
    uint8_t *last = f + fn - 5;
    *last ^= 1;
    io_write(p, f, fn);
    ck_assert_int_eq(drain(p, (tf_compression)c, &st), TF_DATA_LOSS);
    io_assert_error(&st, TF_DATA_LOSS, "corrupt compressed data");
    *last ^= 1;
    /* trailing garbage */
    uint8_t *g = malloc(fn + 3);
    memcpy(g, f, fn);
    memcpy(g + fn, "xyz", 3);
    io_write(p, g, fn + 3);
    ck_assert_int_eq(drain(p, (tf_compression)c, &st), TF_DATA_LOSS);
    if (c == TF_COMPRESSION_ZLIB) {
      io_assert_error(&st, TF_DATA_LOSS, "trailing bytes after the zlib stream",
                      "offset 100000");
    }
    free(g);
    free(f);
  }
  free(d);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_open_errors) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  tf__instream *in;
  tf__outstream *out;
  tf_status st;
  io_path(p, dir, "missing");
  ck_assert_int_eq(tf__instream_open(p, TF_COMPRESSION_NONE, &in, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, p, "cannot open");
  ck_assert_int_eq(tf__instream_open(dir, TF_COMPRESSION_NONE, &in, &st),
                   TF_FAILED_PRECONDITION);
  io_assert_error(&st, TF_FAILED_PRECONDITION, dir);
  io_path(p, dir, "no/such/dir/file");
  ck_assert_int_eq(tf__outstream_open(p, TF_COMPRESSION_NONE, &out, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, p, "cannot create");
  ck_assert(tf__outstream_close(NULL, &st) == TF_OK);
  tf__instream_close(NULL);
  /* an empty compressed file is truncated data */
  io_path(p, dir, "empty");
  io_write(p, "", 0);
  ck_assert_int_eq(drain(p, TF_COMPRESSION_GZIP, &st), TF_DATA_LOSS);
  ck_assert_int_eq(drain(p, TF_COMPRESSION_NONE, &st), TF_OK);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("record_stream");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_round_trips);
  tcase_add_test(tc, test_gzip_members);
  tcase_add_test(tc, test_damage);
  tcase_add_test(tc, test_open_errors);
  suite_add_tcase(s, tc);
  return s;
}
