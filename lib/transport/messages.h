/* messages.h: the typed bodies of every request and reply (docs/wire.md,
 * "Methods"). Each body with content has a struct T and three functions:
 *
 *   void    T_encode(tf_wire_writer *w, const T *m)   packs the body
 *   tf_code T_decode(const tf_wire_msg *r, T *out, tf_status *st)
 *   void    T_fini(T *m)
 *
 * Decoding is the one place where a body from a peer is read: it checks
 * the message's method and direction, that the body is a map with str
 * keys (unknown keys are ignored, a known key twice is refused), every
 * field's type and range, every list's length against the caps below, and
 * every tensor (tf_wire_unpack_tensor). A bad body is INVALID_ARGUMENT
 * naming the method and the field ("RunStep: feeds[2] is not [name,
 * tensor]", "RunGraph: field 'handle' is missing"). The services never
 * read msgpack themselves.
 *
 * Ownership. A decoded struct owns its strings and arrays (copied out of
 * the message, NUL-terminated; a str holding a NUL byte is refused) and
 * one reference to each tensor in it; T_fini releases them (and may be
 * called on a zeroed struct). A caller may take a tensor by setting its
 * slot to NULL. Binary fields (graphs) are borrowed from the message and
 * valid only while r lives. On error, *out is left empty (T_fini is a
 * no-op). A struct filled by hand for encoding belongs to its builder,
 * which must not pass it to T_fini; encoding borrows everything in it.
 *
 * Encoding packs exactly the bytes documented in docs/wire.md (maps
 * through tf__mp_map); tensors go in through tf_wire_pack_tensor, whose
 * failures tf_wire_finish reports. A list or string over its cap (which
 * the receiver would refuse) is packed empty and recorded in the writer
 * (tf_wire_writer_fail): tf_wire_finish fails with INVALID_ARGUMENT naming
 * the field and the cap, and nothing is sent.
 *
 * msg_worker.c: the worker service's graph and step messages; msg_master.c:
 * the master's session and step messages; msg_status.c: GetStatus,
 * ListDevices, ClusterStatus; msg_util.c: the shared decoding helpers. */
#ifndef TF_TRANSPORT_MESSAGES_H
#define TF_TRANSPORT_MESSAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/transport/wire.h"
#include "tf/status.h"
#include "tf/tensor.h"

/* The master's task name (the spec has exactly one master task). */
#define TF_MSG_MASTER_TASK "/job:master/replica:0/task:0"

/* Caps on what one body may hold. A body over a cap is refused with
 * INVALID_ARGUMENT naming the field, the count and the cap. */
#define TF_MSG_MAX_TENSORS 65536        /* args, rets, feeds, fetches */
#define TF_MSG_MAX_NAMES 65536          /* fetch and target names, containers */
#define TF_MSG_MAX_TIMINGS (1 << 20)    /* traced nodes in a RunGraph reply */
#define TF_MSG_MAX_DEVICES 65536        /* devices and tasks in status replies */
#define TF_MSG_MAX_STR_BYTES (64 << 10) /* one name, key or message */

/* Memory a decoded struct owns (private: freed by its T_fini). */
typedef struct tf_msg_mem {
  struct tf__msg_block *head;
} tf_msg_mem;

/* A writer for the OK reply to req, sent by task self (incarnation
 * self_inc; "" and 0 for a process that is no task): the request's method
 * and ids echoed, from = self, to = the requester's from. */
tf_wire_writer *tf_msg_reply_writer(const tf_wire_msg *req, const char *self,
                                    uint64_t self_inc);

/* ==== worker service (msg_worker.c) ===================================== */

/* RegisterGraph request {graph: bin}: tf_graph_to_msgpack bytes. */
typedef struct tf_msg_register_graph_req {
  const void *graph; /* borrowed from the message */
  size_t graph_len;
} tf_msg_register_graph_req;
void tf_msg_register_graph_req_encode(tf_wire_writer *w,
                                      const tf_msg_register_graph_req *m);
tf_code tf_msg_register_graph_req_decode(const tf_wire_msg *r,
                                         tf_msg_register_graph_req *out,
                                         tf_status *st);
void tf_msg_register_graph_req_fini(tf_msg_register_graph_req *m);

/* RegisterGraph reply {handle: u64}. */
typedef struct tf_msg_register_graph_reply {
  uint64_t handle;
} tf_msg_register_graph_reply;
void tf_msg_register_graph_reply_encode(tf_wire_writer *w,
                                        const tf_msg_register_graph_reply *m);
tf_code tf_msg_register_graph_reply_decode(const tf_wire_msg *r,
                                           tf_msg_register_graph_reply *out,
                                           tf_status *st);
