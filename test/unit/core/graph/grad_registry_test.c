/* grad_registry_test.c: the gradient registry (lookup, no op registered
 * twice, every registered op exists) and the helpers gradient functions
 * use: node naming, constants, Shape, unbroadcasting with static and
 * dynamic shapes (checked against plain loops), and error chaining. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

/* A context on a forward node named "fwd" (an Identity of a placeholder). */
typedef struct fixture {
  tf_graph *g;
  tf_node *fwd;
  tf_status st;
  tf_grad_ctx ctx;
} fixture;

static void fixture_init(fixture *f) {
  f->g = tf_graph_new();
  tf_output p = out0(tt_placeholder(f->g, "p", TF_FLOAT64, tf_shape_of(1, 2)));
  f->fwd = tt_node(f->g, "Identity", "fwd", &p, 1, NULL, 0);
  tf_status_init(&f->st);
  f->ctx = (tf_grad_ctx){.g = f->g, .node = f->fwd, .st = &f->st};
}

static tf_tensor *eval(tf_graph *g, const char *const *feeds, tf_tensor **fv,
                       int nf, tf_output what) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(what.node), what.index);
  const char *fetch = name;
  tf_tensor *out = NULL;
  ck_assert_msg(tf_session_run(s, NULL, feeds, fv, nf, &fetch, &out, 1, NULL, 0,
                               NULL, &st) == TF_OK, "%s", st.msg);
  tf_session_free(s);
  return out;
}

START_TEST(test_lookup) {
  ck_assert_ptr_nonnull(tf_grad_lookup("Mul"));
  ck_assert_ptr_nonnull(tf_grad_lookup("Relu"));
  ck_assert_ptr_null(tf_grad_lookup("NoSuchOp"));
  ck_assert_ptr_null(tf_grad_lookup(NULL));
  /* Not-differentiable ops have no gradient function. */
  ck_assert_ptr_null(tf_grad_lookup("StopGradient"));
  ck_assert_ptr_null(tf_grad_lookup("Shape"));
}
END_TEST

/* Test hook in grad_registry.c: entries registered for op. */

/* Every op with a gradient function exists and is not flagged not
 * differentiable, and no op has two functions (lookup would pick one). */
START_TEST(test_registrations_consistent) {
  int n;
  const tf_op_def *const *ops = tf_op_all(&n);
  int with_grad = 0;
  for (int i = 0; i < n; i++) {
    if (tf_grad_lookup(ops[i]->name) == NULL) continue;
    with_grad++;
    ck_assert_msg(tf__grad_count_registrations(ops[i]->name) == 1,
                  "%s has %d gradient functions", ops[i]->name,
                  tf__grad_count_registrations(ops[i]->name));
    ck_assert_msg(!(ops[i]->flags & TF_OP_NOT_DIFFERENTIABLE),
                  "%s is flagged not differentiable but has a gradient",
                  ops[i]->name);
  }
  ck_assert_int_ge(with_grad, 25);
}
END_TEST

START_TEST(test_naming_and_constants) {
  fixture f;
  fixture_init(&f);
  tf_graph_push_scope(f.g, "gradients");
  tf_output a = tf__grad_scalar(&f.ctx, TF_FLOAT32, 2.5);
  tf_output b = tf__grad_scalar(&f.ctx, TF_INT64, 7);
  tf_output c = tf__grad_scalar(&f.ctx, TF_FLOAT64, -1.25);
  int32_t v[3] = {4, -1, 9};
  tf_output d = tf__grad_ivec(&f.ctx, v, 3);
  tf_graph_pop_scope(f.g);
  ck_assert_int_eq(f.st.code, TF_OK);
  ck_assert_str_eq(tf_node_name(a.node), "gradients/fwd_grad/Const");
  ck_assert_str_eq(tf_node_name(b.node), "gradients/fwd_grad/Const_1");
  ck_assert_int_eq(tf_node_output_type(a.node, 0), TF_FLOAT32);
  ck_assert_int_eq(tf_node_output_type(b.node, 0), TF_INT64);
  tf_tensor *ta = eval(f.g, NULL, NULL, 0, a), *tb = eval(f.g, NULL, NULL, 0, b);
  tf_tensor *tc = eval(f.g, NULL, NULL, 0, c), *td = eval(f.g, NULL, NULL, 0, d);
  ck_assert_double_eq(tf_tensor_get_f64(ta, 0), 2.5);
  ck_assert_int_eq(tf_tensor_get_i64(tb, 0), 7);
  ck_assert_double_eq(tf_tensor_get_f64(tc, 0), -1.25);
  tt_assert_shape(td, 1, 3);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(tf_tensor_get_i64(td, i), v[i]);
  tt_free((tf_tensor *[]){ta, tb, tc, td}, 4);
  tf_graph_free(f.g);
}
END_TEST

