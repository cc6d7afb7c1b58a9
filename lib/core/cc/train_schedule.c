/* train_schedule.c: learning-rate schedules driven by a global step and
 * global-norm gradient clipping, as graph builders with TF1's formulas
 * (tf.train.exponential_decay, inverse_time_decay, polynomial_decay,
 * piecewise_constant; tf.clip_by_global_norm). Schedules compute in
 * float32; floor(a / b) is FloorDiv and ceil(a / b) is -FloorDiv(-a, b).
 * Each builder leaves the graph unchanged on error. */
#include <math.h>
#include <stdlib.h>

#include "lib/core/cc/train_impl.h"
#include "lib/core/base/util.h"

static bool is_number(tf_dtype dt) {
  return dt == TF_INT32 || dt == TF_INT64 || dt == TF_FLOAT32 ||
         dt == TF_FLOAT64;
}

/* global_step must be a numeric scalar (or of unknown shape). */
static tf_code check_step(tf__tb *b, const char *what, tf_output step) {
  char buf[96];
  if (step.node == NULL || !is_number(tf__tb_dtype(step))) {
    return tf__tb_fail(b, "%s: global_step must be an int32, int64, float32 "
                       "or float64 scalar, got %s", what,
                       step.node ? tf_dtype_name(tf__tb_dtype(step))
                                 : "nothing");
  }
  const tf_shape *s = tf_node_output_shape(step.node, step.index);
  if (s->rank != TF_UNKNOWN_RANK && s->rank != 0) {
    return tf__tb_fail(b, "%s: global_step must be a scalar, got shape %s",
                       what, tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

/* Starts a schedule: checks, pushes its scope, casts the step to float32
 * into *step. */
static void schedule_begin(tf__tb *b, const char *scope, tf_output *step,
                           double decay_steps) {
  if (check_step(b, scope, *step) != TF_OK) {
    return;
  }
  if (!(decay_steps > 0)) {
    tf__tb_fail(b, "%s: decay_steps must be > 0, got %g", scope, decay_steps);
    return;
  }
  tf_graph_push_scope(b->g, scope);
  *step = tf__tb_cast(b, *step, TF_FLOAT32);
}

static tf_output f32(tf__tb *b, double v) {
  return tf__tb_scalar(b, NULL, TF_FLOAT32, v);
}

/* step / decay_steps, floored when staircase. */
static tf_output progress(tf__tb *b, tf_output step, tf_output ds,
                          bool staircase) {
  return tf__tb_op2(b, staircase ? "FloorDiv" : "Div", step, ds);
}

static tf_code schedule_end(tf__tb *b, tf_output result, tf_output *out) {
  *out = result;
  if (tf__tb_end(b) != TF_OK) {
    *out = (tf_output){NULL, 0};
  }
  return b->st->code;
}

tf_code tf_exponential_decay(tf_graph *g, double learning_rate,
                             tf_output global_step, double decay_steps,
                             double decay_rate, bool staircase,
                             tf_output *out, tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_output step = global_step;
  schedule_begin(&b, "ExponentialDecay", &step, decay_steps);
  tf_output p = progress(&b, step, f32(&b, decay_steps), staircase);
  tf_output r = tf__tb_op2(&b, "Mul", f32(&b, learning_rate),
                           tf__tb_op2(&b, "Pow", f32(&b, decay_rate), p));
  return schedule_end(&b, r, out);
}

tf_code tf_inverse_time_decay(tf_graph *g, double learning_rate,
                              tf_output global_step, double decay_steps,
                              double decay_rate, bool staircase,
                              tf_output *out, tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_output step = global_step;
  schedule_begin(&b, "InverseTimeDecay", &step, decay_steps);
  tf_output p = progress(&b, step, f32(&b, decay_steps), staircase);
  tf_output den = tf__tb_op2(&b, "Add", f32(&b, 1),
                             tf__tb_op2(&b, "Mul", f32(&b, decay_rate), p));
  tf_output r = tf__tb_op2(&b, "Div", f32(&b, learning_rate), den);
  return schedule_end(&b, r, out);
}

tf_code tf_polynomial_decay(tf_graph *g, double learning_rate,
                            tf_output global_step, double decay_steps,
                            double end_learning_rate, double power, bool cycle,
                            tf_output *out, tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_output step = global_step;
  schedule_begin(&b, "PolynomialDecay", &step, decay_steps);
  tf_output ds = f32(&b, decay_steps);
  if (cycle) {
    /* ceil(step / ds), at least 1 (TF: 1 at step 0) */
    tf_output neg = tf__tb_op2(&b, "FloorDiv", tf__tb_op1(&b, "Neg", step), ds);
    tf_output mult = tf__tb_op2(&b, "Maximum", tf__tb_op1(&b, "Neg", neg),
                                f32(&b, 1));
    ds = tf__tb_op2(&b, "Mul", ds, mult);
  } else {
    step = tf__tb_op2(&b, "Minimum", step, ds);
  }
  tf_output p = tf__tb_op2(&b, "Div", step, ds);
  tf_output decay = tf__tb_op2(&b, "Pow", tf__tb_op2(&b, "Sub", f32(&b, 1), p),
                               f32(&b, power));
  tf_output r = tf__tb_op2(
      &b, "Add",
      tf__tb_op2(&b, "Mul", f32(&b, learning_rate - end_learning_rate), decay),
      f32(&b, end_learning_rate));
  return schedule_end(&b, r, out);
}

/* Integer x needs integral boundaries. */
static tf_code check_boundaries(tf__tb *b, tf_dtype dt, const double *bd,
                                int n, const double *values) {
  if (n < 0 || (n > 0 && bd == NULL) || values == NULL) {
    return tf__tb_fail(b, "PiecewiseConstant: needs n_boundaries >= 0 "
                       "boundaries and n_boundaries + 1 values");
  }
  for (int i = 0; i < n; i++) {
    if ((dt == TF_INT32 || dt == TF_INT64) && floor(bd[i]) != bd[i]) {
      return tf__tb_fail(b, "PiecewiseConstant: boundary %d (%g) is not an "
                         "integer but x is %s", i, bd[i], tf_dtype_name(dt));
    }
    if (i > 0 && !(bd[i] > bd[i - 1])) {
      return tf__tb_fail(b, "PiecewiseConstant: boundaries must increase, "
                         "got %g after %g", bd[i], bd[i - 1]);
    }
  }
  return TF_OK;
}

tf_code tf_piecewise_constant(tf_graph *g, tf_output x,
                              const double *boundaries, int n_boundaries,
                              const double *values, tf_output *out,
                              tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_dtype dt = tf__tb_dtype(x);
  tf_output acc = {NULL, 0};
  if (check_step(&b, "PiecewiseConstant", x) == TF_OK &&
      check_boundaries(&b, dt, boundaries, n_boundaries, values) == TF_OK) {
    tf_graph_push_scope(g, "PiecewiseConstant");
    acc = f32(&b, values[n_boundaries]);
    for (int i = n_boundaries - 1; i >= 0; i--) {
      tf_output le = tf__tb_op2(&b, "LessEqual", x,
                                tf__tb_scalar(&b, NULL, dt, boundaries[i]));
      tf_output in[] = {le, f32(&b, values[i]), acc};
      acc = tf__tb_op(&b, "Select", NULL, in, 3, NULL, 0);
    }
  }
  return schedule_end(&b, acc, out);
}

/* ---- clip_by_global_norm ------------------------------------------------ */

/* All present gradients share one float dtype, returned in *dt. */
static tf_code check_grads(tf__tb *b, const tf_grad *grads, int n,
                           double clip_norm, tf_dtype *dt) {
  *dt = TF_DTYPE_INVALID;
  if (!(clip_norm > 0)) {
    return tf__tb_fail(b, "clip_by_global_norm: clip_norm must be > 0, got "
                       "%g", clip_norm);
  }
  for (int i = 0; i < n; i++) {
    tf_dtype d = tf__tb_dtype(grads[i].values);
    if (d == TF_DTYPE_INVALID) {
      continue;
    }
    if ((d != TF_FLOAT32 && d != TF_FLOAT64) ||
        (*dt != TF_DTYPE_INVALID && d != *dt)) {
      return tf__tb_fail(b, "clip_by_global_norm: gradient %d is %s; all "
                         "must be float32 or all float64", i,
                         tf_dtype_name(d));
    }
    *dt = d;
  }
  if (*dt == TF_DTYPE_INVALID) {
    return tf__tb_fail(b, "clip_by_global_norm: no gradient given");
  }
  return TF_OK;
}

/* sqrt(2 * sum_i L2Loss(values_i)), as TF's global_norm. */
static tf_output global_norm(tf__tb *b, const tf_grad *grads, int n,
                             tf_dtype dt) {
  tf_output *half = tf__xcalloc((size_t)n, sizeof *half);
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (grads[i].values.node != NULL) {
      half[k++] = tf__tb_op1(b, "L2Loss", grads[i].values);
    }
  }
  tf_output sum = half[0];
  if (k > 1 && !tf__tb_failed(b)) {
    tf_node *nd = NULL;
    tf_node_builder *nb = tf_node_begin(b->g, "AddN", NULL);
    tf_node_add_input_list(nb, half, k);
    nd = tf_node_finish(nb, b->st);
    sum = (tf_output){nd, 0};
  }
  free(half);
  tf_output two = tf__tb_scalar(b, NULL, dt, 2);
  tf_output in = tf__tb_op2(b, "Mul", sum, two);
  return tf__tb_op(b, "Sqrt", "global_norm", &in, 1, NULL, 0);
}

tf_code tf_clip_by_global_norm(tf_graph *g, const tf_grad *grads, int n,
                               double clip_norm, tf_grad *out,
                               tf_output *norm_out, tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_dtype dt;
  tf_output norm = {NULL, 0};
  if (check_grads(&b, grads, n, clip_norm, &dt) == TF_OK) {
    tf_graph_push_scope(g, "clip_by_global_norm");
    norm = global_norm(&b, grads, n, dt);
    /* clip * min(1 / norm, 1 / clip) + (norm - norm): NaN for inf norm */
    tf_output inv = tf__tb_op2(&b, "Div", tf__tb_scalar(&b, NULL, dt, 1), norm);
    tf_output m = tf__tb_op2(&b, "Minimum", inv,
                             tf__tb_scalar(&b, NULL, dt, 1 / clip_norm));
    tf_output scale = tf__tb_op2(
        &b, "Add", tf__tb_op2(&b, "Mul", tf__tb_scalar(&b, NULL, dt, clip_norm),
                              m),
        tf__tb_op2(&b, "Sub", norm, norm));
    for (int i = 0; i < n; i++) {
      out[i] = grads[i];
      if (grads[i].values.node != NULL) {
        out[i].values = tf__tb_op2(&b, "Mul", grads[i].values, scale);
      }
    }
  }
  if (tf__tb_end(&b) != TF_OK) {
    for (int i = 0; i < n; i++) {
      out[i] = (tf_grad){{0}};
    }
    norm = (tf_output){NULL, 0};
  }
  *norm_out = norm;
  return st->code;
}
