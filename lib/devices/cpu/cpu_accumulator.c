/* cpu_accumulator.c: the conditional accumulator resource (see
 * cpu_accumulator.h) and the CPU kernels of the accumulator ops
 * (ops_accumulator.c). The resource keeps the round's sum as one tensor it
 * owns alone, the counters, and a FIFO list of waiting takes;
 * AccumulatorTakeGradient is an asynchronous kernel that hands the
 * accumulator a callback completing it and returns at once.
 *
 * flush() hands the sum to the head take whenever enough gradients are in,
 * collecting finished takes on a local list that complete_all() runs after
 * the lock is released (dividing a MEAN there, on a tensor nobody else
 * holds). A waiter is freed when its last hold is dropped: one hold for its
 * completion and one, while registered, for its cancellation callback, so
 * neither path can free it under the other (as queue.c does). Integer sums
 * wrap around as TensorFlow's do, computed in unsigned arithmetic so that
 * no signed overflow happens; 16-bit floats add in float32. */
#include "lib/devices/cpu/cpu_accumulator.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/variable.h"

typedef struct waiter waiter;

struct tf__accumulator {
  tf_resource base;
  pthread_mutex_t mu;
  tf__accumulator_config cfg;
  bool closed;                /* shut down: takes fail */
  int64_t global_step;
  int64_t count;              /* gradients in sum */
  tf_tensor *sum;             /* NULL while count == 0; owned alone */
  int64_t applied, dropped, taken;
  waiter *head, *tail;        /* waiting takes, oldest first */
};

struct waiter {
  waiter *next;         /* in the accumulator's list */
  waiter *next_done;    /* on a completion list */
  tf__accumulator *acc; /* a reference */
  int64_t want;         /* num_required */
  bool pending;
  tf_tensor *result;    /* the taken sum (count gradients), or NULL */
  int64_t count;
  tf_cancel *cancel;
  uint64_t token;
  tf__refcount holds;
  tf_status st;
  tf__accumulator_done_fn done;
  void *arg;
};

typedef struct done_list {
  waiter *head, *tail;
} done_list;

static const char *acc_name(const tf__accumulator *a) { return a->base.name; }

/* ---- arithmetic ------------------------------------------------------------ */

/* X(dtype, element type, unsigned type for wrapping adds) */
#define ACC_SINTS(X)                                                           \
  X(TF_INT8, int8_t, uint8_t) X(TF_INT16, int16_t, uint16_t)                   \
  X(TF_INT32, int32_t, uint32_t) X(TF_INT64, int64_t, uint64_t)
#define ACC_UINTS(X)                                                           \
  X(TF_UINT8, uint8_t, uint8_t) X(TF_UINT16, uint16_t, uint16_t)               \
  X(TF_UINT32, uint32_t, uint32_t) X(TF_UINT64, uint64_t, uint64_t)

#define ACC_FLOATS(X) X(TF_FLOAT32, float) X(TF_FLOAT64, double)

bool tf__accumulator_dtype_ok(tf_dtype dt) {
  return tf_dtype_is_numeric(dt) && dt != TF_BOOL && dt != TF_STRING;
}

/* sum[i] += g[i] for n elements of dtype dt. */
static void add_into(tf_dtype dt, void *sum, const void *g, int64_t n) {
  switch (dt) {
#define ADD_INT(D, T, U)                                                       \
  case D:                                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      ((T *)sum)[i] = (T)((U)((T *)sum)[i] + (U)((const T *)g)[i]);            \
    }                                                                          \
    return;
    ACC_SINTS(ADD_INT)
    ACC_UINTS(ADD_INT)
#undef ADD_INT
#define ADD_FLOAT(D, T)                                                        \
  case D:                                                                      \
    for (int64_t i = 0; i < n; i++) ((T *)sum)[i] += ((const T *)g)[i];        \
    return;
    ACC_FLOATS(ADD_FLOAT)
#undef ADD_FLOAT
  case TF_FLOAT16:
    for (int64_t i = 0; i < n; i++) {
      float s = tf_float16_to_float(((tf_float16 *)sum)[i]);
      float v = tf_float16_to_float(((const tf_float16 *)g)[i]);
      ((tf_float16 *)sum)[i] = tf_float_to_float16(s + v);
    }
    return;
  case TF_BFLOAT16:
    for (int64_t i = 0; i < n; i++) {
      float s = tf_bfloat16_to_float(((tf_bfloat16 *)sum)[i]);
      float v = tf_bfloat16_to_float(((const tf_bfloat16 *)g)[i]);
      ((tf_bfloat16 *)sum)[i] = tf_float_to_bfloat16(s + v);
    }
    return;
  case TF_COMPLEX64:
    for (int64_t i = 0; i < n; i++) {
      ((tf_complex64 *)sum)[i].re += ((const tf_complex64 *)g)[i].re;
      ((tf_complex64 *)sum)[i].im += ((const tf_complex64 *)g)[i].im;
    }
    return;
  default:
    TF_PANIC("accumulator of dtype %s", tf_dtype_name(dt));
  }
}

