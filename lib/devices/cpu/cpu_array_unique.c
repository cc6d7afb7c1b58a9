/* cpu_array_unique.c: CPU kernels of Unique for int32 and int64 vectors:
 * one pass over x with an open-addressing hash table (power-of-two size,
 * at least twice the element count) that maps each value to its position
 * among the distinct values seen so far. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

static uint64_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

static int64_t value_at(const tf_tensor *t, int64_t i) {
  return t->dtype == TF_INT32 ? ((const int32_t *)t->data)[i]
                              : ((const int64_t *)t->data)[i];
}

/* pos[i] = position of x[i] among the distinct values, which are written
 * in order to first[] (as indices into x); returns their count, or -1 on
 * OOM. */
static int64_t find_unique(const tf_tensor *x, int64_t *pos, int64_t *first) {
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)x->n) {
    cap *= 2;
  }
  int64_t *slot = malloc(cap * sizeof *slot); /* -1 or a distinct id */
  if (slot == NULL) {
    return -1;
  }
  memset(slot, 0xff, cap * sizeof *slot);
  int64_t nu = 0;
  for (int64_t i = 0; i < x->n; i++) {
    int64_t v = value_at(x, i);
    uint64_t h = hash64((uint64_t)v) & (cap - 1);
    while (slot[h] >= 0 && value_at(x, first[slot[h]]) != v) {
      h = (h + 1) & (cap - 1);
    }
    if (slot[h] < 0) {
      slot[h] = nu;
      first[nu++] = i;
    }
    pos[i] = slot[h];
  }
  free(slot);
  return nu;
}

static tf_code write_outputs(tf_kernel_ctx *ctx, const tf_tensor *x,
                             const int64_t *pos, const int64_t *first,
                             int64_t nu) {
  tf_tensor *y, *idx;
  tf_shape ys = tf_shape_of(1, nu);
  tf_dtype it = tf_node_output_type(ctx->node, 1);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &ys, &y));
  TF_TRY(tf_kernel_alloc_output(ctx, 1, it, &x->shape, &idx));
  for (int64_t k = 0; k < nu; k++) {
    if (x->dtype == TF_INT32) {
      ((int32_t *)y->data)[k] = ((const int32_t *)x->data)[first[k]];
    } else {
      ((int64_t *)y->data)[k] = ((const int64_t *)x->data)[first[k]];
    }
  }
  for (int64_t i = 0; i < x->n; i++) {
    if (it == TF_INT32) {
      ((int32_t *)idx->data)[i] = (int32_t)pos[i];
    } else {
      ((int64_t *)idx->data)[i] = pos[i];
    }
  }
  return TF_OK;
}

static tf_code unique_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *x = ctx->inputs[0];
  char a[96];
  if (x->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "x must be a vector, got shape %s",
                           tf_shape_str(&x->shape, a, sizeof a));
  }
  if (tf_node_output_type(ctx->node, 1) == TF_INT32 && x->n > INT32_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "x has %" PRId64 " elements, too many for int32 "
                           "idx", x->n);
  }
  size_t n = (size_t)(x->n > 0 ? x->n : 1);
  int64_t *pos = malloc(n * sizeof *pos), *first = malloc(n * sizeof *first);
  int64_t nu = pos && first ? find_unique(x, pos, first) : -1;
  tf_code rc = nu < 0 ? tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED,
                                        "out of memory for %" PRId64
                                        " elements", x->n)
                      : write_outputs(ctx, x, pos, first, nu);
  free(pos);
  free(first);
  return rc;
}

static const tf_kernel_def unique_kernels[] = {
    {.op = "Unique", .device_type = TF_DEVICE_CPU, .dtype = TF_INT32,
     .compute = unique_compute},
    {.op = "Unique", .device_type = TF_DEVICE_CPU, .dtype = TF_INT64,
     .compute = unique_compute},
};

TF_REGISTER_KERNELS(unique_kernels)
