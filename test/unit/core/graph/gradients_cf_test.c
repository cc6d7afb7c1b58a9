/* gradients_cf_test.c: tf_gradients through tf_cond and tf_while_loop.
 * Each model is a scalar loss of x and w (float64 [3] placeholders, seeded
 * random values) built once with control flow and once unrolled by hand
 * (straight-line, the branch and trip counts decided by a plain C
 * recomputation of the forward values). Checks: the loss matches the C
 * recomputation (1e-12); the gradients match float64 central differences
 * (h = 1e-5, |fd - g| <= 1e-6 (1 + |g|)); and the gradients of the
 * control-flow graph equal those of the unrolled one within 1e-10. Models:
 * a cond (both branches), a while loop with a data-dependent trip count
 * (also zero) and an invariant, an int counter loop, coupled variables, a Gather (a
 * sparse gradient) of an invariant in a loop, nested loops, a cond inside
 * a loop, a loop inside a cond, a loop inside a cond inside a loop, and
 * TensorArrays through a loop (unstack before, read and write inside,
 * stack after: the gradient loop writes the input array's gradient array,
 * which the gradient of the unstack gathers). parallel_iterations 8 gives the same gradients as 1 (also for a loop of
 * independent iterations, whose later values are ready first); a value
 * inside a loop as ys is UNIMPLEMENTED. Also the stack ops: LIFO order,
 * an empty pop, max_size, a closed stack and a forged handle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/control_flow.h"
#include "tf/gradients.h"
#include "tf/session.h"
#include "tf/tensor_array.h"

static tf_status st;

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

/* ---- graph helpers -------------------------------------------------------- */

static tf_output op1(tf_graph *g, const char *op, tf_output x) {
  return (tf_output){tt_node(g, op, NULL, &x, 1, NULL, 0), 0};
}

static tf_output op2(tf_graph *g, const char *op, tf_output x, tf_output y) {
  return (tf_output){tt_node(g, op, NULL, (tf_output[]){x, y}, 2, NULL, 0), 0};
}

static tf_output f64c(tf_graph *g, double v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_scalar_f64(v)), 0};
}

static tf_output i32c(tf_graph *g, int32_t v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_scalar_i32(v)), 0};
}

static tf_output sum_all(tf_graph *g, tf_output x) {
  return op2(g, "Sum", x, i32c(g, 0));
}

/* ---- the models ------------------------------------------------------------
 * Each builds loss(x, w); unrolled: straight-line, using xv and wv (the
 * values fed) to decide branches and trip counts. C mirrors compute the
 * loss. */

typedef struct model {
  const char *name;
  tf_output (*build)(tf_graph *g, tf_output x, tf_output w, const double *xv,
                     const double *wv, bool unrolled, int par);
  double (*loss)(const double *xv, const double *wv);
} model;

static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double sum3(const double *v) { return v[0] + v[1] + v[2]; }
static double sq3(const double *v) {
  return v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
}

/* A: while (sum(x) < 10) x = 1.5 x + w; loss = sum(x^2). */
static tf_output a_step(tf_graph *g, tf_output x, tf_output w) {
  return op2(g, "Add", op2(g, "Mul", x, f64c(g, 1.5)), w);
}
static tf_code a_cond(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *pred,
                      void *arg, tf_status *s) {
  *pred = op2(g, "Less", sum_all(g, v[0]), f64c(g, 10));
  return TF_OK;
}
static tf_code a_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  next[0] = a_step(g, v[0], inv[0]);
  return TF_OK;
}
static int a_trips(const double *xv, const double *wv, double *out) {
  double x[3] = {xv[0], xv[1], xv[2]};
  int n = 0;
  while (sum3(x) < 10) {
    for (int i = 0; i < 3; i++) {
      x[i] = 1.5 * x[i] + wv[i];
    }
    n++;
  }
  memcpy(out, x, sizeof x);
  return n;
}
static tf_output a_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output out;
  if (unrolled) {
    double tmp[3];
    int n = a_trips(xv, wv, tmp);
    out = x;
    for (int k = 0; k < n; k++) {
      out = a_step(g, out, w);
    }
  } else {
    tf_code rc = tf_while_loop(g, "a", &x, 1, &w, 1, a_cond, a_body, NULL, par,
                               &out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
  }
  return sum_all(g, op2(g, "Mul", out, out));
}
static double a_loss(const double *xv, const double *wv) {
  double x[3];
  a_trips(xv, wv, x);
  return sq3(x);
}

/* B: for i in 0..5: v = tanh(v * w) + v; loss = sum(v^2) (an int32
 * counter variable, w an invariant). */