void tf_msg_register_graph_reply_fini(tf_msg_register_graph_reply *m);

/* RunGraph request {handle, args: [desc...], n_rets, trace: bool}. */
typedef struct tf_msg_run_graph_req {
  uint64_t handle;
  int n_args;        /* <= TF_MSG_MAX_TENSORS */
  tf_tensor **args;
  int n_rets;        /* 0..TF_MSG_MAX_TENSORS */
  bool trace;
  tf_msg_mem mem;
} tf_msg_run_graph_req;
void tf_msg_run_graph_req_encode(tf_wire_writer *w, const tf_msg_run_graph_req *m);
tf_code tf_msg_run_graph_req_decode(const tf_wire_msg *r, tf_msg_run_graph_req *out,
                                    tf_status *st);
void tf_msg_run_graph_req_fini(tf_msg_run_graph_req *m);

/* One traced node: its name and when it ran (end_ns >= start_ns). */
typedef struct tf_msg_timing {
  const char *node;
  int64_t start_ns, end_ns;
} tf_msg_timing;

/* RunGraph reply {rets: [desc | nil...], timings: [[node, start, end]...]}.
 * A NULL ret is a dead value (nil on the wire). */
typedef struct tf_msg_run_graph_reply {
  int n_rets;        /* <= TF_MSG_MAX_TENSORS */
  tf_tensor **rets;
  int n_timings;     /* <= TF_MSG_MAX_TIMINGS */
  tf_msg_timing *timings;
  tf_msg_mem mem;
} tf_msg_run_graph_reply;
void tf_msg_run_graph_reply_encode(tf_wire_writer *w, const tf_msg_run_graph_reply *m);
tf_code tf_msg_run_graph_reply_decode(const tf_wire_msg *r, tf_msg_run_graph_reply *out,
                                      tf_status *st);
void tf_msg_run_graph_reply_fini(tf_msg_run_graph_reply *m);

/* TensorPush request {key, dead: bool, tensor: desc | nil}: tensor is set
 * exactly when the value is not dead. */
typedef struct tf_msg_tensor_push_req {
  const char *key;   /* a rendezvous key (tf_rdv_key_make) */
  bool dead;
  tf_tensor *tensor; /* NULL when dead */
  tf_msg_mem mem;
} tf_msg_tensor_push_req;
void tf_msg_tensor_push_req_encode(tf_wire_writer *w, const tf_msg_tensor_push_req *m);
tf_code tf_msg_tensor_push_req_decode(const tf_wire_msg *r, tf_msg_tensor_push_req *out,
                                      tf_status *st);
void tf_msg_tensor_push_req_fini(tf_msg_tensor_push_req *m);

/* AbortStep request {code, msg}: code is an error code (1..16). */
typedef struct tf_msg_abort_step_req {
  tf_code code;
  const char *msg;
  tf_msg_mem mem;
} tf_msg_abort_step_req;
void tf_msg_abort_step_req_encode(tf_wire_writer *w, const tf_msg_abort_step_req *m);
tf_code tf_msg_abort_step_req_decode(const tf_wire_msg *r, tf_msg_abort_step_req *out,
                                     tf_status *st);
void tf_msg_abort_step_req_fini(tf_msg_abort_step_req *m);

/* DeregisterGraph request {handle}. */
typedef struct tf_msg_deregister_graph_req {
  uint64_t handle;
} tf_msg_deregister_graph_req;
void tf_msg_deregister_graph_req_encode(tf_wire_writer *w,
                                        const tf_msg_deregister_graph_req *m);
tf_code tf_msg_deregister_graph_req_decode(const tf_wire_msg *r,
                                           tf_msg_deregister_graph_req *out,
                                           tf_status *st);
void tf_msg_deregister_graph_req_fini(tf_msg_deregister_graph_req *m);

/* WorkerReset request {containers: [str]} (none: the default container). */
typedef struct tf_msg_worker_reset_req {
  int n_containers;  /* <= TF_MSG_MAX_NAMES */
  const char **containers;
  tf_msg_mem mem;
} tf_msg_worker_reset_req;
void tf_msg_worker_reset_req_encode(tf_wire_writer *w, const tf_msg_worker_reset_req *m);
tf_code tf_msg_worker_reset_req_decode(const tf_wire_msg *r, tf_msg_worker_reset_req *out,
                                       tf_status *st);
void tf_msg_worker_reset_req_fini(tf_msg_worker_reset_req *m);

/* ==== master service (msg_master.c) ===================================== */

