/* cpu_select.c: CPU kernel of SelectV2 (TF's where_v2): output[i] is t's
 * element where condition's is true, else e's, with condition, t and e
 * broadcast together under NumPy's rule.
 *
 * Elements are moved by size (1, 2, 4 or 8 bytes, so one loop serves every
 * numeric dtype and bool); strings are deep-copied one by one. The walk is
 * the three-operand broadcast of cpu_broadcast.h; along a row each operand
 * moves by 0 or 1 element. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "lib/devices/cpu/cpu_broadcast.h"
#include "lib/devices/cpu/cpu_math_binary.h"

/* Operands: condition (bool), t, e; any of them may be broadcast. */
#define SELECT_V2_DEF(W, T)                                                    \
  static void select_v2_##W##_blk(void *arg, const tf_bcast *bc,               \
                                  const tf_bcast_block *k) {                   \
    const tf__binop_args *p = arg;                                             \
    int64_t sc = bc->col_stride[0], sa = bc->col_stride[1],                    \
            sb = bc->col_stride[2];                                            \
    for (int64_t r = 0; r < k->rows; r++) {                                    \
      T *o = (T *)p->out + k->out_off + r * bc->out_row_stride;                \
      const bool *c =                                                          \
          (const bool *)p->in[0] + k->in_off[0] + r * bc->row_stride[0];      \
      const T *a = (const T *)p->in[1] + k->in_off[1] + r * bc->row_stride[1]; \
      const T *b = (const T *)p->in[2] + k->in_off[2] + r * bc->row_stride[2]; \
      if (sc == 0) {                                                           \
        const T *src = c[0] ? a : b;                                           \
        int64_t ss = c[0] ? sa : sb;                                           \
        if (ss) {                                                              \
          memmove(o, src, (size_t)k->cols * sizeof(T));                        \
        } else {                                                               \
          const T v = src[0];                                                  \
          for (int64_t i = 0; i < k->cols; i++) {                              \
            o[i] = v;                                                          \
          }                                                                    \
        }                                                                      \
        continue;                                                              \
      }                                                                        \
      for (int64_t i = 0; i < k->cols; i++) {                                  \
        const T av = a[i * sa], bv = b[i * sb];                                \
        o[i] = c[i] ? av : bv;                                                 \
      }                                                                        \
    }                                                                          \
  }
SELECT_V2_DEF(8, uint8_t)
SELECT_V2_DEF(16, uint16_t)
SELECT_V2_DEF(32, uint32_t)
SELECT_V2_DEF(64, uint64_t)

static tf_bcast_block_fn select_v2_fn(size_t elem_size) {
  switch (elem_size) {
  case 1:
    return select_v2_8_blk;
  case 2:
    return select_v2_16_blk;
  case 4:
    return select_v2_32_blk;
  case 8:
    return select_v2_64_blk;
  default:
    return NULL;
  }
}

/* Strings: each output element owns a copy of its source's bytes. */
static tf_code select_v2_strings(tf_kernel_ctx *ctx, const tf_bcast *bc,
                                 tf_tensor *out) {
  const bool *cv = ctx->inputs[0]->data;
  const tf_string *tv = tf_tensor_strings(ctx->inputs[1]);
  const tf_string *ev = tf_tensor_strings(ctx->inputs[2]);
  tf_bcast_iter it;
  tf_bcast_block k;
  tf_bcast_iter_init(&it, bc, 0, bc->n);
  while (tf_bcast_iter_next(&it, &k)) {
    for (int64_t r = 0; r < k.rows; r++) {
      for (int64_t i = 0; i < k.cols; i++) {
        int64_t off[3];
        for (int j = 0; j < 3; j++) {
          off[j] = k.in_off[j] + r * bc->row_stride[j] + i * bc->col_stride[j];
        }
        const tf_string *src = cv[off[0]] ? &tv[off[1]] : &ev[off[2]];
        int64_t o = k.out_off + r * bc->out_row_stride + i;
        if (tf_tensor_set_string(out, o, src->data, src->len, ctx->status) !=
            TF_OK) {
          return ctx->status->code;
        }
      }
    }
  }
  return TF_OK;
}

static tf_code select_v2_check(tf_kernel_ctx *ctx) {
  const tf_tensor *c = ctx->inputs[0], *t = ctx->inputs[1],
                  *e = ctx->inputs[2];
  if (c->dtype != TF_BOOL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "condition must be bool, got %s",
                           tf_dtype_name(c->dtype));
  }
  if (e->dtype != t->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "t and e must have the same dtype, got %s and %s",
                           tf_dtype_name(t->dtype), tf_dtype_name(e->dtype));
  }
  return TF_OK;
}

static tf_code select_v2_compute(tf_kernel_ctx *ctx) {
  TF_TRY(select_v2_check(ctx));
  const tf_tensor *c = ctx->inputs[0], *t = ctx->inputs[1],
                  *e = ctx->inputs[2];
  tf_dtype dt = t->dtype;
  tf_bcast_block_fn fn = select_v2_fn(tf_dtype_size(dt));
  if (dt != TF_STRING && fn == NULL) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "no CPU SelectV2 for %s",
                           tf_dtype_name(dt));
  }
  const tf_shape *shapes[3] = {&c->shape, &t->shape, &e->shape};
  tf_bcast bc;
  tf_status bst;
  if (tf_bcast_init(&bc, 3, shapes, &bst) != TF_OK) {
    return tf_kernel_error(ctx, bst.code,
                           "condition, t and e must broadcast: %s", bst.msg);
  }
  tf_tensor *out;
  if (dt == TF_STRING) {
    TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &bc.out, &out));
    return bc.n > 0 ? select_v2_strings(ctx, &bc, out) : TF_OK;
  }
  /* t or e may lend its buffer: element i is read before it is written. */
  int fwd = tf_bcast_is_full(&bc, 1) ? 1 : tf_bcast_is_full(&bc, 2) ? 2 : -1;
  if (fwd > 0) {
    TF_TRY(tf_kernel_forward_or_alloc(ctx, fwd, 0, dt, &bc.out, &out));
  } else {
    TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &bc.out, &out));
  }
  if (bc.n > 0) {
    tf__binop_args args = {out->data, {c->data, t->data, e->data}};
    tf_bcast_run(&bc, ctx->pool, TF_PARALLEL_GRAIN, fn, &args);
  }
  return TF_OK;
}

static const tf_kernel_def k_select_kernels[] = {
    /* Any T: elements are moved by size (strings deep-copied). */
    {"SelectV2", TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, NULL, select_v2_compute,
     NULL, NULL, 0},
};

TF_REGISTER_KERNELS(k_select_kernels)
