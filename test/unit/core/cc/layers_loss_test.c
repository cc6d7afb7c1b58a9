/* layers_loss_test.c: losses and metrics (lib/core/cc/layers_loss.c) through
 * tf_session_run: softmax cross-entropy with one-hot and integer labels
 * against a plain float64 log-sum-exp, accuracy on hand-made cases, the L2
 * regularizer against the fetched variables, and argument errors. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"

/* mean_r(logsumexp(z_r) - sum_c y_rc z_rc) in float64. */
static double xent_ref(const tf_tensor *z, const double *y, int rows, int cols) {
  double total = 0;
  for (int r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0, dot = 0;
    for (int c = 0; c < cols; c++) m = fmax(m, lt_at(z, r * cols + c));
    for (int c = 0; c < cols; c++) s += exp(lt_at(z, r * cols + c) - m);
    for (int c = 0; c < cols; c++) dot += y[r * cols + c] * lt_at(z, r * cols + c);
    total += m + log(s) - dot;
  }
  return total / rows;
}

/* Both losses on the same logits [6, 5] (logits spread over [-4, 4]) and
 * random labels, one-hot and as int32/int64 indices, float32 and float64:
 * the scalar equals the plain mean (rtol 1e-12 float64, 1e-6 float32),
 * and the two forms agree. */
START_TEST(test_xent) {
  for (int d = 0; d < 2; d++) {
    for (int it = 0; it < 2; it++) {
      tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
      tf_dtype lt = it ? TF_INT64 : TF_INT32;
      tf_graph *g = tf_graph_new();
      tf_layers *l = tf_layers_new(g, 1);
      tf_status st;
      tf_output z = {tt_placeholder(g, "z", dt, tf_shape_of(2, -1, 5)), 0};
      tf_output oh = {tt_placeholder(g, "oh", dt, tf_shape_of(2, -1, 5)), 0};
      tf_output ix = {tt_placeholder(g, "ix", lt, tf_shape_of(1, -1)), 0};
      tf_output y[2];
      LT_OK(tf_layer_softmax_cross_entropy(l, z, oh, NULL, &y[0], &st));
      LT_OK(tf_layer_sparse_softmax_cross_entropy(l, z, ix, NULL, &y[1], &st));
      ck_assert_str_eq(tf_node_name(y[0].node), "softmax_cross_entropy_loss/Mean");
      ck_assert_int_eq(tf_node_output_shape(y[1].node, 0)->rank, 0);
      int64_t idx[6];
      double onehot[30] = {0};
      for (int r = 0; r < 6; r++) {
        idx[r] = (int64_t)(tt_rand_u64() % 5);
        onehot[r * 5 + idx[r]] = 1;
      }
      tf_tensor *feeds[3] = {tt_rand(dt, tf_shape_of(2, 6, 5), -4, 4),
                             tt_tensor(dt, tf_shape_of(2, 6, 5), onehot),
                             tt_tensor_i(lt, tf_shape_of(1, 6), idx)};
      const char *fn[] = {"z", "oh", "ix"};
      tf_tensor *out[2];
      lt_run_once(g, l, fn, feeds, 3, y, out, 2);
      double want = xent_ref(feeds[0], onehot, 6, 5), tol = d ? 1e-12 : 1e-6;
      for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(out[k]->dtype, dt);
        ck_assert_msg(fabs(lt_at(out[k], 0) - want) <= tol * want,
                      "loss %d: %.12g want %.12g", k, lt_at(out[k], 0), want);
      }
      tt_free(out, 2);
      tt_free(feeds, 3);
      tf_layers_free(l);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* Soft (non one-hot) label rows are honoured too. */
START_TEST(test_xent_soft_labels) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output z = {tt_placeholder(g, "z", TF_FLOAT64, tf_shape_of(2, 3, 4)), 0};
  tf_output p = {tt_placeholder(g, "p", TF_FLOAT64, tf_shape_of(2, 3, 4)), 0};
  tf_output y;
  LT_OK(tf_layer_softmax_cross_entropy(l, z, p, "xent", &y, &st));
  double probs[12];
  for (int r = 0; r < 3; r++) {
    double s = 0;
    for (int c = 0; c < 4; c++) s += probs[r * 4 + c] = tt_rand_uniform(0.1, 1);
    for (int c = 0; c < 4; c++) probs[r * 4 + c] /= s;
  }
  tf_tensor *feeds[2] = {tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 4), -3, 3),
                         tt_tensor(TF_FLOAT64, tf_shape_of(2, 3, 4), probs)};
  const char *fn[] = {"z", "p"};
  tf_tensor *out;
  lt_run_once(g, l, fn, feeds, 2, &y, &out, 1);
  double want = xent_ref(feeds[0], probs, 3, 4);
  ck_assert_msg(fabs(lt_at(out, 0) - want) <= 1e-12 * want, "%.15g vs %.15g",
                lt_at(out, 0), want);
  tf_tensor_unref(out);
  tt_free(feeds, 2);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Accuracy on a hand-made batch of 4 (3 right): 0.75 with int32 and int64
 * indices and with one-hot float labels; float32 scalar. */
