/* ops_random.c: op definitions of the stateful random ops (RandomUniform,
 * RandomStandardNormal and its alias RandomNormal, TruncatedNormal,
 * RandomUniformInt, RandomShuffle) with TensorFlow's signatures. Seeds are
 * the seed/seed2 attrs: both 0 means "pick a fresh random seed per kernel
 * instance", anything else gives a reproducible stream. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* Output shape from the 1-D "shape" input 0: exact when it is a constant,
 * rank-only when its length is known. */
static tf_code random_shape(tf_shape_ctx *c) {
  const tf_shape *s = &c->in[0];
  char b[96];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 1) {
    return tf_shape_error(c, "shape must be a vector, got shape %s",
                          tf_shape_str(s, b, sizeof(b)));
  }
  const tf_tensor *v = c->in_value ? c->in_value[0] : NULL;
  int64_t len = v ? v->n : (s->rank == 1 ? s->dims[0] : TF_UNKNOWN_DIM);
  if (len > TF_MAX_RANK) {
    return tf_shape_error(c, "shape has %" PRId64 " dims; at most %d allowed",
                          len, TF_MAX_RANK);
  }
  if (len < 0) {
    return TF_OK;
  }
  tf_shape o;
  o.rank = (int32_t)len;
  for (int64_t i = 0; i < len; i++) {
    o.dims[i] = v ? tf_tensor_get_i64(v, i) : TF_UNKNOWN_DIM;
    if (v && o.dims[i] < 0) {
      return tf_shape_error(c, "shape[%" PRId64 "] = %" PRId64
                            " must be >= 0", i, o.dims[i]);
    }
  }
  c->out[0] = o;
  return TF_OK;
}

static tf_code random_uniform_int_shape(tf_shape_ctx *c) {
  static const char *const names[3] = {"shape", "minval", "maxval"};
  char b[96];
  for (int i = 1; i < 3; i++) {
    if (c->in[i].rank != TF_UNKNOWN_RANK && c->in[i].rank != 0) {
      return tf_shape_error(c, "%s must be 0-D, got shape %s", names[i],
                            tf_shape_str(&c->in[i], b, sizeof(b)));
    }
  }
  return random_shape(c);
}

#define TF_RANDOM_FLOAT_OP(op_name, what, dev)                                 \
  {.name = op_name,                                                            \
   .inputs = {"shape: T"},                                                     \
   .outputs = {"output: dtype"},                                               \
   .attrs = {"seed: int = 0", "seed2: int = 0", "dtype: {float, double}",     \
             "T: {int32, int64}"},                                             \
   .shape_fn = random_shape,                                                   \
   .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,                         \
   .doc = what,                                                                \
   .deviation = dev}

static const tf_op_spec random_ops[] = {
    TF_RANDOM_FLOAT_OP("RandomUniform",
                       "Uniform floats in [0, 1) of the given shape.", NULL),
    TF_RANDOM_FLOAT_OP("RandomStandardNormal",
                       "Standard normal floats of the given shape "
                       "(Box-Muller).", NULL),
    TF_RANDOM_FLOAT_OP("RandomNormal",
                       "Alias of RandomStandardNormal: standard normal "
                       "floats of the given shape.",
                       "not a TensorFlow op: an alias of "
                       "RandomStandardNormal, the name TF uses"),
    TF_RANDOM_FLOAT_OP("TruncatedNormal",
                       "Standard normal floats of the given shape, redrawn "
                       "until within 2 standard deviations.", NULL),
    {.name = "RandomUniformInt",
     .inputs = {"shape: T", "minval: Tout", "maxval: Tout"},
     .outputs = {"output: Tout"},
     .attrs = {"seed: int = 0", "seed2: int = 0", "Tout: {int32, int64}",
               "T: {int32, int64}"},
     .shape_fn = random_uniform_int_shape,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Uniform integers in [minval, maxval) of the given shape."},
    {.name = "RandomShuffle",
     .inputs = {"value: T"},
     .outputs = {"output: T"},
     .attrs = {"seed: int = 0", "seed2: int = 0", "T: type"},
     .shape_fn = tf_shape_fn_unchanged,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "value with its slices along dimension 0 randomly permuted."},
};

TF_REGISTER_OPS("random", random_ops)
