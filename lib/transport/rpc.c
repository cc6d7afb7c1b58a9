/* rpc.c: the RPC server. One rep socket listens on the configured URL with
 * a pool of max_calls rep contexts, each with its own aio receiving
 * through a callback (slot_cb). A received request goes to the handler
 * thread pool (a tf_workq: NNG's callback threads are never blocked),
 * which parses and checks it (malformed, a reply sent as a request, wrong
 * task or incarnation, stopping: an error reply at once), looks its
 * request id up in the retry table (rpc_retry.c) and runs the handler.
 * Whoever finishes the call -- the handler, or later any thread -- starts
 * the send on the slot's aio; when the send completes and the handler has
 * returned, the context receives again. Connections are tracked and capped
 * in rpc_conn.c; an NNG timer sweeps idle ones. Stop waits on counters
 * (slots not parked), never on a sleep, and frees only when no callback
 * can run. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "lib/core/base/util.h"
#include "lib/transport/nng_close.h"
#include "lib/transport/peer_metrics.h"
#include "lib/transport/rpc_server.h"

#define DEFAULT_MAX_MSG_BYTES (256LL << 20)
#define MAX_CALLS_LIMIT 65536
#define BACKOFF_MS 10            /* after a receive that failed */
#define TRANSIT_WAIT_MS 10000    /* stop: operations NNG must end after close */
#define CLOSE_WAIT_MS 3000       /* stop: nng_close itself */

void tf__rpc_log(const tf_rpc_server *s, int prio, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (s->log != NULL) {
    s->log(s->log_arg, prio, buf);
  } else {
    fprintf(stderr, "<%d>%s\n", prio, buf);
  }
}

void tf_rpc_server_options_init(tf_rpc_server_options *o, const char *url) {
  *o = (tf_rpc_server_options){.url = url,
                               .handler_threads = 4,
                               .max_msg_bytes = DEFAULT_MAX_MSG_BYTES,
                               .max_calls = 256,
                               .max_connections = 256,
                               .idle_connection_ms = 300000,
                               .stop_wait_ms = 5000};
}

/* ---- call slots --------------------------------------------------------- */

static void server_free(tf_rpc_server *s);
static void serve_task(tf_task *t);
static void serve_received(tf__rpc_call *c);

/* Under s->mu: the slot stops; true when the server must now be freed. */
static bool park_locked(tf__rpc_call *c) {
  tf_rpc_server *s = c->s;
  atomic_store(&c->state, TF__SLOT_PARKED);
  s->busy--;
  pthread_cond_broadcast(&s->cv);
  return s->owner_gone && s->busy == 0;
}

/* Receives the next request, or parks when stopping. */
static void slot_recv(tf__rpc_call *c) {
  tf_rpc_server *s = c->s;
  bool free_now = false;
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->stopping)) {
    free_now = park_locked(c);
  } else {
    atomic_store(&c->state, TF__SLOT_RECV);
    nng_ctx_recv(c->ctx, c->aio);
  }
  pthread_mutex_unlock(&s->mu);
  if (free_now) {
    server_free(s);
  }
}

/* Drops one of the call's holds; the last one reuses the slot. */
static void call_release(tf__rpc_call *c) {
  if (atomic_fetch_sub(&c->holds, 1) != 1) {
    return;
  }
  tf__conns_call_end(c->s->conns, c->pipe);
  slot_recv(c);
}

/* Starts sending reply m (taken); dropped once the socket is closed. */
static void send_reply(tf__rpc_call *c, nng_msg *m) {
  tf_rpc_server *s = c->s;
  pthread_mutex_lock(&s->mu);
  if (s->closed) {
    pthread_mutex_unlock(&s->mu);
    nng_msg_free(m);
    call_release(c);
    return;
  }
  atomic_store(&c->state, TF__SLOT_SEND);
  nng_aio_set_msg(c->aio, m);
  nng_ctx_send(c->ctx, c->aio);
  pthread_mutex_unlock(&s->mu);
}

