/* cpu_random.c: CPU kernels for the stateful random ops (RandomUniform,
 * RandomStandardNormal / RandomNormal, TruncatedNormal, RandomUniformInt,
 * RandomShuffle) on the Philox generator of lib/core/base/philox.h.
 *
 * As TF's GuardedPhiloxRandom, a kernel instance keeps its seeded base
 * generator and an atomic count of the blocks handed out: each compute
 * reserves a fresh range (256 blocks per output element) with one fetch-add,
 * so successive runs continue the stream and concurrent runs never share
 * one. Output group g always uses the blocks at offset g of that range, so
 * values do not depend on how the pool splits the work. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/philox.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_index.h"
#include "lib/devices/cpu/cpu_random.h"

/* Output groups per pool chunk, at least. */
#define UNIFORM_GRAIN_GROUPS 4096
#define NORMAL_GRAIN_GROUPS 1024


/* 128 fresh bits from the kernel's entropy pool, for unseeded ops. */
static tf_code random_seed_pair(uint64_t out[2], tf_status *st) {
  size_t got = 0;
  while (got < 16) {
    ssize_t r = getrandom((char *)out + got, 16 - got, 0);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return tf_status_set(st, TF_INTERNAL, "getrandom failed: %s",
                           strerror(errno));
    }
    got += (size_t)r;
  }
  return TF_OK;
}

tf_code tf__cpu_rng_init(tf__cpu_rng *r, const tf_node *node, tf_status *st) {
  int64_t seed, seed2;
  TF_TRY(tf_node_attr_get_int(node, "seed", &seed, st));
  TF_TRY(tf_node_attr_get_int(node, "seed2", &seed2, st));
  uint64_t s[2] = {(uint64_t)seed, (uint64_t)seed2};
  if (seed == 0 && seed2 == 0) {
    TF_TRY(random_seed_pair(s, st));
  }
  tf_philox_init(&r->base, s[0], s[1]);
  atomic_init(&r->reserved, 0);
  return TF_OK;
}

tf_philox tf__cpu_rng_reserve(tf__cpu_rng *r, uint64_t blocks) {
  uint64_t off = atomic_fetch_add_explicit(&r->reserved, blocks,
                                           memory_order_relaxed);
  tf_philox g = r->base;
  tf_philox_skip(&g, off);
  return g;
}

static tf_code rng_init(const tf_node *node, void **state, tf_status *st) {
  tf__cpu_rng *r = tf__xcalloc(1, sizeof(*r));
  if (tf__cpu_rng_init(r, node, st) != TF_OK) {
    free(r);
    return st->code;
  }
  *state = r;
  return TF_OK;
}

/* A generator positioned at a freshly reserved range of `blocks` blocks. */
static tf_philox rng_reserve(tf_kernel_ctx *ctx, uint64_t blocks) {
  /* the counter is the one mutable field */
  return tf__cpu_rng_reserve((tf__cpu_rng *)ctx->state, blocks);
}

/* Output shape from a 1-D int32/int64 "shape" tensor. */
static tf_code shape_from_tensor(tf_kernel_ctx *ctx, const tf_tensor *t,
                                 tf_shape *s) {
  char buf[96];
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape must be a vector of {int32,int64}, got "
                           "shape %s", tf_shape_str(&t->shape, buf, sizeof(buf)));
  }
  if (t->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "shape has %" PRId64 " dims; at most %d allowed",
                           t->n, TF_MAX_RANK);
  }
  s->rank = (int32_t)t->n;
  for (int i = 0; i < s->rank; i++) {
    s->dims[i] = tf_tensor_get_i64(t, i);
    if (s->dims[i] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "shape[%d] = %" PRId64 " must be >= 0", i,
                             s->dims[i]);
    }
  }
  return TF_OK;
}

/* ---- fills ---------------------------------------------------------------- */

typedef struct fill_args {
  tf_philox base; /* start of the reserved range */
  void *out;
  int64_t n;      /* output elements */
  int64_t lo;     /* integer draws: lo + bits % range */
  uint64_t range;
} fill_args;

/* Groups [g0, g1) of a distribution that consumes one block per group of
 * GROUP values: group g reads block g of the range. Whole groups go through
 * the vectorised batch generator; the last group may be cut short by n.
 * CONVERT(w, v, a) turns the four words w into the GROUP values at v. */
