/* layers_norm_test.c: tf_layer_batch_norm (lib/core/cc/layers_norm.c)
 * against float64 plain-loop references: the forward pass in training
 * (batch statistics) and inference (moving statistics) mode, with a fed
 * training flag and switched at build time, for NHWC and 2-D input; the
 * moving averages after N training steps run through an optimizer's train
 * op (tf_optimizer_control_dependencies on tf_layers_update_ops) against a
 * float64 recomputation with the unbiased batch variance; that steps with
 * training fed false leave them bit-identical; gradients of a loss with
 * respect to x, gamma and beta by float32 central differences in every
 * mode (through the cond too); the variables and errors; a control
 * dependency from another graph refused by the optimizer. Also the leaky
 * ReLU activation (forward against a loop, gradient by the float64
 * central-difference helper). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"
#include "tf/train.h"

#define C 3
#define EPS 1e-3

/* A batch-norm layer on placeholder "x" with loss = Sum(y * w) (w a fixed
 * random Const), the gradients of the loss with respect to x, gamma and
 * beta, and per variable an Assign from placeholder "v<i>" (set[i]). */
typedef struct bn_net {
  tf_graph *g;
  tf_layers *l;
  tf_output x, tr, y, loss, grads[3];
  tf_output vars[4]; /* gamma, beta, moving_mean, moving_variance */
  tf_node *set[4];
  int64_t rows;      /* x's elements / C */
} bn_net;

static tf_output sum_all(tf_graph *g, tf_output t, int rank) {
  int32_t ax[4] = {0, 1, 2, 3};
  tf_output r = {tt_const(g, NULL, tf_tensor_vec_i32(rank, ax)), 0};
  return (tf_output){tt_node(g, "Sum", NULL, (tf_output[]){t, r}, 2, NULL, 0),
                     0};
}

static void bn_build(bn_net *n, tf_shape xs, bool flag, bool active,
                     double momentum) {
  tf_status st;
  n->g = tf_graph_new();
  n->l = tf_layers_new(n->g, 5);
  n->x = (tf_output){tt_placeholder(n->g, "x", TF_FLOAT32, xs), 0};
  n->tr = flag ? (tf_output){tt_placeholder(n->g, "training", TF_BOOL,
                                            tf_shape_scalar()), 0}
               : (tf_output){NULL, 0};
  LT_OK(tf_layer_batch_norm(n->l, n->x, n->tr, active, momentum, EPS, true,
                            true, NULL, &n->y, &st));
  ck_assert_int_eq(tf_layers_num_vars(n->l), 4);
  for (int i = 0; i < 4; i++) {
    n->vars[i] = tf_layers_var(n->l, i)->var;
    char ph[16];
    snprintf(ph, sizeof ph, "v%d", i);
    tf_output p = {tt_placeholder(n->g, ph, TF_FLOAT32, tf_shape_of(1, C)), 0};
    n->set[i] = tt_node(n->g, "Assign", NULL, (tf_output[]){n->vars[i], p}, 2,
                        NULL, 0);
  }
  tf_output w = {tt_const(n->g, NULL, tt_rand(TF_FLOAT32, xs, -1, 1)), 0};
  tf_output yw = {tt_node(n->g, "Mul", NULL, (tf_output[]){n->y, w}, 2, NULL,
                          0), 0};
  n->loss = sum_all(n->g, yw, xs.rank);
  tf_output wrt[3] = {n->x, n->vars[0], n->vars[1]};
  LT_OK(tf_gradients(n->g, &n->loss, 1, wrt, 3, NULL, n->grads, &st));
  n->rows = tf_shape_num_elements(&xs) / C;
}

static void bn_free(bn_net *n) {
  tf_layers_free(n->l);
  tf_graph_free(n->g);
}

/* Runs set[i] with value v (float32 [C]). */
static void bn_set(tf_session *s, bn_net *n, int i, const tf_tensor *v) {
  char ph[16];
  snprintf(ph, sizeof ph, "v%d", i);
  const char *fn[] = {ph};
  const char *t[] = {tf_node_name(n->set[i])};
  tf_status st;
  ck_assert_msg(tf_session_run(s, NULL, fn, (tf_tensor *const *)&v, 1, NULL,
                               NULL, 0, t, 1, NULL, &st) == TF_OK, "%s",
                st.msg);
}

