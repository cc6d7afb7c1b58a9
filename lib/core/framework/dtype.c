/* dtype.c: dtype names, sizes and classes, from TF_DTYPE_MAP. */
#include "tf/dtype.h"

#include <string.h>

size_t tf_dtype_size(tf_dtype dt) {
  switch (dt) {
#define TF__DT_SIZE(e, num, ctype, size, name)                                 \
  case TF_##e:                                                                 \
    return size;
    TF_DTYPE_MAP(TF__DT_SIZE)
#undef TF__DT_SIZE
  default:
    return 0;
  }
}

const char *tf_dtype_name(tf_dtype dt) {
  switch (dt) {
#define TF__DT_NAME(e, num, ctype, size, name)                                 \
  case TF_##e:                                                                 \
    return name;
    TF_DTYPE_MAP(TF__DT_NAME)
#undef TF__DT_NAME
  default:
    return "invalid";
  }
}

bool tf_dtype_from_name(const char *name, tf_dtype *out) {
#define TF__DT_PARSE(e, num, ctype, size, dname)                               \
  if (strcmp(name, dname) == 0) {                                              \
    *out = TF_##e;                                                             \
    return true;                                                               \
  }
  TF_DTYPE_MAP(TF__DT_PARSE)
#undef TF__DT_PARSE
  static const struct {
    const char *alias;
    tf_dtype dt;
  } aliases[] = {{"float", TF_FLOAT32}, {"double", TF_FLOAT64},
                 {"half", TF_FLOAT16}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    if (strcmp(name, aliases[i].alias) == 0) {
      *out = aliases[i].dt;
      return true;
    }
  }
  return false;
}

bool tf_dtype_is_valid(tf_dtype dt) { return tf_dtype_size(dt) != 0; }

bool tf_dtype_is_float(tf_dtype dt) {
  return dt == TF_FLOAT32 || dt == TF_FLOAT64 || dt == TF_FLOAT16 ||
         dt == TF_BFLOAT16;
}

bool tf_dtype_is_integer(tf_dtype dt) {
  switch (dt) {
  case TF_INT8: case TF_INT16: case TF_INT32: case TF_INT64:
  case TF_UINT8: case TF_UINT16: case TF_UINT32: case TF_UINT64:
    return true;
  default:
    return false;
  }
}

bool tf_dtype_is_signed(tf_dtype dt) {
  return dt == TF_INT8 || dt == TF_INT16 || dt == TF_INT32 || dt == TF_INT64 ||
         tf_dtype_is_float(dt);
}

bool tf_dtype_is_complex(tf_dtype dt) { return dt == TF_COMPLEX64; }

bool tf_dtype_is_numeric(tf_dtype dt) {
  return tf_dtype_is_valid(dt) && dt != TF_BOOL && dt != TF_STRING;
}
