/* gradients_test.c: tf_gradients and tf_gradients_sparse: summing partial
 * gradients, zeros for unused outputs of a multi-output node, StopGradient
 * and integer edges, unreachable xs, grad_ys, errors with rollback of the
 * graph, sparse gradients (a test-only Gather-like op) kept sparse or
 * densified, and composite graphs checked against finite differences.
 * Test-only ops (family "test") and their kernels and gradients are
 * registered below. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/session.h"

/* ---- test-only ops ---------------------------------------------------------
 * TestSplit2(x) -> (a = 2x, b = 3x); TestNoGrad(x) -> x (no gradient, not
 * flagged); TestGather(params [n, c], indices [k]) -> params[indices]. */

static tf_code gather_shape(tf_shape_ctx *ctx) {
  const tf_shape *p = &ctx->in[0], *i = &ctx->in[1];
  if (p->rank == 2 && i->rank == 1) {
    ctx->out[0] = tf_shape_of(2, i->dims[0], p->dims[1]);
  }
  return TF_OK;
}

static const tf_op_spec test_ops[] = {
    {.name = "TestSplit2", .inputs = {"x: double"},
     .outputs = {"a: double", "b: double"},
     .shape_fn = tf_shape_fn_unchanged, .doc = "test"},
    {.name = "TestNoGrad", .inputs = {"x: double"}, .outputs = {"y: double"},
     .shape_fn = tf_shape_fn_unchanged, .doc = "test"},
    {.name = "TestGather", .inputs = {"params: double", "indices: int32"},
     .outputs = {"output: double"}, .shape_fn = gather_shape, .doc = "test"},
};
TF_REGISTER_OPS("test", test_ops)

static tf_code split2_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  tf_tensor *a, *b;
  if (tf_kernel_alloc_output(ctx, 0, TF_FLOAT64, &x->shape, &a) != TF_OK ||
      tf_kernel_alloc_output(ctx, 1, TF_FLOAT64, &x->shape, &b) != TF_OK) {
    return ctx->status->code;
  }
  for (int64_t i = 0; i < x->n; i++) {
    ((double *)a->data)[i] = 2 * ((const double *)x->data)[i];
    ((double *)b->data)[i] = 3 * ((const double *)x->data)[i];
  }
  return TF_OK;
}

static tf_code nograd_kernel(tf_kernel_ctx *ctx) {
  tf_kernel_set_output(ctx, 0, ctx->inputs[0]);
  return TF_OK;
}

static tf_code gather_kernel(tf_kernel_ctx *ctx) {
  const tf_tensor *p = ctx->inputs[0], *idx = ctx->inputs[1];
  int64_t c = p->shape.dims[1];
  tf_shape s = tf_shape_of(2, idx->n, c);
  tf_tensor *o;
  if (tf_kernel_alloc_output(ctx, 0, TF_FLOAT64, &s, &o) != TF_OK) {
    return ctx->status->code;
  }
  for (int64_t r = 0; r < idx->n; r++) {
    int32_t row = ((const int32_t *)idx->data)[r];
    memcpy((double *)o->data + r * c, (const double *)p->data + row * c,
           (size_t)c * sizeof(double));
  }
  return TF_OK;
}

static const tf_kernel_def test_kernels[] = {
    {.op = "TestSplit2", .device_type = TF_DEVICE_CPU, .compute = split2_kernel},
    {.op = "TestNoGrad", .device_type = TF_DEVICE_CPU, .compute = nograd_kernel},
    {.op = "TestGather", .device_type = TF_DEVICE_CPU, .compute = gather_kernel},
};
TF_REGISTER_KERNELS(test_kernels)

/* dx = 2 da + 3 db (db, da may be zeros made by the walk). */
static tf_code split2_grad(tf_grad_ctx *ctx) {
  ck_assert_ptr_nonnull(ctx->dy[0].node);
  ck_assert_ptr_nonnull(ctx->dy[1].node);
  tf_output two = tf__grad_scalar(ctx, TF_FLOAT64, 2);
  tf_output three = tf__grad_scalar(ctx, TF_FLOAT64, 3);
  ctx->dx[0].values = tf__grad_op2(
      ctx, "Add", tf__grad_op2(ctx, "Mul", two, ctx->dy[0]),
      tf__grad_op2(ctx, "Mul", three, ctx->dy[1]));
  return ctx->st->code;
}

