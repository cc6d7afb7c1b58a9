/* cpu_gather_nd_test.c: GatherNd and ScatterNd on CPU against plain
 * float64 reference loops written here, on fresh random inputs (index
 * depths 0 to the full rank, int16/int32/int64 indices, several value
 * dtypes), with duplicate indices for ScatterNd, empty tensors, string
 * params, hand-worked cases and the errors that name a bad index.
 *
 * Tolerances: GatherNd only moves values (exact, atol = rtol = 0).
 * ScatterNd sums in index order in the element type; the reference sums in
 * the same order in double, so float64 and integers must match exactly
 * and float32 within atol 1e-5 (sums of at most a few values in [-1, 1]);
 * float16 and bfloat16 round each add (atol 1e-2 and 5e-2). */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define IVEC(dt, ...)                                                          \
  tt_tensor_i(dt, SHAPE((int64_t)(sizeof((int64_t[]){__VA_ARGS__}) /         \
                                  sizeof(int64_t))),                           \
              (int64_t[]){__VA_ARGS__})

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg,
                needle);
}

/* Random indices of shape batch + [depth] into the first depth dims of s;
 * every `dup`-th row repeats row 0 when dup > 0. */
static tf_tensor *rand_indices(tf_dtype dt, tf_shape batch, int depth,
                               const tf_shape *s, int dup) {
  tf_shape is = batch;
  is.dims[is.rank++] = depth;
  int64_t n = tf_shape_num_elements(&is);
  int64_t *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    int64_t row = depth ? i / depth : 0, j = depth ? i % depth : 0;
    v[i] = (dup > 0 && row > 0 && row % dup == 0)
               ? v[j]
               : (int64_t)(tt_rand_u64() % (uint64_t)s->dims[j]);
  }
  tf_tensor *t = tt_tensor_i(dt, is, v);
  free(v);
  return t;
}

/* Flat offset of index row r (depth coordinates) into shape s, times the
 * slice size; computed independently of the kernel (row-major). */
static int64_t ref_offset(const tf_tensor *ix, int64_t r, int depth,
                          const tf_shape *s) {
  int64_t off = 0;
  for (int j = 0; j < depth; j++) {
    off = off * s->dims[j] + tf_tensor_get_i64(ix, r * depth + j);
  }
  for (int j = depth; j < s->rank; j++) {
    off *= s->dims[j];
  }
  return off;
}

static tf_tensor *ref_gather_nd(const tf_tensor *p, const tf_tensor *ix) {
  int depth = (int)ix->shape.dims[ix->shape.rank - 1];
  tf_shape os = tf_shape_make(ix->shape.rank - 1, ix->shape.dims);
  int64_t slice = 1;
  for (int j = depth; j < p->shape.rank; j++) {
    os.dims[os.rank++] = p->shape.dims[j];
    slice *= p->shape.dims[j];
  }
  tf_tensor *o;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT64, &os, &o, &st) == TF_OK);
  double *d = o->data;
  int64_t rows = slice ? o->n / slice : 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = ref_offset(ix, r, depth, &p->shape);
    for (int64_t k = 0; k < slice; k++) {
      d[r * slice + k] = tf_tensor_get_f64(p, off + k);
    }
  }
  return o;
}

static tf_tensor *as_f64(const tf_tensor *t) {
  tf_tensor *o;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT64, &t->shape, &o, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ((double *)o->data)[i] = tf_tensor_get_f64(t, i);
  }
  return o;
}