/* Fetches outs[0..n) feeding x and (when the net has it) training. */
static void bn_run(tf_session *s, bn_net *n, tf_tensor *x, bool training,
                   const tf_output *fetch, tf_tensor **out, int k) {
  tf_tensor *tr = tf_tensor_scalar_bool(training);
  tf_tensor *feeds[2] = {x, tr};
  const char *fn[] = {"x", "training"};
  lt_run(s, fn, feeds, n->tr.node ? 2 : 1, fetch, out, k);
  tf_tensor_unref(tr);
}

/* The float64 reference on rows x C: y, and the batch mean and unbiased
 * variance (bm, bv) when training, else y from mm and mv. */
static void bn_ref(const float *x, int64_t rows, const double *gamma,
                   const double *beta, const double *mm, const double *mv,
                   bool training, double *y, double *bm, double *bv) {
  for (int c = 0; c < C; c++) {
    double m = mm[c], v = mv[c], s = 0, q = 0;
    if (training) {
      for (int64_t r = 0; r < rows; r++) {
        s += x[r * C + c];
      }
      m = s / (double)rows;
      for (int64_t r = 0; r < rows; r++) {
        q += (x[r * C + c] - m) * (x[r * C + c] - m);
      }
      v = q / (double)rows;
      if (bm != NULL) {
        bm[c] = m;
        bv[c] = q / (double)(rows - 1);
      }
    }
    for (int64_t r = 0; r < rows; r++) {
      y[r * C + c] = gamma[c] * (x[r * C + c] - m) / sqrt(v + EPS) + beta[c];
    }
  }
}

/* |got - want| <= atol + rtol * |want| elementwise. */
static void near(const tf_tensor *got, const double *want, int64_t n,
                 double atol, double rtol, const char *what) {
  ck_assert_int_eq(got->n, n);
  for (int64_t i = 0; i < n; i++) {
    double g = lt_at(got, i);
    ck_assert_msg(fabs(g - want[i]) <= atol + rtol * fabs(want[i]),
                  "%s[%lld]: got %.9g want %.9g", what, (long long)i, g,
                  want[i]);
  }
}

/* Random gamma, beta, moving mean and variance assigned; values in p. */
static void bn_randomize(tf_session *s, bn_net *n, double p[4][C]) {
  static const double lo[4] = {0.5, -1, -1, 0.5}, hi[4] = {1.5, 1, 1, 2};
  for (int i = 0; i < 4; i++) {
    tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(1, C), lo[i], hi[i]);
    for (int c = 0; c < C; c++) {
      p[i][c] = lt_at(t, c);
    }
    bn_set(s, n, i, t);
    tf_tensor_unref(t);
  }
}

/* Checks the forward pass of one net on a fresh x in the given mode. */
static void check_forward(bn_net *n, tf_shape xs, bool training) {
  tf_session *s = lt_session(n->g, n->l);
  double p[4][C];
  bn_randomize(s, n, p);
  tf_tensor *x = tt_rand(TF_FLOAT32, xs, -3, 3), *y;
  bn_run(s, n, x, training, &n->y, &y, 1);
  double *want = malloc((size_t)x->n * sizeof *want);
  bn_ref(x->data, n->rows, p[0], p[1], p[2], p[3], training, want, NULL,
         NULL);
  /* float32 op against float64: 2e-4 covers the rounding of the batch
   * statistics and of the normalisation for |y| of a few units */
  near(y, want, x->n, 2e-4, 2e-4, training ? "y(train)" : "y(infer)");
  ck_assert_int_eq(y->shape.rank, xs.rank);
  free(want);
  tf_tensor_unref(x);
  tf_tensor_unref(y);
  tf_session_free(s);
}

