/* cpu_array_index_test.c: Range, Gather, GatherV2, OneHot,
 * DynamicPartition, DynamicStitch and Where on CPU against hand-worked
 * cases, plain reference loops written in this file and numpy, on fresh
 * random inputs; plus empty tensors, string data and error messages that
 * name the bad index.
 *
 * Tolerances: every op here except Range only moves or compares values, so
 * results must match exactly (atol = rtol = 0). Range is checked against
 * numpy's float64 arange (values below 1e3): float64 with atol 1e-12 (numpy
 * steps by (start + delta) - start, a few ulps off delta), float32 with
 * atol 1e-5 + rtol 1e-6 (float32 rounding of i * delta and of the sum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

/* SHAPE(2, 3) is [2, 3] (int64 dims; tf_shape_of reads int64 varargs). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define IVEC(dt, ...)                                                          \
  tt_tensor_i(dt, SHAPE((int64_t)(sizeof((int64_t[]){__VA_ARGS__}) /         \
                                  sizeof(int64_t))),                           \
              (int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Exact comparison. Check's assertions record a mark point (a file write) on
 * every success, so large tensors are compared bytewise first; only on a
 * mismatch does tt_assert_close walk them to name the first bad element
 * (and it accepts 0.0 against -0.0). */
#define assert_same(got, want)                                                 \
  do {                                                                         \
    if (!tf_tensor_equal((got), (want))) {                                     \
      tt_assert_close((got), (want), 0, 0);                                    \
    }                                                                          \
  } while (0)

static tf_tensor *scalar_i(tf_dtype dt, int64_t v) {
  return tt_tensor_i(dt, SCALAR, &v);
}

static tf_tensor *scalar_f(tf_dtype dt, double v) {
  return tt_tensor(dt, SCALAR, &v);
}

static void unref_all(tf_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    tf_tensor_unref(t[i]);
  }
}

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg,
                needle);
}