/* x[i] /= count (integers truncate toward zero, as TF's). */
static void divide(tf_tensor *x, int64_t count) {
  int64_t n = x->n;
  void *p = x->data;
  switch (x->dtype) {
#define DIV_SINT(D, T, U)                                                      \
  case D:                                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      ((T *)p)[i] = (T)((int64_t)((T *)p)[i] / count);                         \
    }                                                                          \
    return;
    ACC_SINTS(DIV_SINT)
#undef DIV_SINT
#define DIV_UINT(D, T, U)                                                      \
  case D:                                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      ((T *)p)[i] = (T)((uint64_t)((T *)p)[i] / (uint64_t)count);              \
    }                                                                          \
    return;
    ACC_UINTS(DIV_UINT)
#undef DIV_UINT
#define DIV_FLOAT(D, T)                                                        \
  case D:                                                                      \
    for (int64_t i = 0; i < n; i++) ((T *)p)[i] /= (T)count;                   \
    return;
    ACC_FLOATS(DIV_FLOAT)
#undef DIV_FLOAT
  case TF_FLOAT16:
    for (int64_t i = 0; i < n; i++) {
      float v = tf_float16_to_float(((tf_float16 *)p)[i]);
      ((tf_float16 *)p)[i] = tf_float_to_float16(v / (float)count);
    }
    return;
  case TF_BFLOAT16:
    for (int64_t i = 0; i < n; i++) {
      float v = tf_bfloat16_to_float(((tf_bfloat16 *)p)[i]);
      ((tf_bfloat16 *)p)[i] = tf_float_to_bfloat16(v / (float)count);
    }
    return;
  case TF_COMPLEX64:
    for (int64_t i = 0; i < n; i++) {
      ((tf_complex64 *)p)[i].re /= (float)count;
      ((tf_complex64 *)p)[i].im /= (float)count;
    }
    return;
  default:
    TF_PANIC("accumulator of dtype %s", tf_dtype_name(x->dtype));
  }
}

/* ---- waiters ------------------------------------------------------------- */

static void waiter_free(void *arg) {
  waiter *w = arg;
  tf_tensor_unref(w->result);
  tf_resource_unref(&w->acc->base);
  free(w);
}

static void waiter_release(waiter *w) { tf__ref_put(&w->holds, waiter_free, w); }

static void list_remove(tf__accumulator *a, waiter *w) {
  waiter *prev = NULL;
  for (waiter *x = a->head; x != NULL; prev = x, x = x->next) {
    if (x != w) {
      continue;
    }
    if (prev) {
      prev->next = w->next;
    } else {
      a->head = w->next;
    }
    if (a->tail == w) {
      a->tail = prev;
    }
    return;
  }
}

/* Takes w off the list and onto d. */
static void finish(tf__accumulator *a, waiter *w, done_list *d) {
  list_remove(a, w);
  w->pending = false;
  w->next_done = NULL;
  if (d->tail) {
    d->tail->next_done = w;
  } else {
    d->head = w;
  }
  d->tail = w;
}

