/* msg_job.c: the bodies of the master's job methods (messages.h "jobs",
 * docs/wire.md "Methods"): SubmitJob, ListJobs, JobStatus, JobControl,
 * JobLogs and JobCheckpoints. A job as the master reports it (tf_msg_job_info) is one map,
 * the JobStatus and JobControl reply body and each element of ListJobs'
 * jobs; only its job, name and state are required when decoding, the
 * rest default as messages.h states. Numbers are checked against their
 * ranges; loss and metric values may be NaN (no loss yet, a diverged
 * run). Encoders pack every field, in the order docs/wire.md lists. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/serialize/msgpack_map.h"
#include "lib/transport/msg_util.h"

#define CAP_JOBS TF_MSG_MAX_JOBS, "TF_MSG_MAX_JOBS"
#define CAP_METRICS TF_MSG_MAX_JOB_METRICS, "TF_MSG_MAX_JOB_METRICS"
#define CAP_REPLICAS TF_MSG_MAX_JOB_REPLICAS, "TF_MSG_MAX_JOB_REPLICAS"
#define CAP_LINES TF_MSG_MAX_LOG_LINES, "TF_MSG_MAX_LOG_LINES"
#define CAP_CKPTS TF_MSG_MAX_CHECKPOINTS, "TF_MSG_MAX_CHECKPOINTS"

static const char SUBMIT[] = "SubmitJob", SUBMIT_REPLY[] = "SubmitJob reply",
                  INFO_REPLY[] = "JobStatus/JobControl reply",
                  LIST_REPLY[] = "ListJobs reply", STATUS[] = "JobStatus",
                  CONTROL[] = "JobControl", LOGS[] = "JobLogs",
                  LOGS_REPLY[] = "JobLogs reply", CKPTS[] = "JobCheckpoints",
                  CKPTS_REPLY[] = "JobCheckpoints reply";

/* ---- SubmitJob ----------------------------------------------------------- */

void tf_msg_submit_job_req_encode(tf_wire_writer *w, const tf_msg_submit_job_req *m) {
  size_t len = m->spec_len;
  if (len > TF_MSG_MAX_JOB_SPEC_BYTES) {
    tf_status st;
    tf_status_set(&st, TF_INVALID_ARGUMENT, "%s: 'spec' is %zu bytes long, over the cap "
                  "of %d (TF_MSG_MAX_JOB_SPEC_BYTES)", SUBMIT, len,
                  TF_MSG_MAX_JOB_SPEC_BYTES);
    tf_wire_writer_fail(w, &st);
    len = 0;
  }
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 2);
  tf__mp_map_key(&b, "spec");
  tf__msg_pack_bin(w, SUBMIT, "spec", m->spec, len);
  tf__mp_map_key(&b, "name");
  tf__msg_pack_str(w, SUBMIT, "name", m->name);
  tf__mp_map_end(&b);
}

static tf_code decode_submit(const tf_wire_msg *r, tf_msg_submit_job_req *out,
                             tf_status *st) {
  tf__msg_field f[] = {{"spec", NULL}, {"name", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_SUBMIT_JOB, false, SUBMIT, f, 2, st));
  TF_TRY(tf__msg_get_bin(f[0].val, SUBMIT, "spec", &out->spec, &out->spec_len, st));
  if (out->spec_len > TF_MSG_MAX_JOB_SPEC_BYTES) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: field 'spec' is %zu bytes long, "
                         "over the cap of %d (TF_MSG_MAX_JOB_SPEC_BYTES)", SUBMIT,
                         out->spec_len, TF_MSG_MAX_JOB_SPEC_BYTES);
  }
  return tf__msg_get_str(&out->mem, f[1].val, SUBMIT, "name", -1, &out->name, st);
}

tf_code tf_msg_submit_job_req_decode(const tf_wire_msg *r, tf_msg_submit_job_req *out,
                                     tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_submit(r, out, st);
  if (c != TF_OK) {
    tf_msg_submit_job_req_fini(out);
  }
  return c;
}

void tf_msg_submit_job_req_fini(tf_msg_submit_job_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* A body {key: str} (the SubmitJob reply, the JobStatus request). */
static void encode_one_str(tf_wire_writer *w, const char *what, const char *key,
                           const char *s) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, key);
  tf__msg_pack_str(w, what, key, s);
  tf__mp_map_end(&b);
}

