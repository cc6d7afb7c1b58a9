/* bench_loop.c: while loops in the local session (`make bench-loop`).
 *
 * 1. parallel_iterations: a loop of PAR_TRIPS iterations whose only
 *    dependence between iterations is the counter; each iteration runs a
 *    chain of MatMuls of float32 matrices by the identity (so values stay
 *    put; each GEMM small enough that OpenBLAS runs it on one thread),
 *    about 1 ms of work per iteration in all: COARSE_CHAIN MatMuls of
 *    COARSE_N x COARSE_N (about 40 us each), and, for the executor's cost
 *    per node, FINE_CHAIN of FINE_N x FINE_N (about 6 us each). The
 *    step's median time with parallel_iterations = 1 and = 8 over
 *    PAR_REPS Runs, and their ratio, par8_speedup (coarse; goal >= 1.7 on
 *    two cores) and par8_speedup_fine. Also each setting's concurrency,
 *    from one traced Run: the nodes' summed run times over the Run's span
 *    (1: one node at a time; up to the inter-op threads), which other
 *    processes' load does not hide as it hides the wall-time ratio.
 * 2. memory: a loop whose iterations each make a 64 KiB tensor (the
 *    invariant times the counter), holds it while MEM_CHAIN small MatMuls
 *    run and scales it by their sum to make the next loop value. The
 *    CPU allocator's peak above what was in use before the Run, for 1,000
 *    and 100,000 iterations at parallel_iterations = 8 and for 100,000 at
 *    32, with the bound the window sets, (window + 1) x 64 KiB (each live
 *    iteration's tensor and the one passed to the next): the peak stays
 *    under it whatever the trip count (mem_peak_ratio_100k_vs_1k, goal
 *    <= 1; how close to the bound depends on how far the counter runs
 *    ahead of the bodies, which the scheduling decides).
 * Each loop's value is checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tf/tf.h"

#define N 64 /* the memory loop's identity */
#define COARSE_N 128
#define COARSE_CHAIN 24
#define FINE_N 64
#define FINE_CHAIN 170
#define MEM_CHAIN 3
#define PAR_TRIPS 64
#define PAR_REPS 7
#define MEM_ELEMS 16384 /* 64 KiB of float32 */

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

static tf_node *op(tf_graph *g, const char *type, const char *name, const tf_output *in, int n,
                   tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, type, name);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  return tf_node_finish(b, st);
}

static tf_node *cnst(tf_graph *g, const char *name, tf_tensor *t, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node *n = tf_node_finish(b, st);
  tf_tensor_unref(t);
  return n;
}

static tf_code cond_fn(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *pred, void *arg, tf_status *st) {
  tf_node *n = op(g, "Less", "less", (tf_output[]){v[0], inv[0]}, 2, st);
  *pred = (tf_output){n, 0};
  return n != NULL ? TF_OK : st->code;
}

/* What a body does: a chain of links MatMuls, or the memory loop's. */
typedef struct body_cfg {
  bool chain;
  int links;
} body_cfg;

/* i + 1 and t = (that as float) times the invariant inv[1]; chain: y =
 * cfg->links MatMuls of t by inv[1]; else y = t * sum(MEM_CHAIN MatMuls
 * of inv[2] by itself), so that t lives while the MatMuls run. */
static tf_code body_fn(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                       tf_output *next, void *arg, tf_status *st) {
  const body_cfg *cfg = arg;
  bool chain = cfg->chain;
  tf_node *one = cnst(g, "one", tf_tensor_scalar_i32(1), st);
  tf_node *inc = one ? op(g, "Add", "inc", (tf_output[]){v[0], {one, 0}}, 2, st) : NULL;
  tf_node_builder *b = tf_node_begin(g, "Cast", "f");
  tf_node_add_input(b, (tf_output){inc, 0});
  tf_node_set_attr(b, "DstT", tf_attr_type_v(TF_FLOAT32));
  tf_node *f = inc ? tf_node_finish(b, st) : NULL;
  tf_node *y = f ? op(g, "Mul", "scaled", (tf_output[]){inv[1], {f, 0}}, 2, st) : NULL;
  tf_output m = chain ? (tf_output){y, 0} : inv[2];
  int links = chain ? cfg->links : MEM_CHAIN;
  for (int k = 0; y != NULL && m.node != NULL && k < links; k++) {
    m = (tf_output){op(g, "MatMul", NULL, (tf_output[]){m, chain ? inv[1] : inv[2]}, 2, st), 0};
  }
  if (!chain && y != NULL && m.node != NULL) {
    tf_node *axes = cnst(g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}), st);
    tf_node *sum = axes ? op(g, "Sum", "sum", (tf_output[]){m, {axes, 0}}, 2, st) : NULL;
    m = (tf_output){sum ? op(g, "Mul", "held", (tf_output[]){{y, 0}, {sum, 0}}, 2, st) : NULL,
                    0};
  }
  if (y == NULL || m.node == NULL) {
    return st->code;
  }
  next[0] = (tf_output){inc, 0};
  next[1] = m;
  return TF_OK;
}

