/* master.c: the master service's lifecycle, the health of the cluster's
 * tasks, and the small methods (ListDevices, ClusterStatus, Reset).
 * Sessions are in master_session.c and steps in master_step.c.
 *
 * Health: tf_master_tick sends GetStatus to every task whose last check is
 * older than heartbeat_ms, without blocking (one check in flight per
 * task). A task that has not answered for down_after_ms is down: running
 * steps that use it fail at once with UNAVAILABLE, and new steps that need
 * it fail without waiting. A changed incarnation means the task restarted:
 * its registered graphs are gone, which RunStep notices (ABORTED) and
 * repairs by registering the partitions again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"


tf_wire_writer *tf__ms_reply_writer(const tf_master *m, const tf_wire_msg *req) {
  return tf_msg_reply_writer(req, TF_MSG_MASTER_TASK, m->incarnation);
}

nng_msg *tf__ms_empty_reply(const tf_master *m, const tf_wire_msg *req, tf_status *st) {
  nng_msg *msg = NULL;
  tf_wire_finish(tf__ms_reply_writer(m, req), &msg, st);
  return msg;
}

tf_wire_header tf__ms_header(tf_master *m, int task, int method, uint64_t session,
                             uint64_t step, int64_t deadline_ms) {
  pthread_mutex_lock(&m->mu);
  uint64_t inc = m->tasks[task].incarnation; /* as last seen; 0: never */
  pthread_mutex_unlock(&m->mu);
  return (tf_wire_header){.version = TF_WIRE_VERSION, .method = method,
                          .request_id = tf_rpc_new_request_id(),
                          .session = session, .step_id = step,
                          .deadline_ms = deadline_ms,
                          .from = TF_MSG_MASTER_TASK, .from_inc = m->incarnation,
                          .to = m->tasks[task].prefix, .to_inc = inc};
}

/* ---- calls to tasks ------------------------------------------------------- */

typedef struct send_ctx {
  tf_master *m;
  tf_rpc_done done;
  void *arg;
} send_ctx;

static void send_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  send_ctx *c = arg;
  tf_master *m = c->m;
  if (c->done != NULL) {
    c->done(c->arg, st, reply);
  } else {
    tf_wire_msg_free(reply);
  }
  free(c);
  pthread_mutex_lock(&m->mu);
  if (--m->inflight == 0) pthread_cond_broadcast(&m->inflight_cv);
  pthread_mutex_unlock(&m->mu);
}

void tf__ms_send(tf_master *m, int task, nng_msg *msg, int64_t timeout_ms,
                 tf_rpc_done done, void *arg) {
  send_ctx *c = tf__xcalloc(1, sizeof *c);
  *c = (send_ctx){m, done, arg};
  pthread_mutex_lock(&m->mu);
  bool stopping = m->stopping;
  m->inflight++;
  if (!stopping) m->senders++;
  pthread_mutex_unlock(&m->mu);
  if (stopping) {
    nng_msg_free(msg);
    tf_status st;
    tf_status_init(&st);
    tf_status_set(&st, TF_UNAVAILABLE, "the master at %s is stopping", m->url);
    send_done(c, &st, NULL);
    return;
  }
  tf_rpc_call_async(m->tasks[task].client, msg, timeout_ms, send_done, c);
  pthread_mutex_lock(&m->mu);
  if (--m->senders == 0) pthread_cond_broadcast(&m->inflight_cv);
  pthread_mutex_unlock(&m->mu);
}

void tf__ms_send_ignore(tf_master *m, int task, nng_msg *msg, int64_t timeout_ms) {
  tf__ms_send(m, task, msg, timeout_ms, NULL, NULL);
}

/* ---- health --------------------------------------------------------------- */

typedef struct check_ctx {
  tf_master *m;
  int task;
  bool from_check;     /* the tick's check (clears `checking`) */
  void (*then)(void *);
  void *arg;
} check_ctx;