/* Decodes {key: str} of method into *s, owned by mem; on error mem is
 * freed and *s NULL. */
static tf_code decode_one_str(const tf_wire_msg *r, int method, bool reply,
                              const char *what, const char *key, tf_msg_mem *mem,
                              const char **s, tf_status *st) {
  tf__msg_field f[] = {{key, NULL}};
  tf_code c = tf__msg_body(r, method, reply, what, f, 1, st);
  if (c == TF_OK) {
    c = tf__msg_get_str(mem, f[0].val, what, key, -1, s, st);
  }
  if (c != TF_OK) {
    tf__msg_mem_free(mem);
    *s = NULL;
  }
  return c;
}

void tf_msg_submit_job_reply_encode(tf_wire_writer *w, const tf_msg_submit_job_reply *m) {
  encode_one_str(w, SUBMIT_REPLY, "job", m->job);
}

tf_code tf_msg_submit_job_reply_decode(const tf_wire_msg *r,
                                       tf_msg_submit_job_reply *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  return decode_one_str(r, TF_M_SUBMIT_JOB, true, SUBMIT_REPLY, "job", &out->mem,
                        &out->job, st);
}

void tf_msg_submit_job_reply_fini(tf_msg_submit_job_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- a job's info (JobStatus, JobControl, ListJobs) ---------------------- */

/* The keys of a job's map, in packing order (docs/wire.md). */
enum {
  K_JOB, K_NAME, K_STATE, K_MODE, K_WORKERS, K_STEP, K_STEPS, K_LOSS, K_STEPS_PER_S,
  K_ELAPSED_MS, K_SUBMITTED_MS, K_ERROR, K_METRICS, K_REPLICA_STEPS, K_RECOVERIES,
  K_CHECKPOINT, K_CHECKPOINT_STEP, K_NOTE, N_INFO_KEYS
};
static const char *const info_keys[N_INFO_KEYS] = {
    "job", "name", "state", "mode", "workers", "step", "steps", "loss", "steps_per_s",
    "elapsed_ms", "submitted_ms", "error", "metrics", "replica_steps", "recoveries",
    "checkpoint", "checkpoint_step", "note"};

/* Whether key k of a job's map is an int (packed as int64). */
static bool info_int(int k) {
  return k == K_WORKERS || k == K_STEP || k == K_STEPS || k == K_ELAPSED_MS ||
         k == K_SUBMITTED_MS || k == K_RECOVERIES || k == K_CHECKPOINT_STEP;
}

static void pack_metrics(tf_wire_writer *w, const char *what, const tf_msg_job_info *j) {
  msgpack_packer *pk = tf_wire_body(w);
  size_t n = (size_t)(j->n_metrics > 0 ? j->n_metrics : 0);
  if (!tf__msg_pack_list(w, what, "metrics", n, CAP_METRICS)) {
    return;
  }
  for (size_t i = 0; i < n; i++) {
    tf__mp_map m;
    tf__mp_map_begin(&m, pk, 2);
    tf__mp_map_key(&m, "name");
    tf__msg_pack_str(w, what, "metrics", j->metrics[i].name);
    tf__mp_map_key(&m, "value");
    tf__msg_pack_f64(pk, j->metrics[i].value);
    tf__mp_map_end(&m);
  }
}

static void pack_replica_steps(tf_wire_writer *w, const char *what,
                               const tf_msg_job_info *j) {
  msgpack_packer *pk = tf_wire_body(w);
  size_t n = (size_t)(j->n_replica_steps > 0 ? j->n_replica_steps : 0);
  if (!tf__msg_pack_list(w, what, "replica_steps", n, CAP_REPLICAS)) {
    return;
  }
  for (size_t i = 0; i < n; i++) {
    msgpack_pack_int64(pk, j->replica_steps[i]);
  }
}

static void pack_info(tf_wire_writer *w, const char *what, const tf_msg_job_info *j) {
  msgpack_packer *pk = tf_wire_body(w);
  const char *strs[N_INFO_KEYS] = {[K_JOB] = j->job, [K_NAME] = j->name,
                                   [K_STATE] = j->state, [K_MODE] = j->mode,
                                   [K_ERROR] = j->error, [K_CHECKPOINT] = j->checkpoint,
                                   [K_NOTE] = j->note};
  const int64_t ints[N_INFO_KEYS] = {[K_WORKERS] = j->workers, [K_STEP] = j->step,
                                     [K_STEPS] = j->steps, [K_ELAPSED_MS] = j->elapsed_ms,
                                     [K_SUBMITTED_MS] = j->submitted_ms,
                                     [K_RECOVERIES] = j->recoveries,
                                     [K_CHECKPOINT_STEP] = j->checkpoint_step};
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, N_INFO_KEYS);
  for (int k = 0; k < N_INFO_KEYS; k++) {
    tf__mp_map_key(&b, info_keys[k]);
    if (k == K_LOSS || k == K_STEPS_PER_S) {
      tf__msg_pack_f64(pk, k == K_LOSS ? j->loss : j->steps_per_s);
    } else if (k == K_METRICS) {
      pack_metrics(w, what, j);
    } else if (k == K_REPLICA_STEPS) {
      pack_replica_steps(w, what, j);
    } else if (info_int(k)) {
      msgpack_pack_int64(pk, ints[k]);
    } else {
      tf__msg_pack_str(w, what, info_keys[k], strs[k]);
    }
  }
  tf__mp_map_end(&b);
}

