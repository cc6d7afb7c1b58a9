/* layers.h: neural-network layers as graph builders, after TF1's tf.layers,
 * tf.nn and tf.losses.
 *
 * A tf_layers context builds into one graph and remembers the variables it
 * created (name, ref output, shape) and their initializers, so the caller
 * can run one init target, list the trainable variables for tf_gradients
 * and an optimizer, and count parameters exactly (the whitepaper's porting
 * lesson). Layers name their nodes as TensorFlow does: each call opens a
 * scope made unique in the graph ("dense", "dense_1", "conv2d_1"), holding
 * its variables ("dense/kernel", "dense/bias") and ops ("dense/MatMul").
 *
 * Random initializers and dropout are seeded like TF1: the context's seed
 * is the graph-level seed and each random op gets an op seed (an explicit
 * one, else the context's next counter value), so the same build with the
 * same seeds gives the same values. Context seed 0 and op seed 0 leave the
 * op unseeded (fresh randomness per session).
 *
 * Every builder returns OK, or an error in st (INVALID_ARGUMENT naming the
 * layer and what was wrong: rank, unknown dim, dtype, range). Arguments
 * are checked before any node is added, so such errors leave the graph
 * unchanged. Layers compute in x's dtype: float32 or float64. */
#ifndef TF_LAYERS_H
#define TF_LAYERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_layers tf_layers;

typedef enum tf_activation {
  TF_ACT_NONE = 0, /* identity: no node */
  TF_ACT_RELU,
  TF_ACT_TANH,
  TF_ACT_SIGMOID,
  TF_ACT_SOFTMAX, /* over the last axis */
  TF_ACT_LEAKY_RELU /* LeakyRelu with alpha 0.2 (tf.nn.leaky_relu's) */
} tf_activation;

typedef enum tf_init_kind {
  TF_INIT_ZEROS = 0,
  TF_INIT_ONES,
  TF_INIT_CONSTANT,         /* every element = value */
  TF_INIT_GLOROT_UNIFORM,   /* U[-l, l), l = sqrt(6 / (fan_in + fan_out)) */
  TF_INIT_HE_NORMAL,        /* TF's he_normal: truncated normal whose
                             * stddev after truncation is sqrt(2 / fan_in) */
  TF_INIT_TRUNCATED_NORMAL  /* mean + stddev * N(0, 1) redrawn beyond 2 sd */
} tf_init_kind;

/* How a variable gets its first value. Fans follow TF: a [in, out] matrix
 * has fan_in = in, fan_out = out; a conv kernel [kh, kw, cin, cout] has
 * fan_in = kh*kw*cin, fan_out = kh*kw*cout; a vector [n] has both n. */
typedef struct tf_initializer {
  tf_init_kind kind;
  double value;  /* CONSTANT */
  double mean;   /* TRUNCATED_NORMAL */
  double stddev; /* TRUNCATED_NORMAL */
  int64_t seed;  /* random kinds: op seed; 0 = the context's next */
} tf_initializer;

/* Constructors of tf_initializer values (plain assignments, so the header
 * is also valid C++). */
static inline tf_initializer tf__init_make(tf_init_kind kind, double value,
                                           double mean, double stddev,
                                           int64_t seed) {
  tf_initializer i;
  i.kind = kind;
  i.value = value;
  i.mean = mean;
  i.stddev = stddev;
  i.seed = seed;
  return i;
}
static inline tf_initializer tf_init_zeros(void) {
  return tf__init_make(TF_INIT_ZEROS, 0, 0, 0, 0);
}
static inline tf_initializer tf_init_ones(void) {
  return tf__init_make(TF_INIT_ONES, 0, 0, 0, 0);
}
static inline tf_initializer tf_init_constant(double value) {
  return tf__init_make(TF_INIT_CONSTANT, value, 0, 0, 0);
}
static inline tf_initializer tf_init_glorot_uniform(int64_t seed) {
  return tf__init_make(TF_INIT_GLOROT_UNIFORM, 0, 0, 0, seed);
}
static inline tf_initializer tf_init_he_normal(int64_t seed) {
  return tf__init_make(TF_INIT_HE_NORMAL, 0, 0, 0, seed);
}
static inline tf_initializer tf_init_truncated_normal(double mean,
                                                      double stddev,
                                                      int64_t seed) {
  return tf__init_make(TF_INIT_TRUNCATED_NORMAL, 0, mean, stddev, seed);
}

