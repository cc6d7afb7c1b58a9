/* rpc_server.h: the RPC server's internals, shared by rpc.c (contexts,
 * handler threads, stop), rpc_retry.c (request ids executed once, retries
 * waiting for a running original) and rpc_conn.c (the connection table:
 * max_connections, idle connections). Not part of any public API.
 *
 * A call slot is one rep context with one aio whose callback (slot_cb in
 * rpc.c) dispatches on the slot's state. Exactly one NNG operation is
 * outstanding on the aio at a time, and state is written before that
 * operation starts. A slot is reused for the next request only when both
 * the handler has returned and the reply is sent ("holds"), so a handler
 * that finishes its call twice is caught even if it does so late in its
 * own run. */
#ifndef TF_TRANSPORT_RPC_SERVER_H
#define TF_TRANSPORT_RPC_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "lib/core/base/workqueue.h"
#include "lib/transport/auth.h"
#include "lib/transport/rpc.h"
#include "lib/transport/tls.h"

typedef enum tf__slot_state {
  TF__SLOT_PARKED,  /* no operation; not counted in busy */
  TF__SLOT_RECV,    /* nng_ctx_recv outstanding */
  TF__SLOT_BACKOFF, /* sleeping after a failed receive */
  TF__SLOT_SERVE,   /* request taken: parsing, in the handler, or awaiting its reply */
  TF__SLOT_WAIT,    /* a retry sleeping until its original finishes */
  TF__SLOT_SEND,    /* nng_ctx_send outstanding */
} tf__slot_state;

typedef struct tf_rpc_call tf__rpc_call;
typedef struct tf__retry_entry tf__retry_entry;
typedef struct tf__retry tf__retry;
typedef struct tf__conns tf__conns;

struct tf_rpc_call {
  tf_rpc_server *s;
  nng_ctx ctx;
  nng_aio *aio;
  _Atomic int state;      /* tf__slot_state */
  atomic_int holds;       /* handler not yet returned + reply not yet sent */
  atomic_bool replied;
  nng_msg *in;            /* received, not yet parsed */
  tf_wire_msg *req;       /* until finished */
  uint32_t pipe;
  bool track;             /* runs a request id: its reply is recorded */
  bool counted;           /* given to the handler: counts as served */
  /* Of the request, kept for logs after req is freed; atomic: stop's log
   * reads them from another thread. */
  _Atomic int method;
  _Atomic uint64_t request_id, step_id;
  int64_t start_ns;
  const struct tf__peer_metrics *peer; /* the requester's series; NULL until admitted */
  tf_auth_ctx auth;       /* who signed the request (key -1: unsigned); the reply is signed alike */
  /* A retry waiting for its original (under the retry table's lock). */
  tf__retry_entry *wait_entry;
  tf__rpc_call *wait_next;
  int64_t wait_ms;
};

struct tf_rpc_server {
  nng_socket sock;
  nng_listener l;
  char *url;
  char *self_task;        /* "" when none */
  uint64_t self_inc;
  int port;
  tf_rpc_handler h;
  void *arg;
  bool (*runs_inline)(void *arg, int method); /* NULL: every method on q */
  void *owned_arg;        /* freed with the server (the sync adapter) */
  tf_rpc_log_fn log;
  void *log_arg;
  int64_t stop_wait_ms;
  tf_workq *q;            /* handler threads */
  pthread_mutex_t mu;     /* stopping, closed, busy, owner_gone; sends start under it */
  pthread_cond_t cv;      /* broadcast when a slot parks */
  atomic_bool stopping;
  bool closed;            /* the socket is closed: late replies are dropped */
  bool owner_gone;        /* stop returned: the last slot to park frees */
  int busy;               /* slots not parked */
  int n;
  tf__rpc_call *slots;
  nng_aio *timer;         /* the idle-connection sweep */
  int64_t sweep_ms;
  tf__retry *retry;
  tf__conns *conns;
  tf__tls_watch *tls_watch; /* tls+tcp: failed handshakes (NULL otherwise) */
  atomic_uint_fast64_t served, rejected;
  tf_auth *auth;          /* NULL: requests are not authenticated */
  bool auth_master;       /* roles of the master's methods (tf_auth_method_role) */
  struct tf__auth_log *auth_log; /* refusals, logged once per peer per period */
  atomic_uint_fast64_t auth_refused;
};

/* ---- authentication (rpc_auth.c) ---------------------------------------- */

/* Checks and strips the auth prefix of the call's received request c->in
 * when the server authenticates (fills c->auth; key -1 when it does not).
 * false: refused, st says why (UNAUTHENTICATED), counted, logged. */
bool tf__rpc_auth_admit(tf__rpc_call *c, const char *host, tf_status *st);
/* PERMISSION_DENIED when the request's role may not call method. */
tf_code tf__rpc_auth_check_role(const tf__rpc_call *c, int method, tf_status *st);
/* Signs reply m in place for the call's requester (nothing when the
 * request was not signed). */
void tf__rpc_auth_sign_reply(const tf__rpc_call *c, nng_msg *m);
void tf__rpc_auth_log_free(struct tf__auth_log *l);

/* Logs a formatted line through the server's log function. */
void tf__rpc_log(const tf_rpc_server *s, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- retry table (rpc_retry.c) ------------------------------------------ */

typedef enum tf__retry_outcome {
  TF__RETRY_RUN,      /* a new id: run the request; finish records its reply */
  TF__RETRY_ANSWERED, /* *reply, or NULL with st: answer at once */
  TF__RETRY_WAITING,  /* the original is running: the call now sleeps on its aio */
} tf__retry_outcome;

tf__retry *tf__retry_new(void);
/* Frees the table; no retry may be waiting. NULL-safe. */
void tf__retry_free(tf__retry *d);
/* Looks call's request id up (h: its header). On WAITING the call's state
 * is TF__SLOT_WAIT and its aio sleeps until the original finishes (the
 * aio is cancelled) or the retry's deadline passes; slot_cb then calls
 * tf__retry_wake. */
tf__retry_outcome tf__retry_begin(tf__retry *d, tf__rpc_call *call,
                                  const tf_wire_header *h, nng_msg **reply,
                                  tf_status *st);
/* Records the reply of request id (copied when small enough) and wakes
 * the retries waiting for it. */
void tf__retry_finish(tf__retry *d, uint64_t id, const nng_msg *reply);
/* For a waiting retry whose aio completed: the reply to send, or NULL with
 * st (still running after its wait; the server stopping). */
nng_msg *tf__retry_wake(tf__retry *d, tf__rpc_call *call, const char *url,
                        tf_status *st);
/* Wakes every waiting retry and makes later ones answer at once with
 * UNAVAILABLE (the server is stopping). */
void tf__retry_stop(tf__retry *d);
/* Bytes of the replies retained now (at most 64 MiB). */
size_t tf__retry_retained_bytes(tf__retry *d);

/* ---- connections (rpc_conn.c) ------------------------------------------- */

/* Registers the pipe callbacks on s->sock (before listening). */
tf__conns *tf__conns_new(tf_rpc_server *s, int max, int64_t idle_ms);
void tf__conns_free(tf__conns *t);
/* A request arrived on / a call on it ended: the pipe is busy / idle since
 * now. Unknown pipes (already gone) are ignored. */
void tf__conns_call_begin(tf__conns *t, uint32_t pipe);
void tf__conns_call_end(tf__conns *t, uint32_t pipe);
/* Ends the connections idle for idle_ms or longer; returns how many. */
int tf__conns_sweep(tf__conns *t);
void tf__conns_stats(tf__conns *t, tf_rpc_server_stats *out);

#endif
