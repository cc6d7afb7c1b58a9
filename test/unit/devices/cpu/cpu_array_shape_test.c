/* cpu_array_shape_test.c: the CPU kernels of Shape, Size, Rank, Reshape,
 * ExpandDims, Squeeze, Fill, ZerosLike and OnesLike. Views must share the
 * input's buffer (data pointers equal); values are checked exactly (these
 * ops move or set bits, there is no rounding); errors must name the sizes
 * or dims at fault. */
#include <math.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static void assert_shape_is(const tf_tensor *t, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&t->shape, &want), "shape %s, want %s",
                tf_shape_str(&t->shape, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}

static tf_tensor *run2(const char *op, tf_tensor *a, tf_tensor *b) {
  tf_tensor *in[2] = {a, b};
  return tt_run1(op, in, 2, NULL, 0);
}

static const char *fail2(const char *op, tf_tensor *a, tf_tensor *b) {
  tf_tensor *in[2] = {a, b};
  return tt_run_fail(op, in, 2, NULL, 0, TF_INVALID_ARGUMENT);
}

static tf_tensor *strings(tf_shape s, const char *const *v) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert(tf_tensor_set_string(t, i, v[i], strlen(v[i]), &st) == TF_OK);
  }
  return t;
}

/* ---- Shape, Size, Rank -------------------------------------------------- */

START_TEST(test_shape_size_rank) {
  tf_tensor *x = tt_rand(TF_FLOAT64, SHAPE(2, 0, 5), 0, 1);
  tf_tensor *y = tt_run1("Shape", &x, 1, NULL, 0);
  ck_assert_int_eq(y->dtype, TF_INT32);
  assert_shape_is(y, SHAPE(3));
  int32_t *d = y->data;
  ck_assert(d[0] == 2 && d[1] == 0 && d[2] == 5);
  tf_tensor_unref(y);
  tf_attr_kv kv[] = {{"out_type", tf_attr_type_v(TF_INT64)}};
  y = tt_run1("Size", &x, 1, kv, 1);
  ck_assert_int_eq(y->dtype, TF_INT64);
  assert_shape_is(y, tf_shape_scalar());
  ck_assert_int_eq(((int64_t *)y->data)[0], 0);
  tf_tensor_unref(y);
  y = tt_run1("Rank", &x, 1, NULL, 0);
  ck_assert_int_eq(((int32_t *)y->data)[0], 3);
  tt_free((tf_tensor *[]){y, x}, 2);
  const char *sv[] = {"a", "bc", "def", "", "g", "h"};
  x = strings(SHAPE(3, 2), sv);
  y = tt_run1("Shape", &x, 1, kv, 1);
  ck_assert_int_eq(((int64_t *)y->data)[0], 3);
  ck_assert_int_eq(((int64_t *)y->data)[1], 2);
  tf_tensor *z = tt_run1("Size", &x, 1, NULL, 0);
  ck_assert_int_eq(((int32_t *)z->data)[0], 6);
  tt_free((tf_tensor *[]){y, z, x}, 3);
  x = tf_tensor_scalar_bool(true);
  y = tt_run1("Shape", &x, 1, NULL, 0);
  assert_shape_is(y, SHAPE(0));
  z = tt_run1("Rank", &x, 1, NULL, 0);
  ck_assert_int_eq(((int32_t *)z->data)[0], 0);
  tt_free((tf_tensor *[]){y, z, x}, 3);
}
END_TEST

/* ---- Reshape ------------------------------------------------------------ */

static tf_tensor *reshape(tf_tensor *x, int n, const int64_t *dims) {
  tf_tensor *s = tf_tensor_vec_i64(n, dims);
  tf_tensor *y = run2("Reshape", x, s);
  tf_tensor_unref(s);
  return y;
}

