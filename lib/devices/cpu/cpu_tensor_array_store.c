/* cpu_tensor_array_store.c: the TensorArray resource (cpu_tensor_array.h):
 * element table, write-once and clear-after-read rules, dynamic growth,
 * zeros for unwritten elements of known shape, and the gradient arrays
 * whose writes add up (TensorFlow's multiple_writes_aggregate). */
#include "lib/devices/cpu/cpu_tensor_array.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/half.h"
#include "lib/core/base/util.h"

typedef struct ta_elem {
  tf_tensor *t;   /* NULL when not written, or cleared */
  bool written;   /* stays true after a clearing read */
  bool cleared;   /* read with clear_after_read */
  bool has_shape; /* shape is the written value's (or the forward's) */
  tf_shape shape;
} ta_elem;

struct tf__tensor_array {
  tf_resource res; /* first: tf__ta_resource casts */
  pthread_mutex_t mu;
  tf_dtype dtype;
  tf_shape element_shape;
  bool dynamic_size, clear_after_read, identical_shapes;
  bool is_grad;     /* writes add up */
  bool size_frozen; /* a gradient array was made: no more growth */
  bool closed;
  int64_t size, cap;
  ta_elem *elems;
  char *display;
};

static void ta_free(tf_resource *r) {
  tf__tensor_array *ta = (tf__tensor_array *)r;
  for (int64_t i = 0; i < ta->size; i++) {
    tf_tensor_unref(ta->elems[i].t);
  }
  free(ta->elems);
  free(ta->display);
  pthread_mutex_destroy(&ta->mu);
  tf_resource_fini(r);
  free(ta);
}

const tf_resource_type tf__tensor_array_type = {.name = "TensorArray",
                                                 .free = ta_free};

tf__tensor_array *tf__ta_cast(tf_resource *r) {
  return r != NULL && r->type == &tf__tensor_array_type
             ? (tf__tensor_array *)r : NULL;
}

const char *tf__ta_name(const tf__tensor_array *ta) { return ta->display; }
tf_dtype tf__ta_dtype(const tf__tensor_array *ta) { return ta->dtype; }
tf_shape tf__ta_element_shape(const tf__tensor_array *ta) {
  return ta->element_shape;
}

/* Makes room for n elements (new ones zeroed); the caller checked n. */
static void ta_reserve(tf__tensor_array *ta, int64_t n) {
  if (n <= ta->cap) {
    return;
  }
  int64_t cap = ta->cap > 0 ? ta->cap : 4;
  while (cap < n) {
    cap *= 2;
  }
  cap = cap > TF__TA_MAX_SIZE ? TF__TA_MAX_SIZE : cap;
  ta->elems = tf__xrealloc(ta->elems, (size_t)cap * sizeof *ta->elems);
  memset(ta->elems + ta->cap, 0, (size_t)(cap - ta->cap) * sizeof *ta->elems);
  ta->cap = cap;
}

tf_code tf__ta_new(const tf__ta_config *cfg, const char *key,
                   tf__tensor_array **out, tf_status *st) {
  *out = NULL;
  if (cfg->size < 0 || cfg->size > TF__TA_MAX_SIZE) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TensorArray '%s': size "
                         "%lld is not in [0, %lld]", cfg->display,
                         (long long)cfg->size, (long long)TF__TA_MAX_SIZE);
  }
  tf__tensor_array *ta = tf__xcalloc(1, sizeof *ta);
  tf_resource_init(&ta->res, &tf__tensor_array_type, TF__TA_CONTAINER, key);
  pthread_mutex_init(&ta->mu, NULL);
  ta->dtype = cfg->dtype;
  ta->element_shape = cfg->element_shape;
  ta->dynamic_size = cfg->dynamic_size;
  ta->clear_after_read = cfg->clear_after_read;
  ta->identical_shapes = cfg->identical_shapes;
  ta->display = tf__xstrdup(cfg->display);
  ta_reserve(ta, cfg->size);
  ta->size = cfg->size;
  *out = ta;
  return TF_OK;
}

/* ---- writes ---------------------------------------------------------------- */

