/* cluster_spec_fuzz.c: libFuzzer harness for the cluster spec YAML
 * (tf_cluster_spec_parse, lib/runtime/cluster_spec.h), with its metrics:
 * and slurm: sections and jobs given as task counts. A rejection must be
 * INVALID_ARGUMENT "fuzz.yaml:LINE:COL: ..." at a line and column within
 * the text (or just past its end). An accepted spec must have exactly one
 * master task, unique valid job names, either task counts in 1..65536
 * (no addresses) or addresses the transport takes, no two of them alike,
 * every timeout, limit, thread count and port within the bounds
 * cluster_spec.h documents; written out again as YAML (by the writer
 * here, every string double-quoted) it must parse to the same spec.
 * Seeds: the specs of conf/ and conf/slurm/ and more, in
 * test/fuzz/corpus/cluster_spec/. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/cluster_spec_addr.h"
#include "test/fuzz/fuzz_resolve.h"
#include "test/fuzz/fuzz_util.h"

#define FILE_NAME "fuzz.yaml"
#define MS_MAX 2147483647LL

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void putf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(buf *b, const char *fmt, ...) {
  char t[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  put(b, t, (size_t)n);
}

/* s as a YAML double-quoted scalar: ASCII printables as they are, the
 * rest escaped by code point (libyaml gave valid UTF-8). */
static void put_quoted(buf *b, const char *s) {
  put(b, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  while (*p != '\0') {
    unsigned c = *p;
    if (c >= 0x20 && c < 0x7f) {
      put(b, c == '"' ? "\\\"" : c == '\\' ? "\\\\" : (const char *)p,
          c == '"' || c == '\\' ? 2 : 1);
      p++;
      continue;
    }
    int k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : 3;
    uint32_t cp = k == 0 ? c : c & (0x3f >> k);
    for (int j = 1; j <= k && p[j] != '\0'; j++) {
      cp = cp << 6 | (p[j] & 0x3f);
    }
    putf(b, cp > 0xffff ? "\\U%08x" : "\\u%04x", (unsigned)cp);
    p += k + 1;
  }
  put(b, "\"", 1);
}

static const char *level_name(int level) {
  switch (level) {
    case LOG_ERR: return "err";
    case LOG_WARNING: return "warning";
    case LOG_NOTICE: return "notice";
    case LOG_INFO: return "info";
    default: return "debug";
  }
}

/* s written as a spec in block style. */
static void write_spec(buf *b, const tf_cluster_spec *s) {
  put(b, "cluster: ", 9);
  put_quoted(b, s->name);
  put(b, "\ntransport: ", 12);
  put_quoted(b, s->transport);
  put(b, "\njobs:\n", 7);
  for (int j = 0; j < s->n_jobs; j++) {
    put(b, "  ", 2);
    put_quoted(b, s->jobs[j].name);
    if (s->counts) {
      putf(b, ": %d\n", s->jobs[j].n_tasks);
      continue;
    }
    put(b, ": [", 3);
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      put(b, t ? ", " : "", t ? 2 : 0);
      put_quoted(b, s->jobs[j].addrs[t]);
    }
    put(b, "]\n", 2);
  }
  putf(b, "timeouts: {rpc_ms: %lld, registration_ms: %lld, step_ms: %lld, "
       "heartbeat_ms: %lld, down_after_ms: %lld, step_ttl_ms: %lld, "
       "drain_ms: %lld}\n", (long long)s->rpc_timeout_ms,
       (long long)s->registration_timeout_ms, (long long)s->step_timeout_ms,
       (long long)s->heartbeat_ms, (long long)s->down_after_ms,
       (long long)s->step_ttl_ms, (long long)s->drain_ms);
  putf(b, "threads: {inter_op: %d, rpc: %d}\nmax_message_mb: %lld\n",
       s->inter_op_threads, s->rpc_threads,
       (long long)(s->max_message_bytes >> 20));
  putf(b, "limits: {max_pushed_mb: %lld, max_graphs: %d, max_sessions: %d, "
       "max_steps: %d, max_connections: %d, idle_connection_ms: %lld, "
       "session_ttl_ms: %lld}\n", (long long)(s->max_pushed_bytes >> 20),
       s->max_graphs, s->max_sessions, s->max_steps, s->max_connections,
       (long long)s->idle_connection_ms, (long long)s->session_ttl_ms);
  if (s->checkpoint_dir != NULL) {
    put(b, "checkpoint_dir: ", 16);
    put_quoted(b, s->checkpoint_dir);
    put(b, "\n", 1);
  }
  put(b, "run_dir: ", 9);
  put_quoted(b, s->run_dir);
  if (s->log_level_set) {
    putf(b, "\nlog_level: %s", level_name(s->log_level));
  }
  putf(b, "\nmetrics:\n  port_offset: %d\n", s->metrics_port_offset);
  if (s->metrics_host != NULL) {
    put(b, "  host: ", 8);
    put_quoted(b, s->metrics_host);
    put(b, "\n", 1);
  }
  if (s->slurm_base_port != 0) {
    putf(b, "slurm: {base_port: %d}\n", s->slurm_base_port);
  }
}

