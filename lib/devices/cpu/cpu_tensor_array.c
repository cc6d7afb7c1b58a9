/* cpu_tensor_array.c: CPU kernels of the TensorArrayV3 ops
 * (ops_tensor_array.c). TensorArrayV3 makes an array in the step's own
 * resource manager under a key unique to the node's run (its name, frame
 * and iteration) and outputs the handle [container, key]; the other ops
 * look the key up there. Data moves by reference where it can (Write
 * keeps the value, Read hands it out) and is copied where elements are
 * joined or cut (Gather, Scatter, Concat, Split). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_tensor_array.h"

/* ---- handles ----------------------------------------------------------------- */

/* A new handle tensor [TF__TA_CONTAINER, key] as output 0. */
static tf_code put_handle(tf_kernel_ctx *ctx, const char *key) {
  tf_tensor *h;
  tf_shape s = tf_shape_of(1, 2);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_STRING, &s, &h));
  if (tf_tensor_set_string(h, 0, TF__TA_CONTAINER, strlen(TF__TA_CONTAINER),
                           ctx->status) != TF_OK ||
      tf_tensor_set_string(h, 1, key, strlen(key), ctx->status) != TF_OK) {
    return ctx->status->code;
  }
  return TF_OK;
}

/* The array named by the handle on input 0, as a new reference. */
static tf_code ta_of(tf_kernel_ctx *ctx, tf__tensor_array **out) {
  *out = NULL;
  tf_resource_mgr *m;
  TF_TRY(tf_kernel_step_resources(ctx, &m));
  const tf_tensor *h = ctx->inputs[0];
  if (h->n != 2 || h->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "handle must be a "
                           "TensorArray handle of 2 strings, got %lld "
                           "elements", (long long)h->n);
  }
  const tf_string *s = tf_tensor_strings(h);
  const char *key = s[1].data ? s[1].data : "";
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  if (tf_resource_lookup(m, TF__TA_CONTAINER, key, &r, &local) != TF_OK) {
    return tf_kernel_error(ctx, TF_NOT_FOUND, "TensorArray '%s' does not exist "
                           "in this step (it was made by another step or on "
                           "another device)", key);
  }
  *out = tf__ta_cast(r);
  if (*out == NULL) {
    tf_resource_unref(r);
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "handle '%s' names a %s, "
                           "not a TensorArray", key, r->type->name);
  }
  return TF_OK;
}

/* Reports an array error from st on the kernel's status. */
static tf_code fail(tf_kernel_ctx *ctx, const tf_status *st) {
  return tf_kernel_error(ctx, st->code, "%s", st->msg);
}

/* Input i as an index vector (int32 of rank 1) copied into a new array. */
static tf_code indices_of(tf_kernel_ctx *ctx, int i, int64_t **out,
                          int64_t *n) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "indices must be a "
                           "vector, got rank %d", t->shape.rank);
  }
  *n = t->n;
  *out = tf__xmalloc((size_t)(t->n + 1) * sizeof **out);
  for (int64_t k = 0; k < t->n; k++) {
    (*out)[k] = tf_tensor_get_i64(t, k);
  }
  return TF_OK;
}

static tf_code scalar_index(tf_kernel_ctx *ctx, int i, int64_t *v) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "index must be a scalar, "
                           "got rank %d", t->shape.rank);
  }
  *v = tf_tensor_get_i64(t, 0);
  return TF_OK;
}

/* Copies count elements from src[src_off..] to dst[dst_off..]. */
static tf_code copy_elems(tf_tensor *dst, int64_t dst_off, const tf_tensor *src,
                          int64_t src_off, int64_t count, tf_status *st) {
  if (dst->dtype != TF_STRING) {
    size_t es = tf_dtype_size(dst->dtype);
    memcpy((char *)dst->data + (size_t)dst_off * es,
           (const char *)src->data + (size_t)src_off * es, (size_t)count * es);
    return TF_OK;
  }
  const tf_string *s = tf_tensor_strings(src);
  for (int64_t k = 0; k < count; k++) {
    const tf_string *e = &s[src_off + k];
    TF_TRY(tf_tensor_set_string(dst, dst_off + k, e->data, e->len, st));
  }
  return TF_OK;
}

