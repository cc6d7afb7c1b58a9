/* msgpack_map.c: the counted map writer (msgpack_map.h). The counters are
 * per map, on the caller's stack, so nested maps are checked one by one
 * and nothing is shared between threads. */
#include "lib/core/serialize/msgpack_map.h"

#include <string.h>

#include "lib/core/base/util.h"

int tf__mp_map_begin_at(tf__mp_map *m, msgpack_packer *pk, size_t n,
                        const char *file, int line) {
  if (n > UINT32_MAX) {
    tf__panic(file, line, "msgpack map of %zu entries exceeds msgpack's "
              "limit of 2^32-1", n);
  }
  *m = (tf__mp_map){.pk = pk, .declared = (uint32_t)n, .written = 0,
                    .file = file, .line = line};
  return msgpack_pack_map(pk, n);
}

int tf__mp_map_key(tf__mp_map *m, const char *key) {
  if (m->written == m->declared) {
    tf__panic(m->file, m->line, "msgpack map declared %u entries, but key "
              "'%s' would be entry %u", m->declared, key, m->written + 1);
  }
  m->written++;
  return msgpack_pack_str_with_body(m->pk, key, strlen(key));
}

void tf__mp_map_end(tf__mp_map *m) {
  if (m->written != m->declared) {
    tf__panic(m->file, m->line, "msgpack map declared %u entries, but %u "
              "keys were packed", m->declared, m->written);
  }
}