#define DEFINE_FILL(NAME, T, GROUP, CONVERT)                                   \
  static void fill_##NAME(void *arg, int64_t g0, int64_t g1) {                \
    const fill_args *a = arg;                                                  \
    tf_philox gen = a->base;                                                   \
    tf_philox_skip(&gen, (uint64_t)g0);                                        \
    T *restrict o = a->out;                                                    \
    const int64_t full = TF_MIN(g1, a->n / GROUP);                             \
    int64_t g = g0;                                                            \
    for (; g + TF_PHILOX_BATCH <= full; g += TF_PHILOX_BATCH) {                \
      uint32_t w[4][TF_PHILOX_BATCH];                                          \
      tf_philox_next_batch(&gen, w);                                           \
      for (int i = 0; i < TF_PHILOX_BATCH; i++) {                              \
        const uint32_t b[4] = {w[0][i], w[1][i], w[2][i], w[3][i]};            \
        CONVERT(b, o + (g + i) * GROUP, a);                                    \
      }                                                                        \
    }                                                                          \
    for (; g < g1; g++) {                                                      \
      uint32_t b[4];                                                           \
      T v[GROUP];                                                              \
      tf_philox_next(&gen, b);                                                 \
      CONVERT(b, v, a);                                                        \
      int64_t off = g * GROUP, m = TF_MIN((int64_t)GROUP, a->n - off);         \
      memcpy(o + off, v, (size_t)m * sizeof(T));                               \
    }                                                                          \
  }

/* Group conversions, as TF's distributions (see philox.h). */
#define CONV_UNIFORM_F32(w, v, a)                                              \
  do {                                                                         \
    for (int k = 0; k < 4; k++) {                                              \
      (v)[k] = tf_philox_u32_to_float((w)[k]);                                 \
    }                                                                          \
  } while (0)
#define CONV_UNIFORM_F64(w, v, a)                                              \
  do {                                                                         \
    (v)[0] = tf_philox_u64_to_double((w)[0], (w)[1]);                          \
    (v)[1] = tf_philox_u64_to_double((w)[2], (w)[3]);                          \
  } while (0)
#define CONV_NORMAL_F32(w, v, a)                                               \
  do {                                                                         \
    tf_philox_box_muller_f32((w)[0], (w)[1], &(v)[0], &(v)[1]);                \
    tf_philox_box_muller_f32((w)[2], (w)[3], &(v)[2], &(v)[3]);                \
  } while (0)
#define CONV_NORMAL_F64(w, v, a)                                               \
  tf_philox_box_muller_f64((w)[0], (w)[1], (w)[2], (w)[3], &(v)[0], &(v)[1])
#define CONV_INT_I32(w, v, a)                                                  \
  do {                                                                         \
    for (int k = 0; k < 4; k++) {                                              \
      (v)[k] = (int32_t)((uint32_t)(a)->lo + (w)[k] % (uint32_t)(a)->range);   \
    }                                                                          \
  } while (0)
#define CONV_INT_I64(w, v, a)                                                  \
  do {                                                                         \
    for (int k = 0; k < 2; k++) {                                              \
      uint64_t bits = (uint64_t)(w)[2 * k] | (uint64_t)(w)[2 * k + 1] << 32;   \
      (v)[k] = (int64_t)((uint64_t)(a)->lo + bits % (a)->range);               \
    }                                                                          \
  } while (0)

DEFINE_FILL(uniform_f32, float, 4, CONV_UNIFORM_F32)
DEFINE_FILL(uniform_f64, double, 2, CONV_UNIFORM_F64)
DEFINE_FILL(normal_f32, float, 4, CONV_NORMAL_F32)
DEFINE_FILL(normal_f64, double, 2, CONV_NORMAL_F64)
DEFINE_FILL(int_i32, int32_t, 4, CONV_INT_I32)
DEFINE_FILL(int_i64, int64_t, 2, CONV_INT_I64)

/* Truncated normal: group g owns blocks [g * SKIP, (g + 1) * SKIP) of the
 * range and draws single words from there until it has GROUP values. */
#define DEFINE_FILL_TRUNC(NAME, T, GROUP, SKIP, DRAW)                          \
  static void fill_##NAME(void *arg, int64_t g0, int64_t g1) {                \
    const fill_args *a = arg;                                                  \
    T *restrict o = a->out;                                                    \
    for (int64_t g = g0; g < g1; g++) {                                        \
      tf_philox gen = a->base;                                                 \
      tf_philox_skip(&gen, (uint64_t)g * (SKIP));                              \
      tf_philox_single single;                                                 \
      tf_philox_single_init(&single, &gen);                                    \
      T v[GROUP];                                                              \
      DRAW(&single, v);                                                        \
      int64_t off = g * GROUP, m = TF_MIN((int64_t)GROUP, a->n - off);         \
      memcpy(o + off, v, (size_t)m * sizeof(T));                               \
    }                                                                          \
  }
