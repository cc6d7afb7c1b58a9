/* tstream_client.c: the tensor stream's client. Frames wait in one queue
 * and are written by up to max_connections connections, each writing one
 * frame at a time straight from the tensor's buffer (one iov each for
 * prefix, header and payload; NNG writes what the kernel takes and the
 * send callback re-issues the rest). A connection is dialled when a frame
 * needs one and none is free, and redialled after a failure.
 *
 * A connection's states: EMPTY (no stream) -> DIALING -> READY (a stream,
 * its watch pending) <-> BUSY (a frame being written) -> CLOSING (stream
 * closed, waiting for the send and the watch to return) -> EMPTY. The
 * watch is a 1-byte read that the server never answers: it ends when the
 * server closes the connection (so the next frame does not go into a dead
 * socket), and its timeout closes a connection idle for idle_ms. Every
 * state change happens under the client's lock; done callbacks and
 * stream frees run after it is released. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "lib/core/base/util.h"
#include "lib/transport/auth.h"
#include "lib/transport/tensor_stream.h"
#include "lib/transport/peer_metrics.h"
#include "lib/transport/tstream_frame.h"
#include "lib/transport/tls.h"
#include "lib/transport/tstream_util.h"

/* One queued frame. */
typedef struct tsend {
  struct tsend *next;
  tf_tensor *t;            /* a reference; NULL for a dead value */
  void *hdr;               /* packed header */
  uint8_t prefix[TF__TSTREAM_PREFIX_BYTES];
  nng_iov iov[4];          /* what is left to write (a hello first) */
  unsigned niov;
  char key[128];           /* for messages (truncated) */
  size_t bytes;            /* the whole frame's */
  tf_tstream_done done;
  void *arg;
  tf_status st;            /* the outcome, set before done runs */
} tsend;

typedef enum cstate { C_EMPTY, C_DIALING, C_READY, C_BUSY, C_CLOSING } cstate;

typedef struct tconn {
  tf_tstream_client *c;
  cstate state;
  nng_stream *s;
  nng_aio *dial_aio, *send_aio, *watch_aio;
  bool send_pending, watch_pending;
  tsend *cur;              /* the frame being written (BUSY) */
  uint8_t watch_byte;
  bool hello_due;          /* the first frame carries the hello */
  uint8_t hello[TF_AUTH_HELLO_BYTES];
  int64_t last_used_ns;
  const char *why;         /* why it was closed (CLOSING), for messages */
} tconn;

struct tf_tstream_client {
  char *url;
  tf_tstream_client_opts o;
  nng_stream_dialer *d;
  pthread_mutex_t mu;
  bool closing;
  tsend *head, *tail;      /* queued, not yet on a connection */
  int n_queued;
  tconn *conns;            /* o.max_connections of them */
  const tf__peer_metrics *peer; /* the first frame's "to" (one task per URL) */
  tf_auth *auth;           /* signs each connection's hello; NULL: none */
  bool tls;                /* a tls+tcp URL */
};

/* Work collected under the lock and done after it: finished frames
 * (their done calls) and streams to free. */
typedef struct after {
  tsend *finished;
  nng_stream *to_free[2];
  int n_free;
} after;

tf_tstream_client_opts tf_tstream_client_opts_default(void) {
  return (tf_tstream_client_opts){.max_connections = 2,
                                  .max_queued = 1024,
                                  .dial_timeout_ms = 5000,
                                  .io_timeout_ms = 30000,
                                  .idle_ms = 60000};
}

/* ---- finishing frames --------------------------------------------------- */

