/* cpu_array_slice_test.c: the CPU Slice, StridedSlice, Tile and Pad
 * kernels. Slice, Tile and Pad are checked against plain references
 * written here (each output element located by index arithmetic) and
 * NumPy; StridedSlice against hand-worked cases and NumPy basic indexing
 * on random index expressions (slices with any begin/end/stride including
 * negative and out-of-range values, masks, integer indices, None and
 * Ellipsis) over random shapes with empty dims. All comparisons are exact:
 * these ops only move data. */
#include <stdio.h>
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

static tf_shape rand_shape(int max_rank, int max_dim) {
  tf_shape s = {.rank = (int)(tt_rand_u64() % (uint64_t)(max_rank + 1))};
  for (int d = 0; d < s.rank; d++) {
    s.dims[d] = tt_rand_u64() % 10 == 0
                    ? 0
                    : 1 + (int64_t)(tt_rand_u64() % (uint64_t)max_dim);
  }
  return s;
}

static int64_t rand_in(int64_t lo, int64_t hi) {
  return lo + (int64_t)(tt_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* Input coordinates of flat index i of shape s into c. */
static void coords(const tf_shape *s, int64_t i, int64_t *c) {
  for (int d = s->rank - 1; d >= 0; d--) {
    c[d] = i % s->dims[d];
    i /= s->dims[d];
  }
}

static int64_t flat(const tf_shape *s, const int64_t *c) {
  int64_t f = 0;
  for (int d = 0; d < s->rank; d++) {
    f = f * s->dims[d] + c[d];
  }
  return f;
}

/* Element a[i] equals b[j] (bytes, or string content). */
static bool same_elem(const tf_tensor *a, int64_t i, const tf_tensor *b,
                      int64_t j) {
  if (a->dtype == TF_STRING) {
    const tf_string *x = &tf_tensor_strings(a)[i], *y = &tf_tensor_strings(b)[j];
    return x->len == y->len && (x->len == 0 || !memcmp(x->data, y->data, x->len));
  }
  size_t es = tf_dtype_size(a->dtype);
  return memcmp((char *)a->data + i * es, (char *)b->data + j * es, es) == 0;
}

/* Exact equality (dtype, shape, bytes) with one assertion. */
static void assert_same(const tf_tensor *got, const tf_tensor *want) {
  char a[256], b[256];
  ck_assert_msg(tf_tensor_equal(got, want), "got %s, want %s",
                tf_tensor_str(got, a, sizeof(a)),
                tf_tensor_str(want, b, sizeof(b)));
}

static tf_tensor *strings_tensor(tf_shape s) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "#%lld", (long long)i);
    ck_assert(tf_tensor_set_string(t, i, buf, (size_t)len, &st) == TF_OK);
  }
  return t;
}

/* ---- Slice -------------------------------------------------------------- */

static tf_tensor *slice(tf_tensor *x, const int64_t *b, const int64_t *sz) {
  int r = x->shape.rank;
  tf_tensor *in[3] = {x, tf_tensor_vec_i64(r, b), tf_tensor_vec_i64(r, sz)};
  tf_tensor *y = tt_run1("Slice", in, 3, NULL, 0);
  tt_free(in + 1, 2);
  return y;
}

START_TEST(test_slice_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_INT64, TF_UINT8, TF_STRING};
  for (int it = 0; it < 200; it++) {
    tf_shape s = rand_shape(5, 6);
    tf_dtype dt = dts[it % 4];
    tf_tensor *x = dt == TF_STRING ? strings_tensor(s) : tt_rand(dt, s, 0, 200);
    int64_t b[TF_MAX_RANK], sz[TF_MAX_RANK], c[TF_MAX_RANK];
    for (int d = 0; d < s.rank; d++) {
      b[d] = rand_in(0, s.dims[d]);
      sz[d] = tt_rand_u64() % 4 == 0 ? -1 : rand_in(0, s.dims[d] - b[d]);
    }
    tf_tensor *y = slice(x, b, sz);
    bool ok = true; /* one assert: ck_assert per element is slow */
    for (int64_t o = 0; o < y->n; o++) {
      coords(&y->shape, o, c);
      for (int d = 0; d < s.rank; d++) {
        c[d] += b[d];
      }
      ok = ok && same_elem(y, o, x, flat(&s, c));
    }
    ck_assert_msg(ok, "slice of %s differs", tf_dtype_name(dt));
    for (int d = 0; d < s.rank; d++) {
      ck_assert_int_eq(y->shape.dims[d], sz[d] == -1 ? s.dims[d] - b[d] : sz[d]);
    }
    tt_free((tf_tensor *[]){x, y}, 2);
  }
}
END_TEST

