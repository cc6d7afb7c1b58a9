/* worker_impl.h: the worker's state, shared by worker.c (lifecycle, graph
 * registry, small methods), worker_owner.c (owners: the masters that
 * registered graphs and started steps, their incarnations and silence;
 * the step registry), worker_run.c (RunGraph,
 * TensorPush, the remote send of tensors to other tasks) and
 * worker_stream.c (large tensors over the tensor stream).
 *
 * Locking: w->mu guards the graph table, the owner table, the step
 * registry (steps, n_steps, each step's pending and status), draining and
 * the counters; it is never held while a step is cancelled, a callback
 * runs or a reply is sent (a cancel callback may finish a step, and
 * finishing takes w->mu). w->cmu guards the client table. */
#ifndef TF_RUNTIME_WORKER_IMPL_H
#define TF_RUNTIME_WORKER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "lib/core/base/cancel.h"
#include "lib/core/exec/executor.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/refcount.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/workqueue.h"
#include "lib/rendezvous/rendezvous_mgr.h"
#include "lib/runtime/rt_metrics.h"
#include "lib/runtime/worker.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"
#include "lib/transport/tensor_stream.h"

/* RPC calls in progress a worker allows beyond max_steps RunGraphs: room
 * for TensorPush, GetStatus and the control methods while every step slot
 * is taken, so a full worker still receives the tensors its steps wait
 * for. */
#define TF_WK_CALL_HEADROOM 256

/* A peer that advertised no tensor stream is asked again after this. */
#define TF_WK_PEER_RECHECK_MS 30000

struct wk_peer;
struct wk_sclient;

/* Who a graph or step belongs to: the master task (the request header's
 * from; "" for an unnamed client) and its incarnation (from_inc). */
typedef struct wk_owner_id {
  char *task;
  uint64_t inc;
} wk_owner_id;

/* A master known to this worker: the last time any request came from it. */
typedef struct wk_owner {
  wk_owner_id id;
  int64_t last_ns;
} wk_owner;

/* A registered partition: its graph and executor, shared by the steps
 * running it, freed when deregistered and idle. */
typedef struct wk_graph {
  uint64_t handle;
  uint64_t session;
  wk_owner_id owner;
  tf_graph *g;
  tf_executor *ex;
  tf__refcount refs; /* the table's and one per tf__wk_graph_get */
} wk_graph;

/* A running step (one RunGraph): it is over when its executor is done
 * and every TensorPush it started has been answered (or at once when it
 * failed); then its reply is sent. */
typedef struct wk_step {
  tf_worker *w;
  uint64_t step_id;
  wk_owner_id owner;
  struct tf_rpc_call *call;
  wk_graph *g;
  tf_msg_run_graph_req req;
  tf_tensor **rets;
  tf_exec_trace tr;
  tf_rendezvous *rdv;
  tf_cancel cancel;
  tf_step_ctx ctx;
  int64_t deadline_ns;  /* CLOCK_MONOTONIC; 0: none */
  int64_t deadline_ms;  /* as the request gave it */
  int64_t start_ns;     /* RunGraph's arrival, for tf_step_duration_seconds */
  bool exec_done;       /* w->mu: the executor called back */
  int pending;          /* w->mu: its pushes not yet answered */
  bool finished;        /* w->mu: over; its reply is being sent */
  tf_status st;         /* w->mu: the step's first failure */
  tf__refcount refs;    /* the registry's, and holders cancelling it */
} wk_step;

struct tf_worker {
  const tf_cluster_spec *spec;
  char *job;
  int task;
  uint64_t incarnation;
  char *task_prefix;  /* "/job:J/replica:0/task:T" */
  char *dev_name;     /* task_prefix + "/device:CPU:0" */
  tf_device dev;
  tf_resource_mgr *res;
  tf_workq *runner;
  tf_rdv_mgr *rdv;
  tf_rpc_server *srv;
  pthread_mutex_t mu;
  pthread_cond_t idle_cv;  /* n_steps or pushes reached 0 */
  tf__strmap graphs;  /* "%016llx" handle -> wk_graph */
  uint64_t next_handle;
  int n_graphs;
  tf__strmap owners;  /* master task -> wk_owner */
  wk_step **steps;
  int n_steps, cap_steps;
  int pushes;         /* TensorPushes in flight (all steps) */
  bool draining;
  pthread_mutex_t cmu; /* clients */
  tf__strmap clients;  /* url -> tf_rpc_client */
  _Atomic uint64_t steps_run;
  /* The tensor stream (worker_stream.c). tsrv: NULL when the address is
   * not tcp://. w->pmu guards the peers (and their queues and clients)
   * and the retired clients; it is taken before w->mu, never after. */
  tf_tstream_server *tsrv;
  pthread_mutex_t pmu;
  struct wk_peer *peers;
  struct wk_sclient **retired;
  int n_retired, cap_retired;
  tf__step_metrics step_metrics; /* Prometheus (rt_metrics.h) */
  tf_metrics_collector *collector;
};

