/* cpu_array_copy_test.c: the region-copy engine and fill behind the CPU
 * array kernels, driven directly: dim merging, then random regions (any
 * rank, permuted, negative and zero source strides, padded destinations)
 * against a plain element-by-element reference, for every element size
 * and strings; regions large enough for the tiled and parallel paths.
 * Exact comparison: the engine moves bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/devices/cpu/cpu_array_copy.h"
#include "test/unit/testutil.h"

static tf_kernel_ctx make_ctx(tf_status *st) {
  tf_status_init(st);
  return (tf_kernel_ctx){.pool = tf_threadpool_default(), .status = st};
}

static tf_tensor *vec_of(tf_dtype dt, int64_t n) {
  tf_shape s = tf_shape_make(1, &n);
  if (dt != TF_STRING) {
    return tt_rand(dt, s, 0, 250);
  }
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < n; i++) {
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "e%lld", (long long)i);
    ck_assert(tf_tensor_set_string(t, i, buf, (size_t)len, &st) == TF_OK);
  }
  return t;
}

static bool same(const tf_tensor *a, int64_t i, const tf_tensor *b,
                 int64_t j) {
  if (a->dtype == TF_STRING) {
    const tf_string *x = &tf_tensor_strings(a)[i], *y = &tf_tensor_strings(b)[j];
    return x->len == y->len && (x->len == 0 || !memcmp(x->data, y->data, x->len));
  }
  size_t es = tf_dtype_size(a->dtype);
  return !memcmp((char *)a->data + i * es, (char *)b->data + j * es, es);
}

START_TEST(test_simplify) {
  /* [2,3,4] contiguous on both sides collapses to one dim of 24 */
  tf__region r = {.rank = 3, .dims = {2, 3, 4}, .sstride = {12, 4, 1},
                  .dstride = {12, 4, 1}};
  tf__region_simplify(&r);
  ck_assert_int_eq(r.rank, 1);
  ck_assert_int_eq(r.dims[0], 24);
  /* a transpose keeps both dims; size-1 dims vanish */
  r = (tf__region){.rank = 4, .dims = {1, 5, 1, 7}, .sstride = {35, 1, 7, 5},
                   .dstride = {35, 7, 7, 1}};
  tf__region_simplify(&r);
  ck_assert_int_eq(r.rank, 2);
  ck_assert(r.dims[0] == 5 && r.dims[1] == 7 && r.sstride[1] == 5);
  /* a zero dim makes an empty region */
  r = (tf__region){.rank = 2, .dims = {3, 0}, .sstride = {1, 1},
                   .dstride = {1, 1}};
  tf__region_simplify(&r);
  ck_assert(r.rank == 1 && r.dims[0] == 0);
}
END_TEST

/* Copies a random region and checks every element (and that the
 * destination's gaps are untouched). */
static void random_region_case(tf_dtype dt, int rank, int64_t max_dim) {
  tf__region r = {.rank = rank};
  int64_t count = 1, order[TF__REGION_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    r.dims[k] = 1 + (int64_t)(tt_rand_u64() % (uint64_t)max_dim);
    count *= r.dims[k];
    order[k] = k;
  }
  for (int k = rank - 1; k > 0; k--) { /* source dims in random order */
    int j = (int)(tt_rand_u64() % (uint64_t)(k + 1));
    int64_t t = order[k];
    order[k] = order[j];
    order[j] = t;
  }
  int64_t acc = 1, soff = 0, dacc = 1;
  for (int q = rank - 1; q >= 0; q--) {
    int k = (int)order[q];
    int kind = (int)(tt_rand_u64() % 6); /* 0: broadcast, 1: reversed */
    r.sstride[k] = kind == 0 ? 0 : kind == 1 ? -acc : acc;
    soff += kind == 1 ? acc * (r.dims[k] - 1) : 0;
    acc *= r.dims[k] + (int64_t)(tt_rand_u64() % 2); /* maybe a gap */
  }
  for (int k = rank - 1; k >= 0; k--) {
    r.dstride[k] = dacc;
    dacc *= r.dims[k] + (tt_rand_u64() % 4 == 0 ? 1 : 0);
  }
  tf_tensor *src = vec_of(dt, acc), *dst = vec_of(dt, dacc);
  tf_status st;
  tf_tensor *copy;
  ck_assert(tf_tensor_copy(dst, &copy, &st) == TF_OK);
  tf_kernel_ctx ctx = make_ctx(&st);
  ck_assert(tf__region_copy(&ctx, &r, dst, 0, src, soff) == TF_OK);
  bool *hit = calloc((size_t)dacc, 1);
  tf__odo o;
  tf__odo_seek(&o, rank, r.dims, r.sstride, r.dstride, 0);
  int64_t bad = -1, clobbered = -1; /* one assert each: they are slow */
  for (int64_t i = 0; i < count; i++) {
    if (bad < 0 && !same(dst, o.off1, src, soff + o.off0)) {
      bad = i;
    }
    hit[o.off1] = true;
    tf__odo_next(&o);
  }
  ck_assert_msg(bad < 0, "%s rank %d: element %lld (seed %llu)",
                tf_dtype_name(dt), rank, (long long)bad,
                (unsigned long long)tt_seed());
  for (int64_t j = 0; j < dacc; j++) {
    if (clobbered < 0 && !hit[j] && !same(dst, j, copy, j)) {
      clobbered = j;
    }
  }
  ck_assert_msg(clobbered < 0, "gap element %lld was written",
                (long long)clobbered);
  free(hit);
  tt_free((tf_tensor *[]){src, dst, copy}, 3);
}