/* How errors name element o of a list: a map's own fields by elem
 * ("ListJobs reply: jobs[2]: field 'job' appears twice"), anything else as
 * the list's element ("ListJobs reply: jobs[2] is a nil, not a map"). */
static const char *map_what(const msgpack_object *o, const char *list, const char *elem) {
  return o->type == MSGPACK_OBJECT_MAP ? elem : list;
}

static tf_code decode_metrics(tf_msg_mem *mem, const msgpack_object *o, const char *what,
                              tf_msg_job_info *out, tf_status *st) {
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_list(o, what, "metrics", CAP_METRICS, &a, st));
  out->metrics = tf__msg_alloc(mem, (size_t)a->size * sizeof *out->metrics);
  out->n_metrics = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    char at[160];
    snprintf(at, sizeof at, "%s: metrics[%u]", what, i);
    tf__msg_field f[] = {{"name", NULL}, {"value", NULL}};
    TF_TRY(tf__msg_map(&a->ptr[i], map_what(&a->ptr[i], what, at), "metrics", i, f, 2, st));
    TF_TRY(tf__msg_get_str(mem, f[0].val, at, "name", -1, &out->metrics[i].name, st));
    TF_TRY(tf__msg_get_f64(f[1].val, at, "value", -1, -INFINITY, INFINITY, true,
                           &out->metrics[i].value, st));
  }
  return TF_OK;
}

static tf_code decode_replica_steps(tf_msg_mem *mem, const msgpack_object *o,
                                    const char *what, tf_msg_job_info *out,
                                    tf_status *st) {
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_get_list(o, what, "replica_steps", CAP_REPLICAS, &a, st));
  out->replica_steps = tf__msg_alloc(mem, (size_t)a->size * sizeof *out->replica_steps);
  out->n_replica_steps = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    TF_TRY(tf__msg_get_int(&a->ptr[i], what, "replica_steps", i, 0, INT64_MAX,
                           &out->replica_steps[i], st));
  }
  return TF_OK;
}

/* The optional integers of f (absent: 0). */
static tf_code decode_info_ints(const tf__msg_field *f, const char *what,
                                tf_msg_job_info *out, tf_status *st) {
  int64_t workers = 0, recoveries = 0;
  int64_t *v[N_INFO_KEYS] = {[K_WORKERS] = &workers, [K_STEP] = &out->step,
                             [K_STEPS] = &out->steps, [K_ELAPSED_MS] = &out->elapsed_ms,
                             [K_SUBMITTED_MS] = &out->submitted_ms,
                             [K_RECOVERIES] = &recoveries,
                             [K_CHECKPOINT_STEP] = &out->checkpoint_step};
  for (int k = 0; k < N_INFO_KEYS; k++) {
    if (v[k] != NULL && f[k].val != NULL) {
      bool small = k == K_WORKERS || k == K_RECOVERIES;
      TF_TRY(tf__msg_get_int(f[k].val, what, info_keys[k], -1, 0,
                             small ? INT_MAX : INT64_MAX, v[k], st));
    }
  }
  out->workers = (int)workers;
  out->recoveries = (int)recoveries;
  return TF_OK;
}

