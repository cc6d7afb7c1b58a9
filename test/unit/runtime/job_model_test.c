/* job_model_test.c: building a job spec's model section (job_model.h).
 * A small dense model (float64) and a small conv model (float32) built from
 * specs and run in a local session on seeded random inputs, against an
 * independent recomputation from the fetched variables: in float64 here
 * for the dense model (tolerance 1e-12 absolute + relative), with numpy
 * for the conv model (tolerance 1e-4 absolute + relative, float32). Two
 * replicas share the variables and get their devices and stable names;
 * training a tiny model from a spec (momentum, a decay schedule, clipping)
 * lowers its loss; bad inputs are errors naming them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/job_model.h"
#include "test/unit/testutil.h"

#define TAIL                                                                   \
  "input: {format: idx, train: {images: a, labels: b}}\n"                      \
  "optimizer: {name: sgd, learning_rate: 0.5}\n"                               \
  "train: {steps: 1}\n"

static const char *const dense_spec =
    "name: d\n"
    "model:\n"
    "  input: {shape: [4], dtype: float64}\n"
    "  layers:\n"
    "    - {type: dense, units: 5, activation: relu,\n"
    "       bias_initializer: {type: constant, value: 0.1}}\n"
    "    - {type: dropout, rate: 0.5}\n"
    "    - {type: dense, units: 3}\n"
    "  loss: sparse_softmax_cross_entropy\n"
    "  metrics: [accuracy]\n"
    "  seed: 7\n" TAIL;

static tf_job_spec *spec(const char *text) {
  tf_status st;
  tf_job_spec *s = NULL;
  ck_assert_msg(tf_job_spec_parse(text, strlen(text), "m.yaml", &s, &st) ==
                    TF_OK, "%s", st.msg);
  return s;
}

/* Runs s on feeds, fetching names into out; targets may be NULL. */
static void run(tf_session *s, const char *const *feeds, tf_tensor **fv,
                int nf, const char *const *names, tf_tensor **out, int n,
                const char *target) {
  tf_status st;
  const char *t[1] = {target};
  ck_assert_msg(tf_session_run(s, NULL, feeds, fv, nf, names, out, n,
                               target ? t : NULL, target ? 1 : 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
}

static tf_output placeholder(tf_graph *g, const char *name, tf_dtype dt,
                             tf_shape shape) {
  return (tf_output){tt_placeholder(g, name, dt, shape), 0};
}

/* The mean sparse softmax cross-entropy of logits [b, c] (row-major) and
 * the accuracy, in float64. */
static void reference_loss(const double *logits, const int64_t *labels, int b,
                           int c, double *loss, double *acc) {
  *loss = 0;
  *acc = 0;
  for (int i = 0; i < b; i++) {
    const double *r = logits + i * c;
    double m = r[0];
    int arg = 0;
    for (int k = 1; k < c; k++) {
      arg = r[k] > m ? k : arg;
      m = r[k] > m ? r[k] : m;
    }
    double sum = 0;
    for (int k = 0; k < c; k++) {
      sum += exp(r[k] - m);
    }
    *loss += (m + log(sum) - r[labels[i]]) / b;
    *acc += (arg == labels[i]) / (double)b;
  }
}

START_TEST(test_dense_forward) {
  tt_rng_reseed(tt_seed() ^ 1);
  tf_job_spec *s = spec(dense_spec);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = NULL;
  ck_assert_msg(tf_job_vars_new(s, g, NULL, &v, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_job_vars_count(v), 4);
  ck_assert_str_eq(tf_job_vars_at(v, 0)->name, "dense/kernel");
  ck_assert_str_eq(tf_job_vars_at(v, 3)->name, "dense_1/bias");
  ck_assert_int_eq(tf_job_vars_bytes(v, 0), 4 * 5 * 8);
  tf_output x = placeholder(g, "x", TF_FLOAT64, tf_shape_of(2, -1, 4));
  tf_output y = placeholder(g, "y", TF_INT32, tf_shape_of(1, -1));
  tf_job_replica r;
  ck_assert_msg(tf_job_replica_build(s, v, g, "eval/", NULL, x, y, false, &r,
                                     &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(tf_node_name(r.logits.node), "eval/logits");
  ck_assert_str_eq(tf_node_name(r.loss.node), "eval/loss");
  ck_assert_int_eq(r.n_metrics, 1);
  ck_assert_str_eq(tf_node_name(r.metrics[0].node), "eval/accuracy");
  ck_assert_str_eq(r.metric_names[0], "accuracy");
  ck_assert_int_eq(r.n_vars, 4);
  ck_assert(tf_graph_find(g, "eval/dense/MatMul") != NULL);
  ck_assert(tf_graph_find(g, "eval/dense_1/BiasAdd") != NULL);
  tf_node *init = tf_job_init_op(g, NULL, &st);
  ck_assert_msg(init != NULL, "%s", st.msg);
  ck_assert_str_eq(tf_node_name(init), "init");
  const int B = 9;
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(2, B, 4), -2, 2);
  int64_t labels[9];
  for (int i = 0; i < B; i++) {
    labels[i] = (int64_t)(tt_rand_u64() % 3);
  }
  tf_tensor *yv = tt_tensor_i(TF_INT32, tf_shape_of(1, B), labels);
  tf_session *sess = tf_session_new(g, NULL, &st);
  run(sess, NULL, NULL, 0, NULL, NULL, 0, "init");
  const char *feeds[] = {"x", "y"};
  tf_tensor *fv[] = {xv, yv};
  const char *names[] = {"dense/kernel", "dense/bias", "dense_1/kernel",
                         "dense_1/bias", "eval/logits", "eval/loss",
                         "eval/accuracy"};
  tf_tensor *out[7];
  run(sess, feeds, fv, 2, names, out, 7, NULL);
  ck_assert_double_eq(tf_tensor_get_f64(out[1], 0), 0.1);
  double logits[9 * 3];
  for (int i = 0; i < B; i++) {
    double h[5];
    for (int j = 0; j < 5; j++) {
      h[j] = tf_tensor_get_f64(out[1], j);
      for (int k = 0; k < 4; k++) {
        h[j] += tf_tensor_get_f64(xv, i * 4 + k) *
                tf_tensor_get_f64(out[0], k * 5 + j);
      }
      h[j] = h[j] > 0 ? h[j] : 0; /* relu; dropout is off (eval) */
    }
    for (int c = 0; c < 3; c++) {
      double z = tf_tensor_get_f64(out[3], c);
      for (int j = 0; j < 5; j++) {
        z += h[j] * tf_tensor_get_f64(out[2], j * 3 + c);
      }
      logits[i * 3 + c] = z;
      double got = tf_tensor_get_f64(out[4], i * 3 + c);
      ck_assert_msg(fabs(got - z) <= 1e-12 + 1e-12 * fabs(z),
                    "logits[%d][%d]: %.17g vs %.17g", i, c, got, z);
    }
  }
  double loss, acc;
  reference_loss(logits, labels, B, 3, &loss, &acc);
  double got = tf_tensor_get_f64(out[5], 0);
  ck_assert_msg(fabs(got - loss) <= 1e-12 + 1e-12 * loss, "loss %.17g vs "
                "%.17g", got, loss);
  ck_assert_double_eq_tol(tf_tensor_get_f64(out[6], 0), acc, 1e-6);
  tt_free(out, 7);
  tf_tensor_unref(xv);
  tf_tensor_unref(yv);
  tf_session_free(sess);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

static const char *const conv_spec =
    "name: c\n"
    "model:\n"
    "  input: {shape: [6, 6, 2]}\n"
    "  layers:\n"
    "    - {type: conv2d, filters: 3, kernel_size: 3, padding: same,\n"
    "       activation: relu, bias_initializer: {type: constant, value: 0.05}}\n"
    "    - {type: max_pool, pool_size: 2}\n"
    "    - {type: flatten}\n"
    "    - {type: dense, units: 4}\n"
    "  loss: softmax_cross_entropy\n"
    "  metrics: [accuracy]\n"
    "  seed: 3\n" TAIL;

/* numpy: NHWC conv (SAME, stride 1) + bias + relu, 2x2 max pool, flatten,
 * dense, then softmax cross-entropy against one-hot labels, accuracy. */
static const char *const conv_numpy =
    "x, K, b, W, bd = [np.load('in%d.npy' % i).astype(np.float64)\n"
    "                  for i in range(5)]\n"
    "y = np.load('in5.npy').astype(np.int64)\n"
    "B = x.shape[0]\n"
    "xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))\n"
    "c = np.zeros((B, 6, 6, 3))\n"
    "for i in range(6):\n"
    "    for j in range(6):\n"
    "        c[:, i, j, :] = np.tensordot(xp[:, i:i + 3, j:j + 3, :], K,\n"
    "                                     axes=([1, 2, 3], [0, 1, 2]))\n"
    "c = np.maximum(c + b, 0)\n"
    "p = c.reshape(B, 3, 2, 3, 2, 3).max(axis=(2, 4))\n"
    "z = p.reshape(B, -1) @ W + bd\n"
    "onehot = np.eye(4)[y]\n"
    "m = z.max(axis=1, keepdims=True)\n"
    "lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=1))\n"
    "loss = np.mean(lse - (z * onehot).sum(axis=1))\n"
    "acc = np.mean(np.argmax(z, axis=1) == y)\n"
    "np.save('out0.npy', z)\n"
    "np.save('out1.npy', np.array(loss))\n"
    "np.save('out2.npy', np.array(acc))\n";

START_TEST(test_conv_forward_numpy) {
  tt_rng_reseed(tt_seed() ^ 2);
  tf_job_spec *s = spec(conv_spec);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = NULL;
  ck_assert_msg(tf_job_vars_new(s, g, "model/", &v, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_str_eq(tf_job_vars_at(v, 0)->name, "model/conv2d/kernel");
  /* Flat images: reshaped to [batch, 6, 6, 2] as node "images". */
  tf_output x = placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 72));
  tf_output y = placeholder(g, "y", TF_INT32, tf_shape_of(1, -1));
  tf_job_replica r;
  ck_assert_msg(tf_job_replica_build(s, v, g, NULL, NULL, x, y, true, &r,
                                     &st) == TF_OK, "%s", st.msg);
  ck_assert(tf_graph_find(g, "images") != NULL);
  ck_assert(tf_graph_find(g, "labels_one_hot") != NULL);
  ck_assert(tf_graph_find(g, "conv2d/Conv2D") != NULL);
  ck_assert(tf_job_init_op(g, "init_all", &st) != NULL);
  const int B = 5;
  tf_tensor *xv = tt_rand(TF_FLOAT32, tf_shape_of(2, B, 72), -1, 1);
  int64_t labels[5];
  for (int i = 0; i < B; i++) {
    labels[i] = (int64_t)(tt_rand_u64() % 4);
  }
  tf_tensor *yv = tt_tensor_i(TF_INT32, tf_shape_of(1, B), labels);
  tf_session *sess = tf_session_new(g, NULL, &st);
  run(sess, NULL, NULL, 0, NULL, NULL, 0, "init_all");
  const char *feeds[] = {"x", "y"};
  tf_tensor *fv[] = {xv, yv};
  const char *names[] = {"model/conv2d/kernel", "model/conv2d/bias",
                         "model/dense/kernel", "model/dense/bias", "logits",
                         "loss", "accuracy"};
  tf_tensor *out[7];
  run(sess, feeds, fv, 2, names, out, 7, NULL);
  tf_tensor *x4 = NULL;
  tf_shape s4 = tf_shape_of(4, B, 6, 6, 2);
  ck_assert(tf_tensor_from_data(TF_FLOAT32, &s4, xv->data,
                                xv->nbytes, &x4, &st) == TF_OK);
  tf_tensor *in[6] = {x4, out[0], out[1], out[2], out[3], yv};
  tf_tensor *ref[3];
  int n = tt_numpy(conv_numpy, in, 6, ref, 3);
  if (n < 0) {
    fprintf(stderr, "numpy not available: conv reference skipped\n");
  } else {
    ck_assert_int_eq(n, 3);
    for (int i = 0; i < B * 4; i++) {
      double want = tf_tensor_get_f64(ref[0], i);
      double got = tf_tensor_get_f64(out[4], i);
      ck_assert_msg(fabs(got - want) <= 1e-4 + 1e-4 * fabs(want),
                    "logits[%d]: %.9g vs numpy %.9g", i, got, want);
    }
    double want = tf_tensor_get_f64(ref[1], 0);
    ck_assert_double_eq_tol(tf_tensor_get_f64(out[5], 0), want,
                            1e-4 + 1e-4 * want);
    ck_assert_double_eq_tol(tf_tensor_get_f64(out[6], 0),
                            tf_tensor_get_f64(ref[2], 0), 1e-6);
    tt_free(ref, 3);
  }
  tt_free(out, 7);
  tf_tensor_unref(x4);
  tf_tensor_unref(xv);
  tf_tensor_unref(yv);
  tf_session_free(sess);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

START_TEST(test_replicas_share_and_place) {
  tf_job_spec *s = spec(dense_spec);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = NULL;
  ck_assert(tf_job_vars_new(s, g, "", &v, &st) == TF_OK);
  const char *ps = "/job:ps/replica:0/task:0/device:CPU:0";
  for (int i = 0; i < tf_job_vars_count(v); i++) {
    tf_job_vars_set_device(v, i, ps);
  }
  ck_assert_str_eq(tf_node_device(tf_graph_find(g, "dense/kernel")), ps);
  ck_assert_str_eq(tf_node_device(tf_graph_find(g, "dense/kernel/Assign")),
                   ps);
  tf_job_replica r[2];
  for (int k = 0; k < 2; k++) {
    char prefix[32], dev[64], xn[8], yn[8];
    snprintf(prefix, sizeof prefix, "replica_%d/", k);
    snprintf(dev, sizeof dev, "/job:worker/replica:0/task:%d/device:CPU:0", k);
    snprintf(xn, sizeof xn, "x%d", k);
    snprintf(yn, sizeof yn, "y%d", k);
    tf_output x = placeholder(g, xn, TF_FLOAT64, tf_shape_of(2, -1, 4));
    tf_output y = placeholder(g, yn, TF_INT64, tf_shape_of(1, -1));
    int before = tf_graph_num_nodes(g);
    ck_assert_msg(tf_job_replica_build(s, v, g, prefix, dev, x, y, true, &r[k],
                                       &st) == TF_OK, "%s", st.msg);
    for (int i = before; i < tf_graph_num_nodes(g); i++) {
      tf_node *n = tf_graph_node(g, i);
      ck_assert_msg(strncmp(tf_node_name(n), prefix, strlen(prefix)) == 0,
                    "%s", tf_node_name(n));
      ck_assert_str_eq(tf_node_device(n), dev);
    }
    tf_node *mm = tf_graph_find(g, k ? "replica_1/dense/MatMul"
                                     : "replica_0/dense/MatMul");
    ck_assert(mm != NULL);
    ck_assert(tf_node_input(mm, 1).node == tf_graph_find(g, "dense/kernel"));
  }
  ck_assert(r[0].vars == r[1].vars);
  ck_assert_str_eq(tf_node_device(tf_graph_find(g, "dense/kernel")), ps);
  /* The same prefix twice: its names are taken. */
  tf_output x = placeholder(g, "x9", TF_FLOAT64, tf_shape_of(2, -1, 4));
  tf_output y = placeholder(g, "y9", TF_INT64, tf_shape_of(1, -1));
  tf_job_replica again;
  ck_assert_int_eq(tf_job_replica_build(s, v, g, "replica_1/", NULL, x, y,
                                        true, &again, &st),
                   TF_ALREADY_EXISTS);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

/* An lstm layer: kernel, recurrent_kernel and bias on the variables'
 * side, the loop in the replica (on the replica's device), and logits that
 * match a float64 LSTM and dense layer on the fetched variables. */
START_TEST(test_lstm_forward) {
  tt_rng_reseed(tt_seed() ^ 3);
  tf_job_spec *s = spec(
      "name: r\nmodel:\n  input: {shape: [3, 4], dtype: float64}\n  layers:\n"
      "    - {type: lstm, units: 5, bias_initializer: {type: constant, value: 0.2}}\n"
      "    - {type: dense, units: 3}\n"
      "  loss: sparse_softmax_cross_entropy\n  seed: 3\n" TAIL);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = NULL;
  ck_assert_msg(tf_job_vars_new(s, g, NULL, &v, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_job_vars_count(v), 5);
  ck_assert_str_eq(tf_job_vars_at(v, 0)->name, "lstm/kernel");
  ck_assert_str_eq(tf_job_vars_at(v, 1)->name, "lstm/recurrent_kernel");
  ck_assert_str_eq(tf_job_vars_at(v, 2)->name, "lstm/bias");
  ck_assert_int_eq(tf_job_vars_bytes(v, 0), 4 * 20 * 8);
  ck_assert_int_eq(tf_job_vars_bytes(v, 1), 5 * 20 * 8);
  ck_assert_int_eq(tf_job_vars_bytes(v, 2), 20 * 8);
  const char *dev = "/job:worker/replica:0/task:0/device:CPU:0";
  tf_output x = placeholder(g, "x", TF_FLOAT64, tf_shape_of(3, -1, 3, 4));
  tf_output y = placeholder(g, "y", TF_INT32, tf_shape_of(1, -1));
  tf_job_replica r;
  int before = tf_graph_num_nodes(g);
  ck_assert_msg(tf_job_replica_build(s, v, g, "eval/", dev, x, y, false, &r, &st) == TF_OK,
                "%s", st.msg);
  for (int i = before; i < tf_graph_num_nodes(g); i++) {
    ck_assert_str_eq(tf_node_device(tf_graph_node(g, i)), dev);
  }
  ck_assert_int_eq(r.n_vars, 5);
  tf_session *sess = tf_session_new(g, NULL, &st);
  tf_node *init = tf_job_init_op(g, NULL, &st);
  ck_assert_msg(init != NULL, "%s", st.msg);
  run(sess, NULL, NULL, 0, NULL, NULL, 0, "init");
  const int B = 4;
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(3, B, 3, 4), -1, 1);
  int64_t labels[4] = {0, 1, 2, 1};
  tf_tensor *yv = tt_tensor_i(TF_INT32, tf_shape_of(1, B), labels);
  const char *feeds[] = {"x", "y"};
  tf_tensor *fv[] = {xv, yv};
  const char *names[] = {"lstm/kernel", "lstm/recurrent_kernel", "lstm/bias",
                         "dense/kernel", "dense/bias", "eval/logits"};
  tf_tensor *out[6];
  run(sess, feeds, fv, 2, names, out, 6, NULL);
  ck_assert_double_eq(tf_tensor_get_f64(out[2], 0), 0.2);
  double h[4 * 5];
  tt_lstm_ref(xv, out[0], out[1], out[2], B, 3, 4, 5, h);
  for (int i = 0; i < B; i++) {
    for (int k = 0; k < 3; k++) {
      double want = tf_tensor_get_f64(out[4], k);
      for (int j = 0; j < 5; j++) want += h[i * 5 + j] * tf_tensor_get_f64(out[3], j * 3 + k);
      double got = tf_tensor_get_f64(out[5], i * 3 + k);
      ck_assert_msg(fabs(got - want) <= 1e-12, "logits[%d][%d] = %.17g, want %.17g", i, k,
                    got, want);
    }
  }
  for (int i = 0; i < 6; i++) tf_tensor_unref(out[i]);
  tf_tensor_unref(xv);
  tf_tensor_unref(yv);
  tf_session_free(sess);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

START_TEST(test_errors) {
  tf_job_spec *s = spec(dense_spec);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = (tf_job_vars *)1;
  ck_assert_int_eq(tf_job_vars_new(s, g, "model", &v, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(v == NULL);
  ck_assert_str_eq(st.msg, "job variables: prefix 'model' must end in '/'");
  ck_assert(tf_job_vars_new(s, g, NULL, &v, &st) == TF_OK);
  tf_output x32 = placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 4));
  tf_output y = placeholder(g, "y", TF_INT32, tf_shape_of(1, -1));
  tf_job_replica r;
  ck_assert_int_eq(tf_job_replica_build(s, v, g, NULL, NULL, x32, y, true, &r,
                                        &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "m.yaml: the model's images must be float64 "
                   "(model.input.dtype), got float32");
  tf_output x5 = placeholder(g, "x5", TF_FLOAT64, tf_shape_of(2, -1, 5));
  ck_assert_int_eq(tf_job_replica_build(s, v, g, "r/", NULL, x5, y, true, &r,
                                        &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "m.yaml: images of shape [?,5] hold 5 elements "
                   "per example; the model's input needs 4 "
                   "(model.input.shape)");
  tf_output x = placeholder(g, "x4", TF_FLOAT64, tf_shape_of(2, -1, 4));
  tf_output yf = placeholder(g, "yf", TF_FLOAT64, tf_shape_of(1, -1));
  ck_assert_int_eq(tf_job_replica_build(s, v, g, "q/", NULL, x, yf, true, &r,
                                        &st), TF_INVALID_ARGUMENT);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
  s = spec("name: g\ngraph: {file: f, train: t, loss: l}\n"
           "train: {steps: 1}\n");
  g = tf_graph_new();
  ck_assert_int_eq(tf_job_vars_new(s, g, NULL, &v, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "m.yaml: the job has a graph file, not a model "
                   "section, to build");
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

static const char *const train_spec =
    "name: t\n"
    "model:\n"
    "  input: {shape: [6]}\n"
    "  layers:\n"
    "    - {type: dense, units: 16, activation: tanh}\n"
    "    - {type: dense, units: 3}\n"
    "  loss: sparse_softmax_cross_entropy\n"
    "  metrics: [accuracy]\n"
    "  seed: 11\n"
    "input: {format: idx, train: {images: a, labels: b}}\n"
    "optimizer:\n"
    "  name: momentum\n"
    "  learning_rate: 0.2\n"
    "  momentum: 0.9\n"
    "  clip_norm: 10\n"
    "  schedule: {type: exponential_decay, decay_steps: 100,\n"
    "             decay_rate: 0.5}\n"
    "train: {steps: 60}\n";

START_TEST(test_training_lowers_loss) {
  tt_rng_reseed(tt_seed() ^ 3);
  tf_job_spec *s = spec(train_spec);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_job_vars *v = NULL;
  ck_assert(tf_job_vars_new(s, g, NULL, &v, &st) == TF_OK);
  tf_output x = placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 6));
  tf_output y = placeholder(g, "y", TF_INT32, tf_shape_of(1, -1));
  tf_job_replica r;
  ck_assert(tf_job_replica_build(s, v, g, NULL, NULL, x, y, true, &r, &st) ==
            TF_OK);
  tf_output gs;
  ck_assert(tf_global_step(g, &gs, &st) == TF_OK);
  tf_optimizer *o = NULL;
  ck_assert_msg(tf_job_optimizer_new(s, g, gs, &o, &st) == TF_OK, "%s",
                st.msg);
  tf_node *train = tf_job_minimize(s, o, g, r.loss, r.vars, r.n_vars, gs,
                                   "train", &st);
  ck_assert_msg(train != NULL, "%s", st.msg);
  ck_assert(tf_job_init_op(g, NULL, &st) != NULL);
  /* The schedule and the clipping are in the graph. */
  int n_lr = 0, n_clip = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    const char *name = tf_node_name(tf_graph_node(g, i));
    n_lr += strncmp(name, "learning_rate/", 14) == 0;
    n_clip += strncmp(name, "clip_by_global_norm", 19) == 0;
  }
  ck_assert_int_gt(n_lr, 0);
  ck_assert_int_gt(n_clip, 0);
  /* 24 examples whose class is the sign pattern of two coordinates. */
  const int B = 24;
  tf_tensor *xv = tt_rand(TF_FLOAT32, tf_shape_of(2, B, 6), -1, 1);
  int64_t labels[24];
  for (int i = 0; i < B; i++) {
    double a = tf_tensor_get_f64(xv, i * 6);
    double b = tf_tensor_get_f64(xv, i * 6 + 1);
    labels[i] = a > 0 ? (b > 0 ? 0 : 1) : 2;
  }
  tf_tensor *yv = tt_tensor_i(TF_INT32, tf_shape_of(1, B), labels);
  tf_session *sess = tf_session_new(g, NULL, &st);
  run(sess, NULL, NULL, 0, NULL, NULL, 0, "init");
  const char *feeds[] = {"x", "y"};
  tf_tensor *fv[] = {xv, yv};
  const char *names[] = {"loss", "global_step"};
  tf_tensor *out[2];
  double first = 0, last = 0;
  for (int step = 0; step < 60; step++) {
    run(sess, feeds, fv, 2, names, out, 2, "train");
    double l = tf_tensor_get_f64(out[0], 0);
    ck_assert(isfinite(l));
    ck_assert_int_eq(tf_tensor_get_i64(out[1], 0), step);
    first = step == 0 ? l : first;
    last = l;
    tt_free(out, 2);
  }
  ck_assert_msg(last < 0.5 * first, "loss %g -> %g", first, last);
  tf_optimizer_free(o);
  tf_tensor_unref(xv);
  tf_tensor_unref(yv);
  tf_session_free(sess);
  tf_job_vars_free(v);
  tf_graph_free(g);
  tf_job_spec_free(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("job_model");
  TCase *tc = tcase_create("job_model");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_dense_forward);
  tcase_add_test(tc, test_conv_forward_numpy);
  tcase_add_test(tc, test_replicas_share_and_place);
  tcase_add_test(tc, test_lstm_forward);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_training_lowers_loss);
  suite_add_tcase(s, tc);
  return s;
}
