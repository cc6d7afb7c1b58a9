/* grad_nn_batchnorm_test.c: the gradient of FusedBatchNormV3 (grad
 * function plus FusedBatchNormGradV3 kernel) checked against float64
 * central differences of loss = sum(y * w) through the whole graph
 * (tt_grad_check; atol 1e-6, rtol 1e-5: the op is smooth and O(1), the
 * helper's step 1e-6 leaves differences accurate to about 1e-9) for x,
 * scale and offset: training mode (batch statistics, both factors) and
 * inference mode (population statistics), in NHWC and NCHW, with odd
 * shapes and a batch of one. Also checks TF's structure: the gradient is
 * one FusedBatchNormGradV3 fed the reserve spaces (training) or the mean
 * and variance inputs (inference, NCHW through Transposes), mean and
 * variance get no gradient, and FusedBatchNormGradV3 is marked not
 * differentiable. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/graph/grad_registry.h"
#include "test/unit/core/grad/grad_testlib.h"

#define ATOL 1e-6
#define RTOL 1e-5

typedef struct bn_cfg {
  bool training, nchw, hide; /* hide: x's dims unknown until run time */
  double factor;
  tf_tensor *mean, *var; /* constants (borrowed) */
} bn_cfg;

static int bn_attrs(const bn_cfg *c, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"is_training", tf_attr_bool(c->training)};
  kv[1] = (tf_attr_kv){"data_format", tf_attr_string(c->nchw ? "NCHW" : "NHWC")};
  kv[2] = (tf_attr_kv){"exponential_avg_factor", tf_attr_float(c->factor)};
  kv[3] = (tf_attr_kv){"epsilon", tf_attr_float(1e-3)};
  return 4;
}

/* FusedBatchNormV3(in[0] = x, in[1] = scale, in[2] = offset, mean, var). */
static tf_output build_bn(tf_graph *g, const tf_output *in, int n_in,
                          void *arg) {
  const bn_cfg *c = arg;
  (void)n_in;
  tf_attr_kv kv[4];
  int n = bn_attrs(c, kv);
  tf_output m = gt_o(tt_const(g, NULL, tf_tensor_ref(c->mean)));
  tf_output v = gt_o(tt_const(g, NULL, tf_tensor_ref(c->var)));
  tf_output x = c->hide ? gt_hide(g, in[0], GT_HIDE_DIMS) : in[0];
  tf_output args[5] = {x, in[1], in[2], m, v};
  return gt_o(tt_node(g, "FusedBatchNormV3", NULL, args, 5, kv, n));
}

static void check_bn(bn_cfg *c, tf_shape xs) {
  int64_t ch = xs.dims[c->nchw ? 1 : 3];
  tf_tensor *in[3] = {tt_rand(TF_FLOAT64, xs, -2, 2),
                      tt_rand(TF_FLOAT64, tf_shape_of(1, ch), 0.5, 1.5),
                      tt_rand(TF_FLOAT64, tf_shape_of(1, ch), -1, 1)};
  c->mean = tt_rand(TF_FLOAT64, tf_shape_of(1, ch), -0.5, 0.5);
  c->var = tt_rand(TF_FLOAT64, tf_shape_of(1, ch), 0.5, 2);
  tt_grad_check(build_bn, c, in, 3, NULL, ATOL, RTOL);
  tf_tensor_unref(c->mean), tf_tensor_unref(c->var);
  tt_free(in, 3);
}

START_TEST(test_training) {
  bn_cfg c = {.training = true, .factor = 1};
  check_bn(&c, tf_shape_of(4, 2, 3, 2, 3));
  check_bn(&c, tf_shape_of(4, 1, 5, 1, 2));
  c.factor = 0.5;
  check_bn(&c, tf_shape_of(4, 3, 1, 2, 4));
}
END_TEST

START_TEST(test_inference) {
  bn_cfg c = {.training = false, .factor = 1};
  check_bn(&c, tf_shape_of(4, 2, 3, 2, 3));
  check_bn(&c, tf_shape_of(4, 1, 1, 1, 5));
}
END_TEST

START_TEST(test_dynamic_shapes) {
  bn_cfg c = {.training = true, .hide = true, .factor = 1};
  check_bn(&c, tf_shape_of(4, 2, 2, 3, 3));
  c.training = false;
  check_bn(&c, tf_shape_of(4, 2, 2, 3, 3));
}
END_TEST

START_TEST(test_nchw) {
  bn_cfg c = {.training = true, .nchw = true, .factor = 1};
  check_bn(&c, tf_shape_of(4, 2, 3, 2, 3));
  c.training = false;
  check_bn(&c, tf_shape_of(4, 2, 3, 3, 2));
}
END_TEST

/* ---- structure ---------------------------------------------------------------- */

/* Builds y = FusedBatchNormV3 on placeholders, its gradient for all five
 * inputs; returns the FusedBatchNormGradV3 node (the source of dscale). */
