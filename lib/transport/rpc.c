/* rpc.c: the RPC server. One rep socket listens on the configured URL and
 * n_threads threads each own a rep context: receive, parse (malformed
 * requests get an INVALID_ARGUMENT reply), look the request id up in the
 * retry table, run the handler, send the reply. The retry table keeps the
 * replies of the last 1024 finished request ids (up to 1 MiB each) so a
 * retried request is answered without running twice. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/transport/rpc.h"

#define DEDUP_KEEP 1024          /* finished ids remembered */
#define DEDUP_BUCKETS 4096
#define DEDUP_MAX_REPLY (1 << 20) /* bytes of a retained reply */
#define RETRY_WAIT_MS 30000      /* a retry without a deadline waits this */

/* ---- retry table -------------------------------------------------------- */

typedef struct dedup_entry {
  uint64_t id;
  int method;
  bool done;
  tf__refcount refs;     /* the table's until evicted, and one per retry
                            blocked on this entry */
  nng_msg *reply;        /* retained copy; NULL if too large */
  size_t reply_len;
  struct dedup_entry *next; /* hash chain */
} dedup_entry;

typedef struct dedup {
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* broadcast when an entry finishes */
  dedup_entry *bucket[DEDUP_BUCKETS];
  dedup_entry *ring[DEDUP_KEEP]; /* finished entries, oldest at head */
  int head, count;
} dedup;

static void dedup_init(dedup *d) {
  pthread_mutex_init(&d->mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cv, &a);
  pthread_condattr_destroy(&a);
}

static void entry_free(dedup_entry *e) {
  nng_msg_free(e->reply);
  free(e);
}

static dedup_entry **dedup_slot(dedup *d, uint64_t id) {
  dedup_entry **p = &d->bucket[(id * 0x9E3779B97F4A7C15ull) >> 52];
  while (*p != NULL && (*p)->id != id) {
    p = &(*p)->next;
  }
  return p;
}

static void dedup_destroy(dedup *d) {
  for (int i = 0; i < DEDUP_BUCKETS; i++) {
    while (d->bucket[i] != NULL) {
      dedup_entry *e = d->bucket[i];
      d->bucket[i] = e->next;
      bool last = tf__ref_drop(&e->refs); /* no retry waits: workers joined */
      TF_ASSERT(last);
      entry_free(e);
    }
  }
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
}

/* Under d->mu: forgets the oldest finished entry. */
static void dedup_evict_oldest(dedup *d) {
  dedup_entry *e = d->ring[d->head];
  d->head = (d->head + 1) % DEDUP_KEEP;
  d->count--;
  *dedup_slot(d, e->id) = e->next;
  if (tf__ref_drop(&e->refs)) { /* else the last waiter frees it */
    entry_free(e);
  }
}

/* Answers a retry from a finished entry (under d->mu). */
static nng_msg *dedup_answer(const dedup_entry *e, const tf_wire_header *h,
                             tf_status *st) {
  if (e->method != h->method) {
    tf_status_set(st, TF_INVALID_ARGUMENT,
                  "request id %llu reused: it was %s, now %s",
                  (unsigned long long)h->request_id, tf_method_name(e->method),
                  tf_method_name(h->method));
    return NULL;
  }
  nng_msg *m = NULL;
  if (e->reply == NULL) {
    tf_status_set(st, TF_ABORTED,
                  "%s request %llu already ran; its %zu-byte reply was too "
                  "large to retain for a retry",
                  tf_method_name(h->method), (unsigned long long)h->request_id,
                  e->reply_len);
  } else if (nng_msg_dup(&m, e->reply) != 0) {
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "out of memory copying a reply");
  }
  return m;
}

