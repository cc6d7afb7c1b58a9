/* layers_conv_test.c: tf_layer_depthwise_conv2d and
 * tf_layer_separable_conv2d (lib/core/cc/layers_conv.c) against a float64
 * plain-loop reference of the depthwise convolution (TF's SAME/VALID
 * padding), the 1x1 pointwise product, bias and activation, computed from
 * the fetched variables (float32 and float64, strides 1 and 2); gradients
 * of a loss with respect to x and every variable by float64 central
 * differences; variable names, shapes and errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"

/* One convolution configuration. */
typedef struct cv_cfg {
  int n, h, w, cin, kh, kw, sh, sw, dm, filters; /* filters 0: depthwise */
  const char *padding;
  tf_activation act;
} cv_cfg;

/* TF's output size and leading pad for one spatial dim. */
static int out_dim(int in, int k, int s, const char *padding, int *pad) {
  bool same = strcmp(padding, "SAME") == 0;
  int o = same ? (in + s - 1) / s : (in - k + s) / s;
  int total = (o - 1) * s + k - in;
  *pad = same && total > 0 ? total / 2 : 0;
  return o;
}

static double act_ref(double v, tf_activation a) {
  switch (a) {
    case TF_ACT_RELU: return v > 0 ? v : 0;
    case TF_ACT_LEAKY_RELU: return v > 0 ? v : 0.2 * v;
    case TF_ACT_TANH: return tanh(v);
    default: return v;
  }
}

/* The layer's output in double: depthwise (dk [kh, kw, cin, dm]), then
 * pointwise (pk [cin*dm, filters], NULL: none), bias, activation. y gets
 * [n, oh, ow, cout]; returns its element count. */
static int64_t cv_ref(const cv_cfg *c, const tf_tensor *x,
                      const tf_tensor *dk, const tf_tensor *pk,
                      const tf_tensor *b, double *y) {
  int ph, pw, oh = out_dim(c->h, c->kh, c->sh, c->padding, &ph);
  int ow = out_dim(c->w, c->kw, c->sw, c->padding, &pw);
  int cm = c->cin * c->dm, co = pk ? c->filters : cm;
  double *d = calloc((size_t)cm, sizeof *d);
  int64_t k = 0;
  for (int n = 0; n < c->n; n++)
    for (int i = 0; i < oh; i++)
      for (int j = 0; j < ow; j++) {
        for (int q = 0; q < cm; q++) {
          int ci = q / c->dm, m = q % c->dm;
          double s = 0;
          for (int a = 0; a < c->kh; a++)
            for (int e = 0; e < c->kw; e++) {
              int r = i * c->sh + a - ph, t = j * c->sw + e - pw;
              if (r >= 0 && r < c->h && t >= 0 && t < c->w) {
                s += lt_at(x, ((n * c->h + r) * c->w + t) * c->cin + ci) *
                     lt_at(dk, ((a * c->kw + e) * c->cin + ci) * c->dm + m);
              }
            }
          d[q] = s;
        }
        for (int o = 0; o < co; o++) {
          double v = pk ? 0 : d[o];
          for (int q = 0; pk && q < cm; q++) {
            v += d[q] * lt_at(pk, q * co + o);
          }
          y[k++] = act_ref(v + (b ? lt_at(b, o) : 0), c->act);
        }
      }
  free(d);
  return k;
}

/* Builds the layer on placeholder "x" of dtype dt. */
static tf_output cv_build(tf_layers *l, const cv_cfg *c, tf_dtype dt,
                          bool use_bias) {
  tf_graph *g = tf_layers_graph(l);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", dt,
                                tf_shape_of(4, -1, c->h, c->w, c->cin)), 0};
  tf_output y;
  if (c->filters == 0) {
    LT_OK(tf_layer_depthwise_conv2d(l, x, c->kh, c->kw, c->sh, c->sw,
                                    c->padding, c->dm, c->act, use_bias, NULL,
                                    NULL, NULL, &y, &st));
  } else {
    tf_initializer bi = tf_init_truncated_normal(0, 1, 0);
    LT_OK(tf_layer_separable_conv2d(l, x, c->filters, c->kh, c->kw, c->sh,
                                    c->sw, c->padding, c->dm, c->act,
                                    use_bias, NULL, NULL, &bi, NULL, &y,
                                    &st));
  }
  return y;
}

