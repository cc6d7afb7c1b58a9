/* ctl_client.c: GetStatus, ClusterStatus, ListDevices and the job
 * methods (JobCheckpoints and JobControl's checkpoint and restore
 * included) as blocking calls with deadlines; their replies are decoded by
 * lib/transport's messages (messages.h) and copied into the tf_ctl_*
 * structs tfctl keeps. */
#include "cmd/tfctl/ctl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"
#include "lib/transport/wire.h"

void tf_ctl_task_fini(tf_ctl_task *t) {
  if (t == NULL) {
    return;
  }
  for (int i = 0; i < t->n_devices; i++) {
    free(t->devices[i]);
  }
  free(t->devices);
  free(t->job);
  free(t->url);
  free(t->error);
  free(t->jobs);
  memset(t, 0, sizeof *t);
}

void tf_ctl_tasks_free(tf_ctl_task *ts, int n) {
  for (int i = 0; ts != NULL && i < n; i++) {
    tf_ctl_task_fini(&ts[i]);
  }
  free(ts);
}

void tf_ctl_devices_free(tf_ctl_device *ds, int n) {
  for (int i = 0; ds != NULL && i < n; i++) {
    free(ds[i].name);
    free(ds[i].type);
    free(ds[i].task);
    free(ds[i].url);
  }
  free(ds);
}

/* A request of method from this client (from "") to task `to` (""
 * when the caller does not know which task answers); its body is packed
 * next (nothing packed: nil). */
static tf_wire_writer *request(int method, const char *to, int64_t timeout_ms) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id(),
                      .deadline_ms = timeout_ms, .from = "", .to = to};
  return tf_wire_writer_new(&h);
}

/* Sends the request w (taken) to url; *reply on OK. */
static tf_code call_with(const char *url, tf_wire_writer *w, int64_t timeout_ms,
                         tf_wire_msg **reply, tf_status *st) {
  tf_rpc_client *c = NULL;
  tf_rpc_client_options o = {.url = url, .dial_now = true};
  if (tf_rpc_client_open(&o, &c, st) != TF_OK) {
    tf_wire_writer_free(w);
    return st->code;
  }
  nng_msg *m = NULL;
  tf_code code = tf_wire_finish(w, &m, st);
  if (code == TF_OK) {
    code = tf_rpc_call(c, m, timeout_ms > 0 ? timeout_ms : 1, reply, st);
  }
  tf_rpc_client_free(c);
  return code;
}

/* One call with a nil body from this client (from "") to task `to` (""
 * when the caller does not know which task answers at url); *reply on OK. */
static tf_code call(const char *url, const char *to, int method, int64_t timeout_ms,
                    tf_wire_msg **reply, tf_status *st) {
  return call_with(url, request(method, to, timeout_ms), timeout_ms, reply, st);
}

/* A malloc'd array of copies of names[0..n). */
static char **dup_strs(const char *const *names, int n) {
  char **v = calloc((size_t)n + 1, sizeof *v);
  for (int i = 0; i < n; i++) {
    v[i] = strdup(names[i]);
  }
  return v;
}

/* GetStatus meant for task `to` ("" : whoever answers); from[0..n) gets
 * the reply header's sender ("" when the server leaves it out). */
