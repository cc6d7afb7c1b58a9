/* rpc_client.c: the RPC client. One req socket dials the peer in the
 * background (NNG reconnects with backoff), and every call opens its own
 * req context and aio: send, then receive within what is left of the
 * timeout. NNG's automatic resend is off: a caller retries with the same
 * request id, which the server's retry table answers once. A synchronous
 * call is an asynchronous one plus a wait. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/transport/rpc.h"

struct tf_rpc_client {
  nng_socket sock;
  char *url;
  tf__refcount refs; /* the owner's plus one per call in flight */
};

typedef struct call {
  tf_rpc_client *c;
  nng_ctx ctx;
  nng_aio *aio;
  int method;
  int64_t timeout_ms;
  int64_t deadline_ns;
  bool receiving;
  tf_rpc_done done;
  void *arg;
} call;

static void client_release(void *arg) {
  tf_rpc_client *c = arg;
  free(c->url);
  free(c);
}

static void client_unref(tf_rpc_client *c) {
  tf__ref_put(&c->refs, client_release, c);
}

tf_code tf_rpc_client_new(const char *url, int64_t max_msg_bytes,
                          tf_rpc_client **out, tf_status *st) {
  *out = NULL;
  if (url == NULL || max_msg_bytes < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc client: need a URL and max_msg_bytes >= 0");
  }
  if (strncmp(url, "tls+tcp://", 10) == 0) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         "cannot dial %s: the tls+tcp transport is not "
                         "supported (use tcp, ipc or inproc)",
                         url);
  }
  tf_rpc_client *c = tf__xcalloc(1, sizeof *c);
  tf__ref_init(&c->refs, 1);
  c->url = tf__xstrdup(url);
  int rv = nng_req0_open(&c->sock);
  if (rv != 0) {
    client_unref(c);
    return tf_status_set(st, TF_INTERNAL, "cannot open a req socket: %s",
                         nng_strerror(rv));
  }
  nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, (size_t)max_msg_bytes);
  nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 10);
  nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 500);
  rv = nng_dial(c->sock, url, NULL, NNG_FLAG_NONBLOCK);
  if (rv != 0) {
    tf_rpc_client_free(c);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "cannot dial '%s': %s", url,
                         nng_strerror(rv));
  }
  *out = c;
  return TF_OK;
}

/* Set while a done callback runs on an NNG thread. */
static _Thread_local bool in_done;

static void client_close(tf_rpc_client *c) {
  nng_close(c->sock); /* calls in flight fail with UNAVAILABLE */
  client_unref(c);
}

static void *closer_main(void *arg) {
  client_close(arg);
  return NULL;
}

void tf_rpc_client_free(tf_rpc_client *c) {
  if (c == NULL) {
    return;
  }
  /* nng_close from an NNG completion thread waits for work that thread
   * would run: from a done callback the close goes to a thread of its own. */
  pthread_t th;
  pthread_attr_t a;
  if (in_done && pthread_attr_init(&a) == 0) {
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &a, closer_main, c);
    pthread_attr_destroy(&a);
    if (rc == 0) {
      return;
    }
  }
  client_close(c);
}

const char *tf_rpc_client_url(const tf_rpc_client *c) { return c->url; }

/* Ends a call: the context is closed before done runs, so done may free
 * the client. */
static void call_end(call *k, tf_status *st, tf_wire_msg *reply) {
  nng_ctx_close(k->ctx);
  in_done = true;
  k->done(k->arg, st, reply);
  in_done = false;
  nng_aio_reap(k->aio);
  client_unref(k->c);
  free(k);
}

static void call_fail(call *k, int rv) {
  tf_status st;
  if (rv == NNG_ETIMEDOUT) {
    tf_status_set(&st, TF_DEADLINE_EXCEEDED,
                  "%s to %s: no reply within %lld ms",
                  tf_method_name(k->method), k->c->url,
                  (long long)k->timeout_ms);
  } else {
    tf_status_set(&st, TF_UNAVAILABLE, "%s to %s: %s",
                  tf_method_name(k->method), k->c->url, nng_strerror(rv));
  }
  call_end(k, &st, NULL);
}