/* Rows: values dy, indices the gather's, dense shape Shape(params). */
static tf_code gather_grad(tf_grad_ctx *ctx) {
  ctx->dx[0].values = ctx->dy[0];
  ctx->dx[0].indices = tf__grad_in(ctx, 1);
  ctx->dx[0].dense_shape = tf__grad_shape(ctx, tf__grad_in(ctx, 0));
  return ctx->st->code;
}

static const tf_grad_def test_grads[] = {
    {"TestSplit2", split2_grad},
    {"TestGather", gather_grad},
};
TF_REGISTER_GRADIENTS(test_grads)

/* ---- helpers ------------------------------------------------------------- */

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

static tf_output op1(tf_graph *g, const char *op, tf_output a) {
  return out0(tt_node(g, op, NULL, &a, 1, NULL, 0));
}

static tf_output op2(tf_graph *g, const char *op, tf_output a, tf_output b) {
  tf_output in[2] = {a, b};
  return out0(tt_node(g, op, NULL, in, 2, NULL, 0));
}

static tf_output cf64(tf_graph *g, double v) {
  return out0(tt_const(g, NULL, tf_tensor_scalar_f64(v)));
}

/* Evaluates edge `what` with x fed (x_name may be NULL). */
static tf_tensor *eval(tf_graph *g, const char *x_name, tf_tensor *x,
                       tf_output what) {
  tf_status st;
  tf_session_options o = {.inter_op_threads = 1};
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(what.node), what.index);
  const char *fetch = name;
  tf_tensor *out = NULL;
  ck_assert_msg(tf_session_run(s, NULL, x_name ? &x_name : NULL, x_name ? &x : NULL,
                               x_name ? 1 : 0, &fetch, &out, 1, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  tf_session_free(s);
  return out;
}

static int count_ops(const tf_graph *g, const char *op) {
  int n = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    n += strcmp(tf_node_op(tf_graph_node(g, i)), op) == 0;
  }
  return n;
}

static void check_values(const tf_tensor *got, const double *want, int64_t n,
                         double tol) {
  ck_assert_int_eq(got->n, n);
  for (int64_t i = 0; i < n; i++) {
    double v = tf_tensor_get_f64(got, i);
    ck_assert_msg(fabs(v - want[i]) <= tol, "element %lld: got %.17g, want "
                  "%.17g", (long long)i, v, want[i]);
  }
}

/* ---- tests ---------------------------------------------------------------- */

/* y = x*x + x: two partials reach x through Mul and one directly: AddN,
 * dx = 2x + 1. Every gradient node is under "gradients/". */
START_TEST(test_sum_of_partials) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 5)));
  tf_output y = op2(g, "Add", op2(g, "Mul", x, x), x);
  int before = tf_graph_num_nodes(g);
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  ck_assert_ptr_nonnull(dx.node);
  ck_assert_int_ge(count_ops(g, "AddN"), 1);
  for (int i = before; i < tf_graph_num_nodes(g); i++) {
    const char *name = tf_node_name(tf_graph_node(g, i));
    ck_assert_msg(strncmp(name, "gradients/", 10) == 0, "node %s", name);
  }
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 5), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[5];
  for (int i = 0; i < 5; i++) want[i] = 2 * tf_tensor_get_f64(xv, i) + 1;
  check_values(d, want, 5, 1e-12);
  tt_free((tf_tensor *[]){xv, d}, 2);
  /* A second call gets its own scope "gradients_1/". */
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_msg(strncmp(tf_node_name(dx.node), "gradients_1/", 12) == 0, "%s",
                tf_node_name(dx.node));
  tf_graph_free(g);
}
END_TEST

/* Only output a of TestSplit2 reaches y: b gets ZerosLike; dx = 2 * 2a = 8x. */
START_TEST(test_zeros_for_unused_output) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 4)));
  tf_node *sp = tt_node(g, "TestSplit2", "sp", &x, 1, NULL, 0);
  tf_output y = op1(g, "Square", (tf_output){sp, 0});
  op1(g, "Neg", (tf_output){sp, 1}); /* b is used, but not by y */
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(count_ops(g, "ZerosLike"), 1);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 4), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[4];
  for (int i = 0; i < 4; i++) want[i] = 8 * tf_tensor_get_f64(xv, i);
  check_values(d, want, 4, 1e-12);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

