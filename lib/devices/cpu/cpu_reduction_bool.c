/* cpu_reduction_bool.c: CPU kernels for All and Any, TensorFlow's logical
 * reductions of a bool tensor over reduction_indices (int32 or int64,
 * negative axes count from the end, keep_dims keeps reduced dims as 1).
 * A reduction over no elements gives true for All and false for Any (the
 * identities), as TF does.
 *
 * Dims of size 1 are dropped and neighbouring dims that are both reduced
 * or both kept are merged; the input is then walked row by row (rows are
 * the last merged dim): a reduced last dim folds each row into one output,
 * a kept one folds the row element-wise into an output row. The axes are
 * checked by tf__reduction_axes, shared with Sum/Max, so the messages
 * match. Bytes other than 0 count as true. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

typedef struct bred_state {
  bool is_all; /* All (logical and) or Any (logical or) */
  bool keep_dims;
} bred_state;

/* The reduction after merging dims: rows of length L (the last merged
 * dim); before it m dims with their sizes and output strides (0 when
 * reduced). */
typedef struct bred_plan {
  int m;
  int64_t dims[TF_MAX_RANK], ostr[TF_MAX_RANK];
  int64_t L;
  bool last_red;
} bred_plan;

static void bred_build_plan(const tf_shape *in, uint32_t mask, bred_plan *p) {
  int64_t dims[TF_MAX_RANK];
  bool red[TF_MAX_RANK];
  int m = 0;
  for (int d = 0; d < in->rank; d++) {
    bool r = (mask >> d) & 1;
    if (in->dims[d] == 1) {
      continue;
    }
    if (m > 0 && red[m - 1] == r) {
      dims[m - 1] *= in->dims[d];
    } else {
      dims[m] = in->dims[d];
      red[m++] = r;
    }
  }
  if (m == 0) { /* a single element */
    dims[0] = 1;
    red[m++] = false;
  }
  p->L = dims[m - 1];
  p->last_red = red[m - 1];
  p->m = m - 1;
  int64_t stride = p->last_red ? 1 : p->L;
  for (int k = m - 2; k >= 0; k--) {
    p->dims[k] = dims[k];
    p->ostr[k] = red[k] ? 0 : stride;
    stride *= red[k] ? 1 : dims[k];
  }
}

/* Folds every row of x into y (already holding the identity). */
static void bred_run(const bred_plan *p, bool is_all, const uint8_t *x,
                     int64_t n, uint8_t *y) {
  int64_t idx[TF_MAX_RANK] = {0};
  int64_t off = 0;
  for (int64_t r = 0; r * p->L < n; r++) {
    const uint8_t *row = x + r * p->L;
    if (p->last_red) {
      bool v = is_all;
      for (int64_t j = 0; j < p->L; j++) {
        if ((row[j] != 0) != is_all) { /* a false for All, a true for Any */
          v = !is_all;
          break;
        }
      }
      y[off] = is_all ? (y[off] && v) : (y[off] || v);
    } else if (is_all) {
      for (int64_t j = 0; j < p->L; j++) {
        y[off + j] = y[off + j] && row[j];
      }
    } else {
      for (int64_t j = 0; j < p->L; j++) {
        y[off + j] = y[off + j] || row[j];
      }
    }
    for (int k = p->m - 1; k >= 0; k--) { /* odometer over leading dims */
      off += p->ostr[k];
      if (++idx[k] < p->dims[k]) {
        break;
      }
      off -= p->ostr[k] * p->dims[k];
      idx[k] = 0;
    }
  }
}

static tf_code bred_init(const tf_node *node, bool is_all, void **state,
                         tf_status *st) {
  bred_state *s = tf__xcalloc(1, sizeof *s);
  s->is_all = is_all;
  if (tf_node_attr_get_bool(node, "keep_dims", &s->keep_dims, st) != TF_OK) {
    free(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code all_init(const tf_node *node, void **state, tf_status *st) {
  return bred_init(node, true, state, st);
}

static tf_code any_init(const tf_node *node, void **state, tf_status *st) {
  return bred_init(node, false, state, st);
}

static tf_code bred_compute(tf_kernel_ctx *ctx) {
  const bred_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0];
  tf_status st;
  uint32_t mask;
  if (x->dtype != TF_BOOL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input must be bool, got %s",
                           tf_dtype_name(x->dtype));
  }
  tf_status_init(&st);
  if (tf__reduction_axes(ctx->inputs[1], x->shape.rank, &mask, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_shape out_shape = {.rank = 0};
  for (int d = 0; d < x->shape.rank; d++) {
    if (!((mask >> d) & 1)) {
      out_shape.dims[out_shape.rank++] = x->shape.dims[d];
    } else if (s->keep_dims) {
      out_shape.dims[out_shape.rank++] = 1;
    }
  }
  tf_tensor *y;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &out_shape, &y));
  if (y->n == 0) {
    return TF_OK;
  }
  memset(y->data, s->is_all ? 1 : 0, (size_t)y->n);
  if (x->n == 0) {
    return TF_OK; /* identities: All of nothing is true, Any false */
  }
  bred_plan p;
  bred_build_plan(&x->shape, mask, &p);
  bred_run(&p, s->is_all, x->data, x->n, y->data);
  return TF_OK;
}

static const tf_kernel_def reduction_bool_kernels[] = {
    {.op = "All", .device_type = TF_DEVICE_CPU, .init = all_init,
     .compute = bred_compute, .free_state = free},
    {.op = "Any", .device_type = TF_DEVICE_CPU, .init = any_init,
     .compute = bred_compute, .free_state = free},
};

TF_REGISTER_KERNELS(reduction_bool_kernels)