static void fail(after *a, tsend *x, tf_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Marks x finished with st's outcome and queues its done call. */
static void finish(after *a, tsend *x) {
  x->next = a->finished;
  a->finished = x;
}

static void fail(after *a, tsend *x, tf_code code, const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  tf_status_set(&x->st, code, "%s", why);
  finish(a, x);
}

static void tsend_free(tsend *x) {
  tf_tensor_unref(x->t);
  free(x->hdr);
  free(x);
}

/* Runs the done calls and frees the streams collected in a. */
static void run_after(after *a) {
  for (int i = 0; i < a->n_free; i++) {
    nng_stream_free(a->to_free[i]);
  }
  while (a->finished != NULL) {
    tsend *x = a->finished;
    a->finished = x->next;
    x->done(x->arg, &x->st);
    tsend_free(x);
  }
}

/* ---- connection state machine (under c->mu) ---------------------------- */

/* Drops the first n written bytes from x's iovs; true when none are left. */
static bool advance(tsend *x, size_t n) {
  unsigned k = 0;
  while (k < x->niov && n >= x->iov[k].iov_len) {
    n -= x->iov[k].iov_len;
    k++;
  }
  if (k < x->niov) {
    x->iov[k].iov_buf = (char *)x->iov[k].iov_buf + n;
    x->iov[k].iov_len -= n;
  }
  memmove(x->iov, x->iov + k, (x->niov - k) * sizeof x->iov[0]);
  x->niov -= k;
  return x->niov == 0;
}

static void start_send(tconn *k) {
  tsend *x = k->cur;
  nng_aio_set_iov(k->send_aio, x->niov, x->iov);
  nng_aio_set_timeout(k->send_aio, tf__tstream_ms(k->c->o.io_timeout_ms));
  k->send_pending = true;
  nng_stream_send(k->s, k->send_aio);
}

static void start_watch(tconn *k, int64_t ms) {
  nng_iov iov = {&k->watch_byte, 1};
  nng_aio_set_iov(k->watch_aio, 1, &iov);
  nng_aio_set_timeout(k->watch_aio, tf__tstream_ms(ms));
  k->watch_pending = true;
  nng_stream_recv(k->s, k->watch_aio);
}

/* Closes k's stream (why: for the message of a frame it cuts short); its
 * pending operations end with errors. They are cancelled as well: NNG
 * 1.5.2 closes a stream by itself on a reset, and an operation started on
 * it after that (a frame handed to a READY connection before the watch's
 * callback ran) would otherwise wait out its timeout, since closing a
 * closed stream does nothing. */
static void conn_close(tconn *k, const char *why) {
  if (k->state == C_READY || k->state == C_BUSY) {
    k->state = C_CLOSING;
    k->why = why;
    nng_stream_close(k->s);
    nng_aio_cancel(k->send_aio);
    nng_aio_cancel(k->watch_aio);
  }
}

/* A CLOSING connection whose operations have all returned becomes EMPTY
 * (its stream freed after the lock). */
static void conn_settle(tconn *k, after *a) {
  if (k->state == C_CLOSING && !k->send_pending && !k->watch_pending) {
    a->to_free[a->n_free++] = k->s;
    k->s = NULL;
    k->state = C_EMPTY;
  }
}

/* Whether some connection is connected (so a failed dial is not the
 * whole story: queued frames can still go). */
static bool any_connected(const tf_tstream_client *c) {
  for (int i = 0; i < c->o.max_connections; i++) {
    if (c->conns[i].state == C_READY || c->conns[i].state == C_BUSY) {
      return true;
    }
  }
  return false;
}

/* Hands queued frames to READY connections and dials EMPTY ones for the
 * frames left (one dial per waiting frame, up to the connection cap). */
static void kick(tf_tstream_client *c) {
  if (c->closing) {
    return;
  }
  int dialing = 0;
  for (int i = 0; i < c->o.max_connections; i++) {
    tconn *k = &c->conns[i];
    if (k->state == C_READY && c->head != NULL) {
      k->cur = c->head;
      c->head = k->cur->next;
      if (c->head == NULL) {
        c->tail = NULL;
      }
      c->n_queued--;
      k->state = C_BUSY;
      if (k->hello_due) { /* the connection's first bytes */
        tsend *x = k->cur;
        tf_auth_hello_sign(c->auth, k->hello); /* fresh: its time is checked */
        memmove(x->iov + 1, x->iov, x->niov * sizeof x->iov[0]);
        x->iov[0] = (nng_iov){k->hello, sizeof k->hello};
        x->niov++;
        k->hello_due = false;
      }
      start_send(k);
    }
    dialing += k->state == C_DIALING;
  }
  for (int i = 0; i < c->o.max_connections && dialing < c->n_queued; i++) {
    tconn *k = &c->conns[i];
    if (k->state == C_EMPTY) {
      k->state = C_DIALING;
      nng_aio_set_timeout(k->dial_aio, tf__tstream_ms(c->o.dial_timeout_ms));
      nng_stream_dialer_dial(c->d, k->dial_aio);
      dialing++;
    }
  }
}

/* ---- callbacks ---------------------------------------------------------- */

static void dial_cb(void *arg) {
  tconn *k = arg;
  tf_tstream_client *c = k->c;
  after a = {0};
  int rv = nng_aio_result(k->dial_aio);
  nng_stream *s = rv == 0 ? nng_aio_get_output(k->dial_aio, 0) : NULL;
  pthread_mutex_lock(&c->mu);
  k->state = C_EMPTY;
  if (c->closing) {
    if (s != NULL) {
      a.to_free[a.n_free++] = s;
    }
  } else if (rv == 0) {
    k->s = s;
    k->state = C_READY;
    k->hello_due = c->auth != NULL;
    k->last_used_ns = tf__now_ns();
    start_watch(k, c->o.idle_ms);
    kick(c);
  } else if (!any_connected(c)) {
    bool other_dial = false;
    for (int i = 0; i < c->o.max_connections; i++) {
      other_dial |= c->conns[i].state == C_DIALING;
    }
    /* The peer is unreachable: fail what waits for it (the last failing
     * dial does, so a dial still under way gets its chance). */
    while (!other_dial && c->head != NULL) {
      tsend *x = c->head;
      c->head = x->next;
      c->n_queued--;
      fail(&a, x, tf__tstream_code(rv), "tensor stream to %s: key '%s': "
           "cannot connect: %s", c->url, x->key,
           rv == NNG_ETIMEDOUT ? "no connection within dial_timeout_ms"
                               : nng_strerror(rv));
    }
    if (c->head == NULL) {
      c->tail = NULL;
    }
  }
  pthread_mutex_unlock(&c->mu);
  run_after(&a);
}

/* The message for a frame whose write failed with rv. */
static void fail_write(tconn *k, tsend *x, int rv, after *a) {
  tf_tstream_client *c = k->c;
  if (k->state == C_CLOSING && k->why != NULL) {
    fail(a, x, TF_UNAVAILABLE, "tensor stream to %s: key '%s': %s while "
         "the frame was being written", c->url, x->key, k->why);
  } else if (rv == NNG_ETIMEDOUT) {
    fail(a, x, TF_DEADLINE_EXCEEDED, "tensor stream to %s: key '%s': no "
         "write progress for %lld ms", c->url, x->key,
         (long long)c->o.io_timeout_ms);
  } else if (c->tls && tf__tls_handshake_error(rv)) {
    char text[256];
    tf__tls_handshake_text(rv, text, sizeof text);
    fail(a, x, TF_UNAVAILABLE, "tensor stream to %s: key '%s': %s", c->url,
         x->key, text);
  } else {
    fail(a, x, tf__tstream_code(rv), "tensor stream to %s: key '%s': %s",
         c->url, x->key, nng_strerror(rv));
  }
  conn_close(k, NULL);
}

static void send_cb(void *arg) {
  tconn *k = arg;
  tf_tstream_client *c = k->c;
  after a = {0};
  int rv = nng_aio_result(k->send_aio);
  size_t n = nng_aio_count(k->send_aio);
  pthread_mutex_lock(&c->mu);
  k->send_pending = false;
  tsend *x = k->cur;
  bool all = rv == 0 && advance(x, n);
  if (rv == 0 && !all && k->state == C_BUSY) {
    start_send(k); /* the kernel took part of it: write the rest */
    pthread_mutex_unlock(&c->mu);
    return;
  }
  k->cur = NULL;
  if (all) {
    tf__peer_sent(c->peer, x->bytes);
    finish(&a, x); /* every byte is the kernel's now */
    if (k->state == C_BUSY) {
      k->state = C_READY;
      k->last_used_ns = tf__now_ns();
    }
  } else {
    fail_write(k, x, rv == 0 ? NNG_ECLOSED : rv, &a);
  }
  conn_settle(k, &a);
  kick(c);
  pthread_mutex_unlock(&c->mu);
  run_after(&a);
}

static void watch_cb(void *arg) {
  tconn *k = arg;
  tf_tstream_client *c = k->c;
  after a = {0};
  int rv = nng_aio_result(k->watch_aio);
  pthread_mutex_lock(&c->mu);
  k->watch_pending = false;
  bool live = k->state == C_READY || k->state == C_BUSY;
  if (live && !c->closing && rv == NNG_ETIMEDOUT) {
    int64_t idle_ms = (tf__now_ns() - k->last_used_ns) / 1000000;
    if (k->state == C_READY && idle_ms >= c->o.idle_ms) {
      conn_close(k, "the connection was idle"); /* unused: close it */
    } else {
      start_watch(k, k->state == C_BUSY ? c->o.idle_ms : c->o.idle_ms - idle_ms);
    }
  } else if (live) {
    conn_close(k, rv == 0 ? "the server sent bytes (it never should)"
                  : c->tls && tf__tls_handshake_error(rv)
                      ? "TLS handshake failed (certificate not trusted, expired, "
                        "or name mismatch)"
                      : "the server closed the connection");
  }
  conn_settle(k, &a);
  kick(c);
  pthread_mutex_unlock(&c->mu);
  run_after(&a);
}

/* ---- API ---------------------------------------------------------------- */

static tf_code check_opts(const char *url, const tf_tstream_client_opts *o,
                          tf_status *st) {
  const char *bad = NULL;
  if (o->max_connections <= 0) {
    bad = "max_connections must be > 0";
  } else if (o->max_queued <= 0) {
    bad = "max_queued must be > 0";
  } else if (o->dial_timeout_ms <= 0) {
    bad = "dial_timeout_ms must be > 0";
  } else if (o->io_timeout_ms <= 0) {
    bad = "io_timeout_ms must be > 0";
  } else if (o->idle_ms <= 0) {
    bad = "idle_ms must be > 0";
  }
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor stream client for %s: %s", url ? url : "(no url)",
                         bad);
  }
  return tf__tstream_check_url(url, "dial", st);
}

