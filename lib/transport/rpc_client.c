/* rpc_client.c: the RPC client. One req socket dials the peer in the
 * background (NNG reconnects with backoff). Calls run on (req context,
 * aio) pairs kept in two small pools per client: synchronous calls use
 * aios without a callback and wait on them in the calling thread (no
 * second thread is woken for the reply); asynchronous calls use aios whose
 * callback sends the receive and then runs the caller's done. A call
 * beyond the pool opens a pair and closes it afterwards. NNG's automatic
 * resend is off: a caller retries with the same request id, which the
 * server's retry table answers once. A reply naming another task than the
 * one expected fails the call. A tls+tcp client also probes, while it is
 * not connected, why its connects fail (tf__tls_probe): a refused
 * certificate fails calls with UNAVAILABLE "TLS handshake failed". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/transport/nng_close.h"
#include "lib/transport/peer_metrics.h"
#include "lib/transport/rpc.h"
#include "lib/transport/rpc_probe.h"
#include "lib/transport/tls.h"

#define DEFAULT_POOL 16
#define CLOSE_WAIT_MS 3000 /* nng_close itself (nng_close.h) */

typedef struct pair {
  struct tf_rpc_client *c;
  nng_ctx ctx;
  nng_aio *aio;
  bool async;
  struct pair *next;     /* in the idle list */
  /* the asynchronous call running on the pair */
  int method;
  int64_t timeout_ms;
  int64_t deadline_ns;
  bool receiving;
  uint8_t nonce[TF_AUTH_NONCE_BYTES]; /* the signed request's */
  tf_rpc_done done;
  void *arg;
} pair;

struct tf_rpc_client {
  nng_socket sock;
  nng_dialer dialer;
  char *url;
  char *expect_task;     /* "" when any */
  int keep;              /* idle pairs kept per kind */
  pthread_mutex_t mu;
  bool closed;
  pair *idle[2];         /* [async] */
  int n_idle[2];
  tf__refcount refs;     /* the owner's plus one per call in flight */
  atomic_int pipes;      /* connections to the peer now */
  const tf__peer_metrics *peer; /* expect_task, else the URL */
  tf_auth *auth;         /* signs requests with its first key; NULL: none */
  /* tls+tcp only: the configuration, and the last probe's result */
  tf_tls_config *tls;
  int64_t open_ns;
  atomic_int tls_rv;          /* NNG error of the last probe (0: fine) */
  _Atomic int64_t tls_probe_ns; /* when it ended (0: never) */
  atomic_bool probing;
};

/* Set while a done callback runs on an NNG thread. */
static _Thread_local bool in_done;

static void call_cb(void *arg);

/* Frees a pair's aio (reaped when called from the aio's own callback)
 * and the pair; its context is closed already, or goes with its socket. */
static void pair_free(pair *p, bool own_cb) {
  if (own_cb) {
    nng_aio_reap(p->aio);
  } else {
    nng_aio_free(p->aio);
  }
  free(p);
}

/* Closes a pair's context and frees it. Only while the socket is open, or
 * before anyone closes it: NNG 1.5 may use a socket's freed lock when a
 * context is closed on one thread while nng_close runs on another. */
static void pair_dispose(pair *p, bool own_cb) {
  nng_ctx_close(p->ctx);
  pair_free(p, own_cb);
}

static void client_release(void *arg) {
  tf_rpc_client *c = arg;
  for (int k = 0; k < 2; k++) { /* close emptied these; a failed open not */
    while (c->idle[k] != NULL) {
      pair *p = c->idle[k];
      c->idle[k] = p->next;
      pair_dispose(p, false);
    }
  }
  pthread_mutex_destroy(&c->mu);
  tf_tls_config_free(c->tls);
  free(c->expect_task);
  free(c->url);
  free(c);
}

static void client_unref(tf_rpc_client *c) {
  tf__ref_put(&c->refs, client_release, c);
}

