/* ckpt_shard_read.c: reading a checkpoint shard file (ckpt_shard.h, layout
 * in ckpt_format.h). The file is untrusted: open checks the magics, the
 * footer's offsets against the file size, the index CRC, and every index
 * field (lengths, counts, dtypes, shapes, slices, offsets tiling the data)
 * against the file and the caps before anything is allocated from it; a
 * tensor's bytes are checked against their CRC when read. Reads go
 * straight into the output tensor's buffer when a stored entry is exactly
 * what was asked for, else through the stored slices that overlap the
 * request (an N-d box copy, with a mask proving full coverage). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/base/fs_confine.h"
#include "lib/core/serialize/ckpt_format.h"
#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/serialize/ckpt_slice.h"
#include "lib/core/base/crc32c.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

typedef struct rentry {
  char *name, *slice;
  tf_dtype dtype;
  tf_shape shape, full;
  tf_ckpt_box box;
  uint64_t offset, length;
  uint32_t crc;
  int next; /* the next entry of the same name, -1 */
} rentry;

struct tf_ckpt_shard {
  int fd;
  char *path;
  uint64_t size;
  int n;
  rentry *e;
  tf__strmap first; /* name -> 1 + index of its first entry */
};

/* ---- the index --------------------------------------------------------------- */

/* A bounded reader over the index bytes. */
typedef struct cursor {
  const unsigned char *p;
  size_t n, off;
  bool bad;
} cursor;

static const unsigned char *take(cursor *c, size_t n) {
  if (c->bad || n > c->n - c->off) {
    c->bad = true;
    return NULL;
  }
  const unsigned char *p = c->p + c->off;
  c->off += n;
  return p;
}

static uint32_t take_u32(cursor *c) {
  const unsigned char *p = take(c, 4);
  return p ? tf__get_u32(p) : 0;
}

static uint64_t take_u64(cursor *c) {
  const unsigned char *p = take(c, 8);
  return p ? tf__get_u64(p) : 0;
}

/* A string of at most max bytes without NUL (min 1 when nonempty). */
static char *take_str(cursor *c, bool nonempty, const char **why) {
  uint32_t len = take_u32(c);
  if (c->bad || len > TF_CKPT_NAME_MAX || (nonempty && len == 0)) {
    *why = c->bad ? "truncated" : len == 0 ? "empty name" : "name or slice "
                                             "longer than 4096 bytes";
    return NULL;
  }
  const unsigned char *p = take(c, len);
  if (p == NULL || memchr(p, '\0', len) != NULL) {
    *why = p == NULL ? "truncated" : "NUL byte in a name or slice";
    return NULL;
  }
  return tf__xstrndup((const char *)p, len);
}

static bool take_shape(cursor *c, tf_shape *s, const char **why) {
  uint32_t rank = take_u32(c);
  if (c->bad || rank > TF_MAX_RANK) {
    *why = c->bad ? "truncated" : "rank above 8";
    return false;
  }
  *s = (tf_shape){.rank = (int32_t)rank};
  for (uint32_t d = 0; d < rank; d++) {
    s->dims[d] = (int64_t)take_u64(c);
    if (c->bad || s->dims[d] < 0) {
      *why = c->bad ? "truncated" : "negative dim";
      return false;
    }
  }
  return true;
}

/* The bytes an entry of dtype and shape must (numbers) or may at least
 * (strings) take; false when the element count overflows. */
static bool min_length(tf_dtype dt, const tf_shape *s, uint64_t *len) {
  tf_ckpt_box b = tf__ckpt_box_whole(s);
  int64_t n = tf__ckpt_box_volume(&b);
  size_t es = dt == TF_STRING ? 4 : tf_dtype_size(dt);
  return n >= 0 && !__builtin_mul_overflow((uint64_t)n, (uint64_t)es, len);
}

