/* tensor_stream.h: large tensors between tasks over NNG byte streams
 * (docs/wire.md, "Tensor stream").
 *
 * The message path (wire.h) copies a tensor into an NNG message at the
 * sender and NNG allocates a fresh message for it at the receiver. This
 * path does neither: a client writes each frame straight from the
 * tensor's buffer (scatter/gather: prefix, header, payload) and the
 * server reads the payload straight into a tensor allocated for it on
 * the CPU allocator. A frame is
 *   "TFT" 0x01 | u32 LE header length | u64 LE payload length |
 *   msgpack header {step, key, dead, dt, shape, from, from_inc, to,
 *   to_inc} | payload bytes
 * The server validates every field before it allocates anything (header
 * length <= 64 KiB, payload length <= max_tensor_bytes and equal to the
 * dtype's size times the element count, a numeric or bool dtype, a valid
 * shape, the frame addressed to this task); a frame that fails closes
 * its connection and is counted. String tensors are not carried: they
 * stay on the message path. tcp:// and tls+tcp:// URLs are supported
 * (tls+tcp: mutual TLS with the options' or the process's TLS
 * configuration, tls.h). */
#ifndef TF_TRANSPORT_TENSOR_STREAM_H
#define TF_TRANSPORT_TENSOR_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/tensor.h"

struct tf_tls_config; /* tls.h */

/* One frame's header. Strings are borrowed (NULL sends ""). */
typedef struct tf_tstream_hdr {
  uint64_t step_id;
  const char *key;      /* the rendezvous key (non-empty) */
  bool is_dead;         /* a dead value: no tensor, no payload */
  /* The tensor's dtype and shape: filled in by the receiver. A sender's
   * are ignored (taken from its tensor; TF_DTYPE_INVALID and rank 0 for a
   * dead value). */
  tf_dtype dtype;
  tf_shape shape;
  /* Identity as in tf_wire_header: the sending task and its incarnation,
   * the task the frame is meant for (non-empty) and the incarnation the
   * sender knows it by (0: any). */
  const char *from;
  uint64_t from_inc;
  const char *to;
  uint64_t to_inc;
} tf_tstream_hdr;

/* ---- server ------------------------------------------------------------- */

typedef struct tf_tstream_server tf_tstream_server;

/* Called once per valid frame, on the server's thread for that
 * connection (never an NNG callback thread), frames of one connection in
 * order. h and its strings are valid during the call; t is the received
 * tensor (NULL for a dead value), borrowed: take a reference to keep it.
 * A non-OK return (with st set) is counted and the connection stays open:
 * the frame was well formed, the receiver did not want it. It may block,
 * but tf_tstream_server_stop waits for it. */
typedef tf_code (*tf_tstream_deliver)(void *arg, const tf_tstream_hdr *h,
                                      tf_tensor *t, tf_status *st);

typedef struct tf_tstream_server_opts {
  const char *url;           /* tcp:// or tls+tcp://host:port; port 0 picks a free one */
  uint64_t max_tensor_bytes; /* > 0: larger payloads are refused */
  int max_connections;       /* > 0: more are closed as they arrive */
  int64_t idle_ms;           /* > 0: no frame begun for this long closes */
  int64_t io_timeout_ms;     /* > 0: a frame's bytes stalling this long close */
  const char *self_task;     /* non-empty: frames for another task are refused */
  uint64_t self_incarnation; /* frames naming another (non-zero) one too */
  /* Optional: one line per kind of refusal and peer (a peer that keeps
   * sending bad frames is logged once). Called on server threads. */
  void (*log)(void *log_arg, const char *line);
  void *log_arg;
  /* Authentication (auth.h): a connection must start with a hello signed
   * with a task key of this keyring (NULL: the process's,
   * tf_auth_process(); none: no hello is expected), else it is closed,
   * counted (auth_refused) and logged once per peer. */
  struct tf_auth *auth;
  /* tls+tcp: the TLS configuration (borrowed during start; NULL: the
   * process default). A failed handshake closes the connection, is
   * counted (tf_rpc_tls_handshake_failures_total) and logged at most once
   * per peer host per 10 s. */
  const struct tf_tls_config *tls;
} tf_tstream_server_opts;

/* Defaults: max_tensor_bytes 256 MiB, max_connections 256, idle_ms 300000,
 * io_timeout_ms 30000; url, self_task, log NULL; self_incarnation 0. */
tf_tstream_server_opts tf_tstream_server_opts_default(void);

/* Listens on o->url (strings copied) and serves every connection on a
 * thread of its own, calling deliver(arg, ...) per frame. INVALID_ARGUMENT
 * naming the option for a bad one; UNIMPLEMENTED for schemes other than
 * tcp and tls+tcp; FAILED_PRECONDITION for tls+tcp without a TLS
 * configuration; UNAVAILABLE "cannot listen on <url>: <reason>". */
