/* cpu_math_binary_loops_test.c: the typed element loops of
 * lib/devices/cpu/cpu_math_binary_loops.c, called directly through
 * lib/devices/cpu/cpu_math_binary.h on tf_bcast walks (cpu_broadcast.h):
 *
 *  - the lookup tables: which (op, dtype) pairs have a loop, NULL for the
 *    rest and for out-of-range ops and dtypes;
 *  - every op x dtype pair (arithmetic and comparisons on float32/64,
 *    int8/16/32/64 and uint8/16/32/64; Equal, NotEqual, LogicalAnd/Or on
 *    bool) against a reference written here that computes exactly (float64
 *    for floats, 128-bit integers for ints, then wraps to the dtype), on
 *    inputs mixing random values with each dtype's extremes, 0, -1, NaN,
 *    infinities and signed zeros, over broadcast shapes that reach all four
 *    row variants and the tiled short-row path, walked whole, in random
 *    pieces (partial rows) and on a thread pool;
 *  - hand-worked int8/uint16 wraparound, integer division by zero and
 *    MIN / -1, flooring against truncating division and remainder, float
 *    NaN/inf rules;
 *  - ClipByValue and AddN loops for every dtype (AddN over chunk edges,
 *    into one of its inputs), and the divisor scans.
 *
 * Tolerances: integer and bool results exact; float results bit-exact
 * (NaN matching any NaN) except Pow, which may differ from pow() rounded
 * to the dtype by 1 ulp (powf is not correctly rounded). Float32 +, -, *,
 * / computed in float64 and rounded once are the correctly rounded float32
 * results (53 >= 2 * 24 + 2), so they must match exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/devices/cpu/cpu_broadcast.h"
#include "lib/devices/cpu/cpu_math_binary.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef __int128 i128;
typedef unsigned __int128 u128;

static const tf_dtype k_num[] = {TF_FLOAT32, TF_FLOAT64, TF_INT8,  TF_INT16,
                                 TF_INT32,   TF_INT64,   TF_UINT8, TF_UINT16,
                                 TF_UINT32,  TF_UINT64};

static bool is_flt(tf_dtype dt) { return dt == TF_FLOAT32 || dt == TF_FLOAT64; }

static bool is_cmp(tf__binop op) {
  return op >= TF__BINOP_GREATER && op <= TF__BINOP_NOT_EQUAL;
}

static bool is_logical(tf__binop op) {
  return op == TF__BINOP_LOGICAL_AND || op == TF__BINOP_LOGICAL_OR;
}

/* ---- element access ------------------------------------------------------- */

static int bits_of(tf_dtype dt) { return (int)tf_dtype_size(dt) * 8; }

static i128 get_int(tf_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case TF_INT8: return ((const int8_t *)p)[i];
  case TF_INT16: return ((const int16_t *)p)[i];
  case TF_INT32: return ((const int32_t *)p)[i];
  case TF_INT64: return ((const int64_t *)p)[i];
  case TF_UINT8: return ((const uint8_t *)p)[i];
  case TF_UINT16: return ((const uint16_t *)p)[i];
  case TF_UINT32: return ((const uint32_t *)p)[i];
  default: return ((const uint64_t *)p)[i];
  }
}

