/* shape_test.c: tf_shape construction, element counts with overflow,
 * tf_shape_check errors (negative and huge dims, bad rank), printing with
 * unknowns and truncation, NumPy broadcasting including unknown dims, and
 * merging partial shapes: a table with unknown ranks and dims and both
 * kinds of conflict (messages naming both shapes), aliasing, and every
 * pair of small partial shapes against the definition (the merge admits
 * exactly the concrete shapes both sides admit). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

/* SHAPE(2, 3) is [2, 3]; dims are passed as int64_t (tf_shape_of reads
 * int64_t varargs, so plain int literals would be undefined behaviour). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define UNKNOWN tf_shape_unknown()

static const char *str(const tf_shape *s) {
  static char buf[4][256];
  static int k;
  k = (k + 1) % 4;
  return tf_shape_str(s, buf[k], sizeof buf[k]);
}

START_TEST(test_constructors) {
  tf_shape s = tf_shape_of(3, 2, 0, 7); /* int arguments are converted */
  ck_assert_int_eq(s.rank, 3);
  ck_assert(s.dims[0] == 2 && s.dims[1] == 0 && s.dims[2] == 7);
  tf_shape t = SHAPE(2, 0, 7);
  ck_assert(tf_shape_equal(&s, &t));
  s = tf_shape_of(2, U, 1LL << 40);
  ck_assert(s.dims[0] == -1 && s.dims[1] == 1LL << 40);
  int d = -1;
  s = tf_shape_of(1, d);
  ck_assert_int_eq(s.dims[0], -1);
  s = tf_shape_of(0);
  ck_assert_int_eq(s.rank, 0);
  tf_shape sc = SCALAR;
  ck_assert(tf_shape_equal(&s, &sc));
  s = UNKNOWN;
  ck_assert_int_eq(s.rank, TF_UNKNOWN_RANK);
  s = tf_shape_of(8, 1, 2, 3, 4, 5, 6, 7, 8);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(s.dims[i], i + 1);
  int64_t dims[2] = {INT64_MAX, U};
  s = tf_shape_make(2, dims);
  ck_assert(s.dims[0] == INT64_MAX && s.dims[1] == U);
  /* NULL dims: every dim unknown. */
  s = tf_shape_make(3, NULL);
  ck_assert_int_eq(s.rank, 3);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(s.dims[i], TF_UNKNOWN_DIM);
  s = tf_shape_make(TF_UNKNOWN_RANK, NULL);
  ck_assert_int_eq(s.rank, TF_UNKNOWN_RANK);
}
END_TEST

START_TEST(test_make_rank_too_big_aborts) {
  int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
  tf_shape s = tf_shape_make(9, dims);
  ck_abort_msg("rank %d accepted", s.rank);
}
END_TEST

START_TEST(test_make_rank_negative_aborts) {
  ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
  tf_shape s = tf_shape_make(-2, NULL);
  ck_abort_msg("rank %d accepted", s.rank);
}
END_TEST

START_TEST(test_equal_and_defined) {
  tf_shape a = SHAPE(2, 3), b = SHAPE(2, 3), c = SHAPE(3, 2), d = SHAPE(2, 3, 1);
  tf_shape e = SHAPE(2, U), un = UNKNOWN, un2 = UNKNOWN, sc = SCALAR;
  ck_assert(tf_shape_equal(&a, &b));
  ck_assert(!tf_shape_equal(&a, &c));
  ck_assert(!tf_shape_equal(&a, &d));
  ck_assert(!tf_shape_equal(&a, &e));
  ck_assert(tf_shape_equal(&un, &un2));
  ck_assert(!tf_shape_equal(&un, &sc));
  ck_assert(tf_shape_is_fully_defined(&a));
  ck_assert(tf_shape_is_fully_defined(&sc));
  ck_assert(!tf_shape_is_fully_defined(&e));
  ck_assert(!tf_shape_is_fully_defined(&un));
  tf_shape z = SHAPE(0, 5);
  ck_assert(tf_shape_is_fully_defined(&z));
  tf_shape neg = SHAPE(4, -2);
  ck_assert(!tf_shape_is_fully_defined(&neg));
}
END_TEST

