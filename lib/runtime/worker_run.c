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

typedef struct run_req {
  uint64_t handle;
  int n_args, n_rets;
  tf_tensor **args;
  bool trace;
} run_req;

static void run_req_fini(run_req *r) {
  for (int i = 0; i < r->n_args; i++) tf_tensor_unref(r->args[i]);
  free(r->args);
}

static tf_code parse_run(const tf_wire_msg *req, run_req *r, tf_status *st) {
  memset(r, 0, sizeof *r);
  TF_TRY(tf_wire_get_u64(&req->body, "handle", "RunGraph", &r->handle, st));
  int64_t n_rets;
  TF_TRY(tf_wire_get_i64(&req->body, "n_rets", "RunGraph", &n_rets, st));
  if (n_rets < 0 || n_rets > 1000000) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "RunGraph: n_rets %" PRId64
                         " out of range", n_rets);
  }
  r->n_rets = (int)n_rets;
  const msgpack_object *t = tf_wire_get(&req->body, "trace");
  r->trace = t != NULL && t->type == MSGPACK_OBJECT_BOOLEAN && t->via.boolean;
  const msgpack_object_array *a = tf_wire_get_array(&req->body, "args", "RunGraph", st);
  if (a == NULL) return st->code;
  r->args = tf__xcalloc(a->size + 1, sizeof *r->args);
  for (uint32_t i = 0; i < a->size; i++) {
    if (tf_wire_unpack_tensor(req, &a->ptr[i], &r->args[i], st) != TF_OK) {
      return tf_status_prefix(st, "RunGraph: args[%u]", i);
    }
    r->n_args++;
  }
  return TF_OK;
}

static nng_msg *run_reply(const tf_wire_msg *req, wk_graph *g, tf_tensor **rets,
                          int n_rets, const tf_exec_trace *tr, tf_status *st) {
  tf_wire_writer *wr = tf_wire_reply_writer(req);
  msgpack_packer *pk = tf_wire_body(wr);
  tf__mp_map body;
  tf__mp_map_begin(&body, pk, 2);
  tf__mp_map_key(&body, "rets");
  msgpack_pack_array(pk, (size_t)n_rets);
  for (int i = 0; i < n_rets; i++) {
    if (rets[i] == NULL) {
      msgpack_pack_nil(pk);
    } else {
      tf_wire_pack_tensor(wr, rets[i]);
    }
  }
  tf__mp_map_key(&body, "timings");
  msgpack_pack_array(pk, tr ? (size_t)tr->n : 0);
  for (int i = 0; tr != NULL && i < tr->n; i++) {
    msgpack_pack_array(pk, 3);
    tf_wire_pack_str(pk, tf_node_name(tf_graph_node(g->g, tr->stats[i].node)));
    msgpack_pack_int64(pk, tr->stats[i].start_ns);
    msgpack_pack_int64(pk, tr->stats[i].end_ns);
  }
  tf__mp_map_end(&body);
  nng_msg *m = NULL;
  tf_wire_finish(wr, &m, st);
  return m;
}

nng_msg *tf__wk_run_graph(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  run_req r;
  if (parse_run(req, &r, st) != TF_OK) {
    run_req_fini(&r);
    return NULL;
  }
  wk_graph *g = tf__wk_graph_get(w, r.handle, st);
  if (g == NULL) {
    run_req_fini(&r);
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
        reply = run_reply(req, g, rets, r.n_rets, r.trace ? &tr : NULL, st);
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
  run_req_fini(&r);
  return reply;
}

/* ---- TensorPush ----------------------------------------------------------- */

nng_msg *tf__wk_tensor_push(tf_worker *w, const tf_wire_msg *req, tf_status *st) {
  char *key = NULL;
  bool dead = false;
  tf_tensor *t = NULL;
  nng_msg *reply = NULL;
  if (tf_wire_get_str(&req->body, "key", "TensorPush", &key, st) == TF_OK &&
      tf_wire_get_bool(&req->body, "dead", "TensorPush", &dead, st) == TF_OK) {
    const msgpack_object *d = tf_wire_get(&req->body, "tensor");
    tf_code rc = TF_OK;
    if (!dead) {
      rc = d == NULL ? tf_status_set(st, TF_INVALID_ARGUMENT,
                                     "field 'tensor' missing")
                     : tf_wire_unpack_tensor(req, d, &t, st);
    }
    if (rc != TF_OK) {
      tf_status_prefix(st, "TensorPush '%s'", key);
    } else if (tf_rdv_mgr_deliver(w->rdv, req->h.step_id, key, t, dead, st) == TF_OK) {
      reply = tf__wk_empty_reply(req, st);
    }
  }
  tf_tensor_unref(t);
  free(key);
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

/* The URL of the task owning device dev, or NULL (st set). */
static char *task_url(tf_worker *w, const char *dev, tf_status *st) {
  char job[64];
  int task = -1;
  if (sscanf(dev, "/job:%63[^/]/replica:0/task:%d", job, &task) != 2) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "receiving device '%s' is not a "
                  "full device name", dev);
    return NULL;
  }
  char *url = tf_cluster_task_url(w->spec, job, task);
  if (url == NULL) {
    tf_status_set(st, TF_NOT_FOUND, "receiving device '%s': no such task in "
                  "%s", dev, w->spec->path);
  }
  return url;
}

void tf__wk_remote_send(void *arg, uint64_t step_id, const char *key,
                        const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                        tf_rdv_send_done done, void *done_arg) {
  tf_worker *w = arg;
  tf_status st;
  tf_status_init(&st);
  char *url = task_url(w, k->dst_device, &st);
  tf_rpc_client *c = url ? tf__wk_client(w, url, &st) : NULL;
  nng_msg *m = NULL;
  if (c != NULL) {
    tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_TENSOR_PUSH,
                        .request_id = tf_rpc_new_request_id(), .step_id = step_id,
                        .deadline_ms = w->spec->rpc_timeout_ms};
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    msgpack_packer *pk = tf_wire_body(wr);
    tf__mp_map body;
    tf__mp_map_begin(&body, pk, 3);
    tf__mp_map_key(&body, "key");
    tf_wire_pack_str(pk, key);
    tf__mp_map_key(&body, "dead");
    if (is_dead) {
      msgpack_pack_true(pk);
    } else {
      msgpack_pack_false(pk);
    }
    tf__mp_map_key(&body, "tensor");
    if (is_dead || t == NULL) {
      msgpack_pack_nil(pk);
    } else {
      tf_wire_pack_tensor(wr, t);
    }
    tf__mp_map_end(&body);
    tf_wire_finish(wr, &m, &st);
  }
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
