/* cluster_auth.h: the cluster spec's auth section turned into keyrings
 * (lib/transport/auth.h), and the rule that keeps an unauthenticated
 * daemon off the network (docs/security.md). */
#ifndef TF_RUNTIME_CLUSTER_AUTH_H
#define TF_RUNTIME_CLUSTER_AUTH_H

#include <stddef.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/transport/auth.h"

/* A daemon's keyring: the task key (auth.key_file) first, then the client
 * and read-only keys when named. *out NULL when the spec has no auth or
 * `auth: none`. Errors name the spec and the key (a missing or unreadable
 * key file, one others may read). */
tf_code tf_cluster_auth_daemon(const tf_cluster_spec *s, tf_auth **out, tf_status *st);

/* A client's keyring (tfctl, remote sessions): key_file when given, else
 * the spec's client_key_file when it is readable, else its key_file when
 * readable (an operator on a task's host). *out NULL when there is no key
 * to use (spec NULL or without auth, and no key_file). */
tf_code tf_cluster_auth_client(const tf_cluster_spec *s, const char *key_file,
                               tf_auth **out, tf_status *st);

/* For programs that are neither a daemon nor tfctl (a remote session of
 * the C API): when the process has no keyring yet and $TF_KEY_FILE names
 * a key file, loads it (once) as the process's keyring. Errors name the
 * file; OK when there is nothing to load. */
tf_code tf_cluster_auth_from_env(tf_status *st);

/* Whether host (as written in a spec: a name, an IPv4 address, an IPv6
 * address with or without brackets) is a loopback address: localhost,
 * 127.0.0.0/8, ::1. */
bool tf_cluster_host_is_loopback(const char *host);

/* FAILED_PRECONDITION when the task (job, task) of s would listen beyond
 * this host without authentication: s has no auth section and the task's
 * address (tcp or tls+tcp) is not a loopback one. ipc and inproc are
 * local. With `auth: none` it is allowed; warning (n bytes) then says that
 * the daemon is unauthenticated ("" when nothing to say). A wildcard
 * address (0.0.0.0, ::) adds that it listens on every interface. */
tf_code tf_cluster_check_exposure(const tf_cluster_spec *s, const char *job, int task,
                                  char *warning, size_t n, tf_status *st);

#endif