START_TEST(test_gather_nd_random) {
  static const tf_dtype vdt[3] = {TF_FLOAT64, TF_FLOAT32, TF_INT32};
  static const tf_dtype idt[3] = {TF_INT16, TF_INT32, TF_INT64};
  tf_shape ps = SHAPE(4, 3, 5);
  for (int depth = 0; depth <= 3; depth++) {
    for (int t = 0; t < 3; t++) {
      tf_tensor *p = tt_rand(vdt[t], ps, -100, 100);
      tf_tensor *ix = rand_indices(idt[t], SHAPE(2, 3), depth, &ps, 0);
      tf_tensor *in[2] = {p, ix};
      tf_tensor *o = tt_run1("GatherNd", in, 2, NULL, 0);
      tf_tensor *of = as_f64(o), *want = ref_gather_nd(p, ix);
      ck_assert_int_eq(o->dtype, vdt[t]);
      tt_assert_close(of, want, 0, 0);
      tt_free((tf_tensor *[]){p, ix, o, of, want}, 5);
    }
  }
}
END_TEST

START_TEST(test_gather_nd_hand) {
  /* params [[1,2],[3,4]]: indices [[1,0],[0,1]] -> [3, 2]; [[1]] -> [[3,4]]. */
  tf_tensor *p = tt_tensor(TF_FLOAT32, SHAPE(2, 2), (double[]){1, 2, 3, 4});
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){1, 0, 0, 1});
  tf_tensor *o = tt_run1("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){3, 2});
  tt_assert_close(o, w, 0, 0);
  tt_free((tf_tensor *[]){ix, o, w}, 3);
  ix = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){1});
  o = tt_run1("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  w = tt_tensor(TF_FLOAT32, SHAPE(1, 2), (double[]){3, 4});
  tt_assert_close(o, w, 0, 0);
  tt_free((tf_tensor *[]){p, ix, o, w}, 4);
}
END_TEST

