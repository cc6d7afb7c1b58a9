/* ctl_client.h: the client calls tfctl and the integration harness make
 * (docs/wire.md): GetStatus straight to a task, ClusterStatus and
 * ListDevices to the master, each a blocking call with a deadline whose
 * reply body is decoded into plain structs. */
#ifndef TF_RUNTIME_CTL_CLIENT_H
#define TF_RUNTIME_CTL_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"

/* One task as ClusterStatus (or a direct GetStatus) reports it. */
typedef struct tf_ctl_task {
  char *job;
  int task;
  char *url;
  bool up;
  uint64_t incarnation;
  int n_devices;
  char **devices;      /* full device names */
  int64_t last_ok_ms;  /* age of the last good answer; -1 never */
  char *error;         /* why it is down ("" when up) */
  int running_steps;   /* GetStatus: steps running there; -1 unknown */
} tf_ctl_task;

void tf_ctl_task_fini(tf_ctl_task *t);
void tf_ctl_tasks_free(tf_ctl_task *ts, int n);

/* GetStatus to the task at url, waiting up to timeout_ms. On OK fills
 * out's job, task, incarnation and devices (url copied, up true). Errors:
 * the call's status (DEADLINE_EXCEEDED / UNAVAILABLE naming the URL, or
 * the error the task replied with) or INVALID_ARGUMENT for a malformed
 * reply. */
tf_code tf_ctl_get_status(const char *url, int64_t timeout_ms, tf_ctl_task *out,
                          tf_status *st);

/* Whether the task at url is /job:job/replica:0/task:task and serving: a
 * GetStatus meant for that task (its header's `to`) within timeout_ms
 * whose reply names that job and task (and whose header's `from`, when
 * the server fills it in, is that task). OK when it is; FAILED_PRECONDITION
 * "wrong task at address: tcp://... is /job:ps/replica:0/task:0, expected
 * /job:worker/replica:0/task:1" when another task answers (a server that
 * checks `to` refuses with FAILED_PRECONDITION itself); else the error of
 * tf_ctl_get_status. */
tf_code tf_ctl_probe_task(const char *url, const char *job, int task, int64_t timeout_ms,
                          tf_status *st);

/* Whether the server at url answers within timeout_ms: any reply counts
 * except one saying DEADLINE_EXCEEDED, UNAVAILABLE or CANCELLED (a daemon
 * that is shutting down is not serving), which the caller cannot tell from
 * a call that got no reply. A malformed URL never answers. */
bool tf_ctl_answers(const char *url, int64_t timeout_ms);

/* ClusterStatus to the master: *out gets *n tasks (free with
 * tf_ctl_tasks_free). The master itself is listed first (added as up when
 * the master's reply leaves it out, since it answered). */
tf_code tf_ctl_cluster_status(const char *master_url, int64_t timeout_ms,
                              tf_ctl_task **out, int *n, tf_status *st);

/* One device as ListDevices reports it. */
typedef struct tf_ctl_device {
  char *name;   /* "/job:ps/replica:0/task:0/device:CPU:0" */
  char *type;   /* "CPU" */
  uint64_t incarnation;
  char *task;   /* "/job:ps/replica:0/task:0" */
  char *url;
} tf_ctl_device;

void tf_ctl_devices_free(tf_ctl_device *ds, int n);

/* ListDevices to the master: *out gets *n devices in the master's order. */
tf_code tf_ctl_list_devices(const char *master_url, int64_t timeout_ms,
                            tf_ctl_device **out, int *n, tf_status *st);

#endif