static tf_tensor *string_tensor(tf_shape shape, const char *const *v) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &shape, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert(tf_tensor_set_string(t, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  return t;
}

static const char *str_at(const tf_tensor *t, int64_t i) {
  const tf_string *s = &tf_tensor_strings(t)[i];
  return s->len ? s->data : "";
}

/* ---- Range --------------------------------------------------------------- */

static tf_tensor *range(tf_dtype dt, double s, double l, double d) {
  tf_tensor *in[3] = {scalar_f(dt, s), scalar_f(dt, l), scalar_f(dt, d)};
  tf_tensor *out = tt_run1("Range", in, 3, NULL, 0);
  unref_all(in, 3);
  return out;
}

START_TEST(test_range_hand) {
  tf_tensor *o = range(TF_INT32, 0, 10, 3);
  tf_tensor *w = IVEC(TF_INT32, 0, 3, 6, 9);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  o = range(TF_INT64, 10, 0, -3);
  w = IVEC(TF_INT64, 10, 7, 4, 1);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  o = range(TF_FLOAT32, 1, 2, 0.25);
  w = tt_tensor(TF_FLOAT32, SHAPE(4), (double[]){1, 1.25, 1.5, 1.75});
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  o = range(TF_FLOAT32, 0, 1, 0.1f); /* 10 elements in float32 arithmetic */
  tt_assert_shape(o, 1, (int64_t)10);
  tf_tensor_unref(o);
  o = range(TF_FLOAT64, 5, 5, 1); /* empty */
  tt_assert_shape(o, 1, (int64_t)0);
  tf_tensor_unref(o);
}
END_TEST

/* Extremes: spans that overflow the element type when subtracted. */
START_TEST(test_range_int_extremes) {
  tf_tensor *in[3] = {scalar_i(TF_INT32, INT32_MIN),
                      scalar_i(TF_INT32, INT32_MAX),
                      scalar_i(TF_INT32, 1 << 30)};
  tf_tensor *o = tt_run1("Range", in, 3, NULL, 0);
  tf_tensor *w = IVEC(TF_INT32, INT32_MIN, -(1 << 30), 0, 1 << 30);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  unref_all(in, 3);
  tf_tensor *in2[3] = {scalar_i(TF_INT64, INT64_MAX - 10),
                       scalar_i(TF_INT64, INT64_MAX),
                       scalar_i(TF_INT64, 3)};
  o = tt_run1("Range", in2, 3, NULL, 0);
  w = IVEC(TF_INT64, INT64_MAX - 10, INT64_MAX - 7, INT64_MAX - 4,
           INT64_MAX - 1);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  unref_all(in2, 3);
}
END_TEST

START_TEST(test_range_vs_numpy) {
  enum { REPS = 6 };
  tf_tensor *in[3 * REPS], *o[REPS], *ref[REPS];
  for (int rep = 0; rep < REPS; rep++) {
    tf_dtype dt = rep % 2 ? TF_FLOAT64 : TF_FLOAT32;
    double s = tt_rand_uniform(-50, 50), d = tt_rand_uniform(0.05, 3);
    if (rep >= 4) {
      d = -d;
    }
    /* limit half a step past an element: no length ambiguity. */
    double k = floor(tt_rand_uniform(0, 200));
    double l = s + d * (k + 0.5);
    in[3 * rep] = scalar_f(dt, s);
    in[3 * rep + 1] = scalar_f(dt, l);
    in[3 * rep + 2] = scalar_f(dt, d);
    o[rep] = tt_run1("Range", in + 3 * rep, 3, NULL, 0);
    ck_assert_int_eq(o[rep]->shape.dims[0], (int64_t)k + 1);
  }
  /* One numpy run for all cases (interpreter start-up dominates). */
  int n = tt_numpy("outs = [np.arange(float(ins[3 * k]), float(ins[3 * k + 1]),"
                   " float(ins[3 * k + 2])).astype(ins[3 * k].dtype)"
                   " for k in range(len(ins) // 3)]",
                   in, 3 * REPS, ref, REPS);
  for (int rep = 0; n == REPS && rep < REPS; rep++) {
    bool f32 = o[rep]->dtype == TF_FLOAT32;
    tt_assert_close(o[rep], ref[rep], f32 ? 1e-5 : 1e-12, f32 ? 1e-6 : 0);
  }
  if (n == REPS) {
    unref_all(ref, REPS);
  }
  unref_all(o, REPS);
  unref_all(in, 3 * REPS);
}
END_TEST

START_TEST(test_range_errors) {
  tf_tensor *in[3] = {scalar_i(TF_INT32, 0), scalar_i(TF_INT32, 5),
                      scalar_i(TF_INT32, 0)};
  assert_has(tt_run_fail("Range", in, 3, NULL, 0, TF_INVALID_ARGUMENT),
             "Requires delta != 0");
  unref_all(in, 3);
  tf_tensor *in2[3] = {scalar_i(TF_INT64, 5), scalar_i(TF_INT64, 1),
                       scalar_i(TF_INT64, 1)};
  assert_has(tt_run_fail("Range", in2, 3, NULL, 0, TF_INVALID_ARGUMENT),
             "Requires start <= limit when delta > 0: 5/1");
  unref_all(in2, 3);
  tf_tensor *in3[3] = {scalar_f(TF_FLOAT32, 1), scalar_f(TF_FLOAT32, 5),
                       scalar_f(TF_FLOAT32, -1)};
  assert_has(tt_run_fail("Range", in3, 3, NULL, 0, TF_INVALID_ARGUMENT),
             "Requires start >= limit when delta < 0");
  unref_all(in3, 3);
  tf_tensor *in4[3] = {scalar_f(TF_FLOAT64, 0), scalar_f(TF_FLOAT64, NAN),
                       scalar_f(TF_FLOAT64, 1)};
  assert_has(tt_run_fail("Range", in4, 3, NULL, 0, TF_INVALID_ARGUMENT),
             "Requires ((limit - start) / delta)");
  unref_all(in4, 3);
  tf_tensor *in5[3] = {IVEC(TF_INT32, 1, 2), scalar_i(TF_INT32, 5),
                       scalar_i(TF_INT32, 1)};
  assert_has(tt_run_fail("Range", in5, 3, NULL, 0, TF_INVALID_ARGUMENT),
             "start must be a scalar");
  unref_all(in5, 3);
}
END_TEST

/* Sizes past what int64 bytes can hold: a clear error, not a crash. (Sizes
 * that fit int64 but not memory give RESOURCE_EXHAUSTED from the allocator;
 * not exercised here because ASan aborts on such requests.) */
START_TEST(test_range_huge) {
  tf_tensor *in[3] = {scalar_f(TF_FLOAT64, 0), scalar_f(TF_FLOAT64, 4e18),
                      scalar_f(TF_FLOAT64, 1)};
  const char *m = tt_run_fail("Range", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  assert_has(m, "[4000000000000000000]");
  unref_all(in, 3);
  tf_tensor *in2[3] = {scalar_i(TF_INT64, INT64_MIN),
                       scalar_i(TF_INT64, INT64_MAX), scalar_i(TF_INT64, 1)};
  m = tt_run_fail("Range", in2, 3, NULL, 0, TF_INVALID_ARGUMENT);
  assert_has(m, "more than int64 holds");
  unref_all(in2, 3);
  tf_tensor *in3[3] = {scalar_i(TF_INT64, INT64_MIN),
                       scalar_i(TF_INT64, INT64_MAX), scalar_i(TF_INT64, 4)};
  m = tt_run_fail("Range", in3, 3, NULL, 0, TF_INVALID_ARGUMENT);
  assert_has(m, "[4611686018427387904]");
  unref_all(in3, 3);
}
END_TEST

/* ---- Gather / GatherV2 reference ---------------------------------------------- */

/* out = params[:axis] + indices[bd:] + params[axis+1:], indices valid. */
static tf_tensor *ref_gather(const tf_tensor *p, const tf_tensor *ix, int axis,
                             int bd) {
  tf_shape os = {.rank = p->shape.rank - 1 + ix->shape.rank - bd};
  int k = 0;
  for (int i = 0; i < axis; i++) os.dims[k++] = p->shape.dims[i];
  for (int i = bd; i < ix->shape.rank; i++) os.dims[k++] = ix->shape.dims[i];
  for (int i = axis + 1; i < p->shape.rank; i++) os.dims[k++] = p->shape.dims[i];
  int64_t batch = 1, pre = 1, inner = 1, nidx = 1;
  for (int i = 0; i < bd; i++) batch *= p->shape.dims[i];
  for (int i = bd; i < axis; i++) pre *= p->shape.dims[i];
  for (int i = axis + 1; i < p->shape.rank; i++) inner *= p->shape.dims[i];
  for (int i = bd; i < ix->shape.rank; i++) nidx *= ix->shape.dims[i];
  int64_t a = p->shape.dims[axis];
  double *v = calloc((size_t)(batch * pre * nidx * inner + 1), sizeof(double));
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t q = 0; q < pre; q++) {
      for (int64_t j = 0; j < nidx; j++) {
        int64_t id = tf_tensor_get_i64(ix, b * nidx + j);
        for (int64_t e = 0; e < inner; e++) {
          v[((b * pre + q) * nidx + j) * inner + e] =
              tf_tensor_get_f64(p, ((b * pre + q) * a + id) * inner + e);
        }
      }
    }
  }
  tf_tensor *t = tt_tensor(p->dtype, os, v);
  free(v);
  return t;
}

