/* cpu_array_broadcast_to_test.c: the CPU BroadcastTo kernel against
 * tt_bcast_src_index (NumPy broadcasting written independently of the
 * kernels) in double, on random input shapes broadcast to random targets
 * with added leading dims, size-1 dims and empty dims, int32 and int64
 * shape tensors and several dtypes including strings; plus TF's errors.
 * Comparisons are exact (tolerance 0): the op only moves data. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_tensor *bcast_to(tf_tensor *x, const tf_shape *to, bool i64) {
  tf_tensor *shape;
  if (i64) {
    shape = tf_tensor_vec_i64(to->rank, to->dims);
  } else {
    int32_t v[TF_MAX_RANK];
    for (int d = 0; d < to->rank; d++) {
      v[d] = (int32_t)to->dims[d];
    }
    shape = tf_tensor_vec_i32(to->rank, v);
  }
  tf_tensor *in[2] = {x, shape};
  tf_tensor *y = tt_run1("BroadcastTo", in, 2, NULL, 0);
  tf_tensor_unref(shape);
  return y;
}

/* A random target of rank >= r, and an input shape that broadcasts to it:
 * each of its dims is the target's or 1. */
static void rand_pair(tf_shape *in, tf_shape *to) {
  in->rank = (int)(tt_rand_u64() % 4);
  to->rank = in->rank + (int)(tt_rand_u64() % 3);
  for (int d = 0; d < to->rank; d++) {
    to->dims[d] = tt_rand_u64() % 12 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 4);
  }
  int lead = to->rank - in->rank;
  for (int d = 0; d < in->rank; d++) {
    in->dims[d] = tt_rand_u64() % 2 ? 1 : to->dims[d + lead];
  }
}

START_TEST(test_broadcast_to_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT64, TF_INT8,
                                 TF_BOOL};
  for (int it = 0; it < 300; it++) {
    tf_shape s, to;
    rand_pair(&s, &to);
    tf_dtype dt = dts[it % 5];
    tf_tensor *x = tt_rand(dt, s, -100, 100);
    tf_tensor *y = bcast_to(x, &to, it % 2);
    int64_t n = tf_shape_num_elements(&to);
    double *want = malloc((size_t)(n + 1) * sizeof *want);
    for (int64_t o = 0; o < n; o++) {
      want[o] = tf_tensor_get_f64(x, tt_bcast_src_index(&s, &to, o));
    }
    tf_tensor *w = tt_tensor(dt, to, want);
    tt_assert_close(y, w, 0, 0);
    free(want);
    tt_free((tf_tensor *[]){x, y, w}, 3);
  }
}
END_TEST

START_TEST(test_broadcast_to_cases) {
  /* Hand-worked: [[1],[2]] to [2, 3]. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2, 1), (double[]){1, 2});
  tf_shape to = SHAPE(2, 2, 3);
  tf_tensor *y = bcast_to(x, &to, false);
  tf_tensor *w = tt_tensor(TF_FLOAT32, to,
                           (double[]){1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){x, y, w}, 3);
  /* Strings: a scalar to [3]. */
  tf_status st;
  tf_shape sc = tf_shape_scalar();
  tf_tensor *s;
  ck_assert(tf_tensor_new(TF_STRING, &sc, &s, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(s, 0, "hey", 3, &st) == TF_OK);
  to = SHAPE(3);
  tf_tensor *ys = bcast_to(s, &to, true);
  for (int i = 0; i < 3; i++) {
    ck_assert_uint_eq(tf_tensor_strings(ys)[i].len, 3);
    ck_assert(memcmp(tf_tensor_strings(ys)[i].data, "hey", 3) == 0);
  }
  tt_free((tf_tensor *[]){s, ys}, 2);
}
END_TEST

START_TEST(test_broadcast_to_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(3, 2), 0, 1);
  tf_tensor *in[2] = {x, tf_tensor_vec_i32(2, (int32_t[]){3, 3})};
  const char *m =
      tt_run_fail("BroadcastTo", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "Unable to broadcast tensor of shape [3,2] to "
                          "tensor of shape [3,3]"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i32(1, (int32_t[]){2}); /* rank would shrink */
  m = tt_run_fail("BroadcastTo", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "Unable to broadcast"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i32(2, (int32_t[]){3, -2});
  m = tt_run_fail("BroadcastTo", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "shape[1] = -2 must be >= 0"), "%s", m);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_broadcast_to");
  TCase *tc = tcase_create("broadcast_to");
  tcase_add_test(tc, test_broadcast_to_random);
  tcase_add_test(tc, test_broadcast_to_cases);
  tcase_add_test(tc, test_broadcast_to_errors);
  suite_add_tcase(s, tc);
  return s;
}
