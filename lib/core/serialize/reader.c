/* reader.c: reader resources. One request is active at a time (busy);
 * only it touches the open file, so file I/O runs without the lock, which
 * guards just the busy flag and the list of waiting requests. A request
 * that needs a file name dequeues it asynchronously: when the queue answers
 * at once the request goes on in the same call (a trampoline, so reading
 * many small files never deepens the stack), otherwise the queue's
 * callback resumes it in whatever thread made the name available.
 *
 * Request lifetime: a reference for its owner (dropped when done has been
 * called) and one for its cancellation registration while registered
 * (dropped by a successful deregistration or by the callback itself). */
#include "lib/core/serialize/reader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"

struct tf_reader {
  tf_resource base;
  tf_record_options o;
  pthread_mutex_t mu;
  bool busy;                     /* a request is active */
  struct read_req *head, *tail;  /* waiting requests */
  /* owned by the active request */
  tf_record_reader *file;
  char key[4200];                /* "<file>:" then a record's number */
  size_t key_prefix;             /* length of "<file>:" */
  _Atomic int64_t produced, completed;
};

enum { PHASE_CALLING, PHASE_WAITING, PHASE_ARRIVED };

typedef struct read_req {
  struct read_req *next;
  tf__refcount refs;
  tf_reader *r;            /* a reference */
  tf_queue *work;          /* a reference to its resource; NULL for reset */
  bool reset;
  int64_t want;            /* -1: one record as scalars */
  tf_cancel *cancel;
  uint64_t token;          /* registration while waiting, else 0 */
  bool cancel_seen;        /* on_cancel ran (under r->mu) */
  bool ended;              /* the work queue ran out after some records */
  tf_reader_done_fn done;
  void *arg;
  tf_status st;
  tf_tensor *keys, *values; /* [cap] (or scalars), n filled */
  int64_t n, cap;
  _Atomic int phase;        /* of the pending dequeue */
  tf_status dq_st;
  tf_tensor *dq_name;
} read_req;

static void run_loop(read_req *q);

/* ---- the resource --------------------------------------------------------------- */

static void reader_free(tf_resource *res) {
  tf_reader *r = (tf_reader *)res;
  TF_ASSERT(r->head == NULL && !r->busy);
  tf_record_reader_close(r->file);
  pthread_mutex_destroy(&r->mu);
  tf_resource_fini(res);
  free(r);
}

static tf_code reader_read_value(tf_resource *res, tf_tensor **out,
                                 tf_status *st) {
  *out = NULL;
  return tf_status_set(st, TF_FAILED_PRECONDITION, "reader '%s' has no "
                       "value to read (feed its handle to a Reader op)",
                       res->name);
}

const tf_resource_type tf_reader_type = {
    .name = "Reader", .free = reader_free, .read = reader_read_value};

tf_reader *tf_reader_new(const char *container, const char *name,
                         const tf_record_options *o) {
  tf_reader *r = tf__xcalloc(1, sizeof *r);
  tf_resource_init(&r->base, &tf_reader_type, container, name);
  r->o = *o;
  pthread_mutex_init(&r->mu, NULL);
  return r;
}

tf_reader *tf_reader_cast(tf_resource *r) {
  return r != NULL && r->type == &tf_reader_type ? (tf_reader *)r : NULL;
}

tf_resource *tf_reader_resource(tf_reader *r) { return &r->base; }

tf_code tf_reader_matches(tf_reader *r, const tf_record_options *o,
                          tf_status *st) {
  const tf_record_options *h = &r->o;
  const char *what = NULL;
  if (h->format != o->format) {
    what = "format";
  } else if (h->compression != o->compression) {
    what = "compression";
  } else if (h->format == TF_RECORD_IDX &&
             (h->idx_dtype != o->idx_dtype ||
              !tf_shape_equal(&h->idx_record_shape, &o->idx_record_shape))) {
    what = "IDX dtype or record shape";
  }
  if (what != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "reader '%s' already "
                         "exists with another %s", r->base.name, what);
  }
  return TF_OK;
}

