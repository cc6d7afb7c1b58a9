/* cpu_reduction_bool_test.c: the CPU All and Any kernels
 * (cpu_reduction_bool.c) against hand-worked cases and a plain reference
 * written here with index arithmetic, on random shapes (rank 0..5, dims
 * including 0 and 1) with random axis subsets (negative, scalar, int32 and
 * int64 axes, keep_dims both ways), plus the identities over empty
 * reductions (All true, Any false), a long row and the axis errors. All
 * results are exact. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_tensor *reduce(const char *op, tf_tensor *x, tf_tensor *axes,
                         bool keep) {
  tf_tensor *in[2] = {x, axes};
  tf_attr_kv kv[] = {{"keep_dims", tf_attr_bool(keep)}};
  return tt_run1(op, in, 2, kv, 1);
}

static tf_tensor *bools(tf_shape s, const int64_t *v) {
  return tt_tensor_i(TF_BOOL, s, v);
}

/* Reference: out[o] folds x[i] for every i mapping to o. */
static tf_tensor *ref(bool is_all, const tf_tensor *x, uint32_t mask,
                      bool keep) {
  const tf_shape *s = &x->shape;
  tf_shape os = {.rank = 0};
  for (int d = 0; d < s->rank; d++) {
    if (!((mask >> d) & 1)) {
      os.dims[os.rank++] = s->dims[d];
    } else if (keep) {
      os.dims[os.rank++] = 1;
    }
  }
  int64_t n = tf_shape_num_elements(&os);
  int64_t *acc = malloc((size_t)(n ? n : 1) * sizeof *acc);
  for (int64_t o = 0; o < n; o++) {
    acc[o] = is_all;
  }
  const bool *xv = x->data;
  for (int64_t i = 0; i < x->n; i++) {
    int64_t o = 0, mul = 1, r = i;
    for (int d = s->rank - 1; d >= 0; d--) {
      int64_t c = r % s->dims[d];
      r /= s->dims[d];
      if (!((mask >> d) & 1)) {
        o += c * mul;
        mul *= s->dims[d];
      }
    }
    acc[o] = is_all ? (acc[o] && xv[i]) : (acc[o] || xv[i]);
  }
  tf_tensor *t = bools(os, acc);
  free(acc);
  return t;
}

START_TEST(test_small) {
  tf_tensor *x = bools(SHAPE(2, 3), (int64_t[]){1, 1, 0, 1, 1, 1});
  tf_tensor *a = tf_tensor_scalar_i32(1);
  tf_tensor *y = reduce("All", x, a, false);
  tf_tensor *w = bools(SHAPE(2), (int64_t[]){0, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  y = reduce("Any", x, a, true);
  w = bools(SHAPE(2, 1), (int64_t[]){1, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a}, 3);
  a = tf_tensor_vec_i64(1, (int64_t[]){-2});
  y = reduce("All", x, a, false);
  w = bools(SHAPE(3), (int64_t[]){1, 1, 0});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a, x}, 4);
  x = bools(SHAPE(2, 2), (int64_t[]){0, 0, 0, 1});
  a = tf_tensor_vec_i32(0, NULL); /* no axes: identity */
  y = reduce("Any", x, a, false);
  tt_assert_close(y, x, 0, 0);
  tt_free((tf_tensor *[]){y, a}, 2);
  a = tf_tensor_vec_i32(2, (int32_t[]){1, 0});
  y = reduce("Any", x, a, false);
  w = bools(tf_shape_scalar(), (int64_t[]){1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  y = reduce("All", x, a, false);
  w = bools(tf_shape_scalar(), (int64_t[]){0});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a, x}, 4);
}
END_TEST

/* Over no elements All gives true and Any false; empty outputs are empty. */
START_TEST(test_empty) {
  tf_tensor *x = bools(SHAPE(3, 0), NULL);
  tf_tensor *a = tf_tensor_scalar_i32(1);
  tf_tensor *y = reduce("All", x, a, false);
  tf_tensor *w = bools(SHAPE(3), (int64_t[]){1, 1, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  y = reduce("Any", x, a, true);
  w = bools(SHAPE(3, 1), (int64_t[]){0, 0, 0});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a}, 3);
  a = tf_tensor_scalar_i32(0);
  y = reduce("Any", x, a, false);
  tt_assert_shape(y, 1, 0);
  tt_free((tf_tensor *[]){y, a, x}, 3);
}
END_TEST

