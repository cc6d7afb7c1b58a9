/* cpu_array_index_partition_test.c: the CPU kernels of
 * lib/devices/cpu/cpu_array_index_partition.c (DynamicPartition,
 * DynamicStitch, Where) against plain reference loops written here, on
 * every dtype the kernels move and on the edges of their own code:
 *
 *  - DynamicPartition: row sizes of 1..40 bytes (the 4- and 8-byte single
 *    moves and plain memcpy), strings, everything in one partition, one
 *    partition, scalar partitions, rows of zero elements, bad ids named by
 *    position, and a large input;
 *  - DynamicStitch: duplicates inside one index tensor and across tensors
 *    (the last one wins), rows nobody names (zero, ""), scalar and empty
 *    index tensors mixed, and the kernel's own shape checks reached with
 *    shapes unknown to graph construction;
 *  - Where: inputs of 64Ki +- 1 elements (its block size), an input of
 *    more than 256 blocks (the block count is capped and blocks grow),
 *    block edges inside a row of a 2-D input, the same output on pools of
 *    1, 2, 3 and 5 threads and inline, and which values count as zero
 *    (-0.0, NaN, 16-bit float patterns, complex parts).
 * Only data movement and comparisons: results must match exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/device.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tf_dtype k_all[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32,  TF_UINT8,    TF_INT16,
    TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64, TF_BOOL,
    TF_BFLOAT16, TF_UINT16, TF_FLOAT16, TF_UINT32,  TF_UINT64};

/* A tensor of random bytes (bool 0/1; strings of 0..5 random letters). */
static tf_tensor *rand_tensor(tf_dtype dt, tf_shape s) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &s, &t, &st) == TF_OK, "%s", st.msg);
  size_t es = tf_dtype_size(dt);
  for (int64_t i = 0; i < t->n; i++) {
    if (dt == TF_STRING) {
      char buf[5];
      size_t len = tt_rand_u64() % 6;
      for (size_t k = 0; k < len; k++) {
        buf[k] = (char)('a' + tt_rand_u64() % 26);
      }
      ck_assert(tf_tensor_set_string(t, i, buf, len, &st) == TF_OK);
    } else if (dt == TF_BOOL) {
      ((bool *)t->data)[i] = tt_rand_u64() & 1;
    } else {
      uint64_t r = tt_rand_u64();
      memcpy((char *)t->data + (size_t)i * es, &r, es);
    }
  }
  return t;
}

static tf_tensor *new_tensor(tf_dtype dt, tf_shape s) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &s, &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

/* Copies element j of src to element i of dst (strings deep). */
static void put(tf_tensor *dst, int64_t i, const tf_tensor *src, int64_t j) {
  if (src->dtype == TF_STRING) {
    const tf_string *s = &tf_tensor_strings(src)[j];
    tf_status st;
    ck_assert(tf_tensor_set_string(dst, i, s->data, s->len, &st) == TF_OK);
    return;
  }
  size_t es = tf_dtype_size(src->dtype);
  memcpy((char *)dst->data + (size_t)i * es,
         (const char *)src->data + (size_t)j * es, es);
}

/* Same dtype, shape and bytes (string contents for strings); names the
 * first differing element. */
static void assert_same(const tf_tensor *got, const tf_tensor *want,
                        const char *what) {
  char a[128], b[128];
  ck_assert_msg(got->dtype == want->dtype &&
                    tf_shape_equal(&got->shape, &want->shape),
                "%s: got %s %s, want %s %s", what, tf_dtype_name(got->dtype),
                tf_shape_str(&got->shape, a, sizeof a),
                tf_dtype_name(want->dtype),
                tf_shape_str(&want->shape, b, sizeof b));
  size_t es = tf_dtype_size(got->dtype);
  for (int64_t i = 0; i < got->n; i++) {
    bool same;
    if (got->dtype == TF_STRING) {
      const tf_string *g = &tf_tensor_strings(got)[i];
      const tf_string *w = &tf_tensor_strings(want)[i];
      same = g->len == w->len && (g->len == 0 || !memcmp(g->data, w->data, g->len));
    } else {
      same = !memcmp((const char *)got->data + (size_t)i * es,
                     (const char *)want->data + (size_t)i * es, es);
    }
    if (!same) {
      ck_abort_msg("%s: %s element %lld differs (seed %llu)", what,
                   tf_dtype_name(got->dtype), (long long)i,
                   (unsigned long long)tt_seed());
    }
  }
}

