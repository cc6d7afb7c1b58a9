/* metrics.c: the Prometheus metrics registry (metrics.h). Families live in
 * a list and a name index under the registry's mutex; a family's series
 * live in an array and an index keyed by the length-prefixed label values
 * under the family's mutex, and never move or go away while the registry
 * lives, so callers keep series pointers. Values are atomics: counters an
 * integer part (fetch_add) plus a double part (compare-and-swap on its
 * bits), gauges the double part, histograms one count per bucket and the
 * sum; a histogram's _count is the sum of its bucket counts, so le="+Inf"
 * always equals it. Rendering is in metrics_render.c. */
#include "lib/core/base/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/metrics_impl.h"
#include "lib/core/base/util.h"

const double tf_metrics_seconds_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     5,      10,    30,     60};
const int tf_metrics_n_seconds_buckets =
    (int)(sizeof tf_metrics_seconds_buckets / sizeof tf_metrics_seconds_buckets[0]);

/* ---- atomic doubles -------------------------------------------------------- */

static uint64_t dbl_bits(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

double tf__metrics_bits_dbl(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

static void atomic_add_dbl(_Atomic uint64_t *p, double v) {
  uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(p, &old, dbl_bits(tf__metrics_bits_dbl(old) + v),
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* ---- registry -------------------------------------------------------------- */

tf_metrics *tf_metrics_new(void) {
  tf_metrics *r = tf__xcalloc(1, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->cmu, NULL);
  tf__strmap_init(&r->by_name);
  return r;
}

static void series_free(tf_metric *m, int n_labels) {
  for (int i = 0; i < n_labels; i++) {
    free(m->values[i]);
  }
  free(m->buckets);
}

static void family_free(tf_metric_family *f) {
  for (int i = 0; i < f->n_series; i++) {
    series_free(f->series[i], f->n_labels);
    free(f->series[i]);
  }
  series_free(&f->sink, 0);
  free(f->series);
  tf__strmap_fini(&f->index);
  for (int i = 0; i < f->n_labels; i++) {
    free(f->labels[i]);
  }
  free(f->name);
  free(f->help);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

void tf_metrics_free(tf_metrics *r) {
  if (r == NULL) {
    return;
  }
  for (tf_metric_family *f = r->families, *next; f != NULL; f = next) {
    next = f->next;
    family_free(f);
  }
  for (tf_metrics_collector *c = r->collectors, *next; c != NULL; c = next) {
    next = c->next;
    free(c);
  }
  tf__strmap_fini(&r->by_name);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->cmu);
  free(r);
}

static tf_metrics *global;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void) { global = tf_metrics_new(); }

tf_metrics *tf_metrics_global(void) {
  pthread_once(&global_once, global_init);
  return global;
}

/* ---- families -------------------------------------------------------------- */

static bool valid_name(const char *s, bool colon) {
  if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9')) {
    return false;
  }
  for (; *s != '\0'; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || (colon && c == ':');
    if (!ok) {
      return false;
    }
  }
  return true;
}

/* Splits "a,b" into f->labels, checking each name. */
static void family_set_labels(tf_metric_family *f, const char *labels) {
  const char *p = labels != NULL ? labels : "";
  while (*p != '\0') {
    const char *comma = strchr(p, ',');
    size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
    TF_ASSERT(f->n_labels < TF_METRICS_MAX_LABELS);
    char *l = tf__xstrndup(p, n);
    TF_ASSERT(valid_name(l, false) && strncmp(l, "__", 2) != 0);
    TF_ASSERT(strcmp(l, "le") != 0 || f->type != TF_METRIC_HISTOGRAM);
    f->labels[f->n_labels++] = l;
    p += n + (comma != NULL);
  }
}

static void series_init(tf_metric_family *f, tf_metric *m) {
  m->fam = f;
  if (f->type == TF_METRIC_HISTOGRAM) {
    m->buckets = tf__xcalloc((size_t)f->n_buckets + 1, sizeof *m->buckets);
  }
}

static tf_metric_family *family_new(const char *name, const char *help, tf_metric_type type,
                                    const char *labels, const double *buckets, int n_buckets,
                                    unsigned flags) {
  TF_ASSERT(valid_name(name, true));
  tf_metric_family *f = tf__xcalloc(1, sizeof *f);
  f->name = tf__xstrdup(name);
  f->help = tf__xstrdup(help != NULL ? help : "");
  f->type = type;
  f->flags = flags;
  family_set_labels(f, labels);
  if (type == TF_METRIC_HISTOGRAM) {
    TF_ASSERT(n_buckets > 0 && n_buckets <= TF_METRICS_MAX_BUCKETS);
    for (int i = 0; i < n_buckets; i++) {
      TF_ASSERT(isfinite(buckets[i]) && (i == 0 || buckets[i] > buckets[i - 1]));
      f->bounds[i] = buckets[i];
    }
    f->n_buckets = n_buckets;
  }
  pthread_mutex_init(&f->mu, NULL);
  tf__strmap_init(&f->index);
  series_init(f, &f->sink);
  return f;
}

/* Whether an existing family matches a new registration's type and labels. */
static bool family_matches(const tf_metric_family *f, tf_metric_type type, const char *labels) {
  if (f->type != type) {
    return false;
  }
  char joined[TF_METRICS_MAX_LABELS * 64] = "";
  for (int i = 0; i < f->n_labels; i++) {
    size_t n = strlen(joined);
    snprintf(joined + n, sizeof joined - n, "%s%s", i > 0 ? "," : "", f->labels[i]);
  }
  return strcmp(joined, labels != NULL ? labels : "") == 0;
}

tf_metric_family *tf_metrics_family(tf_metrics *r, const char *name, const char *help,
                                    tf_metric_type type, const char *labels,
                                    const double *buckets, int n_buckets, unsigned flags) {
  pthread_mutex_lock(&r->mu);
  tf_metric_family *f = tf__strmap_get(&r->by_name, name, NULL);
  if (f == NULL) {
    f = family_new(name, help, type, labels, buckets, n_buckets, flags);
    f->reg = r;
    *(r->tail != NULL ? &r->tail->next : &r->families) = f;
    r->tail = f;
    tf__strmap_put(&r->by_name, name, f);
  }
  pthread_mutex_unlock(&r->mu);
  TF_ASSERT(family_matches(f, type, labels));
  return f;
}

tf_metric_family *tf_metrics_counter(const char *name, const char *help, const char *labels) {
  return tf_metrics_family(tf_metrics_global(), name, help, TF_METRIC_COUNTER, labels, NULL, 0,
                           0);
}

tf_metric_family *tf_metrics_gauge(const char *name, const char *help, const char *labels,
                                   unsigned flags) {
  return tf_metrics_family(tf_metrics_global(), name, help, TF_METRIC_GAUGE, labels, NULL, 0,
                           flags);
}

tf_metric_family *tf_metrics_histogram(const char *name, const char *help, const char *labels,
                                       const double *buckets, int n_buckets) {
  return tf_metrics_family(tf_metrics_global(), name, help, TF_METRIC_HISTOGRAM, labels,
                           buckets, n_buckets, 0);
}

/* ---- series ---------------------------------------------------------------- */

/* v cut to TF_METRICS_MAX_VALUE_LEN bytes with every byte that is not part
 * of valid UTF-8 replaced by '?' (Prometheus rejects a scrape with an
 * invalid label value). */
static char *clean_value(const char *v) {
  size_t n = strlen(v);
  char *s = tf__xstrndup(v, n < TF_METRICS_MAX_VALUE_LEN ? n : TF_METRICS_MAX_VALUE_LEN);
  unsigned char *u = (unsigned char *)s;
  for (size_t i = 0; u[i] != '\0';) {
    int len = u[i] < 0x80 ? 1 : (u[i] >> 5) == 6 ? 2 : (u[i] >> 4) == 14 ? 3
              : (u[i] >> 3) == 30 ? 4 : 0;
    bool ok = len > 0;
    for (int k = 1; ok && k < len; k++) {
      ok = (u[i + k] & 0xC0) == 0x80;
    }
    if (!ok) {
      u[i++] = '?';
      continue;
    }
    i += (size_t)len;
  }
  return s;
}

static char *series_key(const tf_metric_family *f, const char *const *values) {
  size_t n = 1;
  for (int i = 0; i < f->n_labels; i++) {
    n += 12 + strlen(values[i] != NULL ? values[i] : "");
  }
  char *key = tf__xmalloc(n);
  size_t off = 0;
  for (int i = 0; i < f->n_labels; i++) {
    const char *v = values[i] != NULL ? values[i] : "";
    off += (size_t)snprintf(key + off, n - off, "%zu:%s", strlen(v), v);
  }
  key[off] = '\0';
  return key;
}

static void count_drop(tf_metric_family *f) {
  tf_metrics *r = f->reg;
  tf_metric_family *d = tf_metrics_family(
      r, "tf_metrics_dropped_series_total",
      "Series lookups refused because their family had reached its cap on series",
      TF_METRIC_COUNTER, "family", NULL, 0, 0);
  if (d != f) {
    tf_metric_add_u64(tf_metrics_series1(d, f->name), 1);
  }
}

tf_metric *tf_metrics_series(tf_metric_family *f, const char *const *values) {
  char *key = series_key(f, values);
  pthread_mutex_lock(&f->mu);
  tf_metric *m = tf__strmap_get(&f->index, key, NULL);
  bool dropped = false;
  if (m == NULL && f->n_series >= TF_METRICS_MAX_SERIES) {
    m = &f->sink;
    dropped = true;
  } else if (m == NULL) {
    m = tf__xcalloc(1, sizeof *m);
    series_init(f, m);
    for (int i = 0; i < f->n_labels; i++) {
      m->values[i] = clean_value(values[i] != NULL ? values[i] : "");
    }
    if (f->n_series == f->cap) {
      f->cap = f->cap > 0 ? f->cap * 2 : 8;
      f->series = tf__xrealloc(f->series, (size_t)f->cap * sizeof *f->series);
    }
    f->series[f->n_series++] = m;
    tf__strmap_put(&f->index, key, m);
  }
  pthread_mutex_unlock(&f->mu);
  free(key);
  if (dropped) {
    count_drop(f);
  }
  return m;
}

tf_metric *tf_metrics_series1(tf_metric_family *f, const char *v) {
  TF_ASSERT(f->n_labels == (v != NULL ? 1 : 0));
  const char *vals[1] = {v};
  return tf_metrics_series(f, vals);
}

/* ---- updates --------------------------------------------------------------- */

void tf_metric_add(tf_metric *m, double v) {
  if (m == NULL || isnan(v) || (v < 0 && m->fam->type == TF_METRIC_COUNTER)) {
    return;
  }
  atomic_add_dbl(&m->dbits, v);
  atomic_store_explicit(&m->touched, true, memory_order_relaxed);
}

void tf_metric_add_u64(tf_metric *m, uint64_t n) {
  if (m != NULL) {
    atomic_fetch_add_explicit(&m->ival, n, memory_order_relaxed);
    atomic_store_explicit(&m->touched, true, memory_order_relaxed);
  }
}

void tf_metric_set(tf_metric *m, double v) {
  if (m != NULL) {
    atomic_store_explicit(&m->ival, 0, memory_order_relaxed);
    atomic_store_explicit(&m->dbits, dbl_bits(v), memory_order_relaxed);
    atomic_store_explicit(&m->touched, true, memory_order_relaxed);
  }
}

void tf_metric_observe(tf_metric *m, double v) {
  if (m == NULL || m->buckets == NULL || isnan(v)) {
    return;
  }
  const tf_metric_family *f = m->fam;
  int i = 0;
  while (i < f->n_buckets && v > f->bounds[i]) {
    i++;
  }
  atomic_add_dbl(&m->sum_bits, v);
  atomic_fetch_add_explicit(&m->buckets[i], 1, memory_order_relaxed);
}

double tf_metric_value(const tf_metric *m) {
  if (m->buckets != NULL) {
    uint64_t n = 0;
    for (int i = 0; i <= m->fam->n_buckets; i++) {
      n += atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
    }
    return (double)n;
  }
  return (double)atomic_load_explicit(&m->ival, memory_order_relaxed) +
         tf__metrics_bits_dbl(atomic_load_explicit(&m->dbits, memory_order_relaxed));
}

/* ---- collectors ------------------------------------------------------------ */

tf_metrics_collector *tf_metrics_add_collector(tf_metrics *r, void (*fn)(void *arg),
                                               void *arg) {
  tf_metrics_collector *c = tf__xcalloc(1, sizeof *c);
  c->fn = fn;
  c->arg = arg;
  pthread_mutex_lock(&r->cmu);
  c->next = r->collectors;
  r->collectors = c;
  pthread_mutex_unlock(&r->cmu);
  return c;
}

void tf_metrics_remove_collector(tf_metrics *r, tf_metrics_collector *c) {
  if (c == NULL) {
    return;
  }
  pthread_mutex_lock(&r->cmu);
  for (tf_metrics_collector **p = &r->collectors; *p != NULL; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      break;
    }
  }
  pthread_mutex_unlock(&r->cmu);
  free(c);
}