static const cv_cfg cfgs[] = {
    {2, 5, 6, 3, 3, 3, 1, 1, 2, 4, "SAME", TF_ACT_RELU},
    {2, 7, 5, 2, 3, 2, 2, 2, 1, 3, "VALID", TF_ACT_NONE},
    {1, 6, 6, 2, 2, 3, 2, 1, 3, 2, "SAME", TF_ACT_LEAKY_RELU},
    {2, 5, 6, 3, 3, 3, 1, 1, 2, 0, "SAME", TF_ACT_TANH},
    {2, 7, 5, 2, 3, 2, 2, 2, 3, 0, "VALID", TF_ACT_NONE},
};

/* Forward of every configuration in float32 and float64 against the
 * loop on the fetched variables. Tolerances: float64 1e-12; float32
 * 1e-4 absolute + relative (sums of at most ~60 products of order 1). */
START_TEST(test_conv_forward) {
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    for (int k = 0; k < 2; k++) {
      const cv_cfg *c = &cfgs[i];
      tf_dtype dt = k ? TF_FLOAT64 : TF_FLOAT32;
      tf_graph *g = tf_graph_new();
      tf_layers *l = tf_layers_new(g, 11);
      tf_output y = cv_build(l, c, dt, true);
      int nv = tf_layers_num_vars(l);
      ck_assert_int_eq(nv, c->filters ? 3 : 2);
      tf_output f[4] = {y};
      for (int v = 0; v < nv; v++) {
        f[1 + v] = tf_layers_var(l, v)->var;
      }
      tf_tensor *x = tt_rand(dt, tf_shape_of(4, c->n, c->h, c->w, c->cin), -1,
                             1);
      tf_tensor *out[4];
      const char *fn[] = {"x"};
      lt_run_once(g, l, fn, &x, 1, f, out, 1 + nv);
      double *want = malloc((size_t)out[0]->n * sizeof *want);
      int64_t n = cv_ref(c, x, out[1], c->filters ? out[2] : NULL,
                         out[nv], want);
      ck_assert_int_eq(n, out[0]->n);
      double tol = k ? 1e-12 : 1e-4;
      for (int64_t e = 0; e < n; e++) {
        ck_assert_msg(fabs(lt_at(out[0], e) - want[e]) <=
                          tol + tol * fabs(want[e]),
                      "cfg %zu %s [%lld]: got %.9g want %.9g", i,
                      tf_dtype_name(dt), (long long)e, lt_at(out[0], e),
                      want[e]);
      }
      free(want);
      tt_free(out, 1 + nv);
      tf_tensor_unref(x);
      tf_layers_free(l);
      tf_graph_free(g);
    }
  }
}
END_TEST

/* loss = Sum(y * w) of one float64 layer; grads with respect to x and each
 * variable; set[i] assigns variable i from placeholder "v<i>". */
typedef struct cv_net {
  tf_graph *g;
  tf_layers *l;
  tf_output loss, grads[4];
  tf_node *set[3];
  int nv;
} cv_net;

static void net_build(cv_net *n, const cv_cfg *c) {
  tf_status st;
  n->g = tf_graph_new();
  n->l = tf_layers_new(n->g, 21);
  tf_output y = cv_build(n->l, c, TF_FLOAT64, true);
  n->nv = tf_layers_num_vars(n->l);
  tf_output wrt[4];
  ck_assert(tf_graph_find_output(n->g, "x:0", &wrt[0], &st) == TF_OK);
  for (int i = 0; i < n->nv; i++) {
    const tf_layer_var *v = tf_layers_var(n->l, i);
    char ph[16];
    snprintf(ph, sizeof ph, "v%d", i);
    tf_output p = {tt_placeholder(n->g, ph, TF_FLOAT64, v->shape), 0};
    n->set[i] = tt_node(n->g, "Assign", NULL, (tf_output[]){v->var, p}, 2,
                        NULL, 0);
    wrt[1 + i] = v->var;
  }
  int ph, pw, oh = out_dim(c->h, c->kh, c->sh, c->padding, &ph);
  int ow = out_dim(c->w, c->kw, c->sw, c->padding, &pw);
  int co = c->filters ? c->filters : c->cin * c->dm;
  tf_output w = {tt_const(n->g, NULL, tt_rand(TF_FLOAT64,
                                              tf_shape_of(4, c->n, oh, ow, co),
                                              -1, 1)), 0};
  tf_output yw = {tt_node(n->g, "Mul", NULL, (tf_output[]){y, w}, 2, NULL, 0),
                  0};
  int32_t ax[4] = {0, 1, 2, 3};
  tf_output r = {tt_const(n->g, NULL, tf_tensor_vec_i32(4, ax)), 0};
  n->loss = (tf_output){tt_node(n->g, "Sum", NULL, (tf_output[]){yw, r}, 2,
                                NULL, 0), 0};
  LT_OK(tf_gradients(n->g, &n->loss, 1, wrt, 1 + n->nv, NULL, n->grads, &st));
}