static void assert_has(const char *msg, const char *needle) {
  ck_assert_msg(strstr(msg, needle) != NULL, "'%s' lacks '%s'", msg, needle);
}

/* Builds op on Placeholders of unknown shape (so only the kernel judges
 * shapes) and runs its kernel on pool (NULL: inline). When n_list > 0 the
 * inputs are two lists of n_list (DynamicStitch). */
static tf_code run_kernel(const char *op, tf_tensor **in, int n_in, int n_list,
                          const tf_attr_kv *at, int n_at, tf_threadpool *pool,
                          tf_tensor **out, tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_output o[64];
  ck_assert(n_in <= 64);
  for (int i = 0; i < n_in; i++) {
    o[i] = (tf_output){tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "k");
  if (n_list > 0) {
    tf_node_add_input_list(b, o, n_list);
    tf_node_add_input_list(b, o + n_list, n_list);
  } else {
    for (int i = 0; i < n_in; i++) {
      tf_node_add_input(b, o[i]);
    }
  }
  for (int i = 0; i < n_at; i++) {
    tf_node_set_attr(b, at[i].name, at[i].value);
  }
  tf_node *n = tf_node_finish(b, st);
  ck_assert_msg(n != NULL, "%s: %s", op, st->msg);
  tf_device dev = *tf_cpu_device();
  dev.pool = pool;
  tf_status_init(st);
  tf_code c = tf_kernel_run_node(n, &dev, in, out, st);
  tf_graph_free(g);
  return c;
}

/* ---- DynamicPartition -------------------------------------------------------- */

/* Reference: rows of partition k in input order. */
static void ref_partition(const tf_tensor *data, const tf_tensor *part, int np,
                          tf_tensor **out) {
  const int32_t *p = part->data;
  int prank = part->shape.rank;
  int64_t inner = 1;
  for (int d = prank; d < data->shape.rank; d++) {
    inner *= data->shape.dims[d];
  }
  for (int k = 0; k < np; k++) {
    int64_t rows = 0;
    for (int64_t i = 0; i < part->n; i++) {
      rows += p[i] == k;
    }
    tf_shape s = {.rank = data->shape.rank - prank + 1};
    s.dims[0] = rows;
    for (int d = prank; d < data->shape.rank; d++) {
      s.dims[d - prank + 1] = data->shape.dims[d];
    }
    out[k] = new_tensor(data->dtype, s);
    int64_t r = 0;
    for (int64_t i = 0; i < part->n; i++) {
      if (p[i] != k) {
        continue;
      }
      for (int64_t e = 0; e < inner; e++) {
        put(out[k], r * inner + e, data, i * inner + e);
      }
      r++;
    }
  }
}

static void check_partition(tf_tensor *data, tf_tensor *part, int np,
                            const char *what) {
  tf_attr_kv at[1] = {{"num_partitions", tf_attr_int(np)}};
  tf_tensor *got[16], *want[16];
  ck_assert(np <= 16);
  int n = tt_run("DynamicPartition", (tf_tensor *[]){data, part}, 2, at, 1,
                 got, np);
  ck_assert_int_eq(n, np);
  ref_partition(data, part, np, want);
  for (int k = 0; k < np; k++) {
    char w[160];
    snprintf(w, sizeof w, "%s, %s, partition %d", what,
             tf_dtype_name(data->dtype), k);
    assert_same(got[k], want[k], w);
  }
  tt_free(got, np);
  tt_free(want, np);
}

static tf_tensor *rand_ids(tf_shape s, int lo, int hi) {
  return tt_rand(TF_INT32, s, lo, hi);
}

/* Every dtype, with rows of 1, 2, 3 and 5 elements (1..40 bytes) under
 * vector and matrix partitions. */
START_TEST(test_partition_every_dtype_and_row_size) {
  static const int64_t inner[] = {1, 2, 3, 5};
  for (int k = 0; k < NELEM(k_all); k++) {
    for (int r = 0; r < NELEM(inner); r++) {
      int np = 1 + (int)(tt_rand_u64() % 5);
      tf_tensor *d1 = rand_tensor(k_all[k], SHAPE(37, inner[r]));
      tf_tensor *p1 = rand_ids(SHAPE(37), 0, np - 1);
      check_partition(d1, p1, np, "vector partitions");
      tf_tensor *d2 = rand_tensor(k_all[k], SHAPE(4, 5, inner[r]));
      tf_tensor *p2 = rand_ids(SHAPE(4, 5), 0, np - 1);
      check_partition(d2, p2, np, "matrix partitions");
      tt_free((tf_tensor *[]){d1, p1, d2, p2}, 4);
    }
  }
}
END_TEST

START_TEST(test_partition_edges) {
  /* Everything in the last partition: it is the data, the others empty
   * with the data's trailing dims. */
  tf_tensor *d = rand_tensor(TF_FLOAT32, SHAPE(6, 2, 3));
  tf_tensor *p = tt_tensor_i(TF_INT32, SHAPE(6), (int64_t[]){3, 3, 3, 3, 3, 3});
  check_partition(d, p, 4, "all in one");
  tf_attr_kv at4[1] = {{"num_partitions", tf_attr_int(4)}};
  tf_tensor *out[4];
  tt_run("DynamicPartition", (tf_tensor *[]){d, p}, 2, at4, 1, out, 4);
  tt_assert_shape(out[0], 3, (int64_t)0, (int64_t)2, (int64_t)3);
  ck_assert(memcmp(out[3]->data, d->data, d->nbytes) == 0);
  tt_free(out, 4);
  tt_free((tf_tensor *[]){d, p}, 2);
  /* One partition. */
  d = rand_tensor(TF_INT64, SHAPE(9));
  p = tt_tensor_i(TF_INT32, SHAPE(9), (int64_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0});
  check_partition(d, p, 1, "one partition");
  tt_free((tf_tensor *[]){d, p}, 2);
  /* Scalar partitions: the whole data is one row. */
  d = rand_tensor(TF_INT16, SHAPE(2, 3));
  p = tt_tensor_i(TF_INT32, tf_shape_scalar(), (int64_t[]){1});
  check_partition(d, p, 3, "scalar partitions");
  tf_attr_kv at3[1] = {{"num_partitions", tf_attr_int(3)}};
  tt_run("DynamicPartition", (tf_tensor *[]){d, p}, 2, at3, 1, out, 3);
  tt_assert_shape(out[1], 3, (int64_t)1, (int64_t)2, (int64_t)3);
  tt_assert_shape(out[2], 3, (int64_t)0, (int64_t)2, (int64_t)3);
  tt_free(out, 3);
  tt_free((tf_tensor *[]){d, p}, 2);
  /* Partitions as big as the data: rows of one element, rank-1 outputs. */
  d = rand_tensor(TF_UINT8, SHAPE(3, 4));
  p = rand_ids(SHAPE(3, 4), 0, 2);
  check_partition(d, p, 3, "element-wise");
  tt_free((tf_tensor *[]){d, p}, 2);
  /* Rows of zero elements still count per partition. */
  d = rand_tensor(TF_FLOAT64, SHAPE(5, 0));
  p = tt_tensor_i(TF_INT32, SHAPE(5), (int64_t[]){1, 0, 1, 1, 0});
  tt_run("DynamicPartition", (tf_tensor *[]){d, p}, 2,
         (tf_attr_kv[]){{"num_partitions", tf_attr_int(2)}}, 1, out, 2);
  tt_assert_shape(out[0], 2, (int64_t)2, (int64_t)0);
  tt_assert_shape(out[1], 2, (int64_t)3, (int64_t)0);
  tt_free(out, 2);
  tt_free((tf_tensor *[]){d, p}, 2);
}
END_TEST

START_TEST(test_partition_errors) {
  tf_attr_kv at[1] = {{"num_partitions", tf_attr_int(2)}};
  tf_tensor *d = rand_tensor(TF_FLOAT32, SHAPE(2, 2));
  tf_tensor *p = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){0, 1, INT32_MIN, 0});
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){d, p}, 2, at, 1,
                         TF_INVALID_ARGUMENT),
             "partitions[1,0] = -2147483648 is not in [0, 2)");
  tf_tensor *p2 = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){0, 1, 1, 2});
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){d, p2}, 2, at, 1,
                         TF_INVALID_ARGUMENT),
             "partitions[1,1] = 2 is not in [0, 2)");
  tf_tensor *ps = tt_tensor_i(TF_INT32, tf_shape_scalar(), (int64_t[]){-1});
  assert_has(tt_run_fail("DynamicPartition", (tf_tensor *[]){d, ps}, 2, at, 1,
                         TF_INVALID_ARGUMENT),
             "partitions = -1 is not in [0, 2)");
  /* Shapes unknown to graph construction: the kernel checks them. */
  tf_tensor *p3 = tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){0, 1, 0});
  tf_tensor *out[2] = {0};
  tf_status st;
  ck_assert_int_eq(run_kernel("DynamicPartition", (tf_tensor *[]){d, p3}, 2, 0,
                              at, 1, NULL, out, &st),
                   TF_INVALID_ARGUMENT);
  assert_has(st.msg, "data.shape must start with partitions.shape, got "
                     "data.shape = [2,2], partitions.shape = [3]");
  ck_assert(out[0] == NULL && out[1] == NULL);
  tt_free((tf_tensor *[]){d, p, p2, ps, p3}, 5);
}
END_TEST