/* while (i < n) { i += 1; y = f(i) }, n fed; fetch "i_out", "y_out". */
static tf_tensor *identity(int n);

static tf_graph *build(tf_tensor *inv, int par, body_cfg cfg, tf_tensor *y0) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "n");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node *n = tf_node_finish(b, &st);
  tf_node *w = n ? cnst(g, "w", inv, &st) : NULL;
  tf_node *i0 = w ? cnst(g, "i0", tf_tensor_scalar_i32(0), &st) : NULL;
  tf_node *yi = i0 ? cnst(g, "y0", y0, &st) : NULL;
  tf_node *e = yi ? cnst(g, "e", identity(N), &st) : NULL; /* its sum is N */
  tf_output out[2];
  if (e == NULL ||
      tf_while_loop(g, "loop", (tf_output[]){{i0, 0}, {yi, 0}}, 2,
                    (tf_output[]){{n, 0}, {w, 0}, {e, 0}}, 3, cond_fn, body_fn, &cfg, par, out,
                    &st) != TF_OK ||
      !op(g, "Identity", "i_out", &out[0], 1, &st) || !op(g, "Identity", "y_out", &out[1], 1, &st)) {
    die("building the loop", &st);
  }
  return g;
}

/* One Run of trips iterations; returns its seconds and checks the counter
 * and y[0] == trips * inv0. With conc, traces the Run and sets *conc to
 * its nodes' summed run times over the span from the first start to the
 * last end: how many nodes ran at once on average. */
static double run(tf_session *s, int trips, float inv0, double *conc) {
  tf_tensor *n = tf_tensor_scalar_i32(trips), *out[2] = {NULL, NULL};
  const char *feed = "n", *fetch[2] = {"i_out:0", "y_out:0"};
  tf_run_options ro = {.timeout_ms = 600000, .trace = conc != NULL};
  tf_run_metadata md = {0};
  tf_status st;
  double t0 = now_s();
  if (tf_session_run(s, &ro, &feed, &n, 1, fetch, out, 2, NULL, 0, conc ? &md : NULL, &st) !=
      TF_OK) {
    die("run", &st);
  }
  double t = now_s() - t0;
  float y0 = ((float *)out[1]->data)[0];
  if (((int32_t *)out[0]->data)[0] != trips || y0 != (float)trips * inv0) {
    fprintf(stderr, "bench_loop: %d trips gave i %d, y[0] %g\n", trips,
            ((int32_t *)out[0]->data)[0], y0);
    exit(1);
  }
  if (conc != NULL) {
    int64_t busy = 0, first = INT64_MAX, last = INT64_MIN;
    for (int k = 0; k < md.n_timings; k++) {
      const tf_node_timing *x = &md.timings[k];
      busy += x->end_ns - x->start_ns;
      first = x->start_ns < first ? x->start_ns : first;
      last = x->end_ns > last ? x->end_ns : last;
    }
    *conc = last > first ? (double)busy / (double)(last - first) : 0;
    tf_run_metadata_fini(&md);
  }
  tf_tensor_unref(n);
  tf_tensor_unref(out[0]);
  tf_tensor_unref(out[1]);
  return t;
}

static tf_tensor *zeros(tf_shape sh) {
  tf_tensor *t = NULL;
  tf_status st;
  if (tf_tensor_new_zeros(TF_FLOAT32, &sh, &t, &st) != TF_OK) {
    die("zeros", &st);
  }
  return t;
}

