/* worker_run.c: RunGraph (run a registered partition for one step),
 * TensorPush (a tensor another task sent to this one) and the remote send
 * of this task's tensors to other tasks.
 *
 * Tensors move by sender push. A _Send whose receiver lives on another
 * task goes over the receiver's tensor stream when it serves one
 * (worker_stream.c: every tensor but strings and dead values; the
 * receiver reports a frame it refuses by failing its own part of the
 * step). Otherwise it becomes one TensorPush request to that task's
 * worker, which puts it into the step's rendezvous table (made on arrival
 * if the receiver's part of the step has not started yet). A TensorPush's
 * _Send completes as soon as the push is handed to the transport (no
 * round trip on the step's critical path); the step's reply waits for the
 * pushes' answers, and a failed delivery (an error reply or a transport
 * failure) cancels the sending step with that status, naming the receiver
 * and the key, so the master learns it and aborts the rest of the step.
 *
 * RunGraph is asynchronous: the handler decodes, admits (limits.max_steps)
 * and starts the executor; the step's completion callback sends the
 * reply. TensorPush never blocks: it puts the tensor into the step's
 * table (limits.max_pushed_mb bounds what waits there unreceived). Both
 * run on the NNG thread that received them (worker.c's runs_inline), where
 * the executor runs only cheap nodes and hands the others to its runner. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/worker_impl.h"

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
  /* The master's transport drops a larger message with the connection:
   * fail the step with the sizes instead. */
  if (m != NULL && nng_msg_len(m) > (size_t)w->spec->max_message_bytes) {
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: the RunGraph reply (the step's fetches) "
                  "is %zu bytes, more than max_message_mb allows (%lld bytes)",
                  w->task_prefix, nng_msg_len(m), (long long)w->spec->max_message_bytes);
    nng_msg_free(m);
    m = NULL;
  }
  return m;
}

/* Drops the step's table (or aborts it after a failure), leaves the
 * registry and answers the step's call. Runs once, when the step is
 * over. */
static void step_finish(wk_step *s) {
  tf_worker *w = s->w;
  const tf_wire_msg *req = tf_rpc_call_request(s->call);
  tf_status st = s->st; /* final: written under w->mu before finished */
  nng_msg *reply = NULL;
  if (st.code == TF_OK) {
    reply = run_reply(w, req, s->g, s->rets, s->req.n_rets,
                      s->req.trace ? &s->tr : NULL, &st);
  }
  if (reply != NULL) {
    /* Every _Recv of the partition has its value and every push was
     * answered: nothing more arrives for this step here, so its table
     * goes now (the master sends CleanupGraph only after a failure). */
    tf_rdv_mgr_cleanup(w->rdv, s->step_id);
  } else {
    if (strncmp(st.msg, w->task_prefix, strlen(w->task_prefix)) != 0) {
      tf_status_prefix(&st, "%s", w->task_prefix);
    }
    tf_rdv_mgr_abort(w->rdv, s->step_id, &st);
  }
  tf_rdv_step_unref(s->rdv);
  s->rdv = NULL;
  atomic_fetch_add(&w->steps_run, 1);
  tf__step_metrics_done(&w->step_metrics, s->start_ns, st.code);
  for (int i = 0; s->rets != NULL && i < s->req.n_rets; i++) tf_tensor_unref(s->rets[i]);
  free(s->rets);
  free(s->tr.stats);
  tf__wk_graph_put(w, s->g);
  tf_msg_run_graph_req_fini(&s->req);
  /* The step is over on this task before its answer leaves (teardown
   * then waits for the answer in tf_rpc_server_stop). */
  struct tf_rpc_call *call = s->call;
  tf__wk_step_remove(w, s);
  if (reply != NULL) {
    tf_rpc_reply(call, reply);
  } else {
    tf_rpc_reply_error(call, &st);
  }
}

/* Records one part of the step as done (the executor, exec = true, or a
 * push) with its status; finishes the step when it is over: the executor
 * is done and every push was answered, or the step failed (a failed
 * step's remaining pushes are not waited for). */
