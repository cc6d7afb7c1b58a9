/* device_name.h: device names and partial device specs.
 *
 * Full: /job:worker/replica:0/task:1/device:CPU:0. Partial specs leave
 * parts out or use '*': "/job:ps", "/job:worker/task:1", "/device:CPU:0",
 * "/device:GPU:*", "/job:worker/task:*" + "/device:CPU:0" (split here only
 * to keep this comment open); the legacy forms "/cpu:0" and "/gpu:1" mean
 * /device:CPU:0 and /device:GPU:1. "" is the empty spec (matches
 * everything). */
#ifndef TF_RUNTIME_DEVICE_NAME_H
#define TF_RUNTIME_DEVICE_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include "tf/status.h"

typedef struct tf_devname {
  bool has_job, has_replica, has_task, has_type, has_id;
  char job[64];
  int replica;
  int task;
  char type[16]; /* "CPU", "GPU" (upper case) */
  int id;
} tf_devname;

/* INVALID_ARGUMENT "device '...': <what is wrong>" for a malformed name
 * (unknown part, missing ':', negative or non-numeric index, duplicate
 * part, job name with characters other than [A-Za-z0-9_-]). */
tf_code tf_devname_parse(const char *s, tf_devname *out, tf_status *st);
/* Whether every part spec sets equals full's. */
bool tf_devname_matches(const tf_devname *spec, const tf_devname *full);
/* Whether a and b agree on every part both set. */
bool tf_devname_compatible(const tf_devname *a, const tf_devname *b);
/* Sets in into the parts into lacks; false (into unchanged) when they
 * conflict. */
bool tf_devname_merge(tf_devname *into, const tf_devname *other);
/* Writes the canonical form (parts that are set, in order; "" when none)
 * into buf; returns buf. */
char *tf_devname_str(const tf_devname *d, char *buf, size_t n);
/* "/job:J/replica:R/task:T" of a name with job and task set. */
char *tf_devname_task(const tf_devname *d, char *buf, size_t n);

#endif
