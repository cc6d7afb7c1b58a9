/* cpu_array_pad_test.c: the CPU PadV2, MirrorPad and MirrorPadGrad
 * kernels against plain references written here in double: PadV2 reads
 * the input at (c - before) or gives constant_values; MirrorPad maps each
 * output coordinate to its source (REFLECT: -j / 2n-2-j, SYMMETRIC:
 * -j-1 / 2n-1-j around the interior); MirrorPadGrad sums each input
 * element into that source. Random shapes with empty dims (PadV2), random
 * paddings up to the mode's limit, several dtypes including strings, and
 * TF's errors. Data movement is compared exactly (tolerance 0);
 * MirrorPadGrad sums small integers exactly (tolerance 0) in float,
 * double, int8/32/64, uint16, half and bfloat16, and float64 reals with
 * atol 1e-12. */
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static void coords(const tf_shape *s, int64_t i, int64_t *c) {
  for (int d = s->rank - 1; d >= 0; d--) {
    c[d] = i % s->dims[d];
    i /= s->dims[d];
  }
}

static tf_tensor *pad_tensor(int rank, const int64_t *lo, const int64_t *hi,
                             bool i64) {
  int64_t v[2 * TF_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    v[2 * d] = lo[d];
    v[2 * d + 1] = hi[d];
  }
  return tt_tensor_i(i64 ? TF_INT64 : TF_INT32, SHAPE(rank, 2), v);
}

/* ---- PadV2 --------------------------------------------------------------- */

START_TEST(test_pad_v2_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_UINT8};
  for (int it = 0; it < 150; it++) {
    tf_shape s = {.rank = (int)(tt_rand_u64() % 4)}, os;
    int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK], c[TF_MAX_RANK];
    for (int d = 0; d < s.rank; d++) {
      s.dims[d] = tt_rand_u64() % 8 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 4);
      lo[d] = (int64_t)(tt_rand_u64() % 3);
      hi[d] = (int64_t)(tt_rand_u64() % 3);
    }
    os = s;
    for (int d = 0; d < s.rank; d++) {
      os.dims[d] += lo[d] + hi[d];
    }
    tf_dtype dt = dts[it % 4];
    tf_tensor *x = tt_rand(dt, s, 0, 100);
    double cv = 7;
    tf_tensor *in[3] = {x, pad_tensor(s.rank, lo, hi, it % 2),
                        tt_tensor(dt, tf_shape_scalar(), &cv)};
    tf_tensor *y = tt_run1("PadV2", in, 3, NULL, 0);
    int64_t n = tf_shape_num_elements(&os);
    double *want = malloc((size_t)(n + 1) * sizeof *want);
    for (int64_t o = 0; o < n; o++) {
      coords(&os, o, c);
      int64_t f = 0;
      bool inside = true;
      for (int d = 0; d < s.rank; d++) {
        c[d] -= lo[d];
        inside = inside && c[d] >= 0 && c[d] < s.dims[d];
        f = f * s.dims[d] + c[d];
      }
      want[o] = inside ? tf_tensor_get_f64(x, f) : cv;
    }
    tf_tensor *w = tt_tensor(dt, os, want);
    tt_assert_close(y, w, 0, 0);
    free(want);
    tt_free(in, 3);
    tt_free((tf_tensor *[]){y, w}, 2);
  }
}
END_TEST

START_TEST(test_pad_v2_strings_errors) {
  tf_status st;
  tf_shape s = SHAPE(1);
  tf_tensor *x, *cv;
  ck_assert(tf_tensor_new(TF_STRING, &s, &x, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(x, 0, "mid", 3, &st) == TF_OK);
  tf_shape sc = tf_shape_scalar();
  ck_assert(tf_tensor_new(TF_STRING, &sc, &cv, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(cv, 0, "pad", 3, &st) == TF_OK);
  tf_tensor *in[3] = {x, pad_tensor(1, (int64_t[]){1}, (int64_t[]){1}, false),
                      cv};
  tf_tensor *y = tt_run1("PadV2", in, 3, NULL, 0);
  ck_assert_int_eq(y->n, 3);
  ck_assert(memcmp(tf_tensor_strings(y)[0].data, "pad", 3) == 0);
  ck_assert(memcmp(tf_tensor_strings(y)[1].data, "mid", 3) == 0);
  ck_assert(memcmp(tf_tensor_strings(y)[2].data, "pad", 3) == 0);
  tf_tensor_unref(y);
  tt_free(in, 3);
  tf_tensor *f = tt_rand(TF_FLOAT32, SHAPE(2, 2), 0, 1);
  tf_tensor *bad[3] = {f, pad_tensor(2, (int64_t[]){1, 0}, (int64_t[]){0, 0},
                                     false),
                       tt_rand(TF_FLOAT32, SHAPE(1), 0, 1)};
  const char *m = tt_run_fail("PadV2", bad, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "constant_values must be a scalar"), "%s", m);
  tf_tensor_unref(bad[2]);
  bad[2] = tf_tensor_scalar_f32(0);
  tf_tensor_unref(bad[1]);
  bad[1] = pad_tensor(2, (int64_t[]){1, -1}, (int64_t[]){0, 0}, false);
  m = tt_run_fail("PadV2", bad, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "Paddings must be non-negative"), "%s", m);
  tt_free(bad, 3);
}
END_TEST

