/* ckpt_shard.c: writing a checkpoint shard file (ckpt_shard.h, layout in
 * ckpt_format.h). The entries are checked first (names, slices against
 * the tensors' shapes, one dtype and full shape per name, no two slices of
 * a name overlapping), then the tensors' bytes stream through the atomic
 * writer's 1 MiB buffer (large tensors straight from their buffers) with
 * their CRC32C computed on the way, then the index and the footer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/ckpt_format.h"
#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/serialize/ckpt_slice.h"
#include "lib/core/base/crc32c.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

/* An entry being written. */
typedef struct wentry {
  const tf_ckpt_entry *e;
  tf_shape full;
  tf_ckpt_box box;
  char slice[512]; /* normalised text, "" when whole */
  uint64_t length;
  uint32_t crc;
  int next;        /* next entry of the same name, -1 */
} wentry;

/* ---- checking -------------------------------------------------------------- */

/* The bytes entry t takes in the file. */
static tf_code data_length(const tf_tensor *t, const char *name,
                           uint64_t *len, tf_status *st) {
  if (t->dtype != TF_STRING) {
    *len = t->nbytes;
    return TF_OK;
  }
  uint64_t n = 4u * (uint64_t)t->n;
  const tf_string *s = tf_tensor_strings(t);
  for (int64_t i = 0; i < t->n; i++) {
    if (s[i].len > UINT32_MAX) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s': string "
                           "element %lld has %zu bytes (at most 2^32 - 1 "
                           "may be saved)", name, (long long)i, s[i].len);
    }
    n += s[i].len;
  }
  *len = n;
  return TF_OK;
}

static tf_code check_entry(const tf_ckpt_entry *e, int i, wentry *w,
                           tf_status *st) {
  size_t nl = e->name ? strlen(e->name) : 0;
  if (nl == 0 || nl > TF_CKPT_NAME_MAX || e->t == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "entry %d: %s", i,
                         e->t == NULL ? "no tensor" :
                         nl == 0 ? "empty tensor name" :
                         "tensor name longer than 4096 bytes");
  }
  if (!tf_dtype_is_valid(e->t->dtype)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s': invalid "
                         "dtype %d", e->name, (int)e->t->dtype);
  }
  bool whole;
  if (tf__ckpt_slice_parse(e->slice, &w->full, &w->box, &whole, st) != TF_OK) {
    return tf_status_prefix(st, "tensor '%s'", e->name);
  }
  w->e = e;
  w->next = -1;
  w->slice[0] = '\0';
  if (whole) {
    w->full = e->t->shape;
    w->box = tf__ckpt_box_whole(&w->full);
  } else {
    tf_shape ext = tf__ckpt_box_shape(&w->box);
    char a[96], b[96];
    if (!tf_shape_equal(&ext, &e->t->shape)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s': slice "
                           "'%s' has shape %s but the tensor is %s", e->name,
                           e->slice, tf_shape_str(&ext, a, sizeof a),
                           tf_shape_str(&e->t->shape, b, sizeof b));
    }
    tf__ckpt_slice_str(&w->full, &w->box, w->slice, sizeof w->slice);
  }
  return data_length(e->t, e->name, &w->length, st);
}

/* Entry i against the earlier entries of its name, the first being f. */
static tf_code check_same_name(const wentry *w, int f, int i, tf_status *st) {
  const wentry *a = &w[f], *b = &w[i];
  char x[96], y[96];
  if (a->e->t->dtype != b->e->t->dtype || !tf_shape_equal(&a->full, &b->full)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s' is saved as "
                         "%s%s and as %s%s: its slices must share one dtype "
                         "and full shape", b->e->name,
                         tf_dtype_name(a->e->t->dtype),
                         tf_shape_str(&a->full, x, sizeof x),
                         tf_dtype_name(b->e->t->dtype),
                         tf_shape_str(&b->full, y, sizeof y));
  }
  for (int k = f; k >= 0; k = w[k].next) {
    tf_ckpt_box common;
    if (tf__ckpt_box_intersect(&w[k].box, &b->box, &common) ||
        tf__ckpt_box_equal(&w[k].box, &b->box)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor '%s': %s%s%s "
                           "%s %s%s%s", b->e->name, b->slice[0] ? "slice '" : "",
                           b->slice[0] ? b->slice : "the whole tensor",
                           b->slice[0] ? "'" : "",
                           tf__ckpt_box_equal(&w[k].box, &b->box)
                               ? "is saved twice, as" : "overlaps",
                           w[k].slice[0] ? "slice '" : "",
                           w[k].slice[0] ? w[k].slice : "the whole tensor",
                           w[k].slice[0] ? "'" : "");
    }
  }
  return TF_OK;
}

static tf_code check_entries(const tf_ckpt_entry *e, int n, wentry *w,
                             tf_status *st) {
  if (n < 0 || n > TF_CKPT_MAX_ENTRIES) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%d entries: a shard holds "
                         "0 to %d", n, TF_CKPT_MAX_ENTRIES);
  }
  tf__strmap first;
  tf__strmap_init(&first);
  int *last = tf__xcalloc((size_t)n + 1, sizeof *last);
  tf_code c = TF_OK;
  for (int i = 0; i < n && c == TF_OK; i++) {
    c = check_entry(&e[i], i, &w[i], st);
    if (c != TF_OK) {
      break;
    }
    intptr_t f = (intptr_t)tf__strmap_get(&first, e[i].name, NULL);
    if (f == 0) {
      tf__strmap_put(&first, e[i].name, (void *)(intptr_t)(i + 1));
    } else if ((c = check_same_name(w, (int)f - 1, i, st)) == TF_OK) {
      w[last[f - 1]].next = i; /* last[] is kept at the first's index */
    }
    last[f ? f - 1 : i] = i;
  }
  free(last);
  tf__strmap_fini(&first);
  return c;
}

