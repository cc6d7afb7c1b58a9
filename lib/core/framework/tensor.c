/* tensor.c: refcounted tensors over refcounted buffers.
 *
 * A tf_buffer owns allocator memory and is shared by views; a tf_tensor is
 * a small header (dtype, shape, data pointer) with its own count. String
 * tensors own each element's bytes; the buffer frees them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "tf/tensor.h"

struct tf_buffer {
  tf__refcount refs;
  tf_allocator *alloc;
  void *data;
  size_t nbytes;
  bool is_string; /* elements are tf_string to free */
  int64_t n;
  void (*release)(void *arg); /* wrapped memory: released, not freed */
  void *release_arg;
};

static void buffer_release(void *arg) {
  tf_buffer *b = arg;
  if (b->is_string) {
    tf_string *s = b->data;
    for (int64_t i = 0; i < b->n; i++) free(s[i].data);
  }
  if (b->release != NULL) {
    b->release(b->release_arg);
  } else {
    b->alloc->free(b->alloc, b->data, b->nbytes);
  }
  free(b);
}

static void buffer_unref(tf_buffer *b) {
  if (b != NULL) tf__ref_put(&b->refs, buffer_release, b);
}

tf_code tf_tensor_new_on(tf_allocator *a, tf_dtype dt, const tf_shape *shape,
                         tf_tensor **out, tf_status *st) {
  *out = NULL;
  size_t esize = tf_dtype_size(dt);
  if (esize == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "invalid dtype %d", (int)dt);
  }
  int64_t n;
  TF_TRY(tf_shape_check(shape, esize, &n, st));
  size_t nbytes = (size_t)n * esize;
  tf_buffer *b = malloc(sizeof *b);
  tf_tensor *t = malloc(sizeof *t);
  void *data = a->alloc(a, nbytes);
  if (b == NULL || t == NULL || data == NULL) {
    free(b);
    free(t);
    if (data != NULL) a->free(a, data, nbytes);
    char sbuf[200];
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory allocating a %s%s tensor (%zu bytes) "
                         "on %s",
                         tf_dtype_name(dt), tf_shape_str(shape, sbuf, sizeof sbuf),
                         nbytes, a->name);
  }
  tf__ref_init(&b->refs, 1);
  b->release = NULL;
  b->release_arg = NULL;
  b->alloc = a;
  b->data = data;
  b->nbytes = nbytes;
  b->is_string = dt == TF_STRING;
  b->n = n;
  if (b->is_string) memset(data, 0, nbytes);
  t->dtype = dt;
  t->shape = *shape;
  t->n = n;
  t->nbytes = nbytes;
  t->data = data;
  t->buf = b;
  tf__ref_init(&t->refs, 1);
  *out = t;
  return TF_OK;
}

tf_code tf_tensor_wrap(tf_dtype dt, const tf_shape *shape, void *data,
                       size_t nbytes, void (*release)(void *arg), void *arg,
                       tf_tensor **out, tf_status *st) {
  *out = NULL;
  size_t esize = tf_dtype_size(dt);
  int64_t n = 0;
  tf_code rc = TF_OK;
  if (esize == 0 || dt == TF_STRING) {
    rc = tf_status_set(st, TF_INVALID_ARGUMENT, "tf_tensor_wrap: dtype %s "
                       "cannot wrap memory", tf_dtype_name(dt));
  } else if (tf_shape_check(shape, esize, &n, st) != TF_OK) {
    rc = st->code;
  } else if ((size_t)n * esize != nbytes || ((uintptr_t)data % esize) != 0) {
    rc = tf_status_set(st, TF_INVALID_ARGUMENT, "tf_tensor_wrap: %zu bytes "
                       "at %p for %lld elements of %zu bytes (must match, "
                       "aligned to the element size)", nbytes, data,
                       (long long)n, esize);
  }
  if (rc != TF_OK) {
    if (release != NULL) release(arg);
    return rc;
  }
  tf_buffer *b = tf__xcalloc(1, sizeof *b);
  tf_tensor *t = tf__xcalloc(1, sizeof *t);
  tf__ref_init(&b->refs, 1);
  b->alloc = tf_cpu_allocator();
  b->data = data;
  b->nbytes = nbytes;
  b->n = n;
  b->release = release;
  b->release_arg = arg;
  t->dtype = dt;
  t->shape = *shape;
  t->n = n;
  t->nbytes = nbytes;
  t->data = data;
  t->buf = b;
  tf__ref_init(&t->refs, 1);
  *out = t;
  return TF_OK;
}

tf_code tf_tensor_new(tf_dtype dt, const tf_shape *shape, tf_tensor **out,
                      tf_status *st) {
  return tf_tensor_new_on(tf_cpu_allocator(), dt, shape, out, st);
}

tf_code tf_tensor_new_zeros(tf_dtype dt, const tf_shape *shape,
                            tf_tensor **out, tf_status *st) {
  TF_TRY(tf_tensor_new(dt, shape, out, st));
  memset((*out)->data, 0, (*out)->nbytes);
  return TF_OK;
}