/* Checks entry r's slice, shapes and extent against the data region. */
static const char *check_entry(rentry *r, uint64_t *off, uint64_t data_end) {
  bool whole;
  tf_status st;
  if (tf__ckpt_slice_parse(r->slice, &r->full, &r->box, &whole, &st) != TF_OK) {
    return "bad slice text";
  }
  tf_shape ext = tf__ckpt_box_shape(&r->box);
  if (whole) {
    r->full = r->shape;
    r->box = tf__ckpt_box_whole(&r->shape);
  } else if (!tf_shape_equal(&ext, &r->shape)) {
    return "stored shape differs from the slice's extent";
  }
  uint64_t need;
  if (!tf_dtype_is_valid(r->dtype) || !min_length(r->dtype, &r->shape, &need)) {
    return tf_dtype_is_valid(r->dtype) ? "element count overflows"
                                       : "invalid dtype";
  }
  if (r->dtype == TF_STRING ? r->length < need : r->length != need) {
    return "byte length does not fit the dtype and shape";
  }
  if (r->offset != *off || r->length > data_end - *off) {
    return "bytes outside the data region or not back to back";
  }
  *off += r->length;
  return NULL;
}

static const char *parse_entry(cursor *c, rentry *r, uint64_t *off,
                               uint64_t data_end) {
  const char *why = NULL;
  r->next = -1;
  if ((r->name = take_str(c, true, &why)) == NULL ||
      (r->slice = take_str(c, false, &why)) == NULL) {
    return why;
  }
  r->dtype = (tf_dtype)take_u32(c);
  tf_shape full;
  if (!take_shape(c, &r->shape, &why) || !take_shape(c, &full, &why)) {
    return why;
  }
  r->offset = take_u64(c);
  r->length = take_u64(c);
  r->crc = take_u32(c);
  if (c->bad) {
    return "truncated";
  }
  if ((why = check_entry(r, off, data_end)) != NULL) {
    return why;
  }
  return tf_shape_equal(&full, &r->full) ? NULL
         : "full shape differs from the slice's";
}

/* Links entry i to the earlier entries of its name (one dtype and full
 * shape per name). */
static const char *link_entry(tf_ckpt_shard *s, int i, int *last) {
  rentry *r = &s->e[i];
  intptr_t f = (intptr_t)tf__strmap_get(&s->first, r->name, NULL);
  if (f == 0) {
    tf__strmap_put(&s->first, r->name, (void *)(intptr_t)(i + 1));
    last[i] = i;
    return NULL;
  }
  const rentry *a = &s->e[f - 1];
  if (a->dtype != r->dtype || !tf_shape_equal(&a->full, &r->full)) {
    return "slices of one tensor with different dtypes or full shapes";
  }
  s->e[last[f - 1]].next = i;
  last[f - 1] = i;
  return NULL;
}

static tf_code parse_index(tf_ckpt_shard *s, const unsigned char *idx,
                           size_t len, uint64_t data_end, tf_status *st) {
  cursor c = {idx, len, 0, false};
  uint32_t n = take_u32(&c);
  if (n > TF_CKPT_MAX_ENTRIES || n > (len - 4) / TF__CKPT_MIN_ENTRY) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: index claims %u entries, "
                         "more than its %zu bytes or the cap %d can hold",
                         s->path, n, len, TF_CKPT_MAX_ENTRIES);
  }
  s->e = tf__xcalloc(n + 1, sizeof *s->e);
  int *last = tf__xcalloc(n + 1, sizeof *last);
  uint64_t off = TF__CKPT_HEADER;
  const char *why = NULL;
  for (; s->n < (int)n && why == NULL; s->n++) {
    why = parse_entry(&c, &s->e[s->n], &off, data_end);
    if (why == NULL) {
      why = link_entry(s, s->n, last);
    }
  }
  free(last);
  if (why != NULL) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: index entry %d: %s",
                         s->path, s->n - 1, why);
  }
  if (off != data_end || c.off != len) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: index: %s", s->path,
                         off != data_end ? "the entries do not cover the "
                         "data region" : "bytes after the last entry");
  }
  return TF_OK;
}

/* ---- opening ----------------------------------------------------------------- */

static tf_code read_at(tf_ckpt_shard *s, void *buf, size_t n, uint64_t off,
                       tf_status *st) {
  int r = tf__pread_full(s->fd, buf, n, off);
  if (r < 0) {
    return tf__ckpt_os_error(st, "cannot read", s->path, errno);
  }
  if (r > 0) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: the file ended at a read of "
                         "%zu bytes at offset %llu (truncated while open?)",
                         s->path, n, (unsigned long long)off);
  }
  return TF_OK;
}