/* The part of value from row `row` for `rows` rows along axis 0, as a new
 * tensor of shape [rows] + value.shape[1:] (without the leading dim when
 * drop0). */
static tf_code rows_of(const tf_tensor *value, int64_t row, int64_t rows,
                       bool drop0, tf_tensor **out, tf_status *st) {
  tf_shape s = value->shape;
  int64_t per = value->shape.dims[0] > 0 ? value->n / value->shape.dims[0] : 0;
  if (drop0) {
    s.rank--;
    memmove(s.dims, s.dims + 1, (size_t)s.rank * sizeof s.dims[0]);
  } else {
    s.dims[0] = rows;
  }
  TF_TRY(tf_tensor_new(value->dtype, &s, out, st));
  if (copy_elems(*out, 0, value, row * per, rows * per, st) != TF_OK) {
    tf_tensor_unref(*out);
    *out = NULL;
    return st->code;
  }
  return TF_OK;
}

/* ---- TensorArrayV3 ------------------------------------------------------------- */

typedef struct create_state {
  tf__ta_config cfg;
  char *display;
} create_state;

static void create_free_state(void *p) {
  create_state *s = p;
  if (s != NULL) {
    free(s->display);
    free(s);
  }
}

static tf_code create_init(const tf_node *node, void **state, tf_status *st) {
  create_state *s = tf__xcalloc(1, sizeof *s);
  const char *name = "";
  if (tf_node_attr_get_type(node, "dtype", &s->cfg.dtype, st) != TF_OK ||
      tf_node_attr_get_shape(node, "element_shape", &s->cfg.element_shape, st) != TF_OK ||
      tf_node_attr_get_bool(node, "dynamic_size", &s->cfg.dynamic_size, st) != TF_OK ||
      tf_node_attr_get_bool(node, "clear_after_read", &s->cfg.clear_after_read, st) != TF_OK ||
      tf_node_attr_get_bool(node, "identical_element_shapes", &s->cfg.identical_shapes, st) != TF_OK ||
      tf_node_attr_get_string(node, "tensor_array_name", &name, st) != TF_OK) {
    create_free_state(s);
    return st->code;
  }
  s->display = tf__xstrdup(*name ? name : tf_node_name(node));
  s->cfg.display = s->display;
  *state = s;
  return TF_OK;
}

typedef struct create_arg {
  tf__ta_config cfg;
  const char *key;
} create_arg;

static tf_code create_fn(void *arg, tf_resource **out, tf_status *st) {
  const create_arg *a = arg;
  tf__tensor_array *ta;
  TF_TRY(tf__ta_new(&a->cfg, a->key, &ta, st));
  *out = tf__ta_resource(ta);
  return TF_OK;
}

static tf_code create_compute(tf_kernel_ctx *ctx) {
  const create_state *s = ctx->state;
  tf_resource_mgr *m;
  TF_TRY(tf_kernel_step_resources(ctx, &m));
  const tf_tensor *size = ctx->inputs[0];
  if (size->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "size must be a scalar, "
                           "got rank %d", size->shape.rank);
  }
  create_arg a = {.cfg = s->cfg};
  a.cfg.size = tf_tensor_get_i64(size, 0);
  /* One array per run of the node: a loop body makes one per iteration. */
  char *key = ctx->frame_id == 0
                  ? tf__xstrdup(tf_node_name(ctx->node))
                  : tf__xasprintf("%s/frame_%" PRIx64 "/iter_%" PRId64,
                                  tf_node_name(ctx->node), ctx->frame_id,
                                  ctx->iter);
  a.key = key;
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_resource_lookup_or_create(m, TF__TA_CONTAINER, key,
                                            &tf__tensor_array_type, create_fn,
                                            &a, &r, &local);
  if (rc != TF_OK) {
    free(key);
    return fail(ctx, &local);
  }
  tf_resource_unref(r); /* the step's manager keeps it */
  rc = put_handle(ctx, key);
  free(key);
  TF_TRY(rc);
  tf_tensor *flow = tf_tensor_scalar_f32(0.0f);
  tf_kernel_set_output(ctx, 1, flow);
  tf_tensor_unref(flow);
  return TF_OK;
}

