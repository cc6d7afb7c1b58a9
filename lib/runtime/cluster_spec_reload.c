/* cluster_spec_reload.c: the SIGHUP diff between a running daemon's spec
 * and its re-read config file (cluster_spec_reload.h). */
#include "lib/runtime/cluster_spec_reload.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/runtime/log.h"

/* Appends ", text" (or "text" when buf is empty) to buf, truncating. */
static void append(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (len == 0 || n + 1 >= len) return;
  if (n > 0) {
    n += (size_t)snprintf(buf + n, len - n, ", ");
    if (n + 1 >= len) return;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

static const char *level_name(int level) {
  static const char *const names[] = {"emerg", "alert", "crit", "err",
                                      "warning", "notice", "info", "debug"};
  return level >= 0 && level <= 7 ? names[level] : "?";
}

static bool str_differs(const char *a, const char *b) {
  if (a == NULL || b == NULL) return a != b;
  return strcmp(a, b) != 0;
}

static bool jobs_differ(const tf_cluster_spec *a, const tf_cluster_spec *b) {
  if (a->n_jobs != b->n_jobs) return true;
  for (int j = 0; j < a->n_jobs; j++) {
    const tf_cluster_job *x = &a->jobs[j], *y = &b->jobs[j];
    if (strcmp(x->name, y->name) != 0 || x->n_tasks != y->n_tasks) return true;
    for (int t = 0; t < x->n_tasks; t++) {
      if (str_differs(x->addrs[t], y->addrs[t])) return true;
    }
  }
  return false;
}

static bool lists_differ(char *const *a, int na, char *const *b, int nb) {
  for (int i = 0; na == nb && i < na; i++) {
    if (strcmp(a[i], b[i]) != 0) return true;
  }
  return na != nb;
}

/* The fields a restart applies: reported when they differ. */
static void diff_restart_only(const tf_cluster_spec *l, const tf_cluster_spec *f,
                              char *buf, size_t len) {
  if (jobs_differ(l, f)) append(buf, len, "jobs (the task list)");
  if (lists_differ(l->data_dirs, l->n_data_dirs, f->data_dirs, f->n_data_dirs)) {
    append(buf, len, "data_dirs");
  }
  if (lists_differ(l->ops_allow, l->n_ops_allow, f->ops_allow, f->n_ops_allow)) {
    append(buf, len, "ops.allow");
  }
  if (str_differs(l->name, f->name)) append(buf, len, "cluster");
  if (str_differs(l->transport, f->transport)) append(buf, len, "transport");
  if (l->step_ttl_ms != f->step_ttl_ms) append(buf, len, "timeouts.step_ttl_ms");
  if (l->inter_op_threads != f->inter_op_threads) append(buf, len, "threads.inter_op");
  if (l->rpc_threads != f->rpc_threads) append(buf, len, "threads.rpc");
  if (l->max_message_bytes != f->max_message_bytes) append(buf, len, "max_message_mb");
  if (l->max_pushed_bytes != f->max_pushed_bytes) append(buf, len, "limits.max_pushed_mb");
  if (l->max_graphs != f->max_graphs) append(buf, len, "limits.max_graphs");
  if (l->max_sessions != f->max_sessions) append(buf, len, "limits.max_sessions");
  if (l->max_steps != f->max_steps) append(buf, len, "limits.max_steps");
  if (l->max_connections != f->max_connections) append(buf, len, "limits.max_connections");
  if (l->idle_connection_ms != f->idle_connection_ms) {
    append(buf, len, "limits.idle_connection_ms");
  }
  if (str_differs(l->checkpoint_dir, f->checkpoint_dir)) append(buf, len, "checkpoint_dir");
  if (str_differs(l->run_dir, f->run_dir)) append(buf, len, "run_dir");
  if (l->metrics_port_offset != f->metrics_port_offset ||
      str_differs(l->metrics_host, f->metrics_host)) {
    append(buf, len, "metrics");
  }
  if (l->slurm_base_port != f->slurm_base_port) append(buf, len, "slurm.base_port");
  if (l->auth_mode != f->auth_mode || str_differs(l->auth_key_file, f->auth_key_file) ||
      str_differs(l->auth_client_key_file, f->auth_client_key_file) ||
      str_differs(l->auth_readonly_key_file, f->auth_readonly_key_file) ||
      l->auth_window_ms != f->auth_window_ms) {
    append(buf, len, "auth");
  }
  if (str_differs(l->tls_ca_file, f->tls_ca_file) ||
      str_differs(l->tls_cert_key_file, f->tls_cert_key_file) ||
      str_differs(l->tls_client_cert_key_file, f->tls_client_cert_key_file)) {
    append(buf, len, "tls");
  }
}

void tf_cluster_spec_reload(tf_cluster_spec *live, const tf_cluster_spec *fresh,
                            bool keep_log_level, char *applied, size_t applied_len,
                            char *restart, size_t restart_len) {
  if (applied_len > 0) applied[0] = '\0';
  if (restart_len > 0) restart[0] = '\0';
  if (!keep_log_level && live->log_level != fresh->log_level) {
    append(applied, applied_len, "log_level %s -> %s", level_name(live->log_level),
           level_name(fresh->log_level));
    live->log_level = fresh->log_level;
  }
  struct { const char *name; _Atomic int64_t *dst; int64_t v; } t[] = {
      {"timeouts.rpc_ms", &live->rpc_timeout_ms, fresh->rpc_timeout_ms},
      {"timeouts.registration_ms", &live->registration_timeout_ms,
       fresh->registration_timeout_ms},
      {"timeouts.step_ms", &live->step_timeout_ms, fresh->step_timeout_ms},
      {"timeouts.heartbeat_ms", &live->heartbeat_ms, fresh->heartbeat_ms},
      {"timeouts.down_after_ms", &live->down_after_ms, fresh->down_after_ms},
      {"timeouts.drain_ms", &live->drain_ms, fresh->drain_ms},
      {"limits.session_ttl_ms", &live->session_ttl_ms, fresh->session_ttl_ms}};
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    int64_t old = *t[k].dst;
    if (old != t[k].v) {
      append(applied, applied_len, "%s %" PRId64 " -> %" PRId64, t[k].name, old, t[k].v);
      *t[k].dst = t[k].v;
    }
  }
  diff_restart_only(live, fresh, restart, restart_len);
}