/* Records a GetStatus answer (reply) or failure (st) for task i. */
static void note_status(tf_master *m, int i, const tf_status *st,
                        const tf_wire_msg *reply, bool from_check) {
  ms_task *t = &m->tasks[i];
  tf_msg_get_status_reply b = {0};
  tf_status pst;
  tf_status_init(&pst);
  bool ok = st->code == TF_OK && tf_msg_get_status_reply_decode(reply, &b, &pst) == TF_OK;
  uint64_t inc = b.incarnation;
  tf_msg_get_status_reply_fini(&b);
  bool went_down = false;
  int64_t now = tf__now_ns();
  char why[768];
  pthread_mutex_lock(&m->mu);
  if (from_check) t->checking = false; /* the health check in flight ended */
  t->known = true;
  if (ok) {
    if (t->ever_up && t->incarnation != inc) {
      tf_log(LOG_WARNING, "%s restarted (incarnation %016" PRIx64 " -> %016"
             PRIx64 ")", t->prefix, t->incarnation, inc);
    } else if (!t->up) {
      tf_log(LOG_INFO, "%s is up (incarnation %016" PRIx64 ")", t->prefix, inc);
    }
    t->up = t->ever_up = true;
    t->incarnation = inc;
    t->last_ok_ns = now;
    free(t->error);
    t->error = NULL;
  } else {
    free(t->error);
    t->error = tf__xstrdup(st->code != TF_OK ? st->msg : pst.msg);
    /* Another task at the address is down at once: its answers are not
     * this task's. */
    bool wrong = st->code == TF_FAILED_PRECONDITION && strstr(st->msg, "wrong task") != NULL;
    if (t->up && (wrong || now - t->last_ok_ns > m->spec->down_after_ms * 1000000)) {
      t->up = false;
      went_down = true;
      snprintf(why, sizeof why, "%s is down: no answer for %.1f s (%s)", t->prefix,
               (double)(now - t->last_ok_ns) / 1e9, t->error);
    }
  }
  pthread_mutex_unlock(&m->mu);
  if (went_down) {
    tf_log(LOG_ERR, "%s", why);
    tf__ms_abort_steps(m, i, 0, TF_UNAVAILABLE, why);
  }
}

static void check_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  check_ctx *c = arg;
  note_status(c->m, c->task, st, reply, c->from_check);
  tf_wire_msg_free(reply);
  if (c->then != NULL) c->then(c->arg);
  free(c);
}

static void send_check(tf_master *m, int i, int64_t timeout_ms, bool from_check,
                       void (*then)(void *), void *arg) {
  tf_wire_header h = tf__ms_header(m, i, TF_M_GET_STATUS, 0, 0, timeout_ms);
  /* Whichever incarnation of the task answers: a restart shows up as a new
   * incarnation in the reply (naming the old one would be refused, and
   * the task would never be seen again). */
  h.to_inc = 0;
  nng_msg *msg = NULL;
  tf_status st;
  tf_status_init(&st);
  check_ctx *c = tf__xcalloc(1, sizeof *c);
  *c = (check_ctx){m, i, from_check, then, arg};
  if (tf_wire_finish(tf_wire_writer_new(&h), &msg, &st) != TF_OK) {
    check_done(c, &st, NULL);
    return;
  }
  tf__ms_send(m, i, msg, timeout_ms, check_done, c);
}

void tf__ms_refresh_task_async(tf_master *m, int i, int64_t timeout_ms,
                               void (*then)(void *), void *arg) {
  send_check(m, i, timeout_ms, false, then, arg);
}

void tf_master_tick(tf_master *m) {
  int64_t now = tf__now_ns(), period = m->spec->heartbeat_ms * 1000000;
  int64_t timeout = m->spec->down_after_ms < m->spec->rpc_timeout_ms
                        ? m->spec->down_after_ms : m->spec->rpc_timeout_ms;
  for (int i = 0; i < m->n_tasks; i++) {
    pthread_mutex_lock(&m->mu);
    ms_task *t = &m->tasks[i];
    bool go = !t->checking && now - t->last_try_ns >= period;
    if (go) {
      t->checking = true;
      t->last_try_ns = now;
    }
    /* A task that never answers (or stopped answering) is down once the
     * period has passed, even while its check is still in flight. */
    int64_t last_ok = t->last_ok_ns;
    bool went_down = t->up && now - last_ok > m->spec->down_after_ms * 1000000;
    if (went_down) t->up = false;
    pthread_mutex_unlock(&m->mu);
    if (went_down) {
      char why[256];
      snprintf(why, sizeof why, "%s is down: no answer for %.1f s", t->prefix,
               (double)(now - last_ok) / 1e9);
      tf_log(LOG_ERR, "%s", why);
      tf__ms_abort_steps(m, i, 0, TF_UNAVAILABLE, why);
    }
    if (go) send_check(m, i, timeout > 0 ? timeout : 1000, true, NULL, NULL);
  }
  tf__ms_expire_sessions(m);
}

