/* train_test.c: the optimizers of train.h end to end through a session.
 * Every optimizer (Momentum also with Nesterov; RMSProp and Adam with an
 * exponentially decayed learning rate) minimises a convex quadratic to
 * its known optimum, and two of them fit a small logistic regression
 * (soft labels from known weights, so the optimum is those weights). A
 * sparse gradient (Gather with duplicate ids) goes through ScatterSub or
 * Unique + SparseApply* and ends where the dense update of the densified
 * gradient does, for every optimizer. Slots and Adam's powers get TF's
 * names and initial values and are reused by later applies; global_step
 * grows by one per run; a decayed learning rate follows the step; Adam's
 * powers advance per step, one pair per dtype. Bad arguments fail naming
 * the problem and leave the graph and the optimizer unchanged. Every
 * update waits for every gradient (TF's GATE_GRAPH), so one Run of a
 * deep model's minimize gives the same result every time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/layers.h"
#include "tf/serialize.h"
#include "tf/session.h"
#include "tf/train.h"

#define NONE ((tf_output){NULL, 0})

/* ---- helpers -------------------------------------------------------------- */

static tf_session *session(tf_graph *g) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

static void run_target(tf_session *s, const char *target) {
  tf_status st;
  tf_run_options o = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, NULL, NULL, 0, &target,
                               1, NULL, &st) == TF_OK,
                "%s: %s", target, st.msg);
}

static tf_tensor *fetch(tf_session *s, const char *name) {
  tf_status st;
  tf_tensor *t = NULL;
  tf_run_options o = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, &name, &t, 1, NULL, 0,
                               NULL, &st) == TF_OK,
                "%s: %s", name, st.msg);
  return t;
}

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

static tf_output op2(tf_graph *g, const char *op, tf_output a, tf_output b) {
  return out0(tt_node(g, op, NULL, (tf_output[]){a, b}, 2, NULL, 0));
}

/* Sum over every axis of x (rank r). */
static tf_output sum_all(tf_graph *g, tf_output x, int r) {
  int32_t ax[4] = {0, 1, 2, 3};
  return op2(g, "Sum", x, out0(tt_const(g, NULL, tf_tensor_vec_i32(r, ax))));
}

/* A variable `name` initialized to t (reference taken). */
static tf_output variable(tf_graph *g, const char *name, tf_tensor *t) {
  tf_status st;
  tf_var v;
  tf_shape shape = t->shape;
  tf_dtype dt = t->dtype;
  ck_assert_int_eq(tf_variable_create(g, name, shape, dt,
                                      out0(tt_const(g, NULL, t)), &v, &st),
                   TF_OK);
  return v.ref;
}

