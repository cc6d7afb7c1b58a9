/* metrics.h: a process-wide registry of Prometheus metrics, usable from
 * every layer.
 *
 * A family has a name, help text, a type (counter, gauge, histogram),
 * label names and, for a histogram, bucket bounds; a series is one tuple
 * of label values in a family, created on first lookup and kept for the
 * life of the registry. A family holds at most TF_METRICS_MAX_SERIES
 * series: label values may come from outside (peer addresses), so a
 * lookup beyond the cap returns the family's sink series, which is never
 * rendered, and counts the drop in tf_metrics_dropped_series_total{family}.
 *
 * Updates are lock-free atomics on the series; only the lookup takes the
 * family's mutex, so hot paths look a series up once and keep the
 * pointer. Collectors are callbacks run at render time (one at a time,
 * under the registry's collector lock) that set gauges computed on
 * demand; the series of a family made with TF_METRICS_RESET are zeroed
 * before the collectors run, so several collectors (several tasks in one
 * process) add up instead of overwriting each other, and only the series
 * some collector set in this render are written (a job or task that is
 * gone drops out).
 *
 * tf_metrics_render writes the text exposition format 0.0.4: HELP and TYPE
 * once per family, then its series in creation order; histogram buckets
 * cumulative with le="+Inf" equal to _count. Families, series and
 * collectors are never freed from the process-wide registry
 * (tf_metrics_global); a private one (tf_metrics_new) frees everything in
 * tf_metrics_free. */
#ifndef TF_CORE_BASE_METRICS_H
#define TF_CORE_BASE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define TF_METRICS_MAX_SERIES 1024
#define TF_METRICS_MAX_LABELS 4
#define TF_METRICS_MAX_BUCKETS 32
/* Longer label values are cut to this many bytes (at a UTF-8 boundary). */
#define TF_METRICS_MAX_VALUE_LEN 200

typedef enum tf_metric_type {
  TF_METRIC_COUNTER,
  TF_METRIC_GAUGE,
  TF_METRIC_HISTOGRAM,
} tf_metric_type;

/* Family flags. */
enum {
  TF_METRICS_RESET = 1 << 0, /* zero every series before the collectors run;
                              * write only those they set */
};

typedef struct tf_metrics tf_metrics;
typedef struct tf_metric_family tf_metric_family;
typedef struct tf_metric tf_metric;
typedef struct tf_metrics_collector tf_metrics_collector;

/* The process-wide registry (created on first use, never freed). */
tf_metrics *tf_metrics_global(void);

/* A private registry (for tests); tf_metrics_free releases it with every
 * family, series and collector in it. Accepts NULL. */
tf_metrics *tf_metrics_new(void);
void tf_metrics_free(tf_metrics *r);

/* The family name in r, created on first call with the given help, type,
 * labels ("peer,method": comma-separated names, or NULL or "" for none;
 * at most TF_METRICS_MAX_LABELS), buckets (histograms only: n_buckets
 * strictly increasing finite upper bounds, +Inf implied; at most
 * TF_METRICS_MAX_BUCKETS) and flags. A later call with the same name
 * returns the same family; the type and labels must then match (a
 * mismatch, a name or label name Prometheus rejects, or bad buckets are
 * bugs: TF_ASSERT). Never NULL. */
tf_metric_family *tf_metrics_family(tf_metrics *r, const char *name, const char *help,
                                    tf_metric_type type, const char *labels,
                                    const double *buckets, int n_buckets, unsigned flags);

/* Shorthands for tf_metrics_family in the process-wide registry. */
tf_metric_family *tf_metrics_counter(const char *name, const char *help, const char *labels);
tf_metric_family *tf_metrics_gauge(const char *name, const char *help, const char *labels,
                                   unsigned flags);
tf_metric_family *tf_metrics_histogram(const char *name, const char *help,
                                       const char *labels, const double *buckets,
                                       int n_buckets);

/* Bucket bounds for durations in seconds: 100 us .. 60 s, about 2.5x apart. */
extern const double tf_metrics_seconds_buckets[];
extern const int tf_metrics_n_seconds_buckets;

/* The series of f for the label values (as many as f has labels; NULL
 * when it has none; a NULL value reads as ""), created on first use.
 * Values are copied. Past TF_METRICS_MAX_SERIES series, returns f's sink
 * (updates are kept but never rendered) and counts the drop. Never NULL.
 * Thread-safe; takes f's mutex. */
tf_metric *tf_metrics_series(tf_metric_family *f, const char *const *values);
/* The series of a family with one label (or none, when v is NULL and f has
 * no labels). */
tf_metric *tf_metrics_series1(tf_metric_family *f, const char *v);

/* Updates, lock-free. Counters only go up: tf_metric_add takes v >= 0
 * (a negative or NaN v is ignored). tf_metric_add_u64 is the cheap form
 * for counts and bytes. tf_metric_set is for gauges; tf_metric_add also
 * adds to a gauge (v may then be negative). tf_metric_observe is for
 * histograms. Each takes NULL (does nothing). */
void tf_metric_add(tf_metric *m, double v);
void tf_metric_add_u64(tf_metric *m, uint64_t n);
void tf_metric_set(tf_metric *m, double v);
void tf_metric_observe(tf_metric *m, double v);

/* The series' value now (a counter's or gauge's; a histogram's count). */
double tf_metric_value(const tf_metric *m);

/* Runs fn(arg) at every render of r, before the families are written.
 * fn sets gauges; it must not render or add collectors. Returns a handle
 * for tf_metrics_remove_collector. Never NULL. */
tf_metrics_collector *tf_metrics_add_collector(tf_metrics *r, void (*fn)(void *arg),
                                               void *arg);
/* Removes c (NULL: nothing). Once this returns, its fn is not running and
 * never runs again, so arg may be freed. */
void tf_metrics_remove_collector(tf_metrics *r, tf_metrics_collector *c);

/* Runs the collectors and writes every family with at least one series
 * to *out (malloc'd, NUL-terminated, ending in a newline unless empty;
 * the caller frees it); *len (may be NULL) gets its length. Aborts on
 * OOM, as the rest of lib/core/base does. */
void tf_metrics_render(tf_metrics *r, char **out, size_t *len);

#endif
