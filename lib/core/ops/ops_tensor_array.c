/* ops_tensor_array.c: op definitions of the TensorArrayV3 family with
 * TensorFlow's names, inputs, outputs and attrs: a per-step array of
 * tensors that a loop writes one element per iteration and reads back
 * whole (Gather, Concat) or in pieces (Read). The handle is a string
 * vector [container, name] (TF's TensorArrayV2 handle; this project has no
 * resource dtype); the float scalar flow carries only ordering, and its
 * gradient is the flow of the gradient array. Kernels and the array itself
 * are in lib/devices/cpu/cpu_tensor_array*.c. Shape functions use the
 * element_shape attr of the TensorArrayV3 node the handle comes from when
 * they can see it (straight, or through Identity and Enter). */
#include <stdbool.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"

#define TA_NODIFF (TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE)
#define TA_DEVIATION_HANDLE                                                    \
  "the handle is a string vector [container, name] (TF's TensorArrayV2 "      \
  "handle), not a resource scalar: this project has no resource dtype"

/* Input i must be a scalar (or of unknown rank). */
static tf_code want_rank(tf_shape_ctx *c, int i, int rank, const char *name) {
  char b[96];
  if (c->in[i].rank != TF_UNKNOWN_RANK && c->in[i].rank != rank) {
    return tf_shape_error(c, "%s must have rank %d, got shape %s", name, rank,
                          tf_shape_str(&c->in[i], b, sizeof b));
  }
  return TF_OK;
}

/* Input 0 must be a handle: a string vector of 2 elements. */
static tf_code want_handle(tf_shape_ctx *c) {
  char b[96];
  const tf_shape *h = &c->in[0];
  if (h->rank != TF_UNKNOWN_RANK &&
      (h->rank != 1 || (h->dims[0] != TF_UNKNOWN_DIM && h->dims[0] != 2))) {
    return tf_shape_error(c, "handle must be a TensorArray handle of shape "
                          "[2], got shape %s", tf_shape_str(h, b, sizeof b));
  }
  return TF_OK;
}

/* The TensorArrayV3 node whose handle reaches input 0 (straight or through
 * Identity/Enter), or NULL. */
static const tf_node *creator(const tf_shape_ctx *c) {
  const tf_node *n = tf_node_input(c->node, 0).node;
  for (int hops = 0; n != NULL && hops < 16; hops++) {
    const char *op = tf_node_op(n);
    if (strcmp(op, "TensorArrayV3") == 0) {
      return n;
    }
    if (strcmp(op, "Identity") != 0 && strcmp(op, "Enter") != 0) {
      return NULL;
    }
    n = tf_node_input(n, 0).node;
  }
  return NULL;
}

/* The element shape known for the array on input 0: the creator's
 * element_shape attr merged with this node's attr `own` (NULL: none). */
static tf_code element_shape(tf_shape_ctx *c, const char *own, tf_shape *out) {
  char a[96], b[96];
  *out = tf_shape_unknown();
  const tf_node *cr = creator(c);
  const tf_attr_value *v = cr ? tf_node_attr(cr, "element_shape") : NULL;
  if (v != NULL) {
    *out = v->u.shape;
  }
  const tf_attr_value *o = own ? tf_node_attr(c->node, own) : NULL;
  if (o != NULL && tf_shape_merge(out, &o->u.shape, out, NULL) != TF_OK) {
    return tf_shape_error(c, "element_shape %s conflicts with the "
                          "element_shape %s of TensorArray node '%s'",
                          tf_shape_str(&o->u.shape, a, sizeof a),
                          tf_shape_str(&v->u.shape, b, sizeof b),
                          tf_node_name(cr));
  }
  return TF_OK;
}

/* [n] + elem; unknown rank when elem's rank is unknown. */
static tf_shape prepend(int64_t n, const tf_shape *elem) {
  if (elem->rank == TF_UNKNOWN_RANK || elem->rank >= TF_MAX_RANK) {
    return tf_shape_unknown();
  }
  tf_shape s = {.rank = elem->rank + 1};
  s.dims[0] = n;
  memcpy(&s.dims[1], elem->dims, (size_t)elem->rank * sizeof s.dims[0]);
  return s;
}

static tf_code shape_create(tf_shape_ctx *c) {
  TF_TRY(want_rank(c, 0, 0, "size"));
  c->out[0] = tf_shape_of(1, 2);
  c->out[1] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_grad(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 0, "flow_in"));
  c->out[0] = tf_shape_of(1, 2);
  c->out[1] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_write(tf_shape_ctx *c) {
  char a[96], b[96];
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 0, "index"));
  TF_TRY(want_rank(c, 3, 0, "flow_in"));
  tf_shape elem, merged;
  TF_TRY(element_shape(c, NULL, &elem));
  if (tf_shape_merge(&elem, &c->in[2], &merged, NULL) != TF_OK) {
    return tf_shape_error(c, "value has shape %s, but the TensorArray's "
                          "elements have shape %s",
                          tf_shape_str(&c->in[2], a, sizeof a),
                          tf_shape_str(&elem, b, sizeof b));
  }
  c->out[0] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_read(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 0, "index"));
  TF_TRY(want_rank(c, 2, 0, "flow_in"));
  return element_shape(c, NULL, &c->out[0]);
}

static tf_code shape_gather(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 1, "indices"));
  TF_TRY(want_rank(c, 2, 0, "flow_in"));
  tf_shape elem;
  TF_TRY(element_shape(c, "element_shape", &elem));
  int64_t n = c->in[1].rank == 1 ? c->in[1].dims[0] : TF_UNKNOWN_DIM;
  c->out[0] = prepend(n, &elem);
  return TF_OK;
}

