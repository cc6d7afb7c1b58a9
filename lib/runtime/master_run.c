/* master_run.c: RunStep without a waiting thread. The handler decodes the
 * request, admits the step (at most limits.max_steps in flight, none while
 * draining), gets the signature's partitions (master_step.c: registered
 * asynchronously on first use) and sends one RunGraph per partition with
 * tf__ms_send; the last completion replies to the client (tf_rpc_reply).
 * Whatever comes first ends the step exactly once (step_finish): the last
 * RunGraph reply, a partition's error (AbortStep and CleanupGraph then go
 * to every partition), the step's deadline (the request's, else
 * timeouts.step_ms), enforced by one timer thread that replies
 * DEADLINE_EXCEEDED within milliseconds of it and aborts the partitions,
 * a task going down (health checks), the session ending (closed or
 * expired) or the master draining or stopping. Completions that arrive
 * later find the step finished and are dropped; the step record lives
 * until its last callback (a reference each). A partition answering
 * ABORTED triggers a GetStatus of the step's tasks: if one restarted, its
 * stale registration is retired and the step registers and runs again
 * once. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"

/* RunGraph calls outlive the step's deadline by this much: the timer ends
 * the step at the deadline, this only bounds the call's own resources. */
#define RPC_SLACK_MS 1000
#define NO_DEADLINE_RPC_MS (24LL * 3600 * 1000)

struct ms_step {
  tf_master *m;
  pthread_mutex_t mu;
  tf__refcount refs;       /* one for being in flight, one per callback pending */
  struct tf_rpc_call *call; /* until finished */
  ms_session *sess;        /* a reference */
  uint64_t session;
  tf_msg_run_step_req r;
  tf__sig sig;
  bool has_sig;
  int64_t deadline_ms;     /* 0: none */
  int64_t deadline_ns;     /* absolute (tf__now_ns); 0: none; set before tracking */
  int64_t start_ns;        /* RunStep's arrival, for tf_step_duration_seconds */
  /* under mu: */
  bool finished;
  int attempt;
  int gen;                 /* bumped per phase: older completions are dropped */
  ms_prepared *p;          /* the partitions being run */
  uint64_t step_id;        /* of the RunGraphs sent; 0: none sent */
  int pending;
  tf_wire_msg **replies;   /* per partition */
  tf_status first_err;     /* the ABORTED that started a re-check */
};

typedef struct part_call {
  ms_step *s;
  int i, gen;
} part_call;