/* y = x * StopGradient(x): only the direct path counts, dx = x. y =
 * StopGradient(x) alone: no gradient at all. */
START_TEST(test_stop_gradient) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output sg = op1(g, "StopGradient", x);
  tf_output y = op2(g, "Mul", x, sg);
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[3];
  for (int i = 0; i < 3; i++) want[i] = tf_tensor_get_f64(xv, i);
  check_values(d, want, 3, 0);
  ck_assert_int_eq(tf_gradients(g, &sg, 1, &x, 1, NULL, &dx, &st), TF_OK);
  ck_assert_ptr_null(dx.node);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

/* An x that does not reach y, or only through an integer edge, or only
 * through a not-differentiable op, gets NULL; nothing is built for it. */
START_TEST(test_unreachable_x) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output u = out0(tt_placeholder(g, "u", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_attr_kv to_int = {"DstT", tf_attr_type_v(TF_INT32)};
  tf_attr_kv to_f64 = {"DstT", tf_attr_type_v(TF_FLOAT64)};
  tf_output xi = out0(tt_node(g, "Cast", NULL, &x, 1, &to_int, 1));
  tf_output xf = out0(tt_node(g, "Cast", NULL, &xi, 1, &to_f64, 1));
  tf_output z = out0(tt_placeholder(g, "z", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output zl = op1(g, "ZerosLike", z); /* ZerosLike is not differentiable */
  tf_output y = op2(g, "Add", op2(g, "Mul", xf, zl), cf64(g, 1));
  int before = tf_graph_num_nodes(g);
  tf_output xs[3] = {x, u, z}, dx[3];
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, xs, 3, NULL, dx, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < 3; i++) ck_assert_ptr_null(dx[i].node);
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  tf_graph_free(g);
}
END_TEST

/* grad_ys scales the result; a grad_y of the wrong dtype is an error
 * naming it and the graph is unchanged. y == x gives grad_y itself. */
START_TEST(test_grad_ys) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output y = op2(g, "Mul", x, cf64(g, 3));
  double gv[3] = {1, -2, 0.5};
  tf_output gy = out0(tt_const(g, "gy", tt_tensor(TF_FLOAT64, tf_shape_of(1, 3), gv)));
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &x, 1, &gy, &dx, &st) == TF_OK, "%s", st.msg);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[3] = {3, -6, 1.5};
  check_values(d, want, 3, 0);
  tt_free(&d, 1);
  ck_assert_int_eq(tf_gradients(g, &x, 1, &x, 1, &gy, &dx, &st), TF_OK);
  ck_assert_ptr_eq(dx.node, gy.node);
  int before = tf_graph_num_nodes(g);
  tf_output bad = out0(tt_const(g, "gbad", tf_tensor_scalar_f32(1)));
  before++;
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, &bad, &dx, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "grad_ys[0]") && strstr(st.msg, "float"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  ck_assert_ptr_null(dx.node);
  tt_free(&xv, 1);
  tf_graph_free(g);
}
END_TEST

/* An op on the path without a gradient function: INVALID_ARGUMENT naming
 * op and node, and the graph is as it was (same YAML: every node the call
 * added is removed again); the graph still works and a later call
 * succeeds, in the scope "gradients" the failed call gave back. */