static tf_node *global_init(tf_graph *g) {
  tf_status st;
  tf_node *n = tf_global_variables_initializer(g, NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* ---- a convex quadratic ----------------------------------------------------- */

/* loss = sum(c * (w - t)^2) over 8 float64 elements, c in [0.5, 2]: its
 * minimum is w = t. Trains `steps` steps of o (lr decayed 0.05 * 0.99^step
 * when o's options ask for a tensor) and checks w against t. */
static void check_quadratic(tf_optimizer_kind kind,
                            tf_optimizer_options opts, bool decay, int steps,
                            double tol) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *t = tt_rand(TF_FLOAT64, tf_shape_of(1, 8), -2, 2);
  tf_tensor *c = tt_rand(TF_FLOAT64, tf_shape_of(1, 8), 0.5, 2);
  tf_output w = variable(g, "w",
                         tt_rand(TF_FLOAT64, tf_shape_of(1, 8), -2, 2));
  tf_output d = op2(g, "Sub", w, out0(tt_const(g, "t", tf_tensor_ref(t))));
  tf_output loss = sum_all(
      g, op2(g, "Mul", out0(tt_const(g, "c", c)),
             out0(tt_node(g, "Square", NULL, &d, 1, NULL, 0))), 1);
  tf_output step;
  ck_assert_int_eq(tf_global_step(g, &step, &st), TF_OK);
  if (decay) {
    ck_assert_int_eq(tf_exponential_decay(g, opts.learning_rate, step, 1, 0.99,
                                          false, &opts.learning_rate_tensor,
                                          &st), TF_OK);
  }
  tf_optimizer *o = tf_optimizer_new(kind, &opts);
  tf_node *train = tf_optimizer_minimize(o, g, loss, &w, 1, step, "train",
                                         &st);
  ck_assert_msg(train != NULL, "%s", st.msg);
  tf_session *s = session(g);
  run_target(s, tf_node_name(global_init(g)));
  for (int i = 0; i < steps; i++) {
    run_target(s, "train");
  }
  tf_tensor *got = fetch(s, "w"), *gs = fetch(s, "global_step");
  ck_assert_int_eq(((int64_t *)gs->data)[0], steps);
  for (int i = 0; i < 8; i++) {
    double a = ((double *)got->data)[i], b = ((double *)t->data)[i];
    ck_assert_msg(fabs(a - b) <= tol, "%s: w[%d] = %.9g, optimum %.9g",
                  opts.name, i, a, b);
  }
  tf_tensor *ts[] = {got, gs, t};
  tt_free(ts, 3);
  tf_session_free(s);
  tf_optimizer_free(o);
  tf_graph_free(g);
}

START_TEST(test_quadratic) {
  tt_rng_reseed(tt_seed() ^ 41);
  tf_optimizer_options o = tf_optimizer_defaults(TF_OPT_GRADIENT_DESCENT);
  o.learning_rate = 0.2;
  check_quadratic(TF_OPT_GRADIENT_DESCENT, o, false, 150, 1e-6);
  o = tf_optimizer_defaults(TF_OPT_MOMENTUM);
  o.learning_rate = 0.05;
  check_quadratic(TF_OPT_MOMENTUM, o, false, 300, 1e-6);
  o.use_nesterov = true;
  check_quadratic(TF_OPT_MOMENTUM, o, false, 300, 1e-6);
  o = tf_optimizer_defaults(TF_OPT_ADAGRAD);
  o.learning_rate = 1.0;
  check_quadratic(TF_OPT_ADAGRAD, o, false, 300, 1e-6);
  o = tf_optimizer_defaults(TF_OPT_ADADELTA);
  o.learning_rate = 0.3; /* near the optimum the step is ~lr * gradient */
  o.epsilon = 1e-3;
  check_quadratic(TF_OPT_ADADELTA, o, false, 1500, 1e-6);
  o = tf_optimizer_defaults(TF_OPT_RMSPROP);
  o.learning_rate = 0.05;
  check_quadratic(TF_OPT_RMSPROP, o, true, 700, 1e-3);
  o.momentum = 0.5;
  check_quadratic(TF_OPT_RMSPROP, o, true, 700, 1e-3);
  o = tf_optimizer_defaults(TF_OPT_ADAM);
  o.learning_rate = 0.2;
  check_quadratic(TF_OPT_ADAM, o, true, 700, 1e-3);
}
END_TEST

/* ---- logistic regression ------------------------------------------------ */

static double sigmoid(double z) { return 1 / (1 + exp(-z)); }

/* mean(softplus(z) - y * z), z = X w + b, y = sigmoid(X w* + b*): the
 * minimum is at w*, b*. */
static void check_logistic(tf_optimizer *o, const char *name, int steps, double tol) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  enum { N = 64, D = 3 };
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(2, N, D), -2, 2);
  double ws[D], bs = tt_rand_uniform(-0.5, 0.5), y[N];
  for (int j = 0; j < D; j++) {
    ws[j] = tt_rand_uniform(-1.5, 1.5);
  }
  for (int i = 0; i < N; i++) {
    double z = bs;
    for (int j = 0; j < D; j++) {
      z += ((double *)x->data)[i * D + j] * ws[j];
    }
    y[i] = sigmoid(z);
  }
  tf_output w = variable(g, "w", tt_rand(TF_FLOAT64, tf_shape_of(2, D, 1),
                                         -0.1, 0.1));
  tf_output b = variable(g, "b", tt_rand(TF_FLOAT64, tf_shape_of(1, 1), 0, 0));
  tf_output z = op2(g, "BiasAdd",
                    op2(g, "MatMul", out0(tt_const(g, "x", x)), w), b);
  tf_output yc = out0(tt_const(g, "y", tt_tensor(TF_FLOAT64,
                                                 tf_shape_of(2, N, 1), y)));
  tf_output sp = out0(tt_node(g, "Softplus", NULL, &z, 1, NULL, 0));
  tf_output per = op2(g, "Sub", sp, op2(g, "Mul", yc, z));
  int32_t ax[] = {0, 1};
  tf_output loss = op2(g, "Mean", per,
                       out0(tt_const(g, NULL, tf_tensor_vec_i32(2, ax))));
  tf_output vars[] = {w, b};
  ck_assert_msg(tf_optimizer_minimize(o, g, loss, vars, 2, NONE, "train", &st),
                "%s", st.msg);
  tf_session *s = session(g);
  run_target(s, tf_node_name(global_init(g)));
  for (int i = 0; i < steps; i++) {
    run_target(s, "train");
  }
  tf_tensor *gw = fetch(s, "w"), *gb = fetch(s, "b");
  for (int j = 0; j < D; j++) {
    ck_assert_msg(fabs(((double *)gw->data)[j] - ws[j]) <= tol,
                  "%s: w[%d] = %.6g, optimum %.6g", name, j, ((double *)gw->data)[j],
                  ws[j]);
  }
  ck_assert_msg(fabs(((double *)gb->data)[0] - bs) <= tol, "%s: b = %.6g, optimum %.6g",
                name, ((double *)gb->data)[0], bs);
  tf_tensor_unref(gw);
  tf_tensor_unref(gb);
  tf_session_free(s);
  tf_graph_free(g);
}