/* A job's fields f (found by tf__msg_body or tf__msg_map) into *out. */
static tf_code decode_info(tf_msg_mem *mem, const tf__msg_field *f, const char *what,
                           tf_msg_job_info *out, tf_status *st) {
  out->mode = out->error = out->checkpoint = out->note = "";
  out->loss = NAN;
  const char **strs[N_INFO_KEYS] = {[K_JOB] = &out->job, [K_NAME] = &out->name,
                                    [K_STATE] = &out->state, [K_MODE] = &out->mode,
                                    [K_ERROR] = &out->error,
                                    [K_CHECKPOINT] = &out->checkpoint,
                                    [K_NOTE] = &out->note};
  for (int k = 0; k < N_INFO_KEYS; k++) {
    bool required = k == K_JOB || k == K_NAME || k == K_STATE;
    if (strs[k] != NULL && (required || f[k].val != NULL)) {
      TF_TRY(tf__msg_get_str(mem, f[k].val, what, info_keys[k], -1, strs[k], st));
    }
  }
  TF_TRY(decode_info_ints(f, what, out, st));
  if (f[K_LOSS].val != NULL) {
    TF_TRY(tf__msg_get_f64(f[K_LOSS].val, what, "loss", -1, -INFINITY, INFINITY, true,
                           &out->loss, st));
  }
  if (f[K_STEPS_PER_S].val != NULL) {
    TF_TRY(tf__msg_get_f64(f[K_STEPS_PER_S].val, what, "steps_per_s", -1, 0, INFINITY,
                           false, &out->steps_per_s, st));
  }
  if (f[K_METRICS].val != NULL) {
    TF_TRY(decode_metrics(mem, f[K_METRICS].val, what, out, st));
  }
  if (f[K_REPLICA_STEPS].val != NULL) {
    TF_TRY(decode_replica_steps(mem, f[K_REPLICA_STEPS].val, what, out, st));
  }
  return TF_OK;
}

static void info_fields(tf__msg_field *f) {
  for (int k = 0; k < N_INFO_KEYS; k++) {
    f[k] = (tf__msg_field){info_keys[k], NULL};
  }
}

void tf_msg_job_info_reply_encode(tf_wire_writer *w, const tf_msg_job_info_reply *m) {
  pack_info(w, INFO_REPLY, &m->info);
}

tf_code tf_msg_job_info_reply_decode(const tf_wire_msg *r, int method,
                                     tf_msg_job_info_reply *out, tf_status *st) {
  TF_ASSERT(method == TF_M_JOB_STATUS || method == TF_M_JOB_CONTROL);
  memset(out, 0, sizeof *out);
  const char *what = method == TF_M_JOB_STATUS ? "JobStatus reply" : "JobControl reply";
  tf__msg_field f[N_INFO_KEYS];
  info_fields(f);
  tf_code c = tf__msg_body(r, method, true, what, f, N_INFO_KEYS, st);
  if (c == TF_OK) {
    c = decode_info(&out->mem, f, what, &out->info, st);
  }
  if (c != TF_OK) {
    tf_msg_job_info_reply_fini(out);
  }
  return c;
}

void tf_msg_job_info_reply_fini(tf_msg_job_info_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- ListJobs ------------------------------------------------------------ */

void tf_msg_list_jobs_reply_encode(tf_wire_writer *w, const tf_msg_list_jobs_reply *m) {
  tf__mp_map b;
  tf__mp_map_begin(&b, tf_wire_body(w), 1);
  tf__mp_map_key(&b, "jobs");
  size_t n = (size_t)(m->n_jobs > 0 ? m->n_jobs : 0);
  if (tf__msg_pack_list(w, LIST_REPLY, "jobs", n, CAP_JOBS)) {
    for (size_t i = 0; i < n; i++) {
      char what[64];
      snprintf(what, sizeof what, "%s: jobs[%zu]", LIST_REPLY, i);
      pack_info(w, what, &m->jobs[i]);
    }
  }
  tf__mp_map_end(&b);
}

static tf_code decode_list(const tf_wire_msg *r, tf_msg_list_jobs_reply *out,
                           tf_status *st) {
  tf__msg_field f[] = {{"jobs", NULL}};
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_body(r, TF_M_LIST_JOBS, true, LIST_REPLY, f, 1, st));
  TF_TRY(tf__msg_get_list(f[0].val, LIST_REPLY, "jobs", CAP_JOBS, &a, st));
  out->jobs = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->jobs);
  out->n_jobs = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    char what[64];
    snprintf(what, sizeof what, "%s: jobs[%u]", LIST_REPLY, i);
    tf__msg_field jf[N_INFO_KEYS];
    info_fields(jf);
    TF_TRY(tf__msg_map(&a->ptr[i], map_what(&a->ptr[i], LIST_REPLY, what), "jobs", i, jf,
                       N_INFO_KEYS, st));
    TF_TRY(decode_info(&out->mem, jf, what, &out->jobs[i], st));
  }
  return TF_OK;
}