START_TEST(test_no_gradient_rollback) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output sq = op1(g, "Square", x);
  tf_output ng = out0(tt_node(g, "TestNoGrad", "ng", &sq, 1, NULL, 0));
  tf_output y = op2(g, "Mul", op1(g, "Neg", ng), x);
  int before = tf_graph_num_nodes(g);
  tf_output dx = {(tf_node *)1, 0};
  tf_status st;
  char *yaml0 = NULL, *yaml1 = NULL;
  size_t len;
  ck_assert_int_eq(tf_graph_to_yaml(g, &yaml0, &len, &st), TF_OK);
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "no gradient registered for op 'TestNoGrad' "
                       "(node 'ng')") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  ck_assert_int_eq(tf_graph_to_yaml(g, &yaml1, &len, &st), TF_OK);
  ck_assert_str_eq(yaml1, yaml0);
  free(yaml0);
  free(yaml1);
  ck_assert_ptr_null(dx.node);
  for (int i = 0; i < before; i++) {
    tf_node *n = tf_graph_node(g, i);
    ck_assert_ptr_eq(tf_graph_find(g, tf_node_name(n)), n);
  }
  /* y' = Neg(x) * x avoids it: works after the failed call. */
  tf_output y2 = op2(g, "Mul", op1(g, "Neg", x), x);
  ck_assert_msg(tf_gradients(g, &y2, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(strncmp(tf_node_name(dx.node), "gradients/", 10) == 0, "%s",
                tf_node_name(dx.node));
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[3];
  for (int i = 0; i < 3; i++) want[i] = -2 * tf_tensor_get_f64(xv, i);
  check_values(d, want, 3, 1e-12);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

/* A control-flow op that is not part of a cond or loop (here a Merge of
 * two live inputs) is UNIMPLEMENTED, with rollback; gradients through
 * tf_cond and tf_while_loop: gradients_cf_test.c. */
START_TEST(test_control_flow_unimplemented) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output sq = op1(g, "Square", x);
  tf_node_builder *b = tf_node_begin(g, "Merge", "mg");
  tf_node_add_input_list(b, (tf_output[]){x, sq}, 2);
  tf_status st;
  tf_node *mg = tf_node_finish(b, &st);
  ck_assert_msg(mg != NULL, "%s", st.msg);
  tf_output y = op1(g, "Square", (tf_output){mg, 0});
  int before = tf_graph_num_nodes(g);
  tf_output dx;
  ck_assert_int_eq(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st), TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, "control flow") && strstr(st.msg, "'mg'"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), before);
  tf_graph_free(g);
}
END_TEST

/* Bad arguments: an x from another graph, a NULL y. */
START_TEST(test_bad_args) {
  tf_graph *g = tf_graph_new(), *h = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output hx = out0(tt_placeholder(h, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output y = op1(g, "Square", x), none = {NULL, 0}, dx;
  tf_status st;
  ck_assert_int_eq(tf_gradients(g, &y, 1, &hx, 1, NULL, &dx, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "xs[0]"), "%s", st.msg);
  ck_assert_int_eq(tf_gradients(g, &none, 1, &x, 1, NULL, &dx, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "ys[0]"), "%s", st.msg);
  tf_graph_free(g);
  tf_graph_free(h);
}
END_TEST

/* Several ys: the gradient of their sum; a repeated x gets one result. */
START_TEST(test_multiple_ys) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 4)));
  tf_output ys[2] = {op1(g, "Square", x), op2(g, "Mul", x, cf64(g, -5))};
  tf_output xs[2] = {x, x}, dx[2];
  tf_status st;
  ck_assert_msg(tf_gradients(g, ys, 2, xs, 2, NULL, dx, &st) == TF_OK, "%s", st.msg);
  ck_assert(dx[0].node == dx[1].node && dx[0].index == dx[1].index);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 4), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dx[0]);
  double want[4];
  for (int i = 0; i < 4; i++) want[i] = 2 * tf_tensor_get_f64(xv, i) - 5;
  check_values(d, want, 4, 1e-12);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

/* ---- sparse -------------------------------------------------------------- */

typedef struct sparse_graph {
  tf_graph *g;
  tf_output p, y1, y2, g1, g2;
  int32_t i1[3], i2[2];
  double gv1[3 * 2], gv2[2 * 2];
} sparse_graph;

/* p [4, 2]; y1 = TestGather(p, [2, 0, 2]), y2 = TestGather(p, [3, 2]),
 * fed grad_ys g1, g2 (random). */
static void sparse_build_shape(sparse_graph *s, tf_shape pshape) {
  s->g = tf_graph_new();
  s->p = out0(tt_placeholder(s->g, "p", TF_FLOAT64, pshape));
  int32_t i1[3] = {2, 0, 2}, i2[2] = {3, 2};
  memcpy(s->i1, i1, sizeof i1);
  memcpy(s->i2, i2, sizeof i2);
  tf_output c1 = out0(tt_const(s->g, "i1", tf_tensor_vec_i32(3, i1)));
  tf_output c2 = out0(tt_const(s->g, "i2", tf_tensor_vec_i32(2, i2)));
  s->y1 = out0(tt_node(s->g, "TestGather", "y1", (tf_output[]){s->p, c1}, 2, NULL, 0));
  s->y2 = out0(tt_node(s->g, "TestGather", "y2", (tf_output[]){s->p, c2}, 2, NULL, 0));
  for (int i = 0; i < 6; i++) s->gv1[i] = tt_rand_uniform(-1, 1);
  for (int i = 0; i < 4; i++) s->gv2[i] = tt_rand_uniform(-1, 1);
  s->g1 = out0(tt_const(s->g, "g1", tt_tensor(TF_FLOAT64, tf_shape_of(2, 3, 2), s->gv1)));
  s->g2 = out0(tt_const(s->g, "g2", tt_tensor(TF_FLOAT64, tf_shape_of(2, 2, 2), s->gv2)));
}

