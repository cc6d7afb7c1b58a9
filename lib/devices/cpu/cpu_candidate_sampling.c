/* cpu_candidate_sampling.c: CPU kernels of LogUniformCandidateSampler and
 * ComputeAccidentalHits, after TF's range_sampler.cc and
 * candidate_sampler_ops.cc.
 *
 * The sampler draws k = floor(exp(u * log(range_max + 1)) - 1) % range_max
 * for u uniform in [0, 1) (two 32-bit Philox words per draw, as TF's
 * SimplePhilox::RandDouble), which has P(k) = log((k + 2) / (k + 1)) /
 * log(range_max + 1). Each compute reserves 2048 * num_sampled words of
 * the kernel instance's stream (cpu_random.h), as TF does; a unique draw
 * that rejects more than that reads on past its range. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"
#include "lib/devices/cpu/cpu_random.h"

/* 32-bit words reserved per sampled candidate (TF's samples32 / n). */
#define WORDS_PER_SAMPLE 2048

typedef struct sampler_state {
  tf__cpu_rng rng;
  int64_t num_true, num_sampled, range_max;
  bool unique;
  double log_range; /* log(range_max + 1) */
} sampler_state;

static tf_code sampler_init(const tf_node *node, void **state, tf_status *st) {
  sampler_state *s = tf__xcalloc(1, sizeof(*s));
  tf_code rc = tf_node_attr_get_int(node, "num_true", &s->num_true, st);
  if (rc == TF_OK) {
    rc = tf_node_attr_get_int(node, "num_sampled", &s->num_sampled, st);
  }
  if (rc == TF_OK) {
    rc = tf_node_attr_get_int(node, "range_max", &s->range_max, st);
  }
  if (rc == TF_OK) {
    rc = tf_node_attr_get_bool(node, "unique", &s->unique, st);
  }
  if (rc == TF_OK && (s->num_sampled < 1 || s->range_max < 1 ||
                      s->num_sampled > INT32_MAX ||
                      (s->unique && s->num_sampled > s->range_max))) {
    rc = tf_status_set(st, TF_INVALID_ARGUMENT, "%s (LogUniformCandidate"
                       "Sampler): need 1 <= num_sampled < 2^31, range_max "
                       ">= 1 and, when unique, num_sampled <= range_max; "
                       "got num_sampled = %" PRId64 ", range_max = %" PRId64,
                       tf_node_name(node), s->num_sampled, s->range_max);
  }
  if (rc == TF_OK) {
    rc = tf__cpu_rng_init(&s->rng, node, st);
  }
  if (rc != TF_OK) {
    free(s);
    return rc;
  }
  s->log_range = log1p((double)s->range_max);
  *state = s;
  return TF_OK;
}

static double log_uniform_p(const sampler_state *s, int64_t k) {
  return log(((double)k + 2.0) / ((double)k + 1.0)) / s->log_range;
}

/* TF's ExpectedCountHelper: p * num_sampled when every draw was kept (always
 * so without unique), else the chance 1 - (1 - p)^tries that tries draws hit
 * the value at least once. */
static float expected_count(double p, int64_t num_sampled, int64_t tries) {
  if (tries == num_sampled) {
    return (float)(p * (double)num_sampled);
  }
  return (float)-expm1((double)tries * log1p(-p));
}

static int64_t draw(const sampler_state *s, tf_philox_single *g) {
  uint32_t w0 = tf_philox_single_next(g);
  uint32_t w1 = tf_philox_single_next(g);
  double v = exp(tf_philox_u64_to_double(w0, w1) * s->log_range) - 1.0;
  return (int64_t)v % s->range_max;
}

/* Whether k is in the open-addressed set seen[0..mask] (slots hold k + 1,
 * 0 = empty); inserts it when not. */
static bool seen_insert(int64_t *seen, uint64_t mask, int64_t k) {
  uint64_t h = ((uint64_t)k * 0x9E3779B97F4A7C15ull) & mask;
  while (seen[h] != 0) {
    if (seen[h] == k + 1) {
      return true;
    }
    h = (h + 1) & mask;
  }
  seen[h] = k + 1;
  return false;
}

