/* rpc.h: request/reply over NNG (req/rep sockets with contexts).
 *
 * A server binds one URL (tcp://host:port, ipc://path, inproc://name, or
 * tls+tcp://host:port: mutual TLS with the options' or the process's TLS
 * configuration, tls.h; clients must present a certificate the cluster
 * CA signed, and a client checks the server's against the URL's host
 * name; a failed handshake fails a call with UNAVAILABLE "<Method> to
 * <url>: TLS handshake failed (...)") and keeps a
 * pool of max_calls rep contexts receiving through NNG callbacks. Each
 * received request is parsed and checked, then handed to the handler on
 * one of the server's handler threads; the handler finishes the call
 * exactly once, before returning or later from any thread, so a request
 * that waits for another task holds a context but no thread (nng's aio
 * contract). Malformed requests get an INVALID_ARGUMENT reply naming the
 * problem; bytes that are not NNG's protocol make NNG drop the connection;
 * a frame over max_msg_bytes is refused by NNG before it allocates it (the
 * connection is dropped). Requests with a non-zero request id are executed
 * once: a retry of a finished request gets the retained reply (replies up
 * to 1 MiB are retained for the last 1024 ids); a retry of a running one
 * holds its context, not a thread, until the original finishes and then
 * gets the same reply (or UNAVAILABLE "still running" after its deadline,
 * 30 s without one); a retry whose reply was too large to retain gets
 * ABORTED; an id reused for another method gets INVALID_ARGUMENT. NNG's
 * automatic resend is off: callers retry explicitly with the same id.
 * Connections beyond max_connections are closed as they arrive; those
 * idle (no call in progress) for idle_connection_ms are closed.
 * A client dials a URL in the background (reconnecting as needed) and makes
 * calls with a deadline; many calls may be in flight on one client, each
 * on a pooled (context, aio) pair. docs/wire.md describes the model. */
#ifndef TF_TRANSPORT_RPC_H
#define TF_TRANSPORT_RPC_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/transport/auth.h"
#include "lib/transport/wire.h"
#include "tf/status.h"

/* ---- server ------------------------------------------------------------- */

typedef struct tf_rpc_server tf_rpc_server;
/* One request awaiting its reply (a pooled rep context). Spelled with its
 * struct tag: the plain name tf_rpc_call is the client's call function. */
struct tf_rpc_call;
struct tf_tls_config; /* tls.h */

/* Runs for each request on one of the server's handler threads, or on the
 * NNG thread that received it when the server's runs_inline says so for
 * its method (see tf_rpc_server_options). It must
 * finish the call exactly once -- tf_rpc_reply or tf_rpc_reply_error,
 * before returning or later, from any thread (a completion callback) --
 * and never block waiting for another task. A second finish panics
 * (TF_ASSERT: a bug); a call never finished holds its context and is
 * logged by tf_rpc_server_stop. */
typedef void (*tf_rpc_handler)(void *arg, struct tf_rpc_call *call);

/* The request, until the call is finished (then it is freed). Its `to` and
 * `to_inc` are the server's own identity when it has one (the request
 * named it or nobody), so replies built from it come from the server. */
const tf_wire_msg *tf_rpc_call_request(const struct tf_rpc_call *c);
/* The id of the connection (NNG pipe) the request came on; non-zero. */
uint32_t tf_rpc_call_pipe(const struct tf_rpc_call *c);
/* A writer for the OK reply to the call's request: its method and ids
 * echoed, from = the server's task and incarnation, to = the request's
 * from. Finish it with tf_wire_finish and pass the message to
 * tf_rpc_reply. Only until the call is finished. */
tf_wire_writer *tf_rpc_reply_writer(const struct tf_rpc_call *c);
/* Finishes the call with reply (ownership taken; non-NULL): the server
 * records it for retries and sends it. c is invalid afterwards. */
void tf_rpc_reply(struct tf_rpc_call *c, nng_msg *reply);
/* Finishes the call with an error reply carrying st's code (not OK) and
 * message. c is invalid afterwards. */
void tf_rpc_reply_error(struct tf_rpc_call *c, const tf_status *st);

/* Receives the server's log lines: prio is a syslog priority (LOG_WARNING
 * for refused connections, LOG_ERR for calls never finished), msg has no
 * newline. May run on any thread, including NNG's. */
typedef void (*tf_rpc_log_fn)(void *arg, int prio, const char *msg);