START_TEST(test_partition_large) {
  tf_tensor *d = rand_tensor(TF_FLOAT32, SHAPE(200000, 3));
  tf_tensor *p = rand_ids(SHAPE(200000), 0, 15);
  check_partition(d, p, 16, "large");
  tt_free((tf_tensor *[]){d, p}, 2);
}
END_TEST

/* ---- DynamicStitch ------------------------------------------------------------ */

/* Reference: zero (or "") rows, then every slice written in order, so the
 * last write of an index wins. */
static tf_tensor *ref_stitch(tf_tensor **ix, tf_tensor **data, int n) {
  int64_t max = -1;
  for (int i = 0; i < n; i++) {
    for (int64_t k = 0; k < ix[i]->n; k++) {
      int64_t v = ((int32_t *)ix[i]->data)[k];
      max = v > max ? v : max;
    }
  }
  tf_shape s = {.rank = data[0]->shape.rank - ix[0]->shape.rank + 1};
  s.dims[0] = max + 1;
  int64_t inner = 1;
  for (int d = 1; d < s.rank; d++) {
    s.dims[d] = data[0]->shape.dims[ix[0]->shape.rank + d - 1];
    inner *= s.dims[d];
  }
  tf_tensor *out = new_tensor(data[0]->dtype, s);
  if (out->dtype != TF_STRING) {
    memset(out->data, 0, out->nbytes);
  }
  for (int i = 0; i < n; i++) {
    for (int64_t k = 0; k < ix[i]->n; k++) {
      int64_t row = ((int32_t *)ix[i]->data)[k];
      for (int64_t e = 0; e < inner; e++) {
        put(out, row * inner + e, data[i], k * inner + e);
      }
    }
  }
  return out;
}

