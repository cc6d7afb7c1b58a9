/* layers_rnn.c: an LSTM layer built as a dynamic loop (tf_while_loop),
 * not unrolled. The input, transposed to [time, batch, in], is unstacked
 * into a TensorArray before the loop; the loop carries (t, h, c) and
 * reads element t (the gradient loop writes the array's gradient array,
 * one [batch, in] element per step). Each step
 * projects its own input (x_t·W beside h·U): projecting every step in one
 * GEMM before the loop would be faster forward, but the gradient loop then
 * accumulates a [time, batch, 4H] gradient for that invariant on every
 * iteration, instead of [time, batch, in]. Gates in Keras's order
 * [i | f | g | o], the same as PyTorch's nn.LSTM:
 *   z = x_t·W + h·U + b;  c' = σ(f)∘c + σ(i)∘tanh(g);  h' = σ(o)∘tanh(c'). */
#include <string.h>

#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"
#include "tf/control_flow.h"
#include "tf/tensor_array.h"

typedef struct lstm_loop {
  tf_layers *l;
  int32_t steps;
} lstm_loop;

static tf_output op1(tf_layers *l, const char *op, tf_output x, tf_status *st) {
  return tf__layers_op(l, op, NULL, &x, 1, NULL, 0, st);
}

static tf_output op2(tf_layers *l, const char *op, tf_output a, tf_output b,
                     tf_status *st) {
  tf_output in[2] = {a, b};
  return tf__layers_op(l, op, NULL, in, 2, NULL, 0, st);
}

static tf_code lstm_cond(tf_graph *g, const tf_output *vars, int n_vars,
                         const tf_output *inv, int n_inv, tf_output *pred,
                         void *arg, tf_status *st) {
  lstm_loop *lp = arg;
  tf_output n = tf__layers_scalar(lp->l, TF_INT32, lp->steps, st);
  *pred = op2(lp->l, "Less", vars[0], n, st);
  return st->code;
}

/* vars: t, h, c; invariants: the input array's handle and flow, W, U, b. */
static tf_code lstm_body(tf_graph *g, const tf_output *vars, int n_vars,
                         const tf_output *inv, int n_inv, tf_output *next,
                         void *arg, tf_status *st) {
  lstm_loop *lp = arg;
  tf_layers *l = lp->l;
  tf_tensor_array ta = {inv[0], inv[1], tf_node_output_type(vars[1].node, vars[1].index)};
  tf_output xt = {NULL, 0};
  if (st->code == TF_OK) tf_tensor_array_read(g, &ta, vars[0], &xt, st);
  tf_output z = op2(l, "Add", op2(l, "MatMul", xt, inv[2], st),
                    op2(l, "MatMul", vars[1], inv[3], st), st);
  tf_output sin[2] = {tf__layers_scalar(l, TF_INT32, 1, st), op2(l, "BiasAdd", z, inv[4], st)};
  tf_attr_kv a[] = {{"num_split", tf_attr_int(4)}};
  tf_output gate = tf__layers_op(l, "Split", NULL, sin, 2, a, 1, st);
  if (st->code != TF_OK) return st->code;
  tf_output i = op1(l, "Sigmoid", (tf_output){gate.node, 0}, st);
  tf_output f = op1(l, "Sigmoid", (tf_output){gate.node, 1}, st);
  tf_output gg = op1(l, "Tanh", (tf_output){gate.node, 2}, st);
  tf_output o = op1(l, "Sigmoid", (tf_output){gate.node, 3}, st);
  tf_output c = op2(l, "Add", op2(l, "Mul", f, vars[2], st), op2(l, "Mul", i, gg, st), st);
  next[0] = op2(l, "Add", vars[0], tf__layers_scalar(l, TF_INT32, 1, st), st);
  next[1] = op2(l, "Mul", o, op1(l, "Tanh", c, st), st);
  next[2] = c;
  return st->code;
}

/* Zeros [batch, units] (no gradient), batch taken at run time from x
 * [time, batch, in]: zeros [batch, in] times the kernel's first units
 * columns, a small GEMM once per step. */
