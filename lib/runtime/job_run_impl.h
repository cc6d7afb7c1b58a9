/* job_run_impl.h: a job's state, shared by job_run.c (state, log,
 * control, start and stop) and job_loop.c (the job's thread and its step
 * loops). */
#ifndef TF_RUNTIME_JOB_RUN_IMPL_H
#define TF_RUNTIME_JOB_RUN_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/runtime/job_graph.h"
#include "lib/runtime/job_run.h"
#include "tf/session.h"
#include "tf/tensor.h"

struct tf_job {
  /* Set at start, then read-only. */
  char *id;
  tf_job_spec *spec;
  char *master_url;
  int n_workers, n_ps;
  char **workers, **ps;    /* device names */
  int64_t rpc_timeout_ms;
  int64_t submitted_ms;
  int64_t created_ns;      /* tf__job_now_ns() at tf_job_start */
  tf_job_health health;
  void (*on_end)(void *arg, const char *id, bool resumable);
  void *cb_arg;
  pthread_t thread;
  bool thread_on;

  pthread_mutex_t mu;      /* everything below, unless said otherwise */
  pthread_cond_t cv;       /* state, control or progress changed */
  tf_job_state state;
  bool thread_done;
  bool paused, cancel;     /* requested by tf_job_control */
  int64_t budget;          /* updates a paused job may still make */
  bool stop;               /* the loops end */
  bool replicas_end;       /* sync: the chief's loop ended; so do the
                            * replicas (until then they feed the chief's
                            * update in flight, also after stop) */
  int64_t step, steps;     /* done / total */
  int64_t claimed;         /* async: updates started */
  int64_t *sent;           /* [n_workers] steps each replica finished */
  double loss, rate;
  double loss_sum;         /* the log window */
  int64_t loss_n;
  int64_t next_log, next_eval;
  int64_t rate_step, rate_ns;
  int64_t started_ns, ended_ns;
  char *error;             /* the first error (of this attempt) */
  tf_code error_code;
  /* Checkpoints (job_ckpt.c) and recovery. */
  char *ckpt_path;         /* the newest written or restored */
  int64_t ckpt_step;       /* its step */
  int64_t ckpt_ns;         /* when the period restarted */
  int64_t ckpt_failures;
  int64_t ckpt_asked, ckpt_done; /* tfctl checkpoint requests, by number */
  char *ckpt_answer;       /* of request ckpt_done: the path, or "!error" */
  tf_code ckpt_answer_code;
  char *restore_req;       /* tfctl restore: a checkpoint, "" the latest */
  bool suspend;            /* the master drains: checkpoint, end resumable */
  bool master_stopping;    /* the master stops: its container is left to
                            * the tasks (they may be stopping too) */
  int holds;               /* tf_job_hold minus tf_job_release */
  int recoveries;          /* counted against recovery.max_attempts */
  int64_t recover_ns;      /* when the tasks were back (0: not recovering) */
  char *last_recovery;     /* why the last recovery began */
  uint64_t *inc_workers;   /* [n_workers] incarnations at the attempt's start */
  uint64_t *inc_ps;        /* [n_ps] */
  int n_metrics;
  char *metric_names[TF_JOB_INFO_METRICS];
  double metric_values[TF_JOB_INFO_METRICS];
  char *log[TF_JOB_LOG_LINES];
  int64_t log_next;

  pthread_mutex_t sess_mu; /* sess and aborted */
  tf_session *sess;
  bool aborted;

  /* The job's thread's own (replica threads read them while they run). */
  tf_job_graph *jg;
  tf_tensor *test_images, *test_labels;
};

int64_t tf__job_now_ns(void);
/* Appends a line to the job's log (and the daemon's, at info). */
void tf__job_log(tf_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Moves to state s unless the job is final; logs the change. */
void tf__job_set_state(tf_job *j, tf_job_state s);
/* Closes the session (once) so that every step in flight ends. */
void tf__job_abort(tf_job *j);
/* Checkpoints (job_ckpt.c). Saves the variables at the current global
 * step into the spec's checkpoint.dir; *path gets the checkpoint. */
tf_code tf__job_save(tf_job *j, tf_session *s, char **path, tf_status *st);
/* Restores ckpt ("" or NULL: the latest good one; a bare name: one in the
 * job's directory) into the session's variables, resyncs the sync state;
 * *step gets the restored global step. NOT_FOUND when there is none. */
tf_code tf__job_restore(tf_job *j, tf_session *s, const char *ckpt,
                        int64_t *step, tf_status *st);
/* Between steps: saves when a request is pending, when the policy says so,
 * or when force. Failures of periodic saves are logged and counted, not
 * returned; a forced one's are. */
tf_code tf__job_maybe_save(tf_job *j, tf_session *s, bool force, tf_status *st);
/* Frees the job's state on the tasks (its container) with a session of
 * its own (the job's may be closed); failures are logged. */
void tf__job_drop_container(tf_job *j);
/* Recovery (job_recover.c). Stops the pipelines, closes and frees the
 * session and the graph; drop: the job's container on the tasks too. */
void tf__job_teardown(tf_job *j, bool drop);
/* After a failed attempt (j->error) or a restore request: tears down,
 * counts the recovery (FAILED_PRECONDITION past recovery.max_attempts,
 * naming the last failure), waits for the tasks to be up (UNAVAILABLE
 * after recovery.wait_seconds naming them; CANCELLED when cancelled or
 * suspended), drops the job's container. The caller builds the graph
 * again and starts a new attempt. */
tf_code tf__job_recover(tf_job *j, tf_status *st);
/* Records the incarnations of the job's tasks (at the start of an
 * attempt). */
void tf__job_note_incarnations(tf_job *j);
/* After replica i's step failed with err: true when the replica may go on
 * alone once its worker answers again (async, or sync with backup
 * workers, more than one worker, every ps task and the worker still the
 * incarnation the attempt began with: a stall or a cut, not a restart),
 * after waiting for that; false when the job must recover as a whole (a
 * restart, or no update in recovery.wait_seconds of waiting) or is
 * stopping. */
bool tf__job_replica_wait(tf_job *j, int i, const tf_status *err);
/* The job's thread (job_loop.c). */
void *tf__job_main(void *arg);

#endif