static void step_release(void *arg) {
  ms_step *s = arg;
  for (int i = 0; s->replies != NULL && s->p != NULL && i < s->p->n_parts; i++) {
    tf_wire_msg_free(s->replies[i]);
  }
  free(s->replies);
  if (s->sess != NULL) tf__ms_session_put(s->m, s->sess);
  if (s->has_sig) tf__sig_fini(&s->sig);
  tf_msg_run_step_req_fini(&s->r);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static void step_unref(ms_step *s) { tf__ref_put(&s->refs, step_release, s); }

/* ---- admission and the in-flight list ------------------------------------ */

static tf_code track(tf_master *m, ms_step *s, tf_status *st) {
  tf_code rc = TF_OK;
  pthread_mutex_lock(&m->mu);
  if (m->draining || m->stopping) {
    rc = tf_status_set(st, TF_UNAVAILABLE, "RunStep: the master at %s is "
                       "shutting down; it takes no new steps", m->url);
  } else if (m->n_steps >= m->spec->max_steps) {
    m->counters.steps_refused++;
    rc = tf_status_set(st, TF_RESOURCE_EXHAUSTED, "RunStep: the master has %d "
                       "steps in flight, its cap limits.max_steps = %d (%s)",
                       m->n_steps, m->spec->max_steps, m->spec->path);
  } else {
    if (m->n_steps == m->cap_steps) {
      m->cap_steps = m->cap_steps ? 2 * m->cap_steps : 16;
      m->steps = tf__xrealloc(m->steps, (size_t)m->cap_steps * sizeof *m->steps);
    }
    m->steps[m->n_steps++] = s;
    pthread_cond_broadcast(&m->timer_cv);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static void untrack(tf_master *m, ms_step *s, tf_code outcome) {
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->n_steps; i++) {
    if (m->steps[i] == s) {
      m->steps[i] = m->steps[--m->n_steps];
      break;
    }
  }
  if (outcome == TF_OK) {
    m->counters.steps_ok++;
  } else {
    m->counters.steps_failed++;
    if (outcome == TF_DEADLINE_EXCEEDED) m->counters.steps_deadline++;
  }
  if (m->n_steps == 0) pthread_cond_broadcast(&m->idle_cv);
  pthread_mutex_unlock(&m->mu);
  tf__step_metrics_done(&m->step_metrics, s->start_ns, outcome);
}

/* ---- finishing ------------------------------------------------------------ */

/* AbortStep and CleanupGraph to every partition's task (not waited for). */
static void finish_on_tasks(tf_master *m, const ms_prepared *p, uint64_t step_id,
                            const tf_status *err) {
  for (int i = 0; i < p->n_parts; i++) {
    int t = p->parts[i].task;
    for (int pass = 0; pass < 2; pass++) {
      tf_wire_header h = tf__ms_header(m, t, pass == 0 ? TF_M_ABORT_STEP
                                                      : TF_M_CLEANUP_GRAPH,
                                       0, step_id, m->spec->rpc_timeout_ms);
      tf_wire_writer *wr = tf_wire_writer_new(&h);
      if (pass == 0) {
        tf_msg_abort_step_req b = {.code = err->code, .msg = err->msg};
        tf_msg_abort_step_req_encode(wr, &b);
      }
      nng_msg *msg = NULL;
      tf_status st;
      tf_status_init(&st);
      if (tf_wire_finish(wr, &msg, &st) == TF_OK) {
        tf__ms_send_ignore(m, t, msg, m->spec->rpc_timeout_ms);
      }
    }
  }
}

/* Partition i's fetches from its decoded reply b (taken from it). */
static tf_code take_fetches(tf_master *m, const ms_prepared *p, int i,
                            tf_msg_run_graph_reply *b, tf_tensor **fetched,
                            tf_status *st) {
  if (b->n_rets != p->parts[i].n_rets) {
    return tf_status_set(st, TF_INTERNAL, "RunGraph reply from %s has %d "
                         "values, expected %d", m->tasks[p->parts[i].task].prefix,
                         b->n_rets, p->parts[i].n_rets);
  }
  for (int k = 0; k < b->n_rets; k++) {
    int f = p->parts[i].ret_fetch[k];
    if (b->rets[k] == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "fetch '%s' produced no "
                           "value: it is on an untaken branch of a cond (a "
                           "dead tensor)", p->fetches[f]);
    }
    fetched[f] = b->rets[k];
    b->rets[k] = NULL;
  }
  return TF_OK;
}

/* The OK reply: fetches from the partitions' replies in the caller's
 * order; records traced node times. NULL with st set on error. */
static nng_msg *ok_reply(tf_master *m, ms_step *s, tf_status *st) {
  const ms_prepared *p = s->p;
  int no = p->n_fetches;
  tf_tensor **fetched = tf__xcalloc((size_t)no + 1, sizeof *fetched);
  tf_code rc = TF_OK;
  for (int i = 0; i < p->n_parts && rc == TF_OK; i++) {
    tf_msg_run_graph_reply b;
    if (tf_msg_run_graph_reply_decode(s->replies[i], &b, st) != TF_OK) {
      rc = tf_status_prefix(st, "%s", m->tasks[p->parts[i].task].prefix);
      break;
    }
    rc = take_fetches(m, p, i, &b, fetched, st);
    for (int k = 0; rc == TF_OK && k < b.n_timings; k++) {
      const tf_msg_timing *t = &b.timings[k];
      tf_cost_model_record(m->costs, t->node, t->end_ns - t->start_ns);
    }
    tf_msg_run_graph_reply_fini(&b);
  }
  nng_msg *msg = NULL;
  if (rc == TF_OK) {
    int n = s->sig.n_fetch_args;
    tf_tensor **out = tf__xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) out[i] = fetched[s->sig.fetch_pos[i]];
    tf_msg_run_step_reply b = {.n_fetches = n, .fetches = out};
    tf_wire_writer *wr = tf_rpc_reply_writer(s->call);
    tf_msg_run_step_reply_encode(wr, &b);
    free(out);
    tf_wire_finish(wr, &msg, st);
  }
  for (int i = 0; i < no; i++) tf_tensor_unref(fetched[i]);
  free(fetched);
  return msg;
}