tf_code tf_tensor_from_data(tf_dtype dt, const tf_shape *shape,
                            const void *data, size_t nbytes, tf_tensor **out,
                            tf_status *st) {
  if (dt == TF_STRING) {
    *out = NULL;
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tf_tensor_from_data cannot make string tensors");
  }
  TF_TRY(tf_tensor_new(dt, shape, out, st));
  if (nbytes != (*out)->nbytes) {
    size_t want = (*out)->nbytes;
    tf_tensor_unref(*out);
    *out = NULL;
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor data has %zu bytes, the shape needs %zu",
                         nbytes, want);
  }
  if (nbytes) memcpy((*out)->data, data, nbytes);
  return TF_OK;
}

static tf_tensor *new_or_die(tf_dtype dt, tf_shape shape) {
  tf_tensor *t;
  tf_status st;
  if (tf_tensor_new(dt, &shape, &t, &st) != TF_OK) TF_PANIC("%s", st.msg);
  return t;
}

tf_tensor *tf_tensor_scalar_f32(float v) {
  tf_tensor *t = new_or_die(TF_FLOAT32, tf_shape_scalar());
  *(float *)t->data = v;
  return t;
}

tf_tensor *tf_tensor_scalar_f64(double v) {
  tf_tensor *t = new_or_die(TF_FLOAT64, tf_shape_scalar());
  *(double *)t->data = v;
  return t;
}

tf_tensor *tf_tensor_scalar_i32(int32_t v) {
  tf_tensor *t = new_or_die(TF_INT32, tf_shape_scalar());
  *(int32_t *)t->data = v;
  return t;
}

tf_tensor *tf_tensor_scalar_i64(int64_t v) {
  tf_tensor *t = new_or_die(TF_INT64, tf_shape_scalar());
  *(int64_t *)t->data = v;
  return t;
}

tf_tensor *tf_tensor_scalar_bool(bool v) {
  tf_tensor *t = new_or_die(TF_BOOL, tf_shape_scalar());
  *(bool *)t->data = v;
  return t;
}

static tf_tensor *vec_of(tf_dtype dt, int64_t n, const void *v) {
  tf_tensor *t = new_or_die(dt, tf_shape_of(1, n));
  if (t->nbytes) memcpy(t->data, v, t->nbytes);
  return t;
}

tf_tensor *tf_tensor_vec_f32(int64_t n, const float *v) {
  return vec_of(TF_FLOAT32, n, v);
}
tf_tensor *tf_tensor_vec_i32(int64_t n, const int32_t *v) {
  return vec_of(TF_INT32, n, v);
}
tf_tensor *tf_tensor_vec_i64(int64_t n, const int64_t *v) {
  return vec_of(TF_INT64, n, v);
}

tf_tensor *tf_tensor_ref(tf_tensor *t) {
  if (t != NULL) tf__ref_get(&t->refs);
  return t;
}

static void tensor_release(void *arg) {
  tf_tensor *t = arg;
  buffer_unref(t->buf);
  free(t);
}

void tf_tensor_unref(tf_tensor *t) {
  if (t != NULL) tf__ref_put(&t->refs, tensor_release, t);
}

tf_code tf_tensor_view(tf_tensor *t, const tf_shape *shape, tf_tensor **out,
                       tf_status *st) {
  *out = NULL;
  int64_t n;
  TF_TRY(tf_shape_check(shape, tf_dtype_size(t->dtype), &n, st));
  if (n != t->n) {
    char a[200], b[200];
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "cannot view a tensor of shape %s (%lld elements) as "
                         "%s (%lld elements)",
                         tf_shape_str(&t->shape, a, sizeof a), (long long)t->n,
                         tf_shape_str(shape, b, sizeof b), (long long)n);
  }
  tf_tensor *v = malloc(sizeof *v);
  if (v == NULL) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "out of memory");
  }
  *v = (tf_tensor){.dtype = t->dtype, .shape = *shape, .n = n,
                   .nbytes = t->nbytes, .data = t->data, .buf = t->buf};
  tf__ref_init(&v->refs, 1);
  tf__ref_get(&t->buf->refs);
  *out = v;
  return TF_OK;
}

tf_code tf_tensor_copy(const tf_tensor *t, tf_tensor **out, tf_status *st) {
  TF_TRY(tf_tensor_new_on(t->buf->alloc, t->dtype, &t->shape, out, st));
  if (t->dtype != TF_STRING) {
    if (t->nbytes) memcpy((*out)->data, t->data, t->nbytes);
    return TF_OK;
  }
  const tf_string *s = tf_tensor_strings(t);
  for (int64_t i = 0; i < t->n; i++) {
    tf_code c = tf_tensor_set_string(*out, i, s[i].data, s[i].len, st);
    if (c != TF_OK) {
      tf_tensor_unref(*out);
      *out = NULL;
      return c;
    }
  }
  return TF_OK;
}