static double get_flt(tf_dtype dt, const void *p, int64_t i) {
  return dt == TF_FLOAT32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

/* v modulo 2^bits, as the dtype reads it (two's complement if signed). */
static i128 wrap(tf_dtype dt, i128 v) {
  int b = bits_of(dt);
  u128 m = ((u128)1 << b) - 1, u = (u128)v & m;
  if (tf_dtype_is_signed(dt) && (u >> (b - 1)) != 0) {
    return (i128)u - ((i128)1 << b);
  }
  return (i128)u;
}

static void set_int(tf_dtype dt, void *p, int64_t i, i128 v) {
  v = wrap(dt, v);
  switch (dt) {
  case TF_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case TF_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
  case TF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case TF_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
  case TF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case TF_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case TF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  default: ((uint64_t *)p)[i] = (uint64_t)v; break;
  }
}

static void set_flt(tf_dtype dt, void *p, int64_t i, double v) {
  if (dt == TF_FLOAT32) {
    ((float *)p)[i] = (float)v;
  } else {
    ((double *)p)[i] = v;
  }
}

/* ---- reference -------------------------------------------------------------- */

/* Floor of the exact quotient (y != 0). */
static i128 floor_div(i128 x, i128 y) {
  i128 q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* x^e modulo 2^128 by plain repeated multiplication for small e; larger
 * exponents by squaring from the top bit down. */
static u128 int_pow(u128 x, u128 e) {
  u128 r = 1;
  if (e <= 300) {
    for (u128 k = 0; k < e; k++) {
      r *= x;
    }
    return r;
  }
  for (int bit = 127; bit >= 0; bit--) {
    r *= r;
    if ((e >> bit) & 1) {
      r *= x;
    }
  }
  return r;
}

/* The integer result before wrapping (exact; 0 where the loops define
 * division by zero and negative powers as 0). */
static i128 ref_int(tf__binop op, tf_dtype dt, i128 x, i128 y) {
  switch (op) {
  case TF__BINOP_ADD: return x + y;
  case TF__BINOP_SUB: return x - y;
  case TF__BINOP_MUL: return (i128)((u128)x * (u128)y);
  case TF__BINOP_DIV: return y == 0 ? 0 : x / y;
  case TF__BINOP_FLOORDIV: return y == 0 ? 0 : floor_div(x, y);
  case TF__BINOP_TRUNCDIV: return y == 0 ? 0 : x / y;
  case TF__BINOP_FLOORMOD: return y == 0 ? 0 : x - floor_div(x, y) * y;
  case TF__BINOP_TRUNCMOD: return y == 0 ? 0 : x % y;
  case TF__BINOP_POW: return y < 0 ? 0 : (i128)int_pow((u128)x, (u128)y);
  case TF__BINOP_MAXIMUM: return x > y ? x : y;
  case TF__BINOP_MINIMUM: return x < y ? x : y;
  case TF__BINOP_GREATER: return x > y;
  case TF__BINOP_GREATER_EQUAL: return x >= y;
  case TF__BINOP_LESS: return x < y;
  case TF__BINOP_LESS_EQUAL: return x <= y;
  case TF__BINOP_EQUAL: return x == y;
  case TF__BINOP_NOT_EQUAL: return x != y;
  case TF__BINOP_LOGICAL_AND: return x && y;
  default: return x || y;
  }
}

/* Rounds v to dt's precision. */
static double rnd(tf_dtype dt, double v) {
  return dt == TF_FLOAT32 ? (double)(float)v : v;
}

static double ref_flt(tf__binop op, tf_dtype dt, double x, double y) {
  switch (op) {
  case TF__BINOP_ADD: return rnd(dt, x + y);
  case TF__BINOP_SUB: return rnd(dt, x - y);
  case TF__BINOP_MUL: return rnd(dt, x * y);
  case TF__BINOP_DIV: return rnd(dt, x / y);
  case TF__BINOP_FLOORDIV: return floor(rnd(dt, x / y));
  case TF__BINOP_TRUNCDIV: return trunc(rnd(dt, x / y));
  case TF__BINOP_FLOORMOD: {
    double r = fmod(x, y); /* exact */
    return (r != 0 && (r < 0) != (y < 0)) ? rnd(dt, r + y) : r;
  }
  case TF__BINOP_TRUNCMOD: return fmod(x, y); /* exact */
  case TF__BINOP_POW: return rnd(dt, pow(x, y));
  case TF__BINOP_MAXIMUM: return isnan(x) ? x : isnan(y) ? y : x > y ? x : y;
  case TF__BINOP_MINIMUM: return isnan(x) ? x : isnan(y) ? y : x < y ? x : y;
  case TF__BINOP_GREATER: return x > y;
  case TF__BINOP_GREATER_EQUAL: return x >= y;
  case TF__BINOP_LESS: return x < y;
  case TF__BINOP_LESS_EQUAL: return x <= y;
  case TF__BINOP_EQUAL: return x == y;
  default: return x != y;
  }
}

/* Distance in units in the last place of dt between two finite values of
 * the same sign (large when the signs differ). */
static uint64_t ulps(tf_dtype dt, double a, double b) {
  if (dt == TF_FLOAT32) {
    float fa = (float)a, fb = (float)b;
    int32_t ia, ib;
    memcpy(&ia, &fa, 4);
    memcpy(&ib, &fb, 4);
    return (ia < 0) != (ib < 0) ? UINT64_MAX : (uint64_t)llabs((long long)ia - ib);
  }
  int64_t ia, ib;
  memcpy(&ia, &a, 8);
  memcpy(&ib, &b, 8);
  return (ia < 0) != (ib < 0) ? UINT64_MAX
                              : (ia > ib ? (uint64_t)(ia - ib) : (uint64_t)(ib - ia));
}

/* Whether got matches the reference want for op on dt (see the top). */
static bool flt_ok(tf__binop op, tf_dtype dt, double got, double want) {
  if (isnan(want) || isnan(got)) {
    return isnan(want) && isnan(got);
  }
  if (memcmp(&got, &want, sizeof got) == 0) {
    return true;
  }
  return op == TF__BINOP_POW && isfinite(got) && isfinite(want) &&
         ulps(dt, got, want) <= 1;
}

/* ---- inputs --------------------------------------------------------------- */

/* Operand values: extremes and 0/1/-1/2 one time in four, else random
 * over the whole range; Pow's exponents mostly small. */
static void fill_int(tf_dtype dt, void *p, int64_t n, bool exponent) {
  int b = bits_of(dt);
  bool sgn = tf_dtype_is_signed(dt);
  i128 lo = sgn ? -((i128)1 << (b - 1)) : 0;
  i128 hi = sgn ? ((i128)1 << (b - 1)) - 1 : ((i128)1 << b) - 1;
  const i128 edges[] = {lo, lo + 1, hi, hi - 1, 0, 1, -1, 2, -2, 3};
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = tt_rand_u64();
    i128 v;
    if (r % 4 == 0) {
      v = edges[(r >> 8) % NELEM(edges)];
    } else if (exponent && r % 8 != 1) {
      v = (i128)((r >> 8) % 75) - 3;
    } else {
      v = (i128)tt_rand_u64();
    }
    set_int(dt, p, i, v);
  }
}

static void fill_flt(tf_dtype dt, void *p, int64_t n) {
  const double big = dt == TF_FLOAT32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
  const double tiny = dt == TF_FLOAT32 ? 0x1p-149 : 0x1p-1074;
  const double edges[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, tiny, -tiny,
                          big, -big, 1, -1, 0.5, 2, -3};
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = tt_rand_u64();
    double v;
    if (r % 5 == 0) {
      v = edges[(r >> 8) % NELEM(edges)];
    } else if (r % 5 == 1) {
      v = tt_rand_uniform(-8, 8);
      v = r % 10 == 1 ? round(v) : v; /* whole numbers for FloorDiv/Mod/Pow */
    } else {
      v = tt_rand_uniform(1e-3, 1e3) * ((r >> 20) & 1 ? -1 : 1);
    }
    set_flt(dt, p, i, v);
  }
}