int64_t tf_reader_records_produced(tf_reader *r) { return r->produced; }
int64_t tf_reader_work_units_completed(tf_reader *r) { return r->completed; }

/* ---- requests ------------------------------------------------------------------ */

static void req_free(void *arg) {
  read_req *q = arg;
  tf_tensor_unref(q->keys);
  tf_tensor_unref(q->values);
  tf_tensor_unref(q->dq_name);
  if (q->work != NULL) {
    tf_resource_unref(tf_queue_resource(q->work));
  }
  tf_resource_unref(&q->r->base);
  free(q);
}

static void req_unref(read_req *q) { tf__ref_put(&q->refs, req_free, q); }

/* Moves the first n strings of src into dst (swapping the element
 * structs: the bytes stay where they are, each owned by one tensor). */
static void move_strings(tf_tensor *dst, tf_tensor *src, int64_t n) {
  tf_string *d = tf_tensor_strings(dst), *s = tf_tensor_strings(src);
  for (int64_t i = 0; i < n; i++) {
    tf_string t = d[i];
    d[i] = s[i];
    s[i] = t;
  }
}

/* New [cap] (want >= 0) or scalar key and value tensors holding q's n
 * records so far. */
static tf_code resize(read_req *q, int64_t cap) {
  tf_shape s = q->want < 0 ? tf_shape_scalar() : tf_shape_of(1, cap);
  tf_tensor *k, *v;
  TF_TRY(tf_tensor_new(TF_STRING, &s, &k, &q->st));
  if (tf_tensor_new(TF_STRING, &s, &v, &q->st) != TF_OK) {
    tf_tensor_unref(k);
    return q->st.code;
  }
  if (q->n > 0) {
    move_strings(k, q->keys, q->n);
    move_strings(v, q->values, q->n);
  }
  tf_tensor_unref(q->keys);
  tf_tensor_unref(q->values);
  q->keys = k;
  q->values = v;
  q->cap = q->want < 0 ? 1 : cap;
  return TF_OK;
}

/* Right-sizes the record tensors and calls done; drops the owner's ref. */
static void complete(read_req *q) {
  if (q->st.code == TF_OK && !q->reset && q->want >= 0 && q->n < q->cap) {
    resize(q, q->n);
  }
  bool ok = q->st.code == TF_OK && !q->reset;
  q->done(q->arg, &q->st, ok ? q->keys : NULL, ok ? q->values : NULL);
  req_unref(q);
}

/* Ends the registration of a request leaving the waiting list. */
static void unregister(read_req *q) {
  if (q->token != 0) {
    if (tf_cancel_deregister(q->cancel, q->token)) {
      req_unref(q); /* the callback will never run */
    }
    q->token = 0;
  }
}

static bool unlink_waiter(tf_reader *r, read_req *q) {
  for (read_req **p = &r->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
    if (*p == q) {
      *p = q->next;
      if (r->tail == q) {
        r->tail = prev;
      }
      q->next = NULL;
      return true;
    }
  }
  return false;
}

static void on_cancel(void *arg) {
  read_req *q = arg;
  tf_reader *r = q->r;
  pthread_mutex_lock(&r->mu);
  q->cancel_seen = true;
  bool removed = unlink_waiter(r, q);
  pthread_mutex_unlock(&r->mu);
  if (removed) {
    q->token = 0; /* this run is the registration's end */
    tf_cancel_reason(q->cancel, &q->st);
    complete(q);
  }
  req_unref(q);
}