/* Checks the header and footer; *io and *il get the index's place. */
static tf_code read_frame(tf_ckpt_shard *s, unsigned char *header,
                          unsigned char *footer, uint64_t *io, uint64_t *il,
                          tf_status *st) {
  if (s->size < TF__CKPT_HEADER + TF__CKPT_FOOTER) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: %llu bytes, too short for a "
                         "checkpoint shard (truncated?)", s->path,
                         (unsigned long long)s->size);
  }
  TF_TRY(read_at(s, header, TF__CKPT_HEADER, 0, st));
  TF_TRY(read_at(s, footer, TF__CKPT_FOOTER, s->size - TF__CKPT_FOOTER, st));
  if (memcmp(header, TF__CKPT_MAGIC, 8) != 0) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: not a checkpoint shard (bad "
                         "magic)", s->path);
  }
  if (memcmp(footer + 24, TF__CKPT_END_MAGIC, 8) != 0) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: no end marker (truncated or "
                         "damaged)", s->path);
  }
  *io = tf__get_u64(footer);
  *il = tf__get_u64(footer + 8);
  uint64_t room = s->size - TF__CKPT_HEADER - TF__CKPT_FOOTER;
  if (*il < 4 || *il > room || *io != s->size - TF__CKPT_FOOTER - *il ||
      tf__get_u32(footer + 16) != 0) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: footer names an index of "
                         "%llu bytes at %llu, which does not fit the file's "
                         "%llu bytes", s->path, (unsigned long long)*il,
                         (unsigned long long)*io, (unsigned long long)s->size);
  }
  return TF_OK;
}

static tf_code open_index(tf_ckpt_shard *s, tf_status *st) {
  unsigned char header[TF__CKPT_HEADER], footer[TF__CKPT_FOOTER];
  uint64_t io = 0, il = 0;
  TF_TRY(read_frame(s, header, footer, &io, &il, st));
  unsigned char *idx = malloc((size_t)il);
  if (idx == NULL) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: no memory for an "
                         "index of %llu bytes", s->path, (unsigned long long)il);
  }
  tf_code c = read_at(s, idx, (size_t)il, io, st);
  uint32_t crc = tf_crc32c(header, sizeof header);
  crc = tf_crc32c_extend(tf_crc32c_extend(crc, idx, (size_t)il), footer, 20);
  if (c == TF_OK && crc != tf__get_u32(footer + 20)) {
    c = tf_status_set(st, TF_DATA_LOSS, "%s: index CRC32C mismatch (stored "
                      "0x%08x, computed 0x%08x)", s->path,
                      tf__get_u32(footer + 20), crc);
  } else if (c == TF_OK && (tf__get_u32(header + 8) != TF__CKPT_VERSION ||
                            tf__get_u32(header + 12) != 0)) {
    c = tf_status_set(st, TF_UNIMPLEMENTED, "%s: shard format version %u "
                      "(flags 0x%x); this build reads version %u", s->path,
                      tf__get_u32(header + 8), tf__get_u32(header + 12),
                      TF__CKPT_VERSION);
  }
  if (c == TF_OK) {
    c = parse_index(s, idx, (size_t)il, io, st);
  }
  free(idx);
  return c;
}

tf_code tf_ckpt_shard_open_fd(int fd, const char *name, tf_ckpt_shard **out,
                              tf_status *st) {
  *out = NULL;
  tf_ckpt_shard *s = tf__xcalloc(1, sizeof *s);
  s->fd = fd;
  s->path = tf__xstrdup(name);
  tf__strmap_init(&s->first);
  struct stat sb;
  tf_code c;
  if (fstat(fd, &sb) != 0) {
    c = tf__ckpt_os_error(st, "cannot stat", name, errno);
  } else if (!S_ISREG(sb.st_mode)) {
    c = tf_status_set(st, TF_FAILED_PRECONDITION, "%s: not a regular file",
                      name);
  } else {
    s->size = (uint64_t)sb.st_size;
    c = open_index(s, st);
  }
  if (c != TF_OK) {
    tf_ckpt_shard_close(s);
    return c;
  }
  *out = s;
  return TF_OK;
}

tf_code tf_ckpt_shard_open(const char *path, tf_ckpt_shard **out,
                           tf_status *st) {
  *out = NULL;
  int fd = tf__fs_open(path, O_RDONLY, 0);
  if (fd < 0) {
    return tf__ckpt_os_error(st, "cannot open checkpoint shard", path, errno);
  }
  return tf_ckpt_shard_open_fd(fd, path, out, st);
}