static tf_tensor *stitch(tf_tensor **ix, tf_tensor **data, int n) {
  tf_tensor *in[32];
  ck_assert(n <= 16);
  for (int i = 0; i < n; i++) {
    in[i] = ix[i];
    in[n + i] = data[i];
  }
  tf_attr_kv at[1] = {{"N", tf_attr_int(n)}};
  return tt_run1("DynamicStitch", in, 2 * n, at, 1);
}

/* Three index tensors (a vector, a matrix, a scalar) drawing from fewer
 * rows than slices, so indices repeat within and across tensors, and leave
 * some rows unnamed; every dtype, trailing dims [2] and [3, 1]. */
START_TEST(test_stitch_every_dtype_with_duplicates) {
  for (int k = 0; k < NELEM(k_all); k++) {
    for (int t = 0; t < 2; t++) {
      tf_shape is[3] = {SHAPE(7), SHAPE(2, 3), tf_shape_scalar()};
      tf_tensor *ix[3], *d[3];
      for (int i = 0; i < 3; i++) {
        ix[i] = rand_ids(is[i], 0, 11); /* 14 slices into 12 rows */
        tf_shape ds = is[i];
        ds.dims[ds.rank++] = t ? 3 : 2;
        if (t) {
          ds.dims[ds.rank++] = 1;
        }
        d[i] = rand_tensor(k_all[k], ds);
      }
      tf_tensor *got = stitch(ix, d, 3), *want = ref_stitch(ix, d, 3);
      assert_same(got, want, "stitch");
      tt_free((tf_tensor *[]){got, want}, 2);
      tt_free(ix, 3);
      tt_free(d, 3);
    }
  }
}
END_TEST