/* Finishes the call with m (taken), exactly once. */
static void call_finish(tf__rpc_call *c, nng_msg *m) {
  if (atomic_exchange(&c->replied, true)) {
    TF_PANIC("%s request %llu (step %llu) to %s was finished twice: a "
             "handler must finish its call exactly once",
             tf_method_name(atomic_load(&c->method)),
             (unsigned long long)atomic_load(&c->request_id),
             (unsigned long long)atomic_load(&c->step_id), c->s->url);
  }
  if (c->track) {
    tf__retry_finish(c->s->retry, atomic_load(&c->request_id), m);
  }
  if (c->counted) {
    atomic_fetch_add(&c->s->served, 1);
  }
  if (c->peer != NULL) {
    tf__peer_sent(c->peer, nng_msg_len(m));
  }
  tf_wire_msg_free(c->req);
  c->req = NULL;
  tf__rpc_auth_sign_reply(c, m);
  send_reply(c, m);
}

/* Finishes the call with an error reply carrying st. */
static void call_error(tf__rpc_call *c, const tf_status *st) {
  tf_rpc_server *s = c->s;
  tf_wire_header none = {.to = s->self_task, .to_inc = s->self_inc};
  tf__rpc_count_error("server", atomic_load(&c->method), st->code);
  nng_msg *m = NULL;
  tf_status err;
  if (tf_wire_error_reply(c->req != NULL ? &c->req->h : &none, st, &m,
                          &err) != TF_OK) {
    TF_PANIC("cannot build an error reply: %s", err.msg);
  }
  call_finish(c, m);
}

static void on_recv(tf__rpc_call *c, int rv) {
  tf_rpc_server *s = c->s;
  bool free_now = false, here = false;
  nng_msg *m = rv == 0 ? nng_aio_get_msg(c->aio) : NULL;
  pthread_mutex_lock(&s->mu);
  if (rv != 0 && rv != NNG_ECLOSED && !atomic_load(&s->stopping)) {
    atomic_store(&c->state, TF__SLOT_BACKOFF); /* transient: retry soon */
    nng_sleep_aio(BACKOFF_MS, c->aio);
  } else if (rv != 0 || s->closed) {
    free_now = park_locked(c);
  } else {
    nng_aio_set_msg(c->aio, NULL);
    c->in = m;
    m = NULL;
    c->pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(c->in));
    c->req = NULL;
    c->peer = NULL;
    c->track = c->counted = false;
    atomic_store(&c->method, -1);
    atomic_store(&c->request_id, 0);
    atomic_store(&c->step_id, 0);
    c->start_ns = tf__now_ns();
    atomic_store(&c->replied, false);
    atomic_store(&c->holds, 2); /* the handler's run and the reply's send */
    atomic_store(&c->state, TF__SLOT_SERVE);
    tf__conns_call_begin(s->conns, c->pipe);
    if (s->runs_inline == NULL) {
      tf_task t = {.fn = serve_task, .p = {c}};
      tf_workq_schedule(s->q, &t);
    } else {
      here = true;
    }
  }
  pthread_mutex_unlock(&s->mu);
  nng_msg_free(m); /* received after close */
  if (here) {
    serve_received(c);
  } else if (free_now) {
    server_free(s);
  }
}

static void on_sent(tf__rpc_call *c, int rv) {
  if (rv != 0) {
    nng_msg_free(nng_aio_get_msg(c->aio)); /* a failed send keeps it */
  }
  nng_aio_set_msg(c->aio, NULL);
  call_release(c);
}

/* A waiting retry woke: its original finished, its wait ended, or stop. */
static void on_wait(tf__rpc_call *c) {
  tf_status st;
  tf_status_init(&st);
  nng_msg *m = tf__retry_wake(c->s->retry, c, c->s->url, &st);
  if (m != NULL) {
    call_finish(c, m);
  } else {
    call_error(c, &st);
  }
}

/* The aio whose callback runs on this thread: server_free reaps it rather
 * than freeing it (nng_aio_free waits for the callback to return). */
static _Thread_local nng_aio *running_aio;

