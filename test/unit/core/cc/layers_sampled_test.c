/* layers_sampled_test.c: tf_layer_sampled_softmax_loss.
 *
 * - Loss: with fixed sampled values (candidates with accidental hits, a
 *   label repeated in a row) the per-example loss equals a float64
 *   recomputation of TF's formula here (rtol 1e-12 in float64, 1e-5 in
 *   float32), with and without remove_accidental_hits.
 * - Gradients with respect to inputs, weights and biases against central
 *   finite differences (tt_grad_check: atol 1e-7, rtol 1e-6); with
 *   variables, tf_gradients_sparse keeps the weights' and biases' gradients
 *   sparse (indices = [sampled..., labels...]) and, densified, they equal
 *   tf_gradients' dense ones (1e-12).
 * - With the sampler in the graph: the seeds come from the context, steps
 *   draw afresh, and a toy problem trained on the sampled loss with SGD
 *   (sparse updates) cuts the full softmax loss below 60% of its start.
 * - Bad arguments: INVALID_ARGUMENT naming them, no node added. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"
#include "tf/train.h"

enum { B = 4, T = 2, S = 5, C = 12, D = 3 };

/* Labels with an accidental hit on candidates 1 and 5, 5 twice in row 2. */
static const int64_t k_labels[B * T] = {1, 3, 4, 9, 5, 5, 11, 0};
static const int64_t k_sampled[S] = {2, 1, 7, 5, 10};

static tf_output cnst(tf_graph *g, tf_tensor *t) {
  return (tf_output){tt_const(g, NULL, t), 0};
}

/* Fixed sampled values: candidates and expected counts in (0.05, 1). */
static void sampled_values(tf_graph *g, tf_output sv[3]) {
  sv[0] = cnst(g, tt_tensor_i(TF_INT64, tf_shape_of(1, S), k_sampled));
  sv[1] = cnst(g, tt_rand(TF_FLOAT32, tf_shape_of(2, B, T), 0.05, 1));
  sv[2] = cnst(g, tt_rand(TF_FLOAT32, tf_shape_of(1, S), 0.05, 1));
}

/* TF's loss per row in float64 from x [B, D], w [C, D], b [C] and the
 * expected counts tq [B, T], sq [S]; hits excluded when remove. */
static void loss_ref(const tf_tensor *x, const tf_tensor *w, const tf_tensor *b,
                     const tf_tensor *tq, const tf_tensor *sq, bool remove,
                     double *out) {
  for (int r = 0; r < B; r++) {
    double lg[T + S];
    bool skip[T + S] = {0};
    for (int j = 0; j < T + S; j++) {
      int64_t c = j < T ? k_labels[r * T + j] : k_sampled[j - T];
      double v = lt_at(b, c);
      for (int d = 0; d < D; d++) {
        v += lt_at(x, r * D + d) * lt_at(w, c * D + d);
      }
      lg[j] = v - log(j < T ? lt_at(tq, r * T + j) : lt_at(sq, j - T));
      for (int t = 0; remove && j >= T && t < T; t++) {
        skip[j] = skip[j] || k_labels[r * T + t] == c;
      }
    }
    double mx = -INFINITY, z = 0, ce = 0;
    for (int j = 0; j < T + S; j++) mx = skip[j] ? mx : fmax(mx, lg[j]);
    for (int j = 0; j < T + S; j++) z += skip[j] ? 0 : exp(lg[j] - mx);
    for (int t = 0; t < T; t++) ce -= (lg[t] - mx - log(z)) / T;
    out[r] = ce;
  }
}