START_TEST(test_logistic_regression) {
  tt_rng_reseed(tt_seed() ^ 42);
  tf_optimizer *o = tf_optimizer_momentum(0.5, 0.9, true);
  check_logistic(o, "momentum", 800, 1e-3);
  tf_optimizer_free(o);
  /* Adam at a constant rate keeps moving near the optimum (its steps
   * shrink only as fast as its second-moment estimate forgets, beta2 =
   * 0.999): up to 2.7e-3 away after 5000 steps over 800 seeds. */
  o = tf_optimizer_adam(0.01);
  check_logistic(o, "adam", 5000, 5e-3);
  tf_optimizer_free(o);
}
END_TEST

/* ---- sparse gradients ------------------------------------------------------ */

/* E1 and E2 [10, 4] start equal; loss_k = sum(Gather(E_k, ids) * W) with
 * duplicate ids. E1 gets its sparse gradient, E2 the dense one; after
 * 3 steps both must be equal: the rows an id never touches have zero
 * slots (or, for Adam, see the dense gradient's zeros), so TF's sparse
 * semantics coincide with the dense update here. */
static void check_sparse_vs_dense(tf_optimizer *o, const char *update_op) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *e0 = tt_rand(TF_FLOAT64, tf_shape_of(2, 10, 4), -1, 1);
  tf_output e1 = variable(g, "E1", tf_tensor_ref(e0));
  tf_output e2 = variable(g, "E2", e0);
  int64_t ids[] = {1, 3, 1, 7, 3, 1};
  tf_output idx = out0(tt_const(g, "ids", tt_tensor_i(TF_INT32,
                                                      tf_shape_of(1, 6), ids)));
  tf_output wc = out0(tt_const(g, "W", tt_rand(TF_FLOAT64, tf_shape_of(2, 6, 4),
                                               -1, 1)));
  tf_output l1 = sum_all(g, op2(g, "Mul", op2(g, "Gather", e1, idx), wc), 2);
  tf_output l2 = sum_all(g, op2(g, "Mul", op2(g, "Gather", e2, idx), wc), 2);
  tf_grad gr[2];
  ck_assert_int_eq(tf_gradients_sparse(g, &l1, 1, &e1, 1, NULL, &gr[0], &st),
                   TF_OK);
  ck_assert_msg(tf_grad_is_sparse(&gr[0]), "Gather's gradient is not sparse");
  tf_output dense;
  ck_assert_int_eq(tf_gradients(g, &l2, 1, &e2, 1, NULL, &dense, &st), TF_OK);
  gr[1] = (tf_grad){.values = dense};
  tf_output vars[] = {e1, e2};
  ck_assert_msg(tf_optimizer_apply_gradients(o, g, vars, gr, 2, NONE, "train",
                                             &st), "%s", st.msg);
  char name[128];
  snprintf(name, sizeof name, "train/update_E1/%s", update_op);
  ck_assert_msg(tf_graph_find(g, name) != NULL, "no node %s", name);
  tf_session *s = session(g);
  run_target(s, tf_node_name(global_init(g)));
  for (int i = 0; i < 3; i++) {
    run_target(s, "train");
  }
  tf_tensor *a = fetch(s, "E1"), *b = fetch(s, "E2");
  tt_assert_close(a, b, 1e-13, 1e-12);
  ck_assert(!tf_tensor_equal(a, e0)); /* it moved */
  tf_tensor *rows[] = {a, b};
  tt_free(rows, 2);
  tf_session_free(s);
  tf_graph_free(g);
}