static tf_output b_step(tf_graph *g, tf_output v, tf_output w) {
  return op2(g, "Add", op1(g, "Tanh", op2(g, "Mul", v, w)), v);
}
static tf_code lt_n(tf_graph *g, const tf_output *v, int n,
                    const tf_output *inv, int n_inv, tf_output *pred,
                    void *arg, tf_status *s) {
  *pred = op2(g, "Less", v[0], i32c(g, *(int *)arg));
  return TF_OK;
}
static tf_code b_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = b_step(g, v[1], inv[0]);
  return TF_OK;
}
static int b_n = 5;
static tf_output b_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output v = x;
  if (unrolled) {
    for (int k = 0; k < b_n; k++) {
      v = b_step(g, v, w);
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "b", in, 2, &w, 1, lt_n, b_body, &b_n, par,
                               out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    v = out[1];
  }
  return sum_all(g, op2(g, "Mul", v, v));
}
static void b_run(double *v, const double *wv, int n) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < 3; i++) {
      v[i] = tanh(v[i] * wv[i]) + v[i];
    }
  }
}
static double b_loss(const double *xv, const double *wv) {
  double v[3] = {xv[0], xv[1], xv[2]};
  b_run(v, wv, b_n);
  return sq3(v);
}

/* C: nested: 3 times { u = v; 2 times u = sigm(u) * w; v = u + 0.1 v }. */
static int c_inner_n = 2, c_outer_n = 3;
static tf_output c_inner_step(tf_graph *g, tf_output u, tf_output w) {
  return op2(g, "Mul", op1(g, "Sigmoid", u), w);
}
static tf_code c_inner_body(tf_graph *g, const tf_output *v, int n,
                            const tf_output *inv, int n_inv, tf_output *next,
                            void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = c_inner_step(g, v[1], inv[0]);
  return TF_OK;
}
static tf_code c_outer_body(tf_graph *g, const tf_output *v, int n,
                            const tf_output *inv, int n_inv, tf_output *next,
                            void *arg, tf_status *s) {
  tf_output in[2] = {i32c(g, 0), v[1]}, out[2];
  tf_code rc = tf_while_loop(g, "inner", in, 2, inv, 1, lt_n, c_inner_body,
                             &c_inner_n, *(int *)arg, out, s);
  if (rc != TF_OK) {
    return rc;
  }
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = op2(g, "Add", out[1], op2(g, "Mul", v[1], f64c(g, 0.1)));
  return TF_OK;
}
static tf_code c_outer_cond(tf_graph *g, const tf_output *v, int n,
                            const tf_output *inv, int n_inv, tf_output *pred,
                            void *arg, tf_status *s) {
  return lt_n(g, v, n, inv, n_inv, pred, &c_outer_n, s);
}
static tf_output c_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output v = x;
  if (unrolled) {
    for (int k = 0; k < c_outer_n; k++) {
      tf_output u = v;
      for (int j = 0; j < c_inner_n; j++) {
        u = c_inner_step(g, u, w);
      }
      v = op2(g, "Add", u, op2(g, "Mul", v, f64c(g, 0.1)));
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "c", in, 2, &w, 1, c_outer_cond,
                               c_outer_body, &par, par, out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    v = out[1];
  }
  return sum_all(g, op2(g, "Mul", v, v));
}
static double c_loss(const double *xv, const double *wv) {
  double v[3] = {xv[0], xv[1], xv[2]};
  for (int k = 0; k < c_outer_n; k++) {
    double u[3] = {v[0], v[1], v[2]};
    for (int j = 0; j < c_inner_n; j++) {
      for (int i = 0; i < 3; i++) {
        u[i] = sigm(u[i]) * wv[i];
      }
    }
    for (int i = 0; i < 3; i++) {
      v[i] = u[i] + 0.1 * v[i];
    }
  }
  return sq3(v);
}

/* Branches on (x, w): true x * x * w, false sigm(x) + w. */
static tf_output t_branch(tf_graph *g, tf_output x, tf_output w) {
  return op2(g, "Mul", op2(g, "Mul", x, x), w);
}
static tf_output f_branch(tf_graph *g, tf_output x, tf_output w) {
  return op2(g, "Add", op1(g, "Sigmoid", x), w);
}
static tf_code t_fn(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                    int n_out, void *arg, tf_status *s) {
  out[0] = t_branch(g, in[0], in[1]);
  return TF_OK;
}
static tf_code f_fn(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                    int n_out, void *arg, tf_status *s) {
  out[0] = f_branch(g, in[0], in[1]);
  return TF_OK;
}
static void t_c(double *x, const double *w) {
  for (int i = 0; i < 3; i++) {
    x[i] = x[i] * x[i] * w[i];
  }
}
static void f_c(double *x, const double *w) {
  for (int i = 0; i < 3; i++) {
    x[i] = sigm(x[i]) + w[i];
  }
}
#define F_THR 1.5

/* F: cond(sum(x) > 1.5, x x w, sigm(x) + w); loss = sum(out^2). */
static tf_output f_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output out;
  if (unrolled) {
    out = sum3(xv) > F_THR ? t_branch(g, x, w) : f_branch(g, x, w);
  } else {
    tf_output pred = op2(g, "Greater", sum_all(g, x), f64c(g, F_THR));
    tf_code rc = tf_cond(g, "f", pred, (tf_output[]){x, w}, 2, t_fn, f_fn,
                         NULL, &out, 1, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
  }
  return sum_all(g, op2(g, "Mul", out, out));
}
static double f_loss(const double *xv, const double *wv) {
  double x[3] = {xv[0], xv[1], xv[2]};
  (sum3(xv) > F_THR ? t_c : f_c)(x, wv);
  return sq3(x);
}