START_TEST(test_reshape_is_a_view) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3, 4), -1, 1);
  tf_tensor *y = reshape(x, 2, (int64_t[]){4, -1});
  assert_shape_is(y, SHAPE(4, 6));
  ck_assert_ptr_eq(y->data, x->data); /* shared buffer, no copy */
  ck_assert_int_eq(memcmp(y->data, x->data, x->nbytes), 0);
  tf_tensor *z = reshape(y, 1, (int64_t[]){-1});
  assert_shape_is(z, SHAPE(24));
  ck_assert_ptr_eq(z->data, x->data);
  tt_free((tf_tensor *[]){y, z}, 2);
  /* int32 sizes */
  tf_tensor *s = tf_tensor_vec_i32(3, (int32_t[]){3, 2, 4});
  y = run2("Reshape", x, s);
  assert_shape_is(y, SHAPE(3, 2, 4));
  ck_assert_ptr_eq(y->data, x->data);
  tt_free((tf_tensor *[]){y, s, x}, 3);
  /* scalar <-> [1, 1] */
  x = tf_tensor_scalar_i64(7);
  y = reshape(x, 2, (int64_t[]){1, -1});
  assert_shape_is(y, SHAPE(1, 1));
  z = reshape(y, 0, NULL);
  assert_shape_is(z, tf_shape_scalar());
  ck_assert_int_eq(((int64_t *)z->data)[0], 7);
  tt_free((tf_tensor *[]){y, z, x}, 3);
  /* strings share too */
  const char *sv[] = {"x", "yy", "zzz", "w"};
  x = strings(SHAPE(4), sv);
  y = reshape(x, 2, (int64_t[]){2, 2});
  ck_assert_ptr_eq(y->data, x->data);
  ck_assert(tf_tensor_strings(y)[2].len == 3);
  tt_free((tf_tensor *[]){y, x}, 2);
}
END_TEST

/* TF's rule: with a 0 in sizes, zero input dims are left out when
 * inferring the -1 ([0, 6] -> [0, -1] is [0, 6]). */
START_TEST(test_reshape_empty) {
  tf_tensor *x = tt_rand(TF_INT32, SHAPE(0, 6), 0, 1);
  tf_tensor *y = reshape(x, 2, (int64_t[]){0, -1});
  assert_shape_is(y, SHAPE(0, 6));
  tf_tensor *z = reshape(x, 3, (int64_t[]){2, -1, 3});
  assert_shape_is(z, SHAPE(2, 0, 3));
  tf_tensor *w = reshape(x, 2, (int64_t[]){5, 0});
  assert_shape_is(w, SHAPE(5, 0));
  tt_free((tf_tensor *[]){y, z, w, x}, 4);
}
END_TEST

START_TEST(test_reshape_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *s = tf_tensor_vec_i64(2, (int64_t[]){4, 2});
  const char *msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "tensor with 6 values") &&
                    strstr(msg, "[4,2] has 8"),
                "%s", msg);
  tf_tensor_unref(s);
  s = tf_tensor_vec_i64(2, (int64_t[]){-1, -1});
  msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "Only one input size may be -1, not both 0 and 1"),
                "%s", msg);
  tf_tensor_unref(s);
  s = tf_tensor_vec_i64(2, (int64_t[]){4, -1});
  msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "6 values, but the requested shape requires a "
                            "multiple of 4"),
                "%s", msg);
  tf_tensor_unref(s);
  s = tf_tensor_vec_i64(2, (int64_t[]){-2, 3});
  msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "Size 0 must be non-negative, not -2"), "%s", msg);
  tf_tensor_unref(s);
  s = tf_tensor_scalar_i32(6);
  msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "sizes input must be 1-D"), "%s", msg);
  tf_tensor_unref(s);
  s = tf_tensor_vec_i64(3, (int64_t[]){INT64_MAX, 4, 1});
  msg = fail2("Reshape", x, s);
  ck_assert_msg(strstr(msg, "too many elements"), "%s", msg);
  tt_free((tf_tensor *[]){s, x}, 2);
}
END_TEST

/* ---- ExpandDims, Squeeze ------------------------------------------------ */

START_TEST(test_expand_dims) {
  tf_tensor *x = tt_rand(TF_INT16, SHAPE(2, 3), -5, 5);
  struct {
    int64_t dim;
    tf_shape want;
  } cases[] = {{0, SHAPE(1, 2, 3)},  {1, SHAPE(2, 1, 3)},
               {2, SHAPE(2, 3, 1)},  {-1, SHAPE(2, 3, 1)},
               {-3, SHAPE(1, 2, 3)}, {-2, SHAPE(2, 1, 3)}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *d = tf_tensor_scalar_i32((int32_t)cases[c].dim);
    tf_tensor *y = run2("ExpandDims", x, d);
    assert_shape_is(y, cases[c].want);
    ck_assert_ptr_eq(y->data, x->data);
    tt_free((tf_tensor *[]){y, d}, 2);
  }
  tf_tensor *d = tf_tensor_vec_i64(1, (int64_t[]){3});
  const char *msg = fail2("ExpandDims", x, d);
  ck_assert_msg(strstr(msg, "dim in the range [-3, 3), but got 3"), "%s", msg);
  tf_tensor *s = tf_tensor_scalar_f32(1.5f);
  tf_tensor *z = tf_tensor_scalar_i64(0);
  tf_tensor *y = run2("ExpandDims", s, z);
  assert_shape_is(y, SHAPE(1));
  tt_free((tf_tensor *[]){y, s, z, d, x}, 5);
}
END_TEST

