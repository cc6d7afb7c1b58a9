/* graph_yaml.h: pieces shared by the YAML graph writer (graph_yaml.c) and
 * reader (graph_yaml_read.c), internal. The schema is documented at the top
 * of graph_yaml.c and in docs/graph-format.md. */
#ifndef TF_CORE_GRAPH_YAML_H
#define TF_CORE_GRAPH_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/dtype.h"

/* Tags. Local tags ("!type") come back from libyaml unchanged; "!!binary"
 * resolves to the core schema's full tag. */
#define TF_YAML_TAG_TYPE "!type"
#define TF_YAML_TAG_SHAPE "!shape"
#define TF_YAML_TAG_TENSOR "!tensor"
#define TF_YAML_TAG_BINARY "tag:yaml.org,2002:binary"
#define TF_YAML_CORE_PREFIX "tag:yaml.org,2002:"

/* Numeric tensors with more elements than this are written as raw
 * little-endian bytes ("data: !!binary") rather than a list of values. */
#define TF_YAML_VALUES_MAX 256
/* Unknown rank in a shape is written as this word. */
#define TF_YAML_UNKNOWN_SHAPE "unknown"

/* Base64 (RFC 4648) with a '\n' after every line_len output characters
 * (0: none). Returns a malloc'd NUL-terminated string, NULL on OOM. */
char *tf__base64_encode(const void *data, size_t n, size_t line_len,
                        size_t *out_len);
/* Decodes s[0..n), skipping whitespace, into out (room for at least
 * n / 4 * 3 + 3 bytes); false on a bad character or padding. */
bool tf__base64_decode(const char *s, size_t n, uint8_t *out,
                       size_t *out_len);

/* The shortest decimal that reads back to the same value of dt (float64,
 * float32, float16 or bfloat16), the nearest to v if several are that
 * short (as Python's repr and numpy's unique mode pick), always with a '.'
 * in the mantissa ("1.0", "1.5e+20") so that YAML 1.1 and 1.2 readers see
 * a float; ".inf", "-.inf", ".nan" for the specials. */
void tf__yaml_format_float(double v, tf_dtype dt, char *buf, size_t size);
/* Reads a YAML float or int ("1", "-2.5e-3", ".inf", "-.Inf", ".nan") as
 * the nearest double, or (the _f32 form) the nearest float; false for
 * anything else. float16 values read through the double, bfloat16 through
 * the float, as tf__yaml_format_float assumes. */
bool tf__yaml_parse_float(const char *s, size_t n, double *v);
bool tf__yaml_parse_float32(const char *s, size_t n, float *v);

/* YAML core-schema scalars (1.2 core, plus 1.1's yes/no/on/off as bools
 * when deciding whether a name must be quoted). */
bool tf__yaml_parse_int(const char *s, size_t n, int64_t *v);
bool tf__yaml_parse_uint(const char *s, size_t n, uint64_t *v);
bool tf__yaml_parse_bool(const char *s, size_t n, bool *v);
bool tf__yaml_is_null(const char *s, size_t n);
/* True when a plain scalar with this text would read as something other
 * than a string (number, bool, null) to a YAML 1.1 or 1.2 reader. */
bool tf__yaml_plain_is_special(const char *s, size_t n);

#endif
