/* grad_nn_lrn_test.c: the gradient of LRN (grad_nn_lrn.c emitting
 * LRNGrad) checked against central differences of loss = sum(Cast(y,
 * float64) * w) through the whole graph on fresh random float32 inputs
 * (LRN has float32 kernels only, as in TF, so tt_grad_check's float64
 * step of 1e-6 does not apply). Step 5e-3 (the step actually applied, after
 * float32 rounding, is used): the truncation error is O(h^2) ~ 1e-5 and
 * only the outputs of the perturbed pixel's window change, so float32
 * rounding adds at most ~1e-4; atol 3e-4, rtol 2e-3. Several depth_radius
 * (0, 1, 2, past the depth), bias, alpha and beta values, depth 1, and
 * dims unknown until run time. Also TF's structure: one LRNGrad fed (dy,
 * x, LRN's output) with the forward node's attrs. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "test/unit/core/grad/grad_testlib.h"

typedef struct lrn_cfg {
  int64_t r;
  double bias, alpha, beta;
  bool hide;
} lrn_cfg;

static int cfg_kv(const lrn_cfg *c, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"depth_radius", tf_attr_int(c->r)};
  kv[1] = (tf_attr_kv){"bias", tf_attr_float(c->bias)};
  kv[2] = (tf_attr_kv){"alpha", tf_attr_float(c->alpha)};
  kv[3] = (tf_attr_kv){"beta", tf_attr_float(c->beta)};
  return 4;
}

typedef struct ln_run {
  tf_session *s;
  tf_tensor *x;
} ln_run;

static tf_tensor *ln_fetch(ln_run *r, const char *name) {
  tf_status st;
  tf_status_init(&st);
  const char *feed = "ln_x";
  tf_tensor *out = NULL;
  tf_code rc = tf_session_run(r->s, NULL, &feed, &r->x, 1, &name, &out, 1,
                              NULL, 0, NULL, &st);
  ck_assert_msg(rc == TF_OK, "fetching %s: %s", name, st.msg);
  return out;
}

static double ln_loss(ln_run *r) {
  tf_tensor *l = ln_fetch(r, "ln_loss");
  double v = tf_tensor_get_f64(l, 0);
  tf_tensor_unref(l);
  return v;
}

/* Builds LRN(x) (x hidden when asked) and loss; returns LRN's node. */
static tf_node *ln_build(tf_graph *g, tf_output x, const lrn_cfg *c,
                         tf_shape xs, tf_output *loss) {
  tf_attr_kv kv[4];
  int n = cfg_kv(c, kv);
  tf_output xi = c->hide ? gt_hide(g, x, GT_HIDE_DIMS) : x;
  tf_node *lrn = tt_node(g, "LRN", NULL, &xi, 1, kv, n);
  tf_attr_kv ct = {"DstT", tf_attr_type_v(TF_FLOAT64)};
  tf_output y = gt_o(lrn);
  tf_output yc = gt_o(tt_node(g, "Cast", NULL, &y, 1, &ct, 1));
  tf_output p = gt_op2(g, "Mul", yc,
                       gt_o(tt_const(g, NULL, tt_rand(TF_FLOAT64, xs, -1, 1))));
  int32_t m1 = -1, z = 0;
  tf_output flat = gt_op2(g, "Reshape", p, gt_ivec(g, 1, &m1));
  *loss = gt_o(tt_node(g, "Sum", "ln_loss",
                       (tf_output[]){flat, gt_ivec(g, 1, &z)}, 2, NULL, 0));
  return lrn;
}

static void check_lrn(const lrn_cfg *c, tf_shape xs) {
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, "ln_x", TF_FLOAT32, xs)), loss, dx;
  ln_build(g, x, c, xs, &loss);
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st) == TF_OK,
                "%s", st.msg);
  ln_run r = {tf_session_new(g, NULL, &st), tt_rand(TF_FLOAT32, xs, -1, 1)};
  ck_assert_msg(r.s != NULL, "%s", st.msg);
  char name[300];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(dx.node), dx.index);
  tf_tensor *d = ln_fetch(&r, name);
  ck_assert(d->dtype == TF_FLOAT32 && tf_shape_equal(&d->shape, &xs));
  float *xv = r.x->data;
  for (int64_t k = 0; k < r.x->n; k++) {
    float x0 = xv[k];
    xv[k] = x0 + 5e-3f;
    double lp = ln_loss(&r), hp = (double)xv[k] - x0;
    xv[k] = x0 - 5e-3f;
    double lm = ln_loss(&r), hm = x0 - (double)xv[k];
    xv[k] = x0;
    double num = (lp - lm) / (hp + hm), ana = tf_tensor_get_f64(d, k);
    ck_assert_msg(fabs(ana - num) <= 3e-4 + 2e-3 * fabs(num),
                  "LRN r=%lld element %lld: analytic %.9g numeric %.9g",
                  (long long)c->r, (long long)k, ana, num);
  }
  tt_free((tf_tensor *[]){d, r.x}, 2);
  tf_session_free(r.s);
  tf_graph_free(g);
}

START_TEST(test_lrn_grad) {
  static const lrn_cfg cfgs[] = {
      {5, 1, 1, 0.5, false},    {0, 1, 1, 0.5, false},
      {1, 2, 0.5, 0.75, false}, {2, 0.5, 2, 1.0, true},
      {3, 1.5, 0.3, 0.6, false},
  };
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    check_lrn(&cfgs[i], tf_shape_of(4, 2, 2, 1, 6));
    check_lrn(&cfgs[i], tf_shape_of(4, 1, 1, 2, 1));
  }
}
END_TEST

START_TEST(test_structure) {
  tf_graph *g = tf_graph_new();
  tf_shape xs = tf_shape_of(4, 1, 2, 2, 3);
  tf_output x = gt_o(tt_placeholder(g, "ln_x", TF_FLOAT32, xs)), loss, dx;
  lrn_cfg c = {2, 0.5, 0.25, 0.75, false};
  tf_node *lrn = ln_build(g, x, &c, xs, &loss);
  tf_status st;
  ck_assert(tf_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st) == TF_OK);
  ck_assert_int_eq(gt_count_op(g, "LRNGrad"), 1);
  ck_assert_str_eq(tf_node_op(dx.node), "LRNGrad");
  ck_assert(tf_node_input(dx.node, 1).node == x.node);
  ck_assert(tf_node_input(dx.node, 2).node == lrn);
  ck_assert_int_eq(tf_node_attr(dx.node, "depth_radius")->u.i, 2);
  ck_assert(tf_node_attr(dx.node, "bias")->u.f == 0.5);
  ck_assert(tf_node_attr(dx.node, "alpha")->u.f == 0.25);
  ck_assert(tf_node_attr(dx.node, "beta")->u.f == 0.75);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_nn_lrn");
  TCase *tc = tcase_create("lrn");
  tcase_add_test(tc, test_lrn_grad);
  tcase_add_test(tc, test_structure);
  suite_add_tcase(s, tc);
  return s;
}
