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


nng_msg *tf__ms_empty_reply(const tf_wire_msg *req, tf_status *st) {
  nng_msg *msg = NULL;
  tf_wire_finish(tf_wire_reply_writer(req), &msg, st);
  return msg;
}

tf_wire_header tf__ms_header(int method, uint64_t session, uint64_t step,
                             int64_t deadline_ms) {
  return (tf_wire_header){.version = TF_WIRE_VERSION, .method = method,
                          .request_id = tf_rpc_new_request_id(),
                          .session = session, .step_id = step,
                          .deadline_ms = deadline_ms};
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
  uint64_t inc = 0;
  tf_status pst;
  tf_status_init(&pst);
  bool ok = st->code == TF_OK &&
            tf_wire_get_u64(&reply->body, "incarnation", "GetStatus", &inc, &pst) == TF_OK;
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
  tf_wire_header h = tf__ms_header(TF_M_GET_STATUS, 0, 0, timeout_ms);
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
  tf_wire_header h = tf__ms_header(TF_M_GET_STATUS, 0, 0, timeout_ms);
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
  tf_wire_writer *wr = tf_wire_reply_writer(req);
  msgpack_packer *pk = tf_wire_body(wr);
  pthread_mutex_lock(&m->mu);
  int n = 0;
  for (int i = 0; i < m->n_tasks; i++) n += m->tasks[i].up;
  tf__mp_map top;
  tf__mp_map_begin(&top, pk, 1);
  tf__mp_map_key(&top, "devices");
  msgpack_pack_array(pk, (size_t)n);
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    if (!t->up) continue;
    tf__mp_map d;
    tf__mp_map_begin(&d, pk, 5);
    tf__mp_map_key(&d, "name");
    tf_wire_pack_str(pk, t->device);
    tf__mp_map_key(&d, "type");
    tf_wire_pack_str(pk, "CPU");
    tf__mp_map_key(&d, "incarnation");
    msgpack_pack_uint64(pk, t->incarnation);
    tf__mp_map_key(&d, "task");
    tf_wire_pack_str(pk, t->prefix);
    tf__mp_map_key(&d, "url");
    tf_wire_pack_str(pk, t->url);
    tf__mp_map_end(&d);
  }
  tf__mp_map_end(&top);
  pthread_mutex_unlock(&m->mu);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* One ClusterStatus entry; device NULL: none (the task never answered). */
static void pack_task_status(msgpack_packer *pk, const char *job, int task,
                             const char *url, bool up, uint64_t incarnation,
                             const char *device, int64_t last_ok_ms,
                             const char *error) {
  tf__mp_map e;
  tf__mp_map_begin(&e, pk, 8);
  tf__mp_map_key(&e, "job");
  tf_wire_pack_str(pk, job);
  tf__mp_map_key(&e, "task");
  msgpack_pack_int(pk, task);
  tf__mp_map_key(&e, "url");
  tf_wire_pack_str(pk, url);
  tf__mp_map_key(&e, "up");
  if (up) {
    msgpack_pack_true(pk);
  } else {
    msgpack_pack_false(pk);
  }
  tf__mp_map_key(&e, "incarnation");
  msgpack_pack_uint64(pk, incarnation);
  tf__mp_map_key(&e, "devices");
  msgpack_pack_array(pk, device != NULL ? 1 : 0);
  if (device != NULL) tf_wire_pack_str(pk, device);
  tf__mp_map_key(&e, "last_ok_ms");
  msgpack_pack_int64(pk, last_ok_ms);
  tf__mp_map_key(&e, "error");
  tf_wire_pack_str(pk, error);
  tf__mp_map_end(&e);
}

static nng_msg *cluster_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_wire_writer *wr = tf_wire_reply_writer(req);
  msgpack_packer *pk = tf_wire_body(wr);
  int64_t now = tf__now_ns();
  pthread_mutex_lock(&m->mu);
  tf__mp_map top;
  tf__mp_map_begin(&top, pk, 1);
  tf__mp_map_key(&top, "tasks");
  msgpack_pack_array(pk, (size_t)m->n_tasks + 1);
  /* The master itself first: it answers, so it is up. */
  pack_task_status(pk, "master", 0, m->url, true, m->incarnation, NULL, 0, "");
  for (int i = 0; i < m->n_tasks; i++) {
    ms_task *t = &m->tasks[i];
    pack_task_status(pk, t->job, t->task, t->url, t->up, t->incarnation,
                     t->ever_up ? t->device : NULL,
                     t->last_ok_ns ? (now - t->last_ok_ns) / 1000000 : -1,
                     t->error ? t->error : "");
  }
  tf__mp_map_end(&top);
  pthread_mutex_unlock(&m->mu);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

/* Reset: WorkerReset on every task, which drops the named containers. */
static nng_msg *reset(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  const msgpack_object_array *a = tf_wire_get_array(&req->body, "containers", "Reset", st);
  if (a == NULL) return NULL;
  for (int i = 0; i < m->n_tasks; i++) {
    tf_wire_header h = tf__ms_header(TF_M_WORKER_RESET, 0, 0, m->spec->rpc_timeout_ms);
    tf_wire_writer *wr = tf_wire_writer_new(&h);
    msgpack_packer *pk = tf_wire_body(wr);
    tf__mp_map body;
    tf__mp_map_begin(&body, pk, 1);
    tf__mp_map_key(&body, "containers");
    msgpack_pack_array(pk, a->size);
    for (uint32_t k = 0; k < a->size; k++) {
      char *c = tf_wire_strdup(&a->ptr[k]);
      tf_wire_pack_str(pk, c ? c : "");
      free(c);
    }
    tf__mp_map_end(&body);
    nng_msg *msg = NULL;
    tf_wire_msg *reply = NULL;
    if (tf_wire_finish(wr, &msg, st) != TF_OK ||
        tf_rpc_call(m->tasks[i].client, msg, m->spec->rpc_timeout_ms, &reply, st) != TF_OK) {
      tf_status_prefix(st, "Reset on %s", m->tasks[i].prefix);
      return NULL;
    }
    tf_wire_msg_free(reply);
  }
  return tf__ms_empty_reply(req, st);
}

/* GetStatus on the master: who it is (it has no devices of its own). */
static nng_msg *master_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_wire_writer *wr = tf_wire_reply_writer(req);
  msgpack_packer *pk = tf_wire_body(wr);
  int sessions = tf_master_num_sessions(m);
  pthread_mutex_lock(&m->mu);
  int running = m->n_steps;
  pthread_mutex_unlock(&m->mu);
  tf__mp_map body;
  tf__mp_map_begin(&body, pk, 6);
  tf__mp_map_key(&body, "job");
  tf_wire_pack_str(pk, "master");
  tf__mp_map_key(&body, "task");
  msgpack_pack_int(pk, 0);
  tf__mp_map_key(&body, "incarnation");
  msgpack_pack_uint64(pk, m->incarnation);
  tf__mp_map_key(&body, "devices");
  msgpack_pack_array(pk, 0);
  tf__mp_map_key(&body, "sessions");
  msgpack_pack_int(pk, sessions);
  tf__mp_map_key(&body, "running_steps");
  msgpack_pack_int(pk, running);
  tf__mp_map_end(&body);
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