/* Ends the step once: replies (OK when err is NULL), aborts its partitions
 * on failure, leaves the in-flight list and drops the in-flight reference.
 * Later calls do nothing. */
static void step_finish(ms_step *s, const tf_status *err) {
  tf_master *m = s->m;
  pthread_mutex_lock(&s->mu);
  if (s->finished) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  s->finished = true;
  s->gen++;
  pthread_mutex_unlock(&s->mu);
  tf_status st;
  tf_status_init(&st);
  nng_msg *reply = NULL;
  if (err == NULL) {
    reply = ok_reply(m, s, &st);
  } else {
    st = *err;
  }
  tf_code outcome = reply != NULL ? TF_OK : st.code;
  /* Leave the list first: a drain waiting for it to empty sees the step
   * gone once the reply is on its way. */
  untrack(m, s, outcome);
  if (reply != NULL) {
    tf_rpc_reply(s->call, reply);
  } else {
    tf_rpc_reply_error(s->call, &st);
    if (s->step_id != 0) finish_on_tasks(m, s->p, s->step_id, &st);
  }
  s->call = NULL;
  step_unref(s);
}

static void finish_code(ms_step *s, tf_code code, const char *fmt, const char *arg) {
  tf_status st;
  tf_status_init(&st);
  tf_status_set(&st, code, fmt, arg);
  step_finish(s, &st);
}

void tf__ms_abort_steps(tf_master *m, int task, uint64_t session, tf_code code,
                        const char *why) {
  pthread_mutex_lock(&m->mu);
  ms_step **hit = tf__xcalloc((size_t)m->n_steps + 1, sizeof *hit);
  int n = 0;
  for (int k = 0; k < m->n_steps; k++) {
    ms_step *s = m->steps[k];
    bool match = task < 0 && session == 0;
    if (session != 0 && s->session == session) match = true;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; task >= 0 && s->p != NULL && i < s->p->n_parts; i++) {
      if (s->p->parts[i].task == task) match = true;
    }
    pthread_mutex_unlock(&s->mu);
    if (match) {
      tf__ref_get(&s->refs); /* in the list: its in-flight reference is held */
      hit[n++] = s;
    }
  }
  pthread_mutex_unlock(&m->mu);
  for (int k = 0; k < n; k++) {
    finish_code(hit[k], code, "%s", why);
    step_unref(hit[k]);
  }
  free(hit);
}

/* ---- running -------------------------------------------------------------- */

static void part_done(void *arg, const tf_status *st, tf_wire_msg *reply);

static nng_msg *run_graph_msg(tf_master *m, ms_step *s, const ms_part *pt,
                              tf_tensor **feeds, bool trace, tf_status *st) {
  tf_wire_header h = tf__ms_header(m, pt->task, TF_M_RUN_GRAPH, s->session,
                                   s->step_id, s->deadline_ms);
  tf_tensor **args = tf__xcalloc((size_t)pt->n_args + 1, sizeof *args);
  for (int k = 0; k < pt->n_args; k++) args[k] = feeds[pt->arg_feed[k]];
  tf_msg_run_graph_req b = {.handle = pt->handle, .n_args = pt->n_args, .args = args,
                            .n_rets = pt->n_rets, .trace = trace};
  tf_wire_writer *wr = tf_wire_writer_new(&h);
  tf_msg_run_graph_req_encode(wr, &b);
  free(args);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* Feeds by sorted index, checked against the graph's types. (A feed given
 * twice was refused by tf__sig_build.) */