START_TEST(test_slice_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(4, 5), 0, 1);
  tf_tensor *y = slice(x, (int64_t[]){0, 0}, (int64_t[]){-1, 5});
  ck_assert_ptr_eq(y->data, x->data); /* whole input: no copy */
  tf_tensor_unref(y);
  struct {
    int64_t b[2], s[2];
    const char *want;
  } cases[] = {
      {{5, 0}, {0, 1}, "Expected begin[0] in [0, 4], but got 5"},
      {{0, -1}, {1, 1}, "Expected begin[1] in [0, 5], but got -1"},
      {{1, 2}, {4, 1}, "Expected size[0] in [0, 3], but got 4"},
      {{1, 2}, {1, -2}, "Expected size[1] in [0, 3], but got -2"},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    tf_tensor *in[3] = {x, tf_tensor_vec_i64(2, cases[k].b),
                        tf_tensor_vec_i64(2, cases[k].s)};
    const char *msg = tt_run_fail("Slice", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, cases[k].want), "%s", msg);
    tt_free(in + 1, 2);
  }
  tf_tensor *in[3] = {x, tf_tensor_vec_i64(1, (int64_t[]){0}),
                      tf_tensor_vec_i64(1, (int64_t[]){1})};
  const char *msg = tt_run_fail("Slice", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "1-D tensors of size 2"), "%s", msg);
  tt_free(in, 3);
}
END_TEST

/* ---- StridedSlice ------------------------------------------------------- */

typedef struct ss_case {
  int n;
  int64_t b[16], e[16], s[16];
  int64_t bm, em, elm, nam, sam;
} ss_case;

static tf_attr_kv ss_attr[5];

static const tf_attr_kv *ss_attrs(const ss_case *c) {
  ss_attr[0] = (tf_attr_kv){"begin_mask", tf_attr_int(c->bm)};
  ss_attr[1] = (tf_attr_kv){"end_mask", tf_attr_int(c->em)};
  ss_attr[2] = (tf_attr_kv){"ellipsis_mask", tf_attr_int(c->elm)};
  ss_attr[3] = (tf_attr_kv){"new_axis_mask", tf_attr_int(c->nam)};
  ss_attr[4] = (tf_attr_kv){"shrink_axis_mask", tf_attr_int(c->sam)};
  return ss_attr;
}

static tf_tensor **ss_inputs(tf_tensor *x, const ss_case *c, tf_tensor **in) {
  in[0] = x;
  in[1] = tf_tensor_vec_i64(c->n, c->b);
  in[2] = tf_tensor_vec_i64(c->n, c->e);
  in[3] = tf_tensor_vec_i64(c->n, c->s);
  return in;
}

static tf_tensor *strided(tf_tensor *x, const ss_case *c) {
  tf_tensor *in[4];
  tf_tensor *y = tt_run1("StridedSlice", ss_inputs(x, c, in), 4, ss_attrs(c),
                         5);
  tt_free(in + 1, 3);
  return y;
}

static const char *strided_fail(tf_tensor *x, const ss_case *c) {
  tf_tensor *in[4];
  const char *msg = tt_run_fail("StridedSlice", ss_inputs(x, c, in), 4,
                                ss_attrs(c), 5, TF_INVALID_ARGUMENT);
  tt_free(in + 1, 3);
  return msg;
}

static void expect_vals(const tf_tensor *y, int n, const double *want) {
  ck_assert_int_eq(y->n, n);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(tf_tensor_get_f64(y, i) == want[i], "element %d: %g vs %g",
                  i, tf_tensor_get_f64(y, i), want[i]);
  }
}

