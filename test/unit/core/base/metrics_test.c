/* metrics_test.c: the Prometheus registry (lib/core/base/metrics.h). A
 * small registry renders to the exact expected text (HELP/TYPE once,
 * escaping, cumulative buckets, +Inf == _count, final newline); random
 * observations rendered and parsed back match counts and a float64 sum
 * recomputed here; threads adding concurrently give exact totals; the
 * series cap holds and counts drops; collectors add up on reset gauges and
 * never run once removed; bad label values are cleaned; registering a name
 * again with another type aborts; and promtool (when installed) accepts a
 * rendered sample. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/base/metrics.h"
#include "test/unit/testutil.h"

static char *render(tf_metrics *r) {
  char *out = NULL;
  size_t len = 0;
  tf_metrics_render(r, &out, &len);
  ck_assert_uint_eq(len, strlen(out));
  return out;
}

/* How many lines of text start with prefix. */
static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  size_t len = strlen(prefix);
  for (size_t i = 0; text[i] != '\0';) {
    n += strncmp(text + i, prefix, len) == 0;
    while (text[i] != '\0' && text[i] != '\n') {
      i++;
    }
    i += text[i] == '\n';
  }
  return n;
}

START_TEST(test_exact_render) {
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *c = tf_metrics_family(r, "tf_x_total", "Things done.\nSecond \\ line",
                                          TF_METRIC_COUNTER, "peer,code", NULL, 0, 0);
  const char *v1[] = {"a\"b\\c\nd", "OK"};
  const char *v2[] = {"w1", "ABORTED"};
  tf_metric_add_u64(tf_metrics_series(c, v1), 3);
  tf_metric_add_u64(tf_metrics_series(c, v2), 1);
  tf_metric_add(tf_metrics_series(c, v2), 0.5);
  tf_metric_family *g = tf_metrics_family(r, "tf_g_bytes", "A gauge", TF_METRIC_GAUGE, NULL,
                                          NULL, 0, 0);
  tf_metric_set(tf_metrics_series(g, NULL), -2.25);
  const double b[] = {0.1, 1, 2.5};
  tf_metric_family *h = tf_metrics_family(r, "tf_h_seconds", "H", TF_METRIC_HISTOGRAM, "role",
                                          b, 3, 0);
  tf_metric *hs = tf_metrics_series1(h, "w");
  tf_metric_observe(hs, 0.05);
  tf_metric_observe(hs, 0.1); /* le is inclusive */
  tf_metric_observe(hs, 2);
  tf_metric_observe(hs, 7);
  tf_metrics_family(r, "tf_empty", "no series: not rendered", TF_METRIC_GAUGE, NULL, NULL, 0,
                    0);
  char *out = render(r);
  const char *want =
      "# HELP tf_x_total Things done.\\nSecond \\\\ line\n"
      "# TYPE tf_x_total counter\n"
      "tf_x_total{peer=\"a\\\"b\\\\c\\nd\",code=\"OK\"} 3\n"
      "tf_x_total{peer=\"w1\",code=\"ABORTED\"} 1.5\n"
      "# HELP tf_g_bytes A gauge\n"
      "# TYPE tf_g_bytes gauge\n"
      "tf_g_bytes -2.25\n"
      "# HELP tf_h_seconds H\n"
      "# TYPE tf_h_seconds histogram\n"
      "tf_h_seconds_bucket{role=\"w\",le=\"0.1\"} 2\n"
      "tf_h_seconds_bucket{role=\"w\",le=\"1\"} 2\n"
      "tf_h_seconds_bucket{role=\"w\",le=\"2.5\"} 3\n"
      "tf_h_seconds_bucket{role=\"w\",le=\"+Inf\"} 4\n"
      "tf_h_seconds_sum{role=\"w\"} 9.15\n"
      "tf_h_seconds_count{role=\"w\"} 4\n";
  ck_assert_str_eq(out, want);
  ck_assert(tf_metrics_family(r, "tf_x_total", "other help", TF_METRIC_COUNTER, "peer,code",
                              NULL, 0, 0) == c);
  ck_assert_double_eq(tf_metric_value(hs), 4);
  free(out);
  tf_metrics_free(r);
}
END_TEST