/* Starts q now, or queues it behind the active request. */
static void submit(read_req *q) {
  tf_reader *r = q->r;
  if (q->cancel != NULL) {
    tf__ref_get(&q->refs);
    q->token = tf_cancel_register(q->cancel, on_cancel, q);
    if (q->token == 0) {
      req_unref(q);
      tf_cancel_reason(q->cancel, &q->st);
      complete(q);
      return;
    }
  }
  pthread_mutex_lock(&r->mu);
  if (r->busy) {
    q->next = NULL;
    if (r->tail) {
      r->tail->next = q;
    } else {
      r->head = q;
    }
    r->tail = q;
    /* cancelled before it was listed: on_cancel found nothing to end */
    bool late = q->cancel_seen && unlink_waiter(r, q);
    pthread_mutex_unlock(&r->mu);
    if (late) {
      tf_cancel_reason(q->cancel, &q->st);
      unregister(q);
      complete(q);
    }
    return;
  }
  r->busy = true;
  pthread_mutex_unlock(&r->mu);
  unregister(q);
  run_loop(q);
}

static read_req *req_new(tf_reader *r, tf_queue *work, tf_cancel *cancel,
                         tf_reader_done_fn done, void *arg) {
  read_req *q = tf__xcalloc(1, sizeof *q);
  tf__ref_init(&q->refs, 1);
  q->r = r;
  tf_resource_ref(&r->base);
  q->work = work;
  if (work != NULL) {
    tf_resource_ref(tf_queue_resource(work));
  }
  q->cancel = cancel;
  q->done = done;
  q->arg = arg;
  tf_status_init(&q->st);
  tf_status_init(&q->dq_st);
  return q;
}

/* ---- reading ---------------------------------------------------------------------- */

/* Room for one more record in q's tensors (doubling for ReadUpTo). */
static tf_code reserve_record(read_req *q) {
  if (q->n < q->cap) {
    return TF_OK;
  }
  return resize(q, q->want < 0 ? 1 : TF_MIN(q->want, TF_MAX(2 * q->cap, 64)));
}

static void close_file(tf_reader *r) {
  if (r->file != NULL) {
    tf_record_reader_close(r->file);
    r->file = NULL;
    r->completed++;
  }
}

/* Writes v >= 0 in decimal at p; returns the digit count. */
static size_t put_number(char *p, int64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  for (size_t i = 0; i < n; i++) {
    p[i] = tmp[n - 1 - i];
  }
  return n;
}

/* Reads the next record of the open file into q, or closes the file at its
 * end or when it is damaged (then q fails). */
static void read_one(read_req *q) {
  tf_reader *r = q->r;
  const void *data;
  size_t len;
  tf_status st;
  tf_code rc = tf_record_reader_next(r->file, &data, &len, &st);
  if (rc != TF_OK) {
    if (rc != TF_OUT_OF_RANGE) {
      q->st = st;
    }
    close_file(r);
    return;
  }
  if (reserve_record(q) != TF_OK) {
    return;
  }
  bool idx = r->o.format == TF_RECORD_IDX;
  int64_t at = idx ? tf_record_reader_index(r->file) - 1
                   : tf_record_reader_offset(r->file);
  size_t kn = r->key_prefix + put_number(r->key + r->key_prefix, at);
  if (tf_tensor_set_string(q->keys, q->n, r->key, kn, &q->st) == TF_OK &&
      tf_tensor_set_string(q->values, q->n, data, len, &q->st) == TF_OK) {
    q->n++;
    r->produced++;
  }
}

/* Handles the answer of the work queue: opens the named file. */
static void take_work(read_req *q) {
  tf_tensor *name = q->dq_name;
  q->dq_name = NULL;
  if (q->dq_st.code != TF_OK) {
    if (q->dq_st.code == TF_OUT_OF_RANGE && q->want > 0 && q->n > 0) {
      q->ended = true;
    } else {
      q->st = q->dq_st;
    }
  } else if (name->dtype != TF_STRING || name->shape.rank != 0) {
    char b[64];
    tf_status_set(&q->st, TF_INVALID_ARGUMENT, "reader '%s': a work item "
                  "must be a scalar string (a file name), got %s %s",
                  q->r->base.name, tf_dtype_name(name->dtype),
                  tf_shape_str(&name->shape, b, sizeof b));
  } else {
    const tf_string *s = tf_tensor_strings(name);
    tf_reader *r = q->r;
    if (tf_record_reader_open(s->data ? s->data : "", &r->o, &r->file,
                              &q->st) == TF_OK) {
      /* the key prefix, cut to leave room for ':' and 20 digits */
      size_t n = TF_MIN(s->len, sizeof r->key - 24);
      memcpy(r->key, s->data, n);
      r->key[n] = ':';
      r->key_prefix = n + 1;
    }
  }
  tf_tensor_unref(name);
}