/* A variable the context created. Strings are owned by the context. */
typedef struct tf_layer_var {
  const char *name;  /* full node name, e.g. "dense/kernel" */
  tf_output var;     /* the VariableV2's ref output: read it, take
                      * gradients with respect to it, assign to it */
  tf_shape shape;    /* fully defined */
  tf_dtype dtype;
  bool trainable;
  tf_node *assign;   /* the Assign of its initial value */
} tf_layer_var;

/* ---- the context --------------------------------------------------------- */

/* A context building into g (which must outlive it) with graph-level seed
 * `seed` (0: unseeded unless an op seed is given). Aborts on OOM only. */
TF_API tf_layers *tf_layers_new(tf_graph *g, int64_t seed);
/* Frees the context (not the graph's nodes). NULL-safe. */
TF_API void tf_layers_free(tf_layers *l);
TF_API tf_graph *tf_layers_graph(const tf_layers *l);

/* Adds a variable `name` (under the current scope) of fully defined shape
 * and float32/float64 dtype (also int32/int64 for ZEROS, ONES, CONSTANT),
 * its initial value from init (NULL: zeros) under "<name>/Initializer/"
 * and its Assign "<name>/Assign", and records it. *out gets the ref
 * output. ALREADY_EXISTS when the name is taken, INVALID_ARGUMENT for a
 * bad shape, dtype, initializer or stddev. */
TF_API tf_code tf_layers_variable(tf_layers *l, const char *name,
                                  tf_shape shape, tf_dtype dtype,
                                  const tf_initializer *init, bool trainable,
                                  tf_output *out, tf_status *st);

/* A NoOp node `name` (NULL: "init", made unique) with a control input on
 * the Assign of every variable created so far: run it as a target once
 * before training. INVALID_ARGUMENT when there is no variable. */
TF_API tf_node *tf_layers_init_op(tf_layers *l, const char *name,
                                  tf_status *st);

/* Variables in creation order; i in [0, tf_layers_num_vars). */
TF_API int tf_layers_num_vars(const tf_layers *l);
TF_API const tf_layer_var *tf_layers_var(const tf_layers *l, int i);
/* Writes the ref outputs of the trainable variables, in creation order,
 * to vars[0..max) and returns how many there are (may exceed max; vars
 * may be NULL when max is 0). */
TF_API int tf_layers_trainable(const tf_layers *l, tf_output *vars, int max);
/* The exact number of trainable parameters (sum of element counts). */
TF_API int64_t tf_layers_num_params(const tf_layers *l);
/* Prints one line per trainable variable (name, shape, count) and the
 * total as the last line "Total trainable parameters: N". */
TF_API void tf_layers_print_params(const tf_layers *l, FILE *f);

/* ---- layers -------------------------------------------------------------
 * name NULL gives TF's default scope name (shown per function), made
 * unique; *out receives the layer's output. */

/* act(x) as one node (TF_ACT_NONE: *out = x, no node); name NULL: the op's
 * name in the current scope ("Relu"). x must be floating. */
TF_API tf_code tf_layer_activation(tf_layers *l, tf_output x, tf_activation act,
                                   const char *name, tf_output *out,
                                   tf_status *st);

/* act(x @ kernel + bias) for x [batch, in] (in known), kernel [in, units]
 * from kernel_init (NULL: Glorot uniform), bias [units] from bias_init
 * (NULL: zeros) unless use_bias is false. MatMul, BiasAdd, activation.
 * Scope "dense". */
TF_API tf_code tf_layer_dense(tf_layers *l, tf_output x, int64_t units,
                              tf_activation act, bool use_bias,
                              const tf_initializer *kernel_init,
                              const tf_initializer *bias_init, const char *name,
                              tf_output *out, tf_status *st);

