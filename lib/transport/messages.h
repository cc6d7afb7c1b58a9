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
 * ListDevices, ClusterStatus; msg_job.c: the job methods (SubmitJob,
 * ListJobs, JobStatus, JobControl, JobLogs, JobCheckpoints); msg_util.c:
 * the shared
 * decoding helpers. */
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
 * steps_run; the master sessions and running_steps (and steps_run); both
 * send the process's traffic and memory (TF_MSG_STATUS_USAGE), which
 * peers older than those bits leave out. */
enum {
  TF_MSG_STATUS_SESSIONS = 1 << 0,
  TF_MSG_STATUS_RUNNING_STEPS = 1 << 1,
  TF_MSG_STATUS_STEP_TABLES = 1 << 2,
  TF_MSG_STATUS_BUFFERED_BYTES = 1 << 3,
  TF_MSG_STATUS_GRAPHS = 1 << 4,
  TF_MSG_STATUS_STEPS_RUN = 1 << 5,
  TF_MSG_STATUS_BYTES_SENT = 1 << 6,
  TF_MSG_STATUS_BYTES_RECEIVED = 1 << 7,
  TF_MSG_STATUS_MEM_IN_USE = 1 << 8,
  TF_MSG_STATUS_MEM_PEAK = 1 << 9,
  TF_MSG_STATUS_WORKER = TF_MSG_STATUS_RUNNING_STEPS | TF_MSG_STATUS_STEP_TABLES |
                         TF_MSG_STATUS_BUFFERED_BYTES | TF_MSG_STATUS_GRAPHS |
                         TF_MSG_STATUS_STEPS_RUN,
  TF_MSG_STATUS_MASTER = TF_MSG_STATUS_SESSIONS | TF_MSG_STATUS_RUNNING_STEPS,
  TF_MSG_STATUS_USAGE = TF_MSG_STATUS_BYTES_SENT | TF_MSG_STATUS_BYTES_RECEIVED |
                        TF_MSG_STATUS_MEM_IN_USE | TF_MSG_STATUS_MEM_PEAK,
};

/* GetStatus reply {job, task, incarnation, devices: [...], counters...,
 * tensor_stream?}. Counters are >= 0; those not in has are 0 and not
 * packed (a reply without one decodes with it 0 and its bit clear).
 * steps_run, bytes_sent and bytes_received are cumulative since the
 * process started: bytes over every peer, control RPC and tensor stream
 * both (the tf_rpc_*_bytes_total series summed). mem_in_use and mem_peak
 * are the process's allocators' bytes in use and peak bytes, summed
 * (tf_allocator_stats). tensor_stream: the URL of the task's
 * tensor-stream server (tensor_stream.h), packed when non-empty; "" when
 * decoding a reply without it (an older peer, or a task that serves no
 * stream). */
typedef struct tf_msg_get_status_reply {
  const char *job;
  int task;          /* >= 0 */
  uint64_t incarnation;
  int n_devices;     /* <= TF_MSG_MAX_DEVICES */
  tf_msg_status_device *devices;
  unsigned has;      /* TF_MSG_STATUS_* */
  int64_t sessions, running_steps, step_tables, buffered_bytes, graphs;
  uint64_t steps_run, bytes_sent, bytes_received;
  int64_t mem_in_use, mem_peak;
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
  const char *jobs;   /* ClusterStatus: the master's jobs using the task and
                       * their global steps, "fmnist-1@1200 w2v-2@40"; "" none
                       * (NULL encodes as "") */
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

/* ==== jobs (msg_job.c) =================================================== */

/* Caps of the job messages. */
#define TF_MSG_MAX_JOB_SPEC_BYTES (1 << 20) /* a submitted spec (= TF_JOB_SPEC_BYTES_MAX) */
#define TF_MSG_MAX_JOBS 1024                /* jobs in a ListJobs reply */
#define TF_MSG_MAX_JOB_METRICS 64           /* metrics of one job */
#define TF_MSG_MAX_JOB_REPLICAS 1024        /* replica_steps of one job (= TF_JOB_WORKERS_MAX) */
#define TF_MSG_MAX_LOG_LINES 4096           /* lines in one JobLogs reply */
#define TF_MSG_MAX_CHECKPOINTS 1000         /* in a JobCheckpoints reply (= the most
                                             * checkpoint.keep allows) */

/* SubmitJob request {spec: bin (the YAML text, <= 1 MiB), name: str (the
 * file it came from, for error messages)}. */
typedef struct tf_msg_submit_job_req {
  const void *spec;  /* borrowed from the message when decoded */
  size_t spec_len;
  const char *name;
  tf_msg_mem mem;
} tf_msg_submit_job_req;