static void slot_cb(void *arg) {
  tf__rpc_call *c = arg;
  int rv = nng_aio_result(c->aio);
  running_aio = c->aio;
  switch (atomic_load(&c->state)) {
  case TF__SLOT_RECV:
    on_recv(c, rv);
    break;
  case TF__SLOT_SEND:
    on_sent(c, rv);
    break;
  case TF__SLOT_WAIT:
    on_wait(c);
    break;
  case TF__SLOT_BACKOFF:
    slot_recv(c);
    break;
  default:
    TF_PANIC("rpc server %s: aio completed in slot state %d", c->s->url,
             atomic_load(&c->state));
  }
  running_aio = NULL;
}

/* ---- admission ---------------------------------------------------------- */

/* Refuses a request meant for another task or incarnation. */
static tf_code check_identity(const tf_rpc_server *s, const tf_wire_header *h,
                              tf_status *st) {
  if (s->self_task[0] != '\0' && h->to != NULL && h->to[0] != '\0' &&
      strcmp(h->to, s->self_task) != 0) {
    return tf_status_set(st, TF_FAILED_PRECONDITION,
                         "wrong task at address: %s is %s, the request was "
                         "for %s",
                         s->url, s->self_task, h->to);
  }
  if (s->self_inc != 0 && h->to_inc != 0 && h->to_inc != s->self_inc) {
    return tf_status_set(
        st, TF_ABORTED,
        "the task restarted: %s at %s is incarnation %016llx, the request "
        "was for incarnation %016llx",
        s->self_task[0] != '\0' ? s->self_task : "the server", s->url,
        (unsigned long long)s->self_inc, (unsigned long long)h->to_inc);
  }
  return TF_OK;
}

/* Checks a parsed request; sets st and returns false to refuse it. The
 * request's `to` becomes the server's identity, so replies come from it. */
static bool acceptable(tf_rpc_server *s, tf_wire_header *h, tf_status *st) {
  if (h->is_reply) {
    tf_status_set(st, TF_INVALID_ARGUMENT,
                  "malformed request to %s: a %s reply sent as a request",
                  s->url, tf_method_name(h->method));
  } else {
    check_identity(s, h, st);
  }
  if (s->self_task[0] != '\0') {
    h->to = s->self_task;
  }
  if (s->self_inc != 0) {
    h->to_inc = s->self_inc;
  }
  if (st->code != TF_OK) {
    atomic_fetch_add(&s->rejected, 1);
    return false;
  }
  if (atomic_load(&s->stopping)) {
    tf_status_set(st, TF_UNAVAILABLE, "%s to %s: the server is stopping",
                  tf_method_name(h->method), s->url);
    return false;
  }
  return true;
}

/* The remote host of pipe p ("127.0.0.1", "::1"), or the transport's name
 * ("ipc", "inproc") where there is no host: a peer's name for its metrics
 * when the request names no task (tfctl). The port is left out: a client
 * reconnecting from a new port is the same peer. */
static void pipe_host(nng_pipe p, char *buf, size_t n) {
  nng_sockaddr sa;
  snprintf(buf, n, "unknown");
  if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0) {
    return;
  }
  if (sa.s_family == NNG_AF_INET) {
    inet_ntop(AF_INET, &sa.s_in.sa_addr, buf, (socklen_t)n);
  } else if (sa.s_family == NNG_AF_INET6) {
    inet_ntop(AF_INET6, sa.s_in6.sa_addr, buf, (socklen_t)n);
  } else if (sa.s_family == NNG_AF_IPC) {
    snprintf(buf, n, "ipc");
  } else if (sa.s_family == NNG_AF_INPROC) {
    snprintf(buf, n, "inproc");
  }
}

/* Parses and checks the call's request; true when the handler must run,
 * false when the call was answered or waits for its original. */
