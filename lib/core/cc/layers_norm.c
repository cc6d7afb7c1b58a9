/* layers_norm.c: Keras's BatchNormalization as a graph builder on
 * FusedBatchNormV3 (the fused path: NHWC, 2-D input reshaped to
 * [batch, 1, 1, C]), its moving-average updates (TF's
 * _assign_moving_average: moving -= (moving - batch) * (1 - momentum),
 * with the Bessel-corrected batch variance the fused op outputs) recorded
 * as the context's UPDATE_OPS, and the run-time training switch as TF's
 * smart_cond: one tf_cond for the forward pass and one per update, so the
 * moving statistics change only in steps where training is true. */
#include <math.h>
#include <string.h>

#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"
#include "tf/control_flow.h"

void tf__layers_add_update(tf_layers *l, tf_node *n) {
  if (l->n_updates == l->cap_updates) {
    l->cap_updates = l->cap_updates ? 2 * l->cap_updates : 8;
    l->updates = tf__xrealloc(l->updates,
                              (size_t)l->cap_updates * sizeof *l->updates);
  }
  l->updates[l->n_updates++] = n;
}

int tf_layers_update_ops(const tf_layers *l, tf_node **ops, int max) {
  for (int i = 0; i < l->n_updates && i < max; i++) {
    ops[i] = l->updates[i];
  }
  return l->n_updates;
}

/* What the forward and update branches need. */
typedef struct bn_ctx {
  tf_layers *l;
  double epsilon, decay; /* decay = 1 - momentum */
  tf_output moving;      /* the variable an update branch assigns */
} bn_ctx;

/* FusedBatchNormV3 on in[0..5) = x, scale, offset, mean, variance. */
static tf_node *fused(tf_layers *l, const tf_output *in, double epsilon,
                      bool training, tf_status *st) {
  tf_attr_kv a[] = {{"epsilon", tf_attr_float(epsilon)},
                    {"is_training", tf_attr_bool(training)},
                    {"data_format", tf_attr_string("NHWC")}};
  return tf__layers_op(l, "FusedBatchNormV3", NULL, in, 5, a, 3, st).node;
}

/* Training branch: y and the batch mean and (unbiased) variance. */
static tf_code train_branch(tf_graph *g, const tf_output *in, int n_in,
                            tf_output *out, int n_out, void *arg,
                            tf_status *st) {
  (void)g, (void)n_in, (void)n_out;
  bn_ctx *c = arg;
  tf_node *n = fused(c->l, in, c->epsilon, true, st);
  for (int i = 0; i < 3 && n != NULL; i++) {
    out[i] = (tf_output){n, i};
  }
  return st->code;
}

/* Inference branch: y from the moving statistics, which pass through as
 * the "batch" statistics (so an update from them would be no change). */
static tf_code infer_branch(tf_graph *g, const tf_output *in, int n_in,
                            tf_output *out, int n_out, void *arg,
                            tf_status *st) {
  (void)g, (void)n_in, (void)n_out;
  bn_ctx *c = arg;
  tf_node *n = fused(c->l, in, c->epsilon, false, st);
  out[0] = (tf_output){n, 0};
  out[1] = tf__layers_op(c->l, "Identity", NULL, &in[3], 1, NULL, 0, st);
  out[2] = tf__layers_op(c->l, "Identity", NULL, &in[4], 1, NULL, 0, st);
  return st->code;
}

/* AssignSub(moving, (moving - value) * decay), TF's _assign_moving_average,
 * under scope "AssignMovingAvg" (made unique). Returns the AssignSub. */
static tf_node *assign_avg(tf_layers *l, tf_output moving, tf_output value,
                           double decay, tf_status *st) {
  tf_graph_push_scope(l->g, "AssignMovingAvg");
  tf_dtype dt = tf_node_output_type(value.node, value.index);
  tf_output d = tf__layers_scalar(l, dt, decay, st);
  tf_output sin[2] = {moving, value};
  tf_output diff = tf__layers_op(l, "Sub", NULL, sin, 2, NULL, 0, st);
  tf_output min[2] = {diff, d};
  tf_output delta = tf__layers_op(l, "Mul", NULL, min, 2, NULL, 0, st);
  tf_output ain[2] = {moving, delta};
  tf_node *n = tf__layers_op(l, "AssignSub", NULL, ain, 2, NULL, 0, st).node;
  tf_graph_pop_scope(l->g);
  return n;
}