void tf_ckpt_shard_close(tf_ckpt_shard *s) {
  if (s == NULL) {
    return;
  }
  close(s->fd);
  for (int i = 0; i < s->n; i++) {
    free(s->e[i].name);
    free(s->e[i].slice);
  }
  free(s->e);
  tf__strmap_fini(&s->first);
  free(s->path);
  free(s);
}

const char *tf_ckpt_shard_path(const tf_ckpt_shard *s) { return s->path; }

int tf_ckpt_shard_count(const tf_ckpt_shard *s) { return s->n; }

void tf_ckpt_shard_info(const tf_ckpt_shard *s, int i, tf_ckpt_info *out) {
  TF_ASSERT(i >= 0 && i < s->n);
  const rentry *r = &s->e[i];
  *out = (tf_ckpt_info){.name = r->name, .slice = r->slice, .dtype = r->dtype,
                        .shape = r->shape, .full = r->full,
                        .bytes = (int64_t)r->length};
}

/* ---- verifying ----------------------------------------------------------------- */

/* Where the pass is: entry k, whose CRC so far is crc. */
typedef struct vpass {
  int k;
  uint32_t crc;
} vpass;

static tf_code crc_error(const tf_ckpt_shard *s, const rentry *r,
                         uint32_t got, tf_status *st) {
  return tf_status_set(st, TF_DATA_LOSS, "tensor '%s'%s%s%s in %s: CRC32C "
                       "mismatch (stored 0x%08x, computed 0x%08x)", r->name,
                       r->slice[0] ? " (slice '" : "", r->slice,
                       r->slice[0] ? "')" : "", s->path, r->crc, got);
}

/* Feeds buf (at file offset off) to the entries' CRCs. */
static tf_code verify_chunk(const tf_ckpt_shard *s, vpass *v,
                            const unsigned char *buf, size_t n, uint64_t off,
                            tf_status *st) {
  while (n > 0 && v->k < s->n) {
    const rentry *r = &s->e[v->k];
    uint64_t end = r->offset + r->length;
    if (off >= end) {
      TF_TRY(v->crc == r->crc ? TF_OK : crc_error(s, r, v->crc, st));
      v->k++;
      v->crc = 0;
      continue;
    }
    size_t skip = off < r->offset ? (size_t)TF_MIN(r->offset - off, n) : 0;
    size_t take = (size_t)TF_MIN(end - off - skip, n - skip);
    v->crc = tf_crc32c_extend(v->crc, buf + skip, take);
    buf += skip + take;
    n -= skip + take;
    off += skip + take;
  }
  return TF_OK;
}

tf_code tf_ckpt_shard_verify_file(tf_ckpt_shard *s, int64_t *bytes,
                                  uint32_t *crc32c, tf_status *st) {
  enum { CHUNK = 4 << 20 };
  unsigned char *buf = tf__xmalloc(CHUNK);
  vpass v = {0, 0};
  uint32_t file_crc = 0;
  tf_code c = TF_OK;
  for (uint64_t off = 0; off < s->size && c == TF_OK;) {
    size_t n = (size_t)TF_MIN((uint64_t)CHUNK, s->size - off);
    c = read_at(s, buf, n, off, st);
    if (c == TF_OK) {
      file_crc = tf_crc32c_extend(file_crc, buf, n);
      c = verify_chunk(s, &v, buf, n, off, st);
      off += n;
    }
  }
  free(buf);
  for (; c == TF_OK && v.k < s->n; v.k++, v.crc = 0) {
    /* The entries the pass ended in (the last, and empty ones). */
    const rentry *r = &s->e[v.k];
    c = v.crc == r->crc ? TF_OK : crc_error(s, r, v.crc, st);
  }
  TF_TRY(c);
  if (bytes != NULL) {
    *bytes = (int64_t)s->size;
  }
  if (crc32c != NULL) {
    *crc32c = file_crc;
  }
  return TF_OK;
}

tf_code tf_ckpt_shard_verify(tf_ckpt_shard *s, tf_status *st) {
  return tf_ckpt_shard_verify_file(s, NULL, NULL, st);
}

/* ---- reading tensors ------------------------------------------------------------ */

static tf_code entry_error(const tf_ckpt_shard *s, const rentry *r,
                           tf_status *st, const char *why, long long at) {
  return tf_status_set(st, TF_DATA_LOSS, "tensor '%s'%s%s%s in %s: %s %lld",
                       r->name, r->slice[0] ? " (slice '" : "", r->slice,
                       r->slice[0] ? "')" : "", s->path, why, at);
}