static tf_tensor *squeeze(tf_tensor *x, int n, const int64_t *dims) {
  tf_attr_kv kv[] = {{"squeeze_dims", tf_attr_int_list(dims, n)}};
  return tt_run1("Squeeze", &x, 1, kv, 1);
}

START_TEST(test_squeeze) {
  tf_tensor *x = tt_rand(TF_UINT8, SHAPE(1, 3, 1, 2, 1), 0, 9);
  tf_tensor *y = squeeze(x, 0, NULL);
  assert_shape_is(y, SHAPE(3, 2));
  ck_assert_ptr_eq(y->data, x->data);
  tf_tensor_unref(y);
  y = squeeze(x, 2, (int64_t[]){2, -1});
  assert_shape_is(y, SHAPE(1, 3, 2));
  ck_assert_ptr_eq(y->data, x->data);
  tf_tensor_unref(y);
  tf_tensor *in[1] = {x};
  tf_attr_kv kv[] = {{"squeeze_dims", tf_attr_int_list((int64_t[]){1}, 1)}};
  const char *msg = tt_run_fail("Squeeze", in, 1, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Can not squeeze dim[1], expected a dimension of "
                            "1, got 3"),
                "%s", msg);
  kv[0].value = tf_attr_int_list((int64_t[]){5}, 1);
  msg = tt_run_fail("Squeeze", in, 1, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "squeeze_dims in the range [-5, 5), but got 5"),
                "%s", msg);
  tf_tensor_unref(x);
  x = tt_rand(TF_FLOAT32, SHAPE(1, 1), 0, 1);
  y = squeeze(x, 0, NULL);
  assert_shape_is(y, tf_shape_scalar());
  tt_free((tf_tensor *[]){y, x}, 2);
}
END_TEST

/* ---- Fill, ZerosLike, OnesLike ------------------------------------------ */

START_TEST(test_fill) {
  tf_tensor *dims = tf_tensor_vec_i32(3, (int32_t[]){2, 3, 4});
  tf_tensor *v = tf_tensor_scalar_f64(-2.5);
  tf_tensor *y = run2("Fill", dims, v);
  assert_shape_is(y, SHAPE(2, 3, 4));
  bool ok = true; /* one assert: ck_assert per element is slow */
  for (int64_t i = 0; i < y->n; i++) {
    ok = ok && ((double *)y->data)[i] == -2.5;
  }
  ck_assert(ok);
  tt_free((tf_tensor *[]){y, dims, v}, 3);
  /* large: the parallel doubling fill */
  dims = tf_tensor_vec_i64(2, (int64_t[]){1000, 333});
  v = tf_tensor_scalar_i32(-7);
  y = run2("Fill", dims, v);
  for (int64_t i = 0; i < y->n; i++) {
    ok = ok && ((int32_t *)y->data)[i] == -7;
  }
  ck_assert(ok);
  tt_free((tf_tensor *[]){y, dims, v}, 3);
  /* strings are deep copies */
  const char *sv[] = {"hello"};
  v = strings(tf_shape_scalar(), sv);
  dims = tf_tensor_vec_i32(1, (int32_t[]){3});
  y = run2("Fill", dims, v);
  const tf_string *s = tf_tensor_strings(y);
  for (int i = 0; i < 3; i++) {
    ck_assert(s[i].len == 5 && memcmp(s[i].data, "hello", 5) == 0);
    ck_assert_ptr_ne(s[i].data, tf_tensor_strings(v)[0].data);
  }
  tt_free((tf_tensor *[]){y, dims}, 2);
  dims = tf_tensor_vec_i32(0, NULL);
  y = run2("Fill", dims, v);
  assert_shape_is(y, tf_shape_scalar());
  tt_free((tf_tensor *[]){y, dims, v}, 3);
}
END_TEST