START_TEST(test_accuracy) {
  const double logits[12] = {0.1, 2.0, -1.0,  /* 1 */
                             3.0, 0.0, 0.5,   /* 0 */
                             -2.0, -1.0, -0.5, /* 2 */
                             0.2, 0.3, 0.1};  /* 1 */
  const int64_t labels[4] = {1, 0, 0, 1};
  double onehot[12] = {0};
  for (int r = 0; r < 4; r++) onehot[r * 3 + labels[r]] = 1;
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output z = {tt_placeholder(g, "z", TF_FLOAT32, tf_shape_of(2, -1, 3)), 0};
  tf_output i32 = {tt_placeholder(g, "i32", TF_INT32, tf_shape_of(1, -1)), 0};
  tf_output i64 = {tt_placeholder(g, "i64", TF_INT64, tf_shape_of(1, -1)), 0};
  tf_output oh = {tt_placeholder(g, "oh", TF_FLOAT32, tf_shape_of(2, -1, 3)), 0};
  tf_output a[3];
  LT_OK(tf_layer_accuracy(l, z, i32, NULL, &a[0], &st));
  LT_OK(tf_layer_accuracy(l, z, i64, NULL, &a[1], &st));
  LT_OK(tf_layer_accuracy(l, z, oh, "acc", &a[2], &st));
  ck_assert_str_eq(tf_node_name(a[0].node), "accuracy/Mean");
  ck_assert_str_eq(tf_node_name(a[1].node), "accuracy_1/Mean");
  tf_tensor *feeds[4] = {tt_tensor(TF_FLOAT32, tf_shape_of(2, 4, 3), logits),
                         tt_tensor_i(TF_INT32, tf_shape_of(1, 4), labels),
                         tt_tensor_i(TF_INT64, tf_shape_of(1, 4), labels),
                         tt_tensor(TF_FLOAT32, tf_shape_of(2, 4, 3), onehot)};
  const char *fn[] = {"z", "i32", "i64", "oh"};
  tf_tensor *out[3];
  lt_run_once(g, l, fn, feeds, 4, a, out, 3);
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(out[k]->dtype, TF_FLOAT32);
    ck_assert_int_eq(out[k]->shape.rank, 0);
    ck_assert_double_eq(lt_at(out[k], 0), 0.75);
  }
  tt_free(out, 3);
  tt_free(feeds, 4);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* The L2 regularizer over the context's kernels (not the biases) and over
 * an explicit list: scale * sum(v^2) / 2 from the fetched values. */
