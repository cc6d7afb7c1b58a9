/* layers_sampled.c: the sampled softmax loss as a graph builder, after
 * TF1's tf.nn.sampled_softmax_loss (_compute_sampled_logits with
 * subtract_log_q): logits for the true classes and num_sampled classes from
 * a LogUniformCandidateSampler (or given sampled values), accidental hits
 * pushed to -FLT_MAX (ComputeAccidentalHits + DynamicStitch), log expected
 * counts subtracted, then softmax cross-entropy against 1 / num_true on the
 * true columns. The weight and bias rows come from one Gather each on the
 * ids [sampled..., labels...], so their gradients stay sparse. */
#include <inttypes.h>

#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"

#define STATUS_INIT(st, local)                                                 \
  do {                                                                         \
    if ((st) == NULL) (st) = &(local);                                         \
    tf_status_init(st);                                                        \
  } while (0)

#define WHAT "sampled_softmax_loss"

typedef struct ssm {
  tf_layers *l;
  tf_output weights, biases, labels, inputs;
  int32_t num_sampled, num_true, dim;
  int64_t num_classes;
  tf_dtype dt;
} ssm;

static const tf_shape *shape_of(tf_output x) {
  return tf_node_output_shape(x.node, x.index);
}

static tf_dtype dtype_of(tf_output x) {
  return tf_node_output_type(x.node, x.index);
}

/* INVALID_ARGUMENT "sampled_softmax_loss: <name> must be <want>, got
 * <dtype><shape>" unless x is a node of dtype dt (TF_DTYPE_INVALID: int32
 * or int64) whose shape has rank `rank` (or is unknown) and, where known,
 * dims d0 (and d1) when those are >= 0. */
static tf_code check_tensor(const char *name, const char *want, tf_output x,
                            tf_dtype dt, int rank, int64_t d0, int64_t d1,
                            tf_status *st) {
  if (x.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, WHAT ": %s is a NULL node",
                         name);
  }
  const tf_shape *s = shape_of(x);
  tf_dtype got = dtype_of(x);
  bool ok = dt == TF_DTYPE_INVALID ? (got == TF_INT32 || got == TF_INT64)
                                   : got == dt;
  if (s->rank != TF_UNKNOWN_RANK) {
    ok = ok && s->rank == rank;
    ok = ok && (d0 < 0 || s->dims[0] < 0 || s->dims[0] == d0);
    ok = ok && (d1 < 0 || rank < 2 || s->dims[1] < 0 || s->dims[1] == d1);
  }
  if (!ok) {
    char b[96];
    return tf_status_set(st, TF_INVALID_ARGUMENT, WHAT ": %s must be %s, got "
                         "%s%s", name, want, tf_dtype_name(got),
                         tf_shape_str(s, b, sizeof b));
  }
  return TF_OK;
}

/* The counts, and weights [num_classes, dim] with dim known. */
static tf_code check_sizes(ssm *m, int64_t num_sampled, int64_t num_classes,
                           int num_true, tf_status *st) {
  if (num_true < 1 || num_sampled < 1 || num_sampled > INT32_MAX ||
      num_classes < num_sampled) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, WHAT ": need num_true >= 1"
                         " and 1 <= num_sampled <= num_classes (num_sampled "
                         "< 2^31), got num_true %d, num_sampled %" PRId64
                         ", num_classes %" PRId64, num_true, num_sampled,
                         num_classes);
  }
  TF_TRY(tf__layers_check_float(WHAT, m->inputs, st));
  m->dt = dtype_of(m->inputs);
  TF_TRY(check_tensor("weights", "[num_classes, dim] of the inputs' dtype "
                      "with dim known", m->weights, m->dt, 2, num_classes, -1,
                      st));
  const tf_shape *ws = shape_of(m->weights);
  if (ws->rank != 2 || ws->dims[1] < 1 || ws->dims[1] > INT32_MAX) {
    char b[96];
    return tf_status_set(st, TF_INVALID_ARGUMENT, WHAT ": weights must be "
                         "[num_classes, dim] with dim in [1, 2^31), got %s",
                         tf_shape_str(ws, b, sizeof b));
  }
  m->num_sampled = (int32_t)num_sampled;
  m->num_true = num_true;
  m->num_classes = num_classes;
  m->dim = (int32_t)ws->dims[1];
  return TF_OK;
}

static tf_code check_args(ssm *m, const tf_output *sv, tf_status *st) {
  TF_TRY(check_tensor("biases", "[num_classes] of the inputs' dtype",
                      m->biases, m->dt, 1, m->num_classes, -1, st));
  TF_TRY(check_tensor("inputs", "[batch, dim] with dim the weights' dim",
                      m->inputs, m->dt, 2, -1, m->dim, st));
  TF_TRY(check_tensor("labels", "int32/int64 [batch, num_true]", m->labels,
                      TF_DTYPE_INVALID, 2, -1, m->num_true, st));
  if (sv == NULL) {
    return TF_OK;
  }
  TF_TRY(check_tensor("sampled_values[0]", "int64 [num_sampled]", sv[0],
                      TF_INT64, 1, m->num_sampled, -1, st));
  TF_TRY(check_tensor("sampled_values[1]", "float32 [batch, num_true]", sv[1],
                      TF_FLOAT32, 2, -1, m->num_true, st));
  return check_tensor("sampled_values[2]", "float32 [num_sampled]", sv[2],
                      TF_FLOAT32, 1, m->num_sampled, -1, st);
}

