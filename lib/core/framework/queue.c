/* queue.c: FIFO and RandomShuffle queue resources with asynchronous
 * waiters (see queue.h).
 *
 * Elements live in a ring of tuples (n_components tensor references per
 * slot). Requests become waiter records on one of two FIFO lists; flush()
 * runs the head of each list until neither makes progress, moving elements
 * and collecting finished waiters on a local list that complete_all() runs
 * after the lock is released (deregistering cancellation first, then
 * calling back). A waiter is freed when its last hold is dropped: one hold
 * for its completion and one, while registered, for its cancellation
 * callback, so neither path can free it under the other. */
#include "lib/core/framework/queue.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/philox.h"
#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"

typedef struct waiter waiter;

struct tf_queue {
  tf_resource base;
  pthread_mutex_t mu;
  tf_queue_kind kind;
  int n_comp;
  tf_dtype dtypes[TF_QUEUE_MAX_COMPONENTS];
  tf_shape *shapes; /* NULL or n_comp */
  int64_t capacity, min_after_dequeue;
  tf_philox gen;
  tf_philox_single rng;
  bool closed;
  tf_tensor **ring; /* cap slots of n_comp references */
  int64_t cap, head, size;
  waiter *enq_head, *enq_tail, *deq_head, *deq_tail;
};

struct waiter {
  waiter *next;      /* in its queue list */
  waiter *next_done; /* on a completion list */
  tf_queue *q;       /* a reference */
  bool is_enq, many, pending;
  int64_t want;      /* elements to move */
  int64_t moved;     /* elements moved so far */
  tf_tensor **elems; /* enq: want tuples to put; deq: moved tuples taken */
  int64_t cap_elems; /* deq: tuples elems has room for */
  tf_cancel *cancel;
  uint64_t token;
  tf__refcount holds;
  tf_status st;
  tf_queue_done_fn done;
  void *arg;
};

typedef struct done_list {
  waiter *head, *tail;
} done_list;

enum { NO_PROGRESS, PROGRESS, COMPLETE };

static const char *qtype(const tf_queue *q) { return q->base.type->name; }

/* ---- the ring ------------------------------------------------------------ */

static tf_tensor **slot(tf_queue *q, int64_t i) {
  return q->ring + ((q->head + i) % q->cap) * q->n_comp;
}

static void ring_grow(tf_queue *q) {
  if (q->size < q->cap) {
    return;
  }
  int64_t cap = q->cap ? q->cap * 2 : 16;
  tf_tensor **r = tf__xcalloc((size_t)(cap * q->n_comp), sizeof *r);
  for (int64_t i = 0; i < q->size; i++) {
    memcpy(r + i * q->n_comp, slot(q, i), (size_t)q->n_comp * sizeof *r);
  }
  free(q->ring);
  q->ring = r;
  q->cap = cap;
  q->head = 0;
}

/* Takes over the n_comp references at t. */
static void push_back(tf_queue *q, tf_tensor **t) {
  ring_grow(q);
  memcpy(slot(q, q->size), t, (size_t)q->n_comp * sizeof *t);
  q->size++;
}

static void push_front(tf_queue *q, tf_tensor **t) {
  ring_grow(q);
  q->head = (q->head + q->cap - 1) % q->cap;
  memcpy(slot(q, 0), t, (size_t)q->n_comp * sizeof *t);
  q->size++;
}

/* Moves element i's references to out: FIFO pops the front (i is 0),
 * RandomShuffle fills the hole with the last element (as TF does, so a
 * seed gives TF's order). */
static void take_at(tf_queue *q, int64_t i, tf_tensor **out) {
  size_t bytes = (size_t)q->n_comp * sizeof *out;
  memcpy(out, slot(q, i), bytes);
  if (q->kind == TF_QUEUE_FIFO) {
    q->head = (q->head + 1) % q->cap;
  } else if (i != q->size - 1) {
    memcpy(slot(q, i), slot(q, q->size - 1), bytes);
  }
  q->size--;
}