/* Training (batch statistics) and inference (moving statistics) outputs,
 * NHWC and 2-D, with the fed flag (both values, one graph) and switched at
 * build time; the variables and the count of update ops. */
START_TEST(test_bn_forward) {
  tf_shape shapes[2] = {tf_shape_of(4, 4, 3, 3, C), tf_shape_of(2, 8, C)};
  for (int k = 0; k < 2; k++) {
    bn_net n;
    bn_build(&n, shapes[k], true, false, 0.9);
    ck_assert_str_eq(tf_layers_var(n.l, 0)->name,
                     "batch_normalization/gamma");
    ck_assert_str_eq(tf_layers_var(n.l, 3)->name,
                     "batch_normalization/moving_variance");
    ck_assert(tf_layers_var(n.l, 0)->trainable);
    ck_assert(tf_layers_var(n.l, 1)->trainable);
    ck_assert(!tf_layers_var(n.l, 2)->trainable);
    ck_assert(!tf_layers_var(n.l, 3)->trainable);
    ck_assert_int_eq(tf_layers_num_params(n.l), 2 * C);
    ck_assert_int_eq(tf_layers_update_ops(n.l, NULL, 0), 2);
    check_forward(&n, shapes[k], true);
    check_forward(&n, shapes[k], false);
    bn_free(&n);
    for (int active = 0; active < 2; active++) {
      bn_build(&n, shapes[k], false, active, 0.9);
      ck_assert_int_eq(tf_layers_update_ops(n.l, NULL, 0), active ? 2 : 0);
      check_forward(&n, shapes[k], active);
      bn_free(&n);
    }
  }
}
END_TEST

/* Fetches the moving statistics into mm and mv and (when eq is set)
 * checks they equal the previous tensors bit for bit. */
static void fetch_moving(tf_session *s, bn_net *n, tf_tensor **prev,
                         double m[2][C], bool eq) {
  tf_tensor *t[2];
  lt_run(s, NULL, NULL, 0, &n->vars[2], t, 2);
  for (int k = 0; k < 2; k++) {
    for (int c = 0; c < C; c++) {
      m[k][c] = lt_at(t[k], c);
    }
    if (eq) {
      ck_assert_msg(memcmp(t[k]->data, prev[k]->data, t[k]->nbytes) == 0,
                    "moving statistic %d changed in an inference step", k);
    }
    if (prev[k] != NULL) {
      tf_tensor_unref(prev[k]);
    }
    prev[k] = t[k];
  }
}

/* N training steps of an SGD train op that runs the update ops: moving =
 * moving * momentum + batch * (1 - momentum) with the unbiased batch
 * variance, recomputed in float64 (each step's x fresh); then steps with
 * training fed false leave both bit-identical. */
