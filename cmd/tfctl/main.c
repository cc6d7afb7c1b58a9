/* tfctl: the command-line client of a cluster (docs/operations.md).
 *   tfctl [-c CONFIG | -m ADDRESS] [--timeout-ms N] COMMAND ...
 * health, devices, run, graph and the job commands (submit, jobs, status,
 * step, pause, resume, cancel, logs, checkpoint, checkpoints, restore:
 * cmd/tfctl/ctl_jobs.h) talk to the
 * master (-m, or the spec's master task with -c); top watches every task
 * (cmd/tfctl/ctl_top.h); cluster up|down start
 * and stop a local development
 * cluster (cmd/tfctl/ctl_procs.h); inspect reads checkpoint files
 * (cmd/tfctl/ctl_inspect.h); help [COMMAND], COMMAND --help and
 * --version print help (cmd/tfctl/ctl_help.h). Exit 0 on success, 1 with
 * one line "tfctl: <reason>" on stderr when the command failed, 2 for
 * usage errors. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/runtime/cluster_auth.h"
#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/cluster_spec_tls.h"
#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_cluster.h"
#include "cmd/tfctl/ctl_graph.h"
#include "cmd/tfctl/ctl_help.h"
#include "cmd/tfctl/ctl_inspect.h"
#include "cmd/tfctl/ctl_jobs.h"
#include "cmd/tfctl/ctl_procs.h"
#include "cmd/tfctl/ctl_top.h"
#include "lib/runtime/placement.h"
#include "tf/serialize.h"
#include "tf/session.h"

enum { CTL_EXIT_FAIL = 1, CTL_EXIT_USAGE = 2 };

/* The command line. */
typedef struct ctl_args {
  const char *config, *master, *timeout_str, *out_dir, *format, *run_dir;
  const char *only; /* cluster --only TASK */
  const char *key_file; /* --key FILE, else $TF_KEY_FILE */
  tf_auth *auth;        /* the keyring requests are signed with */
  const char *cert, *ca; /* tls+tcp: --cert FILE, --ca FILE */
  const char *steps_str; /* -n */
  const char *interval_str; /* top --interval */
  const char *export_name, *export_file; /* inspect's --export NAME FILE */
  const char **pos, **feeds, **fetches, **targets;
  int n_pos, n_feeds, n_fetches, n_targets;
  bool placed, help, version, follow, once;
  int64_t timeout_ms; /* 0: unset */
  tf_cluster_spec *spec; /* loaded from config */
  char *master_url;
} ctl_args;

static int ctl_fail(int code, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p != '\0'; p++) {
    if (*p == '\n') {
      *p = ' ';
    }
  }
  fprintf(stderr, "tfctl: %s\n", msg);
  if (code == CTL_EXIT_USAGE) {
    fputs(tf_ctl_usage(), stderr);
  }
  return code;
}

/* ---- argument parsing ------------------------------------------------------ */

static const char *const value_opts[] = {"-c", "--config", "-m", "--master", "--timeout-ms",
                                         "--feed", "--fetch", "--target", "--out",
                                         "--format", "--run-dir", "-n", "--only",
                                         "--interval", "--key", "--cert", "--ca", NULL};

static bool takes_value(const char *name) {
  for (int i = 0; value_opts[i] != NULL; i++) {
    if (strcmp(name, value_opts[i]) == 0) {
      return true;
    }
  }
  return false;
}

static void add_str(const char ***list, int *n, const char *s) {
  *list = realloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[(*n)++] = s;
}

/* Stores option name's value v into a; false for an unknown option. */
static bool set_opt(ctl_args *a, const char *name, const char *v) {
  if (strcmp(name, "-c") == 0 || strcmp(name, "--config") == 0) {
    a->config = v;
  } else if (strcmp(name, "-m") == 0 || strcmp(name, "--master") == 0) {
    a->master = v;
  } else if (strcmp(name, "--timeout-ms") == 0) {
    a->timeout_str = v;
  } else if (strcmp(name, "--feed") == 0) {
    add_str(&a->feeds, &a->n_feeds, v);
  } else if (strcmp(name, "--fetch") == 0) {
    add_str(&a->fetches, &a->n_fetches, v);
  } else if (strcmp(name, "--target") == 0) {
    add_str(&a->targets, &a->n_targets, v);
  } else if (strcmp(name, "--out") == 0) {
    a->out_dir = v;
  } else if (strcmp(name, "--format") == 0) {
    a->format = v;
  } else if (strcmp(name, "--run-dir") == 0) {
    a->run_dir = v;
  } else if (strcmp(name, "--only") == 0) {
    a->only = v;
  } else if (strcmp(name, "--key") == 0) {
    a->key_file = v;
  } else if (strcmp(name, "--placed") == 0) {
    a->placed = true;
  } else if (strcmp(name, "-n") == 0) {
    a->steps_str = v;
  } else if (strcmp(name, "--follow") == 0) {
    a->follow = true;
  } else if (strcmp(name, "--interval") == 0) {
    a->interval_str = v;
  } else if (strcmp(name, "--once") == 0) {
    a->once = true;
  } else if (strcmp(name, "--cert") == 0) {
    a->cert = v;
  } else if (strcmp(name, "--ca") == 0) {
    a->ca = v;
  } else {
    return false;
  }
  return true;
}

