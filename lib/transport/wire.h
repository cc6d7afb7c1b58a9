/* wire.h: the messages daemons exchange (docs/wire.md).
 *
 * A message is one NNG message whose body is
 *   "TFW" 0x01 | u32 LE n | n bytes of msgpack: [header map, body] | pad |
 *   tensor payloads
 * The header carries version, method, request id, session and step ids,
 * the deadline (milliseconds left when sent; 0: none), a reserved
 * authentication field (always nil: authentication is not supported) and,
 * in replies, the status code and message. The body is method-specific
 * msgpack (maps packed with tf__mp_map, so their entry counts are checked).
 * Tensors are packed into the body as descriptors {dt, shape, off, len}
 * whose bytes follow the msgpack part, each at a 64-byte aligned offset:
 * they are copied once into the message and never encoded element by
 * element (string tensors, whose bytes are not flat, are packed in msgpack
 * form). There is no size limit short of memory. */
#ifndef TF_TRANSPORT_WIRE_H
#define TF_TRANSPORT_WIRE_H

#include <msgpack.h>
#include <nng/nng.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/refcount.h"
#include "lib/core/serialize/msgpack_map.h"
#include "tf/status.h"
#include "tf/tensor.h"

#define TF_WIRE_VERSION 1

/* Methods. Worker service 1..31, master service 32..63. */
typedef enum tf_method {
  TF_M_GET_STATUS = 1,     /* -> devices, incarnation, job, task, counters */
  TF_M_REGISTER_GRAPH = 2, /* graph -> graph handle */
  TF_M_RUN_GRAPH = 3,      /* handle, step, args -> retvals */
  TF_M_TENSOR_PUSH = 4,    /* step, key, is_dead, tensor (sender push) */
  TF_M_CLEANUP_GRAPH = 5,  /* step: drop per-step state */
  TF_M_ABORT_STEP = 6,     /* step, status: cancel the step here */
  TF_M_DEREGISTER_GRAPH = 7,
  TF_M_WORKER_RESET = 8,   /* containers */
  TF_M_CREATE_SESSION = 32,
  TF_M_EXTEND_SESSION = 33,
  TF_M_RUN_STEP = 34,
  TF_M_CLOSE_SESSION = 35,
  TF_M_LIST_DEVICES = 36,
  TF_M_RESET = 37,
  TF_M_CLUSTER_STATUS = 38, /* the master's view of every task (tfctl health) */
  TF_M_KEEP_ALIVE = 39,     /* session (header), nil body: refreshes the session */
  TF_M_SUBMIT_JOB = 40,     /* job spec YAML -> job id (the master runs it) */
  TF_M_LIST_JOBS = 41,      /* -> every job the master keeps */
  TF_M_JOB_STATUS = 42,     /* job id -> its state and progress */
  TF_M_JOB_CONTROL = 43,    /* job id, pause|resume|cancel|step N|checkpoint|
                             * restore [checkpoint] -> status */
  TF_M_JOB_LOGS = 44,       /* job id, first line -> log lines */
  TF_M_JOB_CHECKPOINTS = 45, /* job id -> its checkpoint directory's checkpoints */
} tf_method;

/* The method's name ("RunGraph"), or "unknown". */
const char *tf_method_name(int method);

typedef struct tf_wire_header {
  int version;          /* TF_WIRE_VERSION */
  int method;           /* tf_method; a reply echoes its request's */
  uint64_t request_id;  /* 0: no retry detection */
  uint64_t session;     /* session handle, 0: none */
  uint64_t step_id;     /* 0: none */
  int64_t deadline_ms;  /* time left when sent; 0: no deadline */
  /* Identity: the sending task ("/job:worker/replica:0/task:1"; "" for a
   * client) and its incarnation (0 for a client), and the task the
   * message is meant for with the incarnation the sender knows it by
   * ("" and 0: whoever answers). A reply names its own task in from and
   * echoes the requester in to. Strings are borrowed (NULL packs as ""). */
  const char *from;
  uint64_t from_inc;
  const char *to;
  uint64_t to_inc;
  bool is_reply;
  int code;             /* replies: tf_code */
  const char *error;    /* replies: message ("" when OK); borrowed */
} tf_wire_header;

/* ---- writing ------------------------------------------------------------ */

typedef struct tf_wire_writer tf_wire_writer;

/* A writer for one message with header h (copied). */
tf_wire_writer *tf_wire_writer_new(const tf_wire_header *h);
/* The packer for the body: pack exactly one msgpack object (usually a
 * map, packed with tf__mp_map so its entry count is checked; included
 * here for that). Nothing packed: the body is nil. */