static tf_tensor *gather_v2(tf_tensor *p, tf_tensor *ix, int64_t axis,
                            int64_t bd) {
  tf_tensor *ax = scalar_i(TF_INT32, axis);
  tf_tensor *in[3] = {p, ix, ax};
  tf_attr_kv at[1] = {{"batch_dims", tf_attr_int(bd)}};
  tf_tensor *o = tt_run1("GatherV2", in, 3, at, 1);
  tf_tensor_unref(ax);
  return o;
}

START_TEST(test_gather_random) {
  static const tf_dtype pdt[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_UINT8,
                                 TF_INT64, TF_INT16};
  static const tf_dtype idt[] = {TF_INT32, TF_INT64};
  for (int rep = 0; rep < 12; rep++) {
    tf_tensor *p = tt_rand(pdt[rep % NELEM(pdt)], SHAPE(7, 3, 2), 0, 100);
    tf_tensor *ix = tt_rand(idt[rep % 2], SHAPE(2, 4), 0, 6);
    tf_tensor *o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
    tf_tensor *w = ref_gather(p, ix, 0, 0);
    tt_assert_shape(o, 4, (int64_t)2, (int64_t)4, (int64_t)3, (int64_t)2);
    assert_same(o, w);
    tt_free((tf_tensor *[]){p, ix, o, w}, 4);
  }
}
END_TEST

/* Rows of one element (the 4-/8-byte fast paths) and a 1-D index vector
 * against numpy's take. */
START_TEST(test_gather_numpy) {
  tf_tensor *p = tt_rand(TF_FLOAT64, SHAPE(50), -1, 1);
  tf_tensor *ix = tt_rand(TF_INT64, SHAPE(3, 33), 0, 49);
  tf_tensor *o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tf_tensor *ref[1];
  if (tt_numpy("outs = [np.take(ins[0], ins[1], axis=0)]",
               (tf_tensor *[]){p, ix}, 2, ref, 1) == 1) {
    assert_same(o, ref[0]);
    tf_tensor_unref(ref[0]);
  }
  tt_free((tf_tensor *[]){p, ix, o}, 3);
}
END_TEST

/* Big enough to be split across the pool: 4000 rows of 256 bytes, and
 * 100000 rows of 4 bytes. */
START_TEST(test_gather_large) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(1000, 64), -1, 1);
  tf_tensor *ix = tt_rand(TF_INT32, SHAPE(4000), 0, 999);
  tf_tensor *o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tf_tensor *w = ref_gather(p, ix, 0, 0);
  assert_same(o, w);
  tt_free((tf_tensor *[]){p, ix, o, w}, 4);
  p = tt_rand(TF_INT32, SHAPE(300), -5, 5);
  ix = tt_rand(TF_INT64, SHAPE(100000), 0, 299);
  o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  w = ref_gather(p, ix, 0, 0);
  assert_same(o, w);
  tt_free((tf_tensor *[]){p, ix, o, w}, 4);
}
END_TEST

START_TEST(test_gather_strings) {
  static const char *words[] = {"alpha", "", "gamma", "delta-long-string"};
  tf_tensor *p = string_tensor(SHAPE(4), words);
  tf_tensor *ix = IVEC(TF_INT32, 3, 0, 3, 1, 2);
  tf_tensor *o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  static const int want[] = {3, 0, 3, 1, 2};
  tt_assert_shape(o, 1, (int64_t)5);
  for (int i = 0; i < 5; i++) {
    ck_assert_str_eq(str_at(o, i), words[want[i]]);
  }
  tf_tensor_unref(p); /* output owns its own copies */
  ck_assert_str_eq(str_at(o, 4), "gamma");
  tt_free((tf_tensor *[]){ix, o}, 2);
}
END_TEST

START_TEST(test_gather_empty) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(5, 3), 0, 1);
  tf_tensor *ix = tt_tensor_i(TF_INT32, SHAPE(0), NULL);
  tf_tensor *o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)3);
  tt_free((tf_tensor *[]){p, o}, 2);
  p = tt_rand(TF_FLOAT32, SHAPE(0, 3), 0, 1);
  o = tt_run1("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)3);
  tf_tensor_unref(o);
  tf_tensor *ix1 = IVEC(TF_INT32, 0);
  assert_has(tt_run_fail("Gather", (tf_tensor *[]){p, ix1}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "indices[0] = 0 is not in [0, 0)");
  tt_free((tf_tensor *[]){p, ix, ix1}, 3);
  /* A scalar index drops the axis. */
  p = IVEC(TF_INT64, 10, 20, 30);
  tf_tensor *s = scalar_i(TF_INT64, 2);
  o = tt_run1("Gather", (tf_tensor *[]){p, s}, 2, NULL, 0);
  ck_assert_int_eq(o->shape.rank, 0);
  ck_assert_int_eq(tf_tensor_get_i64(o, 0), 30);
  tt_free((tf_tensor *[]){p, s, o}, 3);
}
END_TEST

START_TEST(test_gather_bad_index) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(5), 0, 1);
  tf_tensor *ix = IVEC(TF_INT32, 1, 2, 3, 7, 0);
  assert_has(tt_run_fail("Gather", (tf_tensor *[]){p, ix}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "indices[3] = 7 is not in [0, 5)");
  tf_tensor *ix2 = tt_tensor_i(TF_INT64, SHAPE(2, 2), (int64_t[]){0, 1, -1, 2});
  assert_has(tt_run_fail("Gather", (tf_tensor *[]){p, ix2}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "indices[1,0] = -1 is not in [0, 5)");
  tf_tensor *a0 = scalar_i(TF_INT32, 0);
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix, a0}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "indices[3] = 7 is not in [0, 5)");
  tf_tensor_unref(a0);
  tf_tensor *sc = scalar_f(TF_FLOAT32, 1);
  assert_has(tt_run_fail("Gather", (tf_tensor *[]){sc, ix}, 2, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "params must be at least 1 dimensional");
  tt_free((tf_tensor *[]){p, ix, ix2, sc}, 4);
}
END_TEST

