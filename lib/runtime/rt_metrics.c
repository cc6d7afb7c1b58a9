/* rt_metrics.c: the runtime's Prometheus series (rt_metrics.h). The
 * collectors read the master's and the worker's state under their own
 * locks at scrape time; their families are TF_METRICS_RESET, so tasks of
 * one process (tests) add up, and a job that is gone drops out. */
#include "lib/runtime/rt_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_run.h"
#include "lib/runtime/master_impl.h"
#include "lib/runtime/worker_impl.h"

void tf__step_metrics_init(tf__step_metrics *sm, const char *role) {
  sm->steps = tf_metrics_series1(
      tf_metrics_counter("tf_steps_total", "Steps finished (master: RunStep; worker: RunGraph)",
                         "role"),
      role);
  sm->failures = tf_metrics_series1(
      tf_metrics_counter("tf_step_failures_total", "Steps that ended with an error", "role"),
      role);
  sm->duration = tf_metrics_series1(
      tf_metrics_histogram("tf_step_duration_seconds",
                           "Step latency from request to reply (master: RunStep; worker: "
                           "RunGraph)", "role", tf_metrics_seconds_buckets,
                           tf_metrics_n_seconds_buckets),
      role);
}

void tf__step_metrics_done(const tf__step_metrics *sm, int64_t start_ns, tf_code code) {
  tf_metric_add_u64(sm->steps, 1);
  if (code != TF_OK) {
    tf_metric_add_u64(sm->failures, 1);
  }
  tf_metric_observe(sm->duration, (double)(tf__now_ns() - start_ns) / 1e9);
}

/* ---- the master ------------------------------------------------------------- */

static void collect_tasks(tf_master *m) {
  tf_metric_family *one = tf_metrics_gauge(
      "tf_task_up", "1 when the master's health checks see the task up, else 0", "task",
      TF_METRICS_RESET);
  tf_metric_family *all = tf_metrics_gauge(
      "tf_tasks_up", "Tasks (other than the master) the master's health checks see up", NULL,
      TF_METRICS_RESET);
  int up = 0;
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->n_tasks; i++) {
    char name[160];
    snprintf(name, sizeof name, "/job:%s/task:%d", m->tasks[i].job, m->tasks[i].task);
    tf_metric_add(tf_metrics_series1(one, name), m->tasks[i].up ? 1 : 0);
    up += m->tasks[i].up;
  }
  pthread_mutex_unlock(&m->mu);
  tf_metric_add(tf_metrics_series(all, NULL), up);
}

/* Seconds since the checkpoint at path was committed (its mtime); -1 if
 * it cannot be read. */
static double ckpt_age(const char *path) {
  struct stat sb;
  if (path[0] == '\0' || stat(path, &sb) != 0) {
    return -1;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double age = (double)(now.tv_sec - sb.st_mtim.tv_sec) +
               (double)(now.tv_nsec - sb.st_mtim.tv_nsec) / 1e9;
  return age > 0 ? age : 0;
}

static void collect_jobs(tf_master *m) {
  tf_metric_family *by_state = tf_metrics_gauge("tf_jobs", "Jobs the master keeps, by state",
                                                "state", TF_METRICS_RESET);
  tf_metric_family *age = tf_metrics_gauge(
      "tf_checkpoint_age_seconds", "Seconds since the job's newest checkpoint was committed",
      "job", TF_METRICS_RESET);
  for (int s = TF_JOB_QUEUED; s <= TF_JOB_CANCELLED; s++) {
    tf_metric_add(tf_metrics_series1(by_state, tf_job_state_name((tf_job_state)s)), 0);
  }
  tf_job_info *info = tf__xmalloc(sizeof *info);
  pthread_mutex_lock(&m->jobs_mu);
  for (int i = 0; i < m->n_jobs; i++) {
    tf_job_info_get(m->jobs[i], info);
    tf_metric_add(tf_metrics_series1(by_state, tf_job_state_name(info->state)), 1);
    double a = ckpt_age(info->checkpoint);
    if (a >= 0) {
      tf_metric_add(tf_metrics_series1(age, info->id), a);
    }
  }
  pthread_mutex_unlock(&m->jobs_mu);
  free(info);
}

static void collect_master(void *arg) {
  collect_tasks(arg);
  collect_jobs(arg);
}

tf_metrics_collector *tf__ms_metrics_start(tf_master *m) {
  return tf_metrics_add_collector(tf_metrics_global(), collect_master, m);
}

/* ---- a worker ----------------------------------------------------------------- */

static void collect_worker(void *arg) {
  tf_worker *w = arg;
  tf_metric_family *f = tf_metrics_gauge(
      "tf_rendezvous_buffered_bytes",
      "Tensor bytes held in the worker's rendezvous tables, sent and not yet received", NULL,
      TF_METRICS_RESET);
  tf_metric_add(tf_metrics_series(f, NULL), (double)tf_rdv_mgr_buffered_bytes(w->rdv));
}

tf_metrics_collector *tf__wk_metrics_start(tf_worker *w) {
  return tf_metrics_add_collector(tf_metrics_global(), collect_worker, w);
}
