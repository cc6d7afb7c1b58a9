/* layers_impl.h: internals shared by the layers builders (layers.c: the
 * context, variables and initializers; layers_nn.c: the layers;
 * layers_loss.c: losses and metrics; layers_norm.c: batch normalization
 * and its update ops; layers_conv.c: depthwise and separable convolutions).
 * Not part of the public API. */
#ifndef TF_CORE_LAYERS_IMPL_H
#define TF_CORE_LAYERS_IMPL_H

#include "tf/attr.h"
#include "tf/layers.h"

struct tf_layers {
  tf_graph *g;
  int64_t seed;      /* graph-level seed; 0 = none */
  int64_t op_count;  /* op seeds handed out so far */
  tf_layer_var *vars;
  int n_vars, cap_vars;
  const char *device; /* requested on every node tf__layers_op builds (a
                       * partitioned variable's shard); NULL: none */
  tf_node **updates;  /* TF's UPDATE_OPS: batch norm's moving averages */
  int n_updates, cap_updates;
};

/* The (seed, seed2) attrs of a random op with op seed op_seed, as TF1's
 * get_seed: graph seed and op seed (the next counter value when op_seed is
 * 0); with no graph seed an explicit op seed pairs with TF's default graph
 * seed, and neither leaves both 0 (unseeded). */
void tf__layers_seeds(tf_layers *l, int64_t op_seed, int64_t *seed,
                      int64_t *seed2);

/* Builds op on data inputs in[0..n_in) with attrs, named name (NULL: the
 * op's name made unique) in the current scope, and returns output 0. When
 * st already holds an error, or the node fails, returns {NULL, 0} (with
 * the error in st), so a builder may chain calls and check st once. */
tf_output tf__layers_op(tf_layers *l, const char *op, const char *name,
                        const tf_output *in, int n_in, const tf_attr_kv *attrs,
                        int n_attrs, tf_status *st);
/* Const scalar of dtype dt (float32, float64, int32 or int64; others give
 * INVALID_ARGUMENT) holding v, chained as tf__layers_op. */
tf_output tf__layers_scalar(tf_layers *l, tf_dtype dt, double v,
                            tf_status *st);
/* Const int32 vector v[0..n), chained as tf__layers_op. */
tf_output tf__layers_ivec(tf_layers *l, const int32_t *v, int n,
                          tf_status *st);

/* A name for a new node "base", "base_1", ... unique under the current
 * scope, relative to the scope (what tf_node_begin takes); written to buf. */
const char *tf__layers_unique(tf_layers *l, const char *base, char *buf,
                              size_t size);

/* INVALID_ARGUMENT "<what>: ..." unless init (NULL: zeros) is a known kind
 * that can make dtype dt with finite parameters (stddev >= 0). */
tf_code tf__layers_check_init(const char *what, const tf_initializer *init,
                              tf_dtype dt, tf_status *st);
/* tf_layers_variable chained as tf__layers_op: returns the ref output, or
 * {NULL, 0} with the error in st (an error already in st: nothing done). */
tf_output tf__layers_var(tf_layers *l, const char *name, tf_shape shape,
                         tf_dtype dt, const tf_initializer *init,
                         bool trainable, tf_status *st);

/* tf__layers_var drawing random initial values with the fans of
 * fan_shape (a partitioned variable's full shape) instead of shape's. */
tf_output tf__layers_var_fans(tf_layers *l, const char *name, tf_shape shape,
                              const tf_shape *fan_shape, tf_dtype dt,
                              const tf_initializer *init, bool trainable,
                              tf_status *st);
/* Forgets the variables recorded after the first n (their nodes were
 * rolled back). */
void tf__layers_forget_vars(tf_layers *l, int n);

/* act(x) (TF_ACT_NONE: x itself) named name (NULL: the op's), chained as
 * tf__layers_op. */
tf_output tf__layers_act(tf_layers *l, tf_output x, tf_activation act,
                         const char *name, tf_status *st);
/* INVALID_ARGUMENT "<what>: unknown activation" unless act is one. */
tf_code tf__layers_check_act(const char *what, tf_activation act,
                             tf_status *st);
/* Checks a kernel initializer (NULL: Glorot) and a bias one (NULL: zeros)
 * for dtype dt. */
tf_code tf__layers_check_inits(const char *what, const tf_initializer *k,
                               const tf_initializer *b, tf_dtype dt,
                               tf_status *st);
/* Checks a float NHWC x (rank 4 or unknown), positive window and stride
 * sizes and padding "SAME" or "VALID". */
tf_code tf__layers_check_window(const char *what, tf_output x, int kh, int kw,
                                int sh, int sw, const char *padding,
                                tf_status *st);

/* Records n as an update op (tf_layers_update_ops). Aborts on OOM only. */
void tf__layers_add_update(tf_layers *l, tf_node *n);

/* Whether dt is float32 or float64, the dtypes the layers compute in. */
bool tf__layers_float(tf_dtype dt);
/* INVALID_ARGUMENT "<what>: x must be float32 or float64, got <dt>" unless
 * x's dtype is; TF_OK otherwise. */
tf_code tf__layers_check_float(const char *what, tf_output x, tf_status *st);

/* The LSTM of tf_layer_lstm on x [batch, time, in] (checked by the
 * caller) with the given kernel w [in, 4*units], recurrent kernel u
 * [units, 4*units] and bias b [4*units]; returns the last h, chained as
 * tf__layers_op. For builders that keep their variables elsewhere. */
tf_output tf__layers_lstm(tf_layers *l, tf_output x, int64_t units, tf_output w,
                          tf_output u, tf_output b, tf_status *st);

#endif
