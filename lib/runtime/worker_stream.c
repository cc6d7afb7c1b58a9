/* worker_stream.c: large tensors between workers over the tensor stream
 * (lib/transport/tensor_stream.h) instead of a TensorPush message.
 *
 * Each worker serves a tensor-stream server on its RPC host (a free port)
 * and advertises its URL in its GetStatus reply (`tensor_stream`). A
 * sender sends every tensor (not a string, not dead) to a peer over the
 * stream once it knows the peer's stream URL:
 * it asks the peer once (GetStatus, asynchronously; the sends that arrive
 * meanwhile wait in the peer's queue), caches the answer per peer URL with
 * the peer's incarnation (the frames name it, so a restarted peer refuses
 * them) and keeps one tf_tstream_client per peer. A peer that advertises
 * no stream (an older worker) gets the message path, and is asked again
 * after TF_WK_PEER_RECHECK_MS; a failed GetStatus sends that batch by the
 * message path and asks again on the next send.
 *
 * The _Send completes when its frame was handed to the kernel (the
 * stream's done). A failed send fails the _Send and cancels the sending
 * step with `<sender>: delivering key '<key>' of step S to <receiver>
 * failed: <reason>` (as the message path does), and drops the cached peer
 * (the next send asks again). Since the stream has no answer, a frame the
 * receiver refuses (its pushed-bytes cap, a step already over, a duplicate)
 * is reported by the receiver: it aborts its own part of the step with the
 * refusal (its rendezvous for the step and its running RunGraph fail with
 * `<receiver>: tensor stream from <sender>: <reason>`), so its RunGraph
 * fails and the master aborts the step everywhere. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/worker_impl.h"

typedef enum { PEER_UNKNOWN, PEER_LOOKING, PEER_STREAM, PEER_NOSTREAM } peer_state;

/* A send waiting for its peer's GetStatus answer. */
typedef struct wk_qsend {
  uint64_t step_id;
  char *key;
  tf_tensor *t; /* a reference */
  tf_rdv_send_done done;
  void *done_arg;
  struct wk_qsend *next;
} wk_qsend;

/* A stream client with the sends using it right now (w->pmu): a retired
 * client is freed once no send is between taking it and handing it its
 * frame. */
typedef struct wk_sclient {
  tf_tstream_client *c;
  int users;
} wk_sclient;

/* A peer worker, by its RPC URL (made on first use, freed with the
 * worker). */
typedef struct wk_peer {
  char *url;
  char *task;
  peer_state state;
  uint64_t inc;        /* its incarnation, as its GetStatus gave it */
  int64_t checked_ns;  /* when PEER_NOSTREAM was learnt */
  int64_t redial_ns;   /* when a send was last retried after a failed dial */
  wk_sclient *client;  /* PEER_STREAM */
  wk_qsend *queue, **tail;
  struct wk_peer *next;  /* w->peers */
} wk_peer;

/* One frame in flight. */
typedef struct wk_ssend {
  tf_worker *w;
  wk_peer *peer;
  wk_sclient *client;
  uint64_t step_id;
  char *key;
  tf_tensor *t;        /* a reference, for a retry */
  tf_rdv_send_done done;
  void *done_arg;
} wk_ssend;

/* ---- the server ----------------------------------------------------------- */

/* Puts a received tensor into the step's table as TensorPush does; a
 * refusal aborts this task's part of the step (see the top). */
static tf_code deliver(void *arg, const tf_tstream_hdr *h, tf_tensor *t, tf_status *st) {
  tf_worker *w = arg;
  tf_code rc = tf_rdv_mgr_deliver(w->rdv, h->step_id, h->key, t, h->is_dead, st);
  if (rc == TF_OK) return TF_OK;
  tf_status why = *st;
  tf_status_set(st, rc, "%s: tensor stream from %s: %s%s", w->task_prefix, h->from,
                why.msg, rc == TF_RESOURCE_EXHAUSTED ? " (limits.max_pushed_mb)" : "");
  tf_log(LOG_WARNING, "%s; aborting step %" PRIu64 " here", st->msg, h->step_id);
  tf__wk_cancel_steps(w, h->step_id, NULL, rc, st->msg);
  tf_rdv_mgr_abort(w->rdv, h->step_id, st);
  return rc;
}