bool tf__ms_task_up(tf_master *m, int i, uint64_t *incarnation) {
  pthread_mutex_lock(&m->mu);
  bool up = m->tasks[i].up;
  if (incarnation) *incarnation = m->tasks[i].incarnation;
  pthread_mutex_unlock(&m->mu);
  return up;
}

tf_code tf__ms_task_down(tf_master *m, int i, tf_status *st) {
  pthread_mutex_lock(&m->mu);
  tf_status_set(st, TF_UNAVAILABLE, "%s is down (%.600s); the step needs it",
                m->tasks[i].prefix,
                m->tasks[i].error != NULL ? m->tasks[i].error : "no answer yet");
  pthread_mutex_unlock(&m->mu);
  return st->code;
}

void tf__ms_wait_known(tf_master *m, int64_t timeout_ms) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  int64_t timeout = m->spec->down_after_ms < m->spec->rpc_timeout_ms
                        ? m->spec->down_after_ms : m->spec->rpc_timeout_ms;
  for (;;) {
    int unknown = 0;
    for (int i = 0; i < m->n_tasks; i++) {
      pthread_mutex_lock(&m->mu);
      ms_task *t = &m->tasks[i];
      bool known = t->known, go = !known && !t->checking;
      if (go) {
        t->checking = true;
        t->last_try_ns = tf__now_ns();
      }
      pthread_mutex_unlock(&m->mu);
      unknown += !known;
      if (go) send_check(m, i, timeout > 0 ? timeout : 1000, true, NULL, NULL);
    }
    if (unknown == 0 || tf__now_ns() >= deadline) return;
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
}

/* ---- ListDevices, ClusterStatus, Reset ------------------------------------ */

static nng_msg *list_devices(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_device *ds = tf__xcalloc((size_t)m->n_tasks + 1, sizeof *ds);
  tf_msg_list_devices_reply b = {.devices = ds};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  pthread_mutex_lock(&m->mu); /* the strings are borrowed until encoded */
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    if (t->up) {
      ds[b.n_devices++] = (tf_msg_device){t->device, "CPU", t->incarnation,
                                          t->prefix, t->url};
    }
  }
  tf_msg_list_devices_reply_encode(wr, &b);
  pthread_mutex_unlock(&m->mu);
  free(ds);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

static nng_msg *cluster_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  char **jobs = tf__ms_jobs_by_task(m); /* before mu: jobs_mu comes first */
  int64_t now = tf__now_ns();
  tf_msg_task_status *ts = tf__xcalloc((size_t)m->n_tasks + 1, sizeof *ts);
  /* The master itself first: it answers, so it is up. */
  ts[0] = (tf_msg_task_status){.job = "master", .task = 0, .url = m->url, .up = true,
                               .incarnation = m->incarnation, .error = ""};
  tf_msg_cluster_status_reply b = {.n_tasks = m->n_tasks + 1, .tasks = ts};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  pthread_mutex_lock(&m->mu); /* the strings are borrowed until encoded */
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    ts[i + 1] = (tf_msg_task_status){
        .job = t->job, .task = t->task, .url = t->url, .up = t->up,
        .incarnation = t->incarnation, .n_devices = t->ever_up ? 1 : 0,
        .devices = (const char **)&t->device,
        .last_ok_ms = t->last_ok_ns ? (now - t->last_ok_ns) / 1000000 : -1,
        .error = t->error ? t->error : "", .jobs = jobs[i]};
  }
  tf_msg_cluster_status_reply_encode(wr, &b);
  pthread_mutex_unlock(&m->mu);
  for (int i = 0; i < m->n_tasks; i++) {
    free(jobs[i]);
  }
  free(jobs);
  free(ts);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* Reset: WorkerReset on every task, which drops the named containers; the
 * last answer replies (the first error, naming its task). */