/* Waits (under d->mu) for a running entry; NULL + st on timeout. */
static nng_msg *dedup_wait(dedup *d, dedup_entry *e, const tf_wire_header *h,
                           tf_status *st) {
  int64_t wait_ms = h->deadline_ms > 0 ? h->deadline_ms : RETRY_WAIT_MS;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += wait_ms / 1000;
  ts.tv_nsec += (wait_ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  tf__ref_get(&e->refs);
  int rc = 0;
  while (!e->done && rc != ETIMEDOUT) {
    rc = pthread_cond_timedwait(&d->cv, &d->mu, &ts);
  }
  nng_msg *m = NULL;
  if (e->done) {
    m = dedup_answer(e, h, st);
  } else {
    tf_status_set(st, TF_UNAVAILABLE,
                  "%s request %llu is still running after %lld ms; retry "
                  "later",
                  tf_method_name(h->method), (unsigned long long)h->request_id,
                  (long long)wait_ms);
  }
  if (tf__ref_drop(&e->refs)) { /* evicted while this retry waited */
    entry_free(e);
  }
  return m;
}

/* Returns true when the request must run (it is now marked running);
 * otherwise *reply is the retained reply, or NULL with st set. */
static bool dedup_begin(dedup *d, const tf_wire_header *h, nng_msg **reply,
                        tf_status *st) {
  *reply = NULL;
  pthread_mutex_lock(&d->mu);
  dedup_entry **slot = dedup_slot(d, h->request_id);
  dedup_entry *e = *slot;
  if (e == NULL) {
    e = tf__xcalloc(1, sizeof *e);
    e->id = h->request_id;
    e->method = h->method;
    tf__ref_init(&e->refs, 1);
    *slot = e;
    pthread_mutex_unlock(&d->mu);
    return true;
  }
  *reply = e->done ? dedup_answer(e, h, st) : dedup_wait(d, e, h, st);
  pthread_mutex_unlock(&d->mu);
  return false;
}

/* Marks request id finished with reply (copied when small enough). */
static void dedup_finish(dedup *d, uint64_t id, nng_msg *reply) {
  nng_msg *keep = NULL;
  size_t len = reply != NULL ? nng_msg_len(reply) : 0;
  if (reply != NULL && len <= DEDUP_MAX_REPLY && nng_msg_dup(&keep, reply)) {
    keep = NULL;
  }
  pthread_mutex_lock(&d->mu);
  dedup_entry *e = *dedup_slot(d, id);
  TF_ASSERT(e != NULL && !e->done);
  e->done = true;
  e->reply = keep;
  e->reply_len = len;
  if (d->count == DEDUP_KEEP) {
    dedup_evict_oldest(d);
  }
  d->ring[(d->head + d->count) % DEDUP_KEEP] = e;
  d->count++;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

/* ---- server ------------------------------------------------------------- */

typedef struct worker {
  tf_rpc_server *s;
  pthread_t th;
  nng_ctx ctx;
  nng_aio *aio;
  bool idle;       /* waiting in receive (under s->mu) */
  bool started;
} worker;

struct tf_rpc_server {
  nng_socket sock;
  nng_listener l;
  char *url;
  int port;
  tf_rpc_handler h;
  void *arg;
  pthread_mutex_t mu;
  bool stopping;
  int n;
  worker *w;
  dedup dd;
  atomic_uint_fast64_t served, rejected;
};

/* The reply to one received message (NULL: none could be built). */
static nng_msg *serve_one(tf_rpc_server *s, nng_msg *m) {
  tf_status st;
  tf_status_init(&st);
  tf_wire_msg *req;
  nng_msg *reply = NULL;
  if (tf_wire_parse(m, &req, &st) != TF_OK) {
    atomic_fetch_add(&s->rejected, 1);
    tf_status_prefix(&st, "malformed request to %s", s->url);
    tf_wire_error_reply(NULL, &st, &reply, NULL);
    return reply;
  }
  if (req->h.is_reply) {
    atomic_fetch_add(&s->rejected, 1);
    tf_status_set(&st, TF_INVALID_ARGUMENT,
                  "malformed request to %s: a %s reply sent as a request",
                  s->url, tf_method_name(req->h.method));
    tf_wire_error_reply(&req->h, &st, &reply, NULL);
    tf_wire_msg_free(req);
    return reply;
  }
  uint64_t id = req->h.request_id;
  if (id != 0 && !dedup_begin(&s->dd, &req->h, &reply, &st)) {
    if (reply == NULL) {
      tf_wire_error_reply(&req->h, &st, &reply, NULL);
    }
    tf_wire_msg_free(req);
    return reply;
  }
  reply = s->h(s->arg, req, &st);
  if (reply == NULL) {
    if (st.code == TF_OK) {
      tf_status_set(&st, TF_INTERNAL, "the %s handler returned no reply",
                    tf_method_name(req->h.method));
    }
    tf_wire_error_reply(&req->h, &st, &reply, NULL);
  }
  atomic_fetch_add(&s->served, 1);
  if (id != 0) {
    dedup_finish(&s->dd, id, reply);
  }
  tf_wire_msg_free(req);
  /* cppcheck-suppress returnDanglingLifetime ; s->h returns a new message */
  return reply;
}

/* Starts a receive unless stopping; false means the thread must end. */
static bool worker_recv(worker *w) {
  tf_rpc_server *s = w->s;
  pthread_mutex_lock(&s->mu);
  bool go = !s->stopping;
  if (go) {
    w->idle = true;
    nng_ctx_recv(w->ctx, w->aio);
  }
  pthread_mutex_unlock(&s->mu);
  if (!go) {
    return false;
  }
  nng_aio_wait(w->aio);
  pthread_mutex_lock(&s->mu);
  w->idle = false;
  pthread_mutex_unlock(&s->mu);
  return true;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  while (worker_recv(w)) {
    int rv = nng_aio_result(w->aio);
    if (rv == NNG_ECLOSED) {
      break;
    }
    if (rv != 0) { /* cancelled by stop (the loop re-checks) or transient */
      if (rv != NNG_ECANCELED) {
        nanosleep(&(struct timespec){0, 1000000}, NULL);
      }
      continue;
    }
    nng_msg *reply = serve_one(w->s, nng_aio_get_msg(w->aio));
    if (reply == NULL) {
      continue;
    }
    nng_aio_set_msg(w->aio, reply);
    nng_ctx_send(w->ctx, w->aio);
    nng_aio_wait(w->aio);
    if (nng_aio_result(w->aio) != 0) {
      nng_msg_free(reply);
    }
  }
  return NULL;
}

static tf_code listen_on(tf_rpc_server *s, const char *url,
                         int64_t max_msg_bytes, tf_status *st) {
  int rv = nng_rep0_open(&s->sock);
  if (rv != 0) {
    return tf_status_set(st, TF_INTERNAL, "cannot open a rep socket: %s",
                         nng_strerror(rv));
  }
  nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, (size_t)max_msg_bytes);
  rv = nng_listener_create(&s->l, s->sock, url);
  if (rv != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "bad URL '%s': %s", url,
                         nng_strerror(rv));
  }
  rv = nng_listener_start(s->l, 0);
  if (rv != 0) {
    return tf_status_set(st,
                         rv == NNG_EADDRINVAL ? TF_INVALID_ARGUMENT
                                              : TF_UNAVAILABLE,
                         "cannot listen on %s: %s", url, nng_strerror(rv));
  }
  if (strncmp(url, "tcp", 3) == 0 &&
      nng_listener_get_int(s->l, NNG_OPT_TCP_BOUND_PORT, &s->port) != 0) {
    s->port = 0;
  }
  return TF_OK;
}