/* Random observations: every cumulative bucket, the count and the sum
 * parsed back from the text match a recount done here in float64. */
START_TEST(test_histogram_parse_back) {
  tt_rng_reseed(tt_seed() ^ 0x6d657472);
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *h = tf_metrics_family(r, "tf_lat_seconds", "latency", TF_METRIC_HISTOGRAM,
                                          NULL, tf_metrics_seconds_buckets,
                                          tf_metrics_n_seconds_buckets, 0);
  tf_metric *m = tf_metrics_series(h, NULL);
  enum { N = 5000 };
  double sum = 0;
  static double obs[N];
  for (int i = 0; i < N; i++) {
    obs[i] = exp(tt_rand_uniform(log(1e-5), log(100.0)));
    sum += obs[i];
    tf_metric_observe(m, obs[i]);
  }
  char *out = render(r);
  for (int k = 0; k < tf_metrics_n_seconds_buckets; k++) {
    int want = 0;
    for (int i = 0; i < N; i++) {
      want += obs[i] <= tf_metrics_seconds_buckets[k];
    }
    char head[96];
    snprintf(head, sizeof head, "tf_lat_seconds_bucket{le=\"%g\"}",
             tf_metrics_seconds_buckets[k]);
    ck_assert_msg(tt_line_value(out, head) == want, "%s: got %g, want %d", head,
                  tt_line_value(out, head), want);
  }
  ck_assert_double_eq(tt_line_value(out, "tf_lat_seconds_bucket{le=\"+Inf\"}"), N);
  ck_assert_double_eq(tt_line_value(out, "tf_lat_seconds_count"), N);
  double got = tt_line_value(out, "tf_lat_seconds_sum");
  ck_assert_msg(fabs(got - sum) <= 1e-9 * sum, "sum %.17g, want %.17g", got, sum);
  ck_assert(out[strlen(out) - 1] == '\n');
  free(out);
  tf_metrics_free(r);
}
END_TEST

/* ---- concurrency ------------------------------------------------------------ */

enum { THREADS = 8, ROUNDS = 20000 };

typedef struct adder {
  tf_metrics *r;
  int id;
} adder;

static void *add_main(void *arg) {
  adder *a = arg;
  tf_metric_family *c = tf_metrics_family(a->r, "tf_adds_total", "adds", TF_METRIC_COUNTER,
                                          "peer", NULL, 0, 0);
  const double b[] = {1, 2};
  tf_metric_family *h = tf_metrics_family(a->r, "tf_obs_seconds", "obs", TF_METRIC_HISTOGRAM,
                                          NULL, b, 2, 0);
  tf_metric *hs = tf_metrics_series(h, NULL);
  char peer[16];
  for (int i = 0; i < ROUNDS; i++) {
    snprintf(peer, sizeof peer, "p%d", i % 4); /* lookups race with creation */
    tf_metric *m = tf_metrics_series1(c, peer);
    tf_metric_add_u64(m, 2);
    tf_metric_add(m, 0.5);
    tf_metric_observe(hs, (double)(i % 3) + 0.5);
  }
  return NULL;
}