START_TEST(test_gather_v2_axes) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(3, 5, 4), -1, 1);
  tf_tensor *ix = tt_rand(TF_INT64, SHAPE(2, 3), 0, 2);
  tf_tensor *o[6], *ref[6];
  for (int axis = -3; axis < 3; axis++) {
    int a = axis < 0 ? axis + 3 : axis;
    o[axis + 3] = gather_v2(p, ix, axis, 0);
    tf_tensor *w = ref_gather(p, ix, a, 0);
    assert_same(o[axis + 3], w);
    tf_tensor_unref(w);
  }
  if (tt_numpy("outs = [np.take(ins[0], ins[1], axis=a) for a in range(-3, 3)]",
               (tf_tensor *[]){p, ix}, 2, ref, 6) == 6) {
    for (int k = 0; k < 6; k++) {
      assert_same(o[k], ref[k]);
    }
    tt_free(ref, 6);
  }
  tt_free(o, 6);
  tf_tensor *ix16 = tt_tensor_i(TF_INT16, SHAPE(4), (int64_t[]){4, 0, 2, 4});
  tf_tensor *g = gather_v2(p, ix16, 1, 0);
  tf_tensor *w = ref_gather(p, ix16, 1, 0);
  assert_same(g, w);
  tt_free((tf_tensor *[]){p, ix, ix16, g, w}, 5);
}
END_TEST

START_TEST(test_gather_v2_batch_dims) {
  tf_tensor *p = tt_rand(TF_FLOAT64, SHAPE(2, 5, 3), -1, 1);
  tf_tensor *ix = tt_rand(TF_INT32, SHAPE(2, 4), 0, 4);
  tf_tensor *o = gather_v2(p, ix, 1, 1);
  tt_assert_shape(o, 3, (int64_t)2, (int64_t)4, (int64_t)3);
  /* out[b, j, :] = params[b, ix[b, j], :], written out directly. */
  for (int b = 0; b < 2; b++) {
    for (int j = 0; j < 4; j++) {
      int64_t id = tf_tensor_get_i64(ix, b * 4 + j);
      for (int e = 0; e < 3; e++) {
        ck_assert(tf_tensor_get_f64(o, (b * 4 + j) * 3 + e) ==
                  tf_tensor_get_f64(p, (b * 5 + id) * 3 + e));
      }
    }
  }
  tf_tensor *o2 = gather_v2(p, ix, 1, -1); /* batch_dims -1 == 1 here */
  assert_same(o2, o);
  tt_free((tf_tensor *[]){o, o2, p, ix}, 4);
  /* batch_dims 1 gathering along axis 2: out[b, q, j] = p[b, q, ix[b, j]]. */
  p = tt_rand(TF_INT32, SHAPE(2, 3, 5), -9, 9);
  ix = tt_rand(TF_INT64, SHAPE(2, 4), 0, 4);
  o = gather_v2(p, ix, 2, 1);
  tf_tensor *w = ref_gather(p, ix, 2, 1);
  tt_assert_shape(o, 3, (int64_t)2, (int64_t)3, (int64_t)4);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w, p, ix}, 4);
}
END_TEST

START_TEST(test_gather_v2_errors) {
  tf_tensor *p = tt_rand(TF_FLOAT32, SHAPE(2, 5, 3), 0, 1);
  tf_tensor *ix = tt_rand(TF_INT32, SHAPE(3, 4), 0, 1);
  tf_tensor *a3 = scalar_i(TF_INT32, 3), *a1 = scalar_i(TF_INT32, 1);
  tf_tensor *av = IVEC(TF_INT32, 0, 1);
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix, a3}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "Expected axis in the range [-3, 3), but got 3");
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix, av}, 3, NULL, 0,
                         TF_INVALID_ARGUMENT),
             "axis must be");
  tf_attr_kv bd1[1] = {{"batch_dims", tf_attr_int(1)}};
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix, a1}, 3, bd1, 1,
                         TF_INVALID_ARGUMENT),
             "params.shape[0]: 2 should be equal to indices.shape[0]: 3");
  tf_tensor *a0 = scalar_i(TF_INT32, 0);
  tf_tensor *ix2 = tt_rand(TF_INT32, SHAPE(2, 4), 0, 1);
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix2, a0}, 3, bd1, 1,
                         TF_INVALID_ARGUMENT),
             "batch_dims (1)");
  tf_attr_kv bd5[1] = {{"batch_dims", tf_attr_int(5)}};
  assert_has(tt_run_fail("GatherV2", (tf_tensor *[]){p, ix2, a1}, 3, bd5, 1,
                         TF_INVALID_ARGUMENT),
             "batch_dims");
  tt_free((tf_tensor *[]){p, ix, a3, a1, av, a0, ix2}, 7);
}
END_TEST

/* ---- OneHot --------------------------------------------------------------- */

static tf_tensor *one_hot(tf_tensor *ix, int depth, tf_tensor *on,
                          tf_tensor *off, int64_t axis) {
  tf_tensor *d = scalar_i(TF_INT32, depth);
  tf_attr_kv at[1] = {{"axis", tf_attr_int(axis)}};
  tf_tensor *o = tt_run1("OneHot", (tf_tensor *[]){ix, d, on, off}, 4, at, 1);
  tf_tensor_unref(d);
  return o;
}

