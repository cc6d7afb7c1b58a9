/* grad_tensor_array_test.c: gradients of the TensorArray ops checked
 * against float64 central differences (tt_grad_check: loss = Sum(y * w),
 * w fixed random, step 1e-6 * max(1, |x|); tolerance atol 1e-6 + rtol
 * 1e-6 * |numeric|) on seeded random inputs in [-1, 1]: write then stack,
 * read back (an element read twice gets both gradients added, an element
 * never read gets zeros), unstack then gather and read, split then concat
 * and read, scatter then gather with a permutation, and a nonlinear loss
 * over several reads. Also: the gradient nodes use TensorArrayGradV3 with
 * the tf_gradients scope as source, and two tf_gradients calls use two
 * sources. */
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/tensor_array.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const double ATOL = 1e-6, RTOL = 1e-6;

static tf_output o(tf_node *n) { return (tf_output){n, 0}; }
static tf_output ci(tf_graph *g, int32_t v) {
  return o(tt_const(g, NULL, tf_tensor_scalar_i32(v)));
}
static tf_output cvec(tf_graph *g, int n, const int32_t *v) {
  return o(tt_const(g, NULL, tf_tensor_vec_i32(n, v)));
}
static tf_output op2(tf_graph *g, const char *op, tf_output a, tf_output b) {
  return o(tt_node(g, op, NULL, (tf_output[]){a, b}, 2, NULL, 0));
}
static tf_output op1(tf_graph *g, const char *op, tf_output a) {
  return o(tt_node(g, op, NULL, &a, 1, NULL, 0));
}

static void ok(tf_code rc, const tf_status *st) {
  ck_assert_msg(rc == TF_OK, "%s", st->msg);
}

static tf_tensor_array new_ta(tf_graph *g, int size, bool keep) {
  tf_status st;
  tf_tensor_array ta;
  tf_tensor_array_options opts = {.keep_after_read = keep};
  ok(tf_tensor_array_new(g, TF_FLOAT64, ci(g, size), &opts, &ta, &st), &st);
  return ta;
}

static tf_output read_at(tf_graph *g, const tf_tensor_array *ta, int i) {
  tf_status st;
  tf_output r;
  ok(tf_tensor_array_read(g, ta, ci(g, i), &r, &st), &st);
  return r;
}

static tf_tensor **rand_inputs(int n, tf_shape s) {
  static tf_tensor *in[8];
  for (int i = 0; i < n; i++) in[i] = tt_rand(TF_FLOAT64, s, -1, 1);
  return in;
}

/* ---- write / read / stack ----------------------------------------------------- */

/* y = stack(write(x0), write(x1), write(x2)). */
static tf_output build_stack(tf_graph *g, const tf_output *in, int n, void *arg) {
  tf_status st;
  tf_tensor_array ta = new_ta(g, n, false);
  for (int i = 0; i < n; i++) {
    ok(tf_tensor_array_write(g, &ta, ci(g, i), in[i], &st), &st);
  }
  tf_output y;
  ok(tf_tensor_array_stack(g, &ta, &y, &st), &st);
  return y;
}

START_TEST(test_write_stack) {
  tf_tensor **in = rand_inputs(3, SHAPE(2, 3));
  tt_grad_check(build_stack, NULL, in, 3, NULL, ATOL, RTOL);
  tt_free(in, 3);
}
END_TEST

/* Writes x0..x3; y = r1 * r1' + r2 with index 1 read twice (the array
 * keeps elements after reads): index 1's gradient is the sum of both
 * reads', indices 0 and 3 are never read (zero gradient). */
static tf_output build_reads(tf_graph *g, const tf_output *in, int n, void *arg) {
  tf_status st;
  tf_tensor_array ta = new_ta(g, n, true);
  for (int i = 0; i < n; i++) {
    ok(tf_tensor_array_write(g, &ta, ci(g, i), in[i], &st), &st);
  }
  tf_output a = read_at(g, &ta, 1), b = read_at(g, &ta, 1), c = read_at(g, &ta, 2);
  return op2(g, "Add", op2(g, "Mul", a, b), op1(g, "Tanh", c));
}

START_TEST(test_reads_aggregate_and_zeros) {
  tf_tensor **in = rand_inputs(4, SHAPE(3));
  tt_grad_check(build_reads, NULL, in, 4, NULL, ATOL, RTOL);
  tt_free(in, 4);
}
END_TEST

/* ---- unstack / gather / read ---------------------------------------------------- */

/* x [5, 2] unstacked; y = gather([3, 0]) * read(4) (broadcast); rows 1
 * and 2 get zero gradients. */
static tf_output build_unstack(tf_graph *g, const tf_output *in, int n, void *arg) {
  tf_status st;
  tf_tensor_array ta = new_ta(g, 5, true);
  ok(tf_tensor_array_unstack(g, &ta, in[0], &st), &st);
  tf_output gth;
  ok(tf_tensor_array_gather(g, &ta, cvec(g, 2, (int32_t[]){3, 0}), &gth, &st), &st);
  return op2(g, "Mul", gth, read_at(g, &ta, 4));
}

