/* session.c: the local session: its graph, containers, inter-op threads,
 * the cache of prepared executors and Run.
 *
 * Run turns its names into a signature (signature.h: canonical, sorted,
 * with an unambiguous key) and looks the prepared executor up; on a miss,
 * under the session lock, the prune pass (prune.h) makes the signature's
 * graph and an executor is built over it. The step itself runs without
 * the lock, so any number of Runs proceed at once; each has its own
 * tf_cancel, which Close and the deadline use to end it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/graph/prune.h"
#include "lib/core/graph/signature.h"
#include "lib/core/framework/rendezvous.h"
#include "lib/core/framework/resource.h"
#include "lib/core/exec/executor.h"
#include "lib/core/exec/remote.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

/* A signature's pruned graph and its executor. */
typedef struct sess_prepared {
  tf__pruned *pr;       /* feeds are _Arg nodes, fetches _Retval */
  tf_executor *ex;
} sess_prepared;

static void prepared_free(sess_prepared *p) {
  if (p == NULL) return;
  tf_executor_free(p->ex);
  tf__pruned_free(p->pr);
  free(p);
}

/* Prunes g for sig and builds the executor. */
static tf_code prepare(const tf_graph *g, const tf__sig *sig, tf_workq *runner,
                       sess_prepared **out, tf_status *st) {
  sess_prepared *p = tf__xcalloc(1, sizeof *p);
  tf_code rc = tf__prune(g, sig, &p->pr, st);
  if (rc == TF_OK) {
    tf_executor_opts o = {.device = NULL, .runner = runner};
    rc = tf_executor_new(p->pr->g, &o, &p->ex, st);
  }
  if (rc != TF_OK) {
    prepared_free(p);
    p = NULL;
  }
  *out = p;
  return rc;
}

struct tf_session {
  pthread_mutex_t mu;
  tf_graph *g;            /* the session's own copy */
  tf_graph *src;          /* the user's graph, or NULL */
  int n_imported;         /* nodes of src copied so far */
  tf_resource_mgr *resources;
  tf_workq *runner;       /* NULL: one thread */
  tf__strmap cache;       /* signature -> sess_prepared */
  sess_prepared **prepared;
  int n_prepared;
  bool closed;
  /* Cancels of running steps, under run_mu, which nothing else takes:
   * Close cancels them holding only run_mu, so cancellation callbacks
   * never run under mu, and a Run cannot free its tf_cancel meanwhile. */
  pthread_mutex_t run_mu;
  pthread_cond_t idle_cv;
  tf_cancel **running;
  int n_running, cap_running;
  uint64_t next_step;
  /* In-process rendezvous tables (tf__rdv_local_ops), opened by the first
   * step that runs _Send/_Recv; under mu. */
  void *rdv_tables;
  /* Remote sessions: the backend, its state, and nodes of g it has. */
  const tf__remote_ops *remote;
  void *rimpl;
  int n_sent;
};

static const tf__remote_ops *remote_ops;

void tf__session_set_remote_ops(const tf__remote_ops *ops) { remote_ops = ops; }

static int default_threads(void) {
  const char *env = getenv("TF_NUM_INTEROP_THREADS");
  if (env != NULL && atoi(env) > 0) return atoi(env) > 256 ? 256 : atoi(env);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 256 ? 256 : (int)n);
}

/* Copies nodes src[n_imported..] into the session graph. Caller holds mu. */
/* Sends a remote session's new nodes to the master. */
static tf_code push_remote(tf_session *s, tf_status *st) {
  int n = tf_graph_num_nodes(s->g);
  if (s->remote == NULL || s->n_sent == n) return TF_OK;
  TF_TRY(s->remote->extend(s->rimpl, s->g, s->n_sent, st));
  s->n_sent = n;
  return TF_OK;
}