/* SubmitJob reply {job: str (the new job's id)}. */
typedef struct tf_msg_submit_job_reply {
  const char *job;
  tf_msg_mem mem;
} tf_msg_submit_job_reply;

/* One metric {name: str, value: float64}. */
typedef struct tf_msg_metric {
  const char *name;
  double value;
} tf_msg_metric;

/* A job as the master reports it: the JobStatus and JobControl reply body,
 * and each element of ListJobs' jobs:
 *   {job, name, state, mode, workers, step, steps, loss, steps_per_s,
 *    elapsed_ms, submitted_ms, error, metrics: [{name, value}],
 *    replica_steps: [int], recoveries, checkpoint, checkpoint_step, note}
 * job, name and state are required when decoding; the others default to
 * "", 0, NaN (loss), "" and no metrics. state is one of queued, running,
 * paused, recovering, done, failed, cancelled (any str decodes; the
 * reader judges it). steps 0: the total is not known. metrics: the latest
 * evaluation ("test_accuracy", "test_loss", ...). replica_steps: how many
 * steps each replica finished (absent: none). recoveries, checkpoint,
 * checkpoint_step and note came later: a peer that omits them decodes as
 * 0 and "". */
typedef struct tf_msg_job_info {
  const char *job;       /* the id, e.g. "fmnist-mlp-sync-1" */
  const char *name;      /* the spec's name */
  const char *state;
  const char *mode;      /* "sync" | "async" */
  int workers;           /* >= 0 */
  int64_t step;          /* global steps done, >= 0 */
  int64_t steps;         /* total, >= 0 (0: unknown) */
  double loss;           /* the latest training loss (NaN: none yet) */
  double steps_per_s;    /* recent rate, >= 0 */
  int64_t elapsed_ms;    /* running time so far, >= 0 */
  int64_t submitted_ms;  /* Unix time of submission in ms, >= 0 */
  const char *error;     /* why it failed, "" otherwise */
  int n_metrics;         /* <= TF_MSG_MAX_JOB_METRICS */
  tf_msg_metric *metrics;
  int n_replica_steps;   /* <= TF_MSG_MAX_JOB_REPLICAS */
  int64_t *replica_steps; /* steps each replica finished, >= 0 */
  int recoveries;        /* automatic recoveries so far, >= 0 */
  const char *checkpoint; /* the newest checkpoint written or restored, "" none */
  int64_t checkpoint_step; /* its global step, >= 0 */
  const char *note;      /* what a JobControl checkpoint or restore did, "" none */
} tf_msg_job_info;

/* JobStatus and JobControl reply: one job. */
typedef struct tf_msg_job_info_reply {
  tf_msg_job_info info;
  tf_msg_mem mem;
} tf_msg_job_info_reply;

/* ListJobs reply {jobs: [info...]} (request body nil), oldest first. */
typedef struct tf_msg_list_jobs_reply {
  int n_jobs;            /* <= TF_MSG_MAX_JOBS */
  tf_msg_job_info *jobs;
  tf_msg_mem mem;
} tf_msg_list_jobs_reply;

/* JobStatus request {job: str}. */
typedef struct tf_msg_job_status_req {
  const char *job;
  tf_msg_mem mem;
} tf_msg_job_status_req;

/* JobControl request {job: str, action: str, steps: int, checkpoint: str}:
 * action is "pause", "resume", "cancel", "step", "checkpoint" or
 * "restore" (any str decodes; the master refuses others, naming them);
 * steps (for "step", 1..2^31-1; optional, default 0) is how many more
 * global steps a paused job runs before it pauses again; checkpoint (for
 * "restore": the checkpoint to go back to, "" the latest good one;
 * optional, default "") names a checkpoint of the job's directory. */
typedef struct tf_msg_job_control_req {
  const char *job;
  const char *action;
  int64_t steps;
  const char *checkpoint; /* NULL packs as "" */
  tf_msg_mem mem;
} tf_msg_job_control_req;

/* JobLogs request {job: str, from: int (>= 0, optional, default 0)}: the
 * lines numbered from `from` on that the master still keeps. */
typedef struct tf_msg_job_logs_req {
  const char *job;
  int64_t from;
  tf_msg_mem mem;
} tf_msg_job_logs_req;

/* JobLogs reply {first: int, lines: [str], next: int}: lines[i] is line
 * number first + i (first > from when older lines were dropped); next is
 * the number to ask from next time. */
typedef struct tf_msg_job_logs_reply {
  int64_t first, next;   /* >= 0 */
  int n_lines;           /* <= TF_MSG_MAX_LOG_LINES */
  const char **lines;
  tf_msg_mem mem;
} tf_msg_job_logs_reply;