/* The next element to dequeue: the oldest, or a uniform pick. */
static int64_t pick(tf_queue *q) {
  if (q->kind == TF_QUEUE_FIFO) {
    return 0;
  }
  return (int64_t)(tf_philox_single_next(&q->rng) % (uint64_t)q->size);
}

/* ---- waiters ------------------------------------------------------------- */

static void waiter_free(void *arg) {
  waiter *w = arg;
  free(w->elems);
  tf_resource_unref(&w->q->base);
  free(w);
}

static void waiter_release(waiter *w) {
  tf__ref_put(&w->holds, waiter_free, w);
}

static void list_append(waiter **head, waiter **tail, waiter *w) {
  w->next = NULL;
  if (*tail) {
    (*tail)->next = w;
  } else {
    *head = w;
  }
  *tail = w;
}

static void list_remove(waiter **head, waiter **tail, waiter *w) {
  waiter *prev = NULL;
  for (waiter *x = *head; x != NULL; prev = x, x = x->next) {
    if (x != w) {
      continue;
    }
    if (prev) {
      prev->next = w->next;
    } else {
      *head = w->next;
    }
    if (*tail == w) {
      *tail = prev;
    }
    return;
  }
}

/* Takes w off its list and onto d with status code (OK or an error). */
static void finish(tf_queue *q, waiter *w, done_list *d) {
  if (w->is_enq) {
    list_remove(&q->enq_head, &q->enq_tail, w);
  } else {
    list_remove(&q->deq_head, &q->deq_tail, w);
  }
  w->pending = false;
  w->next_done = NULL;
  if (d->tail) {
    d->tail->next_done = w;
  } else {
    d->head = w;
  }
  d->tail = w;
}

/* Gives a dequeue waiter's taken elements back, oldest at the front. */
static void restore(tf_queue *q, waiter *w) {
  for (int64_t k = w->moved - 1; k >= 0; k--) {
    tf_tensor **t = w->elems + k * q->n_comp;
    if (q->kind == TF_QUEUE_FIFO) {
      push_front(q, t);
    } else {
      push_back(q, t);
    }
  }
  w->moved = 0;
}

/* Ends w with an error: enqueues drop what they did not put, dequeues give
 * back what they took. */
