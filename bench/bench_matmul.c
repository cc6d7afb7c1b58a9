/* bench_matmul.c: the MatMul float32 CPU kernel against direct cblas_sgemm.
 *
 * For n = 256, 512, 1024 it builds one graph (two Placeholders and a
 * MatMul), looks the kernel up and runs init once, then calls compute
 * repeatedly through a tf_kernel_ctx, as the executor will, on fixed random
 * inputs; each call allocates its output through tf_kernel_alloc_output and
 * the output is released after the timing, as a consumer would. The
 * reference is cblas_sgemm on the same input buffers into a preallocated
 * C, with OpenBLAS configured by the library's thread policy. Kernel and
 * reference calls are interleaved (order alternating per rep) after a
 * warm-up, and each side reports the median of its reps. The last line is
 * `matmul_vs_sgemm: R`, the worst kernel/sgemm median ratio over sizes. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lib/core/framework/kernel.h"
#include "lib/devices/cpu/cpu_blas.h"
#include "tf/tf.h"

/* Reps per side: enough for ~0.4 s of sgemm per size (small sizes get
 * more samples, which steadies their medians on a busy machine), at least
 * 21 and at most 201, always odd. */
#define REPS_MIN 21
#define REPS_MAX 201
#define TARGET_MS 400.0
#define WARMUP 3

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "bench_matmul: %s: %s\n", what, st->msg);
  exit(1);
}

static tf_node *build_matmul(tf_graph *g, int64_t n) {
  tf_status st;
  tf_output in[2];
  for (int i = 0; i < 2; i++) {
    tf_node_builder *b = tf_node_begin(g, "Placeholder", i ? "b" : "a");
    tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
    tf_shape shape = tf_shape_make(2, (int64_t[]){n, n});
    tf_node_set_attr(b, "shape", tf_attr_shape(shape));
    tf_node *p = tf_node_finish(b, &st);
    if (p == NULL) {
      die("Placeholder", &st);
    }
    in[i] = (tf_output){p, 0};
  }
  tf_node_builder *b = tf_node_begin(g, "MatMul", "mm");
  tf_node_add_input(b, in[0]);
  tf_node_add_input(b, in[1]);
  tf_node *mm = tf_node_finish(b, &st);
  if (mm == NULL) {
    die("MatMul", &st);
  }
  return mm;
}

static tf_tensor *random_matrix(int64_t n, unsigned *seed) {
  tf_status st;
  tf_tensor *t;
  tf_shape s = tf_shape_make(2, (int64_t[]){n, n});
  if (tf_tensor_new(TF_FLOAT32, &s, &t, &st) != TF_OK) {
    die("tensor", &st);
  }
  float *p = t->data;
  for (int64_t i = 0; i < t->n; i++) {
    p[i] = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
  }
  return t;
}

typedef struct bench_result {
  int reps;
  double kernel_ms, sgemm_ms, max_diff, faults_per_call;
} bench_result;

/* Odd rep count giving about TARGET_MS of calls lasting est_ms each. */
static int reps_for(double est_ms) {
  double r = TARGET_MS / (est_ms > 1e-3 ? est_ms : 1e-3);
  int reps = r > REPS_MAX ? REPS_MAX : r < REPS_MIN ? REPS_MIN : (int)r;
  return reps | 1;
}

/* One kernel call: compute into a fresh output, which is returned. */
static tf_tensor *kernel_call(tf_kernel_ctx *ctx) {
  tf_tensor *out = NULL;
  ctx->outputs = &out;
  if (ctx->def->compute(ctx) != TF_OK) {
    die("compute", ctx->status);
  }
  return out;
}

static bench_result bench_size(int64_t n) {
  unsigned seed = 12345u + (unsigned)n;
  tf_graph *g = tf_graph_new();
  tf_node *mm = build_matmul(g, n);
  tf_status st;
  tf_status_init(&st);
  const tf_kernel_def *k = tf_kernel_for_node(mm, TF_DEVICE_CPU, &st);
  void *state = NULL;
  if (k == NULL || (k->init != NULL && k->init(mm, &state, &st) != TF_OK)) {
    die("kernel", &st);
  }
  tf_tensor *in[2] = {random_matrix(n, &seed), random_matrix(n, &seed)};
  tf_device *dev = tf_cpu_device();
  tf_kernel_ctx ctx = {.node = mm, .def = k, .state = state, .device = dev,
                       .pool = dev->pool, .n_inputs = 2, .inputs = in,
                       .n_outputs = 1, .status = &st};
  float *c = aligned_alloc(64, (size_t)(n * n) * sizeof(float));
  double *tk = malloc(REPS_MAX * sizeof(double));
  double *tr = malloc(REPS_MAX * sizeof(double));
  long faults = 0;
  bench_result r = {.reps = REPS_MAX};
  for (int rep = -WARMUP; rep < r.reps; rep++) {
    double t_ref = 0, t_ker = 0;
    for (int side = 0; side < 2; side++) {
      if ((side == 0) == (rep % 2 == 0)) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n,
                    (int)n, 1.0f, in[0]->data, (int)n, in[1]->data, (int)n,
                    0.0f, c, (int)n);
        t_ref = now_ms() - t0;
      } else {
        long f0 = minor_faults();
        double t0 = now_ms();
        tf_tensor *out = kernel_call(&ctx);
        t_ker = now_ms() - t0;
        if (rep >= 0) {
          faults += minor_faults() - f0;
        }
        if (rep == r.reps - 1) {
          for (int64_t i = 0; i < n * n; i++) {
            r.max_diff = fmax(r.max_diff, fabs(((float *)out->data)[i] - c[i]));
          }
        }
        tf_tensor_unref(out);
      }
    }
    if (rep == -1) {
      r.reps = reps_for(t_ref);
    }
    if (rep >= 0) {
      tk[rep] = t_ker;
      tr[rep] = t_ref;
    }
  }
  r.kernel_ms = median(tk, r.reps);
  r.sgemm_ms = median(tr, r.reps);
  r.faults_per_call = (double)faults / r.reps;
  free(c);
  free(tk);
  free(tr);
  tf_tensor_unref(in[0]);
  tf_tensor_unref(in[1]);
  if (k->free_state != NULL) {
    k->free_state(state);
  }
  tf_graph_free(g);
  return r;
}

int main(void) {
  const int64_t sizes[] = {256, 512, 1024};
  double worst = 0;
  printf("MatMul float32 kernel vs cblas_sgemm (medians of %d-%d reps "
         "after %d warm-up, interleaved; OpenBLAS threads %d)\n",
         REPS_MIN, REPS_MAX, WARMUP, tf__blas_num_threads());
  printf("%6s %5s %10s %10s %10s %10s %7s %11s %9s\n", "n", "reps",
         "kernel_ms", "sgemm_ms", "kern_GF/s", "sgemm_GF/s", "ratio",
         "faults/call", "max_diff");
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    int64_t n = sizes[i];
    bench_result r = bench_size(n);
    double flop = 2.0 * (double)n * (double)n * (double)n;
    double ratio = r.kernel_ms / r.sgemm_ms;
    worst = fmax(worst, ratio);
    printf("%6lld %5d %10.3f %10.3f %10.1f %10.1f %7.3f %11.1f %9.2g\n",
           (long long)n, r.reps, r.kernel_ms, r.sgemm_ms, flop / r.kernel_ms / 1e6,
           flop / r.sgemm_ms / 1e6, ratio, r.faults_per_call, r.max_diff);
  }
  printf("matmul_vs_sgemm: %.3f\n", worst);
  return 0;
}
