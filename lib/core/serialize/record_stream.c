/* record_stream.c: sequential file streams for the record formats, plain
 * or compressed with zlib (inflate/deflate over a 256 KiB buffer, read(2)
 * and write(2) underneath). Gzip files may hold several members, read one
 * after the other as gzip(1) does. Errors are sticky: once a stream has
 * failed, every later call returns the same status. */
#include "lib/core/serialize/record_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"

#define STREAM_BUF (256 * 1024)

/* A code for an errno from open/read/write. */
static tf_code errno_code(int e) {
  switch (e) {
  case ENOENT:
  case ENOTDIR:
    return TF_NOT_FOUND;
  case EACCES:
  case EPERM:
  case EROFS:
    return TF_PERMISSION_DENIED;
  case ENOSPC:
  case EDQUOT:
  case ENOMEM:
    return TF_RESOURCE_EXHAUSTED;
  case EISDIR:
    return TF_FAILED_PRECONDITION;
  default:
    return TF_UNKNOWN;
  }
}

/* ---- input ----------------------------------------------------------------- */

struct tf__instream {
  char *path;
  int fd;
  tf_compression c;  /* resolved: NONE, ZLIB or GZIP */
  uint8_t *buf;      /* file bytes buf[pos..len) not consumed yet */
  size_t pos, len;
  bool eof;          /* read(2) returned 0 */
  int64_t out_off;   /* uncompressed bytes delivered */
  int64_t z_off;     /* bytes inflated (delivered or in obuf) */
  uint8_t *obuf;     /* inflated bytes obuf[opos..olen) not delivered */
  size_t opos, olen;
  int64_t size;      /* file size from fstat */
  z_stream zs;
  bool z_ready;
  bool member_done;  /* inflate reached the end of a stream / member */
  tf_status err;     /* sticky */
};

static tf_code fail(tf__instream *s, tf_status *st, tf_code code,
                    const char *what) {
  if (s->err.code == TF_OK) {
    int64_t off = s->c == TF_COMPRESSION_NONE ? s->out_off : s->z_off;
    tf_status_set(&s->err, code, "%s: %s at offset %lld%s", s->path, what,
                  (long long)off, tf__instream_offset_note(s));
  }
  if (st != NULL) {
    *st = s->err;
  }
  return s->err.code;
}

/* Reads more file bytes into the empty buffer; sets eof at the end. */
static tf_code refill(tf__instream *s, tf_status *st) {
  s->pos = s->len = 0;
  for (;;) {
    ssize_t n = read(s->fd, s->buf, STREAM_BUF);
    if (n > 0) {
      s->len = (size_t)n;
      return TF_OK;
    }
    if (n == 0) {
      s->eof = true;
      return TF_OK;
    }
    if (errno != EINTR) {
      char what[160];
      snprintf(what, sizeof what, "read failed (%s)", strerror(errno));
      return fail(s, st, errno_code(errno), what);
    }
  }
}

