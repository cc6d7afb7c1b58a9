/* crc32c.c: CRC-32C with the SSE4.2 crc32 instruction (8 bytes per
 * instruction) when the CPU has it, else slicing-by-8 tables built once.
 * The choice is made on first use and never changes. */
#include "lib/core/base/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define TF_CRC32C_X86 1
#endif

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */
#define MASK_DELTA 0xa282ead8u

static uint32_t table[8][256];
static bool use_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) {
      c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    }
    table[0][i] = c;
  }
  for (int t = 1; t < 8; t++) {
    for (int i = 0; i < 256; i++) {
      uint32_t c = table[t - 1][i];
      table[t][i] = (c >> 8) ^ table[0][c & 0xff];
    }
  }
}

static void init_once(void) {
  build_tables();
#ifdef TF_CRC32C_X86
  __builtin_cpu_init();
  use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

bool tf__crc32c_have_hw(void) {
  pthread_once(&once, init_once);
  return use_hw;
}

static inline uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Works on the raw (pre-inverted) register value. */
static uint32_t raw_table(uint32_t c, const uint8_t *p, size_t n) {
  while (n >= 8) {
    uint32_t lo = load_le32(p) ^ c, hi = load_le32(p + 4);
    c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
        table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
        table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
        table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) {
    c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
  }
  return c;
}

#ifdef TF_CRC32C_X86
__attribute__((target("sse4.2"))) static uint32_t raw_hw(uint32_t c,
                                                         const uint8_t *p,
                                                         size_t n) {
#if defined(__x86_64__)
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  c = (uint32_t)c64;
#endif
  while (n >= 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    c = _mm_crc32_u32(c, v);
    p += 4;
    n -= 4;
  }
  while (n-- > 0) {
    c = _mm_crc32_u8(c, *p++);
  }
  return c;
}
#endif

uint32_t tf__crc32c_extend_table(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, init_once);
  return ~raw_table(~crc, data, n);
}

uint32_t tf__crc32c_extend_hw(uint32_t crc, const void *data, size_t n) {
#ifdef TF_CRC32C_X86
  return ~raw_hw(~crc, data, n);
#else
  return tf__crc32c_extend_table(crc, data, n);
#endif
}

uint32_t tf_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  if (n == 0) {
    return crc;
  }
  pthread_once(&once, init_once);
#ifdef TF_CRC32C_X86
  if (use_hw) {
    return ~raw_hw(~crc, data, n);
  }
#endif
  return ~raw_table(~crc, data, n);
}

uint32_t tf_crc32c(const void *data, size_t n) {
  return tf_crc32c_extend(0, data, n);
}

uint32_t tf_crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + MASK_DELTA;
}

uint32_t tf_crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - MASK_DELTA;
  return (rot >> 17) | (rot << 15);
}
