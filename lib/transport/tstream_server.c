/* tstream_server.c: the tensor stream's server. An NNG stream listener
 * accepts connections (up to max_connections; more are closed at once)
 * and each connection gets a thread of its own that reads frames one
 * after another: the 16-byte prefix (waiting up to idle_ms for it to
 * begin), the header (<= 64 KiB), and the payload into a tensor allocated
 * for it, then calls deliver on that thread. Reads of less than
 * READ_BUF_BYTES go through a per-connection buffer, filled with whatever
 * the socket holds, so a small frame (a loop's predicate) costs one
 * wake-up of this thread instead of three; larger payloads are read
 * straight into their tensor. Nothing is
 * allocated for a frame until its prefix and header have been checked
 * (tstream_frame.c). A bad frame, a frame for another task, a peer that
 * vanishes or stalls inside a frame close that connection, and each is
 * counted. Stop closes every stream and waits for the connection count
 * to reach zero. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "lib/core/base/util.h"
#include "lib/transport/tensor_stream.h"
#include "lib/transport/peer_metrics.h"
#include "lib/transport/auth.h"
#include "lib/transport/tstream_frame.h"
#include "lib/transport/tls.h"
#include "lib/transport/tstream_util.h"

#define ACCEPT_BACKOFF_MS 100 /* after an accept error (EMFILE ...) */
#define MAX_LOGGED 64         /* (kind, peer) pairs logged once each */
#define READ_BUF_BYTES 16384  /* a connection's read-ahead buffer */

typedef struct sconn {
  tf_tstream_server *s;
  nng_stream *stream;
  nng_aio *aio;
  struct sconn *prev, *next; /* s->conns, under s->mu */
  bool closed;               /* stop closed the stream (under s->mu) */
  char peer[80];             /* "host:port" */
  char host[64];
  uint8_t *hbuf;             /* header bytes, capacity hcap */
  uint8_t *rbuf;             /* read ahead: [rpos, rlen) not yet consumed */
  size_t rpos, rlen;
  size_t hcap;
  const tf__peer_metrics *pm; /* the series of pm_from, the last sender */
  char pm_from[128];
  bool spoke;                /* a read succeeded (TLS: the handshake did) */
} sconn;

struct tf_tstream_server {
  tf_tstream_server_opts o; /* url and self_task point at the copies */
  char *url_copy, *self_task;
  char url[160];
  int port;
  tf_tstream_deliver deliver;
  void *arg;
  nng_stream_listener *l;
  nng_aio *accept_aio;
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* broadcast when n_conns drops */
  bool stopping;
  bool accept_sleeping;    /* accept_aio is backing off, not accepting */
  sconn *conns;
  int n_conns;             /* connection threads alive */
  char *logged[MAX_LOGGED];
  int n_logged;
  bool tls;                /* a tls+tcp URL */
  _Atomic uint64_t accepted, refused_connections, frames, payload_bytes,
      deliver_errors, bad_frames, wrong_task, no_memory, broken, idle_closed,
      auth_refused;
  tf_auth *auth;           /* NULL: no hello expected */
};

tf_tstream_server_opts tf_tstream_server_opts_default(void) {
  return (tf_tstream_server_opts){.max_tensor_bytes = 256ull << 20,
                                  .max_connections = 256,
                                  .idle_ms = 300000,
                                  .io_timeout_ms = 30000};
}

/* ---- logging ------------------------------------------------------------ */

/* Logs the line once per (kind, host, who): a peer that keeps failing the
 * same way is not logged again. */
static void log_once(tf_tstream_server *s, const char *kind, const char *host,
                     const char *who, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void log_once(tf_tstream_server *s, const char *kind, const char *host,
                     const char *who, const char *fmt, ...) {
  if (s->o.log == NULL) {
    return;
  }
  char *id = tf__xasprintf("%s|%s|%s", kind, host, who);
  bool fresh = true;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->n_logged && fresh; i++) {
    fresh = strcmp(s->logged[i], id) != 0;
  }
  if (fresh && s->n_logged < MAX_LOGGED) {
    s->logged[s->n_logged++] = id;
    id = NULL;
  } else {
    fresh = false; /* seen, or the table is full: counted only */
  }
  pthread_mutex_unlock(&s->mu);
  free(id);
  if (fresh) {
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->o.log(s->o.log_arg, line);
  }
}

/* ---- one connection ----------------------------------------------------- */

