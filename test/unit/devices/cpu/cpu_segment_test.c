/* cpu_segment_test.c: the CPU SegmentSum and UnsortedSegmentMax kernels
 * (cpu_segment.c) against hand-worked cases and a plain float64 reference
 * written here, on random data (float32, float64, int32, int64; rows of
 * rank 0..2), random sorted ids with gaps (missing segments give 0) for
 * SegmentSum and random unsorted ids of rank 1..2 with some negative
 * (dropped) and empty segments (the dtype's lowest value: -FLT_MAX, not
 * -inf, as TF) for UnsortedSegmentMax; plus empty inputs, NaN, integer
 * wrap-around and every id error.
 *
 * Tolerances: SegmentSum float32 atol 1e-5, rtol 1e-6 (float32
 * accumulation of at most ~8 terms of |x| <= 3, as TF's kernel); float64
 * atol 1e-12, rtol 1e-12; max and integer results exact. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static const tf_dtype k_dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};

static double lowest(tf_dtype dt) {
  switch (dt) {
  case TF_FLOAT32: return -FLT_MAX;
  case TF_FLOAT64: return -DBL_MAX;
  case TF_INT32: return INT32_MIN;
  default: return (double)INT64_MIN;
  }
}

static tf_tensor *seg_sum(tf_tensor *data, tf_tensor *ids) {
  return tt_run1("SegmentSum", (tf_tensor *[]){data, ids}, 2, NULL, 0);
}

static tf_tensor *seg_max(tf_tensor *data, tf_tensor *ids, tf_tensor *num) {
  return tt_run1("UnsortedSegmentMax", (tf_tensor *[]){data, ids, num}, 3,
                 NULL, 0);
}

/* Reference: rows of `inner` elements folded by id (sum, or max with NaN
 * propagating); out has `rows` rows. Integers fold in int64 (sums wrap
 * via uint64, then truncate to int32), floats in double. */
static tf_tensor *ref(bool is_max, const tf_tensor *data, const int64_t *ids,
                      int64_t n_ids, int64_t rows, tf_shape os) {
  int64_t n = tf_shape_num_elements(&os);
  int64_t inner = rows ? n / rows : 0;
  bool is_int = !tf_dtype_is_float(data->dtype);
  double *out = malloc((size_t)(n ? n : 1) * sizeof(double));
  int64_t *iout = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  int64_t ilow = data->dtype == TF_INT32 ? INT32_MIN : INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    out[i] = is_max ? lowest(data->dtype) : 0;
    iout[i] = is_max ? ilow : 0;
  }
  for (int64_t i = 0; i < n_ids; i++) {
    for (int64_t c = 0; ids[i] >= 0 && c < inner; c++) {
      int64_t k = ids[i] * inner + c;
      double v = tf_tensor_get_f64(data, i * inner + c);
      int64_t iv = tf_tensor_get_i64(data, i * inner + c);
      out[k] = !is_max ? out[k] + v
               : (isnan(v) || isnan(out[k])) ? NAN : fmax(out[k], v);
      iout[k] = !is_max ? (int64_t)((uint64_t)iout[k] + (uint64_t)iv)
                        : (iv > iout[k] ? iv : iout[k]);
    }
  }
  for (int64_t i = 0; i < n && data->dtype == TF_INT32; i++) {
    iout[i] = (int32_t)(uint32_t)(uint64_t)iout[i];
  }
  tf_tensor *t = is_int ? tt_tensor_i(data->dtype, os, iout)
                        : tt_tensor(data->dtype, os, out);
  free(out);
  free(iout);
  return t;
}

START_TEST(test_small) {
  tf_tensor *d = tt_tensor(TF_FLOAT32, SHAPE(4, 2),
                           (double[]){1, 2, 3, 4, 5, 6, 7, 8});
  tf_tensor *ids = tt_tensor_i(TF_INT32, SHAPE(4), (int64_t[]){0, 0, 2, 2});
  tf_tensor *y = seg_sum(d, ids);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(3, 2),
                           (double[]){4, 6, 0, 0, 12, 14});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, ids}, 3);
  ids = tt_tensor_i(TF_INT64, SHAPE(4), (int64_t[]){2, -1, 0, 2});
  tf_tensor *num = tf_tensor_scalar_i32(4);
  y = seg_max(d, ids, num);
  w = tt_tensor(TF_FLOAT32, SHAPE(4, 2),
                (double[]){5, 6, -FLT_MAX, -FLT_MAX, 7, 8, -FLT_MAX, -FLT_MAX});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, ids, num, d}, 5);
}
END_TEST

START_TEST(test_segment_sum_random) {
  tt_rng_reseed(tt_seed() ^ 0x5e9);
  for (int it = 0; it < 200; it++) {
    tf_dtype dt = k_dts[it % 4];
    int64_t n = (int64_t)(tt_rand_u64() % 9); /* 0 .. 8 rows */
    tf_shape s = {.rank = 1 + (int)(tt_rand_u64() % 3), .dims = {n}};
    for (int k = 1; k < s.rank; k++) {
      s.dims[k] = (int64_t)(tt_rand_u64() % 4);
    }
    double lo = -3, hi = 3;
    if (dt == TF_INT32 && it % 8 == 2) {
      lo = -2147483648.0; /* wrap-around */
      hi = 2147483647.0;
    }
    tf_tensor *d = tt_rand(dt, s, lo, hi);
    int64_t ids[8], id = (int64_t)(tt_rand_u64() % 3);
    for (int64_t i = 0; i < n; i++) {
      id += (int64_t)(tt_rand_u64() % 3 == 0) * (1 + (int64_t)(tt_rand_u64() % 2));
      ids[i] = id;
    }
    tf_tensor *it_ids = tt_tensor_i(it & 1 ? TF_INT64 : TF_INT32, SHAPE(n), ids);
    tf_shape os = s;
    os.dims[0] = n ? ids[n - 1] + 1 : 0;
    tf_tensor *got = seg_sum(d, it_ids);
    tf_tensor *want = ref(false, d, ids, n, os.dims[0], os);
    bool f32 = dt == TF_FLOAT32;
    tt_assert_close(got, want, f32 ? 1e-5 : 1e-12, f32 ? 1e-6 : 1e-12);
    tt_free((tf_tensor *[]){d, it_ids, got, want}, 4);
  }
}
END_TEST

