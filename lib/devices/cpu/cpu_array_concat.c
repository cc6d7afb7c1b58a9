/* cpu_array_concat.c: CPU kernels that join or cut tensors along one
 * axis: ConcatV2 and Concat (the axis last or first), Split, Pack and
 * Unpack, for every dtype. Viewed as [outer, axis * inner], each input or
 * output is a block of whole rows of the other side, so each is one 2-D
 * region copy (rows of contiguous memory, split across the pool). */
#include <inttypes.h>
#include <stdlib.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Copies `outer` rows of `width` elements: row r of src starts at element
 * soff + r * srow, of dst at doff + r * drow. */
static tf_code copy_block(tf_kernel_ctx *ctx, tf_tensor *dst, int64_t drow,
                          int64_t doff, const tf_tensor *src, int64_t srow,
                          int64_t soff, int64_t outer, int64_t width) {
  tf__region r = {.rank = 2,
                  .dims = {outer, width},
                  .sstride = {srow, 1},
                  .dstride = {drow, 1}};
  return tf__region_copy(ctx, &r, dst, doff, src, soff);
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

/* ---- ConcatV2 and Concat ---------------------------------------------- */

/* Checks values 1..n-1 against value 0 on every dim but axis; *total gets
 * the output's size along axis. */
static tf_code concat_check(tf_kernel_ctx *ctx, tf_tensor *const *v, int n,
                            int axis, int64_t *total) {
  const tf_shape *s0 = &v[0]->shape;
  char a[128], b[128];
  *total = 0;
  for (int i = 0; i < n; i++) {
    const tf_shape *si = &v[i]->shape;
    if (si->rank != s0->rank) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "ConcatOp : Ranks of all input tensors should "
                             "match: shape[0] = %s vs. shape[%d] = %s",
                             tf_shape_str(s0, a, sizeof(a)), i,
                             tf_shape_str(si, b, sizeof(b)));
    }
    for (int d = 0; d < s0->rank; d++) {
      if (d != axis && si->dims[d] != s0->dims[d]) {
        return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                               "ConcatOp : Dimension %d in both shapes must "
                               "be equal: shape[0] = %s vs. shape[%d] = %s",
                               d, tf_shape_str(s0, a, sizeof(a)), i,
                               tf_shape_str(si, b, sizeof(b)));
      }
    }
    *total += si->dims[axis]; /* bounded by the inputs' sizes */
  }
  return TF_OK;
}

/* Joins the n values v along the scalar axis_t (named what in errors). */
static tf_code concat_run(tf_kernel_ctx *ctx, tf_tensor *const *v, int n,
                          const tf_tensor *axis_t, const char *what) {
  const tf_tensor *x0 = v[0];
  char buf[96];
  tf_status st;
  if (axis_t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be a scalar, got shape %s", what,
                           tf_shape_str(&axis_t->shape, buf, sizeof(buf)));
  }
  if (x0->shape.rank == 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "ConcatOp : Can't concatenate scalars (use "
                           "tf.stack instead)");
  }
  int64_t axis, total;
  if (tf__normalize_axis(tf_tensor_get_i64(axis_t, 0), x0->shape.rank,
                         "concatenating dimensions", &axis, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "ConcatOp : %s", st.msg);
  }
  TF_TRY(concat_check(ctx, v, n, (int)axis, &total));
  tf_shape os = x0->shape;
  os.dims[axis] = total;
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x0->dtype, &os, &y));
  int64_t outer, inner, at = 0;
  outer_inner(&os, (int)axis, &outer, &inner);
  for (int i = 0; i < n; i++) {
    int64_t w = v[i]->shape.dims[axis] * inner;
    TF_TRY(copy_block(ctx, y, total * inner, at, v[i], w, 0, outer, w));
    at += w;
  }
  return TF_OK;
}

/* ConcatV2(values..., axis). */
static tf_code concat_v2_compute(tf_kernel_ctx *ctx) {
  int n = ctx->n_inputs - 1;
  return concat_run(ctx, ctx->inputs, n, ctx->inputs[n], "axis");
}

/* Concat(concat_dim, values...). */
static tf_code concat_compute(tf_kernel_ctx *ctx) {
  return concat_run(ctx, ctx->inputs + 1, ctx->n_inputs - 1, ctx->inputs[0],
                    "concat_dim");
}

/* ---- Split, Pack, Unpack: attrs -------------------------------------- */

typedef struct axis_state {
  int64_t num;  /* num_split (Split), num (Unpack) */
  int64_t axis; /* Pack, Unpack */
} axis_state;

