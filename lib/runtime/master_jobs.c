/* master_jobs.c: the master's job table and the job methods (SubmitJob,
 * ListJobs, JobStatus, JobControl, JobLogs; docs/wire.md). A submitted
 * spec is parsed here, checked against the cluster and started as a job
 * (job_run.h) whose thread drives its steps through this master. At most
 * TF_MS_JOBS_ACTIVE jobs are queued, running or paused at once; of the
 * finished ones the newest are kept, up to TF_MS_JOBS_KEPT in all. A job
 * is found under jobs_mu; a handler that uses it after releasing jobs_mu
 * holds it (tf_job_hold), and the table never drops a held job. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_access.h"
#include "lib/runtime/job_run.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"

/* The devices of the cluster's tasks of job `name`, in task order. */
static int job_devices(tf_master *m, const char *name, const char **out, int cap) {
  int n = 0;
  for (int i = 0; i < m->n_tasks; i++) {
    const ms_task *t = &m->tasks[i];
    if (strcmp(t->job, name) == 0 && t->task < cap) {
      out[t->task] = t->device;
      n = t->task + 1 > n ? t->task + 1 : n;
    }
  }
  return n;
}

static tf_job *find(tf_master *m, const char *id) {
  for (int i = 0; i < m->n_jobs; i++) {
    if (strcmp(tf_job_id(m->jobs[i]), id) == 0) {
      return m->jobs[i];
    }
  }
  return NULL;
}

/* Makes room for a new job (under jobs_mu): RESOURCE_EXHAUSTED when too
 * many are active; drops the oldest finished one that no request holds
 * when the table is full. */
static tf_code make_room(tf_master *m, tf_job **dropped, tf_status *st) {
  int active = 0, oldest_final = -1;
  for (int i = 0; i < m->n_jobs; i++) {
    tf_job_info info;
    tf_job_info_get(m->jobs[i], &info);
    if (!tf_job_state_final(info.state)) {
      active++;
    } else if (oldest_final < 0 && !tf_job_held(m->jobs[i])) {
      oldest_final = i;
    }
  }
  if (active >= TF_MS_JOBS_ACTIVE) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%d jobs are active on "
                         "the master, the most it runs at once; cancel one or "
                         "wait", active);
  }
  if (m->n_jobs == TF_MS_JOBS_KEPT && oldest_final < 0) {
    return tf_status_set(st, TF_UNAVAILABLE, "the master's table of %d jobs is "
                         "full and requests are using its finished jobs; retry",
                         TF_MS_JOBS_KEPT);
  }
  *dropped = NULL;
  if (m->n_jobs == TF_MS_JOBS_KEPT) {
    *dropped = m->jobs[oldest_final];
    memmove(&m->jobs[oldest_final], &m->jobs[oldest_final + 1],
            (size_t)(m->n_jobs - oldest_final - 1) * sizeof *m->jobs);
    m->n_jobs--;
  }
  return TF_OK;
}

/* job_run.h's health: the incarnation of the task of device dev while
 * the heartbeats see it up, else 0. */
static uint64_t task_incarnation(void *arg, const char *dev) {
  tf_master *m = arg;
  for (int i = 0; i < m->n_tasks; i++) {
    if (strcmp(m->tasks[i].device, dev) == 0) {
      uint64_t inc = 0;
      return tf__ms_task_up(m, i, &inc) ? inc : 0;
    }
  }
  return 0;
}

static void job_ended(void *arg, const char *id, bool resumable) {
  if (!resumable) {
    tf__ms_registry_remove(arg, id);
  }
}

