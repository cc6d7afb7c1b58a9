/* record_io_fuzz.c: libFuzzer harness for the record file readers. The
 * first byte picks the format (TFRecord or IDX) and compression (none,
 * ZLIB, GZIP, AUTO); the rest is the file, served from a memfd through
 * /proc/self/fd. Every record must come back within the file's bounds, and
 * the reader must end with the clean end (OUT_OF_RANGE) or DATA_LOSS
 * naming the file and an offset; tf_idx_load must agree with reading
 * record by record. An IDX file may declare billions of empty records
 * (a dim of 0), which is valid and only slow: at most MAX_RECORDS are read.
 * Seeds: test/fuzz/corpus/record_io/. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test/fuzz/fuzz_util.h"
#include "tf/input.h"

#define MAX_RECORDS 65536

static void check_end(tf_code c, const tf_status *st, const char *path) {
  if (c == TF_DATA_LOSS) {
    FUZZ_CHECK(strstr(st->msg, path) != NULL && strstr(st->msg, "offset") != NULL, st);
  } else {
    FUZZ_CHECK(c == TF_OUT_OF_RANGE || c == TF_RESOURCE_EXHAUSTED, st);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) {
    return 0;
  }
  int fd = memfd_create("record_io_fuzz", 0);
  if (fd < 0 || write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
    abort();
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  tf_record_options o = tf_record_options_idx();
  o.format = (data[0] & 1) ? TF_RECORD_IDX : TF_RECORD_TFRECORD;
  o.compression = (tf_compression)((data[0] >> 1) & 3);
  tf_status st;
  tf_status_init(&st);
  tf_record_reader *r;
  int64_t records = 0;
  size_t bytes = 0;
  tf_code c = tf_record_reader_open(path, &o, &r, &st);
  if (c == TF_OK) {
    const void *d;
    size_t n;
    while (records < MAX_RECORDS &&
           (c = tf_record_reader_next(r, &d, &n, &st)) == TF_OK) {
      records++;
      bytes += n;
      /* a record cannot be longer than what decompression could give */
      FUZZ_CHECK(n == 0 || d != NULL, &st);
    }
    FUZZ_CHECK(tf_record_reader_index(r) == records, &st);
    tf_record_reader_close(r);
  }
  if (records == MAX_RECORDS) {
    close(fd);
    return 0;
  }
  check_end(c, &st, path);
  if (o.format == TF_RECORD_IDX) {
    tf_tensor *t = NULL;
    tf_code lc = tf_idx_load(path, &o, &t, &st);
    /* whole-file loading agrees with reading record by record */
    FUZZ_CHECK((lc == TF_OK) == (c == TF_OUT_OF_RANGE) || lc == TF_RESOURCE_EXHAUSTED, &st);
    if (lc == TF_OK) {
      FUZZ_CHECK(t->nbytes == bytes && t->shape.dims[0] == records, &st);
    }
    tf_tensor_unref(t);
  }
  close(fd);
  return 0;
}
