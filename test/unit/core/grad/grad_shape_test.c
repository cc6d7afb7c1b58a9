/* grad_shape_test.c: the shape helpers of the gradient functions
 * (grad_shape.c): reading Const values, static shapes and ranks, folding
 * constant shape arithmetic into Const nodes (checked by node op and
 * value), falling back to Shape/Slice/ConcatV2/Size nodes (checked by
 * running them), input groups for list arguments, and error passing (a
 * NULL input sets the status once and later helpers return NULL). */
#include <check.h>
#include <stdio.h>

#include "lib/core/grad/grad_shape.h"
#include "test/unit/core/grad/grad_testlib.h"

typedef struct fixture {
  tf_graph *g;
  tf_status st;
  tf_grad_ctx ctx;
  tf_output x, xh; /* placeholder [2, 3] and its dims hidden */
} fixture;

static void setup(fixture *f) {
  f->g = tf_graph_new();
  tf_status_init(&f->st);
  f->x = gt_o(tt_placeholder(f->g, "x", TF_FLOAT64, GT_SHAPE(2, 3)));
  f->xh = gt_hide(f->g, f->x, GT_HIDE_DIMS);
  f->ctx = (tf_grad_ctx){.g = f->g, .node = f->x.node, .st = &f->st};
}

/* Runs o with x fed a [2, 3] tensor. */
static tf_tensor *run(fixture *f, tf_output o) {
  tf_tensor *x = tt_rand(TF_FLOAT64, GT_SHAPE(2, 3), 0, 1);
  const char *names[1] = {"x"};
  tf_tensor *r = gt_run(f->g, names, &x, 1, o);
  tf_tensor_unref(x);
  return r;
}

static void assert_ints(const tf_tensor *t, int n, const int64_t *want) {
  ck_assert_int_eq(t->n, n);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(tf_tensor_get_i64(t, i), want[i]);
  }
}

static void assert_const_ints(tf_output o, int n, const int64_t *want) {
  int64_t v[16];
  ck_assert_str_eq(tf_node_op(o.node), "Const");
  ck_assert_int_eq(tf__gs_const_ints(o, v, 16), n);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(v[i], want[i]);
  }
}

START_TEST(test_const_and_static) {
  fixture f;
  setup(&f);
  tf_output m = gt_o(tt_const(f.g, NULL, tt_tensor_i(TF_INT64, GT_SHAPE(2, 2),
                                                     (int64_t[]){1, 2, 3, 4})));
  assert_const_ints(m, 4, (int64_t[]){1, 2, 3, 4});
  int64_t v[4];
  ck_assert_int_eq(tf__gs_const_ints(m, v, 3), -1); /* too many */
  ck_assert_int_eq(tf__gs_const_ints(f.x, v, 4), -1); /* not a Const */
  tf_output fl = gt_o(tt_const(f.g, NULL, tf_tensor_scalar_f64(1)));
  ck_assert_int_eq(tf__gs_const_ints(fl, v, 4), -1);  /* not ints */
  ck_assert_ptr_nonnull(tf__gs_const(fl));
  ck_assert_ptr_null(tf__gs_const(f.x));
  tf_shape s;
  ck_assert(tf__gs_static_shape(f.x, &s));
  ck_assert(tf_shape_equal(&s, &(tf_shape){2, {2, 3}}));
  ck_assert(!tf__gs_static_shape(f.xh, &s));
  ck_assert_int_eq(tf__gs_rank(f.xh), 2);
  ck_assert_int_eq(tf__gs_rank(gt_hide(f.g, f.x, GT_HIDE_RANK)), -1);
  ck_assert_int_eq(tf__gs_rank((tf_output){0}), -1);
  tf_graph_free(f.g);
}
END_TEST

START_TEST(test_folding) {
  fixture f;
  setup(&f);
  tf_grad_ctx *c = &f.ctx;
  /* Reshape to x's own static shape, identity transpose, same-type cast:
   * no node. */
  int n0 = tf_graph_num_nodes(f.g);
  ck_assert_ptr_eq(tf__gs_reshape_to(c, f.x, (int64_t[]){2, 3}, 2).node, f.x.node);
  ck_assert_int_eq(tf_graph_num_nodes(f.g), n0 + 1); /* the shape Const */
  ck_assert_ptr_eq(tf__gs_transpose(c, f.x, (int[]){0, 1}, 2).node, f.x.node);
  ck_assert_ptr_eq(tf__gs_cast(c, f.x, TF_FLOAT64).node, f.x.node);
  tf_output t = tf__gs_transpose(c, f.x, (int[]){1, 0}, 2);
  ck_assert_str_eq(tf_node_op(t.node), "Transpose");
  /* Size, slices and concats of constants fold. */
  assert_const_ints(tf__gs_size(c, f.x), 1, (int64_t[]){6});
  tf_output v = tf__grad_ivec(c, (int32_t[]){4, 5, 6, 7}, 4);
  assert_const_ints(tf__gs_vec_slice(c, v, 1, 2), 2, (int64_t[]){5, 6});
  assert_const_ints(tf__gs_vec_slice(c, v, 2, -1), 2, (int64_t[]){6, 7});
  tf_output parts[3] = {v, tf__grad_ivec(c, NULL, 0), tf__grad_ivec(c, (int32_t[]){9}, 1)};
  assert_const_ints(tf__gs_vec_concat(c, parts, 3), 5, (int64_t[]){4, 5, 6, 7, 9});
  ck_assert_ptr_eq(tf__gs_vec_concat(c, parts, 1).node, v.node);
  ck_assert_int_eq(f.st.code, TF_OK);
  tf_graph_free(f.g);
}
END_TEST