/* JobCheckpoints request {job: str} (JobStatus's shape). */
typedef struct tf_msg_job_checkpoints_req {
  const char *job;
  tf_msg_mem mem;
} tf_msg_job_checkpoints_req;

/* One checkpoint {name: str, step: int, time_ms: int, bytes: int}: its
 * directory's name in the job's checkpoint directory ("ckpt-300"), the
 * global step it holds, when it was committed (Unix time in ms) and the
 * size of its files. The integers are >= 0; every field is required. */
typedef struct tf_msg_checkpoint {
  const char *name;
  int64_t step, time_ms, bytes;
} tf_msg_checkpoint;

/* JobCheckpoints reply {dir: str, checkpoints: [checkpoint...]}: the job's
 * checkpoint directory and its checkpoints, oldest first. */
typedef struct tf_msg_job_checkpoints_reply {
  const char *dir;
  int n_checkpoints;     /* <= TF_MSG_MAX_CHECKPOINTS */
  tf_msg_checkpoint *checkpoints;
  tf_msg_mem mem;
} tf_msg_job_checkpoints_reply;

void tf_msg_submit_job_req_encode(tf_wire_writer *w, const tf_msg_submit_job_req *m);
tf_code tf_msg_submit_job_req_decode(const tf_wire_msg *r, tf_msg_submit_job_req *out,
                                     tf_status *st);
void tf_msg_submit_job_req_fini(tf_msg_submit_job_req *m);
void tf_msg_submit_job_reply_encode(tf_wire_writer *w, const tf_msg_submit_job_reply *m);
tf_code tf_msg_submit_job_reply_decode(const tf_wire_msg *r,
                                       tf_msg_submit_job_reply *out, tf_status *st);
void tf_msg_submit_job_reply_fini(tf_msg_submit_job_reply *m);
/* method: TF_M_JOB_STATUS or TF_M_JOB_CONTROL (the reply it decodes). */
void tf_msg_job_info_reply_encode(tf_wire_writer *w, const tf_msg_job_info_reply *m);
tf_code tf_msg_job_info_reply_decode(const tf_wire_msg *r, int method,
                                     tf_msg_job_info_reply *out, tf_status *st);
void tf_msg_job_info_reply_fini(tf_msg_job_info_reply *m);
void tf_msg_list_jobs_reply_encode(tf_wire_writer *w, const tf_msg_list_jobs_reply *m);
tf_code tf_msg_list_jobs_reply_decode(const tf_wire_msg *r, tf_msg_list_jobs_reply *out,
                                      tf_status *st);
void tf_msg_list_jobs_reply_fini(tf_msg_list_jobs_reply *m);
void tf_msg_job_status_req_encode(tf_wire_writer *w, const tf_msg_job_status_req *m);
tf_code tf_msg_job_status_req_decode(const tf_wire_msg *r, tf_msg_job_status_req *out,
                                     tf_status *st);
void tf_msg_job_status_req_fini(tf_msg_job_status_req *m);
void tf_msg_job_control_req_encode(tf_wire_writer *w, const tf_msg_job_control_req *m);
tf_code tf_msg_job_control_req_decode(const tf_wire_msg *r, tf_msg_job_control_req *out,
                                      tf_status *st);
void tf_msg_job_control_req_fini(tf_msg_job_control_req *m);
void tf_msg_job_logs_req_encode(tf_wire_writer *w, const tf_msg_job_logs_req *m);
tf_code tf_msg_job_logs_req_decode(const tf_wire_msg *r, tf_msg_job_logs_req *out,
                                   tf_status *st);
void tf_msg_job_logs_req_fini(tf_msg_job_logs_req *m);
void tf_msg_job_logs_reply_encode(tf_wire_writer *w, const tf_msg_job_logs_reply *m);
tf_code tf_msg_job_logs_reply_decode(const tf_wire_msg *r, tf_msg_job_logs_reply *out,
                                     tf_status *st);
void tf_msg_job_logs_reply_fini(tf_msg_job_logs_reply *m);
void tf_msg_job_checkpoints_req_encode(tf_wire_writer *w,
                                       const tf_msg_job_checkpoints_req *m);
tf_code tf_msg_job_checkpoints_req_decode(const tf_wire_msg *r,
                                          tf_msg_job_checkpoints_req *out, tf_status *st);
void tf_msg_job_checkpoints_req_fini(tf_msg_job_checkpoints_req *m);
void tf_msg_job_checkpoints_reply_encode(tf_wire_writer *w,
                                         const tf_msg_job_checkpoints_reply *m);
tf_code tf_msg_job_checkpoints_reply_decode(const tf_wire_msg *r,
                                            tf_msg_job_checkpoints_reply *out,
                                            tf_status *st);
void tf_msg_job_checkpoints_reply_fini(tf_msg_job_checkpoints_reply *m);

#endif