/* Options may come anywhere ("--name value" or "--name=value"); the rest
 * are positionals. Returns 0 or CTL_EXIT_USAGE (reported). */
static int parse_args(int argc, char **argv, ctl_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      a->help = true;
      continue;
    }
    if (strcmp(arg, "--version") == 0) {
      a->version = true;
      continue;
    }
    if (strcmp(arg, "--export") == 0) { /* the one option with two values */
      if (i + 2 >= argc) {
        return ctl_fail(CTL_EXIT_USAGE, "--export needs a variable NAME and a FILE.npy");
      }
      a->export_name = argv[++i];
      a->export_file = argv[++i];
      continue;
    }
    if (arg[0] != '-' || arg[1] == '\0') {
      add_str(&a->pos, &a->n_pos, arg);
      continue;
    }
    char name[64];
    const char *eq = strchr(arg, '=');
    const char *v = NULL;
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    if (eq != NULL) {
      v = eq + 1;
    } else if (takes_value(name)) {
      if (i + 1 >= argc) {
        return ctl_fail(CTL_EXIT_USAGE, "option %s needs a value", name);
      }
      v = argv[++i];
    }
    if ((v != NULL) != takes_value(name) || !set_opt(a, name, v)) {
      return ctl_fail(CTL_EXIT_USAGE, "unknown option '%s'", arg);
    }
  }
  if (a->timeout_str != NULL) {
    char *end = NULL;
    long long t = strtoll(a->timeout_str, &end, 10);
    if (end == a->timeout_str || *end != '\0' || t <= 0) {
      return ctl_fail(CTL_EXIT_USAGE, "--timeout-ms: expected a positive number, got '%s'",
                      a->timeout_str);
    }
    a->timeout_ms = t;
  }
  if (a->config != NULL && a->master != NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "-c and -m both name the master: give one of them");
  }
  return 0;
}

/* Loads -c's spec into a->spec (once); a tls+tcp spec's CA and client
 * certificate (--cert overrides the spec's) become the TLS configuration
 * of every call. Returns 0 or 1 (reported). */
static int ctl_load_spec(ctl_args *a) {
  if (a->spec != NULL) {
    return 0;
  }
  tf_status st;
  tf_status_init(&st);
  if (tf_cluster_spec_load(a->config, &a->spec, &st) != TF_OK ||
      tf_cluster_spec_check_addressed(a->spec, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "%s%s", st.msg, a->spec != NULL ? "; "
                    "give tfctl the master's address with -m HOST:PORT" : "");
  }
  if (a->ca != NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "--ca goes with -m: with -c the CA is the spec's "
                    "tls.ca_file");
  }
  if ((a->cert != NULL && strcmp(a->spec->transport, "tls+tcp") != 0) ||
      tf_cluster_spec_use_tls(a->spec, true, a->cert, NULL, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.code != TF_OK ? st.msg :
                    "--cert needs a spec with transport tls+tcp");
  }
  return 0;
}

/* -m tls+tcp://...: the CA (--ca) and the client certificate (--cert). */
static int ctl_tls_for_master(ctl_args *a) {
  bool tls = strncmp(a->master_url, "tls+tcp://", 10) == 0;
  if (!tls && (a->ca != NULL || a->cert != NULL)) {
    return ctl_fail(CTL_EXIT_USAGE, "--ca and --cert go with a tls+tcp:// master");
  }
  if (!tls) {
    return 0;
  }
  if (a->ca == NULL || a->cert == NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "a tls+tcp:// master needs --ca FILE and --cert FILE "
                    "(or -c CONFIG with a tls: section)");
  }
  tf_status st;
  tf_status_init(&st);
  tf_tls_config *c = NULL;
  if (tf_tls_config_load(a->ca, a->cert, &c, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.msg);
  }
  tf_tls_set_default(c);
  tf_tls_config_free(c);
  return 0;
}

/* Signs this process's requests (tf_auth_set_process) with --key FILE,
 * else $TF_KEY_FILE, else the spec's client key (or its task key) when the
 * spec requires authentication. Returns 0 or 1 (reported). */
static int ctl_setup_auth(ctl_args *a) {
  if (a->auth != NULL) {
    return 0;
  }
  const char *file = a->key_file;
  if (file == NULL && getenv("TF_KEY_FILE") != NULL && getenv("TF_KEY_FILE")[0] != '\0') {
    file = getenv("TF_KEY_FILE");
  }
  tf_status st;
  tf_status_init(&st);
  if (tf_cluster_auth_client(a->spec, file, &a->auth, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.msg);
  }
  tf_auth_set_process(a->auth);
  return 0;
}

/* Resolves the master URL from -m or -c into a->master_url. */
static int ctl_resolve_master(ctl_args *a) {
  if (a->master != NULL) {
    bool has_scheme = strstr(a->master, "://") != NULL;
    size_t n = strlen(a->master) + 8;
    a->master_url = malloc(n);
    snprintf(a->master_url, n, "%s%s", has_scheme ? "" : "tcp://", a->master);
    int rc = ctl_tls_for_master(a);
    if (rc != 0) {
      return rc;
    }
  } else if (a->config != NULL) {
    if (ctl_load_spec(a) != 0) {
      return CTL_EXIT_FAIL;
    }
    a->master_url = tf_cluster_task_url(a->spec, "master", 0);
    if (a->master_url == NULL) {
      return ctl_fail(CTL_EXIT_FAIL, "%s has no master task (jobs.master)", a->config);
    }
  } else {
    return ctl_fail(CTL_EXIT_USAGE, "%s needs -c CONFIG or -m ADDRESS", a->pos[0]);
  }
  if (a->timeout_ms <= 0) {
    a->timeout_ms = a->spec != NULL && a->spec->rpc_timeout_ms > 0 ? a->spec->rpc_timeout_ms
                                                                   : 10000;
  }
  return ctl_setup_auth(a);
}