static tf_code extend_locked(tf_session *s, tf_status *st) {
  if (s->src == NULL) return TF_OK;
  int n = tf_graph_num_nodes(s->src);
  if (n < s->n_imported) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "the session's graph "
                         "shrank from %d to %d nodes; graphs only grow",
                         s->n_imported, n);
  }
  if (n == s->n_imported) return TF_OK;
  int k = n - s->n_imported;
  tf_node_def *defs = tf__xcalloc((size_t)k, sizeof *defs);
  for (int i = 0; i < k; i++) tf_node_to_def(tf_graph_node(s->src, s->n_imported + i), &defs[i]);
  tf_code rc = tf_graph_import(s->g, defs, k, st);
  for (int i = 0; i < k; i++) tf_node_def_fini(&defs[i]);
  free(defs);
  if (rc == TF_OK) s->n_imported = n;
  return rc == TF_OK ? push_remote(s, st) : rc;
}

tf_session *tf_session_new(tf_graph *g, const tf_session_options *opts,
                           tf_status *st) {
  tf_session *s = tf__xcalloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->run_mu, NULL);
  pthread_cond_init(&s->idle_cv, NULL);
  s->g = tf_graph_new();
  s->src = g;
  s->resources = tf_resource_mgr_new();
  tf__strmap_init(&s->cache);
  int threads = opts && opts->inter_op_threads > 0 ? opts->inter_op_threads
                                                   : default_threads();
  const char *target = opts ? opts->target : NULL;
  if (target != NULL && *target != '\0') {
    if (remote_ops == NULL) {
      tf_status_set(st, TF_UNIMPLEMENTED, "session target '%s': this program "
                    "was linked without the remote runtime", target);
      tf_session_free(s);
      return NULL;
    }
    s->remote = remote_ops;
    int64_t rpc_ms = opts->rpc_timeout_ms > 0 ? opts->rpc_timeout_ms : 60000;
    s->rimpl = remote_ops->open(target, rpc_ms, st);
    if (s->rimpl == NULL) {
      s->remote = NULL;
      tf_session_free(s);
      return NULL;
    }
  } else if (threads > 1) {
    s->runner = tf_workq_new(threads, "inter-op");
  }
  if (extend_locked(s, st) != TF_OK) {
    tf_status_prefix(st, "creating the session");
    tf_session_free(s);
    return NULL;
  }
  return s;
}

tf_code tf_session_extend(tf_session *s, tf_status *st) {
  pthread_mutex_lock(&s->mu);
  tf_code rc = extend_locked(s, st);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

tf_code tf_session_extend_defs(tf_session *s, const tf_node_def *defs, int n,
                               tf_status *st) {
  pthread_mutex_lock(&s->mu);
  tf_code rc = s->closed ? tf_status_set(st, TF_FAILED_PRECONDITION,
                                         "the session is closed")
                         : tf_graph_import(s->g, defs, n, st);
  if (rc == TF_OK) rc = push_remote(s, st);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

const tf_graph *tf_session_graph(const tf_session *s) { return s->g; }

int tf_session_cache_size(tf_session *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->n_prepared;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* ---- Run ----------------------------------------------------------------- */

static tf_code check_args(const char *const *feed_names, tf_tensor *const *feed_values,
                          int n_feeds, const char *const *fetch_names,
                          tf_tensor **fetch_values, int n_fetches,
                          const char *const *target_names, int n_targets,
                          tf_status *st) {
  if (n_feeds < 0 || n_fetches < 0 || n_targets < 0 ||
      (n_feeds > 0 && (feed_names == NULL || feed_values == NULL)) ||
      (n_fetches > 0 && (fetch_names == NULL || fetch_values == NULL)) ||
      (n_targets > 0 && target_names == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "Run: negative count or "
                         "missing array (%d feeds, %d fetches, %d targets)",
                         n_feeds, n_fetches, n_targets);
  }
  for (int i = 0; i < n_fetches; i++) fetch_values[i] = NULL;
  for (int i = 0; i < n_feeds; i++) {
    if (feed_names[i] == NULL || feed_names[i][0] == '\0' || feed_values[i] == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "Run: feed %d has no %s", i,
                           feed_values[i] == NULL ? "tensor" : "name");
    }
  }
  for (int i = 0; i < n_fetches; i++) {
    if (fetch_names[i] == NULL || fetch_names[i][0] == '\0') {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "Run: fetch %d has no name", i);
    }
  }
  for (int i = 0; i < n_targets; i++) {
    if (target_names[i] == NULL || target_names[i][0] == '\0') {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "Run: target %d has no name", i);
    }
  }
  return TF_OK;
}

