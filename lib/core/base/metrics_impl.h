/* metrics_impl.h: the registry's structures, shared by metrics.c (the
 * registry and updates) and metrics_render.c (the text format). */
#ifndef TF_CORE_BASE_METRICS_IMPL_H
#define TF_CORE_BASE_METRICS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "lib/core/base/metrics.h"
#include "lib/core/base/strmap.h"

struct tf_metric {
  tf_metric_family *fam;
  char *values[TF_METRICS_MAX_LABELS]; /* cleaned label values */
  _Atomic uint64_t ival;               /* a counter's integer part */
  _Atomic uint64_t dbits;              /* a double's bits: a counter's rest, a gauge */
  _Atomic uint64_t *buckets;           /* histograms: n_buckets + 1 (the last: +Inf) */
  _Atomic uint64_t sum_bits;           /* histograms: the sum's bits */
  atomic_bool touched;                 /* TF_METRICS_RESET families: set since the reset */
};

struct tf_metric_family {
  tf_metrics *reg;
  char *name, *help;
  tf_metric_type type;
  unsigned flags;
  int n_labels;
  char *labels[TF_METRICS_MAX_LABELS];
  int n_buckets;
  double bounds[TF_METRICS_MAX_BUCKETS];
  pthread_mutex_t mu; /* guards series, n_series, cap, index */
  tf_metric **series;
  int n_series, cap;
  tf__strmap index;   /* series_key -> tf_metric * */
  tf_metric sink;     /* what lookups past the cap get */
  tf_metric_family *next;
};

struct tf_metrics_collector {
  void (*fn)(void *arg);
  void *arg;
  tf_metrics_collector *next;
};

struct tf_metrics {
  pthread_mutex_t mu;  /* guards families, tail, by_name */
  tf_metric_family *families, *tail;
  tf__strmap by_name;
  pthread_mutex_t cmu; /* guards collectors; held for a whole render */
  tf_metrics_collector *collectors;
};

double tf__metrics_bits_dbl(uint64_t b);

#endif