START_TEST(test_bn_moving_averages) {
  const double mom = 0.8;
  tf_shape xs = tf_shape_of(2, 6, C);
  bn_net n;
  bn_build(&n, xs, true, false, mom);
  tf_status st;
  tf_node *ups[4];
  ck_assert_int_eq(tf_layers_update_ops(n.l, ups, 4), 2);
  tf_optimizer *o = tf_optimizer_gradient_descent(0.1);
  tf_optimizer_control_dependencies(o, ups, 2);
  tf_output tv[2];
  ck_assert_int_eq(tf_layers_trainable(n.l, tv, 2), 2);
  tf_node *train = tf_optimizer_minimize(o, n.g, n.loss, tv, 2,
                                         (tf_output){NULL, 0}, NULL, &st);
  ck_assert_msg(train != NULL, "%s", st.msg);
  tf_session *s = lt_session(n.g, n.l);
  double want[2][C] = {{0, 0, 0}, {1, 1, 1}}, got[2][C], bm[C], bv[C];
  double *y = malloc((size_t)xs.dims[0] * C * sizeof *y);
  tf_tensor *prev[2] = {NULL, NULL}, *tr = tf_tensor_scalar_bool(true);
  const char *fn[] = {"x", "training"}, *tg[] = {tf_node_name(train)};
  for (int step = 0; step < 5; step++) {
    tf_tensor *x = tt_rand(TF_FLOAT32, xs, -2, 4);
    tf_tensor *feeds[2] = {x, tr};
    ck_assert_msg(tf_session_run(s, NULL, fn, feeds, 2, NULL, NULL, 0, tg, 1,
                                 NULL, &st) == TF_OK, "%s", st.msg);
    bn_ref(x->data, xs.dims[0], want[0], want[0], want[0], want[1], true, y,
           bm, bv);
    for (int c = 0; c < C; c++) {
      want[0][c] = want[0][c] * mom + bm[c] * (1 - mom);
      want[1][c] = want[1][c] * mom + bv[c] * (1 - mom);
    }
    tf_tensor_unref(x);
  }
  fetch_moving(s, &n, prev, got, false);
  for (int k = 0; k < 2; k++) {
    for (int c = 0; c < C; c++) {
      /* float32 statistics and averages: 1e-5 relative plus 1e-6 */
      ck_assert_msg(fabs(got[k][c] - want[k][c]) <=
                        1e-6 + 1e-5 * fabs(want[k][c]),
                    "moving %d[%d]: got %.9g want %.9g", k, c, got[k][c],
                    want[k][c]);
    }
  }
  tf_tensor_unref(tr);
  tr = tf_tensor_scalar_bool(false);
  for (int step = 0; step < 3; step++) {
    tf_tensor *x = tt_rand(TF_FLOAT32, xs, -2, 4);
    tf_tensor *feeds[2] = {x, tr};
    ck_assert_msg(tf_session_run(s, NULL, fn, feeds, 2, NULL, NULL, 0, tg, 1,
                                 NULL, &st) == TF_OK, "%s", st.msg);
    fetch_moving(s, &n, prev, got, true);
    tf_tensor_unref(x);
  }
  tt_free(prev, 2);
  tf_tensor_unref(tr);
  free(y);
  tf_session_free(s);
  tf_optimizer_free(o);
  bn_free(&n);
}
END_TEST

/* The update ops of a layer switched on at build time, run as targets:
 * one step of the moving averages. */
START_TEST(test_bn_static_updates) {
  const double mom = 0.7;
  tf_shape xs = tf_shape_of(4, 2, 2, 2, C);
  bn_net n;
  bn_build(&n, xs, false, true, mom);
  tf_node *ups[2];
  ck_assert_int_eq(tf_layers_update_ops(n.l, ups, 2), 2);
  tf_session *s = lt_session(n.g, n.l);
  tf_tensor *x = tt_rand(TF_FLOAT32, xs, -1, 1);
  const char *fn[] = {"x"};
  const char *tg[] = {tf_node_name(ups[0]), tf_node_name(ups[1])};
  tf_status st;
  ck_assert_msg(tf_session_run(s, NULL, fn, &x, 1, NULL, NULL, 0, tg, 2, NULL,
                               &st) == TF_OK, "%s", st.msg);
  double z[C] = {0, 0, 0}, one[C] = {1, 1, 1}, bm[C], bv[C], got[2][C];
  double y[8 * C];
  bn_ref(x->data, 8, one, z, z, one, true, y, bm, bv);
  tf_tensor *prev[2] = {NULL, NULL};
  fetch_moving(s, &n, prev, got, false);
  for (int c = 0; c < C; c++) {
    double wm = bm[c] * (1 - mom), wv = mom + bv[c] * (1 - mom);
    /* float32: 1e-5 relative plus 1e-6 */
    ck_assert_msg(fabs(got[0][c] - wm) <= 1e-6 + 1e-5 * fabs(wm), "mean[%d]",
                  c);
    ck_assert_msg(fabs(got[1][c] - wv) <= 1e-6 + 1e-5 * fabs(wv), "var[%d]",
                  c);
  }
  tt_free(prev, 2);
  tf_tensor_unref(x);
  tf_session_free(s);
  bn_free(&n);
}
END_TEST

/* The loss at x (the variables as set). */
static double loss_at(tf_session *s, bn_net *n, tf_tensor *x, bool training) {
  tf_tensor *l;
  bn_run(s, n, x, training, &n->loss, &l, 1);
  double v = lt_at(l, 0);
  tf_tensor_unref(l);
  return v;
}

