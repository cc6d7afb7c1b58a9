/* record_io.c: the record file formats over record_stream.c: TFRecord
 * reading and writing (length, masked CRC-32C of the length, data, masked
 * CRC-32C of the data, little-endian, as TensorFlow's record_writer.cc)
 * and IDX reading (header checked at open, records of fixed size), plus
 * tf_idx_load for a whole IDX file. Every error names the file and the
 * byte offset; once a reader has failed it repeats the error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/serialize/record_stream.h"
#include "lib/core/base/util.h"
#include "tf/input.h"

#define IDX_MAX_DIMS TF_MAX_RANK /* count + up to 7 record dims */

struct tf_record_reader {
  tf__instream *in;
  tf_record_options o;
  uint8_t *rec;        /* the current record */
  size_t cap;
  int64_t index;       /* records returned */
  int64_t offset;      /* where the last returned record starts */
  bool at_end;         /* the clean end was seen */
  tf_status err;       /* sticky */
  /* IDX */
  int64_t count;
  tf_dtype dtype;
  tf_shape rshape;
  size_t rec_bytes;
};

tf_code tf_compression_from_name(const char *name, tf_compression *out,
                                 tf_status *st) {
  static const struct { const char *name; tf_compression c; } names[] = {
      {"", TF_COMPRESSION_AUTO}, {"NONE", TF_COMPRESSION_NONE},
      {"ZLIB", TF_COMPRESSION_ZLIB}, {"GZIP", TF_COMPRESSION_GZIP}};
  for (size_t i = 0; i < TF_ARRAY_LEN(names); i++) {
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].c;
      return TF_OK;
    }
  }
  return tf_status_set(st, TF_INVALID_ARGUMENT, "unknown compression type "
                       "'%s' (expected '', 'NONE', 'ZLIB' or 'GZIP')", name);
}

tf_record_options tf_record_options_idx(void) {
  return (tf_record_options){.format = TF_RECORD_IDX,
                             .compression = TF_COMPRESSION_AUTO,
                             .idx_dtype = TF_DTYPE_INVALID,
                             .idx_record_shape = tf_shape_unknown()};
}

