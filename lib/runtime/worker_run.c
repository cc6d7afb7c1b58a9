/* worker_run.c: RunGraph (run a registered partition for one step),
 * TensorPush (a tensor another task sent to this one) and the remote send
 * of this task's tensors to other tasks.
 *
 * Tensors move by sender push: a _Send whose receiver lives on another
 * task becomes one TensorPush request to that task's worker, which puts
 * it into the step's rendezvous table (made on arrival if the receiver's
 * part of the step has not started yet). The _Send completes when the
 * receiver acknowledges, so a failed delivery fails the sending step. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/worker_impl.h"

wk_graph *tf__wk_graph_get(tf_worker *w, uint64_t handle, tf_status *st);
void tf__wk_graph_put(tf_worker *w, wk_graph *g);

/* ---- the step registry (for AbortStep and draining) ----------------------- */

static tf_code step_begin(tf_worker *w, uint64_t step_id, tf_cancel *c,
                          tf_status *st) {
  pthread_mutex_lock(&w->mu);
  if (w->draining) {
    pthread_mutex_unlock(&w->mu);
    return tf_status_set(st, TF_UNAVAILABLE, "%s is shutting down",
                         w->task_prefix);
  }
  if (w->n_steps == w->cap_steps) {
    w->cap_steps = w->cap_steps ? 2 * w->cap_steps : 16;
    w->steps = tf__xrealloc(w->steps, (size_t)w->cap_steps * sizeof *w->steps);
  }
  w->steps[w->n_steps++] = (wk_step){step_id, c};
  pthread_mutex_unlock(&w->mu);
  return TF_OK;
}

static void step_end(tf_worker *w, tf_cancel *c) {
  pthread_mutex_lock(&w->mu);
  for (int i = 0; i < w->n_steps; i++) {
    if (w->steps[i].cancel == c) {
      w->steps[i] = w->steps[--w->n_steps];
      break;
    }
  }
  if (w->n_steps == 0) pthread_cond_broadcast(&w->idle_cv);
  pthread_mutex_unlock(&w->mu);
}

/* ---- RunGraph ------------------------------------------------------------- */

static nng_msg *run_reply(tf_worker *w, const tf_wire_msg *req, wk_graph *g,
                          tf_tensor **rets, int n_rets, const tf_exec_trace *tr,
                          tf_status *st) {
  int n = tr != NULL ? tr->n : 0;
  tf_msg_timing *tm = tf__xcalloc((size_t)n + 1, sizeof *tm);
  for (int i = 0; i < n; i++) {
    tm[i] = (tf_msg_timing){tf_node_name(tf_graph_node(g->g, tr->stats[i].node)),
                            tr->stats[i].start_ns, tr->stats[i].end_ns};
  }
  tf_msg_run_graph_reply b = {.n_rets = n_rets, .rets = rets, .n_timings = n,
                              .timings = tm};
  tf_wire_writer *wr = tf__wk_reply_writer(w, req);
  tf_msg_run_graph_reply_encode(wr, &b);
  free(tm);
  nng_msg *m = NULL;
  tf_wire_finish(wr, &m, st);
  return m;
}