/* D: 4 times: v = cond(sum(v) < 2, v w + v, sigm(v) w) -- a cond inside a
 * loop, its predicate data-dependent. */
static int d_n = 4;
static int d_taken[2];
static tf_output dt_branch(tf_graph *g, tf_output v, tf_output w) {
  return op2(g, "Add", op2(g, "Mul", v, w), v);
}
static tf_output df_branch(tf_graph *g, tf_output v, tf_output w) {
  return op2(g, "Mul", op1(g, "Sigmoid", v), w);
}
static tf_code dt_fn(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = dt_branch(g, in[0], in[1]);
  return TF_OK;
}
static tf_code df_fn(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = df_branch(g, in[0], in[1]);
  return TF_OK;
}
static tf_code d_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  tf_output pred = op2(g, "Less", sum_all(g, v[1]), f64c(g, 2));
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  return tf_cond(g, "dc", pred, (tf_output[]){v[1], inv[0]}, 2, dt_fn, df_fn,
                 NULL, &next[1], 1, s);
}
/* The C mirror; also records which branches ran. */
static void d_run(double *v, const double *w) {
  d_taken[0] = d_taken[1] = 0;
  for (int k = 0; k < d_n; k++) {
    bool t = sum3(v) < 2;
    d_taken[t]++;
    for (int i = 0; i < 3; i++) {
      v[i] = t ? v[i] * w[i] + v[i] : sigm(v[i]) * w[i];
    }
  }
}
static tf_output d_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output v = x;
  if (unrolled) {
    double c[3] = {xv[0], xv[1], xv[2]};
    for (int k = 0; k < d_n; k++) {
      bool t = sum3(c) < 2;
      v = t ? dt_branch(g, v, w) : df_branch(g, v, w);
      for (int i = 0; i < 3; i++) {
        c[i] = t ? c[i] * wv[i] + c[i] : sigm(c[i]) * wv[i];
      }
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "d", in, 2, &w, 1, lt_n, d_body, &d_n, par,
                               out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    v = out[1];
  }
  return sum_all(g, op2(g, "Mul", v, v));
}
static double d_loss(const double *xv, const double *wv) {
  double v[3] = {xv[0], xv[1], xv[2]};
  d_run(v, wv);
  return sq3(v);
}

/* E: cond(sum(x) > 2, loop A on (x, w), x w w): a loop inside a cond. */
#define E_THR 2.0
static tf_code et_fn(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  return tf_while_loop(g, "ea", in, 1, &in[1], 1, a_cond, a_body, NULL,
                       *(int *)arg, out, s);
}
static tf_code ef_fn(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  out[0] = op2(g, "Mul", op2(g, "Mul", in[0], in[1]), in[1]);
  return TF_OK;
}
static tf_output e_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output out = x;
  if (unrolled && sum3(xv) > E_THR) {
    double tmp[3];
    int n = a_trips(xv, wv, tmp);
    for (int k = 0; k < n; k++) {
      out = a_step(g, out, w);
    }
  } else if (unrolled) {
    out = op2(g, "Mul", op2(g, "Mul", x, w), w);
  } else {
    tf_output pred = op2(g, "Greater", sum_all(g, x), f64c(g, E_THR));
    tf_code rc = tf_cond(g, "e", pred, (tf_output[]){x, w}, 2, et_fn, ef_fn,
                         &par, &out, 1, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
  }
  return sum_all(g, op2(g, "Mul", out, out));
}
static double e_loss(const double *xv, const double *wv) {
  double x[3];
  if (sum3(xv) > E_THR) {
    a_trips(xv, wv, x);
  } else {
    for (int i = 0; i < 3; i++) {
      x[i] = xv[i] * wv[i] * wv[i];
    }
  }
  return sq3(x);
}

/* G: for i in 0..4: v = cond(i < 2, inner loop of C on (v, w), v w + v):
 * a loop inside a cond inside a loop. */
static int g_n = 4;
static int g_taken[2];
static tf_code gt_fn(tf_graph *g, const tf_output *in, int n_in,
                     tf_output *out, int n_out, void *arg, tf_status *s) {
  tf_output vin[2] = {i32c(g, 0), in[0]}, vout[2];
  tf_code rc = tf_while_loop(g, "gi", vin, 2, &in[1], 1, lt_n, c_inner_body,
                             &c_inner_n, *(int *)arg, vout, s);
  out[0] = vout[1];
  return rc;
}
static tf_code g_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  tf_output pred = op2(g, "Less", v[0], i32c(g, 2));
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  return tf_cond(g, "gc", pred, (tf_output[]){v[1], inv[0]}, 2, gt_fn, dt_fn,
                 arg, &next[1], 1, s);
}
/* One step of the C mirror; returns whether the true branch ran. */
static bool g_step_c(double *v, const double *w, int k) {
  bool t = k < 2;
  g_taken[t]++;
  for (int i = 0; i < 3; i++) {
    if (t) {
      for (int j = 0; j < c_inner_n; j++) {
        v[i] = sigm(v[i]) * w[i];
      }
    } else {
      v[i] = v[i] * w[i] + v[i];
    }
  }
  return t;
}
static tf_output g_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output v = x;
  if (unrolled) {
    double c[3] = {xv[0], xv[1], xv[2]};
    for (int k = 0; k < g_n; k++) {
      if (g_step_c(c, wv, k)) {
        for (int j = 0; j < c_inner_n; j++) {
          v = c_inner_step(g, v, w);
        }
      } else {
        v = dt_branch(g, v, w);
      }
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "g", in, 2, &w, 1, lt_n, g_body, &g_n, par,
                               out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    v = out[1];
  }
  return sum_all(g, op2(g, "Mul", v, v));
}
static double g_loss(const double *xv, const double *wv) {
  double v[3] = {xv[0], xv[1], xv[2]};
  g_taken[0] = g_taken[1] = 0;
  for (int k = 0; k < g_n; k++) {
    g_step_c(v, wv, k);
  }
  return sq3(v);
}

