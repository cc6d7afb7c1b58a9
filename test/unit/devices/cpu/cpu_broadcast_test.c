/* cpu_broadcast_test.c: the broadcast walker of cpu_broadcast.h: output
 * shapes and errors, how shapes collapse (the fast-path layouts kernels
 * rely on), and, on random shapes of rank 0..6 with 1..4 operands, that the
 * blocks cover every output element once, in order, at operand offsets
 * recomputed here from first principles. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/threadpool.h"
#include "lib/devices/cpu/cpu_broadcast.h"
#include "test/unit/testutil.h"

/* SHAPE(2, 3) is [2, 3] (int64_t dims; plain ints through tf_shape_of's
 * varargs would be undefined behaviour). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()

static tf_bcast init_ok(int n, const tf_shape *s) {
  const tf_shape *p[TF_BCAST_MAX_IN];
  for (int k = 0; k < n; k++) {
    p[k] = &s[k];
  }
  tf_bcast bc;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_bcast_init(&bc, n, p, &st) == TF_OK, "%s", st.msg);
  return bc;
}


START_TEST(test_output_shapes) {
  struct {
    tf_shape a, b, want;
  } cases[] = {
      {SCALAR, SCALAR, SCALAR},
      {SHAPE(5), SCALAR, SHAPE(5)},
      {SHAPE(2, 3), SHAPE(3), SHAPE(2, 3)},
      {SHAPE(2, 1, 4), SHAPE(3, 1), SHAPE(2, 3, 4)},
      {SHAPE(4, 1), SHAPE(1, 5), SHAPE(4, 5)},
      {SHAPE(3, 0, 2), SHAPE(2), SHAPE(3, 0, 2)},
      {SHAPE(3, 1, 2), SHAPE(0, 1), SHAPE(3, 0, 2)},
      {SHAPE(1), SHAPE(0), SHAPE(0)},
      {SHAPE(1, 1, 1), SCALAR, SHAPE(1, 1, 1)},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    tf_shape s[2] = {cases[i].a, cases[i].b};
    tf_bcast bc = init_ok(2, s);
    char g[64], w[64];
    ck_assert_msg(tf_shape_equal(&bc.out, &cases[i].want), "case %zu: %s, want %s",
                  i, tf_shape_str(&bc.out, g, sizeof(g)),
                  tf_shape_str(&cases[i].want, w, sizeof(w)));
    ck_assert_int_eq(bc.n, tf_shape_num_elements(&cases[i].want));
  }
}
END_TEST

START_TEST(test_errors) {
  tf_bcast bc;
  tf_status st;
  tf_shape a = SHAPE(2, 3), b = SHAPE(4), c = SHAPE(3);
  const tf_shape *p[3] = {&a, &b};
  ck_assert_int_eq(tf_bcast_init(&bc, 2, p, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "Incompatible shapes") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "[2,3]") && strstr(st.msg, "[4]"), "%s", st.msg);
  /* 0 against 2 is a conflict too (only 1 stretches). */
  tf_shape z = SHAPE(0), t = SHAPE(2);
  const tf_shape *q[2] = {&z, &t};
  ck_assert_int_eq(tf_bcast_init(&bc, 2, q, &st), TF_INVALID_ARGUMENT);
  /* Three operands: the message names all of them. */
  p[0] = &a, p[1] = &c, p[2] = &b;
  ck_assert_int_eq(tf_bcast_init(&bc, 3, p, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "[2,3] vs. [3] vs. [4]") != NULL, "%s", st.msg);
  /* [2^40, 1] x [1, 2^40] overflows int64 elements. */
  int64_t big = (int64_t)1 << 40;
  tf_shape x = SHAPE(big, 1), y = SHAPE(1, big);
  const tf_shape *r[2] = {&x, &y};
  ck_assert_int_eq(tf_bcast_init(&bc, 2, r, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "too large") != NULL, "%s", st.msg);
}
END_TEST