/* Looks up or builds the prepared executor; registers the step. */
static tf_code begin_step(tf_session *s, const tf__sig *sig, tf_cancel *cancel,
                          sess_prepared **out, tf_status *st) {
  pthread_mutex_lock(&s->mu);
  tf_code rc = TF_OK;
  if (s->closed) {
    rc = tf_status_set(st, TF_FAILED_PRECONDITION, "Run on a closed session");
  } else {
    rc = extend_locked(s, st);
  }
  sess_prepared *p = rc == TF_OK ? tf__strmap_get(&s->cache, sig->key, NULL) : NULL;
  if (rc == TF_OK && p == NULL) {
    rc = prepare(s->g, sig, s->runner, &p, st);
    if (rc == TF_OK) {
      tf__strmap_put(&s->cache, sig->key, p);
      s->prepared = tf__xrealloc(s->prepared, (size_t)(s->n_prepared + 1) * sizeof *s->prepared);
      s->prepared[s->n_prepared++] = p;
    }
  }
  if (rc == TF_OK) {
    pthread_mutex_lock(&s->run_mu);
    if (s->n_running == s->cap_running) {
      s->cap_running = s->cap_running ? 2 * s->cap_running : 8;
      s->running = tf__xrealloc(s->running, (size_t)s->cap_running * sizeof *s->running);
    }
    s->running[s->n_running++] = cancel;
    pthread_mutex_unlock(&s->run_mu);
  }
  pthread_mutex_unlock(&s->mu);
  *out = p;
  return rc;
}

static void end_step(tf_session *s, tf_cancel *cancel) {
  pthread_mutex_lock(&s->run_mu);
  for (int i = 0; i < s->n_running; i++) {
    if (s->running[i] == cancel) {
      s->running[i] = s->running[--s->n_running];
      break;
    }
  }
  if (s->n_running == 0) pthread_cond_broadcast(&s->idle_cv);
  pthread_mutex_unlock(&s->run_mu);
}

/* Feeds in signature order, checked against the graph's dtypes/shapes.
 * (A feed given twice was refused by tf__sig_build.) */
static tf_code order_feeds(const sess_prepared *sp, const tf__sig *sig,
                           const char *const *names, tf_tensor *const *values,
                           tf_tensor **args, tf_status *st) {
  const tf__pruned *p = sp->pr;
  for (int i = 0; i < sig->n_feed_args; i++) {
    int k = sig->feed_pos[i];
    TF_ASSERT(k >= 0 && k < p->n_feeds && args[k] == NULL);
    args[k] = values[i];
    char a[128], b[128];
    if (values[i]->dtype != p->feed_types[k]) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s' is %s, but the "
                           "graph expects %s", names[i],
                           tf_dtype_name(values[i]->dtype),
                           tf_dtype_name(p->feed_types[k]));
    }
    const tf_shape *want = &p->feed_shapes[k], *have = &values[i]->shape;
    tf_shape merged; /* have is fully defined: it fits want when they merge */
    if (tf_shape_merge(want, have, &merged, NULL) != TF_OK) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s' has shape %s, "
                           "which is not compatible with %s", names[i],
                           tf_shape_str(have, a, sizeof a),
                           tf_shape_str(want, b, sizeof b));
    }
  }
  return TF_OK;
}

static void fill_metadata(const sess_prepared *p, tf_exec_trace *tr,
                          tf_run_metadata *meta) {
  meta->timings = tf__xcalloc((size_t)(tr->n ? tr->n : 1), sizeof *meta->timings);
  meta->n_timings = tr->n;
  for (int i = 0; i < tr->n; i++) {
    const tf_node_exec_stats *x = &tr->stats[i];
    const tf_node *n = tf_graph_node(p->pr->g, x->node);
    meta->timings[i] = (tf_node_timing){n->name, n->op->name, x->frame_id,
                                        x->iter, x->start_ns, x->end_ns, x->thread};
  }
}

