/* nng_close.h: closing an NNG socket with a deadline. */
#ifndef TF_TRANSPORT_NNG_CLOSE_H
#define TF_TRANSPORT_NNG_CLOSE_H

#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

/* Closes sock (nng_close) on a thread of its own and waits up to
 * timeout_ms for it. True when the close returned; false when it had not
 * by then: it is left running (detached) and the socket must not be used
 * again. NNG 1.5.2 (Debian 12's) can wait for ever in nng_close for a
 * pipe that a listener added while the socket shut down (nanomsg/nng
 * #1543, mended after 1.5.2), or for any pipe once its reaper hung on a
 * pipe closed while a frame arrived (pipe_shutdown.h): a daemon told to
 * stop must stop anyway.
 * Not from an NNG callback thread (nng_close waits for that work). */
bool tf__nng_close_within(nng_socket sock, int64_t timeout_ms);

#endif