static void fail(tf_queue *q, waiter *w, done_list *d, tf_code code,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void fail(tf_queue *q, waiter *w, done_list *d, tf_code code,
                 const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tf_status_set(&w->st, code, "%s", msg);
  if (w->is_enq) {
    for (int64_t i = w->moved * q->n_comp; i < w->want * q->n_comp; i++) {
      tf_tensor_unref(w->elems[i]);
      w->elems[i] = NULL;
    }
  } else {
    restore(q, w);
  }
  finish(q, w, d);
}

static int try_enqueue(tf_queue *q, waiter *w) {
  int r = NO_PROGRESS;
  while (w->moved < w->want && (q->capacity < 0 || q->size < q->capacity)) {
    push_back(q, w->elems + w->moved * q->n_comp);
    w->moved++;
    r = PROGRESS;
  }
  return w->moved == w->want ? COMPLETE : r;
}

static void take_into(tf_queue *q, waiter *w) {
  if (w->moved == w->cap_elems) {
    w->cap_elems = TF_MIN(TF_MAX(w->cap_elems * 2, 4), w->want);
    w->elems = tf__xrealloc(w->elems, (size_t)(w->cap_elems * q->n_comp) *
                                          sizeof *w->elems);
  }
  take_at(q, pick(q), w->elems + w->moved * q->n_comp);
  w->moved++;
}

/* RandomShuffle keeps min_after_dequeue elements until closed. */
static int try_dequeue(tf_queue *q, waiter *w, done_list *d) {
  int64_t floor = q->kind == TF_QUEUE_RANDOM_SHUFFLE && !q->closed
                      ? q->min_after_dequeue : 0;
  int r = NO_PROGRESS;
  while (w->moved < w->want && q->size > floor) {
    take_into(q, w);
    r = PROGRESS;
  }
  if (w->moved == w->want) {
    return COMPLETE;
  }
  /* Closed and empty, and no pending enqueue can supply the rest (an
   * enqueue that could move would have been run first). */
  if (q->closed && q->enq_head == NULL) {
    restore(q, w);
    fail(q, w, d, TF_OUT_OF_RANGE, "%s '%s' is closed and has insufficient "
         "elements (requested %lld, current size %lld)", qtype(q),
         q->base.name, (long long)w->want, (long long)q->size);
    return COMPLETE;
  }
  return r;
}

/* Runs the heads of both lists until neither moves. */
static void flush(tf_queue *q, done_list *d) {
  bool progress = true;
  while (progress) {
    progress = false;
    waiter *e = q->enq_head;
    if (e != NULL) {
      int r = try_enqueue(q, e);
      progress = r != NO_PROGRESS;
      if (r == COMPLETE) {
        finish(q, e, d);
      }
    }
    waiter *w = q->deq_head;
    if (w != NULL) {
      int r = try_dequeue(q, w, d);
      progress = progress || r != NO_PROGRESS;
      if (r == COMPLETE && w->pending) {
        finish(q, w, d);
      }
    }
  }
}

/* ---- completion ---------------------------------------------------------- */

/* Row k of t (shape [d0, ...]) as a new tensor of shape [...]. */
static tf_code row_of(const tf_tensor *t, int64_t k, tf_tensor **out,
                      tf_status *st) {
  tf_shape s = t->shape;
  s.rank--;
  memmove(s.dims, s.dims + 1, (size_t)s.rank * sizeof s.dims[0]);
  TF_TRY(tf_tensor_new(t->dtype, &s, out, st));
  int64_t n = (*out)->n;
  if (t->dtype != TF_STRING) {
    memcpy((*out)->data, (const char *)t->data + (size_t)k * (*out)->nbytes,
           (*out)->nbytes);
    return TF_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    const tf_string *src = &tf_tensor_strings(t)[k * n + i];
    if (tf_tensor_set_string(*out, i, src->data, src->len, st) != TF_OK) {
      tf_tensor_unref(*out);
      *out = NULL;
      return st->code;
    }
  }
  return TF_OK;
}

/* Component j of elements elems[0..n) stacked along a new dim 0. */
static tf_code stack(const tf_queue *q, tf_tensor **elems, int64_t n, int j,
                     tf_tensor **out, tf_status *st) {
  const tf_shape *es = &q->shapes[j];
  tf_shape s = {.rank = es->rank + 1};
  s.dims[0] = n;
  memcpy(s.dims + 1, es->dims, (size_t)es->rank * sizeof s.dims[0]);
  TF_TRY(tf_tensor_new(q->dtypes[j], &s, out, st));
  for (int64_t k = 0; k < n; k++) {
    const tf_tensor *e = elems[k * q->n_comp + j];
    if (e->dtype != TF_STRING) {
      memcpy((char *)(*out)->data + (size_t)k * e->nbytes, e->data, e->nbytes);
      continue;
    }
    for (int64_t i = 0; i < e->n; i++) {
      const tf_string *src = &tf_tensor_strings(e)[i];
      if (tf_tensor_set_string(*out, k * e->n + i, src->data, src->len, st) != TF_OK) {
        tf_tensor_unref(*out);
        *out = NULL;
        return st->code;
      }
    }
  }
  return TF_OK;
}

/* The result tuple of a finished dequeue (new references), or NULL with
 * w->st set. The taken elements' references are used up either way. */
static tf_tensor **dequeue_result(waiter *w) {
  tf_queue *q = w->q;
  tf_tensor **tuple = tf__xcalloc((size_t)q->n_comp, sizeof *tuple);
  if (!w->many) {
    memcpy(tuple, w->elems, (size_t)q->n_comp * sizeof *tuple);
    return tuple;
  }
  tf_status tmp;
  for (int j = 0; j < q->n_comp && w->st.code == TF_OK; j++) {
    if (stack(q, w->elems, w->moved, j, &tuple[j], &tmp) != TF_OK) {
      tf_status_set(&w->st, tmp.code, "%s '%s': %s", qtype(q), q->base.name,
                    tmp.msg);
    }
  }
  for (int64_t i = 0; i < w->moved * q->n_comp; i++) tf_tensor_unref(w->elems[i]);
  if (w->st.code != TF_OK) {
    for (int j = 0; j < q->n_comp; j++) tf_tensor_unref(tuple[j]);
    free(tuple);
    return NULL;
  }
  return tuple;
}

/* Completes the waiters on d, in order; no queue lock may be held. A
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
    tf_tensor **tuple = NULL;
    if (!w->is_enq && w->st.code == TF_OK) {
      tuple = dequeue_result(w);
    }
    w->done(w->arg, &w->st, tuple);
    free(tuple);
    waiter_release(w);
    w = next;
  }
  d->head = d->tail = NULL;
}

/* The step of waiter arg was cancelled. */
static void on_cancel(void *arg) {
  waiter *w = arg;
  tf_queue *q = w->q;
  done_list d = {0};
  pthread_mutex_lock(&q->mu);
  if (w->pending) {
    tf_status why;
    tf_code code = tf_cancel_reason(w->cancel, &why);
    fail(q, w, &d, code != TF_OK ? code : TF_CANCELLED, "%s '%s': %s "
         "cancelled: %s", qtype(q), q->base.name,
         w->is_enq ? "enqueue" : "dequeue", why.msg);
    flush(q, &d);
  }
  pthread_mutex_unlock(&q->mu);
  complete_all(&d);
  waiter_release(w);
}

static waiter *waiter_new(tf_queue *q, bool is_enq, tf_cancel *cancel,
                          tf_queue_done_fn done, void *arg) {
  waiter *w = tf__xcalloc(1, sizeof *w);
  w->q = q;
  tf_resource_ref(&q->base);
  w->is_enq = is_enq;
  w->pending = true;
  w->cancel = cancel;
  w->done = done;
  w->arg = arg;
  tf__ref_init(&w->holds, 1);
  tf_status_init(&w->st);
  return w;
}

/* Queues w behind earlier requests, runs what can run, and registers w for
 * cancellation if it must wait; then completes what finished. */
static void submit(tf_queue *q, waiter *w) {
  done_list d = {0};
  pthread_mutex_lock(&q->mu);
  if (w->is_enq && q->closed) {
    list_append(&q->enq_head, &q->enq_tail, w);
    fail(q, w, &d, TF_CANCELLED, "%s '%s' is closed", qtype(q), q->base.name);
  } else if (w->is_enq) {
    list_append(&q->enq_head, &q->enq_tail, w);
  } else {
    list_append(&q->deq_head, &q->deq_tail, w);
  }
  flush(q, &d);
  if (w->pending && w->cancel != NULL) {
    tf__ref_get(&w->holds);
    w->token = tf_cancel_register(w->cancel, on_cancel, w);
    if (w->token == 0) {
      bool last = tf__ref_drop(&w->holds); /* the completion's remains */
      TF_ASSERT(!last);
      tf_status why;
      tf_code code = tf_cancel_reason(w->cancel, &why);
      fail(q, w, &d, code != TF_OK ? code : TF_CANCELLED, "%s '%s': %s "
           "cancelled: %s", qtype(q), q->base.name,
           w->is_enq ? "enqueue" : "dequeue", why.msg);
      flush(q, &d);
    }
  }
  pthread_mutex_unlock(&q->mu);
  complete_all(&d);
}

/* ---- requests ------------------------------------------------------------ */

static tf_code bad(const tf_queue *q, tf_status *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tf_code bad(const tf_queue *q, tf_status *st, const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s': %s", qtype(q),
                       q->base.name, msg);
}

/* Whether s equals want, or want's dims equal s's from dim `skip` on. */
static bool shape_is(const tf_shape *s, int skip, const tf_shape *want) {
  if (s->rank - skip != want->rank) {
    return false;
  }
  for (int i = 0; i < want->rank; i++) {
    if (s->dims[i + skip] != want->dims[i]) {
      return false;
    }
  }
  return true;
}

/* Checks an enqueue's tuple; *rows gets the number of elements. */
static tf_code check_tuple(const tf_queue *q, tf_tensor *const *c, int n,
                           bool many, int64_t *rows, tf_status *st) {
  char a[96], b[96];
  if (n != q->n_comp) {
    return bad(q, st, "expects %d component%s, got %d tensor%s", q->n_comp,
               q->n_comp == 1 ? "" : "s", n, n == 1 ? "" : "s");
  }
  *rows = 1;
  for (int j = 0; j < n; j++) {
    if (c[j] == NULL) {
      return bad(q, st, "component %d is missing", j);
    }
    if (c[j]->dtype != q->dtypes[j]) {
      return bad(q, st, "component %d has type %s, expected %s", j,
                 tf_dtype_name(c[j]->dtype), tf_dtype_name(q->dtypes[j]));
    }
    const tf_shape *s = &c[j]->shape;
    if (many && s->rank < 1) {
      return bad(q, st, "component %d must be at least 1-D to enqueue many, "
                 "got shape %s", j, tf_shape_str(s, a, sizeof a));
    }
    if (many && j > 0 && s->dims[0] != *rows) {
      return bad(q, st, "component %d has %lld elements along dim 0, but "
                 "component 0 has %lld", j, (long long)s->dims[0],
                 (long long)*rows);
    }
    if (many) {
      *rows = s->dims[0];
    }
    if (q->shapes != NULL && !shape_is(s, many ? 1 : 0, &q->shapes[j])) {
      tf_shape e = *s;
      if (many) {
        e.rank--;
        memmove(e.dims, e.dims + 1, (size_t)e.rank * sizeof e.dims[0]);
      }
      return bad(q, st, "component %d has %s %s, expected %s", j,
                 many ? "element shape" : "shape", tf_shape_str(&e, a, sizeof a),
                 tf_shape_str(&q->shapes[j], b, sizeof b));
    }
  }
  return TF_OK;
}

/* The elements of a checked tuple as rows * n_comp new references. */
static tf_code split_tuple(const tf_queue *q, tf_tensor *const *c, bool many,
                           int64_t rows, tf_tensor **out, tf_status *st) {
  for (int j = 0; j < q->n_comp; j++) {
    if (!many) {
      out[j] = tf_tensor_ref(c[j]);
      continue;
    }
    for (int64_t k = 0; k < rows; k++) {
      tf_status tmp;
      if (row_of(c[j], k, &out[k * q->n_comp + j], &tmp) != TF_OK) {
        for (int64_t i = 0; i < rows * q->n_comp; i++) tf_tensor_unref(out[i]);
        return tf_status_set(st, tmp.code, "%s '%s': %s", qtype(q),
                             q->base.name, tmp.msg);
      }
    }
  }
  return TF_OK;
}

tf_code tf_queue_enqueue(tf_queue *q, tf_tensor *const *comps, int n,
                         bool many, tf_cancel *cancel, tf_queue_done_fn done,
                         void *arg, tf_status *st) {
  int64_t rows = 0;
  TF_TRY(check_tuple(q, comps, n, many, &rows, st));
  tf_tensor **elems = tf__xcalloc((size_t)(rows * q->n_comp + 1), sizeof *elems);
  if (split_tuple(q, comps, many, rows, elems, st) != TF_OK) {
    free(elems);
    return st->code;
  }
  waiter *w = waiter_new(q, true, cancel, done, arg);
  w->many = many;
  w->want = rows;
  w->elems = elems;
  submit(q, w);
  return TF_OK;
}

tf_code tf_queue_dequeue(tf_queue *q, int64_t n, tf_cancel *cancel,
                         tf_queue_done_fn done, void *arg, tf_status *st) {
  if (n >= 0 && q->shapes == NULL) {
    return bad(q, st, "DequeueMany requires the components to have specified "
               "shapes");
  }
  waiter *w = waiter_new(q, false, cancel, done, arg);
  w->many = n >= 0;
  w->want = n >= 0 ? n : 1;
  submit(q, w);
  return TF_OK;
}

void tf_queue_close(tf_queue *q, bool cancel_pending_enqueues) {
  done_list d = {0};
  pthread_mutex_lock(&q->mu);
  q->closed = true;
  while (cancel_pending_enqueues && q->enq_head != NULL) {
    fail(q, q->enq_head, &d, TF_CANCELLED, "%s '%s' is closed: pending "
         "enqueue cancelled", qtype(q), q->base.name);
  }
  flush(q, &d);
  pthread_mutex_unlock(&q->mu);
  complete_all(&d);
}

bool tf_queue_is_closed(tf_queue *q) {
  pthread_mutex_lock(&q->mu);
  bool c = q->closed;
  pthread_mutex_unlock(&q->mu);
  return c;
}

int64_t tf_queue_size(tf_queue *q) {
  pthread_mutex_lock(&q->mu);
  int64_t n = q->size;
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* ---- the resource -------------------------------------------------------- */

static void queue_free(tf_resource *r) {
  tf_queue *q = (tf_queue *)r;
  TF_ASSERT(q->enq_head == NULL && q->deq_head == NULL);
  for (int64_t i = 0; i < q->size; i++) {
    tf_tensor **t = slot(q, i);
    for (int j = 0; j < q->n_comp; j++) tf_tensor_unref(t[j]);
  }
  free(q->ring);
  free(q->shapes);
  pthread_mutex_destroy(&q->mu);
  tf_resource_fini(&q->base);
  free(q);
}

static void queue_shutdown(tf_resource *r) { tf_queue_close((tf_queue *)r, true); }

const tf_resource_type tf_fifo_queue_type = {
    .name = "FIFOQueue", .free = queue_free, .read = NULL,
    .shutdown = queue_shutdown};
const tf_resource_type tf_random_shuffle_queue_type = {
    .name = "RandomShuffleQueue", .free = queue_free, .read = NULL,
    .shutdown = queue_shutdown};

tf_code tf_queue_config_check(const tf_queue_config *cfg, tf_status *st) {
  char a[96];
  if (cfg->n_components < 1 || cfg->n_components > TF_QUEUE_MAX_COMPONENTS) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "a queue needs 1 to %d "
                         "components, got %d", TF_QUEUE_MAX_COMPONENTS,
                         cfg->n_components);
  }
  for (int j = 0; cfg->shapes != NULL && j < cfg->n_components; j++) {
    if (!tf_shape_is_fully_defined(&cfg->shapes[j])) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "queue shapes[%d] = %s is "
                           "not fully defined", j,
                           tf_shape_str(&cfg->shapes[j], a, sizeof a));
    }
  }
  if (cfg->capacity < -1 || cfg->capacity == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "queue capacity must be -1 "
                         "(unbounded) or positive, got %lld",
                         (long long)cfg->capacity);
  }
  if (cfg->min_after_dequeue < 0 ||
      (cfg->capacity > 0 && cfg->min_after_dequeue >= cfg->capacity)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "min_after_dequeue %lld "
                         "must be >= 0 and below capacity %lld",
                         (long long)cfg->min_after_dequeue,
                         (long long)cfg->capacity);
  }
  return TF_OK;
}