/* A writer for the OK reply to req, from this task (its name and
 * incarnation in the header). */
tf_wire_writer *tf__wk_reply_writer(const tf_worker *w, const tf_wire_msg *req);
/* A reply with a nil body. */
nng_msg *tf__wk_empty_reply(const tf_worker *w, const tf_wire_msg *req, tf_status *st);
/* The client for task `task` at URL url (made once, kept until the worker
 * ends; a reply from another task fails the call). */
tf_rpc_client *tf__wk_client(tf_worker *w, const char *url, const char *task,
                             tf_status *st);

wk_graph *tf__wk_graph_get(tf_worker *w, uint64_t handle, tf_status *st);
void tf__wk_graph_put(tf_worker *w, wk_graph *g);

/* RunGraph and TensorPush (worker_run.c): each finishes call. */
void tf__wk_run_graph(tf_worker *w, struct tf_rpc_call *call);
void tf__wk_tensor_push(tf_worker *w, struct tf_rpc_call *call);
/* The rendezvous manager's remote-send hook (arg: the worker). */
void tf__wk_remote_send(void *arg, uint64_t step_id, const char *key,
                        const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                        tf_rdv_send_done done, void *done_arg);

/* Pushes t (borrowed; NULL iff is_dead) for (step_id, key) to task at url
 * as one TensorPush; calls done once handed to the transport (or with the
 * failure). A failed delivery cancels the sending step. */
void tf__wk_push_message(tf_worker *w, const char *url, const char *task,
                         uint64_t step_id, const char *key, tf_tensor *t,
                         bool is_dead, tf_rdv_send_done done, void *done_arg);

/* ---- the tensor stream (worker_stream.c) ----------------------------------- */

/* Starts the stream server on rpc_url's host, a free port (none for a URL
 * that is not tcp://); UNAVAILABLE when it cannot listen. The worker's RPC
 * server may be serving already: GetStatus sees the stream once it is up. */
tf_code tf__wk_stream_start(tf_worker *w, const char *rpc_url, tf_status *st);
/* The URL the server listens on, or NULL. */
const char *tf__wk_stream_url(const tf_worker *w);
/* Sends t (borrowed, not dead, not strings) to task at url over its
 * stream and returns true (done is called once, as for a remote send), or
 * returns false at once when that peer serves no stream: the caller sends
 * it by TensorPush. */
bool tf__wk_stream_send(tf_worker *w, const char *url, const char *task,
                        uint64_t step_id, const char *key, tf_tensor *t,
                        tf_rdv_send_done done, void *done_arg);
/* Frees the stream clients retired since (failed peers). */
void tf__wk_stream_tick(tf_worker *w);
/* Teardown, in this order: stop the server (no deliver runs after), then,
 * once no step runs and the RPC clients are closed, free the clients and
 * peers. Both before the rendezvous is freed. */
void tf__wk_stream_stop(tf_worker *w);
void tf__wk_stream_free(tf_worker *w);

/* ---- owners and steps (worker_owner.c) ------------------------------------ */

/* Notes a request from req's sender: refreshes its owner record and, when
 * the same task now has another incarnation, drops the old incarnation's
 * graphs and aborts its steps (logged). */
void tf__wk_owner_seen(tf_worker *w, const tf_wire_msg *req);
/* The owner of what req creates (copied strings), and records it as
 * known. Under w->mu. */
void tf__wk_owner_adopt_locked(tf_worker *w, const tf_wire_msg *req,
                               wk_owner_id *out);
void tf__wk_owner_id_fini(wk_owner_id *o);
/* Drops the graphs and aborts the steps of owners silent for longer than
 * limits.session_ttl_ms. */
void tf__wk_owner_expire(tf_worker *w, int64_t now_ns);

/* Admits s into the registry:
 * UNAVAILABLE while draining, RESOURCE_EXHAUSTED at max_steps. */
tf_code tf__wk_step_admit(tf_worker *w, wk_step *s, tf_status *st);
/* Removes s from the registry (after its reply was sent). */
void tf__wk_step_remove(tf_worker *w, wk_step *s);
void tf__wk_step_unref(wk_step *s);
/* Cancels (code, msg) every running step that step_id names (0: every
 * step), or that owner o has (o != NULL). Never under w->mu. Returns how
 * many. */
int tf__wk_cancel_steps(tf_worker *w, uint64_t step_id, const wk_owner_id *o,
                        tf_code code, const char *msg);
/* Waits until no step runs and no push is in flight (mu held); logs every
 * few seconds while it waits. */
void tf__wk_wait_idle_locked(tf_worker *w, const char *why);

#endif
