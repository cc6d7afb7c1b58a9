/* layers_loss.c: losses and metrics as graph builders, after TF1's
 * tf.losses and tf.metrics: softmax cross-entropy against one-hot or
 * integer labels (mean over the batch), the L2 regularizer (L2Loss) and
 * accuracy (ArgMax + Equal + Cast + Mean). */
#include <stdlib.h>

#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"

#define STATUS_INIT(st, local)                                                 \
  do {                                                                         \
    if ((st) == NULL) (st) = &(local);                                         \
    tf_status_init(st);                                                        \
  } while (0)

static const tf_shape *shape_of(tf_output x) {
  return tf_node_output_shape(x.node, x.index);
}

static tf_dtype dtype_of(tf_output x) {
  return tf_node_output_type(x.node, x.index);
}

/* INVALID_ARGUMENT unless x is float logits of rank 2 (or unknown rank). */
static tf_code check_logits(const char *what, tf_output logits,
                            tf_status *st) {
  TF_TRY(tf__layers_check_float(what, logits, st));
  const tf_shape *s = shape_of(logits);
  char b[96];
  if (s->rank != 2 && s->rank != TF_UNKNOWN_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: logits must be "
                         "[batch, classes], got shape %s", what,
                         tf_shape_str(s, b, sizeof b));
  }
  return TF_OK;
}

/* INVALID_ARGUMENT unless labels are int32/int64 of rank 1 (or unknown). */
static tf_code check_int_labels(const char *what, tf_output labels,
                                tf_status *st) {
  if (labels.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: labels is a NULL node",
                         what);
  }
  const tf_shape *s = shape_of(labels);
  char b[96];
  tf_dtype dt = dtype_of(labels);
  if ((dt != TF_INT32 && dt != TF_INT64) ||
      (s->rank != 1 && s->rank != TF_UNKNOWN_RANK)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: labels must be int32 "
                         "or int64 class indices [batch], got %s%s", what,
                         tf_dtype_name(dt), tf_shape_str(s, b, sizeof b));
  }
  return TF_OK;
}

/* Mean of x over axis 0, chained. */
static tf_output batch_mean(tf_layers *l, tf_output x, tf_status *st) {
  int32_t axis = 0;
  tf_output in[2] = {x, tf__layers_ivec(l, &axis, 1, st)};
  return tf__layers_op(l, "Mean", NULL, in, 2, NULL, 0, st);
}

/* op(logits, labels) output 0 (per-row losses) averaged, in scope. */
static tf_code xent(tf_layers *l, const char *op, const char *scope,
                    tf_output logits, tf_output labels, tf_output *out,
                    tf_status *st) {
  tf_graph_push_scope(l->g, scope);
  tf_output in[2] = {logits, labels};
  tf_output per_row = tf__layers_op(l, op, NULL, in, 2, NULL, 0, st);
  *out = batch_mean(l, per_row, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

tf_code tf_layer_softmax_cross_entropy(tf_layers *l, tf_output logits,
                                       tf_output labels, const char *name,
                                       tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  const char *what = "softmax_cross_entropy";
  TF_TRY(check_logits(what, logits, st));
  if (labels.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: labels is a NULL node",
                         what);
  }
  const tf_shape *s = shape_of(labels);
  char b[96];
  if (dtype_of(labels) != dtype_of(logits) ||
      (s->rank != 2 && s->rank != TF_UNKNOWN_RANK)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: labels must be "
                         "[batch, classes] of the logits' dtype %s, got "
                         "%s%s", what, tf_dtype_name(dtype_of(logits)),
                         tf_dtype_name(dtype_of(labels)),
                         tf_shape_str(s, b, sizeof b));
  }
  return xent(l, "SoftmaxCrossEntropyWithLogits",
              name ? name : "softmax_cross_entropy_loss", logits, labels, out,
              st);
}

tf_code tf_layer_sparse_softmax_cross_entropy(tf_layers *l, tf_output logits,
                                              tf_output labels,
                                              const char *name,
                                              tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  const char *what = "sparse_softmax_cross_entropy";
  TF_TRY(check_logits(what, logits, st));
  TF_TRY(check_int_labels(what, labels, st));
  return xent(l, "SparseSoftmaxCrossEntropyWithLogits",
              name ? name : "sparse_softmax_cross_entropy_loss", logits,
              labels, out, st);
}

/* The variables to regularize: vars[0..n), or the context's trainable
 * variables of rank >= 2 (written to a fresh array *mine, freed by the
 * caller). INVALID_ARGUMENT when there are none or dtypes differ. */
