/* master_step.c: a signature's partitions. A step's (feeds, fetches,
 * targets) make its signature (signature.h, as in the local session); the
 * first step of a signature prunes the session's graph (the prune pass,
 * prune.h: fed edges become _Arg, fetches _Retval) under the session's
 * lock, then -- with no lock held -- places it over the devices of the
 * tasks that are up, partitions it and registers each partition on its
 * task with asynchronous RegisterGraph calls. The last reply re-validates
 * the session under its lock: a closed session, or a signature another
 * step registered meanwhile, makes the new handles be deregistered (no
 * graph is left behind on a worker). A task that restarted loses its
 * graphs: tf__ms_retire drops the stale entry and deregisters the handles
 * still valid on the other tasks. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"
#include "tf/serialize.h"

static int *dup_ints(const int *v, int n) {
  int *c = tf__xcalloc((size_t)n + 1, sizeof *c);
  if (n > 0) memcpy(c, v, (size_t)n * sizeof *c);
  return c;
}

/* ---- placing -------------------------------------------------------------- */

/* tf_place_opts.pinned over a name -> device map. */
static const char *pin_of(void *arg, const char *node) {
  return tf__strmap_get(arg, node, NULL);
}

/* Places g over the tasks in use (up only, or every task) into assign
 * (indices into devs); idx[d] is devs[d]'s task. Returns the count. */
static int task_devices(tf_master *m, bool up_only, tf_place_device *devs, int *idx,
                        uint64_t *incs) {
  int nd = 0;
  for (int i = 0; i < m->n_tasks; i++) {
    uint64_t inc = 0;
    bool up = tf__ms_task_up(m, i, &inc);
    if (up_only && !up) continue;
    devs[nd] = (tf_place_device){m->tasks[i].device, "CPU"};
    idx[nd] = i;
    incs[nd++] = inc;
  }
  return nd;
}

/* After placement over the tasks that are up failed: if placing over
 * every task works, the graph needs a task that is down: UNAVAILABLE
 * naming it. Else st keeps the placement's own error. */
static tf_code name_down_task(tf_master *m, const tf_graph *g, tf_status *st) {
  int nt = m->n_tasks, nn = tf_graph_num_nodes(g);
  tf_place_device *devs = tf__xcalloc((size_t)nt + 1, sizeof *devs);
  int *idx = tf__xcalloc((size_t)nt + 1, sizeof *idx);
  uint64_t *incs = tf__xcalloc((size_t)nt + 1, sizeof *incs);
  int *assign = tf__xcalloc((size_t)nn + 1, sizeof *assign);
  int nd = task_devices(m, false, devs, idx, incs);
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps", .costs = m->costs};
  tf_status pst;
  tf_status_init(&pst);
  if (tf_place(g, devs, nd, &po, assign, &pst) == TF_OK) {
    for (int k = 0; k < nn; k++) {
      int t = idx[assign[k]];
      if (!tf__ms_task_up(m, t, NULL)) {
        tf__ms_task_down(m, t, st);
        break;
      }
    }
  }
  free(devs);
  free(idx);
  free(incs);
  free(assign);
  return st->code;
}

/* Places and partitions g over the tasks that are up; fills p->parts
 * (handles 0) and graphs[i] (partition i's msgpack, malloc'd). */
