/* cpu_array_unique_test.c: the Unique kernels (int32 and int64 x, int32
 * and int64 idx) against a plain quadratic recomputation on random
 * vectors with many duplicates (and large, negative values), an empty
 * vector, and a non-vector rejected naming its shape. */
#include <string.h>

#include "test/unit/testutil.h"

/* y and idx by brute force: first appearance order. */
static void check(tf_dtype dt, tf_dtype it, int64_t n, int64_t range,
                  int64_t offset) {
  int64_t v[600], y[600], idx[600], nu = 0;
  ck_assert(n <= 600);
  for (int64_t i = 0; i < n; i++) {
    v[i] = (int64_t)(tt_rand_u64() % (uint64_t)range) * offset - offset;
    int64_t k = 0;
    while (k < nu && y[k] != v[i]) {
      k++;
    }
    if (k == nu) {
      y[nu++] = v[i];
    }
    idx[i] = k;
  }
  tf_tensor *x = tt_tensor_i(dt, tf_shape_of(1, n), v), *out[2];
  tf_attr_kv a[] = {{"out_idx", tf_attr_type_v(it)}};
  ck_assert_int_eq(tt_run("Unique", &x, 1, a, 1, out, 2), 2);
  tf_tensor *wy = tt_tensor_i(dt, tf_shape_of(1, nu), y);
  tf_tensor *wi = tt_tensor_i(it, tf_shape_of(1, n), idx);
  ck_assert(tf_tensor_equal(out[0], wy));
  ck_assert(tf_tensor_equal(out[1], wi));
  tf_tensor *t[] = {x, out[0], out[1], wy, wi};
  tt_free(t, 5);
}

START_TEST(test_unique) {
  tt_rng_reseed(tt_seed() ^ 21);
  check(TF_INT32, TF_INT32, 500, 40, 1);
  check(TF_INT32, TF_INT64, 300, 1000, 7);
  check(TF_INT64, TF_INT32, 600, 50, (int64_t)1 << 40);
  check(TF_INT64, TF_INT64, 1, 3, 1);
  check(TF_INT64, TF_INT64, 0, 3, 1);
}
END_TEST

START_TEST(test_not_vector) {
  tf_tensor *x = tt_rand(TF_INT32, tf_shape_of(2, 2, 2), 0, 5);
  const char *msg = tt_run_fail("Unique", &x, 1, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "x must be a vector, got shape [2,2]"), "%s", msg);
  tf_tensor_unref(x);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_unique");
  TCase *c = tcase_create("core");
  tcase_add_test(c, test_unique);
  tcase_add_test(c, test_not_vector);
  suite_add_tcase(s, c);
  return s;
}
