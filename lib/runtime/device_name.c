/* device_name.c: parsing, matching and printing of device names and
 * partial device specs (/job:J/replica:R/task:T/device:TYPE:N), as
 * TensorFlow's DeviceNameUtils does. Parts may come in any order, each at
 * most once; '*' leaves a part unset; "/cpu:N" and "/gpu:N" are the legacy
 * spellings of "/device:CPU:N" and "/device:GPU:N". Device types are kept
 * upper case. */
#include "lib/runtime/device_name.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/core/base/util.h"

/* A '/'-separated part being parsed: its key and value (not
 * NUL-terminated), for error messages too. */
typedef struct part {
  const char *key, *val;
  size_t key_len, val_len;
} part;

static tf_code bad(const char *s, tf_status *st, const char *what,
                   const part *p) {
  if (p != NULL) {
    int len = (int)(p->key_len + (p->val ? p->val_len + 1 : 0));
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "device '%.200s': %s in '/%.*s'", s, what, len,
                         p->key);
  }
  return tf_status_set(st, TF_INVALID_ARGUMENT, "device '%.200s': %s", s, what);
}

static bool is_key(const part *p, const char *key) {
  return p->key_len == strlen(key) && strncasecmp(p->key, key, p->key_len) == 0;
}

static bool is_star(const char *v, size_t n) { return n == 1 && v[0] == '*'; }

/* A non-negative decimal index fitting an int. */
static tf_code parse_index(const char *s, const part *p, const char *v,
                           size_t n, int *out, tf_status *st) {
  if (n == 0) {
    return bad(s, st, "missing index", p);
  }
  if (v[0] == '-') {
    return bad(s, st, "negative index", p);
  }
  long long x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)v[i])) {
      return bad(s, st, "index is not a non-negative integer", p);
    }
    x = x * 10 + (v[i] - '0');
    if (x > INT_MAX) {
      return bad(s, st, "index is too large", p);
    }
  }
  *out = (int)x;
  return TF_OK;
}

/* Sets type (upper-cased) from v[0..n); "*" leaves it unset. */
static tf_code parse_type(const char *s, const part *p, const char *v, size_t n,
                          tf_devname *d, tf_status *st) {
  if (is_star(v, n)) {
    return TF_OK;
  }
  if (n == 0 || !isalpha((unsigned char)v[0])) {
    return bad(s, st, "device type must start with a letter", p);
  }
  if (n >= sizeof d->type) {
    return bad(s, st, "device type is too long", p);
  }
  for (size_t i = 0; i < n; i++) {
    if (!isalnum((unsigned char)v[i]) && v[i] != '_') {
      return bad(s, st, "device type has a character other than [A-Za-z0-9_]",
                 p);
    }
    d->type[i] = (char)toupper((unsigned char)v[i]);
  }
  d->type[n] = '\0';
  d->has_type = true;
  return TF_OK;
}

/* "/device:TYPE[:N|:*]", or legacy "/cpu:N" (legacy_type "CPU"). */
static tf_code parse_device(const char *s, const part *p,
                            const char *legacy_type, tf_devname *d,
                            tf_status *st) {
  const char *v = p->val, *id = NULL;
  size_t n = p->val_len, id_len = 0;
  if (legacy_type != NULL) {
    strcpy(d->type, legacy_type);
    d->has_type = true;
    id = v;
    id_len = n;
  } else {
    const char *colon = memchr(v, ':', n);
    size_t type_len = colon ? (size_t)(colon - v) : n;
    TF_TRY(parse_type(s, p, v, type_len, d, st));
    if (colon != NULL) {
      id = colon + 1;
      id_len = n - type_len - 1;
    }
  }
  if (id == NULL || is_star(id, id_len)) {
    return TF_OK;
  }
  TF_TRY(parse_index(s, p, id, id_len, &d->id, st));
  d->has_id = true;
  return TF_OK;
}

static tf_code parse_job(const char *s, const part *p, tf_devname *d,
                         tf_status *st) {
  if (is_star(p->val, p->val_len)) {
    return TF_OK;
  }
  if (p->val_len == 0) {
    return bad(s, st, "empty job name", p);
  }
  if (p->val_len >= sizeof d->job) {
    return bad(s, st, "job name is longer than 63 characters", p);
  }
  for (size_t i = 0; i < p->val_len; i++) {
    char c = p->val[i];
    if (!isalnum((unsigned char)c) && c != '_' && c != '-') {
      return bad(s, st, "job name has a character other than [A-Za-z0-9_-]",
                 p);
    }
  }
  memcpy(d->job, p->val, p->val_len);
  d->job[p->val_len] = '\0';
  d->has_job = true;
  return TF_OK;
}

/* Parses one part into d; seen[] flags parts already given (job, replica,
 * task, device). */