/* The layouts the kernels' fast paths depend on. */
START_TEST(test_collapse) {
  /* Same shape: one row of all elements, both operands moving. */
  tf_shape s1[2] = {SHAPE(2, 3, 4), SHAPE(2, 3, 4)};
  tf_bcast bc = init_ok(2, s1);
  ck_assert_int_eq(bc.rank, 2);
  ck_assert_int_eq(bc.dims[0], 1);
  ck_assert_int_eq(bc.dims[1], 24);
  ck_assert_int_eq(bc.col_stride[0], 1);
  ck_assert_int_eq(bc.col_stride[1], 1);
  ck_assert(tf_bcast_is_full(&bc, 0) && tf_bcast_is_full(&bc, 1));
  /* Scalar (or all-ones) operand: one row, that operand fixed. */
  tf_shape s2[2] = {SHAPE(1, 1), SHAPE(5, 6)};
  bc = init_ok(2, s2);
  ck_assert_int_eq(bc.dims[1], 30);
  ck_assert_int_eq(bc.col_stride[0], 0);
  ck_assert_int_eq(bc.col_stride[1], 1);
  ck_assert(!tf_bcast_is_full(&bc, 0) && tf_bcast_is_full(&bc, 1));
  /* Row vector: rows of C, the vector restarting each row. */
  tf_shape s3[2] = {SHAPE(4, 5, 6), SHAPE(6)};
  bc = init_ok(2, s3);
  ck_assert_int_eq(bc.rank, 2);
  ck_assert_int_eq(bc.dims[0], 20);
  ck_assert_int_eq(bc.dims[1], 6);
  ck_assert_int_eq(bc.row_stride[1], 0);
  ck_assert_int_eq(bc.col_stride[1], 1);
  ck_assert_int_eq(bc.row_stride[0], 6);
  /* Column vector: the operand fixed along each row, moving by rows. */
  tf_shape s4[2] = {SHAPE(4, 5), SHAPE(4, 1)};
  bc = init_ok(2, s4);
  ck_assert_int_eq(bc.row_stride[1], 1);
  ck_assert_int_eq(bc.col_stride[1], 0);
  /* Outer product: nothing merges. */
  tf_shape s5[2] = {SHAPE(2, 1, 4), SHAPE(3, 1)};
  bc = init_ok(2, s5);
  ck_assert_int_eq(bc.rank, 3);
  ck_assert_int_eq(bc.strides[0][0], 4);
  ck_assert_int_eq(bc.strides[0][1], 0);
  ck_assert_int_eq(bc.strides[0][2], 1);
  ck_assert_int_eq(bc.strides[1][0], 0);
  ck_assert_int_eq(bc.strides[1][1], 1);
  ck_assert_int_eq(bc.strides[1][2], 0);
  /* Empty output: nothing to walk. */
  tf_shape s6[2] = {SHAPE(3, 0, 2), SHAPE(2)};
  bc = init_ok(2, s6);
  tf_bcast_iter it;
  tf_bcast_block blk;
  tf_bcast_iter_init(&it, &bc, 0, 100);
  ck_assert(!tf_bcast_iter_next(&it, &blk));
}
END_TEST

/* A random shape set that broadcasts: an output shape, each operand a
 * suffix of it with some dims set to 1. */
static int rand_shapes(tf_shape *s, tf_shape *out) {
  int rank = (int)(tt_rand_u64() % 7), n = 1 + (int)(tt_rand_u64() % 4);
  *out = tf_shape_make(rank, NULL);
  for (int i = 0; i < rank; i++) {
    out->dims[i] = 1 + (int64_t)(tt_rand_u64() % 4);
  }
  for (int k = 0; k < n; k++) {
    int r = (int)(tt_rand_u64() % (unsigned)(rank + 1));
    s[k] = tf_shape_make(r, NULL);
    for (int j = 0; j < r; j++) {
      bool one = tt_rand_u64() % 3 == 0;
      s[k].dims[j] = one ? 1 : out->dims[rank - r + j];
    }
  }
  /* The output rank/dims come from the operands; recompute the true one. */
  for (int i = 0; i < rank; i++) {
    int64_t d = 1;
    for (int k = 0; k < n; k++) {
      int j = i - (rank - s[k].rank);
      if (j >= 0 && s[k].dims[j] != 1) {
        d = s[k].dims[j];
      }
    }
    out->dims[i] = d;
  }
  int max_rank = 0;
  for (int k = 0; k < n; k++) {
    max_rank = s[k].rank > max_rank ? s[k].rank : max_rank;
  }
  tf_shape trimmed = tf_shape_make(max_rank, out->dims + (rank - max_rank));
  *out = trimmed;
  return n;
}

