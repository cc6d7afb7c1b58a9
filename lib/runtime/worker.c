/* worker.c: the worker service's lifecycle, its registry of partition
 * graphs, and the small methods (GetStatus, RegisterGraph, CleanupGraph,
 * AbortStep, DeregisterGraph, WorkerReset). RunGraph and TensorPush are in
 * worker_run.c. Every handler runs on one of the RPC server's threads and
 * may block (RunGraph waits for its step, bounded by the step deadline). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/runtime/log.h"
#include "lib/runtime/worker_impl.h"
#include "tf/serialize.h"


tf_wire_writer *tf__wk_reply_writer(const tf_worker *w, const tf_wire_msg *req) {
  return tf_msg_reply_writer(req, w->task_prefix, w->incarnation);
}

nng_msg *tf__wk_empty_reply(const tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  nng_msg *m = NULL;
  tf_wire_finish(tf__wk_reply_writer(w, req), &m, st);
  return m;
}

tf_rpc_client *tf__wk_client(tf_worker *w, const char *url, tf_status *st) {
  pthread_mutex_lock(&w->cmu);
  tf_rpc_client *c = tf__strmap_get(&w->clients, url, NULL);
  if (c == NULL && tf_rpc_client_new(url, w->spec->max_message_bytes, &c, st) == TF_OK) {
    tf__strmap_put(&w->clients, url, c);
  }
  pthread_mutex_unlock(&w->cmu);
  return c;
}

/* ---- GetStatus ------------------------------------------------------------ */

static nng_msg *get_status(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  pthread_mutex_lock(&w->mu);
  int running = w->n_steps, graphs = w->n_graphs;
  pthread_mutex_unlock(&w->mu);
  tf_msg_status_device dev = {w->dev_name, "CPU", w->incarnation};
  tf_msg_get_status_reply b = {
      .job = w->job, .task = w->task, .incarnation = w->incarnation,
      .n_devices = 1, .devices = &dev, .has = TF_MSG_STATUS_WORKER,
      .running_steps = running, .step_tables = tf_rdv_mgr_live_steps(w->rdv),
      .buffered_bytes = tf_rdv_mgr_buffered_bytes(w->rdv), .graphs = graphs,
      .steps_run = atomic_load(&w->steps_run)};
  tf_wire_writer *wr = tf__wk_reply_writer(w, req);
  tf_msg_get_status_reply_encode(wr, &b);
  nng_msg *m = NULL;
  tf_wire_finish(wr, &m, st);
  return m;
}

/* ---- graphs --------------------------------------------------------------- */

static void graph_free(wk_graph *g) {
  tf_executor_free(g->ex);
  tf_graph_free(g->g);
  free(g);
}