static tf_code place(tf_master *m, tf__strmap *pins, const tf_graph *g, ms_prepared *p,
                     void ***bufs, size_t **lens, tf_status *st) {
  int nt = m->n_tasks;
  tf_place_device *devs = tf__xcalloc((size_t)nt + 1, sizeof *devs);
  int *idx = tf__xcalloc((size_t)nt + 1, sizeof *idx);
  uint64_t *incs = tf__xcalloc((size_t)nt + 1, sizeof *incs);
  int *assign = tf__xcalloc((size_t)tf_graph_num_nodes(g) + 1, sizeof *assign);
  int nd = task_devices(m, true, devs, idx, incs);
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps", .costs = m->costs,
                      .pinned = pin_of, .pinned_arg = pins};
  tf_partition *parts = NULL;
  int np = 0;
  tf_code rc = tf_place(g, devs, nd, &po, assign, st);
  if (rc != TF_OK) rc = name_down_task(m, g, st);
  if (rc == TF_OK) rc = tf_partition_graph(g, assign, devs, incs, nd, &parts, &np, st);
  if (rc == TF_OK) {
    p->parts = tf__xcalloc((size_t)np + 1, sizeof *p->parts);
    *bufs = tf__xcalloc((size_t)np + 1, sizeof **bufs);
    *lens = tf__xcalloc((size_t)np + 1, sizeof **lens);
    for (int i = 0; i < np && rc == TF_OK; i++) {
      ms_part *mp = &p->parts[i];
      mp->task = idx[parts[i].device];
      mp->incarnation = incs[parts[i].device];
      mp->n_args = parts[i].n_args;
      mp->arg_feed = dup_ints(parts[i].arg_feed, parts[i].n_args);
      mp->n_rets = parts[i].n_rets;
      mp->ret_fetch = dup_ints(parts[i].ret_fetch, parts[i].n_rets);
      p->n_parts++;
      rc = tf_graph_to_msgpack(parts[i].g, &(*bufs)[i], &(*lens)[i], st);
    }
  }
  tf_partitions_free(parts, np);
  free(assign);
  free(devs);
  free(idx);
  free(incs);
  return rc;
}

/* ---- registering ---------------------------------------------------------- */

typedef struct reg_ctx {
  tf_master *m;
  ms_session *s;       /* a reference */
  char *key;           /* the signature's */
  ms_prepared *p;
  pthread_mutex_t mu;
  int pending;
  bool failed;
  tf_status err;
  tf__ms_prepared_fn done;
  void *arg;
} reg_ctx;

typedef struct reg_call {
  reg_ctx *r;
  int i;
} reg_call;

void tf__ms_deregister(tf_master *m, uint64_t session, const ms_prepared *p) {
  for (int k = 0; k < p->n_parts; k++) {
    if (p->parts[k].handle == 0) continue;
    int t = p->parts[k].task;
    uint64_t inc = 0;
    /* A task that restarted has lost the graph already. */
    if (!tf__ms_task_up(m, t, &inc) || inc != p->parts[k].incarnation) continue;
    tf_wire_header h = tf__ms_header(m, t, TF_M_DEREGISTER_GRAPH, session, 0,
                                     m->spec->rpc_timeout_ms);
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    tf_msg_deregister_graph_req b = {.handle = p->parts[k].handle};
    tf_msg_deregister_graph_req_encode(wr, &b);
    nng_msg *msg = NULL;
    tf_status st;
    tf_status_init(&st);
    if (tf_wire_finish(wr, &msg, &st) == TF_OK) {
      tf__ms_send_ignore(m, t, msg, m->spec->rpc_timeout_ms);
    }
  }
}

/* The last RegisterGraph answered: keep p in the session's cache, or drop
 * it (and its handles) when the session closed or the signature is there
 * already. */
static void reg_finish(reg_ctx *r) {
  tf_master *m = r->m;
  ms_prepared *use = NULL;
  tf_status st;
  tf_status_init(&st);
  if (r->failed) {
    st = r->err;
  } else {
    pthread_mutex_lock(&r->s->mu);
    if (r->s->closed) {
      tf_status_set(&st, TF_ABORTED, "RunStep: session %016" PRIx64 " was closed "
                    "while its partitions were registered", r->s->handle);
    } else {
      use = tf__strmap_get(&r->s->cache, r->key, NULL);
      if (use == NULL) {
        tf__strmap_put(&r->s->cache, r->key, r->p);
        use = r->p;
        r->p = NULL;
      }
    }
    pthread_mutex_unlock(&r->s->mu);
  }
  if (r->p != NULL) {
    tf__ms_deregister(m, r->s->handle, r->p);
    tf__ms_prepared_free(r->p);
  }
  r->done(r->arg, use, &st);
  tf__ms_session_put(m, r->s);
  free(r->key);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static void reg_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  reg_call *c = arg;
  reg_ctx *r = c->r;
  ms_part *mp = &r->p->parts[c->i];
  tf_msg_register_graph_reply rb = {0};
  tf_status dst;
  tf_status_init(&dst);
  if (st->code == TF_OK) tf_msg_register_graph_reply_decode(reply, &rb, &dst);
  tf_wire_msg_free(reply);
  pthread_mutex_lock(&r->mu);
  if (st->code != TF_OK || dst.code != TF_OK) {
    if (!r->failed) {
      r->failed = true;
      tf_status_set(&r->err, st->code != TF_OK ? st->code : dst.code,
                    "RegisterGraph on %s: %s", r->m->tasks[mp->task].prefix,
                    st->code != TF_OK ? st->msg : dst.msg);
    }
  } else {
    mp->handle = rb.handle;
  }
  bool last = --r->pending == 0;
  pthread_mutex_unlock(&r->mu);
  free(c);
  if (last) reg_finish(r);
}