static bool admit(tf__rpc_call *c) {
  tf_rpc_server *s = c->s;
  tf_status st;
  tf_status_init(&st);
  nng_msg *in = c->in;
  c->in = NULL;
  size_t in_len = nng_msg_len(in);
  nng_pipe pipe = nng_msg_get_pipe(in);
  char host[64];
  c->auth.key = -1;
  if (s->auth != NULL) {
    pipe_host(pipe, host, sizeof host);
    c->in = in;
    bool ok = tf__rpc_auth_admit(c, host, &st);
    c->in = NULL;
    if (!ok) {
      c->req = NULL;
      c->peer = tf__peer_metrics_of(host);
      tf__peer_received(c->peer, in_len);
      atomic_fetch_add(&s->rejected, 1);
      nng_msg_free(in);
      call_error(c, &st);
      return false;
    }
  }
  if (tf_wire_parse(in, &c->req, &st) != TF_OK) {
    c->req = NULL;
    pipe_host(pipe, host, sizeof host);
    c->peer = tf__peer_metrics_of(host);
    tf__peer_received(c->peer, in_len);
    atomic_fetch_add(&s->rejected, 1);
    tf_status_prefix(&st, "malformed request to %s", s->url);
    call_error(c, &st);
    return false;
  }
  tf_wire_header *h = &c->req->h;
  bool named = h->from != NULL && h->from[0] != '\0';
  if (!named) {
    pipe_host(pipe, host, sizeof host);
  }
  c->peer = tf__peer_metrics_of(named ? h->from : host);
  tf__peer_received(c->peer, in_len);
  atomic_store(&c->method, h->method);
  atomic_store(&c->request_id, h->request_id);
  atomic_store(&c->step_id, h->step_id);
  if (!acceptable(s, h, &st) || tf__rpc_auth_check_role(c, h->method, &st) != TF_OK) {
    call_error(c, &st);
    return false;
  }
  if (h->request_id == 0) {
    return true;
  }
  nng_msg *reply = NULL;
  switch (tf__retry_begin(s->retry, c, h, &reply, &st)) {
  case TF__RETRY_RUN:
    c->track = true;
    return true;
  case TF__RETRY_WAITING:
    return false;
  default:
    if (reply != NULL) {
      call_finish(c, reply);
    } else {
      call_error(c, &st);
    }
    return false;
  }
}

static void serve_task(tf_task *t) {
  tf__rpc_call *c = t->p[0];
  bool admitted = t->i[0] != 0;
  if (admitted || admit(c)) {
    c->counted = true;
    c->s->h(c->s->arg, c);
  }
  call_release(c); /* the handler returned */
}

/* On the NNG thread that received c (the server has runs_inline): admits
 * it, then runs its handler here when its method runs inline, else hands
 * it to a handler thread. */
static void serve_received(tf__rpc_call *c) {
  tf_rpc_server *s = c->s;
  if (!admit(c)) {
    call_release(c);
  } else if (s->runs_inline(s->arg, c->req->h.method)) {
    c->counted = true;
    bool was = tf_thread_set_responsive(true);
    s->h(s->arg, c);
    tf_thread_set_responsive(was);
    call_release(c);
  } else {
    tf_task t = {.fn = serve_task, .p = {c}, .i = {1}};
    tf_workq_schedule(s->q, &t);
  }
}

/* ---- the call API ------------------------------------------------------- */

const tf_wire_msg *tf_rpc_call_request(const tf__rpc_call *c) {
  TF_ASSERT(c->req != NULL); /* NULL: the call was already finished */
  return c->req;
}

uint32_t tf_rpc_call_pipe(const tf__rpc_call *c) { return c->pipe; }

tf_wire_writer *tf_rpc_reply_writer(const tf__rpc_call *c) {
  return tf_wire_reply_writer(tf_rpc_call_request(c));
}

void tf_rpc_reply(tf__rpc_call *c, nng_msg *reply) {
  TF_ASSERT(c != NULL && reply != NULL);
  call_finish(c, reply);
}

void tf_rpc_reply_error(tf__rpc_call *c, const tf_status *st) {
  TF_ASSERT(c != NULL && st != NULL && st->code != TF_OK);
  call_error(c, st);
}

/* ---- start -------------------------------------------------------------- */