/* Walks [begin, end) and checks every element's operand offsets. */
static void check_walk(const tf_bcast *bc, const tf_shape *s, int n,
                       int64_t begin, int64_t end) {
  tf_bcast_iter it;
  tf_bcast_block blk;
  tf_bcast_iter_init(&it, bc, begin, end);
  int64_t pos = begin;
  while (tf_bcast_iter_next(&it, &blk)) {
    ck_assert_int_eq(blk.out_off, pos);
    ck_assert(blk.rows >= 1 && blk.cols >= 1);
    ck_assert(blk.rows == 1 || blk.cols == bc->out_row_stride);
    for (int64_t r = 0; r < blk.rows; r++) {
      for (int64_t c = 0; c < blk.cols; c++) {
        int64_t o = blk.out_off + r * bc->out_row_stride + c;
        ck_assert_int_eq(o, pos);
        for (int k = 0; k < n; k++) {
          int64_t got = blk.in_off[k] + r * bc->row_stride[k] +
                        c * bc->col_stride[k];
          ck_assert_msg(got == tt_bcast_src_index(&s[k], &bc->out, o),
                        "operand %d at output %lld: offset %lld, want %lld",
                        k, (long long)o, (long long)got,
                        (long long)tt_bcast_src_index(&s[k], &bc->out, o));
        }
        pos++;
      }
    }
  }
  ck_assert_int_eq(pos, end);
}

START_TEST(test_random_walks) {
  for (int trial = 0; trial < 400; trial++) {
    tf_shape s[TF_BCAST_MAX_IN], out;
    int n = rand_shapes(s, &out);
    tf_bcast bc = init_ok(n, s);
    ck_assert(tf_shape_equal(&bc.out, &out));
    check_walk(&bc, s, n, 0, bc.n);
    /* A sub-range as a parallel chunk would get it. */
    int64_t b = bc.n ? (int64_t)(tt_rand_u64() % (uint64_t)bc.n) : 0;
    int64_t e = b + (bc.n - b ? (int64_t)(tt_rand_u64() % (uint64_t)(bc.n - b + 1)) : 0);
    check_walk(&bc, s, n, b, e);
  }
}
END_TEST

typedef struct count_arg {
  int *count;
} count_arg;

static void count_block(void *arg, const tf_bcast *bc, const tf_bcast_block *blk) {
  count_arg *a = arg;
  for (int64_t r = 0; r < blk->rows; r++) {
    for (int64_t c = 0; c < blk->cols; c++) {
      a->count[blk->out_off + r * bc->out_row_stride + c]++;
    }
  }
}

/* tf_bcast_run over a 3-thread pool with a small grain visits each element
 * exactly once. */
START_TEST(test_run_parallel) {
  tf_threadpool *pool = tf_threadpool_new(3);
  tf_shape s[2] = {SHAPE(37, 1, 29), SHAPE(5, 1)};
  tf_bcast bc = init_ok(2, s);
  int *count = calloc((size_t)bc.n, sizeof(int));
  count_arg a = {count};
  tf_bcast_run(&bc, pool, 7, count_block, &a);
  for (int64_t i = 0; i < bc.n; i++) {
    ck_assert_int_eq(count[i], 1);
  }
  free(count);
  tf_threadpool_free(pool);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_broadcast");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_output_shapes);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_collapse);
  tcase_add_test(tc, test_random_walks);
  tcase_add_test(tc, test_run_parallel);
  suite_add_tcase(s, tc);
  return s;
}
