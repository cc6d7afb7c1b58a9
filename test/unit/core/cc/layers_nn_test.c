/* layers_nn_test.c: the layers (lib/core/cc/layers_nn.c) run through
 * tf_session_run after init and compared with plain float64
 * recomputations from the fetched inputs and variables: activations,
 * dense, conv2d (SAME and VALID, strided), max/avg pooling, flatten,
 * dropout (scaling, rate 0 and run-time flag identity, determinism), and
 * embedding lookup (values and a gradient that stays sparse); errors. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"

/* |got - want| <= atol + rtol * |want| for every element (plain doubles). */
static void assert_near(const tf_tensor *got, const double *want, int64_t n,
                        double atol, double rtol) {
  ck_assert_int_eq(got->n, n);
  for (int64_t i = 0; i < n; i++) {
    double g = lt_at(got, i);
    ck_assert_msg(fabs(g - want[i]) <= atol + rtol * fabs(want[i]),
                  "element %lld: got %.9g want %.9g", (long long)i, g, want[i]);
  }
}

static double act_ref(double v, tf_activation a) {
  switch (a) {
    case TF_ACT_RELU: return v > 0 ? v : 0;
    case TF_ACT_TANH: return tanh(v);
    case TF_ACT_SIGMOID: return 1 / (1 + exp(-v));
    default: return v;
  }
}

/* Softmax over the last axis of rows x cols, in place. */
static void softmax_ref(double *v, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; c++) m = fmax(m, v[r * cols + c]);
    for (int c = 0; c < cols; c++) s += exp(v[r * cols + c] - m);
    for (int c = 0; c < cols; c++) v[r * cols + c] = exp(v[r * cols + c] - m) / s;
  }
}

/* Each activation on a fed [4, 5] input; NONE adds no node. */
START_TEST(test_activations) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(2, 4, 5));
  tf_output xo = {x, 0}, y[5];
  for (int a = 0; a <= TF_ACT_SOFTMAX; a++) {
    LT_OK(tf_layer_activation(l, xo, (tf_activation)a, NULL, &y[a], &st));
  }
  ck_assert_ptr_eq(y[TF_ACT_NONE].node, x);
  ck_assert_str_eq(tf_node_name(y[TF_ACT_RELU].node), "Relu");
  tf_tensor *in = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 5), -3, 3);
  const char *fn[] = {"x"};
  tf_tensor *out[5];
  lt_run_once(g, l, fn, &in, 1, y, out, 5);
  double want[20];
  for (int a = 0; a <= TF_ACT_SOFTMAX; a++) {
    for (int i = 0; i < 20; i++) {
      want[i] = act_ref(lt_at(in, i), (tf_activation)a);
    }
    if (a == TF_ACT_SOFTMAX) {
      softmax_ref(want, 4, 5);
    }
    assert_near(out[a], want, 20, 1e-14, 1e-12);
  }
  tt_free(out, 5);
  tf_tensor_unref(in);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* dense(x [5, 7], 4) with each activation and with/without bias, float32
 * and float64: act(x @ kernel + bias) recomputed from the fetched kernel
 * and bias (bias from a truncated normal so it is not zero). */
