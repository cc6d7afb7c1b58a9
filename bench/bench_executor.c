/* bench_executor.c: the executor's per-node overhead through the local
 * session (the OSDI 2016 paper's null-op figure, 2,000,000 ops/s).
 *
 * Two graphs of 100,000 NoOp nodes: a chain (each node has a control
 * input from the previous one) and a wide fan (one source, 100,000 NoOps
 * on it, one sink on all of them). Each runs as a session target, first
 * with inter_op_threads = 1 (every node in the calling thread) and then
 * with the pool; the first Run builds and caches the executor and is not
 * timed. It also measures the empty-Run overhead: a Run of one NoOp target
 * through the cache. Both shapes run again with a step deadline far in
 * the future (timeout_ms 60000), to show what enforcing deadlines costs.
 * Medians of several Runs are reported; the last line is
 * `null_ops_per_sec: N`, the better of the two shapes on one thread
 * without a deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tf/tf.h"

#define N_NODES 100000
#define REPS 15
#define EMPTY_REPS 20000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static tf_node *noop(tf_graph *g, tf_node **ctrl, int n_ctrl) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "NoOp", NULL);
  for (int i = 0; i < n_ctrl; i++) tf_node_add_control_input(b, ctrl[i]);
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) {
    fprintf(stderr, "bench_executor: %s\n", st.msg);
    exit(1);
  }
  return n;
}

/* Returns the target node's name (static storage in the graph). */
static const char *build_chain(tf_graph *g) {
  tf_node *prev = noop(g, NULL, 0);
  for (int i = 1; i < N_NODES; i++) prev = noop(g, &prev, 1);
  return tf_node_name(prev);
}

static const char *build_fan(tf_graph *g) {
  tf_node *src = noop(g, NULL, 0);
  tf_node **mid = malloc(N_NODES * sizeof *mid);
  for (int i = 0; i < N_NODES - 2; i++) mid[i] = noop(g, &src, 1);
  tf_node *sink = noop(g, mid, N_NODES - 2);
  free(mid);
  return tf_node_name(sink);
}

#define FAR_TIMEOUT_MS 60000

static void run_or_die(tf_session *s, const char *target, int64_t timeout_ms) {
  tf_status st;
  tf_run_options o = {.timeout_ms = timeout_ms};
  if (tf_session_run(s, &o, NULL, NULL, 0, NULL, NULL, 0, &target, 1, NULL, &st) != TF_OK) {
    fprintf(stderr, "bench_executor: Run failed: %s\n", st.msg);
    exit(1);
  }
}

/* Median seconds per Run of target on a session with `threads`, each Run
 * with timeout_ms (0: no deadline). */
static double time_runs(tf_graph *g, const char *target, int threads, int reps,
                        int64_t timeout_ms) {
  tf_status st;
  tf_session_options o = {.inter_op_threads = threads};
  tf_session *s = tf_session_new(g, &o, &st);
  if (s == NULL) {
    fprintf(stderr, "bench_executor: %s\n", st.msg);
    exit(1);
  }
  run_or_die(s, target, timeout_ms); /* builds and caches the executor */
  double *t = malloc((size_t)reps * sizeof *t);
  for (int i = 0; i < reps; i++) {
    double t0 = now_s();
    run_or_die(s, target, timeout_ms);
    t[i] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  double med = t[reps / 2];
  free(t);
  tf_session_free(s);
  return med;
}

int main(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int pool = cpus > 1 ? (int)cpus : 2;
  printf("bench_executor: %d NoOp nodes per graph, %d timed Runs each, "
         "median; pool = %d inter-op threads\n", N_NODES, REPS, pool);

  tf_graph *g = tf_graph_new();
  const char *one = tf_node_name(noop(g, NULL, 0));
  double empty1 = time_runs(g, one, 1, EMPTY_REPS, 0);
  double emptyp = time_runs(g, one, pool, EMPTY_REPS, 0);
  double emptyd = time_runs(g, one, 1, EMPTY_REPS, FAR_TIMEOUT_MS);
  tf_graph_free(g);
  printf("empty Run (1 NoOp target, cached): %.2f us single-threaded, "
         "%.2f us with the pool, %.2f us single-threaded with a deadline\n",
         empty1 * 1e6, emptyp * 1e6, emptyd * 1e6);

  const char *names[2] = {"chain", "fan"};
  double best = 0;
  for (int k = 0; k < 2; k++) {
    g = tf_graph_new();
    double t0 = now_s();
    const char *target = k == 0 ? build_chain(g) : build_fan(g);
    double build = now_s() - t0;
    double t1 = time_runs(g, target, 1, REPS, 0);
    double tp = time_runs(g, target, pool, REPS, 0);
    double d1 = time_runs(g, target, 1, REPS, FAR_TIMEOUT_MS);
    double dp = time_runs(g, target, pool, REPS, FAR_TIMEOUT_MS);
    double ops1 = N_NODES / t1, opsp = N_NODES / tp;
    printf("%-5s: build %.0f ms; Run %.2f ms single-threaded (%.2f M ops/s), "
           "%.2f ms with the pool (%.2f M ops/s)\n", names[k], build * 1e3,
           t1 * 1e3, ops1 / 1e6, tp * 1e3, opsp / 1e6);
    printf("%-5s with a deadline: Run %.2f ms single-threaded (%.2f M ops/s), "
           "%.2f ms with the pool (%.2f M ops/s)\n", names[k], d1 * 1e3,
           N_NODES / d1 / 1e6, dp * 1e3, N_NODES / dp / 1e6);
    if (ops1 > best) best = ops1;
    tf_graph_free(g);
  }
  printf("null_ops_per_sec: %.0f\n", best);
  return 0;
}