START_TEST(test_fill_errors) {
  tf_tensor *dims = tf_tensor_vec_i32(2, (int32_t[]){2, -1});
  tf_tensor *v = tf_tensor_scalar_f32(1);
  const char *msg = fail2("Fill", dims, v);
  ck_assert_msg(strstr(msg, "dims[1] = -1 must be >= 0"), "%s", msg);
  tf_tensor *vv = tf_tensor_vec_f32(2, (float[]){1, 2});
  tf_tensor_unref(dims);
  dims = tf_tensor_vec_i32(1, (int32_t[]){2});
  msg = fail2("Fill", dims, vv);
  ck_assert_msg(strstr(msg, "value must be a scalar"), "%s", msg);
  tf_tensor *d0 = tf_tensor_scalar_i32(3);
  msg = fail2("Fill", d0, v);
  ck_assert_msg(strstr(msg, "dims must be a vector"), "%s", msg);
  tf_tensor *huge = tf_tensor_vec_i64(3, (int64_t[]){1 << 30, 1 << 30, 1 << 30});
  tf_tensor *in[2] = {huge, v};
  tf_status st;
  tf_tensor *out[1] = {0};
  int n = 1;
  tf_code rc = tf_execute("Fill", in, 2, NULL, 0, out, &n, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT || rc == TF_RESOURCE_EXHAUSTED,
                "huge Fill: %s", st.msg);
  tt_free((tf_tensor *[]){dims, v, vv, d0, huge}, 5);
}
END_TEST

START_TEST(test_zeros_ones_like) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT8,
                                 TF_UINT8,   TF_INT16,   TF_UINT16,
                                 TF_INT32,   TF_UINT32,  TF_INT64,
                                 TF_UINT64,  TF_BOOL,    TF_BFLOAT16,
                                 TF_FLOAT16, TF_COMPLEX64};
  for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
    tf_tensor *x = tt_rand(dts[k], SHAPE(3, 5), 2, 9);
    tf_tensor *z = tt_run1("ZerosLike", &x, 1, NULL, 0);
    tf_tensor *o = tt_run1("OnesLike", &x, 1, NULL, 0);
    ck_assert_int_eq(z->dtype, dts[k]);
    assert_shape_is(o, SHAPE(3, 5));
    for (int64_t i = 0; i < x->n; i++) {
      ck_assert_msg(tf_tensor_get_f64(z, i) == 0.0, "%s zero",
                    tf_dtype_name(dts[k]));
      ck_assert_msg(tf_tensor_get_f64(o, i) == 1.0, "%s one",
                    tf_dtype_name(dts[k]));
    }
    if (dts[k] == TF_COMPLEX64) {
      ck_assert(((tf_complex64 *)o->data)[4].im == 0.0f);
    }
    tt_free((tf_tensor *[]){x, z, o}, 3);
  }
  const char *sv[] = {"a", "b"};
  tf_tensor *s = strings(SHAPE(2), sv);
  tf_tensor *z = tt_run1("ZerosLike", &s, 1, NULL, 0);
  ck_assert(tf_tensor_strings(z)[1].len == 0);
  tt_run_fail("OnesLike", &s, 1, NULL, 0, TF_INVALID_ARGUMENT);
  tf_tensor *e = tt_rand(TF_FLOAT32, SHAPE(0, 4), 0, 1);
  tf_tensor *o = tt_run1("OnesLike", &e, 1, NULL, 0);
  assert_shape_is(o, SHAPE(0, 4));
  tt_free((tf_tensor *[]){s, z, e, o}, 4);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_shape");
  TCase *tc = tcase_create("shape");
  tcase_add_test(tc, test_shape_size_rank);
  tcase_add_test(tc, test_reshape_is_a_view);
  tcase_add_test(tc, test_reshape_empty);
  tcase_add_test(tc, test_reshape_errors);
  tcase_add_test(tc, test_expand_dims);
  tcase_add_test(tc, test_squeeze);
  tcase_add_test(tc, test_fill);
  tcase_add_test(tc, test_fill_errors);
  tcase_add_test(tc, test_zeros_ones_like);
  suite_add_tcase(s, tc);
  return s;
}
