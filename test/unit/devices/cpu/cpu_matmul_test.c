/* cpu_matmul_test.c: MatMul and BatchMatMul(V2) CPU kernels against a plain
 * float64 triple loop (and numpy's matmul for broadcasting), on random
 * shapes with every transpose combination, empty and degenerate shapes,
 * each dtype, and bad inputs.
 *
 * Tolerance: for float outputs, |got - ref| <= k * eps * max_ij
 * sum_p |a_ip * b_pj| with eps the dtype's machine epsilon (FLT_EPSILON or
 * DBL_EPSILON): the textbook bound for a length-k dot product in any
 * summation order, which also covers rounding the float64 reference to
 * float32. Integer outputs must match exactly. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

/* SHAPE(2, 3) is [2, 3] with int64_t dims (tf_shape_of reads int64_t
 * varargs, so plain int literals there would be undefined behaviour). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static int64_t rand_dim(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

static double eps_of(tf_dtype dt) {
  return dt == TF_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
}

static tf_tensor *rand_operand(tf_dtype dt, tf_shape s) {
  return tf_dtype_is_integer(dt) ? tt_rand(dt, s, -9, 9)
                                 : tt_rand(dt, s, -1, 1);
}

/* ---- references -------------------------------------------------------- */

/* The tensor's values as a float64 array (caller frees). */
static double *as_f64(const tf_tensor *t) {
  double *v = malloc((size_t)t->n * sizeof(double) + 1);
  for (int64_t i = 0; i < t->n; i++) {
    v[i] = tf_tensor_get_f64(t, i);
  }
  return v;
}

/* Product of the matrices at x and y (row lengths cx and cy as stored;
 * used transposed when ax/ay), written to ref[m*n] row-major; *bound
 * tracks max_ij sum_p |x_ip y_pj|. */
static void ref_product(const double *x, int64_t cx, bool ax, const double *y,
                        int64_t cy, bool ay, int64_t m, int64_t n, int64_t k,
                        double *ref, double *bound) {
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double s = 0, sa = 0;
      for (int64_t p = 0; p < k; p++) {
        double xv = x[ax ? p * cx + i : i * cx + p];
        double yv = y[ay ? j * cy + p : p * cy + j];
        s += xv * yv;
        sa += fabs(xv * yv);
      }
      ref[i * n + j] = s;
      *bound = fmax(*bound, sa);
    }
  }
}

/* Runs MatMul on a and b and compares with the float64 reference. */
static void check_matmul(tf_tensor *a, bool ta, tf_tensor *b, bool tb) {
  int64_t m = a->shape.dims[ta ? 1 : 0], k = a->shape.dims[ta ? 0 : 1];
  int64_t n = b->shape.dims[tb ? 0 : 1];
  tf_attr_kv attrs[] = {{"transpose_a", tf_attr_bool(ta)},
                        {"transpose_b", tf_attr_bool(tb)}};
  tf_tensor *in[] = {a, b};
  tf_tensor *got = tt_run1("MatMul", in, 2, attrs, 2);
  double *ref = calloc((size_t)(m * n) + 1, sizeof(double));
  double bound = 0, *av = as_f64(a), *bv = as_f64(b);
  ref_product(av, a->shape.dims[1], ta, bv, b->shape.dims[1], tb, m, n, k,
              ref, &bound);
  free(av);
  free(bv);
  tf_tensor *want = tt_tensor(a->dtype, SHAPE(m, n), ref);
  double atol = tf_dtype_is_integer(a->dtype)
                    ? 0
                    : (double)k * eps_of(a->dtype) * bound;
  tt_assert_close(got, want, atol, 0);
  free(ref);
  tf_tensor_unref(got);
  tf_tensor_unref(want);
}

static void check_matmul_shapes(tf_dtype dt, int64_t m, int64_t n, int64_t k,
                                bool ta, bool tb) {
  tf_tensor *a = rand_operand(dt, ta ? SHAPE(k, m) : SHAPE(m, k));
  tf_tensor *b = rand_operand(dt, tb ? SHAPE(n, k) : SHAPE(k, n));
  check_matmul(a, ta, b, tb);
  tf_tensor_unref(a);
  tf_tensor_unref(b);
}

/* ---- MatMul ------------------------------------------------------------ */

START_TEST(matmul_random_all_transposes) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (int trial = 0; trial < 12; trial++) {
    int64_t m = rand_dim(1, 40), n = rand_dim(1, 40), k = rand_dim(1, 40);
    for (int c = 0; c < 4; c++) {
      for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        check_matmul_shapes(dts[d], m, n, k, c & 1, c & 2);
      }
    }
  }
}
END_TEST