static void stream_log(void *arg, const char *line) {
  tf_log(LOG_WARNING, "tensor stream: %s", line);
}

/* "tcp://host:0" for the RPC URL "tcp://host:port" (tls+tcp likewise: the
 * stream uses the process's TLS configuration, as the RPC server does),
 * else NULL. */
static char *stream_url_for(const char *rpc_url) {
  const char *colon = strrchr(rpc_url, ':');
  int scheme = strncmp(rpc_url, "tcp://", 6) == 0 ? 6
               : strncmp(rpc_url, "tls+tcp://", 10) == 0 ? 10 : 0;
  if (scheme == 0 || colon == NULL || colon < rpc_url + scheme) {
    return NULL;
  }
  return tf__xasprintf("%.*s%.*s:0", scheme, rpc_url, (int)(colon - rpc_url - scheme),
                       rpc_url + scheme);
}

tf_code tf__wk_stream_start(tf_worker *w, const char *rpc_url, tf_status *st) {
  char *url = stream_url_for(rpc_url);
  if (url == NULL) {
    tf_log(LOG_INFO, "%s: no tensor stream on %s (tcp:// and tls+tcp:// only): every tensor "
           "goes by TensorPush", w->task_prefix, rpc_url);
    return TF_OK;
  }
  tf_tstream_server_opts o = tf_tstream_server_opts_default();
  o.url = url;
  o.max_tensor_bytes = (uint64_t)w->spec->max_message_bytes;
  o.max_connections = w->spec->max_connections;
  o.idle_ms = w->spec->idle_connection_ms;
  o.self_task = w->task_prefix;
  o.self_incarnation = w->incarnation;
  o.log = stream_log;
  tf_tstream_server *srv = NULL;
  tf_code rc = tf_tstream_server_start(&o, deliver, w, &srv, st);
  if (rc != TF_OK) {
    tf_status_prefix(st, "tensor stream of %s", w->task_prefix);
  } else {
    /* Published for GetStatus, which the RPC server may already serve. */
    __atomic_store_n(&w->tsrv, srv, __ATOMIC_RELEASE);
    tf_log(LOG_INFO, "%s: tensor stream on %s", w->task_prefix,
           tf_tstream_server_url(srv));
  }
  free(url);
  return rc;
}

const char *tf__wk_stream_url(const tf_worker *w) {
  tf_tstream_server *srv = __atomic_load_n(&w->tsrv, __ATOMIC_ACQUIRE);
  return srv != NULL ? tf_tstream_server_url(srv) : NULL;
}

void tf__wk_stream_stop(tf_worker *w) {
  tf_tstream_server_stop(w->tsrv);
  w->tsrv = NULL;
}

/* ---- clients and peers ------------------------------------------------------ */

static void sclient_retire_locked(tf_worker *w, wk_sclient *c) {
  if (w->n_retired == w->cap_retired) {
    w->cap_retired = w->cap_retired ? 2 * w->cap_retired : 4;
    w->retired = tf__xrealloc(w->retired, (size_t)w->cap_retired * sizeof *w->retired);
  }
  w->retired[w->n_retired++] = c;
}

/* Frees the retired clients no send is using (all of them with all = true:
 * teardown). Never under w->pmu. */
static void free_retired(tf_worker *w, bool all) {
  pthread_mutex_lock(&w->pmu);
  wk_sclient **v = tf__xcalloc((size_t)w->n_retired + 1, sizeof *v);
  int n = 0, kept = 0;
  for (int i = 0; i < w->n_retired; i++) {
    wk_sclient *c = w->retired[i];
    if (all || c->users == 0) {
      v[n++] = c;
    } else {
      w->retired[kept++] = c;
    }
  }
  w->n_retired = kept;
  pthread_mutex_unlock(&w->pmu);
  for (int i = 0; i < n; i++) {
    tf_tstream_client_free(v[i]->c);
    free(v[i]);
  }
  free(v);
}