START_TEST(test_num_elements) {
  static const struct {
    tf_shape s;
    int64_t n;
  } cases[] = {
      {{0, {0}}, 1},
      {{1, {0}}, 0},
      {{1, {7}}, 7},
      {{3, {2, 3, 4}}, 24},
      {{3, {5, 0, 1000}}, 0},
      {{2, {1LL << 31, 1LL << 31}}, 1LL << 62},
      {{2, {INT64_MAX, 1}}, INT64_MAX},
      {{8, {2, 2, 2, 2, 2, 2, 2, 2}}, 256},
      {{2, {1LL << 32, 1LL << 32}}, -1},       /* overflows int64 */
      {{3, {1LL << 40, 1LL << 40, 0}}, -1},    /* overflows before the 0 */
      {{2, {INT64_MAX, 2}}, -1},
      {{2, {3, U}}, -1},
      {{-1, {0}}, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(tf_shape_num_elements(&cases[i].s) == cases[i].n,
                  "%s: got %lld, want %lld", str(&cases[i].s),
                  (long long)tf_shape_num_elements(&cases[i].s),
                  (long long)cases[i].n);
  }
}
END_TEST

START_TEST(test_check_ok) {
  tf_status st;
  tf_status_init(&st);
  int64_t n = -5;
  tf_shape s = SHAPE(2, 3, 4);
  ck_assert_int_eq(tf_shape_check(&s, 4, &n, &st), TF_OK);
  ck_assert_int_eq(n, 24);
  ck_assert_int_eq(st.code, TF_OK);
  s = SCALAR;
  ck_assert_int_eq(tf_shape_check(&s, 8, &n, NULL), TF_OK);
  ck_assert_int_eq(n, 1);
  s = SHAPE(0, 1LL << 62);
  ck_assert_int_eq(tf_shape_check(&s, 8, &n, NULL), TF_OK);
  ck_assert_int_eq(n, 0);
  /* Large sizes that fit: 2^62 one-byte and 2^60 four-byte elements. */
  s = SHAPE(1LL << 31, 1LL << 31);
  ck_assert_int_eq(tf_shape_check(&s, 1, &n, NULL), TF_OK);
  ck_assert_int_eq(n, 1LL << 62);
  s = SHAPE(1LL << 60);
  ck_assert_int_eq(tf_shape_check(&s, 4, NULL, NULL), TF_OK);
  s = SHAPE(1LL << 61);
  /* elem_size 0 (invalid dtype) does not overflow anything. */
  ck_assert_int_eq(tf_shape_check(&s, 0, &n, NULL), TF_OK);
}
END_TEST

/* Expects INVALID_ARGUMENT whose message contains each of the needles, and
 * n left untouched. */
static void check_fails(tf_shape s, size_t esize, const char *n1, const char *n2) {
  tf_status st;
  tf_status_init(&st);
  int64_t n = 12345;
  ck_assert_int_eq(tf_shape_check(&s, esize, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_int_eq(n, 12345);
  ck_assert_msg(strstr(st.msg, n1) != NULL, "want '%s' in: %s", n1, st.msg);
  if (n2 != NULL) {
    ck_assert_msg(strstr(st.msg, n2) != NULL, "want '%s' in: %s", n2, st.msg);
  }
  /* Same answer without a status. */
  ck_assert_int_eq(tf_shape_check(&s, esize, &n, NULL), TF_INVALID_ARGUMENT);
}

START_TEST(test_check_errors) {
  check_fails(SHAPE(1LL << 40, 1LL << 40), 4, "[1099511627776,1099511627776]", "int64");
  check_fails(SHAPE(3, 1LL << 62, 1LL << 62, 0), 1, "[3,4611686018427387904", NULL);
  check_fails(SHAPE(INT64_MAX, INT64_MAX), 1, "9223372036854775807", NULL);
  /* Fits in elements but not in bytes. */
  check_fails(SHAPE(1LL << 61), 8, "[2305843009213693952]", "bytes");
  check_fails(SHAPE(1LL << 61), 4, "[2305843009213693952]", "bytes");
  check_fails(SHAPE(1LL << 31, 1LL << 31), 2, "[2147483648,2147483648]", NULL);
  check_fails(SHAPE(INT64_MAX), 2, "[9223372036854775807]", NULL);
  /* Negative and unknown dims. */
  check_fails(SHAPE(2, -3), 4, "negative", "axis 1");
  check_fails(SHAPE(U, 5), 4, "[?,5]", "axis 0");
  check_fails(SHAPE(4, 5, INT64_MIN), 1, "axis 2", NULL);
  /* Unknown or out-of-range rank. */
  check_fails(UNKNOWN, 4, "rank -1", NULL);
  tf_shape big = SHAPE(1, 1, 1, 1, 1, 1, 1, 1);
  big.rank = 9;
  check_fails(big, 4, "rank 9", NULL);
  big.rank = -100;
  check_fails(big, 4, "rank -100", NULL);
}
END_TEST

START_TEST(test_str) {
  static const struct {
    tf_shape s;
    const char *want;
  } cases[] = {
      {{0, {0}}, "[]"},
      {{1, {0}}, "[0]"},
      {{2, {2, 3}}, "[2,3]"},
      {{3, {U, 3, U}}, "[?,3,?]"},
      {{1, {-7}}, "[?]"},
      {{-1, {0}}, "<unknown>"},
      {{2, {INT64_MAX, 1}}, "[9223372036854775807,1]"},
      {{8, {1, 2, 3, 4, 5, 6, 7, 8}}, "[1,2,3,4,5,6,7,8]"},
  };
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_ptr_eq(tf_shape_str(&cases[i].s, buf, sizeof buf), buf);
    ck_assert_str_eq(buf, cases[i].want);
  }
}
END_TEST

/* Every buffer size gives the longest prefix that fits, NUL-terminated,
 * and nothing is written past size. */
static void check_truncation(tf_shape s) {
  char full[256], buf[300];
  tf_shape_str(&s, full, sizeof full);
  size_t len = strlen(full);
  for (size_t size = 1; size <= len + 2; size++) {
    memset(buf, '#', sizeof buf);
    tf_shape_str(&s, buf, size);
    size_t want = len < size - 1 ? len : size - 1;
    ck_assert_msg(strlen(buf) == want && strncmp(buf, full, want) == 0,
                  "size %zu: got '%s' for '%s'", size, buf, full);
    for (size_t k = size; k < sizeof buf; k++) {
      if (buf[k] != '#') ck_abort_msg("size %zu: byte %zu written", size, k);
    }
  }
  memset(buf, '#', sizeof buf);
  ck_assert_ptr_eq(tf_shape_str(&s, buf, 0), buf);
  ck_assert_int_eq(buf[0], '#');
}

START_TEST(test_str_truncation) {
  check_truncation(SHAPE(123456789, U, 42, INT64_MAX, 0, U, 7, 1000));
  check_truncation(SHAPE(5));
  check_truncation(SCALAR);
  check_truncation(UNKNOWN);
}
END_TEST

typedef struct {
  tf_shape a, b;
  bool ok;
  tf_shape want;
} bcase;

static void check_broadcast(const bcase *c) {
  tf_status st;
  tf_status_init(&st);
  for (int swap = 0; swap < 2; swap++) {
    const tf_shape *a = swap ? &c->b : &c->a, *b = swap ? &c->a : &c->b;
    tf_shape out = SHAPE(99);
    tf_code rc = tf_shape_broadcast(a, b, &out, &st);
    if (c->ok) {
      ck_assert_msg(rc == TF_OK, "%s vs %s: %s", str(a), str(b), st.msg);
      ck_assert_msg(tf_shape_equal(&out, &c->want), "%s vs %s: got %s, want %s",
                    str(a), str(b), str(&out), str(&c->want));
    } else {
      ck_assert_msg(rc == TF_INVALID_ARGUMENT, "%s vs %s: got %s (%s)", str(a),
                    str(b), tf_code_name(rc), str(&out));
      ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(st.msg, str(a)) && strstr(st.msg, str(b)),
                    "message must name both shapes: %s", st.msg);
      ck_assert_int_eq(tf_shape_broadcast(a, b, &out, NULL), TF_INVALID_ARGUMENT);
    }
  }
}

START_TEST(test_broadcast_table) {
  const bcase cases[] = {
      /* Known dims. */
      {SCALAR, SCALAR, true, SCALAR},
      {SHAPE(3), SCALAR, true, SHAPE(3)},
      {SHAPE(2, 3), SCALAR, true, SHAPE(2, 3)},
      {SHAPE(2, 3), SHAPE(2, 3), true, SHAPE(2, 3)},
      {SHAPE(2, 3), SHAPE(3), true, SHAPE(2, 3)},
      {SHAPE(2, 1), SHAPE(1, 3), true, SHAPE(2, 3)},
      {SHAPE(5, 1, 4), SHAPE(3, 1), true, SHAPE(5, 3, 4)},
      {SHAPE(8, 1, 6, 1), SHAPE(7, 1, 5), true, SHAPE(8, 7, 6, 5)},
      {SHAPE(1), SHAPE(1, 1, 1), true, SHAPE(1, 1, 1)},
      {SHAPE(0), SHAPE(1), true, SHAPE(0)},
      {SHAPE(0, 3), SHAPE(3), true, SHAPE(0, 3)},
      {SHAPE(2, 0), SHAPE(2, 1), true, SHAPE(2, 0)},
      {SHAPE(1, 2, 1, 2, 1, 2, 1, 2), SHAPE(2, 1, 2, 1, 2, 1, 2, 1), true,
       SHAPE(2, 2, 2, 2, 2, 2, 2, 2)},
      {SHAPE(3), SHAPE(4), false, SCALAR},
      {SHAPE(2, 3), SHAPE(3, 2), false, SCALAR},
      {SHAPE(0), SHAPE(3), false, SCALAR},
      {SHAPE(2, 3, 4), SHAPE(5, 4), false, SCALAR},
      /* Unknown dims: a known non-1 wins, 1 against unknown is unknown. */
      {SHAPE(U), SHAPE(3), true, SHAPE(3)},
      {SHAPE(U), SHAPE(1), true, SHAPE(U)},
      {SHAPE(U), SHAPE(U), true, SHAPE(U)},
      {SHAPE(U), SCALAR, true, SHAPE(U)},
      {SHAPE(U, 1), SHAPE(1, U), true, SHAPE(U, U)},
      {SHAPE(2, U), SHAPE(U, 3), true, SHAPE(2, 3)},
      {SHAPE(U, 4), SHAPE(5, 1, 1), true, SHAPE(5, U, 4)},
      {SHAPE(U), SHAPE(0), true, SHAPE(0)},
      {SHAPE(U, 3), SHAPE(2, 4), false, SCALAR},
      /* Unknown rank gives unknown rank. */
      {UNKNOWN, SHAPE(2, 3), true, UNKNOWN},
      {UNKNOWN, SCALAR, true, UNKNOWN},
      {UNKNOWN, UNKNOWN, true, UNKNOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_broadcast(&cases[i]);
}
END_TEST

/* out may alias an input. */
START_TEST(test_broadcast_in_place) {
  tf_shape a = SHAPE(4, 1), b = SHAPE(3), want = SHAPE(4, 3);
  ck_assert_int_eq(tf_shape_broadcast(&a, &b, &a, NULL), TF_OK);
  ck_assert(tf_shape_equal(&a, &want));
  a = SHAPE(4, 1);
  ck_assert_int_eq(tf_shape_broadcast(&a, &b, &b, NULL), TF_OK);
  ck_assert(tf_shape_equal(&b, &want));
}
END_TEST

/* Random known shapes against a direct dim-by-dim rule. */
START_TEST(test_broadcast_random) {
  for (int it = 0; it < 2000; it++) {
    int ra = (int)(tt_rand_u64() % 5), rb = (int)(tt_rand_u64() % 5);
    tf_shape a = SCALAR, b = SCALAR;
    a.rank = ra;
    b.rank = rb;
    for (int i = 0; i < ra; i++) a.dims[i] = (int64_t)(tt_rand_u64() % 3);
    for (int i = 0; i < rb; i++) b.dims[i] = (int64_t)(tt_rand_u64() % 3);
    int r = ra > rb ? ra : rb;
    bool ok = true;
    tf_shape want = SCALAR;
    want.rank = r;
    for (int i = 0; i < r; i++) {
      int64_t da = i < r - ra ? 1 : a.dims[i - (r - ra)];
      int64_t db = i < r - rb ? 1 : b.dims[i - (r - rb)];
      if (da != db && da != 1 && db != 1) ok = false;
      want.dims[i] = da == 1 ? db : da;
    }
    bcase c = {a, b, ok, want};
    check_broadcast(&c);
  }
}
END_TEST

/* ---- tf_shape_merge ------------------------------------------------------- */

typedef struct mcase {
  tf_shape a, b;
  const char *want; /* the merged shape printed, or NULL: a conflict */
  const char *msg;  /* the conflict's message */
} mcase;

START_TEST(test_merge_table) {
  mcase cases[] = {
      {UNKNOWN, UNKNOWN, "<unknown>", NULL},
      {UNKNOWN, SHAPE(2, U), "[2,?]", NULL},
      {SCALAR, UNKNOWN, "[]", NULL},
      {SCALAR, SCALAR, "[]", NULL},
      {SHAPE(2, U), SHAPE(U, 3), "[2,3]", NULL},
      {SHAPE(U, U), SHAPE(U, U), "[?,?]", NULL},
      {SHAPE(0, U, 7), SHAPE(0, 5, U), "[0,5,7]", NULL},
      {SHAPE(2, 3), SHAPE(2, 4), NULL,
       "shapes [2,3] and [2,4] are incompatible: dimension 1 is 3 vs 4"},
      {SHAPE(U, 1), SHAPE(5, 0), NULL,
       "shapes [?,1] and [5,0] are incompatible: dimension 1 is 1 vs 0"},
      {SHAPE(2), SHAPE(2, 1), NULL, "shapes [2] and [2,1] are incompatible: rank 1 vs 2"},
      {SCALAR, SHAPE(U), NULL, "shapes [] and [?] are incompatible: rank 0 vs 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const mcase *c = &cases[i];
    for (int swap = 0; swap < 2; swap++) {
      const tf_shape *a = swap ? &c->b : &c->a, *b = swap ? &c->a : &c->b;
      tf_shape out = SHAPE(9, 9, 9);
      tf_status st;
      tf_code rc = tf_shape_merge(a, b, &out, &st);
      if (c->want != NULL) {
        ck_assert_msg(rc == TF_OK, "%s + %s: %s", str(a), str(b), st.msg);
        ck_assert_str_eq(str(&out), c->want);
        continue;
      }
      ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
      ck_assert_str_eq(str(&out), "[9,9,9]"); /* untouched */
      if (!swap) {
        ck_assert_str_eq(st.msg, c->msg);
      }
      ck_assert_int_eq(tf_shape_merge(a, b, &out, NULL), TF_INVALID_ARGUMENT);
    }
  }
}
END_TEST

/* out may be a or b; negative dims other than -1 count as unknown. */
START_TEST(test_merge_in_place) {
  tf_shape a = SHAPE(U, 3), b = SHAPE(2, U);
  ck_assert_int_eq(tf_shape_merge(&a, &b, &a, NULL), TF_OK);
  ck_assert_str_eq(str(&a), "[2,3]");
  a = SHAPE(U, 3);
  ck_assert_int_eq(tf_shape_merge(&a, &b, &b, NULL), TF_OK);
  ck_assert_str_eq(str(&b), "[2,3]");
  tf_shape odd = SHAPE(-7, 4), m;
  ck_assert_int_eq(tf_shape_merge(&odd, &odd, &m, NULL), TF_OK);
  ck_assert(m.rank == 2 && m.dims[0] == TF_UNKNOWN_DIM && m.dims[1] == 4);
  tf_shape odd_rank = tf_shape_unknown();
  odd_rank.rank = -3;
  ck_assert_int_eq(tf_shape_merge(&odd_rank, &odd_rank, &m, NULL), TF_OK);
  ck_assert_int_eq(m.rank, TF_UNKNOWN_RANK);
}
END_TEST

/* Whether concrete c is one of the shapes partial p describes. */
static bool admits(const tf_shape *p, const tf_shape *c) {
  if (p->rank < 0) return true;
  if (p->rank != c->rank) return false;
  for (int i = 0; i < p->rank; i++) {
    if (p->dims[i] >= 0 && p->dims[i] != c->dims[i]) return false;
  }
  return true;
}

/* Partial shape idx of the 14 with rank unknown, 0, 1 or 2 and dims ?, 1
 * or 2: 0 unknown, 1 scalar, 2..4 vectors, 5..13 matrices. */
static tf_shape small_partial(int idx) {
  if (idx == 0) return UNKNOWN;
  if (idx == 1) return SCALAR;
  static const int64_t d[3] = {U, 1, 2};
  if (idx < 5) return SHAPE(d[idx - 2]);
  return SHAPE(d[(idx - 5) / 3], d[(idx - 5) % 3]);
}

START_TEST(test_merge_definition) {
  enum { N_PARTIAL = 14, N_CONCRETE = 40 };
  tf_shape concrete[N_CONCRETE]; /* ranks 0..3, dims 1..3 */
  int n = 0;
  for (int r = 0; r <= 3; r++) {
    int count = r == 0 ? 1 : r == 1 ? 3 : r == 2 ? 9 : 27;
    for (int k = 0; k < count; k++) {
      tf_shape c = tf_shape_make(r, NULL);
      for (int i = 0, v = k; i < r; i++, v /= 3) c.dims[i] = 1 + v % 3;
      concrete[n++] = c;
    }
  }
  ck_assert_int_eq(n, N_CONCRETE);
  for (int i = 0; i < N_PARTIAL; i++) {
    for (int j = 0; j < N_PARTIAL; j++) {
      tf_shape a = small_partial(i), b = small_partial(j), m;
      bool both_any = false; /* some concrete shape fits both */
      for (int k = 0; k < n; k++) both_any |= admits(&a, &concrete[k]) && admits(&b, &concrete[k]);
      tf_code rc = tf_shape_merge(&a, &b, &m, NULL);
      ck_assert_msg((rc == TF_OK) == both_any, "%s + %s: code %d", str(&a), str(&b), rc);
      for (int k = 0; k < n && rc == TF_OK; k++) {
        const tf_shape *c = &concrete[k];
        ck_assert_msg(admits(&m, c) == (admits(&a, c) && admits(&b, c)),
                      "%s + %s = %s, wrong about %s", str(&a), str(&b), str(&m), str(c));
      }
    }
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("shape");
  TCase *tc = tcase_create("shape");
  tcase_add_test(tc, test_constructors);
  tcase_add_test_raise_signal(tc, test_make_rank_too_big_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_make_rank_negative_aborts, SIGABRT);
  tcase_add_test(tc, test_equal_and_defined);
  tcase_add_test(tc, test_num_elements);
  tcase_add_test(tc, test_check_ok);
  tcase_add_test(tc, test_check_errors);
  tcase_add_test(tc, test_str);
  tcase_add_test(tc, test_str_truncation);
  tcase_add_test(tc, test_broadcast_table);
  tcase_add_test(tc, test_broadcast_in_place);
  tcase_add_test(tc, test_broadcast_random);
  tcase_add_test(tc, test_merge_table);
  tcase_add_test(tc, test_merge_in_place);
  tcase_add_test(tc, test_merge_definition);
  suite_add_tcase(s, tc);
  return s;
}
