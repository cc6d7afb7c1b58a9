/* master_step.c: RunStep. A step's (feeds, fetches, targets) make its
 * signature (signature.h, as in the local session); the first step of a
 * signature prunes the session's graph (the prune pass, prune.h: fed edges
 * become _Arg, fetches _Retval), places it over the tasks' devices, partitions it and registers each partition on its task. Every
 * step then sends one RunGraph per partition, concurrently, and waits for
 * all of them, for the first error, for a task to go down, or for the
 * deadline. After a failure every partition gets AbortStep and
 * CleanupGraph (not waited for); a worker whose partition succeeded drops
 * the step's state itself. A
 * partition whose task restarted (ABORTED, graph handle unknown) makes the
 * master register the signature again and retry the step once. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"
#include "tf/serialize.h"


/* ---- building a signature ------------------------------------------------- */

static int *dup_ints(const int *v, int n) {
  int *c = tf__xcalloc((size_t)n + 1, sizeof *c);
  if (n > 0) memcpy(c, v, (size_t)n * sizeof *c);
  return c;
}

static tf_code register_part(tf_master *m, ms_session *s, const tf_partition *pt,
                             ms_part *mp, tf_status *st) {
  void *buf = NULL;
  size_t len = 0;
  TF_TRY(tf_graph_to_msgpack(pt->g, &buf, &len, st));
  tf_wire_header h = tf__ms_header(m, mp->task, TF_M_REGISTER_GRAPH, s->handle, 0,
                                   m->spec->rpc_timeout_ms);
  tf_wire_writer *wr = tf_wire_writer_new(&h);
  tf_msg_register_graph_req b = {.graph = buf, .graph_len = len};
  tf_msg_register_graph_req_encode(wr, &b);
  free(buf);
  nng_msg *msg = NULL;
  tf_wire_msg *reply = NULL;
  TF_TRY(tf_wire_finish(wr, &msg, st));
  TF_TRY(tf_rpc_call(m->tasks[mp->task].client, msg, m->spec->rpc_timeout_ms,
                     &reply, st));
  tf_msg_register_graph_reply rb;
  tf_code rc = tf_msg_register_graph_reply_decode(reply, &rb, st);
  if (rc == TF_OK) {
    mp->handle = rb.handle;
  } else {
    tf_status_prefix(st, "%s", m->tasks[mp->task].prefix);
  }
  tf_wire_msg_free(reply);
  return rc;
}

static tf_code place_and_register(tf_master *m, ms_session *s, const tf_graph *g,
                                  ms_prepared *p, tf_status *st) {
  int nd = m->n_tasks;
  tf_place_device *devs = tf__xcalloc((size_t)nd + 1, sizeof *devs);
  uint64_t *incs = tf__xcalloc((size_t)nd + 1, sizeof *incs);
  for (int i = 0; i < nd; i++) {
    devs[i] = (tf_place_device){m->tasks[i].device, "CPU"};
    tf__ms_task_up(m, i, &incs[i]);
  }
  int *assign = tf__xcalloc((size_t)tf_graph_num_nodes(g) + 1, sizeof *assign);
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps", .costs = m->costs};
  tf_partition *parts = NULL;
  int np = 0;
  tf_code rc = tf_place(g, devs, nd, &po, assign, st);
  if (rc == TF_OK) rc = tf_partition_graph(g, assign, devs, incs, nd, &parts, &np, st);
  if (rc == TF_OK) {
    p->parts = tf__xcalloc((size_t)np + 1, sizeof *p->parts);
    for (int i = 0; i < np && rc == TF_OK; i++) {
      ms_part *mp = &p->parts[i];
      mp->task = parts[i].device;
      mp->incarnation = incs[mp->task];
      mp->n_args = parts[i].n_args;
      mp->arg_feed = dup_ints(parts[i].arg_feed, parts[i].n_args);
      mp->n_rets = parts[i].n_rets;
      mp->ret_fetch = dup_ints(parts[i].ret_fetch, parts[i].n_rets);
      p->n_parts++;
      if (!tf__ms_task_up(m, mp->task, NULL)) {
        rc = tf_status_set(st, TF_UNAVAILABLE, "%s is down; the step needs it",
                           m->tasks[mp->task].prefix);
      } else {
        rc = register_part(m, s, &parts[i], mp, st);
      }
    }
  }
  tf_partitions_free(parts, np);
  free(assign);
  free(devs);
  free(incs);
  return rc;
}

static tf_code build(tf_master *m, ms_session *s, const tf__sig *sig,
                     ms_prepared **out, tf_status *st) {
  tf__pruned *pr = NULL;
  TF_TRY(tf__prune(s->g, sig, &pr, st));
  int nf = sig->n_feeds, no = sig->n_fetches;
  ms_prepared *p = tf__xcalloc(1, sizeof *p);
  p->n_feeds = nf;
  p->feeds = tf__xcalloc((size_t)nf + 1, sizeof *p->feeds);
  p->feed_types = tf__xcalloc((size_t)nf + 1, sizeof *p->feed_types);
  for (int i = 0; i < nf; i++) {
    p->feeds[i] = tf__xstrdup(sig->feeds[i].canon);
    p->feed_types[i] = pr->feed_types[i];
  }
  p->n_fetches = no;
  p->fetches = tf__xcalloc((size_t)no + 1, sizeof *p->fetches);
  for (int i = 0; i < no; i++) p->fetches[i] = tf__xstrdup(sig->fetches[i].canon);
  tf_code rc = place_and_register(m, s, pr->g, p, st);
  tf__pruned_free(pr);
  if (rc != TF_OK) {
    tf__ms_prepared_free(p);
    return rc;
  }
  *out = p;
  return TF_OK;
}

