/* cpu_array_transpose_test.c: the CPU Transpose kernel against a plain
 * index-arithmetic reference (every element compared bit for bit) and
 * NumPy's transpose, on random shapes (rank 0 to 6, empty dims) and random
 * permutations, for 1-, 2-, 4- and 8-byte dtypes and strings; large 2-D
 * and batched cases take the tiled, parallel path. Exact comparison: a
 * transpose moves bits. */
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

/* Exact equality (dtype, shape, bytes) with one assertion. */
static void assert_same(const tf_tensor *got, const tf_tensor *want) {
  char a[256], b[256];
  ck_assert_msg(tf_tensor_equal(got, want), "got %s, want %s",
                tf_tensor_str(got, a, sizeof(a)),
                tf_tensor_str(want, b, sizeof(b)));
}

static tf_tensor *transpose(tf_tensor *x, const int64_t *perm) {
  tf_tensor *p = tf_tensor_vec_i64(x->shape.rank, perm);
  tf_tensor *in[2] = {x, p};
  tf_tensor *y = tt_run1("Transpose", in, 2, NULL, 0);
  tf_tensor_unref(p);
  return y;
}

/* Reference: output element o reads input element sum c[k] *
 * in_stride[perm[k]], c the coordinates of o. Compares bytes (strings by
 * content). */
static void check_transpose(const tf_tensor *x, const int64_t *perm,
                            const tf_tensor *y) {
  int r = x->shape.rank;
  int64_t in_stride[TF_MAX_RANK], acc = 1;
  for (int k = r - 1; k >= 0; k--) {
    in_stride[k] = acc;
    acc *= x->shape.dims[k];
  }
  for (int k = 0; k < r; k++) {
    ck_assert_int_eq(y->shape.dims[k], x->shape.dims[perm[k]]);
  }
  size_t es = tf_dtype_size(x->dtype);
  int64_t bad = -1; /* one assert at the end: ck_assert is slow */
  for (int64_t o = 0; o < y->n && bad < 0; o++) {
    int64_t rem = o, src = 0;
    for (int k = r - 1; k >= 0; k--) {
      src += (rem % y->shape.dims[k]) * in_stride[perm[k]];
      rem /= y->shape.dims[k];
    }
    if (x->dtype == TF_STRING) {
      const tf_string *a = &tf_tensor_strings(y)[o];
      const tf_string *b = &tf_tensor_strings(x)[src];
      if (a->len != b->len || (a->len && memcmp(a->data, b->data, a->len))) {
        bad = o;
      }
    } else if (memcmp((char *)y->data + o * es, (char *)x->data + src * es,
                      es) != 0) {
      bad = o;
    }
  }
  ck_assert_msg(bad < 0, "element %lld differs (seed %llu)", (long long)bad,
                (unsigned long long)tt_seed());
}

static void rand_perm(int r, int64_t *perm) {
  for (int k = 0; k < r; k++) {
    perm[k] = k;
  }
  for (int k = r - 1; k > 0; k--) {
    int j = (int)(tt_rand_u64() % (uint64_t)(k + 1));
    int64_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
}

static tf_tensor *rand_strings(tf_shape s) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "s%llu",
                       (unsigned long long)(tt_rand_u64() % 100000));
    ck_assert(tf_tensor_set_string(t, i, buf, (size_t)len, &st) == TF_OK);
  }
  return t;
}

START_TEST(test_2d_small) {
  double v[] = {1, 2, 3, 4, 5, 6};
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2, 3), v);
  tf_tensor *y = transpose(x, (int64_t[]){1, 0});
  double w[] = {1, 4, 2, 5, 3, 6};
  tf_tensor *want = tt_tensor(TF_FLOAT32, SHAPE(3, 2), w);
  tt_assert_close(y, want, 0, 0);
  tt_free((tf_tensor *[]){x, y, want}, 3);
}
END_TEST