START_TEST(matmul_large_threaded) {
  /* Large enough for OpenBLAS's threads and the integer loop's row split,
   * with odd sizes so no block divides evenly. */
  check_matmul_shapes(TF_FLOAT32, 257, 131, 301, false, false);
  check_matmul_shapes(TF_FLOAT32, 129, 263, 200, true, true);
  check_matmul_shapes(TF_FLOAT64, 150, 170, 190, false, true);
  check_matmul_shapes(TF_INT32, 150, 300, 190, true, false);
  check_matmul_shapes(TF_INT64, 97, 520, 140, false, true);
}
END_TEST

START_TEST(matmul_degenerate_shapes) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
    for (int c = 0; c < 4; c++) {
      check_matmul_shapes(dts[d], 1, 1, 1, c & 1, c & 2);
      check_matmul_shapes(dts[d], 0, 5, 3, c & 1, c & 2);
      check_matmul_shapes(dts[d], 4, 0, 3, c & 1, c & 2);
      check_matmul_shapes(dts[d], 0, 0, 0, c & 1, c & 2);
      check_matmul_shapes(dts[d], 1, 7, 9, c & 1, c & 2); /* row x matrix */
      check_matmul_shapes(dts[d], 9, 1, 7, c & 1, c & 2); /* matrix x col */
    }
  }
}
END_TEST

START_TEST(matmul_k_zero_gives_zeros) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
    tf_tensor *in[] = {rand_operand(dts[d], SHAPE(3, 0)),
                       rand_operand(dts[d], SHAPE(0, 4))};
    tf_tensor *got = tt_run1("MatMul", in, 2, NULL, 0);
    tt_assert_shape(got, 2, 3, 4);
    for (int64_t i = 0; i < got->n; i++) {
      ck_assert(tf_tensor_get_f64(got, i) == 0.0);
    }
    tf_tensor_unref(got);
    tt_free(in, 2);
  }
}
END_TEST

START_TEST(matmul_hand_case) {
  /* [[1,2,3],[4,5,6]] . [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]. */
  const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
  const double want_v[] = {58, 64, 139, 154};
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
    tf_tensor *in[] = {tt_tensor(dts[d], SHAPE(2, 3), av),
                       tt_tensor(dts[d], SHAPE(3, 2), bv)};
    tf_tensor *got = tt_run1("MatMul", in, 2, NULL, 0);
    tf_tensor *want = tt_tensor(dts[d], SHAPE(2, 2), want_v);
    tt_assert_close(got, want, 0, 0);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
    tt_free(in, 2);
  }
}
END_TEST

START_TEST(matmul_int32_wraps) {
  /* Sums past 2^31 wrap modulo 2^32, as TF's int32 kernel does:
   * [[2^30, 2^30], [2^30, 1]] . [[2, 2], [2, 5]] =
   * [[2^32, 7 * 2^30], [2^31 + 2, 2^31 + 5]] wrapped. */
  const int64_t av[] = {1 << 30, 1 << 30, 1 << 30, 1};
  const int64_t bv[] = {2, 2, 2, 5};
  tf_tensor *in[] = {tt_tensor_i(TF_INT32, SHAPE(2, 2), av),
                     tt_tensor_i(TF_INT32, SHAPE(2, 2), bv)};
  tf_tensor *got = tt_run1("MatMul", in, 2, NULL, 0);
  const int32_t *g = got->data;
  ck_assert_int_eq(g[0], 0);
  ck_assert_int_eq(g[1], -1073741824);
  ck_assert_int_eq(g[2], INT32_MIN + 2);
  ck_assert_int_eq(g[3], INT32_MIN + 5);
  tf_tensor_unref(got);
  tt_free(in, 2);
}
END_TEST