static tf_code check_options(const tf_rpc_server_options *o, tf_rpc_handler h,
                             tf_status *st) {
  const char *url = o != NULL && o->url != NULL ? o->url : "(null)";
  const char *bad = NULL;
  long long v = 0;
  if (o == NULL || o->url == NULL || h == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc server for '%s': need a URL and a handler", url);
  } else if (o->handler_threads < 1) {
    bad = "handler_threads must be >= 1", v = o->handler_threads;
  } else if (o->max_msg_bytes <= 0) {
    bad = "max_msg_bytes must be > 0", v = o->max_msg_bytes;
  } else if (o->max_calls < 1 || o->max_calls > MAX_CALLS_LIMIT) {
    bad = "max_calls must be in [1, 65536]", v = o->max_calls;
  } else if (o->max_connections < 1) {
    bad = "max_connections must be >= 1", v = o->max_connections;
  } else if (o->idle_connection_ms < 1) {
    bad = "idle_connection_ms must be >= 1", v = o->idle_connection_ms;
  } else if (o->stop_wait_ms < 0) {
    bad = "stop_wait_ms must be >= 0", v = o->stop_wait_ms;
  }
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc server for '%s': %s (got %lld)", url, bad, v);
  }
  return TF_OK;
}

/* tls+tcp: the listener requires client certificates signed by the CA of
 * o->tls (or the process default) and presents its certificate; failed
 * handshakes are read from the listener's statistics by the idle sweep. */
static tf_code tls_listener_setup(tf_rpc_server *s, const tf_rpc_server_options *o,
                                  tf_status *st) {
  tf_tls_config *tc = NULL;
  nng_tls_config *cfg = NULL;
  tf_code code = tf__tls_resolve(o->tls, "listen on", s->url, &tc, st);
  if (code == TF_OK) {
    code = tf__tls_server_nng(tc, s->url, &cfg, st);
  }
  tf_tls_config_free(tc);
  if (code != TF_OK) {
    return code;
  }
  int rv = nng_listener_set_ptr(s->l, NNG_OPT_TLS_CONFIG, cfg);
  nng_tls_config_free(cfg); /* the listener holds its own reference */
  if (rv != 0) {
    return tf_status_set(st, TF_INTERNAL, "cannot set the TLS configuration of "
                         "%s: %s", s->url, nng_strerror(rv));
  }
  s->tls_watch = tf__tls_watch_new(s->l, s->url);
  return TF_OK;
}

/* Opens the socket, sets the receive limit on it and on the listener
 * before the listener starts (NNG then refuses a larger frame from its
 * length header, before allocating it) and starts listening. */
static tf_code listen_on(tf_rpc_server *s, const tf_rpc_server_options *o,
                         tf_status *st) {
  int rv = nng_rep0_open(&s->sock);
  if (rv != 0) {
    return tf_status_set(st, TF_INTERNAL, "cannot open a rep socket: %s",
                         nng_strerror(rv));
  }
  s->conns = tf__conns_new(s, o->max_connections, o->idle_connection_ms);
  nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, (size_t)o->max_msg_bytes);
  rv = nng_listener_create(&s->l, s->sock, s->url);
  if (rv != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "bad URL '%s': %s", s->url,
                         nng_strerror(rv));
  }
  if (tf_tls_url(s->url)) {
    tf_code code = tls_listener_setup(s, o, st);
    if (code != TF_OK) {
      return code;
    }
  }
  size_t max = 0;
  rv = nng_listener_set_size(s->l, NNG_OPT_RECVMAXSZ, (size_t)o->max_msg_bytes);
  if (rv == 0) {
    rv = nng_listener_get_size(s->l, NNG_OPT_RECVMAXSZ, &max);
  }
  if (rv != 0 || max != (size_t)o->max_msg_bytes) {
    return tf_status_set(st, TF_INTERNAL,
                         "cannot set the receive limit of %s to %lld bytes: %s",
                         s->url, (long long)o->max_msg_bytes,
                         rv != 0 ? nng_strerror(rv) : "not applied");
  }
  rv = nng_listener_start(s->l, 0);
  if (rv != 0) {
    return tf_status_set(st,
                         rv == NNG_EADDRINVAL ? TF_INVALID_ARGUMENT
                                              : TF_UNAVAILABLE,
                         "cannot listen on %s: %s", s->url, nng_strerror(rv));
  }
  if ((strncmp(s->url, "tcp", 3) == 0 || tf_tls_url(s->url)) &&
      nng_listener_get_int(s->l, NNG_OPT_TCP_BOUND_PORT, &s->port) != 0) {
    s->port = 0;
  }
  return TF_OK;
}