static void client_destroy(tf_tstream_client *c) {
  for (int i = 0; c->conns != NULL && i < c->o.max_connections; i++) {
    tconn *k = &c->conns[i];
    if (k->s != NULL) {
      nng_stream_free(k->s);
    }
    nng_aio_free(k->dial_aio);
    nng_aio_free(k->send_aio);
    nng_aio_free(k->watch_aio);
  }
  if (c->d != NULL) {
    nng_stream_dialer_free(c->d);
  }
  free(c->conns);
  pthread_mutex_destroy(&c->mu);
  free(c->url);
  free(c);
}

/* tls+tcp: the dialer checks the server against the CA and the URL's host
 * name and presents our certificate. */
static tf_code tls_setup(tf_tstream_client *c, const tf_tstream_client_opts *o,
                         tf_status *st) {
  tf_tls_config *tc = NULL;
  nng_tls_config *cfg = NULL;
  TF_TRY(tf__tls_check_dial_url(c->url, st));
  tf_code code = tf__tls_resolve(o->tls, "dial", c->url, &tc, st);
  if (code == TF_OK) {
    code = tf__tls_client_nng(tc, c->url, &cfg, st);
  }
  tf_tls_config_free(tc);
  if (code != TF_OK) {
    return code;
  }
  int rv = nng_stream_dialer_set_ptr(c->d, NNG_OPT_TLS_CONFIG, cfg);
  nng_tls_config_free(cfg); /* the dialer holds its own reference */
  if (rv != 0) {
    return tf_status_set(st, TF_INTERNAL, "cannot set the TLS configuration of "
                         "the tensor stream to %s: %s", c->url, nng_strerror(rv));
  }
  return TF_OK;
}