static void step_part_done(wk_step *s, bool exec, const tf_status *st) {
  tf_worker *w = s->w;
  pthread_mutex_lock(&w->mu);
  if (st->code != TF_OK && s->st.code == TF_OK) s->st = *st;
  if (exec) {
    s->exec_done = true;
  } else {
    s->pending--;
  }
  bool over = !s->finished && s->exec_done &&
              (s->pending == 0 || s->st.code != TF_OK);
  if (over) s->finished = true;
  pthread_mutex_unlock(&w->mu);
  if (over) step_finish(s);
}

static void exec_done(void *arg, const tf_status *st) {
  step_part_done(arg, true, st);
}

/* Decodes, checks and admits a RunGraph; NULL with st set when refused. */
static wk_step *step_new(tf_worker *w, struct tf_rpc_call *call, tf_status *st) {
  const tf_wire_msg *req = tf_rpc_call_request(call);
  wk_step *s = tf__xcalloc(1, sizeof *s);
  s->w = w;
  s->call = call;
  s->step_id = req->h.step_id;
  if (tf_msg_run_graph_req_decode(req, &s->req, st) != TF_OK) {
    free(s);
    return NULL;
  }
  s->g = tf__wk_graph_get(w, s->req.handle, st);
  if (s->g == NULL) {
    tf_msg_run_graph_req_fini(&s->req);
    free(s);
    return NULL;
  }
  tf_cancel_init(&s->cancel);
  tf__ref_init(&s->refs, 1); /* the registry's */
  tf_status_init(&s->st);
  s->deadline_ms = req->h.deadline_ms;
  s->start_ns = tf__now_ns();
  s->deadline_ns = s->deadline_ms > 0 ? tf__now_ns() + s->deadline_ms * 1000000 : 0;
  if (tf__wk_step_admit(w, s, st) != TF_OK) {
    tf__wk_graph_put(w, s->g);
    tf_msg_run_graph_req_fini(&s->req);
    tf_cancel_fini(&s->cancel);
    free(s);
    return NULL;
  }
  return s;
}

void tf__wk_run_graph(tf_worker *w, struct tf_rpc_call *call) {
  tf_status st;
  tf_status_init(&st);
  wk_step *s = step_new(w, call, &st);
  if (s == NULL) {
    tf_rpc_reply_error(call, &st);
    return;
  }
  s->rdv = tf_rdv_mgr_step(w->rdv, s->step_id, &st);
  if (s->rdv == NULL) {
    step_part_done(s, true, &st);
    return;
  }
  s->rets = tf__xcalloc((size_t)s->req.n_rets + 1, sizeof *s->rets);
  s->ctx = (tf_step_ctx){.step_id = s->step_id, .resources = w->res,
                         .cancel = &s->cancel, .args = s->req.args,
                         .n_args = s->req.n_args, .retvals = s->rets,
                         .n_retvals = s->req.n_rets, .rendezvous = s->rdv};
  /* The executor's timer cancels the step when its deadline passes. */
  tf_executor_run_async(s->g->ex, &s->ctx, s->req.trace ? &s->tr : NULL,
                        s->deadline_ns, exec_done, s);
}

/* ---- TensorPush ----------------------------------------------------------- */

void tf__wk_tensor_push(tf_worker *w, struct tf_rpc_call *call) {
  const tf_wire_msg *req = tf_rpc_call_request(call);
  tf_status st;
  tf_status_init(&st);
  tf_msg_tensor_push_req p;
  if (tf_msg_tensor_push_req_decode(req, &p, &st) != TF_OK) {
    tf_rpc_reply_error(call, &st);
    return;
  }
  nng_msg *reply = NULL;
  tf_code rc = tf_rdv_mgr_deliver(w->rdv, req->h.step_id, p.key, p.tensor, p.dead, &st);
  if (rc == TF_OK) {
    reply = tf__wk_empty_reply(w, req, &st);
  } else if (rc == TF_RESOURCE_EXHAUSTED) {
    tf_status cap = st;
    tf_status_set(&st, rc, "%s: TensorPush %s (limits.max_pushed_mb)",
                  w->task_prefix, cap.msg);
  }
  tf_msg_tensor_push_req_fini(&p);
  if (reply != NULL) {
    tf_rpc_reply(call, reply);
  } else {
    tf_rpc_reply_error(call, &st);
  }
}