/* Shape: a constant when the shape is known, a Shape node otherwise. */
START_TEST(test_shape_helper) {
  fixture f;
  fixture_init(&f);
  tf_output k = out0(tt_placeholder(f.g, "k", TF_FLOAT64, tf_shape_of(2, 3, 5)));
  tf_output u = out0(tt_placeholder(f.g, "u", TF_FLOAT64, tf_shape_of(2, -1, 5)));
  tf_output sk = tf__grad_shape(&f.ctx, k), su = tf__grad_shape(&f.ctx, u);
  ck_assert_int_eq(f.st.code, TF_OK);
  ck_assert_str_eq(tf_node_op(sk.node), "Const");
  ck_assert_str_eq(tf_node_op(su.node), "Shape");
  ck_assert_int_eq(tf_node_output_type(su.node, 0), TF_INT32);
  tf_tensor *uv = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 5), 0, 1);
  const char *feed = "u";
  tf_tensor *r = eval(f.g, &feed, &uv, 1, su);
  ck_assert_int_eq(tf_tensor_get_i64(r, 0), 4);
  ck_assert_int_eq(tf_tensor_get_i64(r, 1), 5);
  tt_free((tf_tensor *[]){uv, r}, 2);
  tf_graph_free(f.g);
}
END_TEST

/* unbroadcast(dy, x, other) against a plain sum: x [3,1] with other [1,4]
 * and x [4] with other [2,3,4], each with known and unknown shapes. */
static void check_unbroadcast(tf_shape xs, tf_shape os, bool known) {
  fixture f;
  fixture_init(&f);
  tf_shape out;
  tf_status st;
  ck_assert_int_eq(tf_shape_broadcast(&xs, &os, &out, &st), TF_OK);
  tf_output x = out0(tt_placeholder(f.g, "x", TF_FLOAT64, known ? xs : tf_shape_unknown()));
  tf_output o = out0(tt_placeholder(f.g, "o", TF_FLOAT64, known ? os : tf_shape_unknown()));
  tf_output dy = out0(tt_placeholder(f.g, "dy", TF_FLOAT64, tf_shape_unknown()));
  tf_output r = tf__grad_unbroadcast(&f.ctx, dy, x, o);
  ck_assert_msg(f.st.code == TF_OK, "%s", f.st.msg);
  tf_tensor *fv[3] = {tt_rand(TF_FLOAT64, xs, 0, 1), tt_rand(TF_FLOAT64, os, 0, 1),
                      tt_rand(TF_FLOAT64, out, -1, 1)};
  const char *feeds[3] = {"x", "o", "dy"};
  tf_tensor *got = eval(f.g, feeds, fv, 3, r);
  double want[64] = {0};
  for (int64_t i = 0; i < fv[2]->n; i++) {
    want[tt_bcast_src_index(&xs, &out, i)] += tf_tensor_get_f64(fv[2], i);
  }
  tf_tensor *wt = tt_tensor(TF_FLOAT64, xs, want);
  tt_assert_close(got, wt, 1e-12, 1e-12);
  tt_free(fv, 3);
  tt_free((tf_tensor *[]){got, wt}, 2);
  tf_graph_free(f.g);
}

