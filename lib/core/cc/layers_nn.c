/* layers_nn.c: the layers proper as graph builders, named like TF1's
 * tf.layers: activations, dense (MatMul + BiasAdd), conv2d (Conv2D +
 * BiasAdd, NHWC), max/avg pooling, flatten, inverted dropout on a seeded
 * RandomUniform, and embedding lookup (one Gather on the variable, so its
 * gradient stays a set of rows). */
#include <math.h>
#include <string.h>

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

tf_output tf__layers_act(tf_layers *l, tf_output x, tf_activation act,
                         const char *name, tf_status *st) {
  static const char *const ops[] = {NULL,      "Relu",    "Tanh",
                                    "Sigmoid", "Softmax", "LeakyRelu"};
  if (act == TF_ACT_NONE || st->code != TF_OK) {
    return st->code == TF_OK ? x : (tf_output){NULL, 0};
  }
  tf_attr_kv a[] = {{"alpha", tf_attr_float(0.2)}};
  return tf__layers_op(l, ops[act], name, &x, 1, a,
                       act == TF_ACT_LEAKY_RELU ? 1 : 0, st);
}

tf_code tf__layers_check_act(const char *what, tf_activation act,
                             tf_status *st) {
  if ((int)act < (int)TF_ACT_NONE || (int)act > (int)TF_ACT_LEAKY_RELU) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: unknown activation %d",
                         what, (int)act);
  }
  return TF_OK;
}

tf_code tf_layer_activation(tf_layers *l, tf_output x, tf_activation act,
                            const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(tf__layers_check_float("activation", x, st));
  TF_TRY(tf__layers_check_act("activation", act, st));
  *out = tf__layers_act(l, x, act, name, st);
  return st->code;
}

tf_code tf__layers_check_inits(const char *what, const tf_initializer *k,
                               const tf_initializer *b, tf_dtype dt,
                               tf_status *st) {
  tf_initializer glorot = tf_init_glorot_uniform(0);
  TF_TRY(tf__layers_check_init(what, k ? k : &glorot, dt, st));
  return tf__layers_check_init(what, b, dt, st);
}

/* The common tail of dense and conv2d, inside the layer's scope: kernel
 * variable, op(x, kernel), BiasAdd, activation. */
static tf_output kernel_layer(tf_layers *l, tf_output x, tf_shape kshape,
                              const char *op, const tf_attr_kv *attrs,
                              int n_attrs, tf_activation act, bool use_bias,
                              const tf_initializer *kinit,
                              const tf_initializer *binit, tf_status *st) {
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  tf_initializer glorot = tf_init_glorot_uniform(0);
  tf_output k = tf__layers_var(l, "kernel", kshape, dt, kinit ? kinit : &glorot,
                               true, st);
  tf_output in[2] = {x, k};
  tf_output y = tf__layers_op(l, op, NULL, in, 2, attrs, n_attrs, st);
  if (use_bias) {
    int64_t units = kshape.dims[kshape.rank - 1];
    tf_output b = tf__layers_var(l, "bias", tf_shape_of(1, units), dt, binit,
                                 true, st);
    tf_output bin[2] = {y, b};
    y = tf__layers_op(l, "BiasAdd", NULL, bin, 2, NULL, 0, st);
  }
  return tf__layers_act(l, y, act, NULL, st);
}