/* An LSTM over x [batch, time, in] (time and in known): *out = the last
 * hidden state h [batch, units]. A dynamic loop (tf_while_loop over the
 * time steps, not unrolled) carrying (t, h, c) from zeros; the input is
 * unstacked into a TensorArray that each step reads. Gradients flow through the loop
 * (tf_gradients builds the backward loop).
 * Gates in Keras's (and PyTorch's) order [i | f | g | o]:
 *   z = x_t·kernel + h·recurrent_kernel + bias,
 *   c' = sigmoid(f)*c + sigmoid(i)*tanh(g),  h' = sigmoid(o)*tanh(c').
 * Variables kernel [in, 4*units] and recurrent_kernel [units, 4*units]
 * (Glorot uniform), bias [4*units] (zeros). Scope "lstm". */
TF_API tf_code tf_layer_lstm(tf_layers *l, tf_output x, int64_t units,
                             const char *name, tf_output *out, tf_status *st);

/* act(conv2d(x, kernel) + bias) for NHWC x [batch, h, w, cin] (cin
 * known), kernel [kernel_h, kernel_w, cin, filters], strides (stride_h,
 * stride_w), padding "SAME" or "VALID". Initializers as tf_layer_dense.
 * Conv2D, BiasAdd, activation. Scope "conv2d". */
TF_API tf_code tf_layer_conv2d(tf_layers *l, tf_output x, int64_t filters,
                               int kernel_h, int kernel_w, int stride_h,
                               int stride_w, const char *padding,
                               tf_activation act, bool use_bias,
                               const tf_initializer *kernel_init,
                               const tf_initializer *bias_init,
                               const char *name, tf_output *out, tf_status *st);

/* Keras's DepthwiseConv2D: act(depthwise_conv2d(x, depthwise_kernel) +
 * bias) for NHWC x [batch, h, w, cin] (cin known): output channel
 * c * depth_multiplier + m convolves input channel c with
 * depthwise_kernel[:, :, c, m], kernel [kernel_h, kernel_w, cin,
 * depth_multiplier] (depthwise_init NULL: Glorot uniform, fans as a conv
 * kernel's), bias [cin * depth_multiplier] (bias_init NULL: zeros) unless
 * use_bias is false; strides and padding as tf_layer_conv2d.
 * DepthwiseConv2dNative, BiasAdd, activation. Scope "depthwise_conv2d". */
TF_API tf_code tf_layer_depthwise_conv2d(
    tf_layers *l, tf_output x, int kernel_h, int kernel_w, int stride_h,
    int stride_w, const char *padding, int64_t depth_multiplier,
    tf_activation act, bool use_bias, const tf_initializer *depthwise_init,
    const tf_initializer *bias_init, const char *name, tf_output *out,
    tf_status *st);

/* Keras's SeparableConv2D (tf.nn.separable_conv2d): the depthwise
 * convolution of tf_layer_depthwise_conv2d (variable "depthwise_kernel",
 * strides and padding applied there), then a 1x1 Conv2D (stride 1,
 * VALID) with "pointwise_kernel" [1, 1, cin * depth_multiplier, filters]
 * (pointwise_init NULL: Glorot uniform), bias [filters] unless use_bias
 * is false, activation. Scope "separable_conv2d". */
TF_API tf_code tf_layer_separable_conv2d(
    tf_layers *l, tf_output x, int64_t filters, int kernel_h, int kernel_w,
    int stride_h, int stride_w, const char *padding, int64_t depth_multiplier,
    tf_activation act, bool use_bias, const tf_initializer *depthwise_init,
    const tf_initializer *pointwise_init, const tf_initializer *bias_init,
    const char *name, tf_output *out, tf_status *st);

/* Max / mean over pool_h x pool_w windows of NHWC x, moved by the
 * strides, padding "SAME" or "VALID" (the mean counts only elements
 * inside the input). Scopes "max_pooling2d" / "average_pooling2d". */
TF_API tf_code tf_layer_max_pool(tf_layers *l, tf_output x, int pool_h,
                                 int pool_w, int stride_h, int stride_w,
                                 const char *padding, const char *name,
                                 tf_output *out, tf_status *st);
