/* rpc_retry.c: the RPC server's retry table. Request ids are executed
 * once: the table keeps the replies of the last 1024 finished ids (up to
 * 1 MiB each, 64 MiB in all: past that the oldest replies are dropped and
 * their ids still remembered) so that a retry of a finished request is
 * answered without running twice, and a retry of a running request waits -- holding its
 * context, never a thread -- by sleeping on its call's aio until the
 * original finishes (which cancels the sleep) or the retry's own deadline
 * passes. Waiting retries hold a reference on their entry, so eviction
 * never frees an entry a waking retry is about to read. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/transport/rpc_server.h"

#define KEEP 1024            /* finished ids remembered */
#define BUCKETS 4096
#define MAX_RETAINED (1 << 20) /* bytes of a retained reply */
#define MAX_RETAINED_TOTAL (64 << 20) /* bytes of every retained reply */
#define RETRY_WAIT_MS 30000  /* a retry without a deadline waits this */

struct tf__retry_entry {
  uint64_t id;
  int method;
  bool done;
  bool dropped;            /* its reply was retained, then dropped for the total */
  tf__refcount refs;       /* the table's until evicted, and one per waiting retry */
  nng_msg *reply;          /* retained copy; NULL if too large */
  size_t reply_len;
  tf__rpc_call *waiters;    /* retries sleeping until done (linked by wait_next) */
  tf__retry_entry *next;   /* hash chain */
};

struct tf__retry {
  pthread_mutex_t mu;
  bool stopping;
  tf__retry_entry *bucket[BUCKETS];
  tf__retry_entry *ring[KEEP]; /* finished entries, oldest at head */
  int head, count;
  size_t retained;         /* bytes of the replies the ring's entries keep */
  int oldest_kept;         /* ring index (from head) before which none keeps one */
};

tf__retry *tf__retry_new(void) {
  tf__retry *d = tf__xcalloc(1, sizeof *d);
  pthread_mutex_init(&d->mu, NULL);
  return d;
}

static void entry_free(tf__retry_entry *e) {
  nng_msg_free(e->reply);
  free(e);
}

static tf__retry_entry **slot_of(tf__retry *d, uint64_t id) {
  tf__retry_entry **p = &d->bucket[(id * 0x9E3779B97F4A7C15ull) >> 52];
  while (*p != NULL && (*p)->id != id) {
    p = &(*p)->next;
  }
  return p;
}

void tf__retry_free(tf__retry *d) {
  if (d == NULL) {
    return;
  }
  for (int i = 0; i < BUCKETS; i++) {
    while (d->bucket[i] != NULL) {
      tf__retry_entry *e = d->bucket[i];
      d->bucket[i] = e->next;
      TF_ASSERT(e->waiters == NULL);
      bool last = tf__ref_drop(&e->refs); /* no retry waits: slots parked */
      TF_ASSERT(last);
      entry_free(e);
    }
  }
  pthread_mutex_destroy(&d->mu);
  free(d);
}

/* Under d->mu: forgets the oldest finished entry. */
static void evict_oldest(tf__retry *d) {
  tf__retry_entry *e = d->ring[d->head];
  d->head = (d->head + 1) % KEEP;
  d->count--;
  d->oldest_kept = TF_MAX(d->oldest_kept - 1, 0);
  if (e->reply != NULL) {
    d->retained -= e->reply_len; /* freed with e, maybe after a waking retry */
  }
  *slot_of(d, e->id) = e->next;
  if (tf__ref_drop(&e->refs)) { /* else the last waking retry frees it */
    entry_free(e);
  }
}

/* The answer to a retry of finished entry e (under d->mu). */
static nng_msg *answer(const tf__retry_entry *e, const tf_wire_header *h,
                       tf_status *st) {
  if (e->method != h->method) {
    tf_status_set(st, TF_INVALID_ARGUMENT,
                  "request id %llu reused: it was %s, now %s",
                  (unsigned long long)h->request_id, tf_method_name(e->method),
                  tf_method_name(h->method));
    return NULL;
  }
  nng_msg *m = NULL;
  if (e->reply == NULL && e->dropped) {
    tf_status_set(st, TF_ABORTED,
                  "%s request %llu already ran; its %zu-byte reply is no "
                  "longer retained for a retry (the replies retained hold at "
                  "most %d MiB)",
                  tf_method_name(h->method), (unsigned long long)h->request_id,
                  e->reply_len, MAX_RETAINED_TOTAL >> 20);
  } else if (e->reply == NULL) {
    tf_status_set(st, TF_ABORTED,
                  "%s request %llu already ran; its %zu-byte reply was too "
                  "large to retain for a retry",
                  tf_method_name(h->method), (unsigned long long)h->request_id,
                  e->reply_len);
  } else if (nng_msg_dup(&m, e->reply) != 0) {
    m = NULL;
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "out of memory copying a reply");
  }
  return m;
}

/* Under d->mu: queues call behind running entry e and starts its sleep.
 * The sleep starts under the lock so that a finish, which cancels the
 * waiters' aios under the same lock, never misses it. */
static void wait_for(tf__retry_entry *e, tf__rpc_call *call,
                     const tf_wire_header *h) {
  call->wait_ms = h->deadline_ms > 0 ? h->deadline_ms : RETRY_WAIT_MS;
  tf__ref_get(&e->refs);
  call->wait_entry = e;
  call->wait_next = e->waiters;
  e->waiters = call;
  atomic_store(&call->state, TF__SLOT_WAIT);
  nng_sleep_aio((nng_duration)TF_MIN(call->wait_ms, INT32_MAX), call->aio);
}

