/* cpu_state.c: CPU kernels of the variable ops (ops_state.c). VariableV2
 * looks up or creates its variable in the step's resource manager and
 * outputs a ref to it; the update kernels change the variable through
 * tf_variable_assign / tf_variable_update (under its mutex, copy-on-write
 * when a reader holds the value) and forward the same ref. Scatter indices
 * are all checked before anything is written, so a bad index leaves the
 * variable unchanged. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/util.h"
#include "lib/core/framework/variable.h"

/* ---- VariableV2 ---------------------------------------------------------- */

typedef struct var_state {
  tf_dtype dtype;
  tf_shape shape;
  char *container; /* "" = default */
  char *name;      /* shared_name, else the node's name */
} var_state;

static void var_free_state(void *p) {
  var_state *s = p;
  if (s != NULL) {
    free(s->container);
    free(s->name);
    free(s);
  }
}

static tf_code var_init(const tf_node *node, void **state, tf_status *st) {
  tf_dtype dt;
  tf_shape shape;
  const char *container, *shared;
  TF_TRY(tf_node_attr_get_type(node, "dtype", &dt, st));
  TF_TRY(tf_node_attr_get_shape(node, "shape", &shape, st));
  TF_TRY(tf_node_attr_get_string(node, "container", &container, st));
  TF_TRY(tf_node_attr_get_string(node, "shared_name", &shared, st));
  var_state *s = tf__xcalloc(1, sizeof *s);
  s->dtype = dt;
  s->shape = shape;
  s->container = tf__xstrdup(container);
  s->name = tf__xstrdup(*shared ? shared : tf_node_name(node));
  *state = s;
  return TF_OK;
}

static tf_code var_create(void *arg, tf_resource **out, tf_status *st) {
  const var_state *s = arg;
  *out = &tf_variable_new(s->container, s->name, s->dtype, &s->shape)->base;
  return TF_OK;
}

/* An existing variable must have this node's dtype and a compatible shape. */
static tf_code check_shared(tf_kernel_ctx *ctx, const var_state *s,
                            const tf_variable *v) {
  char a[160], b[160];
  if (v->dtype != s->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Trying to share variable %s, but specified dtype "
                           "%s and found dtype %s", s->name,
                           tf_dtype_name(s->dtype), tf_dtype_name(v->dtype));
  }
  tf_shape merged; /* two declared (partial) shapes of one variable */
  if (tf_shape_merge(&v->shape, &s->shape, &merged, NULL) != TF_OK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Trying to share variable %s, but specified shape "
                           "%s and found shape %s", s->name,
                           tf_shape_str(&s->shape, a, sizeof a),
                           tf_shape_str(&v->shape, b, sizeof b));
  }
  return TF_OK;
}

static tf_code var_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  const var_state *s = ctx->state;
  tf_resource *r;
  tf_status local;
  tf_status_init(&local);
  if (tf_resource_lookup_or_create(ctx->step->resources, s->container,
                                   s->name, &tf_variable_type, var_create,
                                   (void *)s, &r, &local) != TF_OK) {
    return tf_kernel_error(ctx, local.code, "%s", local.msg);
  }
  tf_code rc = check_shared(ctx, s, (tf_variable *)r);
  if (rc == TF_OK) {
    tf_kernel_set_ref_output(ctx, 0, r);
  }
  tf_resource_unref(r);
  return rc;
}

/* ---- shared by the update kernels ---------------------------------------- */

/* The variable on ref input i, or an error naming the input. */
static tf_code ref_variable(tf_kernel_ctx *ctx, int i, tf_variable **out) {
  TF_TRY(tf_kernel_need_step(ctx));
  tf_resource *r = ctx->in_refs ? ctx->in_refs[i] : NULL;
  *out = tf_variable_cast(r);
  if (*out == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "input %d must be a ref to a variable, got %s", i,
                           r ? r->type->name : "no resource");
  }
  return TF_OK;
}

/* Finishes an update: the error (prefixed with the node) or the ref. */
static tf_code finish_update(tf_kernel_ctx *ctx, tf_variable *v, tf_code rc,
                             const tf_status *local) {
  if (rc != TF_OK) {
    return tf_kernel_error(ctx, rc, "%s", local->msg);
  }
  tf_kernel_set_ref_output(ctx, 0, &v->base);
  return TF_OK;
}

