/* daemon.c: the flag parser, spec loader and libuv loop that tfmaster and
 * tfworker share (daemon.h). The loop owns a housekeeping timer, the
 * SIGTERM/SIGINT watchers that drain the service, and the systemd watchdog
 * timer; it frees the service before closing its handles. The drain runs
 * on a thread of its own (the service's drain blocks for up to drain_ms)
 * and wakes the loop through an async handle when it is done, so the loop
 * keeps the watchdog beating; a second SIGINT while draining exits at
 * once (TF_EXIT_FORCED), a second SIGTERM is logged and changes nothing.
 * What follows the drain (freeing the service, closing the loop) has a
 * deadline of its own too. */
#include "cmd/common/daemon.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/common/metrics_http.h"
#include "cmd/common/notify.h"
#include "cmd/common/pidfile.h"
#include "lib/runtime/cluster_auth.h"
#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"
#include "lib/runtime/cluster_spec_confine.h"
#include "lib/runtime/cluster_spec_reload.h"
#include "lib/runtime/cluster_spec_tls.h"
#include "lib/runtime/log.h"
#include "lib/runtime/task_role.h"

extern char **environ;

bool tf_daemon_parse_instance(const char *s, char *job, size_t job_len, int *task,
                              char *why, size_t why_len) {
  const char *dash = strrchr(s, '-');
  size_t n = dash != NULL ? (size_t)(dash - s) : 0;
  if (dash == NULL || n == 0 || !tf_daemon_parse_int(dash + 1, task)) {
    snprintf(why, why_len, "--instance: expected JOB-N (e.g. ps-0 or worker-1), got '%.80s'",
             s);
    return false;
  }
  if (n >= job_len) {
    snprintf(why, why_len, "--instance: job name in '%.80s' longer than %zu characters", s,
             job_len - 1);
    return false;
  }
  memcpy(job, s, n);
  job[n] = '\0';
  return true;
}

bool tf_daemon_parse_int(const char *s, int *out) {
  if (s == NULL || *s < '0' || *s > '9') {
    return false;
  }
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > INT_MAX) {
    return false;
  }
  *out = (int)v;
  return true;
}

/* After the options: what is wrong with the rest (a positional, a
 * missing flag), or NULL. */
static const char *missing(int argc, char **argv, bool with_task, const tf_daemon_args *a,
                           char *buf, size_t n) {
  if (optind < argc) {
    snprintf(buf, n, "unexpected argument '%s'", argv[optind]);
    return buf;
  }
  if (a->config == NULL) {
    return "missing --config FILE";
  }
  /* Neither --job nor --task: the role comes from the environment
   * (cmd/common/role.h). */
  if (with_task && a->job == NULL && a->task >= 0) {
    return "missing --job NAME (or give neither --job nor --task)";
  }
  if (with_task && a->job != NULL && a->task < 0) {
    return "missing --task N (or give neither --job nor --task)";
  }
  return NULL;
}