/* H: two coupled float variables (a = x, b = w to start), 3 times:
 * a, b = a b, tanh(b + a w) with w also an invariant; loss = sum(a b) +
 * sum(a): each Exit has two consumers. */
static int h_n = 3;
static void h_step(tf_graph *g, tf_output *a, tf_output *b, tf_output w) {
  tf_output na = op2(g, "Mul", *a, *b);
  *b = op1(g, "Tanh", op2(g, "Add", *b, op2(g, "Mul", *a, w)));
  *a = na;
}
static tf_code h_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  tf_output a = v[1], b = v[2];
  h_step(g, &a, &b, inv[0]);
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = a;
  next[2] = b;
  return TF_OK;
}
static tf_output h_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output a = x, b = w;
  if (unrolled) {
    for (int k = 0; k < h_n; k++) {
      h_step(g, &a, &b, w);
    }
  } else {
    tf_output in[3] = {i32c(g, 0), x, w}, out[3];
    tf_code rc = tf_while_loop(g, "h", in, 3, &w, 1, lt_n, h_body, &h_n, par,
                               out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    a = out[1];
    b = out[2];
  }
  return op2(g, "Add", sum_all(g, op2(g, "Mul", a, b)), sum_all(g, a));
}
static double h_loss(const double *xv, const double *wv) {
  double l = 0;
  for (int i = 0; i < 3; i++) {
    double a = xv[i], b = wv[i];
    for (int k = 0; k < h_n; k++) {
      double na = a * b;
      b = tanh(b + a * wv[i]);
      a = na;
    }
    l += a * b + a;
  }
  return l;
}

/* I: independent iterations: for i in 0..30: acc += tanh(x w (i + 1))^2
 * (acc starts at x): with parallel_iterations > 1 later iterations'
 * values are ready before earlier ones. */
static int i_n = 30;
static tf_output i_term(tf_graph *g, tf_output x, tf_output w, tf_output k) {
  tf_output t = op1(g, "Tanh", op2(g, "Mul", op2(g, "Mul", x, w), k));
  return op2(g, "Mul", t, t);
}
static tf_code i_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  tf_node_builder *b = tf_node_begin(g, "Cast", NULL);
  tf_node_add_input(b, next[0]);
  tf_node_set_attr(b, "DstT", tf_attr_type_v(TF_FLOAT64));
  tf_output k = {tf_node_finish(b, s), 0};
  next[1] = op2(g, "Add", v[1], i_term(g, inv[0], inv[1], k));
  return s->code;
}
static tf_output i_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output acc = x;
  if (unrolled) {
    for (int k = 0; k < i_n; k++) {
      acc = op2(g, "Add", acc, i_term(g, x, w, f64c(g, k + 1)));
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "i", in, 2, (tf_output[]){x, w}, 2, lt_n,
                               i_body, &i_n, par, out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    acc = out[1];
  }
  return sum_all(g, op2(g, "Mul", acc, acc));
}
static double i_loss(const double *xv, const double *wv) {
  double l = 0;
  for (int i = 0; i < 3; i++) {
    double acc = xv[i];
    for (int k = 0; k < i_n; k++) {
      double t = tanh(xv[i] * wv[i] * (k + 1));
      acc += t * t;
    }
    l += acc * acc;
  }
  return l;
}

/* J: 4 times: v = v * gather(w, [2, 0, 1]) + v: Gather's row gradient
 * (sparse) reaches the invariant inside the loop and is densified. */
static int j_n = 4;
static tf_output j_step(tf_graph *g, tf_output v, tf_output w) {
  int64_t perm[3] = {2, 0, 1};
  tf_output idx = {tt_const(g, NULL, tt_tensor_i(TF_INT32, tf_shape_of(1, 3),
                                                perm)), 0};
  return op2(g, "Add", op2(g, "Mul", v, op2(g, "Gather", w, idx)), v);
}
static tf_code j_body(tf_graph *g, const tf_output *v, int n,
                      const tf_output *inv, int n_inv, tf_output *next,
                      void *arg, tf_status *s) {
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = j_step(g, v[1], inv[0]);
  return TF_OK;
}
static tf_output j_build(tf_graph *g, tf_output x, tf_output w,
                         const double *xv, const double *wv, bool unrolled,
                         int par) {
  tf_output v = x;
  if (unrolled) {
    for (int k = 0; k < j_n; k++) {
      v = j_step(g, v, w);
    }
  } else {
    tf_output in[2] = {i32c(g, 0), x}, out[2];
    tf_code rc = tf_while_loop(g, "j", in, 2, &w, 1, lt_n, j_body, &j_n, par,
                               out, &st);
    ck_assert_msg(rc == TF_OK, "%s", st.msg);
    v = out[1];
  }
  return sum_all(g, op2(g, "Mul", v, v));
}
static double j_loss(const double *xv, const double *wv) {
  double v[3] = {xv[0], xv[1], xv[2]}, gw[3] = {wv[2], wv[0], wv[1]};
  for (int k = 0; k < j_n; k++) {
    for (int i = 0; i < 3; i++) {
      v[i] = v[i] * gw[i] + v[i];
    }
  }
  return sq3(v);
}