/* CreateSession request {graph: bin} or {} (has_graph false). */
typedef struct tf_msg_create_session_req {
  bool has_graph;
  const void *graph; /* borrowed from the message */
  size_t graph_len;
} tf_msg_create_session_req;
void tf_msg_create_session_req_encode(tf_wire_writer *w,
                                      const tf_msg_create_session_req *m);
tf_code tf_msg_create_session_req_decode(const tf_wire_msg *r,
                                         tf_msg_create_session_req *out,
                                         tf_status *st);
void tf_msg_create_session_req_fini(tf_msg_create_session_req *m);

/* CreateSession reply {session: u64}. */
typedef struct tf_msg_create_session_reply {
  uint64_t session;
  /* limits.session_ttl_ms: the session ends when no request (KeepAlive
   * included) refreshes it for this long. Optional (0: absent). */
  int64_t session_ttl_ms;
  /* The master's max_message_mb in bytes: requests larger than this are
   * refused by its transport, so a client checks before sending. Optional
   * (0: absent). */
  int64_t max_message_bytes;
} tf_msg_create_session_reply;
void tf_msg_create_session_reply_encode(tf_wire_writer *w,
                                        const tf_msg_create_session_reply *m);
tf_code tf_msg_create_session_reply_decode(const tf_wire_msg *r,
                                           tf_msg_create_session_reply *out,
                                           tf_status *st);
void tf_msg_create_session_reply_fini(tf_msg_create_session_reply *m);

/* ExtendSession request {graph: bin}: the new nodes. */
typedef struct tf_msg_extend_session_req {
  const void *graph; /* borrowed from the message */
  size_t graph_len;
} tf_msg_extend_session_req;
void tf_msg_extend_session_req_encode(tf_wire_writer *w,
                                      const tf_msg_extend_session_req *m);
tf_code tf_msg_extend_session_req_decode(const tf_wire_msg *r,
                                         tf_msg_extend_session_req *out,
                                         tf_status *st);
void tf_msg_extend_session_req_fini(tf_msg_extend_session_req *m);

/* RunStep request {feeds: [[name, desc]...], fetches: [str], targets:
 * [str], trace: bool}. */
typedef struct tf_msg_run_step_req {
  int n_feeds;       /* <= TF_MSG_MAX_TENSORS */
  const char **feed_names;
  tf_tensor **feed_values;
  int n_fetches;     /* <= TF_MSG_MAX_TENSORS */
  const char **fetches;
  int n_targets;     /* <= TF_MSG_MAX_NAMES */
  const char **targets;
  bool trace;
  tf_msg_mem mem;
} tf_msg_run_step_req;
void tf_msg_run_step_req_encode(tf_wire_writer *w, const tf_msg_run_step_req *m);
tf_code tf_msg_run_step_req_decode(const tf_wire_msg *r, tf_msg_run_step_req *out,
                                   tf_status *st);
void tf_msg_run_step_req_fini(tf_msg_run_step_req *m);

/* RunStep reply {fetches: [desc...]}, in the request's fetch order. */
typedef struct tf_msg_run_step_reply {
  int n_fetches;     /* <= TF_MSG_MAX_TENSORS */
  tf_tensor **fetches;
  tf_msg_mem mem;
} tf_msg_run_step_reply;
void tf_msg_run_step_reply_encode(tf_wire_writer *w, const tf_msg_run_step_reply *m);
tf_code tf_msg_run_step_reply_decode(const tf_wire_msg *r, tf_msg_run_step_reply *out,
                                     tf_status *st);
void tf_msg_run_step_reply_fini(tf_msg_run_step_reply *m);

/* Reset request {containers: [str]}: WorkerReset on every task. */
typedef struct tf_msg_reset_req {
  int n_containers;  /* <= TF_MSG_MAX_NAMES */
  const char **containers;
  tf_msg_mem mem;
} tf_msg_reset_req;
void tf_msg_reset_req_encode(tf_wire_writer *w, const tf_msg_reset_req *m);
tf_code tf_msg_reset_req_decode(const tf_wire_msg *r, tf_msg_reset_req *out,
                                tf_status *st);
void tf_msg_reset_req_fini(tf_msg_reset_req *m);

/* ==== status (msg_status.c) ============================================= */

/* A device in a GetStatus reply {name, type, incarnation}; decoding also
 * takes a plain str (the name; type "" and incarnation 0) and a map with
 * only "name". */
typedef struct tf_msg_status_device {
  const char *name;
  const char *type;
  uint64_t incarnation;
} tf_msg_status_device;

/* Which counters a GetStatus reply carries (tf_msg_get_status_reply.has):
 * a worker sends running_steps, step_tables, buffered_bytes, graphs and
 * steps_run; the master sessions and running_steps. */
