/* cpu_math_binary_misc_test.c: Select, AddN, BiasAdd and ClipByValue
 * kernels against references written plainly here (element loops over
 * output indices), on fresh random inputs including empty, scalar and
 * large (multi-threaded) tensors; their run-time shape errors (on inputs
 * whose shapes were unknown when the node was built); in-place reuse.
 *
 * Tolerances: Select moves bytes and is compared exactly. AddN sums in
 * input order; the reference rounds each partial sum to the dtype, so it
 * is exact too. BiasAdd and ClipByValue results are one rounding of an
 * exact value (or no arithmetic at all): exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tf_dtype k_dtypes[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,
                                    TF_INT64};

/* Element-exact comparison that keeps per-element work out of Check's
 * assertion bookkeeping; on a mismatch tt_assert_close names the element. */
static void assert_same(const tf_tensor *got, const tf_tensor *want) {
  if (got->dtype == TF_STRING || !tf_tensor_equal(got, want)) {
    tt_assert_close(got, want, 0, 0);
  }
}

/* Builds op on Placeholders of unknown shape (so only the kernel judges
 * shapes) and runs its kernel once. AddN's inputs go in as one list. */
static tf_code run_kernel(const char *op, tf_tensor **in, int n,
                          const tf_attr_kv *attrs, int n_attrs,
                          tf_tensor **out, tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_output o[8];
  for (int i = 0; i < n; i++) {
    o[i] = (tf_output){
        tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "op");
  if (!strcmp(op, "AddN")) {
    tf_node_add_input_list(b, o, n);
  } else {
    for (int i = 0; i < n; i++) {
      tf_node_add_input(b, o[i]);
    }
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *node = tf_node_finish(b, st);
  ck_assert_msg(node != NULL, "%s", st->msg);
  tf_code rc = tf_kernel_run_node(node, NULL, in, out, st);
  tf_graph_free(g);
  return rc;
}

/* Expects op's kernel to fail with INVALID_ARGUMENT mentioning each of the
 * NULL-terminated needles. */
static void expect_kernel_error(const char *op, tf_tensor **in, int n,
                                const tf_attr_kv *attrs, int n_attrs,
                                const char *const *needles) {
  tf_status st;
  tf_tensor *out[1] = {NULL};
  tf_code rc = run_kernel(op, in, n, attrs, n_attrs, out, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT, "%s: got %s: %s", op,
                tf_code_name(rc), st.msg);
  for (int i = 0; needles[i] != NULL; i++) {
    ck_assert_msg(strstr(st.msg, needles[i]) != NULL, "%s: '%s' not in: %s",
                  op, needles[i], st.msg);
  }
}

/* ---- Select ----------------------------------------------------------- */

/* Reference: out[i] = cond[i / per_flag] ? t[i] : e[i], by bytes. */
static tf_tensor *select_ref(const tf_tensor *c, const tf_tensor *t,
                             const tf_tensor *e) {
  tf_tensor *w;
  ck_assert(tf_tensor_copy(t, &w, NULL) == TF_OK);
  int64_t per = c->n ? t->n / c->n : 1;
  size_t sz = tf_dtype_size(t->dtype);
  for (int64_t i = 0; i < t->n; i++) {
    bool pick_t = c->shape.rank == 0 ? *(bool *)c->data
                                     : ((bool *)c->data)[i / per];
    if (!pick_t && t->dtype == TF_STRING) {
      tf_string *s = &tf_tensor_strings(e)[i];
      ck_assert(tf_tensor_set_string(w, i, s->data, s->len, NULL) == TF_OK);
    } else if (!pick_t) {
      memcpy((char *)w->data + i * sz, (char *)e->data + i * sz, sz);
    }
  }
  return w;
}

static void check_select(tf_dtype dt, tf_shape cs, tf_shape ts) {
  tf_tensor *in[3] = {tt_rand(TF_BOOL, cs, 0, 1), tt_rand(dt, ts, 0, 100),
                      tt_rand(dt, ts, 0, 100)};
  tf_tensor *got = tt_run1("Select", in, 3, NULL, 0);
  tf_tensor *want = select_ref(in[0], in[1], in[2]);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(in, 3);
}

START_TEST(test_select) {
  tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64, TF_BOOL,
                    TF_INT8, TF_UINT16, TF_COMPLEX64};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    check_select(dts[d], SHAPE(7), SHAPE(7));
    check_select(dts[d], SHAPE(2, 3, 4), SHAPE(2, 3, 4));
    check_select(dts[d], SHAPE(4), SHAPE(4, 3, 2));
    check_select(dts[d], SHAPE(5), SHAPE(5, 1));
    check_select(dts[d], SHAPE(0), SHAPE(0, 3));
    check_select(dts[d], SHAPE(3, 0), SHAPE(3, 0));
    check_select(dts[d], SCALAR, SCALAR);
  }
  /* Large: split across the pool, both per-element and per-row. */
  check_select(TF_FLOAT32, SHAPE(300, 300), SHAPE(300, 300));
  check_select(TF_INT64, SHAPE(5000), SHAPE(5000, 20));
}
END_TEST