START_TEST(test_unbroadcast) {
  check_unbroadcast(tf_shape_of(2, 3, 1), tf_shape_of(2, 1, 4), true);
  check_unbroadcast(tf_shape_of(2, 3, 1), tf_shape_of(2, 1, 4), false);
  check_unbroadcast(tf_shape_of(1, 4), tf_shape_of(3, 2, 3, 4), true);
  check_unbroadcast(tf_shape_of(1, 4), tf_shape_of(3, 2, 3, 4), false);
  check_unbroadcast(tf_shape_of(0), tf_shape_of(2, 2, 3), true);
  check_unbroadcast(tf_shape_of(0), tf_shape_of(2, 2, 3), false);
  check_unbroadcast(tf_shape_of(2, 2, 3), tf_shape_of(0), false);
}
END_TEST

/* Statically equal shapes: dy itself, no node. */
START_TEST(test_unbroadcast_same_shape) {
  fixture f;
  fixture_init(&f);
  tf_output x = out0(tt_placeholder(f.g, "x", TF_FLOAT64, tf_shape_of(2, 2, 3)));
  tf_output o = out0(tt_placeholder(f.g, "o", TF_FLOAT64, tf_shape_of(1, 3)));
  tf_output dy = out0(tt_placeholder(f.g, "dy", TF_FLOAT64, tf_shape_of(2, 2, 3)));
  int before = tf_graph_num_nodes(f.g);
  tf_output r = tf__grad_unbroadcast(&f.ctx, dy, x, o);
  ck_assert_ptr_eq(r.node, dy.node);
  ck_assert_int_eq(tf_graph_num_nodes(f.g), before);
  tf_graph_free(f.g);
}
END_TEST

/* After an error every helper returns NULL and keeps the first message;
 * a NULL input is reported too. */
START_TEST(test_error_chaining) {
  fixture f;
  fixture_init(&f);
  tf_output p = out0(tt_placeholder(f.g, "s", TF_STRING, tf_shape_of(1, 2)));
  tf_output bad = tf__grad_op1(&f.ctx, "Neg", p); /* Neg of a string */
  ck_assert_ptr_null(bad.node);
  ck_assert_int_ne(f.st.code, TF_OK);
  char first[sizeof f.st.msg];
  snprintf(first, sizeof first, "%s", f.st.msg);
  ck_assert_msg(strstr(first, "Neg") != NULL, "%s", first);
  tf_output later = tf__grad_op2(&f.ctx, "Add", bad, p);
  ck_assert_ptr_null(later.node);
  ck_assert_ptr_null(tf__grad_scalar(&f.ctx, TF_FLOAT32, 1).node);
  ck_assert_str_eq(f.st.msg, first);
  fixture g;
  fixture_init(&g);
  tf_output none = {NULL, 0};
  ck_assert_ptr_null(tf__grad_op1(&g.ctx, "Neg", none).node);
  ck_assert_int_eq(g.st.code, TF_INTERNAL);
  ck_assert_msg(strstr(g.st.msg, "fwd") != NULL, "%s", g.st.msg);
  tf_graph_free(f.g);
  tf_graph_free(g.g);
}
END_TEST

/* The list form: AddN over three inputs. */
START_TEST(test_op_list) {
  fixture f;
  fixture_init(&f);
  tf_output c[3];
  for (int i = 0; i < 3; i++) c[i] = tf__grad_scalar(&f.ctx, TF_FLOAT64, i + 1);
  tf_output s = tf__grad_op_list(&f.ctx, "AddN", c, 3, NULL, 0);
  ck_assert_msg(f.st.code == TF_OK, "%s", f.st.msg);
  tf_tensor *t = eval(f.g, NULL, NULL, 0, s);
  ck_assert_double_eq(tf_tensor_get_f64(t, 0), 6);
  tf_tensor_unref(t);
  ck_assert_ptr_eq(tf__grad_in(&f.ctx, 0).node, tf_graph_find(f.g, "p"));
  ck_assert_ptr_eq(tf__grad_out(&f.ctx, 0).node, f.fwd);
  tf_graph_free(f.g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_registry");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_lookup);
  tcase_add_test(tc, test_registrations_consistent);
  tcase_add_test(tc, test_naming_and_constants);
  tcase_add_test(tc, test_shape_helper);
  tcase_add_test(tc, test_unbroadcast);
  tcase_add_test(tc, test_unbroadcast_same_shape);
  tcase_add_test(tc, test_error_chaining);
  tcase_add_test(tc, test_op_list);
  suite_add_tcase(s, tc);
  return s;
}