static tf_code get_status_to(const char *url, const char *to, int64_t timeout_ms,
                             tf_ctl_task *out, char *from, size_t n, tf_status *st) {
  memset(out, 0, sizeof *out);
  out->url = strdup(url);
  out->error = strdup("");
  out->last_ok_ms = -1;
  out->running_steps = -1;
  from[0] = '\0';
  tf_wire_msg *r = NULL;
  if (call(url, to, TF_M_GET_STATUS, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  snprintf(from, n, "%s", r->h.from != NULL ? r->h.from : "");
  tf_msg_get_status_reply b;
  tf_code code = tf_msg_get_status_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code == TF_OK) {
    out->job = strdup(b.job);
    out->task = b.task;
    out->incarnation = b.incarnation;
    out->devices = calloc((size_t)b.n_devices + 1, sizeof *out->devices);
    out->n_devices = b.n_devices;
    for (int i = 0; i < b.n_devices; i++) {
      out->devices[i] = strdup(b.devices[i].name);
    }
    if (b.has & TF_MSG_STATUS_RUNNING_STEPS) out->running_steps = (int)b.running_steps;
    out->has = b.has;
    out->steps_run = b.steps_run;
    out->bytes_sent = b.bytes_sent;
    out->bytes_received = b.bytes_received;
    out->mem_in_use = b.mem_in_use;
    out->mem_peak = b.mem_peak;
  }
  tf_msg_get_status_reply_fini(&b);
  out->up = code == TF_OK;
  out->last_ok_ms = code == TF_OK ? 0 : -1;
  return code;
}

tf_code tf_ctl_get_status(const char *url, int64_t timeout_ms, tf_ctl_task *out,
                          tf_status *st) {
  char from[256];
  return get_status_to(url, "", timeout_ms, out, from, sizeof from, st);
}

tf_code tf_ctl_probe_task(const char *url, const char *job, int task, int64_t timeout_ms,
                          tf_status *st) {
  char want[160], from[256];
  snprintf(want, sizeof want, "/job:%s/replica:0/task:%d", job, task);
  tf_ctl_task t;
  tf_code code = get_status_to(url, want, timeout_ms, &t, from, sizeof from, st);
  if (code == TF_OK && (strcmp(t.job, job) != 0 || t.task != task ||
                        (from[0] != '\0' && strcmp(from, want) != 0))) {
    char is[256];
    if (from[0] != '\0' && strcmp(from, want) != 0) {
      snprintf(is, sizeof is, "%s", from);
    } else {
      snprintf(is, sizeof is, "/job:%.60s/replica:0/task:%d", t.job, t.task);
    }
    code = tf_status_set(st, TF_FAILED_PRECONDITION, "wrong task at address: %s is %s, "
                         "expected %s", url, is, want);
  }
  tf_ctl_task_fini(&t);
  return code;
}

bool tf_ctl_answers(const char *url, int64_t timeout_ms) {
  tf_status st;
  tf_status_init(&st);
  nng_url *u = NULL;
  if (url == NULL || nng_url_parse(&u, url) != 0) return false; /* bad URL */
  nng_url_free(u);
  tf_wire_msg *r = NULL;
  tf_code code = call(url, "", TF_M_GET_STATUS, timeout_ms, &r, &st);
  tf_wire_msg_free(r);
  return code != TF_DEADLINE_EXCEEDED && code != TF_UNAVAILABLE && code != TF_CANCELLED;
}

/* A copy of one ClusterStatus entry. */
static void copy_task(const tf_msg_task_status *t, tf_ctl_task *out) {
  *out = (tf_ctl_task){.job = strdup(t->job), .task = t->task, .url = strdup(t->url),
                       .running_steps = -1,
                       .up = t->up, .incarnation = t->incarnation,
                       .n_devices = t->n_devices,
                       .devices = dup_strs(t->devices, t->n_devices),
                       .last_ok_ms = t->last_ok_ms, .error = strdup(t->error),
                       .jobs = strdup(t->jobs ? t->jobs : "")};
}

tf_code tf_ctl_cluster_status(const char *master_url, int64_t timeout_ms,
                              tf_ctl_task **out, int *n, tf_status *st) {
  *out = NULL;
  *n = 0;
  tf_wire_msg *r = NULL;
  if (call(master_url, TF_MSG_MASTER_TASK, TF_M_CLUSTER_STATUS, timeout_ms, &r,
           st) != TF_OK) {
    return st->code;
  }
  tf_msg_cluster_status_reply b;
  tf_code code = tf_msg_cluster_status_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code != TF_OK) {
    return code;
  }
  /* The master first (added when the reply leaves it out: it answered). */
  tf_ctl_task *ts = calloc((size_t)b.n_tasks + 1, sizeof *ts);
  int k = 1;
  bool has_master = false;
  for (int i = 0; i < b.n_tasks; i++) {
    bool master = !has_master && strcmp(b.tasks[i].job, "master") == 0;
    copy_task(&b.tasks[i], master ? &ts[0] : &ts[k]);
    has_master |= master;
    k += !master;
  }
  tf_msg_cluster_status_reply_fini(&b);
  if (!has_master) {
    ts[0] = (tf_ctl_task){.job = strdup("master"), .task = 0, .url = strdup(master_url),
                          .up = true, .last_ok_ms = 0, .error = strdup("")};
  }
  *out = ts;
  *n = k;
  return TF_OK;
}

tf_code tf_ctl_list_devices(const char *master_url, int64_t timeout_ms,
                            tf_ctl_device **out, int *n, tf_status *st) {
  *out = NULL;
  *n = 0;
  tf_wire_msg *r = NULL;
  if (call(master_url, TF_MSG_MASTER_TASK, TF_M_LIST_DEVICES, timeout_ms, &r,
           st) != TF_OK) {
    return st->code;
  }
  tf_msg_list_devices_reply b;
  tf_code code = tf_msg_list_devices_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code != TF_OK) {
    return code;
  }
  tf_ctl_device *ds = calloc((size_t)b.n_devices + 1, sizeof *ds);
  for (int i = 0; i < b.n_devices; i++) {
    const tf_msg_device *d = &b.devices[i];
    ds[i] = (tf_ctl_device){.name = strdup(d->name), .type = strdup(d->type),
                            .incarnation = d->incarnation, .task = strdup(d->task),
                            .url = strdup(d->url)};
  }
  *out = ds;
  *n = b.n_devices;
  tf_msg_list_devices_reply_fini(&b);
  return TF_OK;
}

