/* cpu_stack.c: CPU kernels of StackV2, StackPushV2, StackPopV2 and
 * StackCloseV2 (ops_stack.c). A stack is owned by its handle tensor, a
 * scalar int64 id wrapped around the stack (tf_tensor_wrap): when the last
 * reference to the handle goes (at the latest when the step ends and the
 * executor drops its tensors) the stack and the tensors on it are freed.
 * Kernels find a stack by id in one process-wide table, and push, pop or
 * close it under that table's lock, so a stale or forged id is an error,
 * never a dangling pointer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "tf/graph.h"

/* The most elements an unlimited stack (max_size < 0) holds. */
#define STACK_UNLIMITED_CAP (1 << 24)

typedef struct stack {
  int64_t id; /* first: the handle tensor's element */
  char *name;
  tf_dtype elem_type;
  int64_t max_size; /* < 0: unlimited */
  bool closed;
  tf_tensor **v;
  int64_t n, cap;
} stack;

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static stack **table;
static int64_t table_n, table_cap;
static atomic_int_fast64_t next_id = 1;

static void drop_elems(stack *s) {
  for (int64_t i = 0; i < s->n; i++) {
    tf_tensor_unref(s->v[i]);
  }
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

/* The handle's release: unlists the stack and frees it. */
static void stack_release(void *arg) {
  stack *s = arg;
  pthread_mutex_lock(&table_mu);
  for (int64_t i = 0; i < table_n; i++) {
    if (table[i] == s) {
      table[i] = table[--table_n];
      break;
    }
  }
  pthread_mutex_unlock(&table_mu);
  drop_elems(s);
  free(s->name);
  free(s);
}

/* The live stack with the handle's id, or NULL; table_mu must be held. */
static stack *find_locked(const tf_tensor *handle) {
  if (handle->dtype != TF_INT64 || handle->n != 1) {
    return NULL;
  }
  int64_t id = *(const int64_t *)handle->data;
  for (int64_t i = 0; i < table_n; i++) {
    if (table[i]->id == id) {
      return table[i];
    }
  }
  return NULL;
}

static tf_code stack_new_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *ms = ctx->inputs[0];
  if (ms->n != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "max_size must be a "
                           "scalar, got %lld elements", (long long)ms->n);
  }
  const tf_attr_value *et = tf_node_attr(ctx->node, "elem_type");
  const tf_attr_value *nm = tf_node_attr(ctx->node, "stack_name");
  stack *s = tf__xcalloc(1, sizeof *s);
  s->id = atomic_fetch_add(&next_id, 1);
  s->elem_type = et ? et->u.t : TF_DTYPE_INVALID;
  s->max_size = *(const int32_t *)ms->data;
  s->name = tf__xstrdup(nm && nm->u.s[0] ? nm->u.s : tf_node_name(ctx->node));
  pthread_mutex_lock(&table_mu);
  if (table_n == table_cap) {
    table_cap = table_cap ? 2 * table_cap : 16;
    table = tf__xrealloc(table, (size_t)table_cap * sizeof *table);
  }
  table[table_n++] = s;
  pthread_mutex_unlock(&table_mu);
  tf_tensor *h;
  tf_shape sc = tf_shape_scalar();
  if (tf_tensor_wrap(TF_INT64, &sc, &s->id, sizeof s->id, stack_release, s,
                     &h, ctx->status) != TF_OK) {
    return ctx->status->code;
  }
  tf_kernel_set_output(ctx, 0, h);
  tf_tensor_unref(h);
  return TF_OK;
}

/* Pushes t on s (table_mu held). */
static tf_code push_locked(tf_kernel_ctx *ctx, stack *s, tf_tensor *t) {
  if (t->dtype != s->elem_type) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "stack '%s' holds %s "
                           "elements, got a %s tensor", s->name,
                           tf_dtype_name(s->elem_type), tf_dtype_name(t->dtype));
  }
  if (s->max_size >= 0 && s->n >= s->max_size) {
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED, "stack '%s' is full: "
                           "it holds its max_size of %lld elements", s->name,
                           (long long)s->max_size);
  }
  if (s->n >= STACK_UNLIMITED_CAP) {
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED, "stack '%s' is full: "
                           "an unlimited stack holds at most %d elements",
                           s->name, STACK_UNLIMITED_CAP);
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->v = tf__xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
  }
  s->v[s->n++] = tf_tensor_ref(t);
  return TF_OK;
}

/* Finds the stack on input 0 (locking table_mu on success), or fails
 * naming the handle. */
static stack *lookup(tf_kernel_ctx *ctx) {
  pthread_mutex_lock(&table_mu);
  stack *s = find_locked(ctx->inputs[0]);
  if (s == NULL) {
    pthread_mutex_unlock(&table_mu);
    tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "the handle is not a live "
                    "stack (a StackV2 output of this step)");
  } else if (s->closed) {
    pthread_mutex_unlock(&table_mu);
    tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "stack '%s' is closed", s->name);
    s = NULL;
  }
  return s;
}

static tf_code stack_push_compute(tf_kernel_ctx *ctx) {
  stack *s = lookup(ctx);
  if (s == NULL) {
    return ctx->status->code;
  }
  tf_code rc = push_locked(ctx, s, ctx->inputs[1]);
  pthread_mutex_unlock(&table_mu);
  if (rc == TF_OK) {
    tf_kernel_set_output(ctx, 0, ctx->inputs[1]);
  }
  return rc;
}

static tf_code stack_pop_compute(tf_kernel_ctx *ctx) {
  stack *s = lookup(ctx);
  if (s == NULL) {
    return ctx->status->code;
  }
  if (s->n == 0) {
    pthread_mutex_unlock(&table_mu);
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "stack '%s' is empty: "
                           "nothing to pop", s->name);
  }
  tf_tensor *t = s->v[--s->n];
  pthread_mutex_unlock(&table_mu);
  tf_kernel_set_output(ctx, 0, t);
  tf_tensor_unref(t);
  return TF_OK;
}

static tf_code stack_close_compute(tf_kernel_ctx *ctx) {
  stack *s = lookup(ctx);
  if (s == NULL) {
    return ctx->status->code;
  }
  s->closed = true;
  drop_elems(s);
  pthread_mutex_unlock(&table_mu);
  return TF_OK;
}

#define STACK_KERNEL(name, fn)                                                 \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,            \
   .compute = fn, .flags = TF_KERNEL_CHEAP}

static const tf_kernel_def stack_kernels[] = {
    {.op = "StackV2", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "elem_type", .compute = stack_new_compute,
     .flags = TF_KERNEL_CHEAP},
    STACK_KERNEL("StackPushV2", stack_push_compute),
    {.op = "StackPopV2", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "elem_type", .compute = stack_pop_compute,
     .flags = TF_KERNEL_CHEAP},
    {.op = "StackCloseV2", .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY,
     .type_attr = "elem_type", .compute = stack_close_compute,
     .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(stack_kernels)
