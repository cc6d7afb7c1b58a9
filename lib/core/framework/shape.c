/* shape.c: tf_shape construction, checks, printing, broadcasting and
 * merging of partially known shapes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "tf/tensor.h"

tf_shape tf_shape_make(int rank, const int64_t *dims) {
  tf_shape s;
  memset(&s, 0, sizeof s);
  TF_ASSERT(rank >= TF_UNKNOWN_RANK && rank <= TF_MAX_RANK);
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims ? dims[i] : TF_UNKNOWN_DIM;
  return s;
}

tf_shape tf_shape_unknown(void) { return tf_shape_make(TF_UNKNOWN_RANK, NULL); }

tf_shape tf_shape_scalar(void) { return tf_shape_make(0, NULL); }

bool tf_shape_is_fully_defined(const tf_shape *s) {
  if (s->rank < 0) return false;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return false;
  }
  return true;
}

bool tf_shape_equal(const tf_shape *a, const tf_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] != b->dims[i]) return false;
  }
  return true;
}

int64_t tf_shape_num_elements(const tf_shape *s) {
  if (!tf_shape_is_fully_defined(s)) return -1;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (__builtin_mul_overflow(n, s->dims[i], &n)) return -1;
  }
  return n;
}

tf_code tf_shape_check(const tf_shape *s, size_t elem_size, int64_t *n_out,
                       tf_status *st) {
  char buf[200];
  if (s->rank < 0 || s->rank > TF_MAX_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "shape rank %d is out of range [0, %d]", s->rank,
                         TF_MAX_RANK);
  }
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "shape %s has a negative dimension %lld at axis %d",
                           tf_shape_str(s, buf, sizeof buf),
                           (long long)s->dims[i], i);
    }
    if (__builtin_mul_overflow(n, s->dims[i], &n)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "shape %s has more elements than fit in int64",
                           tf_shape_str(s, buf, sizeof buf));
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, (int64_t)elem_size, &bytes) ||
      (uint64_t)bytes > (uint64_t)SIZE_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "shape %s of %lld elements of %zu bytes overflows the "
                         "addressable size",
                         tf_shape_str(s, buf, sizeof buf), (long long)n,
                         elem_size);
  }
  if (n_out != NULL) *n_out = n;
  return TF_OK;
}

char *tf_shape_str(const tf_shape *s, char *buf, size_t size) {
  if (size == 0) return buf;
  if (s->rank < 0) {
    snprintf(buf, size, "<unknown>");
    return buf;
  }
  size_t off = 0;
  off += (size_t)snprintf(buf + off, size - off, "[");
  for (int i = 0; i < s->rank && off < size; i++) {
    if (s->dims[i] < 0) {
      off += (size_t)snprintf(buf + off, size - off, "%s?", i ? "," : "");
    } else {
      off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? "," : "",
                              (long long)s->dims[i]);
    }
  }
  if (off < size) snprintf(buf + off, size - off, "]");
  return buf;
}

tf_code tf_shape_broadcast(const tf_shape *a, const tf_shape *b, tf_shape *out,
                           tf_status *st) {
  if (a->rank < 0 || b->rank < 0) {
    *out = tf_shape_unknown();
    return TF_OK;
  }
  int rank = TF_MAX(a->rank, b->rank);
  tf_shape r = tf_shape_make(rank, NULL);
  for (int i = 0; i < rank; i++) {
    int ia = a->rank - rank + i, ib = b->rank - rank + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;
    if (da == db) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da < 0 || db < 0) {
      d = da < 0 ? db : da; /* the known one, unless it must be checked */
    } else {
      char sa[200], sb[200];
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "incompatible shapes for broadcasting: %s and %s",
                           tf_shape_str(a, sa, sizeof sa),
                           tf_shape_str(b, sb, sizeof sb));
    }
    r.dims[i] = d;
  }
  *out = r;
  return TF_OK;
}

tf_code tf_shape_merge(const tf_shape *a, const tf_shape *b, tf_shape *out,
                       tf_status *st) {
  char sa[200], sb[200];
  if (a->rank < 0 || b->rank < 0) {
    const tf_shape *k = a->rank < 0 ? b : a;
    tf_shape m = tf_shape_make(k->rank < 0 ? TF_UNKNOWN_RANK : k->rank, NULL);
    for (int i = 0; i < m.rank; i++) {
      m.dims[i] = k->dims[i] < 0 ? TF_UNKNOWN_DIM : k->dims[i];
    }
    *out = m;
    return TF_OK;
  }
  if (a->rank != b->rank) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "shapes %s and %s are "
                         "incompatible: rank %d vs %d",
                         tf_shape_str(a, sa, sizeof sa),
                         tf_shape_str(b, sb, sizeof sb), a->rank, b->rank);
  }
  tf_shape m = tf_shape_make(a->rank, NULL);
  for (int i = 0; i < a->rank; i++) {
    int64_t x = a->dims[i], y = b->dims[i];
    if (x >= 0 && y >= 0 && x != y) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "shapes %s and %s are "
                           "incompatible: dimension %d is %lld vs %lld",
                           tf_shape_str(a, sa, sizeof sa),
                           tf_shape_str(b, sb, sizeof sb), i, (long long)x,
                           (long long)y);
    }
    m.dims[i] = x >= 0 ? x : (y >= 0 ? y : TF_UNKNOWN_DIM);
  }
  *out = m;
  return TF_OK;
}
