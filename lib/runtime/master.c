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

/* ---- health --------------------------------------------------------------- */

typedef struct check_ctx {
  tf_master *m;
  int task;
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
    int64_t since = t->last_ok_ns ? t->last_ok_ns : 0;
    if (t->up && now - since > m->spec->down_after_ms * 1000000) {
      t->up = false;
      went_down = true;
      snprintf(why, sizeof why, "%s is down: no answer for %.1f s (%s)", t->prefix,
               (double)(now - t->last_ok_ns) / 1e9, t->error);
    }
  }
  pthread_mutex_unlock(&m->mu);
  if (went_down) {
    tf_log(LOG_ERR, "%s", why);
    tf__ms_abort_steps_on(m, i, why);
  }
}

static void check_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  check_ctx *c = arg;
  note_status(c->m, c->task, st, reply, true);
  tf_wire_msg_free(reply);
  free(c);
}

static void send_check(tf_master *m, int i, int64_t timeout_ms) {
  tf_wire_header h = tf__ms_header(m, i, TF_M_GET_STATUS, 0, 0, timeout_ms);
  nng_msg *msg = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_wire_finish(tf_wire_writer_new(&h), &msg, &st) != TF_OK) {
    note_status(m, i, &st, NULL, true);
    return;
  }
  check_ctx *c = tf__xcalloc(1, sizeof *c);
  c->m = m;
  c->task = i;
  tf_rpc_call_async(m->tasks[i].client, msg, timeout_ms, check_done, c);
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
    bool went_down = t->up && now - t->last_ok_ns > m->spec->down_after_ms * 1000000;
    if (went_down) t->up = false;
    pthread_mutex_unlock(&m->mu);
    if (went_down) {
      char why[256];
      snprintf(why, sizeof why, "%s is down: no answer for %.1f s", t->prefix,
               (double)(now - t->last_ok_ns) / 1e9);
      tf_log(LOG_ERR, "%s", why);
      tf__ms_abort_steps_on(m, i, why);
    }
    if (go) send_check(m, i, timeout > 0 ? timeout : 1000);
  }
}

bool tf__ms_task_up(tf_master *m, int i, uint64_t *incarnation) {
  pthread_mutex_lock(&m->mu);
  bool up = m->tasks[i].up;
  if (incarnation) *incarnation = m->tasks[i].incarnation;
  pthread_mutex_unlock(&m->mu);
  return up;
}

void tf__ms_refresh_task(tf_master *m, int i, int64_t timeout_ms) {
  tf_wire_header h = tf__ms_header(m, i, TF_M_GET_STATUS, 0, 0, timeout_ms);
  nng_msg *msg = NULL;
  tf_wire_msg *reply = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_wire_finish(tf_wire_writer_new(&h), &msg, &st) == TF_OK) {
    tf_rpc_call(m->tasks[i].client, msg, timeout_ms, &reply, &st);
  }
  note_status(m, i, &st, reply, false);
  tf_wire_msg_free(reply);
}

/* One synchronous GetStatus round over the tasks not yet up. */
static int check_missing(tf_master *m, int64_t timeout_ms) {
  int missing = 0;
  for (int i = 0; i < m->n_tasks; i++) {
    if (tf__ms_task_up(m, i, NULL)) continue;
    tf__ms_refresh_task(m, i, timeout_ms);
    missing += !tf__ms_task_up(m, i, NULL);
  }
  return missing;
}

tf_code tf__ms_wait_tasks(tf_master *m, int64_t timeout_ms, tf_status *st) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  for (;;) {
    int64_t left = (deadline - tf__now_ns()) / 1000000;
    int64_t each = left < 500 ? (left > 10 ? left : 10) : 500;
    if (check_missing(m, each) == 0) return TF_OK;
    if (tf__now_ns() >= deadline) break;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  char names[2048] = "";
  size_t len = 0;
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    if (t->up || len >= sizeof names - 1) continue;
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s (%s: %s)",
                            len ? ", " : "", t->prefix, t->url,
                            t->error ? t->error : "no answer");
  }
  pthread_mutex_unlock(&m->mu);
  return tf_status_set(st, TF_UNAVAILABLE, "tasks of %s did not answer within "
                       "the registration timeout of %" PRId64 " ms: %s",
                       m->spec->path, timeout_ms, names);
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
        .error = t->error ? t->error : ""};
  }
  tf_msg_cluster_status_reply_encode(wr, &b);
  pthread_mutex_unlock(&m->mu);
  free(ts);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* Reset: WorkerReset on every task, which drops the named containers. */