START_TEST(test_dense_forward) {
  for (int d = 0; d < 2; d++) {
    for (int a = 0; a <= TF_ACT_SOFTMAX; a++) {
      tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
      bool bias = a != TF_ACT_TANH;
      tf_graph *g = tf_graph_new();
      tf_layers *l = tf_layers_new(g, 3);
      tf_status st;
      tf_node *x = tt_placeholder(g, "x", dt, tf_shape_of(2, -1, 7));
      tf_initializer bi = tf_init_truncated_normal(0.5, 1, 0);
      tf_output y;
      LT_OK(tf_layer_dense(l, (tf_output){x, 0}, 4, (tf_activation)a, bias,
                           NULL, &bi, "fc", &y, &st));
      ck_assert_int_eq(tf_layers_num_vars(l), bias ? 2 : 1);
      ck_assert_str_eq(tf_layers_var(l, 0)->name, "fc/kernel");
      tf_tensor *in = tt_rand(dt, tf_shape_of(2, 5, 7), -1, 1);
      const char *fn[] = {"x"};
      tf_output f[3] = {y, tf_layers_var(l, 0)->var,
                        bias ? tf_layers_var(l, 1)->var : y};
      tf_tensor *out[3];
      lt_run_once(g, l, fn, &in, 1, f, out, 3);
      double want[20];
      for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 4; j++) {
          double s = bias ? lt_at(out[2], j) : 0;
          for (int k = 0; k < 7; k++) {
            s += lt_at(in, i * 7 + k) * lt_at(out[1], k * 4 + j);
          }
          want[i * 4 + j] = act_ref(s, (tf_activation)a);
        }
      }
      if (a == TF_ACT_SOFTMAX) {
        softmax_ref(want, 5, 4);
      }
      tt_assert_shape(out[0], 2, 5, 4);
      assert_near(out[0], want, 20, d ? 1e-13 : 1e-5, d ? 1e-12 : 1e-5);
      tt_free(out, 3);
      tf_tensor_unref(in);
      tf_layers_free(l);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* Plain NHWC convolution with TF's padding: out = ceil(in / s) for SAME
 * (pad before = total / 2), ceil((in - k + 1) / s) for VALID. */
static void conv_ref(const tf_tensor *x, const tf_tensor *k, const tf_tensor *b,
                     int sh, int sw, bool same, tf_activation act, double *out,
                     int *oh, int *ow) {
  int n = (int)x->shape.dims[0], h = (int)x->shape.dims[1];
  int w = (int)x->shape.dims[2], ci = (int)x->shape.dims[3];
  int kh = (int)k->shape.dims[0], kw = (int)k->shape.dims[1];
  int co = (int)k->shape.dims[3];
  *oh = same ? (h + sh - 1) / sh : (h - kh + sh) / sh;
  *ow = same ? (w + sw - 1) / sw : (w - kw + sw) / sw;
  int pt = same ? ((*oh - 1) * sh + kh - h) / 2 : 0;
  int pl = same ? ((*ow - 1) * sw + kw - w) / 2 : 0;
  pt = pt < 0 ? 0 : pt;
  pl = pl < 0 ? 0 : pl;
  for (int i = 0; i < n; i++)
    for (int y = 0; y < *oh; y++)
      for (int z = 0; z < *ow; z++)
        for (int c = 0; c < co; c++) {
          double s = lt_at(b, c);
          for (int u = 0; u < kh; u++)
            for (int v = 0; v < kw; v++) {
              int r = y * sh + u - pt, q = z * sw + v - pl;
              if (r < 0 || r >= h || q < 0 || q >= w) {
                continue;
              }
              for (int e = 0; e < ci; e++) {
                s += lt_at(x, ((i * h + r) * w + q) * ci + e) *
                     lt_at(k, ((u * kw + v) * ci + e) * co + c);
              }
            }
          out[((i * *oh + y) * *ow + z) * co + c] = act_ref(s, act);
        }
}

/* conv2d on x [2, 7, 6, 3] with a 3x2 kernel, 4 filters, strides (2, 1)
 * and (1, 3), SAME and VALID, float32 and float64. */
START_TEST(test_conv2d_forward) {
  const int strides[2][2] = {{2, 1}, {1, 3}};
  for (int d = 0; d < 2; d++) {
    for (int p = 0; p < 4; p++) {
      tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
      bool same = p % 2 == 0;
      const int *s = strides[p / 2];
      tf_graph *g = tf_graph_new();
      tf_layers *l = tf_layers_new(g, 4);
      tf_status st;
      tf_node *x = tt_placeholder(g, "x", dt, tf_shape_of(4, -1, 7, 6, 3));
      tf_initializer bi = tf_init_truncated_normal(0, 1, 0);
      tf_output y;
      LT_OK(tf_layer_conv2d(l, (tf_output){x, 0}, 4, 3, 2, s[0], s[1],
                            same ? "SAME" : "VALID", TF_ACT_TANH, true, NULL,
                            &bi, NULL, &y, &st));
      ck_assert_str_eq(tf_layers_var(l, 0)->name, "conv2d/kernel");
      tf_tensor *in = tt_rand(dt, tf_shape_of(4, 2, 7, 6, 3), -1, 1);
      const char *fn[] = {"x"};
      tf_output f[3] = {y, tf_layers_var(l, 0)->var, tf_layers_var(l, 1)->var};
      tf_tensor *out[3];
      lt_run_once(g, l, fn, &in, 1, f, out, 3);
      double want[2 * 7 * 6 * 4];
      int oh, ow;
      conv_ref(in, out[1], out[2], s[0], s[1], same, TF_ACT_TANH, want, &oh,
               &ow);
      tt_assert_shape(out[0], 4, 2, oh, ow, 4);
      assert_near(out[0], want, 2 * oh * ow * 4, d ? 1e-13 : 1e-5,
                  d ? 1e-12 : 1e-5);
      tt_free(out, 3);
      tf_tensor_unref(in);
      tf_layers_free(l);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* Plain pooling (max, or mean over the window's elements inside x). */
static void pool_ref(const tf_tensor *x, int kh, int kw, int sh, int sw,
                     bool same, bool avg, double *out, int *oh, int *ow) {
  int n = (int)x->shape.dims[0], h = (int)x->shape.dims[1];
  int w = (int)x->shape.dims[2], c = (int)x->shape.dims[3];
  *oh = same ? (h + sh - 1) / sh : (h - kh + sh) / sh;
  *ow = same ? (w + sw - 1) / sw : (w - kw + sw) / sw;
  int pt = same ? ((*oh - 1) * sh + kh - h) / 2 : 0;
  int pl = same ? ((*ow - 1) * sw + kw - w) / 2 : 0;
  pt = pt < 0 ? 0 : pt;
  pl = pl < 0 ? 0 : pl;
  for (int i = 0; i < n; i++)
    for (int y = 0; y < *oh; y++)
      for (int z = 0; z < *ow; z++)
        for (int e = 0; e < c; e++) {
          double m = -INFINITY, s = 0;
          int cnt = 0;
          for (int u = 0; u < kh; u++)
            for (int v = 0; v < kw; v++) {
              int r = y * sh + u - pt, q = z * sw + v - pl;
              if (r < 0 || r >= h || q < 0 || q >= w) {
                continue;
              }
              double val = lt_at(x, ((i * h + r) * w + q) * c + e);
              m = fmax(m, val);
              s += val;
              cnt++;
            }
          out[((i * *oh + y) * *ow + z) * c + e] = avg ? s / cnt : m;
        }
}

/* max_pool and avg_pool, 2x3 window / (2, 3) strides VALID and 3x2 /
 * (1, 2) SAME (edge windows with fewer elements), on x [2, 5, 6, 3]; TF
 * scope names. */
START_TEST(test_pools) {
  for (int avg = 0; avg < 2; avg++) {
    for (int same = 0; same < 2; same++) {
      tf_graph *g = tf_graph_new();
      tf_layers *l = tf_layers_new(g, 1);
      tf_status st;
      tf_node *x = tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(4, 2, 5, 6, 3));
      int kh = same ? 3 : 2, kw = same ? 2 : 3, sh = same ? 1 : 2, sw = same ? 2 : 3;
      const char *pad = same ? "SAME" : "VALID";
      tf_output y;
      if (avg) {
        LT_OK(tf_layer_avg_pool(l, (tf_output){x, 0}, kh, kw, sh, sw, pad, NULL, &y, &st));
        ck_assert_str_eq(tf_node_name(y.node), "average_pooling2d/AvgPool");
      } else {
        LT_OK(tf_layer_max_pool(l, (tf_output){x, 0}, kh, kw, sh, sw, pad, NULL, &y, &st));
        ck_assert_str_eq(tf_node_name(y.node), "max_pooling2d/MaxPool");
      }
      tf_tensor *in = tt_rand(TF_FLOAT64, tf_shape_of(4, 2, 5, 6, 3), -1, 1);
      const char *fn[] = {"x"};
      tf_tensor *out;
      lt_run_once(g, l, fn, &in, 1, &y, &out, 1);
      double want[2 * 5 * 6 * 3];
      int oh, ow;
      pool_ref(in, kh, kw, sh, sw, same, avg, want, &oh, &ow);
      tt_assert_shape(out, 4, 2, oh, ow, 3);
      assert_near(out, want, 2 * oh * ow * 3, 1e-14, 1e-12);
      tf_tensor_unref(out);
      tf_tensor_unref(in);
      tf_layers_free(l);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* flatten keeps the elements in order and gives [batch, d1*...*dk]. */
START_TEST(test_flatten) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(4, -1, 3, 4, 5));
  tf_output y;
  LT_OK(tf_layer_flatten(l, (tf_output){x, 0}, NULL, &y, &st));
  const tf_shape *s = tf_node_output_shape(y.node, 0);
  ck_assert(s->rank == 2 && s->dims[0] == -1 && s->dims[1] == 60);
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 3, 4, 5), -1, 1);
  const char *fn[] = {"x"};
  tf_tensor *out;
  lt_run_once(g, l, fn, &in, 1, &y, &out, 1);
  tt_assert_shape(out, 2, 2, 60);
  ck_assert(memcmp(out->data, in->data, in->nbytes) == 0);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Checks a dropout output against x: every element 0 or x / (1 - rate)
 * (rel 1e-6); returns the kept fraction. */
static double check_dropped(const tf_tensor *y, const tf_tensor *x,
                            double rate) {
  int64_t kept = 0;
  for (int64_t i = 0; i < x->n; i++) {
    double v = lt_at(y, i), want = lt_at(x, i) / (1 - rate);
    if (v != 0) {
      ck_assert_msg(fabs(v - want) <= 1e-6 * fabs(want), "element %lld: %g, "
                    "want 0 or %g", (long long)i, v, want);
      kept++;
    }
  }
  return (double)kept / (double)x->n;
}

/* Build-time dropout at rate 0.3 on 100k elements: kept fraction 0.7 +-
 * 0.01 (~7 sd), kept values scaled by 1 / 0.7; the same seed gives the
 * same mask in a fresh session and a fresh graph, another seed another
 * mask; rate 0 and inactive dropout return x itself. */
static tf_tensor *dropout_once(tf_tensor *in, double rate, int64_t ctx_seed,
                               int64_t seed) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, ctx_seed);
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", in->dtype, tf_shape_unknown());
  tf_output y;
  LT_OK(tf_layer_dropout(l, (tf_output){x, 0}, rate, (tf_output){NULL, 0},
                         true, seed, NULL, &y, &st));
  ck_assert_str_eq(tf_node_name(y.node), "dropout/Mul_1");
  const char *fn[] = {"x"};
  tf_tensor *out;
  lt_run_once(g, l, fn, &in, 1, &y, &out, 1);
  tf_layers_free(l);
  tf_graph_free(g);
  return out;
}

START_TEST(test_dropout_build_time) {
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 200, 500), 0.5, 2);
  tf_tensor *a = dropout_once(in, 0.3, 17, 0);
  tf_tensor *b = dropout_once(in, 0.3, 17, 0);
  tf_tensor *c = dropout_once(in, 0.3, 18, 0);
  tf_tensor *e = dropout_once(in, 0.3, 0, 5);
  tf_tensor *f = dropout_once(in, 0.3, 0, 5);
  double frac = check_dropped(a, in, 0.3);
  ck_assert_msg(fabs(frac - 0.7) < 0.01, "kept %g", frac);
  ck_assert(tf_tensor_equal(a, b));
  ck_assert(!tf_tensor_equal(a, c));
  ck_assert(tf_tensor_equal(e, f));
  tf_tensor *d64 = tt_rand(TF_FLOAT64, tf_shape_of(1, 50000), 1, 2);
  tf_tensor *o64 = dropout_once(d64, 0.75, 3, 0);
  frac = check_dropped(o64, d64, 0.75);
  ck_assert_msg(fabs(frac - 0.25) < 0.01, "kept %g", frac);
  tf_tensor *all[] = {a, b, c, e, f, d64, o64};
  tt_free(all, 7);

  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown()), 0}, y;
  int n = tf_graph_num_nodes(g);
  LT_OK(tf_layer_dropout(l, x, 0.0, (tf_output){NULL, 0}, true, 0, NULL, &y, &st));
  ck_assert(y.node == x.node && y.index == 0);
  LT_OK(tf_layer_dropout(l, x, 0.5, (tf_output){NULL, 0}, false, 0, NULL, &y, &st));
  ck_assert(y.node == x.node);
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  tf_layers_free(l);
  tf_graph_free(g);
  tf_tensor_unref(in);
}
END_TEST