START_TEST(test_random_vs_reference) {
  tt_rng_reseed(tt_seed() ^ 0xa11);
  for (int it = 0; it < 400; it++) {
    tf_shape s = {.rank = (int)(tt_rand_u64() % 6)};
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = tt_rand_u64() % 12 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 4);
    }
    tf_tensor *x = tt_rand(TF_BOOL, s, 0, 1);
    /* Mostly-true or mostly-false inputs so both answers occur. */
    bool *xv = x->data;
    int bias = (int)(tt_rand_u64() % 3);
    for (int64_t i = 0; i < x->n; i++) {
      xv[i] = bias == 2 ? xv[i] : (tt_rand_u64() % 10 != 0) == (bias == 1);
    }
    uint32_t mask = 0;
    int64_t axes[TF_MAX_RANK];
    int n = 0;
    for (int d = 0; d < s.rank; d++) {
      if (tt_rand_u64() & 1) {
        mask |= 1u << d;
        axes[n++] = (tt_rand_u64() & 1) ? d - s.rank : d;
      }
    }
    tf_tensor *a = n == 1 && (it & 1) ? tf_tensor_scalar_i64(axes[0])
                                      : tf_tensor_vec_i64(n, axes);
    bool keep = (it >> 1) & 1;
    for (int k = 0; k < 2; k++) {
      tf_tensor *got = reduce(k ? "Any" : "All", x, a, keep);
      tf_tensor *want = ref(k == 0, x, mask, keep);
      tt_assert_close(got, want, 0, 0);
      tt_free((tf_tensor *[]){got, want}, 2);
    }
    tt_free((tf_tensor *[]){x, a}, 2);
  }
}
END_TEST

/* One false (true) deep in a long row, and in a column. */
START_TEST(test_long_rows) {
  tf_tensor *x = tt_rand(TF_BOOL, SHAPE(3, 5000), 0, 1);
  bool *v = x->data;
  for (int64_t i = 0; i < x->n; i++) {
    v[i] = true;
  }
  v[5000 + 4321] = false;
  tf_tensor *a = tf_tensor_scalar_i32(-1);
  tf_tensor *y = reduce("All", x, a, false);
  tf_tensor *w = bools(SHAPE(3), (int64_t[]){1, 0, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, a}, 3);
  for (int64_t i = 0; i < x->n; i++) {
    v[i] = !v[i];
  }
  a = tf_tensor_scalar_i32(0);
  y = reduce("Any", x, a, false);
  ck_assert_int_eq(y->n, 5000);
  for (int64_t j = 0; j < 5000; j++) {
    ck_assert_int_eq(((bool *)y->data)[j], j == 4321);
  }
  tt_free((tf_tensor *[]){y, a, x}, 3);
}
END_TEST

START_TEST(test_errors) {
  tf_tensor *x = bools(SHAPE(2, 3), (int64_t[]){1, 0, 1, 0, 1, 0});
  tf_tensor *a = tf_tensor_scalar_i32(2);
  tf_tensor *in[2] = {x, a};
  const char *msg = tt_run_fail("All", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Invalid reduction dimension (2 for input with 2"),
                "%s", msg);
  ck_assert_msg(strstr(msg, "(All)"), "%s", msg);
  tf_tensor_unref(a);
  a = tf_tensor_vec_i32(2, (int32_t[]){1, -1});
  in[1] = a;
  msg = tt_run_fail("Any", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "duplicate dimension: 1"), "%s", msg);
  tt_free((tf_tensor *[]){x, a}, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_reduction_bool");
  TCase *tc = tcase_create("all_any");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_small);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_random_vs_reference);
  tcase_add_test(tc, test_long_rows);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