void tf__wk_stream_tick(tf_worker *w) { free_retired(w, false); }

void tf__wk_stream_free(tf_worker *w) {
  pthread_mutex_lock(&w->pmu);
  for (wk_peer *p = w->peers; p != NULL; p = p->next) {
    if (p->client != NULL) sclient_retire_locked(w, p->client);
    p->client = NULL;
  }
  pthread_mutex_unlock(&w->pmu);
  free_retired(w, true);
  while (w->peers != NULL) {
    wk_peer *p = w->peers;
    w->peers = p->next;
    free(p->url);
    free(p->task);
    free(p);
  }
  free(w->retired);
  pthread_mutex_destroy(&w->pmu);
}

/* The peer at url (made if new). Under w->pmu. */
static wk_peer *peer_get_locked(tf_worker *w, const char *url, const char *task) {
  for (wk_peer *p = w->peers; p != NULL; p = p->next) {
    if (strcmp(p->url, url) == 0) return p;
  }
  wk_peer *p = tf__xcalloc(1, sizeof *p);
  p->url = tf__xstrdup(url);
  p->task = tf__xstrdup(task);
  p->tail = &p->queue;
  p->next = w->peers;
  w->peers = p;
  return p;
}

/* Forgets what p's GetStatus said (its stream client retired), so the
 * next large send asks again. Under w->pmu. */
static void peer_forget_locked(tf_worker *w, wk_peer *p, wk_sclient *failed) {
  if (p->state != PEER_STREAM || p->client != failed) return;
  sclient_retire_locked(w, p->client);
  p->client = NULL;
  p->state = PEER_UNKNOWN;
}

/* ---- sending ---------------------------------------------------------------- */

/* Counts a send in flight (teardown waits for w->pushes), or its end. */
static void count_send(tf_worker *w, int d) {
  pthread_mutex_lock(&w->mu);
  w->pushes += d;
  if (w->pushes == 0 && w->n_steps == 0) pthread_cond_broadcast(&w->idle_cv);
  pthread_mutex_unlock(&w->mu);
}

/* Whether a send that could not reach p's stream may go again: the dial
 * failed (no byte of the frame left: the client's "cannot connect"), so
 * p's advertised stream may be that of an incarnation gone (a restarted
 * peer serves its stream on a new port). At most once a second per peer.
 * Forgets p's stream when so. */
static bool may_redial(tf_worker *w, wk_ssend *s, const tf_status *st) {
  if (st->code != TF_UNAVAILABLE || strstr(st->msg, ": cannot connect: ") == NULL) {
    return false;
  }
  int64_t now = tf__now_ns();
  pthread_mutex_lock(&w->pmu);
  bool again = now - s->peer->redial_ns > 1000000000LL;
  if (again) {
    s->peer->redial_ns = now;
    peer_forget_locked(w, s->peer, s->client);
  }
  pthread_mutex_unlock(&w->pmu);
  return again;
}

static void ssend_done(void *arg, const tf_status *st) {
  wk_ssend *s = arg;
  tf_worker *w = s->w;
  tf_status s2;
  tf_status_init(&s2);
  if (may_redial(w, s, st)) {
    tf_log(LOG_INFO, "%s: %s's tensor stream did not answer (%s): asking it again",
           w->task_prefix, s->peer->task, st->msg);
    if (!tf__wk_stream_send(w, s->peer->url, s->peer->task, s->step_id, s->key, s->t,
                            s->done, s->done_arg)) {
      tf__wk_push_message(w, s->peer->url, s->peer->task, s->step_id, s->key, s->t,
                          false, s->done, s->done_arg);
    }
    tf_tensor_unref(s->t);
    free(s->key);
    free(s);
    count_send(w, -1);
    return;
  }
  if (st->code != TF_OK) {
    tf_status_set(&s2, st->code, "%s: delivering key '%s' of step %" PRIu64 " to %s "
                  "failed: %s", w->task_prefix, s->key, s->step_id, s->peer->task,
                  st->msg);
    pthread_mutex_lock(&w->pmu);
    peer_forget_locked(w, s->peer, s->client);
    pthread_mutex_unlock(&w->pmu);
    tf__wk_cancel_steps(w, s->step_id, NULL, s2.code, s2.msg);
  }
  s->done(s->done_arg, &s2);
  tf_tensor_unref(s->t);
  free(s->key);
  free(s);
  count_send(w, -1);
}