START_TEST(test_sparse_gradients) {
  tt_rng_reseed(tt_seed() ^ 43);
  struct {
    tf_optimizer *o;
    const char *op;
  } cases[] = {{tf_optimizer_gradient_descent(0.1), "ScatterSub"},
               {tf_optimizer_momentum(0.1, 0.9, false), "SparseApplyMomentum"},
               {tf_optimizer_momentum(0.1, 0.9, true), "SparseApplyMomentum"},
               {tf_optimizer_adagrad(0.1), "SparseApplyAdagrad"},
               {tf_optimizer_adadelta(1.0), "SparseApplyAdadelta"},
               {tf_optimizer_rmsprop(0.01), "SparseApplyRMSProp"},
               {tf_optimizer_adam(0.01), "SparseApplyAdam"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    check_sparse_vs_dense(cases[i].o, cases[i].op);
    tf_optimizer_free(cases[i].o);
  }
}
END_TEST

/* ---- slots, powers, global step, decayed learning rate ----------------- */

START_TEST(test_slots_and_names) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output w = variable(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 2),
                                         -1, 1));
  tf_output c = out0(tt_const(g, "g", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 2),
                                              -1, 1)));
  tf_grad gr = {.values = c};
  tf_optimizer *adam = tf_optimizer_adam(0.001);
  tf_optimizer *rms = tf_optimizer_rmsprop(0.01);
  tf_optimizer *ada = tf_optimizer_adagrad(0.1);
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(adam, g, &w, &gr, 1,
                                                     NONE, NULL, &st));
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(adam, g, &w, &gr, 1,
                                                     NONE, NULL, &st));
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(rms, g, &w, &gr, 1, NONE,
                                                     NULL, &st));
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(ada, g, &w, &gr, 1, NONE,
                                                     NULL, &st));
  const char *want[] = {"w/Adam", "w/Adam_1", "beta1_power", "beta2_power",
                        "Adam", "Adam_1", "Adam/update_w/ApplyAdam",
                        "w/RMSProp", "w/RMSProp_1", "RMSProp", "w/Adagrad",
                        "Adam/learning_rate", "Adam/beta1"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    ck_assert_msg(tf_graph_find(g, want[i]) != NULL, "no node %s", want[i]);
  }
  ck_assert_ptr_null(tf_graph_find(g, "w/Adam_2")); /* slots were reused */
  tf_output m, v;
  ck_assert_int_eq(tf_optimizer_slot(adam, w, "m", &m, &st), TF_OK);
  ck_assert_int_eq(tf_optimizer_slot(adam, w, "v", &v, &st), TF_OK);
  ck_assert_str_eq(tf_node_name(m.node), "w/Adam");
  ck_assert_str_eq(tf_node_name(v.node), "w/Adam_1");
  ck_assert_int_eq(tf_optimizer_slot(adam, w, "momentum", &m, &st),
                   TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "no slot 'momentum' for w"), "%s", st.msg);
  ck_assert_ptr_null(m.node);
  tf_node *inits[] = {tf_optimizer_init_op(adam, NULL, &st),
                      tf_optimizer_init_op(rms, NULL, &st),
                      tf_optimizer_init_op(ada, NULL, &st)};
  ck_assert_str_eq(tf_node_name(inits[0]), "Adam_init");
  tf_session *s = session(g);
  for (int i = 0; i < 3; i++) {
    run_target(s, tf_node_name(inits[i]));
  }
  struct {
    const char *name;
    double value;
  } values[] = {{"w/Adam", 0},   {"w/Adam_1", 0},     {"w/RMSProp", 1},
                {"w/RMSProp_1", 0}, {"w/Adagrad", 0.1}, {"beta1_power", 0.9},
                {"beta2_power", 0.999}};
  for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
    tf_tensor *t = fetch(s, values[i].name);
    ck_assert_int_eq(t->dtype, TF_FLOAT32);
    for (int64_t k = 0; k < t->n; k++) {
      ck_assert_msg(((float *)t->data)[k] == (float)values[i].value,
                    "%s[%d] = %g", values[i].name, (int)k,
                    ((float *)t->data)[k]);
    }
    tf_tensor_unref(t);
  }
  tf_optimizer *sgd = tf_optimizer_gradient_descent(0.1);
  ck_assert_ptr_null(tf_optimizer_init_op(sgd, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  tf_optimizer *opts[] = {adam, rms, ada, sgd};
  for (int i = 0; i < 4; i++) {
    tf_optimizer_free(opts[i]);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* SGD on loss = w (gradient 1) with lr = 0.1 * 0.5^step (staircase,
 * decay_steps 1): w_k = w_0 - sum_{i<k} float(0.1) * 0.5^i; global_step =
 * k. Adam's powers on a float32 and a float64 variable: beta^(k+1). */
START_TEST(test_step_and_decayed_lr) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output step;
  ck_assert_int_eq(tf_global_step(g, &step, &st), TF_OK);
  tf_output w = variable(g, "w", tf_tensor_scalar_f64(3.0));
  tf_output lr;
  ck_assert_int_eq(tf_exponential_decay(g, 0.1, step, 1, 0.5, true, &lr, &st),
                   TF_OK);
  tf_optimizer_options oo = tf_optimizer_defaults(TF_OPT_GRADIENT_DESCENT);
  oo.learning_rate_tensor = lr;
  tf_optimizer *sgd = tf_optimizer_new(TF_OPT_GRADIENT_DESCENT, &oo);
  ck_assert_ptr_nonnull(tf_optimizer_minimize(sgd, g, w, &w, 1, step, "train",
                                              &st));
  tf_optimizer *adam = tf_optimizer_adam(0.01);
  tf_output both[] = {variable(g, "a32", tf_tensor_scalar_f32(1.0f)),
                      variable(g, "a64", tf_tensor_scalar_f64(1.0))};
  tf_grad gr[] = {{.values = out0(tt_const(g, NULL, tf_tensor_scalar_f32(1)))},
                  {.values = out0(tt_const(g, NULL, tf_tensor_scalar_f64(1)))}};
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(adam, g, both, gr, 2,
                                                     NONE, "adam", &st));
  ck_assert_ptr_nonnull(tf_graph_find(g, "beta1_power_1")); /* float64 pair */
  tf_session *s = session(g);
  run_target(s, tf_node_name(global_init(g)));
  double want = 3.0;
  for (int k = 0; k < 5; k++) {
    run_target(s, "train");
    run_target(s, "adam");
    want -= (double)(float)0.1 * pow(0.5, k);
  }
  tf_tensor *gs = fetch(s, "global_step"), *got = fetch(s, "w");
  ck_assert_int_eq(((int64_t *)gs->data)[0], 5);
  ck_assert_double_eq_tol(((double *)got->data)[0], want, 1e-15);
  tf_tensor *p32 = fetch(s, "beta1_power"), *p64 = fetch(s, "beta2_power_1");
  ck_assert_float_eq_tol(((float *)p32->data)[0], powf(0.9f, 6), 1e-6);
  ck_assert_double_eq_tol(((double *)p64->data)[0], pow(0.999, 6), 1e-15);
  tf_tensor *ts[] = {gs, got, p32, p64};
  tt_free(ts, 4);
  tf_session_free(s);
  tf_optimizer_free(sgd);
  tf_optimizer_free(adam);
  tf_graph_free(g);
}
END_TEST

/* A trained graph with SparseApplyAdam (11 inputs) and ApplyAdam survives
 * msgpack and YAML and trains the same after reloading. */
START_TEST(test_serialized_graph_trains_the_same) {
  tt_rng_reseed(tt_seed() ^ 44);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output e = variable(g, "E", tt_rand(TF_FLOAT32, tf_shape_of(2, 6, 3),
                                         -1, 1));
  tf_output w = variable(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 2),
                                         -1, 1));
  int64_t ids[] = {0, 4, 4};
  tf_output idx = out0(tt_const(g, "ids", tt_tensor_i(TF_INT64,
                                                      tf_shape_of(1, 3), ids)));
  tf_output h = op2(g, "MatMul", op2(g, "Gather", e, idx), w);
  tf_output loss = sum_all(g, out0(tt_node(g, "Square", NULL, &h, 1, NULL, 0)),
                           2);
  tf_optimizer *o = tf_optimizer_adam(0.05);
  tf_output vars[] = {e, w};
  ck_assert_msg(tf_optimizer_minimize(o, g, loss, vars, 2, NONE, "train", &st),
                "%s", st.msg);
  global_init(g);
  ck_assert_int_eq(tf_node_num_inputs(tf_graph_find(
                       g, "train/update_E/SparseApplyAdam")), 11);
  void *buf;
  size_t len;
  char *text;
  size_t tlen;
  ck_assert_int_eq(tf_graph_to_msgpack(g, &buf, &len, &st), TF_OK);
  ck_assert_int_eq(tf_graph_to_yaml(g, &text, &tlen, &st), TF_OK);
  tf_graph *gm = tf_graph_new(), *gy = tf_graph_new();
  ck_assert_msg(tf_graph_from_msgpack(gm, buf, len, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_msg(tf_graph_from_yaml(gy, text, tlen, &st) == TF_OK, "%s",
                st.msg);
  free(buf);
  free(text);
  tf_graph *gs[] = {g, gm, gy};
  tf_tensor *got[3];
  for (int k = 0; k < 3; k++) {
    tf_session *s = session(gs[k]);
    run_target(s, "init");
    for (int i = 0; i < 5; i++) {
      run_target(s, "train");
    }
    got[k] = fetch(s, "E");
    tf_session_free(s);
  }
  ck_assert(tf_tensor_equal(got[0], got[1]));
  ck_assert(tf_tensor_equal(got[0], got[2]));
  tt_free(got, 3);
  tf_optimizer_free(o);
  for (int k = 0; k < 3; k++) {
    tf_graph_free(gs[k]);
  }
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output w = variable(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(1, 3), -1, 1));
  tf_output iv = variable(g, "iv", tf_tensor_scalar_i32(1));
  tf_output ph = out0(tt_placeholder(g, "p", TF_FLOAT32, tf_shape_of(1, 3)));
  tf_output g64 = out0(tt_const(g, NULL, tt_rand(TF_FLOAT64, tf_shape_of(1, 3),
                                                 -1, 1)));
  tf_grad dense = {.values = ph};
  tf_optimizer *o = tf_optimizer_adam(0.1);
  int n0 = tf_graph_num_nodes(g);
  struct {
    tf_output var;
    tf_grad grad;
    tf_output step;
    const char *msg;
  } bad[] = {
      {ph, dense, NONE, "vars[0] is not a variable (a ref output)"},
      {iv, dense, NONE, "variable iv is int32; optimizers update float32"},
      {w, {{NULL, 0}}, NONE, "No gradients provided for any variable"},
      {w, {.values = g64}, NONE,
       "the gradient of variable w is float64 but the variable is float32"},
      {w, dense, ph, "global_step must be an int32/int64 variable, got p:0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_ptr_null(tf_optimizer_apply_gradients(o, g, &bad[i].var,
                                                    &bad[i].grad, 1,
                                                    bad[i].step, NULL, &st));
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, bad[i].msg), "want '%s' in '%s'", bad[i].msg,
                  st.msg);
  }
  /* a loss that does not depend on w: no gradient at all */
  ck_assert_ptr_null(tf_optimizer_minimize(o, g, sum_all(g, ph, 1), &w, 1,
                                           NONE, NULL, &st));
  ck_assert_msg(strstr(st.msg, "No gradients provided"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0 + 2); /* the test's Sum, axes */
  tf_optimizer_free(o);
  tf_graph_free(g);
}
END_TEST