static void check_loss(tf_dtype dt, bool remove, double rtol) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 0);
  tf_status st;
  tf_tensor *x = tt_rand(dt, tf_shape_of(2, B, D), -1, 1);
  tf_tensor *w = tt_rand(dt, tf_shape_of(2, C, D), -1, 1);
  tf_tensor *b = tt_rand(dt, tf_shape_of(1, C), -1, 1);
  tf_output sv[3], loss;
  sampled_values(g, sv);
  tf_output lab = cnst(g, tt_tensor_i(TF_INT32, tf_shape_of(2, B, T), k_labels));
  LT_OK(tf_layer_sampled_softmax_loss(
      l, cnst(g, tf_tensor_ref(w)), cnst(g, tf_tensor_ref(b)), lab,
      cnst(g, tf_tensor_ref(x)), S, C, T, sv, remove, 0, NULL, &loss, &st));
  ck_assert_str_eq(tf_node_name(loss.node),
                   "sampled_softmax_loss/SoftmaxCrossEntropyWithLogits");
  tf_tensor *out[3];
  lt_run_once(g, NULL, NULL, NULL, 0, (tf_output[]){loss, sv[1], sv[2]}, out,
              3);
  tt_assert_shape(out[0], 1, B);
  ck_assert_int_eq(out[0]->dtype, dt);
  double want[B];
  loss_ref(x, w, b, out[1], out[2], remove, want);
  for (int r = 0; r < B; r++) {
    double v = lt_at(out[0], r);
    ck_assert_msg(fabs(v - want[r]) <= rtol * fabs(want[r]), "%s remove=%d "
                  "row %d: %.15g, want %.15g", tf_dtype_name(dt), remove, r, v,
                  want[r]);
  }
  tt_free(out, 3);
  tt_free((tf_tensor *[]){x, w, b}, 3);
  tf_layers_free(l);
  tf_graph_free(g);
}

START_TEST(test_loss_reference) {
  tt_rng_reseed(tt_seed() ^ 31);
  check_loss(TF_FLOAT64, true, 1e-12);
  check_loss(TF_FLOAT64, false, 1e-12);
  check_loss(TF_FLOAT32, true, 1e-5);
  check_loss(TF_FLOAT32, false, 1e-5);
}
END_TEST

/* y = the per-example loss on in = {x, w, b} with the fixed sample. */
static tf_output build_loss(tf_graph *g, const tf_output *in, int n_in,
                            void *arg) {
  tf_layers *l = tf_layers_new(g, 0);
  tf_status st;
  tf_output sv[3], loss;
  sampled_values(g, sv);
  tf_output lab = cnst(g, tt_tensor_i(TF_INT64, tf_shape_of(2, B, T), k_labels));
  LT_OK(tf_layer_sampled_softmax_loss(l, in[1], in[2], lab, in[0], S, C, T,
                                      sv, *(bool *)arg, 0, NULL, &loss, &st));
  tf_layers_free(l);
  return loss;
}

START_TEST(test_gradients_fd) {
  tt_rng_reseed(tt_seed() ^ 37);
  for (int remove = 0; remove < 2; remove++) {
    bool r = remove;
    tf_tensor *in[3] = {tt_rand(TF_FLOAT64, tf_shape_of(2, B, D), -1, 1),
                        tt_rand(TF_FLOAT64, tf_shape_of(2, C, D), -1, 1),
                        tt_rand(TF_FLOAT64, tf_shape_of(1, C), -1, 1)};
    tt_grad_check(build_loss, &r, in, 3, NULL, 1e-7, 1e-6);
    tt_free(in, 3);
  }
}
END_TEST

/* Scatter-adds sparse rows (values [n, row], indices [n]) into dense [rows,
 * row]. */
static void densify(const tf_tensor *values, const tf_tensor *indices,
                    int64_t row, double *dense) {
  for (int64_t i = 0; i < indices->n; i++) {
    int64_t r = tf_tensor_get_i64(indices, i);
    for (int64_t k = 0; k < row; k++) {
      dense[r * row + k] += lt_at(values, i * row + k);
    }
  }
}

