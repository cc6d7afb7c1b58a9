/* cluster_spec.c: reads the cluster spec YAML (schema: cluster_spec.h)
 * with libyaml's document loader, checks every field against its type and
 * range, and fills a tf_cluster_spec with the defaults for what is left
 * out. Every error names file:line:column of the offending node, the
 * field's path ("jobs.worker[1]", "timeouts.rpc_ms") and what was
 * expected. Addresses are checked by cluster_spec_addr.c, which also says
 * which ones are one endpoint: two tasks at one are refused. */
#include "lib/runtime/cluster_spec.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/util.h"
#include "lib/runtime/cluster_spec_addr.h"
#include "lib/runtime/cluster_spec_confine.h"
#include "lib/runtime/log.h"
#include "lib/runtime/spec_yaml.h"

#define MS_MAX 2147483647LL /* timeouts fit an int32 (NNG durations) */
#define THREADS_MAX 1024
#define MESSAGE_MB_MAX 1048576LL
#define TASKS_MAX 65536 /* a job given as a task count */
/* Resolving the tasks' host names, all of them together, for the check
 * that no two tasks share an address. */
#define RESOLVE_MS 2000

typedef struct ctx {
  yaml_document_t *doc;
  const char *file;
  tf_status *st;
  tf_cluster_spec *s;
  const yaml_node_t **task_nodes; /* every task's address, in order */
  int n_task_nodes;
  tf__spec *y; /* the document as spec_yaml.h sees it */
} ctx;

__attribute__((format(printf, 4, 5))) static tf_code
err(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...) {
  char msg[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(c->st, TF_INVALID_ARGUMENT, "%s:%zu:%zu: %s%s%s",
                       c->file, n->start_mark.line + 1,
                       n->start_mark.column + 1, field ? field : "",
                       field ? ": " : "", msg);
}

static yaml_node_t *node_at(ctx *c, int index) {
  return yaml_document_get_node(c->doc, index);
}

/* A scalar's text, which must hold no NUL character. */
static tf_code text_of(ctx *c, const yaml_node_t *n, const char *field,
                       const char *expected, const char **out) {
  char b[80];
  if (n->type != YAML_SCALAR_NODE || tf__spec_is_null(n)) {
    return err(c, n, field, "expected %s, got %s", expected, tf__spec_shown(n, b));
  }
  const char *v = (const char *)n->data.scalar.value;
  if (strlen(v) != n->data.scalar.length) {
    return err(c, n, field, "expected %s, got text with a NUL character",
               expected);
  }
  *out = v;
  return TF_OK;
}

/* A decimal integer in lo..hi. */
static tf_code int_of(ctx *c, const yaml_node_t *n, const char *field,
                      long long lo, long long hi, const char *unit,
                      int64_t *out) {
  char b[80];
  const char *v = NULL;
  bool ok = n->type == YAML_SCALAR_NODE && !tf__spec_is_null(n);
  if (ok) {
    v = (const char *)n->data.scalar.value;
    const char *d = v + (v[0] == '-' || v[0] == '+');
    /* all of the scalar: "5\0junk" (a NUL escaped in quotes) is no 5 */
    ok = *d != '\0' && strspn(d, "0123456789") == strlen(d) &&
         strlen(d) <= 18 && strlen(v) == n->data.scalar.length;
  }
  long long x = ok ? strtoll(v, NULL, 10) : 0;
  if (!ok || x < lo || x > hi) {
    return err(c, n, field, "expected an integer in %lld..%lld%s, got %s", lo,
               hi, unit, tf__spec_shown(n, b));
  }
  *out = x;
  return TF_OK;
}

/* Picks the values of the named keys out of mapping m (null: all absent).
 * where names the mapping in errors ("'timeouts'", "the top level"). */
static tf_code fields(ctx *c, const yaml_node_t *m, const char *field,
                      const char *where, const char *const *names, int count,
                      yaml_node_t **out) {
  char b[80];
  for (int k = 0; k < count; k++) {
    out[k] = NULL;
  }
  if (tf__spec_is_null(m)) {
    return TF_OK;
  }
  if (m->type != YAML_MAPPING_NODE) {
    return err(c, m, field, "expected a mapping, got %s", tf__spec_shown(m, b));
  }
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
       p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *key = node_at(c, p->key);
    const char *name = "";
    TF_TRY(text_of(c, key, field, "a key name", &name));
    int k = 0;
    while (k < count && strcmp(names[k], name) != 0) {
      k++;
    }
    if (k == count) {
      char list[256] = "";
      for (int i = 0; i < count; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
      }
      return err(c, key, NULL, "unknown key %s in %s (expected %s)",
                 tf__spec_shown(key, b), where, list);
    }
    if (out[k] != NULL) {
      return err(c, key, NULL, "key '%s' appears twice in %s", name, where);
    }
    out[k] = node_at(c, p->value);
  }
  return TF_OK;
}

/* ---- jobs ---------------------------------------------------------------- */