/* ---- remote send ---------------------------------------------------------- */

typedef struct push_ctx {
  tf_worker *w;
  wk_step *s;   /* the sending step (a reference), or NULL */
  uint64_t step_id;
  char *dst;    /* the receiving task */
  char *key;
} push_ctx;

static void push_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  push_ctx *p = arg;
  tf_worker *w = p->w;
  tf_wire_msg_free(reply);
  tf_status s2;
  tf_status_init(&s2);
  if (st->code != TF_OK) {
    tf_status_set(&s2, st->code, "%s: delivering key '%s' of step %" PRIu64
                  " to %s failed: %s", w->task_prefix, p->key, p->step_id,
                  p->dst, st->msg);
    if (p->s != NULL) {
      tf_cancel_start(&p->s->cancel, s2.code, s2.msg);
    } else {
      tf_log(LOG_WARNING, "%s", s2.msg);
    }
  }
  if (p->s != NULL) {
    step_part_done(p->s, false, &s2);
    tf__wk_step_unref(p->s);
  }
  pthread_mutex_lock(&w->mu);
  if (--w->pushes == 0 && w->n_steps == 0) pthread_cond_broadcast(&w->idle_cv);
  pthread_mutex_unlock(&w->mu);
  free(p->dst);
  free(p->key);
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

/* The context of a push of step_id: counts it in flight, and as pending
 * for the running step of that id on this task (if any). */
static push_ctx *push_begin(tf_worker *w, uint64_t step_id, char *dst,
                            const char *key) {
  push_ctx *p = tf__xcalloc(1, sizeof *p);
  p->w = w;
  p->step_id = step_id;
  p->dst = dst;
  p->key = tf__xstrdup(key);
  pthread_mutex_lock(&w->mu);
  w->pushes++;
  for (int i = 0; i < w->n_steps; i++) {
    wk_step *s = w->steps[i];
    if (s->step_id == step_id && !s->finished) {
      s->pending++;
      tf__ref_get(&s->refs);
      p->s = s;
      break;
    }
  }
  pthread_mutex_unlock(&w->mu);
  return p;
}

void tf__wk_push_message(tf_worker *w, const char *url, const char *task,
                         uint64_t step_id, const char *key, tf_tensor *t,
                         bool is_dead, tf_rdv_send_done done, void *done_arg) {
  tf_status st;
  tf_status_init(&st);
  tf_rpc_client *c = tf__wk_client(w, url, task, &st);
  nng_msg *m = c != NULL ? push_msg(w, task, step_id, key, t, is_dead, &st) : NULL;
  if (m == NULL) {
    done(done_arg, &st);
    return;
  }
  push_ctx *p = push_begin(w, step_id, tf__xstrdup(task), key);
  tf_rpc_call_async(c, m, w->spec->rpc_timeout_ms, push_done, p);
  done(done_arg, &st); /* handed to the transport: the _Send is complete */
}

void tf__wk_remote_send(void *arg, uint64_t step_id, const char *key,
                        const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                        tf_rdv_send_done done, void *done_arg) {
  tf_worker *w = arg;
  tf_status st;
  tf_status_init(&st);
  char *task = NULL;
  char *url = task_url(w, k->dst_device, &task, &st);
  if (url == NULL) {
    done(done_arg, &st);
    return;
  }
  /* Every tensor but strings and dead values goes by the receiver's
   * stream when it has one: a frame costs no answer and no reply, where a
   * TensorPush costs a request and a reply through two NNG protocol
   * layers (docs/benchmarks.md, "Null steps: fewer thread wake-ups"). */
  bool streamable = !is_dead && t != NULL && t->dtype != TF_STRING;
  if (!streamable || !tf__wk_stream_send(w, url, task, step_id, key, t, done, done_arg)) {
    tf__wk_push_message(w, url, task, step_id, key, t, is_dead, done, done_arg);
  }
  free(url);
  free(task);
}