START_TEST(test_sparse_gradients) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 5);
  tf_status st;
  tf_initializer gl = tf_init_glorot_uniform(0);
  tf_output w, b, sv[3], loss;
  LT_OK(tf_layers_variable(l, "w", tf_shape_of(2, C, D), TF_FLOAT64, &gl, true,
                           &w, &st));
  LT_OK(tf_layers_variable(l, "b", tf_shape_of(1, C), TF_FLOAT64, &gl, true,
                           &b, &st));
  sampled_values(g, sv);
  tf_output x = cnst(g, tt_rand(TF_FLOAT64, tf_shape_of(2, B, D), -1, 1));
  tf_output lab = cnst(g, tt_tensor_i(TF_INT64, tf_shape_of(2, B, T), k_labels));
  LT_OK(tf_layer_sampled_softmax_loss(l, w, b, lab, x, S, C, T, sv, true, 0,
                                      NULL, &loss, &st));
  tf_output vars[2] = {w, b}, dense[2];
  tf_grad sg[2];
  LT_OK(tf_gradients_sparse(g, &loss, 1, vars, 2, NULL, sg, &st));
  ck_assert_msg(tf_grad_is_sparse(&sg[0]) && tf_grad_is_sparse(&sg[1]),
                "the weights' or biases' gradient was densified");
  LT_OK(tf_gradients(g, &loss, 1, vars, 2, NULL, dense, &st));
  tf_tensor *o[6];
  lt_run_once(g, l, NULL, NULL, 0,
              (tf_output[]){sg[0].values, sg[0].indices, sg[1].values,
                            sg[1].indices, dense[0], dense[1]}, o, 6);
  tt_assert_shape(o[0], 2, S + B * T, D);
  for (int i = 0; i < S + B * T; i++) {
    int64_t want = i < S ? k_sampled[i] : k_labels[i - S];
    ck_assert_int_eq(tf_tensor_get_i64(o[1], i), want);
  }
  for (int v = 0; v < 2; v++) {
    int64_t row = v == 0 ? D : 1;
    double d[C * D] = {0};
    densify(o[2 * v], o[2 * v + 1], row, d);
    for (int64_t i = 0; i < C * row; i++) {
      ck_assert_msg(fabs(d[i] - lt_at(o[4 + v], i)) <= 1e-12, "var %d elem %lld:"
                    " %.15g vs %.15g", v, (long long)i, d[i], lt_at(o[4 + v], i));
    }
  }
  tt_free(o, 6);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* The sampler in the graph: seeded from the context, a fresh sample (so
 * another loss) each step, labels checked when it runs. */