TF_API tf_code tf_layer_avg_pool(tf_layers *l, tf_output x, int pool_h,
                                 int pool_w, int stride_h, int stride_w,
                                 const char *padding, const char *name,
                                 tf_output *out, tf_status *st);

/* x [batch, d1, ..., dk] (d1..dk known) reshaped to [batch, d1*...*dk].
 * Scope "flatten". */
TF_API tf_code tf_layer_flatten(tf_layers *l, tf_output x, const char *name,
                                tf_output *out, tf_status *st);

/* Inverted dropout: each element is kept with probability 1 - rate and
 * scaled by 1 / (1 - rate), else zeroed, from a seeded RandomUniform
 * (seed 0: the context's next op seed). rate in [0, 1). When training's
 * node is NULL the switch is made at build time by `active`: false (or
 * rate 0) gives *out = x with no node. Otherwise training is a scalar
 * bool tensor: dropout applies in the steps where it is true and is the
 * exact identity where it is false. Scope "dropout". */
TF_API tf_code tf_layer_dropout(tf_layers *l, tf_output x, double rate,
                                tf_output training, bool active, int64_t seed,
                                const char *name, tf_output *out,
                                tf_status *st);

/* Keras's BatchNormalization over the last axis of x, float32 [batch, C]
 * or NHWC [batch, h, w, C] (C known), on FusedBatchNormV3 (Keras's fused
 * path; 2-D x is reshaped to [batch, 1, 1, C] and back). Variables
 * "gamma" [C] (ones, trainable) when scale, "beta" [C] (zeros, trainable)
 * when center (else Consts of ones / zeros), "moving_mean" [C] (zeros)
 * and "moving_variance" [C] (ones), both not trainable.
 * Training: y = gamma * (x - m) / sqrt(v + epsilon) + beta with the batch
 * mean m and biased variance v (is_training true), and two update ops,
 * moving -= (moving - batch) * (1 - momentum) (AssignSub, TF's
 * _assign_moving_average) with the batch mean and the UNBIASED (Bessel-
 * corrected) batch variance the op outputs, recorded in the context
 * (tf_layers_update_ops, TF's UPDATE_OPS collection): run them with each
 * training step (tf_optimizer_control_dependencies).
 * Inference: the same with the moving statistics (is_training false).
 * When training's node is NULL the mode is chosen at build time by
 * `active` (inference adds no update op). Otherwise training is a scalar
 * bool fed per step (TF's smart_cond): y is a tf_cond over both modes and
 * each update op is the Merge of a tf_cond that assigns only when training
 * is true (else leaves the statistic as it is); gradients flow through
 * the cond. momentum in [0, 1] (Keras: 0.99), epsilon > 0 (Keras: 0.001).
 * Scope "batch_normalization". */
TF_API tf_code tf_layer_batch_norm(tf_layers *l, tf_output x,
                                   tf_output training, bool active,
                                   double momentum, double epsilon, bool scale,
                                   bool center, const char *name,
                                   tf_output *out, tf_status *st);

/* The update ops the layers recorded (batch norm's moving averages), in
 * creation order, written to ops[0..max); returns how many there are (may
 * exceed max; ops may be NULL when max is 0). */
TF_API int tf_layers_update_ops(const tf_layers *l, tf_node **ops, int max);

/* Rows of params (usually a variable's ref output, [vocab, ...]) at the
 * int32/int64 ids: one Gather, so that the gradient with respect to the
 * variable stays sparse (tf_gradients_sparse). Node "embedding_lookup"
 * when name is NULL. */
TF_API tf_code tf_layer_embedding_lookup(tf_layers *l, tf_output params,
                                         tf_output ids, const char *name,
                                         tf_output *out, tf_status *st);
/* A trainable variable "embeddings" [vocab, dim] of dtype (init NULL:
 * Glorot uniform) and its lookup at ids. Scope "embedding". */
TF_API tf_code tf_layer_embedding(tf_layers *l, tf_output ids, int64_t vocab,
                                  int64_t dim, tf_dtype dtype,
                                  const tf_initializer *init, const char *name,
                                  tf_output *out, tf_status *st);