static tf_code read_numbers(tf_ckpt_shard *s, const rentry *r, tf_tensor *t,
                            tf_status *st) {
  TF_TRY(read_at(s, t->data, (size_t)r->length, r->offset, st));
  uint32_t crc = tf_crc32c(t->data, (size_t)r->length);
  if (crc != r->crc) {
    return crc_error(s, r, crc, st);
  }
  if (r->dtype == TF_BOOL) {
    const unsigned char *b = t->data;
    for (int64_t i = 0; i < t->n; i++) {
      if (b[i] > 1) {
        return entry_error(s, r, st, "bool element is not 0 or 1 at", i);
      }
    }
  }
  return TF_OK;
}

static tf_code read_strings(tf_ckpt_shard *s, const rentry *r, tf_tensor *t,
                            tf_status *st) {
  unsigned char *buf = malloc(r->length > 0 ? (size_t)r->length : 1);
  if (buf == NULL) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "tensor '%s' in %s: no "
                         "memory for %llu bytes", r->name, s->path,
                         (unsigned long long)r->length);
  }
  tf_code c = read_at(s, buf, (size_t)r->length, r->offset, st);
  uint32_t crc = c == TF_OK ? tf_crc32c(buf, (size_t)r->length) : 0;
  if (c == TF_OK && crc != r->crc) {
    c = crc_error(s, r, crc, st);
  }
  uint64_t p = 0;
  for (int64_t i = 0; i < t->n && c == TF_OK; i++) {
    uint32_t len = r->length - p >= 4 ? tf__get_u32(buf + p) : 0;
    if (r->length - p < 4 || len > r->length - p - 4) {
      c = entry_error(s, r, st, "string lengths overrun the bytes at element",
                      i);
    } else {
      c = tf_tensor_set_string(t, i, (const char *)buf + p + 4, len, st);
      p += 4 + (uint64_t)len;
    }
  }
  if (c == TF_OK && p != r->length) {
    c = entry_error(s, r, st, "bytes left after the last string:",
                    (long long)(r->length - p));
  }
  free(buf);
  return c;
}

/* Entry i's tensor (its stored shape), checked against its CRC. */
static tf_code read_entry(tf_ckpt_shard *s, int i, tf_tensor **out,
                          tf_status *st) {
  const rentry *r = &s->e[i];
  tf_tensor *t;
  if (tf_tensor_new(r->dtype, &r->shape, &t, st) != TF_OK) {
    return tf_status_prefix(st, "tensor '%s' in %s", r->name, s->path);
  }
  tf_code c = r->dtype == TF_STRING ? read_strings(s, r, t, st)
                                    : read_numbers(s, r, t, st);
  if (c != TF_OK) {
    tf_tensor_unref(t);
    return c;
  }
  *out = t;
  return TF_OK;
}

/* The pieces of the chain from first that overlap want. */
typedef struct pieces {
  int exact;        /* an entry whose box is want, or -1 */
  int container;    /* an entry whose box holds want, or -1 */
  int64_t covered;  /* elements of want in the pieces (saturating) */
} pieces;

static pieces find_pieces(const tf_ckpt_shard *s, int first,
                          const tf_ckpt_box *want) {
  pieces p = {-1, -1, 0};
  for (int k = first; k >= 0; k = s->e[k].next) {
    const tf_ckpt_box *b = &s->e[k].box;
    tf_ckpt_box common;
    if (tf__ckpt_box_equal(b, want)) {
      p.exact = k;
    }
    if (tf__ckpt_box_contains(b, want)) {
      p.container = k;
    }
    if (tf__ckpt_box_intersect(b, want, &common) &&
        __builtin_add_overflow(p.covered, tf__ckpt_box_volume(&common),
                               &p.covered)) {
      p.covered = INT64_MAX;
    }
  }
  return p;
}