/* Central difference of the loss in element i of t (x itself, or the
 * value of variable `var` >= 0 assigned before each run), step 1e-2. The
 * divisor is the float32 step actually taken. */
static double numeric(tf_session *s, bn_net *n, tf_tensor *x, tf_tensor *t,
                      int var, int64_t i, bool training) {
  float *v = t->data, keep = v[i], lp;
  double f[2];
  for (int k = 0; k < 2; k++) {
    v[i] = (float)(keep + (k == 0 ? 1e-2 : -1e-2));
    if (k == 0) {
      lp = v[i];
    }
    if (var >= 0) {
      bn_set(s, n, var, t);
    }
    f[k] = loss_at(s, n, x, training);
  }
  double step = (double)lp - (double)v[i];
  v[i] = keep;
  if (var >= 0) {
    bn_set(s, n, var, t);
  }
  return (f[0] - f[1]) / step;
}

/* d loss / d (x, gamma, beta) of one net and mode against central
 * differences in float32 (step 1e-2 on values of order 1; the loss sums
 * O(10) float32 terms, so rounding adds about 1e-4 and truncation about
 * 1e-4: tolerance 1e-3 + 5e-3 relative, far below a wrong term's size). */
static void check_grads(bn_net *n, tf_shape xs, bool training) {
  tf_session *s = lt_session(n->g, n->l);
  double p[4][C];
  bn_randomize(s, n, p);
  tf_tensor *x = tt_rand(TF_FLOAT32, xs, -3, 3), *g[3];
  bn_run(s, n, x, training, n->grads, g, 3);
  tf_tensor *vals[3] = {x, tt_tensor(TF_FLOAT32, tf_shape_of(1, C), p[0]),
                        tt_tensor(TF_FLOAT32, tf_shape_of(1, C), p[1])};
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(g[k]->n, vals[k]->n);
    for (int64_t i = 0; i < vals[k]->n; i++) {
      double num = numeric(s, n, x, vals[k], k - 1, i, training);
      double an = lt_at(g[k], i);
      ck_assert_msg(fabs(an - num) <= 1e-3 + 5e-3 * fabs(num),
                    "%s: d/d%s[%lld] analytic %.7g numeric %.7g",
                    training ? "training" : "inference",
                    (const char *[]){"x", "gamma", "beta"}[k], (long long)i,
                    an, num);
    }
  }
  tt_free(g, 3);
  tt_free(vals, 3);
  tf_session_free(s);
}

/* Gradients with respect to x, gamma and beta through the cond (flag fed
 * true and false) and in both build-time modes. */
START_TEST(test_bn_gradients) {
  tf_shape s2 = tf_shape_of(2, 6, C), s4 = tf_shape_of(4, 2, 2, 2, C);
  bn_net n;
  bn_build(&n, s2, true, false, 0.99);
  check_grads(&n, s2, true);
  check_grads(&n, s2, false);
  bn_free(&n);
  for (int active = 0; active < 2; active++) {
    bn_build(&n, s4, false, active, 0.99);
    check_grads(&n, s4, active);
    bn_free(&n);
  }
}
END_TEST

/* scale and center false: no gamma or beta variable, y = (x - m) /
 * sqrt(v + eps); default scope names made unique. */
START_TEST(test_bn_no_scale_center) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 5, C)), 0};
  tf_output y, y2;
  LT_OK(tf_layer_batch_norm(l, x, (tf_output){NULL, 0}, true, 0.99, EPS,
                            false, false, NULL, &y, &st));
  LT_OK(tf_layer_batch_norm(l, x, (tf_output){NULL, 0}, false, 0.99, EPS,
                            true, true, NULL, &y2, &st));
  ck_assert_int_eq(tf_layers_num_vars(l), 6);
  ck_assert_str_eq(tf_layers_var(l, 0)->name,
                   "batch_normalization/moving_mean");
  ck_assert_str_eq(tf_layers_var(l, 2)->name, "batch_normalization_1/gamma");
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 5, C), -1, 1), *out;
  const char *fn[] = {"x"};
  lt_run_once(g, l, fn, &in, 1, &y, &out, 1);
  double one[C] = {1, 1, 1}, z[C] = {0, 0, 0}, want[5 * C];
  bn_ref(in->data, 5, one, z, z, one, true, want, NULL, NULL);
  near(out, want, 5 * C, 2e-4, 2e-4, "y"); /* float32 rounding */
  tf_tensor_unref(in);
  tf_tensor_unref(out);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Bad arguments name the layer and leave the graph unchanged. */