/* ---- partitioned variables and sharded embeddings -------------------------
 * A very large variable is split along axis 0 into shards, each a variable
 * of its own on its own device (usually the ps tasks), as TF1's
 * fixed_size_partitioner and embedding_lookup over a list of params. A
 * lookup gathers each id's row on the shard that holds it, so the gradient
 * of each shard is the set of rows it gave (sparse) and an optimizer
 * updates those rows only, on the shard's device. */

/* Rows of shard i (0 <= i < n) when `rows` rows are split into n shards
 * along axis 0 as TF's fixed_size_partitioner: the first rows % n shards
 * get rows / n + 1 rows, the others rows / n. 0 for bad arguments. */
TF_API int64_t tf_layers_shard_rows(int64_t rows, int n, int i);

/* A variable `name` (under the current scope) of fully defined shape
 * [rows, ...] (rank >= 1) and dtype (as tf_layers_variable) split into
 * num_shards variables "<name>/part_<i>" of tf_layers_shard_rows(rows,
 * num_shards, i) rows each (1 <= num_shards <= rows), recorded in the
 * context in order (trainable as given). Shard i, its Assign and its
 * initializer nodes request devices[i % n_devices] (devices NULL or
 * n_devices 0: no request; the placer then spreads variables over the ps
 * tasks). Initial values: ZEROS, ONES and CONSTANT give every shard the
 * rows of the unpartitioned value; random kinds draw each shard on its own
 * with the fans of the FULL shape (as TF) and a distinct deterministic
 * seed: op seed init->seed + i when init->seed is set, else the context's
 * next op seed per shard. shards[0..num_shards) get the ref outputs. When
 * dense is not NULL, *dense gets the whole value as one tensor: ConcatV2
 * "<name>/concat" of the shards on axis 0, whose gradient gives each shard
 * its slice (one shard: Identity "<name>/read"). INVALID_ARGUMENT (naming the variable) for a bad shape,
 * dtype, initializer, num_shards or device string, ALREADY_EXISTS when a
 * name is taken; the graph and the context are unchanged on error. */
TF_API tf_code tf_layers_partitioned_variable(
    tf_layers *l, const char *name, tf_shape shape, tf_dtype dtype,
    const tf_initializer *init, bool trainable, int num_shards,
    const char *const *devices, int n_devices, tf_output *shards,
    tf_output *dense, tf_status *st);

/* TF's embedding_lookup over the shards[0..n) of one table (the ref
 * outputs of a partitioned variable, or any tensors of one dtype and rank
 * >= 1 whose row dims agree): out[ids...] = row `id` of the table the
 * shards make, shape ids.shape + row shape. ids: int32/int64, any shape.
 * strategy (NULL: "mod") says which shard holds id:
 *   "mod": shard id % n, row id / n in it;
 *   "div": contiguous ranges as tf_layers_shard_rows (the first total % n
 *          shards one row longer), which needs every shard's row count
 *          known and laid out so.
 * Nodes under scope `name` (NULL: "embedding_lookup", made unique): the
 * ids are flattened and assigned with FloorMod/FloorDiv (div: TF's
 * formulas), split with DynamicPartition, gathered by one Gather per
 * shard that is colocated with the shard (and requests its device), and
 * put back in the ids' order with DynamicStitch. The gradient with respect
 * to each shard stays sparse (tf_gradients_sparse: the rows it gave), so
 * an optimizer applies a sparse update colocated with the shard. n == 1 is
 * the plain lookup: one Gather named `name`, colocated with the shard.
 * An id outside the table fails the Run with INVALID_ARGUMENT naming the
 * node that met it (a shard's Gather, or for "div" the DynamicPartition).
 * INVALID_ARGUMENT at build time for bad arguments (strategy, dtypes,
 * ranks, row dims, div with unknown or mislaid shard sizes). */
TF_API tf_code tf_layer_sharded_embedding_lookup(
    tf_layers *l, const tf_output *shards, int n, tf_output ids,
    const char *strategy, const char *name, tf_output *out, tf_status *st);