static tf_code check_value_dtype(tf_kernel_ctx *ctx, const tf_variable *v,
                                 const tf_tensor *t, const char *what) {
  if (t == NULL || t->dtype != v->dtype) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "variable %s is %s but %s is %s", v->base.name,
                           tf_dtype_name(v->dtype), what,
                           t ? tf_dtype_name(t->dtype) : "missing");
  }
  return TF_OK;
}

/* ---- Assign -------------------------------------------------------------- */

/* The state is validate_shape, the only attr that matters. */
static const bool validate_on = true, validate_off = false;

static tf_code assign_init(const tf_node *node, void **state, tf_status *st) {
  bool validate;
  TF_TRY(tf_node_attr_get_bool(node, "validate_shape", &validate, st));
  *state = (void *)(validate ? &validate_on : &validate_off);
  return TF_OK;
}

static tf_code assign_compute(tf_kernel_ctx *ctx) {
  tf_variable *v;
  TF_TRY(ref_variable(ctx, 0, &v));
  TF_TRY(check_value_dtype(ctx, v, ctx->inputs[1], "value"));
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_variable_assign(v, ctx->inputs[1],
                                  *(const bool *)ctx->state, &local);
  return finish_update(ctx, v, rc, &local);
}

/* ---- AssignAdd / AssignSub ----------------------------------------------- */

typedef struct arith_job {
  tf_dtype dt;
  bool sub;
  void *dst;
  const void *src;
} arith_job;

/* Wrapping integer arithmetic (no signed-overflow UB), as TF's kernels. */
#define ARITH_LOOP(T, U)                                                       \
  do {                                                                         \
    T *d = j->dst;                                                             \
    const T *s = j->src;                                                       \
    for (int64_t i = b; i < e; i++) {                                          \
      d[i] = j->sub ? (T)((U)d[i] - (U)s[i]) : (T)((U)d[i] + (U)s[i]);         \
    }                                                                          \
  } while (0)

static void arith_range(void *arg, int64_t b, int64_t e) {
  const arith_job *j = arg;
  switch (j->dt) {
  case TF_FLOAT32: ARITH_LOOP(float, float); break;
  case TF_FLOAT64: ARITH_LOOP(double, double); break;
  case TF_INT32: ARITH_LOOP(int32_t, uint32_t); break;
  case TF_INT64: ARITH_LOOP(int64_t, uint64_t); break;
  default: TF_PANIC("AssignAdd/Sub registered for %s", tf_dtype_name(j->dt));
  }
}

typedef struct dense_arg {
  tf_kernel_ctx *ctx;
  const tf_tensor *delta;
  bool sub;
} dense_arg;

static tf_code dense_update(void *arg, tf_variable *v, tf_tensor *value,
                            tf_status *st) {
  const dense_arg *a = arg;
  char x[160], y[160];
  if (!tf_shape_equal(&value->shape, &a->delta->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "variable %s has shape %s but the value has shape %s",
                         v->base.name, tf_shape_str(&value->shape, x, sizeof x),
                         tf_shape_str(&a->delta->shape, y, sizeof y));
  }
  arith_job j = {value->dtype, a->sub, value->data, a->delta->data};
  tf_parallel_for(a->ctx->pool, value->n, TF_PARALLEL_GRAIN, arith_range,
                  &j);
  return TF_OK;
}

static tf_code assign_arith(tf_kernel_ctx *ctx, bool sub) {
  tf_variable *v;
  TF_TRY(ref_variable(ctx, 0, &v));
  TF_TRY(check_value_dtype(ctx, v, ctx->inputs[1], "value"));
  dense_arg a = {ctx, ctx->inputs[1], sub};
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_variable_update(v, dense_update, &a, &local);
  return finish_update(ctx, v, rc, &local);
}

static tf_code assign_add_compute(tf_kernel_ctx *ctx) {
  return assign_arith(ctx, false);
}

static tf_code assign_sub_compute(tf_kernel_ctx *ctx) {
  return assign_arith(ctx, true);
}

/* ---- ScatterUpdate / ScatterAdd / ScatterSub ----------------------------- */

enum scatter_mode { SCATTER_UPDATE, SCATTER_ADD, SCATTER_SUB };

typedef struct scatter_arg {
  enum scatter_mode mode;
  const tf_tensor *indices;
  const tf_tensor *updates;
} scatter_arg;