START_TEST(matmul_bad_inputs) {
  tf_tensor *in[] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1),
                     tt_rand(TF_FLOAT32, SHAPE(4, 5), -1, 1)};
  const char *msg = tt_run_fail("MatMul", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3]") && strstr(msg, "[4,5]"), "%s", msg);
  tt_free(in, 2);
  /* Output element count overflows int64: [2^40, 0] . [0, 2^40]. */
  tf_tensor *big[] = {tt_rand(TF_FLOAT32, SHAPE((int64_t)1 << 40, 0), 0, 1),
                      tt_rand(TF_FLOAT32, SHAPE(0, (int64_t)1 << 40), 0, 1)};
  msg = tt_run_fail("MatMul", big, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "1099511627776") != NULL, "%s", msg);
  tt_free(big, 2);
  /* No kernel for float16. */
  tf_tensor *half[] = {tt_rand(TF_FLOAT16, SHAPE(2, 2), -1, 1),
                       tt_rand(TF_FLOAT16, SHAPE(2, 2), -1, 1)};
  msg = tt_run_fail("MatMul", half, 2, NULL, 0, TF_NOT_FOUND);
  tt_free(half, 2);
}
END_TEST

/* Runs op's kernel on a node whose two inputs are Placeholders of unknown
 * shape, so only the kernel's own checks see the shapes. */
static void kernel_expect_error(const char *op, tf_tensor *x, tf_tensor *y,
                                const char *n1, const char *n2) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output in[2];
  for (int i = 0; i < 2; i++) {
    in[i] = (tf_output){
        tt_placeholder(g, NULL, x->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "mm");
  tf_node_add_input(b, in[0]);
  tf_node_add_input(b, in[1]);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  tf_tensor *inputs[] = {x, y}, *out[1] = {NULL};
  tf_status_init(&st);
  tf_code rc = tf_kernel_run_node(n, NULL, inputs, out, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT, "%s: %s", tf_code_name(rc), st.msg);
  ck_assert_msg(strstr(st.msg, "mm") && strstr(st.msg, n1) &&
                    strstr(st.msg, n2),
                "message '%s' should name 'mm', %s and %s", st.msg, n1, n2);
  tf_graph_free(g);
}

START_TEST(kernel_checks_shapes) {
  tf_tensor *t[] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1),
                    tt_rand(TF_FLOAT32, SHAPE(4, 5), -1, 1),
                    tt_rand(TF_FLOAT32, SHAPE(3), -1, 1),
                    tt_rand(TF_FLOAT32, SHAPE(2, 3, 4), -1, 1),
                    tt_rand(TF_FLOAT32, SHAPE(3, 4, 5), -1, 1),
                    tt_rand(TF_FLOAT32, SHAPE(2, 5, 6), -1, 1)};
  kernel_expect_error("MatMul", t[0], t[1], "[2,3]", "[4,5]");
  kernel_expect_error("MatMul", t[0], t[2], "[2,3]", "[3]");
  kernel_expect_error("BatchMatMul", t[3], t[4], "[2,3,4]", "[3,4,5]");
  kernel_expect_error("BatchMatMulV2", t[3], t[5], "[2,3,4]", "[2,5,6]");
  kernel_expect_error("BatchMatMul", t[2], t[3], "[3]", "[2,3,4]");
  tt_free(t, 6);
}
END_TEST

/* ---- BatchMatMul ------------------------------------------------------- */

/* Runs BatchMatMul on x [..., M, K] and y [..., K, N] (pre-adjoint) and
 * compares with a broadcasting float64 reference. */
static void check_bmm(const char *op, tf_tensor *x, bool ax, tf_tensor *y,
                      bool ay) {
  int rx = x->shape.rank, ry = y->shape.rank;
  int64_t rowsx = x->shape.dims[rx - 2], cx = x->shape.dims[rx - 1];
  int64_t rowsy = y->shape.dims[ry - 2], cy = y->shape.dims[ry - 1];
  int64_t m = ax ? cx : rowsx, k = ax ? rowsx : cx, n = ay ? rowsy : cy;
  tf_shape bx = tf_shape_make(rx - 2, x->shape.dims);
  tf_shape by = tf_shape_make(ry - 2, y->shape.dims), bo;
  ck_assert(tf_shape_broadcast(&bx, &by, &bo, NULL) == TF_OK);
  int64_t nb = tf_shape_num_elements(&bo);
  double *ref = calloc((size_t)(nb * m * n) + 1, sizeof(double)), bound = 0;
  double *xv = as_f64(x), *yv = as_f64(y);
  for (int64_t b = 0; b < nb; b++) {
    /* Decode b into output batch indices; map each onto x and y. */
    int64_t rest = b, xi = 0, yi = 0, xmul = 1, ymul = 1;
    for (int d = bo.rank - 1; d >= 0; d--) {
      int64_t idx = rest % bo.dims[d];
      rest /= bo.dims[d];
      int dx = d - (bo.rank - bx.rank), dy = d - (bo.rank - by.rank);
      if (dx >= 0) {
        xi += (bx.dims[dx] == 1 ? 0 : idx) * xmul;
        xmul *= bx.dims[dx];
      }
      if (dy >= 0) {
        yi += (by.dims[dy] == 1 ? 0 : idx) * ymul;
        ymul *= by.dims[dy];
      }
    }
    ref_product(xv + xi * rowsx * cx, cx, ax, yv + yi * rowsy * cy, cy, ay,
                m, n, k, ref + b * m * n, &bound);
  }
  free(xv);
  free(yv);
  tf_shape os = bo;
  os.dims[os.rank++] = m;
  os.dims[os.rank++] = n;
  tf_attr_kv attrs[] = {{"adj_x", tf_attr_bool(ax)},
                        {"adj_y", tf_attr_bool(ay)}};
  tf_tensor *in[] = {x, y};
  tf_tensor *got = tt_run1(op, in, 2, attrs, 2);
  tf_tensor *want = tt_tensor(x->dtype, os, ref);
  double atol = tf_dtype_is_integer(x->dtype)
                    ? 0
                    : (double)k * eps_of(x->dtype) * bound;
  tt_assert_close(got, want, atol, 0);
  free(ref);
  tf_tensor_unref(got);
  tf_tensor_unref(want);
}