typedef enum outcome {
  OUT_FRAME,      /* a frame was read */
  OUT_EOF,        /* the peer closed between frames */
  OUT_TLS,        /* the TLS handshake failed */
  OUT_IDLE,       /* no frame began within idle_ms */
  OUT_BROKEN,     /* the peer vanished or stalled inside a frame */
  OUT_BAD,        /* failed validation */
  OUT_WRONG_TASK, /* addressed to another task */
  OUT_NO_MEMORY,  /* the tensor could not be allocated */
} outcome;

/* Starts a read unless stop has closed the stream. NNG 1.5.2 leaves a
 * read started after nng_stream_close pending until its timeout (the
 * closed stream is off the poller), so the check and the start happen
 * under the lock stop closes the stream under. The aio has no callback:
 * nothing of ours runs inside NNG with the lock held. */
static bool start_read(sconn *c) {
  pthread_mutex_lock(&c->s->mu);
  bool open = !c->closed;
  if (open) {
    nng_stream_recv(c->stream, c->aio);
  }
  pthread_mutex_unlock(&c->s->mu);
  return open;
}

/* Moves up to len - *got buffered bytes to buf + *got. */
static void take_buffered(sconn *c, void *buf, size_t len, size_t *got) {
  size_t n = TF_MIN(c->rlen - c->rpos, len - *got);
  memcpy((char *)buf + *got, c->rbuf + c->rpos, n);
  c->rpos += n;
  *got += n;
}

/* Reads exactly len bytes: first what the read-ahead buffer holds, then
 * from the stream (into the buffer, which is empty by then, when fewer
 * than READ_BUF_BYTES are missing). The first read waits up to first_ms,
 * later ones (progress) up to rest_ms. Returns NNG's code; *got the bytes
 * read. */
static int read_full(sconn *c, void *buf, size_t len, int64_t first_ms,
                     int64_t rest_ms, size_t *got) {
  *got = 0;
  take_buffered(c, buf, len, got);
  while (*got < len) {
    bool ahead = len - *got < READ_BUF_BYTES;
    nng_iov iov = ahead ? (nng_iov){c->rbuf, READ_BUF_BYTES}
                        : (nng_iov){(char *)buf + *got, len - *got};
    nng_aio_set_iov(c->aio, 1, &iov);
    nng_aio_set_timeout(c->aio, tf__tstream_ms(*got == 0 ? first_ms : rest_ms));
    if (!start_read(c)) {
      return NNG_ECLOSED;
    }
    nng_aio_wait(c->aio);
    int rv = nng_aio_result(c->aio);
    if (rv != 0) {
      return rv;
    }
    size_t n = nng_aio_count(c->aio);
    if (n == 0) {
      return NNG_ECLOSED;
    }
    c->spoke = true;
    if (ahead) {
      c->rpos = 0;
      c->rlen = n;
      take_buffered(c, buf, len, got);
    } else {
      *got += n;
    }
  }
  return 0;
}

/* Reads the prefix and header into d. */
static outcome read_header(sconn *c, tf__tstream_prefix *p,
                           tf__tstream_decoded *d, tf_status *st) {
  tf_tstream_server *s = c->s;
  uint8_t pre[TF__TSTREAM_PREFIX_BYTES];
  size_t got = 0;
  int rv = read_full(c, pre, sizeof pre, s->o.idle_ms, s->o.io_timeout_ms, &got);
  if (rv != 0) {
    if (got == 0 && s->tls && !c->spoke &&
        (rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH)) {
      tf_status_set(st, TF_UNAVAILABLE, "%s", nng_strerror(rv));
      return OUT_TLS;
    }
    if (got == 0) {
      return rv == NNG_ETIMEDOUT ? OUT_IDLE : OUT_EOF;
    }
    tf_status_set(st, TF_UNAVAILABLE, "prefix cut short after %zu bytes: %s",
                  got, nng_strerror(rv));
    return OUT_BROKEN;
  }
  if (tf__tstream_prefix_read(pre, s->o.max_tensor_bytes, p, st) != TF_OK) {
    return OUT_BAD;
  }
  if (c->hcap < p->header_len) {
    free(c->hbuf);
    c->hbuf = tf__xmalloc(p->header_len);
    c->hcap = p->header_len;
  }
  rv = read_full(c, c->hbuf, p->header_len, s->o.io_timeout_ms,
                 s->o.io_timeout_ms, &got);
  if (rv != 0) {
    tf_status_set(st, TF_UNAVAILABLE, "header cut short after %zu of %u "
                  "bytes: %s", got, p->header_len, nng_strerror(rv));
    return OUT_BROKEN;
  }
  if (tf__tstream_header_decode(c->hbuf, p->header_len, p->payload_len, d,
                                st) != TF_OK) {
    return OUT_BAD;
  }
  return OUT_FRAME;
}

