/* cpu_math_binary_misc.c: CPU kernels of Select, AddN, BiasAdd and
 * ClipByValue, the math_binary ops that are not plain broadcasting pairs.
 *
 * Each checks its own shape rule (TF's, stricter than NumPy's), then maps
 * the work onto the broadcast walker of cpu_broadcast.h: BiasAdd is an Add
 * with the bias viewed as [C] or [C,1,..,1], ClipByValue a three-operand
 * walk, Select a three-operand walk keyed by element size. */
#include "lib/devices/cpu/cpu_math_binary.h"

TF__VECTORIZE /* see cpu_math_binary.h */

#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_broadcast.h"

typedef struct typed_state {
  tf_dtype dt;
  tf_bcast_block_fn fn; /* Add loop (BiasAdd) or clip loop (ClipByValue) */
  tf__addn_fn addn;     /* AddN */
  bool nchw;            /* BiasAdd data_format */
} typed_state;

static tf_code typed_init(const tf_node *node, void **state, tf_status *st) {
  const char *op = tf_node_op(node);
  typed_state s = {0};
  TF_TRY(tf_node_attr_get_type(node, "T", &s.dt, st));
  if (strcmp(op, "AddN") == 0) {
    s.addn = tf__addn_fn_for(s.dt);
  } else if (strcmp(op, "ClipByValue") == 0) {
    s.fn = tf__clip_block_fn(s.dt);
  } else {
    s.fn = tf__binop_block_fn(TF__BINOP_ADD, s.dt);
    const tf_attr_value *df = tf_node_attr(node, "data_format");
    s.nchw = df != NULL && df->type == TF_ATTR_STRING &&
             strcmp(df->u.s, "NCHW") == 0;
  }
  if (s.fn == NULL && s.addn == NULL) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         "'%s': no CPU kernel for %s with T=%s",
                         tf_node_name(node), op, tf_dtype_name(s.dt));
  }
  typed_state *p = tf__xmalloc(sizeof(*p));
  *p = s;
  *state = p;
  return TF_OK;
}

static tf_code check_dtype(tf_kernel_ctx *ctx, int i, tf_dtype dt) {
  if (ctx->inputs[i]->dtype != dt) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input %d is %s, expected %s", i,
                           tf_dtype_name(ctx->inputs[i]->dtype),
                           tf_dtype_name(dt));
  }
  return TF_OK;
}

/* Runs fn over the n operands' broadcast (shapes already validated). The
 * output reuses input 0's buffer when possible. */
static tf_code run_bcast(tf_kernel_ctx *ctx, tf_dtype dt, int n,
                         const tf_shape *const *shapes, tf_bcast_block_fn fn,
                         int64_t grain) {
  tf_bcast bc;
  tf_status bst;
  if (tf_bcast_init(&bc, n, shapes, &bst) != TF_OK) {
    return tf_kernel_error(ctx, bst.code, "%s", bst.msg);
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_forward_or_alloc(ctx, 0, 0, dt, &bc.out, &out));
  tf__binop_args args = {out->data, {NULL}};
  for (int k = 0; k < n; k++) {
    args.in[k] = ctx->inputs[k]->data;
  }
  tf_bcast_run(&bc, ctx->pool, grain, fn, &args);
  return TF_OK;
}

/* ---- BiasAdd ---------------------------------------------------------- */

static tf_code bias_add_compute(tf_kernel_ctx *ctx) {
  const typed_state *s = ctx->state;
  const tf_tensor *v = ctx->inputs[0], *b = ctx->inputs[1];
  char vs[128], bs[128];
  TF_TRY(check_dtype(ctx, 0, s->dt));
  TF_TRY(check_dtype(ctx, 1, s->dt));
  int min_rank = s->nchw ? 3 : 2;
  if (v->shape.rank < min_rank) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "value must be at least %dD for data_format %s: "
                           "%s", min_rank, s->nchw ? "NCHW" : "NHWC",
                           tf_shape_str(&v->shape, vs, sizeof(vs)));
  }
  int cdim = s->nchw ? 1 : v->shape.rank - 1;
  if (b->shape.rank != 1 || b->shape.dims[0] != v->shape.dims[cdim]) {
    return tf_kernel_error(
        ctx, TF_INVALID_ARGUMENT,
        "bias must be a vector as long as value's channel dim %d (%s): got "
        "bias %s, value %s", cdim, s->nchw ? "NCHW" : "NHWC",
        tf_shape_str(&b->shape, bs, sizeof(bs)),
        tf_shape_str(&v->shape, vs, sizeof(vs)));
  }
  /* NCHW: bias as [C, 1, ..., 1] lines up with dim 1 of value. */
  tf_shape bview = b->shape;
  if (s->nchw) {
    bview.rank = v->shape.rank - 1;
    for (int i = 1; i < bview.rank; i++) {
      bview.dims[i] = 1;
    }
  }
  const tf_shape *shapes[2] = {&v->shape, &bview};
  return run_bcast(ctx, s->dt, 2, shapes, s->fn, TF_PARALLEL_GRAIN);
}

