/* master_ckpt.c: the master's checkpoint requests (docs/wire.md, JobControl
 * and JobCheckpoints): JobControl's "checkpoint" (take one now, between two
 * steps, and answer with its path once it is committed) and "restore" (go
 * back to one of the job's checkpoints), and the list of a job's
 * checkpoints. While a request waits for its job or reads the job's
 * directory it holds the job (tf_job_hold), not the job table's lock, so
 * the other job methods go on. A checkpoint's wait takes a handler thread:
 * it is bounded by rpc_ms and by the request's own deadline, and at most
 * half of the master's handler threads (threads.rpc) wait for checkpoints
 * at once, so that status and session requests still get through. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "lib/runtime/ckpt_dir.h"
#include "lib/runtime/job_run.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"

/* How long a checkpoint request waits for its job: rpc_ms, and less when
 * the request's deadline is nearer, keeping a tenth of it (at least 50 ms)
 * for the reply to get back before the client gives up. */
static int64_t ckpt_wait_ms(const tf_master *m, const tf_wire_msg *req) {
  int64_t ms = m->spec->rpc_timeout_ms > 0 ? m->spec->rpc_timeout_ms : 10000;
  int64_t dl = req->h.deadline_ms;
  if (dl > 0) {
    int64_t margin = dl / 10 > 50 ? dl / 10 : 50;
    ms = dl - margin < ms ? dl - margin : ms;
  }
  return ms > 1 ? ms : 1;
}

/* Counts a checkpoint wait in, or refuses it (UNAVAILABLE) when half the
 * handler threads are waiting already. */
static tf_code ckpt_wait_begin(tf_master *m, tf_status *st) {
  int limit = m->spec->rpc_threads / 2 > 1 ? m->spec->rpc_threads / 2 : 1;
  tf_code code = TF_OK;
  pthread_mutex_lock(&m->jobs_mu);
  if (m->ckpt_waits >= limit) {
    code = tf_status_set(st, TF_UNAVAILABLE, "%d checkpoint requests are waiting "
                         "on the master at %s, the most it lets wait at once (half "
                         "of threads.rpc, %d); retry once one is answered",
                         m->ckpt_waits, m->url, m->spec->rpc_threads);
  } else {
    m->ckpt_waits++;
  }
  pthread_mutex_unlock(&m->jobs_mu);
  return code;
}

static void ckpt_wait_end(tf_master *m) {
  pthread_mutex_lock(&m->jobs_mu);
  TF_ASSERT(m->ckpt_waits > 0);
  m->ckpt_waits--;
  pthread_mutex_unlock(&m->jobs_mu);
}

/* The checkpoint a restore request names, as a name in the job's
 * directory dir: "" (the latest good one), "ckpt-<step>", or a path
 * dir/ckpt-<step> as tfctl checkpoint prints it. Anything else (another
 * directory, "..") is INVALID_ARGUMENT: a request reads only the job's
 * own checkpoints. */
static tf_code restore_name(const tf_job *j, const char *dir, const char *ckpt,
                            const char **name, tf_status *st) {
  *name = ckpt;
  if (ckpt[0] == '\0') {
    return TF_OK;
  }
  size_t n = strlen(dir);
  if (strchr(ckpt, '/') != NULL) {
    if (strncmp(ckpt, dir, n) != 0 || ckpt[n] != '/' || strchr(ckpt + n + 1, '/')) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "checkpoint '%s' is not in job "
                           "%s's checkpoint directory %s (tfctl checkpoints %s lists "
                           "them)", ckpt, tf_job_id(j), dir, tf_job_id(j));
    }
    *name = ckpt + n + 1;
  }
  if (!tf_ckpt_dir_name_step(*name, NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "checkpoint '%s' of job %s: expected "
                         "a name ckpt-<step> (tfctl checkpoints %s lists them)", ckpt,
                         tf_job_id(j), tf_job_id(j));
  }
  return TF_OK;
}

/* Restores checkpoint ckpt ("": the latest good one) of the held job j;
 * *note as tf_job_restore's. */
static tf_code restore(tf_job *j, const char *ckpt, char **note, tf_status *st) {
  *note = NULL;
  const char *dir = tf_job_checkpoint_dir(j), *name = ckpt;
  if (dir != NULL) {
    TF_TRY(restore_name(j, dir, ckpt, &name, st));
  }
  return tf_job_restore(j, name, note, st);
}