START_TEST(test_unsorted_max_random) {
  tt_rng_reseed(tt_seed() ^ 0x3a1);
  for (int it = 0; it < 200; it++) {
    tf_dtype dt = k_dts[it % 4];
    int id_rank = 1 + (int)(tt_rand_u64() % 2);
    tf_shape s = {.rank = id_rank + (int)(tt_rand_u64() % 2)};
    for (int k = 0; k < s.rank; k++) {
      s.dims[k] = (int64_t)(tt_rand_u64() % 4);
    }
    tf_shape is = {.rank = id_rank};
    int64_t n_ids = 1;
    for (int k = 0; k < id_rank; k++) {
      is.dims[k] = s.dims[k];
      n_ids *= s.dims[k];
    }
    int64_t num = (int64_t)(tt_rand_u64() % 5), ids[16];
    for (int64_t i = 0; i < n_ids; i++) {
      ids[i] = (int64_t)(tt_rand_u64() % (uint64_t)(num + 1)) - 1; /* -1 drops */
    }
    tf_tensor *d = tt_rand(dt, s, -1000, 1000);
    tf_tensor *t_ids = tt_tensor_i(it & 1 ? TF_INT64 : TF_INT32, is, ids);
    tf_tensor *t_num = it & 2 ? tf_tensor_scalar_i64(num)
                              : tf_tensor_scalar_i32((int32_t)num);
    tf_shape os = {.rank = 1 + s.rank - id_rank, .dims = {num}};
    for (int k = id_rank; k < s.rank; k++) {
      os.dims[1 + k - id_rank] = s.dims[k];
    }
    tf_tensor *got = seg_max(d, t_ids, t_num);
    tf_tensor *want = ref(true, d, ids, n_ids, num, os);
    tt_assert_close(got, want, 0, 0);
    tt_free((tf_tensor *[]){d, t_ids, t_num, got, want}, 5);
  }
}
END_TEST

/* NaN propagates into its segment's max; int64 lowest is exact. */
START_TEST(test_nan_and_lowest) {
  tf_tensor *d = tt_tensor(TF_FLOAT64, SHAPE(3), (double[]){1, NAN, 2});
  tf_tensor *ids = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){0, 0, 1});
  tf_tensor *num = tf_tensor_scalar_i32(3);
  tf_tensor *y = seg_max(d, ids, num);
  tf_tensor *w = tt_tensor(TF_FLOAT64, SHAPE(3), (double[]){NAN, 2, -DBL_MAX});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, d}, 3);
  d = tt_tensor_i(TF_INT64, SHAPE(3), (int64_t[]){5, 6, 7});
  y = seg_max(d, ids, num);
  w = tt_tensor_i(TF_INT64, SHAPE(3), (int64_t[]){6, 7, INT64_MIN});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w, d, ids, num}, 5);
}
END_TEST

START_TEST(test_errors) {
  tf_tensor *d = tt_rand(TF_FLOAT32, SHAPE(3, 2), -1, 1);
  struct {
    int64_t ids[3];
    const char *msg;
  } bad[] = {
      {{0, 2, 1}, "segment ids are not increasing"},
      {{-1, 0, 0}, "segment ids must be >= 0"},
  };
  for (int k = 0; k < 2; k++) {
    tf_tensor *ids = tt_tensor_i(TF_INT32, SHAPE(3), bad[k].ids);
    const char *msg = tt_run_fail("SegmentSum", (tf_tensor *[]){d, ids}, 2,
                                  NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, bad[k].msg) && strstr(msg, "(SegmentSum)"),
                  "%s", msg);
    tf_tensor_unref(ids);
  }
  tf_tensor *ids = tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){0, 1});
  const char *msg = tt_run_fail("SegmentSum", (tf_tensor *[]){d, ids}, 2, NULL,
                                0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "same size as dimension 0"), "%s", msg);
  tf_tensor *num = tf_tensor_scalar_i32(2);
  msg = tt_run_fail("UnsortedSegmentMax", (tf_tensor *[]){d, ids, num}, 3,
                    NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "must be a prefix of data shape"), "%s", msg);
  tf_tensor_unref(ids);
  ids = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){0, 2, 1});
  msg = tt_run_fail("UnsortedSegmentMax", (tf_tensor *[]){d, ids, num}, 3,
                    NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "segment_ids[1] = 2 is out of range [0, 2)"),
                "%s", msg);
  tf_tensor_unref(num);
  num = tf_tensor_scalar_i32(-1);
  msg = tt_run_fail("UnsortedSegmentMax", (tf_tensor *[]){d, ids, num}, 3,
                    NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "num_segments must be >= 0"), "%s", msg);
  tt_free((tf_tensor *[]){d, ids, num}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_segment");
  TCase *tc = tcase_create("segment");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_small);
  tcase_add_test(tc, test_segment_sum_random);
  tcase_add_test(tc, test_unsorted_max_random);
  tcase_add_test(tc, test_nan_and_lowest);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