START_TEST(test_stitch_hand_cases) {
  /* Inside one index tensor the later position wins. */
  tf_tensor *ix[3] = {tt_tensor_i(TF_INT32, SHAPE(3), (int64_t[]){1, 1, 1})};
  tf_tensor *d[3] = {tt_tensor(TF_FLOAT32, SHAPE(3), (double[]){10, 20, 30})};
  tf_tensor *o = stitch(ix, d, 1);
  tf_tensor *w = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){0, 30});
  assert_same(o, w, "one tensor");
  tt_free((tf_tensor *[]){o, w, ix[0], d[0]}, 4);
  /* A scalar index, an empty index tensor and a vector together; rows 1
   * and 2 are named by nobody. */
  ix[0] = tt_tensor_i(TF_INT32, tf_shape_scalar(), (int64_t[]){3});
  ix[1] = tt_tensor_i(TF_INT32, SHAPE(0), NULL);
  ix[2] = tt_tensor_i(TF_INT32, SHAPE(1), (int64_t[]){0});
  d[0] = tt_tensor_i(TF_INT8, SHAPE(2), (int64_t[]){-1, -2});
  d[1] = tt_tensor_i(TF_INT8, SHAPE(0, 2), NULL);
  d[2] = tt_tensor_i(TF_INT8, SHAPE(1, 2), (int64_t[]){5, 6});
  o = stitch(ix, d, 3);
  w = tt_tensor_i(TF_INT8, SHAPE(4, 2), (int64_t[]){5, 6, 0, 0, 0, 0, -1, -2});
  assert_same(o, w, "scalar, empty and vector");
  tt_free((tf_tensor *[]){o, w}, 2);
  tt_free(ix, 3);
  tt_free(d, 3);
  /* Every index the same, across tensors: the last tensor's last slice. */
  ix[0] = tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){2, 2});
  ix[1] = tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){2, 2});
  d[0] = tt_tensor_i(TF_UINT16, SHAPE(2), (int64_t[]){1, 2});
  d[1] = tt_tensor_i(TF_UINT16, SHAPE(2), (int64_t[]){65535, 4});
  o = stitch(ix, d, 2);
  w = tt_tensor_i(TF_UINT16, SHAPE(3), (int64_t[]){0, 0, 4});
  assert_same(o, w, "all the same");
  tt_free((tf_tensor *[]){o, w}, 2);
  tt_free(ix, 2);
  tt_free(d, 2);
}
END_TEST

START_TEST(test_stitch_kernel_shape_checks) {
  tf_tensor *out[1] = {NULL};
  tf_status st;
  /* Trailing dims differ between data tensors. */
  tf_tensor *in[4] = {tt_tensor_i(TF_INT32, SHAPE(2), (int64_t[]){0, 1}),
                      tt_tensor_i(TF_INT32, SHAPE(1), (int64_t[]){2}),
                      rand_tensor(TF_FLOAT32, SHAPE(2, 3)),
                      rand_tensor(TF_FLOAT32, SHAPE(1, 4))};
  ck_assert_int_eq(run_kernel("DynamicStitch", in, 4, 2, NULL, 0, NULL, out, &st),
                   TF_INVALID_ARGUMENT);
  assert_has(st.msg, "Need data[0].shape[1:] = data[1].shape[1:], got "
                     "data[0].shape = [2,3], data[1].shape = [1,4], "
                     "indices[0].shape = [2], indices[1].shape = [1]");
  ck_assert_ptr_null(out[0]);
  /* Data not starting with its indices' shape. */
  tf_tensor_unref(in[3]);
  in[3] = rand_tensor(TF_FLOAT32, SHAPE(2, 3));
  ck_assert_int_eq(run_kernel("DynamicStitch", in, 4, 2, NULL, 0, NULL, out, &st),
                   TF_INVALID_ARGUMENT);
  assert_has(st.msg, "data[1].shape = [2,3] does not start with "
                     "indices[1].shape = [1]");
  /* Negative indices, named by tensor and position. */
  tf_tensor_unref(in[1]);
  tf_tensor_unref(in[3]);
  in[1] = tt_tensor_i(TF_INT32, SHAPE(2, 2), (int64_t[]){0, 1, INT32_MIN, 3});
  in[3] = rand_tensor(TF_FLOAT32, SHAPE(2, 2, 3));
  ck_assert_int_eq(run_kernel("DynamicStitch", in, 4, 2, NULL, 0, NULL, out, &st),
                   TF_INVALID_ARGUMENT);
  assert_has(st.msg, "indices[1][1,0] = -2147483648 is negative");
  tt_free(in, 4);
  /* Scalar indices with rank-8 data: the output would have rank 9. */
  tf_tensor *r8[2] = {tt_tensor_i(TF_INT32, tf_shape_scalar(), (int64_t[]){0}),
                      rand_tensor(TF_INT8, SHAPE(1, 1, 1, 1, 1, 1, 1, 1))};
  ck_assert_int_eq(run_kernel("DynamicStitch", r8, 2, 1, NULL, 0, NULL, out, &st),
                   TF_INVALID_ARGUMENT);
  assert_has(st.msg, "output rank 9 exceeds the maximum 8");
  tt_free(r8, 2);
}
END_TEST

