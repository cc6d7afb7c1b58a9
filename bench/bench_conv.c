/* bench_conv.c: the CPU convolution and pooling kernels, forward and
 * backward, on the layer shapes of the Fashion-MNIST CNN at batch 64
 * (conv 5x5x32 SAME on 28x28x1, maxpool 2, conv 5x5x64 SAME on 14x14x32,
 * maxpool 2; NHWC, float32).
 *
 * Each op runs through tf_kernel_run_node (init, compute, free, as
 * constant folding and the eager API call it; the executor calls compute
 * alone) on fixed random inputs; after a warm-up each case reports the
 * median and the minimum of its reps in ms (the minimum is the steadier
 * figure on a shared machine) and, for convolutions, median GFLOP/s counting
 * 2 * N * OH * OW * KH * KW * Cin * Cout per call (the same count for the
 * forward op and both backprops). Build and run:
 *   make build/bench/bench_conv && build/bench/bench_conv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/framework/kernel.h"
#include "lib/devices/cpu/cpu_blas.h"
#include "tf/tf.h"

#define REPS 31
#define WARMUP 3

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "bench_conv: %s: %s\n", what, st->msg);
  exit(1);
}

static tf_tensor *random_tensor(tf_shape s, unsigned *seed) {
  tf_status st;
  tf_tensor *t;
  if (tf_tensor_new(TF_FLOAT32, &s, &t, &st) != TF_OK) {
    die("tensor", &st);
  }
  float *p = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    p[i] = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
  }
  return t;
}

static tf_tensor *sizes_tensor(const tf_shape *s) {
  tf_status st;
  tf_tensor *t;
  tf_shape vs = tf_shape_of(1, 4);
  if (tf_tensor_new(TF_INT32, &vs, &t, &st) != TF_OK) {
    die("tensor", &st);
  }
  for (int i = 0; i < 4; i++) ((int32_t *)t->data)[i] = (int32_t)s->dims[i];
  return t;
}

/* A graph with op on Placeholders of the inputs' dtypes. */
static tf_node *build(tf_graph *g, const char *op, tf_tensor *const *in,
                      int n_in, bool pool) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, "op");
  for (int i = 0; i < n_in; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    tf_node_builder *pb = tf_node_begin(g, "Placeholder", name);
    tf_node_set_attr(pb, "dtype", tf_attr_type_v(in[i]->dtype));
    tf_node *p = tf_node_finish(pb, &st);
    if (p == NULL) {
      die("Placeholder", &st);
    }
    tf_node_add_input(b, (tf_output){p, 0});
  }
  static const int64_t ones[4] = {1, 1, 1, 1}, twos[4] = {1, 2, 2, 1};
  tf_node_set_attr(b, "strides", tf_attr_int_list(pool ? twos : ones, 4));
  tf_node_set_attr(b, "padding", tf_attr_string(pool ? "VALID" : "SAME"));
  if (pool) {
    tf_node_set_attr(b, "ksize", tf_attr_int_list(twos, 4));
  }
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) {
    die(op, &st);
  }
  return n;
}

/* Median ms of running op on in; *min_ms gets the fastest rep. */
static double time_op(const char *op, tf_tensor *const *in, int n_in,
                      bool pool, double *min_ms) {
  tf_graph *g = tf_graph_new();
  tf_node *n = build(g, op, in, n_in, pool);
  double t[REPS];
  tf_status st;
  tf_status_init(&st);
  for (int rep = -WARMUP; rep < REPS; rep++) {
    tf_tensor *out = NULL;
    double t0 = now_ms();
    if (tf_kernel_run_node(n, NULL, in, &out, &st) != TF_OK) {
      die(op, &st);
    }
    double dt = now_ms() - t0;
    tf_tensor_unref(out);
    if (rep >= 0) {
      t[rep] = dt;
    }
  }
  tf_graph_free(g);
  qsort(t, REPS, sizeof t[0], cmp_double);
  *min_ms = t[0];
  return t[REPS / 2];
}

static void conv_layer(const char *name, tf_shape xs, tf_shape fs,
                       unsigned *seed) {
  tf_shape ys = tf_shape_of(4, xs.dims[0], xs.dims[1], xs.dims[2], fs.dims[3]);
  tf_tensor *x = random_tensor(xs, seed), *f = random_tensor(fs, seed);
  tf_tensor *dy = random_tensor(ys, seed);
  tf_tensor *xsz = sizes_tensor(&xs), *fsz = sizes_tensor(&fs);
  double flop = 2.0 * (double)(ys.dims[0] * ys.dims[1] * ys.dims[2]) *
                (double)(fs.dims[0] * fs.dims[1] * fs.dims[2] * fs.dims[3]);
  tf_tensor *fwd[2] = {x, f}, *bin[3] = {xsz, f, dy}, *bfl[3] = {x, fsz, dy};
  const char *ops[3] = {"Conv2D", "Conv2DBackpropInput",
                        "Conv2DBackpropFilter"};
  tf_tensor *const *ins[3] = {fwd, bin, bfl};
  for (int i = 0; i < 3; i++) {
    double lo, ms = time_op(ops[i], ins[i], i == 0 ? 2 : 3, false, &lo);
    printf("%-6s %-22s %8.2f %8.2f %8.1f\n", name, ops[i], ms, lo,
           flop / ms / 1e6);
  }
  tf_tensor *all[] = {x, f, dy, xsz, fsz};
  for (int i = 0; i < 5; i++) tf_tensor_unref(all[i]);
}

static void pool_layer(const char *name, tf_shape xs, unsigned *seed) {
  tf_shape ys = tf_shape_of(4, xs.dims[0], xs.dims[1] / 2, xs.dims[2] / 2,
                            xs.dims[3]);
  tf_tensor *x = random_tensor(xs, seed), *dy = random_tensor(ys, seed);
  double lo, ms = time_op("MaxPool", &x, 1, true, &lo);
  printf("%-6s %-22s %8.2f %8.2f\n", name, "MaxPool", ms, lo);
  tf_tensor *y = NULL;
  tf_graph *g = tf_graph_new();
  tf_status st;
  if (tf_kernel_run_node(build(g, "MaxPool", &x, 1, true), NULL, &x, &y,
                         &st) != TF_OK) {
    die("MaxPool", &st);
  }
  tf_graph_free(g);
  tf_tensor *in[3] = {x, y, dy};
  ms = time_op("MaxPoolGrad", in, 3, true, &lo);
  printf("%-6s %-22s %8.2f %8.2f\n", name, "MaxPoolGrad", ms, lo);
  tf_tensor *all[] = {x, y, dy};
  for (int i = 0; i < 3; i++) tf_tensor_unref(all[i]);
}

int main(void) {
  unsigned seed = 4242u;
  printf("CNN layers at batch 64, float32 NHWC, %d reps (OpenBLAS threads "
         "%d)\n%-6s %-22s %8s %8s %8s\n", REPS, tf__blas_num_threads(),
         "layer", "op", "med_ms", "min_ms", "GFLOP/s");
  conv_layer("conv1", tf_shape_of(4, 64, 28, 28, 1),
             tf_shape_of(4, 5, 5, 1, 32), &seed);
  pool_layer("pool1", tf_shape_of(4, 64, 28, 28, 32), &seed);
  conv_layer("conv2", tf_shape_of(4, 64, 14, 14, 32),
             tf_shape_of(4, 5, 5, 32, 64), &seed);
  pool_layer("pool2", tf_shape_of(4, 64, 14, 14, 64), &seed);
  return 0;
}
