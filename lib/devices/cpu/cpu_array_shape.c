/* cpu_array_shape.c: CPU kernels for the ops that read or change a shape
 * without moving data (Shape, Size, Rank, Reshape, ExpandDims, Squeeze)
 * and for the ops that make a tensor of one value (Fill, ZerosLike,
 * OnesLike). Reshape, ExpandDims and Squeeze return views that share the
 * input's buffer. Registered for every dtype. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_array_copy.h"

/* Stores a view of x with shape s as output 0. */
static tf_code set_view(tf_kernel_ctx *ctx, tf_tensor *x, const tf_shape *s) {
  tf_tensor *v;
  tf_status st;
  if (tf_tensor_view(x, s, &v, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_kernel_set_output(ctx, 0, v);
  tf_tensor_unref(v);
  return TF_OK;
}

/* ---- Shape, Size, Rank ----------------------------------------------- */

typedef struct out_type_state {
  tf_dtype out_type;
} out_type_state;

static tf_code out_type_init(const tf_node *node, void **state,
                             tf_status *st) {
  out_type_state *s = tf__xcalloc(1, sizeof *s);
  if (tf_node_attr_get_type(node, "out_type", &s->out_type, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

/* Writes v as element i of an int32 or int64 tensor; INVALID_ARGUMENT
 * when an int32 cannot hold it. */
static tf_code put_index(tf_kernel_ctx *ctx, tf_tensor *t, int64_t i,
                         int64_t v, const char *what) {
  if (t->dtype == TF_INT64) {
    ((int64_t *)t->data)[i] = v;
    return TF_OK;
  }
  if (v > INT32_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s is %" PRId64 ", too large for out_type int32",
                           what, v);
  }
  ((int32_t *)t->data)[i] = (int32_t)v;
  return TF_OK;
}

static tf_code shape_compute(tf_kernel_ctx *ctx) {
  const out_type_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0];
  tf_shape os = {.rank = 1, .dims = {x->shape.rank}};
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, s->out_type, &os, &y));
  for (int d = 0; d < x->shape.rank; d++) {
    char what[32];
    snprintf(what, sizeof(what), "dim %d", d);
    TF_TRY(put_index(ctx, y, d, x->shape.dims[d], what));
  }
  return TF_OK;
}

static tf_code size_compute(tf_kernel_ctx *ctx) {
  const out_type_state *s = ctx->state;
  tf_shape os = tf_shape_scalar();
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, s->out_type, &os, &y));
  return put_index(ctx, y, 0, ctx->inputs[0]->n, "the element count");
}

static tf_code rank_compute(tf_kernel_ctx *ctx) {
  tf_shape os = tf_shape_scalar();
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT32, &os, &y));
  ((int32_t *)y->data)[0] = ctx->inputs[0]->shape.rank;
  return TF_OK;
}

/* ---- Reshape, ExpandDims, Squeeze ------------------------------------ */

static tf_code reshape_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  tf_shape os;
  tf_status st;
  if (tf__reshape_shape(&x->shape, ctx->inputs[1], &os, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return set_view(ctx, x, &os);
}

static tf_code expand_dims_compute(tf_kernel_ctx *ctx) {
  tf_tensor *x = ctx->inputs[0];
  const tf_tensor *dim = ctx->inputs[1];
  char buf[96];
  tf_status st;
  if (dim->n != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "'dim' must be a tensor with a single value, got "
                           "shape %s",
                           tf_shape_str(&dim->shape, buf, sizeof(buf)));
  }
  int rank = x->shape.rank;
  int64_t axis;
  if (tf__normalize_axis(tf_tensor_get_i64(dim, 0), rank + 1, "dim", &axis,
                         &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  if (rank == TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "ExpandDims: input already has the maximum rank %d",
                           TF_MAX_RANK);
  }
  tf_shape os = {.rank = rank + 1};
  for (int d = 0, k = 0; d <= rank; d++) {
    os.dims[d] = d == axis ? 1 : x->shape.dims[k++];
  }
  return set_view(ctx, x, &os);
}

typedef struct squeeze_state {
  int n;
  int64_t dims[64];
} squeeze_state;

static tf_code squeeze_init(const tf_node *node, void **state, tf_status *st) {
  const int64_t *v;
  int n;
  TF_TRY(tf_node_attr_get_int_list(node, "squeeze_dims", &v, &n, st));
  if (n > 64) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "node '%s' (Squeeze): %d squeeze_dims given; a "
                         "tensor has at most %d dims",
                         tf_node_name(node), n, TF_MAX_RANK);
  }
  squeeze_state *s = tf__xcalloc(1, sizeof *s);
  s->n = n;
  memcpy(s->dims, v, (size_t)n * sizeof(int64_t));
  *state = s;
  return TF_OK;
}