/* ---- writing ----------------------------------------------------------------- */

static tf_code write_data(tf__afile *f, wentry *w, tf_status *st) {
  const tf_tensor *t = w->e->t;
  if (t->dtype != TF_STRING) {
    w->crc = tf_crc32c(t->data, t->nbytes);
    return tf__afile_write(f, t->data, t->nbytes, st);
  }
  uint32_t crc = tf_crc32c(NULL, 0);
  const tf_string *s = tf_tensor_strings(t);
  for (int64_t i = 0; i < t->n; i++) {
    unsigned char len[4];
    tf__put_u32(len, (uint32_t)s[i].len);
    crc = tf_crc32c_extend(crc, len, 4);
    crc = tf_crc32c_extend(crc, s[i].data, s[i].len);
    TF_TRY(tf__afile_write(f, len, 4, st));
    TF_TRY(tf__afile_write(f, s[i].data, s[i].len, st));
  }
  w->crc = crc;
  return TF_OK;
}

static size_t index_size(const wentry *w, int n) {
  size_t size = 4;
  for (int i = 0; i < n; i++) {
    size += 4 + strlen(w[i].e->name) + 4 + strlen(w[i].slice) + 4 +
            4 + 8 * (size_t)w[i].e->t->shape.rank +
            4 + 8 * (size_t)w[i].full.rank + 8 + 8 + 4;
  }
  return size;
}

static unsigned char *put_shape(unsigned char *p, const tf_shape *s) {
  tf__put_u32(p, (uint32_t)s->rank);
  p += 4;
  for (int d = 0; d < s->rank; d++, p += 8) {
    tf__put_u64(p, (uint64_t)s->dims[d]);
  }
  return p;
}

/* The index bytes (index_size long); free(). */
static unsigned char *encode_index(const wentry *w, int n, size_t size) {
  unsigned char *buf = tf__xmalloc(size), *p = buf;
  uint64_t off = TF__CKPT_HEADER;
  tf__put_u32(p, (uint32_t)n);
  p += 4;
  for (int i = 0; i < n; i++) {
    const char *strs[2] = {w[i].e->name, w[i].slice};
    for (int k = 0; k < 2; k++) {
      size_t l = strlen(strs[k]);
      tf__put_u32(p, (uint32_t)l);
      memcpy(p + 4, strs[k], l);
      p += 4 + l;
    }
    tf__put_u32(p, (uint32_t)w[i].e->t->dtype);
    p = put_shape(p + 4, &w[i].e->t->shape);
    p = put_shape(p, &w[i].full);
    tf__put_u64(p, off);
    tf__put_u64(p + 8, w[i].length);
    tf__put_u32(p + 16, w[i].crc);
    p += 20;
    off += w[i].length;
  }
  TF_ASSERT((size_t)(p - buf) == size);
  return buf;
}

static tf_code write_all(tf__afile *f, wentry *w, int n, tf_status *st) {
  unsigned char header[TF__CKPT_HEADER] = {0};
  memcpy(header, TF__CKPT_MAGIC, 8);
  tf__put_u32(header + 8, TF__CKPT_VERSION);
  TF_TRY(tf__afile_write(f, header, sizeof header, st));
  for (int i = 0; i < n; i++) {
    TF_TRY(write_data(f, &w[i], st));
  }
  uint64_t index_off = f->bytes;
  size_t size = index_size(w, n);
  unsigned char *index = encode_index(w, n, size);
  unsigned char footer[TF__CKPT_FOOTER] = {0};
  tf__put_u64(footer, index_off);
  tf__put_u64(footer + 8, size);
  uint32_t crc = tf_crc32c(header, sizeof header);
  crc = tf_crc32c_extend(crc, index, size);
  tf__put_u32(footer + 20, tf_crc32c_extend(crc, footer, 20));
  memcpy(footer + 24, TF__CKPT_END_MAGIC, 8);
  tf_code c = tf__afile_write(f, index, size, st);
  free(index);
  return c != TF_OK ? c : tf__afile_write(f, footer, sizeof footer, st);
}

tf_code tf_ckpt_shard_write(const char *path, const tf_ckpt_entry *e, int n,
                            tf_status *st) {
  wentry *w = tf__xcalloc(n > 0 ? (size_t)n : 1, sizeof *w);
  tf_code c = check_entries(e, n, w, st);
  if (c != TF_OK) {
    free(w);
    return tf_status_prefix(st, "cannot save '%s'", path);
  }
  tf__afile f;
  c = tf__afile_open(&f, path, st);
  if (c == TF_OK && (c = write_all(&f, w, n, st)) != TF_OK) {
    tf__afile_abort(&f);
  } else if (c == TF_OK) {
    c = tf__afile_commit(&f, st);
  }
  free(w);
  return c;
}