START_TEST(test_strided_hand_cases) {
  double v[10];
  for (int i = 0; i < 10; i++) {
    v[i] = i;
  }
  tf_tensor *x = tt_tensor(TF_INT32, SHAPE(10), v);
  /* x[::-1] */
  ss_case c = {.n = 1, .b = {0}, .e = {0}, .s = {-1}, .bm = 1, .em = 1};
  tf_tensor *y = strided(x, &c);
  expect_vals(y, 10, (double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  tf_tensor_unref(y);
  /* x[8:2:-2] */
  c = (ss_case){.n = 1, .b = {8}, .e = {2}, .s = {-2}};
  y = strided(x, &c);
  expect_vals(y, 3, (double[]){8, 6, 4});
  tf_tensor_unref(y);
  /* x[-3:100] clamps */
  c = (ss_case){.n = 1, .b = {-3}, .e = {100}, .s = {1}};
  y = strided(x, &c);
  expect_vals(y, 3, (double[]){7, 8, 9});
  tf_tensor_unref(y);
  /* x[-1] shrinks to a scalar */
  c = (ss_case){.n = 1, .b = {-1}, .e = {0}, .s = {1}, .sam = 1};
  y = strided(x, &c);
  assert_shape_is(y, tf_shape_scalar());
  expect_vals(y, 1, (double[]){9});
  tf_tensor_unref(y);
  /* x[5:2] is empty */
  c = (ss_case){.n = 1, .b = {5}, .e = {2}, .s = {1}};
  y = strided(x, &c);
  assert_shape_is(y, SHAPE(0));
  tt_free((tf_tensor *[]){y, x}, 2);
  /* 3-D: x[..., 1, None, ::2] on [2, 3, 4] gives [2, 1, 2] */
  tf_tensor *z = tt_rand(TF_FLOAT32, SHAPE(2, 3, 4), 0, 1);
  c = (ss_case){.n = 4, .b = {0, 1, 0, 0}, .e = {0, 2, 0, 0},
                .s = {1, 1, 1, 2}, .elm = 1, .sam = 2, .nam = 4, .bm = 8,
                .em = 8};
  y = strided(z, &c);
  assert_shape_is(y, SHAPE(2, 1, 2));
  float *zd = z->data, *yd = y->data;
  ck_assert(yd[0] == zd[4] && yd[1] == zd[6] && yd[2] == zd[16] &&
            yd[3] == zd[18]);
  tt_free((tf_tensor *[]){y, z}, 2);
}
END_TEST

/* x[:], x[...], x[None] copy nothing: the output shares the input. */
START_TEST(test_strided_identity_is_a_view) {
  tf_tensor *x = tt_rand(TF_FLOAT64, SHAPE(3, 4), 0, 1);
  ss_case cases[] = {
      {.n = 1, .b = {0}, .e = {0}, .s = {1}, .bm = 1, .em = 1},
      {.n = 1, .b = {0}, .e = {0}, .s = {1}, .elm = 1},
      {.n = 2, .b = {0, 0}, .e = {0, 0}, .s = {1, 1}, .nam = 1, .elm = 2},
      {.n = 2, .b = {0, -100}, .e = {3, 100}, .s = {1, 1}},
  };
  tf_shape want[] = {SHAPE(3, 4), SHAPE(3, 4), SHAPE(1, 3, 4), SHAPE(3, 4)};
  for (int k = 0; k < 4; k++) {
    tf_tensor *y = strided(x, &cases[k]);
    assert_shape_is(y, want[k]);
    ck_assert_ptr_eq(y->data, x->data);
    tf_tensor_unref(y);
  }
  tf_tensor_unref(x);
}
END_TEST

/* Appends a random slice spec over shape s to c and its Python form to
 * expr: at most one Ellipsis, up to two new axes, integer indices on
 * non-empty dims, slices with random bounds, strides and masks. */
static void rand_spec(const tf_shape *s, ss_case *c, char *expr, size_t size) {
  bool ell = tt_rand_u64() % 3 == 0;
  int consume = (int)rand_in(0, s->rank), n_new = (int)rand_in(0, 2);
  int total = consume + n_new + (ell ? 1 : 0), ell_at = -1;
  int dim = 0, new_left = n_new;
  int skipped = s->rank - consume; /* dims the ellipsis covers */
  size_t off = 0;
  memset(c, 0, sizeof(*c));
  if (ell) {
    ell_at = (int)rand_in(0, total - 1);
  }
  off += (size_t)snprintf(expr + off, size - off, "(");
  for (int i = 0; i < total; i++) {
    c->s[i] = 1;
    int left = total - i - (ell_at > i ? 1 : 0);
    if (i == ell_at) {
      c->elm |= 1 << i;
      dim += skipped;
      off += (size_t)snprintf(expr + off, size - off, "Ellipsis,");
    } else if (new_left > 0 && (left <= new_left || tt_rand_u64() % 3 == 0)) {
      c->nam |= 1 << i;
      new_left--;
      off += (size_t)snprintf(expr + off, size - off, "None,");
    } else {
      int64_t d = s->dims[dim++];
      if (d > 0 && tt_rand_u64() % 4 == 0) {
        c->b[i] = rand_in(-d, d - 1);
        c->e[i] = rand_in(-5, 5); /* ignored when shrinking */
        c->sam |= 1 << i;
        off += (size_t)snprintf(expr + off, size - off, "%lld,",
                                (long long)c->b[i]);
        continue;
      }
      c->b[i] = rand_in(-d - 2, d + 2);
      c->e[i] = rand_in(-d - 2, d + 2);
      c->s[i] = rand_in(1, 3) * (tt_rand_u64() & 1 ? -1 : 1);
      bool bm = tt_rand_u64() % 4 == 0, em = tt_rand_u64() % 4 == 0;
      c->bm |= (int64_t)bm << i;
      c->em |= (int64_t)em << i;
      char bs[24] = "", es[24] = "";
      if (!bm) {
        snprintf(bs, sizeof(bs), "%lld", (long long)c->b[i]);
      }
      if (!em) {
        snprintf(es, sizeof(es), "%lld", (long long)c->e[i]);
      }
      off += (size_t)snprintf(expr + off, size - off, "slice(%s%s,%s%s,%lld),",
                              bm ? "None" : "", bs, em ? "None" : "", es,
                              (long long)c->s[i]);
    }
  }
  snprintf(expr + off, size - off, ")");
  c->n = total;
  if (!ell) {
    dim += skipped; /* the implicit trailing ellipsis */
  }
  ck_assert_int_eq(dim, s->rank);
}

START_TEST(test_strided_random_numpy) {
  enum { BATCH = 30, ROUNDS = 3 };
  static char script[BATCH * 200];
  for (int round = 0; round < ROUNDS; round++) {
    tf_tensor *xs[BATCH], *want[BATCH] = {0};
    ss_case cases[BATCH];
    size_t off = (size_t)snprintf(script, sizeof(script), "outs = []\n");
    for (int k = 0; k < BATCH; k++) {
      tf_shape s = rand_shape(4, 5);
      xs[k] = tt_rand(k % 2 ? TF_FLOAT64 : TF_INT32, s, -100, 100);
      char expr[160];
      rand_spec(&s, &cases[k], expr, sizeof(expr));
      off += (size_t)snprintf(script + off, sizeof(script) - off,
                              "outs.append(np.array(ins[%d][%s], order='C'))\n",
                              k, expr);
    }
    if (tt_numpy(script, xs, BATCH, want, BATCH) != BATCH) {
      tt_free(xs, BATCH);
      return;
    }
    for (int k = 0; k < BATCH; k++) {
      tf_tensor *y = strided(xs[k], &cases[k]);
      assert_same(y, want[k]);
      tf_tensor_unref(y);
    }
    tt_free(xs, BATCH);
    tt_free(want, BATCH);
  }
}
END_TEST

/* A large negative-stride slice that takes the parallel strided path. */
START_TEST(test_strided_large) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(400, 300), -1, 1);
  ss_case c = {.n = 2, .b = {-1, 1}, .e = {0, 299}, .s = {-1, 3}, .em = 1};
  tf_tensor *y = strided(x, &c);
  assert_shape_is(y, SHAPE(400, 100));
  const float *xd = x->data, *yd = y->data;
  bool ok = true;
  for (int64_t i = 0; i < 400; i++) {
    for (int64_t j = 0; j < 100; j++) {
      ok = ok && yd[i * 100 + j] == xd[(399 - i) * 300 + 1 + 3 * j];
    }
  }
  ck_assert(ok);
  tt_free((tf_tensor *[]){x, y}, 2);
}
END_TEST