static void sparse_build(sparse_graph *s) {
  sparse_build_shape(s, tf_shape_of(2, 4, 2));
}

/* The dense [4, 2] gradient: rows of g1, g2 added at their indices. */
static void sparse_reference(const sparse_graph *s, double *want) {
  memset(want, 0, 8 * sizeof *want);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++) want[s->i1[r] * 2 + c] += s->gv1[r * 2 + c];
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 2; c++) want[s->i2[r] * 2 + c] += s->gv2[r * 2 + c];
}

/* Two sparse partials stay sparse (indices and values concatenated); the
 * same gradient densified by tf_gradients matches the reference. */
START_TEST(test_sparse_kept_and_densified) {
  sparse_graph s;
  sparse_build(&s);
  tf_output ys[2] = {s.y1, s.y2}, gys[2] = {s.g1, s.g2};
  tf_grad sg;
  tf_status st;
  ck_assert_msg(tf_gradients_sparse(s.g, ys, 2, &s.p, 1, gys, &sg, &st) == TF_OK,
                "%s", st.msg);
  ck_assert(tf_grad_is_sparse(&sg));
  ck_assert_int_eq(count_ops(s.g, "UnsortedSegmentSum"), 0);
  tf_tensor *pv = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 2), -1, 1);
  tf_tensor *vals = eval(s.g, "p", pv, sg.values);
  tf_tensor *idx = eval(s.g, "p", pv, sg.indices);
  tf_tensor *shape = eval(s.g, "p", pv, sg.dense_shape);
  tt_assert_shape(vals, 2, 5, 2);
  ck_assert_int_eq(idx->n, 5);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 0), 4);
  ck_assert_int_eq(tf_tensor_get_i64(shape, 1), 2);
  double got[8] = {0}, want[8];
  for (int r = 0; r < 5; r++) {
    int64_t row = tf_tensor_get_i64(idx, r);
    ck_assert(row >= 0 && row < 4);
    for (int c = 0; c < 2; c++) got[row * 2 + c] += tf_tensor_get_f64(vals, r * 2 + c);
  }
  sparse_reference(&s, want);
  for (int i = 0; i < 8; i++) ck_assert_double_eq_tol(got[i], want[i], 1e-12);
  tf_output dense;
  ck_assert_msg(tf_gradients(s.g, ys, 2, &s.p, 1, gys, &dense, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(count_ops(s.g, "UnsortedSegmentSum"), 1);
  tf_tensor *d = eval(s.g, "p", pv, dense);
  tt_assert_shape(d, 2, 4, 2);
  check_values(d, want, 8, 1e-12);
  tt_free((tf_tensor *[]){pv, vals, idx, shape, d}, 5);
  tf_graph_free(s.g);
}
END_TEST

/* params of unknown shape: dense_shape is a Shape node and densifying
 * takes its first element at run time. */
START_TEST(test_sparse_dynamic_shape) {
  sparse_graph s;
  sparse_build_shape(&s, tf_shape_unknown());
  tf_output ys[2] = {s.y1, s.y2}, gys[2] = {s.g1, s.g2}, dense;
  tf_status st;
  ck_assert_msg(tf_gradients(s.g, ys, 2, &s.p, 1, gys, &dense, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_ge(count_ops(s.g, "Shape"), 1);
  ck_assert_int_eq(count_ops(s.g, "Gather"), 1);
  tf_tensor *pv = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 2), -1, 1);
  tf_tensor *d = eval(s.g, "p", pv, dense);
  tt_assert_shape(d, 2, 4, 2);
  double want[8];
  sparse_reference(&s, want);
  check_values(d, want, 8, 1e-12);
  tt_free((tf_tensor *[]){pv, d}, 2);
  tf_graph_free(s.g);
}
END_TEST

/* A sparse partial meeting a dense one is densified and summed; a sparse
 * gradient flowing into another op's gradient function is densified. */
START_TEST(test_sparse_with_dense) {
  sparse_graph s;
  sparse_build(&s);
  /* y3 = p * 2 (dense partial 2 * g3 with g3 = ones). */
  tf_output y3 = op2(s.g, "Mul", s.p, cf64(s.g, 2));
  tf_output ys[3] = {s.y1, s.y2, y3}, gys[3] = {s.g1, s.g2, {NULL, 0}};
  tf_grad sg;
  tf_status st;
  ck_assert_msg(tf_gradients_sparse(s.g, ys, 3, &s.p, 1, gys, &sg, &st) == TF_OK,
                "%s", st.msg);
  ck_assert(!tf_grad_is_sparse(&sg));
  tf_tensor *pv = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 2), -1, 1);
  tf_tensor *d = eval(s.g, "p", pv, sg.values);
  double want[8];
  sparse_reference(&s, want);
  for (int i = 0; i < 8; i++) want[i] += 2;
  check_values(d, want, 8, 1e-12);
  tt_free(&d, 1);
  /* q = Neg(p) gathered: Neg's gradient gets the densified rows. */
  tf_output q = op1(s.g, "Neg", s.p);
  tf_output c = out0(tt_const(s.g, NULL, tf_tensor_vec_i32(3, s.i1)));
  tf_output y4 = out0(tt_node(s.g, "TestGather", "y4", (tf_output[]){q, c}, 2, NULL, 0));
  ck_assert_msg(tf_gradients_sparse(s.g, &y4, 1, &s.p, 1, &s.g1, &sg, &st) == TF_OK,
                "%s", st.msg);
  ck_assert(!tf_grad_is_sparse(&sg));
  d = eval(s.g, "p", pv, sg.values);
  memset(want, 0, sizeof want);
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 2; k++) want[s.i1[r] * 2 + k] -= s.gv1[r * 2 + k];
  check_values(d, want, 8, 1e-12);
  tt_free((tf_tensor *[]){pv, d}, 2);
  tf_graph_free(s.g);
}
END_TEST