/* Copies every piece overlapping want into dst, marking mask. */
static tf_code copy_pieces(tf_ckpt_shard *s, int first, const tf_ckpt_box *want,
                           tf_tensor *dst, uint8_t *mask, tf_status *st) {
  for (int k = first; k >= 0; k = s->e[k].next) {
    tf_ckpt_box common;
    if (!tf__ckpt_box_intersect(&s->e[k].box, want, &common)) {
      continue;
    }
    tf_tensor *src;
    TF_TRY(read_entry(s, k, &src, st));
    tf_code c = tf__ckpt_box_copy(dst, want, src, &s->e[k].box, &common, st);
    tf_tensor_unref(src);
    TF_TRY(c);
    if (mask != NULL) {
      tf__ckpt_box_mark(mask, want, &common);
    }
  }
  return TF_OK;
}

static tf_code not_covered(const tf_ckpt_shard *s, const rentry *r,
                           const tf_ckpt_box *want, tf_status *st) {
  char b[512];
  return tf_status_set(st, TF_DATA_LOSS, "tensor '%s' in %s: its stored "
                       "slices do not cover '%s'", r->name, s->path,
                       tf__ckpt_slice_str(&r->full, want, b, sizeof b));
}

/* want (a box of the full shape of the chain from first) from the pieces. */
static tf_code assemble(tf_ckpt_shard *s, int first, const tf_ckpt_box *want,
                        tf_tensor **out, tf_status *st) {
  pieces p = find_pieces(s, first, want);
  if (p.exact >= 0) {
    return read_entry(s, p.exact, out, st);
  }
  int64_t vol = tf__ckpt_box_volume(want);
  if (p.covered < vol) {
    return not_covered(s, &s->e[first], want, st);
  }
  tf_shape shape = tf__ckpt_box_shape(want);
  tf_tensor *dst;
  if (tf_tensor_new(s->e[first].dtype, &shape, &dst, st) != TF_OK) {
    return tf_status_prefix(st, "tensor '%s' in %s", s->e[first].name, s->path);
  }
  uint8_t *mask = p.container >= 0 || vol == 0 ? NULL : calloc((size_t)vol, 1);
  tf_code c = TF_OK;
  if (p.container < 0 && vol > 0 && mask == NULL) {
    c = tf_status_set(st, TF_RESOURCE_EXHAUSTED, "tensor '%s' in %s: no "
                      "memory to assemble %lld elements", s->e[first].name,
                      s->path, (long long)vol);
  } else if (p.container >= 0) {
    tf_tensor *src;
    c = read_entry(s, p.container, &src, st);
    if (c == TF_OK) {
      c = tf__ckpt_box_copy(dst, want, src, &s->e[p.container].box, want, st);
      tf_tensor_unref(src);
    }
  } else {
    c = copy_pieces(s, first, want, dst, mask, st);
  }
  if (c == TF_OK && mask != NULL && memchr(mask, 0, (size_t)vol) != NULL) {
    c = not_covered(s, &s->e[first], want, st);
  }
  free(mask);
  if (c != TF_OK) {
    tf_tensor_unref(dst);
    return c;
  }
  *out = dst;
  return TF_OK;
}

tf_code tf_ckpt_shard_read(tf_ckpt_shard *s, const char *name,
                           const char *shape_and_slice, int want_dtype,
                           tf_tensor **out, tf_status *st) {
  *out = NULL;
  intptr_t f = name ? (intptr_t)tf__strmap_get(&s->first, name, NULL) : 0;
  if (f == 0) {
    return tf_status_set(st, TF_NOT_FOUND, "tensor '%s' not found in %s (it "
                         "holds %d entries)", name ? name : "", s->path, s->n);
  }
  const rentry *r = &s->e[f - 1];
  if (want_dtype >= 0 && (tf_dtype)want_dtype != r->dtype) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s' in %s is %s, "
                         "but %s was asked for", name, s->path,
                         tf_dtype_name(r->dtype),
                         tf_dtype_name((tf_dtype)want_dtype));
  }
  tf_shape full;
  tf_ckpt_box want;
  bool whole;
  if (tf__ckpt_slice_parse(shape_and_slice, &full, &want, &whole, st) != TF_OK) {
    return tf_status_prefix(st, "tensor '%s' in %s", name, s->path);
  }
  char a[96], b[96];
  if (whole) {
    want = tf__ckpt_box_whole(&r->full);
  } else if (!tf_shape_equal(&full, &r->full)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s' in %s has "
                         "full shape %s, but '%s' asks for %s", name, s->path,
                         tf_shape_str(&r->full, a, sizeof a), shape_and_slice,
                         tf_shape_str(&full, b, sizeof b));
  }
  return assemble(s, (int)f - 1, &want, out, st);
}