START_TEST(test_strided_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(4, 5), 0, 1);
  ss_case c = {.n = 1, .b = {0}, .e = {2}, .s = {0}};
  const char *msg = strided_fail(x, &c);
  ck_assert_msg(strstr(msg, "strides[0] must be non-zero"), "%s", msg);
  c = (ss_case){.n = 2, .b = {0, 5}, .e = {1, 6}, .s = {1, 1}, .sam = 2};
  msg = strided_fail(x, &c);
  ck_assert_msg(strstr(msg, "slice index 5 of dimension 1 out of bounds"),
                "%s", msg);
  c = (ss_case){.n = 2, .b = {0, -6}, .e = {1, 6}, .s = {1, 1}, .sam = 3};
  msg = strided_fail(x, &c);
  ck_assert_msg(strstr(msg, "slice index -6 of dimension 1 out of bounds"),
                "%s", msg);
  c = (ss_case){.n = 2, .s = {1, 1}, .elm = 3};
  msg = strided_fail(x, &c);
  ck_assert_msg(strstr(msg, "Multiple ellipses"), "%s", msg);
  c = (ss_case){.n = 3, .s = {1, 1, 1}};
  msg = strided_fail(x, &c);
  ck_assert_msg(strstr(msg, "Index out of range using input dim 2"), "%s",
                msg);
  tf_tensor *in[4] = {x, tf_tensor_vec_i64(2, (int64_t[]){0, 0}),
                      tf_tensor_vec_i64(1, (int64_t[]){1}),
                      tf_tensor_vec_i64(2, (int64_t[]){1, 1})};
  msg = tt_run_fail("StridedSlice", in, 4, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "1D equal size tensors"), "%s", msg);
  tt_free(in, 4);
}
END_TEST