DEFINE_FILL_TRUNC(trunc_f32, float, 4, TF_PHILOX_TRUNC_SKIP_F32,
                  tf_philox_truncated_normal_f32)
DEFINE_FILL_TRUNC(trunc_f64, double, 2, TF_PHILOX_TRUNC_SKIP_F64,
                  tf_philox_truncated_normal_f64)

/* Reserves TF's 256 blocks per element and fills out in groups of group. */
static void run_fill(tf_kernel_ctx *ctx, tf_tensor *out, int group,
                     int64_t grain, tf_range_fn fn, fill_args *a) {
  a->base = rng_reserve(ctx, (uint64_t)out->n * TF_PHILOX_RESERVED_PER_OUTPUT);
  a->out = out->data;
  a->n = out->n;
  int64_t groups = (out->n + group - 1) / group;
  tf_parallel_for(ctx->pool, groups, grain, fn, a);
}

/* ---- float distributions --------------------------------------------------- */

enum { DIST_UNIFORM, DIST_NORMAL, DIST_TRUNCATED };

static tf_code random_float(tf_kernel_ctx *ctx, int dist) {
  tf_shape s;
  TF_TRY(shape_from_tensor(ctx, ctx->inputs[0], &s));
  tf_dtype dt = ctx->def->dtype;
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &s, &out));
  if (out->n == 0) {
    return TF_OK;
  }
  static const tf_range_fn fns[3][2] = {
      {fill_uniform_f32, fill_uniform_f64},
      {fill_normal_f32, fill_normal_f64},
      {fill_trunc_f32, fill_trunc_f64}};
  bool f64 = dt == TF_FLOAT64;
  int group = f64 ? TF_PHILOX_GROUP_F64 : TF_PHILOX_GROUP_F32;
  int64_t grain = dist == DIST_UNIFORM ? UNIFORM_GRAIN_GROUPS
                                       : NORMAL_GRAIN_GROUPS;
  fill_args a = {0};
  run_fill(ctx, out, group, grain, fns[dist][f64], &a);
  return TF_OK;
}

static tf_code random_uniform_compute(tf_kernel_ctx *ctx) {
  return random_float(ctx, DIST_UNIFORM);
}

static tf_code random_normal_compute(tf_kernel_ctx *ctx) {
  return random_float(ctx, DIST_NORMAL);
}

static tf_code truncated_normal_compute(tf_kernel_ctx *ctx) {
  return random_float(ctx, DIST_TRUNCATED);
}

/* ---- RandomUniformInt ------------------------------------------------------- */

static tf_code random_uniform_int_compute(tf_kernel_ctx *ctx) {
  static const char *const names[3] = {"shape", "minval", "maxval"};
  char buf[96];
  for (int i = 1; i < 3; i++) {
    const tf_tensor *t = ctx->inputs[i];
    if (t->shape.rank != 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s must be 0-D, got shape %s", names[i],
                             tf_shape_str(&t->shape, buf, sizeof(buf)));
    }
  }
  tf_shape s;
  TF_TRY(shape_from_tensor(ctx, ctx->inputs[0], &s));
  tf_dtype dt = ctx->inputs[1]->dtype;
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &s, &out));
  if (out->n == 0) {
    return TF_OK; /* as TF: an empty draw needs no valid range */
  }
  int64_t lo = tf_tensor_get_i64(ctx->inputs[1], 0);
  int64_t hi = tf_tensor_get_i64(ctx->inputs[2], 0);
  if (lo >= hi) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Need minval < maxval: %" PRId64 " >= %" PRId64, lo,
                           hi);
  }
  fill_args a = {.lo = lo, .range = (uint64_t)hi - (uint64_t)lo};
  bool i64 = dt == TF_INT64;
  run_fill(ctx, out, i64 ? 2 : 4, UNIFORM_GRAIN_GROUPS,
           i64 ? fill_int_i64 : fill_int_i32, &a);
  return TF_OK;
}

/* ---- RandomShuffle ---------------------------------------------------------- */

/* TF's RandomShuffle: for i in [0, n - 1), swap perm[i] with
 * perm[i + uniform(n - i)], one 32-bit word per draw (two, high word first,
 * when n does not fit in int32). */
