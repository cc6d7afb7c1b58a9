/* json.h: a small strict JSON reader (RFC 8259) for TF_CONFIG
 * (tf_config.h): the whole text must be one value; duplicate keys, NUL
 * characters (\u0000), lone surrogates, control characters in strings,
 * trailing commas, comments and anything after the value are errors, and
 * nesting is capped at TF__JSON_DEPTH. Numbers keep their text. Errors
 * name what is parsed and the 1-based character, e.g.
 *   "TF_CONFIG at character 12: expected ':' after the key, got ','". */
#ifndef TF_RUNTIME_JSON_H
#define TF_RUNTIME_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "tf/status.h"

#define TF__JSON_DEPTH 32

typedef enum tf__json_type {
  TF__JSON_NULL,
  TF__JSON_BOOL,
  TF__JSON_NUMBER,
  TF__JSON_STRING,
  TF__JSON_ARRAY,
  TF__JSON_OBJECT,
} tf__json_type;

typedef struct tf__json {
  tf__json_type type;
  int pos;          /* 1-based character where the value starts */
  bool b;           /* BOOL */
  char *text;       /* STRING (UTF-8, no NUL inside) or NUMBER as written */
  int n;            /* ARRAY items / OBJECT members */
  struct tf__json *items;
  char **keys;      /* OBJECT: keys[i] names items[i] */
} tf__json;

/* Parses text (len bytes); what names it in errors ("TF_CONFIG").
 * *out is malloc'd, freed with tf__json_free; NULL on error
 * (INVALID_ARGUMENT). */
tf_code tf__json_parse(const char *text, size_t len, const char *what,
                       tf__json **out, tf_status *st);
void tf__json_free(tf__json *j);

/* The member of OBJECT o named key, or NULL. */
const tf__json *tf__json_get(const tf__json *o, const char *key);
/* "a string", "a number", ... for messages. */
const char *tf__json_type_name(tf__json_type t);

#endif