nng_msg *tf__wk_run_graph(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  tf_msg_run_graph_req r;
  if (tf_msg_run_graph_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  wk_graph *g = tf__wk_graph_get(w, r.handle, st);
  if (g == NULL) {
    tf_msg_run_graph_req_fini(&r);
    return NULL;
  }
  tf_cancel cancel;
  tf_cancel_init(&cancel);
  tf_rendezvous *rdv = NULL;
  tf_tensor **rets = tf__xcalloc((size_t)r.n_rets + 1, sizeof *rets);
  tf_exec_trace tr = {0};
  nng_msg *reply = NULL;
  if (step_begin(w, req->h.step_id, &cancel, st) == TF_OK) {
    rdv = tf_rdv_mgr_step(w->rdv, req->h.step_id, st);
    if (rdv != NULL) {
      tf_step_ctx ctx = {.step_id = req->h.step_id, .resources = w->res,
                         .cancel = &cancel, .args = r.args, .n_args = r.n_args,
                         .retvals = rets, .n_retvals = r.n_rets,
                         .rendezvous = rdv};
      int64_t deadline = req->h.deadline_ms > 0
                             ? tf__now_ns() + req->h.deadline_ms * 1000000 : 0;
      if (tf_executor_run(g->ex, &ctx, r.trace ? &tr : NULL, deadline, st) == TF_OK) {
        reply = run_reply(w, req, g, rets, r.n_rets, r.trace ? &tr : NULL, st);
        /* Every _Recv of the partition has its value and every _Send was
         * acknowledged: nothing more arrives for this step here, so its
         * table goes now (the master sends CleanupGraph only after a
         * failure, saving two messages per task per step). */
        tf_rdv_mgr_cleanup(w->rdv, req->h.step_id);
      } else {
        tf_status_prefix(st, "%s", w->task_prefix);
        tf_rdv_mgr_abort(w->rdv, req->h.step_id, st);
      }
      tf_rdv_step_unref(rdv);
    }
    step_end(w, &cancel);
  }
  atomic_fetch_add(&w->steps_run, 1);
  for (int i = 0; i < r.n_rets; i++) tf_tensor_unref(rets[i]);
  free(rets);
  free(tr.stats);
  tf_cancel_fini(&cancel);
  tf__wk_graph_put(w, g);
  tf_msg_run_graph_req_fini(&r);
  return reply;
}

/* ---- TensorPush ----------------------------------------------------------- */

nng_msg *tf__wk_tensor_push(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  tf_msg_tensor_push_req p;
  if (tf_msg_tensor_push_req_decode(req, &p, st) != TF_OK) {
    return NULL;
  }
  nng_msg *reply = NULL;
  if (tf_rdv_mgr_deliver(w->rdv, req->h.step_id, p.key, p.tensor, p.dead, st) == TF_OK) {
    reply = tf__wk_empty_reply(w, req, st);
  }
  tf_msg_tensor_push_req_fini(&p);
  return reply;
}

/* ---- remote send ---------------------------------------------------------- */

typedef struct push_ctx {
  tf_rdv_send_done done;
  void *arg;
  char *dst;
} push_ctx;

static void push_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  push_ctx *p = arg;
  tf_wire_msg_free(reply);
  if (st->code != TF_OK) {
    tf_status s2;
    tf_status_set(&s2, st->code, "sending to %s: %s", p->dst, st->msg);
    p->done(p->arg, &s2);
  } else {
    p->done(p->arg, st);
  }
  free(p->dst);
  free(p);
}

/* The task owning device dev ("/job:J/replica:0/task:T", malloc'd into
 * *task) and its URL, or NULL (st set). */
static char *task_url(tf_worker *w, const char *dev, char **task, tf_status *st) {
  char job[64];
  int t = -1;
  *task = NULL;
  if (sscanf(dev, "/job:%63[^/]/replica:0/task:%d", job, &t) != 2) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "receiving device '%s' is not a "
                  "full device name", dev);
    return NULL;
  }
  char *url = tf_cluster_task_url(w->spec, job, t);
  if (url == NULL) {
    tf_status_set(st, TF_NOT_FOUND, "receiving device '%s': no such task in "
                  "%s", dev, w->spec->path);
    return NULL;
  }
  *task = tf__xasprintf("/job:%s/replica:0/task:%d", job, t);
  return url;
}

/* The TensorPush request for (step_id, key), from this task to task. */
static nng_msg *push_msg(tf_worker *w, const char *task, uint64_t step_id,
                         const char *key, tf_tensor *t, bool is_dead,
                         tf_status *st) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_TENSOR_PUSH,
                      .request_id = tf_rpc_new_request_id(), .step_id = step_id,
                      .deadline_ms = w->spec->rpc_timeout_ms,
                      .from = w->task_prefix, .from_inc = w->incarnation,
                      .to = task, .to_inc = 0 /* unknown here */};
  tf_wire_writer *wr = tf_wire_writer_new(&h);
  tf_msg_tensor_push_req b = {.key = key, .dead = is_dead,
                              .tensor = is_dead ? NULL : t};
  tf_msg_tensor_push_req_encode(wr, &b);
  nng_msg *m = NULL;
  tf_wire_finish(wr, &m, st);
  return m;
}

void tf__wk_remote_send(void *arg, uint64_t step_id, const char *key,
                        const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                        tf_rdv_send_done done, void *done_arg) {
  tf_worker *w = arg;
  tf_status st;
  tf_status_init(&st);
  char *task = NULL;
  char *url = task_url(w, k->dst_device, &task, &st);
  tf_rpc_client *c = url ? tf__wk_client(w, url, &st) : NULL;
  nng_msg *m = c != NULL ? push_msg(w, task, step_id, key, t, is_dead, &st) : NULL;
  free(task);
  if (m == NULL) {
    free(url);
    done(done_arg, &st);
    return;
  }
  push_ctx *p = tf__xcalloc(1, sizeof *p);
  p->done = done;
  p->arg = done_arg;
  p->dst = url;
  tf_rpc_call_async(c, m, w->spec->rpc_timeout_ms, push_done, p);
}
