/* tfworker: one task of a job (worker or ps) of a cluster spec.
 *   tfworker --config FILE [--job NAME --task N | --instance NAME-N]
 *            [--pid-file FILE] [--log-level L] [--metrics-address A]
 *            [--tls-cert-key FILE]
 * Without --job/--task the task comes from Slurm or TF_CONFIG
 * (cmd/common/role.h); the master's rank execs tfmaster.
 * Serves the worker service (lib/runtime/worker.h) on the task's address
 * from the spec, tells the service manager READY=1 once serving, and on
 * SIGHUP re-reads FILE and applies the timeouts and log level (daemon.h), on
 * SIGTERM/SIGINT drains running steps (up to timeouts.drain_ms) and exits
 * 0. Exit 1: bad config, unknown task, job "master" (tfmaster serves it)
 * or address not bindable; 2: usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/common/daemon.h"
#include "cmd/common/role.h"
#include "lib/runtime/worker.h"

static const char *usage =
    "tfworker --config FILE [--job NAME --task N | --instance NAME-N] [--pid-file FILE]\n"
    "                [--log-level err|warning|notice|info|debug] [--metrics-address HOST:PORT|off]\n"
    "                [--tls-cert-key FILE]";

static void tick(void *svc) { tf_worker_tick(svc); }
static void drain(void *svc, int64_t ms) { tf_worker_drain(svc, ms); }
static void release(void *svc) { tf_worker_free(svc); }

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  tf_daemon_args a;
  int rc = tf_daemon_parse_args(argc, argv, true, usage, &a);
  if (rc != 0) {
    return rc;
  }
  char name[160];
  snprintf(name, sizeof name, "tfworker /job:%s/task:%d", a.job ? a.job : "?", a.task);
  tf_log_set_name(a.job ? name : "tfworker");
  if (a.log_level >= 0) {
    tf_log_set_level(a.log_level);
  }
  tf_daemon_setup_log();
  tf_daemon_tune_memory();
  tf_cluster_spec *spec = tf_daemon_load_spec(a.config);
  if (spec == NULL) {
    return TF_EXIT_CONFIG;
  }
  tf_log_set_level(a.log_level >= 0 ? a.log_level : spec->log_level);
  if (tf_daemon_take_role(spec, false, argv, &a) != 0 || tf_daemon_setup_tls(spec, &a) != 0 ||
      tf_daemon_confine(spec) != 0) {
    tf_cluster_spec_free(spec);
    return TF_EXIT_CONFIG;
  }
  tf_auth *auth = NULL;
  if (tf_daemon_setup_auth(spec, a.job, a.task, &auth) != 0) {
    tf_cluster_spec_free(spec);
    return TF_EXIT_CONFIG;
  }
  tf_status st;
  tf_status_init(&st);
  tf_worker *w = NULL;
  if (tf_cluster_spec_check_worker_task(spec, a.job, a.task, &st) != TF_OK ||
      tf_worker_start(spec, a.job, a.task, &w, &st) != TF_OK) {
    bool is_master = strcmp(a.job, "master") == 0;
    tf_log(LOG_ERR, "cannot start: %s%s%s%s", st.msg,
           is_master ? "; tfmaster --config " : "", is_master ? a.config : "",
           is_master ? " serves it" : "");
    tf_cluster_spec_free(spec);
    tf_auth_set_process(NULL);
    tf_auth_free(auth);
    return TF_EXIT_CONFIG;
  }
  tf_daemon_confine_note(spec);
  tf_daemon_auth_note();
  char *url = tf_cluster_task_url(spec, a.job, a.task);
  tf_daemon d = {.prog = "tfworker", .svc = w, .tick = tick, .tick_ms = 1000,
                 .drain = drain, .free = release, .free_phase = tf_worker_stop_phase,
                 .drain_ms = spec->drain_ms,
                 .config_path = a.config, .spec = spec, .keep_log_level = a.log_level >= 0,
                 .role_from_env = a.role_from_env,
                 .pid_file = a.pid_file, .job = a.job, .task = a.task,
                 .metrics_address = a.metrics_address};
  snprintf(d.status, sizeof d.status, "serving %s on %s (incarnation %016llx)",
           tf_worker_device_name(w), url ? url : "?",
           (unsigned long long)tf_worker_incarnation(w));
  free(url);
  rc = tf_daemon_run(&d);
  tf_cluster_spec_free(spec);
  tf_auth_set_process(NULL);
  tf_auth_free(auth);
  return rc;
}