/* Gives the step its in-process rendezvous table when p's graph has
 * _Send/_Recv nodes (ctx->rendezvous stays NULL otherwise). */
static tf_code begin_rendezvous(tf_session *s, const sess_prepared *p,
                                tf_step_ctx *ctx, tf_status *st) {
  if (!tf_executor_needs_rendezvous(p->ex)) return TF_OK;
  const tf__rdv_local_ops *ops = tf__rdv_get_local_ops();
  if (ops == NULL) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "the graph has _Send/"
                         "_Recv nodes, and this program was linked without "
                         "the rendezvous tables");
  }
  pthread_mutex_lock(&s->mu);
  if (s->rdv_tables == NULL) {
    const char *dev = tf_cpu_device()->name;
    const char *cut = strstr(dev, "/device:");
    char *task = tf__xstrndup(dev, cut ? (size_t)(cut - dev) : strlen(dev));
    s->rdv_tables = ops->open(task);
    free(task);
  }
  void *tables = s->rdv_tables;
  pthread_mutex_unlock(&s->mu);
  ctx->rendezvous = ops->step_begin(tables, ctx->step_id, st);
  return ctx->rendezvous != NULL ? TF_OK : st->code;
}

static tf_code run_prepared(tf_session *s, const sess_prepared *p,
                            const tf_run_options *opts, tf_tensor **args,
                            tf_tensor **rets, tf_cancel *cancel,
                            tf_run_metadata *meta, tf_status *st) {
  tf_step_ctx ctx = {.resources = s->resources, .cancel = cancel, .args = args,
                     .n_args = p->pr->n_feeds, .retvals = rets,
                     .n_retvals = p->pr->n_fetches};
  pthread_mutex_lock(&s->mu);
  ctx.step_id = ++s->next_step;
  pthread_mutex_unlock(&s->mu);
  TF_TRY(begin_rendezvous(s, p, &ctx, st));
  int64_t timeout = opts ? opts->timeout_ms : 0;
  int64_t deadline = timeout > 0 ? tf__now_ns() + timeout * 1000000 : 0;
  tf_exec_trace tr = {0};
  bool trace = opts && opts->trace && meta != NULL;
  tf_code rc = tf_executor_run(p->ex, &ctx, trace ? &tr : NULL, deadline, st);
  if (rc == TF_DEADLINE_EXCEEDED) {
    tf_status_prefix(st, "Run exceeded timeout_ms=%lld", (long long)timeout);
  }
  if (ctx.rendezvous != NULL) {
    tf__rdv_get_local_ops()->step_end(s->rdv_tables, ctx.rendezvous, ctx.step_id);
  }
  if (trace) fill_metadata(p, &tr, meta);
  free(tr.stats);
  return rc;
}