nng_msg *tf__ms_job_ckpt_control(tf_master *m, const tf_wire_msg *req,
                                 const tf_msg_job_control_req *r, tf_status *st) {
  bool take = strcmp(r->action, "checkpoint") == 0;
  TF_ASSERT(take || strcmp(r->action, "restore") == 0);
  if (take && r->checkpoint[0] != '\0') {
    tf_status_set(st, TF_INVALID_ARGUMENT, "JobControl: action 'checkpoint' of job %s "
                  "takes no checkpoint (got '%s'); restore does", r->job, r->checkpoint);
    return NULL;
  }
  if (take && ckpt_wait_begin(m, st) != TF_OK) {
    return NULL;
  }
  tf_job *j = tf__ms_job_find_held(m, r->job, st);
  char *note = NULL;
  nng_msg *msg = NULL;
  if (j != NULL) {
    tf_code c = take ? tf_job_checkpoint(j, ckpt_wait_ms(m, req), &note, st)
                     : restore(j, r->checkpoint, &note, st);
    if (c == TF_OK) {
      tf_log(LOG_INFO, "job %s: %s: %s", r->job, r->action, note ? note : "");
      msg = tf__ms_job_info_reply(m, req, j, note, st);
    }
    tf_job_release(j);
  }
  if (take) {
    ckpt_wait_end(m);
  }
  free(note);
  return msg;
}

/* ---- JobCheckpoints ------------------------------------------------------------ */

/* The checkpoints of dir, oldest first; none when dir does not exist yet
 * (no checkpoint was taken). */
static tf_code list_dir(const char *dir, tf_ckpt_manifest **ms, int *n, tf_status *st) {
  *ms = NULL;
  *n = 0;
  if (access(dir, F_OK) != 0 && errno == ENOENT) {
    return TF_OK;
  }
  return tf_ckpt_list(dir, ms, n, st);
}

static int64_t at_least_0(int64_t v) { return v > 0 ? v : 0; }

/* The JobCheckpoints reply for the held job j: its directory and its
 * checkpoints (the newest TF_MSG_MAX_CHECKPOINTS when it has more). */
static nng_msg *list_reply(tf_master *m, const tf_wire_msg *req, tf_job *j,
                           tf_status *st) {
  const char *dir = tf_job_checkpoint_dir(j);
  if (dir == NULL) {
    tf_status_set(st, TF_FAILED_PRECONDITION, "job %s has no checkpoint section "
                  "(checkpoint.dir) in its spec", tf_job_id(j));
    return NULL;
  }
  tf_ckpt_manifest *ms = NULL;
  int n = 0;
  if (list_dir(dir, &ms, &n, st) != TF_OK) {
    return NULL;
  }
  int first = n > TF_MSG_MAX_CHECKPOINTS ? n - TF_MSG_MAX_CHECKPOINTS : 0;
  tf_msg_checkpoint *cs = tf__xcalloc((size_t)(n - first) + 1, sizeof *cs);
  for (int i = first; i < n; i++) {
    const char *path = ms[i].path != NULL ? ms[i].path : "";
    const char *slash = strrchr(path, '/');
    cs[i - first] = (tf_msg_checkpoint){.name = slash != NULL ? slash + 1 : path,
                                        .step = at_least_0(ms[i].step),
                                        .time_ms = at_least_0(ms[i].time_ms),
                                        .bytes = at_least_0(tf_ckpt_bytes(&ms[i]))};
  }
  tf_msg_job_checkpoints_reply b = {.dir = dir, .n_checkpoints = n - first,
                                    .checkpoints = cs};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_job_checkpoints_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  free(cs);
  tf_ckpt_list_free(ms, n);
  return msg;
}

nng_msg *tf__ms_job_checkpoints(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_job_checkpoints_req r;
  if (tf_msg_job_checkpoints_req_decode(req, &r, st) != TF_OK) {
    return NULL;
  }
  tf_job *j = tf__ms_job_find_held(m, r.job, st);
  nng_msg *msg = NULL;
  if (j != NULL) {
    msg = list_reply(m, req, j, st);
    tf_job_release(j);
  }
  tf_msg_job_checkpoints_req_fini(&r);
  return msg;
}
