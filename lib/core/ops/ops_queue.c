/* ops_queue.c: op definitions of queues (whitepaper §4.6) with
 * TensorFlow's signatures: FIFOQueue and RandomShuffleQueue make or find a
 * queue in a container of the session and output a ref edge to it; the
 * enqueue and dequeue ops reach it through that edge and block
 * asynchronously (lib/core/framework/queue.h). Shape functions check the queue's
 * attrs, and when a handle comes straight from a queue node they check the
 * component types against it and give dequeues the queue's shapes. */
#include <stdbool.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/framework/queue.h"
#include "lib/core/base/util.h"

/* The queue's config from a queue node's attrs (dtypes and shapes point
 * into the node). */
static tf_queue_config queue_config(const tf_node *n) {
  const tf_attr_value *ct = tf_node_attr(n, "component_types");
  const tf_attr_value *sh = tf_node_attr(n, "shapes");
  const tf_attr_value *cap = tf_node_attr(n, "capacity");
  const tf_attr_value *mad = tf_node_attr(n, "min_after_dequeue");
  tf_queue_config c = {.kind = TF_QUEUE_FIFO, .capacity = -1};
  if (strcmp(tf_node_op(n), "RandomShuffleQueue") == 0) {
    c.kind = TF_QUEUE_RANDOM_SHUFFLE;
  }
  c.n_components = ct ? ct->n : 0;
  c.dtypes = ct ? ct->u.types : NULL;
  c.shapes = sh && sh->n > 0 ? sh->u.shapes : NULL;
  c.capacity = cap ? cap->u.i : -1;
  c.min_after_dequeue = mad ? mad->u.i : 0;
  return c;
}

static tf_code shape_queue(tf_shape_ctx *c) {
  const tf_attr_value *ct = tf_node_attr(c->node, "component_types");
  const tf_attr_value *sh = tf_node_attr(c->node, "shapes");
  if (sh->n != 0 && sh->n != ct->n) {
    return tf_shape_error(c, "shapes has %d entries but component_types has "
                          "%d (give one shape per component, or none)",
                          sh->n, ct->n);
  }
  tf_queue_config cfg = queue_config(c->node);
  tf_status st;
  if (tf_queue_config_check(&cfg, &st) != TF_OK) {
    return tf_shape_error(c, "%s", st.msg);
  }
  c->out[0] = tf_shape_of(1, 2); /* TF's handle: [container, name] */
  return TF_OK;
}

/* The queue node feeding input 0 directly, or NULL. */
static const tf_node *queue_node(const tf_shape_ctx *c) {
  const tf_node *src = tf_node_input(c->node, 0).node;
  if (src == NULL) {
    return NULL;
  }
  const char *op = tf_node_op(src);
  bool q = strcmp(op, "FIFOQueue") == 0 || strcmp(op, "RandomShuffleQueue") == 0;
  return q ? src : NULL;
}

/* types (attr name) must equal the queue's component types. */
static tf_code match_types(tf_shape_ctx *c, const tf_node *qn,
                           const char *attr) {
  const tf_attr_value *want = tf_node_attr(c->node, attr);
  const tf_attr_value *have = tf_node_attr(qn, "component_types");
  if (want->n != have->n) {
    return tf_shape_error(c, "%s has %d types but queue '%s' has %d "
                          "components", attr, want->n, tf_node_name(qn),
                          have->n);
  }
  for (int j = 0; j < want->n; j++) {
    if (want->u.types[j] != have->u.types[j]) {
      return tf_shape_error(c, "component %d: %s says %s but queue '%s' "
                            "holds %s", j, attr,
                            tf_dtype_name(want->u.types[j]), tf_node_name(qn),
                            tf_dtype_name(have->u.types[j]));
    }
  }
  return TF_OK;
}

/* Whether known dims of s (from dim skip on) fit the fully defined e. */
static bool fits(const tf_shape *s, int skip, const tf_shape *e) {
  if (s->rank == TF_UNKNOWN_RANK) {
    return true;
  }
  if (s->rank - skip != e->rank) {
    return false;
  }
  for (int i = 0; i < e->rank; i++) {
    int64_t d = s->dims[i + skip];
    if (d != TF_UNKNOWN_DIM && d != e->dims[i]) {
      return false;
    }
  }
  return true;
}

static tf_code shape_enqueue_common(tf_shape_ctx *c, bool many) {
  char a[96], b[96];
  int64_t rows = TF_UNKNOWN_DIM;
  for (int j = 1; j < c->n_in; j++) {
    const tf_shape *s = &c->in[j];
    if (!many || s->rank == TF_UNKNOWN_RANK) {
      continue;
    }
    if (s->rank < 1) {
      return tf_shape_error(c, "component %d must be at least 1-D to "
                            "enqueue many, got shape []", j - 1);
    }
    if (rows != TF_UNKNOWN_DIM && s->dims[0] != TF_UNKNOWN_DIM && s->dims[0] != rows) {
      return tf_shape_error(c, "component %d has %lld elements along dim 0, "
                            "but an earlier component has %lld", j - 1,
                            (long long)s->dims[0], (long long)rows);
    }
    if (s->dims[0] != TF_UNKNOWN_DIM) {
      rows = s->dims[0];
    }
  }
  const tf_node *qn = queue_node(c);
  if (qn == NULL) {
    return TF_OK;
  }
  TF_TRY(match_types(c, qn, "Tcomponents"));
  const tf_attr_value *sh = tf_node_attr(qn, "shapes");
  for (int j = 0; j < sh->n && j + 1 < c->n_in; j++) {
    if (!fits(&c->in[j + 1], many ? 1 : 0, &sh->u.shapes[j])) {
      return tf_shape_error(c, "component %d has %sshape %s, but queue '%s' "
                            "holds %s", j, many ? "a batch of " : "",
                            tf_shape_str(&c->in[j + 1], a, sizeof a),
                            tf_node_name(qn),
                            tf_shape_str(&sh->u.shapes[j], b, sizeof b));
    }
  }
  return TF_OK;
}