/* Update branch taken when training: the assignment, read back. */
static tf_code update_branch(tf_graph *g, const tf_output *in, int n_in,
                             tf_output *out, int n_out, void *arg,
                             tf_status *st) {
  (void)g, (void)n_in, (void)n_out;
  bn_ctx *c = arg;
  tf_output a = {assign_avg(c->l, c->moving, in[0], c->decay, st), 0};
  out[0] = tf__layers_op(c->l, "Identity", NULL, &a, 1, NULL, 0, st);
  return st->code;
}

/* Update branch when not training: nothing assigned. */
static tf_code keep_branch(tf_graph *g, const tf_output *in, int n_in,
                           tf_output *out, int n_out, void *arg,
                           tf_status *st) {
  (void)g, (void)n_in, (void)n_out;
  out[0] = tf__layers_op(((bn_ctx *)arg)->l, "Identity", NULL, in, 1, NULL, 0,
                         st);
  return st->code;
}

static tf_code check_bn(tf_output x, tf_output training, double momentum,
                        double epsilon, tf_status *st) {
  TF_TRY(tf__layers_check_float("batch_norm", x, st));
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  char b[96];
  if (tf_node_output_type(x.node, x.index) != TF_FLOAT32) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "batch_norm: x must be "
                         "float32 (FusedBatchNormV3 computes in float), got "
                         "%s", tf_dtype_name(tf_node_output_type(x.node,
                                                                 x.index)));
  }
  if ((s->rank != 2 && s->rank != 4) || s->dims[s->rank - 1] < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "batch_norm: x must be "
                         "[batch, features] or NHWC with the last dim known, "
                         "got shape %s", tf_shape_str(s, b, sizeof b));
  }
  if (!(momentum >= 0 && momentum <= 1) || !(epsilon > 0) ||
      !isfinite(epsilon)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "batch_norm: momentum must "
                         "be in [0, 1] and epsilon finite and > 0, got %g and "
                         "%g", momentum, epsilon);
  }
  if (training.node != NULL) {
    const tf_shape *ts = tf_node_output_shape(training.node, training.index);
    tf_dtype tdt = tf_node_output_type(training.node, training.index);
    if (tdt != TF_BOOL || (ts->rank != 0 && ts->rank != TF_UNKNOWN_RANK)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "batch_norm: training "
                           "must be a scalar bool, got %s%s",
                           tf_dtype_name(tdt), tf_shape_str(ts, b, sizeof b));
    }
  }
  return TF_OK;
}

/* The four inputs after x: gamma (or ones), beta (or zeros), moving mean
 * and variance, as variables (or Consts) in the layer's scope; read
 * through Identity when `read` (a cond takes values, not refs). */
static void bn_params(tf_layers *l, int64_t c, bool scale, bool center,
                      bool read, tf_output *p, tf_output *moving,
                      tf_status *st) {
  tf_shape sh = tf_shape_of(1, c);
  tf_initializer ones = tf_init_ones(), zeros = tf_init_zeros();
  p[0] = scale ? tf__layers_var(l, "gamma", sh, TF_FLOAT32, &ones, true, st)
               : (tf_output){NULL, 0};
  p[1] = center ? tf__layers_var(l, "beta", sh, TF_FLOAT32, &zeros, true, st)
                : (tf_output){NULL, 0};
  moving[0] = tf__layers_var(l, "moving_mean", sh, TF_FLOAT32, &zeros, false,
                             st);
  moving[1] = tf__layers_var(l, "moving_variance", sh, TF_FLOAT32, &ones,
                             false, st);
  p[2] = moving[0];
  p[3] = moving[1];
  for (int i = 0; i < 2; i++) {
    if (p[i].node == NULL && st->code == TF_OK) {
      tf_output v = tf__layers_scalar(l, TF_FLOAT32, i == 0 ? 1 : 0, st);
      int32_t d = (int32_t)c;
      tf_output fin[2] = {tf__layers_ivec(l, &d, 1, st), v};
      p[i] = tf__layers_op(l, "Fill", i == 0 ? "ones" : "zeros", fin, 2,
                           NULL, 0, st);
    }
  }
  for (int i = 0; i < 4 && read; i++) {
    p[i] = tf__layers_op(l, "Identity", NULL, &p[i], 1, NULL, 0, st);
  }
}

