/* rt_metrics.h: the master's and the workers' Prometheus series
 * (lib/core/base/metrics.h; the names and labels are listed in
 * docs/operations.md "Metrics"). Steps: tf_steps_total{role},
 * tf_step_failures_total{role} and the tf_step_duration_seconds{role}
 * histogram, counted as each step ends (series looked up once, at start).
 * Gauges computed at scrape time by collectors: the master's
 * tf_tasks_up, tf_task_up{task}, tf_jobs{state} and
 * tf_checkpoint_age_seconds{job}; a worker's
 * tf_rendezvous_buffered_bytes. */
#ifndef TF_RUNTIME_RT_METRICS_H
#define TF_RUNTIME_RT_METRICS_H

#include <stdint.h>

#include "lib/core/base/metrics.h"
#include "tf/status.h"

typedef struct tf__step_metrics {
  tf_metric *steps, *failures, *duration;
} tf__step_metrics;

/* The step series of role ("master", "worker"). */
void tf__step_metrics_init(tf__step_metrics *sm, const char *role);

/* Counts a step that began at start_ns (tf__now_ns) and ended with code. */
void tf__step_metrics_done(const tf__step_metrics *sm, int64_t start_ns, tf_code code);

struct tf_master;
struct tf_worker;

/* Adds / removes the master's collector (tasks up, jobs, checkpoint
 * age). Remove before freeing what it reads (the tasks, the jobs). */
tf_metrics_collector *tf__ms_metrics_start(struct tf_master *m);
/* Adds the worker's collector (buffered rendezvous bytes). */
tf_metrics_collector *tf__wk_metrics_start(struct tf_worker *w);

#endif
