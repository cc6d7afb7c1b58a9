/* dtype.h: element types of tensors.
 *
 * Numbers follow TensorFlow's DataType enum, so .tfg files and wire messages
 * carry the same values TF uses. 16-bit floats are stored as raw bits
 * (uint16_t); conversions round to nearest even as IEEE 754 and TF do. */
#ifndef TF_DTYPE_H
#define TF_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM, tf number, C element type, size in bytes, name) */
#define TF_DTYPE_MAP(X)                                                        \
  X(FLOAT32, 1, float, 4, "float32")                                           \
  X(FLOAT64, 2, double, 8, "float64")                                          \
  X(INT32, 3, int32_t, 4, "int32")                                             \
  X(UINT8, 4, uint8_t, 1, "uint8")                                             \
  X(INT16, 5, int16_t, 2, "int16")                                             \
  X(INT8, 6, int8_t, 1, "int8")                                                \
  X(STRING, 7, tf_string, 16, "string")                                        \
  X(COMPLEX64, 8, tf_complex64, 8, "complex64")                                \
  X(INT64, 9, int64_t, 8, "int64")                                             \
  X(BOOL, 10, bool, 1, "bool")                                                 \
  X(BFLOAT16, 14, tf_bfloat16, 2, "bfloat16")                                  \
  X(UINT16, 17, uint16_t, 2, "uint16")                                         \
  X(FLOAT16, 19, tf_float16, 2, "float16")                                     \
  X(UINT32, 22, uint32_t, 4, "uint32")                                         \
  X(UINT64, 23, uint64_t, 8, "uint64")

typedef enum tf_dtype {
  TF_DTYPE_INVALID = 0, /* also "any" in kernel registrations */
#define TF__DT_ENUM(e, num, ctype, size, name) TF_##e = num,
  TF_DTYPE_MAP(TF__DT_ENUM)
#undef TF__DT_ENUM
  TF_DTYPE_MAX = 24 /* one past the largest value, for lookup tables */
} tf_dtype;

#define TF_DTYPE_ANY TF_DTYPE_INVALID

typedef uint16_t tf_bfloat16; /* raw bits: top half of an IEEE float32 */
typedef uint16_t tf_float16;  /* raw bits: IEEE binary16 */
typedef struct tf_complex64 { float re, im; } tf_complex64;

/* Element of a TF_STRING tensor: bytes (not necessarily NUL-terminated;
 * a NUL is stored after them for convenience) owned by the tensor. */
typedef struct tf_string {
  char *data; /* NULL when len == 0 */
  size_t len;
} tf_string;

/* Size in bytes of one element; 0 for an invalid dtype. */
TF_API size_t tf_dtype_size(tf_dtype dt);
/* "float32" etc.; "invalid" for anything not in the map. */
TF_API const char *tf_dtype_name(tf_dtype dt);
/* Accepts the names above plus TF's aliases "float", "double", "half". */
TF_API bool tf_dtype_from_name(const char *name, tf_dtype *out);
TF_API bool tf_dtype_is_valid(tf_dtype dt);
/* bfloat16, float16, float32, float64 */
TF_API bool tf_dtype_is_float(tf_dtype dt);
/* signed and unsigned ints, not bool */
TF_API bool tf_dtype_is_integer(tf_dtype dt);
/* signed ints and floats */
TF_API bool tf_dtype_is_signed(tf_dtype dt);
TF_API bool tf_dtype_is_complex(tf_dtype dt);
/* all but bool and string */
TF_API bool tf_dtype_is_numeric(tf_dtype dt);

/* 16-bit float conversions, round to nearest even; NaN stays NaN. */
TF_API float tf_bfloat16_to_float(tf_bfloat16 v);
TF_API tf_bfloat16 tf_float_to_bfloat16(float f);
TF_API float tf_float16_to_float(tf_float16 v);
TF_API tf_float16 tf_float_to_float16(float f);
TF_API tf_float16 tf_double_to_float16(double d);

#ifdef __cplusplus
}
#endif

#endif