static tf_code order_feeds(const ms_prepared *p, const ms_step *s, tf_tensor **by_index,
                           tf_status *st) {
  for (int i = 0; i < s->r.n_feeds; i++) {
    int k = s->sig.feed_pos[i];
    TF_ASSERT(k >= 0 && k < p->n_feeds && by_index[k] == NULL);
    if (s->r.feed_values[i]->dtype != p->feed_types[k]) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "feed '%s': the graph "
                           "expects %s, got a %s tensor", s->r.feed_names[i],
                           tf_dtype_name(p->feed_types[k]),
                           tf_dtype_name(s->r.feed_values[i]->dtype));
    }
    by_index[k] = s->r.feed_values[i];
  }
  return TF_OK;
}

/* Checks that p's tasks are up and its feeds fit (st on error). */
static tf_code launch_check(tf_master *m, ms_step *s, ms_prepared *p,
                            tf_tensor **by_index, tf_status *st) {
  for (int i = 0; i < p->n_parts; i++) {
    if (!tf__ms_task_up(m, p->parts[i].task, NULL)) {
      return tf__ms_task_down(m, p->parts[i].task, st);
    }
  }
  return order_feeds(p, s, by_index, st);
}

/* Sends one RunGraph per partition of p. */
static void launch(ms_step *s, ms_prepared *p) {
  tf_master *m = s->m;
  tf_status st;
  tf_status_init(&st);
  tf_tensor **by_index = tf__xcalloc((size_t)p->n_feeds + 1, sizeof *by_index);
  if (launch_check(m, s, p, by_index, &st) != TF_OK) {
    free(by_index);
    step_finish(s, &st);
    return;
  }
  pthread_mutex_lock(&s->mu);
  if (s->finished) {
    pthread_mutex_unlock(&s->mu);
    free(by_index);
    return;
  }
  for (int i = 0; s->replies != NULL && i < s->p->n_parts; i++) {
    tf_wire_msg_free(s->replies[i]);
  }
  free(s->replies);
  s->replies = tf__xcalloc((size_t)p->n_parts + 1, sizeof *s->replies);
  s->p = p;
  s->step_id = (tf__random_u64() >> 8) | (1ull << 56); /* TF keeps the top byte 0x01 */
  int gen = ++s->gen;
  s->pending = p->n_parts;
  for (int i = 0; i < p->n_parts; i++) tf__ref_get(&s->refs);
  pthread_mutex_unlock(&s->mu);
  bool trace = s->r.trace || !atomic_exchange(&p->traced, true);
  int64_t rpc_ms = s->deadline_ms > 0 ? s->deadline_ms + RPC_SLACK_MS : NO_DEADLINE_RPC_MS;
  for (int i = 0; i < p->n_parts; i++) {
    part_call *c = tf__xcalloc(1, sizeof *c);
    *c = (part_call){s, i, gen};
    nng_msg *msg = run_graph_msg(m, s, &p->parts[i], by_index, trace, &st);
    if (msg == NULL) {
      part_done(c, &st, NULL);
      continue;
    }
    tf__ms_send(m, p->parts[i].task, msg, rpc_ms, part_done, c);
  }
  free(by_index);
}

static void on_prepared(void *arg, ms_prepared *p, const tf_status *st);

typedef struct prep_retry {
  ms_step *s;
  atomic_int left;  /* tasks still to answer */
} prep_retry;

/* Every task answered (or failed) the GetStatus after a registration was
 * refused as ABORTED (a task restarted under the master's feet): their
 * incarnations are fresh now, so register again, once. */
static void prep_refreshed(void *arg) {
  prep_retry *r = arg;
  if (atomic_fetch_sub(&r->left, 1) != 1) return;
  ms_step *s = r->s;
  free(r);
  tf_log(LOG_WARNING, "session %016" PRIx64 ": registering was refused by a "
         "task that restarted; registering again", s->session);
  tf__ms_prepare(s->m, s->sess, &s->sig, on_prepared, s); /* keeps the ref */
}

