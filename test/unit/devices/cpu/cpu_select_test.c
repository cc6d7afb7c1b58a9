/* cpu_select_test.c: the CPU kernel of SelectV2 (TF's where_v2) against a
 * plain recomputation that finds condition, t and e elements by
 * unravelling output indices (tt_bcast_src_index), on fresh seeded random
 * inputs over three-way broadcasting shape triples (scalars, empties,
 * rows, columns, rank 5, a condition broadcast over t and e and the
 * reverse), for element sizes 1, 2, 4 and 8 (int8, bool, int16, float32,
 * float64, int64) and strings; NaN payloads move untouched; shape and
 * dtype errors. Values are copied, so every comparison is exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct triple {
  tf_shape c, t, e;
} triple;

static int triples(triple *p) {
  int i = 0;
  p[i++] = (triple){SCALAR, SCALAR, SCALAR};
  p[i++] = (triple){SCALAR, SHAPE(4), SHAPE(4)};
  p[i++] = (triple){SHAPE(4), SCALAR, SCALAR};
  p[i++] = (triple){SHAPE(4), SHAPE(4), SCALAR};
  p[i++] = (triple){SHAPE(4), SCALAR, SHAPE(4)};
  p[i++] = (triple){SHAPE(0), SCALAR, SHAPE(1)};
  p[i++] = (triple){SHAPE(2, 0), SHAPE(2, 1), SHAPE(0)};
  p[i++] = (triple){SHAPE(3, 1), SHAPE(1, 5), SHAPE(3, 5)};
  p[i++] = (triple){SHAPE(3, 5), SHAPE(5), SHAPE(3, 1)};
  p[i++] = (triple){SHAPE(1, 5), SHAPE(3, 1), SCALAR};
  p[i++] = (triple){SHAPE(2, 1, 3), SHAPE(4, 1), SHAPE(1, 1, 1)};
  p[i++] = (triple){SHAPE(2, 1, 3, 1, 2), SHAPE(1, 4, 1, 2, 2),
                    SHAPE(2, 4, 3, 1, 1)};
  p[i++] = (triple){SHAPE(100, 1), SHAPE(100, 3), SHAPE(3)};
  return i;
}

static tf_shape bcast3(const tf_shape *const *s) {
  int r = 0;
  for (int k = 0; k < 3; k++) {
    r = s[k]->rank > r ? s[k]->rank : r;
  }
  tf_shape o = tf_shape_make(r, NULL);
  for (int i = 0; i < r; i++) {
    o.dims[i] = 1;
    for (int k = 0; k < 3; k++) {
      int j = i - (r - s[k]->rank);
      int64_t d = j >= 0 ? s[k]->dims[j] : 1;
      o.dims[i] = d != 1 ? d : o.dims[i];
    }
  }
  return o;
}

/* Numeric t and e of dtype dt; checks SelectV2 element by element. */
static void check_triple(tf_dtype dt, const triple *p) {
  tf_tensor *in[3] = {tt_rand(TF_BOOL, p->c, 0, 1),
                      tt_rand(dt, p->t, -100, 100),
                      tt_rand(dt, p->e, -100, 100)};
  if (dt == TF_FLOAT32 && in[1]->n > 0) {
    ((float *)in[1]->data)[0] = NAN;
  }
  tf_tensor *got = tt_run1("SelectV2", in, 3, NULL, 0);
  const tf_shape *s[3] = {&p->c, &p->t, &p->e};
  tf_shape os = bcast3(s);
  char a[64], b[64];
  ck_assert_msg(tf_shape_equal(&got->shape, &os), "shape %s, want %s",
                tf_shape_str(&got->shape, a, sizeof(a)),
                tf_shape_str(&os, b, sizeof(b)));
  ck_assert_int_eq(got->dtype, dt);
  size_t w = tf_dtype_size(dt);
  bool ok = true;
  int64_t bad = -1;
  for (int64_t o = 0; o < got->n && ok; o++) {
    bool c = ((const bool *)in[0]->data)[tt_bcast_src_index(&p->c, &os, o)];
    const tf_tensor *src = c ? in[1] : in[2];
    int64_t i = tt_bcast_src_index(&src->shape, &os, o);
    ok = memcmp((const char *)got->data + (size_t)o * w,
                (const char *)src->data + (size_t)i * w, w) == 0;
    bad = o;
  }
  ck_assert_msg(ok, "SelectV2 %s %s/%s/%s: element %lld differs",
                tf_dtype_name(dt), tf_shape_str(&p->c, a, sizeof(a)),
                tf_shape_str(&p->t, b, sizeof(b)), "e", (long long)bad);
  tf_tensor_unref(got);
  tt_free(in, 3);
}

START_TEST(test_random_broadcast) {
  tf_dtype dts[] = {TF_INT8, TF_BOOL, TF_INT16, TF_FLOAT32, TF_FLOAT64,
                    TF_INT64, TF_UINT32};
  triple p[16];
  int n = triples(p);
  for (int d = 0; d < N_ELEMS(dts); d++) {
    for (int i = 0; i < n; i++) {
      check_triple(dts[d], &p[i]);
    }
  }
}
END_TEST

static tf_tensor *strings(tf_shape s, const char *const *v) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert(tf_tensor_set_string(t, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  return t;
}

START_TEST(test_strings) {
  bool cv[6] = {true, false, false, true, true, false};
  tf_shape cs = SHAPE(2, 3);
  tf_tensor *c;
  tf_status st;
  ck_assert(tf_tensor_new(TF_BOOL, &cs, &c, &st) == TF_OK);
  memcpy(c->data, cv, sizeof(cv));
  tf_tensor *in[3] = {c, strings(SHAPE(2, 1), (const char *[]){"a", "bb"}),
                      strings(SHAPE(3), (const char *[]){"x", "", "zzz"})};
  tf_tensor *got = tt_run1("SelectV2", in, 3, NULL, 0);
  const char *want[6] = {"a", "", "zzz", "bb", "bb", "zzz"};
  ck_assert(tf_shape_equal(&got->shape, &cs));
  for (int i = 0; i < 6; i++) {
    const tf_string *g = &tf_tensor_strings(got)[i];
    ck_assert_int_eq((int)g->len, (int)strlen(want[i]));
    ck_assert(g->len == 0 || memcmp(g->data, want[i], g->len) == 0);
  }
  tf_tensor_unref(got);
  tt_free(in, 3);
}
END_TEST

START_TEST(test_errors) {
  tf_tensor *in[3] = {tt_rand(TF_BOOL, SHAPE(2, 3), 0, 1),
                      tt_rand(TF_FLOAT32, SHAPE(4), 0, 1),
                      tt_rand(TF_FLOAT32, SCALAR, 0, 1)};
  const char *msg = tt_run_fail("SelectV2", in, 3, NULL, 0,
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "[2,3]") && strstr(msg, "[4]"), "%s", msg);
  tt_free(in, 3);
  /* A float condition is rejected. */
  tf_tensor *fc[3] = {tt_rand(TF_FLOAT32, SHAPE(2), 0, 1),
                      tt_rand(TF_FLOAT32, SHAPE(2), 0, 1),
                      tt_rand(TF_FLOAT32, SHAPE(2), 0, 1)};
  tt_run_fail("SelectV2", fc, 3, NULL, 0, TF_INVALID_ARGUMENT);
  tt_free(fc, 3);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_select");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_random_broadcast);
  tcase_add_test(tc, test_strings);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