/* The job commands (cmd_job). */
static bool is_job_cmd(const char *cmd) {
  static const char *const cmds[] = {"submit", "jobs",   "status",      "step",
                                     "pause",  "resume", "cancel",      "logs",
                                     "checkpoint", "checkpoints", "restore"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    if (strcmp(cmd, cmds[i]) == 0) {
      return true;
    }
  }
  return false;
}

/* Usage error unless only the listed option groups were given (-n and
 * --follow are the job commands', which check them in cmd_job). */
static int only_opts(const ctl_args *a, bool run_opts, bool graph_opts, bool run_dir) {
  bool top = strcmp(a->pos[0], "top") == 0;
  if (!top && (a->interval_str != NULL || a->once)) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no %s (top does)", a->pos[0],
                    a->once ? "--once" : "--interval");
  }
  if (top && a->follow) {
    return ctl_fail(CTL_EXIT_USAGE, "top takes no --follow");
  }
  if (!is_job_cmd(a->pos[0]) && !top && (a->steps_str != NULL || a->follow)) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no %s", a->pos[0],
                    a->steps_str != NULL ? "-n" : "--follow");
  }
  if (!run_opts && (a->n_feeds || a->n_fetches || a->n_targets || a->out_dir)) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --feed/--fetch/--target/--out", a->pos[0]);
  }
  if (!graph_opts && (a->format || a->placed)) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --format/--placed", a->pos[0]);
  }
  if (!run_dir && a->run_dir) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --run-dir", a->pos[0]);
  }
  if (!run_dir && a->only) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --only (cluster up and down do)", a->pos[0]);
  }
  if (a->export_name != NULL && strcmp(a->pos[0], "inspect") != 0) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --export (inspect does)", a->pos[0]);
  }
  return 0;
}

/* ---- health and devices ---------------------------------------------------- */

static void print_task(const tf_ctl_task *t) {
  char inc[20] = "-";
  if (t->incarnation != 0) {
    snprintf(inc, sizeof inc, "%016" PRIx64, t->incarnation);
  }
  char age[24] = "-";
  if (t->last_ok_ms >= 0) {
    snprintf(age, sizeof age, "%.1fs", (double)t->last_ok_ms / 1000.0);
  }
  printf("%-8s %-3d %-26s %-4s %-16s %-7s ", t->job, t->task, t->url,
         t->up ? "up" : "down", inc, age);
  for (int i = 0; i < t->n_devices; i++) {
    printf("%s%s", i ? "," : "", t->devices[i]);
  }
  if (t->n_devices == 0) {
    printf("-");
  }
  if (t->jobs != NULL && t->jobs[0] != '\0') {
    printf("  jobs: %s", t->jobs);
  }
  if (!t->up && t->error != NULL && t->error[0] != '\0') {
    printf("  (%s)", t->error);
  }
  printf("\n");
}

typedef struct probe {
  char *url, *job; /* job and task as the spec has them */
  int task;
  int64_t timeout_ms;
  tf_ctl_task t;
  tf_status st;
  pthread_t th;
} probe;

static void *probe_main(void *arg) {
  probe *p = arg;
  tf_status_init(&p->st);
  tf_ctl_get_status(p->url, p->timeout_ms, &p->t, &p->st);
  return NULL;
}

/* Starts GetStatus to every non-master task of the spec, in parallel. */
static probe *probes_start(ctl_args *a, int *n_out) {
  const tf_cluster_spec *s = a->spec;
  int n = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    n += strcmp(s->jobs[j].name, "master") != 0 ? s->jobs[j].n_tasks : 0;
  }
  probe *ps = calloc((size_t)n + 1, sizeof *ps);
  int k = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    for (int t = 0; t < s->jobs[j].n_tasks && strcmp(s->jobs[j].name, "master") != 0; t++) {
      ps[k].url = tf_cluster_task_url(s, s->jobs[j].name, t);
      ps[k].timeout_ms = a->timeout_ms;
      ps[k].job = strdup(s->jobs[j].name);
      ps[k].task = t;
      pthread_create(&ps[k].th, NULL, probe_main, &ps[k]);
      k++;
    }
  }
  *n_out = n;
  return ps;
}

/* Joins the probes; with ts non-NULL moves their results to ts[1..n]
 * (the tasks' job and task from the spec, the error when down). */
static void probes_finish(probe *ps, int n, tf_ctl_task *ts) {
  for (int i = 0; i < n; i++) {
    pthread_join(ps[i].th, NULL);
    if (ts != NULL) {
      ts[i + 1] = ps[i].t;
      if (ts[i + 1].job == NULL) {
        ts[i + 1].job = strdup(ps[i].job);
        ts[i + 1].task = ps[i].task;
      }
      free(ts[i + 1].error);
      ts[i + 1].error = strdup(ps[i].st.msg);
    } else {
      tf_ctl_task_fini(&ps[i].t);
    }
    free(ps[i].job);
    free(ps[i].url);
  }
  free(ps);
}