#define RESET_DRAINING_MS 1000
typedef struct reset_ctx {
  tf_master *m;
  struct tf_rpc_call *call;
  pthread_mutex_t mu;
  int pending;
  tf_status err;
} reset_ctx;

typedef struct reset_call {
  reset_ctx *r;
  int task;
} reset_call;

static void reset_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  reset_call *c = arg;
  reset_ctx *r = c->r;
  tf_wire_msg_free(reply);
  pthread_mutex_lock(&r->mu);
  if (st->code != TF_OK && r->err.code == TF_OK) {
    tf_status_set(&r->err, st->code, "Reset on %s: %s", r->m->tasks[c->task].prefix,
                  st->msg);
  }
  bool last = --r->pending == 0;
  pthread_mutex_unlock(&r->mu);
  free(c);
  if (!last) return;
  if (r->err.code != TF_OK) {
    tf_rpc_reply_error(r->call, &r->err);
  } else {
    nng_msg *msg = NULL;
    tf_status st2;
    tf_status_init(&st2);
    if (tf_wire_finish(tf_rpc_reply_writer(r->call), &msg, &st2) == TF_OK) {
      tf_rpc_reply(r->call, msg);
    } else {
      tf_rpc_reply_error(r->call, &st2);
    }
  }
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static void reset(tf_master *m, struct tf_rpc_call *call) {
  tf_msg_reset_req rq;
  tf_status st;
  tf_status_init(&st);
  if (tf_msg_reset_req_decode(tf_rpc_call_request(call), &rq, &st) != TF_OK) {
    tf_rpc_reply_error(call, &st);
    return;
  }
  tf_msg_worker_reset_req b = {.n_containers = rq.n_containers,
                               .containers = rq.containers};
  reset_ctx *r = tf__xcalloc(1, sizeof *r);
  r->m = m;
  r->call = call;
  pthread_mutex_init(&r->mu, NULL);
  tf_status_init(&r->err);
  r->pending = m->n_tasks + 1; /* the sender's own, dropped last */
  /* A stopping master waits little for each task: one that stopped first
   * would hold the reply (and the master's stop) for the whole rpc_ms. */
  pthread_mutex_lock(&m->jobs_mu);
  bool stopping = m->draining_jobs; /* set first when the master stops */
  pthread_mutex_unlock(&m->jobs_mu);
  int64_t ms = stopping && m->spec->rpc_timeout_ms > RESET_DRAINING_MS ? RESET_DRAINING_MS
                                                                       : m->spec->rpc_timeout_ms;
  for (int i = 0; i < m->n_tasks; i++) {
    tf_wire_header h = tf__ms_header(m, i, TF_M_WORKER_RESET, 0, 0, ms);
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    tf_msg_worker_reset_req_encode(wr, &b);
    nng_msg *msg = NULL;
    reset_call *c = tf__xcalloc(1, sizeof *c);
    *c = (reset_call){r, i};
    if (tf_wire_finish(wr, &msg, &st) != TF_OK) {
      reset_done(c, &st, NULL);
    } else if (!tf__ms_task_up(m, i, NULL)) {
      /* Not waited for: a task that is down answers nothing until the
       * deadline, and one that restarts comes back without the containers. */
      nng_msg_free(msg);
      tf_status_set(&st, TF_UNAVAILABLE, "the task is down (not reset)");
      reset_done(c, &st, NULL);
      tf_status_init(&st);
    } else {
      tf__ms_send(m, i, msg, ms, reset_done, c);
    }
  }
  tf_msg_reset_req_fini(&rq);
  tf_status_init(&st);
  reset_call *self = tf__xcalloc(1, sizeof *self);
  *self = (reset_call){r, 0};
  reset_done(self, &st, NULL);
}