/* Frames for another task (or another incarnation of this one). */
static outcome check_identity(sconn *c, const tf_tstream_hdr *h,
                              tf_status *st) {
  tf_tstream_server *s = c->s;
  if (strcmp(h->to, s->self_task) != 0 ||
      (h->to_inc != 0 && h->to_inc != s->o.self_incarnation)) {
    tf_status_set(st, TF_FAILED_PRECONDITION,
                  "wrong task at address: %s is %s (incarnation 0x%llx), the "
                  "frame from %s was for %s (incarnation 0x%llx)",
                  s->url, s->self_task,
                  (unsigned long long)s->o.self_incarnation,
                  h->from[0] ? h->from : "a client", h->to,
                  (unsigned long long)h->to_inc);
    return OUT_WRONG_TASK;
  }
  return OUT_FRAME;
}

/* Reads the payload into a new tensor (*t; NULL for a dead value). */
static outcome read_payload(sconn *c, const tf_tstream_hdr *h, tf_tensor **t,
                            tf_status *st) {
  *t = NULL;
  if (h->is_dead) {
    return OUT_FRAME;
  }
  if (tf_tensor_new(h->dtype, &h->shape, t, st) != TF_OK) {
    return OUT_NO_MEMORY;
  }
  size_t got = 0;
  int rv = read_full(c, (*t)->data, (*t)->nbytes, c->s->o.io_timeout_ms,
                     c->s->o.io_timeout_ms, &got);
  if (rv != 0) {
    tf_status_set(st, TF_UNAVAILABLE, "key '%.200s': payload cut short "
                  "after %zu of %zu bytes: %s", h->key, got, (*t)->nbytes,
                  nng_strerror(rv));
    tf_tensor_unref(*t);
    *t = NULL;
    return OUT_BROKEN;
  }
  if (h->dtype == TF_BOOL) {
    const uint8_t *b = (*t)->data;
    for (size_t i = 0; i < (*t)->nbytes; i++) {
      if (b[i] > 1) {
        tf_status_set(st, TF_INVALID_ARGUMENT, "key '%.200s': bool element "
                      "%zu is byte %u (want 0 or 1)", h->key, i, b[i]);
        tf_tensor_unref(*t);
        *t = NULL;
        return OUT_BAD;
      }
    }
  }
  return OUT_FRAME;
}

/* A failed TLS handshake: counted, logged at most every 10 s per host. */
static void note_tls(sconn *c, const tf_status *st) {
  tf_tstream_server *s = c->s;
  if (tf__tls_count_failures(s->url, c->host, 1) && s->o.log != NULL) {
    char line[1024];
    snprintf(line, sizeof line, "tensor stream %s: TLS handshake with %s "
             "failed (no certificate signed by the cluster CA, or it does "
             "not trust ours): %.200s (logged at most every 10 s per host)",
             s->url, c->peer, st->msg);
    s->o.log(s->o.log_arg, line);
  }
}

/* Counts (and logs) why a connection ends. */
static void note_end(sconn *c, outcome o, const tf_tstream_hdr *h,
                     const tf_status *st) {
  tf_tstream_server *s = c->s;
  pthread_mutex_lock(&s->mu);
  bool stopping = s->stopping;
  pthread_mutex_unlock(&s->mu);
  if (stopping) {
    return; /* stop closed the connection: not the peer's doing */
  }
  switch (o) {
    case OUT_IDLE: atomic_fetch_add(&s->idle_closed, 1); break;
    case OUT_TLS: note_tls(c, st); break;
    case OUT_BROKEN:
      atomic_fetch_add(&s->broken, 1);
      log_once(s, "broken", c->host, "", "tensor stream %s: connection from "
               "%s dropped: %s", s->url, c->peer, st->msg);
      break;
    case OUT_BAD:
      atomic_fetch_add(&s->bad_frames, 1);
      log_once(s, "bad", c->host, "", "tensor stream %s: bad frame from %s "
               "(connection closed): %s", s->url, c->peer, st->msg);
      break;
    case OUT_WRONG_TASK:
      atomic_fetch_add(&s->wrong_task, 1);
      log_once(s, "wrong_task", c->host, h->from, "tensor stream: frame "
               "refused (connection from %s closed): %s", c->peer, st->msg);
      break;
    case OUT_NO_MEMORY:
      atomic_fetch_add(&s->no_memory, 1);
      log_once(s, "no_memory", c->host, "", "tensor stream %s: connection "
               "from %s closed: %s", s->url, c->peer, st->msg);
      break;
    default: break;
  }
}

