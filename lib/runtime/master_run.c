/* master_run.c: driving one step over its partitions: RunGraph to every
 * partition's task at once, then wait for all replies, the first error, a
 * task going down (tf__ms_abort_steps_on, from the health checks) or the
 * deadline, whichever comes first. The replies that arrive after the
 * master stopped waiting are dropped by the step record, which lives
 * until its last callback. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"

#define NO_DEADLINE_RPC_MS (24LL * 3600 * 1000)
#define RPC_GRACE_MS 2000

struct ms_step {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tf__refcount refs;      /* the driver + one per RunGraph in flight */
  int pending;
  bool failed;
  tf_status err;
  uint64_t step_id;
  int n_parts;
  const int *tasks;       /* per partition (valid while the driver waits) */
  tf_wire_msg **replies;  /* per partition */
  const char **prefixes;  /* per partition, for messages */
};

typedef struct part_call {
  ms_step *s;
  int i;
} part_call;

static void step_release(void *arg) {
  ms_step *s = arg;
  for (int i = 0; i < s->n_parts; i++) tf_wire_msg_free(s->replies[i]);
  free(s->replies);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

static void step_unref(ms_step *s) { tf__ref_put(&s->refs, step_release, s); }

/* Records the step's first error (under s->mu). */
static void fail_locked(ms_step *s, tf_code code, const char *msg) {
  if (!s->failed) {
    s->failed = true;
    tf_status_set(&s->err, code, "%s", msg);
  }
  pthread_cond_broadcast(&s->cv);
}

static void part_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  part_call *c = arg;
  ms_step *s = c->s;
  pthread_mutex_lock(&s->mu);
  if (st->code != TF_OK) {
    /* The worker's message already names its task; RPC errors name the URL. */
    fail_locked(s, st->code, st->msg);
    tf_wire_msg_free(reply);
  } else {
    s->replies[c->i] = reply;
  }
  s->pending--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  free(c);
  step_unref(s);
}

void tf__ms_abort_steps_on(tf_master *m, int task, const char *why) {
  pthread_mutex_lock(&m->mu);
  for (int k = 0; k < m->n_steps; k++) {
    ms_step *s = m->steps[k];
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_parts; i++) {
      if (s->tasks[i] == task) {
        fail_locked(s, TF_UNAVAILABLE, why);
        break;
      }
    }
    pthread_mutex_unlock(&s->mu);
  }
  pthread_mutex_unlock(&m->mu);
}

static void ignore_reply(void *arg, const tf_status *st, tf_wire_msg *reply) {
  tf_wire_msg_free(reply);
}

/* AbortStep and CleanupGraph to every partition's task (not waited for). */
static void finish_on_tasks(tf_master *m, ms_prepared *p, uint64_t step_id,
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
        tf_rpc_call_async(m->tasks[t].client, msg, m->spec->rpc_timeout_ms,
                          ignore_reply, NULL);
      }
    }
  }
}