/* out[p, d, s] = ix[p, s] == d ? on : off, with the new axis at a. */
static tf_tensor *ref_one_hot(const tf_tensor *ix, int depth, double on,
                              double off, int a, tf_dtype dt) {
  tf_shape os = {.rank = ix->shape.rank + 1};
  int64_t pre = 1, suf = 1;
  for (int i = 0, k = 0; i <= ix->shape.rank; i++) {
    os.dims[i] = i == a ? depth : ix->shape.dims[k++];
  }
  for (int i = 0; i < a; i++) pre *= ix->shape.dims[i];
  for (int i = a; i < ix->shape.rank; i++) suf *= ix->shape.dims[i];
  double *v = calloc((size_t)(pre * depth * suf + 1), sizeof(double));
  for (int64_t p = 0; p < pre; p++) {
    for (int64_t d = 0; d < depth; d++) {
      for (int64_t s = 0; s < suf; s++) {
        v[(p * depth + d) * suf + s] =
            tf_tensor_get_i64(ix, p * suf + s) == d ? on : off;
      }
    }
  }
  tf_tensor *t = tt_tensor(dt, os, v);
  free(v);
  return t;
}

START_TEST(test_one_hot_random) {
  static const tf_dtype idt[] = {TF_INT32, TF_INT64, TF_UINT8, TF_INT8};
  static const tf_dtype vdt[] = {TF_FLOAT32, TF_FLOAT64, TF_INT64, TF_INT32,
                                 TF_BOOL, TF_FLOAT16, TF_COMPLEX64, TF_INT8};
  for (int rep = 0; rep < 16; rep++) {
    tf_dtype it = idt[rep % 4], vt = vdt[rep % NELEM(vdt)];
    double lo = it == TF_UINT8 ? 0 : -1;
    tf_tensor *ix = tt_rand(it, SHAPE(2, 3, 4), lo, 6); /* some off-range */
    double on = vt == TF_BOOL ? 1 : 5, off = vt == TF_BOOL ? 0 : -1;
    tf_tensor *ton = scalar_f(vt, on), *toff = scalar_f(vt, off);
    for (int64_t axis = -1; axis <= 3; axis++) {
      tf_tensor *o = one_hot(ix, 5, ton, toff, axis);
      tf_tensor *w = ref_one_hot(ix, 5, on, off, axis == -1 ? 3 : (int)axis, vt);
      assert_same(o, w);
      tt_free((tf_tensor *[]){o, w}, 2);
    }
    tt_free((tf_tensor *[]){ix, ton, toff}, 3);
  }
}
END_TEST

START_TEST(test_one_hot_numpy) {
  tf_tensor *ix = tt_rand(TF_INT64, SHAPE(7, 9), -2, 11);
  tf_tensor *on = scalar_f(TF_FLOAT32, 2.5), *off = scalar_f(TF_FLOAT32, 0.5);
  tf_tensor *o[4], *ref[4];
  for (int64_t axis = -1; axis <= 2; axis++) {
    o[axis + 1] = one_hot(ix, 10, on, off, axis);
  }
  if (tt_numpy("ix, on, off = ins\n"
               "h = np.where(np.arange(10) == ix[..., None], on, off)\n"
               "outs = [np.ascontiguousarray(np.moveaxis(h, -1, a), "
               "dtype=np.float32) for a in (-1, 0, 1, 2)]",
               (tf_tensor *[]){ix, on, off}, 3, ref, 4) == 4) {
    for (int k = 0; k < 4; k++) {
      assert_same(o[k], ref[k]);
    }
    tt_free(ref, 4);
  }
  tt_free(o, 4);
  tt_free((tf_tensor *[]){ix, on, off}, 3);
}
END_TEST

START_TEST(test_one_hot_edges) {
  tf_tensor *on = scalar_f(TF_FLOAT32, 1), *off = scalar_f(TF_FLOAT32, 0);
  tf_tensor *ix = IVEC(TF_INT32, 0, 2);
  tf_tensor *o = one_hot(ix, 0, on, off, -1); /* depth 0 */
  tt_assert_shape(o, 2, (int64_t)2, (int64_t)0);
  tf_tensor_unref(o);
  tf_tensor *e = tt_tensor_i(TF_INT32, SHAPE(0), NULL);
  o = one_hot(e, 4, on, off, -1);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)4);
  tf_tensor_unref(o);
  tf_tensor *s = scalar_i(TF_INT32, 1);
  o = one_hot(s, 3, on, off, -1); /* scalar index -> vector */
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){0, 1, 0});
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w, s, e}, 4);
  /* Strings as on/off values are deep-copied. */
  tf_tensor *son = string_tensor(SCALAR, (const char *[]){"yes"});
  tf_tensor *soff = string_tensor(SCALAR, (const char *[]){"no"});
  o = one_hot(ix, 3, son, soff, 0);
  static const char *want[] = {"yes", "no", "no", "no", "no", "yes"};
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(str_at(o, i), want[i]);
  }
  tt_free((tf_tensor *[]){o, son, soff}, 3);
  /* Errors. */
  tf_tensor *dneg = scalar_i(TF_INT32, -1);
  assert_has(tt_run_fail("OneHot", (tf_tensor *[]){ix, dneg, on, off}, 4, NULL,
                         0, TF_INVALID_ARGUMENT),
             "depth must be non-negative, got: -1");
  tf_tensor *d3 = scalar_i(TF_INT32, 3), *onv = IVEC(TF_INT32, 1, 1);
  tf_attr_kv a3[1] = {{"axis", tf_attr_int(3)}};
  assert_has(tt_run_fail("OneHot", (tf_tensor *[]){ix, d3, on, off}, 4, a3, 1,
                         TF_INVALID_ARGUMENT),
             "axis");
  tf_tensor *onf = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 1});
  assert_has(tt_run_fail("OneHot", (tf_tensor *[]){ix, d3, onf, off}, 4, NULL,
                         0, TF_INVALID_ARGUMENT),
             "on_value must be a scalar");
  tt_free((tf_tensor *[]){ix, on, off, dneg, d3, onv, onf}, 7);
}
END_TEST

/* ---- DynamicPartition / DynamicStitch --------------------------------------- */