/* A failed build (Nesterov has no sparse Adam) leaves no trace in the
 * graph or the optimizer; an optimizer stays with its first graph. */
START_TEST(test_failed_build_undone) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output w = variable(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(1, 3), -1, 1));
  tf_grad dense = {.values = out0(tt_placeholder(g, "p", TF_FLOAT32,
                                                 tf_shape_of(1, 3)))};
  tf_optimizer_options ao = tf_optimizer_defaults(TF_OPT_ADAM);
  ao.use_nesterov = true;
  tf_optimizer *an = tf_optimizer_new(TF_OPT_ADAM, &ao);
  int64_t ix[] = {0};
  tf_grad rows = {.values = out0(tt_const(g, NULL, tt_rand(TF_FLOAT32,
                                                          tf_shape_of(1, 1),
                                                          -1, 1))),
                  .indices = out0(tt_const(g, NULL, tt_tensor_i(
                                                        TF_INT32,
                                                        tf_shape_of(1, 1), ix)))};
  int n0 = tf_graph_num_nodes(g);
  ck_assert_ptr_null(tf_optimizer_apply_gradients(an, g, &w, &rows, 1, NONE,
                                                  NULL, &st));
  ck_assert_msg(strstr(st.msg, "SparseApplyAdam has no Nesterov form "
                               "(variable w)"),
                "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0);
  ck_assert_ptr_null(tf_graph_find(g, "w/Adam"));
  /* the optimizer forgot the failed slots: they are made again */
  ck_assert_ptr_nonnull(tf_optimizer_apply_gradients(an, g, &w, &dense, 1,
                                                     NONE, NULL, &st));
  ck_assert_ptr_nonnull(tf_graph_find(g, "w/Adam"));
  ck_assert_ptr_nonnull(tf_optimizer_init_op(an, NULL, &st));
  tf_graph *other = tf_graph_new();
  tf_output w2 = variable(other, "w", tt_rand(TF_FLOAT32, tf_shape_of(1, 3),
                                              -1, 1));
  tf_grad d2 = {.values = out0(tt_placeholder(other, "p", TF_FLOAT32,
                                              tf_shape_of(1, 3)))};
  ck_assert_ptr_null(tf_optimizer_apply_gradients(an, other, &w2, &d2, 1,
                                                  NONE, NULL, &st));
  ck_assert_msg(strstr(st.msg, "already builds into another graph"), "%s",
                st.msg);
  tf_optimizer_free(an);
  tf_graph_free(other);
  tf_graph_free(g);
}
END_TEST