static void on_prepared(void *arg, ms_prepared *p, const tf_status *st) {
  ms_step *s = arg;
  if (p == NULL && st->code == TF_ABORTED && s->attempt == 0) {
    s->attempt++; /* not launched yet: nothing else touches the step */
    prep_retry *r = tf__xcalloc(1, sizeof *r);
    r->s = s;
    /* The last refresh to end prepares again and may free s, even before
     * this loop ends: read nothing of s once the refreshes start. */
    tf_master *m = s->m;
    int n = m->n_tasks;
    atomic_init(&r->left, n);
    for (int i = 0; i < n; i++) {
      tf__ms_refresh_task_async(m, i, m->spec->rpc_timeout_ms, prep_refreshed, r);
    }
    return;
  }
  if (p == NULL) {
    step_finish(s, st);
  } else {
    launch(s, p);
  }
  step_unref(s); /* the prepare's */
}

typedef struct recheck {
  ms_step *s;
  int gen;
} recheck;

/* A task of the step answered GetStatus after an ABORTED: once all did,
 * retry if one restarted, else report the ABORTED. */
static void recheck_done(void *arg) {
  recheck *c = arg;
  ms_step *s = c->s;
  pthread_mutex_lock(&s->mu);
  bool last = !s->finished && c->gen == s->gen && --s->pending == 0;
  ms_prepared *p = s->p;
  pthread_mutex_unlock(&s->mu);
  free(c);
  if (last) {
    bool restarted = false;
    for (int i = 0; i < p->n_parts; i++) {
      uint64_t inc = 0;
      if (tf__ms_task_up(s->m, p->parts[i].task, &inc) && inc != p->parts[i].incarnation) {
        restarted = true;
      }
    }
    if (restarted) {
      tf_log(LOG_WARNING, "session %016" PRIx64 ": a task restarted; registering "
             "the step's partitions again and retrying", s->session);
      tf__ms_retire(s->m, s->sess, s->sig.key, p);
      tf__ref_get(&s->refs);
      tf__ms_prepare(s->m, s->sess, &s->sig, on_prepared, s);
    } else {
      step_finish(s, &s->first_err);
    }
  }
  step_unref(s);
}

/* A partition answered ABORTED on the first attempt (under s->mu, which
 * this releases): abort the attempt and ask its tasks who they are now. */
static void start_recheck(ms_step *s, const tf_status *err) {
  tf_master *m = s->m;
  s->attempt++;
  s->first_err = *err;
  int gen = ++s->gen;
  ms_prepared *p = s->p;
  uint64_t old_step = s->step_id;
  s->step_id = 0;
  s->pending = p->n_parts;
  for (int i = 0; i < p->n_parts; i++) tf__ref_get(&s->refs);
  pthread_mutex_unlock(&s->mu);
  finish_on_tasks(m, p, old_step, err);
  for (int i = 0; i < p->n_parts; i++) {
    recheck *c = tf__xcalloc(1, sizeof *c);
    *c = (recheck){s, gen};
    tf__ms_refresh_task_async(m, p->parts[i].task, m->spec->rpc_timeout_ms,
                              recheck_done, c);
  }
}

static void part_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  part_call *c = arg;
  ms_step *s = c->s;
  pthread_mutex_lock(&s->mu);
  if (s->finished || c->gen != s->gen) {
    pthread_mutex_unlock(&s->mu);
    tf_wire_msg_free(reply);
  } else if (st->code == TF_ABORTED && s->attempt == 0) {
    tf_wire_msg_free(reply);
    start_recheck(s, st); /* unlocks */
  } else if (st->code != TF_OK) {
    pthread_mutex_unlock(&s->mu);
    tf_wire_msg_free(reply);
    /* The worker's message names its task; RPC errors name the URL. */
    step_finish(s, st);
  } else {
    s->replies[c->i] = reply;
    bool last = --s->pending == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) step_finish(s, NULL);
  }
  free(c);
  step_unref(s);
}

/* ---- RunStep -------------------------------------------------------------- */