/* ---- jobs ------------------------------------------------------------------ */

void tf_ctl_job_fini(tf_ctl_job *j) {
  if (j == NULL) {
    return;
  }
  for (int i = 0; j->metrics != NULL && i < j->n_metrics; i++) {
    free(j->metrics[i].name);
  }
  free(j->metrics);
  free(j->replica_steps);
  free(j->job);
  free(j->name);
  free(j->state);
  free(j->mode);
  free(j->error);
  free(j->checkpoint);
  free(j->note);
  memset(j, 0, sizeof *j);
}

void tf_ctl_jobs_free(tf_ctl_job *js, int n) {
  for (int i = 0; js != NULL && i < n; i++) {
    tf_ctl_job_fini(&js[i]);
  }
  free(js);
}

void tf_ctl_log_fini(tf_ctl_log *l) {
  for (int i = 0; l->lines != NULL && i < l->n_lines; i++) {
    free(l->lines[i]);
  }
  free(l->lines);
  memset(l, 0, sizeof *l);
}

/* A copy of a decoded job. */
static void copy_job(const tf_msg_job_info *j, tf_ctl_job *out) {
  *out = (tf_ctl_job){.job = strdup(j->job), .name = strdup(j->name),
                      .state = strdup(j->state), .mode = strdup(j->mode),
                      .workers = j->workers, .step = j->step, .steps = j->steps,
                      .loss = j->loss, .steps_per_s = j->steps_per_s,
                      .elapsed_ms = j->elapsed_ms, .submitted_ms = j->submitted_ms,
                      .error = strdup(j->error), .n_metrics = j->n_metrics,
                      .recoveries = j->recoveries, .checkpoint = strdup(j->checkpoint),
                      .checkpoint_step = j->checkpoint_step, .note = strdup(j->note)};
  out->metrics = calloc((size_t)j->n_metrics + 1, sizeof *out->metrics);
  for (int i = 0; i < j->n_metrics; i++) {
    out->metrics[i] = (tf_ctl_metric){strdup(j->metrics[i].name), j->metrics[i].value};
  }
  out->n_replica_steps = j->n_replica_steps;
  out->replica_steps = calloc((size_t)j->n_replica_steps + 1, sizeof *out->replica_steps);
  for (int i = 0; i < j->n_replica_steps; i++) {
    out->replica_steps[i] = j->replica_steps[i];
  }
}

