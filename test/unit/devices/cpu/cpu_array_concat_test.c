/* cpu_array_concat_test.c: the CPU ConcatV2 and Concat (axis last or
 * first), Split, Pack and Unpack kernels against a plain reference (each output element
 * located by index arithmetic and compared bit for bit) and NumPy
 * (concatenate, split, stack), on random shapes with empty dims, negative
 * axes, several dtypes and strings; plus the error cases, whose messages
 * must name the offending input index or sizes. Exact comparison: these
 * ops only move data. */
#include <stdio.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_tensor *rand_tensor(tf_dtype dt, tf_shape s) {
  if (dt != TF_STRING) {
    return tt_rand(dt, s, -1000, 1000);
  }
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "v%llu",
                       (unsigned long long)(tt_rand_u64() % 1000));
    ck_assert(tf_tensor_set_string(t, i, buf, (size_t)len, &st) == TF_OK);
  }
  return t;
}

/* Element a[i] equals b[j] (bytes, or string content). */
static bool same_elem(const tf_tensor *a, int64_t i, const tf_tensor *b,
                      int64_t j) {
  if (a->dtype == TF_STRING) {
    const tf_string *x = &tf_tensor_strings(a)[i], *y = &tf_tensor_strings(b)[j];
    return x->len == y->len && memcmp(x->data, y->data, x->len) == 0;
  }
  size_t es = tf_dtype_size(a->dtype);
  return memcmp((char *)a->data + i * es, (char *)b->data + j * es, es) == 0;
}

static void outer_inner(const tf_shape *s, int axis, int64_t *outer,
                        int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < s->rank; d++) {
    if (d < axis) {
      *outer *= s->dims[d];
    } else if (d > axis) {
      *inner *= s->dims[d];
    }
  }
}

/* Exact equality (dtype, shape, bytes) with one assertion. */
static void assert_same(const tf_tensor *got, const tf_tensor *want) {
  char a[256], b[256];
  ck_assert_msg(tf_tensor_equal(got, want), "got %s, want %s",
                tf_tensor_str(got, a, sizeof(a)),
                tf_tensor_str(want, b, sizeof(b)));
}

static tf_shape rand_shape(int rank) {
  tf_shape s = {.rank = rank};
  for (int d = 0; d < rank; d++) {
    s.dims[d] = tt_rand_u64() % 10 == 0 ? 0 : 1 + (int64_t)(tt_rand_u64() % 4);
  }
  return s;
}

static const tf_dtype dts[] = {TF_FLOAT32, TF_INT8, TF_FLOAT64, TF_UINT16,
                               TF_STRING, TF_BOOL};

/* ---- ConcatV2 and Concat ------------------------------------------------ */

/* ConcatV2(xs..., axis) when v2, else Concat(axis, xs...). */
static tf_tensor *concat_v(bool v2, tf_tensor **xs, int n, int64_t axis) {
  tf_tensor *in[8];
  tf_tensor *ax = tf_tensor_scalar_i32((int32_t)axis);
  for (int i = 0; i < n; i++) {
    in[i + !v2] = xs[i];
  }
  in[v2 ? n : 0] = ax;
  tf_tensor *y = tt_run1(v2 ? "ConcatV2" : "Concat", in, n + 1, NULL, 0);
  tf_tensor_unref(ax);
  return y;
}

static tf_tensor *concat(tf_tensor **xs, int n, int64_t axis) {
  return concat_v(true, xs, n, axis);
}

START_TEST(test_concat_random) {
  for (int it = 0; it < 150; it++) {
    tf_dtype dt = dts[it % 6];
    int rank = 1 + (int)(tt_rand_u64() % 4), n = 2 + (int)(tt_rand_u64() % 3);
    int axis = (int)(tt_rand_u64() % (uint64_t)rank);
    tf_shape s = rand_shape(rank);
    tf_tensor *xs[4];
    for (int i = 0; i < n; i++) {
      s.dims[axis] = (int64_t)(tt_rand_u64() % 4);
      xs[i] = rand_tensor(dt, s);
    }
    /* Both signatures, positive and negative axes. */
    tf_tensor *y = concat_v(it % 4 < 2, xs, n, (it & 1) ? axis - rank : axis);
    int64_t outer, inner, total = y->shape.dims[axis], at = 0;
    outer_inner(&y->shape, axis, &outer, &inner);
    bool ok = true; /* one assert: ck_assert per element is slow */
    for (int i = 0; i < n; i++) {
      int64_t d = xs[i]->shape.dims[axis];
      for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < d * inner; k++) {
          ok = ok && same_elem(y, (o * total + at) * inner + k, xs[i],
                               o * d * inner + k);
        }
      }
      at += d;
    }
    ck_assert_msg(ok, "concat of %d %s inputs differs", n, tf_dtype_name(dt));
    ck_assert_int_eq(at, total);
    tt_free(xs, n);
    tf_tensor_unref(y);
  }
}
END_TEST