/* "[1,2]": the position of flat index i in a tensor of shape s. */
static char *position_str(const tf_shape *s, int64_t i, char *buf, size_t n) {
  int64_t pos[TF_MAX_RANK] = {0};
  for (int d = s->rank - 1; d >= 0; d--) {
    pos[d] = s->dims[d] ? i % s->dims[d] : 0;
    i = s->dims[d] ? i / s->dims[d] : 0;
  }
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < s->rank && off < n; d++) {
    off += (size_t)snprintf(buf + off, n - off, "%s%" PRId64, d ? "," : "",
                            pos[d]);
  }
  if (off < n) {
    snprintf(buf + off, n - off, "]");
  }
  return buf;
}

/* updates.shape must be [] or indices.shape + value.shape[1:]. */
static tf_code check_scatter_shapes(const tf_variable *v,
                                    const tf_tensor *value,
                                    const scatter_arg *a, tf_status *st) {
  const tf_shape *p = &value->shape, *ix = &a->indices->shape,
                 *up = &a->updates->shape;
  char x[160], y[160], z[160];
  if (p->rank < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "variable %s must be at least 1-D to scatter into, "
                         "got shape %s", v->base.name,
                         tf_shape_str(p, x, sizeof x));
  }
  bool ok = up->rank == 0 || up->rank == ix->rank + p->rank - 1;
  for (int d = 0; ok && up->rank > 0 && d < up->rank; d++) {
    int64_t want = d < ix->rank ? ix->dims[d] : p->dims[d - ix->rank + 1];
    ok = up->dims[d] == want;
  }
  if (!ok) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "Must have updates.shape = indices.shape + "
                         "params.shape[1:] or updates.shape = [], got "
                         "updates.shape %s, indices.shape %s, params.shape %s "
                         "(variable %s)", tf_shape_str(up, x, sizeof x),
                         tf_shape_str(ix, y, sizeof y),
                         tf_shape_str(p, z, sizeof z), v->base.name);
  }
  return TF_OK;
}

static int64_t index_at(const tf_tensor *idx, int64_t i) {
  return idx->dtype == TF_INT32 ? ((const int32_t *)idx->data)[i]
                                : ((const int64_t *)idx->data)[i];
}

static tf_code check_indices(const tf_variable *v, const tf_tensor *value,
                             const tf_tensor *idx, tf_status *st) {
  int64_t dim0 = value->shape.dims[0];
  char pos[160];
  for (int64_t i = 0; i < idx->n; i++) {
    int64_t k = index_at(idx, i);
    if (k < 0 || k >= dim0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "indices%s = %" PRId64 " is not in [0, %" PRId64
                           ") (variable %s)",
                           position_str(&idx->shape, i, pos, sizeof pos), k,
                           dim0, v->base.name);
    }
  }
  return TF_OK;
}

/* dst[0..n) op= src[0..n) (src_step 0: one scalar for every element). */
#define SCATTER_LOOP(T, U)                                                     \
  do {                                                                         \
    T *d = dst;                                                                \
    const T *s = src;                                                          \
    for (int64_t i = 0; i < n; i++) {                                          \
      U x = (U)s[i * step];                                                    \
      d[i] = sub ? (T)((U)d[i] - x) : (T)((U)d[i] + x);                        \
    }                                                                          \
  } while (0)

static void scatter_arith(tf_dtype dt, bool sub, void *dst, const void *src,
                          int64_t n, int64_t step) {
  switch (dt) {
  case TF_FLOAT32: SCATTER_LOOP(float, float); break;
  case TF_FLOAT64: SCATTER_LOOP(double, double); break;
  case TF_INT32: SCATTER_LOOP(int32_t, uint32_t); break;
  case TF_INT64: SCATTER_LOOP(int64_t, uint64_t); break;
  default: TF_PANIC("ScatterAdd/Sub registered for %s", tf_dtype_name(dt));
  }
}

/* Copies row elements for ScatterUpdate (strings deep, scalars repeated). */
static tf_code scatter_copy(tf_tensor *value, int64_t at, const tf_tensor *upd,
                            int64_t from, int64_t n, int64_t step,
                            tf_status *st) {
  size_t es = tf_dtype_size(value->dtype);
  char *dst = (char *)value->data + (size_t)at * es;
  const char *src = (const char *)upd->data + (size_t)from * es;
  if (value->dtype == TF_STRING) {
    const tf_string *s = (const tf_string *)src;
    for (int64_t i = 0; i < n; i++) {
      TF_TRY(tf_tensor_set_string(value, at + i, s[i * step].data,
                                  s[i * step].len, st));
    }
  } else if (step == 1) {
    memcpy(dst, src, (size_t)n * es);
  } else {
    for (int64_t i = 0; i < n; i++) {
      memcpy(dst + (size_t)i * es, src, es);
    }
  }
  return TF_OK;
}