START_TEST(test_stitch_large) {
  enum { N = 4 };
  tf_tensor *ix[N], *d[N];
  for (int i = 0; i < N; i++) {
    ix[i] = rand_ids(SHAPE(50000), 0, 150000);
    d[i] = rand_tensor(TF_INT64, SHAPE(50000, 2));
  }
  tf_tensor *got = stitch(ix, d, N), *want = ref_stitch(ix, d, N);
  assert_same(got, want, "large");
  tt_free((tf_tensor *[]){got, want}, 2);
  tt_free(ix, N);
  tt_free(d, N);
}
END_TEST

/* ---- Where ------------------------------------------------------------------- */

/* Whether element i is non-zero, read from its bytes. */
static bool ref_nonzero(const tf_tensor *x, int64_t i) {
  const char *p = (const char *)x->data + (size_t)i * tf_dtype_size(x->dtype);
  switch (x->dtype) {
  case TF_FLOAT32: return *(const float *)p != 0 || isnan(*(const float *)p);
  case TF_FLOAT64: return *(const double *)p != 0 || isnan(*(const double *)p);
  case TF_FLOAT16:
  case TF_BFLOAT16: return (*(const uint16_t *)p & 0x7fff) != 0;
  case TF_COMPLEX64: {
    const tf_complex64 *c = (const tf_complex64 *)p;
    return c->re != 0 || c->im != 0 || isnan(c->re) || isnan(c->im);
  }
  default:
    for (size_t k = 0; k < tf_dtype_size(x->dtype); k++) {
      if (p[k] != 0) {
        return true;
      }
    }
    return false;
  }
}

static tf_tensor *ref_where(const tf_tensor *x) {
  int r = x->shape.rank;
  int64_t cnt = 0;
  for (int64_t i = 0; i < x->n; i++) {
    cnt += ref_nonzero(x, i);
  }
  tf_tensor *t = new_tensor(TF_INT64, SHAPE(cnt, (int64_t)r));
  int64_t *o = t->data;
  for (int64_t i = 0; i < x->n; i++) {
    if (!ref_nonzero(x, i)) {
      continue;
    }
    int64_t rem = i;
    for (int k = r - 1; k >= 0; k--) {
      o[k] = rem % x->shape.dims[k];
      rem /= x->shape.dims[k];
    }
    o += r;
  }
  return t;
}

static tf_tensor *where(tf_tensor *x) {
  return tt_run1("Where", (tf_tensor *[]){x}, 1, NULL, 0);
}

static tf_tensor *sparse_bool(tf_shape s, const int64_t *at, int n_at) {
  tf_tensor *x = new_tensor(TF_BOOL, s);
  memset(x->data, 0, x->nbytes);
  for (int i = 0; i < n_at; i++) {
    ((bool *)x->data)[at[i]] = true;
  }
  return x;
}

/* 1-D inputs around the 65536-element block: trues on both sides of each
 * block edge, first and last. */