static tf_code shape_scatter(tf_shape_ctx *c) {
  char a[96];
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 1, "indices"));
  TF_TRY(want_rank(c, 3, 0, "flow_in"));
  const tf_shape *v = &c->in[2];
  if (v->rank == 0) {
    return tf_shape_error(c, "value must have rank >= 1, got a scalar");
  }
  int64_t n = c->in[1].rank == 1 ? c->in[1].dims[0] : TF_UNKNOWN_DIM;
  if (v->rank > 0 && n != TF_UNKNOWN_DIM && v->dims[0] != TF_UNKNOWN_DIM &&
      v->dims[0] != n) {
    return tf_shape_error(c, "value has shape %s, but indices has %lld "
                          "elements", tf_shape_str(v, a, sizeof a),
                          (long long)n);
  }
  c->out[0] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_concat(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 0, "flow_in"));
  const tf_attr_value *v = tf_node_attr(c->node, "element_shape_except0");
  tf_shape rest = v ? v->u.shape : tf_shape_unknown();
  c->out[0] = prepend(TF_UNKNOWN_DIM, &rest);
  c->out[1] = tf_shape_of(1, TF_UNKNOWN_DIM);
  return TF_OK;
}

static tf_code shape_split(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 2, 1, "lengths"));
  TF_TRY(want_rank(c, 3, 0, "flow_in"));
  if (c->in[1].rank == 0) {
    return tf_shape_error(c, "value must have rank >= 1, got a scalar");
  }
  c->out[0] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_size(tf_shape_ctx *c) {
  TF_TRY(want_handle(c));
  TF_TRY(want_rank(c, 1, 0, "flow_in"));
  c->out[0] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_close(tf_shape_ctx *c) { return want_handle(c); }

static const tf_op_spec tensor_array_ops[] = {
    {.name = "TensorArrayV3",
     .inputs = {"size: int32"},
     .outputs = {"handle: string", "flow: float"},
     .attrs = {"dtype: type", "element_shape: shape = unknown",
               "dynamic_size: bool = false", "clear_after_read: bool = true",
               "identical_element_shapes: bool = false",
               "tensor_array_name: string = ''"},
     .shape_fn = shape_create,
     .flags = TA_NODIFF,
     .doc = "A new array of size elements of dtype for this step (freed "
            "when the step ends); outputs its handle and a flow of 0. Each "
            "run of the node (each loop iteration) makes its own array.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayGradV3",
     .inputs = {"handle: string", "flow_in: float"},
     .outputs = {"grad_handle: string", "flow_out: float"},
     .attrs = {"source: string"},
     .shape_fn = shape_grad,
     .flags = TA_NODIFF,
     .doc = "The gradient array of the array for source, made on first use "
            "with the same size and element shapes; writes to it add up. "
            "Freezes the forward array's size.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayWriteV3",
     .inputs = {"handle: string", "index: int32", "value: T",
                "flow_in: float"},
     .outputs = {"flow_out: float"},
     .attrs = {"T: type"},
     .shape_fn = shape_write,
     .flags = TF_OP_STATEFUL,
     .doc = "Writes value at index (once per index; a dynamic array grows "
            "to fit).",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayReadV3",
     .inputs = {"handle: string", "index: int32", "flow_in: float"},
     .outputs = {"value: dtype"},
     .attrs = {"dtype: type"},
     .shape_fn = shape_read,
     .flags = TF_OP_STATEFUL,
     .doc = "The element at index (zeros for an unwritten one whose shape is "
            "known); with clear_after_read it cannot be read again.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayGatherV3",
     .inputs = {"handle: string", "indices: int32", "flow_in: float"},
     .outputs = {"value: dtype"},
     .attrs = {"dtype: type", "element_shape: shape = unknown"},
     .shape_fn = shape_gather,
     .flags = TF_OP_STATEFUL,
     .doc = "The elements at indices stacked along a new axis 0 (all of one "
            "shape).",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayScatterV3",
     .inputs = {"handle: string", "indices: int32", "value: T",
                "flow_in: float"},
     .outputs = {"flow_out: float"},
     .attrs = {"T: type"},
     .shape_fn = shape_scatter,
     .flags = TF_OP_STATEFUL,
     .doc = "Writes value[i] at indices[i] for each i.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayConcatV3",
     .inputs = {"handle: string", "flow_in: float"},
     .outputs = {"value: dtype", "lengths: int64"},
     .attrs = {"dtype: type", "element_shape_except0: shape = unknown"},
     .shape_fn = shape_concat,
     .flags = TF_OP_STATEFUL,
     .doc = "All elements concatenated along axis 0, and each one's length "
            "on that axis.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArraySplitV3",
     .inputs = {"handle: string", "value: T", "lengths: int64",
                "flow_in: float"},
     .outputs = {"flow_out: float"},
     .attrs = {"T: type"},
     .shape_fn = shape_split,
     .flags = TF_OP_STATEFUL,
     .doc = "Splits value along axis 0 into pieces of lengths and writes "
            "piece i at index i.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArraySizeV3",
     .inputs = {"handle: string", "flow_in: float"},
     .outputs = {"size: int32"},
     .shape_fn = shape_size,
     .flags = TA_NODIFF,
     .doc = "The array's current size.",
     .deviation = TA_DEVIATION_HANDLE},
    {.name = "TensorArrayCloseV3",
     .inputs = {"handle: string"},
     .shape_fn = shape_close,
     .flags = TA_NODIFF,
     .doc = "Drops the array's elements; later operations on it fail.",
     .deviation = TA_DEVIATION_HANDLE},
};

TF_REGISTER_OPS("tensor_array", tensor_array_ops)