/* A scalar condition hands back t or e itself (no copy), as TF does. */
START_TEST(test_select_scalar) {
  for (int c = 0; c < 2; c++) {
    tf_tensor *in[3] = {tt_tensor(TF_BOOL, SCALAR, (double[]){c}),
                        tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1),
                        tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1)};
    tf_tensor *got = tt_run1("Select", in, 3, NULL, 0);
    ck_assert_ptr_eq(got->data, (c ? in[1] : in[2])->data);
    assert_same(got, c ? in[1] : in[2]);
    tf_tensor_unref(got);
    tt_free(in, 3);
  }
}
END_TEST

static tf_tensor *strings(tf_shape s, const char *const *v) {
  tf_tensor *t;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, NULL) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert(tf_tensor_set_string(t, i, v[i], strlen(v[i]), NULL) == TF_OK);
  }
  return t;
}

START_TEST(test_select_strings) {
  const char *tv[] = {"alpha", "", "gamma", "delta"};
  const char *ev[] = {"one", "two", "", "four"};
  tf_tensor *t = strings(SHAPE(2, 2), tv), *e = strings(SHAPE(2, 2), ev);
  tf_tensor *c = tt_tensor(TF_BOOL, SHAPE(2, 2), (double[]){1, 0, 0, 1});
  tf_tensor *in[3] = {c, t, e};
  tf_tensor *got = tt_run1("Select", in, 3, NULL, 0);
  const char *wv[] = {"alpha", "two", "", "delta"};
  tf_tensor *want = strings(SHAPE(2, 2), wv);
  ck_assert(tf_tensor_equal(got, want));
  tt_free((tf_tensor *[]){got, want}, 2);
  /* Vector condition over rows. */
  in[0] = tt_tensor(TF_BOOL, SHAPE(2), (double[]){0, 1});
  got = tt_run1("Select", in, 3, NULL, 0);
  const char *wv2[] = {"one", "two", "gamma", "delta"};
  want = strings(SHAPE(2, 2), wv2);
  ck_assert(tf_tensor_equal(got, want));
  tt_free((tf_tensor *[]){got, want, in[0], c, t, e}, 6);
}
END_TEST

START_TEST(test_select_errors) {
  tf_tensor *c3 = tt_rand(TF_BOOL, SHAPE(3), 0, 1);
  tf_tensor *c22 = tt_rand(TF_BOOL, SHAPE(2, 2), 0, 1);
  tf_tensor *t42 = tt_rand(TF_FLOAT32, SHAPE(4, 2), -1, 1);
  tf_tensor *e42 = tt_rand(TF_FLOAT32, SHAPE(4, 2), -1, 1);
  tf_tensor *e24 = tt_rand(TF_FLOAT32, SHAPE(2, 4), -1, 1);
  tf_tensor *t4 = tt_rand(TF_FLOAT32, SHAPE(4), -1, 1);
  expect_kernel_error("Select", (tf_tensor *[]){c3, t42, e24}, 3, NULL, 0,
                      (const char *[]){"same shape", "[4,2]", "[2,4]", NULL});
  expect_kernel_error("Select", (tf_tensor *[]){c3, t42, e42}, 3, NULL, 0,
                      (const char *[]){"condition", "[3]", "[4,2]", NULL});
  expect_kernel_error("Select", (tf_tensor *[]){c22, t42, e42}, 3, NULL, 0,
                      (const char *[]){"[2,2]", "[4,2]", NULL});
  expect_kernel_error("Select", (tf_tensor *[]){c3, t4, t4}, 3, NULL, 0,
                      (const char *[]){"[3]", "[4]", NULL});
  tt_free((tf_tensor *[]){c3, c22, t42, e42, e24, t4}, 6);
}
END_TEST

/* ---- AddN ------------------------------------------------------------- */