/* ---- RunStep -------------------------------------------------------------- */

/* The signature's prepared partitions, built on first use. */
static tf_code lookup(tf_master *m, ms_session *s, const tf__sig *sig,
                      bool rebuild, ms_prepared **out, tf_status *st) {
  pthread_mutex_lock(&s->mu);
  tf_code rc = TF_OK;
  ms_prepared *p = NULL;
  if (s->closed) {
    rc = tf_status_set(st, TF_FAILED_PRECONDITION, "RunStep on a closed session");
  } else {
    p = tf__strmap_get(&s->cache, sig->key, NULL);
    if (p != NULL && rebuild) {
      tf__strmap_del(&s->cache, sig->key);
      s->retired = tf__xrealloc(s->retired, (size_t)(s->n_retired + 1) * sizeof *s->retired);
      s->retired[s->n_retired++] = p; /* other steps may still run it */
      p = NULL;
    }
    if (p == NULL) {
      rc = build(m, s, sig, &p, st);
      if (rc == TF_OK) tf__strmap_put(&s->cache, sig->key, p);
    }
  }
  pthread_mutex_unlock(&s->mu);
  *out = p;
  return rc;
}

/* Feeds by sorted index, checked against the graph's types. (A feed given
 * twice was refused by tf__sig_build.) */
static tf_code order_feeds(const ms_prepared *p, const tf__sig *sig,
                           const tf_msg_run_step_req *r, tf_tensor **by_index,
                           tf_status *st) {
  for (int i = 0; i < r->n_feeds; i++) {
    int k = sig->feed_pos[i];
    TF_ASSERT(k >= 0 && k < p->n_feeds && by_index[k] == NULL);
    if (r->feed_values[i]->dtype != p->feed_types[k]) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s': the graph "
                           "expects %s, got a %s tensor", r->feed_names[i],
                           tf_dtype_name(p->feed_types[k]),
                           tf_dtype_name(r->feed_values[i]->dtype));
    }
    by_index[k] = r->feed_values[i];
  }
  return TF_OK;
}

static nng_msg *step_reply(tf_master *m, const tf_wire_msg *req, const tf__sig *sig,
                           tf_tensor **fetched, tf_status *st) {
  int n = sig->n_fetch_args;
  tf_tensor **out = tf__xcalloc((size_t)n + 1, sizeof *out);
  for (int i = 0; i < n; i++) out[i] = fetched[sig->fetch_pos[i]];
  tf_msg_run_step_reply b = {.n_fetches = n, .fetches = out};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_run_step_reply_encode(wr, &b);
  free(out);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

static bool task_restarted(tf_master *m, const ms_prepared *p) {
  bool any = false;
  for (int i = 0; i < p->n_parts; i++) {
    uint64_t inc = 0;
    tf__ms_refresh_task(m, p->parts[i].task, m->spec->rpc_timeout_ms);
    if (tf__ms_task_up(m, p->parts[i].task, &inc) && inc != p->parts[i].incarnation) {
      any = true;
    }
  }
  return any;
}

static nng_msg *run_signature(tf_master *m, ms_session *s, const tf_wire_msg *req,
                              const tf_msg_run_step_req *r, const tf__sig *sig,
                              tf_status *st) {
  int64_t deadline_ms = req->h.deadline_ms > 0 ? req->h.deadline_ms
                                               : m->spec->step_timeout_ms;
  int nf = sig->n_feeds, no = sig->n_fetches;
  nng_msg *reply = NULL;
  for (int attempt = 0; attempt < 2 && reply == NULL; attempt++) {
    ms_prepared *p = NULL;
    tf_status_init(st);
    if (lookup(m, s, sig, attempt > 0, &p, st) != TF_OK) break;
    tf_tensor **by_index = tf__xcalloc((size_t)nf + 1, sizeof *by_index);
    tf_tensor **fetched = tf__xcalloc((size_t)no + 1, sizeof *fetched);
    tf_code rc = order_feeds(p, sig, r, by_index, st);
    if (rc == TF_OK) {
      rc = tf__ms_run_partitions(m, s, p, by_index, deadline_ms, r->trace, fetched, st);
    }
    if (rc == TF_OK) reply = step_reply(m, req, sig, fetched, st);
    for (int i = 0; i < no; i++) tf_tensor_unref(fetched[i]);
    free(fetched);
    free(by_index);
    if (rc != TF_ABORTED || attempt > 0 || !task_restarted(m, p)) break;
    tf_log(LOG_WARNING, "session %016" PRIx64 ": a task restarted; registering "
           "the step's partitions again and retrying", s->handle);
  }
  return reply;
}

nng_msg *tf__ms_run_step(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_run_step_req r;
  if (tf_msg_run_step_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  tf__sig sig;
  if (tf__sig_build(&sig, r.feed_names, r.n_feeds, r.fetches, r.n_fetches,
                    r.targets, r.n_targets, st) != TF_OK) {
    tf_status_prefix(st, "RunStep");
    tf_msg_run_step_req_fini(&r);
    return NULL;
  }
  ms_session *s = tf__ms_session_get(m, req->h.session, st);
  nng_msg *reply = NULL;
  if (s != NULL) {
    reply = run_signature(m, s, req, &r, &sig, st);
    tf__ms_session_put(m, s);
  }
  tf__sig_fini(&sig);
  tf_msg_run_step_req_fini(&r);
  return reply;
}
