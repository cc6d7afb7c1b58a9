/* rpc_probe.h: why a client cannot reach its peer (rpc_probe.c). */
#ifndef TF_TRANSPORT_RPC_PROBE_H
#define TF_TRANSPORT_RPC_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* Tries one connect to url (tcp:// with a numeric host, or ipc://; at
 * most 100 ms). False when url is of another kind (why is ""); else true
 * with why the reason the connect failed ("Connection refused"), or ""
 * when it connected. Blocks: not for NNG callback threads. */
bool tf__rpc_probe(const char *url, char *why, size_t n);

#endif