static int partition(tf_tensor *data, tf_tensor *part, int np,
                     tf_tensor **out) {
  tf_attr_kv at[1] = {{"num_partitions", tf_attr_int(np)}};
  int n = tt_run("DynamicPartition", (tf_tensor *[]){data, part}, 2, at, 1,
                 out, np);
  ck_assert_int_eq(n, np);
  return n;
}

START_TEST(test_partition_random) {
  for (int rep = 0; rep < 6; rep++) {
    tf_dtype dt = rep % 2 ? TF_FLOAT64 : TF_INT32;
    bool two_d = rep >= 3;
    tf_shape ps = two_d ? SHAPE(3, 5) : SHAPE(15);
    tf_shape ds = two_d ? SHAPE(3, 5, 2) : SHAPE(15, 2);
    tf_tensor *data = tt_rand(dt, ds, -100, 100);
    tf_tensor *part = tt_rand(TF_INT32, ps, 0, 3);
    tf_tensor *out[4];
    partition(data, part, 4, out);
    /* Reference: rows of partition k in input order. */
    for (int k = 0; k < 4; k++) {
      int64_t r = 0;
      for (int64_t i = 0; i < part->n; i++) {
        if (tf_tensor_get_i64(part, i) != k) {
          continue;
        }
        for (int e = 0; e < 2; e++) {
          ck_assert(tf_tensor_get_f64(out[k], r * 2 + e) ==
                    tf_tensor_get_f64(data, i * 2 + e));
        }
        r++;
      }
      tt_assert_shape(out[k], 2, r, (int64_t)2);
    }
    tf_tensor *ref[4];
    tf_tensor *np4 = scalar_i(TF_INT32, 4);
    if (rep % 3 == 0 &&
        tt_numpy("d, p, n = ins\nouts = [d[p == k] for k in range(int(n))]",
                 (tf_tensor *[]){data, part, np4}, 3, ref, 4) == 4) {
      for (int k = 0; k < 4; k++) {
        assert_same(out[k], ref[k]);
      }
      tt_free(ref, 4);
    }
    tt_free(out, 4);
    tt_free((tf_tensor *[]){data, part, np4}, 3);
  }
}
END_TEST

START_TEST(test_partition_edges) {
  static const char *w[] = {"a", "bb", "ccc", "dddd"};
  tf_tensor *data = string_tensor(SHAPE(4), w);
  tf_tensor *part = IVEC(TF_INT32, 1, 0, 1, 1);
  tf_tensor *out[2];
  partition(data, part, 2, out);
  ck_assert_int_eq(out[0]->n, 1);
  ck_assert_str_eq(str_at(out[0], 0), "bb");
  ck_assert_int_eq(out[1]->n, 3);
  ck_assert_str_eq(str_at(out[1], 2), "dddd");
  tt_free(out, 2);
  tt_free((tf_tensor *[]){data, part}, 2);
  /* Empty data: every output [0, 3]. */
  data = tt_rand(TF_FLOAT32, SHAPE(0, 3), 0, 1);
  part = tt_tensor_i(TF_INT32, SHAPE(0), NULL);
  partition(data, part, 2, out);
  tt_assert_shape(out[0], 2, (int64_t)0, (int64_t)3);
  tt_assert_shape(out[1], 2, (int64_t)0, (int64_t)3);
  tt_free(out, 2);
  tt_free((tf_tensor *[]){data, part}, 2);
  /* Bad ids, named by position. */
  data = tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1);
  part = tt_tensor_i(TF_INT32, SHAPE(2, 3), (int64_t[]){0, 1, 2, -1, 0, 0});
  tf_attr_kv at[1] = {{"num_partitions", tf_attr_int(3)}};
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){data, part}, 2,
                         at, 1, TF_INVALID_ARGUMENT),
             "partitions[1,0] = -1 is not in [0, 3)");
  tf_tensor *p5 = IVEC(TF_INT32, 0, 1, 0, 3, 0);
  tf_tensor *d5 = tt_rand(TF_FLOAT32, SHAPE(5), 0, 1);
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){d5, p5}, 2, at, 1,
                         TF_INVALID_ARGUMENT),
             "partitions[3] = 3 is not in [0, 3)");
  tf_tensor *d4 = tt_rand(TF_FLOAT32, SHAPE(4), 0, 1);
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){d4, p5}, 2, at, 1,
                         TF_INVALID_ARGUMENT),
             "data.shape must start with partitions.shape");
  tt_free((tf_tensor *[]){data, part, p5, d5, d4}, 5);
}
END_TEST

static tf_tensor *stitch(tf_tensor **ix, tf_tensor **data, int n) {
  tf_tensor *in[16];
  for (int i = 0; i < n; i++) {
    in[i] = ix[i];
    in[n + i] = data[i];
  }
  tf_attr_kv at[1] = {{"N", tf_attr_int(n)}};
  return tt_run1("DynamicStitch", in, 2 * n, at, 1);
}

/* The example of TF's DynamicStitch documentation. */
START_TEST(test_stitch_doc_example) {
  tf_tensor *ix[3] = {scalar_i(TF_INT32, 6), IVEC(TF_INT32, 4, 1),
                      tt_tensor_i(TF_INT32, SHAPE(2, 2),
                                  (int64_t[]){5, 2, 0, 3})};
  tf_tensor *d[3] = {
      tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){61, 62}),
      tt_tensor(TF_FLOAT32, SHAPE(2, 2), (double[]){41, 42, 11, 12}),
      tt_tensor(TF_FLOAT32, SHAPE(2, 2, 2),
                (double[]){51, 52, 21, 22, 1, 2, 31, 32})};
  tf_tensor *o = stitch(ix, d, 3);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(7, 2),
                           (double[]){1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51,
                                      52, 61, 62});
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  unref_all(ix, 3);
  unref_all(d, 3);
}
END_TEST

