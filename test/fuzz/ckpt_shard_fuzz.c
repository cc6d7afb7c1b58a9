/* ckpt_shard_fuzz.c: libFuzzer harness for checkpoint shard files
 * (lib/core/serialize/ckpt_shard_read.c), opened from a memfd. The first
 * byte picks a mode: even, the rest is the file as is; odd, the harness
 * first rewrites the footer's index CRC to match, so that mutations reach
 * the index parser instead of stopping at the CRC. Open may only fail
 * with DATA_LOSS or INVALID_ARGUMENT (UNIMPLEMENTED for another version);
 * an opened file's entries must read (by their own slice, and whole) as
 * OK or DATA_LOSS, and one whose entries all read must be rewritten by
 * tf_ckpt_shard_write (unless it refuses them: slices that overlap, which
 * the reader tolerates) into a file that reads back equal. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "test/fuzz/fuzz_util.h"

static int memfd_of(const uint8_t *data, size_t size) {
  int fd = memfd_create("shard", MFD_CLOEXEC);
  if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size)) abort();
  return fd;
}

/* Rewrites the index CRC in a copy of data (when the footer's offsets fit). */
static uint8_t *fix_crc(const uint8_t *data, size_t size) {
  uint8_t *b = malloc(size + 1);
  memcpy(b, data, size);
  if (size < 48) return b;
  uint64_t io, il;
  memcpy(&io, b + size - 32, 8);
  memcpy(&il, b + size - 24, 8);
  if (il > size - 48 || io != size - 32 - il) return b;
  uint32_t crc = tf_crc32c(b, 16);
  crc = tf_crc32c_extend(crc, b + io, (size_t)il);
  crc = tf_crc32c_extend(crc, b + size - 32, 20);
  memcpy(b + size - 12, &crc, 4);
  return b;
}

static char dir[] = "/tmp/ckpt_shard_fuzz.XXXXXX", path[64];

static void remove_dir(void) {
  unlink(path);
  rmdir(dir);
}

/* Rewrites what was read into a file and checks it reads back equal. */
static void roundtrip(tf_ckpt_entry *e, int n) {
  if (path[0] == '\0') {
    if (mkdtemp(dir) == NULL) abort();
    snprintf(path, sizeof path, "%s/s", dir);
    atexit(remove_dir);
  }
  tf_status st;
  tf_code c = tf_ckpt_shard_write(path, e, n, &st);
  if (c == TF_INVALID_ARGUMENT) return; /* e.g. overlapping slices, which only the writer refuses */
  FUZZ_CHECK(c == TF_OK, &st);
  tf_ckpt_shard *s;
  FUZZ_CHECK(tf_ckpt_shard_open(path, &s, &st) == TF_OK, &st);
  FUZZ_CHECK(tf_ckpt_shard_count(s) == n, &st);
  for (int i = 0; i < n; i++) {
    tf_tensor *t;
    FUZZ_CHECK(tf_ckpt_shard_read(s, e[i].name, e[i].slice, -1, &t, &st) == TF_OK, &st);
    FUZZ_CHECK(tf_tensor_equal(t, e[i].t), &st);
    tf_tensor_unref(t);
  }
  tf_ckpt_shard_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  uint8_t *b = (data[0] & 1) ? fix_crc(data + 1, size - 1) : NULL;
  int fd = memfd_of(b ? b : data + 1, size - 1);
  free(b);
  tf_status st;
  tf_status_init(&st);
  tf_ckpt_shard *s = NULL;
  tf_code c = tf_ckpt_shard_open_fd(fd, "fuzz", &s, &st);
  if (c != TF_OK) {
    if (c != TF_UNIMPLEMENTED) fuzz_check_rejection(c, &st);
    FUZZ_CHECK(s == NULL, &st);
    return 0;
  }
  int n = tf_ckpt_shard_count(s), ok = 0;
  tf_ckpt_entry *e = calloc((size_t)n + 1, sizeof *e);
  for (int i = 0; i < n; i++) {
    tf_ckpt_info in;
    tf_ckpt_shard_info(s, i, &in);
    tf_tensor *t = NULL;
    c = tf_ckpt_shard_read(s, in.name, in.slice, (int)in.dtype, &t, &st);
    FUZZ_CHECK(c == TF_OK || c == TF_DATA_LOSS, &st);
    e[ok++] = (tf_ckpt_entry){in.name, in.slice, t};
    if (c != TF_OK) ok--;
    tf_tensor *w = NULL;
    c = tf_ckpt_shard_read(s, in.name, NULL, -1, &w, &st);
    FUZZ_CHECK(c == TF_OK || c == TF_DATA_LOSS, &st);
    tf_tensor_unref(w);
  }
  c = tf_ckpt_shard_verify(s, &st);
  FUZZ_CHECK(c == TF_OK || c == TF_DATA_LOSS, &st);
  if (ok == n && n <= 64) roundtrip(e, n);
  for (int i = 0; i < ok; i++) tf_tensor_unref((tf_tensor *)e[i].t);
  free(e);
  tf_ckpt_shard_close(s);
  return 0;
}