static int cmd_health(ctl_args *a) {
  int rc = only_opts(a, false, false, false);
  if (rc != 0 || (rc = ctl_resolve_master(a)) != 0) {
    return rc;
  }
  tf_status st;
  tf_status_init(&st);
  tf_ctl_task *ts = NULL;
  int n = 0, n_probes = 0;
  /* With a spec, ask the tasks directly at the same time, in case the
   * master does not answer. */
  probe *ps = a->spec != NULL ? probes_start(a, &n_probes) : NULL;
  bool direct = false;
  if (tf_ctl_cluster_status(a->master_url, a->timeout_ms, &ts, &n, &st) == TF_OK) {
    /* Not needed: let the probes run out on their own (a dead task's
     * probe would wait its full timeout); tfctl exits right after, and
     * the global keeps their memory reachable until then. */
    static probe *abandoned;
    abandoned = ps;
    for (int i = 0; i < n_probes; i++) {
      pthread_detach(abandoned[i].th);
    }
  } else if (a->spec == NULL || (st.code != TF_DEADLINE_EXCEEDED && st.code != TF_UNAVAILABLE)) {
    probes_finish(ps, n_probes, NULL);
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.msg);
  } else {
    n = n_probes + 1;
    ts = calloc((size_t)n, sizeof *ts);
    ts[0] = (tf_ctl_task){.job = strdup("master"), .url = strdup(a->master_url),
                          .last_ok_ms = -1, .error = strdup(st.msg)};
    probes_finish(ps, n_probes, ts);
    direct = true;
  }
  char down[1024] = "";
  int n_down = 0;
  for (int i = 0; i < n; i++) {
    print_task(&ts[i]);
    if (!ts[i].up) {
      size_t l = strlen(down);
      snprintf(down + l, sizeof down - l, "%s/job:%s/task:%d", n_down ? ", " : "", ts[i].job,
               ts[i].task);
      n_down++;
    }
  }
  fflush(stdout);
  tf_ctl_tasks_free(ts, n);
  if (n_down > 0) {
    return ctl_fail(CTL_EXIT_FAIL, "%d of %d tasks down%s: %s", n_down, n,
                    direct ? " (master unreachable; asked the tasks directly)" : "", down);
  }
  return 0;
}

static int cmd_devices(ctl_args *a) {
  int rc = only_opts(a, false, false, false);
  if (rc != 0 || (rc = ctl_resolve_master(a)) != 0) {
    return rc;
  }
  tf_status st;
  tf_status_init(&st);
  tf_ctl_device *ds = NULL;
  int n = 0;
  if (tf_ctl_list_devices(a->master_url, a->timeout_ms, &ds, &n, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "ListDevices: %s", st.msg);
  }
  for (int i = 0; i < n; i++) {
    printf("%-44s %-4s %016" PRIx64 " %s\n", ds[i].name, ds[i].type, ds[i].incarnation,
           ds[i].url);
  }
  tf_ctl_devices_free(ds, n);
  return 0;
}

/* A whole number from lo to hi in s for option name; 0 or CTL_EXIT_USAGE. */
static int parse_range(const char *name, const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi) {
    return ctl_fail(CTL_EXIT_USAGE, "%s: expected a number from %lld to %lld, got '%s'",
                    name, (long long)lo, (long long)hi, s);
  }
  *out = v;
  return 0;
}

/* tfctl top [--interval MS] [-n N] [--once]: redraws in place on a
 * terminal unless a frame count is given. */
static int cmd_top(ctl_args *a) {
  int64_t interval_ms = 1000, frames = 0;
  int rc = only_opts(a, false, false, false);
  if (rc == 0 && a->n_pos > 1) {
    rc = ctl_fail(CTL_EXIT_USAGE, "top takes no arguments, got '%s'", a->pos[1]);
  }
  if (rc == 0 && a->once && a->steps_str != NULL) {
    rc = ctl_fail(CTL_EXIT_USAGE, "top: give --once or -n N, not both");
  }
  if (rc == 0 && a->interval_str != NULL) {
    rc = parse_range("--interval", a->interval_str, 10, 86400000, &interval_ms);
  }
  if (rc == 0 && a->steps_str != NULL) {
    rc = parse_range("-n", a->steps_str, 1, 1000000000, &frames);
  }
  if (rc != 0 || (rc = ctl_resolve_master(a)) != 0) {
    return rc;
  }
  frames = a->once ? 1 : frames;
  tf_ctl_top_opts o = {.master_url = a->master_url, .timeout_ms = a->timeout_ms,
                       .interval_ms = interval_ms, .frames = frames,
                       .redraw = frames == 0 && isatty(STDOUT_FILENO) == 1,
                       .out = stdout, .err = stderr};
  return tf_ctl_cmd_top(&o);
}

/* ---- run, graph, cluster ----------------------------------------------------- */

/* Loads GRAPH (the one positional after the command). */
static int load_graph(ctl_args *a, tf_graph **out) {
  if (a->n_pos != 2) {
    return ctl_fail(CTL_EXIT_USAGE, "%s needs exactly one GRAPH file (.tfg or .yaml)",
                    a->pos[0]);
  }
  tf_status st;
  tf_status_init(&st);
  *out = tf_graph_new();
  if (tf_graph_load(*out, a->pos[1], &st) != TF_OK) {
    tf_graph_free(*out);
    *out = NULL;
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.msg);
  }
  return 0;
}