/* A seed for "seed = seed2 = 0": random, as TF's random::New64. */
static uint64_t fresh_seed(void) { return tf__random_u64(); }

tf_queue *tf_queue_new(const char *container, const char *name,
                       const tf_queue_config *cfg) {
  tf_queue *q = tf__xcalloc(1, sizeof *q);
  tf_resource_init(&q->base, cfg->kind == TF_QUEUE_FIFO
                                 ? &tf_fifo_queue_type
                                 : &tf_random_shuffle_queue_type,
                   container, name);
  pthread_mutex_init(&q->mu, NULL);
  q->kind = cfg->kind;
  q->n_comp = cfg->n_components;
  memcpy(q->dtypes, cfg->dtypes, (size_t)q->n_comp * sizeof *q->dtypes);
  if (cfg->shapes != NULL) {
    q->shapes = tf__xcalloc((size_t)q->n_comp, sizeof *q->shapes);
    memcpy(q->shapes, cfg->shapes, (size_t)q->n_comp * sizeof *q->shapes);
  }
  q->capacity = cfg->capacity;
  q->min_after_dequeue = cfg->kind == TF_QUEUE_RANDOM_SHUFFLE ? cfg->min_after_dequeue : 0;
  uint64_t seed = (uint64_t)cfg->seed, seed2 = (uint64_t)cfg->seed2;
  if (seed == 0 && seed2 == 0) {
    seed = fresh_seed();
    seed2 = fresh_seed();
  }
  tf_philox_init(&q->gen, seed, seed2);
  tf_philox_single_init(&q->rng, &q->gen);
  return q;
}