static tf_tensor *identity(int n) {
  tf_tensor *t = zeros(tf_shape_of(2, n, n));
  for (int i = 0; i < n; i++) {
    ((float *)t->data)[i * n + i] = 1.0f;
  }
  return t;
}

/* The median seconds of a PAR_TRIPS-iteration Run at parallel_iterations
 * par of links MatMuls of n x n per iteration; *conc gets the concurrency
 * of one more, traced Run. */
static double time_par(int par, int n, int links, double *conc) {
  tf_graph *g = build(identity(n), par, (body_cfg){true, links}, zeros(tf_shape_of(2, n, n)));
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) {
    die("session", &st);
  }
  double t[PAR_REPS];
  run(s, PAR_TRIPS, 1.0f, NULL);
  for (int r = 0; r < PAR_REPS; r++) {
    t[r] = run(s, PAR_TRIPS, 1.0f, NULL);
  }
  run(s, PAR_TRIPS, 1.0f, conc);
  tf_session_free(s);
  tf_graph_free(g);
  qsort(t, PAR_REPS, sizeof t[0], cmp_d);
  return t[PAR_REPS / 2];
}

/* The allocator's peak above the bytes in use before a Run of trips. */
static double mem_peak(int par, int trips, double *secs) {
  tf_tensor *inv = zeros(tf_shape_of(1, MEM_ELEMS));
  for (int i = 0; i < MEM_ELEMS; i++) {
    ((float *)inv->data)[i] = 0.5f;
  }
  tf_graph *g = build(inv, par, (body_cfg){false, 0}, zeros(tf_shape_of(1, MEM_ELEMS)));
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) {
    die("session", &st);
  }
  run(s, 10, 0.5f * N, NULL); /* builds the executor */
  tf_allocator *a = tf_cpu_allocator();
  int64_t before = tf_allocator_get_stats(a).bytes_in_use;
  tf_allocator_reset_peak(a);
  *secs = run(s, trips, 0.5f * N, NULL);
  int64_t peak = tf_allocator_get_stats(a).peak_bytes;
  tf_session_free(s);
  tf_graph_free(g);
  return (double)(peak - before);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double c1, c8;
  double t1 = time_par(1, COARSE_N, COARSE_CHAIN, &c1);
  double t8 = time_par(8, COARSE_N, COARSE_CHAIN, &c8);
  printf("par_iter_ms: %.3f (parallel_iterations 1, %d MatMuls of %dx%d)\n",
         t1 * 1e3 / PAR_TRIPS, COARSE_CHAIN, COARSE_N, COARSE_N);
  printf("par1_step_ms: %.2f\npar8_step_ms: %.2f\n", t1 * 1e3, t8 * 1e3);
  printf("par1_concurrency: %.2f\npar8_concurrency: %.2f\n", c1, c8);
  printf("par8_speedup: %.2f\n", t1 / t8);
  t1 = time_par(1, FINE_N, FINE_CHAIN, &c1);
  t8 = time_par(8, FINE_N, FINE_CHAIN, &c8);
  printf("par_iter_ms_fine: %.3f (parallel_iterations 1, %d MatMuls of %dx%d)\n",
         t1 * 1e3 / PAR_TRIPS, FINE_CHAIN, FINE_N, FINE_N);
  printf("par1_concurrency_fine: %.2f\npar8_concurrency_fine: %.2f\n", c1, c8);
  printf("par8_speedup_fine: %.2f\n", t1 / t8);
  double s1k, s100k, s100k32;
  double m1k = mem_peak(8, 1000, &s1k), m100k = mem_peak(8, 100000, &s100k);
  double m100k32 = mem_peak(32, 100000, &s100k32);
  printf("mem_peak_kib_1k_par8: %.0f\nmem_peak_kib_100k_par8: %.0f (%.2f s)\n", m1k / 1024,
         m100k / 1024, s100k);
  printf("mem_peak_kib_100k_par32: %.0f (%.2f s)\n", m100k32 / 1024, s100k32);
  printf("mem_window_bound_kib_par8: %d\nmem_window_bound_kib_par32: %d\n",
         (8 + 1) * MEM_ELEMS * 4 / 1024, (32 + 1) * MEM_ELEMS * 4 / 1024);
  printf("mem_peak_ratio_100k_vs_1k: %.2f\n", m100k / m1k);
  return 0;
}
