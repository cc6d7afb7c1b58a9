/* crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), the
 * checksum of TFRecord framing and checkpoints, and TensorFlow's masked
 * form of it.
 *
 * The value follows TensorFlow's crc32c::Value/Extend convention: the
 * standard CRC-32C (initial value and final xor 0xffffffff), so
 * tf_crc32c("123456789", 9) == 0xe3069283, and
 * tf_crc32c_extend(tf_crc32c(a), b) == tf_crc32c(a followed by b).
 * The SSE4.2 crc32 instruction is used when the CPU has it (checked once at
 * run time with __builtin_cpu_supports), a slicing-by-8 table otherwise. */
#ifndef TF_CORE_CRC32C_H
#define TF_CORE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32C of data[0..n). data may be NULL when n == 0. */
uint32_t tf_crc32c(const void *data, size_t n);

/* The CRC-32C of (what gave crc) followed by data[0..n). */
uint32_t tf_crc32c_extend(uint32_t crc, const void *data, size_t n);

/* TensorFlow's masked CRC, stored in TFRecord files (a CRC of data that
 * itself contains CRCs is then less likely to be degenerate):
 * ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t tf_crc32c_mask(uint32_t crc);
/* Inverse of tf_crc32c_mask. */
uint32_t tf_crc32c_unmask(uint32_t masked);

/* For tests: the two implementations of tf_crc32c_extend. The hardware one
 * may only be called when tf__crc32c_have_hw() is true. */
uint32_t tf__crc32c_extend_table(uint32_t crc, const void *data, size_t n);
uint32_t tf__crc32c_extend_hw(uint32_t crc, const void *data, size_t n);
/* Whether this CPU has SSE4.2 (and tf_crc32c uses it). */
bool tf__crc32c_have_hw(void);

#endif
