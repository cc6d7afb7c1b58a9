/* wire_body.c: typed access to the msgpack bodies of wire messages. Bodies
 * come from peers, so every getter checks the field's type and range and
 * reports "<what>: field 'key' missing or not <type>" instead of trusting
 * it. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/tensor_msgpack.h"
#include "lib/core/base/util.h"
#include "lib/transport/wire.h"

const msgpack_object *tf_wire_get(const msgpack_object *map, const char *key) {
  if (map == NULL || map->type != MSGPACK_OBJECT_MAP) {
    return NULL;
  }
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    if (tf__msgpack_str_eq(&map->via.map.ptr[i].key, key)) {
      return &map->via.map.ptr[i].val;
    }
  }
  return NULL;
}

static tf_code bad_field(const char *what, const char *key, const char *type,
                         tf_status *st) {
  return tf_status_set(st, TF_INVALID_ARGUMENT,
                       "%s: field '%s' missing or not %s", what, key, type);
}

tf_code tf_wire_get_u64(const msgpack_object *map, const char *key,
                        const char *what, uint64_t *out, tf_status *st) {
  const msgpack_object *v = tf_wire_get(map, key);
  if (v == NULL || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    return bad_field(what, key, "an unsigned int", st);
  }
  *out = v->via.u64;
  return TF_OK;
}

tf_code tf_wire_get_i64(const msgpack_object *map, const char *key,
                        const char *what, int64_t *out, tf_status *st) {
  const msgpack_object *v = tf_wire_get(map, key);
  if (v == NULL || !tf__msgpack_get_i64(v, out)) {
    return bad_field(what, key, "an int64", st);
  }
  return TF_OK;
}

tf_code tf_wire_get_bool(const msgpack_object *map, const char *key,
                         const char *what, bool *out, tf_status *st) {
  const msgpack_object *v = tf_wire_get(map, key);
  if (v == NULL || v->type != MSGPACK_OBJECT_BOOLEAN) {
    return bad_field(what, key, "a bool", st);
  }
  *out = v->via.boolean;
  return TF_OK;
}

tf_code tf_wire_get_str(const msgpack_object *map, const char *key,
                        const char *what, char **out, tf_status *st) {
  *out = tf_wire_strdup(tf_wire_get(map, key));
  if (*out == NULL) {
    return bad_field(what, key, "a str", st);
  }
  return TF_OK;
}

const msgpack_object_array *tf_wire_get_array(const msgpack_object *map,
                                              const char *key,
                                              const char *what, tf_status *st) {
  const msgpack_object *v = tf_wire_get(map, key);
  if (v == NULL || v->type != MSGPACK_OBJECT_ARRAY) {
    bad_field(what, key, "an array", st);
    return NULL;
  }
  return &v->via.array;
}

void tf_wire_pack_str(msgpack_packer *pk, const char *s) {
  tf__msgpack_pack_cstr(pk, s != NULL ? s : "");
}

char *tf_wire_strdup(const msgpack_object *o) {
  if (o == NULL || o->type != MSGPACK_OBJECT_STR) {
    return NULL;
  }
  return tf__xstrndup(o->via.str.ptr, o->via.str.size);
}