/* Fills out[0..num_sampled) and sets *tries to the number of draws made.
 * Unique: rejects repeats until num_sampled distinct values (num_sampled <=
 * range_max, so this ends with probability 1). RESOURCE_EXHAUSTED when the
 * set of values seen cannot be allocated. */
static tf_code sample(tf_kernel_ctx *ctx, const sampler_state *s,
                      tf_philox *gen, int64_t *out, int64_t *tries) {
  tf_philox_single g;
  tf_philox_single_init(&g, gen);
  int64_t n = s->num_sampled;
  *tries = n;
  if (!s->unique) {
    for (int64_t i = 0; i < n; i++) {
      out[i] = draw(s, &g);
    }
    return TF_OK;
  }
  uint64_t cap = 2;
  while (cap < 2 * (uint64_t)n) {
    cap <<= 1;
  }
  int64_t *seen = calloc(cap, sizeof(*seen));
  if (seen == NULL) {
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED, "no memory for the "
                           "set of %" PRId64 " sampled candidates", n);
  }
  *tries = 0;
  for (int64_t i = 0; i < n; ++*tries) {
    int64_t k = draw(s, &g);
    if (!seen_insert(seen, cap - 1, k)) {
      out[i++] = k;
    }
  }
  free(seen);
  return TF_OK;
}

/* INVALID_ARGUMENT unless t is [batch, num_true] with values in
 * [0, range_max) (range_max <= 0: any value). */
static tf_code check_true_classes(tf_kernel_ctx *ctx, const tf_tensor *t,
                                  int64_t num_true, int64_t range_max) {
  char b[96];
  if (t->shape.rank != 2 || t->shape.dims[1] != num_true) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "true_classes must be "
                           "a matrix [batch, num_true = %" PRId64 "], got "
                           "shape %s", num_true,
                           tf_shape_str(&t->shape, b, sizeof(b)));
  }
  const int64_t *v = t->data;
  for (int64_t i = 0; range_max > 0 && i < t->n; i++) {
    if (v[i] < 0 || v[i] >= range_max) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "true_classes[%"
                             PRId64 ", %" PRId64 "] = %" PRId64 " is not in "
                             "[0, range_max = %" PRId64 ")", i / num_true,
                             i % num_true, v[i], range_max);
    }
  }
  return TF_OK;
}

static tf_code log_uniform_compute(tf_kernel_ctx *ctx) {
  sampler_state *s = (sampler_state *)ctx->state; /* rng is the mutable part */
  const tf_tensor *tc = ctx->inputs[0];
  TF_TRY(check_true_classes(ctx, tc, s->num_true, s->range_max));
  tf_tensor *cand, *true_ec, *samp_ec;
  tf_shape sv = tf_shape_of(1, s->num_sampled);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT64, &sv, &cand));
  TF_TRY(tf_kernel_alloc_output(ctx, 1, TF_FLOAT32, &tc->shape, &true_ec));
  TF_TRY(tf_kernel_alloc_output(ctx, 2, TF_FLOAT32, &sv, &samp_ec));
  uint64_t words = (uint64_t)s->num_sampled * WORDS_PER_SAMPLE;
  tf_philox gen = tf__cpu_rng_reserve(&s->rng, (words + 3) / 4);
  int64_t *c = cand->data, tries;
  TF_TRY(sample(ctx, s, &gen, c, &tries));
  float *se = samp_ec->data, *te = true_ec->data;
  for (int64_t i = 0; i < s->num_sampled; i++) {
    se[i] = expected_count(log_uniform_p(s, c[i]), s->num_sampled, tries);
  }
  const int64_t *tv = tc->data;
  for (int64_t i = 0; i < tc->n; i++) {
    te[i] = expected_count(log_uniform_p(s, tv[i]), s->num_sampled, tries);
  }
  return TF_OK;
}