/* Loads every --feed NAME=FILE.npy; names point into the arguments. */
static int load_feeds(ctl_args *a, char **names, tf_tensor **vals) {
  tf_status st;
  tf_status_init(&st);
  for (int i = 0; i < a->n_feeds; i++) {
    const char *eq = strchr(a->feeds[i], '=');
    if (eq == NULL || eq == a->feeds[i] || eq[1] == '\0') {
      return ctl_fail(CTL_EXIT_USAGE, "--feed: expected NAME=FILE.npy, got '%s'", a->feeds[i]);
    }
    names[i] = strndup(a->feeds[i], (size_t)(eq - a->feeds[i]));
    if (tf_tensor_load_npy(eq + 1, &vals[i], &st) != TF_OK) {
      return ctl_fail(CTL_EXIT_FAIL, "--feed %s: %s", names[i], st.msg);
    }
  }
  return 0;
}

/* With --out: makes DIR and checks it is writable, before the step. */
static int check_out_dir(const ctl_args *a) {
  tf_status st;
  tf_status_init(&st);
  if (a->out_dir == NULL) {
    return 0;
  }
  if (tf_ctl_mkdirs(a->out_dir, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "--out: %s", st.msg);
  }
  if (access(a->out_dir, W_OK | X_OK) != 0) {
    return ctl_fail(CTL_EXIT_FAIL, "--out: cannot write in %s: %s", a->out_dir,
                    strerror(errno));
  }
  return 0;
}

/* Prints each fetch and, with --out, saves it as DIR/<name>.npy. */
static int report_fetches(ctl_args *a, tf_tensor **vals) {
  tf_status st;
  tf_status_init(&st);
  for (int i = 0; i < a->n_fetches; i++) {
    char line[1024], file[512], path[4096];
    printf("%s: %s\n", a->fetches[i], tf_ctl_tensor_summary(vals[i], 10, line, sizeof line));
    if (a->out_dir == NULL) {
      continue;
    }
    snprintf(path, sizeof path, "%s/%s", a->out_dir,
             tf_ctl_fetch_file_name(a->fetches[i], file, sizeof file));
    if (tf_tensor_save_npy(vals[i], path, &st) != TF_OK) {
      return ctl_fail(CTL_EXIT_FAIL, "--out: %s", st.msg);
    }
  }
  return 0;
}

/* Waiting for CloseSession after a step's outcome is housekeeping: a
 * healthy master answers in milliseconds; one that is gone, or that waits
 * for a task that died, ends the session on its own. */
#define CTL_CLOSE_WAIT_MS 500

static void *close_main(void *arg) {
  tf_session_close(arg, NULL);
  return NULL;
}

/* Closes s, waiting at most CTL_CLOSE_WAIT_MS for the master's answer,
 * then frees s and g. When the master has not answered by then, tfctl
 * exits without it: the close goes on in its thread and s and g (which s
 * may still read) stay allocated until the process ends. */
static void close_session(tf_session *s, tf_graph *g) {
  static tf_session *abandoned_s;
  static tf_graph *abandoned_g;
  pthread_t th;
  if (s != NULL && pthread_create(&th, NULL, close_main, s) == 0) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + CTL_CLOSE_WAIT_MS * 1000000LL;
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    if (pthread_timedjoin_np(th, NULL, &until) != 0) {
      pthread_detach(th);
      abandoned_s = s; /* reachable until exit */
      abandoned_g = g;
      return;
    }
  }
  tf_session_free(s);
  tf_graph_free(g);
  (void)abandoned_s;
  (void)abandoned_g;
}

/* Opens a session on the master and runs the step; reports the fetches
 * or the error. */
static int run_step(ctl_args *a, tf_graph *g, char **feed_names, tf_tensor **feed_vals,
                    tf_tensor **fetch_vals, tf_session **s) {
  tf_status st;
  tf_status_init(&st);
  /* CreateSession may wait registration_ms on the master for tasks to
   * register: the control calls get that on top of the deadline. */
  int64_t reg_ms = a->spec != NULL ? a->spec->registration_timeout_ms : 10000;
  tf_session_options so = {.target = a->master_url, .rpc_timeout_ms = a->timeout_ms + reg_ms};
  *s = tf_session_new(g, &so, &st);
  if (*s == NULL) {
    return ctl_fail(CTL_EXIT_FAIL, "%s", st.msg); /* it names the master */
  }
  tf_run_options ro = {.timeout_ms = a->timeout_ms}; /* --timeout-ms, else rpc_ms */
  if (tf_session_run(*s, &ro, (const char *const *)feed_names, feed_vals, a->n_feeds,
                     a->fetches, fetch_vals, a->n_fetches, a->targets, a->n_targets, NULL,
                     &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "run: %s", st.msg);
  }
  int rc = report_fetches(a, fetch_vals);
  if (rc == 0 && a->n_fetches == 0) {
    printf("ran");
    for (int i = 0; i < a->n_targets; i++) printf("%s %s", i ? "," : "", a->targets[i]);
    printf(": ok\n");
  }
  fflush(stdout);
  return rc;
}