START_TEST(test_concurrent_totals_exact) {
  tf_metrics *r = tf_metrics_new();
  pthread_t t[THREADS];
  adder a[THREADS];
  for (int i = 0; i < THREADS; i++) {
    a[i] = (adder){r, i};
    ck_assert_int_eq(pthread_create(&t[i], NULL, add_main, &a[i]), 0);
  }
  char *mid = render(r); /* a render while they run must not crash */
  free(mid);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
  }
  char *out = render(r);
  /* Each peer got THREADS * ROUNDS / 4 rounds of 2 + 0.5 (0.5 sums exactly). */
  double per_peer = (double)THREADS * ROUNDS / 4 * 2.5;
  for (int p = 0; p < 4; p++) {
    char head[64];
    snprintf(head, sizeof head, "tf_adds_total{peer=\"p%d\"}", p);
    ck_assert_double_eq(tt_line_value(out, head), per_peer);
  }
  ck_assert_double_eq(tt_line_value(out, "tf_obs_seconds_count"), THREADS * ROUNDS);
  ck_assert_double_eq(tt_line_value(out, "tf_obs_seconds_bucket{le=\"1\"}"),
                      THREADS * (ROUNDS / 3 + (ROUNDS % 3 > 0)));
  free(out);
  tf_metrics_free(r);
}
END_TEST

START_TEST(test_series_cap) {
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *c = tf_metrics_family(r, "tf_peers_total", "p", TF_METRIC_COUNTER, "peer",
                                          NULL, 0, 0);
  char peer[32];
  for (int i = 0; i < TF_METRICS_MAX_SERIES + 76; i++) {
    snprintf(peer, sizeof peer, "10.0.0.%d:%d", i % 256, i);
    tf_metric *m = tf_metrics_series1(c, peer);
    ck_assert_ptr_nonnull(m);
    tf_metric_add_u64(m, 1);
  }
  /* An existing series is still found past the cap. */
  tf_metric_add_u64(tf_metrics_series1(c, "10.0.0.0:0"), 1);
  char *out = render(r);
  ck_assert_int_eq(count_lines(out, "tf_peers_total{"), TF_METRICS_MAX_SERIES);
  ck_assert_double_eq(tt_line_value(out, "tf_peers_total{peer=\"10.0.0.0:0\"}"), 2);
  ck_assert_double_eq(
      tt_line_value(out, "tf_metrics_dropped_series_total{family=\"tf_peers_total\"}"), 76);
  free(out);
  tf_metrics_free(r);
}
END_TEST

/* ---- collectors --------------------------------------------------------------- */

typedef struct task_state {
  tf_metric_family *up;
  double buffered;
  int calls;
} task_state;

static void collect(void *arg) {
  task_state *t = arg;
  t->calls++;
  tf_metric_add(tf_metrics_series(t->up, NULL), t->buffered);
}

START_TEST(test_collectors_add_up) {
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *g = tf_metrics_family(r, "tf_buffered_bytes", "b", TF_METRIC_GAUGE, NULL,
                                          NULL, 0, TF_METRICS_RESET);
  task_state a = {g, 100, 0}, b = {g, 23, 0};
  tf_metrics_collector *ca = tf_metrics_add_collector(r, collect, &a);
  tf_metrics_collector *cb = tf_metrics_add_collector(r, collect, &b);
  for (int round = 0; round < 3; round++) { /* reset each time: no growth */
    char *out = render(r);
    ck_assert_double_eq(tt_line_value(out, "tf_buffered_bytes"), 123);
    free(out);
  }
  tf_metrics_remove_collector(r, ca);
  char *out = render(r);
  ck_assert_double_eq(tt_line_value(out, "tf_buffered_bytes"), 23);
  free(out);
  /* A series no collector sets drops out, with its HELP and TYPE. */
  tf_metric_family *jobs = tf_metrics_family(r, "tf_jobs", "j", TF_METRIC_GAUGE, "state", NULL,
                                             0, TF_METRICS_RESET);
  tf_metric_set(tf_metrics_series1(jobs, "running"), 1);
  out = render(r);
  ck_assert_ptr_null(strstr(out, "tf_jobs"));
  free(out);
  ck_assert_int_eq(a.calls, 3);
  ck_assert_int_eq(b.calls, 5);
  tf_metrics_remove_collector(r, cb);
  tf_metrics_remove_collector(r, NULL);
  tf_metrics_free(r);
}
END_TEST