/* a += b elementwise (same dtype and shape); a is not shared. */
static tf_code add_into(tf_tensor *a, const tf_tensor *b) {
  int64_t n = a->n;
  switch (a->dtype) {
#define ADD_CASE(E, T)                                                         \
  case E: {                                                                    \
    T *x = a->data;                                                            \
    const T *y = b->data;                                                      \
    for (int64_t i = 0; i < n; i++) x[i] += y[i];                              \
    return TF_OK;                                                              \
  }
    ADD_CASE(TF_FLOAT32, float)
    ADD_CASE(TF_FLOAT64, double)
    ADD_CASE(TF_INT32, int32_t)
    ADD_CASE(TF_INT64, int64_t)
#undef ADD_CASE
  case TF_COMPLEX64: {
    tf_complex64 *x = a->data;
    const tf_complex64 *y = b->data;
    for (int64_t i = 0; i < n; i++) {
      x[i].re += y[i].re;
      x[i].im += y[i].im;
    }
    return TF_OK;
  }
  case TF_FLOAT16:
  case TF_BFLOAT16: {
    bool h = a->dtype == TF_FLOAT16;
    uint16_t *x = a->data;
    const uint16_t *y = b->data;
    for (int64_t i = 0; i < n; i++) {
      float s = h ? tf__f16_to_f32(x[i]) + tf__f16_to_f32(y[i])
                  : tf__bf16_to_f32(x[i]) + tf__bf16_to_f32(y[i]);
      x[i] = h ? tf__f32_to_f16(s) : tf__f32_to_bf16(s);
    }
    return TF_OK;
  }
  default:
    return TF_UNIMPLEMENTED;
  }
}

/* A gradient array's second write at index: elem = elem + value. */
static tf_code aggregate(tf__tensor_array *ta, ta_elem *e, int64_t index,
                         const tf_tensor *value, tf_status *st) {
  char a[96], b[96];
  if (!tf_shape_equal(&e->t->shape, &value->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TensorArray '%s': "
                         "gradient at index %lld has shape %s, and a second "
                         "one of shape %s cannot be added to it", ta->display,
                         (long long)index, tf_shape_str(&e->t->shape, a, sizeof a),
                         tf_shape_str(&value->shape, b, sizeof b));
  }
  tf_tensor *sum;
  TF_TRY(tf_tensor_copy(e->t, &sum, st));
  if (add_into(sum, value) != TF_OK) {
    tf_tensor_unref(sum);
    return tf_status_set(st, TF_UNIMPLEMENTED, "TensorArray '%s': adding "
                         "gradients of dtype %s is not supported", ta->display,
                         tf_dtype_name(ta->dtype));
  }
  tf_tensor_unref(e->t);
  e->t = sum;
  return TF_OK;
}

/* Checks value's dtype and shape against the array; with
 * identical_element_shapes the first write fixes the element shape. */
static tf_code check_value(tf__tensor_array *ta, int64_t index,
                           const tf_tensor *value, tf_status *st) {
  char a[96], b[96];
  if (value->dtype != ta->dtype) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TensorArray '%s' holds %s, "
                         "but the value written at index %lld is %s",
                         ta->display, tf_dtype_name(ta->dtype),
                         (long long)index, tf_dtype_name(value->dtype));
  }
  tf_shape merged;
  if (tf_shape_merge(&ta->element_shape, &value->shape, &merged, NULL) != TF_OK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TensorArray '%s': the "
                         "value written at index %lld has shape %s, but the "
                         "elements have shape %s", ta->display, (long long)index,
                         tf_shape_str(&value->shape, a, sizeof a),
                         tf_shape_str(&ta->element_shape, b, sizeof b));
  }
  if (ta->identical_shapes) {
    ta->element_shape = merged;
  }
  return TF_OK;
}

/* Index within the array, growing a dynamic one; the caller holds mu. */
static tf_code reach(tf__tensor_array *ta, int64_t index, bool grow,
                     tf_status *st) {
  if (index >= 0 && index < ta->size) {
    return TF_OK;
  }
  if (grow && index >= 0 && ta->dynamic_size && !ta->size_frozen &&
      index < TF__TA_MAX_SIZE) {
    ta_reserve(ta, index + 1);
    ta->size = index + 1;
    return TF_OK;
  }
  const char *why = index >= TF__TA_MAX_SIZE ? " (the most a TensorArray may "
                    "hold is 4194304 elements)"
                    : grow && ta->dynamic_size && ta->size_frozen
                    ? " (its size is frozen: a gradient array was made from "
                      "it)" : "";
  return tf_status_set(st, TF_INVALID_ARGUMENT, "TensorArray '%s': index "
                       "%lld is out of range [0, %lld)%s", ta->display,
                       (long long)index, (long long)ta->size, why);
}

static tf_code write_locked(tf__tensor_array *ta, int64_t index,
                            tf_tensor *value, tf_status *st) {
  if (ta->closed) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s' is "
                         "closed: cannot write index %lld", ta->display,
                         (long long)index);
  }
  TF_TRY(check_value(ta, index, value, st));
  TF_TRY(reach(ta, index, true, st));
  ta_elem *e = &ta->elems[index];
  if (e->cleared) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s': "
                         "cannot write index %lld: it was already read and "
                         "cleared (clear_after_read)", ta->display,
                         (long long)index);
  }
  if (e->written && !ta->is_grad) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s': "
                         "index %lld was already written (each index may be "
                         "written once)", ta->display, (long long)index);
  }
  if (e->t != NULL) {
    return aggregate(ta, e, index, value, st);
  }
  e->t = tf_tensor_ref(value);
  e->written = true;
  e->has_shape = true;
  e->shape = value->shape;
  return TF_OK;
}