tf_code tf_session_run(tf_session *s, const tf_run_options *opts,
                       const char *const *feed_names,
                       tf_tensor *const *feed_values, int n_feeds,
                       const char *const *fetch_names, tf_tensor **fetch_values,
                       int n_fetches, const char *const *target_names,
                       int n_targets, tf_run_metadata *meta, tf_status *st) {
  if (meta != NULL) memset(meta, 0, sizeof *meta);
  TF_TRY(check_args(feed_names, feed_values, n_feeds, fetch_names, fetch_values,
                    n_fetches, target_names, n_targets, st));
  if (s->remote != NULL) {
    pthread_mutex_lock(&s->mu);
    tf_code rc = s->closed ? tf_status_set(st, TF_FAILED_PRECONDITION,
                                           "Run on a closed session")
                           : extend_locked(s, st);
    pthread_mutex_unlock(&s->mu);
    TF_TRY(rc);
    return s->remote->run(s->rimpl, opts, feed_names, feed_values, n_feeds,
                          fetch_names, fetch_values, n_fetches, target_names,
                          n_targets, meta, st);
  }
  tf__sig sig;
  TF_TRY(tf__sig_build(&sig, feed_names, n_feeds, fetch_names, n_fetches,
                       target_names, n_targets, st));
  tf_cancel cancel;
  tf_cancel_init(&cancel);
  sess_prepared *p = NULL;
  tf_tensor **args = tf__xcalloc((size_t)(sig.n_feeds + 1), sizeof *args);
  tf_tensor **rets = tf__xcalloc((size_t)(sig.n_fetches + 1), sizeof *rets);
  tf_code rc = begin_step(s, &sig, &cancel, &p, st);
  bool begun = rc == TF_OK;
  if (rc == TF_OK) rc = order_feeds(p, &sig, feed_names, feed_values, args, st);
  if (rc == TF_OK) rc = run_prepared(s, p, opts, args, rets, &cancel, meta, st);
  if (begun) end_step(s, &cancel);
  for (int i = 0; rc == TF_OK && i < n_fetches; i++) {
    int k = sig.fetch_pos[i];
    if (rets[k] == NULL) {
      rc = tf_status_set(st, TF_INVALID_ARGUMENT, "fetch '%s' produced no "
                         "value: it is on an untaken branch of a cond (a dead "
                         "tensor)", fetch_names[i]);
      break;
    }
    fetch_values[i] = tf_tensor_ref(rets[k]);
  }
  if (rc != TF_OK) {
    for (int i = 0; i < n_fetches; i++) {
      tf_tensor_unref(fetch_values[i]);
      fetch_values[i] = NULL;
    }
  }
  for (int i = 0; i < sig.n_fetches; i++) tf_tensor_unref(rets[i]);
  free(args);
  free(rets);
  tf__sig_fini(&sig);
  tf_cancel_fini(&cancel);
  return rc;
}

/* ---- containers, close, free --------------------------------------------- */

tf_code tf_session_reset(tf_session *s, const char *const *containers, int n,
                         tf_status *st) {
  if (n < 0 || (n > 0 && containers == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "Reset: bad container list");
  }
  if (s->remote != NULL) return s->remote->reset(s->rimpl, containers, n, st);
  if (n == 0) tf_resource_mgr_reset(s->resources, "");
  for (int i = 0; i < n; i++) {
    tf_resource_mgr_reset(s->resources, containers[i] ? containers[i] : "");
  }
  return TF_OK;
}

tf_code tf_session_close(tf_session *s, tf_status *st) {
  pthread_mutex_lock(&s->mu);
  bool was_closed = s->closed;
  s->closed = true; /* no step starts after this */
  pthread_mutex_unlock(&s->mu);
  if (s->remote != NULL) {
    tf_status tmp;
    tf_status_init(&tmp);
    tf_code rc = was_closed ? TF_OK : s->remote->close(s->rimpl, st ? st : &tmp);
    if (rc == TF_OK && st != NULL) tf_status_init(st);
    return rc;
  }
  pthread_mutex_lock(&s->run_mu);
  for (int i = 0; i < s->n_running; i++) {
    tf_cancel_start(s->running[i], TF_CANCELLED, "the session was closed");
  }
  pthread_mutex_unlock(&s->run_mu);
  tf_resource_mgr_shutdown(s->resources);
  pthread_mutex_lock(&s->run_mu);
  while (s->n_running > 0) pthread_cond_wait(&s->idle_cv, &s->run_mu);
  pthread_mutex_unlock(&s->run_mu);
  if (st != NULL) tf_status_init(st);
  return TF_OK;
}

void tf_session_free(tf_session *s) {
  if (s == NULL) return;
  tf_session_close(s, NULL);
  if (s->remote != NULL) s->remote->free(s->rimpl);
  tf_workq_free(s->runner);
  for (int i = 0; i < s->n_prepared; i++) prepared_free(s->prepared[i]);
  free(s->prepared);
  tf__strmap_fini(&s->cache);
  if (s->rdv_tables != NULL) tf__rdv_get_local_ops()->close(s->rdv_tables);
  tf_resource_mgr_free(s->resources);
  tf_graph_free(s->g);
  free(s->running);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->run_mu);
  pthread_cond_destroy(&s->idle_cv);
  free(s);
}

void tf_run_metadata_fini(tf_run_metadata *m) {
  if (m == NULL) return;
  free(m->timings);
  memset(m, 0, sizeof *m);
}