int tf_daemon_parse_args(int argc, char **argv, bool with_task,
                         const char *usage, tf_daemon_args *a) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"job", required_argument, NULL, 'j'},
      {"task", required_argument, NULL, 't'},
      {"log-level", required_argument, NULL, 'l'},
      {"pid-file", required_argument, NULL, 'p'},
      {"instance", required_argument, NULL, 'i'},
      {"metrics-address", required_argument, NULL, 'm'},
      {"tls-cert-key", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *prog = with_task ? "tfworker" : "tfmaster";
  *a = (tf_daemon_args){.task = -1, .log_level = -1};
  const char *bad = NULL;
  char buf[256];
  int c;
  opterr = 0;
  while (bad == NULL && (c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
    if (c == 'c') {
      a->config = optarg;
    } else if (c == 'j' && with_task) {
      a->job = optarg;
    } else if (c == 't' && with_task) {
      if (!tf_daemon_parse_int(optarg, &a->task)) {
        snprintf(buf, sizeof buf, "--task: expected a task index >= 0, got '%s'", optarg);
        bad = buf;
      }
    } else if (c == 'l') {
      a->log_level = tf_log_parse_level(optarg);
      if (a->log_level < 0) {
        snprintf(buf, sizeof buf,
                 "--log-level: expected err|warning|notice|info|debug, got '%s'", optarg);
        bad = buf;
      }
    } else if (c == 'p') {
      a->pid_file = optarg;
    } else if (c == 'i' && with_task) {
      if (!tf_daemon_parse_instance(optarg, a->instance_job, sizeof a->instance_job,
                                    &a->task, buf, sizeof buf)) {
        bad = buf;
      }
      a->job = a->instance_job;
    } else if (c == 'm') {
      a->metrics_address = optarg;
    } else if (c == 'T') {
      a->tls_cert_key = optarg;
    } else if (c == 'h') {
      printf("usage: %s\n", usage);
      exit(0);
    } else {
      snprintf(buf, sizeof buf, "unknown or incomplete option '%s'", argv[optind - 1]);
      bad = buf;
    }
  }
  if (bad == NULL) {
    bad = missing(argc, argv, with_task, a, buf, sizeof buf);
  }
  if (bad != NULL) {
    fprintf(stderr, "%s: %s\nusage: %s\n", prog, bad, usage);
    return TF_EXIT_USAGE;
  }
  return 0;
}

/* ---- the stop's deadline ---------------------------------------------------------- */

/* Once the drain is over, stopping the metrics endpoint, freeing the
 * service and closing the loop must end within STOP_GRACE_MS. A teardown
 * that hangs (on a peer, a library, a bug) would leave a process that
 * was told to stop and says it drained: the watch names the phase it
 * hangs in and exits with TF_EXIT_FORCED. */
#define STOP_GRACE_MS 10000

typedef struct stop_watch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  const char *phase; /* a literal, under mu */
  const char *(*detail)(void); /* the service's own phase, or NULL */
  pthread_t th;
} stop_watch;

static void *stop_watch_main(void *arg) {
  stop_watch *w = arg;
  int64_t deadline = tf__now_ns() + STOP_GRACE_MS * 1000000LL;
  pthread_mutex_lock(&w->mu);
  for (int64_t now = tf__now_ns(); !w->done && now < deadline; now = tf__now_ns()) {
    tf__cond_wait_ms(&w->cv, &w->mu, (deadline - now + 999999) / 1000000);
  }
  bool stuck = !w->done;
  const char *phase = w->phase;
  pthread_mutex_unlock(&w->mu);
  if (stuck) {
    const char *detail = w->detail != NULL ? w->detail() : NULL;
    tf_log(LOG_ERR, "stopping: %s%s%s%s has not ended %d s after the drain; exiting "
           "without it", phase, detail ? " (" : "", detail ? detail : "", detail ? ")" : "",
           STOP_GRACE_MS / 1000);
    _exit(TF_EXIT_FORCED);
  }
  return NULL;
}

static void stop_watch_phase(stop_watch *w, const char *phase) {
  pthread_mutex_lock(&w->mu);
  w->phase = phase;
  pthread_mutex_unlock(&w->mu);
}

static void stop_metrics(tf_daemon *d);
static void close_all(uv_handle_t *h, void *arg);

/* After the loop: the metrics endpoint, the service and the loop's
 * handles go, within STOP_GRACE_MS. */
static void teardown(tf_daemon *d) {
  stop_watch w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
                  .phase = "stopping the metrics endpoint", .detail = d->free_phase};
  bool watched = pthread_create(&w.th, NULL, stop_watch_main, &w) == 0;
  stop_metrics(d);
  /* Free the service while the signal watchers still catch a second
   * SIGTERM; closing them restores the default action, so ignore the
   * signals right after. */
  stop_watch_phase(&w, "freeing the service");
  d->free(d->svc);
  stop_watch_phase(&w, "closing the event loop");
  uv_walk(&d->loop, close_all, NULL);
  uv_run(&d->loop, UV_RUN_DEFAULT);
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  uv_loop_close(&d->loop);
  if (watched) {
    pthread_mutex_lock(&w.mu);
    w.done = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(w.th, NULL);
  }
}