static int cmd_run(ctl_args *a) {
  if (a->n_fetches == 0 && a->n_targets == 0) {
    return ctl_fail(CTL_EXIT_USAGE, "run needs at least one --fetch or --target");
  }
  tf_graph *g = NULL;
  int rc = check_out_dir(a);
  if (rc != 0 || (rc = load_graph(a, &g)) != 0) {
    return rc;
  }
  if ((rc = ctl_resolve_master(a)) != 0) {
    tf_graph_free(g);
    return rc;
  }
  char **feed_names = calloc((size_t)a->n_feeds + 1, sizeof *feed_names);
  tf_tensor **feed_vals = calloc((size_t)a->n_feeds + 1, sizeof *feed_vals);
  tf_tensor **fetch_vals = calloc((size_t)a->n_fetches + 1, sizeof *fetch_vals);
  tf_session *s = NULL;
  rc = load_feeds(a, feed_names, feed_vals);
  if (rc == 0) {
    rc = run_step(a, g, feed_names, feed_vals, fetch_vals, &s);
  }
  close_session(s, g);
  for (int i = 0; i < a->n_feeds; i++) {
    free(feed_names[i]);
    if (feed_vals[i] != NULL) {
      tf_tensor_unref(feed_vals[i]);
    }
  }
  for (int i = 0; i < a->n_fetches; i++) {
    if (fetch_vals[i] != NULL) {
      tf_tensor_unref(fetch_vals[i]);
    }
  }
  free(feed_names);
  free(feed_vals);
  free(fetch_vals);
  return rc;
}

/* Places g on the master's devices: devices[i] for node i (borrowed from
 * *ds, which the caller frees). */
static int place_on_cluster(ctl_args *a, const tf_graph *g, tf_ctl_device **ds, int *n_ds,
                            const char ***devices) {
  tf_status st;
  tf_status_init(&st);
  int rc = ctl_resolve_master(a);
  if (rc != 0) {
    return rc;
  }
  if (tf_ctl_list_devices(a->master_url, a->timeout_ms, ds, n_ds, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "ListDevices: %s", st.msg);
  }
  tf_place_device *pd = calloc((size_t)*n_ds + 1, sizeof *pd);
  for (int i = 0; i < *n_ds; i++) {
    pd[i] = (tf_place_device){(*ds)[i].name, (*ds)[i].type};
  }
  int n = tf_graph_num_nodes(g);
  int *idx = calloc((size_t)n + 1, sizeof *idx);
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps"};
  if (tf_place(g, pd, *n_ds, &po, idx, &st) != TF_OK) {
    rc = ctl_fail(CTL_EXIT_FAIL, "placement: %s", st.msg);
  } else {
    *devices = calloc((size_t)n + 1, sizeof **devices);
    for (int i = 0; i < n; i++) {
      (*devices)[i] = (*ds)[idx[i]].name;
    }
  }
  free(pd);
  free(idx);
  return rc;
}

static int cmd_graph(ctl_args *a) {
  const char *format = a->format != NULL ? a->format : "yaml";
  if (strcmp(format, "yaml") != 0 && strcmp(format, "dot") != 0) {
    return ctl_fail(CTL_EXIT_USAGE, "--format: expected yaml or dot, got '%s'", format);
  }
  tf_graph *g = NULL;
  int rc = load_graph(a, &g);
  tf_ctl_device *ds = NULL;
  int n_ds = 0;
  const char **devices = NULL;
  if (rc == 0 && a->placed) {
    rc = place_on_cluster(a, g, &ds, &n_ds, &devices);
  }
  if (rc == 0 && strcmp(format, "dot") == 0) {
    char *text = tf_ctl_graph_dot(g, devices);
    fputs(text, stdout);
    free(text);
  } else if (rc == 0) {
    tf_status st;
    tf_status_init(&st);
    char *text = NULL;
    if (tf_ctl_graph_yaml(g, devices, &text, &st) != TF_OK) {
      rc = ctl_fail(CTL_EXIT_FAIL, "%s", st.msg);
    } else {
      fputs(text, stdout);
    }
    free(text);
  }
  free(devices);
  tf_ctl_devices_free(ds, n_ds);
  tf_graph_free(g);
  return rc;
}

/* cluster up: the spec's task key is made when it does not exist yet (a
 * new local cluster), and said so. Returns 0 or 1 (reported). */
static int ctl_make_key(ctl_args *a) {
  const char *file = a->spec->auth_mode == TF_CLUSTER_AUTH_KEY ? a->spec->auth_key_file : NULL;
  if (file == NULL || access(file, F_OK) == 0) {
    return 0;
  }
  tf_status st;
  tf_status_init(&st);
  char *dir = strdup(file);
  char *slash = strrchr(dir, '/');
  if (slash != NULL && slash != dir) {
    *slash = '\0';
    tf_ctl_mkdirs(dir, &st);
  }
  free(dir);
  if (st.code != TF_OK || tf_auth_key_file_generate(file, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "cluster up: %s", st.msg);
  }
  printf("generated the cluster key %s (mode 0600)\n", file);
  return 0;
}

/* keygen FILE: a new random key, mode 0600; never overwrites. */
static int cmd_keygen(ctl_args *a) {
  if (a->n_pos != 2) {
    return ctl_fail(CTL_EXIT_USAGE, "keygen needs one FILE");
  }
  tf_status st;
  tf_status_init(&st);
  if (tf_auth_key_file_generate(a->pos[1], &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "keygen: %s", st.msg);
  }
  printf("wrote a new key to %s (mode 0600)\n", a->pos[1]);
  return 0;
}