START_TEST(test_concat_large_numpy) {
  tf_tensor *xs[3] = {tt_rand(TF_FLOAT32, SHAPE(100, 200, 3), -1, 1),
                      tt_rand(TF_FLOAT32, SHAPE(100, 17, 3), -1, 1),
                      tt_rand(TF_FLOAT32, SHAPE(100, 500, 3), -1, 1)};
  tf_tensor *want[1] = {0};
  if (tt_numpy("outs = [np.concatenate(ins, axis=1)]", xs, 3, want, 1) == 1) {
    tf_tensor *y = concat(xs, 3, 1);
    assert_same(y, want[0]);
    tf_tensor *y1 = concat_v(false, xs, 3, -2); /* Concat, axis first */
    assert_same(y1, want[0]);
    tt_free((tf_tensor *[]){y, y1, want[0]}, 3);
  }
  tt_free(xs, 3);
}
END_TEST

/* Runs op's kernel on a node whose inputs are Placeholders of unknown
 * shape (values as the list argument starting at input list_at), so the
 * kernel, not shape inference, judges the inputs; returns the message. */
static const char *kernel_fail(const char *op, tf_tensor **in, int n,
                               int list_at, int n_list) {
  static tf_status st;
  tf_graph *g = tf_graph_new();
  tf_output o[8];
  for (int i = 0; i < n; i++) {
    o[i] = (tf_output){
        tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "cat");
  for (int i = 0; i < n;) {
    if (i == list_at) {
      tf_node_add_input_list(b, o + i, n_list);
      i += n_list;
    } else {
      tf_node_add_input(b, o[i++]);
    }
  }
  tf_node *node = tf_node_finish(b, &st);
  ck_assert_msg(node != NULL, "%s", st.msg);
  tf_tensor *out[1] = {NULL};
  ck_assert_int_eq(tf_kernel_run_node(node, NULL, in, out, &st),
                   TF_INVALID_ARGUMENT);
  tf_graph_free(g);
  return st.msg;
}

/* The kernels' own checks (shapes unknown to the graph), for both
 * signatures: mismatched dims and ranks, the axis range, scalars, a
 * non-scalar axis; each names the node and the offending input. */
START_TEST(test_concat_kernel_errors) {
  tf_tensor *a = tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1);
  tf_tensor *c = tt_rand(TF_FLOAT32, SHAPE(4, 5), 0, 1);
  tf_tensor *d = tt_rand(TF_FLOAT32, SHAPE(2, 3, 1), 0, 1);
  tf_tensor *s0 = tf_tensor_scalar_f32(1);
  tf_tensor *ax1 = tf_tensor_scalar_i32(1), *ax_bad = tf_tensor_scalar_i32(2);
  tf_tensor *ax_vec = tf_tensor_vec_i32(1, (int32_t[]){0});
  struct {
    tf_tensor *x0, *x1, *axis;
    const char *want;
  } c_[] = {
      {a, c, ax1, "Dimension 0 in both shapes must be equal: shape[0] = "
                  "[2,3] vs. shape[1] = [4,5]"},
      {a, d, ax1, "Ranks of all input tensors should match: shape[0] = "
                  "[2,3] vs. shape[1] = [2,3,1]"},
      {a, a, ax_bad, "in the range [-2, 2), but got 2"},
      {s0, s0, ax1, "Can't concatenate scalars"},
      {a, a, ax_vec, "must be a scalar, got shape [1]"},
  };
  for (int v2 = 0; v2 < 2; v2++) {
    for (int k = 0; k < 5; k++) {
      tf_tensor *in[3];
      in[v2 ? 0 : 1] = c_[k].x0;
      in[v2 ? 1 : 2] = c_[k].x1;
      in[v2 ? 2 : 0] = c_[k].axis;
      const char *msg = kernel_fail(v2 ? "ConcatV2" : "Concat", in, 3,
                                    v2 ? 0 : 1, 2);
      ck_assert_msg(strstr(msg, c_[k].want) && strstr(msg, "'cat'"),
                    "case %d v2 %d: %s", k, v2, msg);
      if (k == 4) {
        ck_assert_msg(strstr(msg, v2 ? "axis" : "concat_dim"), "%s", msg);
      }
    }
  }
  tt_free((tf_tensor *[]){a, c, d, s0, ax1, ax_bad, ax_vec}, 7);
}
END_TEST