START_TEST(test_bn_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 4, C)), 0};
  tf_output xd = {tt_placeholder(g, "xd", TF_FLOAT64, tf_shape_of(2, 4, C)), 0};
  tf_output x3 = {tt_placeholder(g, "x3", TF_FLOAT32, tf_shape_of(3, 4, 2, C)),
                  0};
  tf_output xu = {tt_placeholder(g, "xu", TF_FLOAT32, tf_shape_of(2, 4, -1)),
                  0};
  tf_output ti = {tt_placeholder(g, "ti", TF_INT32, tf_shape_scalar()), 0};
  tf_output none = {NULL, 0}, y;
  int nodes = tf_graph_num_nodes(g);
#define CASE(call, text)                                                       \
  ck_assert_int_eq((call), TF_INVALID_ARGUMENT);                               \
  ck_assert_msg(strstr(st.msg, "batch_norm") && strstr(st.msg, text), "%s",    \
                st.msg)
  CASE(tf_layer_batch_norm(l, xd, none, true, 0.9, EPS, true, true, NULL, &y,
                           &st), "float32");
  CASE(tf_layer_batch_norm(l, x3, none, true, 0.9, EPS, true, true, NULL, &y,
                           &st), "[batch, features]");
  CASE(tf_layer_batch_norm(l, xu, none, true, 0.9, EPS, true, true, NULL, &y,
                           &st), "last dim known");
  CASE(tf_layer_batch_norm(l, x, none, true, 1.5, EPS, true, true, NULL, &y,
                           &st), "momentum");
  CASE(tf_layer_batch_norm(l, x, none, true, 0.9, 0, true, true, NULL, &y,
                           &st), "epsilon");
  CASE(tf_layer_batch_norm(l, x, ti, true, 0.9, EPS, true, true, NULL, &y,
                           &st), "scalar bool");
#undef CASE
  ck_assert_ptr_null(y.node);
  ck_assert_int_eq(tf_graph_num_nodes(g), nodes);
  ck_assert_int_eq(tf_layers_num_vars(l), 0);
  ck_assert_int_eq(tf_layers_update_ops(l, NULL, 0), 0);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

static double leaky_ref(double v) { return v > 0 ? v : 0.2 * v; }

/* Element i of a float32/float64 tensor set to v. */
static void set_at(tf_tensor *t, int64_t i, double v) {
  if (t->dtype == TF_FLOAT32) {
    ((float *)t->data)[i] = (float)v;
  } else {
    ((double *)t->data)[i] = v;
  }
}

static tf_output leaky_build(tf_graph *g, const tf_output *in, int n_in,
                             void *arg) {
  (void)n_in, (void)arg;
  tf_layers *l = tf_layers_new(g, 0);
  tf_status st;
  tf_output y;
  LT_OK(tf_layer_activation(l, in[0], TF_ACT_LEAKY_RELU, NULL, &y, &st));
  tf_layers_free(l);
  return y;
}

/* TF_ACT_LEAKY_RELU: one LeakyRelu node (alpha 0.2) matching the loop in
 * float32 and float64 (including exact 0 and negative values), through
 * dense; its gradient by float64 central differences (atol 1e-6, rtol
 * 1e-6; inputs kept away from the kink at 0). */