/* Runs: assigns every variable from vals[1..] (when set), then the loss
 * (vals[0] is x) or, when g is set, the gradients into g. */
static double net_run(tf_session *s, cv_net *n, tf_tensor **vals, bool set,
                      tf_tensor **g) {
  tf_status st;
  for (int i = 0; set && i < n->nv; i++) {
    char ph[16];
    snprintf(ph, sizeof ph, "v%d", i);
    const char *fn[] = {ph}, *t[] = {tf_node_name(n->set[i])};
    ck_assert_msg(tf_session_run(s, NULL, fn, &vals[1 + i], 1, NULL, NULL, 0,
                                 t, 1, NULL, &st) == TF_OK, "%s", st.msg);
  }
  const char *fn[] = {"x"};
  if (g != NULL) {
    lt_run(s, fn, vals, 1, n->grads, g, 1 + n->nv);
    return 0;
  }
  tf_tensor *l;
  lt_run(s, fn, vals, 1, &n->loss, &l, 1);
  double v = lt_at(l, 0);
  tf_tensor_unref(l);
  return v;
}

/* d loss / d (x, depthwise kernel, [pointwise kernel], bias) against
 * float64 central differences (step 1e-6; tolerance 1e-6 absolute and
 * relative: rounding of a loss of ~100 terms over the step is ~1e-8). */
START_TEST(test_conv_gradients) {
  const int which[] = {0, 1, 2, 3, 4};
  for (size_t k = 0; k < sizeof which / sizeof which[0]; k++) {
    const cv_cfg *c = &cfgs[which[k]];
    cv_net n;
    net_build(&n, c);
    tf_session *s = lt_session(n.g, n.l);
    tf_tensor *vals[4], *g[4];
    vals[0] = tt_rand(TF_FLOAT64, tf_shape_of(4, c->n, c->h, c->w, c->cin),
                      -1, 1);
    for (int i = 0; i < n.nv; i++) {
      vals[1 + i] = tt_rand(TF_FLOAT64, tf_layers_var(n.l, i)->shape, -1, 1);
    }
    net_run(s, &n, vals, true, NULL);
    net_run(s, &n, vals, false, g);
    for (int a = 0; a < 1 + n.nv; a++) {
      double *v = vals[a]->data;
      for (int64_t e = 0; e < vals[a]->n; e++) {
        double keep = v[e], f[2];
        for (int sgn = 0; sgn < 2; sgn++) {
          v[e] = keep + (sgn ? -1e-6 : 1e-6);
          f[sgn] = net_run(s, &n, vals, a > 0, NULL);
        }
        v[e] = keep;
        double num = (f[0] - f[1]) / 2e-6, an = lt_at(g[a], e);
        ck_assert_msg(fabs(an - num) <= 1e-6 + 1e-6 * fabs(num),
                      "cfg %d input %d [%lld]: analytic %.10g numeric %.10g",
                      which[k], a, (long long)e, an, num);
      }
      if (a > 0) {
        net_run(s, &n, vals, true, NULL);
      }
    }
    tt_free(g, 1 + n.nv);
    tt_free(vals, 1 + n.nv);
    tf_session_free(s);
    tf_layers_free(n.l);
    tf_graph_free(n.g);
  }
}
END_TEST

/* Names and shapes of the variables (Keras's), parameter counts, the
 * default scopes made unique, use_bias false. */