static tf_code split_init(const tf_node *node, void **state, tf_status *st) {
  axis_state *s = tf__xcalloc(1, sizeof *s);
  if (tf_node_attr_get_int(node, "num_split", &s->num, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code pack_init(const tf_node *node, void **state, tf_status *st) {
  axis_state *s = tf__xcalloc(1, sizeof *s);
  if (tf_node_attr_get_int(node, "axis", &s->axis, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code unpack_init(const tf_node *node, void **state, tf_status *st) {
  axis_state *s = tf__xcalloc(1, sizeof *s);
  if (tf_node_attr_get_int(node, "axis", &s->axis, st) != TF_OK ||
      tf_node_attr_get_int(node, "num", &s->num, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* ---- Split ----------------------------------------------------------- */

static tf_code split_compute(tf_kernel_ctx *ctx) {
  const axis_state *s = ctx->state;
  const tf_tensor *dim_t = ctx->inputs[0];
  tf_tensor *x = ctx->inputs[1];
  char buf[96];
  tf_status st;
  int64_t axis;
  if (dim_t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "split_dim must be a scalar, got shape %s",
                           tf_shape_str(&dim_t->shape, buf, sizeof(buf)));
  }
  if (tf__normalize_axis(tf_tensor_get_i64(dim_t, 0), x->shape.rank,
                         "split_dim", &axis, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  int64_t d = x->shape.dims[axis], num = s->num;
  if (d % num != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Number of ways to split should evenly divide the "
                           "split dimension, but got split_dim %d (size = "
                           "%" PRId64 ") and num_split %" PRId64,
                           (int)axis, d, num);
  }
  if (num == 1) {
    tf_kernel_set_output(ctx, 0, x);
    return TF_OK;
  }
  int64_t outer, inner;
  outer_inner(&x->shape, (int)axis, &outer, &inner);
  tf_shape os = x->shape;
  os.dims[axis] = d / num;
  int64_t w = os.dims[axis] * inner;
  for (int i = 0; i < num; i++) {
    tf_tensor *y;
    TF_TRY(tf_kernel_alloc_output(ctx, i, x->dtype, &os, &y));
    TF_TRY(copy_block(ctx, y, w, 0, x, d * inner, i * w, outer, w));
  }
  return TF_OK;
}

/* ---- Pack, Unpack ---------------------------------------------------- */

static tf_code pack_compute(tf_kernel_ctx *ctx) {
  const axis_state *s = ctx->state;
  int n = ctx->n_inputs;
  const tf_tensor *x0 = ctx->inputs[0];
  int rank = x0->shape.rank;
  char a[128], b[128];
  tf_status st;
  int64_t axis;
  if (tf__normalize_axis(s->axis, rank + 1, "axis", &axis, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (rank == TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Pack: inputs already have the maximum rank %d",
                           TF_MAX_RANK);
  }
  for (int i = 1; i < n; i++) {
    if (!tf_shape_equal(&ctx->inputs[i]->shape, &x0->shape)) {
      return tf_kernel_error(
          ctx, TF_INVALID_ARGUMENT,
          "Shapes of all inputs must match: values[0].shape = %s != "
          "values[%d].shape = %s",
          tf_shape_str(&x0->shape, a, sizeof(a)), i,
          tf_shape_str(&ctx->inputs[i]->shape, b, sizeof(b)));
    }
  }
  tf_shape os = {.rank = rank + 1};
  for (int d = 0, k = 0; d <= rank; d++) {
    os.dims[d] = d == axis ? n : x0->shape.dims[k++];
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x0->dtype, &os, &y));
  int64_t outer, inner;
  outer_inner(&os, (int)axis, &outer, &inner);
  for (int i = 0; i < n; i++) {
    TF_TRY(copy_block(ctx, y, n * inner, i * inner, ctx->inputs[i], inner, 0,
                      outer, inner));
  }
  return TF_OK;
}

static tf_code unpack_compute(tf_kernel_ctx *ctx) {
  const axis_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0];
  char buf[128];
  tf_status st;
  int64_t axis;
  if (tf__normalize_axis(s->axis, x->shape.rank, "axis", &axis, &st) !=
      TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  int64_t num = x->shape.dims[axis];
  if (num != s->num) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Input shape axis %d must equal %" PRId64
                           ", got shape %s",
                           (int)axis, s->num,
                           tf_shape_str(&x->shape, buf, sizeof(buf)));
  }
  tf_shape os = {.rank = 0};
  for (int d = 0; d < x->shape.rank; d++) {
    if (d != axis) {
      os.dims[os.rank++] = x->shape.dims[d];
    }
  }
  int64_t outer, inner;
  outer_inner(&x->shape, (int)axis, &outer, &inner);
  for (int i = 0; i < num; i++) {
    tf_tensor *y;
    TF_TRY(tf_kernel_alloc_output(ctx, i, x->dtype, &os, &y));
    TF_TRY(copy_block(ctx, y, inner, 0, x, num * inner, i * inner, outer,
                      inner));
  }
  return TF_OK;
}

#define ANY_KERNEL(op, init, fn)                                               \
  {op, TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, init, fn, NULL, free, 0}

static const tf_kernel_def array_concat_kernels[] = {
    ANY_KERNEL("ConcatV2", NULL, concat_v2_compute),
    ANY_KERNEL("Concat", NULL, concat_compute),
    ANY_KERNEL("Split", split_init, split_compute),
    ANY_KERNEL("Pack", pack_init, pack_compute),
    ANY_KERNEL("Unpack", unpack_init, unpack_compute),
};

TF_REGISTER_KERNELS(array_concat_kernels)