/* Sets the reader's sticky error "<path>: <message>" and copies it out. */
__attribute__((format(printf, 4, 5))) static tf_code
rfail(tf_record_reader *r, tf_status *st, tf_code code, const char *fmt, ...) {
  if (r->err.code == TF_OK) {
    char msg[TF_STATUS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tf_status_set(&r->err, code, "%s: %s", tf__instream_path(r->in), msg);
  }
  *st = r->err;
  return code;
}

/* Reads exactly n bytes; *got tells how many came when the data ended. */
static tf_code read_full(tf_record_reader *r, void *p, size_t n, size_t *got,
                         tf_status *st) {
  if (tf__instream_read(r->in, p, n, got, st) != TF_OK) {
    r->err = *st;
    return st->code;
  }
  return TF_OK;
}

static tf_code reserve(tf_record_reader *r, size_t n, tf_status *st) {
  if (n <= r->cap) {
    return TF_OK;
  }
  uint8_t *p = realloc(r->rec, n);
  if (p == NULL) {
    return rfail(r, st, TF_RESOURCE_EXHAUSTED, "out of memory for a "
                 "%zu-byte record at offset %lld", n, (long long)r->offset);
  }
  r->rec = p;
  r->cap = n;
  return TF_OK;
}

static uint64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void store_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads up to len bytes into r->rec, growing the buffer as bytes arrive,
 * so that a damaged length or header cannot make us allocate much more
 * than the data that is really there (at most twice it, plus 1 MiB);
 * *have < len when the data ends first. */
static tf_code read_growing(tf_record_reader *r, uint64_t len, size_t *have,
                            tf_status *st) {
  *have = 0;
  while (*have < len) {
    size_t want = (size_t)TF_MIN(len, (uint64_t)*have + TF_MAX(*have, 1u << 20));
    TF_TRY(reserve(r, want, st));
    size_t got;
    TF_TRY(read_full(r, r->rec + *have, want - *have, &got, st));
    *have += got;
    if (*have < want) {
      break;
    }
  }
  return TF_OK;
}

/* ---- IDX ----------------------------------------------------------------------- */

static tf_dtype idx_type(uint8_t code) {
  switch (code) {
  case 0x08: return TF_UINT8;
  case 0x09: return TF_INT8;
  case 0x0B: return TF_INT16;
  case 0x0C: return TF_INT32;
  case 0x0D: return TF_FLOAT32;
  case 0x0E: return TF_FLOAT64;
  default: return TF_DTYPE_INVALID;
  }
}

/* Checks the declared record type and dims against the options. */
static tf_code idx_check_expected(tf_record_reader *r, uint8_t code,
                                  tf_status *st) {
  const tf_record_options *o = &r->o;
  char a[96], b[96];
  if (o->idx_dtype != TF_DTYPE_INVALID && o->idx_dtype != r->dtype) {
    return rfail(r, st, TF_DATA_LOSS, "IDX element type is %s (0x%02x at "
                 "offset 2), expected %s", tf_dtype_name(r->dtype), code,
                 tf_dtype_name(o->idx_dtype));
  }
  const tf_shape *want = &o->idx_record_shape;
  if (want->rank != TF_UNKNOWN_RANK && !tf_shape_equal(want, &r->rshape)) {
    return rfail(r, st, TF_DATA_LOSS, "IDX record dims are %s (from offset "
                 "8), expected %s", tf_shape_str(&r->rshape, a, sizeof a),
                 tf_shape_str(want, b, sizeof b));
  }
  return TF_OK;
}

/* An uncompressed file's size must be what the header declares. */
static tf_code idx_check_size(tf_record_reader *r, int64_t hdr, tf_status *st) {
  int64_t size = tf__instream_plain_size(r->in), body, end;
  if (size < 0) {
    return TF_OK;
  }
  if (__builtin_mul_overflow(r->count, (int64_t)r->rec_bytes, &body) ||
      __builtin_add_overflow(body, hdr, &end)) {
    return rfail(r, st, TF_DATA_LOSS, "truncated at offset %lld: the IDX "
                 "header declares %lld records of %zu bytes, far more than "
                 "the file holds", (long long)size, (long long)r->count,
                 r->rec_bytes);
  }
  if (size < end) {
    int64_t k = r->rec_bytes ? (size - hdr) / (int64_t)r->rec_bytes : 0;
    return rfail(r, st, TF_DATA_LOSS, "truncated at offset %lld: record %lld "
                 "of %lld (at offset %lld, %zu bytes) is incomplete",
                 (long long)size, (long long)k, (long long)r->count,
                 (long long)(hdr + k * (int64_t)r->rec_bytes), r->rec_bytes);
  }
  if (size > end) {
    return rfail(r, st, TF_DATA_LOSS, "%lld trailing bytes after the last "
                 "of %lld records, at offset %lld", (long long)(size - end),
                 (long long)r->count, (long long)end);
  }
  return TF_OK;
}

static tf_code idx_open(tf_record_reader *r, tf_status *st) {
  uint8_t h[4 + 4 * IDX_MAX_DIMS];
  size_t got;
  TF_TRY(read_full(r, h, 4, &got, st));
  if (got < 4) {
    return rfail(r, st, TF_DATA_LOSS, "truncated IDX header at offset %zu",
                 got);
  }
  if (h[0] != 0 || h[1] != 0) {
    bool gz = h[0] == 0x1f && h[1] == 0x8b;
    return rfail(r, st, TF_DATA_LOSS, "bad IDX magic %02x %02x %02x %02x at "
                 "offset 0 (expected 00 00 <type> <ndims>)%s", h[0], h[1],
                 h[2], h[3], gz ? "; the file is gzip-compressed" : "");
  }
  r->dtype = idx_type(h[2]);
  if (r->dtype == TF_DTYPE_INVALID) {
    return rfail(r, st, TF_DATA_LOSS, "unknown IDX element type 0x%02x at "
                 "offset 2", h[2]);
  }
  int nd = h[3];
  if (nd < 1 || nd > IDX_MAX_DIMS) {
    return rfail(r, st, TF_DATA_LOSS, "IDX ndims %d at offset 3 is out of "
                 "range (1..%d)", nd, IDX_MAX_DIMS);
  }
  TF_TRY(read_full(r, h + 4, 4 * (size_t)nd, &got, st));
  if (got < 4 * (size_t)nd) {
    return rfail(r, st, TF_DATA_LOSS, "truncated IDX header at offset %zu "
                 "(%d dims need %d bytes)", 4 + got, nd, 4 + 4 * nd);
  }
  uint64_t bytes = tf_dtype_size(r->dtype);
  r->rshape.rank = nd - 1;
  for (int i = 0; i < nd; i++) {
    const uint8_t *p = h + 4 + 4 * i;
    uint32_t d = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                 (uint32_t)p[2] << 8 | p[3];
    if (i == 0) {
      r->count = d;
    } else {
      r->rshape.dims[i - 1] = d;
      if (__builtin_mul_overflow(bytes, (uint64_t)d, &bytes) ||
          bytes > ((uint64_t)1 << 40)) {
        return rfail(r, st, TF_DATA_LOSS, "IDX record size overflows at "
                     "dim %d (offset %d)", i, 4 + 4 * i);
      }
    }
  }
  r->rec_bytes = (size_t)bytes;
  TF_TRY(idx_check_expected(r, h[2], st));
  TF_TRY(idx_check_size(r, 4 + 4 * (int64_t)nd, st));
  return TF_OK;
}

static tf_code idx_next(tf_record_reader *r, tf_status *st) {
  if (r->index == r->count) {
    if (!r->at_end) {
      uint8_t extra;
      size_t got;
      int64_t end = tf__instream_offset(r->in);
      TF_TRY(read_full(r, &extra, 1, &got, st));
      if (got != 0) {
        return rfail(r, st, TF_DATA_LOSS, "trailing bytes after the last of "
                     "%lld records, at offset %lld%s", (long long)r->count,
                     (long long)end, tf__instream_offset_note(r->in));
      }
      r->at_end = true;
    }
    return tf_status_set(st, TF_OUT_OF_RANGE, "%s: end of file after %lld "
                         "records", tf__instream_path(r->in),
                         (long long)r->count);
  }
  r->offset = tf__instream_offset(r->in);
  size_t got;
  TF_TRY(read_growing(r, r->rec_bytes, &got, st));
  if (got < r->rec_bytes) {
    return rfail(r, st, TF_DATA_LOSS, "truncated record %lld of %lld at "
                 "offset %lld%s: %zu of %zu bytes", (long long)r->index,
                 (long long)r->count, (long long)r->offset,
                 tf__instream_offset_note(r->in), got, r->rec_bytes);
  }
  return TF_OK;
}

/* ---- TFRecord --------------------------------------------------------------------- */

static tf_code tfr_read_data(tf_record_reader *r, uint64_t len, tf_status *st) {
  size_t have;
  TF_TRY(read_growing(r, len, &have, st));
  if (have < len) {
    return rfail(r, st, TF_DATA_LOSS, "truncated record at offset %lld%s: "
                 "%zu of %llu data bytes", (long long)r->offset,
                 tf__instream_offset_note(r->in), have,
                 (unsigned long long)len);
  }
  return TF_OK;
}

static tf_code tfr_next(tf_record_reader *r, size_t *len_out, tf_status *st) {
  uint8_t h[12];
  size_t got;
  r->offset = tf__instream_offset(r->in);
  TF_TRY(read_full(r, h, 12, &got, st));
  if (got == 0) {
    r->at_end = true;
    return tf_status_set(st, TF_OUT_OF_RANGE, "%s: end of file after %lld "
                         "records", tf__instream_path(r->in),
                         (long long)r->index);
  }
  const char *note = tf__instream_offset_note(r->in);
  long long off = (long long)r->offset;
  if (got < 12) {
    return rfail(r, st, TF_DATA_LOSS, "truncated record at offset %lld%s: "
                 "header has %zu of 12 bytes", off, note, got);
  }
  if (tf_crc32c_mask(tf_crc32c(h, 8)) != load_le32(h + 8)) {
    return rfail(r, st, TF_DATA_LOSS, "corrupted record at offset %lld%s: "
                 "length CRC mismatch", off, note);
  }
  uint64_t len = load_le64(h);
  int64_t size = tf__instream_plain_size(r->in);
  if (len > (uint64_t)INT64_MAX - 16 ||
      (size >= 0 && (int64_t)len + 16 > size - r->offset)) {
    return rfail(r, st, TF_DATA_LOSS, "truncated record at offset %lld%s: "
                 "length %llu exceeds the bytes left in the file", off, note,
                 (unsigned long long)len);
  }
  TF_TRY(tfr_read_data(r, len, st));
  uint8_t f[4];
  TF_TRY(read_full(r, f, 4, &got, st));
  if (got < 4) {
    return rfail(r, st, TF_DATA_LOSS, "truncated record at offset %lld%s: "
                 "data CRC has %zu of 4 bytes", off, note, got);
  }
  if (tf_crc32c_mask(tf_crc32c(r->rec, (size_t)len)) != load_le32(f)) {
    return rfail(r, st, TF_DATA_LOSS, "corrupted record at offset %lld%s: "
                 "data CRC mismatch", off, note);
  }
  *len_out = (size_t)len;
  return TF_OK;
}

/* ---- the reader --------------------------------------------------------------------- */

tf_code tf_record_reader_open(const char *path, const tf_record_options *o,
                              tf_record_reader **out, tf_status *st) {
  *out = NULL;
  tf_compression c = o->compression;
  if (o->format == TF_RECORD_TFRECORD && c == TF_COMPRESSION_AUTO) {
    c = TF_COMPRESSION_NONE;
  }
  if (o->format != TF_RECORD_TFRECORD && o->format != TF_RECORD_IDX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: unknown record "
                         "format %d", path, (int)o->format);
  }
  tf__instream *in;
  TF_TRY(tf__instream_open(path, c, &in, st));
  tf_record_reader *r = tf__xcalloc(1, sizeof *r);
  r->in = in;
  r->o = *o;
  r->count = -1;
  r->dtype = TF_STRING;
  tf_status_init(&r->err);
  if (o->format == TF_RECORD_IDX && idx_open(r, st) != TF_OK) {
    tf_record_reader_close(r);
    return st->code;
  }
  *out = r;
  return TF_OK;
}

