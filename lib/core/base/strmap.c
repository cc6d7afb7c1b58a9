/* strmap.c: open addressing with linear probing and backward-shift
 * deletion; grows at 50% load. FNV-1a hashing. */
#include "lib/core/base/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

void tf__strmap_init(tf__strmap *m) { memset(m, 0, sizeof *m); }

void tf__strmap_fini(tf__strmap *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static size_t slot_of(const tf__strmap *m, const char *key) {
  size_t i = hash(key) & (m->cap - 1);
  while (m->keys[i] != NULL && strcmp(m->keys[i], key) != 0) {
    i = (i + 1) & (m->cap - 1);
  }
  return i;
}

static void grow(tf__strmap *m) {
  tf__strmap old = *m;
  m->cap = old.cap ? old.cap * 2 : 16;
  m->keys = tf__xcalloc(m->cap, sizeof *m->keys);
  m->vals = tf__xcalloc(m->cap, sizeof *m->vals);
  for (size_t i = 0; i < old.cap; i++) {
    if (old.keys[i] == NULL) continue;
    size_t j = slot_of(m, old.keys[i]);
    m->keys[j] = old.keys[i];
    m->vals[j] = old.vals[i];
  }
  free(old.keys);
  free(old.vals);
}

void tf__strmap_put(tf__strmap *m, const char *key, void *val) {
  if ((m->n + 1) * 2 > m->cap) grow(m);
  size_t i = slot_of(m, key);
  if (m->keys[i] == NULL) {
    m->keys[i] = tf__xstrdup(key);
    m->n++;
  }
  m->vals[i] = val;
}

void *tf__strmap_get(const tf__strmap *m, const char *key, bool *found) {
  if (m->cap == 0) {
    if (found) *found = false;
    return NULL;
  }
  size_t i = slot_of(m, key);
  if (found) *found = m->keys[i] != NULL;
  return m->keys[i] ? m->vals[i] : NULL;
}

bool tf__strmap_del(tf__strmap *m, const char *key) {
  if (m->cap == 0) return false;
  size_t i = slot_of(m, key);
  if (m->keys[i] == NULL) return false;
  free(m->keys[i]);
  m->keys[i] = NULL;
  m->n--;
  /* Backward shift: re-place the rest of the probe run. */
  for (size_t j = (i + 1) & (m->cap - 1); m->keys[j] != NULL;
       j = (j + 1) & (m->cap - 1)) {
    char *k = m->keys[j];
    void *v = m->vals[j];
    m->keys[j] = NULL;
    size_t t = slot_of(m, k);
    m->keys[t] = k;
    m->vals[t] = v;
  }
  return true;
}

void tf__strmap_each(const tf__strmap *m, void (*fn)(void *val)) {
  for (size_t i = 0; i < m->cap; i++) {
    if (m->keys[i] != NULL) fn(m->vals[i]);
  }
}
