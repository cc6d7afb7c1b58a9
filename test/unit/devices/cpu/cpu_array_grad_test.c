/* cpu_array_grad_test.c: the CPU StridedSliceGrad kernel. Hand-worked
 * cases; random slices (any begin/end/stride, masks, shrunk axes) checked
 * by an index-tracking reference: StridedSlice of an iota tensor names the
 * position each dy element must land on, every other output element must
 * be zero (exact for float32, float64 and int32); a slice taking
 * everything returns dy's buffer; bad inputs fail with messages naming the
 * problem. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const char *const k_masks[5] = {"begin_mask", "end_mask",
                                       "ellipsis_mask", "new_axis_mask",
                                       "shrink_axis_mask"};

typedef struct sl {
  int n;
  int64_t b[8], e[8], s[8];
  int64_t masks[5];
} sl;

static void attrs_of(const sl *x, tf_attr_kv *kv) {
  for (int i = 0; i < 5; i++) {
    kv[i] = (tf_attr_kv){k_masks[i], tf_attr_int(x->masks[i])};
  }
}

/* StridedSliceGrad(shape of in_shape, x's args, dy). */
static tf_tensor *ssg(tf_shape in_shape, const sl *x, tf_tensor *dy) {
  tf_attr_kv kv[5];
  attrs_of(x, kv);
  tf_tensor *in[5] = {tf_tensor_vec_i64(in_shape.rank, in_shape.dims),
                      tf_tensor_vec_i64(x->n, x->b), tf_tensor_vec_i64(x->n, x->e),
                      tf_tensor_vec_i64(x->n, x->s), dy};
  tf_tensor *y = tt_run1("StridedSliceGrad", in, 5, kv, 5);
  tt_free(in, 4);
  return y;
}

static tf_tensor *strided(tf_tensor *t, const sl *x) {
  tf_attr_kv kv[5];
  attrs_of(x, kv);
  tf_tensor *in[4] = {t, tf_tensor_vec_i64(x->n, x->b),
                      tf_tensor_vec_i64(x->n, x->e), tf_tensor_vec_i64(x->n, x->s)};
  tf_tensor *y = tt_run1("StridedSlice", in, 4, kv, 5);
  tt_free(in + 1, 3);
  return y;
}

START_TEST(test_hand_cases) {
  /* x[1:5:2] of [5]: dy [a, b] lands at 1 and 3. */
  sl a = {.n = 1, .b = {1}, .e = {5}, .s = {2}};
  tf_tensor *dy = tt_tensor(TF_FLOAT64, SHAPE(2), (double[]){7, 9});
  tf_tensor *y = ssg(SHAPE(5), &a, dy);
  tf_tensor *want = tt_tensor(TF_FLOAT64, SHAPE(5), (double[]){0, 7, 0, 9, 0});
  tt_assert_close(y, want, 0, 0);
  tt_free((tf_tensor *[]){dy, y, want}, 3);
  /* x[::-1, 2] of [2, 3] (shrink axis 1): [p, q] -> [[0,0,q],[0,0,p]]. */
  sl b = {.n = 2, .b = {0, 2}, .e = {0, 3}, .s = {-1, 1}, .masks = {1, 1, 0, 0, 2}};
  dy = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1.5, -2});
  y = ssg(SHAPE(2, 3), &b, dy);
  want = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){0, 0, -2, 0, 0, 1.5});
  tt_assert_close(y, want, 0, 0);
  tt_free((tf_tensor *[]){dy, y, want}, 3);
  /* x[..., None, 1:] of [2, 2]: dy [2, 1, 1]. */
  sl c = {.n = 3, .b = {0, 0, 1}, .e = {0, 0, 2}, .s = {1, 1, 1},
          .masks = {0, 0, 1, 2, 0}};
  dy = tt_tensor(TF_INT32, SHAPE(2, 1, 1), (double[]){4, 5});
  y = ssg(SHAPE(2, 2), &c, dy);
  want = tt_tensor(TF_INT32, SHAPE(2, 2), (double[]){0, 4, 0, 5});
  tt_assert_close(y, want, 0, 0);
  tt_free((tf_tensor *[]){dy, y, want}, 3);
}
END_TEST