static bool same_str(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_spec(const tf_cluster_spec *a, const tf_cluster_spec *b) {
  if (!same_str(a->name, b->name) || !same_str(a->transport, b->transport) ||
      a->n_jobs != b->n_jobs || a->counts != b->counts ||
      !same_str(a->checkpoint_dir, b->checkpoint_dir) ||
      !same_str(a->run_dir, b->run_dir) || a->log_level != b->log_level ||
      a->log_level_set != b->log_level_set ||
      a->metrics_port_offset != b->metrics_port_offset ||
      !same_str(a->metrics_host, b->metrics_host) ||
      a->slurm_base_port != b->slurm_base_port) {
    return false;
  }
  int64_t x[] = {a->rpc_timeout_ms, a->registration_timeout_ms,
                 a->step_timeout_ms, a->heartbeat_ms, a->down_after_ms,
                 a->drain_ms, a->step_ttl_ms, a->max_message_bytes,
                 a->max_pushed_bytes, a->max_graphs, a->max_sessions,
                 a->max_steps, a->max_connections, a->idle_connection_ms,
                 a->session_ttl_ms, a->inter_op_threads, a->rpc_threads};
  int64_t y[] = {b->rpc_timeout_ms, b->registration_timeout_ms,
                 b->step_timeout_ms, b->heartbeat_ms, b->down_after_ms,
                 b->drain_ms, b->step_ttl_ms, b->max_message_bytes,
                 b->max_pushed_bytes, b->max_graphs, b->max_sessions,
                 b->max_steps, b->max_connections, b->idle_connection_ms,
                 b->session_ttl_ms, b->inter_op_threads, b->rpc_threads};
  if (memcmp(x, y, sizeof x) != 0) {
    return false;
  }
  for (int j = 0; j < a->n_jobs; j++) {
    const tf_cluster_job *p = &a->jobs[j], *q = &b->jobs[j];
    if (strcmp(p->name, q->name) != 0 || p->n_tasks != q->n_tasks ||
        (p->addrs == NULL) != (q->addrs == NULL)) {
      return false;
    }
    for (int t = 0; p->addrs != NULL && t < p->n_tasks; t++) {
      if (strcmp(p->addrs[t], q->addrs[t]) != 0) {
        return false;
      }
    }
  }
  return true;
}

static bool in(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

/* The bounds cluster_spec.h and cluster_spec.c document. */
static void check_bounds(const tf_cluster_spec *s, const tf_status *st) {
  FUZZ_CHECK(tf__cluster_transport_known(s->transport) && s->name[0] != '\0' &&
                 strlen(s->name) <= 63 && s->run_dir != NULL &&
                 s->run_dir[0] != '\0', st);
  FUZZ_CHECK(s->checkpoint_dir == NULL || s->checkpoint_dir[0] != '\0', st);
  FUZZ_CHECK(in(s->rpc_timeout_ms, 1, MS_MAX) &&
                 in(s->registration_timeout_ms, 0, MS_MAX) &&
                 in(s->step_timeout_ms, 0, MS_MAX) &&
                 in(s->heartbeat_ms, 1, MS_MAX) &&
                 in(s->down_after_ms, 1, MS_MAX) &&
                 s->heartbeat_ms < s->down_after_ms &&
                 in(s->step_ttl_ms, 0, MS_MAX) && in(s->drain_ms, 0, MS_MAX),
             st);
  FUZZ_CHECK(in(s->max_message_bytes >> 20, 1, 1 << 20) &&
                 s->max_message_bytes % (1 << 20) == 0 &&
                 in(s->max_pushed_bytes >> 20, 1, 1 << 20) &&
                 in(s->max_graphs, 1, 1 << 20) &&
                 in(s->max_sessions, 1, 1 << 20) &&
                 in(s->max_steps, 1, 1 << 16) &&
                 in(s->max_connections, 1, 1 << 16) &&
                 in(s->idle_connection_ms, 1, MS_MAX) &&
                 in(s->session_ttl_ms, 1, MS_MAX), st);
  FUZZ_CHECK(in(s->inter_op_threads, 0, 1024) && in(s->rpc_threads, 1, 1024) &&
                 in(s->log_level, LOG_ERR, LOG_DEBUG), st);
  bool tcp = strcmp(s->transport, "tcp") == 0 ||
             strcmp(s->transport, "tls+tcp") == 0;
  FUZZ_CHECK(in(s->metrics_port_offset, 0, 65534) &&
                 (tcp || s->metrics_port_offset == 0) &&
                 in(s->slurm_base_port, 0, 65535), st);
}

/* Jobs: one master task, unique names, counts or distinct addresses. */
static void check_jobs(const tf_cluster_spec *s, const tf_status *st) {
  int masters = 0;
  FUZZ_CHECK(s->n_jobs >= 1, st);
  for (int j = 0; j < s->n_jobs; j++) {
    const tf_cluster_job *job = &s->jobs[j];
    size_t l = strlen(job->name);
    FUZZ_CHECK(l >= 1 && l <= 63 &&
                   strspn(job->name, "abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == l &&
                   in(job->n_tasks, 1, 65536), st);
    FUZZ_CHECK((job->addrs == NULL) == s->counts, st);
    masters += strcmp(job->name, "master") == 0 ? job->n_tasks : 0;
    for (int k = 0; k < j; k++) {
      FUZZ_CHECK(strcmp(s->jobs[k].name, job->name) != 0, st);
    }
    for (int t = 0; job->addrs != NULL && t < job->n_tasks; t++) {
      char why[256];
      FUZZ_CHECK(tf__cluster_addr_check(s->transport, job->addrs[t], why,
                                        sizeof why), st);
      for (int k = 0; k <= j; k++) {
        for (int u = 0; u < (k == j ? t : s->jobs[k].n_tasks); u++) {
          FUZZ_CHECK(strcmp(s->jobs[k].addrs[u], job->addrs[t]) != 0, st);
        }
      }
    }
  }
  FUZZ_CHECK(masters == 1 && tf_cluster_spec_job(s, "master") != NULL, st);
}

/* "fuzz.yaml:L:C: " with L and C within the text. */
static void check_error(tf_code c, const tf_status *st, const uint8_t *data,
                        size_t size) {
  FUZZ_CHECK(c == TF_INVALID_ARGUMENT, st);
  static const char pre[] = FILE_NAME ":";
  FUZZ_CHECK(strncmp(st->msg, pre, sizeof pre - 1) == 0, st);
  char *e;
  long line = strtol(st->msg + sizeof pre - 1, &e, 10);
  FUZZ_CHECK(*e == ':', st);
  long col = strtol(e + 1, &e, 10);
  FUZZ_CHECK(e[0] == ':' && e[1] == ' ' && e[2] != '\0', st);
  size_t breaks = 0; /* YAML breaks lines at \n, \r, NEL, LS and PS */
  for (size_t i = 0; i < size; i++) {
    breaks += data[i] == '\n' || data[i] == '\r' || data[i] == 0x85 ||
              (data[i] == 0xe2 && i + 2 < size && data[i + 1] == 0x80);
  }
  /* libyaml puts the end of a text whose last line has no break at the
   * start of the line after it. */
  bool at_end = (size_t)line == breaks + 2 && col == 1;
  FUZZ_CHECK(line >= 1 && ((size_t)line <= breaks + 1 || at_end) &&
                 col >= 1 && (size_t)col <= size + 1, st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  tf_code c = tf_cluster_spec_parse((const char *)data, size, FILE_NAME, &s,
                                    &st);
  if (c != TF_OK) {
    check_error(c, &st, data, size);
    FUZZ_CHECK(s == NULL, &st);
    return 0;
  }
  check_bounds(s, &st);
  check_jobs(s, &st);
  buf b = {NULL, 0, 0};
  write_spec(&b, s);
  tf_cluster_spec *again = NULL;
  if (tf_cluster_spec_parse(b.p, b.n, FILE_NAME, &again, &st) != TF_OK) {
    fprintf(stderr, "written spec:\n%s\n", b.p);
    FUZZ_CHECK(false, &st);
  }
  if (!same_spec(s, again)) {
    fprintf(stderr, "written spec:\n%s\n", b.p);
    FUZZ_CHECK(false, &st);
  }
  tf_cluster_spec_free(again);
  tf_cluster_spec_free(s);
  free(b.p);
  return 0;
}