static nng_msg *run_graph_msg(tf_master *m, ms_session *sess, const ms_part *pt,
                              uint64_t step_id, tf_tensor **feeds,
                              int64_t deadline_ms, bool trace, tf_status *st) {
  tf_wire_header h = tf__ms_header(m, pt->task, TF_M_RUN_GRAPH, sess->handle, step_id,
                                   deadline_ms);
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

static void track(tf_master *m, ms_step *s, bool add) {
  pthread_mutex_lock(&m->mu);
  if (add) {
    if (m->n_steps == m->cap_steps) {
      m->cap_steps = m->cap_steps ? 2 * m->cap_steps : 16;
      m->steps = tf__xrealloc(m->steps, (size_t)m->cap_steps * sizeof *m->steps);
    }
    m->steps[m->n_steps++] = s;
  } else {
    for (int i = 0; i < m->n_steps; i++) {
      if (m->steps[i] == s) {
        m->steps[i] = m->steps[--m->n_steps];
        break;
      }
    }
    if (m->n_steps == 0) pthread_cond_broadcast(&m->idle_cv);
  }
  pthread_mutex_unlock(&m->mu);
}

static void wait_step(ms_step *s, int64_t deadline_ms) {
  int64_t until = deadline_ms > 0 ? tf__now_ns() + deadline_ms * 1000000 : 0;
  pthread_mutex_lock(&s->mu);
  while (s->pending > 0 && !s->failed) {
    if (until != 0 && tf__now_ns() >= until + (int64_t)RPC_GRACE_MS * 1000000) {
      char msg[160];
      snprintf(msg, sizeof msg, "RunStep exceeded its deadline of %" PRId64
               " ms (%d partition(s) did not answer)", deadline_ms, s->pending);
      fail_locked(s, TF_DEADLINE_EXCEEDED, msg);
      break;
    }
    tf__cond_wait_ms(&s->cv, &s->mu, 20);
  }
  pthread_mutex_unlock(&s->mu);
}

/* Partition i's fetches from its decoded reply b (taken from it). */
static tf_code take_fetches(ms_prepared *p, ms_step *s, int i, tf_msg_run_graph_reply *b,
                            tf_tensor **fetched, tf_status *st) {
  if (b->n_rets != p->parts[i].n_rets) {
    return tf_status_set(st, TF_INTERNAL, "RunGraph reply from %s has %d "
                         "values, expected %d", s->prefixes[i], b->n_rets,
                         p->parts[i].n_rets);
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

/* Fetches from the replies; records traced node times. */
static tf_code collect(tf_master *m, ms_prepared *p, ms_step *s,
                       tf_tensor **fetched, tf_status *st) {
  for (int i = 0; i < p->n_parts; i++) {
    tf_msg_run_graph_reply b;
    if (tf_msg_run_graph_reply_decode(s->replies[i], &b, st) != TF_OK) {
      return tf_status_prefix(st, "%s", s->prefixes[i]);
    }
    tf_code rc = take_fetches(p, s, i, &b, fetched, st);
    for (int k = 0; rc == TF_OK && k < b.n_timings; k++) {
      const tf_msg_timing *t = &b.timings[k];
      tf_cost_model_record(m->costs, t->node, t->end_ns - t->start_ns);
    }
    tf_msg_run_graph_reply_fini(&b);
    if (rc != TF_OK) return rc;
  }
  return TF_OK;
}

tf_code tf__ms_run_partitions(tf_master *m, ms_session *sess, ms_prepared *p,
                              tf_tensor **feeds, int64_t deadline_ms,
                              bool trace, tf_tensor **fetched, tf_status *st) {
  pthread_mutex_lock(&m->mu);
  bool draining = m->draining;
  pthread_mutex_unlock(&m->mu);
  if (draining) return tf_status_set(st, TF_UNAVAILABLE, "the master is shutting down");
  for (int i = 0; i < p->n_parts; i++) {
    if (!tf__ms_task_up(m, p->parts[i].task, NULL)) {
      return tf_status_set(st, TF_UNAVAILABLE, "%s is down (tfctl health shows "
                           "the cluster); the step needs it",
                           m->tasks[p->parts[i].task].prefix);
    }
  }
  /* TF keeps the top byte 0x01. */
  uint64_t step_id = (tf__random_u64() >> 8) | (1ull << 56);
  bool first_trace = !atomic_exchange(&p->traced, true);
  ms_step *s = tf__xcalloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->step_id = step_id;
  s->n_parts = p->n_parts;
  s->replies = tf__xcalloc((size_t)p->n_parts + 1, sizeof *s->replies);
  int *tasks = tf__xcalloc((size_t)p->n_parts + 1, sizeof *tasks);
  const char **prefixes = tf__xcalloc((size_t)p->n_parts + 1, sizeof *prefixes);
  for (int i = 0; i < p->n_parts; i++) {
    tasks[i] = p->parts[i].task;
    prefixes[i] = m->tasks[tasks[i]].prefix;
  }
  s->tasks = tasks;
  s->prefixes = prefixes;
  tf__ref_init(&s->refs, 1);
  track(m, s, true);
  int64_t rpc_ms = deadline_ms > 0 ? deadline_ms + RPC_GRACE_MS : NO_DEADLINE_RPC_MS;
  for (int i = 0; i < p->n_parts; i++) {
    tf_status ms;
    tf_status_init(&ms);
    nng_msg *msg = run_graph_msg(m, sess, &p->parts[i], step_id, feeds, deadline_ms,
                                 trace || first_trace, &ms);
    pthread_mutex_lock(&s->mu);
    if (msg == NULL) {
      fail_locked(s, ms.code, ms.msg);
      pthread_mutex_unlock(&s->mu);
      break;
    }
    s->pending++;
    tf__ref_get(&s->refs);
    pthread_mutex_unlock(&s->mu);
    part_call *c = tf__xcalloc(1, sizeof *c);
    c->s = s;
    c->i = i;
    tf_rpc_call_async(m->tasks[tasks[i]].client, msg, rpc_ms, part_done, c);
  }
  wait_step(s, deadline_ms);
  track(m, s, false);
  pthread_mutex_lock(&s->mu);
  tf_code rc = s->failed ? tf_status_set(st, s->err.code, "%s", s->err.msg) : TF_OK;
  pthread_mutex_unlock(&s->mu);
  if (rc == TF_OK) rc = collect(m, p, s, fetched, st);
  /* After a failure, AbortStep and CleanupGraph to every partition; a
   * successful partition has already dropped its step state. */
  if (rc != TF_OK) finish_on_tasks(m, p, step_id, st);
  /* Late callbacks touch only the step record (replies), never tasks. */
  free(tasks);
  free(prefixes);
  step_unref(s);
  return rc;
}