/* ---- graph pieces (chained: each returns {NULL, 0} once st holds an error) */

static tf_output op1(ssm *m, const char *op, tf_output a, tf_status *st) {
  return tf__layers_op(m->l, op, NULL, &a, 1, NULL, 0, st);
}

static tf_output op2(ssm *m, const char *op, tf_output a, tf_output b,
                     tf_status *st) {
  tf_output in[2] = {a, b};
  return tf__layers_op(m->l, op, NULL, in, 2, NULL, 0, st);
}

static tf_output ivec(ssm *m, int32_t a, int32_t b, int n, tf_status *st) {
  int32_t v[2] = {a, b};
  return tf__layers_ivec(m->l, v, n, st);
}

static tf_output cast(ssm *m, tf_output x, tf_dtype to, tf_status *st) {
  if (st->code != TF_OK || dtype_of(x) == to) {
    return x;
  }
  tf_attr_kv a[] = {{"DstT", tf_attr_type_v(to)}};
  return tf__layers_op(m->l, "Cast", NULL, &x, 1, a, 1, st);
}

/* ConcatV2 of a and b along axis. */
static tf_output concat(ssm *m, tf_output a, tf_output b, int32_t axis,
                        tf_status *st) {
  tf_output ax = tf__layers_scalar(m->l, TF_INT32, axis, st);
  if (st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_node_builder *nb = tf_node_begin(m->l->g, "ConcatV2", NULL);
  tf_node_add_input_list(nb, (tf_output[]){a, b}, 2);
  tf_node_add_input(nb, ax);
  tf_node *n = tf_node_finish(nb, st);
  return (tf_output){n, 0};
}

/* Slice(x, begin, size) of a rank-1 or rank-2 x. */
static tf_output slice(ssm *m, tf_output x, int rank, int32_t b0, int32_t b1,
                       int32_t s0, int32_t s1, tf_status *st) {
  tf_output in[3] = {x, ivec(m, b0, b1, rank, st), ivec(m, s0, s1, rank, st)};
  return tf__layers_op(m->l, "Slice", NULL, in, 3, NULL, 0, st);
}

/* params[ids] with one Gather, split into the rows of the first
 * num_sampled ids and the rest. */
static void gather_split(ssm *m, tf_output params, tf_output ids, int rank,
                         tf_output *sampled, tf_output *truth, tf_status *st) {
  tf_output all = op2(m, "Gather", params, ids, st);
  *sampled = slice(m, all, rank, 0, 0, m->num_sampled, -1, st);
  *truth = slice(m, all, rank, m->num_sampled, 0, -1, -1, st);
}

/* [batch, num_true]: inputs[b] . true_w[b, t] + true_b[b, t]. */
static tf_output true_logits(ssm *m, tf_output true_w, tf_output true_b,
                             tf_status *st) {
  int32_t dims[3] = {-1, m->num_true, m->dim};
  tf_output w3 = op2(m, "Reshape", true_w, tf__layers_ivec(m->l, dims, 3, st),
                     st);
  tf_output x3 = op2(m, "ExpandDims", m->inputs,
                     tf__layers_scalar(m->l, TF_INT32, 1, st), st);
  tf_output dots = op2(m, "Sum", op2(m, "Mul", x3, w3, st),
                       ivec(m, 2, 0, 1, st), st);
  tf_output b2 = op2(m, "Reshape", true_b, ivec(m, -1, m->num_true, 2, st),
                     st);
  return op2(m, "Add", dots, b2, st);
}

/* [batch, num_sampled]: inputs . sampled_w^T + sampled_b. */
static tf_output sampled_logits(ssm *m, tf_output sampled_w,
                                tf_output sampled_b, tf_status *st) {
  tf_output in[2] = {m->inputs, sampled_w};
  tf_attr_kv a[] = {{"transpose_b", tf_attr_bool(true)}};
  tf_output mm = tf__layers_op(m->l, "MatMul", NULL, in, 2, a, 1, st);
  return op2(m, "Add", mm, sampled_b, st);
}

/* logits + a [batch, num_sampled] mask that is -FLT_MAX where a sampled
 * candidate equals one of the row's labels (assigned, not summed, when a
 * label repeats: DynamicStitch keeps the last) and 0 elsewhere. */
static tf_output remove_hits(ssm *m, tf_output labels, tf_output sampled,
                             tf_output logits, tf_status *st) {
  tf_output in[2] = {labels, sampled};
  tf_attr_kv a[] = {{"num_true", tf_attr_int(m->num_true)}};
  tf_output hit = tf__layers_op(m->l, "ComputeAccidentalHits", NULL, in, 2,
                                a, 1, st);
  tf_node *h = hit.node;
  tf_output row_off = op2(m, "Mul", (tf_output){h, 0},
                          tf__layers_scalar(m->l, TF_INT32, m->num_sampled, st),
                          st);
  tf_output flat = op2(m, "Add", row_off,
                       cast(m, (tf_output){h, 1}, TF_INT32, st), st);
  tf_output size = op1(m, "Size", logits, st);
  tf_output rin[3] = {tf__layers_scalar(m->l, TF_INT32, 0, st), size,
                      tf__layers_scalar(m->l, TF_INT32, 1, st)};
  tf_output all = tf__layers_op(m->l, "Range", NULL, rin, 3, NULL, 0, st);
  tf_output zeros = op1(m, "ZerosLike",
                        op2(m, "Reshape", logits, ivec(m, -1, 0, 1, st), st),
                        st);
  tf_output w = cast(m, (tf_output){h, 2}, m->dt, st);
  if (st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_node_builder *nb = tf_node_begin(m->l->g, "DynamicStitch", NULL);
  tf_node_add_input_list(nb, (tf_output[]){all, flat}, 2);
  tf_node_add_input_list(nb, (tf_output[]){zeros, w}, 2);
  tf_output mask = {tf_node_finish(nb, st), 0};
  tf_output shaped = op2(m, "Reshape", mask, op1(m, "Shape", logits, st), st);
  return op2(m, "Add", logits, shaped, st);
}

/* logits - log(expected count) with the count (float32, no gradient) in
 * the logits' dtype. */
static tf_output sub_log_q(ssm *m, tf_output logits, tf_output count,
                           tf_status *st) {
  tf_output q = cast(m, op1(m, "StopGradient", count, st), m->dt, st);
  return op2(m, "Sub", logits, op1(m, "Log", q, st), st);
}

/* Per-row softmax cross-entropy of [true | sampled] logits against
 * 1 / num_true on the true columns. */
static tf_output xent(ssm *m, tf_output tl, tf_output sl, tf_status *st) {
  tf_output logits = concat(m, tl, sl, 1, st);
  tf_output frac = tf__layers_scalar(m->l, m->dt, 1.0 / m->num_true, st);
  tf_output on = op2(m, "Mul", op1(m, "OnesLike", tl, st), frac, st);
  tf_output labels = concat(m, on, op1(m, "ZerosLike", sl, st), 1, st);
  return op2(m, "SoftmaxCrossEntropyWithLogits", logits, labels, st);
}

static tf_output build(ssm *m, const tf_output *sv, bool remove_accidental,
                       int64_t seed, tf_status *st) {
  tf_output labels = cast(m, m->labels, TF_INT64, st), s[3];
  if (sv != NULL) {
    s[0] = sv[0], s[1] = sv[1], s[2] = sv[2];
  } else {
    int64_t s1, s2;
    tf__layers_seeds(m->l, seed, &s1, &s2);
    tf_attr_kv a[] = {{"num_true", tf_attr_int(m->num_true)},
                      {"num_sampled", tf_attr_int(m->num_sampled)},
                      {"unique", tf_attr_bool(true)},
                      {"range_max", tf_attr_int(m->num_classes)},
                      {"seed", tf_attr_int(s1)},
                      {"seed2", tf_attr_int(s2)}};
    tf_output smp = tf__layers_op(m->l, "LogUniformCandidateSampler", NULL,
                                  &labels, 1, a, 6, st);
    for (int i = 0; i < 3; i++) {
      s[i] = (tf_output){smp.node, i};
    }
  }
  tf_output flat = op2(m, "Reshape", labels, ivec(m, -1, 0, 1, st), st);
  tf_output ids = concat(m, s[0], flat, 0, st), sw, tw, sb, tb;
  gather_split(m, m->weights, ids, 2, &sw, &tw, st);
  gather_split(m, m->biases, ids, 1, &sb, &tb, st);
  tf_output tl = true_logits(m, tw, tb, st);
  tf_output sl = sampled_logits(m, sw, sb, st);
  if (remove_accidental) {
    sl = remove_hits(m, labels, s[0], sl, st);
  }
  tl = sub_log_q(m, tl, s[1], st);
  sl = sub_log_q(m, sl, s[2], st);
  return xent(m, tl, sl, st);
}

tf_code tf_layer_sampled_softmax_loss(
    tf_layers *l, tf_output weights, tf_output biases, tf_output labels,
    tf_output inputs, int64_t num_sampled, int64_t num_classes, int num_true,
    const tf_output *sampled_values, bool remove_accidental_hits,
    int64_t seed, const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  ssm m = {.l = l, .weights = weights, .biases = biases, .labels = labels,
           .inputs = inputs};
  TF_TRY(check_sizes(&m, num_sampled, num_classes, num_true, st));
  TF_TRY(check_args(&m, sampled_values, st));
  tf_graph_push_scope(l->g, name ? name : WHAT);
  *out = build(&m, sampled_values, remove_accidental_hits, seed, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}