/* Writes t to p over c (which the caller holds: c->users counted). */
static void stream_send_now(tf_worker *w, wk_peer *p, wk_sclient *c, uint64_t inc,
                            uint64_t step_id, const char *key, tf_tensor *t,
                            tf_rdv_send_done done, void *done_arg) {
  wk_ssend *s = tf__xcalloc(1, sizeof *s);
  *s = (wk_ssend){.w = w, .peer = p, .client = c, .step_id = step_id,
                  .key = tf__xstrdup(key), .t = tf_tensor_ref(t), .done = done,
                  .done_arg = done_arg};
  tf_tstream_hdr h = {.step_id = step_id, .key = key, .from = w->task_prefix,
                      .from_inc = w->incarnation, .to = p->task, .to_inc = inc};
  count_send(w, 1);
  tf_tstream_send(c->c, &h, t, ssend_done, s);
  pthread_mutex_lock(&w->pmu);
  c->users--;
  pthread_mutex_unlock(&w->pmu);
}

/* Sends q by p's stream, or by TensorPush when p has none; frees q. */
static void dispatch(tf_worker *w, wk_peer *p, wk_qsend *q) {
  pthread_mutex_lock(&w->pmu);
  wk_sclient *c = p->state == PEER_STREAM ? p->client : NULL;
  uint64_t inc = p->inc;
  if (c != NULL) c->users++;
  pthread_mutex_unlock(&w->pmu);
  if (c != NULL) {
    stream_send_now(w, p, c, inc, q->step_id, q->key, q->t, q->done, q->done_arg);
  } else {
    tf__wk_push_message(w, p->url, p->task, q->step_id, q->key, q->t, false, q->done,
                        q->done_arg);
  }
  tf_tensor_unref(q->t);
  free(q->key);
  free(q);
  count_send(w, -1);
}

static tf_tstream_client_opts client_opts(const tf_worker *w) {
  tf_tstream_client_opts o = tf_tstream_client_opts_default();
  const tf_cluster_spec *spec = w->spec;
  if (spec->rpc_timeout_ms > 0 && spec->rpc_timeout_ms < o.dial_timeout_ms) {
    o.dial_timeout_ms = spec->rpc_timeout_ms;
  }
  /* Below the peer's idle close (the same spec's idle_connection_ms). */
  int64_t idle = spec->idle_connection_ms / 2;
  if (idle > 0 && idle < o.idle_ms) o.idle_ms = idle;
  return o;
}

/* What p's GetStatus answer (r, NULL when the call failed with why) means:
 * a stream client, no stream, or ask again later. Under w->pmu. */
static void peer_learn_locked(tf_worker *w, wk_peer *p, const tf_msg_get_status_reply *r,
                              tf_tstream_client *c, const tf_status *why) {
  if (c != NULL) {
    p->client = tf__xcalloc(1, sizeof *p->client);
    p->client->c = c;
    p->inc = r->incarnation;
    p->state = PEER_STREAM;
    tf_log(LOG_DEBUG, "%s: large tensors to %s (incarnation %016" PRIx64 ") go by its "
           "tensor stream %s", w->task_prefix, p->task, p->inc, r->tensor_stream);
  } else if (r != NULL) {
    p->state = PEER_NOSTREAM;
    p->checked_ns = tf__now_ns();
    tf_log(LOG_INFO, "%s: %s serves no usable tensor stream%s%s: its tensors go by "
           "TensorPush", w->task_prefix, p->task, why->code != TF_OK ? ": " : "",
           why->code != TF_OK ? why->msg : "");
  } else {
    p->state = PEER_UNKNOWN;
    tf_log(LOG_NOTICE, "%s: GetStatus to %s for its tensor stream failed (%s): "
           "sending by TensorPush", w->task_prefix, p->task, why->msg);
  }
}