static void shuffle_perm(tf_kernel_ctx *ctx, int64_t *perm, int64_t n) {
  bool wide = n >= INT32_MAX;
  uint64_t words = (uint64_t)(n - 1) * (wide ? 2 : 1);
  tf_philox gen = rng_reserve(ctx, (words + 3) / 4);
  tf_philox_single single;
  tf_philox_single_init(&single, &gen);
  for (int64_t i = 0; i < n; i++) {
    perm[i] = i;
  }
  for (int64_t i = 0; i + 1 < n; i++) {
    uint64_t left = (uint64_t)(n - i), r;
    if (wide) {
      uint64_t hi = tf_philox_single_next(&single);
      r = ((hi << 32) | tf_philox_single_next(&single)) % left;
    } else {
      r = tf_philox_single_next(&single) % (uint32_t)left;
    }
    int64_t t = perm[i];
    perm[i] = perm[i + (int64_t)r];
    perm[i + (int64_t)r] = t;
  }
}

typedef struct shuffle_args {
  const int64_t *perm;
  const char *src;
  char *dst;
  size_t rb;
} shuffle_args;

static void shuffle_rows(void *arg, int64_t r0, int64_t r1) {
  const shuffle_args *a = arg;
  const size_t rb = a->rb;
  if (rb == 4) {
    for (int64_t r = r0; r < r1; r++) {
      memcpy(a->dst + r * 4, a->src + a->perm[r] * 4, 4);
    }
  } else {
    for (int64_t r = r0; r < r1; r++) {
      memcpy(a->dst + (size_t)r * rb, a->src + (size_t)a->perm[r] * rb, rb);
    }
  }
}

static tf_code shuffle_copy(tf_kernel_ctx *ctx, const tf_tensor *in,
                            const int64_t *perm, tf_tensor *out) {
  int64_t rows = in->shape.dims[0], inner = in->n / rows;
  if (in->dtype == TF_STRING) {
    for (int64_t r = 0; r < rows; r++) {
      TF_TRY(tf__copy_elems(ctx, out, r * inner, in, perm[r] * inner, inner));
    }
    return TF_OK;
  }
  shuffle_args a = {.perm = perm, .src = in->data, .dst = out->data,
                    .rb = (size_t)inner * tf_dtype_size(in->dtype)};
  int64_t grain = TF_MAX(1, (int64_t)((256 * 1024) / a.rb));
  tf_parallel_for(ctx->pool, rows, grain, shuffle_rows, &a);
  return TF_OK;
}

static tf_code random_shuffle_compute(tf_kernel_ctx *ctx) {
  tf_tensor *in = ctx->inputs[0];
  if (in->n <= 1 || in->shape.dims[0] <= 1) {
    tf_kernel_set_output(ctx, 0, in); /* nothing to permute */
    return TF_OK;
  }
  int64_t rows = in->shape.dims[0];
  int64_t *perm = malloc((size_t)rows * sizeof(int64_t));
  if (perm == NULL) {
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED,
                           "no memory for a permutation of %" PRId64 " rows",
                           rows);
  }
  tf_tensor *out;
  tf_code rc = tf_kernel_alloc_output(ctx, 0, in->dtype, &in->shape, &out);
  if (rc == TF_OK) {
    shuffle_perm(ctx, perm, rows);
    rc = shuffle_copy(ctx, in, perm, out);
  }
  free(perm);
  return rc;
}

/* ---- registration ---------------------------------------------------------- */

#define RANDOM_FLOAT_KERNELS(op_name, fn)                                      \
  {.op = op_name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,           \
   .type_attr = "dtype", .init = rng_init, .compute = fn, .free_state = free}, \
  {.op = op_name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,           \
   .type_attr = "dtype", .init = rng_init, .compute = fn, .free_state = free}

static const tf_kernel_def random_kernels[] = {
    RANDOM_FLOAT_KERNELS("RandomUniform", random_uniform_compute),
    RANDOM_FLOAT_KERNELS("RandomStandardNormal", random_normal_compute),
    RANDOM_FLOAT_KERNELS("RandomNormal", random_normal_compute),
    RANDOM_FLOAT_KERNELS("TruncatedNormal", truncated_normal_compute),
    {.op = "RandomUniformInt", .device_type = TF_DEVICE_CPU,
     .dtype = TF_INT32, .type_attr = "Tout", .init = rng_init,
     .compute = random_uniform_int_compute, .free_state = free},
    {.op = "RandomUniformInt", .device_type = TF_DEVICE_CPU,
     .dtype = TF_INT64, .type_attr = "Tout", .init = rng_init,
     .compute = random_uniform_int_compute, .free_state = free},
    {.op = "RandomShuffle", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .type_attr = "T", .init = rng_init,
     .compute = random_shuffle_compute, .free_state = free},
};

TF_REGISTER_KERNELS(random_kernels)