/* cluster up|down [--only TASK] (CONFIG as -c or the last positional),
 * cluster restart TASK: down and up again for one task. */
static int cmd_cluster(ctl_args *a) {
  const char *verb = a->n_pos >= 2 ? a->pos[1] : "";
  bool up = strcmp(verb, "up") == 0, restart = strcmp(verb, "restart") == 0;
  int max_pos = restart ? 4 : 3;
  if (a->n_pos < (restart ? 3 : 2) || a->n_pos > max_pos ||
      (!up && !restart && strcmp(verb, "down") != 0)) {
    return ctl_fail(CTL_EXIT_USAGE, "expected 'cluster up', 'cluster down' or "
                    "'cluster restart TASK'");
  }
  const char *only = restart ? a->pos[a->n_pos - 1] : a->only;
  if (restart && a->only != NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "cluster restart takes its TASK, not --only");
  }
  if (a->n_pos == max_pos && a->config == NULL) {
    a->config = a->pos[2]; /* "tfctl cluster up conf/local.yaml" */
  }
  if (a->config == NULL || (a->n_pos == max_pos && a->config != a->pos[2])) {
    return ctl_fail(CTL_EXIT_USAGE, "cluster %s needs one CONFIG (-c CONFIG or CONFIG)", verb);
  }
  if (a->master != NULL || (!up && !restart && a->timeout_str != NULL)) {
    return ctl_fail(CTL_EXIT_USAGE, "cluster %s takes no %s", verb,
                    a->master != NULL ? "-m" : "--timeout-ms");
  }
  int rc = ctl_load_spec(a);
  if (rc != 0 || (up && (rc = ctl_make_key(a)) != 0) || (rc = ctl_setup_auth(a)) != 0) {
    return rc;
  }
  tf_ctl_cluster_opts o = {.spec = a->spec, .config_path = a->config, .run_dir = a->run_dir,
                           .timeout_ms = a->timeout_ms, .out = stdout};
  tf_status st;
  tf_status_init(&st);
  char job[64];
  if (only != NULL &&
      tf_ctl_parse_task(a->spec, only, job, sizeof job, &o.only_task, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_USAGE, "cluster %s: %s", verb, st.msg);
  }
  o.only_job = only != NULL ? job : NULL;
  char *details = NULL;
  tf_code code = up ? tf_ctl_cluster_up(&o, &details, &st) : tf_ctl_cluster_down(&o, &st);
  if (restart && code == TF_OK) {
    code = tf_ctl_cluster_up(&o, &details, &st);
  }
  fflush(stdout);
  if (code != TF_OK) {
    rc = ctl_fail(CTL_EXIT_FAIL, "cluster %s: %s", verb, st.msg);
    if (details != NULL && details[0] != '\0') {
      fprintf(stderr, "%s", details);
    }
  }
  free(details);
  return rc;
}

/* ---- inspect --------------------------------------------------------------- */

/* tfctl inspect CHECKPOINT [--export NAME FILE.npy]: files only, no master. */
static int cmd_inspect(ctl_args *a) {
  if (a->n_pos != 2) {
    return ctl_fail(CTL_EXIT_USAGE, "inspect needs one CHECKPOINT (a ckpt-<step> directory, "
                    "a job's checkpoint directory or a .shard file)");
  }
  if (a->config != NULL || a->master != NULL || a->timeout_str != NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "inspect reads files: it takes no -c, -m or --timeout-ms");
  }
  tf_ctl_inspect_opts o = {.path = a->pos[1], .export_name = a->export_name,
                           .export_file = a->export_file, .out = stdout, .err = stderr};
  tf_status st;
  tf_status_init(&st);
  if (tf_ctl_inspect(&o, &st) != TF_OK) {
    return ctl_fail(CTL_EXIT_FAIL, "inspect: %s: %s", tf_code_name(st.code), st.msg);
  }
  return 0;
}

/* ---- jobs ------------------------------------------------------------------ */

/* The usage of a job command: its positionals, -n and --follow; *steps
 * gets step's -n (default 1). Returns 0 or CTL_EXIT_USAGE (reported). */
static int job_usage(const ctl_args *a, int64_t *steps) {
  const char *cmd = a->pos[0];
  bool step = strcmp(cmd, "step") == 0;
  if (a->steps_str != NULL && !step) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no -n (only step does)", cmd);
  }
  if (a->follow && strcmp(cmd, "status") != 0 && strcmp(cmd, "logs") != 0) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes no --follow (status and logs do)", cmd);
  }
  if (strcmp(cmd, "jobs") == 0 && a->n_pos > 1) {
    return ctl_fail(CTL_EXIT_USAGE, "jobs takes no arguments, got '%s'", a->pos[1]);
  }
  const char *what = strcmp(cmd, "submit") == 0 ? "a JOB.yaml file" : "a JOB id";
  if (strcmp(cmd, "jobs") != 0 && a->n_pos < 2) {
    return ctl_fail(CTL_EXIT_USAGE, "%s needs %s", cmd, what);
  }
  if (strcmp(cmd, "restore") == 0 && a->n_pos > 3) {
    return ctl_fail(CTL_EXIT_USAGE, "restore takes a JOB id and at most one CHECKPOINT, "
                    "got also '%s'", a->pos[3]);
  }
  if (a->n_pos > 2 && strcmp(cmd, "restore") != 0) {
    return ctl_fail(CTL_EXIT_USAGE, "%s takes one argument (%s), got also '%s'", cmd, what,
                    a->pos[2]);
  }
  *steps = step ? 1 : 0;
  if (step && a->steps_str != NULL) {
    char *end = NULL;
    errno = 0;
    long long n = strtoll(a->steps_str, &end, 10);
    if (end == a->steps_str || *end != '\0' || errno != 0 || n < 1 || n > INT32_MAX) {
      return ctl_fail(CTL_EXIT_USAGE, "-n: expected a number of steps from 1 to %d, got '%s'",
                      INT32_MAX, a->steps_str);
    }
    *steps = n;
  }
  return 0;
}