START_TEST(test_stitch_dups_gaps_strings) {
  /* Later inputs win on duplicates; unnamed rows are zero. */
  tf_tensor *ix[2] = {IVEC(TF_INT32, 0, 4), IVEC(TF_INT32, 4, 2)};
  tf_tensor *d[2] = {IVEC(TF_INT64, 10, 40), IVEC(TF_INT64, 44, 20)};
  tf_tensor *o = stitch(ix, d, 2);
  tf_tensor *w = IVEC(TF_INT64, 10, 0, 20, 0, 44);
  assert_same(o, w);
  tt_free((tf_tensor *[]){o, w}, 2);
  unref_all(d, 2);
  tf_tensor *s[2] = {string_tensor(SHAPE(2), (const char *[]){"x", "y"}),
                     string_tensor(SHAPE(2), (const char *[]){"z", "w"})};
  o = stitch(ix, s, 2);
  static const char *want[] = {"x", "", "w", "", "z"};
  for (int i = 0; i < 5; i++) {
    ck_assert_str_eq(str_at(o, i), want[i]);
  }
  tf_tensor_unref(o);
  unref_all(s, 2);
  unref_all(ix, 2);
  /* All empty: [0] + trailing dims. */
  tf_tensor *e[1] = {tt_tensor_i(TF_INT32, SHAPE(0), NULL)};
  tf_tensor *ed[1] = {tt_rand(TF_FLOAT32, SHAPE(0, 3), 0, 1)};
  o = stitch(e, ed, 1);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)3);
  tt_free((tf_tensor *[]){o, e[0], ed[0]}, 3);
}
END_TEST

/* Stitching the partitions of data back at the partitioned positions gives
 * data (TF's documented inverse relation), on random inputs. */
START_TEST(test_stitch_inverts_partition) {
  int64_t n = 1000;
  tf_tensor *data = tt_rand(TF_FLOAT32, SHAPE(n, 3), -1, 1);
  tf_tensor *part = tt_rand(TF_INT32, SHAPE(n), 0, 4);
  int64_t *pos = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) pos[i] = i;
  tf_tensor *posv = tt_tensor_i(TF_INT32, SHAPE(n), pos);
  free(pos);
  tf_tensor *dp[5], *pp[5];
  partition(data, part, 5, dp);
  partition(posv, part, 5, pp);
  tf_tensor *o = stitch(pp, dp, 5);
  assert_same(o, data);
  tt_free(dp, 5);
  tt_free(pp, 5);
  tt_free((tf_tensor *[]){o, data, part, posv}, 4);
}
END_TEST

START_TEST(test_stitch_errors) {
  tf_tensor *ix[2] = {IVEC(TF_INT32, 0, 1), IVEC(TF_INT32, 2, -3)};
  tf_tensor *d[2] = {tt_rand(TF_FLOAT32, SHAPE(2), 0, 1),
                     tt_rand(TF_FLOAT32, SHAPE(2), 0, 1)};
  tf_tensor *in[4] = {ix[0], ix[1], d[0], d[1]};
  tf_attr_kv at[1] = {{"N", tf_attr_int(2)}};
  assert_has(tt_run_fail("DynamicStitch", in, 4, at, 1, TF_INVALID_ARGUMENT),
             "indices[1][1] = -3 is negative");
  tf_tensor *d3 = tt_rand(TF_FLOAT32, SHAPE(3), 0, 1);
  tf_tensor *in2[4] = {ix[0], ix[1], d[0], d3};
  assert_has(tt_run_fail("DynamicStitch", in2, 4, at, 1, TF_INVALID_ARGUMENT),
             "does not start with indices[1].shape");
  tf_tensor *d22 = tt_rand(TF_FLOAT32, SHAPE(2, 2), 0, 1);
  tf_tensor *in3[4] = {ix[0], ix[1], d[0], d22};
  assert_has(tt_run_fail("DynamicStitch", in3, 4, at, 1, TF_INVALID_ARGUMENT),
             "data[1].shape");
  unref_all(ix, 2);
  unref_all(d, 2);
  tt_free((tf_tensor *[]){d3, d22}, 2);
}
END_TEST

/* ---- Where ------------------------------------------------------------------ */

/* Row-major coordinates of the non-zero elements, by tf_tensor_get_f64. */
static tf_tensor *ref_where(const tf_tensor *x) {
  int r = x->shape.rank;
  int64_t cnt = 0;
  for (int64_t i = 0; i < x->n; i++) cnt += tf_tensor_get_f64(x, i) != 0;
  int64_t *v = calloc((size_t)(cnt * r + 1), sizeof(int64_t));
  int64_t row = 0;
  for (int64_t i = 0; i < x->n; i++) {
    double e = tf_tensor_get_f64(x, i);
    if (e == 0) continue;
    int64_t rem = i;
    for (int k = r - 1; k >= 0; k--) {
      v[row * r + k] = rem % x->shape.dims[k];
      rem /= x->shape.dims[k];
    }
    row++;
  }
  tf_tensor *t = tt_tensor_i(TF_INT64, SHAPE(cnt, (int64_t)r), v);
  free(v);
  return t;
}

