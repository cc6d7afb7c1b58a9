/* cpu_array_split_test.c: the CPU SplitV kernel against a plain reference
 * written here (output i element c reads the input at c with the split
 * coordinate shifted by the sizes before i, in double), on random shapes
 * with empty dims and empty parts, negative split_dim, a -1 size, int32 /
 * int64 / int8 size_splits and several dtypes including strings; plus
 * TF's errors. Comparisons are exact (tolerance 0): the op only moves
 * data. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static int splitv(tf_tensor *x, tf_tensor *sizes, int32_t dim, int num,
                  tf_tensor **out) {
  tf_tensor *in[3] = {x, sizes, tf_tensor_scalar_i32(dim)};
  tf_attr_kv kv = {"num_split", tf_attr_int(num)};
  int n = tt_run("SplitV", in, 3, &kv, 1, out, 16);
  tt_free(in + 1, 2);
  return n;
}

static tf_tensor *sizes_tensor(tf_dtype dt, int n, const int64_t *v) {
  return tt_tensor_i(dt, SHAPE(n), v);
}

/* Checks part y (the part starting at `at` along axis) of x in double. */
static void check_part(const tf_tensor *x, const tf_tensor *y, int axis,
                       int64_t at) {
  double *want = malloc((size_t)(y->n + 1) * sizeof *want);
  for (int64_t o = 0; o < y->n; o++) {
    int64_t c[TF_MAX_RANK], rest = o, f = 0;
    for (int d = y->shape.rank - 1; d >= 0; d--) {
      c[d] = rest % y->shape.dims[d];
      rest /= y->shape.dims[d];
    }
    c[axis] += at;
    for (int d = 0; d < x->shape.rank; d++) {
      f = f * x->shape.dims[d] + c[d];
    }
    want[o] = tf_tensor_get_f64(x, f);
  }
  tf_tensor *w = tt_tensor(x->dtype, y->shape, want);
  tt_assert_close(y, w, 0, 0);
  tf_tensor_unref(w);
  free(want);
}

START_TEST(test_split_v_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT64, TF_UINT8};
  static const tf_dtype its[] = {TF_INT32, TF_INT64, TF_INT8};
  for (int it = 0; it < 200; it++) {
    tf_shape s = {.rank = 1 + (int)(tt_rand_u64() % 4)};
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = tt_rand_u64() % 10 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 5);
    }
    int axis = (int)(tt_rand_u64() % (uint64_t)s.rank);
    int num = 1 + (int)(tt_rand_u64() % 4);
    int64_t len[4], left = s.dims[axis];
    for (int i = 0; i < num; i++) { /* random cut of the dim into num parts */
      len[i] = i == num - 1 ? left : (int64_t)(tt_rand_u64() % (uint64_t)(left + 1));
      left -= len[i];
    }
    int64_t given[4];
    memcpy(given, len, sizeof len);
    if (tt_rand_u64() % 2) {
      given[tt_rand_u64() % (uint64_t)num] = -1;
    }
    tf_tensor *x = tt_rand(dts[it % 4], s, -100, 100);
    tf_tensor *out[16];
    int32_t dim = tt_rand_u64() % 2 ? axis : axis - s.rank;
    int n = splitv(x, sizes_tensor(its[it % 3], num, given), dim, num, out);
    ck_assert_int_eq(n, num);
    int64_t at = 0;
    for (int i = 0; i < num; i++) {
      tf_shape ws = s;
      ws.dims[axis] = len[i];
      ck_assert(tf_shape_equal(&out[i]->shape, &ws));
      check_part(x, out[i], axis, at);
      at += len[i];
    }
    tt_free(out, n);
    tf_tensor_unref(x);
  }
}
END_TEST

START_TEST(test_split_v_cases) {
  /* Hand-worked: [0..6] split [2, -1, 1] -> [0,1] [2,3,4] [5]. */
  tf_tensor *x = tt_tensor(TF_FLOAT64, SHAPE(6), (double[]){0, 1, 2, 3, 4, 5});
  tf_tensor *out[16];
  int n = splitv(x, sizes_tensor(TF_INT64, 3, (int64_t[]){2, -1, 1}), 0, 3,
                 out);
  ck_assert_int_eq(n, 3);
  ck_assert(tf_tensor_get_f64(out[1], 0) == 2 && out[1]->n == 3);
  ck_assert(tf_tensor_get_f64(out[2], 0) == 5 && out[2]->n == 1);
  tt_free(out, n);
  tf_tensor_unref(x);
  /* Strings along axis 1. */
  tf_status st;
  tf_shape s = SHAPE(2, 2);
  tf_tensor *t;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  const char *v[4] = {"a", "bb", "ccc", ""};
  for (int i = 0; i < 4; i++) {
    ck_assert(tf_tensor_set_string(t, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  n = splitv(t, sizes_tensor(TF_INT32, 2, (int64_t[]){1, 1}), -1, 2, out);
  ck_assert_uint_eq(tf_tensor_strings(out[1])[0].len, 2);
  ck_assert(memcmp(tf_tensor_strings(out[1])[0].data, "bb", 2) == 0);
  ck_assert_uint_eq(tf_tensor_strings(out[0])[1].len, 3);
  tt_free(out, n);
  tf_tensor_unref(t);
}
END_TEST

static void expect_fail(tf_shape s, int n, const int64_t *v, int32_t dim,
                        int num, const char *needle) {
  tf_tensor *x = tt_rand(TF_FLOAT32, s, 0, 1);
  tf_tensor *in[3] = {x, sizes_tensor(TF_INT64, n, v),
                      tf_tensor_scalar_i32(dim)};
  tf_attr_kv kv = {"num_split", tf_attr_int(num)};
  const char *m = tt_run_fail("SplitV", in, 3, &kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, needle) && strstr(m, "SplitV"), "%s", m);
  tt_free(in, 3);
}

START_TEST(test_split_v_errors) {
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){1, 2}, 1, 2,
              "Determined shape must either match input shape");
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){5, -1}, 0, 2,
              "Determined shape must either match input shape");
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){-1, -1}, 1, 2,
              "There can only be one -1 in the input.");
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){-3, 10}, 1, 2,
              "Split size at index 0 must be >= 0. Got: -3");
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){3, 4}, 1, 3,
              "Length of size_splits should be equal to the value of "
              "num_split");
  expect_fail(SHAPE(2, 7), 2, (int64_t[]){3, 4}, -3, 2, "split_dim");
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_split");
  TCase *tc = tcase_create("split_v");
  tcase_add_test(tc, test_split_v_random);
  tcase_add_test(tc, test_split_v_cases);
  tcase_add_test(tc, test_split_v_errors);
  suite_add_tcase(s, tc);
  return s;
}
