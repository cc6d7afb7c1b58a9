/* worker_impl.h: the worker's state, shared by worker.c (lifecycle, graph
 * registry, small methods) and worker_run.c (RunGraph, TensorPush, the
 * remote send of tensors to other tasks). */
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
#include "lib/runtime/worker.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"

/* A registered partition: its graph and executor, shared by the steps
 * running it, freed when deregistered and idle. */
typedef struct wk_graph {
  uint64_t handle;
  uint64_t session;
  tf_graph *g;
  tf_executor *ex;
  tf__refcount refs; /* the table's and one per tf__wk_graph_get */
} wk_graph;

/* A running step, so AbortStep can cancel it. */
typedef struct wk_step {
  uint64_t step_id;
  tf_cancel *cancel;
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
  pthread_cond_t idle_cv;
  tf__strmap graphs;  /* "%016llx" handle -> wk_graph */
  uint64_t next_handle;
  int n_graphs;
  wk_step *steps;
  int n_steps, cap_steps;
  bool draining;
  pthread_mutex_t cmu; /* clients */
  tf__strmap clients;  /* url -> tf_rpc_client */
  _Atomic uint64_t steps_run;
};

/* A writer for the OK reply to req, from this task (its name and
 * incarnation in the header). */
tf_wire_writer *tf__wk_reply_writer(const tf_worker *w, const tf_wire_msg *req);
/* A reply with a nil body. */
nng_msg *tf__wk_empty_reply(const tf_worker *w, const tf_wire_msg *req, tf_status *st);
/* The client for task URL url (made once, kept until the worker ends). */
tf_rpc_client *tf__wk_client(tf_worker *w, const char *url, tf_status *st);

nng_msg *tf__wk_run_graph(tf_worker *w, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__wk_tensor_push(tf_worker *w, const tf_wire_msg *req, tf_status *st);
/* The rendezvous manager's remote-send hook (arg: the worker). */
void tf__wk_remote_send(void *arg, uint64_t step_id, const char *key,
                        const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                        tf_rdv_send_done done, void *done_arg);

#endif