static void fill(tf_dtype dt, void *p, int64_t n, bool exponent) {
  if (dt == TF_BOOL) {
    for (int64_t i = 0; i < n; i++) {
      ((bool *)p)[i] = tt_rand_u64() & 1;
    }
  } else if (is_flt(dt)) {
    fill_flt(dt, p, n);
  } else {
    fill_int(dt, p, n, exponent);
  }
}

/* ---- running the loops ---------------------------------------------------- */

typedef enum { WALK_WHOLE, WALK_PIECES, WALK_POOL } walk_kind;

/* Runs fn over bc's output: in one call, in random pieces of the output
 * (blocks that start and end mid-row), or across a pool in small chunks. */
static void walk(tf_bcast_block_fn fn, const tf_bcast *bc, void *args,
                 walk_kind kind, tf_threadpool *pool) {
  if (kind == WALK_WHOLE) {
    tf_bcast_run(bc, NULL, INT64_MAX, fn, args);
    return;
  }
  if (kind == WALK_POOL) {
    tf_bcast_run(bc, pool, 97, fn, args);
    return;
  }
  for (int64_t begin = 0; begin < bc->n;) {
    int64_t end = begin + 1 + (int64_t)(tt_rand_u64() % 700);
    end = end > bc->n ? bc->n : end;
    tf_bcast_iter it;
    tf_bcast_block blk;
    tf_bcast_iter_init(&it, bc, begin, end);
    while (tf_bcast_iter_next(&it, &blk)) {
      fn(args, bc, &blk);
    }
    begin = end;
  }
}


/* Checks output element o of op on dt against the reference. */
static void check_elem(tf__binop op, tf_dtype dt, const void *out, int64_t o,
                       const void *a, int64_t ia, const void *b, int64_t ib,
                       const char *where) {
  bool to_bool = is_cmp(op) || is_logical(op);
  if (dt == TF_BOOL) {
    bool x = ((const bool *)a)[ia], y = ((const bool *)b)[ib];
    bool want = (bool)ref_int(op, dt, x, y), got = ((const bool *)out)[o];
    if (got != want) {
      ck_abort_msg("%s: bool %d op %d -> %d, want %d", where, x, y, got, want);
    }
  } else if (is_flt(dt)) {
    double x = get_flt(dt, a, ia), y = get_flt(dt, b, ib);
    double want = ref_flt(op, dt, x, y);
    double got = to_bool ? ((const bool *)out)[o] : get_flt(dt, out, o);
    if (!flt_ok(op, dt, got, want)) {
      ck_abort_msg("%s: %s(%a, %a) = %a, want %a (seed %llu)", where,
                   tf_dtype_name(dt), x, y, got, want,
                   (unsigned long long)tt_seed());
    }
  } else {
    i128 x = get_int(dt, a, ia), y = get_int(dt, b, ib);
    i128 r = ref_int(op, dt, x, y);
    i128 want = to_bool ? r : wrap(dt, r);
    i128 got = to_bool ? ((const bool *)out)[o] : get_int(dt, out, o);
    if (got != want) {
      ck_abort_msg("%s: %s(%lld, %lld) = %lld, want %lld (seed %llu)", where,
                   tf_dtype_name(dt), (long long)x, (long long)y,
                   (long long)got, (long long)want,
                   (unsigned long long)tt_seed());
    }
  }
}

/* Runs op on dt over operands of shapes sa, sb every way and checks every
 * output element. */
