/* variable.c: the variable resource. The value tensor is treated as
 * immutable once anyone but the variable holds it: readers get a new
 * reference and updates check tf_tensor_buffer_is_unique under the mutex
 * (no new reader can appear while it is held), writing in place only when
 * no reader exists and into a swapped-in copy otherwise. */
#include "lib/core/framework/variable.h"

#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

static void variable_free(tf_resource *r) {
  tf_variable *v = (tf_variable *)r;
  tf_tensor_unref(v->value);
  pthread_mutex_destroy(&v->mu);
  tf_resource_fini(r);
  free(v);
}

static tf_code variable_read(tf_resource *r, tf_tensor **out, tf_status *st) {
  return tf_variable_read((tf_variable *)r, out, st);
}

const tf_resource_type tf_variable_type = {
    .name = "Variable",
    .free = variable_free,
    .read = variable_read,
    .shutdown = NULL,
};

tf_variable *tf_variable_new(const char *container, const char *name,
                             tf_dtype dtype, const tf_shape *shape) {
  tf_variable *v = tf__xcalloc(1, sizeof *v);
  tf_resource_init(&v->base, &tf_variable_type, container, name);
  pthread_mutex_init(&v->mu, NULL);
  v->dtype = dtype;
  v->shape = *shape;
  v->value = NULL;
  return v;
}

tf_variable *tf_variable_cast(tf_resource *r) {
  if (r == NULL || r->type != &tf_variable_type) {
    return NULL;
  }
  return (tf_variable *)r;
}

bool tf_variable_shape_compatible(const tf_shape *d, const tf_shape *s) {
  tf_shape merged; /* s is fully defined: it fits d when they merge */
  return tf_shape_merge(d, s, &merged, NULL) == TF_OK;
}

static tf_code uninitialized(const tf_variable *v, tf_status *st) {
  return tf_status_set(st, TF_FAILED_PRECONDITION,
                       "Attempting to use uninitialized value %s",
                       v->base.name);
}

tf_code tf_variable_read(tf_variable *v, tf_tensor **out, tf_status *st) {
  pthread_mutex_lock(&v->mu);
  *out = tf_tensor_ref(v->value);
  pthread_mutex_unlock(&v->mu);
  return *out != NULL ? TF_OK : uninitialized(v, st);
}

bool tf_variable_is_initialized(tf_variable *v) {
  pthread_mutex_lock(&v->mu);
  bool init = v->value != NULL;
  pthread_mutex_unlock(&v->mu);
  return init;
}

/* Shape checks of Assign with validate_shape; v->mu held. */
static tf_code check_assign_shape(const tf_variable *v, const tf_tensor *value,
                                  tf_status *st) {
  char a[160], b[160];
  if (!tf_variable_shape_compatible(&v->shape, &value->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "variable %s has shape %s; cannot assign a value "
                         "of shape %s", v->base.name,
                         tf_shape_str(&v->shape, a, sizeof a),
                         tf_shape_str(&value->shape, b, sizeof b));
  }
  if (v->value != NULL && !tf_shape_equal(&v->value->shape, &value->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Assign requires shapes of both tensors to match. "
                         "lhs (%s) shape= %s rhs shape= %s", v->base.name,
                         tf_shape_str(&v->value->shape, a, sizeof a),
                         tf_shape_str(&value->shape, b, sizeof b));
  }
  return TF_OK;
}

/* The new value for Assign: value itself when nobody else holds it, the
 * current buffer refilled when it is private and of the same shape, else
 * a fresh copy. v->mu held. */
static tf_code assign_locked(tf_variable *v, tf_tensor *value, tf_status *st) {
  tf_tensor *cur = v->value;
  if (tf_tensor_buffer_is_unique(value)) {
    v->value = tf_tensor_ref(value);
    tf_tensor_unref(cur);
    return TF_OK;
  }
  if (cur != NULL && value->dtype != TF_STRING &&
      tf_shape_equal(&cur->shape, &value->shape) &&
      tf_tensor_buffer_is_unique(cur)) {
    if (value->nbytes > 0) {
      memcpy(cur->data, value->data, value->nbytes);
    }
    return TF_OK;
  }
  tf_tensor *copy;
  TF_TRY(tf_tensor_copy(value, &copy, st));
  v->value = copy;
  tf_tensor_unref(cur);
  return TF_OK;
}

tf_code tf_variable_assign(tf_variable *v, tf_tensor *value,
                           bool validate_shape, tf_status *st) {
  if (value->dtype != v->dtype) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "variable %s is %s; cannot assign a %s value",
                         v->base.name, tf_dtype_name(v->dtype),
                         tf_dtype_name(value->dtype));
  }
  pthread_mutex_lock(&v->mu);
  tf_code rc = validate_shape ? check_assign_shape(v, value, st) : TF_OK;
  if (rc == TF_OK) {
    rc = assign_locked(v, value, st);
  }
  pthread_mutex_unlock(&v->mu);
  return rc;
}

/* fn on a writable value; v->mu held and v initialized. */
static tf_code update_locked(tf_variable *v, tf_variable_update_fn fn,
                             void *arg, tf_status *st) {
  if (tf_tensor_buffer_is_unique(v->value)) {
    return fn(arg, v, v->value, st);
  }
  tf_tensor *copy;
  TF_TRY(tf_tensor_copy(v->value, &copy, st));
  tf_code rc = fn(arg, v, copy, st);
  if (rc != TF_OK) {
    tf_tensor_unref(copy);
    return rc;
  }
  tf_tensor_unref(v->value);
  v->value = copy;
  return TF_OK;
}

tf_code tf_variable_update(tf_variable *v, tf_variable_update_fn fn, void *arg,
                           tf_status *st) {
  pthread_mutex_lock(&v->mu);
  tf_code rc = v->value == NULL ? uninitialized(v, st)
                                : update_locked(v, fn, arg, st);
  pthread_mutex_unlock(&v->mu);
  return rc;
}