tf_code tf_layer_dense(tf_layers *l, tf_output x, int64_t units,
                       tf_activation act, bool use_bias,
                       const tf_initializer *kernel_init,
                       const tf_initializer *bias_init, const char *name,
                       tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(tf__layers_check_float("dense", x, st));
  const tf_shape *s = shape_of(x);
  char b[96];
  if (s->rank != 2 || s->dims[1] < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "dense: x must be [batch, "
                         "in] with in known, got shape %s",
                         tf_shape_str(s, b, sizeof b));
  }
  if (units <= 0 || units > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "dense: units must be in "
                         "[1, 2^31), got %lld", (long long)units);
  }
  TF_TRY(tf__layers_check_act("dense", act, st));
  TF_TRY(tf__layers_check_inits("dense", kernel_init, bias_init,
                                tf_node_output_type(x.node, x.index), st));
  tf_graph_push_scope(l->g, name ? name : "dense");
  *out = kernel_layer(l, x, tf_shape_of(2, s->dims[1], units), "MatMul", NULL,
                      0, act, use_bias, kernel_init, bias_init, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

static tf_code check_padding(const char *what, const char *padding,
                             tf_status *st) {
  if (padding == NULL ||
      (strcmp(padding, "SAME") != 0 && strcmp(padding, "VALID") != 0)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: padding must be "
                         "\"SAME\" or \"VALID\", got %s%s%s", what,
                         padding ? "\"" : "", padding ? padding : "NULL",
                         padding ? "\"" : "");
  }
  return TF_OK;
}

tf_code tf__layers_check_window(const char *what, tf_output x, int kh, int kw,
                                int sh, int sw, const char *padding,
                                tf_status *st) {
  TF_TRY(tf__layers_check_float(what, x, st));
  const tf_shape *s = shape_of(x);
  char b[96];
  if (s->rank != 4 && s->rank != TF_UNKNOWN_RANK) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: x must be NHWC "
                         "[batch, height, width, channels], got shape %s",
                         what, tf_shape_str(s, b, sizeof b));
  }
  if (kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: window %dx%d and "
                         "strides %dx%d must be positive", what, kh, kw, sh,
                         sw);
  }
  return check_padding(what, padding, st);
}