tf_code tf__ta_write(tf__tensor_array *ta, int64_t index, tf_tensor *value,
                     tf_status *st) {
  pthread_mutex_lock(&ta->mu);
  tf_code rc = write_locked(ta, index, value, st);
  pthread_mutex_unlock(&ta->mu);
  return rc;
}

/* ---- reads ----------------------------------------------------------------- */

/* A new reference to element index (zeros of its known shape when
 * unwritten); the caller holds mu and clears afterwards. */
static tf_code read_one(tf__tensor_array *ta, int64_t index, tf_tensor **out,
                        tf_status *st) {
  char b[96];
  TF_TRY(reach(ta, index, false, st));
  ta_elem *e = &ta->elems[index];
  if (e->cleared) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s': "
                         "index %lld was already read and cleared "
                         "(clear_after_read is true)", ta->display,
                         (long long)index);
  }
  if (e->t != NULL) {
    *out = tf_tensor_ref(e->t);
    return TF_OK;
  }
  tf_shape s = e->has_shape ? e->shape : ta->element_shape;
  if (!tf_shape_is_fully_defined(&s)) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s': "
                         "index %lld has not been written, and zeros cannot "
                         "stand in for it: the element shape %s is not fully "
                         "defined", ta->display, (long long)index,
                         tf_shape_str(&s, b, sizeof b));
  }
  return tf_tensor_new_zeros(ta->dtype, &s, out, st);
}

tf_code tf__ta_read(tf__tensor_array *ta, const int64_t *idx, int64_t n,
                    tf_tensor **out, tf_status *st) {
  pthread_mutex_lock(&ta->mu);
  tf_code rc = TF_OK;
  if (ta->closed) {
    rc = tf_status_set(st, TF_FAILED_PRECONDITION, "TensorArray '%s' is "
                       "closed: cannot read it", ta->display);
  }
  int64_t got = 0;
  for (; rc == TF_OK && got < n; got++) {
    rc = read_one(ta, idx[got], &out[got], st);
    if (rc == TF_OK && ta->clear_after_read) {
      /* At once, so an index gathered twice is an error, as in TF. */
      ta_elem *e = &ta->elems[idx[got]];
      tf_tensor_unref(e->t);
      e->t = NULL;
      e->cleared = true;
    }
  }
  if (rc != TF_OK) {
    for (int64_t i = 0; i + 1 < got; i++) {
      tf_tensor_unref(out[i]);
      out[i] = NULL;
    }
  }
  pthread_mutex_unlock(&ta->mu);
  return rc;
}

int64_t tf__ta_size(tf__tensor_array *ta) {
  pthread_mutex_lock(&ta->mu);
  int64_t n = ta->size;
  pthread_mutex_unlock(&ta->mu);
  return n;
}

void tf__ta_close(tf__tensor_array *ta) {
  pthread_mutex_lock(&ta->mu);
  for (int64_t i = 0; i < ta->size; i++) {
    tf_tensor_unref(ta->elems[i].t);
    ta->elems[i].t = NULL;
  }
  ta->closed = true;
  pthread_mutex_unlock(&ta->mu);
}

/* ---- gradient arrays -------------------------------------------------------- */

void tf__ta_sync_grad_shapes(tf__tensor_array *fwd, tf__tensor_array *grad) {
  pthread_mutex_lock(&fwd->mu);
  pthread_mutex_lock(&grad->mu);
  for (int64_t i = 0; i < fwd->size && i < grad->size; i++) {
    if (fwd->elems[i].has_shape && !grad->elems[i].has_shape) {
      grad->elems[i].has_shape = true;
      grad->elems[i].shape = fwd->elems[i].shape;
    }
  }
  pthread_mutex_unlock(&grad->mu);
  pthread_mutex_unlock(&fwd->mu);
}

tf_code tf__ta_new_grad(tf__tensor_array *fwd, const char *key,
                        const char *source, tf__tensor_array **out,
                        tf_status *st) {
  pthread_mutex_lock(&fwd->mu);
  char *display = tf__xasprintf("%s@%s", fwd->display, source);
  tf__ta_config cfg = {.dtype = fwd->dtype,
                       .element_shape = fwd->element_shape,
                       .size = fwd->size,
                       .clear_after_read = true,
                       .display = display};
  bool closed = fwd->closed;
  fwd->size_frozen = true;
  pthread_mutex_unlock(&fwd->mu);
  tf_code rc = closed ? tf_status_set(st, TF_FAILED_PRECONDITION,
                                      "TensorArray '%s' is closed: cannot "
                                      "make its gradient array", fwd->display)
                      : tf__ta_new(&cfg, key, out, st);
  free(display);
  if (rc == TF_OK) {
    (*out)->is_grad = true;
    tf__ta_sync_grad_shapes(fwd, *out);
  }
  return rc;
}