tf_code tf__ms_start_job(tf_master *m, tf_job_spec *spec, const char *id,
                         uint64_t seq, char *out_id, size_t n, tf_status *st) {
  const char *workers[TF_JOB_WORKERS_MAX], *ps[TF_JOB_PS_MAX];
  tf_job_cluster c = {.master_url = m->url,
                      .n_workers = job_devices(m, "worker", workers, TF_JOB_WORKERS_MAX),
                      .worker_devices = workers,
                      .n_ps = job_devices(m, "ps", ps, TF_JOB_PS_MAX),
                      .ps_devices = ps,
                      .rpc_timeout_ms = m->spec->rpc_timeout_ms,
                      .health = {.incarnation = task_incarnation, .arg = m},
                      .on_end = job_ended,
                      .cb_arg = m};
  tf_job *dropped = NULL, *j = NULL;
  char own[TF_JOB_ID_MAX + 1];
  pthread_mutex_lock(&m->jobs_mu);
  tf_code code = m->draining_jobs
                     ? tf_status_set(st, TF_UNAVAILABLE, "the master at %s is "
                                     "shutting down", m->url)
                     : make_room(m, &dropped, st);
  if (code == TF_OK && id != NULL && find(m, id) != NULL) {
    code = tf_status_set(st, TF_ALREADY_EXISTS, "job %s exists", id);
  }
  if (code == TF_OK) {
    if (id == NULL) {
      snprintf(own, sizeof own, "%s-%" PRIu64, spec->name, ++m->job_seq);
      id = own;
    } else if (seq > m->job_seq) {
      m->job_seq = seq;
    }
    tf__ms_registry_add(m, id, spec);
    code = tf_job_start(spec, id, &c, &j, st);
    spec = NULL;
    if (code != TF_OK) {
      tf__ms_registry_remove(m, id);
    }
  }
  if (code == TF_OK) {
    m->jobs[m->n_jobs++] = j;
    snprintf(out_id, n, "%s", id);
  }
  pthread_mutex_unlock(&m->jobs_mu);
  tf_job_spec_free(spec);
  tf_job_free(dropped);
  return code;
}