START_TEST(test_concat_errors) {
  tf_tensor *a = tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1);
  tf_tensor *c = tt_rand(TF_FLOAT32, SHAPE(4, 5), 0, 1);
  tf_tensor *ax = tf_tensor_scalar_i32(1);
  tf_tensor *in[4] = {a, b, c, ax};
  const char *msg = tt_run_fail("ConcatV2", in, 4, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Dimension 0 in both shapes must be equal") &&
                    strstr(msg, "shape[2] = [4,5]"),
                "%s", msg);
  tf_tensor *d = tt_rand(TF_FLOAT32, SHAPE(2, 3, 1), 0, 1);
  in[1] = d;
  in[2] = ax;
  msg = tt_run_fail("ConcatV2", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Ranks of all input tensors should match") &&
                    strstr(msg, "shape[1] = [2,3,1]"),
                "%s", msg);
  tf_tensor *ax2 = tf_tensor_scalar_i64(-3);
  in[1] = b;
  in[2] = ax2;
  msg = tt_run_fail("ConcatV2", in, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "in the range [-2, 2), but got -3"), "%s", msg);
  tf_tensor *s0 = tf_tensor_scalar_f32(1), *s1 = tf_tensor_scalar_f32(2);
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  tf_tensor *sc[3] = {s0, s1, zero};
  msg = tt_run_fail("ConcatV2", sc, 3, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Can't concatenate scalars"), "%s", msg);
  tt_free((tf_tensor *[]){a, b, c, d, ax, ax2, s0, s1, zero}, 9);
}
END_TEST

/* ---- Split -------------------------------------------------------------- */

static int split(tf_tensor *x, int64_t axis, int num, tf_tensor **out) {
  tf_tensor *in[2] = {tf_tensor_scalar_i32((int32_t)axis), x};
  tf_attr_kv kv[] = {{"num_split", tf_attr_int(num)}};
  int n = tt_run("Split", in, 2, kv, 1, out, 16);
  tf_tensor_unref(in[0]);
  return n;
}

START_TEST(test_split_random) {
  for (int it = 0; it < 120; it++) {
    tf_dtype dt = dts[it % 6];
    int rank = 1 + (int)(tt_rand_u64() % 4);
    int axis = (int)(tt_rand_u64() % (uint64_t)rank);
    int num = 1 + (int)(tt_rand_u64() % 4);
    tf_shape s = rand_shape(rank);
    s.dims[axis] = num * (int64_t)(tt_rand_u64() % 3);
    tf_tensor *x = rand_tensor(dt, s);
    tf_tensor *out[16];
    ck_assert_int_eq(split(x, (it & 1) ? axis - rank : axis, num, out), num);
    int64_t outer, inner, part = s.dims[axis] / num;
    outer_inner(&s, axis, &outer, &inner);
    bool ok = true;
    for (int i = 0; i < num; i++) {
      ck_assert_int_eq(out[i]->shape.dims[axis], part);
      for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < part * inner; k++) {
          ok = ok && same_elem(out[i], o * part * inner + k, x,
                               (o * s.dims[axis] + i * part) * inner + k);
        }
      }
    }
    ck_assert_msg(ok, "split into %d differs", num);
    if (num == 1) {
      ck_assert_ptr_eq(out[0]->data, x->data);
    }
    tt_free(out, num);
    tf_tensor_unref(x);
  }
}
END_TEST

START_TEST(test_split_numpy_and_errors) {
  tf_tensor *x = tt_rand(TF_INT64, SHAPE(6, 400, 5), -9, 9);
  tf_tensor *want[4] = {0};
  if (tt_numpy("outs = [np.ascontiguousarray(a) for a in "
               "np.split(ins[0], 4, axis=1)]",
               &x, 1, want, 4) == 4) {
    tf_tensor *out[16];
    ck_assert_int_eq(split(x, -2, 4, out), 4);
    for (int i = 0; i < 4; i++) {
      assert_same(out[i], want[i]);
    }
    tt_free(out, 4);
    tt_free(want, 4);
  }
  tf_tensor *in[2] = {tf_tensor_scalar_i32(2), x};
  tf_attr_kv kv[] = {{"num_split", tf_attr_int(3)}};
  const char *msg = tt_run_fail("Split", in, 2, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "evenly divide the split dimension, but got "
                            "split_dim 2 (size = 5) and num_split 3"),
                "%s", msg);
  tf_tensor_unref(in[0]);
  in[0] = tf_tensor_scalar_i32(3);
  msg = tt_run_fail("Split", in, 2, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "split_dim in the range [-3, 3), but got 3"), "%s",
                msg);
  tt_free(in, 2);
}
END_TEST