/* Counts a frame of n bytes from task from (its host when unnamed); the
 * series are looked up again only when the sender changes. */
static void count_frame(sconn *c, const char *from, size_t n) {
  const char *who = from != NULL && from[0] != '\0' ? from : c->host;
  if (c->pm == NULL || strcmp(c->pm_from, who) != 0) {
    c->pm = tf__peer_metrics_of(who);
    snprintf(c->pm_from, sizeof c->pm_from, "%s", who);
  }
  tf__peer_received(c->pm, n);
}

/* Reads and checks the connection's hello; false: refused (counted,
 * logged once per peer and reason). */
static bool hello_ok(sconn *c) {
  tf_tstream_server *s = c->s;
  uint8_t hello[TF_AUTH_HELLO_BYTES];
  size_t got = 0;
  tf_status st;
  tf_status_init(&st);
  bool role = false;
  tf_auth_failure why = TF_AUTH_MALFORMED;
  int rv = read_full(c, hello, sizeof hello, s->o.io_timeout_ms, s->o.io_timeout_ms, &got);
  if (rv != 0) {
    tf_status_set(&st, TF_UNAUTHENTICATED, "no hello within io_timeout_ms (%zu of %d bytes: "
                  "%s)", got, TF_AUTH_HELLO_BYTES, nng_strerror(rv));
  } else {
    why = tf_auth_hello_verify(s->auth, hello, &role, &st);
  }
  if (why == TF_AUTH_OK && !role) {
    return true;
  }
  atomic_fetch_add(&s->auth_refused, 1);
  const char *reason = role ? "role" : tf_auth_failure_label(why);
  tf_auth_count_refusal(reason);
  log_once(s, reason, c->host, "", "tensor stream %s: refused a connection from %s: %s",
           s->url, c->peer, st.msg);
  return false;
}

/* Reads and delivers frames until the connection ends. */
static void serve(sconn *c) {
  tf_tstream_server *s = c->s;
  if (s->auth != NULL && !hello_ok(c)) {
    return;
  }
  for (;;) {
    tf_status st;
    tf_status_init(&st);
    tf__tstream_prefix p;
    tf__tstream_decoded d;
    memset(&d, 0, sizeof d);
    tf_tensor *t = NULL;
    outcome o = read_header(c, &p, &d, &st);
    if (o == OUT_FRAME) {
      o = check_identity(c, &d.h, &st);
    }
    if (o == OUT_FRAME) {
      o = read_payload(c, &d.h, &t, &st);
    }
    if (o != OUT_FRAME) {
      note_end(c, o, &d.h, &st);
      tf__tstream_decoded_fini(&d);
      return;
    }
    if (s->deliver(s->arg, &d.h, t, &st) != TF_OK) {
      atomic_fetch_add(&s->deliver_errors, 1);
    } else {
      atomic_fetch_add(&s->frames, 1);
      atomic_fetch_add(&s->payload_bytes, p.payload_len);
    }
    count_frame(c, d.h.from, TF__TSTREAM_PREFIX_BYTES + p.header_len + p.payload_len);
    tf_tensor_unref(t);
    tf__tstream_decoded_fini(&d);
  }
}

/* Under s->mu: takes c off the list stop walks. */
static void unlink_conn(tf_tstream_server *s, sconn *c) {
  if (c->prev != NULL) {
    c->prev->next = c->next;
  } else {
    s->conns = c->next;
  }
  if (c->next != NULL) {
    c->next->prev = c->prev;
  }
}