tf_code tf_record_reader_next(tf_record_reader *r, const void **data,
                              size_t *len, tf_status *st) {
  *data = NULL;
  *len = 0;
  if (r->err.code != TF_OK) {
    *st = r->err;
    return st->code;
  }
  size_t n = r->rec_bytes;
  tf_code rc = r->o.format == TF_RECORD_IDX ? idx_next(r, st)
                                              : tfr_next(r, &n, st);
  if (rc != TF_OK) {
    return rc;
  }
  r->index++;
  *data = r->rec;
  *len = n;
  return TF_OK;
}

int64_t tf_record_reader_index(const tf_record_reader *r) { return r->index; }
int64_t tf_record_reader_offset(const tf_record_reader *r) { return r->offset; }
int64_t tf_record_reader_count(const tf_record_reader *r) { return r->count; }
tf_dtype tf_record_reader_dtype(const tf_record_reader *r) { return r->dtype; }

const tf_shape *tf_record_reader_record_shape(const tf_record_reader *r) {
  return r->o.format == TF_RECORD_IDX ? &r->rshape : NULL;
}

const char *tf_record_reader_path(const tf_record_reader *r) {
  return tf__instream_path(r->in);
}

void tf_record_reader_close(tf_record_reader *r) {
  if (r == NULL) {
    return;
  }
  tf__instream_close(r->in);
  free(r->rec);
  free(r);
}