static tf_code job_name(ctx *c, const yaml_node_t *key, const char **out) {
  TF_TRY(text_of(c, key, "jobs", "a job name", out));
  size_t n = strlen(*out);
  if (n == 0 || n > 63 ||
      strspn(*out, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789_-") != n) {
    return err(c, key, "jobs",
               "job name '%.80s' must be 1..63 characters of [A-Za-z0-9_-]",
               *out);
  }
  for (int j = 0; j < c->s->n_jobs; j++) {
    if (strcmp(c->s->jobs[j].name, *out) == 0) {
      return err(c, key, "jobs", "job '%s' appears twice", *out);
    }
  }
  return TF_OK;
}

/* Checks one address (check_distinct compares them all later). */
static tf_code task_addr(ctx *c, const yaml_node_t *n, const char *field,
                         const char **out) {
  const char *transport = c->s->transport;
  TF_TRY(text_of(c, n, field, tf__cluster_addr_expected(transport), out));
  char why[256];
  if (!tf__cluster_addr_check(transport, *out, why, sizeof why)) {
    return err(c, n, field, "%s", why);
  }
  return TF_OK;
}

/* A job given as a task count ("worker: 2"): no addresses yet. */
static tf_code job_count(ctx *c, const char *name, const yaml_node_t *v) {
  char field[96];
  int64_t n;
  snprintf(field, sizeof field, "jobs.%s", name);
  TF_TRY(int_of(c, v, field, 1, TASKS_MAX, " (a task count)", &n));
  tf_cluster_job *job = &c->s->jobs[c->s->n_jobs++];
  job->name = tf__xstrdup(name);
  job->n_tasks = (int)n;
  c->s->counts = true;
  return TF_OK;
}

/* A job's tasks: a sequence of addresses, one address as a scalar, or a
 * task count (job_count). */
static tf_code job_tasks(ctx *c, const char *name, const yaml_node_t *v) {
  char field[96], b[80];
  tf_cluster_job *job = &c->s->jobs[c->s->n_jobs];
  snprintf(field, sizeof field, "jobs.%s", name);
  int n = v->type == YAML_SEQUENCE_NODE
              ? (int)(v->data.sequence.items.top - v->data.sequence.items.start)
              : 1;
  if (tf__spec_is_null(v) || n == 0) {
    return err(c, v, field, "a job needs at least one task, got none");
  }
  if (v->type == YAML_MAPPING_NODE) {
    return err(c, v, field, "expected a list of task addresses, got %s",
               tf__spec_shown(v, b));
  }
  bool scalar = v->type == YAML_SCALAR_NODE;
  if (scalar && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
      strspn((const char *)v->data.scalar.value, "0123456789") ==
          v->data.scalar.length) {
    return job_count(c, name, v);
  }
  job->name = tf__xstrdup(name);
  job->addrs = tf__xcalloc((size_t)n, sizeof *job->addrs);
  c->task_nodes = tf__xrealloc(c->task_nodes, (size_t)(c->n_task_nodes + n) *
                                                  sizeof *c->task_nodes);
  c->s->n_jobs++; /* owned from here on, even if a task is bad */
  for (int t = 0; t < n; t++) {
    const yaml_node_t *a =
        scalar ? v : node_at(c, v->data.sequence.items.start[t]);
    const char *addr = "";
    snprintf(field, sizeof field, "jobs.%s[%d]", name, t);
    TF_TRY(task_addr(c, a, field, &addr));
    job->addrs[t] = tf__xstrdup(addr);
    job->n_tasks = t + 1;
    c->task_nodes[c->n_task_nodes++] = a;
  }
  return TF_OK;
}

/* Finds the first task (flat index *b, in declared order) at the
 * endpoint of an earlier one (*a), host names resolved and socket paths
 * folded (tf__cluster_endpoints); false if every task has its own.
 * both gets what they share. */
static bool find_shared(const char *transport, const tf_cluster_job *jobs,
                        int n_jobs, int *a_out, int *b_out, char *both,
                        size_t cap) {
  int n = 0, k = 0;
  for (int j = 0; j < n_jobs; j++) {
    n += jobs[j].n_tasks;
  }
  const char **addrs = tf__xcalloc((size_t)n + 1, sizeof *addrs);
  for (int j = 0; j < n_jobs; j++) {
    for (int t = 0; t < jobs[j].n_tasks; t++) {
      addrs[k++] = jobs[j].addrs[t];
    }
  }
  char ***eps = tf__xcalloc((size_t)n + 1, sizeof *eps);
  tf__cluster_endpoints(transport, addrs, n, RESOLVE_MS, eps);
  bool found = false;
  for (int b = 1; b < n && !found; b++) {
    for (int a = 0; a < b && !found; a++) {
      const char *sh = tf__cluster_endpoints_shared(eps[a], eps[b]);
      if (sh != NULL) {
        snprintf(both, cap, "%s", sh);
        *a_out = a;
        *b_out = b;
        found = true;
      }
    }
  }
  for (int i = 0; i < n; i++) {
    tf__cluster_endpoints_free(eps[i]);
  }
  free(eps);
  free(addrs);
  return found;
}

/* The job and task of flat task index i. */
static void task_at(const tf_cluster_job *jobs, int i, int *job, int *task) {
  int j = 0;
  while (i >= jobs[j].n_tasks) {
    i -= jobs[j++].n_tasks;
  }
  *job = j;
  *task = i;
}

/* Refuses two tasks at one endpoint, at the position of the later one. */
static tf_code check_distinct(ctx *c) {
  int a, b, ja, ta, jb, tb;
  char both[160], field[96];
  const tf_cluster_job *jobs = c->s->jobs;
  if (!find_shared(c->s->transport, jobs, c->s->n_jobs, &a, &b, both,
                   sizeof both)) {
    return TF_OK;
  }
  task_at(jobs, a, &ja, &ta);
  task_at(jobs, b, &jb, &tb);
  snprintf(field, sizeof field, "jobs.%s[%d]", jobs[jb].name, tb);
  return err(c, c->task_nodes[b], field, "/job:%s/task:%d at '%.80s' has "
             "the address of /job:%s/task:%d at '%.80s' (both are %.120s); "
             "each task needs an address of its own", jobs[jb].name, tb,
             jobs[jb].addrs[tb], jobs[ja].name, ta, jobs[ja].addrs[ta], both);
}

static tf_code parse_jobs(ctx *c, const yaml_node_t *root,
                          const yaml_node_t *v) {
  char b[80];
  if (v == NULL) {
    return err(c, root, NULL, "missing key 'jobs' (expected a mapping of job "
               "names to task addresses, with one 'master' task)");
  }
  if (v->type != YAML_MAPPING_NODE) {
    return err(c, v, "jobs", "expected a mapping of job names to task "
               "addresses, got %s", tf__spec_shown(v, b));
  }
  size_t n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
  c->s->jobs = tf__xcalloc(n ? n : 1, sizeof *c->s->jobs);
  const yaml_node_t *master = NULL;
  for (size_t i = 0; i < n; i++) {
    const yaml_node_pair_t *p = &v->data.mapping.pairs.start[i];
    const char *name = "";
    TF_TRY(job_name(c, node_at(c, p->key), &name));
    const yaml_node_t *tasks = node_at(c, p->value);
    TF_TRY(job_tasks(c, name, tasks));
    master = strcmp(name, "master") == 0 ? tasks : master;
  }
  if (master == NULL) {
    return err(c, v, "jobs", "no 'master' job (expected exactly one master "
               "task, e.g. master: [127.0.0.1:7070])");
  }
  const tf_cluster_job *mj = tf_cluster_spec_job(c->s, "master");
  if (mj->n_tasks != 1) {
    return err(c, master, "jobs.master",
               "expected exactly one master task, got %d", mj->n_tasks);
  }
  for (int j = 0; c->s->counts && j < c->s->n_jobs; j++) {
    if (c->s->jobs[j].addrs != NULL) {
      return err(c, v, "jobs", "job '%s' lists addresses but others are "
                 "task counts; give every job as a count (addresses from "
                 "Slurm or TF_CONFIG) or every job as addresses",
                 c->s->jobs[j].name);
    }
  }
  return c->s->counts ? TF_OK : check_distinct(c);
}

/* ---- the other sections -------------------------------------------------- */

static tf_code parse_timeouts(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {
      "rpc_ms",        "registration_ms", "step_ms", "heartbeat_ms",
      "down_after_ms", "step_ttl_ms",     "drain_ms"};
  /* rpc, heartbeat and down_after need time to pass; the rest may be 0. */
  static const long long lows[] = {1, 0, 0, 1, 1, 0, 0};
  tf_cluster_spec *s = c->s;
  int64_t val[] = {s->rpc_timeout_ms, s->registration_timeout_ms,
                   s->step_timeout_ms, s->heartbeat_ms, s->down_after_ms,
                   s->step_ttl_ms, s->drain_ms};
  yaml_node_t *f[7];
  TF_TRY(fields(c, v, "timeouts", "'timeouts'", names, 7, f));
  for (int k = 0; k < 7; k++) {
    char field[64];
    snprintf(field, sizeof field, "timeouts.%s", names[k]);
    if (f[k] != NULL) {
      TF_TRY(int_of(c, f[k], field, lows[k], MS_MAX, " (milliseconds)",
                    &val[k]));
    }
  }
  s->rpc_timeout_ms = val[0];
  s->registration_timeout_ms = val[1];
  s->step_timeout_ms = val[2];
  s->heartbeat_ms = val[3];
  s->down_after_ms = val[4];
  s->step_ttl_ms = val[5];
  s->drain_ms = val[6];
  /* The master marks a task down after down_after_ms without an answer
   * and checks every heartbeat_ms: a period that long would mark healthy
   * tasks down between two checks. The defaults (500 < 3000) are fine, so
   * one of the two was written. */
  if (s->heartbeat_ms >= s->down_after_ms) {
    bool hb = f[3] != NULL;
    return err(c, hb ? f[3] : f[4], hb ? "timeouts.heartbeat_ms"
                                      : "timeouts.down_after_ms",
               "heartbeat_ms (%lld%s) must be less than down_after_ms "
               "(%lld%s): a task would be marked down between two "
               "heartbeats", (long long)s->heartbeat_ms,
               hb ? "" : ", the default", (long long)s->down_after_ms,
               f[4] != NULL ? "" : ", the default");
  }
  return TF_OK;
}

/* limits: every cap a daemon enforces, each > 0 (there is no "unlimited":
 * a cap is what keeps a daemon alive against a peer that sends too much). */
static tf_code parse_limits(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {
      "max_pushed_mb", "max_graphs",      "max_sessions",       "max_steps",
      "max_connections", "idle_connection_ms", "session_ttl_ms"};
  static const long long highs[] = {1 << 20, 1 << 20, 1 << 20, 1 << 16,
                                    1 << 16, MS_MAX,  MS_MAX};
  static const char *const units[] = {" (MiB)", "", "", "", "",
                                      " (milliseconds)", " (milliseconds)"};
  tf_cluster_spec *s = c->s;
  int64_t pushed_mb = s->max_pushed_bytes >> 20, graphs = s->max_graphs,
          sessions = s->max_sessions, steps = s->max_steps,
          conns = s->max_connections, ttl = s->session_ttl_ms;
  int64_t *dst[] = {&pushed_mb, &graphs, &sessions, &steps, &conns,
                    &s->idle_connection_ms, &ttl};
  yaml_node_t *f[7];
  TF_TRY(fields(c, v, "limits", "'limits'", names, 7, f));
  for (int k = 0; k < 7; k++) {
    char field[64];
    snprintf(field, sizeof field, "limits.%s", names[k]);
    if (f[k] != NULL) {
      TF_TRY(int_of(c, f[k], field, 1, highs[k], units[k], dst[k]));
    }
  }
  s->session_ttl_ms = ttl;
  s->max_pushed_bytes = pushed_mb << 20;
  s->max_graphs = (int)graphs;
  s->max_sessions = (int)sessions;
  s->max_steps = (int)steps;
  s->max_connections = (int)conns;
  return TF_OK;
}

static tf_code parse_threads(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {"inter_op", "rpc"};
  yaml_node_t *f[2];
  int64_t x;
  TF_TRY(fields(c, v, "threads", "'threads'", names, 2, f));
  if (f[0] != NULL) {
    TF_TRY(int_of(c, f[0], "threads.inter_op", 0, THREADS_MAX,
                  " (0: number of CPUs)", &x));
    c->s->inter_op_threads = (int)x;
  }
  if (f[1] != NULL) {
    TF_TRY(int_of(c, f[1], "threads.rpc", 1, THREADS_MAX, "", &x));
    c->s->rpc_threads = (int)x;
  }
  return TF_OK;
}

/* metrics: {port_offset: N, host: H}. Only tcp and tls+tcp tasks have a
 * port to offset; with ipc or inproc, the daemons' --metrics-address is
 * the only way to serve metrics. */
static tf_code parse_metrics(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {"port_offset", "host"};
  yaml_node_t *f[2];
  int64_t x;
  TF_TRY(fields(c, v, "metrics", "'metrics'", names, 2, f));
  if (f[0] != NULL) {
    TF_TRY(int_of(c, f[0], "metrics.port_offset", 0, 65534,
                  " (0: no metrics; each task serves them at its port + this)", &x));
    const char *t = c->s->transport;
    if (x > 0 && strcmp(t, "tcp") != 0 && strcmp(t, "tls+tcp") != 0) {
      return err(c, f[0], "metrics.port_offset", "transport %s has no ports to offset; "
                 "serve metrics with tfmaster/tfworker --metrics-address HOST:PORT", t);
    }
    c->s->metrics_port_offset = (int)x;
  }
  if (f[1] != NULL) {
    const char *h = "";
    TF_TRY(text_of(c, f[1], "metrics.host", "a host name or address", &h));
    if (*h == '\0' || strlen(h) > 253 || strpbrk(h, " \t/") != NULL) {
      return err(c, f[1], "metrics.host", "expected a host name or address, got '%.80s'", h);
    }
    free(c->s->metrics_host);
    c->s->metrics_host = tf__xstrdup(h);
  }
  return TF_OK;
}

/* slurm: {base_port: N}: task ports under Slurm (task_role.h). */
static tf_code parse_slurm(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {"base_port"};
  yaml_node_t *f[1];
  int64_t x;
  TF_TRY(fields(c, v, "slurm", "'slurm'", names, 1, f));
  if (f[0] != NULL) {
    TF_TRY(int_of(c, f[0], "slurm.base_port", 1, 65535, " (a TCP port; a "
                  "task listens on base_port + its local id on its node)",
                  &x));
    c->s->slurm_base_port = (int)x;
  }
  return TF_OK;
}

/* auth: none, or {key_file, client_key_file, readonly_key_file,
 * window_ms} (docs/security.md). key_file is required in the mapping. */
static tf_code parse_auth(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {"key_file", "client_key_file", "readonly_key_file",
                                      "window_ms"};
  tf_cluster_spec *s = c->s;
  if (v->type == YAML_SCALAR_NODE && !tf__spec_is_null(v)) {
    const char *t = (const char *)v->data.scalar.value;
    if (strcmp(t, "none") != 0) {
      return err(c, v, "auth", "expected 'none' or a mapping with key_file, got '%.60s'", t);
    }
    s->auth_mode = TF_CLUSTER_AUTH_NONE;
    return TF_OK;
  }
  yaml_node_t *f[4];
  TF_TRY(fields(c, v, "auth", "'auth'", names, 4, f));
  if (f[0] == NULL) {
    return err(c, v, "auth", "missing key_file (the tasks' key; tfctl keygen FILE makes "
               "one), or write 'auth: none' to run without authentication");
  }
  char **dst[] = {&s->auth_key_file, &s->auth_client_key_file, &s->auth_readonly_key_file};
  static const char *const field[] = {"auth.key_file", "auth.client_key_file",
                                      "auth.readonly_key_file"};
  for (int k = 0; k < 3; k++) {
    const char *t = "";
    if (f[k] == NULL) {
      continue;
    }
    TF_TRY(text_of(c, f[k], field[k], "a key file", &t));
    if (t[0] == '\0') {
      return err(c, f[k], field[k], "expected a key file, got ''");
    }
    free(*dst[k]);
    *dst[k] = tf__xstrdup(t);
  }
  if (f[3] != NULL) {
    TF_TRY(int_of(c, f[3], "auth.window_ms", 1000, 3600000,
                  " (ms: how far a request's timestamp may be from the receiver's clock)",
                  &s->auth_window_ms));
  }
  s->auth_mode = TF_CLUSTER_AUTH_KEY;
  return TF_OK;
}

/* ---- tls ----------------------------------------------------------------- */

/* tls: {ca_file, cert_key_file, client_cert_key_file}: file paths (made
 * absolute beside the spec by tf_cluster_spec_load). The files are read
 * when a daemon or client starts (cluster_spec_tls.c), not here. */
static tf_code parse_tls(ctx *c, const yaml_node_t *v) {
  static const char *const names[] = {"ca_file", "cert_key_file",
                                      "client_cert_key_file"};
  static const char *const fields_[] = {"tls.ca_file", "tls.cert_key_file",
                                        "tls.client_cert_key_file"};
  char b[80];
  yaml_node_t *f[3];
  TF_TRY(fields(c, v, "tls", "'tls'", names, 3, f));
  char **dst[] = {&c->s->tls_ca_file, &c->s->tls_cert_key_file,
                  &c->s->tls_client_cert_key_file};
  for (int k = 0; k < 3; k++) {
    const char *t = "";
    if (k < 2 && f[k] == NULL) {
      return err(c, v, "tls", "missing '%s' (a PEM file: %s)", names[k],
                 k == 0 ? "the cluster CA" : "this daemon's certificate and key");
    }
    if (f[k] != NULL) {
      TF_TRY(text_of(c, f[k], fields_[k], "a file path", &t));
      if (t[0] == '\0') {
        return err(c, f[k], fields_[k], "expected a file path, got %s",
                   tf__spec_shown(f[k], b));
      }
      *dst[k] = tf__xstrdup(t);
    }
  }
  return TF_OK;
}

/* transport tls+tcp needs a tls: section (tls_node), and a tls: section
 * needs transport tls+tcp. */
static tf_code check_tls(ctx *c, const yaml_node_t *root, const yaml_node_t *transport,
                         const yaml_node_t *tls_node) {
  bool tls = strcmp(c->s->transport, "tls+tcp") == 0;
  if (tls && tls_node == NULL) {
    return err(c, transport != NULL ? transport : root, "transport", "tls+tcp "
               "needs a 'tls:' section with ca_file and cert_key_file "
               "(docs/security.md)");
  }
  if (!tls && tls_node != NULL) {
    return err(c, tls_node, "tls", "a 'tls:' section needs transport: tls+tcp "
               "(the transport is %s)", c->s->transport);
  }
  return TF_OK;
}

/* A string-valued key: cluster, transport, checkpoint_dir, run_dir,
 * log_level. */
static tf_code parse_string(ctx *c, int k, const yaml_node_t *v) {
  static const char *const keys[] = {"cluster", "transport", "checkpoint_dir",
                                     "run_dir", "log_level"};
  static const char *const expected[] = {
      "a cluster name", "a transport (tcp, ipc, inproc or tls+tcp)",
      "a directory", "a directory", "a log level (err, warning, notice, "
      "info or debug)"};
  tf_cluster_spec *s = c->s;
  const char *t = "";
  if (k == 2 && tf__spec_is_null(v)) {
    return TF_OK; /* checkpoint_dir: nothing is the same as unset */
  }
  TF_TRY(text_of(c, v, keys[k], expected[k], &t));
  size_t n = strlen(t);
  if (k == 0) {
    if (n == 0 || n > 63 ||
        strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.-") != n) {
      return err(c, v, keys[k], "cluster name '%.80s' must be 1..63 "
                 "characters of [A-Za-z0-9_.-]", t);
    }
    free(s->name);
    s->name = tf__xstrdup(t);
  } else if (k == 1) {
    if (!tf__cluster_transport_known(t)) {
      return err(c, v, keys[k], "unknown transport '%.60s' (expected tcp, "
                 "ipc, inproc or tls+tcp)", t);
    }
    free(s->transport);
    s->transport = tf__xstrdup(t);
  } else if (k == 4) {
    s->log_level = tf_log_parse_level(t);
    s->log_level_set = true;
    if (s->log_level < 0) {
      return err(c, v, keys[k], "unknown log level '%.60s' (expected err, "
                 "warning, notice, info or debug)", t);
    }
  } else if (n == 0) {
    return err(c, v, keys[k], "expected a directory, got ''");
  } else {
    char **dst = k == 2 ? &s->checkpoint_dir : &s->run_dir;
    *dst = tf__xstrdup(t);
  }
  return TF_OK;
}

static void set_defaults(tf_cluster_spec *s) {
  s->name = tf__xstrdup("tf");
  s->transport = tf__xstrdup("tcp");
  s->rpc_timeout_ms = 10000;
  s->registration_timeout_ms = 10000;
  s->step_timeout_ms = 0;
  s->heartbeat_ms = 500;
  s->down_after_ms = 3000;
  s->step_ttl_ms = 60000;
  s->drain_ms = 10000;
  s->max_message_bytes = 256LL << 20;
  s->max_pushed_bytes = 1024LL << 20;
  s->max_graphs = 1024;
  s->max_sessions = 256;
  s->max_steps = 64;
  s->max_connections = 256;
  s->idle_connection_ms = 300000;
  s->session_ttl_ms = 60000;
  s->inter_op_threads = 0;
  s->rpc_threads = 16;
  s->log_level = LOG_INFO;
  s->auth_window_ms = 30000;
}

/* Interprets the document's root mapping into c->s. */
static tf_code parse_root(ctx *c, const yaml_node_t *root) {
  static const char *const names[] = {
      "cluster",  "transport", "checkpoint_dir", "run_dir", "log_level",
      "jobs",     "timeouts",  "threads",        "max_message_mb", "limits",
      "metrics", "slurm", "auth", "tls", "data_dirs", "ops"};
  char b[80];
  if (root->type != YAML_MAPPING_NODE) {
    return err(c, root, NULL, "expected a mapping with 'jobs' at the top "
               "level, got %s", tf__spec_shown(root, b));
  }
  yaml_node_t *f[16];
  TF_TRY(fields(c, root, NULL, "the top level", names, 16, f));
  for (int k = 0; k < 5; k++) { /* transport first: jobs need it */
    if (f[k] != NULL) {
      TF_TRY(parse_string(c, k, f[k]));
    }
  }
  TF_TRY(parse_jobs(c, root, f[5]));
  if (f[6] != NULL) {
    TF_TRY(parse_timeouts(c, f[6]));
  }
  if (f[7] != NULL) {
    TF_TRY(parse_threads(c, f[7]));
  }
  if (f[8] != NULL) {
    int64_t mb;
    TF_TRY(int_of(c, f[8], "max_message_mb", 1, MESSAGE_MB_MAX, " (MiB; "
                  "every message, tensors included, must fit)", &mb));
    c->s->max_message_bytes = mb << 20;
  }
  if (f[9] != NULL) {
    TF_TRY(parse_limits(c, f[9]));
  }
  if (f[10] != NULL) {
    TF_TRY(parse_metrics(c, f[10]));
  }
  if (f[11] != NULL) {
    TF_TRY(parse_slurm(c, f[11]));
  }
  if (f[12] != NULL) {
    TF_TRY(parse_auth(c, f[12]));
  }
  if (f[13] != NULL) {
    TF_TRY(parse_tls(c, f[13]));
  }
  TF_TRY(check_tls(c, root, f[1], f[13]));
  if (f[14] != NULL) {
    TF_TRY(tf__cluster_parse_data_dirs(c->y, f[14], c->s));
  }
  if (f[15] != NULL) {
    TF_TRY(tf__cluster_parse_ops(c->y, f[15], c->s));
  }
  if (c->s->run_dir == NULL) {
    c->s->run_dir = tf__xasprintf("run/%s", c->s->name);
  }
  return TF_OK;
}

/* ---- loading ------------------------------------------------------------- */

tf_code tf_cluster_spec_parse(const char *text, size_t len, const char *name,
                              tf_cluster_spec **out, tf_status *st) {
  *out = NULL;
  name = name ? name : "<cluster spec>";
  tf__spec y; /* one document; syntax errors name file:line:col */
  TF_TRY(tf__spec_load(&y, text, len, name, SIZE_MAX, st));
  tf_cluster_spec *s = tf__xcalloc(1, sizeof *s);
  s->path = tf__xstrdup(name);
  set_defaults(s);
  ctx c = {&y.doc, name, st, s, NULL, 0, &y};
  yaml_node_t *root = yaml_document_get_root_node(&y.doc);
  tf_code code;
  if (root == NULL) {
    code = tf_status_set(st, TF_INVALID_ARGUMENT, "%s:1:1: no YAML document "
                         "(expected a mapping with 'jobs')", name);
  } else {
    code = parse_root(&c, root);
  }
  tf__spec_fini(&y);
  free(c.task_nodes);
  if (code != TF_OK) {
    tf_cluster_spec_free(s);
    return code;
  }
  *out = s;
  return TF_OK;
}

/* A relative directory in a spec file names a place beside the file, not
 * in whatever directory the reader runs in: *dir becomes DIR/<*dir>
 * where DIR is the directory of path as given (made absolute with the
 * working directory; symbolic links are not followed). */
static void anchor_dir(char **dir, const char *path) {
  if (*dir == NULL || (*dir)[0] == '/') return;
  const char *slash = strrchr(path, '/');
  int n = slash != NULL ? (int)(slash - path) : 0;
  char cwd[PATH_MAX] = "";
  if (path[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) return;
  size_t len = strlen(cwd) + (size_t)n + strlen(*dir) + 4;
  char *abs = malloc(len);
  if (abs == NULL) return;
  snprintf(abs, len, "%s%s%.*s%s%s", cwd, cwd[0] != '\0' && n > 0 ? "/" : "", n, path,
           n > 0 || cwd[0] != '\0' ? "/" : "", *dir);
  free(*dir);
  *dir = tf__fold_path(abs);
  free(abs);
}

tf_code tf_cluster_spec_load(const char *path, tf_cluster_spec **out,
                             tf_status *st) {
  *out = NULL;
  char *text;
  size_t len;
  TF_TRY(tf__read_file(path, &text, &len, st));
  tf_code code = tf_cluster_spec_parse(text, len, path, out, st);
  free(text);
  if (code == TF_OK) {
    anchor_dir(&(*out)->run_dir, path);
    anchor_dir(&(*out)->checkpoint_dir, path);
    anchor_dir(&(*out)->auth_key_file, path);
    anchor_dir(&(*out)->auth_client_key_file, path);
    anchor_dir(&(*out)->auth_readonly_key_file, path);
    anchor_dir(&(*out)->tls_ca_file, path);
    anchor_dir(&(*out)->tls_cert_key_file, path);
    anchor_dir(&(*out)->tls_client_cert_key_file, path);
    for (int i = 0; i < (*out)->n_data_dirs; i++) {
      anchor_dir(&(*out)->data_dirs[i], path);
    }
  }
  return code;
}

void tf_cluster_spec_free(tf_cluster_spec *s) {
  if (s == NULL) {
    return;
  }
  for (int j = 0; j < s->n_jobs; j++) {
    for (int t = 0; s->jobs[j].addrs != NULL && t < s->jobs[j].n_tasks; t++) {
      free(s->jobs[j].addrs[t]);
    }
    free(s->jobs[j].addrs);
    free(s->jobs[j].name);
  }
  free(s->jobs);
  free(s->path);
  free(s->name);
  free(s->transport);
  free(s->checkpoint_dir);
  free(s->run_dir);
  free(s->metrics_host);
  free(s->auth_key_file);
  free(s->auth_client_key_file);
  free(s->auth_readonly_key_file);
  free(s->tls_ca_file);
  free(s->tls_cert_key_file);
  free(s->tls_client_cert_key_file);
  tf__cluster_confine_free(s);
  free(s);
}

tf_code tf_cluster_metrics_address(const tf_cluster_spec *s, const char *job, int task,
                                   char **out, tf_status *st) {
  *out = NULL;
  if (s->metrics_port_offset == 0) {
    return TF_OK;
  }
  TF_TRY(tf_cluster_spec_check_task(s, job, task, st));
  const char *addr = tf_cluster_spec_job(s, job)->addrs[task];
  const char *colon = strrchr(addr, ':');
  long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
  long mport = port + s->metrics_port_offset;
  if (colon == NULL || port <= 0 || mport > 65535) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: metrics.port_offset %d: /job:%s/task:%d "
                         "at '%s' would serve metrics on port %ld, outside 1..65535",
                         s->path, s->metrics_port_offset, job, task, addr, mport);
  }
  if (s->metrics_host != NULL) {
    bool v6 = strchr(s->metrics_host, ':') != NULL && s->metrics_host[0] != '[';
    *out = tf__xasprintf(v6 ? "[%s]:%ld" : "%s:%ld", s->metrics_host, mport);
  } else {
    *out = tf__xasprintf("%.*s:%ld", (int)(colon - addr), addr, mport);
  }
  return TF_OK;
}

