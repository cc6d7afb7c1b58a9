/* ckpt_format.h: the byte layout of a checkpoint shard file, shared by its
 * writer (ckpt_shard.c) and reader (ckpt_shard_read.c); docs/checkpoint.md
 * describes it byte by byte. All integers are little-endian.
 *
 *   header  16 bytes  magic "\x89TFCKPT\n", u32 version (1), u32 flags (0)
 *   data    the entries' bytes, back to back, in index order
 *   index   u32 count, then per entry:
 *             u32 name length, name; u32 slice length, slice text;
 *             u32 dtype; u32 rank, i64 dims[rank] (stored);
 *             u32 full rank, i64 dims[full rank];
 *             u64 offset, u64 length, u32 CRC32C of the bytes
 *   footer  32 bytes  u64 index offset, u64 index length, u32 0,
 *                     u32 CRC32C of header + index + footer's first 20
 *                     bytes, magic "TFCKEND\n"
 *
 * Numbers are stored as their bytes, bool as one byte 0 or 1, strings as a
 * u32 length and the bytes per element. Every byte of a valid file is
 * covered by a check: the magics, the index CRC, the entries' CRCs (the
 * entries tile the data exactly). */
#ifndef TF_CORE_SERIALIZE_CKPT_FORMAT_H
#define TF_CORE_SERIALIZE_CKPT_FORMAT_H

#include <stdint.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "checkpoint shards are read and written as little-endian bytes");

#define TF__CKPT_MAGIC "\x89TFCKPT\n"
#define TF__CKPT_END_MAGIC "TFCKEND\n"
#define TF__CKPT_VERSION 1u
#define TF__CKPT_HEADER 16
#define TF__CKPT_FOOTER 32
/* The smallest index entry: a 1-byte name, no slice, rank 0. */
#define TF__CKPT_MIN_ENTRY (4 + 1 + 4 + 4 + 4 + 4 + 8 + 8 + 4)

static inline void tf__put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void tf__put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t tf__get_u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static inline uint64_t tf__get_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

#endif