/* ---- Tile --------------------------------------------------------------- */

static tf_tensor *tile(tf_tensor *x, const int64_t *m) {
  tf_tensor *in[2] = {x, tf_tensor_vec_i64(x->shape.rank, m)};
  tf_tensor *y = tt_run1("Tile", in, 2, NULL, 0);
  tf_tensor_unref(in[1]);
  return y;
}

START_TEST(test_tile_random) {
  static const tf_dtype dts[] = {TF_FLOAT32, TF_INT16, TF_STRING, TF_INT64};
  for (int it = 0; it < 150; it++) {
    tf_shape s = rand_shape(4, 4);
    tf_dtype dt = dts[it % 4];
    tf_tensor *x = dt == TF_STRING ? strings_tensor(s) : tt_rand(dt, s, 0, 99);
    int64_t m[TF_MAX_RANK], c[TF_MAX_RANK];
    for (int d = 0; d < s.rank; d++) {
      m[d] = rand_in(0, 3);
    }
    tf_tensor *y = tile(x, m);
    for (int d = 0; d < s.rank; d++) {
      ck_assert_int_eq(y->shape.dims[d], s.dims[d] * m[d]);
    }
    bool ok = true;
    for (int64_t o = 0; o < y->n; o++) {
      coords(&y->shape, o, c);
      for (int d = 0; d < s.rank; d++) {
        c[d] %= s.dims[d];
      }
      ok = ok && same_elem(y, o, x, flat(&s, c));
    }
    ck_assert_msg(ok, "tile of %s differs", tf_dtype_name(dt));
    tt_free((tf_tensor *[]){x, y}, 2);
  }
}
END_TEST

START_TEST(test_tile_numpy_and_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(30, 1, 7), -1, 1);
  tf_tensor *m = tf_tensor_vec_i64(3, (int64_t[]){4, 100, 3});
  tf_tensor *want[1] = {0};
  if (tt_numpy("outs = [np.tile(ins[0], ins[1])]", (tf_tensor *[]){x, m}, 2,
               want, 1) == 1) {
    tf_tensor *y = tile(x, (int64_t[]){4, 100, 3});
    assert_same(y, want[0]);
    tt_free((tf_tensor *[]){y, want[0]}, 2);
  }
  tf_tensor *y = tile(x, (int64_t[]){1, 1, 1});
  ck_assert_ptr_eq(y->data, x->data);
  tf_tensor_unref(y);
  tf_tensor *in[2] = {x, tf_tensor_vec_i64(3, (int64_t[]){1, -1, 1})};
  const char *msg = tt_run_fail("Tile", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Expected multiples[1] >= 0, but got -1"), "%s",
                msg);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i64(2, (int64_t[]){1, 1});
  msg = tt_run_fail("Tile", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "vector of length 3 but got length 2"), "%s", msg);
  tf_tensor_unref(in[1]);
  in[1] = tf_tensor_vec_i64(3, (int64_t[]){INT64_MAX / 8, 1, 1});
  msg = tt_run_fail("Tile", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "overflows"), "%s", msg);
  tt_free((tf_tensor *[]){x, m, in[1]}, 3);
}
END_TEST

/* ---- Pad ---------------------------------------------------------------- */

static tf_tensor *pad(tf_tensor *x, const int64_t *p) {
  int r = x->shape.rank;
  tf_tensor *in[2] = {x, tt_tensor_i(TF_INT64, SHAPE(r, 2), p)};
  tf_tensor *y = tt_run1("Pad", in, 2, NULL, 0);
  tf_tensor_unref(in[1]);
  return y;
}