tf_code tf_tstream_server_start(const tf_tstream_server_opts *o,
                                tf_tstream_deliver deliver, void *arg,
                                tf_tstream_server **out, tf_status *st);
/* The URL with the port bound (a port 0 resolved). */
const char *tf_tstream_server_url(const tf_tstream_server *s);
int tf_tstream_server_port(const tf_tstream_server *s);
/* Stops accepting, closes every connection (a frame half read is dropped),
 * waits for the connection threads (and the deliver calls they are in) to
 * end, frees. NULL-safe. Not from deliver. */
void tf_tstream_server_stop(tf_tstream_server *s);

typedef struct tf_tstream_server_stats {
  uint64_t accepted;            /* connections taken */
  uint64_t refused_connections; /* closed at once: max_connections open */
  uint64_t frames;              /* delivered (deliver called) */
  uint64_t payload_bytes;       /* in delivered frames */
  uint64_t deliver_errors;      /* deliver returned non-OK */
  uint64_t bad_frames;          /* failed validation: connection closed */
  uint64_t wrong_task;          /* addressed to another task: closed */
  uint64_t no_memory;           /* a tensor could not be allocated: closed */
  uint64_t broken;              /* peer gone or stalled inside a frame */
  uint64_t idle_closed;         /* no frame begun within idle_ms */
  uint64_t auth_refused;        /* no valid hello: closed */
  int open_connections;
} tf_tstream_server_stats;

tf_tstream_server_stats tf_tstream_server_stats_get(tf_tstream_server *s);

/* ---- client ------------------------------------------------------------- */

typedef struct tf_tstream_client tf_tstream_client;

typedef struct tf_tstream_client_opts {
  int max_connections;     /* > 0: frames written at once to this peer */
  int max_queued;          /* > 0: frames waiting beyond those are refused */
  int64_t dial_timeout_ms; /* > 0 */
  int64_t io_timeout_ms;   /* > 0: no write progress this long fails */
  int64_t idle_ms;         /* > 0: a connection unused this long is closed;
                              keep it below the server's idle_ms */
  /* tls+tcp: the TLS configuration (borrowed during tf_tstream_client_new;
   * NULL: the process default). A refused handshake fails frames with
   * UNAVAILABLE "... TLS handshake failed (...)". */
  const struct tf_tls_config *tls;
} tf_tstream_client_opts;

/* Defaults: max_connections 2, max_queued 1024, dial_timeout_ms 5000,
 * io_timeout_ms 30000, idle_ms 60000. */
tf_tstream_client_opts tf_tstream_client_opts_default(void);

/* A client for the server at url (tcp:// or tls+tcp://host:port); o NULL:
 * defaults. When the process has a keyring (tf_auth_process()), each
 * connection starts with a hello signed with its first key. Nothing is
 * dialled until the first send. INVALID_ARGUMENT for a bad URL or option
 * (a tls+tcp host that is an IP address), UNIMPLEMENTED for other schemes,
 * FAILED_PRECONDITION for tls+tcp without a TLS configuration. */
tf_code tf_tstream_client_new(const char *url, const tf_tstream_client_opts *o,
                              tf_tstream_client **out, tf_status *st);
/* Fails the frames still queued (CANCELLED) and those being written
 * (UNAVAILABLE), waits for their done calls to return, frees. NULL-safe.
 * Not from a done callback. */
void tf_tstream_client_free(tf_tstream_client *c);
const char *tf_tstream_client_url(const tf_tstream_client *c);

/* Called exactly once per send: OK once every byte of the frame has been
 * handed to the kernel (not when the receiver has it), else the failure:
 * INVALID_ARGUMENT (string dtype, empty key or to, dead with a tensor),
 * RESOURCE_EXHAUSTED (max_queued), UNAVAILABLE (cannot connect,
 * connection reset or closed by the peer, client freed), DEADLINE_EXCEEDED
 * (dial or write stalled past its timeout), CANCELLED (freed while
 * queued). Messages name the URL and the key. Runs on an NNG thread, or
 * in the caller for failures found at once; it must not block and must
 * not free the client. */
typedef void (*tf_tstream_done)(void *arg, const tf_status *st);

/* Queues one frame for h (strings copied) carrying t (a reference is held
 * until done; NULL iff h->is_dead). Frames on one connection are written
 * one after another, in queue order; with max_connections > 1 two frames
 * may be written at once on different connections, so frames do not
 * arrive in queue order. Connections are dialled on demand and redialled
 * after a failure. */
void tf_tstream_send(tf_tstream_client *c, const tf_tstream_hdr *h,
                     tf_tensor *t, tf_tstream_done done, void *arg);

#endif