tf_code tf_tstream_client_new(const char *url, const tf_tstream_client_opts *o,
                              tf_tstream_client **out, tf_status *st) {
  *out = NULL;
  tf_tstream_client_opts def = tf_tstream_client_opts_default();
  o = o != NULL ? o : &def;
  TF_TRY(check_opts(url, o, st));
  tf_tstream_client *c = tf__xcalloc(1, sizeof *c);
  c->url = tf__xstrdup(url);
  c->auth = tf_auth_process();
  c->o = *o;
  c->o.tls = NULL; /* borrowed for the call only */
  pthread_mutex_init(&c->mu, NULL);
  int rv = nng_stream_dialer_alloc(&c->d, url);
  if (rv == 0 && tf_tls_url(url)) {
    c->tls = true;
    tf_code code = tls_setup(c, o, st);
    if (code != TF_OK) {
      client_destroy(c);
      return code;
    }
  }
  if (rv == 0) {
    nng_stream_dialer_set_bool(c->d, NNG_OPT_TCP_NODELAY, true);
    c->conns = tf__xcalloc((size_t)o->max_connections, sizeof *c->conns);
  }
  for (int i = 0; rv == 0 && i < o->max_connections; i++) {
    tconn *k = &c->conns[i];
    k->c = c;
    rv = nng_aio_alloc(&k->dial_aio, dial_cb, k);
    rv = rv != 0 ? rv : nng_aio_alloc(&k->send_aio, send_cb, k);
    rv = rv != 0 ? rv : nng_aio_alloc(&k->watch_aio, watch_cb, k);
  }
  if (rv != 0) {
    client_destroy(c);
    return tf_status_set(st, rv == NNG_ENOMEM ? TF_RESOURCE_EXHAUSTED
                                              : TF_INVALID_ARGUMENT,
                         "cannot dial %s: %s", url, nng_strerror(rv));
  }
  *out = c;
  return TF_OK;
}

