/* rpc.h: request/reply over NNG (req/rep sockets with contexts).
 *
 * A server binds one URL (tcp://host:port, ipc://path, inproc://name;
 * tls+tcp:// is not supported: it fails with UNIMPLEMENTED) and serves
 * it with n_threads threads, each owning one rep context: a thread takes a
 * request, runs the handler (which may block, e.g. RunGraph until the step
 * ends) and sends its reply, so n_threads requests run at once. Malformed
 * requests get an INVALID_ARGUMENT reply naming the problem; bytes that are
 * not NNG's protocol make NNG drop the connection. Requests with a non-zero
 * request id are executed once: a retry of a finished request gets the
 * retained reply (replies up to 1 MiB are retained for the last 1024 ids);
 * a retry of a running one waits for it (up to its deadline, else 30 s);
 * a retry whose reply was too large to retain gets ABORTED; an id reused
 * for another method gets INVALID_ARGUMENT. NNG's automatic resend is off:
 * callers retry explicitly with the same request id.
 * A message over the receiver's max_msg_bytes makes NNG drop the
 * connection: the caller sees UNAVAILABLE "Connection reset".
 * A client dials a URL in the background (reconnecting as needed) and makes
 * calls with a deadline; many calls may be in flight on one client. */
#ifndef TF_TRANSPORT_RPC_H
#define TF_TRANSPORT_RPC_H

#include <nng/nng.h>
#include <stdint.h>

#include "lib/transport/wire.h"
#include "tf/status.h"

typedef struct tf_rpc_server tf_rpc_server;

/* Handles req (owned by the server; freed after the handler returns) and
 * returns the reply message (ownership passes to the server), or NULL with
 * st set to send an error reply with st's code and message. */
typedef nng_msg *(*tf_rpc_handler)(void *arg, const tf_wire_msg *req,
                                   tf_status *st);

/* Listens on url with n_threads handler threads. max_msg_bytes: NNG's
 * receive limit (0: none). Errors name the URL: INVALID_ARGUMENT for a bad
 * URL, UNAVAILABLE "cannot listen on tcp://...: Address in use". */
tf_code tf_rpc_server_start(const char *url, int n_threads,
                            int64_t max_msg_bytes, tf_rpc_handler h, void *arg,
                            tf_rpc_server **out, tf_status *st);
/* The port the server listens on (tcp; resolves ":0"), else 0. */
int tf_rpc_server_port(const tf_rpc_server *s);
/* Stops listening, waits for running handlers, frees. NULL-safe. */
void tf_rpc_server_stop(tf_rpc_server *s);
/* Requests served and requests rejected as malformed. */
uint64_t tf_rpc_server_served(const tf_rpc_server *s);
uint64_t tf_rpc_server_rejected(const tf_rpc_server *s);

typedef struct tf_rpc_client tf_rpc_client;

/* A client for url; dialling happens in the background, so an absent peer
 * shows up as calls that time out. INVALID_ARGUMENT for a bad URL. */
tf_code tf_rpc_client_new(const char *url, int64_t max_msg_bytes,
                          tf_rpc_client **out, tf_status *st);
/* Closes the client: calls in flight end with UNAVAILABLE. NULL-safe; may
 * be called from a done callback (the close then finishes on a thread of
 * its own). */
void tf_rpc_client_free(tf_rpc_client *c);
const char *tf_rpc_client_url(const tf_rpc_client *c);

/* Sends req (ownership taken) and waits up to timeout_ms (> 0) for the
 * reply. A reply whose header has a non-OK code becomes that status (code
 * and message intact) and no reply is returned. No reply in time:
 * DEADLINE_EXCEEDED "<Method> to <url>: no reply within N ms"; transport
 * failures: UNAVAILABLE naming the URL. */
tf_code tf_rpc_call(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                    tf_wire_msg **reply, tf_status *st);

/* As tf_rpc_call without blocking: done runs exactly once, on an NNG
 * thread (or in the caller for immediate failures), with the reply (owned
 * by done) or NULL and a non-OK status. */
typedef void (*tf_rpc_done)(void *arg, const tf_status *st, tf_wire_msg *reply);
void tf_rpc_call_async(tf_rpc_client *c, nng_msg *req, int64_t timeout_ms,
                       tf_rpc_done done, void *arg);

/* A fresh non-zero 64-bit request id (random start, then increments). */
uint64_t tf_rpc_new_request_id(void);

#endif