/* Sums in input order, each partial sum rounded to dt like the kernel's. */
static tf_tensor *addn_ref(tf_tensor **in, int n) {
  tf_dtype dt = in[0]->dtype;
  double *v = calloc((size_t)in[0]->n + 1, sizeof(double));
  for (int64_t i = 0; i < in[0]->n; i++) {
    double acc = tf_tensor_get_f64(in[0], i);
    for (int k = 1; k < n; k++) {
      acc += tf_tensor_get_f64(in[k], i);
      acc = dt == TF_FLOAT32 ? (double)(float)acc : acc;
    }
    v[i] = acc;
  }
  tf_tensor *w = tt_tensor(dt, in[0]->shape, v);
  free(v);
  return w;
}

START_TEST(test_addn) {
  tf_shape shapes[] = {SCALAR, SHAPE(0), SHAPE(7), SHAPE(3, 4, 5),
                       SHAPE(2, 0, 3)};
  for (int d = 0; d < N_ELEMS(k_dtypes); d++) {
    for (int s = 0; s < N_ELEMS(shapes); s++) {
      for (int n = 1; n <= 5; n++) {
        tf_tensor *in[5];
        for (int k = 0; k < n; k++) {
          in[k] = tt_rand(k_dtypes[d], shapes[s], -1000, 1000);
        }
        tf_tensor *got = tt_run1("AddN", in, n, NULL, 0);
        tf_tensor *want = addn_ref(in, n);
        ck_assert(n > 1 || got->data == in[0]->data); /* N=1: passed on */
        assert_same(got, want);
        tt_free((tf_tensor *[]){got, want}, 2);
        tt_free(in, n);
      }
    }
  }
  /* Large, threaded; int wraps. */
  tf_tensor *big[3];
  for (int k = 0; k < 3; k++) {
    big[k] = tt_rand(TF_FLOAT32, SHAPE(200001), -1, 1);
  }
  tf_tensor *got = tt_run1("AddN", big, 3, NULL, 0);
  tf_tensor *want = addn_ref(big, 3);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(big, 3);
  tf_tensor *w[2] = {tt_tensor(TF_INT32, SHAPE(1), (double[]){INT32_MAX}),
                     tt_tensor(TF_INT32, SHAPE(1), (double[]){1})};
  got = tt_run1("AddN", w, 2, NULL, 0);
  ck_assert_int_eq(*(int32_t *)got->data, INT32_MIN);
  tf_tensor_unref(got);
  tt_free(w, 2);
}
END_TEST

START_TEST(test_addn_errors) {
  tf_tensor *a = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, SHAPE(3, 2), -1, 1);
  expect_kernel_error("AddN", (tf_tensor *[]){a, a, b}, 3, NULL, 0,
                      (const char *[]){"input 2", "[3,2]", "[2,3]", NULL});
  tt_free((tf_tensor *[]){a, b}, 2);
}
END_TEST

/* ---- BiasAdd ---------------------------------------------------------- */

/* out[i] = value[i] + bias[channel of i]; channel from the row-major
 * index: last dim (NHWC) or dim 1 (NCHW). */
static tf_tensor *bias_ref(const tf_tensor *v, const tf_tensor *b, bool nchw) {
  int64_t c = b->n, inner = 1;
  for (int i = 2; nchw && i < v->shape.rank; i++) {
    inner *= v->shape.dims[i];
  }
  double *o = calloc((size_t)v->n + 1, sizeof(double));
  for (int64_t i = 0; i < v->n; i++) {
    int64_t ch = nchw ? (i / inner) % c : i % c;
    o[i] = tf_tensor_get_f64(v, i) + tf_tensor_get_f64(b, ch);
  }
  tf_tensor *w = tt_tensor(v->dtype, v->shape, o);
  free(o);
  return w;
}

static void check_bias(tf_dtype dt, tf_shape vs, bool nchw) {
  int64_t c = vs.dims[nchw ? 1 : vs.rank - 1];
  tf_tensor *in[2] = {tt_rand(dt, vs, -100, 100),
                      tt_rand(dt, tf_shape_make(1, &c), -100, 100)};
  tf_attr_kv attr = {"data_format", tf_attr_string(nchw ? "NCHW" : "NHWC")};
  tf_tensor *got = tt_run1("BiasAdd", in, 2, &attr, 1);
  tf_tensor *want = bias_ref(in[0], in[1], nchw);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(in, 2);
}

