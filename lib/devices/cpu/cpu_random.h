/* cpu_random.h: the seeded Philox stream a stateful random kernel instance
 * keeps (cpu_random.c; also the candidate samplers of
 * cpu_candidate_sampling.c), as TF's GuardedPhiloxRandom: a base generator
 * seeded once from the node's seed/seed2 attrs and an atomic count of the
 * blocks handed out, so successive and concurrent computes never share
 * random bits. */
#ifndef TF_DEVICES_CPU_RANDOM_H
#define TF_DEVICES_CPU_RANDOM_H

#include <stdatomic.h>
#include <stdint.h>

#include "lib/core/base/philox.h"
#include "tf/graph.h"
#include "tf/status.h"

typedef struct tf__cpu_rng {
  tf_philox base;            /* key = seed, counter = [0, 0, seed2] */
  _Atomic uint64_t reserved; /* blocks handed out so far */
} tf__cpu_rng;

/* Seeds r from node's int attrs "seed" and "seed2"; both 0 draws 128 fresh
 * bits from the kernel's entropy pool instead (INTERNAL if that fails). */
tf_code tf__cpu_rng_init(tf__cpu_rng *r, const tf_node *node, tf_status *st);

/* A generator positioned at a freshly reserved range of `blocks` blocks of
 * r's stream (one atomic fetch-add; thread-safe). */
tf_philox tf__cpu_rng_reserve(tf__cpu_rng *r, uint64_t blocks);

#endif