typedef struct tf_rpc_server_options {
  const char *url;             /* copied */
  int handler_threads;         /* >= 1 */
  int64_t max_msg_bytes;       /* > 0: NNG's receive limit, set before listening */
  int max_calls;               /* [1, 65536]: requests in progress at once */
  int max_connections;         /* >= 1: open connections; more are closed */
  int64_t idle_connection_ms;  /* >= 1: a connection idle this long is closed */
  /* The task this server is ("/job:worker/replica:0/task:1"; NULL or "":
   * none, and requests are not checked) and its incarnation. A request
   * whose `to` names another task gets FAILED_PRECONDITION "wrong task at
   * address: <url> is <self>, the request was for <to>"; one whose to_inc
   * is set and differs gets ABORTED naming both incarnations. Copied. */
  const char *self_task;
  uint64_t self_incarnation;
  int64_t stop_wait_ms;        /* >= 0: stop waits this long for unfinished calls */
  /* Methods served on the NNG thread that received them (NULL: none): a
   * method for which this returns true skips the hand-off to a handler
   * thread, saving a thread wake-up per request. Its handler then runs
   * with the thread marked responsive (tf_thread_set_responsive: a graph
   * started there runs only cheap nodes in place) and must neither block
   * nor run long work; it may finish the call in place or later. Called
   * with the server's arg, on NNG threads. */
  bool (*runs_inline)(void *arg, int method);
  tf_rpc_log_fn log;           /* NULL: lines go to stderr */
  void *log_arg;
  /* Authentication (auth.h): the keyring requests must be signed with
   * (NULL: the process's, tf_auth_process(); none there: requests are not
   * authenticated, and signed ones are refused as unsigned ones are by an
   * authenticating server). A request that fails is answered UNAUTHENTICATED
   * (unsigned) before its envelope is parsed, counted in
   * tf_rpc_auth_failures_total{reason} and logged at most once per peer
   * every 10 s; one whose key's role may not call the method
   * (tf_auth_method_role(method, auth_master)) gets PERMISSION_DENIED.
   * Replies to signed requests are signed with the request's key. */
  tf_auth *auth;
  bool auth_master;            /* the master's method roles, else a worker's */
  /* tls+tcp URLs: the TLS configuration (borrowed during start; NULL:
   * the process default, tf_tls_set_default). Ignored for other URLs. */
  const struct tf_tls_config *tls;
} tf_rpc_server_options;

/* Defaults for url: 4 handler threads, 256 MiB messages, 256 calls, 256
 * connections, 300000 ms idle, no identity, 5000 ms stop wait, stderr. */
void tf_rpc_server_options_init(tf_rpc_server_options *o, const char *url);

/* Listens on o->url and serves it with h. Errors name the URL:
 * INVALID_ARGUMENT for a bad URL or option (naming it and its value),
 * UNAVAILABLE "cannot listen on tcp://...: Address in use". */
tf_code tf_rpc_server_start(const tf_rpc_server_options *o, tf_rpc_handler h,
                            void *arg, tf_rpc_server **out, tf_status *st);

/* A handler that answers before returning: req is owned by the server;
 * returns the reply (ownership passes to the server), or NULL with st set
 * to send an error reply with st's code and message (NULL with st OK is
 * INTERNAL "the <Method> handler returned no reply"). It blocks a handler
 * thread for as long as it runs. */
typedef nng_msg *(*tf_rpc_sync_handler)(void *arg, const tf_wire_msg *req,
                                        tf_status *st);

/* tf_rpc_server_start with a synchronous handler adapted to the contract:
 * n_threads handler threads and as many calls in progress, max_msg_bytes
 * (>= 0; 0: 256 MiB), the other options at their defaults. */
tf_code tf_rpc_server_start_sync(const char *url, int n_threads,
                                 int64_t max_msg_bytes, tf_rpc_sync_handler h,
                                 void *arg, tf_rpc_server **out, tf_status *st);

/* The port the server listens on (tcp; resolves ":0"), else 0. */
int tf_rpc_server_port(const tf_rpc_server *s);

/* Stops: refuses new connections and requests (UNAVAILABLE "... is
 * stopping"), cancels receives and waiting retries, waits up to
 * stop_wait_ms for calls in progress to be finished by their owners (their
 * replies are still sent), then closes the socket and joins the handler
 * threads. Calls still unfinished then are a handler bug: each is logged,
 * and the memory they use stays until they are finished (a late finish
 * sends nothing and frees it). NULL-safe. Not from a handler thread or an
 * NNG callback. */
void tf_rpc_server_stop(tf_rpc_server *s);