/* ---- ClipByValue ------------------------------------------------------ */

static tf_code clip_compute(tf_kernel_ctx *ctx) {
  const typed_state *s = ctx->state;
  static const char *const names[3] = {"t", "clip_value_min",
                                       "clip_value_max"};
  const tf_shape *shapes[3];
  for (int i = 0; i < 3; i++) {
    TF_TRY(check_dtype(ctx, i, s->dt));
    shapes[i] = &ctx->inputs[i]->shape;
    if (i > 0 && shapes[i]->rank != 0 && !tf_shape_equal(shapes[i], shapes[0])) {
      char a[128], b[128];
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s must be a scalar or have the shape of t %s, "
                             "got %s", names[i],
                             tf_shape_str(shapes[0], a, sizeof(a)),
                             tf_shape_str(shapes[i], b, sizeof(b)));
    }
  }
  return run_bcast(ctx, s->dt, 3, shapes, s->fn, TF_PARALLEL_GRAIN / 2);
}

/* ---- AddN ------------------------------------------------------------- */

typedef struct addn_arg {
  tf__addn_fn fn;
  void *out;
  const void **in;
  int n;
} addn_arg;

static void addn_range(void *p, int64_t begin, int64_t end) {
  const addn_arg *a = p;
  a->fn(a->out, a->in, a->n, begin, end);
}

static tf_code addn_check(tf_kernel_ctx *ctx, const typed_state *s) {
  const tf_tensor *x0 = ctx->inputs[0];
  for (int i = 0; i < ctx->n_inputs; i++) {
    TF_TRY(check_dtype(ctx, i, s->dt));
    if (!tf_shape_equal(&ctx->inputs[i]->shape, &x0->shape)) {
      char a[128], b[128];
      return tf_kernel_error(
          ctx, TF_INVALID_ARGUMENT,
          "inputs must all have the same shape: input 0 is %s, input %d is "
          "%s", tf_shape_str(&x0->shape, a, sizeof(a)), i,
          tf_shape_str(&ctx->inputs[i]->shape, b, sizeof(b)));
    }
  }
  return TF_OK;
}

static tf_code addn_compute(tf_kernel_ctx *ctx) {
  const typed_state *s = ctx->state;
  int n = ctx->n_inputs;
  TF_ASSERT(n >= 1);
  TF_TRY(addn_check(ctx, s));
  tf_tensor *x0 = ctx->inputs[0], *out;
  if (n == 1) {
    tf_kernel_set_output(ctx, 0, x0);
    return TF_OK;
  }
  /* Summing into input 0 in place is safe unless it is also a later
   * input: the running sum would change it before it is read. */
  bool repeated = false;
  for (int i = 1; i < n; i++) {
    repeated |= ctx->inputs[i]->data == x0->data;
  }
  if (repeated) {
    TF_TRY(tf_kernel_alloc_output(ctx, 0, s->dt, &x0->shape, &out));
  } else {
    TF_TRY(tf_kernel_forward_or_alloc(ctx, 0, 0, s->dt, &x0->shape, &out));
  }
  const void **in = tf__xmalloc(sizeof(*in) * (size_t)n);
  for (int i = 0; i < n; i++) {
    in[i] = ctx->inputs[i]->data;
  }
  addn_arg a = {s->addn, out->data, in, n};
  tf_parallel_for(ctx->pool, x0->n, TF_MAX(TF_PARALLEL_GRAIN / n, 1024),
                  addn_range, &a);
  free(in);
  return TF_OK;
}

/* ---- Select ----------------------------------------------------------- */

/* Operands: condition (bool), t, e. t and e are full; the condition is
 * full (moves along rows) or fixed per row (one flag picks a whole row). */
#define SELECT_DEF(W, T)                                                       \
  static void select_##W##_blk(void *arg, const tf_bcast *bc,                  \
                               const tf_bcast_block *k) {                      \
    const tf__binop_args *p = arg;                                             \
    for (int64_t r = 0; r < k->rows; r++) {                                    \
      T *o = (T *)p->out + k->out_off + r * bc->out_row_stride;                \
      const bool *c =                                                          \
          (const bool *)p->in[0] + k->in_off[0] + r * bc->row_stride[0];      \
      const T *a = (const T *)p->in[1] + k->in_off[1] + r * bc->row_stride[1]; \
      const T *b = (const T *)p->in[2] + k->in_off[2] + r * bc->row_stride[2]; \
      if (bc->col_stride[0]) {                                                 \
        TF__IVDEP for (int64_t i = 0; i < k->cols; i++) {          \
          const T av = a[i], bv = b[i];                                        \
          o[i] = c[i] ? av : bv;                                               \
        }                                                                      \
      } else {                                                                 \
        memmove(o, c[0] ? a : b, (size_t)k->cols * sizeof(T));                 \
      }                                                                        \
    }                                                                          \
  }
SELECT_DEF(8, uint8_t)
SELECT_DEF(16, uint16_t)
SELECT_DEF(32, uint32_t)
SELECT_DEF(64, uint64_t)