/* ---- TensorArrayGradV3 ------------------------------------------------------------ */

typedef struct grad_arg {
  tf__tensor_array *fwd;
  const char *key, *source;
} grad_arg;

static tf_code grad_create_fn(void *arg, tf_resource **out, tf_status *st) {
  const grad_arg *a = arg;
  tf__tensor_array *ta;
  TF_TRY(tf__ta_new_grad(a->fwd, a->key, a->source, &ta, st));
  *out = tf__ta_resource(ta);
  return TF_OK;
}

static tf_code grad_compute(tf_kernel_ctx *ctx) {
  const char *source;
  TF_TRY(tf_node_attr_get_string(ctx->node, "source", &source, ctx->status));
  tf__tensor_array *fwd;
  TF_TRY(ta_of(ctx, &fwd));
  tf_resource_mgr *m;
  TF_TRY(tf_kernel_step_resources(ctx, &m));
  char *key = tf__xasprintf("%s@%s", tf__ta_resource(fwd)->name, source);
  grad_arg a = {fwd, key, source};
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_resource_lookup_or_create(m, TF__TA_CONTAINER, key,
                                            &tf__tensor_array_type,
                                            grad_create_fn, &a, &r, &local);
  if (rc == TF_OK) {
    tf__ta_sync_grad_shapes(fwd, tf__ta_cast(r));
    tf_resource_unref(r);
    rc = put_handle(ctx, key);
  } else {
    fail(ctx, &local);
  }
  free(key);
  tf_resource_unref(tf__ta_resource(fwd));
  TF_TRY(rc);
  tf_kernel_set_output(ctx, 1, ctx->inputs[1]);
  return TF_OK;
}

/* ---- Write, Read, Size, Close --------------------------------------------------- */

static tf_code write_compute(tf_kernel_ctx *ctx) {
  int64_t index = 0;
  TF_TRY(scalar_index(ctx, 1, &index));
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf__ta_write(ta, index, ctx->inputs[2], &local);
  tf_resource_unref(tf__ta_resource(ta));
  if (rc != TF_OK) {
    return fail(ctx, &local);
  }
  tf_kernel_set_output(ctx, 0, ctx->inputs[3]);
  return TF_OK;
}

static tf_code read_compute(tf_kernel_ctx *ctx) {
  int64_t index = 0;
  TF_TRY(scalar_index(ctx, 1, &index));
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  tf_status local;
  tf_status_init(&local);
  tf_tensor *t = NULL;
  tf_code rc = tf__ta_read(ta, &index, 1, &t, &local);
  tf_resource_unref(tf__ta_resource(ta));
  if (rc != TF_OK) {
    return fail(ctx, &local);
  }
  tf_kernel_set_output(ctx, 0, t);
  tf_tensor_unref(t);
  return TF_OK;
}

static tf_code size_compute(tf_kernel_ctx *ctx) {
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  int64_t n = tf__ta_size(ta);
  tf_resource_unref(tf__ta_resource(ta));
  tf_tensor *t = tf_tensor_scalar_i32((int32_t)n);
  tf_kernel_set_output(ctx, 0, t);
  tf_tensor_unref(t);
  return TF_OK;
}

static tf_code close_compute(tf_kernel_ctx *ctx) {
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  tf__ta_close(ta);
  tf_resource_unref(tf__ta_resource(ta));
  return TF_OK;
}