static void *conn_main(void *arg) {
  sconn *c = arg;
  tf_tstream_server *s = c->s;
  pthread_setname_np(pthread_self(), "tstream:conn"); /* else NNG's name */
  tf__tstream_peer(c->stream, c->peer, sizeof c->peer, c->host, sizeof c->host);
  c->rbuf = tf__xmalloc(READ_BUF_BYTES);
  serve(c);
  pthread_mutex_lock(&s->mu);
  unlink_conn(s, c);
  pthread_mutex_unlock(&s->mu);
  /* Off the list: stop no longer touches the stream, so it is ours. */
  nng_stream_free(c->stream);
  nng_aio_free(c->aio);
  free(c->hbuf);
  free(c->rbuf);
  free(c);
  pthread_mutex_lock(&s->mu);
  s->n_conns--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- accepting ---------------------------------------------------------- */

/* Under s->mu: accept the next connection unless stopping. */
static void accept_next(tf_tstream_server *s) {
  if (!s->stopping) {
    nng_stream_listener_accept(s->l, s->accept_aio);
  }
}

/* Takes stream: a thread for it, or closed when at the cap. */
static void admit(tf_tstream_server *s, nng_stream *stream) {
  pthread_mutex_lock(&s->mu);
  if (s->stopping || s->n_conns >= s->o.max_connections) {
    if (!s->stopping) {
      atomic_fetch_add(&s->refused_connections, 1);
    }
    pthread_mutex_unlock(&s->mu);
    nng_stream_free(stream);
    return;
  }
  sconn *c = tf__xcalloc(1, sizeof *c);
  c->s = s;
  c->stream = stream;
  if (nng_aio_alloc(&c->aio, NULL, NULL) != 0) {
    pthread_mutex_unlock(&s->mu);
    nng_stream_free(stream);
    free(c);
    return;
  }
  c->next = s->conns;
  if (s->conns != NULL) {
    s->conns->prev = c;
  }
  s->conns = c;
  s->n_conns++;
  atomic_fetch_add(&s->accepted, 1);
  pthread_mutex_unlock(&s->mu);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &a, conn_main, c);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    /* No thread: undo as the thread's own exit would. */
    atomic_fetch_add(&s->refused_connections, 1);
    pthread_mutex_lock(&s->mu);
    unlink_conn(s, c);
    s->n_conns--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    nng_stream_free(stream);
    nng_aio_free(c->aio);
    free(c);
  }
}

static void accept_cb(void *arg) {
  tf_tstream_server *s = arg;
  pthread_mutex_lock(&s->mu);
  if (s->accept_sleeping) { /* the backoff ended (or was cancelled) */
    s->accept_sleeping = false;
    accept_next(s);
    pthread_mutex_unlock(&s->mu);
    return;
  }
  int rv = nng_aio_result(s->accept_aio);
  if (rv != 0) {
    if (!s->stopping && rv != NNG_ECLOSED) {
      s->accept_sleeping = true; /* EMFILE and friends: do not spin */
      nng_sleep_aio(ACCEPT_BACKOFF_MS, s->accept_aio);
    }
    pthread_mutex_unlock(&s->mu);
    return;
  }
  pthread_mutex_unlock(&s->mu);
  admit(s, nng_aio_get_output(s->accept_aio, 0));
  pthread_mutex_lock(&s->mu);
  accept_next(s);
  pthread_mutex_unlock(&s->mu);
}

/* ---- lifecycle ---------------------------------------------------------- */

static tf_code check_opts(const tf_tstream_server_opts *o, tf_status *st) {
  const char *bad = NULL;
  if (o->max_tensor_bytes == 0) {
    bad = "max_tensor_bytes must be > 0";
  } else if (o->max_connections <= 0) {
    bad = "max_connections must be > 0";
  } else if (o->idle_ms <= 0) {
    bad = "idle_ms must be > 0";
  } else if (o->io_timeout_ms <= 0) {
    bad = "io_timeout_ms must be > 0";
  } else if (o->self_task == NULL || o->self_task[0] == '\0') {
    bad = "self_task must name this task";
  }
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor stream server on %s: %s",
                         o->url ? o->url : "(no url)", bad);
  }
  return tf__tstream_check_url(o->url, "listen on", st);
}

/* tls+tcp: the listener requires a client certificate the CA signed. */
static tf_code tls_setup(tf_tstream_server *s, tf_status *st) {
  tf_tls_config *tc = NULL;
  nng_tls_config *cfg = NULL;
  tf_code code = tf__tls_resolve(s->o.tls, "listen on", s->url_copy, &tc, st);
  if (code == TF_OK) {
    code = tf__tls_server_nng(tc, s->url_copy, &cfg, st);
  }
  tf_tls_config_free(tc);
  if (code != TF_OK) {
    return code;
  }
  int rv = nng_stream_listener_set_ptr(s->l, NNG_OPT_TLS_CONFIG, cfg);
  nng_tls_config_free(cfg); /* the listener holds its own reference */
  if (rv != 0) {
    return tf_status_set(st, TF_INTERNAL, "cannot set the TLS configuration of "
                         "%s: %s", s->url_copy, nng_strerror(rv));
  }
  return TF_OK;
}