tf_code tf_layer_conv2d(tf_layers *l, tf_output x, int64_t filters,
                        int kernel_h, int kernel_w, int stride_h,
                        int stride_w, const char *padding, tf_activation act,
                        bool use_bias, const tf_initializer *kernel_init,
                        const tf_initializer *bias_init, const char *name,
                        tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(tf__layers_check_window("conv2d", x, kernel_h, kernel_w, stride_h,
                                 stride_w, padding, st));
  const tf_shape *s = shape_of(x);
  char b[96];
  if (s->rank != 4 || s->dims[3] < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "conv2d: the channels of x "
                         "must be known, got shape %s",
                         tf_shape_str(s, b, sizeof b));
  }
  if (filters <= 0 || filters > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "conv2d: filters must be in "
                         "[1, 2^31), got %lld", (long long)filters);
  }
  TF_TRY(tf__layers_check_act("conv2d", act, st));
  TF_TRY(tf__layers_check_inits("conv2d", kernel_init, bias_init,
                                tf_node_output_type(x.node, x.index), st));
  int64_t strides[4] = {1, stride_h, stride_w, 1};
  tf_attr_kv a[] = {{"strides", tf_attr_int_list(strides, 4)},
                    {"padding", tf_attr_string(padding)}};
  tf_graph_push_scope(l->g, name ? name : "conv2d");
  *out = kernel_layer(l, x, tf_shape_of(4, kernel_h, kernel_w, s->dims[3],
                                        filters),
                      "Conv2D", a, 2, act, use_bias, kernel_init, bias_init,
                      st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

static tf_code pool(tf_layers *l, const char *op, const char *scope,
                    tf_output x, int ph, int pw, int sh, int sw,
                    const char *padding, const char *name, tf_output *out,
                    tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(tf__layers_check_window(scope, x, ph, pw, sh, sw, padding, st));
  int64_t ksize[4] = {1, ph, pw, 1}, strides[4] = {1, sh, sw, 1};
  tf_attr_kv a[] = {{"ksize", tf_attr_int_list(ksize, 4)},
                    {"strides", tf_attr_int_list(strides, 4)},
                    {"padding", tf_attr_string(padding)}};
  tf_graph_push_scope(l->g, name ? name : scope);
  *out = tf__layers_op(l, op, NULL, &x, 1, a, 3, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

tf_code tf_layer_max_pool(tf_layers *l, tf_output x, int pool_h, int pool_w,
                          int stride_h, int stride_w, const char *padding,
                          const char *name, tf_output *out, tf_status *st) {
  return pool(l, "MaxPool", "max_pooling2d", x, pool_h, pool_w, stride_h,
              stride_w, padding, name, out, st);
}

tf_code tf_layer_avg_pool(tf_layers *l, tf_output x, int pool_h, int pool_w,
                          int stride_h, int stride_w, const char *padding,
                          const char *name, tf_output *out, tf_status *st) {
  return pool(l, "AvgPool", "average_pooling2d", x, pool_h, pool_w, stride_h,
              stride_w, padding, name, out, st);
}

tf_code tf_layer_flatten(tf_layers *l, tf_output x, const char *name,
                         tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  if (x.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "flatten: input is a NULL "
                         "node");
  }
  const tf_shape *s = shape_of(x);
  char b[96];
  int64_t n = 1;
  bool ok = s->rank >= 1;
  for (int i = 1; ok && i < s->rank; i++) {
    ok = s->dims[i] >= 0;
    n *= ok ? s->dims[i] : 1;
    ok = ok && n <= INT32_MAX;
  }
  if (!ok) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "flatten: x must have rank "
                         ">= 1 and known non-batch dims (product < 2^31), "
                         "got shape %s", tf_shape_str(s, b, sizeof b));
  }
  tf_graph_push_scope(l->g, name ? name : "flatten");
  int32_t dims[2] = {-1, (int32_t)n};
  tf_output in[2] = {x, tf__layers_ivec(l, dims, 2, st)};
  *out = tf__layers_op(l, "Reshape", NULL, in, 2, NULL, 0, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

static tf_code check_dropout(tf_output x, double rate, tf_output training,
                             tf_status *st) {
  TF_TRY(tf__layers_check_float("dropout", x, st));
  if (!(rate >= 0 && rate < 1)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "dropout: rate must be in "
                         "[0, 1), got %g", rate);
  }
  if (training.node != NULL) {
    const tf_shape *s = shape_of(training);
    char b[96];
    if (tf_node_output_type(training.node, training.index) != TF_BOOL ||
        (s->rank != 0 && s->rank != TF_UNKNOWN_RANK)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "dropout: training must "
                           "be a scalar bool, got %s%s",
                           tf_dtype_name(tf_node_output_type(training.node,
                                                             training.index)),
                           tf_shape_str(s, b, sizeof b));
    }
  }
  return TF_OK;
}

/* Inside the dropout scope: x * (keep * scale), keep = u >= r, where r and
 * scale are the rate and 1 / (1 - rate), or r = rate * training at run
 * time (so a false flag keeps everything with scale 1). */