tf_code tf_msg_list_jobs_reply_decode(const tf_wire_msg *r, tf_msg_list_jobs_reply *out,
                                      tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_list(r, out, st);
  if (c != TF_OK) {
    tf_msg_list_jobs_reply_fini(out);
  }
  return c;
}

void tf_msg_list_jobs_reply_fini(tf_msg_list_jobs_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- JobStatus, JobControl requests -------------------------------------- */

void tf_msg_job_status_req_encode(tf_wire_writer *w, const tf_msg_job_status_req *m) {
  encode_one_str(w, STATUS, "job", m->job);
}

tf_code tf_msg_job_status_req_decode(const tf_wire_msg *r, tf_msg_job_status_req *out,
                                     tf_status *st) {
  memset(out, 0, sizeof *out);
  return decode_one_str(r, TF_M_JOB_STATUS, false, STATUS, "job", &out->mem, &out->job,
                        st);
}

void tf_msg_job_status_req_fini(tf_msg_job_status_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

void tf_msg_job_control_req_encode(tf_wire_writer *w, const tf_msg_job_control_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 4);
  tf__mp_map_key(&b, "job");
  tf__msg_pack_str(w, CONTROL, "job", m->job);
  tf__mp_map_key(&b, "action");
  tf__msg_pack_str(w, CONTROL, "action", m->action);
  tf__mp_map_key(&b, "steps");
  msgpack_pack_int64(pk, m->steps);
  tf__mp_map_key(&b, "checkpoint");
  tf__msg_pack_str(w, CONTROL, "checkpoint", m->checkpoint);
  tf__mp_map_end(&b);
}

static tf_code decode_control(const tf_wire_msg *r, tf_msg_job_control_req *out,
                              tf_status *st) {
  tf__msg_field f[] = {{"job", NULL}, {"action", NULL}, {"steps", NULL},
                       {"checkpoint", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_JOB_CONTROL, false, CONTROL, f, 4, st));
  TF_TRY(tf__msg_get_str(&out->mem, f[0].val, CONTROL, "job", -1, &out->job, st));
  TF_TRY(tf__msg_get_str(&out->mem, f[1].val, CONTROL, "action", -1, &out->action, st));
  if (f[2].val != NULL) {
    TF_TRY(tf__msg_get_int(f[2].val, CONTROL, "steps", -1, 0, INT32_MAX, &out->steps, st));
  }
  out->checkpoint = "";
  if (f[3].val == NULL) {
    return TF_OK;
  }
  return tf__msg_get_str(&out->mem, f[3].val, CONTROL, "checkpoint", -1, &out->checkpoint,
                         st);
}

tf_code tf_msg_job_control_req_decode(const tf_wire_msg *r, tf_msg_job_control_req *out,
                                      tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_control(r, out, st);
  if (c != TF_OK) {
    tf_msg_job_control_req_fini(out);
  }
  return c;
}

void tf_msg_job_control_req_fini(tf_msg_job_control_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- JobLogs ------------------------------------------------------------- */

void tf_msg_job_logs_req_encode(tf_wire_writer *w, const tf_msg_job_logs_req *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 2);
  tf__mp_map_key(&b, "job");
  tf__msg_pack_str(w, LOGS, "job", m->job);
  tf__mp_map_key(&b, "from");
  msgpack_pack_int64(pk, m->from);
  tf__mp_map_end(&b);
}

static tf_code decode_logs_req(const tf_wire_msg *r, tf_msg_job_logs_req *out,
                               tf_status *st) {
  tf__msg_field f[] = {{"job", NULL}, {"from", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_JOB_LOGS, false, LOGS, f, 2, st));
  TF_TRY(tf__msg_get_str(&out->mem, f[0].val, LOGS, "job", -1, &out->job, st));
  if (f[1].val == NULL) {
    return TF_OK;
  }
  return tf__msg_get_int(f[1].val, LOGS, "from", -1, 0, INT64_MAX, &out->from, st);
}

tf_code tf_msg_job_logs_req_decode(const tf_wire_msg *r, tf_msg_job_logs_req *out,
                                   tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_logs_req(r, out, st);
  if (c != TF_OK) {
    tf_msg_job_logs_req_fini(out);
  }
  return c;
}

void tf_msg_job_logs_req_fini(tf_msg_job_logs_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

void tf_msg_job_logs_reply_encode(tf_wire_writer *w, const tf_msg_job_logs_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 3);
  tf__mp_map_key(&b, "first");
  msgpack_pack_int64(pk, m->first);
  tf__mp_map_key(&b, "lines");
  tf__msg_pack_strs(w, LOGS_REPLY, "lines", m->lines, m->n_lines, CAP_LINES);
  tf__mp_map_key(&b, "next");
  msgpack_pack_int64(pk, m->next);
  tf__mp_map_end(&b);
}

static tf_code decode_logs_reply(const tf_wire_msg *r, tf_msg_job_logs_reply *out,
                                 tf_status *st) {
  tf__msg_field f[] = {{"first", NULL}, {"lines", NULL}, {"next", NULL}};
  TF_TRY(tf__msg_body(r, TF_M_JOB_LOGS, true, LOGS_REPLY, f, 3, st));
  TF_TRY(tf__msg_get_int(f[0].val, LOGS_REPLY, "first", -1, 0, INT64_MAX, &out->first, st));
  TF_TRY(tf__msg_get_strs(&out->mem, f[1].val, LOGS_REPLY, "lines", CAP_LINES, &out->lines,
                          &out->n_lines, st));
  TF_TRY(tf__msg_get_int(f[2].val, LOGS_REPLY, "next", -1, 0, INT64_MAX, &out->next, st));
  /* lines[i] is line first + i, so the next line to ask for is past them. */
  if (out->first > INT64_MAX - out->n_lines || out->next < out->first + out->n_lines) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: field 'next' is %lld, before the "
                         "end of the %d lines from %lld", LOGS_REPLY, (long long)out->next,
                         out->n_lines, (long long)out->first);
  }
  return TF_OK;
}

