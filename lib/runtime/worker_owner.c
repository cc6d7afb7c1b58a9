/* worker_owner.c: who owns a worker's graphs and steps, and the registry
 * of running steps.
 *
 * Every registered graph and running step belongs to the master that
 * registered or started it: its task name and incarnation from the
 * request header (from, from_inc). Any request from that task refreshes
 * its record (the master's periodic GetStatus health checks count). A
 * request from the same task with another incarnation means the master
 * restarted: the old incarnation's graphs are deregistered and its steps
 * aborted at once. An owner silent for longer than limits.session_ttl_ms
 * loses its graphs and steps the same way (checked from tf_worker_tick).
 *
 * The step registry bounds steps in flight (limits.max_steps), lets
 * AbortStep, owners and teardown cancel steps (the request's deadline is
 * the executor's: its timer cancels a step blocked on a queue or a _Recv
 * when the deadline passes, so it ends and is answered promptly).
 * Cancelling always happens outside
 * w->mu, holding a reference on the step. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/worker_impl.h"

/* ---- owners --------------------------------------------------------------- */

static const char *from_of(const tf_wire_msg *req) {
  return req->h.from != NULL ? req->h.from : "";
}

void tf__wk_owner_id_fini(wk_owner_id *o) {
  free(o->task);
  o->task = NULL;
}

static bool owner_is(const wk_owner_id *a, const wk_owner_id *b) {
  return a->inc == b->inc && strcmp(a->task, b->task) == 0;
}

/* "the master /job:master/replica:0/task:0 (incarnation X)" */
static void owner_label(const wk_owner_id *o, char *buf, size_t n) {
  if (o->task[0] == '\0') {
    snprintf(buf, n, "the unnamed client (incarnation %016" PRIx64 ")", o->inc);
  } else {
    snprintf(buf, n, "the master %s (incarnation %016" PRIx64 ")", o->task, o->inc);
  }
}

void tf__wk_owner_adopt_locked(tf_worker *w, const tf_wire_msg *req,
                               wk_owner_id *out) {
  const char *from = from_of(req);
  wk_owner *o = tf__strmap_get(&w->owners, from, NULL);
  if (o == NULL) {
    o = tf__xcalloc(1, sizeof *o);
    o->id.task = tf__xstrdup(from);
    o->id.inc = req->h.from_inc;
    tf__strmap_put(&w->owners, from, o);
  }
  o->last_ns = tf__now_ns();
  out->task = tf__xstrdup(o->id.task);
  out->inc = o->id.inc;
}

/* Takes the graphs of o out of the table (under w->mu); returns them. */
static wk_graph **take_graphs_locked(tf_worker *w, const wk_owner_id *o, int *n) {
  wk_graph **v = tf__xcalloc((size_t)w->n_graphs + 1, sizeof *v);
  char **keys = tf__xcalloc((size_t)w->n_graphs + 1, sizeof *keys);
  *n = 0;
  for (size_t i = 0; i < w->graphs.cap; i++) {
    wk_graph *g = w->graphs.vals[i];
    if (w->graphs.keys[i] == NULL || !owner_is(&g->owner, o)) continue;
    keys[*n] = tf__xstrdup(w->graphs.keys[i]);
    v[(*n)++] = g;
  }
  for (int i = 0; i < *n; i++) {
    tf__strmap_del(&w->graphs, keys[i]);
    free(keys[i]);
  }
  free(keys);
  w->n_graphs -= *n;
  return v;
}

/* Aborts o's steps with (code, why) and releases its graphs gs (taken out
 * of the table already); logs what it dropped. Not under w->mu. */
static void drop_owner(tf_worker *w, const wk_owner_id *o, wk_graph **gs,
                       int n_graphs, tf_code code, const char *why) {
  int n_steps = tf__wk_cancel_steps(w, 0, o, code, why);
  for (int i = 0; i < n_graphs; i++) tf__wk_graph_put(w, gs[i]);
  free(gs);
  if (n_graphs > 0 || n_steps > 0) {
    tf_log(LOG_NOTICE, "%s: deregistered %d graph(s), aborted %d step(s)", why,
           n_graphs, n_steps);
  }
}

void tf__wk_owner_seen(tf_worker *w, const tf_wire_msg *req) {
  const char *from = from_of(req);
  uint64_t inc = req->h.from_inc;
  wk_owner_id old = {NULL, 0};
  wk_graph **gs = NULL;
  int n_graphs = 0;
  pthread_mutex_lock(&w->mu);
  wk_owner *o = tf__strmap_get(&w->owners, from, NULL);
  if (o != NULL) {
    o->last_ns = tf__now_ns();
    if (inc != 0 && inc != o->id.inc) {
      old.task = tf__xstrdup(o->id.task);
      old.inc = o->id.inc;
      o->id.inc = inc;
      gs = take_graphs_locked(w, &old, &n_graphs);
    }
  }
  pthread_mutex_unlock(&w->mu);
  if (old.task == NULL) return;
  char who[200], why[320];
  owner_label(&old, who, sizeof who);
  snprintf(why, sizeof why, "%s was replaced by incarnation %016" PRIx64
           " (it restarted)", who, inc);
  drop_owner(w, &old, gs, n_graphs, TF_ABORTED, why);
  tf__wk_owner_id_fini(&old);
}