START_TEST(test_with_sampler) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 7);
  tf_status st;
  tf_node *lab = tt_placeholder(g, "lab", TF_INT64, tf_shape_of(2, -1, T));
  tf_output x = cnst(g, tt_rand(TF_FLOAT32, tf_shape_of(2, B, D), -1, 1));
  tf_output w = cnst(g, tt_rand(TF_FLOAT32, tf_shape_of(2, 1000, D), -1, 1));
  tf_output b = cnst(g, tt_rand(TF_FLOAT32, tf_shape_of(1, 1000), -1, 1));
  tf_output loss;
  LT_OK(tf_layer_sampled_softmax_loss(l, w, b, (tf_output){lab, 0}, x, 20,
                                      1000, T, NULL, true, 0, NULL, &loss,
                                      &st));
  tf_node *smp = tf_graph_find(g, "sampled_softmax_loss/"
                                  "LogUniformCandidateSampler");
  ck_assert_ptr_nonnull(smp);
  int64_t s1 = 0, s2 = 0;
  LT_OK(tf_node_attr_get_int(smp, "seed", &s1, &st));
  LT_OK(tf_node_attr_get_int(smp, "seed2", &s2, &st));
  ck_assert(s1 == 7 && s2 == 1);
  tf_tensor *lt = tt_tensor_i(TF_INT64, tf_shape_of(2, B, T), k_labels);
  const char *fn[] = {"lab"};
  tf_session *s = lt_session(g, NULL);
  tf_tensor *o[2];
  lt_run(s, fn, &lt, 1, &loss, &o[0], 1);
  lt_run(s, fn, &lt, 1, &loss, &o[1], 1);
  tt_assert_shape(o[0], 1, B);
  ck_assert_msg(!tf_tensor_equal(o[0], o[1]), "two steps gave the same loss");
  ((int64_t *)lt->data)[0] = 1000;
  char name[64];
  const char *fetch = lt_name(loss, name, sizeof name);
  tf_tensor *bad = NULL;
  ck_assert(tf_session_run(s, NULL, fn, &lt, 1, &fetch, &bad, 1, NULL, 0,
                           NULL, &st) == TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(bad);
  ck_assert_msg(strstr(st.msg, "true_classes[0, 0] = 1000"), "%s", st.msg);
  tf_session_free(s);
  tt_free(o, 2);
  tf_tensor_unref(lt);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Mean over axis 0 of y. */
static tf_output mean0(tf_graph *g, tf_output y) {
  tf_output ax = cnst(g, tf_tensor_vec_i32(1, (int32_t[]){0}));
  return (tf_output){tt_node(g, "Mean", NULL, (tf_output[]){y, ax}, 2, NULL,
                             0), 0};
}

/* Labels argmax_c(teacher[c] . x[i]) of a random linear teacher. */
static void teacher_labels(const tf_tensor *x, int64_t n, int64_t classes,
                           int64_t dim, int64_t *labels) {
  tf_tensor *wt = tt_rand(TF_FLOAT64, tf_shape_of(2, classes, dim), -2, 2);
  for (int64_t i = 0; i < n; i++) {
    double best = -INFINITY;
    for (int64_t c = 0; c < classes; c++) {
      double v = 0;
      for (int64_t d = 0; d < dim; d++) {
        v += lt_at(wt, c * dim + d) * lt_at(x, i * dim + d);
      }
      labels[i] = v > best ? c : labels[i];
      best = fmax(best, v);
    }
  }
  tf_tensor_unref(wt);
}

/* Training on the sampled loss (SGD, sparse row updates) lowers the full
 * softmax loss of a 40-class linear problem below 60% of its start. */
START_TEST(test_training) {
  enum { N = 256, K = 40, DIM = 6, STEPS = 300 };
  tt_rng_reseed(tt_seed() ^ 41);
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 3);
  tf_status st;
  tf_tensor *xt = tt_rand(TF_FLOAT32, tf_shape_of(2, N, DIM), -1, 1);
  int64_t labels[N];
  teacher_labels(xt, N, K, DIM, labels);
  tf_output x = cnst(g, xt), w, b, sl, full;
  LT_OK(tf_layers_variable(l, "w", tf_shape_of(2, K, DIM), TF_FLOAT32, NULL,
                           true, &w, &st));
  LT_OK(tf_layers_variable(l, "b", tf_shape_of(1, K), TF_FLOAT32, NULL, true,
                           &b, &st));
  tf_output lab2 = cnst(g, tt_tensor_i(TF_INT64, tf_shape_of(2, N, 1), labels));
  tf_output lab1 = cnst(g, tt_tensor_i(TF_INT64, tf_shape_of(1, N), labels));
  LT_OK(tf_layer_sampled_softmax_loss(l, w, b, lab2, x, 8, K, 1, NULL, true, 0,
                                      NULL, &sl, &st));
  tf_attr_kv tb[] = {{"transpose_b", tf_attr_bool(true)}};
  tf_output mm = {tt_node(g, "MatMul", NULL, (tf_output[]){x, w}, 2, tb, 1), 0};
  tf_output logits = {tt_node(g, "Add", NULL, (tf_output[]){mm, b}, 2, NULL, 0),
                      0};
  LT_OK(tf_layer_sparse_softmax_cross_entropy(l, logits, lab1, NULL, &full,
                                              &st));
  tf_optimizer *opt = tf_optimizer_gradient_descent(2.0);
  tf_node *train = tf_optimizer_minimize(opt, g, mean0(g, sl),
                                         (tf_output[]){w, b}, 2,
                                         (tf_output){NULL, 0}, NULL, &st);
  ck_assert_msg(train != NULL, "%s", st.msg);
  tf_session *s = lt_session(g, l);
  tf_tensor *before, *after;
  lt_run(s, NULL, NULL, 0, &full, &before, 1);
  const char *t[] = {tf_node_name(train)};
  for (int i = 0; i < STEPS; i++) {
    ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1,
                                 NULL, &st) == TF_OK, "%s", st.msg);
  }
  lt_run(s, NULL, NULL, 0, &full, &after, 1);
  double l0 = lt_at(before, 0), l1 = lt_at(after, 0);
  ck_assert_double_eq_tol(l0, log((double)K), 1e-5); /* zero weights */
  ck_assert_msg(l1 < 0.6 * l0, "full softmax loss %.4f -> %.4f", l0, l1);
  tt_free((tf_tensor *[]){before, after}, 2);
  tf_session_free(s);
  tf_optimizer_free(opt);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