typedef struct lookup_ctx {
  tf_worker *w;
  wk_peer *p;
} lookup_ctx;

static void lookup_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  lookup_ctx lc = *(lookup_ctx *)arg;
  free(arg);
  tf_worker *w = lc.w;
  tf_status why = *st;
  tf_msg_get_status_reply r;
  bool ok = st->code == TF_OK &&
            tf_msg_get_status_reply_decode(reply, &r, &why) == TF_OK;
  tf_tstream_client *c = NULL;
  tf_status cst;
  tf_status_init(&cst);
  if (ok && r.tensor_stream[0] != '\0') {
    tf_tstream_client_opts o = client_opts(w);
    tf_tstream_client_new(r.tensor_stream, &o, &c, &cst);
  }
  pthread_mutex_lock(&w->pmu);
  peer_learn_locked(w, lc.p, ok ? &r : NULL, c, ok ? &cst : &why);
  wk_qsend *q = lc.p->queue;
  lc.p->queue = NULL;
  lc.p->tail = &lc.p->queue;
  pthread_mutex_unlock(&w->pmu);
  while (q != NULL) {
    wk_qsend *next = q->next;
    dispatch(w, lc.p, q);
    q = next;
  }
  if (ok) tf_msg_get_status_reply_fini(&r);
  tf_wire_msg_free(reply);
}

/* Asks p (GetStatus) for its stream URL; lookup_done takes it from there. */
static void lookup_start(tf_worker *w, wk_peer *p) {
  lookup_ctx *lc = tf__xcalloc(1, sizeof *lc);
  *lc = (lookup_ctx){w, p};
  tf_status st;
  tf_status_init(&st);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_GET_STATUS,
                      .request_id = tf_rpc_new_request_id(),
                      .deadline_ms = w->spec->rpc_timeout_ms, .from = w->task_prefix,
                      .from_inc = w->incarnation, .to = p->task};
  nng_msg *m = NULL;
  tf_rpc_client *c = tf__wk_client(w, p->url, p->task, &st);
  if (c != NULL && tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK) {
    tf_rpc_call_async(c, m, w->spec->rpc_timeout_ms, lookup_done, lc);
  } else {
    lookup_done(lc, &st, NULL);
  }
}

bool tf__wk_stream_send(tf_worker *w, const char *url, const char *task,
                        uint64_t step_id, const char *key, tf_tensor *t,
                        tf_rdv_send_done done, void *done_arg) {
  pthread_mutex_lock(&w->pmu);
  wk_peer *p = peer_get_locked(w, url, task);
  if (p->state == PEER_NOSTREAM &&
      tf__now_ns() - p->checked_ns > (int64_t)TF_WK_PEER_RECHECK_MS * 1000000) {
    p->state = PEER_UNKNOWN;
  }
  if (p->state == PEER_NOSTREAM) {
    pthread_mutex_unlock(&w->pmu);
    return false;
  }
  if (p->state == PEER_STREAM) {
    wk_sclient *c = p->client;
    uint64_t inc = p->inc;
    c->users++;
    pthread_mutex_unlock(&w->pmu);
    stream_send_now(w, p, c, inc, step_id, key, t, done, done_arg);
    return true;
  }
  bool start = p->state == PEER_UNKNOWN;
  p->state = PEER_LOOKING;
  wk_qsend *q = tf__xcalloc(1, sizeof *q);
  *q = (wk_qsend){.step_id = step_id, .key = tf__xstrdup(key), .t = tf_tensor_ref(t),
                  .done = done, .done_arg = done_arg};
  *p->tail = q;
  p->tail = &q->next;
  count_send(w, 1); /* w->pmu, then w->mu: never the other way round */
  pthread_mutex_unlock(&w->pmu);
  if (start) lookup_start(w, p);
  return true;
}