static void check_pair(tf__binop op, tf_dtype dt, tf_shape sa, tf_shape sb,
                       tf_threadpool *pool) {
  tf_bcast_block_fn fn = tf__binop_block_fn(op, dt);
  ck_assert_ptr_nonnull(fn);
  tf_bcast bc;
  tf_status st;
  const tf_shape *shapes[2] = {&sa, &sb};
  ck_assert_msg(tf_bcast_init(&bc, 2, shapes, &st) == TF_OK, "%s", st.msg);
  int64_t na = tf_shape_num_elements(&sa), nb = tf_shape_num_elements(&sb);
  size_t es = tf_dtype_size(dt);
  bool to_bool = is_cmp(op) || is_logical(op);
  size_t os = to_bool ? sizeof(bool) : es;
  char *a = malloc((size_t)na * es + 1), *b = malloc((size_t)nb * es + 1);
  char *out = malloc((size_t)bc.n * os + 1);
  fill(dt, a, na, false);
  fill(dt, b, nb, op == TF__BINOP_POW);
  for (int kind = WALK_WHOLE; kind <= WALK_POOL; kind++) {
    memset(out, 0x5a, (size_t)bc.n * os);
    tf__binop_args args = {.out = out, .in = {a, b}};
    walk(fn, &bc, &args, (walk_kind)kind, pool);
    char where[200], sa_s[64], sb_s[64];
    snprintf(where, sizeof where, "op %d %s on %s and %s, walk %d", (int)op,
             tf_dtype_name(dt), tf_shape_str(&sa, sa_s, sizeof sa_s),
             tf_shape_str(&sb, sb_s, sizeof sb_s), kind);
    for (int64_t o = 0; o < bc.n; o++) {
      check_elem(op, dt, out, o, a, tt_bcast_src_index(&sa, &bc.out, o), b,
                 tt_bcast_src_index(&sb, &bc.out, o), where);
    }
  }
  free(a);
  free(b);
  free(out);
}

/* Shape pairs reaching every row variant: both operands moving, one fixed
 * (scalar, or a column repeated along rows), both fixed; [N,C] + [C] with C
 * below 64 (the tiled path, both orders, several tiles and a partial one)
 * and at 64 or more; outer products; empty. */
static void check_op_dtype(tf__binop op, tf_dtype dt, tf_threadpool *pool) {
  static const struct { int ra, rb; int64_t a[3], b[3]; } pairs[] = {
      {1, 1, {257}, {257}},        {1, 0, {257}, {0}},
      {0, 1, {0}, {257}},          {0, 0, {0}, {0}},
      {2, 1, {1500, 3}, {3}},      {1, 2, {3}, {1500, 3}},
      {2, 1, {40, 70}, {70}},      {2, 2, {40, 70}, {40, 1}},
      {2, 2, {40, 1}, {1, 70}},    {3, 2, {2, 3, 5}, {3, 1}},
      {2, 1, {0, 3}, {3}},         {3, 3, {5, 1, 4}, {5, 6, 1}},
      {2, 1, {700, 1}, {1}},
  };
  for (int k = 0; k < NELEM(pairs); k++) {
    check_pair(op, dt, tf_shape_make(pairs[k].ra, pairs[k].a),
               tf_shape_make(pairs[k].rb, pairs[k].b), pool);
  }
}

/* ---- tests ------------------------------------------------------------------- */

START_TEST(test_lookup_tables) {
  for (int op = 0; op < TF__BINOP_COUNT; op++) {
    for (int dt = 0; dt < TF_DTYPE_MAX; dt++) {
      bool num = false;
      for (int k = 0; k < NELEM(k_num); k++) {
        num |= (int)k_num[k] == dt;
      }
      bool want;
      if (is_logical((tf__binop)op)) {
        want = dt == TF_BOOL;
      } else if (op == TF__BINOP_EQUAL || op == TF__BINOP_NOT_EQUAL) {
        want = num || dt == TF_BOOL;
      } else if (op == TF__BINOP_SQUARED_DIFFERENCE) {
        want = dt == TF_FLOAT32 || dt == TF_FLOAT64 || dt == TF_INT32 ||
               dt == TF_INT64; /* TF's CPU kernels */
      } else if (op > TF__BINOP_SQUARED_DIFFERENCE) {
        want = dt == TF_FLOAT32 || dt == TF_FLOAT64; /* float-only ops */
      } else {
        want = num;
      }
      bool have = tf__binop_block_fn((tf__binop)op, (tf_dtype)dt) != NULL;
      ck_assert_msg(have == want, "op %d dtype %d: loop %s", op, dt,
                    have ? "present" : "missing");
    }
  }
  ck_assert_ptr_null(tf__binop_block_fn(TF__BINOP_COUNT, TF_FLOAT32));
  ck_assert_ptr_null(tf__binop_block_fn((tf__binop)-1, TF_FLOAT32));
  ck_assert_ptr_null(tf__binop_block_fn(TF__BINOP_ADD, TF_DTYPE_MAX));
  ck_assert_ptr_null(tf__binop_block_fn(TF__BINOP_ADD, (tf_dtype)-3));
  for (int dt = -2; dt < TF_DTYPE_MAX + 3; dt++) {
    bool num = false;
    for (int k = 0; k < NELEM(k_num); k++) {
      num |= (int)k_num[k] == dt;
    }
    ck_assert_msg((tf__clip_block_fn((tf_dtype)dt) != NULL) == num, "clip %d", dt);
    ck_assert_msg((tf__addn_fn_for((tf_dtype)dt) != NULL) == num, "addn %d", dt);
  }
}
END_TEST