static void sweep_cb(void *arg) {
  tf_rpc_server *s = arg;
  if (nng_aio_result(s->timer) != 0) {
    return; /* stopped */
  }
  tf__conns_sweep(s->conns);
  bool log_now = false;
  uint64_t failed = s->tls_watch != NULL ? tf__tls_watch_poll(s->tls_watch, &log_now) : 0;
  if (log_now) {
    tf__rpc_log(s, LOG_WARNING, "rpc server %s: %llu TLS handshake(s) failed "
                "(clients without a certificate signed by the cluster CA, or "
                "that do not trust this server's; NNG does not report their "
                "addresses; logged at most every 10 s)", s->url,
                (unsigned long long)failed);
  }
  nng_sleep_aio((nng_duration)s->sweep_ms, s->timer); /* no-op once stopped */
}

/* Opens n contexts with their aios, starts them receiving, and arms the
 * idle sweep. */
static tf_code start_slots(tf_rpc_server *s, int n, int64_t idle_ms,
                           tf_status *st) {
  s->slots = tf__xcalloc((size_t)n, sizeof *s->slots);
  for (int i = 0; i < n; i++) {
    tf__rpc_call *c = &s->slots[i];
    c->s = s;
    int rv = nng_ctx_open(&c->ctx, s->sock);
    if (rv == 0 && (rv = nng_aio_alloc(&c->aio, slot_cb, c)) != 0) {
      nng_ctx_close(c->ctx);
    }
    if (rv != 0) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                           "cannot open call context %d of %d for %s: %s", i,
                           n, s->url, nng_strerror(rv));
    }
    s->n = i + 1;
  }
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < n; i++) {
    s->busy++;
    atomic_store(&s->slots[i].state, TF__SLOT_RECV);
    nng_ctx_recv(s->slots[i].ctx, s->slots[i].aio);
  }
  pthread_mutex_unlock(&s->mu);
  s->sweep_ms = TF_MAX(10, TF_MIN(idle_ms / 4, 1000));
  int rv = nng_aio_alloc(&s->timer, sweep_cb, s);
  if (rv != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "cannot start the idle sweep of %s: %s", s->url,
                         nng_strerror(rv));
  }
  nng_sleep_aio((nng_duration)s->sweep_ms, s->timer);
  return TF_OK;
}

/* Starts a server; owned (may be NULL) is freed with it, or now on error. */
static tf_code server_start(const tf_rpc_server_options *o, tf_rpc_handler h,
                            void *arg, void *owned, tf_rpc_server **out,
                            tf_status *st) {
  *out = NULL;
  tf_code code = check_options(o, h, st);
  if (code != TF_OK) {
    free(owned);
    return code;
  }
  tf_rpc_server *s = tf__xcalloc(1, sizeof *s);
  s->url = tf__xstrdup(o->url);
  s->self_task = tf__xstrdup(o->self_task != NULL ? o->self_task : "");
  s->self_inc = o->self_incarnation;
  s->h = h;
  s->arg = arg;
  s->runs_inline = o->runs_inline;
  s->owned_arg = owned;
  s->log = o->log;
  s->log_arg = o->log_arg;
  s->stop_wait_ms = o->stop_wait_ms;
  s->auth = o->auth != NULL ? o->auth : tf_auth_process();
  s->auth_master = o->auth_master;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->retry = tf__retry_new();
  s->q = tf_workq_new(o->handler_threads, "rpc handler");
  code = listen_on(s, o, st);
  if (code == TF_OK) {
    code = start_slots(s, o->max_calls, o->idle_connection_ms, st);
  }
  if (code != TF_OK) {
    tf_rpc_server_stop(s);
    return code;
  }
  *out = s;
  return TF_OK;
}