static void work_arrived(void *arg, const tf_status *st, tf_tensor **tuple) {
  read_req *q = arg;
  q->dq_st = *st;
  q->dq_name = tuple != NULL ? tuple[0] : NULL;
  int expect = PHASE_CALLING;
  if (atomic_compare_exchange_strong(&q->phase, &expect, PHASE_ARRIVED)) {
    return; /* answered inside tf_queue_dequeue: the caller goes on */
  }
  take_work(q);
  run_loop(q);
}

/* Asks the work queue for a file name; true when it has been handled
 * already, false when the answer will come through work_arrived. */
static bool next_file(read_req *q) {
  atomic_store(&q->phase, PHASE_CALLING);
  tf_status st;
  if (tf_queue_dequeue(q->work, -1, q->cancel, work_arrived, q, &st) != TF_OK) {
    q->st = st;
    return true;
  }
  int expect = PHASE_CALLING;
  if (atomic_compare_exchange_strong(&q->phase, &expect, PHASE_WAITING)) {
    return false;
  }
  take_work(q);
  return true;
}

/* Works on the active request; true when it is finished, false when it
 * waits for a file name. */
static bool advance(read_req *q) {
  tf_reader *r = q->r;
  if (q->reset) {
    tf_record_reader_close(r->file);
    r->file = NULL;
    r->produced = 0;
    r->completed = 0;
    return true;
  }
  int64_t want = q->want < 0 ? 1 : q->want;
  while (q->st.code == TF_OK && !q->ended && q->n < want) {
    if (r->file != NULL) {
      read_one(q);
    } else if (!next_file(q)) {
      return false;
    }
  }
  return true;
}

/* Runs the active request and then the waiting ones until the list is
 * empty or a request waits on the work queue. */
static void run_loop(read_req *q) {
  tf_reader *r = q->r;
  tf_resource_ref(&r->base); /* r outlives the last request's completion */
  while (q != NULL && advance(q)) {
    pthread_mutex_lock(&r->mu);
    read_req *next = r->head;
    if (next != NULL) {
      r->head = next->next;
      if (r->head == NULL) {
        r->tail = NULL;
      }
      next->next = NULL;
    } else {
      r->busy = false;
    }
    pthread_mutex_unlock(&r->mu);
    complete(q);
    if (next != NULL) {
      unregister(next);
    }
    q = next;
  }
  tf_resource_unref(&r->base);
}

tf_code tf_reader_read(tf_reader *r, tf_queue *work, int64_t n,
                       tf_cancel *cancel, tf_reader_done_fn done, void *arg,
                       tf_status *st) {
  if (n == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "reader '%s': "
                         "num_records must be >= 1", r->base.name);
  }
  if (work == NULL || tf_queue_num_components(work) != 1 ||
      tf_queue_dtypes(work)[0] != TF_STRING) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "reader '%s': the work "
                         "queue%s%s must hold one string component (file "
                         "names)", r->base.name, work ? " " : "",
                         work ? tf_queue_resource(work)->name : "");
  }
  read_req *q = req_new(r, work, cancel, done, arg);
  q->want = n < 0 ? -1 : n;
  submit(q);
  return TF_OK;
}

void tf_reader_reset(tf_reader *r, tf_cancel *cancel, tf_reader_done_fn done,
                     void *arg) {
  read_req *q = req_new(r, NULL, cancel, done, arg);
  q->reset = true;
  submit(q);
}