/* A run-time training flag: fed false, the output equals x exactly; fed
 * true, elements are 0 or x / (1 - rate) with the kept fraction near
 * 1 - rate; two sessions with the same seed drop the same elements
 * (the random stream advances on every step, whatever the flag). */
START_TEST(test_dropout_flag) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 9);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 1000)), 0};
  tf_output tr = {tt_placeholder(g, "training", TF_BOOL, tf_shape_scalar()), 0};
  tf_output y;
  LT_OK(tf_layer_dropout(l, x, 0.4, tr, true, 0, NULL, &y, &st));
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 100, 1000), -2, 2);
  tf_tensor *feeds[2] = {in, tf_tensor_scalar_bool(false)};
  const char *fn[] = {"x", "training"};
  tf_tensor *out[3];
  tf_session *s = lt_session(g, l);
  lt_run(s, fn, feeds, 2, &y, &out[0], 1);
  ck_assert(memcmp(out[0]->data, in->data, in->nbytes) == 0);
  tf_tensor_unref(feeds[1]);
  feeds[1] = tf_tensor_scalar_bool(true);
  lt_run(s, fn, feeds, 2, &y, &out[1], 1);
  double frac = check_dropped(out[1], in, 0.4);
  ck_assert_msg(fabs(frac - 0.6) < 0.01, "kept %g", frac);
  tf_session_free(s);
  /* a fresh session replays the stream: a false step, then the true one */
  s = lt_session(g, l);
  tf_tensor *skip;
  tf_tensor *off[2] = {in, feeds[1]};
  off[1] = tf_tensor_scalar_bool(false);
  lt_run(s, fn, off, 2, &y, &skip, 1);
  tf_tensor_unref(skip);
  tf_tensor_unref(off[1]);
  lt_run(s, fn, feeds, 2, &y, &out[2], 1);
  ck_assert(tf_tensor_equal(out[1], out[2]));
  tf_session_free(s);
  tt_free(out, 3);
  tt_free(feeds, 2);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* embedding(ids [3, 2], vocab 10, dim 4): rows of the fetched variable;
 * tf_layer_embedding_lookup on a variable of our own gives the same; the
 * gradient of sum(lookup * w) with respect to the variable stays sparse
 * (indices = the ids, values = w's rows), and densified it sums repeated
 * ids. */
START_TEST(test_embedding) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 2);
  tf_status st;
  tf_node *ids = tt_placeholder(g, "ids", TF_INT32, tf_shape_of(2, 3, 2));
  tf_output e;
  LT_OK(tf_layer_embedding(l, (tf_output){ids, 0}, 10, 4, TF_FLOAT32, NULL,
                           NULL, &e, &st));
  ck_assert_str_eq(tf_layers_var(l, 0)->name, "embedding/embeddings");
  ck_assert_str_eq(tf_node_name(e.node), "embedding/embedding_lookup");
  tf_output table = tf_layers_var(l, 0)->var, e2;
  LT_OK(tf_layer_embedding_lookup(l, table, (tf_output){ids, 0}, NULL, &e2,
                                  &st));
  ck_assert_str_eq(tf_node_name(e2.node), "embedding_lookup");
  tf_tensor *w = tt_rand(TF_FLOAT32, tf_shape_of(3, 3, 2, 4), -1, 1);
  tf_output loss = {tt_node(g, "Sum", "loss",
                            (tf_output[]){{tt_node(g, "Mul", NULL,
                                                   (tf_output[]){e, {tt_const(g, "w", w), 0}},
                                                   2, NULL, 0), 0},
                                          {tt_const(g, "axes", tf_tensor_vec_i32(3, (int32_t[]){0, 1, 2})), 0}},
                            2, NULL, 0), 0};
  tf_grad sg;
  LT_OK(tf_gradients_sparse(g, &loss, 1, &table, 1, NULL, &sg, &st));
  ck_assert_msg(tf_grad_is_sparse(&sg), "the embedding gradient was densified");
  tf_output dg;
  LT_OK(tf_gradients(g, &loss, 1, &table, 1, NULL, &dg, &st));
  const int64_t idv[6] = {1, 7, 1, 0, 9, 3};
  tf_tensor *idt = tt_tensor_i(TF_INT32, tf_shape_of(2, 3, 2), idv);
  const char *fn[] = {"ids"};
  tf_output f[6] = {e, e2, table, sg.values, sg.indices, dg};
  tf_tensor *out[6];
  lt_run_once(g, l, fn, &idt, 1, f, out, 6);
  tt_assert_shape(out[0], 3, 3, 2, 4);
  ck_assert(tf_tensor_equal(out[0], out[1]));
  double want[24], dense[40] = {0};
  for (int i = 0; i < 6; i++) {
    for (int j = 0; j < 4; j++) {
      want[i * 4 + j] = lt_at(out[2], idv[i] * 4 + j);
      dense[idv[i] * 4 + j] += lt_at(w, i * 4 + j);
    }
    ck_assert_int_eq(tf_tensor_get_i64(out[4], i), idv[i]);
  }
  assert_near(out[0], want, 24, 0, 0);
  ck_assert_int_eq(out[3]->n, 24);
  ck_assert(memcmp(out[3]->data, w->data, w->nbytes) == 0);
  tt_assert_shape(out[5], 2, 10, 4);
  assert_near(out[5], dense, 40, 1e-6, 1e-6);
  tt_free(out, 6);
  tf_tensor_unref(idt);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Bad inputs: INVALID_ARGUMENT naming the layer and the problem, and no
 * node added. */
