/* status.c: tf_status formatting and code names. */
#include "tf/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tf_status_init(tf_status *st) {
  st->code = TF_OK;
  st->msg[0] = '\0';
}

tf_code tf_status_set(tf_status *st, tf_code code, const char *fmt, ...) {
  if (st == NULL) return code;
  st->code = code;
  if (code == TF_OK || fmt == NULL) {
    st->msg[0] = '\0';
    return code;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  return code;
}

tf_code tf_status_prefix(tf_status *st, const char *fmt, ...) {
  if (st == NULL) return TF_OK;
  if (st->code == TF_OK) return TF_OK;
  char prefix[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return st->code;
  /* Build "<prefix>: <old>" by hand, truncating the tail if too long. */
  char old[TF_STATUS_MSG_MAX];
  memcpy(old, st->msg, sizeof old);
  size_t plen = strlen(prefix), olen = strlen(old), cap = sizeof st->msg - 1;
  size_t off = plen < cap ? plen : cap;
  memcpy(st->msg, prefix, off);
  for (const char *sep = ": "; *sep && off < cap; sep++) st->msg[off++] = *sep;
  size_t take = olen < cap - off ? olen : cap - off;
  memcpy(st->msg + off, old, take);
  st->msg[off + take] = '\0';
  return st->code;
}

const char *tf_code_name(tf_code code) {
  switch (code) {
#define TF__CODE_NAME(name, num)                                               \
  case TF_##name:                                                              \
    return #name;
    TF_CODE_MAP(TF__CODE_NAME)
#undef TF__CODE_NAME
  default:
    return "UNKNOWN_CODE";
  }
}

bool tf_code_from_name(const char *name, tf_code *out) {
#define TF__CODE_PARSE(cname, num)                                             \
  if (strcmp(name, #cname) == 0) {                                             \
    *out = TF_##cname;                                                         \
    return true;                                                               \
  }
  TF_CODE_MAP(TF__CODE_PARSE)
#undef TF__CODE_PARSE
  return false;
}
