/* cpu_scan.c: CPU kernels for Cumsum and Cumprod over float32, float64,
 * int32 and int64, with TensorFlow's exclusive and reverse attrs.
 *
 * The input is viewed as [outer, d, inner] around the scan axis; each task
 * scans one outer slice over a block of up to SCAN_CB inner columns,
 * walking the d rows forwards (or backwards for reverse) and keeping one
 * running accumulator per column, so the inner loop is contiguous and
 * vectorises. exclusive writes the accumulator before adding the row, so
 * the first output is the identity (0 or 1). Accuracy: float32 runs
 * accumulate in float64 and round each output once; integers wrap modulo
 * 2^bits like TensorFlow's. */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

#define SCAN_CB 256 /* inner columns per task */

typedef struct scan_job {
  const char *x;
  char *y;
  int64_t es, outer, d, inner, ncb;
  bool exclusive, reverse;
  void (*fn)(const struct scan_job *j, int64_t o, int64_t j0, int64_t jn);
} scan_job;

#define SCAN_ADD(a, b) ((a) + (b))
#define SCAN_MUL(a, b) ((a) * (b))

/* Scans columns [j0, j0 + jn) of outer slice o with accumulators of A. */
#define SCAN_IMPL(name, T, A, INIT, OP)                                        \
  static void name(const scan_job *j, int64_t o, int64_t j0, int64_t jn) {     \
    A acc[SCAN_CB];                                                            \
    for (int64_t c = 0; c < jn; c++) {                                         \
      acc[c] = INIT;                                                           \
    }                                                                          \
    const T *x = (const T *)j->x + o * j->d * j->inner + j0;                   \
    T *y = (T *)j->y + o * j->d * j->inner + j0;                               \
    for (int64_t k = 0; k < j->d; k++) {                                       \
      int64_t i = j->reverse ? j->d - 1 - k : k;                               \
      const T *restrict xr = x + i * j->inner;                                 \
      T *restrict yr = y + i * j->inner;                                       \
      if (j->exclusive) {                                                      \
        for (int64_t c = 0; c < jn; c++) {                                     \
          yr[c] = (T)acc[c];                                                   \
          acc[c] = OP(acc[c], (A)xr[c]);                                       \
        }                                                                      \
      } else {                                                                 \
        for (int64_t c = 0; c < jn; c++) {                                     \
          acc[c] = OP(acc[c], (A)xr[c]);                                       \
          yr[c] = (T)acc[c];                                                   \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

SCAN_IMPL(f32_cumsum, float, double, 0.0, SCAN_ADD)
SCAN_IMPL(f32_cumprod, float, double, 1.0, SCAN_MUL)
SCAN_IMPL(f64_cumsum, double, double, 0.0, SCAN_ADD)
SCAN_IMPL(f64_cumprod, double, double, 1.0, SCAN_MUL)
SCAN_IMPL(i32_cumsum, int32_t, uint32_t, 0u, SCAN_ADD)
SCAN_IMPL(i32_cumprod, int32_t, uint32_t, 1u, SCAN_MUL)
SCAN_IMPL(i64_cumsum, int64_t, uint64_t, 0u, SCAN_ADD)
SCAN_IMPL(i64_cumprod, int64_t, uint64_t, 1u, SCAN_MUL)

static void scan_range(void *arg, int64_t t0, int64_t t1) {
  const scan_job *j = arg;
  for (int64_t t = t0; t < t1; t++) {
    int64_t o = t / j->ncb, j0 = (t % j->ncb) * SCAN_CB;
    j->fn(j, o, j0, TF_MIN(SCAN_CB, j->inner - j0));
  }
}

typedef struct scan_state {
  bool is_prod, exclusive, reverse;
} scan_state;

static tf_code scan_init(const tf_node *node, bool is_prod, void **state,
                         tf_status *st) {
  scan_state *s = tf__xcalloc(1, sizeof *s);
  s->is_prod = is_prod;
  if (tf_node_attr_get_bool(node, "exclusive", &s->exclusive, st) != TF_OK ||
      tf_node_attr_get_bool(node, "reverse", &s->reverse, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code cumsum_init(const tf_node *node, void **state, tf_status *st) {
  return scan_init(node, false, state, st);
}

static tf_code cumprod_init(const tf_node *node, void **state, tf_status *st) {
  return scan_init(node, true, state, st);
}

/* The loop for dtype dt, or NULL when there is none. */
static void (*scan_fn(tf_dtype dt, bool is_prod))(const scan_job *, int64_t,
                                                  int64_t, int64_t) {
  switch (dt) {
  case TF_FLOAT32: return is_prod ? f32_cumprod : f32_cumsum;
  case TF_FLOAT64: return is_prod ? f64_cumprod : f64_cumsum;
  case TF_INT32: return is_prod ? i32_cumprod : i32_cumsum;
  case TF_INT64: return is_prod ? i64_cumprod : i64_cumsum;
  default: return NULL;
  }
}

static tf_code scan_compute(tf_kernel_ctx *ctx) {
  const scan_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0], *axis = ctx->inputs[1];
  char buf[96];
  scan_job j = {.fn = scan_fn(x->dtype, s->is_prod)};
  if (j.fn == NULL) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU kernel for x of %s",
                           tf_dtype_name(x->dtype));
  }
  if (axis->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "axis must be a scalar, not shape %s",
                           tf_shape_str(&axis->shape, buf, sizeof(buf)));
  }
  int rank = x->shape.rank;
  int64_t a = tf_tensor_get_i64(axis, 0);
  if (a < -rank || a >= rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Expected scan axis in the range [%d, %d), but "
                           "got %" PRId64, -rank, rank, a);
  }
  a = a < 0 ? a + rank : a;
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  j.x = x->data;
  j.y = y->data;
  j.es = (int64_t)tf_dtype_size(x->dtype);
  j.exclusive = s->exclusive;
  j.reverse = s->reverse;
  j.outer = j.inner = 1;
  j.d = x->shape.dims[a];
  for (int k = 0; k < rank; k++) {
    if (k != a) {
      *(k < a ? &j.outer : &j.inner) *= x->shape.dims[k];
    }
  }
  j.ncb = (j.inner + SCAN_CB - 1) / SCAN_CB;
  int64_t work = j.d * TF_MIN(j.inner, SCAN_CB);
  tf_parallel_for(ctx->pool, j.outer * j.ncb,
                  TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(1, work)), scan_range,
                  &j);
  return TF_OK;
}

#define SCAN_KERNEL(op, init, dt)                                              \
  {op, TF_DEVICE_CPU, dt, NULL, init, scan_compute, NULL, free, 0}
#define SCAN_KERNELS(op, init)                                                 \
  SCAN_KERNEL(op, init, TF_FLOAT32), SCAN_KERNEL(op, init, TF_FLOAT64),        \
      SCAN_KERNEL(op, init, TF_INT32), SCAN_KERNEL(op, init, TF_INT64)

static const tf_kernel_def scan_kernels[] = {
    SCAN_KERNELS("Cumsum", cumsum_init),
    SCAN_KERNELS("Cumprod", cumprod_init),
};

TF_REGISTER_KERNELS(scan_kernels)