static tf_code open_fd(const char *path, int *fd, int64_t *size, tf_status *st) {
  *fd = tf__fs_open(path, O_RDONLY, 0);
  if (*fd < 0) {
    if (tf__fs_take_denial(st)) {
      return st->code;
    }
    return tf_status_set(st, errno_code(errno), "%s: cannot open (%s)", path,
                         strerror(errno));
  }
  struct stat sb;
  if (fstat(*fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
    close(*fd);
    return tf_status_set(st, TF_FAILED_PRECONDITION, "%s: not a readable "
                         "file (a directory?)", path);
  }
  *size = S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
  return TF_OK;
}

tf_code tf__instream_open(const char *path, tf_compression c,
                          tf__instream **out, tf_status *st) {
  *out = NULL;
  int fd = -1;
  int64_t size = -1;
  TF_TRY(open_fd(path, &fd, &size, st));
  tf__instream *s = tf__xcalloc(1, sizeof *s);
  s->path = tf__xstrdup(path);
  s->fd = fd;
  s->size = size;
  s->buf = tf__xmalloc(STREAM_BUF);
  tf_status_init(&s->err);
  if (refill(s, st) != TF_OK) {
    tf__instream_close(s);
    return st->code;
  }
  if (c == TF_COMPRESSION_AUTO) {
    bool gz = s->len >= 2 && s->buf[0] == 0x1f && s->buf[1] == 0x8b;
    c = gz ? TF_COMPRESSION_GZIP : TF_COMPRESSION_NONE;
  }
  s->c = c;
  if (c != TF_COMPRESSION_NONE) {
    int wbits = c == TF_COMPRESSION_GZIP ? 15 + 16 : 15;
    if (inflateInit2(&s->zs, wbits) != Z_OK) {
      tf__instream_close(s);
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: inflateInit2 "
                           "failed", path);
    }
    s->z_ready = true;
    s->obuf = tf__xmalloc(STREAM_BUF);
  }
  *out = s;
  return TF_OK;
}

static tf_code read_plain(tf__instream *s, uint8_t *p, size_t n, size_t *got,
                          tf_status *st) {
  while (*got < n) {
    if (s->pos == s->len) {
      if (s->eof) {
        break;
      }
      TF_TRY(refill(s, st));
      continue;
    }
    size_t k = TF_MIN(n - *got, s->len - s->pos);
    memcpy(p + *got, s->buf + s->pos, k);
    s->pos += k;
    *got += k;
    s->out_off += (int64_t)k;
  }
  return TF_OK;
}

/* After a stream or member ended: whether data follows (another gzip
 * member), which is then started; trailing bytes after a zlib stream are
 * DATA_LOSS. *more is false at the clean end. */
static tf_code next_member(tf__instream *s, bool *more, tf_status *st) {
  *more = false;
  if (s->pos == s->len && !s->eof) {
    TF_TRY(refill(s, st));
  }
  if (s->pos == s->len) {
    return TF_OK;
  }
  if (s->c == TF_COMPRESSION_ZLIB) {
    return fail(s, st, TF_DATA_LOSS, "trailing bytes after the zlib stream");
  }
  inflateReset(&s->zs);
  s->member_done = false;
  *more = true;
  return TF_OK;
}

/* One step of read_inflate: more input, the next member, or an inflate
 * call. *end is set at the clean end of the data. */
static tf_code inflate_step(tf__instream *s, bool *end, tf_status *st) {
  if (s->member_done) {
    bool more;
    TF_TRY(next_member(s, &more, st));
    *end = !more;
    return TF_OK;
  }
  if (s->pos == s->len) {
    TF_TRY(refill(s, st));
    if (s->eof && s->len == 0) {
      return fail(s, st, TF_DATA_LOSS, "compressed data truncated");
    }
  }
  s->zs.next_in = s->buf + s->pos;
  s->zs.avail_in = (uInt)(s->len - s->pos);
  uInt before = s->zs.avail_out;
  int rc = inflate(&s->zs, Z_NO_FLUSH);
  s->pos = s->len - s->zs.avail_in;
  s->z_off += (int64_t)(before - s->zs.avail_out);
  if (rc == Z_STREAM_END) {
    s->member_done = true;
  } else if (rc == Z_MEM_ERROR) {
    return fail(s, st, TF_RESOURCE_EXHAUSTED, "out of memory inflating");
  } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
    char what[160];
    snprintf(what, sizeof what, "corrupt compressed data (%s)",
             s->zs.msg ? s->zs.msg : "inflate failed");
    return fail(s, st, TF_DATA_LOSS, what);
  }
  return TF_OK;
}

/* Inflates up to n <= 1 GiB bytes into p; *got < n only at the end, or
 * on error (*got then counts what was inflated before it). */