START_TEST(test_layer_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x3 = {tt_placeholder(g, "x3", TF_FLOAT32, tf_shape_of(3, 2, 3, 4)), 0};
  tf_output xu = {tt_placeholder(g, "xu", TF_FLOAT32, tf_shape_of(2, 2, -1)), 0};
  tf_output xi = {tt_placeholder(g, "xi", TF_INT32, tf_shape_of(2, 2, 3)), 0};
  tf_output x4 = {tt_placeholder(g, "x4", TF_FLOAT32, tf_shape_of(4, 1, 8, 8, -1)), 0};
  tf_output x4k = {tt_placeholder(g, "x4k", TF_FLOAT32, tf_shape_of(4, 1, 8, 8, 2)), 0};
  tf_output x2 = {tt_placeholder(g, "x2", TF_FLOAT32, tf_shape_of(2, 2, 3)), 0};
  tf_output tf32 = {tt_placeholder(g, "tf32", TF_FLOAT32, tf_shape_scalar()), 0};
  tf_output y, none = {NULL, 0};
  int n = tf_graph_num_nodes(g);
  tf_initializer bad = tf_init_truncated_normal(0, -2, 0);
#define CASE(call, m)                                                          \
  ck_assert_msg((call) == TF_INVALID_ARGUMENT && strstr(st.msg, m) != NULL,    \
                "%s: %s", #call, st.msg);                                      \
  ck_assert_ptr_null(y.node)
  CASE(tf_layer_dense(l, x3, 4, TF_ACT_NONE, true, NULL, NULL, NULL, &y, &st),
       "dense: x must be [batch, in]");
  CASE(tf_layer_dense(l, xu, 4, TF_ACT_NONE, true, NULL, NULL, NULL, &y, &st),
       "in known");
  CASE(tf_layer_dense(l, xi, 4, TF_ACT_NONE, true, NULL, NULL, NULL, &y, &st),
       "float32 or float64, got int32");
  CASE(tf_layer_dense(l, x2, 0, TF_ACT_NONE, true, NULL, NULL, NULL, &y, &st),
       "units must be in [1, 2^31), got 0");
  CASE(tf_layer_dense(l, x2, 4, (tf_activation)9, true, NULL, NULL, NULL, &y,
                      &st), "dense: unknown activation 9");
  CASE(tf_layer_dense(l, x4k, 4, TF_ACT_NONE, true, NULL, NULL, NULL, &y, &st),
       "[1,8,8,2]");
  CASE(tf_layer_conv2d(l, x4, 8, 3, 3, 1, 1, "SAME", TF_ACT_NONE, true, NULL,
                       NULL, NULL, &y, &st), "channels of x must be known");
  CASE(tf_layer_conv2d(l, x4k, 8, 3, 3, 1, 1, "FULL", TF_ACT_NONE, true, NULL,
                       NULL, NULL, &y, &st), "\"FULL\"");
  CASE(tf_layer_conv2d(l, x4k, 8, 3, 3, 1, 1, "SAME", TF_ACT_NONE, true, NULL,
                       &bad, NULL, &y, &st), "stddev");
  CASE(tf_layer_max_pool(l, x3, 2, 2, 2, 2, "VALID", NULL, &y, &st), "NHWC");
  CASE(tf_layer_avg_pool(l, x4k, 2, 0, 2, 2, "VALID", NULL, &y, &st),
       "must be positive");
  CASE(tf_layer_flatten(l, xu, NULL, &y, &st), "known non-batch dims");
  CASE(tf_layer_dropout(l, x3, 1.0, none, true, 0, NULL, &y, &st),
       "rate must be in [0, 1)");
  CASE(tf_layer_dropout(l, x3, 0.5, tf32, true, 0, NULL, &y, &st),
       "training must be a scalar bool");
  CASE(tf_layer_embedding(l, xi, 0, 4, TF_FLOAT32, NULL, NULL, &y, &st),
       "vocab 0 and dim 4");
  CASE(tf_layer_embedding(l, x3, 10, 4, TF_FLOAT32, NULL, NULL, &y, &st),
       "ids must be int32 or int64");
#undef CASE
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  ck_assert_int_eq(tf_layers_num_vars(l), 0);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_nn");
  TCase *tc = tcase_create("layers_nn");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_activations);
  tcase_add_test(tc, test_dense_forward);
  tcase_add_test(tc, test_conv2d_forward);
  tcase_add_test(tc, test_pools);
  tcase_add_test(tc, test_flatten);
  tcase_add_test(tc, test_dropout_build_time);
  tcase_add_test(tc, test_dropout_flag);
  tcase_add_test(tc, test_embedding);
  tcase_add_test(tc, test_layer_errors);
  suite_add_tcase(s, tc);
  return s;
}