static void *drain_main(void *arg) {
  tf_daemon *d = arg;
  d->drain(d->svc, d->drain_ms);
  uv_async_send(&d->drained);
  return NULL;
}

/* The drain thread finished: leave the loop (the service is freed next). */
static void on_drained(uv_async_t *h) {
  tf_daemon *d = h->data;
  pthread_join(d->drain_thread, NULL);
  d->draining = false;
  tf_log(LOG_NOTICE, "drained in %.2f s", (double)(uv_now(&d->loop) - d->drain_t0) / 1e3);
  uv_stop(&d->loop);
}

static void on_signal(uv_signal_t *h, int signum) {
  tf_daemon *d = h->data;
  if (d->stopping && signum == SIGINT) {
    /* Ctrl-C twice. Nothing waits on the drain thread: leave now. */
    tf_log(LOG_NOTICE, "SIGINT again while draining: exiting at once");
    _exit(TF_EXIT_FORCED);
  }
  if (d->stopping) {
    /* One stop may come from several senders (Slurm's step signal and
     * the batch script, systemd and an operator); the drain has its own
     * deadline. */
    tf_log(LOG_NOTICE, "SIG%s again while draining: the drain goes on (SIGINT or SIGKILL "
           "to exit at once)", sigabbrev_np(signum));
    return;
  }
  d->stopping = true;
  if (d->spec != NULL) d->drain_ms = d->spec->drain_ms;
  tf_log(LOG_NOTICE, "received SIG%s: draining (up to %" PRId64 " ms)", sigabbrev_np(signum),
         d->drain_ms);
  tf_notify("STOPPING=1");
  uv_timer_stop(&d->tick_timer);
  d->drain_t0 = uv_now(&d->loop);
  if (pthread_create(&d->drain_thread, NULL, drain_main, d) == 0) {
    d->draining = true;
    return;
  }
  tf_log(LOG_WARNING, "cannot start a drain thread; draining on the loop");
  d->drain(d->svc, d->drain_ms);
  uv_stop(&d->loop);
}

static void on_tick(uv_timer_t *h);

/* SIGHUP: re-read the config, apply what can change while serving, say
 * what changed and what needs a restart. A config that no longer loads
 * changes nothing. */
static void on_hup(uv_signal_t *h, int signum) {
  tf_daemon *d = h->data;
  (void)signum;
  if (d->stopping || d->spec == NULL || d->config_path == NULL) {
    tf_log(LOG_NOTICE, "received SIGHUP%s: nothing to reload",
           d->stopping ? " while draining" : "");
    return;
  }
  tf_notify("RELOADING=1");
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *fresh = NULL;
  tf_task_role role;
  if (tf_cluster_spec_load(d->config_path, &fresh, &st) != TF_OK ||
      (d->role_from_env && tf_task_role_from_env(fresh, environ, &role, &st) != TF_OK)) {
    tf_cluster_spec_free(fresh);
    tf_log(LOG_ERR, "received SIGHUP: cannot reload: %s; the running configuration is kept",
           st.msg);
    tf_notify("READY=1");
    return;
  }
  char applied[1024], restart[512];
  int64_t hb = d->spec->heartbeat_ms;
  tf_cluster_spec_reload(d->spec, fresh, d->keep_log_level, applied, sizeof applied, restart,
                         sizeof restart);
  tf_cluster_spec_free(fresh);
  if (!d->keep_log_level) tf_log_set_level(d->spec->log_level);
  if (d->tick_is_heartbeat && d->spec->heartbeat_ms != hb) {
    uint64_t period = (uint64_t)d->spec->heartbeat_ms;
    uv_timer_start(&d->tick_timer, on_tick, period, period);
  }
  tf_log(LOG_NOTICE, "received SIGHUP: reloaded %s: %s", d->config_path,
         applied[0] != '\0' ? applied : "nothing to change");
  if (restart[0] != '\0') {
    tf_log(LOG_WARNING, "%s also changes %s: a restart applies them; until then the "
           "running values stay", d->config_path, restart);
  }
  tf_notify("READY=1");
}

