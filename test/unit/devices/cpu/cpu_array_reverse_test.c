/* cpu_array_reverse_test.c: the CPU ReverseV2 kernel against a plain
 * reference written here (output element c reads input element c with
 * each reversed coordinate k mapped to dim - 1 - k, in double), on random
 * shapes with empty dims, random axis subsets with negative axes, int32
 * and int64 axis tensors and several dtypes including strings; plus TF's
 * errors (duplicate axis, out of range, non-vector axis). Comparisons are
 * exact (tolerance 0): the op only moves data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_shape rand_shape(int max_rank, int max_dim) {
  tf_shape s = {.rank = (int)(tt_rand_u64() % (uint64_t)(max_rank + 1))};
  for (int d = 0; d < s.rank; d++) {
    s.dims[d] = tt_rand_u64() % 10 == 0
                    ? 0
                    : 1 + (int64_t)(tt_rand_u64() % (uint64_t)max_dim);
  }
  return s;
}

/* Flat index of the input element that output element o reads. */
static int64_t src_index(const tf_shape *s, const bool *rev, int64_t o) {
  int64_t c[TF_MAX_RANK], f = 0;
  for (int d = s->rank - 1; d >= 0; d--) {
    c[d] = o % s->dims[d];
    o /= s->dims[d];
  }
  for (int d = 0; d < s->rank; d++) {
    f = f * s->dims[d] + (rev[d] ? s->dims[d] - 1 - c[d] : c[d]);
  }
  return f;
}

static tf_tensor *reverse(tf_tensor *x, tf_tensor *axis) {
  tf_tensor *in[2] = {x, axis};
  tf_tensor *y = tt_run1("ReverseV2", in, 2, NULL, 0);
  tf_tensor_unref(axis);
  return y;
}

START_TEST(test_reverse_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT64, TF_UINT8,
                                 TF_INT32};
  for (int it = 0; it < 200; it++) {
    tf_shape s = rand_shape(5, 5);
    tf_dtype dt = dts[it % 5];
    tf_tensor *x = tt_rand(dt, s, -100, 100);
    bool rev[TF_MAX_RANK] = {false};
    int64_t ax[TF_MAX_RANK];
    int n = 0;
    for (int d = 0; d < s.rank; d++) {
      if (tt_rand_u64() % 2) {
        rev[d] = true;
        ax[n++] = tt_rand_u64() % 2 ? d : d - s.rank; /* negative too */
      }
    }
    tf_tensor *axis;
    if (it % 2) {
      axis = tf_tensor_vec_i64(n, ax);
    } else {
      int32_t a32[TF_MAX_RANK];
      for (int i = 0; i < n; i++) {
        a32[i] = (int32_t)ax[i];
      }
      axis = tf_tensor_vec_i32(n, a32);
    }
    tf_tensor *y = reverse(x, axis);
    double *want = malloc((size_t)(x->n + 1) * sizeof *want);
    for (int64_t o = 0; o < x->n; o++) {
      want[o] = tf_tensor_get_f64(x, src_index(&s, rev, o));
    }
    tf_tensor *w = tt_tensor(dt, s, want);
    tt_assert_close(y, w, 0, 0);
    free(want);
    tt_free((tf_tensor *[]){x, y, w}, 3);
  }
}
END_TEST

START_TEST(test_reverse_strings_and_cases) {
  tf_status st;
  tf_shape s = SHAPE(2, 3);
  tf_tensor *x;
  ck_assert(tf_tensor_new(TF_STRING, &s, &x, &st) == TF_OK);
  const char *v[6] = {"a", "bb", "", "dddd", "e", "ffffff"};
  for (int i = 0; i < 6; i++) {
    ck_assert(tf_tensor_set_string(x, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  tf_tensor *y = reverse(x, tf_tensor_vec_i32(2, (int32_t[]){-1, 0}));
  for (int i = 0; i < 6; i++) {
    const tf_string *g = &tf_tensor_strings(y)[i];
    const char *want = v[5 - i];
    ck_assert_uint_eq(g->len, strlen(want));
    ck_assert(g->len == 0 || memcmp(g->data, want, g->len) == 0);
  }
  tt_free((tf_tensor *[]){x, y}, 2);
  /* Hand-worked: [[1,2,3],[4,5,6]] reversed on axis 1. */
  tf_tensor *a = tt_tensor(TF_FLOAT32, s, (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *b = reverse(a, tf_tensor_vec_i32(1, (int32_t[]){1}));
  tf_tensor *w = tt_tensor(TF_FLOAT32, s, (double[]){3, 2, 1, 6, 5, 4});
  tt_assert_close(b, w, 0, 0);
  tt_free((tf_tensor *[]){a, b, w}, 3);
  /* Empty input and scalar with no axes. */
  tf_tensor *e = tt_rand(TF_FLOAT32, SHAPE(0, 3), 0, 1);
  tf_tensor *f = reverse(e, tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  ck_assert(tf_shape_equal(&f->shape, &e->shape));
  tf_tensor *sc = tf_tensor_scalar_f64(2.5);
  tf_tensor *sr = reverse(sc, tf_tensor_vec_i32(0, NULL));
  ck_assert(tf_tensor_get_f64(sr, 0) == 2.5);
  tt_free((tf_tensor *[]){e, f, sc, sr}, 4);
}
END_TEST

START_TEST(test_reverse_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1);
  tf_tensor *in[2] = {x, tf_tensor_vec_i32(2, (int32_t[]){1, -1})};
  const char *m = tt_run_fail("ReverseV2", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "axis 1 specified more than once"), "%s", m);
  ck_assert_msg(strstr(m, "ReverseV2"), "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i32(1, (int32_t[]){-3});
  m = tt_run_fail("ReverseV2", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "'axis'[0] = -3 is out of valid range [-2, 2)"),
                "%s", m);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_scalar_i32(0);
  m = tt_run_fail("ReverseV2", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  /* The shape function or the kernel: either names the axis input. */
  ck_assert_msg(strstr(m, "axis") && strstr(m, "ReverseV2"), "%s", m);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_reverse");
  TCase *tc = tcase_create("reverse");
  tcase_add_test(tc, test_reverse_random);
  tcase_add_test(tc, test_reverse_strings_and_cases);
  tcase_add_test(tc, test_reverse_errors);
  suite_add_tcase(s, tc);
  return s;
}