/* ---- Gather, Concat ---------------------------------------------------------------- */

/* The shape of an output built from n elements when n == 0: [0] + the
 * element shape (known from the array and the op's attr `attr`), which must
 * be fully defined. */
static tf_code empty_shape(tf_kernel_ctx *ctx, tf__tensor_array *ta,
                           const char *attr, bool concat, tf_shape *out) {
  char b[96];
  tf_shape elem = tf__ta_element_shape(ta), own;
  if (tf_node_attr_get_shape(ctx->node, attr, &own, ctx->status) != TF_OK) {
    return ctx->status->code;
  }
  if (concat) {
    elem = own; /* element_shape_except0 */
  } else if (tf_shape_merge(&elem, &own, &elem, NULL) != TF_OK) {
    elem = own;
  }
  if (!tf_shape_is_fully_defined(&elem) || elem.rank + 1 > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_UNIMPLEMENTED, "TensorArray '%s' gives no "
                           "elements here, and their shape %s is not fully "
                           "defined, so the empty result has no shape",
                           tf__ta_name(ta), tf_shape_str(&elem, b, sizeof b));
  }
  *out = (tf_shape){.rank = elem.rank + 1};
  memcpy(&out->dims[1], elem.dims, (size_t)elem.rank * sizeof elem.dims[0]);
  return TF_OK;
}

/* Stacks t[0..n) (all of one shape) into output 0. */
static tf_code stack_into(tf_kernel_ctx *ctx, tf__tensor_array *ta,
                          tf_tensor **t, int64_t n) {
  char a[96], b[96];
  tf_shape s;
  if (n == 0) {
    TF_TRY(empty_shape(ctx, ta, "element_shape", false, &s));
  } else {
    for (int64_t k = 1; k < n; k++) {
      if (!tf_shape_equal(&t[k]->shape, &t[0]->shape)) {
        return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "TensorArray '%s': "
                               "gathered elements differ in shape: %s (the "
                               "first) and %s (the %lldth)", tf__ta_name(ta),
                               tf_shape_str(&t[0]->shape, a, sizeof a),
                               tf_shape_str(&t[k]->shape, b, sizeof b),
                               (long long)k);
      }
    }
    if (t[0]->shape.rank + 1 > TF_MAX_RANK) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "elements of rank %d "
                             "cannot be stacked (the most is %d)",
                             t[0]->shape.rank, TF_MAX_RANK - 1);
    }
    s = (tf_shape){.rank = t[0]->shape.rank + 1};
    s.dims[0] = n;
    memcpy(&s.dims[1], t[0]->shape.dims,
           (size_t)t[0]->shape.rank * sizeof s.dims[0]);
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, tf__ta_dtype(ta), &s, &out));
  int64_t per = n > 0 ? t[0]->n : 0;
  for (int64_t k = 0; k < n; k++) {
    TF_TRY(copy_elems(out, k * per, t[k], 0, per, ctx->status));
  }
  return TF_OK;
}

static tf_code gather_compute(tf_kernel_ctx *ctx) {
  int64_t *idx = NULL, n = 0;
  TF_TRY(indices_of(ctx, 1, &idx, &n));
  tf__tensor_array *ta;
  if (ta_of(ctx, &ta) != TF_OK) {
    free(idx);
    return ctx->status->code;
  }
  tf_tensor **t = tf__xcalloc((size_t)n + 1, sizeof *t);
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf__ta_read(ta, idx, n, t, &local);
  rc = rc != TF_OK ? fail(ctx, &local) : stack_into(ctx, ta, t, n);
  for (int64_t k = 0; k < n; k++) {
    tf_tensor_unref(t[k]);
  }
  free(t);
  free(idx);
  tf_resource_unref(tf__ta_resource(ta));
  return rc;
}

/* Checks that t[0..n) can be concatenated on axis 0 and sets *s to the
 * result's shape and lengths[k] to each one's rows. */