/* T: TensorArrays through a loop. x is unstacked into an array before the
 * loop; for t in 0..3: y = tanh(read(x, t) * w[t] + h), written to an
 * output array at t, h = y; after: loss = sum(stack(out)^2) + h. The
 * gradient loop reads the output array's gradient and writes the input
 * array's (TensorArrayGradV3 inside it). */
static tf_output t_elem(tf_graph *g, tf_output r, tf_output w, tf_output t, tf_output h) {
  return op1(g, "Tanh", op2(g, "Add", op2(g, "Mul", r, op2(g, "Gather", w, t)), h));
}
static tf_code t_body(tf_graph *g, const tf_output *v, int n, const tf_output *inv,
                      int n_inv, tf_output *next, void *arg, tf_status *s) {
  tf_tensor_array in = {inv[1], inv[2], TF_FLOAT64}, out = {inv[3], v[2], TF_FLOAT64};
  tf_output r;
  ck_assert_msg(tf_tensor_array_read(g, &in, v[0], &r, s) == TF_OK, "%s", s->msg);
  tf_output y = t_elem(g, r, inv[0], v[0], v[1]);
  ck_assert_msg(tf_tensor_array_write(g, &out, v[0], y, s) == TF_OK, "%s", s->msg);
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = y;
  next[2] = out.flow;
  return TF_OK;
}
static int t_n = 3;
static tf_output t_build(tf_graph *g, tf_output x, tf_output w, const double *xv,
                         const double *wv, bool unrolled, int par) {
  tf_output h = f64c(g, 0), sq = f64c(g, 0);
  if (unrolled) {
    for (int k = 0; k < t_n; k++) {
      tf_output y = t_elem(g, op2(g, "Gather", x, i32c(g, k)), w, i32c(g, k), h);
      sq = op2(g, "Add", sq, op2(g, "Mul", y, y));
      h = y;
    }
    return op2(g, "Add", sq, h);
  }
  tf_shape es = tf_shape_scalar();
  tf_tensor_array_options o = {.element_shape = &es};
  tf_tensor_array in, out;
  ck_assert_msg(tf_tensor_array_new(g, TF_FLOAT64, i32c(g, t_n), &o, &in, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_msg(tf_tensor_array_new(g, TF_FLOAT64, i32c(g, t_n), &o, &out, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_msg(tf_tensor_array_unstack(g, &in, x, &st) == TF_OK, "%s", st.msg);
  tf_output vars[3] = {i32c(g, 0), h, out.flow}, inv[4] = {w, in.handle, in.flow, out.handle};
  tf_output res[3];
  tf_code rc = tf_while_loop(g, "t", vars, 3, inv, 4, lt_n, t_body, &t_n, par, res, &st);
  ck_assert_msg(rc == TF_OK, "%s", st.msg);
  out.flow = res[2];
  tf_output stacked;
  ck_assert_msg(tf_tensor_array_stack(g, &out, &stacked, &st) == TF_OK, "%s", st.msg);
  return op2(g, "Add", sum_all(g, op2(g, "Mul", stacked, stacked)), res[1]);
}
static double t_loss(const double *xv, const double *wv) {
  double h = 0, l = 0;
  for (int k = 0; k < t_n; k++) {
    h = tanh(xv[k] * wv[k] + h);
    l += h * h;
  }
  return l + h;
}

/* ---- the harness ------------------------------------------------------------ */

typedef struct built {
  tf_graph *g;
  tf_session *s;
  tf_output loss, d[2];
} built;

static void build_model(const model *m, const double *xv, const double *wv,
                        bool unrolled, int par, built *b) {
  b->g = tf_graph_new();
  tf_output x = {tt_placeholder(b->g, "x", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output w = {tt_placeholder(b->g, "w", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  b->loss = m->build(b->g, x, w, xv, wv, unrolled, par);
  tf_code rc = tf_gradients(b->g, &b->loss, 1, (tf_output[]){x, w}, 2, NULL,
                            b->d, &st);
  ck_assert_msg(rc == TF_OK, "%s: tf_gradients: %s", m->name, st.msg);
  ck_assert_msg((b->d[0].node != NULL && b->d[1].node != NULL) || unrolled,
                "%s: a gradient is missing", m->name);
  for (int i = 0; i < 2; i++) { /* unrolled without a path: zero */
    b->d[i] = b->d[i].node ? b->d[i] : op1(b->g, "ZerosLike", i ? w : x);
  }
  tf_session_options o = {.inter_op_threads = 4};
  b->s = tf_session_new(b->g, &o, &st);
  ck_assert_msg(b->s != NULL, "%s", st.msg);
}

static void built_free(built *b) {
  tf_session_free(b->s);
  tf_graph_free(b->g);
}

/* loss (and, when dx is not NULL, both gradients) at (xv, wv). */
static void eval(const model *m, built *b, const double *xv, const double *wv,
                 double *loss, double *dx, double *dw) {
  const char *feeds[2] = {"x", "w"};
  tf_tensor *fv[2] = {tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), xv),
                      tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), wv)};
  char names[3][256];
  const char *fetch[3];
  tf_output outs[3] = {b->loss, b->d[0], b->d[1]};
  int n = dx ? 3 : 1;
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "%s:%d", tf_node_name(outs[i].node),
             outs[i].index);
    fetch[i] = names[i];
  }
  tf_tensor *res[3] = {NULL};
  tf_run_options o = {.timeout_ms = 30000};
  tf_code rc = tf_session_run(b->s, &o, feeds, fv, 2, fetch, res, n, NULL, 0,
                              NULL, &st);
  ck_assert_msg(rc == TF_OK, "%s: run: %s", m->name, st.msg);
  *loss = ((double *)res[0]->data)[0];
  for (int i = 0; i < 3 && dx; i++) {
    dx[i] = ((double *)res[1]->data)[i];
    dw[i] = ((double *)res[2]->data)[i];
  }
  tt_free(res, n);
  tt_free(fv, 2);
}

static void assert_near(const char *what, const char *m, int i, double got,
                        double want, double tol) {
  ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)),
                "%s: %s[%d] = %.15g, want %.15g (tol %g)", m, what, i, got,
                want, tol);
}