/* A pair for one call: pooled, or opened now (NNG error code otherwise). */
static int pair_get(tf_rpc_client *c, bool async, pair **out) {
  *out = NULL;
  pthread_mutex_lock(&c->mu);
  if (c->closed) {
    pthread_mutex_unlock(&c->mu);
    return NNG_ECLOSED;
  }
  pair *p = c->idle[async];
  if (p != NULL) {
    c->idle[async] = p->next;
    c->n_idle[async]--;
  }
  pthread_mutex_unlock(&c->mu);
  if (p == NULL) {
    p = tf__xcalloc(1, sizeof *p);
    *p = (pair){.c = c, .async = async};
    int rv = nng_ctx_open(&p->ctx, c->sock);
    if (rv == 0 && (rv = nng_aio_alloc(&p->aio, async ? call_cb : NULL, p)) != 0) {
      nng_ctx_close(p->ctx);
    }
    if (rv != 0) {
      free(p);
      return rv;
    }
  }
  p->next = NULL;
  *out = p;
  return 0;
}

/* Returns a pair after its call: kept while the pool has room. Its
 * context is closed under the client's lock while the client is open:
 * client_close marks the client closed under that lock before nng_close,
 * so no context is closed while the socket closes. Once the client is
 * closed, the socket's close closes the context. */
static void pair_put(pair *p, bool own_cb) {
  tf_rpc_client *c = p->c;
  pthread_mutex_lock(&c->mu);
  bool closed = c->closed;
  bool keep = !closed && c->n_idle[p->async] < c->keep;
  if (keep) {
    p->next = c->idle[p->async];
    c->idle[p->async] = p;
    c->n_idle[p->async]++;
  } else if (!closed) {
    nng_ctx_close(p->ctx);
  }
  pthread_mutex_unlock(&c->mu);
  if (!keep) {
    pair_free(p, own_cb);
  }
}

/* Counts the connections (NNG runs this on its threads). */
static void pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg) {
  tf_rpc_client *c = arg;
  atomic_fetch_add(&c->pipes, ev == NNG_PIPE_EV_ADD_POST ? 1 : -1);
  (void)p;
}

/* ---- TLS (tls+tcp) -------------------------------------------------------- */

/* Records a probe's result. */
static void tls_note(tf_rpc_client *c, int rv) {
  atomic_store(&c->tls_rv, rv);
  atomic_store(&c->tls_probe_ns, tf__now_ns());
}

static void *tls_probe_main(void *arg) {
  tf_rpc_client *c = arg;
  tls_note(c, tf__tls_probe(c->tls, c->url, 1000));
  atomic_store(&c->probing, false);
  client_unref(c);
  return NULL;
}

/* While a tls+tcp client is not connected (and has had 100 ms to), starts
 * a probe in the background, at most one at a time and one a second, so
 * that a call that fails can say why. */
static void tls_probe_kick(tf_rpc_client *c) {
  int64_t now = tf__now_ns();
  if (c->tls == NULL || atomic_load(&c->pipes) > 0 || now - c->open_ns < 100000000 ||
      now - atomic_load(&c->tls_probe_ns) < 1000000000 ||
      atomic_exchange(&c->probing, true)) {
    return;
  }
  tf__ref_get(&c->refs);
  pthread_t th;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &a, tls_probe_main, c) != 0) {
    atomic_store(&c->probing, false);
    client_unref(c);
  }
  pthread_attr_destroy(&a);
}

/* The refused handshake a probe saw within the last 2 s while the client
 * is not connected (else 0). */
static int tls_failure(tf_rpc_client *c) {
  int rv = c->tls != NULL ? atomic_load(&c->tls_rv) : 0;
  bool fresh = tf__now_ns() - atomic_load(&c->tls_probe_ns) < 2000000000;
  return fresh && atomic_load(&c->pipes) <= 0 && tf__tls_handshake_error(rv) ? rv : 0;
}

/* Starts the dialer: for tls+tcp with a client configuration for the
 * URL's host (NNG's default one would be replaced without a name check). */