START_TEST(test_pad_random) {
  static const tf_dtype dts[] = {TF_FLOAT64, TF_UINT8, TF_STRING, TF_INT32};
  for (int it = 0; it < 150; it++) {
    tf_shape s = rand_shape(4, 4);
    if (s.rank == 0) {
      continue;
    }
    tf_dtype dt = dts[it % 4];
    tf_tensor *x = dt == TF_STRING ? strings_tensor(s) : tt_rand(dt, s, 1, 99);
    int64_t p[2 * TF_MAX_RANK], c[TF_MAX_RANK];
    for (int d = 0; d < 2 * s.rank; d++) {
      p[d] = rand_in(0, 2);
    }
    tf_tensor *y = pad(x, p);
    bool ok = true;
    for (int64_t o = 0; o < y->n; o++) {
      coords(&y->shape, o, c);
      bool inside = true;
      for (int d = 0; d < s.rank; d++) {
        c[d] -= p[2 * d];
        inside = inside && c[d] >= 0 && c[d] < s.dims[d];
      }
      if (inside) {
        ok = ok && same_elem(y, o, x, flat(&s, c));
      } else if (dt == TF_STRING) {
        ok = ok && tf_tensor_strings(y)[o].len == 0;
      } else {
        ok = ok && tf_tensor_get_f64(y, o) == 0.0;
      }
    }
    ck_assert_msg(ok, "pad of %s differs", tf_dtype_name(dt));
    tt_free((tf_tensor *[]){x, y}, 2);
  }
}
END_TEST

START_TEST(test_pad_numpy_and_errors) {
  tf_tensor *x = tt_rand(TF_FLOAT32, SHAPE(200, 3, 50), -1, 1);
  int64_t p[] = {1, 2, 0, 3, 4, 0};
  tf_tensor *pt = tt_tensor_i(TF_INT64, SHAPE(3, 2), p);
  tf_tensor *want[1] = {0};
  if (tt_numpy("outs = [np.pad(ins[0], ins[1])]", (tf_tensor *[]){x, pt}, 2,
               want, 1) == 1) {
    tf_tensor *y = pad(x, p);
    assert_same(y, want[0]);
    tt_free((tf_tensor *[]){y, want[0]}, 2);
  }
  tf_tensor *in[2] = {x, tt_tensor_i(TF_INT32, SHAPE(3, 2),
                                     (int64_t[]){0, 0, -1, 0, 0, 0})};
  const char *msg = tt_run_fail("Pad", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Paddings must be non-negative: -1 0"), "%s", msg);
  tf_tensor_unref(in[1]);
  in[1] = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){0, 0, 0, 0});
  msg = tt_run_fail("Pad", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "first dimension of paddings must be the rank"),
                "%s", msg);
  tf_tensor_unref(in[1]);
  in[1] = tt_tensor_i(TF_INT32, SHAPE(3, 3), (int64_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0});
  msg = tt_run_fail("Pad", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "paddings must be a matrix with 2 columns"), "%s",
                msg);
  tf_tensor_unref(in[1]);
  in[1] = tt_tensor_i(TF_INT64, SHAPE(3, 2),
                      (int64_t[]){0, 0, INT64_MAX - 1, 5, 0, 0});
  msg = tt_run_fail("Pad", in, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "output dim 1 overflows"), "%s", msg);
  /* a scalar has nothing to pad: the output is the input */
  tf_tensor *s = tf_tensor_scalar_f64(4.0);
  tf_tensor *y = pad(s, NULL);
  ck_assert_ptr_eq(y->data, s->data);
  tt_free((tf_tensor *[]){x, pt, in[1], s, y}, 5);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_slice");
  TCase *tc = tcase_create("slice");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_slice_random);
  tcase_add_test(tc, test_slice_errors);
  tcase_add_test(tc, test_strided_hand_cases);
  tcase_add_test(tc, test_strided_identity_is_a_view);
  tcase_add_test(tc, test_strided_random_numpy);
  tcase_add_test(tc, test_strided_large);
  tcase_add_test(tc, test_strided_errors);
  tcase_add_test(tc, test_tile_random);
  tcase_add_test(tc, test_tile_numpy_and_errors);
  tcase_add_test(tc, test_pad_random);
  tcase_add_test(tc, test_pad_numpy_and_errors);
  suite_add_tcase(s, tc);
  return s;
}
