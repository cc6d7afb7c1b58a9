/* cluster_spec_addr.h: the transports of a cluster spec and the checks of
 * task addresses (internal to cluster_spec.c; separate so they can be
 * tested alone). */
#ifndef TF_RUNTIME_CLUSTER_SPEC_ADDR_H
#define TF_RUNTIME_CLUSTER_SPEC_ADDR_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