tf_code tf_rpc_server_start(const tf_rpc_server_options *o, tf_rpc_handler h,
                            void *arg, tf_rpc_server **out, tf_status *st) {
  return server_start(o, h, arg, NULL, out, st);
}

typedef struct sync_adapter {
  tf_rpc_sync_handler h;
  void *arg;
} sync_adapter;

static void sync_handle(void *arg, tf__rpc_call *c) {
  const sync_adapter *a = arg;
  const tf_wire_msg *req = tf_rpc_call_request(c);
  tf_status st;
  tf_status_init(&st);
  nng_msg *m = a->h(a->arg, req, &st);
  if (m != NULL) {
    tf_rpc_reply(c, m);
    return;
  }
  if (st.code == TF_OK) {
    tf_status_set(&st, TF_INTERNAL, "the %s handler returned no reply",
                  tf_method_name(req->h.method));
  }
  tf_rpc_reply_error(c, &st);
}

tf_code tf_rpc_server_start_sync(const char *url, int n_threads,
                                 int64_t max_msg_bytes, tf_rpc_sync_handler h,
                                 void *arg, tf_rpc_server **out,
                                 tf_status *st) {
  *out = NULL;
  if (url == NULL || h == NULL || n_threads < 1 || max_msg_bytes < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc server for '%s': need a URL, a handler, "
                         "n_threads >= 1 (got %d) and max_msg_bytes >= 0",
                         url != NULL ? url : "(null)", n_threads);
  }
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.handler_threads = n_threads;
  o.max_calls = TF_MIN(n_threads, MAX_CALLS_LIMIT);
  if (max_msg_bytes > 0) {
    o.max_msg_bytes = max_msg_bytes;
  }
  sync_adapter *a = tf__xmalloc(sizeof *a);
  *a = (sync_adapter){.h = h, .arg = arg};
  return server_start(&o, sync_handle, a, a, out, st);
}

int tf_rpc_server_port(const tf_rpc_server *s) { return s->port; }

/* ---- stop --------------------------------------------------------------- */

/* Frees everything once every slot is parked (no operation can start);
 * nng_aio_free waits for a callback still returning, except for the one
 * running on this thread, which is reaped. Nothing of the owner's (log,
 * handler) is used: after stop returned, the owner may be gone. */
static void server_free(tf_rpc_server *s) {
  for (int i = 0; i < s->n; i++) {
    if (s->slots[i].aio == running_aio) {
      nng_aio_reap(s->slots[i].aio);
    } else {
      nng_aio_free(s->slots[i].aio);
    }
  }
  nng_aio_free(s->timer); /* stopped by stop */
  tf__retry_free(s->retry);
  tf__conns_free(s->conns);
  tf__rpc_auth_log_free(s->auth_log);
  tf__tls_watch_free(s->tls_watch);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s->slots);
  free(s->owned_arg);
  free(s->self_task);
  free(s->url);
  free(s);
}

/* Refuses new work: receives cancelled, waiting retries woken, the idle
 * sweep stopped; new connections are closed as they arrive (rpc_conn.c). */
static void stop_refusing(tf_rpc_server *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->stopping, true);
  for (int i = 0; i < s->n; i++) {
    int state = atomic_load(&s->slots[i].state);
    if (state == TF__SLOT_RECV || state == TF__SLOT_BACKOFF) {
      nng_aio_cancel(s->slots[i].aio);
    }
  }
  pthread_mutex_unlock(&s->mu);
  tf__retry_stop(s->retry);
  nng_aio_stop(s->timer); /* waits for a running sweep */
}

/* Under s->mu: whether slot c's handler owes a reply. */
static bool owes_reply(const tf__rpc_call *c) {
  return atomic_load(&c->state) == TF__SLOT_SERVE &&
         !atomic_load(&c->replied);
}