/* ---- MirrorPad and MirrorPadGrad ----------------------------------------- */

static int64_t mirror_src(int64_t i, int64_t n, int64_t lo, bool reflect) {
  int64_t j = i - lo;
  if (j < 0) {
    return reflect ? -j : -j - 1;
  }
  if (j >= n) {
    return reflect ? 2 * n - 2 - j : 2 * n - 1 - j;
  }
  return j;
}

/* Flat source index (in the small shape s) of padded element o. */
static int64_t mirror_flat(const tf_shape *s, const tf_shape *os,
                           const int64_t *lo, bool reflect, int64_t o) {
  int64_t c[TF_MAX_RANK], f = 0;
  coords(os, o, c);
  for (int d = 0; d < s->rank; d++) {
    f = f * s->dims[d] + mirror_src(c[d], s->dims[d], lo[d], reflect);
  }
  return f;
}

/* A random shape (dims >= 1) and paddings within the mode's limit. */
static void mirror_case(bool reflect, tf_shape *s, tf_shape *os, int64_t *lo,
                        int64_t *hi) {
  s->rank = 1 + (int)(tt_rand_u64() % 3);
  *os = *s;
  for (int d = 0; d < s->rank; d++) {
    s->dims[d] = 1 + (int64_t)(tt_rand_u64() % 4);
    int64_t lim = s->dims[d] - reflect;
    lo[d] = (int64_t)(tt_rand_u64() % (uint64_t)(lim + 1));
    hi[d] = (int64_t)(tt_rand_u64() % (uint64_t)(lim + 1));
    os->dims[d] = s->dims[d] + lo[d] + hi[d];
  }
}

START_TEST(test_mirror_pad_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT64, TF_INT8};
  for (int it = 0; it < 200; it++) {
    bool reflect = it % 2;
    tf_shape s, os;
    int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK];
    mirror_case(reflect, &s, &os, lo, hi);
    tf_dtype dt = dts[(it / 2) % 4];
    tf_tensor *x = tt_rand(dt, s, -100, 100);
    tf_tensor *in[2] = {x, pad_tensor(s.rank, lo, hi, it % 3 == 0)};
    tf_attr_kv kv = {"mode", tf_attr_string(reflect ? "REFLECT" : "SYMMETRIC")};
    tf_tensor *y = tt_run1("MirrorPad", in, 2, &kv, 1);
    int64_t n = tf_shape_num_elements(&os);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t o = 0; o < n; o++) {
      want[o] = tf_tensor_get_f64(x, mirror_flat(&s, &os, lo, reflect, o));
    }
    tf_tensor *w = tt_tensor(dt, os, want);
    tt_assert_close(y, w, 0, 0);
    free(want);
    tt_free(in, 2);
    tt_free((tf_tensor *[]){y, w}, 2);
  }
}
END_TEST