static void on_tick(uv_timer_t *h) {
  tf_daemon *d = h->data;
  d->tick(d->svc);
}

static void on_watchdog(uv_timer_t *h) {
  (void)h;
  tf_notify("WATCHDOG=1");
}

static void close_all(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) {
    uv_close(h, NULL);
  }
}

/* Stops the /metrics server; logs when that was slow. */
static void stop_metrics(tf_daemon *d) {
  uint64_t t0 = uv_hrtime();
  tf_metrics_http_stop(d->metrics);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  if (ms >= 500) tf_log(LOG_INFO, "stopping: the metrics server took %" PRIu64 " ms", ms);
}

/* Writes our pid to path unless it names another live tf daemon. */
static int claim_pid_file(const char *path) {
  pid_t other = tf_pidfile_read(path);
  if (other > 0 && other != getpid() && tf_pid_alive(other) && tf_pid_runs(other, "tf")) {
    tf_log(LOG_ERR, "pid file %s names pid %ld, a running tf daemon: not starting a "
           "second one", path, (long)other);
    return -1;
  }
  tf_status st;
  tf_status_init(&st);
  if (tf_pidfile_write(path, getpid(), &st) != TF_OK) {
    tf_log(LOG_ERR, "%s", st.msg);
    return -1;
  }
  return 0;
}

int tf_daemon_run(tf_daemon *d) {
  tf_status mst;
  tf_status_init(&mst);
  if (d->spec != NULL && tf_metrics_http_start_daemon(d->spec, d->job, d->task,
                                                      d->metrics_address, &d->metrics,
                                                      &mst) != TF_OK) {
    tf_log(LOG_ERR, "cannot start: %s", mst.msg);
    d->free(d->svc);
    return 1;
  }
  int rc = uv_loop_init(&d->loop);
  if (rc != 0) {
    tf_log(LOG_ERR, "event loop: %s", uv_strerror(rc));
    tf_metrics_http_stop(d->metrics);
    d->free(d->svc);
    return 1;
  }
  if (d->pid_file != NULL && claim_pid_file(d->pid_file) != 0) {
    tf_metrics_http_stop(d->metrics);
    d->free(d->svc);
    uv_loop_close(&d->loop);
    return 1;
  }
  d->sig_term.data = d->sig_int.data = d->sig_hup.data = d->tick_timer.data = d;
  d->watchdog_timer.data = d;
  uv_signal_init(&d->loop, &d->sig_term);
  uv_signal_init(&d->loop, &d->sig_int);
  uv_signal_init(&d->loop, &d->sig_hup);
  uv_signal_start(&d->sig_term, on_signal, SIGTERM);
  uv_signal_start(&d->sig_int, on_signal, SIGINT);
  uv_signal_start(&d->sig_hup, on_hup, SIGHUP);
  uv_timer_init(&d->loop, &d->tick_timer);
  d->drained.data = d;
  uv_async_init(&d->loop, &d->drained, on_drained);
  uint64_t period = d->tick_ms > 0 ? (uint64_t)d->tick_ms : 1000;
  uv_timer_start(&d->tick_timer, on_tick, period, period);
  uint64_t wd_usec = tf_notify_watchdog_usec();
  uv_timer_init(&d->loop, &d->watchdog_timer);
  if (wd_usec > 0) {
    uint64_t ms = wd_usec / 2000 > 0 ? wd_usec / 2000 : 1;
    uv_timer_start(&d->watchdog_timer, on_watchdog, ms, ms);
    tf_log(LOG_INFO, "watchdog: pinging every %" PRIu64 " ms", ms);
  }
  char msg[400];
  snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s\nMAINPID=%ld", d->status, (long)getpid());
  int n = tf_notify(msg);
  if (n < 0) {
    tf_log(LOG_WARNING, "sd_notify READY=1 to $NOTIFY_SOCKET failed: %s", strerror(-n));
  }
  tf_log(LOG_NOTICE, "ready (pid %ld)%s", (long)getpid(),
         n > 0 ? "; sent READY=1 to $NOTIFY_SOCKET" : "");
  uv_run(&d->loop, UV_RUN_DEFAULT);
  teardown(d);
  if (d->pid_file != NULL && tf_pidfile_read(d->pid_file) == getpid()) {
    unlink(d->pid_file);
  }
  tf_log(LOG_NOTICE, "stopped");
  return 0;
}