static tf_threadpool *g_pool;
static void setup_pool(void) { g_pool = tf_threadpool_new(3); }
static void teardown_pool(void) { tf_threadpool_free(g_pool); }

START_TEST(test_arith_every_dtype) {
  tf_dtype dt = k_num[_i];
  for (int op = TF__BINOP_ADD; op <= TF__BINOP_MINIMUM; op++) {
    check_op_dtype((tf__binop)op, dt, g_pool);
  }
}
END_TEST

START_TEST(test_compare_every_dtype) {
  tf_dtype dt = k_num[_i];
  for (int op = TF__BINOP_GREATER; op <= TF__BINOP_NOT_EQUAL; op++) {
    check_op_dtype((tf__binop)op, dt, g_pool);
  }
}
END_TEST

START_TEST(test_bool_ops) {
  const tf__binop ops[] = {TF__BINOP_EQUAL, TF__BINOP_NOT_EQUAL,
                           TF__BINOP_LOGICAL_AND, TF__BINOP_LOGICAL_OR};
  for (int k = 0; k < 4; k++) {
    check_op_dtype(ops[k], TF_BOOL, g_pool);
  }
}
END_TEST

/* One element through a loop: x op y on dt (values as doubles or int64). */
static void one(tf__binop op, tf_dtype dt, const void *x, const void *y,
                void *out) {
  tf_shape s = tf_shape_of(1, 1);
  const tf_shape *shapes[2] = {&s, &s};
  tf_bcast bc;
  tf_status st;
  ck_assert(tf_bcast_init(&bc, 2, shapes, &st) == TF_OK);
  tf__binop_args args = {.out = out, .in = {x, y}};
  tf_bcast_run(&bc, NULL, 1, tf__binop_block_fn(op, dt), &args);
}

static int64_t one_int(tf__binop op, tf_dtype dt, int64_t x, int64_t y) {
  char a[8], b[8], o[8];
  set_int(dt, a, 0, x);
  set_int(dt, b, 0, y);
  one(op, dt, a, b, o);
  return (int64_t)get_int(dt, o, 0);
}

static double one_flt(tf__binop op, tf_dtype dt, double x, double y) {
  char a[8], b[8], o[8];
  set_flt(dt, a, 0, x);
  set_flt(dt, b, 0, y);
  one(op, dt, a, b, o);
  return get_flt(dt, o, 0);
}

/* Worked by hand: int8 and uint16 wrap around, division by zero and
 * MIN / -1 give what the header promises. */
typedef struct hand_int {
  tf__binop op;
  tf_dtype dt;
  int64_t x, y, want;
} hand_int;

static const hand_int k_hand_int[] = {
    {TF__BINOP_ADD, TF_INT8, 127, 1, -128},
    {TF__BINOP_SUB, TF_INT8, -128, 1, 127},
    {TF__BINOP_MUL, TF_INT8, 100, 3, 44},
    {TF__BINOP_MUL, TF_INT8, -128, -1, -128},
    {TF__BINOP_DIV, TF_INT8, -128, -1, -128},
    {TF__BINOP_DIV, TF_INT8, -7, 2, -3},
    {TF__BINOP_DIV, TF_INT8, 5, 0, 0},
    {TF__BINOP_FLOORDIV, TF_INT8, -128, -1, -128},
    {TF__BINOP_FLOORDIV, TF_INT8, -7, 2, -4},
    {TF__BINOP_FLOORDIV, TF_INT8, 7, -2, -4},
    {TF__BINOP_FLOORDIV, TF_INT8, 7, 0, 0},
    {TF__BINOP_TRUNCDIV, TF_INT8, -128, -1, -128},
    {TF__BINOP_TRUNCDIV, TF_INT8, -7, 2, -3},
    {TF__BINOP_TRUNCDIV, TF_INT8, 7, -2, -3},
    {TF__BINOP_TRUNCDIV, TF_INT8, 7, 0, 0},
    {TF__BINOP_FLOORMOD, TF_INT8, -128, -1, 0},
    {TF__BINOP_FLOORMOD, TF_INT8, 7, -3, -2},
    {TF__BINOP_FLOORMOD, TF_INT8, -7, 3, 2},
    {TF__BINOP_FLOORMOD, TF_INT8, -7, 0, 0},
    {TF__BINOP_TRUNCMOD, TF_INT8, -128, -1, 0},
    {TF__BINOP_TRUNCMOD, TF_INT8, 7, -3, 1},
    {TF__BINOP_TRUNCMOD, TF_INT8, -7, 3, -1},
    {TF__BINOP_TRUNCMOD, TF_INT8, -7, 0, 0},
    {TF__BINOP_POW, TF_INT8, 3, 5, -13}, /* 243 - 256 */
    {TF__BINOP_POW, TF_INT8, 2, 7, -128},
    {TF__BINOP_POW, TF_INT8, 2, 8, 0},
    {TF__BINOP_POW, TF_INT8, -1, 127, -1},
    {TF__BINOP_POW, TF_INT8, 0, 0, 1},
    {TF__BINOP_POW, TF_INT8, 1, -1, 0},
    {TF__BINOP_MAXIMUM, TF_INT8, -128, 127, 127},
    {TF__BINOP_ADD, TF_UINT16, 65535, 1, 0},
    {TF__BINOP_SUB, TF_UINT16, 0, 1, 65535},
    {TF__BINOP_MUL, TF_UINT16, 300, 300, 24464}, /* 90000 - 65536 */
    {TF__BINOP_DIV, TF_UINT16, 65535, 0, 0},
    {TF__BINOP_FLOORDIV, TF_UINT16, 65535, 2, 32767},
    {TF__BINOP_FLOORMOD, TF_UINT16, 7, 0, 0},
    {TF__BINOP_FLOORMOD, TF_UINT16, 65535, 10, 5},
    {TF__BINOP_TRUNCMOD, TF_UINT16, 65535, 10, 5},
    {TF__BINOP_TRUNCDIV, TF_UINT16, 65535, 2, 32767},
    {TF__BINOP_POW, TF_UINT16, 256, 2, 0},
    {TF__BINOP_POW, TF_UINT16, 3, 11, 46075}, /* 177147 - 131072 */
    {TF__BINOP_MINIMUM, TF_UINT16, 65535, 0, 0},
    {TF__BINOP_GREATER, TF_UINT16, 65535, 0, 1},
    {TF__BINOP_LESS, TF_INT8, -128, 127, 1},
};

