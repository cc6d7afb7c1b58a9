/* cpu_queue.c: CPU kernels of the queue ops (ops_queue.c). FIFOQueue and
 * RandomShuffleQueue look up or create their queue in the step's resource
 * manager and output a ref to it; the enqueue and dequeue kernels are
 * asynchronous: they hand the queue a callback that completes the kernel
 * (maybe later, from another step's thread) and return at once. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/queue.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/util.h"

/* ---- FIFOQueue, RandomShuffleQueue ---------------------------------------- */

typedef struct qop_state {
  tf_queue_config cfg;
  tf_dtype dtypes[TF_QUEUE_MAX_COMPONENTS];
  tf_shape *shapes; /* NULL or cfg.n_components */
  char *container;
  char *name; /* shared_name, else the node's name */
} qop_state;

static void qop_free_state(void *p) {
  qop_state *s = p;
  if (s != NULL) {
    free(s->shapes);
    free(s->container);
    free(s->name);
    free(s);
  }
}

static tf_code int_attr(const tf_node *n, const char *name, int64_t dflt,
                        int64_t *v, tf_status *st) {
  *v = dflt;
  return tf_node_attr(n, name) ? tf_node_attr_get_int(n, name, v, st) : TF_OK;
}

/* Fills s->cfg's numbers from the node's attrs. */
static tf_code qop_numbers(const tf_node *node, qop_state *s, tf_status *st) {
  bool rs = strcmp(tf_node_op(node), "RandomShuffleQueue") == 0;
  s->cfg.kind = rs ? TF_QUEUE_RANDOM_SHUFFLE : TF_QUEUE_FIFO;
  TF_TRY(int_attr(node, "capacity", -1, &s->cfg.capacity, st));
  TF_TRY(int_attr(node, "min_after_dequeue", 0, &s->cfg.min_after_dequeue, st));
  TF_TRY(int_attr(node, "seed", 0, &s->cfg.seed, st));
  return int_attr(node, "seed2", 0, &s->cfg.seed2, st);
}

static tf_code qop_init(const tf_node *node, void **state, tf_status *st) {
  const tf_attr_value *ct = tf_node_attr(node, "component_types");
  const tf_attr_value *sh = tf_node_attr(node, "shapes");
  const char *container, *shared;
  TF_TRY(tf_node_attr_get_string(node, "container", &container, st));
  TF_TRY(tf_node_attr_get_string(node, "shared_name", &shared, st));
  if (ct == NULL || ct->n > TF_QUEUE_MAX_COMPONENTS || (sh && sh->n && sh->n != ct->n)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s': bad "
                         "component_types or shapes", tf_node_name(node));
  }
  qop_state *s = tf__xcalloc(1, sizeof *s);
  s->cfg.n_components = ct->n;
  memcpy(s->dtypes, ct->u.types, (size_t)ct->n * sizeof *s->dtypes);
  s->cfg.dtypes = s->dtypes;
  if (sh != NULL && sh->n > 0) {
    s->shapes = tf__xcalloc((size_t)sh->n, sizeof *s->shapes);
    memcpy(s->shapes, sh->u.shapes, (size_t)sh->n * sizeof *s->shapes);
    s->cfg.shapes = s->shapes;
  }
  s->container = tf__xstrdup(container);
  s->name = tf__xstrdup(*shared ? shared : tf_node_name(node));
  tf_status tmp;
  if (qop_numbers(node, s, st) != TF_OK ||
      tf_queue_config_check(&s->cfg, &tmp) != TF_OK) {
    if (st->code == TF_OK) {
      tf_status_set(st, tmp.code, "node '%s': %s", tf_node_name(node), tmp.msg);
    }
    qop_free_state(s);
    return st->code;
  }
  *state = s;
  return TF_OK;
}

static tf_code qop_create(void *arg, tf_resource **out, tf_status *st) {
  const qop_state *s = arg;
  (void)st;
  *out = tf_queue_resource(tf_queue_new(s->container, s->name, &s->cfg));
  return TF_OK;
}

static tf_code qop_compute(tf_kernel_ctx *ctx) {
  TF_TRY(tf_kernel_need_step(ctx));
  const qop_state *s = ctx->state;
  const tf_resource_type *type = s->cfg.kind == TF_QUEUE_FIFO
                                     ? &tf_fifo_queue_type
                                     : &tf_random_shuffle_queue_type;
  tf_resource *r = NULL;
  tf_status local;
  tf_status_init(&local);
  if (tf_resource_lookup_or_create(ctx->step->resources, s->container, s->name,
                                   type, qop_create, (void *)s, &r,
                                   &local) == TF_OK &&
      tf_queue_matches(tf_queue_cast(r), &s->cfg, &local) == TF_OK) {
    tf_kernel_set_ref_output(ctx, 0, r);
  }
  tf_resource_unref(r);
  if (local.code != TF_OK) {
    return tf_kernel_error(ctx, local.code, "%s", local.msg);
  }
  return TF_OK;
}

/* ---- shared by the ops on a handle ------------------------------------------ */

/* The queue on ref input 0, or an error naming what is there instead. */
static tf_code handle_queue(tf_kernel_ctx *ctx, tf_queue **out) {
  TF_TRY(tf_kernel_need_step(ctx));
  tf_resource *r = ctx->in_refs ? ctx->in_refs[0] : NULL;
  *out = tf_queue_cast(r);
  if (*out == NULL) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "input 0 ('handle') "
                           "must be a queue, got %s", r ? r->type->name : "nothing");
  }
  return TF_OK;
}