const char *tf_tstream_client_url(const tf_tstream_client *c) { return c->url; }

void tf_tstream_client_free(tf_tstream_client *c) {
  if (c == NULL) {
    return;
  }
  after a = {0};
  pthread_mutex_lock(&c->mu);
  c->closing = true;
  while (c->head != NULL) {
    tsend *x = c->head;
    c->head = x->next;
    fail(&a, x, TF_CANCELLED, "tensor stream to %s: key '%s': the client "
         "was freed with the frame queued", c->url, x->key);
  }
  c->tail = NULL;
  c->n_queued = 0;
  for (int i = 0; i < c->o.max_connections; i++) {
    conn_close(&c->conns[i], "the client was freed");
  }
  pthread_mutex_unlock(&c->mu);
  run_after(&a);
  nng_stream_dialer_close(c->d);
  /* Waits for every callback; having seen closing, none starts another
   * operation, and each frees what it finished. */
  for (int i = 0; i < c->o.max_connections; i++) {
    nng_aio_stop(c->conns[i].dial_aio);
    nng_aio_stop(c->conns[i].send_aio);
    nng_aio_stop(c->conns[i].watch_aio);
  }
  client_destroy(c);
}

void tf_tstream_send(tf_tstream_client *c, const tf_tstream_hdr *h,
                     tf_tensor *t, tf_tstream_done done, void *arg) {
  tsend *x = tf__xcalloc(1, sizeof *x);
  x->done = done;
  x->arg = arg;
  snprintf(x->key, sizeof x->key, "%s", h->key != NULL ? h->key : "");
  tf_status_init(&x->st);
  after a = {0};
  size_t hl = 0;
  if (tf__tstream_header_pack(h, t, &x->hdr, &hl, &x->st) != TF_OK) {
    tf_status_prefix(&x->st, "tensor stream to %s", c->url);
    finish(&a, x);
    run_after(&a);
    return;
  }
  x->t = tf_tensor_ref(t);
  tf__tstream_prefix_write(x->prefix, (uint32_t)hl, t != NULL ? t->nbytes : 0);
  x->iov[0] = (nng_iov){x->prefix, sizeof x->prefix};
  x->iov[1] = (nng_iov){x->hdr, hl};
  x->niov = 2;
  if (t != NULL && t->nbytes > 0) {
    x->iov[x->niov++] = (nng_iov){t->data, t->nbytes};
  }
  x->bytes = sizeof x->prefix + hl + (t != NULL ? t->nbytes : 0);
  pthread_mutex_lock(&c->mu);
  if (c->peer == NULL) {
    c->peer = tf__peer_metrics_of(h->to != NULL ? h->to : c->url);
  }
  if (c->closing) {
    fail(&a, x, TF_UNAVAILABLE, "tensor stream to %s: key '%s': the client "
         "is being freed", c->url, x->key);
  } else if (c->n_queued >= c->o.max_queued) {
    fail(&a, x, TF_RESOURCE_EXHAUSTED, "tensor stream to %s: key '%s': %d "
         "frames already queued (max_queued)", c->url, x->key, c->n_queued);
  } else {
    if (c->tail != NULL) {
      c->tail->next = x;
    } else {
      c->head = x;
    }
    c->tail = x;
    c->n_queued++;
    kick(c);
  }
  pthread_mutex_unlock(&c->mu);
  run_after(&a);
}
