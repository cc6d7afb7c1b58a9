/* worker.c: the worker service's lifecycle, its registry of partition
 * graphs, and the small methods (GetStatus, RegisterGraph, CleanupGraph,
 * AbortStep, DeregisterGraph, WorkerReset). RunGraph and TensorPush are in
 * worker_run.c, owners and the step registry in worker_owner.c. The
 * server is asynchronous (lib/transport/rpc.h): handlers run on its
 * handler threads and never wait for another task; the small methods
 * answer before returning, RunGraph answers from its step's completion. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/runtime/log.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/runtime/op_allow.h"
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

tf_rpc_client *tf__wk_client(tf_worker *w, const char *url, const char *task,
                             tf_status *st) {
  pthread_mutex_lock(&w->cmu);
  tf_rpc_client *c = tf__strmap_get(&w->clients, url, NULL);
  tf_rpc_client_options o = {.url = url, .max_msg_bytes = w->spec->max_message_bytes,
                             .expect_task = task};
  if (c == NULL && tf_rpc_client_open(&o, &c, st) == TF_OK) {
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
      .steps_run = atomic_load(&w->steps_run), .tensor_stream = tf__wk_stream_url(w)};
  tf__status_usage(&b, &w->dev.alloc, 1);
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
  tf__wk_owner_id_fini(&g->owner);
  free(g);
}

/* RESOURCE_EXHAUSTED when limits.max_graphs graphs are registered (under
 * w->mu). */
static tf_code graphs_full_locked(tf_worker *w, tf_status *st) {
  if (w->n_graphs < w->spec->max_graphs) return TF_OK;
  return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "RegisterGraph on %s: %d "
                       "graphs registered, the limit (limits.max_graphs) is %d",
                       w->task_prefix, w->n_graphs, w->spec->max_graphs);
}

