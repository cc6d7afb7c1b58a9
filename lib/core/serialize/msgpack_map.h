/* msgpack_map.h: packing msgpack maps whose entry count cannot be wrong
 * (internal). msgpack writes a map's entry count before the entries, so a
 * writer must know it up front, and a count that disagrees with the keys
 * packed after it shifts every later byte: the receiver misreads or
 * rejects the whole message. Every map that lib/ and cmd/ pack goes
 * through this writer:
 *
 *   tf__mp_map m;
 *   tf__mp_map_begin(&m, pk, 2);         packs the header for 2 entries
 *   tf__mp_map_key(&m, "handle");        packs a key and counts it;
 *   msgpack_pack_uint64(pk, handle);     the caller packs its value
 *   tf__mp_map_key(&m, "n_rets");
 *   msgpack_pack_int(pk, n);
 *   tf__mp_map_end(&m);                  asserts 2 keys were packed
 *
 * A key beyond the declared count aborts at once, and end aborts when
 * fewer were packed, naming the file and line that began the map. The
 * check is a counter compare, so it stays on in release builds
 * (TF_ASSERT's policy): a miscounted map stops the process before the
 * message can be sent. The bytes are exactly msgpack_pack_map's followed
 * by msgpack_pack_str_with_body's for each key. */
#ifndef TF_CORE_SERIALIZE_MSGPACK_MAP_H
#define TF_CORE_SERIALIZE_MSGPACK_MAP_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tf__mp_map {
  msgpack_packer *pk;
  uint32_t declared; /* entries promised in the header */
  uint32_t written;  /* keys packed so far */
  const char *file;  /* where the map was begun, for the abort message */
  int line;
} tf__mp_map;

/* Packs the header of a map of n entries into pk and starts counting
 * (n > 2^32-1 is a bug: it aborts). Returns msgpack's 0 / -1 (the writer
 * failed, e.g. out of memory); the count is kept either way. */
#define tf__mp_map_begin(m, pk, n)                                             \
  tf__mp_map_begin_at((m), (pk), (n), __FILE__, __LINE__)
int tf__mp_map_begin_at(tf__mp_map *m, msgpack_packer *pk, size_t n,
                        const char *file, int line);

/* Packs key (a NUL-terminated string) as the next entry's key; the caller
 * then packs exactly one value object. Aborts if the map already holds
 * its declared number of keys. Returns msgpack's 0 / -1. */
int tf__mp_map_key(tf__mp_map *m, const char *key);

/* Ends the map: aborts unless exactly the declared number of keys was
 * packed. Call it once every entry is packed; a writer that gives up on
 * an error (and discards its buffer) may skip it. */
void tf__mp_map_end(tf__mp_map *m);

#endif