static const tf_node *grad_node(tf_graph *g, bn_cfg *c, tf_output *dx,
                                tf_output *y) {
  tf_output in[5];
  static const char *names[5] = {"x", "scale", "offset", "mean", "var"};
  for (int i = 0; i < 5; i++) {
    tf_shape s = i == 0 ? tf_shape_of(4, 2, 3, 4, 3) : tf_shape_of(1, 3);
    in[i] = gt_o(tt_placeholder(g, names[i], TF_FLOAT32, s));
  }
  tf_attr_kv kv[4];
  int n = bn_attrs(c, kv);
  *y = gt_o(tt_node(g, "FusedBatchNormV3", "bn", in, 5, kv, n));
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, y, 1, in, 5, NULL, dx, &st) == TF_OK, "%s",
                st.msg);
  ck_assert(dx[3].node == NULL && dx[4].node == NULL);
  ck_assert_str_eq(tf_node_op(dx[1].node), "FusedBatchNormGradV3");
  ck_assert(dx[1].node == dx[2].node && dx[1].index == 1 && dx[2].index == 2);
  return dx[1].node;
}

static const char *input_src(const tf_node *n, int i, int *index) {
  tf_output o = tf_node_input(n, i);
  *index = o.index;
  return tf_node_name(o.node);
}

START_TEST(test_structure) {
  for (int mode = 0; mode < 3; mode++) {
    bn_cfg c = {.training = mode == 0, .nchw = mode == 2, .factor = 1};
    tf_graph *g = tf_graph_new();
    tf_output dx[5], y;
    const tf_node *gn = grad_node(g, &c, dx, &y);
    int idx;
    if (mode == 0) {
      ck_assert_str_eq(input_src(gn, 3, &idx), "bn");
      ck_assert_int_eq(idx, 3);
      ck_assert_str_eq(input_src(gn, 4, &idx), "bn");
      ck_assert_int_eq(idx, 4);
      ck_assert(dx[0].node == gn);
    } else {
      ck_assert_str_eq(input_src(gn, 3, &idx), "mean");
      ck_assert_str_eq(input_src(gn, 4, &idx), "var");
      const char *fmt;
      tf_status st;
      ck_assert(tf_node_attr_get_string(gn, "data_format", &fmt, &st) == TF_OK);
      ck_assert_str_eq(fmt, "NHWC");
      ck_assert(mode == 2 ? strcmp(tf_node_op(dx[0].node), "Transpose") == 0
                          : dx[0].node == gn);
    }
    ck_assert_str_eq(input_src(gn, 5, &idx), "bn");
    ck_assert_int_eq(idx, 5);
    tf_graph_free(g);
  }
  const tf_op_def *op = tf_op_lookup("FusedBatchNormGradV3");
  ck_assert(op != NULL && (op->flags & TF_OP_NOT_DIFFERENTIABLE));
  ck_assert(tf_grad_lookup("FusedBatchNormGradV3") == NULL);
  ck_assert_int_eq(tf__grad_count_registrations("FusedBatchNormV3"), 1);
}
END_TEST

/* A loss through batch_mean only: TF's gradient ignores the statistics
 * outputs' gradients, so x gets FusedBatchNormGradV3 of a zero y gradient
 * (ZerosLike), i.e. zero, and scale and offset zero too. */
START_TEST(test_stats_only_loss) {
  tf_graph *g = tf_graph_new();
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(4, 2, 2, 2, 3), -1, 1);
  tf_tensor *vv[4];
  for (int i = 0; i < 4; i++) {
    vv[i] = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), 0.5, 1.5);
  }
  tf_output in[5];
  in[0] = gt_o(tt_const(g, "x", xv));
  for (int i = 0; i < 4; i++) in[i + 1] = gt_o(tt_const(g, NULL, vv[i]));
  tf_node *bn = tt_node(g, "FusedBatchNormV3", "bn", in, 5, NULL, 0);
  tf_output bm = {bn, 1};
  tf_output dx[3];
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_gradients(g, &bm, 1, in, 3, NULL, dx, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_str_eq(tf_node_op(dx[0].node), "FusedBatchNormGradV3");
  ck_assert_str_eq(tf_node_op(tf_node_input(dx[0].node, 0).node), "ZerosLike");
  for (int k = 0; k < 3; k++) {
    tf_tensor *d = gt_run(g, NULL, NULL, 0, dx[k]);
    for (int64_t i = 0; i < d->n; i++) ck_assert(tf_tensor_get_f64(d, i) == 0);
    tf_tensor_unref(d);
  }
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_nn_batchnorm");
  TCase *tc = tcase_create("batchnorm");
  tcase_add_test(tc, test_training);
  tcase_add_test(tc, test_inference);
  tcase_add_test(tc, test_dynamic_shapes);
  tcase_add_test(tc, test_nchw);
  tcase_add_test(tc, test_stats_only_loss);
  tcase_add_test(tc, test_structure);
  suite_add_tcase(s, tc);
  return s;
}