static void call_reply(call *k, nng_msg *m) {
  tf_status st;
  tf_status_init(&st);
  tf_wire_msg *r;
  if (tf_wire_parse(m, &r, &st) != TF_OK) {
    tf_status_prefix(&st, "%s to %s: malformed reply",
                     tf_method_name(k->method), k->c->url);
    call_end(k, &st, NULL);
    return;
  }
  if (r->h.code != TF_OK) {
    tf_status_set(&st, (tf_code)r->h.code, "%s", r->h.error);
    tf_wire_msg_free(r);
    call_end(k, &st, NULL);
    return;
  }
  call_end(k, &st, r);
}

static void call_cb(void *arg) {
  call *k = arg;
  int rv = nng_aio_result(k->aio);
  if (rv != 0) {
    if (!k->receiving) {
      nng_msg_free(nng_aio_get_msg(k->aio)); /* a failed send keeps it */
    }
    call_fail(k, rv);
    return;
  }
  if (k->receiving) {
    call_reply(k, nng_aio_get_msg(k->aio));
    return;
  }
  int64_t left_ms = (k->deadline_ns - tf__now_ns() + 999999) / 1000000;
  if (left_ms <= 0) {
    call_fail(k, NNG_ETIMEDOUT);
    return;
  }
  k->receiving = true;
  nng_aio_set_timeout(k->aio, (nng_duration)TF_MIN(left_ms, INT32_MAX));
  nng_ctx_recv(k->ctx, k->aio);
}

static void fail_now(tf_rpc_done done, void *arg, tf_code code,
                     const char *fmt, const char *url, int method,
                     const char *why) {
  tf_status st;
  tf_status_set(&st, code, fmt, tf_method_name(method), url, why);
  done(arg, &st, NULL);
}

void tf_rpc_call_async(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                       tf_rpc_done done, void *arg) {
  int method = tf__wire_method_of(req);
  if (timeout_ms <= 0) {
    nng_msg_free(req);
    fail_now(done, arg, TF_INVALID_ARGUMENT, "%s to %s: %s", c->url, method,
             "timeout_ms must be > 0");
    return;
  }
  call *k = tf__xcalloc(1, sizeof *k);
  *k = (call){.c = c, .method = method, .timeout_ms = timeout_ms,
              .deadline_ns = tf__now_ns() + timeout_ms * 1000000,
              .done = done, .arg = arg};
  int rv = nng_ctx_open(&k->ctx, c->sock);
  if (rv == 0 && (rv = nng_aio_alloc(&k->aio, call_cb, k)) != 0) {
    nng_ctx_close(k->ctx);
  }
  if (rv != 0) {
    free(k);
    nng_msg_free(req);
    fail_now(done, arg, TF_UNAVAILABLE, "%s to %s: %s", c->url, method,
             nng_strerror(rv));
    return;
  }
  tf__ref_get(&c->refs);
  nng_aio_set_msg(k->aio, req);
  nng_aio_set_timeout(k->aio, (nng_duration)TF_MIN(timeout_ms, INT32_MAX));
  nng_ctx_send(k->ctx, k->aio);
}

typedef struct sync_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  tf_status st;
  tf_wire_msg *reply;
} sync_wait;

static void sync_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  sync_wait *w = arg;
  pthread_mutex_lock(&w->mu);
  w->st = *st;
  w->reply = reply;
  w->done = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

tf_code tf_rpc_call(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                    tf_wire_msg **reply, tf_status *st) {
  *reply = NULL;
  sync_wait w = {.done = false, .reply = NULL};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  tf_rpc_call_async(c, req, timeout_ms, sync_done, &w);
  pthread_mutex_lock(&w.mu);
  while (!w.done) { /* bounded: the aio times out after timeout_ms */
    pthread_cond_wait(&w.cv, &w.mu);
  }
  pthread_mutex_unlock(&w.mu);
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  *reply = w.reply;
  if (st != NULL) {
    *st = w.st;
  }
  return w.st.code;
}

static atomic_uint_fast64_t next_request_id;
static pthread_once_t request_id_once = PTHREAD_ONCE_INIT;

/* Random start, so ids from a restarted process do not repeat old ones. */
static void seed_request_ids(void) {
  atomic_store(&next_request_id, tf__random_u64());
}

uint64_t tf_rpc_new_request_id(void) {
  pthread_once(&request_id_once, seed_request_ids);
  uint64_t id;
  do {
    id = atomic_fetch_add(&next_request_id, 1);
  } while (id == 0);
  return id;
}