tf_code tf_msg_job_logs_reply_decode(const tf_wire_msg *r, tf_msg_job_logs_reply *out,
                                     tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_logs_reply(r, out, st);
  if (c != TF_OK) {
    tf_msg_job_logs_reply_fini(out);
  }
  return c;
}

void tf_msg_job_logs_reply_fini(tf_msg_job_logs_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* ---- JobCheckpoints ------------------------------------------------------ */

void tf_msg_job_checkpoints_req_encode(tf_wire_writer *w,
                                       const tf_msg_job_checkpoints_req *m) {
  encode_one_str(w, CKPTS, "job", m->job);
}

tf_code tf_msg_job_checkpoints_req_decode(const tf_wire_msg *r,
                                          tf_msg_job_checkpoints_req *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  return decode_one_str(r, TF_M_JOB_CHECKPOINTS, false, CKPTS, "job", &out->mem, &out->job,
                        st);
}

void tf_msg_job_checkpoints_req_fini(tf_msg_job_checkpoints_req *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}

/* The keys of one checkpoint's map, in packing order (docs/wire.md). */
enum { C_NAME, C_STEP, C_TIME_MS, C_BYTES, N_CKPT_KEYS };
static const char *const ckpt_keys[N_CKPT_KEYS] = {"name", "step", "time_ms", "bytes"};

void tf_msg_job_checkpoints_reply_encode(tf_wire_writer *w,
                                         const tf_msg_job_checkpoints_reply *m) {
  msgpack_packer *pk = tf_wire_body(w);
  tf__mp_map b;
  tf__mp_map_begin(&b, pk, 2);
  tf__mp_map_key(&b, "dir");
  tf__msg_pack_str(w, CKPTS_REPLY, "dir", m->dir);
  tf__mp_map_key(&b, "checkpoints");
  size_t n = (size_t)(m->n_checkpoints > 0 ? m->n_checkpoints : 0);
  if (tf__msg_pack_list(w, CKPTS_REPLY, "checkpoints", n, CAP_CKPTS)) {
    for (size_t i = 0; i < n; i++) {
      const tf_msg_checkpoint *c = &m->checkpoints[i];
      const int64_t ints[N_CKPT_KEYS] = {[C_STEP] = c->step, [C_TIME_MS] = c->time_ms,
                                         [C_BYTES] = c->bytes};
      tf__mp_map e;
      tf__mp_map_begin(&e, pk, N_CKPT_KEYS);
      for (int k = 0; k < N_CKPT_KEYS; k++) {
        tf__mp_map_key(&e, ckpt_keys[k]);
        if (k == C_NAME) {
          tf__msg_pack_str(w, CKPTS_REPLY, "checkpoints", c->name);
        } else {
          msgpack_pack_int64(pk, ints[k]);
        }
      }
      tf__mp_map_end(&e);
    }
  }
  tf__mp_map_end(&b);
}

/* Element i of the checkpoints list (o) into *out. */
static tf_code decode_ckpt(tf_msg_mem *mem, const msgpack_object *o, uint32_t i,
                           tf_msg_checkpoint *out, tf_status *st) {
  char at[96];
  snprintf(at, sizeof at, "%s: checkpoints[%u]", CKPTS_REPLY, i);
  tf__msg_field f[N_CKPT_KEYS];
  for (int k = 0; k < N_CKPT_KEYS; k++) {
    f[k] = (tf__msg_field){ckpt_keys[k], NULL};
  }
  TF_TRY(tf__msg_map(o, map_what(o, CKPTS_REPLY, at), "checkpoints", i, f, N_CKPT_KEYS, st));
  TF_TRY(tf__msg_get_str(mem, f[C_NAME].val, at, "name", -1, &out->name, st));
  int64_t *v[N_CKPT_KEYS] = {[C_STEP] = &out->step, [C_TIME_MS] = &out->time_ms,
                             [C_BYTES] = &out->bytes};
  for (int k = C_STEP; k < N_CKPT_KEYS; k++) {
    TF_TRY(tf__msg_get_int(f[k].val, at, ckpt_keys[k], -1, 0, INT64_MAX, v[k], st));
  }
  return TF_OK;
}

static tf_code decode_ckpts_reply(const tf_wire_msg *r, tf_msg_job_checkpoints_reply *out,
                                  tf_status *st) {
  tf__msg_field f[] = {{"dir", NULL}, {"checkpoints", NULL}};
  const msgpack_object_array *a = NULL;
  TF_TRY(tf__msg_body(r, TF_M_JOB_CHECKPOINTS, true, CKPTS_REPLY, f, 2, st));
  TF_TRY(tf__msg_get_str(&out->mem, f[0].val, CKPTS_REPLY, "dir", -1, &out->dir, st));
  TF_TRY(tf__msg_get_list(f[1].val, CKPTS_REPLY, "checkpoints", CAP_CKPTS, &a, st));
  out->checkpoints = tf__msg_alloc(&out->mem, (size_t)a->size * sizeof *out->checkpoints);
  out->n_checkpoints = (int)a->size;
  for (uint32_t i = 0; i < a->size; i++) {
    TF_TRY(decode_ckpt(&out->mem, &a->ptr[i], i, &out->checkpoints[i], st));
  }
  return TF_OK;
}

tf_code tf_msg_job_checkpoints_reply_decode(const tf_wire_msg *r,
                                            tf_msg_job_checkpoints_reply *out,
                                            tf_status *st) {
  memset(out, 0, sizeof *out);
  tf_code c = decode_ckpts_reply(r, out, st);
  if (c != TF_OK) {
    tf_msg_job_checkpoints_reply_fini(out);
  }
  return c;
}

void tf_msg_job_checkpoints_reply_fini(tf_msg_job_checkpoints_reply *m) {
  tf__msg_mem_free(&m->mem);
  memset(m, 0, sizeof *m);
}
