/* rendezvous.c: rendezvous keys and the slot for the in-process tables
 * (rendezvous.h). A key is
 * "src;incarnation;dst;tensor_name;frame:iter" with the incarnation as 16
 * lower-case hex digits (TF's FpToString) and the frame id and iteration in
 * decimal, as TensorFlow's Rendezvous::CreateKey writes them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/rendezvous.h"
#include "lib/core/base/util.h"

char *tf_rdv_key_make(const char *src_device, uint64_t src_incarnation,
                      const char *dst_device, const char *tensor_name,
                      uint64_t frame_id, int64_t iter) {
  return tf__xasprintf("%s;%016" PRIx64 ";%s;%s;%" PRIu64 ":%" PRId64,
                       src_device, src_incarnation, dst_device, tensor_name,
                       frame_id, iter);
}

static bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* Only digits of base (no sign, space or "0x"), then strtoull. */
static bool parse_u64(const char *s, int base, uint64_t *v) {
  if (s[0] == '\0') return false;
  for (const char *c = s; *c != '\0'; c++) {
    if (base == 16 ? !is_hex(*c) : (*c < '0' || *c > '9')) return false;
  }
  errno = 0;
  unsigned long long x = strtoull(s, NULL, base);
  if (errno != 0) return false;
  *v = (uint64_t)x;
  return true;
}

static tf_code bad_part(const char *key, const char *what, const char *part,
                        tf_status *st) {
  return tf_status_set(st, TF_INVALID_ARGUMENT, "rendezvous key '%s': bad %s "
                       "'%s'", key, what, part);
}

/* "frame:iter": decimal frame id and a non-negative iteration. */
static tf_code parse_frame_iter(const char *key, char *p, tf_rdv_key *out,
                                tf_status *st) {
  char *colon = strchr(p, ':');
  if (colon == NULL) {
    return bad_part(key, "frame:iteration (expected 'frame:iter')", p, st);
  }
  *colon = '\0';
  uint64_t iter = 0;
  bool ok = parse_u64(p, 10, &out->frame_id) && parse_u64(colon + 1, 10, &iter) &&
            iter <= (uint64_t)INT64_MAX;
  *colon = ':';
  if (!ok) return bad_part(key, "frame:iteration (expected 'frame:iter')", p, st);
  out->iter = (int64_t)iter;
  return TF_OK;
}

tf_code tf_rdv_key_parse(const char *key, tf_rdv_key *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  char *buf = tf__xstrdup(key);
  char *parts[5] = {buf};
  int n = 1;
  for (char *p = buf; *p != '\0'; p++) {
    if (*p != ';') continue;
    *p = '\0';
    if (n < 5) parts[n] = p + 1;
    n++;
  }
  tf_code rc = TF_OK;
  if (n != 5) {
    rc = tf_status_set(st, TF_INVALID_ARGUMENT, "rendezvous key '%s': expected "
                       "5 ';'-separated parts (src_device;incarnation;"
                       "dst_device;tensor_name;frame:iter), got %d", key, n);
  } else if (parts[0][0] == '\0') {
    rc = bad_part(key, "source device", parts[0], st);
  } else if (strlen(parts[1]) > 16 || !parse_u64(parts[1], 16, &out->src_incarnation)) {
    rc = bad_part(key, "incarnation (expected up to 16 hex digits)", parts[1], st);
  } else if (parts[2][0] == '\0') {
    rc = bad_part(key, "destination device", parts[2], st);
  } else if (parts[3][0] == '\0') {
    rc = bad_part(key, "tensor name", parts[3], st);
  } else {
    rc = parse_frame_iter(key, parts[4], out, st);
  }
  if (rc != TF_OK) {
    free(buf);
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->buf = buf;
  out->src_device = parts[0];
  out->dst_device = parts[2];
  out->tensor_name = parts[3];
  return TF_OK;
}

static const tf__rdv_local_ops *local_ops;

void tf__rdv_set_local_ops(const tf__rdv_local_ops *ops) { local_ops = ops; }

const tf__rdv_local_ops *tf__rdv_get_local_ops(void) { return local_ops; }

void tf_rdv_key_fini(tf_rdv_key *k) {
  if (k == NULL) return;
  free(k->buf);
  memset(k, 0, sizeof *k);
}