/* GetStatus on the master: who it is (it has no devices of its own), its
 * sessions, steps in flight and steps finished, the process's traffic and
 * its CPU allocator's memory (constant folding and fed tensors). */
static nng_msg *master_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  pthread_mutex_lock(&m->mu);
  int sessions = m->n_sessions, running = m->n_steps;
  uint64_t run = m->counters.steps_ok + m->counters.steps_failed;
  pthread_mutex_unlock(&m->mu);
  tf_msg_get_status_reply b = {.job = "master", .task = 0,
                               .incarnation = m->incarnation,
                               .has = TF_MSG_STATUS_MASTER | TF_MSG_STATUS_STEPS_RUN,
                               .sessions = sessions, .running_steps = running,
                               .steps_run = run};
  tf_allocator *cpu = tf_cpu_allocator();
  tf__status_usage(&b, &cpu, 1);
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_get_status_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* The methods answered before the handler returns (none waits for a task
 * except CreateSession's bounded wait for the first health round and a
 * JobControl checkpoint's bounded wait for its job, master_ckpt.c). */
static nng_msg *handle_now(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  switch (req->h.method) {
    case TF_M_GET_STATUS: return master_status(m, req, st);
    case TF_M_CREATE_SESSION: return tf__ms_create_session(m, req, st);
    case TF_M_EXTEND_SESSION: return tf__ms_extend_session(m, req, st);
    case TF_M_CLOSE_SESSION: return tf__ms_close_session(m, req, st);
    case TF_M_KEEP_ALIVE: return tf__ms_keep_alive(m, req, st);
    case TF_M_LIST_DEVICES: return list_devices(m, req, st);
    case TF_M_CLUSTER_STATUS: return cluster_status(m, req, st);
    case TF_M_SUBMIT_JOB: return tf__ms_submit_job(m, req, st);
    case TF_M_LIST_JOBS: return tf__ms_list_jobs(m, req, st);
    case TF_M_JOB_STATUS: return tf__ms_job_status(m, req, st);
    case TF_M_JOB_CONTROL: return tf__ms_job_control(m, req, st);
    case TF_M_JOB_LOGS: return tf__ms_job_logs(m, req, st);
    case TF_M_JOB_CHECKPOINTS: return tf__ms_job_checkpoints(m, req, st);
    default:
      tf_status_set(st, TF_UNIMPLEMENTED, "master: method %d (%s) is not a "
                    "master method", req->h.method, tf_method_name(req->h.method));
      return NULL;
  }
}

static void handle(void *arg, struct tf_rpc_call *call) {
  tf_master *m = arg;
  const tf_wire_msg *req = tf_rpc_call_request(call);
  if (tf_log_level() >= LOG_DEBUG) {
    tf_log(LOG_DEBUG, "%s from %s (session %016" PRIx64 ", step %" PRIu64 ")",
           tf_method_name(req->h.method),
           req->h.from != NULL && req->h.from[0] != '\0' ? req->h.from : "a client",
           req->h.session, req->h.step_id);
  }
  if (req->h.method == TF_M_RUN_STEP) {
    tf__ms_run_step(m, call);
    return;
  }
  if (req->h.method == TF_M_RESET) {
    reset(m, call);
    return;
  }
  tf_status st;
  tf_status_init(&st);
  nng_msg *reply = handle_now(m, req, &st);
  if (reply != NULL) {
    tf_rpc_reply(call, reply);
  } else {
    if (st.code == TF_OK) {
      tf_status_set(&st, TF_INTERNAL, "the %s handler returned no reply",
                    tf_method_name(req->h.method));
    }
    tf_rpc_reply_error(call, &st);
  }
}

/* ---- lifecycle ------------------------------------------------------------ */

static tf_code add_tasks(tf_master *m, tf_status *st) {
  const tf_cluster_spec *s = m->spec;
  for (int j = 0; j < s->n_jobs; j++) {
    if (strcmp(s->jobs[j].name, "master") == 0) continue;
    for (int k = 0; k < s->jobs[j].n_tasks; k++) {
      m->tasks = tf__xrealloc(m->tasks, (size_t)(m->n_tasks + 1) * sizeof *m->tasks);
      ms_task *t = &m->tasks[m->n_tasks++];
      memset(t, 0, sizeof *t);
      t->job = tf__xstrdup(s->jobs[j].name);
      t->task = k;
      t->prefix = tf__xasprintf("/job:%s/replica:0/task:%d", t->job, k);
      t->device = tf__xasprintf("%s/device:CPU:0", t->prefix);
      t->url = tf_cluster_task_url(s, t->job, k);
      /* A wrong task at the address fails every call loudly. */
      tf_rpc_client_options co = {.url = t->url, .max_msg_bytes = s->max_message_bytes,
                                  .expect_task = t->prefix};
      TF_TRY(tf_rpc_client_open(&co, &t->client, st));
    }
  }
  return TF_OK;
}

static void server_log(void *arg, int prio, const char *msg) {
  tf_log(prio, "%s", msg);
}

/* RunStep never blocks (a signature not seen before is built on
 * m->build_q): it is served on the NNG thread that received it. */
static bool runs_inline(void *arg, int method) { return method == TF_M_RUN_STEP; }

/* Serves the master's address: handler_threads = threads.rpc; calls in
 * progress: a session's control calls (max_sessions) plus the steps
 * (max_steps) plus 64 for status, health and refused requests -- a RunStep
 * beyond max_steps still needs a context to be refused. */
static tf_code serve(tf_master *m, tf_status *st) {
  const tf_cluster_spec *s = m->spec;
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, m->url);
  o.handler_threads = s->rpc_threads;
  o.max_msg_bytes = s->max_message_bytes;
  int64_t calls = (int64_t)s->max_sessions + s->max_steps + 64;
  o.max_calls = calls > 65536 ? 65536 : (int)calls;
  o.max_connections = s->max_connections;
  o.idle_connection_ms = s->idle_connection_ms;
  o.self_task = TF_MSG_MASTER_TASK;
  o.self_incarnation = m->incarnation;
  o.log = server_log;
  o.runs_inline = runs_inline;
  o.auth_master = true;
  return tf_rpc_server_start(&o, handle, m, &m->srv, st);
}

