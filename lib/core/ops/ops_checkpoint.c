/* ops_checkpoint.c: op definitions of SaveV2 and RestoreV2 with
 * TensorFlow's names, input order and attrs (tensorflow/core/ops/
 * io_ops.cc): tensor_names and shape_and_slices are string vectors of one
 * entry per tensor, dtypes types the saved or restored tensors. The file
 * is one checkpoint shard (lib/core/serialize/ckpt_shard.h,
 * docs/checkpoint.md) at exactly the prefix path. Neither has a gradient,
 * as in TensorFlow. */
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* Input i must be a scalar (rank 0) or, with vec, a vector of n entries
 * (n < 0: any length). */
static tf_code check_rank(tf_shape_ctx *c, int i, const char *what, bool vec,
                          int64_t n) {
  const tf_shape *s = &c->in[i];
  if (s->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  if (s->rank != (vec ? 1 : 0)) {
    return tf_shape_error(c, "%s must be a %s, got rank %d", what,
                          vec ? "vector" : "scalar", s->rank);
  }
  if (vec && n >= 0 && s->dims[0] != TF_UNKNOWN_DIM && s->dims[0] != n) {
    return tf_shape_error(c, "%s has %lld entries but there are %lld "
                          "tensors (dtypes)", what, (long long)s->dims[0],
                          (long long)n);
  }
  return TF_OK;
}

static tf_code check_common(tf_shape_ctx *c) {
  const tf_attr_value *dt = tf_node_attr(c->node, "dtypes");
  int64_t n = dt != NULL ? dt->n : -1;
  TF_TRY(check_rank(c, 0, "prefix", false, -1));
  TF_TRY(check_rank(c, 1, "tensor_names", true, n));
  return check_rank(c, 2, "shape_and_slices", true, n);
}

static tf_code shape_save(tf_shape_ctx *c) { return check_common(c); }

/* Outputs stay unknown: a slice's extent is known only when the kernel
 * parses shape_and_slices. */
static tf_code shape_restore(tf_shape_ctx *c) { return check_common(c); }

static const tf_op_spec checkpoint_ops[] = {
    {.name = "SaveV2",
     .inputs = {"prefix: string", "tensor_names: string",
                "shape_and_slices: string", "tensors: dtypes"},
     .attrs = {"dtypes: list(type)"},
     .shape_fn = shape_save,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Saves tensors[i] as tensor_names[i] (a whole tensor when "
            "shape_and_slices[i] is '', else that slice of a larger one, "
            "e.g. '10 20 0,5:-') in one checkpoint shard file at prefix, "
            "replaced atomically; makes prefix's directory when missing.",
     .deviation = "writes one shard file at exactly prefix, in this "
                  "project's format (TensorFlow writes prefix.index and "
                  "prefix.data-* tensor bundle files)"},
    {.name = "RestoreV2",
     .inputs = {"prefix: string", "tensor_names: string",
                "shape_and_slices: string"},
     .outputs = {"tensors: dtypes"},
     .attrs = {"dtypes: list(type)"},
     .shape_fn = shape_restore,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Reads tensor_names[i] from the checkpoint shard file at "
            "prefix, whole or the slice shape_and_slices[i] assembled from "
            "the stored slices; NOT_FOUND, DATA_LOSS (CRC, coverage) and "
            "dtype errors name the tensor and the file.",
     .deviation = "reads the shard file SaveV2 writes at exactly prefix, "
                  "not TensorFlow's tensor bundle files"},
};

TF_REGISTER_OPS("checkpoint", checkpoint_ops)
