/* ckpt_slice.c: shape_and_slice text and N-d boxes (ckpt_slice.h). The
 * parser is strict (single spaces, decimal digits only) because the text
 * comes from graphs and from checkpoint files alike; the box copy moves
 * the longest contiguous runs it can (whole rows, or whole blocks when the
 * region spans the trailing dims of both tensors) with memcpy. */
#include <stdio.h>
#include <string.h>

#include "lib/core/serialize/ckpt_slice.h"
#include "lib/core/base/util.h"

/* ---- parsing ----------------------------------------------------------------- */

/* A decimal number of at most 18 digits at s[0..n) into *v. */
static bool parse_num(const char *s, size_t n, int64_t *v) {
  if (n == 0 || n > 18) {
    return false;
  }
  int64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return true;
}

/* The full shape: the space-separated dims before the last space. */
static tf_code parse_full(const char *text, const char *last_space,
                          tf_shape *full, tf_status *st) {
  *full = (tf_shape){0};
  const char *p = text;
  while (p <= last_space) {
    const char *sp = strchr(p, ' ');
    if (full->rank == TF_MAX_RANK) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                           "more than %d dims", text, TF_MAX_RANK);
    }
    if (!parse_num(p, (size_t)(sp - p), &full->dims[full->rank])) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                           "dim %d is not a non-negative number (dims are "
                           "separated by one space)", text, full->rank);
    }
    full->rank++;
    p = sp + 1;
  }
  tf_ckpt_box w = tf__ckpt_box_whole(full);
  if (tf__ckpt_box_volume(&w) < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                         "the shape has more than 2^63 elements", text);
  }
  return TF_OK;
}

/* One "start,length" or "-" of dim d at s[0..n). */
static tf_code parse_extent(const char *text, const char *s, size_t n, int d,
                            const tf_shape *full, tf_ckpt_box *box,
                            tf_status *st) {
  if (n == 1 && s[0] == '-') {
    box->start[d] = 0;
    box->len[d] = full->dims[d];
    return TF_OK;
  }
  const char *comma = memchr(s, ',', n);
  int64_t a, l;
  if (comma == NULL || !parse_num(s, (size_t)(comma - s), &a) ||
      !parse_num(comma + 1, n - (size_t)(comma - s) - 1, &l) || l < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                         "slice of dim %d must be '-' or 'start,length' "
                         "with start >= 0 and length >= 1", text, d);
  }
  if (a > full->dims[d] || l > full->dims[d] - a) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                         "slice %lld,%lld of dim %d is outside its size %lld",
                         text, (long long)a, (long long)l, d,
                         (long long)full->dims[d]);
  }
  box->start[d] = a;
  box->len[d] = l;
  return TF_OK;
}

tf_code tf__ckpt_slice_parse(const char *text, tf_shape *full,
                             tf_ckpt_box *box, bool *whole, tf_status *st) {
  *whole = text == NULL || text[0] == '\0';
  if (*whole) {
    return TF_OK;
  }
  const char *last = strrchr(text, ' ');
  if (last == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                         "expected the full shape's dims, a space and the "
                         "slice (e.g. '10 20 0,5:-')", text);
  }
  TF_TRY(parse_full(text, last, full, st));
  *box = (tf_ckpt_box){.rank = full->rank};
  const char *p = last + 1;
  for (int d = 0; d < full->rank; d++) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    if ((colon == NULL) != (d == full->rank - 1)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "shape_and_slice '%s': "
                           "the slice must have one extent per dim (%d)",
                           text, full->rank);
    }
    TF_TRY(parse_extent(text, p, n, d, full, box, st));
    p += n + 1;
  }
  return TF_OK;
}

char *tf__ckpt_slice_str(const tf_shape *full, const tf_ckpt_box *box,
                         char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < full->rank && off < size; d++) {
    off += (size_t)snprintf(buf + off, size - off, "%lld ",
                            (long long)full->dims[d]);
  }
  for (int d = 0; d < box->rank && off < size; d++) {
    bool all = box->start[d] == 0 && box->len[d] == full->dims[d];
    off += all ? (size_t)snprintf(buf + off, size - off, "%s-", d ? ":" : "")
               : (size_t)snprintf(buf + off, size - off, "%s%lld,%lld",
                                  d ? ":" : "", (long long)box->start[d],
                                  (long long)box->len[d]);
  }
  return buf;
}

/* ---- boxes ------------------------------------------------------------------- */

tf_ckpt_box tf__ckpt_box_whole(const tf_shape *full) {
  tf_ckpt_box b = {.rank = full->rank};
  for (int d = 0; d < full->rank; d++) {
    b.len[d] = full->dims[d];
  }
  return b;
}

tf_shape tf__ckpt_box_shape(const tf_ckpt_box *b) {
  return tf_shape_make(b->rank, b->len);
}

int64_t tf__ckpt_box_volume(const tf_ckpt_box *b) {
  int64_t v = 1;
  for (int d = 0; d < b->rank; d++) {
    if (b->len[d] < 0 || __builtin_mul_overflow(v, b->len[d], &v)) {
      return -1;
    }
  }
  return v;
}

