/* metrics_http.c: GET /metrics over libmicrohttpd (metrics_http.h). The
 * server runs its own polling thread (MHD_USE_AUTO_INTERNAL_THREAD); each
 * scrape renders the registry into a fresh buffer that libmicrohttpd
 * frees once sent. The address is resolved here with getaddrinfo and
 * handed over as a sockaddr, so a failed bind names what was asked for. */
#include "cmd/common/metrics_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "tf/allocator.h"
#include "lib/runtime/log.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct tf_metrics_http {
  struct MHD_Daemon *d;
  tf_metrics *reg;
  int port;
  tf_metrics_collector *memory; /* the allocators' gauges (daemons only) */
};

/* A fixed body with a status code (404, 405, 500). */
static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned code, const char *text) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  if (r == NULL) {
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  if (code == MHD_HTTP_METHOD_NOT_ALLOWED) {
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  }
  enum MHD_Result ok = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
  (void)version;
  (void)upload_data;
  (void)con_cls;
  tf_metrics_http *h = cls;
  bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
  if (!get && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    *upload_data_size = 0; /* a body, if any, is not read */
    return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are allowed\n");
  }
  if (strcmp(url, "/metrics") != 0) {
    return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: metrics are at /metrics\n");
  }
  char *text = NULL;
  size_t len = 0;
  tf_metrics_render(h->reg, &text, &len);
  struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (r == NULL) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ok;
}

/* Splits "host:port" / "[v6]:port" and resolves it into ss. */
static tf_code resolve(const char *addr, struct sockaddr_storage *ss, tf_status *st) {
  const char *colon = strrchr(addr, ':');
  char host[256];
  const char *h = addr;
  size_t hn = colon != NULL ? (size_t)(colon - addr) : 0;
  if (hn >= 2 && addr[0] == '[' && addr[hn - 1] == ']') {
    h = addr + 1;
    hn -= 2;
  }
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;
  if (colon == NULL || hn == 0 || hn >= sizeof host || colon[1] == '\0' || *end != '\0' ||
      port < 0 || port > 65535) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "metrics address '%s': expected HOST:PORT "
                         "(port 0..65535; [v6]:PORT for IPv6)", addr);
  }
  memcpy(host, h, hn);
  host[hn] = '\0';
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  char ps[8];
  snprintf(ps, sizeof ps, "%ld", port);
  int rc = getaddrinfo(host, ps, &hints, &ai);
  if (rc != 0 || ai == NULL) {
    return tf_status_set(st, TF_UNAVAILABLE, "metrics address '%s': cannot resolve '%s': %s",
                         addr, host, gai_strerror(rc));
  }
  memset(ss, 0, sizeof *ss);
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  return TF_OK;
}

tf_code tf_metrics_http_start(const char *addr, tf_metrics *reg, tf_metrics_http **out,
                              tf_status *st) {
  *out = NULL;
  struct sockaddr_storage ss;
  TF_TRY(resolve(addr, &ss, st));
  tf_metrics_http *h = tf__xcalloc(1, sizeof *h);
  h->reg = reg;
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                          (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 32u,
                          MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
                          MHD_OPTION_END);
  if (h->d == NULL) {
    free(h);
    return tf_status_set(st, TF_UNAVAILABLE, "metrics address '%s': cannot listen (in use, "
                         "or not an address of this host)", addr);
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = info != NULL ? info->port : 0;
  *out = h;
  return TF_OK;
}

int tf_metrics_http_port(const tf_metrics_http *h) { return h->port; }

void tf_metrics_http_stop(tf_metrics_http *h) {
  if (h == NULL) {
    return;
  }
  MHD_stop_daemon(h->d);
  tf_metrics_remove_collector(h->reg, h->memory);
  free(h);
}

tf_code tf_metrics_http_address(const tf_cluster_spec *spec, const char *job, int task,
                                const char *flag, char **out, tf_status *st) {
  *out = NULL;
  if (flag != NULL) {
    if (strcmp(flag, "off") != 0) {
      *out = tf__xstrdup(flag);
    }
    return TF_OK;
  }
  return tf_cluster_metrics_address(spec, job, task, out, st);
}

/* The process's start as seconds since the epoch: /proc/self/stat's
 * starttime (clock ticks after boot) plus /proc/stat's btime; 0 if
 * either cannot be read. */
static double process_start_time(void) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f != NULL) {
    fclose(f);
  }
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  unsigned long long start = 0, btime = 0;
  for (int field = 2; p != NULL && field < 22; field++) {
    p = strchr(p + 1, ' ');
  }
  if (p == NULL || sscanf(p, " %llu", &start) != 1) {
    return 0;
  }
  f = fopen("/proc/stat", "r");
  while (f != NULL && fgets(buf, sizeof buf, f) != NULL) {
    if (sscanf(buf, "btime %llu", &btime) == 1) {
      break;
    }
  }
  if (f != NULL) {
    fclose(f);
  }
  long hz = sysconf(_SC_CLK_TCK);
  return btime > 0 && hz > 0 ? (double)btime + (double)start / (double)hz : 0;
}

/* The process's allocators (the CPU one): bytes in use and the peak. */
static void collect_memory(void *arg) {
  (void)arg;
  tf_metric_family *use = tf_metrics_gauge("tf_allocator_bytes_in_use",
                                           "Bytes allocated and not yet freed, by allocator",
                                           "allocator", 0);
  tf_metric_family *peak = tf_metrics_gauge(
      "tf_allocator_peak_bytes", "Largest bytes in use since the process started, by allocator",
      "allocator", 0);
  const tf_allocator *a = tf_cpu_allocator();
  tf_allocator_stats s = tf_allocator_get_stats(a);
  tf_metric_set(tf_metrics_series1(use, a->name), (double)s.bytes_in_use);
  tf_metric_set(tf_metrics_series1(peak, a->name), (double)s.peak_bytes);
}

tf_code tf_metrics_http_start_daemon(const tf_cluster_spec *spec, const char *job, int task,
                                     const char *flag, tf_metrics_http **out, tf_status *st) {
  *out = NULL;
  char *addr = NULL;
  TF_TRY(tf_metrics_http_address(spec, job, task, flag, &addr, st));
  if (addr == NULL) {
    return TF_OK;
  }
  tf_metric_family *f = tf_metrics_gauge("process_start_time_seconds",
                                         "Start time of the process since the Unix epoch",
                                         NULL, 0);
  tf_metric_set(tf_metrics_series(f, NULL), process_start_time());
  tf_code c = tf_metrics_http_start(addr, tf_metrics_global(), out, st);
  if (c == TF_OK) {
    (*out)->memory = tf_metrics_add_collector(tf_metrics_global(), collect_memory, NULL);
    tf_log(LOG_NOTICE, "metrics: serving /metrics on %s (port %d)", addr,
           tf_metrics_http_port(*out));
  }
  free(addr);
  return c;
}