/* What an asynchronous kernel needs when the queue calls back. */
typedef struct pending_op {
  tf_kernel_ctx *ctx;
  void (*done)(void *arg);
  void *arg;
} pending_op;

static void op_done(void *arg, const tf_status *st, tf_tensor **tuple) {
  pending_op p = *(pending_op *)arg;
  free(arg);
  if (st->code != TF_OK) {
    tf_kernel_error(p.ctx, st->code, "%s", st->msg);
  }
  for (int j = 0; tuple != NULL && j < p.ctx->n_outputs; j++) {
    tf_kernel_set_output(p.ctx, j, tuple[j]);
    tf_tensor_unref(tuple[j]);
  }
  p.done(p.arg);
}

static pending_op *pending_new(tf_kernel_ctx *ctx, void (*done)(void *),
                               void *arg) {
  pending_op *p = tf__xmalloc(sizeof *p);
  *p = (pending_op){ctx, done, arg};
  return p;
}

/* ---- QueueEnqueue, QueueEnqueueMany ---------------------------------------- */

static void enqueue_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_queue *q;
  if (handle_queue(ctx, &q) != TF_OK) {
    done(arg);
    return;
  }
  bool many = strcmp(tf_node_op(ctx->node), "QueueEnqueueMany") == 0;
  pending_op *p = pending_new(ctx, done, arg);
  tf_status st;
  if (tf_queue_enqueue(q, ctx->inputs + 1, ctx->n_inputs - 1, many,
                       ctx->step->cancel, op_done, p, &st) != TF_OK) {
    free(p);
    tf_kernel_error(ctx, st.code, "%s", st.msg);
    done(arg);
  }
}

/* ---- QueueDequeue, QueueDequeueMany ---------------------------------------- */

/* The node's component_types must be the queue's. */
static tf_code check_outputs(tf_kernel_ctx *ctx, tf_queue *q) {
  int n = tf_queue_num_components(q);
  const tf_dtype *dt = tf_queue_dtypes(q);
  if (ctx->n_outputs != n) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "component_types has %d "
                           "types but queue '%s' has %d components",
                           ctx->n_outputs, tf_queue_resource(q)->name, n);
  }
  for (int j = 0; j < n; j++) {
    tf_dtype want = tf_node_output_type(ctx->node, j);
    if (want != dt[j]) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "component %d: "
                             "component_types says %s but queue '%s' holds "
                             "%s", j, tf_dtype_name(want),
                             tf_queue_resource(q)->name, tf_dtype_name(dt[j]));
    }
  }
  return TF_OK;
}

/* n of DequeueMany (-1 for Dequeue), or an error. */
static tf_code dequeue_count(tf_kernel_ctx *ctx, int64_t *n) {
  *n = -1;
  if (strcmp(tf_node_op(ctx->node), "QueueDequeueMany") != 0) {
    return TF_OK;
  }
  const tf_tensor *t = ctx->inputs[1];
  if (t->shape.rank != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "n must be a scalar, got "
                           "rank %d", t->shape.rank);
  }
  *n = tf_tensor_get_i64(t, 0);
  if (*n < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "DequeueMany requested "
                           "%lld < 0 elements", (long long)*n);
  }
  return TF_OK;
}

static void dequeue_async(tf_kernel_ctx *ctx, void (*done)(void *), void *arg) {
  tf_queue *q;
  int64_t n;
  if (handle_queue(ctx, &q) != TF_OK || check_outputs(ctx, q) != TF_OK ||
      dequeue_count(ctx, &n) != TF_OK) {
    done(arg);
    return;
  }
  pending_op *p = pending_new(ctx, done, arg);
  tf_status st;
  if (tf_queue_dequeue(q, n, ctx->step->cancel, op_done, p, &st) != TF_OK) {
    free(p);
    tf_kernel_error(ctx, st.code, "%s", st.msg);
    done(arg);
  }
}

/* ---- QueueClose, QueueSize ----------------------------------------------- */

static tf_code close_compute(tf_kernel_ctx *ctx) {
  tf_queue *q;
  TF_TRY(handle_queue(ctx, &q));
  bool cancel = false;
  const tf_attr_value *v = tf_node_attr(ctx->node, "cancel_pending_enqueues");
  if (v != NULL) {
    cancel = v->u.b;
  }
  tf_queue_close(q, cancel);
  return TF_OK;
}

static tf_code size_compute(tf_kernel_ctx *ctx) {
  tf_queue *q;
  TF_TRY(handle_queue(ctx, &q));
  tf_tensor *out;
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT32, &scalar, &out));
  *(int32_t *)out->data = (int32_t)TF_MIN(tf_queue_size(q), INT32_MAX);
  return TF_OK;
}

#define CPU(name) .op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY

static const tf_kernel_def queue_kernels[] = {
    {CPU("FIFOQueue"), .init = qop_init, .compute = qop_compute,
     .free_state = qop_free_state, .flags = TF_KERNEL_CHEAP},
    {CPU("RandomShuffleQueue"), .init = qop_init, .compute = qop_compute,
     .free_state = qop_free_state, .flags = TF_KERNEL_CHEAP},
    {CPU("QueueEnqueue"), .compute_async = enqueue_async},
    {CPU("QueueEnqueueMany"), .compute_async = enqueue_async},
    {CPU("QueueDequeue"), .compute_async = dequeue_async},
    {CPU("QueueDequeueMany"), .compute_async = dequeue_async},
    {CPU("QueueClose"), .compute = close_compute, .flags = TF_KERNEL_CHEAP},
    {CPU("QueueSize"), .compute = size_compute, .flags = TF_KERNEL_CHEAP},
};

TF_REGISTER_KERNELS(queue_kernels)