START_TEST(test_identity_shares_input) {
  tf_tensor *x = tt_rand(TF_INT32, SHAPE(3, 4, 5), 0, 100);
  tf_tensor *y = transpose(x, (int64_t[]){0, 1, 2});
  ck_assert_ptr_eq(y->data, x->data);
  tt_free((tf_tensor *[]){x, y}, 2);
  x = tf_tensor_scalar_f64(3);
  y = transpose(x, NULL);
  ck_assert_ptr_eq(y->data, x->data);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

START_TEST(test_random_perms) {
  static const tf_dtype dts[] = {TF_UINT8, TF_FLOAT16, TF_FLOAT32,
                                 TF_INT64, TF_COMPLEX64, TF_STRING};
  for (int it = 0; it < 240; it++) {
    tf_dtype dt = dts[it % 6];
    tf_shape s = {.rank = (int)(tt_rand_u64() % 7)};
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = tt_rand_u64() % 12 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 5);
    }
    tf_tensor *x = dt == TF_STRING ? rand_strings(s) : tt_rand(dt, s, 0, 100);
    int64_t perm[TF_MAX_RANK];
    rand_perm(s.rank, perm);
    tf_tensor *y = transpose(x, perm);
    check_transpose(x, perm, y);
    tt_free((tf_tensor *[]){x, y}, 2);
  }
}
END_TEST

/* Sizes that are not multiples of the 32-element tile, big enough for the
 * pool, plus a batched 2-D transpose and one keeping the last dim. */
START_TEST(test_large_tiled) {
  struct {
    tf_shape s;
    int64_t perm[4];
    tf_dtype dt;
  } cases[] = {
      {SHAPE(300, 500), {1, 0}, TF_FLOAT32},
      {SHAPE(129, 1025), {1, 0}, TF_INT8},
      {SHAPE(7, 130, 257), {0, 2, 1}, TF_FLOAT64},
      {SHAPE(40, 50, 60), {2, 0, 1}, TF_INT16},
      {SHAPE(16, 33, 20, 9), {1, 0, 2, 3}, TF_FLOAT32},
      {SHAPE(9, 70, 3, 80), {3, 1, 0, 2}, TF_INT32},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *x = tt_rand(cases[c].dt, cases[c].s, -100, 100);
    tf_tensor *y = transpose(x, cases[c].perm);
    check_transpose(x, cases[c].perm, y);
    tt_free((tf_tensor *[]){x, y}, 2);
  }
}
END_TEST

START_TEST(test_numpy) {
  for (int it = 0; it < 4; it++) {
    tf_shape s = {.rank = 2 + it};
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = 1 + (int64_t)(tt_rand_u64() % 6);
    }
    tf_tensor *x = tt_rand(TF_FLOAT64, s, -1, 1);
    int64_t perm[TF_MAX_RANK];
    rand_perm(s.rank, perm);
    tf_tensor *p = tf_tensor_vec_i64(s.rank, perm);
    tf_tensor *want[1] = {0};
    if (tt_numpy("outs = [np.ascontiguousarray(np.transpose(ins[0], ins[1]))]",
                 (tf_tensor *[]){x, p}, 2, want, 1) == 1) {
      tf_tensor *y = transpose(x, perm);
      assert_same(y, want[0]);
      tt_free((tf_tensor *[]){y, want[0]}, 2);
    }
    tt_free((tf_tensor *[]){x, p}, 2);
  }
}
END_TEST

START_TEST(test_bad_perm) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3, 4), 0, 1);
  tf_tensor *p = tf_tensor_vec_i64(2, (int64_t[]){1, 0});
  tf_tensor *in[2] = {x, p};
  const char *msg = tt_run_fail("Transpose", in, 2, NULL, 0,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "transpose expects a vector of size 3"), "%s", msg);
  tf_tensor_unref(p);
  p = tf_tensor_vec_i64(3, (int64_t[]){0, 3, 1});
  in[1] = p;
  msg = tt_run_fail("Transpose", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "perm[1] = 3 is out of range [0 .. 3)"), "%s",
                msg);
  tf_tensor_unref(p);
  p = tf_tensor_vec_i32(3, (int32_t[]){2, 0, 2});
  in[1] = p;
  msg = tt_run_fail("Transpose", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "2 appears twice"), "%s", msg);
  tf_tensor_unref(p);
  p = tf_tensor_vec_i32(3, (int32_t[]){-1, 0, 1});
  in[1] = p;
  msg = tt_run_fail("Transpose", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "= -1 is out of range"), "%s", msg);
  tt_free((tf_tensor *[]){x, p}, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_transpose");
  TCase *tc = tcase_create("transpose");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_2d_small);
  tcase_add_test(tc, test_identity_shares_input);
  tcase_add_test(tc, test_random_perms);
  tcase_add_test(tc, test_large_tiled);
  tcase_add_test(tc, test_numpy);
  tcase_add_test(tc, test_bad_perm);
  suite_add_tcase(s, tc);
  return s;
}