static int64_t rand_in(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* A random valid slice of shape s (plain slices and shrunk indices). */
static sl rand_slice(const tf_shape *s) {
  sl x = {.n = s->rank};
  for (int d = 0; d < s->rank; d++) {
    int64_t n = s->dims[d];
    if (n > 0 && tt_rand_u64() % 5 == 0) {
      x.b[d] = rand_in(-n, n - 1);
      x.e[d] = x.b[d] + 1;
      x.s[d] = 1;
      x.masks[4] |= 1 << d;
      continue;
    }
    x.b[d] = rand_in(-n - 2, n + 2);
    x.e[d] = rand_in(-n - 2, n + 2);
    do {
      x.s[d] = rand_in(-3, 3);
    } while (x.s[d] == 0);
    x.masks[0] |= (int64_t)(tt_rand_u64() % 4 == 0) << d;
    x.masks[1] |= (int64_t)(tt_rand_u64() % 4 == 0) << d;
  }
  return x;
}

START_TEST(test_random_index_tracking) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32};
  for (int it = 0; it < 300; it++) {
    tf_shape s = {.rank = 1 + (int)(tt_rand_u64() % 3)};
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = rand_in(0, 6);
    }
    int64_t n = tf_shape_num_elements(&s);
    double *iv = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
      iv[i] = (double)i;
    }
    tf_tensor *iota = tt_tensor(TF_FLOAT64, s, iv);
    free(iv);
    sl x = rand_slice(&s);
    tf_tensor *pos = strided(iota, &x);
    tf_dtype dt = dts[it % 3];
    tf_tensor *dy = tt_rand(dt, pos->shape, 1, 100);
    tf_tensor *y = ssg(s, &x, dy);
    ck_assert_int_eq(y->dtype, dt);
    ck_assert(tf_shape_equal(&y->shape, &s));
    double *want = calloc((size_t)(n + 1), sizeof(double));
    for (int64_t k = 0; k < pos->n; k++) {
      want[(int64_t)tf_tensor_get_f64(pos, k)] = tf_tensor_get_f64(dy, k);
    }
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
      ok = ok && tf_tensor_get_f64(y, i) == want[i];
    }
    ck_assert_msg(ok, "iteration %d (%s): scattered values differ", it,
                  tf_dtype_name(dt));
    free(want);
    tt_free((tf_tensor *[]){iota, pos, dy, y}, 4);
  }
}
END_TEST

START_TEST(test_whole_is_a_view) {
  sl x = {.n = 1, .b = {0}, .e = {0}, .s = {1}, .masks = {1, 1, 0, 0, 0}};
  tf_tensor *dy = tt_rand(TF_FLOAT32, SHAPE(3, 4), 0, 1);
  tf_tensor *y = ssg(SHAPE(3, 4), &x, dy);
  ck_assert_ptr_eq(y->data, dy->data);
  tt_free((tf_tensor *[]){dy, y}, 2);
  /* An empty slice gives zeros. */
  sl e = {.n = 1, .b = {2}, .e = {2}, .s = {1}};
  dy = tt_rand(TF_FLOAT64, SHAPE(0, 2), 0, 1);
  y = ssg(SHAPE(4, 2), &e, dy);
  tf_tensor *zero = tt_tensor(TF_FLOAT64, SHAPE(4, 2), (double[8]){0});
  tt_assert_close(y, zero, 0, 0);
  tt_free((tf_tensor *[]){dy, y, zero}, 3);
}
END_TEST

static void expect_error(tf_tensor *shape, const sl *x, tf_tensor *dy,
                         const char *want) {
  tf_attr_kv kv[5];
  attrs_of(x, kv);
  tf_tensor *in[5] = {shape, tf_tensor_vec_i64(x->n, x->b),
                      tf_tensor_vec_i64(x->n > 0 ? x->n : 0, x->e),
                      tf_tensor_vec_i64(x->n, x->s), dy};
  const char *msg = tt_run_fail("StridedSliceGrad", in, 5, kv, 5,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
  tt_free(in, 5);
}

START_TEST(test_errors) {
  sl ok = {.n = 1, .b = {0}, .e = {2}, .s = {1}};
  expect_error(tf_tensor_vec_i64(1, (int64_t[]){4}), &ok,
               tt_rand(TF_FLOAT32, SHAPE(3), 0, 1), "shape of dy was [3] instead of [2]");
  expect_error(tf_tensor_vec_i64(1, (int64_t[]){-4}), &ok,
               tt_rand(TF_FLOAT32, SHAPE(2), 0, 1), "shape[0] = -4 must be >= 0");
  expect_error(tf_tensor_scalar_i64(4), &ok, tt_rand(TF_FLOAT32, SHAPE(2), 0, 1),
               "shape must be a vector");
  sl zero = {.n = 1, .b = {0}, .e = {2}, .s = {0}};
  expect_error(tf_tensor_vec_i64(1, (int64_t[]){4}), &zero,
               tt_rand(TF_FLOAT32, SHAPE(2), 0, 1), "stride");
  /* begin, end and strides of different lengths. */
  tf_tensor *in[5] = {tf_tensor_vec_i64(1, (int64_t[]){4}),
                      tf_tensor_vec_i64(1, (int64_t[]){0}),
                      tf_tensor_vec_i64(2, (int64_t[]){2, 2}),
                      tf_tensor_vec_i64(1, (int64_t[]){1}),
                      tt_rand(TF_FLOAT32, SHAPE(2), 0, 1)};
  const char *msg = tt_run_fail("StridedSliceGrad", in, 5, NULL, 0,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "equal size") != NULL, "%s", msg);
  tt_free(in, 5);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_grad");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_hand_cases);
  tcase_add_test(tc, test_random_index_tracking);
  tcase_add_test(tc, test_whole_is_a_view);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