/* Checks m at (xv, wv) with parallel_iterations par; returns its
 * gradients in g[0..6). */
static void check_model(const model *m, const double *xv, const double *wv,
                        int par, double *g) {
  built b, u;
  double loss, uloss, ug[6];
  build_model(m, xv, wv, false, par, &b);
  eval(m, &b, xv, wv, &loss, g, g + 3);
  assert_near("loss", m->name, 0, loss, m->loss(xv, wv), 1e-12);
  double h = 1e-5;
  for (int k = 0; k < 6; k++) {
    double p[6], lp, lm;
    memcpy(p, xv, 3 * sizeof *p);
    memcpy(p + 3, wv, 3 * sizeof *p);
    p[k] += h;
    eval(m, &b, p, p + 3, &lp, NULL, NULL);
    p[k] -= 2 * h;
    eval(m, &b, p, p + 3, &lm, NULL, NULL);
    assert_near("finite difference vs gradient", m->name, k, g[k],
                (lp - lm) / (2 * h), 1e-6);
  }
  build_model(m, xv, wv, true, par, &u);
  eval(m, &u, xv, wv, &uloss, ug, ug + 3);
  assert_near("unrolled loss", m->name, 0, uloss, loss, 1e-12);
  for (int k = 0; k < 6; k++) {
    assert_near("gradient vs unrolled", m->name, k, g[k], ug[k], 1e-10);
  }
  built_free(&b);
  built_free(&u);
}

static void rand3(double *v, double lo, double hi) {
  for (int i = 0; i < 3; i++) {
    v[i] = tt_rand_uniform(lo, hi);
  }
}

static const model MA = {"while(sum(x) < 10)", a_build, a_loss};
static const model MB = {"counter loop with invariant", b_build, b_loss};
static const model MC = {"nested while", c_build, c_loss};
static const model MD = {"cond inside while", d_build, d_loss};
static const model ME = {"while inside cond", e_build, e_loss};
static const model MF = {"cond", f_build, f_loss};
static const model MH = {"coupled loop variables", h_build, h_loss};
static const model MI = {"independent iterations", i_build, i_loss};
static const model MJ = {"Gather of an invariant in a loop", j_build, j_loss};
static const model MG = {"while inside cond inside while", g_build, g_loss};
static const model MT = {"TensorArray read/write loop", t_build, t_loss};

/* ---- gradient tests ------------------------------------------------------ */

START_TEST(test_cond_both_branches) {
  double x[3], w[3], g[6];
  for (int rep = 0; rep < 2; rep++) {
    rand3(x, 0.1, 0.4); /* sum < 1.5: the false branch */
    rand3(w, 0.5, 1.5);
    check_model(&MF, x, w, 10, g);
    rand3(x, 0.6, 1.0); /* the true branch */
    check_model(&MF, x, w, 10, g);
  }
}
END_TEST

START_TEST(test_while_data_dependent) {
  double x[3], w[3], g[6], tmp[3];
  int trips[4];
  for (int rep = 0; rep < 4; rep++) {
    /* sums <= 0.6, ~2.4, >= 4.5: >= 4 vs 2 trips; >= 12: none */
    static const double lo[4] = {0.05, 0.6, 1.5, 4}, hi[4] = {0.2, 1.0, 2.0, 5};
    rand3(x, lo[rep], hi[rep]);
    rand3(w, 0.1, 0.5);
    trips[rep] = a_trips(x, w, tmp);
    ck_assert_int_eq(trips[rep] == 0, rep == 3);
    check_model(&MA, x, w, 10, g);
  }
  ck_assert_msg(trips[0] != trips[2], "trip counts %d and %d: the inputs "
                "should give different trip counts", trips[0], trips[2]);
}
END_TEST