tf_code tf_master_start(const tf_cluster_spec *spec, tf_master **out,
                        tf_status *st) {
  *out = NULL;
  const tf_cluster_job *mj = tf_cluster_spec_job(spec, "master");
  if (mj == NULL || mj->n_tasks != 1) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "%s: the cluster needs a "
                         "job 'master' with exactly one task", spec->path);
  }
  tf_master *m = tf__xcalloc(1, sizeof *m);
  m->spec = spec;
  m->url = tf_cluster_task_url(spec, "master", 0);
  m->incarnation = tf__random_u64();
  m->costs = tf_cost_model_new();
  m->build_q = tf_workq_new(2, "tfm-build");
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->jobs_mu, NULL);
  pthread_cond_init(&m->idle_cv, NULL);
  pthread_cond_init(&m->inflight_cv, NULL);
  pthread_cond_init(&m->timer_cv, NULL);
  tf__strmap_init(&m->sessions);
  tf__step_metrics_init(&m->step_metrics, "master");
  tf_code rc = add_tasks(m, st);
  if (rc == TF_OK) {
    tf__ms_timer_start(m);
    rc = serve(m, st);
  }
  if (rc != TF_OK) {
    tf_status_prefix(st, "master");
    tf_master_free(m);
    return rc;
  }
  tf_master_tick(m); /* the first health round, at once */
  tf_log(LOG_INFO, "master serving on %s for %d task(s) of %s", m->url,
         m->n_tasks, spec->path);
  tf__ms_registry_reload(m);
  m->collector = tf__ms_metrics_start(m);
  *out = m;
  return TF_OK;
}