/* Decodes and admits the step; NULL with st set when it is refused. */
static ms_step *step_new(tf_master *m, struct tf_rpc_call *call, tf_status *st) {
  const tf_wire_msg *req = tf_rpc_call_request(call);
  ms_step *s = tf__xcalloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  tf__ref_init(&s->refs, 1);
  s->m = m;
  s->start_ns = tf__now_ns();
  s->session = req->h.session;
  s->deadline_ms = req->h.deadline_ms > 0 ? req->h.deadline_ms : m->spec->step_timeout_ms;
  if (s->deadline_ms > 0) s->deadline_ns = tf__now_ns() + s->deadline_ms * 1000000;
  tf_code rc = tf_msg_run_step_req_decode(req, &s->r, st);
  if (rc == TF_OK) {
    rc = tf__sig_build(&s->sig, s->r.feed_names, s->r.n_feeds, s->r.fetches,
                       s->r.n_fetches, s->r.targets, s->r.n_targets, st);
    s->has_sig = rc == TF_OK;
    if (rc != TF_OK) tf_status_prefix(st, "RunStep");
  }
  if (rc == TF_OK) {
    s->sess = tf__ms_session_get(m, s->session, st);
    if (s->sess == NULL) rc = st->code;
  }
  if (rc == TF_OK) {
    /* Once tracked, the step is visible to aborts (its session closing, a
     * task going down), which reply on its call and drop the in-flight
     * reference: both must be in place before. */
    s->call = call;
    tf__ref_get(&s->refs); /* the prepare's */
    rc = track(m, s, st);
    if (rc != TF_OK) {
      s->call = NULL;
      step_unref(s);
    }
  }
  if (rc != TF_OK) {
    step_unref(s);
    return NULL;
  }
  return s;
}

void tf__ms_run_step(tf_master *m, struct tf_rpc_call *call) {
  tf_status st;
  tf_status_init(&st);
  ms_step *s = step_new(m, call, &st);
  if (s == NULL) {
    tf_rpc_reply_error(call, &st);
    return;
  }
  tf__ms_prepare(m, s->sess, &s->sig, on_prepared, s); /* the prepare's reference */
}

/* ---- the deadline timer --------------------------------------------------- */

/* Finishes the steps past their deadline; returns the next deadline (0:
 * none). Called and returns with m->mu held. */
static int64_t expire(tf_master *m) {
  int64_t now = tf__now_ns(), next = 0;
  ms_step **hit = tf__xcalloc((size_t)m->n_steps + 1, sizeof *hit);
  int n = 0;
  for (int k = 0; k < m->n_steps; k++) {
    ms_step *s = m->steps[k];
    if (s->deadline_ns == 0) continue;
    if (s->deadline_ns <= now) {
      tf__ref_get(&s->refs);
      hit[n++] = s;
    } else if (next == 0 || s->deadline_ns < next) {
      next = s->deadline_ns;
    }
  }
  if (n > 0) {
    pthread_mutex_unlock(&m->mu);
    for (int k = 0; k < n; k++) {
      char why[160];
      snprintf(why, sizeof why, "RunStep exceeded its deadline of %" PRId64 " ms",
               hit[k]->deadline_ms);
      finish_code(hit[k], TF_DEADLINE_EXCEEDED, "%s", why);
      step_unref(hit[k]);
    }
    pthread_mutex_lock(&m->mu);
    next = tf__now_ns(); /* look again: the list changed */
  }
  free(hit);
  return next;
}

static void *timer_main(void *arg) {
  tf_master *m = arg;
  pthread_mutex_lock(&m->mu);
  while (m->timer_on) {
    int64_t next = expire(m), now = tf__now_ns();
    if (next != 0 && next <= now) continue;
    /* Wake at the next deadline (1 ms late at most), a new step, or stop;
     * at least once a second. */
    int64_t ms = next == 0 ? 1000 : (next - now + 999999) / 1000000;
    tf__cond_wait_ms(&m->timer_cv, &m->mu, ms > 1000 ? 1000 : ms);
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

void tf__ms_timer_start(tf_master *m) {
  m->timer_on = true;
  TF_ASSERT(pthread_create(&m->timer, NULL, timer_main, m) == 0);
}

void tf__ms_timer_stop(tf_master *m) {
  pthread_mutex_lock(&m->mu);
  bool on = m->timer_on;
  m->timer_on = false;
  pthread_cond_broadcast(&m->timer_cv);
  pthread_mutex_unlock(&m->mu);
  if (on) pthread_join(m->timer, NULL);
}
