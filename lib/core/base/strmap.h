/* strmap.h: a small open-addressing hash map from strings to pointers,
 * used for node names and name counters. Keys are copied; values are
 * borrowed. Not thread-safe. */
#ifndef TF_CORE_STRMAP_H
#define TF_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tf__strmap {
  char **keys;
  void **vals;
  size_t cap; /* power of two or 0 */
  size_t n;
} tf__strmap;

void tf__strmap_init(tf__strmap *m);
void tf__strmap_fini(tf__strmap *m);
/* Sets key to val (replacing any value). Aborts on OOM. */
void tf__strmap_put(tf__strmap *m, const char *key, void *val);
/* Value for key, or NULL; *found (may be NULL) tells presence. */
void *tf__strmap_get(const tf__strmap *m, const char *key, bool *found);
/* Removes key if present; returns whether it was. */
bool tf__strmap_del(tf__strmap *m, const char *key);
/* Calls fn on every value (in no particular order); the map must not
 * change meanwhile. */
void tf__strmap_each(const tf__strmap *m, void (*fn)(void *val));

#endif