static tf_code squeeze_compute(tf_kernel_ctx *ctx) {
  const squeeze_state *s = ctx->state;
  tf_tensor *x = ctx->inputs[0];
  uint32_t drop = 0;
  tf_status st;
  for (int i = 0; i < s->n; i++) {
    int64_t a;
    if (tf__normalize_axis(s->dims[i], x->shape.rank, "squeeze_dims", &a,
                           &st) != TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
    if (x->shape.dims[a] != 1) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Can not squeeze dim[%d], expected a dimension "
                             "of 1, got %" PRId64,
                             (int)a, x->shape.dims[a]);
    }
    drop |= 1u << a;
  }
  tf_shape os = {.rank = 0};
  for (int d = 0; d < x->shape.rank; d++) {
    bool squeeze = s->n == 0 ? x->shape.dims[d] == 1 : (drop >> d) & 1;
    if (!squeeze) {
      os.dims[os.rank++] = x->shape.dims[d];
    }
  }
  return set_view(ctx, x, &os);
}

/* ---- Fill, ZerosLike, OnesLike --------------------------------------- */

static tf_code fill_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *dims = ctx->inputs[0], *value = ctx->inputs[1];
  char buf[96];
  if (dims->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "dims must be a vector, got shape %s",
                           tf_shape_str(&dims->shape, buf, sizeof(buf)));
  }
  if (value->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "value must be a scalar, got shape %s",
                           tf_shape_str(&value->shape, buf, sizeof(buf)));
  }
  if (dims->n > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Fill: %" PRId64 " dims exceed the maximum rank %d",
                           dims->n, TF_MAX_RANK);
  }
  tf_shape os = {.rank = (int32_t)dims->n};
  for (int d = 0; d < os.rank; d++) {
    os.dims[d] = tf_tensor_get_i64(dims, d);
    if (os.dims[d] < 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "Fill: dims[%d] = %" PRId64 " must be >= 0", d,
                             os.dims[d]);
    }
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, value->dtype, &os, &y));
  return tf__fill_value(ctx, y, value->data);
}

static tf_code zeros_like_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  if (x->dtype == TF_STRING) {
    return TF_OK; /* new string tensors hold empty strings */
  }
  static const unsigned char zero[8] = {0};
  return tf__fill_value(ctx, y, zero);
}

/* Writes the bytes of the value 1 of dtype dt into one (8 bytes). */
static bool one_of(tf_dtype dt, unsigned char *one) {
  union {
    float f;
    double d;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    bool b;
    uint16_t bits;
    tf_complex64 c;
  } u;
  memset(&u, 0, sizeof(u));
  switch (dt) {
  case TF_FLOAT32: u.f = 1.0f; break;
  case TF_FLOAT64: u.d = 1.0; break;
  case TF_INT8: case TF_UINT8: u.i8 = 1; break;
  case TF_INT16: case TF_UINT16: u.i16 = 1; break;
  case TF_INT32: case TF_UINT32: u.i32 = 1; break;
  case TF_INT64: case TF_UINT64: u.i64 = 1; break;
  case TF_BOOL: u.b = true; break;
  case TF_BFLOAT16: u.bits = tf_float_to_bfloat16(1.0f); break;
  case TF_FLOAT16: u.bits = tf_float_to_float16(1.0f); break;
  case TF_COMPLEX64: u.c.re = 1.0f; break;
  default: return false;
  }
  memcpy(one, &u, 8);
  return true;
}

static tf_code ones_like_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  unsigned char one[8];
  if (!one_of(x->dtype, one)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "OnesLike is not defined for %s",
                           tf_dtype_name(x->dtype));
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &y));
  return tf__fill_value(ctx, y, one);
}

#define ANY_KERNEL(op, init, fn, flags)                                        \
  {op, TF_DEVICE_CPU, TF_DTYPE_ANY, NULL, init, fn, NULL, free, flags}

static const tf_kernel_def array_shape_kernels[] = {
    ANY_KERNEL("Shape", out_type_init, shape_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("Size", out_type_init, size_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("Rank", NULL, rank_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("Reshape", NULL, reshape_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("ExpandDims", NULL, expand_dims_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("Squeeze", squeeze_init, squeeze_compute, TF_KERNEL_CHEAP),
    ANY_KERNEL("Fill", NULL, fill_compute, 0),
    ANY_KERNEL("ZerosLike", NULL, zeros_like_compute, 0),
    ANY_KERNEL("OnesLike", NULL, ones_like_compute, 0),
};

TF_REGISTER_KERNELS(array_shape_kernels)