/* ---- ComputeAccidentalHits ------------------------------------------------- */

typedef struct cand_pos {
  int64_t value, pos;
} cand_pos;

static int cmp_cand(const void *a, const void *b) {
  const cand_pos *x = a, *y = b;
  if (x->value != y->value) {
    return x->value < y->value ? -1 : 1;
  }
  return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* The last position of value in the sorted sorted[0..n), or -1. */
static int64_t last_pos(const cand_pos *sorted, int64_t n, int64_t value) {
  int64_t lo = 0, hi = n; /* first index with value > value */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid].value <= value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && sorted[lo - 1].value == value ? sorted[lo - 1].pos : -1;
}

/* Writes the hits' outputs; pos[i] is the sampled position matching flat
 * true class i, or -1. */
static tf_code write_hits(tf_kernel_ctx *ctx, const int64_t *pos, int64_t n,
                          int64_t num_true, int64_t hits) {
  tf_tensor *ind, *ids, *w;
  tf_shape s = tf_shape_of(1, hits);
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_INT32, &s, &ind));
  TF_TRY(tf_kernel_alloc_output(ctx, 1, TF_INT64, &s, &ids));
  TF_TRY(tf_kernel_alloc_output(ctx, 2, TF_FLOAT32, &s, &w));
  int32_t *iv = ind->data;
  int64_t *idv = ids->data;
  float *wv = w->data;
  for (int64_t i = 0, h = 0; i < n; i++) {
    if (pos[i] >= 0) {
      iv[h] = (int32_t)(i / num_true);
      idv[h] = pos[i];
      wv[h++] = -FLT_MAX;
    }
  }
  return TF_OK;
}

static tf_code accidental_hits_compute(tf_kernel_ctx *ctx) {
  int64_t num_true;
  TF_TRY(tf_node_attr_get_int(ctx->node, "num_true", &num_true, ctx->status));
  const tf_tensor *tc = ctx->inputs[0], *sc = ctx->inputs[1];
  char b[96];
  TF_TRY(check_true_classes(ctx, tc, num_true, 0));
  if (sc->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "sampled_candidates "
                           "must be a vector, got shape %s",
                           tf_shape_str(&sc->shape, b, sizeof(b)));
  }
  if (tc->shape.dims[0] > INT32_MAX) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "true_classes has %"
                           PRId64 " rows; int32 indices allow < 2^31",
                           tc->shape.dims[0]);
  }
  int64_t ns = sc->n, n = tc->n, hits = 0;
  cand_pos *sorted = malloc(((size_t)ns + 1) * sizeof(*sorted));
  int64_t *pos = malloc(((size_t)n + 1) * sizeof(*pos));
  if (sorted == NULL || pos == NULL) {
    free(sorted);
    free(pos);
    return tf_kernel_error(ctx, TF_RESOURCE_EXHAUSTED, "no memory to match "
                           "%" PRId64 " true classes against %" PRId64
                           " candidates", n, ns);
  }
  const int64_t *sv = sc->data, *tv = tc->data;
  for (int64_t j = 0; j < ns; j++) {
    sorted[j] = (cand_pos){sv[j], j};
  }
  qsort(sorted, (size_t)ns, sizeof(*sorted), cmp_cand);
  for (int64_t i = 0; i < n; i++) {
    pos[i] = last_pos(sorted, ns, tv[i]);
    hits += pos[i] >= 0;
  }
  tf_code rc = write_hits(ctx, pos, n, num_true, hits);
  free(pos);
  free(sorted);
  return rc;
}

static const tf_kernel_def candidate_sampling_kernels[] = {
    {.op = "LogUniformCandidateSampler", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .init = sampler_init,
     .compute = log_uniform_compute, .free_state = free},
    {.op = "ComputeAccidentalHits", .device_type = TF_DEVICE_CPU,
     .dtype = TF_DTYPE_ANY, .compute = accidental_hits_compute},
};

TF_REGISTER_KERNELS(candidate_sampling_kernels)