bool tf__ckpt_box_equal(const tf_ckpt_box *a, const tf_ckpt_box *b) {
  if (a->rank != b->rank) {
    return false;
  }
  for (int d = 0; d < a->rank; d++) {
    if (a->start[d] != b->start[d] || a->len[d] != b->len[d]) {
      return false;
    }
  }
  return true;
}

bool tf__ckpt_box_contains(const tf_ckpt_box *a, const tf_ckpt_box *b) {
  for (int d = 0; d < a->rank; d++) {
    if (b->start[d] < a->start[d] ||
        b->start[d] + b->len[d] > a->start[d] + a->len[d]) {
      return false;
    }
  }
  return true;
}

bool tf__ckpt_box_intersect(const tf_ckpt_box *a, const tf_ckpt_box *b,
                            tf_ckpt_box *out) {
  out->rank = a->rank;
  for (int d = 0; d < a->rank; d++) {
    int64_t lo = TF_MAX(a->start[d], b->start[d]);
    int64_t hi = TF_MIN(a->start[d] + a->len[d], b->start[d] + b->len[d]);
    if (hi <= lo) {
      return false;
    }
    out->start[d] = lo;
    out->len[d] = hi - lo;
  }
  return true;
}

/* ---- copying ----------------------------------------------------------------- */

/* How region r of a tensor holding box b is laid out: row-major strides
 * (in elements) of b, and the first dim from which r spans the rest of b
 * and of the other box o (so dims >= inner are one contiguous run). */
typedef struct box_walk {
  int rank, inner;
  int64_t run;                  /* elements per contiguous run */
  int64_t idx[TF_MAX_RANK];     /* position in r over dims < inner */
} box_walk;

static void strides_of(const tf_ckpt_box *b, int64_t *s) {
  int64_t acc = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= b->len[d];
  }
}

static box_walk walk_init(const tf_ckpt_box *r, const tf_ckpt_box *a,
                          const tf_ckpt_box *b) {
  box_walk w = {.rank = r->rank, .inner = r->rank, .run = 1};
  while (w.inner > 0) {
    int d = w.inner - 1;
    w.run *= r->len[d];
    w.inner = d;
    if (r->len[d] != a->len[d] || r->len[d] != b->len[d]) {
      break; /* dim d is the outermost of the run */
    }
  }
  return w;
}

/* Offset (elements) in the tensor of box b of the run at w's position. */
static int64_t walk_offset(const box_walk *w, const tf_ckpt_box *r,
                           const tf_ckpt_box *b, const int64_t *strides) {
  int64_t off = 0;
  for (int d = 0; d < w->rank; d++) {
    int64_t i = d < w->inner ? w->idx[d] : 0;
    off += (r->start[d] + i - b->start[d]) * strides[d];
  }
  return off;
}

/* Moves to the next run; false after the last. */
static bool walk_next(box_walk *w, const tf_ckpt_box *r) {
  for (int d = w->inner - 1; d >= 0; d--) {
    if (++w->idx[d] < r->len[d]) {
      return true;
    }
    w->idx[d] = 0;
  }
  return false;
}

tf_code tf__ckpt_box_copy(tf_tensor *dst, const tf_ckpt_box *db,
                          const tf_tensor *src, const tf_ckpt_box *sb,
                          const tf_ckpt_box *r, tf_status *st) {
  TF_ASSERT(dst->dtype == src->dtype && r->rank == db->rank &&
            r->rank == sb->rank);
  if (tf__ckpt_box_volume(r) == 0) {
    return TF_OK;
  }
  int64_t ds[TF_MAX_RANK], ss[TF_MAX_RANK];
  strides_of(db, ds);
  strides_of(sb, ss);
  box_walk w = walk_init(r, db, sb);
  size_t es = tf_dtype_size(dst->dtype);
  do {
    int64_t od = walk_offset(&w, r, db, ds), os = walk_offset(&w, r, sb, ss);
    if (dst->dtype != TF_STRING) {
      memcpy((char *)dst->data + (size_t)od * es,
             (const char *)src->data + (size_t)os * es, (size_t)w.run * es);
      continue;
    }
    const tf_string *s = tf_tensor_strings(src) + os;
    for (int64_t i = 0; i < w.run; i++) {
      TF_TRY(tf_tensor_set_string(dst, od + i, s[i].data, s[i].len, st));
    }
  } while (walk_next(&w, r));
  return TF_OK;
}

void tf__ckpt_box_mark(uint8_t *mask, const tf_ckpt_box *db,
                       const tf_ckpt_box *r) {
  if (tf__ckpt_box_volume(r) == 0) {
    return;
  }
  int64_t ds[TF_MAX_RANK];
  strides_of(db, ds);
  box_walk w = walk_init(r, db, db);
  do {
    memset(mask + walk_offset(&w, r, db, ds), 1, (size_t)w.run);
  } while (walk_next(&w, r));
}