static tf_code scatter_apply(void *arg, tf_variable *v, tf_tensor *value,
                             tf_status *st) {
  const scatter_arg *a = arg;
  TF_TRY(check_scatter_shapes(v, value, a, st));
  TF_TRY(check_indices(v, value, a->indices, st));
  int64_t dim0 = value->shape.dims[0];
  int64_t row = dim0 > 0 ? value->n / dim0 : 0;
  bool scalar = a->updates->shape.rank == 0;
  int64_t step = scalar ? 0 : 1;
  size_t es = tf_dtype_size(value->dtype);
  for (int64_t i = 0; i < a->indices->n; i++) {
    int64_t at = index_at(a->indices, i) * row, from = scalar ? 0 : i * row;
    if (a->mode == SCATTER_UPDATE) {
      TF_TRY(scatter_copy(value, at, a->updates, from, row, step, st));
    } else {
      scatter_arith(value->dtype, a->mode == SCATTER_SUB,
                    (char *)value->data + (size_t)at * es,
                    (const char *)a->updates->data + (size_t)from * es, row,
                    step);
    }
  }
  return TF_OK;
}

static tf_code scatter_compute(tf_kernel_ctx *ctx, enum scatter_mode mode) {
  tf_variable *v;
  TF_TRY(ref_variable(ctx, 0, &v));
  const tf_tensor *idx = ctx->inputs[1];
  if (idx == NULL || (idx->dtype != TF_INT32 && idx->dtype != TF_INT64)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices must be int32 or int64, got %s",
                           idx ? tf_dtype_name(idx->dtype) : "nothing");
  }
  TF_TRY(check_value_dtype(ctx, v, ctx->inputs[2], "updates"));
  scatter_arg a = {mode, idx, ctx->inputs[2]};
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_variable_update(v, scatter_apply, &a, &local);
  return finish_update(ctx, v, rc, &local);
}

static tf_code scatter_update_compute(tf_kernel_ctx *ctx) {
  return scatter_compute(ctx, SCATTER_UPDATE);
}

static tf_code scatter_add_compute(tf_kernel_ctx *ctx) {
  return scatter_compute(ctx, SCATTER_ADD);
}

static tf_code scatter_sub_compute(tf_kernel_ctx *ctx) {
  return scatter_compute(ctx, SCATTER_SUB);
}

/* ---- IsVariableInitialized ----------------------------------------------- */

static tf_code is_init_compute(tf_kernel_ctx *ctx) {
  tf_variable *v;
  TF_TRY(ref_variable(ctx, 0, &v));
  tf_tensor *out;
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &scalar, &out));
  *(bool *)out->data = tf_variable_is_initialized(v);
  return TF_OK;
}

/* ---- registration -------------------------------------------------------- */

#define CPU .device_type = TF_DEVICE_CPU
#define ARITH(name, fn)                                                        \
  {.op = name, CPU, .dtype = TF_FLOAT32, .compute = fn},                       \
      {.op = name, CPU, .dtype = TF_FLOAT64, .compute = fn},                   \
      {.op = name, CPU, .dtype = TF_INT32, .compute = fn},                     \
      {.op = name, CPU, .dtype = TF_INT64, .compute = fn}

static const tf_kernel_def state_kernels[] = {
    {.op = "VariableV2", CPU, .type_attr = "dtype", .init = var_init,
     .compute = var_compute, .free_state = var_free_state,
     .flags = TF_KERNEL_CHEAP},
    {.op = "IsVariableInitialized", CPU, .type_attr = "dtype",
     .compute = is_init_compute, .flags = TF_KERNEL_CHEAP},
    {.op = "Assign", CPU, .init = assign_init, .compute = assign_compute},
    {.op = "ScatterUpdate", CPU, .compute = scatter_update_compute},
    ARITH("AssignAdd", assign_add_compute),
    ARITH("AssignSub", assign_sub_compute),
    ARITH("ScatterAdd", scatter_add_compute),
    ARITH("ScatterSub", scatter_sub_compute),
};

TF_REGISTER_KERNELS(state_kernels)