#define PH(name, dt, ...)                                                      \
  tf_output name = {tt_placeholder(g, #name, dt, tf_shape_of(__VA_ARGS__)), 0}
  PH(x, TF_FLOAT32, 2, B, D);
  PH(x4, TF_FLOAT32, 2, B, D + 1);
  PH(xi, TF_INT32, 2, B, D);
  PH(w, TF_FLOAT32, 2, C, D);
  PH(wu, TF_FLOAT32, 2, C, -1);
  PH(wd, TF_FLOAT64, 2, C, D);
  PH(w3, TF_FLOAT32, 3, C, D, 1);
  PH(b, TF_FLOAT32, 1, C);
  PH(b2, TF_FLOAT32, 1, C + 1);
  PH(lab, TF_INT64, 2, B, T);
  PH(labf, TF_FLOAT32, 2, B, T);
  PH(lab3, TF_INT64, 2, B, 3);
  PH(s32, TF_INT32, 1, S);
  PH(tq, TF_FLOAT32, 2, B, T);
  PH(sq, TF_FLOAT32, 1, S);
#undef PH
  tf_output y, none = {NULL, 0}, bad_sv[3] = {s32, tq, sq};
  int n = tf_graph_num_nodes(g);
#define CASE(wt, bs, lb, in, ns, nc, nt, sv, m)                                \
  ck_assert_msg(tf_layer_sampled_softmax_loss(l, wt, bs, lb, in, ns, nc, nt,   \
                                              sv, true, 0, NULL, &y, &st) ==   \
                        TF_INVALID_ARGUMENT &&                                 \
                    strstr(st.msg, m) != NULL &&                               \
                    strstr(st.msg, "sampled_softmax_loss") != NULL,            \
                "%s: %s", m, st.msg);                                          \
  ck_assert_ptr_null(y.node)
  CASE(w, b, lab, x, 0, C, T, NULL, "1 <= num_sampled <= num_classes");
  CASE(w, b, lab, x, C + 1, C, T, NULL, "num_sampled 13, num_classes 12");
  CASE(w, b, lab, x, S, C, 0, NULL, "num_true >= 1");
  CASE(w, b, lab, xi, S, C, T, NULL, "float32 or float64, got int32");
  CASE(w, b, lab, none, S, C, T, NULL, "NULL node");
  CASE(wd, b, lab, x, S, C, T, NULL, "weights must be");
  CASE(w3, b, lab, x, S, C, T, NULL, "weights must be");
  CASE(wu, b, lab, x, S, C, T, NULL, "dim in [1, 2^31)");
  CASE(w, b, lab, x, S, C + 1, T, NULL, "weights must be [num_classes, dim]");
  CASE(w, b2, lab, x, S, C, T, NULL, "biases must be [num_classes]");
  CASE(w, b, lab, x4, S, C, T, NULL, "inputs must be [batch, dim]");
  CASE(w, b, labf, x, S, C, T, NULL, "labels must be int32/int64");
  CASE(w, b, lab3, x, S, C, T, NULL, "labels must be");
  CASE(w, none, lab, x, S, C, T, NULL, "biases is a NULL node");
  CASE(w, b, lab, x, S, C, T, bad_sv, "sampled_values[0] must be int64");
#undef CASE
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_sampled");
  TCase *tc = tcase_create("sampled_softmax");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_loss_reference);
  tcase_add_test(tc, test_gradients_fd);
  tcase_add_test(tc, test_sparse_gradients);
  tcase_add_test(tc, test_with_sampler);
  tcase_add_test(tc, test_training);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