static void fail(tf__accumulator *a, waiter *w, done_list *d, tf_code code,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void fail(tf__accumulator *a, waiter *w, done_list *d, tf_code code,
                 const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tf_status_set(&w->st, code, "ConditionalAccumulator '%s': %s", acc_name(a),
                msg);
  finish(a, w, d);
}

/* Serves the head takes while enough gradients are in. */
static void flush(tf__accumulator *a, done_list *d) {
  while (a->head != NULL && a->count >= a->head->want) {
    waiter *w = a->head;
    w->result = a->sum;
    w->count = a->count;
    a->sum = NULL;
    a->count = 0;
    a->global_step++;
    a->taken++;
    finish(a, w, d);
  }
}

/* Completes the waiters on d, in order; no accumulator lock may be held. A
 * waiter still registered is deregistered first, unless its step's
 * cancellation has started: then its callback runs (or ran) and drops its
 * own hold, and deregistering could wait on the thread running it. */
static void complete_all(done_list *d) {
  waiter *w = d->head;
  while (w != NULL) {
    waiter *next = w->next_done;
    if (w->token != 0 && !tf_cancel_is_cancelled(w->cancel) &&
        tf_cancel_deregister(w->cancel, w->token)) {
      waiter_release(w); /* the callback's hold: it will never run */
    }
    tf_tensor *result = w->result;
    w->result = NULL;
    if (result != NULL && w->acc->cfg.mean) {
      divide(result, w->count);
    }
    w->done(w->arg, &w->st, result);
    waiter_release(w);
    w = next;
  }
  d->head = d->tail = NULL;
}

/* Fails w with its step's cancellation reason. */
static void fail_cancelled(tf__accumulator *a, waiter *w, done_list *d) {
  tf_status why;
  tf_code code = tf_cancel_reason(w->cancel, &why);
  fail(a, w, d, code != TF_OK ? code : TF_CANCELLED,
       "take of %lld gradients cancelled: %s", (long long)w->want, why.msg);
}

/* The step of waiter arg was cancelled. */
static void on_cancel(void *arg) {
  waiter *w = arg;
  tf__accumulator *a = w->acc;
  done_list d = {0};
  pthread_mutex_lock(&a->mu);
  if (w->pending) {
    fail_cancelled(a, w, &d);
  }
  pthread_mutex_unlock(&a->mu);
  complete_all(&d);
  waiter_release(w);
}

/* ---- operations ------------------------------------------------------------ */

tf_code tf__accumulator_take(tf__accumulator *a, int64_t num_required,
                             tf_cancel *cancel, tf__accumulator_done_fn done,
                             void *arg, tf_status *st) {
  if (num_required < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "ConditionalAccumulator "
                         "'%s': num_required must be positive, got %lld",
                         acc_name(a), (long long)num_required);
  }
  waiter *w = tf__xcalloc(1, sizeof *w);
  w->acc = a;
  tf_resource_ref(&a->base);
  w->want = num_required;
  w->pending = true;
  w->cancel = cancel;
  w->done = done;
  w->arg = arg;
  tf__ref_init(&w->holds, 1);
  tf_status_init(&w->st);
  done_list d = {0};
  pthread_mutex_lock(&a->mu);
  if (a->closed) {
    pthread_mutex_unlock(&a->mu);
    waiter_release(w);
    return tf_status_set(st, TF_CANCELLED, "ConditionalAccumulator '%s' was "
                         "shut down (its container was reset or the session "
                         "closed)", acc_name(a));
  }
  w->next = NULL;
  if (a->tail) {
    a->tail->next = w;
  } else {
    a->head = w;
  }
  a->tail = w;
  flush(a, &d);
  if (w->pending && w->cancel != NULL) {
    tf__ref_get(&w->holds);
    w->token = tf_cancel_register(w->cancel, on_cancel, w);
    if (w->token == 0) {
      bool last = tf__ref_drop(&w->holds); /* the completion's remains */
      TF_ASSERT(!last);
      fail_cancelled(a, w, &d);
    }
  }
  pthread_mutex_unlock(&a->mu);
  complete_all(&d);
  return TF_OK;
}

/* g's shape against the declared shape and this round's; under the lock. */
static tf_code check_gradient(const tf__accumulator *a, const tf_tensor *g,
                              tf_status *st) {
  char x[160], y[160];
  if (g->dtype != a->cfg.dtype) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "ConditionalAccumulator "
                         "'%s' holds %s gradients, got a %s gradient",
                         acc_name(a), tf_dtype_name(a->cfg.dtype),
                         tf_dtype_name(g->dtype));
  }
  if (!tf_variable_shape_compatible(&a->cfg.shape, &g->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "ConditionalAccumulator "
                         "'%s' has shape %s, got a gradient of shape %s",
                         acc_name(a), tf_shape_str(&a->cfg.shape, x, sizeof x),
                         tf_shape_str(&g->shape, y, sizeof y));
  }
  if (a->sum != NULL && !tf_shape_equal(&a->sum->shape, &g->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "ConditionalAccumulator "
                         "'%s' holds gradients of shape %s this step, got a "
                         "gradient of shape %s", acc_name(a),
                         tf_shape_str(&a->sum->shape, x, sizeof x),
                         tf_shape_str(&g->shape, y, sizeof y));
  }
  return TF_OK;
}