/* x has batch dims bx and matrix [m, k] (or [k, m] with ax), y likewise. */
static void check_bmm_dims(const char *op, tf_dtype dt, tf_shape bx,
                           tf_shape by, int64_t m, int64_t n, int64_t k,
                           bool ax, bool ay) {
  tf_shape sx = bx, sy = by;
  sx.dims[sx.rank++] = ax ? k : m;
  sx.dims[sx.rank++] = ax ? m : k;
  sy.dims[sy.rank++] = ay ? n : k;
  sy.dims[sy.rank++] = ay ? k : n;
  tf_tensor *x = rand_operand(dt, sx), *y = rand_operand(dt, sy);
  check_bmm(op, x, ax, y, ay);
  tf_tensor_unref(x);
  tf_tensor_unref(y);
}

START_TEST(bmm_broadcasting) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  const char *ops[] = {"BatchMatMul", "BatchMatMulV2"};
  for (int c = 0; c < 4; c++) {
    bool ax = c & 1, ay = c & 2;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
      const char *op = ops[(c + (int)d) % 2];
      check_bmm_dims(op, dts[d], SHAPE(2, 1), SHAPE(3), 3, 4, 5, ax, ay);
      check_bmm_dims(op, dts[d], SHAPE(1, 3, 1), SHAPE(2, 1, 4), 2, 3, 4, ax,
                     ay);
      check_bmm_dims(op, dts[d], tf_shape_scalar(), SHAPE(2, 3), 4, 2, 3, ax,
                     ay);
      check_bmm_dims(op, dts[d], SHAPE(4), SHAPE(4), 5, 6, 7, ax, ay);
      check_bmm_dims(op, dts[d], tf_shape_scalar(), tf_shape_scalar(), 3, 3, 3,
                     ax, ay);
    }
  }
}
END_TEST

START_TEST(bmm_size_regimes) {
  /* Tiny and mid-size float matrices (many batches over the pool, one
   * single-threaded BLAS call each), large ones (one at a time on
   * OpenBLAS's threads), and integer ones through the loop both across
   * batches and split by rows. */
  for (int c = 0; c < 4; c++) {
    bool ax = c & 1, ay = c & 2;
    check_bmm_dims("BatchMatMul", TF_FLOAT32, SHAPE(3000), SHAPE(3000), 4, 3,
                   5, ax, ay);
    check_bmm_dims("BatchMatMul", TF_FLOAT64, SHAPE(2, 20), SHAPE(20), 21, 19,
                   23, ax, ay);
    check_bmm_dims("BatchMatMulV2", TF_FLOAT32, SHAPE(3), SHAPE(1), 90, 80,
                   70, ax, ay);
    check_bmm_dims("BatchMatMul", TF_INT32, SHAPE(2), SHAPE(2), 70, 80, 60,
                   ax, ay);
    check_bmm_dims("BatchMatMulV2", TF_INT64, SHAPE(2000), SHAPE(1), 3, 4, 2,
                   ax, ay);
  }
}
END_TEST