static tf_code dial_start(tf_rpc_client *c, const tf_rpc_client_options *o,
                          tf_status *st) {
  if (!tf_tls_url(c->url)) {
    int rv = nng_dial(c->sock, c->url, &c->dialer, NNG_FLAG_NONBLOCK);
    return rv == 0 ? TF_OK : tf_status_set(st, TF_INVALID_ARGUMENT, "cannot dial "
                                           "'%s': %s", c->url, nng_strerror(rv));
  }
  nng_tls_config *cfg = NULL;
  TF_TRY(tf__tls_check_dial_url(c->url, st));
  tf_code code = tf__tls_resolve(o->tls, "dial", c->url, &c->tls, st);
  if (code == TF_OK) {
    code = tf__tls_client_nng(c->tls, c->url, &cfg, st);
  }
  if (code != TF_OK) {
    return code;
  }
  int rv = nng_dialer_create(&c->dialer, c->sock, c->url);
  if (rv == 0) {
    rv = nng_dialer_set_ptr(c->dialer, NNG_OPT_TLS_CONFIG, cfg);
  }
  nng_tls_config_free(cfg); /* the dialer holds its own reference */
  if (rv == 0) {
    rv = nng_dialer_start(c->dialer, NNG_FLAG_NONBLOCK);
  }
  return rv == 0 ? TF_OK : tf_status_set(st, TF_INVALID_ARGUMENT, "cannot dial "
                                         "'%s': %s", c->url, nng_strerror(rv));
}

/* dial_now: one connect (and for tls+tcp one handshake) now. A refusal
 * fails the open; a refused certificate is noted for the first call. */
static tf_code dial_check(tf_rpc_client *c, tf_status *st) {
  char why[128] = "";
  if (c->tls != NULL) {
    int rv = tf__tls_probe(c->tls, c->url, 2000);
    tls_note(c, rv);
    if (rv != 0 && !tf__tls_handshake_error(rv) && rv != NNG_ETIMEDOUT) {
      snprintf(why, sizeof why, "%s", nng_strerror(rv));
    }
  } else if (!tf__rpc_probe(c->url, why, sizeof why) ||
             strncmp(why, "no answer", 9) == 0) {
    why[0] = '\0'; /* a connect that is slow to answer is not a verdict */
  }
  if (why[0] != '\0') {
    return tf_status_set(st, TF_UNAVAILABLE, "cannot connect to %s: %s (is the "
                         "daemon running there?)", c->url, why);
  }
  return TF_OK;
}

tf_code tf_rpc_client_open(const tf_rpc_client_options *o, tf_rpc_client **out,
                           tf_status *st) {
  *out = NULL;
  if (o == NULL || o->url == NULL || o->max_msg_bytes < 0 || o->pool < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "rpc client: need a URL, max_msg_bytes >= 0 and "
                         "pool >= 0");
  }
  tf_rpc_client *c = tf__xcalloc(1, sizeof *c);
  tf__ref_init(&c->refs, 1);
  c->url = tf__xstrdup(o->url);
  c->expect_task = tf__xstrdup(o->expect_task != NULL ? o->expect_task : "");
  c->keep = o->pool > 0 ? o->pool : DEFAULT_POOL;
  c->auth = o->auth != NULL ? o->auth : tf_auth_process();
  c->peer = tf__peer_metrics_of(c->expect_task[0] != '\0' ? c->expect_task : c->url);
  c->open_ns = tf__now_ns();
  pthread_mutex_init(&c->mu, NULL);
  int rv = nng_req0_open(&c->sock);
  if (rv != 0) {
    client_unref(c);
    return tf_status_set(st, TF_INTERNAL, "cannot open a req socket: %s",
                         nng_strerror(rv));
  }
  nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, (size_t)o->max_msg_bytes);
  nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 10);
  nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 500);
  nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, pipe_event, c);
  nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, pipe_event, c);
  tf_code code = dial_start(c, o, st);
  if (code == TF_OK && o->dial_now) {
    code = dial_check(c, st);
  }
  if (code != TF_OK) {
    tf_rpc_client_free(c);
    return code;
  }
  *out = c;
  return TF_OK;
}

tf_code tf_rpc_client_new(const char *url, int64_t max_msg_bytes,
                          tf_rpc_client **out, tf_status *st) {
  tf_rpc_client_options o = {.url = url, .max_msg_bytes = max_msg_bytes};
  return tf_rpc_client_open(&o, out, st);
}

/* Fails calls in flight (closing the socket ends their operations) and
 * frees the idle pairs; the client goes with its last call. */