/* Counts g into the round; under the lock. */
static tf_code accumulate(tf__accumulator *a, const tf_tensor *g,
                          tf_status *st) {
  if (a->sum == NULL) {
    tf_status tmp;
    if (tf_tensor_copy(g, &a->sum, &tmp) != TF_OK) {
      a->sum = NULL;
      return tf_status_set(st, tmp.code, "ConditionalAccumulator '%s': %s",
                           acc_name(a), tmp.msg);
    }
  } else {
    add_into(a->cfg.dtype, a->sum->data, g->data, g->n);
  }
  a->count++;
  a->applied++;
  return TF_OK;
}

tf_code tf__accumulator_apply(tf__accumulator *a, int64_t local_step,
                              const tf_tensor *g, bool *applied,
                              tf_status *st) {
  done_list d = {0};
  bool counted = false;
  pthread_mutex_lock(&a->mu);
  tf_code rc = TF_OK;
  if (local_step < a->global_step) {
    a->dropped++; /* stale: computed for an earlier step; not even checked */
  } else if ((rc = check_gradient(a, g, st)) == TF_OK) {
    rc = accumulate(a, g, st);
    counted = rc == TF_OK;
    flush(a, &d);
  }
  pthread_mutex_unlock(&a->mu);
  complete_all(&d);
  if (applied != NULL) {
    *applied = counted;
  }
  return rc;
}

void tf__accumulator_set_global_step(tf__accumulator *a, int64_t step) {
  pthread_mutex_lock(&a->mu);
  a->global_step = step;
  pthread_mutex_unlock(&a->mu);
}

tf__accumulator_stats tf__accumulator_get_stats(tf__accumulator *a) {
  pthread_mutex_lock(&a->mu);
  tf__accumulator_stats s = {.global_step = a->global_step,
                             .num_accumulated = a->count,
                             .num_applied = a->applied,
                             .num_dropped = a->dropped,
                             .num_taken = a->taken};
  pthread_mutex_unlock(&a->mu);
  return s;
}

/* ---- the resource -------------------------------------------------------- */

static void acc_free(tf_resource *r) {
  tf__accumulator *a = (tf__accumulator *)r;
  TF_ASSERT(a->head == NULL); /* every waiter holds a reference */
  tf_tensor_unref(a->sum);
  pthread_mutex_destroy(&a->mu);
  tf_resource_fini(&a->base);
  free(a);
}

static void acc_shutdown(tf_resource *r) {
  tf__accumulator *a = (tf__accumulator *)r;
  done_list d = {0};
  pthread_mutex_lock(&a->mu);
  a->closed = true;
  while (a->head != NULL) {
    fail(a, a->head, &d, TF_CANCELLED, "shut down (its container was reset "
         "or the session closed) while a take of %lld gradients waited",
         (long long)a->head->want);
  }
  pthread_mutex_unlock(&a->mu);
  complete_all(&d);
}

const tf_resource_type tf__accumulator_type = {
    .name = "ConditionalAccumulator", .free = acc_free, .read = NULL,
    .shutdown = acc_shutdown};

tf__accumulator *tf__accumulator_new(const char *container, const char *name,
                                     const tf__accumulator_config *cfg) {
  TF_ASSERT(tf__accumulator_dtype_ok(cfg->dtype));
  tf__accumulator *a = tf__xcalloc(1, sizeof *a);
  tf_resource_init(&a->base, &tf__accumulator_type, container, name);
  pthread_mutex_init(&a->mu, NULL);
  a->cfg = *cfg;
  return a;
}

tf__accumulator *tf__accumulator_cast(tf_resource *r) {
  return r != NULL && r->type == &tf__accumulator_type ? (tf__accumulator *)r
                                                       : NULL;
}

tf_resource *tf__accumulator_resource(tf__accumulator *a) { return &a->base; }
tf_dtype tf__accumulator_dtype(const tf__accumulator *a) { return a->cfg.dtype; }