/* ---- every gradient before any update --------------------------------------- */

/* A 256-64-64-3 tanh MLP in float64, momentum, 5 steps of one Run each on
 * seeded data; a checksum of the first kernel. Before the gate, 2 of 200
 * such runs differed: an update could run before the backward pass read
 * the variable it changed. */
static double deep_run(bool check_gate) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 7);
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(2, -1, 256)), 0};
  tf_output y = {tt_placeholder(g, "y", TF_INT32, tf_shape_of(1, -1)), 0};
  tf_output h, logits, loss, vars[8];
  ck_assert(tf_layer_dense(l, x, 64, TF_ACT_TANH, true, NULL, NULL, NULL, &h, &st) == TF_OK);
  ck_assert(tf_layer_dense(l, h, 64, TF_ACT_TANH, true, NULL, NULL, NULL, &h, &st) == TF_OK);
  ck_assert(tf_layer_dense(l, h, 3, TF_ACT_NONE, true, NULL, NULL, NULL, &logits, &st) ==
            TF_OK);
  ck_assert(tf_layer_sparse_softmax_cross_entropy(l, logits, y, "loss", &loss, &st) == TF_OK);
  int nv = tf_layers_trainable(l, vars, 8);
  tf_optimizer *o = tf_optimizer_momentum(0.5, 0.9, false);
  ck_assert_msg(tf_optimizer_minimize(o, g, loss, vars, nv, NONE, "train", &st) != NULL, "%s",
                st.msg);
  if (check_gate) {
    /* Each update reads its gradient through an Identity that waits for
     * the gate, and the gate waits for every gradient. */
    tf_node *gate = tf_graph_find(g, "gradients_ready");
    ck_assert_ptr_nonnull(gate);
    ck_assert_str_eq(tf_node_op(gate), "NoOp");
    ck_assert_int_eq(tf_node_num_control_inputs(gate), nv);
    for (int i = 0; i < nv; i++) {
      char name[160];
      snprintf(name, sizeof name, "train/update_%s/ApplyMomentum", tf_node_name(vars[i].node));
      tf_node *u = tf_graph_find(g, name);
      ck_assert_msg(u != NULL, "no %s", name);
      tf_node *gi = tf_node_input(u, 3).node;
      ck_assert_str_eq(tf_node_op(gi), "Identity");
      ck_assert_ptr_eq(tf_node_control_input(gi, 0), gate);
    }
  }
  ck_assert_ptr_nonnull(tf_layers_init_op(l, "init", &st));
  ck_assert_ptr_nonnull(tf_optimizer_init_op(o, "opt_init", &st));
  tf_session *s = session(g);
  const char *init[] = {"init", "opt_init"}, *train = "train";
  ck_assert(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, 2, NULL, &st) == TF_OK);
  uint64_t seed = 3;
  for (int k = 0; k < 5; k++) {
    tf_tensor *fx = NULL, *fy = NULL;
    tf_shape xs = tf_shape_of(2, 64, 256), ys = tf_shape_of(1, 64);
    tf_tensor_new(TF_FLOAT64, &xs, &fx, &st);
    tf_tensor_new(TF_INT32, &ys, &fy, &st);
    for (int i = 0; i < 64 * 256; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      ((double *)fx->data)[i] = (double)(seed >> 56) / 255.0;
    }
    for (int i = 0; i < 64; i++) ((int32_t *)fy->data)[i] = (int32_t)((seed >> (i % 60)) % 3);
    const char *feeds[] = {"x", "y"};
    tf_tensor *fv[] = {fx, fy};
    ck_assert_msg(tf_session_run(s, NULL, feeds, fv, 2, NULL, NULL, 0, &train, 1, NULL, &st) ==
                      TF_OK, "%s", st.msg);
    tf_tensor_unref(fx);
    tf_tensor_unref(fy);
  }
  tf_tensor *v = fetch(s, tf_node_name(vars[0].node));
  double sum = 0;
  for (int64_t i = 0; i < v->n; i++) sum += ((double *)v->data)[i] * (double)(i + 1);
  tf_tensor_unref(v);
  tf_session_free(s);
  tf_optimizer_free(o);
  tf_layers_free(l);
  tf_graph_free(g);
  return sum;
}

START_TEST(test_one_run_is_deterministic) {
  double first = deep_run(true);
  for (int i = 0; i < 60; i++) {
    double again = deep_run(false);
    ck_assert_msg(again == first, "run %d: %.17g, first %.17g", i, again, first);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("train");
  TCase *c = tcase_create("core");
  tcase_set_timeout(c, 60);
  tcase_add_test(c, test_quadratic);
  tcase_add_test(c, test_logistic_regression);
  tcase_add_test(c, test_sparse_gradients);
  tcase_add_test(c, test_slots_and_names);
  tcase_add_test(c, test_step_and_decayed_lr);
  tcase_add_test(c, test_serialized_graph_trains_the_same);
  tcase_add_test(c, test_errors);
  tcase_add_test(c, test_failed_build_undone);
  tcase_add_test(c, test_one_run_is_deterministic);
  suite_add_tcase(s, c);
  return s;
}
