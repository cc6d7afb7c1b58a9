/* metrics_http.h: the daemons' Prometheus endpoint. A libmicrohttpd server
 * on its own polling thread answers GET (and HEAD) /metrics with the
 * registry's text (lib/core/base/metrics.h), "text/plain; version=0.0.4;
 * charset=utf-8"; any other path is 404 and any other method 405. It
 * keeps at most 32 connections, closes one idle for 10 s, and caps what a
 * request may send (a huge URL gets 414, not memory). */
#ifndef TF_CMD_COMMON_METRICS_HTTP_H
#define TF_CMD_COMMON_METRICS_HTTP_H

#include "lib/core/base/metrics.h"
#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_metrics_http tf_metrics_http;

/* Starts serving reg on addr, "host:port": host an IPv4 address, a
 * [bracketed] IPv6 address or a name (its first address is used), port
 * 0..65535 (0: any free port, see tf_metrics_http_port). On failure
 * returns INVALID_ARGUMENT (a malformed address) or UNAVAILABLE (cannot
 * resolve or bind), with a message naming the address, and *out is NULL. */
tf_code tf_metrics_http_start(const char *addr, tf_metrics *reg, tf_metrics_http **out,
                              tf_status *st);

/* The port h listens on. */
int tf_metrics_http_port(const tf_metrics_http *h);

/* Stops serving (waits for the polling thread) and frees h. Accepts NULL. */
void tf_metrics_http_stop(tf_metrics_http *h);

/* What a daemon for (job, task) of spec serves metrics on: flag (the
 * --metrics-address value) when given ("off": nothing), else the spec's
 * metrics section (tf_cluster_metrics_address). *out: "host:port"
 * (malloc'd) or NULL for none. */
tf_code tf_metrics_http_address(const tf_cluster_spec *spec, const char *job, int task,
                                const char *flag, char **out, tf_status *st);

/* Everything a daemon does for metrics at start: finds its address
 * (tf_metrics_http_address), sets process_start_time_seconds and starts
 * the server on the process-wide registry. *out stays NULL when metrics
 * are off. Logs where it serves. */
tf_code tf_metrics_http_start_daemon(const tf_cluster_spec *spec, const char *job, int task,
                                     const char *flag, tf_metrics_http **out, tf_status *st);

#endif