/* ---- Pack, Unpack ------------------------------------------------------- */

START_TEST(test_pack_unpack_random) {
  for (int it = 0; it < 120; it++) {
    tf_dtype dt = dts[it % 6];
    int rank = (int)(tt_rand_u64() % 4), n = 1 + (int)(tt_rand_u64() % 4);
    int axis = (int)(tt_rand_u64() % (uint64_t)(rank + 1));
    tf_shape s = rand_shape(rank);
    tf_tensor *xs[4];
    for (int i = 0; i < n; i++) {
      xs[i] = rand_tensor(dt, s);
    }
    tf_attr_kv kv[] = {{"axis", tf_attr_int((it & 1) ? axis - rank - 1 : axis)},
                       {"num", tf_attr_int(n)}};
    tf_tensor *y = tt_run1("Pack", xs, n, kv, 1);
    ck_assert_int_eq(y->shape.rank, rank + 1);
    ck_assert_int_eq(y->shape.dims[axis], n);
    int64_t outer, inner;
    outer_inner(&y->shape, axis, &outer, &inner);
    bool ok = true;
    for (int i = 0; i < n; i++) {
      for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < inner; k++) {
          ok = ok && same_elem(y, (o * n + i) * inner + k, xs[i],
                               o * inner + k);
        }
      }
    }
    ck_assert_msg(ok, "pack of %d differs", n);
    tf_tensor *back[16];
    ck_assert_int_eq(tt_run("Unpack", &y, 1, kv, 2, back, 16), n);
    for (int i = 0; i < n; i++) {
      ck_assert(tf_tensor_equal(back[i], xs[i]));
    }
    tt_free(back, n);
    tt_free(xs, n);
    tf_tensor_unref(y);
  }
}
END_TEST

START_TEST(test_pack_numpy) {
  tf_tensor *xs[3] = {tt_rand(TF_FLOAT64, SHAPE(50, 60), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(50, 60), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(50, 60), -1, 1)};
  tf_tensor *want[1] = {0};
  if (tt_numpy("outs = [np.stack(ins, axis=1)]", xs, 3, want, 1) == 1) {
    tf_attr_kv kv[] = {{"axis", tf_attr_int(1)}};
    tf_tensor *y = tt_run1("Pack", xs, 3, kv, 1);
    assert_same(y, want[0]);
    tt_free((tf_tensor *[]){y, want[0]}, 2);
  }
  tt_free(xs, 3);
}
END_TEST

START_TEST(test_pack_unpack_errors) {
  tf_tensor *xs[2] = {tt_rand(TF_FLOAT32, SHAPE(2, 3), 0, 1),
                      tt_rand(TF_FLOAT32, SHAPE(3, 2), 0, 1)};
  const char *msg = tt_run_fail("Pack", xs, 2, NULL, 0, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Shapes of all inputs must match: "
                            "values[0].shape = [2,3] != values[1].shape = "
                            "[3,2]"),
                "%s", msg);
  tf_attr_kv kv[] = {{"axis", tf_attr_int(3)}, {"num", tf_attr_int(2)}};
  msg = tt_run_fail("Pack", xs, 1, kv, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "axis in the range [-3, 3), but got 3"), "%s",
                msg);
  kv[0].value = tf_attr_int(1);
  msg = tt_run_fail("Unpack", xs, 1, kv, 2, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "Input shape axis 1 must equal 2, got shape "
                            "[2,3]"),
                "%s", msg);
  tt_free(xs, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_concat");
  TCase *tc = tcase_create("concat");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_concat_random);
  tcase_add_test(tc, test_concat_large_numpy);
  tcase_add_test(tc, test_concat_errors);
  tcase_add_test(tc, test_concat_kernel_errors);
  tcase_add_test(tc, test_split_random);
  tcase_add_test(tc, test_split_numpy_and_errors);
  tcase_add_test(tc, test_pack_unpack_random);
  tcase_add_test(tc, test_pack_numpy);
  tcase_add_test(tc, test_pack_unpack_errors);
  suite_add_tcase(s, tc);
  return s;
}