/* ---- composite graphs ----------------------------------------------------- */

/* h = tanh(x * w + b); y = sigmoid(h) * h + exp(-h*h) - x / (w*w + 1):
 * reuse of h and x, broadcasting of b, several families. */
static tf_output composite(tf_graph *g, const tf_output *in, int n, void *arg) {
  (void)n;
  (void)arg;
  tf_output x = in[0], w = in[1], b = in[2];
  tf_output h = op1(g, "Tanh", op2(g, "Add", op2(g, "Mul", x, w), b));
  tf_output t1 = op2(g, "Mul", op1(g, "Sigmoid", h), h);
  tf_output t2 = op1(g, "Exp", op1(g, "Neg", op2(g, "Mul", h, h)));
  tf_output den = op2(g, "Add", op2(g, "Mul", w, w), cf64(g, 1));
  return op2(g, "Sub", op2(g, "Add", t1, t2), op2(g, "Div", x, den));
}

START_TEST(test_composite_grad_check) {
  tf_tensor *in[3] = {tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 4), -2, 2),
                      tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 4), -2, 2),
                      tt_rand(TF_FLOAT64, tf_shape_of(1, 4), -1, 1)};
  tt_grad_check(composite, NULL, in, 3, NULL, 1e-7, 1e-6);
  tt_free(in, 3);
}
END_TEST

/* A diamond repeated 20 times: x -> (a = x*c1, b = x*c2) -> a + b -> ...;
 * the gradient is prod (c1 + c2); checks partial sums deep in a graph. */
START_TEST(test_deep_diamond) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 2)));
  tf_output h = x;
  double prod = 1;
  for (int i = 0; i < 20; i++) {
    double c1 = tt_rand_uniform(0.4, 0.7), c2 = tt_rand_uniform(0.4, 0.7);
    prod *= c1 + c2;
    h = op2(g, "Add", op2(g, "Mul", h, cf64(g, c1)), op2(g, "Mul", cf64(g, c2), h));
  }
  tf_output dx;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &h, 1, &x, 1, NULL, &dx, &st) == TF_OK, "%s", st.msg);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 2), -1, 1);
  tf_tensor *d = eval(g, "x", xv, dx);
  double want[2] = {prod, prod};
  check_values(d, want, 2, 1e-12 * prod);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