/* Big-endian elements of size es to host order, in place. */
static void from_big_endian(void *data, int64_t n, size_t es) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint8_t *p = data;
  for (int64_t i = 0; i < n; i++, p += es) {
    for (size_t a = 0, b = es - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
  }
#else
  (void)data, (void)n, (void)es;
#endif
}

/* Reads all records of an open IDX file into *t. A compressed file's data
 * is read before the tensor is made (its size is unknown until then), so a
 * damaged header cannot make us allocate more than the data holds. */
static tf_code idx_read_body(tf_record_reader *r, tf_tensor **t, tf_status *st) {
  tf_shape s = {.rank = r->rshape.rank + 1, .dims = {r->count}};
  memcpy(s.dims + 1, r->rshape.dims, (size_t)r->rshape.rank * sizeof s.dims[0]);
  uint64_t total;
  if (__builtin_mul_overflow((uint64_t)r->count, (uint64_t)r->rec_bytes, &total) ||
      total > (uint64_t)INT64_MAX) {
    return rfail(r, st, TF_DATA_LOSS, "the IDX dims at offset 4 declare "
                 "more data than fits in memory");
  }
  bool compressed = tf__instream_compressed(r->in);
  size_t got = 0;
  if (compressed) {
    TF_TRY(read_growing(r, total, &got, st));
  }
  if (!compressed || got == total) {
    TF_TRY(tf_tensor_new(r->dtype, &s, t, st));
    if (compressed && total > 0) {
      memcpy((*t)->data, r->rec, (size_t)total);
    } else if (!compressed) {
      TF_TRY(read_full(r, (*t)->data, (size_t)total, &got, st));
    }
  }
  if (got < total) {
    size_t rb = TF_MAX(r->rec_bytes, (size_t)1);
    r->offset = tf__instream_offset(r->in) - (int64_t)(got % rb);
    return rfail(r, st, TF_DATA_LOSS, "truncated record %lld of %lld at offset "
                 "%lld%s", (long long)(got / rb), (long long)r->count,
                 (long long)r->offset, tf__instream_offset_note(r->in));
  }
  const void *d;
  size_t n;
  r->index = r->count;
  if (tf_record_reader_next(r, &d, &n, st) != TF_OUT_OF_RANGE) {
    return st->code; /* trailing bytes */
  }
  tf_status_init(st);
  from_big_endian((*t)->data, (*t)->n, tf_dtype_size((*t)->dtype));
  return TF_OK;
}