tf_code tf__accumulator_matches(const tf__accumulator *a,
                                const tf__accumulator_config *cfg,
                                tf_status *st) {
  char x[160], y[160];
  tf_shape merged;
  const char *what = NULL;
  if (cfg->dtype != a->cfg.dtype) {
    what = "dtype";
  } else if (cfg->mean != a->cfg.mean) {
    what = "reduction_type";
  } else if (tf_shape_merge(&a->cfg.shape, &cfg->shape, &merged, NULL) != TF_OK) {
    what = "shape";
  }
  if (what == NULL) {
    return TF_OK;
  }
  return tf_status_set(st, TF_INVALID_ARGUMENT, "shared ConditionalAccumulator "
                       "'%s' has %s %s, reduction_type %s and shape %s; this "
                       "op asks for %s %s, reduction_type %s and shape %s (the "
                       "%s differs)", acc_name(a), "dtype",
                       tf_dtype_name(a->cfg.dtype), a->cfg.mean ? "MEAN" : "SUM",
                       tf_shape_str(&a->cfg.shape, x, sizeof x), "dtype",
                       tf_dtype_name(cfg->dtype), cfg->mean ? "MEAN" : "SUM",
                       tf_shape_str(&cfg->shape, y, sizeof y), what);
}

/* ==== kernels of the accumulator ops (ops_accumulator.c) ================== */

/* ---- ConditionalAccumulator ------------------------------------------------ */

typedef struct cop_state {
  tf__accumulator_config cfg;
  char *container;
  char *name; /* shared_name, else the node's name */
} cop_state;

static void cop_free_state(void *p) {
  cop_state *s = p;
  if (s != NULL) {
    free(s->container);
    free(s->name);
    free(s);
  }
}

static tf_code cop_init(const tf_node *node, void **state, tf_status *st) {
  tf__accumulator_config cfg = {0};
  const char *container, *shared, *reduction = "MEAN";
  TF_TRY(tf_node_attr_get_type(node, "dtype", &cfg.dtype, st));
  TF_TRY(tf_node_attr_get_shape(node, "shape", &cfg.shape, st));
  TF_TRY(tf_node_attr_get_string(node, "container", &container, st));
  TF_TRY(tf_node_attr_get_string(node, "shared_name", &shared, st));
  if (tf_node_attr(node, "reduction_type") != NULL) {
    TF_TRY(tf_node_attr_get_string(node, "reduction_type", &reduction, st));
  }
  if (!tf__accumulator_dtype_ok(cfg.dtype)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s': cannot "
                         "accumulate gradients of dtype %s", tf_node_name(node),
                         tf_dtype_name(cfg.dtype));
  }
  if (strcmp(reduction, "MEAN") != 0 && strcmp(reduction, "SUM") != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s': reduction_type "
                         "must be 'MEAN' or 'SUM', got '%s'", tf_node_name(node),
                         reduction);
  }
  cfg.mean = strcmp(reduction, "MEAN") == 0;
  cop_state *s = tf__xcalloc(1, sizeof *s);
  s->cfg = cfg;
  s->container = tf__xstrdup(container);
  s->name = tf__xstrdup(*shared ? shared : tf_node_name(node));
  *state = s;
  return TF_OK;
}

static tf_code cop_create(void *arg, tf_resource **out, tf_status *st) {
  const cop_state *s = arg;
  (void)st;
  *out = tf__accumulator_resource(
      tf__accumulator_new(s->container, s->name, &s->cfg));
  return TF_OK;
}

static tf_code cop_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  const cop_state *s = ctx->state;
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  if (tf_resource_lookup_or_create(ctx->step->resources, s->container, s->name,
                                   &tf__accumulator_type, cop_create,
                                   (void *)s, &r, &local) == TF_OK &&
      tf__accumulator_matches(tf__accumulator_cast(r), &s->cfg, &local) == TF_OK) {
    tf_kernel_set_ref_output(ctx, 0, r);
  }
  tf_resource_unref(r);
  if (local.code != TF_OK) {
    return tf_kernel_error(ctx, local.code, "%s", local.msg);
  }
  return TF_OK;
}

/* ---- shared by the ops on a handle ------------------------------------------ */

/* The accumulator on ref input 0, or an error naming what is there. */
static tf_code handle_acc(tf_kernel_ctx *ctx, tf__accumulator **out) {
  TF_TRY(tf_kernel_need_step(ctx));
  tf_resource *r = ctx->in_refs ? ctx->in_refs[0] : NULL;
  *out = tf__accumulator_cast(r);
  if (*out == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "input 0 ('handle') "
                           "must be a ConditionalAccumulator, got %s",
                           r ? r->type->name : "nothing");
  }
  return TF_OK;
}