static int cmd_job(ctl_args *a) {
  int64_t steps = 0;
  int rc = only_opts(a, false, false, false);
  if (rc != 0 || (rc = job_usage(a, &steps)) != 0 || (rc = ctl_resolve_master(a)) != 0) {
    return rc;
  }
  tf_ctl_jobs_opts o = {.master_url = a->master_url, .timeout_ms = a->timeout_ms,
                        .out = stdout, .err = stderr, .tty = isatty(STDOUT_FILENO) == 1};
  const char *cmd = a->pos[0], *arg = a->n_pos > 1 ? a->pos[1] : NULL;
  if (strcmp(cmd, "submit") == 0) {
    return tf_ctl_cmd_submit(&o, arg);
  }
  if (strcmp(cmd, "jobs") == 0) {
    return tf_ctl_cmd_jobs(&o);
  }
  if (strcmp(cmd, "status") == 0) {
    return tf_ctl_cmd_status(&o, arg, a->follow);
  }
  if (strcmp(cmd, "logs") == 0) {
    return tf_ctl_cmd_logs(&o, arg, a->follow);
  }
  if (strcmp(cmd, "checkpoint") == 0) {
    return tf_ctl_cmd_checkpoint(&o, arg);
  }
  if (strcmp(cmd, "checkpoints") == 0) {
    return tf_ctl_cmd_checkpoints(&o, arg);
  }
  if (strcmp(cmd, "restore") == 0) {
    return tf_ctl_cmd_restore(&o, arg, a->n_pos > 2 ? a->pos[2] : NULL);
  }
  return tf_ctl_cmd_control(&o, arg, cmd, steps); /* step, pause, resume, cancel */
}

/* tfctl --help, tfctl help [COMMAND], tfctl COMMAND --help. */
static int cmd_help(const ctl_args *a) {
  int first = a->help ? 0 : 1; /* COMMAND --help, else help [COMMAND] */
  if (a->n_pos > first + 1 && !(a->n_pos == first + 2 && strcmp(a->pos[first], "cluster") == 0)) {
    return ctl_fail(CTL_EXIT_USAGE, "help takes one COMMAND");
  }
  const char *topic = a->n_pos > first ? a->pos[first] : NULL;
  const char *text = tf_ctl_help_text(topic);
  if (text == NULL) {
    return ctl_fail(CTL_EXIT_USAGE, "no such command '%s'", topic);
  }
  fputs(text, stdout);
  return 0;
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv) {
  ctl_args a = {0};
  int rc = parse_args(argc, argv, &a);
  const char *cmd = a.n_pos > 0 ? a.pos[0] : "";
  if (rc != 0) {
    /* reported */
  } else if (a.version) {
    tf_ctl_print_version(stdout);
  } else if (a.help || strcmp(cmd, "help") == 0) {
    rc = cmd_help(&a);
  } else if (a.n_pos == 0) {
    rc = ctl_fail(CTL_EXIT_USAGE, "missing COMMAND");
  } else if (strcmp(cmd, "health") == 0 || strcmp(cmd, "devices") == 0) {
    rc = a.n_pos > 1 ? ctl_fail(CTL_EXIT_USAGE, "%s takes no arguments", cmd)
         : cmd[0] == 'h' ? cmd_health(&a)
                         : cmd_devices(&a);
  } else if (strcmp(cmd, "top") == 0) {
    rc = cmd_top(&a);
  } else if (strcmp(cmd, "run") == 0) {
    rc = (rc = only_opts(&a, true, false, false)) != 0 ? rc : cmd_run(&a);
  } else if (strcmp(cmd, "graph") == 0) {
    rc = (rc = only_opts(&a, false, true, false)) != 0 ? rc : cmd_graph(&a);
  } else if (strcmp(cmd, "cluster") == 0) {
    rc = (rc = only_opts(&a, false, false, true)) != 0 ? rc : cmd_cluster(&a);
  } else if (strcmp(cmd, "inspect") == 0) {
    rc = (rc = only_opts(&a, false, false, false)) != 0 ? rc : cmd_inspect(&a);
  } else if (strcmp(cmd, "keygen") == 0) {
    rc = (rc = only_opts(&a, false, false, false)) != 0 ? rc : cmd_keygen(&a);
  } else if (is_job_cmd(cmd)) {
    rc = cmd_job(&a);
  } else {
    rc = ctl_fail(CTL_EXIT_USAGE, "unknown command '%s'", cmd);
  }
  tf_cluster_spec_free(a.spec);
  tf_auth_set_process(NULL);
  tf_auth_free(a.auth);
  free(a.master_url);
  free(a.pos);
  free(a.feeds);
  free(a.fetches);
  free(a.targets);
  return rc;
}