static nng_msg *register_graph(tf_worker *w, const tf_wire_msg *req,
                               tf_status *st) {
  tf_msg_register_graph_req rq;
  if (tf_msg_register_graph_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  pthread_mutex_lock(&w->mu);
  tf_code full = graphs_full_locked(w, st); /* refuse before building */
  pthread_mutex_unlock(&w->mu);
  if (full != TF_OK) return NULL;
  wk_graph *g = tf__xcalloc(1, sizeof *g);
  tf__ref_init(&g->refs, 1); /* the table's */
  g->session = req->h.session;
  g->g = tf__graph_new_internal(); /* a partition: _arg_0, _retval_0, ... */
  tf_executor_opts eo = {.device = &w->dev, .runner = w->runner};
  tf_op_allow allow = {.spec = w->spec, .partition = true};
  if (tf__graph_from_msgpack_checked(g->g, rq.graph, rq.graph_len, tf_op_allow_check_defs,
                                     &allow, st) != TF_OK ||
      tf_executor_new(g->g, &eo, &g->ex, st) != TF_OK) {
    tf_status_prefix(st, "RegisterGraph on %s", w->task_prefix);
    graph_free(g);
    return NULL;
  }
  char key[24];
  pthread_mutex_lock(&w->mu);
  if (graphs_full_locked(w, st) != TF_OK) { /* filled up meanwhile */
    pthread_mutex_unlock(&w->mu);
    graph_free(g);
    return NULL;
  }
  g->handle = ++w->next_handle;
  tf__wk_owner_adopt_locked(w, req, &g->owner);
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
  if (req->h.step_id != 0) {
    tf__wk_cancel_steps(w, req->h.step_id, NULL, why.code, why.msg);
  }
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

/* The methods that answer at once. */
static nng_msg *small_method(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  switch (req->h.method) {
    case TF_M_GET_STATUS: return get_status(w, req, st);
    case TF_M_REGISTER_GRAPH: return register_graph(w, req, st);
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

static void handle(void *arg, struct tf_rpc_call *call) {
  tf_worker *w = arg;
  const tf_wire_msg *req = tf_rpc_call_request(call);
  if (tf_log_level() >= LOG_DEBUG) {
    tf_log(LOG_DEBUG, "%s from %s (session %016" PRIx64 ", step %" PRIu64 ")",
           tf_method_name(req->h.method),
           req->h.from != NULL && req->h.from[0] != '\0' ? req->h.from : "a client",
           req->h.session, req->h.step_id);
  }
  tf__wk_owner_seen(w, req);
  if (req->h.method == TF_M_RUN_GRAPH) {
    tf__wk_run_graph(w, call);
    return;
  }
  if (req->h.method == TF_M_TENSOR_PUSH) {
    tf__wk_tensor_push(w, call);
    return;
  }
  tf_status st;
  tf_status_init(&st);
  nng_msg *m = small_method(w, req, &st);
  if (m != NULL) {
    tf_rpc_reply(call, m);
    return;
  }
  if (st.code == TF_OK) {
    tf_status_set(&st, TF_INTERNAL, "%s: the %s handler gave no reply",
                  w->task_prefix, tf_method_name(req->h.method));
  }
  tf_rpc_reply_error(call, &st);
}

static void server_log(void *arg, int prio, const char *msg) {
  tf_log(prio, "%s", msg);
}

/* RunGraph and TensorPush never block (the executor runs only cheap
 * nodes on an NNG thread and hands the rest to its runner): they are
 * served on the NNG thread that received them. */
static bool runs_inline(void *arg, int method) {
  return method == TF_M_RUN_GRAPH || method == TF_M_TENSOR_PUSH;
}

/* Serves url with the spec's limits (docs/operations.md). */
static tf_code serve(tf_worker *w, const char *url, tf_status *st) {
  const tf_cluster_spec *spec = w->spec;
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.handler_threads = spec->rpc_threads;
  o.max_msg_bytes = spec->max_message_bytes;
  int64_t calls = (int64_t)spec->max_steps + TF_WK_CALL_HEADROOM;
  o.max_calls = (int)(calls < 65536 ? calls : 65536);
  o.max_connections = spec->max_connections;
  o.idle_connection_ms = spec->idle_connection_ms;
  o.self_task = w->task_prefix;
  o.self_incarnation = w->incarnation;
  o.log = server_log;
  o.runs_inline = runs_inline;
  return tf_rpc_server_start(&o, handle, w, &w->srv, st);
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
  tf_rdv_mgr_set_max_pushed(w->rdv, spec->max_pushed_bytes);
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->cmu, NULL);
  pthread_mutex_init(&w->pmu, NULL); /* the peers (worker_stream.c) */
  pthread_cond_init(&w->idle_cv, NULL);
  tf__strmap_init(&w->graphs);
  tf__strmap_init(&w->owners);
  tf__strmap_init(&w->clients);
  tf__step_metrics_init(&w->step_metrics, "worker");
  /* The task's own address first: the stream's port is any free one, and
   * the kernel may hand out the configured port for it while that is
   * still unbound (a peer asking in between gets no stream, and
   * TensorPush, until it asks again). */
  tf_code rc = serve(w, url, st);
  if (rc == TF_OK) rc = tf__wk_stream_start(w, url, st);
  if (rc != TF_OK) {
    tf_status_prefix(st, "worker %s", w->task_prefix);
    tf_worker_free(w);
  } else {
    tf_log(LOG_INFO, "serving %s on %s (incarnation %016" PRIx64 ")",
           w->dev_name, url, w->incarnation);
    w->collector = tf__wk_metrics_start(w);
    *out = w;
  }
  free(url);
  return rc;
}

void tf_worker_tick(tf_worker *w) {
  int64_t now = tf__now_ns();
  int n = tf_rdv_mgr_sweep(w->rdv, now);
  if (n > 0) tf_log(LOG_NOTICE, "expired %d orphaned step table(s)", n);
  tf__wk_owner_expire(w, now);
  tf__wk_stream_tick(w);
}

void tf_worker_drain(tf_worker *w, int64_t timeout_ms) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  pthread_mutex_lock(&w->mu);
  w->draining = true;
  while (w->n_steps > 0 && tf__now_ns() < deadline) {
    int64_t left = (deadline - tf__now_ns()) / 1000000;
    tf__cond_wait_ms(&w->idle_cv, &w->mu, left < 50 ? (left > 0 ? left : 1) : 50);
  }
  int left = w->n_steps;
  pthread_mutex_unlock(&w->mu);
  if (left > 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s is shutting down", w->task_prefix);
    tf_log(LOG_NOTICE, "drain: cancelling %d step(s) still running after %lld ms",
           left, (long long)timeout_ms);
    tf__wk_cancel_steps(w, 0, NULL, TF_UNAVAILABLE, msg);
  }
  pthread_mutex_lock(&w->mu);
  tf__wk_wait_idle_locked(w, "drain");
  pthread_mutex_unlock(&w->mu);
}

static void free_client(void *v) { tf_rpc_client_free(v); }

static void free_owner(void *v) {
  wk_owner *o = v;
  tf__wk_owner_id_fini(&o->id);
  free(o);
}

/* Shutdown phases that take long are logged, so a slow stop says where;
 * the phase under way is readable from any thread (a stop that hangs). */
static _Atomic(const char *) stop_phase;

const char *tf_worker_stop_phase(void) { return atomic_load(&stop_phase); }

static void slow_phase(const char *what, const char *next, int64_t *t0) {
  int64_t now = tf__now_ns(), ms = (now - *t0) / 1000000;
  if (ms >= 500) tf_log(LOG_INFO, "stopping: %s took %" PRId64 " ms", what, ms);
  atomic_store(&stop_phase, next);
  *t0 = now;
}

void tf_worker_free(tf_worker *w) {
  if (w == NULL) return;
  int64_t t0 = tf__now_ns();
  atomic_store(&stop_phase, "ending the running steps");
  tf_metrics_remove_collector(tf_metrics_global(), w->collector);
  if (w->srv != NULL) {
    /* Refuse new steps, end the running ones and wait for their
     * callbacks (each has then sent its reply), then stop serving. */
    char msg[160];
    snprintf(msg, sizeof msg, "%s is shutting down", w->task_prefix);
    pthread_mutex_lock(&w->mu);
    w->draining = true;
    pthread_mutex_unlock(&w->mu);
    tf__wk_cancel_steps(w, 0, NULL, TF_CANCELLED, msg);
    pthread_mutex_lock(&w->mu);
    tf__wk_wait_idle_locked(w, "shutdown");
    pthread_mutex_unlock(&w->mu);
    slow_phase("ending the running steps", "stopping the RPC server", &t0);
  }
  atomic_store(&stop_phase, "stopping the RPC server");
  tf_rpc_server_stop(w->srv); /* no handler runs after this */
  slow_phase("stopping the RPC server", "stopping the tensor stream", &t0);
  tf__wk_stream_stop(w);      /* nor a tensor-stream delivery */
  slow_phase("stopping the tensor stream", "freeing the graphs", &t0);
  tf__strmap_each(&w->clients, free_client);
  tf__strmap_fini(&w->clients);
  tf__wk_stream_free(w);
  tf_rdv_mgr_free(w->rdv);
  tf__strmap_each(&w->graphs, (void (*)(void *))graph_free);
  tf__strmap_fini(&w->graphs);
  tf__strmap_each(&w->owners, free_owner);
  tf__strmap_fini(&w->owners);
  slow_phase("freeing the graphs", "freeing the runner and resources", &t0);
  tf_workq_free(w->runner);
  tf_resource_mgr_free(w->res);
  slow_phase("freeing the runner and resources", NULL, &t0);
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
