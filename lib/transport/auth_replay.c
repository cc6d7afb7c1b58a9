/* auth_replay.c: the replay cache of accepted nonces (auth_replay.h). */
#include "lib/transport/auth_replay.h"

#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

#define MIN_CAP 1024u

void tf__replay_init(tf__replay *r, int64_t span_ms, uint32_t max_per_gen) {
  memset(r, 0, sizeof *r);
  r->span_ms = span_ms;
  r->max_per_gen = max_per_gen < 16 ? 16 : max_per_gen;
  r->floor_ms = INT64_MIN;
}

void tf__replay_fini(tf__replay *r) {
  for (int i = 0; i < TF__REPLAY_GENS; i++) {
    free(r->gen[i].slots);
  }
  memset(r, 0, sizeof *r);
}

static uint32_t slot_of(const uint8_t *nonce, uint32_t cap) {
  uint64_t h;
  memcpy(&h, nonce, sizeof h); /* random bytes: already a hash */
  return (uint32_t)(h ^ (h >> 32)) & (cap - 1);
}

static bool is_empty(const uint8_t *slot) {
  static const uint8_t zero[24];
  return memcmp(slot, zero, sizeof zero) == 0;
}

static bool gen_has(const tf__replay_gen *g, const uint8_t *nonce) {
  if (g->cap == 0) {
    return false;
  }
  for (uint32_t i = slot_of(nonce, g->cap);; i = (i + 1) & (g->cap - 1)) {
    if (is_empty(g->slots[i])) {
      return false;
    }
    if (memcmp(g->slots[i], nonce, 16) == 0) {
      return true;
    }
  }
}

static void gen_put(tf__replay_gen *g, const uint8_t *nonce, int64_t ts_ms) {
  uint32_t i = slot_of(nonce, g->cap);
  while (!is_empty(g->slots[i])) {
    i = (i + 1) & (g->cap - 1);
  }
  memcpy(g->slots[i], nonce, 16);
  memcpy(g->slots[i] + 16, &ts_ms, 8);
  if (is_empty(g->slots[i])) {
    g->slots[i][23] = 1; /* an all-zero entry must not read as empty */
  }
  g->n++;
  g->max_ts_ms = g->n == 1 ? ts_ms : TF_MAX(g->max_ts_ms, ts_ms);
}

/* Doubles g's table (up to what max_per_gen needs); false when at cap. */
static bool gen_grow(tf__replay_gen *g, uint32_t max_per_gen) {
  uint32_t cap = g->cap == 0 ? MIN_CAP : g->cap * 2;
  if (g->cap != 0 && g->cap / 2 >= max_per_gen) {
    return false;
  }
  tf__replay_gen ng = {.slots = tf__xcalloc(cap, sizeof ng.slots[0]), .cap = cap,
                       .started_ms = g->started_ms};
  for (uint32_t i = 0; i < g->cap; i++) {
    if (!is_empty(g->slots[i])) {
      int64_t ts;
      memcpy(&ts, g->slots[i] + 16, 8);
      gen_put(&ng, g->slots[i], ts);
    }
  }
  free(g->slots);
  *g = ng;
  return true;
}

/* Starts a new generation; the oldest is forgotten and raises the floor. */
static void rotate(tf__replay *r, int64_t now_ms) {
  tf__replay_gen *old = &r->gen[TF__REPLAY_GENS - 1];
  if (old->n > 0) {
    r->floor_ms = TF_MAX(r->floor_ms, old->max_ts_ms);
  }
  free(old->slots);
  memmove(&r->gen[1], &r->gen[0], (TF__REPLAY_GENS - 1) * sizeof r->gen[0]);
  memset(&r->gen[0], 0, sizeof r->gen[0]);
  r->gen[0].started_ms = now_ms;
}

bool tf__replay_admit(tf__replay *r, const uint8_t *nonce, int64_t ts_ms,
                      int64_t now_ms) {
  if (ts_ms <= r->floor_ms) {
    return false;
  }
  for (int i = 0; i < TF__REPLAY_GENS; i++) {
    if (gen_has(&r->gen[i], nonce)) {
      return false;
    }
  }
  tf__replay_gen *g = &r->gen[0];
  if (g->cap == 0 && g->n == 0 && g->started_ms == 0) {
    g->started_ms = now_ms;
  }
  if (now_ms - g->started_ms >= r->span_ms) {
    rotate(r, now_ms);
  }
  if (g->n + 1 > g->cap / 2 && !gen_grow(g, r->max_per_gen)) {
    rotate(r, now_ms);
    gen_grow(g, r->max_per_gen);
    if (ts_ms <= r->floor_ms) {
      return false; /* the flood pushed the floor past this one */
    }
  }
  gen_put(g, nonce, ts_ms);
  return true;
}