static tf_output dropout_ops(tf_layers *l, tf_output x, double rate,
                             tf_output training, int64_t op_seed,
                             tf_status *st) {
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  tf_output shape = tf__layers_op(l, "Shape", NULL, &x, 1, NULL, 0, st);
  int64_t seed, seed2;
  tf__layers_seeds(l, op_seed, &seed, &seed2);
  tf_attr_kv ra[] = {{"dtype", tf_attr_type_v(dt)},
                     {"seed", tf_attr_int(seed)},
                     {"seed2", tf_attr_int(seed2)}};
  tf_output u = tf__layers_op(l, "RandomUniform", NULL, &shape, 1, ra, 3, st);
  tf_output r = tf__layers_scalar(l, dt, rate, st), scale;
  if (training.node != NULL) {
    tf_attr_kv ca[] = {{"DstT", tf_attr_type_v(dt)}};
    tf_output on = tf__layers_op(l, "Cast", NULL, &training, 1, ca, 1, st);
    tf_output rin[2] = {r, on};
    r = tf__layers_op(l, "Mul", NULL, rin, 2, NULL, 0, st);
    tf_output one = tf__layers_scalar(l, dt, 1, st);
    tf_output kin[2] = {one, r};
    tf_output kept = tf__layers_op(l, "Sub", NULL, kin, 2, NULL, 0, st);
    tf_output din[2] = {one, kept};
    scale = tf__layers_op(l, "Div", NULL, din, 2, NULL, 0, st);
  } else {
    scale = tf__layers_scalar(l, dt, 1.0 / (1.0 - rate), st);
  }
  tf_output gin[2] = {u, r};
  tf_output ge = tf__layers_op(l, "GreaterEqual", NULL, gin, 2, NULL, 0, st);
  tf_attr_kv ca[] = {{"DstT", tf_attr_type_v(dt)}};
  tf_output keep = tf__layers_op(l, "Cast", NULL, &ge, 1, ca, 1, st);
  tf_output min[2] = {keep, scale};
  tf_output mask = tf__layers_op(l, "Mul", NULL, min, 2, NULL, 0, st);
  tf_output xin[2] = {x, mask};
  return tf__layers_op(l, "Mul", NULL, xin, 2, NULL, 0, st);
}

tf_code tf_layer_dropout(tf_layers *l, tf_output x, double rate,
                         tf_output training, bool active, int64_t seed,
                         const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_dropout(x, rate, training, st));
  if (rate == 0 || (training.node == NULL && !active)) {
    *out = x;
    return TF_OK;
  }
  tf_graph_push_scope(l->g, name ? name : "dropout");
  *out = dropout_ops(l, x, rate, training, seed, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}

static tf_code check_ids(const char *what, tf_output ids, tf_status *st) {
  if (ids.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: ids is a NULL node",
                         what);
  }
  tf_dtype dt = tf_node_output_type(ids.node, ids.index);
  if (dt != TF_INT32 && dt != TF_INT64) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: ids must be int32 or "
                         "int64, got %s", what, tf_dtype_name(dt));
  }
  return TF_OK;
}

tf_code tf_layer_embedding_lookup(tf_layers *l, tf_output params,
                                  tf_output ids, const char *name,
                                  tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_ids("embedding_lookup", ids, st));
  if (params.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "embedding_lookup: params "
                         "is a NULL node");
  }
  char buf[256];
  const char *n = name ? name : tf__layers_unique(l, "embedding_lookup", buf,
                                                  sizeof buf);
  tf_output in[2] = {params, ids};
  *out = tf__layers_op(l, "Gather", n, in, 2, NULL, 0, st);
  return st->code;
}

tf_code tf_layer_embedding(tf_layers *l, tf_output ids, int64_t vocab,
                           int64_t dim, tf_dtype dtype,
                           const tf_initializer *init, const char *name,
                           tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_ids("embedding", ids, st));
  if (vocab <= 0 || dim <= 0 || vocab > INT32_MAX || dim > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "embedding: vocab %lld and "
                         "dim %lld must be in [1, 2^31)", (long long)vocab,
                         (long long)dim);
  }
  if (!tf__layers_float(dtype)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "embedding: dtype must be "
                         "float32 or float64, got %s", tf_dtype_name(dtype));
  }
  tf_initializer glorot = tf_init_glorot_uniform(0);
  const tf_initializer *in = init ? init : &glorot;
  TF_TRY(tf__layers_check_init("embedding", in, dtype, st));
  tf_graph_push_scope(l->g, name ? name : "embedding");
  tf_output e = tf__layers_var(l, "embeddings", tf_shape_of(2, vocab, dim),
                               dtype, in, true, st);
  tf_output gin[2] = {e, ids};
  *out = tf__layers_op(l, "Gather", "embedding_lookup", gin, 2, NULL, 0, st);
  tf_graph_pop_scope(l->g);
  return st->code;
}