/* Unknown shapes: broadcasting falls back to BroadcastGradientArgs. */
START_TEST(test_dynamic_shapes) {
  tf_graph *g = tf_graph_new();
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_unknown()));
  tf_output b = out0(tt_placeholder(g, "b", TF_FLOAT64, tf_shape_unknown()));
  tf_output y = op2(g, "Mul", op2(g, "Add", x, b), b);
  tf_output xs[2] = {x, b}, dx[2];
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, xs, 2, NULL, dx, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_ge(count_ops(g, "BroadcastGradientArgs"), 1);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 2), -1, 1);
  tf_tensor *bv = tt_rand(TF_FLOAT64, tf_shape_of(1, 2), -1, 1);
  tf_session *s = tf_session_new(g, NULL, &st);
  char n0[200], n1[200];
  snprintf(n0, sizeof n0, "%s:%d", tf_node_name(dx[0].node), dx[0].index);
  snprintf(n1, sizeof n1, "%s:%d", tf_node_name(dx[1].node), dx[1].index);
  const char *feeds[2] = {"x", "b"}, *fetch[2] = {n0, n1};
  tf_tensor *fv[2] = {xv, bv}, *out[2];
  ck_assert_msg(tf_session_run(s, NULL, feeds, fv, 2, fetch, out, 2, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  tt_assert_shape(out[0], 2, 3, 2);
  tt_assert_shape(out[1], 1, 2);
  double wx[6], wb[2] = {0, 0};
  for (int i = 0; i < 6; i++) {
    double xi = tf_tensor_get_f64(xv, i), bi = tf_tensor_get_f64(bv, i % 2);
    wx[i] = bi;
    wb[i % 2] += xi + 2 * bi;
  }
  check_values(out[0], wx, 6, 1e-12);
  check_values(out[1], wb, 2, 1e-12);
  tt_free(out, 2);
  tt_free(fv, 2);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A variable's ref output as x: y = v * x gives dv = x (the consumer reads
 * the ref edge as a plain tensor). */
START_TEST(test_variable_x) {
  tf_graph *g = tf_graph_new();
  tf_attr_kv kv[2] = {{"dtype", tf_attr_type_v(TF_FLOAT64)},
                      {"shape", tf_attr_shape(tf_shape_of(1, 3))}};
  tf_output v = out0(tt_node(g, "VariableV2", "v", NULL, 0, kv, 2));
  tf_output x = out0(tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output y = op2(g, "Mul", v, x);
  tf_output dv;
  tf_status st;
  ck_assert_msg(tf_gradients(g, &y, 1, &v, 1, NULL, &dv, &st) == TF_OK, "%s", st.msg);
  ck_assert_ptr_nonnull(dv.node);
  ck_assert_int_eq(tf_node_output_type(dv.node, dv.index), TF_FLOAT64);
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), -3, 3);
  tf_tensor *d = eval(g, "x", xv, dv);
  check_values(d, xv->data, 3, 0);
  tt_free((tf_tensor *[]){xv, d}, 2);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("gradients");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_sum_of_partials);
  tcase_add_test(tc, test_zeros_for_unused_output);
  tcase_add_test(tc, test_stop_gradient);
  tcase_add_test(tc, test_unreachable_x);
  tcase_add_test(tc, test_grad_ys);
  tcase_add_test(tc, test_no_gradient_rollback);
  tcase_add_test(tc, test_control_flow_unimplemented);
  tcase_add_test(tc, test_bad_args);
  tcase_add_test(tc, test_multiple_ys);
  tcase_add_test(tc, test_sparse_kept_and_densified);
  tcase_add_test(tc, test_sparse_with_dense);
  tcase_add_test(tc, test_sparse_dynamic_shape);
  tcase_add_test(tc, test_composite_grad_check);
  tcase_add_test(tc, test_deep_diamond);
  tcase_add_test(tc, test_dynamic_shapes);
  tcase_add_test(tc, test_variable_x);
  suite_add_tcase(s, tc);
  return s;
}