START_TEST(test_bias_add) {
  for (int d = 0; d < N_ELEMS(k_dtypes); d++) {
    tf_dtype dt = k_dtypes[d];
    check_bias(dt, SHAPE(2, 3), false);
    check_bias(dt, SHAPE(2, 2, 2, 4), false);
    check_bias(dt, SHAPE(2, 1, 3, 2, 5), false);
    check_bias(dt, SHAPE(0, 3), false);
    check_bias(dt, SHAPE(4, 0), false);
    check_bias(dt, SHAPE(2, 3, 4), true);
    check_bias(dt, SHAPE(2, 3, 2, 2), true);
    check_bias(dt, SHAPE(2, 3, 1, 2, 2), true);
    check_bias(dt, SHAPE(3, 5, 1), true);
  }
  /* Large, threaded. */
  check_bias(TF_FLOAT32, SHAPE(512, 129), false);
  check_bias(TF_FLOAT32, SHAPE(8, 16, 32, 33), true);
  /* The default data_format is NHWC. */
  tf_tensor *in[2] = {tt_rand(TF_FLOAT64, SHAPE(3, 2), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(2), -1, 1)};
  tf_tensor *got = tt_run1("BiasAdd", in, 2, NULL, 0);
  tf_tensor *want = bias_ref(in[0], in[1], false);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(in, 2);
}
END_TEST

START_TEST(test_bias_add_errors) {
  tf_tensor *v1 = tt_rand(TF_FLOAT32, SHAPE(3), -1, 1);
  tf_tensor *v23 = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *b3 = tt_rand(TF_FLOAT32, SHAPE(3), -1, 1);
  tf_tensor *b2 = tt_rand(TF_FLOAT32, SHAPE(2), -1, 1);
  tf_tensor *b13 = tt_rand(TF_FLOAT32, SHAPE(1, 3), -1, 1);
  tf_attr_kv nchw = {"data_format", tf_attr_string("NCHW")};
  expect_kernel_error("BiasAdd", (tf_tensor *[]){v1, b3}, 2, NULL, 0,
                      (const char *[]){"at least 2D", "[3]", NULL});
  expect_kernel_error("BiasAdd", (tf_tensor *[]){v23, b2}, 2, NULL, 0,
                      (const char *[]){"bias", "[2]", "[2,3]", NULL});
  expect_kernel_error("BiasAdd", (tf_tensor *[]){v23, b13}, 2, NULL, 0,
                      (const char *[]){"[1,3]", NULL});
  expect_kernel_error("BiasAdd", (tf_tensor *[]){v23, b3}, 2, &nchw, 1,
                      (const char *[]){"at least 3D", "NCHW", NULL});
  tt_free((tf_tensor *[]){v1, v23, b3, b2, b13}, 5);
}
END_TEST

/* ---- ClipByValue ------------------------------------------------------ */

/* TF: max(min(t, hi), lo), bounds scalar or elementwise. */
static tf_tensor *clip_ref(const tf_tensor *t, const tf_tensor *lo,
                           const tf_tensor *hi) {
  double *o = calloc((size_t)t->n + 1, sizeof(double));
  for (int64_t i = 0; i < t->n; i++) {
    double l = tf_tensor_get_f64(lo, lo->n == t->n ? i : 0);
    double h = tf_tensor_get_f64(hi, hi->n == t->n ? i : 0);
    double x = tf_tensor_get_f64(t, i);
    double m = isnan(x) ? x : fmin(x, h);
    o[i] = isnan(m) ? m : fmax(m, l);
  }
  tf_tensor *w = tt_tensor(t->dtype, t->shape, o);
  free(o);
  return w;
}

static void check_clip(tf_dtype dt, tf_shape ts, bool lo_full, bool hi_full) {
  tf_tensor *t = tt_rand(dt, ts, 0, 100);
  tf_tensor *lo = tt_rand(dt, lo_full ? ts : SCALAR, 10, 40);
  tf_tensor *hi = tt_rand(dt, hi_full ? ts : SCALAR, 50, 90);
  tf_tensor *in[3] = {t, lo, hi};
  tf_tensor *got = tt_run1("ClipByValue", in, 3, NULL, 0);
  tf_tensor *want = clip_ref(t, lo, hi);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want, t, lo, hi}, 5);
}