/* ---- addresses from a scheduler ------------------------------------------ */

static void jobs_free(tf_cluster_job *jobs, int n) {
  for (int j = 0; jobs != NULL && j < n; j++) {
    for (int t = 0; jobs[j].addrs != NULL && t < jobs[j].n_tasks; t++) {
      free(jobs[j].addrs[t]);
    }
    free(jobs[j].addrs);
    free(jobs[j].name);
  }
  free(jobs);
}

/* Checks jobs as set_jobs takes them: one master task, every address
 * well-formed for the transport, no two tasks at one endpoint. */
static tf_code check_jobs(const tf_cluster_spec *s, const tf_cluster_job *jobs,
                          int n_jobs, const char *source, tf_status *st) {
  int m = 0;
  for (int j = 0; j < n_jobs; j++) {
    m += strcmp(jobs[j].name, "master") == 0 ? jobs[j].n_tasks : 0;
    for (int t = 0; t < jobs[j].n_tasks; t++) {
      char why[256];
      if (!tf__cluster_addr_check(s->transport, jobs[j].addrs[t], why,
                                  sizeof why)) {
        return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: /job:%s/task:%d: "
                             "%s (transport %s, from %s)", source,
                             jobs[j].name, t, why, s->transport, s->path);
      }
    }
  }
  if (m != 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: expected exactly one "
                         "master task, got %d", source, m);
  }
  int a, b, ja, ta, jb, tb;
  char both[160];
  if (find_shared(s->transport, jobs, n_jobs, &a, &b, both, sizeof both)) {
    task_at(jobs, a, &ja, &ta);
    task_at(jobs, b, &jb, &tb);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: /job:%s/task:%d at "
                         "'%.80s' has the address of /job:%s/task:%d at "
                         "'%.80s' (both are %.120s); each task needs an "
                         "address of its own", source, jobs[jb].name, tb,
                         jobs[jb].addrs[tb], jobs[ja].name, ta,
                         jobs[ja].addrs[ta], both);
  }
  return TF_OK;
}