tf_code tf_idx_load(const char *path, const tf_record_options *o,
                    tf_tensor **out, tf_status *st) {
  *out = NULL;
  tf_record_options any = tf_record_options_idx();
  if (o != NULL && o->format != TF_RECORD_IDX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tf_idx_load(%s): the "
                         "options' format must be IDX", path);
  }
  tf_record_reader *r;
  TF_TRY(tf_record_reader_open(path, o ? o : &any, &r, st));
  tf_tensor *t = NULL;
  tf_code rc = idx_read_body(r, &t, st);
  tf_record_reader_close(r);
  if (rc != TF_OK) {
    tf_tensor_unref(t);
    return rc;
  }
  *out = t;
  return TF_OK;
}

/* ---- TFRecord writer ----------------------------------------------------------------- */

struct tf_tfrecord_writer {
  tf__outstream *out;
};

tf_code tf_tfrecord_writer_open(const char *path, tf_compression compression,
                                tf_tfrecord_writer **out, tf_status *st) {
  *out = NULL;
  tf__outstream *s;
  TF_TRY(tf__outstream_open(path, compression, &s, st));
  *out = tf__xmalloc(sizeof **out);
  (*out)->out = s;
  return TF_OK;
}

tf_code tf_tfrecord_writer_write(tf_tfrecord_writer *w, const void *data,
                                 size_t len, tf_status *st) {
  uint8_t h[12], f[4];
  for (int i = 0; i < 8; i++) h[i] = (uint8_t)((uint64_t)len >> (8 * i));
  store_le32(h + 8, tf_crc32c_mask(tf_crc32c(h, 8)));
  store_le32(f, tf_crc32c_mask(tf_crc32c(data, len)));
  TF_TRY(tf__outstream_write(w->out, h, 12, st));
  TF_TRY(tf__outstream_write(w->out, data, len, st));
  return tf__outstream_write(w->out, f, 4, st);
}

tf_code tf_tfrecord_writer_close(tf_tfrecord_writer *w, tf_status *st) {
  if (w == NULL) {
    return TF_OK;
  }
  tf_code rc = tf__outstream_close(w->out, st);
  free(w);
  return rc;
}