void tf_master_drain(tf_master *m, int64_t timeout_ms) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  tf__ms_jobs_stop(m, timeout_ms);
  pthread_mutex_lock(&m->mu);
  m->draining = true;
  int left = m->n_steps;
  tf_log(LOG_NOTICE, "draining: refusing new sessions and steps; %d step(s) in "
         "flight, waiting up to %" PRId64 " ms", left, timeout_ms);
  while (m->n_steps > 0 && tf__now_ns() < deadline) {
    int64_t ms = (deadline - tf__now_ns()) / 1000000;
    tf__cond_wait_ms(&m->idle_cv, &m->mu, ms < 1 ? 1 : ms > 50 ? 50 : ms);
  }
  left = m->n_steps;
  pthread_mutex_unlock(&m->mu);
  if (left > 0) {
    char why[200];
    snprintf(why, sizeof why, "the master at %s is shutting down: the step was "
             "aborted after the drain time of %" PRId64 " ms", m->url, timeout_ms);
    tf_log(LOG_WARNING, "drain: aborting %d step(s) still in flight after %" PRId64
           " ms", left, timeout_ms);
    tf__ms_abort_steps(m, -1, 0, TF_UNAVAILABLE, why);
  }
}

static void session_free(void *v) { tf__ms_session_destroy(v); }

/* Waits until no call to a task is in flight or being sent. Every such
 * call ends (its timeout, or UNAVAILABLE once the clients are closed), so
 * this needs no timeout of its own; it logs while it waits. */
static void wait_calls(tf_master *m, bool senders_only) {
  int64_t t0 = tf__now_ns(), next_log = 5;
  pthread_mutex_lock(&m->mu);
  while (m->senders > 0 || (!senders_only && m->inflight > 0)) {
    tf__cond_wait_ms(&m->inflight_cv, &m->mu, 100);
    if (tf__now_ns() - t0 > next_log * 1000000000) {
      tf_log(LOG_WARNING, "stopping: still waiting for %d call(s) to tasks",
             m->inflight);
      next_log *= 2;
    }
  }
  pthread_mutex_unlock(&m->mu);
}

void tf_master_free(tf_master *m) {
  if (m == NULL) return;
  tf_metrics_remove_collector(tf_metrics_global(), m->collector);
  pthread_mutex_lock(&m->mu);
  m->draining = true;
  pthread_mutex_unlock(&m->mu);
  /* Steps in flight answer UNAVAILABLE (their calls are finished): a job
   * or input pipeline blocked in one (on a task that stopped first) then
   * ends, and no new step starts. */
  char why[160];
  snprintf(why, sizeof why, "the master at %s is stopping", m->url);
  tf__ms_abort_steps(m, -1, 0, TF_UNAVAILABLE, why);
  if (m->srv != NULL) {
    tf__ms_jobs_free(m); /* their threads call this master */
  }
  tf__ms_abort_steps(m, -1, 0, TF_UNAVAILABLE, why);
  /* Then the server stops: no handler runs after this. */
  tf_rpc_server_stop(m->srv);
  m->srv = NULL;
  tf_workq_free(m->build_q); /* queued builds run (their steps are over) */
  m->build_q = NULL;
  tf__ms_timer_stop(m);
  /* No new calls to tasks; those in flight fail once the clients close,
   * and their callbacks touch m: wait for every one of them. */
  pthread_mutex_lock(&m->mu);
  m->stopping = true;
  pthread_mutex_unlock(&m->mu);
  wait_calls(m, true);
  for (int i = 0; i < m->n_tasks; i++) {
    tf_rpc_client_free(m->tasks[i].client);
    m->tasks[i].client = NULL;
  }
  wait_calls(m, false);
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    free(t->job);
    free(t->prefix);
    free(t->device);
    free(t->url);
    free(t->error);
  }
  free(m->tasks);
  tf__strmap_each(&m->sessions, session_free);
  tf__strmap_fini(&m->sessions);
  tf_cost_model_free(m->costs);
  free(m->steps);
  free(m->url);
  pthread_mutex_destroy(&m->mu);
  pthread_mutex_destroy(&m->jobs_mu);
  pthread_cond_destroy(&m->idle_cv);
  pthread_cond_destroy(&m->inflight_cv);
  pthread_cond_destroy(&m->timer_cv);
  free(m);
}

int tf_master_num_sessions(tf_master *m) {
  pthread_mutex_lock(&m->mu);
  int n = m->n_sessions;
  pthread_mutex_unlock(&m->mu);
  return n;
}