void tf__wk_owner_expire(tf_worker *w, int64_t now_ns) {
  int64_t ttl_ns = w->spec->session_ttl_ms * 1000000;
  pthread_mutex_lock(&w->mu);
  wk_owner **gone = tf__xcalloc(w->owners.n + 1, sizeof *gone);
  wk_graph ***gs = tf__xcalloc(w->owners.n + 1, sizeof *gs);
  int *n_graphs = tf__xcalloc(w->owners.n + 1, sizeof *n_graphs);
  int n = 0;
  for (size_t i = 0; i < w->owners.cap; i++) {
    wk_owner *o = w->owners.vals[i];
    if (w->owners.keys[i] != NULL && now_ns - o->last_ns > ttl_ns) gone[n++] = o;
  }
  for (int i = 0; i < n; i++) { /* with their graphs, under the same lock */
    tf__strmap_del(&w->owners, gone[i]->id.task);
    gs[i] = take_graphs_locked(w, &gone[i]->id, &n_graphs[i]);
  }
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < n; i++) {
    char who[200], why[400];
    owner_label(&gone[i]->id, who, sizeof who);
    snprintf(why, sizeof why, "%s has been silent for %lld ms (the limit, "
             "limits.session_ttl_ms, is %lld)", who,
             (long long)((now_ns - gone[i]->last_ns) / 1000000),
             (long long)w->spec->session_ttl_ms);
    drop_owner(w, &gone[i]->id, gs[i], n_graphs[i], TF_ABORTED, why);
    tf__wk_owner_id_fini(&gone[i]->id);
    free(gone[i]);
  }
  free(gone);
  free(gs);
  free(n_graphs);
}

/* ---- the step registry ---------------------------------------------------- */

static void step_release(void *arg) {
  wk_step *s = arg;
  tf_cancel_fini(&s->cancel);
  tf__wk_owner_id_fini(&s->owner);
  free(s);
}

void tf__wk_step_unref(wk_step *s) { tf__ref_put(&s->refs, step_release, s); }

tf_code tf__wk_step_admit(tf_worker *w, wk_step *s, tf_status *st) {
  const tf_wire_msg *req = tf_rpc_call_request(s->call);
  pthread_mutex_lock(&w->mu);
  tf_code rc = TF_OK;
  if (w->draining) {
    rc = tf_status_set(st, TF_UNAVAILABLE, "%s is shutting down", w->task_prefix);
  } else if (w->n_steps >= w->spec->max_steps) {
    rc = tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: %d steps in flight, the "
                       "limit (limits.max_steps) is %d", w->task_prefix,
                       w->n_steps, w->spec->max_steps);
  } else {
    if (w->n_steps == w->cap_steps) {
      w->cap_steps = w->cap_steps ? 2 * w->cap_steps : 16;
      w->steps = tf__xrealloc(w->steps, (size_t)w->cap_steps * sizeof *w->steps);
    }
    w->steps[w->n_steps++] = s;
    tf__wk_owner_adopt_locked(w, req, &s->owner);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void tf__wk_step_remove(tf_worker *w, wk_step *s) {
  pthread_mutex_lock(&w->mu);
  for (int i = 0; i < w->n_steps; i++) {
    if (w->steps[i] == s) {
      w->steps[i] = w->steps[--w->n_steps];
      break;
    }
  }
  if (w->n_steps == 0 && w->pushes == 0) pthread_cond_broadcast(&w->idle_cv);
  pthread_mutex_unlock(&w->mu);
  tf__wk_step_unref(s);
}

int tf__wk_cancel_steps(tf_worker *w, uint64_t step_id, const wk_owner_id *o,
                        tf_code code, const char *msg) {
  pthread_mutex_lock(&w->mu);
  wk_step **v = tf__xcalloc((size_t)w->n_steps + 1, sizeof *v);
  int n = 0;
  for (int i = 0; i < w->n_steps; i++) {
    wk_step *s = w->steps[i];
    if ((step_id != 0 && s->step_id != step_id) ||
        (o != NULL && !owner_is(&s->owner, o))) {
      continue;
    }
    tf__ref_get(&s->refs);
    v[n++] = s;
  }
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < n; i++) {
    tf_cancel_start(&v[i]->cancel, code, msg);
    tf__wk_step_unref(v[i]);
  }
  free(v);
  return n;
}

void tf__wk_wait_idle_locked(tf_worker *w, const char *why) {
  int64_t t0 = tf__now_ns(), logged = t0;
  while (w->n_steps > 0 || w->pushes > 0) {
    tf__cond_wait_ms(&w->idle_cv, &w->mu, 200);
    int64_t now = tf__now_ns();
    if (now - logged > 5000000000LL && (w->n_steps > 0 || w->pushes > 0)) {
      logged = now;
      tf_log(LOG_WARNING, "%s: still waiting for %d step(s) and %d push(es) "
             "to finish after %lld ms", why, w->n_steps, w->pushes,
             (long long)((now - t0) / 1000000));
    }
  }
}