static tf_bcast_block_fn select_fn(size_t elem_size) {
  switch (elem_size) {
  case 1:
    return select_8_blk;
  case 2:
    return select_16_blk;
  case 4:
    return select_32_blk;
  case 8:
    return select_64_blk;
  default:
    return NULL;
  }
}

/* Strings are copied one by one (each owns its bytes). */
static tf_code select_strings(tf_kernel_ctx *ctx) {
  const tf_tensor *c = ctx->inputs[0], *t = ctx->inputs[1],
                  *e = ctx->inputs[2];
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_STRING, &t->shape, &out));
  int64_t per_flag = c->n > 0 ? t->n / c->n : 0;
  const bool *cv = c->data;
  for (int64_t i = 0; i < t->n; i++) {
    const tf_string *src = &tf_tensor_strings(cv[i / per_flag] ? t : e)[i];
    if (tf_tensor_set_string(out, i, src->data, src->len, ctx->status) !=
        TF_OK) {
      return ctx->status->code;
    }
  }
  return TF_OK;
}

/* TF's Select rule for the condition's shape; cview gets it lined up with
 * t (a vector condition becomes [N, 1, ..., 1]). */
static tf_code select_shapes(tf_kernel_ctx *ctx, tf_shape *cview) {
  const tf_tensor *c = ctx->inputs[0], *t = ctx->inputs[1],
                  *e = ctx->inputs[2];
  char cs[128], ts[128], es[128];
  if (!tf_shape_equal(&t->shape, &e->shape)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "'t' and 'e' must have the same shape, got %s "
                           "and %s", tf_shape_str(&t->shape, ts, sizeof(ts)),
                           tf_shape_str(&e->shape, es, sizeof(es)));
  }
  *cview = c->shape;
  if (tf_shape_equal(&c->shape, &t->shape) || c->shape.rank == 0) {
    return TF_OK;
  }
  if (c->shape.rank == 1 && t->shape.rank >= 2 &&
      c->shape.dims[0] == t->shape.dims[0]) {
    cview->rank = t->shape.rank;
    for (int i = 1; i < t->shape.rank; i++) {
      cview->dims[i] = 1;
    }
    return TF_OK;
  }
  return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                         "condition must be a scalar, a vector as long as "
                         "t's first dim, or have t's shape: got condition "
                         "%s and t %s",
                         tf_shape_str(&c->shape, cs, sizeof(cs)),
                         tf_shape_str(&t->shape, ts, sizeof(ts)));
}

static tf_code select_compute(tf_kernel_ctx *ctx) {
  tf_tensor *c = ctx->inputs[0], *t = ctx->inputs[1], *e = ctx->inputs[2];
  TF_TRY(check_dtype(ctx, 0, TF_BOOL));
  TF_TRY(check_dtype(ctx, 2, t->dtype));
  tf_shape cview;
  TF_TRY(select_shapes(ctx, &cview));
  if (c->shape.rank == 0) {
    tf_kernel_set_output(ctx, 0, *(const bool *)c->data ? t : e);
    return TF_OK;
  }
  if (t->dtype == TF_STRING) {
    return select_strings(ctx);
  }
  tf_bcast_block_fn fn = select_fn(tf_dtype_size(t->dtype));
  if (fn == NULL) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU Select for %s",
                           tf_dtype_name(t->dtype));
  }
  const tf_shape *shapes[3] = {&cview, &t->shape, &e->shape};
  tf_bcast bc;
  tf_status bst;
  if (tf_bcast_init(&bc, 3, shapes, &bst) != TF_OK) {
    return tf_kernel_error(ctx, bst.code, "%s", bst.msg);
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_forward_or_alloc(ctx, 1, 0, t->dtype, &t->shape, &out));
  tf__binop_args args = {out->data, {c->data, t->data, e->data}};
  tf_bcast_run(&bc, ctx->pool, TF_PARALLEL_GRAIN, fn, &args);
  return TF_OK;
}

/* ---- registrations ---------------------------------------------------- */

#define KT(op, compute, DT)                                                    \
  {op, TF_DEVICE_CPU, TF_##DT, NULL, typed_init, compute, NULL, free, 0},
#define NUM_TYPES(X, op, compute)                                              \
  X(op, compute, FLOAT32) X(op, compute, FLOAT64) X(op, compute, INT8)         \
  X(op, compute, INT16) X(op, compute, INT32) X(op, compute, INT64)            \
  X(op, compute, UINT8) X(op, compute, UINT16) X(op, compute, UINT32)          \
  X(op, compute, UINT64)

static const tf_kernel_def k_math_binary_misc_kernels[] = {
    NUM_TYPES(KT, "AddN", addn_compute)
    NUM_TYPES(KT, "BiasAdd", bias_add_compute)
    NUM_TYPES(KT, "ClipByValue", clip_compute)
    /* Any T: elements are moved by size (strings deep-copied). */
    {"Select", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, select_compute, NULL,
     NULL, 0},
};

TF_REGISTER_KERNELS(k_math_binary_misc_kernels)
