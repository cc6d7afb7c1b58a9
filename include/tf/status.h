/* status.h: the one error type of the project.
 *
 * Every fallible function returns a tf_code and, when given a non-NULL
 * tf_status, fills it with the same code and a message that names what was
 * wrong and where (node, op, file, offset). Codes are TensorFlow's canonical
 * error codes with the same numbers, so errors cross the wire unchanged. */
#ifndef TF_STATUS_H
#define TF_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "tf/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_CODE_MAP(X)                                                         \
  X(OK, 0)                                                                     \
  X(CANCELLED, 1)                                                              \
  X(UNKNOWN, 2)                                                                \
  X(INVALID_ARGUMENT, 3)                                                       \
  X(DEADLINE_EXCEEDED, 4)                                                      \
  X(NOT_FOUND, 5)                                                              \
  X(ALREADY_EXISTS, 6)                                                         \
  X(PERMISSION_DENIED, 7)                                                      \
  X(RESOURCE_EXHAUSTED, 8)                                                     \
  X(FAILED_PRECONDITION, 9)                                                    \
  X(ABORTED, 10)                                                               \
  X(OUT_OF_RANGE, 11)                                                          \
  X(UNIMPLEMENTED, 12)                                                         \
  X(INTERNAL, 13)                                                              \
  X(UNAVAILABLE, 14)                                                           \
  X(DATA_LOSS, 15)                                                             \
  X(UNAUTHENTICATED, 16)

typedef enum tf_code {
#define TF__CODE_ENUM(name, num) TF_##name = num,
  TF_CODE_MAP(TF__CODE_ENUM)
#undef TF__CODE_ENUM
  TF_CODE_COUNT
} tf_code;

#define TF_STATUS_MSG_MAX 1024

typedef struct tf_status {
  tf_code code;                  /* TF_OK when nothing went wrong */
  char msg[TF_STATUS_MSG_MAX];   /* NUL-terminated, "" when OK */
} tf_status;

/* Sets *st to OK. */
TF_API void tf_status_init(tf_status *st);

/* Sets code and printf-style message; returns code. st may be NULL, in
 * which case only code is returned. Setting TF_OK clears the message. */
TF_API tf_code tf_status_set(tf_status *st, tf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "<context>: " to the message of a non-OK status (no-op when OK or
 * st is NULL); returns st's code (TF_OK for NULL). Used to add the node or
 * file an error came from as it travels up. */
TF_API tf_code tf_status_prefix(tf_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "INVALID_ARGUMENT" etc.; "UNKNOWN_CODE" for values out of range. */
TF_API const char *tf_code_name(tf_code code);

/* Parses a name produced by tf_code_name; returns false if unknown. */
TF_API bool tf_code_from_name(const char *name, tf_code *out);

static inline bool tf_status_ok(const tf_status *st) { return st->code == 0; }

#ifdef __cplusplus
}
#endif

#endif