START_TEST(test_where_random) {
  static const tf_dtype dts[] = {TF_BOOL,  TF_FLOAT32, TF_FLOAT64, TF_INT8,
                                 TF_UINT8, TF_INT16,   TF_INT32,   TF_INT64,
                                 TF_UINT16, TF_UINT32, TF_UINT64,  TF_FLOAT16,
                                 TF_BFLOAT16, TF_COMPLEX64};
  tf_tensor *keep[2], *kept_out[2], *ref[2];
  for (int k = 0; k < NELEM(dts); k++) {
    tf_tensor *x = tt_rand(dts[k], SHAPE(3, 4, 5), 0, 2);
    if (tf_dtype_is_float(dts[k]) || dts[k] == TF_COMPLEX64) {
      tf_tensor *t = tt_rand(TF_INT32, SHAPE(3, 4, 5), 0, 1);
      for (int64_t i = 0; i < x->n; i++) { /* about half exact zeros */
        if (tf_tensor_get_i64(t, i) == 0) {
          memset((char *)x->data + i * tf_dtype_size(dts[k]), 0,
                 tf_dtype_size(dts[k]));
        }
      }
      tf_tensor_unref(t);
    }
    tf_tensor *o = tt_run1("Where", (tf_tensor *[]){x}, 1, NULL, 0);
    tf_tensor *w = ref_where(x);
    assert_same(o, w);
    tf_tensor_unref(w);
    if (k < 2) { /* bool and float32 also go to numpy */
      keep[k] = x;
      kept_out[k] = o;
    } else {
      tt_free((tf_tensor *[]){x, o}, 2);
    }
  }
  if (tt_numpy("outs = [np.ascontiguousarray(np.argwhere(x), dtype=np.int64)"
               " for x in ins]", keep, 2, ref, 2) == 2) {
    assert_same(kept_out[0], ref[0]);
    assert_same(kept_out[1], ref[1]);
    tt_free(ref, 2);
  }
  tt_free(keep, 2);
  tt_free(kept_out, 2);
}
END_TEST

START_TEST(test_where_special_values) {
  /* NaN is true; -0.0 is false; float16 -0 (0x8000) is false. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(4), (double[]){NAN, -0.0, 0, 1e-30});
  tf_tensor *o = tt_run1("Where", (tf_tensor *[]){x}, 1, NULL, 0);
  tf_tensor *w = tt_tensor_i(TF_INT64, SHAPE(2, 1), (int64_t[]){0, 3});
  assert_same(o, w);
  tt_free((tf_tensor *[]){x, o, w}, 3);
  x = tt_rand(TF_FLOAT16, SHAPE(3), 0, 0);
  ((uint16_t *)x->data)[0] = 0x8000;
  ((uint16_t *)x->data)[1] = 0x0001; /* smallest subnormal */
  ((uint16_t *)x->data)[2] = 0x0000;
  o = tt_run1("Where", (tf_tensor *[]){x}, 1, NULL, 0);
  w = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){1});
  assert_same(o, w);
  tt_free((tf_tensor *[]){x, o, w}, 3);
  tf_tensor *c = tt_rand(TF_COMPLEX64, SHAPE(2), 0, 0);
  ((tf_complex64 *)c->data)[0] = (tf_complex64){0, 2};
  ((tf_complex64 *)c->data)[1] = (tf_complex64){0, 0};
  o = tt_run1("Where", (tf_tensor *[]){c}, 1, NULL, 0);
  w = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){0});
  assert_same(o, w);
  tt_free((tf_tensor *[]){c, o, w}, 3);
}
END_TEST

START_TEST(test_where_rank0_empty) {
  tf_tensor *t = tf_tensor_scalar_bool(true), *f = tf_tensor_scalar_bool(false);
  tf_tensor *o = tt_run1("Where", (tf_tensor *[]){t}, 1, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)1, (int64_t)0);
  tf_tensor_unref(o);
  o = tt_run1("Where", (tf_tensor *[]){f}, 1, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)0);
  tf_tensor_unref(o);
  tf_tensor *e = tt_rand(TF_INT32, SHAPE(2, 0, 3), 0, 1);
  o = tt_run1("Where", (tf_tensor *[]){e}, 1, NULL, 0);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)3);
  tt_free((tf_tensor *[]){t, f, e, o}, 4);
}
END_TEST

/* Several blocks, split over the pool. */
START_TEST(test_where_large) {
  tf_tensor *x = tt_rand(TF_BOOL, SHAPE(3, 301, 257), 0, 1);
  tf_tensor *o = tt_run1("Where", (tf_tensor *[]){x}, 1, NULL, 0);
  tf_tensor *w = ref_where(x);
  assert_same(o, w);
  tt_free((tf_tensor *[]){x, o, w}, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_index");
  TCase *tr = tcase_create("range");
  tcase_add_test(tr, test_range_hand);
  tcase_add_test(tr, test_range_int_extremes);
  tcase_add_test(tr, test_range_vs_numpy);
  tcase_add_test(tr, test_range_errors);
  tcase_add_test(tr, test_range_huge);
  suite_add_tcase(s, tr);
  TCase *tg = tcase_create("gather");
  tcase_add_test(tg, test_gather_random);
  tcase_add_test(tg, test_gather_numpy);
  tcase_add_test(tg, test_gather_large);
  tcase_add_test(tg, test_gather_strings);
  tcase_add_test(tg, test_gather_empty);
  tcase_add_test(tg, test_gather_bad_index);
  tcase_add_test(tg, test_gather_v2_axes);
  tcase_add_test(tg, test_gather_v2_batch_dims);
  tcase_add_test(tg, test_gather_v2_errors);
  suite_add_tcase(s, tg);
  TCase *to = tcase_create("one_hot");
  tcase_add_test(to, test_one_hot_random);
  tcase_add_test(to, test_one_hot_numpy);
  tcase_add_test(to, test_one_hot_edges);
  suite_add_tcase(s, to);
  TCase *tp = tcase_create("partition_stitch");
  tcase_add_test(tp, test_partition_random);
  tcase_add_test(tp, test_partition_edges);
  tcase_add_test(tp, test_stitch_doc_example);
  tcase_add_test(tp, test_stitch_dups_gaps_strings);
  tcase_add_test(tp, test_stitch_inverts_partition);
  tcase_add_test(tp, test_stitch_errors);
  suite_add_tcase(s, tp);
  TCase *tw = tcase_create("where");
  tcase_add_test(tw, test_where_random);
  tcase_add_test(tw, test_where_special_values);
  tcase_add_test(tw, test_where_rank0_empty);
  tcase_add_test(tw, test_where_large);
  suite_add_tcase(s, tw);
  return s;
}