START_TEST(test_hand_int8_uint16) {
  for (int k = 0; k < NELEM(k_hand_int); k++) {
    const hand_int *c = &k_hand_int[k];
    int64_t got;
    if (is_cmp(c->op)) {
      char a[8], b[8];
      bool o = false;
      set_int(c->dt, a, 0, c->x);
      set_int(c->dt, b, 0, c->y);
      one(c->op, c->dt, a, b, &o);
      got = o;
    } else {
      got = one_int(c->op, c->dt, c->x, c->y);
    }
    ck_assert_msg(got == c->want, "case %d: op %d %s(%lld, %lld) = %lld, want %lld",
                  k, (int)c->op, tf_dtype_name(c->dt), (long long)c->x,
                  (long long)c->y, (long long)got, (long long)c->want);
  }
  /* 64-bit extremes. */
  ck_assert(one_int(TF__BINOP_DIV, TF_INT64, INT64_MIN, -1) == INT64_MIN);
  ck_assert(one_int(TF__BINOP_FLOORMOD, TF_INT64, INT64_MIN, -1) == 0);
  ck_assert(one_int(TF__BINOP_TRUNCMOD, TF_INT64, INT64_MIN, -1) == 0);
  ck_assert(one_int(TF__BINOP_TRUNCDIV, TF_INT64, INT64_MIN, -1) == INT64_MIN);
  ck_assert(one_int(TF__BINOP_FLOORDIV, TF_INT64, INT64_MIN, -1) == INT64_MIN);
  /* 3^40 = 12157665459056928801: fits uint64, wraps in int64. */
  ck_assert_int_eq(one_int(TF__BINOP_POW, TF_INT64, 3, 40), -6289078614652622815LL);
  ck_assert((uint64_t)one_int(TF__BINOP_POW, TF_UINT64, 3, 40) ==
            12157665459056928801ULL);
  ck_assert_int_eq(one_int(TF__BINOP_MUL, TF_UINT64, INT64_MIN, 2), 0);
  /* uint64 compares unsigned: 2^63 > 1. */
  uint64_t big = (uint64_t)1 << 63, small = 1;
  bool gt = false;
  one(TF__BINOP_GREATER, TF_UINT64, &big, &small, &gt);
  ck_assert(gt);
}
END_TEST