static tf_code concat_shape(tf_kernel_ctx *ctx, tf__tensor_array *ta,
                            tf_tensor **t, int64_t n, int64_t *lengths,
                            tf_shape *s) {
  char a[96], b[96];
  int64_t rows = 0;
  for (int64_t k = 0; k < n; k++) {
    const tf_shape *e = &t[k]->shape;
    bool same = e->rank == t[0]->shape.rank &&
                memcmp(&e->dims[1], &t[0]->shape.dims[1],
                       (size_t)(e->rank > 0 ? e->rank - 1 : 0) *
                           sizeof e->dims[0]) == 0;
    if (e->rank == 0 || !same) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "TensorArray '%s': "
                             "cannot concatenate element %lld of shape %s "
                             "%s", tf__ta_name(ta), (long long)k,
                             tf_shape_str(e, a, sizeof a),
                             e->rank == 0 ? "(a scalar)"
                                          : tf_shape_str(&t[0]->shape, b, sizeof b));
    }
    lengths[k] = e->dims[0];
    rows += e->dims[0];
  }
  *s = t[0]->shape;
  s->dims[0] = rows;
  return TF_OK;
}

/* Concatenates t[0..n) into output 0 and their lengths into output 1. */
static tf_code concat_into(tf_kernel_ctx *ctx, tf__tensor_array *ta,
                           tf_tensor **t, int64_t n) {
  tf_shape s, ls = tf_shape_of(1, n);
  tf_tensor *lengths;
  TF_TRY(tf_kernel_alloc_output(ctx, 1, TF_INT64, &ls, &lengths));
  if (n == 0) {
    TF_TRY(empty_shape(ctx, ta, "element_shape_except0", true, &s));
  } else {
    TF_TRY(concat_shape(ctx, ta, t, n, lengths->data, &s));
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, tf__ta_dtype(ta), &s, &out));
  int64_t off = 0;
  for (int64_t k = 0; k < n; k++) {
    TF_TRY(copy_elems(out, off, t[k], 0, t[k]->n, ctx->status));
    off += t[k]->n;
  }
  return TF_OK;
}

static tf_code concat_compute(tf_kernel_ctx *ctx) {
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  int64_t n = tf__ta_size(ta);
  int64_t *idx = tf__xmalloc((size_t)(n + 1) * sizeof *idx);
  for (int64_t k = 0; k < n; k++) {
    idx[k] = k;
  }
  tf_tensor **t = tf__xcalloc((size_t)n + 1, sizeof *t);
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf__ta_read(ta, idx, n, t, &local);
  rc = rc != TF_OK ? fail(ctx, &local) : concat_into(ctx, ta, t, n);
  for (int64_t k = 0; k < n; k++) {
    tf_tensor_unref(t[k]);
  }
  free(t);
  free(idx);
  tf_resource_unref(tf__ta_resource(ta));
  return rc;
}

/* ---- Scatter, Split ------------------------------------------------------------- */

/* Writes the pieces of value: piece k is rows [start[k], start[k] +
 * rows[k]) (drop0: one row without its axis) at index at[k]. */
static tf_code write_pieces(tf_kernel_ctx *ctx, const tf_tensor *value,
                            const int64_t *at, const int64_t *start,
                            const int64_t *rows, int64_t n, bool drop0) {
  tf__tensor_array *ta;
  TF_TRY(ta_of(ctx, &ta));
  tf_status local;
  tf_status_init(&local);
  tf_code rc = TF_OK;
  for (int64_t k = 0; rc == TF_OK && k < n; k++) {
    tf_tensor *piece = NULL;
    rc = rows_of(value, start[k], drop0 ? 1 : rows[k], drop0, &piece, &local);
    if (rc == TF_OK) {
      rc = tf__ta_write(ta, at[k], piece, &local);
    }
    tf_tensor_unref(piece);
  }
  tf_resource_unref(tf__ta_resource(ta));
  return rc != TF_OK ? fail(ctx, &local) : TF_OK;
}