START_TEST(test_conv_variables) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32,
                                tf_shape_of(4, -1, 8, 8, 3)), 0};
  tf_output y;
  LT_OK(tf_layer_separable_conv2d(l, x, 5, 3, 3, 1, 1, "SAME", 2,
                                  TF_ACT_RELU, true, NULL, NULL, NULL, NULL,
                                  &y, &st));
  LT_OK(tf_layer_separable_conv2d(l, x, 4, 1, 1, 1, 1, "VALID", 1,
                                  TF_ACT_NONE, false, NULL, NULL, NULL, NULL,
                                  &y, &st));
  LT_OK(tf_layer_depthwise_conv2d(l, x, 3, 3, 2, 2, "SAME", 2, TF_ACT_NONE,
                                  true, NULL, NULL, NULL, &y, &st));
  const char *names[] = {"separable_conv2d/depthwise_kernel",
                         "separable_conv2d/pointwise_kernel",
                         "separable_conv2d/bias",
                         "separable_conv2d_1/depthwise_kernel",
                         "separable_conv2d_1/pointwise_kernel",
                         "depthwise_conv2d/depthwise_kernel",
                         "depthwise_conv2d/bias"};
  int64_t counts[] = {3 * 3 * 3 * 2, 6 * 5, 5, 3, 3 * 4, 3 * 3 * 3 * 2, 6};
  int64_t total = 0;
  ck_assert_int_eq(tf_layers_num_vars(l), 7);
  for (int i = 0; i < 7; i++) {
    const tf_layer_var *v = tf_layers_var(l, i);
    ck_assert_str_eq(v->name, names[i]);
    ck_assert_int_eq(tf_shape_num_elements(&v->shape), counts[i]);
    total += counts[i];
  }
  ck_assert_int_eq(tf_layers_num_params(l), total);
  const tf_shape *ys = tf_node_output_shape(y.node, y.index);
  ck_assert_int_eq(ys->rank, 4);
  ck_assert_int_eq(ys->dims[1], 4);
  ck_assert_int_eq(ys->dims[3], 6);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Bad arguments name the layer and add no node. */
START_TEST(test_conv_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32,
                                tf_shape_of(4, -1, 8, 8, 3)), 0};
  tf_output xu = {tt_placeholder(g, "xu", TF_FLOAT32,
                                 tf_shape_of(4, -1, 8, 8, -1)), 0};
  tf_output xi = {tt_placeholder(g, "xi", TF_INT32,
                                 tf_shape_of(4, -1, 8, 8, 3)), 0};
  tf_output y;
  int nodes = tf_graph_num_nodes(g);
#define CASE(call, who, text)                                                  \
  ck_assert_int_eq((call), TF_INVALID_ARGUMENT);                               \
  ck_assert_msg(strstr(st.msg, who) && strstr(st.msg, text), "%s", st.msg)
  CASE(tf_layer_separable_conv2d(l, x, 0, 3, 3, 1, 1, "SAME", 1, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, NULL, &y, &st),
       "separable_conv2d", "filters");
  CASE(tf_layer_separable_conv2d(l, x, 2, 3, 3, 1, 1, "SAME", 0, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, NULL, &y, &st),
       "separable_conv2d", "depth_multiplier");
  CASE(tf_layer_separable_conv2d(l, xu, 2, 3, 3, 1, 1, "SAME", 1, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, NULL, &y, &st),
       "separable_conv2d", "channels");
  CASE(tf_layer_depthwise_conv2d(l, x, 3, 3, 1, 1, "FULL", 1, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, &y, &st),
       "depthwise_conv2d", "padding");
  CASE(tf_layer_depthwise_conv2d(l, x, 3, 0, 1, 1, "SAME", 1, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, &y, &st),
       "depthwise_conv2d", "positive");
  CASE(tf_layer_depthwise_conv2d(l, xi, 3, 3, 1, 1, "SAME", 1, TF_ACT_NONE,
                                 true, NULL, NULL, NULL, &y, &st),
       "depthwise_conv2d", "float32 or float64");
  CASE(tf_layer_depthwise_conv2d(l, x, 3, 3, 1, 1, "SAME", 1,
                                 (tf_activation)42, true, NULL, NULL, NULL,
                                 &y, &st),
       "depthwise_conv2d", "activation");
#undef CASE
  ck_assert_int_eq(tf_graph_num_nodes(g), nodes);
  ck_assert_int_eq(tf_layers_num_vars(l), 0);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_conv");
  TCase *tc = tcase_create("layers_conv");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_conv_forward);
  tcase_add_test(tc, test_conv_gradients);
  tcase_add_test(tc, test_conv_variables);
  tcase_add_test(tc, test_conv_errors);
  suite_add_tcase(s, tc);
  return s;
}