START_TEST(test_label_values_cleaned) {
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *c = tf_metrics_family(r, "tf_v_total", "v", TF_METRIC_COUNTER, "peer",
                                          NULL, 0, 0);
  tf_metric_add_u64(tf_metrics_series1(c, "bad\xff\xc3(\xe2\x82\xac"), 1);
  char *longv = malloc(5000);
  memset(longv, 'x', 4999);
  longv[4999] = '\0';
  tf_metric_add_u64(tf_metrics_series1(c, longv), 1);
  free(longv);
  char *out = render(r);
  ck_assert_ptr_nonnull(strstr(out, "tf_v_total{peer=\"bad?" "?(\xe2\x82\xac\"} 1\n"));
  char want[TF_METRICS_MAX_VALUE_LEN + 40];
  int n = snprintf(want, sizeof want, "tf_v_total{peer=\"");
  memset(want + n, 'x', TF_METRICS_MAX_VALUE_LEN);
  snprintf(want + n + TF_METRICS_MAX_VALUE_LEN, sizeof want - (size_t)n - TF_METRICS_MAX_VALUE_LEN,
           "\"} 1\n");
  ck_assert_ptr_nonnull(strstr(out, want));
  free(out);
  tf_metrics_free(r);
}
END_TEST

START_TEST(test_type_mismatch_aborts) {
  tf_metrics *r = tf_metrics_new();
  tf_metrics_family(r, "tf_m_total", "m", TF_METRIC_COUNTER, "a", NULL, 0, 0);
  tf_metrics_family(r, "tf_m_total", "m", TF_METRIC_GAUGE, "a", NULL, 0, 0);
}
END_TEST

START_TEST(test_bad_name_aborts) {
  tf_metrics *r = tf_metrics_new();
  tf_metrics_family(r, "tf-bad", "m", TF_METRIC_COUNTER, NULL, NULL, 0, 0);
}
END_TEST

/* promtool check metrics: exit 0 means no parse error and no lint finding. */
START_TEST(test_promtool_accepts) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    fprintf(stderr, "metrics_test: SKIP promtool check: /usr/bin/promtool not installed\n");
    return;
  }
  tf_metrics *r = tf_metrics_new();
  tf_metric_family *c = tf_metrics_family(r, "tf_rpc_sent_bytes_total", "Bytes sent",
                                          TF_METRIC_COUNTER, "peer", NULL, 0, 0);
  tf_metric_add_u64(tf_metrics_series1(c, "/job:worker/task:0 \"q\"\\"), 1234);
  tf_metric_family *h = tf_metrics_family(r, "tf_step_duration_seconds", "Step latency",
                                          TF_METRIC_HISTOGRAM, "role",
                                          tf_metrics_seconds_buckets,
                                          tf_metrics_n_seconds_buckets, 0);
  tf_metric_observe(tf_metrics_series1(h, "worker"), 0.003);
  tf_metric_family *g = tf_metrics_family(r, "tf_jobs", "Jobs\nby state", TF_METRIC_GAUGE,
                                          "state", NULL, 0, 0);
  tf_metric_set(tf_metrics_series1(g, "running"), 2);
  char *out = render(r);
  char path[] = "/tmp/tf_metrics_test_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
  close(fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "/usr/bin/promtool check metrics < %s", path);
  int rc = system(cmd);
  unlink(path);
  ck_assert_msg(rc == 0, "promtool check metrics failed (%d) on:\n%s", rc, out);
  free(out);
  tf_metrics_free(r);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("metrics");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_exact_render);
  tcase_add_test(tc, test_histogram_parse_back);
  tcase_add_test(tc, test_concurrent_totals_exact);
  tcase_add_test(tc, test_series_cap);
  tcase_add_test(tc, test_collectors_add_up);
  tcase_add_test(tc, test_label_values_cleaned);
  tcase_add_test_raise_signal(tc, test_type_mismatch_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_bad_name_aborts, SIGABRT);
  tcase_add_test(tc, test_promtool_accepts);
  suite_add_tcase(s, tc);
  return s;
}