START_TEST(test_unstack_gather_read) {
  tf_tensor **in = rand_inputs(1, SHAPE(5, 2));
  tt_grad_check(build_unstack, NULL, in, 1, NULL, ATOL, RTOL);
  tt_free(in, 1);
}
END_TEST

/* x0 [4, 3] scattered to [2, 0, 3, 1]; x1 [3] written at index 4 of a
 * dynamic array; y = Square(stack()) (all five, permuted). */
static tf_output build_scatter(tf_graph *g, const tf_output *in, int n, void *arg) {
  tf_status st;
  tf_tensor_array ta;
  tf_tensor_array_options dyn = {.dynamic_size = true};
  ok(tf_tensor_array_new(g, TF_FLOAT64, ci(g, 0), &dyn, &ta, &st), &st);
  ok(tf_tensor_array_scatter(g, &ta, cvec(g, 4, (int32_t[]){2, 0, 3, 1}), in[0], &st), &st);
  ok(tf_tensor_array_write(g, &ta, ci(g, 4), in[1], &st), &st);
  tf_output y;
  ok(tf_tensor_array_stack(g, &ta, &y, &st), &st);
  return op1(g, "Square", y);
}

START_TEST(test_scatter_stack) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT64, SHAPE(4, 3), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(3), -1, 1)};
  tt_grad_check(build_scatter, NULL, in, 2, NULL, ATOL, RTOL);
  tt_free(in, 2);
}
END_TEST

/* ---- split / concat ------------------------------------------------------------- */

/* x [6, 2] split into rows [2, 1, 3]; y = concat()^2 * Sum(Tanh(read(2)),
 * axis 0): the element at index 2 gets gradients from the concat and the
 * read, added in the gradient array. */
static tf_output build_split(tf_graph *g, const tf_output *in, int n, void *arg) {
  tf_status st;
  tf_tensor_array ta = new_ta(g, 3, true);
  tf_output lengths = o(tt_const(g, NULL, tf_tensor_vec_i64(3, (int64_t[]){2, 1, 3})));
  ok(tf_tensor_array_split(g, &ta, in[0], lengths, &st), &st);
  tf_output cat, len;
  ok(tf_tensor_array_concat(g, &ta, &cat, &len, &st), &st);
  tf_output r2 = read_at(g, &ta, 2); /* [3, 2] */
  tf_output s = o(tt_node(g, "Sum", NULL, (tf_output[]){op1(g, "Tanh", r2), ci(g, 0)},
                          2, NULL, 0)); /* [2] */
  return op2(g, "Mul", op2(g, "Mul", cat, cat), s);
}

START_TEST(test_split_concat_read) {
  tf_tensor **in = rand_inputs(1, SHAPE(6, 2));
  tt_grad_check(build_split, NULL, in, 1, NULL, ATOL, RTOL);
  tt_free(in, 1);
}
END_TEST

/* ---- the gradient graph itself -------------------------------------------------- */

static int count_grad_arrays(tf_graph *g, const char *source) {
  int n = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *x = tf_graph_node(g, i);
    if (strcmp(tf_node_op(x), "TensorArrayGradV3") != 0) continue;
    const char *s = NULL;
    tf_status st;
    ok(tf_node_attr_get_string(x, "source", &s, &st), &st);
    n += strcmp(s, source) == 0;
  }
  return n;
}

START_TEST(test_sources) {
  tf_graph *g = tf_graph_new();
  tf_output x = o(tt_placeholder(g, "x", TF_FLOAT64, SHAPE(3)));
  tf_output y = build_stack(g, (tf_output[]){x, x}, 2, NULL);
  tf_output loss = o(tt_node(g, "Sum", NULL, (tf_output[]){y, cvec(g, 2, (int32_t[]){0, 1})},
                             2, NULL, 0));
  tf_output dx[1];
  tf_status st;
  ok(tf_gradients(g, &loss, 1, &x, 1, NULL, dx, &st), &st);
  ok(tf_gradients(g, &loss, 1, &x, 1, NULL, dx, &st), &st);
  ck_assert_int_gt(count_grad_arrays(g, "gradients"), 0);
  ck_assert_int_eq(count_grad_arrays(g, "gradients"),
                   count_grad_arrays(g, "gradients_1"));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_tensor_array");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_write_stack);
  tcase_add_test(tc, test_reads_aggregate_and_zeros);
  tcase_add_test(tc, test_unstack_gather_read);
  tcase_add_test(tc, test_scatter_stack);
  tcase_add_test(tc, test_split_concat_read);
  tcase_add_test(tc, test_sources);
  suite_add_tcase(s, tc);
  return s;
}