static tf_code read_inflate(tf__instream *s, uint8_t *p, size_t n, size_t *got,
                            tf_status *st) {
  s->zs.next_out = p;
  s->zs.avail_out = (uInt)n;
  bool end = false;
  tf_code rc = TF_OK;
  while (s->zs.avail_out > 0 && !end && rc == TF_OK) {
    rc = inflate_step(s, &end, st);
  }
  *got = n - s->zs.avail_out;
  return rc;
}

/* Serves compressed reads from obuf, inflating 256 KiB at a time (inflate
 * is much faster on large outputs); reads of a buffer or more inflate
 * straight into the caller's memory. Bytes inflated before an error are
 * delivered first; the error comes when they are used up. */
static tf_code read_compressed(tf__instream *s, uint8_t *p, size_t n,
                               size_t *got, tf_status *st) {
  while (*got < n) {
    if (s->opos < s->olen) {
      size_t k = TF_MIN(n - *got, s->olen - s->opos);
      memcpy(p + *got, s->obuf + s->opos, k);
      s->opos += k;
      *got += k;
      s->out_off += (int64_t)k;
      continue;
    }
    if (s->err.code != TF_OK) {
      *st = s->err;
      return st->code;
    }
    size_t want = n - *got, g = 0;
    if (want >= STREAM_BUF) {
      tf_code rc = read_inflate(s, p + *got, TF_MIN(want, (size_t)1 << 30), &g, st);
      *got += g;
      s->out_off += (int64_t)g;
      if (rc != TF_OK || g == 0) {
        return rc;
      }
      continue;
    }
    tf_status tmp;
    tf_code rc = read_inflate(s, s->obuf, STREAM_BUF, &g, &tmp);
    s->opos = 0;
    s->olen = g;
    if (rc != TF_OK && g == 0) {
      *st = s->err;
      return rc;
    }
    if (g == 0) {
      break; /* the clean end */
    }
  }
  return TF_OK;
}

tf_code tf__instream_read(tf__instream *s, void *buf, size_t n, size_t *got,
                          tf_status *st) {
  *got = 0;
  if (s->c != TF_COMPRESSION_NONE) {
    return read_compressed(s, buf, n, got, st);
  }
  if (s->err.code != TF_OK) {
    *st = s->err;
    return st->code;
  }
  return read_plain(s, buf, n, got, st);
}

int64_t tf__instream_offset(const tf__instream *s) { return s->out_off; }

int64_t tf__instream_plain_size(const tf__instream *s) {
  return s->c == TF_COMPRESSION_NONE ? s->size : -1;
}

bool tf__instream_compressed(const tf__instream *s) {
  return s->c != TF_COMPRESSION_NONE;
}

const char *tf__instream_path(const tf__instream *s) { return s->path; }

const char *tf__instream_offset_note(const tf__instream *s) {
  return s->c != TF_COMPRESSION_NONE ? " of the decompressed data" : "";
}

void tf__instream_close(tf__instream *s) {
  if (s == NULL) {
    return;
  }
  if (s->z_ready) {
    inflateEnd(&s->zs);
  }
  close(s->fd);
  free(s->buf);
  free(s->obuf);
  free(s->path);
  free(s);
}

/* ---- output ------------------------------------------------------------------ */

struct tf__outstream {
  char *path;
  int fd;
  bool deflating;
  z_stream zs;
  uint8_t *buf; /* pending output bytes buf[0..len) */
  size_t len;
  tf_status err;
};

static tf_code out_fail(tf__outstream *s, tf_status *st, tf_code code,
                        const char *what) {
  if (s->err.code == TF_OK) {
    tf_status_set(&s->err, code, "%s: %s", s->path, what);
  }
  if (st != NULL) {
    *st = s->err;
  }
  return s->err.code;
}