/* Scalar input i (named name) as an integer. */
static tf_code scalar_input(tf_kernel_ctx *ctx, int i, const char *name,
                            int64_t *v) {
  const tf_tensor *t = ctx->inputs[i];
  *v = 0;
  if (t->shape.rank != 0) {
    char b[96];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s must be a scalar, "
                           "got shape %s", name,
                           tf_shape_str(&t->shape, b, sizeof b));
  }
  *v = tf_tensor_get_i64(t, 0);
  return TF_OK;
}

/* The node's dtype attr must be the accumulator's. */
static tf_code check_dtype(tf_kernel_ctx *ctx, tf__accumulator *a) {
  tf_dtype want;
  tf_status tmp;
  if (tf_node_attr_get_type(ctx->node, "dtype", &want, &tmp) != TF_OK) {
    return tf_kernel_error(ctx, tmp.code, "%s", tmp.msg);
  }
  if (want != tf__accumulator_dtype(a)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "dtype is %s but "
                           "ConditionalAccumulator '%s' holds %s",
                           tf_dtype_name(want), tf__accumulator_resource(a)->name,
                           tf_dtype_name(tf__accumulator_dtype(a)));
  }
  return TF_OK;
}

/* ---- AccumulatorApplyGradient ---------------------------------------------- */

static tf_code apply_compute(tf_kernel_ctx *ctx) {
  tf__accumulator *a;
  int64_t local_step;
  TF_TRY(handle_acc(ctx, &a));
  TF_TRY(check_dtype(ctx, a));
  TF_TRY(scalar_input(ctx, 1, "local_step", &local_step));
  tf_status st;
  if (tf__accumulator_apply(a, local_step, ctx->inputs[2], NULL, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  return TF_OK;
}

/* ---- AccumulatorTakeGradient ------------------------------------------------ */

typedef struct pending_take {
  tf_kernel_ctx *ctx;
  void (*done)(void *arg);
  void *arg;
} pending_take;

static void take_done(void *arg, const tf_status *st, tf_tensor *result) {
  pending_take p = *(pending_take *)arg;
  free(arg);
  if (st->code != TF_OK) {
    tf_kernel_error(p.ctx, st->code, "%s", st->msg);
  } else {
    tf_kernel_set_output(p.ctx, 0, result);
  }
  tf_tensor_unref(result);
  p.done(p.arg);
}

static void take_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf__accumulator *a;
  int64_t num_required;
  if (handle_acc(ctx, &a) != TF_OK || check_dtype(ctx, a) != TF_OK ||
      scalar_input(ctx, 1, "num_required", &num_required) != TF_OK) {
    done(arg);
    return;
  }
  pending_take *p = tf__xmalloc(sizeof *p);
  *p = (pending_take){ctx, done, arg};
  tf_status st;
  if (tf__accumulator_take(a, num_required, ctx->step->cancel, take_done, p,
                           &st) != TF_OK) {
    free(p);
    tf_kernel_error(ctx, st.code, "%s", st.msg);
    done(arg);
  }
}

/* ---- AccumulatorNumAccumulated, AccumulatorSetGlobalStep --------------------- */

static tf_code num_compute(tf_kernel_ctx *ctx) {
  tf__accumulator *a;
  TF_TRY(handle_acc(ctx, &a));
  tf_tensor *out;
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT32, &scalar, &out));
  int64_t n = tf__accumulator_get_stats(a).num_accumulated;
  *(int32_t *)out->data = (int32_t)TF_MIN(n, INT32_MAX);
  return TF_OK;
}

static tf_code set_step_compute(tf_kernel_ctx *ctx) {
  tf__accumulator *a;
  int64_t step;
  TF_TRY(handle_acc(ctx, &a));
  TF_TRY(scalar_input(ctx, 1, "new_global_step", &step));
  tf__accumulator_set_global_step(a, step);
  return TF_OK;
}

#define CPU(name) .op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY

static const tf_kernel_def accumulator_kernels[] = {
    {CPU("ConditionalAccumulator"), .type_attr = "dtype", .init = cop_init,
     .compute = cop_compute, .free_state = cop_free_state,
     .flags = TF_KERNEL_CHEAP},
    {CPU("AccumulatorApplyGradient"), .type_attr = "dtype",
     .compute = apply_compute},
    {CPU("AccumulatorTakeGradient"), .type_attr = "dtype",
     .compute_async = take_async},
    {CPU("AccumulatorNumAccumulated"), .compute = num_compute,
     .flags = TF_KERNEL_CHEAP},
    {CPU("AccumulatorSetGlobalStep"), .compute = set_step_compute,
     .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(accumulator_kernels)
