/* cluster_spec_resolve.h: resolving the host names of a cluster spec with
 * one deadline for all of them (internal to cluster_spec.c and
 * cluster_spec_addr.c). getaddrinfo has no timeout of its own, so names
 * are resolved on helper threads; a name still unresolved at the deadline
 * counts as not resolved and its thread finishes on its own. */
#ifndef TF_RUNTIME_CLUSTER_SPEC_RESOLVE_H
#define TF_RUNTIME_CLUSTER_SPEC_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Resolves names[0..n) (host names without port or brackets; duplicates
 * are resolved once) within timeout_ms in all. out[i] gets names[i]'s
 * addresses as a malloc'd, NULL-terminated list of numeric strings
 * ("127.0.0.1", "::1"; IPv4-mapped IPv6 addresses written as IPv4; no
 * repeats), or NULL when the name did not resolve (unknown, failed, or not
 * answered by the deadline). Free each list with tf__resolve_free. */
void tf__resolve_names(const char *const *names, int n, int64_t timeout_ms, char ***out);

/* Whether host is a numeric IPv4 or IPv6 address (no brackets); if so,
 * buf[0..n) gets its canonical form as tf__resolve_names writes it
 * ("::1" for "0:0::1", "127.0.0.1" for "::ffff:127.0.0.1"). */
bool tf__resolve_numeric(const char *host, char *buf, size_t n);

/* Frees a list from tf__resolve_names (NULL-safe). */
void tf__resolve_free(char **addrs);

#endif