static void client_close(tf_rpc_client *c) {
  pthread_mutex_lock(&c->mu);
  c->closed = true;
  pair *idle[2] = {c->idle[0], c->idle[1]};
  c->idle[0] = c->idle[1] = NULL;
  c->n_idle[0] = c->n_idle[1] = 0;
  pthread_mutex_unlock(&c->mu);
  for (int k = 0; k < 2; k++) {
    while (idle[k] != NULL) {
      pair *p = idle[k];
      idle[k] = p->next;
      pair_dispose(p, false);
    }
  }
  nng_dialer_close(c->dialer); /* a connect in progress ends first */
  /* A close that hangs (nng_close.h) is left behind, and with it the
   * client's memory, which its operations may still reach. */
  if (!tf__nng_close_within(c->sock, CLOSE_WAIT_MS)) {
    fprintf(stderr, "<%d>rpc client to %s: NNG did not close the socket within %d ms "
            "(NNG 1.5.2 can wait for ever on a pipe that never ends); going on "
            "without it\n", LOG_ERR, c->url, CLOSE_WAIT_MS);
    return;
  }
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

int tf__rpc_client_idle_pairs(tf_rpc_client *c) {
  pthread_mutex_lock(&c->mu);
  int n = c->n_idle[0] + c->n_idle[1];
  pthread_mutex_unlock(&c->mu);
  return n;
}

/* ---- calls -------------------------------------------------------------- */

/* The status of a failed NNG operation of a call. A timeout while not
 * connected says so, and with probe (a synchronous call, in the caller's
 * thread) why the connect fails. */
static tf_code op_status(tf_rpc_client *c, int method, int64_t timeout_ms,
                         int rv, bool probe, tf_status *st) {
  if (c->tls != NULL && atomic_load(&c->pipes) <= 0 &&
      (tf__tls_handshake_error(rv) || rv == NNG_ETIMEDOUT)) {
    if (probe) {
      tls_note(c, tf__tls_probe(c->tls, c->url, 1000));
    }
    int why = tls_failure(c);
    if (why != 0) {
      char text[256];
      tf__tls_handshake_text(why, text, sizeof text);
      return tf_status_set(st, TF_UNAVAILABLE, "%s to %s: %s",
                           tf_method_name(method), c->url, text);
    }
  }
  if (rv == NNG_ETIMEDOUT) {
    char why[160] = "";
    if (atomic_load(&c->pipes) <= 0) {
      char reason[128];
      int tls_rv = c->tls != NULL ? atomic_load(&c->tls_rv) : 0;
      bool fresh = tf__now_ns() - atomic_load(&c->tls_probe_ns) < 2000000000;
      if (probe && tf__rpc_probe(c->url, reason, sizeof reason) && reason[0] != '\0') {
        snprintf(why, sizeof why, " (not connected: %s)", reason);
      } else if (tls_rv != 0 && fresh) { /* tls+tcp: the last probe's reason */
        snprintf(why, sizeof why, " (not connected: %s)", nng_strerror(tls_rv));
      } else {
        snprintf(why, sizeof why, " (not connected)");
      }
    }
    return tf_status_set(st, TF_DEADLINE_EXCEEDED,
                         "%s to %s: no reply within %lld ms%s",
                         tf_method_name(method), c->url,
                         (long long)timeout_ms, why);
  }
  return tf_status_set(st, TF_UNAVAILABLE, "%s to %s: %s",
                       tf_method_name(method), c->url, nng_strerror(rv));
}

/* Checks and strips the auth prefix of reply m (auth.h) to the request
 * signed with nonce. An unsigned reply is accepted only as the server's
 * refusal of the request (an error with code UNAUTHENTICATED), which is
 * returned. */
static tf_code reply_auth(const tf_rpc_client *c, int method, nng_msg *m,
                          const uint8_t *nonce, tf_status *st) {
  const uint8_t *b = nng_msg_body(m);
  size_t n = nng_msg_len(m);
  if (!tf_auth_is_signed(b, n)) {
    tf_wire_msg *r = NULL;
    if (tf_wire_parse(m, &r, st) == TF_OK && r->h.is_reply &&
        r->h.code == TF_UNAUTHENTICATED) {
      tf_status_set(st, TF_UNAUTHENTICATED, "%s", r->h.error);
    } else {
      tf_status_set(st, TF_UNAUTHENTICATED,
                    "%s to %s: the reply is not signed (the server does not use this "
                    "cluster's authentication)",
                    tf_method_name(method), c->url);
    }
    tf_wire_msg_free(r);
    return st->code;
  }
  if (tf_auth_verify_reply(c->auth, 0, nonce, b, n, st) != TF_OK) {
    tf_status_prefix(st, "%s to %s", tf_method_name(method), c->url);
    return st->code;
  }
  nng_msg_trim(m, TF_AUTH_PREFIX_BYTES);
  return TF_OK;
}

/* Signs request m in place when the client authenticates; nonce gets its
 * nonce. */
static void sign_request(const tf_rpc_client *c, nng_msg *m, uint8_t *nonce) {
  if (c->auth == NULL) {
    return;
  }
  uint8_t prefix[TF_AUTH_PREFIX_BYTES];
  tf_auth_sign(c->auth, 0, NULL, nng_msg_body(m), nng_msg_len(m), prefix, nonce);
  TF_ASSERT(nng_msg_insert(m, prefix, sizeof prefix) == 0);
}

/* Parses reply m (taken): *out is the reply when OK; a reply from another
 * task than expected, or with a non-OK code, becomes that status. */
static tf_code reply_status(const tf_rpc_client *c, int method, nng_msg *m,
                            const uint8_t *nonce, tf_wire_msg **out, tf_status *st) {
  *out = NULL;
  tf_wire_msg *r;
  tf__peer_received(c->peer, nng_msg_len(m));
  if (c->auth != NULL && reply_auth(c, method, m, nonce, st) != TF_OK) {
    nng_msg_free(m);
    return st->code;
  }
  if (tf_wire_parse(m, &r, st) != TF_OK) {
    tf_status_prefix(st, "%s to %s: malformed reply", tf_method_name(method),
                     c->url);
    return st->code;
  }
  tf_code code = TF_OK;
  const char *from = r->h.from != NULL ? r->h.from : "";
  if (c->expect_task[0] != '\0' && from[0] != '\0' &&
      strcmp(from, c->expect_task) != 0) {
    code = tf_status_set(st, TF_FAILED_PRECONDITION,
                         "wrong task at address: %s answered as %s, expected "
                         "%s",
                         c->url, from, c->expect_task);
  } else if (r->h.code != TF_OK) {
    code = tf_status_set(st, (tf_code)r->h.code, "%s", r->h.error);
  }
  if (code != TF_OK) {
    tf_wire_msg_free(r);
    return code;
  }
  tf_status_init(st);
  *out = r;
  return TF_OK;
}

static nng_duration ms_left(int64_t deadline_ns) {
  int64_t left_ms = (deadline_ns - tf__now_ns() + 999999) / 1000000;
  return (nng_duration)TF_MAX(0, TF_MIN(left_ms, INT32_MAX));
}

/* Ends an asynchronous call: done runs, then the pair goes back (done may
 * free the client: the call's reference keeps it until then). */
static void call_end(pair *p, const tf_status *st, tf_wire_msg *reply) {
  tf_rpc_client *c = p->c;
  if (st->code != TF_OK) {
    tf__rpc_count_error("client", p->method, st->code);
  }
  in_done = true;
  p->done(p->arg, st, reply);
  in_done = false;
  pair_put(p, true);
  client_unref(c);
}

static void call_cb(void *arg) {
  pair *p = arg;
  tf_status st;
  tf_status_init(&st);
  int rv = nng_aio_result(p->aio);
  if (rv == 0 && !p->receiving) {
    nng_duration left = ms_left(p->deadline_ns);
    rv = left > 0 ? 0 : NNG_ETIMEDOUT;
    if (rv == 0) {
      p->receiving = true;
      nng_aio_set_timeout(p->aio, left);
      nng_ctx_recv(p->ctx, p->aio);
      return;
    }
  } else if (rv != 0 && !p->receiving) {
    nng_msg_free(nng_aio_get_msg(p->aio)); /* a failed send keeps it */
  }
  nng_msg *m = rv == 0 ? nng_aio_get_msg(p->aio) : NULL;
  nng_aio_set_msg(p->aio, NULL);
  tf_wire_msg *r = NULL;
  if (rv != 0) {
    op_status(p->c, p->method, p->timeout_ms, rv, false, &st);
  } else {
    reply_status(p->c, p->method, m, p->nonce, &r, &st);
  }
  call_end(p, &st, r);
}

void tf_rpc_call_async(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                       tf_rpc_done done, void *arg) {
  int method = tf__wire_method_of(req);
  tf_status st;
  pair *p = NULL;
  tls_probe_kick(c);
  int tls_rv = tls_failure(c); /* fails at once: the certificate was refused */
  int rv = tls_rv != 0 ? tls_rv : timeout_ms > 0 ? pair_get(c, true, &p) : 0;
  if (timeout_ms <= 0 || rv != 0) {
    nng_msg_free(req);
    if (timeout_ms <= 0) {
      tf_status_set(&st, TF_INVALID_ARGUMENT,
                    "%s to %s: timeout_ms must be > 0", tf_method_name(method),
                    c->url);
    } else {
      op_status(c, method, timeout_ms, rv, false, &st);
    }
    done(arg, &st, NULL);
    return;
  }
  p->method = method;
  p->timeout_ms = timeout_ms;
  p->deadline_ns = tf__now_ns() + timeout_ms * 1000000;
  p->receiving = false;
  p->done = done;
  p->arg = arg;
  tf__ref_get(&c->refs);
  sign_request(c, req, p->nonce);
  tf__peer_sent(c->peer, nng_msg_len(req));
  nng_aio_set_msg(p->aio, req);
  nng_aio_set_timeout(p->aio, (nng_duration)TF_MIN(timeout_ms, INT32_MAX));
  nng_ctx_send(p->ctx, p->aio);
}

/* Runs one operation on the pair's callback-less aio and waits for it. */
static int run_op(pair *p, bool recv, nng_duration timeout) {
  nng_aio_set_timeout(p->aio, timeout);
  if (recv) {
    nng_ctx_recv(p->ctx, p->aio);
  } else {
    nng_ctx_send(p->ctx, p->aio);
  }
  nng_aio_wait(p->aio); /* bounded by the timeout */
  return nng_aio_result(p->aio);
}

tf_code tf_rpc_call(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                    tf_wire_msg **reply, tf_status *st) {
  *reply = NULL;
  tf_status local;
  tf_status_init(&local);
  st = st != NULL ? st : &local;
  int method = tf__wire_method_of(req);
  if (timeout_ms <= 0) {
    nng_msg_free(req);
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "%s to %s: timeout_ms must be > 0",
                         tf_method_name(method), c->url);
  }
  int64_t deadline_ns = tf__now_ns() + timeout_ms * 1000000;
  pair *p = NULL;
  int rv = tls_failure(c); /* fails at once: the certificate was refused */
  if (rv == 0) {
    rv = pair_get(c, false, &p);
  }
  if (rv != 0) {
    nng_msg_free(req);
    return op_status(c, method, timeout_ms, rv, true, st);
  }
  tf__ref_get(&c->refs);
  uint8_t nonce[TF_AUTH_NONCE_BYTES];
  sign_request(c, req, nonce);
  tf__peer_sent(c->peer, nng_msg_len(req));
  nng_aio_set_msg(p->aio, req);
  rv = run_op(p, false, (nng_duration)TF_MIN(timeout_ms, INT32_MAX));
  if (rv != 0) {
    nng_msg_free(nng_aio_get_msg(p->aio)); /* a failed send keeps it */
  } else {
    nng_duration left = ms_left(deadline_ns);
    rv = left > 0 ? run_op(p, true, left) : NNG_ETIMEDOUT;
  }
  nng_msg *m = rv == 0 ? nng_aio_get_msg(p->aio) : NULL;
  nng_aio_set_msg(p->aio, NULL);
  pair_put(p, false);
  tf_code code = rv != 0 ? op_status(c, method, timeout_ms, rv, true, st)
                         : reply_status(c, method, m, nonce, reply, st);
  if (code != TF_OK) {
    tf__rpc_count_error("client", method, code);
  }
  client_unref(c);
  return code;
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