START_TEST(test_l2_regularizer) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(2, -1, 6)), 0}, h;
  tf_initializer bi = tf_init_constant(0.25);
  LT_OK(tf_layer_dense(l, x, 5, TF_ACT_RELU, true, NULL, &bi, NULL, &h, &st));
  LT_OK(tf_layer_dense(l, h, 3, TF_ACT_NONE, true, NULL, &bi, NULL, &h, &st));
  tf_output r[2];
  LT_OK(tf_layer_l2_regularizer(l, NULL, 0, 0.01, NULL, &r[0], &st));
  tf_output bias = tf_layers_var(l, 1)->var;
  LT_OK(tf_layer_l2_regularizer(l, &bias, 1, 2.0, "one", &r[1], &st));
  tf_output f[4] = {r[0], r[1], tf_layers_var(l, 0)->var, tf_layers_var(l, 2)->var};
  tf_tensor *out[4];
  lt_run_once(g, l, NULL, NULL, 0, f, out, 4);
  double ss = 0;
  for (int k = 2; k < 4; k++) {
    for (int64_t i = 0; i < out[k]->n; i++) ss += lt_at(out[k], i) * lt_at(out[k], i);
  }
  ck_assert_msg(fabs(lt_at(out[0], 0) - 0.01 * ss / 2) <= 1e-14, "%.17g vs %.17g",
                lt_at(out[0], 0), 0.01 * ss / 2);
  ck_assert_double_eq_tol(lt_at(out[1], 0), 2.0 * 5 * 0.0625 / 2, 1e-14);
  tt_free(out, 4);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* tf_gradients through a layers MLP with respect to the context's
 * trainable variables (their ref outputs): every variable gets a gradient
 * of its shape, and the last bias's equals the plain mean over rows of
 * softmax(logits) - onehot(labels). */
START_TEST(test_gradients_through_layers) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(2, -1, 6)), 0};
  tf_output lab = {tt_placeholder(g, "lab", TF_INT32, tf_shape_of(1, -1)), 0};
  tf_output h, z, loss;
  LT_OK(tf_layer_dense(l, x, 5, TF_ACT_TANH, true, NULL, NULL, NULL, &h, &st));
  LT_OK(tf_layer_dense(l, h, 3, TF_ACT_NONE, true, NULL, NULL, NULL, &z, &st));
  LT_OK(tf_layer_sparse_softmax_cross_entropy(l, z, lab, NULL, &loss, &st));
  tf_output vars[4], grads[4];
  ck_assert_int_eq(tf_layers_trainable(l, vars, 4), 4);
  LT_OK(tf_gradients(g, &loss, 1, vars, 4, NULL, grads, &st));
  const int64_t labels[4] = {2, 0, 1, 2};
  tf_tensor *feeds[2] = {tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 6), -1, 1),
                         tt_tensor_i(TF_INT32, tf_shape_of(1, 4), labels)};
  const char *fn[] = {"x", "lab"};
  tf_output f[5] = {grads[0], grads[1], grads[2], grads[3], z};
  tf_tensor *out[5];
  lt_run_once(g, l, fn, feeds, 2, f, out, 5);
  for (int i = 0; i < 4; i++) {
    ck_assert_msg(tf_shape_equal(&out[i]->shape, &tf_layers_var(l, i)->shape),
                  "gradient %d has the wrong shape", i);
  }
  double want[3] = {0};
  for (int r = 0; r < 4; r++) {
    double p[3], s = 0;
    for (int c = 0; c < 3; c++) s += p[c] = exp(lt_at(out[4], r * 3 + c));
    for (int c = 0; c < 3; c++) want[c] += (p[c] / s - (c == labels[r])) / 4;
  }
  for (int c = 0; c < 3; c++) {
    ck_assert_double_eq_tol(lt_at(out[3], c), want[c], 1e-12);
  }
  tt_free(out, 5);
  tt_free(feeds, 2);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* The same through a small CNN with run-time dropout (conv 3x3x4 SAME +
 * ReLU, maxpool 2, dropout 0.5, flatten, dense 3): the random mask's
 * nodes (Shape, RandomUniform, GreaterEqual) do not block the walk, every
 * variable gets a gradient of its shape, and with dropout off the last
 * bias's gradient is the plain mean of softmax - onehot. */
