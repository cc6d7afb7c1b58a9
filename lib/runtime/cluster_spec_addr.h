/* cluster_spec_addr.h: the transports of a cluster spec and the checks of
 * task addresses (internal to cluster_spec.c; separate so they can be
 * tested alone). */
#ifndef TF_RUNTIME_CLUSTER_SPEC_ADDR_H
#define TF_RUNTIME_CLUSTER_SPEC_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether t is "tcp", "ipc", "inproc" or "tls+tcp". */
bool tf__cluster_transport_known(const char *t);

/* What an address of transport looks like, for "expected ..." messages:
 * "host:port", "a socket path" or "an inproc name". */
const char *tf__cluster_addr_expected(const char *transport);

/* Whether addr is a valid address for transport (a known one): host:port
 * (host an IPv4 dotted quad, a DNS hostname or a bracketed IPv6 address;
 * port 1..65535) for tcp and tls+tcp, a socket path of at most 107 bytes
 * for ipc, a name without blanks for inproc; never a URL. If not, writes
 * why into why[0..n), e.g. "expected host:port, got 'abc'" or "port 70000
 * is outside 1..65535 in '127.0.0.1:70000'". */
bool tf__cluster_addr_check(const char *transport, const char *addr,
                            char *why, size_t n);

/* The endpoints that valid addresses addrs[0..n) of transport stand for,
 * to find two tasks at one: out[i] gets addrs[i]'s as a malloc'd,
 * NULL-terminated list of descriptions, equal exactly when the endpoints
 * are the same:
 *   tcp, tls+tcp: "127.0.0.1 port 7070" or "[::1] port 7070" for each
 *     address the host stands for (a numeric host as it is, canonical; a
 *     name every address it resolves to, all names resolved together
 *     within resolve_ms), or "host 'node7' port 7070 (not resolved)",
 *     the name in lower case, for a name that did not resolve; a name
 *     whose port no other address has is not resolved (nothing else can
 *     be its endpoint), so no lookup happens for specs whose ports are
 *     all distinct;
 *   ipc: "socket 'run/b.sock'", the path with '.', '..' and repeated '/'
 *     folded as written (a relative path stays relative);
 *   inproc: "inproc name 'm'".
 * Free each list with tf__cluster_endpoints_free. */
void tf__cluster_endpoints(const char *transport, const char *const *addrs,
                           int n, int64_t resolve_ms, char ***out);
void tf__cluster_endpoints_free(char **list);
/* The first description lists a and b share, or NULL. */
const char *tf__cluster_endpoints_shared(char *const *a, char *const *b);

/* path with '.', '..' and repeated '/' folded lexically (a relative path
 * stays relative and may keep leading ".."); malloc'd. */
char *tf__fold_path(const char *path);

#endif