START_TEST(test_hand_float_specials) {
  static const struct { tf__binop op; double x, y, want; } c[] = {
      {TF__BINOP_ADD, NAN, 1, NAN},
      {TF__BINOP_SUB, INFINITY, INFINITY, NAN},
      {TF__BINOP_DIV, 1, 0, INFINITY},
      {TF__BINOP_DIV, -1, 0, -INFINITY},
      {TF__BINOP_DIV, 0, 0, NAN},
      {TF__BINOP_FLOORDIV, -7, 2, -4},
      {TF__BINOP_FLOORDIV, 1, 0, INFINITY},
      {TF__BINOP_FLOORDIV, 0, 0, NAN},
      {TF__BINOP_TRUNCDIV, -7, 2, -3},
      {TF__BINOP_TRUNCDIV, 7, -2, -3},
      {TF__BINOP_TRUNCDIV, -1, 0, -INFINITY},
      {TF__BINOP_FLOORMOD, -7, 2, 1},
      {TF__BINOP_FLOORMOD, 7, -2, -1},
      {TF__BINOP_FLOORMOD, 5, INFINITY, 5},
      {TF__BINOP_FLOORMOD, -5, INFINITY, INFINITY}, /* fmod -5, then + y */
      {TF__BINOP_FLOORMOD, 5, 0, NAN},
      {TF__BINOP_TRUNCMOD, -7, 2, -1},
      {TF__BINOP_TRUNCMOD, 7, -2, 1},
      {TF__BINOP_TRUNCMOD, -5, INFINITY, -5},
      {TF__BINOP_TRUNCMOD, 5, 0, NAN},
      {TF__BINOP_TRUNCMOD, INFINITY, 2, NAN},
      {TF__BINOP_POW, -8, 1.0 / 3, NAN},
      {TF__BINOP_POW, 0, -1, INFINITY},
      {TF__BINOP_POW, NAN, 0, 1},
      {TF__BINOP_POW, 1, NAN, 1},
      {TF__BINOP_MAXIMUM, NAN, 1, NAN},
      {TF__BINOP_MAXIMUM, 1, NAN, NAN},
      {TF__BINOP_MINIMUM, -INFINITY, NAN, NAN},
      {TF__BINOP_MINIMUM, -INFINITY, 3, -INFINITY},
  };
  for (int d = 0; d < 2; d++) {
    tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
    for (int k = 0; k < NELEM(c); k++) {
      double got = one_flt(c[k].op, dt, c[k].x, c[k].y);
      ck_assert_msg(isnan(c[k].want) ? isnan(got) : got == c[k].want,
                    "case %d %s: op %d(%g, %g) = %g, want %g", k,
                    tf_dtype_name(dt), (int)c[k].op, c[k].x, c[k].y, got,
                    c[k].want);
    }
    /* Ties give the second operand: the sign of zero shows it. */
    ck_assert(signbit(one_flt(TF__BINOP_MAXIMUM, dt, 0.0, -0.0)));
    ck_assert(!signbit(one_flt(TF__BINOP_MINIMUM, dt, -0.0, 0.0)));
  }
}
END_TEST

/* ---- ClipByValue ---------------------------------------------------------------- */

/* TF's order (Eigen's cwiseMin(hi).cwiseMax(lo)): lo wins when lo > hi, NaN
 * t stays NaN, NaN bounds are ignored. */
static double ref_clip_flt(double x, double lo, double hi) {
  if (isnan(x)) {
    return x;
  }
  double v = isnan(hi) ? x : fmin(x, hi);
  return isnan(lo) ? v : fmax(v, lo);
}

static void check_clip(tf_dtype dt, tf_shape st_, bool lo_full, bool hi_full) {
  tf_shape ss = tf_shape_scalar();
  tf_shape sl = lo_full ? st_ : ss, sh = hi_full ? st_ : ss;
  const tf_shape *shapes[3] = {&st_, &sl, &sh};
  tf_bcast bc;
  tf_status status;
  ck_assert(tf_bcast_init(&bc, 3, shapes, &status) == TF_OK);
  int64_t n = tf_shape_num_elements(&st_);
  int64_t nl = lo_full ? n : 1, nh = hi_full ? n : 1;
  size_t es = tf_dtype_size(dt);
  char *t = malloc((size_t)n * es + 1), *lo = malloc((size_t)nl * es),
       *hi = malloc((size_t)nh * es), *out = malloc((size_t)n * es + 1);
  fill(dt, t, n, false);
  fill(dt, lo, nl, false);
  fill(dt, hi, nh, false);
  tf__binop_args args = {.out = out, .in = {t, lo, hi}};
  walk(tf__clip_block_fn(dt), &bc, &args, WALK_PIECES, NULL);
  for (int64_t i = 0; i < n; i++) {
    int64_t il = lo_full ? i : 0, ih = hi_full ? i : 0;
    bool ok;
    if (is_flt(dt)) {
      double want = ref_clip_flt(get_flt(dt, t, i), get_flt(dt, lo, il),
                                 get_flt(dt, hi, ih));
      double got = get_flt(dt, out, i);
      ok = isnan(want) ? isnan(got) : got == want;
    } else {
      i128 x = get_int(dt, t, i), l = get_int(dt, lo, il), h = get_int(dt, hi, ih);
      i128 v = x < h ? x : h;
      ok = get_int(dt, out, i) == (v > l ? v : l);
    }
    if (!ok) {
      ck_abort_msg("clip %s element %lld (lo %s, hi %s)", tf_dtype_name(dt),
                   (long long)i, lo_full ? "full" : "scalar",
                   hi_full ? "full" : "scalar");
    }
  }
  free(t);
  free(lo);
  free(hi);
  free(out);
}

START_TEST(test_clip_every_dtype) {
  for (int k = 0; k < NELEM(k_num); k++) {
    for (int m = 0; m < 4; m++) {
      check_clip(k_num[k], SHAPE(301), m & 1, m & 2);
      check_clip(k_num[k], SHAPE(7, 45), m & 1, m & 2);
    }
  }
}
END_TEST

/* ---- AddN --------------------------------------------------------------------- */

/* Sums in[0..n) over [begin, end) into out (separate, in[0] as the AddN
 * kernel forwards it, or in[1]) and checks: the left-to-right sum, each
 * addition rounded to the dtype (ints wrap), and nothing outside the range
 * written. (out = in[j] for j >= 2 is not supported: the running sum would
 * overwrite in[j] before it is added; the kernel never asks for that.) */