/* Sends RegisterGraph for every partition of r->p (graphs in bufs). */
static void reg_send(reg_ctx *r, void **bufs, size_t *lens) {
  tf_master *m = r->m;
  int n = r->p->n_parts;
  r->pending = n + 1; /* the sender's own, dropped last */
  for (int i = 0; i < n; i++) {
    int t = r->p->parts[i].task;
    tf_wire_header h = tf__ms_header(m, t, TF_M_REGISTER_GRAPH, r->s->handle, 0,
                                     m->spec->rpc_timeout_ms);
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    tf_msg_register_graph_req b = {.graph = bufs[i], .graph_len = lens[i]};
    tf_msg_register_graph_req_encode(wr, &b);
    nng_msg *msg = NULL;
    tf_status st;
    tf_status_init(&st);
    reg_call *c = tf__xcalloc(1, sizeof *c);
    c->r = r;
    c->i = i;
    if (tf_wire_finish(wr, &msg, &st) != TF_OK) {
      reg_done(c, &st, NULL);
      continue;
    }
    tf__ms_send(m, t, msg, m->spec->rpc_timeout_ms, reg_done, c);
  }
  pthread_mutex_lock(&r->mu);
  bool last = --r->pending == 0;
  pthread_mutex_unlock(&r->mu);
  if (last) reg_finish(r);
}

/* Under s->mu: when the session's graph grew since it was last placed,
 * places all of it over every task (pins kept) and pins the nodes with
 * state that have no pin yet. Per-signature placement alone would put a
 * variable's slot beside the variable when a step updates both, but on a
 * ps of its own in the init step that runs only its initializer. A graph
 * that cannot be placed whole leaves the pins as they are (each
 * signature's placement names its own errors). */
static void pin_state(tf_master *m, ms_session *s) {
  int n = tf_graph_num_nodes(s->g), nt = m->n_tasks;
  if (n == s->pins_nodes) {
    return;
  }
  tf_place_device *devs = tf__xcalloc((size_t)nt + 1, sizeof *devs);
  int *idx = tf__xcalloc((size_t)nt + 1, sizeof *idx);
  uint64_t *incs = tf__xcalloc((size_t)nt + 1, sizeof *incs);
  int *assign = tf__xcalloc((size_t)n + 1, sizeof *assign);
  int nd = task_devices(m, false, devs, idx, incs);
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps", .costs = m->costs,
                      .pinned = pin_of, .pinned_arg = &s->pins};
  tf_status st;
  tf_status_init(&st);
  if (tf_place(s->g, devs, nd, &po, assign, &st) == TF_OK) {
    for (int i = 0; i < n; i++) {
      const tf_node *v = tf_graph_node(s->g, i);
      if (tf_node_attr(v, "container") != NULL &&
          tf__strmap_get(&s->pins, tf_node_name(v), NULL) == NULL) {
        tf__strmap_put(&s->pins, tf_node_name(v), tf__xstrdup(devs[assign[i]].name));
      }
    }
  } else {
    tf_log(LOG_WARNING, "session %016" PRIx64 ": its whole graph cannot be placed (%s); "
           "nodes with state are placed step by step", s->handle, st.msg);
  }
  s->pins_nodes = n;
  free(devs);
  free(idx);
  free(incs);
  free(assign);
}