static tf_code parse_part(const char *s, const part *p, bool seen[4],
                          tf_devname *d, tf_status *st) {
  static const char *const keys[] = {"job", "replica", "task", "device",
                                     "cpu", "gpu"};
  int k = 0;
  while (k < 6 && !is_key(p, keys[k])) {
    k++;
  }
  if (k == 6) {
    return bad(s, st,
               "unknown part (expected job, replica, task, device, cpu or gpu)",
               p);
  }
  if (p->val == NULL) {
    return bad(s, st, "missing ':' after the part's name", p);
  }
  int slot = k < 4 ? k : 3;
  if (seen[slot]) {
    return bad(s, st,
               slot == 3 ? "the device is given twice" : "duplicate part", p);
  }
  seen[slot] = true;
  switch (k) {
  case 0:
    return parse_job(s, p, d, st);
  case 1:
  case 2: {
    if (is_star(p->val, p->val_len)) {
      return TF_OK;
    }
    int *dst = k == 1 ? &d->replica : &d->task;
    TF_TRY(parse_index(s, p, p->val, p->val_len, dst, st));
    *(k == 1 ? &d->has_replica : &d->has_task) = true;
    return TF_OK;
  }
  case 3:
    return parse_device(s, p, NULL, d, st);
  default:
    return parse_device(s, p, k == 4 ? "CPU" : "GPU", d, st);
  }
}

tf_code tf_devname_parse(const char *s, tf_devname *out, tf_status *st) {
  tf_devname d;
  memset(&d, 0, sizeof d);
  if (s == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "device name is NULL");
  }
  bool seen[4] = {false, false, false, false};
  const char *q = s;
  if (strcmp(s, "/") == 0) {
    q = s + 1;
  }
  while (*q != '\0') {
    if (*q != '/') {
      return bad(s, st, "expected '/' before each part", NULL);
    }
    q++;
    part p = {q, NULL, 0, 0};
    const char *end = q + strcspn(q, "/");
    const char *colon = memchr(q, ':', (size_t)(end - q));
    p.key_len = (size_t)((colon ? colon : end) - q);
    if (p.key_len == 0 && colon == NULL) {
      return bad(s, st, "empty part (a '/' with nothing after it)", NULL);
    }
    if (colon != NULL) {
      p.val = colon + 1;
      p.val_len = (size_t)(end - p.val);
    }
    TF_TRY(parse_part(s, &p, seen, &d, st));
    q = end;
  }
  *out = d;
  return TF_OK;
}

/* Whether a and b agree on every part that both set (both_only) or on
 * every part that a sets (b must set it too). */
static bool agree(const tf_devname *a, const tf_devname *b, bool both_only) {
  if (a->has_job && (b->has_job ? strcmp(a->job, b->job) != 0 : !both_only)) {
    return false;
  }
  if (a->has_replica &&
      (b->has_replica ? a->replica != b->replica : !both_only)) {
    return false;
  }
  if (a->has_task && (b->has_task ? a->task != b->task : !both_only)) {
    return false;
  }
  if (a->has_type &&
      (b->has_type ? strcmp(a->type, b->type) != 0 : !both_only)) {
    return false;
  }
  if (a->has_id && (b->has_id ? a->id != b->id : !both_only)) {
    return false;
  }
  return true;
}

bool tf_devname_matches(const tf_devname *spec, const tf_devname *full) {
  return agree(spec, full, false);
}

bool tf_devname_compatible(const tf_devname *a, const tf_devname *b) {
  return agree(a, b, true);
}

bool tf_devname_merge(tf_devname *into, const tf_devname *other) {
  if (!tf_devname_compatible(into, other)) {
    return false;
  }
  if (!into->has_job && other->has_job) {
    memcpy(into->job, other->job, sizeof into->job);
    into->has_job = true;
  }
  if (!into->has_replica && other->has_replica) {
    into->replica = other->replica;
    into->has_replica = true;
  }
  if (!into->has_task && other->has_task) {
    into->task = other->task;
    into->has_task = true;
  }
  if (!into->has_type && other->has_type) {
    memcpy(into->type, other->type, sizeof into->type);
    into->has_type = true;
  }
  if (!into->has_id && other->has_id) {
    into->id = other->id;
    into->has_id = true;
  }
  return true;
}

/* Appends printf-style at *off, clipped to n bytes (NUL included). */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t n,
                                                      size_t *off,
                                                      const char *fmt, ...) {
  if (*off + 1 >= n) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *off, n - *off, fmt, ap);
  va_end(ap);
  *off = w < 0 || *off + (size_t)w >= n ? n : *off + (size_t)w;
}

char *tf_devname_str(const tf_devname *d, char *buf, size_t n) {
  if (n == 0) {
    return buf;
  }
  buf[0] = '\0';
  size_t off = 0;
  if (d->has_job) {
    put(buf, n, &off, "/job:%s", d->job);
  }
  if (d->has_replica) {
    put(buf, n, &off, "/replica:%d", d->replica);
  }
  if (d->has_task) {
    put(buf, n, &off, "/task:%d", d->task);
  }
  if (d->has_type || d->has_id) {
    put(buf, n, &off, "/device:%s", d->has_type ? d->type : "*");
    if (d->has_id) {
      put(buf, n, &off, ":%d", d->id);
    } else {
      put(buf, n, &off, ":*");
    }
  }
  return buf;
}

char *tf_devname_task(const tf_devname *d, char *buf, size_t n) {
  if (n == 0) {
    return buf;
  }
  buf[0] = '\0';
  if (d->has_job && d->has_task) {
    snprintf(buf, n, "/job:%s/replica:%d/task:%d", d->job,
             d->has_replica ? d->replica : 0, d->task);
  }
  return buf;
}