START_TEST(test_gather_nd_empty_and_strings) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(3, 2), -1, 1);
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(0, 2), NULL);
  tf_tensor *o = tt_run1("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tt_assert_shape(o, 1, (int64_t)0);
  tt_free((tf_tensor *[]){ix, o}, 2);
  /* Empty params with some index rows: TF's error. */
  tf_tensor *e = tt_rand(TF_FLOAT32, SHAPE(3, 0), -1, 1);
  ix = IVEC(TF_INT32, 1);
  assert_has(tt_run_fail("GatherNd", (tf_tensor *[]){e, ix}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "params is empty");
  tt_free((tf_tensor *[]){e, ix, p}, 3);
  tf_status st;
  tf_tensor *s;
  tf_shape ss = SHAPE(3);
  ck_assert(tf_tensor_new(TF_STRING, &ss, &s, &st) == TF_OK);
  const char *v[3] = {"a", "bb", "ccc"};
  for (int i = 0; i < 3; i++) {
    ck_assert(tf_tensor_set_string(s, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  ix = tt_tensor_i(TF_INT64, SHAPE(2, 1), (int64_t[]){2, 0});
  o = tt_run1("GatherNd", (tf_tensor *[]){s, ix}, 2, NULL, 0);
  ck_assert_int_eq(tf_tensor_strings(o)[0].len, 3);
  ck_assert(memcmp(tf_tensor_strings(o)[1].data, "a", 1) == 0);
  tt_free((tf_tensor *[]){s, ix, o}, 3);
}
END_TEST

START_TEST(test_gather_nd_errors) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(3, 2), -1, 1);
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){0, 1, 2, 5});
  const char *m = tt_run_fail("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0,
                              TF_INVALID_ARGUMENT);
  assert_has(m, "indices[1] = [2, 5]");
  assert_has(m, "[3,2]");
  tf_tensor_unref(ix);
  ix = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){-1});
  assert_has(tt_run_fail("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "indices[0] = [-1]");
  tf_tensor_unref(ix);
  ix = tt_tensor_i(TF_INT32, SHAPE(1, 3), (int64_t[]){0, 0, 0});
  assert_has(tt_run_fail("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT), "params.rank");
  tt_free((tf_tensor *[]){p, ix}, 2);
}
END_TEST

/* ---- ScatterNd ------------------------------------------------------------ */

static tf_tensor *ref_scatter_nd(const tf_tensor *ix, const tf_tensor *u,
                                 tf_shape os) {
  int depth = (int)ix->shape.dims[ix->shape.rank - 1];
  int64_t slice = 1;
  for (int j = depth; j < os.rank; j++) {
    slice *= os.dims[j];
  }
  tf_tensor *o;
  tf_status st;
  ck_assert(tf_tensor_new_zeros(TF_FLOAT64, &os, &o, &st) == TF_OK);
  int64_t rows = tf_shape_num_elements(&ix->shape) / depth; /* depth >= 1 */
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = ref_offset(ix, r, depth, &os);
    for (int64_t k = 0; k < slice; k++) {
      ((double *)o->data)[off + k] += tf_tensor_get_f64(u, r * slice + k);
    }
  }
  return o;
}

START_TEST(test_scatter_nd_random) {
  static const tf_dtype vdt[6] = {TF_FLOAT64, TF_FLOAT32, TF_INT32,
                                  TF_UINT8,   TF_FLOAT16, TF_BFLOAT16};
  /* Sums of at most ~4 values in [-1, 1], each add rounded: float16 keeps
   * 11 bits (atol 1e-2), bfloat16 8 bits (atol 5e-2). */
  static const double atol[6] = {0, 1e-5, 0, 0, 1e-2, 5e-2};
  static const tf_dtype idt[3] = {TF_INT16, TF_INT32, TF_INT64};
  tf_shape os = SHAPE(4, 3, 5);
  for (int depth = 1; depth <= 3; depth++) {
    for (int t = 0; t < 6; t++) {
      tf_tensor *ix = rand_indices(idt[t % 3], SHAPE(6), depth, &os, 2);
      tf_shape us = SHAPE(6);
      for (int j = depth; j < os.rank; j++) {
        us.dims[us.rank++] = os.dims[j];
      }
      tf_tensor *u = vdt[t] == TF_UINT8 ? tt_rand(vdt[t], us, 0, 60)
                     : vdt[t] == TF_INT32 ? tt_rand(vdt[t], us, -100, 100)
                                          : tt_rand(vdt[t], us, -1, 1);
      tf_tensor *sh = tt_tensor_i(idt[t % 3], SHAPE(3), os.dims);
      tf_tensor *o = tt_run1("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL,
                             0);
      tf_tensor *of = as_f64(o), *want = ref_scatter_nd(ix, u, os);
      ck_assert_int_eq(o->dtype, vdt[t]);
      tt_assert_close(of, want, atol[t], 0);
      tt_free((tf_tensor *[]){ix, u, sh, o, of, want}, 6);
    }
  }
}
END_TEST

START_TEST(test_scatter_nd_hand) {
  /* indices [[4],[3],[1],[7],[4]], updates 9,10,11,12,1 into [8]: duplicates
   * at 4 add (9 + 1). */
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(5, 1), (int64_t[]){4, 3, 1, 7, 4});
  tf_tensor *u = tt_tensor(TF_FLOAT32, SHAPE(5), (double[]){9, 10, 11, 12, 1});
  tf_tensor *sh = IVEC(TF_INT32, 8);
  tf_tensor *o = tt_run1("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(8),
                           (double[]){0, 11, 0, 10, 10, 0, 0, 12});
  tt_assert_close(o, w, 0, 0);
  tt_free((tf_tensor *[]){ix, u, sh, o, w}, 5);
  /* complex64: parts add separately; (1+2i) + (3-1i) at 1, (5+0.5i) at 0. */
  ix = tt_tensor_i(TF_INT32, SHAPE(3, 1), (int64_t[]){1, 0, 1});
  tf_shape cs = SHAPE(3);
  tf_status st;
  ck_assert(tf_tensor_new(TF_COMPLEX64, &cs, &u, &st) == TF_OK);
  tf_complex64 *cu = u->data;
  cu[0] = (tf_complex64){1, 2};
  cu[1] = (tf_complex64){5, 0.5f};
  cu[2] = (tf_complex64){3, -1};
  sh = IVEC(TF_INT32, 2);
  o = tt_run1("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0);
  const tf_complex64 *co = o->data;
  ck_assert(co[0].re == 5 && co[0].im == 0.5f && co[1].re == 4 &&
            co[1].im == 1);
  tt_free((tf_tensor *[]){ix, u, sh, o}, 4);
  /* A single index vector: GatherNd gives a scalar, ScatterNd takes one. */
  tf_tensor *p = tt_tensor(TF_FLOAT64, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  ix = IVEC(TF_INT32, 1, 2);
  o = tt_run1("GatherNd", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tt_assert_shape(o, 0);
  ck_assert(((double *)o->data)[0] == 6);
  sh = IVEC(TF_INT32, 2, 3);
  tf_tensor *o2 = tt_run1("ScatterNd", (tf_tensor *[]){ix, o, sh}, 3, NULL, 0);
  w = tt_tensor(TF_FLOAT64, SHAPE(2, 3), (double[]){0, 0, 0, 0, 0, 6});
  tt_assert_close(o2, w, 0, 0);
  tt_free((tf_tensor *[]){p, ix, o, sh, o2, w}, 6);
  /* int32 overflow wraps. */
  ix = tt_tensor_i(TF_INT64, SHAPE(2, 1), (int64_t[]){0, 0});
  u = IVEC(TF_INT32, INT32_MAX, 1);
  sh = IVEC(TF_INT64, 1);
  o = tt_run1("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0);
  ck_assert_int_eq(((int32_t *)o->data)[0], INT32_MIN);
  tt_free((tf_tensor *[]){ix, u, sh, o}, 4);
}
END_TEST

START_TEST(test_scatter_nd_empty_and_errors) {
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(0, 1), NULL);
  tf_tensor *u = tt_tensor(TF_FLOAT64, SHAPE(0, 2), NULL);
  tf_tensor *sh = IVEC(TF_INT32, 3, 2);
  tf_tensor *o = tt_run1("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)3, (int64_t)2);
  for (int i = 0; i < 6; i++) {
    ck_assert(((double *)o->data)[i] == 0.0);
  }
  tt_free((tf_tensor *[]){ix, u, o}, 3);
  ix = tt_tensor_i(TF_INT32, SHAPE(2, 1), (int64_t[]){1, 3});
  u = tt_tensor(TF_FLOAT64, SHAPE(2, 2), (double[]){1, 2, 3, 4});
  const char *m = tt_run_fail("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3,
                              NULL, 0, TF_INVALID_ARGUMENT);
  assert_has(m, "indices[1] = [3]");
  assert_has(m, "shape [3,2]");
  tt_free((tf_tensor *[]){ix, u}, 2);
  ix = tt_tensor_i(TF_INT32, SHAPE(2, 1), (int64_t[]){1, 2});
  u = tt_tensor(TF_FLOAT64, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  assert_has(tt_run_fail("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "updates must have shape");
  tt_free((tf_tensor *[]){u, sh}, 2);
  u = tt_tensor(TF_FLOAT64, SHAPE(2), (double[]){1, 2});
  sh = IVEC(TF_INT32, -1);
  assert_has(tt_run_fail("ScatterNd", (tf_tensor *[]){ix, u, sh}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT), "non-negative");
  tt_free((tf_tensor *[]){ix, u, sh}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_gather_nd");
  TCase *tc = tcase_create("gather_nd");
  tcase_add_test(tc, test_gather_nd_random);
  tcase_add_test(tc, test_gather_nd_hand);
  tcase_add_test(tc, test_gather_nd_empty_and_strings);
  tcase_add_test(tc, test_gather_nd_errors);
  tcase_add_test(tc, test_scatter_nd_random);
  tcase_add_test(tc, test_scatter_nd_hand);
  tcase_add_test(tc, test_scatter_nd_empty_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
