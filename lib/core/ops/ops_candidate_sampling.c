/* ops_candidate_sampling.c: op definitions of candidate sampling for
 * sampled softmax, with TensorFlow's signatures: LogUniformCandidateSampler
 * (Zipfian candidates and their expected counts; stateful, seeded by
 * seed/seed2 as the random ops: both 0 means a fresh seed per kernel
 * instance) and ComputeAccidentalHits (the sampled candidates that equal a
 * true class of a row). Neither has a gradient. The shape functions check
 * what the attrs and static shapes already rule out, naming the node. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* true_classes (input 0) must be a matrix with num_true columns; *batch
 * gets its first dim (maybe unknown). */
static tf_code true_classes_shape(tf_shape_ctx *c, int64_t num_true,
                                  int64_t *batch) {
  const tf_shape *s = &c->in[0];
  char b[96];
  *batch = TF_UNKNOWN_DIM;
  if (s->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  if (s->rank != 2) {
    return tf_shape_error(c, "true_classes must be a matrix [batch, "
                          "num_true], got shape %s",
                          tf_shape_str(s, b, sizeof(b)));
  }
  if (s->dims[1] != TF_UNKNOWN_DIM && s->dims[1] != num_true) {
    return tf_shape_error(c, "true_classes must have num_true = %" PRId64
                          " columns, got shape %s", num_true,
                          tf_shape_str(s, b, sizeof(b)));
  }
  *batch = s->dims[0];
  return TF_OK;
}

static tf_code log_uniform_shape(tf_shape_ctx *c) {
  int64_t num_true, num_sampled, range_max, batch;
  bool unique;
  TF_TRY(tf_node_attr_get_int(c->node, "num_true", &num_true, c->status));
  TF_TRY(tf_node_attr_get_int(c->node, "num_sampled", &num_sampled,
                              c->status));
  TF_TRY(tf_node_attr_get_int(c->node, "range_max", &range_max, c->status));
  TF_TRY(tf_node_attr_get_bool(c->node, "unique", &unique, c->status));
  if (unique && num_sampled > range_max) {
    return tf_shape_error(c, "unique sampling of num_sampled = %" PRId64
                          " distinct candidates needs range_max >= "
                          "num_sampled, got range_max = %" PRId64,
                          num_sampled, range_max);
  }
  if (num_sampled > INT32_MAX) {
    return tf_shape_error(c, "num_sampled = %" PRId64 " must be < 2^31",
                          num_sampled);
  }
  TF_TRY(true_classes_shape(c, num_true, &batch));
  c->out[0] = tf_shape_of(1, num_sampled);
  c->out[1] = tf_shape_of(2, batch, num_true);
  c->out[2] = tf_shape_of(1, num_sampled);
  return TF_OK;
}

static tf_code accidental_hits_shape(tf_shape_ctx *c) {
  int64_t num_true, batch;
  TF_TRY(tf_node_attr_get_int(c->node, "num_true", &num_true, c->status));
  if (num_true < 1) {
    return tf_shape_error(c, "num_true = %" PRId64 " must be >= 1", num_true);
  }
  TF_TRY(true_classes_shape(c, num_true, &batch));
  const tf_shape *s = &c->in[1];
  char b[96];
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 1) {
    return tf_shape_error(c, "sampled_candidates must be a vector, got "
                          "shape %s", tf_shape_str(s, b, sizeof(b)));
  }
  for (int i = 0; i < 3; i++) {
    c->out[i] = tf_shape_of(1, TF_UNKNOWN_DIM);
  }
  return TF_OK;
}

static const tf_op_spec candidate_sampling_ops[] = {
    {.name = "LogUniformCandidateSampler",
     .inputs = {"true_classes: int64"},
     .outputs = {"sampled_candidates: int64", "true_expected_count: float",
                 "sampled_expected_count: float"},
     .attrs = {"num_true: int >= 1", "num_sampled: int >= 1", "unique: bool",
               "range_max: int >= 1", "seed: int = 0", "seed2: int = 0"},
     .shape_fn = log_uniform_shape,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "num_sampled candidates in [0, range_max) drawn with P(k) = "
            "(log(k + 2) - log(k + 1)) / log(range_max + 1) (unique: "
            "redrawn until distinct), and the expected count of each true "
            "class and each candidate in such a draw (unique: 1 - (1 - "
            "P(k))^tries; else num_sampled * P(k)). true_classes must lie "
            "in [0, range_max).",
     .deviation = "true_classes outside [0, range_max) are INVALID_ARGUMENT "
                  "naming the element (TF gives them an expected count "
                  "unchecked); num_sampled must be < 2^31"},
    {.name = "ComputeAccidentalHits",
     .inputs = {"true_classes: int64", "sampled_candidates: int64"},
     .outputs = {"indices: int32", "ids: int64", "weights: float"},
     .attrs = {"num_true: int", "seed: int = 0", "seed2: int = 0"},
     .shape_fn = accidental_hits_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "For every true_classes[i, j] that equals a sampled candidate: "
            "indices = i, ids = the candidate's position (the last one when "
            "it repeats), weights = -FLT_MAX; in row-major order of "
            "true_classes. seed and seed2 are unused, as in TF.",
     .deviation = "num_true must be >= 1 (TF also accepts 0 with a [batch, "
                  "0] true_classes, which has no hits)"},
};

TF_REGISTER_OPS("candidate_sampling", candidate_sampling_ops)