tf__retry_outcome tf__retry_begin(tf__retry *d, tf__rpc_call *call,
                                  const tf_wire_header *h, nng_msg **reply,
                                  tf_status *st) {
  *reply = NULL;
  pthread_mutex_lock(&d->mu);
  tf__retry_entry **slot = slot_of(d, h->request_id);
  tf__retry_entry *e = *slot;
  tf__retry_outcome out = TF__RETRY_ANSWERED;
  if (e == NULL) {
    e = tf__xcalloc(1, sizeof *e);
    e->id = h->request_id;
    e->method = h->method;
    tf__ref_init(&e->refs, 1);
    *slot = e;
    out = TF__RETRY_RUN;
  } else if (e->done || e->method != h->method) {
    *reply = answer(e, h, st);
  } else if (d->stopping) {
    tf_status_set(st, TF_UNAVAILABLE,
                  "%s request %llu is still running and the server is "
                  "stopping",
                  tf_method_name(h->method), (unsigned long long)h->request_id);
  } else {
    wait_for(e, call, h);
    out = TF__RETRY_WAITING;
  }
  pthread_mutex_unlock(&d->mu);
  return out;
}

/* Under d->mu: removes call from e's waiters. */
static void unlink_waiter(tf__retry_entry *e, tf__rpc_call *call) {
  tf__rpc_call **p = &e->waiters;
  while (*p != NULL && *p != call) {
    p = &(*p)->wait_next;
  }
  TF_ASSERT(*p == call);
  *p = call->wait_next;
  call->wait_next = NULL;
}

nng_msg *tf__retry_wake(tf__retry *d, tf__rpc_call *call, const char *url,
                        tf_status *st) {
  const tf_wire_header *h = &call->req->h;
  nng_msg *m = NULL;
  pthread_mutex_lock(&d->mu);
  tf__retry_entry *e = call->wait_entry;
  TF_ASSERT(e != NULL);
  if (e->done) {
    m = answer(e, h, st); /* the finish already emptied e->waiters */
  } else {
    unlink_waiter(e, call);
    if (d->stopping) {
      tf_status_set(st, TF_UNAVAILABLE,
                    "%s request %llu is still running and the server at %s "
                    "is stopping",
                    tf_method_name(h->method),
                    (unsigned long long)h->request_id, url);
    } else {
      tf_status_set(st, TF_UNAVAILABLE,
                    "%s request %llu is still running after %lld ms; retry "
                    "later",
                    tf_method_name(h->method),
                    (unsigned long long)h->request_id,
                    (long long)call->wait_ms);
    }
  }
  call->wait_entry = NULL;
  if (tf__ref_drop(&e->refs)) { /* evicted while this retry waited */
    entry_free(e);
  }
  pthread_mutex_unlock(&d->mu);
  return m;
}

/* Under d->mu: drops the oldest retained replies until the rest hold at
 * most MAX_RETAINED_TOTAL bytes (their ids stay: a retry is refused, never
 * run twice). The newest entry's reply is never dropped (it is at most
 * MAX_RETAINED). */
static void drop_oldest_replies(tf__retry *d) {
  while (d->retained > MAX_RETAINED_TOTAL && d->oldest_kept < d->count - 1) {
    tf__retry_entry *e = d->ring[(d->head + d->oldest_kept) % KEEP];
    d->oldest_kept++;
    if (e->reply != NULL) {
      d->retained -= e->reply_len;
      nng_msg_free(e->reply);
      e->reply = NULL;
      e->dropped = true;
    }
  }
}

void tf__retry_finish(tf__retry *d, uint64_t id, const nng_msg *reply) {
  nng_msg *keep = NULL;
  size_t len = nng_msg_len(reply);
  if (len <= MAX_RETAINED && nng_msg_dup(&keep, reply) != 0) {
    keep = NULL;
  }
  pthread_mutex_lock(&d->mu);
  tf__retry_entry *e = *slot_of(d, id);
  TF_ASSERT(e != NULL && !e->done);
  e->done = true;
  e->reply = keep;
  e->reply_len = len;
  for (tf__rpc_call *w = e->waiters; w != NULL; w = w->wait_next) {
    nng_aio_cancel(w->aio); /* its callback answers from e */
  }
  e->waiters = NULL;
  if (d->count == KEEP) {
    evict_oldest(d);
  }
  d->ring[(d->head + d->count) % KEEP] = e;
  d->count++;
  if (keep != NULL) {
    d->retained += len;
    drop_oldest_replies(d);
  }
  pthread_mutex_unlock(&d->mu);
}

size_t tf__retry_retained_bytes(tf__retry *d) {
  pthread_mutex_lock(&d->mu);
  size_t n = d->retained;
  pthread_mutex_unlock(&d->mu);
  return n;
}

void tf__retry_stop(tf__retry *d) {
  pthread_mutex_lock(&d->mu);
  d->stopping = true;
  for (int i = 0; i < BUCKETS; i++) {
    for (tf__retry_entry *e = d->bucket[i]; e != NULL; e = e->next) {
      for (tf__rpc_call *w = e->waiters; w != NULL; w = w->wait_next) {
        nng_aio_cancel(w->aio); /* wakes; unlinks itself (e is not done) */
      }
    }
  }
  pthread_mutex_unlock(&d->mu);
}
