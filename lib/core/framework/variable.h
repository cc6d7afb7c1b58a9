/* variable.h: the variable resource (whitepaper §4.7): a mutable tensor
 * that outlives steps, held in a container of the session's resource
 * manager and reached through ref edges.
 *
 * A variable has a dtype, a declared shape (may be partial or of unknown
 * rank) and a current value (NULL until the first Assign). Every update
 * holds the variable's mutex and is copy-on-write: when the value's buffer
 * is shared (a step read it and still holds it), the update writes into a
 * fresh copy and swaps it in, so a reader always keeps a consistent
 * snapshot; otherwise it updates in place. */
#ifndef TF_CORE_VARIABLE_H
#define TF_CORE_VARIABLE_H

#include <pthread.h>
#include <stdbool.h>

#include "lib/core/framework/resource.h"
#include "tf/status.h"
#include "tf/tensor.h"

typedef struct tf_variable {
  tf_resource base;   /* type is &tf_variable_type */
  pthread_mutex_t mu; /* guards value */
  tf_dtype dtype;
  tf_shape shape;     /* declared; may be partial */
  tf_tensor *value;   /* current value; NULL = uninitialized */
} tf_variable;

/* The "Variable" resource type: read returns the current value as a new
 * reference, or FAILED_PRECONDITION "Attempting to use uninitialized value
 * <name>". No shutdown (nothing waits on a variable). */
extern const tf_resource_type tf_variable_type;

/* A new uninitialized variable (one reference) named name in container.
 * Aborts on OOM (metadata only). */
tf_variable *tf_variable_new(const char *container, const char *name,
                             tf_dtype dtype, const tf_shape *shape);
/* r as a variable, or NULL when r is NULL or another resource type. */
tf_variable *tf_variable_cast(tf_resource *r);

/* Whether s (fully defined) fits the declared shape d: d of unknown rank,
 * or the same rank with every known dim of d equal. */
bool tf_variable_shape_compatible(const tf_shape *d, const tf_shape *s);

/* The current value as a new reference in *out (never written by any
 * later update), or FAILED_PRECONDITION naming the variable. */
tf_code tf_variable_read(tf_variable *v, tf_tensor **out, tf_status *st);
/* Whether the variable has a value. */
bool tf_variable_is_initialized(tf_variable *v);

/* Sets the value to value's contents under the mutex. With validate_shape
 * value's shape must fit the declared shape and, once initialized, equal
 * the current shape (INVALID_ARGUMENT naming the variable and both
 * shapes); without it any shape is taken. value's dtype must be the
 * variable's. value is only read: when its buffer is unique the variable
 * takes it over, else the contents are copied (into the current buffer
 * when that has the same shape and no reader). */
tf_code tf_variable_assign(tf_variable *v, tf_tensor *value,
                           bool validate_shape, tf_status *st);

/* An in-place update of a writable value. It must check its arguments
 * before writing anything and return an error (leaving value untouched)
 * when they do not fit. */
typedef tf_code (*tf_variable_update_fn)(void *arg, tf_variable *v,
                                         tf_tensor *value, tf_status *st);
/* Runs fn(arg, v, value, st) under the mutex on a writable value: the
 * current one when its buffer is unique, else a copy that replaces it only
 * when fn succeeds (copy-on-write). FAILED_PRECONDITION "Attempting to use
 * uninitialized value <name>" when the variable has no value. */
tf_code tf_variable_update(tf_variable *v, tf_variable_update_fn fn, void *arg,
                           tf_status *st);

#endif
