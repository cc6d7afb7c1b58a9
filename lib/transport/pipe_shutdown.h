/* pipe_shutdown.h: ending NNG pipes through their TCP sockets.
 *
 * NNG 1.5.2 (Debian 12's) can hang its one reaper thread for good when a
 * TCP or TLS pipe is closed (nng_pipe_close, nng_close) while a frame is
 * arriving on it: tcptran_pipe_recv_cb issues the read of the frame's
 * next bytes without checking that the pipe was closed in between, the
 * read is refused without a callback, and the pipe's receive never ends.
 * pipe_destroy then waits for it on the reaper, so from then on no pipe
 * of the process is ever removed: REM_POST stops, every nng_close hangs
 * and a server's connection table fills (seen under netfuzz_test's slow
 * senders, whose half-sent frames the idle sweep closed).
 *
 * Shutting the pipe's socket down instead makes the pending read fail,
 * and NNG closes the pipe from its own receive path, where no read is in
 * flight. The socket is found among the process's descriptors by the
 * pipe's local and remote address (unique for a TCP connection), checked
 * again just before the shutdown. Only for pipes without a message in
 * flight (the idle sweep's): NNG 1.5.2 loses a message that a shut-down
 * socket fails to send. */
#ifndef TF_TRANSPORT_PIPE_SHUTDOWN_H
#define TF_TRANSPORT_PIPE_SHUTDOWN_H

#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

/* Shuts down the TCP sockets of the n pipes ids[] (one scan of the
 * descriptors for all). done[i] is set for each pipe whose socket was
 * found and shut down; the others (no TCP address: ipc, inproc; gone
 * already) are left to the caller, which may nng_pipe_close them.
 * Returns how many were shut down. Safe from any thread, NNG callbacks
 * included. */
int tf__pipes_shutdown(const uint32_t *ids, int n, bool *done);

#endif