START_TEST(test_gradients_through_cnn) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(4, -1, 8, 8, 1)), 0};
  tf_output lab = {tt_placeholder(g, "lab", TF_INT64, tf_shape_of(1, -1)), 0};
  tf_output tr = {tt_placeholder(g, "training", TF_BOOL, tf_shape_scalar()), 0};
  tf_output h, z, loss;
  LT_OK(tf_layer_conv2d(l, x, 4, 3, 3, 1, 1, "SAME", TF_ACT_RELU, true, NULL,
                        NULL, NULL, &h, &st));
  LT_OK(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st));
  LT_OK(tf_layer_dropout(l, h, 0.5, tr, true, 0, NULL, &h, &st));
  LT_OK(tf_layer_flatten(l, h, NULL, &h, &st));
  LT_OK(tf_layer_dense(l, h, 3, TF_ACT_NONE, true, NULL, NULL, NULL, &z, &st));
  LT_OK(tf_layer_sparse_softmax_cross_entropy(l, z, lab, NULL, &loss, &st));
  tf_output vars[4], grads[4];
  ck_assert_int_eq(tf_layers_trainable(l, vars, 4), 4);
  LT_OK(tf_gradients(g, &loss, 1, vars, 4, NULL, grads, &st));
  const int64_t labels[2] = {1, 2};
  tf_tensor *feeds[3] = {tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 8, 8, 1), -1, 1),
                         tt_tensor_i(TF_INT64, tf_shape_of(1, 2), labels),
                         tf_tensor_scalar_bool(false)};
  const char *fn[] = {"x", "lab", "training"};
  tf_output f[5] = {grads[0], grads[1], grads[2], grads[3], z};
  tf_tensor *out[5];
  lt_run_once(g, l, fn, feeds, 3, f, out, 5);
  for (int i = 0; i < 4; i++) {
    ck_assert_msg(tf_shape_equal(&out[i]->shape, &tf_layers_var(l, i)->shape),
                  "gradient %d has the wrong shape", i);
  }
  for (int c = 0; c < 3; c++) {
    double want = 0;
    for (int r = 0; r < 2; r++) {
      double s = 0;
      for (int k = 0; k < 3; k++) s += exp(lt_at(out[4], r * 3 + k));
      want += (exp(lt_at(out[4], r * 3 + c)) / s - (c == labels[r])) / 2;
    }
    ck_assert_double_eq_tol(lt_at(out[3], c), want, 1e-6);
  }
  tt_free(out, 5);
  tt_free(feeds, 3);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Bad logits, labels and variable lists: INVALID_ARGUMENT naming the
 * problem, no node added. */
START_TEST(test_loss_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output z = {tt_placeholder(g, "z", TF_FLOAT32, tf_shape_of(2, 4, 3)), 0};
  tf_output z3 = {tt_placeholder(g, "z3", TF_FLOAT32, tf_shape_of(3, 4, 3, 1)), 0};
  tf_output d = {tt_placeholder(g, "d", TF_FLOAT64, tf_shape_of(2, 4, 3)), 0};
  tf_output i2 = {tt_placeholder(g, "i2", TF_INT32, tf_shape_of(2, 4, 1)), 0};
  tf_output f1 = {tt_placeholder(g, "f1", TF_FLOAT32, tf_shape_of(1, 4)), 0};
  tf_output y;
  int n = tf_graph_num_nodes(g);
#define ERR(call, m)                                                           \
  ck_assert_msg((call) == TF_INVALID_ARGUMENT && strstr(st.msg, m) != NULL,    \
                "%s: %s", #call, st.msg);                                      \
  ck_assert_ptr_null(y.node)
  ERR(tf_layer_softmax_cross_entropy(l, z3, z, NULL, &y, &st),
      "logits must be [batch, classes]");
  ERR(tf_layer_softmax_cross_entropy(l, z, d, NULL, &y, &st),
      "of the logits' dtype float32");
  ERR(tf_layer_sparse_softmax_cross_entropy(l, z, i2, NULL, &y, &st),
      "class indices [batch]");
  ERR(tf_layer_sparse_softmax_cross_entropy(l, i2, i2, NULL, &y, &st),
      "float32 or float64");
  ERR(tf_layer_accuracy(l, z, f1, NULL, &y, &st),
      "labels must be int32/int64 [batch]");
  ERR(tf_layer_l2_regularizer(l, NULL, 0, 0.1, NULL, &y, &st), "no variables");
  ERR(tf_layer_l2_regularizer(l, (tf_output[]){z, d}, 2, 0.1, NULL, &y, &st),
      "'d' is float64");
#undef ERR
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_loss");
  TCase *tc = tcase_create("layers_loss");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_xent);
  tcase_add_test(tc, test_xent_soft_labels);
  tcase_add_test(tc, test_accuracy);
  tcase_add_test(tc, test_l2_regularizer);
  tcase_add_test(tc, test_gradients_through_layers);
  tcase_add_test(tc, test_gradients_through_cnn);
  tcase_add_test(tc, test_loss_errors);
  suite_add_tcase(s, tc);
  return s;
}