START_TEST(test_mirror_pad_grad_random) {
  static const tf_dtype dts[] = {TF_FLOAT64, TF_FLOAT32, TF_INT32, TF_INT64,
                                 TF_INT8,    TF_UINT16,  TF_FLOAT16,
                                 TF_BFLOAT16};
  for (int it = 0; it < 240; it++) {
    bool reflect = it % 2;
    tf_shape s, os;
    int64_t lo[TF_MAX_RANK], hi[TF_MAX_RANK];
    mirror_case(reflect, &s, &os, lo, hi);
    tf_dtype dt = dts[(it / 2) % 8];
    /* Small integers (every sum exact in each dtype, no wrap), or random
     * reals for float64. */
    tf_tensor *dy;
    if (dt == TF_FLOAT64 && it % 4 == 0) {
      dy = tt_rand(TF_FLOAT64, os, -1, 1);
    } else {
      int64_t n = tf_shape_num_elements(&os);
      double *v = malloc((size_t)n * sizeof *v);
      for (int64_t i = 0; i < n; i++) {
        v[i] = (double)(tt_rand_u64() % 7) - (dt == TF_UINT16 ? 0 : 3);
      }
      dy = tt_tensor(dt, os, v);
      free(v);
    }
    tf_tensor *in[2] = {dy, pad_tensor(s.rank, lo, hi, it % 3 == 0)};
    tf_attr_kv kv = {"mode", tf_attr_string(reflect ? "REFLECT" : "SYMMETRIC")};
    tf_tensor *y = tt_run1("MirrorPadGrad", in, 2, &kv, 1);
    int64_t n = tf_shape_num_elements(&s);
    double *want = calloc((size_t)n, sizeof *want);
    for (int64_t o = 0; o < dy->n; o++) {
      want[mirror_flat(&s, &os, lo, reflect, o)] += tf_tensor_get_f64(dy, o);
    }
    tf_tensor *w = tt_tensor(dt, s, want);
    tt_assert_close(y, w, dt == TF_FLOAT64 ? 1e-12 : 0, 0);
    free(want);
    tt_free(in, 2);
    tt_free((tf_tensor *[]){y, w}, 2);
  }
}
END_TEST

START_TEST(test_mirror_pad_cases) {
  /* Hand-worked (TF docs): [[1,2,3],[4,5,6]], paddings [[1,1],[2,2]]. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *in[2] = {x, pad_tensor(2, (int64_t[]){1, 2}, (int64_t[]){1, 2},
                                    false)};
  tf_attr_kv refl = {"mode", tf_attr_string("REFLECT")};
  tf_tensor *y = tt_run1("MirrorPad", in, 2, &refl, 1);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(4, 7), (double[]){
      6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1,
      6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  tf_attr_kv sym = {"mode", tf_attr_string("SYMMETRIC")};
  y = tt_run1("MirrorPad", in, 2, &sym, 1);
  w = tt_tensor(TF_FLOAT32, SHAPE(4, 7), (double[]){
      2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2,
      5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5});
  tt_assert_close(y, w, 0, 0);
  tt_free((tf_tensor *[]){y, w}, 2);
  /* REFLECT needs paddings < dim; SYMMETRIC <= dim. */
  tf_tensor_unref(in[1]);
  in[1] = pad_tensor(2, (int64_t[]){2, 0}, (int64_t[]){0, 0}, false);
  const char *m = tt_run_fail("MirrorPad", in, 2, &refl, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "paddings must be less than the dimension size"),
                "%s", m);
  tf_tensor *ok = tt_run1("MirrorPad", in, 2, &sym, 1);
  tt_assert_shape(ok, 2, 4, 3);
  tf_tensor_unref(ok);
  /* Strings. */
  tf_status st;
  tf_shape s = SHAPE(2);
  tf_tensor *t;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(t, 0, "a", 1, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(t, 1, "bc", 2, &st) == TF_OK);
  tf_tensor *sin[2] = {t, pad_tensor(1, (int64_t[]){1}, (int64_t[]){1}, true)};
  tf_tensor *ys = tt_run1("MirrorPad", sin, 2, &refl, 1);
  ck_assert_int_eq(ys->n, 4); /* bc a bc a */
  ck_assert_uint_eq(tf_tensor_strings(ys)[0].len, 2);
  ck_assert_uint_eq(tf_tensor_strings(ys)[3].len, 1);
  tt_free(sin, 2);
  tf_tensor_unref(ys);
  tt_free(in, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_pad");
  TCase *tc = tcase_create("pad");
  tcase_add_test(tc, test_pad_v2_random);
  tcase_add_test(tc, test_pad_v2_strings_errors);
  tcase_add_test(tc, test_mirror_pad_random);
  tcase_add_test(tc, test_mirror_pad_grad_random);
  tcase_add_test(tc, test_mirror_pad_cases);
  suite_add_tcase(s, tc);
  return s;
}