tf_code tf_cluster_spec_set_jobs(tf_cluster_spec *s, tf_cluster_job *jobs,
                                 int n_jobs, const char *source,
                                 tf_status *st) {
  tf_code code = check_jobs(s, jobs, n_jobs, source, st);
  if (code != TF_OK) {
    jobs_free(jobs, n_jobs);
    return code;
  }
  jobs_free(s->jobs, s->n_jobs);
  s->jobs = jobs;
  s->n_jobs = n_jobs;
  s->counts = false;
  return TF_OK;
}

tf_code tf_cluster_spec_check_addressed(const tf_cluster_spec *s,
                                        tf_status *st) {
  if (!s->counts) {
    return TF_OK;
  }
  return tf_status_set(st, TF_FAILED_PRECONDITION, "%s gives its jobs as "
                       "task counts (jobs.%s: %d), not addresses: only "
                       "daemons started under Slurm (srun: SLURM_PROCID) or "
                       "with TF_CONFIG can derive the addresses, and only "
                       "when started without --job/--task (conf/slurm/, "
                       "docs/operations.md)", s->path, s->jobs[0].name,
                       s->jobs[0].n_tasks);
}

/* ---- queries ------------------------------------------------------------- */

const tf_cluster_job *tf_cluster_spec_job(const tf_cluster_spec *s,
                                          const char *name) {
  for (int j = 0; s != NULL && name != NULL && j < s->n_jobs; j++) {
    if (strcmp(s->jobs[j].name, name) == 0) {
      return &s->jobs[j];
    }
  }
  return NULL;
}