static tf_code start_workers(tf_rpc_server *s, int n, tf_status *st) {
  s->w = tf__xcalloc((size_t)n, sizeof *s->w);
  s->n = n;
  for (int i = 0; i < n; i++) {
    worker *w = &s->w[i];
    w->s = s;
    int rv = nng_ctx_open(&w->ctx, s->sock);
    if (rv == 0) {
      rv = nng_aio_alloc(&w->aio, NULL, NULL);
    }
    if (rv != 0) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                           "cannot start server thread %d for %s: %s", i,
                           s->url, nng_strerror(rv));
    }
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                           "cannot start server thread %d for %s", i, s->url);
    }
    w->started = true;
  }
  return TF_OK;
}

tf_code tf_rpc_server_start(const char *url, int n_threads,
                            int64_t max_msg_bytes, tf_rpc_handler h, void *arg,
                            tf_rpc_server **out, tf_status *st) {
  *out = NULL;
  if (url == NULL || h == NULL || n_threads < 1 || max_msg_bytes < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc server for '%s': need a URL, a handler, "
                         "n_threads >= 1 (got %d) and max_msg_bytes >= 0",
                         url != NULL ? url : "(null)", n_threads);
  }
  if (strncmp(url, "tls+tcp://", 10) == 0) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         "cannot listen on %s: the tls+tcp transport is not "
                         "supported (use tcp, ipc or inproc)",
                         url);
  }
  tf_rpc_server *s = tf__xcalloc(1, sizeof *s);
  s->url = tf__xstrdup(url);
  s->h = h;
  s->arg = arg;
  pthread_mutex_init(&s->mu, NULL);
  dedup_init(&s->dd);
  tf_code c = listen_on(s, url, max_msg_bytes, st);
  if (c == TF_OK) {
    c = start_workers(s, n_threads, st);
  }
  if (c != TF_OK) {
    tf_rpc_server_stop(s);
    return c;
  }
  *out = s;
  return TF_OK;
}

int tf_rpc_server_port(const tf_rpc_server *s) { return s->port; }

void tf_rpc_server_stop(tf_rpc_server *s) {
  if (s == NULL) {
    return;
  }
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  for (int i = 0; i < s->n; i++) {
    if (s->w[i].idle) {
      nng_aio_cancel(s->w[i].aio);
    }
  }
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->n; i++) {
    if (s->w[i].started) {
      pthread_join(s->w[i].th, NULL);
    }
  }
  nng_close(s->sock); /* closes the listener, pipes and contexts */
  for (int i = 0; i < s->n; i++) {
    nng_aio_free(s->w[i].aio);
  }
  free(s->w);
  dedup_destroy(&s->dd);
  pthread_mutex_destroy(&s->mu);
  free(s->url);
  free(s);
}

uint64_t tf_rpc_server_served(const tf_rpc_server *s) {
  return atomic_load(&s->served);
}

uint64_t tf_rpc_server_rejected(const tf_rpc_server *s) {
  return atomic_load(&s->rejected);
}
