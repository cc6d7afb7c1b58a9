/* io_testlib.h: file fixtures shared by the input-pipeline tests: a
 * per-test temporary directory, raw file writing and reading, gzip files
 * written with zlib's own gz* API (independent of record_stream.c), IDX
 * files built byte by byte (big-endian header and elements), and TFRecord
 * files framed by hand from the published format (independent of our
 * writer). Static inline so each test includes what it uses. */
#ifndef TF_TEST_IO_TESTLIB_H
#define TF_TEST_IO_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/core/base/crc32c.h"
#include "test/unit/testutil.h"
#include "tf/input.h"

#define IO_PATH_MAX 512

/* A fresh directory under /tmp (removed by io_tmpdir_remove). */
static inline void io_tmpdir(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/tf_io_test.XXXXXX");
  ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp failed");
}

static inline void io_tmpdir_remove(const char *dir) {
  char cmd[IO_PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* dir/name into path. */
static inline const char *io_path(char *path, const char *dir, const char *name) {
  int k = snprintf(path, IO_PATH_MAX, "%s/%s", dir, name);
  ck_assert(k > 0 && k < IO_PATH_MAX);
  return path;
}

static inline void io_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert(n == 0 || fwrite(data, 1, n, f) == n);
  ck_assert_int_eq(fclose(f), 0);
}

/* The file's bytes (malloc'd; *n gets the size). */
static inline uint8_t *io_read(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* data as a gzip file through zlib's gzwrite. */
static inline void io_write_gz(const char *path, const void *data, size_t n) {
  gzFile f = gzopen(path, "wb");
  ck_assert_msg(f != NULL, "gzopen %s", path);
  ck_assert_int_eq(gzwrite(f, data, (unsigned)n), (int)n);
  ck_assert_int_eq(gzclose(f), Z_OK);
}

/* A growable byte buffer. */
typedef struct io_buf {
  uint8_t *p;
  size_t n, cap;
} io_buf;

static inline void io_put(io_buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  if (n > 0) memcpy(b->p + b->n, data, n);
  b->n += n;
}

static inline void io_put_be32(io_buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  io_put(b, x, 4);
}

static inline void io_put_le(io_buf *b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) {
    uint8_t x = (uint8_t)(v >> (8 * i));
    io_put(b, &x, 1);
  }
}

/* An IDX header: magic 00 00 type ndims, then the dims. */
static inline void io_idx_header(io_buf *b, uint8_t type, int ndims,
                                 const uint32_t *dims) {
  uint8_t m[4] = {0, 0, type, (uint8_t)ndims};
  io_put(b, m, 4);
  for (int i = 0; i < ndims; i++) io_put_be32(b, dims[i]);
}

/* A uint8 IDX file of count records of rows x cols (cols 0: labels, one
 * byte each), record i filled with (i * 7 + j) & 0xff, or i % 10 for
 * labels. */
static inline io_buf io_idx_u8(uint32_t count, uint32_t rows, uint32_t cols) {
  io_buf b = {0};
  uint32_t dims[3] = {count, rows, cols};
  io_idx_header(&b, 0x08, cols ? 3 : 1, dims);
  size_t per = cols ? (size_t)rows * cols : 1;
  for (uint32_t i = 0; i < count; i++) {
    for (size_t j = 0; j < per; j++) {
      uint8_t v = cols ? (uint8_t)((i * 7 + j) & 0xff) : (uint8_t)(i % 10);
      io_put(&b, &v, 1);
    }
  }
  return b;
}

/* One TFRecord framed by hand: uint64 length, masked CRC-32C of those 8
 * bytes, data, masked CRC-32C of the data (all little-endian). */
static inline void io_tfrecord(io_buf *b, const void *data, size_t n) {
  size_t start = b->n;
  io_put_le(b, n, 8);
  io_put_le(b, tf_crc32c_mask(tf_crc32c(b->p + start, 8)), 4);
  io_put(b, data, n);
  io_put_le(b, tf_crc32c_mask(tf_crc32c(data, n)), 4);
}

/* Reads every record of path: returns the final code (OUT_OF_RANGE at the
 * clean end) with its status in *st; *count gets the records read. */
static inline tf_code io_read_all(const char *path, const tf_record_options *o,
                                  int64_t *count, tf_status *st) {
  tf_record_reader *r;
  *count = 0;
  tf_code rc = tf_record_reader_open(path, o, &r, st);
  if (rc != TF_OK) return rc;
  const void *d;
  size_t n;
  while ((rc = tf_record_reader_next(r, &d, &n, st)) == TF_OK) (*count)++;
  tf_record_reader_close(r);
  return rc;
}

/* Asserts that st is code and its message contains every one of the
 * NULL-terminated fragments. */
#define io_assert_error(st, want, ...)                                        \
  io__assert_error((st), (want), __FILE__, __LINE__, (const char *[]){__VA_ARGS__, NULL})
static inline void io__assert_error(const tf_status *st, tf_code want,
                                    const char *file, int line,
                                    const char *const *frags) {
  ck_assert_msg(st->code == want, "%s:%d: want %s, got %s: %s", file, line,
                tf_code_name(want), tf_code_name(st->code), st->msg);
  for (int i = 0; frags[i]; i++) {
    ck_assert_msg(strstr(st->msg, frags[i]) != NULL,
                  "%s:%d: message '%s' lacks '%s'", file, line, st->msg, frags[i]);
  }
}

#endif