char *tf_cluster_task_url(const tf_cluster_spec *s, const char *job,
                          int task) {
  const tf_cluster_job *j = tf_cluster_spec_job(s, job);
  if (j == NULL || task < 0 || task >= j->n_tasks || j->addrs == NULL) {
    return NULL;
  }
  return tf__xasprintf("%s://%s", s->transport, j->addrs[task]);
}

/* The spec's job names, comma-separated, master included or not. */
static void job_list(const tf_cluster_spec *s, bool with_master, char *buf,
                     size_t n) {
  buf[0] = '\0';
  for (int i = 0; i < s->n_jobs; i++) {
    if (!with_master && strcmp(s->jobs[i].name, "master") == 0) {
      continue;
    }
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", l ? ", " : "", s->jobs[i].name);
  }
}

tf_code tf_cluster_spec_check_task(const tf_cluster_spec *s, const char *job,
                                   int task, tf_status *st) {
  const tf_cluster_job *j = tf_cluster_spec_job(s, job);
  if (j == NULL) {
    char list[512];
    job_list(s, true, list, sizeof list);
    return tf_status_set(st, TF_NOT_FOUND, "no job '%.80s' in %s (jobs: %s)",
                         job ? job : "(null)", s->path, list);
  }
  if (task < 0 || task >= j->n_tasks) {
    char range[32] = "0";
    if (j->n_tasks > 1) {
      snprintf(range, sizeof range, "0..%d", j->n_tasks - 1);
    }
    return tf_status_set(st, TF_NOT_FOUND, "no task /job:%s/task:%d in %s "
                         "(job '%s' has %d task%s: %s)", j->name, task,
                         s->path, j->name, j->n_tasks,
                         j->n_tasks == 1 ? "" : "s", range);
  }
  return TF_OK;
}

tf_code tf_cluster_spec_check_worker_task(const tf_cluster_spec *s,
                                          const char *job, int task,
                                          tf_status *st) {
  if (job != NULL && strcmp(job, "master") == 0) {
    char list[512];
    job_list(s, false, list, sizeof list);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "job 'master' in %s is the "
                         "master's task, not a worker job (%s%s)", s->path,
                         list[0] ? "worker jobs: " : "the spec has no worker "
                         "jobs", list);
  }
  return tf_cluster_spec_check_task(s, job, task, st);
}