tf_queue *tf_queue_cast(tf_resource *r) {
  if (r == NULL || (r->type != &tf_fifo_queue_type &&
                    r->type != &tf_random_shuffle_queue_type)) {
    return NULL;
  }
  return (tf_queue *)r;
}

tf_resource *tf_queue_resource(tf_queue *q) { return &q->base; }
int tf_queue_num_components(const tf_queue *q) { return q->n_comp; }
const tf_dtype *tf_queue_dtypes(const tf_queue *q) { return q->dtypes; }
bool tf_queue_has_shapes(const tf_queue *q) { return q->shapes != NULL; }

tf_code tf_queue_matches(tf_queue *q, const tf_queue_config *cfg,
                         tf_status *st) {
  char a[96], b[96];
  if (cfg->n_components != q->n_comp) {
    return bad(q, st, "shared queue has %d components, but this op asks "
               "for %d", q->n_comp, cfg->n_components);
  }
  for (int j = 0; j < q->n_comp; j++) {
    if (cfg->dtypes[j] != q->dtypes[j]) {
      return bad(q, st, "shared queue has component %d of type %s, but this "
                 "op asks for %s", j, tf_dtype_name(q->dtypes[j]),
                 tf_dtype_name(cfg->dtypes[j]));
    }
  }
  for (int j = 0; j < q->n_comp; j++) {
    const tf_shape *have = q->shapes ? &q->shapes[j] : NULL;
    const tf_shape *want = cfg->shapes ? &cfg->shapes[j] : NULL;
    if ((have == NULL) != (want == NULL) || (have && !tf_shape_equal(have, want))) {
      return bad(q, st, "shared queue has component %d of shape %s, but this "
                 "op asks for %s", j,
                 have ? tf_shape_str(have, a, sizeof a) : "(any)",
                 want ? tf_shape_str(want, b, sizeof b) : "(any)");
    }
  }
  if (cfg->capacity != q->capacity) {
    return bad(q, st, "shared queue has capacity %lld, but this op asks for "
               "%lld", (long long)q->capacity, (long long)cfg->capacity);
  }
  return TF_OK;
}