static nng_msg *reset(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_reset_req rq;
  if (tf_msg_reset_req_decode(req, &rq, st) != TF_OK) return NULL;
  tf_msg_worker_reset_req b = {.n_containers = rq.n_containers,
                               .containers = rq.containers};
  tf_code rc = TF_OK;
  for (int i = 0; i < m->n_tasks && rc == TF_OK; i++) {
    tf_wire_header h = tf__ms_header(m, i, TF_M_WORKER_RESET, 0, 0, m->spec->rpc_timeout_ms);
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    tf_msg_worker_reset_req_encode(wr, &b);
    nng_msg *msg = NULL;
    tf_wire_msg *reply = NULL;
    rc = tf_wire_finish(wr, &msg, st);
    if (rc == TF_OK) {
      rc = tf_rpc_call(m->tasks[i].client, msg, m->spec->rpc_timeout_ms, &reply, st);
    }
    if (rc != TF_OK) tf_status_prefix(st, "Reset on %s", m->tasks[i].prefix);
    tf_wire_msg_free(reply);
  }
  tf_msg_reset_req_fini(&rq);
  return rc == TF_OK ? tf__ms_empty_reply(m, req, st) : NULL;
}

/* GetStatus on the master: who it is (it has no devices of its own). */
static nng_msg *master_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  int sessions = tf_master_num_sessions(m);
  pthread_mutex_lock(&m->mu);
  int running = m->n_steps;
  pthread_mutex_unlock(&m->mu);
  tf_msg_get_status_reply b = {.job = "master", .task = 0,
                               .incarnation = m->incarnation,
                               .has = TF_MSG_STATUS_MASTER, .sessions = sessions,
                               .running_steps = running};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_get_status_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

static nng_msg *handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  tf_master *m = arg;
  switch (req->h.method) {
    case TF_M_GET_STATUS: return master_status(m, req, st);
    case TF_M_CREATE_SESSION: return tf__ms_create_session(m, req, st);
    case TF_M_EXTEND_SESSION: return tf__ms_extend_session(m, req, st);
    case TF_M_RUN_STEP: return tf__ms_run_step(m, req, st);
    case TF_M_CLOSE_SESSION: return tf__ms_close_session(m, req, st);
    case TF_M_LIST_DEVICES: return list_devices(m, req, st);
    case TF_M_RESET: return reset(m, req, st);
    case TF_M_CLUSTER_STATUS: return cluster_status(m, req, st);
    default:
      tf_status_set(st, TF_UNIMPLEMENTED, "master: method %d (%s) is not a "
                    "master method", req->h.method, tf_method_name(req->h.method));
      return NULL;
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
      TF_TRY(tf_rpc_client_new(t->url, s->max_message_bytes, &t->client, st));
    }
  }
  return TF_OK;
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
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->idle_cv, NULL);
  tf__strmap_init(&m->sessions);
  tf_code rc = add_tasks(m, st);
  if (rc == TF_OK) {
    rc = tf_rpc_server_start_sync(m->url, spec->rpc_threads, spec->max_message_bytes,
                             handle, m, &m->srv, st);
  }
  if (rc != TF_OK) {
    tf_status_prefix(st, "master");
    tf_master_free(m);
    return rc;
  }
  tf_log(LOG_INFO, "master serving on %s for %d task(s) of %s", m->url,
         m->n_tasks, spec->path);
  *out = m;
  return TF_OK;
}

void tf_master_drain(tf_master *m, int64_t timeout_ms) {
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  pthread_mutex_lock(&m->mu);
  m->draining = true;
  while (m->n_steps > 0 && tf__now_ns() < deadline) {
    tf__cond_wait_ms(&m->idle_cv, &m->mu, 50);
  }
  pthread_mutex_unlock(&m->mu);
}

static void session_free(void *v) { tf__ms_session_destroy(v); }

void tf_master_free(tf_master *m) {
  if (m == NULL) return;
  tf_rpc_server_stop(m->srv);
  /* Closing a client fails its calls in flight; their callbacks (health
   * checks) touch m, so wait for them before freeing anything. */
  for (int i = 0; i < m->n_tasks; i++) {
    tf_rpc_client_free(m->tasks[i].client);
    m->tasks[i].client = NULL;
  }
  for (int spins = 0; spins < 1000; spins++) {
    bool busy = false;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n_tasks; i++) busy |= m->tasks[i].checking;
    pthread_mutex_unlock(&m->mu);
    if (!busy) break;
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
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
  pthread_cond_destroy(&m->idle_cv);
  free(m);
}

int tf_master_num_sessions(tf_master *m) {
  pthread_mutex_lock(&m->mu);
  int n = m->n_sessions;
  pthread_mutex_unlock(&m->mu);
  return n;
}