START_TEST(test_where_block_edges) {
  static const int64_t lens[] = {65535, 65536, 65537, 131071, 131073, 196609};
  for (int k = 0; k < NELEM(lens); k++) {
    int64_t n = lens[k];
    int64_t nb = (n + 65535) / 65536, block = (n + nb - 1) / nb;
    int64_t at[16];
    int na = 0;
    at[na++] = 0;
    at[na++] = n - 1;
    for (int64_t b = block; b < n && na < 14; b += block) {
      at[na++] = b - 1;
      at[na++] = b;
    }
    tf_tensor *x = sparse_bool(SHAPE(n), at, na);
    tf_tensor *got = where(x), *want = ref_where(x);
    assert_same(got, want, "block edges");
    tt_free((tf_tensor *[]){x, got, want}, 3);
  }
}
END_TEST

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* More than 256 blocks' worth: the block count stays 256 and each block
 * grows to 65537 elements. A 2-D shape puts the block edges inside rows,
 * so each block starts its coordinates mid-row. */
START_TEST(test_where_capped_block_count) {
  int64_t rows = 4, cols = 4194305; /* 16777220 = 256 * 65536 + 4 */
  int64_t n = rows * cols, block = (n + 255) / 256;
  ck_assert_int_eq(block, 65537);
  int64_t at[40];
  int na = 0;
  for (int64_t b = block; b < n && na < 36; b += 37 * block) {
    at[na++] = b - 1;
    at[na++] = b;
  }
  at[na++] = 0;
  at[na++] = cols - 1;
  at[na++] = cols;
  at[na++] = n - 1;
  tf_tensor *x = sparse_bool(SHAPE(rows, cols), at, na);
  tf_tensor *got = where(x);
  /* Reference straight from the positions (sorted; all distinct). */
  qsort(at, (size_t)na, sizeof at[0], cmp_i64);
  tf_tensor *want = new_tensor(TF_INT64, SHAPE((int64_t)na, (int64_t)2));
  for (int i = 0; i < na; i++) {
    ((int64_t *)want->data)[2 * i] = at[i] / cols;
    ((int64_t *)want->data)[2 * i + 1] = at[i] % cols;
  }
  assert_same(got, want, "capped blocks");
  tt_free((tf_tensor *[]){x, got, want}, 3);
}
END_TEST

/* Blocks are fixed by the input size, not the thread count: pools of 1, 2,
 * 3 and 5 threads and no pool give the same output. */
START_TEST(test_where_thread_count_independent) {
  tf_tensor *x = tt_rand(TF_INT16, SHAPE(3, 70001, 2), -1, 1);
  tf_tensor *want = ref_where(x);
  tf_threadpool *pools[5] = {NULL, tf_threadpool_new(1), tf_threadpool_new(2),
                             tf_threadpool_new(3), tf_threadpool_new(5)};
  for (int k = 0; k < 5; k++) {
    tf_tensor *out[1] = {NULL};
    tf_status st;
    ck_assert_msg(run_kernel("Where", &x, 1, 0, NULL, 0, pools[k], out, &st) ==
                      TF_OK, "%s", st.msg);
    char what[32];
    snprintf(what, sizeof what, "pool %d", k);
    assert_same(out[0], want, what);
    tf_tensor_unref(out[0]);
    tf_threadpool_free(pools[k]);
  }
  tt_free((tf_tensor *[]){x, want}, 2);
}
END_TEST

