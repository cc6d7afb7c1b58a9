/* attr.h: node attribute values.
 *
 * A tf_attr_value is a tagged union. Values made by the constructors below
 * borrow their pointers (strings, lists, tensors); a graph copies a value
 * deeply when it is set on a node, so the caller keeps ownership of what it
 * passed in. */
#ifndef TF_ATTR_H
#define TF_ATTR_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/dtype.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tf_attr_type {
  TF_ATTR_NONE = 0,
  TF_ATTR_INT,
  TF_ATTR_FLOAT,
  TF_ATTR_BOOL,
  TF_ATTR_STRING,
  TF_ATTR_TYPE,
  TF_ATTR_SHAPE,
  TF_ATTR_TENSOR,
  TF_ATTR_TYPE_COUNT
} tf_attr_type;

typedef struct tf_attr_value {
  tf_attr_type type;
  bool is_list;
  int32_t n; /* element count when is_list */
  union {
    int64_t i;
    double f;
    bool b;
    const char *s;
    tf_dtype t;
    tf_shape shape;
    tf_tensor *tensor;
    const int64_t *ints;
    const double *floats;
    const bool *bools;
    const char *const *strs;
    const tf_dtype *types;
    const tf_shape *shapes;
    tf_tensor *const *tensors;
  } u;
} tf_attr_value;

typedef struct tf_attr_kv {
  const char *name;
  tf_attr_value value;
} tf_attr_kv;

TF_API tf_attr_value tf_attr_int(int64_t v);
TF_API tf_attr_value tf_attr_float(double v);
TF_API tf_attr_value tf_attr_bool(bool v);
TF_API tf_attr_value tf_attr_string(const char *s);
TF_API tf_attr_value tf_attr_type_v(tf_dtype t);
TF_API tf_attr_value tf_attr_shape(tf_shape s);
TF_API tf_attr_value tf_attr_tensor(tf_tensor *t);
TF_API tf_attr_value tf_attr_int_list(const int64_t *v, int n);
TF_API tf_attr_value tf_attr_float_list(const double *v, int n);
TF_API tf_attr_value tf_attr_bool_list(const bool *v, int n);
TF_API tf_attr_value tf_attr_string_list(const char *const *v, int n);
TF_API tf_attr_value tf_attr_type_list(const tf_dtype *v, int n);
TF_API tf_attr_value tf_attr_shape_list(const tf_shape *v, int n);
TF_API tf_attr_value tf_attr_tensor_list(tf_tensor *const *v, int n);

/* "int", "list(float)", ... */
TF_API const char *tf_attr_type_name(tf_attr_type t, bool is_list);
/* Bytes of one element of a list attr of type t (the stride of u.ints ..
 * u.tensors); 0 for TF_ATTR_NONE or an invalid type. */
TF_API size_t tf_attr_elem_size(tf_attr_type t);
TF_API bool tf_attr_value_equal(const tf_attr_value *a, const tf_attr_value *b);
/* Human form for errors and the YAML writer's comments, e.g. "[1, 2]". */
TF_API char *tf_attr_value_str(const tf_attr_value *v, char *buf, size_t size);

/* Deep copy (tensors are referenced, not copied: they are immutable once in
 * an attr). Free with tf_attr_value_fini. Aborts on OOM (metadata). */
TF_API tf_attr_value tf_attr_value_clone(const tf_attr_value *v);
TF_API void tf_attr_value_fini(tf_attr_value *v);

#ifdef __cplusplus
}
#endif

#endif