START_TEST(test_dynamic) {
  fixture f;
  setup(&f);
  tf_grad_ctx *c = &f.ctx;
  tf_output size = tf__gs_size(c, f.xh);
  ck_assert_str_eq(tf_node_op(size.node), "Size");
  tf_output s = tf__grad_shape(c, f.xh);
  tf_output sl = tf__gs_vec_slice(c, s, 1, -1);
  ck_assert_str_eq(tf_node_op(sl.node), "Slice");
  tf_output parts[2] = {s, tf__grad_ivec(c, (int32_t[]){7}, 1)};
  tf_output cat = tf__gs_vec_concat(c, parts, 2);
  ck_assert_str_eq(tf_node_op(cat.node), "ConcatV2");
  tf_output r = tf__gs_reshape(c, f.xh, tf__grad_ivec(c, (int32_t[]){3, 2}, 2));
  ck_assert_str_eq(tf_node_op(r.node), "Reshape");
  tf_output sum = tf__gs_sum(c, f.xh, tf__grad_ivec(c, (int32_t[]){1}, 1), true);
  ck_assert_int_eq(f.st.code, TF_OK);
  tf_tensor *got[5] = {run(&f, size), run(&f, sl), run(&f, cat), run(&f, r),
                       run(&f, sum)};
  assert_ints(got[0], 1, (int64_t[]){6});
  assert_ints(got[1], 1, (int64_t[]){3});
  assert_ints(got[2], 3, (int64_t[]){2, 3, 7});
  ck_assert(tf_shape_equal(&got[3]->shape, &(tf_shape){2, {3, 2}}));
  ck_assert(tf_shape_equal(&got[4]->shape, &(tf_shape){2, {2, 1}}));
  tt_free(got, 5);
  tf_graph_free(f.g);
}
END_TEST

START_TEST(test_groups_and_errors) {
  fixture f;
  setup(&f);
  tf_grad_ctx *c = &f.ctx;
  /* DynamicStitch: two list arguments of two inputs each. */
  tf_output in[4] = {tf__grad_ivec(c, (int32_t[]){1}, 1),
                     tf__grad_ivec(c, (int32_t[]){0}, 1),
                     tf__grad_ivec(c, (int32_t[]){10}, 1),
                     tf__grad_ivec(c, (int32_t[]){20}, 1)};
  tf_output st = tf__gs_op_groups(c, "DynamicStitch", in, (int[]){2, 2}, 2,
                                  NULL, 0);
  ck_assert_msg(st.node != NULL, "%s", f.st.msg);
  ck_assert_str_eq(tf_node_name(st.node), "x_grad/DynamicStitch");
  tf_tensor *v = run(&f, st);
  assert_ints(v, 2, (int64_t[]){20, 10});
  tf_tensor_unref(v);
  /* A missing input: INTERNAL naming the node, then NULLs. */
  tf_output bad[2] = {{0}, in[0]};
  ck_assert_ptr_null(tf__gs_op_groups(c, "ConcatV2", bad, (int[]){1, 0}, 2, NULL,
                                      0).node);
  ck_assert_int_eq(f.st.code, TF_INTERNAL);
  ck_assert_msg(strstr(f.st.msg, "'x'"), "%s", f.st.msg);
  ck_assert_ptr_null(tf__gs_transpose(c, f.x, (int[]){1, 0}, 2).node);
  ck_assert_ptr_null(tf__gs_reshape_to(c, f.x, (int64_t[]){6}, 1).node);
  ck_assert_ptr_null(tf__gs_sum(c, f.x, in[0], false).node);
  /* A graph-build error keeps its status. */
  tf_status_init(&f.st);
  ck_assert_ptr_null(tf__gs_op_attr(c, "Sum", f.x, in[0], "keep_dims",
                                    tf_attr_int(3)).node);
  ck_assert_int_eq(f.st.code, TF_INVALID_ARGUMENT);
  tf_graph_free(f.g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_shape");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_const_and_static);
  tcase_add_test(tc, test_folding);
  tcase_add_test(tc, test_dynamic);
  tcase_add_test(tc, test_groups_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