msgpack_packer *tf_wire_body(tf_wire_writer *w);
/* Packs a descriptor of t into the body at the packer's current position
 * and queues t's bytes as a payload (a reference is held until finish). */
void tf_wire_pack_tensor(tf_wire_writer *w, const tf_tensor *t);
/* Records st (not OK) as w's error unless one is recorded already:
 * tf_wire_finish then fails with it (the encoders of messages.h report a
 * list over its cap this way). The caller still packs one object. */
void tf_wire_writer_fail(tf_wire_writer *w, const tf_status *st);
/* Builds the NNG message (one copy of each payload) and frees w. */
tf_code tf_wire_finish(tf_wire_writer *w, nng_msg **out, tf_status *st);
void tf_wire_writer_free(tf_wire_writer *w);

/* A reply carrying only status st (code and message) for request req
 * (NULL: a request too malformed to have a header; method and ids 0).
 * Its identity is the request's swapped (from = req->to, to = req->from),
 * as for tf_wire_reply_writer. */
tf_code tf_wire_error_reply(const tf_wire_header *req, const tf_status *st,
                            nng_msg **out, tf_status *err);

/* ---- reading ------------------------------------------------------------ */

typedef struct tf_wire_msg {
  tf_wire_header h;
  msgpack_object body;   /* valid until tf_wire_msg_free */
  /* private */
  nng_msg *msg;
  msgpack_zone zone;
  size_t payload_start;  /* offset of the payload area in the NNG body */
  tf__refcount refs;     /* tf_wire_msg_free, and tensors aliasing it */
} tf_wire_msg;

/* Parses m (ownership taken, also on error). INVALID_ARGUMENT naming what
 * is wrong: "message too short (N bytes)", "bad magic", "unsupported wire
 * version V", "header: missing 'm'", "msgpack part of N bytes overruns the
 * M-byte message", ... */
tf_code tf_wire_parse(nng_msg *m, tf_wire_msg **out, tf_status *st);
/* Drops the caller's reference (NULL-safe): the message is freed once the
 * tensors aliasing it (tf_wire_unpack_tensor) are gone too. */
void tf_wire_msg_free(tf_wire_msg *r);
/* A writer for the OK reply to req (its method, request, session and step
 * ids echoed; from/to are the request's to/from). */
tf_wire_writer *tf_wire_reply_writer(const tf_wire_msg *req);
/* Makes a tensor from a descriptor packed by tf_wire_pack_tensor, checking
 * dtype, shape, that [off, off+len) lies in the payload area and matches
 * dtype x shape, and that off is a multiple of 64 (the writer aligns
 * every payload). INVALID_ARGUMENT naming the field otherwise ("tensor:
 * ..."; callers prefix which tensor).
 * Payloads of 64 KiB or more are not copied: the tensor aliases the
 * message (tf_tensor_wrap), which then lives until the tensor dies. */
tf_code tf_wire_unpack_tensor(const tf_wire_msg *r, const msgpack_object *desc,
                              tf_tensor **out, tf_status *st);

/* Body helpers: the value under key in a map (NULL if absent or not a
 * map), and typed getters that set INVALID_ARGUMENT "<what>: field 'key'
 * missing or not <type>" on a bad field. Strings are returned malloc'd. */
const msgpack_object *tf_wire_get(const msgpack_object *map, const char *key);
tf_code tf_wire_get_u64(const msgpack_object *map, const char *key,
                        const char *what, uint64_t *out, tf_status *st);
tf_code tf_wire_get_i64(const msgpack_object *map, const char *key,
                        const char *what, int64_t *out, tf_status *st);
tf_code tf_wire_get_bool(const msgpack_object *map, const char *key,
                         const char *what, bool *out, tf_status *st);
tf_code tf_wire_get_str(const msgpack_object *map, const char *key,
                        const char *what, char **out, tf_status *st);
/* An array field (possibly empty); NULL + INVALID_ARGUMENT if not one. */
const msgpack_object_array *tf_wire_get_array(const msgpack_object *map,
                                              const char *key,
                                              const char *what, tf_status *st);
/* The method in the header of a message built by tf_wire_finish, or -1
 * when it has none (internal: the RPC client names calls by it). */
int tf__wire_method_of(nng_msg *m);

/* Packs a NUL-terminated string (NULL packs as ""). */
void tf_wire_pack_str(msgpack_packer *pk, const char *s);
/* A copy of a msgpack str object (NULL if not a str). */
char *tf_wire_strdup(const msgpack_object *o);

#endif
