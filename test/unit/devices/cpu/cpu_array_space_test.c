/* cpu_array_space_test.c: the CPU DepthToSpace and SpaceToDepth kernels
 * (NHWC) against a plain reference written here in double (spatial pixel
 * (h*b + i, w*b + j), channel c <-> depth pixel (h, w), channel
 * (i*b + j)*C + c), on random shapes with empty batches and several
 * dtypes including strings, the round trip, TF's documented example, and
 * the errors (NCHW refused on CPU, indivisible dims, rank). Comparisons
 * are exact (tolerance 0): the ops only move data. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_tensor *space_op(const char *op, tf_tensor *x, int64_t b,
                           const char *fmt) {
  tf_attr_kv kv[2] = {{"block_size", tf_attr_int(b)},
                      {"data_format", tf_attr_string(fmt)}};
  return tt_run1(op, &x, 1, kv, 2);
}

/* The reference: the spatial tensor sp [N, H*b, W*b, C] from the depth
 * tensor dp [N, H, W, b*b*C] (to_space), or dp from sp, as doubles. */
static double *reference(const tf_tensor *x, int64_t b, bool to_space,
                         tf_shape *os) {
  const int64_t *xd = x->shape.dims;
  int64_t n = xd[0], h, w, c;
  if (to_space) {
    h = xd[1], w = xd[2], c = xd[3] / (b * b);
    *os = SHAPE(n, h * b, w * b, c);
  } else {
    h = xd[1] / b, w = xd[2] / b, c = xd[3];
    *os = SHAPE(n, h, w, c * b * b);
  }
  double *out = malloc((size_t)(x->n + 1) * sizeof *out);
  for (int64_t sp = 0; sp < x->n; sp++) { /* spatial [n, h*b, w*b, c] */
    int64_t ic = sp % c, col = sp / c % (w * b), row = sp / c / (w * b) % (h * b);
    int64_t in = sp / c / (w * b) / (h * b);
    int64_t dp = ((in * h + row / b) * w + col / b) * b * b * c +
                 (row % b * b + col % b) * c + ic;
    if (to_space) {
      out[sp] = tf_tensor_get_f64(x, dp);
    } else {
      out[dp] = tf_tensor_get_f64(x, sp);
    }
  }
  return out;
}

START_TEST(test_space_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_UINT8,
                                 TF_INT64};
  for (int it = 0; it < 200; it++) {
    int64_t b = 2 + (int64_t)(tt_rand_u64() % 3);
    int64_t n = (int64_t)(tt_rand_u64() % 3), h = 1 + (int64_t)(tt_rand_u64() % 3);
    int64_t w = 1 + (int64_t)(tt_rand_u64() % 3), c = 1 + (int64_t)(tt_rand_u64() % 3);
    bool to_space = it % 2;
    tf_shape s = to_space ? SHAPE(n, h, w, c * b * b) : SHAPE(n, h * b, w * b, c);
    tf_dtype dt = dts[it % 5];
    tf_tensor *x = tt_rand(dt, s, 0, 100);
    tf_tensor *y = space_op(to_space ? "DepthToSpace" : "SpaceToDepth", x, b,
                            "NHWC");
    tf_shape os;
    double *want = reference(x, b, to_space, &os);
    tf_tensor *wt = tt_tensor(dt, os, want);
    tt_assert_close(y, wt, 0, 0);
    /* The round trip gives x back. */
    tf_tensor *back = space_op(to_space ? "SpaceToDepth" : "DepthToSpace", y,
                               b, "NHWC");
    tt_assert_close(back, x, 0, 0);
    free(want);
    tt_free((tf_tensor *[]){x, y, wt, back}, 4);
  }
}
END_TEST

START_TEST(test_space_cases) {
  /* TF's example: [1, 1, 1, 4] = [[[[1, 2, 3, 4]]]] -> [1, 2, 2, 1]. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(1, 1, 1, 4), (double[]){1, 2, 3, 4});
  tf_tensor *y = space_op("DepthToSpace", x, 2, "NHWC");
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(1, 2, 2, 1), (double[]){1, 2, 3, 4});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){x, y, w}, 3);
  /* TF's example: [1, 2, 2, 1] with 2 channels each -> depth 8 order. */
  x = tt_tensor(TF_INT32, SHAPE(1, 2, 2, 2),
                (double[]){1, 2, 3, 4, 5, 6, 7, 8});
  y = space_op("SpaceToDepth", x, 2, "NHWC");
  w = tt_tensor(TF_INT32, SHAPE(1, 1, 1, 8), (double[]){1, 2, 3, 4, 5, 6, 7, 8});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){x, y, w}, 3);
  /* Strings move too. */
  tf_status st;
  tf_shape s = SHAPE(1, 1, 1, 4);
  tf_tensor *t;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int i = 0; i < 4; i++) {
    char c = (char)('a' + i);
    ck_assert(tf_tensor_set_string(t, i, &c, 1, &st) == TF_OK);
  }
  tf_tensor *ts = space_op("DepthToSpace", t, 2, "NHWC");
  ck_assert_int_eq(ts->shape.dims[1], 2);
  ck_assert(tf_tensor_strings(ts)[2].data[0] == 'c');
  tt_free((tf_tensor *[]){t, ts}, 2);
}
END_TEST

static void expect_fail(const char *op, tf_shape s, int64_t b,
                        const char *fmt, tf_code code, const char *needle) {
  tf_tensor *x = tt_rand(TF_FLOAT32, s, 0, 1);
  tf_attr_kv kv[2] = {{"block_size", tf_attr_int(b)},
                      {"data_format", tf_attr_string(fmt)}};
  const char *m = tt_run_fail(op, &x, 1, kv, 2, code);
  ck_assert_msg(strstr(m, needle) && strstr(m, op), "%s", m);
  tf_tensor_unref(x);
}

START_TEST(test_space_errors) {
  expect_fail("DepthToSpace", SHAPE(1, 2, 2, 6), 2, "NHWC",
              TF_INVALID_ARGUMENT,
              "Input depth dimension 6 should be divisible by: 4");
  expect_fail("SpaceToDepth", SHAPE(1, 3, 2, 1), 2, "NHWC",
              TF_INVALID_ARGUMENT,
              "Image width 2 and height 3 should be divisible by block_size");
  expect_fail("SpaceToDepth", SHAPE(2, 2, 1), 2, "NHWC", TF_INVALID_ARGUMENT,
              "Input rank should be: 4");
  expect_fail("DepthToSpace", SHAPE(1, 4, 1, 1), 2, "NCHW",
              TF_INVALID_ARGUMENT,
              "only data_format NHWC is supported on CPU");
  expect_fail("DepthToSpace", SHAPE(1, 1, 1, 4), 1, "NHWC",
              TF_INVALID_ARGUMENT, "block_size");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_space");
  TCase *tc = tcase_create("space");
  tcase_add_test(tc, test_space_random);
  tcase_add_test(tc, test_space_cases);
  tcase_add_test(tc, test_space_errors);
  suite_add_tcase(s, tc);
  return s;
}
