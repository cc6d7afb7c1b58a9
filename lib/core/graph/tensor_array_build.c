/* tensor_array_build.c: the builders of include/tf/tensor_array.h, thin
 * wrappers that add one TensorArray*V3 node each (plus a Range, Size or
 * Shape node for stack and unstack) and thread the flow through. */
#include "tf/tensor_array.h"

#include <string.h>

#include "lib/core/base/util.h"

/* Begins op on ta's handle, then the given inputs, with the dtype attr
 * `type_attr` (NULL: none). */
static tf_node *ta_node(tf_graph *g, const char *op, const tf_tensor_array *ta,
                        const tf_output *in, int n_in, const char *type_attr,
                        tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, ta->handle);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  if (type_attr != NULL) {
    tf_node_set_attr(b, type_attr, tf_attr_type_v(ta->dtype));
  }
  return tf_node_finish(b, st);
}

static tf_code check_ta(const tf_tensor_array *ta, tf_status *st) {
  if (ta == NULL || ta->handle.node == NULL || ta->flow.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor array builder: the "
                         "tf_tensor_array has no handle or flow (was "
                         "tf_tensor_array_new called?)");
  }
  return TF_OK;
}

/* A const int32 scalar. */
static tf_node *int_const(tf_graph *g, int32_t v, tf_status *st) {
  tf_tensor *t = tf_tensor_scalar_i32(v);
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node *n = tf_node_finish(b, st);
  tf_tensor_unref(t);
  return n;
}

/* Range(0, limit, 1) as int32. */
static tf_node *range_to(tf_graph *g, tf_output limit, tf_status *st) {
  tf_node *zero = int_const(g, 0, st);
  tf_node *one = zero ? int_const(g, 1, st) : NULL;
  if (one == NULL) {
    return NULL;
  }
  tf_node_builder *b = tf_node_begin(g, "Range", NULL);
  tf_node_add_input(b, (tf_output){zero, 0});
  tf_node_add_input(b, limit);
  tf_node_add_input(b, (tf_output){one, 0});
  return tf_node_finish(b, st);
}

tf_code tf_tensor_array_new(tf_graph *g, tf_dtype dtype, tf_output size,
                            const tf_tensor_array_options *opts,
                            tf_tensor_array *ta, tf_status *st) {
  tf_tensor_array_options o = {0};
  if (opts != NULL) {
    o = *opts;
  }
  tf_node_builder *b = tf_node_begin(g, "TensorArrayV3", NULL);
  tf_node_add_input(b, size);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dtype));
  if (o.element_shape != NULL) {
    tf_node_set_attr(b, "element_shape", tf_attr_shape(*o.element_shape));
  }
  tf_node_set_attr(b, "dynamic_size", tf_attr_bool(o.dynamic_size));
  tf_node_set_attr(b, "clear_after_read", tf_attr_bool(!o.keep_after_read));
  tf_node_set_attr(b, "identical_element_shapes",
                   tf_attr_bool(o.identical_element_shapes));
  if (o.name != NULL) {
    tf_node_set_attr(b, "tensor_array_name", tf_attr_string(o.name));
  }
  tf_node *n = tf_node_finish(b, st);
  if (n == NULL) {
    return st->code;
  }
  *ta = (tf_tensor_array){{n, 0}, {n, 1}, dtype};
  return TF_OK;
}

tf_code tf_tensor_array_write(tf_graph *g, tf_tensor_array *ta, tf_output index,
                              tf_output value, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_output in[3] = {index, value, ta->flow};
  tf_node *n = ta_node(g, "TensorArrayWriteV3", ta, in, 3, "T", st);
  if (n == NULL) {
    return st->code;
  }
  ta->flow = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_read(tf_graph *g, const tf_tensor_array *ta,
                             tf_output index, tf_output *out, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_output in[2] = {index, ta->flow};
  tf_node *n = ta_node(g, "TensorArrayReadV3", ta, in, 2, "dtype", st);
  if (n == NULL) {
    return st->code;
  }
  *out = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_gather(tf_graph *g, const tf_tensor_array *ta,
                               tf_output indices, tf_output *out,
                               tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_output in[2] = {indices, ta->flow};
  tf_node *n = ta_node(g, "TensorArrayGatherV3", ta, in, 2, "dtype", st);
  if (n == NULL) {
    return st->code;
  }
  *out = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_scatter(tf_graph *g, tf_tensor_array *ta,
                                tf_output indices, tf_output value,
                                tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_output in[3] = {indices, value, ta->flow};
  tf_node *n = ta_node(g, "TensorArrayScatterV3", ta, in, 3, "T", st);
  if (n == NULL) {
    return st->code;
  }
  ta->flow = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_size(tf_graph *g, const tf_tensor_array *ta,
                             tf_output *out, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_node *n = ta_node(g, "TensorArraySizeV3", ta, &ta->flow, 1, NULL, st);
  if (n == NULL) {
    return st->code;
  }
  *out = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_stack(tf_graph *g, const tf_tensor_array *ta,
                              tf_output *out, tf_status *st) {
  tf_output size;
  TF_TRY(tf_tensor_array_size(g, ta, &size, st));
  tf_node *r = range_to(g, size, st);
  if (r == NULL) {
    return st->code;
  }
  return tf_tensor_array_gather(g, ta, (tf_output){r, 0}, out, st);
}

tf_code tf_tensor_array_unstack(tf_graph *g, tf_tensor_array *ta,
                                tf_output value, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_node_builder *b = tf_node_begin(g, "Shape", NULL);
  tf_node_add_input(b, value);
  tf_node *shape = tf_node_finish(b, st);
  tf_node *zero = shape ? int_const(g, 0, st) : NULL;
  if (zero == NULL) {
    return st->code;
  }
  b = tf_node_begin(g, "Gather", NULL);
  tf_node_add_input(b, (tf_output){shape, 0});
  tf_node_add_input(b, (tf_output){zero, 0});
  tf_node *rows = tf_node_finish(b, st);
  tf_node *r = rows ? range_to(g, (tf_output){rows, 0}, st) : NULL;
  if (r == NULL) {
    return st->code;
  }
  return tf_tensor_array_scatter(g, ta, (tf_output){r, 0}, value, st);
}

tf_code tf_tensor_array_concat(tf_graph *g, const tf_tensor_array *ta,
                               tf_output *value, tf_output *lengths,
                               tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_node *n = ta_node(g, "TensorArrayConcatV3", ta, &ta->flow, 1, "dtype", st);
  if (n == NULL) {
    return st->code;
  }
  *value = (tf_output){n, 0};
  if (lengths != NULL) {
    *lengths = (tf_output){n, 1};
  }
  return TF_OK;
}

tf_code tf_tensor_array_split(tf_graph *g, tf_tensor_array *ta, tf_output value,
                              tf_output lengths, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_output in[3] = {value, lengths, ta->flow};
  tf_node *n = ta_node(g, "TensorArraySplitV3", ta, in, 3, "T", st);
  if (n == NULL) {
    return st->code;
  }
  ta->flow = (tf_output){n, 0};
  return TF_OK;
}

tf_code tf_tensor_array_close(tf_graph *g, const tf_tensor_array *ta,
                              tf_node **out, tf_status *st) {
  TF_TRY(check_ta(ta, st));
  tf_node *n = ta_node(g, "TensorArrayCloseV3", ta, NULL, 0, NULL, st);
  if (n == NULL) {
    return st->code;
  }
  if (out != NULL) {
    *out = n;
  }
  return TF_OK;
}