/* Allocates the listener and listens; fills s->url and s->port. */
static tf_code listen_on(tf_tstream_server *s, tf_status *st) {
  const char *url = s->url_copy;
  int rv = nng_stream_listener_alloc(&s->l, url);
  if (rv == 0 && s->tls) {
    TF_TRY(tls_setup(s, st));
  }
  if (rv == 0) {
    rv = nng_stream_listener_listen(s->l);
  }
  if (rv == 0) {
    rv = nng_stream_listener_get_int(s->l, NNG_OPT_TCP_BOUND_PORT, &s->port);
  }
  if (rv != 0) {
    return tf_status_set(st, rv == NNG_EADDRINVAL ? TF_INVALID_ARGUMENT
                                                  : TF_UNAVAILABLE,
                         "cannot listen on %s: %s", url, nng_strerror(rv));
  }
  tf__tstream_url_with_port(url, s->port, s->url, sizeof s->url);
  return TF_OK;
}

static void server_free(tf_tstream_server *s) {
  if (s->l != NULL) {
    nng_stream_listener_free(s->l);
  }
  nng_aio_free(s->accept_aio);
  for (int i = 0; i < s->n_logged; i++) {
    free(s->logged[i]);
  }
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s->url_copy);
  free(s->self_task);
  free(s);
}

tf_code tf_tstream_server_start(const tf_tstream_server_opts *o,
                                tf_tstream_deliver deliver, void *arg,
                                tf_tstream_server **out, tf_status *st) {
  *out = NULL;
  TF_ASSERT(deliver != NULL);
  TF_TRY(check_opts(o, st));
  tf_tstream_server *s = tf__xcalloc(1, sizeof *s);
  s->o = *o;
  s->url_copy = tf__xstrdup(o->url);
  s->self_task = tf__xstrdup(o->self_task);
  s->o.url = s->url_copy;
  s->o.self_task = s->self_task;
  s->deliver = deliver;
  s->arg = arg;
  s->auth = o->auth != NULL ? o->auth : tf_auth_process();
  s->tls = tf_tls_url(o->url);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  tf_code c = listen_on(s, st);
  s->o.tls = NULL; /* borrowed for the start only */
  if (c == TF_OK && s->tls) {
    tf__tls_failures(s->url); /* the failure series exists (at 0) from the start */
  }
  if (c == TF_OK && nng_aio_alloc(&s->accept_aio, accept_cb, s) != 0) {
    c = tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                      "tensor stream server on %s: out of memory", s->url);
  }
  if (c != TF_OK) {
    server_free(s);
    return c;
  }
  pthread_mutex_lock(&s->mu);
  accept_next(s);
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return TF_OK;
}

const char *tf_tstream_server_url(const tf_tstream_server *s) { return s->url; }

int tf_tstream_server_port(const tf_tstream_server *s) { return s->port; }

void tf_tstream_server_stop(tf_tstream_server *s) {
  if (s == NULL) {
    return;
  }
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_mutex_unlock(&s->mu);
  nng_stream_listener_close(s->l);
  nng_aio_stop(s->accept_aio); /* its callback has returned: no new conns */
  pthread_mutex_lock(&s->mu);
  for (sconn *c = s->conns; c != NULL; c = c->next) {
    c->closed = true; /* its thread starts no other read */
    nng_stream_close(c->stream); /* and the one it is in fails */
  }
  /* Bounded: every read now fails at once; only a deliver that blocks
   * keeps a thread, and deliver must return. */
  while (s->n_conns > 0) {
    pthread_cond_wait(&s->cv, &s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  server_free(s);
}

tf_tstream_server_stats tf_tstream_server_stats_get(tf_tstream_server *s) {
  tf_tstream_server_stats r = {
      .accepted = atomic_load(&s->accepted),
      .refused_connections = atomic_load(&s->refused_connections),
      .frames = atomic_load(&s->frames),
      .payload_bytes = atomic_load(&s->payload_bytes),
      .deliver_errors = atomic_load(&s->deliver_errors),
      .bad_frames = atomic_load(&s->bad_frames),
      .wrong_task = atomic_load(&s->wrong_task),
      .no_memory = atomic_load(&s->no_memory),
      .broken = atomic_load(&s->broken),
      .idle_closed = atomic_load(&s->idle_closed),
      .auth_refused = atomic_load(&s->auth_refused)};
  pthread_mutex_lock(&s->mu);
  r.open_connections = s->n_conns;
  pthread_mutex_unlock(&s->mu);
  return r;
}