/* Under s->mu: logs the calls whose handlers have not finished them. */
static int log_unfinished(tf_rpc_server *s, const char *when) {
  int k = 0;
  int64_t now = tf__now_ns();
  for (int i = 0; i < s->n; i++) {
    const tf__rpc_call *c = &s->slots[i];
    if (!owes_reply(c)) {
      continue;
    }
    k++;
    tf__rpc_log(s, LOG_ERR,
                "rpc server %s: %s request %llu (step %llu) on connection %u "
                "was not finished by its handler %s (received %lld ms ago; "
                "the handler %s): a handler must finish every call",
                s->url, tf_method_name(atomic_load(&c->method)),
                (unsigned long long)atomic_load(&c->request_id),
                (unsigned long long)atomic_load(&c->step_id), c->pipe, when,
                (long long)((now - c->start_ns) / 1000000),
                atomic_load(&c->holds) > 1 ? "is still running"
                                           : "returned without finishing it");
  }
  return k;
}

/* Under s->mu: waits until until_ns while some slot is busy (in_transit:
 * only those not owing a reply count). Returns the slots still busy. */
static int wait_slots(tf_rpc_server *s, int64_t until_ns, bool in_transit) {
  for (;;) {
    int k = 0;
    for (int i = 0; i < s->n; i++) {
      int state = atomic_load(&s->slots[i].state);
      k += state != TF__SLOT_PARKED && !(in_transit && owes_reply(&s->slots[i]));
    }
    int64_t left_ms = (until_ns - tf__now_ns()) / 1000000;
    if (k == 0 || left_ms <= 0) {
      return k;
    }
    tf__cond_wait_ms(&s->cv, &s->mu, TF_MIN(left_ms, 100));
  }
}

void tf_rpc_server_stop(tf_rpc_server *s) {
  if (s == NULL) {
    return;
  }
  TF_ASSERT(!tf_workq_is_worker(s->q));
  stop_refusing(s);
  pthread_mutex_lock(&s->mu);
  wait_slots(s, tf__now_ns() + s->stop_wait_ms * 1000000, false);
  int owed = log_unfinished(s, "when the server stopped");
  s->closed = true; /* late replies are dropped; receives park */
  pthread_mutex_unlock(&s->mu);
  /* Listener, pipes and contexts: operations end. A close that hangs
   * (nng_close.h) is left behind: what it still holds is NNG's. */
  if (!tf__nng_close_within(s->sock, CLOSE_WAIT_MS)) {
    tf__rpc_log(s, LOG_ERR, "rpc server %s: NNG did not close the socket within %d ms "
                "(NNG 1.5.2 can wait for ever on a pipe that never ends); going on "
                "without it", s->url, CLOSE_WAIT_MS);
  }
  tf_workq_free(s->q); /* runs queued requests (refused) and joins */
  pthread_mutex_lock(&s->mu);
  int stuck = wait_slots(s, tf__now_ns() + TRANSIT_WAIT_MS * 1000000LL, true);
  s->owner_gone = true;
  bool free_now = s->busy == 0;
  pthread_mutex_unlock(&s->mu);
  if (free_now) {
    server_free(s);
    return;
  }
  tf__rpc_log(s, LOG_ERR,
              "rpc server %s: stopped with %d call(s) never finished and %d "
              "operation(s) still in NNG; their memory is kept until they "
              "end",
              s->url, owed, stuck);
}

uint64_t tf_rpc_server_served(const tf_rpc_server *s) {
  return atomic_load(&s->served);
}

uint64_t tf_rpc_server_auth_refused(const tf_rpc_server *s) {
  return atomic_load(&s->auth_refused);
}

uint64_t tf_rpc_server_rejected(const tf_rpc_server *s) {
  return atomic_load(&s->rejected);
}

void tf_rpc_server_get_stats(const tf_rpc_server *s, tf_rpc_server_stats *out) {
  *out = (tf_rpc_server_stats){.served = atomic_load(&s->served),
                               .rejected = atomic_load(&s->rejected),
                               .retained_bytes = tf__retry_retained_bytes(s->retry)};
  for (int i = 0; i < s->n; i++) {
    int state = atomic_load(&s->slots[i].state);
    out->calls += state == TF__SLOT_SERVE || state == TF__SLOT_WAIT ||
                  state == TF__SLOT_SEND;
  }
  tf__conns_stats(s->conns, out);
}
