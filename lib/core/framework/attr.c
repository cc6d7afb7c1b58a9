/* attr.c: attribute value constructors, deep copies, equality, printing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "tf/attr.h"

static tf_attr_value scalar(tf_attr_type t) {
  tf_attr_value v;
  memset(&v, 0, sizeof v);
  v.type = t;
  return v;
}

static tf_attr_value list(tf_attr_type t, int n) {
  tf_attr_value v = scalar(t);
  v.is_list = true;
  v.n = n;
  return v;
}

tf_attr_value tf_attr_int(int64_t x) { tf_attr_value v = scalar(TF_ATTR_INT); v.u.i = x; return v; }
tf_attr_value tf_attr_float(double x) { tf_attr_value v = scalar(TF_ATTR_FLOAT); v.u.f = x; return v; }
tf_attr_value tf_attr_bool(bool x) { tf_attr_value v = scalar(TF_ATTR_BOOL); v.u.b = x; return v; }
tf_attr_value tf_attr_string(const char *s) { tf_attr_value v = scalar(TF_ATTR_STRING); v.u.s = s; return v; }
tf_attr_value tf_attr_type_v(tf_dtype t) { tf_attr_value v = scalar(TF_ATTR_TYPE); v.u.t = t; return v; }
tf_attr_value tf_attr_shape(tf_shape s) { tf_attr_value v = scalar(TF_ATTR_SHAPE); v.u.shape = s; return v; }
tf_attr_value tf_attr_tensor(tf_tensor *t) { tf_attr_value v = scalar(TF_ATTR_TENSOR); v.u.tensor = t; return v; }
tf_attr_value tf_attr_int_list(const int64_t *x, int n) { tf_attr_value v = list(TF_ATTR_INT, n); v.u.ints = x; return v; }
tf_attr_value tf_attr_float_list(const double *x, int n) { tf_attr_value v = list(TF_ATTR_FLOAT, n); v.u.floats = x; return v; }
tf_attr_value tf_attr_bool_list(const bool *x, int n) { tf_attr_value v = list(TF_ATTR_BOOL, n); v.u.bools = x; return v; }
tf_attr_value tf_attr_string_list(const char *const *x, int n) { tf_attr_value v = list(TF_ATTR_STRING, n); v.u.strs = x; return v; }
tf_attr_value tf_attr_type_list(const tf_dtype *x, int n) { tf_attr_value v = list(TF_ATTR_TYPE, n); v.u.types = x; return v; }
tf_attr_value tf_attr_shape_list(const tf_shape *x, int n) { tf_attr_value v = list(TF_ATTR_SHAPE, n); v.u.shapes = x; return v; }
tf_attr_value tf_attr_tensor_list(tf_tensor *const *x, int n) { tf_attr_value v = list(TF_ATTR_TENSOR, n); v.u.tensors = x; return v; }

const char *tf_attr_type_name(tf_attr_type t, bool is_list) {
  static const char *names[] = {"none", "int", "float", "bool", "string",
                                "type", "shape", "tensor"};
  static const char *lists[] = {"list(none)", "list(int)", "list(float)",
                                "list(bool)", "list(string)", "list(type)",
                                "list(shape)", "list(tensor)"};
  if ((unsigned)t >= TF_ATTR_TYPE_COUNT) return "invalid";
  return is_list ? lists[t] : names[t];
}

size_t tf_attr_elem_size(tf_attr_type t) {
  switch (t) {
  case TF_ATTR_INT: return sizeof(int64_t);
  case TF_ATTR_FLOAT: return sizeof(double);
  case TF_ATTR_BOOL: return sizeof(bool);
  case TF_ATTR_STRING: return sizeof(char *);
  case TF_ATTR_TYPE: return sizeof(tf_dtype);
  case TF_ATTR_SHAPE: return sizeof(tf_shape);
  case TF_ATTR_TENSOR: return sizeof(tf_tensor *);
  default: return 0;
  }
}

tf_attr_value tf_attr_value_clone(const tf_attr_value *v) {
  tf_attr_value c = *v;
  if (!v->is_list) {
    if (v->type == TF_ATTR_STRING) c.u.s = tf__xstrdup(v->u.s ? v->u.s : "");
    if (v->type == TF_ATTR_TENSOR) c.u.tensor = tf_tensor_ref(v->u.tensor);
    return c;
  }
  size_t es = tf_attr_elem_size(v->type);
  void *arr = tf__xcalloc((size_t)(v->n > 0 ? v->n : 1), es);
  if (v->n > 0) memcpy(arr, (const void *)v->u.ints, (size_t)v->n * es);
  if (v->type == TF_ATTR_STRING) {
    char **s = arr;
    for (int i = 0; i < v->n; i++) s[i] = tf__xstrdup(s[i] ? s[i] : "");
  } else if (v->type == TF_ATTR_TENSOR) {
    tf_tensor **t = arr;
    for (int i = 0; i < v->n; i++) tf_tensor_ref(t[i]);
  }
  c.u.ints = arr;
  return c;
}

void tf_attr_value_fini(tf_attr_value *v) {
  if (!v->is_list) {
    if (v->type == TF_ATTR_STRING) free((char *)v->u.s);
    if (v->type == TF_ATTR_TENSOR) tf_tensor_unref(v->u.tensor);
  } else {
    if (v->type == TF_ATTR_STRING) {
      for (int i = 0; i < v->n; i++) free((char *)v->u.strs[i]);
    } else if (v->type == TF_ATTR_TENSOR) {
      for (int i = 0; i < v->n; i++) tf_tensor_unref(v->u.tensors[i]);
    }
    free((void *)v->u.ints);
  }
  memset(v, 0, sizeof *v);
}

static bool scalar_equal(tf_attr_type t, const void *a, const void *b) {
  switch (t) {
  case TF_ATTR_INT: return *(const int64_t *)a == *(const int64_t *)b;
  case TF_ATTR_FLOAT: return memcmp(a, b, sizeof(double)) == 0;
  case TF_ATTR_BOOL: return *(const bool *)a == *(const bool *)b;
  case TF_ATTR_STRING: return strcmp(*(char *const *)a, *(char *const *)b) == 0;
  case TF_ATTR_TYPE: return *(const tf_dtype *)a == *(const tf_dtype *)b;
  case TF_ATTR_SHAPE: return tf_shape_equal(a, b);
  case TF_ATTR_TENSOR:
    return tf_tensor_equal(*(tf_tensor *const *)a, *(tf_tensor *const *)b);
  default: return false;
  }
}

bool tf_attr_value_equal(const tf_attr_value *a, const tf_attr_value *b) {
  if (a->type != b->type || a->is_list != b->is_list) return false;
  if (!a->is_list) return scalar_equal(a->type, &a->u, &b->u);
  if (a->n != b->n) return false;
  size_t es = tf_attr_elem_size(a->type);
  for (int i = 0; i < a->n; i++) {
    if (!scalar_equal(a->type, (const char *)a->u.ints + i * es,
                      (const char *)b->u.ints + i * es)) {
      return false;
    }
  }
  return true;
}

static size_t scalar_str(tf_attr_type t, const void *p, char *buf, size_t size) {
  char tmp[256];
  switch (t) {
  case TF_ATTR_INT: return (size_t)snprintf(buf, size, "%lld", (long long)*(const int64_t *)p);
  case TF_ATTR_FLOAT: return (size_t)snprintf(buf, size, "%.17g", *(const double *)p);
  case TF_ATTR_BOOL: return (size_t)snprintf(buf, size, "%s", *(const bool *)p ? "true" : "false");
  case TF_ATTR_STRING: return (size_t)snprintf(buf, size, "'%s'", *(char *const *)p);
  case TF_ATTR_TYPE: return (size_t)snprintf(buf, size, "%s", tf_dtype_name(*(const tf_dtype *)p));
  case TF_ATTR_SHAPE: return (size_t)snprintf(buf, size, "%s", tf_shape_str(p, tmp, sizeof tmp));
  case TF_ATTR_TENSOR: return (size_t)snprintf(buf, size, "%s", tf_tensor_str(*(tf_tensor *const *)p, tmp, sizeof tmp));
  default: return (size_t)snprintf(buf, size, "?");
  }
}

char *tf_attr_value_str(const tf_attr_value *v, char *buf, size_t size) {
  if (size == 0) return buf;
  if (!v->is_list) {
    scalar_str(v->type, &v->u, buf, size);
    return buf;
  }
  size_t es = tf_attr_elem_size(v->type), off = 0;
  off += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < v->n && off < size; i++) {
    if (i) off += (size_t)snprintf(buf + off, size - off, ", ");
    if (off < size) {
      off += scalar_str(v->type, (const char *)v->u.ints + i * es, buf + off, size - off);
    }
  }
  if (off < size) snprintf(buf + off, size - off, "]");
  return buf;
}