/* ---- losses and metrics --------------------------------------------------- */

/* Mean over the batch of the cross-entropy of softmax(logits [B, C])
 * against one-hot (or any distribution) labels [B, C] of logits' dtype:
 * SoftmaxCrossEntropyWithLogits + Mean. Scope
 * "softmax_cross_entropy_loss". */
TF_API tf_code tf_layer_softmax_cross_entropy(tf_layers *l, tf_output logits,
                                              tf_output labels,
                                              const char *name, tf_output *out,
                                              tf_status *st);
/* The same against int32/int64 class indices labels [B] in [0, C):
 * SparseSoftmaxCrossEntropyWithLogits + Mean. Scope
 * "sparse_softmax_cross_entropy_loss". */
TF_API tf_code tf_layer_sparse_softmax_cross_entropy(
    tf_layers *l, tf_output logits, tf_output labels, const char *name,
    tf_output *out, tf_status *st);

/* scale * sum_i L2Loss(vars[i]) = scale * sum_i sum(v_i^2) / 2 (TF's
 * l2_regularizer). vars NULL: the context's trainable variables of rank
 * >= 2 (kernels and embeddings, not biases). All of one dtype. Scope
 * "l2_regularizer". */
TF_API tf_code tf_layer_l2_regularizer(tf_layers *l, const tf_output *vars,
                                       int n, double scale, const char *name,
                                       tf_output *out, tf_status *st);

/* Fraction (float32 scalar) of rows whose largest logit is at the label:
 * labels are class indices [B] (int32/int64) or one-hot rows [B, C] of a
 * floating dtype. ArgMax, Equal, Cast, Mean. Scope "accuracy". */
TF_API tf_code tf_layer_accuracy(tf_layers *l, tf_output logits,
                                 tf_output labels, const char *name,
                                 tf_output *out, tf_status *st);

/* ---- sampled softmax ------------------------------------------------------ */

/* TF1's tf.nn.sampled_softmax_loss for one weights tensor: the softmax
 * cross-entropy of each example over its num_true true classes and
 * num_sampled classes drawn by LogUniformCandidateSampler (unique, range
 * [0, num_classes), seeded with op seed `seed`, 0: the context's next),
 * instead of all num_classes. With x = inputs[b]:
 *   true logit of label c:   x . weights[c] + biases[c] - log(Q(c))
 *   sampled logit of s:      x . weights[s] + biases[s] - log(Q(s))
 * where Q is the sampler's expected count (TF's subtract_log_q); with
 * remove_accidental_hits (TF's default: true) a sampled class equal to one
 * of the row's labels gets logit -FLT_MAX. The target puts 1 / num_true on
 * each true class. *out is the per-example loss [batch] (TF's result; take
 * the Mean for a scalar objective); it approximates the full softmax loss
 * only in expectation, so evaluate with the full softmax.
 *
 * weights [num_classes, dim] (dim known) and biases [num_classes] are
 * usually variables' ref outputs: their rows are read with one Gather each,
 * so tf_gradients_sparse (and so tf_optimizer_minimize) gives them sparse
 * gradients. inputs [batch, dim] float32/float64 sets the dtype of
 * weights, biases and the loss; labels int32/int64 [batch, num_true] in
 * [0, num_classes) (checked when the sampler runs). sampled_values NULL:
 * a sampler node is added; else the three outputs of a sampler to use
 * instead (candidates int64 [num_sampled], true and sampled expected
 * counts float32 [batch, num_true] and [num_sampled]), as TF's
 * sampled_values. INVALID_ARGUMENT naming the argument for a bad dtype,
 * shape or count (1 <= num_sampled <= num_classes, num_true >= 1), before
 * any node is added. Scope "sampled_softmax_loss". */
TF_API tf_code tf_layer_sampled_softmax_loss(
    tf_layers *l, tf_output weights, tf_output biases, tf_output labels,
    tf_output inputs, int64_t num_sampled, int64_t num_classes, int num_true,
    const tf_output *sampled_values, bool remove_accidental_hits,
    int64_t seed, const char *name, tf_output *out, tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
