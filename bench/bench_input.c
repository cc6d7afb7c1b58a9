/* bench_input.c: throughput of the input pipeline on Fashion-MNIST: gzip'd
 * IDX images and labels -> readers (ReaderReadUpTo) -> DecodeRawExamples
 * -> RandomShuffleQueue -> QueueDequeueMany(batch) -> prefetched batches,
 * filled by queue runners, drained for some epochs by a loop that only
 * dequeues (throughput), then by one that spins STEP_US per batch like a
 * training step would (the dequeue time a training step pays once the
 * pipeline keeps ahead). Prints batches/s, images/s and that dequeue time,
 * and for reference the time to decompress the image file alone
 * (tf_idx_load). Needs dataset-fashion-mnist (exits 0 saying so without).
 *
 *   make build/bench/bench_input && build/bench/bench_input [epochs] [batch] [shuffle 0|1] [prefetch] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/core/base/util.h"
#include "tf/input.h"
#include "tf/tf.h"

#define DIR "/usr/share/datasets/fashion-mnist/"

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "bench_input: %s: %s %s\n", what, tf_code_name(st->code), st->msg);
  exit(1);
}

#define STEP_US 2000

/* Builds the pipeline, runs it to OUT_OF_RANGE; returns batches. With
 * step_us, spins that long after each batch and *deq_us gets the mean time
 * of the dequeue runs after the first 20. */
static int64_t drain(int64_t epochs, int64_t batch, bool shuffle, int64_t prefetch,
                     int64_t step_us, double *secs, double *deq_us) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  const char *files[2] = {DIR "train-images-idx3-ubyte.gz", DIR "train-labels-idx1-ubyte.gz"};
  tf_input_source src[2];
  tf_input_idx_image_sources(files, 28, 28, TF_INT32, src);
  tf_input_options o = {.sources = src, .n_sources = 2, .batch_size = batch,
                        .num_epochs = epochs, .shuffle = shuffle,
                        .capacity = 20 * batch, .min_after_dequeue = 10 * batch,
                        .seed = 7, .read_batch = 4 * batch,
                        .prefetch_batches = prefetch};
  tf_input_pipeline *p = tf_input_pipeline_new(g, &o, &st);
  if (p == NULL) die("pipeline", &st);
  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) die("session", &st);
  char f0[256], f1[256];
  tf_output o0 = tf_input_pipeline_output(p, 0), o1 = tf_input_pipeline_output(p, 1);
  snprintf(f0, sizeof f0, "%s:%d", tf_node_name(o0.node), o0.index);
  snprintf(f1, sizeof f1, "%s:%d", tf_node_name(o1.node), o1.index);
  const char *fetch[2] = {f0, f1};
  if (tf_input_pipeline_start(p, s, &st) != TF_OK) die("start", &st);
  int64_t t0 = tf__now_ns(), n = 0, deq_ns = 0;
  for (;;) {
    tf_tensor *out[2] = {NULL, NULL};
    int64_t d0 = tf__now_ns();
    tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, fetch, out, 2, NULL, 0, NULL, &st);
    if (rc == TF_OUT_OF_RANGE) break;
    if (rc != TF_OK) die("run", &st);
    if (++n > 20) deq_ns += tf__now_ns() - d0;
    tf_tensor_unref(out[0]);
    tf_tensor_unref(out[1]);
    for (int64_t spin = tf__now_ns() + step_us * 1000; tf__now_ns() < spin;) {
    }
  }
  *deq_us = n > 20 ? (double)deq_ns * 1e-3 / (double)(n - 20) : 0;
  *secs = (double)(tf__now_ns() - t0) * 1e-9;
  if (tf_input_pipeline_stop(p, 10000, &st) != TF_OK) die("pipeline error", &st);
  tf_input_pipeline_free(p);
  tf_session_free(s);
  tf_graph_free(g);
  return n;
}

int main(int argc, char **argv) {
  if (access(DIR "train-images-idx3-ubyte.gz", R_OK) != 0) {
    printf("bench_input: %s not installed (INSTALL_EXTRAS=1 scripts/install-deps.sh); skipped\n", DIR);
    return 0;
  }
  int64_t epochs = argc > 1 ? atoll(argv[1]) : 2;
  int64_t batch = argc > 2 ? atoll(argv[2]) : 128;
  bool shuffle = argc > 3 ? atoi(argv[3]) != 0 : true;
  tf_status st;
  tf_tensor *t;
  int64_t t0 = tf__now_ns();
  if (tf_idx_load(DIR "train-images-idx3-ubyte.gz", NULL, &t, &st) != TF_OK) die("load", &st);
  double load = (double)(tf__now_ns() - t0) * 1e-9;
  tf_tensor_unref(t);
  int64_t prefetch = argc > 4 ? atoll(argv[4]) : 0;
  double secs, deq, secs2, deq2;
  int64_t n = drain(epochs, batch, shuffle, prefetch, 0, &secs, &deq);
  int64_t n2 = drain(1, batch, shuffle, prefetch, STEP_US, &secs2, &deq2);
  printf("tf_idx_load of the 60000 training images (gunzip + copy): %.3f s\n", load);
  printf("pipeline: %lld epochs, batch %lld, %s, prefetch %lld: %lld batches in %.3f s\n",
         (long long)epochs, (long long)batch, shuffle ? "RandomShuffleQueue" : "FIFOQueue",
         (long long)prefetch, (long long)n, secs);
  printf("with a %d us step after each batch: %lld batches, mean dequeue run %.1f us\n",
         STEP_US, (long long)n2, deq2);
  printf("input_dequeue_us_per_step: %.1f\n", deq2);
  printf("input_batches_per_sec: %.0f\n", (double)n / secs);
  printf("input_images_per_sec: %.0f\n", (double)(n * batch) / secs);
  return 0;
}