enum {
  TF_MSG_STATUS_SESSIONS = 1 << 0,
  TF_MSG_STATUS_RUNNING_STEPS = 1 << 1,
  TF_MSG_STATUS_STEP_TABLES = 1 << 2,
  TF_MSG_STATUS_BUFFERED_BYTES = 1 << 3,
  TF_MSG_STATUS_GRAPHS = 1 << 4,
  TF_MSG_STATUS_STEPS_RUN = 1 << 5,
  TF_MSG_STATUS_WORKER = TF_MSG_STATUS_RUNNING_STEPS | TF_MSG_STATUS_STEP_TABLES |
                         TF_MSG_STATUS_BUFFERED_BYTES | TF_MSG_STATUS_GRAPHS |
                         TF_MSG_STATUS_STEPS_RUN,
  TF_MSG_STATUS_MASTER = TF_MSG_STATUS_SESSIONS | TF_MSG_STATUS_RUNNING_STEPS,
};

/* GetStatus reply {job, task, incarnation, devices: [...], counters...,
 * tensor_stream?}. Counters are >= 0; those not in has are 0 and not
 * packed. tensor_stream: the URL of the task's tensor-stream server
 * (tensor_stream.h), packed when non-empty; "" when decoding a reply
 * without it (an older peer, or a task that serves no stream). */
typedef struct tf_msg_get_status_reply {
  const char *job;
  int task;          /* >= 0 */
  uint64_t incarnation;
  int n_devices;     /* <= TF_MSG_MAX_DEVICES */
  tf_msg_status_device *devices;
  unsigned has;      /* TF_MSG_STATUS_* */
  int64_t sessions, running_steps, step_tables, buffered_bytes, graphs;
  uint64_t steps_run;
  const char *tensor_stream; /* NULL or "": none */
  tf_msg_mem mem;
} tf_msg_get_status_reply;
void tf_msg_get_status_reply_encode(tf_wire_writer *w, const tf_msg_get_status_reply *m);
tf_code tf_msg_get_status_reply_decode(const tf_wire_msg *r, tf_msg_get_status_reply *out,
                                       tf_status *st);
void tf_msg_get_status_reply_fini(tf_msg_get_status_reply *m);

/* A device as ListDevices reports it {name, type, incarnation, task, url};
 * only name is required when decoding (the others default to "" and 0). */
typedef struct tf_msg_device {
  const char *name;  /* "/job:ps/replica:0/task:0/device:CPU:0" */
  const char *type;  /* "CPU" */
  uint64_t incarnation;
  const char *task;  /* "/job:ps/replica:0/task:0" */
  const char *url;
} tf_msg_device;

/* ListDevices reply {devices: [...]}: the devices of the tasks up. */
typedef struct tf_msg_list_devices_reply {
  int n_devices;     /* <= TF_MSG_MAX_DEVICES */
  tf_msg_device *devices;
  tf_msg_mem mem;
} tf_msg_list_devices_reply;
void tf_msg_list_devices_reply_encode(tf_wire_writer *w,
                                      const tf_msg_list_devices_reply *m);
tf_code tf_msg_list_devices_reply_decode(const tf_wire_msg *r,
                                         tf_msg_list_devices_reply *out,
                                         tf_status *st);
void tf_msg_list_devices_reply_fini(tf_msg_list_devices_reply *m);

/* One task of a ClusterStatus reply {job, task, url, up, incarnation,
 * devices: [str], last_ok_ms, error}. job, task and up are required when
 * decoding; url and error default to "", incarnation to 0, last_ok_ms to
 * -1 (never), devices to none (a device may also be a map with "name"). */
typedef struct tf_msg_task_status {
  const char *job;
  int task;          /* >= 0 */
  const char *url;
  bool up;
  uint64_t incarnation;
  int n_devices;     /* <= TF_MSG_MAX_DEVICES */
  const char **devices;
  int64_t last_ok_ms; /* age of the last good answer, >= -1 (never) */
  const char *error;  /* why it is down, "" when up */
} tf_msg_task_status;

/* ClusterStatus reply {tasks: [...]}, the master first. */
typedef struct tf_msg_cluster_status_reply {
  int n_tasks;       /* <= TF_MSG_MAX_DEVICES */
  tf_msg_task_status *tasks;
  tf_msg_mem mem;
} tf_msg_cluster_status_reply;
void tf_msg_cluster_status_reply_encode(tf_wire_writer *w,
                                        const tf_msg_cluster_status_reply *m);
tf_code tf_msg_cluster_status_reply_decode(const tf_wire_msg *r,
                                           tf_msg_cluster_status_reply *out,
                                           tf_status *st);
void tf_msg_cluster_status_reply_fini(tf_msg_cluster_status_reply *m);

#endif