START_TEST(test_random_regions) {
  static const tf_dtype dts[] = {TF_UINT8, TF_INT16, TF_FLOAT32, TF_FLOAT64,
                                 TF_STRING};
  for (int it = 0; it < 300; it++) {
    random_region_case(dts[it % 5], 1 + (int)(tt_rand_u64() % 7), 5);
  }
}
END_TEST

START_TEST(test_large_regions) {
  static const tf_dtype dts[] = {TF_UINT8, TF_INT16, TF_FLOAT32, TF_FLOAT64};
  for (int it = 0; it < 8; it++) {
    int rank = 2 + it % 2;
    random_region_case(dts[it % 4], rank, rank == 2 ? 400 : 45);
  }
}
END_TEST

START_TEST(test_tiled_transpose) {
  /* A 2-D transpose of 257 x 500 and a batched one of 3 x 70 x 90. */
  int64_t shapes[2][3] = {{1, 257, 500}, {3, 70, 90}};
  for (int c = 0; c < 2; c++) {
    int64_t b = shapes[c][0], m = shapes[c][1], n = shapes[c][2];
    tf_tensor *src = vec_of(TF_FLOAT32, b * m * n);
    tf_tensor *dst = vec_of(TF_FLOAT32, b * m * n);
    tf__region r = {.rank = 3, .dims = {b, n, m},
                    .sstride = {m * n, 1, n}, .dstride = {m * n, m, 1}};
    tf_status st;
    tf_kernel_ctx ctx = make_ctx(&st);
    ck_assert(tf__region_copy(&ctx, &r, dst, 0, src, 0) == TF_OK);
    const float *s = src->data, *d = dst->data;
    bool ok = true;
    for (int64_t k = 0; k < b; k++) {
      for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
          ok = ok && d[(k * n + j) * m + i] == s[(k * m + i) * n + j];
        }
      }
    }
    ck_assert_msg(ok, "tiled transpose %lld x %lld x %lld differs",
                  (long long)b, (long long)m, (long long)n);
    tt_free((tf_tensor *[]){src, dst}, 2);
  }
}
END_TEST

/* A few very long contiguous rows: each is split into pieces over the
 * pool (one row of 300000, three rows of 200000 with padded strides). */
START_TEST(test_long_rows) {
  int64_t rows[] = {1, 3}, len[] = {300000, 200000};
  for (int c = 0; c < 2; c++) {
    int64_t n = rows[c] * (len[c] + 7);
    tf_tensor *src = vec_of(TF_INT32, n), *dst = vec_of(TF_INT32, n);
    tf__region r = {.rank = 2, .dims = {rows[c], len[c]},
                    .sstride = {len[c] + 7, 1}, .dstride = {len[c] + 5, 1}};
    tf_status st;
    tf_kernel_ctx ctx = make_ctx(&st);
    ck_assert(tf__region_copy(&ctx, &r, dst, 2, src, 3) == TF_OK);
    const int32_t *s = src->data, *d = dst->data;
    bool ok = true;
    for (int64_t q = 0; q < rows[c]; q++) {
      for (int64_t i = 0; i < len[c]; i++) {
        ok = ok && d[2 + q * (len[c] + 5) + i] == s[3 + q * (len[c] + 7) + i];
      }
    }
    ck_assert_msg(ok, "%lld rows of %lld", (long long)rows[c],
                  (long long)len[c]);
    tt_free((tf_tensor *[]){src, dst}, 2);
  }
}
END_TEST

START_TEST(test_fill) {
  static const tf_dtype dts[] = {TF_BOOL, TF_FLOAT16, TF_INT32, TF_COMPLEX64};
  int64_t sizes[] = {0, 1, 7, 100003};
  for (int k = 0; k < 4; k++) {
    for (int z = 0; z < 4; z++) {
      tf_tensor *t = vec_of(dts[k], sizes[z]);
      unsigned char val[8] = {1, 2, 3, 4, 5, 6, 7, 8};
      tf_status st;
      tf_kernel_ctx ctx = make_ctx(&st);
      ck_assert(tf__fill_value(&ctx, t, val) == TF_OK);
      size_t es = tf_dtype_size(dts[k]);
      bool ok = true;
      for (int64_t i = 0; i < t->n; i++) {
        ok = ok && !memcmp((char *)t->data + i * es, val, es);
      }
      ck_assert_msg(ok, "fill of %lld %s", (long long)t->n,
                    tf_dtype_name(dts[k]));
      tf_tensor_unref(t);
    }
  }
  tf_tensor *s = vec_of(TF_STRING, 5);
  tf_string v = {.data = "abc", .len = 3};
  tf_status st;
  tf_kernel_ctx ctx = make_ctx(&st);
  ck_assert(tf__fill_value(&ctx, s, &v) == TF_OK);
  ck_assert(tf_tensor_strings(s)[4].len == 3);
  ck_assert(!memcmp(tf_tensor_strings(s)[4].data, "abc", 3));
  tf_tensor_unref(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_copy");
  TCase *tc = tcase_create("copy");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_simplify);
  tcase_add_test(tc, test_random_regions);
  tcase_add_test(tc, test_large_regions);
  tcase_add_test(tc, test_tiled_transpose);
  tcase_add_test(tc, test_long_rows);
  tcase_add_test(tc, test_fill);
  suite_add_tcase(s, tc);
  return s;
}
