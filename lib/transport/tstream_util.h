/* tstream_util.h: small helpers the tensor stream's server and client
 * share (internal to lib/transport): URL checks, NNG durations and error
 * codes, and peer addresses for messages. */
#ifndef TF_TRANSPORT_TSTREAM_UTIL_H
#define TF_TRANSPORT_TSTREAM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "tf/status.h"

/* OK for tcp://... and tls+tcp://...; UNIMPLEMENTED "cannot <verb> <url>:
 * the tensor stream supports only tcp:// and tls+tcp:// URLs" for other
 * schemes, INVALID_ARGUMENT for a NULL or empty URL. */
tf_code tf__tstream_check_url(const char *url, const char *verb, tf_status *st);

/* ms (> 0) as an NNG duration, at most INT32_MAX. */
nng_duration tf__tstream_ms(int64_t ms);

/* The tf_code for an NNG error: NNG_ETIMEDOUT is DEADLINE_EXCEEDED,
 * NNG_ENOMEM RESOURCE_EXHAUSTED, everything else UNAVAILABLE. */
tf_code tf__tstream_code(int rv);

/* The stream's remote address as "host:port" and "host" (IPv6 hosts in
 * brackets in peer); "?" when unknown. */
void tf__tstream_peer(nng_stream *s, char *peer, size_t peer_size, char *host,
                      size_t host_size);

/* url (tcp:// or tls+tcp://host:port) with its port replaced by port. */
void tf__tstream_url_with_port(const char *url, int port, char *out,
                               size_t size);

#endif