/* Builds p from sig (prune and pin under s->mu, place without it). */
static tf_code build(tf_master *m, ms_session *s, const tf__sig *sig, ms_prepared **out,
                     void ***bufs, size_t **lens, tf_status *st) {
  tf__pruned *pr = NULL;
  pthread_mutex_lock(&s->mu);
  tf_code rc = tf__prune(s->g, sig, &pr, st);
  /* The pruned graph's pins, copied: builds run two at a time. */
  tf__strmap pins;
  tf__strmap_init(&pins);
  if (rc == TF_OK) {
    pin_state(m, s);
    for (int i = 0; i < tf_graph_num_nodes(pr->g); i++) {
      const char *name = tf_node_name(tf_graph_node(pr->g, i));
      const char *dev = tf__strmap_get(&s->pins, name, NULL);
      if (dev != NULL) {
        tf__strmap_put(&pins, name, tf__xstrdup(dev));
      }
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (rc != TF_OK) {
    tf__strmap_fini(&pins);
    return rc;
  }
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
  rc = place(m, &pins, pr->g, p, bufs, lens, st);
  tf__strmap_each(&pins, free);
  tf__strmap_fini(&pins);
  tf__pruned_free(pr);
  if (rc != TF_OK) {
    tf__ms_prepared_free(p);
    return rc;
  }
  *out = p;
  return TF_OK;
}

static void free_bufs(void **bufs, size_t *lens, int n) {
  for (int i = 0; bufs != NULL && i < n; i++) free(bufs[i]);
  free(bufs);
  free(lens);
}

typedef struct build_job {
  tf_master *m;
  ms_session *s;
  const tf__sig *sig;
  tf__ms_prepared_fn done;
  void *arg;
} build_job;

static void build_task(tf_task *t);

void tf__ms_prepare(tf_master *m, ms_session *s, const tf__sig *sig,
                    tf__ms_prepared_fn done, void *arg) {
  tf_status st;
  tf_status_init(&st);
  pthread_mutex_lock(&s->mu);
  ms_prepared *p = s->closed ? NULL : tf__strmap_get(&s->cache, sig->key, NULL);
  bool closed = s->closed;
  pthread_mutex_unlock(&s->mu);
  if (closed) {
    tf_status_set(&st, TF_FAILED_PRECONDITION, "RunStep on a closed session");
    done(arg, NULL, &st);
    return;
  }
  if (p != NULL) {
    done(arg, p, &st);
    return;
  }
  build_job *j = tf__xcalloc(1, sizeof *j);
  *j = (build_job){m, s, sig, done, arg};
  tf_task t = {.fn = build_task, .p = {j}};
  tf_workq_schedule(m->build_q, &t);
}

/* On m->build_q: builds sig's partitions and starts registering them. */
static void build_task(tf_task *t) {
  build_job j = *(build_job *)t->p[0];
  free(t->p[0]);
  tf_master *m = j.m;
  ms_session *s = j.s;
  const tf__sig *sig = j.sig;
  tf__ms_prepared_fn done = j.done;
  void *arg = j.arg;
  tf_status st;
  tf_status_init(&st);
  ms_prepared *p = NULL;
  void **bufs = NULL;
  size_t *lens = NULL;
  if (build(m, s, sig, &p, &bufs, &lens, &st) != TF_OK) {
    done(arg, NULL, &st);
    return;
  }
  reg_ctx *r = tf__xcalloc(1, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  r->m = m;
  r->s = s;
  tf__ref_get(&s->refs); /* the caller holds one: s is alive */
  r->key = tf__xstrdup(sig->key);
  r->p = p;
  r->done = done;
  r->arg = arg;
  int n = p->n_parts;
  reg_send(r, bufs, lens);
  free_bufs(bufs, lens, n);
}

void tf__ms_retire(tf_master *m, ms_session *s, const char *key, ms_prepared *stale) {
  bool retired = false;
  pthread_mutex_lock(&s->mu);
  if (tf__strmap_get(&s->cache, key, NULL) == stale) {
    tf__strmap_del(&s->cache, key);
    s->retired = tf__xrealloc(s->retired, (size_t)(s->n_retired + 1) * sizeof *s->retired);
    s->retired[s->n_retired++] = stale; /* other steps may still run it */
    retired = true;
  }
  pthread_mutex_unlock(&s->mu);
  if (retired) tf__ms_deregister(m, s->handle, stale);
}