void tf_daemon_tune_memory(void) {
  const char *keep = getenv("TF_DAEMON_KEEP_MMAP");
  if (keep != NULL && strcmp(keep, "1") == 0) return;
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

void tf_daemon_setup_log(void) { tf_log_set_timestamps(!tf_log_stderr_is_journal()); }

int tf_daemon_confine(const tf_cluster_spec *spec) {
  tf_status st;
  tf_status_init(&st);
  tf_fs_policy *p;
  if (tf_cluster_fs_policy(spec, &p, &st) != TF_OK) {
    tf_log(LOG_ERR, "config: %s", st.msg);
    return -1;
  }
  tf__fs_policy_install(p);
  return 0;
}

void tf_daemon_confine_note(const tf_cluster_spec *spec) {
  if (spec->n_data_dirs == 0 && spec->checkpoint_dir == NULL) {
    tf_log(LOG_NOTICE, "file access: %s sets neither data_dirs nor checkpoint_dir: "
           "requests may open no file", spec->path);
  } else {
    tf_log(LOG_INFO, "file access: requests read under data_dirs (%d) and checkpoint_dir, "
           "write under checkpoint_dir (%s)", spec->n_data_dirs,
           spec->checkpoint_dir ? spec->checkpoint_dir : "unset");
  }
}

tf_cluster_spec *tf_daemon_load_spec(const char *path) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *spec = NULL;
  if (tf_cluster_spec_load(path, &spec, &st) != TF_OK) {
    tf_log(LOG_ERR, "config: %s", st.msg);
    return NULL;
  }
  return spec;
}

/* What tf_daemon_auth_note logs once the daemon serves. */
static char auth_note[640];

int tf_daemon_setup_auth(const tf_cluster_spec *spec, const char *job, int task,
                         tf_auth **out) {
  *out = NULL;
  tf_status st;
  tf_status_init(&st);
  char warning[512];
  if (tf_cluster_check_exposure(spec, job, task, warning, sizeof warning, &st) != TF_OK ||
      tf_cluster_auth_daemon(spec, out, &st) != TF_OK) {
    tf_log(LOG_ERR, "cannot start: %s", st.msg);
    return TF_EXIT_CONFIG;
  }
  if (*out != NULL) {
    snprintf(auth_note, sizeof auth_note,
             "authentication on: %d key(s) from %s, requests within %lld ms%s%s",
             tf_auth_n_keys(*out), spec->path, (long long)tf_auth_window_ms(*out),
             warning[0] != '\0' ? "; " : "", warning);
  } else {
    snprintf(auth_note, sizeof auth_note, "%s", warning);
  }
  tf_auth_set_process(*out);
  return 0;
}

void tf_daemon_auth_note(void) {
  if (auth_note[0] != '\0') {
    tf_log(strncmp(auth_note, "authentication on", 17) == 0 ? LOG_INFO : LOG_WARNING, "%s",
           auth_note);
  }
}

int tf_daemon_setup_tls(const tf_cluster_spec *spec, const tf_daemon_args *a) {
  tf_status st;
  tf_status_init(&st);
  char expired[40];
  if (a->tls_cert_key != NULL && strcmp(spec->transport, "tls+tcp") != 0) {
    tf_log(LOG_ERR, "config: --tls-cert-key needs transport tls+tcp (%s has %s)",
           spec->path, spec->transport);
    return TF_EXIT_CONFIG;
  }
  if (tf_cluster_spec_use_tls(spec, false, a->tls_cert_key, expired, &st) != TF_OK) {
    tf_log(LOG_ERR, "config: %s", st.msg);
    return TF_EXIT_CONFIG;
  }
  if (expired[0] != '\0') {
    tf_log(LOG_WARNING, "TLS: this daemon's certificate expired on %s: peers will "
           "refuse it (make a new one: scripts/make-certs.sh)", expired);
  }
  return 0;
}