static tf_code l2_vars(tf_layers *l, const tf_output *vars, int n,
                       const tf_output **use, int *n_use, tf_output **mine,
                       tf_status *st) {
  *mine = NULL;
  if (vars == NULL) {
    *mine = tf__xcalloc((size_t)tf_layers_num_vars(l) + 1, sizeof **mine);
    n = 0;
    for (int i = 0; i < tf_layers_num_vars(l); i++) {
      const tf_layer_var *v = tf_layers_var(l, i);
      if (v->trainable && v->shape.rank >= 2) {
        (*mine)[n++] = v->var;
      }
    }
    vars = *mine;
  }
  *use = vars;
  *n_use = n;
  if (n <= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "l2_regularizer: no "
                         "variables to regularize");
  }
  for (int i = 0; i < n; i++) {
    TF_TRY(tf__layers_check_float("l2_regularizer", vars[i], st));
    if (dtype_of(vars[i]) != dtype_of(vars[0])) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "l2_regularizer: '%s' is "
                           "%s but '%s' is %s", tf_node_name(vars[i].node),
                           tf_dtype_name(dtype_of(vars[i])),
                           tf_node_name(vars[0].node),
                           tf_dtype_name(dtype_of(vars[0])));
    }
  }
  return TF_OK;
}

tf_code tf_layer_l2_regularizer(tf_layers *l, const tf_output *vars, int n,
                                double scale, const char *name,
                                tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  const tf_output *use;
  tf_output *mine;
  int n_use;
  if (l2_vars(l, vars, n, &use, &n_use, &mine, st) != TF_OK) {
    free(mine);
    return st->code;
  }
  tf_graph_push_scope(l->g, name ? name : "l2_regularizer");
  tf_output *terms = tf__xcalloc((size_t)n_use, sizeof *terms);
  for (int i = 0; i < n_use; i++) {
    terms[i] = tf__layers_op(l, "L2Loss", NULL, &use[i], 1, NULL, 0, st);
  }
  tf_output sum = terms[0];
  if (n_use > 1 && st->code == TF_OK) {
    tf_node_builder *b = tf_node_begin(l->g, "AddN", NULL);
    tf_node_add_input_list(b, terms, n_use);
    tf_node *s = tf_node_finish(b, st);
    sum = (tf_output){s, 0};
  }
  tf_output in[2] = {sum, tf__layers_scalar(l, dtype_of(use[0]), scale, st)};
  *out = tf__layers_op(l, "Mul", NULL, in, 2, NULL, 0, st);
  tf_graph_pop_scope(l->g);
  free(terms);
  free(mine);
  return st->code;
}

/* INVALID_ARGUMENT unless labels are int class indices [B] or floating
 * one-hot rows [B, C]. */
static tf_code check_acc_labels(tf_output labels, tf_status *st) {
  if (labels.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "accuracy: labels is a "
                         "NULL node");
  }
  tf_dtype dt = dtype_of(labels);
  const tf_shape *s = shape_of(labels);
  char b[96];
  bool ints = (dt == TF_INT32 || dt == TF_INT64) &&
              (s->rank == 1 || s->rank == TF_UNKNOWN_RANK);
  bool onehot = tf__layers_float(dt) &&
                (s->rank == 2 || s->rank == TF_UNKNOWN_RANK);
  if (!ints && !onehot) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "accuracy: labels must be "
                         "int32/int64 [batch] or float one-hot [batch, "
                         "classes], got %s%s", tf_dtype_name(dt),
                         tf_shape_str(s, b, sizeof b));
  }
  return TF_OK;
}

/* ArgMax(x, 1) with output dtype it, chained. */
static tf_output argmax(tf_layers *l, tf_output x, tf_dtype it,
                        tf_status *st) {
  tf_output in[2] = {x, tf__layers_scalar(l, TF_INT32, 1, st)};
  tf_attr_kv a[] = {{"output_type", tf_attr_type_v(it)}};
  return tf__layers_op(l, "ArgMax", NULL, in, 2, a, 1, st);
}

tf_code tf_layer_accuracy(tf_layers *l, tf_output logits, tf_output labels,
                          const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_logits("accuracy", logits, st));
  TF_TRY(check_acc_labels(labels, st));
  tf_dtype ldt = dtype_of(labels);
  tf_dtype it = tf__layers_float(ldt) ? TF_INT64 : ldt;
  tf_graph_push_scope(l->g, name ? name : "accuracy");
  tf_output pred = argmax(l, logits, it, st);
  tf_output want = tf__layers_float(ldt) ? argmax(l, labels, it, st) : labels;
  tf_output ein[2] = {pred, want};
  tf_output eq = tf__layers_op(l, "Equal", NULL, ein, 2, NULL, 0, st);
  tf_attr_kv ca[] = {{"DstT", tf_attr_type_v(TF_FLOAT32)}};
  tf_output hit = tf__layers_op(l, "Cast", NULL, &eq, 1, ca, 1, st);
  *out = batch_mean(l, hit, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}
