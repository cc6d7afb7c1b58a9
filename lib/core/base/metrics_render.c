/* metrics_render.c: tf_metrics_render (metrics.h), the Prometheus text
 * exposition format 0.0.4. Per family: "# HELP" (backslash and newline
 * escaped), "# TYPE", then one line per series, label values escaped
 * (backslash, double quote, newline); a histogram writes cumulative
 * _bucket lines in increasing le, le="+Inf", _sum and _count, where +Inf
 * and _count are the same number. Values print exactly when integral
 * (up to 2^53), else in the shortest form that reads back the same;
 * NaN and infinities as NaN, +Inf, -Inf. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/metrics_impl.h"
#include "lib/core/base/util.h"

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void buf_reserve(buf *b, size_t more) {
  if (b->n + more + 1 > b->cap) {
    size_t cap = b->cap > 0 ? b->cap : 4096;
    while (b->n + more + 1 > cap) {
      cap *= 2;
    }
    b->p = tf__xrealloc(b->p, cap);
    b->cap = cap;
  }
}

static void buf_put(buf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void buf_str(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  TF_ASSERT(n >= 0 && (size_t)n < sizeof tmp);
  buf_put(b, tmp, (size_t)n);
}

/* s with '\\' and '\n' escaped, and '"' too when in_label. */
static void buf_escaped(buf *b, const char *s, bool in_label) {
  for (; *s != '\0'; s++) {
    if (*s == '\\') {
      buf_put(b, "\\\\", 2);
    } else if (*s == '\n') {
      buf_put(b, "\\n", 2);
    } else if (*s == '"' && in_label) {
      buf_put(b, "\\\"", 2);
    } else {
      buf_put(b, s, 1);
    }
  }
}

static void buf_double(buf *b, double v) {
  if (isnan(v)) {
    buf_str(b, "NaN");
  } else if (isinf(v)) {
    buf_str(b, v > 0 ? "+Inf" : "-Inf");
  } else if (v == floor(v) && fabs(v) <= 9007199254740992.0) {
    buf_printf(b, "%.0f", v);
  } else {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(tmp, sizeof tmp, "%.*g", prec, v);
      if (strtod(tmp, NULL) == v) {
        break;
      }
    }
    buf_str(b, tmp);
  }
}

/* name{labels[,le="..."]} with le written only when le_text != NULL. */
static void series_head(buf *b, const tf_metric_family *f, const tf_metric *m,
                        const char *suffix, const char *le_text) {
  buf_str(b, f->name);
  buf_str(b, suffix);
  if (f->n_labels == 0 && le_text == NULL) {
    return;
  }
  buf_put(b, "{", 1);
  for (int i = 0; i < f->n_labels; i++) {
    buf_printf(b, "%s%s=\"", i > 0 ? "," : "", f->labels[i]);
    buf_escaped(b, m->values[i], true);
    buf_put(b, "\"", 1);
  }
  if (le_text != NULL) {
    buf_printf(b, "%sle=\"%s\"", f->n_labels > 0 ? "," : "", le_text);
  }
  buf_put(b, "}", 1);
}

static void render_histogram(buf *b, const tf_metric_family *f, const tf_metric *m) {
  uint64_t cum = 0;
  for (int i = 0; i <= f->n_buckets; i++) {
    cum += atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
    buf tmp = {0};
    if (i < f->n_buckets) {
      buf_double(&tmp, f->bounds[i]);
    }
    series_head(b, f, m, "_bucket", i < f->n_buckets ? tmp.p : "+Inf");
    free(tmp.p);
    buf_printf(b, " %" PRIu64 "\n", cum);
  }
  series_head(b, f, m, "_sum", NULL);
  buf_put(b, " ", 1);
  buf_double(b, tf__metrics_bits_dbl(atomic_load_explicit(&m->sum_bits, memory_order_relaxed)));
  buf_put(b, "\n", 1);
  series_head(b, f, m, "_count", NULL);
  buf_printf(b, " %" PRIu64 "\n", cum);
}

static void render_series(buf *b, const tf_metric_family *f, const tf_metric *m) {
  if (f->type == TF_METRIC_HISTOGRAM) {
    render_histogram(b, f, m);
    return;
  }
  series_head(b, f, m, "", NULL);
  buf_put(b, " ", 1);
  uint64_t i = atomic_load_explicit(&m->ival, memory_order_relaxed);
  double d = tf__metrics_bits_dbl(atomic_load_explicit(&m->dbits, memory_order_relaxed));
  if (d == 0) {
    buf_printf(b, "%" PRIu64, i);
  } else {
    buf_double(b, (double)i + d);
  }
  buf_put(b, "\n", 1);
}

static const char *type_name(tf_metric_type t) {
  return t == TF_METRIC_COUNTER ? "counter" : t == TF_METRIC_GAUGE ? "gauge" : "histogram";
}

/* Whether m is written: in a TF_METRICS_RESET family, only the series a
 * collector set in this render are (a task that went away drops out). */
static bool shown(const tf_metric_family *f, const tf_metric *m) {
  return (f->flags & TF_METRICS_RESET) == 0 ||
         atomic_load_explicit(&m->touched, memory_order_relaxed);
}

static void render_family(buf *b, tf_metric_family *f) {
  pthread_mutex_lock(&f->mu);
  bool head = false;
  for (int i = 0; i < f->n_series; i++) {
    if (!shown(f, f->series[i])) {
      continue;
    }
    if (!head) {
      buf_printf(b, "# HELP %s ", f->name);
      buf_escaped(b, f->help, false);
      buf_printf(b, "\n# TYPE %s %s\n", f->name, type_name(f->type));
      head = true;
    }
    render_series(b, f, f->series[i]);
  }
  pthread_mutex_unlock(&f->mu);
}

/* The family after f (the first when f is NULL), read under r->mu: a
 * registration may be appending meanwhile. */
static tf_metric_family *next_family(tf_metrics *r, const tf_metric_family *f) {
  pthread_mutex_lock(&r->mu);
  tf_metric_family *n = f != NULL ? f->next : r->families;
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* Zeroes the series of TF_METRICS_RESET families, then runs the
 * collectors (r->cmu held). */
static void run_collectors(tf_metrics *r) {
  for (tf_metric_family *f = next_family(r, NULL); f != NULL; f = next_family(r, f)) {
    if ((f->flags & TF_METRICS_RESET) == 0) {
      continue;
    }
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->n_series; i++) {
      tf_metric_set(f->series[i], 0);
      atomic_store_explicit(&f->series[i]->touched, false, memory_order_relaxed);
    }
    pthread_mutex_unlock(&f->mu);
  }
  for (tf_metrics_collector *c = r->collectors; c != NULL; c = c->next) {
    c->fn(c->arg);
  }
}

void tf_metrics_render(tf_metrics *r, char **out, size_t *len) {
  buf b = {0};
  buf_reserve(&b, 0);
  b.p[0] = '\0';
  pthread_mutex_lock(&r->cmu);
  run_collectors(r);
  for (tf_metric_family *f = next_family(r, NULL); f != NULL; f = next_family(r, f)) {
    render_family(&b, f);
  }
  pthread_mutex_unlock(&r->cmu);
  *out = b.p;
  if (len != NULL) {
    *len = b.n;
  }
}