tf_code tf_ctl_submit_job(const char *master_url, int64_t timeout_ms, const void *spec,
                          size_t len, const char *name, char **job, tf_status *st) {
  *job = NULL;
  tf_wire_writer *w = request(TF_M_SUBMIT_JOB, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_submit_job_req_encode(w, &(tf_msg_submit_job_req){.spec = spec, .spec_len = len,
                                                            .name = name});
  tf_wire_msg *r = NULL;
  if (call_with(master_url, w, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  tf_msg_submit_job_reply b;
  tf_code code = tf_msg_submit_job_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code == TF_OK) {
    *job = strdup(b.job);
  }
  tf_msg_submit_job_reply_fini(&b);
  return code;
}

tf_code tf_ctl_list_jobs(const char *master_url, int64_t timeout_ms, tf_ctl_job **out,
                         int *n, tf_status *st) {
  *out = NULL;
  *n = 0;
  tf_wire_msg *r = NULL;
  if (call(master_url, TF_MSG_MASTER_TASK, TF_M_LIST_JOBS, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  tf_msg_list_jobs_reply b;
  tf_code code = tf_msg_list_jobs_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code != TF_OK) {
    return code;
  }
  tf_ctl_job *js = calloc((size_t)b.n_jobs + 1, sizeof *js);
  for (int i = 0; i < b.n_jobs; i++) {
    copy_job(&b.jobs[i], &js[i]);
  }
  *out = js;
  *n = b.n_jobs;
  tf_msg_list_jobs_reply_fini(&b);
  return TF_OK;
}

/* Sends w (a JobStatus or JobControl request) and decodes the job in the
 * reply into *out. */
static tf_code call_job_info(const char *master_url, int method, tf_wire_writer *w,
                             int64_t timeout_ms, tf_ctl_job *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_wire_msg *r = NULL;
  if (call_with(master_url, w, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  tf_msg_job_info_reply b;
  tf_code code = tf_msg_job_info_reply_decode(r, method, &b, st);
  tf_wire_msg_free(r);
  if (code == TF_OK) {
    copy_job(&b.info, out);
  }
  tf_msg_job_info_reply_fini(&b);
  return code;
}

tf_code tf_ctl_job_status(const char *master_url, int64_t timeout_ms, const char *job,
                          tf_ctl_job *out, tf_status *st) {
  tf_wire_writer *w = request(TF_M_JOB_STATUS, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_job_status_req_encode(w, &(tf_msg_job_status_req){.job = job});
  return call_job_info(master_url, TF_M_JOB_STATUS, w, timeout_ms, out, st);
}

tf_code tf_ctl_job_control(const char *master_url, int64_t timeout_ms, const char *job,
                           const char *action, int64_t steps, tf_ctl_job *out,
                           tf_status *st) {
  tf_wire_writer *w = request(TF_M_JOB_CONTROL, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = job, .action = action,
                                                              .steps = steps});
  return call_job_info(master_url, TF_M_JOB_CONTROL, w, timeout_ms, out, st);
}

/* JobControl action ("checkpoint" or "restore") with checkpoint ckpt. */
static tf_code ckpt_control(const char *master_url, int64_t timeout_ms, const char *job,
                            const char *action, const char *ckpt, tf_ctl_job *out,
                            tf_status *st) {
  tf_wire_writer *w = request(TF_M_JOB_CONTROL, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = job, .action = action,
                                                              .checkpoint = ckpt});
  return call_job_info(master_url, TF_M_JOB_CONTROL, w, timeout_ms, out, st);
}

tf_code tf_ctl_job_checkpoint(const char *master_url, int64_t timeout_ms, const char *job,
                              tf_ctl_job *out, tf_status *st) {
  return ckpt_control(master_url, timeout_ms, job, "checkpoint", "", out, st);
}

tf_code tf_ctl_job_restore(const char *master_url, int64_t timeout_ms, const char *job,
                           const char *ckpt, tf_ctl_job *out, tf_status *st) {
  return ckpt_control(master_url, timeout_ms, job, "restore", ckpt != NULL ? ckpt : "", out,
                      st);
}

void tf_ctl_ckpts_fini(tf_ctl_ckpts *c) {
  for (int i = 0; c->items != NULL && i < c->n; i++) {
    free(c->items[i].name);
  }
  free(c->items);
  free(c->dir);
  memset(c, 0, sizeof *c);
}

tf_code tf_ctl_job_checkpoints(const char *master_url, int64_t timeout_ms, const char *job,
                               tf_ctl_ckpts *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_wire_writer *w = request(TF_M_JOB_CHECKPOINTS, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = job});
  tf_wire_msg *r = NULL;
  if (call_with(master_url, w, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  tf_msg_job_checkpoints_reply b;
  tf_code code = tf_msg_job_checkpoints_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code == TF_OK) {
    out->dir = strdup(b.dir);
    out->n = b.n_checkpoints;
    out->items = calloc((size_t)b.n_checkpoints + 1, sizeof *out->items);
    for (int i = 0; i < b.n_checkpoints; i++) {
      const tf_msg_checkpoint *c = &b.checkpoints[i];
      out->items[i] = (tf_ctl_ckpt){.name = strdup(c->name), .step = c->step,
                                    .time_ms = c->time_ms, .bytes = c->bytes};
    }
  }
  tf_msg_job_checkpoints_reply_fini(&b);
  return code;
}

tf_code tf_ctl_job_logs(const char *master_url, int64_t timeout_ms, const char *job,
                        int64_t from, tf_ctl_log *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_wire_writer *w = request(TF_M_JOB_LOGS, TF_MSG_MASTER_TASK, timeout_ms);
  tf_msg_job_logs_req_encode(w, &(tf_msg_job_logs_req){.job = job, .from = from});
  tf_wire_msg *r = NULL;
  if (call_with(master_url, w, timeout_ms, &r, st) != TF_OK) {
    return st->code;
  }
  tf_msg_job_logs_reply b;
  tf_code code = tf_msg_job_logs_reply_decode(r, &b, st);
  tf_wire_msg_free(r);
  if (code == TF_OK) {
    *out = (tf_ctl_log){.first = b.first, .next = b.next, .n_lines = b.n_lines,
                        .lines = dup_strs(b.lines, b.n_lines)};
  }
  tf_msg_job_logs_reply_fini(&b);
  return code;
}