/* The layer's nodes inside its scope with a run-time flag: a cond for y
 * and one per moving statistic, whose Merge is the update op. */
static tf_output bn_cond(tf_layers *l, tf_output x4, tf_output training,
                         const tf_output *p, const tf_output *moving,
                         bn_ctx *c, tf_node **ups, tf_status *st) {
  tf_output in[5] = {x4, p[0], p[1], p[2], p[3]}, o[3] = {{NULL, 0}};
  if (st->code != TF_OK ||
      tf_cond(l->g, "cond", training,
              in, 5, train_branch, infer_branch, c, o, 3, st) != TF_OK) {
    return (tf_output){NULL, 0};
  }
  for (int k = 0; k < 2; k++) {
    tf_output u = {NULL, 0};
    c->moving = moving[k];
    if (tf_cond(l->g, "cond",
                training, &o[1 + k], 1, update_branch, keep_branch, c, &u, 1,
                st) != TF_OK) {
      return (tf_output){NULL, 0};
    }
    ups[k] = u.node;
  }
  return o[0];
}

/* The layer's nodes inside its scope, switched at build time. */
static tf_output bn_static(tf_layers *l, tf_output x4, bool active,
                           const tf_output *p, const tf_output *moving,
                           bn_ctx *c, tf_node **ups, tf_status *st) {
  tf_output in[5] = {x4, p[0], p[1], p[2], p[3]};
  tf_node *n = fused(l, in, c->epsilon, active, st);
  for (int k = 0; k < 2 && active && n != NULL; k++) {
    ups[k] = assign_avg(l, moving[k], (tf_output){n, 1 + k}, c->decay, st);
  }
  return (tf_output){n, 0};
}

tf_code tf_layer_batch_norm(tf_layers *l, tf_output x, tf_output training,
                            bool active, double momentum, double epsilon,
                            bool scale, bool center, const char *name,
                            tf_output *out, tf_status *st) {
  tf_status local;
  if (st == NULL) {
    st = &local;
  }
  tf_status_init(st);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_bn(x, training, momentum, epsilon, st));
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  int64_t ch = s->dims[s->rank - 1];
  int rank = s->rank;
  bn_ctx c = {.l = l, .epsilon = epsilon, .decay = 1.0 - momentum};
  tf_node *ups[2] = {NULL, NULL};
  tf_graph_push_scope(l->g, name ? name : "batch_normalization");
  tf_output p[4], moving[2], x4 = x, y;
  bn_params(l, ch, scale, center, training.node != NULL, p, moving, st);
  if (rank == 2) {
    int32_t d4[4] = {-1, 1, 1, (int32_t)ch};
    tf_output rin[2] = {x, tf__layers_ivec(l, d4, 4, st)};
    x4 = tf__layers_op(l, "Reshape", NULL, rin, 2, NULL, 0, st);
  }
  if (training.node != NULL) {
    y = bn_cond(l, x4, training, p, moving, &c, ups, st);
  } else {
    y = bn_static(l, x4, active, p, moving, &c, ups, st);
  }
  if (rank == 2) {
    int32_t d2[2] = {-1, (int32_t)ch};
    tf_output rin[2] = {y, tf__layers_ivec(l, d2, 2, st)};
    y = tf__layers_op(l, "Reshape", NULL, rin, 2, NULL, 0, st);
  }
  tf_graph_pop_scope(l->g);
  for (int k = 0; k < 2 && st->code == TF_OK && ups[k] != NULL; k++) {
    tf__layers_add_update(l, ups[k]);
  }
  *out = st->code == TF_OK ? y : (tf_output){NULL, 0};
  return st->code;
}
