/* tfmaster: the master task of a cluster spec.
 *   tfmaster --config FILE [--pid-file FILE] [--log-level L]
 *            [--metrics-address A] [--tls-cert-key FILE]
 * Serves the master service (lib/runtime/master.h) on the address of the
 * spec's one "master" task, runs health checks every
 * timeouts.heartbeat_ms, tells the service manager READY=1 once serving,
 * on SIGHUP re-reads FILE and applies the timeouts and log level (daemon.h),
 * and on SIGTERM/SIGINT drains running steps (up to timeouts.drain_ms) and
 * exits 0. With a spec of task counts or TF_CONFIG set, the addresses
 * come from the environment (cmd/common/role.h). Exit 1: bad config or
 * address not bindable; 2: usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/common/daemon.h"
#include "cmd/common/role.h"
#include "lib/runtime/master.h"

static const char *usage =
    "tfmaster --config FILE [--pid-file FILE] [--log-level err|warning|notice|info|debug]\n"
    "                [--metrics-address HOST:PORT|off] [--tls-cert-key FILE]";

static void tick(void *svc) { tf_master_tick(svc); }
static void drain(void *svc, int64_t ms) { tf_master_drain(svc, ms); }
static void release(void *svc) { tf_master_free(svc); }

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  tf_daemon_args a;
  int rc = tf_daemon_parse_args(argc, argv, false, usage, &a);
  if (rc != 0) {
    return rc;
  }
  tf_log_set_name("tfmaster /job:master/task:0");
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
  if (tf_daemon_take_role(spec, true, argv, &a) != 0 || tf_daemon_setup_tls(spec, &a) != 0 ||
      tf_daemon_confine(spec) != 0) {
    tf_cluster_spec_free(spec);
    return TF_EXIT_CONFIG;
  }
  tf_auth *auth = NULL;
  if (tf_daemon_setup_auth(spec, "master", 0, &auth) != 0) {
    tf_cluster_spec_free(spec);
    return TF_EXIT_CONFIG;
  }
  tf_status st;
  tf_status_init(&st);
  tf_master *m = NULL;
  if (tf_master_start(spec, &m, &st) != TF_OK) {
    tf_log(LOG_ERR, "cannot start: %s", st.msg);
    tf_cluster_spec_free(spec);
    tf_auth_set_process(NULL);
    tf_auth_free(auth);
    return TF_EXIT_CONFIG;
  }
  tf_daemon_confine_note(spec);
  tf_daemon_auth_note();
  char *url = tf_cluster_task_url(spec, "master", 0);
  tf_daemon d = {.prog = "tfmaster", .svc = m, .tick = tick,
                 .tick_ms = spec->heartbeat_ms > 0 ? spec->heartbeat_ms : 500,
                 .drain = drain, .free = release, .drain_ms = spec->drain_ms,
                 .config_path = a.config, .spec = spec, .keep_log_level = a.log_level >= 0,
                 .role_from_env = a.role_from_env,
                 .tick_is_heartbeat = true, .pid_file = a.pid_file, .job = "master", .task = 0,
                 .metrics_address = a.metrics_address};
  snprintf(d.status, sizeof d.status, "serving the master on %s", url ? url : "?");
  free(url);
  rc = tf_daemon_run(&d);
  tf_cluster_spec_free(spec);
  tf_auth_set_process(NULL);
  tf_auth_free(auth);
  return rc;
}