START_TEST(test_loop_invariant) {
  double x[3], w[3], g[6];
  rand3(x, -1, 1);
  rand3(w, -1.5, 1.5);
  check_model(&MB, x, w, 10, g);
}
END_TEST

START_TEST(test_coupled_variables) {
  double x[3], w[3], g[6];
  rand3(x, -1, 1);
  rand3(w, -1, 1);
  check_model(&MH, x, w, 10, g);
}
END_TEST

START_TEST(test_sparse_gradient_in_loop) {
  double x[3], w[3], g[6];
  rand3(x, -1, 1);
  rand3(w, -0.8, 0.8);
  check_model(&MJ, x, w, 10, g);
}
END_TEST

START_TEST(test_tensor_array_loop) {
  double x[3], w[3], g[6], g8[6];
  rand3(x, -1, 1);
  rand3(w, -1.5, 1.5);
  check_model(&MT, x, w, 1, g);
  check_model(&MT, x, w, 8, g8);
  for (int k = 0; k < 6; k++) assert_near("parallel_iterations 8 vs 1", MT.name, k, g8[k], g[k], 1e-12);
}
END_TEST

START_TEST(test_nested_while) {
  double x[3], w[3], g[6];
  rand3(x, -1, 1);
  rand3(w, 0.5, 1.5);
  check_model(&MC, x, w, 10, g);
}
END_TEST

START_TEST(test_cond_inside_while) {
  double x[3], w[3], g[6], v[3];
  rand3(x, 0.2, 0.5);
  rand3(w, 0.8, 1.2);
  memcpy(v, x, sizeof v);
  d_run(v, w);
  ck_assert_msg(d_taken[0] > 0 && d_taken[1] > 0, "branches taken: %d false, "
                "%d true; the inputs should take both", d_taken[0], d_taken[1]);
  check_model(&MD, x, w, 10, g);
}
END_TEST

START_TEST(test_while_inside_cond) {
  double x[3], w[3], g[6];
  rand3(w, 0.1, 0.5);
  rand3(x, 0.8, 1.2); /* sum > 2: the loop runs */
  check_model(&ME, x, w, 10, g);
  rand3(x, 0.1, 0.5); /* the other branch; the loop does not run */
  check_model(&ME, x, w, 10, g);
}
END_TEST

START_TEST(test_while_in_cond_in_while) {
  double x[3], w[3], g[6];
  rand3(x, 0.5, 0.8);
  rand3(w, 0.8, 1.2);
  g_loss(x, w);
  ck_assert_msg(g_taken[0] > 0 && g_taken[1] > 0, "branches taken: %d false, "
                "%d true; the inputs should take both", g_taken[0], g_taken[1]);
  check_model(&MG, x, w, 10, g);
}
END_TEST

/* Overlapping iterations push and pop the stacks in iteration order. */
START_TEST(test_parallel_iterations) {
  const model *ms[5] = {&MB, &MC, &MD, &MG, &MI};
  int saved = b_n;
  b_n = 40;
  for (int i = 0; i < 5; i++) {
    double x[3], w[3], g1[6], g8[6];
    rand3(x, 0.02, 0.05);
    rand3(w, 0.8, 1.2);
    check_model(ms[i], x, w, 1, g1);
    check_model(ms[i], x, w, 8, g8);
    for (int k = 0; k < 6; k++) {
      assert_near("parallel_iterations 8 vs 1", ms[i]->name, k, g8[k], g1[k],
                  1e-12);
    }
  }
  b_n = saved;
}
END_TEST

/* A value inside a loop body as ys: UNIMPLEMENTED naming it and the
 * frame, and the graph is left as it was. */
static tf_output inside;
static tf_code keep_body(tf_graph *g, const tf_output *v, int n,
                         const tf_output *inv, int n_inv, tf_output *next,
                         void *arg, tf_status *s) {
  inside = op2(g, "Mul", v[1], inv[0]);
  next[0] = op2(g, "Add", v[0], i32c(g, 1));
  next[1] = inside;
  return TF_OK;
}

START_TEST(test_value_inside_loop) {
  tf_graph *g = tf_graph_new();
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)), 0};
  tf_output in[2] = {i32c(g, 0), x}, out[2], dx;
  ck_assert_msg(tf_while_loop(g, "k", in, 2, &x, 1, lt_n, keep_body, &b_n, 1,
                              out, &st) == TF_OK, "%s", st.msg);
  int before = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_gradients(g, &inside, 1, &x, 1, NULL, &dx, &st),
                   TF_UNIMPLEMENTED);
  ASSERT_HAS(st.msg, "ys[0]");
  ASSERT_HAS(st.msg, tf_node_name(inside.node));
  ASSERT_HAS(st.msg, "inside the while loop frame");
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  /* the loop's output is fine */
  ck_assert_msg(tf_gradients(g, &out[1], 1, &x, 1, NULL, &dx, &st) == TF_OK,
                "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* ---- stack ops ------------------------------------------------------------- */

static tf_node *stack_op(tf_graph *g, const char *op, const tf_output *in,
                         int n, tf_node *after) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  if (strcmp(op, "StackV2") == 0 || strcmp(op, "StackPopV2") == 0) {
    tf_node_set_attr(b, "elem_type", tf_attr_type_v(TF_FLOAT64));
  }
  if (after != NULL) {
    tf_node_add_control_input(b, after);
  }
  tf_node *nd = tf_node_finish(b, &st);
  ck_assert_msg(nd != NULL, "%s: %s", op, st.msg);
  return nd;
}