nng_msg *tf__ms_submit_job(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_submit_job_req r;
  if (tf_msg_submit_job_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  tf_job_spec *spec = NULL;
  char id[TF_JOB_ID_MAX + 1];
  nng_msg *msg = NULL;
  if (tf_job_spec_parse(r.spec, r.spec_len, r.name[0] ? r.name : "job.yaml",
                        &spec, st) == TF_OK &&
      tf__job_access_check(m->spec, spec, st) != TF_OK) {
    tf_job_spec_free(spec); /* refused before it is the master's */
    spec = NULL;
  }
  if (spec != NULL &&
      tf__ms_start_job(m, spec, NULL, 0, id, sizeof id, st) == TF_OK) {
    tf_log(LOG_INFO, "job %s submitted (%s)", id, r.name);
    tf_wire_writer *wr = tf__ms_reply_writer(m, req);
    tf_msg_submit_job_reply b = {.job = id};
    tf_msg_submit_job_reply_encode(wr, &b);
    tf_wire_finish(wr, &msg, st);
  }
  tf_msg_submit_job_req_fini(&r);
  return msg;
}

/* ---- reports ------------------------------------------------------------------ */

static void to_msg(const tf_job_info *in, tf_msg_job_info *out, tf_msg_metric *mt) {
  *out = (tf_msg_job_info){
      .job = in->id, .name = in->name, .state = tf_job_state_name(in->state),
      .mode = in->sync ? "sync" : "async", .workers = in->workers,
      .step = in->step, .steps = in->steps, .loss = in->loss,
      .steps_per_s = in->steps_per_s, .elapsed_ms = in->elapsed_ms,
      .submitted_ms = in->submitted_ms, .error = in->error,
      .n_metrics = in->n_metrics, .metrics = mt,
      .n_replica_steps = in->n_replicas, .replica_steps = (int64_t *)in->replica_steps,
      .recoveries = in->recoveries, .checkpoint = in->checkpoint,
      .checkpoint_step = in->checkpoint_step, .note = ""};
  for (int i = 0; i < in->n_metrics; i++) {
    mt[i] = (tf_msg_metric){.name = in->metric_names[i], .value = in->metric_values[i]};
  }
}

nng_msg *tf__ms_job_info_reply(tf_master *m, const tf_wire_msg *req, tf_job *j,
                               const char *note, tf_status *st) {
  tf_job_info info;
  tf_msg_metric mt[TF_JOB_INFO_METRICS];
  tf_job_info_get(j, &info);
  tf_msg_job_info_reply b;
  memset(&b, 0, sizeof b);
  to_msg(&info, &b.info, mt);
  b.info.note = note != NULL ? note : "";
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_job_info_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

static nng_msg *info_reply(tf_master *m, const tf_wire_msg *req, tf_job *j,
                           tf_status *st) {
  return tf__ms_job_info_reply(m, req, j, NULL, st);
}

/* The job `id` (under jobs_mu), or NULL with st NOT_FOUND. */
static tf_job *find_or_fail(tf_master *m, const char *id, tf_status *st) {
  tf_job *j = find(m, id);
  if (j == NULL) {
    tf_status_set(st, TF_NOT_FOUND, "no job '%s' (tfctl jobs lists them)", id);
  }
  return j;
}

tf_job *tf__ms_job_find_held(tf_master *m, const char *id, tf_status *st) {
  pthread_mutex_lock(&m->jobs_mu);
  tf_job *j = find_or_fail(m, id, st);
  if (j != NULL) {
    tf_job_hold(j);
  }
  pthread_mutex_unlock(&m->jobs_mu);
  return j;
}

nng_msg *tf__ms_list_jobs(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  pthread_mutex_lock(&m->jobs_mu);
  int n = m->n_jobs;
  tf_job_info *infos = tf__xcalloc((size_t)n + 1, sizeof *infos);
  tf_msg_metric (*mt)[TF_JOB_INFO_METRICS] = tf__xcalloc((size_t)n + 1, sizeof *mt);
  tf_msg_job_info *jobs = tf__xcalloc((size_t)n + 1, sizeof *jobs);
  for (int i = 0; i < n; i++) {
    tf_job_info_get(m->jobs[i], &infos[i]);
    to_msg(&infos[i], &jobs[i], mt[i]);
  }
  pthread_mutex_unlock(&m->jobs_mu);
  tf_msg_list_jobs_reply b;
  memset(&b, 0, sizeof b);
  b.n_jobs = n;
  b.jobs = jobs;
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_list_jobs_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  free(infos);
  free(mt);
  free(jobs);
  return msg;
}

nng_msg *tf__ms_job_status(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_job_status_req r;
  if (tf_msg_job_status_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  pthread_mutex_lock(&m->jobs_mu);
  tf_job *j = find_or_fail(m, r.job, st);
  nng_msg *msg = j ? info_reply(m, req, j, st) : NULL;
  pthread_mutex_unlock(&m->jobs_mu);
  tf_msg_job_status_req_fini(&r);
  return msg;
}

nng_msg *tf__ms_job_control(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_job_control_req r;
  if (tf_msg_job_control_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  if (strcmp(r.action, "checkpoint") == 0 || strcmp(r.action, "restore") == 0) {
    nng_msg *msg = tf__ms_job_ckpt_control(m, req, &r, st); /* without jobs_mu */
    tf_msg_job_control_req_fini(&r);
    return msg;
  }
  pthread_mutex_lock(&m->jobs_mu);
  tf_job *j = find_or_fail(m, r.job, st);
  nng_msg *msg = NULL;
  if (j != NULL && tf_job_control(j, r.action, r.steps, st) == TF_OK) {
    tf_log(LOG_INFO, "job %s: %s", r.job, r.action);
    msg = info_reply(m, req, j, st);
  }
  pthread_mutex_unlock(&m->jobs_mu);
  tf_msg_job_control_req_fini(&r);
  return msg;
}

nng_msg *tf__ms_job_logs(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_job_logs_req r;
  if (tf_msg_job_logs_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  pthread_mutex_lock(&m->jobs_mu);
  tf_job *j = find_or_fail(m, r.job, st);
  nng_msg *msg = NULL;
  if (j != NULL) {
    char **lines = NULL;
    tf_msg_job_logs_reply b;
    memset(&b, 0, sizeof b);
    b.n_lines = tf_job_logs(j, r.from, TF_MSG_MAX_LOG_LINES, &lines, &b.first,
                            &b.next);
    b.lines = (const char **)lines;
    tf_wire_writer *wr = tf__ms_reply_writer(m, req);
    tf_msg_job_logs_reply_encode(wr, &b);
    tf_wire_finish(wr, &msg, st);
    for (int i = 0; i < b.n_lines; i++) {
      free(lines[i]);
    }
    free(lines);
  }
  pthread_mutex_unlock(&m->jobs_mu);
  tf_msg_job_logs_req_fini(&r);
  return msg;
}

char **tf__ms_jobs_by_task(tf_master *m) {
  char **out = tf__xcalloc((size_t)m->n_tasks + 1, sizeof *out);
  pthread_mutex_lock(&m->jobs_mu);
  for (int t = 0; t < m->n_tasks; t++) {
    size_t len = 0, cap = 0;
    for (int i = 0; i < m->n_jobs; i++) {
      tf_job_info info;
      tf_job_info_get(m->jobs[i], &info);
      if (tf_job_state_final(info.state) || !tf_job_uses(m->jobs[i], m->tasks[t].device)) {
        continue;
      }
      char item[TF_JOB_ID_MAX + 32];
      int n = snprintf(item, sizeof item, "%s%s@%" PRId64, len ? " " : "", info.id,
                       info.step);
      if (len + (size_t)n + 1 > cap) {
        cap = 2 * (len + (size_t)n + 1);
        out[t] = tf__xrealloc(out[t], cap);
      }
      memcpy(out[t] + len, item, (size_t)n + 1);
      len += (size_t)n;
    }
  }
  pthread_mutex_unlock(&m->jobs_mu);
  return out;
}

/* ---- lifecycle ---------------------------------------------------------------- */

void tf__ms_jobs_stop(tf_master *m, int64_t timeout_ms) {
  pthread_mutex_lock(&m->jobs_mu);
  m->draining_jobs = true;
  int n = m->n_jobs;
  tf_job **jobs = tf__xcalloc((size_t)n + 1, sizeof *jobs);
  memcpy(jobs, m->jobs, (size_t)n * sizeof *jobs);
  pthread_mutex_unlock(&m->jobs_mu);
  int64_t end = tf__now_ns() + timeout_ms * 1000000;
  for (int i = 0; i < n; i++) {
    tf_job_info info;
    tf_job_info_get(jobs[i], &info);
    tf_job_master_stopping(jobs[i]);
    if (!tf_job_state_final(info.state) && tf_job_checkpoint_dir(jobs[i])) {
      tf_log(LOG_NOTICE, "job %s: checkpointing and suspending (the master is "
             "shutting down)", info.id);
      tf_job_suspend(jobs[i]);
    } else if (!tf_job_state_final(info.state)) {
      /* Nothing can resume it: cancel it now rather than wait out the
       * drain time for a job that will not end by itself. */
      tf_log(LOG_NOTICE, "job %s: stopping (the master is shutting down)", info.id);
      tf_job_stop(jobs[i], 0);
    }
  }
  for (int i = 0; i < n; i++) { /* the suspended ones first */
    int64_t left = (end - tf__now_ns()) / 1000000;
    tf_job_wait(jobs[i], left < 1 ? 1 : left);
  }
  for (int i = 0; i < n; i++) {
    int64_t left = (end - tf__now_ns()) / 1000000;
    tf_job_stop(jobs[i], left < 1 ? 1 : left);
  }
  free(jobs);
}

void tf__ms_jobs_free(tf_master *m) {
  tf__ms_jobs_stop(m, 0);
  /* Emptied under jobs_mu, so that a request arriving now finds no job;
   * tf_job_free waits for those that hold one. */
  pthread_mutex_lock(&m->jobs_mu);
  int n = m->n_jobs;
  tf_job *jobs[TF_MS_JOBS_KEPT];
  memcpy(jobs, m->jobs, (size_t)n * sizeof *jobs);
  m->n_jobs = 0;
  pthread_mutex_unlock(&m->jobs_mu);
  for (int i = 0; i < n; i++) {
    tf_job_free(jobs[i]);
  }
}