START_TEST(bmm_empty) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
    check_bmm_dims("BatchMatMul", dts[d], SHAPE(0), SHAPE(1), 3, 4, 5, false,
                   false);
    check_bmm_dims("BatchMatMul", dts[d], SHAPE(2), SHAPE(2), 0, 4, 5, true,
                   false);
    check_bmm_dims("BatchMatMul", dts[d], SHAPE(2), SHAPE(1), 3, 4, 0, false,
                   true); /* k = 0: zeros */
  }
}
END_TEST

START_TEST(bmm_vs_numpy) {
  tf_tensor *in[] = {tt_rand(TF_FLOAT64, SHAPE(3, 1, 4, 5), -1, 1),
                     tt_rand(TF_FLOAT64, SHAPE(2, 6, 5), -1, 1)};
  tf_attr_kv attrs[] = {{"adj_y", tf_attr_bool(true)}};
  tf_tensor *got = tt_run1("BatchMatMulV2", in, 2, attrs, 1);
  tf_tensor *want[1] = {NULL};
  int n = tt_numpy("outs.append(np.matmul(ins[0], np.swapaxes(ins[1], -1, "
                   "-2)))",
                   in, 2, want, 1);
  if (n >= 0) {
    ck_assert_int_eq(n, 1);
    tt_assert_shape(got, 4, 3, 2, 4, 6);
    /* k = 5 products of values in [-1, 1]. */
    tt_assert_close(got, want[0], 5 * 5 * DBL_EPSILON, 0);
    tf_tensor_unref(want[0]);
  }
  tf_tensor_unref(got);
  tt_free(in, 2);
}
END_TEST

/* grad_x / grad_y are hints only: any setting gives numpy's product. */
START_TEST(bmm_gradient_hints_vs_numpy) {
  tf_tensor *in[] = {tt_rand(TF_FLOAT64, SHAPE(2, 3, 4), -1, 1),
                     tt_rand(TF_FLOAT64, SHAPE(2, 4, 5), -1, 1)};
  tf_tensor *want[1] = {NULL};
  int n = tt_numpy("outs.append(np.matmul(ins[0], ins[1]))", in, 2, want, 1);
  for (int c = 0; c < 4; c++) {
    tf_attr_kv attrs[] = {{"grad_x", tf_attr_bool(c & 1)},
                          {"grad_y", tf_attr_bool(c & 2)}};
    tf_tensor *got = tt_run1("BatchMatMulV2", in, 2, attrs, 2);
    tt_assert_shape(got, 3, 2, 3, 5);
    if (n >= 0) {
      ck_assert_int_eq(n, 1);
      /* k = 4 products of values in [-1, 1]. */
      tt_assert_close(got, want[0], 4 * 4 * DBL_EPSILON, 0);
    }
    tf_tensor_unref(got);
  }
  tf_tensor_unref(want[0]);
  tt_free(in, 2);
}
END_TEST

START_TEST(bmm_bad_inputs) {
  tf_tensor *in[] = {tt_rand(TF_FLOAT32, SHAPE(2, 3, 4), -1, 1),
                     tt_rand(TF_FLOAT32, SHAPE(3, 4, 5), -1, 1)};
  const char *msg =
      tt_run_fail("BatchMatMul", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3,4]") && strstr(msg, "[3,4,5]"), "%s", msg);
  tt_free(in, 2);
  tf_tensor *in2[] = {tt_rand(TF_FLOAT64, SHAPE(2, 3, 4), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(2, 3, 4), -1, 1)};
  msg = tt_run_fail("BatchMatMulV2", in2, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "size-incompatible"), "%s", msg);
  tt_free(in2, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_matmul");
  TCase *tc = tcase_create("matmul");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, matmul_random_all_transposes);
  tcase_add_test(tc, matmul_large_threaded);
  tcase_add_test(tc, matmul_degenerate_shapes);
  tcase_add_test(tc, matmul_k_zero_gives_zeros);
  tcase_add_test(tc, matmul_hand_case);
  tcase_add_test(tc, matmul_int32_wraps);
  tcase_add_test(tc, matmul_bad_inputs);
  tcase_add_test(tc, kernel_checks_shapes);
  suite_add_tcase(s, tc);
  TCase *tb = tcase_create("batch_matmul");
  tcase_set_timeout(tb, 60);
  tcase_add_test(tb, bmm_broadcasting);
  tcase_add_test(tb, bmm_size_regimes);
  tcase_add_test(tb, bmm_empty);
  tcase_add_test(tb, bmm_vs_numpy);
  tcase_add_test(tb, bmm_gradient_hints_vs_numpy);
  tcase_add_test(tb, bmm_bad_inputs);
  suite_add_tcase(s, tb);
  return s;
}