static tf_code scatter_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *value = ctx->inputs[2];
  int64_t *idx = NULL, n = 0;
  TF_TRY(indices_of(ctx, 1, &idx, &n));
  if (value->shape.rank == 0 || value->shape.dims[0] != n) {
    free(idx);
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "value must have %lld "
                           "rows (one per index), got rank %d with %lld",
                           (long long)n, value->shape.rank,
                           (long long)(value->shape.rank ? value->shape.dims[0] : 0));
  }
  int64_t *start = tf__xmalloc((size_t)(n + 1) * sizeof *start);
  for (int64_t k = 0; k < n; k++) {
    start[k] = k;
  }
  tf_code rc = write_pieces(ctx, value, idx, start, NULL, n, true);
  free(start);
  free(idx);
  TF_TRY(rc);
  tf_kernel_set_output(ctx, 0, ctx->inputs[3]);
  return TF_OK;
}

static tf_code split_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *value = ctx->inputs[1], *len = ctx->inputs[2];
  if (value->shape.rank == 0 || len->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "value must have rank "
                           ">= 1 and lengths be a vector, got ranks %d and %d",
                           value->shape.rank, len->shape.rank);
  }
  int64_t n = len->n, total = 0;
  int64_t *at = tf__xmalloc((size_t)(3 * n + 1) * sizeof *at);
  int64_t *start = at + n, *rows = at + 2 * n;
  for (int64_t k = 0; k < n; k++) {
    at[k] = k;
    rows[k] = tf_tensor_get_i64(len, k);
    start[k] = total;
    total += rows[k] >= 0 ? rows[k] : 0;
    if (rows[k] < 0 || total > value->shape.dims[0]) {
      long long bad = (long long)rows[k];
      free(at);
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "lengths[%lld] = %lld: "
                             "lengths must be >= 0 and add up to value's %lld "
                             "rows", (long long)k, bad, (long long)value->shape.dims[0]);
    }
  }
  tf_code rc = total != value->shape.dims[0]
                   ? tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "lengths add "
                                     "up to %lld, but value has %lld rows",
                                     (long long)total,
                                     (long long)value->shape.dims[0])
                   : write_pieces(ctx, value, at, start, rows, n, false);
  free(at);
  TF_TRY(rc);
  tf_kernel_set_output(ctx, 0, ctx->inputs[3]);
  return TF_OK;
}

/* ---- registration ------------------------------------------------------------------ */

static const tf_kernel_def tensor_array_kernels[] = {
    {.op = "TensorArrayV3", .device_type = TF_DEVICE_CPU, .type_attr = "dtype",
     .init = create_init, .compute = create_compute,
     .free_state = create_free_state, .flags = TF_KERNEL_CHEAP},
    {.op = "TensorArrayGradV3", .device_type = TF_DEVICE_CPU,
     .compute = grad_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "TensorArrayWriteV3", .device_type = TF_DEVICE_CPU,
     .compute = write_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "TensorArrayReadV3", .device_type = TF_DEVICE_CPU,
     .type_attr = "dtype", .compute = read_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "TensorArrayGatherV3", .device_type = TF_DEVICE_CPU,
     .type_attr = "dtype", .compute = gather_compute},
    {.op = "TensorArrayScatterV3", .device_type = TF_DEVICE_CPU,
     .compute = scatter_compute},
    {.op = "TensorArrayConcatV3", .device_type = TF_DEVICE_CPU,
     .type_attr = "dtype", .compute = concat_compute},
    {.op = "TensorArraySplitV3", .device_type = TF_DEVICE_CPU,
     .compute = split_compute},
    {.op = "TensorArraySizeV3", .device_type = TF_DEVICE_CPU,
     .compute = size_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "TensorArrayCloseV3", .device_type = TF_DEVICE_CPU,
     .compute = close_compute, .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(tensor_array_kernels)