/* Which values count as zero, by dtype. */
START_TEST(test_where_zero_semantics) {
  tf_tensor *f = tt_tensor(TF_FLOAT64, SHAPE(5), (double[]){-0.0, 0, NAN, -INFINITY, 5e-324});
  tf_tensor *o = where(f);
  tf_tensor *w = tt_tensor_i(TF_INT64, SHAPE(3, 1), (int64_t[]){2, 3, 4});
  assert_same(o, w, "float64");
  tt_free((tf_tensor *[]){f, o, w}, 3);
  static const uint16_t halfbits[] = {0x8000, 0x0000, 0x0001, 0x7e00, 0xfc00, 0x8001};
  tf_dtype hd[2] = {TF_FLOAT16, TF_BFLOAT16};
  for (int k = 0; k < 2; k++) {
    tf_tensor *h = new_tensor(hd[k], SHAPE(6));
    memcpy(h->data, halfbits, sizeof halfbits);
    o = where(h);
    w = tt_tensor_i(TF_INT64, SHAPE(4, 1), (int64_t[]){2, 3, 4, 5});
    assert_same(o, w, tf_dtype_name(hd[k]));
    tt_free((tf_tensor *[]){h, o, w}, 3);
  }
  tf_tensor *c = new_tensor(TF_COMPLEX64, SHAPE(4));
  tf_complex64 cv[4] = {{-0.0f, 0.0f}, {0.0f, -0.0f}, {0.0f, NAN}, {1e-45f, 0}};
  memcpy(c->data, cv, sizeof cv);
  o = where(c);
  w = tt_tensor_i(TF_INT64, SHAPE(2, 1), (int64_t[]){2, 3});
  assert_same(o, w, "complex64");
  tt_free((tf_tensor *[]){c, o, w}, 3);
  /* Integers whose only set bit is the top one. */
  tf_tensor *u = tt_tensor_i(TF_UINT64, SHAPE(2), (int64_t[]){INT64_MIN, 0});
  tf_tensor *i8 = tt_tensor_i(TF_INT8, SHAPE(2), (int64_t[]){0, -128});
  o = where(u);
  w = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){0});
  assert_same(o, w, "uint64");
  tt_free((tf_tensor *[]){o, w}, 2);
  o = where(i8);
  w = tt_tensor_i(TF_INT64, SHAPE(1, 1), (int64_t[]){1});
  assert_same(o, w, "int8");
  tt_free((tf_tensor *[]){o, w, u, i8}, 4);
  /* Every dtype the kernel takes, random bytes, against the reference. */
  for (int k = 0; k < NELEM(k_all); k++) {
    if (k_all[k] == TF_STRING) {
      continue;
    }
    tf_tensor *x = rand_tensor(k_all[k], SHAPE(5, 7));
    for (int64_t i = 0; i < x->n; i += 2) { /* half of them zero */
      memset((char *)x->data + (size_t)i * tf_dtype_size(x->dtype), 0,
             tf_dtype_size(x->dtype));
    }
    o = where(x);
    w = ref_where(x);
    assert_same(o, w, tf_dtype_name(k_all[k]));
    tt_free((tf_tensor *[]){x, o, w}, 3);
  }
}
END_TEST

START_TEST(test_where_all_or_nothing) {
  int64_t n = 70000;
  tf_tensor *t = new_tensor(TF_UINT8, SHAPE(n));
  memset(t->data, 7, t->nbytes);
  tf_tensor *o = where(t);
  tt_assert_shape(o, 2, n, (int64_t)1);
  const int64_t *v = o->data;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] != i) {
      ck_abort_msg("row %lld holds %lld", (long long)i, (long long)v[i]);
    }
  }
  tf_tensor_unref(o);
  memset(t->data, 0, t->nbytes);
  o = where(t);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)1);
  tt_free((tf_tensor *[]){t, o}, 2);
  tf_tensor *e = new_tensor(TF_FLOAT32, SHAPE(3, 0, 2));
  o = where(e);
  tt_assert_shape(o, 2, (int64_t)0, (int64_t)3);
  tt_free((tf_tensor *[]){e, o}, 2);
  /* A string input is refused when the node is built. */
  tf_tensor *s = rand_tensor(TF_STRING, SHAPE(2));
  assert_has(tt_run_fail("Where", &s, 1, NULL, 0, TF_INVALID_ARGUMENT), "string");
  tf_tensor_unref(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_array_index_partition");
  TCase *tp = tcase_create("partition");
  tcase_add_test(tp, test_partition_every_dtype_and_row_size);
  tcase_add_test(tp, test_partition_edges);
  tcase_add_test(tp, test_partition_errors);
  tcase_add_test(tp, test_partition_large);
  suite_add_tcase(s, tp);
  TCase *ts = tcase_create("stitch");
  tcase_add_test(ts, test_stitch_every_dtype_with_duplicates);
  tcase_add_test(ts, test_stitch_hand_cases);
  tcase_add_test(ts, test_stitch_kernel_shape_checks);
  tcase_add_test(ts, test_stitch_large);
  suite_add_tcase(s, ts);
  TCase *tw = tcase_create("where");
  tcase_add_test(tw, test_where_block_edges);
  tcase_add_test(tw, test_where_capped_block_count);
  tcase_add_test(tw, test_where_thread_count_independent);
  tcase_add_test(tw, test_where_zero_semantics);
  tcase_add_test(tw, test_where_all_or_nothing);
  suite_add_tcase(s, tw);
  return s;
}
