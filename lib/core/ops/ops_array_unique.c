/* ops_array_unique.c: the Unique op (TensorFlow's signature): the distinct
 * elements of a vector in order of first appearance and, for every
 * element, the position of its value among them. The optimizers use it to
 * sum the duplicate rows of a sparse gradient before a SparseApply*
 * update, as TensorFlow's do. */
#include "lib/core/framework/op_registry.h"

static tf_code shape_unique(tf_shape_ctx *c) {
  const tf_shape *x = &c->in[0];
  char a[96];
  if (x->rank != TF_UNKNOWN_RANK && x->rank != 1) {
    return tf_shape_error(c, "x must be a vector, got shape %s",
                          tf_shape_str(x, a, sizeof a));
  }
  c->out[0] = tf_shape_of(1, TF_UNKNOWN_DIM);
  c->out[1] = x->rank == 1 ? *x : tf_shape_of(1, TF_UNKNOWN_DIM);
  return TF_OK;
}

static const tf_op_spec unique_ops[] = {
    {.name = "Unique",
     .inputs = {"x: T"},
     .outputs = {"y: T", "idx: out_idx"},
     .attrs = {"T: type", "out_idx: {int32, int64} = int32"},
     .shape_fn = shape_unique,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "y: the distinct elements of the vector x in order of first "
            "appearance; idx[i]: the position of x[i] in y (CPU kernels for "
            "int32 and int64)."},
};

TF_REGISTER_OPS("array", unique_ops)