static void check_addn(tf_dtype dt, int n, int alias) {
  enum { L = 5000, BEGIN = 100, END = 4900 }; /* ADDN_CHUNK is 2048 */
  size_t es = tf_dtype_size(dt);
  char *in[8], *want = malloc(L * es), *sep = malloc(L * es);
  for (int j = 0; j < n; j++) {
    in[j] = malloc(L * es);
    fill(dt, in[j], L, false);
  }
  for (int64_t i = 0; i < L; i++) {
    if (is_flt(dt)) {
      double acc = get_flt(dt, in[0], i);
      for (int j = 1; j < n; j++) {
        acc = rnd(dt, acc + get_flt(dt, in[j], i));
      }
      set_flt(dt, want, i, acc);
    } else {
      i128 acc = 0;
      for (int j = 0; j < n; j++) {
        acc += get_int(dt, in[j], i);
      }
      set_int(dt, want, i, acc);
    }
  }
  char *out = alias == 0 ? sep : alias == 1 ? in[0] : in[1];
  char *before = malloc(L * es);
  memcpy(before, out, L * es);
  const void *ins[8];
  for (int j = 0; j < n; j++) {
    ins[j] = in[j];
  }
  tf__addn_fn_for(dt)(out, ins, n, BEGIN, END);
  for (int64_t i = 0; i < L; i++) {
    const char *w = i >= BEGIN && i < END ? want : before;
    bool ok = memcmp(out + i * (int64_t)es, w + i * (int64_t)es, es) == 0;
    if (!ok && is_flt(dt)) { /* NaN payloads may differ */
      ok = isnan(get_flt(dt, out, i)) && isnan(get_flt(dt, w, i));
    }
    if (!ok) {
      ck_abort_msg("AddN %s n=%d alias %d: element %lld", tf_dtype_name(dt), n,
                   alias, (long long)i);
    }
  }
  for (int j = 0; j < n; j++) {
    free(in[j]);
  }
  free(want);
  free(sep);
  free(before);
}

START_TEST(test_addn_every_dtype) {
  static const int counts[] = {1, 2, 3, 7};
  for (int k = 0; k < NELEM(k_num); k++) {
    for (int c = 0; c < NELEM(counts); c++) {
      for (int alias = 0; alias < (counts[c] > 1 ? 3 : 2); alias++) {
        check_addn(k_num[k], counts[c], alias);
      }
    }
  }
}
END_TEST

/* ---- divisor scans ------------------------------------------------------------ */

START_TEST(test_divisor_scans) {
  for (int k = 0; k < NELEM(k_num); k++) {
    tf_dtype dt = k_num[k];
    tf_tensor *t = tt_rand(dt, SHAPE(1000), 1, 100);
    ck_assert(!tf__tensor_has_zero(t));
    ck_assert(!tf__tensor_has_negative(t));
    size_t es = tf_dtype_size(dt);
    memset((char *)t->data + 999 * es, 0, es); /* a zero, last */
    ck_assert_int_eq(tf__tensor_has_zero(t), !is_flt(dt));
    memset((char *)t->data + 999 * es, 0xff, es); /* -1, NaN or the max */
    ck_assert(!tf__tensor_has_zero(t));
    ck_assert_int_eq(tf__tensor_has_negative(t),
                     !is_flt(dt) && tf_dtype_is_signed(dt));
    tf_tensor_unref(t);
    tf_tensor *e = tt_rand(dt, SHAPE(0), 0, 0);
    ck_assert(!tf__tensor_has_zero(e) && !tf__tensor_has_negative(e));
    tf_tensor_unref(e);
  }
  tf_tensor *b = tt_tensor(TF_BOOL, SHAPE(2), (double[]){0, 0});
  ck_assert(!tf__tensor_has_zero(b));
  tf_tensor_unref(b);
  /* Only the top bit set: a large uint64, the most negative int64. */
  tf_tensor *u = tt_tensor_i(TF_UINT64, SHAPE(1), (int64_t[]){INT64_MIN});
  tf_tensor *s = tt_tensor_i(TF_INT64, SHAPE(1), (int64_t[]){INT64_MIN});
  ck_assert(!tf__tensor_has_negative(u) && tf__tensor_has_negative(s));
  tt_free((tf_tensor *[]){u, s}, 2);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_math_binary_loops");
  TCase *tl = tcase_create("loops");
  tcase_add_checked_fixture(tl, setup_pool, teardown_pool);
  tcase_add_test(tl, test_lookup_tables);
  tcase_add_loop_test(tl, test_arith_every_dtype, 0, NELEM(k_num));
  tcase_add_loop_test(tl, test_compare_every_dtype, 0, NELEM(k_num));
  tcase_add_test(tl, test_bool_ops);
  tcase_add_test(tl, test_hand_int8_uint16);
  tcase_add_test(tl, test_hand_float_specials);
  suite_add_tcase(s, tl);
  TCase *to = tcase_create("clip_addn_scans");
  tcase_add_test(to, test_clip_every_dtype);
  tcase_add_test(to, test_addn_every_dtype);
  tcase_add_test(to, test_divisor_scans);
  suite_add_tcase(s, to);
  return s;
}