static nng_msg *register_graph(tf_worker *w, const tf_wire_msg *req,
                               tf_status *st) {
  tf_msg_register_graph_req rq;
  if (tf_msg_register_graph_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  wk_graph *g = tf__xcalloc(1, sizeof *g);
  tf__ref_init(&g->refs, 1); /* the table's */
  g->session = req->h.session;
  g->g = tf__graph_new_internal(); /* a partition: _arg_0, _retval_0, ... */
  tf_executor_opts eo = {.device = &w->dev, .runner = w->runner};
  if (tf_graph_from_msgpack(g->g, rq.graph, rq.graph_len, st) != TF_OK ||
      tf_executor_new(g->g, &eo, &g->ex, st) != TF_OK) {
    tf_status_prefix(st, "RegisterGraph on %s", w->task_prefix);
    graph_free(g);
    return NULL;
  }
  char key[24];
  pthread_mutex_lock(&w->mu);
  g->handle = ++w->next_handle;
  snprintf(key, sizeof key, "%016" PRIx64, g->handle);
  tf__strmap_put(&w->graphs, key, g);
  w->n_graphs++;
  pthread_mutex_unlock(&w->mu);
  tf_log(LOG_DEBUG, "registered graph %s (%d nodes) for session %016" PRIx64,
         key, tf_graph_num_nodes(g->g), g->session);
  tf_msg_register_graph_reply b = {.handle = g->handle};
  tf_wire_writer *wr = tf__wk_reply_writer(w, req);
  tf_msg_register_graph_reply_encode(wr, &b);
  nng_msg *m = NULL;
  tf_wire_finish(wr, &m, st);
  return m;
}

wk_graph *tf__wk_graph_get(tf_worker *w, uint64_t handle, tf_status *st) {
  char key[24];
  snprintf(key, sizeof key, "%016" PRIx64, handle);
  pthread_mutex_lock(&w->mu);
  wk_graph *g = tf__strmap_get(&w->graphs, key, NULL);
  if (g != NULL) tf__ref_get(&g->refs); /* under w->mu: the table's keeps g */
  pthread_mutex_unlock(&w->mu);
  if (g == NULL) {
    tf_status_set(st, TF_ABORTED, "Graph handle is not found: %s on %s. "
                  "Possibly, this worker just restarted (incarnation "
                  "%016" PRIx64 ")", key, w->task_prefix, w->incarnation);
  }
  return g;
}

static void graph_release(void *g) { graph_free(g); }

void tf__wk_graph_put(tf_worker *w, wk_graph *g) {
  tf__ref_put(&g->refs, graph_release, g);
}

static nng_msg *deregister_graph(tf_worker *w, const tf_wire_msg *req,
                                 tf_status *st) {
  tf_msg_deregister_graph_req rq;
  if (tf_msg_deregister_graph_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  char key[24];
  snprintf(key, sizeof key, "%016" PRIx64, rq.handle);
  pthread_mutex_lock(&w->mu);
  wk_graph *g = tf__strmap_get(&w->graphs, key, NULL);
  if (g != NULL) {
    tf__strmap_del(&w->graphs, key); /* the table's reference is ours */
    w->n_graphs--;
  }
  pthread_mutex_unlock(&w->mu);
  if (g != NULL) tf__wk_graph_put(w, g);
  return tf__wk_empty_reply(w, req, st);
}

/* ---- steps ---------------------------------------------------------------- */

static nng_msg *abort_step(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  tf_msg_abort_step_req rq;
  if (tf_msg_abort_step_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  tf_status why;
  tf_status_set(&why, rq.code, "step %" PRIu64 " aborted: %s", req->h.step_id,
                rq.msg[0] != '\0' ? rq.msg : "(no reason given)");
  tf_msg_abort_step_req_fini(&rq);
  pthread_mutex_lock(&w->mu);
  for (int i = 0; i < w->n_steps; i++) {
    if (w->steps[i].step_id == req->h.step_id) {
      tf_cancel_start(w->steps[i].cancel, why.code, why.msg);
    }
  }
  pthread_mutex_unlock(&w->mu);
  tf_rdv_mgr_abort(w->rdv, req->h.step_id, &why);
  return tf__wk_empty_reply(w, req, st);
}

static nng_msg *cleanup_graph(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  tf_rdv_mgr_cleanup(w->rdv, req->h.step_id);
  return tf__wk_empty_reply(w, req, st);
}

static nng_msg *worker_reset(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  tf_msg_worker_reset_req rq;
  if (tf_msg_worker_reset_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  if (rq.n_containers == 0) tf_resource_mgr_reset(w->res, "");
  for (int i = 0; i < rq.n_containers; i++) {
    tf_resource_mgr_reset(w->res, rq.containers[i]);
  }
  tf_msg_worker_reset_req_fini(&rq);
  return tf__wk_empty_reply(w, req, st);
}

static nng_msg *handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  tf_worker *w = arg;
  switch (req->h.method) {
    case TF_M_GET_STATUS: return get_status(w, req, st);
    case TF_M_REGISTER_GRAPH: return register_graph(w, req, st);
    case TF_M_RUN_GRAPH: return tf__wk_run_graph(w, req, st);
    case TF_M_TENSOR_PUSH: return tf__wk_tensor_push(w, req, st);
    case TF_M_CLEANUP_GRAPH: return cleanup_graph(w, req, st);
    case TF_M_ABORT_STEP: return abort_step(w, req, st);
    case TF_M_DEREGISTER_GRAPH: return deregister_graph(w, req, st);
    case TF_M_WORKER_RESET: return worker_reset(w, req, st);
    default:
      tf_status_set(st, TF_UNIMPLEMENTED, "%s: method %d (%s) is not a worker "
                    "method", w->task_prefix, req->h.method,
                    tf_method_name(req->h.method));
      return NULL;
  }
}

/* ---- lifecycle ------------------------------------------------------------ */

tf_code tf_worker_start(const tf_cluster_spec *spec, const char *job, int task,
                        tf_worker **out, tf_status *st) {
  *out = NULL;
  TF_TRY(tf_cluster_spec_check_worker_task(spec, job, task, st));
  char *url = tf_cluster_task_url(spec, job, task);
  tf_worker *w = tf__xcalloc(1, sizeof *w);
  w->spec = spec;
  w->job = tf__xstrdup(job);
  w->task = task;
  w->incarnation = tf__random_u64();
  w->task_prefix = tf__xasprintf("/job:%s/replica:0/task:%d", job, task);
  w->dev_name = tf__xasprintf("%s/device:CPU:0", w->task_prefix);
  w->dev = *tf_cpu_device();
  w->dev.name = w->dev_name;
  w->res = tf_resource_mgr_new();
  int threads = spec->inter_op_threads > 0 ? spec->inter_op_threads
                                           : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads > 1) w->runner = tf_workq_new(threads, "inter-op");
  w->rdv = tf_rdv_mgr_new(w->task_prefix, spec->step_ttl_ms, tf__wk_remote_send, w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->cmu, NULL);
  pthread_cond_init(&w->idle_cv, NULL);
  tf__strmap_init(&w->graphs);
  tf__strmap_init(&w->clients);
  tf_code rc = tf_rpc_server_start_sync(url, spec->rpc_threads, spec->max_message_bytes,
                                   handle, w, &w->srv, st);
  if (rc != TF_OK) {
    tf_status_prefix(st, "worker %s", w->task_prefix);
    tf_worker_free(w);
  } else {
    tf_log(LOG_INFO, "serving %s on %s (incarnation %016" PRIx64 ")",
           w->dev_name, url, w->incarnation);
    *out = w;
  }
  free(url);
  return rc;
}

void tf_worker_tick(tf_worker *w) {
  int n = tf_rdv_mgr_sweep(w->rdv, tf__now_ns());
  if (n > 0) tf_log(LOG_NOTICE, "expired %d orphaned step table(s)", n);
}

void tf_worker_drain(tf_worker *w, int64_t timeout_ms) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  pthread_mutex_lock(&w->mu);
  w->draining = true;
  while (w->n_steps > 0 && tf__now_ns() < deadline) {
    tf__cond_wait_ms(&w->idle_cv, &w->mu, 50);
  }
  for (int i = 0; i < w->n_steps; i++) {
    tf_cancel_start(w->steps[i].cancel, TF_UNAVAILABLE, "the worker is shutting down");
  }
  pthread_mutex_unlock(&w->mu);
}

static void free_client(void *v) { tf_rpc_client_free(v); }

void tf_worker_free(tf_worker *w) {
  if (w == NULL) return;
  tf_rpc_server_stop(w->srv); /* no handler runs after this */
  tf_rdv_mgr_free(w->rdv);
  tf__strmap_each(&w->graphs, (void (*)(void *))graph_free);
  tf__strmap_fini(&w->graphs);
  tf__strmap_each(&w->clients, free_client);
  tf__strmap_fini(&w->clients);
  tf_workq_free(w->runner);
  tf_resource_mgr_free(w->res);
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->cmu);
  pthread_cond_destroy(&w->idle_cv);
  free(w->steps);
  free(w->job);
  free(w->task_prefix);
  free(w->dev_name);
  free(w);
}

uint64_t tf_worker_incarnation(const tf_worker *w) { return w->incarnation; }
const char *tf_worker_device_name(const tf_worker *w) { return w->dev_name; }

int tf_worker_running_steps(tf_worker *w) {
  pthread_mutex_lock(&w->mu);
  int n = w->n_steps;
  pthread_mutex_unlock(&w->mu);
  return n;
}

int tf_worker_live_step_tables(tf_worker *w) { return tf_rdv_mgr_live_steps(w->rdv); }