START_TEST(test_leaky_relu) {
  tf_dtype dts[2] = {TF_FLOAT32, TF_FLOAT64};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_layers *l = tf_layers_new(g, 3);
    tf_status st;
    tf_output x = {tt_placeholder(g, "x", dts[k], tf_shape_of(2, 4, 5)), 0};
    tf_output y, d;
    LT_OK(tf_layer_activation(l, x, TF_ACT_LEAKY_RELU, NULL, &y, &st));
    ck_assert_str_eq(tf_node_op(y.node), "LeakyRelu");
    tf_initializer kc = tf_init_constant(0.1), bc = tf_init_constant(-0.5);
    LT_OK(tf_layer_dense(l, x, 3, TF_ACT_LEAKY_RELU, true, &kc, &bc, NULL, &d,
                         &st));
    tf_tensor *in = tt_rand(dts[k], tf_shape_of(2, 4, 5), -3, 3), *out[2];
    set_at(in, 0, 0.0);
    const char *fn[] = {"x"};
    tf_output f[2] = {y, d};
    lt_run_once(g, l, fn, &in, 1, f, out, 2);
    double want[20];
    for (int i = 0; i < 20; i++) {
      want[i] = leaky_ref(lt_at(in, i));
    }
    /* one rounded product (float32: alpha 0.2f and the product, 3e-7) */
    near(out[0], want, 20, 0, k == 0 ? 3e-7 : 1e-15, "leaky_relu");
    double dw[12];
    for (int r = 0; r < 4; r++) {
      double z = -0.5;
      for (int i = 0; i < 5; i++) {
        z += 0.1 * lt_at(in, r * 5 + i);
      }
      for (int u = 0; u < 3; u++) {
        dw[r * 3 + u] = leaky_ref(z);
      }
    }
    near(out[1], dw, 12, 1e-6, 1e-5, "dense"); /* float32 sums of 5 */
    tt_free(out, 2);
    tf_tensor_unref(in);
    tf_layers_free(l);
    tf_graph_free(g);
  }
  tf_tensor *gin = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 4), 0.1, 2);
  for (int64_t i = 0; i < gin->n; i += 2) {
    set_at(gin, i, -tf_tensor_get_f64(gin, i));
  }
  tt_grad_check(leaky_build, NULL, &gin, 1, NULL, 1e-6, 1e-6);
  tf_tensor_unref(gin);
}
END_TEST

/* A control dependency from another graph fails the train op's build
 * with INVALID_ARGUMENT and adds no node; cleared (n 0), it builds. */
START_TEST(test_control_deps_graph) {
  bn_net a, b;
  bn_build(&a, tf_shape_of(2, 4, C), false, true, 0.9);
  bn_build(&b, tf_shape_of(2, 4, C), false, true, 0.9);
  tf_node *ups[2];
  ck_assert_int_eq(tf_layers_update_ops(b.l, ups, 2), 2);
  tf_optimizer *o = tf_optimizer_gradient_descent(0.1);
  tf_optimizer_control_dependencies(o, ups, 2);
  tf_output tv[2];
  tf_layers_trainable(a.l, tv, 2);
  tf_status st;
  int nodes = tf_graph_num_nodes(a.g);
  ck_assert_ptr_null(tf_optimizer_minimize(o, a.g, a.loss, tv, 2,
                                           (tf_output){NULL, 0}, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "control dependency"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(a.g), nodes);
  tf_optimizer_control_dependencies(o, NULL, 0);
  ck_assert_ptr_nonnull(tf_optimizer_minimize(o, a.g, a.loss, tv, 2,
                                              (tf_output){NULL, 0}, NULL,
                                              &st));
  tf_optimizer_free(o);
  bn_free(&a);
  bn_free(&b);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_norm");
  TCase *tc = tcase_create("layers_norm");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_bn_forward);
  tcase_add_test(tc, test_bn_moving_averages);
  tcase_add_test(tc, test_bn_static_updates);
  tcase_add_test(tc, test_bn_gradients);
  tcase_add_test(tc, test_bn_no_scale_center);
  tcase_add_test(tc, test_bn_errors);
  tcase_add_test(tc, test_leaky_relu);
  tcase_add_test(tc, test_control_deps_graph);
  suite_add_tcase(s, tc);
  return s;
}