static tf_code flush_out(tf__outstream *s, tf_status *st) {
  size_t done = 0;
  while (done < s->len) {
    ssize_t n = write(s->fd, s->buf + done, s->len - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      char what[160];
      snprintf(what, sizeof what, "write failed (%s)",
               n < 0 ? strerror(errno) : "no progress");
      return out_fail(s, st, n < 0 ? errno_code(errno) : TF_UNKNOWN, what);
    }
    done += (size_t)n;
  }
  s->len = 0;
  return TF_OK;
}

tf_code tf__outstream_open(const char *path, tf_compression c,
                           tf__outstream **out, tf_status *st) {
  *out = NULL;
  int fd = tf__fs_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    if (tf__fs_take_denial(st)) {
      return st->code;
    }
    return tf_status_set(st, errno_code(errno), "%s: cannot create (%s)",
                         path, strerror(errno));
  }
  tf__outstream *s = tf__xcalloc(1, sizeof *s);
  s->path = tf__xstrdup(path);
  s->fd = fd;
  s->buf = tf__xmalloc(STREAM_BUF);
  tf_status_init(&s->err);
  if (c == TF_COMPRESSION_ZLIB || c == TF_COMPRESSION_GZIP) {
    int wbits = c == TF_COMPRESSION_GZIP ? 15 + 16 : 15;
    if (deflateInit2(&s->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, wbits, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      tf__outstream_close(s, NULL);
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: deflateInit2 "
                           "failed", path);
    }
    s->deflating = true;
  }
  *out = s;
  return TF_OK;
}

/* Runs deflate over p[0..n) with flush, writing out full buffers. */
static tf_code deflate_some(tf__outstream *s, const void *p, size_t n,
                            int flush, tf_status *st) {
  s->zs.next_in = (Bytef *)p;
  s->zs.avail_in = (uInt)n;
  for (;;) {
    s->zs.next_out = s->buf + s->len;
    s->zs.avail_out = (uInt)(STREAM_BUF - s->len);
    int rc = deflate(&s->zs, flush);
    s->len = STREAM_BUF - s->zs.avail_out;
    if (rc == Z_STREAM_ERROR) {
      return out_fail(s, st, TF_INTERNAL, "deflate failed");
    }
    if (s->len == STREAM_BUF) {
      TF_TRY(flush_out(s, st));
      continue;
    }
    if (s->zs.avail_in == 0 && (flush != Z_FINISH || rc == Z_STREAM_END)) {
      return TF_OK;
    }
  }
}

tf_code tf__outstream_write(tf__outstream *s, const void *p, size_t n,
                            tf_status *st) {
  if (s->err.code != TF_OK) {
    *st = s->err;
    return st->code;
  }
  const uint8_t *b = p;
  while (n > 0) {
    size_t k = TF_MIN(n, (size_t)1 << 30);
    if (s->deflating) {
      TF_TRY(deflate_some(s, b, k, Z_NO_FLUSH, st));
    } else {
      k = TF_MIN(k, STREAM_BUF - s->len);
      memcpy(s->buf + s->len, b, k);
      s->len += k;
      if (s->len == STREAM_BUF) {
        TF_TRY(flush_out(s, st));
      }
    }
    b += k;
    n -= k;
  }
  return TF_OK;
}

tf_code tf__outstream_close(tf__outstream *s, tf_status *st) {
  if (s == NULL) {
    return TF_OK;
  }
  if (s->err.code == TF_OK && s->deflating) {
    deflate_some(s, NULL, 0, Z_FINISH, NULL);
  }
  if (s->err.code == TF_OK) {
    flush_out(s, NULL);
  }
  if (s->deflating) {
    deflateEnd(&s->zs);
  }
  if (close(s->fd) != 0 && s->err.code == TF_OK) {
    char what[160];
    snprintf(what, sizeof what, "close failed (%s)", strerror(errno));
    out_fail(s, NULL, errno_code(errno), what);
  }
  tf_code rc = s->err.code;
  if (st != NULL) {
    *st = s->err;
  }
  free(s->buf);
  free(s->path);
  free(s);
  return rc;
}