static tf_code shape_enqueue(tf_shape_ctx *c) { return shape_enqueue_common(c, false); }
static tf_code shape_enqueue_many(tf_shape_ctx *c) { return shape_enqueue_common(c, true); }

/* Outputs get the queue's shapes, behind a dim of n for DequeueMany. */
static tf_code shape_dequeue_common(tf_shape_ctx *c, bool many) {
  int64_t n = TF_UNKNOWN_DIM;
  if (many) {
    if (c->in[1].rank != TF_UNKNOWN_RANK && c->in[1].rank != 0) {
      return tf_shape_error(c, "n must be a scalar, got rank %d", c->in[1].rank);
    }
    int64_t v;
    int got;
    if (tf_shape_const_ints(c, 1, &v, 1, &got) && got == 1) {
      if (v < 0) {
        return tf_shape_error(c, "DequeueMany requested %lld < 0 elements", (long long)v);
      }
      n = v;
    }
  }
  const tf_node *qn = queue_node(c);
  if (qn == NULL) {
    return TF_OK;
  }
  TF_TRY(match_types(c, qn, "component_types"));
  const tf_attr_value *sh = tf_node_attr(qn, "shapes");
  if (many && sh->n == 0) {
    return tf_shape_error(c, "DequeueMany requires queue '%s' to have "
                          "specified shapes", tf_node_name(qn));
  }
  for (int j = 0; j < sh->n && j < c->n_out; j++) {
    const tf_shape *e = &sh->u.shapes[j];
    tf_shape s = {.rank = e->rank + (many ? 1 : 0)};
    if (many) {
      s.dims[0] = n;
    }
    memcpy(s.dims + (many ? 1 : 0), e->dims, (size_t)e->rank * sizeof s.dims[0]);
    c->out[j] = s;
  }
  return TF_OK;
}

static tf_code shape_dequeue(tf_shape_ctx *c) { return shape_dequeue_common(c, false); }
static tf_code shape_dequeue_many(tf_shape_ctx *c) { return shape_dequeue_common(c, true); }

static tf_code shape_none(tf_shape_ctx *c) {
  (void)c;
  return TF_OK;
}

#define QUEUE_ATTRS                                                            \
  "component_types: list(type) >= 1", "shapes: list(shape) >= 0 = []",        \
      "capacity: int = -1", "container: string = ''",                          \
      "shared_name: string = ''"

static const tf_op_spec queue_ops[] = {
    {.name = "FIFOQueue",
     .outputs = {"handle: Ref(string)"},
     .attrs = {QUEUE_ATTRS},
     .shape_fn = shape_queue,
     .flags = TF_OP_STATEFUL | TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "A first-in first-out queue of tuples (capacity -1: unbounded) "
            "in the session's container, named shared_name or the node's "
            "name; outputs a ref to it."},
    {.name = "RandomShuffleQueue",
     .outputs = {"handle: Ref(string)"},
     .attrs = {QUEUE_ATTRS, "min_after_dequeue: int = 0", "seed: int = 0",
               "seed2: int = 0"},
     .shape_fn = shape_queue,
     .flags = TF_OP_STATEFUL | TF_OP_SOURCE | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "A queue that dequeues a uniformly random element (Philox; seed "
            "= seed2 = 0: nondeterministic), keeping min_after_dequeue "
            "elements until closed."},
    {.name = "QueueEnqueue",
     .inputs = {"handle: Ref(string)", "components: Tcomponents"},
     .attrs = {"Tcomponents: list(type) >= 1", "timeout_ms: int = -1"},
     .shape_fn = shape_enqueue,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Enqueues one tuple; waits (holding no thread) while the queue "
            "is full. timeout_ms is accepted for TF and ignored, as in TF."},
    {.name = "QueueEnqueueMany",
     .inputs = {"handle: Ref(string)", "components: Tcomponents"},
     .attrs = {"Tcomponents: list(type) >= 1", "timeout_ms: int = -1"},
     .shape_fn = shape_enqueue_many,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Enqueues the tuples made by slicing every component along dim "
            "0, in order, waiting for room element by element."},
    {.name = "QueueDequeue",
     .inputs = {"handle: Ref(string)"},
     .outputs = {"components: component_types"},
     .attrs = {"component_types: list(type) >= 1", "timeout_ms: int = -1"},
     .shape_fn = shape_dequeue,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Dequeues one tuple, waiting while the queue is empty; "
            "OUT_OF_RANGE once it is closed and empty."},
    {.name = "QueueDequeueMany",
     .inputs = {"handle: Ref(string)", "n: int32"},
     .outputs = {"components: component_types"},
     .attrs = {"component_types: list(type) >= 1", "timeout_ms: int = -1"},
     .shape_fn = shape_dequeue_many,
     .flags = TF_OP_STATEFUL | TF_OP_ASYNC | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Dequeues exactly n tuples stacked along a new dim 0 (the queue "
            "needs shapes); never a partial batch."},
    {.name = "QueueClose",
     .inputs = {"handle: Ref(string)"},
     .attrs = {"cancel_pending_enqueues: bool = false"},
     .shape_fn = shape_none,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Closes the queue: later enqueues fail, dequeues drain it and "
            "then fail with OUT_OF_RANGE."},
    {.name = "QueueSize",
     .inputs = {"handle: Ref(string)"},
     .outputs = {"size: int32"},
     .shape_fn = tf_shape_fn_scalar,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "The number of elements in the queue."},
};

TF_REGISTER_OPS("queue", queue_ops)
