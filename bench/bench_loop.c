/* bench_loop.c: non-strict loops (EuroSys 2018 §3; make bench-loop).
 *
 * A tf_while_loop of ITERS iterations whose bodies do not depend on each
 * other: each iteration runs a chain of CHAIN (Mul, Tanh) pairs on a
 * [64, 64] loop invariant (about 1 ms on one core; every kernel is too
 * small for the intra-op pool, so only running iterations side by side
 * uses the second core) and adds its sum to an accumulator, the only
 * value carried to the next iteration besides the counter. The same loop
 * runs with parallel_iterations 1 and 8 on a session with the default
 * inter-op pool (one thread per core); medians of REPS Runs; both give the
 * same result, which is checked. Then the CPU allocator's peak during
 * loops of 1,000 and 100,000 iterations with parallel_iterations 8: the
 * live iterations are bounded by the window, so the peak must not grow
 * with the trip count. Last line: `parallel_iterations_speedup: R`
 * (time with 1 over time with 8; goal >= 1.7 on two cores). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tf/tf.h"

#define ITERS 200
#define CHAIN 60
#define REPS 5

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "bench_loop: %s: %s\n", what, st->msg);
  exit(1);
}

static tf_output op(tf_graph *g, const char *name, const tf_output *in, int n) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, name, NULL);
  for (int i = 0; i < n; i++) tf_node_add_input(b, in[i]);
  tf_node *node = tf_node_finish(b, &st);
  if (node == NULL) die(name, &st);
  return (tf_output){node, 0};
}

static tf_output constant(tf_graph *g, tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", NULL);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  tf_tensor_unref(t);
  if (n == NULL) die("Const", &st);
  return (tf_output){n, 0};
}

typedef struct loop_arg {
  int64_t iters;
  int chain;
} loop_arg;

static tf_code cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                    tf_output *pred, void *arg, tf_status *st) {
  loop_arg *a = arg;
  tf_output in[2] = {v[0], constant(g, tf_tensor_scalar_i64(a->iters))};
  *pred = op(g, "Less", in, 2);
  return TF_OK;
}

/* next = (i + 1, acc + sum(tanh(x * ... ))) with the chain on the invariant. */
static tf_code body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                    tf_output *next, void *arg, tf_status *st) {
  loop_arg *a = arg;
  tf_output y = inv[0];
  for (int k = 0; k < a->chain; k++) {
    tf_output in[2] = {y, inv[0]};
    y = op(g, "Tanh", (tf_output[]){op(g, "Mul", in, 2)}, 1);
  }
  int32_t axes[2] = {0, 1};
  tf_output sin[2] = {y, constant(g, tf_tensor_vec_i32(2, axes))};
  tf_output acc[2] = {v[1], op(g, "Sum", sin, 2)};
  tf_output inc[2] = {v[0], constant(g, tf_tensor_scalar_i64(1))};
  next[0] = op(g, "Add", inc, 2);
  next[1] = op(g, "Add", acc, 2);
  return TF_OK;
}

/* A graph with the loop; *out gets the accumulator's exit. */
static tf_graph *build(int64_t iters, int chain, int parallel, tf_output *out) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_shape s = tf_shape_of(2, 64, 64);
  tf_tensor *x;
  if (tf_tensor_new(TF_FLOAT32, &s, &x, &st) != TF_OK) die("tensor", &st);
  for (int64_t i = 0; i < x->n; i++) ((float *)x->data)[i] = (float)((i * 37) % 101) / 101.0f;
  tf_output inv = constant(g, x);
  tf_output vars[2] = {constant(g, tf_tensor_scalar_i64(0)),
                       constant(g, tf_tensor_scalar_f32(0))};
  tf_output res[2];
  loop_arg a = {iters, chain};
  if (tf_while_loop(g, "loop", vars, 2, &inv, 1, cond, body, &a, parallel, res, &st) != TF_OK) {
    die("while", &st);
  }
  *out = res[1];
  return g;
}

/* Median seconds per Run of the loop; *value gets its result. */
static double time_loop(int parallel, float *value) {
  tf_status st;
  tf_output out;
  tf_graph *g = build(ITERS, CHAIN, parallel, &out);
  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) die("session", &st);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(out.node), out.index);
  const char *f = name;
  double t[REPS + 1];
  for (int r = 0; r <= REPS; r++) { /* the first builds the executor */
    tf_tensor *v;
    double t0 = now_s();
    if (tf_session_run(s, NULL, NULL, NULL, 0, &f, &v, 1, NULL, 0, NULL, &st) != TF_OK) {
      die("run", &st);
    }
    t[r] = now_s() - t0;
    *value = *(float *)v->data;
    tf_tensor_unref(v);
  }
  qsort(t + 1, REPS, sizeof *t, cmp_d);
  tf_session_free(s);
  tf_graph_free(g);
  return t[1 + REPS / 2];
}

/* The CPU allocator's peak bytes above those in use before, during one
 * Run of a loop of iters iterations (a chain of 2 on the invariant). */
static int64_t loop_peak(int64_t iters, int parallel) {
  tf_status st;
  tf_output out;
  tf_graph *g = build(iters, 2, parallel, &out);
  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) die("session", &st);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(out.node), out.index);
  const char *f = name;
  tf_allocator *a = tf_cpu_allocator();
  tf_allocator_reset_peak(a);
  int64_t base = tf_allocator_get_stats(a).bytes_in_use;
  tf_tensor *v;
  if (tf_session_run(s, NULL, NULL, NULL, 0, &f, &v, 1, NULL, 0, NULL, &st) != TF_OK) {
    die("run", &st);
  }
  int64_t peak = tf_allocator_get_stats(a).peak_bytes - base;
  tf_tensor_unref(v);
  tf_session_free(s);
  tf_graph_free(g);
  return peak;
}

int main(void) {
  printf("bench_loop: %d iterations of %d (Mul, Tanh) pairs on [64, 64] each, "
         "independent but for an accumulator; median of %d Runs\n", ITERS, CHAIN, REPS);
  float v1, v8;
  double t1 = time_loop(1, &v1);
  double t8 = time_loop(8, &v8);
  if (v1 != v8) {
    fprintf(stderr, "bench_loop: parallel_iterations changed the result: %.9g vs %.9g\n",
            (double)v1, (double)v8);
    return 1;
  }
  printf("parallel_iterations=1: %.2f ms (%.3f ms per iteration)\n", t1 * 1e3, t1 * 1e3 / ITERS);
  printf("parallel_iterations=8: %.2f ms (%.3f ms per iteration)\n", t8 * 1e3, t8 * 1e3 / ITERS);
  int64_t small = loop_peak(1000, 8), large = loop_peak(100000, 8);
  printf("allocator peak during the loop, parallel_iterations=8: %lld bytes for 1,000 "
         "iterations, %lld bytes for 100,000\n", (long long)small, (long long)large);
  printf("parallel_iterations_speedup: %.2f\n", t1 / t8);
  return 0;
}