/* Runs g fetching outs; returns the code (results in res). */
static tf_code run_graph(tf_graph *g, const tf_output *outs, int n,
                         tf_tensor **res) {
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  char names[4][256];
  const char *fetch[4];
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "%s:%d", tf_node_name(outs[i].node),
             outs[i].index);
    fetch[i] = names[i];
  }
  tf_run_options o = {.timeout_ms = 30000};
  tf_code rc = tf_session_run(s, &o, NULL, NULL, 0, fetch, res, n, NULL, 0,
                              NULL, &st);
  tf_session_free(s);
  return rc;
}

/* StackV2(max_size), two pushes (1.5, then 2.5) and n_pops ordered pops. */
static tf_graph *stack_graph(int max_size, int n_pops, tf_output *pops) {
  tf_graph *g = tf_graph_new();
  tf_output h = {stack_op(g, "StackV2", (tf_output[]){i32c(g, max_size)}, 1,
                          NULL), 0};
  tf_node *p1 = stack_op(g, "StackPushV2", (tf_output[]){h, f64c(g, 1.5)}, 2,
                         NULL);
  tf_node *last = stack_op(g, "StackPushV2", (tf_output[]){h, f64c(g, 2.5)},
                           2, p1);
  for (int i = 0; i < n_pops; i++) {
    last = stack_op(g, "StackPopV2", &h, 1, last);
    pops[i] = (tf_output){last, 0};
  }
  return g;
}

START_TEST(test_stack_lifo) {
  tf_output pops[2];
  tf_graph *g = stack_graph(-1, 2, pops);
  for (int run = 0; run < 2; run++) { /* each step has its own stack */
    tf_tensor *res[2];
    ck_assert_msg(run_graph(g, pops, 2, res) == TF_OK, "%s", st.msg);
    ck_assert(((double *)res[0]->data)[0] == 2.5);
    ck_assert(((double *)res[1]->data)[0] == 1.5);
    tt_free(res, 2);
  }
  tf_graph_free(g);
}
END_TEST

START_TEST(test_stack_errors) {
  tf_output pops[3];
  tf_tensor *res[3];
  tf_graph *g = stack_graph(-1, 3, pops);
  ck_assert_int_eq(run_graph(g, &pops[2], 1, res), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "is empty");
  ASSERT_HAS(st.msg, "StackV2");
  tf_graph_free(g);
  g = stack_graph(1, 1, pops); /* max_size 1: the second push fails */
  ck_assert_int_eq(run_graph(g, pops, 1, res), TF_RESOURCE_EXHAUSTED);
  ASSERT_HAS(st.msg, "is full");
  ASSERT_HAS(st.msg, "max_size of 1");
  tf_graph_free(g);
  /* a closed stack; a handle that names no stack */
  g = tf_graph_new();
  tf_output h = {stack_op(g, "StackV2", (tf_output[]){i32c(g, 4)}, 1, NULL), 0};
  tf_node *cl = stack_op(g, "StackCloseV2", &h, 1, NULL);
  tf_output pop = {stack_op(g, "StackPopV2", &h, 1, cl), 0};
  ck_assert_int_eq(run_graph(g, &pop, 1, res), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "is closed");
  tf_output forged = {tt_const(g, NULL, tf_tensor_scalar_i64(123456789)), 0};
  pop = (tf_output){stack_op(g, "StackPopV2", &forged, 1, NULL), 0};
  ck_assert_int_eq(run_graph(g, &pop, 1, res), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "not a live stack");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("gradients_cf");
  TCase *tg = tcase_create("grad");
  tcase_set_timeout(tg, 120);
  tcase_add_test(tg, test_cond_both_branches);
  tcase_add_test(tg, test_while_data_dependent);
  tcase_add_test(tg, test_loop_invariant);
  tcase_add_test(tg, test_coupled_variables);
  tcase_add_test(tg, test_sparse_gradient_in_loop);
  tcase_add_test(tg, test_nested_while);
  tcase_add_test(tg, test_tensor_array_loop);
  tcase_add_test(tg, test_cond_inside_while);
  tcase_add_test(tg, test_while_inside_cond);
  tcase_add_test(tg, test_while_in_cond_in_while);
  tcase_add_test(tg, test_parallel_iterations);
  tcase_add_test(tg, test_value_inside_loop);
  suite_add_tcase(s, tg);
  TCase *ts = tcase_create("stack");
  tcase_add_test(ts, test_stack_lifo);
  tcase_add_test(ts, test_stack_errors);
  suite_add_tcase(s, ts);
  return s;
}
