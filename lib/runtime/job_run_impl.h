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
  pthread_t thread;
  bool thread_on;

  pthread_mutex_t mu;      /* everything below, unless said otherwise */
  pthread_cond_t cv;       /* state, control or progress changed */
  tf_job_state state;
  bool thread_done;
  bool paused, cancel;     /* requested by tf_job_control */
  int64_t budget;          /* updates a paused job may still make */
  bool stop;               /* the loops end */
  int64_t step, steps;     /* done / total */
  int64_t claimed;         /* async: updates started */
  int64_t *sent;           /* [n_workers] steps each replica finished */
  double loss, rate;
  double loss_sum;         /* the log window */
  int64_t loss_n;
  int64_t next_log, next_eval;
  int64_t rate_step, rate_ns;
  int64_t started_ns, ended_ns;
  char *error;             /* the first error */
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
/* The job's thread (job_loop.c). */
void *tf__job_main(void *arg);

#endif