/* Requests given to the handler, and requests rejected before it
 * (malformed, a reply sent as a request, wrong task or incarnation). */
uint64_t tf_rpc_server_served(const tf_rpc_server *s);
uint64_t tf_rpc_server_rejected(const tf_rpc_server *s);
/* Requests refused by authentication (also counted in rejected). */
uint64_t tf_rpc_server_auth_refused(const tf_rpc_server *s);

typedef struct tf_rpc_server_stats {
  uint64_t served, rejected;
  int calls;                  /* requests in progress (received, not yet answered and sent) */
  int connections;            /* open now */
  uint64_t connections_refused;  /* closed at once: max_connections reached */
  uint64_t connections_idle_closed;
  uint64_t retained_bytes;    /* replies kept for retries (at most 64 MiB) */
} tf_rpc_server_stats;
void tf_rpc_server_get_stats(const tf_rpc_server *s, tf_rpc_server_stats *out);

/* ---- client ------------------------------------------------------------- */

typedef struct tf_rpc_client tf_rpc_client;

typedef struct tf_rpc_client_options {
  const char *url;             /* copied */
  int64_t max_msg_bytes;       /* >= 0: receive limit for replies (0: none) */
  /* The task expected at url (NULL or "": any): a reply whose `from` is
   * another task fails the call with FAILED_PRECONDITION "wrong task at
   * address: <url> answered as <from>, expected <task>". Copied. */
  const char *expect_task;
  int pool;                    /* >= 0: idle (context, aio) pairs kept; 0: 16 */
  /* Try one connect before returning (a command-line tool's one call): a
   * peer that refuses it (or an ipc path that does not exist) fails
   * tf_rpc_client_open at once with UNAVAILABLE naming the URL and the
   * cause, instead of the call timing out. A connect that is merely slow
   * (over 100 ms) is left to the call's deadline. tcp:// with a numeric
   * host, ipc:// and tls+tcp:// (which completes a TLS handshake: a
   * certificate refused either way fails at once with UNAVAILABLE "TLS
   * handshake failed (...)") only. */
  bool dial_now;
  /* Signs requests with the keyring's first key and accepts only replies
   * signed with it that answer them (NULL: the process's keyring,
   * tf_auth_process(); none: unsigned). An unsigned UNAUTHENTICATED error
   * reply (the server refused the request) is returned as that error. */
  tf_auth *auth;
  /* tls+tcp URLs: as tf_rpc_server_options.tls (borrowed during open). */
  const struct tf_tls_config *tls;
} tf_rpc_client_options;

/* A client; dialling happens in the background (unless dial_now), so an
 * absent peer shows up as calls that time out. INVALID_ARGUMENT for a bad
 * URL or option. */
tf_code tf_rpc_client_open(const tf_rpc_client_options *o, tf_rpc_client **out,
                           tf_status *st);
/* tf_rpc_client_open with only url and max_msg_bytes set. */
tf_code tf_rpc_client_new(const char *url, int64_t max_msg_bytes,
                          tf_rpc_client **out, tf_status *st);
/* Closes the client: calls in flight end with UNAVAILABLE. NULL-safe; may
 * be called from a done callback (the close then finishes on a thread of
 * its own). */
void tf_rpc_client_free(tf_rpc_client *c);
const char *tf_rpc_client_url(const tf_rpc_client *c);

/* Sends req (ownership taken) and waits up to timeout_ms (> 0) for the
 * reply, on the calling thread (its own pooled aio). A reply whose header
 * has a non-OK code becomes that status (code and message intact) and no
 * reply is returned. No reply in time: DEADLINE_EXCEEDED "<Method> to
 * <url>: no reply within N ms"; transport failures: UNAVAILABLE naming the
 * URL. */
tf_code tf_rpc_call(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                    tf_wire_msg **reply, tf_status *st);

/* As tf_rpc_call without blocking: done runs exactly once, on an NNG
 * thread (or in the caller for immediate failures), with the reply (owned
 * by done) or NULL and a non-OK status. */
typedef void (*tf_rpc_done)(void *arg, const tf_status *st, tf_wire_msg *reply);
void tf_rpc_call_async(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                       tf_rpc_done done, void *arg);

/* Idle (context, aio) pairs the client keeps (internal: tests). */
int tf__rpc_client_idle_pairs(tf_rpc_client *c);

/* A fresh non-zero 64-bit request id (random start, then increments). */
uint64_t tf_rpc_new_request_id(void);

#endif
