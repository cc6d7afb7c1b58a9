/* notify.h: systemd readiness and watchdog notifications (Type=notify).
 * With TF_HAVE_SYSTEMD (libsystemd found at build time) notify.c calls
 * sd_notify and sd_watchdog_enabled; otherwise it speaks the same protocol
 * itself: one datagram of "KEY=VALUE\n..." text sent to the AF_UNIX
 * socket named by $NOTIFY_SOCKET ("/path", or "@name" for the abstract namespace). */
#ifndef TF_CMD_COMMON_NOTIFY_H
#define TF_CMD_COMMON_NOTIFY_H

#include <stdint.h>

/* Sends state to the service manager. Returns > 0 when sent, 0 when
 * $NOTIFY_SOCKET is unset (not run under a notify-aware manager), < 0
 * (a negative errno) when sending failed. */
int tf_notify(const char *state);

/* The watchdog period in microseconds that the manager asked for
 * ($WATCHDOG_USEC, for this process when $WATCHDOG_PID is set), or 0. */
uint64_t tf_notify_watchdog_usec(void);

#endif