bool tf_tensor_buffer_is_unique(const tf_tensor *t) {
  return tf__ref_count(&t->refs) == 1 && tf__ref_count(&t->buf->refs) == 1;
}

tf_allocator *tf_tensor_allocator(const tf_tensor *t) { return t->buf->alloc; }

tf_code tf_tensor_set_string(tf_tensor *t, int64_t i, const char *bytes,
                             size_t len, tf_status *st) {
  if (t->dtype != TF_STRING || i < 0 || i >= t->n) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "string element %lld out of range for a %s tensor "
                         "of %lld elements",
                         (long long)i, tf_dtype_name(t->dtype), (long long)t->n);
  }
  char *copy = NULL;
  if (len > 0) {
    copy = malloc(len + 1);
    if (copy == NULL) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                           "out of memory for a %zu-byte string", len);
    }
    memcpy(copy, bytes, len);
    copy[len] = '\0';
  }
  tf_string *s = &tf_tensor_strings(t)[i];
  free(s->data);
  s->data = copy;
  s->len = len;
  return TF_OK;
}

bool tf_tensor_equal(const tf_tensor *a, const tf_tensor *b) {
  if (a->dtype != b->dtype || !tf_shape_equal(&a->shape, &b->shape)) {
    return false;
  }
  if (a->dtype != TF_STRING) return memcmp(a->data, b->data, a->nbytes) == 0;
  const tf_string *sa = tf_tensor_strings(a), *sb = tf_tensor_strings(b);
  for (int64_t i = 0; i < a->n; i++) {
    if (sa[i].len != sb[i].len) return false;
    if (sa[i].len && memcmp(sa[i].data, sb[i].data, sa[i].len) != 0) {
      return false;
    }
  }
  return true;
}

double tf_tensor_get_f64(const tf_tensor *t, int64_t i) {
  const void *p = (const char *)t->data + (size_t)i * tf_dtype_size(t->dtype);
  switch (t->dtype) {
  case TF_FLOAT32: return *(const float *)p;
  case TF_FLOAT64: return *(const double *)p;
  case TF_INT8: return *(const int8_t *)p;
  case TF_INT16: return *(const int16_t *)p;
  case TF_INT32: return *(const int32_t *)p;
  case TF_INT64: return (double)*(const int64_t *)p;
  case TF_UINT8: return *(const uint8_t *)p;
  case TF_UINT16: return *(const uint16_t *)p;
  case TF_UINT32: return *(const uint32_t *)p;
  case TF_UINT64: return (double)*(const uint64_t *)p;
  case TF_BOOL: return *(const bool *)p ? 1.0 : 0.0;
  case TF_BFLOAT16: return tf_bfloat16_to_float(*(const tf_bfloat16 *)p);
  case TF_FLOAT16: return tf_float16_to_float(*(const tf_float16 *)p);
  case TF_COMPLEX64: return ((const tf_complex64 *)p)->re;
  default: return 0.0;
  }
}

int64_t tf_tensor_get_i64(const tf_tensor *t, int64_t i) {
  const void *p = (const char *)t->data + (size_t)i * tf_dtype_size(t->dtype);
  switch (t->dtype) {
  case TF_INT8: return *(const int8_t *)p;
  case TF_INT16: return *(const int16_t *)p;
  case TF_INT32: return *(const int32_t *)p;
  case TF_INT64: return *(const int64_t *)p;
  case TF_UINT8: return *(const uint8_t *)p;
  case TF_UINT16: return *(const uint16_t *)p;
  case TF_UINT32: return *(const uint32_t *)p;
  case TF_UINT64: return (int64_t)*(const uint64_t *)p;
  case TF_BOOL: return *(const bool *)p;
  default: {
    double d = tf_tensor_get_f64(t, i);
    if (!(d == d)) return 0;
    /* Saturate outside [-2^63, 2^63); every double inside converts. */
    if (d >= 0x1p63) return INT64_MAX;
    if (d < -0x1p63) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

char *tf_tensor_str(const tf_tensor *t, char *buf, size_t size) {
  char sb[200];
  size_t off = (size_t)snprintf(buf, size, "%s%s {", tf_dtype_name(t->dtype),
                                tf_shape_str(&t->shape, sb, sizeof sb));
  int64_t show = t->n < 8 ? t->n : 8;
  for (int64_t i = 0; i < show && off < size; i++) {
    if (t->dtype == TF_STRING) {
      const tf_string *s = &tf_tensor_strings(t)[i];
      off += (size_t)snprintf(buf + off, size - off, "%s\"%.*s\"", i ? ", " : "",
                              (int)(s->len > 16 ? 16 : s->len),
                              s->data ? s->data : "");
    } else {
      off += (size_t)snprintf(buf + off, size - off, "%s%g", i ? ", " : "",
                              tf_tensor_get_f64(t, i));
    }
  }
  if (off < size) {
    snprintf(buf + off, size - off, "%s}", t->n > show ? ", ..." : "");
  }
  return buf;
}