START_TEST(test_clip) {
  tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64, TF_UINT8};
  tf_shape shapes[] = {SCALAR, SHAPE(0), SHAPE(9), SHAPE(3, 4, 5)};
  for (int d = 0; d < N_ELEMS(dts); d++) {
    for (int s = 0; s < N_ELEMS(shapes); s++) {
      for (int m = 0; m < 4; m++) {
        check_clip(dts[d], shapes[s], m & 1, m & 2);
      }
    }
  }
  check_clip(TF_FLOAT32, SHAPE(300, 301), true, false);
  check_clip(TF_FLOAT64, SHAPE(100001), false, false);
  /* NaN passes through; lo > hi gives lo. */
  tf_tensor *in[3] = {tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){NAN, 0, 9}),
                      tt_tensor(TF_FLOAT32, SCALAR, (double[]){3}),
                      tt_tensor(TF_FLOAT32, SCALAR, (double[]){1})};
  tf_tensor *got = tt_run1("ClipByValue", in, 3, NULL, 0);
  const float *g = got->data;
  ck_assert(isnan(g[0]));
  ck_assert(g[1] == 3 && g[2] == 3);
  tf_tensor_unref(got);
  tt_free(in, 3);
}
END_TEST

START_TEST(test_clip_errors) {
  tf_tensor *t = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *v3 = tt_rand(TF_FLOAT32, SHAPE(3), -1, 1);
  tf_tensor *s = tt_rand(TF_FLOAT32, SCALAR, -1, 1);
  expect_kernel_error("ClipByValue", (tf_tensor *[]){t, v3, s}, 3, NULL, 0,
                      (const char *[]){"clip_value_min", "[2,3]", "[3]", NULL});
  expect_kernel_error("ClipByValue", (tf_tensor *[]){t, s, v3}, 3, NULL, 0,
                      (const char *[]){"clip_value_max", "[3]", NULL});
  tt_free((tf_tensor *[]){t, v3, s}, 3);
}
END_TEST

/* ---- in place --------------------------------------------------------- */


START_TEST(test_in_place) {
  /* AddN(x, y, x): x cannot take the running sum (it is read again). */
  tf_tensor *x = tt_rand(TF_FLOAT64, SHAPE(50), -1, 1);
  tf_tensor *y = tt_rand(TF_FLOAT64, SHAPE(50), -1, 1);
  tf_tensor *want = addn_ref((tf_tensor *[]){x, y, x}, 3);
  tf_tensor *got = tt_run_in_place("AddN", (tf_tensor *[]){x, y, x}, 3, true);
  ck_assert_ptr_ne(got->data, x->data);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want}, 2);
  /* AddN(x, y): sums into x's buffer. */
  want = addn_ref((tf_tensor *[]){x, y}, 2);
  void *xbuf = x->data;
  got = tt_run_in_place("AddN", (tf_tensor *[]){x, y}, 2, true);
  ck_assert_ptr_eq(got->data, xbuf);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want, x, y}, 4);
  /* BiasAdd and ClipByValue write over value / t; Select over t. */
  tf_tensor *v = tt_rand(TF_FLOAT32, SHAPE(6, 5), -1, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, SHAPE(5), -1, 1);
  want = bias_ref(v, b, false);
  void *vbuf = v->data;
  got = tt_run_in_place("BiasAdd", (tf_tensor *[]){v, b}, 2, false);
  ck_assert_ptr_eq(got->data, vbuf);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want, v, b}, 4);
  tf_tensor *c = tt_rand(TF_BOOL, SHAPE(6), 0, 1);
  tf_tensor *t = tt_rand(TF_INT32, SHAPE(6, 3), -9, 9);
  tf_tensor *e = tt_rand(TF_INT32, SHAPE(6, 3), -9, 9);
  want = select_ref(c, t, e);
  void *tbuf = t->data;
  got = tt_run_in_place("Select", (tf_tensor *[]){c, t, e}, 3, false);
  ck_assert_ptr_eq(got->data, tbuf);
  assert_same(got, want);
  tt_free((tf_tensor *[]){got, want, c, t, e}, 5);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_binary_misc");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_select);
  tcase_add_test(tc, test_select_scalar);
  tcase_add_test(tc, test_select_strings);
  tcase_add_test(tc, test_select_errors);
  tcase_add_test(tc, test_addn);
  tcase_add_test(tc, test_addn_errors);
  tcase_add_test(tc, test_bias_add);
  tcase_add_test(tc, test_bias_add_errors);
  tcase_add_test(tc, test_clip);
  tcase_add_test(tc, test_clip_errors);
  tcase_add_test(tc, test_in_place);
  suite_add_tcase(s, tc);
  return s;
}