static tf_output zero_state(tf_layers *l, tf_output x, tf_output w, int64_t units,
                            tf_status *st) {
  int32_t begin[2] = {0, 0}, size[2] = {-1, (int32_t)units};
  tf_output gin[3] = {x, tf__layers_scalar(l, TF_INT32, 0, st),
                      tf__layers_scalar(l, TF_INT32, 0, st)};
  tf_output x0 = op1(l, "ZerosLike", tf__layers_op(l, "GatherV2", NULL, gin, 3, NULL, 0, st), st);
  tf_output sin[3] = {w, tf__layers_ivec(l, begin, 2, st), tf__layers_ivec(l, size, 2, st)};
  tf_output ws = tf__layers_op(l, "Slice", NULL, sin, 3, NULL, 0, st);
  return op1(l, "StopGradient", op2(l, "MatMul", x0, ws, st), st);
}

static tf_code check_lstm(tf_output x, int64_t units, tf_status *st) {
  TF_TRY(tf__layers_check_float("lstm", x, st));
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  char b[96];
  if (s->rank != 3 || s->dims[1] < 1 || s->dims[2] < 1 || s->dims[1] > INT32_MAX ||
      s->dims[2] > INT32_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "lstm: x must be [batch, time, "
                         "in] with time and in known and >= 1, got shape %s",
                         tf_shape_str(s, b, sizeof b));
  }
  if (units < 1 || units > INT32_MAX / 4) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "lstm: units must be in [1, 2^29), "
                         "got %lld", (long long)units);
  }
  return TF_OK;
}

tf_output tf__layers_lstm(tf_layers *l, tf_output x, int64_t units, tf_output w,
                          tf_output u, tf_output b, tf_status *st) {
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  if (st->code != TF_OK) return (tf_output){NULL, 0};
  int32_t perm[3] = {1, 0, 2};
  tf_output xt = op2(l, "Transpose", x, tf__layers_ivec(l, perm, 3, st), st);
  tf_tensor_array ta;
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  if (st->code != TF_OK ||
      tf_tensor_array_new(l->g, dt, tf__layers_scalar(l, TF_INT32, s->dims[1], st), NULL, &ta,
                          st) != TF_OK ||
      tf_tensor_array_unstack(l->g, &ta, xt, st) != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_output inv[5] = {ta.handle, ta.flow, op1(l, "Identity", w, st), op1(l, "Identity", u, st),
                      op1(l, "Identity", b, st)};
  tf_output zero = zero_state(l, xt, w, units, st);
  tf_output vars[3] = {tf__layers_scalar(l, TF_INT32, 0, st), zero, zero};
  tf_output res[3];
  lstm_loop lp = {l, (int32_t)s->dims[1]};
  if (st->code != TF_OK ||
      tf_while_loop(l->g, "while", vars, 3, inv, 5, lstm_cond, lstm_body, &lp, 0, res,
                    st) != TF_OK) {
    return (tf_output){NULL, 0};
  }
  return res[1];
}

tf_code tf_layer_lstm(tf_layers *l, tf_output x, int64_t units, const char *name,
                      tf_output *out, tf_status *st) {
  tf_status local;
  if (st == NULL) st = &local;
  tf_status_init(st);
  *out = (tf_output){NULL, 0};
  TF_TRY(check_lstm(x, units, st));
  const tf_shape *s = tf_node_output_shape(x.node, x.index);
  int64_t in = s->dims[2];
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  tf_initializer glorot = tf_init_glorot_uniform(0);
  tf_graph_push_scope(l->g, name ? name : "lstm");
  tf_output w = tf__layers_var(l, "kernel", tf_shape_of(2, in, 4 * units), dt, &glorot,
                               true, st);
  tf_output u = tf__layers_var(l, "recurrent_kernel", tf_shape_of(2, units, 4 * units),
                               dt, &glorot, true, st);
  tf_output b = tf__layers_var(l, "bias", tf_shape_of(1, 4 * units), dt, NULL, true, st);
  tf_output h = tf__layers_lstm(l, x, units, w, u, b, st);
  tf_graph_pop_scope(l->g);
  if (st->code == TF_OK) *out = h;
  return st->code;
}
